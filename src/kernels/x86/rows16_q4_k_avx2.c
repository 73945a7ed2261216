/* x86/rows16_q4_k_avx2.c -- the AVX2 kernels of interleaved Q4_K matrices (ORK_LAYOUT_X16;
 * the layout, X form and drivers are rows16.c's): decode streams and the M > 1 tiles for the
 * `avx2` and `avxvnni` paths.
 *
 * As in rows16_q8_0_q4_0_avx2.c a 256-bit register holds half of a group's 64-byte chunk (bytes 4i..4i+3: row
 * 8h + i of half h) and the byte dot is vpmaddubsw (u8 x s8 into saturating int16 pairs):
 *   quants: the nibbles (0..15) by the Q8_K quants (within +-127; -128 only from a NaN input,
 *           still in range): a pair is at most 2 * 15 * 128 = 3840, so a sub-block's 8 chunks
 *           add up in int16 (30720 < 32767). The sub-block's 6-bit scale (0..63) is then the
 *           other operand of vpmaddwd, copied into both int16 halves of each row's lane by a
 *           byte shuffle: the int32 lane is sc_j * (the sub-block's dot), exact.
 *   mins:   the 6-bit mins by the X form's a_j (|a| <= 32) and b_j (-64..63): pairs of at most
 *           2 * 63 * 64 = 8064, two vectors added in int16, then vpmaddwd by ones; M = 128 *
 *           sum mn a + sum mn b.
 * The integers S and M per row and block are exactly those of the row-layout kernels, and the
 * f32 steps (dd * S - dm * M added to the sum) are theirs in the same order: every output has
 * the bits of ork__q8k_blocks (tests/unit/test_kernels_x16.c compares them bit for bit). */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "x86_priv.h"

#ifdef ORK_KERN_X86

#define TGT_X16KA __attribute__((target("avx2,fma,f16c")))

#define Q4_K_BYTES 144
#define XKA_GROUP_BYTES (ORK_X16_ROWS * Q4_K_BYTES)
#define XKA_CHUNK 64            /* one chunk: 4 bytes of each of 16 rows */
#define XKA_HALF 32             /* ... of which 8 rows fill one ymm */
#define XKA_PAIRS 4             /* sub-block pairs per block: 64 elements, 8 quant chunks */
#define XKA_PAIR_CHUNKS 8
#define XKA_PAIR_X 64           /* X quants per pair: the low nibbles' 32, then the high's */
#define XKA_HI_X 32
/* the 6-bit scale and min fields of the scale words (qdot.c's Q4_K unpacking) */
#define XKA_LOW6 0x3f
#define XKA_TOP2 0x30
#define XKA_LOW4 0x0f

/* Per 128-bit lane, byte j of each 32-bit lane copied into both int16 halves of that lane
 * (the high bytes zero): the sub-block scale as vpmaddwd's multiplier. */
TGT_X16KA static inline __m256i xka_bytes_to_words(__m256i v, int j)
{
    const __m256i sel = _mm256_setr_epi8(
        (char)j, -1, (char)j, -1, (char)(4 + j), -1, (char)(4 + j), -1, (char)(8 + j), -1,
        (char)(8 + j), -1, (char)(12 + j), -1, (char)(12 + j), -1, (char)j, -1, (char)j, -1,
        (char)(4 + j), -1, (char)(4 + j), -1, (char)(8 + j), -1, (char)(8 + j), -1,
        (char)(12 + j), -1, (char)(12 + j), -1);
    return _mm256_shuffle_epi8(v, sel);
}

