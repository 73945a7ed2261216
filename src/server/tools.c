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
#include "tools.h"

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

static bool known_tool(const struct srv_req *r, const char *name, size_t n)
{
    for (size_t i = 0; i < r->n_tools; i++)
        if (strlen(r->tools[i].name) == n && !memcmp(r->tools[i].name, name, n))
            return true;
    return false;
}

static size_t skip_ws(const char *s, size_t i, size_t len)
{
    while (i < len && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r'))
        i++;
    return i;
}

/* Match literal lit at s[*i] after blanks: 1 matched (i moves past it), 0 the text ends
 * inside it (undecided), -1 it differs. */
static int expect(const char *s, size_t *i, size_t len, const char *lit)
{
    size_t j = skip_ws(s, *i, len), n = strlen(lit);
    for (size_t k = 0; k < n; k++, j++) {
        if (j >= len)
            return 0;
        if (s[j] != lit[k])
            return -1;
    }
    *i = j;
    return 1;
}

/* The opening of a call at s[i]: `{"name": "NAME", "arguments": ` (or "parameters") up to the
 * arguments' "{". 1 with c->name and c->args_a set, 0 undecided, -1 not a call. */
static int call_head(const struct srv_req *r, const char *s, size_t i, size_t len,
                     struct srv_tc *c)
{
    int m;
    if ((m = expect(s, &i, len, "{")) <= 0 || (m = expect(s, &i, len, "\"name\"")) <= 0 ||
        (m = expect(s, &i, len, ":")) <= 0 || (m = expect(s, &i, len, "\"")) <= 0)
        return m;
    size_t a = i;
    while (i < len && s[i] != '"' && s[i] != '\\' && i - a <= SRV_MAX_TOOL_NAME)
        i++;
    if (i >= len)
        return 0;
    if (s[i] != '"' || !known_tool(r, s + a, i - a))
        return -1;
    c->name_a = a, c->name_b = i++;
    if ((m = expect(s, &i, len, ",")) <= 0 || (m = expect(s, &i, len, "\"")) <= 0)
        return m;
    int ma = expect(s, &(size_t){ i }, len, "arguments\"");
    int mp = expect(s, &(size_t){ i }, len, "parameters\"");
    if (ma < 0 && mp < 0)
        return -1;
    if (ma <= 0 && mp <= 0)
        return 0;
    i = skip_ws(s, i, len) + strlen(ma > 0 ? "arguments\"" : "parameters\"");
    if ((m = expect(s, &i, len, ":")) <= 0)
        return m;
    size_t j = skip_ws(s, i, len);
    if (j >= len)
        return 0;
    if (s[j] != '{')
        return -1;
    c->args_a = j;
    return 1;
}

/* The end of the JSON object starting at s[a] ('{'): *end past its closing '}' and true, or
 * false when the text ends first (*end = len). Brackets are counted, not matched (malformed
 * JSON ends where the braces balance); only a '}' ends it. */
static bool json_end(const char *s, size_t a, size_t len, size_t *end)
{
    int depth = 0;
    bool str = false;
    for (size_t i = a; i < len; i++) {
        char ch = s[i];
        if (str) {
            if (ch == '\\')
                i++;
            else if (ch == '"')
                str = false;
        } else if (ch == '"') {
            str = true;
        } else if (ch == '{' || ch == '[') {
            depth++;
        } else if (ch == ']' && depth > 1) {
            depth--;               /* a stray "]" cannot close the object */
        } else if (ch == '}' && --depth == 0) {
            *end = i + 1;
            return true;
        }
    }
    *end = len;
    return false;
}

/* Bytes at the end of text that are a proper prefix of tag (they may become it). */
static size_t partial_tag(const char *text, size_t len, const char *tag)
{
    size_t n = strlen(tag);
    for (size_t k = n - 1 < len ? n - 1 : len; k > 0; k--)
        if (!memcmp(text + len - k, tag, k))
            return k;
    return 0;
}

void ork__srv_tools_scan(const struct ork_server *srv, const struct srv_req *r, const char *text,
                         size_t len, bool final, struct srv_tc_scan *sc)
{
    static const char open[] = "<tool_call>";
    bool json = ork_chat_call_style(srv->chat_fmt) == ORK_CHAT_CALL_JSON;
    sc->n = 0;
    size_t at;                        /* where the next call's opening starts */
    if (json) {
        at = skip_ws(text, 0, len);
        sc->content_end = 0;
        if (at < len && text[at] != '{') {
            sc->content_end = len;    /* not a call: all content */
            return;
        }
    } else {
        const char *p = text ? memmem(text, len, open, strlen(open)) : NULL;
        if (!p) {
            sc->content_end = final ? len : len - partial_tag(text, len, open);
            return;
        }
        sc->content_end = (size_t)(p - text);
        at = sc->content_end + strlen(open);
    }
    while (sc->n < SRV_TC_MAX) {
        struct srv_tc *c = &sc->c[sc->n];
        int h = call_head(r, text, at, len, c);
        if (h <= 0) {
            if (sc->n == 0 && (h < 0 || final))
                sc->content_end = len;   /* the opening is no call: the text is content */
            return;
        }
        sc->n++;
        c->done = json_end(text, c->args_a, len, &c->args_b);
        if (!c->done || json || !r->parallel_tool_calls)
            return;
        const char *p = memmem(text + c->args_b, len - c->args_b, open, strlen(open));
        if (!p)
            return;
        at = (size_t)(p - text) + strlen(open);
    }
}

void ork__srv_tools_call_id(const struct srv_task *t, int k, char *buf, size_t cap)
{
    snprintf(buf, cap, "call_%s_%d_%d", t->oai_id + strcspn(t->oai_id, "-") + 1, t->index, k);
}

cJSON *ork__srv_tools_parse(struct ork_server *srv, const struct srv_task *t)
{
    const struct srv_req *r = t->rq;
    if (!ork__srv_tools_active(r) || !t->text)
        return NULL;
    struct srv_tc_scan sc;
    ork__srv_tools_scan(srv, r, t->text, t->text_len, true, &sc);
    if (sc.n == 0)
        return NULL;
    cJSON *calls = cJSON_CreateArray();
    char id[80];
    for (int k = 0; k < sc.n; k++) {
        const struct srv_tc *c = &sc.c[k];
        cJSON *call = cJSON_CreateObject(), *fn;
        ork__srv_tools_call_id(t, k, id, sizeof id);
        cJSON_AddStringToObject(call, "id", id);
        cJSON_AddStringToObject(call, "type", "function");
        fn = cJSON_AddObjectToObject(call, "function");
        char *name = ork__srv_slice(t, c->name_a, c->name_b);
        char *args = ork__srv_slice(t, c->args_a, c->args_b);
        cJSON_AddStringToObject(fn, "name", name ? name : "");
        cJSON_AddStringToObject(fn, "arguments", args ? args : "");
        ork_free(name);
        ork_free(args);
        cJSON_AddItemToArray(calls, call);
    }
    return calls;
}
