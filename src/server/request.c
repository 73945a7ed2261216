/* request.c -- parsing and validation of JSON request bodies for the server's POST endpoints
 * (llama-server /completion, /tokenize, /detokenize; OpenAI /v1/completions and
 * /v1/chat/completions) into struct srv_req.
 *
 * Every problem becomes a 400 error naming the field: malformed JSON, invalid UTF-8, a \u0000
 * escape, a field of the wrong type, a value out of range, a token id outside the vocabulary,
 * and a field of the OpenAI or llama-server API that ork knows but does not implement (the
 * table unsupported_fields; a harmless value such as "tools": [] passes). Constrained output
 * ("grammar", "json_schema", "response_format") is compiled here, so a bad grammar or schema is
 * a 400 naming what was wrong before the request is queued. Unknown fields are
 * ignored, as both reference APIs do. Nothing here touches the model: the fuzz target
 * (tests/fuzz/fuzz_http.c) drives these functions directly. */
#include "srv_priv.h"

#include <ork/alloc.h>
#include <ork/error.h>

#include <cjson/cJSON.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Defaults of the llama-server /completion API (its README, "Options"): temperature 0.8,
 * top_k 40, top_p 0.95, min_p 0.05, repeat_last_n 64, n_predict -1; they equal ork's sampler
 * defaults (sampler.h). The OpenAI APIs default temperature and top_p to 1 per their reference. */
#define SRV_OAI_DEFAULT_TEMP 1.0f
#define SRV_OAI_DEFAULT_TOP_P 1.0f
/* Largest temperature / penalty accepted (sanity bounds, same as the CLI's). */
#define SRV_MAX_TEMP 100.0
#define SRV_MAX_PENALTY 100.0
/* JSON nesting accepted (cJSON's own limit is 1000; requests never need more than a few). */
#define SRV_MAX_JSON_DEPTH 64

int ork__srv_errorf(struct srv_error *err, int status, const char *type, const char *fmt, ...)
{
    err->status = status;
    err->type = type;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return ORK_EINVAL;
}

#define BAD(...) ork__srv_errorf(err, 400, "invalid_request_error", __VA_ARGS__)

bool ork__srv_utf8_valid(const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < len) {
        unsigned c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t n;
        uint32_t cp, min;
        if ((c & 0xe0) == 0xc0) {
            n = 1, cp = c & 0x1f, min = 0x80;
        } else if ((c & 0xf0) == 0xe0) {
            n = 2, cp = c & 0x0f, min = 0x800;
        } else if ((c & 0xf8) == 0xf0) {
            n = 3, cp = c & 0x07, min = 0x10000;
        } else {
            return false;
        }
        if (len - i <= n)   /* the sequence needs n more bytes */
            return false;
        for (size_t k = 1; k <= n; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += n + 1;
    }
    return true;
}

enum json_scan { JSON_SCAN_OK = 0, JSON_SCAN_DEEP, JSON_SCAN_NUL_ESCAPE };

/* One pass over the raw text: nesting depth, and \u0000 escapes inside strings (cJSON would
 * decode them to a NUL that silently ends the C string). */
static enum json_scan json_scan(const char *s, size_t len)
{
    int depth = 0;
    bool in_str = false, esc = false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (in_str) {
            if (esc) {
                esc = false;
                if (c == 'u' && len - i > 4 && !memcmp(s + i + 1, "0000", 4))
                    return JSON_SCAN_NUL_ESCAPE;
            } else if (c == '\\') {
                esc = true;
            } else if (c == '"') {
                in_str = false;
            }
            continue;
        }
        if (c == '"')
            in_str = true;
        else if (c == '{' || c == '[') {
            if (++depth > SRV_MAX_JSON_DEPTH)
                return JSON_SCAN_DEEP;
        } else if (c == '}' || c == ']')
            depth--;
    }
    return JSON_SCAN_OK;
}

/* The raw text of the first top-level member named key (written without escapes) of a JSON
 * object already validated by cJSON: for integers cJSON would round to a double. */
static bool raw_member(const char *s, size_t len, const char *key, const char **val,
                       size_t *vlen)
{
    size_t i = 0, klen = strlen(key);
#define SKIP_WS() while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) i++
    SKIP_WS();
    if (i >= len || s[i++] != '{')
        return false;
    for (;;) {
        SKIP_WS();
        if (i >= len || s[i] != '"')
            return false;
        size_t k0 = ++i;
        while (i < len && s[i] != '"')
            i += s[i] == '\\' ? 2 : 1;
        size_t k1 = i++;
        SKIP_WS();
        if (i >= len || s[i++] != ':')
            return false;
        SKIP_WS();
        size_t v0 = i;
        int depth = 0;
        bool in_str = false;
        for (; i < len; i++) {
            char c = s[i];
            if (in_str) {
                if (c == '\\')
                    i++;
                else if (c == '"')
                    in_str = false;
                continue;
            }
            if (c == '"')
                in_str = true;
            else if (c == '{' || c == '[')
                depth++;
            else if ((c == '}' || c == ']') && depth-- == 0)
                break;
            else if (c == ',' && depth == 0)
                break;
        }
        if (k1 - k0 == klen && !memcmp(s + k0, key, klen)) {
            size_t v1 = i;
            while (v1 > v0 && (s[v1 - 1] == ' ' || s[v1 - 1] == '\t' || s[v1 - 1] == '\n' ||
                               s[v1 - 1] == '\r'))
                v1--;
            *val = s + v0;
            *vlen = v1 - v0;
            return true;
        }
        if (i >= len || s[i] != ',')
            return false;
        i++;
    }
#undef SKIP_WS
}

