/* qdot.c -- integer dot products of quantized weight rows with quantized activations, the hot
 * loops of ORK_ACT_QUANT matmuls: Q8_0 / Q4_0 weights against Q8_0 activations, Q4_K / Q6_K
 * weights against Q8_K activations (and the Q8_K quantizer). One scalar path that defines the
 * arithmetic, and SIMD paths that give the same bits: AVX2, AVX-VNNI, AVX-512 VNNI on x86-64;
 * NEON and NEON dot product on AArch64. They read the quantized blocks directly (no
 * dequantization into a buffer). Not here: f32-activation dots (dot.c), threading (matmul.c).
 *
 * Q8_0 / Q4_0 x Q8_0 (per 32-element block b; order in kern_priv.h, struct q8_acc):
 *   p_j = sum of w_i * x_i over i = 4j .. 4j+3 (exact int32), d = d_w * d_x (f32 product),
 *   lane[8 * (b % 2) + j] = fmaf((float)p_j, d, lane[...]), then a fixed reduction tree.
 *   Groups of four adjacent products are what vpmaddubsw+vpmaddwd, vpdpbusd and sdot produce,
 *   so every path has the same partials and the same f32 operations.
 *
 * Q4_K / Q6_K x Q8_K (per 256-element block, in block order, one f32 sum):
 *   Q4_K: S = sum_j sc_j * (sum over sub-block j of q_i * x_i), M = sum_j mn_j * (sum over
 *         sub-block j of x_i) (both exact int32; the x sums come from the Q8_K block sums);
 *         sum += (d_x * d) * (float)S - (d_x * dmin) * (float)M.
 *   Q6_K: S = sum_k sc_k * (sum over 16-group k of q_i * x_i) - 32 * sum_k sc_k * bsum_k with
 *         q_i in 0..63 (exact int32); sum += (d_x * d) * (float)S.
 *   Every f32 operation is written as its own statement (no contraction into FMA).
 *
 * Q8_K activation block (the layout GGML uses): f32 d, int8 q[256], int16 bsums[16] (sums of
 * q over each 16 elements). ork_quantize_row_q8_k: d = amax / 127, q = roundf(x * (1 / d)).
 * Activation values stay in -127..127, so the sign tricks below never overflow. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <ork/error.h>
#include <ork-kernels/kernels.h>

#include "kern_priv.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define QD_X86 1
#include <immintrin.h>
#elif defined(__aarch64__) && defined(__ARM_NEON)
#define QD_NEON 1
#include <arm_neon.h>
#endif

#define Q8_0_BLOCK 32
#define Q8_0_BYTES 34           /* f16 d, int8 q[32] */
#define Q4_0_BYTES 18           /* f16 d, 4-bit qs[16] */
#define Q4_0_OFFSET 8           /* Q4_0 nibble bias */
#define QK_K 256                /* elements per K-quant block */
#define Q4_K_BYTES 144          /* f16 d, f16 dmin, scales[12], qs[128] */
#define Q4_K_SCALES 4
#define Q4_K_QS 16
#define Q6_K_BYTES 210          /* ql[128], qh[64], int8 scales[16], f16 d */
#define Q6_K_QH 128
#define Q6_K_SC 192
#define Q6_K_D 208
#define Q6_K_OFFSET 32          /* Q6_K value bias */

static inline float f16v(const uint8_t *p)
{
    return ork_fp16_to_f32((uint16_t)(p[0] | (p[1] << 8)));
}

/* ---- Q8_0 / Q4_0 x Q8_0 ------------------------------------------------------------------ */

static void q8_blocks_scalar(uint32_t type, const uint8_t *w, const uint8_t *xq, int64_t nb,
                             struct q8_acc *acc)
{
    const size_t wbytes = type == ORK_TYPE_Q8_0 ? Q8_0_BYTES : Q4_0_BYTES;
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *wb = w + (size_t)b * wbytes, *xb = xq + (size_t)b * Q8_0_BYTES;
        int8_t qw[Q8_0_BLOCK];
        ork__unpack32(type, wb + 2, qw);
        const int8_t *qx = (const int8_t *)(xb + 2);
        float d = f16v(wb) * f16v(xb);
        float *l = acc->l + 8 * (b & 1);
        for (int j = 0; j < 8; j++) {
            int32_t p = 0;
            for (int i = 4 * j; i < 4 * j + 4; i++)
                p += qw[i] * qx[i];
            l[j] = fmaf((float)p, d, l[j]);
        }
    }
}

float ork__q8_end(const struct q8_acc *acc)
{
    const float *l = acc->l;
    float r8[8], r4[4], r2[2];
    for (int j = 0; j < 8; j++)
        r8[j] = l[j] + l[j + 8];
    for (int j = 0; j < 4; j++)
        r4[j] = r8[j] + r8[j + 4];
    for (int j = 0; j < 2; j++)
        r2[j] = r4[j] + r4[j + 2];
    return r2[0] + r2[1];
}

