/* forward.c -- the transformer forward pass on the CPU, for a batch of M tokens at consecutive
 * positions (prefill: M up to n_batch; decode: M = 1). Every projection is one ork_matmul over
 * the M rows (ork_matmul_act: f32 activations, or rounded like the reference engines with
 * act_quant), so a weight matrix streams once per batch. Attention is causal over the KV cache
 * (kv.c) and split over the thread pool by (token, KV head).
 *
 * Per layer, as in the published models (llama; qwen2 adds q/k/v biases; qwen3 adds per-head
 * RMSNorm of q and k before RoPE; qwen2/3 rotate NEOX-style halves, llama adjacent pairs):
 *   h  = x + Wo * attn(rope(Wq*n(x) [+bq]), rope(Wk*n(x) [+bk]), Wv*n(x) [+bv])
 *   x' = h + Wdown * (silu(Wgate*n(h)) * Wup*n(h))
 * then logits = Wout * rmsnorm(x).
 *
 * With the NPU executor (npu_exec.c) each projection group is offered to it first; when it
 * splits the O projection by heads, attention runs in two head ranges around the asynchronous
 * submit of the first O half, so the second range is computed while that half is on the NPU.
 *
 * Not here: weight binding (model.c), cache storage (kv.c), sampling (generate.c). Activations
 * come from the session's arena, reset per batch: nothing is allocated per token. */
#include "model_priv.h"

#include <ork/error.h>

#include <math.h>
#include <stdatomic.h>
#include <string.h>

/* Rows of one multi-session pass (stack arrays); larger requests run in several passes. */
#define ORK_EVAL_MULTI_MAX 64

/* Below this many multiply-adds an operation runs on the calling thread: waking the pool and
 * waiting for it costs on the order of 10 us (more when the cores are shared), which is about
 * 64K multiply-adds of the SIMD dot products. Measured on stories260K decode: dispatching its
 * 4K..32K-MAC matmuls to 2 threads made decode 2-4x slower than one thread. */
#define FWD_MIN_PARALLEL_MACS (1 << 16)
/* Query heads of a GQA group that attention computes in one pass over the KV head's keys and
 * values (ork__kv_scores / ork__kv_weighted_sum with two queries, the same bits per head):
 * decode attention at 512 tokens (Qwen3-1.7B shape, t=2): 1.97-2.01 -> 1.70-1.80 ms per token,
 * tg128 0.67-0.70 -> 0.61-0.63 (docs/engine.md "KV cache layout"). */
#define FWD_ATTN_PAIR 2

/* Number of arena allocations per batch (for the alignment slack in the size estimate). */
#define FWD_N_BUFFERS 12
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
                    + (size_t)n_threads * FWD_ATTN_PAIR * (size_t)ctx;  /* attention scores */
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

/* The rows of one forward batch: M tokens, each with the KV cache it attends to and writes,
 * and its position. A prefill batch is M consecutive positions of one session; a multi-session
 * decode batch is one token from each of M sessions. */
struct fwd_rows {
    int32_t n;
    const int32_t *tokens;                  /* (n) */
    struct ork_kv_cache *kv0;               /* every row's cache when kv == NULL */
    struct ork_kv_cache *const *kv;         /* (n) per-row caches, or NULL */
    int32_t pos0;                           /* row i is at pos0 + i when pos == NULL */
    const int32_t *pos;                     /* (n) per-row positions, or NULL */
};

static inline struct ork_kv_cache *row_kv(const struct fwd_rows *r, int32_t i)
{
    return r->kv ? r->kv[i] : r->kv0;
}

static inline int32_t row_pos(const struct fwd_rows *r, int32_t i)
{
    return r->pos ? r->pos[i] : r->pos0 + i;
}

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
    atomic_int next;        /* next (row, KV head) item to take */
    /* prep: each item first norms and rotates its KV head's k and its query heads' q and
     * stores the row's k and v for that head (only when no other item reads them: see
     * attn_prep_in_items); else the caller has done it for all rows and heads */
    bool prep;
    float *k, *v;           /* (n, n_kv_heads * head_dim) */
    const float *q_norm, *k_norm;
    const struct ork_model *md;
};

static void norm_rope_one(float *v, const float *norm, const struct ork_model *md, int32_t pos);

/* Threads take (row, KV head) items from j->next (ork_pool_run_shared): an item computes the
 * query heads of [h0, h1) that share that KV head (GQA), one after the other, so the head's
 * keys and values come from memory once and from cache for the others. Each head's bits do not
 * depend on which thread computes it or with which others. */
