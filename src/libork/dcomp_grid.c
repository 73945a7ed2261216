/* dcomp_grid.c -- weight grids for the decompressor: per-output-channel symmetric quantisation
 * onto 2L+1 levels (the only scale the int8 MAC allows is one per output channel, spec
 * npu-weight-decompression.md §1.8), the error against the source weights, a Hadamard rotation
 * of K, and the choice of the coarsest grid under an error bound. The stream is shorter the
 * narrower the codes' width classes are (§1.4), so a coarse grid is what compresses. */
#include <ork/alloc.h>
#include <ork/dcomp.h>
#include <ork/error.h>

#include <math.h>
#include <string.h>

const uint32_t ork_dcomp_grids[ORK_DCOMP_N_GRIDS] = { 7, 15, 31, 63, 127 };

/* Clipping search (ORK_DCOMP_QUANT_CLIP): the fractions of max|w| tried per channel, 1 down to
 * 1 - (CLIP_STEPS - 1) * CLIP_STEP = 0.525. Clipping trades the rounding error of every weight
 * against the clipping error of the few largest, which pays on coarse grids; the range and
 * step are our choice (docs/dcomp.md "Weight grids"), not tuned. */
#define CLIP_STEPS 20u
#define CLIP_STEP 0.025f
#define Q_MAX 127u

static float clip_frac(uint32_t i)
{
    return 1.0f - CLIP_STEP * (float)i;
}

/* Squared error of row r (k values) on the grid of L levels with scale s. */
static double row_err(const float *r, uint32_t k, float s, float lim)
{
    const float inv = 1.0f / s;
    double e = 0.0;
    for (uint32_t j = 0; j < k; j++) {
        float q = roundf(r[j] * inv);
        q = q > lim ? lim : (q < -lim ? -lim : q);
        double d = (double)r[j] - (double)(q * s);
        e += d * d;
    }
    return e;
}

int ork_dcomp_quantize(const float *w, uint32_t n, uint32_t k, uint32_t levels, uint32_t flags,
                       int8_t *q, float *scales)
{
    if (!w || !q || !scales || !n || !k)
        return ork_errorf(ORK_EINVAL, "dcomp quantize: null buffer or empty shape (%u x %u)", n,
                          k);
    if (levels < 1 || levels > Q_MAX)
        return ork_errorf(ORK_ERANGE, "dcomp quantize: grid L = %u outside 1..%u", levels, Q_MAX);
    const float lim = (float)levels;
    for (uint32_t i = 0; i < n; i++) {
        const float *r = w + (size_t)i * k;
        float amax = 0.0f;
        for (uint32_t j = 0; j < k; j++) {
            if (!isfinite(r[j]))
                return ork_errorf(ORK_EINVAL, "dcomp quantize: row %u column %u is not finite",
                                  i, j);
            amax = fabsf(r[j]) > amax ? fabsf(r[j]) : amax;
        }
        float s = amax > 0.0f ? amax / lim : 1.0f;
        if (amax > 0.0f && (flags & ORK_DCOMP_QUANT_CLIP)) {
            double best = row_err(r, k, s, lim);
            for (uint32_t c = 1; c < CLIP_STEPS; c++) {
                float sc = amax * clip_frac(c) / lim;
                double e = row_err(r, k, sc, lim);
                if (e < best) {
                    best = e;
                    s = sc;
                }
            }
        }
        const float inv = 1.0f / s;
        for (uint32_t j = 0; j < k; j++) {
            float v = roundf(r[j] * inv);
            v = v > lim ? lim : (v < -lim ? -lim : v);
            q[(size_t)i * k + j] = (int8_t)v;
        }
        scales[i] = s;
    }
    return 0;
}

double ork_dcomp_rel_rmse(const float *w, const int8_t *q, const float *scales, uint32_t n,
                          uint32_t k)
{
    double err = 0.0, ref = 0.0;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = 0; j < k; j++) {
            double x = w[(size_t)i * k + j];
            double d = x - (double)scales[i] * q[(size_t)i * k + j];
            err += d * d;
            ref += x * x;
        }
    return ref > 0.0 ? sqrt(err / ref) : 0.0;
}

