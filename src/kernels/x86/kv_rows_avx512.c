/* x86/kv_rows_avx512.c -- the AVX-512 attention loops over KV rows (the avx512vnni path):
 * ork_vec_dot_rows four F32 / F16 rows per pass against one or two queries (the GQA heads
 * sharing a KV head, the rows loaded once for both), ork_vec_mad_rows with y in zmm registers
 * across the rows. Same per-row bits as the one-row kernels (dot.c "several rows at once"). */
#include <stdint.h>
#include <string.h>

#include "x86_priv.h"

#ifdef ORK_KERN_X86

/* Rows per pass: 4 rows x 2 zmm accumulators + 2 x registers (of 32). */
#define ROWS_512 4
/* Floats of y kept in registers by ork_vec_mad_rows: 8 zmm (enough independent add chains
 * for two adds per cycle at a 4-cycle latency). */
#define MAD_REGS 8
_Static_assert(ROWS_512 == ORK_KV_ROWS_MAX, "kv_dot output rows");

/* ROWS_512 rows against nq (1 or 2, constant when inlined) queries x[q]: out[q][k], each the
 * lanes, tail and reduction of one row's dot; the rows are loaded once for both queries. */
ORK_TGT_512F static inline __attribute__((always_inline)) void
dot4q_avx512(uint32_t type, const uint8_t *const *r, const float *const *x, int nq, int64_t n,
             float (*out)[ROWS_512])
{
    __m512 s[ORK_KV_QUERIES_MAX][ROWS_512][2];
    for (int q = 0; q < nq; q++)
        for (int k = 0; k < ROWS_512; k++)
            s[q][k][0] = s[q][k][1] = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + ORK_DOT_LANES <= n; i += ORK_DOT_LANES) {
        __m512 x0[ORK_KV_QUERIES_MAX], x1[ORK_KV_QUERIES_MAX];
        for (int q = 0; q < nq; q++) {
            x0[q] = _mm512_loadu_ps(x[q] + i);
            x1[q] = _mm512_loadu_ps(x[q] + i + 16);
        }
        for (int k = 0; k < ROWS_512; k++) {
            const __m512 w0 = ork__load16_512(r[k], type, i), w1 = ork__load16_512(r[k], type, i + 16);
            for (int q = 0; q < nq; q++) {
                s[q][k][0] = _mm512_fmadd_ps(w0, x0[q], s[q][k][0]);
                s[q][k][1] = _mm512_fmadd_ps(w1, x1[q], s[q][k][1]);
            }
        }
    }
    for (int q = 0; q < nq; q++)
        for (int k = 0; k < ROWS_512; k++)
            out[q][k] = ork__acc_end_512(s[q][k][0], s[q][k][1], ork__dot_tail(r[k], type, x[q], i, n));
}

ORK_TGT_512F static void dot4_avx512(uint32_t type, const uint8_t *const *r, const float *x,
                                    int64_t n, float *out)
{
    dot4q_avx512(type, r, &x, 1, n, (float (*)[ROWS_512])out);
}

ORK_TGT_512F static void dot4x2_avx512(uint32_t type, const uint8_t *const *r,
                                      const float *const *x, int64_t n, float (*out)[ROWS_512])
{
    dot4q_avx512(type, r, x, 2, n, out);
}

/* nq (1 or 2, constant when inlined) weight vectors a[q] over the same rows into y[q]: each
 * the operations of mad_rows for its own y, the rows loaded once for both. */
ORK_TGT_512F static inline __attribute__((always_inline)) void
mad_rowsq_avx512(float *const *y, const uint8_t *v, size_t stride, uint32_t type,
                 const float *const *a, int nq, int64_t nr, int64_t n)
{
    const int64_t W = 16;
    const size_t elt = ork__elt_bytes(type);
    int64_t i = 0;
    for (; i + MAD_REGS * W <= n; i += MAD_REGS * W) {
        __m512 acc[ORK_KV_QUERIES_MAX][MAD_REGS];
        for (int q = 0; q < nq; q++)
            for (int g = 0; g < MAD_REGS; g++)
                acc[q][g] = _mm512_loadu_ps(y[q] + i + W * g);
        for (int64_t t = 0; t < nr; t++) {
            __m512 va[ORK_KV_QUERIES_MAX];
            for (int q = 0; q < nq; q++)
                va[q] = _mm512_set1_ps(a[q][t]);
            const uint8_t *row = v + (size_t)t * stride;
            if (t + ORK_KV_PREFETCH_ROWS < nr)
                ork__prefetch_bytes(row + (size_t)ORK_KV_PREFETCH_ROWS * stride + (size_t)i * elt,
                               (size_t)(MAD_REGS * W) * elt);
            for (int g = 0; g < MAD_REGS; g++) {
                const __m512 w = ork__load16_512(row, type, i + W * g);
                for (int q = 0; q < nq; q++)
                    acc[q][g] = _mm512_add_ps(acc[q][g], _mm512_mul_ps(va[q], w));
            }
        }
        for (int q = 0; q < nq; q++)
            for (int g = 0; g < MAD_REGS; g++)
                _mm512_storeu_ps(y[q] + i + W * g, acc[q][g]);
    }
    for (; i + W <= n; i += W)
        for (int q = 0; q < nq; q++) {
            __m512 acc = _mm512_loadu_ps(y[q] + i);
            for (int64_t t = 0; t < nr; t++)
                acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_set1_ps(a[q][t]),
                                                       ork__load16_512(v + (size_t)t * stride, type, i)));
            _mm512_storeu_ps(y[q] + i, acc);
        }
    for (int q = 0; q < nq; q++)
        ork__mad_rows_tail(y[q], v, stride, type, a[q], nr, i, n);
}

ORK_TGT_512F static void mad_rows_avx512(float *y, const uint8_t *v, size_t stride, uint32_t type,
                                        const float *a, int64_t nr, int64_t n)
{
    mad_rowsq_avx512(&y, v, stride, type, &a, 1, nr, n);
}

ORK_TGT_512F static void mad_rows2_avx512(float *const *y, const uint8_t *v, size_t stride,
                                         uint32_t type, const float *const *a, int64_t nr,
                                         int64_t n)
{
    mad_rowsq_avx512(y, v, stride, type, a, 2, nr, n);
}

static void kv_dot_avx512(uint32_t type, const uint8_t *const *r, const float *const *x, int nq,
                          int64_t n, float (*out)[ORK_KV_ROWS_MAX])
{
    if (nq == 2)
        dot4x2_avx512(type, r, x, n, out);
    else
        dot4_avx512(type, r, x[0], n, out[0]);
}

static void kv_mad_avx512(float *const *y, const uint8_t *v, size_t sb, uint32_t type,
                          const float *const *a, int nq, int64_t nr, int64_t n)
{
    if (nq == 2)
        mad_rows2_avx512(y, v, sb, type, a, nr, n);
    else
        mad_rows_avx512(y[0], v, sb, type, a[0], nr, n);
}

void ork__fill_kv_rows_avx512(struct ork__kern *t)
{
    t->kv_dot = kv_dot_avx512;
    t->kv_rows = ROWS_512;
    t->kv_queries = ORK_KV_QUERIES_MAX;
    t->kv_mad = kv_mad_avx512;
}
#endif
