/* cmd_run.c -- `ork run`: generate text from a prompt, streamed to stdout, with prompt and
 * generation speed on stderr. Also the option parsing and model/session setup shared with
 * `ork chat` and `ork perplexity` (cmd_run.h). The generation loop itself is the engine's
 * (ork_generate); this file only turns flags into parameters and text into output. */
#include "cli.h"
#include "cmd_run.h"

#include <ork-engine/grammar.h>
#include <ork-engine/speculative.h>

#include <ork-kernels/kernels.h>
#include <ork-kernels/pool.h>
#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/log.h>
#include <ork/npu.h>
#include <ork/trace.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CMD "run"
/* Largest prompt file accepted (a sanity bound against reading a model file by mistake). */
#define ORK_CLI_MAX_PROMPT_BYTES (64u << 20)

/* ---- shared options ---------------------------------------------------------------------- */

void ork_cli_gen_opts_default(struct ork_cli_gen_opts *o)
{
    memset(o, 0, sizeof(*o));
    ork_sampler_params_default(&o->sampling);
    ork_session_params_default(&o->session);
    ork_model_params_default(&o->model_params);
    o->model_params.device = "auto";
    o->n_predict = -1;
    struct ork_spec_params spp;
    ork_spec_params_default(&spp);
    o->draft_max = spp.draft_max;
    o->draft_min = spp.draft_min;
    o->draft_p_min = spp.draft_p_min;
}

/* The device names of every model-running command (docs/cli.md "Devices"): the CPU, the
 * engine's NPU choices and libork's backend names (ork_npu_open). */
static const char *const device_names[] = { "auto", "cpu", "npu", "rknpu", "rocket", "sim",
                                            "sim-rocket" };
#define DEVICE_LIST "auto, cpu, npu, rknpu, rocket, sim or sim-rocket"

bool ork_cli_device_valid(const char *name)
{
    for (size_t k = 0; k < sizeof device_names / sizeof device_names[0]; k++)
        if (!strcmp(name, device_names[k]))
            return true;
    return false;
}

int ork_cli_device_opt(const char *cmd, int argc, char **argv, int *i, struct ork_model_params *mp)
{
    const char *a = argv[*i], *v;
    long long n;
    if (!strcmp(a, "--device")) {
        if (!(v = ork_cli_value(cmd, argc, argv, i)))
            return -1;
        if (!ork_cli_device_valid(v)) {
            fprintf(stderr, "ork %s: invalid value '%s' for --device: must be " DEVICE_LIST "\n",
                    cmd, v);
            return -1;
        }
        mp->device = v;
        return 1;
    }
    if (!strcmp(a, "--pack")) {
        if (!(v = ork_cli_value(cmd, argc, argv, i)))
            return -1;
        mp->npu_pack_path = v;
        return 1;
    }
    if (!strcmp(a, "--npu-caps")) {
        if (!(v = ork_cli_value(cmd, argc, argv, i)))
            return -1;
        mp->npu_capabilities = v;
        return 1;
    }
    if (!strcmp(a, "--npu-wait-ms")) {
        long long ms;
        if (!(v = ork_cli_value(cmd, argc, argv, i)) ||
            !ork_cli_parse_int(cmd, a, v, 1, ORK_CLI_NPU_WAIT_MS_MAX, &ms))
            return -1;
        mp->npu_wait_ms = (uint32_t)ms;
        return 1;
    }
    if (!strcmp(a, "--npu-spin-us")) {
        long long us;
        if (!(v = ork_cli_value(cmd, argc, argv, i)) ||
            !ork_cli_parse_int(cmd, a, v, 0, ORK_NPU_WORKER_SPIN_US_MAX, &us))
            return -1;
        mp->npu_spin_us = us ? (int32_t)us : -1;      /* 0 on the command line: never spin */
        return 1;
    }
    if (!strcmp(a, "--blocking-submits")) {
        mp->npu_blocking_submits = true;
        return 1;
    }
    int rw = ork_cli_npu_weights_opt(cmd, argc, argv, i, &mp->npu_weights);
    if (rw)
        return rw;
    if (!strcmp(a, "--sim-timing")) {
        static const char *const names[] = { "instant", "paced", "only", "paced-only" };
        if (!(v = ork_cli_value(cmd, argc, argv, i)))
            return -1;
        for (int k = 0; k < 4; k++)
            if (!strcmp(v, names[k])) {
                mp->sim_timing = k;
                return 1;
            }
        fprintf(stderr, "ork %s: invalid value '%s' for --sim-timing: must be instant, paced, "
                "only or paced-only\n", cmd, v);
        return -1;
    }
    if (!strcmp(a, "--npu-executor")) {
        if (!(v = ork_cli_value(cmd, argc, argv, i)))
            return -1;
        uint32_t plans = ORK_NPU_EXEC_PER_MATMUL | ORK_NPU_EXEC_PER_MATMUL_MC |
                         ORK_NPU_EXEC_SPLIT_O;
        mp->npu_flags &= ~plans;
        if (!strcmp(v, "per-matmul"))
            mp->npu_flags |= ORK_NPU_EXEC_PER_MATMUL;
        else if (!strcmp(v, "per-matmul-mc"))
            mp->npu_flags |= ORK_NPU_EXEC_PER_MATMUL_MC;
        else if (!strcmp(v, "fused-split-o"))
            mp->npu_flags |= ORK_NPU_EXEC_SPLIT_O;
        else if (strcmp(v, "fused")) {
            fprintf(stderr, "ork %s: invalid value '%s' for --npu-executor: must be fused, "
                    "fused-split-o, per-matmul or per-matmul-mc\n", cmd, v);
            return -1;
        }
        return 1;
    }
    if (!strcmp(a, "--npu-decode-kslice")) {
        if (!(v = ork_cli_value(cmd, argc, argv, i)))
            return -1;
        if (!strcmp(v, "single"))
            mp->npu_decode_kslice = ORK_NPU_DECODE_KSLICE_SINGLE;
        else if (!strcmp(v, "shared"))
            mp->npu_decode_kslice = ORK_NPU_DECODE_KSLICE_SHARED;
        else {
            fprintf(stderr, "ork %s: invalid value '%s' for --npu-decode-kslice: must be single "
                    "or shared\n", cmd, v);
            return -1;
        }
        return 1;
    }
    if (!strcmp(a, "--npu-max-m")) {
        if (!(v = ork_cli_value(cmd, argc, argv, i)) ||
            !ork_cli_parse_int(cmd, a, v, 1, 2047, &n))
            return -1;
        mp->npu_max_m = (int32_t)n;
        return 1;
    }
    if (!strcmp(a, "--sim-dcomp-gbps")) {
        double g;
        if (!(v = ork_cli_value(cmd, argc, argv, i)) ||
            !ork_cli_parse_float(cmd, a, v, 0.01, 1000.0, &g))
            return -1;
        mp->sim_dcomp_gbps = g;
        return 1;
    }
    if (!strcmp(a, "--sim-calibration")) {
        if (!(v = ork_cli_value(cmd, argc, argv, i)))
            return -1;
        mp->twin_calibration = v;
        return 1;
    }
    if (!strcmp(a, "--twin")) {
        mp->twin = true;
        return 1;
    }
    if (!strcmp(a, "--twin-host-floor")) {
        mp->twin_flags |= ORK_TWIN_REC_HOST_FLOOR;
        return 1;
    }
    if (!strcmp(a, "--no-pack")) {
        mp->npu_flags |= ORK_NPU_EXEC_NO_PACK;
        return 1;
    }
    if (ork_cli_load_opt(a, mp))
        return 1;
    if (!strcmp(a, "--rebuild-pack")) {
        mp->npu_flags |= ORK_NPU_EXEC_REBUILD_PACK;
        return 1;
    }
    return 0;
}

