/* speculative.c -- speculative decoding (ork-engine/speculative.h): draft with prompt lookup or
 * a draft model, verify the drafts in one forward of k+1 rows of the target, accept them by
 * speculative sampling over the sampler's final distributions, roll the cache back past the
 * first rejection.
 *
 * Not here: the sampling chain (sampler.c: ork_sampler_probs is its distribution), the forward
 * pass (forward.c), the generation loop (generate.c calls ork_spec_step once per decode step).
 * Everything is allocated at create time; a step allocates nothing. */
#include "model_priv.h"

#include <ork-engine/speculative.h>

#include <ork/alloc.h>
#include <ork/error.h>

#include <math.h>
#include <string.h>

/* llama.cpp's --draft-max 16 / --draft-min 0 (../shared/spec/serving-reference.md §1.4: its newer
 * --spec-draft-n-max defaults to 3), and no confidence cut. */
#define SPEC_DEFAULT_DRAFT_MAX 16
/* The largest draft a step takes: the verify forward is then at most 1 + this rows, and the
 * histogram (ORK_SPEC_M_HIST) still counts every M separately at the bound. */
#define SPEC_DRAFT_CAP (ORK_SPEC_M_HIST - 1)

struct ork_spec {
    struct ork_spec_params p;
    int32_t draft_max_cap;      /* the draft_max sp was created with */
    struct ork_model *target;
    int32_t n_vocab;
    int32_t ctx;                /* room of hist */
    struct ork_session *ds;     /* the draft model's session, or NULL */
    struct ork_sampler *dsmp;   /* the draft's sampler (sampled drafting), or NULL */
    uint64_t dsmp_seed;         /* the target seed and settings dsmp was made for */
    struct ork_sampler_params dsmp_for;
    int32_t *hist;              /* (ctx + 1) the target's tokens and id */
    int32_t *draft;             /* (draft_max_cap) */
    float *q;                   /* (draft_max_cap, n_vocab) the draft's distributions, or NULL */
    bool q_valid;               /* this step's drafts came with q (sampled drafting) */
    float *logits;              /* (draft_max_cap + 1, n_vocab) the verify forward's rows */
    float *pbuf;                /* (n_vocab) the target's distribution of one row */
    float *mbuf;                /* (n_vocab) a row with the end-of-generation ids masked */
    int32_t *eog;               /* end-of-generation ids of the target's vocabulary */
    int32_t n_eog;
    /* the step between ork_spec_draft and ork_spec_verify: the drafts, the position of id
     * (-1: no step drafted), the drafting's start and end */
    int32_t k, pos;
    int64_t t_draft0, t_draft1;
    struct ork_spec_stats st;
};

void ork_spec_params_default(struct ork_spec_params *p)
{
    memset(p, 0, sizeof(*p));
    p->draft_max = SPEC_DEFAULT_DRAFT_MAX;
}

double ork_spec_tau(const struct ork_spec_stats *st)
{
    return st->n_steps ? (double)st->n_tokens / (double)st->n_steps : 0.0;
}

double ork_spec_acceptance(const struct ork_spec_stats *st)
{
    return st->n_drafted ? (double)st->n_accepted / (double)st->n_drafted : 0.0;
}

void ork_spec_stats_add(struct ork_spec_stats *a, const struct ork_spec_stats *b)
{
    a->n_steps += b->n_steps;
    a->n_verify += b->n_verify;
    a->n_drafted += b->n_drafted;
    a->n_accepted += b->n_accepted;
    a->n_tokens += b->n_tokens;
    for (int i = 0; i < ORK_SPEC_M_HIST; i++)
        a->m_hist[i] += b->m_hist[i];
    a->draft_ms += b->draft_ms;
    a->verify_ms += b->verify_ms;
}

