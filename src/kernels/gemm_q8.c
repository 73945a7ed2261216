/* gemm_q8.c -- register-tiled Q8_0 / Q4_0 weights x Q8_0 activations for ORK_ACT_QUANT
 * matmuls on x86-64 (AVX-512 VNNI, AVX-VNNI, AVX2), and the vectorized activation quantizers
 * (Q8_0 and Q8_K; AVX2, AVX-512, NEON) that match the scalar ones bit for bit. Not here: the
 * thread split and the shared activation buffer (matmul.c), the one-row dots (qdot.c).
 *
 * Arithmetic: every output is exactly what ork__q8_blocks + ork__q8_end give (kern_priv.h,
 * struct q8_acc): the same int32 partial p_j per group of four products, the same f32 scale
 * d = d_w * d_x, the same fmaf into the same lane, the same reduction tree. Only where the
 * lanes live in the registers changes.
 *
 * Layouts. A block pair (blocks 2q and 2q + 1 of a row) is 64 int8 values interleaved by
 * groups of four: bytes 8j..8j+3 are elements 4j..4j+3 of the even block, bytes 8j+4..8j+7
 * the same elements of the odd block (j = 0..7). A dot-product instruction then leaves the
 * partial of group j of the even block in int32 lane 2j and of the odd block in lane 2j+1,
 * so lane 2j is accumulator lane j and lane 2j+1 is lane j + 8, and the pair's two scales
 * form the 64-bit pattern (d_even, d_odd) broadcast over the register. A missing odd block
 * (odd block count) is all zeros with scale 0: fmaf(0, 0, lane) = lane (lanes are never -0).
 *
 *   packed X row (xpack_*): q[np][64] int8, bias[np][16] int32 = -128 * (sum of the group's
 *     four x), d[np][2] f32 (the f16 scales widened), rows GEMM_XROW_ALIGN aligned.
 *   weight panel (panel_pack): GEMM_NW rows; per row q[np][64] and d[np][2]. With the VNNI
 *     paths the weights are stored as w + 128 (unsigned; vpdpbusd multiplies u8 by s8) and
 *     the X bias removes the 128 * sum(x) again, exactly: sum (w + 128) x - 128 sum x.
 *     AVX2 has no u8 x s8 dot without int16 saturation on such values, so there the panel keeps
 *     signed w and the kernel multiplies |w| by sign(w) * x (vpmaddubsw cannot saturate:
 *     |w| <= 128, |x| <= 127, a pair <= 32512).
 *
 * Blocking: a panel of GEMM_NW weight rows (a few KiB, stays in L1) meets every X row of a
 * chunk that fits in L2 (GEMM_L2_X_BYTES), in tiles of up to GEMM_NW x GEMM_MX outputs with
 * independent accumulators. Ragged M uses the same kernel with fewer X rows (compile-time
 * counts 1..GEMM_MX); ragged N repeats the panel's last row and drops its outputs. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <ork-kernels/kernels.h>

#include "kern_priv.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GQ_X86 1
#include <immintrin.h>
#elif defined(__aarch64__) && defined(__ARM_NEON)
#define GQ_NEON 1
#include <arm_neon.h>
#endif

#define Q8_0_BLOCK 32
#define Q8_0_BYTES 34           /* f16 d, int8 q[32] */
#define Q4_0_BYTES 18           /* f16 d, 4-bit qs[16] */
#define Q4_0_OFFSET 8           /* Q4_0 nibble bias */
#define Q8_QMAX 127.0f          /* symmetric int8 range of the activation quantizers */
#define QK_K 256
#define PAIR_Q 64               /* int8 values of a block pair */
#define PAIR_BIAS 64            /* bytes of a pair's 16 int32 biases */
#define PAIR_D 8                /* bytes of a pair's two f32 scales */
#define U8_OFFSET 128           /* w + 128: signed int8 weight as the u8 operand of vpdpbusd */
/* X bytes per L2-resident chunk: a quarter of the 1 MiB L2 of the Zen 4 / Zen 5 cores this was
 * tuned on, leaving room for the weight panels and Y. */
#define GEMM_L2_X_BYTES (512u << 10)

/* ---- activation quantizers ---------------------------------------------------------------- */

static inline void put_f16(uint8_t *p, float d)
{
    uint16_t h = ork_f32_to_fp16(d);
    p[0] = (uint8_t)h;
    p[1] = (uint8_t)(h >> 8);
}

/* One Q8_0 block in scalar code (the arithmetic of ork_quantize_row_q8_0 in dot.c). */
static void q8_0_block_scalar(const float *xb, uint8_t *ob)
{
    float amax = 0.0f;
    for (int i = 0; i < Q8_0_BLOCK; i++) {
        float a = xb[i] < 0 ? -xb[i] : xb[i];
        if (a > amax)
            amax = a;
    }
    float d = amax / Q8_QMAX;
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    put_f16(ob, d);
    for (int i = 0; i < Q8_0_BLOCK; i++)
        ob[2 + i] = (uint8_t)(int8_t)roundf(xb[i] * id);
}

/* One Q8_K block in scalar code (ork_quantize_row_q8_k's arithmetic). */
static void q8_k_block_scalar(const float *xb, uint8_t *ob)
{
    float amax = 0.0f;
    for (int i = 0; i < QK_K; i++) {
        float a = fabsf(xb[i]);
        if (a > amax)
            amax = a;
    }
    float d = amax / Q8_QMAX;
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    memcpy(ob, &d, sizeof d);
    int8_t *q = (int8_t *)(ob + ORK_Q8_K_Q);
    for (int i = 0; i < QK_K; i++)
        q[i] = (int8_t)roundf(xb[i] * id);
    for (int g = 0; g < QK_K / 16; g++) {
        int16_t s = 0;
        for (int i = 0; i < 16; i++)
            s = (int16_t)(s + q[16 * g + i]);
        memcpy(ob + ORK_Q8_K_BSUMS + 2 * g, &s, sizeof s);
    }
}

#ifdef GQ_X86
#define TGT_AVX2 __attribute__((target("avx2,fma,f16c")))
#define TGT_AVXVNNI __attribute__((target("avx2,fma,f16c,avxvnni")))
#define TGT_AVX512 \
    __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi")))

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
#endif

#ifdef GQ_NEON
/* vcvtaq_s32_f32 rounds to nearest with ties away from zero: roundf itself. */
static inline float amax_neon(const float *x, int n)
{
    float32x4_t m = vdupq_n_f32(0.0f);
    for (int i = 0; i < n; i += 4) {
        float32x4_t a = vabsq_f32(vld1q_f32(x + i));
        m = vbslq_f32(vcgtq_f32(a, m), a, m);   /* NaN compares false: skipped */
    }
    return vmaxvq_f32(m);
}

