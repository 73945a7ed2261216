/* routes_openai.c -- the OpenAI API's bodies: results and stream chunks of /v1/completions
 * ("text_completion") and /v1/chat/completions ("chat.completion", "chat.completion.chunk"),
 * and /v1/models. Field names follow the OpenAI API reference.
 *
 * Not here: the route table and generation requests (routes.c), the llama-server shapes
 * (routes_native.c). */
#include "routes.h"

#include <ork/alloc.h>
#include <ork/error.h>

#include <stdio.h>
#include <string.h>

static const char *finish_reason(enum srv_stop s)
{
    return (s == SRV_STOP_EOS || s == SRV_STOP_WORD) ? "stop" : "length";
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

char *ork__srv_oai_result(struct ork_server *srv, const struct srv_task *t)
{
    cJSON *root = cJSON_CreateObject();
    const char *text = t->text ? t->text : "";
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
    ork__srv_add_timings(root, t);
    return ork__srv_json_print(root);
}

/* ---- streaming --------------------------------------------------------------------------- */

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

int ork__srv_oai_stream(struct ork_server *srv, const struct srv_task *t,
                        struct srv_stream_pos *pos, bool final, char **buf, size_t *len,
                        size_t *cap)
{
    bool chat = t->req.ep == SRV_EP_OAI_CHAT;
    int ret = 0;
    if (chat && !pos->role_sent) {
        /* OpenAI streams open with a delta carrying the role. */
        cJSON *root = oai_chunk(srv, t);
        oai_choice(root, true, "", true, NULL);
        if ((ret = ork__srv_sse(root, buf, len, cap)) < 0)
            return ret;
        pos->role_sent = true;
    }
    if (pos->text_off < t->text_len) {
        char *s = ork__srv_slice(t, pos->text_off, t->text_len);
        if (!s)
            return ORK_ENOMEM;
        cJSON *root = oai_chunk(srv, t);
        oai_choice(root, chat, s, false, NULL);
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
    cJSON *root = oai_chunk(srv, t);
    oai_choice(root, chat, chat ? NULL : "", false, finish_reason(t->stop));
    if ((ret = ork__srv_sse(root, buf, len, cap)) < 0)
        return ret;
    if (t->req.include_usage) {
        root = oai_chunk(srv, t);
        cJSON_AddArrayToObject(root, "choices");
        add_usage(root, t);
        ork__srv_add_timings(root, t);
        if ((ret = ork__srv_sse(root, buf, len, cap)) < 0)
            return ret;
    }
    return ork__srv_buf_append(buf, len, cap, "data: [DONE]\n\n", 14);
}

/* ---- /v1/models -------------------------------------------------------------------------- */

void ork__srv_get_models(struct ork_server *srv, const struct srv_route *rt, const char *body,
                         size_t len, struct srv_reply *out)
{
    (void)rt, (void)body, (void)len;
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
    ork__srv_reply_json(out, 200, ork__srv_json_print(root));
}
