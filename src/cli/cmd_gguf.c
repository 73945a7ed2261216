/* cmd_gguf.c -- `ork gguf synth ...`: write a synthetic model with the shapes of a published
 * one (random weights, real or byte-level tokenizer) for speed measurements and loader tests.
 *
 * Only the command line lives here; the model is built by ork_synth_write (engine/synth.c).
 * Not here: reading or summarising GGUF files (`ork info`). */
#include "cli.h"

#include <ork-engine/arch.h>
#include <ork-tooling/synth.h>
#include <ork-kernels/types.h>
#include <ork/error.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define CMD "gguf synth"
#define MAX_LAYERS_OPT 1024
#define MAX_THREADS_OPT 1024

static void usage_gguf(FILE *out)
{
    fprintf(out,
            "usage: ork gguf synth [options] -o FILE.gguf\n"
            "\n"
            "subcommands:\n"
            "  synth   write a synthetic model with the shapes of a published one\n");
}

static void usage_synth(FILE *out)
{
    fprintf(out,
            "usage: ork gguf synth --arch ARCH --preset SIZE [options] -o FILE.gguf\n"
            "\n"
            "Write a GGUF v3 model with the exact shapes and hyperparameters of a published\n"
            "model, seeded random weights (std 0.02, norms 1) and a real or byte-level\n"
            "tokenizer. It generates tokens at the real model's speed, never meaningful text.\n"
            "\n"
            "options:\n"
            "  --arch ARCH       llama, qwen2, qwen3, gemma2, gemma3, phi3 or qwen3moe\n"
            "  --preset SIZE     a preset name or alias (below)\n"
            "  --type TYPE       f16, q8_0 (default), q4_0 or q4_k\n"
            "  --layers N        override the number of blocks\n"
            "  --seed S          random seed (default 1); same options -> same bytes\n"
            "  --vocab FILE      copy every tokenizer.* key from this GGUF (default: byte-level\n"
            "                    fallback vocabulary, padded to the preset's vocabulary size)\n"
            "  -t, --threads N   generation threads (default: online CPUs; output is the same)\n"
            "  -o, --output FILE the file to write\n"
            "  -q, --quiet       no progress on stderr\n"
            "  -h, --help        show this help\n"
            "\npresets (arch name [aliases]: source):\n");
    for (size_t i = 0; i < ork_synth_n_presets(); i++) {
        const struct ork_synth_preset *p = ork_synth_preset_at(i);
        fprintf(out, "  %-8s %-7s %-9s %s: dim %d, %d layers, %d/%d heads, head_dim %d, ffn %d, "
                "vocab %d%s\n", p->arch, p->name, p->aliases, p->source, p->dim, p->n_layers,
                p->n_heads, p->n_kv_heads, p->head_dim, p->ffn_dim, p->n_vocab,
                p->tied ? ", tied" : "");
        if (p->n_expert > 0)
            fprintf(out, "                     %d experts of %d, %d used\n", p->n_expert,
                    p->expert_ffn_dim, p->n_expert_used);
    }
}

