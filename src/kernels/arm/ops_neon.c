/* arm/ops_neon.c -- the NEON transformer ops (both AArch64 paths): RMSNorm, softmax and the
 * SiLU-gated product with the vector exp of vexp.h, and RoPE's rotation. Their differences
 * from the scalar references are ops.c's (the rotation has the scalar bits). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kern_priv.h"
#include "vexp.h"

#ifdef ORK_KERN_ARM
#include <arm_neon.h>

static inline float32x4_t exp4(float32x4_t x)
{
    float32x4_t xc = vminq_f32(vmaxq_f32(x, vdupq_n_f32(EXP_LO)), vdupq_n_f32(EXP_HI));
    float32x4_t n = vrndnq_f32(vmulq_f32(xc, vdupq_n_f32(EXP_LOG2E)));
    float32x4_t r = vfmsq_f32(xc, n, vdupq_n_f32(EXP_LN2_HI));
    r = vfmsq_f32(r, n, vdupq_n_f32(EXP_LN2_LO));
    float32x4_t p = vdupq_n_f32(EXP_C7);
    p = vfmaq_f32(vdupq_n_f32(EXP_C6), p, r);
    p = vfmaq_f32(vdupq_n_f32(EXP_C5), p, r);
    p = vfmaq_f32(vdupq_n_f32(EXP_C4), p, r);
    p = vfmaq_f32(vdupq_n_f32(EXP_C3), p, r);
    p = vfmaq_f32(vdupq_n_f32(EXP_C2), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
    int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(F32_EXP_BIAS - 1)),
                              F32_MANT_BITS);
    float32x4_t y = vmulq_f32(vmulq_f32(p, vreinterpretq_f32_s32(e)), vdupq_n_f32(2.0f));
    y = vbslq_f32(vcltq_f32(x, vdupq_n_f32(EXP_LO)), vdupq_n_f32(0.0f), y);
    y = vbslq_f32(vcgtq_f32(x, vdupq_n_f32(EXP_HI)), vdupq_n_f32(INFINITY), y);
    return vbslq_f32(vceqq_f32(x, x), y, x);
}

static void rmsnorm_neon(float *out, const float *x, const float *w, int64_t n, float eps)
{
    float64x2_t s0 = vdupq_n_f64(0.0), s1 = vdupq_n_f64(0.0);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        float32x4_t v = vld1q_f32(x + i);
        float32x4_t sq = vmulq_f32(v, v);
        s0 = vaddq_f64(s0, vcvt_f64_f32(vget_low_f32(sq)));
        s1 = vaddq_f64(s1, vcvt_high_f64_f32(sq));
    }
    double sum = vaddvq_f64(vaddq_f64(s0, s1));
    for (int64_t k = i; k < n; k++)
        sum += (double)(x[k] * x[k]);
    float mean = (float)(sum / (double)n);
    float scale = 1.0f / sqrtf(mean + eps);
    for (i = 0; i + 4 <= n; i += 4)
        vst1q_f32(out + i, vmulq_f32(vmulq_n_f32(vld1q_f32(x + i), scale), vld1q_f32(w + i)));
    for (; i < n; i++)
        out[i] = (x[i] * scale) * w[i];
}

static void softmax_neon(float *x, int64_t n)
{
    int64_t i = 0;
    float32x4_t vm = vdupq_n_f32(-INFINITY);
    for (; i + 4 <= n; i += 4) {
        float32x4_t v = vld1q_f32(x + i);
        vm = vbslq_f32(vcgtq_f32(v, vm), v, vm);        /* NaN ignored like the scalar '>' */
    }
    float mx = vmaxvq_f32(vm);
    for (; i < n; i++)
        if (x[i] > mx)
            mx = x[i];
    float32x4_t vmx = vdupq_n_f32(mx);
    float64x2_t s0 = vdupq_n_f64(0.0), s1 = vdupq_n_f64(0.0);
    for (i = 0; i + 4 <= n; i += 4) {
        float32x4_t e = exp4(vsubq_f32(vld1q_f32(x + i), vmx));
        vst1q_f32(x + i, e);
        s0 = vaddq_f64(s0, vcvt_f64_f32(vget_low_f32(e)));
        s1 = vaddq_f64(s1, vcvt_high_f64_f32(e));
    }
    double sum = vaddvq_f64(vaddq_f64(s0, s1));
    if (i < n) {    /* the tail through the same vector exp, summed in order */
        float t4[4] = { 0 };
        memcpy(t4, x + i, (size_t)(n - i) * sizeof(float));
        vst1q_f32(t4, exp4(vsubq_f32(vld1q_f32(t4), vmx)));
        memcpy(x + i, t4, (size_t)(n - i) * sizeof(float));
        for (; i < n; i++)
            sum += (double)x[i];
    }
    float inv = (float)(1.0 / sum);
    for (i = 0; i + 4 <= n; i += 4)
        vst1q_f32(x + i, vmulq_n_f32(vld1q_f32(x + i), inv));
    for (; i < n; i++)
        x[i] *= inv;
}

