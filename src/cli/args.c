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
