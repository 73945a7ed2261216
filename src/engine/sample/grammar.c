/* grammar.c -- the GBNF parser: text to the compiled grammar of grammar_priv.h.
 *
 * The format (as llama.cpp's users write it; this parser is written from the format's
 * description): rules `name ::= alternatives`, alternatives separated by `|`, each a sequence
 * of string literals "..." (escapes \n \r \t \\ \" \[ \] \xHH \uHHHH \UHHHHHHHH), character
 * classes [a-z0-9_] and [^...], `.` (any character), rule names and parenthesised groups, each
 * optionally followed by `*`, `+`, `?`, `{m}`, `{m,}`, `{,n}` or `{m,n}`. `#` starts a comment.
 * Inside parentheses newlines are blanks; outside them a newline ends the rule unless the
 * text after it (blank lines and comments skipped) is not the start of a new rule -- so a rule
 * may continue on a line starting with `|`. The grammar must define `root`.
 *
 * Groups and repetitions become generated rules: x* is R ::= x R | "", x+ is x R, x? is
 * Q ::= x | "", x{m,n} is m copies of x and then n - m nested optional copies. After parsing,
 * every referenced rule must be defined and no rule may reach itself without consuming a
 * character (left recursion: the matcher could not follow it).
 *
 * This file is not the matcher (grammar_match.c) and knows nothing of tokens. */
#include "grammar_priv.h"

#include <ork/alloc.h>
#include <ork/error.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Bounds that keep a hostile grammar (a fuzzer's, a request's) from costing unbounded memory or
 * time: elements and rules after expanding repetitions, and group nesting in the text. */
#define GRAM_MAX_ELEMS (1u << 22)
#define GRAM_MAX_RULES (1u << 20)
#define GRAM_MAX_NESTING 256
#define GRAM_MAX_NAME 256
#define UNICODE_MAX 0x10ffffu

struct pelem {
    uint8_t type, neg;
    uint32_t a, b;
};

struct pseq {
    struct pelem *v;
    uint32_t n, cap;
};

struct prule {
    char *name;            /* NULL for generated rules */
    struct pseq *alts;
    uint32_t n_alts, cap_alts;
    bool defined;
    size_t ref_at;         /* text offset of the first reference (for "undefined rule") */
};

struct parser {
    const char *s;
    size_t len, i;
    struct prule *rules;
    uint32_t n_rules, cap_rules;
    struct gram_range *ranges;
    uint32_t n_ranges, cap_ranges;
    uint64_t n_elems;      /* elements so far, for GRAM_MAX_ELEMS */
    int err;               /* first error, with its message recorded */
};

/* ---- errors with line:column ------------------------------------------------------------- */

