/* dot.c -- the dispatched CPU kernels: f32 dot products, row dots for every supported type,
 * and row dequantization, each with a scalar path (the reference order) and a SIMD path: AVX2 +
 * FMA + F16C on x86-64 CPUs that have them (chosen once at run time), NEON on arm64 (always
 * present there). ORK_DEBUG=scalar forces the scalar path. Not here: the definition of the
 * types (quant_ref.c), threading (matmul.c, pool.c).
 *
 * Accumulation order. Every dot product in ork is "the f32 dot of the dequantized weight row
 * with x", computed through an accumulator state so that a long row can be fed in chunks
 * without changing a bit of the result:
 *   scalar: one f32 accumulator, elements in order 0, 1, 2, ... (= ork_vec_dot_ref);
 *   simd:   32 f32 lanes (AVX2: 4 registers x 8; NEON: 8 registers x 4); element i goes to
 *           lane i % 32 with a fused multiply-add while 32 elements remain; the last n % 32
 *           elements are summed in order into a separate f32 tail; at the end lanes k, k+8,
 *           k+16, k+24 are added as (l[k] + l[k+8]) + (l[k+16] + l[k+24]), the 8 results
 *           pairwise ((s0+s1)+(s2+s3)) + ((s4+s5)+(s6+s7)), and the tail added last.
 * AVX2 and NEON therefore give the same bits. The scalar and SIMD orders differ by rounding;
 * tests/unit/test_kernels_dot.c bounds the difference (relative to sum |w x|) by 1e-5.
 * Dequantization is exact on every path (same bits). The attention helpers ork_vec_dot_rows /
 * ork_vec_mad_rows take several KV rows per pass (AVX-512 on the avx512vnni path, AVX2 on the
 * other x86 paths) with the same per-row bits as the one-row kernels. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <ork/debug.h>
#include <ork/error.h>
#include <ork-kernels/kernels.h>

#include "kern_priv.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ORK_HAVE_X86_DISPATCH 1
#include <cpuid.h>
#include <immintrin.h>
#elif defined(__aarch64__) && defined(__ARM_NEON)
#define ORK_HAVE_NEON 1
#include <arm_neon.h>
#endif

enum kpath { KPATH_SCALAR = 0, KPATH_SIMD = 1 };

/* Lanes of the SIMD accumulator: 4 AVX registers of 8 f32 (enough independent chains to hide
 * the FMA latency). Chunks fed to an accumulator are multiples of this, so chunking never
 * changes which lane an element lands in. */
#define DOT_LANES 32
/* Elements dequantized at a time by ork_vec_dot (a multiple of every block size and of
 * DOT_LANES; 4 KiB of stack). */
#define DOT_CHUNK 1024

struct dot_acc {
    float lane[DOT_LANES];
    float tail;
};

/* Scalar or SIMD for the f32 dots and dequantizers here (the SIMD level, when several exist,
 * only matters to the integer kernels in qdot.c). */
static enum kpath path(void)
{
    return ork__kisa() == KISA_SCALAR ? KPATH_SCALAR : KPATH_SIMD;
}

/* ---- scalar ---- */

static void acc_step_scalar(struct dot_acc *acc, const float *a, const float *b, int64_t n)
{
    float s = acc->lane[0];
    for (int64_t i = 0; i < n; i++)
        s += a[i] * b[i];
    acc->lane[0] = s;
}

static void deq_f16_scalar(const uint8_t *p, float *dst, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] = ork_fp16_to_f32((uint16_t)(p[2 * i] | (p[2 * i + 1] << 8)));
}

/* ---- AVX2 + FMA + F16C ---- */

#ifdef ORK_HAVE_X86_DISPATCH
__attribute__((target("avx2,fma")))
static void acc_step_avx2(struct dot_acc *acc, const float *a, const float *b, int64_t n)
{
    __m256 s0 = _mm256_loadu_ps(acc->lane + 0);
    __m256 s1 = _mm256_loadu_ps(acc->lane + 8);
    __m256 s2 = _mm256_loadu_ps(acc->lane + 16);
    __m256 s3 = _mm256_loadu_ps(acc->lane + 24);
    int64_t i = 0;
    for (; i + DOT_LANES <= n; i += DOT_LANES) {
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
    deq_f16_scalar(p + 2 * i, dst + i, n - i);
}
#endif

/* ---- NEON (arm64) ---- */

#ifdef ORK_HAVE_NEON
static void acc_step_neon(struct dot_acc *acc, const float *a, const float *b, int64_t n)
{
    float32x4_t s[8];
    for (int r = 0; r < 8; r++)
        s[r] = vld1q_f32(acc->lane + 4 * r);
    int64_t i = 0;
    for (; i + DOT_LANES <= n; i += DOT_LANES)
        for (int r = 0; r < 8; r++)
            s[r] = vfmaq_f32(s[r], vld1q_f32(a + i + 4 * r), vld1q_f32(b + i + 4 * r));
    for (int r = 0; r < 8; r++)
        vst1q_f32(acc->lane + 4 * r, s[r]);
    float t = acc->tail;
    for (; i < n; i++)
        t += a[i] * b[i];
    acc->tail = t;
}

static void deq_f16_neon(const uint8_t *p, float *dst, int64_t n)
{
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        uint16x4_t h = vreinterpret_u16_u8(vld1_u8(p + 2 * i));
        vst1q_f32(dst + i, vcvt_f32_f16(vreinterpret_f16_u16(h)));
    }
    deq_f16_scalar(p + 2 * i, dst + i, n - i);
}
#endif

static float acc_end(const struct dot_acc *acc, enum kpath kp)
{
    if (kp == KPATH_SCALAR)
        return acc->lane[0];
    const float *l = acc->lane;
    float s[8];
    for (int k = 0; k < 8; k++)
        s[k] = (l[k] + l[k + 8]) + (l[k + 16] + l[k + 24]);
    return (((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))) + acc->tail;
}

static void acc_step(struct dot_acc *acc, const float *a, const float *b, int64_t n, enum kpath kp)
{
#if defined(ORK_HAVE_X86_DISPATCH)
    if (kp == KPATH_SIMD) {
        acc_step_avx2(acc, a, b, n);
        return;
    }
#elif defined(ORK_HAVE_NEON)
    if (kp == KPATH_SIMD) {
        acc_step_neon(acc, a, b, n);
        return;
    }
#endif
    acc_step_scalar(acc, a, b, n);
}

float ork_vec_dot_f32(const float *a, const float *b, int64_t n)
{
    enum kpath kp = path();
    struct dot_acc acc;
    memset(&acc, 0, sizeof acc);
    acc_step(&acc, a, b, n, kp);
    return acc_end(&acc, kp);
}

/* ---- SIMD dequantization of quantized blocks ----
 * Same formulas and the same f32 operation order as quant_ref.c (a multiply, then a subtract
 * where there is one; never fused), so every element gets the reference's bits. */

