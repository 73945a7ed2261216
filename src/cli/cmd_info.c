/* cmd_info.c -- `ork info MODEL.gguf [--all]`: summarise a GGUF file.
 *
 * Prints the header facts, every metadata key (long arrays and strings abbreviated unless --all),
 * the architecture's descriptor (what ork's forward pass varies on, ork-engine/arch.h), the
 * tensor table and the bytes per tensor type. Read-only: it only uses the GGUF reader and the
 * descriptor table and never loads a model, so it also works on files ork cannot run
 * (unsupported tensor types are marked in the per-type summary, an unknown architecture is
 * said to be one). */
#include "cli.h"

#include <ork-engine/arch.h>
#include <ork-engine/gguf.h>
#include <ork-kernels/types.h>
#include <ork/error.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define CMD "info"
/* Abbreviation limits for the default (non --all) output. */
#define INFO_ARRAY_HEAD 8       /* array elements shown */
#define INFO_STR_MAX 120        /* bytes of a string value shown */
#define INFO_NEST_MAX 3         /* nesting levels of arrays of arrays shown (deeper: header only) */

static void usage(FILE *out)
{
    fprintf(out,
            "usage: ork info MODEL.gguf [--all]\n"
            "\n"
            "Print a GGUF file's header, metadata, tensor table and bytes per tensor type.\n"
            "\n"
            "options:\n"
            "  -m, --model FILE  the GGUF file (or give it as the argument)\n"
            "  --all             print every array element and whole strings\n"
            "  -h, --help        show this help\n");
}

/* Quote a string with C-style escapes for control bytes, '\\' and the quote; stop after
 * `max` bytes (0 = no limit) and say how long it was. */
static void print_str(const char *p, uint64_t len, uint64_t max)
{
    uint64_t n = (max && len > max) ? max : len;
    putchar('\'');
    for (uint64_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        switch (c) {
        case '\n': fputs("\\n", stdout); break;
        case '\t': fputs("\\t", stdout); break;
        case '\r': fputs("\\r", stdout); break;
        case '\\': fputs("\\\\", stdout); break;
        case '\'': fputs("\\'", stdout); break;
        default:
            if (c < 0x20 || c == 0x7f)
                printf("\\x%02x", c);
            else
                putchar(c);     /* UTF-8 bytes pass through */
        }
    }
    putchar('\'');
    if (n < len)
        printf("... (%" PRIu64 " bytes)", len);
}

static void print_scalar(const struct ork_gguf_value *v)
{
    switch (v->type) {
    case ORK_GGUF_UINT8: case ORK_GGUF_UINT16: case ORK_GGUF_UINT32: case ORK_GGUF_UINT64:
        printf("%" PRIu64, v->v.u64);
        break;
    case ORK_GGUF_INT8: case ORK_GGUF_INT16: case ORK_GGUF_INT32: case ORK_GGUF_INT64:
        printf("%" PRId64, v->v.i64);
        break;
    case ORK_GGUF_FLOAT32:
        printf("%.9g", v->v.f64);
        break;
    case ORK_GGUF_FLOAT64:
        printf("%.17g", v->v.f64);
        break;
    case ORK_GGUF_BOOL:
        fputs(v->v.u64 ? "true" : "false", stdout);
        break;
    default:
        break;
    }
}

static void print_array(const struct ork_gguf_array *a, bool all, int level);

static void print_element(const struct ork_gguf_array *a, uint64_t i, bool all, int level)
{
    switch (a->type) {
    case ORK_GGUF_STRING:
        print_str(a->strs[i].ptr, a->strs[i].len, all ? 0 : INFO_STR_MAX);
        break;
    case ORK_GGUF_ARRAY:
        print_array(&a->items[i].v.arr, all, level + 1);
        break;
    case ORK_GGUF_FLOAT32: case ORK_GGUF_FLOAT64:
        printf("%.9g", ork_gguf_arr_f64(a, i));
        break;
    case ORK_GGUF_BOOL:
        fputs(ork_gguf_arr_i64(a, i) ? "true" : "false", stdout);
        break;
    case ORK_GGUF_UINT64:
        printf("%" PRIu64, (uint64_t)ork_gguf_arr_i64(a, i));
        break;
    default:
        printf("%" PRId64, ork_gguf_arr_i64(a, i));
        break;
    }
}