static void silu_mul_neon(float *gate, const float *up, int64_t n)
{
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        float32x4_t g = vld1q_f32(gate + i);
        float32x4_t s = vdivq_f32(g, vaddq_f32(vdupq_n_f32(1.0f), exp4(vnegq_f32(g))));
        vst1q_f32(gate + i, vmulq_f32(s, vld1q_f32(up + i)));
    }
    if (i < n) {    /* the tail through the same vector code (results independent of i) */
        float g4[4] = { 0 }, u4[4] = { 0 };
        memcpy(g4, gate + i, (size_t)(n - i) * sizeof(float));
        memcpy(u4, up + i, (size_t)(n - i) * sizeof(float));
        silu_mul_neon(g4, u4, 4);
        memcpy(gate + i, g4, (size_t)(n - i) * sizeof(float));
    }
}

/* RoPE's rotation (ops.c rope_rotate_scalar: (a, b) -> (a c - b s, a s + b c), each product
 * rounded, then the subtraction or the addition; fp-contract is off: C11), with the scalar
 * loop's bits. NEOX pairs (x[i], x[i + half]): four pairs from two plain loads. Normal pairs
 * (x[2i], x[2i + 1]) stay interleaved (`ld2` / `st2` are several micro-ops each on the A76):
 * with x = (a, b), rev64 x = (b, a), C = (c, c), S = (-s, s) (zip1 / zip2 of c and of -s, s),
 * x * C + (rev64 x) * S = (ac + (-bs), bc + as): x - y is x + (-y) and a product's negation is
 * exact, so both lanes are the scalar values bit for bit. */
static inline __attribute__((always_inline)) void rope_rot(float *x, int64_t half, const int neox,
                                                            const float *c, const float *sn)
{
    int64_t i = 0;
    for (; i + 4 <= half; i += 4) {
        const float32x4_t cv = vld1q_f32(c + i), sv = vld1q_f32(sn + i);
        if (neox) {
            const float32x4_t a = vld1q_f32(x + i), b = vld1q_f32(x + i + half);
            vst1q_f32(x + i, vsubq_f32(vmulq_f32(a, cv), vmulq_f32(b, sv)));
            vst1q_f32(x + i + half, vaddq_f32(vmulq_f32(a, sv), vmulq_f32(b, cv)));
        } else {
            const float32x4_t ns = vnegq_f32(sv);
            const float32x4_t c01 = vzip1q_f32(cv, cv), c23 = vzip2q_f32(cv, cv);
            const float32x4_t s01 = vzip1q_f32(ns, sv), s23 = vzip2q_f32(ns, sv);
            const float32x4_t x01 = vld1q_f32(x + 2 * i), x23 = vld1q_f32(x + 2 * i + 4);
            vst1q_f32(x + 2 * i,
                      vaddq_f32(vmulq_f32(x01, c01), vmulq_f32(vrev64q_f32(x01), s01)));
            vst1q_f32(x + 2 * i + 4,
                      vaddq_f32(vmulq_f32(x23, c23), vmulq_f32(vrev64q_f32(x23), s23)));
        }
    }
    for (; i < half; i++) {
        const int64_t i0 = neox ? i : 2 * i, i1 = neox ? i + half : 2 * i + 1;
        const float a = x[i0], b = x[i1];
        x[i0] = a * c[i] - b * sn[i];
        x[i1] = a * sn[i] + b * c[i];
    }
}

/* One function per pair layout, each with its own loop (tools/a76_cost.sh reads them). */
static __attribute__((noinline, noclone)) void rope_neox_neon(float *x, int64_t half,
                                                              const float *c, const float *sn)
{
    rope_rot(x, half, 1, c, sn);
}

static __attribute__((noinline, noclone)) void rope_norm_neon(float *x, int64_t half,
                                                              const float *c, const float *sn)
{
    rope_rot(x, half, 0, c, sn);
}

static void rope_rotate_neon(float *x, int64_t half, int neox, const float *c, const float *sn)
{
    (neox ? rope_neox_neon : rope_norm_neon)(x, half, c, sn);
}

void ork__fill_ops_neon(struct ork__kern *t)
{
    t->rmsnorm = rmsnorm_neon;
    t->softmax = softmax_neon;
    t->silu_mul = silu_mul_neon;
    t->rope_rotate = rope_rotate_neon;
}
#endif
