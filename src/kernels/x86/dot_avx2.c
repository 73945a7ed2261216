/* x86/dot_avx2.c -- the AVX2 + FMA + F16C kernels of the f32-activation dots (every x86 path
 * runs them): the 32-lane f32 accumulator step, F16 and block dequantization (Q8_0, Q4_0,
 * Q4_K, Q6_K), the fused row dots of F16 / BF16 / Q8_0 / Q4_0 weights, y += a * v, and the F16
 * / BF16 rounding of activations. Same order and bits as dot.c's description (AVX2 and NEON
 * agree). Not here: the attention loops over several rows (kv_rows_*.c). */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <ork-kernels/kernels.h>

#include "x86_priv.h"
#include "qk_block.h"

#ifdef ORK_KERN_X86

/* ---- f32 accumulator, F16 dequantization ---- */

__attribute__((target("avx2,fma")))
static void acc_step_avx2(struct ork__dot_acc *acc, const float *a, const float *b, int64_t n)
{
    __m256 s0 = _mm256_loadu_ps(acc->lane + 0);
    __m256 s1 = _mm256_loadu_ps(acc->lane + 8);
    __m256 s2 = _mm256_loadu_ps(acc->lane + 16);
    __m256 s3 = _mm256_loadu_ps(acc->lane + 24);
    int64_t i = 0;
    for (; i + ORK_DOT_LANES <= n; i += ORK_DOT_LANES) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 0), _mm256_loadu_ps(b + i + 0), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
        s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
        s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
    }
    _mm256_storeu_ps(acc->lane + 0, s0);
    _mm256_storeu_ps(acc->lane + 8, s1);
    _mm256_storeu_ps(acc->lane + 16, s2);
    _mm256_storeu_ps(acc->lane + 24, s3);
    float t = acc->tail;
    for (; i < n; i++)
        t += a[i] * b[i];
    acc->tail = t;
}

__attribute__((target("avx2,fma,f16c")))
static void deq_f16_avx2(const uint8_t *p, float *dst, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 2 * i))));
    for (; i < n; i++)
        dst[i] = ork__f16le(p + 2 * i);
}

/* ---- block dequantization ----
 * Same formulas and the same f32 operation order as quant_ref.c (a multiply, then a subtract
 * where there is one; never fused), so every element gets the reference's bits. */

/* An f16 scale widened by vcvtph2ps (the value of ork_fp16_to_f32, without the call). */
__attribute__((target("avx2,f16c")))
static inline float f16_at_x86(const uint8_t *p)
{
    return _cvtsh_ss((unsigned short)(p[0] | (p[1] << 8)));
}

/* 8 int32 -> f32, times d, stored. */
__attribute__((target("avx2,f16c")))
static inline void st8_mul(float *y, __m256i q, __m256 d)
{
    _mm256_storeu_ps(y, _mm256_mul_ps(_mm256_cvtepi32_ps(q), d));
}

__attribute__((target("avx2,f16c")))
static void deq_q8_0_avx2(const uint8_t *b, float *y)
{
    __m256 d = _mm256_set1_ps(f16_at_x86(b));
    for (int i = 0; i < Q8_0_BLOCK; i += 8)
        st8_mul(y + i, _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(b + 2 + i))), d);
}

__attribute__((target("avx2,f16c")))
static void deq_q4_0_avx2(const uint8_t *b, float *y)
{
    __m256 d = _mm256_set1_ps(f16_at_x86(b));
    __m128i raw = _mm_loadu_si128((const __m128i *)(b + 2));
    __m128i lo = _mm_sub_epi8(_mm_and_si128(raw, _mm_set1_epi8(15)), _mm_set1_epi8(8));
    __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(raw, 4), _mm_set1_epi8(15)),
                              _mm_set1_epi8(8));
    st8_mul(y + 0, _mm256_cvtepi8_epi32(lo), d);
    st8_mul(y + 8, _mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8)), d);
    st8_mul(y + 16, _mm256_cvtepi8_epi32(hi), d);
    st8_mul(y + 24, _mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8)), d);
}

__attribute__((target("avx2,f16c")))
static void deq_q4_k_avx2(const uint8_t *b, float *y)
{
    float d = f16_at_x86(b), dmin = f16_at_x86(b + 2);
    const uint8_t *qs = b + Q4_K_QS;
    for (int p = 0; p < 4; p++) {
        float sc0, mn0, sc1, mn1;
        q4k_scale_min(b + Q4_K_SCALES, 2 * p, &sc0, &mn0);
        q4k_scale_min(b + Q4_K_SCALES, 2 * p + 1, &sc1, &mn1);
        __m256 d0 = _mm256_set1_ps(d * sc0), m0 = _mm256_set1_ps(dmin * mn0);
        __m256 d1 = _mm256_set1_ps(d * sc1), m1 = _mm256_set1_ps(dmin * mn1);
        for (int l = 0; l < 32; l += 8) {
            __m256i q = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(qs + 32 * p + l)));
            __m256 lo = _mm256_cvtepi32_ps(_mm256_and_si256(q, _mm256_set1_epi32(15)));
            __m256 hi = _mm256_cvtepi32_ps(_mm256_srli_epi32(q, 4));
            _mm256_storeu_ps(y + 64 * p + l, _mm256_sub_ps(_mm256_mul_ps(d0, lo), m0));
            _mm256_storeu_ps(y + 64 * p + 32 + l, _mm256_sub_ps(_mm256_mul_ps(d1, hi), m1));
        }
    }
}

