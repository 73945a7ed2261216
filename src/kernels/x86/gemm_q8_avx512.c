/* x86/gemm_q8_avx512.c -- the AVX-512 VNNI kernels of Q8_0 / Q4_0 weights x Q8_0 activations
 * (the avx512vnni path): the register tiles the GEMM driver of gemm_q8_avx2.c runs (one zmm
 * accumulator per output), and the decode kernels reading up to four weight-row streams side
 * by side against one X row prepared once. Layouts and arithmetic: gemm_q8_avx2.c. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <ork-kernels/kernels.h>

#include "x86_priv.h"
#include "qk_block.h"

#ifdef ORK_KERN_X86

#define TGT_AVX512 \
    __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi")))
#define PAIR_Q 64               /* int8 values of a block pair */
#define PAIR_BIAS 64            /* bytes of a pair's 16 int32 biases */
#define PAIR_D 8                /* bytes of a pair's two f32 scales */
#define U8_OFFSET 128           /* w + 128: signed int8 weight as the u8 operand of vpdpbusd */

TGT_AVX512 static inline float reduce_pair512(__m512 a)
{
    const __m512i ev = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512i od = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 0, 0, 0, 0, 0, 0, 0, 0);
    __m256 r8 = _mm512_castps512_ps256(
        _mm512_add_ps(_mm512_permutexvar_ps(ev, a), _mm512_permutexvar_ps(od, a)));
    __m128 r4 = _mm_add_ps(_mm256_castps256_ps128(r8), _mm256_extractf128_ps(r8, 1));
    __m128 r2 = _mm_add_ps(r4, _mm_movehl_ps(r4, r4));
    return _mm_cvtss_f32(_mm_add_ss(r2, _mm_movehdup_ps(r2)));
}

#define NW ORK_GEMM_NW

