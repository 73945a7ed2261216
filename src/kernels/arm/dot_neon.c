/* arm/dot_neon.c -- the NEON kernels of the f32-activation dots (both AArch64 paths): the
 * 32-lane f32 accumulator step (8 registers x 4), F16 and block dequantization (Q8_0, Q4_0,
 * Q4_K, Q6_K), the fused row dots of F16 / BF16 / Q8_0 / Q4_0 weights, y += a * v and the F16
 * conversion of rows. Same order and bits as dot.c's description (NEON and AVX2 agree). */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <ork-kernels/kernels.h>

#include "kern_priv.h"
#include "qk_block.h"

#ifdef ORK_KERN_ARM
#include <arm_neon.h>

/* The loops over the accumulator registers are unrolled whole: GCC 12 at -O2 keeps them as
 * loops otherwise, with the 8 accumulators on the stack (a load and a store around every FMA;
 * tools/a76_cost.sh "one F32 row"). */
#define DN_UNROLL _Pragma("GCC unroll 8")

static void acc_step_neon(struct ork__dot_acc *acc, const float *a, const float *b, int64_t n)
{
    float32x4_t s[8];
    DN_UNROLL for (int r = 0; r < 8; r++)
        s[r] = vld1q_f32(acc->lane + 4 * r);
    int64_t i = 0;
    for (; i + ORK_DOT_LANES <= n; i += ORK_DOT_LANES)
        DN_UNROLL for (int r = 0; r < 8; r++)
            s[r] = vfmaq_f32(s[r], vld1q_f32(a + i + 4 * r), vld1q_f32(b + i + 4 * r));
    DN_UNROLL for (int r = 0; r < 8; r++)
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
    for (; i < n; i++)
        dst[i] = ork__f16le(p + 2 * i);
}

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
    for (int i = 0; i < Q8_0_BLOCK; i += 8)
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

static inline void q8x16_fma_neon(float32x4_t *s, int8x16_t q, float32x4_t d, const float *x)
{
    int16x8_t l = vmovl_s8(vget_low_s8(q)), h = vmovl_s8(vget_high_s8(q));
    int32x4_t v[4] = { vmovl_s16(vget_low_s16(l)), vmovl_s16(vget_high_s16(l)),
                       vmovl_s16(vget_low_s16(h)), vmovl_s16(vget_high_s16(h)) };
    DN_UNROLL for (int r = 0; r < 4; r++)
        s[r] = vfmaq_f32(s[r], vmulq_f32(vcvtq_f32_s32(v[r]), d), vld1q_f32(x + 4 * r));
}

static void dot_fused_neon(uint32_t type, const uint8_t *row, const float *x, int64_t n,
                           struct ork__dot_acc *acc)
{
    float32x4_t s[8];
    DN_UNROLL for (int r = 0; r < 8; r++)
        s[r] = vld1q_f32(acc->lane + 4 * r);
    int64_t i = 0;
    if (type == ORK_TYPE_F16 || type == ORK_TYPE_BF16) {
        for (; i + ORK_DOT_LANES <= n; i += ORK_DOT_LANES)
            DN_UNROLL for (int r = 0; r < 8; r++) {
                uint16x4_t h = vreinterpret_u16_u8(vld1_u8(row + 2 * (i + 4 * r)));
                float32x4_t w = type == ORK_TYPE_F16
                                    ? vcvt_f32_f16(vreinterpret_f16_u16(h))
                                    : vreinterpretq_f32_u32(vshll_n_u16(h, 16));
                s[r] = vfmaq_f32(s[r], w, vld1q_f32(x + i + 4 * r));
            }
    } else {
        const size_t bb = type == ORK_TYPE_Q8_0 ? Q8_0_BYTES : Q4_0_BYTES;
        for (; i < n; i += Q8_0_BLOCK) {
            const uint8_t *b = row + (size_t)(i / Q8_0_BLOCK) * bb;
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
    DN_UNROLL for (int r = 0; r < 8; r++)
        vst1q_f32(acc->lane + 4 * r, s[r]);
    float t = acc->tail;
    for (; i < n; i++) {
        uint16_t h = (uint16_t)(row[2 * i] | (row[2 * i + 1] << 8));
        float w = type == ORK_TYPE_F16 ? ork_fp16_to_f32(h) : ork_bf16_to_f32(h);
        float pr = w * x[i];
        t += pr;
    }
    acc->tail = t;
}

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
    ork__mad_tail(y, v, type, a, i, n);
}

/* FCVTN rounds by FPCR (round to nearest even unless a program changed it) and quiets NaNs
 * keeping the payload's top bits, as ork_f32_to_fp16 */
static int64_t to_fp16_neon(const float *x, uint16_t *dst, int64_t n)
{
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        vst1_u16(dst + i, vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(x + i))));
    return i;
}

void ork__fill_dot_neon(struct ork__kern *t)
{
    t->acc_step = acc_step_neon;
    t->acc_end = ork__acc_end32;
    t->deq_f16 = deq_f16_neon;
    t->mad = mad_neon;
    t->to_fp16 = to_fp16_neon;
    t->t[ORK__KT_Q8_0].deq_block = deq_q8_0_neon;
    t->t[ORK__KT_Q4_0].deq_block = deq_q4_0_neon;
    t->t[ORK__KT_Q4_K].deq_block = deq_q4_k_neon;
    t->t[ORK__KT_Q6_K].deq_block = deq_q6_k_neon;
    for (int k = ORK__KT_F16; k <= ORK__KT_Q4_0; k++)      /* F16, BF16, Q8_0, Q4_0 */
        t->t[k].dot_fused = dot_fused_neon;
}
#endif
