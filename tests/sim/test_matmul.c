/* test_matmul.c -- the whole libork matmul path on the simulator: open the sim device, pack
 * weights, plan, run, compare with a CPU reference. int8 must be bit-exact against an integer
 * reference; fp16 must agree within 1e-4 of sum_k |a_k * w_k| per output (fp32 accumulation of
 * exact fp16 products, spec §3.4 step 4; the device's order is unknown, so no bit-exactness).
 *
 * The cases pair the dimensions so that together they cover M in {1, 2, 63, 64, 65, cap,
 * cap+1}, K in {32, 96, 512, 1024, 2048, 3584, 4096, 18944}, N in {32, 512, 3584, 8192, 8224,
 * 18944} and an LM-head N = 151936, while every product stays small (the sim computes on the
 * CPU). The simulator runs in strict mode (separate CPU and device copies of cacheable buffers,
 * so a missing cache sync shows up as wrong data) and must report no hazard warnings: every
 * program follows a validated rule of the spec. */
#include "ork_test.h"

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/npu.h>

#include "libork/ork_priv.h"   /* the device's kmd, to read the simulator's counters */
#include "sim/sim.h"

#include <stdint.h>

static struct ork_npu *npu;
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t next_u32(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

static int8_t rand_i8(void)
{
    return (int8_t)(next_u32() & 0xff);    /* full range, -128 included */
}

static uint16_t rand_f16(void)
{
    float f = ((float)(next_u32() % 20001) - 10000.0f) / 10000.0f;
    return ork_npu_f32_to_f16(f);
}

struct mcase {
    enum ork_npu_dtype dt;
    uint32_t m, k, n;
    uint32_t max_m;        /* weights' max_m (0 = m) */
    uint32_t run_m;        /* rows of the run (0 = m): fewer rows run a task prefix */
    uint32_t flags;
    uint32_t cores;        /* desc.cores: N-split over cores (spec §9) */
};

static bool run_case(const struct mcase *c)
{
    const uint32_t M = c->m, K = c->k, N = c->n;
    const uint32_t rm = c->run_m ? c->run_m : M;
    const size_t esz = c->dt == ORK_NPU_I8 ? 1 : 2;
    void *a = ork_malloc((size_t)M * K * esz);
    void *w = ork_malloc((size_t)N * K * esz);
    void *out = ork_malloc((size_t)M * N * 4);
    bool ok = false;
    struct ork_npu_weights *wt = NULL;
    struct ork_npu_matmul *mm = NULL;
    if (!a || !w || !out)
        goto done;
    for (size_t i = 0; i < (size_t)M * K; i++) {
        if (c->dt == ORK_NPU_I8)
            ((int8_t *)a)[i] = rand_i8();
        else
            ((uint16_t *)a)[i] = rand_f16();
    }
    for (size_t i = 0; i < (size_t)N * K; i++) {
        if (c->dt == ORK_NPU_I8)
            ((int8_t *)w)[i] = rand_i8();
        else
            ((uint16_t *)w)[i] = rand_f16();
    }
    struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = c->dt, .k = K, .n = N,
                                       .w = w, .max_m = c->max_m ? c->max_m : M };
    int ret = ork_npu_weights_create(npu, &wd, &wt);
    if (ret < 0) {
        fprintf(stderr, "  weights: %s\n", ork_error_describe(ret));
        goto done;
    }
    struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = M, .flags = c->flags,
                                      .cores = c->cores };
    ret = ork_npu_matmul_create(wt, &md, &mm);
    if (ret < 0) {
        fprintf(stderr, "  plan: %s\n", ork_error_describe(ret));
        goto done;
    }
    struct ork_npu_matmul_info info;
    ork_npu_matmul_get_info(mm, &info);
    struct ork_sim_counters k0, k1;
    ork__sim_counters(ork__kmd_sim_get(npu->kmd, npu->kctx), &k0);
    ret = c->dt == ORK_NPU_I8 ? ork_npu_matmul_run_i8(mm, a, rm, out)
                              : ork_npu_matmul_run_f16(mm, a, rm, out);
    if (ret < 0) {
        fprintf(stderr, "  run: %s\n", ork_error_describe(ret));
        goto done;
    }
    uint64_t bad = 0;
    double worst = 0;
    ork__sim_counters(ork__kmd_sim_get(npu->kmd, npu->kctx), &k1);
    /* a run of fewer rows executes only the programs of the M-tiles it needs */
    uint64_t want_tasks = (uint64_t)info.n_tasks * ((rm + info.m_tile - 1) / info.m_tile) /
                          ((M + info.m_tile - 1) / info.m_tile);
    if (k1.tasks - k0.tasks != want_tasks) {
        fprintf(stderr, "  executed %llu tasks, expected %llu\n",
                (unsigned long long)(k1.tasks - k0.tasks), (unsigned long long)want_tasks);
        bad++;
    }
    for (uint32_t i = 0; i < rm; i++)
        for (uint32_t j = 0; j < N; j++) {
            if (c->dt == ORK_NPU_I8) {
                int64_t acc = 0;
                const int8_t *ar = (const int8_t *)a + (size_t)i * K;
                const int8_t *wr = (const int8_t *)w + (size_t)j * K;
                for (uint32_t k = 0; k < K; k++)
                    acc += (int32_t)ar[k] * wr[k];
                bad += ((int32_t *)out)[(size_t)i * N + j] != (int32_t)acc;
            } else {
                double acc = 0, mag = 0;
                const uint16_t *ar = (const uint16_t *)a + (size_t)i * K;
                const uint16_t *wr = (const uint16_t *)w + (size_t)j * K;
                for (uint32_t k = 0; k < K; k++) {
                    double p = (double)ork_npu_f16_to_f32(ar[k]) * ork_npu_f16_to_f32(wr[k]);
                    acc += p;
                    mag += p < 0 ? -p : p;
                }
                double err = fabs(((float *)out)[(size_t)i * N + j] - acc);
                double tol = 1e-4 * mag + 1e-6;
                if (err > tol)
                    bad++;
                if (err / (mag + 1e-30) > worst)
                    worst = err / (mag + 1e-30);
            }
        }
    printf("  %s M=%u (run %u) K=%u N=%u: kslices %u nslices %u cores %u m_tile %u tasks %u "
           "submits %u: %s\n", c->dt == ORK_NPU_I8 ? "int8" : "fp16", M, rm, K, N,
           info.n_kslices, info.n_nslices, info.n_cores, info.m_tile, info.n_tasks,
           info.n_submits, bad ? "MISMATCH" : "ok");
    uint32_t want_cores = c->cores;
    if (want_cores > 1 && (info.n_padded / (c->dt == ORK_NPU_I8 ? 32 : 16)) / 2 < want_cores)
        want_cores = 1;     /* spec §9: at least 2 column tiles per core */
    if (want_cores > 1 && info.n_cores != want_cores) {
        fprintf(stderr, "  expected %u cores, plan uses %u\n", want_cores, info.n_cores);
        bad++;
    }
    if (bad)
        fprintf(stderr, "  %llu of %llu outputs differ (worst relative %.3g)\n",
                (unsigned long long)bad, (unsigned long long)rm * N, worst);
    ok = bad == 0;