static inline int8x16_t q16_neon(const float *x, float32x4_t vid)
{
    int32x4_t q[4];
    for (int i = 0; i < 4; i++)
        q[i] = vcvtaq_s32_f32(vmulq_f32(vld1q_f32(x + 4 * i), vid));
    int16x8_t a = vcombine_s16(vmovn_s32(q[0]), vmovn_s32(q[1]));
    int16x8_t b = vcombine_s16(vmovn_s32(q[2]), vmovn_s32(q[3]));
    return vcombine_s8(vmovn_s16(a), vmovn_s16(b));
}

static void quant_q8_0_neon(const float *x, uint8_t *dst, int64_t nb)
{
    for (int64_t b = 0; b < nb; b++) {
        const float *xb = x + b * Q8_0_BLOCK;
        uint8_t *ob = dst + b * Q8_0_BYTES;
        float d = amax_neon(xb, Q8_0_BLOCK) / Q8_QMAX;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        put_f16(ob, d);
        float32x4_t vid = vdupq_n_f32(id);
        vst1q_s8((int8_t *)ob + 2, q16_neon(xb, vid));
        vst1q_s8((int8_t *)ob + 18, q16_neon(xb + 16, vid));
    }
}

static void quant_q8_k_neon(const float *x, uint8_t *dst, int64_t nb)
{
    for (int64_t b = 0; b < nb; b++) {
        const float *xb = x + b * QK_K;
        uint8_t *ob = dst + b * ORK_Q8_K_BYTES;
        float d = amax_neon(xb, QK_K) / Q8_QMAX;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        memcpy(ob, &d, sizeof d);
        float32x4_t vid = vdupq_n_f32(id);
        for (int g = 0; g < QK_K / 16; g++) {
            int8x16_t q = q16_neon(xb + 16 * g, vid);
            vst1q_s8((int8_t *)ob + ORK_Q8_K_Q + 16 * g, q);
            int16_t s = (int16_t)vaddlvq_s8(q);
            memcpy(ob + ORK_Q8_K_BSUMS + 2 * g, &s, sizeof s);
        }
    }
}
#endif

void ork__quantize_q8_0(enum kisa k, const float *x, uint8_t *dst, int64_t n)
{
    int64_t nb = n / Q8_0_BLOCK;
    switch (k) {
#ifdef GQ_X86
    case KISA_AVX2:
    case KISA_AVXVNNI: quant_q8_0_avx2(x, dst, nb); return;
    case KISA_AVX512VNNI: quant_q8_0_512(x, dst, nb); return;
#endif
#ifdef GQ_NEON
    case KISA_NEON:
    case KISA_NEON_DOT: quant_q8_0_neon(x, dst, nb); return;
#endif
    default:
        for (int64_t b = 0; b < nb; b++)
            q8_0_block_scalar(x + b * Q8_0_BLOCK, dst + b * Q8_0_BYTES);
        return;
    }
}

void ork__quantize_q8_0_sums(enum kisa k, const float *x, int64_t nb, uint8_t *q, size_t qstride,
                             float *d, int32_t *sum)
{
#ifdef GQ_X86
    if (k == KISA_AVX512VNNI) {
        quant_q8_0_sums_512(x, nb, q, qstride, d, sum);
        return;
    }
    if (k == KISA_AVX2 || k == KISA_AVXVNNI) {
        quant_q8_0_sums_avx2(x, nb, q, qstride, d, sum);
        return;
    }
#endif
    uint8_t blk[Q8_0_BYTES];
    for (int64_t b = 0; b < nb; b++) {
        ork__quantize_q8_0(k, x + b * Q8_0_BLOCK, blk, Q8_0_BLOCK);
        d[b] = ork_fp16_to_f32((uint16_t)(blk[0] | blk[1] << 8));
        memcpy(q + (size_t)b * qstride, blk + 2, Q8_0_BLOCK);
        int32_t s = 0;
        for (int e = 0; e < Q8_0_BLOCK; e++)
            s += (int8_t)blk[2 + e];
        sum[b] = s;
    }
}

void ork__quantize_q8_k(enum kisa k, const float *x, uint8_t *dst, int64_t n)
{
    int64_t nb = n / QK_K;
    switch (k) {
#ifdef GQ_X86
    case KISA_AVX2:
    case KISA_AVXVNNI: quant_q8_k_avx2(x, dst, nb); return;
    case KISA_AVX512VNNI: quant_q8_k_512(x, dst, nb); return;
#endif
#ifdef GQ_NEON
    case KISA_NEON:
    case KISA_NEON_DOT: quant_q8_k_neon(x, dst, nb); return;
#endif
    default:
        for (int64_t b = 0; b < nb; b++)
            q8_k_block_scalar(x + b * QK_K, dst + b * ORK_Q8_K_BYTES);
        return;
    }
}

/* ---- packed activations -------------------------------------------------------------------- */

static inline int64_t n_pairs(int64_t k)
{
    return (k / Q8_0_BLOCK + 1) / 2;
}

size_t ork__xpack_row_bytes(int64_t k)
{
    size_t b = (size_t)n_pairs(k) * (PAIR_Q + PAIR_BIAS + PAIR_D);
    return (b + ORK_GEMM_ALIGN - 1) / ORK_GEMM_ALIGN * ORK_GEMM_ALIGN;
}

/* Interleave blocks a and b (32 int8 each; b may be NULL: zeros) into a pair. */
static inline void interleave_pair(const int8_t *a, const int8_t *b, int8_t *out)
{
    for (int j = 0; j < 8; j++) {
        memcpy(out + 8 * j, a + 4 * j, 4);
        if (b)
            memcpy(out + 8 * j + 4, b + 4 * j, 4);
        else
            memset(out + 8 * j + 4, 0, 4);
    }
}

void ork__xpack_rows(enum kisa k, const float *x, int64_t k_cols, int64_t rows, uint8_t *dst)
{
    const int64_t nb = k_cols / Q8_0_BLOCK, np = n_pairs(k_cols);
    const size_t rb = ork__xpack_row_bytes(k_cols);
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * k_cols;
        uint8_t *o = dst + (size_t)r * rb;
        int8_t *q = (int8_t *)o;
        int32_t *bias = (int32_t *)(o + (size_t)np * PAIR_Q);
        float *d = (float *)(o + (size_t)np * (PAIR_Q + PAIR_BIAS));
        for (int64_t p = 0; p < np; p++) {
            uint8_t blk[2][Q8_0_BYTES];
            bool two = 2 * p + 1 < nb;
            ork__quantize_q8_0(k, xr + 2 * p * Q8_0_BLOCK, blk[0],
                               (two ? 2 : 1) * Q8_0_BLOCK);
            int8_t *qp = q + p * PAIR_Q;
            interleave_pair((const int8_t *)blk[0] + 2, two ? (const int8_t *)blk[1] + 2 : NULL,
                            qp);
            for (int l = 0; l < 16; l++) {
                int32_t s = 0;
                for (int e = 0; e < 4; e++)
                    s += qp[4 * l + e];
                bias[p * 16 + l] = -U8_OFFSET * s;
            }
            d[2 * p] = ork_fp16_to_f32((uint16_t)(blk[0][0] | blk[0][1] << 8));
            d[2 * p + 1] = two ? ork_fp16_to_f32((uint16_t)(blk[1][0] | blk[1][1] << 8)) : 0.0f;
        }
    }
}

