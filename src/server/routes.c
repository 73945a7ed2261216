/* routes.c -- the server's endpoints: the route table (method, path, handler, request schema),
 * generation requests turned into tasks (chat template, tokenization, sampler), the dispatch of
 * a task's result and stream events to the shape of its API, and the reply, JSON and
 * server-sent-event helpers the handlers share.
 *
 * Adding an endpoint: a row in routes[] below and its handler beside the others of its API
 * (routes_native.c: llama-server; routes_openai.c: OpenAI), declared in routes.h; a POST body
 * with a new schema also gets an srv_endpoint and its parser in request.c.
 *
 * Field names follow the llama-server README and the OpenAI API reference. Not here: parsing
 * (request.c), scheduling (sched.c), HTTP transport (http.c). */
#include "routes.h"

#include <ork/alloc.h>
#include <ork/error.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- the route table --------------------------------------------------------------------- */

static const struct srv_route routes[] = {
    /* method  path                    handler                    request schema (POST) */
    { "GET",  "/health",              ork__srv_get_health,       0 },
    { "GET",  "/v1/health",           ork__srv_get_health,       0 },
    { "GET",  "/props",               ork__srv_get_props,        0 },
    { "GET",  "/slots",               ork__srv_get_slots,        0 },
    { "GET",  "/v1/models",           ork__srv_get_models,       0 },
    { "GET",  "/models",              ork__srv_get_models,       0 },
    { "GET",  "/metrics",             ork__srv_get_metrics,      0 },
    { "POST", "/completion",          ork__srv_handle_generate,  SRV_EP_COMPLETION },
    { "POST", "/completions",         ork__srv_handle_generate,  SRV_EP_COMPLETION },
    { "POST", "/v1/completions",      ork__srv_handle_generate,  SRV_EP_OAI_COMPLETION },
    { "POST", "/v1/chat/completions", ork__srv_handle_generate,  SRV_EP_OAI_CHAT },
    { "POST", "/chat/completions",    ork__srv_handle_generate,  SRV_EP_OAI_CHAT },
    { "POST", "/tokenize",            ork__srv_post_tokenize,    SRV_EP_TOKENIZE },
    { "POST", "/detokenize",          ork__srv_post_detokenize,  SRV_EP_DETOKENIZE },
};

const struct srv_route *ork__srv_route_find(const char *method, const char *path,
                                            bool *path_known)
{
    const struct srv_route *rt = NULL;
    *path_known = false;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        if (strcmp(path, routes[i].path))
            continue;
        *path_known = true;
        if (!strcmp(method, routes[i].method) ||
            (!strcmp(method, "HEAD") && !strcmp(routes[i].method, "GET")))
            rt = &routes[i];
    }
    return rt;
}

/* ---- replies and JSON -------------------------------------------------------------------- */

char *ork__srv_json_print(cJSON *j)
{
    if (!j)
        return NULL;
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!s)
        return NULL;
    char *out = ork_strdup(s);
    cJSON_free(s);
    return out;
}

char *ork__srv_error_json(const struct srv_error *err)
{
    cJSON *root = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(root, "error");
    if (e) {
        cJSON_AddNumberToObject(e, "code", err->status);
        cJSON_AddStringToObject(e, "message", err->message);
        cJSON_AddStringToObject(e, "type", err->type ? err->type : "server_error");
    }
    return ork__srv_json_print(root);
}

void ork__srv_reply_json(struct srv_reply *out, unsigned status, char *body)
{
    out->status = status;
    out->body = body;
    out->ctype = ORK_SRV_CTYPE_JSON;
    out->task = NULL;
}

void ork__srv_reply_error(struct srv_reply *out, const struct srv_error *err)
{
    ork__srv_reply_json(out, (unsigned)err->status, ork__srv_error_json(err));
}

void ork__srv_reply_errorf(struct srv_reply *out, int status, const char *type, const char *fmt,
                           ...)
{
    struct srv_error err = { .status = status, .type = type };
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err.message, sizeof err.message, fmt, ap);
    va_end(ap);
    ork__srv_reply_error(out, &err);
}

int ork__srv_tokenize(const struct ork_server *srv, const char *text, bool add_special,
                      bool parse_special, int32_t **ids, int32_t *n)
{
    size_t len = strlen(text), cnt = 0, cap = len + 8;
    *ids = NULL;
    *n = 0;
    int32_t *buf = ork_malloc(cap * sizeof(int32_t));
    if (!buf)
        return ORK_ENOMEM;
    int ret = ork_tokenize(srv->tok, text, len, add_special, parse_special, buf, cap, &cnt);
    if (ret == ORK_ENOSPC) {
        ork_free(buf);
        cap = cnt;
        if (!(buf = ork_malloc((cap ? cap : 1) * sizeof(int32_t))))
            return ORK_ENOMEM;
        ret = ork_tokenize(srv->tok, text, len, add_special, parse_special, buf, cap, &cnt);
    }
    if (ret < 0 || cnt > INT32_MAX) {
        ork_free(buf);
        return ret < 0 ? ret : ORK_ERANGE;
    }
    *ids = buf;
    *n = (int32_t)cnt;
    return 0;
}

