/* forward.c -- the transformer forward pass on the CPU, for a batch of M token rows (struct
 * fwd_rows): consecutive positions of one session (prefill: M up to n_batch; decode: M = 1), or
 * one or more consecutive positions of each of several sessions (batch_eval.c). Every
 * projection is one ork_matmul over the M rows (ork_matmul_act: f32 activations, or rounded
 * like the reference engines with act_quant), so a weight matrix streams once per batch.
 * Attention is causal over the KV cache (kv.c) and split over the thread pool by (row block,
 * KV head); its queries go through the KV kernels two at a time (two heads of a GQA group, or
 * the same head of two consecutive rows when the group is odd), each with the bits it has
 * alone.
 *
 * Per layer, as the architecture's descriptor says (model/arch.c, ork-engine/arch.h: biases
 * and q/k norms when bound, the RoPE style and per-layer base, the FFN activation; settings
 * with no op here are refused at load):
 *   h  = x + [pn](Wo * attn(rope(qn(Wq*n(x) [+bq])), rope(kn(Wk*n(x) [+bk])), Wv*n(x) [+bv]))
 *   x' = h + [pn](Wdown * (act(Wgate*n(h)) * Wup*n(h)))      or, MoE: the top-k experts' sum
 * then logits = [softcap](Wout * rmsnorm(x)); x starts as the embedding row [times sqrt(dim)].
 * attn: scores scaled (cfg.attn_scale), [softcapped], over the layer's keys (all, or the
 * sliding window of a local layer), softmax. [pn]: Gemma's post-norms when bound.
 *
 * Every projection group is one op of the layer plan (model_priv.h, npu/plan.c) run through
 * exec_proj: the NPU executor when it holds the op, else the CPU. When the executor splits the
 * O projection by heads, attention runs in two head ranges around the asynchronous submit of
 * the first O half, so the second range is computed while that half is on the NPU.
 *
 * Not here: weight binding (model.c), cache storage (kv.c), sampling (generate.c). Activations
 * come from the session's arena, reset per batch: nothing is allocated per token. */
#include "model_priv.h"

#include <ork/error.h>

#include <math.h>
#include <stdatomic.h>
#include <string.h>

/* Below this many multiply-adds an operation runs on the calling thread: waking the pool and
 * waiting for it costs on the order of 10 us (more when the cores are shared), which is about
 * 64K multiply-adds of the SIMD dot products (measurement: docs/engine.md "Threading"). */
#define FWD_MIN_PARALLEL_MACS (1 << 16)
/* Query heads of a GQA group that attention computes in one pass over the KV head's keys and
 * values (ork__kv_scores / ork__kv_weighted_sum with two queries, the same bits per head): the
 * keys and values stream once for both (measurement: docs/engine.md "KV cache layout"). */
#define FWD_ATTN_PAIR 2

/* The board twin (twin_rec.c): a CPU phase of the batch on the twin, when the model has one. The
 * work expression is evaluated only then. `pool`: the engine spreads the phase over its pool
 * (decided by the operation's size alone, FWD_MIN_PARALLEL_MACS, never by the host's threads). */
