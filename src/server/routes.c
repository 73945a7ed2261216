/* routes.c -- the server's endpoints: the route table (method, path, handler, request schema),
 * generation requests turned into tasks (chat template, tokenization, sampler), the dispatch of
 * a task's result and stream events to the shape of its API, and the reply, JSON and
 * server-sent-event helpers the handlers share.
 *
 * Adding an endpoint: a row in routes[] below and its handler beside the others of its API
 * (routes_native.c: llama-server; routes_openai.c: OpenAI), declared in routes.h; a POST body
 * with a new schema also gets an srv_endpoint and its parser in request.c.
 *
 * A request becomes one task per result: prompts x "n" choices for a generation, one per
 * input for embeddings, one for a /slots action. The first task owns the parsed request; the
 * others point to it (and hold a reference on the first).
 *
 * Field names follow the llama-server README and the OpenAI API reference. Not here: parsing
 * (request.c), scheduling (sched.c), HTTP transport (http.c). */
#include "routes.h"

#include <ork/alloc.h>
#include <ork/error.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

/* ---- the route table --------------------------------------------------------------------- */

#define PUB SRV_RT_PUBLIC
#define LOADING SRV_RT_LOADING
static const struct srv_route routes[] = {
    /* method  path                    handler                       request schema (POST), flags */
    { "GET",  "/",                    ork__srv_get_webui,           0, PUB | LOADING },
    { "GET",  "/health",              ork__srv_get_health,          0, PUB | LOADING },
    { "GET",  "/v1/health",           ork__srv_get_health,          0, PUB | LOADING },
    { "GET",  "/props",               ork__srv_get_props,           0, 0 },
    { "POST", "/props",               ork__srv_post_props,          SRV_EP_PROPS, 0 },
    { "GET",  "/slots",               ork__srv_get_slots,           0, 0 },
    { "POST", "/slots/",              ork__srv_handle_slot_action,  SRV_EP_SLOT_ACTION,
      SRV_RT_PREFIX },
    { "GET",  "/v1/models",           ork__srv_get_models,          0, 0 },
    { "GET",  "/models",              ork__srv_get_models,          0, 0 },
    { "GET",  "/v1/models/",          ork__srv_get_model,           0, SRV_RT_PREFIX },
    { "GET",  "/metrics",             ork__srv_get_metrics,         0, SRV_RT_METRICS },
    { "POST", "/completion",          ork__srv_handle_generate,     SRV_EP_COMPLETION, 0 },
    { "POST", "/completions",         ork__srv_handle_generate,     SRV_EP_COMPLETION, 0 },
    { "POST", "/v1/completions",      ork__srv_handle_generate,     SRV_EP_OAI_COMPLETION, 0 },
    { "POST", "/v1/chat/completions", ork__srv_handle_generate,     SRV_EP_OAI_CHAT, 0 },
    { "POST", "/chat/completions",    ork__srv_handle_generate,     SRV_EP_OAI_CHAT, 0 },
    { "POST", "/tokenize",            ork__srv_post_tokenize,       SRV_EP_TOKENIZE, 0 },
    { "POST", "/detokenize",          ork__srv_post_detokenize,     SRV_EP_DETOKENIZE, 0 },
    { "POST", "/apply-template",      ork__srv_post_apply_template, SRV_EP_APPLY_TEMPLATE, 0 },
    { "POST", "/embedding",           ork__srv_handle_embed,        SRV_EP_EMBEDDING, 0 },
    { "POST", "/embeddings",          ork__srv_handle_embed,        SRV_EP_EMBEDDING, 0 },
    { "POST", "/v1/embeddings",       ork__srv_handle_embed,        SRV_EP_OAI_EMBEDDING, 0 },
};

/* GET /: the web chat page (src/server/webui/index.html, compiled in by CMake). Public: the
 * page holds nothing secret and asks for the API key itself. 404 with --no-webui. */
extern const char ork__srv_webui_html[];
extern const size_t ork__srv_webui_html_len;

