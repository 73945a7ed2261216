/* args.c -- strict option-value parsing shared by the subcommands. */
#include "cli.h"

#include <ork/error.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool ork_cli_parse_int(const char *cmd, const char *opt, const char *s, long long lo, long long hi,
                       long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end) {
        fprintf(stderr, "ork %s: invalid value '%s' for %s: not an integer\n", cmd, s, opt);
        return false;
    }
    if (v < lo || v > hi) {
        fprintf(stderr, "ork %s: invalid value '%s' for %s: must be in [%lld, %lld]\n", cmd, s, opt,
                lo, hi);
        return false;
    }
    *out = v;
    return true;
}

bool ork_cli_parse_u64(const char *cmd, const char *opt, const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    if (*s == '-') {
        fprintf(stderr, "ork %s: invalid value '%s' for %s: must not be negative\n", cmd, s, opt);
        return false;
    }
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || end == s || *end) {
        fprintf(stderr, "ork %s: invalid value '%s' for %s: not an unsigned integer\n", cmd, s, opt);
        return false;
    }
    *out = v;
    return true;
}

bool ork_cli_parse_float(const char *cmd, const char *opt, const char *s, double lo, double hi,
                         double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v)) {
        fprintf(stderr, "ork %s: invalid value '%s' for %s: not a number\n", cmd, s, opt);
        return false;
    }
    if (v < lo || v > hi) {
        fprintf(stderr, "ork %s: invalid value '%s' for %s: must be in [%g, %g]\n", cmd, s, opt, lo,
                hi);
        return false;
    }
    *out = v;
    return true;
}

bool ork_cli_parse_kv_type(const char *cmd, const char *s, enum ork_kv_type *out)
{
    if (!strcmp(s, "f32") || !strcmp(s, "f16")) {
        *out = !strcmp(s, "f16") ? ORK_KV_F16 : ORK_KV_F32;
        return true;
    }
    fprintf(stderr, "ork %s: invalid value '%s' for --kv-type: must be f32 or f16\n", cmd, s);
    return false;
}

const char *ork_cli_value(const char *cmd, int argc, char **argv, int *i)
{
    if (*i + 1 >= argc) {
        fprintf(stderr, "ork %s: %s needs a value\n", cmd, argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

void ork_cli_error(const char *cmd, int code)
{
    fprintf(stderr, "ork %s: %s\n", cmd, ork_error_describe(code));
}

/* An argument is split only when the part before '=' looks like a long option name
 * ("--" then letters, digits and '-'), so that a prompt such as -p "--a b=c" stays whole. */
static bool long_opt_with_value(const char *a, size_t *name_len)
{
    if (strncmp(a, "--", 2) != 0 || !a[2])
        return false;
    size_t k = 2;
    while (a[k] && a[k] != '=') {
        char c = a[k];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-'))
            return false;
        k++;
    }
    if (a[k] != '=')
        return false;
    *name_len = k;
    return true;
}

int ork_cli_split_eq(int argc, char **argv, char ***out_argv, int *out_argc)
{
    int n_split = 0;
    size_t name_len, names = 0;
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
        if (long_opt_with_value(argv[i], &name_len)) {
            n_split++;
            names += name_len + 1;
        }
    }
    *out_argv = argv;
    *out_argc = argc;
    if (!n_split)
        return 0;
    /* one block: the new argv (NULL-terminated, as argv is), then the split-off names */
    size_t n_ptr = (size_t)argc + (size_t)n_split + 1;
    char **nv = malloc(n_ptr * sizeof(*nv) + names);
    if (!nv)
        return ORK_ENOMEM;
    char *name = (char *)(nv + n_ptr);
    int j = 0;
    bool done = false;
    for (int i = 0; i < argc; i++) {
        char *a = argv[i];
        if (!strcmp(a, "--"))
            done = true;
        if (i > 0 && !done && long_opt_with_value(a, &name_len)) {
            memcpy(name, a, name_len);
            name[name_len] = 0;
            nv[j++] = name;
            name += name_len + 1;
            nv[j++] = a + name_len + 1;   /* the value, inside the original string */
        } else {
            nv[j++] = a;
        }
    }
    nv[j] = NULL;
    *out_argv = nv;
    *out_argc = j;
    return 0;
}

void ork_cli_split_eq_free(char **nv, char **argv)
{
    if (nv != argv)
        free(nv);
}
