/* x86/qdot_avx2.c -- the 256-bit integer dots of quantized weights with quantized activations
 * (qdot.c has the arithmetic): Q8_0 / Q4_0 x Q8_0 with vpmaddubsw + vpmaddwd (avx2) or
 * vpdpbusd (avxvnni), one row or four X rows at a time, and Q4_K / Q6_K x Q8_K (every x86
 * path). Same partials and f32 operations as the scalar path, so the same bits. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <ork-kernels/kernels.h>

#include "x86_priv.h"
#include "qk_block.h"

#ifdef ORK_KERN_X86

#define TGT_AVX2 __attribute__((target("avx2,fma,f16c")))
#define TGT_AVXVNNI __attribute__((target("avx2,fma,f16c,avxvnni")))

TGT_AVX2 static inline float f16v_x86(const uint8_t *p)
{
    return _cvtsh_ss((unsigned short)(p[0] | (p[1] << 8)));
}


/* Partials p_j of one block: |w| (u8) times sign(w) * x (s8). vpmaddubsw cannot saturate:
 * |w| <= 128 and |x| <= 127, so a pair is at most 2 * 128 * 127 < 2^15. */
TGT_AVX2 static inline __m256i partials_avx2(__m256i w, __m256i x)
{
    __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
    return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
}

TGT_AVXVNNI static inline __m256i partials_avxvnni(__m256i w, __m256i x)
{
    return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), _mm256_sign_epi8(w, w),
                                   _mm256_sign_epi8(x, w));
}

#define Q8_BLOCKS_AVX(NAME, TGT, PARTIALS)                                                     \
    TGT void NAME(uint32_t type, const uint8_t *w, const uint8_t *xq, int64_t nb,      \
                         struct q8_acc *acc)                                                   \
    {                                                                                          \
        const size_t wbytes = type == ORK_TYPE_Q8_0 ? Q8_0_BYTES : Q4_0_BYTES;                 \
        __m256 a0 = _mm256_loadu_ps(acc->l), a1 = _mm256_loadu_ps(acc->l + 8);                 \
        int64_t b = 0;                                                                         \
        for (; b + 2 <= nb; b += 2) {                                                          \
            const uint8_t *w0 = w + (size_t)b * wbytes, *w1 = w0 + wbytes;                     \
            const uint8_t *x0 = xq + (size_t)b * Q8_0_BYTES, *x1 = x0 + Q8_0_BYTES;            \
            __m256i p0 = PARTIALS(ork__unpack32_avx2(type, w0 + 2),                                 \
                                  _mm256_loadu_si256((const __m256i *)(x0 + 2)));              \
            __m256i p1 = PARTIALS(ork__unpack32_avx2(type, w1 + 2),                                 \
                                  _mm256_loadu_si256((const __m256i *)(x1 + 2)));              \
            float d0 = f16v_x86(w0) * f16v_x86(x0);                                            \
            float d1 = f16v_x86(w1) * f16v_x86(x1);                                            \
            a0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p0), _mm256_set1_ps(d0), a0);              \
            a1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p1), _mm256_set1_ps(d1), a1);              \
        }                                                                                      \
        if (b < nb) {                                                                          \
            const uint8_t *w0 = w + (size_t)b * wbytes, *x0 = xq + (size_t)b * Q8_0_BYTES;     \
            __m256i p0 = PARTIALS(ork__unpack32_avx2(type, w0 + 2),                                 \
                                  _mm256_loadu_si256((const __m256i *)(x0 + 2)));              \
            float d0 = f16v_x86(w0) * f16v_x86(x0);                                            \
            a0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p0), _mm256_set1_ps(d0), a0);              \
        }                                                                                      \
        _mm256_storeu_ps(acc->l, a0);                                                          \
        _mm256_storeu_ps(acc->l + 8, a1);                                                      \
    }

