/* rows16_q6_k.c -- Q6_K matrices interleaved by 16 rows (ORK_LAYOUT_X16; the layout in
 * rows16_q6_k.h): packing 16 plain rows into a group, reading one row back, and the scalar
 * reference kernel of the layout. rows16.c holds the type table that calls the first two, the
 * drivers and the X form (the Q4_K one: Q8_K quants and scale); arm/rows16_q6_k_neon.c the
 * `neon-dotprod` kernels.
 *
 * Arithmetic (every kernel of the layout): per row and block the integer
 * S = sum_k sc_k * (sum over sub-block k of (q - 32) x), exactly the S of the row-layout
 * kernels (qdot.c: sum_k sc_k sum q x - 32 sum_k sc_k bsum_k, the same integer), then
 * qk_block.h q6k_block_sum's f32 steps in block order: every output has the bits of
 * ork__q8k_blocks over the plain row (tests/unit/test_kernels_x16.c). */
#include <stdint.h>
#include <string.h>

#include "kern_priv.h"
#include "qk_block.h"
#include "rows16_q6_k.h"

/* ---- the plain block's 6-bit values ---------------------------------------------------------
 * Element e = 128 h + 32 t + l (h half, t quarter of the half, l < 32) of a plain Q6_K block:
 * its low four bits are the low (t < 2) or high nibble of ql[64 h + 32 (t % 2) + l], its top two
 * bits are bits 2t, 2t + 1 of qh[32 h + l] (quant_ref.c has the layout). */
#define Q6P_HALF 128
#define Q6P_QUART 32
#define Q6P_LOW4 0x0f
#define Q6P_HI_SHIFT 4

static void q6p_where(int e, int *lo, int *lo_shift, int *hi, int *hi_shift)
{
    const int h = e / Q6P_HALF, t = e % Q6P_HALF / Q6P_QUART, l = e % Q6P_QUART;
    *lo = 64 * h + Q6P_QUART * (t % 2) + l;
    *lo_shift = t < 2 ? 0 : Q6P_HI_SHIFT;
    *hi = Q6_K_QH + Q6P_QUART * h + l;
    *hi_shift = 2 * t;
}

static void q6p_values(const uint8_t *blk, uint8_t q[QK_K])
{
    for (int e = 0; e < QK_K; e++) {
        int lo, ls, hi, hs;
        q6p_where(e, &lo, &ls, &hi, &hs);
        q[e] = (uint8_t)(((blk[lo] >> ls) & Q6P_LOW4) | (((blk[hi] >> hs) & XQ6_LOW2) << 4));
    }
}

static void q6p_store(const uint8_t q[QK_K], uint8_t *blk)
{
    memset(blk, 0, Q6_K_SC);            /* ql and qh: every bit set below */
    for (int e = 0; e < QK_K; e++) {
        int lo, ls, hi, hs;
        q6p_where(e, &lo, &ls, &hi, &hs);
        blk[lo] |= (uint8_t)((q[e] & Q6P_LOW4) << ls);
        blk[hi] |= (uint8_t)(((q[e] >> 4) & XQ6_LOW2) << hs);
    }
}

/* ---- the group block ----------------------------------------------------------------------- */

/* Byte b of row i in chunk R_j of sub-block k (rows16_q6_k.h), and its position in the block. */
static size_t xq6_qpos(int k, int j, int i, int b)
{
    return XQ6_QS + (size_t)(XQ6_CHUNKS_PER_SUB * k + j) * XQ6_CHUNK + 4 * (size_t)i + (size_t)b;
}

static size_t xq6_scpos(int k, int i)
{
    return XQ6_SC + (size_t)(k / 4) * XQ6_CHUNK + 4 * (size_t)i + (size_t)(k % 4);
}

/* The low-bit field of s (the fourth element's value) that chunk j carries. */
static unsigned xq6_field(unsigned s, int j)
{
    return (s >> (4 - 2 * j)) & XQ6_LOW2;
}

