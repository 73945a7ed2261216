/* json_schema.c -- JSON schema to GBNF (see ork-engine/grammar.h for what is supported).
 *
 * Every schema node becomes one rule (named after its path, "root", "root-name", "root-3")
 * whose text is the JSON value without surrounding blanks; containers put `ws` after "{", "[",
 * "," and ":" and before the closing bracket. Shared pieces (string, number, ws, ...) are
 * emitted once, when used. Objects list their properties in the schema's order: the required
 * ones always, each optional one at most once, in order, and no others (additionalProperties
 * counts as false when properties are given: what structured-output clients expect). A schema
 * with no constraints is any JSON value. $ref "#/$defs/X" (or "#/definitions/X") becomes a rule
 * of its own, so recursive schemas work.
 *
 * Bounds keep the grammar's text finite: blank runs are at most JSONG_MAX_WS characters and
 * numbers at most JSONG_MAX_DIGITS digits, so a model cannot loop inside a number forever.
 * This file writes text only; grammar.c parses it. */
#include <ork-engine/grammar.h>

#include "tokenizer/tok_internal.h"

#include <ork/alloc.h>
#include <ork/error.h>

#include <cjson/cJSON.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Blanks between two tokens: nothing, one space, or a newline and an indentation of at most
 * JSONG_MAX_INDENT spaces or tabs (10 levels of the 2-space indentation JSON.stringify(v, null,
 * 2) and Python's json.dumps(indent=2) write, 5 of 4-space); so a model cannot spend its
 * tokens on blanks, and compact or pretty-printed JSON both fit. */
#define JSONG_MAX_INDENT 20
#define JSONG_MAX_DIGITS 15      /* digits of an integer part or fraction (doubles: 15-17) */
#define JSONG_MAX_DEPTH 64       /* schema nesting followed */
#define JSONG_MAX_PROPS 64       /* properties of one object (optional ones cost O(n^2)) */

struct buf {
    char *s;
    size_t n, cap;
    bool oom;
};

struct conv {
    const cJSON *doc;            /* the whole schema, for $ref */
    struct buf rules;            /* the grammar text */
    unsigned used;               /* shared rules emitted (bit per enum prim) */
    char refs[64][160];          /* $ref targets already given a rule */
    int n_refs;
    int depth;
};

enum prim {
    PRIM_WS = 1u << 0, PRIM_STRING = 1u << 1, PRIM_NUMBER = 1u << 2, PRIM_INTEGER = 1u << 3,
    PRIM_VALUE = 1u << 4, PRIM_CHAR = 1u << 5, PRIM_DATE = 1u << 6, PRIM_TIME = 1u << 7,
    PRIM_UUID = 1u << 8,
};

static void bput(struct buf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n + 1 > b->cap) {
        size_t c = b->cap ? b->cap : 1024;
        while (c < b->n + n + 1)
            c *= 2;
        char *t = ork_realloc(b->s, c);
        if (!t) {
            b->oom = true;
            return;
        }
        b->s = t, b->cap = c;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
}

static void bputs(struct buf *b, const char *s)
{
    bput(b, s, strlen(s));
}

static void bprintf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bprintf(struct buf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0)
        bput(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* A GBNF string literal for the bytes s[0..n). */
static void put_literal(struct buf *b, const char *s, size_t n)
{
    bputs(b, "\"");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            char e[2] = { '\\', (char)c };
            bput(b, e, 2);
        } else if (c < 0x20 || c == 0x7f) {
            bprintf(b, "\\x%02X", c);
        } else {
            bput(b, (const char *)&c, 1);
        }
    }
    bputs(b, "\"");
}

