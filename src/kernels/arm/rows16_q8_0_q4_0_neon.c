/* arm/rows16_q8_0_q4_0_neon.c -- the NEON dot-product kernels of interleaved Q8_0 / Q4_0
 * matrices (ORK_LAYOUT_X16; the layout, the X form and the drivers are rows16.c's, the thread
 * split matmul.c's): decode streams and the M > 1 tiles of the `neon-dotprod` path (the
 * RK3588's Cortex-A76 and A55).
 *
 * A 128-bit register holds a quarter of a group's 64-byte quant chunk: bytes 4i..4i+3 are row
 * 4r + i of quarter r (r = 0..3), and `sdot` by element (ARMv8.2 DotProd, SDOT (by element):
 * each 32-bit lane += the dot of its four bytes with one chosen 4-byte element of X) leaves
 * row 4r + i's partial in int32 lane i: nothing is reduced across lanes, one instruction feeds
 * 4 rows x 4 elements, and the X element is named by the instruction (no broadcast).
 *   Q8_0: the quants are stored signed on AArch64 (rows16.c X16_Q8_0_XOR), the operand as is.
 *   Q4_0: the quant bytes are stored xor 0x88 (rows16.c X16_Q4_0_XOR), so the low nibble
 *         shifted up by 4 (`shl`) and the high nibble masked in place (`and`) are, as int8,
 *         16 (n - 8): the chain sums 16 x the block's integer dot, and the conversion takes
 *         it back exactly with 4 fraction bits (`scvtf #4`: |dot| < 2^24, an integer).
 * Per row the arithmetic is the x86 kernels': block by block in order, acc = fmaf((float)
 * isum_b, d_w * d_x, acc) with the block's exact integer dot, so every path gives the same
 * bits (tests/unit/test_kernels_x16.c). The X form's -128 sum(q) bias is not needed here.
 *
 * (float) isum without `scvtf`: a Q-form int32 -> f32 conversion is two micro-ops on the A76
 * (Cortex-A76 Software Optimization Guide, 3.x "ASIMD FP convert": Q-form F32, throughput 1/2),
 * as many as the block's scale product and FMA together. Each 4-row dot chain starts instead
 * from the bits of a "magic" float M (xn_magic: 1.5 x 2^23 for Q8_0, 1.5 x 2^19 for Q4_0) and
 * adds its integers to those bits: M's binade has a spacing of 1 (2^-4), |isum| < 2^22
 * (|16 isum| < 2^22 for Q4_0: 32 x 128 x 128 = 2^19), so the lane read as f32 is exactly M +
 * isum and one `fsub` of M gives (float) isum exactly (Q4_0: the chain's 16 x isum times the
 * spacing 2^-4 is isum itself). Same bits, one micro-op instead of two.
 *
 * The chains start from a line of M read with a load (xn_magic): the A76 has two load
 * pipelines beside its two ASIMD ones (Cortex-A76 Software Optimization Guide, 2.1 "Pipeline
 * overview": L0/L1 and V0/V1), and a `mov` would take an ASIMD slot from the dot products in
 * the M > 1 tiles (docs/kernels.md "A76 cost table"). No software prefetch: the kernels have
 * not been measured on a board yet (x16_prefetch 0). */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "kern_priv.h"

#ifdef ORK_KERN_ARM
#include <arm_neon.h>

#define TGT_X16N __attribute__((target("arch=armv8.2-a+dotprod")))
#define XN_INLINE inline __attribute__((always_inline))
/* Every loop over groups, quarters and X rows is unrolled whole: GCC 12 at -O2 keeps them as
 * loops otherwise, with the accumulators on the stack (one load and store per block each). */
#define XN_UNROLL _Pragma("GCC unroll 16")

#define XN_Q8_0_BYTES 34
#define XN_Q4_0_BYTES 18
#define XN_D_BYTES 32           /* a block's 16 f16 scales (rows16.c) */
#define XN_CHUNK 64             /* one quant chunk of the group: 4 bytes of each of 16 rows */
#define XN_QUARTER 16           /* ... of which 4 rows fill one register */
#define XN_QUARTERS 4
#define XN_D_QUARTER 8          /* bytes of a quarter's 4 f16 scales */
#define XN_X_HI 16              /* X quants 16..31: the second register */
#define XN_NIB_HI 0xf0          /* Q4_0: the high nibble in place */
#define XN_NIB_SHIFT 4          /* ... the low one moved up; both are 16 (n - 8) */
/* Decode streams side by side: four groups' 16 f32 accumulators, the X block and the dot
 * chains fill the 32 vector registers without spilling (five need 20 accumulators and spill). */
