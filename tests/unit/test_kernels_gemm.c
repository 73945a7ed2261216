/* test_kernels_gemm.c -- ORK_ACT_QUANT matmuls through the shared, once-quantized X and the
 * register-tiled kernel (src/kernels/x86/gemm_q8_avx2.c, gemm_q8_avx512.c): on every instruction-set path this CPU can
 * run, every output equals bit for bit the scalar path's output (no pool), over random shapes
 * with ragged M / N and odd block counts, pools of 1..4 threads and no pool; the vectorized
 * Q8_0 / Q8_K activation quantizers equal the scalar ones byte for byte on random values,
 * rounding ties, zeros, equal values and +-FLT_MAX; ork_matmul_act_multi equals one
 * ork_matmul_act per matrix; decode matmuls long enough for many claims and steals of row
 * spans (matmul.c) equal the scalar path too; repeated calls allocate nothing. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork-kernels/kernels.h>
#include <ork-kernels/pool.h>

#include "kernels/kern_priv.h"
#include "ork_test.h"

#define KT_RNG_SEED 0x9e3779b97f4a7c15ull
#include "kernels_test_util.h"

#define MAX_THREADS 4
#define Q8_0_BYTES 34

static struct ork_pool *pools[MAX_THREADS];     /* pools[t]: t + 1 threads */

/* Values that stress the rounding: blocks whose scale is exactly 1 (amax 127) holding exact
 * halves (ties), zero blocks, blocks of one repeated value, +-FLT_MAX, -0, mixed scales. */
static void edge_values(float *x, int64_t n, int variant)
{
    for (int64_t i = 0; i < n; i++) {
        int64_t b = i / 32, e = i % 32;
        switch ((b + variant) % 7) {
        case 0: x[i] = e == 0 ? 127.0f : (float)((int)(rnd() % 253) - 126) + 0.5f; break;
        case 1: x[i] = 0.0f; break;
        case 2: x[i] = -0.0f; break;
        case 3: x[i] = 3.25f; break;
        case 4: x[i] = e % 2 ? FLT_MAX : -FLT_MAX; break;
        case 5: x[i] = frand() * ldexpf(1.0f, (int)(rnd() % 60) - 30); break;
        default: x[i] = e == 5 ? -127.0f : (float)((int)(rnd() % 255) - 127) * 0.5f; break;
        }
    }
}

static void test_quantizers(void)
{
    enum { N = 256 * 6 };
    static float x[N];
    static uint8_t want0[N / 32 * Q8_0_BYTES], got0[N / 32 * Q8_0_BYTES];
    static uint8_t wantk[N / 256 * ORK_Q8_K_BYTES], gotk[N / 256 * ORK_Q8_K_BYTES];
    int paths = 0, bad = 0;
    for (int k = 0; k < KISA_COUNT; k++) {
        if (!ork__kisa_available((enum kisa)k))
            continue;
        paths++;
        for (int trial = 0; trial < 40; trial++) {
            if (trial % 2)
                edge_values(x, N, trial);
            else
                for (int i = 0; i < N; i++)
                    x[i] = frand() * (float)(1 + trial);
            REQUIRE(ork_quantize_row_q8_0(x, want0, N) == 0);      /* scalar (dot.c) */
            memset(got0, 0x5a, sizeof got0);
            ork__quantize_q8_0((enum kisa)k, x, got0, N);
            if (memcmp(want0, got0, sizeof got0) != 0) {
                fprintf(stderr, "%s: Q8_0 quantization differs (trial %d)\n",
                        ork__kisa_name((enum kisa)k), trial);
                bad++;
            }
            ork__quantize_q8_k(KISA_SCALAR, x, wantk, N);
            memset(gotk, 0x5a, sizeof gotk);
            ork__quantize_q8_k((enum kisa)k, x, gotk, N);
            if (memcmp(wantk, gotk, sizeof gotk) != 0) {
                fprintf(stderr, "%s: Q8_K quantization differs (trial %d)\n",
                        ork__kisa_name((enum kisa)k), trial);
                bad++;
            }
        }
    }
    CHECK(paths >= 1);
    CHECK_EQ_INT(bad, 0);
    /* the tie blocks really are ties: x * (1 / d) = n + 0.5 with d = 1 */
    edge_values(x, 64, 0);
    REQUIRE(ork_quantize_row_q8_0(x, want0, 64) == 0);
    CHECK_EQ_INT(want0[0] | want0[1] << 8, ork_f32_to_fp16(1.0f));
    CHECK_EQ_INT((int8_t)want0[3], (int)roundf(x[1]));
    CHECK(fabsf(x[1] - truncf(x[1])) == 0.5f);
}

