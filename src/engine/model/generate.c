/* generate.c -- the generation loop: tokenize the prompt, reuse the cached prefix, prefill the
 * rest in batches, then sample one token at a time until n_predict, an end-of-generation token, a
 * stop string or a full context, streaming valid UTF-8 text through a callback.
 *
 * Not here: the sampling math and stop-string matching (sampler.c), detokenization (tokenizer),
 * the forward pass (forward.c). The only allocations are per call, before the loop. */
#include "model_priv.h"

#include <ork-engine/speculative.h>

#include <ork/alloc.h>
#include <ork/error.h>

#include <math.h>
#include <string.h>

/* Bytes one token's text may take in the detokenizer's output (tokenizer.h: cap >= 256 +
 * piece length); pieces longer than this are clipped by the detokenizer's contract. */
#define GEN_PIECE_CAP 1024

void ork_gen_params_default(struct ork_gen_params *p)
{
    memset(p, 0, sizeof(*p));
    ork_sampler_params_default(&p->sampling);
    p->n_predict = -1;
    p->add_special = true;
    p->parse_special = false;
    p->reuse_cache = true;
}

const char *ork_stop_reason_name(enum ork_stop_reason r)
{
    switch (r) {
    case ORK_STOP_NONE:      return "none";
    case ORK_STOP_N_PREDICT: return "length";
    case ORK_STOP_EOG:       return "eog";
    case ORK_STOP_STRING:    return "stop";
    case ORK_STOP_CALLBACK:  return "callback";
    case ORK_STOP_CONTEXT:   return "context";
    }
    return "unknown";
}

static double now_ms(void)
{
    return (double)ork__now_ns() / 1e6;
}

int ork_generate(struct ork_session *s, struct ork_sampler *smp, const char *prompt,
                 const struct ork_gen_params *p, struct ork_gen_stats *stats)
{
    const struct ork_tokenizer *tok = s->m->tok;
    if (!tok)
        return ork_errorf(ORK_EINVAL, "ork_generate: the model was loaded without a tokenizer");
    size_t len = strlen(prompt), n = 0;
    size_t cap = len + 8;   /* first guess; the tokenizer reports the real count */
    int32_t *ids = ork_malloc(cap * sizeof(int32_t));
    if (!ids)
        return ORK_ENOMEM;
    int ret = ork_tokenize(tok, prompt, len, p->add_special, p->parse_special, ids, cap, &n);
    if (ret == ORK_ENOSPC) {
        ork_free(ids);
        cap = n;
        if (!(ids = ork_malloc((cap ? cap : 1) * sizeof(int32_t))))
            return ORK_ENOMEM;
        ret = ork_tokenize(tok, prompt, len, p->add_special, p->parse_special, ids, cap, &n);
    }
    if (ret >= 0) {
        if (n == 0)
            ret = ork_errorf(ORK_EINVAL, "prompt is empty (no tokens)");
        else if (n > INT32_MAX)
            ret = ork_errorf(ORK_ERANGE, "prompt has too many tokens");
        else
            ret = ork_generate_tokens(s, smp, ids, (int32_t)n, p, stats);
    }
    ork_free(ids);
    return ret;
}

/* Emit text through the stop-string filter to the callback; sets *stop on a match or when the
 * callback asks to stop. */
static int emit(const struct ork_gen_params *p, struct ork_stop *st, const char *text, size_t len,
                char *buf, size_t buf_cap, enum ork_stop_reason *stop)
{
    if (len == 0)
        return 0;
    const char *out = text;
    size_t n_out = len;
    if (st) {
        bool stopped = false;
        int r = ork_stop_push(st, text, len, buf, buf_cap, &stopped);
        if (r < 0)
            return r;
        out = buf;
        n_out = (size_t)r;
        if (stopped)
            *stop = ORK_STOP_STRING;
    }
    if (n_out && p->on_text && p->on_text(p->user, out, n_out) != 0 && *stop == ORK_STOP_NONE)
        *stop = ORK_STOP_CALLBACK;
    return 0;
}

/* Mask the end-of-generation ids (ignore_eos) in logits. */
static void mask_ids(float *logits, const int32_t *ids, int32_t n)
{
    for (int32_t i = 0; i < n; i++)
        logits[ids[i]] = -INFINITY;
}

