/* cmd_bench.c -- `ork bench`: prefill and decode speed in the style of llama-bench, and the
 * memory bandwidth that bounds decode (roofline).
 *
 * Tests: ppP = one batch of P random token ids from an empty cache (prefill); tgN = N tokens
 * decoded one at a time from an empty cache. Each test first runs a short untimed warm-up of
 * the same kind (which pages the weights in), then R timed repetitions; the table shows the
 * mean tokens/s and its sample standard deviation. The CPU share (process CPU time / (wall
 * time x threads)) goes to stderr and JSON: far below 100% means other load took the cores and
 * the numbers understate the code. Every combination of the -p / -n / -t values runs (lists:
 * comma-separated and/or repeated flags).
 * --membw measures STREAM-like bandwidth (tooling/membw.c) once per thread count; with -m, each
 * tg test is also bracketed by two read-bandwidth measurements (the SIMD read kernel with the
 * test's threads over an array of the model's bytes per token, right before and right after
 * its timed runs: the host's bandwidth drifts from minute to minute) and set against its
 * roofline: the mean of the two / bytes of weights read per decoded token.
 * --peak measures the CPU's f32 FMA and int8 dot peaks (tooling/peak.c); with -m, each pp result
 * is also set against them: matmul operations per prompt token (2 x the weights of the layers'
 * matrices, plus 2 x the output matrix once per batch; attention not counted) x tokens/s.
 * Not here: the tables, JSON and CSV printed from the results (cmd_bench_report.c), the kernels
 * being measured (src/kernels/), model loading (engine). */
#include "bench.h"
#include "cli.h"
#include "cmd_run.h"

#include <ork-engine/engine.h>
#include <ork-tooling/membw.h>
#include <ork-kernels/kernels.h>
#include <ork-tooling/peak.h>
#include <ork-kernels/pool.h>
#include <ork-tooling/readbw.h>
#include <ork-kernels/types.h>
#include <ork/alloc.h>
#include <ork/error.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define CMD "bench"
#define MAX_TOKENS 65536        /* largest -p / -n */
#define MAX_THREADS 1024
#define MAX_REPS 1000
#define DEFAULT_P 512
#define DEFAULT_N 128
#define DEFAULT_REPS 5
#define WARMUP_TOKENS 8         /* tokens of the untimed warm-up run before each test */
#define TOKEN_SEED ORK_CLI_BENCH_SEED
#define MAX_VERIFY_K 63         /* --verify: k + 1 <= 64 rows, one NPU plan */
/* --tau default: the three points -- 1.5, 2.7 (the seed's creative-prompt DFlash
 * figure, performance-anchors.md) and 4 tokens per cycle */
static const double default_tau[] = { 1.5, 2.7, 4.0 };
/* Largest read array of the per-test roofline measurement: bounds the memory taken next to the
 * model (4 GiB: beyond any cache by far, and a pass takes ~0.15 s at 30 GB/s). */
#define ROOF_MAX_BYTES ((size_t)4 << 30)
#define ROOF_MIN_BYTES ((size_t)1 << 20)    /* ork_membw_reader_create's smallest array */