Q8_BLOCKS_AVX(ork__q8_blocks_avx2, TGT_AVX2, partials_avx2)
static Q8_BLOCKS_AVX(q8_blocks_avxvnni, TGT_AVXVNNI, partials_avxvnni)

/* ORK_Q8_ROWS_MAX rows of X against one weight row: each weight block is loaded, unpacked and
 * made unsigned once; per X row only sign(w) * x, the partials and the FMA remain. Same lanes
 * and operations per output as q8_blocks_*, so the same bits. */
#define Q8_ROWS_AVX(NAME, TGT, PART)                                                           \
    TGT static void NAME(uint32_t type, const uint8_t *w, const uint8_t *xq, size_t xs,      \
                         int64_t nb, float *out)                                               \
    {                                                                                          \
        enum { NR = ORK_Q8_ROWS_MAX };                                                         \
        const size_t wbytes = type == ORK_TYPE_Q8_0 ? Q8_0_BYTES : Q4_0_BYTES;                 \
        __m256 a[NR][2];                                                                       \
        for (int t = 0; t < NR; t++)                                                           \
            a[t][0] = a[t][1] = _mm256_setzero_ps();                                           \
        for (int64_t b = 0; b < nb; b++) {                                                     \
            const uint8_t *wb = w + (size_t)b * wbytes;                                        \
            __m256i wv = ork__unpack32_avx2(type, wb + 2);                                          \
            __m256i aw = _mm256_sign_epi8(wv, wv);                                             \
            float dw = f16v_x86(wb);                                                           \
            int h = (int)(b & 1);                                                              \
            for (int t = 0; t < NR; t++) {                                                     \
                const uint8_t *xb = xq + (size_t)t * xs + (size_t)b * Q8_0_BYTES;              \
                __m256i xv = _mm256_loadu_si256((const __m256i *)(xb + 2));                    \
                __m256i p = PART(aw, _mm256_sign_epi8(xv, wv));                                \
                float d = dw * f16v_x86(xb);                                                   \
                a[t][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_set1_ps(d), a[t][h]);  \
            }                                                                                  \
        }                                                                                      \
        for (int t = 0; t < NR; t++) {                                                         \
            struct q8_acc acc;                                                                 \
            _mm256_storeu_ps(acc.l, a[t][0]);                                                  \
            _mm256_storeu_ps(acc.l + 8, a[t][1]);                                              \
            out[t] = ork__q8_end(&acc);                                                        \
        }                                                                                      \
    }

TGT_AVX2 static inline __m256i part_avx2(__m256i aw, __m256i sx)
{
    return _mm256_madd_epi16(_mm256_maddubs_epi16(aw, sx), _mm256_set1_epi16(1));
}

TGT_AVXVNNI static inline __m256i part_avxvnni(__m256i aw, __m256i sx)
{
    return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), aw, sx);
}

Q8_ROWS_AVX(q8_rows_avx2, TGT_AVX2, part_avx2)
Q8_ROWS_AVX(q8_rows_avxvnni, TGT_AVXVNNI, part_avxvnni)

TGT_AVX2 static inline int32_t hsum_i32_avx2(__m256i v)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

/* vpmaddubsw on (unsigned 4- or 6-bit weights, int8 x): a pair is at most 2 * 63 * 128 < 2^15,
 * so nothing saturates; vpmaddwd by the sub-block scale then sums pairs of pairs in int32. */