void ork_cli_device_resolve(const char *cmd, struct ork_model_params *mp, bool verbose)
{
    if (mp->device && strcmp(mp->device, "auto"))
        return;
    /* Probe as the engine's "npu" would (libork's "auto": rknpu, else rocket). Decided here,
     * before the load, so that a machine without an NPU loads exactly as with --device cpu
     * (read into memory, CPU layout) and prints the same. */
    struct ork_npu_opts o = { .struct_size = sizeof o, .device = "auto" };
    struct ork_npu *npu = NULL;
    int ret = ork_npu_open(&o, &npu);
    if (ret == 0) {
        if (verbose)
            fprintf(stderr, "ork %s: device auto: NPU found (%s)\n", cmd, ork_npu_backend(npu));
        ork_npu_close(npu);
        mp->device = "npu";
        return;
    }
    mp->device = "cpu";
    if (ret != ORK_ENOENT)      /* a device that is there but unusable: say why */
        fprintf(stderr, "ork %s: device auto: %s; running on the CPU\n", cmd,
                ork_error_describe(ret));
    else if (verbose)
        fprintf(stderr, "ork %s: device auto: no NPU found, running on the CPU\n", cmd);
}

bool ork_cli_load_opt(const char *a, struct ork_model_params *mp)
{
    if (!strcmp(a, "--mmap") || !strcmp(a, "--no-mmap")) {
        mp->load = !strcmp(a, "--mmap") ? ORK_LOAD_MMAP : ORK_LOAD_READ;
        return true;
    }
    if (!strcmp(a, "--no-repack")) {
        mp->no_repack = true;
        return true;
    }
    return false;
}

void ork_cli_load_help(FILE *out)
{
    fprintf(out,
            "  --mmap                    map the model file (fast start, pages shared with the\n"
            "                            page cache; the default when the matmuls run on an NPU)\n"
            "  --no-mmap                 read the model file into memory on huge pages (faster\n"
            "                            decode; the default when they run on the CPU)\n"
            "  --no-repack               keep a model read into memory in the GGUF row layout\n"
            "                            (default: Q8_0/Q4_0/Q4_K matrices interleaved by 16\n"
            "                            rows on x86-64 with AVX2 and up)\n");
}