#define TW(f, phase, pool, work, label)                                                     \
    do {                                                                                    \
        if ((f)->tw)                                                                        \
            ork__twin_cpu((f)->tw, ORK_TWIN_PHASE_##phase, (pool), (work), (label));        \
    } while (0)

/* Number of arena allocations per batch (for the alignment slack in the size estimate). */
#define FWD_N_BUFFERS 23
#define FWD_ALIGN 64    /* arena.c aligns every allocation to 64 bytes */

size_t ork__forward_scratch_bytes(const struct ork_model_config *c, int32_t n_batch, int32_t ctx,
                                  int32_t n_threads)
{
    size_t m = (size_t)n_batch;
    size_t q_dim = (size_t)c->n_heads * (size_t)c->head_dim;
    size_t kv_dim = (size_t)c->n_kv_heads * (size_t)c->head_dim;
    size_t floats = m * (2 * (size_t)c->dim      /* x, xb */
                         + 2 * q_dim             /* q, att */
                         + 2 * kv_dim            /* k, v */
                         + 2 * (size_t)c->ffn_dim) /* hb, hb2 */
                    + (size_t)n_threads * FWD_ATTN_PAIR * (size_t)ctx   /* attention scores */
                    + m + 1;                                            /* row blocks */
    if (c->n_expert > 0) {
        size_t k = (size_t)c->n_expert_used, f = (size_t)c->expert_ffn_dim;
        floats += m * ((size_t)c->n_expert   /* router probabilities */
                       + 2 * k               /* weights, ids */
                       + k * (size_t)c->dim  /* per (row, rank) expert outputs */
                       + 2 * (size_t)c->dim  /* gathered input, output */
                       + 2 * f               /* gathered gate, up */
                       + 2);                 /* gathered row and rank */
    }
    return floats * sizeof(float) + (size_t)FWD_N_BUFFERS * FWD_ALIGN;
}

/* Start of a timed phase (0 unless ORK_DEBUG=phases) and its end, added to *acc. */
static inline int64_t phase_begin(const struct ork_session *s)
{
    return s->phases_on ? ork__now_ns() : 0;
}

static inline void phase_end(const struct ork_session *s, int64_t t0, int64_t *acc)
{
    if (s->phases_on)
        *acc += ork__now_ns() - t0;
}

/* ---- attention over the pool ------------------------------------------------------------- */

struct attn_job {
    const struct fwd_rows *rows;
    int32_t layer;
    int32_t n_heads, n_kv_heads, head_dim;
    int32_t h0, h1;         /* the heads to compute: [h0, h1) */
    float *q;               /* (n, n_heads * head_dim) */
    float *out;             /* (n, n_heads * head_dim) */
    float *scores;          /* (nth, FWD_ATTN_PAIR, ctx) */
    int32_t ctx;
    float scale;
    /* the layer's: RoPE base, position scale and divisors, LongRoPE's cos/sin factor, the
     * sliding window (0: all keys), the score softcap (0: none) */
    float rope_base, rope_scale, attn_factor;
    const float *rope_freqs;
    int32_t window;
    float softcap;
    const int32_t *blk;     /* (n_blk + 1) row blocks: block b is rows [blk[b], blk[b+1]) */
    int32_t n_blk;
    atomic_int next;        /* next (row block, KV head) item to take */
    /* prep: each item first norms and rotates its KV head's k and its query heads' q and
     * stores the row's k and v for that head (only when no other item reads them: see
     * attn_prep_in_items); else the caller has done it for all rows and heads */
    bool prep;
    float *k, *v;           /* (n, n_kv_heads * head_dim) */
    const float *q_norm, *k_norm;
    const struct ork_model *md;
};

static void norm_rope_one(float *v, const float *norm, const struct attn_job *j, int32_t pos);

/* The causal key range of a query row at position pos: [*t_begin, pos + 1); a local layer's
 * key p0 is seen iff pos - p0 < window (llama-hparams.h:388-392). */
static int32_t row_keys(const struct attn_job *j, int32_t pos, int32_t *t_begin)
{
    int32_t n_pos = pos + 1;
    *t_begin = j->window > 0 && n_pos > j->window ? n_pos - j->window : 0;
    return n_pos;
}

/* The queries qs[0..nq) (nq <= FWD_ATTN_PAIR) of one KV head, each at its own key range
 * [tb[u], np[u]), in one pass over the keys and values of the ranges' union: the keys are read
 * once for the pair. Scores past a query's own range are computed and then given weight 0, so
 * each output has the bits of the query alone: its own scores are the same dot products, its
 * softmax runs over its own range, and a zero weight adds +-0 to the weighted sum (finite V). */
static void attn_queries(const struct attn_job *j, struct ork_kv_cache *kv, int32_t kvh,
                         const float *const *qs, float *const *ss, float *const *os, int nq,
                         const int32_t *tb, const int32_t *np)
{
    int32_t lo = tb[0], hi = np[0];
    for (int u = 1; u < nq; u++) {
        lo = tb[u] < lo ? tb[u] : lo;
        hi = np[u] > hi ? np[u] : hi;
    }
    ork__kv_scores(kv, j->layer, kvh, qs, nq, j->scale, lo, hi, ss);
    for (int u = 0; u < nq; u++) {
        if (j->softcap > 0.0f)
            ork__softcap(ss[u] + tb[u], np[u] - tb[u], j->softcap);
        ork_softmax(ss[u] + tb[u], np[u] - tb[u]);
        for (int32_t t = lo; t < tb[u]; t++)
            ss[u][t] = 0.0f;
        for (int32_t t = np[u]; t < hi; t++)
            ss[u][t] = 0.0f;
    }
    ork__kv_weighted_sum(kv, j->layer, kvh, (const float *const *)ss, nq, lo, hi, os);
}

/* Threads take (row block, KV head) items from j->next (ork_pool_run_shared): an item computes
 * the queries (row, head) of its rows and of the heads of [h0, h1) that share that KV head
 * (GQA), in pairs, so the head's keys and values come from memory once per pair and from cache
 * for the others. A block is one row, or consecutive rows of one sequence when the group's
 * heads alone leave a query unpaired (attn_blocks). Each head's bits do not depend on which
 * thread computes it or with which others. */
static void attn_worker(void *ctx, int ith, int nth)
{
    struct attn_job *j = ctx;
    int32_t q_dim = j->n_heads * j->head_dim;
    int32_t group = j->n_heads / j->n_kv_heads;
    float *sc = j->scores + (size_t)ith * FWD_ATTN_PAIR * (size_t)j->ctx;
    int32_t g0 = j->h0 / group, g1 = (j->h1 + group - 1) / group;     /* KV heads touched */
    int32_t ng = g1 - g0;
    int32_t n_items = j->n_blk * ng;
    for (int32_t it; (it = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed)) <
                     n_items;) {
        int32_t b = it / ng, kvh = g0 + it % ng;
        int32_t r0 = j->blk[b], r1 = j->blk[b + 1];
        struct ork_kv_cache *kv = row_kv(j->rows, r0);
        if (it + nth < n_items) {   /* likely this thread's next item: its runs' first rows */
            int32_t b2 = (it + nth) / ng;
            ork__kv_prefetch_head(row_kv(j->rows, j->blk[b2]), j->layer, g0 + (it + nth) % ng,
                                  row_pos(j->rows, j->blk[b2 + 1] - 1) + 1);
        }
        int32_t ha = kvh * group > j->h0 ? kvh * group : j->h0;
        int32_t hb = (kvh + 1) * group < j->h1 ? (kvh + 1) * group : j->h1;
        for (int32_t i = r0; j->prep && i < r1; i++) {
            int32_t pos = row_pos(j->rows, i);
            size_t kv_at = ((size_t)i * j->n_kv_heads + kvh) * j->head_dim;
            norm_rope_one(j->k + kv_at, j->k_norm, j, pos);
            ork__kv_store_head(kv, j->layer, pos, kvh, j->k + kv_at, j->v + kv_at);
            for (int32_t h = ha; h < hb; h++)
                norm_rope_one(j->q + (size_t)i * q_dim + (size_t)h * j->head_dim, j->q_norm,
                              j, pos);
        }
        /* the block's queries, row-major: query e is row r0 + e / nh, head ha + e % nh */
        int32_t nh = hb - ha, n_q = (r1 - r0) * nh;
        for (int32_t e = 0, nq; e < n_q; e += nq) {
            nq = n_q - e < FWD_ATTN_PAIR ? (int)(n_q - e) : FWD_ATTN_PAIR;
            const float *qs[FWD_ATTN_PAIR];
            float *ss[FWD_ATTN_PAIR], *os[FWD_ATTN_PAIR];
            int32_t tb[FWD_ATTN_PAIR], np[FWD_ATTN_PAIR];
            for (int u = 0; u < nq; u++) {
                int32_t i = r0 + (e + u) / nh, h = ha + (e + u) % nh;
                size_t at = (size_t)i * q_dim + (size_t)h * j->head_dim;
                qs[u] = j->q + at;
                ss[u] = sc + (size_t)u * (size_t)j->ctx;
                os[u] = j->out + at;
                np[u] = row_keys(j, row_pos(j->rows, i), &tb[u]);
            }
            attn_queries(j, kv, kvh, qs, ss, os, nq, tb, np);
        }
    }
}

