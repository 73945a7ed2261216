/* test_kernels_x16.c -- Q8_0 / Q4_0 / Q4_K / Q6_K matrices interleaved by 16 rows
 * (ORK_LAYOUT_X16, src/kernels/rows16.c, rows16_q6_k.c, x86/rows16_*.c and arm/rows16_*_neon.c):
 * packing rearranges the bytes and every row reads back exactly; on
 * every instruction-set path this CPU can run, with no pool and pools of 1..4 threads,
 * ORK_ACT_QUANT matmuls of an interleaved Q8_0 / Q4_0 matrix agree with an independent
 * double-precision sum over the same quantized X within the f32 rounding bound of their order
 * (and, on paths with interleaved kernels, that order re-implemented in f32 bit for bit),
 * and those of an interleaved Q4_K or Q6_K matrix have the plain layout's bits (Q6_K also
 * from the layout's scalar reference kernel, on every host), decode and prefill
 * shapes, odd block counts, many claims and steals; f32-activation matmuls and row lookups give
 * the plain layout's bits; a single corrupted byte changes exactly its own row's output; bad
 * matrices and layouts are refused with an error; repeated calls allocate nothing. */
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork-kernels/kernels.h>
#include <ork-kernels/pool.h>

#include "kernels/kern_priv.h"
#include "kernels/rows16_q6_k.h"
#include "ork_test.h"

#define KT_RNG_SEED 0x2545f4914f6cdd1dull
#include "kernels_test_util.h"

#define MAX_THREADS 4
#define QBLK 32
#define Q8_0_BYTES 34

static struct ork_pool *pools[MAX_THREADS];     /* pools[t]: t + 1 threads */

struct xmat {
    uint8_t *plain, *packed;
    struct ork_mat p, x;        /* rows layout / interleaved */
};

static void xmat_make(struct xmat *m, uint32_t type, int64_t n, int64_t k)
{
    size_t rb = ork_type_row_bytes(type, (uint64_t)k);
    m->plain = ork_malloc(rb * (size_t)n);
    m->packed = ork_malloc(rb * (size_t)n);
    REQUIRE(m->plain && m->packed);
    for (int64_t r = 0; r < n; r++)
        kt_random_row(type, m->plain + (size_t)r * rb, k);
    memcpy(m->packed, m->plain, rb * (size_t)n);
    m->p = (struct ork_mat){ .type = type, .n_rows = n, .n_cols = k, .row_bytes = rb,
                             .data = m->plain };
    m->x = m->p;
    m->x.data = m->packed;
    REQUIRE(ork_mat_x16_pack(&m->x) == 0);
    REQUIRE(m->x.layout == ORK_LAYOUT_X16);
}

static void xmat_free(struct xmat *m)
{
    ork_free(m->plain);
    ork_free(m->packed);
}

/* Reference of one output: the double sum over blocks of d_w * d_x * (exact integer dot), with
 * the sum of the terms' magnitudes in *mag (for the rounding bound). */
static double ref_dot(uint32_t type, const uint8_t *row, const uint8_t *xq, int64_t nb,
                      double *mag)
{
    const size_t bb = type == ORK_TYPE_Q8_0 ? Q8_0_BYTES : 18;
    double s = 0.0;
    *mag = 0.0;
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *w = row + (size_t)b * bb, *x = xq + (size_t)b * Q8_0_BYTES;
        int32_t isum = 0, part = 0, pmag = 0;
        for (int e = 0; e < QBLK; e++) {
            int wv = type == ORK_TYPE_Q8_0 ? (int8_t)w[2 + e]
                   : e < 16 ? (w[2 + e] & 15) - 8 : (w[2 + e - 16] >> 4) - 8;
            isum += wv * (int8_t)x[2 + e];
            part += wv * (int8_t)x[2 + e];
            if (e % 4 == 3) {
                pmag += abs(part);      /* the plain kernels scale partials of four */
                part = 0;
            }
        }
        double d = (double)ork_fp16_to_f32((uint16_t)(w[0] | w[1] << 8)) *
                   (double)ork_fp16_to_f32((uint16_t)(x[0] | x[1] << 8));
        s += d * isum;
        *mag += fabs(d) * pmag;
    }
    return s;
}

/* The interleaved kernels' order of one output (rows16.c "Arithmetic"), in f32: block by block,
 * acc = fmaf((float)isum_b, d_w * d_x, acc). Every path with interleaved Q8_0 / Q4_0 kernels
 * (AVX2, AVX-512, NEON dotprod) gives these bits. */
static float x16_order(uint32_t type, const uint8_t *row, const uint8_t *xq, int64_t nb)
{
    const size_t bb = type == ORK_TYPE_Q8_0 ? Q8_0_BYTES : 18;
    float acc = 0.0f;
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *w = row + (size_t)b * bb, *x = xq + (size_t)b * Q8_0_BYTES;
        int32_t isum = 0;
        for (int e = 0; e < QBLK; e++) {
            int wv = type == ORK_TYPE_Q8_0 ? (int8_t)w[2 + e]
                   : e < 16 ? (w[2 + e] & 15) - 8 : (w[2 + e - 16] >> 4) - 8;
            isum += wv * (int8_t)x[2 + e];
        }
        float d = ork_fp16_to_f32((uint16_t)(w[0] | w[1] << 8)) *
                  ork_fp16_to_f32((uint16_t)(x[0] | x[1] << 8));
        acc = fmaf((float)isum, d, acc);
    }
    return acc;
}

