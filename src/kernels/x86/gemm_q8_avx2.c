/* x86/gemm_q8_avx2.c -- the register-tiled Q8_0 / Q4_0 weights x Q8_0 activations of
 * ORK_ACT_QUANT matmuls on the avx2 and avxvnni paths, the GEMM driver every x86 path's tiles
 * plug into (panel packing, L2 blocking, prefetch), and the 256-bit decode kernels (weight rows
 * straight from the matrix against one X row).
 *
 * Arithmetic: every output is exactly what ork__q8_blocks + ork__q8_end give (kern_priv.h,
 * struct q8_acc): the same int32 partial p_j per group of four products, the same f32 scale
 * d = d_w * d_x, the same fmaf into the same lane, the same reduction tree. Only where the
 * lanes live in the registers changes.
 *
 * Layouts. A block pair (blocks 2q and 2q + 1 of a row) is 64 int8 values interleaved by
 * groups of four: bytes 8j..8j+3 are elements 4j..4j+3 of the even block, bytes 8j+4..8j+7
 * the same elements of the odd block (j = 0..7). A dot-product instruction then leaves the
 * partial of group j of the even block in int32 lane 2j and of the odd block in lane 2j+1,
 * so lane 2j is accumulator lane j and lane 2j+1 is lane j + 8, and the pair's two scales
 * form the 64-bit pattern (d_even, d_odd) broadcast over the register. A missing odd block
 * (odd block count) is all zeros with scale 0: fmaf(0, 0, lane) = lane (lanes are never -0).
 *
 *   packed X row (xpack_*): q[np][64] int8, bias[np][16] int32 = -128 * (sum of the group's
 *     four x), d[np][2] f32 (the f16 scales widened), rows GEMM_XROW_ALIGN aligned.
 *   weight panel (panel_pack): GEMM_NW rows; per row q[np][64] and d[np][2]. With the VNNI
 *     paths the weights are stored as w + 128 (unsigned; vpdpbusd multiplies u8 by s8) and
 *     the X bias removes the 128 * sum(x) again, exactly: sum (w + 128) x - 128 sum x.
 *     AVX2 has no u8 x s8 dot without int16 saturation on such values, so there the panel keeps
 *     signed w and the kernel multiplies |w| by sign(w) * x (vpmaddubsw cannot saturate:
 *     |w| <= 128, |x| <= 127, a pair <= 32512).
 *
 * Blocking: a panel of GEMM_NW weight rows (a few KiB, stays in L1) meets every X row of a
 * chunk that fits in L2 (GEMM_L2_X_BYTES), in tiles of up to GEMM_NW x GEMM_MX outputs with
 * independent accumulators. Ragged M uses the same kernel with fewer X rows (compile-time
 * counts 1..GEMM_MX); ragged N repeats the panel's last row and drops its outputs. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <ork-kernels/kernels.h>

#include "x86_priv.h"
#include "qk_block.h"

#ifdef ORK_KERN_X86

#define TGT_AVX2 ORK_TGT_AVX2
#define TGT_AVXVNNI ORK_TGT_AVXVNNI
#define PAIR_Q 64               /* int8 values of a block pair */
#define PAIR_BIAS 64            /* bytes of a pair's 16 int32 biases */
#define PAIR_D 8                /* bytes of a pair's two f32 scales */
#define U8_OFFSET 128           /* w + 128: signed int8 weight as the u8 operand of vpdpbusd */
#define NW ORK_GEMM_NW

/* Block pairs of a row of k elements (the last one may lack its odd block). */
static inline int64_t n_pairs(int64_t k)
{
    return (k / Q8_0_BLOCK + 1) / 2;
}

/* Interleave blocks a and b (32 int8 each; b may be NULL: zeros) into a pair. */
static inline void interleave_pair(const int8_t *a, const int8_t *b, int8_t *out)
{
    for (int j = 0; j < 8; j++) {
        memcpy(out + 8 * j, a + 4 * j, 4);
        if (b)
            memcpy(out + 8 * j + 4, b + 4 * j, 4);
        else
            memset(out + 8 * j + 4, 0, 4);
    }
}