static void pack_block(const uint8_t *blk, int i, uint8_t *gb)
{
    uint8_t q[QK_K];
    q6p_values(blk, q);
    memcpy(gb + XQ6_D + 2 * i, blk + Q6_K_D, 2);
    for (int k = 0; k < XQ6_SUB; k++) {
        gb[xq6_scpos(k, i)] = blk[Q6_K_SC + k];
        for (int b = 0; b < 4; b++) {
            const unsigned s3 = q[XQ6_SUB_ELEMS * k + 12 + b] ^ XQ6_SIGN;
            for (int j = 0; j < XQ6_CHUNKS_PER_SUB; j++) {
                const unsigned s = q[XQ6_SUB_ELEMS * k + 4 * j + b] ^ XQ6_SIGN;
                gb[xq6_qpos(k, j, i, b)] = (uint8_t)((s << XQ6_VALUE_SHIFT) | xq6_field(s3, j));
            }
        }
    }
}

/* s(e) of the 16 elements of sub-block k of row i (6-bit two's complement codes). */
static void sub_codes(const uint8_t *gb, int k, int i, unsigned s[XQ6_SUB_ELEMS])
{
    for (int b = 0; b < 4; b++) {
        unsigned s3 = 0;
        for (int j = 0; j < XQ6_CHUNKS_PER_SUB; j++) {
            const unsigned r = gb[xq6_qpos(k, j, i, b)];
            s[4 * j + b] = r >> XQ6_VALUE_SHIFT;
            s3 |= (r & XQ6_LOW2) << (4 - 2 * j);
        }
        s[12 + b] = s3;
    }
}

void ork__x16q6_pack(const uint8_t *src, size_t row_bytes, uint8_t *dst)
{
    for (size_t off = 0; off < row_bytes; off += Q6_K_BYTES)
        for (int i = 0; i < ORK_X16_ROWS; i++)
            pack_block(src + (size_t)i * row_bytes + off, i, dst + ORK_X16_ROWS * off);
}

void ork__x16q6_row(const uint8_t *grp, size_t row_bytes, int i, uint8_t *dst)
{
    for (size_t off = 0; off < row_bytes; off += Q6_K_BYTES) {
        const uint8_t *gb = grp + ORK_X16_ROWS * off;
        uint8_t *blk = dst + off, q[QK_K];
        for (int k = 0; k < XQ6_SUB; k++) {
            unsigned s[XQ6_SUB_ELEMS];
            sub_codes(gb, k, i, s);
            for (int e = 0; e < XQ6_SUB_ELEMS; e++)
                q[XQ6_SUB_ELEMS * k + e] = (uint8_t)(s[e] ^ XQ6_SIGN);
            blk[Q6_K_SC + k] = gb[xq6_scpos(k, i)];
        }
        q6p_store(q, blk);
        memcpy(blk + Q6_K_D, gb + XQ6_D + 2 * i, 2);
    }
}

/* ---- the scalar reference kernel --------------------------------------------------------- */

/* A 6-bit two's complement code as its value q - 32. */
static int32_t xq6_value(unsigned s)
{
    return (int32_t)(s & (XQ6_SIGN - 1)) - (int32_t)(s & XQ6_SIGN);
}

void ork__x16q6_ref(const uint8_t *g, const uint8_t *x, int64_t nb, float *out)
{
    for (int i = 0; i < ORK_X16_ROWS; i++)
        out[i] = 0.0f;
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *gb = g + (size_t)b * XQ6_GROUP_BYTES;
        const uint8_t *xb = x + (size_t)b * ORK_X16K_XBLOCK;
        const int8_t *xq = (const int8_t *)xb;
        float dx;
        memcpy(&dx, xb + ORK_X16K_XD, sizeof dx);
        for (int i = 0; i < ORK_X16_ROWS; i++) {
            int32_t s = 0;
            for (int k = 0; k < XQ6_SUB; k++) {
                unsigned c[XQ6_SUB_ELEMS];
                sub_codes(gb, k, i, c);
                int32_t sk = 0;
                for (int e = 0; e < XQ6_SUB_ELEMS; e++)
                    sk += xq6_value(c[e]) * xq[XQ6_SUB_ELEMS * k + e];
                s += (int8_t)gb[xq6_scpos(k, i)] * sk;
            }
            out[i] = q6k_block_sum(out[i], ork__f16le(gb + XQ6_D + 2 * i), dx, s);
        }
    }
}
