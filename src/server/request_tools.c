/* request_tools.c -- parsing and validation of the OpenAI tool-call fields of a chat request:
 * `tools` (function definitions with JSON-schema parameters), `tool_choice`,
 * `parallel_tool_calls`, and the `tool_calls` an assistant message of the history carries. Every
 * problem is a 400 naming the field. The rest of a request: request.c; building the grammar of a
 * forced call and parsing the reply: tools.c. */
#include "srv_priv.h"

#include <ork/alloc.h>
#include <ork/error.h>

#include <cjson/cJSON.h>

#include <stdlib.h>
#include <string.h>

#define BAD(...) ork__srv_errorf(err, 400, "invalid_request_error", __VA_ARGS__)

static char *json_dup(const cJSON *v)
{
    char *t = cJSON_PrintUnformatted(v), *d = t ? ork_strdup(t) : NULL;
    cJSON_free(t);
    return d;
}

/* OpenAI function names: [A-Za-z0-9_-]{1,64}. */
static bool tool_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > SRV_MAX_TOOL_NAME)
        return false;
    return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == n;
}

/* An assistant message's "tool_calls": [{id, type: "function", function: {name, arguments:
 * JSON text (a string; an object is accepted too)}}]. */
int ork__srv_get_msg_calls(const cJSON *m, size_t i, struct srv_msg *dst, struct srv_error *err)
{
    const cJSON *tc = ork__srv_field(m, "tool_calls");
    if (!tc)
        return 0;
    if (strcmp(dst->role, "assistant"))
        return BAD("'messages'[%zu].tool_calls: only assistant messages carry tool calls", i);
    if (!cJSON_IsArray(tc))
        return BAD("'messages'[%zu].tool_calls must be an array", i);
    int n = cJSON_GetArraySize(tc);
    if (n > SRV_MAX_TOOL_CALLS)
        return BAD("'messages'[%zu].tool_calls has more than %d calls", i, SRV_MAX_TOOL_CALLS);
    if (n == 0)
        return 0;
    if (!(dst->calls = ork_calloc((size_t)n, sizeof(*dst->calls))))
        return ork__srv_errorf(err, 500, "server_error", "out of memory");
    const cJSON *c;
    cJSON_ArrayForEach(c, tc) {
        size_t k = dst->n_calls;
        const cJSON *fn = cJSON_IsObject(c) ? cJSON_GetObjectItemCaseSensitive(c, "function")
                                            : NULL;
        const cJSON *name = cJSON_IsObject(fn) ? cJSON_GetObjectItemCaseSensitive(fn, "name")
                                               : NULL;
        const cJSON *args = cJSON_IsObject(fn) ? ork__srv_field(fn, "arguments") : NULL;
        if (!cJSON_IsString(name))
            return BAD("'messages'[%zu].tool_calls[%zu].function.name must be a string", i, k);
        if (args && !cJSON_IsString(args) && !cJSON_IsObject(args))
            return BAD("'messages'[%zu].tool_calls[%zu].function.arguments must be a string "
                       "of JSON", i, k);
        int ret = ork__srv_dup_string(name, "messages[].tool_calls[].function.name", &dst->calls[k].name,
                             err);
        if (ret < 0)
            return ret;
        dst->n_calls++;
        if (cJSON_IsString(args))
            ret = ork__srv_dup_string(args, "messages[].tool_calls[].function.arguments",
                             &dst->calls[k].arguments, err);
        else if (!(dst->calls[k].arguments = args ? json_dup(args) : ork_strdup("{}")))
            ret = ork__srv_errorf(err, 500, "server_error", "out of memory");
        if (ret < 0)
            return ret;
    }
    return 0;
}

/* "tools": [{"type": "function", "function": {"name", "description", "parameters"}}],
 * "tool_choice": "auto" | "none" | "required" | {"type": "function", "function": {"name"}},
 * "parallel_tool_calls": bool. Each tool's parameters are converted to GBNF here, so a schema
 * the converter rejects is a 400 when a call is forced (required or named). */