/* One weight row into panel slot: interleaved pairs (+128 when unsign) and widened scales. */
TGT_AVX2 static void panel_row(uint32_t type, const uint8_t *row, int64_t nb, bool unsign,
                               int8_t *q, float *d)
{
    const size_t wbytes = type == ORK_TYPE_Q8_0 ? Q8_0_BYTES : Q4_0_BYTES;
    const __m256i flip = _mm256_set1_epi8(unsign ? (char)0x80 : 0);
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        const uint8_t *w0 = row + (size_t)b * wbytes, *w1 = w0 + wbytes;
        __m256i a = ork__unpack32_avx2(type, w0 + 2), c = ork__unpack32_avx2(type, w1 + 2);
        __m256i lo = _mm256_unpacklo_epi32(a, c), hi = _mm256_unpackhi_epi32(a, c);
        __m256i o0 = _mm256_permute2x128_si256(lo, hi, 0x20);
        __m256i o1 = _mm256_permute2x128_si256(lo, hi, 0x31);
        _mm256_storeu_si256((__m256i *)(q + b * 32), _mm256_xor_si256(o0, flip));
        _mm256_storeu_si256((__m256i *)(q + b * 32 + 32), _mm256_xor_si256(o1, flip));
        d[b] = _cvtsh_ss((unsigned short)(w0[0] | w0[1] << 8));
        d[b + 1] = _cvtsh_ss((unsigned short)(w1[0] | w1[1] << 8));
    }
    if (b < nb) {
        const uint8_t *w0 = row + (size_t)b * wbytes;
        int8_t v[Q8_0_BLOCK];
        ork__unpack32(type, w0 + 2, v);
        interleave_pair(v, NULL, q + b * 32);
        if (unsign)
            for (int i = 0; i < PAIR_Q; i++)
                q[b * 32 + i] = (int8_t)(q[b * 32 + i] ^ 0x80);
        d[b] = _cvtsh_ss((unsigned short)(w0[0] | w0[1] << 8));
        d[b + 1] = 0.0f;
    }
}

TGT_AVX2 static inline __m256 bcast_pair256(const void *p)
{
    double v;
    memcpy(&v, p, sizeof v);
    return _mm256_castpd_ps(_mm256_set1_pd(v));
}

/* Reduction in ork__q8_end's order from two 8-lane halves in pair layout: h0 holds lanes
 * (l0, l8, l1, l9, l2, l10, l3, l11), h1 the same for j = 4..7. */
TGT_AVX2 static inline float reduce_pair256(__m256 h0, __m256 h1)
{
    /* r8[j] = l[j] + l[j + 8]: even + odd positions */
    __m256 ev = _mm256_shuffle_ps(h0, h1, 0x88), od = _mm256_shuffle_ps(h0, h1, 0xdd);
    /* ev = (l0 l1 | l4 l5 | l2 l3 | l6 l7) by 128-bit lane; fix to r8[0..3] low, r8[4..7] high */
    __m256 r8 = _mm256_add_ps(ev, od);
    r8 = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(r8), 0xd8));
    __m128 r4 = _mm_add_ps(_mm256_castps256_ps128(r8), _mm256_extractf128_ps(r8, 1));
    __m128 r2 = _mm_add_ps(r4, _mm_movehl_ps(r4, r4));
    return _mm_cvtss_f32(_mm_add_ss(r2, _mm_movehdup_ps(r2)));
}

/* 256-bit tiles: each pair is two halves (groups 0-3, 4-7) with one accumulator each.
 * VNNI: vpdpbusd on (w + 128, x) from the bias; AVX2: vpmaddubsw on (|w|, sign(w) * x). */
#define NW2 2
TGT_AVXVNNI static inline __m256i part_vnni(__m256i bias, __m256i w, __m256i x)
{
    return _mm256_dpbusd_avx_epi32(bias, w, x);
}

TGT_AVX2 static inline __m256i part_avx2(__m256i bias, __m256i w, __m256i x)
{
    (void)bias;
    __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
    return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
}