#define QK_BLOCK 32
#define Q4_K_SCALES 4           /* byte offsets inside a Q4_K block (quant_ref.c) */
#define Q4_K_QS 16
#define Q6_K_QH 128             /* byte offsets inside a Q6_K block (quant_ref.c) */
#define Q6_K_SC 192
#define Q6_K_D 208

/* 6-bit scale and min of sub-block j of a Q4_K block (layout in quant_ref.c). */
static void q4k_scale_min(const uint8_t *s, int j, float *sc, float *mn)
{
    if (j < 4) {
        *sc = (float)(s[j] & 63);
        *mn = (float)(s[j + 4] & 63);
    } else {
        *sc = (float)((s[j + 4] & 15) | ((s[j - 4] >> 6) << 4));
        *mn = (float)((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
    }
}

#ifdef ORK_HAVE_X86_DISPATCH
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
    for (int i = 0; i < QK_BLOCK; i += 8)
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
#endif

#ifdef ORK_HAVE_NEON
/* An f16 scale widened by fcvtl (the value of ork_fp16_to_f32, without the call). */
static inline float f16_at_neon(const uint8_t *p)
{
    uint16x4_t h = vdup_n_u16((uint16_t)(p[0] | (p[1] << 8)));
    return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(h)), 0);
}

/* 8 uint8/int8-derived int16 -> two f32x4, times d, stored. */
static inline void st8_mul_neon(float *y, int16x8_t q, float32x4_t d)
{
    vst1q_f32(y, vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(q))), d));
    vst1q_f32(y + 4, vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_high_s16(q))), d));
}

static void deq_q8_0_neon(const uint8_t *b, float *y)
{
    float32x4_t d = vdupq_n_f32(f16_at_neon(b));
    for (int i = 0; i < QK_BLOCK; i += 8)
        st8_mul_neon(y + i, vmovl_s8(vld1_s8((const int8_t *)(b + 2 + i))), d);
}

static void deq_q4_0_neon(const uint8_t *b, float *y)
{
    float32x4_t d = vdupq_n_f32(f16_at_neon(b));
    uint8x16_t raw = vld1q_u8(b + 2);
    int8x16_t lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(raw, vdupq_n_u8(15))), vdupq_n_s8(8));
    int8x16_t hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(raw, 4)), vdupq_n_s8(8));
    st8_mul_neon(y + 0, vmovl_s8(vget_low_s8(lo)), d);
    st8_mul_neon(y + 8, vmovl_s8(vget_high_s8(lo)), d);
    st8_mul_neon(y + 16, vmovl_s8(vget_low_s8(hi)), d);
    st8_mul_neon(y + 24, vmovl_s8(vget_high_s8(hi)), d);
}

static void deq_q4_k_neon(const uint8_t *b, float *y)
{
    float d = f16_at_neon(b), dmin = f16_at_neon(b + 2);
    const uint8_t *qs = b + Q4_K_QS;
    for (int p = 0; p < 4; p++) {
        float sc0, mn0, sc1, mn1;
        q4k_scale_min(b + Q4_K_SCALES, 2 * p, &sc0, &mn0);
        q4k_scale_min(b + Q4_K_SCALES, 2 * p + 1, &sc1, &mn1);
        float32x4_t d0 = vdupq_n_f32(d * sc0), m0 = vdupq_n_f32(dmin * mn0);
        float32x4_t d1 = vdupq_n_f32(d * sc1), m1 = vdupq_n_f32(dmin * mn1);
        for (int l = 0; l < 32; l += 8) {
            uint8x8_t q = vld1_u8(qs + 32 * p + l);
            uint16x8_t lo = vmovl_u8(vand_u8(q, vdup_n_u8(15)));
            uint16x8_t hi = vmovl_u8(vshr_n_u8(q, 4));
            float *o0 = y + 64 * p + l, *o1 = y + 64 * p + 32 + l;
            float32x4_t l0 = vcvtq_f32_u32(vmovl_u16(vget_low_u16(lo)));
            float32x4_t l1 = vcvtq_f32_u32(vmovl_u16(vget_high_u16(lo)));
            float32x4_t h0 = vcvtq_f32_u32(vmovl_u16(vget_low_u16(hi)));
            float32x4_t h1 = vcvtq_f32_u32(vmovl_u16(vget_high_u16(hi)));
            vst1q_f32(o0, vsubq_f32(vmulq_f32(d0, l0), m0));
            vst1q_f32(o0 + 4, vsubq_f32(vmulq_f32(d0, l1), m0));
            vst1q_f32(o1, vsubq_f32(vmulq_f32(d1, h0), m1));
            vst1q_f32(o1 + 4, vsubq_f32(vmulq_f32(d1, h1), m1));
        }
    }
}

static void deq_q6_k_neon(const uint8_t *b, float *y)
{
    float d = f16_at_neon(b + Q6_K_D);
    const uint8x8_t three = vdup_n_u8(3), fifteen = vdup_n_u8(15);
    const int16x8_t off = vdupq_n_s16(32);
    for (int h = 0; h < 2; h++) {
        const uint8_t *ql = b + 64 * h, *qh = b + Q6_K_QH + 32 * h;
        const int8_t *sc = (const int8_t *)(b + Q6_K_SC) + 8 * h;
        for (int l = 0; l < 32; l += 8) {
            int is = l / 16;
            uint8x8_t a = vld1_u8(ql + l), c = vld1_u8(ql + l + 32), e = vld1_u8(qh + l);
            uint8x8_t q0 = vorr_u8(vand_u8(a, fifteen), vshl_n_u8(vand_u8(e, three), 4));
            uint8x8_t e2 = vand_u8(vshr_n_u8(e, 2), three), e4 = vand_u8(vshr_n_u8(e, 4), three);
            uint8x8_t q1 = vorr_u8(vand_u8(c, fifteen), vshl_n_u8(e2, 4));
            uint8x8_t q2 = vorr_u8(vshr_n_u8(a, 4), vshl_n_u8(e4, 4));
            uint8x8_t q3 = vorr_u8(vshr_n_u8(c, 4), vshl_n_u8(vshr_n_u8(e, 6), 4));
            float *o = y + 128 * h + l;
            st8_mul_neon(o + 0, vsubq_s16(vreinterpretq_s16_u16(vmovl_u8(q0)), off),
                         vdupq_n_f32(d * (float)sc[is + 0]));
            st8_mul_neon(o + 32, vsubq_s16(vreinterpretq_s16_u16(vmovl_u8(q1)), off),
                         vdupq_n_f32(d * (float)sc[is + 2]));
            st8_mul_neon(o + 64, vsubq_s16(vreinterpretq_s16_u16(vmovl_u8(q2)), off),
                         vdupq_n_f32(d * (float)sc[is + 4]));
            st8_mul_neon(o + 96, vsubq_s16(vreinterpretq_s16_u16(vmovl_u8(q3)), off),
                         vdupq_n_f32(d * (float)sc[is + 6]));
        }
    }
}
#endif