int ork_spec_vocab_check(const struct ork_model *target, const struct ork_model *draft)
{
    const struct ork_tokenizer *a = target->tok, *b = draft->tok;
    if (!a || !b)
        return ork_errorf(ORK_EINVAL, "speculative: the %s model has no tokenizer",
                          a ? "draft" : "target");
    int32_t na = target->cfg.n_vocab, nb = draft->cfg.n_vocab;
    if (na != nb)
        return ork_errorf(ORK_EINVAL, "speculative: the draft model's vocabulary has %d tokens, "
                          "the target's %d", nb, na);
    if (ork_tokenizer_bos(a) != ork_tokenizer_bos(b) || ork_tokenizer_eos(a) != ork_tokenizer_eos(b))
        return ork_errorf(ORK_EINVAL, "speculative: the draft model's BOS/EOS ids (%d/%d) differ "
                          "from the target's (%d/%d)", ork_tokenizer_bos(b), ork_tokenizer_eos(b),
                          ork_tokenizer_bos(a), ork_tokenizer_eos(a));
    for (int32_t i = 0; i < na && i < ork_tokenizer_n_vocab(a); i++) {
        size_t la = 0, lb = 0;
        const char *pa = ork_tokenizer_piece(a, i, &la), *pb = ork_tokenizer_piece(b, i, &lb);
        if (la != lb || (la && memcmp(pa, pb, la)) ||
            ork_tokenizer_is_eog(a, i) != ork_tokenizer_is_eog(b, i))
            return ork_errorf(ORK_EINVAL, "speculative: the vocabularies differ at token %d: "
                              "'%.*s' in the draft model, '%.*s' in the target", i,
                              (int)(lb > 64 ? 64 : lb), pb ? pb : "", (int)(la > 64 ? 64 : la),
                              pa ? pa : "");
    }
    return 0;
}

void ork_spec_free(struct ork_spec *sp)
{
    if (!sp)
        return;
    ork_session_free(sp->ds);
    ork_sampler_free(sp->dsmp);
    ork_free(sp->hist);
    ork_free(sp->draft);
    ork_free(sp->q);
    ork_free(sp->logits);
    ork_free(sp->pbuf);
    ork_free(sp->mbuf);
    ork_free(sp->eog);
    ork_free(sp);
}

