/* arm/quant_act_neon.c -- the NEON activation quantizers (both AArch64 paths): Q8_0 and Q8_K
 * blocks, bit for bit the scalar ones of quant_act.c (vcvtaq_s32_f32 rounds half away from zero,
 * as roundf). */
#include <stdint.h>
#include <string.h>

#include "kern_priv.h"
#include "qk_block.h"

#ifdef ORK_KERN_ARM
#include <arm_neon.h>

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

void ork__fill_quant_act_neon(struct ork__kern *t)
{
    t->quant_q8_0 = quant_q8_0_neon;
    t->quant_q8_k = quant_q8_k_neon;
}
#endif