/* ---- typed field getters: absent -> leave default; wrong type / range -> error ------------ */

const cJSON *ork__srv_field(const cJSON *o, const char *name)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, name);
    return (f && !cJSON_IsNull(f)) ? f : NULL;
}

int ork__srv_get_bool(const cJSON *o, const char *name, bool *dst, struct srv_error *err)
{
    const cJSON *f = ork__srv_field(o, name);
    if (!f)
        return 0;
    if (!cJSON_IsBool(f))
        return BAD("'%s' must be a boolean", name);
    *dst = cJSON_IsTrue(f);
    return 0;
}

static int get_float(const cJSON *o, const char *name, double lo, double hi, float *dst,
                     struct srv_error *err)
{
    const cJSON *f = ork__srv_field(o, name);
    if (!f)
        return 0;
    if (!cJSON_IsNumber(f))
        return BAD("'%s' must be a number", name);
    double v = f->valuedouble;
    if (!isfinite(v) || v < lo || v > hi)
        return BAD("'%s' = %g is out of range [%g, %g]", name, v, lo, hi);
    *dst = (float)v;
    return 0;
}

static int get_int(const cJSON *o, const char *name, double lo, double hi, int32_t *dst,
                   struct srv_error *err)
{
    const cJSON *f = ork__srv_field(o, name);
    if (!f)
        return 0;
    if (!cJSON_IsNumber(f))
        return BAD("'%s' must be an integer", name);
    double v = f->valuedouble;
    if (!isfinite(v) || v != floor(v))
        return BAD("'%s' must be an integer", name);
    if (v < lo || v > hi)
        return BAD("'%s' = %.0f is out of range [%.0f, %.0f]", name, v, lo, hi);
    *dst = (int32_t)v;
    return 0;
}

int ork__srv_dup_string(const cJSON *f, const char *name, char **dst, struct srv_error *err)
{
    size_t len = strlen(f->valuestring);
    if (!ork__srv_utf8_valid(f->valuestring, len))
        return BAD("'%s' is not valid UTF-8", name);
    if (!(*dst = ork_strndup(f->valuestring, len)))
        return ork__srv_errorf(err, 500, "server_error", "out of memory");
    return 0;
}

static int get_token_array(const cJSON *a, const char *name, int32_t n_vocab, int32_t **ids,
                           int32_t *n, struct srv_error *err)
{
    int cnt = cJSON_GetArraySize(a);
    *ids = ork_malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof(int32_t));
    if (!*ids)
        return ork__srv_errorf(err, 500, "server_error", "out of memory");
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, a) {
        if (!cJSON_IsNumber(e) || e->valuedouble != floor(e->valuedouble))
            return BAD("'%s'[%d] must be an integer token id", name, i);
        if (e->valuedouble < 0 || e->valuedouble >= (double)n_vocab)
            return BAD("'%s'[%d] = %.0f is outside the vocabulary [0, %d)", name, i,
                       e->valuedouble, n_vocab);
        (*ids)[i++] = (int32_t)e->valuedouble;
    }
    *n = i;
    return 0;
}

static int add_prompt(const cJSON *f, const char *name, int32_t n_vocab, struct srv_req *r,
                      struct srv_error *err)
{
    struct srv_prompt *p = &r->prompts[r->n_prompts++];
    if (cJSON_IsString(f)) {
        if (!f->valuestring[0])
            return BAD("'%s' is empty", name);
        return ork__srv_dup_string(f, name, &p->text, err);
    }
    if (cJSON_IsArray(f)) {
        int ret = get_token_array(f, name, n_vocab, &p->ids, &p->n_ids, err);
        if (ret < 0)
            return ret;
        if (p->n_ids == 0)
            return BAD("'%s' is empty", name);
        return 0;
    }
    return BAD("'%s' must be a string, an array of token ids, or an array of those", name);
}

/* "prompt" (or an embedding input): a string, an array of token ids, or an array of several
 * of those (one result per prompt). Strings and ids mixed in one prompt are refused. */
static int get_prompts(const cJSON *o, const char *name, int32_t n_vocab, struct srv_req *r,
                       struct srv_error *err)
{
    const cJSON *f = ork__srv_field(o, name);
    if (!f)
        return BAD("'%s' is required", name);
    bool many = cJSON_IsArray(f) && f->child &&
                (cJSON_IsString(f->child) || cJSON_IsArray(f->child));
    int n = many ? cJSON_GetArraySize(f) : 1;
    if (n > SRV_MAX_PROMPTS)
        return BAD("'%s' has more than %d prompts", name, SRV_MAX_PROMPTS);
    if (!(r->prompts = ork_calloc((size_t)n, sizeof(*r->prompts))))
        return ork__srv_errorf(err, 500, "server_error", "out of memory");
    r->prompt_array = many && n > 1;
    if (!many)
        return add_prompt(f, name, n_vocab, r, err);
    const cJSON *e;
    cJSON_ArrayForEach(e, f) {
        if (!cJSON_IsString(e) && !cJSON_IsArray(e))
            return BAD("'%s'[%d] must be a string or an array of token ids (strings and ids "
                       "cannot be mixed in one prompt)", name, r->n_prompts);
        int ret = add_prompt(e, name, n_vocab, r, err);
        if (ret < 0)
            return ret;
    }
    return 0;
}

