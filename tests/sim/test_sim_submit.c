/* test_sim_submit.c -- the simulated rknpu driver's SUBMIT path through the kmd vtable ("sim"
 * backend = the rknpu backend's struct filling over the simulator): single and PC-chained
 * programs (§8.3), multi-core ranges and the subcore_task indexing rules (§9, test vector
 * §15.9), validation errors (§14.5), address faults naming the task (§14.3), wrong domain (§13),
 * broken chains, and NONBLOCK completion (§8.6). Outputs are checked against a CPU loop. */
#include <ork/error.h>

#include "ork_test.h"
#include "test_sim_prog.h"
#include "uapi/rknpu_uapi.h"
#include "sim/sim.h"

#define PAGE_UP(x) ((uint32_t)(((x) + 4095) & ~(uint64_t)4095))

struct mm_bufs {
    struct ork_kbo prog, a, b, c;
    uint32_t M, K, N;
};

static int mm_alloc(struct tp_dev *d, struct mm_bufs *mb, uint32_t M, uint32_t K, uint32_t N,
                    uint32_t n_progs, uint32_t domain)
{
    memset(mb, 0, sizeof(*mb));
    mb->M = M;
    mb->K = K;
    mb->N = N;
    int ret = tp_bo(d, 1024ull * n_progs, domain, &mb->prog);
    if (ret == 0)
        ret = tp_bo(d, (uint64_t)M * K, domain, &mb->a);
    if (ret == 0)
        ret = tp_bo(d, (uint64_t)K * N, domain, &mb->b);
    if (ret == 0)
        ret = tp_bo(d, (uint64_t)M * N * 4, domain, &mb->c);
    if (ret == 0) {
        tp_fill(mb->a.map, mb->b.map, M, K, N, M * 31 + K + N);
        tp_sync_to(d, &mb->a);
        tp_sync_to(d, &mb->b);
    }
    return ret;
}

static void mm_free(struct tp_dev *d, struct mm_bufs *mb)
{
    d->ops->bo_destroy(d->ctx, &mb->prog);
    d->ops->bo_destroy(d->ctx, &mb->a);
    d->ops->bo_destroy(d->ctx, &mb->b);
    d->ops->bo_destroy(d->ctx, &mb->c);
}

/* Count of C elements that differ from the CPU reference. */
static int mm_check(struct tp_dev *d, struct mm_bufs *mb)
{
    tp_sync_from(d, &mb->c);
    const int32_t *c = mb->c.map;
    int bad = 0;
    for (uint32_t m = 0; m < mb->M; m++)
        for (uint32_t n = 0; n < mb->N; n++)
            if (c[m * mb->N + n] != tp_ref(mb->a.map, mb->b.map, mb->K, mb->N, m, n))
                bad++;
    return bad;
}

static void open_dev(struct tp_dev *d, struct ork_sim_opts *so)
{
    int ret = tp_open(d, so);
    if (ret < 0)
        fprintf(stderr, "open: %s\n", ork_error_describe(ret));
}

static void test_single_task(void)
{
    struct tp_dev d;
    open_dev(&d, NULL);
    REQUIRE(d.ctx);
    struct mm_bufs mb;
    REQUIRE(mm_alloc(&d, &mb, 4, 64, 32, 1, 0) == 0);
    struct tp_shape sh = { 4, 64, 32, 0, mb.a.iova, mb.b.iova, mb.c.iova };
    tp_build(mb.prog.map, &sh, 0, 0);
    tp_sync_to(&d, &mb.prog);
    struct ork_ktask t = tp_task(mb.prog.iova, 0);
    struct ork_kjob job = { .tasks = &t, .n_tasks = 1, .core_mask = 0x1,
                            .range = { { 0, 1 } } };
    int ret = d.ops->submit(d.ctx, &job);
    if (ret < 0)
        fprintf(stderr, "submit: %s\n", ork_error_describe(ret));
    CHECK_EQ_INT(ret, 0);
    CHECK_EQ_INT(job.task_counter, 1);
    CHECK(job.hw_elapse_ns > 0);
    CHECK_EQ_INT(mm_check(&d, &mb), 0);
    mm_free(&d, &mb);
    d.ops->close(d.ctx);
}

