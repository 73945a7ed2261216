/* x86/quant_act_avx2.c -- the AVX2 activation quantizers (the avx2 and avxvnni paths): Q8_0
 * blocks, Q8_0 blocks with their quant sums (the rows16 X form), Q8_K blocks; bit for bit the
 * scalar ones of quant_act.c. */
#include <stdint.h>
#include <string.h>

#include "x86_priv.h"
#include "qk_block.h"

#ifdef ORK_KERN_X86

#define TGT_AVX2 ORK_TGT_AVX2

/* roundf (half away from zero) of v, exactly: t = trunc(v) and v - t are exact, so adding
 * sign(v) when |v - t| >= 0.5 gives the rounded value. Then to int32 (exact, in range). */
TGT_AVX2 static inline __m256i round_away_avx2(__m256 v)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __m256 f = _mm256_andnot_ps(sign, _mm256_sub_ps(v, t));
    __m256 one = _mm256_or_ps(_mm256_set1_ps(1.0f), _mm256_and_ps(sign, v));
    __m256 up = _mm256_and_ps(_mm256_cmp_ps(f, _mm256_set1_ps(0.5f), _CMP_GE_OQ), one);
    return _mm256_cvttps_epi32(_mm256_add_ps(t, up));
}

/* Largest |x| of n (multiple of 8) values; NaN elements are skipped like the scalar's
 * "a > amax" test (vmaxps returns its second operand when either is NaN). */
TGT_AVX2 static inline float amax_avx2(const float *x, int n)
{
    const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    __m256 m = _mm256_setzero_ps();
    for (int i = 0; i < n; i += 8)
        m = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x + i), abs_mask), m);
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_movehdup_ps(h));
    return _mm_cvtss_f32(h);
}

/* 32 values times id, rounded, as int8 in element order. */
TGT_AVX2 static inline __m256i q32_avx2(const float *x, float id)
{
    __m256 vid = _mm256_set1_ps(id);
    __m256i q[4];
    for (int i = 0; i < 4; i++)
        q[i] = round_away_avx2(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * i), vid));
    /* keep the low byte of each int32 (the truncating conversion of the scalar cast) */
    const __m256i low = _mm256_set1_epi32(0xff);
    for (int i = 0; i < 4; i++)
        q[i] = _mm256_and_si256(q[i], low);
    __m256i a = _mm256_packus_epi32(q[0], q[1]), b = _mm256_packus_epi32(q[2], q[3]);
    __m256i c = _mm256_packus_epi16(a, b);
    /* packs work per 128-bit lane: restore element order (dwords 0 4 1 5 2 6 3 7) */
    return _mm256_permutevar8x32_epi32(c, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

TGT_AVX2 static void quant_q8_0_avx2(const float *x, uint8_t *dst, int64_t nb)
{
    for (int64_t b = 0; b < nb; b++) {
        const float *xb = x + b * Q8_0_BLOCK;
        uint8_t *ob = dst + b * Q8_0_BYTES;
        float d = amax_avx2(xb, Q8_0_BLOCK) / Q8_QMAX;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        put_f16(ob, d);
        _mm256_storeu_si256((__m256i *)(ob + 2), q32_avx2(xb, id));
    }
}

/* quant_q8_0_avx2's blocks with the scale read back through f16 and each block's quant sum
 * (the AVX2 form of quant_q8_0_sums_512). */
TGT_AVX2 static void quant_q8_0_sums_avx2(const float *x, int64_t nb, uint8_t *q, size_t qstride,
                                          float *d, int32_t *sum)
{
    const __m256i ones8 = _mm256_set1_epi8(1);
    const __m256i ones16 = _mm256_set1_epi16(1);
    for (int64_t b = 0; b < nb; b++) {
        const float *xb = x + b * Q8_0_BLOCK;
        float db = amax_avx2(xb, Q8_0_BLOCK) / Q8_QMAX;
        float id = db != 0.0f ? 1.0f / db : 0.0f;
        d[b] = _cvtsh_ss(_cvtss_sh(db, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        __m256i v = q32_avx2(xb, id);
        _mm256_storeu_si256((__m256i *)(void *)(q + (size_t)b * qstride), v);
        /* 1 x q pairs (u8 x s8: no saturation), then pairs of those into 8 int32 */
        __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, v), ones16);
        __m128i h = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
        h = _mm_add_epi32(h, _mm_shuffle_epi32(h, _MM_SHUFFLE(1, 0, 3, 2)));
        h = _mm_add_epi32(h, _mm_shuffle_epi32(h, _MM_SHUFFLE(2, 3, 0, 1)));
        sum[b] = _mm_cvtsi128_si32(h);
    }
}

TGT_AVX2 static void quant_q8_k_avx2(const float *x, uint8_t *dst, int64_t nb)
{
    for (int64_t b = 0; b < nb; b++) {
        const float *xb = x + b * QK_K;
        uint8_t *ob = dst + b * ORK_Q8_K_BYTES;
        float d = amax_avx2(xb, QK_K) / Q8_QMAX;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        memcpy(ob, &d, sizeof d);
        for (int c = 0; c < QK_K / 32; c++) {
            __m256i q = q32_avx2(xb + 32 * c, id);
            _mm256_storeu_si256((__m256i *)(ob + ORK_Q8_K_Q + 32 * c), q);
            /* group sums of 16: widen to int16, add pairs, fold */
            __m256i s16 = _mm256_maddubs_epi16(_mm256_set1_epi8(1), q);
            __m256i s32 = _mm256_madd_epi16(s16, _mm256_set1_epi16(1));
            __m128i lo = _mm256_castsi256_si128(s32), hi = _mm256_extracti128_si256(s32, 1);
            lo = _mm_hadd_epi32(lo, hi);                /* 2+2 quads of 4 */
            lo = _mm_hadd_epi32(lo, lo);                /* group 2c, 2c + 1 */
            int16_t g0 = (int16_t)_mm_cvtsi128_si32(lo);
            int16_t g1 = (int16_t)_mm_extract_epi32(lo, 1);
            memcpy(ob + ORK_Q8_K_BSUMS + 4 * c, &g0, 2);
            memcpy(ob + ORK_Q8_K_BSUMS + 4 * c + 2, &g1, 2);
        }
    }
}

void ork__fill_quant_act_avx2(struct ork__kern *t)
{
    t->quant_q8_0 = quant_q8_0_avx2;
    t->quant_q8_0_sums = quant_q8_0_sums_avx2;
    t->quant_q8_k = quant_q8_k_avx2;
}
#endif