/* ---- x86 tiles ------------------------------------------------------------------------------ */

#ifdef GQ_X86

/* One weight row into panel slot: interleaved pairs (+128 when unsign) and widened scales. */
TGT_AVX2 static void panel_row(uint32_t type, const uint8_t *row, int64_t nb, bool unsign,
                               int8_t *q, float *d)
{
    const size_t wbytes = type == ORK_TYPE_Q8_0 ? Q8_0_BYTES : Q4_0_BYTES;
    const __m256i flip = _mm256_set1_epi8(unsign ? (char)0x80 : 0);
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        const uint8_t *w0 = row + (size_t)b * wbytes, *w1 = w0 + wbytes;
        __m256i a = ork__unpack32_avx2(type, w0 + 2), c = ork__unpack32_avx2(type, w1 + 2);
        __m256i lo = _mm256_unpacklo_epi32(a, c), hi = _mm256_unpackhi_epi32(a, c);
        __m256i o0 = _mm256_permute2x128_si256(lo, hi, 0x20);
        __m256i o1 = _mm256_permute2x128_si256(lo, hi, 0x31);
        _mm256_storeu_si256((__m256i *)(q + b * 32), _mm256_xor_si256(o0, flip));
        _mm256_storeu_si256((__m256i *)(q + b * 32 + 32), _mm256_xor_si256(o1, flip));
        d[b] = _cvtsh_ss((unsigned short)(w0[0] | w0[1] << 8));
        d[b + 1] = _cvtsh_ss((unsigned short)(w1[0] | w1[1] << 8));
    }
    if (b < nb) {
        const uint8_t *w0 = row + (size_t)b * wbytes;
        int8_t v[Q8_0_BLOCK];
        ork__unpack32(type, w0 + 2, v);
        interleave_pair(v, NULL, q + b * 32);
        if (unsign)
            for (int i = 0; i < PAIR_Q; i++)
                q[b * 32 + i] = (int8_t)(q[b * 32 + i] ^ 0x80);
        d[b] = _cvtsh_ss((unsigned short)(w0[0] | w0[1] << 8));
        d[b + 1] = 0.0f;
    }
}

struct gemm_args {
    const int8_t *wq;       /* panel quants: GEMM_NW rows of np * 64 */
    const float *wd;        /* panel scales: GEMM_NW rows of np * 2 */
    int64_t np;
    const uint8_t *x[ORK_GEMM_MX];  /* packed X rows */
    float *y[ORK_GEMM_MX];  /* output rows (Y + m * ldy + first column of the panel) */
    int nw;                 /* valid panel rows */
};

TGT_AVX2 static inline __m256 bcast_pair256(const void *p)
{
    double v;
    memcpy(&v, p, sizeof v);
    return _mm256_castpd_ps(_mm256_set1_pd(v));
}

/* Reduction in ork__q8_end's order from two 8-lane halves in pair layout: h0 holds lanes
 * (l0, l8, l1, l9, l2, l10, l3, l11), h1 the same for j = 4..7. */
TGT_AVX2 static inline float reduce_pair256(__m256 h0, __m256 h1)
{
    /* r8[j] = l[j] + l[j + 8]: even + odd positions */
    __m256 ev = _mm256_shuffle_ps(h0, h1, 0x88), od = _mm256_shuffle_ps(h0, h1, 0xdd);
    /* ev = (l0 l1 | l4 l5 | l2 l3 | l6 l7) by 128-bit lane; fix to r8[0..3] low, r8[4..7] high */
    __m256 r8 = _mm256_add_ps(ev, od);
    r8 = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(r8), 0xd8));
    __m128 r4 = _mm_add_ps(_mm256_castps256_ps128(r8), _mm256_extractf128_ps(r8, 1));
    __m128 r2 = _mm_add_ps(r4, _mm_movehl_ps(r4, r4));
    return _mm_cvtss_f32(_mm_add_ss(r2, _mm_movehdup_ps(r2)));
}

TGT_AVX512 static inline float reduce_pair512(__m512 a)
{
    const __m512i ev = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512i od = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 0, 0, 0, 0, 0, 0, 0, 0);
    __m256 r8 = _mm512_castps512_ps256(
        _mm512_add_ps(_mm512_permutexvar_ps(ev, a), _mm512_permutexvar_ps(od, a)));
    __m128 r4 = _mm_add_ps(_mm256_castps256_ps128(r8), _mm256_extractf128_ps(r8, 1));
    __m128 r2 = _mm_add_ps(r4, _mm_movehl_ps(r4, r4));
    return _mm_cvtss_f32(_mm_add_ss(r2, _mm_movehdup_ps(r2)));
}

#define NW ORK_GEMM_NW