/* Three M-tiles as three programs in one submit, chained through their trailers (§8.3). */
static void test_chain(void)
{
    struct tp_dev d;
    open_dev(&d, NULL);
    REQUIRE(d.ctx);
    const uint32_t tiles = 3, Mt = 4, K = 64, N = 64;
    struct mm_bufs mb;
    REQUIRE(mm_alloc(&d, &mb, Mt * tiles, K, N, tiles, 0) == 0);
    struct ork_ktask t[3];
    for (uint32_t i = 0; i < tiles; i++) {
        struct tp_shape sh = { Mt, K, N, 0, mb.a.iova + i * Mt * K, mb.b.iova,
                               mb.c.iova + i * Mt * N * 4 };
        uint32_t next = i + 1 < tiles ? mb.prog.iova + (i + 1) * 1024 : 0;
        tp_build((uint64_t *)((uint8_t *)mb.prog.map + i * 1024), &sh, next, TP_AMOUNT);
        t[i] = tp_task(mb.prog.iova + i * 1024, i);
    }
    tp_sync_to(&d, &mb.prog);
    struct ork_sim *sim = ork__kmd_sim_get(d.ops, d.ctx);
    REQUIRE(sim);
    struct ork_sim_counters c0, c1;
    ork__sim_counters(sim, &c0);
    struct ork_kjob job = { .tasks = t, .n_tasks = tiles, .core_mask = 0x2,
                            .range = { { 0, 0 }, { 0, tiles } }, .flags = ORK_KJOB_PINGPONG };
    int ret = d.ops->submit(d.ctx, &job);
    if (ret < 0)
        fprintf(stderr, "submit: %s\n", ork_error_describe(ret));
    CHECK_EQ_INT(ret, 0);
    CHECK_EQ_INT(job.task_counter, tiles);
    CHECK_EQ_INT(mm_check(&d, &mb), 0);
    ork__sim_counters(sim, &c1);
    CHECK_EQ_INT(c1.tasks - c0.tasks, tiles);
    CHECK_EQ_INT(c1.core_tasks[1] - c0.core_tasks[1], tiles);   /* all on core 1 */
    CHECK_EQ_INT(c1.core_tasks[0] - c0.core_tasks[0], 0);
    /* chained programs pay t_chain instead of t_launch: 3 chained < 3 separate launches */
    CHECK(c1.last_job_ns < 3 * 55000);
    mm_free(&d, &mb);
    d.ops->close(d.ctx);
}

/* N-split over three cores in one submit (core_mask 0x7): each core writes a column block of C
 * with the full row stride (§4.5, §9). */
static void test_three_cores(void)
{
    struct tp_dev d;
    open_dev(&d, NULL);
    REQUIRE(d.ctx);
    const uint32_t M = 2, K = 64, N = 96, nc = 3, Nc = N / nc;
    struct mm_bufs mb;
    REQUIRE(mm_alloc(&d, &mb, M, K, N, nc, 0) == 0);
    struct ork_ktask t[3];
    for (uint32_t i = 0; i < nc; i++) {
        struct tp_shape sh = { M, K, Nc, N, mb.a.iova, mb.b.iova + i * Nc * K,
                               mb.c.iova + i * Nc * 4 };
        tp_build((uint64_t *)((uint8_t *)mb.prog.map + i * 1024), &sh, 0, 0);
        t[i] = tp_task(mb.prog.iova + i * 1024, i);
    }
    tp_sync_to(&d, &mb.prog);
    struct ork_sim *sim = ork__kmd_sim_get(d.ops, d.ctx);
    struct ork_sim_counters c0, c1;
    ork__sim_counters(sim, &c0);
    struct ork_kjob job = { .tasks = t, .n_tasks = 3, .core_mask = 0x7,
                            .range = { { 0, 1 }, { 1, 1 }, { 2, 1 } } };
    int ret = d.ops->submit(d.ctx, &job);
    if (ret < 0)
        fprintf(stderr, "submit: %s\n", ork_error_describe(ret));
    CHECK_EQ_INT(ret, 0);
    CHECK_EQ_INT(mm_check(&d, &mb), 0);
    ork__sim_counters(sim, &c1);
    for (int i = 0; i < 3; i++)
        CHECK_EQ_INT(c1.core_tasks[i] - c0.core_tasks[i], 1);
    CHECK_EQ_INT(c1.last_core_mask, 0x7);
    mm_free(&d, &mb);
    d.ops->close(d.ctx);
}

