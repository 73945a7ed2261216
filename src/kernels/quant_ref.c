/* quant_ref.c -- the scalar reference for every supported tensor type: dequantize a row and
 * dot a row with an f32 vector. This file is the definition of what each type means; the
 * dispatched paths (dot.c) and the matmul (matmul.c) are tested against it.
 * Not here: SIMD, threading, quantization (tests carry their own quantizers).
 *
 * Block layouts (facts of the GGML/GGUF format; all multi-byte fields little-endian, f16 = IEEE
 * binary16; a row is its blocks back to back, no padding):
 *
 *   F32, F16, BF16   plain elements.
 *   Q8_0  (32 elements, 34 bytes)   f16 d | int8 q[32]             x[i] = q[i] * d
 *   Q4_0  (32 elements, 18 bytes)   f16 d | uint8 qs[16]
 *         x[i] = ((qs[i] & 15) - 8) * d,  x[i + 16] = ((qs[i] >> 4) - 8) * d   (i < 16)
 *   Q4_K  (256 elements, 144 bytes) f16 d | f16 dmin | uint8 scales[12] | uint8 qs[128]
 *         8 sub-blocks of 32, each with a 6-bit scale sc[j] and a 6-bit min mn[j] packed in
 *         scales[12]: for j < 4, sc = scales[j] & 63, mn = scales[j + 4] & 63; for j >= 4,
 *         sc = (scales[j + 4] & 15) | ((scales[j - 4] >> 6) << 4),
 *         mn = (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4).
 *         Sub-blocks go in pairs over 32 bytes of qs: pair p (elements 64p .. 64p+63) uses
 *         qs[32p .. 32p+31]; its low nibbles are sub-block 2p, high nibbles sub-block 2p+1.
 *         x = (d * sc) * q - (dmin * mn), each product rounded to f32 as written.
 *   Q6_K  (256 elements, 210 bytes) uint8 ql[128] | uint8 qh[64] | int8 scales[16] | f16 d
 *         Two halves of 128 elements; half h uses ql[64h ..], qh[32h ..], scales[8h ..]. Inside
 *         a half, for l in 0..31 with the 2-bit fields of qh[l] taken from bit 0, 2, 4, 6:
 *           q(l)      = (ql[l]      & 15) | ((qh[l] >> 0 & 3) << 4)
 *           q(l + 32) = (ql[l + 32] & 15) | ((qh[l] >> 2 & 3) << 4)
 *           q(l + 64) = (ql[l]      >> 4) | ((qh[l] >> 4 & 3) << 4)
 *           q(l + 96) = (ql[l + 32] >> 4) | ((qh[l] >> 6 & 3) << 4)
 *         element e of the half has scale scales[e / 16] and value (d * scale) * (q - 32).
 *
 * Arithmetic order (what "reference" means here): each element is produced in f32 exactly as
 * the formulas read, left to right; the dot product is the dequantized row times x summed in
 * one f32 accumulator from element 0 upwards. So ork_vec_dot_ref(t, row, x, n) equals the
 * sequential f32 dot of ork_dequant_row_ref(t, row) with x, bit for bit. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <ork/error.h>
#include <ork-kernels/kernels.h>

/* Block geometry (elements, bytes), from the GGML block structs. */
#define QK8_0 32
#define QK4_0 32
#define QK_K  256
#define Q8_0_BYTES 34       /* 2 (d) + 32 */
#define Q4_0_BYTES 18       /* 2 (d) + 16 */
#define Q4_K_BYTES 144      /* 2 (d) + 2 (dmin) + 12 (scales) + 128 (qs) */
#define Q6_K_BYTES 210      /* 128 (ql) + 64 (qh) + 16 (scales) + 2 (d) */
#define Q4_0_OFFSET 8       /* Q4_0 nibbles are stored with +8 */
#define Q6_K_OFFSET 32      /* Q6_K 6-bit values are stored with +32 */
#define Q4_K_SCALES_OFF 4
#define Q4_K_QS_OFF 16
#define Q6_K_QH_OFF 128
#define Q6_K_SC_OFF 192
#define Q6_K_D_OFF 208

static inline uint16_t rd16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static inline float rd_f16(const uint8_t *p)
{
    return ork_fp16_to_f32(rd16(p));
}

static void deq_q8_0(const uint8_t *b, float *y)
{
    float d = rd_f16(b);
    const int8_t *q = (const int8_t *)(b + 2);
    for (int i = 0; i < QK8_0; i++)
        y[i] = (float)q[i] * d;
}

static void deq_q4_0(const uint8_t *b, float *y)
{
    float d = rd_f16(b);
    const uint8_t *qs = b + 2;
    for (int i = 0; i < QK4_0 / 2; i++) {
        y[i] = (float)((qs[i] & 15) - Q4_0_OFFSET) * d;
        y[i + QK4_0 / 2] = (float)((qs[i] >> 4) - Q4_0_OFFSET) * d;
    }
}

