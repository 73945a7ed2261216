/* srv_priv.h -- internal structures of the HTTP server (src/server/ only): parsed requests
 * (request.c), tasks and slots with the scheduler (sched.c), the route table and the handlers
 * that answer each endpoint (routes.c; bodies in routes_native.c and routes_openai.c, their
 * shared helpers in routes.h) and the libmicrohttpd transport (http.c).
 *
 * Locking: one mutex (srv->mu) guards the queue, every task's shared fields (output, flags,
 * refcount) and the published slot state. A slot's session, sampler, detokenizer and stop
 * filter belong to the scheduler thread alone. Tasks are refcounted: the HTTP side and the
 * scheduler each hold one reference; the last release frees the task. */
#ifndef ORK_SERVER_SRV_PRIV_H
#define ORK_SERVER_SRV_PRIV_H

#include <ork-engine/chat.h>
#include <ork-engine/engine.h>
#include <ork-engine/grammar.h>
#include <ork-engine/speculative.h>
#include <ork-server/server.h>

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- requests (request.c) ---------------------------------------------------------------- */

enum srv_endpoint {
    SRV_EP_COMPLETION = 0,      /* POST /completion (llama-server) */
    SRV_EP_OAI_COMPLETION,      /* POST /v1/completions */
    SRV_EP_OAI_CHAT,            /* POST /v1/chat/completions */
    SRV_EP_TOKENIZE,            /* POST /tokenize */
    SRV_EP_DETOKENIZE,          /* POST /detokenize */
    SRV_EP_EMBEDDING,           /* POST /embedding (llama-server: "content") */
    SRV_EP_OAI_EMBEDDING,       /* POST /v1/embeddings ("input") */
    SRV_EP_APPLY_TEMPLATE,      /* POST /apply-template ("messages") */
    SRV_EP_SLOT_ACTION,         /* POST /slots/{id}?action=... ("filename") */
    SRV_EP_PROPS,               /* POST /props (any object; no options yet) */
    SRV_EP_COUNT_,
};

/* Bounds on request fields (named for the error messages). */
#define SRV_MAX_STOPS 16            /* stop strings per request */
#define SRV_MAX_STOP_LEN 256        /* bytes per stop string */
#define SRV_MAX_N_PROBS 32          /* n_probs upper bound */
#define SRV_MAX_N_PREDICT 1000000   /* n_predict / max_tokens upper bound */
#define SRV_MAX_MESSAGES 1024       /* chat messages per request */
/* Prompts (or embedding inputs) per request and choices per prompt ("n"); a request's tasks
 * (prompts x n) must also fit the queue (503 otherwise). Bounds of our own: a board serves a
 * few slots, and these keep one request from filling the queue by itself. */
#define SRV_MAX_PROMPTS 64
#define SRV_MAX_CHOICES 16
#define SRV_MAX_FILENAME 200        /* bytes of a /slots save file name */

/* One prompt of a request: text (tokenized with the model's tokenizer) or token ids. */
struct srv_prompt {
    char *text;
    int32_t *ids;
    int32_t n_ids;
};

#define SRV_MAX_TOOLS 128            /* tool definitions per request */
#define SRV_MAX_TOOL_CALLS 64       /* tool calls per assistant message */
/* OpenAI's rule for function names: letters, digits, '_' and '-', at most 64 of them. */
#define SRV_MAX_TOOL_NAME 64

/* A tool call of an assistant message in the history. */
struct srv_tool_call {
    char *name;
    char *arguments;                /* JSON text */
};

struct srv_msg {
    char *role;                     /* system, user, assistant or tool */
    char *content;
    struct srv_tool_call *calls;    /* assistant tool_calls, or NULL */
    size_t n_calls;
};

/* One entry of "tools". */
struct srv_tool {
    char *name;
    char *json;                     /* the whole definition, unformatted JSON */
    char *gbnf;                     /* its parameters as GBNF (NULL: not convertible, only
                                     * allowed while no call is forced) */
};