void ork_cli_device_help(FILE *out)
{
    fprintf(out,
            "  --device DEV              where matmuls run: auto (default: the NPU if present,\n"
            "                            else the CPU), cpu, npu (the best NPU backend present),\n"
            "                            rknpu, rocket, sim or sim-rocket (the simulator behind\n"
            "                            the rknpu / rocket backend); `ork devices` lists them\n"
            "  --sim-timing MODE         sim: instant|paced|only|paced-only (default: instant)\n"
            "  --npu-executor fused|fused-split-o|per-matmul|per-matmul-mc  NPU submits: fused\n"
            "                            per layer (default), fused with the O projection split\n"
            "                            by heads and overlapped (long contexts), one\n"
            "                            single-core submit per matmul (baseline) or one per\n"
            "                            matmul split over 3 cores (baseline)\n"
            "  --sim-calibration FILE    board twin constants (JSON, docs/twin.md) for the\n"
            "                            modelled times (default: the built-in table)\n"
            "  --sim-dcomp-gbps X        sim/twin: the weight decompressor's int8 output per\n"
            "                            core, GB/s (default: the twin's npu_dcomp_gbps, 11)\n"
            "  --twin                    with --device cpu: model the run on the board twin too\n"
            "                            (every CPU phase charged on the A76 cores)\n"
            "  --twin-host-floor         twin: charge the open runtime's 167 us host floor per\n"
            "                            submit (reproducing the seed's baselines)\n"
            "  --npu-max-m N             rows of the largest NPU plan (prefill; default: 128;\n"
            "                            a matrix that would need finer K-slices keeps 64)\n"
            "  --npu-decode-kslice single|shared  decode matrices that prefill K-slices\n"
            "                            more finely than one row needs on a decode-only copy\n"
            "                            of one K-slice (device memory) or on the prefill\n"
            "                            weights' slices (default: shared)\n"
            "  --no-pack                 quantise for the NPU in memory (no MODEL.orkpack)\n"
            "  --rebuild-pack            rebuild MODEL.orkpack even if it is valid\n"
            "  --pack FILE               the .orkpack to use (default: MODEL.orkpack)\n"
            "  --npu-caps FILE           capability record of the board (`ork selftest\n"
            "                            --confirm-forms` writes it): the submit forms it\n"
            "                            confirmed may be used (docs/board.md)\n"
            "  --npu-wait-ms MS          host bound on one NPU job before it is reset\n"
            "                            (default: 1000; docs/npu.md \"Bounded waits\")\n"
            "  --blocking-submits        submit NPU jobs blocking (only the kernel's timeout)\n"
            "  --npu-spin-us US          libork's NPU submit workers (per-core and async) poll\n"
            "                            US us for the next run before sleeping (default: %u;\n"
            "                            0: sleep at once; docs/twin.md \"Spinning workers\")\n",
            ORK_NPU_WORKER_SPIN_US_DEFAULT);
    ork_cli_npu_weights_help(out);
}

/* The board twin's totals (modelled, docs/twin.md "In the engine"): time per row, busy cores,
 * DRAM, the hidden share and the phases by modelled wall time. */
static void twin_report(FILE *out, const struct ork_model *m)
{
    struct ork_model_twin_stats ts;
    if (ork_model_twin_stats(m, &ts) < 0 || !ts.n_rows)
        return;
    const struct ork_twin_result *t = &ts.total;
    double rows = (double)ts.n_rows, end = t->end_ns > 0 ? t->end_ns : 1;
    fprintf(out, "twin (modelled): %llu batches, %llu rows, %llu samplings: %.3f ms per row "
            "(%.2f tok/s); NPU busy", (unsigned long long)ts.n_steps,
            (unsigned long long)ts.n_rows, (unsigned long long)ts.n_samples,
            t->end_ns / 1e6 / rows, rows * 1e9 / end);
    for (uint32_t c = 0; c < ts.npu_cores; c++)
        fprintf(out, "%s%.0f", c ? "/" : " ", 100.0 * t->npu_busy_ns[c] / end);
    fprintf(out, " %%, CPU busy");
    for (uint32_t c = 0; c < ts.cpu_cores; c++)
        fprintf(out, "%s%.0f", c ? "/" : " ", 100.0 * t->cpu_busy_ns[c] / end);
    fprintf(out, " %%, DRAM %.0f %%, hidden %.0f %% of CPU-active\n", 100.0 * t->dram_util,
            100.0 * t->hidden_share);
    fprintf(out, "twin (modelled ms per row):");
    for (int p = 0; p < ORK_TWIN_PHASE_COUNT; p++)
        if (t->phase_ns[p] > 0)
            fprintf(out, " %s %.3f", ork_twin_phase_name((enum ork_twin_phase)p),
                    t->phase_ns[p] / 1e6 / rows);
    fprintf(out, "\n");
}

