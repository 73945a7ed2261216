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
 * chain is 4 x the sub-block's integer dot sum (q - 32) x. Its int8 scale, sign-extended into
 * the rows' int32 lanes by one sdot of the quarter's scale register against a unit vector
 * (lane k % 4 of x6n_unit: byte k % 4 of each row's word times 1, the others times 0;
 * rows16_q6_k.h), times the chain (`mla`) is added to 4 S: |4 S| <= 4 x 16 x 128 x 16 x 32 x
 * 127 < 2^31 (sub-blocks, scale, elements, value, X quant). The conversion with two fraction
 * bits (`scvtf #2`) gives (float) S exactly (S is an integer: one rounding, the same as
 * (float) S's), and the f32 steps are qk_block.h q6k_block_sum's in the same order
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
#define X6N_SC_REGS 4           /* scale chunks: 4 sub-blocks each */
#define X6N_SUB_PER_REG 4
#define X6N_X_SUB 16            /* X quants per sub-block: one register */
#define X6N_FRAC_BITS 2         /* the chains hold 4 x the integer dots */
/* Groups the decode kernels read side by side: as the Q4_K kernels (ORK_X16K_STREAMS; a
 * matrix call mixing the two types reads one type's streams at a time). */
#define X6N_STREAMS ORK_X16K_STREAMS
/* X rows per M > 1 tile call (x16_tile_mx): the operands and scales made per sub-block are
 * shared by six; 6 sums, 4 operands, 4 scales and the X register and chain of the row in work
 * fit the 32 vector registers. */
#define X6N_TILE_MX 6

/* The chains start from a line of zeros read with a load: a `movi` or register copy would take
 * an ASIMD slot from the kernel's bit operations and dot products (the A76 has two load
 * pipelines beside its two ASIMD ones: Cortex-A76 Software Optimization Guide, 2.1 "Pipeline
 * overview"; as rows16_q8_0_q4_0_neon.c's magic line). volatile: one load per use. */
static const int32_t x6n_zero_line[4] __attribute__((aligned(16))) = { 0, 0, 0, 0 };

TGT_X6N static X6N_INLINE int32x4_t x6n_zero(void)
{
    int32x4_t z;
    __asm__ volatile("ldr %q0, %1" : "=w"(z) : "Q"(*(const int32_t(*)[4])x6n_zero_line));
    return z;
}

/* The unit vectors of the scales' sign extension: 32-bit lane j is bytes (1, 0, 0, 0) moved to
 * byte j. An sdot by lane j picks byte j of each 32-bit lane, sign-extended: one instruction
 * that both ASIMD pipelines run, where two `sxtl` per sub-block run on one (Cortex-A76 Software
 * Optimization Guide, 3.x "ASIMD integer instructions": shifts on V1). */
static const int8_t x6n_unit[16] __attribute__((aligned(16))) = { 1, 0, 0, 0, 0, 1, 0, 0,
                                                                   0, 0, 1, 0, 0, 0, 0, 1 };

/* The scale of sub-block 4m + J (J a literal) of the 4 rows of scale register v, as int32. */
#define X6N_SCALE(v, J) vdotq_laneq_s32(x6n_zero(), v, unit, J)

/* Quarter q of one group block (wb) against mx X blocks (x[t]): the f32 terms dd * S of its 4
 * rows in r[t]. */
TGT_X6N static X6N_INLINE void x6n_quarter(int mx, const uint8_t *wb, int q,
                                           const uint8_t *const *x, float32x4_t *r)
{
    const uint8x16_t vmask = vdupq_n_u8(XQ6_VALUE_MASK);
    const int8x16_t unit = vld1q_s8(x6n_unit);
    const int8_t *scq = (const int8_t *)wb + XQ6_SC + q * X6N_QUARTER;
    int32x4_t s[X6N_TILE_MX];
    X6N_UNROLL for (int t = 0; t < mx; t++)
        s[t] = vdupq_n_s32(0);
    X6N_UNROLL for (int m = 0; m < X6N_SC_REGS; m++) {
        const int8x16_t scv = vld1q_s8(scq + m * XQ6_CHUNK);
        const int32x4_t sc[X6N_SUB_PER_REG] = { X6N_SCALE(scv, 0), X6N_SCALE(scv, 1),
                                                X6N_SCALE(scv, 2), X6N_SCALE(scv, 3) };
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
                int32x4_t c = vdotq_laneq_s32(x6n_zero(), o0, xk, 0);
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
X6N_KERNEL(x6n_g1m5, 1, 5)
X6N_KERNEL(x6n_g1m6, 1, 6)

_Static_assert(X6N_TILE_MX == 6 && X6N_TILE_MX <= ORK_X16_MX_MAX && X6N_STREAMS == 4,
               "kernel tables below");
static const ork__x16_fn x6n_streams_fn[X6N_STREAMS] = { x6n_g1m1, x6n_g2m1, x6n_g3m1,
                                                          x6n_g4m1 };
static const ork__x16_fn x6n_tile_fn[X6N_TILE_MX] = { x6n_g1m1, x6n_g1m2, x6n_g1m3, x6n_g1m4,
                                                       x6n_g1m5, x6n_g1m6 };

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
