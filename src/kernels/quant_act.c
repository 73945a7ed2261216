/* quant_act.c -- the activation quantizers of ORK_ACT_QUANT matmuls (Q8_0, Q8_K: the scalar
 * arithmetic and the entry points over the table; the SIMD ones, x86/quant_act_*.c and
 * arm/quant_act_neon.c, match them bit for bit), and the packed X rows and buffer sizes of the
 * register-tiled Q8_0 / Q4_0 GEMM, whose kernels are x86/gemm_q8_avx2.c (AVX2, AVX-VNNI) and
 * x86/gemm_q8_avx512.c (AVX-512 VNNI). Not here: the thread split and the shared activation
 * buffer (matmul.c), the one-row dots (qdot.c).
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
#include "qk_block.h"

#define PAIR_Q 64               /* int8 values of a block pair */
#define PAIR_BIAS 64            /* bytes of a pair's 16 int32 biases */
#define PAIR_D 8                /* bytes of a pair's two f32 scales */
#define U8_OFFSET 128           /* w + 128: signed int8 weight as the u8 operand of vpdpbusd */
/* X bytes per L2-resident chunk: a quarter of the 1 MiB L2 of the Zen 4 / Zen 5 cores this was
 * tuned on, leaving room for the weight panels and Y. */
#define GEMM_L2_X_BYTES (512u << 10)

/* ---- activation quantizers ---------------------------------------------------------------- */

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

static void quant_q8_0_scalar(const float *x, uint8_t *dst, int64_t nb)
{
    for (int64_t b = 0; b < nb; b++)
        q8_0_block_scalar(x + b * Q8_0_BLOCK, dst + b * Q8_0_BYTES);
}

static void quant_q8_k_scalar(const float *x, uint8_t *dst, int64_t nb)
{
    for (int64_t b = 0; b < nb; b++)
        q8_k_block_scalar(x + b * QK_K, dst + b * ORK_Q8_K_BYTES);
}

void ork__quantize_q8_0(enum kisa k, const float *x, uint8_t *dst, int64_t n)
{
    int64_t nb = n / Q8_0_BLOCK;
    ork__kern(k)->quant_q8_0(x, dst, nb);
}

void ork__quantize_q8_0_sums(enum kisa k, const float *x, int64_t nb, uint8_t *q, size_t qstride,
                             float *d, int32_t *sum)
{
    const struct ork__kern *t = ork__kern(k);
    if (t->quant_q8_0_sums) {
        t->quant_q8_0_sums(x, nb, q, qstride, d, sum);
        return;
    }
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
    ork__kern(k)->quant_q8_k(x, dst, nb);
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

/* ---- the Q8_0 / Q4_0 decode and GEMM kernels of the table ---- */

bool ork__q8_wrows(enum kisa k, uint32_t type, const uint8_t *w, size_t row_bytes, int64_t nr,
                   const uint8_t *xq, int64_t nb, float *out)
{
    const struct ork__type_kern *tk = ork__tkern(k, type);
    if (!tk || !tk->q8_wrows)
        return false;
    tk->q8_wrows(type, w, row_bytes, nr, xq, nb, out);
    return true;
}

int ork__q8_wstreams_width(enum kisa k, uint32_t type)
{
    const struct ork__type_kern *tk = ork__tkern(k, type);
    return tk && tk->q8_wrows ? tk->q8_wstreams_width : 0;
}

bool ork__q8_wstreams(enum kisa k, uint32_t type, const struct ork__wstream *s, int ns,
                      size_t row_bytes, const uint8_t *xq, int64_t nb)
{
    const struct ork__type_kern *tk = ork__tkern(k, type);
    if (!tk || !tk->q8_wrows)
        return false;
    if (tk->q8_wstreams && ns <= tk->q8_wstreams_width) {
        tk->q8_wstreams(type, s, ns, row_bytes, xq, nb);
        return true;
    }
    for (int t = 0; t < ns; t++)
        tk->q8_wrows(type, s[t].w, row_bytes, s[t].n, xq, nb, s[t].out);
    return true;
}

bool ork__gemm_q8_ok(enum kisa k, uint32_t type)
{
    const struct ork__type_kern *tk = ork__tkern(k, type);
    return tk && tk->gemm;
}

void ork__gemm_q8(enum kisa k, const struct ork_mat *w, int64_t r0, int64_t r1,
                  const uint8_t *xp, int64_t m, float *y, int64_t ldy, uint8_t *panel)
{
    ork__tkern(k, w->type)->gemm(w, r0, r1, xp, m, y, ldy, panel);
}

void ork__fill_quant_act_scalar(struct ork__kern *t)
{
    t->quant_q8_0 = quant_q8_0_scalar;
    t->quant_q8_k = quant_q8_k_scalar;
}
