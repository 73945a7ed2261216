/* x86/rows16_q8_0_q4_0_avx2.c -- the AVX2 kernels of interleaved Q8_0 / Q4_0 matrices
 * (ORK_LAYOUT_X16; the layout, the X form and the drivers are rows16.c's, the thread split
 * matmul.c's): decode streams
 * and the M > 1 tiles for the `avx2` and `avxvnni` paths.
 *
 * A 256-bit register holds half of a group's 64-byte quant vector: bytes 4i..4i+3 are row
 * 8h + i of half h (h = 0, 1), so each half-block of 8 rows ends in 8 int32 lanes, one per row,
 * and nothing is reduced across lanes, as in the AVX-512 kernels. AVX2 has no vpdpbusd; its
 * byte dot is vpmaddubsw (u8 x s8, adjacent pairs added into saturating int16) then vpmaddwd
 * by ones (int16 pairs into int32). Neither type may saturate:
 *   Q4_0: the nibbles n (0..15) are the unsigned operand, X the signed one: a pair is at most
 *         2 * 15 * 128 = 3840, so the eight products of one 32-element block half (4 chunks,
 *         low and high nibbles) add up in int16 (8 * 3840 = 30720 < 32767) before one
 *         vpmaddwd; the block's integer dot is sum n x - 8 sum x, the X form's bias
 *         (-128 sum x) shifted right by 4 (exact: a multiple of 16).
 *   Q8_0: the weights are stored as q + 128 (the vpdpbusd operand); with them as the unsigned
 *         side a pair could reach 2 * 255 * 127 and saturate. So q = stored ^ 0x80 is taken
 *         back and the pair is |q| x (x with q's sign) (vpabsb, vpsignb): at most
 *         2 * 128 * 127 = 32512 (the X quants are within +-127), widened per chunk.
 * Per row the arithmetic is the AVX-512 kernels': block by block in order, acc = fmaf((float)
 * isum_b, d_w * d_x, acc) with the block's exact integer dot, so every path gives the same
 * bits (tests/unit/test_kernels_x16.c). */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "x86_priv.h"

#ifdef ORK_KERN_X86

#define TGT_X16A __attribute__((target("avx2,fma,f16c")))

#define Q8_0_BYTES 34
#define Q4_0_BYTES 18
#define XA_D_BYTES 32           /* a block's 16 f16 scales (rows16.c) */
#define XA_CHUNK 64             /* one quant vector of the group: 4 bytes of each of 16 rows */
#define XA_HALF 32              /* ... of which 8 rows fill one ymm */
#define XA_Q8_CHUNKS 8          /* Q8_0: 32 quants per row, 4 per chunk */
#define XA_Q4_CHUNKS 4          /* Q4_0: 16 quant bytes per row, 4 per chunk */
#define XA_FLIP 0x80            /* stored Q8_0 quant = q ^ 0x80 */
#define XA_Q4_HI 16             /* Q4_0: the high nibbles are elements 16 .. 31 */
#define XA_BIAS_SHIFT 4         /* -128 sum x >> 4 = -8 sum x, Q4_0's offset correction */
/* No software prefetch, unlike the AVX-512 kernels: on the Zen 3 host theirs streamed a smaller
 * share of the read kernel's bandwidth than none (docs/kernels.md "Measurements behind the code:
 * AVX2 interleaved prefetch"). */

TGT_X16A static inline __m256i xa_bcast(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

/* The integer dots of 8 rows (half h of a block: its chunks from q, XA_CHUNK apart) with mx X
 * blocks (x, xstride apart) into i[t]. Q4_0 unpacks the chunks again for each X row (from L1):
 * unpacking once for all four rows of a tile kept more values live and ran slower; Q8_0 takes
 * each chunk's |w| once for all rows, which ran faster (docs/kernels.md "Measurements behind
 * the code: AVX2 interleaved tiles"). */
TGT_X16A static inline __attribute__((always_inline)) void
xa_q4_half(int mx, const uint8_t *q, const uint8_t *x, size_t xstride, __m256i nib,
           __m256i ones, __m256i *i)
{
    for (int t = 0; t < mx; t++) {
        const uint8_t *xt = x + (size_t)t * xstride;
        __m256i s = _mm256_setzero_si256();
        for (int c = 0; c < XA_Q4_CHUNKS; c++) {
            const __m256i v = _mm256_loadu_si256((const __m256i *)(q + c * XA_CHUNK));
            const __m256i lo = _mm256_and_si256(v, nib);
            const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), nib);
            s = _mm256_add_epi16(s, _mm256_maddubs_epi16(lo, xa_bcast(xt + 4 * c)));
            s = _mm256_add_epi16(s, _mm256_maddubs_epi16(hi, xa_bcast(xt + XA_Q4_HI + 4 * c)));
        }
        int32_t bias;
        memcpy(&bias, xt + ORK_X16_XB, 4);
        i[t] = _mm256_add_epi32(_mm256_madd_epi16(s, ones),
                                _mm256_set1_epi32(bias >> XA_BIAS_SHIFT));
    }
}

TGT_X16A static inline __attribute__((always_inline)) void
xa_q8_half(int mx, const uint8_t *q, const uint8_t *x, size_t xstride, __m256i flip,
           __m256i ones, __m256i *i)
{
    for (int t = 0; t < mx; t++)
        i[t] = _mm256_setzero_si256();
    for (int c = 0; c < XA_Q8_CHUNKS; c++) {
        const __m256i w = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(q + c * XA_CHUNK)),
                                           flip);
        const __m256i aw = _mm256_abs_epi8(w);
        for (int t = 0; t < mx; t++) {
            const __m256i xb = xa_bcast(x + (size_t)t * xstride + 4 * c);
            const __m256i p = _mm256_maddubs_epi16(aw, _mm256_sign_epi8(xb, w));
            i[t] = _mm256_add_epi32(i[t], _mm256_madd_epi16(p, ones));
            /* one chain: GCC 12 otherwise adds the 8 chunks as a tree, more values live at
             * once (docs/kernels.md "Measurements behind the code: AVX2 interleaved tiles") */
            __asm__("" : "+x"(i[t]));
        }
    }
}