uint32_t ork_dcomp_hadamard_block(uint32_t k, uint32_t max_block)
{
    if (!k)
        return 0;
    uint32_t b = k & (~k + 1);              /* the lowest set bit: largest 2^j dividing k */
    while (max_block && b > max_block)
        b >>= 1;
    return b;
}

int ork_dcomp_hadamard_rows(float *w, uint32_t n, uint32_t k, uint32_t block)
{
    if (!w || !n || !k || !block || (block & (block - 1)) || k % block)
        return ork_errorf(ORK_EINVAL, "dcomp hadamard: block %u must be a power of two dividing "
                          "K = %u", block, k);
    const float norm = 1.0f / sqrtf((float)block);
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t b0 = 0; b0 < k; b0 += block) {
            float *x = w + (size_t)i * k + b0;
            /* the fast Walsh-Hadamard butterfly: log2(block) passes of sums and differences */
            for (uint32_t h = 1; h < block; h <<= 1)
                for (uint32_t j = 0; j < block; j += 2 * h)
                    for (uint32_t t = j; t < j + h; t++) {
                        float a = x[t], c = x[t + h];
                        x[t] = a + c;
                        x[t + h] = a - c;
                    }
            for (uint32_t t = 0; t < block; t++)
                x[t] *= norm;
        }
    return 0;
}

/* One grid on (possibly rotated) weights: quantise, error, stream size. */
static int eval_grid(const float *w, uint32_t n, uint32_t k, uint32_t levels, uint32_t qflags,
                     int8_t *q, float *scales, struct ork_dcomp_grid_result *res)
{
    int ret = ork_dcomp_quantize(w, n, k, levels, qflags, q, scales);
    if (ret < 0)
        return ret;
    res->levels = levels;
    res->rel_rmse = ork_dcomp_rel_rmse(w, q, scales, n, k);
    struct ork_dcomp_weights dw;
    const struct ork_dcomp_weights_desc d = {
        .struct_size = sizeof d, .k = k, .n = n, .w = q, .max_m = 1, .cores = 1,
    };
    ret = ork_dcomp_weights_encode(&d, &dw);
    if (ret < 0)
        return ret;
    res->bytes = dw.bytes;
    res->bpw = ork_dcomp_weights_bpw(&dw);
    ork_dcomp_weights_fini(&dw);
    return 0;
}

int ork_dcomp_grid_pick(const float *w, uint32_t n, uint32_t k, const struct ork_dcomp_grid_opts *o,
                        struct ork_dcomp_grid_result *res, uint32_t *picked, bool *met)
{
    if (!w || !o || !res || !picked || !met || !n || !k)
        return ork_errorf(ORK_EINVAL, "dcomp grid pick: null argument or empty shape");
    const size_t nk = (size_t)n * k;
    const float *src = w;
    float *rot = NULL;
    int8_t *q = ork_malloc(nk);
    float *scales = ork_malloc((size_t)n * sizeof *scales);
    int ret = 0;
    if (!q || !scales) {
        ret = ork_errorf(ORK_ENOMEM, "dcomp grid pick: %u x %u codes", n, k);
        goto out;
    }
    if (o->hadamard_block) {
        rot = ork_malloc(nk * sizeof *rot);
        if (!rot) {
            ret = ork_errorf(ORK_ENOMEM, "dcomp grid pick: %u x %u rotated copy", n, k);
            goto out;
        }
        memcpy(rot, w, nk * sizeof *rot);
        if ((ret = ork_dcomp_hadamard_rows(rot, n, k, o->hadamard_block)) < 0)
            goto out;
        src = rot;
    }
    *picked = ORK_DCOMP_N_GRIDS - 1;
    *met = false;
    for (uint32_t g = 0; g < ORK_DCOMP_N_GRIDS; g++) {
        if ((ret = eval_grid(src, n, k, ork_dcomp_grids[g], o->quant_flags, q, scales,
                             &res[g])) < 0)
            goto out;
        if (!*met && res[g].rel_rmse <= o->max_rel_rmse) {
            *picked = g;
            *met = true;
        }
    }
out:
    ork_free(rot);
    ork_free(scales);
    ork_free(q);
    return ret;
}