SRV_HANDLER(ork__srv_get_webui)
{
    (void)rt, (void)call;
    if (srv->p.no_webui) {
        ork__srv_reply_errorf(out, 404, "not_found_error", "the web page is off (ork serve "
                              "--no-webui)");
        return;
    }
    char *page = ork_malloc(ork__srv_webui_html_len + 1);
    if (page)
        memcpy(page, ork__srv_webui_html, ork__srv_webui_html_len + 1);
    out->status = 200;
    out->body = page;
    out->ctype = "text/html; charset=utf-8";
}
#undef PUB
#undef LOADING

static bool path_matches(const struct srv_route *rt, const char *path)
{
    if (!(rt->flags & SRV_RT_PREFIX))
        return !strcmp(path, rt->path);
    size_t n = strlen(rt->path);
    return !strncmp(path, rt->path, n) && path[n] && !strchr(path + n, '/');
}

const struct srv_route *ork__srv_route_find(const char *method, const char *path,
                                            bool *path_known, char *allow, size_t cap)
{
    const struct srv_route *rt = NULL;
    *path_known = false;
    size_t used = 0;
    if (cap)
        allow[0] = 0;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        if (!path_matches(&routes[i], path))
            continue;
        *path_known = true;
        bool get = !strcmp(routes[i].method, "GET");
        int w = snprintf(allow + used, cap - used, "%s%s%s", used ? ", " : "", routes[i].method,
                         get ? ", HEAD" : "");
        if (w > 0 && (size_t)w < cap - used)
            used += (size_t)w;
        if (!strcmp(method, routes[i].method) || (!strcmp(method, "HEAD") && get))
            rt = &routes[i];
    }
    if (*path_known && used + 10 < cap)
        snprintf(allow + used, cap - used, ", OPTIONS");
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
    out->tasks = NULL;
    out->n_tasks = 0;
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

/* Bytes of one token's text (a piece is at most a few hundred bytes; tokenizer.h). */
#define ROUTE_PIECE_CAP 1024

int ork__srv_piece(const struct ork_server *srv, int32_t id, char *buf, size_t cap)
{
    int len = ork_token_to_bytes(srv->tok, id, true, buf, cap - 1);
    if (len < 0 || (size_t)len >= cap)
        len = 0;
    buf[len] = 0;
    return len;
}

void ork__srv_add_piece(cJSON *o, const char *name, const struct ork_server *srv, int32_t id)
{
    char buf[ROUTE_PIECE_CAP];
    int len = ork__srv_piece(srv, id, buf, sizeof buf);
    if (!ork__srv_utf8_valid(buf, (size_t)len)) {
        cJSON *a = cJSON_AddArrayToObject(o, name);
        for (int i = 0; i < len && a; i++)
            cJSON_AddItemToArray(a, cJSON_CreateNumber((unsigned char)buf[i]));
        return;
    }
    cJSON_AddStringToObject(o, name, buf);
}

