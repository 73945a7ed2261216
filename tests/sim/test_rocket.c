/* test_rocket.c -- the rocket backend over the simulator's rocket driver model ("sim-rocket",
 * spec §11): the public API bit-exact and identical to the rknpu path (single-core, 3-core as
 * several jobs in one SUBMIT, chains, async, a second IOMMU domain); each defect of the old
 * backend has a test that fails on its behaviour (no in/out BO lists, a relative PREP_BO
 * timeout, a second domain refused, regcmd_count without the trailer); each rocket hazard has a
 * test (ROCKET_COUNT_SHORT, ROCKET_NO_DPU, the 500 ms TIMEOUT with HANG / DROP faults, the
 * implicit dependencies of the BO lists, a write to an unlisted BO). */
#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/npu.h>
#include <ork/sched.h>
#include <ork/sim.h>

#include "ork_test.h"
#include "test_sim_prog.h"
#include "libork/kmd/kmd_rocket.h"
#include "libork/ork_priv.h"   /* the simulator behind a device, for its counters */
#include "sim/sim.h"

#define MS_NS 1000000ll

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static int8_t rnd8(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (int8_t)(rng >> 24);
}

static struct ork_npu *open_npu(const char *dev, const struct ork_sim_opts *so, uint32_t domain)
{
    struct ork_npu_opts o = { .struct_size = sizeof o, .device = dev, .sim = so,
                              .domain = domain };
    struct ork_npu *npu = NULL;
    int ret = ork_npu_open(&o, &npu);
    if (ret < 0)
        fprintf(stderr, "  open %s: %s\n", dev, ork_error_describe(ret));
    return npu;
}

/* One int8 matmul M x K x N on `npu` with `cores`; returns its error and fills c. */
static int run_i8(struct ork_npu *npu, const int8_t *a, const int8_t *w, uint32_t M, uint32_t K,
                  uint32_t N, uint32_t cores, int32_t *c)
{
    struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = ORK_NPU_I8, .k = K,
                                       .n = N, .w = w, .max_m = M };
    struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = M, .cores = cores };
    struct ork_npu_weights *wt = NULL;
    struct ork_npu_matmul *mm = NULL;
    int ret = ork_npu_weights_create(npu, &wd, &wt);
    if (ret == 0)
        ret = ork_npu_matmul_create(wt, &md, &mm);
    if (ret == 0)
        ret = ork_npu_matmul_run_i8(mm, a, M, c);
    if (ret < 0)
        fprintf(stderr, "  run %ux%ux%u cores %u: %s\n", M, K, N, cores, ork_error_describe(ret));
    ork_npu_matmul_destroy(mm);
    ork_npu_weights_destroy(wt);
    return ret;
}

static uint64_t count_bad(const int8_t *a, const int8_t *w, uint32_t M, uint32_t K, uint32_t N,
                          const int32_t *c)
{
    uint64_t bad = 0;
    for (uint32_t i = 0; i < M; i++)
        for (uint32_t j = 0; j < N; j++) {
            int32_t acc = 0;
            for (uint32_t k = 0; k < K; k++)
                acc += (int32_t)a[(size_t)i * K + k] * w[(size_t)j * K + k];
            bad += c[(size_t)i * N + j] != acc;
        }
    return bad;
}

/* Defects "no in/out BO lists" and "relative PREP_BO timeout": before, every blocking job was
 * refused for lack of out_bos, and a wait with a relative 500 ms timeout waited zero time on a
 * job still running. Now the public API runs on sim-rocket, bit-exact and equal to the sim. */