static int get_stops(const cJSON *o, struct srv_req *r, struct srv_error *err)
{
    const cJSON *f = ork__srv_field(o, "stop");
    if (!f)
        return 0;
    if (cJSON_IsString(f)) {
        if (!f->valuestring[0])
            return 0;
        if (strlen(f->valuestring) > SRV_MAX_STOP_LEN)
            return BAD("'stop' is longer than %d bytes", SRV_MAX_STOP_LEN);
        r->n_stops = 1;
        return ork__srv_dup_string(f, "stop", &r->stops[0], err);
    }
    if (!cJSON_IsArray(f))
        return BAD("'stop' must be a string or an array of strings");
    if (cJSON_GetArraySize(f) > SRV_MAX_STOPS)
        return BAD("'stop' has more than %d strings", SRV_MAX_STOPS);
    const cJSON *e;
    cJSON_ArrayForEach(e, f) {
        if (!cJSON_IsString(e))
            return BAD("'stop'[%zu] must be a string", r->n_stops);
        if (!e->valuestring[0])
            continue;   /* an empty stop string would stop immediately; ignore it */
        if (strlen(e->valuestring) > SRV_MAX_STOP_LEN)
            return BAD("'stop'[%zu] is longer than %d bytes", r->n_stops, SRV_MAX_STOP_LEN);
        int ret = ork__srv_dup_string(e, "stop", &r->stops[r->n_stops], err);
        if (ret < 0)
            return ret;
        r->n_stops++;
    }
    return 0;
}

/* OpenAI message content: a string, or an array of {"type": "text", "text": ...} parts. */
static int get_content(const cJSON *c, size_t idx, char **dst, struct srv_error *err)
{
    if (cJSON_IsString(c))
        return ork__srv_dup_string(c, "messages[].content", dst, err);
    if (!cJSON_IsArray(c))
        return BAD("'messages'[%zu].content must be a string or an array of text parts", idx);
    size_t total = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, c) {
        const cJSON *ty = cJSON_GetObjectItemCaseSensitive(p, "type");
        const cJSON *tx = cJSON_GetObjectItemCaseSensitive(p, "text");
        if (!cJSON_IsObject(p) || !cJSON_IsString(ty) || strcmp(ty->valuestring, "text") ||
            !cJSON_IsString(tx))
            return BAD("'messages'[%zu].content: only parts of type \"text\" are supported", idx);
        total += strlen(tx->valuestring);
    }
    char *s = ork_malloc(total + 1);
    if (!s)
        return ork__srv_errorf(err, 500, "server_error", "out of memory");
    size_t n = 0;
    cJSON_ArrayForEach(p, c) {
        const cJSON *tx = cJSON_GetObjectItemCaseSensitive(p, "text");
        size_t l = strlen(tx->valuestring);
        memcpy(s + n, tx->valuestring, l);
        n += l;
    }
    s[n] = 0;
    *dst = s;
    if (!ork__srv_utf8_valid(s, n))
        return BAD("'messages'[%zu].content is not valid UTF-8", idx);
    return 0;
}

/* An unformatted copy of a JSON value (ork_malloc'd). */
static int get_messages(const cJSON *o, struct srv_req *r, struct srv_error *err)
{
    const cJSON *f = ork__srv_field(o, "messages");
    if (!f)
        return BAD("'messages' is required");
    if (!cJSON_IsArray(f))
        return BAD("'messages' must be an array");
    int n = cJSON_GetArraySize(f);
    if (n < 1)
        return BAD("'messages' is empty");
    if (n > SRV_MAX_MESSAGES)
        return BAD("'messages' has more than %d entries", SRV_MAX_MESSAGES);
    if (!(r->msgs = ork_calloc((size_t)n, sizeof(*r->msgs))))
        return ork__srv_errorf(err, 500, "server_error", "out of memory");
    const cJSON *m;
    cJSON_ArrayForEach(m, f) {
        size_t i = r->n_msgs;
        if (!cJSON_IsObject(m))
            return BAD("'messages'[%zu] must be an object", i);
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
        const cJSON *content = ork__srv_field(m, "content");
        if (!cJSON_IsString(role))
            return BAD("'messages'[%zu].role must be a string", i);
        if (strcmp(role->valuestring, "system") && strcmp(role->valuestring, "user") &&
            strcmp(role->valuestring, "assistant") && strcmp(role->valuestring, "developer") &&
            strcmp(role->valuestring, "tool"))
            return BAD("'messages'[%zu].role '%.32s' is not system, user, assistant or tool", i,
                       role->valuestring);
        r->n_msgs++;
        /* "developer" is OpenAI's newer name for the system role. */
        const char *rn = strcmp(role->valuestring, "developer") ? role->valuestring : "system";
        if (!(r->msgs[i].role = ork_strdup(rn)))
            return ork__srv_errorf(err, 500, "server_error", "out of memory");
        int ret = ork__srv_get_msg_calls(m, i, &r->msgs[i], err);
        if (ret < 0)
            return ret;
        if (!content) {
            if (!(r->msgs[i].content = ork_strdup("")))
                return ork__srv_errorf(err, 500, "server_error", "out of memory");
            continue;
        }
        if ((ret = get_content(content, i, &r->msgs[i].content, err)) < 0)
            return ret;
    }
    return 0;
}

