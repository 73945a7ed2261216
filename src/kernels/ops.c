/* ops.c -- the element-wise and row-wise math of a transformer block: RMSNorm, softmax,
 * SiLU-gated product and rotary position embedding. Each has a scalar reference, with the
 * operation order written out below because logits are compared with a reference engine to
 * about 1e-5, and a SIMD path through the table (x86/ops_avx2.c on every x86 path,
 * arm/ops_neon.c on arm64) used unless the path is "scalar" (ORK_DEBUG=scalar or
 * ork_kernels_set_path). Differences of the SIMD paths from the scalar reference, bounded by
 * tests/unit/test_kernels_ops.c:
 *   rmsnorm   the squares are summed in double in another order: at most 1 ulp per element;
 *   softmax   expf replaced by a vector exp (below: a few ulp from expf for x >= -86, 0 for
 *             x < -86 where e^x < 2^-124): relative error <= 1e-6 per element, or absolute
 *             <= 2^-124;
 *   silu_mul  the same vector exp: relative error <= 1e-6, or absolute <= 2^-124;
 *   rope      the same bits on every path (cos/sin of a row are kept and reused, see below;
 *             the rotation is the table's rope_rotate, NEON on arm64).
 * Element-wise results never depend on where an element sits in the array (tails shorter than
 * a vector go through the same vector code, zero-padded), so silu_mul over several rows at
 * once gives each row's bits: batched and one-at-a-time evaluation agree exactly.
 * AVX-512 machines run the AVX2 path: these ops are a few percent of the time and limited by
 * memory more than by vector width. Not here: matmuls (matmul.c), attention (the engine
 * composes it from these and kv.c). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <ork-kernels/kernels.h>

#include "kern_priv.h"

/* ---- scalar references and dispatch ---- */

/* out[i] = (x[i] * scale) * w[i], scale = 1 / sqrtf(mean + eps) in f32, where
 * mean = (sum of x[i]^2 accumulated in double, each square taken in f32) / n, rounded to f32.
 * Summing in double makes the result independent of n's size for practical purposes and
 * matches the GGML reference (which sums squares in double and multiplies by the scale).
 * out may alias x. */
static void rmsnorm_scalar(float *out, const float *x, const float *w, int64_t n, float eps)
{
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++)
        sum += (double)(x[i] * x[i]);
    float mean = (float)(sum / (double)n);
    float scale = 1.0f / sqrtf(mean + eps);
    for (int64_t i = 0; i < n; i++)
        out[i] = (x[i] * scale) * w[i];
}

void ork_rmsnorm(float *out, const float *x, const float *w, int64_t n, float eps)
{
    ork__kcur()->rmsnorm(out, x, w, n, eps);
}

/* In place: m = max x; x[i] = expf(x[i] - m); s = sum in double; x[i] *= (float)(1 / s).
 * -inf entries (masked positions) become 0; an all -inf row becomes NaN (no valid entry). */
static void softmax_scalar(float *x, int64_t n)
{
    float mx = x[0];
    for (int64_t i = 1; i < n; i++)
        if (x[i] > mx)
            mx = x[i];
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) {
        x[i] = expf(x[i] - mx);
        sum += (double)x[i];
    }
    float inv = (float)(1.0 / sum);
    for (int64_t i = 0; i < n; i++)
        x[i] *= inv;
}

void ork_softmax(float *x, int64_t n)
{
    if (n <= 0)
        return;
    ork__kcur()->softmax(x, n);
}

/* gate[i] = (g / (1 + expf(-g))) * up[i] with g = gate[i], all in f32. */
static void silu_mul_scalar(float *gate, const float *up, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        float g = gate[i];
        gate[i] = (g / (1.0f + expf(-g))) * up[i];
    }
}

void ork_silu_mul(float *gate, const float *up, int64_t n)
{
    ork__kcur()->silu_mul(gate, up, n);
}

/* Rotary embedding, all in f32. Pair i (0 <= i < n_rot/2) is rotated by the angle
 *   theta_i = pos * s^i,  s = powf(base, -2 / n_rot),
 * where s^i is formed by repeated f32 multiplication (theta_0 = (float)pos,
 * theta_{i+1} = theta_i * s) -- the GGML reference's order, so angles agree bit for bit --
 * then divided by the pair's frequency factor and multiplied by freq_scale (both skipped when
 * they are 1: x / 1 and 1 * x are exact), and cos/sin are cosf/sinf of the f32 angle. The pair
 * is (x[2i], x[2i+1]) for normal RoPE and (x[i], x[i + n_rot/2]) for NEOX;
 * (a, b) -> (a cos - b sin, a sin + b cos). Dimensions from n_rot to head_dim are unchanged. */
