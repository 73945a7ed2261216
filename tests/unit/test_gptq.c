/* test_gptq.c -- the error-compensating per-channel quantisation (src/engine/npu/gptq.c):
 * with H = I it gives round-to-nearest's codes exactly; on correlated inputs its output error
 * ||W X - W_q X|| is well below round-to-nearest's at the same scales, on the grids the NPU
 * uses (dcomp:7, dcomp:15, w4a8's [-7, 7] with clipped scales, an asymmetric [-8, 7]); the codes
 * stay on the grid; bad arguments are refused. */
#include "ork_test.h"

#include "engine/npu/calib.h"

#include <ork/dcomp.h>
#include <ork/error.h>

#include <stdint.h>
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

static void make_weights(float *w)
{
    for (int i = 0; i < N * K; i++)
        w[i] = (float)(0.05 * gauss());
}

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
        REQUIRE(ork__npu_gptq(w, N, K, h, -(int32_t)grids[g], (int32_t)grids[g], s, q) == 0);
        CHECK(memcmp(q, q_rtn, sizeof q) == 0);
    }
}

/* On grid [lo, hi] with the scales of round-to-nearest (max-abs or clipped), GPTQ's output
 * error must be below ratio * round-to-nearest's. */
static void check_beats_rtn(uint32_t levels, uint32_t qflags, int32_t lo, int32_t hi,
                            double ratio)
{
    static float w[N * K], x[T * K], h[K * K], s[N];
    static int8_t q_rtn[N * K], q[N * K];
    rng_state = 7 + levels;
    make_weights(w);
    make_inputs(x);
    make_h(x, h);
    REQUIRE(ork_dcomp_quantize(w, N, K, levels, qflags, q_rtn, s) == 0);
    if (lo < -(int32_t)levels)      /* an asymmetric grid: round-to-nearest on it, same scale */
        for (int r = 0; r < N; r++)
            for (int j = 0; j < K; j++) {
                float v = roundf(w[r * K + j] * (1.0f / s[r]));
                q_rtn[r * K + j] = (int8_t)(v < (float)lo ? lo : v > (float)hi ? hi : v);
            }
    REQUIRE(ork__npu_gptq(w, N, K, h, lo, hi, s, q) == 0);
    int out_of_grid = 0;
    for (int i = 0; i < N * K; i++)
        out_of_grid += q[i] < lo || q[i] > hi;
    CHECK_EQ_INT(out_of_grid, 0);
    double e_rtn = out_err(w, q_rtn, s, x), e = out_err(w, q, s, x);
    printf("     grid [%d, %d]%s: output error^2 rtn %.4g, gptq %.4g (%.3f)\n", lo, hi,
           qflags ? " clipped" : "", e_rtn, e, e / e_rtn);
    CHECK(e < ratio * e_rtn);
}

static void test_beats_rtn(void)
{
    /* measured ratios 0.06-0.18 (printed); 0.8 leaves room and still fails round-to-nearest */
    check_beats_rtn(7, 0, -7, 7, 0.8);
    check_beats_rtn(15, 0, -15, 15, 0.8);
    check_beats_rtn(7, ORK_DCOMP_QUANT_CLIP, -7, 7, 0.8);
    check_beats_rtn(7, 0, -8, 7, 0.8);
    check_beats_rtn(127, 0, -127, 127, 0.8);
}

static void test_refused(void)
{
    float w[4] = { 1, 2, 3, 4 }, h[4] = { 1, 0, 0, 1 }, s[2] = { 1, 1 }, s0[2] = { 1, 0 };
    int8_t q[4];
    CHECK_EQ_INT(ork__npu_gptq(w, 2, 2, h, 7, -7, s, q), ORK_EINVAL);
    CHECK_EQ_INT(ork__npu_gptq(w, 2, 2, h, -200, 7, s, q), ORK_EINVAL);
    CHECK_EQ_INT(ork__npu_gptq(w, 2, 2, h, -7, 7, s0, q), ORK_EINVAL);
    CHECK_EQ_INT(ork__npu_gptq(NULL, 2, 2, h, -7, 7, s, q), ORK_EINVAL);
    float hneg[4] = { 1, 3, 3, 1 };             /* not positive definite even when damped */
    CHECK_EQ_INT(ork__npu_gptq(w, 2, 2, hneg, -7, 7, s, q), ORK_ERANGE);
    float hzero[4] = { 0, 0, 0, 0 };            /* no input seen: diagonal 1, round-to-nearest */
    CHECK_EQ_INT(ork__npu_gptq(w, 2, 2, hzero, -7, 7, s, q), 0);
    CHECK(q[0] == 1 && q[1] == 2 && q[2] == 3 && q[3] == 4);
}

int main(void)
{
    RUN(test_identity_is_rtn);
    RUN(test_beats_rtn);
    RUN(test_refused);
    return ork_test_done();
}
