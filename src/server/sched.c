/* sched.c -- slots and the scheduler of the server: a bounded queue of generation tasks, N slots
 * (each an engine session with its own KV cache), and one thread that runs decode steps.
 *
 * One step: free the slots of cancelled tasks; move queued tasks into idle slots (the slot whose
 * cache shares the longest prefix with the prompt, else the least recently used) and prefill
 * them, keeping the shared prefix; sample one token for every generating slot (text through the
 * streaming detokenizer and stop-string filter into the task's output); then evaluate all the
 * sampled tokens together with ork_model_eval_multi (one forward pass, M = generating slots), or
 * slot by slot when batching is off. A speculating slot drafts first and its verify rows (its
 * pending token and the drafts) join the same forward (ork_model_eval_multi_rows: M = every
 * row), then it judges them. A request that arrives mid-step joins at the next step.
 *
 * Embeddings and /slots actions are tasks too: they wait for their slot like a generation,
 * then run in one go on this thread (which alone touches the sessions). Log-probabilities are
 * computed by probs.c's worker from a copy of the logits.
 *
 * Not here: HTTP (http.c), JSON (routes.c, request.c). */
#include "srv_priv.h"

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/log.h>

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Bytes one token's text may take (tokenizer.h: the detokenizer needs cap >= 256 + piece). */
#define SCHED_PIECE_CAP 1024

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- tasks ------------------------------------------------------------------------------- */

struct srv_task *ork__srv_task_new(void)
{
    struct srv_task *t = ork_calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    if (pthread_cond_init(&t->cv, NULL) != 0) {
        ork_free(t);
        return NULL;
    }
    t->refs = 1;
    t->slot = -1;
    t->slot_used = -1;
    t->stop_word = -1;
    t->target_slot = -1;
    t->rq = &t->req;
    t->wake = &t->cv;
    return t;
}

bool ork__srv_task_complete(const struct srv_task *t)
{
    /* a failed task may hold a token whose probabilities were never queued */
    return t->done && (!t->rq->want_probs || t->n_probs_done >= t->n_ids ||
                       t->stop == SRV_STOP_ERROR);
}

void ork__srv_task_release_locked(struct ork_server *srv, struct srv_task *t)
{
    if (--t->refs > 0)
        return;
    if (t->req_owner)
        ork__srv_task_release_locked(srv, t->req_owner);
    ork__srv_req_free(&t->req);
    ork_free(t->embd);
    ork_free(t->prompt);
    ork_sampler_free(t->smp);
    ork_free(t->text);
    ork_free(t->ids);
    ork_free(t->probs);
    pthread_cond_destroy(&t->cv);
    ork_free(t);
}

int ork__srv_submit(struct ork_server *srv, struct srv_task *const *ts, int32_t n)
{
    pthread_mutex_lock(&srv->mu);
    int ret = 0;
    int32_t busy = 0;
    for (int32_t i = 0; i < srv->p.n_parallel; i++)
        busy += srv->slots[i].task != NULL;
    if (srv->stopping) {
        ret = ORK_ECANCELED;
    } else if (busy + srv->q_len + n > srv->p.n_parallel + srv->p.queue_size) {
        srv->met.requests_rejected++;
        ret = ORK_EBUSY;
    } else {
        int32_t cap = srv->p.queue_size + srv->p.n_parallel;
        for (int32_t i = 0; i < n; i++) {
            struct srv_task *t = ts[i];
            t->id = srv->next_task_id++;
            t->t_submit_ms = now_ms();
            t->refs++;   /* the scheduler's reference */
            srv->queue[(srv->q_head + srv->q_len) % cap] = t;
            srv->q_len++;
        }
        pthread_cond_signal(&srv->sched_cv);
    }
    pthread_mutex_unlock(&srv->mu);
    return ret;
}

/* ---- output (under srv->mu) -------------------------------------------------------------- */

static int append_text_locked(struct srv_task *t, const char *s, size_t n)
{
    if (t->text_len + n + 1 > t->text_cap) {
        size_t cap = t->text_cap ? t->text_cap : 256;
        while (cap < t->text_len + n + 1)
            cap *= 2;
        char *nt = ork_realloc(t->text, cap);
        if (!nt)
            return ORK_ENOMEM;
        t->text = nt;
        t->text_cap = cap;
    }
    memcpy(t->text + t->text_len, s, n);
    t->text_len += n;
    t->text[t->text_len] = 0;
    return 0;
}