/* AVX-512 VNNI tile: NW weight rows x MX X rows, one zmm accumulator each. */
#define TILE512(MX)                                                                            \
    TGT_AVX512 static void tile512_##MX(const struct ork__gemm_args *g)                             \
    {                                                                                          \
        const int64_t np = g->np;                                                              \
        __m512 acc[NW][MX];                                                                    \
        for (int i = 0; i < NW; i++)                                                           \
            for (int t = 0; t < MX; t++)                                                       \
                acc[i][t] = _mm512_setzero_ps();                                               \
        const uint8_t *xb[MX];                                                                 \
        const uint8_t *xd[MX];                                                                 \
        for (int t = 0; t < MX; t++) {                                                         \
            xb[t] = g->x[t] + (size_t)np * PAIR_Q;                                             \
            xd[t] = g->x[t] + (size_t)np * (PAIR_Q + PAIR_BIAS);                               \
        }                                                                                      \
        for (int64_t p = 0; p < np; p++) {                                                     \
            __m512i wv[NW];                                                                    \
            __m512 dw[NW];                                                                     \
            for (int i = 0; i < NW; i++) {                                                     \
                wv[i] = _mm512_loadu_si512(g->wq + ((size_t)i * np + p) * PAIR_Q);            \
                double dd;                                                                     \
                memcpy(&dd, g->wd + ((size_t)i * np + p) * 2, sizeof dd);                      \
                dw[i] = _mm512_castpd_ps(_mm512_set1_pd(dd));                                  \
            }                                                                                  \
            for (int t = 0; t < MX; t++) {                                                     \
                __m512i xv = _mm512_loadu_si512(g->x[t] + p * PAIR_Q);                         \
                __m512i bias = _mm512_loadu_si512(xb[t] + p * PAIR_BIAS);                      \
                double dd;                                                                     \
                memcpy(&dd, xd[t] + p * PAIR_D, sizeof dd);                                    \
                __m512 dx = _mm512_castpd_ps(_mm512_set1_pd(dd));                              \
                for (int i = 0; i < NW; i++) {                                                 \
                    __m512i s = _mm512_dpbusd_epi32(bias, wv[i], xv);                          \
                    __m512 d = _mm512_mul_ps(dw[i], dx);                                       \
                    acc[i][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), d, acc[i][t]);          \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
        for (int t = 0; t < MX; t++)                                                           \
            for (int i = 0; i < g->nw; i++)                                                    \
                g->y[t][i] = reduce_pair512(acc[i][t]);                                        \
    }

TILE512(1)
TILE512(2)
TILE512(3)
TILE512(4)

static void tile512(const struct ork__gemm_args *g, int mx)
{
    switch (mx) {
    case 1: tile512_1(g); return;
    case 2: tile512_2(g); return;
    case 3: tile512_3(g); return;
    default: tile512_4(g); return;
    }
}

/* Decode (one X row): weight rows read straight from the matrix (no repacking) against X
 * block pairs prepared once (values and scales, WROWS_CHUNK) for all of them; lanes in struct
 * q8_acc order (even block 0-7, odd 8-15), reduced in registers.
 * Weights as u8 (Q8_0: w + 128; Q4_0: the nibble itself, 0..15) with the matching X bias
 * (-128 or -8 times the group sum of x, recomputed per pair and pass), so each partial is
 * exact.
 * A pair's loads stay inside its blocks; with !two the odd block is absent and loads as zero
 * quants with a zero scale, as the accumulator layout requires.
 *
 * Q4_0 pairs are two 128-bit broadcast loads + one lane insert, Q8_0 pairs two 32-byte loads
 * (the fastest of the loads tried); each pass takes rows from different parts of the thread's
 * range (streams in different pages: two adjacent rows per pass defeat the hardware
 * prefetcher). docs/kernels.md "Measurements behind the code: AVX-512 decode loads" has the
 * numbers. */
#define Q8_PAIR_BYTES (2 * Q8_0_BYTES)
#define Q4_PAIR_BYTES (2 * Q4_0_BYTES)
#define F16_OFF 0               /* byte offset of a block's f16 scale */
#define Q_OFF 2                 /* byte offset of a block's quants */
/* Word mask of the high-nibble halves of a Q4_0 pair vector: words 8-15 and 24-31. */
#define Q4_HI_WORDS 0xff00ff00u

/* The scales of a pair (blocks at p and p + bbytes) widened: lanes 0-7 the first, 8-15 the
 * second (zero with !two). */
TGT_AVX512 static inline __m512 pair_d512(const uint8_t *p, size_t bbytes, bool two)
{
    const uint8_t *p1 = p + bbytes + F16_OFF;
    __m128i h0 = _mm_set1_epi16((short)(p[F16_OFF] | p[F16_OFF + 1] << 8));
    __m128i h1 = two ? _mm_set1_epi16((short)(p1[0] | p1[1] << 8)) : _mm_setzero_si128();
    return _mm512_cvtph_ps(_mm256_set_m128i(h1, h0));
}

/* A Q8_0 pair (weights or X blocks): int8 quants in lanes 0-31 / 32-63 and the two scales. */
TGT_AVX512 static inline __m512i pair_q8_512(const uint8_t *p, bool two, __m512 *d)
{
    __m256i a = _mm256_loadu_si256((const __m256i *)(p + Q_OFF));
    __m256i b = two ? _mm256_loadu_si256((const __m256i *)(p + Q8_0_BYTES + Q_OFF))
                    : _mm256_setzero_si256();
    *d = pair_d512(p, Q8_0_BYTES, two);
    return _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
}

/* A Q4_0 pair: nibbles 0..15 as u8, the low nibbles of a block then its high nibbles (the
 * element order of the format), and the two scales. */
TGT_AVX512 static inline __m512i pair_q4_512(const uint8_t *p, bool two, __m512 *d)
{
    __m256i a = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(p + Q_OFF)));
    __m256i b = two ? _mm256_broadcastsi128_si256(
                          _mm_loadu_si128((const __m128i *)(p + Q4_0_BYTES + Q_OFF)))
                    : _mm256_setzero_si256();
    __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
    q = _mm512_mask_srli_epi16(q, Q4_HI_WORDS, q, 4);
    *d = pair_d512(p, Q4_0_BYTES, two);
    return _mm512_and_si512(q, _mm512_set1_epi8(15));
}

TGT_AVX512 static inline float reduce_acc512(__m512 a)
{
    __m256 r8 = _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1));
    __m128 r4 = _mm_add_ps(_mm256_castps256_ps128(r8), _mm256_extractf128_ps(r8, 1));
    __m128 r2 = _mm_add_ps(r4, _mm_movehl_ps(r4, r4));
    return _mm_cvtss_f32(_mm_add_ss(r2, _mm_movehdup_ps(r2)));
}

/* Pairs of X prepared at a time for the decode kernel: 128 pairs (K = 8192) x 72 bytes (64
 * of quants, two f32 scales) = 9 KiB of stack, in L1 while every weight row meets it.
 * The prepared pair is kept that small on purpose: the X bias (-offset x the group sums) is
 * recomputed per pair from the quants with one vpdpbusd, and the scales are widened to their
 * lanes with one permute, shared by the four rows of a pass: larger prepared pairs competed in
 * L1 with the weight streams (docs/kernels.md "Measurements behind the code: AVX-512 decode X
 * pairs"). */
#define WROWS_CHUNK 128

/* The per-pair X operands of step q, shared by the rows of a pass: the bias for the weights'
 * u8 offset (off) and the two scales widened to lanes 0-7 / 8-15. */
