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
 * Cost: the Cholesky factorisations and the inverse are O(k^3) (in double), the updates
 * O(n k^2). The loops are ordered so that the innermost one runs over contiguous memory with
 * no reduction (vectorised by the compiler) while every entry sees the same operations in the
 * same order as the textbook dot-product form (the same bits; tests/unit/test_gptq.c checks
 * it against that form), and rows are updated a few at a time. calib.c runs this per diagonal
 * block of H (ork__npu_gptq_blocked, k <= ORK__NPU_GPTQ_BLOCK), which bounds both to
 * O(K B^2) and O(n K B) per tensor (docs/bench-log/2026-12-calib-scale.md). */
#include "calib.h"

#include <ork/alloc.h>
#include <ork/error.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* In-place lower Cholesky factor of the symmetric positive-definite a [k][k] (row-major; the
 * upper triangle is zeroed). -1 when a pivot is not positive. lt: scratch of k x k (column p of
 * L kept contiguous, lt[p][i] = L[i][p]), v: scratch of k. Column j's entries below the
 * diagonal are a[i][j] - sum_{p < j} L[i][p] L[j][p], each summed in increasing p as a dot
 * product would, but with the loop over i innermost: the same operations in the same order
 * for every entry (so the same bits as the row-by-row form), on contiguous memory, so the
 * compiler vectorises it. */
static int cholesky_lower(double *a, uint32_t k, double *lt, double *restrict v)
{
    for (uint32_t j = 0; j < k; j++) {
        double *aj = a + (size_t)j * k;
        double d = aj[j];
        for (uint32_t p = 0; p < j; p++)
            d -= aj[p] * aj[p];
        if (!(d > 0.0))
            return -1;
        double ljj = sqrt(d);
        aj[j] = ljj;
        for (uint32_t i = j + 1; i < k; i++)
            v[i] = a[(size_t)i * k + j];
        for (uint32_t p = 0; p < j; p++) {
            const double c = aj[p];
            const double *restrict lp = lt + (size_t)p * k;
            for (uint32_t i = j + 1; i < k; i++)
                v[i] -= lp[i] * c;
        }
        double *lj = lt + (size_t)j * k;
        for (uint32_t i = j + 1; i < k; i++) {
            double x = v[i] / ljj;
            a[(size_t)i * k + j] = x;
            lj[i] = x;
        }
        for (uint32_t i = 0; i < j; i++)
            a[(size_t)i * k + j] = 0.0;
    }
    return 0;
}

/* inv [k][k] = (L L^T)^-1 from the lower factor l: with M = L^-1 (lower), inv = M^T M. m is
 * scratch of k x k. Both products keep each entry's sum in increasing p (as the column-wise
 * forward substitution and the dot products would) with the innermost loop over a row's
 * entries: row i of M is -sum_{p < i} L[i][p] M[p][.] / L[i][i], and row i of inv (j <= i)
 * is sum_{p >= i} M[p][i] M[p][j]. */
