/* x86/rows16_q4_k_avx512.c -- the AVX-512 VNNI kernels of Q4_K matrices with their rows
 * interleaved by 16 (ORK_LAYOUT_X16; the layout, the X form (rows16.c documents it) and the
 * drivers are rows16.c's, the thread split matmul.c's): decode streams and M > 1 tiles.
 *
 * Why: the row-layout Q4_K kernels (qdot.c) unpack one row's 6-bit scales and mins per block and
 * reduce 16 lanes to one sum per row; at two threads decode streamed a Q4_K model at ~60 % of
 * the speed of the same-sized Q4_0 one (docs/benchmarks.md). Interleaved, lane i of every
 * vector is row i: 16 rows' scales unpack in a few vector operations per block and nothing is
 * reduced across lanes.
 *
 * Layout of a group's block b (rows16.c x16_types, 16 * 144 bytes): the 16 rows' f16 d (32 bytes),
 * their f16 dmin (32 bytes), 3 chunks of 64 bytes with each row's scale bytes 4c..4c+3 in lane
 * i, then 32 chunks with each row's qs bytes 4c..4c+3 in lane i. qs byte 32p + l holds element
 * 64p + l (low nibble) and 64p + 32 + l (high nibble): chunk 8p + c feeds sub-block 2p (its low
 * nibbles) and 2p + 1 (high) with 4 elements each.
 *
 * Arithmetic: per row and block the integers S = sum_j sc_j * (sum over sub-block j of q * x)
 * and M = sum_j mn_j * s_j, exactly those of the row-layout kernels, then the same f32 steps in
 * the same order as their q4k_block_sum: so every output has the bits of ork__q8k_blocks
 * (tests/unit/test_kernels_x16.c compares them bit for bit). */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <ork-kernels/kernels.h>

#include "x86_priv.h"
#include "qk_block.h"

#ifdef ORK_KERN_X86

#include "rows16_q4_k.h"