enum srv_tool_choice {
    SRV_TOOLS_AUTO = 0,             /* the model may call tools (the default with tools) */
    SRV_TOOLS_NONE,                 /* tools are not offered */
    SRV_TOOLS_REQUIRED,             /* the model must call one or more tools (grammar) */
    SRV_TOOLS_NAMED,                /* the model must call tools[tool_named] (grammar) */
};

struct srv_req {
    enum srv_endpoint ep;
    char *prompt_text;              /* /tokenize content, or NULL */
    int32_t *prompt_ids;            /* /detokenize tokens, or NULL */
    int32_t n_prompt_ids;
    struct srv_prompt *prompts;     /* generation / embedding inputs (n_prompts >= 1) */
    int32_t n_prompts;
    bool prompt_array;              /* several prompts were given (the reply is per prompt) */
    struct srv_msg *msgs;           /* chat messages */
    size_t n_msgs;
    struct ork_sampler_params sampling;
    int32_t n_predict;              /* -1: until end of generation / context full */
    char *stops[SRV_MAX_STOPS];
    size_t n_stops;
    int32_t n_probs;                /* top-N alternatives per generated token */
    bool want_probs;                /* per-token log-probabilities (n_probs > 0, logprobs) */
    int32_t n_choices;              /* OpenAI "n" / llama-server "n_cmpl": choices per prompt */
    int32_t id_slot;                /* the slot to run in, or -1 (any) */
    bool seed_set;                  /* "seed" was given (choice i then uses seed + i) */
    bool parse_special;             /* special-token text in string prompts is parsed (true) */
    bool oai_b64;                   /* /v1/embeddings encoding_format "base64" */
    char *filename;                 /* /slots action file name */
    bool stream;
    bool cache_prompt;              /* reuse the slot's cached prefix (default true) */
    bool ignore_eos;                /* keep generating past end-of-generation tokens */
    bool include_usage;             /* OpenAI stream_options.include_usage */
    bool return_tokens;             /* /completion: fill "tokens" when not streaming */
    bool add_special;               /* /tokenize: prepend BOS */
    bool with_pieces;               /* /tokenize: objects with id and piece */
    char *model;                    /* echoed back in OpenAI responses, or NULL */
    /* Constrained output: "grammar" (GBNF), "json_schema" or "response_format" compiled, or
     * NULL. The samplers of the request's tasks borrow it. */
    struct ork_grammar *grammar;
    /* Tool calls (chat): definitions, tool_choice, parallel_tool_calls (default true). */
    struct srv_tool *tools;
    size_t n_tools;
    enum srv_tool_choice tool_choice;
    int32_t tool_named;
    bool parallel_tool_calls;
    /* Speculative decoding: "speculative.n_max" / "speculative.n_min" (llama-server), flat or
     * as members of a "speculative" object; -1: the server's --draft-max / --draft-min. */
    int32_t spec_n_max, spec_n_min;
};

/* Tools are offered to the model: chat (or /apply-template), some tools, tool_choice not
 * "none". */
bool ork__srv_tools_active(const struct srv_req *r);
/* An HTTP-level error: status code, OpenAI error type and message. */
struct srv_error {
    int status;
    const char *type;               /* "invalid_request_error", "not_found_error", ... */
    char message[320];
};

/* Parse and validate a JSON request body for endpoint ep. Unknown fields are ignored; every
 * other problem (malformed JSON, invalid UTF-8, wrong type, out-of-range value, token id outside
 * [0, n_vocab)) fills err (status 400) and returns ORK_EINVAL. The caller frees out with
 * srv_req_free (also after an error). */
int ork__srv_req_parse(enum srv_endpoint ep, const char *body, size_t len, int32_t n_vocab,
                       struct srv_req *out, struct srv_error *err);