/* Y (m x n) of the interleaved matrix (or of its plain rows: !interleaved) within the rounding
 * bound of an nb-term f32 sum of every reference output; the count of outputs outside it. */
static int check_y_of(const struct xmat *m, bool interleaved, const float *x, int64_t mrows,
                      const float *y, const char *what)
{
    const int64_t k = m->p.n_cols, n = m->p.n_rows, nb = k / QBLK;
    uint8_t *xq = ork_malloc((size_t)nb * Q8_0_BYTES);
    if (!xq)
        return 1;
    int bad = 0;
    for (int64_t i = 0; i < mrows; i++) {
        if (ork_quantize_row_q8_0(x + i * k, xq, k) != 0) {
            bad++;
            break;
        }
        for (int64_t r = 0; r < n; r++) {
            double mag, want = ref_dot(m->p.type, m->plain + (size_t)r * m->p.row_bytes, xq, nb,
                                       &mag);
            double got = y[i * n + r];
            /* the path's interleaved kernels ran: their documented order, bit for bit */
            if (interleaved && ork__x16_ok(ork__kisa(), m->p.type)) {
                float w32 = x16_order(m->p.type, m->plain + (size_t)r * m->p.row_bytes, xq, nb);
                if (memcmp(&w32, &y[i * n + r], sizeof w32) && bad++ < 3)
                    fprintf(stderr, "%s: %s M=%lld N=%lld K=%lld y[%lld][%lld] = %.9g, the "
                            "interleaved order gives %.9g\n", what, ork_type_name(m->p.type),
                            (long long)mrows, (long long)n, (long long)k, (long long)i,
                            (long long)r, y[i * n + r], w32);
            }
            /* f32 steps: d_w * d_x, one fma per block (interleaved) or per partial of four
             * into 16 lanes and a 4-level reduction (plain kernels): each rounds once */
            double tol = 2.0 * (double)(nb + 6) * FLT_EPSILON * mag + 1e-30;
            if (!(fabs(got - want) <= tol)) {
                if (bad++ < 3)
                    fprintf(stderr, "%s: %s M=%lld N=%lld K=%lld y[%lld][%lld] = %.9g, "
                            "want %.9g +- %.3g\n", what, ork_type_name(m->p.type),
                            (long long)mrows, (long long)n, (long long)k, (long long)i,
                            (long long)r, got, want, tol);
            }
        }
    }
    ork_free(xq);
    return bad;
}

static int check_y(const struct xmat *m, const float *x, int64_t mrows, const float *y,
                   const char *what)
{
    return check_y_of(m, true, x, mrows, y, what);
}

static bool is_kquant(uint32_t type)
{
    return type == ORK_TYPE_Q4_K || type == ORK_TYPE_Q6_K;
}

/* Q4_K / Q6_K: the plain layout's bits (the same integers and f32 steps, rows16.c,
 * rows16_q6_k.c); the others: check_y. yp: scratch for the plain result. */
static int check_y_or_bits(const struct xmat *m, const float *x, int64_t mrows, const float *y,
                           float *yp, struct ork_pool *pool, const char *what)
{
    if (!is_kquant(m->p.type))
        return check_y(m, x, mrows, y, what);
    const int64_t n = m->p.n_rows;
    if (ork_matmul_act(pool, &m->p, x, mrows, yp, ORK_ACT_QUANT) != 0)
        return 1;
    int bad = 0;
    for (int64_t i = 0; i < mrows * n; i++)
        if (memcmp(&y[i], &yp[i], sizeof(float)) && bad++ < 3)
            fprintf(stderr, "%s: %s M=%lld N=%lld K=%lld y[%lld] = %.9g, plain %.9g\n", what,
                    ork_type_name(m->p.type), (long long)mrows, (long long)n,
                    (long long)m->p.n_cols, (long long)i, y[i], yp[i]);
    return bad;
}

/* The Q6_K group block as rows16_q6_k.h defines it, from the plain rows' fields: the int8
 * scales by words (4 sub-blocks of a row each), and every element's 6-bit value q at its
 * place (4 (q - 32) in the top six bits of R_j, elements 12..15 of a sub-block in the low bits
 * of R_0..R_2). */
