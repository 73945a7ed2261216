/* test_kmd.c -- the kernel-driver vtable without hardware: backend selection, clean failure
 * when no rknpu/rocket device exists, the rknpu SUBMIT filling with the §9 subcore_task slot
 * rules (test vector §15.9) and §10.5 flags, and the rocket job translation (§11.3). */
#include <sys/stat.h>

#include <ork/error.h>

#include "ork_test.h"
#include "libork/kmd/kmd.h"
#include "libork/kmd/kmd_rknpu.h"
#include "libork/kmd/kmd_rocket.h"
#include "uapi/rknpu_uapi.h"

static void test_select(void)
{
    const struct ork_kmd_ops *ops = NULL;
    CHECK_EQ_INT(ork__kmd_select("rknpu", &ops), 0);
    CHECK(ops == &ork__kmd_rknpu_ops);
    CHECK_EQ_INT(ork__kmd_select("rocket", &ops), 0);
    CHECK_STR(ops->name, "rocket");
    CHECK_EQ_INT(ork__kmd_select("sim", &ops), 0);
    CHECK_STR(ops->name, "sim");
    CHECK_EQ_INT(ork__kmd_select("nvdla", &ops), ORK_ENOENT);
    CHECK(strstr(ork_error_message(), "nvdla") != NULL);
    /* required slots are present in every backend; rocket has no actions (NULL = none) */
    const struct ork_kmd_ops *all[] = { &ork__kmd_rknpu_ops, &ork__kmd_rocket_ops,
                                        &ork__kmd_sim_ops };
    for (int i = 0; i < 3; i++)
        CHECK(all[i]->open && all[i]->close && all[i]->bo_create && all[i]->bo_destroy &&
              all[i]->submit && all[i]->wait);
    CHECK(ork__kmd_rocket_ops.action != NULL);    /* RESET only: the kernel resets itself */
}

static bool dir_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

static void test_no_device(void)
{
    void *ctx = NULL;
    if (!dir_exists("/dev/accel")) {
        CHECK_EQ_INT(ork__kmd_rocket_ops.open(NULL, &ctx), ORK_ENOENT);
        CHECK(strstr(ork_error_message(), "no rocket device found") != NULL);
    }
    struct ork_kmd_opts o = { .struct_size = sizeof o, .node = "/nonexistent/accel9" };
    CHECK_EQ_INT(ork__kmd_rocket_ops.open(&o, &ctx), ORK_ENOENT);
    CHECK(strstr(ork_error_message(), "no rocket device found") != NULL);
    o.node = "/nonexistent/card9";
    CHECK_EQ_INT(ork__kmd_rknpu_ops.open(&o, &ctx), ORK_ENOENT);
    if (!dir_exists("/dev/dri") && !dir_exists("/dev/accel")) {
        const struct ork_kmd_ops *ops = NULL;
        CHECK_EQ_INT(ork__kmd_rknpu_ops.open(NULL, &ctx), ORK_ENOENT);
        CHECK(strstr(ork_error_message(), "no rknpu device found") != NULL);
        CHECK_EQ_INT(ork__kmd_open("auto", NULL, &ops, &ctx), ORK_ENOENT);
        CHECK(strstr(ork_error_message(), "sim") != NULL);
    }
}

static const struct ork_ktask tasks6[6] = {
    { 0x1000, 108, 0xd, 0x300, 0 }, { 0x2000, 108, 0xd, 0x300, 1 },
    { 0x3000, 108, 0xd, 0x300, 2 }, { 0x4000, 108, 0xd, 0x300, 3 },
    { 0x5000, 108, 0xd, 0x300, 4 }, { 0x6000, 108, 0xd, 0x300, 5 },
};

#define SLOT_EQ(s, i, start, num)                                                             \
    do {                                                                                      \
        CHECK_EQ_INT((s).subcore_task[i].task_start, (start));                                \
        CHECK_EQ_INT((s).subcore_task[i].task_number, (num));                                 \
    } while (0)

