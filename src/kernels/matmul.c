/* matmul.c -- Y[M][N] = X[M][K] * W^T on the CPU for every supported weight type, split over
 * a persistent thread pool, and embedding row lookup. Not here: the per-element arithmetic
 * (dot.c, quant_ref.c) or the threads themselves (pool.c).
 *
 * Work split: for M > 1 the N weight rows are cut into work items of whole panels that the
 * threads take from an atomic counter (ork_pool_run_shared: a worker that has not started when
 * the caller runs out of items is released); for decode (M = 1) each thread streams spans of
 * its own share and steals from the others at the end (below). Either way a weight row is read
 * by exactly one thread. Each thread walks its rows; for a quantized or 16-bit row it
 * dequantizes the row once into a stack buffer and then dots it with all M rows of X, so
 * weights stream from memory once per call whatever M is.
 * (F32 activations and F16/BF16 weights keep nth contiguous ranges, one per thread.)
 *
 * Result: Y[m][n] = ork_vec_dot_f32(dequant(W[n]), X[m]) -- the same bits for any thread count,
 * any M, and rows longer than the stack buffer (those go through ork_vec_dot, which feeds the
 * same accumulator in chunks). No allocation per call.
 *
 * ORK_ACT_QUANT (ork_matmul_act, ork_matmul_act_multi): for Q8_0/Q4_0/Q4_K/Q6_K weights X is
 * quantized ONCE per call into the pool's scratch buffer (ork_pool_scratch), the threads
 * quantizing rows ith::nth in a first pool run when X is large enough to pay for it, and then
 * all threads read it: on x86-64 as packed rows for the register-tiled kernel (gemm_q8.c),
 * elsewhere as Q8_0 / Q8_K blocks for the one-row dots (qdot.c). With no pool, X is quantized
 * a tile of rows at a time into a stack buffer. F16/BF16 weights round X per thread into a
 * stack tile. Y[m][n] = ork_vec_dot_act(W[n], X[m]) bit for bit in every case.
 *
 * ork_matmul_act_multi: several matrices with the same K and one X; their rows are laid end
 * to end and split over the threads as one matrix, with one quantization of X.
 *
 * Interleaved matrices (ORK_LAYOUT_X16, x16.c): with ORK_ACT_QUANT on a path that has their
 * kernels, X takes their form (XF_X16) and rows are split in whole groups of 16 (spans, claims,
 * steals and work items in units of mm_unit(j)); anywhere else each row is read back into the
 * GGUF layout on the stack (ork__mat_row) and takes the row-layout code. */
#include <stdatomic.h>
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
/* Weight rows x X rows of one ork__dot16_tile call (its limits, kern_priv.h). */
#define MM_TILE16_NW 3
#define MM_TILE16_MX 4

/* Form of the X copy shared by the threads (ORK_ACT_QUANT). */
enum xform {
    XF_NONE = 0,    /* none: each thread converts X itself (F16/BF16 rounding, F32 X) */
    XF_Q8_0,        /* Q8_0 blocks, rq bytes a row */
    XF_Q8_K,        /* Q8_K blocks */
    XF_PACK,        /* packed rows of the tiled kernel (ork__xpack_rows) */
    XF_X16,         /* the interleaved Q8_0 / Q4_0 kernels' X form (ork__x16_xprep) */
    XF_X16K,        /* the interleaved Q4_K kernels' X form (ork__x16k_xprep) */
};

static bool xf_interleaved(enum xform xf)
{
    return xf == XF_X16 || xf == XF_X16K;
}

/* Largest plain row read back from an interleaved matrix (ork__mat_row) on the stack: the
 * packer's limit (x16.c). */
#define MM_X16_ROW_BYTES (64u << 10)

struct mm_job {
    const struct ork_mat *w;
    const float *x;
    int64_t m;
    float *y;
    enum ork_act act;
};

/* Several matrices against one X, rows split over the threads (ork_matmul_act_multi). */
struct mm_multi {
    const struct ork_mat *const *w;
    float *const *y;
    int n_w;
    int64_t rows;           /* sum of the matrices' rows */
    const float *x;
    int64_t m, k;
    enum xform xf;
    enum kisa isa;
    uint8_t *xs;            /* shared X (xf != XF_NONE) */
    size_t xrow;            /* bytes per row of xs */
    uint8_t *panels;        /* XF_PACK: one panel buffer per thread */
    size_t panel_bytes;
    int64_t chunk;          /* rows per work item (a multiple of ORK_GEMM_NW and unit) */
    atomic_int_fast64_t next;   /* first row not yet taken */
    /* decode (stolen spans, below): per thread one line of spans, streams per thread, rows
     * claimed per stream at a time */
    struct mm_spans *spans;
    int streams;
    int64_t claim;
    bool wkern;             /* the path has a decode stream kernel (ork__q8_wstreams) */
    /* read-ahead (ork_matmul_act_multi_next): the next call's matrices, and the threads
     * still inside their spans work */
    const struct ork_mat *const *ahead;
    int n_ahead;
    atomic_int running;
};

