/* test_gptq.c -- the error-compensating per-channel quantisation (src/engine/npu/gptq.c):
 * with a diagonal H it gives round-to-nearest's codes exactly in either column order; on
 * correlated inputs its output error ||W X - W_q X|| is well below round-to-nearest's at the
 * same scales, on the grids the NPU uses (dcomp:7, dcomp:15, w4a8's [-7, 7] with clipped
 * scales, an asymmetric [-8, 7]), in natural and in activation order, also with unequal input
 * scales; the codes stay on the grid; activation order's permutation is one, sorted by
 * decreasing H[j][j] with ties by index, and it is the one used; bad arguments are refused.
 * The factorisation and updates (loops reordered to vectorise) give bit for bit the codes of
 * the textbook row-by-row form written out here; on a blocked H (calib.h), K <= B is exactly
 * the full GPTQ, and K > B gives on each block's columns exactly GPTQ run on that block alone
 * (and not the full H's codes). */
#include "ork_test.h"

#include "engine/npu/calib.h"

#include <ork/dcomp.h>
#include <ork/error.h>

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>

#define N 24                    /* output channels */
#define K 48                    /* inputs */
#define T 400                   /* calibration rows */

static uint64_t rng_state;

static double uniform(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

static double gauss(void)
{
    double u = uniform(), v = uniform();
    return sqrt(-2.0 * log(u + 1e-300)) * cos(6.283185307179586 * v);
}

/* x [T][K]: correlated inputs, x_t = A z_t with A = I + a dense random mixing (every input
 * shares a few latent factors), plus a few outlier columns, as LLM activations have. */
static void make_inputs(float *x)
{
    static float a[K][8];
    for (int j = 0; j < K; j++)
        for (int f = 0; f < 8; f++)
            a[j][f] = (float)gauss();
    for (int t = 0; t < T; t++) {
        double z[8];
        for (int f = 0; f < 8; f++)
            z[f] = gauss();
        for (int j = 0; j < K; j++) {
            double v = 0.3 * gauss();
            for (int f = 0; f < 8; f++)
                v += a[j][f] * z[f];
            x[t * K + j] = (float)(j % 11 == 0 ? 4.0 * v : v);
        }
    }
}

static void make_h(const float *x, float *h)
{
    for (int i = 0; i < K; i++)
        for (int j = 0; j < K; j++) {
            double s = 0.0;
            for (int t = 0; t < T; t++)
                s += (double)x[t * K + i] * x[t * K + j];
            h[i * K + j] = (float)s;
        }
}

/* ||W X^T - dequant(q) X^T||^2 over the calibration rows. */
static double out_err(const float *w, const int8_t *q, const float *s, const float *x)
{
    double e = 0.0;
    for (int r = 0; r < N; r++)
        for (int t = 0; t < T; t++) {
            double d = 0.0;
            for (int j = 0; j < K; j++)
                d += ((double)w[r * K + j] - (double)s[r] * q[r * K + j]) * x[t * K + j];
            e += d * d;
        }
    return e;
}

/* Unequal input scales: input j times 0.25 .. 4 in a fixed scrambled pattern, so that H's
 * diagonal is far from sorted (activation order then differs from the natural one). */
static void scale_inputs(float *x)
{
    for (int t = 0; t < T; t++)
        for (int j = 0; j < K; j++)
            x[t * K + j] *= (float)(0.25 * pow(16.0, (double)((j * 17) % K) / (K - 1)));
}

static void make_weights(float *w)
{
    for (int i = 0; i < N * K; i++)
        w[i] = (float)(0.05 * gauss());
}

static const enum ork__npu_gptq_order ORDERS[2] = { ORK__NPU_GPTQ_ORDER_NATURAL,
                                                    ORK__NPU_GPTQ_ORDER_ACT };

static void test_identity_is_rtn(void)
{
    static float w[N * K], h[K * K], s[N];
    static int8_t q_rtn[N * K], q[N * K];
    rng_state = 1;
    make_weights(w);
    for (int i = 0; i < K * K; i++)
        h[i] = i % (K + 1) == 0 ? 3.5f : 0.0f;     /* a multiple of I: the scale must not matter */
    const uint32_t grids[] = { 7, 15, 127 };
    for (int g = 0; g < 3; g++) {
        REQUIRE(ork_dcomp_quantize(w, N, K, grids[g], ORK_DCOMP_QUANT_CLIP, q_rtn, s) == 0);
        for (int o = 0; o < 2; o++) {
            REQUIRE(ork__npu_gptq(w, N, K, h, ORDERS[o], -(int32_t)grids[g], (int32_t)grids[g],
                                  s, q) == 0);
            CHECK(memcmp(q, q_rtn, sizeof q) == 0);
        }
    }
    for (int j = 0; j < K; j++)                 /* diagonal, unequal: no update either way */
        h[j * (K + 1)] = (float)(1 + (j * 7) % K);
    REQUIRE(ork_dcomp_quantize(w, N, K, 7, 0, q_rtn, s) == 0);
    for (int o = 0; o < 2; o++) {
        REQUIRE(ork__npu_gptq(w, N, K, h, ORDERS[o], -7, 7, s, q) == 0);
        CHECK(memcmp(q, q_rtn, sizeof q) == 0);
    }
}

/* On grid [lo, hi] with the scales of round-to-nearest (max-abs or clipped), GPTQ's output
 * error must be below ratio * round-to-nearest's. */
static void check_beats_rtn(uint32_t levels, uint32_t qflags, int32_t lo, int32_t hi,
                            enum ork__npu_gptq_order order, bool scaled, double ratio)
{
    static float w[N * K], x[T * K], h[K * K], s[N];
    static int8_t q_rtn[N * K], q[N * K];
    rng_state = 7 + levels;
    make_weights(w);
    make_inputs(x);
    if (scaled)
        scale_inputs(x);
    make_h(x, h);
    REQUIRE(ork_dcomp_quantize(w, N, K, levels, qflags, q_rtn, s) == 0);
    if (lo < -(int32_t)levels)      /* an asymmetric grid: round-to-nearest on it, same scale */
        for (int r = 0; r < N; r++)
            for (int j = 0; j < K; j++) {
                float v = roundf(w[r * K + j] * (1.0f / s[r]));
                q_rtn[r * K + j] = (int8_t)(v < (float)lo ? lo : v > (float)hi ? hi : v);
            }
    REQUIRE(ork__npu_gptq(w, N, K, h, order, lo, hi, s, q) == 0);
    int out_of_grid = 0;
    for (int i = 0; i < N * K; i++)
        out_of_grid += q[i] < lo || q[i] > hi;
    CHECK_EQ_INT(out_of_grid, 0);
    double e_rtn = out_err(w, q_rtn, s, x), e = out_err(w, q, s, x);
    printf("     grid [%d, %d]%s, %s order%s: output error^2 rtn %.4g, gptq %.4g (%.3f)\n", lo,
           hi, qflags ? " clipped" : "", order == ORK__NPU_GPTQ_ORDER_ACT ? "act" : "natural",
           scaled ? ", scaled inputs" : "", e_rtn, e, e / e_rtn);
    CHECK(e < ratio * e_rtn);
}

static void test_beats_rtn(void)
{
    /* measured ratios (printed): natural order 0.06-0.18, activation order 0.02-0.05; 0.8
     * leaves room and still fails round-to-nearest */
    for (int o = 0; o < 2; o++)
        for (int sc = 0; sc < 2; sc++) {
            check_beats_rtn(7, 0, -7, 7, ORDERS[o], sc, 0.8);
            check_beats_rtn(15, 0, -15, 15, ORDERS[o], sc, 0.8);
            check_beats_rtn(7, ORK_DCOMP_QUANT_CLIP, -7, 7, ORDERS[o], sc, 0.8);
            check_beats_rtn(7, 0, -8, 7, ORDERS[o], sc, 0.8);
            check_beats_rtn(127, 0, -127, 127, ORDERS[o], sc, 0.8);
        }
}

static bool is_permutation(const uint32_t *perm, uint32_t k)
{
    static bool seen[K];
    memset(seen, 0, sizeof seen);
    for (uint32_t j = 0; j < k; j++) {
        if (perm[j] >= k || seen[perm[j]])
            return false;
        seen[perm[j]] = true;
    }
    return true;
}

/* The order from the factor step: natural is 0 .. k-1; act is a permutation with H[j][j]
 * non-increasing along it, ties (and inputs never seen, last) by increasing index. */
static void test_order_is_permutation(void)
{
    static float x[T * K], h[K * K];
    static double u[K * K];
    static uint32_t perm[K];
    rng_state = 3;
    make_inputs(x);
    scale_inputs(x);
    make_h(x, h);
    for (int i = 0; i < K; i++) {               /* input 5 never seen; 9 and 30 tie */
        h[5 * K + i] = h[i * K + 5] = 0.0f;
        h[30 * K + i] = h[i * K + 30] = h[9 * K + i];
        h[i * K + 30] = h[30 * K + i];
    }
    h[30 * K + 30] = h[9 * K + 9];
    h[9 * K + 30] = h[30 * K + 9] = 0.5f * h[9 * K + 9];
    REQUIRE(ork__npu_gptq_factor(h, K, ORK__NPU_GPTQ_ORDER_NATURAL, u, perm) == 0);
    int off = 0;
    for (uint32_t j = 0; j < K; j++)
        off += perm[j] != j;
    CHECK_EQ_INT(off, 0);
    REQUIRE(ork__npu_gptq_factor(h, K, ORK__NPU_GPTQ_ORDER_ACT, u, perm) == 0);
    CHECK(is_permutation(perm, K));
    int bad = 0, pos9 = -1, pos30 = -1;
    for (uint32_t j = 0; j + 1 < K; j++) {
        float a = h[perm[j] * K + perm[j]], b = h[perm[j + 1] * K + perm[j + 1]];
        bad += a < b || (a == b && perm[j] > perm[j + 1]);
    }
    for (int j = 0; j < K; j++) {
        pos9 = perm[j] == 9 ? j : pos9;
        pos30 = perm[j] == 30 ? j : pos30;
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT((int)perm[K - 1], 5);
    CHECK_EQ_INT(pos30, pos9 + 1);
    off = 0;
    for (uint32_t j = 0; j < K; j++)
        off += perm[j] != j;
    CHECK(off > 0);                             /* the scaled inputs are not sorted already */
}

/* The order is used: on an H whose diagonal increases with the index, activation order is the
 * reverse, so its codes are natural order's on the mirrored problem (W's columns and H's rows
 * and columns reversed), mirrored back -- and not natural order's on the problem itself. */
static void test_order_is_used(void)
{
    static float w[N * K], x[T * K], h[K * K], wm[N * K], hm[K * K], s[N];
    static int8_t q_act[N * K], q_nat[N * K], q_mir[N * K], q_back[N * K];
    static double u[K * K];
    static uint32_t perm[K];
    rng_state = 11;
    make_weights(w);
    make_inputs(x);
    for (int j = 0; j < K; j++) {               /* input j: RMS 1 + j, increasing with j */
        double ss = 0.0;
        for (int t = 0; t < T; t++)
            ss += (double)x[t * K + j] * x[t * K + j];
        double f = (1.0 + j) / sqrt(ss / T);
        for (int t = 0; t < T; t++)
            x[t * K + j] = (float)(f * x[t * K + j]);
    }
    make_h(x, h);
    for (int j = 0; j + 1 < K; j++)
        REQUIRE(h[j * (K + 1)] < h[(j + 1) * (K + 1)]);
    REQUIRE(ork__npu_gptq_factor(h, K, ORK__NPU_GPTQ_ORDER_ACT, u, perm) == 0);
    int rev = 0;
    for (int j = 0; j < K; j++)
        rev += perm[j] == (uint32_t)(K - 1 - j);
    CHECK_EQ_INT(rev, K);
    for (int r = 0; r < N; r++)
        for (int j = 0; j < K; j++)
            wm[r * K + j] = w[r * K + (K - 1 - j)];
    for (int i = 0; i < K; i++)
        for (int j = 0; j < K; j++)
            hm[i * K + j] = h[(K - 1 - i) * K + (K - 1 - j)];
    REQUIRE(ork_dcomp_quantize(w, N, K, 7, 0, q_nat, s) == 0);     /* the scales only */
    REQUIRE(ork__npu_gptq(w, N, K, h, ORK__NPU_GPTQ_ORDER_ACT, -7, 7, s, q_act) == 0);
    REQUIRE(ork__npu_gptq(w, N, K, h, ORK__NPU_GPTQ_ORDER_NATURAL, -7, 7, s, q_nat) == 0);
    REQUIRE(ork__npu_gptq(wm, N, K, hm, ORK__NPU_GPTQ_ORDER_NATURAL, -7, 7, s, q_mir) == 0);
    for (int r = 0; r < N; r++)
        for (int j = 0; j < K; j++)
            q_back[r * K + j] = q_mir[r * K + (K - 1 - j)];
    CHECK(memcmp(q_act, q_back, sizeof q_act) == 0);
    int differ = 0;
    for (int i = 0; i < N * K; i++)
        differ += q_act[i] != q_nat[i];
    printf("     act vs natural order: %d of %d codes differ\n", differ, N * K);
    CHECK(differ > 0);
}


/* ---- the textbook form, for bit-exactness ------------------------------------------------ */

/* Lower Cholesky factor, row by row with dot products (a: k x k, in place). */
static int ref_cholesky(double *a, uint32_t k)
{
    for (uint32_t j = 0; j < k; j++) {
        double d = a[j * k + j];
        for (uint32_t p = 0; p < j; p++)
            d -= a[j * k + p] * a[j * k + p];
        if (!(d > 0.0))
            return -1;
        double ljj = sqrt(d);
        a[j * k + j] = ljj;
        for (uint32_t i = j + 1; i < k; i++) {
            double v = a[i * k + j];
            for (uint32_t p = 0; p < j; p++)
                v -= a[i * k + p] * a[j * k + p];
            a[i * k + j] = v / ljj;
        }
        for (uint32_t i = 0; i < j; i++)
            a[i * k + j] = 0.0;
    }
    return 0;
}

/* Codes by the method's description (calib.h), every step a plain loop: damping, activation
 * order, Cholesky, L^-1 column by column, M^T M by dot products, U = the upper factor. */
static void ref_gptq(const float *w, uint32_t n, uint32_t k, const float *h, int32_t lo,
                     int32_t hi, const float *s, int8_t *q)
{
    size_t kk = (size_t)k * k;
    double *a = malloc(kk * sizeof(double)), *u = malloc(kk * sizeof(double));
    double *m = calloc(kk, sizeof(double)), *inv = malloc(kk * sizeof(double));
    double *wr = malloc(k * sizeof(double));
    uint32_t *perm = malloc(k * sizeof(uint32_t));
    REQUIRE(a && u && m && inv && wr && perm);
    for (uint32_t t = 0; t < k; t++) {          /* selection sort: decreasing diag, by index */
        perm[t] = t;
    }
    for (uint32_t t = 0; t < k; t++) {
        uint32_t best = t;
        for (uint32_t c = t + 1; c < k; c++) {
            float db = h[perm[best] * k + perm[best]], dc = h[perm[c] * k + perm[c]];
            double xb = db > 0.0f ? db : 0.0, xc = dc > 0.0f ? dc : 0.0;
            if (xc > xb || (xc == xb && perm[c] < perm[best]))
                best = c;
        }
        uint32_t x = perm[t];
        perm[t] = perm[best];
        perm[best] = x;
    }
    double mean = 0.0;
    for (uint32_t i = 0; i < kk; i++)
        a[i] = (double)h[i];
    for (uint32_t j = 0; j < k; j++) {
        if (!(a[j * k + j] > 0.0)) {
            for (uint32_t i = 0; i < k; i++)
                a[i * k + j] = a[j * k + i] = 0.0;
            a[j * k + j] = 1.0;
        }
        mean += a[j * k + j];
    }
    mean /= (double)k;
    for (uint32_t j = 0; j < k; j++)
        a[j * k + j] += ORK__NPU_GPTQ_DAMP * mean;
    for (uint32_t i = 0; i < k; i++)
        for (uint32_t j = 0; j < k; j++)
            u[i * k + j] = a[perm[i] * k + perm[j]];
    REQUIRE(ref_cholesky(u, k) == 0);
    for (uint32_t c = 0; c < k; c++) {
        m[c * k + c] = 1.0 / u[c * k + c];
        for (uint32_t i = c + 1; i < k; i++) {
            double v = 0.0;
            for (uint32_t p = c; p < i; p++)
                v -= u[i * k + p] * m[p * k + c];
            m[i * k + c] = v / u[i * k + i];
        }
    }
    for (uint32_t i = 0; i < k; i++)
        for (uint32_t j = 0; j <= i; j++) {
            double v = 0.0;
            for (uint32_t p = i; p < k; p++)
                v += m[p * k + i] * m[p * k + j];
            inv[i * k + j] = inv[j * k + i] = v;
        }
    REQUIRE(ref_cholesky(inv, k) == 0);
    for (uint32_t i = 0; i < k; i++)
        for (uint32_t j = 0; j < k; j++)
            u[i * k + j] = inv[j * k + i];
    for (uint32_t r = 0; r < n; r++) {
        const float is = 1.0f / s[r];
        for (uint32_t j = 0; j < k; j++)
            wr[j] = (double)w[r * k + perm[j]];
        for (uint32_t j = 0; j < k; j++) {
            float v = roundf((float)wr[j] * is);
            v = v > (float)hi ? (float)hi : (v < (float)lo ? (float)lo : v);
            q[r * k + perm[j]] = (int8_t)v;
            double e = (wr[j] - (double)s[r] * (double)v) / u[j * k + j];
            for (uint32_t l = j + 1; l < k; l++)
                wr[l] -= e * u[j * k + l];
        }
    }
    free(a);
    free(u);
    free(m);
    free(inv);
    free(wr);
    free(perm);
}

/* A correlated H of k inputs from t rows (make_inputs' construction at any k), and weights. */
static void make_big(uint32_t k, uint32_t t, float *h, float *w, uint32_t n)
{
    float *x = malloc((size_t)t * k * sizeof(float)), *a = malloc((size_t)k * 8 * sizeof(float));
    REQUIRE(x && a);
    for (uint32_t j = 0; j < k * 8; j++)
        a[j] = (float)gauss();
    for (uint32_t r = 0; r < t; r++) {
        double z[8];
        for (int f = 0; f < 8; f++)
            z[f] = gauss();
        for (uint32_t j = 0; j < k; j++) {
            double v = 0.3 * gauss();
            for (int f = 0; f < 8; f++)
                v += a[j * 8 + f] * z[f];
            x[r * k + j] = (float)(v * (0.25 + (double)((j * 37) % 97) / 24.0));
        }
    }
    memset(h, 0, (size_t)k * k * sizeof(float));
    for (uint32_t r = 0; r < t; r++)            /* row-outer: O(t k^2), float sums */
        for (uint32_t i = 0; i < k; i++) {
            float xi = x[r * k + i];
            for (uint32_t j = 0; j < k; j++)
                h[i * k + j] += xi * x[r * k + j];
        }
    for (uint32_t i = 0; i < n * k; i++)
        w[i] = (float)(0.05 * gauss());
    free(x);
    free(a);
}

/* Scales of round-to-nearest on [-7, 7] (max-abs). */
static void maxabs_scales(const float *w, uint32_t n, uint32_t k, float *s)
{
    for (uint32_t r = 0; r < n; r++) {
        float mx = 0.0f;
        for (uint32_t j = 0; j < k; j++)
            mx = fabsf(w[r * k + j]) > mx ? fabsf(w[r * k + j]) : mx;
        s[r] = mx / 7.0f;
    }
}

/* The reordered loops are the textbook form's bits, at the fixtures' K (64, 172) and with a
 * row count that is not a multiple of the rows taken together. */
static void test_matches_textbook(void)
{
    const uint32_t ks[2] = { 64, 172 }, n = 23;
    for (int c = 0; c < 2; c++) {
        uint32_t k = ks[c];
        float *h = malloc((size_t)k * k * sizeof(float)), *w = malloc(n * k * sizeof(float));
        float s[23];
        int8_t *q = malloc(n * k), *qr = malloc(n * k), *qb = malloc(n * k);
        REQUIRE(h && w && q && qr && qb);
        rng_state = 101 + k;
        make_big(k, 300, h, w, n);
        maxabs_scales(w, n, k, s);
        ref_gptq(w, n, k, h, -8, 7, s, qr);
        REQUIRE(ork__npu_gptq(w, n, k, h, ORK__NPU_GPTQ_ORDER_ACT, -8, 7, s, q) == 0);
        REQUIRE(ork__npu_gptq_blocked(w, n, k, h, ORK__NPU_GPTQ_ORDER_ACT, -8, 7, s, qb) == 0);
        CHECK(memcmp(q, qr, n * k) == 0);
        CHECK(memcmp(qb, qr, n * k) == 0);      /* k <= B: one block, the full H */
        CHECK_EQ_INT((int)ork__npu_gptq_hb_floats(k), (int)(k * k));
        free(h);
        free(w);
        free(q);
        free(qr);
        free(qb);
    }
}

/* K = B + 77: two blocks (B and 77); the blocked H holds H's two diagonal blocks, and the
 * codes of each block's columns are ork__npu_gptq's on those columns with that block of H. */
static void test_blocks_independent(void)
{
    const uint32_t B = ORK__NPU_GPTQ_BLOCK, k = B + 77, n = 9;
    float *h = malloc((size_t)k * k * sizeof(float)), *w = malloc(n * k * sizeof(float));
    float *hb = malloc(ork__npu_gptq_hb_floats(k) * sizeof(float));
    float *wb = malloc(n * B * sizeof(float)), *hblk = malloc((size_t)B * B * sizeof(float));
    float s[9];
    int8_t *q = malloc(n * k), *qf = malloc(n * k), *qb = malloc(n * B);
    REQUIRE(h && w && hb && wb && hblk && q && qf && qb);
    CHECK_EQ_INT((int)ork__npu_gptq_n_blocks(k), 2);
    CHECK_EQ_INT((int)ork__npu_gptq_block_k(k, 1), 77);
    CHECK_EQ_INT((int)ork__npu_gptq_hb_floats(k), (int)(B * B + 77 * 77));
    rng_state = 55;
    make_big(k, 200, h, w, n);
    maxabs_scales(w, n, k, s);
    for (uint32_t b = 0; b < 2; b++) {
        uint32_t c0 = b * B, kb = ork__npu_gptq_block_k(k, b);
        float *dst = hb + ork__npu_gptq_block_off(k, b);
        for (uint32_t i = 0; i < kb; i++)
            for (uint32_t j = 0; j < kb; j++)
                dst[i * kb + j] = h[(size_t)(c0 + i) * k + c0 + j];
    }
    REQUIRE(ork__npu_gptq_blocked(w, n, k, hb, ORK__NPU_GPTQ_ORDER_ACT, -8, 7, s, q) == 0);
    int bad = 0;
    for (uint32_t b = 0; b < 2; b++) {
        uint32_t c0 = b * B, kb = ork__npu_gptq_block_k(k, b);
        for (uint32_t r = 0; r < n; r++)
            memcpy(wb + r * kb, w + r * k + c0, kb * sizeof(float));
        for (uint32_t i = 0; i < kb; i++)
            for (uint32_t j = 0; j < kb; j++)
                hblk[i * kb + j] = h[(size_t)(c0 + i) * k + c0 + j];
        REQUIRE(ork__npu_gptq(wb, n, kb, hblk, ORK__NPU_GPTQ_ORDER_ACT, -8, 7, s, qb) == 0);
        for (uint32_t r = 0; r < n; r++)
            bad += memcmp(qb + r * kb, q + r * k + c0, kb) != 0;
    }
    CHECK_EQ_INT(bad, 0);
    REQUIRE(ork__npu_gptq(w, n, k, h, ORK__NPU_GPTQ_ORDER_ACT, -8, 7, s, qf) == 0);
    int differ = 0;
    for (uint32_t i = 0; i < n * k; i++)
        differ += q[i] != qf[i];
    printf("     K = %u in blocks vs the full H: %d of %u codes differ\n", k, differ, n * k);
    CHECK(differ > 0);
    free(h);
    free(w);
    free(hb);
    free(wb);
    free(hblk);
    free(q);
    free(qf);
    free(qb);
}

static void test_refused(void)
{
    float w[4] = { 1, 2, 3, 4 }, h[4] = { 1, 0, 0, 1 }, s[2] = { 1, 1 }, s0[2] = { 1, 0 };
    int8_t q[4];
    const enum ork__npu_gptq_order A = ORK__NPU_GPTQ_ORDER_ACT;
    CHECK_EQ_INT(ork__npu_gptq(w, 2, 2, h, A, 7, -7, s, q), ORK_EINVAL);
    CHECK_EQ_INT(ork__npu_gptq(w, 2, 2, h, A, -200, 7, s, q), ORK_EINVAL);
    CHECK_EQ_INT(ork__npu_gptq(w, 2, 2, h, A, -7, 7, s0, q), ORK_EINVAL);
    CHECK_EQ_INT(ork__npu_gptq(NULL, 2, 2, h, A, -7, 7, s, q), ORK_EINVAL);
    CHECK_EQ_INT(ork__npu_gptq(w, 2, 2, h, (enum ork__npu_gptq_order)2, -7, 7, s, q),
                 ORK_EINVAL);
    double u[4];
    CHECK_EQ_INT(ork__npu_gptq_factor(h, 2, A, u, NULL), ORK_EINVAL);
    float hneg[4] = { 1, 3, 3, 1 };             /* not positive definite even when damped */
    CHECK_EQ_INT(ork__npu_gptq(w, 2, 2, hneg, A, -7, 7, s, q), ORK_ERANGE);
    float hzero[4] = { 0, 0, 0, 0 };            /* no input seen: diagonal 1, round-to-nearest */
    for (int o = 0; o < 2; o++) {
        CHECK_EQ_INT(ork__npu_gptq(w, 2, 2, hzero, ORDERS[o], -7, 7, s, q), 0);
        CHECK(q[0] == 1 && q[1] == 2 && q[2] == 3 && q[3] == 4);
    }
}

int main(void)
{
    RUN(test_identity_is_rtn);
    RUN(test_beats_rtn);
    RUN(test_order_is_permutation);
    RUN(test_order_is_used);
    RUN(test_matches_textbook);
    RUN(test_blocks_independent);
    RUN(test_refused);
    return ork_test_done();
}