/* "[str x 512] = ['<unk>', '<s>', ...]"; level 1 is a key's own array. */
static void print_array(const struct ork_gguf_array *a, bool all, int level)
{
    uint64_t n = (!all && a->n > INFO_ARRAY_HEAD) ? INFO_ARRAY_HEAD : a->n;
    printf("[%s x %" PRIu64 "]", ork_gguf_type_name(a->type), a->n);
    if (!all && level > INFO_NEST_MAX) {
        if (a->n)
            fputs(" = [...]", stdout);
        return;
    }
    fputs(" = [", stdout);
    for (uint64_t i = 0; i < n; i++) {
        if (i)
            fputs(", ", stdout);
        print_element(a, i, all, level);
    }
    if (n < a->n)
        fputs(", ...", stdout);
    putchar(']');
}

/* Names come from the file: print control bytes escaped so they cannot drive the terminal. */
static void print_name(const char *name, int width)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c < 0x20 || c == 0x7f) {
            print_str(name, len, 0);
            return;
        }
    }
    printf("%-*s", width, name);
}

static void print_kv(const struct ork_gguf_kv *kv, bool all)
{
    const struct ork_gguf_value *v = &kv->value;
    fputs("  ", stdout);
    print_name(kv->key, 40);
    putchar(' ');
    if (v->type == ORK_GGUF_ARRAY) {
        print_array(&v->v.arr, all, 1);
    } else {
        printf("(%s) = ", ork_gguf_type_name(v->type));
        if (v->type == ORK_GGUF_STRING)
            print_str(v->v.str.ptr, v->v.str.len, all ? 0 : INFO_STR_MAX);
        else
            print_scalar(v);
    }
    putchar('\n');
}

/* 1234567 -> "1.18 MiB" */
static const char *human_bytes(uint64_t n, char *buf, size_t cap)
{
    static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    double v = (double)n;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, cap, "%" PRIu64 " B", n);
    else
        snprintf(buf, cap, "%.2f %s", v, units[u]);
    return buf;
}

/* 260400 -> "260.40K" */
static const char *human_count(uint64_t n, char *buf, size_t cap)
{
    if (n >= 1000000000ull)
        snprintf(buf, cap, "%.2fB", n / 1e9);
    else if (n >= 1000000ull)
        snprintf(buf, cap, "%.2fM", n / 1e6);
    else if (n >= 1000ull)
        snprintf(buf, cap, "%.2fK", n / 1e3);
    else
        snprintf(buf, cap, "%" PRIu64, n);
    return buf;
}

static void print_tensors(const struct ork_gguf *g)
{
    uint64_t n = ork_gguf_n_tensors(g);
    uint64_t count[ORK_TYPE_COUNT] = { 0 }, bytes[ORK_TYPE_COUNT] = { 0 }, elems[ORK_TYPE_COUNT] = { 0 };
    int name_w = 4;
    for (uint64_t i = 0; i < n; i++) {
        int l = (int)strlen(ork_gguf_tensor_at(g, i)->name);
        if (l > name_w)
            name_w = l < 64 ? l : 64;
    }
    printf("\ntensors: %" PRIu64 "\n", n);
    if (n)
        printf("  %5s  %-*s  %-7s  %-24s  %12s  %12s\n", "#", name_w, "name", "type", "shape",
               "offset", "bytes");
    for (uint64_t i = 0; i < n; i++) {
        const struct ork_gguf_tensor *t = ork_gguf_tensor_at(g, i);
        char shape[128];
        int len = snprintf(shape, sizeof shape, "[");
        for (uint32_t d = 0; d < t->n_dims && len < (int)sizeof shape; d++)
            len += snprintf(shape + len, sizeof shape - (size_t)len, "%s%" PRIu64, d ? ", " : "",
                            t->ne[d]);
        if (len < (int)sizeof shape)
            snprintf(shape + len, sizeof shape - (size_t)len, "]");
        printf("  %5" PRIu64 "  ", i);
        print_name(t->name, name_w);
        printf("  %-7s  %-24s  %12" PRIu64 "  %12" PRIu64 "\n", ork_type_name(t->type), shape,
               t->offset, t->nbytes);
        /* the reader guarantees a known type id */
        count[t->type]++;
        bytes[t->type] += t->nbytes;
        elems[t->type] += t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
    }
    if (!n)
        return;
    printf("\nbytes per type:\n");
    printf("  %-7s  %7s  %14s  %12s\n", "type", "tensors", "elements", "bytes");
    for (uint32_t ty = 0; ty < ORK_TYPE_COUNT; ty++) {
        if (!count[ty])
            continue;
        const struct ork_type_traits *tt = ork_type_traits(ty);
        char hb[32];
        printf("  %-7s  %7" PRIu64 "  %14" PRIu64 "  %12" PRIu64 "  %s%s\n", tt->name, count[ty],
               elems[ty], bytes[ty], human_bytes(bytes[ty], hb, sizeof hb),
               tt->supported ? "" : "  (not supported by ork)");
    }
}

