/* matmul.c -- Y[M][N] = X[M][K] * W^T on the CPU for every supported weight type, split over
 * a persistent thread pool, and embedding row lookup. Not here: the per-element arithmetic
 * (dot.c, quant_ref.c) or the threads themselves (pool.c).
 *
 * Work split: the N weight rows are cut into nth contiguous ranges, one per pool thread, so a
 * weight row is read by exactly one thread. Each thread walks its rows; for a quantized or
 * 16-bit row it dequantizes the row once into a stack buffer and then dots it with all M rows
 * of X, so weights stream from memory once per call whatever M is.
 *
 * Result: Y[m][n] = ork_vec_dot_f32(dequant(W[n]), X[m]) -- the same bits for any thread count,
 * any M, and rows longer than the stack buffer (those go through ork_vec_dot, which feeds the
 * same accumulator in chunks). No allocation per call. */
#include <stdint.h>

#include <ork/error.h>
#include <ork-kernels/kernels.h>
#include <ork-kernels/pool.h>

/* Longest row dequantized whole on the stack: 16384 f32 = 64 KiB per thread (covers the FFN
 * widths of 1-8B models); longer rows are dequantized in chunks for every X row instead. */
#define MM_ROW_MAX 16384

struct mm_job {
    const struct ork_mat *w;
    const float *x;
    int64_t m;
    float *y;
};

static void mm_rows(const struct mm_job *j, int64_t r0, int64_t r1)
{
    const struct ork_mat *w = j->w;
    const int64_t k = w->n_cols, n = w->n_rows, m = j->m;
    const uint8_t *base = w->data;
    float buf[MM_ROW_MAX];

    for (int64_t r = r0; r < r1; r++) {
        const uint8_t *row = base + (size_t)r * w->row_bytes;
        const float *wr;
        if (w->type == ORK_TYPE_F32) {
            wr = (const float *)row;
        } else if (k <= MM_ROW_MAX) {
            ork_dequant_row(w->type, row, buf, k);
            wr = buf;
        } else {
            for (int64_t i = 0; i < m; i++)
                j->y[i * n + r] = ork_vec_dot(w->type, row, j->x + i * k, k);
            continue;
        }
        for (int64_t i = 0; i < m; i++)
            j->y[i * n + r] = ork_vec_dot_f32(wr, j->x + i * k, k);
    }
}

static void mm_thread(void *ctx, int ith, int nth)
{
    const struct mm_job *j = ctx;
    int64_t n = j->w->n_rows;
    int64_t per = (n + nth - 1) / nth;
    int64_t r0 = per * ith;
    int64_t r1 = r0 + per < n ? r0 + per : n;
    if (r0 < r1)
        mm_rows(j, r0, r1);
}

static int check_mat(const struct ork_mat *w)
{
    if (!w || !w->data)
        return ork_errorf(ORK_EINVAL, "matrix without data");
    int ret = ork_kernels_check(w->type, w->n_cols);
    if (ret < 0)
        return ret;
    if (w->n_rows < 0)
        return ork_errorf(ORK_EINVAL, "matrix with %lld rows", (long long)w->n_rows);
    size_t need = ork_type_row_bytes(w->type, (uint64_t)w->n_cols);
    if (w->row_bytes < need)
        return ork_errorf(ORK_EINVAL, "%s matrix: row stride %zu < %zu bytes for %lld elements",
                          ork_type_name(w->type), w->row_bytes, need, (long long)w->n_cols);
    return 0;
}

int ork_matmul(struct ork_pool *pool, const struct ork_mat *w, const float *x, int64_t m, float *y)
{
    int ret = check_mat(w);
    if (ret < 0)
        return ret;
    if (m < 0)
        return ork_errorf(ORK_EINVAL, "matmul with M = %lld", (long long)m);
    if (m == 0 || w->n_rows == 0)
        return 0;
    struct mm_job job = { .w = w, .x = x, .m = m, .y = y };
    if (pool && ork_pool_threads(pool) > 1 && w->n_rows > 1)
        ork_pool_run(pool, mm_thread, &job);
    else
        mm_rows(&job, 0, w->n_rows);
    return 0;
}

int ork_get_row(const struct ork_mat *w, int64_t row, float *dst)
{
    int ret = check_mat(w);
    if (ret < 0)
        return ret;
    if (row < 0 || row >= w->n_rows)
        return ork_errorf(ORK_ERANGE, "row %lld out of range (%lld rows)", (long long)row,
                          (long long)w->n_rows);
    return ork_dequant_row(w->type, (const uint8_t *)w->data + (size_t)row * w->row_bytes, dst,
                           w->n_cols);
}