/* Amortised growth: the arrays double, so a long generation reallocates O(log n) times. */
static int append_token_locked(struct srv_task *t, int32_t id, bool probs)
{
    if (t->n_ids + 1 > t->ids_cap) {
        int32_t cap = t->ids_cap ? t->ids_cap * 2 : 64;
        int32_t *ni = ork_realloc(t->ids, (size_t)cap * sizeof(int32_t));
        if (!ni)
            return ORK_ENOMEM;
        t->ids = ni;
        if (probs) {
            struct srv_prob *np = ork_realloc(t->probs, (size_t)cap * sizeof(*np));
            if (!np)
                return ORK_ENOMEM;
            t->probs = np;
        }
        t->ids_cap = cap;
    }
    t->ids[t->n_ids++] = id;
    return 0;
}

/* ---- slot lifecycle ---------------------------------------------------------------------- */

/* Pass text through the slot's stop filter; returns the bytes safe to emit in *out. */
static size_t filter_text(struct srv_slot *sl, const char *text, size_t len, const char **out,
                          bool *stopped)
{
    *stopped = false;
    if (!sl->stop) {
        *out = text;
        return len;
    }
    int r = ork_stop_push(sl->stop, text, len, sl->hold, sl->hold_cap, stopped);
    *out = sl->hold;
    return r > 0 ? (size_t)r : 0;
}

/* End the slot's task (under srv->mu): flush held-back text unless a stop string matched, record
 * the stop reason and timings, wake the HTTP side, drop the scheduler's reference. */
static void finish_locked(struct ork_server *srv, struct srv_slot *sl, enum srv_stop stop,
                          const char *error)
{
    struct srv_task *t = sl->task;
    if (!t)
        return;
    if (stop != SRV_STOP_WORD && stop != SRV_STOP_ERROR && sl->state == SRV_SLOT_GENERATE) {
        char piece[SCHED_PIECE_CAP];
        int len = ork_detok_flush(&sl->dt, piece, sizeof piece);
        bool stopped = false;
        if (len > 0) {
            const char *out;
            size_t n = filter_text(sl, piece, (size_t)len, &out, &stopped);
            if (n)
                append_text_locked(t, out, n);
        }
        if (stopped) {
            stop = SRV_STOP_WORD;
            t->stop_word = ork_stop_matched(sl->stop);
        } else if (sl->stop) {
            int r = ork_stop_flush(sl->stop, sl->hold, sl->hold_cap);
            if (r > 0)
                append_text_locked(t, sl->hold, (size_t)r);
        }
    }
    if (error)
        snprintf(t->error, sizeof t->error, "%s", error);
    if (srv->p.verbose && t->n_spec_steps > 0)
        ORK_LOGN("slot %d, task %llu: speculative: %d drafted, %d accepted (%.1f %%), %d target "
                 "forwards, tau %.2f", sl->id, (unsigned long long)t->id, t->n_drafted,
                 t->n_accepted, t->n_drafted ? 100.0 * t->n_accepted / t->n_drafted : 0.0,
                 t->n_spec_steps, 1.0 + (double)t->n_accepted / t->n_spec_steps);
    t->stop = stop;
    t->done = true;
    if (sl->state == SRV_SLOT_GENERATE)
        t->gen_ms = now_ms() - sl->t_gen0;
    t->slot = -1;
    srv->met.completions_total++;
    srv->met.tokens_predicted_total += (uint64_t)sl->n_gen;
    srv->met.gen_ms_total += t->gen_ms;
    pthread_cond_broadcast(t->wake);
    ork__srv_task_release_locked(srv, t);
    if (sl->stop) {
        ork_stop_free(sl->stop);
        sl->stop = NULL;
    }
    sl->task = NULL;
    sl->state = SRV_SLOT_IDLE;
    sl->pending_tok = -1;
    sl->spec_on = false;
    sl->last_used = srv->step;
    sl->pub_n_past = ork_session_n_past(sl->sess);
}

static int32_t common_prefix(const struct ork_session *s, const int32_t *ids, int32_t n)
{
    int32_t np = ork_session_n_past(s), k = 0;
    const int32_t *have = ork_session_tokens(s);
    while (k < n && k < np && have[k] == ids[k])
        k++;
    return k;
}

/* Idle slot for t: its target slot (id_slot, /slots actions) when that one is idle; else the
 * longest cached prefix (cache_prompt), ties and misses by least recent use. NULL: wait. */
static struct srv_slot *pick_slot_locked(struct ork_server *srv, const struct srv_task *t)
{
    if (t->target_slot >= 0)
        return srv->slots[t->target_slot].task ? NULL : &srv->slots[t->target_slot];
    struct srv_slot *best = NULL;
    int32_t best_lcp = -1;
    bool prefix = t->kind == SRV_TASK_GENERATE && t->rq->cache_prompt;
    for (int32_t i = 0; i < srv->p.n_parallel; i++) {
        struct srv_slot *sl = &srv->slots[i];
        if (sl->task)
            continue;
        int32_t lcp = prefix ? common_prefix(sl->sess, t->prompt, t->n_prompt) : 0;
        if (!best || lcp > best_lcp || (lcp == best_lcp && sl->last_used < best->last_used)) {
            best = sl;
            best_lcp = lcp;
        }
    }
    return best;
}