struct shape {
    uint32_t type;
    int64_t m, n, k;
};

/* Y of every path and pool equal to the scalar path's Y without a pool. */
static void check_shape(const struct shape *s)
{
    size_t rb = ork_type_row_bytes(s->type, (uint64_t)s->k);
    uint8_t *w = ork_malloc(rb * (size_t)s->n);
    float *x = ork_malloc(sizeof(float) * (size_t)(s->m * s->k));
    float *want = ork_malloc(sizeof(float) * (size_t)(s->m * s->n));
    float *y = ork_malloc(sizeof(float) * (size_t)(s->m * s->n));
    REQUIRE(w && x && want && y);
    for (int64_t r = 0; r < s->n; r++)
        kt_random_row(s->type, w + r * rb, s->k);
    for (int64_t i = 0; i < s->m * s->k; i++)
        x[i] = frand() * (float)(1 + i % 7);
    struct ork_mat mat = { .type = s->type, .n_rows = s->n, .n_cols = s->k, .row_bytes = rb,
                           .data = w };
    REQUIRE(ork_kernels_set_path("scalar") == 0);
    REQUIRE(ork_matmul_act(NULL, &mat, x, s->m, want, ORK_ACT_QUANT) == 0);
    int differ = 0;
    for (int i = 0; ork_kernels_path_name(i); i++) {
        if (ork_kernels_set_path(ork_kernels_path_name(i)) != 0)
            continue;
        for (int pi = -1; pi < MAX_THREADS; pi++) {
            memset(y, 0xff, sizeof(float) * (size_t)(s->m * s->n));
            REQUIRE(ork_matmul_act(pi < 0 ? NULL : pools[pi], &mat, x, s->m, y, ORK_ACT_QUANT)
                    == 0);
            int d = 0;
            for (int64_t e = 0; e < s->m * s->n; e++)
                d += memcmp(&want[e], &y[e], 4) != 0;
            if (d)
                fprintf(stderr, "%s %s M=%lld N=%lld K=%lld threads %d: %d outputs differ\n",
                        ork_kernels_path_name(i), ork_type_name(s->type), (long long)s->m,
                        (long long)s->n, (long long)s->k, pi + 1, d);
            differ += d;
        }
    }
    REQUIRE(ork_kernels_set_path(NULL) == 0);
    CHECK_EQ_INT(differ, 0);
    ork_free(w);
    ork_free(x);
    ork_free(want);
    ork_free(y);
}

