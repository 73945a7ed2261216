/* routes_native.c -- the llama-server API's handlers and bodies: /completion results and
 * stream events, /tokenize, /detokenize, /props, /slots, /health and /metrics (Prometheus
 * text). Field names follow the llama-server README.
 *
 * Not here: the route table and generation requests (routes.c), the OpenAI shapes
 * (routes_openai.c). */
#include "routes.h"

#include <ork/alloc.h>
#include <ork/error.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- tokenization ------------------------------------------------------------------------ */

static char *tokenize_json(struct ork_server *srv, const struct srv_req *r, struct srv_error *err)
{
    int32_t *ids, n;
    int ret = ork__srv_tokenize(srv, r->prompt_text, r->add_special, r->parse_special, &ids, &n);
    if (ret < 0) {
        ork__srv_errorf(err, 400, "invalid_request_error", "cannot tokenize: %s",
                        ork_error_describe(ret));
        return NULL;
    }
    cJSON *root = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(root, "tokens");
    for (int32_t i = 0; i < n && a; i++) {
        if (!r->with_pieces) {
            cJSON_AddItemToArray(a, cJSON_CreateNumber(ids[i]));
            continue;
        }
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "id", ids[i]);
        ork__srv_add_piece(o, "piece", srv, ids[i]);
        cJSON_AddItemToArray(a, o);
    }
    ork_free(ids);
    return ork__srv_json_print(root);
}

static char *detokenize_json(struct ork_server *srv, const struct srv_req *r,
                             struct srv_error *err)
{
    int need = ork_detokenize(srv->tok, r->prompt_ids, (size_t)r->n_prompt_ids, false, NULL, 0);
    if (need == ORK_ENOSPC || need >= 0) {
        /* With cap 0 the call reports the length through ORK_ENOSPC; retry with room. */
        size_t cap = 16 + (size_t)r->n_prompt_ids * 64;
        for (int tries = 0; tries < 4; tries++) {
            char *buf = ork_malloc(cap);
            if (!buf)
                break;
            int len = ork_detokenize(srv->tok, r->prompt_ids, (size_t)r->n_prompt_ids, false, buf,
                                     cap);
            if (len >= 0) {
                cJSON *root = cJSON_CreateObject();
                cJSON_AddStringToObject(root, "content", buf);
                ork_free(buf);
                return ork__srv_json_print(root);
            }
            ork_free(buf);
            if (len != ORK_ENOSPC)
                break;
            cap *= 4;
        }
    }
    ork__srv_errorf(err, 400, "invalid_request_error", "cannot detokenize: %s",
                    ork_error_describe(need < 0 && need != ORK_ENOSPC ? need : ORK_EINVAL));
    return NULL;
}

/* Parse a /tokenize or /detokenize body with rt->ep's schema and answer with build's body. */
static void post_tok(struct ork_server *srv, const struct srv_route *rt,
                     const struct srv_call *call, struct srv_reply *out,
                     char *(*build)(struct ork_server *, const struct srv_req *,
                                    struct srv_error *))
{
    struct srv_req r;
    struct srv_error err;
    ork__srv_errorf(&err, 500, "server_error", "out of memory");   /* if build runs out */
    char *b = NULL;
    if (ork__srv_req_parse(rt->ep, call->body, call->len, srv->n_vocab, &r, &err) == 0)
        b = build(srv, &r, &err);
    ork__srv_req_free(&r);
    if (!b)
        ork__srv_reply_error(out, &err);
    else
        ork__srv_reply_json(out, 200, b);
}

static char *apply_template_json(struct ork_server *srv, const struct srv_req *r,
                                 struct srv_error *err)
{
    char *text = NULL;
    if (ork__srv_render_chat(srv, r, &text, err) < 0)
        return NULL;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "prompt", text);
    ork_free(text);
    return ork__srv_json_print(root);
}

static char *props_json(struct ork_server *srv, const struct srv_req *r, struct srv_error *err)
{
    (void)srv, (void)r, (void)err;
    return ork_strdup("{\"success\":true}");
}

SRV_HANDLER(ork__srv_post_tokenize)
{
    post_tok(srv, rt, call, out, tokenize_json);
}

SRV_HANDLER(ork__srv_post_detokenize)
{
    post_tok(srv, rt, call, out, detokenize_json);
}

SRV_HANDLER(ork__srv_post_apply_template)
{
    post_tok(srv, rt, call, out, apply_template_json);
}

