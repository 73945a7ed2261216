/* gptq.c -- error-compensating quantisation of one tensor on a per-channel grid (calib.h).
 *
 * The NPU's int8 MAC sums all of K into one int32, so a tensor has one scale per output
 * channel and no group scales (npu-weight-decompression.md §1.8, §2); on a coarse grid
 * round-to-nearest then loses much (docs/dcomp.md "Accuracy on the fixtures"). With the scales
 * fixed, the codes can still be chosen to keep the layer's output close on the inputs it sees:
 * for a row w and inputs x with second moment H = sum x x^T, the output error of a change d of
 * w is d^T H d. Quantising column j fixes d_j = w_j - s q_j; the best change of the columns
 * not yet quantised, given d_j, is -d_j H^-1[j, rest] / H^-1[j, j] (with H^-1 restricted to
 * the columns j.. not yet fixed). Taking the columns in order 0 .. k-1, these restricted
 * inverses are what the rows of the upper Cholesky factor U of H^-1 (H^-1 = U^T U) give:
 * row j of U, over U[j][j], is the update for column j against the columns after it. This is
 * the published GPTQ method's update, written here from its description.
 *
 * Activation order (the same description's variant; ORK__NPU_GPTQ_ORDER_ACT): the columns are
 * taken in order of decreasing H[j][j] instead of 0 .. k-1 (ties: the lower index first;
 * inputs never seen, H[j][j] <= 0, last), i.e. the algorithm above runs on W's columns and H's
 * rows and columns permuted by that order, and the codes are put back in their own columns.
 * With the scales fixed per row beforehand, only which columns absorb the error changes: the
 * inputs with the largest second moment are fixed first, while all others can still correct.
 *
 * Cost: the Cholesky factorisations and the inverse are O(k^3) (in double, plain loops), the
 * updates O(n k^2); timed only at the fixtures' K <= 172. */
#include "calib.h"

#include <ork/alloc.h>
#include <ork/error.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* In-place lower Cholesky factor of the symmetric positive-definite a [k][k] (row-major; the
 * upper triangle is zeroed). -1 when a pivot is not positive. */
static int cholesky_lower(double *a, uint32_t k)
{
    for (uint32_t j = 0; j < k; j++) {
        double d = a[(size_t)j * k + j];
        for (uint32_t p = 0; p < j; p++)
            d -= a[(size_t)j * k + p] * a[(size_t)j * k + p];
        if (!(d > 0.0))
            return -1;
        double ljj = sqrt(d);
        a[(size_t)j * k + j] = ljj;
        for (uint32_t i = j + 1; i < k; i++) {
            double v = a[(size_t)i * k + j];
            for (uint32_t p = 0; p < j; p++)
                v -= a[(size_t)i * k + p] * a[(size_t)j * k + p];
            a[(size_t)i * k + j] = v / ljj;
        }
        for (uint32_t i = 0; i < j; i++)
            a[(size_t)i * k + j] = 0.0;
    }
    return 0;
}

/* inv [k][k] = (L L^T)^-1 from the lower factor l: with M = L^-1 (lower), inv = M^T M. m is
 * scratch of k x k. */
static void inverse_from_lower(const double *l, uint32_t k, double *m, double *inv)
{
    memset(m, 0, (size_t)k * k * sizeof(double));
    for (uint32_t c = 0; c < k; c++) {          /* column c of L^-1: forward substitution */
        m[(size_t)c * k + c] = 1.0 / l[(size_t)c * k + c];
        for (uint32_t i = c + 1; i < k; i++) {
            double v = 0.0;
            for (uint32_t p = c; p < i; p++)
                v -= l[(size_t)i * k + p] * m[(size_t)p * k + c];
            m[(size_t)i * k + c] = v / l[(size_t)i * k + i];
        }
    }
    for (uint32_t i = 0; i < k; i++)
        for (uint32_t j = 0; j <= i; j++) {
            double v = 0.0;                     /* sum over p >= i of M[p][i] M[p][j] */
            for (uint32_t p = i; p < k; p++)
                v += m[(size_t)p * k + i] * m[(size_t)p * k + j];
            inv[(size_t)i * k + j] = v;
            inv[(size_t)j * k + i] = v;
        }
}

/* The damped H in double: diag 0 -> 1 (an input never seen), then + damp * mean(diag). */
static void damped(const float *h, uint32_t k, double *a)
{
    double mean = 0.0;
    for (uint32_t i = 0; i < k; i++)
        for (uint32_t j = 0; j < k; j++)
            a[(size_t)i * k + j] = (double)h[(size_t)i * k + j];
    for (uint32_t j = 0; j < k; j++) {
        if (!(a[(size_t)j * k + j] > 0.0)) {
            for (uint32_t i = 0; i < k; i++)
                a[(size_t)i * k + j] = a[(size_t)j * k + i] = 0.0;
            a[(size_t)j * k + j] = 1.0;
        }
        mean += a[(size_t)j * k + j];
    }
    mean /= (double)k;
    for (uint32_t j = 0; j < k; j++)
        a[(size_t)j * k + j] += ORK__NPU_GPTQ_DAMP * mean;
}

/* One row: codes of w (k) at scale s on [lo, hi], taking column perm[j] at step j, updates
 * through u (upper, row-major, in the permuted order). */
