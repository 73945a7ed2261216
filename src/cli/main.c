/* main.c -- the ork command-line program: dispatch to subcommands. The only place that exits. */
#include "cli.h"

#include <ork/debug.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ork_cmd {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
};

static const struct ork_cmd cmds[] = {
    { "run",        ork_cmd_run,        "generate text from a prompt" },
    { "chat",       ork_cmd_chat,       "interactive chat using the model's template" },
    { "perplexity", ork_cmd_perplexity, "perplexity of a text file" },
    { "serve",      ork_cmd_serve,      "HTTP server (llama-server and OpenAI APIs)" },
    { "info",       ork_cmd_info,       "summarise a GGUF file's metadata and tensors" },
    { "regdump",    ork_cmd_regdump,    "print an NPU regcmd program buffer symbolically" },
    { "selftest",   ork_cmd_selftest,   "validate NPU matmul against the CPU reference" },
    { "gguf",       ork_cmd_gguf,       "write GGUF files (gguf synth: synthetic models)" },
    { "bench",      ork_cmd_bench,      "prefill/decode speed (llama-bench style), memory bandwidth" },
    { "top",        ork_cmd_top,        "live per-core NPU load and per-CPU load" },
    { "pack",       ork_cmd_pack,       "build MODEL.orkpack (NPU-ready weights) beside a GGUF model" },
    { "devices",    ork_cmd_devices,    "list the NPU backends, their nodes, drivers and status" },
};

static void usage(FILE *out)
{
    fprintf(out, "usage: ork <command> [options]   (ork <command> --help for details)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        fprintf(out, "  %-11s %s\n", cmds[i].name, cmds[i].summary);
    fprintf(out, "\nenvironment:\n  ORK_DEBUG=flag,...  debug logging/bypass flags (ORK_DEBUG=help lists them)\n");
}

int main(int argc, char **argv)
{
    if (ork_debug_help_requested()) {
        ork_debug_print_help(stdout);
        return 0;
    }
    if (argc < 2) {
        usage(stderr);
        return ORK_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("ork 0.1.0\n");
        return 0;
    }
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        if (strcmp(argv[1], cmds[i].name))
            continue;
        /* --name=value is the same as --name value on every command */
        char **nv;
        int nc;
        if (ork_cli_split_eq(argc - 1, argv + 1, &nv, &nc) < 0) {
            fprintf(stderr, "ork %s: out of memory\n", cmds[i].name);
            exit(ORK_EXIT_ERROR);
        }
        int rc = cmds[i].fn(nc, nv);
        ork_cli_split_eq_free(nv, argv + 1);
        exit(rc);
    }
    fprintf(stderr, "ork: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return ORK_EXIT_USAGE;
}