/* Move queued tasks into idle slots, in queue order; a task whose slot is busy waits without
 * holding back the ones behind it. Cancelled tasks are dropped. Returns the slots filled. */
static int32_t admit_locked(struct ork_server *srv, struct srv_slot **fresh)
{
    int32_t cap = srv->p.queue_size + srv->p.n_parallel, n_fresh = 0, kept = 0, n = srv->q_len;
    for (int32_t i = 0; i < n; i++) {
        struct srv_task *t = srv->queue[(srv->q_head + i) % cap];
        struct srv_slot *sl = t->cancelled ? NULL : pick_slot_locked(srv, t);
        if (t->cancelled) {
            t->done = true;
            ork__srv_task_release_locked(srv, t);
            continue;
        }
        if (!sl) {
            srv->queue[(srv->q_head + kept++) % cap] = t;
            continue;
        }
        sl->task = t;
        sl->state = SRV_SLOT_PREFILL;
        t->slot = sl->id;
        t->slot_used = sl->id;
        fresh[n_fresh++] = sl;
    }
    srv->q_len = kept;
    return n_fresh;
}

/* The file of a /slots action under --slot-save-path. */
static void slot_file(const struct ork_server *srv, const struct srv_task *t, char *path,
                      size_t cap)
{
    snprintf(path, cap, "%s/%s", srv->p.slot_save_path, t->rq->filename ? t->rq->filename : "");
}

/* Run a task that does not generate (embedding, /slots action) in its slot: the scheduler
 * thread owns the session. Returns 0 or an error (message set by the engine). */
static int run_other(struct ork_server *srv, struct srv_slot *sl)
{
    struct srv_task *t = sl->task;
    double t0 = now_ms();
    int ret = 0;
    char path[4096];
    sl->n_gen = 0;
    switch (t->kind) {
    case SRV_TASK_EMBED:
        ret = ork_embed(srv->embedder, sl->sess, t->prompt, t->n_prompt,
                        srv->p.pooling == ORK_SERVER_POOL_LAST ? ORK_EMBD_POOL_LAST
                                                               : ORK_EMBD_POOL_MEAN,
                        true, t->embd);
        break;
    case SRV_TASK_SLOT_SAVE:
        slot_file(srv, t, path, sizeof path);
        t->act_n = ork_session_n_past(sl->sess);
        ret = ork_session_save_file(sl->sess, path, &t->act_bytes);
        break;
    case SRV_TASK_SLOT_RESTORE: {
        int32_t n = 0;
        slot_file(srv, t, path, sizeof path);
        ret = ork_session_load_file(sl->sess, path, &n, &t->act_bytes);
        t->act_n = n;
        break;
    }
    case SRV_TASK_SLOT_ERASE:
        t->act_n = ork_session_n_past(sl->sess);
        ork_session_reset(sl->sess);
        break;
    case SRV_TASK_GENERATE:
        break;
    }
    double dt = now_ms() - t0;
    pthread_mutex_lock(&srv->mu);
    t->act_ms = dt;
    t->prompt_ms = t->kind == SRV_TASK_EMBED ? dt : 0;
    if (t->kind == SRV_TASK_EMBED)
        srv->met.prompt_tokens_total += (uint64_t)t->n_prompt;
    pthread_mutex_unlock(&srv->mu);
    return ret;
}

/* Prompt lookup n-gram of a request that asks for speculation from a server started without a
 * draft source (llama-server's ngram drafting matches a few tokens; 3 does well on
 * stories260K's text, docs/bench-log/2026-speculative.md). */
#define SRV_DEFAULT_LOOKUP 3
/* The decoder of a slot drafts at most this many tokens per step (a request's n_max is
 * clamped to it): speculative.h's largest draft. */
#define SRV_SPEC_DRAFT_CAP (ORK_SPEC_M_HIST - 1)

/* Whether the slot's task speculates (its speculative.n_max, else the server's default: on with
 * --draft-model or --lookup), and the slot's decoder, made at its first speculating task. */