static const char *softcap_name(enum ork_softcap c)
{
    return c == ORK_SOFTCAP_ALWAYS ? "always" : c == ORK_SOFTCAP_IF_KEY ? "when the key is set"
                                                                       : "no";
}

/* Whether the descriptor's layer tensors include slot t. */
static bool lists(const struct ork_arch_desc *d, enum ork_layer_tensor t)
{
    for (size_t i = 0; i < d->n_layer_tensors; i++)
        if (d->layer_tensors[i].slot == t)
            return true;
    return false;
}

/* The descriptor of general.architecture (arch.c): every setting the forward pass varies on. */
static void print_arch(const struct ork_gguf *g)
{
    struct ork_gguf_str s;
    if (ork_gguf_get_str(g, "general.architecture", &s) < 0)
        return;
    const struct ork_arch_desc *d = ork_arch_find(s.ptr, s.len);
    printf("\narchitecture: %.*s", (int)(s.len > 64 ? 64 : s.len), s.ptr);
    if (!d) {
        printf(" (not one ork runs)\n");
        return;
    }
    printf(" (ork descriptor)\n");
    printf("  rope             %s%s%s%s\n", d->rope == ORK_ROPE_NEOX ? "neox (halves)"
                                                                    : "norm (adjacent pairs)",
           d->rope_scaling & ORK_ROPE_SCALING_LINEAR ? ", linear scaling" : "",
           d->rope_scaling & ORK_ROPE_SCALING_FACTORS ? ", rope_freqs" : "",
           d->rope_scaling & ORK_ROPE_SCALING_LONGROPE ? ", longrope short/long factors" : "");
    printf("  norms            %s\n", d->norm == ORK_NORM_BOTH ? "pre and post (sandwich)"
                                      : d->norm == ORK_NORM_POST ? "post" : "pre");
    printf("  ffn              %s%s%s\n", d->moe ? "routed experts, " : "",
           d->act == ORK_FFN_GELU ? "gelu (tanh, fp16 table)" : "silu",
           d->ffn_gated ? " gated" : "");
    printf("  embedding        %s\n",
           d->embd_scale == ORK_EMBD_SCALE_SQRT_DIM ? "x sqrt(dim)" : "as stored");
    printf("  q/k/v bias       %s\n", d->qkv_bias ? "required"
                                      : lists(d, ORK_LT_BQ) ? "when present" : "no");
    printf("  q/k norm         %s\n", d->qk_norm ? "required"
                                      : lists(d, ORK_LT_Q_NORM) ? "when present" : "no");
    printf("  attention scale  1/sqrt(head_dim)");
    if (d->attn_scale_alt_layers)
        printf(", 1/sqrt(dim/heads) at %d layers", d->attn_scale_alt_layers);
    printf("\n  attn softcap     %s", softcap_name(d->attn_softcap));
    if (d->attn_softcap == ORK_SOFTCAP_ALWAYS)
        printf(" (default %g)", (double)d->attn_softcap_default);
    printf("\n  final softcap    %s", softcap_name(d->final_softcap));
    if (d->final_softcap == ORK_SOFTCAP_ALWAYS)
        printf(" (default %g)", (double)d->final_softcap_default);
    printf("\n  sliding window   ");
    if (!d->sliding_window)
        printf("no (the keys are ignored)\n");
    else
        printf("period %d, window %d by default; local layers' rope: %s\n",
               d->swa_period_default, d->swa_window_default,
               d->swa_rope == ORK_SWA_ROPE_OWN ? "own base (freq_base_swa), no scaling"
                                               : "the global one");
    printf("  output           %s\n", d->output == ORK_OUTPUT_TIED ? "tied to token_embd"
                                      : "output.weight, else token_embd");
    printf("  layer tensors   ");
    for (size_t i = 0; i < d->n_layer_tensors; i++)
        printf(" %s%s", d->layer_tensors[i].suffix,
               ork_arch_tensor_required(d, &d->layer_tensors[i]) ? "" : "?");
    printf("\n");
}

