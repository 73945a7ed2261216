/* x86/rows16_q8_0_q4_0_avx512.c -- the AVX-512 VNNI kernels of Q8_0 / Q4_0 matrices with
 * their rows interleaved by 16 (ORK_LAYOUT_X16; the layout, the X form and the drivers are
 * rows16.c's): decode streams of up to five groups side by side, and the M > 1 tiles of one
 * group against up to four X rows.
 *
 * Arithmetic: per row, block by block in order, acc = fmaf((float)isum_b, d_w * d_x, acc) with
 * isum_b the exact integer dot of the block (|isum| <= 32 * 128 * 127 < 2^24, exact in f32).
 * That is a plain loop over the blocks, not the 16-lane order of the row-layout kernels
 * (kern_priv.h struct q8_acc): results differ from theirs by the f32 rounding of the sum
 * (tests/unit/test_kernels_x16.c bounds it). */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "x86_priv.h"
#include "qk_block.h"

#ifdef ORK_KERN_X86

#define X16_D_BYTES 32          /* a block's 16 f16 scales */
#define X16_CHUNK 64            /* one vector of quants: 4 bytes of each of 16 rows */

static inline int32_t ld32(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* How far ahead of each group's block decode (mx = 1) prefetches into L1: 1 KiB measured best
 * among 256 bytes .. 16 KiB (further ahead the four streams' lines crowd L1), into L1 better
 * than into L2 (docs/kernels.md "Interleaved weights: prefetch distance"). */
#define X16_PF_BYTES 1024
#define X16_LINE 64

/* Accumulators of one kernel call: ng x mx <= 5 for every kernel below (up to five groups
 * against one X row, or one group against up to four). */
#define X16_ACC_MAX 5
_Static_assert(ORK_X16_STREAMS_MAX <= X16_ACC_MAX && ORK_X16_MX <= X16_ACC_MAX,
               "x16_core keeps ng x mx accumulators in X16_ACC_MAX variables");

/* *a[u] += f * sc, with u constant once inlined: a[] points at x16_core's accumulators, which
 * stay separate variables rather than an array (GCC 12 stored each array element once per
 * block; as variables the decode loop has no stores: docs/kernels.md "Interleaved weights:
 * folded operands"). */
ORK_TGT_X16 static inline __attribute__((always_inline)) void
acc_fma(int u, __m512 f, __m512 sc, __m512 *const *a)
{
    *a[u] = _mm512_fmadd_ps(f, sc, *a[u]);
}

/* Block b of one group (its bytes at wb) against mx X rows (the block's X at xb, xstride
 * apart): into accumulators s * mx + t. Decode (mx = 1) first prefetches the group's stream
 * X16_PF_BYTES ahead. */
ORK_TGT_X16 static inline __attribute__((always_inline)) void
x16_block(bool q8, int s, int mx, const uint8_t *wb, const uint8_t *xb, size_t xstride,
          __m512i lo, __m512i hi, __m512 *const *a)
{
    const size_t gb = ORK_X16_ROWS * (q8 ? Q8_0_BYTES : Q4_0_BYTES);
    if (mx == 1)
        for (size_t o = 0; o < gb; o += X16_LINE)
            _mm_prefetch((const char *)wb + X16_PF_BYTES + o, _MM_HINT_T0);
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)wb));
    __m512i wv[8];
    if (q8) {
        for (int c = 0; c < 8; c++)
            wv[c] = _mm512_loadu_si512(wb + X16_D_BYTES + c * X16_CHUNK);
    } else {
        for (int c = 0; c < 4; c++) {
            const uint8_t *q = wb + X16_D_BYTES + c * X16_CHUNK;
            wv[c] = ork__and_mem(q, lo);         /* elements 4c .. */
            wv[c + 4] = ork__and_mem(q, hi);     /* 16 x elements 16 + 4c .. */
        }
    }
    for (int t = 0; t < mx; t++) {
        const uint8_t *x = xb + (size_t)t * xstride;
        __m512i i0 = _mm512_set1_epi32(ld32(x + ORK_X16_XB));
        if (q8) {           /* one chain from the bias */
            for (int c = 0; c < 8; c++)
                i0 = ork__dpbusd_bcast(i0, wv[c], x + 4 * c);
        } else {            /* the high nibbles from the bias, shifted, the low */
            for (int c = 4; c < 8; c++)
                i0 = ork__dpbusd_bcast(i0, wv[c], x + 4 * c);
            i0 = _mm512_srai_epi32(i0, ORK_NIB_HI_SHIFT);
            for (int c = 0; c < 4; c++)
                i0 = ork__dpbusd_bcast(i0, wv[c], x + 4 * c);
        }
        float dx;
        memcpy(&dx, x + ORK_X16_XD, 4);
        acc_fma(s * mx + t, _mm512_cvtepi32_ps(i0), _mm512_mul_ps(dw, _mm512_set1_ps(dx)), a);
    }
}

/* Blocks per group the loop takes before moving to the next group: two, so the loop's address
 * and counter arithmetic is paid once per two blocks (227 instead of 2 x 118 instructions per
 * step of the four-group Q4_0 decode kernel; docs/kernels.md "Interleaved weights: unrolling"
 * has the measurements, and why not both groups' first blocks and then their second ones). */
#define X16_UNROLL 2

/* ng groups (g[s] at block 0) x mx X rows (xs, xstride apart): blocks 0 .. nb-1 into acc[s * mx
 * + t] (lane i: row i of group s against X row t), each accumulator's blocks in order. Inlined
 * with constant ng and mx. */