TGT_X16KA static inline __m256i xka_bcast(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

/* The 6-bit scales of sub-blocks 4k .. 4k + 3 (k = 0, 1) of half h's 8 rows, byte j of each
 * row's lane for sub-block 4k + j (qdot.c's Q4_K unpacking in the word form of x16k.c). */
TGT_X16KA static inline __attribute__((always_inline)) __m256i
xka_scales(const uint8_t *wb, int h, int k, __m256i low4, __m256i low6, __m256i top2)
{
    const uint8_t *sc = wb + ORK_X16K_SC + h * XKA_HALF;
    const __m256i u0 = _mm256_loadu_si256((const __m256i *)sc);
    if (k == 0)
        return _mm256_and_si256(u0, low6);
    const __m256i u2 = _mm256_loadu_si256((const __m256i *)(sc + 2 * XKA_CHUNK));
    return _mm256_or_si256(_mm256_and_si256(u2, low4),
                           _mm256_and_si256(_mm256_srli_epi32(u0, 2), top2));
}

/* One group block (at wb) against one X block (x): the f32 terms dd * S - dm * M of its 16
 * rows, half h in t[h]. The two halves share each X broadcast. */
TGT_X16KA static inline __attribute__((always_inline)) void
xka_block(const uint8_t *wb, const uint8_t *x, __m256 *t)
{
    const __m256i nib = _mm256_set1_epi8(XKA_LOW4), ones = _mm256_set1_epi16(1);
    const __m256i low6 = _mm256_set1_epi8(XKA_LOW6), top2 = _mm256_set1_epi8(XKA_TOP2);
    __m256i si[ORK_X16_HALVES] = { _mm256_setzero_si256(), _mm256_setzero_si256() };
#pragma GCC unroll 4
    for (int p = 0; p < XKA_PAIRS; p++) {
        __m256i ilo[ORK_X16_HALVES], ihi[ORK_X16_HALVES];
        for (int h = 0; h < ORK_X16_HALVES; h++)
            ilo[h] = ihi[h] = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int c = 0; c < XKA_PAIR_CHUNKS; c++) {
            const uint8_t *xp = x + XKA_PAIR_X * p + 4 * c;
            const __m256i xl = xka_bcast(xp), xh = xka_bcast(xp + XKA_HI_X);
            const uint8_t *q = wb + ORK_X16K_QS + (XKA_PAIR_CHUNKS * p + c) * XKA_CHUNK;
#pragma GCC unroll 2
            for (int h = 0; h < ORK_X16_HALVES; h++) {
                const __m256i v = _mm256_loadu_si256((const __m256i *)(q + h * XKA_HALF));
                const __m256i lo = _mm256_and_si256(v, nib);
                const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), nib);
                ilo[h] = _mm256_add_epi16(ilo[h], _mm256_maddubs_epi16(lo, xl));
                ihi[h] = _mm256_add_epi16(ihi[h], _mm256_maddubs_epi16(hi, xh));
                /* kept as chains: GCC 12 otherwise reassociates the 8 adds into trees whose
                 * partial sums spill (~140 stack stores and loads per block) */
                __asm__("" : "+x"(ilo[h]), "+x"(ihi[h]));
            }
        }
#pragma GCC unroll 2
        for (int h = 0; h < ORK_X16_HALVES; h++) {
            /* sub-blocks 2p and 2p + 1: bytes 2(p % 2) and 2(p % 2) + 1 of the scale vector
             * of sub-blocks 4(p / 2) .. (below) */
            const __m256i v = xka_scales(wb, h, p >> 1, nib, low6, top2);
            si[h] = _mm256_add_epi32(
                si[h], _mm256_madd_epi16(ilo[h], xka_bytes_to_words(v, 2 * (p & 1))));
            si[h] = _mm256_add_epi32(
                si[h], _mm256_madd_epi16(ihi[h], xka_bytes_to_words(v, 2 * (p & 1) + 1)));
        }
    }
    float dxf;
    memcpy(&dxf, x + ORK_X16K_XD, 4);
    const __m256 dx = _mm256_set1_ps(dxf);