void ork_cli_npu_report(FILE *out, const struct ork_model *m)
{
    twin_report(out, m);
    struct ork_npu_exec_stats st;
    if (ork_model_npu_stats(m, &st) < 0)
        return;
    static const char *const sect[6] = { "qkv", "o", "gate_up", "down", "lm_head", "cpu" };
    double rows = st.n_rows ? (double)st.n_rows : 1;
    fprintf(out, "npu: %s, %d domain(s), %.1f MiB resident, %d matrices on the NPU, %d on the "
            "CPU\n", st.backend, st.n_domains, (double)st.resident_bytes / (1 << 20),
            st.n_npu_mats, st.n_cpu_mats);
    fprintf(out, "npu: %llu batches, %llu rows, %llu submits (%.1f per row); wall %.1f ms "
            "(npu runs %.1f ms); modelled NPU %.1f ms (core busy %.1f / %.1f / %.1f ms)\n",
            (unsigned long long)st.n_forward, (unsigned long long)st.n_rows,
            (unsigned long long)st.n_submits, (double)st.n_submits / rows, st.wall_ms,
            st.npu_wall_ms, st.model_npu_ms, st.model_core_busy_ms[0],
            st.model_core_busy_ms[1], st.model_core_busy_ms[2]);
    fprintf(out, "npu: CPU overlapped %.2f ms (%.2f ms per row; %llu asynchronous submits with "
            "%.2f ms of CPU work in flight)\n", st.cpu_overlap_ms, st.cpu_overlap_ms / rows,
            (unsigned long long)st.n_overlapped, st.cpu_inflight_ms);
    fprintf(out, "profile (wall ms):");
    for (int k = 0; k < 6; k++)
        fprintf(out, " %s %.1f", sect[k], st.sect_ms[k]);
    fprintf(out, "\n");
}

static bool is_opt(const char *a, const char *s, const char *l)
{
    return (s && !strcmp(a, s)) || (l && !strcmp(a, l));
}

int ork_cli_gen_opt(const char *cmd, int argc, char **argv, int *i, struct ork_cli_gen_opts *o)
{
    const char *a = argv[*i], *v;
    long long n;
    double d;
#define VALUE()                                                         \
    do {                                                                \
        if (!(v = ork_cli_value(cmd, argc, argv, i)))                   \
            return -1;                                                  \
    } while (0)
#define INT_OPT(lo, hi, dst)                                            \
    do {                                                                \
        VALUE();                                                        \
        if (!ork_cli_parse_int(cmd, a, v, (lo), (hi), &n))              \
            return -1;                                                  \
        (dst) = (int32_t)n;                                             \
        return 1;                                                       \
    } while (0)
#define FLOAT_OPT(lo, hi, dst)                                          \
    do {                                                                \
        VALUE();                                                        \
        if (!ork_cli_parse_float(cmd, a, v, (lo), (hi), &d))            \
            return -1;                                                  \
        (dst) = (float)d;                                               \
        return 1;                                                       \
    } while (0)

    if (is_opt(a, "-m", "--model")) {
        VALUE();
        o->model = v;
        return 1;
    }
    if (is_opt(a, "-n", "--n-predict"))
        INT_OPT(-1, INT32_MAX, o->n_predict);
    if (is_opt(a, NULL, "--temp"))
        FLOAT_OPT(0.0, 100.0, o->sampling.temp);
    if (is_opt(a, NULL, "--top-k"))
        INT_OPT(0, INT32_MAX, o->sampling.top_k);
    if (is_opt(a, NULL, "--top-p"))
        FLOAT_OPT(0.0, 1.0, o->sampling.top_p);
    if (is_opt(a, NULL, "--min-p"))
        FLOAT_OPT(0.0, 1.0, o->sampling.min_p);
    if (is_opt(a, NULL, "--repeat-penalty"))
        FLOAT_OPT(0.0, 100.0, o->sampling.repeat_penalty);
    if (is_opt(a, NULL, "--repeat-last-n"))
        INT_OPT(-1, INT32_MAX, o->sampling.penalty_last_n);
    if (is_opt(a, NULL, "--presence-penalty"))
        FLOAT_OPT(-100.0, 100.0, o->sampling.presence_penalty);
    if (is_opt(a, NULL, "--frequency-penalty"))
        FLOAT_OPT(-100.0, 100.0, o->sampling.frequency_penalty);
    if (is_opt(a, "-s", "--seed")) {
        VALUE();
        uint64_t seed;
        if (!ork_cli_parse_u64(cmd, a, v, &seed))
            return -1;
        o->sampling.seed = seed;
        return 1;
    }
    if (is_opt(a, "-t", "--threads"))
        INT_OPT(1, 1024, o->session.n_threads);
    if (is_opt(a, NULL, "--spin-us"))
        INT_OPT(0, ORK_POOL_SPIN_US_MAX, o->session.spin_us);
    if (is_opt(a, "-c", "--ctx-size"))
        INT_OPT(1, 1 << 24, o->session.ctx_size);
    if (is_opt(a, "-b", "--batch-size"))
        INT_OPT(1, 1 << 16, o->session.n_batch);
    if (is_opt(a, NULL, "--kv-type")) {
        VALUE();
        return ork_cli_parse_kv_type(cmd, v, &o->session.kv_type) ? 1 : -1;
    }
    if (is_opt(a, NULL, "--grammar") || is_opt(a, NULL, "--grammar-file") ||
        is_opt(a, "-j", "--json-schema")) {
        VALUE();
        if (!strcmp(a, "--grammar"))
            o->grammar = v;
        else if (!strcmp(a, "--grammar-file"))
            o->grammar_file = v;
        else
            o->json_schema = v;
        if ((o->grammar != NULL) + (o->grammar_file != NULL) + (o->json_schema != NULL) > 1) {
            fprintf(stderr, "ork %s: give one of --grammar, --grammar-file and --json-schema\n",
                    cmd);
            return -1;
        }
        return 1;
    }
    if (is_opt(a, NULL, "--stop")) {
        VALUE();
        if (!*v) {
            fprintf(stderr, "ork %s: --stop needs a non-empty string\n", cmd);
            return -1;
        }
        if (o->n_stops >= ORK_CLI_MAX_STOPS) {
            fprintf(stderr, "ork %s: at most %d --stop strings\n", cmd, ORK_CLI_MAX_STOPS);
            return -1;
        }
        o->stops[o->n_stops++] = v;
        return 1;
    }
    if (is_opt(a, NULL, "--act-quant") || is_opt(a, NULL, "--no-act-quant")) {
        o->session.act_quant = strcmp(a, "--no-act-quant") != 0;
        return 1;
    }
    if (is_opt(a, NULL, "--no-bos")) {
        o->no_bos = true;
        return 1;
    }
    if (is_opt(a, NULL, "--ignore-eos")) {
        o->ignore_eos = true;
        return 1;
    }
    if (is_opt(a, "-md", "--draft-model")) {
        VALUE();
        o->draft_model = v;
        return 1;
    }
    if (is_opt(a, NULL, "--lookup"))
        INT_OPT(1, ORK_SPEC_M_HIST - 1, o->lookup);
    if (is_opt(a, NULL, "--draft-max") || is_opt(a, NULL, "--draft"))
        INT_OPT(1, ORK_SPEC_M_HIST - 1, o->draft_max);
    if (is_opt(a, NULL, "--draft-min"))
        INT_OPT(0, ORK_SPEC_M_HIST - 1, o->draft_min);
    if (is_opt(a, NULL, "--draft-p-min"))
        FLOAT_OPT(0.0, 1.0, o->draft_p_min);
    if (is_opt(a, "-v", "--verbose")) {
        o->verbose = true;
        return 1;
    }
    if (is_opt(a, NULL, "--profile")) {
        o->profile = true;
        return 1;
    }
    if (is_opt(a, NULL, "--trace")) {
        VALUE();
        o->trace = v;
        return 1;
    }
    return ork_cli_device_opt(cmd, argc, argv, i, &o->model_params);
#undef VALUE
#undef INT_OPT
#undef FLOAT_OPT
}

