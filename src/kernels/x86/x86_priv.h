/* x86/x86_priv.h -- what the x86-64 kernel files share: their target attributes, the AVX2
 * unpacking of Q8_0 / Q4_0 quants, the building blocks of the interleaved (rows16) kernels, the
 * f32 tails and reductions of the attention loops, and the GEMM driver the tiled kernels plug
 * into. Included only where ORK_KERN_X86 is defined. */
#ifndef ORK_KERNELS_X86_PRIV_H
#define ORK_KERNELS_X86_PRIV_H

#include "kern_priv.h"

#ifdef ORK_KERN_X86
#include <immintrin.h>

/* The target attributes of the paths (kern_priv.h enum kisa). */
#define ORK_TGT_AVX2 __attribute__((target("avx2,fma,f16c")))
#define ORK_TGT_AVXVNNI __attribute__((target("avx2,fma,f16c,avxvnni")))
#define ORK_TGT_512F __attribute__((target("avx512f,avx2,fma,f16c")))

/* ork__unpack32 in one AVX2 register. */
__attribute__((target("avx2"))) static inline __m256i ork__unpack32_avx2(uint32_t type,
                                                                         const uint8_t *wq)
{
    if (type == ORK_TYPE_Q8_0)
        return _mm256_loadu_si256((const __m256i *)(const void *)wq);
    __m128i b = _mm_loadu_si128((const __m128i *)(const void *)wq);
    __m128i lo = _mm_and_si128(b, _mm_set1_epi8(15));
    __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), _mm_set1_epi8(15));
    return _mm256_sub_epi8(_mm256_set_m128i(hi, lo), _mm256_set1_epi8(ORK__Q4_0_OFFSET));
}

/* Q8_0 / Q4_0 x Q8_0 blocks with AVX2 (qdot_avx2.c; the AVX-512 kernels' odd last block). */
void ork__q8_blocks_avx2(uint32_t type, const uint8_t *w, const uint8_t *xq, int64_t nb,
                         struct q8_acc *acc);

/* ---- the attention loops' scalar parts (kv_rows_*.c) ---- */

/* ork_vec_mad_rows on the elements [from, n) the vector loops left, one at a time. */
static inline void ork__mad_rows_tail(float *y, const uint8_t *v, size_t stride, uint32_t type,
                          const float *a, int64_t nr, int64_t from, int64_t n)
{
    for (int64_t i = from; i < n; i++) {
        float yi = y[i];
        for (int64_t t = 0; t < nr; t++)
            yi = ork__mad_elem(yi, v + (size_t)t * stride, type, a[t], i);
        y[i] = yi;
    }
}

/* The in-order f32 tail of one row's dot (elements [from, n)), as the one-row kernels add it. */
static inline float ork__dot_tail(const uint8_t *row, uint32_t type, const float *x, int64_t from, int64_t n)
{
    float t = 0.0f;
    for (int64_t i = from; i < n; i++) {
        float w;
        if (type == ORK_TYPE_F16)
            w = ork_fp16_to_f32((uint16_t)(row[2 * i] | (row[2 * i + 1] << 8)));
        else if (type == ORK_TYPE_BF16)
            w = ork_bf16_to_f32((uint16_t)(row[2 * i] | (row[2 * i + 1] << 8)));
        else
            memcpy(&w, row + 4 * i, sizeof w);
        float pr = w * x[i];
        t += pr;
    }
    return t;
}

ORK_TGT_512F static inline __m512 ork__load16_512(const uint8_t *row, uint32_t type, int64_t i)
{
    return type == ORK_TYPE_F16
               ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(row + 2 * i)))
               : _mm512_loadu_ps((const float *)(const void *)row + i);
}

ORK_TGT_AVX2 static inline __m256 ork__load8_256(const uint8_t *row, uint32_t type, int64_t i)
{
    return type == ORK_TYPE_F16 ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(row + 2 * i)))
                                : _mm256_loadu_ps((const float *)(const void *)row + i);
}

/* ork__acc_end32 of 32 lanes l[] in registers, the same additions in the same order: a = l[k] +
 * l[k+8] and b = l[k+16] + l[k+24] (k < 8, summed by the caller), s[k] = a + b, then pairs of
 * pairs, then the tail (vhaddps adds neighbours; an f32 sum does not depend on its operands'
 * order). */
ORK_TGT_AVX2 static inline float ork__acc_end_256(__m256 a, __m256 b, float tail)
{
    __m256 sk = _mm256_add_ps(a, b);                /* s[0..7] */
    __m256 p = _mm256_hadd_ps(sk, sk);              /* s0+s1, s2+s3 | s4+s5, s6+s7 */
    __m256 q = _mm256_hadd_ps(p, p);                /* (s0+s1)+(s2+s3) | (s4+s5)+(s6+s7) */
    float r = _mm_cvtss_f32(_mm256_castps256_ps128(q)) + _mm_cvtss_f32(_mm256_extractf128_ps(q, 1));
    return r + tail;
}

/* acc_end_256 of the lanes 0..15 in lo and 16..31 in hi. */
ORK_TGT_512F static inline float ork__acc_end_512(__m512 lo, __m512 hi, float tail)
{
    __m256 lo_hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(lo), 1));
    __m256 hi_hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(hi), 1));
    return ork__acc_end_256(_mm256_add_ps(_mm512_castps512_ps256(lo), lo_hi),
                       _mm256_add_ps(_mm512_castps512_ps256(hi), hi_hi), tail);
}

