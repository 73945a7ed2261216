/* x86/qdot_avx512.c -- the 512-bit integer dots of quantized weights with quantized
 * activations (the avx512vnni path; qdot.c has the arithmetic): Q8_0 / Q4_0 x Q8_0 two blocks
 * per register with vpdpbusd, one row or four X rows at a time, and Q4_K / Q6_K x Q8_K for
 * several X rows (or batches of blocks of one) with the weight blocks unpacked once. Same bits
 * as the scalar path. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <ork-kernels/kernels.h>

#include "x86_priv.h"
#include "qk_block.h"

#ifdef ORK_KERN_X86

#define TGT_AVX2 ORK_TGT_AVX2
#define TGT_AVX512 \
    __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")))

TGT_AVX2 static inline float f16v_x86(const uint8_t *p)
{
    return _cvtsh_ss((unsigned short)(p[0] | (p[1] << 8)));
}

/* Two blocks per 512-bit register: lanes 0-7 the even block, 8-15 the odd one, which is the
 * accumulator layout itself. sign(w) * x via a mask subtract (AVX-512 has no vpsignb). */
TGT_AVX512 static void q8_blocks_avx512(uint32_t type, const uint8_t *w, const uint8_t *xq,
                                        int64_t nb, struct q8_acc *acc)
{
    const size_t wbytes = type == ORK_TYPE_Q8_0 ? Q8_0_BYTES : Q4_0_BYTES;
    __m512 a = _mm512_loadu_ps(acc->l);
    const __m512i zero = _mm512_setzero_si512();
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        const uint8_t *w0 = w + (size_t)b * wbytes, *w1 = w0 + wbytes;
        const uint8_t *x0 = xq + (size_t)b * Q8_0_BYTES, *x1 = x0 + Q8_0_BYTES;
        __m512i wv = _mm512_inserti64x4(_mm512_castsi256_si512(ork__unpack32_avx2(type, w0 + 2)),
                                        ork__unpack32_avx2(type, w1 + 2), 1);
        __m512i xv = _mm512_inserti64x4(
            _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(x0 + 2))),
            _mm256_loadu_si256((const __m256i *)(x1 + 2)), 1);
        __mmask64 neg = _mm512_movepi8_mask(wv);
        __m512i sx = _mm512_mask_sub_epi8(xv, neg, zero, xv);
        __m512i p = _mm512_dpbusd_epi32(zero, _mm512_abs_epi8(wv), sx);
        float d0 = f16v_x86(w0) * f16v_x86(x0);
        float d1 = f16v_x86(w1) * f16v_x86(x1);
        __m512 d = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_set1_ps(d0)),
                                      _mm256_set1_ps(d1), 1);
        a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), d, a);
    }
    _mm512_storeu_ps(acc->l, a);
    if (b < nb)
        ork__q8_blocks_avx2(type, w + (size_t)b * wbytes, xq + (size_t)b * Q8_0_BYTES, 1, acc);
}

TGT_AVX512 static void q8_rows_avx512(uint32_t type, const uint8_t *w, const uint8_t *xq,
                                      size_t xs, int64_t nb, float *out)
{
    enum { NR = ORK_Q8_ROWS_MAX };
    const size_t wbytes = type == ORK_TYPE_Q8_0 ? Q8_0_BYTES : Q4_0_BYTES;
    const __m512i zero = _mm512_setzero_si512();
    __m512 a[NR];
    for (int t = 0; t < NR; t++)
        a[t] = _mm512_setzero_ps();
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        const uint8_t *w0 = w + (size_t)b * wbytes, *w1 = w0 + wbytes;
        __m512i wv = _mm512_inserti64x4(_mm512_castsi256_si512(ork__unpack32_avx2(type, w0 + 2)),
                                        ork__unpack32_avx2(type, w1 + 2), 1);
        __m512i aw = _mm512_abs_epi8(wv);
        __mmask64 neg = _mm512_movepi8_mask(wv);
        float dw0 = f16v_x86(w0), dw1 = f16v_x86(w1);
        for (int t = 0; t < NR; t++) {
            const uint8_t *x0 = xq + (size_t)t * xs + (size_t)b * Q8_0_BYTES;
            const uint8_t *x1 = x0 + Q8_0_BYTES;
            __m512i xv = _mm512_inserti64x4(
                _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(x0 + 2))),
                _mm256_loadu_si256((const __m256i *)(x1 + 2)), 1);
            __m512i p = _mm512_dpbusd_epi32(zero, aw, _mm512_mask_sub_epi8(xv, neg, zero, xv));
            float d0 = dw0 * f16v_x86(x0);
            float d1 = dw1 * f16v_x86(x1);
            __m512 d = _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_set1_ps(d0)),
                                          _mm256_set1_ps(d1), 1);
            a[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), d, a[t]);
        }
    }
    for (int t = 0; t < NR; t++) {
        struct q8_acc acc;
        _mm512_storeu_ps(acc.l, a[t]);
        if (b < nb)
            ork__q8_blocks_avx2(type, w + (size_t)b * wbytes,
                              xq + (size_t)t * xs + (size_t)b * Q8_0_BYTES, 1, &acc);
        out[t] = ork__q8_end(&acc);
    }
}