static void attention(struct attn_job *j, struct ork_pool *pool, const struct ork_session *s,
                      int64_t *acc)
{
    int64_t t0 = phase_begin(s);
    atomic_store_explicit(&j->next, 0, memory_order_relaxed);
    if (pool)
        ork_pool_run_shared(pool, attn_worker, j);
    else
        attn_worker(j, 0, 1);
    phase_end(s, t0, acc);
}

/* ---- helpers ----------------------------------------------------------------------------- */

static void add_rows(float *x, const float *b, int32_t m, int32_t n)
{
    for (int32_t i = 0; i < m; i++)
        for (int32_t k = 0; k < n; k++)
            x[(size_t)i * n + k] += b[k];
}

static void rmsnorm_rows(float *out, const float *x, const float *w, int32_t m, int32_t n, float eps)
{
    for (int32_t i = 0; i < m; i++)
        ork_rmsnorm(out + (size_t)i * n, x + (size_t)i * n, w, n, eps);
}

/* Per-head RMSNorm (when norm is set: the descriptor's qk_norm) then RoPE of one head at
 * position pos, in the descriptor's style with the layer's base, scale and divisors (j); the
 * rotated elements times LongRoPE's attn_factor (its cos and sin multiplier: ARCHS.md "phi3",
 * ggml-cpu/ops.cpp:5829-5857). */
static void norm_rope_one(float *v, const float *norm, const struct attn_job *j, int32_t pos)
{
    const struct ork_model_config *c = &j->md->cfg;
    int32_t hd = c->head_dim;
    if (norm)
        ork_rmsnorm(v, v, norm, hd, c->rms_eps);
    ork_rope_ext(v, hd, c->n_rot, pos, j->rope_base, j->md->arch->rope == ORK_ROPE_NEOX,
                 j->rope_freqs, j->rope_scale);
    if (j->attn_factor != 1.0f)
        for (int32_t i = 0; i < c->n_rot && i < hd; i++)
            v[i] *= j->attn_factor;
}

/* norm_rope_one for heads [h0, h1) of the rows of n_h heads at their positions. */
static void norm_rope_heads(float *x, int32_t n_h, int32_t h0, int32_t h1, const float *norm,
                            const struct attn_job *j, const struct fwd_rows *r)
{
    int32_t hd = j->md->cfg.head_dim;
    for (int32_t i = 0; i < r->n; i++)
        for (int32_t h = h0; h < h1; h++)
            norm_rope_one(x + ((size_t)i * n_h + h) * hd, norm, j, row_pos(r, i));
}

/* Whether the attention items may do the rows' q/k norms, RoPE and KV stores themselves
 * (attn_job.prep): when every row has a cache of its own (one row, or one token from each of
 * several sessions), item (row, KV head) is the only one that writes that row's K and V of the
 * head and the only one that reads them; rows of one sequence (prefill, or a session's several
 * rows in a multi-session batch) read each other's, so the stores must all come first. Doing it in the items runs it on every thread and on the
 * core that reads it next, instead of on the caller alone between two pool runs. */
static bool attn_prep_in_items(const struct fwd_rows *r)
{
    return r->n == 1 || (r->kv != NULL && !r->shared);
}

/* The pool for an operation of `macs` multiply-adds, or NULL (calling thread) when small. */
static struct ork_pool *pool_for(const struct ork_session *s, double macs)
{
    return macs >= (double)FWD_MIN_PARALLEL_MACS ? s->pool : NULL;
}

/* One forward batch: the session, its model, the rows and the activations (arena). */
struct fwd {
    struct ork_session *s;
    const struct ork_model *md;
    const struct fwd_rows *r;
    enum ork_act act;
    struct ork__phases *ph;
    bool to_head;                       /* the batch ends with the LM head (logits wanted) */
    float *x, *xb;                      /* (n, dim) residual stream; block input / output */
    float *q, *att;                     /* (n, q_dim) queries; attention output */
    float *k, *v;                       /* (n, kv_dim) */
    float *hb, *hb2;                    /* (n, ffn_dim) gate, up */
    float *scores;                      /* (nth, FWD_ATTN_PAIR, ctx) */
    /* MoE (n_expert > 0): router probabilities (n, n_expert), the selected experts' weights
     * and ids (n, k), their outputs (n, k, dim), and one expert's gathered rows: input (n,
     * dim), gate and up (n, expert_ffn_dim), output (n, dim), row and rank (n) */
    float *moe_p, *moe_w, *moe_out, *moe_x, *moe_g, *moe_u, *moe_y;
    int32_t *moe_ids, *moe_row, *moe_rank;
    struct attn_job job;
    struct ork_pool *attn_pool;
    struct ork__twin_rec *tw;           /* the model's twin, or NULL */
    const struct ork_twin_consts *tc;   /* its constants */
    bool attn_wide;                     /* attention is big enough for the pool (twin cores) */
    uint64_t attn_pairs, attn_keys;     /* (query row, key) pairs and distinct keys read */
    uint32_t kv_el;                     /* bytes of a KV cache element */
};