/* Shared rules, emitted at the end for the ones used. */
static void put_prims(struct conv *c)
{
    struct buf *b = &c->rules;
    if (c->used & PRIM_VALUE)
        c->used |= PRIM_STRING | PRIM_NUMBER | PRIM_WS;
    if (c->used & (PRIM_STRING | PRIM_DATE | PRIM_TIME | PRIM_UUID))
        c->used |= PRIM_CHAR;
    if (c->used & PRIM_NUMBER)
        c->used |= PRIM_INTEGER;
    if (c->used & PRIM_WS)
        bprintf(b, "ws ::= (\" \" | \"\\n\" [ \\t]{0,%d})?\n", JSONG_MAX_INDENT);
    if (c->used & PRIM_CHAR)
        bputs(b, "char ::= [^\"\\\\\\x00-\\x1F\\x7F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" "
                "[0-9a-fA-F]{4})\n");
    if (c->used & PRIM_STRING)
        bputs(b, "string ::= \"\\\"\" char* \"\\\"\"\n");
    if (c->used & PRIM_INTEGER)
        bprintf(b, "integer ::= \"-\"? (\"0\" | [1-9] [0-9]{0,%d})\n", JSONG_MAX_DIGITS - 1);
    if (c->used & PRIM_NUMBER)
        bprintf(b, "number ::= integer (\".\" [0-9]{1,%d})? ([eE] [-+]? [0-9]{1,3})?\n",
                JSONG_MAX_DIGITS);
    if (c->used & PRIM_VALUE) {
        bputs(b, "value ::= object | array | string | number | \"true\" | \"false\" | \"null\"\n");
        bputs(b, "object ::= \"{\" ws (string ws \":\" ws value ws (\",\" ws string ws \":\" ws "
                "value ws)*)? \"}\"\n");
        bputs(b, "array ::= \"[\" ws (value ws (\",\" ws value ws)*)? \"]\"\n");
    }
    if (c->used & (PRIM_DATE))
        bputs(b, "date ::= [0-9]{4} \"-\" (\"0\" [1-9] | \"1\" [0-2]) \"-\" (\"0\" [1-9] | "
                "[12] [0-9] | \"3\" [01])\n");
    if (c->used & (PRIM_TIME))
        bputs(b, "time ::= ([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9] \":\" ([0-5] [0-9] | \"60\") "
                "(\".\" [0-9]{1,6})? (\"Z\" | [+-] ([01] [0-9] | \"2\" [0-3]) \":\" [0-5] "
                "[0-9])\n");
    if (c->used & PRIM_UUID)
        bputs(b, "uuid ::= [0-9a-fA-F]{8} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" "
                "[0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{12}\n");
}

static int rule(struct conv *c, const cJSON *s, const char *name);

/* Keywords we cannot honour: refused by name rather than ignored. */
static const char *const refused[] = {
    "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    "uniqueItems", "patternProperties", "propertyNames", "minProperties", "maxProperties",
    "not", "if", "then", "else", "dependentRequired", "dependentSchemas", "contains",
    "unevaluatedProperties", "unevaluatedItems",
};

static int check_refused(const cJSON *s, const char *name)
{
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
        if (cJSON_GetObjectItemCaseSensitive(s, refused[i]))
            return ork_errorf(ORK_EUNSUPPORTED, "json schema: %s: '%s' is not supported",
                              name, refused[i]);
    return 0;
}

/* A JSON value as a GBNF literal (enum, const): its compact serialisation. */
static int put_json_literal(struct conv *c, const cJSON *v)
{
    char *t = cJSON_PrintUnformatted(v);
    if (!t)
        return ork_errorf(ORK_ENOMEM, "json schema: out of memory");
    put_literal(&c->rules, t, strlen(t));
    cJSON_free(t);
    return 0;
}

static int get_count(const cJSON *s, const char *key, const char *name, long *out)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(s, key);
    if (!f)
        return 0;
    if (!cJSON_IsNumber(f) || f->valuedouble < 0 || f->valuedouble > ORK_GRAMMAR_MAX_REPEAT ||
        f->valuedouble != (double)(long)f->valuedouble)
        return ork_errorf(ORK_EFORMAT, "json schema: %s: '%s' must be an integer in [0, %d]",
                          name, key, ORK_GRAMMAR_MAX_REPEAT);
    *out = (long)f->valuedouble;
    return 0;
}

