/* tools.c -- OpenAI tool calls on /v1/chat/completions: the tool list in the prompt (through
 * the chat module's convention for the model's format), the grammar that forces a call when
 * tool_choice is "required" or names a function, and the model's output parsed back into
 * "tool_calls".
 *
 * The forcing grammar wraps each tool's parameter grammar (converted from its JSON schema by
 * request.c) in the call envelope of the format:
 *   tagged (ChatML and the generic fallback):
 *     root ::= call ("\n" call)*            (one call when parallel_tool_calls is false)
 *     call ::= "<tool_call>\n{\"name\": " (f0 | f1 | ...) "}\n</tool_call>"
 *     f0   ::= "\"NAME\", \"arguments\": " t0-root
 *   JSON (Llama 3.1): call ::= "{\"name\": " (f0 | ...) "}" with "parameters", one call.
 * Rule names of tool i's grammar get the prefix "t<i>-" so the tools' grammars do not collide. */
#include "routes.h"

#include <ork/alloc.h>
#include <ork/error.h>

#include <stdio.h>
#include <string.h>

/* A growable string for the grammar text. */
struct gb {
    char *p;
    size_t len, cap;
    int err;
};

static void gb_add(struct gb *b, const char *s, size_t n)
{
    if (!b->err && ork__srv_buf_append(&b->p, &b->len, &b->cap, s, n) < 0)
        b->err = ORK_ENOMEM;
}

static void gb_puts(struct gb *b, const char *s)
{
    gb_add(b, s, strlen(s));
}

static bool name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '_';
}

/* Append GBNF text g with every rule name prefixed: names are the words outside string
 * literals, character classes and comments that start with a letter (repetition bounds such as
 * {0,4} are digits and stay as they are). */
static void gb_add_prefixed(struct gb *b, const char *g, const char *prefix)
{
    size_t i = 0, n = strlen(g);
    while (i < n) {
        char c = g[i];
        if (c == '"' || c == '[') {
            char close = c == '"' ? '"' : ']';
            size_t j = i + 1;
            while (j < n && g[j] != close)
                j += g[j] == '\\' && j + 1 < n ? 2 : 1;
            j = j < n ? j + 1 : n;
            gb_add(b, g + i, j - i);
            i = j;
        } else if (c == '#') {
            size_t j = i;
            while (j < n && g[j] != '\n')
                j++;
            i = j;
        } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
            size_t j = i;
            while (j < n && name_char(g[j]))
                j++;
            gb_puts(b, prefix);
            gb_add(b, g + i, j - i);
            i = j;
        } else {
            gb_add(b, g + i, 1);
            i++;
        }
    }
    gb_puts(b, "\n");
}

int ork__srv_tools_grammar(struct ork_server *srv, struct srv_req *r, struct srv_error *err)
{
    if (!ork__srv_tools_active(r) ||
        (r->tool_choice != SRV_TOOLS_REQUIRED && r->tool_choice != SRV_TOOLS_NAMED))
        return 0;
    bool json = ork_chat_call_style(srv->chat_fmt) == ORK_CHAT_CALL_JSON;
    bool many = r->parallel_tool_calls && !json;
    struct gb b = { 0 };
    char prefix[24];
    gb_puts(&b, many ? "root ::= call (\"\\n\" call)*\n" : "root ::= call\n");
    gb_puts(&b, json ? "call ::= \"{\\\"name\\\": \" (" : "call ::= \"<tool_call>\\n{\\\"name\\\": \" (");
    bool first = true;
    for (size_t i = 0; i < r->n_tools; i++) {
        if (r->tool_choice == SRV_TOOLS_NAMED && (int32_t)i != r->tool_named)
            continue;
        snprintf(prefix, sizeof prefix, "f%zu", i);
        gb_puts(&b, first ? "" : " | ");
        gb_puts(&b, prefix);
        first = false;
    }
    gb_puts(&b, json ? ") \"}\"\n" : ") \"}\\n</tool_call>\"\n");
    for (size_t i = 0; i < r->n_tools; i++) {
        if (r->tool_choice == SRV_TOOLS_NAMED && (int32_t)i != r->tool_named)
            continue;
        /* names are [A-Za-z0-9_-] (request.c), so they need no escaping in a literal */
        char head[SRV_MAX_TOOL_NAME + 64];
        snprintf(head, sizeof head, "f%zu ::= \"\\\"%s\\\", \\\"%s\\\": \" t%zu-root\n", i,
                 r->tools[i].name, json ? "parameters" : "arguments", i);
        gb_puts(&b, head);
        snprintf(prefix, sizeof prefix, "t%zu-", i);
        gb_add_prefixed(&b, r->tools[i].gbnf, prefix);
    }
    int ret = b.err;
    if (ret == 0)
        ret = ork_grammar_parse(b.p, b.len, &r->grammar);
    ork_free(b.p);
    if (ret == ORK_ENOMEM)
        return ork__srv_errorf(err, 500, "server_error", "out of memory");
    if (ret < 0)
        return ork__srv_errorf(err, 400, "invalid_request_error", "'tools': the tool-call "
                               "grammar does not compile: %s", ork_error_describe(ret));
    return 0;
}

