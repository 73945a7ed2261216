/* test_recovery.c -- a submit that hangs past its timeout, raises a DMA error or is dropped is
 * reset and reported to its caller (blocking run, nonblocking submit/wait, async job, a split
 * over three cores), and the device, weights and plans stay usable: the next run succeeds with
 * the single-core bits. Faults come from the simulator's injection (ork/sim.h). */
#include "ork_test.h"
#include "test_ref_gemv.h"

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/npu.h>
#include <ork/sched.h>
#include <ork/sim.h>

#include <stdint.h>

enum { M = 1, K = 128, N = 256, TIMEOUT_MS = 50 };

static int8_t A[M * K], W[N * K];
static int32_t REF[M * N], C[M * N];

static void ref_compute(void)
{
    ref_gemv_fill(A, W, REF, K, N);      /* M = 1 */
}

static struct ork_npu *open_faulty(const struct ork_sim_fault *f, int nf)
{
    struct ork_sim_opts so = { .struct_size = sizeof so };
    for (int i = 0; i < nf; i++)
        so.faults[i] = f[i];
    struct ork_npu_opts o = { .struct_size = sizeof o, .device = "sim", .sim = &so };
    struct ork_npu *npu = NULL;
    return ork_npu_open(&o, &npu) == 0 ? npu : NULL;
}

static struct ork_npu_matmul *make_plan(struct ork_npu *npu, struct ork_npu_weights **wt,
                                        uint32_t cores)
{
    struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = ORK_NPU_I8, .k = K,
                                       .n = N, .w = W };
    struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = M, .cores = cores,
                                      .timeout_ms = TIMEOUT_MS,
                                      .flags = ORK_NPU_MATMUL_NO_WARMUP };
    struct ork_npu_matmul *mm = NULL;
    if (ork_npu_weights_create(npu, &wd, wt) < 0 || ork_npu_matmul_create(*wt, &md, &mm) < 0)
        return NULL;
    return mm;
}

static bool run_ok(struct ork_npu_matmul *mm)
{
    memset(C, 0, sizeof C);
    return ork_npu_matmul_run_i8(mm, A, M, C) == 0 && memcmp(C, REF, sizeof C) == 0;
}

static void test_single_core(void)
{
    const struct ork_sim_fault f[] = {
        { .kind = ORK_SIM_FAULT_HANG, .submit = 2, .task = 0 },
        { .kind = ORK_SIM_FAULT_DMA, .submit = 4, .task = 0 },
        { .kind = ORK_SIM_FAULT_DROP, .submit = 6, .task = 0 },
        { .kind = ORK_SIM_FAULT_DMA, .submit = 8, .task = 0 },
    };
    struct ork_npu *npu = open_faulty(f, 4);
    REQUIRE(npu);
    struct ork_npu_weights *wt = NULL;
    struct ork_npu_matmul *mm = make_plan(npu, &wt, 1);
    REQUIRE(mm);
    CHECK(run_ok(mm));                                              /* submit 1 */
    CHECK_EQ_INT(ork_npu_matmul_run_i8(mm, A, M, C), ORK_ETIMEDOUT); /* 2: hang */
    CHECK(strstr(ork_error_message(), "reset") != NULL);
    CHECK_EQ_INT(ork_npu_resets(npu), 1);
    CHECK(run_ok(mm));                                              /* 3 */
    CHECK_EQ_INT(ork_npu_matmul_run_i8(mm, A, M, C), ORK_EFAULT);    /* 4: DMA error */
    CHECK(strstr(ork_error_message(), "DMA") != NULL);
    CHECK_EQ_INT(ork_npu_resets(npu), 2);
    CHECK(run_ok(mm));                                              /* 5 */
    /* 6: a nonblocking job that is accepted but never started */
    int ret = ork_npu_matmul_submit(mm, A, M);
    if (ret == 0)
        ret = ork_npu_matmul_wait(mm, C);
    CHECK_EQ_INT(ret, ORK_ETIMEDOUT);
    CHECK_EQ_INT(ork_npu_resets(npu), 3);
    CHECK(run_ok(mm));                                              /* 7 */
    /* 8: through the async worker, reported by wait */
    struct ork_npu_job *j = NULL;
    CHECK_EQ_INT(ork_npu_matmul_submit_async(mm, A, M, C, &j), 0);
    CHECK_EQ_INT(ork_npu_job_wait(j), ORK_EFAULT);
    CHECK(strstr(ork_error_message(), "reset") != NULL);
    memset(C, 0, sizeof C);
    CHECK_EQ_INT(ork_npu_matmul_submit_async(mm, A, M, C, &j), 0);  /* 9 */
    CHECK_EQ_INT(ork_npu_job_wait(j), 0);
    CHECK(memcmp(C, REF, sizeof C) == 0);
    ork_npu_matmul_destroy(mm);
    ork_npu_weights_destroy(wt);
    ork_npu_close(npu);
}

static void test_split(void)
{
    /* the second of the three per-core submits of the first run hangs */
    const struct ork_sim_fault f[] = { { .kind = ORK_SIM_FAULT_HANG, .submit = 2, .task = 0 } };
    struct ork_npu *npu = open_faulty(f, 1);
    REQUIRE(npu);
    struct ork_npu_weights *wt = NULL;
    struct ork_npu_matmul *mm = make_plan(npu, &wt, 3);
    REQUIRE(mm);
    struct ork_npu_matmul_info info;
    ork_npu_matmul_get_info(mm, &info);
    CHECK_EQ_INT(info.n_cores, 3);
    CHECK_EQ_INT(ork_npu_matmul_run_i8(mm, A, M, C), ORK_ETIMEDOUT);
    CHECK(strstr(ork_error_message(), "hung") != NULL);
    CHECK_EQ_INT(ork_npu_resets(npu), 1);
    for (int rep = 0; rep < 3; rep++)
        CHECK(run_ok(mm));
    ork_npu_matmul_destroy(mm);
    ork_npu_weights_destroy(wt);
    ork_npu_close(npu);
}

int main(void)
{
    ref_compute();
    RUN(test_single_core);
    RUN(test_split);
    return ork_test_done();
}
