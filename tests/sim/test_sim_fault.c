/* test_sim_fault.c -- simulator fault injection (include/ork/sim.h) driving the callers'
 * timeout and recovery paths: a hung task (ETIMEDOUT, core wedged until ACT_RESET, §10.8,
 * §14.5), a DMA error naming the task (§8.2 DMA_READ_ERROR), and a NONBLOCK dispatch drop whose
 * wait times out (§8.6). All through the kmd vtable. */
#include <ork/error.h>

#include "ork_test.h"
#include "test_sim_prog.h"
#include "sim/sim.h"

struct fx {
    struct tp_dev d;
    struct ork_kbo prog, a, b, c;
    struct ork_ktask t[2];
};

/* Two chained 4x64x32 matmul tasks writing two halves of C. */
static int fx_setup(struct fx *f, const struct ork_sim_opts *so)
{
    memset(f, 0, sizeof(*f));
    if (tp_open(&f->d, so) < 0)
        return -1;
    if (tp_bo(&f->d, 2048, 0, &f->prog) || tp_bo(&f->d, 8 * 64, 0, &f->a) ||
        tp_bo(&f->d, 64 * 32, 0, &f->b) || tp_bo(&f->d, 8 * 32 * 4, 0, &f->c))
        return -1;
    tp_fill(f->a.map, f->b.map, 8, 64, 32, 5);
    for (uint32_t i = 0; i < 2; i++) {
        struct tp_shape sh = { 4, 64, 32, 0, f->a.iova + i * 256, f->b.iova,
                               f->c.iova + i * 512 };
        tp_build((uint64_t *)((uint8_t *)f->prog.map + i * 1024), &sh,
                 i == 0 ? f->prog.iova + 1024 : 0, TP_AMOUNT);
        f->t[i] = tp_task(f->prog.iova + i * 1024, i);
    }
    tp_sync_to(&f->d, &f->prog);
    tp_sync_to(&f->d, &f->a);
    tp_sync_to(&f->d, &f->b);
    return 0;
}

static void fx_teardown(struct fx *f)
{
    f->d.ops->bo_destroy(f->d.ctx, &f->prog);
    f->d.ops->bo_destroy(f->d.ctx, &f->a);
    f->d.ops->bo_destroy(f->d.ctx, &f->b);
    f->d.ops->bo_destroy(f->d.ctx, &f->c);
    f->d.ops->close(f->d.ctx);
}

static struct ork_kjob fx_job(struct fx *f, uint32_t flags)
{
    struct ork_kjob j = { .tasks = f->t, .n_tasks = 2, .core_mask = 0x1, .range = { { 0, 2 } },
                          .flags = flags, .timeout_ms = 200 };
    return j;
}

static int fx_bad_outputs(struct fx *f)
{
    tp_sync_from(&f->d, &f->c);
    const int32_t *c = f->c.map;
    int bad = 0;
    for (uint32_t m = 0; m < 8; m++)
        for (uint32_t n = 0; n < 32; n++)
            bad += c[m * 32 + n] != tp_ref(f->a.map, f->b.map, 64, 32, m, n);
    return bad;
}

static void test_hang_timeout_reset(void)
{
    struct ork_sim_opts so = { .struct_size = sizeof so };
    so.faults[0] = (struct ork_sim_fault){ .kind = ORK_SIM_FAULT_HANG, .submit = 2, .task = 1 };
    struct fx f;
    REQUIRE(fx_setup(&f, &so) == 0);
    struct ork_kjob j = fx_job(&f, 0);
    CHECK_EQ_INT(f.d.ops->submit(f.d.ctx, &j), 0);                       /* submit 1: fine */
    CHECK_EQ_INT(fx_bad_outputs(&f), 0);
    memset(f.c.map, 0, f.c.size);
    tp_sync_to(&f.d, &f.c);
    j = fx_job(&f, 0);
    int ret = f.d.ops->submit(f.d.ctx, &j);                              /* submit 2: hangs */
    CHECK_EQ_INT(ret, ORK_ETIMEDOUT);
    CHECK(strstr(ork_error_message(), "task 1") != NULL);
    CHECK_EQ_INT(j.task_counter, 1);                                     /* task 0 completed */
    /* the core stays wedged: the next submit on it times out too */
    j = fx_job(&f, 0);
    CHECK_EQ_INT(f.d.ops->submit(f.d.ctx, &j), ORK_ETIMEDOUT);
    CHECK(strstr(ork_error_message(), "ACT_RESET") != NULL);
    /* another core is unaffected */
    j = fx_job(&f, 0);
    j.core_mask = 0x2;
    j.range[1] = j.range[0];
    CHECK_EQ_INT(f.d.ops->submit(f.d.ctx, &j), 0);
    /* the reset action recovers core 0 */
    CHECK_EQ_INT(f.d.ops->action(f.d.ctx, ORK_KMD_ACT_RESET, NULL), 0);
    memset(f.c.map, 0, f.c.size);
    tp_sync_to(&f.d, &f.c);
    j = fx_job(&f, 0);
    CHECK_EQ_INT(f.d.ops->submit(f.d.ctx, &j), 0);
    CHECK_EQ_INT(fx_bad_outputs(&f), 0);
    struct ork_sim_counters c;
    ork__sim_counters(ork__kmd_sim_get(f.d.ops, f.d.ctx), &c);
    CHECK_EQ_INT(c.failed_jobs, 2);
    fx_teardown(&f);
}

