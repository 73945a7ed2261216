/* arm/rows16_q8_0_q4_0_i8mm.c -- the M > 1 tiles of interleaved Q8_0 / Q4_0 matrices
 * (ORK_LAYOUT_X16) with the int8 matrix multiply `smmla` (FEAT_I8MM: Cortex-A710 / X2,
 * Neoverse N2 / V1 and later; not the RK3588's A76 / A55), for the `neon-i8mm` path. Its table
 * is the `neon-dotprod` one (dispatch.c path_base) with the tiles of two to six X rows
 * replaced where they model faster (xi_tile_fn): decode (one X row) and the other tiles keep the
 * `sdot` kernels of arm/rows16_q8_0_q4_0_neon.c, since `smmla` multiplies two rows of X at
 * once and a single X row would leave half of each instruction unused (docs/kernels.md "i8mm
 * tiles").
 *
 * SMMLA Vd.4S, Vn.16B, Vm.16B (ARM ARM, SMMLA (vector)): Vn and Vm are each two rows of eight
 * int8; Vd's lanes (2i + j) += the dot of row i of Vn with row j of Vm, exactly in int32. Here
 * Vn is a pair of X rows (t0, t1) and Vm a pair of weight rows (r0, r1), eight consecutive
 * elements of each, so one instruction is the four dots [t0 r0, t0 r1, t1 r0, t1 r1] of 8
 * elements: 32 multiply-adds where `sdot` by element does 16.
 *   weights: the layout's 64-byte chunk c holds elements 4c..4c+3 of each of the 16 rows (a
 *     128-bit quarter q: rows 4q..4q+3); `zip1` / `zip2` of quarters of chunks 2k and 2k + 1
 *     (32-bit elements) give rows (4q, 4q+1) and (4q+2, 4q+3) with elements 8k..8k+7 each.
 *     Q4_0 (quant bytes xor 0x88, rows16.c) is zipped the same way and then split: `shl #4`
 *     gives the low nibbles, elements 8k..8k+7, as 16 (n - 8); `and 0xf0` the high ones,
 *     16 + 8k.., the same: the chains hold 16 x the dots, as in the sdot kernels.
 *   X: per call the X rows' blocks are rearranged once into pairs (xi_xpairs: 64 bytes of
 *     quants, row t0's eight then t1's eight for each 8-element group, then the scales as
 *     [d_t0, d_t0, d_t1, d_t1]), so the inner loop only loads them; an odd last X row pairs
 *     with itself and its copy is not stored.
 * Per output the arithmetic is the sdot kernels' and the scalar order's, block by block:
 * acc = fmaf((float)isum_b, d_w * d_x, acc), the integer dot exact, (float) isum by the same
 * magic-float start and `fsub` (arm/rows16_q8_0_q4_0_neon.c explains it), d_w * d_x one `fmul`
 * of [d_r0, d_r1, d_r0, d_r1] by [d_t0, d_t0, d_t1, d_t1], lanes in the order of Vd. Only the
 * place of an output in the registers differs, so the bits are the same
 * (tests/unit/test_kernels_x16.c compares every path's outputs with the order re-implemented). */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "kern_priv.h"

#ifdef ORK_KERN_ARM
#include <arm_neon.h>

#define TGT_XI __attribute__((target("arch=armv8.2-a+dotprod+i8mm")))
#define XI_INLINE inline __attribute__((always_inline))
#define XI_UNROLL _Pragma("GCC unroll 16")

#define XI_Q8_0_BYTES 34
#define XI_Q4_0_BYTES 18
#define XI_D_BYTES 32           /* a group block's 16 f16 scales (rows16.c) */
#define XI_CHUNK 64             /* one quant chunk: 4 bytes of each of the 16 rows */
#define XI_QUARTER 16           /* ... of which rows 4q..4q+3 fill one register */
#define XI_QUARTERS 4
#define XI_D_QUARTER 8          /* bytes of a quarter's 4 f16 scales */
#define XI_GROUPS8 4            /* 8-element groups of a 32-element block */
#define XI_NIB_HI 0xf0
#define XI_NIB_SHIFT 4
/* X rows per call: the dotprod path's x16_tile_mx (6), here three pairs. */
#define XI_MX 6
#define XI_PAIRS ((XI_MX + 1) / 2)
/* Blocks of X pairs prepared at a time: 32 blocks x 3 pairs x 80 bytes = 7.5 KiB on the
 * stack, and the group's 32 weight blocks (17 KiB of Q8_0) stay in L1 between the quarters. */
#define XI_CHUNK_BLOCKS 32

