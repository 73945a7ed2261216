/* test_kernels_act.c -- ORK_ACT_QUANT: Q8_0 quantization of activations (range, rounding,
 * scale), the Q8_0/Q4_0 x Q8_0 block dot against a double-precision sum decoded independently
 * from the blocks, the F16/BF16 rounding of x, and ork_matmul_act equal bit for bit to
 * ork_vec_dot_act for every output over thread counts, M tiles and over-long rows. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork-kernels/kernels.h>
#include <ork-kernels/pool.h>

#include "ork_test.h"

#define KT_RNG_SEED 0x3c6ef372fe94f82bull
#include "kernels_test_util.h"

static double half_value(const uint8_t *p)
{
    uint16_t h = (uint16_t)(p[0] | p[1] << 8);
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v = e ? ldexp((double)(1024 + m), e - 25) : ldexp((double)m, -24);
    return s ? -v : v;
}

static void test_quantize_q8_0(void)
{
    enum { NB = 40 };
    float x[NB * 32];
    uint8_t q[NB * 34];
    for (int i = 0; i < NB * 32; i++)
        x[i] = frand() * (float)(1 + i / 32);
    memset(x + 5 * 32, 0, 32 * sizeof(float));          /* an all-zero block */
    REQUIRE(ork_quantize_row_q8_0(x, q, NB * 32) == 0);
    int bad = 0;
    for (int b = 0; b < NB; b++) {
        double amax = 0;
        int imax = 0;
        for (int i = 0; i < 32; i++)
            if (fabs(x[b * 32 + i]) > amax) {
                amax = fabs(x[b * 32 + i]);
                imax = i;
            }
        const uint8_t *blk = q + b * 34;
        const int8_t *qs = (const int8_t *)(blk + 2);
        uint16_t dh = (uint16_t)(blk[0] | blk[1] << 8);
        CHECK_EQ_INT(dh, ork_f32_to_fp16((float)amax / 127.0f));
        if (amax == 0) {
            for (int i = 0; i < 32; i++)
                bad += qs[i] != 0;
            continue;
        }
        bad += abs(qs[imax]) != 127;
        double d = amax / 127.0;
        for (int i = 0; i < 32; i++) {
            bad += qs[i] < -127;
            bad += fabs(qs[i] - x[b * 32 + i] / d) > 0.5 + 1e-4;
        }
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(ork_quantize_row_q8_0(x, q, 33), ORK_EINVAL);
}

/* Double-precision sum of d_w * d_x * q_w * q_x decoded from the blocks by hand. */
static double q8_dot_double(uint32_t type, const uint8_t *w, const uint8_t *xq, int64_t n, double *mag)
{
    double s = 0;
    *mag = 0;
    for (int64_t b = 0; b < n / 32; b++) {
        const uint8_t *xb = xq + b * 34;
        double dx = half_value(xb);
        for (int i = 0; i < 32; i++) {
            double qw, dw;
            if (type == ORK_TYPE_Q8_0) {
                dw = half_value(w + b * 34);
                qw = (int8_t)w[b * 34 + 2 + i];
            } else {
                dw = half_value(w + b * 18);
                uint8_t byte = w[b * 18 + 2 + (i % 16)];
                qw = (i < 16 ? (byte & 15) : (byte >> 4)) - 8;
            }
            double t = dw * qw * dx * (int8_t)xb[2 + i];
            s += t;
            *mag += fabs(t);
        }
    }
    return s;
}

static void test_q8_dot(void)
{
    enum { N = 2048 };
    static uint8_t w[N / 32 * 34], xq[N / 32 * 34];
    static float x[N];
    const uint32_t types[] = {ORK_TYPE_Q8_0, ORK_TYPE_Q4_0};
    for (int ti = 0; ti < 2; ti++) {
        for (int trial = 0; trial < 5; trial++) {
            kt_random_row(types[ti], w, N);
            for (int i = 0; i < N; i++)
                x[i] = frand();
            REQUIRE(ork_quantize_row_q8_0(x, xq, N) == 0);
            double mag, want = q8_dot_double(types[ti], w, xq, N, &mag);
            float got = ork_vec_dot_q8(types[ti], w, xq, N);
            CHECK(fabs(got - want) <= 1e-6 * mag);
            /* and the one-call form quantizes x the same way */
            float act = ork_vec_dot_act(types[ti], w, x, N, ORK_ACT_QUANT);
            CHECK(memcmp(&act, &got, 4) == 0);
            /* close to the f32-activation dot (Q8_0 activations: ~0.4% per element) */
            float f = ork_vec_dot(types[ti], w, x, N);
            CHECK(fabs(act - f) <= 2e-2 * mag);
        }
    }
    CHECK(isnan(ork_vec_dot_q8(ORK_TYPE_Q4_K, w, xq, 256)));
}