int ork_spec_create(struct ork_model *target, const struct ork_spec_params *p,
                    struct ork_spec **out)
{
    *out = NULL;
    if (!target || !p)
        return ork_errorf(ORK_EINVAL, "speculative: target and params must not be NULL");
    if (!p->draft && p->lookup <= 0)
        return ork_errorf(ORK_EINVAL, "speculative: give a draft model or a lookup n-gram size");
    if (p->draft_max < 1 || p->draft_max > SPEC_DRAFT_CAP)
        return ork_errorf(ORK_EINVAL, "speculative: draft_max %d must be in [1, %d]",
                          p->draft_max, SPEC_DRAFT_CAP);
    if (p->draft_min < 0 || p->draft_min > p->draft_max)
        return ork_errorf(ORK_EINVAL, "speculative: draft_min %d must be in [0, draft_max %d]",
                          p->draft_min, p->draft_max);
    if (p->lookup < 0 || p->lookup > SPEC_DRAFT_CAP)
        return ork_errorf(ORK_EINVAL, "speculative: lookup %d must be in [0, %d]", p->lookup,
                          SPEC_DRAFT_CAP);
    if (!(p->draft_p_min >= 0.0f && p->draft_p_min <= 1.0f))
        return ork_errorf(ORK_EINVAL, "speculative: draft_p_min %g must be in [0, 1]",
                          (double)p->draft_p_min);
    if (!target->tok)
        return ork_errorf(ORK_EINVAL, "speculative: the target model has no tokenizer");
    int ret;
    if (p->draft && (ret = ork_spec_vocab_check(target, p->draft)) < 0)
        return ret;
    struct ork_spec *sp = ork_calloc(1, sizeof(*sp));
    if (!sp)
        return ORK_ENOMEM;
    sp->p = *p;
    sp->draft_max_cap = p->draft_max;
    sp->target = target;
    sp->n_vocab = target->cfg.n_vocab;
    size_t nv = (size_t)sp->n_vocab, k = (size_t)p->draft_max;
    /* the context a session may hold: the draft session's, and the history buffer */
    sp->ctx = p->ctx_size > 0 ? p->ctx_size : 1 << 16;
    if (p->draft) {
        struct ork_session_params dp;
        ork_session_params_default(&dp);
        dp.ctx_size = p->ctx_size;
        dp.n_threads = p->n_threads;
        if ((ret = ork_session_create(p->draft, &dp, &sp->ds)) < 0)
            goto err;
        sp->ctx = ork_session_ctx_size(sp->ds);
        sp->q = ork_malloc(k * nv * sizeof(float));
    }
    /* hist also holds the verify forward's tokens (at most SPEC_DRAFT_CAP + 1) */
    size_t nh = (size_t)sp->ctx + 1 > SPEC_DRAFT_CAP + 1 ? (size_t)sp->ctx + 1 : SPEC_DRAFT_CAP + 1;
    sp->hist = ork_malloc(nh * sizeof(int32_t));
    sp->draft = ork_malloc(k * sizeof(int32_t));
    sp->logits = ork_malloc((k + 1) * nv * sizeof(float));
    sp->pbuf = ork_malloc(nv * sizeof(float));
    sp->mbuf = ork_malloc(nv * sizeof(float));
    sp->eog = ork_malloc(nv * sizeof(int32_t));
    if (!sp->hist || !sp->draft || !sp->logits || !sp->pbuf || !sp->mbuf || !sp->eog || (p->draft && !sp->q)) {
        ret = ORK_ENOMEM;
        goto err;
    }
    sp->pos = -1;
    for (int32_t i = 0; i < sp->n_vocab; i++)
        if (ork_tokenizer_is_eog(target->tok, i))
            sp->eog[sp->n_eog++] = i;
    *out = sp;
    return 0;
err:
    ork_spec_free(sp);
    return ret;
}

const struct ork_spec_params *ork_spec_params(const struct ork_spec *sp)
{
    return &sp->p;
}

const struct ork_spec_stats *ork_spec_stats(const struct ork_spec *sp)
{
    return &sp->st;
}

void ork_spec_stats_reset(struct ork_spec *sp)
{
    memset(&sp->st, 0, sizeof sp->st);
}

void ork_spec_restart(struct ork_spec *sp)
{
    if (sp->dsmp)
        ork_sampler_reset(sp->dsmp);
}

void ork_spec_set_bounds(struct ork_spec *sp, int32_t draft_max, int32_t draft_min)
{
    sp->p.draft_max = draft_max < 0 ? 0 : draft_max > sp->draft_max_cap ? sp->draft_max_cap
                                                                        : draft_max;
    sp->p.draft_min = draft_min < 0 ? 0 : draft_min;
}

const float *ork_spec_logits(const struct ork_spec *sp, int32_t j)
{
    return sp->logits + (size_t)j * (size_t)sp->n_vocab;
}

/* ---- drafting ---------------------------------------------------------------------------- */

/* Prompt lookup: for n = lookup .. 1, the most recent earlier occurrence of the last n tokens
 * of h[0..len); the tokens that followed it (up to max) are the draft. */
static int32_t draft_lookup(const struct ork_spec *sp, const int32_t *h, int32_t len,
                            int32_t max, int32_t *out)
{
    for (int32_t n = sp->p.lookup < len ? sp->p.lookup : len - 1; n >= 1; n--) {
        const int32_t *suffix = h + len - n;
        for (int32_t i = len - n - 1; i >= 0; i--) {
            if (memcmp(h + i, suffix, (size_t)n * sizeof(int32_t)) != 0)
                continue;
            int32_t k = 0;
            while (k < max && i + n + k < len) {
                out[k] = h[i + n + k];
                k++;
            }
            return k;
        }
    }
    return 0;
}