static void usage(FILE *out)
{
    fprintf(out,
            "usage: ork bench -m MODEL.gguf [-p 512] [-n 128] [-t T] [-r 5] [-o md|json|csv]\n"
            "       ork bench --membw [-t T]\n"
            "       ork bench --peak [-t T]\n"
            "\n"
            "Prefill (ppP: one batch of P random tokens) and decode (tgN: N tokens one at a time)\n"
            "speed, tokens/s as mean +- standard deviation over the repetitions (after a short\n"
            "warm-up). -p, -n, -t take comma lists and may repeat; every combination runs.\n"
            "\n"
            "options:\n"
            "  -m, --model FILE     model (may repeat)\n"
            "  -p, --n-prompt LIST  prompt lengths (default %d; 0 skips prefill)\n"
            "  -n, --n-gen LIST     generated tokens (default %d; 0 skips decode)\n"
            "  -t, --threads LIST   threads (default: online CPUs)\n"
            "  -r, --repetitions R  timed runs per test (default %d)\n"
            "  --spin-us N          threads poll N us for the next job before sleeping\n"
            "                       (default: " ORK_STR(ORK_POOL_SPIN_US_DEFAULT) "; 0: sleep at once)\n"
            "  -o, --output FMT     md (default), json or csv\n"
            "  --trace FILE.json    with the board twin (--device sim, or --twin): the modelled\n"
            "                       timeline of the first test's first timed run (Perfetto JSON,\n"
            "                       steps back to back on the model clock)\n"
            "  --membw              measure memory bandwidth per thread count (STREAM-like copy,\n"
            "                       scale, add, triad and a SIMD read sum; best of 5). With -m, also\n"
            "                       time the read kernel with the test's threads right before and\n"
            "                       right after each tg test's timed runs (best of 5 each, over an\n"
            "                       array of the model's bytes per token, at most 4 GiB) and print\n"
            "                       both: roofline t/s = their mean / bytes per token, and the\n"
            "                       share of it the test reached (marked (drift) when the two\n"
            "                       readings differ by more than 25 %%)\n"
            "  --membw-mb MB        size of each bandwidth array (default 128), and of the tg\n"
            "                       tests' read array when given\n"
            "  --peak               measure the CPU's f32 FMA and int8 dot peaks per thread count;\n"
            "                       with -m also print each pp test's matmul GOP/s and its share\n"
            "                       of both peaks\n"
            "  --kv-type f32|f16    KV cache precision (default: f32, as ork run)\n"
            "  --no-act-quant       f32 activations in matmuls (default: quantized for quantized\n"
            "                       weights, the integer dot-product kernels; as in ork run)\n"
            "  --parallel LIST      instead of pp/tg: N sequences decoded together per test\n"
            "                       (like llama-batched-bench): each step one forward of M = N\n"
            "                       rows; aggregate and per-sequence t/s over -n tokens each\n"
            "  --verify LIST        instead of pp/tg: the step of a speculative verify forward of\n"
            "                       M = k + 1 rows at position -p, per k in LIST (1..63), against\n"
            "                       the M = 1 decode step; plain vs speculative t/s at --tau\n"
            "  --tau LIST           mean tokens accepted per cycle (default 1.5,2.7,4):\n"
            "                       speculative t/s = tau / (verify(k + 1) + k x draft step)\n"
            "  --draft-model FILE   with --verify: the draft's decode step at -p, on the CPU\n"
            "                       (with the board twin when the target has one: its A76 cores)\n"
            "  --draft-device D     where that draft step runs: cpu (default) or sim (the NPU,\n"
            "                       twin-modelled), to see which is faster\n"
            "  --npu-rows LIST      NPU plan sizes besides 1, 64 and --npu-max-m (powers of\n"
            "                       two; default all: 2,4,8,16,32; 1 = only those three)\n"
            "  -h, --help           show this help\n"
            "  --mmap, --no-mmap    map the model file, or read it into memory on huge pages\n"
            "                       (default: read with --device cpu, map otherwise)\n"
            "  --no-repack          keep a model read into memory in the GGUF row layout (default:\n"
            "                       Q8_0/Q4_0/Q4_K matrices interleaved by 16 rows on x86-64\n"
            "                       with AVX2 and up)\n"
            "\nBoard twin (docs/twin.md): with --device sim, and with --device cpu --twin, every\n"
            "batch runs on the twin's model clock: the t/s column is the modelled board figure\n"
            "(decode also charges one top-k 40 sampling per token), host t/s is this machine's;\n"
            "a second table gives modelled ms/token by phase, NPU and CPU busy per core, DRAM\n"
            "utilisation and the hidden share (JSON and CSV carry the same).\n"
            "\nNPU (with --device npu|sim: per test also submits per token on stderr):\n",
            DEFAULT_P, DEFAULT_N, DEFAULT_REPS);
    ork_cli_device_help(out);
}

/* Parse "a,b,c" into l (appending). */
static bool parse_list(const char *opt, const char *s, long long lo, long long hi, struct list *l)
{
    char buf[256];
    if (!*s || strlen(s) >= sizeof buf) {
        fprintf(stderr, "ork %s: invalid value '%s' for %s\n", CMD, s, opt);
        return false;
    }
    snprintf(buf, sizeof buf, "%s", s);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        long long v;
        if (!ork_cli_parse_int(CMD, opt, tok, lo, hi, &v))
            return false;
        if (l->n == MAX_LIST) {
            fprintf(stderr, "ork %s: more than %d values for %s\n", CMD, MAX_LIST, opt);
            return false;
        }
        l->v[l->n++] = v;
    }
    if (s[strlen(s) - 1] == ',' || s[0] == ',' || strstr(s, ",,")) {
        fprintf(stderr, "ork %s: invalid value '%s' for %s: empty list element\n", CMD, s, opt);
        return false;
    }
    return true;
}

static int finish_args(struct opts *o);