void ork_cli_gen_help(FILE *out, bool sampling)
{
    fprintf(out,
            "  -m, --model FILE          GGUF model (llama, qwen2, qwen3) [required]\n"
            "  -t, --threads N           CPU threads (default: all online CPUs)\n"
            "  --spin-us N               threads poll N us for the next job before sleeping\n"
            "                            (default: " ORK_STR(ORK_POOL_SPIN_US_DEFAULT) "; 0: sleep at once)\n"
            "  -c, --ctx-size N          KV cache length in tokens (default: min(model, 4096))\n"
            "  -b, --batch-size N        tokens per forward batch in prefill (default: 256)\n"
            "  --kv-type f32|f16         KV cache precision (default: f32, exact)\n"
            "  --no-act-quant            keep activations f32 in matmuls (default: round them\n"
            "                            like llama.cpp: Q8_0 for Q8_0/Q4_0, Q8_K for Q4_K/Q6_K,\n"
            "                            F16 for F16 weights; --act-quant selects the default)\n"
            "  -v, --verbose             model summary, cache reuse and timing details\n"
            "  --profile                 NPU executor counters and time per section\n"
            "  --trace FILE.json         timeline of NPU submits and executor phases (Perfetto)\n");
    ork_cli_load_help(out);
    ork_cli_device_help(out);
    if (!sampling)
        return;
    fprintf(out,
            "  -n, --n-predict N         tokens to generate, -1 = until end of text (default: -1)\n"
            "  --temp T                  temperature; 0 = greedy (default: 0.8)\n"
            "  --top-k K                 keep the K most likely tokens, 0 = off (default: 40)\n"
            "  --top-p P                 nucleus sampling, 1 = off (default: 0.95)\n"
            "  --min-p P                 drop tokens below P x the top probability (default: 0.05)\n"
            "  --repeat-penalty R        penalise repeated tokens, 1 = off (default: 1.0)\n"
            "  --repeat-last-n N         tokens the penalties look back on, -1 = all (default: 64)\n"
            "  --presence-penalty P      (default: 0)\n"
            "  --frequency-penalty P     (default: 0)\n"
            "  -s, --seed S              RNG seed (default: random)\n"
            "  --stop STR                stop before STR (repeatable, up to 16)\n"
            "  --grammar GBNF            constrain the output to a GBNF grammar (docs/sampling.md)\n"
            "  --grammar-file FILE       the same, read from FILE\n"
            "  -j, --json-schema SCHEMA  constrain the output to JSON matching a JSON schema\n"
            "  --no-bos                  do not prepend BOS even if the model wants it\n"
            "  --ignore-eos              never sample the end-of-generation token (a grammar\n"
            "                            still ends when it completes)\n"
            "  -md, --draft-model FILE   speculative decoding with a draft model of the same\n"
            "                            vocabulary (runs on the CPU; docs/sampling.md)\n"
            "  --lookup N                speculative decoding by prompt lookup: draft what\n"
            "                            followed the last N..1 tokens earlier in the context\n"
            "  --draft-max N             most tokens drafted per step (default: 16, at most 32)\n"
            "  --draft-min N             fewer drafted: a plain step (default: 0)\n"
            "  --draft-p-min P           the draft model stops at a token it gives less than P\n"
            "                            (default: 0)\n");
}

