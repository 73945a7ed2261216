/* arm/rows16_q6_k_neon.c -- the NEON dot-product kernels of interleaved Q6_K matrices
 * (ORK_LAYOUT_X16; the layout rows16_q6_k.h's, its packing and scalar reference
 * rows16_q6_k.c's, the X form (the Q4_K one) and the drivers rows16.c's): decode streams and
 * the M > 1 tiles of the `neon-dotprod` path.
 *
 * As in rows16_q4_k_neon.c a 128-bit register is a quarter of a 64-byte chunk (bytes
 * 4i..4i+3: row 4r + i of quarter r) and `sdot` by element puts row 4r + i's partial in int32
 * lane i. Per quarter and 16-element sub-block k the three chunks R_0, R_1, R_2 give the four
 * sdot operands, each the int8 4 (q - 32) of 4 elements of 4 rows:
 *   R_j & 0xfc (`and`) for elements 16k + 4j ..;  ((R_2 << 2) with R_1 << 4 and R_0 << 6
 *   inserted (`shl`, `sli`, `sli`)) for elements 16k + 12 ..;
 * against lanes 0..3 of the X register of the sub-block (the Q8_K quants 16k .. 16k + 15): the
 * chain is 4 x the sub-block's integer dot sum (q - 32) x. Its int8 scale (two sign-extending
 * `sxtl` steps per register of four sub-blocks' scales, rows16_q6_k.h) times the chain (`mla`)
 * is added to 4 S: |4 S| <= 4 x 16 x 128 x 16 x 32 x 127 < 2^31. The conversion with two
 * fraction bits (`scvtf #2`) gives (float) S exactly (S is an integer: one rounding, the
 * same as (float) S's), and the f32 steps are qk_block.h q6k_block_sum's in the same order
 * (dd = dx * d, dd * S, added to the sum): every output has the bits of ork__q8k_blocks
 * (tests/unit/test_kernels_x16.c compares them bit for bit).
 *
 * In the M > 1 tiles the operands and scales of a sub-block are made once for all X rows.
 * The sums live in the output rows (read, add, write once per quarter and block), as in the
 * Q4_K kernels. No software prefetch (x16_prefetch 0: not measured on a board). */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "kern_priv.h"
#include "rows16_q6_k.h"

#ifdef ORK_KERN_ARM
#include <arm_neon.h>

#define TGT_X6N __attribute__((target("arch=armv8.2-a+dotprod")))
#define X6N_INLINE inline __attribute__((always_inline))
/* The loops over sub-blocks, quarters, groups and X rows unrolled whole (GCC 12 -O2 keeps
 * them as loops, the scales and chains on the stack). */
#define X6N_UNROLL _Pragma("GCC unroll 16")

#define X6N_QUARTER 16          /* a register: 4 bytes of each of 4 rows of a chunk */
#define X6N_QUARTERS 4
#define X6N_D_QUARTER 8         /* bytes of a quarter's 4 f16 scales */
#define X6N_SC_REGS 4           /* registers of a quarter's scales: 4 sub-blocks each */
#define X6N_SUB_PER_REG 4
#define X6N_X_SUB 16            /* X quants per sub-block: one register */
#define X6N_FRAC_BITS 2         /* the chains hold 4 x the integer dots */
/* Groups the decode kernels read side by side: as the Q4_K kernels (ORK_X16K_STREAMS; a
 * matrix call mixing the two types reads one type's streams at a time). */
#define X6N_STREAMS ORK_X16K_STREAMS
#define X6N_TILE_MX ORK_X16_MX

/* The four int32 scale vectors (sub-blocks 4m .. 4m + 3, lanes: the quarter's rows) of the
 * quarter's scale register m. */
TGT_X6N static X6N_INLINE void x6n_scales(const uint8_t *scq, int m, int32x4_t sc[4])
{
    const int8x16_t v = vld1q_s8((const int8_t *)scq + m * X6N_QUARTER);
    const int16x8_t lo = vmovl_s8(vget_low_s8(v)), hi = vmovl_high_s8(v);
    sc[0] = vmovl_s16(vget_low_s16(lo));
    sc[1] = vmovl_high_s16(lo);
    sc[2] = vmovl_s16(vget_low_s16(hi));
    sc[3] = vmovl_high_s16(hi);
}

/* Quarter q of one group block (wb) against mx X blocks (x[t]): the f32 terms dd * S of its 4
 * rows in r[t]. */