static int get_sampling(const cJSON *o, struct srv_req *r, struct srv_error *err)
{
    struct ork_sampler_params *s = &r->sampling;
    int ret;
    if ((ret = get_float(o, "temperature", 0.0, SRV_MAX_TEMP, &s->temp, err)) < 0 ||
        (ret = get_int(o, "top_k", 0, INT32_MAX, &s->top_k, err)) < 0 ||
        (ret = get_float(o, "top_p", 0.0, 1.0, &s->top_p, err)) < 0 ||
        (ret = get_float(o, "min_p", 0.0, 1.0, &s->min_p, err)) < 0 ||
        (ret = get_float(o, "repeat_penalty", 0.0, SRV_MAX_PENALTY, &s->repeat_penalty, err)) < 0 ||
        (ret = get_int(o, "repeat_last_n", -1, INT32_MAX, &s->penalty_last_n, err)) < 0 ||
        (ret = get_float(o, "presence_penalty", -SRV_MAX_PENALTY, SRV_MAX_PENALTY,
                         &s->presence_penalty, err)) < 0 ||
        (ret = get_float(o, "frequency_penalty", -SRV_MAX_PENALTY, SRV_MAX_PENALTY,
                         &s->frequency_penalty, err)) < 0)
        return ret;
    return 0;
}

/* "seed": an integer read from the request text itself, all 64 bits (a JSON number parsed as a
 * double would lose those above 2^53). Negative, and 2^64 - 1 (ORK_SEED_RANDOM), mean random,
 * as -1 does for llama-server. */
static int get_seed(const cJSON *o, const char *body, size_t len, struct srv_req *r,
                    struct srv_error *err)
{
    const cJSON *seed = ork__srv_field(o, "seed");
    if (!seed)
        return 0;
    if (!cJSON_IsNumber(seed) || seed->valuedouble != floor(seed->valuedouble))
        return BAD("'seed' must be an integer");
    r->seed_set = true;
    if (seed->valuedouble < 0) {
        r->sampling.seed = ORK_SEED_RANDOM;
        return 0;
    }
    const char *v;
    size_t n;
    char digits[24];
    if (raw_member(body, len, "seed", &v, &n) && n > 0 && n < sizeof digits &&
        strspn(v, "0123456789") >= n) {
        memcpy(digits, v, n);
        digits[n] = 0;
        errno = 0;
        unsigned long long u = strtoull(digits, NULL, 10);
        if (errno == ERANGE)
            return BAD("'seed' is out of range [0, 2^64 - 1]");
        r->sampling.seed = (uint64_t)u;
        return 0;
    }
    /* written as 1e3, 12.0 or with escapes in the key: exact below 2^53 only */
    if (seed->valuedouble >= 9007199254740992.0)
        return BAD("'seed' above 2^53 must be written as an integer literal");
    r->sampling.seed = (uint64_t)seed->valuedouble;
    return 0;
}

/* ---- fields ork knows but does not implement: 400 naming them -------------------------- */

/* When such a field's value is harmless (it asks for what ork does anyway). */
enum neutral {
    NEUTRAL_FALSY,          /* null, false, 0, "", [], {} */
    NEUTRAL_ANY,            /* any value: the field only acts together with a refused one */
    NEUTRAL_ONE,            /* the number 1 (typical_p, best_of) */
    NEUTRAL_NOT_POSITIVE,   /* a number <= 0 (top_n_sigma: -1 = off) */
    NEUTRAL_NONE,           /* "none" (tool_choice, function_call, reasoning_format) */
    NEUTRAL_TEXT_ONLY,      /* ["text"] (modalities) */
};

struct unsupported {
    const char *name;
    enum neutral neutral;
    const char *what;       /* for the message */
};

/* Sources: the OpenAI API reference (chat and completions create) and llama-server's README
 * "POST /completion" (serving-reference.md 1.2). Tool calls ("tools", "tool_choice",
 * "parallel_tool_calls") are honoured on chat (get_tools); OpenAI's deprecated "functions" and
 * "function_call" are not. */