static void test_api_matches_rknpu(void)
{
    const uint32_t M = 3, K = 1024, N = 640;
    int8_t *a = ork_malloc((size_t)M * K), *w = ork_malloc((size_t)N * K);
    int32_t *c1 = ork_calloc((size_t)M * N, 4), *c2 = ork_calloc((size_t)M * N, 4);
    for (size_t i = 0; i < (size_t)M * K; i++)
        a[i] = rnd8();
    for (size_t i = 0; i < (size_t)N * K; i++)
        w[i] = rnd8();
    struct ork_npu *rk = open_npu("sim", NULL, 0), *ro = open_npu("sim-rocket", NULL, 0);
    CHECK(rk && ro);
    if (rk && ro) {
        CHECK_STR(ork_npu_backend(ro), "sim-rocket");
        CHECK(ork_npu_is_sim(ro));
        for (uint32_t cores = 1; cores <= 3; cores += 2) {
            memset(c2, 0, (size_t)M * N * 4);
            CHECK_EQ_INT(run_i8(rk, a, w, M, K, N, cores, c1), 0);
            CHECK_EQ_INT(run_i8(ro, a, w, M, K, N, cores, c2), 0);
            CHECK_EQ_INT(count_bad(a, w, M, K, N, c2), 0);
            CHECK(memcmp(c1, c2, (size_t)M * N * 4) == 0);
        }
        /* 3 cores on rocket: several jobs in one SUBMIT, spread by the scheduler (§11.3) */
        struct ork_sim_counters sc;
        ork__sim_counters(ork__kmd_sim_get(ro->kmd, ro->kctx), &sc);
        CHECK(__builtin_popcount(sc.last_core_mask) >= 2);
        CHECK_EQ_INT(sc.failed_jobs, 0);
    }
    ork_npu_close(rk);
    ork_npu_close(ro);
    ork_free(a);
    ork_free(w);
    ork_free(c1);
    ork_free(c2);
}

/* Chains and async runs through the rocket backend (trailers stay terminal, §11.3). */
static void test_chain_async(void)
{
    const uint32_t M = 2, K = 512, ns[3] = { 256, 64, 96 };
    struct ork_npu *ro = open_npu("sim-rocket", NULL, 0);
    CHECK(ro != NULL);
    if (!ro)
        return;
    int8_t *a = ork_malloc((size_t)M * K), *w[3];
    int32_t *c[3];
    struct ork_npu_weights *wt[3] = { 0 };
    struct ork_npu_matmul *mm[3] = { 0 };
    for (size_t i = 0; i < (size_t)M * K; i++)
        a[i] = rnd8();
    for (int p = 0; p < 3; p++) {
        w[p] = ork_malloc((size_t)ns[p] * K);
        c[p] = ork_calloc((size_t)M * ns[p], 4);
        for (size_t i = 0; i < (size_t)ns[p] * K; i++)
            w[p][i] = rnd8();
        struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = ORK_NPU_I8,
                                           .k = K, .n = ns[p], .w = w[p], .max_m = M };
        struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = M };
        CHECK_EQ_INT(ork_npu_weights_create(ro, &wd, &wt[p]), 0);
        CHECK_EQ_INT(ork_npu_matmul_create(wt[p], &md, &mm[p]), 0);
    }
    struct ork_npu_chain *ch = NULL;
    CHECK_EQ_INT(ork_npu_chain_create(mm, 3, &ch), 0);
    const void *av[3] = { a, a, a };
    void *cv[3] = { c[0], c[1], c[2] };
    CHECK_EQ_INT(ork_npu_chain_run(ch, av, cv), 0);
    for (int p = 0; p < 3; p++)
        CHECK_EQ_INT(count_bad(a, w[p], M, K, ns[p], c[p]), 0);
    memset(c[0], 0, (size_t)M * ns[0] * 4);
    struct ork_npu_job *job = NULL;
    CHECK_EQ_INT(ork_npu_matmul_submit_async(mm[0], a, M, c[0], &job), 0);
    CHECK_EQ_INT(ork_npu_job_wait(job), 0);
    CHECK_EQ_INT(count_bad(a, w[0], M, K, ns[0], c[0]), 0);
    ork_npu_chain_destroy(ch);
    for (int p = 0; p < 3; p++) {
        ork_npu_matmul_destroy(mm[p]);
        ork_npu_weights_destroy(wt[p]);
        ork_free(w[p]);
        ork_free(c[p]);
    }
    ork_free(a);
    ork_npu_close(ro);
}