#ifdef QD_X86
#define TGT_AVX2 __attribute__((target("avx2,fma,f16c")))
#define TGT_AVXVNNI __attribute__((target("avx2,fma,f16c,avxvnni")))
#define TGT_AVX512 \
    __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")))

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
    TGT static void NAME(uint32_t type, const uint8_t *w, const uint8_t *xq, int64_t nb,      \
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

Q8_BLOCKS_AVX(q8_blocks_avx2, TGT_AVX2, partials_avx2)
Q8_BLOCKS_AVX(q8_blocks_avxvnni, TGT_AVXVNNI, partials_avxvnni)

/* Two blocks per 512-bit register: lanes 0-7 the even block, 8-15 the odd one, which is the
 * accumulator layout itself. sign(w) * x via a mask subtract (AVX-512 has no vpsignb). */
TGT_AVX512 static void q8_blocks_avx512(uint32_t type, const uint8_t *w, const uint8_t *xq,
                                        int64_t nb, struct q8_acc *acc)
{
    const size_t wbytes = type == ORK_TYPE_Q8_0 ? Q8_0_BYTES : Q4_0_BYTES;
    __m512 a = _mm512_loadu_ps(acc->l);
    const __m512i zero = _mm512_setzero_si512();
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        const uint8_t *w0 = w + (size_t)b * wbytes, *w1 = w0 + wbytes;
        const uint8_t *x0 = xq + (size_t)b * Q8_0_BYTES, *x1 = x0 + Q8_0_BYTES;
        __m512i wv = _mm512_inserti64x4(_mm512_castsi256_si512(ork__unpack32_avx2(type, w0 + 2)),
                                        ork__unpack32_avx2(type, w1 + 2), 1);
        __m512i xv = _mm512_inserti64x4(
            _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(x0 + 2))),
            _mm256_loadu_si256((const __m256i *)(x1 + 2)), 1);
        __mmask64 neg = _mm512_movepi8_mask(wv);
        __m512i sx = _mm512_mask_sub_epi8(xv, neg, zero, xv);
        __m512i p = _mm512_dpbusd_epi32(zero, _mm512_abs_epi8(wv), sx);
        float d0 = f16v_x86(w0) * f16v_x86(x0);
        float d1 = f16v_x86(w1) * f16v_x86(x1);
        __m512 d = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_set1_ps(d0)),
                                      _mm256_set1_ps(d1), 1);
        a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), d, a);
    }
    _mm512_storeu_ps(acc->l, a);
    if (b < nb)
        q8_blocks_avx2(type, w + (size_t)b * wbytes, xq + (size_t)b * Q8_0_BYTES, 1, acc);
}
#endif

#ifdef QD_NEON
static inline float f16v_neon(const uint8_t *p)
{
    uint16x4_t h = vdup_n_u16((uint16_t)(p[0] | (p[1] << 8)));
    return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(h)), 0);
}

static inline void unpack32_neon(uint32_t type, const uint8_t *wq, int8x16_t *w0, int8x16_t *w1)
{
    if (type == ORK_TYPE_Q8_0) {
        *w0 = vld1q_s8((const int8_t *)wq);
        *w1 = vld1q_s8((const int8_t *)wq + 16);
        return;
    }
    uint8x16_t b = vld1q_u8(wq);
    *w0 = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(b, vdupq_n_u8(15))), vdupq_n_s8(Q4_0_OFFSET));
    *w1 = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(b, 4)), vdupq_n_s8(Q4_0_OFFSET));
}

/* Partials of 16 elements (4 groups of 4) without the dot product extension. */
static inline int32x4_t partials16_neon(int8x16_t w, int8x16_t x)
{
    int32x4_t lo = vpaddlq_s16(vmull_s8(vget_low_s8(w), vget_low_s8(x)));
    int32x4_t hi = vpaddlq_s16(vmull_s8(vget_high_s8(w), vget_high_s8(x)));
    return vpaddq_s32(lo, hi);
}

#define TGT_DOTPROD __attribute__((target("arch=armv8.2-a+dotprod")))

TGT_DOTPROD static inline int32x4_t partials16_dot(int8x16_t w, int8x16_t x)
{
    return vdotq_s32(vdupq_n_s32(0), w, x);
}

#define Q8_BLOCKS_NEON(NAME, TGT, PARTIALS)                                                    \
    TGT static void NAME(uint32_t type, const uint8_t *w, const uint8_t *xq, int64_t nb,      \
                         struct q8_acc *acc)                                                   \
    {                                                                                          \
        const size_t wbytes = type == ORK_TYPE_Q8_0 ? Q8_0_BYTES : Q4_0_BYTES;                 \
        float32x4_t a[4];                                                                      \
        for (int r = 0; r < 4; r++)                                                            \
            a[r] = vld1q_f32(acc->l + 4 * r);                                                  \
        for (int64_t b = 0; b < nb; b++) {                                                     \
            const uint8_t *wb = w + (size_t)b * wbytes, *xb = xq + (size_t)b * Q8_0_BYTES;     \
            int8x16_t w0, w1;                                                                  \
            unpack32_neon(type, wb + 2, &w0, &w1);                                             \
            int8x16_t x0 = vld1q_s8((const int8_t *)xb + 2);                                   \
            int8x16_t x1 = vld1q_s8((const int8_t *)xb + 18);                                  \
            float32x4_t d = vdupq_n_f32(f16v_neon(wb) * f16v_neon(xb));                        \
            int h = 2 * (int)(b & 1);                                                          \
            a[h] = vfmaq_f32(a[h], vcvtq_f32_s32(PARTIALS(w0, x0)), d);                        \
            a[h + 1] = vfmaq_f32(a[h + 1], vcvtq_f32_s32(PARTIALS(w1, x1)), d);                \
        }                                                                                      \
        for (int r = 0; r < 4; r++)                                                            \
            vst1q_f32(acc->l + 4 * r, a[r]);                                                   \
    }

