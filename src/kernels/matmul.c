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
 * same accumulator in chunks). No allocation per call.
 *
 * ORK_ACT_QUANT (ork_matmul_act): each thread converts X, a tile of rows at a time, into a stack
 * buffer (Q8_0 blocks for Q8_0/Q4_0 weights, f16/bf16-rounded values for F16/BF16 weights) and
 * runs its weight rows against the tile; every thread converts all of X, which costs M*K
 * against the M*K*N/nth of its share of the matmul. Y[m][n] = ork_vec_dot_act(W[n], X[m]). */
#include <stdbool.h>
#include <stdint.h>

#include <ork/error.h>
#include <ork-kernels/kernels.h>
#include <ork-kernels/pool.h>

#include "kern_priv.h"

/* Longest row dequantized whole on the stack: 16384 f32 = 64 KiB per thread (covers the FFN
 * widths of 1-8B models); longer rows are dequantized in chunks for every X row instead. */
#define MM_ROW_MAX 16384
/* Stack bytes for a tile of Q8_0-quantized X rows (ORK_ACT_QUANT): 64 KiB, one row up to
 * K = 61680; longer rows are converted per output in chunks (ork_vec_dot_act). */
#define MM_XQ_BYTES 65536
#define Q8_0_BLOCK 32
#define Q8_0_BYTES 34
/* Below this many X rows, F16/BF16/Q8_0/Q4_0 rows are widened in registers for every X row
 * (ork_vec_dot) instead of once into the row buffer. */
#define MM_FUSED_M_MAX 4
/* Rows of X dotted with one weight row per kernel call (the weight blocks are loaded and
 * unpacked once for all of them). */
#define MM_NR ORK_Q8_ROWS_MAX

struct mm_job {
    const struct ork_mat *w;
    const float *x;
    int64_t m;
    float *y;
    enum ork_act act;
};

/* Per output element through the chunked single-dot path (rows too long for the tiles). */
static void mm_rows_pairs(const struct mm_job *j, int64_t r0, int64_t r1)
{
    const struct ork_mat *w = j->w;
    const int64_t k = w->n_cols, n = w->n_rows;
    for (int64_t r = r0; r < r1; r++)
        for (int64_t i = 0; i < j->m; i++)
            j->y[i * n + r] = ork_vec_dot_act(w->type,
                                              (const uint8_t *)w->data + (size_t)r * w->row_bytes,
                                              j->x + i * k, k, j->act);
}

/* Q8_0 / Q4_0 weights with X quantized to Q8_0, Q4_K / Q6_K weights with X quantized to Q8_K,
 * M-tile by M-tile: the X tile stays in L2 while each weight row of the thread's range is read
 * once per tile and dotted with the tile's rows (ork__q8_rows reuses each weight block across
 * up to MM_NR rows of X). */
__attribute__((noinline))
static void mm_rows_q8(const struct mm_job *j, int64_t r0, int64_t r1)
{
    const struct ork_mat *w = j->w;
    const int64_t k = w->n_cols, n = w->n_rows;
    const bool kq = w->type == ORK_TYPE_Q4_K || w->type == ORK_TYPE_Q6_K;
    const int64_t blk = kq ? ORK_Q8_K_BLOCK : Q8_0_BLOCK;
    const size_t rq = (size_t)(k / blk) * (kq ? ORK_Q8_K_BYTES : Q8_0_BYTES);
    if (rq > MM_XQ_BYTES || rq == 0) {
        mm_rows_pairs(j, r0, r1);
        return;
    }
    const enum kisa isa = ork__kisa();
    uint8_t xq[MM_XQ_BYTES];
    const int64_t mt = (int64_t)(MM_XQ_BYTES / rq);
    for (int64_t m0 = 0; m0 < j->m; m0 += mt) {
        int64_t mc = j->m - m0 < mt ? j->m - m0 : mt;
        for (int64_t i = 0; i < mc; i++) {
            if (kq)
                ork_quantize_row_q8_k(j->x + (m0 + i) * k, xq + (size_t)i * rq, k);
            else
                ork_quantize_row_q8_0(j->x + (m0 + i) * k, xq + (size_t)i * rq, k);
        }
        for (int64_t r = r0; r < r1; r++) {
            const uint8_t *row = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
            if (kq) {
                for (int64_t i = 0; i < mc; i++) {
                    float sum = 0.0f;
                    ork__q8k_blocks(isa, w->type, row, xq + (size_t)i * rq, k / blk, &sum);
                    j->y[(m0 + i) * n + r] = sum;
                }
                continue;
            }
            for (int64_t i = 0; i < mc; i += MM_NR) {
                int nr = mc - i < MM_NR ? (int)(mc - i) : MM_NR;
                float out[MM_NR];
                ork__q8_rows(isa, w->type, row, xq + (size_t)i * rq, rq, nr, k / blk, out);
                for (int t = 0; t < nr; t++)
                    j->y[(m0 + i + t) * n + r] = out[t];
            }
        }
    }
}

