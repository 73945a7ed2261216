/* arm/rows16_q4_k_neon.c -- the NEON dot-product kernels of interleaved Q4_K matrices
 * (ORK_LAYOUT_X16; the layout, the X form and the drivers are rows16.c's, the offsets
 * rows16_q4_k.h's): decode streams and the M > 1 tiles of the `neon-dotprod` path.
 *
 * As in rows16_q8_0_q4_0_neon.c a 128-bit register is a quarter of a 64-byte chunk (bytes
 * 4i..4i+3: row 4q + i of quarter q) and `sdot` by element puts row 4q + i's partial in int32
 * lane i:
 *   quants: the nibbles (`and` 0x0f, `ushr` 4; 0..15, so signed bytes as they are) by the
 *           Q8_K quants, one chain per sub-block of 32 (8 sdot), then the sub-block's 6-bit
 *           scale (its byte picked into the row's lane by `tbl`) times the chain (`mla`):
 *           S = sum_j sc_j * (sum over sub-block j of q * x), exact in int32.
 *   mins:   the 6-bit mins (bytes 0..63) by the X form's a_j and b_j (int8) with sdot, four
 *           sub-blocks per instruction: M = 128 * sum mn a + sum mn b (rows16.c's X form).
 * The integers S and M per row and block are exactly those of the row-layout kernels, and the
 * f32 steps are qk_block.h q4k_block_sum's in the same order (dd = dx * d, dm = dx * dmin,
 * dd * S - dm * M, added to the sum): every output has the bits of ork__q8k_blocks
 * (tests/unit/test_kernels_x16.c compares them bit for bit).
 *
 * The sums live in the output rows (read, add, write once per quarter and block): a quarter's
 * block is ~180 ASIMD instructions, so the two memory operations are noise, and the registers
 * stay free for the block's scales and chains at any stream count. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "kern_priv.h"
#include "qk_block.h"
#include "rows16_q4_k.h"

#ifdef ORK_KERN_ARM
#include <arm_neon.h>

#define TGT_X16KN __attribute__((target("arch=armv8.2-a+dotprod")))
#define XKN_INLINE inline __attribute__((always_inline))
/* The pair, quarter, group and X-row loops unrolled whole (GCC 12 -O2 keeps them as loops). */
#define XKN_UNROLL _Pragma("GCC unroll 16")

#define XKN_QUARTER 16          /* a register: 4 bytes of each of 4 rows of a chunk */
#define XKN_QUARTERS 4
#define XKN_D_QUARTER 8         /* bytes of a quarter's 4 f16 scales (d or dmin) */
#define XKN_PAIRS 4             /* sub-block pairs per block: 64 elements, 8 quant chunks */
#define XKN_PAIR_CHUNKS 8
#define XKN_PAIR_X 64           /* X quants per pair: the low nibbles' 32, then the high's */
#define XKN_X_REG 16            /* bytes of one X register */
#define XKN_HI_X 32
/* the 6-bit scale and min fields of the scale words (qdot.c's Q4_K unpacking) */
#define XKN_LOW6 0x3f
#define XKN_TOP2 0x30
#define XKN_LOW4 0x0f
#define XKN_TOP2_SHIFT 2        /* bits 6-7 of a low word byte to bits 4-5 */
#define XKN_TBL_ZERO 0xff       /* a tbl index out of range: the byte becomes 0 */
/* Groups the decode kernels read side by side: as the x86 Q4_K kernels (ORK_X16K_STREAMS). */
#define XKN_STREAMS ORK_X16K_STREAMS

/* Byte j of each 32-bit lane of v, zero-extended into the lane (a tbl index vector). */
#define XKN_PICK(j)                                                                            \
    { (j), XKN_TBL_ZERO, XKN_TBL_ZERO, XKN_TBL_ZERO, 4 + (j), XKN_TBL_ZERO, XKN_TBL_ZERO,      \
      XKN_TBL_ZERO, 8 + (j), XKN_TBL_ZERO, XKN_TBL_ZERO, XKN_TBL_ZERO, 12 + (j), XKN_TBL_ZERO, \
      XKN_TBL_ZERO, XKN_TBL_ZERO }
static const uint8_t xkn_pick[4][16] = { XKN_PICK(0), XKN_PICK(1), XKN_PICK(2), XKN_PICK(3) };

