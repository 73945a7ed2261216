/* x86/quant_act_avx512.c -- the AVX-512 activation quantizers (the avx512vnni path): Q8_0
 * blocks, Q8_0 blocks with their quant sums in one pass (the rows16 X form), Q8_K blocks; bit
 * for bit the scalar ones of quant_act.c. */
#include <stdint.h>
#include <string.h>

#include "x86_priv.h"
#include "qk_block.h"

#ifdef ORK_KERN_X86

#define TGT_AVX512 \
    __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi")))

TGT_AVX512 static inline __m512i round_away_512(__m512 v)
{
    const __m512i sign = _mm512_set1_epi32((int)0x80000000u);
    __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __m512 f = _mm512_abs_ps(_mm512_sub_ps(v, t));
    __mmask16 up = _mm512_cmp_ps_mask(f, _mm512_set1_ps(0.5f), _CMP_GE_OQ);
    __m512 one = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(_mm512_set1_ps(1.0f)),
                                                     _mm512_and_si512(sign, _mm512_castps_si512(v))));
    return _mm512_cvttps_epi32(_mm512_mask_add_ps(t, up, t, one));
}

TGT_AVX512 static inline float amax_512(const float *x, int n)
{
    __m512 m = _mm512_setzero_ps();
    for (int i = 0; i < n; i += 16)
        m = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(x + i)), m);
    return _mm512_reduce_max_ps(m);
}

/* One Q8_0 block of xb: its scale d (amax / 127, before any f16 rounding) returned, its 32
 * quants roundf(x * (1 / d)) as int32 in *q0 (elements 0..15) and *q1 (16..31). */
TGT_AVX512 static inline float q8_0_block_512(const float *xb, __m512i *q0, __m512i *q1)
{
    float d = amax_512(xb, Q8_0_BLOCK) / Q8_QMAX;
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    __m512 vid = _mm512_set1_ps(id);
    *q0 = round_away_512(_mm512_mul_ps(_mm512_loadu_ps(xb), vid));
    *q1 = round_away_512(_mm512_mul_ps(_mm512_loadu_ps(xb + 16), vid));
    return d;
}

TGT_AVX512 static void quant_q8_0_512(const float *x, uint8_t *dst, int64_t nb)
{
    for (int64_t b = 0; b < nb; b++) {
        uint8_t *ob = dst + b * Q8_0_BYTES;
        __m512i q0, q1;
        put_f16(ob, q8_0_block_512(x + b * Q8_0_BLOCK, &q0, &q1));
        _mm_storeu_si128((__m128i *)(ob + 2), _mm512_cvtepi32_epi8(q0));
        _mm_storeu_si128((__m128i *)(ob + 18), _mm512_cvtepi32_epi8(q1));
    }
}

/* quant_q8_0_512's blocks with the scale read back through f16 (F16C: the bits of
 * ork_f32_to_fp16 / ork_fp16_to_f32) and each block's quant sum, in one pass. */
TGT_AVX512 static void quant_q8_0_sums_512(const float *x, int64_t nb, uint8_t *q, size_t qstride,
                                           float *d, int32_t *sum)
{
    for (int64_t b = 0; b < nb; b++) {
        uint8_t *ob = q + (size_t)b * qstride;
        __m512i q0, q1;
        float db = q8_0_block_512(x + b * Q8_0_BLOCK, &q0, &q1);
        d[b] = _cvtsh_ss(_cvtss_sh(db, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        _mm_storeu_si128((__m128i *)(void *)ob, _mm512_cvtepi32_epi8(q0));
        _mm_storeu_si128((__m128i *)(void *)(ob + 16), _mm512_cvtepi32_epi8(q1));
        sum[b] = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
    }
}

TGT_AVX512 static void quant_q8_k_512(const float *x, uint8_t *dst, int64_t nb)
{
    for (int64_t b = 0; b < nb; b++) {
        const float *xb = x + b * QK_K;
        uint8_t *ob = dst + b * ORK_Q8_K_BYTES;
        float d = amax_512(xb, QK_K) / Q8_QMAX;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        memcpy(ob, &d, sizeof d);
        __m512 vid = _mm512_set1_ps(id);
        for (int g = 0; g < QK_K / 16; g++) {
            __m512i q = round_away_512(_mm512_mul_ps(_mm512_loadu_ps(xb + 16 * g), vid));
            _mm_storeu_si128((__m128i *)(ob + ORK_Q8_K_Q + 16 * g), _mm512_cvtepi32_epi8(q));
            int16_t s = (int16_t)_mm512_reduce_add_epi32(q);
            memcpy(ob + ORK_Q8_K_BSUMS + 2 * g, &s, sizeof s);
        }
    }
}

void ork__fill_quant_act_avx512(struct ork__kern *t)
{
    t->quant_q8_0 = quant_q8_0_512;
    t->quant_q8_0_sums = quant_q8_0_sums_512;
    t->quant_q8_k = quant_q8_k_512;
}
#endif
