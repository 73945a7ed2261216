/* batch_eval.c -- multi-sequence decode: one new token for each of several sessions in a single
 * forward pass (the server's continuous batching). Row i of every activation belongs to
 * sessions[i] at its own position; each projection is one ork_matmul over all rows, so a weight
 * matrix streams once per step instead of once per sequence. RoPE uses each row's position and
 * attention runs per (sequence, head) over that sequence's own KV cache, split over the pool.
 *
 * The arithmetic per row is the same as forward.c's with M = 1 (the matmul kernel computes every
 * output element with the same dot product whatever M is), so the logits equal one-at-a-time
 * evaluation. Not here: prefill (forward.c handles runs of consecutive positions). */
#include "model_priv.h"

#include <ork/error.h>

#include <math.h>
#include <string.h>

struct multi_attn_job {
    struct ork_session *const *ss;
    const int32_t *pos;     /* (n_seq) position of each row */
    int32_t n_seq;
    int32_t layer;
    int32_t n_heads, n_kv_heads, head_dim;
    const float *q;         /* (n_seq, n_heads * head_dim) */
    float *out;             /* (n_seq, n_heads * head_dim) */
    float *scores;          /* (nth, ctx) */
    int32_t ctx;
    float scale;
};

static void multi_attn_worker(void *ctx, int ith, int nth)
{
    const struct multi_attn_job *j = ctx;
    int32_t q_dim = j->n_heads * j->head_dim;
    int32_t group = j->n_heads / j->n_kv_heads;
    float *sc = j->scores + (size_t)ith * (size_t)j->ctx;
    int32_t n_items = j->n_seq * j->n_heads;
    for (int32_t it = ith; it < n_items; it += nth) {
        int32_t i = it / j->n_heads, h = it % j->n_heads;
        const struct ork_kv_cache *kv = &j->ss[i]->kv;
        int32_t n_pos = j->pos[i] + 1;                      /* causal: keys 0 .. pos */
        int32_t off = (h / group) * j->head_dim;            /* GQA: the shared kv head */
        const float *qh = j->q + (size_t)i * q_dim + (size_t)h * j->head_dim;
        ork__kv_scores(kv, j->layer, off, j->head_dim, qh, j->scale, n_pos, sc);
        ork_softmax(sc, n_pos);
        ork__kv_weighted_sum(kv, j->layer, off, j->head_dim, sc, n_pos,
                             j->out + (size_t)i * q_dim + (size_t)h * j->head_dim);
    }
}

/* Per-head RMSNorm (qwen3) and RoPE of one row of n_h heads at position pos. */
static void norm_rope_row(float *x, int32_t n_h, const float *norm, const struct ork_model_config *c,
                          int32_t pos)
{
    int neox = c->arch != ORK_ARCH_LLAMA;
    for (int32_t h = 0; h < n_h; h++) {
        float *v = x + (size_t)h * c->head_dim;
        if (norm)
            ork_rmsnorm(v, v, norm, c->head_dim, c->rms_eps);
        ork_rope(v, c->head_dim, c->n_rot, pos, c->rope_base, neox);
    }
}