done:
    ork_npu_matmul_destroy(mm);
    ork_npu_weights_destroy(wt);
    ork_free(a);
    ork_free(w);
    ork_free(out);
    return ok;
}

#define NW ORK_NPU_MATMUL_NO_WARMUP

static void test_int8_cases(void)
{
    static const struct mcase cases[] = {
        { ORK_NPU_I8, 1, 32, 32, 0, 0, 0, 1 },           /* the template shape, with warm-up */
        { ORK_NPU_I8, 2, 96, 512, 0, 0, NW, 1 },         /* K padded to 512 for M > 1 */
        { ORK_NPU_I8, 63, 512, 32, 0, 0, NW, 1 },
        { ORK_NPU_I8, 64, 4096, 32, 0, 0, NW, 1 },       /* cap at K = 4096 (spec §5.3) */
        { ORK_NPU_I8, 65, 4096, 32, 0, 0, NW, 1 },       /* cap + 1: two M-tiles or K-slices */
        { ORK_NPU_I8, 320, 1024, 32, 0, 0, NW, 1 },      /* cap at K = 1024 */
        { ORK_NPU_I8, 321, 1024, 32, 0, 0, NW, 1 },      /* cap + 1 */
        { ORK_NPU_I8, 129, 2048, 32, 0, 0, NW, 1 },      /* cap + 1 at K = 2048 */
        { ORK_NPU_I8, 705, 512, 32, 0, 0, NW, 1 },       /* cap + 1 at K = 512 (704) */
        { ORK_NPU_I8, 1, 18944, 64, 0, 0, NW, 1 },       /* decode K-slices of <= 8192 */
        { ORK_NPU_I8, 3, 18944, 32, 0, 0, NW, 1 },       /* K-slices of the full-K envelope */
        { ORK_NPU_I8, 2, 3584, 512, 0, 0, NW, 1 },
        { ORK_NPU_I8, 1, 2048, 8192, 0, 0, NW, 1 },      /* N at the per-program limit */
        { ORK_NPU_I8, 1, 1024, 8224, 0, 0, NW, 1 },      /* N above it: two N-slices */
        { ORK_NPU_I8, 1, 32, 3584, 0, 0, NW, 1 },
        { ORK_NPU_I8, 1, 96, 18944, 0, 0, NW, 1 },
        { ORK_NPU_I8, 1, 64, 151936, 0, 0, NW, 1 },      /* LM head: 19 N-slices */
        { ORK_NPU_I8, 65, 512, 96, 0, 1, NW, 1 },        /* plan 65 rows, run 1: task prefix */
        { ORK_NPU_I8, 321, 1024, 32, 0, 5, NW, 1 },    /* run 5 rows: one M-tile of two */
        { ORK_NPU_I8, 130, 2048, 64, 0, 0, NW, 2 },    /* 2 columns tiles: clamped to 1 core */
        { ORK_NPU_I8, 1, 100, 40, 8, 0, NW, 1 },         /* ragged K and N, weights for M <= 8 */
        { ORK_NPU_I8, 5, 1000, 33, 0, 0, ORK_NPU_MATMUL_NO_CHAIN | NW, 1 },
        /* multi-core N-split (spec §9): one job, one range per core */
        { ORK_NPU_I8, 1, 1024, 8224, 0, 0, NW, 3 },
        { ORK_NPU_I8, 1, 64, 151936, 0, 0, NW, 3 },
        { ORK_NPU_I8, 4, 512, 96, 0, 0, NW, 3 },       /* 3 tiles: clamped to 1 core (>= 2 tiles each) */
        { ORK_NPU_I8, 2, 96, 100, 0, 0, ORK_NPU_MATMUL_NO_CHAIN | NW, 2 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK(run_case(&cases[i]));
}

static void test_fp16_cases(void)
{
    static const struct mcase cases[] = {
        { ORK_NPU_F16, 1, 32, 16, 0, 0, 0, 1 },
        { ORK_NPU_F16, 4, 32, 16, 0, 0, NW, 1 },         /* the fp16 template shape */
        { ORK_NPU_F16, 2, 96, 512, 0, 0, NW, 1 },
        { ORK_NPU_F16, 63, 512, 32, 0, 0, NW, 1 },
        { ORK_NPU_F16, 65, 1024, 16, 0, 0, NW, 1 },
        { ORK_NPU_F16, 176, 1024, 16, 0, 0, NW, 1 },     /* cap at K = 1024 (spec §5.4) */
        { ORK_NPU_F16, 177, 1024, 16, 0, 0, NW, 1 },     /* cap + 1 */
        { ORK_NPU_F16, 9, 2048, 16, 0, 0, NW, 1 },       /* K = 2048 caps at 8 unsliced */
        { ORK_NPU_F16, 200, 128, 16, 0, 0, NW, 1 },      /* K = 128 schedule (0xb8.., cap 256) */
        { ORK_NPU_F16, 257, 64, 16, 0, 0, NW, 1 },       /* K = 64 unscheduled cap 256, + 1 */
        { ORK_NPU_F16, 353, 512, 16, 0, 0, NW, 1 },      /* cap + 1 at K = 512 (352) */
        { ORK_NPU_F16, 1, 18944, 32, 0, 0, NW, 1 },
        { ORK_NPU_F16, 2, 4096, 64, 0, 0, NW, 1 },
        { ORK_NPU_F16, 1, 3584, 512, 0, 0, NW, 1 },
        { ORK_NPU_F16, 1, 1024, 8192, 0, 0, NW, 1 },
        { ORK_NPU_F16, 1, 512, 8224, 0, 0, NW, 1 },
        { ORK_NPU_F16, 1, 32, 18944, 0, 0, NW, 1 },
        { ORK_NPU_F16, 1, 32, 151936, 0, 0, NW, 1 },
        { ORK_NPU_F16, 3, 100, 40, 0, 0, NW, 1 },        /* ragged K and N */
        { ORK_NPU_F16, 1, 512, 8224, 0, 0, NW, 3 },
        { ORK_NPU_F16, 177, 1024, 96, 0, 0, NW, 3 },
        { ORK_NPU_F16, 257, 64, 96, 0, 0, NW, 3 },     /* M-tiles on each of 3 cores */
        { ORK_NPU_F16, 257, 64, 64, 0, 3, NW, 2 },     /* run 3 rows: a prefix per core */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK(run_case(&cases[i]));
}

static void test_errors(void)
{
    int8_t w[32 * 32] = { 0 };
    struct ork_npu_weights *wt = NULL;
    struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = ORK_NPU_I8, .k = 32,
                                       .n = 32, .w = w, .max_m = 4 };
    REQUIRE(ork_npu_weights_create(npu, &wd, &wt) == 0);
    struct ork_npu_matmul *mm = NULL;
    struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = 5 };
    CHECK(ork_npu_matmul_create(wt, &md, &mm) == ORK_ERANGE);          /* above max_m */
    CHECK(strstr(ork_error_message(), "max_m") != NULL);
    md.m = 4;
    md.flags = NW;
    REQUIRE(ork_npu_matmul_create(wt, &md, &mm) == 0);
    int8_t a[5 * 32] = { 0 };
    int32_t c[5 * 32];
    float cf[5 * 32];
    uint16_t af[4 * 32] = { 0 };
    CHECK(ork_npu_matmul_run_i8(mm, a, 5, c) == ORK_ERANGE);            /* above the plan */
    CHECK(ork_npu_matmul_run_f16(mm, af, 4, cf) == ORK_EINVAL);        /* wrong dtype */
    CHECK(ork_npu_matmul_run_i8(mm, a, 4, c) == 0);
    CHECK(ork_npu_matmul_wait(mm, c) == ORK_EINVAL);                    /* no submit */
    CHECK(ork_npu_matmul_submit(mm, a, 4) == 0);
    CHECK(ork_npu_matmul_submit(mm, a, 4) == ORK_EBUSY);
    CHECK(ork_npu_matmul_wait(mm, c) == 0);
    ork_npu_matmul_destroy(mm);
    ork_npu_weights_destroy(wt);
    wd.k = 0;
    CHECK(ork_npu_weights_create(npu, &wd, &wt) == ORK_EINVAL);
    struct ork_npu_opts o = { .struct_size = sizeof o, .device = "nope" };
    struct ork_npu *bad = NULL;
    CHECK(ork_npu_open(&o, &bad) == ORK_EINVAL);
    CHECK(bad == NULL);
}

/* Float convenience path: quantise rows, run, dequantise; compared with the same arithmetic on
 * the host (exact integer products, then the two scales), and fp16 rounding of X. */
static void test_run_f32(void)
{
    const uint32_t M = 3, K = 200, N = 40;
    float x[3 * 200], wf[40 * 200], y[3 * 40], ref[3 * 40], ws[40], xs[3];
    int8_t wq[40 * 200], xq[3 * 200];
    for (uint32_t i = 0; i < M * K; i++)
        x[i] = sinf(0.37f * (float)i) * 3.0f;
    for (uint32_t i = 0; i < N * K; i++)
        wf[i] = cosf(0.11f * (float)i) * (float)(1 + i % 7);
    REQUIRE(ork_npu_quantize_weights_i8(wf, N, K, wq, ws) == 0);
    struct ork_npu_weights *wt = NULL;
    struct ork_npu_matmul *mm = NULL;
    struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = ORK_NPU_I8, .k = K,
                                       .n = N, .w = wq, .scales = ws, .max_m = M };
    REQUIRE(ork_npu_weights_create(npu, &wd, &wt) == 0);
    struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = M, .flags = NW };
    REQUIRE(ork_npu_matmul_create(wt, &md, &mm) == 0);
    CHECK(ork_npu_matmul_run_f32(mm, x, M, y) == 0);
    REQUIRE(ork_npu_quantize_rows_i8(x, M, K, xq, xs) == 0);
    for (uint32_t i = 0; i < M; i++)
        for (uint32_t j = 0; j < N; j++) {
            int32_t acc = 0;
            for (uint32_t k = 0; k < K; k++)
                acc += xq[i * K + k] * wq[j * K + k];
            ref[i * N + j] = xs[i] * ws[j] * (float)acc;
            CHECK_NEAR(y[i * N + j], ref[i * N + j], 0);
        }
    ork_npu_matmul_destroy(mm);
    ork_npu_weights_destroy(wt);
    /* fp16 weights: X rounded to fp16 */
    uint16_t wh[40 * 200];
    for (uint32_t i = 0; i < N * K; i++)
        wh[i] = ork_npu_f32_to_f16(wf[i] / 8);
    wd.dtype = ORK_NPU_F16;
    wd.w = wh;
    wd.scales = NULL;
    REQUIRE(ork_npu_weights_create(npu, &wd, &wt) == 0);
    REQUIRE(ork_npu_matmul_create(wt, &md, &mm) == 0);
    CHECK(ork_npu_matmul_run_f32(mm, x, M, y) == 0);
    for (uint32_t i = 0; i < M; i++)
        for (uint32_t j = 0; j < N; j++) {
            double acc = 0, mag = 0;
            for (uint32_t k = 0; k < K; k++) {
                double p = (double)ork_npu_f16_to_f32(ork_npu_f32_to_f16(x[i * K + k])) *
                           ork_npu_f16_to_f32(wh[j * K + k]);
                acc += p;
                mag += fabs(p);
            }
            CHECK_NEAR(y[i * N + j], acc, 1e-4 * mag + 1e-6);
        }
    ork_npu_matmul_destroy(mm);
    ork_npu_weights_destroy(wt);
}