/* Defect "second domain refused": before, any domain but 0 was ORK_EUNSUPPORTED, so a model
 * needing two domains could not load. Now each domain is its own fd (§11.3): two address
 * spaces that both hand out the top of the window, and jobs that cannot mix them. */
static void test_second_domain(void)
{
    struct ork_kmd_opts ko = { .struct_size = sizeof ko };
    void *ctx = NULL;
    CHECK_EQ_INT(ork__kmd_sim_rocket_ops.open(&ko, &ctx), 0);
    if (!ctx)
        return;
    struct ork_kbo b0, b1;
    CHECK_EQ_INT(ork__kmd_sim_rocket_ops.bo_create(ctx, 4096, 0, 0, &b0), 0);
    CHECK_EQ_INT(ork__kmd_sim_rocket_ops.bo_create(ctx, 4096, 0, 1, &b1), 0);
    CHECK_EQ_INT(b1.domain, 1);
    CHECK_EQ_INT(b0.iova, b1.iova);            /* two address spaces: the same top page */
    struct ork_ktask t = tp_task(b1.iova, 0);
    const struct ork_kbo *outs[1] = { &b0 };
    struct ork_kjob j = { .tasks = &t, .n_tasks = 1, .range = { { 0, 1 } }, .domain = 1,
                          .out_bos = outs, .n_out_bos = 1 };
    CHECK_EQ_INT(ork__kmd_sim_rocket_ops.submit(ctx, &j), ORK_EINVAL);   /* mixed domains */
    CHECK(strstr(ork_error_message(), "domain") != NULL);
    ork__kmd_sim_rocket_ops.bo_destroy(ctx, &b0);
    ork__kmd_sim_rocket_ops.bo_destroy(ctx, &b1);
    ork__kmd_sim_rocket_ops.close(ctx);

    /* through the API: a device per domain, as the engine places a big model */
    const uint32_t M = 1, K = 256, N = 64;
    int8_t a[256], *w = ork_malloc((size_t)N * K);
    int32_t c[64];
    for (uint32_t i = 0; i < K; i++)
        a[i] = rnd8();
    for (size_t i = 0; i < (size_t)N * K; i++)
        w[i] = rnd8();
    struct ork_npu *d1 = open_npu("sim-rocket", NULL, 1);
    CHECK(d1 != NULL);
    if (d1) {
        CHECK_EQ_INT(run_i8(d1, a, w, M, K, N, 1, c), 0);
        CHECK_EQ_INT(count_bad(a, w, M, K, N, c), 0);
    }
    ork_npu_close(d1);
    ork_free(w);
}

/* ---- raw rocket requests on the simulator's model ---------------------------------------- */

struct raw {
    struct ork_sim *sim;
    int file;
    uint32_t h_prog, h_a, h_b, h_c;
    uint32_t prog, a, b, c;            /* NPU addresses */
    uint64_t *prog_map;
    int8_t *a_map, *b_map;
    int32_t *c_map;
};

enum { RAW_M = 2, RAW_K = 64, RAW_N = 32 };

static uint32_t raw_bo(struct raw *r, uint32_t size, uint32_t *addr, void **map)
{
    struct drm_rocket_create_bo cb = { .size = size };
    CHECK_EQ_INT(ork__sim_rocket_ioctl(r->sim, r->file, DRM_IOCTL_ROCKET_CREATE_BO, &cb), 0);
    *addr = (uint32_t)cb.dma_address;
    *map = ork__sim_mmap(r->sim, cb.offset, size);
    return cb.handle;
}

static void raw_open(struct raw *r, const struct ork_sim_opts *so)
{
    memset(r, 0, sizeof *r);
    CHECK_EQ_INT(ork__sim_create(so, &r->sim), 0);
    r->file = ork__sim_rocket_file_open(r->sim);
    CHECK(r->file >= 0);
    void *m;
    r->h_prog = raw_bo(r, 4096, &r->prog, &m);
    r->prog_map = m;
    r->h_a = raw_bo(r, RAW_M * RAW_K, &r->a, &m);
    r->a_map = m;
    r->h_b = raw_bo(r, RAW_K * RAW_N, &r->b, &m);
    r->b_map = m;
    r->h_c = raw_bo(r, RAW_M * RAW_N * 4, &r->c, &m);
    r->c_map = m;
    tp_fill(r->a_map, r->b_map, RAW_M, RAW_K, RAW_N, 5);
    struct tp_shape sh = { RAW_M, RAW_K, RAW_N, 0, r->a, r->b, r->c };
    tp_build(r->prog_map, &sh, 0, 0);
}