static void test_paths_shapes(void)
{
    /* fixed corners: one row, odd blocks, X larger than the L2 / stack tiles */
    const struct shape fixed[] = {
        { ORK_TYPE_Q8_0, 1, 5, 32 },     { ORK_TYPE_Q4_0, 2, 1, 32 },
        { ORK_TYPE_Q8_0, 70, 9, 2080 },  { ORK_TYPE_Q4_0, 67, 13, 2048 },
        { ORK_TYPE_Q8_0, 5, 4, 96 },     { ORK_TYPE_Q4_K, 19, 7, 512 },
        { ORK_TYPE_Q6_K, 9, 5, 768 },    { ORK_TYPE_Q8_0, 130, 6, 4096 },
        /* decode kernels: X prepared in several chunks, odd block count */
        { ORK_TYPE_Q8_0, 1, 7, 8288 },   { ORK_TYPE_Q4_0, 1, 6, 8288 },
        { ORK_TYPE_Q4_0, 1, 9, 16416 },
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        check_shape(&fixed[i]);
    for (int trial = 0; trial < 24; trial++) {
        struct shape s = {
            .type = trial % 2 ? ORK_TYPE_Q4_0 : ORK_TYPE_Q8_0,
            .m = 1 + (int64_t)(rnd() % 23),
            .n = 1 + (int64_t)(rnd() % 19),
            .k = 32 * (1 + (int64_t)(rnd() % 40)),
        };
        check_shape(&s);
    }
}

/* Random weight matrices of the given types and row counts, K columns, with outputs of
 * m_out X rows each (ys, want). */
#define MATS_MAX 8
struct mats {
    int n;
    uint8_t *wd[MATS_MAX];
    struct ork_mat m[MATS_MAX];
    const struct ork_mat *p[MATS_MAX];
    float *ys[MATS_MAX], *want[MATS_MAX];
};

static void mats_make(struct mats *s, int n, const uint32_t *types, const int64_t *ns, int64_t k,
                      int64_t m_out)
{
    REQUIRE(n <= MATS_MAX);
    s->n = n;
    for (int q = 0; q < n; q++) {
        size_t rb = ork_type_row_bytes(types[q], (uint64_t)k);
        s->wd[q] = ork_malloc(rb * (size_t)ns[q]);
        s->ys[q] = ork_malloc(sizeof(float) * (size_t)(m_out * ns[q]));
        s->want[q] = ork_malloc(sizeof(float) * (size_t)(m_out * ns[q]));
        REQUIRE(s->wd[q] && s->ys[q] && s->want[q]);
        for (int64_t r = 0; r < ns[q]; r++)
            kt_random_row(types[q], s->wd[q] + r * rb, k);
        s->m[q] = (struct ork_mat){ .type = types[q], .n_rows = ns[q], .n_cols = k,
                                    .row_bytes = rb, .data = s->wd[q] };
        s->p[q] = &s->m[q];
    }
}

static void mats_free(struct mats *s)
{
    for (int q = 0; q < s->n; q++) {
        ork_free(s->wd[q]);
        ork_free(s->ys[q]);
        ork_free(s->want[q]);
    }
}

/* ork_matmul_act_multi: each output equal to ork_matmul_act on its matrix alone. */
static void test_multi(void)
{
    enum { K = 352, M = 11, NW = 4 };
    const uint32_t types[NW] = { ORK_TYPE_Q8_0, ORK_TYPE_Q8_0, ORK_TYPE_Q4_0, ORK_TYPE_Q8_0 };
    const int64_t ns[NW] = { 13, 6, 9, 1 };
    static float x[M * K];
    for (int i = 0; i < M * K; i++)
        x[i] = frand();
    struct mats ms;
    mats_make(&ms, NW, types, ns, K, M);
    const struct ork_mat *const *mp = ms.p;
    float *const *ys = ms.ys, *const *want = ms.want;
    const struct ork_mat *mats = ms.m;
    int differ = 0;
    for (int i = 0; ork_kernels_path_name(i); i++) {
        if (ork_kernels_set_path(ork_kernels_path_name(i)) != 0)
            continue;
        for (int pi = -1; pi < MAX_THREADS; pi++) {
            struct ork_pool *pool = pi < 0 ? NULL : pools[pi];
            for (int64_t m = 1; m <= M; m += 5) {
                for (int q = 0; q < NW; q++) {
                    REQUIRE(ork_matmul_act(pool, mp[q], x, m, want[q], ORK_ACT_QUANT) == 0);
                    memset(ys[q], 0xff, sizeof(float) * (size_t)(M * ns[q]));
                }
                /* all four (mixed Q8_0 / Q4_0), then the first two alone */
                REQUIRE(ork_matmul_act_multi(pool, mp, NW, x, m, ys, ORK_ACT_QUANT) == 0);
                for (int q = 0; q < NW; q++)
                    differ += memcmp(ys[q], want[q], sizeof(float) * (size_t)(m * ns[q])) != 0;
                REQUIRE(ork_matmul_act_multi(pool, mp, 2, x, m, ys, ORK_ACT_F32) == 0);
                for (int q = 0; q < 2; q++) {
                    REQUIRE(ork_matmul_act(pool, mp[q], x, m, want[q], ORK_ACT_F32) == 0);
                    differ += memcmp(ys[q], want[q], sizeof(float) * (size_t)(m * ns[q])) != 0;
                }
            }
        }
    }
    REQUIRE(ork_kernels_set_path(NULL) == 0);
    CHECK_EQ_INT(differ, 0);
    /* argument errors */
    struct ork_mat bad = mats[1];
    bad.n_cols = K - 32;
    const struct ork_mat *mix[2] = { &mats[0], &bad };
    CHECK_EQ_INT(ork_matmul_act_multi(pools[1], mix, 2, x, 1, ys, ORK_ACT_QUANT), ORK_EINVAL);
    CHECK_EQ_INT(ork_matmul_act_multi(pools[1], mp, 0, x, 1, ys, ORK_ACT_QUANT), ORK_EINVAL);
    float *ynull[2] = { ys[0], NULL };
    CHECK_EQ_INT(ork_matmul_act_multi(pools[1], mp, 2, x, 1, ynull, ORK_ACT_QUANT), ORK_EINVAL);
    mats_free(&ms);
}

/* Decode (M = 1) over rows long enough that every thread claims many times and steals at the
 * end (matmul.c spans, a claim is ~64 KiB of a stream): Q8_0 / Q4_0 matrices end to end, whose
 * claims stop at the matrix boundaries, and Q4_K / Q6_K through the one-row kernels; more
 * threads than cores in the larger pools make descheduled owners and thieves common. Every
 * output bit equal to the scalar path's. */
static void test_decode_spans(void)
{
    enum { K = 8192, NW = 5 };
    const uint32_t types[NW] = { ORK_TYPE_Q8_0, ORK_TYPE_Q4_0, ORK_TYPE_Q8_0, ORK_TYPE_Q4_K,
                                 ORK_TYPE_Q6_K };
    const int64_t ns[NW] = { 61, 37, 90, 150, 77 };
    static float x[K];
    for (int i = 0; i < K; i++)
        x[i] = frand() * (float)(1 + i % 5);
    struct mats ms;
    mats_make(&ms, NW, types, ns, K, 1);
    const struct ork_mat *const *mp = ms.p;
    float *const *ys = ms.ys, *const *want = ms.want;
    REQUIRE(ork_kernels_set_path("scalar") == 0);
    for (int q = 0; q < NW; q++)
        REQUIRE(ork_matmul_act(NULL, mp[q], x, 1, want[q], ORK_ACT_QUANT) == 0);
    int differ = 0, runs = 0;
    for (int i = 0; ork_kernels_path_name(i); i++) {
        if (ork_kernels_set_path(ork_kernels_path_name(i)) != 0)
            continue;
        for (int pi = 1; pi < MAX_THREADS; pi++) {
            if (!pools[pi])
                continue;
            for (int rep = 0; rep < 8; rep++, runs++) {
                for (int q = 0; q < NW; q++)
                    memset(ys[q], 0xff, sizeof(float) * (size_t)ns[q]);
                /* the three Q8_0 / Q4_0 matrices as one, the K-quants one by one */
                REQUIRE(ork_matmul_act_multi(pools[pi], mp, 3, x, 1, ys, ORK_ACT_QUANT) == 0);
                REQUIRE(ork_matmul_act(pools[pi], mp[3], x, 1, ys[3], ORK_ACT_QUANT) == 0);
                REQUIRE(ork_matmul_act(pools[pi], mp[4], x, 1, ys[4], ORK_ACT_QUANT) == 0);
                for (int q = 0; q < NW; q++) {
                    int d = memcmp(ys[q], want[q], sizeof(float) * (size_t)ns[q]) != 0;
                    if (d)
                        fprintf(stderr, "%s %s decode, %d threads: outputs differ\n",
                                ork_kernels_path_name(i), ork_type_name(types[q]), pi + 1);
                    differ += d;
                }
            }
        }
    }
    REQUIRE(ork_kernels_set_path(NULL) == 0);
    CHECK(runs > 0);
    CHECK_EQ_INT(differ, 0);
    mats_free(&ms);
}

/* Once the pool scratch has grown, repeated calls (prefill-sized and decode-sized) allocate
 * nothing. */
static void test_no_alloc(void)
{
    enum { K = 1024, N = 64, M = 40 };
    size_t rb = ork_type_row_bytes(ORK_TYPE_Q8_0, K);
    uint8_t *w = ork_malloc(rb * N);
    float *x = ork_malloc(sizeof(float) * M * K), *y = ork_malloc(sizeof(float) * M * N);
    REQUIRE(w && x && y);
    for (int r = 0; r < N; r++)
        kt_random_row(ORK_TYPE_Q8_0, w + r * rb, K);
    for (int i = 0; i < M * K; i++)
        x[i] = frand();
    struct ork_mat mat = { .type = ORK_TYPE_Q8_0, .n_rows = N, .n_cols = K, .row_bytes = rb,
                           .data = w };
    REQUIRE(ork_matmul_act(pools[1], &mat, x, M, y, ORK_ACT_QUANT) == 0);
    uint64_t a0 = ork_alloc_count();
    for (int rep = 0; rep < 5; rep++) {
        REQUIRE(ork_matmul_act(pools[1], &mat, x, M, y, ORK_ACT_QUANT) == 0);
        REQUIRE(ork_matmul_act(pools[1], &mat, x, 1, y, ORK_ACT_QUANT) == 0);
    }
    CHECK_EQ_INT((int)(ork_alloc_count() - a0), 0);
    ork_free(w);
    ork_free(x);
    ork_free(y);
}

int main(void)
{
    if (kt_pools_create(pools, MAX_THREADS) < 0)
        return 1;
    RUN(test_quantizers);
    RUN(test_paths_shapes);
    RUN(test_multi);
    if (pools[1])
        RUN(test_decode_spans);
    if (pools[1])
        RUN(test_no_alloc);
    kt_pools_destroy(pools, MAX_THREADS);
    return ork_test_done();
}