/* x repeated min..max times (max < 0: unbounded), separated by sep (NULL: none). */
static void put_repeat(struct buf *b, const char *x, const char *sep, long min, long max)
{
    if (max == 0)
        return;
    if (min == 0)
        bputs(b, "(");
    bprintf(b, "%s", x);
    if (max != 1) {
        bprintf(b, " (%s%s%s)", sep ? sep : "", sep ? " " : "", x);
        if (max < 0)
            bprintf(b, "{%ld,}", min > 1 ? min - 1 : 0);
        else
            bprintf(b, "{%ld,%ld}", min > 1 ? min - 1 : 0, max - 1);
    }
    if (min == 0)
        bputs(b, ")?");
}

static int string_rule(struct conv *c, const cJSON *s, const char *name)
{
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(s, "format");
    struct buf *b = &c->rules;
    if (cJSON_IsString(fmt)) {
        const char *f = fmt->valuestring;
        if (!strcmp(f, "date") || !strcmp(f, "time") || !strcmp(f, "date-time") ||
            !strcmp(f, "uuid")) {
            c->used |= !strcmp(f, "uuid") ? PRIM_UUID : !strcmp(f, "date") ? PRIM_DATE
                       : !strcmp(f, "time") ? PRIM_TIME : PRIM_DATE | PRIM_TIME;
            bprintf(b, "%s ::= \"\\\"\" %s \"\\\"\"\n", name,
                    !strcmp(f, "date-time") ? "date \"T\" time" : f);
            return 0;
        }
    }
    long min = 0, max = -1;
    int ret;
    if ((ret = get_count(s, "minLength", name, &min)) < 0 ||
        (ret = get_count(s, "maxLength", name, &max)) < 0)
        return ret;
    if (max >= 0 && max < min)
        return ork_errorf(ORK_EFORMAT, "json schema: %s: maxLength below minLength", name);
    c->used |= PRIM_CHAR;
    bprintf(b, "%s ::= \"\\\"\" ", name);
    if (max < 0)
        bprintf(b, "char{%ld,}", min);
    else
        bprintf(b, "char{%ld,%ld}", min, max);
    bputs(b, " \"\\\"\"\n");
    return 0;
}

static int array_rule(struct conv *c, const cJSON *s, const char *name)
{
    long min = 0, max = -1;
    int ret;
    if ((ret = get_count(s, "minItems", name, &min)) < 0 ||
        (ret = get_count(s, "maxItems", name, &max)) < 0)
        return ret;
    if (max >= 0 && max < min)
        return ork_errorf(ORK_EFORMAT, "json schema: %s: maxItems below minItems", name);
    const cJSON *prefix = cJSON_GetObjectItemCaseSensitive(s, "prefixItems");
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(s, "items");
    char sub[160];
    if (cJSON_IsArray(prefix)) {   /* a tuple: exactly these items */
        int n = cJSON_GetArraySize(prefix), k = 0;
        const cJSON *it;
        cJSON_ArrayForEach(it, prefix) {
            snprintf(sub, sizeof sub, "%s-%d", name, k++);
            if ((ret = rule(c, it, sub)) < 0)
                return ret;
        }
        bprintf(&c->rules, "%s ::= \"[\" ws", name);
        for (k = 0; k < n; k++)
            bprintf(&c->rules, "%s %s-%d ws", k ? " \",\" ws" : "", name, k);
        bputs(&c->rules, " \"]\"\n");
        c->used |= PRIM_WS;
        return 0;
    }
    snprintf(sub, sizeof sub, "%s-item", name);
    if (items && !cJSON_IsBool(items)) {
        if ((ret = rule(c, items, sub)) < 0)
            return ret;
    } else {
        c->used |= PRIM_VALUE;
        snprintf(sub, sizeof sub, "value");
    }
    char x[200];
    snprintf(x, sizeof x, "%s ws", sub);
    c->used |= PRIM_WS;
    bprintf(&c->rules, "%s ::= \"[\" ws ", name);
    put_repeat(&c->rules, x, "\",\" ws", min, max);
    bputs(&c->rules, " \"]\"\n");
    return 0;
}