/* 6-bit scale and min of sub-block j (0..7) of a Q4_K block. */
static void q4_k_scale_min(const uint8_t *s, int j, int *sc, int *mn)
{
    if (j < 4) {
        *sc = s[j] & 63;
        *mn = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
        *mn = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

static void deq_q4_k(const uint8_t *b, float *y)
{
    float d = rd_f16(b);
    float dmin = rd_f16(b + 2);
    const uint8_t *scales = b + Q4_K_SCALES_OFF;
    const uint8_t *qs = b + Q4_K_QS_OFF;
    for (int p = 0; p < 4; p++) {
        int sc0, mn0, sc1, mn1;
        q4_k_scale_min(scales, 2 * p, &sc0, &mn0);
        q4_k_scale_min(scales, 2 * p + 1, &sc1, &mn1);
        float d0 = d * (float)sc0, m0 = dmin * (float)mn0;
        float d1 = d * (float)sc1, m1 = dmin * (float)mn1;
        const uint8_t *q = qs + 32 * p;
        float *o = y + 64 * p;
        for (int l = 0; l < 32; l++)
            o[l] = d0 * (float)(q[l] & 15) - m0;
        for (int l = 0; l < 32; l++)
            o[32 + l] = d1 * (float)(q[l] >> 4) - m1;
    }
}

static void deq_q6_k(const uint8_t *b, float *y)
{
    float d = rd_f16(b + Q6_K_D_OFF);
    for (int h = 0; h < 2; h++) {
        const uint8_t *ql = b + 64 * h;
        const uint8_t *qh = b + Q6_K_QH_OFF + 32 * h;
        const int8_t *sc = (const int8_t *)(b + Q6_K_SC_OFF) + 8 * h;
        float *o = y + 128 * h;
        for (int l = 0; l < 32; l++) {
            int q0 = ((ql[l] & 15) | (((qh[l] >> 0) & 3) << 4)) - Q6_K_OFFSET;
            int q1 = ((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4)) - Q6_K_OFFSET;
            int q2 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - Q6_K_OFFSET;
            int q3 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - Q6_K_OFFSET;
            o[l] = d * (float)sc[l / 16] * (float)q0;
            o[l + 32] = d * (float)sc[l / 16 + 2] * (float)q1;
            o[l + 64] = d * (float)sc[l / 16 + 4] * (float)q2;
            o[l + 96] = d * (float)sc[l / 16 + 6] * (float)q3;
        }
    }
}

/* One block of a quantized type into y (block elements); returns the block's bytes. */
typedef void (*deq_block_fn)(const uint8_t *b, float *y);

static deq_block_fn block_fn(uint32_t type)
{
    switch (type) {
    case ORK_TYPE_Q8_0: return deq_q8_0;
    case ORK_TYPE_Q4_0: return deq_q4_0;
    case ORK_TYPE_Q4_K: return deq_q4_k;
    case ORK_TYPE_Q6_K: return deq_q6_k;
    default: return NULL;
    }
}

int ork_kernels_check(uint32_t type, int64_t n)
{
    const struct ork_type_traits *t = ork_type_traits(type);
    if (!t || !t->supported)
        return ork_errorf(ORK_EUNSUPPORTED,
                          "tensor type %s (%u) is not supported by the CPU kernels",
                          ork_type_name(type), type);
    if (n < 0 || n % t->block)
        return ork_errorf(ORK_EINVAL, "row of %lld elements is not a multiple of the %s block (%u)",
                          (long long)n, t->name, t->block);
    return 0;
}

int ork_dequant_row_ref(uint32_t type, const void *src, float *dst, int64_t n)
{
    int ret = ork_kernels_check(type, n);
    if (ret < 0)
        return ret;
    const uint8_t *p = src;
    switch (type) {
    case ORK_TYPE_F32:
        memcpy(dst, src, (size_t)n * sizeof(float));
        return 0;
    case ORK_TYPE_F16:
        for (int64_t i = 0; i < n; i++)
            dst[i] = ork_fp16_to_f32(rd16(p + 2 * i));
        return 0;
    case ORK_TYPE_BF16:
        for (int64_t i = 0; i < n; i++)
            dst[i] = ork_bf16_to_f32(rd16(p + 2 * i));
        return 0;
    default: {
        const struct ork_type_traits *t = ork_type_traits(type);
        deq_block_fn fn = block_fn(type);
        for (int64_t i = 0; i < n / t->block; i++)
            fn(p + (size_t)i * t->block_bytes, dst + i * t->block);
        return 0;
    }
    }
}

float ork_vec_dot_ref(uint32_t type, const void *row, const float *x, int64_t n)
{
    if (ork_kernels_check(type, n) < 0)
        return NAN;
    const uint8_t *p = row;
    float sum = 0.0f;
    switch (type) {
    case ORK_TYPE_F32: {
        const float *w = row;
        for (int64_t i = 0; i < n; i++)
            sum += w[i] * x[i];
        return sum;
    }
    case ORK_TYPE_F16:
        for (int64_t i = 0; i < n; i++)
            sum += ork_fp16_to_f32(rd16(p + 2 * i)) * x[i];
        return sum;
    case ORK_TYPE_BF16:
        for (int64_t i = 0; i < n; i++)
            sum += ork_bf16_to_f32(rd16(p + 2 * i)) * x[i];
        return sum;
    default: {
        const struct ork_type_traits *t = ork_type_traits(type);
        deq_block_fn fn = block_fn(type);
        float buf[QK_K];
        for (int64_t i = 0; i < n / t->block; i++) {
            fn(p + (size_t)i * t->block_bytes, buf);
            const float *xb = x + i * t->block;
            for (uint32_t j = 0; j < t->block; j++)
                sum += buf[j] * xb[j];
        }
        return sum;
    }
    }
}
