/* test_dcomp_timing.c -- the simulator's timing model on compressed weights (sim_timing.c):
 * a DCOMP task charges its stream's bytes to DRAM instead of K*N, and its weight time is the
 * larger of that DRAM time and K*N / the decompressor's rate (npu_dcomp_gbps per core, a guess,
 * npu-weight-decompression.md §5 (a)). So compressed weights move fewer bytes; with a fast
 * decompressor a DRAM-bound M = 1 matmul gets faster by the compression; a slow one makes the
 * same run slower; the rate comes from the twin table (calibration) unless
 * ork_sim_opts.dcomp_gbps overrides it. Timing-only devices (no arithmetic). */
#include "ork_test.h"

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/npu.h>
#include <ork/sim.h>
#include <ork/twin.h>

#include "libork/ork_priv.h"
#include "sim/sim.h"

#include <stdint.h>
#include <string.h>

#define K 4096u
#define N 4096u

static int8_t *w, *a;
static int32_t *c;

struct run_cost {
    uint64_t weight_bytes, dcomp_bytes, dcomp_tasks;
    double busy_ns;              /* modelled busy time over all cores */
};

/* One M = 1 run of K x N on a fresh timing-only device; dcomp_gbps / twin as given. */
static bool run_once(uint32_t enc, double dcomp_gbps, const struct ork_twin_consts *tc,
                     uint32_t cores, struct run_cost *out)
{
    struct ork_sim_opts so = { .struct_size = sizeof so, .timing = ORK_SIM_TIMING_ONLY,
                               .dcomp_gbps = dcomp_gbps, .twin = tc };
    struct ork_npu_opts o = { .struct_size = sizeof o, .device = "sim", .sim = &so };
    struct ork_npu *npu = NULL;
    struct ork_npu_weights *wt = NULL;
    struct ork_npu_matmul *mm = NULL;
    bool ok = false;
    struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = ORK_NPU_I8, .k = K,
                                       .n = N, .w = w, .encoding = enc, .grid_max_abs = 7 };
    struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = 1, .cores = cores,
                                      .flags = ORK_NPU_MATMUL_NO_WARMUP };
    if (ork_npu_open(&o, &npu) < 0 || ork_npu_weights_create(npu, &wd, &wt) < 0 ||
        ork_npu_matmul_create(wt, &md, &mm) < 0) {
        fprintf(stderr, "  setup: %s\n", ork_error_message());
        goto done;
    }
    struct ork_sim *sim = ork__kmd_sim_get(npu->kmd, npu->kctx);
    struct ork_sim_counters c0, c1;
    ork__sim_counters(sim, &c0);
    if (ork_npu_matmul_run_i8(mm, a, 1, c) < 0)
        goto done;
    ork__sim_counters(sim, &c1);
    out->weight_bytes = c1.weight_bytes - c0.weight_bytes;
    out->dcomp_bytes = c1.dcomp_bytes - c0.dcomp_bytes;
    out->dcomp_tasks = c1.dcomp_tasks - c0.dcomp_tasks;
    out->busy_ns = 0;
    for (int i = 0; i < 3; i++)
        out->busy_ns += (double)(c1.busy_ns[i] - c0.busy_ns[i]);
    printf("  %s, %u core(s), dcomp %.1f GB/s: %llu weight bytes, %llu decompressed, %.1f us "
           "busy (modelled)\n", enc ? "dcomp" : "raw", cores, dcomp_gbps,
           (unsigned long long)out->weight_bytes, (unsigned long long)out->dcomp_bytes,
           out->busy_ns / 1e3);
    ok = true;
done:
    ork_npu_matmul_destroy(mm);
    ork_npu_weights_destroy(wt);
    ork_npu_close(npu);
    return ok;
}

static void test_dram_bytes(void)
{
    struct run_cost raw, dc;
    REQUIRE(run_once(ORK_NPU_WEIGHTS_RAW, 0, NULL, 3, &raw));
    REQUIRE(run_once(ORK_NPU_WEIGHTS_DCOMP, 0, NULL, 3, &dc));
    CHECK_EQ_INT(raw.weight_bytes, (uint64_t)K * N);
    CHECK_EQ_INT(raw.dcomp_tasks, 0);
    CHECK_EQ_INT(dc.dcomp_tasks, 3);
    CHECK_EQ_INT(dc.dcomp_bytes, (uint64_t)K * N);
    CHECK(dc.weight_bytes * 10 < raw.weight_bytes * 6);      /* L = 7 codes: < 0.6 of raw */
    /* the default rate is the raw weight DMA's own (npu_bw_core, a guess): never slower than
     * raw, and faster once the cores share DRAM below that rate */
    CHECK(dc.busy_ns <= raw.busy_ns + 1.0);
    struct run_cost fast;
    REQUIRE(run_once(ORK_NPU_WEIGHTS_DCOMP, 1000.0, NULL, 3, &fast));
    CHECK(fast.busy_ns < raw.busy_ns * 0.7);
}