static void raw_close(struct raw *r)
{
    ork__sim_rocket_file_close(r->sim, r->file);
    ork__sim_destroy(r->sim);
}

static int raw_fini_all(struct raw *r)
{
    uint32_t hs[4] = { r->h_prog, r->h_a, r->h_b, r->h_c };
    int ret = 0;
    for (int i = 0; i < 4 && ret == 0; i++) {
        struct drm_rocket_fini_bo f = { .handle = hs[i] };
        ret = ork__sim_rocket_ioctl(r->sim, r->file, DRM_IOCTL_ROCKET_FINI_BO, &f);
    }
    return ret;
}

/* Submit one job of one task with regcmd_count `count`; `with_c_out`: C in the out list. */
static int raw_submit(struct raw *r, uint32_t count, bool with_c_out)
{
    struct drm_rocket_task t = { r->prog, count };
    uint32_t in[3] = { r->h_prog, r->h_a, r->h_b }, out[1] = { with_c_out ? r->h_c : r->h_a };
    struct drm_rocket_job j = {
        .tasks = (uint64_t)(uintptr_t)&t, .in_bo_handles = (uint64_t)(uintptr_t)in,
        .out_bo_handles = (uint64_t)(uintptr_t)out, .task_count = 1,
        .task_struct_size = sizeof t, .in_bo_handle_count = with_c_out ? 3 : 2,
        .out_bo_handle_count = 1,
    };
    struct drm_rocket_submit s = { .jobs = (uint64_t)(uintptr_t)&j, .job_count = 1,
                                   .job_struct_size = sizeof j };
    return ork__sim_rocket_ioctl(r->sim, r->file, DRM_IOCTL_ROCKET_SUBMIT, &s);
}

static int raw_prep(struct raw *r, uint32_t h, int64_t timeout_ns)
{
    struct drm_rocket_prep_bo p = { .handle = h, .timeout_ns = timeout_ns };
    return ork__sim_rocket_ioctl(r->sim, r->file, DRM_IOCTL_ROCKET_PREP_BO, &p);
}

static int raw_bad(struct raw *r)
{
    int bad = 0;
    for (uint32_t m = 0; m < RAW_M; m++)
        for (uint32_t n = 0; n < RAW_N; n++)
            bad += r->c_map[m * RAW_N + n] != tp_ref(r->a_map, r->b_map, RAW_K, RAW_N, m, n);
    return bad;
}

/* PREP_BO's timeout_ns is an absolute CLOCK_MONOTONIC time: the old relative 500 ms is long
 * past, so it waits zero time on a running job (EBUSY); the absolute deadline waits. */
static void test_prep_deadline(void)
{
    struct raw r;
    raw_open(&r, NULL);
    CHECK_EQ_INT(raw_fini_all(&r), 0);
    CHECK_EQ_INT(raw_submit(&r, TP_ENTRIES, true), 0);
    CHECK_EQ_INT(raw_prep(&r, r.h_c, 500 * MS_NS), ORK_EBUSY);              /* relative: old */
    CHECK(strstr(ork_error_message(), "absolute") != NULL);
    CHECK_EQ_INT(raw_prep(&r, r.h_c, ork__kmd_rocket_deadline(500 * MS_NS)), 0);
    CHECK_EQ_INT(raw_bad(&r), 0);
    struct drm_rocket_prep_bo bad = { .handle = r.h_c, .reserved = 1 };
    CHECK_EQ_INT(ork__sim_rocket_ioctl(r.sim, r.file, DRM_IOCTL_ROCKET_PREP_BO, &bad),
                 ORK_EINVAL);
    raw_close(&r);
}

