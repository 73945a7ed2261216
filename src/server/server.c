/* server.c -- lifecycle of the HTTP server (server.h): parameters, slot sessions, start (HTTP
 * threads and the scheduler), graceful stop and teardown. Not here: request handling (http.c,
 * routes.c, request.c) and generation (sched.c). */
#include "srv_priv.h"

#include <ork/alloc.h>
#include <ork/error.h>

#include <stdio.h>
#include <string.h>
#include <time.h>

/* Request body limit (413 beyond): generous for chat histories, small enough to bound memory. */
#define SRV_DEFAULT_MAX_BODY (1u << 20)
/* Requests that may wait for a slot before new ones get 503. */
#define SRV_DEFAULT_QUEUE 64
/* Upper bound on --parallel (each slot holds a KV cache). */
#define SRV_MAX_PARALLEL 256

void ork_server_params_default(struct ork_server_params *p)
{
    memset(p, 0, sizeof(*p));
    p->host = "127.0.0.1";
    p->port = 8080;
    p->n_parallel = 1;
    p->queue_size = SRV_DEFAULT_QUEUE;
    ork_session_params_default(&p->session);
    p->max_body = SRV_DEFAULT_MAX_BODY;
    p->batched = true;
}

static void set_model_id(struct ork_server *srv)
{
    const char *id = srv->p.alias;
    if (!id && srv->p.model_path) {
        const char *slash = strrchr(srv->p.model_path, '/');
        id = slash ? slash + 1 : srv->p.model_path;
    }
    snprintf(srv->model_id, sizeof srv->model_id, "%s", id && *id ? id : "ork");
}

static void detect_chat(struct ork_server *srv)
{
    struct ork_gguf_str s;
    srv->chat_fmt = ORK_CHAT_CHATML;   /* fallback for models without a recognised template */
    if (ork_gguf_get_str(ork_model_gguf(srv->m), "tokenizer.chat_template", &s) == 0)
        srv->chat_template = ork_strndup(s.ptr, (size_t)s.len);
    enum ork_chat_format f;
    if (srv->chat_template && ork_chat_detect(srv->chat_template, &f) == 0)
        srv->chat_fmt = f;
}

int ork_server_create(struct ork_model *m, const struct ork_server_params *p,
                      struct ork_server **out)
{
    if (!m || !p || !out)
        return ork_errorf(ORK_EINVAL, "ork_server_create: model, params and out are required");
    if (p->n_parallel < 1 || p->n_parallel > SRV_MAX_PARALLEL)
        return ork_errorf(ORK_EINVAL, "parallel %d must be in [1, %d]", p->n_parallel,
                          SRV_MAX_PARALLEL);
    if (p->queue_size < 0)
        return ork_errorf(ORK_EINVAL, "queue size %d must be >= 0", p->queue_size);
    if (p->port < 0 || p->port > 65535)
        return ork_errorf(ORK_EINVAL, "port %d must be in [0, 65535]", p->port);
    if (!ork_model_tokenizer(m))
        return ork_errorf(ORK_EINVAL, "server: the model was loaded without a tokenizer");
    struct ork_server *srv = ork_calloc(1, sizeof(*srv));
    if (!srv)
        return ORK_ENOMEM;
    srv->p = *p;
    if (!srv->p.host)
        srv->p.host = "127.0.0.1";
    if (!srv->p.max_body)
        srv->p.max_body = SRV_DEFAULT_MAX_BODY;
    srv->m = m;
    srv->tok = ork_model_tokenizer(m);
    srv->n_vocab = ork_model_config(m)->n_vocab;
    srv->created = (int64_t)time(NULL);
    set_model_id(srv);
    detect_chat(srv);
    pthread_mutex_init(&srv->mu, NULL);
    pthread_cond_init(&srv->sched_cv, NULL);

    int ret = ORK_ENOMEM;
    int32_t np = srv->p.n_parallel;
    srv->slots = ork_calloc((size_t)np, sizeof(*srv->slots));
    srv->queue = ork_calloc((size_t)(srv->p.queue_size + np), sizeof(*srv->queue));
    srv->batch_logits = ork_calloc((size_t)np * (size_t)srv->n_vocab, sizeof(float));
    srv->batch_sess = ork_calloc((size_t)np, sizeof(*srv->batch_sess));
    srv->batch_tok = ork_calloc((size_t)np, sizeof(*srv->batch_tok));
    srv->eog_ids = ork_calloc((size_t)srv->n_vocab, sizeof(int32_t));
    if (!srv->slots || !srv->queue || !srv->batch_logits || !srv->batch_sess || !srv->batch_tok ||
        !srv->eog_ids)
        goto err;
    for (int32_t i = 0; i < srv->n_vocab; i++)
        if (ork_tokenizer_is_eog(srv->tok, i))
            srv->eog_ids[srv->n_eog++] = i;
    for (int32_t i = 0; i < np; i++) {
        struct srv_slot *sl = &srv->slots[i];
        sl->id = i;
        sl->pending_tok = -1;
        if ((ret = ork_session_create(m, &srv->p.session, &sl->sess)) < 0)
            goto err;
        sl->hold_cap = 2 * 1024 + SRV_MAX_STOP_LEN;   /* piece + longest stop (sampler.h) */
        sl->logits = ork_calloc((size_t)srv->n_vocab, sizeof(float));
        sl->hold = ork_malloc(sl->hold_cap);
        if (!sl->logits || !sl->hold) {
            ret = ORK_ENOMEM;
            goto err;
        }
    }
    /* Resolved context size (0 meant the model's default) for validation and /props. */
    srv->p.session.ctx_size = ork_session_ctx_size(srv->slots[0].sess);
    *out = srv;
    return 0;
err:
    srv->started = false;
    ork_server_free(srv);
    return ret;
}

int ork_server_start(struct ork_server *srv)
{
    if (srv->started)
        return ork_errorf(ORK_EINVAL, "server: already started");
    int ret = ork__srv_sched_start(srv);
    if (ret < 0)
        return ret;
    if ((ret = ork__srv_http_start(srv)) < 0) {
        ork__srv_sched_stop(srv);
        srv->stopped = true;
        return ret;
    }
    srv->started = true;
    return 0;
}

int ork_server_port(const struct ork_server *srv)
{
    return srv->port;
}

void ork_server_stop(struct ork_server *srv)
{
    if (!srv || !srv->started || srv->stopped)
        return;
    srv->stopped = true;
    ork__srv_sched_stop(srv);   /* ends in-flight tasks; streams then send their last events */
    ork__srv_http_stop(srv);
}

void ork_server_free(struct ork_server *srv)
{
    if (!srv)
        return;
    ork_server_stop(srv);
    if (srv->slots) {
        for (int32_t i = 0; i < srv->p.n_parallel; i++) {
            struct srv_slot *sl = &srv->slots[i];
            ork_session_free(sl->sess);
            ork_free(sl->logits);
            ork_free(sl->hold);
            if (sl->stop)
                ork_stop_free(sl->stop);
        }
    }
    ork_free(srv->slots);
    ork_free(srv->queue);
    ork_free(srv->batch_logits);
    ork_free(srv->batch_sess);
    ork_free(srv->batch_tok);
    ork_free(srv->eog_ids);
    ork_free(srv->chat_template);
    pthread_cond_destroy(&srv->sched_cv);
    pthread_mutex_destroy(&srv->mu);
    ork_free(srv);
}