/* Q4_K / Q6_K x Q8_K for several X rows at once (ork__q8k_rows): each weight block is
 * unpacked once into four 64-byte vectors of u8 values (Q4_K 0..15, Q6_K 0..63) with their
 * sub-block scales as int32 lanes, then every X row meets them with vpdpbusd. A vpdpbusd lane
 * sums four adjacent products, so a lane never straddles a sub-block (32 elements, Q4_K) or a
 * 16-group (Q6_K); vpmulld applies the scale per lane; the lanes' sum is S exactly (integer).
 * The mins / bias term uses the X block sums, as the other paths do. The f32 steps are the
 * shared q4k_block_sum / q6k_block_sum, so each output has the bits of ork__q8k_blocks. */
#define Q8K_ROWS_VECS 4         /* 64-element vectors per 256-element block */

/* Q4_K block: 16-bit mins (mn_j at words 2j, 2j+1, to meet the 16 X block sums), the
 * per-lane scales of vector p (lanes 0-7 sub-block 2p, 8-15 sub-block 2p + 1), the values. */
TGT_AVX512 static inline void q4k_unpack512(const uint8_t *blk, __m512i wv[Q8K_ROWS_VECS],
                                            __m512i scv[Q8K_ROWS_VECS], __m256i *mins)
{
    /* q4k_sm on four sub-blocks per 32-bit word: u0 = scales[0..3], u1 = [4..7], u2 = [8..11] */
    uint32_t u[3];
    memcpy(u, blk + Q4_K_SCALES, sizeof u);
    const uint32_t low6 = 0x3f3f3f3fu, low4 = 0x0f0f0f0fu, top2 = 0x30303030u;
    uint32_t sc4[2] = { u[0] & low6, (u[2] & low4) | ((u[0] >> 2) & top2) };
    uint32_t mn4[2] = { u[1] & low6, ((u[2] >> 4) & low4) | ((u[1] >> 2) & top2) };
    uint64_t sc8, mn8;
    memcpy(&sc8, sc4, sizeof sc8);
    memcpy(&mn8, mn4, sizeof mn8);
    __m128i mn16 = _mm_cvtepu8_epi16(_mm_cvtsi64_si128((long long)mn8));
    *mins = _mm256_set_m128i(_mm_unpackhi_epi16(mn16, mn16), _mm_unpacklo_epi16(mn16, mn16));
    const __m512i sc32 =
        _mm512_castsi256_si512(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)sc8)));
    const __m512i m4 = _mm512_set1_epi8(15);
    for (int p = 0; p < Q8K_ROWS_VECS; p++) {
        /* qs[32p .. 32p+31]: low nibbles are elements 64p.., high nibbles 64p + 32.. */
        __m512i q = _mm512_broadcast_i64x4(
            _mm256_loadu_si256((const __m256i *)(blk + Q4_K_QS + 32 * p)));
        q = _mm512_mask_srli_epi16(q, 0xffff0000u, q, 4);
        wv[p] = _mm512_and_si512(q, m4);
        const __m512i idx = _mm512_setr_epi32(2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p, 2 * p,
                                              2 * p, 2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1,
                                              2 * p + 1, 2 * p + 1, 2 * p + 1, 2 * p + 1);
        scv[p] = _mm512_permutexvar_epi32(idx, sc32);
    }
}