static const char *const proj_names[ORK__NPU_N_OPS] = { "qkv", "o", "gate_up", "down", "lm_head" };

static bool type_quantised(uint32_t t)
{
    return t != ORK_TYPE_F32 && t != ORK_TYPE_F16 && t != ORK_TYPE_BF16;
}

/* The twin's ops of a CPU projection: the input quantised once (quantised activations), then
 * one pool dispatch over every matrix of the op. */
static void twin_cpu_proj(const struct fwd *f, enum ork__npu_op op, const struct ork_mat *const *ws,
                          int n_w, int32_t rows, double macs)
{
    if (!f->tw)
        return;
    if (f->act == ORK_ACT_QUANT && type_quantised(ws[0]->type))
        TW(f, QUANT, false, ork_twin_cpu_quantize(f->tc, (uint64_t)rows, (uint64_t)ws[0]->n_cols),
           "quant (cpu matmul)");
    struct ork_twin_work w = { 0 };
    for (int i = 0; i < n_w; i++)
        w = ork_twin_work_sum(w, ork_twin_cpu_matmul(f->tc, ork__twin_wtype(ws[i]->type),
                                                     (uint64_t)rows, (uint64_t)ws[i]->n_cols,
                                                     (uint64_t)ws[i]->n_rows));
    bool pool = macs >= (double)FWD_MIN_PARALLEL_MACS;
    if (op == ORK__NPU_LM_HEAD)
        TW(f, LM_HEAD, pool, w, proj_names[op]);
    else
        TW(f, CPU_MATMUL, pool, w, proj_names[op]);
}

static int alloc_f(struct ork_session *s, size_t count, const char *what, float **out)
{
    *out = ork_arena_alloc(s->arena, count * sizeof(float));
    if (!*out)
        return ork_errorf(ORK_ENOMEM, "forward: scratch arena exhausted (%s)", what);
    return 0;
}

/* One projection of the layer plan (model_priv.h): op's matrices at layer for `rows` rows of
 * `in` into outs (one per matrix). The NPU executor runs it when it holds the op; else the CPU
 * runs all the op's matrices in one call, the input quantised once and one pool dispatch over
 * all their rows (ork_matmul_act_multi; same bits as one call per matrix), while a decode
 * thread out of rows reads ahead into the next op's matrices (ork_matmul_act_multi_next). */
static int exec_proj(const struct fwd *f, enum ork__npu_op op, int32_t layer, const float *in,
                     int32_t rows, float *const *outs)
{
    int ret = ork__npu_exec_run(f->md->npu, op, layer, in, rows, outs);
    if (ret != 0)
        return ret < 0 ? ret : 0;
    const struct ork_mat *ws[3], *next[3];
    enum ork__npu_op next_op;
    int32_t next_layer;
    int n_w = ork__layer_op_mats(f->md, op, layer, ws);
    ork__layer_op_next(f->md, op, layer, f->to_head, &next_op, &next_layer);
    int n_next = ork__layer_op_mats(f->md, next_op, next_layer, next);
    if (n_next > 0 && !next[0]->data)
        n_next = 0;     /* a MoE layer's FFN ops: its experts are not layer-plan matrices */
    double macs = 0;
    for (int i = 0; i < n_w; i++)
        macs += (double)ws[i]->n_rows * (double)ws[i]->n_cols * rows;
    twin_cpu_proj(f, op, ws, n_w, rows, macs);
    int64_t t0 = phase_begin(f->s);
    ret = ork_matmul_act_multi_next(pool_for(f->s, macs), ws, n_w, in, rows, outs, f->act, next,
                                    n_next);
    phase_end(f->s, t0, &f->ph->matmul_ns);
    return ret;
}

/* The row blocks of attention's items (attn_job.blk, n_blocks + 1 entries): one row each, or,
 * when a KV head's query heads are odd in number (GQA group 1, 7, ...; their pairs leave one
 * over), FWD_ATTN_PAIR consecutive rows of one cache, so that the leftover queries of the
 * rows pair up and read the keys once for two. Returns the number of blocks. */
static int32_t attn_blocks(const struct ork_model_config *c, const struct fwd_rows *r,
                           int32_t *blk)
{
    int32_t per = (c->n_heads / c->n_kv_heads) % FWD_ATTN_PAIR ? FWD_ATTN_PAIR : 1;
    int32_t nb = 0;
    for (int32_t i = 0, e; i < r->n; i = e) {
        blk[nb++] = i;
        for (e = i + 1; e < r->n && e - i < per && row_kv(r, e) == row_kv(r, i) &&
                        row_pos(r, e) == row_pos(r, e - 1) + 1; e++)
            ;
    }
    blk[nb] = r->n;
    return nb;
}

