/* x86/ops_avx2.c -- the AVX2 + FMA transformer ops (every x86 path; AVX-512 machines run these
 * too: the ops are a few percent of the time and limited by memory more than by vector width):
 * RMSNorm, softmax and the SiLU-gated product with the vector exp of vexp.h. Their differences
 * from the scalar references are ops.c's. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "x86_priv.h"
#include "vexp.h"

#ifdef ORK_KERN_X86

#define TGT_OPS __attribute__((target("avx2,fma")))

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

void ork__fill_ops_avx2(struct ork__kern *t)
{
    t->rmsnorm = rmsnorm_avx2;
    t->softmax = softmax_avx2;
    t->silu_mul = silu_mul_avx2;
}
#endif