static int spec_setup(struct ork_server *srv, struct srv_slot *sl)
{
    const struct srv_req *rq = sl->task->rq;
    bool configured = srv->p.draft_model || srv->p.spec_lookup > 0;
    int32_t n_max = rq->spec_n_max >= 0 ? rq->spec_n_max : configured ? srv->p.spec_draft_max : 0;
    int32_t n_min = rq->spec_n_min >= 0 ? rq->spec_n_min : srv->p.spec_draft_min;
    sl->spec_on = n_max > 0;
    if (!sl->spec_on)
        return 0;
    if (!sl->spec) {
        struct ork_spec_params sp;
        ork_spec_params_default(&sp);
        sp.draft = srv->p.draft_model;
        sp.lookup = srv->p.spec_lookup > 0 ? srv->p.spec_lookup
                                           : srv->p.draft_model ? 0 : SRV_DEFAULT_LOOKUP;
        sp.draft_max = SRV_SPEC_DRAFT_CAP;
        sp.draft_p_min = srv->p.spec_draft_p_min;
        sp.n_threads = srv->p.session.n_threads;
        sp.ctx_size = ork_session_ctx_size(sl->sess);
        int ret = ork_spec_create(srv->m, &sp, &sl->spec);
        if (ret < 0) {
            sl->spec_on = false;
            return ret;
        }
    }
    ork_spec_set_bounds(sl->spec, n_max, n_min < n_max ? n_min : n_max);
    ork_spec_restart(sl->spec);
    return 0;
}

/* Evaluate the prompt (minus the cached prefix) so the slot has logits to sample from. */
static int prefill(struct ork_server *srv, struct srv_slot *sl)
{
    struct srv_task *t = sl->task;
    int32_t keep = 0;
    if (t->rq->cache_prompt) {
        keep = common_prefix(sl->sess, t->prompt, t->n_prompt);
        if (keep == t->n_prompt)
            keep--;   /* the last prompt token is evaluated again for its logits */
    }
    for (int32_t i = 0; i < t->n_prompt; i++)
        ork_sampler_accept(t->smp, t->prompt[i]);
    ork_detok_init(&sl->dt, srv->tok, false);
    sl->dt.first = false;   /* a continuation keeps its leading space (as ork_generate does) */
    sl->n_gen = 0;
    sl->pending_tok = -1;
    if (t->rq->n_stops) {
        int ret = ork_stop_create((const char *const *)t->rq->stops, t->rq->n_stops, &sl->stop);
        if (ret < 0)
            return ret;
    }
    int ret = spec_setup(srv, sl);
    if (ret < 0)
        return ret;
    double t0 = now_ms();
    ret = ork_session_truncate(sl->sess, keep);
    if (ret == 0)
        ret = ork_model_eval(sl->sess, t->prompt + keep, t->n_prompt - keep, keep, sl->logits,
                             ORK_EVAL_LAST_LOGITS);
    double dt = now_ms() - t0;
    pthread_mutex_lock(&srv->mu);
    t->n_cached = keep;
    t->prompt_ms = dt;
    srv->met.prompt_tokens_total += (uint64_t)(t->n_prompt - keep);
    srv->met.prompt_tokens_cached += (uint64_t)keep;
    srv->met.prompt_ms_total += dt;
    sl->pub_n_past = ork_session_n_past(sl->sess);
    pthread_mutex_unlock(&srv->mu);
    sl->t_gen0 = now_ms();
    return ret;
}

/* Emit a chosen token of a generating slot (already accepted by its sampler): the EOG stop,
 * text through the detokenizer and stop filter, probabilities from logits, the stop checks
 * (pos: the cache position the token will take). Returns true when the slot continues, false
 * when the task finished. */
static bool emit_token(struct ork_server *srv, struct srv_slot *sl, int32_t id,
                       const float *logits, int32_t pos)
{
    struct srv_task *t = sl->task;
    if ((!t->rq->ignore_eos || t->rq->grammar) && ork_tokenizer_is_eog(srv->tok, id)) {
        pthread_mutex_lock(&srv->mu);
        finish_locked(srv, sl, SRV_STOP_EOS, NULL);
        pthread_mutex_unlock(&srv->mu);
        return false;
    }
    sl->n_gen++;
    char piece[SCHED_PIECE_CAP];
    int len = ork_detok_push(&sl->dt, id, piece, sizeof piece);
    if (len < 0)
        len = 0;
    if ((size_t)len > sizeof piece)
        len = (int)sizeof piece;
    const char *out;
    bool stopped = false;
    size_t n = filter_text(sl, piece, (size_t)len, &out, &stopped);
    enum srv_stop stop = SRV_STOP_NONE;
    bool ctx_full = false;   /* the context is full: the next token has no room */
    if (stopped)
        stop = SRV_STOP_WORD;
    else if (t->rq->n_predict >= 0 && sl->n_gen >= t->rq->n_predict)
        stop = SRV_STOP_LIMIT;
    else if (pos >= ork_session_ctx_size(sl->sess))
        stop = SRV_STOP_LIMIT, ctx_full = true;

    pthread_mutex_lock(&srv->mu);
    int32_t idx = t->n_ids;
    int ret = append_token_locked(t, id, t->rq->want_probs);
    if (ret == 0 && n)
        ret = append_text_locked(t, out, n);
    if (ret == 0 && t->rq->want_probs) {
        pthread_mutex_unlock(&srv->mu);
        ret = ork__srv_probs_queue(srv, t, idx, logits);
        pthread_mutex_lock(&srv->mu);
    }
    if (ret < 0) {
        finish_locked(srv, sl, SRV_STOP_ERROR, "out of memory");
        pthread_mutex_unlock(&srv->mu);
        return false;
    }
    if (stop == SRV_STOP_WORD)
        t->stop_word = ork_stop_matched(sl->stop);
    t->truncated = ctx_full;
    if (stop != SRV_STOP_NONE) {
        finish_locked(srv, sl, stop, NULL);
        pthread_mutex_unlock(&srv->mu);
        return false;
    }
    pthread_cond_broadcast(t->wake);
    pthread_mutex_unlock(&srv->mu);
    return true;
}