/* The trace file is written when the program ends, whatever the subcommand's path out. */
static void trace_stop_at_exit(void)
{
    if (ork_trace_stop() < 0)
        fprintf(stderr, "ork: cannot write the trace: %s\n", ork_error_message());
}

/* Grammar files are text a person writes: 1 MiB is far above any real one (llama.cpp's
 * json.gbnf is ~1 KiB) and bounds what a wrong path can make us read. */
#define ORK_CLI_MAX_GRAMMAR_BYTES (1u << 20)

static int read_text_file(const char *path, size_t max, char **out, size_t *len);

/* The grammar and vocabulary trie of the one sampler a command makes (run, chat): they must
 * outlive it, so they live here until ork_cli_gen_constraint_free. */
static struct ork_cli_constraint constraint;

void ork_cli_gen_constraint_free(void)
{
    ork_grammar_vocab_free(constraint.vocab);
    ork_grammar_free(constraint.grammar);
    memset(&constraint, 0, sizeof constraint);
}

/* Compile --grammar / --grammar-file / --json-schema for model m into sp (none: sp as is). */
static int constraint_make(const struct ork_cli_gen_opts *o, const struct ork_model *m,
                           struct ork_sampler_params *sp)
{
    char *text = NULL;
    int ret = 0;
    if (!o->grammar && !o->grammar_file && !o->json_schema)
        return 0;
    if (!ork_model_tokenizer(m))
        return ork_errorf(ORK_EINVAL, "a grammar needs the model's tokenizer");
    if (o->grammar_file) {
        size_t len;
        if ((ret = read_text_file(o->grammar_file, ORK_CLI_MAX_GRAMMAR_BYTES, &text, &len)) < 0)
            return ret;
        ret = ork_grammar_parse(text, len, &constraint.grammar);
    } else if (o->grammar) {
        ret = ork_grammar_parse(o->grammar, strlen(o->grammar), &constraint.grammar);
    } else {
        ret = ork_grammar_from_json_schema(o->json_schema, strlen(o->json_schema),
                                           &constraint.grammar);
    }
    ork_free(text);
    if (ret == 0)
        ret = ork_grammar_vocab_create(ork_model_tokenizer(m), &constraint.vocab);
    if (ret < 0) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", ork_error_message());
        ork_cli_gen_constraint_free();
        return ork_errorf(ret, "%s%s%s", o->grammar_file ? o->grammar_file : "",
                          o->grammar_file ? ": " : "", msg);
    }
    sp->grammar = constraint.grammar;
    sp->grammar_vocab = constraint.vocab;
    return 0;
}

int ork_cli_gen_setup(const char *cmd, const struct ork_cli_gen_opts *o, struct ork_model **m,
                      struct ork_session **s, struct ork_sampler **smp)
{
    *m = NULL;
    *s = NULL;
    if (smp)
        *smp = NULL;
    /* the interleaved layout serves the quantized-activation kernels only */
    struct ork_model_params mp = o->model_params;
    mp.no_repack = mp.no_repack || !o->session.act_quant;
    ork_cli_device_resolve(cmd, &mp, o->verbose);
    int ret = ork_model_load(o->model, &mp, m);
    if (ret < 0) {
        fprintf(stderr, "ork %s: cannot load model '%s': %s\n", cmd, o->model,
                ork_error_describe(ret));
        return ORK_EXIT_ERROR;
    }
    if (o->verbose) {
        char buf[256];
        ork_model_describe(*m, buf, sizeof buf);
        fprintf(stderr, "model: %s\n", buf);
    }
    if ((ret = ork_session_create(*m, &o->session, s)) < 0)
        goto err;
    if (o->trace) {
        if ((ret = ork_trace_start(o->trace)) < 0)
            goto err;
        atexit(trace_stop_at_exit);
    }
    if (smp) {
        struct ork_sampler_params sp = o->sampling;
        if ((ret = constraint_make(o, *m, &sp)) < 0 ||
            (ret = ork_sampler_create(&sp, ork_model_config(*m)->n_vocab, smp)) < 0)
            goto err;
    }
    if (o->verbose)
        fprintf(stderr, "session: ctx %d, batch %d, kv %s, activations %s\n",
                ork_session_ctx_size(*s), ork_session_n_batch(*s),
                o->session.kv_type == ORK_KV_F16 ? "f16" : "f32",
                o->session.act_quant ? "quantized" : "f32");
    if (o->verbose)
        fprintf(stderr, "CPU kernels path: %s (cpu: %s)\n", ork_kernels_path(),
                ork_kernels_cpu_caps());
    return 0;
err:
    ork_cli_error(cmd, ret);
    ork_session_free(*s);
    ork_model_free(*m);
    *s = NULL;
    *m = NULL;
    return ORK_EXIT_ERROR;
}