static int fwd_init(struct fwd *f, struct ork_session *s, const struct fwd_rows *r, bool to_head)
{
    const struct ork_model_config *c = &s->m->cfg;
    size_t n = (size_t)r->n, q_dim = (size_t)c->n_heads * c->head_dim;
    size_t kv_dim = (size_t)c->n_kv_heads * c->head_dim;
    int ret;
    memset(f, 0, sizeof(*f));
    f->s = s;
    f->md = s->m;
    f->r = r;
    f->act = s->p.act_quant ? ORK_ACT_QUANT : ORK_ACT_F32;
    f->ph = &s->phases[r->n > 1];
    f->to_head = to_head;
    ork_arena_reset(s->arena);
    if ((ret = alloc_f(s, n * c->dim, "x", &f->x)) < 0 ||
        (ret = alloc_f(s, n * c->dim, "xb", &f->xb)) < 0 ||
        (ret = alloc_f(s, n * q_dim, "q", &f->q)) < 0 ||
        (ret = alloc_f(s, n * q_dim, "att", &f->att)) < 0 ||
        (ret = alloc_f(s, n * kv_dim, "k", &f->k)) < 0 ||
        (ret = alloc_f(s, n * kv_dim, "v", &f->v)) < 0 ||
        (ret = alloc_f(s, n * c->ffn_dim, "hb", &f->hb)) < 0 ||
        (ret = alloc_f(s, n * c->ffn_dim, "hb2", &f->hb2)) < 0 ||
        (ret = alloc_f(s, (size_t)ork_pool_threads(s->pool) * FWD_ATTN_PAIR * s->kv.ctx,
                       "scores", &f->scores)) < 0)
        return ret;
    float *blk;
    if ((ret = alloc_f(s, n + 1, "row blocks", &blk)) < 0)
        return ret;
    if (c->n_expert > 0) {
        size_t k = (size_t)c->n_expert_used, fe = (size_t)c->expert_ffn_dim;
        float *ids, *row, *rank;
        if ((ret = alloc_f(s, n * c->n_expert, "moe router", &f->moe_p)) < 0 ||
            (ret = alloc_f(s, n * k, "moe weights", &f->moe_w)) < 0 ||
            (ret = alloc_f(s, n * k, "moe ids", &ids)) < 0 ||
            (ret = alloc_f(s, n * k * c->dim, "moe outputs", &f->moe_out)) < 0 ||
            (ret = alloc_f(s, n * c->dim, "moe input", &f->moe_x)) < 0 ||
            (ret = alloc_f(s, n * fe, "moe gate", &f->moe_g)) < 0 ||
            (ret = alloc_f(s, n * fe, "moe up", &f->moe_u)) < 0 ||
            (ret = alloc_f(s, n * c->dim, "moe output", &f->moe_y)) < 0 ||
            (ret = alloc_f(s, n, "moe rows", &row)) < 0 ||
            (ret = alloc_f(s, n, "moe ranks", &rank)) < 0)
            return ret;
        f->moe_ids = (int32_t *)(void *)ids;    /* int32 and float are both 4 bytes */
        f->moe_row = (int32_t *)(void *)row;
        f->moe_rank = (int32_t *)(void *)rank;
    }
    f->job = (struct attn_job){
        .rows = r, .n_heads = c->n_heads, .n_kv_heads = c->n_kv_heads,
        .head_dim = c->head_dim, .q = f->q, .out = f->att, .scores = f->scores,
        .ctx = s->kv.ctx, .scale = c->attn_scale, .k = f->k, .v = f->v,
        .md = f->md, .blk = (const int32_t *)(void *)blk,
        .n_blk = attn_blocks(c, r, (int32_t *)(void *)blk),    /* int32 and float: 4 bytes */
    };
    /* attention: rows x n_heads x (pos + 1 keys) x head_dim, twice (scores, weighted sum) */
    double keys = 0;
    for (int32_t i = 0; i < r->n; i++)
        keys += (double)row_pos(r, i) + 1;
    f->attn_pool = pool_for(s, 2.0 * keys * c->n_heads * c->head_dim);
    f->tw = s->m->twin;
    if (f->tw) {
        f->tc = ork__twin_consts(f->tw);
        f->attn_wide = 2.0 * keys * c->n_heads * c->head_dim >= (double)FWD_MIN_PARALLEL_MACS;
        f->attn_pairs = (uint64_t)keys;
        /* one sequence's rows read one cache (its keys once); rows of several sessions each
         * read their own, a session's keys once for its rows */
        f->attn_keys = 0;
        for (int32_t i = 0; i < r->n; i++)
            if (i == r->n - 1 || row_kv(r, i + 1) != row_kv(r, i))
                f->attn_keys += (uint64_t)row_pos(r, i) + 1;
        f->kv_el = s->kv.type == ORK_KV_F16 ? 2 : 4;
    }
    return 0;
}

/* The twin's ops of q/k norms, RoPE, the KV store and attention over heads [h0, h1) (with_k:
 * the keys' norm, RoPE and store too), on the pool's cores when `items` (attn_job.prep: the
 * attention items do them) and the attention is big enough, else the caller's core. */
static void twin_attn(const struct fwd *f, int32_t l, int32_t h0, int32_t h1, bool with_k,
                      bool items)
{
    if (!f->tw)
        return;
    const struct ork_model_config *c = &f->md->cfg;
    const struct ork_layer_weights *L = &f->md->w.layers[l];
    uint64_t n = (uint64_t)f->r->n, hd = (uint64_t)c->head_dim, nh = (uint64_t)(h1 - h0);
    uint64_t kvd = (uint64_t)c->n_kv_heads * hd;
    bool pool = items && f->attn_wide;
    if (with_k) {
        if (L->k_norm)
            TW(f, RMSNORM, pool, ork_twin_cpu_rmsnorm(f->tc, n * (uint64_t)c->n_kv_heads, hd),
               "k norm");
        TW(f, ROPE, pool, ork_twin_cpu_rope(f->tc, n * kvd), "rope k");
        TW(f, KV_APPEND, pool, ork_twin_cpu_kv_append(f->tc, n * 2 * kvd, f->kv_el), "kv append");
    }
    if (L->q_norm)
        TW(f, RMSNORM, pool, ork_twin_cpu_rmsnorm(f->tc, n * nh, hd), "q norm");
    TW(f, ROPE, pool, ork_twin_cpu_rope(f->tc, n * nh * hd), "rope q");
    int32_t group = c->n_heads / c->n_kv_heads;
    struct ork_twin_attn a = {
        .q_rows = n, .pairs = f->attn_pairs, .keys = f->attn_keys, .n_heads = (uint32_t)nh,
        .n_kv_heads = (uint32_t)((h1 + group - 1) / group - h0 / group),
        .head_dim = (uint32_t)hd, .kv_el_bytes = f->kv_el,
    };
    TW(f, ATTENTION, f->attn_wide, ork_twin_cpu_attention(f->tc, &a),
       h0 == 0 ? "attention" : "attention (2nd half)");
}

