/* routes.c -- the JSON (and Prometheus text) bodies of the server's endpoints: results and
 * stream events of /completion (llama-server shape), /v1/completions and /v1/chat/completions
 * (OpenAI shapes), /tokenize, /detokenize, /props, /slots, /v1/models, /metrics; plus turning a
 * parsed request into a task (chat template, tokenization, sampler).
 *
 * Field names follow the llama-server README and the OpenAI API reference. Not here: parsing
 * (request.c), scheduling (sched.c), HTTP (http.c). */
#include "srv_priv.h"

#include <ork/alloc.h>
#include <ork/error.h>

#include <cjson/cJSON.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Bytes of one token's text for /tokenize pieces and n_probs entries. */
#define ROUTE_PIECE_CAP 1024

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

/* ---- tokenization ------------------------------------------------------------------------ */

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
    if (len < 0 || (size_t)len > sizeof buf)
        len = 0;
    cJSON *a = cJSON_AddArrayToObject(o, "bytes");
    for (int i = 0; i < len && a; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber((unsigned char)buf[i]));
}

char *ork__srv_tokenize_json(struct ork_server *srv, const struct srv_req *r, struct srv_error *err)
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

char *ork__srv_detokenize_json(struct ork_server *srv, const struct srv_req *r,
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

int ork__srv_task_prepare(struct ork_server *srv, struct srv_task *t, struct srv_error *err)
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

/* ---- results ----------------------------------------------------------------------------- */

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

static const char *finish_reason(enum srv_stop s)
{
    return (s == SRV_STOP_EOS || s == SRV_STOP_WORD) ? "stop" : "length";
}

static void add_timings(cJSON *root, const struct srv_task *t)
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

static void add_usage(cJSON *root, const struct srv_task *t)
{
    cJSON *u = cJSON_AddObjectToObject(root, "usage");
    cJSON_AddNumberToObject(u, "prompt_tokens", t->n_prompt);
    cJSON_AddNumberToObject(u, "completion_tokens", t->n_ids);
    cJSON_AddNumberToObject(u, "total_tokens", t->n_prompt + t->n_ids);
}

static void add_oai_header(struct ork_server *srv, cJSON *root, const struct srv_task *t,
                           const char *object)
{
    char id[64];
    snprintf(id, sizeof id, "%s-ork-%llu", t->req.ep == SRV_EP_OAI_CHAT ? "chatcmpl" : "cmpl",
             (unsigned long long)t->id);
    cJSON_AddStringToObject(root, "id", id);
    cJSON_AddStringToObject(root, "object", object);
    cJSON_AddNumberToObject(root, "created", (double)srv->created);
    cJSON_AddStringToObject(root, "model", t->req.model ? t->req.model : srv->model_id);
    cJSON_AddStringToObject(root, "system_fingerprint", "ork-0.1.0");
}

static void add_token_array(cJSON *root, const char *name, const int32_t *ids, int32_t n)
{
    cJSON *a = cJSON_AddArrayToObject(root, name);
    for (int32_t i = 0; i < n && a; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber(ids[i]));
}

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
    add_timings(root, t);
}