/* The documented order (kern_priv.h, qdot.c), re-implemented here: per block b the exact
 * integer partials p_j over elements 4j..4j+3, d = d_w * d_x, lane 8 * (b % 2) + j
 * accumulated with fmaf, then the reduction tree. Every dispatched path must give these bits
 * exactly, including extreme values (-128 weights, +-127 activations). */
static float q8_dot_spec(uint32_t type, const uint8_t *w, const uint8_t *xq, int64_t n)
{
    float l[16] = {0};
    size_t wb = type == ORK_TYPE_Q8_0 ? 34 : 18;
    for (int64_t b = 0; b < n / 32; b++) {
        const uint8_t *wp = w + b * wb, *xp = xq + b * 34;
        float dw = ork_fp16_to_f32((uint16_t)(wp[0] | wp[1] << 8));
        float dx = ork_fp16_to_f32((uint16_t)(xp[0] | xp[1] << 8));
        float d = dw * dx;
        for (int j = 0; j < 8; j++) {
            int32_t p = 0;
            for (int i = 4 * j; i < 4 * j + 4; i++) {
                int qw = type == ORK_TYPE_Q8_0 ? (int8_t)wp[2 + i]
                                               : (i < 16 ? (wp[2 + i] & 15) : (wp[2 + i - 16] >> 4)) - 8;
                p += qw * (int8_t)xp[2 + i];
            }
            l[8 * (b % 2) + j] = fmaf((float)p, d, l[8 * (b % 2) + j]);
        }
    }
    float r8[8], r4[4];
    for (int j = 0; j < 8; j++)
        r8[j] = l[j] + l[j + 8];
    for (int j = 0; j < 4; j++)
        r4[j] = r8[j] + r8[j + 4];
    return (r4[0] + r4[2]) + (r4[1] + r4[3]);
}

static void test_q8_dot_exact(void)
{
    enum { N = 1024 + 96 };      /* an odd number of blocks: the last one has no partner */
    static uint8_t w[N / 32 * 34], xq[N / 32 * 34];
    static float x[N];
    const uint32_t types[] = {ORK_TYPE_Q8_0, ORK_TYPE_Q4_0};
    printf("dispatched path: %s\n", ork_kernels_path());
    for (int ti = 0; ti < 2; ti++)
        for (int trial = 0; trial < 6; trial++) {
            kt_random_row(types[ti], w, N);
            for (int i = 0; i < N; i++)
                x[i] = trial == 0 ? (i & 1 ? 1.0f : -1.0f) : frand();   /* +-127 everywhere */
            REQUIRE(ork_quantize_row_q8_0(x, xq, N) == 0);
            if (trial == 1 && types[ti] == ORK_TYPE_Q8_0)
                for (int b = 0; b < N / 32; b++)
                    memset(w + b * 34 + 2, 0x80, 32);                  /* all -128 */
            float want = q8_dot_spec(types[ti], w, xq, N);
            float got = ork_vec_dot_q8(types[ti], w, xq, N);
            if (memcmp(&want, &got, 4) != 0)
                fprintf(stderr, "%s trial %d: %.9g vs %.9g\n", ork_type_name(types[ti]), trial,
                        got, want);
            CHECK(memcmp(&want, &got, 4) == 0);
        }
}

static void test_round16_dot(void)
{
    enum { N = 1500 };
    static uint8_t w[N * 2];
    static float x[N], wf[N], xr[N];
    const uint32_t types[] = {ORK_TYPE_F16, ORK_TYPE_BF16};
    for (int ti = 0; ti < 2; ti++) {
        kt_random_row(types[ti], w, N);
        for (int i = 0; i < N; i++) {
            x[i] = frand();
            xr[i] = types[ti] == ORK_TYPE_F16 ? ork_fp16_to_f32(ork_f32_to_fp16(x[i]))
                                               : ork_bf16_to_f32(ork_f32_to_bf16(x[i]));
        }
        REQUIRE(ork_dequant_row_ref(types[ti], w, wf, N) == 0);
        float want = ork_vec_dot_f32(wf, xr, N);
        float got = ork_vec_dot_act(types[ti], w, x, N, ORK_ACT_QUANT);
        CHECK(memcmp(&want, &got, 4) == 0);
        float f32act = ork_vec_dot_act(types[ti], w, x, N, ORK_ACT_F32);
        float plain = ork_vec_dot(types[ti], w, x, N);
        CHECK(memcmp(&f32act, &plain, 4) == 0);
    }
}

