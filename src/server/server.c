/* server.c -- lifecycle of the HTTP server (server.h): parameters, slot sessions, start (HTTP
 * threads and the scheduler), graceful stop and teardown. Not here: request handling (http.c,
 * routes.c, request.c) and generation (sched.c). */
#include "srv_priv.h"

#include <ork/alloc.h>
#include <ork/error.h>

#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

/* Request body limit (413 beyond): generous for chat histories, small enough to bound memory. */
#define SRV_DEFAULT_MAX_BODY (1u << 20)
/* Requests that may wait for a slot before new ones get 503. */
#define SRV_DEFAULT_QUEUE 64
/* Upper bound on --parallel (each slot holds a KV cache). */
#define SRV_MAX_PARALLEL 256
/* Connections (one thread each) served at once, and per client address: a single client (one
 * address) cannot take them all; 32 covers a browser's 6 per host many times over and an
 * agent's parallel requests. */
#define SRV_DEFAULT_MAX_CONNECTIONS 256
#define SRV_DEFAULT_MAX_CONN_PER_IP 32
/* Idle seconds while request headers arrive (a client that opens a connection and says
 * nothing), while a body arrives or a reply is read, and between kept-alive requests.
 * Headers are a few hundred bytes sent at once by real clients; 5 s of keep-alive is
 * Apache httpd's KeepAliveTimeout default. */
#define SRV_DEFAULT_TIMEOUT_HEADER_S 10
#define SRV_DEFAULT_TIMEOUT_BODY_S 30
#define SRV_DEFAULT_KEEP_ALIVE_S 5

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
    struct ork_spec_params spp;
    ork_spec_params_default(&spp);
    p->spec_draft_max = spp.draft_max;
    p->spec_draft_min = spp.draft_min;
    p->spec_draft_p_min = spp.draft_p_min;
    p->max_connections = SRV_DEFAULT_MAX_CONNECTIONS;
    p->max_conn_per_ip = SRV_DEFAULT_MAX_CONN_PER_IP;
    p->timeout_header_s = SRV_DEFAULT_TIMEOUT_HEADER_S;
    p->timeout_body_s = SRV_DEFAULT_TIMEOUT_BODY_S;
    p->keep_alive_s = SRV_DEFAULT_KEEP_ALIVE_S;
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

/* Slots, batch buffers and the rest that need the model; then the server is ready. */
static int attach_model(struct ork_server *srv, struct ork_model *m)
{
    if (!ork_model_tokenizer(m))
        return ork_errorf(ORK_EINVAL, "server: the model was loaded without a tokenizer");
    srv->m = m;
    srv->tok = ork_model_tokenizer(m);
    srv->n_vocab = ork_model_config(m)->n_vocab;
    set_model_id(srv);
    detect_chat(srv);
    int ret = ORK_ENOMEM;
    int32_t np = srv->p.n_parallel;
    srv->slots = ork_calloc((size_t)np, sizeof(*srv->slots));
    srv->batch_logits = ork_calloc((size_t)np * (size_t)srv->n_vocab, sizeof(float));
    srv->batch_sess = ork_calloc((size_t)np, sizeof(*srv->batch_sess));
    srv->batch_tok = ork_calloc((size_t)np, sizeof(*srv->batch_tok));
    srv->eog_ids = ork_calloc((size_t)srv->n_vocab, sizeof(int32_t));
    if (!srv->slots || !srv->batch_logits || !srv->batch_sess || !srv->batch_tok ||
        !srv->eog_ids)
        return ORK_ENOMEM;
    for (int32_t i = 0; i < srv->n_vocab; i++)
        if (ork_tokenizer_is_eog(srv->tok, i))
            srv->eog_ids[srv->n_eog++] = i;
    for (int32_t i = 0; i < np; i++) {
        struct srv_slot *sl = &srv->slots[i];
        sl->id = i;
        sl->pending_tok = -1;
        if ((ret = ork_session_create(m, &srv->p.session, &sl->sess)) < 0)
            return ret;
        sl->hold_cap = 2 * 1024 + SRV_MAX_STOP_LEN;   /* piece + longest stop (sampler.h) */
        sl->logits = ork_calloc((size_t)srv->n_vocab, sizeof(float));
        sl->hold = ork_malloc(sl->hold_cap);
        if (!sl->logits || !sl->hold)
            return ORK_ENOMEM;
    }
    if (srv->p.embeddings && (ret = ork_embedder_create(m, &srv->embedder)) < 0)
        return ret;
    if (srv->p.draft_model && (ret = ork_spec_vocab_check(m, srv->p.draft_model)) < 0)
        return ret;
    /* Resolved context size (0 meant the model's default) for validation and /props. */
    srv->p.session.ctx_size = ork_session_ctx_size(srv->slots[0].sess);
    return 0;
}