static void gptq_row(const float *w, uint32_t k, const double *u, const uint32_t *perm,
                     int32_t lo, int32_t hi, float s, double *wr, int8_t *q)
{
    const float inv = 1.0f / s;
    for (uint32_t j = 0; j < k; j++)
        wr[j] = (double)w[perm[j]];
    for (uint32_t j = 0; j < k; j++) {
        float v = roundf((float)wr[j] * inv);
        v = v > (float)hi ? (float)hi : (v < (float)lo ? (float)lo : v);
        q[perm[j]] = (int8_t)v;
        const double *uj = u + (size_t)j * k;
        double e = (wr[j] - (double)s * (double)v) / uj[j];
        for (uint32_t l = j + 1; l < k; l++)
            wr[l] -= e * uj[l];
    }
}

struct diag_key {
    double d;
    uint32_t j;
};

/* Decreasing d, then increasing j: a total order, so qsort's result is deterministic. */
static int diag_key_cmp(const void *pa, const void *pb)
{
    const struct diag_key *a = pa, *b = pb;
    if (a->d != b->d)
        return a->d > b->d ? -1 : 1;
    return a->j < b->j ? -1 : (a->j > b->j ? 1 : 0);
}

/* perm [k]: the column order (calib.h). keys: scratch of k. */
static void column_order(const float *h, uint32_t k, enum ork__npu_gptq_order order,
                         struct diag_key *keys, uint32_t *perm)
{
    for (uint32_t j = 0; j < k; j++) {
        float d = h[(size_t)j * k + j];
        keys[j].d = order == ORK__NPU_GPTQ_ORDER_ACT && d > 0.0f ? (double)d : 0.0;
        keys[j].j = j;
    }
    if (order == ORK__NPU_GPTQ_ORDER_ACT)
        qsort(keys, k, sizeof(*keys), diag_key_cmp);
    for (uint32_t j = 0; j < k; j++)
        perm[j] = keys[j].j;
}

int ork__npu_gptq_factor(const float *h, uint32_t k, enum ork__npu_gptq_order order,
                         double *u, uint32_t *perm)
{
    if (!h || !u || !perm || !k ||
        (order != ORK__NPU_GPTQ_ORDER_NATURAL && order != ORK__NPU_GPTQ_ORDER_ACT))
        return ork_errorf(ORK_EINVAL, "gptq: bad arguments (H of k = %u, order %d)", k,
                          (int)order);
    size_t kk = (size_t)k * k;
    double *m = ork_malloc(kk * sizeof(double)), *inv = ork_malloc(kk * sizeof(double));
    struct diag_key *keys = ork_malloc((size_t)k * sizeof(*keys));
    int ret = 0;
    if (!m || !inv || !keys) {
        ret = ORK_ENOMEM;
        goto out;
    }
    column_order(h, k, order, keys, perm);
    damped(h, k, m);
    for (uint32_t i = 0; i < k; i++)            /* u = P^T (H + damp) P */
        for (uint32_t j = 0; j < k; j++)
            u[(size_t)i * k + j] = m[(size_t)perm[i] * k + perm[j]];
    if (cholesky_lower(u, k) < 0) {
        ret = ork_errorf(ORK_ERANGE, "gptq: H (k = %u) is not positive definite after damping "
                         "%g of its mean diagonal", k, ORK__NPU_GPTQ_DAMP);
        goto out;
    }
    inverse_from_lower(u, k, m, inv);
    if (cholesky_lower(inv, k) < 0) {           /* inv = M M^T: U = M^T */
        ret = ork_errorf(ORK_ERANGE, "gptq: H^-1 (k = %u) lost definiteness in rounding", k);
        goto out;
    }
    for (uint32_t i = 0; i < k; i++)
        for (uint32_t j = 0; j < k; j++)
            u[(size_t)i * k + j] = inv[(size_t)j * k + i];
out:
    ork_free(m);
    ork_free(inv);
    ork_free(keys);
    return ret;
}

int ork__npu_gptq_rows(const float *w, uint32_t n, uint32_t k, const double *u,
                       const uint32_t *perm, int32_t lo, int32_t hi, const float *scales,
                       double *wr, int8_t *q)
{
    if (!w || !u || !perm || !scales || !wr || !q || !n || !k || lo > hi || lo < INT8_MIN ||
        hi > INT8_MAX)
        return ork_errorf(ORK_EINVAL, "gptq: bad arguments (%u x %u, grid [%d, %d])", n, k, lo,
                          hi);
    for (uint32_t r = 0; r < n; r++)
        if (!(scales[r] > 0.0f) || !isfinite(scales[r]))
            return ork_errorf(ORK_EINVAL, "gptq: row %u has scale %g (must be > 0)", r,
                              (double)scales[r]);
    for (uint32_t r = 0; r < n; r++)
        gptq_row(w + (size_t)r * k, k, u, perm, lo, hi, scales[r], wr, q + (size_t)r * k);
    return 0;
}

int ork__npu_gptq(const float *w, uint32_t n, uint32_t k, const float *h,
                  enum ork__npu_gptq_order order, int32_t lo, int32_t hi, const float *scales,
                  int8_t *q)
{
    if (!w || !h || !scales || !q || !n || !k || lo > hi || lo < INT8_MIN || hi > INT8_MAX)
        return ork_errorf(ORK_EINVAL, "gptq: bad arguments (%u x %u, grid [%d, %d])", n, k, lo,
                          hi);
    double *u = ork_malloc((size_t)k * k * sizeof(double));
    double *wr = ork_malloc((size_t)k * sizeof(double));
    uint32_t *perm = ork_malloc((size_t)k * sizeof(uint32_t));
    int ret = !u || !wr || !perm ? ORK_ENOMEM : ork__npu_gptq_factor(h, k, order, u, perm);
    if (ret == 0)
        ret = ork__npu_gptq_rows(w, n, k, u, perm, lo, hi, scales, wr, q);
    ork_free(u);
    ork_free(wr);
    ork_free(perm);
    return ret;
}