/* The magic-float start of a chain (arm/rows16_q8_0_q4_0_neon.c): the bits of 1.5 x 2^23
 * (Q8_0, spacing 1) and 1.5 x 2^19 (Q4_0, spacing 2^-4: the chain holds 16 x isum). */
#define XI_MAGIC_Q8 0x4b400000
#define XI_MAGIC_Q4 0x49400000
static const int32_t xi_magic_line[2][4] __attribute__((aligned(16))) = {
    { XI_MAGIC_Q4, XI_MAGIC_Q4, XI_MAGIC_Q4, XI_MAGIC_Q4 },
    { XI_MAGIC_Q8, XI_MAGIC_Q8, XI_MAGIC_Q8, XI_MAGIC_Q8 },
};

/* One pair of X rows' block: quants q[k] = (t0's elements 8k..8k+7, t1's), scales. */
struct xi_xpair {
    int8_t q[XI_GROUPS8][16];
    float dx[4];                /* d_t0, d_t0, d_t1, d_t1 */
};

/* The sdot kernels' dotprod fill left these; the tiles of one X row and decode use them. */
static ork__x16_fn (*xi_base_q8)(bool tile, int n);
static ork__x16_fn (*xi_base_q4)(bool tile, int n);

/* A chain's start, loaded (volatile: never merged into a register copy, an ASIMD `mov`). */
TGT_XI static XI_INLINE int32x4_t xi_magic(bool q8)
{
    int32x4_t z;
    __asm__ volatile("ldr %q0, %1" : "=w"(z) : "Q"(*(const int32_t(*)[4])xi_magic_line[q8]));
    return z;
}

/* c += smmla(x, w), the chain tied in and out (no register copies between steps). */
#define XI_MMLA(c, x, w) __asm__("smmla %0.4s, %1.16b, %2.16b" : "+w"(c) : "w"(x), "w"(w))

/* Blocks b0 .. b0 + n - 1 of the mx X rows (xs, xstride apart) as pairs: dst[b * np + p]. */
TGT_XI static void xi_xpairs(const uint8_t *xs, size_t xstride, int mx, int64_t b0, int64_t n,
                             struct xi_xpair *dst)
{
    const int np = (mx + 1) / 2;
    for (int64_t b = 0; b < n; b++)
        for (int p = 0; p < np; p++) {
            const int t1 = 2 * p + 1 < mx ? 2 * p + 1 : 2 * p;
            const uint8_t *a = xs + (size_t)(2 * p) * xstride + (size_t)(b0 + b) * ORK_X16_XBLOCK;
            const uint8_t *c = xs + (size_t)t1 * xstride + (size_t)(b0 + b) * ORK_X16_XBLOCK;
            struct xi_xpair *d = &dst[b * np + p];
            for (int h = 0; h < 2; h++) {
                const int64x2_t va = vreinterpretq_s64_s8(vld1q_s8((const int8_t *)a + 16 * h));
                const int64x2_t vc = vreinterpretq_s64_s8(vld1q_s8((const int8_t *)c + 16 * h));
                vst1q_s8(d->q[2 * h], vreinterpretq_s8_s64(vzip1q_s64(va, vc)));
                vst1q_s8(d->q[2 * h + 1], vreinterpretq_s8_s64(vzip2q_s64(va, vc)));
            }
            float d0, d1;
            memcpy(&d0, a + ORK_X16_XD, sizeof d0);
            memcpy(&d1, c + ORK_X16_XD, sizeof d1);
            vst1q_f32(d->dx, vcombine_f32(vdup_n_f32(d0), vdup_n_f32(d1)));
        }
}

/* Quarter q of n group blocks (wb: the first) against NP X pairs xp: acc[rp * NP + p] (lanes
 * t0 r0, t0 r1, t1 r0, t1 r1 of weight rows 4q + 2rp, 4q + 2rp + 1), blocks in order. */