/* SIMD block dequantizer for a type, or NULL (scalar reference then). */
typedef void (*deq_block_simd_fn)(const uint8_t *b, float *y);

static deq_block_simd_fn deq_simd_fn(uint32_t type)
{
    if (path() != KPATH_SIMD)
        return NULL;
    switch (type) {
#if defined(ORK_HAVE_X86_DISPATCH)
    case ORK_TYPE_Q8_0: return deq_q8_0_avx2;
    case ORK_TYPE_Q4_0: return deq_q4_0_avx2;
    case ORK_TYPE_Q4_K: return deq_q4_k_avx2;
    case ORK_TYPE_Q6_K: return deq_q6_k_avx2;
#elif defined(ORK_HAVE_NEON)
    case ORK_TYPE_Q8_0: return deq_q8_0_neon;
    case ORK_TYPE_Q4_0: return deq_q4_0_neon;
    case ORK_TYPE_Q4_K: return deq_q4_k_neon;
    case ORK_TYPE_Q6_K: return deq_q6_k_neon;
#endif
    default: return NULL;
    }
}

int ork_dequant_row(uint32_t type, const void *src, float *dst, int64_t n)
{
    if (type == ORK_TYPE_F16 && n >= 0) {
#if defined(ORK_HAVE_X86_DISPATCH)
        if (path() == KPATH_SIMD) {
            deq_f16_avx2(src, dst, n);
            return 0;
        }
#elif defined(ORK_HAVE_NEON)
        if (path() == KPATH_SIMD) {
            deq_f16_neon(src, dst, n);
            return 0;
        }
#endif
        deq_f16_scalar(src, dst, n);
        return 0;
    }
    deq_block_simd_fn fn = deq_simd_fn(type);
    if (fn && ork_kernels_check(type, n) == 0) {
        const struct ork_type_traits *t = ork_type_traits(type);
        const uint8_t *p = src;
        for (int64_t i = 0; i < n / t->block; i++)
            fn(p + (size_t)i * t->block_bytes, dst + i * t->block);
        return 0;
    }
    return ork_dequant_row_ref(type, src, dst, n);
}

/* ---- fused row dots: dequantize in registers ----
 * F16, BF16, Q8_0 and Q4_0 rows are widened and scaled in registers and fed by FMA into the
 * lane each element would reach through ork_dequant_row + acc_step: the same values (exact
 * dequantization, q * d unfused) and the same operations, so the same bits, without the
 * round trip through a buffer. Returns false for other types (callers dequantize). */

#ifdef ORK_HAVE_X86_DISPATCH
#define TGT_X86 __attribute__((target("avx2,fma,f16c")))

TGT_X86 static inline __m256 q8x8_avx2(__m128i q8, __m256 d)
{
    return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q8)), d);
}

TGT_X86 static bool dot_fused_avx2(uint32_t type, const uint8_t *row, const float *x, int64_t n,
                                   struct dot_acc *acc)
{
    if (type != ORK_TYPE_F16 && type != ORK_TYPE_BF16 && type != ORK_TYPE_Q8_0 &&
        type != ORK_TYPE_Q4_0)
        return false;
    __m256 s[4];
    for (int g = 0; g < 4; g++)
        s[g] = _mm256_loadu_ps(acc->lane + 8 * g);
    int64_t i = 0;
    if (type == ORK_TYPE_F16 || type == ORK_TYPE_BF16) {
        for (; i + DOT_LANES <= n; i += DOT_LANES)
            for (int g = 0; g < 4; g++) {
                __m128i h = _mm_loadu_si128((const __m128i *)(row + 2 * (i + 8 * g)));
                __m256 w = type == ORK_TYPE_F16
                               ? _mm256_cvtph_ps(h)
                               : _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
                s[g] = _mm256_fmadd_ps(w, _mm256_loadu_ps(x + i + 8 * g), s[g]);
            }
    } else if (type == ORK_TYPE_Q8_0) {
        for (; i < n; i += QK_BLOCK) {
            const uint8_t *b = row + (size_t)(i / QK_BLOCK) * 34;
            __m256 d = _mm256_set1_ps(_cvtsh_ss((unsigned short)(b[0] | (b[1] << 8))));
            __m256i q = _mm256_loadu_si256((const __m256i *)(b + 2));
            __m128i lo = _mm256_castsi256_si128(q), hi = _mm256_extracti128_si256(q, 1);
            s[0] = _mm256_fmadd_ps(q8x8_avx2(lo, d), _mm256_loadu_ps(x + i), s[0]);
            s[1] = _mm256_fmadd_ps(q8x8_avx2(_mm_srli_si128(lo, 8), d), _mm256_loadu_ps(x + i + 8), s[1]);
            s[2] = _mm256_fmadd_ps(q8x8_avx2(hi, d), _mm256_loadu_ps(x + i + 16), s[2]);
            s[3] = _mm256_fmadd_ps(q8x8_avx2(_mm_srli_si128(hi, 8), d), _mm256_loadu_ps(x + i + 24), s[3]);
        }
    } else {
        for (; i < n; i += QK_BLOCK) {
            const uint8_t *b = row + (size_t)(i / QK_BLOCK) * 18;
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
    return true;
}
#endif

#ifdef ORK_HAVE_NEON
static inline void q8x16_fma_neon(float32x4_t *s, int8x16_t q, float32x4_t d, const float *x)
{
    int16x8_t l = vmovl_s8(vget_low_s8(q)), h = vmovl_s8(vget_high_s8(q));
    int32x4_t v[4] = { vmovl_s16(vget_low_s16(l)), vmovl_s16(vget_high_s16(l)),
                       vmovl_s16(vget_low_s16(h)), vmovl_s16(vget_high_s16(h)) };
    for (int r = 0; r < 4; r++)
        s[r] = vfmaq_f32(s[r], vmulq_f32(vcvtq_f32_s32(v[r]), d), vld1q_f32(x + 4 * r));
}

static bool dot_fused_neon(uint32_t type, const uint8_t *row, const float *x, int64_t n,
                           struct dot_acc *acc)
{
    if (type != ORK_TYPE_F16 && type != ORK_TYPE_BF16 && type != ORK_TYPE_Q8_0 &&
        type != ORK_TYPE_Q4_0)
        return false;
    float32x4_t s[8];
    for (int r = 0; r < 8; r++)
        s[r] = vld1q_f32(acc->lane + 4 * r);
    int64_t i = 0;
    if (type == ORK_TYPE_F16 || type == ORK_TYPE_BF16) {
        for (; i + DOT_LANES <= n; i += DOT_LANES)
            for (int r = 0; r < 8; r++) {
                uint16x4_t h = vreinterpret_u16_u8(vld1_u8(row + 2 * (i + 4 * r)));
                float32x4_t w = type == ORK_TYPE_F16
                                    ? vcvt_f32_f16(vreinterpret_f16_u16(h))
                                    : vreinterpretq_f32_u32(vshll_n_u16(h, 16));
                s[r] = vfmaq_f32(s[r], w, vld1q_f32(x + i + 4 * r));
            }
    } else {
        const size_t bb = type == ORK_TYPE_Q8_0 ? 34 : 18;
        for (; i < n; i += QK_BLOCK) {
            const uint8_t *b = row + (size_t)(i / QK_BLOCK) * bb;
            float32x4_t d = vdupq_n_f32(f16_at_neon(b));
            int8x16_t q0, q1;
            if (type == ORK_TYPE_Q8_0) {
                q0 = vld1q_s8((const int8_t *)b + 2);
                q1 = vld1q_s8((const int8_t *)b + 18);
            } else {
                uint8x16_t raw = vld1q_u8(b + 2);
                q0 = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(raw, vdupq_n_u8(15))), vdupq_n_s8(8));
                q1 = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(raw, 4)), vdupq_n_s8(8));
            }
            q8x16_fma_neon(s, q0, d, x + i);
            q8x16_fma_neon(s + 4, q1, d, x + i + 16);
        }
    }
    for (int r = 0; r < 8; r++)
        vst1q_f32(acc->lane + 4 * r, s[r]);
    float t = acc->tail;
    for (; i < n; i++) {
        uint16_t h = (uint16_t)(row[2 * i] | (row[2 * i + 1] << 8));
        float w = type == ORK_TYPE_F16 ? ork_fp16_to_f32(h) : ork_bf16_to_f32(h);
        float pr = w * x[i];
        t += pr;
    }
    acc->tail = t;
    return true;
}
#endif