/* Rounding of x at the edges (ties, subnormals, overflow, inf, NaN) on the dispatched path: a
 * one-hot weight row picks one rounded x out of the dot, which must be the scalar rounding. */
static void test_round16_edges(void)
{
    enum { N = 96 };
    static uint8_t w[N * 2];
    static float x[N];
    float specials[] = {
        0x1p-25f, 0x1.8p-25f, 3e-8f, 6e-8f, 1e-6f, -1.5e-7f, 6.1e-5f, 65504.0f, 65519.0f,
        65520.0f, 70000.0f, 1.0f + 0x1p-11f, 1.0f + 0x1.8p-10f, 1.0f + 0x1p-8f,
        1.0f + 0x1.8p-7f, 3.4e38f, 1e-40f, -2.5f, INFINITY, -INFINITY, NAN, 0, 0,
    };
    const uint32_t snan[2] = {0x7f800001u, 0xff800100u};    /* signaling NaNs: must stay NaN */
    memcpy(&specials[21], &snan[0], 4);
    memcpy(&specials[22], &snan[1], 4);
    const uint32_t types[] = {ORK_TYPE_F16, ORK_TYPE_BF16};
    int bad = 0;
    for (int ti = 0; ti < 2; ti++)
        for (size_t si = 0; si < sizeof specials / sizeof specials[0]; si++)
            for (int pos = 0; pos < N; pos += 37) {     /* in the lanes and in the tail */
                memset(w, 0, sizeof w);
                memset(x, 0, sizeof x);
                uint16_t one = types[ti] == ORK_TYPE_F16 ? ork_f32_to_fp16(1.0f)
                                                         : ork_f32_to_bf16(1.0f);
                w[2 * pos] = (uint8_t)one;
                w[2 * pos + 1] = (uint8_t)(one >> 8);
                x[pos] = specials[si];
                float want = types[ti] == ORK_TYPE_F16
                                 ? ork_fp16_to_f32(ork_f32_to_fp16(specials[si]))
                                 : ork_bf16_to_f32(ork_f32_to_bf16(specials[si]));
                float got = ork_vec_dot_act(types[ti], w, x, N, ORK_ACT_QUANT);
                if (!(want == got || (isnan(want) && isnan(got)))) {
                    fprintf(stderr, "%s x=%a at %d: %a, scalar rounding %a\n",
                            ork_type_name(types[ti]), specials[si], pos, got, want);
                    bad++;
                }
            }
    CHECK_EQ_INT(bad, 0);
}

/* F32 weights keep f32 activations: identical bits in both modes. Q4_K / Q6_K weights take
 * Q8_K activations in ORK_ACT_QUANT mode: equal to the explicit two-step form, and close to
 * the f32-activation dot. */
static void test_f32_act_types_unchanged(void)
{
    static uint8_t w[1024 * 4], xq[1024 / 256 * 292];
    static float x[1024];
    kt_random_row(ORK_TYPE_F32, w, 1024);
    for (int i = 0; i < 1024; i++)
        x[i] = frand();
    float a = ork_vec_dot_act(ORK_TYPE_F32, w, x, 1024, ORK_ACT_QUANT);
    float b = ork_vec_dot(ORK_TYPE_F32, w, x, 1024);
    CHECK(memcmp(&a, &b, 4) == 0);
    const uint32_t types[] = {ORK_TYPE_Q4_K, ORK_TYPE_Q6_K};
    for (int ti = 0; ti < 2; ti++) {
        kt_random_row(types[ti], w, 1024);
        REQUIRE(ork_quantize_row_q8_k(x, xq, 1024) == 0);
        float q = ork_vec_dot_act(types[ti], w, x, 1024, ORK_ACT_QUANT);
        float two = ork_vec_dot_q8k(types[ti], w, xq, 1024);
        CHECK(memcmp(&q, &two, 4) == 0);
        static float wf[1024];
        REQUIRE(ork_dequant_row_ref(types[ti], w, wf, 1024) == 0);
        double mag = 0;
        for (int i = 0; i < 1024; i++)
            mag += fabs((double)wf[i] * x[i]);
        float f = ork_vec_dot(types[ti], w, x, 1024);
        CHECK(fabs(q - f) <= 2e-2 * mag);
    }
}