/* Sample the next token of a generating slot. Returns true when the slot continues (its token
 * must be evaluated), false when the task finished. */
static bool sample_step(struct ork_server *srv, struct srv_slot *sl)
{
    struct srv_task *t = sl->task;
    if (t->rq->ignore_eos && !t->rq->grammar)   /* under a grammar, the grammar says when */
        for (int32_t i = 0; i < srv->n_eog; i++)
            sl->logits[srv->eog_ids[i]] = -INFINITY;
    int32_t id = ork_sampler_sample(t->smp, sl->logits);
    if (id < 0 || id >= srv->n_vocab) {
        pthread_mutex_lock(&srv->mu);
        finish_locked(srv, sl, SRV_STOP_ERROR, id < 0 ? ork_error_describe(id)
                                                      : "the sampler returned an invalid token");
        pthread_mutex_unlock(&srv->mu);
        return false;
    }
    ork_sampler_accept(t->smp, id);
    if (!emit_token(srv, sl, id, sl->logits, ork_session_n_past(sl->sess)))
        return false;
    sl->pending_tok = id;
    return true;
}

/* The decoder's counters a step of slot sl added (since sl->spec_before), into the server's
 * metrics and the task's counts. */
static void spec_account(struct ork_server *srv, struct srv_slot *sl)
{
    struct srv_task *t = sl->task;
    const struct ork_spec_stats *after = ork_spec_stats(sl->spec), *before = &sl->spec_before;
    struct ork_spec_stats d = { .n_steps = after->n_steps - before->n_steps };
    d.n_verify = after->n_verify - before->n_verify;
    d.n_drafted = after->n_drafted - before->n_drafted;
    d.n_accepted = after->n_accepted - before->n_accepted;
    d.n_tokens = after->n_tokens - before->n_tokens;
    for (int i = 0; i < ORK_SPEC_M_HIST; i++)
        d.m_hist[i] = after->m_hist[i] - before->m_hist[i];
    d.draft_ms = after->draft_ms - before->draft_ms;
    d.verify_ms = after->verify_ms - before->verify_ms;
    pthread_mutex_lock(&srv->mu);
    ork_spec_stats_add(&srv->met.spec, &d);
    t->n_spec_steps++;
    t->n_drafted += (int32_t)d.n_drafted;
    t->n_accepted += (int32_t)d.n_accepted;
    pthread_mutex_unlock(&srv->mu);
}

static void slot_error(struct ork_server *srv, struct srv_slot *sl, int ret)
{
    pthread_mutex_lock(&srv->mu);
    finish_locked(srv, sl, SRV_STOP_ERROR, ork_error_describe(ret));
    pthread_mutex_unlock(&srv->mu);
}

/* The tokens a speculating slot may still produce in one step. */
static int32_t spec_left(const struct srv_slot *sl)
{
    const struct srv_task *t = sl->task;
    int32_t left = t->rq->n_predict < 0 ? ORK_SPEC_M_HIST : t->rq->n_predict - sl->n_gen;
    return left < ORK_SPEC_M_HIST ? left : ORK_SPEC_M_HIST;
}

/* The end of a speculating slot's step (ret: the step's result; n tokens in sl->spec_out):
 * emit what was accepted. The pending token is then the last one chosen (emitted, not
 * evaluated); a stop inside the step rolls the cache back to where plain decoding's would end. */