int ork__srv_tools_system(struct ork_server *srv, const struct srv_req *r, const char *system,
                          char **out, struct srv_error *err)
{
    const char **defs = ork_calloc(r->n_tools ? r->n_tools : 1, sizeof(*defs));
    if (!defs)
        return ork__srv_errorf(err, 500, "server_error", "out of memory");
    for (size_t i = 0; i < r->n_tools; i++)
        defs[i] = r->tools[i].json;
    int ret = ork_chat_tools_system(srv->chat_fmt, system, defs, r->n_tools, out);
    ork_free(defs);
    if (ret < 0)
        return ork__srv_errorf(err, ret == ORK_ENOMEM ? 500 : 400,
                               ret == ORK_ENOMEM ? "server_error" : "invalid_request_error",
                               "'tools': %s", ork_error_describe(ret));
    return 0;
}

/* ---- parsing the output ------------------------------------------------------------------ */

static bool known_tool(const struct srv_req *r, const char *name)
{
    for (size_t i = 0; i < r->n_tools; i++)
        if (!strcmp(r->tools[i].name, name))
            return true;
    return false;
}

/* One call's JSON text (s, n bytes) to an OpenAI tool call; NULL when it is not a call of a
 * known tool. */
static cJSON *parse_call(const struct srv_req *r, const char *s, size_t n, const char *id)
{
    cJSON *o = cJSON_ParseWithLength(s, n), *call = NULL;
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(o, "name");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(o, "arguments");
    if (!args)
        args = cJSON_GetObjectItemCaseSensitive(o, "parameters");
    if (cJSON_IsObject(o) && cJSON_IsString(nm) && known_tool(r, nm->valuestring) &&
        cJSON_IsObject(args)) {
        char *a = cJSON_PrintUnformatted(args);
        call = cJSON_CreateObject();
        cJSON_AddStringToObject(call, "id", id);
        cJSON_AddStringToObject(call, "type", "function");
        cJSON *fn = cJSON_AddObjectToObject(call, "function");
        cJSON_AddStringToObject(fn, "name", nm->valuestring);
        cJSON_AddStringToObject(fn, "arguments", a ? a : "{}");
        cJSON_free(a);
    }
    cJSON_Delete(o);
    return call;
}

static const char *skip_ws(const char *s, const char *end)
{
    while (s < end && (*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r'))
        s++;
    return s;
}

cJSON *ork__srv_tools_parse(struct ork_server *srv, const struct srv_task *t)
{
    const struct srv_req *r = t->rq;
    if (!ork__srv_tools_active(r) || !t->text)
        return NULL;
    const char *text = t->text, *end = t->text + t->text_len;
    cJSON *calls = cJSON_CreateArray();
    char id[80];
    int k = 0;
    if (ork_chat_call_style(srv->chat_fmt) == ORK_CHAT_CALL_JSON) {
        const char *s = skip_ws(text, end);
        snprintf(id, sizeof id, "call_%s_%d_%d", t->oai_id + strcspn(t->oai_id, "-") + 1,
                 t->index, k);
        cJSON *c = s < end && *s == '{' ? parse_call(r, s, (size_t)(end - s), id) : NULL;
        if (c)
            cJSON_AddItemToArray(calls, c);
    } else {
        const size_t lo = strlen("<tool_call>"), lc = strlen("</tool_call>");
        const char *p = text;
        while ((p = strstr(p, "<tool_call>")) != NULL) {
            const char *q = strstr(p + lo, "</tool_call>");
            if (!q)
                break;
            snprintf(id, sizeof id, "call_%s_%d_%d", t->oai_id + strcspn(t->oai_id, "-") + 1,
                     t->index, k);
            cJSON *c = parse_call(r, p + lo, (size_t)(q - p - lo), id);
            if (c) {
                cJSON_AddItemToArray(calls, c);
                k++;
            }
            p = q + lc;
            if (k > 0 && !r->parallel_tool_calls)
                break;
        }
    }
    if (!cJSON_GetArraySize(calls)) {
        cJSON_Delete(calls);
        return NULL;
    }
    return calls;
}
