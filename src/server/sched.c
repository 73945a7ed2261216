/* sched.c -- slots and the scheduler of the server: a bounded queue of generation tasks, N slots
 * (each an engine session with its own KV cache), and one thread that runs decode steps.
 *
 * One step: free the slots of cancelled tasks; move queued tasks into idle slots (the slot whose
 * cache shares the longest prefix with the prompt, else the least recently used) and prefill
 * them, keeping the shared prefix; sample one token for every generating slot (text through the
 * streaming detokenizer and stop-string filter into the task's output); then evaluate all the
 * sampled tokens together with ork_model_eval_multi (one forward pass, M = generating slots), or
 * slot by slot when batching is off. A request that arrives mid-step joins at the next step.
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
    return t;
}

void ork__srv_task_release_locked(struct ork_server *srv, struct srv_task *t)
{
    (void)srv;
    if (--t->refs > 0)
        return;
    ork__srv_req_free(&t->req);
    ork_free(t->prompt);
    ork_sampler_free(t->smp);
    ork_free(t->text);
    ork_free(t->ids);
    ork_free(t->probs);
    pthread_cond_destroy(&t->cv);
    ork_free(t);
}

int ork__srv_submit(struct ork_server *srv, struct srv_task *t)
{
    pthread_mutex_lock(&srv->mu);
    int ret = 0;
    int32_t busy = 0;
    for (int32_t i = 0; i < srv->p.n_parallel; i++)
        busy += srv->slots[i].task != NULL;
    if (srv->stopping) {
        ret = ORK_ECANCELED;
    } else if (busy + srv->q_len >= srv->p.n_parallel + srv->p.queue_size) {
        srv->met.requests_rejected++;
        ret = ORK_EBUSY;
    } else {
        int32_t cap = srv->p.queue_size + srv->p.n_parallel;
        t->id = srv->next_task_id++;
        t->t_submit_ms = now_ms();
        t->refs++;   /* the scheduler's reference */
        srv->queue[(srv->q_head + srv->q_len) % cap] = t;
        srv->q_len++;
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

