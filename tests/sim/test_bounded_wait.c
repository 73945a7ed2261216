/* test_bounded_wait.c -- a hung, wedged, dropped or slow NPU job costs at most the host bound
 * (ork_npu_opts.wait_timeout_ms), not the kernel's timeout: single-core jobs are submitted
 * NONBLOCK and waited for within the bound (spec §8.6), then the NPU is reset and the next run
 * succeeds. Measured on the simulator's model clock (no wall-time assertion): with the same
 * faults, blocking submits (ork_npu_opts.blocking_submits, the behaviour before) cost the
 * kernel's 6000 ms timeout, or twice it on a wedge, so the bounds checked here fail on them.
 * board_wait runs the board's own doorbell polling over the simulator. */
#include "ork_test.h"
#include "test_ref_gemv.h"

#include <ork/error.h>
#include <ork/npu.h>
#include <ork/sched.h>
#include <ork/sim.h>

#include <stdint.h>
#include <string.h>

enum { M = 1, K = 128, N = 256, BOUND_MS = 100 };
#define MS 1000000ll
/* the kernel's default timeout of a blocking rknpu job (6000 ms, spec §10.5) */
#define KERNEL_TIMEOUT_NS (6000 * MS)
/* model time a failed run may take besides the bound: launch, reset (far below 1 ms) */
#define SLACK_NS (10 * MS)

static int8_t A[M * K], W[N * K];
static int32_t REF[M * N], C[M * N];

static void ref_compute(void)
{
    ref_gemv_fill(A, W, REF, K, N);      /* M = 1 */
}

struct dev {
    struct ork_npu *npu;
    struct ork_npu_weights *wt;
    struct ork_npu_matmul *mm;
};

static bool dev_open(struct dev *d, const struct ork_sim_fault *f, bool blocking, bool board,
                     uint32_t cores)
{
    memset(d, 0, sizeof *d);
    struct ork_sim_opts so = { .struct_size = sizeof so, .board_wait = board };
    if (f)
        so.faults[0] = *f;
    struct ork_npu_opts o = { .struct_size = sizeof o, .device = "sim", .sim = &so,
                              .wait_timeout_ms = BOUND_MS, .blocking_submits = blocking };
    if (ork_npu_open(&o, &d->npu) < 0)
        return false;
    struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = ORK_NPU_I8, .k = K,
                                       .n = N, .w = W };
    struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = M, .cores = cores,
                                      .flags = ORK_NPU_MATMUL_NO_WARMUP };
    return ork_npu_weights_create(d->npu, &wd, &d->wt) == 0 &&
           ork_npu_matmul_create(d->wt, &md, &d->mm) == 0;
}

static void dev_close(struct dev *d)
{
    ork_npu_matmul_destroy(d->mm);
    ork_npu_weights_destroy(d->wt);
    ork_npu_close(d->npu);
}

static int64_t model_now(struct ork_npu *npu)
{
    struct ork_npu_model_time t;
    return ork_npu_model_time(npu, &t) == 0 ? t.now_ns : -1;
}

static bool run_ok(struct dev *d)
{
    memset(C, 0, sizeof C);
    return ork_npu_matmul_run_i8(d->mm, A, M, C) == 0 && memcmp(C, REF, sizeof C) == 0;
}

/* Run 1 succeeds, run 2 meets the fault: returns its code and the model time it took. */
static int faulty_run(struct dev *d, int64_t *cost_ns)
{
    CHECK(run_ok(d));
    int64_t t0 = model_now(d->npu);
    int ret = ork_npu_matmul_run_i8(d->mm, A, M, C);
    *cost_ns = model_now(d->npu) - t0;
    return ret;
}

/* A hung core: bounded and reset when NONBLOCK; the kernel's full timeout when blocking. */
static void test_hang(void)
{
    const struct ork_sim_fault f = { .kind = ORK_SIM_FAULT_HANG, .submit = 2, .task = 0 };
    struct dev d;
    REQUIRE(dev_open(&d, &f, false, false, 1));
    int64_t cost;
    CHECK_EQ_INT(faulty_run(&d, &cost), ORK_ETIMEDOUT);
    CHECK(strstr(ork_error_message(), "host bound of 100 ms") != NULL);
    CHECK(strstr(ork_error_message(), "reset") != NULL);
    CHECK(cost >= BOUND_MS * MS && cost <= BOUND_MS * MS + SLACK_NS);
    CHECK_EQ_INT(ork_npu_resets(d.npu), 1);
    int64_t t0 = model_now(d.npu);
    CHECK(run_ok(&d));                       /* the reset freed the core at once */
    CHECK(model_now(d.npu) - t0 <= SLACK_NS);
    dev_close(&d);

    REQUIRE(dev_open(&d, &f, true, false, 1));
    CHECK_EQ_INT(faulty_run(&d, &cost), ORK_ETIMEDOUT);
    CHECK(cost >= KERNEL_TIMEOUT_NS);        /* blocking: what the bound saves */
    CHECK(run_ok(&d));
    dev_close(&d);
}

/* A wedged NPU: a blocking submit sleeps twice its timeout (spec §8.6); NONBLOCK: the bound. */
static void test_wedge(void)
{
    const struct ork_sim_fault f = { .kind = ORK_SIM_FAULT_WEDGE, .submit = 2, .task = 0 };
    struct dev d;
    int64_t cost;
    REQUIRE(dev_open(&d, &f, false, false, 1));
    CHECK_EQ_INT(faulty_run(&d, &cost), ORK_ETIMEDOUT);
    CHECK(cost <= BOUND_MS * MS + SLACK_NS);
    CHECK(run_ok(&d));
    dev_close(&d);
    REQUIRE(dev_open(&d, &f, true, false, 1));
    CHECK_EQ_INT(faulty_run(&d, &cost), ORK_ETIMEDOUT);
    CHECK(cost >= 2 * KERNEL_TIMEOUT_NS);
    dev_close(&d);
}