TGT_X16KN static XKN_INLINE int32x4_t xkn_byte(uint8x16_t v, int j)
{
    return vreinterpretq_s32_u8(vqtbl1q_u8(v, vld1q_u8(xkn_pick[j])));
}

/* One pair's chunk C8 (0..7): low nibbles against X register XL, high against XH, lane
 * C8 % 4 (a literal). */
#define XKN_CHUNK(C8, XL, XH)                                                                  \
    do {                                                                                       \
        const uint8x16_t v = vld1q_u8(qp + (C8) * XK_CHUNK);                                   \
        dlo = vdotq_laneq_s32(dlo, vreinterpretq_s8_u8(vandq_u8(v, low4)), XL, (C8) % 4);      \
        dhi = vdotq_laneq_s32(dhi, vreinterpretq_s8_u8(vshrq_n_u8(v, 4)), XH, (C8) % 4);       \
    } while (0)

/* Quarter q of one group block (at wb) against one X block (x): the f32 terms dd * S - dm * M
 * of its 4 rows. */
TGT_X16KN static XKN_INLINE float32x4_t xkn_quarter(const uint8_t *wb, int q, const uint8_t *x)
{
    const uint8x16_t low4 = vdupq_n_u8(XKN_LOW4), low6 = vdupq_n_u8(XKN_LOW6);
    const uint8x16_t top2 = vdupq_n_u8(XKN_TOP2);
    const uint8_t *scw = wb + XK_SC + q * XKN_QUARTER;
    const uint8x16_t u0 = vld1q_u8(scw), u1 = vld1q_u8(scw + XK_CHUNK);
    const uint8x16_t u2 = vld1q_u8(scw + 2 * XK_CHUNK);
    /* sub-blocks 0..3 and 4..7: scales, then mins, byte j of each row's lane */
    const uint8x16_t sc[2] = {
        vandq_u8(u0, low6),
        vorrq_u8(vandq_u8(u2, low4), vandq_u8(vshrq_n_u8(u0, XKN_TOP2_SHIFT), top2)) };
    const uint8x16_t mn_lo = vandq_u8(u1, low6);
    const uint8x16_t mn_hi = vorrq_u8(vshrq_n_u8(u2, 4),
                                      vandq_u8(vshrq_n_u8(u1, XKN_TOP2_SHIFT), top2));
    int32x4_t s = vdupq_n_s32(0);
    XKN_UNROLL for (int p = 0; p < XKN_PAIRS; p++) {
        const int8_t *xp = (const int8_t *)x + p * XKN_PAIR_X;
        const int8x16_t xl0 = vld1q_s8(xp), xl1 = vld1q_s8(xp + XKN_X_REG);
        const int8x16_t xh0 = vld1q_s8(xp + XKN_HI_X), xh1 = vld1q_s8(xp + XKN_HI_X + XKN_X_REG);
        const uint8_t *qp = wb + XK_QS + (size_t)(p * XKN_PAIR_CHUNKS) * XK_CHUNK +
                            q * XKN_QUARTER;
        int32x4_t dlo = vdupq_n_s32(0), dhi = vdupq_n_s32(0);
        XKN_CHUNK(0, xl0, xh0);
        XKN_CHUNK(1, xl0, xh0);
        XKN_CHUNK(2, xl0, xh0);
        XKN_CHUNK(3, xl0, xh0);
        XKN_CHUNK(4, xl1, xh1);
        XKN_CHUNK(5, xl1, xh1);
        XKN_CHUNK(6, xl1, xh1);
        XKN_CHUNK(7, xl1, xh1);
        /* sub-blocks 2p and 2p + 1: bytes 2 (p % 2) and 2 (p % 2) + 1 of scale vector p / 2 */
        s = vmlaq_s32(s, dlo, xkn_byte(sc[p >> 1], 2 * (p & 1)));
        s = vmlaq_s32(s, dhi, xkn_byte(sc[p >> 1], 2 * (p & 1) + 1));
    }
    const int8x16_t ab = vld1q_s8((const int8_t *)x + XKX_A);     /* a[8], b[8] */
    const int8x16_t ml = vreinterpretq_s8_u8(mn_lo), mh = vreinterpretq_s8_u8(mn_hi);
    const int32x4_t ma = vdotq_laneq_s32(vdotq_laneq_s32(vdupq_n_s32(0), ml, ab, 0), mh, ab, 1);
    const int32x4_t mb = vdotq_laneq_s32(vdotq_laneq_s32(vdupq_n_s32(0), ml, ab, 2), mh, ab, 3);
    const int32x4_t m = vaddq_s32(vshlq_n_s32(ma, XK_SPLIT_SHIFT), mb);
    float dxf;
    memcpy(&dxf, x + XKX_D, sizeof dxf);
    const float32x4_t dw = vcvt_f32_f16(vreinterpret_f16_u16(
        vld1_u16((const uint16_t *)(const void *)(wb + XK_D + q * XKN_D_QUARTER))));
    const float32x4_t dmw = vcvt_f32_f16(vreinterpret_f16_u16(
        vld1_u16((const uint16_t *)(const void *)(wb + XK_DMIN + q * XKN_D_QUARTER))));
    /* q4k_block_sum: dd = dx * d, dm = dx * dmin, then dd * S - dm * M */
    const float32x4_t ts = vmulq_f32(vmulq_n_f32(dw, dxf), vcvtq_f32_s32(s));
    const float32x4_t tm = vmulq_f32(vmulq_n_f32(dmw, dxf), vcvtq_f32_s32(m));
    return vsubq_f32(ts, tm);
}