__attribute__((target("avx2,f16c")))
static void deq_q6_k_avx2(const uint8_t *b, float *y)
{
    float d = f16_at_x86(b + Q6_K_D);
    const __m256i three = _mm256_set1_epi32(3), fifteen = _mm256_set1_epi32(15);
    const __m256i off = _mm256_set1_epi32(32);
    for (int h = 0; h < 2; h++) {
        const uint8_t *ql = b + 64 * h, *qh = b + Q6_K_QH + 32 * h;
        const int8_t *sc = (const int8_t *)(b + Q6_K_SC) + 8 * h;
        for (int l = 0; l < 32; l += 8) {
            int is = l / 16;
            __m256i a = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(ql + l)));
            __m256i c = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(ql + l + 32)));
            __m256i e = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(qh + l)));
            __m256i q0 = _mm256_or_si256(_mm256_and_si256(a, fifteen),
                                         _mm256_slli_epi32(_mm256_and_si256(e, three), 4));
            __m256i e2 = _mm256_and_si256(_mm256_srli_epi32(e, 2), three);
            __m256i e4 = _mm256_and_si256(_mm256_srli_epi32(e, 4), three);
            __m256i q1 = _mm256_or_si256(_mm256_and_si256(c, fifteen), _mm256_slli_epi32(e2, 4));
            __m256i q2 = _mm256_or_si256(_mm256_srli_epi32(a, 4), _mm256_slli_epi32(e4, 4));
            __m256i q3 = _mm256_or_si256(_mm256_srli_epi32(c, 4),
                                         _mm256_slli_epi32(_mm256_srli_epi32(e, 6), 4));
            float *o = y + 128 * h + l;
            st8_mul(o + 0, _mm256_sub_epi32(q0, off), _mm256_set1_ps(d * (float)sc[is + 0]));
            st8_mul(o + 32, _mm256_sub_epi32(q1, off), _mm256_set1_ps(d * (float)sc[is + 2]));
            st8_mul(o + 64, _mm256_sub_epi32(q2, off), _mm256_set1_ps(d * (float)sc[is + 4]));
            st8_mul(o + 96, _mm256_sub_epi32(q3, off), _mm256_set1_ps(d * (float)sc[is + 6]));
        }
    }
}

/* ---- fused row dots: dequantize in registers ----
 * F16, BF16, Q8_0 and Q4_0 rows are widened and scaled in registers and fed by FMA into the
 * lane each element would reach through ork_dequant_row + acc_step: the same values (exact
 * dequantization, q * d unfused) and the same operations, so the same bits, without the
 * round trip through a buffer. */

ORK_TGT_AVX2 static inline __m256 q8x8_avx2(__m128i q8, __m256 d)
{
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8)), d);
}

ORK_TGT_AVX2 static void dot_fused_avx2(uint32_t type, const uint8_t *row, const float *x, int64_t n,
                                   struct ork__dot_acc *acc)
{
    __m256 s[4];
    for (int g = 0; g < 4; g++)
        s[g] = _mm256_loadu_ps(acc->lane + 8 * g);
    int64_t i = 0;
    if (type == ORK_TYPE_F16 || type == ORK_TYPE_BF16) {
        for (; i + ORK_DOT_LANES <= n; i += ORK_DOT_LANES)
            for (int g = 0; g < 4; g++) {
                __m128i h = _mm_loadu_si128((const __m128i *)(row + 2 * (i + 8 * g)));
                __m256 w = type == ORK_TYPE_F16
                               ? _mm256_cvtph_ps(h)
                               : _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
                s[g] = _mm256_fmadd_ps(w, _mm256_loadu_ps(x + i + 8 * g), s[g]);
            }
    } else if (type == ORK_TYPE_Q8_0) {
        for (; i < n; i += Q8_0_BLOCK) {
            const uint8_t *b = row + (size_t)(i / Q8_0_BLOCK) * 34;
            __m256 d = _mm256_set1_ps(_cvtsh_ss((unsigned short)(b[0] | (b[1] << 8))));
            __m256i q = _mm256_loadu_si256((const __m256i *)(b + 2));
            __m128i lo = _mm256_castsi256_si128(q), hi = _mm256_extracti128_si256(q, 1);
            s[0] = _mm256_fmadd_ps(q8x8_avx2(lo, d), _mm256_loadu_ps(x + i), s[0]);
            s[1] = _mm256_fmadd_ps(q8x8_avx2(_mm_srli_si128(lo, 8), d), _mm256_loadu_ps(x + i + 8), s[1]);
            s[2] = _mm256_fmadd_ps(q8x8_avx2(hi, d), _mm256_loadu_ps(x + i + 16), s[2]);
            s[3] = _mm256_fmadd_ps(q8x8_avx2(_mm_srli_si128(hi, 8), d), _mm256_loadu_ps(x + i + 24), s[3]);
        }
    } else {
        for (; i < n; i += Q8_0_BLOCK) {
            const uint8_t *b = row + (size_t)(i / Q8_0_BLOCK) * 18;
            __m256 d = _mm256_set1_ps(_cvtsh_ss((unsigned short)(b[0] | (b[1] << 8))));
            __m128i raw = _mm_loadu_si128((const __m128i *)(b + 2));
            __m128i lo = _mm_sub_epi8(_mm_and_si128(raw, _mm_set1_epi8(15)), _mm_set1_epi8(8));
            __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(raw, 4), _mm_set1_epi8(15)),
                                      _mm_set1_epi8(8));
            s[0] = _mm256_fmadd_ps(q8x8_avx2(lo, d), _mm256_loadu_ps(x + i), s[0]);
            s[1] = _mm256_fmadd_ps(q8x8_avx2(_mm_srli_si128(lo, 8), d), _mm256_loadu_ps(x + i + 8), s[1]);
            s[2] = _mm256_fmadd_ps(q8x8_avx2(hi, d), _mm256_loadu_ps(x + i + 16), s[2]);
            s[3] = _mm256_fmadd_ps(q8x8_avx2(_mm_srli_si128(hi, 8), d), _mm256_loadu_ps(x + i + 24), s[3]);
        }
    }
    for (int g = 0; g < 4; g++)
        _mm256_storeu_ps(acc->lane + 8 * g, s[g]);
    float t = acc->tail;
    for (; i < n; i++) {    /* F16 / BF16 only: n % 32 elements in order */
        uint16_t h = (uint16_t)(row[2 * i] | (row[2 * i + 1] << 8));
        float w = type == ORK_TYPE_F16 ? ork_fp16_to_f32(h) : ork_bf16_to_f32(h);
        float pr = w * x[i];
        t += pr;
    }
    acc->tail = t;
}