/* Raw SUBMIT structs against the simulator: which subcore_task slots are read (§9, §15.9). */
struct raw {
    struct tp_dev d;
    struct ork_sim *sim;
    struct mm_bufs mb;
    struct ork_kbo tasks;
};

static int raw_setup(struct raw *r)
{
    open_dev(&r->d, NULL);
    if (!r->d.ctx)
        return -1;
    r->sim = ork__kmd_sim_get(r->d.ops, r->d.ctx);
    if (mm_alloc(&r->d, &r->mb, 2, 64, 96, 3, 0) < 0)
        return -1;
    if (r->d.ops->bo_create(r->d.ctx, 4096, ORK_KBO_CACHEABLE | ORK_KBO_KERNEL_MAP, 0,
                            &r->tasks) < 0)
        return -1;
    struct rknpu_task *desc = r->tasks.map;
    for (uint32_t i = 0; i < 3; i++) {
        struct tp_shape sh = { 2, 64, 32, 96, r->mb.a.iova, r->mb.b.iova + i * 32 * 64,
                               r->mb.c.iova + i * 32 * 4 };
        tp_build((uint64_t *)((uint8_t *)r->mb.prog.map + i * 1024), &sh, 0, 0);
        desc[i] = (struct rknpu_task){ 0, i, 0x0d, 0x300, 0x1ffff, 0, TP_AMOUNT, 0,
                                       r->mb.prog.iova + i * 1024 };
    }
    tp_sync_to(&r->d, &r->mb.prog);
    tp_sync_to(&r->d, &r->tasks);
    return 0;
}

static void raw_teardown(struct raw *r)
{
    r->d.ops->bo_destroy(r->d.ctx, &r->tasks);
    mm_free(&r->d, &r->mb);
    r->d.ops->close(r->d.ctx);
}

static struct rknpu_submit raw_submit(const struct raw *r, uint32_t core_mask)
{
    struct rknpu_submit s;
    memset(&s, 0, sizeof s);
    s.flags = RKNPU_JOB_PC | RKNPU_JOB_PINGPONG;
    s.timeout = 6000;
    s.task_number = 1;
    s.task_obj_addr = r->tasks.cookie;
    s.core_mask = core_mask;
    s.fence_fd = -1;
    return s;
}