static void check_q6k_layout(const struct xmat *m)
{
    int bad = 0;
    for (int i = 0; i < 16; i++) {
        const uint8_t *row = m->plain + (size_t)i * m->p.row_bytes;
        const uint8_t *g = m->packed;               /* group 0, block 0 */
        for (int k = 0; k < 16; k++)
            bad += g[32 + 64 * (k / 4) + 4 * i + k % 4] != row[192 + k];
        for (int e = 0; e < 256; e++) {
            const int h = e / 128, t = e % 128 / 32, l = e % 32;
            const int lo = (row[64 * h + 32 * (t % 2) + l] >> (t < 2 ? 0 : 4)) & 15;
            const int q = lo | (((row[128 + 32 * h + l] >> (2 * t)) & 3) << 4);
            const int k = e / 16, j = e % 16 / 4, b = e % 4;
            const uint8_t *r = g + 288 + 64 * (3 * k) + 4 * i + b;     /* R_0 of byte b */
            int v;
            if (j < 3)
                v = (int8_t)(r[64 * j] & 0xfc) / 4;
            else
                v = (int8_t)((r[0] << 6) | (r[64] & 3) << 4 | (r[128] & 3) << 2) / 4;
            bad += v != q - 32;
        }
    }
    CHECK_EQ_INT(bad, 0);
}

static void test_pack_layout(void)
{
    const uint32_t types[] = { ORK_TYPE_Q8_0, ORK_TYPE_Q4_0, ORK_TYPE_Q4_K, ORK_TYPE_Q6_K };
    const int64_t ks[] = { 32 * 7, 32 * 7, 256 * 3, 256 * 3 };
    for (size_t t = 0; t < 4; t++) {
        struct xmat m;
        xmat_make(&m, types[t], 48, ks[t]);
        size_t rb = m.p.row_bytes;
        CHECK(memcmp(m.plain, m.packed, rb * 48) != 0);    /* the bytes did move */
        uint8_t buf[3 * 210];
        float a[256 * 3], b[256 * 3];
        int bad = 0;
        for (int64_t r = 0; r < 48; r++) {
            bad += memcmp(ork__mat_row(&m.x, r, buf), m.plain + (size_t)r * rb, rb) != 0;
            REQUIRE(ork_get_row(&m.p, r, a) == 0);
            REQUIRE(ork_get_row(&m.x, r, b) == 0);
            bad += memcmp(a, b, sizeof(float) * (size_t)ks[t]) != 0;
        }
        CHECK_EQ_INT(bad, 0);
        /* the group's block 0 starts with the 16 rows' scales (Q6_K: d, at 208 in a row) */
        const size_t d_at = types[t] == ORK_TYPE_Q6_K ? 208 : 0;
        for (int i = 0; i < 16; i++)
            CHECK(memcmp(m.packed + 2 * i, m.plain + (size_t)i * rb + d_at, 2) == 0);
        if (types[t] == ORK_TYPE_Q6_K)
            check_q6k_layout(&m);
        if (types[t] == ORK_TYPE_Q4_K) {
            /* then their dmins, the scale bytes by words, the quants by words (x16k.c) */
            for (int i = 0; i < 16; i++) {
                const uint8_t *row = m.plain + (size_t)i * rb;
                CHECK(memcmp(m.packed + 32 + 2 * i, row + 2, 2) == 0);
                CHECK(memcmp(m.packed + 64 + 64 * 2 + 4 * i, row + 4 + 8, 4) == 0);
                CHECK(memcmp(m.packed + 256 + 64 * 31 + 4 * i, row + 16 + 124, 4) == 0);
            }
        }
        xmat_free(&m);
    }
}

/* The X form (quants, f32 scale, the offset correction -128 sum(q), zeros) byte for byte the same on every
 * path this CPU can run as on the scalar one, and its fields as defined. */
static void test_xprep(void)
{
    enum { K = 32 * 37 };
    static float x[K];
    static uint8_t want[K / 32 * ORK_X16_XBLOCK], got[K / 32 * ORK_X16_XBLOCK];
    static uint8_t q8[K / 32 * Q8_0_BYTES];
    for (int i = 0; i < K; i++)
        x[i] = i % 97 == 0 ? 0.0f : frand() * (float)(1 + i % 11) * (i % 5 ? 1.0f : 100.0f);
    for (int i = 64; i < 96; i++)
        x[i] = 0.0f;                                    /* an all-zero block */
    ork__x16_xprep(KISA_SCALAR, x, K, want);
    REQUIRE(ork_quantize_row_q8_0(x, q8, K) == 0);
    int bad = 0;
    for (int b = 0; b < K / 32; b++) {
        const uint8_t *o = want + b * ORK_X16_XBLOCK, *s = q8 + b * Q8_0_BYTES;
        int32_t sum = 0, f[3];
        for (int e = 0; e < 32; e++)
            sum += (int8_t)s[2 + e];
        float d;
        memcpy(&d, o + 32, 4);
        memcpy(f, o + 36, 12);
        bad += memcmp(o, s + 2, 32) != 0 || d != ork_fp16_to_f32((uint16_t)(s[0] | s[1] << 8)) ||
               f[0] != -128 * sum || f[1] != 0 || f[2] != 0;
    }
    int paths = 0;
    for (int k = 0; k < KISA_COUNT; k++) {
        if (!ork__kisa_available((enum kisa)k))
            continue;
        paths++;
        memset(got, 0xa5, sizeof got);
        ork__x16_xprep((enum kisa)k, x, K, got);
        if (memcmp(got, want, sizeof want)) {
            fprintf(stderr, "X form on path %s differs from the scalar one\n",
                    ork__kisa_name((enum kisa)k));
            bad++;
        }
    }
    CHECK(paths >= 1);
    CHECK_EQ_INT(bad, 0);
}

