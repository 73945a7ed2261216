/* qk_block.h -- the block layouts of the quantized weight types (quant_ref.c documents them)
 * as byte offsets, and the integer block arithmetic of the Q4_K / Q6_K x Q8_K dots that every
 * path shares (qdot.c has the order): the scalar references and the SIMD kernels call the same
 * inline steps, so they give the same bits. Internal to src/kernels. */
#ifndef ORK_KERNELS_QK_BLOCK_H
#define ORK_KERNELS_QK_BLOCK_H

#include <stdint.h>
#include <string.h>

#include "kern_priv.h"

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
#define Q8_QMAX 127.0f          /* symmetric int8 range of the activation quantizers */

/* An f16 scale stored little-endian (ork_f32_to_fp16's bits). */
static inline void put_f16(uint8_t *p, float d)
{
    uint16_t h = ork_f32_to_fp16(d);
    p[0] = (uint8_t)h;
    p[1] = (uint8_t)(h >> 8);
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

/* The same as floats (the dequantizers). */
static inline void q4k_scale_min(const uint8_t *s, int j, float *sc, float *mn)
{
    if (j < 4) {
        *sc = (float)(s[j] & 63);
        *mn = (float)(s[j + 4] & 63);
    } else {
        *sc = (float)((s[j + 4] & 15) | ((s[j - 4] >> 6) << 4));
        *mn = (float)((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
    }
}

#endif