/* The probability softmax(logits) gives id (the draft's confidence for draft_p_min). */
static float softmax_at(const float *logits, int32_t n, int32_t id)
{
    float max = logits[0];
    for (int32_t i = 1; i < n; i++)
        max = logits[i] > max ? logits[i] : max;
    double sum = 0.0;
    for (int32_t i = 0; i < n; i++)
        sum += exp((double)logits[i] - (double)max);
    return (float)(exp((double)logits[id] - (double)max) / sum);
}

/* The draft sampler for a target sampler's settings: the same temperature, top-k, top-p and
 * min-p, no penalties and no grammar (q may be any distribution the drafts are drawn from),
 * seeded from the target's seed. Greedy targets draft greedily. */
static int draft_sampler(struct ork_spec *sp, const struct ork_sampler_params *tp, uint64_t seed)
{
    if (sp->dsmp && sp->dsmp_seed == seed && sp->dsmp_for.temp == tp->temp &&
        sp->dsmp_for.top_k == tp->top_k && sp->dsmp_for.top_p == tp->top_p &&
        sp->dsmp_for.min_p == tp->min_p)
        return 0;
    ork_sampler_free(sp->dsmp);
    sp->dsmp = NULL;
    struct ork_sampler_params dp = *tp;
    dp.repeat_penalty = 1.0f;
    dp.presence_penalty = 0.0f;
    dp.frequency_penalty = 0.0f;
    dp.penalty_last_n = 0;
    dp.grammar = NULL;
    dp.grammar_vocab = NULL;
    dp.seed = seed ^ 0x5eed5eed5eed5eedull;   /* a stream of its own, reproducible */
    if (dp.seed == ORK_SEED_RANDOM)
        dp.seed--;
    sp->dsmp_seed = seed;
    sp->dsmp_for = *tp;
    return ork_sampler_create(&dp, sp->n_vocab, &sp->dsmp);
}

/* The draft model: bring its session to h[0..len) (keeping the common prefix), then draft up
 * to max tokens; sampled drafting records each token's distribution in sp->q. */
static int draft_model(struct ork_spec *sp, const struct ork_sampler *smp, const int32_t *h,
                       int32_t len, int32_t max, int32_t *out)
{
    struct ork_session *ds = sp->ds;
    if (len + max > ork_session_ctx_size(ds))
        max = ork_session_ctx_size(ds) - len;
    if (max <= 0)
        return 0;
    int32_t keep = 0, np = ork_session_n_past(ds);
    const int32_t *have = ork_session_tokens(ds);
    while (keep < len && keep < np && have[keep] == h[keep])
        keep++;
    if (keep == len)
        keep--;   /* the last token is evaluated again for its logits */
    float *lg = ds->logits;
    int ret = ork_model_eval(ds, h + keep, len - keep, keep, lg, ORK_EVAL_LAST_LOGITS);
    if (ret < 0)
        return ret;
    bool greedy = ork_sampler_greedy(smp);
    int32_t k = 0;
    while (k < max) {
        int32_t x;
        float conf;
        if (greedy) {
            x = 0;
            for (int32_t i = 1; i < sp->n_vocab; i++)
                if (lg[i] > lg[x])
                    x = i;
            conf = sp->p.draft_p_min > 0.0f ? softmax_at(lg, sp->n_vocab, x) : 1.0f;
        } else {
            float *q = sp->q + (size_t)k * (size_t)sp->n_vocab;
            if ((ret = ork_sampler_probs(sp->dsmp, lg, q)) < 0)
                return ret;
            if ((x = ork_sampler_sample_probs(sp->dsmp, q)) < 0)
                return x;
            conf = q[x];
        }
        if (conf < sp->p.draft_p_min)
            break;
        out[k++] = x;
        if (k < max && (ret = ork_model_eval(ds, &x, 1, ork_session_n_past(ds), lg,
                                             ORK_EVAL_LAST_LOGITS)) < 0)
            return ret;
    }
    return k;
}

/* ---- verification ------------------------------------------------------------------------ */