static bool dot_fused(uint32_t type, const uint8_t *row, const float *x, int64_t n,
                      struct dot_acc *acc, enum kpath kp)
{
    if (kp != KPATH_SIMD)
        return false;
#if defined(ORK_HAVE_X86_DISPATCH)
    return dot_fused_avx2(type, row, x, n, acc);
#elif defined(ORK_HAVE_NEON)
    return dot_fused_neon(type, row, x, n, acc);
#else
    (void)type; (void)row; (void)x; (void)n; (void)acc;
    return false;
#endif
}

float ork_vec_dot(uint32_t type, const void *row, const float *x, int64_t n)
{
    if (ork_kernels_check(type, n) < 0)
        return __builtin_nanf("");
    if (type == ORK_TYPE_F32)
        return ork_vec_dot_f32(row, x, n);
    enum kpath kp = path();
    struct dot_acc acc;
    memset(&acc, 0, sizeof acc);
    if (dot_fused(type, row, x, n, &acc, kp))
        return acc_end(&acc, kp);
    float buf[DOT_CHUNK];
    const uint8_t *p = row;
    for (int64_t off = 0; off < n; off += DOT_CHUNK) {
        int64_t c = n - off < DOT_CHUNK ? n - off : DOT_CHUNK;
        ork_dequant_row(type, p + ork_type_row_bytes(type, (uint64_t)off), buf, c);
        acc_step(&acc, buf, x + off, c, kp);
    }
    return acc_end(&acc, kp);
}

/* ---- y += a * v (attention's weighted sum of values) ----
 * Per element y[i] = y[i] + a * v[i], the product rounded before the add (never fused), so the
 * SIMD paths give the scalar loop's bits. v is f32 or f16 (widened exactly). */

/* y[i] += a * v[i] for i in [from, n): the scalar reference, and the SIMD paths' tail. */
static void mad_scalar(float *y, const uint8_t *v, uint32_t type, float a, int64_t from, int64_t n)
{
    for (int64_t i = from; i < n; i++) {
        float w;
        if (type == ORK_TYPE_F16)
            w = ork_fp16_to_f32((uint16_t)(v[2 * i] | (v[2 * i + 1] << 8)));
        else
            memcpy(&w, v + 4 * i, sizeof w);
        float pr = a * w;
        y[i] += pr;
    }
}

#ifdef ORK_HAVE_X86_DISPATCH
TGT_X86 static void mad_avx2(float *y, const uint8_t *v, uint32_t type, float a, int64_t n)
{
    __m256 va = _mm256_set1_ps(a);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 w = type == ORK_TYPE_F16
                       ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(v + 2 * i)))
                       : _mm256_loadu_ps((const float *)(const void *)v + i);
        _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), _mm256_mul_ps(va, w)));
    }
    mad_scalar(y, v, type, a, i, n);
}
#endif

#ifdef ORK_HAVE_NEON
static void mad_neon(float *y, const uint8_t *v, uint32_t type, float a, int64_t n)
{
    float32x4_t va = vdupq_n_f32(a);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        float32x4_t w = type == ORK_TYPE_F16
                            ? vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(v + 2 * i)))
                            : vld1q_f32((const float *)(const void *)v + i);
        vst1q_f32(y + i, vaddq_f32(vld1q_f32(y + i), vmulq_f32(va, w)));
    }
    mad_scalar(y, v, type, a, i, n);
}
#endif

int ork_vec_mad(float *y, const void *v, uint32_t type, float a, int64_t n)
{
    if (type != ORK_TYPE_F32 && type != ORK_TYPE_F16)
        return ork_errorf(ORK_EUNSUPPORTED, "vec_mad: %s values", ork_type_name(type));
    const uint8_t *p = v;
#if defined(ORK_HAVE_X86_DISPATCH)
    if (path() == KPATH_SIMD) {
        mad_avx2(y, p, type, a, n);
        return 0;
    }
#elif defined(ORK_HAVE_NEON)
    if (path() == KPATH_SIMD) {
        mad_neon(y, p, type, a, n);
        return 0;
    }
#endif
    mad_scalar(y, p, type, a, 0, n);
    return 0;
}

/* ---- several rows at once (attention over a KV cache) ----
 * ork_vec_dot_rows: each row's dot takes exactly the lanes, operations and reduction of
 * ork_vec_dot (a lane's FMA chain does not depend on how wide the register holding it is), so
 * the bits are the same; the x values are loaded once for several rows and several independent
 * FMA chains are in flight. ork_vec_mad_rows: each element of y gets y + a_r * v_r (product
 * rounded, then the add) for r = 0, 1, ... in order, as nr ork_vec_mad calls would, while y
 * stays in registers across the rows. AVX-512 is used on the avx512vnni path (which implies
 * AVX-512 F), AVX2 on the other x86 paths; elsewhere the one-row kernels are called. */

/* Rows per pass: AVX-512 keeps 4 rows x 2 zmm accumulators + 2 x registers (of 32); AVX2
 * 2 rows x 4 ymm + 4 x registers (of 16). */
#define ROWS_512 4
#define ROWS_256 2
/* Floats of y kept in registers by ork_vec_mad_rows: 8 zmm or 8 ymm (enough independent
 * add chains for two adds per cycle at a 4-cycle latency). */
