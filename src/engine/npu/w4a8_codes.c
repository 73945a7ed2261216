/* w4a8_codes.c -- the int4 codes of --npu-weights w4a8 (docs/w4a8.md "Engine"): one row (an
 * output channel) onto the signed int4 range [-8, 7] with one scale (npu-weight-decompression.md
 * §2: int4 codes, one fp32 scale per output channel, no zero point).
 *
 * The range is used asymmetrically: s = max(P / 7, N / 8) with P the row's largest positive
 * value and N its largest negative magnitude, so the positive end maps inside +7 and the
 * negative end inside -8, and q = round-half-away(w / s) never clips. Against the symmetric
 * grid (s = max|w| / 7, codes in [-7, 7], dcomp:7's) the step is never larger: it is the same
 * when P is the larger end, and smaller by up to 8/7 when N is. Measured on stories260K
 * (docs/bench-log/2026-12-w4a8.md): a lower rel-RMSE in all 21 tensors, 5 % lower on average,
 * with and without clipping and rotation. With clipping (ORK_NPU_WENC_CLIP) the scale is the
 * fraction c s, c in {1, 0.975, ..., 0.525} (ork_dcomp_quantize's trial fractions), with the
 * least squared error of the row, codes clamped to [-8, 7].
 *
 * Not here: the other grids (libork's ork_dcomp_quantize) or storing the codes (libork). */
#include "npu_priv.h"

#include <ork/error.h>

#include <math.h>

#define W4A8_QMIN (-8.0f)               /* signed int4 (npu-weight-decompression.md §2) */
#define W4A8_QMAX 7.0f
/* The clipping trials, as ork_dcomp_quantize's (src/libork/dcomp_grid.c): 20 fractions of
 * the max-abs scale from 1 down to 0.525. */
#define W4A8_CLIP_STEPS 20u
#define W4A8_CLIP_STEP 0.025f

static float q_of(float x, float inv)
{
    float q = roundf(x * inv);
    return q > W4A8_QMAX ? W4A8_QMAX : (q < W4A8_QMIN ? W4A8_QMIN : q);
}

static double row_err(const float *x, uint32_t k, float s)
{
    const float inv = 1.0f / s;
    double e = 0.0;
    for (uint32_t j = 0; j < k; j++) {
        double d = (double)x[j] - (double)(q_of(x[j], inv) * s);
        e += d * d;
    }
    return e;
}

int ork__npu_w4a8_quantize_row(const float *x, uint32_t k, bool clip, int8_t *q, float *scale)
{
    float pmax = 0.0f, nmax = 0.0f;
    for (uint32_t j = 0; j < k; j++) {
        if (!isfinite(x[j]))
            return ork_errorf(ORK_EINVAL, "w4a8 quantize: column %u is not finite", j);
        pmax = x[j] > pmax ? x[j] : pmax;
        nmax = -x[j] > nmax ? -x[j] : nmax;
    }
    float s = pmax / W4A8_QMAX > nmax / -W4A8_QMIN ? pmax / W4A8_QMAX : nmax / -W4A8_QMIN;
    if (s <= 0.0f)
        s = 1.0f;                       /* an all-zero row: codes 0 */
    else if (clip) {
        float s0 = s;
        double best = row_err(x, k, s);
        for (uint32_t c = 1; c < W4A8_CLIP_STEPS; c++) {
            float sc = s0 * (1.0f - W4A8_CLIP_STEP * (float)c);
            double e = row_err(x, k, sc);
            if (e < best) {
                best = e;
                s = sc;
            }
        }
    }
    const float inv = 1.0f / s;
    for (uint32_t j = 0; j < k; j++)
        q[j] = (int8_t)q_of(x[j], inv);
    *scale = s;
    return 0;
}