static void test_subcore_slots(void)
{
    struct raw r;
    REQUIRE(raw_setup(&r) == 0);
    struct ork_sim_counters c0, c1;

    /* 3 cores: slots 2, 3, 4 are read; slots 0 and 1 left empty must not matter */
    struct rknpu_submit s = raw_submit(&r, 0x7);
    s.task_number = 3;
    s.subcore_task[2] = (struct rknpu_subcore_task){ 0, 1 };
    s.subcore_task[3] = (struct rknpu_subcore_task){ 1, 1 };
    s.subcore_task[4] = (struct rknpu_subcore_task){ 2, 1 };
    ork__sim_counters(r.sim, &c0);
    int ret = ork__sim_ioctl(r.sim, DRM_IOCTL_RKNPU_SUBMIT, &s);
    if (ret < 0)
        fprintf(stderr, "3-core: %s\n", ork_error_describe(ret));
    CHECK_EQ_INT(ret, 0);
    CHECK_EQ_INT(s.task_counter, 3);
    CHECK_EQ_INT(mm_check(&r.d, &r.mb), 0);
    ork__sim_counters(r.sim, &c1);
    for (int i = 0; i < 3; i++)
        CHECK_EQ_INT(c1.core_tasks[i] - c0.core_tasks[i], 1);

    /* 3 cores with slot 4 empty: SUBCORE_EMPTY names the slot */
    s = raw_submit(&r, 0x7);
    s.subcore_task[0] = s.subcore_task[1] = (struct rknpu_subcore_task){ 0, 1 };
    s.subcore_task[2] = s.subcore_task[3] = (struct rknpu_subcore_task){ 0, 1 };
    ret = ork__sim_ioctl(r.sim, DRM_IOCTL_RKNPU_SUBMIT, &s);
    CHECK(ret < 0);
    CHECK(strstr(ork_error_message(), "SUBCORE_EMPTY") != NULL);
    CHECK(strstr(ork_error_message(), "subcore_task[4]") != NULL);

    /* single core 2: reads slot 2 only */
    s = raw_submit(&r, 0x4);
    s.subcore_task[2] = (struct rknpu_subcore_task){ 2, 1 };
    ork__sim_counters(r.sim, &c0);
    ret = ork__sim_ioctl(r.sim, DRM_IOCTL_RKNPU_SUBMIT, &s);
    CHECK_EQ_INT(ret, 0);
    ork__sim_counters(r.sim, &c1);
    CHECK_EQ_INT(c1.core_tasks[2] - c0.core_tasks[2], 1);
    CHECK_EQ_INT(c1.core_tasks[0] - c0.core_tasks[0], 0);

    /* single core 2 with only slot 4 filled (the 3-core slot of core 2): empty */
    s = raw_submit(&r, 0x4);
    s.subcore_task[4] = (struct rknpu_subcore_task){ 2, 1 };
    ret = ork__sim_ioctl(r.sim, DRM_IOCTL_RKNPU_SUBMIT, &s);
    CHECK(ret < 0);
    CHECK(strstr(ork_error_message(), "subcore_task[2]") != NULL);

    /* two cores 0 and 2 read slots 0 and 2 */
    s = raw_submit(&r, 0x5);
    s.subcore_task[0] = (struct rknpu_subcore_task){ 0, 1 };
    s.subcore_task[2] = (struct rknpu_subcore_task){ 2, 1 };
    ret = ork__sim_ioctl(r.sim, DRM_IOCTL_RKNPU_SUBMIT, &s);
    CHECK_EQ_INT(ret, 0);

    /* task range beyond the task buffer (TASK_RANGE_OOB) */
    s = raw_submit(&r, 0x1);
    s.subcore_task[0] = (struct rknpu_subcore_task){ 200, 2 };
    ret = ork__sim_ioctl(r.sim, DRM_IOCTL_RKNPU_SUBMIT, &s);
    CHECK(ret < 0);
    CHECK(strstr(ork_error_message(), "TASK_RANGE_OOB") != NULL);

    /* no PC flag: rejected (NO_PC_FLAG, §14.5) */
    s = raw_submit(&r, 0x1);
    s.flags = RKNPU_JOB_PINGPONG;
    s.subcore_task[0] = (struct rknpu_subcore_task){ 0, 1 };
    ret = ork__sim_ioctl(r.sim, DRM_IOCTL_RKNPU_SUBMIT, &s);
    CHECK_EQ_INT(ret, ORK_EINVAL);
    CHECK(strstr(ork_error_message(), "NO_PC_FLAG") != NULL);

    /* core_mask 0 = auto: the kernel picks one core and reads its slot (all filled) */
    s = raw_submit(&r, 0x0);
    for (int i = 0; i < 3; i++)
        s.subcore_task[i] = (struct rknpu_subcore_task){ 0, 1 };
    ret = ork__sim_ioctl(r.sim, DRM_IOCTL_RKNPU_SUBMIT, &s);
    CHECK_EQ_INT(ret, 0);
    ork__sim_counters(r.sim, &c1);
    CHECK(c1.last_core_mask == 1 || c1.last_core_mask == 2 || c1.last_core_mask == 4);
    raw_teardown(&r);
}