/* F16 / BF16 weights with X rounded to the weight's 16-bit type, M-tile by M-tile. */
__attribute__((noinline))
static void mm_rows_round16(const struct mm_job *j, int64_t r0, int64_t r1)
{
    const struct ork_mat *w = j->w;
    const int64_t k = w->n_cols, n = w->n_rows;
    if (k > MM_ROW_MAX || k == 0) {
        mm_rows_pairs(j, r0, r1);
        return;
    }
    float xr[MM_ROW_MAX], buf[MM_ROW_MAX];
    const int64_t mt = MM_ROW_MAX / k;
    for (int64_t m0 = 0; m0 < j->m; m0 += mt) {
        int64_t mc = j->m - m0 < mt ? j->m - m0 : mt;
        const float *xs = j->x + m0 * k;
        for (int64_t e = 0; e < mc * k; e++)
            xr[e] = w->type == ORK_TYPE_F16 ? ork_fp16_to_f32(ork_f32_to_fp16(xs[e]))
                                             : ork_bf16_to_f32(ork_f32_to_bf16(xs[e]));
        for (int64_t r = r0; r < r1; r++) {
            ork_dequant_row(w->type, (const uint8_t *)w->data + (size_t)r * w->row_bytes, buf, k);
            for (int64_t i = 0; i < mc; i++)
                j->y[(m0 + i) * n + r] = ork_vec_dot_f32(buf, xr + i * k, k);
        }
    }
}

__attribute__((noinline))
static void mm_rows_f32act(const struct mm_job *j, int64_t r0, int64_t r1)
{
    const struct ork_mat *w = j->w;
    const int64_t k = w->n_cols, n = w->n_rows, m = j->m;
    const uint8_t *base = w->data;
    const bool fused = w->type == ORK_TYPE_F16 || w->type == ORK_TYPE_BF16 ||
                       w->type == ORK_TYPE_Q8_0 || w->type == ORK_TYPE_Q4_0;
    float buf[MM_ROW_MAX];

    for (int64_t r = r0; r < r1; r++) {
        const uint8_t *row = base + (size_t)r * w->row_bytes;
        const float *wr;
        if (w->type == ORK_TYPE_F32) {
            wr = (const float *)row;
        } else if (m < MM_FUSED_M_MAX && fused) {
            /* few X rows: widen in registers for each (same bits, no buffer round trip) */
            for (int64_t i = 0; i < m; i++)
                j->y[i * n + r] = ork_vec_dot(w->type, row, j->x + i * k, k);
            continue;
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

static void mm_rows(const struct mm_job *j, int64_t r0, int64_t r1)
{
    uint32_t t = j->w->type;
    if (j->act == ORK_ACT_QUANT && (t == ORK_TYPE_Q8_0 || t == ORK_TYPE_Q4_0 ||
                                    t == ORK_TYPE_Q4_K || t == ORK_TYPE_Q6_K))
        mm_rows_q8(j, r0, r1);
    else if (j->act == ORK_ACT_QUANT && (t == ORK_TYPE_F16 || t == ORK_TYPE_BF16))
        mm_rows_round16(j, r0, r1);
    else
        mm_rows_f32act(j, r0, r1);
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

int ork_matmul_act(struct ork_pool *pool, const struct ork_mat *w, const float *x, int64_t m,
                   float *y, enum ork_act act)
{
    int ret = check_mat(w);
    if (ret < 0)
        return ret;
    if (m < 0)
        return ork_errorf(ORK_EINVAL, "matmul with M = %lld", (long long)m);
    if (m == 0 || w->n_rows == 0)
        return 0;
    if (act != ORK_ACT_F32 && act != ORK_ACT_QUANT)
        return ork_errorf(ORK_EINVAL, "matmul: unknown activation mode %d", (int)act);
    struct mm_job job = { .w = w, .x = x, .m = m, .y = y, .act = act };
    if (pool && ork_pool_threads(pool) > 1 && w->n_rows > 1)
        ork_pool_run(pool, mm_thread, &job);
    else
        mm_rows(&job, 0, w->n_rows);
    return 0;
}

int ork_matmul(struct ork_pool *pool, const struct ork_mat *w, const float *x, int64_t m, float *y)
{
    return ork_matmul_act(pool, w, x, m, y, ORK_ACT_F32);
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