/* AVX-512 VNNI tile: NW weight rows x MX X rows, one zmm accumulator each. */
#define TILE512(MX)                                                                            \
    TGT_AVX512 static void tile512_##MX(const struct gemm_args *g)                             \
    {                                                                                          \
        const int64_t np = g->np;                                                              \
        __m512 acc[NW][MX];                                                                    \
        for (int i = 0; i < NW; i++)                                                           \
            for (int t = 0; t < MX; t++)                                                       \
                acc[i][t] = _mm512_setzero_ps();                                               \
        const uint8_t *xb[MX];                                                                 \
        const uint8_t *xd[MX];                                                                 \
        for (int t = 0; t < MX; t++) {                                                         \
            xb[t] = g->x[t] + (size_t)np * PAIR_Q;                                             \
            xd[t] = g->x[t] + (size_t)np * (PAIR_Q + PAIR_BIAS);                               \
        }                                                                                      \
        for (int64_t p = 0; p < np; p++) {                                                     \
            __m512i wv[NW];                                                                    \
            __m512 dw[NW];                                                                     \
            for (int i = 0; i < NW; i++) {                                                     \
                wv[i] = _mm512_loadu_si512(g->wq + ((size_t)i * np + p) * PAIR_Q);            \
                double dd;                                                                     \
                memcpy(&dd, g->wd + ((size_t)i * np + p) * 2, sizeof dd);                      \
                dw[i] = _mm512_castpd_ps(_mm512_set1_pd(dd));                                  \
            }                                                                                  \
            for (int t = 0; t < MX; t++) {                                                     \
                __m512i xv = _mm512_loadu_si512(g->x[t] + p * PAIR_Q);                         \
                __m512i bias = _mm512_loadu_si512(xb[t] + p * PAIR_BIAS);                      \
                double dd;                                                                     \
                memcpy(&dd, xd[t] + p * PAIR_D, sizeof dd);                                    \
                __m512 dx = _mm512_castpd_ps(_mm512_set1_pd(dd));                              \
                for (int i = 0; i < NW; i++) {                                                 \
                    __m512i s = _mm512_dpbusd_epi32(bias, wv[i], xv);                          \
                    __m512 d = _mm512_mul_ps(dw[i], dx);                                       \
                    acc[i][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), d, acc[i][t]);          \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
        for (int t = 0; t < MX; t++)                                                           \
            for (int i = 0; i < g->nw; i++)                                                    \
                g->y[t][i] = reduce_pair512(acc[i][t]);                                        \
    }

TILE512(1)
TILE512(2)
TILE512(3)
TILE512(4)

/* 256-bit tiles: each pair is two halves (groups 0-3, 4-7) with one accumulator each.
 * VNNI: vpdpbusd on (w + 128, x) from the bias; AVX2: vpmaddubsw on (|w|, sign(w) * x). */
#define NW2 2
TGT_AVXVNNI static inline __m256i part_vnni(__m256i bias, __m256i w, __m256i x)
{
    return _mm256_dpbusd_avx_epi32(bias, w, x);
}

TGT_AVX2 static inline __m256i part_avx2(__m256i bias, __m256i w, __m256i x)
{
    (void)bias;
    __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
    return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
}

#define TILE256(NAME, TGT, PART, MX)                                                           \
    TGT static void NAME##_##MX(const struct gemm_args *g, int r0)                             \
    {                                                                                          \
        const int64_t np = g->np;                                                              \
        __m256 acc[NW2][MX][2];                                                                \
        for (int i = 0; i < NW2; i++)                                                          \
            for (int t = 0; t < MX; t++)                                                       \
                acc[i][t][0] = acc[i][t][1] = _mm256_setzero_ps();                             \
        for (int64_t p = 0; p < np; p++) {                                                     \
            __m256i wv[NW2][2];                                                                \
            __m256 dw[NW2];                                                                    \
            for (int i = 0; i < NW2; i++) {                                                    \
                const int8_t *wp = g->wq + ((size_t)(r0 + i) * np + p) * PAIR_Q;               \
                wv[i][0] = _mm256_loadu_si256((const __m256i *)wp);                            \
                wv[i][1] = _mm256_loadu_si256((const __m256i *)(wp + 32));                     \
                dw[i] = bcast_pair256(g->wd + ((size_t)(r0 + i) * np + p) * 2);                \
            }                                                                                  \
            for (int t = 0; t < MX; t++) {                                                     \
                const uint8_t *xp = g->x[t];                                                   \
                __m256i x0 = _mm256_loadu_si256((const __m256i *)(xp + p * PAIR_Q));           \
                __m256i x1 = _mm256_loadu_si256((const __m256i *)(xp + p * PAIR_Q + 32));      \
                const uint8_t *bp = xp + (size_t)np * PAIR_Q + p * PAIR_BIAS;                  \
                __m256i b0 = _mm256_loadu_si256((const __m256i *)bp);                          \
                __m256i b1 = _mm256_loadu_si256((const __m256i *)(bp + 32));                   \
                __m256 dx = bcast_pair256(xp + (size_t)np * (PAIR_Q + PAIR_BIAS) + p * PAIR_D); \
                for (int i = 0; i < NW2; i++) {                                                \
                    __m256 d = _mm256_mul_ps(dw[i], dx);                                       \
                    acc[i][t][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(PART(b0, wv[i][0], x0)), \
                                                   d, acc[i][t][0]);                           \
                    acc[i][t][1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(PART(b1, wv[i][1], x1)), \
                                                   d, acc[i][t][1]);                           \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
        for (int t = 0; t < MX; t++)                                                           \
            for (int i = 0; i < NW2 && r0 + i < g->nw; i++)                                    \
                g->y[t][r0 + i] = reduce_pair256(acc[i][t][0], acc[i][t][1]);                  \
    }

TILE256(tile_vnni, TGT_AVXVNNI, part_vnni, 1)
TILE256(tile_vnni, TGT_AVXVNNI, part_vnni, 2)
TILE256(tile_avx2, TGT_AVX2, part_avx2, 1)
TILE256(tile_avx2, TGT_AVX2, part_avx2, 2)

/* Decode (one X row): weight rows read straight from the matrix (no repacking) against X
 * block pairs prepared once (values and scales, WROWS_CHUNK) for all of them; lanes in struct
 * q8_acc order (even block 0-7, odd 8-15), reduced in registers.
 * Weights as u8 (Q8_0: w + 128; Q4_0: the nibble itself, 0..15) with the matching X bias
 * (-128 or -8 times the group sum of x, recomputed per pair and pass), so each partial is
 * exact.
 * A pair's loads stay inside its blocks; with !two the odd block is absent and loads as zero
 * quants with a zero scale, as the accumulator layout requires.
 *
 * Measured with tools/kern_probe (one thread, binaries alternated, 8 runs each; "cache":
 * Q4_0 6144 x 2048, best of 50 calls; "DRAM": 131072 x 2048, 151 MB, best of 3):
 *   Q4_0 pair as two 128-bit broadcast loads + one lane insert (below): cache 33.1 GB/s,
 *     DRAM best 23.0;
 *   two 128-bit loads + three lane inserts (the first version): cache 27.1, DRAM 19.5;
 *   one 64-byte load + word permutes: cache 30.8 but DRAM 12.5;
 *   two adjacent rows per pass (two FMA chains): DRAM 7.6 -- two streams in one page defeat
 *     the hardware prefetcher.
 * For Q8_0, one 64-byte load and a two-source permute ran ~2x slower than two 32-byte loads.
 * Each pass takes rows from different parts of the thread's range instead (streams in
 * different pages): same speed from cache, and from DRAM (Q8_0 65536 x 2048, Q4_0 131072 x
 * 2048, medians of 8 alternated runs), two parts against one row at a time: Q8_0 37 against
 * 31 GB/s and Q4_0 27.6 against 25.4 with one thread, 31 against 25 and 28.4 against 25.8
 * with two threads; four parts against two: Q8_0 35.2 against 33.3 (one thread) and 32.7
 * against 29.9 (two), Q4_0 28.9 against 26.8 (two). */
#define Q8_PAIR_BYTES (2 * Q8_0_BYTES)
#define Q4_PAIR_BYTES (2 * Q4_0_BYTES)
#define F16_OFF 0               /* byte offset of a block's f16 scale */
#define Q_OFF 2                 /* byte offset of a block's quants */
/* Word mask of the high-nibble halves of a Q4_0 pair vector: words 8-15 and 24-31. */
#define Q4_HI_WORDS 0xff00ff00u

/* The scales of a pair (blocks at p and p + bbytes) widened: lanes 0-7 the first, 8-15 the
 * second (zero with !two). */
TGT_AVX512 static inline __m512 pair_d512(const uint8_t *p, size_t bbytes, bool two)
{
    const uint8_t *p1 = p + bbytes + F16_OFF;
    __m128i h0 = _mm_set1_epi16((short)(p[F16_OFF] | p[F16_OFF + 1] << 8));
    __m128i h1 = two ? _mm_set1_epi16((short)(p1[0] | p1[1] << 8)) : _mm_setzero_si128();
    return _mm512_cvtph_ps(_mm256_set_m128i(h1, h0));
}

/* A Q8_0 pair (weights or X blocks): int8 quants in lanes 0-31 / 32-63 and the two scales. */
TGT_AVX512 static inline __m512i pair_q8_512(const uint8_t *p, bool two, __m512 *d)
{
    __m256i a = _mm256_loadu_si256((const __m256i *)(p + Q_OFF));
    __m256i b = two ? _mm256_loadu_si256((const __m256i *)(p + Q8_0_BYTES + Q_OFF))
                    : _mm256_setzero_si256();
    *d = pair_d512(p, Q8_0_BYTES, two);
    return _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
}

/* A Q4_0 pair: nibbles 0..15 as u8, the low nibbles of a block then its high nibbles (the
 * element order of the format), and the two scales. */
TGT_AVX512 static inline __m512i pair_q4_512(const uint8_t *p, bool two, __m512 *d)
{
    __m256i a = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(p + Q_OFF)));
    __m256i b = two ? _mm256_broadcastsi128_si256(
                          _mm_loadu_si128((const __m128i *)(p + Q4_0_BYTES + Q_OFF)))
                    : _mm256_setzero_si256();
    __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
    q = _mm512_mask_srli_epi16(q, Q4_HI_WORDS, q, 4);
    *d = pair_d512(p, Q4_0_BYTES, two);
    return _mm512_and_si512(q, _mm512_set1_epi8(15));
}

TGT_AVX512 static inline float reduce_acc512(__m512 a)
{
    __m256 r8 = _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1));
    __m128 r4 = _mm_add_ps(_mm256_castps256_ps128(r8), _mm256_extractf128_ps(r8, 1));
    __m128 r2 = _mm_add_ps(r4, _mm_movehl_ps(r4, r4));
    return _mm_cvtss_f32(_mm_add_ss(r2, _mm_movehdup_ps(r2)));
}

/* Pairs of X prepared at a time for the decode kernel: 128 pairs (K = 8192) x 72 bytes (64
 * of quants, two f32 scales) = 9 KiB of stack, in L1 while every weight row meets it.
 * The prepared pair is kept that small on purpose: the X bias (-offset x the group sums) is
 * recomputed per pair from the quants with one vpdpbusd, and the scales are widened to their
 * lanes with one permute, shared by the four rows of a pass. The first version kept the bias
 * and the widened scales as two more 64-byte vectors per pair (192 bytes a pair, 18 KiB at
 * K = 6144), and those lines competed in L1 with the weight streams: from DRAM at two threads
 * (kern_probe mm q8_0 43690 6144 1 2 - 4, binaries alternated, medians of 6 runs) 49.0 GB/s
 * with 192 bytes a pair, 55.5 with the bias recomputed (128 bytes), 60.6 with both (72 bytes);
 * at K = 2048 62.5 / 66.0 / 66.4; Q4_0 at K = 6144 53.6 / 57.8 / 57.5 and at K = 2048 (more
 * arithmetic per byte) 60.3 / 58.9 / 57.7. */
#define WROWS_CHUNK 128

/* The per-pair X operands of step q, shared by the rows of a pass: the bias for the weights'
 * u8 offset (off) and the two scales widened to lanes 0-7 / 8-15. */
#define XPAIR512(q)                                                                            \
    const __m512i nbias = _mm512_sub_epi32(                                                    \
        _mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), off, xv[q]));     \
    const __m512 dxq = _mm512_permutexvar_ps(                                                  \
        lanes01, _mm512_castpd_ps(_mm512_set1_pd(xd[q])))