/* Q6_K block: vectors 2h (elements 128h + 0..63) and 2h + 1 (128h + 64..127) of 6-bit values,
 * the per-lane 16-group scales (lane i of vector v: group 4v + i / 4), the 16 scales as int16. */
TGT_AVX512 static inline void q6k_unpack512(const uint8_t *blk, __m512i wv[Q8K_ROWS_VECS],
                                            __m512i scv[Q8K_ROWS_VECS], __m256i *sc16)
{
    const __m512i m4 = _mm512_set1_epi8(15), m2 = _mm512_set1_epi8(3);
    __m128i sc8 = _mm_loadu_si128((const __m128i *)(blk + Q6_K_SC));
    __m512i sc32 = _mm512_cvtepi8_epi32(sc8);
    *sc16 = _mm256_cvtepi8_epi16(sc8);
    for (int h = 0; h < 2; h++) {
        /* ql[64h .. 64h+63]: bytes 0-31 feed elements 0-31 (low) and 64-95 (high nibbles),
         * bytes 32-63 elements 32-63 and 96-127; qh bits 2t..2t+1 are the top of element
         * 32t + l. */
        __m512i l = _mm512_loadu_si512(blk + 64 * h);
        __m512i hb = _mm512_broadcast_i64x4(
            _mm256_loadu_si256((const __m256i *)(blk + Q6_K_QH + 32 * h)));
        hb = _mm512_mask_srli_epi16(hb, 0xffff0000u, hb, 2);   /* upper half: bits 2-3 */
        __m512i lo = _mm512_or_si512(_mm512_and_si512(l, m4),
                                     _mm512_slli_epi16(_mm512_and_si512(hb, m2), 4));
        __m512i hi = _mm512_or_si512(
            _mm512_and_si512(_mm512_srli_epi16(l, 4), m4),
            _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(hb, 4), m2), 4));
        wv[2 * h] = lo;
        wv[2 * h + 1] = hi;
        for (int v = 0; v < 2; v++) {
            const int g0 = 8 * h + 4 * v;
            const __m512i idx = _mm512_setr_epi32(g0, g0, g0, g0, g0 + 1, g0 + 1, g0 + 1, g0 + 1,
                                                  g0 + 2, g0 + 2, g0 + 2, g0 + 2, g0 + 3, g0 + 3,
                                                  g0 + 3, g0 + 3);
            scv[2 * h + v] = _mm512_permutexvar_epi32(idx, sc32);
        }
    }
}

/* The scaled lanes of one unpacked block against the Q8_K values qx (their sum is S). */
TGT_AVX512 static inline __m512i q8k_lanes512(const __m512i wv[Q8K_ROWS_VECS],
                                              const __m512i scv[Q8K_ROWS_VECS], const int8_t *qx)
{
    __m512i s = _mm512_setzero_si512();
    for (int v = 0; v < Q8K_ROWS_VECS; v++) {
        __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), wv[v],
                                        _mm512_loadu_si512(qx + 64 * v));
        s = _mm512_add_epi32(s, _mm512_mullo_epi32(p, scv[v]));
    }
    return s;
}

/* Four integer sums at once: lane t of the result is the sum of the lanes of v[t] (exact). */
TGT_AVX512 static inline __m128i hsum4_512(const __m512i v[ORK_Q8_ROWS_MAX])
{
    __m256i r[ORK_Q8_ROWS_MAX];
    for (int t = 0; t < ORK_Q8_ROWS_MAX; t++)
        r[t] = _mm256_add_epi32(_mm512_castsi512_si256(v[t]), _mm512_extracti64x4_epi64(v[t], 1));
    __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(r[0], r[1]), _mm256_hadd_epi32(r[2], r[3]));
    return _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
}

/* Up to four X rows at once; the f32 steps of q4k_block_sum / q6k_block_sum run in the lanes of
 * one vector (lane t: X row t), the same operations in the same order. */