#define TILE256(NAME, TGT, PART, MX)                                                           \
    TGT static void NAME##_##MX(const struct ork__gemm_args *g, int r0)                             \
    {                                                                                          \
        const int64_t np = g->np;                                                              \
        __m256 acc[NW2][MX][2];                                                                \
        for (int i = 0; i < NW2; i++)                                                          \
            for (int t = 0; t < MX; t++)                                                       \
                acc[i][t][0] = acc[i][t][1] = _mm256_setzero_ps();                             \
        for (int64_t p = 0; p < np; p++) {                                                     \
            __m256i wv[NW2][2];                                                                \
            __m256 dw[NW2];                                                                    \
            for (int i = 0; i < NW2; i++) {                                                    \
                const int8_t *wp = g->wq + ((size_t)(r0 + i) * np + p) * PAIR_Q;               \
                wv[i][0] = _mm256_loadu_si256((const __m256i *)wp);                            \
                wv[i][1] = _mm256_loadu_si256((const __m256i *)(wp + 32));                     \
                dw[i] = bcast_pair256(g->wd + ((size_t)(r0 + i) * np + p) * 2);                \
            }                                                                                  \
            for (int t = 0; t < MX; t++) {                                                     \
                const uint8_t *xp = g->x[t];                                                   \
                __m256i x0 = _mm256_loadu_si256((const __m256i *)(xp + p * PAIR_Q));           \
                __m256i x1 = _mm256_loadu_si256((const __m256i *)(xp + p * PAIR_Q + 32));      \
                const uint8_t *bp = xp + (size_t)np * PAIR_Q + p * PAIR_BIAS;                  \
                __m256i b0 = _mm256_loadu_si256((const __m256i *)bp);                          \
                __m256i b1 = _mm256_loadu_si256((const __m256i *)(bp + 32));                   \
                __m256 dx = bcast_pair256(xp + (size_t)np * (PAIR_Q + PAIR_BIAS) + p * PAIR_D); \
                for (int i = 0; i < NW2; i++) {                                                \
                    __m256 d = _mm256_mul_ps(dw[i], dx);                                       \
                    acc[i][t][0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(PART(b0, wv[i][0], x0)), \
                                                   d, acc[i][t][0]);                           \
                    acc[i][t][1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(PART(b1, wv[i][1], x1)), \
                                                   d, acc[i][t][1]);                           \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
        for (int t = 0; t < MX; t++)                                                           \
            for (int i = 0; i < NW2 && r0 + i < g->nw; i++)                                    \
                g->y[t][r0 + i] = reduce_pair256(acc[i][t][0], acc[i][t][1]);                  \
    }

TILE256(tile_vnni, TGT_AVXVNNI, part_vnni, 1)
TILE256(tile_vnni, TGT_AVXVNNI, part_vnni, 2)
TILE256(tile_avx2, TGT_AVX2, part_avx2, 1)
TILE256(tile_avx2, TGT_AVX2, part_avx2, 2)

/* The 256-bit decode kernels: the same scheme one block per register, accumulators a0 (even
 * blocks, lanes 0-7) and a1 (odd blocks, lanes 8-15). AVX-VNNI: u8 weights and X biases as in
 * wrows512. AVX2: Q4_0 nibbles (0..15) by x with vpmaddubsw (a pair <= 2 * 15 * 127, no
 * saturation) plus the -8 * sum bias; Q8_0 with |w| by sign(w) * x (no bias). */
/* X blocks prepared at a time: 256 x 68 bytes = 17 KiB (32 of quants, 32 of bias, the f32
 * scale, broadcast where used: a 32-byte widened scale per block cost L1 room beside the
 * weight stream; docs/kernels.md "Measurements behind the code: 256-bit decode X blocks"). */
#define W256_CHUNK 256

TGT_AVX2 static inline __m256i nibbles_avx2(const uint8_t *qs)
{
    __m128i b = _mm_loadu_si128((const __m128i *)qs);
    __m128i lo = _mm_and_si128(b, _mm_set1_epi8(15));
    __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), _mm_set1_epi8(15));
    return _mm256_set_m128i(hi, lo);
}

TGT_AVXVNNI static inline __m256i wpart_vnni(uint32_t type, const uint8_t *wq, __m256i x,
                                             __m256i bias)
{
    __m256i wu = type == ORK_TYPE_Q8_0
                     ? _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)wq),
                                        _mm256_set1_epi8((char)0x80))
                     : nibbles_avx2(wq);
    return _mm256_dpbusd_avx_epi32(bias, wu, x);
}

TGT_AVX2 static inline __m256i wpart_avx2(uint32_t type, const uint8_t *wq, __m256i x,
                                          __m256i bias)
{
    const __m256i ones = _mm256_set1_epi16(1);
    if (type == ORK_TYPE_Q8_0) {
        __m256i w = _mm256_loadu_si256((const __m256i *)wq);
        return _mm256_madd_epi16(
            _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w)), ones);
    }
    return _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(nibbles_avx2(wq), x), ones),
                            bias);
}

TGT_AVX2 static inline float reduce_acc256(__m256 a0, __m256 a1)
{
    __m256 r8 = _mm256_add_ps(a0, a1);
    __m128 r4 = _mm_add_ps(_mm256_castps256_ps128(r8), _mm256_extractf128_ps(r8, 1));
    __m128 r2 = _mm_add_ps(r4, _mm_movehl_ps(r4, r4));
    return _mm_cvtss_f32(_mm_add_ss(r2, _mm_movehdup_ps(r2)));
}