/* One step of a row's chain: weight pair v (scales dw) against prepared X pair q. */
#define WSTEP512(TO_U8, v, dw, q, acc)                                                         \
    _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_dpbusd_epi32(nbias, TO_U8(v), xv[q])),           \
                    _mm512_mul_ps((dw), dxq), (acc))

/* Lane pattern of a pair's two values (even block: lanes 0-7, odd block: 8-15). */
#define LANES01 _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0)

/* One weight row against pc prepared X pairs starting at pair p0; only the row's last pair
 * can lack its odd block. xd[q]: pair q's two f32 scales. */
#define WROW512(NAME, PAIR, PAIR_BYTES, TO_U8)                                                 \
    TGT_AVX512 static inline __m512 NAME(const uint8_t *row, int64_t p0, int64_t pc,          \
                                         int64_t nb, const __m512i *xv, const double *xd,     \
                                         __m512i off, __m512 a)                               \
    {                                                                                          \
        const bool ragged = p0 + pc == (nb + 1) / 2 && nb % 2;                                 \
        const uint8_t *w0 = row + (size_t)p0 * PAIR_BYTES;                                     \
        const __m512i lanes01 = LANES01;                                                       \
        for (int64_t q = 0; q < pc; q++) {                                                     \
            XPAIR512(q);                                                                       \
            __m512 dw;                                                                         \
            __m512i v = PAIR(w0 + (size_t)q * PAIR_BYTES, !ragged || q + 1 < pc, &dw);         \
            a = WSTEP512(TO_U8, v, dw, q, a);                                                  \
        }                                                                                      \
        return a;                                                                              \
    }
#define Q8_TO_U8(v) _mm512_xor_si512((v), _mm512_set1_epi8((char)U8_OFFSET))
#define Q4_TO_U8(v) (v)
WROW512(wrow512_q8, pair_q8_512, Q8_PAIR_BYTES, Q8_TO_U8)
WROW512(wrow512_q4, pair_q4_512, Q4_PAIR_BYTES, Q4_TO_U8)