/* x += attention(norm(x)) for layer l: QKV, biases, q/k norms and RoPE, KV store, attention,
 * O. When the NPU executor splits the O projection by heads, attention runs in two head ranges
 * around the asynchronous submit of the first O half. */
static int attn_block(struct fwd *f, int32_t l)
{
    const struct ork_model *md = f->md;
    const struct ork_model_config *c = &md->cfg;
    const struct ork_layer_weights *L = &md->w.layers[l];
    const struct fwd_rows *r = f->r;
    int32_t n = r->n, dim = c->dim;
    int32_t q_dim = c->n_heads * c->head_dim, kv_dim = c->n_kv_heads * c->head_dim;
    struct attn_job *job = &f->job;
    int ret;
    TW(f, RMSNORM, false, ork_twin_cpu_rmsnorm(f->tc, (uint64_t)n, (uint64_t)dim), "attn_norm");
    rmsnorm_rows(f->xb, f->x, L->attn_norm, n, dim, c->rms_eps);
    if ((ret = exec_proj(f, ORK__NPU_QKV, l, f->xb, n, (float *const[]){ f->q, f->k, f->v })) < 0)
        return ret;
    if (L->bq) {
        TW(f, BIAS, false, ork_twin_cpu_bias(f->tc, (uint64_t)n * (uint64_t)(q_dim + 2 * kv_dim)),
           "qkv bias");
        add_rows(f->q, L->bq, n, q_dim);
        add_rows(f->k, L->bk, n, kv_dim);
        add_rows(f->v, L->bv, n, kv_dim);
    }
    /* heads of the O projection's first half when the NPU executor overlaps it with the
     * second half's attention (0: one O projection after all heads) */
    int32_t ha = ork__npu_exec_o_split(md->npu, l, n, c->n_heads);
    job->layer = l;
    job->h0 = 0;
    job->h1 = ha ? ha : c->n_heads;
    job->prep = !ha && attn_prep_in_items(r);
    job->q_norm = L->q_norm;
    job->k_norm = L->k_norm;
    bool swa = ork_model_layer_swa(c, l);
    job->window = swa ? c->swa_window : 0;
    job->rope_base = swa ? c->rope_base_swa : c->rope_base;
    job->rope_scale = swa ? c->rope_freq_scale_swa : c->rope_freq_scale;
    job->rope_freqs = f->s->rope_freqs;
    job->attn_factor = c->rope_attn_factor;
    job->softcap = c->attn_softcap;
    if (!job->prep) {
        norm_rope_heads(f->k, c->n_kv_heads, 0, c->n_kv_heads, L->k_norm, job, r);
        for (int32_t i = 0; i < n; i++)
            ork__kv_store(row_kv(r, i), l, row_pos(r, i), f->k + (size_t)i * kv_dim,
                          f->v + (size_t)i * kv_dim);
        norm_rope_heads(f->q, c->n_heads, job->h0, job->h1, L->q_norm, job, r);
    }
    twin_attn(f, l, job->h0, job->h1, true, job->prep);
    attention(job, f->attn_pool, f->s, &f->ph->attn_ns);
    if (ha) {
        if ((ret = ork__npu_exec_o_submit(md->npu, l, f->att, n)) < 0)
            return ret;
        /* the other heads while the first half's O projection runs on the NPU */
        job->h0 = ha;
        job->h1 = c->n_heads;
        norm_rope_heads(f->q, c->n_heads, job->h0, job->h1, L->q_norm, job, r);
        twin_attn(f, l, job->h0, job->h1, false, false);
        attention(job, f->attn_pool, f->s, &f->ph->attn_ns);
        if ((ret = ork__npu_exec_o_finish(md->npu, l, f->att, n, f->xb)) < 0)
            return ret;
    } else if ((ret = exec_proj(f, ORK__NPU_O, l, f->att, n, (float *const[]){ f->xb })) < 0) {
        return ret;
    }
    if (L->post_attn_norm) {
        TW(f, RMSNORM, false, ork_twin_cpu_rmsnorm(f->tc, (uint64_t)n, (uint64_t)dim),
           "post_attention_norm");
        rmsnorm_rows(f->xb, f->xb, L->post_attn_norm, n, dim, c->rms_eps);
    }
    TW(f, RESIDUAL, false, ork_twin_cpu_residual(f->tc, (uint64_t)n * (uint64_t)dim), "residual");
    for (size_t i = 0; i < (size_t)n * dim; i++)
        f->x[i] += f->xb[i];
    return 0;
}

/* One CPU matmul of `rows` rows of in by w into out (the MoE's router and experts), on the
 * pool when large, with its twin ops. */
static int cpu_mat(const struct fwd *f, enum ork__npu_op op, const struct ork_mat *w,
                   const float *in, int32_t rows, float *out)
{
    const struct ork_mat *ws[1] = { w };
    double macs = (double)w->n_rows * (double)w->n_cols * rows;
    twin_cpu_proj(f, op, ws, 1, rows, macs);
    int64_t t0 = phase_begin(f->s);
    int ret = ork_matmul_act_multi_next(pool_for(f->s, macs), ws, 1, in, rows,
                                        (float *const[]){ out }, f->act, NULL, 0);
    phase_end(f->s, t0, &f->ph->matmul_ns);
    return ret;
}

/* The MoE FFN of layer l on the normed rows f->xb, into f->xb (ARCHS.md "qwen3moe" Routing,
 * llama-graph.cpp:1946-2069): probabilities = softmax(router x) over all experts, the top-k,
 * their probabilities renormalised, out = sum over the ranks of w * down(silu(gate x) * up x).
 * The rows are grouped by expert: each selected expert's weights stream once for all the rows
 * that chose it, and an expert no row chose is not read (decode reads only k experts' rows).
 * The sum over ranks runs in rank order, as llama.cpp adds the experts' outputs. */