#define WROWS256(NAME, TGT, PART)                                                              \
    TGT static void NAME(uint32_t type, const uint8_t *w, size_t row_bytes, int64_t nr,       \
                         const uint8_t *xq, int64_t nb, float *out)                            \
    {                                                                                          \
        const size_t wbytes = type == ORK_TYPE_Q8_0 ? Q8_0_BYTES : Q4_0_BYTES;                 \
        const int shift = type == ORK_TYPE_Q8_0 ? 7 : 3;   /* offset 128 or 8 */              \
        __m256i xv[W256_CHUNK], bias[W256_CHUNK];                                              \
        float dx[W256_CHUNK];                                                                  \
        for (int64_t r = 0; r < nr; r++) {                                                     \
            const uint8_t *row = w + (size_t)r * row_bytes;                                    \
            __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();                         \
            for (int64_t b0 = 0; b0 < nb; b0 += W256_CHUNK) {                                  \
                const int64_t bc = nb - b0 < W256_CHUNK ? nb - b0 : W256_CHUNK;                \
                if (nb > W256_CHUNK || r == 0) {                                               \
                    for (int64_t q = 0; q < bc; q++) {                                         \
                        const uint8_t *x0 = xq + (size_t)(b0 + q) * Q8_0_BYTES;                \
                        xv[q] = _mm256_loadu_si256((const __m256i *)(x0 + 2));                 \
                        dx[q] = _cvtsh_ss((unsigned short)(x0[0] | x0[1] << 8));               \
                        __m256i s = _mm256_madd_epi16(                                         \
                            _mm256_maddubs_epi16(_mm256_set1_epi8(1), xv[q]),                  \
                            _mm256_set1_epi16(1));                                             \
                        bias[q] = _mm256_sub_epi32(_mm256_setzero_si256(),                     \
                                                   _mm256_slli_epi32(s, shift));               \
                    }                                                                          \
                }                                                                              \
                int64_t q = 0;                                                                 \
                for (; q + 2 <= bc; q += 2) {                                                  \
                    const uint8_t *w0 = row + (size_t)(b0 + q) * wbytes, *w1 = w0 + wbytes;    \
                    __m256i p0 = PART(type, w0 + 2, xv[q], bias[q]);                           \
                    __m256i p1 = PART(type, w1 + 2, xv[q + 1], bias[q + 1]);                   \
                    __m256 d0 = _mm256_mul_ps(                                                 \
                        _mm256_cvtph_ps(_mm_set1_epi16((short)(w0[0] | w0[1] << 8))),          \
                        _mm256_broadcast_ss(&dx[q]));                                          \
                    __m256 d1 = _mm256_mul_ps(                                                 \
                        _mm256_cvtph_ps(_mm_set1_epi16((short)(w1[0] | w1[1] << 8))),          \
                        _mm256_broadcast_ss(&dx[q + 1]));                                      \
                    a0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p0), d0, a0);                      \
                    a1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p1), d1, a1);                      \
                }                                                                              \
                if (q < bc) {   /* odd block count: the last chunk ends on an even block */    \
                    const uint8_t *w0 = row + (size_t)(b0 + q) * wbytes;                       \
                    __m256i p0 = PART(type, w0 + 2, xv[q], bias[q]);                           \
                    __m256 d0 = _mm256_mul_ps(                                                 \
                        _mm256_cvtph_ps(_mm_set1_epi16((short)(w0[0] | w0[1] << 8))),          \
                        _mm256_broadcast_ss(&dx[q]));                                          \
                    a0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p0), d0, a0);                      \
                }                                                                              \
            }                                                                                  \
            out[r] = reduce_acc256(a0, a1);                                                    \
        }                                                                                      \
    }

WROWS256(wrows_vnni, TGT_AVXVNNI, wpart_vnni)
WROWS256(wrows_avx2, TGT_AVX2, wpart_avx2)

/* The panel in NW2 x 2 tiles of 256-bit accumulators. */
static inline __attribute__((always_inline)) void
run_tile256(const struct ork__gemm_args *g, int mx, bool vnni)
{
    for (int r0 = 0; r0 < g->nw; r0 += NW2) {
        for (int t0 = 0; t0 < mx; t0 += 2) {
            struct ork__gemm_args h = *g;
            for (int t = 0; t < 2 && t0 + t < mx; t++) {
                h.x[t] = g->x[t0 + t];
                h.y[t] = g->y[t0 + t];
            }
            bool one = mx - t0 == 1;
            if (vnni) {
                if (one)
                    tile_vnni_1(&h, r0);
                else
                    tile_vnni_2(&h, r0);
            } else {
                if (one)
                    tile_avx2_1(&h, r0);
                else
                    tile_avx2_2(&h, r0);
            }
        }
    }
}