static const struct unsupported unsupported_fields[] = {
    { "functions",             NEUTRAL_FALSY,        "the deprecated functions API; use tools" },
    { "function_call",         NEUTRAL_NONE,         "the deprecated functions API; use tools" },
    { "logit_bias",            NEUTRAL_FALSY,        "logit bias" },
    { "mirostat",              NEUTRAL_FALSY,        "the mirostat sampler" },
    { "mirostat_tau",          NEUTRAL_ANY,          "the mirostat sampler" },
    { "mirostat_eta",          NEUTRAL_ANY,          "the mirostat sampler" },
    { "typical_p",             NEUTRAL_ONE,          "locally typical sampling" },
    { "dynatemp_range",        NEUTRAL_FALSY,        "dynamic temperature" },
    { "dynatemp_exponent",     NEUTRAL_ANY,          "dynamic temperature" },
    { "dry_multiplier",        NEUTRAL_FALSY,        "the DRY sampler" },
    { "dry_base",              NEUTRAL_ANY,          "the DRY sampler" },
    { "dry_allowed_length",    NEUTRAL_ANY,          "the DRY sampler" },
    { "dry_penalty_last_n",    NEUTRAL_ANY,          "the DRY sampler" },
    { "dry_sequence_breakers", NEUTRAL_ANY,          "the DRY sampler" },
    { "xtc_probability",       NEUTRAL_FALSY,        "the XTC sampler" },
    { "xtc_threshold",         NEUTRAL_ANY,          "the XTC sampler" },
    { "top_n_sigma",           NEUTRAL_NOT_POSITIVE, "top-n-sigma sampling" },
    { "samplers",              NEUTRAL_FALSY,        "a custom sampler order" },
    { "min_keep",              NEUTRAL_FALSY,        "min_keep" },
    { "n_indent",              NEUTRAL_FALSY,        "indentation limits" },
    { "t_max_predict_ms",      NEUTRAL_FALSY,        "generation time limits" },
    { "n_cache_reuse",         NEUTRAL_FALSY,        "KV shifting" },
    { "lora",                  NEUTRAL_FALSY,        "LoRA adapters" },
    { "post_sampling_probs",   NEUTRAL_FALSY,        "post-sampling probabilities" },
    { "response_fields",       NEUTRAL_FALSY,        "response projection" },
    { "return_progress",       NEUTRAL_FALSY,        "prompt progress events" },
    { "image_data",            NEUTRAL_FALSY,        "multimodal input" },
    { "multimodal_data",       NEUTRAL_FALSY,        "multimodal input" },
    { "chat_template_kwargs",  NEUTRAL_FALSY,        "template arguments" },
    { "reasoning_format",      NEUTRAL_NONE,         "reasoning extraction" },
    { "reasoning_effort",      NEUTRAL_FALSY,        "reasoning models" },
    { "audio",                 NEUTRAL_FALSY,        "audio output" },
    { "modalities",            NEUTRAL_TEXT_ONLY,    "non-text output" },
    { "prediction",            NEUTRAL_FALSY,        "predicted outputs" },
    { "web_search_options",    NEUTRAL_FALSY,        "web search" },
    { "suffix",                NEUTRAL_FALSY,        "insertion (suffix)" },
    { "echo",                  NEUTRAL_FALSY,        "echoing the prompt" },
    { "best_of",               NEUTRAL_ONE,          "best_of" },
};

static bool is_neutral(const cJSON *f, enum neutral kind)
{
    if (cJSON_IsNull(f))
        return true;
    switch (kind) {
    case NEUTRAL_ANY:
        return true;
    case NEUTRAL_FALSY:
        return cJSON_IsFalse(f) || (cJSON_IsNumber(f) && f->valuedouble == 0) ||
               (cJSON_IsString(f) && !f->valuestring[0]) ||
               ((cJSON_IsArray(f) || cJSON_IsObject(f)) && !f->child);
    case NEUTRAL_ONE:
        return cJSON_IsNumber(f) && f->valuedouble == 1;
    case NEUTRAL_NOT_POSITIVE:
        return cJSON_IsNumber(f) && f->valuedouble <= 0;
    case NEUTRAL_NONE:
        return cJSON_IsString(f) && !strcmp(f->valuestring, "none");
    case NEUTRAL_TEXT_ONLY:
        return cJSON_IsArray(f) && cJSON_GetArraySize(f) == 1 && cJSON_IsString(f->child) &&
               !strcmp(f->child->valuestring, "text");
    }
    return false;
}

static int check_unsupported(const cJSON *o, struct srv_error *err)
{
    for (size_t i = 0; i < sizeof unsupported_fields / sizeof unsupported_fields[0]; i++) {
        const struct unsupported *u = &unsupported_fields[i];
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, u->name);
        if (f && !is_neutral(f, u->neutral))
            return BAD("'%s' is not supported by ork (%s is not implemented)", u->name, u->what);
    }
    return 0;
}

/* Drafted tokens a request may ask for (speculative.h: a step drafts at most 32). */
#define SRV_MAX_SPEC_DRAFT 32

/* llama-server's per-request speculation: "speculative.n_max" and "speculative.n_min" as flat
 * keys, or "speculative": {"n_max", "n_min"}; "speculative.p_min" is accepted and ignored (the
 * server's --draft-p-min applies). Clamped as llama-server does: n_min <= n_max. */
static int get_speculative(const cJSON *o, struct srv_req *r, struct srv_error *err)
{
    int ret;
    float p_min = 0;
    const cJSON *so = ork__srv_field(o, "speculative");
    if (so && !cJSON_IsObject(so))
        return BAD("'speculative' must be an object");
    if ((ret = get_int(o, "speculative.n_max", 0, SRV_MAX_SPEC_DRAFT, &r->spec_n_max, err)) < 0 ||
        (ret = get_int(o, "speculative.n_min", 0, SRV_MAX_SPEC_DRAFT, &r->spec_n_min, err)) < 0 ||
        (ret = get_float(o, "speculative.p_min", 0, 1, &p_min, err)) < 0)
        return ret;
    if (so && ((ret = get_int(so, "n_max", 0, SRV_MAX_SPEC_DRAFT, &r->spec_n_max, err)) < 0 ||
               (ret = get_int(so, "n_min", 0, SRV_MAX_SPEC_DRAFT, &r->spec_n_min, err)) < 0 ||
               (ret = get_float(so, "p_min", 0, 1, &p_min, err)) < 0))
        return ret;
    if (r->spec_n_max >= 0 && r->spec_n_min > r->spec_n_max)
        r->spec_n_min = r->spec_n_max;
    return 0;
}

/* Compile a grammar from GBNF text or a JSON schema (a cJSON node) for field `name`. */
static int compile_grammar(const char *name, const char *gbnf, const cJSON *schema,
                           struct srv_req *r, struct srv_error *err)
{
    int ret;
    if (gbnf) {
        ret = ork_grammar_parse(gbnf, strlen(gbnf), &r->grammar);
    } else {
        char *text = cJSON_PrintUnformatted(schema);
        if (!text)
            return ork__srv_errorf(err, 500, "server_error", "out of memory");
        ret = ork_grammar_from_json_schema(text, strlen(text), &r->grammar);
        cJSON_free(text);
    }
    if (ret == ORK_ENOMEM)
        return ork__srv_errorf(err, 500, "server_error", "out of memory");
    if (ret < 0)
        return BAD("'%s': %s", name, ork_error_describe(ret));
    return 0;
}