/* A job slower than the bound times out (and is stopped by the reset); one within it is late
 * but correct. */
static void test_slow(void)
{
    struct ork_sim_fault f = { .kind = ORK_SIM_FAULT_SLOW, .submit = 2, .task = 0,
                               .delay_ms = 3 * BOUND_MS };
    struct dev d;
    int64_t cost;
    REQUIRE(dev_open(&d, &f, false, false, 1));
    CHECK_EQ_INT(faulty_run(&d, &cost), ORK_ETIMEDOUT);
    CHECK(cost <= BOUND_MS * MS + SLACK_NS);
    CHECK(run_ok(&d));
    dev_close(&d);

    f.delay_ms = BOUND_MS / 2;
    REQUIRE(dev_open(&d, &f, false, false, 1));
    CHECK(run_ok(&d));
    int64_t t0 = model_now(d.npu);
    CHECK(run_ok(&d));
    cost = model_now(d.npu) - t0;
    CHECK(cost >= (BOUND_MS / 2) * MS && cost < BOUND_MS * MS);
    CHECK_EQ_INT(ork_npu_resets(d.npu), 0);
    dev_close(&d);
}

/* The validated 3-core split (one submit per core from the workers): a hang on one core is
 * bounded too, and the plan keeps working. */
static void test_split(void)
{
    const struct ork_sim_fault f = { .kind = ORK_SIM_FAULT_HANG, .submit = 5, .task = 0 };
    struct dev d;
    REQUIRE(dev_open(&d, &f, false, false, 3));
    struct ork_npu_matmul_info info;
    ork_npu_matmul_get_info(d.mm, &info);
    CHECK_EQ_INT(info.n_cores, 3);
    int64_t cost;
    CHECK_EQ_INT(faulty_run(&d, &cost), ORK_ETIMEDOUT);   /* submits 4-6: one hangs */
    CHECK(cost <= BOUND_MS * MS + SLACK_NS);
    for (int rep = 0; rep < 3; rep++)
        CHECK(run_ok(&d));
    dev_close(&d);
}

/* The async worker's runs and chains are bounded the same way. */
static void test_async_chain(void)
{
    const struct ork_sim_fault f = { .kind = ORK_SIM_FAULT_HANG, .submit = 2, .task = 0 };
    struct dev d;
    REQUIRE(dev_open(&d, &f, false, false, 1));
    struct ork_npu_job *j = NULL;
    CHECK_EQ_INT(ork_npu_matmul_submit_async(d.mm, A, M, C, &j), 0);   /* submit 1 */
    CHECK_EQ_INT(ork_npu_job_wait(j), 0);
    int64_t t0 = model_now(d.npu);
    CHECK_EQ_INT(ork_npu_matmul_submit_async(d.mm, A, M, C, &j), 0);   /* 2: hangs */
    CHECK_EQ_INT(ork_npu_job_wait(j), ORK_ETIMEDOUT);
    CHECK(model_now(d.npu) - t0 <= BOUND_MS * MS + SLACK_NS);
    /* a chain of the plan with itself is not allowed; one plan in a chain is */
    struct ork_npu_chain *ch = NULL;
    CHECK_EQ_INT(ork_npu_chain_create(&d.mm, 1, &ch), 0);
    const void *av[1] = { A };
    void *cv[1] = { C };
    memset(C, 0, sizeof C);
    CHECK_EQ_INT(ork_npu_chain_run(ch, av, cv), 0);                      /* 3 */
    CHECK(memcmp(C, REF, sizeof C) == 0);
    ork_npu_chain_destroy(ch);
    dev_close(&d);

    const struct ork_sim_fault g = { .kind = ORK_SIM_FAULT_HANG, .submit = 1, .task = 0 };
    REQUIRE(dev_open(&d, &g, false, false, 1));
    CHECK_EQ_INT(ork_npu_chain_create(&d.mm, 1, &ch), 0);
    t0 = model_now(d.npu);
    CHECK_EQ_INT(ork_npu_chain_run(ch, av, cv), ORK_ETIMEDOUT);
    CHECK(model_now(d.npu) - t0 <= BOUND_MS * MS + SLACK_NS);
    CHECK(strstr(ork_error_message(), "host bound") != NULL);
    ork_npu_chain_destroy(ch);
    dev_close(&d);
}

/* The board's path: doorbell polling in host time (kmd_rknpu.c), over the simulator. */
static void test_board_doorbell(void)
{
    static const enum ork_sim_fault_kind kinds[] = { ORK_SIM_FAULT_HANG, ORK_SIM_FAULT_DROP,
                                                     ORK_SIM_FAULT_WEDGE };
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        const struct ork_sim_fault f = { .kind = kinds[i], .submit = 2, .task = 0 };
        struct dev d;
        REQUIRE(dev_open(&d, &f, false, true, 1));
        CHECK(run_ok(&d));                   /* the doorbell rang */
        CHECK_EQ_INT(ork_npu_matmul_run_i8(d.mm, A, M, C), ORK_ETIMEDOUT);
        CHECK(strstr(ork_error_message(), "doorbell") != NULL);
        CHECK_EQ_INT(ork_npu_resets(d.npu), 1);
        CHECK(run_ok(&d));
        dev_close(&d);
    }
}

int main(void)
{
    ref_compute();
    RUN(test_hang);
    RUN(test_wedge);
    RUN(test_slow);
    RUN(test_split);
    RUN(test_async_chain);
    RUN(test_board_doorbell);
    return ork_test_done();
}
