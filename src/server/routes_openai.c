/* routes_openai.c -- the OpenAI API's bodies: results and stream chunks of /v1/completions
 * ("text_completion") and /v1/chat/completions ("chat.completion", "chat.completion.chunk")
 * with their choices (n, several prompts) and logprobs, /v1/embeddings, and /v1/models and
 * /v1/models/{id}. Field names follow the OpenAI API reference.
 *
 * Not here: the route table and generation requests (routes.c), the llama-server shapes
 * (routes_native.c). */
#include "routes.h"
#include "tools.h"

#include <ork/alloc.h>
#include <ork/error.h>

#include <stdio.h>
#include <string.h>

static const char *finish_reason(enum srv_stop s)
{
    return (s == SRV_STOP_EOS || s == SRV_STOP_WORD) ? "stop" : "length";
}

/* Usage of a request's tasks: each prompt's tokens once (its first choice), every choice's
 * completion tokens. */
static void add_usage(cJSON *root, struct srv_task *const *ts, int32_t n)
{
    int64_t prompt = 0, completion = 0;
    for (int32_t i = 0; i < n; i++) {
        if (i == 0 || ts[i]->prompt_index != ts[i - 1]->prompt_index)
            prompt += ts[i]->n_prompt;
        completion += ts[i]->n_ids;
    }
    cJSON *u = cJSON_AddObjectToObject(root, "usage");
    cJSON_AddNumberToObject(u, "prompt_tokens", (double)prompt);
    cJSON_AddNumberToObject(u, "completion_tokens", (double)completion);
    cJSON_AddNumberToObject(u, "total_tokens", (double)(prompt + completion));
}

static void add_oai_header(struct ork_server *srv, cJSON *root, const struct srv_task *t,
                           const char *object)
{
    cJSON_AddStringToObject(root, "id", t->oai_id);
    cJSON_AddStringToObject(root, "object", object);
    cJSON_AddNumberToObject(root, "created", (double)t->created);
    cJSON_AddStringToObject(root, "model", t->rq->model ? t->rq->model : srv->model_id);
    cJSON_AddStringToObject(root, "system_fingerprint", "ork-0.1.0");
}

/* The OpenAI "logprobs" of tokens [from, to): chat {content: [{token, logprob, bytes,
 * top_logprobs: [{token, logprob, bytes}]}]}; completions {tokens, token_logprobs,
 * top_logprobs: [{token: logprob}], text_offset}. null when not asked for. */
static void add_logprobs(const struct ork_server *srv, cJSON *c, const struct srv_task *t,
                         int32_t from, int32_t to, size_t text_off)
{
    if (!t->rq->want_probs) {
        cJSON_AddNullToObject(c, "logprobs");
        return;
    }
    cJSON *lp = cJSON_AddObjectToObject(c, "logprobs");
    char piece[1024];
    if (t->rq->ep == SRV_EP_OAI_CHAT) {
        cJSON *content = cJSON_AddArrayToObject(lp, "content");
        for (int32_t i = from; i < to && content; i++) {
            const struct srv_prob *p = &t->probs[i];
            cJSON *e = cJSON_CreateObject(), *top;
            ork__srv_piece(srv, p->id, piece, sizeof piece);
            cJSON_AddStringToObject(e, "token", piece);
            cJSON_AddNumberToObject(e, "logprob", p->logprob);
            ork__srv_add_bytes(e, srv, p->id);
            top = cJSON_AddArrayToObject(e, "top_logprobs");
            for (int32_t k = 0; k < p->n_top; k++) {
                cJSON *a = cJSON_CreateObject();
                ork__srv_piece(srv, p->top_ids[k], piece, sizeof piece);
                cJSON_AddStringToObject(a, "token", piece);
                cJSON_AddNumberToObject(a, "logprob", p->top_logprobs[k]);
                ork__srv_add_bytes(a, srv, p->top_ids[k]);
                cJSON_AddItemToArray(top, a);
            }
            cJSON_AddItemToArray(content, e);
        }
        cJSON_AddNullToObject(lp, "refusal");
        return;
    }
    cJSON *toks = cJSON_AddArrayToObject(lp, "tokens");
    cJSON *tlp = cJSON_AddArrayToObject(lp, "token_logprobs");
    cJSON *top = cJSON_AddArrayToObject(lp, "top_logprobs");
    cJSON *off = cJSON_AddArrayToObject(lp, "text_offset");
    for (int32_t i = from; i < to && toks && tlp && top && off; i++) {
        const struct srv_prob *p = &t->probs[i];
        int len = ork__srv_piece(srv, p->id, piece, sizeof piece);
        cJSON_AddItemToArray(toks, cJSON_CreateString(piece));
        cJSON_AddItemToArray(tlp, cJSON_CreateNumber(p->logprob));
        cJSON_AddItemToArray(off, cJSON_CreateNumber((double)text_off));
        text_off += (size_t)len;
        cJSON *m = cJSON_CreateObject();
        for (int32_t k = 0; k < p->n_top; k++) {
            ork__srv_piece(srv, p->top_ids[k], piece, sizeof piece);
            if (!cJSON_GetObjectItemCaseSensitive(m, piece))
                cJSON_AddNumberToObject(m, piece, p->top_logprobs[k]);
        }
        cJSON_AddItemToArray(top, m);
    }
}