Q8_BLOCKS_NEON(q8_blocks_neon, , partials16_neon)
Q8_BLOCKS_NEON(q8_blocks_neon_dot, TGT_DOTPROD, partials16_dot)
#endif

void ork__q8_blocks(enum kisa k, uint32_t type, const uint8_t *w, const uint8_t *xq, int64_t nb,
                    struct q8_acc *acc)
{
    switch (k) {
#ifdef QD_X86
    case KISA_AVX2: q8_blocks_avx2(type, w, xq, nb, acc); return;
    case KISA_AVXVNNI: q8_blocks_avxvnni(type, w, xq, nb, acc); return;
    case KISA_AVX512VNNI: q8_blocks_avx512(type, w, xq, nb, acc); return;
#endif
#ifdef QD_NEON
    case KISA_NEON: q8_blocks_neon(type, w, xq, nb, acc); return;
    case KISA_NEON_DOT: q8_blocks_neon_dot(type, w, xq, nb, acc); return;
#endif
    default: q8_blocks_scalar(type, w, xq, nb, acc); return;
    }
}

#ifdef QD_X86
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

TGT_AVX512 static void q8_rows_avx512(uint32_t type, const uint8_t *w, const uint8_t *xq,
                                      size_t xs, int64_t nb, float *out)
{
    enum { NR = ORK_Q8_ROWS_MAX };
    const size_t wbytes = type == ORK_TYPE_Q8_0 ? Q8_0_BYTES : Q4_0_BYTES;
    const __m512i zero = _mm512_setzero_si512();
    __m512 a[NR];
    for (int t = 0; t < NR; t++)
        a[t] = _mm512_setzero_ps();
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        const uint8_t *w0 = w + (size_t)b * wbytes, *w1 = w0 + wbytes;
        __m512i wv = _mm512_inserti64x4(_mm512_castsi256_si512(ork__unpack32_avx2(type, w0 + 2)),
                                        ork__unpack32_avx2(type, w1 + 2), 1);
        __m512i aw = _mm512_abs_epi8(wv);
        __mmask64 neg = _mm512_movepi8_mask(wv);
        float dw0 = f16v_x86(w0), dw1 = f16v_x86(w1);
        for (int t = 0; t < NR; t++) {
            const uint8_t *x0 = xq + (size_t)t * xs + (size_t)b * Q8_0_BYTES;
            const uint8_t *x1 = x0 + Q8_0_BYTES;
            __m512i xv = _mm512_inserti64x4(
                _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(x0 + 2))),
                _mm256_loadu_si256((const __m256i *)(x1 + 2)), 1);
            __m512i p = _mm512_dpbusd_epi32(zero, aw, _mm512_mask_sub_epi8(xv, neg, zero, xv));
            float d0 = dw0 * f16v_x86(x0);
            float d1 = dw1 * f16v_x86(x1);
            __m512 d = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_set1_ps(d0)),
                                          _mm256_set1_ps(d1), 1);
            a[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), d, a[t]);
        }
    }
    for (int t = 0; t < NR; t++) {
        struct q8_acc acc;
        _mm512_storeu_ps(acc.l, a[t]);
        if (b < nb)
            q8_blocks_avx2(type, w + (size_t)b * wbytes,
                              xq + (size_t)t * xs + (size_t)b * Q8_0_BYTES, 1, &acc);
        out[t] = ork__q8_end(&acc);
    }
}
#endif

void ork__q8_rows(enum kisa k, uint32_t type, const uint8_t *w, const uint8_t *xq,
                  size_t x_stride, int nr, int64_t nb, float *out)
{
#ifdef QD_X86
    if (nr == ORK_Q8_ROWS_MAX) {
        switch (k) {
        case KISA_AVX2: q8_rows_avx2(type, w, xq, x_stride, nb, out); return;
        case KISA_AVXVNNI: q8_rows_avxvnni(type, w, xq, x_stride, nb, out); return;
        case KISA_AVX512VNNI: q8_rows_avx512(type, w, xq, x_stride, nb, out); return;
        default: break;
        }
    }
#endif
    for (int t = 0; t < nr; t++) {
        struct q8_acc acc;
        memset(&acc, 0, sizeof acc);
        ork__q8_blocks(k, type, w, xq + (size_t)t * x_stride, nb, &acc);
        out[t] = ork__q8_end(&acc);
    }
}

/* ---- Q8_K activations --------------------------------------------------------------------- */

int ork_quantize_row_q8_k(const float *x, void *dst, int64_t n)
{
    if (n < 0 || n % QK_K)
        return ork_errorf(ORK_EINVAL, "Q8_K quantization of %lld elements (not a multiple of 256)",
                          (long long)n);
    /* scalar arithmetic in gemm_q8.c; the SIMD paths give the same bits */
    ork__quantize_q8_k(ork__kisa(), x, dst, n);
    return 0;
}