/* A task buffer without KERNEL_MAPPING cannot be read by the kernel (TASK_NO_KMAP, §14.3). */
static void test_task_no_kmap(void)
{
    struct raw r;
    REQUIRE(raw_setup(&r) == 0);
    struct ork_kbo plain;
    REQUIRE(r.d.ops->bo_create(r.d.ctx, 4096, ORK_KBO_CACHEABLE, 0, &plain) == 0);
    memcpy(plain.map, r.tasks.map, 3 * sizeof(struct rknpu_task));
    tp_sync_to(&r.d, &plain);
    struct rknpu_submit s = raw_submit(&r, 0x1);
    s.task_obj_addr = plain.cookie;
    s.subcore_task[0] = (struct rknpu_subcore_task){ 0, 1 };
    int ret = ork__sim_ioctl(r.sim, DRM_IOCTL_RKNPU_SUBMIT, &s);
    CHECK(ret < 0);
    CHECK(strstr(ork_error_message(), "TASK_NO_KMAP") != NULL);
    r.d.ops->bo_destroy(r.d.ctx, &plain);
    raw_teardown(&r);
}

/* Out-of-bounds and unmapped addresses fail with a message naming the task and the address. */
static void test_address_faults(void)
{
    struct tp_dev d;
    open_dev(&d, NULL);
    REQUIRE(d.ctx);
    struct mm_bufs mb;
    REQUIRE(mm_alloc(&d, &mb, 4, 64, 32, 2, 0) == 0);
    char want[64];

    /* C runs past the end of its buffer: 4*32*4 = 512 bytes needed, start 256 bytes before
     * the end of the (page-rounded) C buffer */
    uint32_t c_bad = mb.c.iova + PAGE_UP(mb.c.size) - 256;
    struct tp_shape sh = { 4, 64, 32, 0, mb.a.iova, mb.b.iova, c_bad };
    tp_build(mb.prog.map, &sh, 0, 0);
    tp_sync_to(&d, &mb.prog);
    struct ork_ktask t = tp_task(mb.prog.iova, 0);
    struct ork_kjob job = { .tasks = &t, .n_tasks = 1, .core_mask = 0x1, .range = { { 0, 1 } } };
    int ret = d.ops->submit(d.ctx, &job);
    CHECK(ret < 0);
    fprintf(stderr, "expected error: %s\n", ork_error_message());
    CHECK(strstr(ork_error_message(), "task 0") != NULL);

    /* program address not mapped at all: the PC fetch faults */
    t.regcmd_iova = 0x00200000;             /* below every IOVA handed out (top-down) */
    ret = d.ops->submit(d.ctx, &job);
    fprintf(stderr, "expected error: %s\n", ork_error_message());
    CHECK_EQ_INT(ret, ORK_EFAULT);
    snprintf(want, sizeof want, "0x%08x", t.regcmd_iova);
    CHECK(strstr(ork_error_message(), "task 0") != NULL);
    CHECK(strstr(ork_error_message(), want) != NULL);

    /* program straddling the end of its buffer: 112 entries starting 512 bytes from the end */
    t.regcmd_iova = mb.prog.iova + PAGE_UP(mb.prog.size) - 512;
    ret = d.ops->submit(d.ctx, &job);
    fprintf(stderr, "expected error: %s\n", ork_error_message());
    CHECK_EQ_INT(ret, ORK_EFAULT);
    CHECK(strstr(ork_error_message(), "IOMMU_FAULT") != NULL);

    /* the program mapped in domain 1 only, below every domain-0 IOVA (WRONG_DOMAIN, §13) */
    struct ork_kbo filler, p1;
    REQUIRE(tp_bo(&d, 1u << 20, 1, &filler) == 0);
    REQUIRE(tp_bo(&d, 4096, 1, &p1) == 0);
    CHECK(p1.iova < mb.c.iova);
    sh = (struct tp_shape){ 4, 64, 32, 0, mb.a.iova, mb.b.iova, mb.c.iova };
    tp_build(p1.map, &sh, 0, 0);
    tp_sync_to(&d, &p1);
    t.regcmd_iova = p1.iova;
    ret = d.ops->submit(d.ctx, &job);
    CHECK_EQ_INT(ret, ORK_EFAULT);
    fprintf(stderr, "expected error: %s\n", ork_error_message());
    CHECK(strstr(ork_error_message(), "WRONG_DOMAIN") != NULL);
    /* the same program submitted in domain 1 reaches A/B/C of domain 0: they are not mapped
     * there (or alias other buffers): it must not run cleanly */
    d.ops->bo_destroy(d.ctx, &p1);
    d.ops->bo_destroy(d.ctx, &filler);
    t.regcmd_iova = mb.prog.iova;

    /* the device still works after faults */
    sh = (struct tp_shape){ 4, 64, 32, 0, mb.a.iova, mb.b.iova, mb.c.iova };
    tp_build(mb.prog.map, &sh, 0, 0);
    tp_sync_to(&d, &mb.prog);
    ret = d.ops->submit(d.ctx, &job);
    CHECK_EQ_INT(ret, 0);
    CHECK_EQ_INT(mm_check(&d, &mb), 0);
    mm_free(&d, &mb);
    d.ops->close(d.ctx);
}