/* Bytes of the pieces of tokens [0, n) (the completions text_offset of token n). */
static size_t pieces_len(const struct ork_server *srv, const struct srv_task *t, int32_t n)
{
    char piece[1024];
    size_t off = 0;
    for (int32_t i = 0; i < n; i++)
        off += (size_t)ork__srv_piece(srv, t->ids[i], piece, sizeof piece);
    return off;
}

/* A reply with tool calls ends with "tool_calls", unless the length limit cut the last call's
 * arguments ("length", as OpenAI does). */
static const char *tools_finish(struct ork_server *srv, const struct srv_task *t)
{
    struct srv_tc_scan sc;
    ork__srv_tools_scan(srv, t->rq, t->text, t->text_len, true, &sc);
    return sc.n && !sc.c[sc.n - 1].done && t->stop == SRV_STOP_LIMIT ? "length" : "tool_calls";
}

char *ork__srv_oai_result(struct ork_server *srv, struct srv_task *const *ts, int32_t n)
{
    cJSON *root = cJSON_CreateObject();
    bool chat = ts[0]->rq->ep == SRV_EP_OAI_CHAT;
    add_oai_header(srv, root, ts[0], chat ? "chat.completion" : "text_completion");
    cJSON *choices = cJSON_AddArrayToObject(root, "choices");
    for (int32_t i = 0; i < n && choices; i++) {
        const struct srv_task *t = ts[i];
        const char *text = t->text ? t->text : "";
        cJSON *c = cJSON_CreateObject();
        cJSON_AddNumberToObject(c, "index", t->index);
        cJSON *calls = chat ? ork__srv_tools_parse(srv, t) : NULL;
        if (chat) {
            cJSON *m = cJSON_AddObjectToObject(c, "message");
            cJSON_AddStringToObject(m, "role", "assistant");
            if (calls) {
                struct srv_tc_scan sc;
                ork__srv_tools_scan(srv, t->rq, text, t->text_len, true, &sc);
                char *pre = sc.content_end ? ork__srv_slice(t, 0, sc.content_end) : NULL;
                if (pre)
                    cJSON_AddStringToObject(m, "content", pre);
                else
                    cJSON_AddNullToObject(m, "content");
                ork_free(pre);
                cJSON_AddItemToObject(m, "tool_calls", calls);
            } else {
                cJSON_AddStringToObject(m, "content", text);
            }
        } else {
            cJSON_AddStringToObject(c, "text", text);
        }
        add_logprobs(srv, c, t, 0, t->n_ids, 0);
        cJSON_AddStringToObject(c, "finish_reason", calls ? tools_finish(srv, t)
                                                          : finish_reason(t->stop));
        cJSON_AddItemToArray(choices, c);
    }
    add_usage(root, ts, n);
    ork__srv_add_timings(root, ts[0]);
    return ork__srv_json_print(root);
}

/* ---- streaming --------------------------------------------------------------------------- */