/* POST /props: llama-server accepts it only when started with --props, and has no options yet. */
SRV_HANDLER(ork__srv_post_props)
{
    if (!srv->p.props_post) {
        ork__srv_reply_errorf(out, 501, "not_supported_error", "This server does not support "
                              "changing global properties. Start it with --props");
        return;
    }
    post_tok(srv, rt, call, out, props_json);
}

/* ---- /completion results ----------------------------------------------------------------- */

static const char *stop_type_name(enum srv_stop s)
{
    switch (s) {
    case SRV_STOP_EOS:  return "eos";
    case SRV_STOP_WORD: return "word";
    case SRV_STOP_LIMIT:
    case SRV_STOP_SHUTDOWN:
    case SRV_STOP_ERROR: return "limit";
    case SRV_STOP_NONE: break;
    }
    return "none";
}

static void add_probs(const struct ork_server *srv, cJSON *root, const struct srv_task *t,
                      int32_t from, int32_t to)
{
    cJSON *a = cJSON_AddArrayToObject(root, "completion_probabilities");
    for (int32_t i = from; i < to && a; i++) {
        const struct srv_prob *p = &t->probs[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "id", p->id);
        ork__srv_add_piece(o, "token", srv, p->id);
        cJSON_AddNumberToObject(o, "logprob", p->logprob);
        ork__srv_add_bytes(o, srv, p->id);
        cJSON *top = cJSON_AddArrayToObject(o, "top_logprobs");
        for (int32_t k = 0; k < p->n_top; k++) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddNumberToObject(e, "id", p->top_ids[k]);
            ork__srv_add_piece(e, "token", srv, p->top_ids[k]);
            cJSON_AddNumberToObject(e, "logprob", p->top_logprobs[k]);
            ork__srv_add_bytes(e, srv, p->top_ids[k]);
            cJSON_AddItemToArray(top, e);
        }
        cJSON_AddItemToArray(a, o);
    }
}

static void add_token_array(cJSON *root, const char *name, const int32_t *ids, int32_t n)
{
    cJSON *a = cJSON_AddArrayToObject(root, name);
    for (int32_t i = 0; i < n && a; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber(ids[i]));
}

/* The fields of the final response (and of the last stream event). */
static void add_native_tail(struct ork_server *srv, cJSON *root, const struct srv_task *t)
{
    cJSON_AddStringToObject(root, "model", srv->model_id);
    cJSON_AddNumberToObject(root, "id_slot", t->slot_used);
    cJSON_AddStringToObject(root, "stop_type", stop_type_name(t->stop));
    cJSON_AddStringToObject(root, "stopping_word",
                            t->stop_word >= 0 && (size_t)t->stop_word < t->rq->n_stops
                                ? t->rq->stops[t->stop_word] : "");
    cJSON_AddNumberToObject(root, "tokens_predicted", t->n_ids);
    cJSON_AddNumberToObject(root, "tokens_evaluated", t->n_prompt);
    cJSON_AddNumberToObject(root, "tokens_cached", t->n_cached);
    cJSON_AddBoolToObject(root, "truncated", t->truncated);
    cJSON *gs = cJSON_AddObjectToObject(root, "generation_settings");
    cJSON_AddNumberToObject(gs, "n_predict", t->rq->n_predict);
    char seed[32];   /* 64-bit seeds do not fit a JSON double exactly: print the integer */
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)ork_sampler_seed(t->smp));
    cJSON_AddRawToObject(gs, "seed", seed);
    cJSON_AddNumberToObject(gs, "temperature", t->rq->sampling.temp);
    cJSON_AddNumberToObject(gs, "top_k", t->rq->sampling.top_k);
    cJSON_AddNumberToObject(gs, "top_p", t->rq->sampling.top_p);
    cJSON_AddNumberToObject(gs, "min_p", t->rq->sampling.min_p);
    cJSON_AddNumberToObject(gs, "n_ctx", srv->p.session.ctx_size);
    ork__srv_add_timings(root, t);
}

static cJSON *native_result(struct ork_server *srv, const struct srv_task *t)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "index", t->index);
    cJSON_AddStringToObject(root, "content", t->text ? t->text : "");
    if (t->rq->return_tokens)
        add_token_array(root, "tokens", t->ids, t->n_ids);
    else
        cJSON_AddArrayToObject(root, "tokens");
    cJSON_AddBoolToObject(root, "stop", true);
    add_native_tail(srv, root, t);
    if (t->rq->want_probs)
        add_probs(srv, root, t, 0, t->n_ids);
    return root;
}