TGT_XI static XI_INLINE void xi_quarter(bool q8, int np, int q, const uint8_t *wb, int64_t n,
                                        const struct xi_xpair *xp, float32x4_t *acc_io)
{
    float32x4_t acc[2 * XI_PAIRS];      /* in registers for the loop */
    XI_UNROLL for (int i = 0; i < 2 * np; i++)
        acc[i] = acc_io[i];
    const size_t gb = ORK_X16_ROWS * (q8 ? XI_Q8_0_BYTES : XI_Q4_0_BYTES);
    const float32x4_t magic =
        vreinterpretq_f32_s32(vdupq_n_s32(q8 ? XI_MAGIC_Q8 : XI_MAGIC_Q4));
    const int8x16_t hi_mask = vdupq_n_s8((int8_t)XI_NIB_HI);
    for (int64_t b = 0; b < n; b++, wb += gb, xp += np) {
        const uint8_t *qq = wb + XI_D_BYTES + q * XI_QUARTER;
        int32x4_t c[2 * XI_PAIRS];
        XI_UNROLL for (int i = 0; i < 2 * np; i++)
            c[i] = xi_magic(q8);
        if (q8) {
            XI_UNROLL for (int k = 0; k < XI_GROUPS8; k++) {
                const int32x4_t va = vreinterpretq_s32_u8(vld1q_u8(qq + 2 * k * XI_CHUNK));
                const int32x4_t vb = vreinterpretq_s32_u8(vld1q_u8(qq + (2 * k + 1) * XI_CHUNK));
                const int8x16_t w0 = vreinterpretq_s8_s32(vzip1q_s32(va, vb));
                const int8x16_t w1 = vreinterpretq_s8_s32(vzip2q_s32(va, vb));
                XI_UNROLL for (int p = 0; p < np; p++) {
                    const int8x16_t x = vld1q_s8(xp[p].q[k]);
                    XI_MMLA(c[p], x, w0);
                    XI_MMLA(c[np + p], x, w1);
                }
            }
        } else {
            XI_UNROLL for (int k = 0; k < XI_GROUPS8 / 2; k++) {
                const int32x4_t va = vreinterpretq_s32_u8(vld1q_u8(qq + 2 * k * XI_CHUNK));
                const int32x4_t vb = vreinterpretq_s32_u8(vld1q_u8(qq + (2 * k + 1) * XI_CHUNK));
                const int8x16_t z0 = vreinterpretq_s8_s32(vzip1q_s32(va, vb));
                const int8x16_t z1 = vreinterpretq_s8_s32(vzip2q_s32(va, vb));
                const int8x16_t lo0 = vshlq_n_s8(z0, XI_NIB_SHIFT);
                const int8x16_t lo1 = vshlq_n_s8(z1, XI_NIB_SHIFT);
                const int8x16_t hi0 = vandq_s8(z0, hi_mask);
                const int8x16_t hi1 = vandq_s8(z1, hi_mask);
                XI_UNROLL for (int p = 0; p < np; p++) {
                    const int8x16_t xl = vld1q_s8(xp[p].q[k]);
                    const int8x16_t xh = vld1q_s8(xp[p].q[2 + k]);
                    XI_MMLA(c[p], xl, lo0);
                    XI_MMLA(c[np + p], xl, lo1);
                    XI_MMLA(c[p], xh, hi0);
                    XI_MMLA(c[np + p], xh, hi1);
                }
            }
        }
        /* the 4 rows' scales; rows (4q, 4q+1) as [d0, d1, d0, d1], (4q+2, 4q+3) likewise */
        const float32x4_t dw = vcvt_f32_f16(
            vreinterpret_f16_u16(vld1_u16((const uint16_t *)(const void *)(wb + q * XI_D_QUARTER))));
        const float64x2_t dw2 = vreinterpretq_f64_f32(dw);
        const float32x4_t dwp[2] = { vreinterpretq_f32_f64(vdupq_laneq_f64(dw2, 0)),
                                     vreinterpretq_f32_f64(vdupq_laneq_f64(dw2, 1)) };
        XI_UNROLL for (int p = 0; p < np; p++) {
            const float32x4_t dx = vld1q_f32(xp[p].dx);
            XI_UNROLL for (int rp = 0; rp < 2; rp++) {
                float32x4_t *a = &acc[rp * np + p];
                const float32x4_t f = vsubq_f32(vreinterpretq_f32_s32(c[rp * np + p]), magic);
                *a = vfmaq_f32(*a, f, vmulq_f32(dwp[rp], dx));
            }
        }
    }
    XI_UNROLL for (int i = 0; i < 2 * np; i++)
        acc_io[i] = acc[i];
}

/* One group (g[0]) x MX X rows: the blocks in chunks of XI_CHUNK_BLOCKS (X pairs prepared
 * per chunk), every quarter's accumulators kept across chunks; out[0] + t * ldo. */