static void inverse_from_lower(const double *l, uint32_t k, double *m, double *inv)
{
    memset(m, 0, (size_t)k * k * sizeof(double));
    for (uint32_t i = 0; i < k; i++) {
        double *restrict mi = m + (size_t)i * k;
        const double *li = l + (size_t)i * k;
        for (uint32_t p = 0; p < i; p++) {
            const double c = li[p];
            const double *restrict mp = m + (size_t)p * k;
            for (uint32_t col = 0; col <= p; col++)
                mi[col] -= c * mp[col];
        }
        for (uint32_t col = 0; col < i; col++)
            mi[col] = mi[col] / li[i];
        mi[i] = 1.0 / li[i];
    }
    for (uint32_t i = 0; i < k; i++) {
        double *restrict vi = inv + (size_t)i * k;
        for (uint32_t j = 0; j <= i; j++)
            vi[j] = 0.0;
        for (uint32_t p = i; p < k; p++) {
            const double a = m[(size_t)p * k + i];
            const double *restrict mp = m + (size_t)p * k;
            for (uint32_t j = 0; j <= i; j++)
                vi[j] += a * mp[j];
        }
        for (uint32_t j = 0; j < i; j++)
            inv[(size_t)j * k + i] = vi[j];
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

/* Rows quantised together by gptq_rows4: each step's update row U[j] is read once for all of
 * them (4: four running rows of a 512-column block, 16 KiB, stay in L1 next to U's row). */
#define GPTQ_ROWS_AT_ONCE 4
_Static_assert(GPTQ_ROWS_AT_ONCE <= ORK__NPU_GPTQ_ROWS_SCRATCH_ROWS,
               "ork__npu_gptq_plan_rows_wr's scratch holds the rows taken together");

/* One step's code of wr[j] at scale s on [lo, hi], and the error to spread, over U[j][j]. */
static inline double gptq_step(double *wr, uint32_t j, const double *uj, float s, float inv,
                               int32_t lo, int32_t hi, int8_t *qj)
{
    float v = roundf((float)wr[j] * inv);
    v = v > (float)hi ? (float)hi : (v < (float)lo ? (float)lo : v);
    *qj = (int8_t)v;
    return (wr[j] - (double)s * (double)v) / uj[j];
}

/* One row: codes of w (k) at scale s on [lo, hi], taking column perm[j] at step j, updates
 * through u (upper, row-major, in the permuted order). */
static void gptq_row(const float *w, uint32_t k, const double *u, const uint32_t *perm,
                     int32_t lo, int32_t hi, float s, double *restrict wr, int8_t *q)
{
    const float inv = 1.0f / s;
    for (uint32_t j = 0; j < k; j++)
        wr[j] = (double)w[perm[j]];
    for (uint32_t j = 0; j < k; j++) {
        const double *restrict uj = u + (size_t)j * k;
        double e = gptq_step(wr, j, uj, s, inv, lo, hi, &q[perm[j]]);
        for (uint32_t l = j + 1; l < k; l++)
            wr[l] -= e * uj[l];
    }
}

/* GPTQ_ROWS_AT_ONCE rows (w, q with row stride ld) at once: every row's operations are
 * gptq_row's, in its order (the same bits), only interleaved. wr: scratch of 4 k. */
static void gptq_rows4(const float *w, size_t ld, uint32_t k, const double *u,
                       const uint32_t *perm, int32_t lo, int32_t hi, const float *s,
                       double *wr, int8_t *q)
{
    double *restrict w0 = wr, *restrict w1 = wr + k, *restrict w2 = wr + 2 * (size_t)k,
                     *restrict w3 = wr + 3 * (size_t)k;
    const float i0 = 1.0f / s[0], i1 = 1.0f / s[1], i2 = 1.0f / s[2], i3 = 1.0f / s[3];
    for (uint32_t j = 0; j < k; j++) {
        w0[j] = (double)w[perm[j]];
        w1[j] = (double)w[ld + perm[j]];
        w2[j] = (double)w[2 * ld + perm[j]];
        w3[j] = (double)w[3 * ld + perm[j]];
    }
    for (uint32_t j = 0; j < k; j++) {
        const double *restrict uj = u + (size_t)j * k;
        const uint32_t c = perm[j];
        double e0 = gptq_step(w0, j, uj, s[0], i0, lo, hi, &q[c]);
        double e1 = gptq_step(w1, j, uj, s[1], i1, lo, hi, &q[ld + c]);
        double e2 = gptq_step(w2, j, uj, s[2], i2, lo, hi, &q[2 * ld + c]);
        double e3 = gptq_step(w3, j, uj, s[3], i3, lo, hi, &q[3 * ld + c]);
        for (uint32_t l = j + 1; l < k; l++) {
            const double x = uj[l];
            w0[l] -= e0 * x;
            w1[l] -= e1 * x;
            w2[l] -= e2 * x;
            w3[l] -= e3 * x;
        }
    }
}

/* n rows of k columns, rows at stride ld in w and q (wr: scratch of GPTQ_ROWS_AT_ONCE k). */
static void gptq_rows_ld(const float *w, size_t ld, uint32_t n, uint32_t k, const double *u,
                         const uint32_t *perm, int32_t lo, int32_t hi, const float *scales,
                         double *wr, int8_t *q)
{
    uint32_t r = 0;
    for (; r + GPTQ_ROWS_AT_ONCE <= n; r += GPTQ_ROWS_AT_ONCE)
        gptq_rows4(w + r * ld, ld, k, u, perm, lo, hi, scales + r, wr, q + r * ld);
    for (; r < n; r++)
        gptq_row(w + r * ld, k, u, perm, lo, hi, scales[r], wr, q + r * ld);
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
    double *v = ork_malloc((size_t)k * sizeof(double));
    struct diag_key *keys = ork_malloc((size_t)k * sizeof(*keys));
    int ret = 0;
    if (!m || !inv || !v || !keys) {
        ret = ORK_ENOMEM;
        goto out;
    }
    column_order(h, k, order, keys, perm);
    damped(h, k, m);
    for (uint32_t i = 0; i < k; i++)            /* u = P^T (H + damp) P */
        for (uint32_t j = 0; j < k; j++)
            u[(size_t)i * k + j] = m[(size_t)perm[i] * k + perm[j]];
    if (cholesky_lower(u, k, m, v) < 0) {       /* m: scratch here */
        ret = ork_errorf(ORK_ERANGE, "gptq: H (k = %u) is not positive definite after damping "
                         "%g of its mean diagonal", k, ORK__NPU_GPTQ_DAMP);
        goto out;
    }
    inverse_from_lower(u, k, m, inv);
    if (cholesky_lower(inv, k, m, v) < 0) {     /* inv = M M^T: U = M^T */
        ret = ork_errorf(ORK_ERANGE, "gptq: H^-1 (k = %u) lost definiteness in rounding", k);
        goto out;
    }
    for (uint32_t i = 0; i < k; i++)
        for (uint32_t j = 0; j < k; j++)
            u[(size_t)i * k + j] = inv[(size_t)j * k + i];
out:
    ork_free(m);
    ork_free(inv);
    ork_free(v);
    ork_free(keys);
    return ret;
}

static int check_rows(uint32_t n, uint32_t k, int32_t lo, int32_t hi, const float *scales)
{
    if (!n || !k || lo > hi || lo < INT8_MIN || hi > INT8_MAX)
        return ork_errorf(ORK_EINVAL, "gptq: bad arguments (%u x %u, grid [%d, %d])", n, k, lo,
                          hi);
    for (uint32_t r = 0; r < n; r++)
        if (!(scales[r] > 0.0f) || !isfinite(scales[r]))
            return ork_errorf(ORK_EINVAL, "gptq: row %u has scale %g (must be > 0)", r,
                              (double)scales[r]);
    return 0;
}

int ork__npu_gptq_rows(const float *w, uint32_t n, uint32_t k, const double *u,
                       const uint32_t *perm, int32_t lo, int32_t hi, const float *scales,
                       double *wr, int8_t *q)
{
    if (!w || !u || !perm || !scales || !wr || !q)
        return ork_errorf(ORK_EINVAL, "gptq: bad arguments (%u x %u, grid [%d, %d])", n, k, lo,
                          hi);
    int ret = check_rows(n, k, lo, hi, scales);
    if (ret < 0)
        return ret;
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

/* ---- block-diagonal H (calib.h) ----------------------------------------------------------- */

size_t ork__npu_gptq_block_off(uint32_t k, uint32_t b)
{
    /* blocks before b are all full (B x B) */
    (void)k;
    return (size_t)b * ORK__NPU_GPTQ_BLOCK * ORK__NPU_GPTQ_BLOCK;
}

size_t ork__npu_gptq_hb_floats(uint32_t k)
{
    uint32_t nb = ork__npu_gptq_n_blocks(k), last = ork__npu_gptq_block_k(k, nb - 1);
    return ork__npu_gptq_block_off(k, nb - 1) + (size_t)last * last;
}

void ork__npu_gptq_plan_fini(struct ork__npu_gptq_plan *p)
{
    ork_free(p->u);
    ork_free(p->perm);
    ork_free(p->wr);
    memset(p, 0, sizeof(*p));
}

int ork__npu_gptq_plan_init(struct ork__npu_gptq_plan *p, const float *hb, uint32_t k,
                            enum ork__npu_gptq_order order)
{
    memset(p, 0, sizeof(*p));
    if (!hb || !k)
        return ork_errorf(ORK_EINVAL, "gptq: bad arguments (H of k = %u)", k);
    p->k = k;
    p->nb = ork__npu_gptq_n_blocks(k);
    size_t nh = ork__npu_gptq_hb_floats(k);
    uint32_t b0 = ork__npu_gptq_block_k(k, 0);
    if (!(p->u = ork_malloc(nh * sizeof(double))) ||
        !(p->perm = ork_malloc((size_t)k * sizeof(uint32_t))) ||
        !(p->wr = ork_malloc((size_t)ORK__NPU_GPTQ_ROWS_SCRATCH_ROWS * b0 * sizeof(double)))) {
        ork__npu_gptq_plan_fini(p);
        return ORK_ENOMEM;
    }
    for (uint32_t b = 0; b < p->nb; b++) {
        size_t off = ork__npu_gptq_block_off(k, b);
        int ret = ork__npu_gptq_factor(hb + off, ork__npu_gptq_block_k(k, b), order,
                                       p->u + off, p->perm + (size_t)b * ORK__NPU_GPTQ_BLOCK);
        if (ret < 0) {
            ork__npu_gptq_plan_fini(p);
            return ret;
        }
    }
    return 0;
}

int ork__npu_gptq_plan_rows(struct ork__npu_gptq_plan *p, const float *w, uint32_t n,
                            int32_t lo, int32_t hi, const float *scales, int8_t *q)
{
    return ork__npu_gptq_plan_rows_wr(p, w, n, lo, hi, scales, p ? p->wr : NULL, q);
}

int ork__npu_gptq_plan_rows_wr(const struct ork__npu_gptq_plan *p, const float *w, uint32_t n,
                               int32_t lo, int32_t hi, const float *scales, double *wr,
                               int8_t *q)
{
    if (!p || !p->u || !w || !scales || !wr || !q)
        return ork_errorf(ORK_EINVAL, "gptq: bad arguments (%u rows)", n);
    int ret = check_rows(n, p->k, lo, hi, scales);
    if (ret < 0)
        return ret;
    for (uint32_t b = 0; b < p->nb; b++) {
        size_t c0 = (size_t)b * ORK__NPU_GPTQ_BLOCK;
        gptq_rows_ld(w + c0, p->k, n, ork__npu_gptq_block_k(p->k, b),
                     p->u + ork__npu_gptq_block_off(p->k, b), p->perm + c0, lo, hi, scales,
                     wr, q + c0);
    }
    return 0;
}

int ork__npu_gptq_blocked(const float *w, uint32_t n, uint32_t k, const float *hb,
                          enum ork__npu_gptq_order order, int32_t lo, int32_t hi,
                          const float *scales, int8_t *q)
{
    if (!w || !hb || !scales || !q || !n || !k)
        return ork_errorf(ORK_EINVAL, "gptq: bad arguments (%u x %u, grid [%d, %d])", n, k, lo,
                          hi);
    struct ork__npu_gptq_plan p;
    int ret = ork__npu_gptq_plan_init(&p, hb, k, order);
    if (ret == 0)
        ret = ork__npu_gptq_plan_rows(&p, w, n, lo, hi, scales, q);
    ork__npu_gptq_plan_fini(&p);
    return ret;
}