/* 6-bit scale and min of sub-block j of a Q4_K block (layout in quant_ref.c). */
static inline void q4k_sm(const uint8_t *s, int j, int32_t *sc, int32_t *mn)
{
    if (j < 4) {
        *sc = s[j] & 63;
        *mn = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
        *mn = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

static inline void q8k_fields(const uint8_t *xb, float *dx, int16_t bs[16])
{
    memcpy(dx, xb, sizeof *dx);
    memcpy(bs, xb + ORK_Q8_K_BSUMS, 16 * sizeof(int16_t));
}

/* The Q4_K min term of a block: M = sum_j mn_j * (x sum of sub-block j), and its 8 scales. */
static inline int32_t q4k_mins(const uint8_t *blk, const int16_t bs[16], int32_t sc[8])
{
    int32_t m = 0;
    for (int j = 0; j < 8; j++) {
        int32_t mn;
        q4k_sm(blk + Q4_K_SCALES, j, &sc[j], &mn);
        m += mn * (bs[2 * j] + bs[2 * j + 1]);
    }
    return m;
}

/* A block's term added to sum; d and dmin: the block's f16 scales widened (each path with its
 * own conversion: the same value, fp16.c), dx the X block's scale. */
static inline float q4k_block_sum(float sum, float d, float dmin, float dx, int32_t s, int32_t m)
{
    float dd = dx * d;
    float dm = dx * dmin;
    float ts = dd * (float)s;
    float tm = dm * (float)m;
    float t = ts - tm;
    return sum + t;
}

/* 6-bit values 0..63 of one Q6_K half h (128 elements, element 32t + l from ql/qh). */
static inline void q6k_unpack_half(const uint8_t *blk, int h, uint8_t q[128])
{
    const uint8_t *ql = blk + 64 * h, *qh = blk + Q6_K_QH + 32 * h;
    for (int l = 0; l < 32; l++) {
        q[l] = (uint8_t)((ql[l] & 15) | ((qh[l] & 3) << 4));
        q[l + 32] = (uint8_t)((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4));
        q[l + 64] = (uint8_t)((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
        q[l + 96] = (uint8_t)((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
    }
}

/* sum_k sc_k * bsum_k, the Q6_K bias term before the factor 32. */
static inline int32_t q6k_bias(const uint8_t *blk, const int16_t bs[16])
{
    const int8_t *sc = (const int8_t *)(blk + Q6_K_SC);
    int32_t s = 0;
    for (int k = 0; k < 16; k++)
        s += sc[k] * bs[k];
    return s;
}

static inline float q6k_block_sum(float sum, float d, float dx, int32_t s)
{
    float dd = dx * d;
    float t = dd * (float)s;
    return sum + t;
}

static void q8k_scalar(uint32_t type, const uint8_t *w, const uint8_t *xq, int64_t nb, float *sum)
{
    float acc = *sum;
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *xb = xq + (size_t)b * ORK_Q8_K_BYTES;
        const int8_t *qx = (const int8_t *)(xb + ORK_Q8_K_Q);
        float dx;
        int16_t bs[16];
        q8k_fields(xb, &dx, bs);
        if (type == ORK_TYPE_Q4_K) {
            const uint8_t *blk = w + (size_t)b * Q4_K_BYTES, *qs = blk + Q4_K_QS;
            int32_t sc[8];
            int32_t m = q4k_mins(blk, bs, sc);
            int32_t s = 0;
            for (int p = 0; p < 4; p++) {
                int32_t s0 = 0, s1 = 0;
                for (int l = 0; l < 32; l++) {
                    s0 += (qs[32 * p + l] & 15) * qx[64 * p + l];
                    s1 += (qs[32 * p + l] >> 4) * qx[64 * p + 32 + l];
                }
                s += sc[2 * p] * s0 + sc[2 * p + 1] * s1;
            }
            acc = q4k_block_sum(acc, f16v(blk), f16v(blk + 2), dx, s, m);
        } else {
            const uint8_t *blk = w + (size_t)b * Q6_K_BYTES;
            const int8_t *sc = (const int8_t *)(blk + Q6_K_SC);
            int32_t s = 0;
            for (int h = 0; h < 2; h++) {
                uint8_t q[128];
                q6k_unpack_half(blk, h, q);
                for (int g = 0; g < 8; g++) {
                    int32_t sg = 0;
                    for (int i = 0; i < 16; i++)
                        sg += q[16 * g + i] * qx[128 * h + 16 * g + i];
                    s += sc[8 * h + g] * sg;
                }
            }
            s -= Q6_K_OFFSET * q6k_bias(blk, bs);
            acc = q6k_block_sum(acc, f16v(blk + Q6_K_D), dx, s);
        }
    }
    *sum = acc;
}

#ifdef QD_X86
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
#endif

#ifdef QD_X86
/* Q4_K / Q6_K x Q8_K for several X rows at once (ork__q8k_rows): each weight block is
 * unpacked once into four 64-byte vectors of u8 values (Q4_K 0..15, Q6_K 0..63) with their
 * sub-block scales as int32 lanes, then every X row meets them with vpdpbusd. A vpdpbusd lane
 * sums four adjacent products, so a lane never straddles a sub-block (32 elements, Q4_K) or a
 * 16-group (Q6_K); vpmulld applies the scale per lane; the lanes' sum is S exactly (integer).
 * The mins / bias term uses the X block sums, as the other paths do. The f32 steps are the
 * shared q4k_block_sum / q6k_block_sum, so each output has the bits of ork__q8k_blocks. */
#define Q8K_ROWS_VECS 4         /* 64-element vectors per 256-element block */

/* Q4_K block: 16-bit mins (mn_j at words 2j, 2j+1, to meet the 16 X block sums), the
 * per-lane scales of vector p (lanes 0-7 sub-block 2p, 8-15 sub-block 2p + 1), the values. */
TGT_AVX512 static inline void q4k_unpack512(const uint8_t *blk, __m512i wv[Q8K_ROWS_VECS],
                                            __m512i scv[Q8K_ROWS_VECS], __m256i *mins)
{
    /* q4k_sm on four sub-blocks per 32-bit word: u0 = scales[0..3], u1 = [4..7], u2 = [8..11] */
    uint32_t u[3];
    memcpy(u, blk + Q4_K_SCALES, sizeof u);
    const uint32_t low6 = 0x3f3f3f3fu, low4 = 0x0f0f0f0fu, top2 = 0x30303030u;
    uint32_t sc4[2] = { u[0] & low6, (u[2] & low4) | ((u[0] >> 2) & top2) };
    uint32_t mn4[2] = { u[1] & low6, ((u[2] >> 4) & low4) | ((u[1] >> 2) & top2) };
    uint64_t sc8, mn8;
    memcpy(&sc8, sc4, sizeof sc8);
    memcpy(&mn8, mn4, sizeof mn8);
    __m128i mn16 = _mm_cvtepu8_epi16(_mm_cvtsi64_si128((long long)mn8));
    *mins = _mm256_set_m128i(_mm_unpackhi_epi16(mn16, mn16), _mm_unpacklo_epi16(mn16, mn16));
    const __m512i sc32 =
        _mm512_castsi256_si512(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)sc8)));
    const __m512i m4 = _mm512_set1_epi8(15);
    for (int p = 0; p < Q8K_ROWS_VECS; p++) {
        /* qs[32p .. 32p+31]: low nibbles are elements 64p.., high nibbles 64p + 32.. */
        __m512i q = _mm512_broadcast_i64x4(
            _mm256_loadu_si256((const __m256i *)(blk + Q4_K_QS + 32 * p)));
        q = _mm512_mask_srli_epi16(q, 0xffff0000u, q, 4);
        wv[p] = _mm512_and_si512(q, m4);
        const __m512i idx = _mm512_setr_epi32(2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p,
                                              2 * p, 2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1,
                                              2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1);
        scv[p] = _mm512_permutexvar_epi32(idx, sc32);
    }
}

/* Q6_K block: vectors 2h (elements 128h + 0..63) and 2h + 1 (128h + 64..127) of 6-bit values,
 * the per-lane 16-group scales (lane i of vector v: group 4v + i / 4), the 16 scales as int16. */
TGT_AVX512 static inline void q6k_unpack512(const uint8_t *blk, __m512i wv[Q8K_ROWS_VECS],
                                            __m512i scv[Q8K_ROWS_VECS], __m256i *sc16)
{
    const __m512i m4 = _mm512_set1_epi8(15), m2 = _mm512_set1_epi8(3);
    __m128i sc8 = _mm_loadu_si128((const __m128i *)(blk + Q6_K_SC));
    __m512i sc32 = _mm512_cvtepi8_epi32(sc8);
    *sc16 = _mm256_cvtepi8_epi16(sc8);
    for (int h = 0; h < 2; h++) {
        /* ql[64h .. 64h+63]: bytes 0-31 feed elements 0-31 (low) and 64-95 (high nibbles),
         * bytes 32-63 elements 32-63 and 96-127; qh bits 2t..2t+1 are the top of element
         * 32t + l. */
        __m512i l = _mm512_loadu_si512(blk + 64 * h);
        __m512i hb = _mm512_broadcast_i64x4(
            _mm256_loadu_si256((const __m256i *)(blk + Q6_K_QH + 32 * h)));
        hb = _mm512_mask_srli_epi16(hb, 0xffff0000u, hb, 2);   /* upper half: bits 2-3 */
        __m512i lo = _mm512_or_si512(_mm512_and_si512(l, m4),
                                     _mm512_slli_epi16(_mm512_and_si512(hb, m2), 4));
        __m512i hi = _mm512_or_si512(
            _mm512_and_si512(_mm512_srli_epi16(l, 4), m4),
            _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(hb, 4), m2), 4));
        wv[2 * h] = lo;
        wv[2 * h + 1] = hi;
        for (int v = 0; v < 2; v++) {
            const int g0 = 8 * h + 4 * v;
            const __m512i idx = _mm512_setr_epi32(g0, g0, g0, g0, g0 + 1, g0 + 1, g0 + 1, g0 + 1,
                                                  g0 + 2, g0 + 2, g0 + 2, g0 + 2, g0 + 3, g0 + 3,
                                                  g0 + 3, g0 + 3);
            scv[2 * h + v] = _mm512_permutexvar_epi32(idx, sc32);
        }
    }
}