/* A chunk object; non-final chunks carry "usage": null (the OpenAI stream reference). */
static cJSON *oai_chunk(struct ork_server *srv, const struct srv_task *t)
{
    cJSON *root = cJSON_CreateObject();
    add_oai_header(srv, root, t, t->rq->ep == SRV_EP_OAI_CHAT ? "chat.completion.chunk"
                                                              : "text_completion");
    return root;
}

static cJSON *oai_choice(cJSON *root, const struct srv_task *t, const char *text, bool role,
                         const char *finish)
{
    bool chat = t->rq->ep == SRV_EP_OAI_CHAT;
    cJSON *choices = cJSON_AddArrayToObject(root, "choices"), *c = cJSON_CreateObject();
    cJSON_AddNumberToObject(c, "index", t->index);
    if (chat) {
        cJSON *d = cJSON_AddObjectToObject(c, "delta");
        if (role)
            cJSON_AddStringToObject(d, "role", "assistant");
        if (text)
            cJSON_AddStringToObject(d, "content", text);
    } else {
        cJSON_AddStringToObject(c, "text", text ? text : "");
    }
    if (finish)
        cJSON_AddStringToObject(c, "finish_reason", finish);
    else
        cJSON_AddNullToObject(c, "finish_reason");
    cJSON_AddItemToArray(choices, c);
    return c;
}

/* One chunk of a tools stream: a content delta (text) or a tool_calls delta of call k (head:
 * its id, type and name with empty arguments; else an arguments fragment), with the logprobs
 * of tokens not yet sent. */
static int tools_chunk(struct ork_server *srv, const struct srv_task *t,
                       struct srv_stream_pos *pos, const char *text, int k, bool head,
                       const char *name, const char *args, char **buf, size_t *len, size_t *cap)
{
    cJSON *root = oai_chunk(srv, t);
    cJSON *c = oai_choice(root, t, text, false, NULL);
    if (k >= 0) {
        cJSON *d = cJSON_GetObjectItemCaseSensitive(c, "delta");
        cJSON *e = cJSON_CreateObject(), *fn;
        cJSON_AddItemToArray(cJSON_AddArrayToObject(d, "tool_calls"), e);
        cJSON_AddNumberToObject(e, "index", k);
        if (head) {
            char id[80];
            ork__srv_tools_call_id(t, k, id, sizeof id);
            cJSON_AddStringToObject(e, "id", id);
            cJSON_AddStringToObject(e, "type", "function");
        }
        fn = cJSON_AddObjectToObject(e, "function");
        if (head)
            cJSON_AddStringToObject(fn, "name", name ? name : "");
        cJSON_AddStringToObject(fn, "arguments", args ? args : "");
    }
    int32_t ids = t->rq->want_probs ? t->n_probs_done : t->n_ids;
    add_logprobs(srv, c, t, pos->ids_off, ids, 0);
    pos->ids_off = ids;
    cJSON_AddNullToObject(root, "usage");
    return ork__srv_sse(root, buf, len, cap);
}

/* A chat stream while tools are offered: the text is scanned for calls as it grows
 * (ork__srv_tools_scan). Content before a call streams as content deltas (a tail that may
 * begin `<tool_call>` is held back); a call goes out as OpenAI streams it: a first tool_calls
 * delta with index, id, type and function.name, then function.arguments fragments as the model
 * writes them; finish_reason "tool_calls". pos->tool_off is how far the text was sent. */