/* ---- y += a * v ---- */

ORK_TGT_AVX2 static void mad_avx2(float *y, const uint8_t *v, uint32_t type, float a, int64_t n)
{
    __m256 va = _mm256_set1_ps(a);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 w = type == ORK_TYPE_F16
                       ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(v + 2 * i)))
                       : _mm256_loadu_ps((const float *)(const void *)v + i);
        _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), _mm256_mul_ps(va, w)));
    }
    ork__mad_tail(y, v, type, a, i, n);
}

/* ---- x rounded through a 16-bit float type (exact f32 values of f16 / bf16 numbers) ---- */

/* Eight values at a time: F16 through vcvtps2ph with round-to-nearest-even (what
 * ork_f32_to_fp16 computes, NaNs quieted with their payload's top bits kept); BF16 by the same
 * integer rounding as ork_f32_to_bf16 (u + 0x7fff + bit 16, NaNs get the quiet bit). */
__attribute__((target("avx2,fma,f16c")))
static int64_t round_act_avx2(uint32_t type, const float *x, float *out, int64_t n)
{
    int64_t i = 0;
    if (type == ORK_TYPE_F16) {
        for (; i + 8 <= n; i += 8) {
            __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
            _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
        }
        return i;
    }
    const __m256i abs = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
    const __m256i one = _mm256_set1_epi32(1), half = _mm256_set1_epi32(0x7fff);
    const __m256i quiet = _mm256_set1_epi32(0x00400000), top = _mm256_set1_epi32((int)0xffff0000u);
    for (; i + 8 <= n; i += 8) {
        __m256i u = _mm256_castps_si256(_mm256_loadu_ps(x + i));
        __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs), inf);
        __m256i r = _mm256_add_epi32(
            u, _mm256_add_epi32(half, _mm256_and_si256(_mm256_srli_epi32(u, 16), one)));
        r = _mm256_blendv_epi8(r, _mm256_or_si256(u, quiet), nan);
        _mm256_storeu_ps(out + i, _mm256_castsi256_ps(_mm256_and_si256(r, top)));
    }
    return i;
}

__attribute__((target("avx2,f16c")))
static int64_t to_fp16_f16c(const float *x, uint16_t *dst, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(void *)(dst + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
    return i;
}

void ork__fill_dot_avx2(struct ork__kern *t)
{
    t->acc_step = acc_step_avx2;
    t->acc_end = ork__acc_end32;
    t->deq_f16 = deq_f16_avx2;
    t->mad = mad_avx2;
    t->round_act = round_act_avx2;
    t->to_fp16 = to_fp16_f16c;
    t->t[ORK__KT_Q8_0].deq_block = deq_q8_0_avx2;
    t->t[ORK__KT_Q4_0].deq_block = deq_q4_0_avx2;
    t->t[ORK__KT_Q4_K].deq_block = deq_q4_k_avx2;
    t->t[ORK__KT_Q6_K].deq_block = deq_q6_k_avx2;
    for (int k = ORK__KT_F16; k <= ORK__KT_Q4_0; k++)      /* F16, BF16, Q8_0, Q4_0 */
        t->t[k].dot_fused = dot_fused_avx2;
}
#endif