static void attn_worker(void *ctx, int ith, int nth)
{
    struct attn_job *j = ctx;
    int32_t q_dim = j->n_heads * j->head_dim;
    int32_t group = j->n_heads / j->n_kv_heads;
    float *sc = j->scores + (size_t)ith * FWD_ATTN_PAIR * (size_t)j->ctx;
    int32_t g0 = j->h0 / group, g1 = (j->h1 + group - 1) / group;     /* KV heads touched */
    int32_t ng = g1 - g0;
    int32_t n_items = j->rows->n * ng;
    for (int32_t it; (it = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed)) <
                     n_items;) {
        int32_t i = it / ng, kvh = g0 + it % ng;
        struct ork_kv_cache *kv = row_kv(j->rows, i);
        if (it + nth < n_items) {   /* likely this thread's next item: its runs' first rows */
            int32_t i2 = (it + nth) / ng;
            ork__kv_prefetch_head(row_kv(j->rows, i2), j->layer, g0 + (it + nth) % ng,
                                  row_pos(j->rows, i2) + 1);
        }
        int32_t n_pos = row_pos(j->rows, i) + 1;            /* causal: keys 0 .. pos */
        int32_t ha = kvh * group > j->h0 ? kvh * group : j->h0;
        int32_t hb = (kvh + 1) * group < j->h1 ? (kvh + 1) * group : j->h1;
        if (j->prep) {
            int32_t pos = n_pos - 1;
            size_t kv_at = ((size_t)i * j->n_kv_heads + kvh) * j->head_dim;
            norm_rope_one(j->k + kv_at, j->k_norm, j->md, pos);
            ork__kv_store_head(kv, j->layer, pos, kvh, j->k + kv_at, j->v + kv_at);
            for (int32_t h = ha; h < hb; h++)
                norm_rope_one(j->q + (size_t)i * q_dim + (size_t)h * j->head_dim, j->q_norm,
                              j->md, pos);
        }
        for (int32_t h = ha, nq; h < hb; h += nq) {
            nq = hb - h < FWD_ATTN_PAIR ? (int)(hb - h) : FWD_ATTN_PAIR;
            const float *qs[FWD_ATTN_PAIR];
            float *ss[FWD_ATTN_PAIR], *os[FWD_ATTN_PAIR];
            for (int u = 0; u < nq; u++) {
                size_t at = (size_t)i * q_dim + (size_t)(h + u) * j->head_dim;
                qs[u] = j->q + at;
                ss[u] = sc + (size_t)u * (size_t)j->ctx;
                os[u] = j->out + at;
            }
            ork__kv_scores(kv, j->layer, kvh, qs, nq, j->scale, n_pos, ss);
            for (int u = 0; u < nq; u++)
                ork_softmax(ss[u], n_pos);
            ork__kv_weighted_sum(kv, j->layer, kvh, (const float *const *)ss, nq, n_pos, os);
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

/* Per-head RMSNorm (qwen3, when norm is set) then RoPE of one head at position pos. */
static void norm_rope_one(float *v, const float *norm, const struct ork_model *md, int32_t pos)
{
    const struct ork_model_config *c = &md->cfg;
    int32_t hd = c->head_dim;
    if (norm)
        ork_rmsnorm(v, v, norm, hd, c->rms_eps);
    ork_rope_ext(v, hd, c->n_rot, pos, c->rope_base, md->arch->rope == ORK_ROPE_NEOX,
                 md->w.rope_freqs, c->rope_freq_scale);
}

/* norm_rope_one for heads [h0, h1) of the rows of n_h heads at their positions. */
static void norm_rope_heads(float *x, int32_t n_h, int32_t h0, int32_t h1, const float *norm,
                            const struct ork_model *md, const struct fwd_rows *r)
{
    int32_t hd = md->cfg.head_dim;
    for (int32_t i = 0; i < r->n; i++)
        for (int32_t h = h0; h < h1; h++)
            norm_rope_one(x + ((size_t)i * n_h + h) * hd, norm, md, row_pos(r, i));
}

/* Whether the attention items may do the rows' q/k norms, RoPE and KV stores themselves
 * (attn_job.prep): when every row has a cache of its own (one row, or one token from each of
 * several sessions), item (row, KV head) is the only one that writes that row's K and V of the
 * head and the only one that reads them; rows of one sequence (prefill) read each other's, so
 * the stores must all come first. Doing it in the items runs it on every thread and on the
 * core that reads it next, instead of on the caller alone between two pool runs. */
static bool attn_prep_in_items(const struct fwd_rows *r)
{
    return r->n == 1 || r->kv != NULL;
}

#define ALLOC_F(ptr, count)                                                                 \
    do {                                                                                    \
        (ptr) = ork_arena_alloc(s->arena, (size_t)(count) * sizeof(float));                 \
        if (!(ptr))                                                                         \
            return ork_errorf(ORK_ENOMEM, "forward: scratch arena exhausted (%s)", #ptr);   \
    } while (0)

/* The pool for an operation of `macs` multiply-adds, or NULL (calling thread) when small. */
static struct ork_pool *pool_for(const struct ork_session *s, double macs)
{
    return macs >= (double)FWD_MIN_PARALLEL_MACS ? s->pool : NULL;
}

/* Matrices sharing the input `in` (Q/K/V, gate/up; or one) in one call: the input is
 * quantised once and one pool dispatch covers all their rows (ork_matmul_act_multi; same bits
 * as one call per matrix). `next` (n_next matrices) is the call after this one: a decode
 * thread out of rows reads ahead into it (ork_matmul_act_multi_next). */
#define MATMUL_MULTI(ws, n_w, in, rows, outs, next, n_next)                                 \
    do {                                                                                    \
        double macs_ = 0;                                                                   \
        for (int q_ = 0; q_ < (n_w); q_++)                                                  \
            macs_ += (double)(ws)[q_]->n_rows * (double)(ws)[q_]->n_cols * (rows);          \
        int64_t t_ = phase_begin(s);                                                        \
        int r_ = ork_matmul_act_multi_next(pool_for(s, macs_), (ws), (n_w), (in), (rows),   \
                                           (outs), act, (next), (n_next));                  \
        phase_end(s, t_, &ph->matmul_ns);                                                   \
        if (r_ < 0)                                                                         \
            return r_;                                                                      \
    } while (0)

#define MATMUL(w, in, rows, out, next, n_next)                                              \
    MATMUL_MULTI((const struct ork_mat *const[]){ &(w) }, 1, in, rows,                     \
                 (float *const[]){ (out) }, next, n_next)

/* The NPU executor takes op (with its outputs) when it holds it: sets npu_done to 1 when
 * done there, 0 when the CPU must run it; returns on errors. */
#define NPU_RUN(op, layer, in, rows, ...)                                                   \
    do {                                                                                    \
        npu_done = ork__npu_exec_run(md->npu, (op), (layer), (in), (rows),                  \
                                     (float *const[]){ __VA_ARGS__ });                      \
        if (npu_done < 0)                                                                   \
            return npu_done;                                                                \
    } while (0)

/* ---- one batch --------------------------------------------------------------------------- */

/* One batch of rows through the model, with the pool, arena and options of session s. */
static int forward_rows_run(struct ork_session *s, const struct fwd_rows *r, float *logits,
                            bool all)
{
    int32_t n = r->n;
    const int32_t *tokens = r->tokens;
    const struct ork_model *md = s->m;
    const struct ork_model_config *c = &md->cfg;
    const struct ork_weights *w = &md->w;
    int32_t dim = c->dim, q_dim = c->n_heads * c->head_dim, kv_dim = c->n_kv_heads * c->head_dim;
    int32_t nth = ork_pool_threads(s->pool);
    enum ork_act act = s->p.act_quant ? ORK_ACT_QUANT : ORK_ACT_F32;
    struct ork__phases *ph = &s->phases[n > 1];
    float *x, *xb, *q, *k, *v, *att, *hb, *hb2, *scores;
    int npu_done;

    ork_arena_reset(s->arena);
    ALLOC_F(x, (size_t)n * dim);
    ALLOC_F(xb, (size_t)n * dim);
    ALLOC_F(q, (size_t)n * q_dim);
    ALLOC_F(att, (size_t)n * q_dim);
    ALLOC_F(k, (size_t)n * kv_dim);
    ALLOC_F(v, (size_t)n * kv_dim);
    ALLOC_F(hb, (size_t)n * c->ffn_dim);
    ALLOC_F(hb2, (size_t)n * c->ffn_dim);
    ALLOC_F(scores, (size_t)nth * FWD_ATTN_PAIR * s->kv.ctx);

    for (int32_t i = 0; i < n; i++) {
        int ret = ork_get_row(&w->tok_embd, tokens[i], x + (size_t)i * dim);
        if (ret < 0)
            return ret;
    }

    struct attn_job job = {
        .rows = r, .n_heads = c->n_heads, .n_kv_heads = c->n_kv_heads,
        .head_dim = c->head_dim, .q = q, .out = att, .scores = scores, .ctx = s->kv.ctx,
        .scale = 1.0f / sqrtf((float)c->head_dim), .k = k, .v = v, .md = md,
    };

    /* attention: rows x n_heads x (pos + 1 keys) x head_dim, twice (scores, weighted sum) */
    double keys = 0;
    for (int32_t i = 0; i < n; i++)
        keys += (double)row_pos(r, i) + 1;
    struct ork_pool *attn_pool = pool_for(s, 2.0 * keys * c->n_heads * c->head_dim);

    for (int32_t l = 0; l < c->n_layers; l++) {
        const struct ork_layer_weights *L = &w->layers[l];

        /* attention block */
        rmsnorm_rows(xb, x, L->attn_norm, n, dim, c->rms_eps);
        NPU_RUN(ORK__NPU_QKV, l, xb, n, q, k, v);
        if (!npu_done) {
            const struct ork_mat *const qkv[] = { &L->wq, &L->wk, &L->wv };
            float *const qkv_out[] = { q, k, v };
            const struct ork_mat *const o[] = { &L->wo };
            MATMUL_MULTI(qkv, 3, xb, n, qkv_out, o, 1);
        }
        if (L->bq) {
            add_rows(q, L->bq, n, q_dim);
            add_rows(k, L->bk, n, kv_dim);
            add_rows(v, L->bv, n, kv_dim);
        }
        /* heads of the O projection's first half when the NPU executor overlaps it with the
         * second half's attention (0: one O projection after all heads) */
        int32_t ha = ork__npu_exec_o_split(md->npu, l, n, c->n_heads);
        job.layer = l;
        job.h0 = 0;
        job.h1 = ha ? ha : c->n_heads;
        job.prep = !ha && attn_prep_in_items(r);
        job.q_norm = L->q_norm;
        job.k_norm = L->k_norm;
        if (!job.prep) {
            norm_rope_heads(k, c->n_kv_heads, 0, c->n_kv_heads, L->k_norm, md, r);
            for (int32_t i = 0; i < n; i++)
                ork__kv_store(row_kv(r, i), l, row_pos(r, i), k + (size_t)i * kv_dim,
                              v + (size_t)i * kv_dim);
            norm_rope_heads(q, c->n_heads, job.h0, job.h1, L->q_norm, md, r);
        }
        attention(&job, attn_pool, s, &ph->attn_ns);
        if (ha) {
            int ret = ork__npu_exec_o_submit(md->npu, l, att, n);
            if (ret < 0)
                return ret;
            /* the other heads while the first half's O projection runs on the NPU */
            job.h0 = ha;
            job.h1 = c->n_heads;
            norm_rope_heads(q, c->n_heads, job.h0, job.h1, L->q_norm, md, r);
            attention(&job, attn_pool, s, &ph->attn_ns);
            if ((ret = ork__npu_exec_o_finish(md->npu, l, att, n, xb)) < 0)
                return ret;
        } else {
            NPU_RUN(ORK__NPU_O, l, att, n, xb);
            const struct ork_mat *const ffn_in[] = { &L->w_gate, &L->w_up };
            if (!npu_done)
                MATMUL(L->wo, att, n, xb, ffn_in, 2);
        }
        for (size_t i = 0; i < (size_t)n * dim; i++)
            x[i] += xb[i];

        /* feed-forward block (SwiGLU) */
        rmsnorm_rows(xb, x, L->ffn_norm, n, dim, c->rms_eps);
        NPU_RUN(ORK__NPU_GATE_UP, l, xb, n, hb, hb2);
        if (!npu_done) {
            const struct ork_mat *const gate_up[] = { &L->w_gate, &L->w_up };
            float *const gate_up_out[] = { hb, hb2 };
            const struct ork_mat *const down[] = { &L->w_down };
            MATMUL_MULTI(gate_up, 2, xb, n, gate_up_out, down, 1);
        }
        ork_silu_mul(hb, hb2, (int64_t)n * c->ffn_dim);
        NPU_RUN(ORK__NPU_DOWN, l, hb, n, xb);
        /* after the last layer: the LM head, or the first layer of the next batch */
        const struct ork_layer_weights *L1 = &w->layers[l + 1 < c->n_layers ? l + 1 : 0];
        const struct ork_mat *const after_down[] = { &L1->wq, &L1->wk, &L1->wv };
        const struct ork_mat *const lm_head[] = { &w->output };
        bool to_head = l + 1 == c->n_layers && logits;
        if (!npu_done)
            MATMUL(L->w_down, hb, n, xb, to_head ? lm_head : after_down, to_head ? 1 : 3);
        for (size_t i = 0; i < (size_t)n * dim; i++)
            x[i] += xb[i];
    }

    if (!logits)
        return 0;
    const struct ork_mat *const first[] = { &w->layers[0].wq, &w->layers[0].wk,
                                            &w->layers[0].wv };
    if (all) {
        rmsnorm_rows(xb, x, w->output_norm, n, dim, c->rms_eps);
        NPU_RUN(ORK__NPU_LM_HEAD, 0, xb, n, logits);
        if (!npu_done)
            MATMUL(w->output, xb, n, logits, first, 3);
    } else {
        ork_rmsnorm(xb, x + (size_t)(n - 1) * dim, w->output_norm, dim, c->rms_eps);
        NPU_RUN(ORK__NPU_LM_HEAD, 0, xb, 1, logits);
        if (!npu_done)
            MATMUL(w->output, xb, 1, logits, first, 3);
    }
    return 0;
}

/* forward_rows_run bracketed for the NPU executor's counters (no-op on the CPU). */
static int forward_rows(struct ork_session *s, const struct fwd_rows *r, float *logits, bool all)
{
    ork__npu_exec_batch_begin(s->m->npu);
    int64_t t0 = phase_begin(s);
    int ret = forward_rows_run(s, r, logits, all);
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
    return forward_rows(s, &r, logits, all);
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

int ork__forward_multi(struct ork_session *const *sessions, const int32_t *tokens, int32_t n,
                       float *logits)
{
    if (!sessions || !tokens || !logits || n < 1)
        return ork_errorf(ORK_EINVAL, "ork_model_eval_multi: sessions, tokens and logits are "
                          "required (n = %d)", n);
    struct ork_session *s0 = sessions[0];
    const struct ork_model *md = s0->m;
    const struct ork_model_config *c = &md->cfg;
    for (int32_t i = 0; i < n; i++) {
        const struct ork_session *si = sessions[i];
        if (si->m != md)
            return ork_errorf(ORK_EINVAL, "ork_model_eval_multi: session %d uses another model", i);
        if (si->kv.ctx > s0->kv.ctx)
            return ork_errorf(ORK_EINVAL, "ork_model_eval_multi: session %d has ctx_size %d > "
                              "session 0's %d", i, si->kv.ctx, s0->kv.ctx);
        for (int32_t k = 0; k < i; k++)
            if (sessions[k] == si)
                return ork_errorf(ORK_EINVAL, "ork_model_eval_multi: session %d appears twice", i);
        if (si->n_past + 1 > si->kv.ctx)
            return ork_errorf(ORK_ECONTEXT, "context full: %d tokens > ctx_size %d (session %d)",
                              si->n_past + 1, si->kv.ctx, i);
        if (tokens[i] < 0 || tokens[i] >= c->n_vocab)
            return ork_errorf(ORK_EINVAL, "token id %d for session %d is outside the vocabulary "
                              "(%d tokens)", tokens[i], i, c->n_vocab);
    }
    /* Rows per pass: the scratch of session 0 holds n_batch rows. */
    struct ork_kv_cache *kvs[ORK_EVAL_MULTI_MAX];
    int32_t pos[ORK_EVAL_MULTI_MAX];
    int32_t step = s0->p.n_batch < ORK_EVAL_MULTI_MAX ? s0->p.n_batch : ORK_EVAL_MULTI_MAX;
    for (int32_t done = 0; done < n; done += step) {
        int32_t m = n - done < step ? n - done : step;
        for (int32_t i = 0; i < m; i++) {
            kvs[i] = &sessions[done + i]->kv;
            pos[i] = sessions[done + i]->n_past;
        }
        struct fwd_rows r = { .n = m, .tokens = tokens + done, .kv = kvs, .pos = pos };
        int ret = forward_rows(s0, &r, logits + (size_t)done * (size_t)c->n_vocab, true);
        if (ret < 0)
            return ret;
        for (int32_t i = 0; i < m; i++) {
            struct ork_session *si = sessions[done + i];
            si->tokens[si->n_past++] = tokens[done + i];
        }
    }
    return 0;
}