#pragma GCC unroll 2
    for (int h = 0; h < ORK_X16_HALVES; h++) {
        const uint8_t *sc = wb + ORK_X16K_SC + h * XKA_HALF;
        const __m256i u1 = _mm256_loadu_si256((const __m256i *)(sc + XKA_CHUNK));
        const __m256i u2 = _mm256_loadu_si256((const __m256i *)(sc + 2 * XKA_CHUNK));
        const __m256i mn0 = _mm256_and_si256(u1, low6);
        const __m256i mn1 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(u2, 4), nib),
                                            _mm256_and_si256(_mm256_srli_epi32(u1, 2), top2));
        const __m256i ma = _mm256_madd_epi16(
            _mm256_add_epi16(_mm256_maddubs_epi16(mn0, xka_bcast(x + ORK_X16K_XA)),
                             _mm256_maddubs_epi16(mn1, xka_bcast(x + ORK_X16K_XA + 4))),
            ones);
        const __m256i mb = _mm256_madd_epi16(
            _mm256_add_epi16(_mm256_maddubs_epi16(mn0, xka_bcast(x + ORK_X16K_XB)),
                             _mm256_maddubs_epi16(mn1, xka_bcast(x + ORK_X16K_XB + 4))),
            ones);
        const __m256i mi = _mm256_add_epi32(_mm256_slli_epi32(ma, ORK_X16K_SPLIT_SHIFT), mb);
        const __m256 dw = _mm256_cvtph_ps(
            _mm_loadu_si128((const __m128i *)(wb + ORK_X16K_D + h * (XKA_HALF / 2))));
        const __m256 dmw = _mm256_cvtph_ps(
            _mm_loadu_si128((const __m128i *)(wb + ORK_X16K_DMIN + h * (XKA_HALF / 2))));
        /* q4k_block_sum: dd = dx * d, dm = dx * dmin, then dd * S - dm * M */
        const __m256 ts = _mm256_mul_ps(_mm256_mul_ps(dx, dw), _mm256_cvtepi32_ps(si[h]));
        const __m256 tm = _mm256_mul_ps(_mm256_mul_ps(dx, dmw), _mm256_cvtepi32_ps(mi));
        t[h] = _mm256_sub_ps(ts, tm);
    }
}

/* ng groups (g[s] at block 0) x mx X rows (xs, xstride apart): blocks 0 .. nb-1 into
 * acc[(s * mx + t) * 2 + h], each accumulator's blocks in order. Inlined with constant ng, mx.
 * No software prefetch (as the AVX-512 Q4_K kernels): it streamed a smaller share of the read
 * kernel's bandwidth than none (docs/kernels.md "Measurements behind the code: Q4_K interleaved
 * prefetch"). */
TGT_X16KA static inline __attribute__((always_inline)) void
xka_core(int ng, int mx, const uint8_t *const *g, const uint8_t *xs, size_t xstride, int64_t nb,
         __m256 *acc)
{
    for (int64_t b = 0; b < nb; b++) {
        for (int s = 0; s < ng; s++) {
            const uint8_t *wb = g[s] + (size_t)b * XKA_GROUP_BYTES;
            for (int t = 0; t < mx; t++) {
                const uint8_t *x = xs + (size_t)t * xstride + (size_t)b * ORK_X16K_XBLOCK;
                __m256 term[ORK_X16_HALVES];
                xka_block(wb, x, term);
                for (int h = 0; h < ORK_X16_HALVES; h++) {
                    __m256 *a = &acc[(s * mx + t) * ORK_X16_HALVES + h];
                    *a = _mm256_add_ps(*a, term[h]);
                }
            }
        }
    }
}

#define XKA_KERNEL(NAME, NG, MX)                                                                 \
    ORK_X16_KERNEL256(NAME, TGT_X16KA, xka_core(NG, MX, g, xs, xstride, nb, acc), NG, MX)

XKA_KERNEL(xka_g1m1, 1, 1)
XKA_KERNEL(xka_g2m1, 2, 1)
XKA_KERNEL(xka_g3m1, 3, 1)
XKA_KERNEL(xka_g4m1, 4, 1)
XKA_KERNEL(xka_g1m2, 1, 2)
XKA_KERNEL(xka_g1m3, 1, 3)
XKA_KERNEL(xka_g1m4, 1, 4)

static const ork__x16_fn xka_streams_fn[ORK_X16K_STREAMS] = { xka_g1m1, xka_g2m1, xka_g3m1,
                                                               xka_g4m1 };
static const ork__x16_fn xka_tile_fn[ORK_X16_MX] = { xka_g1m1, xka_g1m2, xka_g1m3, xka_g1m4 };

static ork__x16_fn fn_q4k(bool tile, int n)
{
    return tile ? xka_tile_fn[n - 1] : xka_streams_fn[n - 1];
}

void ork__fill_rows16_q4_k_avx2(struct ork__kern *t)
{
    t->t[ORK__KT_Q4_K].x16_fn = fn_q4k;
    t->t[ORK__KT_Q4_K].x16_streams = ORK_X16K_STREAMS;
}
#endif