/* The scaled lanes of one unpacked block against the Q8_K values qx (their sum is S). */
TGT_AVX512 static inline __m512i q8k_lanes512(const __m512i wv[Q8K_ROWS_VECS],
                                              const __m512i scv[Q8K_ROWS_VECS], const int8_t *qx)
{
    __m512i s = _mm512_setzero_si512();
    for (int v = 0; v < Q8K_ROWS_VECS; v++) {
        __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wv[v],
                                        _mm512_loadu_si512(qx + 64 * v));
        s = _mm512_add_epi32(s, _mm512_mullo_epi32(p, scv[v]));
    }
    return s;
}

/* Four integer sums at once: lane t of the result is the sum of the lanes of v[t] (exact). */
TGT_AVX512 static inline __m128i hsum4_512(const __m512i v[ORK_Q8_ROWS_MAX])
{
    __m256i r[ORK_Q8_ROWS_MAX];
    for (int t = 0; t < ORK_Q8_ROWS_MAX; t++)
        r[t] = _mm256_add_epi32(_mm512_castsi512_si256(v[t]), _mm512_extracti64x4_epi64(v[t], 1));
    __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(r[0], r[1]), _mm256_hadd_epi32(r[2], r[3]));
    return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

/* Up to four X rows at once; the f32 steps of q4k_block_sum / q6k_block_sum run in the lanes of
 * one vector (lane t: X row t), the same operations in the same order. */