static int moe_block(struct fwd *f, int32_t l)
{
    const struct ork_model_config *c = &f->md->cfg;
    const struct ork_layer_weights *L = &f->md->w.layers[l];
    int32_t n = f->r->n, dim = c->dim, k = c->n_expert_used, fe = c->expert_ffn_dim;
    int ret;
    if ((ret = cpu_mat(f, ORK__NPU_GATE_UP, &L->gate_inp, f->xb, n, f->moe_p)) < 0)
        return ret;
    for (int32_t i = 0; i < n; i++)
        ork__moe_route(f->moe_p + (size_t)i * c->n_expert, c->n_expert, k,
                       f->moe_ids + (size_t)i * k, f->moe_w + (size_t)i * k);
    for (int32_t e = 0; e < c->n_expert; e++) {
        int32_t m = 0;
        for (int32_t i = 0; i < n; i++)
            for (int32_t j = 0; j < k; j++)
                if (f->moe_ids[(size_t)i * k + j] == e) {
                    memcpy(f->moe_x + (size_t)m * dim, f->xb + (size_t)i * dim,
                           (size_t)dim * sizeof(float));
                    f->moe_row[m] = i;
                    f->moe_rank[m++] = j;
                }
        if (!m)
            continue;
        struct ork_mat g = ork__expert_mat(&L->gate_exps, e, fe);
        struct ork_mat u = ork__expert_mat(&L->up_exps, e, fe);
        struct ork_mat d = ork__expert_mat(&L->down_exps, e, dim);
        if ((ret = cpu_mat(f, ORK__NPU_GATE_UP, &g, f->moe_x, m, f->moe_g)) < 0 ||
            (ret = cpu_mat(f, ORK__NPU_GATE_UP, &u, f->moe_x, m, f->moe_u)) < 0)
            return ret;
        TW(f, SILU_MUL, false, ork_twin_cpu_silu_mul(f->tc, (uint64_t)m * (uint64_t)fe),
           "silu x up (expert)");
        ork_silu_mul(f->moe_g, f->moe_u, (int64_t)m * fe);
        if ((ret = cpu_mat(f, ORK__NPU_DOWN, &d, f->moe_g, m, f->moe_y)) < 0)
            return ret;
        f->s->expert_bytes += (uint64_t)(g.row_bytes * (size_t)g.n_rows +
                                         u.row_bytes * (size_t)u.n_rows +
                                         d.row_bytes * (size_t)d.n_rows);
        for (int32_t r = 0; r < m; r++) {
            size_t at = (size_t)f->moe_row[r] * k + (size_t)f->moe_rank[r];
            float w = f->moe_w[at];
            const float *y = f->moe_y + (size_t)r * dim;
            float *o = f->moe_out + at * dim;
            for (int32_t t = 0; t < dim; t++)
                o[t] = y[t] * w;
        }
    }
    for (int32_t i = 0; i < n; i++) {
        float *o = f->xb + (size_t)i * dim;
        const float *src = f->moe_out + (size_t)i * k * dim;
        memcpy(o, src, (size_t)dim * sizeof(float));
        for (int32_t j = 1; j < k; j++)
            for (int32_t t = 0; t < dim; t++)
                o[t] += src[(size_t)j * dim + t];
    }
    return 0;
}

/* x += W_down (act(W_gate norm(x)) * W_up norm(x)) for layer l: the gated FFN of the
 * descriptor (SiLU, or GELU through llama.cpp's FP16 table), or the MoE experts; then
 * Gemma's post-FFN norm when bound. */
static int ffn_block(struct fwd *f, int32_t l)
{
    const struct ork_model_config *c = &f->md->cfg;
    const struct ork_layer_weights *L = &f->md->w.layers[l];
    int32_t n = f->r->n;
    int ret;
    TW(f, RMSNORM, false, ork_twin_cpu_rmsnorm(f->tc, (uint64_t)n, (uint64_t)c->dim), "ffn_norm");
    rmsnorm_rows(f->xb, f->x, L->ffn_norm, n, c->dim, c->rms_eps);
    if (c->n_expert > 0) {
        if ((ret = moe_block(f, l)) < 0)
            return ret;
    } else {
        if ((ret = exec_proj(f, ORK__NPU_GATE_UP, l, f->xb, n,
                             (float *const[]){ f->hb, f->hb2 })) < 0)
            return ret;
        TW(f, SILU_MUL, false, ork_twin_cpu_silu_mul(f->tc, (uint64_t)n * (uint64_t)c->ffn_dim),
           f->md->arch->act == ORK_FFN_GELU ? "gelu x up" : "silu x up");
        if (f->md->arch->act == ORK_FFN_GELU)
            ork__gelu_mul(f->hb, f->hb2, (int64_t)n * c->ffn_dim);
        else
            ork_silu_mul(f->hb, f->hb2, (int64_t)n * c->ffn_dim);
        if ((ret = exec_proj(f, ORK__NPU_DOWN, l, f->hb, n, (float *const[]){ f->xb })) < 0)
            return ret;
    }
    if (L->post_ffn_norm) {
        TW(f, RMSNORM, false, ork_twin_cpu_rmsnorm(f->tc, (uint64_t)n, (uint64_t)c->dim),
           "post_ffw_norm");
        rmsnorm_rows(f->xb, f->xb, L->post_ffn_norm, n, c->dim, c->rms_eps);
    }
    TW(f, RESIDUAL, false, ork_twin_cpu_residual(f->tc, (uint64_t)n * (uint64_t)c->dim),
       "residual");
    for (size_t i = 0; i < (size_t)n * c->dim; i++)
        f->x[i] += f->xb[i];
    return 0;
}