static int tools_stream(struct ork_server *srv, const struct srv_task *t,
                        struct srv_stream_pos *pos, bool final, char **buf, size_t *len,
                        size_t *cap)
{
    int ret = 0;
    struct srv_tc_scan sc;
    ork__srv_tools_scan(srv, t->rq, t->text, t->text_len, final, &sc);
    size_t from = pos->tool_off;
    int32_t ids0 = pos->ids_off;
    pos->text_off = t->text_len;   /* scanned; what is held back waits in tool_off */
    if (from < sc.content_end) {
        char *s = ork__srv_slice(t, from, sc.content_end);
        ret = s ? tools_chunk(srv, t, pos, s, -1, false, NULL, NULL, buf, len, cap) : ORK_ENOMEM;
        ork_free(s);
        from = sc.content_end;
    }
    for (int k = 0; k < sc.n && ret == 0; k++) {
        const struct srv_tc *c = &sc.c[k];
        if (from < c->args_a) {
            char *name = ork__srv_slice(t, c->name_a, c->name_b);
            ret = name ? tools_chunk(srv, t, pos, NULL, k, true, name, "", buf, len, cap)
                       : ORK_ENOMEM;
            ork_free(name);
            from = c->args_a;
        }
        if (ret == 0 && from < c->args_b) {
            char *a = ork__srv_slice(t, from, c->args_b);
            ret = a ? tools_chunk(srv, t, pos, NULL, k, false, NULL, a, buf, len, cap)
                    : ORK_ENOMEM;
            ork_free(a);
            from = c->args_b;
        }
    }
    pos->tool_off = from;
    int32_t ids = t->rq->want_probs ? t->n_probs_done : t->n_ids;
    if (ret == 0 && t->rq->want_probs && pos->ids_off == ids0 && ids0 < ids)   /* held back */
        ret = tools_chunk(srv, t, pos, "", -1, false, NULL, NULL, buf, len, cap);
    if (ret < 0 || !final)
        return ret;
    if ((ret = ork__srv_sse_task_error(t, buf, len, cap)) < 0)
        return ret;
    cJSON *root = oai_chunk(srv, t);
    const char *fin = sc.n ? tools_finish(srv, t) : finish_reason(t->stop);
    cJSON_AddNullToObject(oai_choice(root, t, NULL, false, fin), "logprobs");
    cJSON_AddNullToObject(root, "usage");
    return ork__srv_sse(root, buf, len, cap);
}

int ork__srv_oai_stream(struct ork_server *srv, const struct srv_task *t,
                        struct srv_stream_pos *pos, bool final, char **buf, size_t *len,
                        size_t *cap)
{
    bool chat = t->rq->ep == SRV_EP_OAI_CHAT;
    int ret = 0;
    if (chat && !pos->role_sent) {
        /* OpenAI streams open with a delta carrying the role. */
        cJSON *root = oai_chunk(srv, t);
        cJSON_AddNullToObject(oai_choice(root, t, "", true, NULL), "logprobs");
        cJSON_AddNullToObject(root, "usage");
        if ((ret = ork__srv_sse(root, buf, len, cap)) < 0)
            return ret;
        pos->role_sent = true;
    }
    /* with logprobs, tokens go out once theirs are computed */
    int32_t ids = t->rq->want_probs ? t->n_probs_done : t->n_ids;
    if (chat && ork__srv_tools_active(t->rq))
        return tools_stream(srv, t, pos, final, buf, len, cap);
    if (pos->text_off < t->text_len || (t->rq->want_probs && pos->ids_off < ids)) {
        char *s = ork__srv_slice(t, pos->text_off, t->text_len);
        if (!s)
            return ORK_ENOMEM;
        cJSON *root = oai_chunk(srv, t);
        cJSON *c = oai_choice(root, t, s, false, NULL);
        add_logprobs(srv, c, t, pos->ids_off, ids,
                     t->rq->want_probs && !chat ? pieces_len(srv, t, pos->ids_off) : 0);
        cJSON_AddNullToObject(root, "usage");
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
    cJSON *root = oai_chunk(srv, t);
    cJSON_AddNullToObject(oai_choice(root, t, chat ? NULL : "", false, finish_reason(t->stop)),
                          "logprobs");
    cJSON_AddNullToObject(root, "usage");
    return ork__srv_sse(root, buf, len, cap);
}

int ork__srv_oai_stream_end(struct ork_server *srv, struct srv_task *const *ts, int32_t n,
                            char **buf, size_t *len, size_t *cap)
{
    int ret;
    if (ts[0]->rq->include_usage) {
        cJSON *root = oai_chunk(srv, ts[0]);
        cJSON_AddArrayToObject(root, "choices");
        add_usage(root, ts, n);
        ork__srv_add_timings(root, ts[0]);
        if ((ret = ork__srv_sse(root, buf, len, cap)) < 0)
            return ret;
    }
    return ork__srv_buf_append(buf, len, cap, "data: [DONE]\n\n", 14);
}

/* ---- /v1/embeddings ---------------------------------------------------------------------- */

/* Standard base64 (RFC 4648 section 4) of n bytes, as OpenAI's encoding_format "base64" gives
 * the float32 little-endian vector. */
static char *base64(const uint8_t *b, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *o = ork_malloc((n + 2) / 3 * 4 + 1), *p = o;
    if (!o)
        return NULL;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)b[i] << 16 | (i + 1 < n ? (uint32_t)b[i + 1] << 8 : 0) |
                     (i + 2 < n ? b[i + 2] : 0);
        *p++ = tab[v >> 18 & 63];
        *p++ = tab[v >> 12 & 63];
        *p++ = i + 1 < n ? tab[v >> 6 & 63] : '=';
        *p++ = i + 2 < n ? tab[v & 63] : '=';
    }
    *p = 0;
    return o;
}