static bool is_required(const cJSON *req, const char *key)
{
    const cJSON *r;
    cJSON_ArrayForEach(r, req)
        if (cJSON_IsString(r) && !strcmp(r->valuestring, key))
            return true;
    return false;
}

static int object_rule(struct conv *c, const cJSON *s, const char *name)
{
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(s, "properties");
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(s, "required");
    const cJSON *addl = cJSON_GetObjectItemCaseSensitive(s, "additionalProperties");
    if (req && !cJSON_IsArray(req))
        return ork_errorf(ORK_EFORMAT, "json schema: %s: 'required' must be an array", name);
    if (!props || !props->child) {
        if (addl && !cJSON_IsBool(addl))
            return ork_errorf(ORK_EUNSUPPORTED, "json schema: %s: 'additionalProperties' as a "
                              "schema is not supported", name);
        if (cJSON_IsFalse(addl)) {
            bprintf(&c->rules, "%s ::= \"{\" ws \"}\"\n", name);
            c->used |= PRIM_WS;
            return 0;
        }
        c->used |= PRIM_VALUE;
        bprintf(&c->rules, "%s ::= object\n", name);
        return 0;
    }
    if (!cJSON_IsObject(props))
        return ork_errorf(ORK_EFORMAT, "json schema: %s: 'properties' must be an object", name);
    if (cJSON_IsTrue(addl) || (addl && !cJSON_IsBool(addl)))
        return ork_errorf(ORK_EUNSUPPORTED, "json schema: %s: additional properties beside "
                          "'properties' are not supported", name);
    if (cJSON_GetArraySize(props) > JSONG_MAX_PROPS)
        return ork_errorf(ORK_EUNSUPPORTED, "json schema: %s: more than %d properties", name,
                          JSONG_MAX_PROPS);
    /* one rule per property: its key and value */
    int n = 0, n_req = 0, ret;
    const cJSON *p;
    cJSON_ArrayForEach(p, props) {
        char sub[160];
        snprintf(sub, sizeof sub, "%s-%d", name, n);
        if ((ret = rule(c, p, sub)) < 0)
            return ret;
        bprintf(&c->rules, "%s-kv%d ::= ", name, n);
        put_json_literal(c, &(cJSON){ .type = cJSON_String, .valuestring = p->string });
        bprintf(&c->rules, " ws \":\" ws %s\n", sub);
        n_req += is_required(req, p->string);
        n++;
    }
    c->used |= PRIM_WS;
    /* optional tails: name-opt<i> is what may follow once property i was written */
    struct buf *b = &c->rules;
    int k = 0;
    cJSON_ArrayForEach(p, props) {
        if (!is_required(req, p->string)) {
            bprintf(b, "%s-opt%d ::= ", name, k);
            int j = 0;
            bool any = false;
            const cJSON *q;
            cJSON_ArrayForEach(q, props) {
                if (j > k && !is_required(req, q->string)) {
                    bprintf(b, "%s(\",\" ws %s-kv%d ws)?", any ? " " : "", name, j);
                    any = true;
                }
                j++;
            }
            if (!any)
                bputs(b, "\"\"");
            bputs(b, "\n");
        }
        k++;
    }
    bprintf(b, "%s ::= \"{\" ws ", name);
    bool first = true;
    k = 0;
    cJSON_ArrayForEach(p, props) {
        if (is_required(req, p->string)) {
            bprintf(b, "%s%s-kv%d ws", first ? "" : "\",\" ws ", name, k);
            bputs(b, " ");
            first = false;
        }
        k++;
    }
    if (n_req > 0) {   /* each optional one after the required ones, in order */
        k = 0;
        cJSON_ArrayForEach(p, props) {
            if (!is_required(req, p->string))
                bprintf(b, "(\",\" ws %s-kv%d ws)? ", name, k);
            k++;
        }
    } else {           /* the first one present has no comma before it */
        bputs(b, "(");
        bool alt = false;
        k = 0;
        cJSON_ArrayForEach(p, props) {
            bprintf(b, "%s%s-kv%d ws %s-opt%d", alt ? " | " : "", name, k, name, k);
            alt = true;
            k++;
        }
        bputs(b, ")? ");
    }
    bputs(b, "\"}\"\n");
    return 0;
}