#define XN_STREAMS 4
/* X rows per M > 1 tile call (x16_tile_mx): the per-block work shared by the X rows (the
 * scales' conversion, Q4_0's nibble split) is spread over six; 12 X registers, 6 accumulators
 * and 6 dot chains fit the 32 vector registers with one quarter per pass. */
#define XN_TILE_MX 6
/* Quarters per pass of an M > 1 tile: with 5 or 6 X rows one quarter per pass over the blocks
 * (four passes), with 3 or 4 two (8 accumulators beside the 8 X registers), fewer all four. */
#define XN_TILE_QUARTERS(MX) ((MX) > 4 ? 1 : (MX) > 2 ? 2 : 4)

/* With more than four X rows the X scales are read where they are used (one use each per
 * pass): held with the X quants they would not leave registers for the accumulators. */
#define XN_DX_AT_USE(MX) ((MX) > 4)

/* The dot chains' start (see the top of the file): the bits of 1.5 x 2^23 (Q8_0: spacing 1)
 * and of 1.5 x 2^19 (Q4_0: spacing 2^-4, the chain holding 16 x isum). */
#define XN_MAGIC_Q8 0x4b400000
#define XN_MAGIC_Q4 0x49400000
static const int32_t xn_magic_line[2][4] __attribute__((aligned(16))) = {
    { XN_MAGIC_Q4, XN_MAGIC_Q4, XN_MAGIC_Q4, XN_MAGIC_Q4 },
    { XN_MAGIC_Q8, XN_MAGIC_Q8, XN_MAGIC_Q8, XN_MAGIC_Q8 },
};

/* The magic line read from memory (not a register copy: see the top of the file). volatile:
 * one load per use, never merged with another into a `mov` (an ASIMD instruction too). */
TGT_X16N static XN_INLINE int32x4_t xn_magic(bool q8)
{
    int32x4_t z;
    __asm__ volatile("ldr %q0, %1" : "=w"(z) : "Q"(*(const int32_t(*)[4])xn_magic_line[q8]));
    return z;
}

/* (float) isum of a chain that started at xn_magic(q8): exact (see the top of the file). */
TGT_X16N static XN_INLINE float32x4_t xn_isum_f32(bool q8, int32x4_t i)
{
    const float32x4_t m = vreinterpretq_f32_s32(vdupq_n_s32(q8 ? XN_MAGIC_Q8 : XN_MAGIC_Q4));
    return vsubq_f32(vreinterpretq_f32_s32(i), m);
}

/* a * lane 0 of b, as one `fmul` by element: GCC 12 otherwise broadcasts b first with a `dup`
 * it shares between quarters, one more ASIMD instruction per X row and block pass. */
TGT_X16N static XN_INLINE float32x4_t xn_mul_lane0(float32x4_t a, float32x4_t b)
{
    float32x4_t r;
    __asm__("fmul %0.4s, %1.4s, %2.s[0]" : "=w"(r) : "w"(a), "w"(b));
    return r;
}

/* i[t] += sdot(w, lane L of x[t]) for the MX X rows; L is a literal. As an asm with the chain
 * tied in and out: from the intrinsic GCC 12 makes register copies (`mov`, an ASIMD slot)
 * between a chain's steps in the wide tiles. */
#define XN_DOTS(i, w, x, L, MX)                                                                \
    do {                                                                                       \
        XN_UNROLL for (int t_ = 0; t_ < (MX); t_++)                                            \
            __asm__("sdot %0.4s, %1.16b, %2.4b[" #L "]"                                        \
                    : "+w"((i)[t_]) : "w"(w), "w"((x)[t_]));                                   \
    } while (0)

/* Quarter q (at the block's quants + 16 r) of a Q8_0 group block against mx X blocks: the
 * exact integer dots of its 4 rows in i[t] (added to the magic bits). Chunk c is X elements 4c..4c+3: lane c % 4 of X
 * register c / 4. */
TGT_X16N static XN_INLINE void xn_q8_quarter(int mx, const uint8_t *q, const int8x16_t *x0,
                                             const int8x16_t *x1, int32x4_t *i)
{
    XN_UNROLL for (int t = 0; t < mx; t++)
        i[t] = xn_magic(true);
#define XN_Q8C(C, X, L) XN_DOTS(i, vld1q_s8((const int8_t *)q + (C) * XN_CHUNK), X, L, mx)
    XN_Q8C(0, x0, 0);
    XN_Q8C(1, x0, 1);
    XN_Q8C(2, x0, 2);
    XN_Q8C(3, x0, 3);
    XN_Q8C(4, x1, 0);
    XN_Q8C(5, x1, 1);
    XN_Q8C(6, x1, 2);
    XN_Q8C(7, x1, 3);
#undef XN_Q8C
}