/* Constrained output: llama-server's "grammar" (GBNF text) and "json_schema" (a schema), and
 * OpenAI's "response_format" ({"type": "text" | "json_object" | "json_schema", "json_schema":
 * {"schema": ...}}; llama-server also takes {"type": "json_object", "schema": ...}). At most one
 * of them may ask for something. */
static int get_constraint(const cJSON *o, struct srv_req *r, struct srv_error *err)
{
    const cJSON *gr = ork__srv_field(o, "grammar"), *js = ork__srv_field(o, "json_schema");
    const cJSON *rf = ork__srv_field(o, "response_format");
    const char *gbnf = NULL, *which = NULL;
    const cJSON *schema = NULL;
    cJSON *object_schema = NULL;
    int n = 0, ret;
    if (gr) {
        if (!cJSON_IsString(gr))
            return BAD("'grammar' must be a string (GBNF)");
        if (gr->valuestring[0])
            gbnf = gr->valuestring, which = "grammar", n++;
    }
    if (js) {
        if (!cJSON_IsObject(js) && !cJSON_IsBool(js))
            return BAD("'json_schema' must be a JSON schema (an object)");
        schema = js, which = "json_schema", n++;
    }
    if (rf) {
        const cJSON *ty = cJSON_GetObjectItemCaseSensitive(rf, "type");
        if (!cJSON_IsObject(rf) || !cJSON_IsString(ty))
            return BAD("'response_format' must be an object with a string 'type'");
        if (!strcmp(ty->valuestring, "json_object")) {
            const cJSON *sc = cJSON_GetObjectItemCaseSensitive(rf, "schema");
            if (sc && !cJSON_IsNull(sc)) {
                schema = sc;
            } else {
                object_schema = cJSON_Parse(ORK_JSON_OBJECT_SCHEMA);
                if (!object_schema)
                    return ork__srv_errorf(err, 500, "server_error", "out of memory");
                schema = object_schema;
            }
            which = "response_format", n++;
        } else if (!strcmp(ty->valuestring, "json_schema")) {
            const cJSON *j = cJSON_GetObjectItemCaseSensitive(rf, "json_schema");
            const cJSON *sc = cJSON_IsObject(j) ? cJSON_GetObjectItemCaseSensitive(j, "schema")
                                                : NULL;
            if (!sc || (!cJSON_IsObject(sc) && !cJSON_IsBool(sc)))
                return BAD("'response_format' of type \"json_schema\" needs "
                           "'json_schema': {\"schema\": {...}}");
            schema = sc, which = "response_format", n++;
        } else if (strcmp(ty->valuestring, "text")) {
            return BAD("'response_format'.type must be \"text\", \"json_object\" or "
                       "\"json_schema\"");
        }
    }
    if (n > 1) {
        cJSON_Delete(object_schema);
        return BAD("only one of 'grammar', 'json_schema' and 'response_format' may constrain "
                   "the output");
    }
    ret = n ? compile_grammar(which, gbnf, schema, r, err) : 0;
    cJSON_Delete(object_schema);
    return ret;
}

/* OpenAI log-probabilities: chat "logprobs": bool + "top_logprobs": 0..N; completions
 * "logprobs": 0..N (alternatives per token). */
static int get_oai_logprobs(const cJSON *o, enum srv_endpoint ep, struct srv_req *r,
                            struct srv_error *err)
{
    const cJSON *lp = ork__srv_field(o, "logprobs");
    int ret;
    if (ep == SRV_EP_OAI_CHAT) {
        bool want = false;
        if ((ret = ork__srv_get_bool(o, "logprobs", &want, err)) < 0 ||
            (ret = get_int(o, "top_logprobs", 0, SRV_MAX_N_PROBS, &r->n_probs, err)) < 0)
            return ret;
        if (ork__srv_field(o, "top_logprobs") && !want)
            return BAD("'top_logprobs' needs 'logprobs': true");
        r->want_probs = want;
        return 0;
    }
    if (!lp)
        return 0;
    if ((ret = get_int(o, "logprobs", 0, SRV_MAX_N_PROBS, &r->n_probs, err)) < 0)
        return ret;
    r->want_probs = true;
    return 0;
}