/* Weight rows read side by side by the decode kernel, one from each part of the thread's range
 * (WROWS_STREAMS memory streams in different pages, one FMA chain each). */
#define WROWS_STREAMS 4
_Static_assert(WROWS_STREAMS <= ORK_WSTREAMS_MAX, "ork__q8_wstreams takes this many streams");

/* WROWS_STREAMS weight rows against the same prepared X pairs, each row's arithmetic as in
 * WROW512. */
#define WROWS512(NAME, PAIR, PAIR_BYTES, TO_U8)                                                \
    TGT_AVX512 static inline void NAME(const uint8_t *const *rows, int64_t p0, int64_t pc,    \
                                       int64_t nb, const __m512i *xv, const double *xd,       \
                                       __m512i off, __m512 *acc)                              \
    {                                                                                          \
        const bool ragged = p0 + pc == (nb + 1) / 2 && nb % 2;                                 \
        const size_t o = (size_t)p0 * PAIR_BYTES;                                              \
        const uint8_t *w0 = rows[0] + o, *w1 = rows[1] + o, *w2 = rows[2] + o,                 \
                      *w3 = rows[3] + o;                                                       \
        const __m512i lanes01 = LANES01;                                                       \
        __m512 a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];                             \
        for (int64_t q = 0; q < pc; q++) {                                                     \
            const bool two = !ragged || q + 1 < pc;                                            \
            const size_t at = (size_t)q * PAIR_BYTES;                                          \
            XPAIR512(q);                                                                       \
            __m512 d0, d1, d2, d3;                                                             \
            __m512i v0 = PAIR(w0 + at, two, &d0), v1 = PAIR(w1 + at, two, &d1);                \
            __m512i v2 = PAIR(w2 + at, two, &d2), v3 = PAIR(w3 + at, two, &d3);                \
            a0 = WSTEP512(TO_U8, v0, d0, q, a0);                                               \
            a1 = WSTEP512(TO_U8, v1, d1, q, a1);                                               \
            a2 = WSTEP512(TO_U8, v2, d2, q, a2);                                               \
            a3 = WSTEP512(TO_U8, v3, d3, q, a3);                                               \
        }                                                                                      \
        acc[0] = a0, acc[1] = a1, acc[2] = a2, acc[3] = a3;                                    \
    }
WROWS512(wrows4_512_q8, pair_q8_512, Q8_PAIR_BYTES, Q8_TO_U8)
WROWS512(wrows4_512_q4, pair_q4_512, Q4_PAIR_BYTES, Q4_TO_U8)

/* X pairs p0 .. p0 + pc - 1 as vpdpbusd operands: the quants, and the two scales as f32 side
 * by side in xd[q] (0 for an absent odd block). */
TGT_AVX512 static void xpairs512(const uint8_t *xq, int64_t nb, int64_t p0, int64_t pc,
                                 __m512i *xv, double *xd)
{
    for (int64_t q = 0; q < pc; q++) {
        const int64_t b = 2 * (p0 + q);
        __m512 d;
        xv[q] = pair_q8_512(xq + (size_t)b * Q8_0_BYTES, b + 1 < nb, &d);
        /* lanes 0 and 8 hold the two scales */
        __m256 lo = _mm512_castps512_ps256(d), hi = _mm512_extractf32x8_ps(d, 1);
        __m128 two = _mm_unpacklo_ps(_mm256_castps256_ps128(lo), _mm256_castps256_ps128(hi));
        _mm_storel_pd(&xd[q], _mm_castps_pd(two));
    }
}

/* Up to WROWS_STREAMS streams of weight rows read side by side: stream t is s[t].n rows from
 * s[t].w (row_bytes apart) into s[t].out. Pass r takes row r of every stream that has one; a
 * full pass runs the four-row step, a partial one the one-row step (same arithmetic). */
TGT_AVX512 static void wstreams512(uint32_t type, const struct ork__wstream *s, int ns_in,
                                   size_t row_bytes, const uint8_t *xq, int64_t nb)
{
    const bool q8 = type == ORK_TYPE_Q8_0;
    const __m512i off = _mm512_set1_epi8(q8 ? (char)U8_OFFSET : (char)Q4_0_OFFSET);
    __m512i xv[WROWS_CHUNK];
    double xd[WROWS_CHUNK];
    const int64_t np = (nb + 1) / 2;
    int64_t passes = 0;
    for (int t = 0; t < ns_in; t++)
        passes = s[t].n > passes ? s[t].n : passes;
    for (int64_t r = 0; r < passes; r++) {
        const uint8_t *rows[WROWS_STREAMS];
        float *outs[WROWS_STREAMS];
        __m512 acc[WROWS_STREAMS];
        int ns = 0;
        for (int t = 0; t < ns_in; t++) {
            if (r >= s[t].n)
                continue;
            rows[ns] = s[t].w + (size_t)r * row_bytes;
            outs[ns] = s[t].out + r;
            acc[ns++] = _mm512_setzero_ps();
        }
        for (int64_t p0 = 0; p0 < np; p0 += WROWS_CHUNK) {
            const int64_t pc = np - p0 < WROWS_CHUNK ? np - p0 : WROWS_CHUNK;
            if (np > WROWS_CHUNK || r == 0)
                xpairs512(xq, nb, p0, pc, xv, xd);
            if (ns == WROWS_STREAMS && q8)
                wrows4_512_q8(rows, p0, pc, nb, xv, xd, off, acc);
            else if (ns == WROWS_STREAMS)
                wrows4_512_q4(rows, p0, pc, nb, xv, xd, off, acc);
            else
                for (int t = 0; t < ns; t++)
                    acc[t] = q8 ? wrow512_q8(rows[t], p0, pc, nb, xv, xd, off, acc[t])
                                : wrow512_q4(rows[t], p0, pc, nb, xv, xd, off, acc[t]);
        }
        for (int t = 0; t < ns; t++)
            *outs[t] = reduce_acc512(acc[t]);
    }
}

/* nr contiguous rows as WROWS_STREAMS streams, one per part (the last part may be shorter). */
TGT_AVX512 static void wrows512(uint32_t type, const uint8_t *w, size_t row_bytes, int64_t nr,
                                const uint8_t *xq, int64_t nb, float *out)
{
    struct ork__wstream s[WROWS_STREAMS];
    int ns = ork__wstreams_split(w, row_bytes, nr, 1, WROWS_STREAMS, out, s);
    wstreams512(type, s, ns, row_bytes, xq, nb);
}