static bool stops_at(const struct ork_spec *sp, const struct ork_sampler_params *sp_params,
                     bool ignore_eos, int32_t id)
{
    return (!ignore_eos || sp_params->grammar) && ork_tokenizer_is_eog(sp->target->tok, id);
}

int ork_spec_verify_token(struct ork_sampler *smp, int32_t n_vocab, const float *logits,
                          int32_t x, const float *q, float *p, int32_t *y)
{
    if (ork_sampler_greedy(smp)) {
        int32_t t = ork_sampler_sample(smp, logits);
        if (t < 0)
            return t;
        ork_sampler_accept(smp, t);
        *y = t;
        return t == x;
    }
    int ret = ork_sampler_probs(smp, logits, p);
    if (ret < 0)
        return ret;
    double qx = q ? (double)q[x] : 1.0, px = (double)p[x];
    /* accept with probability min(1, p(x)/q(x)); p(x) = 0 never passes, p >= q always does */
    if (px > 0.0 && (px >= qx || ork_sampler_uniform(smp) * qx < px)) {
        ork_sampler_choose(smp, x);
        ork_sampler_accept(smp, x);
        *y = x;
        return 1;
    }
    /* rejected: the residual normalize(max(0, p - q)); p itself when p <= q everywhere */
    double left = 0.0;
    for (int32_t i = 0; i < n_vocab; i++) {
        float r = p[i] - (q ? q[i] : (i == x ? 1.0f : 0.0f));
        p[i] = r > 0.0f ? r : 0.0f;
        left += (double)p[i];
    }
    if (left <= 0.0 && (ret = ork_sampler_probs(smp, logits, p)) < 0)
        return ret;
    int32_t t = ork_sampler_sample_probs(smp, p);
    if (t < 0)
        return t;
    ork_sampler_accept(smp, t);
    *y = t;
    return 0;
}

static void mask_eog(const struct ork_spec *sp, float *lg)
{
    for (int32_t i = 0; i < sp->n_eog; i++)
        lg[sp->eog[i]] = -INFINITY;
}

int ork_spec_draft(struct ork_spec *sp, struct ork_session *s, struct ork_sampler *smp, int32_t id,
                   int32_t max_new, const int32_t **rows, int32_t *n_rows)
{
    *n_rows = 0;
    if (max_new < 1)
        return ork_errorf(ORK_EINVAL, "speculative: max_new %d must be >= 1", max_new);
    if (s->m != sp->target)
        return ork_errorf(ORK_EINVAL, "speculative: the session is not the target model's");
    int32_t pos = s->n_past;
    if (pos + 1 > s->p.ctx_size)
        return ork_errorf(ORK_ECONTEXT, "context full: %d tokens", pos);
    int32_t kmax = sp->p.draft_max;
    kmax = kmax < max_new - 1 ? kmax : max_new - 1;
    kmax = kmax < s->p.ctx_size - pos - 1 ? kmax : s->p.ctx_size - pos - 1;
    int32_t k = 0;
    int ret = 0;
    sp->t_draft0 = ork__now_ns();
    sp->q_valid = false;
    if (kmax > 0 && pos + 1 <= sp->ctx) {
        memcpy(sp->hist, s->tokens, (size_t)pos * sizeof(int32_t));
        sp->hist[pos] = id;
        if (sp->p.lookup > 0)
            k = draft_lookup(sp, sp->hist, pos + 1, kmax, sp->draft);
        if (k == 0 && sp->ds) {
            if (!ork_sampler_greedy(smp) &&
                (ret = draft_sampler(sp, ork_sampler_get_params(smp), ork_sampler_seed(smp))) < 0)
                return ret;
            if ((ret = draft_model(sp, smp, sp->hist, pos + 1, kmax, sp->draft)) < 0)
                return ret;
            k = ret;
            sp->q_valid = !ork_sampler_greedy(smp);
        }
        if (k < sp->p.draft_min)
            k = 0;
    }
    sp->t_draft1 = ork__now_ns();
    /* id and the drafts at positions pos .. pos+k (hist is scratch now: the forward's tokens) */
    sp->hist[0] = id;
    memcpy(sp->hist + 1, sp->draft, (size_t)k * sizeof(int32_t));
    sp->k = k;
    sp->pos = pos;
    *rows = sp->hist;
    *n_rows = k + 1;
    return 0;
}

