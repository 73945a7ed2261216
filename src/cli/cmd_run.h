/* cmd_run.h -- options shared by the model-running subcommands (run, chat, perplexity): model
 * path, sampling, threads, context, batch, KV type, stop strings. Parsed by ork_cli_gen_opt() in
 * cmd_run.c; each subcommand adds its own options around it. src/cli/ only. */
#ifndef ORK_CLI_CMD_RUN_H
#define ORK_CLI_CMD_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <ork-engine/engine.h>

#define ORK_CLI_MAX_STOPS 16

struct ork_cli_gen_opts {
    const char *model;                      /* -m */
    struct ork_sampler_params sampling;     /* --temp --top-k --top-p --min-p --seed ... */
    int32_t n_predict;                      /* -n; -1: until end of generation / context full */
    struct ork_session_params session;      /* -t -c -b --kv-type */
    const char *stops[ORK_CLI_MAX_STOPS];   /* --stop (repeatable) */
    size_t n_stops;
    bool no_bos;                            /* --no-bos */
    bool verbose;                           /* -v: model summary, cache reuse, timings */
    struct ork_model_params model_params;   /* --device --sim-timing --npu-* (ork_cli_device_opt) */
    bool profile;                           /* --profile: NPU executor sections and counters */
    const char *trace;                      /* --trace FILE.json: Perfetto timeline */
    const char *grammar;                    /* --grammar TEXT or --grammar-file FILE (GBNF) */
    const char *grammar_file;
    const char *json_schema;                /* --json-schema TEXT (-j) */
    bool ignore_eos;                        /* --ignore-eos */
    /* speculative decoding (ork-engine/speculative.h): --draft-model (-md), --lookup,
     * --draft-max, --draft-min, --draft-p-min */
    const char *draft_model;
    int32_t lookup, draft_max, draft_min;
    float draft_p_min;
};

/* The constrained-output objects ork_cli_gen_setup made for a sampler (NULL: none); free them
 * with ork_cli_gen_constraint_free after the sampler. */
struct ork_cli_constraint {
    struct ork_grammar *grammar;
    struct ork_grammar_vocab *vocab;
};
void ork_cli_gen_constraint_free(void);

/* The model load and device options (--mmap, --no-mmap, --no-repack, --device, --sim-timing,
 * --npu-executor, --npu-max-m, --no-pack, --rebuild-pack, --pack): like ork_cli_gen_opt, 1 consumed,
 * 0 not one of them, -1 usage error. Help: ork_cli_load_help (the load options) and
 * ork_cli_device_help (the rest). */
int ork_cli_device_opt(const char *cmd, int argc, char **argv, int *i, struct ork_model_params *mp);
/* True when name is one of the device names (auto cpu npu rknpu rocket sim sim-rocket). */
bool ork_cli_device_valid(const char *name);
/* Turn device "auto" (or NULL) into "npu" when libork finds an NPU, else "cpu" (quietly when
 * there is none; a device that exists but cannot be opened is named on stderr). Called by every
 * command before it loads a model. */
void ork_cli_device_resolve(const char *cmd, struct ork_model_params *mp, bool verbose);
/* The model load options alone (--mmap, --no-mmap, --no-repack; no values): true when `a` was
 * one of them, applied to mp. */
bool ork_cli_load_opt(const char *a, struct ork_model_params *mp);
void ork_cli_load_help(FILE *out);
void ork_cli_device_help(FILE *out);
/* --profile report of the NPU executor (nothing when the model runs on the CPU). */
void ork_cli_npu_report(FILE *out, const struct ork_model *m);

void ork_cli_gen_opts_default(struct ork_cli_gen_opts *o);
/* If argv[*i] is a shared option, consume it (and its value) and return 1; return 0 if it is
 * not one of them; return -1 after printing a usage error. */
int ork_cli_gen_opt(const char *cmd, int argc, char **argv, int *i, struct ork_cli_gen_opts *o);
/* Help text of the shared options (sampling = include the sampling ones). */
void ork_cli_gen_help(FILE *out, bool sampling);
/* Load the model and create a session (and, if smp != NULL, a sampler). Prints the error and
 * returns ORK_EXIT_ERROR on failure, after freeing what it made. */
int ork_cli_gen_setup(const char *cmd, const struct ork_cli_gen_opts *o, struct ork_model **m,
                      struct ork_session **s, struct ork_sampler **smp);
/* Print "prompt: N tokens, X ms (Y tok/s) | generation: ..." to stderr, and the speculative
 * figures (drafted, accepted, tau) when the generation speculated. */
void ork_cli_print_stats(const struct ork_gen_stats *st);

struct ork_spec;
/* With --draft-model or --lookup: load the draft model on the CPU (its vocabulary checked
 * against m's) and make the speculative decoder for session s of m into *spec (NULL: none).
 * Prints the error and returns ORK_EXIT_ERROR on failure. ork_cli_spec_free frees both (after
 * ork_cli_spec_report when report). */
int ork_cli_spec_setup(const char *cmd, const struct ork_cli_gen_opts *o, struct ork_model *m,
                       const struct ork_session *s, struct ork_spec **spec);
void ork_cli_spec_free(struct ork_spec *spec, bool report);
/* --verbose: the decoder's totals (acceptance, tau, the verify-M histogram) to out. */
void ork_cli_spec_report(FILE *out, const struct ork_spec *spec);

#endif