void ork__srv_add_bytes(cJSON *o, const struct ork_server *srv, int32_t id)
{
    char buf[ROUTE_PIECE_CAP];
    int len = ork__srv_piece(srv, id, buf, sizeof buf);
    cJSON *a = cJSON_AddArrayToObject(o, "bytes");
    for (int i = 0; i < len && a; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber((unsigned char)buf[i]));
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

int ork__srv_render_chat(struct ork_server *srv, const struct srv_req *r, char **text,
                         struct srv_error *err)
{
    /* one more message when the tool list needs a system turn of its own */
    size_t n = r->n_msgs + 1, k = 0;
    struct ork_chat_msg *msgs = ork_calloc(n, sizeof(*msgs));
    struct ork_chat_msg_calls *calls = ork_calloc(n, sizeof(*calls));
    char *sys = NULL;
    int ret = 0;
    if (!msgs || !calls) {
        ret = ork__srv_errorf(err, 500, "server_error", "out of memory");
        goto out;
    }
    bool tools = ork__srv_tools_active(r);
    bool has_sys = r->n_msgs > 0 && !strcmp(r->msgs[0].role, "system");
    if (tools && (ret = ork__srv_tools_system(srv, r, has_sys ? r->msgs[0].content : NULL, &sys,
                                              err)) < 0)
        goto out;
    if (tools && !has_sys)
        msgs[k++] = (struct ork_chat_msg){ .role = "system", .content = sys };
    for (size_t i = 0; i < r->n_msgs; i++, k++) {
        const struct srv_msg *m = &r->msgs[i];
        msgs[k].role = m->role;
        msgs[k].content = tools && has_sys && i == 0 ? sys : m->content;
        if (!m->n_calls)
            continue;
        struct ork_chat_tool_call *tc = ork_calloc(m->n_calls, sizeof(*tc));
        if (!tc) {
            ret = ork__srv_errorf(err, 500, "server_error", "out of memory");
            goto out;
        }
        for (size_t c = 0; c < m->n_calls; c++)
            tc[c] = (struct ork_chat_tool_call){ .name = m->calls[c].name,
                                                 .arguments = m->calls[c].arguments };
        calls[k] = (struct ork_chat_msg_calls){ .calls = tc, .n = m->n_calls };
    }
    ret = ork_chat_render_calls(srv->chat_fmt, msgs, calls, k, true, text);
    if (ret < 0)
        ret = ork__srv_errorf(err, ret == ORK_ENOMEM ? 500 : 400,
                              ret == ORK_ENOMEM ? "server_error" : "invalid_request_error",
                              "messages: %s", ork_error_describe(ret));
out:
    for (size_t i = 0; calls && i < n; i++)
        ork_free((void *)calls[i].calls);
    ork_free(calls);
    ork_free(msgs);
    ork_free(sys);
    return ret;
}

/* The tokens of prompt i of r (chat: the rendered messages) into t. String prompts get BOS as
 * the model asks and their special-token text parsed (llama-server's behaviour; the request's
 * "parse_special": false keeps it literal). */
static int task_tokens(struct ork_server *srv, struct srv_task *t, const struct srv_req *r,
                       int32_t i, struct srv_error *err)
{
    int ret = 0;
    if (r->ep == SRV_EP_OAI_CHAT) {
        char *text = NULL;
        if ((ret = ork__srv_render_chat(srv, r, &text, err)) < 0)
            return ret;
        ret = ork__srv_tokenize(srv, text, true, true, &t->prompt, &t->n_prompt);
        ork_free(text);
    } else if (r->prompts[i].text) {
        ret = ork__srv_tokenize(srv, r->prompts[i].text, true, r->parse_special, &t->prompt,
                                &t->n_prompt);
    } else {
        size_t bytes = (size_t)r->prompts[i].n_ids * sizeof(int32_t);
        if (!(t->prompt = ork_malloc(bytes)))
            ret = ORK_ENOMEM;
        else {
            memcpy(t->prompt, r->prompts[i].ids, bytes);
            t->n_prompt = r->prompts[i].n_ids;
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
    return 0;
}

/* A random 64-bit value (getrandom; the clock if that fails). */
static uint64_t random_u64(void)
{
    uint64_t v = 0;
    if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        v = (uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec;
    }
    return v;
}

static void tasks_drop(struct ork_server *srv, struct srv_task **ts, int32_t n)
{
    pthread_mutex_lock(&srv->mu);
    for (int32_t i = 0; i < n; i++)
        if (ts[i])
            ork__srv_task_release_locked(srv, ts[i]);
    pthread_mutex_unlock(&srv->mu);
    ork_free(ts);
}

/* Parse the body into a first task (which owns the request) and create the n - 1 others of
 * the request, sharing it. */
static struct srv_task **tasks_new(struct ork_server *srv, const struct srv_route *rt,
                                   const struct srv_call *call, enum srv_task_kind kind,
                                   int32_t *n_out, struct srv_error *err)
{
    struct srv_task *owner = ork__srv_task_new();
    if (!owner) {
        ork__srv_errorf(err, 500, "server_error", "out of memory");
        return NULL;
    }
    if (ork__srv_req_parse(rt->ep, call->body, call->len, srv->n_vocab, &owner->req, err) < 0) {
        pthread_mutex_lock(&srv->mu);
        ork__srv_task_release_locked(srv, owner);
        pthread_mutex_unlock(&srv->mu);
        return NULL;
    }
    const struct srv_req *r = &owner->req;
    int32_t per = kind == SRV_TASK_GENERATE ? r->n_choices : 1;
    bool one = r->ep == SRV_EP_OAI_CHAT || r->ep == SRV_EP_SLOT_ACTION;
    int32_t np = one || r->n_prompts < 1 ? 1 : r->n_prompts, n = np * per;
    struct srv_task **ts = ork_calloc((size_t)n, sizeof(*ts));
    if (!ts) {
        pthread_mutex_lock(&srv->mu);
        ork__srv_task_release_locked(srv, owner);
        pthread_mutex_unlock(&srv->mu);
        ork__srv_errorf(err, 500, "server_error", "out of memory");
        return NULL;
    }
    ts[0] = owner;
    int64_t created = (int64_t)time(NULL);
    char id[48];
    snprintf(id, sizeof id, "%s-%016llx%08llx",
             r->ep == SRV_EP_OAI_CHAT ? "chatcmpl" : kind == SRV_TASK_EMBED ? "embd" : "cmpl",
             (unsigned long long)srv->id_nonce,
             (unsigned long long)__atomic_fetch_add(&srv->id_seq, 1, __ATOMIC_RELAXED));
    for (int32_t i = 0; i < n; i++) {
        if (i > 0 && !(ts[i] = ork__srv_task_new())) {
            ork__srv_errorf(err, 500, "server_error", "out of memory");
            tasks_drop(srv, ts, n);
            return NULL;
        }
        struct srv_task *t = ts[i];
        t->kind = kind;
        t->index = i;
        t->prompt_index = i / per;
        t->created = created;
        t->target_slot = r->id_slot;
        snprintf(t->oai_id, sizeof t->oai_id, "%s", id);
        if (i > 0) {
            t->rq = r;
            t->wake = &owner->cv;
            t->req_owner = owner;
            owner->refs++;   /* under no lock: nobody else sees these tasks yet */
        }
    }
    *n_out = n;
    return ts;
}

static void reply_tasks(struct ork_server *srv, struct srv_task **ts, int32_t n,
                        struct srv_reply *out)
{
    int ret = ork__srv_submit(srv, ts, n);
    if (ret < 0) {
        tasks_drop(srv, ts, n);
        ork__srv_reply_errorf(out, 503, "unavailable_error", "%s",
                              ret == ORK_EBUSY
                                  ? "all slots are busy and the queue is full; retry later"
                                  : "the server is shutting down");
        return;
    }
    ork__srv_reply_json(out, 200, NULL);
    out->tasks = ts;
    out->n_tasks = n;
}

static int check_slot(const struct ork_server *srv, int32_t id, struct srv_error *err)
{
    if (id >= srv->p.n_parallel)
        return ork__srv_errorf(err, 400, "invalid_request_error",
                               "'id_slot' %d is not a slot (there are %d)", id,
                               srv->p.n_parallel);
    return 0;
}

/* The vocabulary trie grammars filter with, built once at the first constrained request. */
static int grammar_vocab(struct ork_server *srv, struct srv_error *err)
{
    pthread_mutex_lock(&srv->mu);
    int ret = 0;
    if (!srv->gvocab && (ret = ork_grammar_vocab_create(srv->tok, &srv->gvocab)) < 0)
        ork__srv_errorf(err, 500, "server_error", "%s", ork_error_describe(ret));
    pthread_mutex_unlock(&srv->mu);
    return ret;
}

void ork__srv_handle_generate(struct ork_server *srv, const struct srv_route *rt,
                              const struct srv_call *call, struct srv_reply *out)
{
    struct srv_error err;
    int32_t n = 0;
    struct srv_task **ts = tasks_new(srv, rt, call, SRV_TASK_GENERATE, &n, &err);
    if (!ts) {
        ork__srv_reply_error(out, &err);
        return;
    }
    struct srv_req *r = &ts[0]->req;
    int ret = check_slot(srv, r->id_slot, &err);
    /* the end-of-turn marker of the chat template is a stop string too */
    const char *marker = r->ep == SRV_EP_OAI_CHAT ? ork_chat_end_marker(srv->chat_fmt) : NULL;
    if (ret == 0 && marker && r->n_stops < SRV_MAX_STOPS) {
        if (!(r->stops[r->n_stops] = ork_strdup(marker)))
            ret = ork__srv_errorf(&err, 500, "server_error", "out of memory");
        else
            r->n_stops++;
    }
    /* a forced tool call samples under the call grammar */
    if (ret == 0)
        ret = ork__srv_tools_grammar(srv, r, &err);
    /* choice c of a prompt samples with seed + c (a random base seed when none was given) */
    uint64_t seed = r->seed_set && r->sampling.seed != ORK_SEED_RANDOM ? r->sampling.seed
                                                                        : random_u64();
    if (seed == ORK_SEED_RANDOM)
        seed = 0;
    for (int32_t i = 0; i < n && ret == 0; i++) {
        struct srv_task *t = ts[i];
        if ((ret = task_tokens(srv, t, r, t->prompt_index, &err)) < 0)
            break;
        struct ork_sampler_params sp = r->sampling;
        if (r->grammar) {
            if ((ret = grammar_vocab(srv, &err)) < 0)
                break;
            sp.grammar = r->grammar;
            sp.grammar_vocab = srv->gvocab;
        }
        sp.seed = seed + (uint64_t)(i % r->n_choices);
        if (sp.seed == ORK_SEED_RANDOM)
            sp.seed = 0;
        if ((ret = ork_sampler_create(&sp, srv->n_vocab, &t->smp)) < 0)
            ret = ork__srv_errorf(&err, 400, "invalid_request_error", "%s",
                                  ork_error_describe(ret));
    }
    if (ret < 0) {
        tasks_drop(srv, ts, n);
        ork__srv_reply_error(out, &err);
        return;
    }
    reply_tasks(srv, ts, n, out);
}

void ork__srv_handle_embed(struct ork_server *srv, const struct srv_route *rt,
                           const struct srv_call *call, struct srv_reply *out)
{
    if (!srv->embedder) {
        ork__srv_reply_errorf(out, 501, "not_supported_error", "This server does not support "
                              "embeddings. Start it with --embeddings");
        return;
    }
    struct srv_error err;
    int32_t n = 0;
    struct srv_task **ts = tasks_new(srv, rt, call, SRV_TASK_EMBED, &n, &err);
    if (!ts) {
        ork__srv_reply_error(out, &err);
        return;
    }
    int ret = 0;
    for (int32_t i = 0; i < n && ret == 0; i++) {
        struct srv_task *t = ts[i];
        if ((ret = task_tokens(srv, t, &ts[0]->req, i, &err)) < 0)
            break;
        if (!(t->embd = ork_calloc((size_t)ork_embedder_dim(srv->embedder), sizeof(float))))
            ret = ork__srv_errorf(&err, 500, "server_error", "out of memory");
    }
    if (ret < 0) {
        tasks_drop(srv, ts, n);
        ork__srv_reply_error(out, &err);
        return;
    }
    reply_tasks(srv, ts, n, out);
}

void ork__srv_handle_slot_action(struct ork_server *srv, const struct srv_route *rt,
                                 const struct srv_call *call, struct srv_reply *out)
{
    if (!srv->p.slot_save_path) {
        ork__srv_reply_errorf(out, 501, "not_supported_error", "This server does not support "
                              "slot actions. Start it with --slot-save-path DIR");
        return;
    }
    char *end = NULL;
    long id = strtol(call->path_arg, &end, 10);
    if (!call->path_arg[0] || *end || id < 0 || id >= srv->p.n_parallel) {
        ork__srv_reply_errorf(out, 400, "invalid_request_error", "'%.32s' is not a slot id "
                              "(0 .. %d)", call->path_arg, srv->p.n_parallel - 1);
        return;
    }
    const char *a = call->action ? call->action : "";
    enum srv_task_kind kind = !strcmp(a, "save")      ? SRV_TASK_SLOT_SAVE
                              : !strcmp(a, "restore") ? SRV_TASK_SLOT_RESTORE
                              : !strcmp(a, "erase")   ? SRV_TASK_SLOT_ERASE
                                                      : SRV_TASK_GENERATE;
    if (kind == SRV_TASK_GENERATE) {
        ork__srv_reply_errorf(out, 400, "invalid_request_error", "'action' must be save, "
                              "restore or erase");
        return;
    }
    struct srv_call c = *call;
    if (!c.len) {   /* erase needs no body */
        c.body = "{}";
        c.len = 2;
    }
    struct srv_error err;
    int32_t n = 0;
    struct srv_task **ts = tasks_new(srv, rt, &c, kind, &n, &err);
    if (!ts) {
        ork__srv_reply_error(out, &err);
        return;
    }
    ts[0]->target_slot = (int32_t)id;
    if (kind != SRV_TASK_SLOT_ERASE && !ts[0]->req.filename) {
        tasks_drop(srv, ts, n);
        ork__srv_reply_errorf(out, 400, "invalid_request_error", "'filename' is required");
        return;
    }
    reply_tasks(srv, ts, n, out);
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

void ork__srv_task_reply(struct ork_server *srv, struct srv_task *const *ts, int32_t n,
                         struct srv_reply *out)
{
    struct srv_error err;
    for (int32_t i = 0; i < n; i++)
        if (ork__srv_task_error(ts[i], &err)) {
            ork__srv_reply_error(out, &err);
            return;
        }
    const struct srv_task *t = ts[0];
    char *body;
    switch (t->kind) {
    case SRV_TASK_EMBED:
        body = t->rq->ep == SRV_EP_OAI_EMBEDDING ? ork__srv_oai_embed_result(srv, ts, n)
                                                 : ork__srv_native_embed_result(srv, ts, n);
        break;
    case SRV_TASK_SLOT_SAVE:
    case SRV_TASK_SLOT_RESTORE:
    case SRV_TASK_SLOT_ERASE:
        body = ork__srv_slot_action_result(srv, t);
        break;
    default:
        body = t->rq->ep == SRV_EP_COMPLETION ? ork__srv_native_result(srv, ts, n)
                                              : ork__srv_oai_result(srv, ts, n);
        break;
    }
    ork__srv_reply_json(out, 200, body);
}

bool ork__srv_stream_pending(const struct srv_task *t, const struct srv_stream_pos *pos)
{
    if (t->text_len != pos->text_off)
        return true;
    int32_t ids = t->rq->want_probs ? t->n_probs_done : t->n_ids;
    if (t->rq->ep == SRV_EP_COMPLETION || t->rq->want_probs)
        return ids != pos->ids_off;   /* native events carry the token ids too */
    return t->rq->ep == SRV_EP_OAI_CHAT && !pos->role_sent;
}

int ork__srv_stream_events(struct ork_server *srv, const struct srv_task *t,
                           struct srv_stream_pos *pos, bool final, char **buf, size_t *len,
                           size_t *cap)
{
    if (t->rq->ep == SRV_EP_COMPLETION)
        return ork__srv_native_stream(srv, t, pos, final, buf, len, cap);
    return ork__srv_oai_stream(srv, t, pos, final, buf, len, cap);
}

int ork__srv_stream_end(struct ork_server *srv, struct srv_task *const *ts, int32_t n,
                        char **buf, size_t *len, size_t *cap)
{
    if (ts[0]->rq->ep == SRV_EP_COMPLETION)
        return 0;   /* llama-server's native stream has no [DONE] */
    return ork__srv_oai_stream_end(srv, ts, n, buf, len, cap);
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