/* The same for Q4_0: chunk c's low nibbles are X elements 4c.., its high ones 16 + 4c..;
 * i[t] gets 16 x the integer dots (on top of the magic bits). With more than four X rows
 * the next chunk's address waits (an empty asm) for this chunk's dots: GCC 12 otherwise
 * loads and splits all four chunks first, and the 8 halves beside the 12 X registers and 12
 * accumulators spill. The out-of-order core issues the load early all the same. */
TGT_X16N static XN_INLINE void xn_q4_quarter(int mx, const uint8_t *q, const int8x16_t *x0,
                                             const int8x16_t *x1, int32x4_t *i)
{
    const int8x16_t hi_mask = vdupq_n_s8((int8_t)XN_NIB_HI);
    XN_UNROLL for (int t = 0; t < mx; t++)
        i[t] = xn_magic(false);
#define XN_Q4C(C)                                                                              \
    do {                                                                                       \
        const int8x16_t v = vld1q_s8((const int8_t *)q + (C) * XN_CHUNK);                      \
        XN_DOTS(i, vshlq_n_s8(v, XN_NIB_SHIFT), x0, C, mx);                                    \
        XN_DOTS(i, vandq_s8(v, hi_mask), x1, C, mx);                                           \
        if (XN_DX_AT_USE(mx))                                                                  \
            __asm__("" : "+r"(q) : "w"(i[mx - 1]));                                            \
    } while (0)
    XN_Q4C(0);
    XN_Q4C(1);
    XN_Q4C(2);
    XN_Q4C(3);
#undef XN_Q4C
}

/* ng groups (g[s] at block 0) x mx X rows (xs, xstride apart), quarters q0 .. q0 + nq - 1:
 * blocks 0 .. nb-1 into acc[(s * mx + t) * nq + q - q0] (lane i: row 4q + i of group s against
 * X row t), each accumulator's blocks in order. Inlined with constant q8, ng, mx, q0, nq. */
TGT_X16N static XN_INLINE void xn_core(bool q8, int ng, int mx, int q0, int nq,
                                       const uint8_t *const *g, const uint8_t *xs,
                                       size_t xstride, int64_t nb, float32x4_t *acc)
{
    const size_t gb = ORK_X16_ROWS * (q8 ? XN_Q8_0_BYTES : XN_Q4_0_BYTES);
    for (int64_t b = 0; b < nb; b++) {
        int8x16_t x0[XN_TILE_MX], x1[XN_TILE_MX];
        float32x4_t dx[XN_TILE_MX];     /* lane 0: d_x (the block's last 16 bytes) */
        XN_UNROLL for (int t = 0; t < mx; t++) {
            const uint8_t *xb = xs + (size_t)t * xstride + (size_t)b * ORK_X16_XBLOCK;
            x0[t] = vld1q_s8((const int8_t *)xb);
            x1[t] = vld1q_s8((const int8_t *)xb + XN_X_HI);
            if (!XN_DX_AT_USE(mx))
                dx[t] = vld1q_f32((const float *)(const void *)(xb + ORK_X16_XD));
        }
        XN_UNROLL for (int s = 0; s < ng; s++) {
            const uint8_t *wb = g[s] + (size_t)b * gb;
            XN_UNROLL for (int q = q0; q < q0 + nq; q++) {
                const float32x4_t dw = vcvt_f32_f16(vreinterpret_f16_u16(
                    vld1_u16((const uint16_t *)(const void *)(wb + q * XN_D_QUARTER))));
                const uint8_t *qq = wb + XN_D_BYTES + q * XN_QUARTER;
                int32x4_t i[XN_TILE_MX];
                if (q8)
                    xn_q8_quarter(mx, qq, x0, x1, i);
                else
                    xn_q4_quarter(mx, qq, x0, x1, i);
                XN_UNROLL for (int t = 0; t < mx; t++) {
                    float32x4_t *a = &acc[(s * mx + t) * nq + (q - q0)];
                    const float32x4_t d =
                        XN_DX_AT_USE(mx) ? vld1q_f32((const float *)(const void *)(
                                               xs + (size_t)t * xstride +
                                               (size_t)b * ORK_X16_XBLOCK + ORK_X16_XD))
                                         : dx[t];
                    *a = vfmaq_f32(*a, xn_isum_f32(q8, i[t]), xn_mul_lane0(dw, d));
                }
            }
        }
    }
}

/* One specialization per (type, ng, mx): the quarters in passes of XN_TILE_QUARTERS(mx) (all
 * four for decode), 16 lanes stored per output row (out[s] + t * ldo). */