/* The cos/sin of the last (pos, n_rot, base, freq_factors values, freq_scale) rotated by this
 * thread: the engine rotates every head of a row (all query heads, then all key heads) at the
 * same position one after another, so all but the first reuse the table. Reusing computed
 * values gives the same bits as computing them again. Rows with more pairs bypass it. */
#define ROPE_TABLE_PAIRS 256
struct rope_table {
    int valid;
    int has_ff;
    int64_t pos, n_rot, half;
    float base, freq_scale;
    float ff[ROPE_TABLE_PAIRS];
    float c[ROPE_TABLE_PAIRS], s[ROPE_TABLE_PAIRS];
};
static _Thread_local struct rope_table tl_rope;

static int rope_table_hit(const struct rope_table *t, int64_t pos, int64_t n_rot, int64_t half,
                          float base, const float *ff, float freq_scale)
{
    return t->valid && t->pos == pos && t->n_rot == n_rot && t->half == half && !memcmp(&t->base, &base, sizeof base) &&
           !memcmp(&t->freq_scale, &freq_scale, sizeof freq_scale) && t->has_ff == (ff != NULL) &&
           (!ff || !memcmp(t->ff, ff, (size_t)half * sizeof(float)));
}

/* cos/sin of pair i's angle for i in [0, half) (order documented at ork_rope_ext). */
static void rope_angles(float *c, float *sn, int64_t half, int64_t n_rot, int64_t pos, float base,
                        const float *freq_factors, float freq_scale)
{
    float s = powf(base, -2.0f / (float)n_rot);
    float theta = (float)pos;
    for (int64_t i = 0; i < half; i++) {
        float th = freq_factors ? theta / freq_factors[i] : theta;
        th = freq_scale * th;
        c[i] = cosf(th);
        sn[i] = sinf(th);
        theta *= s;
    }
}

/* The rotation: its scalar reference (arm/ops_neon.c has the NEON one, the same bits: each
 * product rounded, then the subtraction or the addition; never fused). */
static void rope_rotate_scalar(float *x, int64_t half, int neox, const float *c, const float *sn)
{
    for (int64_t i = 0; i < half; i++) {
        int64_t i0 = neox ? i : 2 * i;
        int64_t i1 = neox ? i + half : 2 * i + 1;
        float a = x[i0], b = x[i1];
        x[i0] = a * c[i] - b * sn[i];
        x[i1] = a * sn[i] + b * c[i];
    }
}

void ork_rope_ext(float *x, int64_t head_dim, int64_t n_rot, int64_t pos, float base, int neox,
                  const float *freq_factors, float freq_scale)
{
    if (n_rot > head_dim)
        n_rot = head_dim;
    int64_t half = n_rot / 2;
    if (half <= 0)
        return;
    struct rope_table *t = &tl_rope;
    if (half > ROPE_TABLE_PAIRS) {
        /* rare (head_dim > 2 * ROPE_TABLE_PAIRS): one pair at a time, no table */
        float s = powf(base, -2.0f / (float)n_rot);
        float theta = (float)pos;
        for (int64_t i = 0; i < half; i++) {
            float th = freq_factors ? theta / freq_factors[i] : theta;
            th = freq_scale * th;
            float c = cosf(th), sn = sinf(th);
            int64_t i0 = neox ? i : 2 * i;
            int64_t i1 = neox ? i + half : 2 * i + 1;
            float a = x[i0], b = x[i1];
            x[i0] = a * c - b * sn;
            x[i1] = a * sn + b * c;
            theta *= s;
        }
        return;
    }
    if (!rope_table_hit(t, pos, n_rot, half, base, freq_factors, freq_scale)) {
        rope_angles(t->c, t->s, half, n_rot, pos, base, freq_factors, freq_scale);
        t->pos = pos;
        t->n_rot = n_rot;
        t->half = half;
        t->base = base;
        t->freq_scale = freq_scale;
        t->has_ff = freq_factors != NULL;
        if (freq_factors)
            memcpy(t->ff, freq_factors, (size_t)half * sizeof(float));
        t->valid = 1;
    }
    ork__kcur()->rope_rotate(x, half, neox, t->c, t->s);
}

void ork_rope(float *x, int64_t head_dim, int64_t n_rot, int64_t pos, float base, int neox)
{
    ork_rope_ext(x, head_dim, n_rot, pos, base, neox, NULL, 1.0f);
}

void ork__fill_ops_scalar(struct ork__kern *t)
{
    t->rmsnorm = rmsnorm_scalar;
    t->softmax = softmax_scalar;
    t->silu_mul = silu_mul_scalar;
    t->rope_rotate = rope_rotate_scalar;
}
