/* x86/kv_rows_avx2.c -- the AVX2 attention loops over KV rows (the avx2 and avxvnni paths):
 * ork_vec_dot_rows two F32 / F16 rows per pass, ork_vec_mad_rows with y kept in registers
 * across the rows. Each row's dot takes exactly the lanes, operations and reduction of
 * ork_vec_dot, each y element the operations of nr ork_vec_mad calls (dot.c "several rows at
 * once"), so the bits are those of the one-row kernels. */
#include <stdint.h>
#include <string.h>

#include "x86_priv.h"

#ifdef ORK_KERN_X86

/* Rows per pass: 2 rows x 4 ymm accumulators + 4 x registers (of 16). */
#define ROWS_256 2
/* Floats of y kept in registers by ork_vec_mad_rows: 8 ymm (enough independent add chains for
 * two adds per cycle at a 4-cycle latency). */
#define MAD_REGS 8
_Static_assert(ROWS_256 <= ORK_KV_ROWS_MAX, "kv_dot output rows");

ORK_TGT_AVX2 static void dot2_avx2(uint32_t type, const uint8_t *const *r, const float *x, int64_t n,
                              float *out)
{
    __m256 s[ROWS_256][4];
    for (int k = 0; k < ROWS_256; k++)
        for (int g = 0; g < 4; g++)
            s[k][g] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + ORK_DOT_LANES <= n; i += ORK_DOT_LANES)
        for (int g = 0; g < 4; g++) {
            __m256 xv = _mm256_loadu_ps(x + i + 8 * g);
            for (int k = 0; k < ROWS_256; k++)
                s[k][g] = _mm256_fmadd_ps(ork__load8_256(r[k], type, i + 8 * g), xv, s[k][g]);
        }
    for (int k = 0; k < ROWS_256; k++)
        out[k] = ork__acc_end_256(_mm256_add_ps(s[k][0], s[k][1]), _mm256_add_ps(s[k][2], s[k][3]),
                             ork__dot_tail(r[k], type, x, i, n));
}

ORK_TGT_AVX2 static void mad_rows_avx2(float *y, const uint8_t *v, size_t stride, uint32_t type,
                                  const float *a, int64_t nr, int64_t n)
{
    const int64_t W = 8;
    const size_t elt = ork__elt_bytes(type);
    int64_t i = 0;
    for (; i + MAD_REGS * W <= n; i += MAD_REGS * W) {
        __m256 acc[MAD_REGS];
        for (int g = 0; g < MAD_REGS; g++)
            acc[g] = _mm256_loadu_ps(y + i + W * g);
        for (int64_t t = 0; t < nr; t++) {
            __m256 va = _mm256_set1_ps(a[t]);
            const uint8_t *row = v + (size_t)t * stride;
            if (t + ORK_KV_PREFETCH_ROWS < nr)
                ork__prefetch_bytes(row + (size_t)ORK_KV_PREFETCH_ROWS * stride + (size_t)i * elt,
                               (size_t)(MAD_REGS * W) * elt);
            for (int g = 0; g < MAD_REGS; g++)
                acc[g] = _mm256_add_ps(acc[g], _mm256_mul_ps(va, ork__load8_256(row, type, i + W * g)));
        }
        for (int g = 0; g < MAD_REGS; g++)
            _mm256_storeu_ps(y + i + W * g, acc[g]);
    }
    for (; i + W <= n; i += W) {
        __m256 acc = _mm256_loadu_ps(y + i);
        for (int64_t t = 0; t < nr; t++)
            acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_set1_ps(a[t]),
                                                   ork__load8_256(v + (size_t)t * stride, type, i)));
        _mm256_storeu_ps(y + i, acc);
    }
    ork__mad_rows_tail(y, v, stride, type, a, nr, i, n);
}

static void kv_dot_avx2(uint32_t type, const uint8_t *const *r, const float *const *x, int nq,
                        int64_t n, float (*out)[ORK_KV_ROWS_MAX])
{
    (void)nq;       /* kv_queries = 1 */
    dot2_avx2(type, r, x[0], n, out[0]);
}

static void kv_mad_avx2(float *const *y, const uint8_t *v, size_t sb, uint32_t type,
                        const float *const *a, int nq, int64_t nr, int64_t n)
{
    for (int q = 0; q < nq; q++)
        mad_rows_avx2(y[q], v, sb, type, a[q], nr, n);
}

void ork__fill_kv_rows_avx2(struct ork__kern *t)
{
    t->kv_dot = kv_dot_avx2;
    t->kv_rows = ROWS_256;
    t->kv_queries = 1;
    t->kv_mad = kv_mad_avx2;
}
#endif