/* The Q4_K X form: quants and scale those of ork_quantize_row_q8_k, each 32-element sum split
 * as 128 * a + b with b in [-64, 63], zeros after; the same bytes on every path. */
static void test_xprep_q4k(void)
{
    enum { K = 256 * 5, XB = 288 };
    static float x[K];
    static uint8_t want[K / 256 * XB], got[K / 256 * XB], q8k[K / 256 * 292];
    for (int i = 0; i < K; i++)
        x[i] = frand() * (float)(1 + i % 13);
    for (int i = 256; i < 288; i++)
        x[i] = 1000.0f;                                 /* a sum at the top of the range */
    for (int i = 512; i < 768; i++)
        x[i] = 0.0f;                                    /* an all-zero block */
    ork__x16k_xprep(KISA_SCALAR, x, K, want);
    REQUIRE(ork_quantize_row_q8_k(x, q8k, K) == 0);
    int bad = 0, big = 0;
    for (int b = 0; b < K / 256; b++) {
        const uint8_t *o = want + b * XB, *s = q8k + b * 292;
        bad += memcmp(o, s + 4, 256) != 0 || memcmp(o + 256, s, 4) != 0;
        for (int j = 0; j < 8; j++) {
            int16_t b0, b1;
            memcpy(&b0, s + 260 + 4 * j, 2);
            memcpy(&b1, s + 262 + 4 * j, 2);
            int a = (int8_t)o[260 + j], r = (int8_t)o[268 + j];
            bad += 128 * a + r != b0 + b1 || r < -64 || r > 63;
            big += abs(b0 + b1) > 3000;
        }
        for (int e = 276; e < XB; e++)
            bad += o[e] != 0;
    }
    CHECK(big >= 1);
    for (int k = 0; k < KISA_COUNT; k++) {
        if (!ork__kisa_available((enum kisa)k))
            continue;
        memset(got, 0xa5, sizeof got);
        ork__x16k_xprep((enum kisa)k, x, K, got);
        bad += memcmp(got, want, sizeof want) != 0;
    }
    CHECK_EQ_INT(bad, 0);
}

/* The Q6_K layout's scalar reference kernel (rows16_q6_k.c), on every host: each group's 16
 * outputs against the X form have the bits of the row layout's ork__q8k_blocks on the scalar
 * path (and on every other path this CPU can run: they all give the same bits). */
static void test_q6k_reference(void)
{
    enum { N = 48, NB = 7, K = 256 * NB };
    struct xmat m;
    xmat_make(&m, ORK_TYPE_Q6_K, N, K);
    static float x[K];
    static uint8_t xf[NB * ORK_X16K_XBLOCK], q8k[NB * 292];
    for (int i = 0; i < K; i++)
        x[i] = frand() * (float)(1 + i % 9);
    for (int i = 256; i < 272; i++)
        x[i] = -1000.0f;                                /* quants at -127 */
    ork__x16k_xprep(KISA_SCALAR, x, K, xf);
    REQUIRE(ork_quantize_row_q8_k(x, q8k, K) == 0);
    int bad = 0;
    for (int g = 0; g < N / 16; g++) {
        float out[16];
        ork__x16q6_ref(m.packed + (size_t)g * 16 * m.p.row_bytes, xf, NB, out);
        for (int i = 0; i < 16; i++) {
            const uint8_t *row = m.plain + (size_t)(16 * g + i) * m.p.row_bytes;
            for (int k = 0; k < KISA_COUNT; k++) {
                if (!ork__kisa_available((enum kisa)k))
                    continue;
                float want = 0.0f;
                ork__q8k_blocks((enum kisa)k, ORK_TYPE_Q6_K, row, q8k, NB, &want);
                if (memcmp(&want, &out[i], sizeof want) && bad++ < 3)
                    fprintf(stderr, "Q6_K reference: row %d = %.9g, %s row layout %.9g\n",
                            16 * g + i, out[i], ork__kisa_name((enum kisa)k), want);
            }
        }
    }
    CHECK_EQ_INT(bad, 0);
    xmat_free(&m);
}

/* Every path and pool against the reference, for one shape. */
static void check_shape(uint32_t type, int64_t mrows, int64_t n, int64_t k)
{
    struct xmat m;
    xmat_make(&m, type, n, k);
    float *x = ork_malloc(sizeof(float) * (size_t)(mrows * k));
    float *y = ork_malloc(sizeof(float) * (size_t)(mrows * n));
    float *yp = ork_malloc(sizeof(float) * (size_t)(mrows * n));
    REQUIRE(x && y && yp);
    for (int64_t i = 0; i < mrows * k; i++)
        x[i] = frand() * (float)(1 + i % 7);
    int bad = 0;
    for (int i = 0; ork_kernels_path_name(i); i++) {
        if (ork_kernels_set_path(ork_kernels_path_name(i)) != 0)
            continue;
        for (int pi = -1; pi < MAX_THREADS; pi++) {
            struct ork_pool *pool = pi < 0 ? NULL : pools[pi];
            if (pi >= 0 && !pool)
                continue;
            memset(y, 0xff, sizeof(float) * (size_t)(mrows * n));
            REQUIRE(ork_matmul_act(pool, &m.x, x, mrows, y, ORK_ACT_QUANT) == 0);
            char what[64];
            snprintf(what, sizeof what, "%s, %d threads", ork_kernels_path_name(i), pi + 1);
            bad += check_y_or_bits(&m, x, mrows, y, yp, pool, what);
        }
        /* f32 activations read the rows back: the plain layout's bits */
        REQUIRE(ork_matmul_act(pools[0], &m.x, x, mrows, y, ORK_ACT_F32) == 0);
        REQUIRE(ork_matmul_act(pools[0], &m.p, x, mrows, yp, ORK_ACT_F32) == 0);
        bad += memcmp(y, yp, sizeof(float) * (size_t)(mrows * n)) != 0;
    }
    REQUIRE(ork_kernels_set_path(NULL) == 0);
    CHECK_EQ_INT(bad, 0);
    ork_free(x);
    ork_free(y);
    ork_free(yp);
    xmat_free(&m);
}