/* Plain decoding's choice of the next token from s->logits: sample, charge the twin, record. */
static int sample_next(struct ork_session *s, struct ork_sampler *smp, const int32_t *eog,
                       int32_t n_eog, int32_t *out)
{
    if (n_eog)
        mask_ids(s->logits, eog, n_eog);
    int32_t id = ork_sampler_sample(smp, s->logits);
    int ret = ork_model_twin_sample(s->m, ork_sampler_kept(smp));
    if (ret < 0)
        return ret;
    if (id < 0 || id >= s->m->cfg.n_vocab)
        return ork_errorf(ORK_EINVAL, "sampler returned token id %d", id);
    ork_sampler_accept(smp, id);
    *out = id;
    return 0;
}

/* The state of one generation's decode loop. */
struct gen_loop {
    struct ork_session *s;
    struct ork_sampler *smp;
    const struct ork_gen_params *p;
    struct ork_gen_stats *st;
    int32_t *eog;               /* ids masked under ignore_eos (no grammar), else NULL */
    int32_t n_eog;
    int32_t queue[ORK_SPEC_M_HIST + 1];   /* tokens a speculative step produced */
    int32_t q_n, q_i;
    int32_t id_pos;             /* the cache position of the current token */
};

/* The token after the current one (at position id_pos): the next one a speculative step left,
 * else a new step (speculative or plain). */
static int next_token(struct gen_loop *g, int32_t id, int32_t *next)
{
    struct ork_session *s = g->s;
    if (g->q_i < g->q_n) {
        *next = g->queue[g->q_i++];
        g->id_pos++;
        return 0;
    }
    int ret;
    if (g->p->spec) {
        int32_t left = g->p->n_predict < 0 ? INT32_MAX : g->p->n_predict - g->st->n_gen;
        if (left > ORK_SPEC_M_HIST)
            left = ORK_SPEC_M_HIST;
        if ((ret = ork_spec_step(g->p->spec, s, g->smp, id, left, g->p->ignore_eos, g->queue,
                                 &g->q_n)) < 0)
            return ret;
        for (int32_t j = 0; j < g->q_n; j++)
            if ((ret = ork_model_twin_sample(s->m, ork_sampler_kept(g->smp))) < 0)
                return ret;
        g->st->n_steps++;
        *next = g->queue[0];
        g->q_i = 1;
        g->id_pos++;
        return 0;
    }
    if ((ret = ork_model_eval(s, &id, 1, s->n_past, s->logits, ORK_EVAL_LAST_LOGITS)) < 0)
        return ret;
    g->id_pos = s->n_past;
    return sample_next(s, g->smp, g->eog, g->n_eog, next);
}