char *ork__srv_oai_embed_result(struct ork_server *srv, struct srv_task *const *ts, int32_t n)
{
    int32_t dim = ork_embedder_dim(srv->embedder);
    int64_t tokens = 0;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "object", "list");
    cJSON *data = cJSON_AddArrayToObject(root, "data");
    for (int32_t i = 0; i < n && data; i++) {
        const struct srv_task *t = ts[i];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "object", "embedding");
        cJSON_AddNumberToObject(e, "index", t->index);
        if (t->rq->oai_b64) {
            char *b = base64((const uint8_t *)t->embd, (size_t)dim * sizeof(float));
            cJSON_AddStringToObject(e, "embedding", b ? b : "");
            ork_free(b);
        } else {
            cJSON_AddItemToObject(e, "embedding", cJSON_CreateFloatArray(t->embd, dim));
        }
        cJSON_AddItemToArray(data, e);
        tokens += t->n_prompt;
    }
    cJSON_AddStringToObject(root, "model", ts[0]->rq->model ? ts[0]->rq->model : srv->model_id);
    cJSON *u = cJSON_AddObjectToObject(root, "usage");
    cJSON_AddNumberToObject(u, "prompt_tokens", (double)tokens);
    cJSON_AddNumberToObject(u, "total_tokens", (double)tokens);
    return ork__srv_json_print(root);
}

/* ---- /v1/models -------------------------------------------------------------------------- */

static cJSON *model_object(struct ork_server *srv)
{
    const struct ork_model_config *c = ork_model_config(srv->m);
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "id", srv->model_id);
    cJSON_AddStringToObject(m, "object", "model");
    cJSON_AddNumberToObject(m, "created", (double)srv->created);
    cJSON_AddStringToObject(m, "owned_by", "ork");
    cJSON *meta = cJSON_AddObjectToObject(m, "meta");
    cJSON_AddStringToObject(meta, "arch", c->arch_name);
    cJSON_AddNumberToObject(meta, "n_vocab", c->n_vocab);
    cJSON_AddNumberToObject(meta, "n_ctx_train", c->n_ctx_train);
    cJSON_AddNumberToObject(meta, "n_embd", c->dim);
    cJSON_AddStringToObject(meta, "device", ork_model_device(srv->m));
    return m;
}

SRV_HANDLER(ork__srv_get_models)
{
    (void)rt, (void)call;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "object", "list");
    cJSON *data = cJSON_AddArrayToObject(root, "data");
    cJSON_AddItemToArray(data, model_object(srv));
    ork__srv_reply_json(out, 200, ork__srv_json_print(root));
}

/* GET /v1/models/{id} (models.retrieve): the model when the id is ours, else 404. */
SRV_HANDLER(ork__srv_get_model)
{
    (void)rt;
    if (strcmp(call->path_arg, srv->model_id)) {
        ork__srv_reply_errorf(out, 404, "not_found_error", "The model '%.200s' does not exist",
                              call->path_arg);
        return;
    }
    ork__srv_reply_json(out, 200, ork__srv_json_print(model_object(srv)));
}