static int parse_args(int argc, char **argv, struct opts *o)
{
    memset(o, 0, sizeof(*o));
    o->reps = DEFAULT_REPS;
    o->spin_us = -1;
    o->kv_type = ORK_KV_F32;
    ork_model_params_default(&o->mp);
    o->mp.device = "auto";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        long long ll;
        int rc_dev;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 1;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            if (!(v = ork_cli_value(CMD, argc, argv, &i)))
                return -1;
            if (o->n_models == MAX_LIST) {
                fprintf(stderr, "ork %s: more than %d models\n", CMD, MAX_LIST);
                return -1;
            }
            o->models[o->n_models++] = v;
        } else if (!strcmp(a, "-p") || !strcmp(a, "--n-prompt")) {
            if (!(v = ork_cli_value(CMD, argc, argv, &i)) ||
                !parse_list("-p", v, 0, MAX_TOKENS, &o->p))
                return -1;
        } else if (!strcmp(a, "-n") || !strcmp(a, "--n-gen")) {
            if (!(v = ork_cli_value(CMD, argc, argv, &i)) ||
                !parse_list("-n", v, 0, MAX_TOKENS, &o->n))
                return -1;
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            if (!(v = ork_cli_value(CMD, argc, argv, &i)) ||
                !parse_list("-t", v, 1, MAX_THREADS, &o->t))
                return -1;
        } else if (!strcmp(a, "--spin-us")) {
            if (!(v = ork_cli_value(CMD, argc, argv, &i)) ||
                !ork_cli_parse_int(CMD, "--spin-us", v, 0, ORK_POOL_SPIN_US_MAX, &ll))
                return -1;
            o->spin_us = (int)ll;
        } else if (!strcmp(a, "-r") || !strcmp(a, "--repetitions")) {
            if (!(v = ork_cli_value(CMD, argc, argv, &i)) ||
                !ork_cli_parse_int(CMD, "-r", v, 1, MAX_REPS, &ll))
                return -1;
            o->reps = (int)ll;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!(v = ork_cli_value(CMD, argc, argv, &i)))
                return -1;
            if (!strcmp(v, "md"))
                o->fmt = FMT_MD;
            else if (!strcmp(v, "json"))
                o->fmt = FMT_JSON;
            else if (!strcmp(v, "csv"))
                o->fmt = FMT_CSV;
            else {
                fprintf(stderr, "ork %s: invalid value '%s' for -o: expected md, json or csv\n",
                        CMD, v);
                return -1;
            }
        } else if (!strcmp(a, "--trace")) {
            if (!(o->trace = ork_cli_value(CMD, argc, argv, &i)))
                return -1;
        } else if (!strcmp(a, "--parallel")) {
            if (!(v = ork_cli_value(CMD, argc, argv, &i)) ||
                !parse_list("--parallel", v, 1, MAX_LIST, &o->par))
                return -1;
        } else if (!strcmp(a, "--verify")) {
            if (!(v = ork_cli_value(CMD, argc, argv, &i)) ||
                !parse_list("--verify", v, 1, MAX_VERIFY_K, &o->verify))
                return -1;
        } else if (!strcmp(a, "--tau")) {
            if (!(v = ork_cli_value(CMD, argc, argv, &i)) || !ork_cli_bench_parse_tau(v, o))
                return -1;
        } else if (!strcmp(a, "--draft-model")) {
            if (!(o->draft = ork_cli_value(CMD, argc, argv, &i)))
                return -1;
        } else if (!strcmp(a, "--draft-device")) {
            if (!(o->draft_device = ork_cli_value(CMD, argc, argv, &i)))
                return -1;
        } else if (!strcmp(a, "--npu-rows")) {
            struct list rows = { .n = 0 };
            if (!(v = ork_cli_value(CMD, argc, argv, &i)) ||
                !parse_list("--npu-rows", v, 1, 64, &rows))
                return -1;
            o->mp.npu_prog_rows = 1;    /* bit 0: the M = 1 plan (always made) */
            for (int r = 0; r < rows.n; r++) {
                if (rows.v[r] & (rows.v[r] - 1)) {
                    fprintf(stderr, "ork %s: invalid value '%lld' for --npu-rows: a power of "
                            "two\n", CMD, rows.v[r]);
                    return -1;
                }
                o->mp.npu_prog_rows |= (uint32_t)rows.v[r];
            }
        } else if (!strcmp(a, "--membw")) {
            o->membw = true;
        } else if (!strcmp(a, "--peak")) {
            o->peak = true;
        } else if (!strcmp(a, "--act-quant") || !strcmp(a, "--no-act-quant")) {
            o->f32_act = !strcmp(a, "--no-act-quant");
        } else if (!strcmp(a, "--kv-type")) {
            if (!(v = ork_cli_value(CMD, argc, argv, &i)) ||
                !ork_cli_parse_kv_type(CMD, v, &o->kv_type))
                return -1;
        } else if (!strcmp(a, "--membw-mb")) {
            if (!(v = ork_cli_value(CMD, argc, argv, &i)) ||
                !ork_cli_parse_int(CMD, "--membw-mb", v, 1, 1 << 16, &ll))
                return -1;
            o->membw_bytes = (size_t)ll << 20;
        } else if ((rc_dev = ork_cli_device_opt(CMD, argc, argv, &i, &o->mp)) != 0) {
            if (rc_dev < 0)
                return -1;
        } else {
            fprintf(stderr, "ork %s: unknown option '%s' (see --help)\n", CMD, a);
            return -1;
        }
    }
    return finish_args(o);
}

