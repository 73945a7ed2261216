/* ork-server/server.h -- the HTTP inference server behind `ork serve`: llama-server's native API
 * (/completion, /tokenize, /detokenize, /apply-template, /embedding, /props, /slots, /health,
 * /metrics) and the OpenAI API (/v1/completions, /v1/chat/completions, /v1/embeddings,
 * /v1/models) over one model.
 *
 * The server owns N slots (--parallel), each with its own session (KV cache) and, while busy, the
 * sampler of its request. One scheduler thread runs decode steps: every step evaluates the next
 * token of all generating slots together (one batched forward pass, M = active slots), a request
 * waiting in the bounded queue joins at the next step, and a slot whose client went away is freed
 * at the next step. HTTP is served by libmicrohttpd (one thread per connection); JSON by cJSON.
 *
 * Safety: optional API keys (Bearer), no CORS headers unless origins are named, JSON endpoints
 * only with Content-Type application/json, per-IP and total connection limits and read
 * timeouts. The server listens before its model is loaded (ork_server_create with m NULL,
 * ork_server_start, then ork_server_set_model): meanwhile /health answers 503 "loading model".
 *
 * Not here: argument parsing and signal handling (src/cli/cmd_serve.c); the model itself
 * (engine.h). The server never exits the process. See docs/server.md. */
#ifndef ORK_ENGINE_SERVER_H
#define ORK_ENGINE_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ork-engine/engine.h>

#ifdef __cplusplus
extern "C" {
#endif

enum ork_server_pooling {
    ORK_SERVER_POOL_MEAN = 0,   /* mean of the prompt's final hidden states (default) */
    ORK_SERVER_POOL_LAST,       /* the last token's final hidden state */
};

struct ork_server_params {
    const char *host;           /* address to bind ("127.0.0.1"); IPv4 or IPv6 literal */
    int port;                   /* 0: any free port (see ork_server_port) */
    int32_t n_parallel;         /* slots (concurrent generations); default 1 */
    int32_t queue_size;         /* requests that may wait for a slot; beyond: 503 (default 64) */
    struct ork_session_params session;  /* per slot: ctx_size, n_threads, kv_type, n_batch */
    size_t max_body;            /* largest request body in bytes (default 1 MiB); beyond: 413 */
    const char *model_path;     /* reported by /props and /v1/models */
    const char *alias;          /* model id in API responses; NULL: the file name of model_path */
    bool batched;               /* decode all slots in one forward pass (default true) */

    /* access (docs/server.md "Security"); the arrays are borrowed and must outlive the server */
    const char *const *api_keys;    /* accepted Bearer keys; n_api_keys 0: no authentication */
    size_t n_api_keys;
    bool metrics_auth;          /* /metrics needs a key too (default: public, like /health) */
    const char *const *cors_origins;    /* origins given CORS headers ("*": any); 0: none */
    size_t n_cors_origins;

    /* connections (libmicrohttpd; docs/server.md "Connections") */
    uint32_t max_connections;   /* connections served at once (default 256) */
    uint32_t max_conn_per_ip;   /* connections per client address (default 32) */
    uint32_t timeout_header_s;  /* idle seconds allowed while the request headers arrive (10) */
    uint32_t timeout_body_s;    /* idle seconds while the body arrives or the reply leaves (30) */
    uint32_t keep_alive_s;      /* idle seconds a kept-alive connection waits for a request (5) */

    /* optional endpoints (llama-server's flags) */
    bool embeddings;            /* /embedding, /v1/embeddings (--embeddings) */
    enum ork_server_pooling pooling;
    const char *slot_save_path; /* directory for /slots/{id}?action=save|restore; NULL: off */
    bool props_post;            /* POST /props accepted (--props) */
    /* speculative decoding (ork-engine/speculative.h, docs/server.md "Speculative decoding"):
     * a draft model (borrowed; same vocabulary) and/or prompt lookup, on by default for every
     * request when either is given; a request's speculative.n_max > 0 turns it on (prompt
     * lookup of spec_lookup, else 3 tokens, when there is no draft model) */
    struct ork_model *draft_model;
    int32_t spec_lookup;        /* --lookup N; 0: none */
    int32_t spec_draft_max;     /* --draft-max (default 16) */
    int32_t spec_draft_min;     /* --draft-min (default 0) */
    float spec_draft_p_min;     /* --draft-p-min (default 0) */
    bool verbose;               /* per-request speculation figures on stderr (--verbose) */
    bool no_webui;              /* GET / does not serve the web chat page (--no-webui) */
};
void ork_server_params_default(struct ork_server_params *p);

struct ork_server;

/* Create the server and, when m is not NULL, the slots (sessions) for that loaded model; m must
 * outlive the server. Nothing listens yet. Errors: ORK_EINVAL (bad parameter, named),
 * ORK_ENOMEM, session errors. */
int ork_server_create(struct ork_model *m, const struct ork_server_params *p,
                      struct ork_server **out);
/* Bind and start the HTTP threads (and the scheduler when the model is set). ORK_EIO when the
 * address cannot be bound. Without a model every endpoint answers 503 (loading). */
int ork_server_start(struct ork_server *srv);
/* Give a server created without a model its model: create the slots and start serving.
 * ORK_EINVAL when it already has one; session errors. */
int ork_server_set_model(struct ork_server *srv, struct ork_model *m);
/* Give the server its draft model (params.draft_model) for speculative decoding, before
 * ork_server_set_model (which checks its vocabulary); borrowed, it must outlive the server. */
void ork_server_set_draft(struct ork_server *srv, struct ork_model *draft);
/* The bound TCP port (useful with port 0), after start. */
int ork_server_port(const struct ork_server *srv);
/* Graceful stop: refuse new requests, end in-flight generations at the next step (streams get
 * their final chunk), answer queued requests with 503, then stop the HTTP threads. Idempotent. */
void ork_server_stop(struct ork_server *srv);
/* Stops the server if needed and frees everything (not the model). NULL is a no-op. */
void ork_server_free(struct ork_server *srv);

#ifdef __cplusplus
}
#endif
#endif