/* Rows are split between threads only in multiples of this: whole groups of an interleaved
 * matrix, else single rows. */
static int64_t unit_of(enum xform xf)
{
    return xf_interleaved(xf) ? ORK_X16_ROWS : 1;
}

static int64_t mm_unit(const struct mm_multi *j)
{
    return unit_of(j->xf);
}

/* Per output element through the chunked single-dot path (rows too long for the tiles). */
static void mm_rows_pairs(const struct mm_job *j, int64_t r0, int64_t r1)
{
    const struct ork_mat *w = j->w;
    const int64_t k = w->n_cols, n = w->n_rows;
    uint8_t rbuf[MM_X16_ROW_BYTES];
    for (int64_t r = r0; r < r1; r++) {
        const uint8_t *row = ork__mat_row(w, r, rbuf);
        for (int64_t i = 0; i < j->m; i++)
            j->y[i * n + r] = ork_vec_dot_act(w->type, row, j->x + i * k, k, j->act);
    }
}

/* Rows [r0, r1) against the rounded X rows m0 .. m0 + mc - 1 in register tiles (weights widened
 * in registers, no row buffer); false when the path has no tile kernel. */
static bool tile16_rows(const struct mm_job *j, int64_t r0, int64_t r1, const float *xr,
                        int64_t m0, int64_t mc)
{
    const struct ork_mat *w = j->w;
    const int64_t k = w->n_cols, n = w->n_rows;
    const enum kisa isa = ork__kisa();
    for (int64_t r = r0; r < r1; r += MM_TILE16_NW)
        for (int64_t i = 0; i < mc; i += MM_TILE16_MX) {
            int nw = r1 - r < MM_TILE16_NW ? (int)(r1 - r) : MM_TILE16_NW;
            int mx = mc - i < MM_TILE16_MX ? (int)(mc - i) : MM_TILE16_MX;
            if (!ork__dot16_tile(isa, w->type, (const uint8_t *)w->data + (size_t)r * w->row_bytes,
                                 w->row_bytes, nw, xr + i * k, (size_t)k, mx, k,
                                 j->y + (m0 + i) * n + r, (size_t)n))
                return false;
        }
    return true;
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
        ork__round_act(w->type, j->x + m0 * k, xr, mc * k);
        if (tile16_rows(j, r0, r1, xr, m0, mc))
            continue;
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
    const bool fused = w->type == ORK_TYPE_F16 || w->type == ORK_TYPE_BF16 ||
                       w->type == ORK_TYPE_Q8_0 || w->type == ORK_TYPE_Q4_0;
    float buf[MM_ROW_MAX];
    uint8_t rbuf[MM_X16_ROW_BYTES];

    for (int64_t r = r0; r < r1; r++) {
        const uint8_t *row = ork__mat_row(w, r, rbuf);
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
        mm_rows_pairs(j, r0, r1);   /* rows too long for any X tile (multi_stack) */
    else if (j->act == ORK_ACT_QUANT && (t == ORK_TYPE_F16 || t == ORK_TYPE_BF16))
        mm_rows_round16(j, r0, r1);
    else
        mm_rows_f32act(j, r0, r1);
}

/* ---- X quantized once, shared by the threads ---------------------------------------------- */

/* Fewest X rows for the tiled kernel: with fewer the weight panel's repacking is not paid
 * back and the one-row dots read the weights directly (measured, docs/kernels.md). */
#define MM_GEMM_M_MIN 2

static enum xform xform_of(const struct ork_mat *w, enum ork_act act, enum kisa isa, int64_t m)
{
    const uint32_t type = w->type;
    if (act != ORK_ACT_QUANT)
        return XF_NONE;
    if (w->layout == ORK_LAYOUT_X16)
        /* else rows read back one at a time */
        return !ork__x16_ok(isa, type)                           ? XF_NONE
               : type == ORK_TYPE_Q4_K || type == ORK_TYPE_Q6_K ? XF_X16K /* Q6_K: its quants */
                                                                : XF_X16;
    if (type == ORK_TYPE_Q8_0 || type == ORK_TYPE_Q4_0)
        return ork__gemm_q8_ok(isa, type) && m >= MM_GEMM_M_MIN ? XF_PACK : XF_Q8_0;
    if (type == ORK_TYPE_Q4_K || type == ORK_TYPE_Q6_K)
        return XF_Q8_K;
    return XF_NONE;
}

/* Streams a decode call over the n_w matrices w (X form xf) reads side by side: its stream
 * kernel's width (the smallest of the matrices' types: Q8_0 beside Q4_0 share the interleaved
 * X form), 0 when the path has no stream kernel for them. */
static int stream_width(enum kisa isa, enum xform xf, const struct ork_mat *const *w, int n_w)
{
    if (xf == XF_Q8_0)
        return ork__q8_wstreams_width(isa, w[0]->type);
    if (!xf_interleaved(xf))
        return 0;
    int width = ork__x16_streams_width(isa, w[0]->type);
    for (int q = 1; q < n_w; q++) {
        int wq = ork__x16_streams_width(isa, w[q]->type);
        width = wq < width ? wq : width;
    }
    return width;
}

static size_t xrow_bytes(enum xform xf, int64_t k)
{
    switch (xf) {
    case XF_PACK: return ork__xpack_row_bytes(k);
    case XF_X16: return ork__x16_xrow_bytes(k);
    case XF_X16K: return ork__x16k_xrow_bytes(k);
    case XF_Q8_0: return (size_t)(k / Q8_0_BLOCK) * Q8_0_BYTES;
    case XF_Q8_K: return (size_t)(k / ORK_Q8_K_BLOCK) * ORK_Q8_K_BYTES;
    default: return 0;
    }
}

static size_t align_up(size_t v)
{
    return (v + ORK_GEMM_ALIGN - 1) / ORK_GEMM_ALIGN * ORK_GEMM_ALIGN;
}

/* Quantize X rows [i0, i1) into the shared copy (rows xrow bytes apart from xs). */
static void quant_rows(const struct mm_multi *j, const float *x, int64_t i0, int64_t i1,
                       uint8_t *xs)
{
    if (j->xf == XF_PACK) {
        ork__xpack_rows(j->isa, x + i0 * j->k, j->k, i1 - i0, xs + (size_t)i0 * j->xrow);
        return;
    }
    for (int64_t i = i0; i < i1; i++) {
        if (j->xf == XF_X16)
            ork__x16_xprep(j->isa, x + i * j->k, j->k, xs + (size_t)i * j->xrow);
        else if (j->xf == XF_X16K)
            ork__x16k_xprep(j->isa, x + i * j->k, j->k, xs + (size_t)i * j->xrow);
        else if (j->xf == XF_Q8_0)
            ork__quantize_q8_0(j->isa, x + i * j->k, xs + (size_t)i * j->xrow, j->k);
        else
            ork__quantize_q8_k(j->isa, x + i * j->k, xs + (size_t)i * j->xrow, j->k);
    }
}

static void quant_thread(void *ctx, int ith, int nth)
{
    const struct mm_multi *j = ctx;
    int64_t per = (j->m + nth - 1) / nth;
    int64_t i0 = per * ith, i1 = i0 + per < j->m ? i0 + per : j->m;
    if (i0 < i1)
        quant_rows(j, j->x, i0, i1, j->xs);
}

/* Weight rows [r0, r1) of w against the m quantized X rows at xs; Y row stride ldy. */
static void shared_rows(const struct mm_multi *j, const struct ork_mat *w, const uint8_t *xs,
                        int64_t m, float *y, int64_t ldy, int64_t r0, int64_t r1, uint8_t *panel)
{
    if (j->xf == XF_PACK) {
        ork__gemm_q8(j->isa, w, r0, r1, xs, m, y, ldy, panel);
        return;
    }
    if (xf_interleaved(j->xf)) {
        (void)ork__x16_gemm(j->isa, w->type, (const uint8_t *)w->data + (size_t)r0 * w->row_bytes,
                            w->row_bytes, r1 - r0, xs, j->xrow, m, y + r0, ldy);  /* XF_X16: ok */
        return;
    }
    const int64_t blk = j->xf == XF_Q8_K ? ORK_Q8_K_BLOCK : Q8_0_BLOCK, nb = j->k / blk;
    const size_t rq = j->xrow;
    if (j->xf == XF_Q8_0 && m == 1 &&
        ork__q8_wrows(j->isa, w->type, (const uint8_t *)w->data + (size_t)r0 * w->row_bytes,
                      w->row_bytes, r1 - r0, xs, nb, y + r0))
        return;     /* decode: X prepared once for all rows */
    /* X in tiles of MM_XQ_BYTES so a tile stays in L2 while the rows meet it */
    int64_t mt = rq ? (int64_t)(MM_XQ_BYTES / rq) : 1;
    mt = mt < 1 ? 1 : mt;
    for (int64_t m0 = 0; m0 < m; m0 += mt) {
        int64_t mc = m - m0 < mt ? m - m0 : mt;
        const uint8_t *xt = xs + (size_t)m0 * rq;
        for (int64_t r = r0; r < r1; r++) {
            const uint8_t *row = (const uint8_t *)w->data + (size_t)r * w->row_bytes;
            for (int64_t i = 0; i < mc; i += MM_NR) {
                int nr = mc - i < MM_NR ? (int)(mc - i) : MM_NR;
                float out[MM_NR];
                if (j->xf == XF_Q8_K)
                    ork__q8k_rows(j->isa, w->type, row, xt + (size_t)i * rq, rq, nr, nb, out);
                else
                    ork__q8_rows(j->isa, w->type, row, xt + (size_t)i * rq, rq, nr, nb, out);
                for (int t = 0; t < nr; t++)
                    y[(m0 + i + t) * ldy + r] = out[t];
            }
        }
    }
}

/* Global rows [g0, g1) of the matrices laid end to end. */
static void multi_rows(const struct mm_multi *j, int64_t g0, int64_t g1, uint8_t *panel)
{
    int64_t off = 0;
    for (int q = 0; q < j->n_w && off < g1; q++) {
        const struct ork_mat *w = j->w[q];
        int64_t lo = g0 > off ? g0 : off, hi = g1 < off + w->n_rows ? g1 : off + w->n_rows;
        if (lo < hi) {
            if (j->xf == XF_NONE) {
                struct mm_job job = { .w = w, .x = j->x, .m = j->m, .y = j->y[q],
                                      .act = ORK_ACT_QUANT };
                mm_rows(&job, lo - off, hi - off);
            } else {
                shared_rows(j, w, j->xs, j->m, j->y[q], w->n_rows, lo - off, hi - off, panel);
            }
        }
        off += w->n_rows;
    }
}

/* ---- decode: spans of rows with stealing ----------------------------------------------- *
 *
 * A decode matmul (M = 1) streams every weight byte once and does little else, so what counts
 * is that every thread streams until the very end. Work items from a counter leave one thread
 * alone for up to an item at the end of every matmul: at two threads that was 10-16 % of the
 * matmul time (instrumented ork bench tg64 at t=2; 2.5-3 % with spans, docs/kernels.md
 * "Threads" for the end-to-end effect). Instead each thread starts with an equal share of the
 * rows as `streams` spans (the streams its decode kernel reads side by side,
 * ork__q8_wstreams_width) and claims `claim` rows from the front of each in turn; a thread
 * whose spans are empty steals the back half of the longest span left anywhere (all of it when
 * that is short), splits it into its own spans and goes on. A span is one atomic word
 * (first row, end row), changed only by compare-and-swap, so every row is claimed once: by
 * its owner from the front or by a thief from the back. A thread returns only when no span
 * has rows left, so a worker that never started (ork_pool_run_shared releases it) has had its
 * rows stolen. */

/* Bytes of weights a thread claims per stream at a time. Each claim is a locked
 * compare-and-swap, which the streaming kernel pays for as a pause in its loads: with 64 KiB
 * claims the swap instruction alone held ~2 % of the decode matmul's samples (perf, Q4_0 tg128
 * at two threads). 256 KiB claims decoded fastest of the sizes tried (docs/kernels.md
 * "Measurements behind the code: claim size"): the threads' later finish (one claim of the
 * other's at most) costs less than the swaps saved. */
#define MM_CLAIM_BYTES (256u << 10)
#define MM_SPAN_LINE 64
/* Spans hold 32-bit row numbers; matrices with more rows take the work items. */
#define MM_SPAN_ROWS_MAX INT32_MAX

struct mm_spans {
    _Alignas(MM_SPAN_LINE) atomic_uint_fast64_t s[ORK_WSTREAMS_MAX];
};
_Static_assert(sizeof(struct mm_spans) == MM_SPAN_LINE, "one line of spans per thread");

static uint64_t span_pack(int64_t lo, int64_t hi)
{
    return (uint64_t)lo | (uint64_t)hi << 32;
}

static int64_t span_lo(uint64_t v) { return (int64_t)(v & 0xffffffffu); }
static int64_t span_hi(uint64_t v) { return (int64_t)(v >> 32); }

static int64_t round_up(int64_t v, int64_t unit)
{
    return (v + unit - 1) / unit * unit;
}

/* Span t of `streams` over rows [lo, hi): equal parts of whole units, the last one shorter
 * (empty ones at hi). */
static void span_part(int64_t lo, int64_t hi, int streams, int64_t unit, int t, int64_t *a,
                      int64_t *b)
{
    int64_t part = round_up((hi - lo + streams - 1) / streams, unit);
    *a = lo + t * part < hi ? lo + t * part : hi;
    *b = *a + part < hi ? *a + part : hi;
}

/* Thread ith's first share of `rows` rows among nth threads: [*lo, *hi), whole units. */
static void thread_share(int64_t rows, int nth, int ith, int64_t unit, int64_t *lo, int64_t *hi)
{
    int64_t per = round_up((rows + nth - 1) / nth, unit);
    *lo = per * ith < rows ? per * ith : rows;
    *hi = *lo + per < rows ? *lo + per : rows;
}

/* Rows [lo, hi) spread over the `streams` spans of sp (span_part). */
static void spans_set(struct mm_spans *sp, int streams, int64_t unit, int64_t lo, int64_t hi)
{
    for (int t = 0; t < streams; t++) {
        int64_t a, b;
        span_part(lo, hi, streams, unit, t, &a, &b);
        atomic_store_explicit(&sp->s[t], span_pack(a, b), memory_order_relaxed);
    }
}

/* Of the n_w matrices w laid end to end, the one holding global row g: its index, and its
 * first global row in *off. */
static int mat_at(const struct ork_mat *const *w, int n_w, int64_t g, int64_t *off)
{
    int64_t o = 0;
    int q = 0;
    while (q + 1 < n_w && g >= o + w[q]->n_rows)
        o += w[q++]->n_rows;
    *off = o;
    return q;
}

static int mat_of(const struct mm_multi *j, int64_t g, int64_t *off)
{
    return mat_at(j->w, j->n_w, g, off);
}

/* Claims up to j->claim rows from the front of span a, not past the end of their matrix:
 * the first in *g0, the count returned (0 when the span is empty). */
static int64_t span_claim(const struct mm_multi *j, atomic_uint_fast64_t *a, int64_t *g0)
{
    uint64_t v = atomic_load_explicit(a, memory_order_relaxed);
    for (;;) {
        int64_t lo = span_lo(v), hi = span_hi(v);
        if (lo >= hi)
            return 0;
        int64_t off, n = hi - lo < j->claim ? hi - lo : j->claim;
        int q = mat_of(j, lo, &off);
        if (lo + n > off + j->w[q]->n_rows)
            n = off + j->w[q]->n_rows - lo;
        if (atomic_compare_exchange_weak_explicit(a, &v, span_pack(lo + n, hi),
                                                  memory_order_relaxed, memory_order_relaxed)) {
            *g0 = lo;
            return n;
        }
    }
}

/* One claim from each of this thread's spans; Q8_0 / Q4_0 ones of one type read side by side
 * by the stream kernel when the path has one (j->wkern), the others through multi_rows; false
 * when all spans are empty. */
static bool spans_step(const struct mm_multi *j, struct mm_spans *mine, uint8_t *panel)
{
    struct ork__wstream ws[ORK_WSTREAMS_MAX];
    const struct ork_mat *w0 = NULL;
    int ns = 0;
    bool any = false;
    for (int t = 0; t < j->streams; t++) {
        int64_t g0, off, n = span_claim(j, &mine->s[t], &g0);
        if (n == 0)
            continue;
        any = true;
        int q = mat_of(j, g0, &off);
        const struct ork_mat *w = j->w[q];
        /* every matrix of the job takes its X form (ork_matmul_act_multi), so the path's
         * stream kernel reads any of them; one call reads streams of one type and length */
        if (j->wkern && (!w0 || (w->type == w0->type && w->row_bytes == w0->row_bytes))) {
            w0 = w;
            ws[ns++] = (struct ork__wstream){
                .w = (const uint8_t *)w->data + (size_t)(g0 - off) * w->row_bytes, .n = n,
                .out = j->y[q] + (g0 - off) };
        } else {
            multi_rows(j, g0, g0 + n, panel);
        }
    }
    if (ns > 0 && xf_interleaved(j->xf))
        (void)ork__x16_streams(j->isa, w0->type, ws, ns, w0->row_bytes, j->xs); /* j->wkern */
    else if (ns > 0)
        (void)ork__q8_wstreams(j->isa, w0->type, ws, ns, w0->row_bytes, j->xs,
                               j->k / Q8_0_BLOCK);   /* present: j->wkern */
    return any;
}

/* Steals the back half of the longest span of any thread (all of it when at most `claim` rows
 * per stream are left) into this thread's empty spans; false when no span has rows left. */
static bool spans_steal(const struct mm_multi *j, int nth, struct mm_spans *mine)
{
    for (;;) {
        atomic_uint_fast64_t *best = NULL;
        uint64_t bv = 0;
        int64_t brem = 0;
        for (int i = 0; i < nth; i++)
            for (int t = 0; t < j->streams; t++) {
                atomic_uint_fast64_t *a = &j->spans[i].s[t];
                uint64_t v = atomic_load_explicit(a, memory_order_relaxed);
                if (span_hi(v) - span_lo(v) > brem) {
                    best = a, bv = v;
                    brem = span_hi(v) - span_lo(v);
                }
            }
        if (!best)
            return false;
        int64_t take = brem <= j->claim * j->streams ? brem : round_up(brem / 2, mm_unit(j));
        int64_t hi = span_hi(bv);
        if (atomic_compare_exchange_strong_explicit(best, &bv, span_pack(span_lo(bv), hi - take),
                                                    memory_order_relaxed,
                                                    memory_order_relaxed)) {
            spans_set(mine, j->streams, mm_unit(j), hi - take, hi);
            return true;
        }
    }
}

/* Read-ahead. A thread whose rows have all been claimed waits for the others' last claims
 * (up to a claim per stream; docs/kernels.md "Measurements behind the code: read-ahead").
 * Meanwhile it reads the start of its
 * share of the caller's next matrices, the rows its spans will claim first there (spans_plan's
 * split for that call), into its caches: the cores' memory streams keep going
 * across the call boundary. Up to MM_AHEAD_BYTES per stream, a chunk of MM_AHEAD_CHUNK per
 * stream between two looks at `running`. It makes the real decode faster (docs/kernels.md
 * "Measurements behind the code: read-ahead"). */
#define MM_AHEAD_BYTES (256u << 10)
#define MM_AHEAD_CHUNK 1024u

static void read_ahead(const struct mm_multi *j, int ith, int nth)
{
    if (!j->n_ahead)
        return;
    int64_t rows = 0;
    for (int q = 0; q < j->n_ahead; q++)
        rows += j->ahead[q]->n_rows;
    /* the next call's own spans (spans_plan): its X form and stream width, which need not be
     * this call's (a Q6_K matrix after an interleaved Q4_K one); spans run with quantized X */
    const enum xform nxf = xform_of(j->ahead[0], ORK_ACT_QUANT, j->isa, j->m);
    const int64_t unit = unit_of(nxf);
    const int width = stream_width(j->isa, nxf, j->ahead, j->n_ahead);
    const int streams = width > 0 ? width : 1;
    int64_t lo, hi;
    thread_share(rows, nth, ith, unit, &lo, &hi);
    const uint8_t *at[ORK_WSTREAMS_MAX];
    size_t len[ORK_WSTREAMS_MAX];
    for (int t = 0; t < streams; t++) {
        int64_t a, b, off;
        span_part(lo, hi, streams, unit, t, &a, &b);
        /* the matrix holding row a; the stream stops at its end */
        const struct ork_mat *w = j->ahead[mat_at(j->ahead, j->n_ahead, a, &off)];
        int64_t end = b < off + w->n_rows ? b : off + w->n_rows;
        at[t] = (const uint8_t *)w->data + (size_t)(a - off) * w->row_bytes;
        len[t] = a < end ? (size_t)(end - a) * w->row_bytes : 0;
        if (len[t] > MM_AHEAD_BYTES)
            len[t] = MM_AHEAD_BYTES;
    }
    const struct ork__kern *rk = ork__kern(j->isa);
    uint64_t sum = 0;
    for (size_t o = 0; o < MM_AHEAD_BYTES; o += MM_AHEAD_CHUNK) {
        if (atomic_load_explicit(&j->running, memory_order_relaxed) == 0)
            break;
        for (int t = 0; t < streams; t++)
            if (o < len[t])
                sum += ork__read_sum(rk, at[t] + o, len[t] - o < MM_AHEAD_CHUNK ? len[t] - o
                                                                                  : MM_AHEAD_CHUNK);
    }
    __asm__ __volatile__("" : : "r"(sum));   /* the sum is live: the loads stay */
}

static void spans_thread(void *ctx, int ith, int nth)
{
    struct mm_multi *j = ctx;
    uint8_t *panel = j->panels ? j->panels + (size_t)ith * j->panel_bytes : NULL;
    struct mm_spans *mine = &j->spans[ith];
    atomic_fetch_add_explicit(&j->running, 1, memory_order_relaxed);
    do {
        while (spans_step(j, mine, panel))
            ;
    } while (spans_steal(j, nth, mine));
    atomic_fetch_sub_explicit(&j->running, 1, memory_order_relaxed);
    read_ahead(j, ith, nth);
}

/* Sets up the spans: thread i's equal share of the rows over its streams. */
static void spans_plan(struct mm_multi *j, int nth)
{
    const int width = stream_width(j->isa, j->xf, j->w, j->n_w);
    j->wkern = width > 0;
    j->streams = width > 0 ? width : 1;
    int64_t rb = (int64_t)j->w[0]->row_bytes;
    j->claim = rb > 0 && rb < (int64_t)MM_CLAIM_BYTES ? (int64_t)MM_CLAIM_BYTES / rb : 1;
    const int64_t unit = mm_unit(j);
    j->claim = j->claim < unit ? unit : j->claim / unit * unit;
    for (int i = 0; i < nth; i++) {
        int64_t lo, hi;
        thread_share(j->rows, nth, i, unit, &lo, &hi);
        spans_set(&j->spans[i], j->streams, unit, lo, hi);
    }
}

/* Work items per thread (M > 1; decode takes spans): the rows are cut into about this many
 * chunks per thread, taken in turn from an atomic counter, so a thread that is slowed (another
 * process on its core, a little core of a big.LITTLE SoC, page faults) takes fewer of them
 * instead of holding up the others at the end of the run. The tiled prefill kernel streams its
 * X chunk once per item, so it takes few, large ones; the one-row kernels (K-quant prefill,
 * paths without the tiled kernel) take the same count. History of the decode split, which used
 * items before the spans (16, 4, 2 or 1 per thread, shrinking items): docs/kernels.md
 * "Threads". */
#define MM_ITEMS_PER_THREAD_ROWS 4
#define MM_ITEMS_PER_THREAD_TILED 4

static int64_t round_panels(int64_t rows)
{
    return (rows + ORK_GEMM_NW - 1) / ORK_GEMM_NW * ORK_GEMM_NW;
}

/* Rows per work item for nth threads: whole panels, so only a matrix's last panel is ragged. */
static void plan_items(struct mm_multi *j, int nth)
{
    int per_thread = j->xf == XF_PACK ? MM_ITEMS_PER_THREAD_TILED : MM_ITEMS_PER_THREAD_ROWS;
    int64_t items = (int64_t)nth * per_thread;
    int64_t c = round_up(round_panels((j->rows + items - 1) / items), mm_unit(j));
    j->chunk = c > 0 ? c : round_up(ORK_GEMM_NW, mm_unit(j));
}

/* Takes the next item: its first row in *g0 and its row count, 0 when none is left. */
static int64_t take_item(struct mm_multi *j, int64_t *g0)
{
    int64_t cur = atomic_fetch_add_explicit(&j->next, j->chunk, memory_order_relaxed);
    if (cur >= j->rows)
        return 0;
    *g0 = cur;
    return j->rows - cur < j->chunk ? j->rows - cur : j->chunk;
}

static void multi_thread(void *ctx, int ith, int nth)
{
    struct mm_multi *j = ctx;
    (void)nth;
    uint8_t *panel = j->panels ? j->panels + (size_t)ith * j->panel_bytes : NULL;
    int64_t g0, c;
    while ((c = take_item(j, &g0)) > 0)
        multi_rows(j, g0, g0 + c, panel);
}

/* Below this many X elements (M * K) the caller's thread quantizes X alone: a pool run costs
 * more than the work (decode, M = 1). */
#define MM_QUANT_PAR_MIN 32768
/* Weight panel on the stack when there is no pool scratch (ork__gemm_panel_bytes: 4 rows of
 * K = 8192 take ~37 KiB); longer rows go through the one-row kernels. */
#define MM_PANEL_STACK (40u << 10)

/* No shared scratch (no pool, or no memory): X quantized a tile of rows at a time on this
 * thread's stack, each tile run against all rows of all matrices. */
static void multi_stack(struct mm_multi *j)
{
    if (j->xf == XF_PACK && (ork__gemm_panel_bytes(j->k) > MM_PANEL_STACK ||
                             ork__xpack_row_bytes(j->k) * ORK_GEMM_MX > MM_XQ_BYTES)) {
        j->xf = XF_Q8_0;        /* rows too long for the stack tiles of the tiled kernel */
        j->xrow = xrow_bytes(j->xf, j->k);
    }
    if (j->xrow > MM_XQ_BYTES) {
        /* not even one row fits: the chunked single-dot path */
        for (int q = 0; q < j->n_w; q++) {
            struct mm_job job = { .w = j->w[q], .x = j->x, .m = j->m, .y = j->y[q],
                                  .act = ORK_ACT_QUANT };
            mm_rows(&job, 0, j->w[q]->n_rows);
        }
        return;
    }
    _Alignas(ORK_GEMM_ALIGN) uint8_t xt[MM_XQ_BYTES];
    _Alignas(ORK_GEMM_ALIGN) uint8_t panel[MM_PANEL_STACK];
    int64_t mt = (int64_t)(MM_XQ_BYTES / j->xrow);
    if (j->xf == XF_PACK)
        mt -= mt % ORK_GEMM_MX;
    for (int64_t m0 = 0; m0 < j->m; m0 += mt) {
        int64_t mc = j->m - m0 < mt ? j->m - m0 : mt;
        quant_rows(j, j->x + m0 * j->k, 0, mc, xt);
        for (int q = 0; q < j->n_w; q++) {
            int64_t n = j->w[q]->n_rows;
            shared_rows(j, j->w[q], xt, mc, j->y[q] + m0 * n, n, 0, n, panel);
        }
    }
}

static void run_multi(struct ork_pool *pool, struct mm_multi *j)
{
    const int nth = pool ? ork_pool_threads(pool) : 1;
    if (j->xf != XF_NONE) {
        j->xrow = xrow_bytes(j->xf, j->k);
        j->panel_bytes = j->xf == XF_PACK ? align_up(ork__gemm_panel_bytes(j->k)) : 0;
        size_t xbytes = align_up(j->xrow * (size_t)j->m);
        size_t pbytes = (size_t)nth * j->panel_bytes;
        bool spans = nth > 1 && j->m == 1 && j->rows <= MM_SPAN_ROWS_MAX;
        size_t sbytes = spans ? (size_t)nth * sizeof(struct mm_spans) : 0;
        uint8_t *s = pool ? ork_pool_scratch(pool, xbytes + pbytes + sbytes) : NULL;
        if (!s) {
            multi_stack(j);
            return;
        }
        j->xs = s;
        j->panels = j->xf == XF_PACK ? s + xbytes : NULL;
        j->spans = spans ? (struct mm_spans *)(void *)(s + xbytes + pbytes) : NULL;
        if (nth > 1 && j->m * j->k >= MM_QUANT_PAR_MIN && j->m > 1)
            ork_pool_run(pool, quant_thread, j);
        else
            quant_rows(j, j->x, 0, j->m, j->xs);
    }
    if (j->spans) {
        spans_plan(j, nth);
        ork_pool_run_shared(pool, spans_thread, j);
        return;
    }
    plan_items(j, nth);
    atomic_store_explicit(&j->next, 0, memory_order_relaxed);
    if (nth > 1 && j->rows > 1)
        ork_pool_run_shared(pool, multi_thread, j);
    else
        multi_thread(j, 0, 1);
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
    if ((ret = ork__x16_check(w)) < 0)
        return ret;
    size_t need = ork_type_row_bytes(w->type, (uint64_t)w->n_cols);
    if (w->row_bytes < need)
        return ork_errorf(ORK_EINVAL, "%s matrix: row stride %zu < %zu bytes for %lld elements",
                          ork_type_name(w->type), w->row_bytes, need, (long long)w->n_cols);
    return 0;
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

int ork_matmul_act_multi(struct ork_pool *pool, const struct ork_mat *const *w, int n_w,
                         const float *x, int64_t m, float *const *y, enum ork_act act)
{
    return ork_matmul_act_multi_next(pool, w, n_w, x, m, y, act, NULL, 0);
}

int ork_matmul_act_multi_next(struct ork_pool *pool, const struct ork_mat *const *w, int n_w,
                              const float *x, int64_t m, float *const *y, enum ork_act act,
                              const struct ork_mat *const *next, int n_next)
{
    if (!w || !y || n_w < 1)
        return ork_errorf(ORK_EINVAL, "matmul of %d matrices", n_w);
    if (m < 0)
        return ork_errorf(ORK_EINVAL, "matmul with M = %lld", (long long)m);
    if (act != ORK_ACT_F32 && act != ORK_ACT_QUANT)
        return ork_errorf(ORK_EINVAL, "matmul: unknown activation mode %d", (int)act);
    const enum kisa isa = ork__kisa();
    int64_t rows = 0;
    bool same = true;
    for (int q = 0; q < n_w; q++) {
        int ret = check_mat(w[q]);
        if (ret < 0)
            return ret;
        if (!y[q])
            return ork_errorf(ORK_EINVAL, "matmul: output %d is NULL", q);
        if (w[q]->n_cols != w[0]->n_cols)
            return ork_errorf(ORK_EINVAL, "matmul: matrix %d has K = %lld, matrix 0 K = %lld", q,
                              (long long)w[q]->n_cols, (long long)w[0]->n_cols);
        same = same && xform_of(w[q], act, isa, m) == xform_of(w[0], act, isa, m);
        rows += w[q]->n_rows;
    }
    /* the next matrices are only read ahead as bytes (n_rows x row_bytes from data): their
     * type need not be one this path computes (the NPU may run them) */
    if (n_next < 0 || (n_next > 0 && !next))
        return ork_errorf(ORK_EINVAL, "matmul: %d next matrices at %p", n_next, (const void *)next);
    for (int q = 0; q < n_next; q++)
        if (!next[q] || !next[q]->data || next[q]->n_rows < 0)
            return ork_errorf(ORK_EINVAL, "matmul: next matrix %d without data or rows", q);
    if (m == 0 || rows == 0)
        return 0;
    if (!same) {
        /* different X forms (say an interleaved Q4_K matrix beside a Q6_K one): each matrix
         * with its own */
        for (int q = 0; q < n_w; q++) {
            int ret = ork_matmul_act_multi(pool, &w[q], 1, x, m, &y[q], act);
            if (ret < 0)
                return ret;
        }
        return 0;
    }
    enum xform xf = xform_of(w[0], act, isa, m);
    if (xf == XF_NONE) {
        /* nothing to share (f32 / 16-bit X): one matrix at a time */
        for (int q = 0; q < n_w; q++) {
            if (w[q]->n_rows == 0)
                continue;
            struct mm_job job = { .w = w[q], .x = x, .m = m, .y = y[q], .act = act };
            if (pool && ork_pool_threads(pool) > 1 && w[q]->n_rows > 1)
                ork_pool_run(pool, mm_thread, &job);
            else
                mm_rows(&job, 0, w[q]->n_rows);
        }
        return 0;
    }
    struct mm_multi j = { .w = w, .y = y, .n_w = n_w, .rows = rows, .x = x, .m = m,
                          .k = w[0]->n_cols, .xf = xf, .isa = isa, .ahead = next,
                          .n_ahead = n_next };
    run_multi(pool, &j);
    return 0;
}

int ork_matmul_act(struct ork_pool *pool, const struct ork_mat *w, const float *x, int64_t m,
                   float *y, enum ork_act act)
{
    return ork_matmul_act_multi(pool, &w, 1, x, m, &y, act);
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
    uint8_t rbuf[MM_X16_ROW_BYTES];
    return ork_dequant_row(w->type, ork__mat_row(w, row, rbuf), dst, w->n_cols);
}