#define MALLOC_F(ptr, count)                                                                 \
    do {                                                                                     \
        (ptr) = ork_arena_alloc(s0->arena, (size_t)(count) * sizeof(float));                 \
        if (!(ptr))                                                                          \
            return ork_errorf(ORK_ENOMEM, "eval_multi: scratch arena exhausted (%s)", #ptr); \
    } while (0)

#define MMUL(w, in, rows, out)                                                               \
    do {                                                                                     \
        int r_ = ork_matmul(s0->pool, &(w), (in), (rows), (out));                            \
        if (r_ < 0)                                                                          \
            return r_;                                                                       \
    } while (0)

int ork_model_eval_multi(struct ork_session *const *ss, const int32_t *tokens, int32_t n,
                         float *logits)
{
    if (!ss || !tokens || !logits || n < 1)
        return ork_errorf(ORK_EINVAL, "ork_model_eval_multi: no sequences to evaluate");
    struct ork_session *s0 = ss[0];
    const struct ork_model *md = s0->m;
    const struct ork_model_config *c = &md->cfg;
    const struct ork_weights *w = &md->w;
    if (n > s0->p.n_batch)
        return ork_errorf(ORK_EINVAL, "ork_model_eval_multi: %d sequences > n_batch %d of the "
                          "first session", n, s0->p.n_batch);
    for (int32_t i = 0; i < n; i++) {
        const struct ork_session *s = ss[i];
        if (!s || s->m != md)
            return ork_errorf(ORK_EINVAL, "ork_model_eval_multi: session %d is missing or uses "
                              "another model", i);
        for (int32_t k = 0; k < i; k++)
            if (ss[k] == s)
                return ork_errorf(ORK_EINVAL, "ork_model_eval_multi: session %d appears twice", i);
        if (s->kv.ctx > s0->kv.ctx)
            return ork_errorf(ORK_EINVAL, "ork_model_eval_multi: session %d ctx_size %d > the "
                              "first session's %d", i, s->kv.ctx, s0->kv.ctx);
        if (s->n_past >= s->kv.ctx)
            return ork_errorf(ORK_ECONTEXT, "context full: session %d holds %d tokens "
                              "(ctx_size %d)", i, s->n_past, s->kv.ctx);
        if (tokens[i] < 0 || tokens[i] >= c->n_vocab)
            return ork_errorf(ORK_EINVAL, "token id %d at index %d is outside the vocabulary "
                              "(%d tokens)", tokens[i], i, c->n_vocab);
    }

    int32_t dim = c->dim, q_dim = c->n_heads * c->head_dim, kv_dim = c->n_kv_heads * c->head_dim;
    int32_t nth = ork_pool_threads(s0->pool);
    float *x, *xb, *q, *k, *v, *att, *hb, *hb2, *scores;
    ork_arena_reset(s0->arena);
    MALLOC_F(x, (size_t)n * dim);
    MALLOC_F(xb, (size_t)n * dim);
    MALLOC_F(q, (size_t)n * q_dim);
    MALLOC_F(att, (size_t)n * q_dim);
    MALLOC_F(k, (size_t)n * kv_dim);
    MALLOC_F(v, (size_t)n * kv_dim);
    MALLOC_F(hb, (size_t)n * c->ffn_dim);
    MALLOC_F(hb2, (size_t)n * c->ffn_dim);
    MALLOC_F(scores, (size_t)nth * s0->kv.ctx);
    /* Positions: n int32 in the arena (sizeof(int32_t) == sizeof(float) on every target). */
    int32_t *pos = ork_arena_alloc(s0->arena, (size_t)n * sizeof(int32_t));
    if (!pos)
        return ork_errorf(ORK_ENOMEM, "eval_multi: scratch arena exhausted (pos)");
    for (int32_t i = 0; i < n; i++) {
        pos[i] = ss[i]->n_past;
        int ret = ork_get_row(&w->tok_embd, tokens[i], x + (size_t)i * dim);
        if (ret < 0)
            return ret;
    }

    struct multi_attn_job job = {
        .ss = ss, .pos = pos, .n_seq = n, .n_heads = c->n_heads, .n_kv_heads = c->n_kv_heads,
        .head_dim = c->head_dim, .q = q, .out = att, .scores = scores, .ctx = s0->kv.ctx,
        .scale = 1.0f / sqrtf((float)c->head_dim),
    };

    for (int32_t l = 0; l < c->n_layers; l++) {
        const struct ork_layer_weights *L = &w->layers[l];

        for (int32_t i = 0; i < n; i++)
            ork_rmsnorm(xb + (size_t)i * dim, x + (size_t)i * dim, L->attn_norm, dim, c->rms_eps);
        MMUL(L->wq, xb, n, q);
        MMUL(L->wk, xb, n, k);
        MMUL(L->wv, xb, n, v);
        for (int32_t i = 0; i < n; i++) {
            float *qi = q + (size_t)i * q_dim, *ki = k + (size_t)i * kv_dim;
            float *vi = v + (size_t)i * kv_dim;
            if (L->bq) {
                for (int32_t e = 0; e < q_dim; e++)
                    qi[e] += L->bq[e];
                for (int32_t e = 0; e < kv_dim; e++) {
                    ki[e] += L->bk[e];
                    vi[e] += L->bv[e];
                }
            }
            norm_rope_row(qi, c->n_heads, L->q_norm, c, pos[i]);
            norm_rope_row(ki, c->n_kv_heads, L->k_norm, c, pos[i]);
            ork__kv_store(&ss[i]->kv, l, pos[i], ki, vi);
        }
        job.layer = l;
        ork_pool_run(s0->pool, multi_attn_worker, &job);
        MMUL(L->wo, att, n, xb);
        for (size_t e = 0; e < (size_t)n * dim; e++)
            x[e] += xb[e];

        for (int32_t i = 0; i < n; i++)
            ork_rmsnorm(xb + (size_t)i * dim, x + (size_t)i * dim, L->ffn_norm, dim, c->rms_eps);
        MMUL(L->w_gate, xb, n, hb);
        MMUL(L->w_up, xb, n, hb2);
        ork_silu_mul(hb, hb2, (int64_t)n * c->ffn_dim);
        MMUL(L->w_down, hb, n, xb);
        for (size_t e = 0; e < (size_t)n * dim; e++)
            x[e] += xb[e];
    }

    for (int32_t i = 0; i < n; i++)
        ork_rmsnorm(xb + (size_t)i * dim, x + (size_t)i * dim, w->output_norm, dim, c->rms_eps);
    MMUL(w->output, xb, n, logits);
    for (int32_t i = 0; i < n; i++) {
        ss[i]->tokens[pos[i]] = tokens[i];
        ss[i]->n_past = pos[i] + 1;
    }
    return 0;
}