#define MAD_REGS 8

/* The x86 attention loops (ork_vec_dot_rows, ork_vec_mad_rows over KV runs) read row t while
 * the row DOT_PREFETCH_ROWS ahead is prefetched: from DRAM they ran 12 % faster with it (decode
 * attention phase, Qwen3-1.7B shape, 512 tokens, two threads: 2.77-2.94 against 3.26-3.37 ms
 * per token; docs/engine.md "KV cache layout"). */
#define DOT_PREFETCH_ROWS 4
/* Queries one pass of the two-query attention loops serves (GQA heads sharing a KV head). */
#define DOT_QUERIES_MAX 2
#define DOT_LINE 64

/* Bytes per element of the F32 / F16 rows the attention loops read. */
static size_t elt_bytes(uint32_t type)
{
    return type == ORK_TYPE_F16 ? sizeof(uint16_t) : sizeof(float);
}

/* Prefetches `bytes` from p (a row or part of one). */
static inline void prefetch_bytes(const uint8_t *p, size_t bytes)
{
    for (size_t b = 0; b < bytes; b += DOT_LINE)
        __builtin_prefetch(p + b, 0, 3);
}

#ifdef ORK_HAVE_X86_DISPATCH
/* y[i] += a * v[i] for one element: the ork_vec_mad reference step. */
static inline float mad_elem(float y, const uint8_t *v, uint32_t type, float a, int64_t i)
{
    float w;
    if (type == ORK_TYPE_F16)
        w = ork_fp16_to_f32((uint16_t)(v[2 * i] | (v[2 * i + 1] << 8)));
    else
        memcpy(&w, v + 4 * i, sizeof w);
    float pr = a * w;
    return y + pr;
}

/* ork_vec_mad_rows on the elements [from, n) the vector loops left, one at a time. */
static void mad_rows_tail(float *y, const uint8_t *v, size_t stride, uint32_t type,
                          const float *a, int64_t nr, int64_t from, int64_t n)
{
    for (int64_t i = from; i < n; i++) {
        float yi = y[i];
        for (int64_t t = 0; t < nr; t++)
            yi = mad_elem(yi, v + (size_t)t * stride, type, a[t], i);
        y[i] = yi;
    }
}

/* The in-order f32 tail of one row's dot (elements [from, n)), as the one-row kernels add it. */
static float dot_tail(const uint8_t *row, uint32_t type, const float *x, int64_t from, int64_t n)
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

#define TGT_X86_512 __attribute__((target("avx512f,avx2,fma,f16c")))

TGT_X86_512 static inline __m512 load16_512(const uint8_t *row, uint32_t type, int64_t i)
{
    return type == ORK_TYPE_F16
               ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(row + 2 * i)))
               : _mm512_loadu_ps((const float *)(const void *)row + i);
}

TGT_X86 static inline __m256 load8_256(const uint8_t *row, uint32_t type, int64_t i)
{
    return type == ORK_TYPE_F16 ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(row + 2 * i)))
                                : _mm256_loadu_ps((const float *)(const void *)row + i);
}

/* ROWS_512 rows r[0..3] (repeats allowed) against x: out[k] = the row's dot. */
/* acc_end of 32 lanes l[] in registers, the same additions in the same order: a = l[k] +
 * l[k+8] and b = l[k+16] + l[k+24] (k < 8, summed by the caller), s[k] = a + b, then pairs of
 * pairs, then the tail (vhaddps adds neighbours; an f32 sum does not depend on its operands'
 * order). */
TGT_X86 static inline float acc_end_256(__m256 a, __m256 b, float tail)
{
    __m256 sk = _mm256_add_ps(a, b);                /* s[0..7] */
    __m256 p = _mm256_hadd_ps(sk, sk);              /* s0+s1, s2+s3 | s4+s5, s6+s7 */
    __m256 q = _mm256_hadd_ps(p, p);                /* (s0+s1)+(s2+s3) | (s4+s5)+(s6+s7) */
    float r = _mm_cvtss_f32(_mm256_castps256_ps128(q)) + _mm_cvtss_f32(_mm256_extractf128_ps(q, 1));
    return r + tail;
}

/* acc_end_256 of the lanes 0..15 in lo and 16..31 in hi. */
TGT_X86_512 static inline float acc_end_512(__m512 lo, __m512 hi, float tail)
{
    __m256 lo_hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(lo), 1));
    __m256 hi_hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(hi), 1));
    return acc_end_256(_mm256_add_ps(_mm512_castps512_ps256(lo), lo_hi),
                       _mm256_add_ps(_mm512_castps512_ps256(hi), hi_hi), tail);
}

/* ROWS_512 rows against nq (1 or 2, constant when inlined) queries x[q]: out[q][k], each the
 * lanes, tail and reduction of one row's dot; the rows are loaded once for both queries. */
TGT_X86_512 static inline __attribute__((always_inline)) void
dot4q_avx512(uint32_t type, const uint8_t *const *r, const float *const *x, int nq, int64_t n,
             float (*out)[ROWS_512])
{
    __m512 s[DOT_QUERIES_MAX][ROWS_512][2];
    for (int q = 0; q < nq; q++)
        for (int k = 0; k < ROWS_512; k++)
            s[q][k][0] = s[q][k][1] = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + DOT_LANES <= n; i += DOT_LANES) {
        __m512 x0[DOT_QUERIES_MAX], x1[DOT_QUERIES_MAX];
        for (int q = 0; q < nq; q++) {
            x0[q] = _mm512_loadu_ps(x[q] + i);
            x1[q] = _mm512_loadu_ps(x[q] + i + 16);
        }
        for (int k = 0; k < ROWS_512; k++) {
            const __m512 w0 = load16_512(r[k], type, i), w1 = load16_512(r[k], type, i + 16);
            for (int q = 0; q < nq; q++) {
                s[q][k][0] = _mm512_fmadd_ps(w0, x0[q], s[q][k][0]);
                s[q][k][1] = _mm512_fmadd_ps(w1, x1[q], s[q][k][1]);
            }
        }
    }
    for (int q = 0; q < nq; q++)
        for (int k = 0; k < ROWS_512; k++)
            out[q][k] = acc_end_512(s[q][k][0], s[q][k][1], dot_tail(r[k], type, x[q], i, n));
}

TGT_X86_512 static void dot4_avx512(uint32_t type, const uint8_t *const *r, const float *x,
                                    int64_t n, float *out)
{
    dot4q_avx512(type, r, &x, 1, n, (float (*)[ROWS_512])out);
}

TGT_X86_512 static void dot4x2_avx512(uint32_t type, const uint8_t *const *r,
                                      const float *const *x, int64_t n, float (*out)[ROWS_512])
{
    dot4q_avx512(type, r, x, 2, n, out);
}