/* One batch of rows through the model, with the pool, arena and options of session s. */
static int forward_rows_run(struct ork_session *s, const struct fwd_rows *r, float *logits,
                            bool all)
{
    const struct ork_model *md = s->m;
    const struct ork_model_config *c = &md->cfg;
    const struct ork_weights *w = &md->w;
    int32_t n = r->n, dim = c->dim;
    struct fwd f;
    int ret = fwd_init(&f, s, r, logits != NULL);
    if (ret < 0)
        return ret;
    TW(&f, EMBED, false, ork_twin_cpu_embed(f.tc, ork__twin_wtype(w->tok_embd.type), (uint64_t)n,
                                            (uint64_t)dim), "embed");
    for (int32_t i = 0; i < n; i++)
        if ((ret = ork_get_row(&w->tok_embd, r->tokens[i], f.x + (size_t)i * dim)) < 0)
            return ret;
    if (c->embd_scale != 1.0f)
        for (size_t i = 0; i < (size_t)n * dim; i++)
            f.x[i] *= c->embd_scale;
    for (int32_t l = 0; l < c->n_layers; l++)
        if ((ret = attn_block(&f, l)) < 0 || (ret = ffn_block(&f, l)) < 0)
            return ret;
    if (!logits)
        return 0;
    TW(&f, RMSNORM, false, ork_twin_cpu_rmsnorm(f.tc, all ? (uint64_t)n : 1, (uint64_t)dim),
       "output_norm");
    int32_t n_out = all ? n : 1;
    if (all)
        rmsnorm_rows(f.xb, f.x, w->output_norm, n, dim, c->rms_eps);
    else
        ork_rmsnorm(f.xb, f.x + (size_t)(n - 1) * dim, w->output_norm, dim, c->rms_eps);
    if ((ret = exec_proj(&f, ORK__NPU_LM_HEAD, 0, f.xb, n_out, (float *const[]){ logits })) < 0)
        return ret;
    if (c->final_softcap > 0.0f)
        ork__softcap(logits, (int64_t)n_out * c->n_vocab, c->final_softcap);
    return 0;
}

/* forward_rows_run bracketed for the NPU executor's counters (no-op on the CPU). */
int ork__forward_rows(struct ork_session *s, const struct fwd_rows *r, float *logits, bool all)
{
    ork__npu_exec_batch_begin(s->m->npu);
    ork__twin_begin(s->m->twin);
    int64_t t0 = phase_begin(s);
    int ret = forward_rows_run(s, r, logits, all);
    int tret = ork__twin_end(s->m->twin, r->n);
    if (ret == 0)
        ret = tret;
    struct ork__phases *ph = &s->phases[r->n > 1];
    phase_end(s, t0, &ph->total_ns);
    ph->batches++;
    ph->rows += r->n;
    ork__npu_exec_batch_end(s->m->npu, r->n);
    return ret;
}

int ork__forward_batch(struct ork_session *s, const int32_t *tokens, int32_t n, int32_t pos,
                       float *logits, bool all)
{
    struct fwd_rows r = { .n = n, .tokens = tokens, .kv0 = &s->kv, .pos0 = pos };
    int ret = ork__forward_rows(s, &r, logits, all);
    if (ret == 0 && pos + n - 1 > s->kv.hi)
        s->kv.hi = pos + n - 1;
    return ret;
}

/* Before a batch at pos < the cache's highest position (a rewind): when a sliding-window ring
 * no longer holds the window's keys, evaluate the session's first pos tokens again from 0
 * (their keys in every layer; no logits). */
int ork__rewind_rings(struct ork_session *s, int32_t pos)
{
    if (ork__kv_window_valid(&s->kv, pos, s->m->cfg.swa_window))
        return 0;
    s->kv.hi = -1;
    for (int32_t done = 0, m; done < pos; done += m) {
        m = pos - done < s->p.n_batch ? pos - done : s->p.n_batch;
        int ret = ork__forward_batch(s, s->tokens + done, m, done, NULL, false);
        if (ret < 0)
            return ret;
    }
    return 0;
}

/* ---- public ------------------------------------------------------------------------------ */

int ork_model_eval(struct ork_session *s, const int32_t *tokens, int32_t n, int32_t pos,
                   float *logits, uint32_t flags)
{
    const struct ork_model_config *c = &s->m->cfg;
    if (!tokens || n < 1)
        return ork_errorf(ORK_EINVAL, "ork_model_eval: no tokens to evaluate");
    if (pos < 0 || pos > s->n_past)
        return ork_errorf(ORK_EINVAL, "ork_model_eval: position %d is past the %d cached tokens",
                          pos, s->n_past);
    if ((int64_t)pos + n > s->kv.ctx)
        return ork_errorf(ORK_ECONTEXT, "context full: %lld tokens > ctx_size %d",
                          (long long)pos + n, s->kv.ctx);
    for (int32_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= c->n_vocab)
            return ork_errorf(ORK_EINVAL, "token id %d at index %d is outside the vocabulary "
                              "(%d tokens)", tokens[i], i, c->n_vocab);
    bool all = (flags & ORK_EVAL_ALL_LOGITS) != 0;
    s->n_past = pos;
    int rret = ork__rewind_rings(s, pos);
    if (rret < 0)
        return rret;
    int32_t nb = s->p.n_batch;
    for (int32_t done = 0; done < n; done += nb) {
        int32_t m = n - done < nb ? n - done : nb;
        bool last = done + m == n;
        float *out = NULL;
        if (logits && all)
            out = logits + (size_t)done * (size_t)c->n_vocab;
        else if (logits && last)
            out = logits;
        int ret = ork__forward_batch(s, tokens + done, m, pos + done, out, all);
        if (ret < 0)
            return ret;
        memcpy(s->tokens + pos + done, tokens + done, (size_t)m * sizeof(int32_t));
        s->n_past = pos + done + m;
    }
    return 0;
}