/* ROCKET_COUNT_SHORT (§14.1): regcmd_count 108 (the old count, without the trailer) never
 * fetches OPERATION_ENABLE: the job times out after 500 ms, the core is reset, C stays
 * unwritten; 112 runs. The backend's translation counts the trailer. */
static void test_count_short(void)
{
    struct raw r;
    raw_open(&r, NULL);
    CHECK_EQ_INT(raw_fini_all(&r), 0);
    CHECK_EQ_INT(raw_submit(&r, TP_AMOUNT, true), 0);                      /* 108: old */
    CHECK_EQ_INT(raw_prep(&r, r.h_c, ork__kmd_rocket_deadline(2000 * MS_NS)), 0);
    struct ork_sim_counters c;
    ork__sim_counters(r.sim, &c);
    CHECK_EQ_INT(c.failed_jobs, 1);
    CHECK(c.now_ns >= 500 * MS_NS);
    CHECK(raw_bad(&r) > 0);                                                 /* unwritten */
    CHECK_EQ_INT(raw_submit(&r, TP_ENTRIES, true), 0);                     /* 112 */
    CHECK_EQ_INT(raw_prep(&r, r.h_c, ork__kmd_rocket_deadline(2000 * MS_NS)), 0);
    CHECK_EQ_INT(raw_bad(&r), 0);
    raw_close(&r);

    struct ork_ktask t[1] = { tp_task(0x1000, 0) };
    struct ork_kjob j = { .tasks = t, .n_tasks = 1, .range = { { 0, 1 } } };
    struct drm_rocket_task rt[1];
    struct drm_rocket_job rj[3];
    uint32_t n = 0, in_h[1], out_h[1];
    CHECK_EQ_INT(ork__kmd_rocket_fill(&j, rt, rj, &n, in_h, out_h), 0);
    CHECK_EQ_INT(rt[0].regcmd_count, TP_ENTRIES);
}

/* ROCKET_NO_DPU (§14.5): a program whose OPERATION_ENABLE lacks the DPU never completes on
 * rocket (500 ms timeout); the backend refuses such a task before the kernel sees it. */
static void test_no_dpu(void)
{
    struct raw r;
    raw_open(&r, NULL);
    r.prog_map[TP_ENTRIES - 1] = tp_entry(0x0081, 0x0008, 0x05);   /* CNA + CORE only */
    CHECK_EQ_INT(raw_fini_all(&r), 0);
    CHECK_EQ_INT(raw_submit(&r, TP_ENTRIES, true), 0);
    CHECK_EQ_INT(raw_prep(&r, r.h_c, ork__kmd_rocket_deadline(2000 * MS_NS)), 0);
    struct ork_sim_counters c;
    ork__sim_counters(r.sim, &c);
    CHECK_EQ_INT(c.failed_jobs, 1);
    raw_close(&r);

    struct ork_ktask t[1] = { tp_task(0x1000, 0) };
    t[0].enable_mask = 0x05;
    struct ork_kjob j = { .tasks = t, .n_tasks = 1, .range = { { 0, 1 } } };
    struct drm_rocket_task rt[1];
    struct drm_rocket_job rj[3];
    uint32_t n = 0, in_h[1], out_h[1];
    CHECK_EQ_INT(ork__kmd_rocket_fill(&j, rt, rj, &n, in_h, out_h), ORK_EHAZARD);
    CHECK(strstr(ork_error_message(), "ROCKET_NO_DPU") != NULL);
}

/* Implicit dependencies (§11.3): a job reading what an earlier job of the SUBMIT writes starts
 * after it; a write to a BO missing from the out list is warned about. */