static void test_fill_submit_slots(void)
{
    struct rknpu_submit s;
    const uint32_t base = 100;
    /* 3 cores: ranges go to slots 2, 3, 4 (§9) */
    struct ork_kjob j = { .tasks = tasks6, .n_tasks = 6, .core_mask = 0x7,
                          .range = { { 0, 2 }, { 2, 3 }, { 5, 1 } } };
    CHECK_EQ_INT(ork__kmd_rknpu_fill_submit(&j, base, 0xabc000, 3, &s), 0);
    SLOT_EQ(s, 2, base + 0, 2);
    SLOT_EQ(s, 3, base + 2, 3);
    SLOT_EQ(s, 4, base + 5, 1);
    CHECK(s.subcore_task[0].task_number && s.subcore_task[1].task_number); /* never empty */
    CHECK_EQ_INT(s.core_mask, 0x7);
    CHECK_EQ_INT(s.task_start, base);
    CHECK_EQ_INT(s.task_number, 6);
    CHECK_EQ_INT(s.task_obj_addr, 0xabc000);
    CHECK_EQ_INT(s.flags, RKNPU_JOB_PC);
    CHECK_EQ_INT(s.timeout, 6000);
    CHECK_EQ_INT(s.fence_fd, -1);

    /* single core 2: slot 2; every other slot a job could read is filled too */
    j = (struct ork_kjob){ .tasks = tasks6, .n_tasks = 6, .core_mask = 0x4,
                           .range = { { 0, 0 }, { 0, 0 }, { 1, 4 } },
                           .flags = ORK_KJOB_NONBLOCK | ORK_KJOB_PINGPONG, .timeout_ms = 50,
                           .domain = 3 };
    CHECK_EQ_INT(ork__kmd_rknpu_fill_submit(&j, 0, 1, 3, &s), 0);
    SLOT_EQ(s, 2, 1, 4);
    for (int i = 0; i < 5; i++)
        CHECK(s.subcore_task[i].task_number != 0);
    CHECK_EQ_INT(s.flags, 0x7);
    CHECK_EQ_INT(s.timeout, 50);
    CHECK_EQ_INT(s.iommu_domain_id, 3);

    /* two cores 0 and 2: slots 0 and 2 */
    j = (struct ork_kjob){ .tasks = tasks6, .n_tasks = 6, .core_mask = 0x5,
                           .range = { { 0, 3 }, { 0, 0 }, { 3, 3 } } };
    CHECK_EQ_INT(ork__kmd_rknpu_fill_submit(&j, 10, 1, 3, &s), 0);
    SLOT_EQ(s, 0, 10, 3);
    SLOT_EQ(s, 2, 13, 3);

    /* auto (core_mask 0): range[0] in slots 0..2, whichever core the kernel picks */
    j = (struct ork_kjob){ .tasks = tasks6, .n_tasks = 2, .core_mask = 0,
                           .range = { { 0, 2 } } };
    CHECK_EQ_INT(ork__kmd_rknpu_fill_submit(&j, 7, 1, 3, &s), 0);
    for (int i = 0; i < 3; i++)
        SLOT_EQ(s, i, 7, 2);
    CHECK_EQ_INT(s.core_mask, 0);

    /* an empty or out-of-range core range is refused before it reaches the kernel */
    j = (struct ork_kjob){ .tasks = tasks6, .n_tasks = 6, .core_mask = 0x3,
                           .range = { { 0, 3 }, { 3, 0 } } };
    CHECK_EQ_INT(ork__kmd_rknpu_fill_submit(&j, 0, 1, 3, &s), ORK_EINVAL);
    j.range[1] = (struct ork_kcore_range){ 4, 3 };
    CHECK_EQ_INT(ork__kmd_rknpu_fill_submit(&j, 0, 1, 3, &s), ORK_EINVAL);
    j.core_mask = 0x8;
    CHECK_EQ_INT(ork__kmd_rknpu_fill_submit(&j, 0, 1, 3, &s), ORK_EINVAL);
    j.core_mask = 0x4;                 /* core 2 on a 2-core device */
    j.range[2] = (struct ork_kcore_range){ 0, 1 };
    CHECK_EQ_INT(ork__kmd_rknpu_fill_submit(&j, 0, 1, 2, &s), ORK_EINVAL);
}

static void test_rocket_fill(void)
{
    struct ork_kbo in = { .handle = 11 }, out = { .handle = 22 };
    const struct ork_kbo *ins[1] = { &in }, *outs[1] = { &out };
    struct ork_kjob j = { .tasks = tasks6, .n_tasks = 6, .core_mask = 0x3,
                          .range = { { 0, 4 }, { 4, 2 } }, .in_bos = ins, .n_in_bos = 1,
                          .out_bos = outs, .n_out_bos = 1 };
    struct drm_rocket_task t[6];
    struct drm_rocket_job jobs[3];
    uint32_t n = 0, in_h[1], out_h[1];
    CHECK_EQ_INT(ork__kmd_rocket_fill(&j, t, jobs, &n, in_h, out_h), 0);
    CHECK_EQ_INT(n, 2);
    CHECK_EQ_INT(t[0].regcmd, 0x1000);
    CHECK_EQ_INT(t[5].regcmd_count, 112);              /* 108 + 4 trailer entries (§11.3) */
    CHECK_EQ_INT(jobs[0].task_count, 4);
    CHECK_EQ_INT(jobs[1].task_count, 2);
    CHECK(jobs[1].tasks == (uint64_t)(uintptr_t)&t[4]);
    CHECK_EQ_INT(jobs[0].task_struct_size, 8);
    CHECK_EQ_INT(jobs[0].in_bo_handle_count, 1);
    CHECK_EQ_INT(in_h[0], 11);
    CHECK_EQ_INT(out_h[0], 22);
    j.range[1].count = 0;
    CHECK_EQ_INT(ork__kmd_rocket_fill(&j, t, jobs, &n, in_h, out_h), ORK_EINVAL);
}

int main(void)
{
    RUN(test_select);
    RUN(test_no_device);
    RUN(test_fill_submit_slots);
    RUN(test_rocket_fill);
    return ork_test_done();
}