static void ref_i8(const int8_t *a, const int8_t *w, uint32_t m, uint32_t k, uint32_t n,
                   int32_t *c)
{
    for (uint32_t i = 0; i < m; i++)
        for (uint32_t j = 0; j < n; j++) {
            int32_t acc = 0;
            for (uint32_t x = 0; x < k; x++)
                acc += (int32_t)a[(size_t)i * k + x] * w[(size_t)j * k + x];
            c[(size_t)i * n + j] = acc;
        }
}

/* Several plans in one submit (spec §8.3): Q/K/V-like projections, a K-sliced plan and an
 * N-sliced one; bit-exact, one submit, and the plans still run on their own afterwards. */
static void test_chain(void)
{
    enum { NP = 5 };
    static const uint32_t shape[NP][3] = {   /* m, k, n */
        { 3, 896, 896 }, { 3, 896, 128 }, { 3, 896, 128 }, { 1, 18944, 64 }, { 2, 64, 8224 },
    };
    struct ork_npu_weights *wt[NP] = { 0 };
    struct ork_npu_matmul *mm[NP] = { 0 };
    int8_t *a[NP] = { 0 }, *w[NP] = { 0 };
    int32_t *c[NP] = { 0 }, *ref[NP] = { 0 };
    struct ork_npu_chain *ch = NULL;
    for (int p = 0; p < NP; p++) {
        uint32_t m = shape[p][0], k = shape[p][1], n = shape[p][2];
        a[p] = ork_malloc((size_t)m * k);
        w[p] = ork_malloc((size_t)n * k);
        c[p] = ork_calloc((size_t)m * n, 4);
        ref[p] = ork_malloc((size_t)m * n * 4);
        REQUIRE(a[p] && w[p] && c[p] && ref[p]);
        for (size_t i = 0; i < (size_t)m * k; i++)
            a[p][i] = rand_i8();
        for (size_t i = 0; i < (size_t)n * k; i++)
            w[p][i] = rand_i8();
        ref_i8(a[p], w[p], m, k, n, ref[p]);
        struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = ORK_NPU_I8,
                                           .k = k, .n = n, .w = w[p], .max_m = m };
        REQUIRE(ork_npu_weights_create(npu, &wd, &wt[p]) == 0);
        struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = m, .flags = NW };
        REQUIRE(ork_npu_matmul_create(wt[p], &md, &mm[p]) == 0);
    }
    REQUIRE(ork_npu_chain_create(mm, NP, &ch) == 0);
    struct ork_sim *sim = ork__kmd_sim_get(npu->kmd, npu->kctx);
    struct ork_sim_counters k0, k1;
    ork__sim_counters(sim, &k0);
    const void *av[NP];
    void *cv[NP];
    uint32_t tasks = 0;
    for (int p = 0; p < NP; p++) {
        av[p] = a[p];
        cv[p] = c[p];
        struct ork_npu_matmul_info info;
        ork_npu_matmul_get_info(mm[p], &info);
        tasks += info.n_tasks;
    }
    CHECK(ork_npu_chain_run(ch, av, cv) == 0);
    ork__sim_counters(sim, &k1);
    CHECK_EQ_INT(k1.submits - k0.submits, 1);
    CHECK_EQ_INT(k1.tasks - k0.tasks, tasks);
    for (int p = 0; p < NP; p++)
        CHECK(memcmp(c[p], ref[p], (size_t)shape[p][0] * shape[p][2] * 4) == 0);
    /* a plan still runs alone, and the chain again */
    memset(c[3], 0, (size_t)shape[3][0] * shape[3][2] * 4);
    CHECK(ork_npu_matmul_run_i8(mm[3], a[3], shape[3][0], c[3]) == 0);
    CHECK(memcmp(c[3], ref[3], (size_t)shape[3][0] * shape[3][2] * 4) == 0);
    memset(c[0], 0, (size_t)shape[0][0] * shape[0][2] * 4);
    CHECK(ork_npu_chain_run(ch, av, cv) == 0);
    CHECK(memcmp(c[0], ref[0], (size_t)shape[0][0] * shape[0][2] * 4) == 0);
    ork_npu_chain_destroy(ch);

    /* refused: a precision change inside the chain, a multi-core plan */
    uint16_t wh[32 * 32] = { 0 };
    struct ork_npu_weights *wf = NULL;
    struct ork_npu_matmul *mf = NULL, *m3 = NULL;
    struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = ORK_NPU_F16, .k = 32,
                                       .n = 32, .w = wh };
    REQUIRE(ork_npu_weights_create(npu, &wd, &wf) == 0);
    struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = 1, .flags = NW };
    REQUIRE(ork_npu_matmul_create(wf, &md, &mf) == 0);
    struct ork_npu_matmul *mixed[2] = { mm[0], mf };
    CHECK(ork_npu_chain_create(mixed, 2, &ch) == ORK_EUNSUPPORTED);
    md.m = 2;
    md.cores = 3;
    REQUIRE(ork_npu_matmul_create(wt[4], &md, &m3) == 0);
    struct ork_npu_matmul *multi[2] = { mm[1], m3 };
    CHECK(ork_npu_chain_create(multi, 2, &ch) == ORK_EUNSUPPORTED);
    ork_npu_matmul_destroy(m3);
    ork_npu_matmul_destroy(mf);
    ork_npu_weights_destroy(wf);
    for (int p = 0; p < NP; p++) {
        ork_npu_matmul_destroy(mm[p]);
        ork_npu_weights_destroy(wt[p]);
        ork_free(a[p]);
        ork_free(w[p]);
        ork_free(c[p]);
        ork_free(ref[p]);
    }
}