/* Two tasks in one core range whose first trailer is terminal: the PC never advances. */
static void test_chain_broken(void)
{
    struct tp_dev d;
    open_dev(&d, NULL);
    REQUIRE(d.ctx);
    struct mm_bufs mb;
    REQUIRE(mm_alloc(&d, &mb, 8, 64, 32, 2, 0) == 0);
    struct ork_ktask t[2];
    for (uint32_t i = 0; i < 2; i++) {
        struct tp_shape sh = { 4, 64, 32, 0, mb.a.iova + i * 4 * 64, mb.b.iova,
                               mb.c.iova + i * 4 * 32 * 4 };
        tp_build((uint64_t *)((uint8_t *)mb.prog.map + i * 1024), &sh, 0, 0);  /* no chain */
        t[i] = tp_task(mb.prog.iova + i * 1024, i);
    }
    tp_sync_to(&d, &mb.prog);
    struct ork_kjob job = { .tasks = t, .n_tasks = 2, .core_mask = 0x1, .range = { { 0, 2 } },
                            .timeout_ms = 100 };
    int ret = d.ops->submit(d.ctx, &job);
    CHECK_EQ_INT(ret, ORK_ETIMEDOUT);
    CHECK(strstr(ork_error_message(), "CHAIN_BROKEN") != NULL);
    CHECK_EQ_INT(job.task_counter, 1);
    mm_free(&d, &mb);
    d.ops->close(d.ctx);
}

/* NONBLOCK: submit returns once queued, wait() delivers completion. */
static void test_nonblock(void)
{
    struct tp_dev d;
    open_dev(&d, NULL);
    REQUIRE(d.ctx);
    struct mm_bufs mb[3];
    struct ork_ktask t[3];
    struct ork_kjob job[3];
    for (uint32_t i = 0; i < 3; i++) {
        REQUIRE(mm_alloc(&d, &mb[i], 4, 64, 32, 1, 0) == 0);
        struct tp_shape sh = { 4, 64, 32, 0, mb[i].a.iova, mb[i].b.iova, mb[i].c.iova };
        tp_build(mb[i].prog.map, &sh, 0, 0);
        tp_sync_to(&d, &mb[i].prog);
        t[i] = tp_task(mb[i].prog.iova, i);
        job[i] = (struct ork_kjob){ .tasks = &t[i], .n_tasks = 1, .core_mask = 1u << i,
                                    .range = { { 0, 0 }, { 0, 0 }, { 0, 0 } },
                                    .flags = ORK_KJOB_NONBLOCK };
        job[i].range[i] = (struct ork_kcore_range){ 0, 1 };
        CHECK_EQ_INT(d.ops->submit(d.ctx, &job[i]), 0);
    }
    CHECK(job[0].seq < job[1].seq && job[1].seq < job[2].seq);
    for (int i = 2; i >= 0; i--) {
        CHECK_EQ_INT(d.ops->wait(d.ctx, &job[i], -1), 0);
        CHECK_EQ_INT(job[i].task_counter, 1);
        CHECK_EQ_INT(mm_check(&d, &mb[i]), 0);
    }
    for (int i = 0; i < 3; i++)
        mm_free(&d, &mb[i]);
    d.ops->close(d.ctx);
}