char *ork__srv_result_json(struct ork_server *srv, const struct srv_task *t)
{
    cJSON *root = cJSON_CreateObject();
    const char *text = t->text ? t->text : "";
    if (t->req.ep == SRV_EP_COMPLETION) {
        cJSON_AddNumberToObject(root, "index", 0);
        cJSON_AddStringToObject(root, "content", text);
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
    bool chat = t->req.ep == SRV_EP_OAI_CHAT;
    add_oai_header(srv, root, t, chat ? "chat.completion" : "text_completion");
    cJSON *choices = cJSON_AddArrayToObject(root, "choices"), *c = cJSON_CreateObject();
    cJSON_AddNumberToObject(c, "index", 0);
    if (chat) {
        cJSON *m = cJSON_AddObjectToObject(c, "message");
        cJSON_AddStringToObject(m, "role", "assistant");
        cJSON_AddStringToObject(m, "content", text);
    } else {
        cJSON_AddStringToObject(c, "text", text);
    }
    cJSON_AddNullToObject(c, "logprobs");
    cJSON_AddStringToObject(c, "finish_reason", finish_reason(t->stop));
    cJSON_AddItemToArray(choices, c);
    add_usage(root, t);
    add_timings(root, t);
    return ork__srv_json_print(root);
}

/* ---- streaming --------------------------------------------------------------------------- */

static int buf_append(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
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

/* Append "data: <json>\n\n" (frees j). */
static int sse(cJSON *j, char **buf, size_t *len, size_t *cap)
{
    char *s = ork__srv_json_print(j);
    if (!s)
        return ORK_ENOMEM;
    int ret = buf_append(buf, len, cap, "data: ", 6);
    if (ret == 0)
        ret = buf_append(buf, len, cap, s, strlen(s));
    if (ret == 0)
        ret = buf_append(buf, len, cap, "\n\n", 2);
    ork_free(s);
    return ret;
}

/* Text of new output in [from, to) as a NUL-terminated copy. */
static char *slice(const struct srv_task *t, size_t from, size_t to)
{
    char *s = ork_malloc(to - from + 1);
    if (s) {
        memcpy(s, t->text + from, to - from);
        s[to - from] = 0;
    }
    return s;
}

static cJSON *oai_chunk(struct ork_server *srv, const struct srv_task *t)
{
    cJSON *root = cJSON_CreateObject();
    add_oai_header(srv, root, t, t->req.ep == SRV_EP_OAI_CHAT ? "chat.completion.chunk"
                                                              : "text_completion");
    return root;
}

static cJSON *oai_choice(cJSON *root, bool chat, const char *text, bool role, const char *finish)
{
    cJSON *choices = cJSON_AddArrayToObject(root, "choices"), *c = cJSON_CreateObject();
    cJSON_AddNumberToObject(c, "index", 0);
    if (chat) {
        cJSON *d = cJSON_AddObjectToObject(c, "delta");
        if (role)
            cJSON_AddStringToObject(d, "role", "assistant");
        if (text)
            cJSON_AddStringToObject(d, "content", text);
    } else {
        cJSON_AddStringToObject(c, "text", text ? text : "");
    }
    cJSON_AddNullToObject(c, "logprobs");
    if (finish)
        cJSON_AddStringToObject(c, "finish_reason", finish);
    else
        cJSON_AddNullToObject(c, "finish_reason");
    cJSON_AddItemToArray(choices, c);
    return c;
}

int ork__srv_stream_events(struct ork_server *srv, const struct srv_task *t, size_t *text_off,
                           int32_t *ids_off, bool final, bool *role_sent, char **buf,
                           size_t *len, size_t *cap)
{
    bool chat = t->req.ep == SRV_EP_OAI_CHAT, native = t->req.ep == SRV_EP_COMPLETION;
    int ret = 0;
    if (chat && !*role_sent) {
        /* OpenAI streams open with a delta carrying the role. */
        cJSON *root = oai_chunk(srv, t);
        oai_choice(root, true, "", true, NULL);
        if ((ret = sse(root, buf, len, cap)) < 0)
            return ret;
        *role_sent = true;
    }
    if (*text_off < t->text_len || (native && *ids_off < t->n_ids)) {
        char *s = slice(t, *text_off, t->text_len);
        if (!s)
            return ORK_ENOMEM;
        cJSON *root;
        if (native) {
            root = cJSON_CreateObject();
            cJSON_AddNumberToObject(root, "index", 0);
            cJSON_AddStringToObject(root, "content", s);
            add_token_array(root, "tokens", t->ids + *ids_off, t->n_ids - *ids_off);
            cJSON_AddBoolToObject(root, "stop", false);
            if (t->req.n_probs > 0)
                add_probs(srv, root, t, *ids_off, t->n_ids);
        } else {
            root = oai_chunk(srv, t);
            oai_choice(root, chat, s, false, NULL);
        }
        ork_free(s);
        *text_off = t->text_len;
        *ids_off = t->n_ids;
        if ((ret = sse(root, buf, len, cap)) < 0)
            return ret;
    }
    if (!final)
        return 0;
    if (t->stop == SRV_STOP_ERROR || (t->stop == SRV_STOP_SHUTDOWN && t->error[0])) {
        /* The generation failed or never started: say why before the closing events. */
        struct srv_error err;
        ork__srv_errorf(&err, t->stop == SRV_STOP_ERROR ? 500 : 503,
                        t->stop == SRV_STOP_ERROR ? "server_error" : "unavailable_error", "%s",
                        t->error);
        char *e = ork__srv_error_json(&err);
        if (!e)
            return ORK_ENOMEM;
        ret = buf_append(buf, len, cap, "data: ", 6);
        if (ret == 0)
            ret = buf_append(buf, len, cap, e, strlen(e));
        if (ret == 0)
            ret = buf_append(buf, len, cap, "\n\n", 2);
        ork_free(e);
        if (ret < 0)
            return ret;
    }
    if (native) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddNumberToObject(root, "index", 0);
        cJSON_AddStringToObject(root, "content", "");
        cJSON_AddArrayToObject(root, "tokens");
        cJSON_AddBoolToObject(root, "stop", true);
        add_native_tail(srv, root, t);
        return sse(root, buf, len, cap);
    }
    cJSON *root = oai_chunk(srv, t);
    oai_choice(root, chat, chat ? NULL : "", false, finish_reason(t->stop));
    if ((ret = sse(root, buf, len, cap)) < 0)
        return ret;
    if (t->req.include_usage) {
        root = oai_chunk(srv, t);
        cJSON_AddArrayToObject(root, "choices");
        add_usage(root, t);
        add_timings(root, t);
        if ((ret = sse(root, buf, len, cap)) < 0)
            return ret;
    }
    return buf_append(buf, len, cap, "data: [DONE]\n\n", 14);
}

/* ---- server information ------------------------------------------------------------------ */

static void add_default_params(cJSON *o, const struct ork_server *srv)
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
    (void)srv;
}

