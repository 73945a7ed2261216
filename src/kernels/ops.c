/* ops.c -- the element-wise and row-wise math of a transformer block: RMSNorm, softmax,
 * SiLU-gated product and rotary position embedding. Each has a scalar reference, with the
 * operation order written out below because logits are compared with a reference engine to
 * about 1e-5, and a SIMD path (AVX2 + FMA on x86-64 CPUs that have it, chosen once at run time
 * through ork__kisa(); NEON on arm64) used unless the path is "scalar" (ORK_DEBUG=scalar or
 * ork_kernels_set_path). Differences of the SIMD paths from the scalar reference, bounded by
 * tests/unit/test_kernels_ops.c:
 *   rmsnorm   the squares are summed in double in another order: at most 1 ulp per element;
 *   softmax   expf replaced by a vector exp (below: a few ulp from expf for x >= -86, 0 for
 *             x < -86 where e^x < 2^-124): relative error <= 1e-6 per element, or absolute
 *             <= 2^-124;
 *   silu_mul  the same vector exp: relative error <= 1e-6, or absolute <= 2^-124;
 *   rope      the same bits on every path (cos/sin of a row are kept and reused, see below).
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

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define OPS_X86 1
#include <immintrin.h>
#define TGT_OPS __attribute__((target("avx2,fma")))
#elif defined(__aarch64__) && defined(__ARM_NEON)
#define OPS_NEON 1
#include <arm_neon.h>
#endif

static int use_simd(void)
{
    return ork__kisa() != KISA_SCALAR;
}

/* ---- vector exp ----
 * exp(x) = 2^n * e^r with n = round(x / ln 2), r = x - n ln 2 (ln 2 split in a high part with
 * trailing zero bits, so n * LN2_HI is exact for |n| <= 2^8, and a low part), |r| <= ln 2 / 2;
 * e^r by its Taylor polynomial of degree 7 (truncation error r^8/8! < 6e-9 relative, under
 * 2^-24); 2^n built in the exponent field as 2^(n-1) * 2 so that n = 128 does not overflow
 * the field. Inputs below EXP_LO give 0 (the true value is < 2^-124), above EXP_HI +inf,
 * NaN stays NaN. */
#define EXP_LOG2E 1.44269504088896341f
#define EXP_LN2_HI 0.693145751953125f           /* 0x3f317200: ln 2 rounded to 16 bits */
#define EXP_LN2_LO 1.42860682030941723e-6f      /* ln 2 - EXP_LN2_HI */
#define EXP_HI 88.72283905206835f               /* ln(FLT_MAX) */
#define EXP_LO (-86.0f)                         /* n >= -124: 2^(n-1) stays a normal float */
#define EXP_C2 (1.0f / 2.0f)                    /* 1/k!, the Taylor coefficients of e^r */
#define EXP_C3 (1.0f / 6.0f)
#define EXP_C4 (1.0f / 24.0f)
#define EXP_C5 (1.0f / 120.0f)
#define EXP_C6 (1.0f / 720.0f)
#define EXP_C7 (1.0f / 5040.0f)
#define F32_EXP_BIAS 127
#define F32_MANT_BITS 23

#ifdef OPS_X86
TGT_OPS static inline __m256 exp8(__m256 x)
{
    __m256 xc = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(EXP_LO)), _mm256_set1_ps(EXP_HI));
    __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(EXP_LOG2E)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(EXP_LN2_HI), xc);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(EXP_LN2_LO), r);
    __m256 p = _mm256_set1_ps(EXP_C7);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_C6));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_C5));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_C4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_C3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_C2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    __m256i e = _mm256_slli_epi32(
        _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(F32_EXP_BIAS - 1)),
        F32_MANT_BITS);
    __m256 y = _mm256_mul_ps(_mm256_mul_ps(p, _mm256_castsi256_ps(e)), _mm256_set1_ps(2.0f));
    y = _mm256_blendv_ps(y, _mm256_setzero_ps(),
                         _mm256_cmp_ps(x, _mm256_set1_ps(EXP_LO), _CMP_LT_OQ));
    y = _mm256_blendv_ps(y, _mm256_set1_ps(INFINITY),
                         _mm256_cmp_ps(x, _mm256_set1_ps(EXP_HI), _CMP_GT_OQ));
    return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

/* Sum of the 8 lanes of two f64x4 accumulators. */
TGT_OPS static inline double hsum_pd2(__m256d a, __m256d b)
{
    __m256d s = _mm256_add_pd(a, b);
    __m128d h = _mm_add_pd(_mm256_castpd256_pd128(s), _mm256_extractf128_pd(s, 1));
    return _mm_cvtsd_f64(h) + _mm_cvtsd_f64(_mm_unpackhi_pd(h, h));
}