TGT_XI static XI_INLINE void xi_tile(bool q8, int mx, const uint8_t *g, const uint8_t *xs,
                                     size_t xstride, int64_t nb, float *out, size_t ldo)
{
    const int np = (mx + 1) / 2;
    const size_t gb = ORK_X16_ROWS * (q8 ? XI_Q8_0_BYTES : XI_Q4_0_BYTES);
    struct xi_xpair xp[XI_CHUNK_BLOCKS * XI_PAIRS] __attribute__((aligned(16)));
    float32x4_t acc[XI_QUARTERS][2 * XI_PAIRS];
    XI_UNROLL for (int q = 0; q < XI_QUARTERS; q++)
        XI_UNROLL for (int i = 0; i < 2 * np; i++)
            acc[q][i] = vdupq_n_f32(0.0f);
    for (int64_t b0 = 0; b0 < nb; b0 += XI_CHUNK_BLOCKS) {
        const int64_t n = nb - b0 < XI_CHUNK_BLOCKS ? nb - b0 : XI_CHUNK_BLOCKS;
        xi_xpairs(xs, xstride, mx, b0, n, xp);
        for (int q = 0; q < XI_QUARTERS; q++)
            xi_quarter(q8, np, q, g + (size_t)b0 * gb, n, xp, acc[q]);
    }
    /* lanes [t0 r0, t0 r1 | t1 r0, t1 r1]: the low halves of the two row pairs are X row t0's
     * four outputs, the high halves t1's */
    XI_UNROLL for (int q = 0; q < XI_QUARTERS; q++)
        XI_UNROLL for (int p = 0; p < np; p++) {
            const float64x2_t a0 = vreinterpretq_f64_f32(acc[q][p]);
            const float64x2_t a1 = vreinterpretq_f64_f32(acc[q][np + p]);
            vst1q_f32(out + (size_t)(2 * p) * ldo + 4 * q,
                      vreinterpretq_f32_f64(vzip1q_f64(a0, a1)));
            if (2 * p + 1 < mx)
                vst1q_f32(out + (size_t)(2 * p + 1) * ldo + 4 * q,
                          vreinterpretq_f32_f64(vzip2q_f64(a0, a1)));
        }
}

#define XI_KERNEL(NAME, Q8, MX)                                                                \
    TGT_XI static void NAME(const uint8_t *const *g, const uint8_t *xs, size_t xstride,        \
                            int64_t nb, float *const *out, size_t ldo)                         \
    {                                                                                          \
        xi_tile(Q8, MX, g[0], xs, xstride, nb, out[0], ldo);                                   \
    }

_Static_assert(XI_MX == 6 && XI_MX <= ORK_X16_MX_MAX, "kernel tables below");

XI_KERNEL(xi_q8_m4, true, 4)
XI_KERNEL(xi_q8_m5, true, 5)
XI_KERNEL(xi_q8_m6, true, 6)
XI_KERNEL(xi_q4_m2, false, 2)
XI_KERNEL(xi_q4_m4, false, 4)
XI_KERNEL(xi_q4_m5, false, 5)
XI_KERNEL(xi_q4_m6, false, 6)

/* [q8][mx - 1]: the X row counts where the smmla tile models faster than the sdot one
 * (Neoverse N2 model, docs/kernels.md "i8mm tiles"); NULL: the sdot tile. Q8_0 with 2 or 3 X
 * rows (3.28 / 5.02 against 3.01 / 4.52 cycles per block) and Q4_0 with 3 (5.52 against 5.45)
 * lose to the zips and, for 3, the padded pair. */
static const ork__x16_fn xi_tile_fn[2][XI_MX] = {
    { NULL, xi_q4_m2, NULL, xi_q4_m4, xi_q4_m5, xi_q4_m6 },
    { NULL, NULL, NULL, xi_q8_m4, xi_q8_m5, xi_q8_m6 },
};

static ork__x16_fn fn_q8(bool tile, int n)
{
    return tile && xi_tile_fn[1][n - 1] ? xi_tile_fn[1][n - 1] : xi_base_q8(tile, n);
}

static ork__x16_fn fn_q4(bool tile, int n)
{
    return tile && xi_tile_fn[0][n - 1] ? xi_tile_fn[0][n - 1] : xi_base_q4(tile, n);
}

void ork__fill_rows16_q8_0_q4_0_neon_i8mm(struct ork__kern *t)
{
    struct ork__type_kern *k8 = &t->t[ORK__KT_Q8_0], *k4 = &t->t[ORK__KT_Q4_0];
    if (!k8->x16_fn || !k4->x16_fn || k8->x16_tile_mx != XI_MX || k4->x16_tile_mx != XI_MX)
        return;                 /* not over the dotprod table: keep what is there */
    xi_base_q8 = k8->x16_fn;
    xi_base_q4 = k4->x16_fn;
    k8->x16_fn = fn_q8;
    k4->x16_fn = fn_q4;
}
#endif
