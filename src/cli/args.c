/* args.c -- strict option-value parsing shared by the subcommands. */
#include "cli.h"

#include <ork/dcomp.h>
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

/* --npu-weights int8|dcomp|dcomp:L|w4a8 and its companions (docs/cli.md "NPU weights"). */
#define NPU_WEIGHTS_CHOICES "int8, dcomp or dcomp:L with L one of 7, 15, 31, 63, 127, or w4a8"

static bool parse_npu_weights(const char *cmd, const char *s, struct ork_npu_weights_opts *wo)
{
    if (!strcmp(s, "int8") || !strcmp(s, "dcomp") || !strcmp(s, "w4a8")) {
        wo->encoding = !strcmp(s, "dcomp")  ? ORK_NPU_WENC_DCOMP
                       : !strcmp(s, "w4a8") ? ORK_NPU_WENC_W4A8
                                            : ORK_NPU_WENC_INT8;
        wo->levels = 0;
        return true;
    }
    if (!strncmp(s, "dcomp:", 6)) {
        char *end;
        errno = 0;
        unsigned long l = strtoul(s + 6, &end, 10);
        for (uint32_t g = 0; g < ORK_DCOMP_N_GRIDS && !errno && end != s + 6 && !*end; g++)
            if (l == ork_dcomp_grids[g]) {
                wo->encoding = ORK_NPU_WENC_DCOMP;
                wo->levels = (uint32_t)l;
                return true;
            }
    }
    fprintf(stderr, "ork %s: invalid value '%s' for --npu-weights: must be " NPU_WEIGHTS_CHOICES
            "\n", cmd, s);
    return false;
}

int ork_cli_npu_weights_opt(const char *cmd, int argc, char **argv, int *i,
                            struct ork_npu_weights_opts *wo)
{
    const char *a = argv[*i], *v;
    if (!strcmp(a, "--npu-weights")) {
        if (!(v = ork_cli_value(cmd, argc, argv, i)) || !parse_npu_weights(cmd, v, wo))
            return -1;
        return 1;
    }
    if (!strcmp(a, "--npu-weights-max-err")) {
        double e;
        if (!(v = ork_cli_value(cmd, argc, argv, i)) ||
            !ork_cli_parse_float(cmd, a, v, 1e-6, 0.999, &e))
            return -1;
        wo->max_rel_rmse = e;
        return 1;
    }
    if (!strcmp(a, "--npu-weights-raw")) {
        wo->flags |= ORK_NPU_WENC_RAW_CODES;
        return 1;
    }
    if (!strcmp(a, "--npu-weights-clip")) {
        wo->flags |= ORK_NPU_WENC_CLIP;
        return 1;
    }
    if (!strcmp(a, "--npu-weights-rotate")) {
        wo->flags |= ORK_NPU_WENC_ROTATE;
        return 1;
    }
    /* dcomp: keep DCOMP where the decompressor cannot win (docs/dcomp.md "Fallback") */
    if (!strcmp(a, "--npu-weights-force")) {
        wo->force = true;
        return 1;
    }
    /* calibrated codes (docs/dcomp.md "Calibrated quantisation") */
    if (!strcmp(a, "--npu-weights-calib")) {
        if (!(v = ork_cli_value(cmd, argc, argv, i)))
            return -1;
        wo->calib_path = v;
        return 1;
    }
    /* mixed precision: these tensors stay int8 (docs/w4a8.md "Mixed precision") */
    if (!strcmp(a, "--npu-weights-int8")) {
        if (!(v = ork_cli_value(cmd, argc, argv, i)))
            return -1;
        wo->int8_tensors = v;
        return 1;
    }
    if (!strcmp(a, "--npu-weights-calib-tokens")) {
        long long n;
        if (!(v = ork_cli_value(cmd, argc, argv, i)) ||
            !ork_cli_parse_int(cmd, a, v, 2, 1 << 24, &n))
            return -1;
        wo->calib_tokens = (uint32_t)n;
        return 1;
    }
    if (!strcmp(a, "--npu-weights-calib-mem")) {
        long long n;
        if (!(v = ork_cli_value(cmd, argc, argv, i)) ||
            !ork_cli_parse_int(cmd, a, v, 1, 1 << 24, &n))
            return -1;
        wo->calib_mem_bytes = (uint64_t)n << 20;
        return 1;
    }
    return 0;
}

void ork_cli_npu_weights_help(FILE *out)
{
    fprintf(out,
            "  --npu-weights int8|dcomp|dcomp:L|w4a8  NPU weight codes (docs/dcomp.md,\n"
            "                            docs/w4a8.md): int8 (default: per channel +-127, raw),\n"
            "                            dcomp (per tensor the coarsest grid within\n"
            "                            --npu-weights-max-err, stored compressed for the weight\n"
            "                            decompressor), dcomp:L (every tensor on [-L, L], L = 7,\n"
            "                            15, 31, 63, 127) or w4a8 (per channel int4 [-8, 7] on\n"
            "                            the int4 MAC); dcomp and w4a8 need the device's\n"
            "                            capability (`ork selftest --confirm-forms`, --npu-caps;\n"
            "                            the sim has them)\n"
            "  --npu-weights-max-err E   dcomp: a tensor's rel-RMSE bound (default: "
            ORK_STR(ORK_NPU_WENC_DEFAULT_MAX_ERR) ")\n"
            "  --npu-weights-raw         dcomp, w4a8: the same codes stored raw int8 (no\n"
            "                            decompressor or int4 MAC; identical results)\n"
            "  --npu-weights-clip        dcomp, w4a8: per channel the clipped scale with the\n"
            "                            least squared error (default: max-abs scales)\n"
            "  --npu-weights-rotate      any encoding: rotate K (Walsh-Hadamard x DCT) in the\n"
            "                            weights and, on the CPU, in each matmul's input: the\n"
            "                            same products, outliers spread before quantisation\n"
            "  --npu-weights-force       dcomp: keep DCOMP streams where the device's\n"
            "                            decompressor is known to be no faster than a core's\n"
            "                            DRAM share (else int8, with a warning saying why)\n"
            "  --npu-weights-calib FILE  any encoding: run the model over the text FILE at load\n"
            "                            and choose each tensor's codes again (same grid and\n"
            "                            scales) to compensate the rounding error on the\n"
            "                            inputs seen (docs/dcomp.md \"Calibrated quantisation\")\n"
            "  --npu-weights-calib-tokens N  tokens of FILE to run (default: "
            ORK_STR(ORK_NPU_WENC_DEFAULT_CALIB_TOKENS) ")\n"
            "  --npu-weights-calib-mem MIB  memory for the inputs' statistics per pass over\n"
            "                            FILE (default: 1024; more passes when short)\n"
            "  --npu-weights-int8 SPEC   dcomp, w4a8: keep these tensors on int8 codes, a list\n"
            "                            of classes qkv, o, gate_up, down, output, all, each\n"
            "                            optionally :L or :A..B for its layers (0-based,\n"
            "                            negative from the last), e.g. output,down:0..1\n"
            "                            (docs/w4a8.md \"Mixed precision\")\n");
}