static int perr(struct parser *p, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int perr(struct parser *p, size_t at, const char *fmt, ...)
{
    if (p->err)
        return p->err;
    int line = 1, col = 1;
    for (size_t k = 0; k < at && k < p->len; k++) {
        if (p->s[k] == '\n')
            line++, col = 1;
        else if (((unsigned char)p->s[k] & 0xc0) != 0x80)
            col++;
    }
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    p->err = ork_errorf(ORK_EFORMAT, "grammar: %d:%d: %s", line, col, msg);
    return p->err;
}

static int nomem(struct parser *p)
{
    if (!p->err)
        p->err = ork_errorf(ORK_ENOMEM, "grammar: out of memory");
    return p->err;
}

/* ---- growable arrays --------------------------------------------------------------------- */

static int grow(void **v, uint32_t *cap, uint32_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    uint32_t c = *cap ? *cap : 4;
    while (c < need)
        c *= 2;
    void *n = ork_realloc(*v, (size_t)c * size);
    if (!n)
        return ORK_ENOMEM;
    *v = n;
    *cap = c;
    return 0;
}

static int seq_push(struct parser *p, struct pseq *q, struct pelem e)
{
    if (++p->n_elems > GRAM_MAX_ELEMS)
        return perr(p, p->i, "the grammar expands to more than %u elements", GRAM_MAX_ELEMS);
    if (grow((void **)&q->v, &q->cap, q->n + 1, sizeof(*q->v)) < 0)
        return nomem(p);
    q->v[q->n++] = e;
    return 0;
}

static int rule_new(struct parser *p, const char *name, size_t nlen, uint32_t *id)
{
    if (p->n_rules >= GRAM_MAX_RULES)
        return perr(p, p->i, "more than %u rules", GRAM_MAX_RULES);
    if (grow((void **)&p->rules, &p->cap_rules, p->n_rules + 1, sizeof(*p->rules)) < 0)
        return nomem(p);
    struct prule *r = &p->rules[p->n_rules];
    memset(r, 0, sizeof(*r));
    if (name && !(r->name = ork_strndup(name, nlen)))
        return nomem(p);
    *id = p->n_rules++;
    return 0;
}

/* A new alternative of rule id; returns its index. */
static int alt_new(struct parser *p, uint32_t id, uint32_t *alt)
{
    struct prule *r = &p->rules[id];
    if (grow((void **)&r->alts, &r->cap_alts, r->n_alts + 1, sizeof(*r->alts)) < 0)
        return nomem(p);
    memset(&r->alts[r->n_alts], 0, sizeof(r->alts[0]));
    *alt = r->n_alts++;
    return 0;
}

static int rule_by_name(struct parser *p, const char *name, size_t nlen, size_t at, uint32_t *id)
{
    for (uint32_t k = 0; k < p->n_rules; k++) {
        const char *n = p->rules[k].name;
        if (n && strlen(n) == nlen && !memcmp(n, name, nlen)) {
            *id = k;
            return 0;
        }
    }
    int ret = rule_new(p, name, nlen, id);
    if (ret == 0)
        p->rules[*id].ref_at = at;
    return ret;
}

static int range_push(struct parser *p, uint32_t lo, uint32_t hi)
{
    if (grow((void **)&p->ranges, &p->cap_ranges, p->n_ranges + 1, sizeof(*p->ranges)) < 0)
        return nomem(p);
    p->ranges[p->n_ranges++] = (struct gram_range){ .lo = lo, .hi = hi };
    return 0;
}

/* ---- lexing ------------------------------------------------------------------------------- */

static bool is_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '_';
}

/* Skip blanks and comments from j without crossing a newline; returns the new offset. */
static size_t skip_line_blanks(const struct parser *p, size_t j)
{
    while (j < p->len) {
        char c = p->s[j];
        if (c == ' ' || c == '\t' || c == '\r')
            j++;
        else if (c == '#')
            while (j < p->len && p->s[j] != '\n')
                j++;
        else
            break;
    }
    return j;
}

/* Does a rule definition (`name ::=`) start at j? */
static bool rule_starts_at(const struct parser *p, size_t j)
{
    size_t k = j;
    while (k < p->len && is_name_char(p->s[k]))
        k++;
    if (k == j)
        return false;
    k = skip_line_blanks(p, k);
    return p->len - k >= 3 && !memcmp(p->s + k, "::=", 3);
}

/* Skip blanks, comments and -- inside parentheses, or when the rule goes on -- newlines. At
 * depth 0 it stops before a newline that ends the rule. */
static void skip_space(struct parser *p, int depth)
{
    for (;;) {
        p->i = skip_line_blanks(p, p->i);
        if (p->i >= p->len || p->s[p->i] != '\n')
            return;
        if (depth == 0) {
            size_t j = p->i;
            while (j < p->len && (p->s[j] == '\n' || p->s[j] == ' ' || p->s[j] == '\t' ||
                                  p->s[j] == '\r' || p->s[j] == '#'))
                j = p->s[j] == '\n' ? j + 1 : skip_line_blanks(p, j);
            if (j >= p->len || rule_starts_at(p, j))
                return;
        }
        p->i++;
    }
}