void ork__srv_add_timings(cJSON *root, const struct srv_task *t)
{
    cJSON *tm = cJSON_AddObjectToObject(root, "timings");
    int32_t pn = t->n_prompt - t->n_cached, gn = t->n_ids;
    cJSON_AddNumberToObject(tm, "prompt_n", pn);
    cJSON_AddNumberToObject(tm, "prompt_ms", t->prompt_ms);
    cJSON_AddNumberToObject(tm, "prompt_per_token_ms", pn > 0 ? t->prompt_ms / pn : 0);
    cJSON_AddNumberToObject(tm, "prompt_per_second", t->prompt_ms > 0 ? pn * 1e3 / t->prompt_ms : 0);
    cJSON_AddNumberToObject(tm, "predicted_n", gn);
    cJSON_AddNumberToObject(tm, "predicted_ms", t->gen_ms);
    cJSON_AddNumberToObject(tm, "predicted_per_token_ms", gn > 0 ? t->gen_ms / gn : 0);
    cJSON_AddNumberToObject(tm, "predicted_per_second", t->gen_ms > 0 ? gn * 1e3 / t->gen_ms : 0);
}

/* ---- generation requests ----------------------------------------------------------------- */

/* Text markers that end an assistant turn (stop strings for models that do not make them single
 * end-of-generation tokens). */
static const char *chat_end_marker(enum ork_chat_format f)
{
    switch (f) {
    case ORK_CHAT_CHATML: return "<|im_end|>";
    case ORK_CHAT_LLAMA3: return "<|eot_id|>";
    case ORK_CHAT_LLAMA2: return "</s>";
    }
    return NULL;
}

/* Build the prompt tokens and sampler of a generation request into t (t->req already set). */
static int task_prepare(struct ork_server *srv, struct srv_task *t, struct srv_error *err)
{
    struct srv_req *r = &t->req;
    int ret = 0;
    if (r->ep == SRV_EP_OAI_CHAT) {
        struct ork_chat_msg *msgs = ork_calloc(r->n_msgs, sizeof(*msgs));
        if (!msgs)
            return ork__srv_errorf(err, 500, "server_error", "out of memory");
        for (size_t i = 0; i < r->n_msgs; i++) {
            msgs[i].role = r->msgs[i].role;
            msgs[i].content = r->msgs[i].content;
        }
        char *text = NULL;
        ret = ork_chat_render(srv->chat_fmt, msgs, r->n_msgs, true, &text);
        ork_free(msgs);
        if (ret < 0)
            return ork__srv_errorf(err, 400, "invalid_request_error", "messages: %s",
                                   ork_error_describe(ret));
        ret = ork__srv_tokenize(srv, text, true, true, &t->prompt, &t->n_prompt);
        ork_free(text);
        const char *marker = chat_end_marker(srv->chat_fmt);
        if (ret == 0 && marker && r->n_stops < SRV_MAX_STOPS &&
            !(r->stops[r->n_stops] = ork_strdup(marker)))
            ret = ORK_ENOMEM;
        else if (ret == 0 && marker && r->n_stops < SRV_MAX_STOPS)
            r->n_stops++;
    } else if (r->prompt_text) {
        ret = ork__srv_tokenize(srv, r->prompt_text, true, false, &t->prompt, &t->n_prompt);
    } else {
        t->prompt = ork_malloc((size_t)r->n_prompt_ids * sizeof(int32_t));
        if (!t->prompt)
            ret = ORK_ENOMEM;
        else {
            memcpy(t->prompt, r->prompt_ids, (size_t)r->n_prompt_ids * sizeof(int32_t));
            t->n_prompt = r->n_prompt_ids;
        }
    }
    if (ret < 0)
        return ork__srv_errorf(err, ret == ORK_ENOMEM ? 500 : 400,
                               ret == ORK_ENOMEM ? "server_error" : "invalid_request_error",
                               "cannot tokenize the prompt: %s", ork_error_describe(ret));
    if (t->n_prompt < 1)
        return ork__srv_errorf(err, 400, "invalid_request_error", "the prompt is empty (no tokens)");
    int32_t n_ctx = srv->p.session.ctx_size;
    if (t->n_prompt > n_ctx)
        return ork__srv_errorf(err, 400, "exceed_context_size_error",
                               "the prompt has %d tokens, more than the context size %d",
                               t->n_prompt, n_ctx);
    if ((ret = ork_sampler_create(&r->sampling, srv->n_vocab, &t->smp)) < 0)
        return ork__srv_errorf(err, 400, "invalid_request_error", "%s", ork_error_describe(ret));
    return 0;
}