/* Chained tasks whose trailer amount disagrees with the next descriptor, or is 0 (§8.3). */
static void test_chain_amounts(void)
{
    struct tp_dev d;
    open_dev(&d, NULL);
    REQUIRE(d.ctx);
    struct mm_bufs mb;
    REQUIRE(mm_alloc(&d, &mb, 8, 64, 32, 2, 0) == 0);
    struct ork_ktask t[2];
    uint32_t amounts[2] = { 100, 0 };     /* 100: wrong amount (needs 108); 0: hangs */
    const char *want[2] = { "CHAIN_AMOUNT_MISMATCH", "CHAIN_HANG" };
    for (int c = 0; c < 2; c++) {
        for (uint32_t i = 0; i < 2; i++) {
            struct tp_shape sh = { 4, 64, 32, 0, mb.a.iova + i * 4 * 64, mb.b.iova,
                                   mb.c.iova + i * 4 * 32 * 4 };
            tp_build((uint64_t *)((uint8_t *)mb.prog.map + i * 1024), &sh,
                     i == 0 ? mb.prog.iova + 1024 : 0, TP_AMOUNT);
            t[i] = tp_task(mb.prog.iova + i * 1024, i);
        }
        uint64_t *p0 = mb.prog.map;
        /* entry #109 of program 0: PC REGISTER_AMOUNTS of the next program */
        p0[109] = tp_entry(0x0101, 0x0014, amounts[c] ? (amounts[c] + 4 + 1) / 2 - 1 : 0);
        tp_sync_to(&d, &mb.prog);
        struct ork_kjob job = { .tasks = t, .n_tasks = 2, .core_mask = 0x1,
                                .range = { { 0, 2 } }, .timeout_ms = 100 };
        int ret = d.ops->submit(d.ctx, &job);
        CHECK(ret < 0);
        fprintf(stderr, "expected error: %s\n", ork_error_message());
        CHECK(strstr(ork_error_message(), want[c]) != NULL);
        CHECK(strstr(ork_error_message(), "task 1") != NULL || strstr(ork_error_message(),
                                                                     "task 0") != NULL);
    }
    mm_free(&d, &mb);
    d.ops->close(d.ctx);
}