static double tok_per_s(int32_t n, double ms)
{
    return ms > 0 ? (double)n * 1000.0 / ms : 0.0;
}

void ork_cli_print_stats(const struct ork_gen_stats *st)
{
    int32_t evaluated = st->n_prompt - st->n_reused;
    fprintf(stderr, "prompt: %d tokens, %.1f ms (%.0f tok/s) | generation: %d tokens, %.1f ms "
            "(%.0f tok/s)\n", evaluated, st->prompt_ms, tok_per_s(evaluated, st->prompt_ms),
            st->n_gen, st->gen_ms, tok_per_s(st->n_gen, st->gen_ms));
    if (st->n_steps > 0)
        fprintf(stderr, "speculative: %d drafted, %d accepted (%.1f %%), %d target forwards, "
                "tau %.2f tokens per forward\n", st->n_drafted, st->n_accepted,
                st->n_drafted ? 100.0 * st->n_accepted / st->n_drafted : 0.0, st->n_steps,
                1.0 + (double)st->n_accepted / st->n_steps);
}

/* The draft model of the one decoder a command makes (run, chat). */
static struct ork_model *spec_draft;

int ork_cli_spec_setup(const char *cmd, const struct ork_cli_gen_opts *o, struct ork_model *m,
                       const struct ork_session *s, struct ork_spec **spec)
{
    *spec = NULL;
    if (!o->draft_model && !o->lookup)
        return 0;
    struct ork_spec_params sp;
    ork_spec_params_default(&sp);
    sp.lookup = o->lookup;
    sp.draft_max = o->draft_max;
    sp.draft_min = o->draft_min;
    sp.draft_p_min = o->draft_p_min;
    sp.n_threads = o->session.n_threads;
    sp.ctx_size = ork_session_ctx_size(s);
    int ret = 0;
    if (o->draft_model) {
        /* the draft runs on the CPU (the A76 cores on the board) while the target may use
         * the NPU */
        struct ork_model_params mp;
        ork_model_params_default(&mp);
        mp.device = "cpu";
        mp.no_repack = o->model_params.no_repack || !o->session.act_quant;
        if ((ret = ork_model_load(o->draft_model, &mp, &spec_draft)) < 0) {
            fprintf(stderr, "ork %s: cannot load draft model '%s': %s\n", cmd, o->draft_model,
                    ork_error_describe(ret));
            return ORK_EXIT_ERROR;
        }
        sp.draft = spec_draft;
    }
    if ((ret = ork_spec_create(m, &sp, spec)) < 0) {
        ork_cli_error(cmd, ret);
        ork_model_free(spec_draft);
        spec_draft = NULL;
        return ORK_EXIT_ERROR;
    }
    if (o->verbose)
        fprintf(stderr, "speculative: %s%s%s, draft %d..%d tokens\n",
                o->lookup ? "prompt lookup" : "", o->lookup && o->draft_model ? ", then " : "",
                o->draft_model ? o->draft_model : "", o->draft_min, o->draft_max);
    return 0;
}

void ork_cli_spec_free(struct ork_spec *spec, bool report)
{
    if (report)
        ork_cli_spec_report(stderr, spec);
    ork_spec_free(spec);
    ork_model_free(spec_draft);
    spec_draft = NULL;
}

void ork_cli_spec_report(FILE *out, const struct ork_spec *spec)
{
    if (!spec)
        return;
    const struct ork_spec_stats *st = ork_spec_stats(spec);
    fprintf(out, "speculative: acceptance %.3f, tau %.3f, draft %.1f ms, verify %.1f ms; "
            "forwards by rows M:", ork_spec_acceptance(st), ork_spec_tau(st), st->draft_ms,
            st->verify_ms);
    for (int i = 0; i < ORK_SPEC_M_HIST; i++)
        if (st->m_hist[i])
            fprintf(out, " %d:%llu", i + 1, (unsigned long long)st->m_hist[i]);
    fprintf(out, "\n");
}

/* ---- ork run ----------------------------------------------------------------------------- */

static void usage(FILE *out)
{
    fprintf(out, "usage: ork run -m MODEL (-p PROMPT | -f FILE) [options]\n\n"
                 "Generate text from a prompt; the text streams to stdout, speed goes to stderr.\n\n"
                 "options:\n"
                 "  -p, --prompt TEXT         the prompt\n"
                 "  -f, --file FILE           read the prompt from FILE\n"
                 "  --special                 parse special-token text (<|im_start|>...) in the prompt\n"
                 "  --no-echo                 do not print the prompt before the generated text\n");
    ork_cli_gen_help(out, true);
}

static int write_text(void *user, const char *text, size_t len)
{
    (void)user;
    fwrite(text, 1, len, stdout);
    fflush(stdout);
    return 0;
}