TGT_AVX512 static void q8k_rows512(uint32_t type, const uint8_t *w, const uint8_t *xq,
                                   size_t x_stride, int nr, int64_t nb, float *out)
{
    const bool q4 = type == ORK_TYPE_Q4_K;
    const size_t wbytes = q4 ? Q4_K_BYTES : Q6_K_BYTES;
    __m128 acc = _mm_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *blk = w + (size_t)b * wbytes;
        __m512i wv[Q8K_ROWS_VECS], scv[Q8K_ROWS_VECS];
        __m256i wsc16;      /* Q4_K: mins per X block sum; Q6_K: scales per X block sum */
        if (q4)
            q4k_unpack512(blk, wv, scv, &wsc16);
        else
            q6k_unpack512(blk, wv, scv, &wsc16);
        __m512i sl[ORK_Q8_ROWS_MAX], ml[ORK_Q8_ROWS_MAX];
        float dxs[ORK_Q8_ROWS_MAX] = { 0 };
        for (int t = 0; t < ORK_Q8_ROWS_MAX; t++) {
            if (t >= nr) {
                sl[t] = ml[t] = _mm512_setzero_si512();
                continue;
            }
            const uint8_t *xb = xq + (size_t)t * x_stride + (size_t)b * ORK_Q8_K_BYTES;
            memcpy(&dxs[t], xb, sizeof dxs[t]);
            sl[t] = q8k_lanes512(wv, scv, (const int8_t *)(xb + ORK_Q8_K_Q));
            __m256i bs = _mm256_loadu_si256((const __m256i *)(xb + ORK_Q8_K_BSUMS));
            ml[t] = _mm512_castsi256_si512(_mm256_madd_epi16(wsc16, bs));
        }
        __m128i si = hsum4_512(sl), mi = hsum4_512(ml);
        __m128 dx = _mm_loadu_ps(dxs);
        if (q4) {
            __m128 dd = _mm_mul_ps(dx, _mm_set1_ps(f16v_x86(blk)));
            __m128 dm = _mm_mul_ps(dx, _mm_set1_ps(f16v_x86(blk + 2)));
            __m128 ts = _mm_mul_ps(dd, _mm_cvtepi32_ps(si));
            __m128 tm = _mm_mul_ps(dm, _mm_cvtepi32_ps(mi));
            acc = _mm_add_ps(acc, _mm_sub_ps(ts, tm));
        } else {
            /* S - 32 * bias in int32 before the one conversion, as q6k_block_sum's caller */
            si = _mm_sub_epi32(si, _mm_mullo_epi32(mi, _mm_set1_epi32(Q6_K_OFFSET)));
            __m128 dd = _mm_mul_ps(dx, _mm_set1_ps(f16v_x86(blk + Q6_K_D)));
            acc = _mm_add_ps(acc, _mm_mul_ps(dd, _mm_cvtepi32_ps(si)));
        }
    }
    float o[ORK_Q8_ROWS_MAX];
    _mm_storeu_ps(o, acc);
    for (int t = 0; t < nr; t++)
        out[t] = o[t];
}

/* One weight row against one X row (decode): blocks in batches of K1_BATCH, their lane sums
 * reduced together (8 vectors to 8 sums) and the batch's f32 steps in the lanes of one ymm;
 * then the blocks' terms are added to the row's sum one by one in block order, as
 * q4k_block_sum / q6k_block_sum do. tools/kern_probe mm q4_k|q6_k 65536 2048 1 1 (151 MB,
 * medians of 8 alternated runs) against the AVX2 one-row kernel: Q4_K 13.5 vs 11.0 GB/s,
 * Q6_K 18.3 vs 17.3 (q8k_rows512 with one X row). Four weight rows per pass (their sums
 * reduced together like the X rows of q8k_rows512) read about half as fast from DRAM. */
#define K1_BATCH 8