char *ork__srv_native_result(struct ork_server *srv, struct srv_task *const *ts, int32_t n)
{
    if (n == 1 && !ts[0]->rq->prompt_array)
        return ork__srv_json_print(native_result(srv, ts[0]));
    cJSON *arr = cJSON_CreateArray();
    for (int32_t i = 0; i < n && arr; i++)
        cJSON_AddItemToArray(arr, native_result(srv, ts[i]));
    return ork__srv_json_print(arr);
}

int ork__srv_native_stream(struct ork_server *srv, const struct srv_task *t,
                           struct srv_stream_pos *pos, bool final, char **buf, size_t *len,
                           size_t *cap)
{
    int ret;
    /* with probabilities, tokens go out once theirs are computed */
    int32_t ids = t->rq->want_probs ? t->n_probs_done : t->n_ids;
    if (pos->text_off < t->text_len || pos->ids_off < ids) {
        char *s = ork__srv_slice(t, pos->text_off, t->text_len);
        if (!s)
            return ORK_ENOMEM;
        cJSON *root = cJSON_CreateObject();
        cJSON_AddNumberToObject(root, "index", t->index);
        cJSON_AddStringToObject(root, "content", s);
        add_token_array(root, "tokens", t->ids + pos->ids_off, ids - pos->ids_off);
        cJSON_AddBoolToObject(root, "stop", false);
        if (t->rq->want_probs)
            add_probs(srv, root, t, pos->ids_off, ids);
        ork_free(s);
        pos->text_off = t->text_len;
        pos->ids_off = ids;
        if ((ret = ork__srv_sse(root, buf, len, cap)) < 0)
            return ret;
    }
    if (!final)
        return 0;
    if ((ret = ork__srv_sse_task_error(t, buf, len, cap)) < 0)
        return ret;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "index", t->index);
    cJSON_AddStringToObject(root, "content", "");
    cJSON_AddArrayToObject(root, "tokens");
    cJSON_AddBoolToObject(root, "stop", true);
    add_native_tail(srv, root, t);
    return ork__srv_sse(root, buf, len, cap);
}

/* ---- /embedding and /slots actions ------------------------------------------------------- */

/* llama-server's native shape: [{index, embedding: [[...]]}] (one pooled vector per input). */
char *ork__srv_native_embed_result(struct ork_server *srv, struct srv_task *const *ts,
                                   int32_t n)
{
    int32_t dim = ork_embedder_dim(srv->embedder);
    cJSON *arr = cJSON_CreateArray();
    for (int32_t i = 0; i < n && arr; i++) {
        cJSON *o = cJSON_CreateObject(), *outer = cJSON_AddArrayToObject(o, "embedding");
        cJSON_AddNumberToObject(o, "index", ts[i]->index);
        cJSON_AddItemToArray(outer, cJSON_CreateFloatArray(ts[i]->embd, dim));
        cJSON_AddItemToArray(arr, o);
    }
    return ork__srv_json_print(arr);
}

char *ork__srv_slot_action_result(struct ork_server *srv, const struct srv_task *t)
{
    (void)srv;
    cJSON *root = cJSON_CreateObject(), *tm;
    cJSON_AddNumberToObject(root, "id_slot", t->target_slot);
    switch (t->kind) {
    case SRV_TASK_SLOT_SAVE:
        cJSON_AddStringToObject(root, "filename", t->rq->filename);
        cJSON_AddNumberToObject(root, "n_saved", (double)t->act_n);
        cJSON_AddNumberToObject(root, "n_written", (double)t->act_bytes);
        tm = cJSON_AddObjectToObject(root, "timings");
        cJSON_AddNumberToObject(tm, "save_ms", t->act_ms);
        break;
    case SRV_TASK_SLOT_RESTORE:
        cJSON_AddStringToObject(root, "filename", t->rq->filename);
        cJSON_AddNumberToObject(root, "n_restored", (double)t->act_n);
        cJSON_AddNumberToObject(root, "n_read", (double)t->act_bytes);
        tm = cJSON_AddObjectToObject(root, "timings");
        cJSON_AddNumberToObject(tm, "restore_ms", t->act_ms);
        break;
    default:
        cJSON_AddNumberToObject(root, "n_erased", (double)t->act_n);
        break;
    }
    return ork__srv_json_print(root);
}

