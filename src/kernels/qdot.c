/* qdot.c -- integer dot products of quantized weight rows with quantized activations, the hot
 * loops of ORK_ACT_QUANT matmuls: Q8_0 / Q4_0 weights against Q8_0 activations, Q4_K / Q6_K
 * weights against Q8_K activations (and the Q8_K quantizer's entry point): the scalar path that
 * defines the arithmetic, and the entry points over the table. The SIMD kernels give the same
 * bits: x86/qdot_avx2.c (AVX2, AVX-VNNI), x86/qdot_avx512.c (AVX-512 VNNI), arm/qdot_neon.c
 * (NEON, NEON dot product). They read the quantized blocks directly (no dequantization into a
 * buffer). Not here: f32-activation dots (dot.c), threading (matmul.c).
 *
 * Q8_0 / Q4_0 x Q8_0 (per 32-element block b; order in kern_priv.h, struct q8_acc):
 *   p_j = sum of w_i * x_i over i = 4j .. 4j+3 (exact int32), d = d_w * d_x (f32 product),
 *   lane[8 * (b % 2) + j] = fmaf((float)p_j, d, lane[...]), then a fixed reduction tree.
 *   Groups of four adjacent products are what vpmaddubsw+vpmaddwd, vpdpbusd and sdot produce,
 *   so every path has the same partials and the same f32 operations.
 *
 * Q4_K / Q6_K x Q8_K (per 256-element block, in block order, one f32 sum; the shared steps are
 * qk_block.h):
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
#include "qk_block.h"

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
        float d = ork__f16le(wb) * ork__f16le(xb);
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

void ork__q8_blocks(enum kisa k, uint32_t type, const uint8_t *w, const uint8_t *xq, int64_t nb,
                    struct q8_acc *acc)
{
    ork__tkern(k, type)->q8_blocks(type, w, xq, nb, acc);
}

void ork__q8_rows(enum kisa k, uint32_t type, const uint8_t *w, const uint8_t *xq,
                  size_t x_stride, int nr, int64_t nb, float *out)
{
    const struct ork__type_kern *tk = ork__tkern(k, type);
    if (nr == ORK_Q8_ROWS_MAX && tk->q8_rows4) {
        tk->q8_rows4(type, w, xq, x_stride, nb, out);
        return;
    }
    for (int t = 0; t < nr; t++) {
        struct q8_acc acc;
        memset(&acc, 0, sizeof acc);
        tk->q8_blocks(type, w, xq + (size_t)t * x_stride, nb, &acc);
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
            acc = q4k_block_sum(acc, ork__f16le(blk), ork__f16le(blk + 2), dx, s, m);
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
            acc = q6k_block_sum(acc, ork__f16le(blk + Q6_K_D), dx, s);
        }
    }
    *sum = acc;
}

void ork__q8k_blocks(enum kisa k, uint32_t type, const uint8_t *w, const uint8_t *xq, int64_t nb,
                     float *sum)
{
    ork__tkern(k, type)->q8k_blocks(type, w, xq, nb, sum);
}

void ork__q8k_rows(enum kisa k, uint32_t type, const uint8_t *w, const uint8_t *xq,
                   size_t x_stride, int nr, int64_t nb, float *out)
{
    const struct ork__type_kern *tk = ork__tkern(k, type);
    if (tk->q8k_rows) {
        tk->q8k_rows(type, w, xq, x_stride, nr, nb, out);
        return;
    }
    for (int t = 0; t < nr; t++) {
        out[t] = 0.0f;
        tk->q8k_blocks(type, w, xq + (size_t)t * x_stride, nb, &out[t]);
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

void ork__fill_qdot_scalar(struct ork__kern *t)
{
    t->t[ORK__KT_Q8_0].q8_blocks = q8_blocks_scalar;
    t->t[ORK__KT_Q4_0].q8_blocks = q8_blocks_scalar;
    t->t[ORK__KT_Q4_K].q8k_blocks = q8k_scalar;
    t->t[ORK__KT_Q6_K].q8k_blocks = q8k_scalar;
}