static void test_shapes(void)
{
    check_shape(ORK_TYPE_Q8_0, 1, 16, 32);
    check_shape(ORK_TYPE_Q4_0, 1, 32, 32 * 9);
    check_shape(ORK_TYPE_Q8_0, 7, 48, 32 * 13);
    check_shape(ORK_TYPE_Q4_0, 5, 16, 2048);
    check_shape(ORK_TYPE_Q8_0, 70, 32, 2080);     /* M beyond one tile, ragged last tile */
    check_shape(ORK_TYPE_Q4_0, 67, 64, 1024);
    for (int trial = 0; trial < 10; trial++)
        check_shape(trial % 2 ? ORK_TYPE_Q4_0 : ORK_TYPE_Q8_0, 1 + (int64_t)(rnd() % 9),
                    16 * (1 + (int64_t)(rnd() % 6)), 32 * (1 + (int64_t)(rnd() % 40)));
    check_shape(ORK_TYPE_Q4_K, 1, 16, 256);
    check_shape(ORK_TYPE_Q4_K, 1, 48, 256 * 9);
    check_shape(ORK_TYPE_Q4_K, 6, 32, 2048);
    check_shape(ORK_TYPE_Q4_K, 67, 32, 256 * 3);    /* M beyond one tile, ragged last tile */
    for (int trial = 0; trial < 6; trial++)
        check_shape(ORK_TYPE_Q4_K, 1 + (int64_t)(rnd() % 9), 16 * (1 + (int64_t)(rnd() % 6)),
                    256 * (1 + (int64_t)(rnd() % 12)));
    check_shape(ORK_TYPE_Q6_K, 1, 16, 256);
    check_shape(ORK_TYPE_Q6_K, 1, 80, 256 * 9);     /* 5 groups: 4 streams and 1 */
    check_shape(ORK_TYPE_Q6_K, 6, 32, 2048);
    check_shape(ORK_TYPE_Q6_K, 67, 32, 256 * 3);    /* M beyond one tile, ragged last tile */
    for (int64_t mr = 2; mr <= 12; mr += 2)         /* every tile width (NEON: 6 and 2 .. 6) */
        check_shape(ORK_TYPE_Q6_K, mr + (mr > 6), 16, 512);
    for (int trial = 0; trial < 6; trial++)
        check_shape(ORK_TYPE_Q6_K, 1 + (int64_t)(rnd() % 9), 16 * (1 + (int64_t)(rnd() % 6)),
                    256 * (1 + (int64_t)(rnd() % 12)));
}

/* Decode over matrices long enough for many claims and steals of 16-row units, several
 * interleaved matrices of both types in one call (their rows end to end). */
static void test_decode_multi(void)
{
    enum { K = 4096, NW = 3, REPS = 6 };
    const uint32_t types[NW] = { ORK_TYPE_Q8_0, ORK_TYPE_Q4_0, ORK_TYPE_Q8_0 };
    const int64_t ns[NW] = { 16 * 57, 16 * 41, 16 * 70 };  /* claims: 48-112 rows (matmul.c) */
    struct xmat m[NW];
    const struct ork_mat *mp[NW];
    float *ys[NW];
    static float x[K];
    for (int i = 0; i < K; i++)
        x[i] = frand() * (float)(1 + i % 5);
    for (int q = 0; q < NW; q++) {
        xmat_make(&m[q], types[q], ns[q], K);
        mp[q] = &m[q].x;
        ys[q] = ork_malloc(sizeof(float) * (size_t)ns[q]);
        REQUIRE(ys[q]);
    }
    int bad = 0, runs = 0;
    for (int pi = 0; pi < MAX_THREADS; pi++) {
        if (!pools[pi])
            continue;
        for (int rep = 0; rep < REPS; rep++, runs++) {
            for (int q = 0; q < NW; q++)
                memset(ys[q], 0xff, sizeof(float) * (size_t)ns[q]);
            /* odd reps tell it the matrices come again next (read-ahead): same bits */
            const struct ork_mat *const *next = rep % 2 ? mp : NULL;
            REQUIRE(ork_matmul_act_multi_next(pools[pi], mp, NW, x, 1, ys, ORK_ACT_QUANT, next,
                                              rep % 2 ? NW : 0) == 0);
            for (int q = 0; q < NW; q++)
                bad += check_y(&m[q], x, 1, ys[q], "decode multi");
        }
    }
    CHECK(runs > 0);
    CHECK_EQ_INT(bad, 0);
    /* an interleaved and a plain matrix in one call: each right in its own form */
    const struct ork_mat *mix[2] = { &m[0].x, &m[1].p };
    float *ym[2] = { ys[0], ys[1] };
    REQUIRE(ork_matmul_act_multi(pools[0], mix, 2, x, 1, ym, ORK_ACT_QUANT) == 0);
    CHECK_EQ_INT(check_y(&m[0], x, 1, ys[0], "mixed layouts"), 0);
    CHECK_EQ_INT(check_y_of(&m[1], false, x, 1, ys[1], "mixed layouts"), 0);
    for (int q = 0; q < NW; q++) {
        ork_free(ys[q]);
        xmat_free(&m[q]);
    }
}