/* ng groups (g[s] at block 0) x mx X rows (xs, xstride apart): blocks 0 .. nb-1 into
 * acc[(s * mx + t) * 2 + h] (lane i: row 8h + i of group s against X row t), each
 * accumulator's blocks in order. Inlined with constant q8, ng and mx. */
TGT_X16A static inline __attribute__((always_inline)) void
xa_core(bool q8, int ng, int mx, const uint8_t *const *g, const uint8_t *xs, size_t xstride,
        int64_t nb, __m256 *acc)
{
    const size_t gb = ORK_X16_ROWS * (q8 ? Q8_0_BYTES : Q4_0_BYTES);
    const __m256i nib = _mm256_set1_epi8(ORK_NIB_LO), flip = _mm256_set1_epi8((char)XA_FLIP);
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *xb = xs + (size_t)b * ORK_X16_XBLOCK;
        for (int s = 0; s < ng; s++) {
            const uint8_t *wb = g[s] + (size_t)b * gb;
            for (int h = 0; h < ORK_X16_HALVES; h++) {
                const __m256 dw = _mm256_cvtph_ps(
                    _mm_loadu_si128((const __m128i *)(wb + h * (XA_D_BYTES / 2))));
                const uint8_t *q = wb + XA_D_BYTES + h * XA_HALF;
                __m256i i[ORK_X16_MX];
                if (q8)
                    xa_q8_half(mx, q, xb, xstride, flip, ones, i);
                else
                    xa_q4_half(mx, q, xb, xstride, nib, ones, i);
                for (int t = 0; t < mx; t++) {
                    float dx;
                    memcpy(&dx, xb + (size_t)t * xstride + ORK_X16_XD, 4);
                    __m256 *a = &acc[(s * mx + t) * ORK_X16_HALVES + h];
                    *a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i[t]),
                                         _mm256_mul_ps(dw, _mm256_set1_ps(dx)), *a);
                }
            }
        }
    }
}

/* One specialization per (type, ng, mx): the core with constant counts, 16 lanes stored per
 * output row (out[s] + t * ldo). */
#define XA_KERNEL(NAME, Q8, NG, MX)                                                              \
    _Static_assert((MX) <= ORK_X16_MX, "xa_q8_half / xa_q4_half hold ORK_X16_MX dots");         \
    ORK_X16_KERNEL256(NAME, TGT_X16A, xa_core(Q8, NG, MX, g, xs, xstride, nb, acc), NG, MX)

XA_KERNEL(xa_q8_g1m1, true, 1, 1)
XA_KERNEL(xa_q8_g2m1, true, 2, 1)
XA_KERNEL(xa_q8_g3m1, true, 3, 1)
XA_KERNEL(xa_q8_g4m1, true, 4, 1)
XA_KERNEL(xa_q8_g5m1, true, 5, 1)
XA_KERNEL(xa_q8_g1m2, true, 1, 2)
XA_KERNEL(xa_q8_g1m3, true, 1, 3)
XA_KERNEL(xa_q8_g1m4, true, 1, 4)
XA_KERNEL(xa_q4_g1m1, false, 1, 1)
XA_KERNEL(xa_q4_g2m1, false, 2, 1)
XA_KERNEL(xa_q4_g3m1, false, 3, 1)
XA_KERNEL(xa_q4_g4m1, false, 4, 1)
XA_KERNEL(xa_q4_g5m1, false, 5, 1)
XA_KERNEL(xa_q4_g1m2, false, 1, 2)
XA_KERNEL(xa_q4_g1m3, false, 1, 3)
XA_KERNEL(xa_q4_g1m4, false, 1, 4)

/* [q8][ng - 1] with mx = 1, and [q8][mx - 1] with ng = 1 */
static const ork__x16_fn xa_streams_fn[2][ORK_X16_STREAMS_MAX] = {
    { xa_q4_g1m1, xa_q4_g2m1, xa_q4_g3m1, xa_q4_g4m1, xa_q4_g5m1 },
    { xa_q8_g1m1, xa_q8_g2m1, xa_q8_g3m1, xa_q8_g4m1, xa_q8_g5m1 },
};
static const ork__x16_fn xa_tile_fn[2][ORK_X16_MX] = {
    { xa_q4_g1m1, xa_q4_g1m2, xa_q4_g1m3, xa_q4_g1m4 },
    { xa_q8_g1m1, xa_q8_g1m2, xa_q8_g1m3, xa_q8_g1m4 },
};

static ork__x16_fn fn_q8(bool tile, int n)
{
    return tile ? xa_tile_fn[1][n - 1] : xa_streams_fn[1][n - 1];
}

static ork__x16_fn fn_q4(bool tile, int n)
{
    return tile ? xa_tile_fn[0][n - 1] : xa_streams_fn[0][n - 1];
}

void ork__fill_rows16_q8_0_q4_0_avx2(struct ork__kern *t)
{
    t->t[ORK__KT_Q8_0].x16_fn = fn_q8;
    t->t[ORK__KT_Q4_0].x16_fn = fn_q4;
    t->t[ORK__KT_Q8_0].x16_streams = ORK_X16_STREAMS;
    t->t[ORK__KT_Q4_0].x16_streams = ORK_X16_STREAMS;
}
#endif