int ork_generate_tokens(struct ork_session *s, struct ork_sampler *smp, const int32_t *ids,
                        int32_t n, const struct ork_gen_params *p, struct ork_gen_stats *stats)
{
    const struct ork_tokenizer *tok = s->m->tok;
    struct ork_gen_stats st0;
    struct ork_gen_stats *stt = stats ? stats : &st0;
    memset(stt, 0, sizeof(*stt));
    if (!tok)
        return ork_errorf(ORK_EINVAL, "ork_generate: the model was loaded without a tokenizer");
    if (n < 1)
        return ork_errorf(ORK_EINVAL, "ork_generate: empty prompt");
    if (n > s->p.ctx_size)
        return ork_errorf(ORK_ECONTEXT, "context full: %d prompt tokens > ctx_size %d", n,
                          s->p.ctx_size);

    /* Longest common prefix with what the cache holds; at least the last prompt token is
     * evaluated again, because its logits are needed to sample. */
    int32_t keep = 0;
    if (p->reuse_cache) {
        while (keep < n && keep < s->n_past && s->tokens[keep] == ids[keep])
            keep++;
        if (keep == n)
            keep--;
    }
    s->n_past = keep;
    stt->n_prompt = n;
    stt->n_reused = keep;

    /* Per-call buffers (the loop itself allocates nothing). */
    size_t longest_stop = 0;
    for (size_t i = 0; i < p->n_stops; i++) {
        size_t l = strlen(p->stops[i]);
        longest_stop = l > longest_stop ? l : longest_stop;
    }
    size_t buf_cap = 2 * GEN_PIECE_CAP + longest_stop;
    char *piece = ork_malloc(GEN_PIECE_CAP);
    char *buf = ork_malloc(buf_cap);
    struct ork_stop *stop_st = NULL;
    struct gen_loop g = { .s = s, .smp = smp, .p = p, .st = stt };
    bool eog_stops = !p->ignore_eos || ork_sampler_get_params(smp)->grammar;
    struct ork_spec_stats spec0 = { .n_steps = 0 };
    if (p->spec) {
        spec0 = *ork_spec_stats(p->spec);
        ork_spec_restart(p->spec);
    }
    int ret = 0;
    if (!piece || !buf) {
        ret = ORK_ENOMEM;
        goto out;
    }
    if (p->n_stops && (ret = ork_stop_create(p->stops, p->n_stops, &stop_st)) < 0)
        goto out;
    if (!eog_stops) {
        if (!(g.eog = ork_malloc((size_t)s->m->cfg.n_vocab * sizeof(int32_t)))) {
            ret = ORK_ENOMEM;
            goto out;
        }
        for (int32_t i = 0; i < s->m->cfg.n_vocab; i++)
            if (ork_tokenizer_is_eog(tok, i))
                g.eog[g.n_eog++] = i;
    }

    for (int32_t i = keep; i < n; i++)
        ork_sampler_accept(smp, ids[i]);

    double t0 = now_ms();
    ret = ork_model_eval(s, ids + keep, n - keep, keep, s->logits, ORK_EVAL_LAST_LOGITS);
    stt->prompt_ms = now_ms() - t0;
    if (ret < 0)
        goto out;

    struct ork_detok dt;
    ork_detok_init(&dt, tok, false);
    enum ork_stop_reason stop = ORK_STOP_NONE;
    double t1 = now_ms();
    int32_t id = -1;
    g.id_pos = s->n_past;
    if (p->n_predict == 0)
        stop = ORK_STOP_N_PREDICT;
    else if ((ret = sample_next(s, smp, g.eog, g.n_eog, &id)) < 0)
        goto out;
    while (stop == ORK_STOP_NONE) {
        if (eog_stops && ork_tokenizer_is_eog(tok, id)) {
            stop = ORK_STOP_EOG;
            break;
        }
        stt->n_gen++;
        int len = ork_detok_push(&dt, id, piece, GEN_PIECE_CAP);
        if (len < 0) {
            ret = len;
            goto out;
        }
        if ((ret = emit(p, stop_st, piece, (size_t)len > GEN_PIECE_CAP ? GEN_PIECE_CAP : (size_t)len,
                        buf, buf_cap, &stop)) < 0)
            goto out;
        if (stop != ORK_STOP_NONE)
            break;
        if (p->n_predict >= 0 && stt->n_gen >= p->n_predict) {
            stop = ORK_STOP_N_PREDICT;   /* no need to evaluate the last token */
            break;
        }
        if (g.id_pos >= s->p.ctx_size) {
            stop = ORK_STOP_CONTEXT;
            break;
        }
        if ((ret = next_token(&g, id, &id)) < 0)
            goto out;
    }
    /* A speculative step may have cached tokens past the one generation stopped at: the cache
     * ends where plain decoding's would (before the current token). */
    if (s->n_past > g.id_pos && (ret = ork_session_truncate(s, g.id_pos)) < 0)
        goto out;
    stt->gen_ms = now_ms() - t1;
    stt->stop = stop;
    if (p->spec) {
        const struct ork_spec_stats *sp1 = ork_spec_stats(p->spec);
        stt->n_drafted = (int32_t)(sp1->n_drafted - spec0.n_drafted);
        stt->n_accepted = (int32_t)(sp1->n_accepted - spec0.n_accepted);
    }

    /* Text held back for incomplete UTF-8 or a possible stop-string prefix. */
    if (stop != ORK_STOP_STRING && stop != ORK_STOP_CALLBACK) {
        enum ork_stop_reason dummy = ORK_STOP_NONE;
        int len = ork_detok_flush(&dt, piece, GEN_PIECE_CAP);
        if (len > 0 && (ret = emit(p, stop_st, piece, (size_t)len, buf, buf_cap, &dummy)) < 0)
            goto out;
        if (stop_st && dummy == ORK_STOP_NONE) {
            int r = ork_stop_flush(stop_st, buf, buf_cap);
            if (r > 0 && p->on_text)
                p->on_text(p->user, buf, (size_t)r);
        }
        if (dummy == ORK_STOP_STRING)
            stt->stop = ORK_STOP_STRING;
    }
    ret = 0;
out:
    if (stop_st)
        ork_stop_free(stop_st);
    ork_free(g.eog);
    ork_free(piece);
    ork_free(buf);
    return ret;
}