/* Target of the AVX-512 interleaved kernels (rows16_*_avx512.c): the AVX-512 VNNI path. */
#define ORK_TGT_X16 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))

/* A 4-bit quant byte's low nibble, and its high nibble in place (16 x the nibble): a dot
 * product chain over the latter is a multiple of 16, brought back by an exact arithmetic
 * shift of ORK_NIB_HI_SHIFT (Q4_0 and Q4_K in rows16_*_avx512.c). */
#define ORK_NIB_LO 0x0f
#define ORK_NIB_HI 0xf0
#define ORK_NIB_HI_SHIFT 4

/* acc + vpdpbusd(w, the int32 at x in every lane), the int32 read by the instruction itself
 * ({1to16} memory broadcast). GCC 12 keeps a broadcast shared by several groups in a register
 * of its own (one more instruction per use); with the broadcast folded, interleaved decode from
 * DRAM runs faster (docs/kernels.md "Interleaved weights: folded operands"). */
ORK_TGT_X16 static inline __attribute__((always_inline)) __m512i
ork__dpbusd_bcast(__m512i acc, __m512i w, const uint8_t *x)
{
    __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*(const int32_t *)x));
    return acc;
}

/* The 64 bytes at p and m, with p's load inside the `vpandd` (two per quant vector, one per
 * nibble). GCC 12 loads most of the vectors into a register of their own first (one more
 * instruction each, 12 more per 4 Q4_0 group blocks); with the loads folded, Q4_0 decode from
 * DRAM runs faster (docs/kernels.md "Interleaved weights: folded operands"). */
ORK_TGT_X16 static inline __attribute__((always_inline)) __m512i
ork__and_mem(const uint8_t *p, __m512i m)
{
    __m512i r;
    __asm__("vpandd %1, %2, %0" : "=v"(r) : "m"(*(const struct { uint8_t b[64]; } *)p), "v"(m));
    return r;
}

/* Defines one such kernel (x86-64 AVX-512 code only) with constant NG groups and MX X rows:
 * __m512 acc[NG * MX] zeroed, CORE (a statement using g, xs, xstride, nb and acc) run, then
 * acc[s * MX + t] stored at out[s] + t * ldo. TGT: the function's target attribute. */
#define ORK_X16_KERNEL(NAME, TGT, CORE, NG, MX)                                                 \
    TGT static void NAME(const uint8_t *const *g, const uint8_t *xs, size_t xstride,            \
                         int64_t nb, float *const *out, size_t ldo)                             \
    {                                                                                           \
        __m512 acc[(NG) * (MX)];                                                                \
        for (int i = 0; i < (NG) * (MX); i++)                                                   \
            acc[i] = _mm512_setzero_ps();                                                       \
        CORE;                                                                                   \
        for (int s = 0; s < (NG); s++)                                                          \
            for (int t = 0; t < (MX); t++)                                                      \
                _mm512_storeu_ps(out[s] + (size_t)t * ldo, acc[s * (MX) + t]);                  \
    }

/* The AVX2 form (rows16_*_avx2.c): two __m256 accumulators per output row, for its lanes 0..7
 * and 8..15: acc[(s * MX + t) * 2 + h] zeroed, CORE run, then stored at out[s] + t * ldo. */
#define ORK_X16_HALVES 2
#define ORK_X16_KERNEL256(NAME, TGT, CORE, NG, MX)                                              \
    TGT static void NAME(const uint8_t *const *g, const uint8_t *xs, size_t xstride,            \
                         int64_t nb, float *const *out, size_t ldo)                             \
    {                                                                                           \
        __m256 acc[ORK_X16_HALVES * (NG) * (MX)];                                               \
        for (int i = 0; i < ORK_X16_HALVES * (NG) * (MX); i++)                                  \
            acc[i] = _mm256_setzero_ps();                                                       \
        CORE;                                                                                   \
        for (int s = 0; s < (NG); s++)                                                          \
            for (int t = 0; t < (MX); t++)                                                      \
                for (int h = 0; h < ORK_X16_HALVES; h++)                                        \
                    _mm256_storeu_ps(out[s] + (size_t)t * ldo + h * (ORK_X16_ROWS / 2),        \
                                     acc[(s * (MX) + t) * ORK_X16_HALVES + h]);                 \
    }

/* ---- the tiled Q8_0 / Q4_0 GEMM (gemm_q8_avx2.c drives, the tiles plug in) ---- */

struct ork__gemm_args {
    const int8_t *wq;       /* panel quants: ORK_GEMM_NW rows of np * 64 */
    const float *wd;        /* panel scales: ORK_GEMM_NW rows of np * 2 */
    int64_t np;
    const uint8_t *x[ORK_GEMM_MX];  /* packed X rows */
    float *y[ORK_GEMM_MX];  /* output rows (Y + m * ldy + first column of the panel) */
    int nw;                 /* valid panel rows */
};
/* A tile: the panel against mx <= ORK_GEMM_MX packed X rows. */
typedef void (*ork__gemm_tile_fn)(const struct ork__gemm_args *g, int mx);
/* The GEMM of kern_priv.h struct ork__type_kern.gemm with tile kernel `tile`; unsign: the
 * panel holds w + 128 (the VNNI tiles) rather than signed w (AVX2). */
void ork__gemm_q8_drive(ork__gemm_tile_fn tile, bool unsign, const struct ork_mat *w, int64_t r0,
                        int64_t r1, const uint8_t *xp, int64_t m, float *y, int64_t ldy,
                        uint8_t *panel);

#endif
#endif