/* One UTF-8 code point of the grammar text itself. */
static int decode_utf8(struct parser *p, uint32_t *cp)
{
    const unsigned char *s = (const unsigned char *)p->s;
    size_t at = p->i;
    unsigned c = s[p->i];
    uint32_t n, v, min;
    if (c < 0x80)
        n = 0, v = c, min = 0;
    else if ((c & 0xe0) == 0xc0)
        n = 1, v = c & 0x1f, min = 0x80;
    else if ((c & 0xf0) == 0xe0)
        n = 2, v = c & 0x0f, min = 0x800;
    else if ((c & 0xf8) == 0xf0)
        n = 3, v = c & 0x07, min = 0x10000;
    else
        return perr(p, at, "invalid UTF-8 byte 0x%02x", c);
    if (p->len - p->i <= n && n)
        return perr(p, at, "truncated UTF-8 sequence");
    for (uint32_t k = 1; k <= n; k++) {
        if ((s[p->i + k] & 0xc0) != 0x80)
            return perr(p, at, "invalid UTF-8 sequence");
        v = (v << 6) | (s[p->i + k] & 0x3f);
    }
    if (v < min || v > UNICODE_MAX || (v >= 0xd800 && v <= 0xdfff))
        return perr(p, at, "invalid UTF-8 sequence");
    p->i += n + 1;
    *cp = v;
    return 0;
}