/* ng groups (g[s] at block 0) x mx X rows (xs, xstride apart): blocks 0 .. nb-1 added in order
 * into out[s] + t * ldo (16 rows each, zeroed first). Inlined with constant ng, mx. */
TGT_X16KN static XKN_INLINE void xkn_core(int ng, int mx, const uint8_t *const *g,
                                          const uint8_t *xs, size_t xstride, int64_t nb,
                                          float *const *out, size_t ldo)
{
    for (int s = 0; s < ng; s++)
        for (int t = 0; t < mx; t++)
            memset(out[s] + (size_t)t * ldo, 0, ORK_X16_ROWS * sizeof(float));
    for (int64_t b = 0; b < nb; b++)
        XKN_UNROLL for (int s = 0; s < ng; s++) {
            const uint8_t *wb = g[s] + (size_t)b * XK_GROUP_BYTES;
            XKN_UNROLL for (int t = 0; t < mx; t++) {
                const uint8_t *x = xs + (size_t)t * xstride + (size_t)b * ORK_X16K_XBLOCK;
                float *o = out[s] + (size_t)t * ldo;
                XKN_UNROLL for (int q = 0; q < XKN_QUARTERS; q++)
                    vst1q_f32(o + 4 * q, vaddq_f32(vld1q_f32(o + 4 * q), xkn_quarter(wb, q, x)));
            }
        }
}

#define XKN_KERNEL(NAME, NG, MX)                                                               \
    TGT_X16KN static void NAME(const uint8_t *const *g, const uint8_t *xs, size_t xstride,     \
                               int64_t nb, float *const *out, size_t ldo)                      \
    {                                                                                          \
        xkn_core(NG, MX, g, xs, xstride, nb, out, ldo);                                        \
    }

XKN_KERNEL(xkn_g1m1, 1, 1)
XKN_KERNEL(xkn_g2m1, 2, 1)
XKN_KERNEL(xkn_g3m1, 3, 1)
XKN_KERNEL(xkn_g4m1, 4, 1)
XKN_KERNEL(xkn_g1m2, 1, 2)
XKN_KERNEL(xkn_g1m3, 1, 3)
XKN_KERNEL(xkn_g1m4, 1, 4)

_Static_assert(ORK_X16_MX == 4 && XKN_STREAMS == 4, "kernel tables below");
static const ork__x16_fn xkn_streams_fn[XKN_STREAMS] = { xkn_g1m1, xkn_g2m1, xkn_g3m1,
                                                          xkn_g4m1 };
static const ork__x16_fn xkn_tile_fn[ORK_X16_MX] = { xkn_g1m1, xkn_g1m2, xkn_g1m3, xkn_g1m4 };

static ork__x16_fn fn_q4k(bool tile, int n)
{
    return tile ? xkn_tile_fn[n - 1] : xkn_streams_fn[n - 1];
}

void ork__fill_rows16_q4_k_neon_dot(struct ork__kern *t)
{
    t->t[ORK__KT_Q4_K].x16_fn = fn_q4k;
    t->t[ORK__KT_Q4_K].x16_streams = XKN_STREAMS;
}
#endif