/* The 256-bit decode kernels: the same scheme one block per register, accumulators a0 (even
 * blocks, lanes 0-7) and a1 (odd blocks, lanes 8-15). AVX-VNNI: u8 weights and X biases as in
 * wrows512. AVX2: Q4_0 nibbles (0..15) by x with vpmaddubsw (a pair <= 2 * 15 * 127, no
 * saturation) plus the -8 * sum bias; Q8_0 with |w| by sign(w) * x (no bias). */
/* X blocks prepared at a time: 256 x 68 bytes = 17 KiB (32 of quants, 32 of bias, the f32
 * scale, broadcast where used: a 32-byte widened scale per block cost L1 room beside the
 * weight stream; kern_probe from DRAM at two threads, alternated, medians of 5: AVX-VNNI Q8_0
 * K = 6144 30.9 -> 35.9 GB/s, AVX2 Q4_0 23.0 -> 24.9, K = 2048 unchanged). */
#define W256_CHUNK 256

TGT_AVX2 static inline __m256i nibbles_avx2(const uint8_t *qs)
{
    __m128i b = _mm_loadu_si128((const __m128i *)qs);
    __m128i lo = _mm_and_si128(b, _mm_set1_epi8(15));
    __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), _mm_set1_epi8(15));
    return _mm256_set_m128i(hi, lo);
}

TGT_AVXVNNI static inline __m256i wpart_vnni(uint32_t type, const uint8_t *wq, __m256i x,
                                             __m256i bias)
{
    __m256i wu = type == ORK_TYPE_Q8_0
                     ? _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)wq),
                                        _mm256_set1_epi8((char)0x80))
                     : nibbles_avx2(wq);
    return _mm256_dpbusd_avx_epi32(bias, wu, x);
}

TGT_AVX2 static inline __m256i wpart_avx2(uint32_t type, const uint8_t *wq, __m256i x,
                                          __m256i bias)
{
    const __m256i ones = _mm256_set1_epi16(1);
    if (type == ORK_TYPE_Q8_0) {
        __m256i w = _mm256_loadu_si256((const __m256i *)wq);
        return _mm256_madd_epi16(
            _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w)), ones);
    }
    return _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(nibbles_avx2(wq), x), ones),
                            bias);
}

TGT_AVX2 static inline float reduce_acc256(__m256 a0, __m256 a1)
{
    __m256 r8 = _mm256_add_ps(a0, a1);
    __m128 r4 = _mm_add_ps(_mm256_castps256_ps128(r8), _mm256_extractf128_ps(r8, 1));
    __m128 r2 = _mm_add_ps(r4, _mm_movehl_ps(r4, r4));
    return _mm_cvtss_f32(_mm_add_ss(r2, _mm_movehdup_ps(r2)));
}

#define WROWS256(NAME, TGT, PART)                                                              \
    TGT static void NAME(uint32_t type, const uint8_t *w, size_t row_bytes, int64_t nr,       \
                         const uint8_t *xq, int64_t nb, float *out)                            \
    {                                                                                          \
        const size_t wbytes = type == ORK_TYPE_Q8_0 ? Q8_0_BYTES : Q4_0_BYTES;                 \
        const int shift = type == ORK_TYPE_Q8_0 ? 7 : 3;   /* offset 128 or 8 */              \
        __m256i xv[W256_CHUNK], bias[W256_CHUNK];                                              \
        float dx[W256_CHUNK];                                                                  \
        for (int64_t r = 0; r < nr; r++) {                                                     \
            const uint8_t *row = w + (size_t)r * row_bytes;                                    \
            __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();                         \
            for (int64_t b0 = 0; b0 < nb; b0 += W256_CHUNK) {                                  \
                const int64_t bc = nb - b0 < W256_CHUNK ? nb - b0 : W256_CHUNK;                \
                if (nb > W256_CHUNK || r == 0) {                                               \
                    for (int64_t q = 0; q < bc; q++) {                                         \
                        const uint8_t *x0 = xq + (size_t)(b0 + q) * Q8_0_BYTES;                \
                        xv[q] = _mm256_loadu_si256((const __m256i *)(x0 + 2));                 \
                        dx[q] = _cvtsh_ss((unsigned short)(x0[0] | x0[1] << 8));               \
                        __m256i s = _mm256_madd_epi16(                                         \
                            _mm256_maddubs_epi16(_mm256_set1_epi8(1), xv[q]),                  \
                            _mm256_set1_epi16(1));                                             \
                        bias[q] = _mm256_sub_epi32(_mm256_setzero_si256(),                     \
                                                   _mm256_slli_epi32(s, shift));               \
                    }                                                                          \
                }                                                                              \
                int64_t q = 0;                                                                 \
                for (; q + 2 <= bc; q += 2) {                                                  \
                    const uint8_t *w0 = row + (size_t)(b0 + q) * wbytes, *w1 = w0 + wbytes;    \
                    __m256i p0 = PART(type, w0 + 2, xv[q], bias[q]);                           \
                    __m256i p1 = PART(type, w1 + 2, xv[q + 1], bias[q + 1]);                   \
                    __m256 d0 = _mm256_mul_ps(                                                 \
                        _mm256_cvtph_ps(_mm_set1_epi16((short)(w0[0] | w0[1] << 8))),          \
                        _mm256_broadcast_ss(&dx[q]));                                          \
                    __m256 d1 = _mm256_mul_ps(                                                 \
                        _mm256_cvtph_ps(_mm_set1_epi16((short)(w1[0] | w1[1] << 8))),          \
                        _mm256_broadcast_ss(&dx[q + 1]));                                      \
                    a0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p0), d0, a0);                      \
                    a1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p1), d1, a1);                      \
                }                                                                              \
                if (q < bc) {   /* odd block count: the last chunk ends on an even block */    \
                    const uint8_t *w0 = row + (size_t)(b0 + q) * wbytes;                       \
                    __m256i p0 = PART(type, w0 + 2, xv[q], bias[q]);                           \
                    __m256 d0 = _mm256_mul_ps(                                                 \
                        _mm256_cvtph_ps(_mm_set1_epi16((short)(w0[0] | w0[1] << 8))),          \
                        _mm256_broadcast_ss(&dx[q]));                                          \
                    a0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p0), d0, a0);                      \
                }                                                                              \
            }                                                                                  \
            out[r] = reduce_acc256(a0, a1);                                                    \
        }                                                                                      \
    }

WROWS256(wrows_vnni, TGT_AVXVNNI, wpart_vnni)
WROWS256(wrows_avx2, TGT_AVX2, wpart_avx2)

