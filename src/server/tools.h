/* tools.h -- the tool calls in a model's output as far as it goes (tools.c): shared by the
 * finished reply and the stream (routes_openai.c), so the streamed deltas reassemble to exactly
 * the non-streamed call. Not a public header. */
#ifndef ORK_SERVER_TOOLS_H
#define ORK_SERVER_TOOLS_H

#include "srv_priv.h"

#include <stdbool.h>
#include <stddef.h>

/* Calls followed in one reply; more are ignored. */
#define SRV_TC_MAX 16

struct srv_tc {
    size_t name_a, name_b;          /* the function name's bytes in the text */
    size_t args_a, args_b;          /* the arguments' JSON text so far (raw, as written) */
    bool done;                      /* the arguments value is complete */
};

/* A call counts once its opening up to the arguments' "{" has been seen with a known tool
 * name (`<tool_call>` then `{"name": "NAME", "arguments": {` in the tagged style; the reply
 * starting with `{"name": "NAME", "parameters": {` in the JSON style). Later text never
 * withdraws it, so a stream can send the name at once. */
struct srv_tc_scan {
    size_t content_end;             /* text [0, content_end) is content, decided */
    int n;                          /* calls, c[0 .. n) */
    struct srv_tc c[SRV_TC_MAX];
};

/* Scan text[0, len) of a reply with tools active; final: the text is complete (a held-back
 * partial `<tool_call>` becomes content, and so does any text when no call was found). */
void ork__srv_tools_scan(const struct ork_server *srv, const struct srv_req *r, const char *text,
                         size_t len, bool final, struct srv_tc_scan *sc);
/* The id of call k of task t ("call_<request>_<choice>_<k>"). */
void ork__srv_tools_call_id(const struct srv_task *t, int k, char *buf, size_t cap);

#endif