char *ork__srv_props_json(struct ork_server *srv)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *dg = cJSON_AddObjectToObject(root, "default_generation_settings");
    cJSON_AddNumberToObject(dg, "n_ctx", srv->p.session.ctx_size);
    add_default_params(cJSON_AddObjectToObject(dg, "params"), srv);
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
    return ork__srv_json_print(root);
}

char *ork__srv_models_json(struct ork_server *srv)
{
    const struct ork_model_config *c = ork_model_config(srv->m);
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "object", "list");
    cJSON *data = cJSON_AddArrayToObject(root, "data"), *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "id", srv->model_id);
    cJSON_AddStringToObject(m, "object", "model");
    cJSON_AddNumberToObject(m, "created", (double)srv->created);
    cJSON_AddStringToObject(m, "owned_by", "ork");
    cJSON *meta = cJSON_AddObjectToObject(m, "meta");
    cJSON_AddStringToObject(meta, "arch", c->arch_name);
    cJSON_AddNumberToObject(meta, "n_vocab", c->n_vocab);
    cJSON_AddNumberToObject(meta, "n_ctx_train", c->n_ctx_train);
    cJSON_AddNumberToObject(meta, "n_embd", c->dim);
    cJSON_AddItemToArray(data, m);
    return ork__srv_json_print(root);
}

char *ork__srv_slots_json(struct ork_server *srv)
{
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
    return ork__srv_json_print(root);
}

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
    return buf_append(buf, len, cap, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

char *ork__srv_metrics_text(struct ork_server *srv)
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