float *ork_spec_rows_logits(struct ork_spec *sp)
{
    return sp->logits;
}

int ork_spec_verify(struct ork_spec *sp, struct ork_session *s, struct ork_sampler *smp,
                    bool ignore_eos, int32_t *out, int32_t *n_out)
{
    *n_out = 0;
    int32_t k = sp->k, pos = sp->pos;
    if (sp->pos < 0 || s->n_past != pos + k + 1)
        return ork_errorf(ORK_EINVAL, "speculative: verify without the %d drafted rows evaluated "
                          "(the cache holds %d tokens)", k + 1, s->n_past);
    sp->pos = -1;
    size_t nv = (size_t)sp->n_vocab;
    bool mask = ignore_eos && !ork_sampler_get_params(smp)->grammar;
    int32_t n = 0, acc = 0;
    int ret;
    for (int32_t j = 0; j <= k; j++) {
        const float *lg = sp->logits + (size_t)j * nv;
        if (mask) {   /* on a copy: ork_spec_logits stays unmasked */
            memcpy(sp->mbuf, lg, nv * sizeof(float));
            mask_eog(sp, sp->mbuf);
            lg = sp->mbuf;
        }
        int32_t y;
        if (j < k) {
            int r = ork_spec_verify_token(smp, sp->n_vocab, lg, sp->draft[j],
                                          sp->q_valid ? sp->q + (size_t)j * nv : NULL, sp->pbuf,
                                          &y);
            if (r < 0)
                return r;
            out[n++] = y;
            if (r == 1)
                acc++;
            if (r == 0 || stops_at(sp, ork_sampler_get_params(smp), ignore_eos, y))
                break;
        } else {
            y = ork_sampler_sample(smp, lg);
            if (y < 0)
                return y;
            if (y >= sp->n_vocab)
                return ork_errorf(ORK_EINVAL, "sampler returned token id %d", y);
            ork_sampler_accept(smp, y);
            out[n++] = y;
        }
    }
    /* the cache keeps id and the accepted drafts before the last produced token */
    if ((ret = ork_session_truncate(s, pos + n)) < 0)
        return ret;
    int64_t t2 = ork__now_ns();
    *n_out = n;
    sp->st.n_steps++;
    sp->st.n_verify += k > 0;
    sp->st.n_drafted += (uint64_t)k;
    sp->st.n_accepted += (uint64_t)acc;
    sp->st.n_tokens += (uint64_t)n;
    sp->st.m_hist[k < ORK_SPEC_M_HIST ? k : ORK_SPEC_M_HIST - 1]++;
    sp->st.draft_ms += (double)(sp->t_draft1 - sp->t_draft0) / 1e6;
    sp->st.verify_ms += (double)(t2 - sp->t_draft1) / 1e6;
    return 0;
}

int ork_spec_step(struct ork_spec *sp, struct ork_session *s, struct ork_sampler *smp, int32_t id,
                  int32_t max_new, bool ignore_eos, int32_t *out, int32_t *n_out)
{
    *n_out = 0;
    const int32_t *rows;
    int32_t n_rows;
    int ret = ork_spec_draft(sp, s, smp, id, max_new, &rows, &n_rows);
    if (ret < 0)
        return ret;
    if ((ret = ork_model_eval(s, rows, n_rows, sp->pos, sp->logits,
                              n_rows > 1 ? ORK_EVAL_ALL_LOGITS : ORK_EVAL_LAST_LOGITS)) < 0) {
        sp->pos = -1;
        return ret;
    }
    return ork_spec_verify(sp, s, smp, ignore_eos, out, n_out);
}