/* Q4_K or Q6_K (type) decode over matrices long enough for many claims and steals, two
 * interleaved ones in one call, then one call mixing X forms and types (interleaved `type`,
 * interleaved Q8_0, plain Q6_K, the other K type interleaved): each output as its matrix alone
 * gives it. */
static void decode_multi_k(uint32_t type)
{
    enum { K = 4096, REPS = 4 };
    /* 256 KiB claims (matmul.c) are 112 rows here: a few per span at two threads */
    const int64_t ns[2] = { 16 * 73, 16 * 41 };
    struct xmat m[2], q8, ok;
    static float x[K];
    for (int i = 0; i < K; i++)
        x[i] = frand() * (float)(1 + i % 5);
    float *ys[2], *yw[2];
    const struct ork_mat *mp[2];
    for (int q = 0; q < 2; q++) {
        xmat_make(&m[q], type, ns[q], K);
        mp[q] = &m[q].x;
        ys[q] = ork_malloc(sizeof(float) * (size_t)ns[q]);
        yw[q] = ork_malloc(sizeof(float) * (size_t)ns[q]);
        REQUIRE(ys[q] && yw[q]);
        REQUIRE(ork_matmul_act(NULL, &m[q].p, x, 1, yw[q], ORK_ACT_QUANT) == 0);
    }
    int bad = 0, runs = 0;
    for (int pi = 0; pi < MAX_THREADS; pi++) {
        if (!pools[pi])
            continue;
        for (int rep = 0; rep < REPS; rep++, runs++) {
            REQUIRE(ork_matmul_act_multi(pools[pi], mp, 2, x, 1, ys, ORK_ACT_QUANT) == 0);
            for (int q = 0; q < 2; q++)
                bad += memcmp(ys[q], yw[q], sizeof(float) * (size_t)ns[q]) != 0;
        }
    }
    CHECK(runs > 0);
    CHECK_EQ_INT(bad, 0);

    xmat_make(&q8, ORK_TYPE_Q8_0, 16 * 5, K);
    xmat_make(&ok, type == ORK_TYPE_Q4_K ? ORK_TYPE_Q6_K : ORK_TYPE_Q4_K, 16 * 9, K);
    float *yk = ork_malloc(sizeof(float) * 16 * 9), *ykw = ork_malloc(sizeof(float) * 16 * 9);
    REQUIRE(yk && ykw);
    REQUIRE(ork_matmul_act(NULL, &ok.p, x, 1, ykw, ORK_ACT_QUANT) == 0);
    size_t rb6 = ork_type_row_bytes(ORK_TYPE_Q6_K, K);
    uint8_t *w6 = ork_malloc(rb6 * 48);
    float *y8 = ork_malloc(sizeof(float) * 16 * 5), *y6 = ork_malloc(sizeof(float) * 48);
    float *y6w = ork_malloc(sizeof(float) * 48);
    REQUIRE(w6 && y8 && y6 && y6w);
    for (int r = 0; r < 48; r++)
        kt_random_row(ORK_TYPE_Q6_K, w6 + (size_t)r * rb6, K);
    struct ork_mat q6 = { .type = ORK_TYPE_Q6_K, .n_rows = 48, .n_cols = K, .row_bytes = rb6,
                          .data = w6 };
    REQUIRE(ork_matmul_act(NULL, &q6, x, 1, y6w, ORK_ACT_QUANT) == 0);
    const struct ork_mat *mix[4] = { &m[0].x, &q8.x, &q6, &ok.x };
    float *ym[4] = { ys[0], y8, y6, yk };
    for (int pi = 0; pi < MAX_THREADS; pi++) {
        if (!pools[pi])
            continue;
        REQUIRE(ork_matmul_act_multi(pools[pi], mix, 4, x, 1, ym, ORK_ACT_QUANT) == 0);
        CHECK(memcmp(ys[0], yw[0], sizeof(float) * (size_t)ns[0]) == 0);
        CHECK_EQ_INT(check_y(&q8, x, 1, y8, "mixed forms"), 0);
        CHECK(memcmp(y6, y6w, sizeof(float) * 48) == 0);
        CHECK(memcmp(yk, ykw, sizeof(float) * 16 * 9) == 0);
    }
    ork_free(yk);
    ork_free(ykw);
    xmat_free(&ok);
    ork_free(w6);
    ork_free(y8);
    ork_free(y6);
    ork_free(y6w);
    xmat_free(&q8);
    for (int q = 0; q < 2; q++) {
        ork_free(ys[q]);
        ork_free(yw[q]);
        xmat_free(&m[q]);
    }
}