static void task_drop(struct ork_server *srv, struct srv_task *t)
{
    pthread_mutex_lock(&srv->mu);
    ork__srv_task_release_locked(srv, t);
    pthread_mutex_unlock(&srv->mu);
}

void ork__srv_handle_generate(struct ork_server *srv, const struct srv_route *rt,
                              const char *body, size_t len, struct srv_reply *out)
{
    struct srv_error err;
    struct srv_task *t = ork__srv_task_new();
    if (!t) {
        ork__srv_reply_errorf(out, 500, "server_error", "out of memory");
        return;
    }
    if (ork__srv_req_parse(rt->ep, body, len, srv->n_vocab, &t->req, &err) < 0 ||
        task_prepare(srv, t, &err) < 0) {
        task_drop(srv, t);
        ork__srv_reply_error(out, &err);
        return;
    }
    int ret = ork__srv_submit(srv, t);
    if (ret < 0) {
        task_drop(srv, t);
        ork__srv_reply_errorf(out, 503, "unavailable_error", "%s",
                              ret == ORK_EBUSY
                                  ? "all slots are busy and the queue is full; retry later"
                                  : "the server is shutting down");
        return;
    }
    ork__srv_reply_json(out, 200, NULL);
    out->task = t;
}

/* ---- results and streams: dispatch to the API's shape ------------------------------------ */

bool ork__srv_task_error(const struct srv_task *t, struct srv_error *err)
{
    if (t->stop != SRV_STOP_ERROR && !(t->stop == SRV_STOP_SHUTDOWN && t->error[0]))
        return false;
    bool failed = t->stop == SRV_STOP_ERROR;
    ork__srv_errorf(err, failed ? 500 : 503, failed ? "server_error" : "unavailable_error", "%s",
                    t->error);
    return true;
}

void ork__srv_task_reply(struct ork_server *srv, const struct srv_task *t, struct srv_reply *out)
{
    struct srv_error err;
    if (ork__srv_task_error(t, &err)) {
        ork__srv_reply_error(out, &err);
        return;
    }
    ork__srv_reply_json(out, 200, t->req.ep == SRV_EP_COMPLETION
                                      ? ork__srv_native_result(srv, t)
                                      : ork__srv_oai_result(srv, t));
}

bool ork__srv_stream_pending(const struct srv_task *t, const struct srv_stream_pos *pos)
{
    if (t->text_len != pos->text_off)
        return true;
    if (t->req.ep == SRV_EP_COMPLETION)
        return t->n_ids != pos->ids_off;   /* native events carry the token ids too */
    return t->req.ep == SRV_EP_OAI_CHAT && !pos->role_sent;
}

int ork__srv_stream_events(struct ork_server *srv, const struct srv_task *t,
                           struct srv_stream_pos *pos, bool final, char **buf, size_t *len,
                           size_t *cap)
{
    if (t->req.ep == SRV_EP_COMPLETION)
        return ork__srv_native_stream(srv, t, pos, final, buf, len, cap);
    return ork__srv_oai_stream(srv, t, pos, final, buf, len, cap);
}

/* ---- server-sent events ------------------------------------------------------------------ */

int ork__srv_buf_append(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t c = *cap ? *cap : 1024;
        while (c < *len + n + 1)
            c *= 2;
        char *nb = ork_realloc(*buf, c);
        if (!nb)
            return ORK_ENOMEM;
        *buf = nb;
        *cap = c;
    }
    memcpy(*buf + *len, s, n);
    *len += n;
    (*buf)[*len] = 0;
    return 0;
}

/* Append "data: <s>\n\n". */
static int sse_text(const char *s, char **buf, size_t *len, size_t *cap)
{
    int ret = ork__srv_buf_append(buf, len, cap, "data: ", 6);
    if (ret == 0)
        ret = ork__srv_buf_append(buf, len, cap, s, strlen(s));
    if (ret == 0)
        ret = ork__srv_buf_append(buf, len, cap, "\n\n", 2);
    return ret;
}

int ork__srv_sse(cJSON *j, char **buf, size_t *len, size_t *cap)
{
    char *s = ork__srv_json_print(j);
    if (!s)
        return ORK_ENOMEM;
    int ret = sse_text(s, buf, len, cap);
    ork_free(s);
    return ret;
}

char *ork__srv_slice(const struct srv_task *t, size_t from, size_t to)
{
    char *s = ork_malloc(to - from + 1);
    if (s) {
        memcpy(s, t->text + from, to - from);
        s[to - from] = 0;
    }
    return s;
}

int ork__srv_sse_task_error(const struct srv_task *t, char **buf, size_t *len, size_t *cap)
{
    struct srv_error err;
    if (!ork__srv_task_error(t, &err))
        return 0;
    char *e = ork__srv_error_json(&err);
    if (!e)
        return ORK_ENOMEM;
    int ret = sse_text(e, buf, len, cap);
    ork_free(e);
    return ret;
}