static void test_dma_error(void)
{
    struct ork_sim_opts so = { .struct_size = sizeof so };
    so.faults[0] = (struct ork_sim_fault){ .kind = ORK_SIM_FAULT_DMA, .submit = 1, .task = 1 };
    struct fx f;
    REQUIRE(fx_setup(&f, &so) == 0);
    struct ork_kjob j = fx_job(&f, 0);
    int ret = f.d.ops->submit(f.d.ctx, &j);
    CHECK_EQ_INT(ret, ORK_EFAULT);
    CHECK(strstr(ork_error_message(), "task 1") != NULL);
    CHECK(strstr(ork_error_message(), "DMA_READ_ERROR") != NULL);
    /* a soft reset follows; the next submit works */
    j = fx_job(&f, 0);
    CHECK_EQ_INT(f.d.ops->submit(f.d.ctx, &j), 0);
    CHECK_EQ_INT(fx_bad_outputs(&f), 0);
    fx_teardown(&f);
}

/* A NONBLOCK job accepted but never started: waiting for it times out and it never writes C. */
static void test_dispatch_drop(void)
{
    struct ork_sim_opts so = { .struct_size = sizeof so };
    so.faults[0] = (struct ork_sim_fault){ .kind = ORK_SIM_FAULT_DROP, .submit = 1, .task = 0 };
    struct fx f;
    REQUIRE(fx_setup(&f, &so) == 0);
    memset(f.c.map, 0x5a, f.c.size);
    tp_sync_to(&f.d, &f.c);
    struct ork_kjob j = fx_job(&f, ORK_KJOB_NONBLOCK);
    CHECK_EQ_INT(f.d.ops->submit(f.d.ctx, &j), 0);                  /* queued */
    CHECK_EQ_INT(f.d.ops->wait(f.d.ctx, &j, 50 * 1000000ll), ORK_ETIMEDOUT);
    CHECK(strstr(ork_error_message(), "DISPATCH_DROP") != NULL);
    tp_sync_from(&f.d, &f.c);
    CHECK_EQ_INT(((uint32_t *)f.c.map)[0], 0x5a5a5a5a);
    /* recovery: reset and resubmit */
    CHECK_EQ_INT(f.d.ops->action(f.d.ctx, ORK_KMD_ACT_RESET, NULL), 0);
    j = fx_job(&f, ORK_KJOB_NONBLOCK);
    CHECK_EQ_INT(f.d.ops->submit(f.d.ctx, &j), 0);
    CHECK_EQ_INT(f.d.ops->wait(f.d.ctx, &j, -1), 0);
    CHECK_EQ_INT(fx_bad_outputs(&f), 0);
    fx_teardown(&f);
}

/* Paced mode really waits: a hung blocking submit returns after about its timeout. */
static void test_paced_timeout(void)
{
    struct ork_sim_opts so = { .struct_size = sizeof so, .timing = ORK_SIM_TIMING_PACED };
    so.faults[0] = (struct ork_sim_fault){ .kind = ORK_SIM_FAULT_HANG, .submit = 1, .task = 0 };
    struct fx f;
    REQUIRE(fx_setup(&f, &so) == 0);
    struct ork_kjob j = fx_job(&f, 0);
    j.timeout_ms = 30;
    int64_t t0 = ork__sim_real_ns();
    CHECK_EQ_INT(f.d.ops->submit(f.d.ctx, &j), ORK_ETIMEDOUT);
    int64_t el = ork__sim_real_ns() - t0;
    CHECK(el >= 25 * 1000000ll);
    CHECK(el < 2000 * 1000000ll);
    fx_teardown(&f);
}

int main(void)
{
    RUN(test_hang_timeout_reset);
    RUN(test_dma_error);
    RUN(test_dispatch_drop);
    RUN(test_paced_timeout);
    return ork_test_done();
}
