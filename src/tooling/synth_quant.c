/* synth_quant.c -- f32 rows to F16 / Q8_0 / Q4_0 / Q4_K blocks, for synthetic models.
 *
 * The block layouts are the ones the kernels dequantize (docs/kernels.md, src/kernels/
 * quant_ref.c); Q8_0 uses the kernels' own ork_quantize_row_q8_0. The Q4_0 and Q4_K rules here
 * are simple round-to-nearest choices (no error-minimising search): they only need to produce
 * valid blocks whose dequantized values are close to the input.
 * Not here: dequantization and dot products (src/kernels/). */
#include <math.h>
#include <string.h>

#include <ork/error.h>
#include <ork-tooling/synth.h>
#include <ork-kernels/kernels.h>

#define QK4_0 32                /* Q4_0 block: f16 d + 16 bytes of nibbles */
#define Q4_0_BYTES 18
#define Q4_0_OFFSET 8           /* nibbles are stored as q + 8 */
#define Q4_0_QMAX 15
#define QK_K 256                /* Q4_K super-block: 8 sub-blocks of 32 */
#define Q4_K_BYTES 144          /* f16 d | f16 dmin | scales[12] | qs[128] */
#define Q4_K_SUB 32
#define Q4_K_NSUB 8
#define Q4_K_SCALES_OFF 4
#define Q4_K_QS_OFF 16
#define Q4_K_QMAX 15            /* 4-bit quants */
#define Q4_K_SMAX 63            /* 6-bit sub-block scales and mins */

static void wr16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static int clampi(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* Q4_0: d = (the value of largest magnitude) / -8, so that value maps to nibble 0 exactly;
 * q = round(x / d) + 8 clamped to 0..15. */
static void quant_q4_0_block(const float *x, uint8_t *b)
{
    float amax = 0.0f, vmax = 0.0f;
    for (int i = 0; i < QK4_0; i++)
        if (fabsf(x[i]) > amax) {
            amax = fabsf(x[i]);
            vmax = x[i];
        }
    uint16_t dh = ork_f32_to_fp16(vmax / -(float)Q4_0_OFFSET);
    float d = ork_fp16_to_f32(dh);
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    wr16(b, dh);
    uint8_t *qs = b + 2;
    for (int i = 0; i < QK4_0 / 2; i++) {
        int q0 = clampi((int)lrintf(x[i] * id) + Q4_0_OFFSET, 0, Q4_0_QMAX);
        int q1 = clampi((int)lrintf(x[i + QK4_0 / 2] * id) + Q4_0_OFFSET, 0, Q4_0_QMAX);
        qs[i] = (uint8_t)(q0 | (q1 << 4));
    }
}

/* Q4_K: per sub-block j, x ~ (d * sc[j]) * q - dmin * mn[j] with q in 0..15. The sub-block's
 * range [min(0, lo), hi] sets its scale (range / 15) and min (-min(0, lo)); d and dmin are the
 * largest of those over 63, and sc / mn their 6-bit multiples. */
static void quant_q4_k_block(const float *x, uint8_t *b)
{
    float scale[Q4_K_NSUB], minv[Q4_K_NSUB], smax = 0.0f, mmax = 0.0f;
    for (int j = 0; j < Q4_K_NSUB; j++) {
        const float *s = x + j * Q4_K_SUB;
        float lo = 0.0f, hi = s[0];
        for (int i = 0; i < Q4_K_SUB; i++) {
            lo = s[i] < lo ? s[i] : lo;
            hi = s[i] > hi ? s[i] : hi;
        }
        if (hi < lo)
            hi = lo;
        scale[j] = (hi - lo) / (float)Q4_K_QMAX;
        minv[j] = -lo;
        smax = scale[j] > smax ? scale[j] : smax;
        mmax = minv[j] > mmax ? minv[j] : mmax;
    }
    uint16_t dh = ork_f32_to_fp16(smax / (float)Q4_K_SMAX);
    uint16_t mh = ork_f32_to_fp16(mmax / (float)Q4_K_SMAX);
    float d = ork_fp16_to_f32(dh), dmin = ork_fp16_to_f32(mh);
    int sc[Q4_K_NSUB], mn[Q4_K_NSUB];
    for (int j = 0; j < Q4_K_NSUB; j++) {
        sc[j] = d > 0.0f ? clampi((int)lrintf(scale[j] / d), 0, Q4_K_SMAX) : 0;
        /* Round the min up so the sub-block's lowest value stays reachable. */
        mn[j] = dmin > 0.0f ? clampi((int)ceilf(minv[j] / dmin), 0, Q4_K_SMAX) : 0;
    }
    wr16(b, dh);
    wr16(b + 2, mh);
    uint8_t *scales = b + Q4_K_SCALES_OFF;
    for (int i = 0; i < 4; i++) {
        scales[i] = (uint8_t)((sc[i] & 63) | ((sc[i + 4] >> 4) << 6));
        scales[i + 4] = (uint8_t)((mn[i] & 63) | ((mn[i + 4] >> 4) << 6));
        scales[i + 8] = (uint8_t)((sc[i + 4] & 15) | ((mn[i + 4] & 15) << 4));
    }
    uint8_t q[QK_K];
    for (int j = 0; j < Q4_K_NSUB; j++) {
        float dj = d * (float)sc[j], mj = dmin * (float)mn[j];
        float idj = dj > 0.0f ? 1.0f / dj : 0.0f;
        for (int i = 0; i < Q4_K_SUB; i++)
            q[j * Q4_K_SUB + i] =
                (uint8_t)clampi((int)lrintf((x[j * Q4_K_SUB + i] + mj) * idj), 0, Q4_K_QMAX);
    }
    uint8_t *qs = b + Q4_K_QS_OFF;
    for (int p = 0; p < Q4_K_NSUB / 2; p++)
        for (int l = 0; l < Q4_K_SUB; l++)
            qs[32 * p + l] = (uint8_t)(q[64 * p + l] | (q[64 * p + 32 + l] << 4));
}

int ork_synth_quantize_row(uint32_t type, const float *x, void *dst, int64_t n)
{
    if (!x || !dst || n < 0)
        return ork_errorf(ORK_EINVAL, "synth quantize: bad arguments");
    uint8_t *out = dst;
    switch (type) {
    case ORK_TYPE_F32:
        memcpy(dst, x, (size_t)n * sizeof(float));
        return 0;
    case ORK_TYPE_F16: {
        for (int64_t i = 0; i < n; i++)
            wr16(out + 2 * i, ork_f32_to_fp16(x[i]));
        return 0;
    }
    case ORK_TYPE_Q8_0:
        return ork_quantize_row_q8_0(x, dst, n);
    case ORK_TYPE_Q4_0:
        if (n % QK4_0)
            return ork_errorf(ORK_EINVAL, "synth quantize: %lld is not a multiple of 32",
                              (long long)n);
        for (int64_t i = 0; i < n / QK4_0; i++)
            quant_q4_0_block(x + i * QK4_0, out + i * Q4_0_BYTES);
        return 0;
    case ORK_TYPE_Q4_K:
        if (n % QK_K)
            return ork_errorf(ORK_EINVAL, "synth quantize: %lld is not a multiple of 256",
                              (long long)n);
        for (int64_t i = 0; i < n / QK_K; i++)
            quant_q4_k_block(x + i * QK_K, out + i * Q4_K_BYTES);
        return 0;
    default:
        return ork_errorf(ORK_EUNSUPPORTED, "synth quantize: type %s", ork_type_name(type));
    }
}