static void test_dependencies(void)
{
    struct raw r;
    raw_open(&r, NULL);
    CHECK_EQ_INT(raw_fini_all(&r), 0);
    struct drm_rocket_task t = { r.prog, TP_ENTRIES };
    uint32_t in0[3] = { r.h_prog, r.h_a, r.h_b }, out0[1] = { r.h_c };
    uint32_t in1[2] = { r.h_prog, r.h_c }, out1[1] = { r.h_b };   /* job 1 reads job 0's C */
    struct drm_rocket_job j[2] = {
        { (uint64_t)(uintptr_t)&t, (uint64_t)(uintptr_t)in0, (uint64_t)(uintptr_t)out0, 1,
          sizeof t, 3, 1 },
        { (uint64_t)(uintptr_t)&t, (uint64_t)(uintptr_t)in1, (uint64_t)(uintptr_t)out1, 1,
          sizeof t, 2, 1 },
    };
    struct drm_rocket_submit s = { (uint64_t)(uintptr_t)j, 2, sizeof j[0], 0 };
    CHECK_EQ_INT(ork__sim_rocket_ioctl(r.sim, r.file, DRM_IOCTL_ROCKET_SUBMIT, &s), 0);
    CHECK_EQ_INT(raw_prep(&r, r.h_b, ork__kmd_rocket_deadline(2000 * MS_NS)), 0);
    struct ork_sim_counters c;
    ork__sim_counters(r.sim, &c);
    /* two cores were free, yet the second job waited for the first: one after the other */
    CHECK(c.busy_ns[0] > 0 && c.busy_ns[1] > 0);
    CHECK(c.now_ns >= c.busy_ns[0] + c.busy_ns[1]);
    uint64_t warn0 = c.warnings;
    CHECK_EQ_INT(raw_submit(&r, TP_ENTRIES, false), 0);                  /* C not listed */
    CHECK_EQ_INT(raw_prep(&r, r.h_a, ork__kmd_rocket_deadline(2000 * MS_NS)), 0);
    ork__sim_counters(r.sim, &c);
    CHECK(c.warnings > warn0);
    raw_close(&r);
}

/* TIMEOUT (§14.5): a hung or dropped job ends at the 500 ms job timeout with the core reset; the
 * API notices the unwritten sentinel, says so, and the next run works (the core is not left
 * hung: rocket resets it). */
static void test_timeout_faults(void)
{
    for (int kind = ORK_SIM_FAULT_HANG; kind <= ORK_SIM_FAULT_DROP; kind += 2) {
        struct ork_sim_opts so = { .struct_size = sizeof so };
        /* submit 1, 2: the warm-ups; 3: the first run */
        so.faults[0] = (struct ork_sim_fault){ .kind = (enum ork_sim_fault_kind)kind, .submit = 3,
                                               .task = 0 };
        struct ork_npu *ro = open_npu("sim-rocket", &so, 0);
        CHECK(ro != NULL);
        if (!ro)
            continue;
        const uint32_t M = 1, K = 128, N = 64;
        int8_t a[128], w[128 * 64];
        int32_t c[64];
        for (uint32_t i = 0; i < K; i++)
            a[i] = rnd8();
        for (uint32_t i = 0; i < N * K; i++)
            w[i] = rnd8();
        struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = ORK_NPU_I8,
                                           .k = K, .n = N, .w = w, .max_m = M };
        struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = M };
        struct ork_npu_weights *wt = NULL;
        struct ork_npu_matmul *mm = NULL;
        CHECK_EQ_INT(ork_npu_weights_create(ro, &wd, &wt), 0);
        CHECK_EQ_INT(ork_npu_matmul_create(wt, &md, &mm), 0);
        CHECK_EQ_INT(ork_npu_matmul_run_i8(mm, a, M, c), ORK_ETIMEDOUT);
        CHECK(strstr(ork_error_message(), "sentinel") != NULL);
        CHECK_EQ_INT(ork_npu_matmul_run_i8(mm, a, M, c), 0);
        CHECK_EQ_INT(count_bad(a, w, M, K, N, c), 0);
        ork_npu_matmul_destroy(mm);
        ork_npu_weights_destroy(wt);
        ork_npu_close(ro);
    }
}

int main(void)
{
    RUN(test_api_matches_rknpu);
    RUN(test_chain_async);
    RUN(test_second_domain);
    RUN(test_prep_deadline);
    RUN(test_count_short);
    RUN(test_no_dpu);
    RUN(test_dependencies);
    RUN(test_timeout_faults);
    return ork_test_done();
}