/* Jobs in a non-zero domain run there; alternating domains switches the IOMMU (§13). */
static void test_domains(void)
{
    struct tp_dev d;
    open_dev(&d, NULL);
    REQUIRE(d.ctx);
    struct mm_bufs m0, m1;
    struct ork_kbo filler;               /* keeps domain 5's IOVAs clear of domain 0's */
    REQUIRE(tp_bo(&d, 1u << 20, 5, &filler) == 0);
    REQUIRE(mm_alloc(&d, &m0, 4, 64, 32, 1, 0) == 0);
    REQUIRE(mm_alloc(&d, &m1, 4, 64, 32, 1, 5) == 0);
    CHECK_EQ_INT(m1.prog.domain, 5);
    struct mm_bufs *mbs[2] = { &m0, &m1 };
    struct ork_ktask t[2];
    for (int i = 0; i < 2; i++) {
        struct tp_shape sh = { 4, 64, 32, 0, mbs[i]->a.iova, mbs[i]->b.iova, mbs[i]->c.iova };
        tp_build(mbs[i]->prog.map, &sh, 0, 0);
        tp_sync_to(&d, &mbs[i]->prog);
        t[i] = tp_task(mbs[i]->prog.iova, 0);
    }
    struct ork_sim *sim = ork__kmd_sim_get(d.ops, d.ctx);
    struct ork_sim_counters c0, c1;
    ork__sim_counters(sim, &c0);
    for (int r = 0; r < 4; r++) {
        int i = r % 2;
        struct ork_kjob job = { .tasks = &t[i], .n_tasks = 1, .core_mask = 0x1,
                                .range = { { 0, 1 } }, .domain = i ? 5u : 0u };
        int ret = d.ops->submit(d.ctx, &job);
        if (ret < 0)
            fprintf(stderr, "submit: %s\n", ork_error_describe(ret));
        CHECK_EQ_INT(ret, 0);
    }
    ork__sim_counters(sim, &c1);
    CHECK_EQ_INT(c1.domain_switches - c0.domain_switches, 3);  /* 0 -> 5 -> 0 -> 5 */
    CHECK_EQ_INT(c1.active_domain, 5);
    CHECK_EQ_INT(mm_check(&d, &m0), 0);
    CHECK_EQ_INT(mm_check(&d, &m1), 0);
    /* the same domain-5 program submitted in domain 0 does not run there */
    struct ork_kjob job = { .tasks = &t[1], .n_tasks = 1, .core_mask = 0x1,
                            .range = { { 0, 1 } }, .domain = 0 };
    CHECK_EQ_INT(d.ops->submit(d.ctx, &job), ORK_EFAULT);
    CHECK(strstr(ork_error_message(), "WRONG_DOMAIN") != NULL);
    d.ops->bo_destroy(d.ctx, &filler);
    mm_free(&d, &m0);
    mm_free(&d, &m1);
    d.ops->close(d.ctx);
}

/* A job modelled longer than its timeout fails with ORK_ETIMEDOUT (TIMEOUT, §14.5). */
static void test_model_timeout(void)
{
    struct ork_sim_opts so = { .struct_size = sizeof so, .timing = ORK_SIM_TIMING_ONLY };
    struct tp_dev d;
    open_dev(&d, &so);
    REQUIRE(d.ctx);
    struct ork_kbo prog, a, b, c;
    /* 1 x 8192 x 8192: ~6.2 ms of weight streaming at 11 GB/s */
    REQUIRE(tp_bo(&d, 1024, 0, &prog) == 0 && tp_bo(&d, 8192, 0, &a) == 0 &&
            tp_bo(&d, 8192ull * 8192, 0, &b) == 0 && tp_bo(&d, 8192 * 4, 0, &c) == 0);
    struct tp_shape sh = { 1, 8192, 8192, 0, a.iova, b.iova, c.iova };
    tp_build(prog.map, &sh, 0, 0);
    tp_sync_to(&d, &prog);
    struct ork_ktask t = tp_task(prog.iova, 0);
    struct ork_kjob job = { .tasks = &t, .n_tasks = 1, .core_mask = 0x1, .range = { { 0, 1 } },
                            .timeout_ms = 5 };
    CHECK_EQ_INT(d.ops->submit(d.ctx, &job), ORK_ETIMEDOUT);
    CHECK(strstr(ork_error_message(), "TIMEOUT") != NULL);
    job.timeout_ms = 10;
    CHECK_EQ_INT(d.ops->submit(d.ctx, &job), 0);
    d.ops->bo_destroy(d.ctx, &prog);
    d.ops->bo_destroy(d.ctx, &a);
    d.ops->bo_destroy(d.ctx, &b);
    d.ops->bo_destroy(d.ctx, &c);
    d.ops->close(d.ctx);
}

int main(void)
{
    RUN(test_single_task);
    RUN(test_chain);
    RUN(test_three_cores);
    RUN(test_subcore_slots);
    RUN(test_task_no_kmap);
    RUN(test_address_faults);
    RUN(test_chain_broken);
    RUN(test_nonblock);
    RUN(test_chain_amounts);
    RUN(test_domains);
    RUN(test_model_timeout);
    return ork_test_done();
}
