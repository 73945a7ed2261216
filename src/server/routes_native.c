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

/* Bytes of one token's text for /tokenize pieces and n_probs entries. */
#define ROUTE_PIECE_CAP 1024

/* Text of one token (specials rendered) as a JSON string; invalid UTF-8 pieces as U+FFFD. */
static void add_piece(cJSON *o, const char *name, const struct ork_server *srv, int32_t id)
{
    char buf[ROUTE_PIECE_CAP];
    int len = ork_token_to_bytes(srv->tok, id, true, buf, sizeof buf - 1);
    if (len < 0 || (size_t)len >= sizeof buf)
        len = 0;
    buf[len] = 0;
    if (!ork__srv_utf8_valid(buf, (size_t)len)) {
        /* Partial UTF-8 (byte tokens): give the bytes instead, as llama-server does. */
        cJSON *a = cJSON_AddArrayToObject(o, name);
        for (int i = 0; i < len && a; i++)
            cJSON_AddItemToArray(a, cJSON_CreateNumber((unsigned char)buf[i]));
        return;
    }
    cJSON_AddStringToObject(o, name, buf);
}

static void add_bytes(cJSON *o, const struct ork_server *srv, int32_t id)
{
    char buf[ROUTE_PIECE_CAP];
    int len = ork_token_to_bytes(srv->tok, id, true, buf, sizeof buf);
    cJSON *a = cJSON_AddArrayToObject(o, "bytes");
    for (int i = 0; i < len && a; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber((unsigned char)buf[i]));
}

/* ---- tokenization ------------------------------------------------------------------------ */

static char *tokenize_json(struct ork_server *srv, const struct srv_req *r, struct srv_error *err)
{
    int32_t *ids, n;
    int ret = ork__srv_tokenize(srv, r->prompt_text, r->add_special, true, &ids, &n);
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
        add_piece(o, "piece", srv, ids[i]);
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
static void post_tok(struct ork_server *srv, const struct srv_route *rt, const char *body,
                     size_t len, struct srv_reply *out,
                     char *(*build)(struct ork_server *, const struct srv_req *,
                                    struct srv_error *))
{
    struct srv_req r;
    struct srv_error err;
    ork__srv_errorf(&err, 500, "server_error", "out of memory");   /* if build runs out */
    char *b = NULL;
    if (ork__srv_req_parse(rt->ep, body, len, srv->n_vocab, &r, &err) == 0)
        b = build(srv, &r, &err);
    ork__srv_req_free(&r);
    if (!b)
        ork__srv_reply_error(out, &err);
    else
        ork__srv_reply_json(out, 200, b);
}

void ork__srv_post_tokenize(struct ork_server *srv, const struct srv_route *rt,
                            const char *body, size_t len, struct srv_reply *out)
{
    post_tok(srv, rt, body, len, out, tokenize_json);
}

void ork__srv_post_detokenize(struct ork_server *srv, const struct srv_route *rt,
                              const char *body, size_t len, struct srv_reply *out)
{
    post_tok(srv, rt, body, len, out, detokenize_json);
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

static void add_probs(struct ork_server *srv, cJSON *root, const struct srv_task *t, int32_t from,
                      int32_t to)
{
    cJSON *a = cJSON_AddArrayToObject(root, "completion_probabilities");
    for (int32_t i = from; i < to && a; i++) {
        const struct srv_prob *p = &t->probs[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "id", p->id);
        add_piece(o, "token", srv, p->id);
        cJSON_AddNumberToObject(o, "logprob", p->logprob);
        add_bytes(o, srv, p->id);
        cJSON *top = cJSON_AddArrayToObject(o, "top_logprobs");
        for (int32_t k = 0; k < p->n_top; k++) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddNumberToObject(e, "id", p->top_ids[k]);
            add_piece(e, "token", srv, p->top_ids[k]);
            cJSON_AddNumberToObject(e, "logprob", p->top_logprobs[k]);
            add_bytes(e, srv, p->top_ids[k]);
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
                            t->stop_word >= 0 && (size_t)t->stop_word < t->req.n_stops
                                ? t->req.stops[t->stop_word] : "");
    cJSON_AddNumberToObject(root, "tokens_predicted", t->n_ids);
    cJSON_AddNumberToObject(root, "tokens_evaluated", t->n_prompt);
    cJSON_AddNumberToObject(root, "tokens_cached", t->n_cached);
    cJSON_AddBoolToObject(root, "truncated", t->truncated);
    cJSON *gs = cJSON_AddObjectToObject(root, "generation_settings");
    cJSON_AddNumberToObject(gs, "n_predict", t->req.n_predict);
    char seed[32];   /* 64-bit seeds do not fit a JSON double exactly: print the integer */
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)ork_sampler_seed(t->smp));
    cJSON_AddRawToObject(gs, "seed", seed);
    cJSON_AddNumberToObject(gs, "temperature", t->req.sampling.temp);
    cJSON_AddNumberToObject(gs, "top_k", t->req.sampling.top_k);
    cJSON_AddNumberToObject(gs, "top_p", t->req.sampling.top_p);
    cJSON_AddNumberToObject(gs, "min_p", t->req.sampling.min_p);
    cJSON_AddNumberToObject(gs, "n_ctx", srv->p.session.ctx_size);
    ork__srv_add_timings(root, t);
}

