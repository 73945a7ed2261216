/* routes.h -- helpers shared by the handlers of src/server/routes*.c (not the transport):
 * replies, JSON and server-sent-event building, tokenization, and the handlers and response
 * shapes of each API, which routes.c lists in its table.
 *
 * routes.c: the route table, generation requests (request -> task), the dispatch of results
 * and streams to their API's shape. routes_native.c: the llama-server API. routes_openai.c:
 * the OpenAI API (/v1/...). */
#ifndef ORK_SERVER_ROUTES_H
#define ORK_SERVER_ROUTES_H

#include "srv_priv.h"

#include <cjson/cJSON.h>

#define ORK_SRV_CTYPE_JSON "application/json; charset=utf-8"
/* Prometheus text exposition format, version 0.0.4 (its documented Content-Type). */
#define ORK_SRV_CTYPE_PROMETHEUS "text/plain; version=0.0.4"

/* ---- replies and JSON (routes.c) --------------------------------------------------------- */

/* cJSON print into ork_malloc'd memory (frees j; NULL j or no memory: NULL). */
char *ork__srv_json_print(cJSON *j);
/* A JSON reply with the given status; body NULL means out of memory (the transport sends 500). */
void ork__srv_reply_json(struct srv_reply *out, unsigned status, char *body);
/* An error reply built from a format. */
void ork__srv_reply_errorf(struct srv_reply *out, int status, const char *type, const char *fmt,
                           ...) __attribute__((format(printf, 4, 5)));

/* Tokenize text (add_special: BOS per model flags); *ids is ork_malloc'd. */
int ork__srv_tokenize(const struct ork_server *srv, const char *text, bool add_special,
                      bool parse_special, int32_t **ids, int32_t *n);

/* "timings" of a finished or running task (both APIs report them). */
void ork__srv_add_timings(cJSON *root, const struct srv_task *t);

/* ---- server-sent events (routes.c) ------------------------------------------------------- */

/* Append s[0..n) to a growable NUL-terminated buffer. 0 or ORK_ENOMEM. */
int ork__srv_buf_append(char **buf, size_t *len, size_t *cap, const char *s, size_t n);
/* Append the event "data: <json>\n\n" (frees j). */
int ork__srv_sse(cJSON *j, char **buf, size_t *len, size_t *cap);
/* Task output text [from, to) as an ork_malloc'd NUL-terminated copy, or NULL. */
char *ork__srv_slice(const struct srv_task *t, size_t from, size_t to);
/* A task that failed or never started: append the event with its error (before the closing
 * events); nothing for a task that ended normally. */
int ork__srv_sse_task_error(const struct srv_task *t, char **buf, size_t *len, size_t *cap);
/* Fill err from a failed or unstarted task; false when the task ended normally. */
bool ork__srv_task_error(const struct srv_task *t, struct srv_error *err);

/* Text of one token (specials rendered) as a JSON string member; a piece that is not valid
 * UTF-8 by itself (byte tokens) as an array of its bytes instead, as llama-server does. */
void ork__srv_add_piece(cJSON *o, const char *name, const struct ork_server *srv, int32_t id);
/* The token's bytes as an array member "bytes". */
void ork__srv_add_bytes(cJSON *o, const struct ork_server *srv, int32_t id);
/* The token's text (specials rendered) into buf (NUL-terminated); its length. */
int ork__srv_piece(const struct ork_server *srv, int32_t id, char *buf, size_t cap);

/* ---- requests that become tasks (routes.c) ----------------------------------------------- */

#define SRV_HANDLER(name)                                                                      \
    void name(struct ork_server *srv, const struct srv_route *rt, const struct srv_call *call, \
              struct srv_reply *out)

/* POST /completion, /v1/completions, /v1/chat/completions: parse the body with rt->ep's
 * schema, build each prompt's tokens and each choice's sampler, queue the tasks. */
SRV_HANDLER(ork__srv_handle_generate);
/* POST /embedding, /embeddings, /v1/embeddings (--embeddings). */
SRV_HANDLER(ork__srv_handle_embed);
/* POST /slots/{id}?action=save|restore|erase (--slot-save-path). */
SRV_HANDLER(ork__srv_handle_slot_action);
/* Render messages with the model's chat template (routes.c; used by /apply-template). */
int ork__srv_render_chat(struct ork_server *srv, const struct srv_req *r, char **text,
                         struct srv_error *err);

/* ---- tool calls (tools.c) --------------------------------------------------------------- */

/* tool_choice "required" or a named function: compile the grammar that forces the call into
 * r->grammar (request.c has refused any other constraint). Nothing otherwise. */
int ork__srv_tools_grammar(struct ork_server *srv, struct srv_req *r, struct srv_error *err);
/* The system text with the tool list in the model's convention (*out ork_malloc'd). */
int ork__srv_tools_system(struct ork_server *srv, const struct srv_req *r, const char *system,
                          char **out, struct srv_error *err);
/* The tool calls in a finished task's output as OpenAI's "tool_calls" array (ids, type
 * "function", function.name, function.arguments as a JSON string), or NULL when the output
 * is not a call (or tools are not active). */
cJSON *ork__srv_tools_parse(struct ork_server *srv, const struct srv_task *t);

/* ---- llama-server API (routes_native.c) -------------------------------------------------- */

SRV_HANDLER(ork__srv_get_webui);
SRV_HANDLER(ork__srv_get_health);
SRV_HANDLER(ork__srv_get_props);
SRV_HANDLER(ork__srv_post_props);
SRV_HANDLER(ork__srv_get_slots);
SRV_HANDLER(ork__srv_get_metrics);
SRV_HANDLER(ork__srv_post_tokenize);
SRV_HANDLER(ork__srv_post_detokenize);
SRV_HANDLER(ork__srv_post_apply_template);
/* /completion's result and stream events (shapes of ork__srv_task_reply and
 * ork__srv_stream_events); several prompts give an array of results. */
char *ork__srv_native_result(struct ork_server *srv, struct srv_task *const *ts, int32_t n);
int ork__srv_native_stream(struct ork_server *srv, const struct srv_task *t,
                           struct srv_stream_pos *pos, bool final, char **buf, size_t *len,
                           size_t *cap);
/* /embedding's and /slots actions' results. */
char *ork__srv_native_embed_result(struct ork_server *srv, struct srv_task *const *ts,
                                   int32_t n);
char *ork__srv_slot_action_result(struct ork_server *srv, const struct srv_task *t);

/* ---- OpenAI API (routes_openai.c) -------------------------------------------------------- */

SRV_HANDLER(ork__srv_get_models);
SRV_HANDLER(ork__srv_get_model);
/* /v1/completions' and /v1/chat/completions' result and stream events. */
char *ork__srv_oai_result(struct ork_server *srv, struct srv_task *const *ts, int32_t n);
int ork__srv_oai_stream(struct ork_server *srv, const struct srv_task *t,
                        struct srv_stream_pos *pos, bool final, char **buf, size_t *len,
                        size_t *cap);
int ork__srv_oai_stream_end(struct ork_server *srv, struct srv_task *const *ts, int32_t n,
                            char **buf, size_t *len, size_t *cap);
char *ork__srv_oai_embed_result(struct ork_server *srv, struct srv_task *const *ts, int32_t n);

#endif