TGT_OPS static void rmsnorm_avx2(float *out, const float *x, const float *w, int64_t n, float eps)
{
    __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        __m256 sq = _mm256_mul_ps(v, v);
        s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(sq)));
        s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(sq, 1)));
    }
    double sum = hsum_pd2(s0, s1);
    for (int64_t k = i; k < n; k++)
        sum += (double)(x[k] * x[k]);
    float mean = (float)(sum / (double)n);
    float scale = 1.0f / sqrtf(mean + eps);
    __m256 vs = _mm256_set1_ps(scale);
    for (i = 0; i + 8 <= n; i += 8)
        _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), vs),
                                                _mm256_loadu_ps(w + i)));
    for (; i < n; i++)
        out[i] = (x[i] * scale) * w[i];
}

TGT_OPS static void softmax_avx2(float *x, int64_t n)
{
    int64_t i = 0;
    __m256 vm = _mm256_set1_ps(-INFINITY);
    for (; i + 8 <= n; i += 8)
        vm = _mm256_max_ps(_mm256_loadu_ps(x + i), vm);
    float m8[8];
    _mm256_storeu_ps(m8, vm);
    float mx = m8[0];
    for (int k = 1; k < 8; k++)
        if (m8[k] > mx)
            mx = m8[k];
    for (; i < n; i++)
        if (x[i] > mx)
            mx = x[i];
    __m256 vmx = _mm256_set1_ps(mx);
    __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    for (i = 0; i + 8 <= n; i += 8) {
        __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vmx));
        _mm256_storeu_ps(x + i, e);
        s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
        s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
    }
    double sum = hsum_pd2(s0, s1);
    if (i < n) {    /* the tail through the same vector exp, summed in order */
        float t8[8] = { 0 };
        memcpy(t8, x + i, (size_t)(n - i) * sizeof(float));
        _mm256_storeu_ps(t8, exp8(_mm256_sub_ps(_mm256_loadu_ps(t8), vmx)));
        memcpy(x + i, t8, (size_t)(n - i) * sizeof(float));
        for (; i < n; i++)
            sum += (double)x[i];
    }
    float inv = (float)(1.0 / sum);
    __m256 vi = _mm256_set1_ps(inv);
    for (i = 0; i + 8 <= n; i += 8)
        _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), vi));
    for (; i < n; i++)
        x[i] *= inv;
}

TGT_OPS static void silu_mul_avx2(float *gate, const float *up, int64_t n)
{
    int64_t i = 0;
    const __m256 one = _mm256_set1_ps(1.0f);
    for (; i + 8 <= n; i += 8) {
        __m256 g = _mm256_loadu_ps(gate + i);
        __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), g));
        __m256 s = _mm256_div_ps(g, _mm256_add_ps(one, e));
        _mm256_storeu_ps(gate + i, _mm256_mul_ps(s, _mm256_loadu_ps(up + i)));
    }
    if (i < n) {    /* the tail through the same vector code (results independent of i) */
        float g8[8] = { 0 }, u8[8] = { 0 };
        memcpy(g8, gate + i, (size_t)(n - i) * sizeof(float));
        memcpy(u8, up + i, (size_t)(n - i) * sizeof(float));
        silu_mul_avx2(g8, u8, 8);
        memcpy(gate + i, g8, (size_t)(n - i) * sizeof(float));
    }
}
#endif

#ifdef OPS_NEON
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
#endif

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
#if defined(OPS_X86)
    if (use_simd()) {
        rmsnorm_avx2(out, x, w, n, eps);
        return;
    }
#elif defined(OPS_NEON)
    if (use_simd()) {
        rmsnorm_neon(out, x, w, n, eps);
        return;
    }
#endif
    rmsnorm_scalar(out, x, w, n, eps);
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
#if defined(OPS_X86)
    if (use_simd()) {
        softmax_avx2(x, n);
        return;
    }
#elif defined(OPS_NEON)
    if (use_simd()) {
        softmax_neon(x, n);
        return;
    }
#endif
    softmax_scalar(x, n);
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
#if defined(OPS_X86)
    if (use_simd()) {
        silu_mul_avx2(gate, up, n);
        return;
    }
#elif defined(OPS_NEON)
    if (use_simd()) {
        silu_mul_neon(gate, up, n);
        return;
    }
#endif
    silu_mul_scalar(gate, up, n);
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

static void rope_rotate(float *x, int64_t half, int neox, const float *c, const float *sn)
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
    rope_rotate(x, half, neox, t->c, t->s);
}

void ork_rope(float *x, int64_t head_dim, int64_t n_rot, int64_t pos, float base, int neox)
{
    ork_rope_ext(x, head_dim, n_rot, pos, base, neox, NULL, 1.0f);
}
