/* test_tok_util.h -- helpers shared by the tokenizer tests: read a whole file, load a
 * tokenizer from a GGUF path, compare id lists with a readable diff, and a minimal reader for
 * the fixture .jsonl lines ({"text": ..., "add_bos_if_model_wants": ..., "parse_special": ...,
 * "ids": [...]}). Test-only code; not part of the engine. */
#ifndef TEST_TOK_UTIL_H
#define TEST_TOK_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ork-engine/gguf.h>
#include <ork-engine/tokenizer.h>
#include <ork/error.h>

static inline char *tt_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[n] = 0;
        *len = (size_t)n;
    }
    return buf;
}

/* Open + load; on failure prints the error and returns NULL (gguf closed). */
static inline struct ork_tokenizer *tt_load(const char *path, struct ork_gguf **g_out)
{
    struct ork_gguf *g = NULL;
    int ret = ork_gguf_open(path, &g);
    if (ret < 0) {
        fprintf(stderr, "open %s: %s\n", path, ork_error_describe(ret));
        return NULL;
    }
    struct ork_tokenizer *t = NULL;
    ret = ork_tokenizer_load(g, &t);
    if (ret < 0) {
        fprintf(stderr, "load %s: %s\n", path, ork_error_describe(ret));
        ork_gguf_close(g);
        return NULL;
    }
    *g_out = g;
    return t;
}

static inline void tt_print_escaped(FILE *f, const char *s, size_t n)
{
    fputc('"', f);
    for (size_t i = 0; i < n && i < 160; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n')
            fputs("\\n", f);
        else if (c == '\t')
            fputs("\\t", f);
        else if (c < 0x20)
            fprintf(f, "\\x%02x", c);
        else
            fputc(c, f);
    }
    fputs(n > 160 ? "\"..." : "\"", f);
}

static inline void tt_print_ids(FILE *f, const char *label, const int32_t *ids, size_t n)
{
    fprintf(f, "  %s (%zu):", label, n);
    for (size_t i = 0; i < n && i < 64; i++)
        fprintf(f, " %d", ids[i]);
    fputs(n > 64 ? " ...\n" : "\n", f);
}

/* Tokenize and compare; prints a diff and returns false on mismatch. */
static inline bool tt_check(const struct ork_tokenizer *t, const char *where, const char *text,
                     size_t len, bool add_special, bool parse_special, const int32_t *want,
                     size_t n_want)
{
    size_t cap = 4 * len + 16, n = 0;
    int32_t *ids = malloc(cap * sizeof(*ids));
    int ret = ork_tokenize(t, text, len, add_special, parse_special, ids, cap, &n);
    bool ok = ret == 0 && n == n_want && memcmp(ids, want, n * sizeof(*ids)) == 0;
    if (!ok) {
        fprintf(stderr, "%s: mismatch (ret %d %s) for ", where, ret,
                ret < 0 ? ork_error_describe(ret) : "");
        tt_print_escaped(stderr, text, len);
        fprintf(stderr, " add_special=%d parse_special=%d\n", add_special, parse_special);
        tt_print_ids(stderr, "want", want, n_want);
        tt_print_ids(stderr, "got ", ids, n < cap ? n : cap);
    }
    free(ids);
    return ok;
}

/* ---- a minimal JSON reader for the fixture lines ---- */

static inline const char *tt_skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return p;
}

static inline size_t tt_put_utf8(char *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Parse a JSON string at p (pointing at '"') into out (malloc'd). Returns the end or NULL. */
static inline const char *tt_json_string(const char *p, char **out, size_t *len)
{
    if (*p != '"')
        return NULL;
    p++;
    char *o = malloc(strlen(p) * 4 + 1);
    size_t n = 0;
    while (*p && *p != '"') {
        if (*p != '\\') {
            o[n++] = *p++;
            continue;
        }
        p++;
        char c = *p++;
        switch (c) {
        case 'n': o[n++] = '\n'; break;
        case 't': o[n++] = '\t'; break;
        case 'r': o[n++] = '\r'; break;
        case 'b': o[n++] = '\b'; break;
        case 'f': o[n++] = '\f'; break;
        case '/': o[n++] = '/'; break;
        case '\\': o[n++] = '\\'; break;
        case '"': o[n++] = '"'; break;
        case 'u': {
            uint32_t cp = (uint32_t)strtoul((char[5]){ p[0], p[1], p[2], p[3], 0 }, NULL, 16);
            p += 4;
            if (cp >= 0xD800 && cp < 0xDC00 && p[0] == '\\' && p[1] == 'u') {
                uint32_t lo = (uint32_t)strtoul((char[5]){ p[2], p[3], p[4], p[5], 0 }, NULL, 16);
                p += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            n += tt_put_utf8(o + n, cp);
            break;
        }
        default:
            free(o);
            return NULL;
        }
    }
    if (*p != '"') {
        free(o);
        return NULL;
    }
    o[n] = 0;
    *out = o;
    *len = n;
    return p + 1;
}

struct tt_case {
    char *text;
    size_t len;
    bool add_bos, parse_special;
    int32_t *ids;
    size_t n_ids;
};

/* Parse one fixture line; returns false on a malformed line. */
static inline bool tt_parse_case(const char *line, struct tt_case *c)
{
    memset(c, 0, sizeof(*c));
    c->ids = malloc(4096 * sizeof(int32_t));
    const char *p = tt_skip_ws(line);
    if (*p++ != '{')
        return false;
    for (;;) {
        p = tt_skip_ws(p);
        if (*p == '}')
            return c->text != NULL;
        char *key;
        size_t klen;
        if (!(p = tt_json_string(p, &key, &klen)))
            return false;
        p = tt_skip_ws(p);
        if (*p++ != ':') {
            free(key);
            return false;
        }
        p = tt_skip_ws(p);
        if (!strcmp(key, "text")) {
            p = tt_json_string(p, &c->text, &c->len);
        } else if (!strcmp(key, "add_bos_if_model_wants") || !strcmp(key, "parse_special")) {
            bool v = strncmp(p, "true", 4) == 0;
            p += v ? 4 : 5;
            if (key[0] == 'a')
                c->add_bos = v;
            else
                c->parse_special = v;
        } else if (!strcmp(key, "ids")) {
            p = tt_skip_ws(p + 1);
            while (p && *p != ']') {
                char *e;
                long v = strtol(p, &e, 10);
                if (e == p || c->n_ids >= 4096) {
                    p = NULL;
                    break;
                }
                c->ids[c->n_ids++] = (int32_t)v;
                p = tt_skip_ws(e);
                if (*p == ',')
                    p = tt_skip_ws(p + 1);
            }
            if (p)
                p++;
        } else {
            p = NULL;
        }
        free(key);
        if (!p)
            return false;
        p = tt_skip_ws(p);
        if (*p == ',')
            p++;
    }
}

static inline void tt_case_free(struct tt_case *c)
{
    free(c->text);
    free(c->ids);
}

#endif
