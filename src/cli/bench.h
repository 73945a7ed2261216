/* bench.h -- what `ork bench` measures and prints (src/cli/cmd_bench*.c only): the options,
 * the models' descriptions and the per-test results that cmd_bench.c fills and
 * cmd_bench_report.c prints as markdown, JSON or CSV. */
#ifndef ORK_CLI_BENCH_H
#define ORK_CLI_BENCH_H

#include <ork-engine/engine.h>
#include <ork-tooling/peak.h>
#include <ork-tooling/membw.h>

#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>

#define MAX_LIST 32                         /* values per -p / -n / -t list, and models */
#define ROOF_RUNS 5                         /* read passes before and after a test: best of */
/* Before / after readings further apart than this ratio: the host's bandwidth moved during the
 * test, so its share is flagged as unreliable. Why 1.25 (quiet readings differ by less):
 * docs/benchmarks.md, "How to measure", decode roofline. */
#define ROOF_DRIFT_RATIO 1.25

enum fmt { FMT_MD, FMT_JSON, FMT_CSV };

struct list {
    long long v[MAX_LIST];
    int n;
};

struct opts {
    const char *models[MAX_LIST];
    int n_models;
    struct list p, n, t;
    int reps;
    enum fmt fmt;
    bool membw;
    bool peak;                      /* --peak: measure the compute peaks per thread count */
    int spin_us;                    /* --spin-us: pool spin bound (< 0: default) */
    bool f32_act;                   /* --no-act-quant: f32 activations (engine.h act_quant) */
    enum ork_kv_type kv_type;       /* --kv-type */
    size_t membw_bytes;
    struct ork_model_params mp;     /* --device etc. (ork_cli_device_opt) */
    const char *trace;              /* --trace FILE.json: the twin's modelled timeline */
    /* M > 1 decode tests (cmd_bench_multi.c) */
    struct list par;                /* --parallel: sequences decoded together */
    struct list verify;             /* --verify: draft lengths k (verify M = k + 1) */
    double tau[MAX_LIST];           /* --tau: mean tokens accepted per cycle */
    int n_tau;
    const char *draft;              /* --draft-model FILE: its decode step charged k times */
    const char *draft_device;       /* --draft-device D: where the draft runs (default cpu)*/
    struct ork_model_params draft_mp;   /* the draft's device: the CPU, with the twin when the
                                         * target has one */
};

struct model_desc {
    char name[96];
    uint64_t size_bytes;        /* all tensor data */
    uint64_t n_params;
    uint64_t bytes_per_token;   /* weights streamed per decoded token */
    uint64_t layer_mat_params;  /* elements of the layers' weight matrices (blk.*, 2-D) */
    uint64_t out_params;        /* elements of the output matrix (the embedding when tied) */
    char backend[16];           /* "CPU", or the NPU backend of the matmuls ("sim", "rknpu") */
    const char *load;           /* "read" or "mmap" (ork_model_load_name) */
    int interleaved;            /* matrices interleaved for the CPU kernels at load */
};

struct result {
    int model;                  /* index into the model list */
    int threads;
    bool pp;
    int n_tokens;
    int reps;
    double avg_ts, sd_ts;
    double cpu_share;           /* CPU time / (wall time x threads) over the timed runs: well
                                 * below 1 means the threads did not get their cores */
    double *samples;            /* reps t/s values */
    /* --membw with a tg test: the read kernel's best of roof_runs passes over roof_bytes with
     * the test's threads, right before and right after the timed runs (GB/s; 0: not run) */
    double read_before, read_after;
    size_t roof_bytes;
    int roof_runs;
    /* the board twin (--device sim, or --twin): avg_ts / sd_ts / samples are then the modelled
     * figures and host_ts the host's own speed (this machine, not the board) */
    bool twin;
    double host_ts, host_sd;
    struct ork_model_twin_stats tw;     /* totals over the timed repetitions */
};

/* Measured peaks the results are compared with (--membw, --peak). */
struct bench_refs {
    const struct ork_membw_result *bw;
    int n_bw;
    const struct ork_cpu_peak *pk;
    int n_pk;
};

/* Shared by cmd_bench.c and cmd_bench_multi.c. */
#define ORK_CLI_BENCH_SEED 0x6f726b62656e6368ull    /* fixed seed of the random token ids */
uint64_t ork_cli_bench_rng(uint64_t *s);
double ork_cli_bench_now(void);
void ork_cli_bench_mean_sd(const double *x, int n, double *mean, double *sd);
void ork_cli_bench_describe(const struct ork_model *m, struct model_desc *d);
/* --parallel and --verify on one model at one thread count: run, print in o->fmt. */
int ork_cli_bench_parallel(const struct opts *o, const char *path, int threads);
int ork_cli_bench_verify(const struct opts *o, const char *path, int threads);
bool ork_cli_bench_parse_tau(const char *s, struct opts *o);
/* The NPU plan sizes of m on out: bytes per size, the time making them (load_s: the load's). */
void ork_cli_bench_npu_plans(FILE *out, const struct ork_model *m, double load_s);

/* The KV cache type of the run, as llama-bench's type_k / type_v. */
const char *ork_cli_bench_kv_name(const struct opts *o);
/* Print the results, the bandwidth and the peaks to stdout in o->fmt. */
void ork_cli_bench_print(const struct opts *o, const struct model_desc *md,
                         const struct result *res, int n_res, const struct bench_refs *rf);

#endif