/* Every allocation failure on the create paths returns an error (no crash, no leak under
 * ASan) and leaves the device usable. */
static void test_oom(void)
{
    int8_t w[64 * 100];
    for (size_t i = 0; i < sizeof w; i++)
        w[i] = (int8_t)(i * 7);
    struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = ORK_NPU_I8, .k = 100,
                                       .n = 64, .w = w, .max_m = 70 };
    struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = 70, .flags = NW, .cores = 2 };
    int failures = 0, successes = 0;
    for (uint64_t n = 1; n < 200 && successes < 3; n++) {
        struct ork_npu_weights *wt = NULL;
        struct ork_npu_matmul *mm = NULL;
        ork_alloc_fail_after(n);
        int ret = ork_npu_weights_create(npu, &wd, &wt);
        if (ret == 0)
            ret = ork_npu_matmul_create(wt, &md, &mm);
        ork_alloc_fail_after(0);
        if (ret < 0) {
            CHECK(ret == ORK_ENOMEM || ret == ORK_EDEVICE || ret == ORK_EIO);
            failures++;
        } else {
            successes++;
        }
        ork_npu_matmul_destroy(mm);
        ork_npu_weights_destroy(wt);
    }
    CHECK(failures > 0);
    CHECK(successes > 0);
    /* the device still computes correctly */
    struct mcase c = { ORK_NPU_I8, 3, 100, 64, 0, 0, NW, 2 };
    CHECK(run_case(&c));
}

static void test_no_hazards(void)
{
    struct ork_sim *sim = ork__kmd_sim_get(npu->kmd, npu->kctx);
    REQUIRE(sim != NULL);
    struct ork_sim_counters k;
    ork__sim_counters(sim, &k);
    CHECK(k.tasks > 0);
    CHECK_EQ_INT(k.warnings, 0);
    CHECK_EQ_INT(k.missing_sync, 0);
    CHECK_EQ_INT(k.failed_jobs, 0);
}

int main(void)
{
    struct ork_sim_opts so = { .struct_size = sizeof so, .strict = true };
    struct ork_npu_opts o = { .struct_size = sizeof o, .device = "sim", .sim = &so };
    int ret = ork_npu_open(&o, &npu);
    if (ret < 0) {
        fprintf(stderr, "open sim: %s\n", ork_error_describe(ret));
        return 1;
    }
    CHECK_STR(ork_npu_backend(npu), "sim");
    RUN(test_int8_cases);
    RUN(test_fp16_cases);
    RUN(test_errors);
    RUN(test_run_f32);
    RUN(test_chain);
    RUN(test_oom);
    RUN(test_no_hazards);
    ork_npu_close(npu);
    return ork_test_done();
}