static int append_token_locked(struct srv_task *t, int32_t id, const struct srv_prob *pr)
{
    if (t->n_ids + 1 > t->ids_cap) {
        int32_t cap = t->ids_cap ? t->ids_cap * 2 : 64;
        int32_t *ni = ork_realloc(t->ids, (size_t)cap * sizeof(int32_t));
        if (!ni)
            return ORK_ENOMEM;
        t->ids = ni;
        if (pr) {
            struct srv_prob *np = ork_realloc(t->probs, (size_t)cap * sizeof(*np));
            if (!np)
                return ORK_ENOMEM;
            t->probs = np;
        }
        t->ids_cap = cap;
    }
    if (pr)
        t->probs[t->n_ids] = *pr;
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
    t->stop = stop;
    t->done = true;
    if (sl->state == SRV_SLOT_GENERATE)
        t->gen_ms = now_ms() - sl->t_gen0;
    t->slot = -1;
    srv->met.completions_total++;
    srv->met.tokens_predicted_total += (uint64_t)sl->n_gen;
    srv->met.gen_ms_total += t->gen_ms;
    pthread_cond_broadcast(&t->cv);
    ork__srv_task_release_locked(srv, t);
    if (sl->stop) {
        ork_stop_free(sl->stop);
        sl->stop = NULL;
    }
    sl->task = NULL;
    sl->state = SRV_SLOT_IDLE;
    sl->pending_tok = -1;
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

/* Idle slot for t: longest cached prefix (cache_prompt), ties and misses by least recent use. */
static struct srv_slot *pick_slot_locked(struct ork_server *srv, const struct srv_task *t)
{
    struct srv_slot *best = NULL;
    int32_t best_lcp = -1;
    for (int32_t i = 0; i < srv->p.n_parallel; i++) {
        struct srv_slot *sl = &srv->slots[i];
        if (sl->task)
            continue;
        int32_t lcp = t->req.cache_prompt ? common_prefix(sl->sess, t->prompt, t->n_prompt) : 0;
        if (!best || lcp > best_lcp || (lcp == best_lcp && sl->last_used < best->last_used)) {
            best = sl;
            best_lcp = lcp;
        }
    }
    return best;
}

/* Evaluate the prompt (minus the cached prefix) so the slot has logits to sample from. */
static int prefill(struct ork_server *srv, struct srv_slot *sl)
{
    struct srv_task *t = sl->task;
    int32_t keep = 0;
    if (t->req.cache_prompt) {
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
    if (t->req.n_stops) {
        int ret = ork_stop_create((const char *const *)t->req.stops, t->req.n_stops, &sl->stop);
        if (ret < 0)
            return ret;
    }
    double t0 = now_ms();
    int ret = ork_session_truncate(sl->sess, keep);
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

/* Top-n log-probabilities of the raw logits (softmax without the sampling chain, as
 * llama-server documents for n_probs), and the sampled token's. */
static void token_probs(const float *logits, int32_t n_vocab, int32_t id, int32_t n,
                        struct srv_prob *pr)
{
    float mx = -INFINITY;
    for (int32_t i = 0; i < n_vocab; i++)
        mx = logits[i] > mx ? logits[i] : mx;
    double sum = 0;
    for (int32_t i = 0; i < n_vocab; i++)
        sum += exp((double)logits[i] - mx);
    double lse = (double)mx + log(sum);
    pr->id = id;
    pr->logprob = (float)((double)logits[id] - lse);
    pr->n_top = 0;
    for (int32_t k = 0; k < n && k < n_vocab; k++) {
        int32_t best = -1;
        for (int32_t i = 0; i < n_vocab; i++) {
            bool taken = false;
            for (int32_t j = 0; j < k && !taken; j++)
                taken = pr->top_ids[j] == i;
            if (!taken && (best < 0 || logits[i] > logits[best]))
                best = i;
        }
        pr->top_ids[k] = best;
        pr->top_logprobs[k] = (float)((double)logits[best] - lse);
        pr->n_top = k + 1;
    }
}

/* Sample the next token of a generating slot. Returns true when the slot continues (its token
 * must be evaluated), false when the task finished. */
static bool sample_step(struct ork_server *srv, struct srv_slot *sl)
{
    struct srv_task *t = sl->task;
    if (t->req.ignore_eos)
        for (int32_t i = 0; i < srv->n_eog; i++)
            sl->logits[srv->eog_ids[i]] = -INFINITY;
    int32_t id = ork_sampler_sample(t->smp, sl->logits);
    if (id < 0 || id >= srv->n_vocab) {
        pthread_mutex_lock(&srv->mu);
        finish_locked(srv, sl, SRV_STOP_ERROR, "the sampler returned an invalid token");
        pthread_mutex_unlock(&srv->mu);
        return false;
    }
    struct srv_prob pr;
    if (t->req.n_probs > 0)
        token_probs(sl->logits, srv->n_vocab, id, t->req.n_probs, &pr);
    ork_sampler_accept(t->smp, id);
    if (!t->req.ignore_eos && ork_tokenizer_is_eog(srv->tok, id)) {
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
    else if (t->req.n_predict >= 0 && sl->n_gen >= t->req.n_predict)
        stop = SRV_STOP_LIMIT;
    else if (ork_session_n_past(sl->sess) >= ork_session_ctx_size(sl->sess))
        stop = SRV_STOP_LIMIT, ctx_full = true;

    pthread_mutex_lock(&srv->mu);
    int ret = append_token_locked(t, id, t->req.n_probs > 0 ? &pr : NULL);
    if (ret == 0 && n)
        ret = append_text_locked(t, out, n);
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
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&srv->mu);
    sl->pending_tok = id;
    return true;
}

/* Evaluate the pending token of every listed slot: one batched forward pass, or one by one. */
static void decode(struct ork_server *srv, struct srv_slot **rows, int32_t n)
{
    int ret = 0;
    if (srv->p.batched && n > 1) {
        for (int32_t i = 0; i < n; i++) {
            srv->batch_sess[i] = rows[i]->sess;
            srv->batch_tok[i] = rows[i]->pending_tok;
        }
        ret = ork_model_eval_multi(srv->batch_sess, srv->batch_tok, n, srv->batch_logits);
        if (ret == 0)
            for (int32_t i = 0; i < n; i++)
                memcpy(rows[i]->logits, srv->batch_logits + (size_t)i * (size_t)srv->n_vocab,
                       (size_t)srv->n_vocab * sizeof(float));
    }
    if (!srv->p.batched || n <= 1 || ret < 0) {
        /* One at a time (also the fallback if the batched pass refused, e.g. mixed models). */
        for (int32_t i = 0; i < n; i++) {
            struct srv_slot *sl = rows[i];
            int r = ork_model_eval(sl->sess, &sl->pending_tok, 1, ork_session_n_past(sl->sess),
                                   sl->logits, ORK_EVAL_LAST_LOGITS);
            if (r < 0) {
                pthread_mutex_lock(&srv->mu);
                finish_locked(srv, sl, SRV_STOP_ERROR, ork_error_describe(r));
                pthread_mutex_unlock(&srv->mu);
            }
        }
    }
    for (int32_t i = 0; i < n; i++)
        rows[i]->pending_tok = -1;
}

/* ---- the scheduler thread ---------------------------------------------------------------- */

static void *sched_main(void *arg)
{
    struct ork_server *srv = arg;
    int32_t np = srv->p.n_parallel, cap = srv->p.queue_size + srv->p.n_parallel;
    struct srv_slot **rows = ork_calloc((size_t)np, sizeof(*rows));
    struct srv_slot **fresh = ork_calloc((size_t)np, sizeof(*fresh));
    pthread_mutex_lock(&srv->mu);
    while (rows && fresh) {
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
            pthread_cond_broadcast(&t->cv);
            ork__srv_task_release_locked(srv, t);
        }
        /* 2. queued tasks join at this step */
        int32_t n_fresh = 0;
        while (srv->q_len > 0) {
            struct srv_task *t = srv->queue[srv->q_head];
            if (t->cancelled) {
                srv->q_head = (srv->q_head + 1) % cap;
                srv->q_len--;
                t->done = true;
                ork__srv_task_release_locked(srv, t);
                continue;
            }
            struct srv_slot *sl = pick_slot_locked(srv, t);
            if (!sl)
                break;
            srv->q_head = (srv->q_head + 1) % cap;
            srv->q_len--;
            sl->task = t;
            sl->state = SRV_SLOT_PREFILL;
            t->slot = sl->id;
            t->slot_used = sl->id;
            fresh[n_fresh++] = sl;
        }
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

        /* 3. prefill the newcomers */
        for (int32_t i = 0; i < n_fresh; i++) {
            struct srv_slot *sl = fresh[i];
            int ret = prefill(srv, sl);
            pthread_mutex_lock(&srv->mu);
            if (ret < 0)
                finish_locked(srv, sl, SRV_STOP_ERROR, ork_error_describe(ret));
            else
                sl->state = SRV_SLOT_GENERATE;
            pthread_mutex_unlock(&srv->mu);
        }

        /* 4. sample one token per generating slot; 5. evaluate them together */
        double t0 = now_ms();
        int32_t n_rows = 0;
        for (int32_t i = 0; i < np; i++) {
            struct srv_slot *sl = &srv->slots[i];
            if (sl->task && sl->state == SRV_SLOT_GENERATE && sample_step(srv, sl))
                rows[n_rows++] = sl;
        }
        double t_dec = now_ms();
        if (n_rows > 0)
            decode(srv, rows, n_rows);
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
    }
    srv->sched_running = false;
    pthread_mutex_unlock(&srv->mu);
    ork_free(rows);
    ork_free(fresh);
    return NULL;
}

int ork__srv_sched_start(struct ork_server *srv)
{
    srv->sched_running = true;
    if (pthread_create(&srv->sched_thread, NULL, sched_main, srv) != 0) {
        srv->sched_running = false;
        return ork_errorf(ORK_ENOMEM, "server: cannot create the scheduler thread");
    }
    return 0;
}

void ork__srv_sched_stop(struct ork_server *srv)
{
    pthread_mutex_lock(&srv->mu);
    srv->stopping = true;
    pthread_cond_signal(&srv->sched_cv);
    pthread_mutex_unlock(&srv->mu);
    pthread_join(srv->sched_thread, NULL);
}