static void test_decode_multi_q4k(void)
{
    decode_multi_k(ORK_TYPE_Q4_K);
}

static void test_decode_multi_q6k(void)
{
    decode_multi_k(ORK_TYPE_Q6_K);
}

/* With byte `at` of m's interleaved copy xor `bits`: 1 << 8 when exactly output `row` of a
 * decode against x moves (y0: the outputs before, updated to those after). */
static int flip_moves(struct xmat *m, const float *x, float *y0, size_t at, uint8_t bits,
                      int row)
{
    enum { N_MAX = 32 };
    float y1[N_MAX];
    m->packed[at] ^= bits;
    if (m->x.n_rows > N_MAX || ork_matmul_act(pools[0], &m->x, x, 1, y1, ORK_ACT_QUANT) != 0)
        return -1;
    int moved = 0;
    for (int r = 0; r < m->x.n_rows; r++)
        moved += (y0[r] != y1[r]) << (r == row ? 8 : 0);
    memcpy(y0, y1, sizeof(float) * (size_t)m->x.n_rows);
    return moved;
}

/* One byte of one row's quants changed in the interleaved copy: that row's output moves, no
 * other does (the kernels read every row from its own lanes). */
static void test_corruption_is_seen(void)
{
    enum { N = 32, K = 256 };
    const uint32_t types[3] = { ORK_TYPE_Q8_0, ORK_TYPE_Q4_K, ORK_TYPE_Q6_K };
    float x[K], y0[N];
    for (int i = 0; i < K; i++)
        x[i] = frand();
    const int row = 21, lane = row % 16;     /* group 1, lane 5 */
    for (int t = 0; t < 3; t++) {
        struct xmat m;
        xmat_make(&m, types[t], N, K);
        REQUIRE(ork_matmul_act(pools[0], &m.x, x, 1, y0, ORK_ACT_QUANT) == 0);
        const size_t g1 = 16 * m.x.row_bytes;
        if (types[t] == ORK_TYPE_Q8_0) {
            /* block 0's chunk 0, the row's first quant */
            CHECK_EQ_INT(flip_moves(&m, x, y0, g1 + 32 + 4 * lane, 0x40, row), 1 << 8);
        } else if (types[t] == ORK_TYPE_Q4_K) {
            /* block 0's scale chunk 1 */
            CHECK_EQ_INT(flip_moves(&m, x, y0, g1 + 64 + 64 + 4 * lane, 0x05, row), 1 << 8);
        } else {
            /* the low bits in R_1 of sub-block 5 (element 16 * 5 + 12 + 2), then the scale
             * of sub-block 9 (scale chunk 2, byte 1 of the row's word) */
            CHECK_EQ_INT(flip_moves(&m, x, y0, g1 + 288 + 64 * (3 * 5 + 1) + 4 * lane + 2, 0x01,
                                    row), 1 << 8);
            CHECK_EQ_INT(flip_moves(&m, x, y0, g1 + 32 + 64 * 2 + 4 * lane + 1, 0x10, row),
                         1 << 8);
        }
        xmat_free(&m);
    }
}

static void test_errors(void)
{
    enum { K = 64 };
    static uint8_t buf[40 * 210];
    struct ork_mat w = { .type = ORK_TYPE_Q5_K, .n_rows = 16, .n_cols = 256,
                         .row_bytes = 176, .data = buf };
    CHECK(!ork_mat_x16_wanted(&w));
    CHECK_EQ_INT(ork_mat_x16_pack(&w), ORK_EUNSUPPORTED);
    w = (struct ork_mat){ .type = ORK_TYPE_Q8_0, .n_rows = 20, .n_cols = K,
                          .row_bytes = 2 * Q8_0_BYTES, .data = buf };
    CHECK(!ork_mat_x16_wanted(&w));
    CHECK_EQ_INT(ork_mat_x16_pack(&w), ORK_EUNSUPPORTED);
    w.n_rows = 16;
    w.row_bytes = 2 * Q8_0_BYTES + 4;                       /* strided */
    CHECK_EQ_INT(ork_mat_x16_pack(&w), ORK_EUNSUPPORTED);
    w.row_bytes = 2 * Q8_0_BYTES;
    CHECK_EQ_INT(ork_mat_x16_pack(&w), 0);
    CHECK_EQ_INT(ork_mat_x16_pack(&w), ORK_EINVAL);        /* twice */
    CHECK(!ork_mat_x16_wanted(&w));
    CHECK_EQ_INT(ork_mat_x16_pack(NULL), ORK_EINVAL);
    float x[K] = { 0 }, y[32];
    w.n_rows = 20;                                          /* not whole groups */
    CHECK_EQ_INT(ork_matmul_act(NULL, &w, x, 1, y, ORK_ACT_QUANT), ORK_EINVAL);
    w.n_rows = 16;
    w.layout = 7;
    CHECK_EQ_INT(ork_matmul_act(NULL, &w, x, 1, y, ORK_ACT_QUANT), ORK_EINVAL);
    CHECK_EQ_INT(ork_get_row(&w, 0, x), ORK_EINVAL);
}

