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

/* ---- generation (routes.c) --------------------------------------------------------------- */

/* POST /completion, /v1/completions, /v1/chat/completions: parse the body with rt->ep's
 * schema, build the prompt and sampler, queue the task. */
void ork__srv_handle_generate(struct ork_server *srv, const struct srv_route *rt,
                              const char *body, size_t len, struct srv_reply *out);

/* ---- llama-server API (routes_native.c) -------------------------------------------------- */

void ork__srv_get_health(struct ork_server *srv, const struct srv_route *rt, const char *body,
                         size_t len, struct srv_reply *out);
void ork__srv_get_props(struct ork_server *srv, const struct srv_route *rt, const char *body,
                        size_t len, struct srv_reply *out);
void ork__srv_get_slots(struct ork_server *srv, const struct srv_route *rt, const char *body,
                        size_t len, struct srv_reply *out);
void ork__srv_get_metrics(struct ork_server *srv, const struct srv_route *rt, const char *body,
                          size_t len, struct srv_reply *out);
void ork__srv_post_tokenize(struct ork_server *srv, const struct srv_route *rt,
                            const char *body, size_t len, struct srv_reply *out);
void ork__srv_post_detokenize(struct ork_server *srv, const struct srv_route *rt,
                              const char *body, size_t len, struct srv_reply *out);
/* /completion's result and stream events (shapes of ork__srv_task_reply and
 * ork__srv_stream_events). */
char *ork__srv_native_result(struct ork_server *srv, const struct srv_task *t);
int ork__srv_native_stream(struct ork_server *srv, const struct srv_task *t,
                           struct srv_stream_pos *pos, bool final, char **buf, size_t *len,
                           size_t *cap);

/* ---- OpenAI API (routes_openai.c) -------------------------------------------------------- */

void ork__srv_get_models(struct ork_server *srv, const struct srv_route *rt, const char *body,
                         size_t len, struct srv_reply *out);
/* /v1/completions' and /v1/chat/completions' result and stream events. */
char *ork__srv_oai_result(struct ork_server *srv, const struct srv_task *t);
int ork__srv_oai_stream(struct ork_server *srv, const struct srv_task *t,
                        struct srv_stream_pos *pos, bool final, char **buf, size_t *len,
                        size_t *cap);

#endif