static void spec_emit(struct ork_server *srv, struct srv_slot *sl, int ret, int32_t n)
{
    struct srv_task *t = sl->task;
    int32_t base = ork_session_n_past(sl->sess) - (n > 0 ? n : 0);
    sl->pending_tok = -1;
    sl->spec_rows = 0;
    if (ret < 0) {
        slot_error(srv, sl, ret);
        return;
    }
    spec_account(srv, sl);
    bool mask = t->rq->ignore_eos && !t->rq->grammar;
    for (int32_t j = 0; j < n; j++) {
        const float *lg = NULL;
        if (t->rq->want_probs) {   /* as sample_step: the logits it sampled from */
            memcpy(sl->logits, ork_spec_logits(sl->spec, j), (size_t)srv->n_vocab * sizeof(float));
            if (mask)
                for (int32_t i = 0; i < srv->n_eog; i++)
                    sl->logits[srv->eog_ids[i]] = -INFINITY;
            lg = sl->logits;
        }
        if (!emit_token(srv, sl, sl->spec_out[j], lg, base + 1 + j)) {
            /* the cache ends before the token generation stopped at */
            if (ork_session_n_past(sl->sess) > base + 1 + j)
                ork_session_truncate(sl->sess, base + 1 + j);
            return;
        }
    }
    sl->pending_tok = sl->spec_out[n - 1];
}

/* A speculating slot's step on its own: draft, verify its pending token and the drafts in one
 * forward of their own, emit what was accepted. */
static void spec_decode(struct ork_server *srv, struct srv_slot *sl)
{
    struct srv_task *t = sl->task;
    int32_t n = 0;
    sl->spec_before = *ork_spec_stats(sl->spec);
    int ret = ork_spec_step(sl->spec, sl->sess, t->smp, sl->pending_tok, spec_left(sl),
                            t->rq->ignore_eos, sl->spec_out, &n);
    spec_emit(srv, sl, ret, n);
}

/* The judging half of a speculating slot's step whose rows were evaluated (their logits in
 * the decoder's buffer). */
static void spec_judge(struct ork_server *srv, struct srv_slot *sl)
{
    int32_t n = 0;
    int ret = ork_spec_verify(sl->spec, sl->sess, sl->task->smp, sl->task->rq->ignore_eos,
                              sl->spec_out, &n);
    spec_emit(srv, sl, ret, n);
}

/* Evaluate the pending token of every listed slot: one batched forward pass, or one by one. */
static void decode(struct ork_server *srv, struct srv_slot **rows, int32_t n)
{
    int ret = 0;
    if (srv->p.batched && n > 1) {
        for (int32_t i = 0; i < n; i++) {
            srv->batch_sess[i] = rows[i]->sess;
            srv->batch_tok[i] = rows[i]->pending_tok;
            rows[i]->eval_pos = ork_session_n_past(rows[i]->sess);
        }
        ret = ork_model_eval_multi(srv->batch_sess, srv->batch_tok, n, srv->batch_logits);
        if (ret == 0)
            for (int32_t i = 0; i < n; i++)
                memcpy(rows[i]->logits, srv->batch_logits + (size_t)i * (size_t)srv->n_vocab,
                       (size_t)srv->n_vocab * sizeof(float));
    }
    if (!srv->p.batched || n <= 1 || ret < 0) {
        /* One at a time (also the fallback if the batched pass refused, e.g. mixed models, or
         * failed part-way: from the position the step began at). */
        for (int32_t i = 0; i < n; i++) {
            struct srv_slot *sl = rows[i];
            int32_t pos = ret < 0 ? sl->eval_pos : ork_session_n_past(sl->sess);
            int r = ork_model_eval(sl->sess, &sl->pending_tok, 1, pos, sl->logits,
                                   ORK_EVAL_LAST_LOGITS);
            if (r < 0)
                slot_error(srv, sl, r);
        }
    }
    for (int32_t i = 0; i < n; i++)
        rows[i]->pending_tok = -1;
}

/* Room for `rows` rows of logits in srv->mrow_logits (grown on the scheduler's thread). */
static int mrow_reserve(struct ork_server *srv, int32_t rows)
{
    if (rows <= srv->mrow_cap)
        return 0;
    float *p = ork_realloc(srv->mrow_logits, (size_t)rows * (size_t)srv->n_vocab * sizeof(float));
    if (!p)
        return ork_errorf(ORK_ENOMEM, "server: no memory for the logits of %d verify rows", rows);
    srv->mrow_logits = p;
    srv->mrow_cap = rows;
    return 0;
}

/* The plain slots' pending tokens and the speculating slots' verify rows (drafted here) in one
 * forward pass (ork_model_eval_multi_rows: M = every row, the weights streamed once), then the
 * speculating slots judge their rows. When the batched pass refuses or fails part-way (its
 * first passes may have stored rows), every slot runs alone from the position the step began
 * at. */