ORK_TGT_X16 static inline __m512i bcast32(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

/* ng groups x mx X rows, blocks 0 .. nb-1 into acc[s * mx + t]. Inlined with constant ng, mx.
 * Per block, every group's scales first, then the quants 512 bytes (one sub-block pair) of each
 * group in turn, which decoded faster than each group's whole block in turn (docs/kernels.md
 * "Measurements behind the code: Q4_K interleaved block order"). */
ORK_TGT_X16 static inline __attribute__((always_inline)) void
x16k_core(int ng, int mx, const uint8_t *const *g, const uint8_t *xs, size_t xstride, int64_t nb,
          __m512 *acc)
{
    const __m512i m4 = _mm512_set1_epi8(ORK_NIB_LO), byte = _mm512_set1_epi32(0xff);
    const __m512i low6 = _mm512_set1_epi8(0x3f), low4 = m4, top2 = _mm512_set1_epi8(0x30);
    const __m512i hi4 = _mm512_set1_epi8((char)ORK_NIB_HI);
    for (int64_t b = 0; b < nb; b++) {
        __m512 dw[ORK_X16K_STREAMS], dmw[ORK_X16K_STREAMS];
        __m512i sc[ORK_X16K_STREAMS][2], mn[ORK_X16K_STREAMS][2];
        __m512i si[ORK_X16K_STREAMS * ORK_X16_MX];
        for (int s = 0; s < ng; s++) {
            const uint8_t *wb = g[s] + (size_t)b * XK_GROUP_BYTES;
            dw[s] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(wb + XK_D)));
            dmw[s] = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(wb + XK_DMIN)));
            /* the 6-bit scales and mins of 16 rows (qdot.c q4k_unpack512's word form): bytes
             * j of sc[0] / mn[0] are sub-blocks j < 4, of sc[1] / mn[1] sub-blocks 4 + j */
            const __m512i u0 = _mm512_loadu_si512(wb + XK_SC);
            const __m512i u1 = _mm512_loadu_si512(wb + XK_SC + XK_CHUNK);
            const __m512i u2 = _mm512_loadu_si512(wb + XK_SC + 2 * XK_CHUNK);
            sc[s][0] = _mm512_and_si512(u0, low6);
            sc[s][1] = _mm512_or_si512(_mm512_and_si512(u2, low4),
                                       _mm512_and_si512(_mm512_srli_epi32(u0, 2), top2));
            mn[s][0] = _mm512_and_si512(u1, low6);
            mn[s][1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(u2, 4), low4),
                                       _mm512_and_si512(_mm512_srli_epi32(u1, 2), top2));
            for (int t = 0; t < mx; t++)
                si[s * mx + t] = _mm512_setzero_si512();
        }
        for (int p = 0; p < 4; p++) {
            for (int s = 0; s < ng; s++) {
                const uint8_t *wb = g[s] + (size_t)b * XK_GROUP_BYTES;
                __m512i ilo[ORK_X16_MX], ihi[ORK_X16_MX];
                for (int t = 0; t < mx; t++)
                    ilo[t] = ihi[t] = _mm512_setzero_si512();
                /* the low nibbles, and the high ones in place (16 x), the loads inside the
                 * ands and the X broadcasts inside `vpdpbusd` (kern_priv.h); the high chain
                 * is then a multiple of 16, shifted back exactly */
                for (int c = 0; c < 8; c++) {
                    const uint8_t *q = wb + XK_QS + (8 * p + c) * XK_CHUNK;
                    const __m512i lo = ork__and_mem(q, m4), hi = ork__and_mem(q, hi4);
                    for (int t = 0; t < mx; t++) {
                        const uint8_t *x = xs + (size_t)t * xstride + (size_t)b * ORK_X16K_XBLOCK;
                        ilo[t] = ork__dpbusd_bcast(ilo[t], lo, x + 64 * p + 4 * c);
                        ihi[t] = ork__dpbusd_bcast(ihi[t], hi, x + 64 * p + 32 + 4 * c);
                    }
                }
                for (int t = 0; t < mx; t++)
                    ihi[t] = _mm512_srai_epi32(ihi[t], ORK_NIB_HI_SHIFT);
                /* sub-blocks 2p and 2p + 1: bytes 2(p % 2) and 2(p % 2) + 1 of sc[p / 2] */
                const __m512i v = sc[s][p >> 1];
                const __m512i s_lo = _mm512_and_si512(_mm512_srli_epi32(v, 16 * (p & 1)), byte);
                const __m512i s_hi =
                    _mm512_and_si512(_mm512_srli_epi32(v, 16 * (p & 1) + 8), byte);
                for (int t = 0; t < mx; t++)
                    si[s * mx + t] = _mm512_add_epi32(
                        si[s * mx + t], _mm512_add_epi32(_mm512_mullo_epi32(ilo[t], s_lo),
                                                         _mm512_mullo_epi32(ihi[t], s_hi)));
            }
        }
        for (int s = 0; s < ng; s++)
            for (int t = 0; t < mx; t++) {
                const uint8_t *x = xs + (size_t)t * xstride + (size_t)b * ORK_X16K_XBLOCK;
                __m512i ma = _mm512_dpbusd_epi32(_mm512_setzero_si512(), mn[s][0],
                                                 bcast32(x + XKX_A));
                ma = _mm512_dpbusd_epi32(ma, mn[s][1], bcast32(x + XKX_A + 4));
                __m512i mb = _mm512_dpbusd_epi32(_mm512_setzero_si512(), mn[s][0],
                                                 bcast32(x + XKX_B));
                mb = _mm512_dpbusd_epi32(mb, mn[s][1], bcast32(x + XKX_B + 4));
                const __m512i mi = _mm512_add_epi32(_mm512_slli_epi32(ma, XK_SPLIT_SHIFT), mb);
                float dxf;
                memcpy(&dxf, x + XKX_D, 4);
                const __m512 dx = _mm512_set1_ps(dxf);
                /* q4k_block_sum: dd = dx * d, dm = dx * dmin, sum + (dd * S - dm * M) */
                const __m512 ts = _mm512_mul_ps(_mm512_mul_ps(dx, dw[s]),
                                                _mm512_cvtepi32_ps(si[s * mx + t]));
                const __m512 tm = _mm512_mul_ps(_mm512_mul_ps(dx, dmw[s]),
                                                _mm512_cvtepi32_ps(mi));
                acc[s * mx + t] = _mm512_add_ps(acc[s * mx + t], _mm512_sub_ps(ts, tm));
            }
    }
}

#define X16K_KERNEL(NAME, NG, MX)                                                                \
    ORK_X16_KERNEL(NAME, ORK_TGT_X16, x16k_core(NG, MX, g, xs, xstride, nb, acc), NG, MX)

X16K_KERNEL(x16k_g1m1, 1, 1)
X16K_KERNEL(x16k_g2m1, 2, 1)
X16K_KERNEL(x16k_g3m1, 3, 1)
X16K_KERNEL(x16k_g4m1, 4, 1)
X16K_KERNEL(x16k_g1m2, 1, 2)
X16K_KERNEL(x16k_g1m3, 1, 3)
X16K_KERNEL(x16k_g1m4, 1, 4)

static const ork__x16_fn x16k_streams_fn[ORK_X16K_STREAMS] = { x16k_g1m1, x16k_g2m1,
                                                                x16k_g3m1, x16k_g4m1 };
static const ork__x16_fn x16k_tile_fn[ORK_X16_MX] = { x16k_g1m1, x16k_g1m2, x16k_g1m3,
                                                       x16k_g1m4 };

static ork__x16_fn fn_q4k(bool tile, int n)
{
    if (n < 1 || n > (tile ? ORK_X16_MX : ORK_X16K_STREAMS))
        return NULL;
    return tile ? x16k_tile_fn[n - 1] : x16k_streams_fn[n - 1];
}

void ork__fill_rows16_q4_k_avx512(struct ork__kern *t)
{
    t->t[ORK__KT_Q4_K].x16_fn = fn_q4k;
    t->t[ORK__KT_Q4_K].x16_streams = ORK_X16K_STREAMS;
}
#endif