static void run_tile(enum kisa k, const struct gemm_args *g, int mx)
{
    if (k == KISA_AVX512VNNI) {
        switch (mx) {
        case 1: tile512_1(g); return;
        case 2: tile512_2(g); return;
        case 3: tile512_3(g); return;
        default: tile512_4(g); return;
        }
    }
    /* 256-bit: NW2 x 2 tiles over the panel */
    for (int r0 = 0; r0 < g->nw; r0 += NW2) {
        for (int t0 = 0; t0 < mx; t0 += 2) {
            struct gemm_args h = *g;
            for (int t = 0; t < 2 && t0 + t < mx; t++) {
                h.x[t] = g->x[t0 + t];
                h.y[t] = g->y[t0 + t];
            }
            bool one = mx - t0 == 1;
            if (k == KISA_AVXVNNI) {
                if (one)
                    tile_vnni_1(&h, r0);
                else
                    tile_vnni_2(&h, r0);
            } else {
                if (one)
                    tile_avx2_1(&h, r0);
                else
                    tile_avx2_2(&h, r0);
            }
        }
    }
}
#endif

bool ork__q8_wrows(enum kisa k, uint32_t type, const uint8_t *w, size_t row_bytes, int64_t nr,
                   const uint8_t *xq, int64_t nb, float *out)
{
#ifdef GQ_X86
    switch (k) {
    case KISA_AVX512VNNI: wrows512(type, w, row_bytes, nr, xq, nb, out); return true;
    case KISA_AVXVNNI: wrows_vnni(type, w, row_bytes, nr, xq, nb, out); return true;
    case KISA_AVX2: wrows_avx2(type, w, row_bytes, nr, xq, nb, out); return true;
    default: break;
    }
#endif
    (void)k, (void)type, (void)w, (void)row_bytes, (void)nr, (void)xq, (void)nb, (void)out;
    return false;
}

int ork__q8_wstreams_width(enum kisa k)
{
#ifdef GQ_X86
    switch (k) {
    case KISA_AVX512VNNI: return WROWS_STREAMS;
    case KISA_AVXVNNI:
    case KISA_AVX2: return 1;
    default: break;
    }
#endif
    (void)k;
    return 0;
}

bool ork__q8_wstreams(enum kisa k, uint32_t type, const struct ork__wstream *s, int ns,
                      size_t row_bytes, const uint8_t *xq, int64_t nb)
{
#ifdef GQ_X86
    if (k == KISA_AVX512VNNI && ns <= WROWS_STREAMS) {
        wstreams512(type, s, ns, row_bytes, xq, nb);
        return true;
    }
#endif
    for (int t = 0; t < ns; t++)
        if (!ork__q8_wrows(k, type, s[t].w, row_bytes, s[t].n, xq, nb, s[t].out))
            return false;
    return true;
}

bool ork__gemm_q8_ok(enum kisa k)
{
#ifdef GQ_X86
    return k == KISA_AVX2 || k == KISA_AVXVNNI || k == KISA_AVX512VNNI;
#else
    (void)k;
    return false;
#endif
}

size_t ork__gemm_panel_bytes(int64_t k)
{
    return (size_t)ORK_GEMM_NW * (size_t)n_pairs(k) * (PAIR_Q + PAIR_D) + ORK_GEMM_ALIGN;
}

int64_t ork__gemm_chunk_rows(int64_t k)
{
    int64_t c = (int64_t)(GEMM_L2_X_BYTES / ork__xpack_row_bytes(k));
    c -= c % ORK_GEMM_MX;
    return c < ORK_GEMM_MX ? ORK_GEMM_MX : c;
}

#ifdef GQ_X86
/* Bytes between software prefetches of the next panel's weight rows (a cache line). */
#define LINE 64

/* Ask for the next panel's rows (into L2) while the tiles run on this one, so the repacking
 * does not wait for 4 short streams from DRAM. Gain within noise here (kern_probe mm q8_0
 * 6144 2048 512: 157-205 GOP/s with, 149-184 without, alternated), kept as it costs ~140
 * prefetches per panel against ~10^5 vector operations. */
static void prefetch_rows(const struct ork_mat *w, int64_t n0, int64_t r1)
{
    const int64_t n1 = n0 + NW < r1 ? n0 + NW : r1;
    const size_t bytes = ork_type_row_bytes(w->type, (uint64_t)w->n_cols);
    for (int64_t r = n0; r < n1; r++) {
        const char *row = (const char *)w->data + (size_t)r * w->row_bytes;
        for (size_t o = 0; o < bytes; o += LINE)
            _mm_prefetch(row + o, _MM_HINT_T1);
    }
}
#endif

void ork__gemm_q8(enum kisa k, const struct ork_mat *w, int64_t r0, int64_t r1,
                  const uint8_t *xp, int64_t m, float *y, int64_t ldy, uint8_t *panel)
{
#ifdef GQ_X86
    const int64_t kc = w->n_cols, nb = kc / Q8_0_BLOCK, np = n_pairs(kc);
    const size_t xrb = ork__xpack_row_bytes(kc);
    const bool unsign = k != KISA_AVX2;
    int8_t *pq = (int8_t *)(((uintptr_t)panel + ORK_GEMM_ALIGN - 1) & ~(uintptr_t)(ORK_GEMM_ALIGN - 1));
    float *pd = (float *)(pq + (size_t)NW * np * PAIR_Q);
    const int64_t mc = ork__gemm_chunk_rows(kc);
    for (int64_t m0 = 0; m0 < m; m0 += mc) {
        const int64_t m1 = m0 + mc < m ? m0 + mc : m;
        for (int64_t n0 = r0; n0 < r1; n0 += NW) {
            int nw = r1 - n0 < NW ? (int)(r1 - n0) : NW;
            for (int i = 0; i < NW; i++) {
                int64_t r = n0 + (i < nw ? i : nw - 1);
                panel_row(w->type, (const uint8_t *)w->data + (size_t)r * w->row_bytes, nb,
                          unsign, pq + (size_t)i * np * PAIR_Q, pd + (size_t)i * np * 2);
            }
            prefetch_rows(w, n0 + NW, r1);
            struct gemm_args g = { .wq = pq, .wd = pd, .np = np, .nw = nw };
            for (int64_t t0 = m0; t0 < m1; t0 += ORK_GEMM_MX) {
                int mx = m1 - t0 < ORK_GEMM_MX ? (int)(m1 - t0) : ORK_GEMM_MX;
                for (int t = 0; t < mx; t++) {
                    g.x[t] = xp + (size_t)(t0 + t) * xrb;
                    g.y[t] = y + (t0 + t) * ldy + n0;
                }
                run_tile(k, &g, mx);
            }
        }
    }
#else
    (void)k, (void)w, (void)r0, (void)r1, (void)xp, (void)m, (void)y, (void)ldy, (void)panel;
#endif
}