TGT_AVX2 static void q8k_avx2(uint32_t type, const uint8_t *w, const uint8_t *xq, int64_t nb,
                              float *sum)
{
    float acc = *sum;
    const __m256i m4 = _mm256_set1_epi8(15), m2 = _mm256_set1_epi8(3);
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *xb = xq + (size_t)b * ORK_Q8_K_BYTES, *qx = xb + ORK_Q8_K_Q;
        float dx;
        int16_t bs[16];
        q8k_fields(xb, &dx, bs);
        __m256i s32 = _mm256_setzero_si256();
        if (type == ORK_TYPE_Q4_K) {
            const uint8_t *blk = w + (size_t)b * Q4_K_BYTES, *qs = blk + Q4_K_QS;
            int32_t sc[8];
            int32_t m = q4k_mins(blk, bs, sc);
            for (int p = 0; p < 4; p++) {
                __m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * p));
                __m256i lo = _mm256_and_si256(q, m4);
                __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
                __m256i x0 = _mm256_loadu_si256((const __m256i *)(qx + 64 * p));
                __m256i x1 = _mm256_loadu_si256((const __m256i *)(qx + 64 * p + 32));
                __m256i p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, x0),
                                               _mm256_set1_epi16((int16_t)sc[2 * p]));
                __m256i p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, x1),
                                               _mm256_set1_epi16((int16_t)sc[2 * p + 1]));
                s32 = _mm256_add_epi32(s32, _mm256_add_epi32(p0, p1));
            }
            acc = q4k_block_sum(acc, f16v_x86(blk), f16v_x86(blk + 2), dx, hsum_i32_avx2(s32),
                                m);
        } else {
            const uint8_t *blk = w + (size_t)b * Q6_K_BYTES;
            const int8_t *sc = (const int8_t *)(blk + Q6_K_SC);
            for (int h = 0; h < 2; h++) {
                const uint8_t *ql = blk + 64 * h, *qhp = blk + Q6_K_QH + 32 * h;
                __m256i l0 = _mm256_loadu_si256((const __m256i *)ql);
                __m256i l1 = _mm256_loadu_si256((const __m256i *)(ql + 32));
                __m256i hb = _mm256_loadu_si256((const __m256i *)qhp);
                __m256i q[4];
                q[0] = _mm256_or_si256(_mm256_and_si256(l0, m4),
                                       _mm256_slli_epi16(_mm256_and_si256(hb, m2), 4));
                q[1] = _mm256_or_si256(
                    _mm256_and_si256(l1, m4),
                    _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2), m2), 4));
                q[2] = _mm256_or_si256(
                    _mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                    _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 4), m2), 4));
                q[3] = _mm256_or_si256(
                    _mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                    _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 6), m2), 4));
                for (int t = 0; t < 4; t++) {
                    __m256i x = _mm256_loadu_si256((const __m256i *)(qx + 128 * h + 32 * t));
                    int g = 8 * h + 2 * t;   /* 16-groups g (first 16 elements), g + 1 */
                    __m256i scv = _mm256_set_m128i(_mm_set1_epi16(sc[g + 1]),
                                                   _mm_set1_epi16(sc[g]));
                    s32 = _mm256_add_epi32(s32,
                                           _mm256_madd_epi16(_mm256_maddubs_epi16(q[t], x), scv));
                }
            }
            int32_t s = hsum_i32_avx2(s32) - Q6_K_OFFSET * q6k_bias(blk, bs);
            acc = q6k_block_sum(acc, f16v_x86(blk + Q6_K_D), dx, s);
        }
    }
    *sum = acc;
}

void ork__fill_qdot_avx2(struct ork__kern *t)
{
    for (int k = ORK__KT_Q8_0; k <= ORK__KT_Q4_0; k++) {
        t->t[k].q8_blocks = ork__q8_blocks_avx2;
        t->t[k].q8_rows4 = q8_rows_avx2;
    }
    t->t[ORK__KT_Q4_K].q8k_blocks = q8k_avx2;
    t->t[ORK__KT_Q6_K].q8k_blocks = q8k_avx2;
}

void ork__fill_qdot_avxvnni(struct ork__kern *t)
{
    for (int k = ORK__KT_Q8_0; k <= ORK__KT_Q4_0; k++) {
        t->t[k].q8_blocks = q8_blocks_avxvnni;
        t->t[k].q8_rows4 = q8_rows_avxvnni;
    }
}
#endif