TGT_X86 static void dot2_avx2(uint32_t type, const uint8_t *const *r, const float *x, int64_t n,
                              float *out)
{
    __m256 s[ROWS_256][4];
    for (int k = 0; k < ROWS_256; k++)
        for (int g = 0; g < 4; g++)
            s[k][g] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + DOT_LANES <= n; i += DOT_LANES)
        for (int g = 0; g < 4; g++) {
            __m256 xv = _mm256_loadu_ps(x + i + 8 * g);
            for (int k = 0; k < ROWS_256; k++)
                s[k][g] = _mm256_fmadd_ps(load8_256(r[k], type, i + 8 * g), xv, s[k][g]);
        }
    for (int k = 0; k < ROWS_256; k++)
        out[k] = acc_end_256(_mm256_add_ps(s[k][0], s[k][1]), _mm256_add_ps(s[k][2], s[k][3]),
                             dot_tail(r[k], type, x, i, n));
}

/* ---- F16 / BF16 weights x rounded X, several rows of each (ork__dot16_tile) ----
 * Each output takes exactly ork_vec_dot_act's lanes, FMAs, tail and reduction (the 32-lane
 * accumulator above, two zmm per output); the weights are widened in registers once per 32
 * elements for TILE16_MX X rows, and TILE16_NW x TILE16_MX independent FMA chains are in flight
 * (3 x 4 x 2 = 24 accumulators + 6 weight registers of 32). */
#define TILE16_NW 3
#define TILE16_MX 4
#define TGT_X86_512BW __attribute__((target("avx512f,avx512bw,avx2,fma,f16c")))

TGT_X86_512BW static inline __m512 wide16_512(const uint8_t *row, uint32_t type, int64_t i)
{
    __m256i h = _mm256_loadu_si256((const __m256i *)(row + 2 * i));
    if (type == ORK_TYPE_F16)
        return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));   /* BF16 */
}

/* Rows r[0..TILE16_NW) (repeats allowed) x X rows x[0..MX): out[t][k]. */
#define TILE16(MX)                                                                             \
    TGT_X86_512BW static void tile16_##MX(uint32_t type, const uint8_t *const *r,             \
                                          const float *const *x, int64_t n,                   \
                                          float out[][TILE16_NW])                             \
    {                                                                                          \
        __m512 s[TILE16_NW][MX][2];                                                            \
        for (int k = 0; k < TILE16_NW; k++)                                                    \
            for (int t = 0; t < MX; t++)                                                       \
                s[k][t][0] = s[k][t][1] = _mm512_setzero_ps();                                 \
        int64_t i = 0;                                                                         \
        for (; i + DOT_LANES <= n; i += DOT_LANES) {                                           \
            __m512 w[TILE16_NW][2];                                                            \
            for (int k = 0; k < TILE16_NW; k++) {                                              \
                w[k][0] = wide16_512(r[k], type, i);                                           \
                w[k][1] = wide16_512(r[k], type, i + 16);                                      \
            }                                                                                  \
            for (int t = 0; t < MX; t++) {                                                     \
                __m512 x0 = _mm512_loadu_ps(x[t] + i), x1 = _mm512_loadu_ps(x[t] + i + 16);    \
                for (int k = 0; k < TILE16_NW; k++) {                                          \
                    s[k][t][0] = _mm512_fmadd_ps(w[k][0], x0, s[k][t][0]);                     \
                    s[k][t][1] = _mm512_fmadd_ps(w[k][1], x1, s[k][t][1]);                     \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
        for (int t = 0; t < MX; t++)                                                           \
            for (int k = 0; k < TILE16_NW; k++) {                                              \
                struct dot_acc acc;                                                            \
                _mm512_storeu_ps(acc.lane, s[k][t][0]);                                        \
                _mm512_storeu_ps(acc.lane + 16, s[k][t][1]);                                   \
                acc.tail = dot_tail(r[k], type, x[t], i, n);                                   \
                out[t][k] = acc_end(&acc, KPATH_SIMD);                                         \
            }                                                                                  \
    }
TILE16(1)
TILE16(2)
TILE16(3)
TILE16(4)

/* nq (1 or 2, constant when inlined) weight vectors a[q] over the same rows into y[q]: each
 * the operations of mad_rows for its own y, the rows loaded once for both. */
TGT_X86_512 static inline __attribute__((always_inline)) void
mad_rowsq_avx512(float *const *y, const uint8_t *v, size_t stride, uint32_t type,
                 const float *const *a, int nq, int64_t nr, int64_t n)
{
    const int64_t W = 16;
    const size_t elt = elt_bytes(type);
    int64_t i = 0;
    for (; i + MAD_REGS * W <= n; i += MAD_REGS * W) {
        __m512 acc[DOT_QUERIES_MAX][MAD_REGS];
        for (int q = 0; q < nq; q++)
            for (int g = 0; g < MAD_REGS; g++)
                acc[q][g] = _mm512_loadu_ps(y[q] + i + W * g);
        for (int64_t t = 0; t < nr; t++) {
            __m512 va[DOT_QUERIES_MAX];
            for (int q = 0; q < nq; q++)
                va[q] = _mm512_set1_ps(a[q][t]);
            const uint8_t *row = v + (size_t)t * stride;
            if (t + DOT_PREFETCH_ROWS < nr)
                prefetch_bytes(row + (size_t)DOT_PREFETCH_ROWS * stride + (size_t)i * elt,
                               (size_t)(MAD_REGS * W) * elt);
            for (int g = 0; g < MAD_REGS; g++) {
                const __m512 w = load16_512(row, type, i + W * g);
                for (int q = 0; q < nq; q++)
                    acc[q][g] = _mm512_add_ps(acc[q][g], _mm512_mul_ps(va[q], w));
            }
        }
        for (int q = 0; q < nq; q++)
            for (int g = 0; g < MAD_REGS; g++)
                _mm512_storeu_ps(y[q] + i + W * g, acc[q][g]);
    }
    for (; i + W <= n; i += W)
        for (int q = 0; q < nq; q++) {
            __m512 acc = _mm512_loadu_ps(y[q] + i);
            for (int64_t t = 0; t < nr; t++)
                acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_set1_ps(a[q][t]),
                                                       load16_512(v + (size_t)t * stride, type, i)));
            _mm512_storeu_ps(y[q] + i, acc);
        }
    for (int q = 0; q < nq; q++)
        mad_rows_tail(y[q], v, stride, type, a[q], nr, i, n);
}

TGT_X86_512 static void mad_rows_avx512(float *y, const uint8_t *v, size_t stride, uint32_t type,
                                        const float *a, int64_t nr, int64_t n)
{
    mad_rowsq_avx512(&y, v, stride, type, &a, 1, nr, n);
}

TGT_X86_512 static void mad_rows2_avx512(float *const *y, const uint8_t *v, size_t stride,
                                         uint32_t type, const float *const *a, int64_t nr,
                                         int64_t n)
{
    mad_rowsq_avx512(y, v, stride, type, a, 2, nr, n);
}

TGT_X86 static void mad_rows_avx2(float *y, const uint8_t *v, size_t stride, uint32_t type,
                                  const float *a, int64_t nr, int64_t n)
{
    const int64_t W = 8;
    const size_t elt = elt_bytes(type);
    int64_t i = 0;
    for (; i + MAD_REGS * W <= n; i += MAD_REGS * W) {
        __m256 acc[MAD_REGS];
        for (int g = 0; g < MAD_REGS; g++)
            acc[g] = _mm256_loadu_ps(y + i + W * g);
        for (int64_t t = 0; t < nr; t++) {
            __m256 va = _mm256_set1_ps(a[t]);
            const uint8_t *row = v + (size_t)t * stride;
            if (t + DOT_PREFETCH_ROWS < nr)
                prefetch_bytes(row + (size_t)DOT_PREFETCH_ROWS * stride + (size_t)i * elt,
                               (size_t)(MAD_REGS * W) * elt);
            for (int g = 0; g < MAD_REGS; g++)
                acc[g] = _mm256_add_ps(acc[g], _mm256_mul_ps(va, load8_256(row, type, i + W * g)));
        }
        for (int g = 0; g < MAD_REGS; g++)
            _mm256_storeu_ps(y + i + W * g, acc[g]);
    }
    for (; i + W <= n; i += W) {
        __m256 acc = _mm256_loadu_ps(y + i);
        for (int64_t t = 0; t < nr; t++)
            acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_set1_ps(a[t]),
                                                   load8_256(v + (size_t)t * stride, type, i)));
        _mm256_storeu_ps(y + i, acc);
    }
    mad_rows_tail(y, v, stride, type, a, nr, i, n);
}
#endif