static void tile_avx2(const struct ork__gemm_args *g, int mx)
{
    run_tile256(g, mx, false);
}

static void tile_vnni(const struct ork__gemm_args *g, int mx)
{
    run_tile256(g, mx, true);
}

/* Bytes between software prefetches of the next panel's weight rows (a cache line). */
#define LINE 64

/* Ask for the next panel's rows (into L2) while the tiles run on this one, so the repacking
 * does not wait for 4 short streams from DRAM. The gain was within noise (docs/kernels.md
 * "Measurements behind the code: GEMM panel prefetch"), kept as it costs ~140 prefetches per
 * panel against ~10^5 vector operations. */
static void prefetch_rows(const struct ork_mat *w, int64_t n0, int64_t r1)
{
    const int64_t n1 = n0 + NW < r1 ? n0 + NW : r1;
    const size_t bytes = ork_type_row_bytes(w->type, (uint64_t)w->n_cols);
    for (int64_t r = n0; r < n1; r++) {
        const char *row = (const char *)w->data + (size_t)r * w->row_bytes;
        for (size_t o = 0; o < bytes; o += LINE)
            _mm_prefetch(row + o, _MM_HINT_T1);
    }
}

void ork__gemm_q8_drive(ork__gemm_tile_fn tile, bool unsign, const struct ork_mat *w, int64_t r0,
                        int64_t r1, const uint8_t *xp, int64_t m, float *y, int64_t ldy,
                        uint8_t *panel)
{
    const int64_t kc = w->n_cols, nb = kc / Q8_0_BLOCK, np = n_pairs(kc);
    const size_t xrb = ork__xpack_row_bytes(kc);
    int8_t *pq = (int8_t *)(((uintptr_t)panel + ORK_GEMM_ALIGN - 1) & ~(uintptr_t)(ORK_GEMM_ALIGN - 1));
    float *pd = (float *)(pq + (size_t)NW * np * PAIR_Q);
    const int64_t mc = ork__gemm_chunk_rows(kc);
    for (int64_t m0 = 0; m0 < m; m0 += mc) {
        const int64_t m1 = m0 + mc < m ? m0 + mc : m;
        for (int64_t n0 = r0; n0 < r1; n0 += NW) {
            int nw = r1 - n0 < NW ? (int)(r1 - n0) : NW;
            for (int i = 0; i < NW; i++) {
                int64_t r = n0 + (i < nw ? i : nw - 1);
                panel_row(w->type, (const uint8_t *)w->data + (size_t)r * w->row_bytes, nb,
                          unsign, pq + (size_t)i * np * PAIR_Q, pd + (size_t)i * np * 2);
            }
            prefetch_rows(w, n0 + NW, r1);
            struct ork__gemm_args g = { .wq = pq, .wd = pd, .np = np, .nw = nw };
            for (int64_t t0 = m0; t0 < m1; t0 += ORK_GEMM_MX) {
                int mx = m1 - t0 < ORK_GEMM_MX ? (int)(m1 - t0) : ORK_GEMM_MX;
                for (int t = 0; t < mx; t++) {
                    g.x[t] = xp + (size_t)(t0 + t) * xrb;
                    g.y[t] = y + (t0 + t) * ldy + n0;
                }
                tile(&g, mx);
            }
        }
    }
}

static void gemm_avx2(const struct ork_mat *w, int64_t r0, int64_t r1, const uint8_t *xp,
                      int64_t m, float *y, int64_t ldy, uint8_t *panel)
{
    ork__gemm_q8_drive(tile_avx2, false, w, r0, r1, xp, m, y, ldy, panel);
}

static void gemm_vnni(const struct ork_mat *w, int64_t r0, int64_t r1, const uint8_t *xp,
                      int64_t m, float *y, int64_t ldy, uint8_t *panel)
{
    ork__gemm_q8_drive(tile_vnni, true, w, r0, r1, xp, m, y, ldy, panel);
}

void ork__fill_gemm_q8_avx2(struct ork__kern *t)
{
    for (int k = ORK__KT_Q8_0; k <= ORK__KT_Q4_0; k++) {
        t->t[k].q8_wrows = wrows_avx2;
        t->t[k].q8_wstreams_width = 1;
        t->t[k].gemm = gemm_avx2;
    }
}

void ork__fill_gemm_q8_avxvnni(struct ork__kern *t)
{
    for (int k = ORK__KT_Q8_0; k <= ORK__KT_Q4_0; k++) {
        t->t[k].q8_wrows = wrows_vnni;
        t->t[k].q8_wstreams_width = 1;
        t->t[k].gemm = gemm_vnni;
    }
}
#endif
