/* json_lite.h -- just enough JSON reading for the golden tests: find a member of an object,
 * index an array, and flatten the numbers of a (nested) array. Works on a NUL-terminated buffer
 * and returns pointers into it; no allocation beyond reading the file. Not a validating parser:
 * the inputs are the fixture vectors written by a JSON library. */
#ifndef ORK_TESTS_JSON_LITE_H
#define ORK_TESTS_JSON_LITE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whole file as a NUL-terminated malloc'd string, or NULL. */
static inline char *jl_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (buf)
        buf[n] = 0;
    fclose(f);
    return buf;
}

static inline const char *jl_ws(const char *p)
{
    while (p && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    return p;
}

/* p at '"': returns the character after the closing quote. */
static inline const char *jl_skip_string(const char *p)
{
    for (p++; *p && *p != '"'; p++)
        if (*p == '\\' && p[1])
            p++;
    return *p ? p + 1 : p;
}

/* p at the start of any value: returns the character after it (NULL on malformed input). */
static inline const char *jl_skip(const char *p)
{
    p = jl_ws(p);
    if (!p || !*p)
        return NULL;
    if (*p == '"')
        return jl_skip_string(p);
    if (*p == '{' || *p == '[') {
        int depth = 0;
        while (*p) {
            if (*p == '"') {
                p = jl_skip_string(p);
                continue;
            }
            if (*p == '{' || *p == '[')
                depth++;
            else if (*p == '}' || *p == ']') {
                if (--depth == 0)
                    return p + 1;
            }
            p++;
        }
        return NULL;
    }
    while (*p && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n')
        p++;
    return p;
}

/* Value of member `key` of the object at obj, or NULL. */
static inline const char *jl_get(const char *obj, const char *key)
{
    const char *p = jl_ws(obj);
    if (!p || *p != '{')
        return NULL;
    size_t klen = strlen(key);
    p = jl_ws(p + 1);
    while (p && *p == '"') {
        const char *kstart = p + 1;
        const char *kend = jl_skip_string(p);
        p = jl_ws(kend);
        if (!p || *p != ':')
            return NULL;
        const char *val = jl_ws(p + 1);
        if ((size_t)(kend - 1 - kstart) == klen && !memcmp(kstart, key, klen))
            return val;
        p = jl_ws(jl_skip(val));
        if (!p || *p != ',')
            return NULL;
        p = jl_ws(p + 1);
    }
    return NULL;
}

/* Element i of the array at arr, or NULL. */
static inline const char *jl_at(const char *arr, int i)
{
    const char *p = jl_ws(arr);
    if (!p || *p != '[')
        return NULL;
    p = jl_ws(p + 1);
    for (int k = 0; p && *p && *p != ']'; k++) {
        if (k == i)
            return p;
        p = jl_ws(jl_skip(p));
        if (!p || *p != ',')
            return NULL;
        p = jl_ws(p + 1);
    }
    return NULL;
}

/* All numbers inside the value at v (nested arrays flattened, in order), up to cap. Returns the
 * count found (may exceed cap), or -1 if v is NULL. */
static inline int jl_numbers(const char *v, double *out, int cap)
{
    if (!v)
        return -1;
    const char *end = jl_skip(v);
    if (!end)
        return -1;
    int n = 0;
    for (const char *p = v; p < end;) {
        if (*p == '"') {
            p = jl_skip_string(p);
            continue;
        }
        if (*p == '-' || (*p >= '0' && *p <= '9')) {
            char *e;
            double d = strtod(p, &e);
            if (n < cap)
                out[n] = d;
            n++;
            p = e;
            continue;
        }
        p++;
    }
    return n;
}

#endif
