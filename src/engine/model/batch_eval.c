/* batch_eval.c -- ork_model_eval_multi_rows and ork_model_eval_multi (engine.h): new tokens
 * for each of several sessions in a single forward pass (the server's continuous batching, and
 * its speculating slots' verify rows beside the plain slots' one row). The layer code is
 * forward.c's: every row of every activation belongs to one session at its own position, and
 * each projection is one matmul over all rows, so a weight matrix streams once per step
 * instead of once per sequence; a session's several rows attend causally to its cache and to
 * each other (their K/V are stored before attention). */
#include "model_priv.h"

#include <ork/error.h>

#include <string.h>

/* Rows of one multi-session pass (stack arrays): the default n_batch (model_session.c
 * ORK_BATCH_DEFAULT); larger requests, or a first session with a smaller n_batch, run in
 * several passes split at session boundaries. */
#define ORK_EVAL_MULTI_MAX 256

/* Rows of session i: n_tok[i], or 1 when n_tok is NULL. */
static inline int32_t rows_of(const int32_t *n_tok, int32_t i)
{
    return n_tok ? n_tok[i] : 1;
}

static int check_multi(struct ork_session *const *ss, const int32_t *n_tok, const int32_t *tokens,
                       int32_t n_seq, int32_t step)
{
    struct ork_session *s0 = ss[0];
    const struct ork_model *md = s0->m;
    int32_t n_vocab = md->cfg.n_vocab;
    for (int32_t i = 0, at = 0; i < n_seq; at += rows_of(n_tok, i++)) {
        const struct ork_session *si = ss[i];
        if (si->m != md)
            return ork_errorf(ORK_EINVAL, "ork_model_eval_multi: session %d uses another model", i);
        if (si->kv.ctx > s0->kv.ctx)
            return ork_errorf(ORK_EINVAL, "ork_model_eval_multi: session %d has ctx_size %d > "
                              "session 0's %d", i, si->kv.ctx, s0->kv.ctx);
        for (int32_t k = 0; k < i; k++)
            if (ss[k] == si)
                return ork_errorf(ORK_EINVAL, "ork_model_eval_multi: session %d appears twice", i);
        if (rows_of(n_tok, i) < 1 || rows_of(n_tok, i) > step)
            return ork_errorf(ORK_EINVAL, "ork_model_eval_multi: session %d has %d rows (1 .. %d "
                              "per pass)", i, rows_of(n_tok, i), step);
        if ((int64_t)si->n_past + rows_of(n_tok, i) > si->kv.ctx)
            return ork_errorf(ORK_ECONTEXT, "context full: %lld tokens > ctx_size %d (session %d)",
                              (long long)si->n_past + rows_of(n_tok, i), si->kv.ctx, i);
        for (int32_t j = 0; j < rows_of(n_tok, i); j++)
            if (tokens[at + j] < 0 || tokens[at + j] >= n_vocab)
                return ork_errorf(ORK_EINVAL, "token id %d for session %d is outside the "
                                  "vocabulary (%d tokens)", tokens[at + j], i, n_vocab);
    }
    return 0;
}

/* Sessions [i0, i1) (rows tokens[0 .. m)) in one forward of s0, then their caches' tokens. */
static int multi_pass(struct ork_session *s0, struct ork_session *const *ss, const int32_t *n_tok,
                      int32_t i0, int32_t i1, const int32_t *tokens, float *logits)
{
    struct ork_kv_cache *kvs[ORK_EVAL_MULTI_MAX];
    int32_t pos[ORK_EVAL_MULTI_MAX];
    int32_t m = 0;
    bool shared = false;
    for (int32_t i = i0; i < i1; i++) {
        shared |= rows_of(n_tok, i) > 1;
        for (int32_t j = 0; j < rows_of(n_tok, i); j++, m++) {
            kvs[m] = &ss[i]->kv;
            pos[m] = ss[i]->n_past + j;
        }
    }
    struct fwd_rows r = { .n = m, .tokens = tokens, .kv = kvs, .pos = pos, .shared = shared };
    int ret = ork__forward_rows(s0, &r, logits, true);
    if (ret < 0)
        return ret;
    for (int32_t i = i0, at = 0; i < i1; at += rows_of(n_tok, i++)) {
        struct ork_session *si = ss[i];
        int32_t last = si->n_past + rows_of(n_tok, i) - 1;
        if (last > si->kv.hi)
            si->kv.hi = last;
        memcpy(si->tokens + si->n_past, tokens + at, (size_t)rows_of(n_tok, i) * sizeof(int32_t));
        si->n_past = last + 1;
    }
    return 0;
}

int ork_model_eval_multi_rows(struct ork_session *const *ss, const int32_t *n_tok,
                              const int32_t *tokens, int32_t n_seq, float *logits)
{
    if (!ss || !tokens || !logits || n_seq < 1)
        return ork_errorf(ORK_EINVAL, "ork_model_eval_multi: sessions, tokens and logits are "
                          "required (n = %d)", n_seq);
    struct ork_session *s0 = ss[0];
    int32_t step = s0->p.n_batch < ORK_EVAL_MULTI_MAX ? s0->p.n_batch : ORK_EVAL_MULTI_MAX;
    int ret = check_multi(ss, n_tok, tokens, n_seq, step);
    if (ret < 0)
        return ret;
    for (int32_t i = 0; i < n_seq; i++)
        if ((ret = ork__rewind_rings(ss[i], ss[i]->n_past)) < 0)
            return ret;
    size_t nv = (size_t)s0->m->cfg.n_vocab;
    for (int32_t i0 = 0, at = 0, i1; i0 < n_seq; i0 = i1) {
        int32_t m = 0;
        for (i1 = i0; i1 < n_seq && m + rows_of(n_tok, i1) <= step; i1++)
            m += rows_of(n_tok, i1);
        if ((ret = multi_pass(s0, ss, n_tok, i0, i1, tokens + at, logits + (size_t)at * nv)) < 0)
            return ret;
        at += m;
    }
    return 0;
}

int ork__forward_multi(struct ork_session *const *ss, const int32_t *tokens, int32_t n,
                       float *logits)
{
    return ork_model_eval_multi_rows(ss, NULL, tokens, n, logits);
}

int ork_model_eval_multi(struct ork_session *const *ss, const int32_t *tokens, int32_t n,
                         float *logits)
{
    return ork__forward_multi(ss, tokens, n, logits);
}