/* After the options: the combinations that need each other, and the defaults. */
static int finish_args(struct opts *o)
{
    if ((o->par.n || o->verify.n) && (!o->n_models || (o->par.n && o->verify.n))) {
        fprintf(stderr, "ork %s: --parallel and --verify each need a model (-m), and run "
                "alone\n", CMD);
        return -1;
    }
    if (o->draft_device && !o->draft) {
        fprintf(stderr, "ork %s: --draft-device needs --draft-model\n", CMD);
        return -1;
    }
    if (o->draft_device && strcmp(o->draft_device, "cpu") && strcmp(o->draft_device, "sim")) {
        fprintf(stderr, "ork %s: --draft-device must be cpu or sim, not '%s'\n", CMD,
                o->draft_device);
        return -1;
    }
    if (o->draft && !o->verify.n) {
        fprintf(stderr, "ork %s: --draft-model needs --verify\n", CMD);
        return -1;
    }
    if (!o->n_tau) {
        for (size_t k = 0; k < sizeof default_tau / sizeof default_tau[0]; k++)
            o->tau[o->n_tau++] = default_tau[k];
    }
    o->draft_mp = o->mp;
    o->draft_mp.device = o->draft_device ? o->draft_device : "cpu";
    o->draft_mp.twin = o->mp.twin || (o->mp.device && !strncmp(o->mp.device, "sim", 3));
    o->draft_mp.npu_pack_path = NULL;
    if (!strcmp(o->draft_mp.device, "cpu"))
        memset(&o->draft_mp.npu_weights, 0, sizeof o->draft_mp.npu_weights);   /* int8: no NPU */
    if (!o->n_models && !o->membw && !o->peak) {
        fprintf(stderr, "ork %s: give a model with -m, or --membw / --peak (see --help)\n", CMD);
        return -1;
    }
    if (!o->p.n)
        o->p.v[o->p.n++] = DEFAULT_P;
    if (!o->n.n)
        o->n.v[o->n.n++] = DEFAULT_N;
    if (!o->t.n) {
        long nc = sysconf(_SC_NPROCESSORS_ONLN);
        o->t.v[o->t.n++] = nc > 0 ? nc : 1;
    }
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double ork_cli_bench_now(void)
{
    return now_s();
}

/* CPU seconds (user + system) of this process so far. */
static double cpu_s(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0.0;
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

uint64_t ork_cli_bench_rng(uint64_t *s)
{
    /* xorshift64* (Vigna 2014): shifts 12/25/27, multiplier 2685821657736338717. */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

/* Name like llama-bench's "qwen3 1.7B Q8_0": architecture, parameter count, and the type
 * holding most of the matrix bytes. */
void ork_cli_bench_describe(const struct ork_model *m, struct model_desc *d)
{
    const struct ork_gguf *g = ork_model_gguf(m);
    const struct ork_model_config *c = ork_model_config(m);
    uint64_t by_type[ORK_TYPE_COUNT] = { 0 };
    uint64_t embd = 0;
    memset(d, 0, sizeof(*d));
    const char *dev = ork_model_device(m);
    snprintf(d->backend, sizeof d->backend, "%s", strcmp(dev, "cpu") ? dev : "CPU");
    d->load = ork_model_load_name(m);
    d->interleaved = (int)ork_model_n_interleaved(m);
    for (uint64_t i = 0; i < ork_gguf_n_tensors(g); i++) {
        const struct ork_gguf_tensor *t = ork_gguf_tensor_at(g, i);
        uint64_t n = 1;
        for (uint32_t k = 0; k < t->n_dims; k++)
            n *= t->ne[k];
        d->n_params += n;
        d->size_bytes += t->nbytes;
        if (t->n_dims >= 2 && t->type < ORK_TYPE_COUNT)
            by_type[t->type] += t->nbytes;
        if (!strcmp(t->name, "token_embd.weight"))
            embd = t->nbytes;
        if (t->n_dims >= 2 && !strncmp(t->name, "blk.", 4))
            d->layer_mat_params += n;
        if (!strcmp(t->name, "output.weight") ||
            (c->tied_output && !strcmp(t->name, "token_embd.weight")))
            d->out_params = n;
    }
    uint32_t best = ORK_TYPE_F32;
    for (uint32_t k = 0; k < ORK_TYPE_COUNT; k++)
        if (by_type[k] > by_type[best])
            best = k;
    /* Decode reads every weight once, except an untied embedding table (one row). */
    d->bytes_per_token = d->size_bytes - (c->tied_output ? 0 : embd);
    double p = (double)d->n_params;
    char size[32];
    if (p >= 1e9)
        snprintf(size, sizeof size, "%.1fB", p / 1e9);
    else if (p >= 1e6)
        snprintf(size, sizeof size, "%.0fM", p / 1e6);
    else
        snprintf(size, sizeof size, "%.0fK", p / 1e3);
    snprintf(d->name, sizeof d->name, "%s %s %s", c->arch_name, size, ork_type_name(best));
}

void ork_cli_bench_mean_sd(const double *x, int n, double *mean, double *sd)
{
    double s = 0;
    for (int i = 0; i < n; i++)
        s += x[i];
    *mean = s / n;
    double v = 0;
    for (int i = 0; i < n; i++)
        v += (x[i] - *mean) * (x[i] - *mean);
    *sd = n > 1 ? sqrt(v / (n - 1)) : 0.0;
}

/* The NPU line of a test (--device npu|sim): submits per token (or per batch) and per layer,
 * and the host's wall time inside NPU runs (this machine's, not the board's: the modelled
 * figures are the twin's, twin_bench_report). */
static void npu_bench_report(FILE *out, const struct ork_model *m, bool pp, int n)
{
    struct ork_npu_exec_stats st;
    if (ork_model_npu_stats(m, &st) < 0 || !st.n_rows)
        return;
    double tokens = (double)st.n_rows;
    double batches = st.n_forward ? (double)st.n_forward : 1;
    int nl = ork_model_config(m)->n_layers;
    double per_batch = (double)st.n_submits / batches;
    fprintf(out, "ork bench: %s%d npu(%s): %.1f submits per %s (%.2f per layer); host wall "
            "%.3f ms per token, of it %.3f in NPU runs\n", pp ? "pp" : "tg", n, st.backend,
            per_batch, pp ? "batch" : "token", (per_batch - 1.0) / nl, st.wall_ms / tokens,
            st.npu_wall_ms / tokens);
}

/* The twin line of a test: modelled ms per token, busy cores, DRAM, hidden share. */
static void twin_bench_report(FILE *out, const struct result *r)
{
    const struct ork_twin_result *t = &r->tw.total;
    double rows = r->tw.n_rows ? (double)r->tw.n_rows : 1, end = t->end_ns > 0 ? t->end_ns : 1;
    fprintf(out, "ork bench: %s%d twin (modelled): %.3f ms per token = %.2f tok/s; NPU busy",
            r->pp ? "pp" : "tg", r->n_tokens, t->end_ns / 1e6 / rows, r->avg_ts);
    for (uint32_t c = 0; c < r->tw.npu_cores; c++)
        fprintf(out, "%s%.0f", c ? "/" : " ", 100.0 * t->npu_busy_ns[c] / end);
    fprintf(out, " %%, CPU busy");
    for (uint32_t c = 0; c < r->tw.cpu_cores; c++)
        fprintf(out, "%s%.0f", c ? "/" : " ", 100.0 * t->cpu_busy_ns[c] / end);
    fprintf(out, " %%, DRAM %.0f %%, hidden %.0f %% of CPU-active; host %.2f t/s\n",
            100.0 * t->dram_util, 100.0 * t->hidden_share, r->host_ts);
}

/* One timed run of a test: host tokens/s into *ts and, with the board twin, the modelled
 * tokens/s of the run (its steps and decode's samplings on the model clock) into *model_ts. */
static int run_once(struct ork_model *m, struct ork_session *s, bool pp, int n, int32_t n_vocab,
                    int32_t *toks, float *logits, uint64_t *rng, double *ts, double *model_ts)
{
    for (int i = 0; i < n; i++)
        toks[i] = (int32_t)(ork_cli_bench_rng(rng) % (uint64_t)n_vocab);
    ork_session_reset(s);
    struct ork_model_twin_stats a, b;
    bool twin = ork_model_twin_stats(m, &a) == 0;
    struct ork_sampler_params sp;
    ork_sampler_params_default(&sp);    /* decode charges the default sampler's draw */
    int ret = 0;
    double t0 = now_s();
    if (pp) {
        ret = ork_model_eval(s, toks, n, 0, logits, ORK_EVAL_LAST_LOGITS);
    } else {
        for (int i = 0; i < n && ret == 0; i++) {
            ret = ork_model_eval(s, &toks[i], 1, i, logits, ORK_EVAL_LAST_LOGITS);
            if (ret == 0 && twin)
                ret = ork_model_twin_sample(m, (uint32_t)sp.top_k);
        }
    }
    double dt = now_s() - t0;
    if (ret < 0)
        return ret;
    *ts = dt > 0 ? n / dt : 0.0;
    *model_ts = 0;
    if (twin && ork_model_twin_stats(m, &b) == 0 && b.total.end_ns > a.total.end_ns)
        *model_ts = n * 1e9 / (b.total.end_ns - a.total.end_ns);
    return 0;
}

static long long list_max(const struct list *l)
{
    long long m = 0;
    for (int i = 0; i < l->n; i++)
        m = l->v[i] > m ? l->v[i] : m;
    return m;
}

/* Bytes of the read array of the per-test roofline: --membw-mb when given, else the model's
 * bytes per token (the working set of a decode step), within [ROOF_MIN_BYTES, ROOF_MAX_BYTES]. */
static size_t roof_bytes(const struct opts *o, const struct model_desc *d)
{
    if (o->membw_bytes)
        return o->membw_bytes;
    uint64_t b = d->bytes_per_token;
    if (b > ROOF_MAX_BYTES)
        b = ROOF_MAX_BYTES;
    return b < ROOF_MIN_BYTES ? ROOF_MIN_BYTES : (size_t)b;
}

static bool any_tg(const struct opts *o)
{
    for (int i = 0; i < o->n.n; i++)
        if (o->n.v[i] > 0)
            return true;
    return false;
}

/* Run every test of one model at one thread count, appending to res. */
static int bench_model_threads(struct ork_model *m, int mi, const struct model_desc *d,
                               int threads, const struct opts *o, struct result *res, int *n_res)
{
    int32_t n_vocab = ork_model_config(m)->n_vocab;
    long long pmax = list_max(&o->p), nmax = list_max(&o->n);
    long long ctx = pmax > nmax ? pmax : nmax;
    struct ork_session_params sp;
    ork_session_params_default(&sp);
    sp.ctx_size = (int32_t)(ctx > 0 ? ctx : 1);
    sp.n_batch = (int32_t)(pmax > 0 ? pmax : 1);
    sp.n_threads = threads;
    sp.act_quant = !o->f32_act;
    sp.spin_us = o->spin_us;
    sp.kv_type = o->kv_type;
    struct ork_session *s;
    int ret = ork_session_create(m, &sp, &s);
    if (ret < 0)
        return ret;
    /* the KV cache's pages mapped now, not by the first timed run that reaches them */
    if ((ret = ork_session_prefault(s, sp.ctx_size)) < 0) {
        ork_session_free(s);
        return ret;
    }
    struct ork_membw_reader *rd = NULL;
    if (o->membw && any_tg(o) &&
        (ret = ork_membw_reader_create(threads, roof_bytes(o, d), &rd)) < 0) {
        ork_session_free(s);
        return ret;
    }
    int32_t *toks = ork_malloc((size_t)sp.ctx_size * sizeof(*toks));
    float *logits = ork_malloc((size_t)n_vocab * sizeof(*logits));
    uint64_t rng = TOKEN_SEED;
    if (!toks || !logits) {
        ret = ORK_ENOMEM;
        goto out;
    }
    for (int kind = 0; kind < 2; kind++) {
        const struct list *l = kind == 0 ? &o->p : &o->n;
        for (int li = 0; li < l->n; li++) {
            int n = (int)l->v[li];
            if (n == 0)
                continue;
            struct result *r = &res[*n_res];
            memset(r, 0, sizeof(*r));
            r->model = mi;
            r->threads = threads;
            r->pp = kind == 0;
            r->n_tokens = n;
            r->reps = o->reps;
            r->samples = ork_malloc((size_t)o->reps * sizeof(double));
            if (!r->samples) {
                ret = ORK_ENOMEM;
                goto out;
            }
            (*n_res)++;
            /* Warm-up: a short run of the same kind maps every weight page in. */
            double warm, warm_model;
            int nw = n < WARMUP_TOKENS ? n : WARMUP_TOKENS;
            if ((ret = run_once(m, s, r->pp, nw, n_vocab, toks, logits, &rng, &warm,
                                &warm_model)) < 0)
                goto out;
            ork_model_npu_stats_reset(m);
            ork_model_twin_stats_reset(m);
            r->twin = ork_model_twin_stats(m, &r->tw) == 0;
            double *model = r->twin ? ork_malloc((size_t)o->reps * sizeof(double)) : NULL;
            if (r->twin && !model) {
                ret = ORK_ENOMEM;
                goto out;
            }
            /* the first test's first timed run: decode steps and their samplings */
            if (o->trace && *n_res == 1 && r->twin &&
                (ret = ork_model_twin_trace_begin(m, o->trace, r->pp ? 1 : 2 * (uint32_t)n)) < 0) {
                ork_free(model);
                goto out;
            }
            if (rd && !r->pp) {
                r->roof_bytes = ork_membw_reader_bytes(rd);
                r->roof_runs = ROOF_RUNS;
                r->read_before = ork_membw_reader_run(rd, ROOF_RUNS);
            }
            double c0 = cpu_s(), w0 = now_s();
            double dummy;
            for (int k = 0; k < o->reps && ret == 0; k++)
                ret = run_once(m, s, r->pp, n, n_vocab, toks, logits, &rng, &r->samples[k],
                               model ? &model[k] : &dummy);
            if (ret == 0 && o->trace && *n_res == 1 && r->twin)
                ret = ork_model_twin_trace_end(m);
            if (ret < 0) {
                ork_free(model);
                goto out;
            }
            double wall = now_s() - w0;
            r->cpu_share = wall > 0 ? (cpu_s() - c0) / (wall * threads) : 0.0;
            if (r->roof_runs)
                r->read_after = ork_membw_reader_run(rd, ROOF_RUNS);
            ork_cli_bench_mean_sd(r->samples, o->reps, &r->avg_ts, &r->sd_ts);
            fprintf(stderr, "ork bench: %s%d t=%d: host %.2f +- %.2f t/s (cpu share %.0f%%)\n",
                    r->pp ? "pp" : "tg", n, threads, r->avg_ts, r->sd_ts, 100.0 * r->cpu_share);
            if (r->twin) {
                /* the modelled figures take the t/s columns; the host's move aside */
                r->host_ts = r->avg_ts;
                r->host_sd = r->sd_ts;
                ork_model_twin_stats(m, &r->tw);
                memcpy(r->samples, model, (size_t)o->reps * sizeof(double));
                ork_cli_bench_mean_sd(r->samples, o->reps, &r->avg_ts, &r->sd_ts);
                ork_free(model);
                twin_bench_report(stderr, r);
            }
            if (r->roof_runs)
                fprintf(stderr, "ork bench: tg%d t=%d: read %.2f GB/s before, %.2f after "
                        "(%zu MiB, best of %d each)\n", n, threads, r->read_before,
                        r->read_after, r->roof_bytes >> 20, r->roof_runs);
            npu_bench_report(stderr, m, r->pp, n);
        }
    }
out:
    ork_membw_reader_free(rd);
    ork_free(toks);
    ork_free(logits);
    ork_session_free(s);
    return ret;
}

int ork_cmd_bench(int argc, char **argv)
{
    struct opts o;
    int pr = parse_args(argc, argv, &o);
    if (pr != 0)
        return pr > 0 ? ORK_EXIT_OK : ORK_EXIT_USAGE;
    int max_res = o.n_models * o.t.n * (o.p.n + o.n.n);
    struct result *res = ork_calloc(max_res ? (size_t)max_res : 1, sizeof(*res));
    struct model_desc *md = ork_calloc((size_t)(o.n_models ? o.n_models : 1), sizeof(*md));
    struct ork_membw_result bw[MAX_LIST];
    struct ork_cpu_peak pk[MAX_LIST];
    int n_res = 0, n_bw = 0, n_pk = 0, status = ORK_EXIT_OK;
    if (!res || !md) {
        fprintf(stderr, "ork %s: out of memory\n", CMD);
        status = ORK_EXIT_ERROR;
        goto out;
    }
    fprintf(stderr, "ork bench: CPU kernels path: %s (cpu: %s), activations %s, KV cache %s\n",
            ork_kernels_path(), ork_kernels_cpu_caps(),
            o.f32_act ? "f32 (--no-act-quant)" : "quantized for quantized weights",
            ork_cli_bench_kv_name(&o));
    if (o.membw)
        for (int ti = 0; ti < o.t.n; ti++) {
            int ret = ork_membw_measure((int)o.t.v[ti], o.membw_bytes, 0, &bw[n_bw]);
            if (ret < 0) {
                ork_cli_error(CMD, ret);
                status = ORK_EXIT_ERROR;
                goto out;
            }
            fprintf(stderr, "ork bench: membw t=%d: read %.2f GB/s (%s), triad %.2f GB/s\n",
                    bw[n_bw].n_threads, bw[n_bw].gbps[ORK_MEMBW_READ], ork_cpu_read_insn(),
                    bw[n_bw].gbps[ORK_MEMBW_TRIAD]);
            n_bw++;
        }
    if (o.peak)
        for (int ti = 0; ti < o.t.n; ti++) {
            struct ork_pool *pool = NULL;
            int ret = ork_pool_create((int)o.t.v[ti], &pool);
            if (ret == 0)
                ret = ork_cpu_peak_measure(pool, 0, &pk[n_pk]);
            ork_pool_destroy(pool);
            if (ret < 0) {
                ork_cli_error(CMD, ret);
                status = ORK_EXIT_ERROR;
                goto out;
            }
            fprintf(stderr, "ork bench: peak t=%d: %s %.1f GFLOP/s, %s %.1f GOP/s\n",
                    pk[n_pk].threads, pk[n_pk].f32_insn, pk[n_pk].f32_flops / 1e9,
                    pk[n_pk].int8_insn, pk[n_pk].int8_ops / 1e9);
            n_pk++;
        }
    for (int mi = 0; (o.par.n || o.verify.n) && mi < o.n_models; mi++) {
        int ret = o.par.n ? ork_cli_bench_parallel(&o, o.models[mi], (int)o.t.v[0])
                          : ork_cli_bench_verify(&o, o.models[mi], (int)o.t.v[0]);
        if (ret < 0) {
            ork_cli_error(CMD, ret);
            status = ORK_EXIT_ERROR;
            goto out;
        }
    }
    for (int mi = 0; !o.par.n && !o.verify.n && mi < o.n_models; mi++) {
        struct ork_model_params mp = o.mp;
        mp.no_tokenizer = true;
        mp.no_repack = mp.no_repack || o.f32_act;  /* interleaving serves quantized activations */
        ork_cli_device_resolve(CMD, &mp, false);
        struct ork_model *m;
        double t_load = now_s();
        int ret = ork_model_load(o.models[mi], &mp, &m);
        if (ret == 0)
            ork_cli_bench_npu_plans(stderr, m, now_s() - t_load);
        struct ork_npu_exec_stats nst;
        if (ret == 0 && ork_model_npu_stats(m, &nst) == 0 && nst.n_decode_copies)
            fprintf(stderr, "ork bench: NPU decode copies (--npu-decode-kslice single): %u "
                    "matrices, %.1f MiB device (weights and plans), made in %.0f ms\n",
                    nst.n_decode_copies, nst.decode_copy_bytes / 1048576.0,
                    nst.decode_copy_load_ms);
        if (ret < 0) {
            ork_cli_error(CMD, ret);
            status = ORK_EXIT_ERROR;
            goto out;
        }
        ork_cli_bench_describe(m, &md[mi]);
        fprintf(stderr, "ork bench: %s: %s, %d matrices interleaved by 16 rows%s\n",
                o.models[mi],
                !strcmp(md[mi].load, "read") ? "read into memory (--no-mmap)" : "mapped (--mmap)",
                md[mi].interleaved, o.mp.no_repack ? " (--no-repack)"
                : o.f32_act ? " (--no-act-quant)" : "");
        for (int ti = 0; ti < o.t.n && ret == 0; ti++)
            ret = bench_model_threads(m, mi, &md[mi], (int)o.t.v[ti], &o, res, &n_res);
        ork_model_free(m);
        if (ret < 0) {
            ork_cli_error(CMD, ret);
            status = ORK_EXIT_ERROR;
            goto out;
        }
    }
    struct bench_refs rf = { .bw = bw, .n_bw = n_bw, .pk = pk, .n_pk = n_pk };
    if (!o.par.n && !o.verify.n)
        ork_cli_bench_print(&o, md, res, n_res, &rf);
out:
    if (res)
        for (int i = 0; i < n_res; i++)
            ork_free(res[i].samples);
    ork_free(res);
    ork_free(md);
    return status;
}