/* The whole of a text file, NUL-terminated, into *out (ork_free it); at most max bytes. */
static int read_text_file(const char *path, size_t max, char **out, size_t *len)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return ork_errorf(ORK_EIO, "cannot open '%s'", path);
    size_t cap = 4096, n = 0;
    char *buf = ork_malloc(cap);
    int ret = buf ? 0 : ORK_ENOMEM;
    while (ret == 0) {
        if (n + 1 >= cap) {
            char *nb = cap >= max ? NULL : ork_realloc(buf, cap * 2);
            if (!nb) {
                ret = cap >= max ? ork_errorf(ORK_EINVAL, "'%s' is larger than %zu bytes", path,
                                              max)
                                 : ORK_ENOMEM;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t r = fread(buf + n, 1, cap - 1 - n, f);
        n += r;
        if (r == 0)
            break;
    }
    if (ret == 0 && ferror(f))
        ret = ork_errorf(ORK_EIO, "cannot read '%s'", path);
    fclose(f);
    if (ret < 0) {
        ork_free(buf);
        return ret;
    }
    buf[n] = 0;
    *out = buf;
    *len = n;
    return 0;
}

static char *read_prompt_file(const char *path)
{
    char *text;
    size_t len;
    int ret = read_text_file(path, ORK_CLI_MAX_PROMPT_BYTES, &text, &len);
    if (ret < 0) {
        fprintf(stderr, "ork %s: prompt file: %s\n", CMD, ork_error_message());
        return NULL;
    }
    return text;
}

int ork_cmd_run(int argc, char **argv)
{
    struct ork_cli_gen_opts o;
    ork_cli_gen_opts_default(&o);
    const char *prompt = NULL, *prompt_file = NULL;
    bool special = false, echo = true;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return ORK_EXIT_OK;
        }
        int r = ork_cli_gen_opt(CMD, argc, argv, &i, &o);
        if (r < 0)
            return ORK_EXIT_USAGE;
        if (r > 0)
            continue;
        if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) {
            if (!(prompt = ork_cli_value(CMD, argc, argv, &i)))
                return ORK_EXIT_USAGE;
        } else if (!strcmp(a, "-f") || !strcmp(a, "--file")) {
            if (!(prompt_file = ork_cli_value(CMD, argc, argv, &i)))
                return ORK_EXIT_USAGE;
        } else if (!strcmp(a, "--special")) {
            special = true;
        } else if (!strcmp(a, "--no-echo")) {
            echo = false;
        } else {
            fprintf(stderr, "ork %s: unknown option '%s' (see ork %s --help)\n", CMD, a, CMD);
            return ORK_EXIT_USAGE;
        }
    }
    if (!o.model) {
        fprintf(stderr, "ork %s: -m MODEL is required (see ork %s --help)\n", CMD, CMD);
        return ORK_EXIT_USAGE;
    }
    if (!prompt == !prompt_file) {
        fprintf(stderr, "ork %s: give exactly one of -p PROMPT or -f FILE\n", CMD);
        return ORK_EXIT_USAGE;
    }

    char *file_text = NULL;
    if (prompt_file) {
        if (!(file_text = read_prompt_file(prompt_file)))
            return ORK_EXIT_ERROR;
        prompt = file_text;
    }
    struct ork_model *m;
    struct ork_session *s;
    struct ork_sampler *smp;
    int rc = ork_cli_gen_setup(CMD, &o, &m, &s, &smp);
    if (rc) {
        ork_free(file_text);
        return rc;
    }
    struct ork_spec *spec = NULL;
    if ((rc = ork_cli_spec_setup(CMD, &o, m, s, &spec))) {
        ork_sampler_free(smp);
        ork_cli_gen_constraint_free();
        ork_session_free(s);
        ork_model_free(m);
        ork_free(file_text);
        return rc;
    }
    struct ork_gen_params gp;
    ork_gen_params_default(&gp);
    gp.sampling = o.sampling;
    gp.ignore_eos = o.ignore_eos;
    gp.spec = spec;
    gp.n_predict = o.n_predict;
    gp.stops = o.stops;
    gp.n_stops = o.n_stops;
    gp.add_special = !o.no_bos;
    gp.parse_special = special;
    gp.on_text = write_text;

    if (echo) {
        fputs(prompt, stdout);
        fflush(stdout);
    }
    struct ork_gen_stats st;
    int ret = ork_generate(s, smp, prompt, &gp, &st);
    fputc('\n', stdout);
    fflush(stdout);
    if (ret < 0) {
        ork_cli_error(CMD, ret);
        rc = ORK_EXIT_ERROR;
    } else {
        ork_cli_print_stats(&st);
        if (o.profile)
            ork_cli_npu_report(stderr, m);
        if (o.verbose) {
            fprintf(stderr, "stop: %s, seed %llu\n", ork_stop_reason_name(st.stop),
                    (unsigned long long)ork_sampler_seed(smp));
        }
    }
    ork_cli_spec_free(spec, o.verbose && rc == 0);
    ork_sampler_free(smp);
    ork_cli_gen_constraint_free();
    ork_session_free(s);
    ork_model_free(m);
    ork_free(file_text);
    return rc;
}