#define XN_KERNEL(NAME, Q8, NG, MX)                                                            \
    TGT_X16N static void NAME(const uint8_t *const *g, const uint8_t *xs, size_t xstride,      \
                              int64_t nb, float *const *out, size_t ldo)                       \
    {                                                                                          \
        enum { NQ = (NG) > 1 ? XN_QUARTERS : XN_TILE_QUARTERS(MX) };                           \
        XN_UNROLL for (int q0 = 0; q0 < XN_QUARTERS; q0 += NQ) {                               \
            float32x4_t acc[(NG) * (MX) * NQ];                                                 \
            XN_UNROLL for (int i = 0; i < (NG) * (MX) * NQ; i++)                               \
                acc[i] = vdupq_n_f32(0.0f);                                                    \
            xn_core(Q8, NG, MX, q0, NQ, g, xs, xstride, nb, acc);                              \
            XN_UNROLL for (int s = 0; s < (NG); s++)                                           \
                XN_UNROLL for (int t = 0; t < (MX); t++)                                       \
                    XN_UNROLL for (int q = 0; q < NQ; q++)                                     \
                        vst1q_f32(out[s] + (size_t)t * ldo + (size_t)(q0 + q) * 4,             \
                                  acc[(s * (MX) + t) * NQ + q]);                               \
        }                                                                                      \
    }

_Static_assert(XN_TILE_MX == 6 && XN_STREAMS <= ORK_X16_STREAMS_MAX &&
                   XN_TILE_MX <= ORK_X16_MX_MAX, "kernel tables below");

XN_KERNEL(xn_q8_g1m1, true, 1, 1)
XN_KERNEL(xn_q8_g2m1, true, 2, 1)
XN_KERNEL(xn_q8_g3m1, true, 3, 1)
XN_KERNEL(xn_q8_g4m1, true, 4, 1)
XN_KERNEL(xn_q8_g1m2, true, 1, 2)
XN_KERNEL(xn_q8_g1m3, true, 1, 3)
XN_KERNEL(xn_q8_g1m4, true, 1, 4)
XN_KERNEL(xn_q8_g1m5, true, 1, 5)
XN_KERNEL(xn_q8_g1m6, true, 1, 6)
XN_KERNEL(xn_q4_g1m1, false, 1, 1)
XN_KERNEL(xn_q4_g2m1, false, 2, 1)
XN_KERNEL(xn_q4_g3m1, false, 3, 1)
XN_KERNEL(xn_q4_g4m1, false, 4, 1)
XN_KERNEL(xn_q4_g1m2, false, 1, 2)
XN_KERNEL(xn_q4_g1m3, false, 1, 3)
XN_KERNEL(xn_q4_g1m4, false, 1, 4)
XN_KERNEL(xn_q4_g1m5, false, 1, 5)
XN_KERNEL(xn_q4_g1m6, false, 1, 6)

/* [q8][ng - 1] with mx = 1, and [q8][mx - 1] with ng = 1 */
static const ork__x16_fn xn_streams_fn[2][XN_STREAMS] = {
    { xn_q4_g1m1, xn_q4_g2m1, xn_q4_g3m1, xn_q4_g4m1 },
    { xn_q8_g1m1, xn_q8_g2m1, xn_q8_g3m1, xn_q8_g4m1 },
};
static const ork__x16_fn xn_tile_fn[2][XN_TILE_MX] = {
    { xn_q4_g1m1, xn_q4_g1m2, xn_q4_g1m3, xn_q4_g1m4, xn_q4_g1m5, xn_q4_g1m6 },
    { xn_q8_g1m1, xn_q8_g1m2, xn_q8_g1m3, xn_q8_g1m4, xn_q8_g1m5, xn_q8_g1m6 },
};

static ork__x16_fn fn_q8(bool tile, int n)
{
    return tile ? xn_tile_fn[1][n - 1] : xn_streams_fn[1][n - 1];
}

static ork__x16_fn fn_q4(bool tile, int n)
{
    return tile ? xn_tile_fn[0][n - 1] : xn_streams_fn[0][n - 1];
}

void ork__fill_rows16_q8_0_q4_0_neon_dot(struct ork__kern *t)
{
    t->t[ORK__KT_Q8_0].x16_fn = fn_q8;
    t->t[ORK__KT_Q4_0].x16_fn = fn_q4;
    t->t[ORK__KT_Q8_0].x16_streams = XN_STREAMS;
    t->t[ORK__KT_Q4_0].x16_streams = XN_STREAMS;
    t->t[ORK__KT_Q8_0].x16_tile_mx = XN_TILE_MX;
    t->t[ORK__KT_Q4_0].x16_tile_mx = XN_TILE_MX;
}
#endif