bool ork__dot16_tile(enum kisa k, uint32_t type, const uint8_t *w, size_t row_bytes, int nw,
                     const float *xr, size_t x_stride, int mx, int64_t n, float *y, size_t ldy)
{
#ifdef ORK_HAVE_X86_DISPATCH
    if (k != KISA_AVX512VNNI || nw < 1 || nw > TILE16_NW || mx < 1 || mx > TILE16_MX)
        return false;
    const uint8_t *r[TILE16_NW];
    const float *x[TILE16_MX];
    for (int j = 0; j < TILE16_NW; j++)     /* past the last row: repeat it, drop the result */
        r[j] = w + (size_t)(j < nw ? j : nw - 1) * row_bytes;
    for (int t = 0; t < mx; t++)
        x[t] = xr + (size_t)t * x_stride;
    float o[TILE16_MX][TILE16_NW];
    switch (mx) {
    case 1: tile16_1(type, r, x, n, o); break;
    case 2: tile16_2(type, r, x, n, o); break;
    case 3: tile16_3(type, r, x, n, o); break;
    default: tile16_4(type, r, x, n, o); break;
    }
    for (int t = 0; t < mx; t++)
        for (int j = 0; j < nw; j++)
            y[(size_t)t * ldy + (size_t)j] = o[t][j];
    return true;
#else
    (void)k, (void)type, (void)w, (void)row_bytes, (void)nw, (void)xr, (void)x_stride, (void)mx;
    (void)n, (void)y, (void)ldy;
    return false;
#endif
}

/* The attention loops for nq (1 or 2) queries x[q] / weight vectors a[q] over the same rows:
 * on the AVX-512 path the rows are loaded once for all of them, elsewhere the one-query loop
 * runs per query (each query's bits are the same either way). */
static int dot_rows(uint32_t type, const void *rows, size_t row_stride, const float *const *x,
                    int nq, int64_t n, int64_t nr, float *const *out)
{
    if (type != ORK_TYPE_F32 && type != ORK_TYPE_F16)
        return ork_errorf(ORK_EUNSUPPORTED, "vec_dot_rows: %s rows", ork_type_name(type));
    const uint8_t *p = rows;
    size_t sb = row_stride * elt_bytes(type);
    int64_t r = 0;
#ifdef ORK_HAVE_X86_DISPATCH
    enum kisa k = ork__kisa();
    int group = k == KISA_AVX512VNNI ? ROWS_512 : k != KISA_SCALAR ? ROWS_256 : 0;
    if (group == ROWS_256 && nq > 1) {
        for (int q = 0; q < nq; q++)
            (void)dot_rows(type, rows, row_stride, &x[q], 1, n, nr, &out[q]);
        return 0;
    }
    for (; group && r < nr; r += group) {
        const uint8_t *rp[ROWS_512];
        float o[DOT_QUERIES_MAX][ROWS_512];
        for (int j = 0; j < group; j++)     /* past the last row: repeat it, drop the result */
            rp[j] = p + (size_t)(r + j < nr ? r + j : nr - 1) * sb;
        for (int64_t j = r + DOT_PREFETCH_ROWS; j < r + DOT_PREFETCH_ROWS + group && j < nr; j++)
            prefetch_bytes(p + (size_t)j * sb, (size_t)n * elt_bytes(type));
        if (group == ROWS_256)
            dot2_avx2(type, rp, x[0], n, o[0]);
        else if (nq == 2)
            dot4x2_avx512(type, rp, x, n, o);
        else
            dot4_avx512(type, rp, x[0], n, o[0]);
        for (int q = 0; q < nq; q++)
            for (int j = 0; j < group && r + j < nr; j++)
                out[q][r + j] = o[q][j];
    }
#endif
    for (int q = 0; q < nq; q++)
        for (int64_t t = r; t < nr; t++)
            out[q][t] = ork_vec_dot(type, p + (size_t)t * sb, x[q], n);
    return 0;
}

static int mad_rows(float *const *y, const void *v, size_t row_stride, uint32_t type,
                    const float *const *a, int nq, int64_t nr, int64_t n)
{
    if (type != ORK_TYPE_F32 && type != ORK_TYPE_F16)
        return ork_errorf(ORK_EUNSUPPORTED, "vec_mad_rows: %s values", ork_type_name(type));
    const uint8_t *p = v;
    size_t sb = row_stride * elt_bytes(type);
#ifdef ORK_HAVE_X86_DISPATCH
    enum kisa k = ork__kisa();
    if (k == KISA_AVX512VNNI) {
        if (nq == 2)
            mad_rows2_avx512(y, p, sb, type, a, nr, n);
        else
            mad_rows_avx512(y[0], p, sb, type, a[0], nr, n);
        return 0;
    }
    if (k != KISA_SCALAR) {
        for (int q = 0; q < nq; q++)
            mad_rows_avx2(y[q], p, sb, type, a[q], nr, n);
        return 0;
    }
#endif
    for (int q = 0; q < nq; q++)
        for (int64_t r = 0; r < nr; r++)
            ork_vec_mad(y[q], p + (size_t)r * sb, type, a[q][r], n);
    return 0;
}