/* Lane t of the result: the sum of the 8 int32 lanes of v[t] (exact). */
TGT_AVX512 static inline __m256i hsum8_256(const __m256i v[K1_BATCH])
{
    __m256i g0 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
    __m256i g1 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
    /* g0 lane j (j < 4): half of row j's sum in each 128-bit half; g1 the same for rows 4-7 */
    __m256i lo = _mm256_permute2x128_si256(g0, g1, 0x20);
    __m256i hi = _mm256_permute2x128_si256(g0, g1, 0x31);
    return _mm256_add_epi32(lo, hi);
}

TGT_AVX512 static float q8k_row512(uint32_t type, const uint8_t *w, const uint8_t *xq,
                                   int64_t nb)
{
    const bool q4 = type == ORK_TYPE_Q4_K;
    const size_t wbytes = q4 ? Q4_K_BYTES : Q6_K_BYTES;
    float sum = 0.0f;
    for (int64_t b0 = 0; b0 < nb; b0 += K1_BATCH) {
        const int nk = nb - b0 < K1_BATCH ? (int)(nb - b0) : K1_BATCH;
        __m256i sl[K1_BATCH], ml[K1_BATCH];
        float dx[K1_BATCH] = { 0 }, d[K1_BATCH] = { 0 }, dmin[K1_BATCH] = { 0 };
        for (int j = 0; j < K1_BATCH; j++) {
            if (j >= nk) {
                sl[j] = ml[j] = _mm256_setzero_si256();
                continue;
            }
            const uint8_t *blk = w + (size_t)(b0 + j) * wbytes;
            const uint8_t *xb = xq + (size_t)(b0 + j) * ORK_Q8_K_BYTES;
            __m512i wv[Q8K_ROWS_VECS], scv[Q8K_ROWS_VECS];
            __m256i wsc16;
            if (q4) {
                q4k_unpack512(blk, wv, scv, &wsc16);
                d[j] = f16v_x86(blk);
                dmin[j] = f16v_x86(blk + 2);
            } else {
                q6k_unpack512(blk, wv, scv, &wsc16);
                d[j] = f16v_x86(blk + Q6_K_D);
            }
            memcpy(&dx[j], xb, sizeof dx[j]);
            __m512i l = q8k_lanes512(wv, scv, (const int8_t *)(xb + ORK_Q8_K_Q));
            sl[j] = _mm256_add_epi32(_mm512_castsi512_si256(l), _mm512_extracti64x4_epi64(l, 1));
            ml[j] = _mm256_madd_epi16(wsc16,
                                      _mm256_loadu_si256((const __m256i *)(xb + ORK_Q8_K_BSUMS)));
        }
        __m256i si = hsum8_256(sl), mi = hsum8_256(ml);
        __m256 dxv = _mm256_loadu_ps(dx), t;
        if (q4) {
            __m256 dd = _mm256_mul_ps(dxv, _mm256_loadu_ps(d));
            __m256 dm = _mm256_mul_ps(dxv, _mm256_loadu_ps(dmin));
            t = _mm256_sub_ps(_mm256_mul_ps(dd, _mm256_cvtepi32_ps(si)),
                              _mm256_mul_ps(dm, _mm256_cvtepi32_ps(mi)));
        } else {
            si = _mm256_sub_epi32(si, _mm256_mullo_epi32(mi, _mm256_set1_epi32(Q6_K_OFFSET)));
            t = _mm256_mul_ps(_mm256_mul_ps(dxv, _mm256_loadu_ps(d)), _mm256_cvtepi32_ps(si));
        }
        float tv[K1_BATCH];
        _mm256_storeu_ps(tv, t);
        for (int j = 0; j < nk; j++)
            sum = sum + tv[j];
    }
    return sum;
}
#endif

#ifdef QD_NEON
/* Exact int32 sum of 16 products (each |product| <= 63 * 128; two per int16 lane fit). */
static inline int32_t dot16_neon(int8x16_t a, int8x16_t b)
{
    int16x8_t p = vmull_s8(vget_low_s8(a), vget_low_s8(b));
    p = vmlal_s8(p, vget_high_s8(a), vget_high_s8(b));
    return vaddlvq_s16(p);
}

TGT_DOTPROD static inline int32_t dot16_dot(int8x16_t a, int8x16_t b)
{
    return vaddvq_s32(vdotq_s32(vdupq_n_s32(0), a, b));
}