/* ---- server information ------------------------------------------------------------------ */

/* While the model loads: 503 with llama-server's error and {"status": "loading model"}. */
SRV_HANDLER(ork__srv_get_health)
{
    (void)rt, (void)call;
    pthread_mutex_lock(&srv->mu);
    bool ready = srv->ready;
    pthread_mutex_unlock(&srv->mu);
    if (ready)
        ork__srv_reply_json(out, 200, ork_strdup("{\"status\":\"ok\"}"));
    else
        ork__srv_reply_json(out, 503, ork_strdup("{\"status\":\"loading model\",\"error\":"
                                                 "{\"code\":503,\"message\":\"Loading model\","
                                                 "\"type\":\"unavailable_error\"}}"));
}

static void add_default_params(cJSON *o)
{
    struct ork_sampler_params sp;
    ork_sampler_params_default(&sp);
    cJSON_AddNumberToObject(o, "n_predict", -1);
    cJSON_AddNumberToObject(o, "temperature", sp.temp);
    cJSON_AddNumberToObject(o, "top_k", sp.top_k);
    cJSON_AddNumberToObject(o, "top_p", sp.top_p);
    cJSON_AddNumberToObject(o, "min_p", sp.min_p);
    cJSON_AddNumberToObject(o, "repeat_last_n", sp.penalty_last_n);
    cJSON_AddNumberToObject(o, "repeat_penalty", sp.repeat_penalty);
    cJSON_AddNumberToObject(o, "presence_penalty", sp.presence_penalty);
    cJSON_AddNumberToObject(o, "frequency_penalty", sp.frequency_penalty);
    cJSON_AddNumberToObject(o, "n_probs", 0);
    cJSON_AddBoolToObject(o, "stream", false);
    cJSON_AddBoolToObject(o, "cache_prompt", true);
}

SRV_HANDLER(ork__srv_get_props)
{
    (void)rt, (void)call;
    cJSON *root = cJSON_CreateObject();
    cJSON *dg = cJSON_AddObjectToObject(root, "default_generation_settings");
    cJSON_AddNumberToObject(dg, "n_ctx", srv->p.session.ctx_size);
    add_default_params(cJSON_AddObjectToObject(dg, "params"));
    cJSON_AddNumberToObject(root, "total_slots", srv->p.n_parallel);
    cJSON_AddStringToObject(root, "model_path", srv->p.model_path ? srv->p.model_path : "");
    cJSON_AddStringToObject(root, "model_alias", srv->model_id);
    cJSON_AddStringToObject(root, "chat_template", srv->chat_template ? srv->chat_template : "");
    cJSON_AddStringToObject(root, "chat_format", ork_chat_format_name(srv->chat_fmt));
    cJSON_AddStringToObject(root, "build_info", "ork 0.1.0");
    int32_t bos = ork_tokenizer_bos(srv->tok), eos = ork_tokenizer_eos(srv->tok);
    if (bos >= 0)
        ork__srv_add_piece(root, "bos_token", srv, bos);
    if (eos >= 0)
        ork__srv_add_piece(root, "eos_token", srv, eos);
    ork__srv_reply_json(out, 200, ork__srv_json_print(root));
}

SRV_HANDLER(ork__srv_get_slots)
{
    (void)rt, (void)call;
    cJSON *root = cJSON_CreateArray();
    pthread_mutex_lock(&srv->mu);
    for (int32_t i = 0; i < srv->p.n_parallel; i++) {
        const struct srv_slot *sl = &srv->slots[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "id", sl->id);
        cJSON_AddNumberToObject(o, "id_task", sl->task ? (double)sl->task->id : -1);
        cJSON_AddNumberToObject(o, "n_ctx", srv->p.session.ctx_size);
        cJSON_AddBoolToObject(o, "is_processing", sl->task != NULL);
        cJSON_AddNumberToObject(o, "n_past", sl->pub_n_past);
        cJSON_AddNumberToObject(o, "n_decoded", sl->task ? sl->task->n_ids : 0);
        /* the running task's speculative decoding so far (counters kept under srv->mu) */
        cJSON_AddBoolToObject(o, "speculative", sl->task && sl->task->n_spec_steps > 0);
        cJSON_AddNumberToObject(o, "n_drafted", sl->task ? sl->task->n_drafted : 0);
        cJSON_AddNumberToObject(o, "n_draft_accepted", sl->task ? sl->task->n_accepted : 0);
        cJSON_AddItemToArray(root, o);
    }
    pthread_mutex_unlock(&srv->mu);
    ork__srv_reply_json(out, 200, ork__srv_json_print(root));
}