void ork__srv_req_free(struct srv_req *r);
/* True when s[0..len) is valid UTF-8 (no overlongs, surrogates or code points > U+10FFFF). */
bool ork__srv_utf8_valid(const char *s, size_t len);
/* Format an error into err; returns ORK_EINVAL. */
int ork__srv_errorf(struct srv_error *err, int status, const char *type, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- tasks, slots, scheduler (sched.c) --------------------------------------------------- */

enum srv_stop {
    SRV_STOP_NONE = 0,
    SRV_STOP_LIMIT,                 /* n_predict reached, or the context is full */
    SRV_STOP_EOS,                   /* end-of-generation token */
    SRV_STOP_WORD,                  /* a stop string matched */
    SRV_STOP_SHUTDOWN,              /* the server is stopping */
    SRV_STOP_ERROR,                 /* evaluation failed (message in task->error) */
};

enum srv_task_kind {
    SRV_TASK_GENERATE = 0,
    SRV_TASK_EMBED,                 /* pooled final hidden state of the prompt */
    SRV_TASK_SLOT_SAVE,             /* the slot's KV cache to a file */
    SRV_TASK_SLOT_RESTORE,          /* ... from a file */
    SRV_TASK_SLOT_ERASE,            /* forget the slot's cache */
};

/* Top-N probabilities of one generated token (n_probs > 0). */
struct srv_prob {
    int32_t id;                     /* the sampled token */
    float logprob;                  /* its log-probability (softmax of the raw logits) */
    int32_t top_ids[SRV_MAX_N_PROBS];
    float top_logprobs[SRV_MAX_N_PROBS];
    int32_t n_top;
};

struct srv_task {
    uint64_t id;
    enum srv_task_kind kind;
    struct srv_req req;             /* immutable after submission; shared by a request's tasks
                                     * (the first task of a group owns it: req_owner) */
    const struct srv_req *rq;       /* the request (&req, or the group owner's) */
    struct srv_task *req_owner;     /* holds a reference while this task lives, or NULL */
    int32_t index;                  /* choice / result index in the reply (prompt * n + choice) */
    int32_t prompt_index;
    int32_t target_slot;            /* id_slot or the slot of a /slots action, or -1 */
    int64_t created;                /* unix time of the request (OpenAI "created") */
    char oai_id[48];                /* "chatcmpl-..." / "cmpl-...", unique across restarts */
    int32_t *prompt;                /* (n_prompt) tokens to evaluate */
    int32_t n_prompt;
    struct ork_sampler *smp;        /* created by the HTTP side, used by the scheduler */
    double t_submit_ms;

    /* shared with the HTTP side, under srv->mu */
    pthread_cond_t cv;              /* signalled on new output, completion, cancellation */
    pthread_cond_t *wake;           /* the cv to signal: the first task's, for all of a request */
    int refs;
    bool cancelled;                 /* the client went away: free the slot at the next step */
    bool done;
    enum srv_stop stop;
    int32_t stop_word;              /* index into req.stops, or -1 */
    char error[256];
    char *text;                     /* generated text so far (NUL-terminated) */
    size_t text_len, text_cap;
    int32_t *ids;                   /* generated token ids */
    int32_t n_ids, ids_cap;
    struct srv_prob *probs;         /* (n_ids) when want_probs */
    int32_t n_probs_done;           /* entries of probs computed (by the probs worker) */
    float *embd;                    /* (n_embd) embedding result */
    int64_t act_n;                  /* slot action: tokens saved / restored / erased */
    int64_t act_bytes;              /* ... bytes written / read */
    double act_ms;
    int32_t slot;                   /* slot id while running, else -1 */
    int32_t slot_used;              /* the slot that ran the task (id_slot), or -1 */
    int32_t n_cached;               /* prompt tokens reused from the slot's cache */
    bool truncated;                 /* generation stopped because the context was full */
    double prompt_ms, gen_ms;
    int32_t n_spec_steps, n_drafted, n_accepted;   /* speculative decoding of this task */
};

/* Under srv->mu: every output of t is final (done, and its probabilities computed). */
bool ork__srv_task_complete(const struct srv_task *t);

enum srv_slot_state { SRV_SLOT_IDLE = 0, SRV_SLOT_PREFILL, SRV_SLOT_GENERATE };

struct srv_slot {
    int32_t id;
    struct ork_session *sess;
    struct srv_task *task;          /* NULL when idle */
    enum srv_slot_state state;
    float *logits;                  /* (n_vocab) logits to sample from next */
    struct ork_detok dt;
    struct ork_stop *stop;          /* per task, or NULL */
    char *hold;                     /* stop-filter output buffer */
    size_t hold_cap;
    int32_t n_gen;
    int32_t pending_tok;            /* token to evaluate in the next decode step, or -1 */
    int32_t eval_pos;               /* the session's n_past when this step's forward began: a
                                     * one-at-a-time fallback after a batched forward failed
                                     * part-way evaluates from here (ork_model_eval truncates) */
    double t_gen0;
    uint64_t last_used;             /* step counter when last released (LRU choice) */
    int32_t pub_n_past;             /* published under srv->mu for /slots and /metrics */
    /* Speculative decoding: the slot's decoder (made at its first speculating request) and
     * whether the current task speculates; its pending token is then kept between steps (the
     * token a speculative step chose last, emitted, not evaluated). */
    struct ork_spec *spec;
    bool spec_on;
    int32_t spec_out[ORK_SPEC_M_HIST + 1];
    struct ork_spec_stats spec_before;  /* the decoder's counters before the current step */
    int32_t spec_rows;              /* rows of the current step's verify (drafted, not judged) */
};

struct srv_metrics {
    uint64_t requests_total;        /* HTTP requests answered */
    uint64_t requests_errors;       /* answered with a 4xx/5xx status */
    uint64_t requests_rejected;     /* 503 because the queue was full */
    uint64_t completions_total;     /* generation tasks finished */
    uint64_t prompt_tokens_total;   /* prompt tokens evaluated (cache hits excluded) */
    uint64_t prompt_tokens_cached;  /* prompt tokens reused from a slot cache */
    uint64_t tokens_predicted_total;
    double prompt_ms_total, gen_ms_total;
    uint64_t steps_total;           /* decode steps */
    uint64_t step_rows_total;       /* sequences decoded over all steps (batch rows) */
    double decode_ms_total;         /* wall time of the batched/one-by-one decode passes */
    double last_step_tok_s;         /* aggregate tokens/s of the last step */
    struct ork_spec_stats spec;     /* speculative steps of every slot */
    bool has_twin;                  /* the model has a board twin: twin holds its totals */
    struct ork_model_twin_stats twin;   /* copied by the scheduler after each step */
};

struct ork_server {
    struct ork_server_params p;
    struct ork_model *m;
    const struct ork_tokenizer *tok;
    int32_t n_vocab;
    enum ork_chat_format chat_fmt;
    char *chat_template;            /* the model's template text, or NULL */
    char model_id[256];
    int64_t created;                /* unix time of creation (/v1/models "created") */
    uint64_t id_nonce;              /* random per process: response ids unique across restarts */
    uint64_t id_seq;                /* requests given an id (atomic) */
    bool ready;                     /* the model is set (under mu); else 503 "loading model" */
    bool sched_started;
    struct ork_embedder *embedder;  /* --embeddings, else NULL */
    struct ork_grammar_vocab *gvocab;   /* the token trie grammars filter with; built at the
                                         * first constrained request (under mu), else NULL */

    pthread_mutex_t mu;
    pthread_cond_t sched_cv;        /* wakes the scheduler: new task, cancellation, stop */
    struct srv_slot *slots;         /* (n_parallel) */
    struct srv_task **queue;        /* ring buffer (queue_size + n_parallel) of waiting tasks */
    int32_t *eog_ids;               /* end-of-generation token ids (for ignore_eos) */
    int32_t n_eog;
    int32_t q_head, q_len;
    uint64_t next_task_id;
    uint64_t step;
    bool stopping;                  /* refuse new work, finish in-flight tasks */
    bool sched_running;
    int32_t n_streams;              /* streaming responses in flight (for a clean stop) */
    struct srv_metrics met;

    pthread_t sched_thread;
    void *mhd;                      /* struct MHD_Daemon */
    int port;
    bool started, stopped;
    float *batch_logits;            /* (n_parallel, n_vocab) for the batched decode */
    struct ork_session **batch_sess;
    int32_t *batch_tok;
    /* The scheduler's batched step with verify rows (sched.c, its thread alone): per slot row
     * counts and every row's token ((n_parallel, ORK_SPEC_M_HIST)), and the rows' logits
     * (mrow_cap rows, grown when a step needs more). */
    int32_t *mrow_n, *mrow_tok;
    float *mrow_logits;
    int32_t mrow_cap;

    /* n_probs off the scheduler's path (probs.c): the scheduler copies a token's logits into
     * a free snapshot and queues it; one worker thread computes the top-N and the logprob. */
    struct srv_probs_job *pjobs;    /* (n_snap) */
    float *snap;                    /* (n_snap, n_vocab), allocated at the first request */
    int32_t n_snap;
    int32_t pj_free;                /* free list head (index), -1: none */
    int32_t pj_head, pj_tail;       /* FIFO of queued jobs (indexes), -1: empty */
    pthread_cond_t probs_cv;        /* wakes the worker: job queued, stop */
    pthread_cond_t snap_cv;         /* wakes the scheduler: a snapshot became free */
    pthread_t probs_thread;
    bool probs_running, probs_stop;
};

/* ---- log-probabilities (probs.c) --------------------------------------------------------- */

struct srv_probs_job {
    struct srv_task *t;             /* holds a reference */
    int32_t idx;                    /* which generated token */
    int32_t next;                   /* free list / FIFO link */
};

/* Top-n log-probabilities of logits (softmax of the raw logits) by partial selection, O(n_vocab
 * log n), and token id's own. */
void ork__srv_token_probs(const float *logits, int32_t n_vocab, int32_t id, int32_t n,
                          struct srv_prob *pr);
/* Scheduler thread, srv->mu not held: queue token idx of t (logits as sampled) for the worker;
 * waits for a free snapshot when all are queued. Returns 0 or ORK_ENOMEM. */
int ork__srv_probs_queue(struct ork_server *srv, struct srv_task *t, int32_t idx,
                         const float *logits);
int ork__srv_probs_start(struct ork_server *srv);
void ork__srv_probs_stop(struct ork_server *srv);

/* Queue n tasks, all or none (takes the scheduler's references). ORK_EBUSY when the queue has
 * no room for them all, ORK_ECANCELED when the server is stopping. Caller holds no lock. */
int ork__srv_submit(struct ork_server *srv, struct srv_task *const *t, int32_t n);
/* Drop a reference (under srv->mu); frees the task at zero. */
void ork__srv_task_release_locked(struct ork_server *srv, struct srv_task *t);
struct srv_task *ork__srv_task_new(void);
int ork__srv_sched_start(struct ork_server *srv);
void ork__srv_sched_stop(struct ork_server *srv);

/* ---- routes (routes.c) ------------------------------------------------------------------- */

/* What a handler answers. Either a body (status, ork_malloc'd body or NULL for "out of memory",
 * content type), or for a generation request a task that is already queued: the transport then
 * streams it (task->req.stream) or waits for it and asks ork__srv_task_reply for the body. */
struct srv_reply {
    unsigned status;
    char *body;
    const char *ctype;
    struct srv_task **tasks;        /* queued tasks: the transport's references, or NULL */
    int32_t n_tasks;
};

struct srv_route;

/* What a handler gets of the HTTP request. */
struct srv_call {
    const char *body;               /* NUL-terminated; NULL when empty */
    size_t len;
    const char *path_arg;           /* the path after a prefix route's path ("" for exact) */
    const char *action;             /* query argument "action", or NULL */
};

/* Answer one request. Runs on the connection's thread without srv->mu held. Never fails:
 * errors are replies. */
typedef void (*srv_handler_fn)(struct ork_server *srv, const struct srv_route *rt,
                               const struct srv_call *call, struct srv_reply *out);

/* One row of the route table (routes.c). */
enum srv_route_flags {
    SRV_RT_PUBLIC = 1u << 0,        /* no API key needed (/health) */
    SRV_RT_METRICS = 1u << 1,       /* public unless --metrics-auth */
    SRV_RT_PREFIX = 1u << 2,        /* path is a prefix ("/slots/"): the rest is path_arg */
    SRV_RT_LOADING = 1u << 3,       /* answers while the model loads (else 503) */
};

struct srv_route {
    const char *method;             /* "GET" (also answers HEAD) or "POST" */
    const char *path;               /* exact match, or a prefix with SRV_RT_PREFIX */
    srv_handler_fn handler;
    enum srv_endpoint ep;           /* POST: the request schema (request.c) and response shape */
    unsigned flags;                 /* enum srv_route_flags */
};

/* The route of method and path, or NULL; *path_known then tells a wrong method (405) from an
 * unknown path (404), and allow (cap bytes) lists the path's methods for the Allow header. */
const struct srv_route *ork__srv_route_find(const char *method, const char *path,
                                            bool *path_known, char *allow, size_t cap);

/* The JSON body of an error in the OpenAI shape {"error": {"code", "message", "type"}}. */
char *ork__srv_error_json(const struct srv_error *err);
/* Fill out with err's status and JSON body. */
void ork__srv_reply_error(struct srv_reply *out, const struct srv_error *err);

/* Where a stream stands in its task's output. */
struct srv_stream_pos {
    size_t text_off;                /* bytes of task->text already sent */
    int32_t ids_off;                /* tokens of task->ids already sent */
    bool role_sent;                 /* chat streams: the opening delta with the role */
    size_t tool_off;                /* chat streams with tools: text sent as content or calls */
    bool final_sent;                /* the task's closing events */
};

/* Under srv->mu: the task has output past pos that ork__srv_stream_events would send. */
bool ork__srv_stream_pending(const struct srv_task *t, const struct srv_stream_pos *pos);
/* Under srv->mu: append the server-sent events for new output of t past pos to a growable
 * buffer and advance pos; final (t complete) adds t's closing events. Returns 0 or
 * ORK_ENOMEM. */
int ork__srv_stream_events(struct ork_server *srv, const struct srv_task *t,
                           struct srv_stream_pos *pos, bool final, char **buf, size_t *len,
                           size_t *cap);
/* Under srv->mu: the events that close a stream of the tasks (usage, [DONE]). */
int ork__srv_stream_end(struct ork_server *srv, struct srv_task *const *tasks, int32_t n,
                        char **buf, size_t *len, size_t *cap);
/* Under srv->mu: the reply (result or error) of finished, non-streamed tasks. */
void ork__srv_task_reply(struct ork_server *srv, struct srv_task *const *tasks, int32_t n,
                         struct srv_reply *out);

/* ---- HTTP (http.c) ----------------------------------------------------------------------- */

int ork__srv_http_start(struct ork_server *srv);
void ork__srv_http_stop(struct ork_server *srv);

/* ---- request parsing shared by request.c and request_tools.c ------------------------------ */

struct cJSON;
/* request.c's typed JSON getters, shared with request_tools.c: the member (NULL when absent or
 * null); a boolean member; a copy of a string value (400 on invalid UTF-8, 500 on memory). */
const struct cJSON *ork__srv_field(const struct cJSON *o, const char *name);
int ork__srv_get_bool(const struct cJSON *o, const char *name, bool *dst, struct srv_error *err);
int ork__srv_dup_string(const struct cJSON *f, const char *name, char **dst, struct srv_error *err);
/* request_tools.c: `tools`, `tool_choice`, `parallel_tool_calls` of r's body o, and the
 * `tool_calls` of history message i. */
int ork__srv_get_tools(const struct cJSON *o, struct srv_req *r, struct srv_error *err);
int ork__srv_get_msg_calls(const struct cJSON *m, size_t i, struct srv_msg *dst, struct srv_error *err);

#endif
