/* test_twin_spin_pool.c -- the spinning per-core workers the twin charges (ork_npu_opts
 * .worker_spin_us, src/libork/sched.c, async.c) on the simulator: 3-core split runs in the
 * per-core form, every other one through the async worker, give the same bits with workers
 * that never spin, that spin long (every hand-off found while
 * polling) and that spin 1 us (the poll expires: the sleep/wake path after a spin), across many
 * runs back to back and with CPU work between them; a spin above the bound is refused at open.
 * No timing is asserted. */
#include "ork_test.h"

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/npu.h>
#include <ork/sched.h>
#include <ork/sim.h>

#include <stdint.h>
#include <string.h>

#define K 256
#define N 960
#define RUNS 40

static int8_t A[K], W[(size_t)N * K];

/* RUNS split runs on a device whose workers spin `spin_us`; out gets the last C, the first is
 * compared with every other. */
static bool run_device(uint32_t spin_us, int32_t *out)
{
    struct ork_sim_opts so = { .struct_size = sizeof so, .strict = true };
    struct ork_npu_opts o = { .struct_size = sizeof o, .device = "sim", .sim = &so,
                              .worker_spin_us = spin_us };
    struct ork_npu *npu = NULL;
    if (ork_npu_open(&o, &npu) < 0) {
        fprintf(stderr, "  open: %s\n", ork_error_message());
        return false;
    }
    struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = ORK_NPU_I8, .k = K,
                                       .n = N, .w = W, .max_m = 1 };
    struct ork_npu_weights *wt = NULL;
    struct ork_npu_matmul *mm = NULL;
    struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = 1, .cores = 3,
                                      .flags = ORK_NPU_MATMUL_NO_WARMUP };
    bool ok = ork_npu_weights_create(npu, &wd, &wt) == 0 &&
              ork_npu_matmul_create(wt, &md, &mm) == 0;
    static int32_t c[N];
    volatile uint64_t sink = 0;
    for (int r = 0; ok && r < RUNS; r++) {
        if (r % 2) {            /* odd runs on the async worker, which polls too */
            struct ork_npu_job *j = NULL;
            ok = ork_npu_matmul_submit_async(mm, A, 1, c, &j) == 0 && ork_npu_job_wait(j) == 0;
        } else {
            ok = ork_npu_matmul_run_i8(mm, A, 1, r ? c : out) == 0;
        }
        if (ok && r)
            ok = memcmp(c, out, sizeof c) == 0;
        for (uint32_t i = 0; i < (uint32_t)r * 1000u; i++)     /* CPU work between runs */
            sink += i;
    }
    (void)sink;
    ork_npu_matmul_destroy(mm);
    ork_npu_weights_destroy(wt);
    ork_npu_close(npu);
    return ok;
}

static void test_same_bits_any_spin(void)
{
    static int32_t c0[N], c1[N], c2[N];
    CHECK(run_device(0, c0));
    CHECK(run_device(ORK_NPU_WORKER_SPIN_US_MAX, c1));
    CHECK(run_device(1, c2));
    CHECK(memcmp(c0, c1, sizeof c0) == 0);
    CHECK(memcmp(c0, c2, sizeof c0) == 0);
    int64_t acc = 0;                        /* and the common result is the integer one */
    for (uint32_t x = 0; x < K; x++)
        acc += (int64_t)A[x] * W[x];
    CHECK(acc == c0[0]);
}

static void test_spin_above_bound_refused(void)
{
    struct ork_npu_opts o = { .struct_size = sizeof o, .device = "sim",
                              .worker_spin_us = ORK_NPU_WORKER_SPIN_US_MAX + 1 };
    struct ork_npu *npu = NULL;
    CHECK(ork_npu_open(&o, &npu) == ORK_ERANGE);
    CHECK(npu == NULL);
    CHECK(strstr(ork_error_message(), "worker_spin_us") != NULL);
}

int main(void)
{
    uint32_t s = 12345;
    for (size_t i = 0; i < sizeof W; i++)
        W[i] = (int8_t)((s = s * 1103515245u + 12345u) >> 24);
    for (size_t i = 0; i < sizeof A; i++)
        A[i] = (int8_t)((s = s * 1103515245u + 12345u) >> 24);
    RUN(test_same_bits_any_spin);
    RUN(test_spin_above_bound_refused);
    return ork_test_done();
}