static void decode_with_verify(struct ork_server *srv, struct srv_slot **rows, int32_t n_rows,
                               struct srv_slot **spec, int32_t n_spec)
{
    int32_t n_seq = 0, total = 0;
    for (int32_t i = 0; i < n_rows; i++) {
        srv->batch_sess[n_seq] = rows[i]->sess;
        rows[i]->eval_pos = ork_session_n_past(rows[i]->sess);
        srv->mrow_n[n_seq++] = 1;
        srv->mrow_tok[total++] = rows[i]->pending_tok;
    }
    for (int32_t i = 0; i < n_spec; i++) {
        struct srv_slot *sl = spec[i];
        const int32_t *tok;
        int32_t nr = 0;
        sl->spec_before = *ork_spec_stats(sl->spec);
        int ret = ork_spec_draft(sl->spec, sl->sess, sl->task->smp, sl->pending_tok,
                                 spec_left(sl), &tok, &nr);
        sl->spec_rows = ret < 0 ? 0 : nr;
        if (ret < 0) {
            sl->pending_tok = -1;
            slot_error(srv, sl, ret);
            continue;
        }
        srv->batch_sess[n_seq] = sl->sess;
        sl->eval_pos = ork_session_n_past(sl->sess);
        srv->mrow_n[n_seq++] = nr;
        memcpy(srv->mrow_tok + total, tok, (size_t)nr * sizeof(int32_t));
        total += nr;
    }
    int ret = n_seq > 0 ? mrow_reserve(srv, total) : 0;
    if (ret == 0 && n_seq > 0)
        ret = ork_model_eval_multi_rows(srv->batch_sess, srv->mrow_n, srv->mrow_tok, n_seq,
                                        srv->mrow_logits);
    size_t nv = (size_t)srv->n_vocab;
    const float *lg = srv->mrow_logits;
    for (int32_t i = 0; i < n_rows; i++, lg += nv) {
        struct srv_slot *sl = rows[i];
        int r = ret;
        if (r == 0)
            memcpy(sl->logits, lg, nv * sizeof(float));
        else
            r = ork_model_eval(sl->sess, &sl->pending_tok, 1, sl->eval_pos, sl->logits,
                               ORK_EVAL_LAST_LOGITS);
        sl->pending_tok = -1;
        if (r < 0)
            slot_error(srv, sl, r);
    }
    for (int32_t i = 0, at = n_rows; i < n_spec; i++) {
        struct srv_slot *sl = spec[i];
        int32_t nr = sl->spec_rows;
        if (nr == 0)
            continue;   /* its draft failed */
        float *dst = ork_spec_rows_logits(sl->spec);
        int r = ret;
        if (r == 0)
            memcpy(dst, lg, (size_t)nr * nv * sizeof(float));
        else
            r = ork_model_eval(sl->sess, srv->mrow_tok + at, nr, sl->eval_pos, dst,
                               nr > 1 ? ORK_EVAL_ALL_LOGITS : ORK_EVAL_LAST_LOGITS);
        lg += (size_t)nr * nv;
        at += nr;
        if (r < 0)
            spec_emit(srv, sl, r, 0);
        else
            spec_judge(srv, sl);
    }
}

/* ---- the scheduler thread ---------------------------------------------------------------- */

