/* test_rocket_parallel.c -- rocket orders jobs by their BO lists (spec §11.3: a job writing a BO
 * runs after every earlier job using it), and the simulator's rocket model does the same. A
 * 3-core split is three jobs in one SUBMIT; when they all listed the plan's one C buffer they
 * ran one after the other on the model clock (the run took the sum of the cores' busy times).
 * Each core's job now writes its own C buffer, so the three overlap: the run takes about one
 * core's time. The result stays bit-exact, as on the rknpu path. */
#include "ork_test.h"

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/npu.h>
#include <ork/sim.h>

#include <stdint.h>
#include <string.h>

enum { M = 1, K = 1024, N = 3072 };

static int8_t A[M * K], *W;
static int32_t REF[M * N], C[M * N];

static void ref_compute(void)
{
    uint64_t r = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < M * K; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        A[i] = (int8_t)(r >> 24);
    }
    for (size_t i = 0; i < (size_t)N * K; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        W[i] = (int8_t)(r >> 24);
    }
    for (int j = 0; j < N; j++) {
        int32_t acc = 0;
        for (int k = 0; k < K; k++)
            acc += A[k] * W[(size_t)j * K + k];
        REF[j] = acc;
    }
}

struct span {
    int64_t elapsed_ns;             /* model clock across one run */
    int64_t busy_ns[3];             /* each core's busy time in it */
    int64_t busy_sum_ns;
};

/* One run of a `cores`-core plan on `dev`, measured on the model clock after the warm-ups. */
static bool measure(const char *dev, uint32_t cores, struct span *sp)
{
    struct ork_sim_opts so = { .struct_size = sizeof so };
    struct ork_npu_opts o = { .struct_size = sizeof o, .device = dev, .sim = &so };
    struct ork_npu *npu = NULL;
    struct ork_npu_weights *wt = NULL;
    struct ork_npu_matmul *mm = NULL;
    struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = ORK_NPU_I8, .k = K,
                                       .n = N, .w = W, .max_m = M };
    struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = M, .cores = cores };
    bool ok = ork_npu_open(&o, &npu) == 0 && ork_npu_weights_create(npu, &wd, &wt) == 0 &&
              ork_npu_matmul_create(wt, &md, &mm) == 0;
    struct ork_npu_model_time t0, t1;
    memset(C, 0, sizeof C);
    ok = ok && ork_npu_model_time(npu, &t0) == 0 && ork_npu_matmul_run_i8(mm, A, M, C) == 0 &&
         ork_npu_model_time(npu, &t1) == 0;
    if (ok) {
        struct ork_npu_matmul_info info;
        ork_npu_matmul_get_info(mm, &info);
        ok = info.n_cores == cores && memcmp(C, REF, sizeof C) == 0;
        memset(sp, 0, sizeof *sp);
        sp->elapsed_ns = t1.now_ns - t0.now_ns;
        for (uint32_t c = 0; c < 3 && c < t1.n_cores; c++) {
            sp->busy_ns[c] = t1.core_busy_ns[c] - t0.core_busy_ns[c];
            sp->busy_sum_ns += sp->busy_ns[c];
        }
    }
    if (!ok)
        fprintf(stderr, "  %s, %u cores: %s\n", dev, cores, ork_error_message());
    ork_npu_matmul_destroy(mm);
    ork_npu_weights_destroy(wt);
    ork_npu_close(npu);
    return ok;
}

static void test_split_overlaps(void)
{
    struct span r, v;
    REQUIRE(measure("sim-rocket", 3, &r));
    fprintf(stderr, "  sim-rocket 3 cores: run %.1f us, busy %.1f + %.1f + %.1f us\n",
            r.elapsed_ns / 1e3, r.busy_ns[0] / 1e3, r.busy_ns[1] / 1e3, r.busy_ns[2] / 1e3);
    for (int c = 0; c < 3; c++)
        CHECK(r.busy_ns[c] > 0);            /* the scheduler used all three cores */
    /* serialised, the run would last the sum of the three; overlapped, about the longest */
    CHECK(r.elapsed_ns * 2 < r.busy_sum_ns);
    int64_t longest = r.busy_ns[0];
    for (int c = 1; c < 3; c++)
        longest = r.busy_ns[c] > longest ? r.busy_ns[c] : longest;
    CHECK(r.elapsed_ns < longest + longest / 2);
    /* the same split on the rknpu model gives the same bits */
    REQUIRE(measure("sim", 3, &v));
}

int main(void)
{
    W = ork_malloc((size_t)N * K);
    if (!W)
        return 1;
    ref_compute();
    RUN(test_split_overlaps);
    ork_free(W);
    return ork_test_done();
}