TGT_X6N static X6N_INLINE void x6n_quarter(int mx, const uint8_t *wb, int q,
                                           const uint8_t *const *x, float32x4_t *r)
{
    const uint8x16_t vmask = vdupq_n_u8(XQ6_VALUE_MASK);
    const uint8_t *scq = wb + XQ6_SC + q * XQ6_CHUNK;
    int32x4_t s[X6N_TILE_MX];
    X6N_UNROLL for (int t = 0; t < mx; t++)
        s[t] = vdupq_n_s32(0);
    X6N_UNROLL for (int m = 0; m < X6N_SC_REGS; m++) {
        int32x4_t sc[X6N_SUB_PER_REG];
        x6n_scales(scq, m, sc);
        X6N_UNROLL for (int kk = 0; kk < X6N_SUB_PER_REG; kk++) {
            const int k = X6N_SUB_PER_REG * m + kk;
            const uint8_t *qp = wb + XQ6_QS + (size_t)(XQ6_CHUNKS_PER_SUB * k) * XQ6_CHUNK +
                                q * X6N_QUARTER;
            const uint8x16_t r0 = vld1q_u8(qp), r1 = vld1q_u8(qp + XQ6_CHUNK);
            const uint8x16_t r2 = vld1q_u8(qp + 2 * XQ6_CHUNK);
            const int8x16_t o0 = vreinterpretq_s8_u8(vandq_u8(r0, vmask));
            const int8x16_t o1 = vreinterpretq_s8_u8(vandq_u8(r1, vmask));
            const int8x16_t o2 = vreinterpretq_s8_u8(vandq_u8(r2, vmask));
            const int8x16_t o3 = vreinterpretq_s8_u8(
                vsliq_n_u8(vsliq_n_u8(vshlq_n_u8(r2, 2), r1, 4), r0, 6));
            X6N_UNROLL for (int t = 0; t < mx; t++) {
                const int8x16_t xk = vld1q_s8((const int8_t *)x[t] + k * X6N_X_SUB);
                int32x4_t c = vdotq_laneq_s32(vdupq_n_s32(0), o0, xk, 0);
                c = vdotq_laneq_s32(c, o1, xk, 1);
                c = vdotq_laneq_s32(c, o2, xk, 2);
                c = vdotq_laneq_s32(c, o3, xk, 3);
                s[t] = vmlaq_s32(s[t], c, sc[kk]);
            }
        }
    }
    const float32x4_t dw = vcvt_f32_f16(vreinterpret_f16_u16(
        vld1_u16((const uint16_t *)(const void *)(wb + XQ6_D + q * X6N_D_QUARTER))));
    X6N_UNROLL for (int t = 0; t < mx; t++) {
        float dxf;
        memcpy(&dxf, x[t] + ORK_X16K_XD, sizeof dxf);
        /* q6k_block_sum: dd = dx * d, then dd * S */
        r[t] = vmulq_f32(vmulq_n_f32(dw, dxf), vcvtq_n_f32_s32(s[t], X6N_FRAC_BITS));
    }
}

/* ng groups (g[s] at block 0) x mx X rows (xs, xstride apart): blocks 0 .. nb-1 added in order
 * into out[s] + t * ldo (16 rows each, zeroed first). Inlined with constant ng, mx. */
TGT_X6N static X6N_INLINE void x6n_core(int ng, int mx, const uint8_t *const *g,
                                        const uint8_t *xs, size_t xstride, int64_t nb,
                                        float *const *out, size_t ldo)
{
    for (int s = 0; s < ng; s++)
        for (int t = 0; t < mx; t++)
            memset(out[s] + (size_t)t * ldo, 0, ORK_X16_ROWS * sizeof(float));
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *x[X6N_TILE_MX];
        X6N_UNROLL for (int t = 0; t < mx; t++)
            x[t] = xs + (size_t)t * xstride + (size_t)b * ORK_X16K_XBLOCK;
        X6N_UNROLL for (int s = 0; s < ng; s++) {
            const uint8_t *wb = g[s] + (size_t)b * XQ6_GROUP_BYTES;
            X6N_UNROLL for (int q = 0; q < X6N_QUARTERS; q++) {
                float32x4_t r[X6N_TILE_MX];
                x6n_quarter(mx, wb, q, x, r);
                X6N_UNROLL for (int t = 0; t < mx; t++) {
                    float *o = out[s] + (size_t)t * ldo + 4 * q;
                    vst1q_f32(o, vaddq_f32(vld1q_f32(o), r[t]));
                }
            }
        }
    }
}

#define X6N_KERNEL(NAME, NG, MX)                                                               \
    TGT_X6N static void NAME(const uint8_t *const *g, const uint8_t *xs, size_t xstride,      \
                             int64_t nb, float *const *out, size_t ldo)                        \
    {                                                                                          \
        x6n_core(NG, MX, g, xs, xstride, nb, out, ldo);                                        \
    }

X6N_KERNEL(x6n_g1m1, 1, 1)
X6N_KERNEL(x6n_g2m1, 2, 1)
X6N_KERNEL(x6n_g3m1, 3, 1)
X6N_KERNEL(x6n_g4m1, 4, 1)
X6N_KERNEL(x6n_g1m2, 1, 2)
X6N_KERNEL(x6n_g1m3, 1, 3)
X6N_KERNEL(x6n_g1m4, 1, 4)

_Static_assert(X6N_TILE_MX == 4 && X6N_STREAMS == 4, "kernel tables below");
static const ork__x16_fn x6n_streams_fn[X6N_STREAMS] = { x6n_g1m1, x6n_g2m1, x6n_g3m1,
                                                          x6n_g4m1 };
static const ork__x16_fn x6n_tile_fn[X6N_TILE_MX] = { x6n_g1m1, x6n_g1m2, x6n_g1m3, x6n_g1m4 };

static ork__x16_fn fn_q6k(bool tile, int n)
{
    return tile ? x6n_tile_fn[n - 1] : x6n_streams_fn[n - 1];
}

void ork__fill_rows16_q6_k_neon_dot(struct ork__kern *t)
{
    t->t[ORK__KT_Q6_K].x16_fn = fn_q6k;
    t->t[ORK__KT_Q6_K].x16_streams = X6N_STREAMS;
    t->t[ORK__KT_Q6_K].x16_tile_mx = X6N_TILE_MX;
}
#endif
