/* ops.c -- the element-wise and row-wise math of a transformer block: RMSNorm, softmax,
 * SiLU-gated product and rotary position embedding. Scalar, with the operation order written
 * out below because logits are compared with a reference engine to about 1e-5.
 * Not here: matmuls (matmul.c), attention (the engine composes it from these). */
#include <math.h>
#include <stdint.h>

#include <ork-kernels/kernels.h>

/* out[i] = (x[i] * scale) * w[i], scale = 1 / sqrtf(mean + eps) in f32, where
 * mean = (sum of x[i]^2 accumulated in double, each square taken in f32) / n, rounded to f32.
 * Summing in double makes the result independent of n's size for practical purposes and
 * matches the GGML reference (which sums squares in double and multiplies by the scale).
 * out may alias x. */
void ork_rmsnorm(float *out, const float *x, const float *w, int64_t n, float eps)
{
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++)
        sum += (double)(x[i] * x[i]);
    float mean = (float)(sum / (double)n);
    float scale = 1.0f / sqrtf(mean + eps);
    for (int64_t i = 0; i < n; i++)
        out[i] = (x[i] * scale) * w[i];
}

/* In place: m = max x; x[i] = expf(x[i] - m); s = sum in double; x[i] *= (float)(1 / s).
 * -inf entries (masked positions) become 0; an all -inf row becomes NaN (no valid entry). */
void ork_softmax(float *x, int64_t n)
{
    if (n <= 0)
        return;
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

/* gate[i] = (g / (1 + expf(-g))) * up[i] with g = gate[i], all in f32. */
void ork_silu_mul(float *gate, const float *up, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        float g = gate[i];
        gate[i] = (g / (1.0f + expf(-g))) * up[i];
    }
}

/* Rotary embedding, all in f32. Pair i (0 <= i < n_rot/2) is rotated by the angle
 *   theta_i = pos * s^i,  s = powf(base, -2 / n_rot),
 * where s^i is formed by repeated f32 multiplication (theta_0 = (float)pos,
 * theta_{i+1} = theta_i * s) -- the GGML reference's order, so angles agree bit for bit --
 * then divided by the pair's frequency factor and multiplied by freq_scale (both skipped when
 * they are 1: x / 1 and 1 * x are exact), and cos/sin are cosf/sinf of the f32 angle. The pair
 * is (x[2i], x[2i+1]) for normal RoPE and (x[i], x[i + n_rot/2]) for NEOX;
 * (a, b) -> (a cos - b sin, a sin + b cos). Dimensions from n_rot to head_dim are unchanged. */
void ork_rope_ext(float *x, int64_t head_dim, int64_t n_rot, int64_t pos, float base, int neox,
                  const float *freq_factors, float freq_scale)
{
    if (n_rot > head_dim)
        n_rot = head_dim;
    int64_t half = n_rot / 2;
    if (half <= 0)
        return;
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
}

void ork_rope(float *x, int64_t head_dim, int64_t n_rot, int64_t pos, float base, int neox)
{
    ork_rope_ext(x, head_dim, n_rot, pos, base, neox, NULL, 1.0f);
}