static int info(const char *path, bool all)
{
    struct ork_gguf *g = NULL;
    int ret = ork_gguf_open(path, &g);
    if (ret < 0) {
        const char *msg = ork_error_describe(ret);
        if (strstr(msg, path))      /* the message already names the file */
            fprintf(stderr, "ork %s: %s\n", CMD, msg);
        else
            fprintf(stderr, "ork %s: %s: %s\n", CMD, path, msg);
        return ORK_EXIT_ERROR;
    }
    uint64_t params = 0, tbytes = 0;
    for (uint64_t i = 0; i < ork_gguf_n_tensors(g); i++) {
        const struct ork_gguf_tensor *t = ork_gguf_tensor_at(g, i);
        params += t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
        tbytes += t->nbytes;
    }
    char b1[32], b2[32], c1[32];
    printf("file:        %s\n", path);
    printf("version:     %" PRIu32 "\n", ork_gguf_version(g));
    printf("alignment:   %" PRIu32 "\n", ork_gguf_alignment(g));
    printf("file size:   %" PRIu64 " bytes (%s)\n", ork_gguf_file_size(g),
           human_bytes(ork_gguf_file_size(g), b1, sizeof b1));
    printf("data offset: %" PRIu64 "\n", ork_gguf_data_offset(g));
    printf("tensors:     %" PRIu64 " (%" PRIu64 " bytes, %s)\n", ork_gguf_n_tensors(g), tbytes,
           human_bytes(tbytes, b2, sizeof b2));
    printf("parameters:  %" PRIu64 " (%s)\n", params, human_count(params, c1, sizeof c1));
    printf("\nmetadata: %" PRIu64 " keys\n", ork_gguf_n_kv(g));
    for (uint64_t i = 0; i < ork_gguf_n_kv(g); i++)
        print_kv(ork_gguf_kv_at(g, i), all);
    print_arch(g);
    print_tensors(g);
    ork_gguf_close(g);
    if (fflush(stdout) != 0) {
        fprintf(stderr, "ork %s: error writing output\n", CMD);
        return ORK_EXIT_ERROR;
    }
    return ORK_EXIT_OK;
}

int ork_cmd_info(int argc, char **argv)
{
    const char *path = NULL;
    bool all = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return ORK_EXIT_OK;
        } else if (!strcmp(a, "--all")) {
            all = true;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            const char *v = ork_cli_value(CMD, argc, argv, &i);
            if (!v)
                return ORK_EXIT_USAGE;
            if (path) {
                fprintf(stderr, "ork %s: only one model file may be given\n", CMD);
                return ORK_EXIT_USAGE;
            }
            path = v;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "ork %s: unknown option '%s'\n", CMD, a);
            usage(stderr);
            return ORK_EXIT_USAGE;
        } else {
            if (path) {
                fprintf(stderr, "ork %s: only one model file may be given\n", CMD);
                return ORK_EXIT_USAGE;
            }
            path = a;
        }
    }
    if (!path) {
        fprintf(stderr, "ork %s: no model file given\n", CMD);
        usage(stderr);
        return ORK_EXIT_USAGE;
    }
    return info(path, all);
}