TGT_AVX512 static void q8k_rows512(uint32_t type, const uint8_t *w, const uint8_t *xq,
                                   size_t x_stride, int nr, int64_t nb, float *out)
{
    const bool q4 = type == ORK_TYPE_Q4_K;
    const size_t wbytes = q4 ? Q4_K_BYTES : Q6_K_BYTES;
    __m128 acc = _mm_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *blk = w + (size_t)b * wbytes;
        __m512i wv[Q8K_ROWS_VECS], scv[Q8K_ROWS_VECS];
        __m256i wsc16;      /* Q4_K: mins per X block sum; Q6_K: scales per X block sum */
        if (q4)
            q4k_unpack512(blk, wv, scv, &wsc16);
        else
            q6k_unpack512(blk, wv, scv, &wsc16);
        __m512i sl[ORK_Q8_ROWS_MAX], ml[ORK_Q8_ROWS_MAX];
        float dxs[ORK_Q8_ROWS_MAX] = { 0 };
        for (int t = 0; t < ORK_Q8_ROWS_MAX; t++) {
            if (t >= nr) {
                sl[t] = ml[t] = _mm512_setzero_si512();
                continue;
            }
            const uint8_t *xb = xq + (size_t)t * x_stride + (size_t)b * ORK_Q8_K_BYTES;
            memcpy(&dxs[t], xb, sizeof dxs[t]);
            sl[t] = q8k_lanes512(wv, scv, (const int8_t *)(xb + ORK_Q8_K_Q));
            __m256i bs = _mm256_loadu_si256((const __m256i *)(xb + ORK_Q8_K_BSUMS));
            ml[t] = _mm512_castsi256_si512(_mm256_madd_epi16(wsc16, bs));
        }
        __m128i si = hsum4_512(sl), mi = hsum4_512(ml);
        __m128 dx = _mm_loadu_ps(dxs);
        if (q4) {
            __m128 dd = _mm_mul_ps(dx, _mm_set1_ps(f16v_x86(blk)));
            __m128 dm = _mm_mul_ps(dx, _mm_set1_ps(f16v_x86(blk + 2)));
            __m128 ts = _mm_mul_ps(dd, _mm_cvtepi32_ps(si));
            __m128 tm = _mm_mul_ps(dm, _mm_cvtepi32_ps(mi));
            acc = _mm_add_ps(acc, _mm_sub_ps(ts, tm));
        } else {
            /* S - 32 * bias in int32 before the one conversion, as q6k_block_sum's caller */
            si = _mm_sub_epi32(si, _mm_mullo_epi32(mi, _mm_set1_epi32(Q6_K_OFFSET)));
            __m128 dd = _mm_mul_ps(dx, _mm_set1_ps(f16v_x86(blk + Q6_K_D)));
            acc = _mm_add_ps(acc, _mm_mul_ps(dd, _mm_cvtepi32_ps(si)));
        }
    }
    float o[ORK_Q8_ROWS_MAX];
    _mm_storeu_ps(o, acc);
    for (int t = 0; t < nr; t++)
        out[t] = o[t];
}

/* One weight row against one X row (decode): blocks in batches of K1_BATCH, their lane sums
 * reduced together (8 vectors to 8 sums) and the batch's f32 steps in the lanes of one ymm;
 * then the blocks' terms are added to the row's sum one by one in block order, as
 * q4k_block_sum / q6k_block_sum do: faster from DRAM than the AVX2 one-row kernel and than
 * q8k_rows512 with one X row; four weight rows per pass read slower (docs/kernels.md
 * "Measurements behind the code: Q4_K / Q6_K decode on AVX-512"). */
#define K1_BATCH 8

/* Lane t of the result: the sum of the 8 int32 lanes of v[t] (exact). */
TGT_AVX512 static inline __m256i hsum8_256(const __m256i v[K1_BATCH])
{
    __m256i g0 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
    __m256i g1 = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
    /* g0 lane j (j < 4): half of row j's sum in each 128-bit half; g1 the same for rows 4-7 */
    __m256i lo = _mm256_permute2x128_si256(g0, g1, 0x20);
    __m256i hi = _mm256_permute2x128_si256(g0, g1, 0x31);
    return _mm256_add_epi32(lo, hi);
}