char *ork__srv_native_result(struct ork_server *srv, const struct srv_task *t)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "index", 0);
    cJSON_AddStringToObject(root, "content", t->text ? t->text : "");
    if (t->req.return_tokens)
        add_token_array(root, "tokens", t->ids, t->n_ids);
    else
        cJSON_AddArrayToObject(root, "tokens");
    cJSON_AddBoolToObject(root, "stop", true);
    add_native_tail(srv, root, t);
    if (t->req.n_probs > 0)
        add_probs(srv, root, t, 0, t->n_ids);
    return ork__srv_json_print(root);
}

int ork__srv_native_stream(struct ork_server *srv, const struct srv_task *t,
                           struct srv_stream_pos *pos, bool final, char **buf, size_t *len,
                           size_t *cap)
{
    int ret;
    if (pos->text_off < t->text_len || pos->ids_off < t->n_ids) {
        char *s = ork__srv_slice(t, pos->text_off, t->text_len);
        if (!s)
            return ORK_ENOMEM;
        cJSON *root = cJSON_CreateObject();
        cJSON_AddNumberToObject(root, "index", 0);
        cJSON_AddStringToObject(root, "content", s);
        add_token_array(root, "tokens", t->ids + pos->ids_off, t->n_ids - pos->ids_off);
        cJSON_AddBoolToObject(root, "stop", false);
        if (t->req.n_probs > 0)
            add_probs(srv, root, t, pos->ids_off, t->n_ids);
        ork_free(s);
        pos->text_off = t->text_len;
        pos->ids_off = t->n_ids;
        if ((ret = ork__srv_sse(root, buf, len, cap)) < 0)
            return ret;
    }
    if (!final)
        return 0;
    if ((ret = ork__srv_sse_task_error(t, buf, len, cap)) < 0)
        return ret;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "index", 0);
    cJSON_AddStringToObject(root, "content", "");
    cJSON_AddArrayToObject(root, "tokens");
    cJSON_AddBoolToObject(root, "stop", true);
    add_native_tail(srv, root, t);
    return ork__srv_sse(root, buf, len, cap);
}

/* ---- server information ------------------------------------------------------------------ */

void ork__srv_get_health(struct ork_server *srv, const struct srv_route *rt, const char *body,
                         size_t len, struct srv_reply *out)
{
    (void)srv, (void)rt, (void)body, (void)len;
    ork__srv_reply_json(out, 200, ork_strdup("{\"status\":\"ok\"}"));
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

void ork__srv_get_props(struct ork_server *srv, const struct srv_route *rt, const char *body,
                        size_t len, struct srv_reply *out)
{
    (void)rt, (void)body, (void)len;
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
        add_piece(root, "bos_token", srv, bos);
    if (eos >= 0)
        add_piece(root, "eos_token", srv, eos);
    ork__srv_reply_json(out, 200, ork__srv_json_print(root));
}

void ork__srv_get_slots(struct ork_server *srv, const struct srv_route *rt, const char *body,
                        size_t len, struct srv_reply *out)
{
    (void)rt, (void)body, (void)len;
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
    pthread_mutex_unlock(&srv->mu);
    return b;
}

void ork__srv_get_metrics(struct ork_server *srv, const struct srv_route *rt, const char *body,
                          size_t len, struct srv_reply *out)
{
    (void)rt, (void)body, (void)len;
    ork__srv_reply_json(out, 200, metrics_text(srv));
    out->ctype = ORK_SRV_CTYPE_PROMETHEUS;
}