static bool parse_type(const char *s, uint32_t *out)
{
    static const struct { const char *name; uint32_t type; } types[] = {
        { "f16", ORK_TYPE_F16 }, { "q8_0", ORK_TYPE_Q8_0 }, { "q4_0", ORK_TYPE_Q4_0 },
        { "q4_k", ORK_TYPE_Q4_K },
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (!strcasecmp(s, types[i].name)) {
            *out = types[i].type;
            return true;
        }
    return false;
}

struct progress {
    bool on;
    double t0;
    int last_pct;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void on_progress(void *user, uint64_t done, uint64_t total)
{
    struct progress *pr = user;
    int pct = total ? (int)(done * 100 / total) : 100;
    if (!pr->on || pct == pr->last_pct)
        return;
    pr->last_pct = pct;
    fprintf(stderr, "\rork gguf synth: %3d%% (%.1f / %.1f GB, %.0f s)", pct, (double)done / 1e9,
            (double)total / 1e9, now_s() - pr->t0);
    if (done == total)
        fputc('\n', stderr);
}

static int cmd_synth(int argc, char **argv)
{
    struct ork_synth_params p;
    ork_synth_params_default(&p);
    bool quiet = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        long long ll;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage_synth(stdout);
            return ORK_EXIT_OK;
        } else if (!strcmp(a, "--arch")) {
            if (!(p.arch = ork_cli_value(CMD, argc, argv, &i)))
                return ORK_EXIT_USAGE;
        } else if (!strcmp(a, "--preset")) {
            if (!(p.preset = ork_cli_value(CMD, argc, argv, &i)))
                return ORK_EXIT_USAGE;
        } else if (!strcmp(a, "--type")) {
            if (!(v = ork_cli_value(CMD, argc, argv, &i)))
                return ORK_EXIT_USAGE;
            if (!parse_type(v, &p.type)) {
                fprintf(stderr, "ork %s: invalid value '%s' for --type: expected f16, q8_0, q4_0 "
                        "or q4_k\n", CMD, v);
                return ORK_EXIT_USAGE;
            }
        } else if (!strcmp(a, "--layers")) {
            if (!(v = ork_cli_value(CMD, argc, argv, &i)) ||
                !ork_cli_parse_int(CMD, "--layers", v, 1, MAX_LAYERS_OPT, &ll))
                return ORK_EXIT_USAGE;
            p.n_layers = (int32_t)ll;
        } else if (!strcmp(a, "--seed")) {
            if (!(v = ork_cli_value(CMD, argc, argv, &i)) ||
                !ork_cli_parse_u64(CMD, "--seed", v, &p.seed))
                return ORK_EXIT_USAGE;
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            if (!(v = ork_cli_value(CMD, argc, argv, &i)) ||
                !ork_cli_parse_int(CMD, "--threads", v, 1, MAX_THREADS_OPT, &ll))
                return ORK_EXIT_USAGE;
            p.n_threads = (int)ll;
        } else if (!strcmp(a, "--vocab")) {
            if (!(p.vocab_path = ork_cli_value(CMD, argc, argv, &i)))
                return ORK_EXIT_USAGE;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!(p.out_path = ork_cli_value(CMD, argc, argv, &i)))
                return ORK_EXIT_USAGE;
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            quiet = true;
        } else {
            fprintf(stderr, "ork %s: unknown option '%s' (see --help)\n", CMD, a);
            return ORK_EXIT_USAGE;
        }
    }
    if (!p.arch || !p.preset || !p.out_path) {
        fprintf(stderr, "ork %s: --arch, --preset and -o are required (see --help)\n", CMD);
        return ORK_EXIT_USAGE;
    }
    if (!ork_arch_find(p.arch, strlen(p.arch))) {
        char names[256] = "";
        for (size_t i = 0; i < ork_arch_count(); i++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
                     ork_arch_at(i)->name);
        fprintf(stderr, "ork %s: invalid value '%s' for --arch: expected one of %s\n", CMD,
                p.arch, names);
        return ORK_EXIT_USAGE;
    }
    const struct ork_synth_preset *ps = ork_synth_preset_find(p.arch, p.preset);
    if (!ps) {
        fprintf(stderr, "ork %s: no preset '%s' for %s (see --help for the list)\n", CMD,
                p.preset, p.arch);
        return ORK_EXIT_USAGE;
    }
    struct progress pr = { .on = !quiet && isatty(2), .t0 = now_s(), .last_pct = -1 };
    p.progress = on_progress;
    p.user = &pr;
    struct ork_synth_info info;
    int ret = ork_synth_write(&p, &info);
    if (ret < 0) {
        ork_cli_error(CMD, ret);
        return ORK_EXIT_ERROR;
    }
    if (!quiet)
        fprintf(stderr, "ork %s: wrote %s: %s shapes (%s), %s, %" PRIu64 " tensors, %.3f B params, "
                "%.2f GB, vocab %d rows / %d tokens%s, %.1f s\n", CMD, p.out_path, ps->source,
                p.arch, ork_type_name(p.type), info.n_tensors, (double)info.n_params / 1e9,
                (double)info.file_bytes / 1e9, info.n_vocab, info.n_tokens,
                info.n_fallback ? " (some matrices Q8_0: rows not a multiple of the block)" : "",
                now_s() - pr.t0);
    return ORK_EXIT_OK;
}

int ork_cmd_gguf(int argc, char **argv)
{
    if (argc < 2) {
        usage_gguf(stderr);
        return ORK_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        usage_gguf(stdout);
        return ORK_EXIT_OK;
    }
    if (!strcmp(argv[1], "synth"))
        return cmd_synth(argc - 1, argv + 1);
    fprintf(stderr, "ork gguf: unknown subcommand '%s'\n", argv[1]);
    usage_gguf(stderr);
    return ORK_EXIT_USAGE;
}