TGT_AVX512 static float q8k_row512(uint32_t type, const uint8_t *w, const uint8_t *xq,
                                   int64_t nb)
{
    const bool q4 = type == ORK_TYPE_Q4_K;
    const size_t wbytes = q4 ? Q4_K_BYTES : Q6_K_BYTES;
    float sum = 0.0f;
    for (int64_t b0 = 0; b0 < nb; b0 += K1_BATCH) {
        const int nk = nb - b0 < K1_BATCH ? (int)(nb - b0) : K1_BATCH;
        __m256i sl[K1_BATCH], ml[K1_BATCH];
        float dx[K1_BATCH] = { 0 }, d[K1_BATCH] = { 0 }, dmin[K1_BATCH] = { 0 };
        for (int j = 0; j < K1_BATCH; j++) {
            if (j >= nk) {
                sl[j] = ml[j] = _mm256_setzero_si256();
                continue;
            }
            const uint8_t *blk = w + (size_t)(b0 + j) * wbytes;
            const uint8_t *xb = xq + (size_t)(b0 + j) * ORK_Q8_K_BYTES;
            __m512i wv[Q8K_ROWS_VECS], scv[Q8K_ROWS_VECS];
            __m256i wsc16;
            if (q4) {
                q4k_unpack512(blk, wv, scv, &wsc16);
                d[j] = f16v_x86(blk);
                dmin[j] = f16v_x86(blk + 2);
            } else {
                q6k_unpack512(blk, wv, scv, &wsc16);
                d[j] = f16v_x86(blk + Q6_K_D);
            }
            memcpy(&dx[j], xb, sizeof dx[j]);
            __m512i l = q8k_lanes512(wv, scv, (const int8_t *)(xb + ORK_Q8_K_Q));
            sl[j] = _mm256_add_epi32(_mm512_castsi512_si256(l), _mm512_extracti64x4_epi64(l, 1));
            ml[j] = _mm256_madd_epi16(wsc16,
                                      _mm256_loadu_si256((const __m256i *)(xb + ORK_Q8_K_BSUMS)));
        }
        __m256i si = hsum8_256(sl), mi = hsum8_256(ml);
        __m256 dxv = _mm256_loadu_ps(dx), t;
        if (q4) {
            __m256 dd = _mm256_mul_ps(dxv, _mm256_loadu_ps(d));
            __m256 dm = _mm256_mul_ps(dxv, _mm256_loadu_ps(dmin));
            t = _mm256_sub_ps(_mm256_mul_ps(dd, _mm256_cvtepi32_ps(si)),
                              _mm256_mul_ps(dm, _mm256_cvtepi32_ps(mi)));
        } else {
            si = _mm256_sub_epi32(si, _mm256_mullo_epi32(mi, _mm256_set1_epi32(Q6_K_OFFSET)));
            t = _mm256_mul_ps(_mm256_mul_ps(dxv, _mm256_loadu_ps(d)), _mm256_cvtepi32_ps(si));
        }
        float tv[K1_BATCH];
        _mm256_storeu_ps(tv, t);
        for (int j = 0; j < nk; j++)
            sum = sum + tv[j];
    }
    return sum;
}

/* ork__q8k_rows on this path: the several-row kernel, or the batched one-row one. */
static void q8k_rows_avx512(uint32_t type, const uint8_t *w, const uint8_t *xq, size_t x_stride,
                            int nr, int64_t nb, float *out)
{
    if (nr > 1)
        q8k_rows512(type, w, xq, x_stride, nr, nb, out);
    else
        out[0] = q8k_row512(type, w, xq, nb);
}

void ork__fill_qdot_avx512(struct ork__kern *t)
{
    for (int k = ORK__KT_Q8_0; k <= ORK__KT_Q4_0; k++) {
        t->t[k].q8_blocks = q8_blocks_avx512;
        t->t[k].q8_rows4 = q8_rows_avx512;
    }
    t->t[ORK__KT_Q4_K].q8k_rows = q8k_rows_avx512;
    t->t[ORK__KT_Q6_K].q8k_rows = q8k_rows_avx512;
}
#endif