int ork__srv_get_tools(const cJSON *o, struct srv_req *r, struct srv_error *err)
{
    const cJSON *tl = ork__srv_field(o, "tools"), *tc = ork__srv_field(o, "tool_choice");
    int ret;
    r->parallel_tool_calls = true;
    if ((ret = ork__srv_get_bool(o, "parallel_tool_calls", &r->parallel_tool_calls, err)) < 0)
        return ret;
    if (tl && !cJSON_IsArray(tl))
        return BAD("'tools' must be an array of tool definitions");
    int n = tl ? cJSON_GetArraySize(tl) : 0;
    if (n > SRV_MAX_TOOLS)
        return BAD("'tools' has more than %d entries", SRV_MAX_TOOLS);
    /* tool_choice */
    const char *named = NULL;
    if (tc && cJSON_IsString(tc)) {
        const char *v = tc->valuestring;
        if (!strcmp(v, "auto"))
            r->tool_choice = SRV_TOOLS_AUTO;
        else if (!strcmp(v, "none"))
            r->tool_choice = SRV_TOOLS_NONE;
        else if (!strcmp(v, "required"))
            r->tool_choice = SRV_TOOLS_REQUIRED;
        else
            return BAD("'tool_choice' must be \"auto\", \"none\", \"required\" or "
                       "{\"type\": \"function\", \"function\": {\"name\": ...}}");
    } else if (tc) {
        const cJSON *ty = cJSON_IsObject(tc) ? cJSON_GetObjectItemCaseSensitive(tc, "type") : NULL;
        const cJSON *fn = cJSON_IsObject(tc) ? cJSON_GetObjectItemCaseSensitive(tc, "function")
                                             : NULL;
        const cJSON *nm = cJSON_IsObject(fn) ? cJSON_GetObjectItemCaseSensitive(fn, "name") : NULL;
        if (!cJSON_IsString(ty) || strcmp(ty->valuestring, "function") || !cJSON_IsString(nm))
            return BAD("'tool_choice' object must be {\"type\": \"function\", \"function\": "
                       "{\"name\": ...}}");
        named = nm->valuestring;
        r->tool_choice = SRV_TOOLS_NAMED;
    }
    bool forced = r->tool_choice == SRV_TOOLS_REQUIRED || r->tool_choice == SRV_TOOLS_NAMED;
    if (forced && n == 0)
        return BAD("'tool_choice' forces a tool call but 'tools' is empty or absent");
    if (n == 0)
        return 0;
    if (!(r->tools = ork_calloc((size_t)n, sizeof(*r->tools))))
        return ork__srv_errorf(err, 500, "server_error", "out of memory");
    r->tool_named = -1;
    const cJSON *t;
    cJSON_ArrayForEach(t, tl) {
        size_t i = r->n_tools;
        const cJSON *ty = cJSON_IsObject(t) ? cJSON_GetObjectItemCaseSensitive(t, "type") : NULL;
        const cJSON *fn = cJSON_IsObject(t) ? cJSON_GetObjectItemCaseSensitive(t, "function")
                                            : NULL;
        if (!cJSON_IsObject(t))
            return BAD("'tools'[%zu] must be an object", i);
        if (ty && (!cJSON_IsString(ty) || strcmp(ty->valuestring, "function")))
            return BAD("'tools'[%zu].type must be \"function\"", i);
        if (!cJSON_IsObject(fn))
            return BAD("'tools'[%zu].function is required (an object)", i);
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(fn, "name");
        const cJSON *ds = ork__srv_field(fn, "description");
        const cJSON *pa = ork__srv_field(fn, "parameters");
        if (!cJSON_IsString(nm))
            return BAD("'tools'[%zu].function.name is required (a string)", i);
        if (!tool_name_ok(nm->valuestring))
            return BAD("'tools'[%zu].function.name '%.80s' must be 1 to %d letters, digits, "
                       "'_' or '-'", i, nm->valuestring, SRV_MAX_TOOL_NAME);
        if (ds && !cJSON_IsString(ds))
            return BAD("'tools'[%zu].function.description must be a string", i);
        if (pa && !cJSON_IsObject(pa))
            return BAD("'tools'[%zu].function.parameters must be a JSON schema (an object)", i);
        for (size_t k = 0; k < i; k++)
            if (!strcmp(r->tools[k].name, nm->valuestring))
                return BAD("'tools'[%zu].function.name '%s' is defined twice", i,
                           nm->valuestring);
        struct srv_tool *d = &r->tools[i];
        r->n_tools++;
        if (!(d->name = ork_strdup(nm->valuestring)) || !(d->json = json_dup(t)))
            return ork__srv_errorf(err, 500, "server_error", "out of memory");
        /* no parameters: a function without arguments, {} */
        char *schema = pa ? json_dup(pa) : ork_strdup("{\"type\":\"object\",\"properties\":{}}");
        if (!schema)
            return ork__srv_errorf(err, 500, "server_error", "out of memory");
        ret = ork_json_schema_to_gbnf(schema, strlen(schema), &d->gbnf);
        ork_free(schema);
        if (ret == ORK_ENOMEM)
            return ork__srv_errorf(err, 500, "server_error", "out of memory");
        bool wanted = r->tool_choice == SRV_TOOLS_REQUIRED ||
                      (named && !strcmp(named, d->name));
        if (ret < 0 && (ret != ORK_EUNSUPPORTED || wanted))
            return BAD("'tools'[%zu].function.parameters: %s", i, ork_error_describe(ret));
        if (named && !strcmp(named, d->name))
            r->tool_named = (int32_t)i;
    }
    if (named && r->tool_named < 0)
        return BAD("'tool_choice'.function.name '%.80s' is not one of 'tools'", named);
    return 0;
}

bool ork__srv_tools_active(const struct srv_req *r)
{
    return (r->ep == SRV_EP_OAI_CHAT || r->ep == SRV_EP_APPLY_TEMPLATE) && r->n_tools > 0 &&
           r->tool_choice != SRV_TOOLS_NONE;
}