static int hex_escape(struct parser *p, int digits, uint32_t *cp)
{
    size_t at = p->i;
    uint32_t v = 0;
    for (int k = 0; k < digits; k++) {
        if (p->i >= p->len)
            return perr(p, at, "escape needs %d hex digits", digits);
        char c = p->s[p->i++];
        uint32_t d;
        if (c >= '0' && c <= '9')
            d = (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = (uint32_t)(c - 'A' + 10);
        else
            return perr(p, p->i - 1, "'%c' is not a hex digit", c);
        v = v * 16 + d;
    }
    if (v > UNICODE_MAX)
        return perr(p, at, "code point U+%X is beyond U+10FFFF", v);
    *cp = v;
    return 0;
}

/* One character of a literal or class: an escape or a UTF-8 code point. */
static int parse_char(struct parser *p, uint32_t *cp)
{
    if (p->i >= p->len)
        return perr(p, p->i, "unexpected end of grammar");
    if (p->s[p->i] != '\\')
        return decode_utf8(p, cp);
    size_t at = p->i++;
    if (p->i >= p->len)
        return perr(p, at, "unfinished escape");
    char c = p->s[p->i++];
    switch (c) {
    case 'n': *cp = '\n'; return 0;
    case 'r': *cp = '\r'; return 0;
    case 't': *cp = '\t'; return 0;
    case '\\': case '"': case '[': case ']': case '-': case '^': case '/': case '\'':
        *cp = (uint32_t)c;
        return 0;
    case 'x': return hex_escape(p, 2, cp);
    case 'u': return hex_escape(p, 4, cp);
    case 'U': return hex_escape(p, 8, cp);
    default:
        return perr(p, at, "unknown escape '\\%c'", c);
    }
}

/* ---- parsing ------------------------------------------------------------------------------ */

static int parse_alternates(struct parser *p, uint32_t rule, int depth);

static int parse_literal(struct parser *p, struct pseq *q)
{
    size_t at = p->i++;
    for (;;) {
        if (p->i >= p->len || p->s[p->i] == '\n')
            return perr(p, at, "unterminated string literal");
        if (p->s[p->i] == '"') {
            p->i++;
            return 0;
        }
        uint32_t cp;
        int ret = parse_char(p, &cp);
        if (ret == 0)
            ret = range_push(p, cp, cp);
        if (ret == 0)
            ret = seq_push(p, q, (struct pelem){ .type = GRAM_CHAR, .a = p->n_ranges - 1, .b = 1 });
        if (ret < 0)
            return ret;
    }
}

static int parse_class(struct parser *p, struct pseq *q)
{
    size_t at = p->i++;
    bool neg = p->i < p->len && p->s[p->i] == '^';
    if (neg)
        p->i++;
    uint32_t first = p->n_ranges;
    for (;;) {
        if (p->i >= p->len || p->s[p->i] == '\n')
            return perr(p, at, "unterminated character class");
        if (p->s[p->i] == ']') {
            p->i++;
            break;
        }
        uint32_t lo, hi;
        int ret = parse_char(p, &lo);
        if (ret < 0)
            return ret;
        hi = lo;
        if (p->i + 1 < p->len && p->s[p->i] == '-' && p->s[p->i + 1] != ']') {
            size_t rat = p->i++;
            if ((ret = parse_char(p, &hi)) < 0)
                return ret;
            if (hi < lo)
                return perr(p, rat, "character range is reversed (U+%04X > U+%04X)", lo, hi);
        }
        if ((ret = range_push(p, lo, hi)) < 0)
            return ret;
    }
    return seq_push(p, q, (struct pelem){ .type = GRAM_CHAR, .neg = neg, .a = first,
                                          .b = p->n_ranges - first });
}

/* Wrap q->v[start..n) into a new one-alternative rule; returns its id. */
static int wrap_rule(struct parser *p, struct pseq *q, uint32_t start, uint32_t *id)
{
    int ret;
    uint32_t alt;
    /* q may live inside p->rules, which rule_new can move: work with offsets. */
    uint32_t n = q->n - start;
    struct pelem *tmp = ork_malloc((size_t)n * sizeof(*tmp));
    if (!tmp)
        return nomem(p);
    memcpy(tmp, q->v + start, (size_t)n * sizeof(*tmp));
    q->n = start;
    if ((ret = rule_new(p, NULL, 0, id)) == 0 && (ret = alt_new(p, *id, &alt)) == 0) {
        struct pseq *a = &p->rules[*id].alts[alt];
        a->v = tmp;
        a->n = a->cap = n;
        p->rules[*id].defined = true;
        return 0;
    }
    ork_free(tmp);
    return ret;
}

/* A new rule R ::= x R | "" (x* with tail recursion, which the matcher follows in constant
 * space). */
static int star_rule(struct parser *p, struct pelem x, uint32_t *id)
{
    uint32_t a0, a1;
    int ret;
    if ((ret = rule_new(p, NULL, 0, id)) < 0 || (ret = alt_new(p, *id, &a0)) < 0 ||
        (ret = alt_new(p, *id, &a1)) < 0)
        return ret;
    p->rules[*id].defined = true;
    if ((ret = seq_push(p, &p->rules[*id].alts[a0], x)) < 0)
        return ret;
    return seq_push(p, &p->rules[*id].alts[a0],
                    (struct pelem){ .type = GRAM_REF, .a = *id });
}

/* A new rule Q ::= x [inner] | "" (inner omitted when has_inner is false). */
static int opt_rule(struct parser *p, struct pelem x, bool has_inner, uint32_t inner, uint32_t *id)
{
    uint32_t a0, a1;
    int ret;
    if ((ret = rule_new(p, NULL, 0, id)) < 0 || (ret = alt_new(p, *id, &a0)) < 0 ||
        (ret = alt_new(p, *id, &a1)) < 0)
        return ret;
    p->rules[*id].defined = true;
    if ((ret = seq_push(p, &p->rules[*id].alts[a0], x)) < 0)
        return ret;
    if (has_inner)
        ret = seq_push(p, &p->rules[*id].alts[a0], (struct pelem){ .type = GRAM_REF, .a = inner });
    return ret;
}

static int parse_bound(struct parser *p, uint32_t *v, bool *given)
{
    *given = false;
    uint64_t x = 0;
    size_t at = p->i;
    while (p->i < p->len && p->s[p->i] >= '0' && p->s[p->i] <= '9') {
        x = x * 10 + (uint64_t)(p->s[p->i++] - '0');
        if (x > ORK_GRAMMAR_MAX_REPEAT)
            return perr(p, at, "repetition bound above %d", ORK_GRAMMAR_MAX_REPEAT);
        *given = true;
    }
    *v = (uint32_t)x;
    return 0;
}

/* {m}, {m,}, {,n}, {m,n}: *max = UINT32_MAX when unbounded. */
static int parse_braces(struct parser *p, uint32_t *min, uint32_t *max)
{
    size_t at = p->i++;
    bool gmin, gmax;
    int ret;
    skip_space(p, 1);
    if ((ret = parse_bound(p, min, &gmin)) < 0)
        return ret;
    skip_space(p, 1);
    if (p->i < p->len && p->s[p->i] == ',') {
        p->i++;
        skip_space(p, 1);
        if ((ret = parse_bound(p, max, &gmax)) < 0)
            return ret;
        if (!gmax)
            *max = UINT32_MAX;
        skip_space(p, 1);
    } else {
        if (!gmin)
            return perr(p, at, "expected a number in '{...}'");
        *max = *min;
    }
    if (p->i >= p->len || p->s[p->i] != '}')
        return perr(p, at, "expected '}' to close the repetition");
    p->i++;
    if (*max != UINT32_MAX && *max < *min)
        return perr(p, at, "repetition {%u,%u} has max below min", *min, *max);
    return 0;
}

/* Apply a postfix operator to the elements q->v[start..n) that the last primary produced. */
static int apply_repeat(struct parser *p, uint32_t rule, uint32_t alt, uint32_t start,
                        uint32_t min, uint32_t max)
{
    struct pseq *q = &p->rules[rule].alts[alt];
    if (q->n == start)
        return 0;   /* "" repeated is still "" */
    int ret;
    if (q->n - start > 1) {
        uint32_t id;
        if ((ret = wrap_rule(p, q, start, &id)) < 0)
            return ret;
        q = &p->rules[rule].alts[alt];
        if ((ret = seq_push(p, q, (struct pelem){ .type = GRAM_REF, .a = id })) < 0)
            return ret;
    }
    struct pelem x = q->v[start];
    q->n = start;
    for (uint32_t k = 0; k < min; k++)
        if ((ret = seq_push(p, &p->rules[rule].alts[alt], x)) < 0)
            return ret;
    if (max == min)
        return 0;
    uint32_t id = 0;
    if (max == UINT32_MAX) {
        ret = star_rule(p, x, &id);
    } else {
        bool has = false;
        uint32_t inner = 0;
        for (uint32_t k = min; k < max; k++, has = true, inner = id)
            if ((ret = opt_rule(p, x, has, inner, &id)) < 0)
                return ret;
    }
    if (ret < 0)
        return ret;
    return seq_push(p, &p->rules[rule].alts[alt], (struct pelem){ .type = GRAM_REF, .a = id });
}

static int parse_primary(struct parser *p, uint32_t rule, uint32_t alt, int depth)
{
    char c = p->s[p->i];
    struct pseq *q = &p->rules[rule].alts[alt];
    if (c == '"')
        return parse_literal(p, q);
    if (c == '[')
        return parse_class(p, q);
    if (c == '.') {
        p->i++;
        int ret = range_push(p, 0, UNICODE_MAX);
        return ret < 0 ? ret : seq_push(p, q, (struct pelem){ .type = GRAM_CHAR,
                                                              .a = p->n_ranges - 1, .b = 1 });
    }
    if (c == '(') {
        size_t at = p->i++;
        if (depth >= GRAM_MAX_NESTING)
            return perr(p, at, "groups nested deeper than %d", GRAM_MAX_NESTING);
        uint32_t id;
        int ret = rule_new(p, NULL, 0, &id);
        if (ret < 0)
            return ret;
        p->rules[id].defined = true;
        skip_space(p, depth + 1);
        if ((ret = parse_alternates(p, id, depth + 1)) < 0)
            return ret;
        if (p->i >= p->len || p->s[p->i] != ')')
            return perr(p, at, "expected ')' to close the group opened here");
        p->i++;
        return seq_push(p, &p->rules[rule].alts[alt], (struct pelem){ .type = GRAM_REF, .a = id });
    }
    if (is_name_char(c)) {
        size_t at = p->i;
        while (p->i < p->len && is_name_char(p->s[p->i]))
            p->i++;
        if (p->i - at > GRAM_MAX_NAME)
            return perr(p, at, "rule name longer than %d bytes", GRAM_MAX_NAME);
        uint32_t id;
        int ret = rule_by_name(p, p->s + at, p->i - at, at, &id);
        return ret < 0 ? ret : seq_push(p, &p->rules[rule].alts[alt],
                                        (struct pelem){ .type = GRAM_REF, .a = id });
    }
    if ((unsigned char)c >= 0x20 && (unsigned char)c < 0x7f)
        return perr(p, p->i, "unexpected '%c'", c);
    return perr(p, p->i, "unexpected byte 0x%02x", (unsigned char)c);
}

static int parse_sequence(struct parser *p, uint32_t rule, int depth)
{
    uint32_t alt;
    int ret = alt_new(p, rule, &alt);
    if (ret < 0)
        return ret;
    for (;;) {
        skip_space(p, depth);
        if (p->i >= p->len)
            return 0;
        char c = p->s[p->i];
        if (c == '|' || c == ')' || c == '\n')
            return 0;
        if (depth == 0 && rule_starts_at(p, p->i))
            return perr(p, p->i, "a new rule must start on its own line");
        uint32_t start = p->rules[rule].alts[alt].n;
        if ((ret = parse_primary(p, rule, alt, depth)) < 0)
            return ret;
        for (;;) {   /* postfix operators, possibly several: x*? */
            skip_space(p, depth);
            if (p->i >= p->len)
                break;
            c = p->s[p->i];
            uint32_t min, max;
            if (c == '*')
                min = 0, max = UINT32_MAX, p->i++;
            else if (c == '+')
                min = 1, max = UINT32_MAX, p->i++;
            else if (c == '?')
                min = 0, max = 1, p->i++;
            else if (c == '{') {
                if ((ret = parse_braces(p, &min, &max)) < 0)
                    return ret;
            } else
                break;
            if ((ret = apply_repeat(p, rule, alt, start, min, max)) < 0)
                return ret;
        }
    }
}

static int parse_alternates(struct parser *p, uint32_t rule, int depth)
{
    for (;;) {
        int ret = parse_sequence(p, rule, depth);
        if (ret < 0)
            return ret;
        if (p->i >= p->len || p->s[p->i] != '|')
            return 0;
        p->i++;
        skip_space(p, depth + 1);   /* a newline right after '|' continues the rule */
    }
}

static int parse_rule(struct parser *p)
{
    size_t at = p->i;
    while (p->i < p->len && is_name_char(p->s[p->i]))
        p->i++;
    if (p->i == at) {
        char c = p->s[at];
        if ((unsigned char)c >= 0x20 && (unsigned char)c < 0x7f)
            return perr(p, at, "expected a rule name, found '%c'", c);
        return perr(p, at, "expected a rule name, found byte 0x%02x", (unsigned char)c);
    }
    if (p->i - at > GRAM_MAX_NAME)
        return perr(p, at, "rule name longer than %d bytes", GRAM_MAX_NAME);
    size_t nlen = p->i - at;
    p->i = skip_line_blanks(p, p->i);
    if (p->len - p->i < 3 || memcmp(p->s + p->i, "::=", 3))
        return perr(p, p->i, "expected '::=' after the rule name '%.*s'", (int)nlen, p->s + at);
    p->i += 3;
    uint32_t id;
    int ret = rule_by_name(p, p->s + at, nlen, at, &id);
    if (ret < 0)
        return ret;
    if (p->rules[id].defined)
        return perr(p, at, "rule '%.*s' is defined twice", (int)nlen, p->s + at);
    p->rules[id].defined = true;
    skip_space(p, 1);   /* the body may start on the next line */
    if ((ret = parse_alternates(p, id, 0)) < 0)
        return ret;
    if (p->i < p->len && p->s[p->i] == ')')
        return perr(p, p->i, "unmatched ')'");
    return 0;
}

/* ---- compile and check -------------------------------------------------------------------- */

static void parser_free(struct parser *p)
{
    for (uint32_t r = 0; r < p->n_rules; r++) {
        for (uint32_t a = 0; a < p->rules[r].n_alts; a++)
            ork_free(p->rules[r].alts[a].v);
        ork_free(p->rules[r].alts);
        ork_free(p->rules[r].name);
    }
    ork_free(p->rules);
    ork_free(p->ranges);
}

void ork_grammar_free(struct ork_grammar *g)
{
    if (!g)
        return;
    ork_free(g->elems);
    ork_free(g->ranges);
    ork_free(g->alts);
    ork_free(g->rule_alt);
    ork_free(g->rule_n_alt);
    ork_free(g);
}

static void class_ascii(const struct ork_grammar *g, struct gram_elem *e)
{
    e->ascii[0] = e->ascii[1] = 0;
    for (uint32_t k = 0; k < e->b; k++) {
        const struct gram_range *r = &g->ranges[e->a + k];
        for (uint32_t c = r->lo; c <= r->hi && c < 128; c++)
            e->ascii[c >> 6] |= 1ull << (c & 63);
    }
    if (e->neg)
        e->ascii[0] = ~e->ascii[0], e->ascii[1] = ~e->ascii[1];
}

static int flatten(struct parser *p, struct ork_grammar *g)
{
    uint64_t n_elems = 0, n_alts = 0;
    for (uint32_t r = 0; r < p->n_rules; r++) {
        n_alts += p->rules[r].n_alts;
        for (uint32_t a = 0; a < p->rules[r].n_alts; a++)
            n_elems += p->rules[r].alts[a].n + 1;
    }
    g->n_rules = p->n_rules;
    g->n_alts = (uint32_t)n_alts;
    g->n_elems = (uint32_t)n_elems;
    g->elems = ork_calloc((size_t)n_elems, sizeof(*g->elems));
    g->alts = ork_calloc(n_alts ? (size_t)n_alts : 1, sizeof(*g->alts));
    g->rule_alt = ork_calloc(p->n_rules, sizeof(*g->rule_alt));
    g->rule_n_alt = ork_calloc(p->n_rules, sizeof(*g->rule_n_alt));
    g->ranges = ork_calloc(p->n_ranges ? p->n_ranges : 1, sizeof(*g->ranges));
    if (!g->elems || !g->alts || !g->rule_alt || !g->rule_n_alt || !g->ranges)
        return nomem(p);
    if (p->n_ranges)
        memcpy(g->ranges, p->ranges, (size_t)p->n_ranges * sizeof(*g->ranges));
    g->n_ranges = p->n_ranges;
    uint32_t e = 0, k = 0;
    for (uint32_t r = 0; r < p->n_rules; r++) {
        g->rule_alt[r] = k;
        g->rule_n_alt[r] = p->rules[r].n_alts;
        for (uint32_t a = 0; a < p->rules[r].n_alts; a++) {
            g->alts[k++] = e;
            const struct pseq *q = &p->rules[r].alts[a];
            for (uint32_t i = 0; i < q->n; i++, e++) {
                g->elems[e] = (struct gram_elem){ .type = q->v[i].type, .neg = q->v[i].neg,
                                                  .a = q->v[i].a, .b = q->v[i].b };
                if (q->v[i].type == GRAM_CHAR)
                    class_ascii(g, &g->elems[e]);
            }
            g->elems[e++] = (struct gram_elem){ .type = GRAM_END };
        }
    }
    return 0;
}

/* Which rules can match the empty string (fixed point), then whether any rule reaches itself
 * through references preceded only by nullable ones (left recursion). */
static int check_left_recursion(struct parser *p, const struct ork_grammar *g)
{
    uint32_t n = g->n_rules;
    uint8_t *nullable = ork_calloc(n, 1);
    uint8_t *color = ork_calloc(n, 1);                     /* 0 new, 1 on the path, 2 done */
    uint32_t *stk = ork_calloc(n, sizeof(*stk));           /* rule on the DFS path */
    uint32_t *ai = ork_calloc(n, sizeof(*ai));
    uint32_t *off = ork_calloc(n, sizeof(*off));
    int ret = 0;
    if (!nullable || !color || !stk || !ai || !off) {
        ret = nomem(p);
        goto out;
    }
    for (bool changed = true; changed;) {
        changed = false;
        for (uint32_t r = 0; r < n; r++) {
            if (nullable[r])
                continue;
            for (uint32_t a = 0; a < g->rule_n_alt[r] && !nullable[r]; a++) {
                uint32_t e = g->alts[g->rule_alt[r] + a];
                while (g->elems[e].type == GRAM_REF && nullable[g->elems[e].a])
                    e++;
                if (g->elems[e].type == GRAM_END)
                    nullable[r] = 1, changed = true;
            }
        }
    }
    /* Iterative DFS over left edges: r -> s when an alternative of r references s after
     * nothing but nullable references. ai[r] / off[r]: where r's scan of its alternatives
     * stands. */
    for (uint32_t s = 0; s < n && ret == 0; s++) {
        if (color[s])
            continue;
        uint32_t depth = 0;
        stk[depth++] = s;
        color[s] = 1;
        ai[s] = off[s] = 0;
        while (depth && ret == 0) {
            uint32_t r = stk[depth - 1];
            uint32_t next = UINT32_MAX;
            while (ai[r] < g->rule_n_alt[r]) {
                const struct gram_elem *e = &g->elems[g->alts[g->rule_alt[r] + ai[r]] + off[r]];
                if (e->type != GRAM_REF) {
                    ai[r]++, off[r] = 0;
                    continue;
                }
                next = e->a;
                if (nullable[e->a])
                    off[r]++;
                else
                    ai[r]++, off[r] = 0;
                break;
            }
            if (next == UINT32_MAX) {
                color[r] = 2;
                depth--;
            } else if (color[next] == 1) {
                const char *name = p->rules[next].name;
                ret = ork_errorf(ORK_EFORMAT, "grammar: rule '%s' is left-recursive (it can "
                                 "reach itself without matching a character)",
                                 name ? name : "(a group or repetition)");
            } else if (color[next] == 0) {
                color[next] = 1;
                ai[next] = off[next] = 0;
                stk[depth++] = next;
            }
        }
    }
out:
    ork_free(nullable);
    ork_free(color);
    ork_free(stk);
    ork_free(ai);
    ork_free(off);
    return ret;
}

int ork_grammar_parse(const char *text, size_t len, struct ork_grammar **out)
{
    if (!out || (!text && len))
        return ork_errorf(ORK_EINVAL, "grammar: text and out must not be NULL");
    *out = NULL;
    struct parser p = { .s = text, .len = len };
    struct ork_grammar *g = NULL;
    int ret = 0;
    for (;;) {
        while (p.i < p.len && (p.s[p.i] == '\n' || p.s[p.i] == ' ' || p.s[p.i] == '\t' ||
                               p.s[p.i] == '\r' || p.s[p.i] == '#'))
            p.i = p.s[p.i] == '\n' ? p.i + 1 : skip_line_blanks(&p, p.i);
        if (p.i >= p.len)
            break;
        if ((ret = parse_rule(&p)) < 0)
            goto fail;
    }
    bool have_root = false;
    for (uint32_t r = 0; r < p.n_rules; r++) {
        if (!p.rules[r].defined) {
            ret = perr(&p, p.rules[r].ref_at, "rule '%s' is used but not defined",
                       p.rules[r].name);
            goto fail;
        }
        if (p.rules[r].name && !strcmp(p.rules[r].name, "root"))
            have_root = true;
    }
    if (!have_root) {
        ret = ork_errorf(ORK_EFORMAT, "grammar: no 'root' rule (the rule generation starts from)");
        goto fail;
    }
    if (!(g = ork_calloc(1, sizeof(*g)))) {
        ret = nomem(&p);
        goto fail;
    }
    if ((ret = flatten(&p, g)) < 0 || (ret = check_left_recursion(&p, g)) < 0)
        goto fail;
    for (uint32_t r = 0; r < p.n_rules; r++)
        if (p.rules[r].name && !strcmp(p.rules[r].name, "root"))
            g->root = r;
    parser_free(&p);
    *out = g;
    return 0;
fail:
    ork_grammar_free(g);
    parser_free(&p);
    return ret;
}