static void *sched_main(void *arg)
{
    struct ork_server *srv = arg;
    int32_t np = srv->p.n_parallel, cap = srv->p.queue_size + srv->p.n_parallel;
    struct srv_slot **rows = ork_calloc((size_t)np, sizeof(*rows));
    struct srv_slot **fresh = ork_calloc((size_t)np, sizeof(*fresh));
    struct srv_slot **spec_rows = ork_calloc((size_t)np, sizeof(*spec_rows));
    srv->mrow_n = ork_calloc((size_t)np, sizeof(*srv->mrow_n));
    srv->mrow_tok = ork_calloc((size_t)np * ORK_SPEC_M_HIST, sizeof(*srv->mrow_tok));
    pthread_mutex_lock(&srv->mu);
    while (rows && fresh && spec_rows && srv->mrow_n && srv->mrow_tok) {
        /* 1. free the slots of cancelled tasks; end everything when stopping */
        for (int32_t i = 0; i < np; i++) {
            struct srv_slot *sl = &srv->slots[i];
            if (sl->task && sl->task->cancelled)
                finish_locked(srv, sl, SRV_STOP_NONE, NULL);
            else if (sl->task && srv->stopping)
                finish_locked(srv, sl, SRV_STOP_SHUTDOWN, NULL);
        }
        while (srv->q_len > 0 && (srv->stopping || srv->queue[srv->q_head]->cancelled)) {
            struct srv_task *t = srv->queue[srv->q_head];
            srv->q_head = (srv->q_head + 1) % cap;
            srv->q_len--;
            t->stop = SRV_STOP_SHUTDOWN;
            if (!t->cancelled)
                snprintf(t->error, sizeof t->error, "the server is shutting down");
            t->done = true;
            pthread_cond_broadcast(t->wake);
            ork__srv_task_release_locked(srv, t);
        }
        /* 2. queued tasks join at this step */
        int32_t n_fresh = admit_locked(srv, fresh);
        int32_t active = 0;
        for (int32_t i = 0; i < np; i++)
            active += srv->slots[i].task != NULL;
        if (active == 0) {
            if (srv->stopping)
                break;
            pthread_cond_wait(&srv->sched_cv, &srv->mu);
            continue;
        }
        pthread_mutex_unlock(&srv->mu);

        /* 3. prefill the newcomers (n_predict 0: the prompt only); run the other tasks */
        for (int32_t i = 0; i < n_fresh; i++) {
            struct srv_slot *sl = fresh[i];
            bool gen = sl->task->kind == SRV_TASK_GENERATE;
            int ret = gen ? prefill(srv, sl) : run_other(srv, sl);
            pthread_mutex_lock(&srv->mu);
            if (ret < 0)
                finish_locked(srv, sl, SRV_STOP_ERROR, ork_error_describe(ret));
            else if (!gen || sl->task->rq->n_predict == 0)
                finish_locked(srv, sl, SRV_STOP_LIMIT, NULL);
            else
                sl->state = SRV_SLOT_GENERATE;
            pthread_mutex_unlock(&srv->mu);
        }

        /* 4. sample one token per generating slot (a speculating slot may hold one from its
         * last step); 5. evaluate them together, the speculating slots' verify rows in the
         * same forward */
        double t0 = now_ms();
        int32_t n_rows = 0, n_spec = 0;
        for (int32_t i = 0; i < np; i++) {
            struct srv_slot *sl = &srv->slots[i];
            if (!sl->task || sl->state != SRV_SLOT_GENERATE)
                continue;
            bool spec = sl->spec_on;
            if (spec && (sl->pending_tok >= 0 || sample_step(srv, sl)))
                spec_rows[n_spec++] = sl;
            else if (!spec && sample_step(srv, sl))
                rows[n_rows++] = sl;
        }
        double t_dec = now_ms();
        if (srv->p.batched && n_spec > 0 && n_rows + n_spec > 1) {
            decode_with_verify(srv, rows, n_rows, spec_rows, n_spec);
        } else {
            if (n_rows > 0)
                decode(srv, rows, n_rows);
            for (int32_t i = 0; i < n_spec; i++)
                spec_decode(srv, spec_rows[i]);
        }
        n_rows += n_spec;
        double t1 = now_ms(), dt = t1 - t0;

        pthread_mutex_lock(&srv->mu);
        srv->step++;
        if (n_rows > 0) {
            srv->met.steps_total++;
            srv->met.step_rows_total += (uint64_t)n_rows;
            srv->met.decode_ms_total += t1 - t_dec;
            srv->met.last_step_tok_s = dt > 0 ? n_rows * 1000.0 / dt : 0;
        }
        for (int32_t i = 0; i < np; i++)
            srv->slots[i].pub_n_past = ork_session_n_past(srv->slots[i].sess);
        /* the twin's totals for /metrics (the engine's counters are this thread's alone) */
        srv->met.has_twin = ork_model_twin_stats(srv->m, &srv->met.twin) == 0;
    }
    srv->sched_running = false;
    pthread_mutex_unlock(&srv->mu);
    ork_free(rows);
    ork_free(fresh);
    ork_free(spec_rows);
    ork_free(srv->mrow_n);
    ork_free(srv->mrow_tok);
    ork_free(srv->mrow_logits);
    srv->mrow_n = srv->mrow_tok = NULL;
    srv->mrow_logits = NULL;
    srv->mrow_cap = 0;
    return NULL;
}

int ork__srv_sched_start(struct ork_server *srv)
{
    int ret = ork__srv_probs_start(srv);
    if (ret < 0)
        return ret;
    srv->sched_running = true;
    if (pthread_create(&srv->sched_thread, NULL, sched_main, srv) != 0) {
        srv->sched_running = false;
        ork__srv_probs_stop(srv);
        return ork_errorf(ORK_ENOMEM, "server: cannot create the scheduler thread");
    }
    srv->sched_started = true;
    return 0;
}

void ork__srv_sched_stop(struct ork_server *srv)
{
    pthread_mutex_lock(&srv->mu);
    srv->stopping = true;
    pthread_cond_signal(&srv->sched_cv);
    pthread_mutex_unlock(&srv->mu);
    if (srv->sched_started) {
        pthread_join(srv->sched_thread, NULL);
        srv->sched_started = false;
    }
    ork__srv_probs_stop(srv);   /* after the scheduler: it queues the jobs */
}