static int parse_generation(const cJSON *o, enum srv_endpoint ep, int32_t n_vocab,
                            const char *body, size_t len, struct srv_req *r,
                            struct srv_error *err)
{
    int ret;
    bool oai = ep != SRV_EP_COMPLETION;
    if (oai) {
        r->sampling.temp = SRV_OAI_DEFAULT_TEMP;
        r->sampling.top_p = SRV_OAI_DEFAULT_TOP_P;
    }
    if ((ret = check_unsupported(o, err)) < 0 || (ret = get_constraint(o, r, err)) < 0)
        return ret;
    if (ep == SRV_EP_OAI_CHAT) {
        if ((ret = ork__srv_get_tools(o, r, err)) < 0)
            return ret;
        if ((r->tool_choice == SRV_TOOLS_REQUIRED || r->tool_choice == SRV_TOOLS_NAMED) &&
            r->grammar)
            return BAD("'tool_choice' that forces a tool call cannot be combined with "
                       "'grammar', 'json_schema' or 'response_format'");
        ret = get_messages(o, r, err);
    } else {
        static const char *const chat_only[] = { "tools", "tool_choice", "parallel_tool_calls" };
        for (size_t i = 0; i < sizeof chat_only / sizeof chat_only[0]; i++) {
            const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, chat_only[i]);
            if (f && !is_neutral(f, NEUTRAL_FALSY) && !is_neutral(f, NEUTRAL_NONE))
                return BAD("'%s' is only supported on /v1/chat/completions", chat_only[i]);
        }
        ret = get_prompts(o, "prompt", n_vocab, r, err);
    }
    if (ret < 0)
        return ret;
    if ((ret = get_sampling(o, r, err)) < 0 || (ret = get_seed(o, body, len, r, err)) < 0 ||
        (ret = get_stops(o, r, err)) < 0 ||
        (ret = ork__srv_get_bool(o, "stream", &r->stream, err)) < 0 ||
        (ret = ork__srv_get_bool(o, "cache_prompt", &r->cache_prompt, err)) < 0 ||
        (ret = ork__srv_get_bool(o, "ignore_eos", &r->ignore_eos, err)) < 0 ||
        (ret = ork__srv_get_bool(o, "parse_special", &r->parse_special, err)) < 0 ||
        (ret = get_int(o, "id_slot", -1, INT32_MAX, &r->id_slot, err)) < 0)
        return ret;
    if ((ret = get_speculative(o, r, err)) < 0)
        return ret;
    /* "n" (OpenAI) and "n_cmpl" (llama-server) */
    if ((ret = get_int(o, "n_cmpl", 1, SRV_MAX_CHOICES, &r->n_choices, err)) < 0 ||
        (ret = get_int(o, "n", 1, SRV_MAX_CHOICES, &r->n_choices, err)) < 0)
        return ret;
    if (oai) {
        /* max_completion_tokens is the newer OpenAI name; max_tokens the older one. */
        if ((ret = get_int(o, "max_tokens", -1, SRV_MAX_N_PREDICT, &r->n_predict, err)) < 0 ||
            (ret = get_int(o, "max_completion_tokens", -1, SRV_MAX_N_PREDICT, &r->n_predict,
                           err)) < 0 ||
            (ret = get_oai_logprobs(o, ep, r, err)) < 0)
            return ret;
        const cJSON *so = ork__srv_field(o, "stream_options");
        if (so) {
            if (!cJSON_IsObject(so))
                return BAD("'stream_options' must be an object");
            if ((ret = ork__srv_get_bool(so, "include_usage", &r->include_usage, err)) < 0)
                return ret;
        }
        const cJSON *model = ork__srv_field(o, "model");
        if (model) {
            if (!cJSON_IsString(model))
                return BAD("'model' must be a string");
            if ((ret = ork__srv_dup_string(model, "model", &r->model, err)) < 0)
                return ret;
        }
    } else {
        if ((ret = get_int(o, "n_predict", -1, SRV_MAX_N_PREDICT, &r->n_predict, err)) < 0 ||
            (ret = get_int(o, "max_tokens", -1, SRV_MAX_N_PREDICT, &r->n_predict, err)) < 0 ||
            (ret = get_int(o, "n_probs", 0, SRV_MAX_N_PROBS, &r->n_probs, err)) < 0 ||
            (ret = ork__srv_get_bool(o, "return_tokens", &r->return_tokens, err)) < 0)
            return ret;
        r->want_probs = r->n_probs > 0;
    }
    if (r->n_prompts * r->n_choices > SRV_MAX_PROMPTS)
        return BAD("%d prompts x 'n' %d is more than %d results per request", r->n_prompts,
                   r->n_choices, SRV_MAX_PROMPTS);
    return 0;
}

/* /embedding ("content", or "input" as OpenAI) and /v1/embeddings ("input",
 * "encoding_format" float|base64, "model"). */
static int parse_embedding(const cJSON *o, enum srv_endpoint ep, int32_t n_vocab,
                           struct srv_req *r, struct srv_error *err)
{
    const char *name = ep == SRV_EP_EMBEDDING && ork__srv_field(o, "content") ? "content" : "input";
    int ret = get_prompts(o, name, n_vocab, r, err);
    if (ret < 0)
        return ret;
    const cJSON *fmt = ork__srv_field(o, "encoding_format");
    if (fmt) {
        if (!cJSON_IsString(fmt) ||
            (strcmp(fmt->valuestring, "float") && strcmp(fmt->valuestring, "base64")))
            return BAD("'encoding_format' must be \"float\" or \"base64\"");
        r->oai_b64 = !strcmp(fmt->valuestring, "base64");
    }
    const cJSON *dims = ork__srv_field(o, "dimensions");
    if (dims)
        return BAD("'dimensions' is not supported by ork (embeddings have the model's size)");
    const cJSON *model = ork__srv_field(o, "model");
    if (model && cJSON_IsString(model) && (ret = ork__srv_dup_string(model, "model", &r->model, err)) < 0)
        return ret;
    return 0;
}