int ork_server_create(struct ork_model *m, const struct ork_server_params *p,
                      struct ork_server **out)
{
    if (!p || !out)
        return ork_errorf(ORK_EINVAL, "ork_server_create: params and out are required");
    if (p->n_parallel < 1 || p->n_parallel > SRV_MAX_PARALLEL)
        return ork_errorf(ORK_EINVAL, "parallel %d must be in [1, %d]", p->n_parallel,
                          SRV_MAX_PARALLEL);
    if (p->queue_size < 0)
        return ork_errorf(ORK_EINVAL, "queue size %d must be >= 0", p->queue_size);
    if (p->port < 0 || p->port > 65535)
        return ork_errorf(ORK_EINVAL, "port %d must be in [0, 65535]", p->port);
    if (!p->max_connections || !p->max_conn_per_ip || !p->timeout_header_s ||
        !p->timeout_body_s || !p->keep_alive_s)
        return ork_errorf(ORK_EINVAL, "connection limits and timeouts must be >= 1");
    struct ork_server *srv = ork_calloc(1, sizeof(*srv));
    if (!srv)
        return ORK_ENOMEM;
    srv->p = *p;
    if (!srv->p.host)
        srv->p.host = "127.0.0.1";
    if (!srv->p.max_body)
        srv->p.max_body = SRV_DEFAULT_MAX_BODY;
    srv->created = (int64_t)time(NULL);
    if (getrandom(&srv->id_nonce, sizeof srv->id_nonce, 0) != (ssize_t)sizeof srv->id_nonce)
        srv->id_nonce = (uint64_t)srv->created * 2654435761u ^ (uint64_t)getpid();
    set_model_id(srv);
    pthread_mutex_init(&srv->mu, NULL);
    pthread_cond_init(&srv->sched_cv, NULL);
    pthread_cond_init(&srv->probs_cv, NULL);
    pthread_cond_init(&srv->snap_cv, NULL);
    int ret = ORK_ENOMEM;
    srv->queue = ork_calloc((size_t)(srv->p.queue_size + srv->p.n_parallel), sizeof(*srv->queue));
    if (!srv->queue)
        goto err;
    if (m && (ret = attach_model(srv, m)) < 0)
        goto err;
    srv->ready = m != NULL;
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
    int ret = srv->m ? ork__srv_sched_start(srv) : 0;
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

int ork_server_set_model(struct ork_server *srv, struct ork_model *m)
{
    if (!srv || !m || srv->m)
        return ork_errorf(ORK_EINVAL, "ork_server_set_model: the server already has a model");
    int ret = attach_model(srv, m);
    if (ret == 0 && srv->started)
        ret = ork__srv_sched_start(srv);
    if (ret < 0)
        return ret;
    pthread_mutex_lock(&srv->mu);
    srv->ready = true;
    pthread_mutex_unlock(&srv->mu);
    return 0;
}

void ork_server_set_draft(struct ork_server *srv, struct ork_model *draft)
{
    srv->p.draft_model = draft;
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
        for (int32_t i = 0; i < srv->p.n_parallel && srv->slots; i++) {
            struct srv_slot *sl = &srv->slots[i];
            ork_spec_free(sl->spec);
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
    ork_embedder_free(srv->embedder);
    ork_grammar_vocab_free(srv->gvocab);
    pthread_cond_destroy(&srv->probs_cv);
    pthread_cond_destroy(&srv->snap_cv);
    pthread_cond_destroy(&srv->sched_cv);
    pthread_mutex_destroy(&srv->mu);
    ork_free(srv);
}