/* Once the pool scratch has grown, repeated decode and prefill calls allocate nothing. */
static void test_no_alloc(void)
{
    enum { K = 1024, N = 64, M = 40 };
    const uint32_t types[3] = { ORK_TYPE_Q4_0, ORK_TYPE_Q4_K, ORK_TYPE_Q6_K };
    float *x = ork_malloc(sizeof(float) * M * K), *y = ork_malloc(sizeof(float) * M * N);
    REQUIRE(x && y);
    for (int i = 0; i < M * K; i++)
        x[i] = frand();
    for (int t = 0; t < 3; t++) {
        struct xmat m;
        xmat_make(&m, types[t], N, K);
        REQUIRE(ork_matmul_act(pools[1], &m.x, x, M, y, ORK_ACT_QUANT) == 0);
        uint64_t a0 = ork_alloc_count();
        for (int rep = 0; rep < 5; rep++) {
            REQUIRE(ork_matmul_act(pools[1], &m.x, x, M, y, ORK_ACT_QUANT) == 0);
            REQUIRE(ork_matmul_act(pools[1], &m.x, x, 1, y, ORK_ACT_QUANT) == 0);
        }
        CHECK_EQ_INT((int)(ork_alloc_count() - a0), 0);
        xmat_free(&m);
    }
    ork_free(x);
    ork_free(y);
}

/* The paths that have interleaved kernels say so, and a fitting matrix is then wanted
 * interleaved (the query the engine's load asks): AVX2 and up on x86-64, NEON dotprod on
 * AArch64 (where this test runs under QEMU as a Cortex-A76); the scalar path never. Q6_K has
 * them on NEON dotprod only: x86-64 keeps Q6_K matrices in rows. */
static void test_paths_with_kernels(void)
{
    const uint32_t types[] = { ORK_TYPE_Q8_0, ORK_TYPE_Q4_0, ORK_TYPE_Q4_K };
    const enum kisa want[] = { KISA_AVX2, KISA_AVXVNNI, KISA_AVX512VNNI, KISA_NEON_DOT,
                               KISA_NEON_I8MM };
    int seen = 0;
    for (size_t p = 0; p < sizeof want / sizeof want[0]; p++) {
        if (!ork__kisa_available(want[p]))
            continue;
        REQUIRE(ork_kernels_set_path(ork__kisa_name(want[p])) == 0);
        for (size_t t = 0; t < 3; t++) {
            uint8_t row[144];
            struct ork_mat w = { .type = types[t], .n_rows = 32, .n_cols = 256,
                                 .row_bytes = ork_type_row_bytes(types[t], 256), .data = row };
            CHECK(ork__x16_ok(want[p], types[t]));
            CHECK(ork__x16_streams_width(want[p], types[t]) >= 1);
            CHECK(ork_mat_x16_wanted(&w));
        }
        uint8_t row6[2 * 210];
        struct ork_mat w6 = { .type = ORK_TYPE_Q6_K, .n_rows = 32, .n_cols = 512,
                              .row_bytes = 420, .data = row6 };
        const bool q6 = want[p] == KISA_NEON_DOT || want[p] == KISA_NEON_I8MM;
        CHECK(ork__x16_ok(want[p], ORK_TYPE_Q6_K) == q6);
        CHECK(ork_mat_x16_wanted(&w6) == q6);
        fprintf(stderr, "interleaved kernels on path %s (Q6_K: %s)\n", ork__kisa_name(want[p]),
                q6 ? "yes" : "no");
        seen++;
    }
    for (size_t t = 0; t < 3; t++)
        CHECK(!ork__x16_ok(KISA_SCALAR, types[t]));
    CHECK(!ork__x16_ok(KISA_SCALAR, ORK_TYPE_Q6_K));
    REQUIRE(ork_kernels_set_path(NULL) == 0);
#if defined(__aarch64__) || defined(__x86_64__)
    CHECK(seen >= 1 || !(ork_kernels_path_features() & (ORK_KFEAT_AVX2 | ORK_KFEAT_DOTPROD)));
#endif
}

int main(void)
{
    if (kt_pools_create(pools, MAX_THREADS) < 0)
        return 1;
    RUN(test_paths_with_kernels);
    RUN(test_pack_layout);
    RUN(test_xprep);
    RUN(test_xprep_q4k);
    RUN(test_q6k_reference);
    RUN(test_shapes);
    RUN(test_decode_multi);
    RUN(test_decode_multi_q4k);
    RUN(test_decode_multi_q6k);
    RUN(test_corruption_is_seen);
    RUN(test_errors);
    if (pools[1])
        RUN(test_no_alloc);
    kt_pools_destroy(pools, MAX_THREADS);
    return ork_test_done();
}