/* ---- /metrics ---------------------------------------------------------------------------- */

static int text_appendf(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int text_appendf(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0)
        return ORK_EINVAL;
    return ork__srv_buf_append(buf, len, cap, line,
                               (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* Speculative decoding (acceptance, tau, the verify-M histogram) and the board twin's modelled
 * totals, under srv->mu. */
static void metrics_spec_twin(const struct srv_metrics *m, char **b, size_t *len, size_t *cap)
{
    const struct ork_spec_stats *sp = &m->spec;
    text_appendf(b, len, cap, "# HELP ork_spec_drafted_total Tokens drafted and verified by "
                 "speculative decoding.\n# TYPE ork_spec_drafted_total counter\n"
                 "ork_spec_drafted_total %llu\n", (unsigned long long)sp->n_drafted);
    text_appendf(b, len, cap, "# HELP ork_spec_accepted_total Drafted tokens accepted.\n"
                 "# TYPE ork_spec_accepted_total counter\nork_spec_accepted_total %llu\n",
                 (unsigned long long)sp->n_accepted);
    text_appendf(b, len, cap, "# HELP ork_spec_steps_total Target decode forwards of "
                 "speculating slots.\n# TYPE ork_spec_steps_total counter\n"
                 "ork_spec_steps_total %llu\n", (unsigned long long)sp->n_steps);
    text_appendf(b, len, cap, "# HELP ork_spec_acceptance_rate Accepted / drafted tokens.\n"
                 "# TYPE ork_spec_acceptance_rate gauge\nork_spec_acceptance_rate %.4f\n",
                 ork_spec_acceptance(sp));
    text_appendf(b, len, cap, "# HELP ork_spec_tau Mean tokens per target decode forward of "
                 "speculating slots (tau).\n# TYPE ork_spec_tau gauge\nork_spec_tau %.4f\n",
                 ork_spec_tau(sp));
    text_appendf(b, len, cap, "# HELP ork_spec_verify_rows Rows M of the speculative verify "
                 "forwards (1 + drafted).\n# TYPE ork_spec_verify_rows histogram\n");
    uint64_t cum = 0, rows = 0;
    for (int i = 0; i < ORK_SPEC_M_HIST; i++) {
        cum += sp->m_hist[i];
        rows += sp->m_hist[i] * (uint64_t)(i + 1);
        text_appendf(b, len, cap, "ork_spec_verify_rows_bucket{le=\"%d\"} %llu\n", i + 1,
                     (unsigned long long)cum);
    }
    text_appendf(b, len, cap, "ork_spec_verify_rows_bucket{le=\"+Inf\"} %llu\n"
                 "ork_spec_verify_rows_sum %llu\nork_spec_verify_rows_count %llu\n",
                 (unsigned long long)cum, (unsigned long long)rows, (unsigned long long)cum);
    if (!m->has_twin)
        return;
    text_appendf(b, len, cap, "# HELP ork_twin_modelled_seconds_total Modelled board time of "
                 "every forward batch and sampling (the board twin, docs/twin.md; not host "
                 "wall time).\n# TYPE ork_twin_modelled_seconds_total counter\n"
                 "ork_twin_modelled_seconds_total %.6f\n", m->twin.total.end_ns / 1e9);
    text_appendf(b, len, cap, "# HELP ork_twin_steps_total Forward batches the twin "
                 "modelled.\n# TYPE ork_twin_steps_total counter\nork_twin_steps_total %llu\n",
                 (unsigned long long)m->twin.n_steps);
    text_appendf(b, len, cap, "# HELP ork_twin_rows_total Token rows of the modelled batches.\n"
                 "# TYPE ork_twin_rows_total counter\nork_twin_rows_total %llu\n",
                 (unsigned long long)m->twin.n_rows);
}

static char *metrics_text(struct ork_server *srv)
{
    char *b = NULL;
    size_t len = 0, cap = 0;
    pthread_mutex_lock(&srv->mu);
    struct srv_metrics m = srv->met;
    int32_t busy = 0;
    for (int32_t i = 0; i < srv->p.n_parallel; i++)
        busy += srv->slots[i].task != NULL;
#define COUNTER(name, help, val)                                                               \
    text_appendf(&b, &len, &cap, "# HELP ork_" name " " help "\n# TYPE ork_" name              \
                 " counter\nork_" name " %llu\n", (unsigned long long)(val))
#define SECONDS(name, help, val)                                                               \
    text_appendf(&b, &len, &cap, "# HELP ork_" name " " help "\n# TYPE ork_" name              \
                 " counter\nork_" name " %.6f\n", (val))
#define GAUGE(name, help, fmt, val)                                                            \
    text_appendf(&b, &len, &cap, "# HELP ork_" name " " help "\n# TYPE ork_" name              \
                 " gauge\nork_" name " " fmt "\n", (val))
    COUNTER("requests_total", "HTTP requests answered.", m.requests_total);
    COUNTER("requests_errors_total", "HTTP requests answered with an error status.",
            m.requests_errors);
    COUNTER("requests_rejected_total", "Requests refused with 503 because the queue was full.",
            m.requests_rejected);
    COUNTER("completions_total", "Generation tasks finished.", m.completions_total);
    COUNTER("prompt_tokens_total", "Prompt tokens evaluated (cache hits excluded).",
            m.prompt_tokens_total);
    COUNTER("prompt_tokens_cached_total", "Prompt tokens reused from a slot's KV cache.",
            m.prompt_tokens_cached);
    COUNTER("tokens_predicted_total", "Tokens generated.", m.tokens_predicted_total);
    COUNTER("decode_steps_total", "Decode steps run by the scheduler.", m.steps_total);
    COUNTER("decode_rows_total", "Sequences decoded over all steps (batch rows).",
            m.step_rows_total);
    SECONDS("decode_seconds_total", "Wall time spent in decode passes (decode_rows_total / this "
            "= decode tokens/s).", m.decode_ms_total / 1e3);
    SECONDS("prompt_seconds_total", "Wall time spent evaluating prompts.", m.prompt_ms_total / 1e3);
    GAUGE("requests_processing", "Requests holding a slot.", "%d", busy);
    GAUGE("requests_deferred", "Requests waiting in the queue.", "%d", srv->q_len);
    GAUGE("queue_capacity", "Requests that may wait for a slot.", "%d", srv->p.queue_size);
    GAUGE("slots_total", "Slots (--parallel).", "%d", srv->p.n_parallel);
    GAUGE("prompt_tokens_seconds", "Average prompt throughput in tokens/s.", "%.3f",
          m.prompt_ms_total > 0 ? m.prompt_tokens_total * 1e3 / m.prompt_ms_total : 0.0);
    GAUGE("predicted_tokens_seconds", "Average generation throughput per request in tokens/s.",
          "%.3f", m.gen_ms_total > 0 ? m.tokens_predicted_total * 1e3 / m.gen_ms_total : 0.0);
    GAUGE("step_tokens_seconds", "Aggregate tokens/s of the last decode step.", "%.3f",
          m.last_step_tok_s);
    text_appendf(&b, &len, &cap, "# HELP ork_slot_busy 1 when the slot is running a request.\n"
                 "# TYPE ork_slot_busy gauge\n");
    for (int32_t i = 0; i < srv->p.n_parallel; i++)
        text_appendf(&b, &len, &cap, "ork_slot_busy{slot=\"%d\"} %d\n", i,
                     srv->slots[i].task != NULL);
    text_appendf(&b, &len, &cap, "# HELP ork_slot_n_past Tokens held by the slot's KV cache.\n"
                 "# TYPE ork_slot_n_past gauge\n");
    for (int32_t i = 0; i < srv->p.n_parallel; i++)
        text_appendf(&b, &len, &cap, "ork_slot_n_past{slot=\"%d\"} %d\n", i,
                     srv->slots[i].pub_n_past);
#undef COUNTER
#undef SECONDS
#undef GAUGE
    metrics_spec_twin(&m, &b, &len, &cap);
    pthread_mutex_unlock(&srv->mu);
    return b;
}

SRV_HANDLER(ork__srv_get_metrics)
{
    (void)rt, (void)call;
    ork__srv_reply_json(out, 200, metrics_text(srv));
    out->ctype = ORK_SRV_CTYPE_PROMETHEUS;
}