/* "#/$defs/X" or "#/definitions/X" -> the rule "ref-X" (emitted once). */
static int ref_rule(struct conv *c, const char *ref, char *out, size_t cap, const char *name)
{
    const char *key = NULL;
    const cJSON *defs = NULL;
    if (!strncmp(ref, "#/$defs/", 8))
        key = ref + 8, defs = cJSON_GetObjectItemCaseSensitive(c->doc, "$defs");
    else if (!strncmp(ref, "#/definitions/", 14))
        key = ref + 14, defs = cJSON_GetObjectItemCaseSensitive(c->doc, "definitions");
    else if (!strcmp(ref, "#"))
        key = "", defs = NULL;
    if (!key)
        return ork_errorf(ORK_EUNSUPPORTED, "json schema: %s: $ref '%.64s' (only \"#\", "
                          "\"#/$defs/...\" and \"#/definitions/...\" are supported)", name, ref);
    const cJSON *target = !*key ? c->doc : defs ? cJSON_GetObjectItemCaseSensitive(defs, key)
                                                : NULL;
    if (!target)
        return ork_errorf(ORK_EFORMAT, "json schema: %s: $ref '%.64s' names nothing", name, ref);
    snprintf(out, cap, "ref");
    size_t o = 3;
    for (const char *q = key; *q && o + 2 < cap; q++)   /* a rule name: [A-Za-z0-9-] */
        out[o++] = (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9')
                       ? *q : '-';
    out[o] = 0;
    if (!*key) {
        snprintf(out, cap, "root");
        return 0;
    }
    for (int i = 0; i < c->n_refs; i++)
        if (!strcmp(c->refs[i], out))
            return 0;
    if (c->n_refs >= (int)(sizeof c->refs / sizeof c->refs[0]))
        return ork_errorf(ORK_EUNSUPPORTED, "json schema: more than %zu $ref targets",
                          sizeof c->refs / sizeof c->refs[0]);
    memcpy(c->refs[c->n_refs++], out, strlen(out) + 1);
    return rule(c, target, out);
}

static int alternatives(struct conv *c, const cJSON *list, const char *kw, const char *name)
{
    if (!cJSON_IsArray(list) || !list->child)
        return ork_errorf(ORK_EFORMAT, "json schema: %s: '%s' must be a non-empty array", name, kw);
    int k = 0, ret;
    const cJSON *it;
    cJSON_ArrayForEach(it, list) {
        char sub[160];
        snprintf(sub, sizeof sub, "%s-%s%d", name, kw[0] == 'a' ? "any" : "one", k++);
        if ((ret = rule(c, it, sub)) < 0)
            return ret;
    }
    bprintf(&c->rules, "%s ::= ", name);
    for (int j = 0; j < k; j++)
        bprintf(&c->rules, "%s%s-%s%d", j ? " | " : "", name, kw[0] == 'a' ? "any" : "one", j);
    bputs(&c->rules, "\n");
    return 0;
}

static int typed_rule(struct conv *c, const cJSON *s, const char *type, const char *name)
{
    struct buf *b = &c->rules;
    if (!strcmp(type, "object"))
        return object_rule(c, s, name);
    if (!strcmp(type, "array"))
        return array_rule(c, s, name);
    if (!strcmp(type, "string"))
        return string_rule(c, s, name);
    if (!strcmp(type, "number") || !strcmp(type, "integer")) {
        c->used |= type[0] == 'n' ? PRIM_NUMBER : PRIM_INTEGER;
        bprintf(b, "%s ::= %s\n", name, type);
        return 0;
    }
    if (!strcmp(type, "boolean")) {
        bprintf(b, "%s ::= \"true\" | \"false\"\n", name);
        return 0;
    }
    if (!strcmp(type, "null")) {
        bprintf(b, "%s ::= \"null\"\n", name);
        return 0;
    }
    return ork_errorf(ORK_EFORMAT, "json schema: %s: unknown type '%.32s'", name, type);
}

static int rule(struct conv *c, const cJSON *s, const char *name)
{
    if (++c->depth > JSONG_MAX_DEPTH)
        return ork_errorf(ORK_EUNSUPPORTED, "json schema: nested deeper than %d", JSONG_MAX_DEPTH);
    int ret = 0;
    struct buf *b = &c->rules;
    const cJSON *f;
    if (cJSON_IsTrue(s) || (cJSON_IsObject(s) && !s->child)) {
        c->used |= PRIM_VALUE;
        bprintf(b, "%s ::= value\n", name);
        goto out;
    }
    if (!cJSON_IsObject(s)) {
        ret = ork_errorf(ORK_EFORMAT, "json schema: %s: a schema must be an object or true",
                         name);
        goto out;
    }
    if ((ret = check_refused(s, name)) < 0)
        goto out;
    if ((f = cJSON_GetObjectItemCaseSensitive(s, "$ref"))) {
        char target[160];
        if (!cJSON_IsString(f)) {
            ret = ork_errorf(ORK_EFORMAT, "json schema: %s: '$ref' must be a string", name);
            goto out;
        }
        if ((ret = ref_rule(c, f->valuestring, target, sizeof target, name)) == 0)
            bprintf(b, "%s ::= %s\n", name, target);
        goto out;
    }
    if ((f = cJSON_GetObjectItemCaseSensitive(s, "const"))) {
        bprintf(b, "%s ::= ", name);
        if ((ret = put_json_literal(c, f)) == 0)
            bputs(b, "\n");
        goto out;
    }
    if ((f = cJSON_GetObjectItemCaseSensitive(s, "enum"))) {
        if (!cJSON_IsArray(f) || !f->child) {
            ret = ork_errorf(ORK_EFORMAT, "json schema: %s: 'enum' must be a non-empty array",
                             name);
            goto out;
        }
        bprintf(b, "%s ::= ", name);
        const cJSON *v;
        bool alt = false;
        cJSON_ArrayForEach(v, f) {
            if (alt)
                bputs(b, " | ");
            if ((ret = put_json_literal(c, v)) < 0)
                goto out;
            alt = true;
        }
        bputs(b, "\n");
        goto out;
    }
    if ((f = cJSON_GetObjectItemCaseSensitive(s, "anyOf"))) {
        ret = alternatives(c, f, "anyOf", name);
        goto out;
    }
    if ((f = cJSON_GetObjectItemCaseSensitive(s, "oneOf"))) {
        ret = alternatives(c, f, "oneOf", name);   /* as anyOf: exclusivity is not checked */
        goto out;
    }
    if ((f = cJSON_GetObjectItemCaseSensitive(s, "allOf"))) {
        if (!cJSON_IsArray(f) || cJSON_GetArraySize(f) != 1) {
            ret = ork_errorf(ORK_EUNSUPPORTED, "json schema: %s: 'allOf' with other than one "
                             "schema is not supported", name);
            goto out;
        }
        ret = rule(c, f->child, name);
        goto out;
    }
    f = cJSON_GetObjectItemCaseSensitive(s, "type");
    if (cJSON_IsString(f)) {
        ret = typed_rule(c, s, f->valuestring, name);
    } else if (cJSON_IsArray(f) && f->child) {
        int k = 0;
        const cJSON *t;
        cJSON_ArrayForEach(t, f) {
            char sub[160];
            snprintf(sub, sizeof sub, "%s-t%d", name, k++);
            if (!cJSON_IsString(t)) {
                ret = ork_errorf(ORK_EFORMAT, "json schema: %s: 'type' entries must be strings",
                                 name);
                goto out;
            }
            if ((ret = typed_rule(c, s, t->valuestring, sub)) < 0)
                goto out;
        }
        bprintf(b, "%s ::= ", name);
        for (int j = 0; j < k; j++)
            bprintf(b, "%s%s-t%d", j ? " | " : "", name, j);
        bputs(b, "\n");
    } else if (f) {
        ret = ork_errorf(ORK_EFORMAT, "json schema: %s: 'type' must be a string or an array", name);
    } else if (cJSON_GetObjectItemCaseSensitive(s, "properties")) {
        ret = object_rule(c, s, name);
    } else if (cJSON_GetObjectItemCaseSensitive(s, "items") ||
               cJSON_GetObjectItemCaseSensitive(s, "prefixItems")) {
        ret = array_rule(c, s, name);
    } else {
        c->used |= PRIM_VALUE;   /* only annotations (title, description...): any value */
        bprintf(b, "%s ::= value\n", name);
    }
out:
    c->depth--;
    return ret;
}

/* The grammar's literals copy the schema's strings (const, enum, property names): a string that
 * is not UTF-8 (cJSON passes such bytes through) would make a grammar the parser refuses. */
static int check_utf8(const char *text)
{
    size_t n = strlen(text);
    for (size_t i = 0; i < n;) {
        uint32_t cp, l = ork__utf8_decode((const uint8_t *)text + i, n - i, &cp);
        if (l == 0)
            return ork_errorf(ORK_EFORMAT, "json schema: a string in the schema is not valid "
                              "UTF-8");
        i += l;
    }
    return 0;
}

int ork_json_schema_to_gbnf(const char *schema, size_t len, char **gbnf)
{
    if (!schema || !gbnf)
        return ork_errorf(ORK_EINVAL, "json schema: schema and out must not be NULL");
    *gbnf = NULL;
    const char *end = NULL;
    cJSON *doc = cJSON_ParseWithLengthOpts(schema, len, &end, 0);
    if (!doc)
        return ork_errorf(ORK_EFORMAT, "json schema: malformed JSON near byte %zu",
                          end && end >= schema ? (size_t)(end - schema) : 0);
    struct conv *c = ork_calloc(1, sizeof(*c));
    if (!c) {
        cJSON_Delete(doc);
        return ork_errorf(ORK_ENOMEM, "json schema: out of memory");
    }
    c->doc = doc;
    int ret = rule(c, doc, "root");
    if (ret == 0)
        put_prims(c);
    if (ret == 0 && c->rules.oom)
        ret = ork_errorf(ORK_ENOMEM, "json schema: out of memory");
    if (ret == 0)
        ret = check_utf8(c->rules.s);
    if (ret == 0)
        *gbnf = c->rules.s;
    else
        ork_free(c->rules.s);
    ork_free(c);
    cJSON_Delete(doc);
    return ret;
}

int ork_grammar_from_json_schema(const char *schema, size_t len, struct ork_grammar **out)
{
    if (!out)
        return ork_errorf(ORK_EINVAL, "json schema: out must not be NULL");
    *out = NULL;
    char *text = NULL;
    int ret = ork_json_schema_to_gbnf(schema, len, &text);
    if (ret < 0)
        return ret;
    ret = ork_grammar_parse(text, strlen(text), out);
    ork_free(text);
    return ret;
}
