/* arm/qdot_neon.c -- the NEON integer dots of quantized weights with quantized activations
 * (qdot.c has the arithmetic): Q8_0 / Q4_0 x Q8_0 and Q4_K / Q6_K x Q8_K, each with widening
 * multiplies (neon) and with sdot (neon-dotprod). Same partials and f32 operations as the
 * scalar path, so the same bits. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <ork-kernels/kernels.h>

#include "kern_priv.h"
#include "qk_block.h"

#ifdef ORK_KERN_ARM
#include <arm_neon.h>

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

void ork__fill_qdot_neon(struct ork__kern *t)
{
    t->t[ORK__KT_Q8_0].q8_blocks = q8_blocks_neon;
    t->t[ORK__KT_Q4_0].q8_blocks = q8_blocks_neon;
    t->t[ORK__KT_Q4_K].q8k_blocks = q8k_neon;
    t->t[ORK__KT_Q6_K].q8k_blocks = q8k_neon;
}

void ork__fill_qdot_neon_dot(struct ork__kern *t)
{
    t->t[ORK__KT_Q8_0].q8_blocks = q8_blocks_neon_dot;
    t->t[ORK__KT_Q4_0].q8_blocks = q8_blocks_neon_dot;
    t->t[ORK__KT_Q4_K].q8k_blocks = q8k_neon_dot;
    t->t[ORK__KT_Q6_K].q8k_blocks = q8k_neon_dot;
}
#endif