#define XPAIR512(q)                                                                            \
    const __m512i nbias = _mm512_sub_epi32(                                                    \
        _mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), off, xv[q]));     \
    const __m512 dxq = _mm512_permutexvar_ps(                                                  \
        lanes01, _mm512_castpd_ps(_mm512_set1_pd(xd[q])))

/* One step of a row's chain: weight pair v (scales dw) against prepared X pair q. */
#define WSTEP512(TO_U8, v, dw, q, acc)                                                         \
    _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_dpbusd_epi32(nbias, TO_U8(v), xv[q])),           \
                    _mm512_mul_ps((dw), dxq), (acc))

/* Lane pattern of a pair's two values (even block: lanes 0-7, odd block: 8-15). */
#define LANES01 _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0)

/* One weight row against pc prepared X pairs starting at pair p0; only the row's last pair
 * can lack its odd block. xd[q]: pair q's two f32 scales. */
#define WROW512(NAME, PAIR, PAIR_BYTES, TO_U8)                                                 \
    TGT_AVX512 static inline __m512 NAME(const uint8_t *row, int64_t p0, int64_t pc,          \
                                         int64_t nb, const __m512i *xv, const double *xd,     \
                                         __m512i off, __m512 a)                               \
    {                                                                                          \
        const bool ragged = p0 + pc == (nb + 1) / 2 && nb % 2;                                 \
        const uint8_t *w0 = row + (size_t)p0 * PAIR_BYTES;                                     \
        const __m512i lanes01 = LANES01;                                                       \
        for (int64_t q = 0; q < pc; q++) {                                                     \
            XPAIR512(q);                                                                       \
            __m512 dw;                                                                         \
            __m512i v = PAIR(w0 + (size_t)q * PAIR_BYTES, !ragged || q + 1 < pc, &dw);         \
            a = WSTEP512(TO_U8, v, dw, q, a);                                                  \
        }                                                                                      \
        return a;                                                                              \
    }
#define Q8_TO_U8(v) _mm512_xor_si512((v), _mm512_set1_epi8((char)U8_OFFSET))
#define Q4_TO_U8(v) (v)
WROW512(wrow512_q8, pair_q8_512, Q8_PAIR_BYTES, Q8_TO_U8)
WROW512(wrow512_q4, pair_q4_512, Q4_PAIR_BYTES, Q4_TO_U8)

/* Weight rows read side by side by the decode kernel, one from each part of the thread's range
 * (WROWS_STREAMS memory streams in different pages, one FMA chain each). */
#define WROWS_STREAMS 4
_Static_assert(WROWS_STREAMS <= ORK_WSTREAMS_MAX, "ork__q8_wstreams takes this many streams");

/* WROWS_STREAMS weight rows against the same prepared X pairs, each row's arithmetic as in
 * WROW512. */
#define WROWS512(NAME, PAIR, PAIR_BYTES, TO_U8)                                                \
    TGT_AVX512 static inline void NAME(const uint8_t *const *rows, int64_t p0, int64_t pc,    \
                                       int64_t nb, const __m512i *xv, const double *xd,       \
                                       __m512i off, __m512 *acc)                              \
    {                                                                                          \
        const bool ragged = p0 + pc == (nb + 1) / 2 && nb % 2;                                 \
        const size_t o = (size_t)p0 * PAIR_BYTES;                                              \
        const uint8_t *w0 = rows[0] + o, *w1 = rows[1] + o, *w2 = rows[2] + o,                 \
                      *w3 = rows[3] + o;                                                       \
        const __m512i lanes01 = LANES01;                                                       \
        __m512 a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3];                             \
        for (int64_t q = 0; q < pc; q++) {                                                     \
            const bool two = !ragged || q + 1 < pc;                                            \
            const size_t at = (size_t)q * PAIR_BYTES;                                          \
            XPAIR512(q);                                                                       \
            __m512 d0, d1, d2, d3;                                                             \
            __m512i v0 = PAIR(w0 + at, two, &d0), v1 = PAIR(w1 + at, two, &d1);                \
            __m512i v2 = PAIR(w2 + at, two, &d2), v3 = PAIR(w3 + at, two, &d3);                \
            a0 = WSTEP512(TO_U8, v0, d0, q, a0);                                               \
            a1 = WSTEP512(TO_U8, v1, d1, q, a1);                                               \
            a2 = WSTEP512(TO_U8, v2, d2, q, a2);                                               \
            a3 = WSTEP512(TO_U8, v3, d3, q, a3);                                               \
        }                                                                                      \
        acc[0] = a0, acc[1] = a1, acc[2] = a2, acc[3] = a3;                                    \
    }
WROWS512(wrows4_512_q8, pair_q8_512, Q8_PAIR_BYTES, Q8_TO_U8)
WROWS512(wrows4_512_q4, pair_q4_512, Q4_PAIR_BYTES, Q4_TO_U8)