#define Q8K_NEON(NAME, TGT, DOT16)                                                             \
    TGT static void NAME(uint32_t type, const uint8_t *w, const uint8_t *xq, int64_t nb,      \
                         float *sum)                                                           \
    {                                                                                          \
        float acc = *sum;                                                                      \
        const uint8x16_t m4 = vdupq_n_u8(15), m2 = vdupq_n_u8(3);                              \
        for (int64_t b = 0; b < nb; b++) {                                                     \
            const uint8_t *xb = xq + (size_t)b * ORK_Q8_K_BYTES;                               \
            const int8_t *qx = (const int8_t *)(xb + ORK_Q8_K_Q);                                  \
            float dx;                                                                          \
            int16_t bs[16];                                                                    \
            q8k_fields(xb, &dx, bs);                                                           \
            int32_t s = 0;                                                                     \
            if (type == ORK_TYPE_Q4_K) {                                                       \
                const uint8_t *blk = w + (size_t)b * Q4_K_BYTES, *qs = blk + Q4_K_QS;          \
                int32_t sc[8];                                                                 \
                int32_t m = q4k_mins(blk, bs, sc);                                             \
                for (int p = 0; p < 4; p++) {                                                  \
                    int32_t s0 = 0, s1 = 0;                                                    \
                    for (int c = 0; c < 2; c++) {                                              \
                        uint8x16_t q = vld1q_u8(qs + 32 * p + 16 * c);                         \
                        int8x16_t lo = vreinterpretq_s8_u8(vandq_u8(q, m4));                   \
                        int8x16_t hi = vreinterpretq_s8_u8(vshrq_n_u8(q, 4));                  \
                        s0 += DOT16(lo, vld1q_s8(qx + 64 * p + 16 * c));                       \
                        s1 += DOT16(hi, vld1q_s8(qx + 64 * p + 32 + 16 * c));                  \
                    }                                                                          \
                    s += sc[2 * p] * s0 + sc[2 * p + 1] * s1;                                  \
                }                                                                              \
                acc = q4k_block_sum(acc, f16v_neon(blk), f16v_neon(blk + 2), dx, s, m);        \
            } else {                                                                           \
                const uint8_t *blk = w + (size_t)b * Q6_K_BYTES;                               \
                const int8_t *sc = (const int8_t *)(blk + Q6_K_SC);                            \
                for (int h = 0; h < 2; h++) {                                                  \
                    const uint8_t *ql = blk + 64 * h, *qhp = blk + Q6_K_QH + 32 * h;           \
                    for (int c = 0; c < 2; c++) {                                              \
                        uint8x16_t l0 = vld1q_u8(ql + 16 * c), l1 = vld1q_u8(ql + 32 + 16 * c); \
                        uint8x16_t hb = vld1q_u8(qhp + 16 * c);                                \
                        uint8x16_t q[4];                                                       \
                        q[0] = vorrq_u8(vandq_u8(l0, m4), vshlq_n_u8(vandq_u8(hb, m2), 4));    \
                        q[1] = vorrq_u8(vandq_u8(l1, m4),                                      \
                                        vshlq_n_u8(vandq_u8(vshrq_n_u8(hb, 2), m2), 4));       \
                        q[2] = vorrq_u8(vshrq_n_u8(l0, 4),                                     \
                                        vshlq_n_u8(vandq_u8(vshrq_n_u8(hb, 4), m2), 4));       \
                        q[3] = vorrq_u8(vshrq_n_u8(l1, 4), vshlq_n_u8(vshrq_n_u8(hb, 6), 4));  \
                        for (int t = 0; t < 4; t++) {                                          \
                            int e = 128 * h + 32 * t + 16 * c;                                 \
                            s += sc[e / 16] * DOT16(vreinterpretq_s8_u8(q[t]), vld1q_s8(qx + e)); \
                        }                                                                      \
                    }                                                                          \
                }                                                                              \
                s -= Q6_K_OFFSET * q6k_bias(blk, bs);                                          \
                acc = q6k_block_sum(acc, f16v_neon(blk + Q6_K_D), dx, s);                      \
            }                                                                                  \
        }                                                                                      \
        *sum = acc;                                                                            \
    }

Q8K_NEON(q8k_neon, , dot16_neon)
Q8K_NEON(q8k_neon_dot, TGT_DOTPROD, dot16_dot)
#endif

void ork__q8k_blocks(enum kisa k, uint32_t type, const uint8_t *w, const uint8_t *xq, int64_t nb,
                     float *sum)
{
    switch (k) {
#ifdef QD_X86
    case KISA_AVX2:
    case KISA_AVXVNNI:
    case KISA_AVX512VNNI: q8k_avx2(type, w, xq, nb, sum); return;
#endif
#ifdef QD_NEON
    case KISA_NEON: q8k_neon(type, w, xq, nb, sum); return;
    case KISA_NEON_DOT: q8k_neon_dot(type, w, xq, nb, sum); return;
#endif
    default: q8k_scalar(type, w, xq, nb, sum); return;
    }
}

void ork__q8k_rows(enum kisa k, uint32_t type, const uint8_t *w, const uint8_t *xq,
                   size_t x_stride, int nr, int64_t nb, float *out)
{
#ifdef QD_X86
    if (k == KISA_AVX512VNNI && nr > 1) {
        q8k_rows512(type, w, xq, x_stride, nr, nb, out);
        return;
    }
    if (k == KISA_AVX512VNNI) {
        out[0] = q8k_row512(type, w, xq, nb);
        return;
    }
#endif
    for (int t = 0; t < nr; t++) {
        out[t] = 0.0f;
        ork__q8k_blocks(k, type, w, xq + (size_t)t * x_stride, nb, &out[t]);
    }
}

float ork_vec_dot_q8k(uint32_t type, const void *row, const void *xq, int64_t n)
{
    if ((type != ORK_TYPE_Q4_K && type != ORK_TYPE_Q6_K) || n < 0 || n % QK_K)
        return __builtin_nanf("");
    float sum = 0.0f;
    ork__q8k_blocks(ork__kisa(), type, row, xq, n / QK_K, &sum);
    return sum;
}