int ork_vec_dot_rows(uint32_t type, const void *rows, size_t row_stride, const float *x,
                     int64_t n, int64_t nr, float *out)
{
    return dot_rows(type, rows, row_stride, &x, 1, n, nr, &out);
}

int ork_vec_dot_rows2(uint32_t type, const void *rows, size_t row_stride, const float *const *x,
                      int64_t n, int64_t nr, float *const *out)
{
    return dot_rows(type, rows, row_stride, x, DOT_QUERIES_MAX, n, nr, out);
}

int ork_vec_mad_rows(float *y, const void *v, size_t row_stride, uint32_t type, const float *a,
                     int64_t nr, int64_t n)
{
    return mad_rows(&y, v, row_stride, type, &a, 1, nr, n);
}

int ork_vec_mad_rows2(float *const *y, const void *v, size_t row_stride, uint32_t type,
                      const float *const *a, int64_t nr, int64_t n)
{
    return mad_rows(y, v, row_stride, type, a, DOT_QUERIES_MAX, nr, n);
}

/* ---- activations converted like the weights (ORK_ACT_QUANT) ---- */

/* Q8_0 block: f16 d, int8 q[32] (quant_ref.c). */
#define Q8_BLOCK 32
#define Q8_BYTES 34
#define Q4_0_BYTES 18

int ork_quantize_row_q8_0(const float *x, void *dst, int64_t n)
{
    if (n < 0 || n % Q8_BLOCK)
        return ork_errorf(ORK_EINVAL, "Q8_0 quantization of %lld elements (not a multiple of 32)",
                          (long long)n);
    /* the SIMD quantizers give the scalar block's bytes (gemm_q8.c, test_kernels_gemm) */
    ork__quantize_q8_0(ork__kisa(), x, dst, n);
    return 0;
}

float ork_vec_dot_q8(uint32_t type, const void *row, const void *xq, int64_t n)
{
    if ((type != ORK_TYPE_Q8_0 && type != ORK_TYPE_Q4_0) || n < 0 || n % Q8_BLOCK)
        return __builtin_nanf("");
    struct q8_acc acc;
    memset(&acc, 0, sizeof acc);
    ork__q8_blocks(ork__kisa(), type, row, xq, n / Q8_BLOCK, &acc);
    return ork__q8_end(&acc);
}

/* x rounded through a 16-bit float type (exact f32 values of f16 / bf16 numbers). */
#ifdef ORK_HAVE_X86_DISPATCH
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
#endif

/* x rounded to the 16-bit weight type and widened back (the activations F16/BF16 matmuls
 * use); every path gives ork_f32_to_fp16 / ork_f32_to_bf16's bits. */
static void round_act(uint32_t type, const float *x, float *out, int64_t n)
{
    int64_t i = 0;
#ifdef ORK_HAVE_X86_DISPATCH
    if (path() == KPATH_SIMD)
        i = round_act_avx2(type, x, out, n);
#endif
    if (type == ORK_TYPE_F16)
        for (; i < n; i++)
            out[i] = ork_fp16_to_f32(ork_f32_to_fp16(x[i]));
    else
        for (; i < n; i++)
            out[i] = ork_bf16_to_f32(ork_f32_to_bf16(x[i]));
}

#ifdef ORK_HAVE_X86_DISPATCH
__attribute__((target("avx2,f16c")))
static int64_t to_fp16_f16c(const float *x, uint16_t *dst, int64_t n)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(void *)(dst + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
    return i;
}
#endif

void ork_f32_to_fp16_row(const float *x, uint16_t *dst, int64_t n)
{
    int64_t i = 0;
#ifdef ORK_HAVE_X86_DISPATCH
    if (path() == KPATH_SIMD)
        i = to_fp16_f16c(x, dst, n);
#elif defined(ORK_HAVE_NEON)
    /* FCVTN rounds by FPCR (round to nearest even unless a program changed it) and quiets NaNs
     * keeping the payload's top bits, as ork_f32_to_fp16 */
    for (; path() == KPATH_SIMD && i + 4 <= n; i += 4)
        vst1_u16(dst + i, vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(x + i))));
#endif
    for (; i < n; i++)
        dst[i] = ork_f32_to_fp16(x[i]);
}

void ork__round_act(uint32_t type, const float *x, float *out, int64_t n)
{
    round_act(type, x, out, n);
}

float ork_vec_dot_act(uint32_t type, const void *row, const float *x, int64_t n, enum ork_act act)
{
    if (act != ORK_ACT_QUANT || type == ORK_TYPE_F32)
        return ork_vec_dot(type, row, x, n);
    if (ork_kernels_check(type, n) < 0)
        return __builtin_nanf("");
    const uint8_t *p = row;
    enum kisa k = ork__kisa();
    if (type == ORK_TYPE_Q8_0 || type == ORK_TYPE_Q4_0) {
        uint8_t xq[DOT_CHUNK / Q8_BLOCK * Q8_BYTES];
        struct q8_acc acc;
        memset(&acc, 0, sizeof acc);
        for (int64_t off = 0; off < n; off += DOT_CHUNK) {
            int64_t c = n - off < DOT_CHUNK ? n - off : DOT_CHUNK;
            ork_quantize_row_q8_0(x + off, xq, c);
            const uint8_t *wc = p + ork_type_row_bytes(type, (uint64_t)off);
            ork__q8_blocks(k, type, wc, xq, c / Q8_BLOCK, &acc);
        }
        return ork__q8_end(&acc);
    }
    if (type == ORK_TYPE_Q4_K || type == ORK_TYPE_Q6_K) {
        uint8_t xq[DOT_CHUNK / ORK_Q8_K_BLOCK * ORK_Q8_K_BYTES];
        float sum = 0.0f;
        for (int64_t off = 0; off < n; off += DOT_CHUNK) {
            int64_t c = n - off < DOT_CHUNK ? n - off : DOT_CHUNK;
            ork_quantize_row_q8_k(x + off, xq, c);
            const uint8_t *wc = p + ork_type_row_bytes(type, (uint64_t)off);
            ork__q8k_blocks(k, type, wc, xq, c / ORK_Q8_K_BLOCK, &sum);
        }
        return sum;
    }
    /* F16, BF16: dequantized row times rounded x, the same accumulator as ork_vec_dot_f32 */
    enum kpath kp = path();
    struct dot_acc acc;
    memset(&acc, 0, sizeof acc);
    float wb[DOT_CHUNK], xb[DOT_CHUNK];
    for (int64_t off = 0; off < n; off += DOT_CHUNK) {
        int64_t c = n - off < DOT_CHUNK ? n - off : DOT_CHUNK;
        ork_dequant_row(type, p + ork_type_row_bytes(type, (uint64_t)off), wb, c);
        round_act(type, x + off, xb, c);
        acc_step(&acc, wb, xb, c, kp);
    }
    return acc_end(&acc, kp);
}