static struct ork_pool *pools[3];

static void matmul_case(uint32_t type, int64_t m, int64_t n, int64_t k)
{
    size_t rb = ork_type_row_bytes(type, (uint64_t)k);
    uint8_t *w = ork_malloc(rb * (size_t)n);
    float *x = ork_malloc(sizeof(float) * (size_t)(m * k));
    float *y = ork_malloc(sizeof(float) * (size_t)(m * n));
    REQUIRE(w && x && y);
    for (int64_t r = 0; r < n; r++)
        kt_random_row(type, w + r * rb, k);
    for (int64_t i = 0; i < m * k; i++)
        x[i] = frand();
    struct ork_mat mat = { .type = type, .n_rows = n, .n_cols = k, .row_bytes = rb, .data = w };
    int differ = 0;
    for (int pi = -1; pi < 3; pi++) {
        REQUIRE(ork_matmul_act(pi < 0 ? NULL : pools[pi], &mat, x, m, y, ORK_ACT_QUANT) == 0);
        for (int64_t i = 0; i < m; i++)
            for (int64_t r = 0; r < n; r++) {
                float d = ork_vec_dot_act(type, w + r * rb, x + i * k, k, ORK_ACT_QUANT);
                if (memcmp(&d, &y[i * n + r], 4) != 0)
                    differ++;
            }
    }
    if (differ)
        fprintf(stderr, "%s M=%lld N=%lld K=%lld: %d outputs differ\n", ork_type_name(type),
                (long long)m, (long long)n, (long long)k, differ);
    CHECK_EQ_INT(differ, 0);
    ork_free(w);
    ork_free(x);
    ork_free(y);
}

static void test_matmul_act(void)
{
    matmul_case(ORK_TYPE_Q8_0, 3, 7, 96);
    matmul_case(ORK_TYPE_Q4_0, 5, 11, 160);
    matmul_case(ORK_TYPE_Q8_0, 20, 5, 4096);        /* several M tiles (15 rows per tile) */
    matmul_case(ORK_TYPE_Q4_0, 2, 3, 62016);        /* row beyond the tile buffer: per output */
    matmul_case(ORK_TYPE_F16, 20, 9, 1000);         /* 16 rows per tile */
    matmul_case(ORK_TYPE_BF16, 3, 5, 77);
    matmul_case(ORK_TYPE_F16, 2, 3, 16384 + 64);    /* beyond the tile buffer */
    matmul_case(ORK_TYPE_Q4_K, 3, 5, 512);
    matmul_case(ORK_TYPE_Q6_K, 17, 6, 768);
    matmul_case(ORK_TYPE_Q4_K, 2, 3, 256 * 230);     /* row beyond the tile buffer */
    matmul_case(ORK_TYPE_F32, 3, 5, 100);
}

static void test_matmul_act_errors_and_no_alloc(void)
{
    static uint8_t w[8 * 34 * 4];
    static float x[4 * 128], y[4 * 8];
    for (int r = 0; r < 8; r++)
        kt_random_row(ORK_TYPE_Q8_0, w + r * 34 * 4, 128);
    struct ork_mat mat = { .type = ORK_TYPE_Q8_0, .n_rows = 8, .n_cols = 128, .row_bytes = 34 * 4,
                           .data = w };
    CHECK_EQ_INT(ork_matmul_act(pools[2], &mat, x, 4, y, (enum ork_act)7), ORK_EINVAL);
    uint64_t before = ork_alloc_count();
    for (int i = 0; i < 10; i++)
        REQUIRE(ork_matmul_act(pools[2], &mat, x, 4, y, ORK_ACT_QUANT) == 0);
    CHECK(ork_alloc_count() == before);
}

int main(void)
{
    for (int i = 0; i < 3; i++)
        if (ork_pool_create(i + 1, &pools[i]) < 0)
            return 1;
    RUN(test_quantize_q8_0);
    RUN(test_q8_dot);
    RUN(test_q8_dot_exact);
    RUN(test_round16_dot);
    RUN(test_round16_edges);
    RUN(test_f32_act_types_unchanged);
    RUN(test_matmul_act);
    RUN(test_matmul_act_errors_and_no_alloc);
    for (int i = 0; i < 3; i++)
        ork_pool_destroy(pools[i]);
    return ork_test_done();
}