static void test_decompressor_rate(void)
{
    struct run_cost raw, fast, slow;
    REQUIRE(run_once(ORK_NPU_WEIGHTS_RAW, 0, NULL, 1, &raw));
    REQUIRE(run_once(ORK_NPU_WEIGHTS_DCOMP, 1000.0, NULL, 1, &fast));
    REQUIRE(run_once(ORK_NPU_WEIGHTS_DCOMP, 2.0, NULL, 1, &slow));
    /* a decompressor that never limits: the DRAM bytes decide (M = 1 is DRAM-bound) */
    CHECK(fast.busy_ns < raw.busy_ns * 0.7);
    /* a slow one: K*N / 2 GB/s dominates, slower than raw */
    CHECK(slow.busy_ns > raw.busy_ns * 2);
    CHECK_NEAR(slow.busy_ns, (double)K * N / 2.0 + 55000.0, 0.05 * slow.busy_ns);
    /* the calibration table sets the rate; ork_sim_opts.dcomp_gbps overrides it */
    struct ork_twin_consts tc;
    ork_twin_consts_default(&tc);
    tc.npu_dcomp_gbps = 2.0;
    struct run_cost cal, over;
    REQUIRE(run_once(ORK_NPU_WEIGHTS_DCOMP, 0, &tc, 1, &cal));
    REQUIRE(run_once(ORK_NPU_WEIGHTS_DCOMP, 1000.0, &tc, 1, &over));
    CHECK_NEAR(cal.busy_ns, slow.busy_ns, 1.0);
    CHECK_NEAR(over.busy_ns, fast.busy_ns, 1.0);
    /* a bad override fails the open, naming it */
    struct ork_sim_opts so = { .struct_size = sizeof so, .dcomp_gbps = -1 };
    struct ork_npu_opts o = { .struct_size = sizeof o, .device = "sim", .sim = &so };
    struct ork_npu *npu = NULL;
    CHECK(ork_npu_open(&o, &npu) == ORK_ERANGE);
    CHECK(strstr(ork_error_message(), "dcomp_gbps") != NULL);
}

/* The sweep docs/bench-log/2026-12-dcomp.md reports (modelled times): M = 1, 4096 x 4096 on
 * L = 7 codes, 1 and 3 cores, the decompressor from 2 to 1000 GB/s per core. A slower
 * decompressor is never faster. */
static void test_rate_sweep(void)
{
    static const double rates[] = { 1000.0, 22.0, 11.0, 5.5, 2.0 };
    for (uint32_t cores = 1; cores <= 3; cores += 2) {
        struct run_cost raw, dc;
        REQUIRE(run_once(ORK_NPU_WEIGHTS_RAW, 0, NULL, cores, &raw));
        double last = 0;
        for (size_t i = 0; i < sizeof rates / sizeof rates[0]; i++) {
            REQUIRE(run_once(ORK_NPU_WEIGHTS_DCOMP, rates[i], NULL, cores, &dc));
            printf("  sweep: %u core(s), %6.1f GB/s: dcomp %.1f us vs raw %.1f us (%.2fx)\n",
                   cores, rates[i], dc.busy_ns / cores / 1e3, raw.busy_ns / cores / 1e3,
                   raw.busy_ns / dc.busy_ns);
            CHECK(dc.busy_ns >= last);
            last = dc.busy_ns;
        }
    }
}

int main(void)
{
    w = ork_malloc((size_t)N * K);
    a = ork_malloc(K);
    c = ork_malloc((size_t)N * 4);
    if (!w || !a || !c)
        return 1;
    uint64_t r = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < (size_t)N * K; i++) {
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        int v = (int)((r >> 20) % 5) + (int)((r >> 40) % 5) - 4;      /* [-4, 4] on L = 7 */
        w[i] = (int8_t)v;
    }
    memset(a, 1, K);
    RUN(test_dram_bytes);
    RUN(test_decompressor_rate);
    RUN(test_rate_sweep);
    ork_free(w);
    ork_free(a);
    ork_free(c);
    return ork_test_done();
}