/* X pairs p0 .. p0 + pc - 1 as vpdpbusd operands: the quants, and the two scales as f32 side
 * by side in xd[q] (0 for an absent odd block). */
TGT_AVX512 static void xpairs512(const uint8_t *xq, int64_t nb, int64_t p0, int64_t pc,
                                 __m512i *xv, double *xd)
{
    for (int64_t q = 0; q < pc; q++) {
        const int64_t b = 2 * (p0 + q);
        __m512 d;
        xv[q] = pair_q8_512(xq + (size_t)b * Q8_0_BYTES, b + 1 < nb, &d);
        /* lanes 0 and 8 hold the two scales */
        __m256 lo = _mm512_castps512_ps256(d), hi = _mm512_extractf32x8_ps(d, 1);
        __m128 two = _mm_unpacklo_ps(_mm256_castps256_ps128(lo), _mm256_castps256_ps128(hi));
        _mm_storel_pd(&xd[q], _mm_castps_pd(two));
    }
}

/* Up to WROWS_STREAMS streams of weight rows read side by side: stream t is s[t].n rows from
 * s[t].w (row_bytes apart) into s[t].out. Pass r takes row r of every stream that has one; a
 * full pass runs the four-row step, a partial one the one-row step (same arithmetic). */
TGT_AVX512 static void wstreams512(uint32_t type, const struct ork__wstream *s, int ns_in,
                                   size_t row_bytes, const uint8_t *xq, int64_t nb)
{
    const bool q8 = type == ORK_TYPE_Q8_0;
    const __m512i off = _mm512_set1_epi8(q8 ? (char)U8_OFFSET : (char)Q4_0_OFFSET);
    __m512i xv[WROWS_CHUNK];
    double xd[WROWS_CHUNK];
    const int64_t np = (nb + 1) / 2;
    int64_t passes = 0;
    for (int t = 0; t < ns_in; t++)
        passes = s[t].n > passes ? s[t].n : passes;
    for (int64_t r = 0; r < passes; r++) {
        const uint8_t *rows[WROWS_STREAMS];
        float *outs[WROWS_STREAMS];
        __m512 acc[WROWS_STREAMS];
        int ns = 0;
        for (int t = 0; t < ns_in; t++) {
            if (r >= s[t].n)
                continue;
            rows[ns] = s[t].w + (size_t)r * row_bytes;
            outs[ns] = s[t].out + r;
            acc[ns++] = _mm512_setzero_ps();
        }
        for (int64_t p0 = 0; p0 < np; p0 += WROWS_CHUNK) {
            const int64_t pc = np - p0 < WROWS_CHUNK ? np - p0 : WROWS_CHUNK;
            if (np > WROWS_CHUNK || r == 0)
                xpairs512(xq, nb, p0, pc, xv, xd);
            if (ns == WROWS_STREAMS && q8)
                wrows4_512_q8(rows, p0, pc, nb, xv, xd, off, acc);
            else if (ns == WROWS_STREAMS)
                wrows4_512_q4(rows, p0, pc, nb, xv, xd, off, acc);
            else
                for (int t = 0; t < ns; t++)
                    acc[t] = q8 ? wrow512_q8(rows[t], p0, pc, nb, xv, xd, off, acc[t])
                                : wrow512_q4(rows[t], p0, pc, nb, xv, xd, off, acc[t]);
        }
        for (int t = 0; t < ns; t++)
            *outs[t] = reduce_acc512(acc[t]);
    }
}

/* nr contiguous rows as WROWS_STREAMS streams, one per part (the last part may be shorter). */
TGT_AVX512 static void wrows512(uint32_t type, const uint8_t *w, size_t row_bytes, int64_t nr,
                                const uint8_t *xq, int64_t nb, float *out)
{
    struct ork__wstream s[WROWS_STREAMS];
    int ns = ork__wstreams_split(w, row_bytes, nr, 1, WROWS_STREAMS, out, s);
    wstreams512(type, s, ns, row_bytes, xq, nb);
}

static void gemm_avx512(const struct ork_mat *w, int64_t r0, int64_t r1, const uint8_t *xp,
                        int64_t m, float *y, int64_t ldy, uint8_t *panel)
{
    ork__gemm_q8_drive(tile512, true, w, r0, r1, xp, m, y, ldy, panel);
}

void ork__fill_gemm_q8_avx512(struct ork__kern *t)
{
    for (int k = ORK__KT_Q8_0; k <= ORK__KT_Q4_0; k++) {
        t->t[k].q8_wrows = wrows512;
        t->t[k].q8_wstreams = wstreams512;
        t->t[k].q8_wstreams_width = WROWS_STREAMS;
        t->t[k].gemm = gemm_avx512;
    }
}
#endif