ORK_TGT_X16 static inline __attribute__((always_inline)) void
x16_core(bool q8, int ng, int mx, const uint8_t *const *g, const uint8_t *xs, size_t xstride,
         int64_t nb, __m512 *acc)
{
    const size_t gb = ORK_X16_ROWS * (q8 ? Q8_0_BYTES : Q4_0_BYTES);
    const __m512i lo = _mm512_set1_epi8(ORK_NIB_LO), hi = _mm512_set1_epi8((char)ORK_NIB_HI);
    const int na = ng * mx;
    __m512 a0 = acc[0], a1 = _mm512_setzero_ps(), a2 = a1, a3 = a1, a4 = a1;
    __m512 *const a[X16_ACC_MAX] = { &a0, &a1, &a2, &a3, &a4 };
#pragma GCC unroll 4
    for (int i = 1; i < na; i++)
        *a[i] = acc[i];
    /* the groups' and X's pointers stepped once per X16_UNROLL blocks (fewer instructions than
     * indexing them by b); the loops unrolled whole (GCC 12 otherwise kept a loop over s and
     * picked the accumulator by branches) */
    const uint8_t *p[ORK_X16_STREAMS_MAX] = { g[0] };
#pragma GCC unroll 5
    for (int s = 1; s < ng; s++)
        p[s] = g[s];
    const uint8_t *x = xs;
    int64_t b = 0;
    for (; b + X16_UNROLL <= nb; b += X16_UNROLL, x += X16_UNROLL * ORK_X16_XBLOCK) {
#pragma GCC unroll 5
        for (int s = 0; s < ng; s++) {
#pragma GCC unroll 2
            for (int u = 0; u < X16_UNROLL; u++)
                x16_block(q8, s, mx, p[s] + (size_t)u * gb, x + (size_t)u * ORK_X16_XBLOCK,
                          xstride, lo, hi, a);
            p[s] += X16_UNROLL * gb;
        }
    }
    for (; b < nb; b++, x += ORK_X16_XBLOCK)
#pragma GCC unroll 5
        for (int s = 0; s < ng; s++) {
            x16_block(q8, s, mx, p[s], x, xstride, lo, hi, a);
            p[s] += gb;
        }
#pragma GCC unroll 5
    for (int i = 0; i < na; i++)
        acc[i] = *a[i];
}

/* One specialization per (type, ng, mx): the core with constant counts, stores 16 lanes per
 * output row (out[s] + t * ldo). */
#define X16_KERNEL(NAME, Q8, NG, MX)                                                            \
    _Static_assert((NG) * (MX) <= X16_ACC_MAX, "too many accumulators for x16_core");         \
    ORK_X16_KERNEL(NAME, ORK_TGT_X16, x16_core(Q8, NG, MX, g, xs, xstride, nb, acc), NG, MX)

X16_KERNEL(x16_q8_g1m1, true, 1, 1)
X16_KERNEL(x16_q8_g2m1, true, 2, 1)
X16_KERNEL(x16_q8_g3m1, true, 3, 1)
X16_KERNEL(x16_q8_g4m1, true, 4, 1)
X16_KERNEL(x16_q8_g5m1, true, 5, 1)
X16_KERNEL(x16_q8_g1m2, true, 1, 2)
X16_KERNEL(x16_q8_g1m3, true, 1, 3)
X16_KERNEL(x16_q8_g1m4, true, 1, 4)
X16_KERNEL(x16_q4_g1m1, false, 1, 1)
X16_KERNEL(x16_q4_g2m1, false, 2, 1)
X16_KERNEL(x16_q4_g3m1, false, 3, 1)
X16_KERNEL(x16_q4_g4m1, false, 4, 1)
X16_KERNEL(x16_q4_g5m1, false, 5, 1)
X16_KERNEL(x16_q4_g1m2, false, 1, 2)
X16_KERNEL(x16_q4_g1m3, false, 1, 3)
X16_KERNEL(x16_q4_g1m4, false, 1, 4)

/* [q8][ng - 1] with mx = 1, and [q8][mx - 1] with ng = 1 */
static const ork__x16_fn x16_streams_fn[2][ORK_X16_STREAMS_MAX] = {
    { x16_q4_g1m1, x16_q4_g2m1, x16_q4_g3m1, x16_q4_g4m1, x16_q4_g5m1 },
    { x16_q8_g1m1, x16_q8_g2m1, x16_q8_g3m1, x16_q8_g4m1, x16_q8_g5m1 },
};
static const ork__x16_fn x16_tile_fn[2][ORK_X16_MX] = {
    { x16_q4_g1m1, x16_q4_g1m2, x16_q4_g1m3, x16_q4_g1m4 },
    { x16_q8_g1m1, x16_q8_g1m2, x16_q8_g1m3, x16_q8_g1m4 },
};

static ork__x16_fn fn_q8(bool tile, int n)
{
    return tile ? x16_tile_fn[1][n - 1] : x16_streams_fn[1][n - 1];
}

static ork__x16_fn fn_q4(bool tile, int n)
{
    return tile ? x16_tile_fn[0][n - 1] : x16_streams_fn[0][n - 1];
}

void ork__fill_rows16_q8_0_q4_0_avx512(struct ork__kern *t)
{
    t->t[ORK__KT_Q8_0].x16_fn = fn_q8;
    t->t[ORK__KT_Q4_0].x16_fn = fn_q4;
    for (int k = ORK__KT_Q8_0; k <= ORK__KT_Q4_0; k++) {
        t->t[k].x16_streams = ORK_X16_STREAMS;
        t->t[k].x16_prefetch = X16_PF_BYTES;
    }
}
#endif