/* A /slots save or restore file name: one path component, no leading dot. */
static int parse_slot_action(const cJSON *o, struct srv_req *r, struct srv_error *err)
{
    const cJSON *f = ork__srv_field(o, "filename");
    if (!f)
        return 0;   /* erase needs none; the handler checks save and restore */
    if (!cJSON_IsString(f))
        return BAD("'filename' must be a string");
    const char *n = f->valuestring;
    if (!n[0] || strlen(n) > SRV_MAX_FILENAME || n[0] == '.' || strchr(n, '/') ||
        strchr(n, '\\'))
        return BAD("'filename' must be a plain file name (no '/', no leading '.', at most %d "
                   "bytes)", SRV_MAX_FILENAME);
    return ork__srv_dup_string(f, "filename", &r->filename, err);
}

void ork__srv_req_free(struct srv_req *r)
{
    ork_free(r->prompt_text);
    ork_free(r->prompt_ids);
    for (int32_t i = 0; i < r->n_prompts; i++) {
        ork_free(r->prompts[i].text);
        ork_free(r->prompts[i].ids);
    }
    ork_free(r->prompts);
    for (size_t i = 0; r->msgs && i < r->n_msgs; i++) {
        ork_free(r->msgs[i].role);
        ork_free(r->msgs[i].content);
        for (size_t k = 0; k < r->msgs[i].n_calls; k++) {
            ork_free(r->msgs[i].calls[k].name);
            ork_free(r->msgs[i].calls[k].arguments);
        }
        ork_free(r->msgs[i].calls);
    }
    for (size_t i = 0; i < r->n_tools; i++) {
        ork_free(r->tools[i].name);
        ork_free(r->tools[i].json);
        ork_free(r->tools[i].gbnf);
    }
    ork_free(r->tools);
    ork_free(r->msgs);
    for (size_t i = 0; i < r->n_stops; i++)
        ork_free(r->stops[i]);
    ork_free(r->model);
    ork_free(r->filename);
    ork_grammar_free(r->grammar);
    memset(r, 0, sizeof(*r));
}

int ork__srv_req_parse(enum srv_endpoint ep, const char *body, size_t len, int32_t n_vocab,
                       struct srv_req *r, struct srv_error *err)
{
    memset(r, 0, sizeof(*r));
    r->ep = ep;
    ork_sampler_params_default(&r->sampling);
    r->n_predict = -1;
    r->cache_prompt = true;
    r->parse_special = true;
    r->n_choices = 1;
    r->id_slot = -1;
    r->spec_n_max = -1;
    r->spec_n_min = -1;
    if (len == 0 || !body)
        return BAD("the request body is empty (a JSON object is required)");
    if (!ork__srv_utf8_valid(body, len))
        return BAD("the request body is not valid UTF-8");
    if (memchr(body, 0, len))
        return BAD("the request body contains a NUL byte");
    enum json_scan sc = json_scan(body, len);
    if (sc == JSON_SCAN_DEEP)
        return BAD("the request JSON is nested deeper than %d levels", SRV_MAX_JSON_DEPTH);
    if (sc == JSON_SCAN_NUL_ESCAPE)
        return BAD("a string contains \\u0000 (NUL characters are not accepted)");
    const char *end = NULL;
    cJSON *o = cJSON_ParseWithLengthOpts(body, len, &end, 0);
    if (!o) {
        size_t off = end && end >= body ? (size_t)(end - body) : 0;
        return BAD("malformed JSON near byte %zu", off);
    }
    /* Only whitespace may follow the value. */
    for (const char *p = end; p && p < body + len; p++)
        if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n') {
            cJSON_Delete(o);
            return BAD("malformed JSON: trailing data at byte %zu", (size_t)(p - body));
        }
    int ret = 0;
    if (!cJSON_IsObject(o)) {
        ret = BAD("the request body must be a JSON object");
        goto out;
    }
    switch (ep) {
    case SRV_EP_COMPLETION:
    case SRV_EP_OAI_COMPLETION:
    case SRV_EP_OAI_CHAT:
        ret = parse_generation(o, ep, n_vocab, body, len, r, err);
        break;
    case SRV_EP_EMBEDDING:
    case SRV_EP_OAI_EMBEDDING:
        ret = parse_embedding(o, ep, n_vocab, r, err);
        break;
    case SRV_EP_APPLY_TEMPLATE:
        if ((ret = ork__srv_get_tools(o, r, err)) == 0)
            ret = get_messages(o, r, err);
        break;
    case SRV_EP_SLOT_ACTION:
        ret = parse_slot_action(o, r, err);
        break;
    case SRV_EP_PROPS:
        break;   /* llama-server: "no options yet" */
    case SRV_EP_TOKENIZE: {
        const cJSON *c = ork__srv_field(o, "content");
        if (!c || !cJSON_IsString(c)) {
            ret = BAD("'content' is required and must be a string");
            break;
        }
        if ((ret = ork__srv_dup_string(c, "content", &r->prompt_text, err)) < 0 ||
            (ret = ork__srv_get_bool(o, "add_special", &r->add_special, err)) < 0 ||
            (ret = ork__srv_get_bool(o, "parse_special", &r->parse_special, err)) < 0 ||
            (ret = ork__srv_get_bool(o, "with_pieces", &r->with_pieces, err)) < 0)
            break;
        break;
    }
    case SRV_EP_DETOKENIZE: {
        const cJSON *t = ork__srv_field(o, "tokens");
        if (!t || !cJSON_IsArray(t)) {
            ret = BAD("'tokens' is required and must be an array of token ids");
            break;
        }
        ret = get_token_array(t, "tokens", n_vocab, &r->prompt_ids, &r->n_prompt_ids, err);
        break;
    }
    default:
        ret = BAD("unknown endpoint");
        break;
    }
out:
    cJSON_Delete(o);
    return ret;
}
