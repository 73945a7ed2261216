/* cmd_bench_report.c -- `ork bench`'s output: the llama-bench style table, the memory
 * bandwidth, the decode roofline and compute-peak tables (markdown), and the same numbers as
 * JSON or CSV. The rooflines and peak shares are derived here from the results (bench.h).
 *
 * Not here: options and measuring (cmd_bench.c). */
#include "bench.h"

#include <ork/text.h>
#include <ork-kernels/kernels.h>
#include <ork-tooling/readbw.h>

#include <inttypes.h>
#include <stdio.h>

#define GIB (1024.0 * 1024.0 * 1024.0)
#define MIB (1024.0 * 1024.0)

/* Bandwidth (GB/s) of a tg test's roofline: the mean of the read kernel's best before and
 * best after the test (the access pattern of weights streaming through a matmul). */
static double roof_gbps(const struct result *r)
{
    return 0.5 * (r->read_before + r->read_after);
}

/* True when a tg test's two read measurements disagree by more than ROOF_DRIFT_RATIO. */
static bool roof_drift(const struct result *r)
{
    double lo = r->read_before < r->read_after ? r->read_before : r->read_after;
    double hi = r->read_before < r->read_after ? r->read_after : r->read_before;
    return lo <= 0 || hi / lo > ROOF_DRIFT_RATIO;
}

/* Roofline tokens/s of a tg test; 0 when not measured. */
static double roof_ts(const struct result *r, const struct model_desc *d)
{
    if (r->pp || !r->roof_runs || !d->bytes_per_token)
        return 0.0;
    return roof_gbps(r) * 1e9 / (double)d->bytes_per_token;
}

static const struct ork_cpu_peak *peak_for(const struct ork_cpu_peak *pk, int n_pk, int threads)
{
    for (int i = 0; i < n_pk; i++)
        if (pk[i].threads == threads)
            return &pk[i];
    return NULL;
}

/* Matmul operations (2 per multiply-add) per token of a ppP test: every layer matrix for each
 * token, the output matrix once per batch (only the last row's logits are computed). */
static double pp_ops_per_token(const struct model_desc *d, int p)
{
    return 2.0 * (double)d->layer_mat_params + 2.0 * (double)d->out_params / (p > 0 ? p : 1);
}


/* llama-bench style: GiB / MiB, and B / M / K parameters. */
static void fmt_size(uint64_t b, char *buf, size_t cap)
{
    if ((double)b >= GIB)
        snprintf(buf, cap, "%.2f GiB", (double)b / GIB);
    else
        snprintf(buf, cap, "%.2f MiB", (double)b / MIB);
}

static void fmt_params(uint64_t n, char *buf, size_t cap)
{
    if (n >= 1000000000u)
        snprintf(buf, cap, "%.2f B", (double)n / 1e9);
    else if (n >= 1000000u)
        snprintf(buf, cap, "%.2f M", (double)n / 1e6);
    else
        snprintf(buf, cap, "%.2f K", (double)n / 1e3);
}

static void print_md_peak(const struct model_desc *md, const struct result *res, int n_res,
                          const struct bench_refs *rf)
{
    if (!rf->n_pk)
        return;
    printf("\n| compute peak | threads | f32 instruction | f32 GFLOP/s | int8 instruction | "
           "int8 GOP/s |\n| --- | ---: | --- | ---: | --- | ---: |\n");
    for (int i = 0; i < rf->n_pk; i++) {
        const struct ork_cpu_peak *k = &rf->pk[i];
        printf("| measured | %d | %s | %.1f | %s | %.1f |\n", k->threads, k->f32_insn,
               k->f32_flops / 1e9, k->int8_insn, k->int8_ops / 1e9);
    }
    bool any = false;
    for (int i = 0; i < n_res; i++) {
        const struct result *r = &res[i];
        const struct ork_cpu_peak *k = peak_for(rf->pk, rf->n_pk, r->threads);
        if (!r->pp || !k)
            continue;
        const struct model_desc *d = &md[r->model];
        if (!any) {
            printf("\n| model | threads | test | GOP/token | t/s | GOP/s | %% of f32 FMA peak | "
                   "%% of int8 peak |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
            any = true;
        }
        double gops = pp_ops_per_token(d, r->n_tokens) * r->avg_ts / 1e9;
        printf("| %s | %d | pp%d | %.3g | %.2f | %.1f | %.1f%% | %.1f%% |\n", d->name,
               r->threads, r->n_tokens, pp_ops_per_token(d, r->n_tokens) / 1e9, r->avg_ts, gops,
               k->f32_flops > 0 ? 100.0 * gops * 1e9 / k->f32_flops : 0.0,
               k->int8_ops > 0 ? 100.0 * gops * 1e9 / k->int8_ops : 0.0);
    }
}

/* The decode roofline of every tg test measured with --membw: both read measurements, so drift
 * during the test shows, and the roofline from their mean. */
static void print_md_roofline(const struct model_desc *md, const struct result *res, int n_res)
{
    bool any = false, drift = false;
    for (int i = 0; i < n_res; i++) {
        const struct result *r = &res[i];
        const struct model_desc *d = &md[r->model];
        double roof = roof_ts(r, d);
        if (roof <= 0)
            continue;
        drift |= roof_drift(r);
        if (!any) {
            printf("\n| model | threads | test | MB/token | read MiB | read GB/s before | "
                   "read GB/s after | roofline t/s | t/s | %% of roofline |\n"
                   "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
            any = true;
        }
        printf("| %s | %d | tg%d | %.1f | %zu | %.2f | %.2f | %.2f | %.2f | %.1f%%%s |\n",
               d->name, r->threads, r->n_tokens, (double)d->bytes_per_token / 1e6,
               r->roof_bytes >> 20, r->read_before, r->read_after, roof, r->avg_ts,
               100.0 * r->avg_ts / roof, roof_drift(r) ? " (drift)" : "");
    }
    if (any)
        printf("\nread GB/s: best of %d passes of the read kernel (%s) with the test's threads "
               "over read MiB, right before and right after the test's timed runs; roofline t/s = "
               "their mean / MB per token.\n", ROOF_RUNS, ork_cpu_read_insn());
    if (drift)
        printf("(drift): the two readings differ by more than %.0f %%: the memory bandwidth "
               "moved during the test, so its share of the roofline is not reliable; run it "
               "again.\n", 100.0 * (ROOF_DRIFT_RATIO - 1.0));
}

static bool any_twin(const struct result *res, int n_res)
{
    for (int i = 0; i < n_res; i++)
        if (res[i].twin)
            return true;
    return false;
}

static double twin_rows(const struct result *r)
{
    return r->tw.n_rows ? (double)r->tw.n_rows : 1;
}

static double twin_end(const struct result *r)
{
    return r->tw.total.end_ns > 0 ? r->tw.total.end_ns : 1;
}

/* The twin's breakdown per test: modelled ms per token, busy cores, DRAM, hidden share and the
 * phases' modelled wall time per token (docs/twin.md "In the engine"). */
static void print_md_twin(const struct model_desc *md, const struct result *res, int n_res)
{
    if (!any_twin(res, n_res))
        return;
    printf("\n| model | backend | test | modelled ms/token | NPU busy %% (per core) | CPU busy %% "
           "(per A76) | DRAM %% | hidden %% | modelled ms/token by phase |\n"
           "| --- | --- | ---: | ---: | --- | --- | ---: | ---: | --- |\n");
    for (int i = 0; i < n_res; i++) {
        const struct result *r = &res[i];
        if (!r->twin)
            continue;
        const struct ork_twin_result *t = &r->tw.total;
        double rows = twin_rows(r), end = twin_end(r);
        printf("| %s | %s | %s%d | %.3f | ", md[r->model].name, md[r->model].backend,
               r->pp ? "pp" : "tg", r->n_tokens, t->end_ns / 1e6 / rows);
        for (uint32_t c = 0; c < r->tw.npu_cores; c++)
            printf("%s%.0f", c ? "/" : "", 100.0 * t->npu_busy_ns[c] / end);
        printf(" | ");
        for (uint32_t c = 0; c < r->tw.cpu_cores; c++)
            printf("%s%.0f", c ? "/" : "", 100.0 * t->cpu_busy_ns[c] / end);
        printf(" | %.0f | %.1f |", 100.0 * t->dram_util, 100.0 * t->hidden_share);
        for (int p = 0; p < ORK_TWIN_PHASE_COUNT; p++)
            if (t->phase_ns[p] > 0)
                printf(" %s %.4g", ork_twin_phase_name((enum ork_twin_phase)p),
                       t->phase_ns[p] / 1e6 / rows);
        printf(" |\n");
    }
    printf("\nModelled on the board twin (docs/twin.md): t/s and this table are the RK3588's "
           "modelled time, identical at any -t and on any host; host t/s is this machine's "
           "speed. Phase times are wall time on the model clock (overlapping phases both "
           "count); hidden = CPU-active time overlapped by NPU-active time.\n");
}

static void print_md(const struct opts *o, const struct model_desc *md, const struct result *res,
                     int n_res, const struct bench_refs *rf)
{
    const struct ork_membw_result *bw = rf->bw;
    int n_bw = rf->n_bw;
    const char *path = ork_kernels_path();
    bool tw = any_twin(res, n_res);
    if (n_res) {
        printf("| model | size | params | backend | kernels | threads | test | t/s |%s\n",
               tw ? " host t/s |" : "");
        printf("| --- | ---: | ---: | --- | --- | ---: | ---: | ---: |%s\n", tw ? " ---: |" : "");
        for (int i = 0; i < n_res; i++) {
            const struct result *r = &res[i];
            const struct model_desc *d = &md[r->model];
            char size[32], params[32];
            fmt_size(d->size_bytes, size, sizeof size);
            fmt_params(d->n_params, params, sizeof params);
            printf("| %s | %s | %s | %s%s | %s | %d | %s%d | %.2f ± %.2f |", d->name, size,
                   params, d->backend, r->twin ? " (twin, modelled)" : "", path, r->threads,
                   r->pp ? "pp" : "tg", r->n_tokens, r->avg_ts, r->sd_ts);
            if (tw && r->twin)
                printf(" %.2f ± %.2f |", r->host_ts, r->host_sd);
            else if (tw)
                printf(" |");
            printf("\n");
        }
    }
    if (n_bw) {
        printf("%s| memory bandwidth | threads | array MiB |", n_res ? "\n" : "");
        for (int k = 0; k < ORK_MEMBW_COUNT; k++)
            printf(" %s GB/s |", ork_membw_kernel_name((enum ork_membw_kernel)k));
        printf("\n| --- | ---: | ---: |");
        for (int k = 0; k < ORK_MEMBW_COUNT; k++)
            printf(" ---: |");
        printf("\n");
        for (int i = 0; i < n_bw; i++) {
            printf("| best of %d | %d | %zu |", bw[i].n_runs, bw[i].n_threads,
                   bw[i].array_bytes >> 20);
            for (int k = 0; k < ORK_MEMBW_COUNT; k++)
                printf(" %.2f |", bw[i].gbps[k]);
            printf("\n");
        }
    }
    print_md_twin(md, res, n_res);
    print_md_roofline(md, res, n_res);
    print_md_peak(md, res, n_res, rf);
    (void)o;
}

static void print_json(const struct opts *o, const struct model_desc *md,
                       const struct result *res, int n_res, const struct bench_refs *rf)
{
    const struct ork_membw_result *bw = rf->bw;
    int n_bw = rf->n_bw;
    printf("{\n  \"results\": [");
    for (int i = 0; i < n_res; i++) {
        const struct result *r = &res[i];
        const struct model_desc *d = &md[r->model];
        printf("%s\n    {\"model\": ", i ? "," : "");
        ork_json_put_quoted(stdout, d->name);
        printf(", \"model_path\": ");
        ork_json_put_quoted(stdout, o->models[r->model]);
        printf(", \"size_bytes\": %" PRIu64 ", \"n_params\": %" PRIu64 ", \"backend\": \"%s\", "
               "\"load\": \"%s\", \"interleaved\": %d, \"kernels\": ", d->size_bytes,
               d->n_params, d->backend, d->load, d->interleaved);
        ork_json_put_quoted(stdout, ork_kernels_path());
        printf(", \"type_k\": \"%s\", \"type_v\": \"%s\"", ork_cli_bench_kv_name(o), ork_cli_bench_kv_name(o));
        printf(", \"threads\": %d, \"test\": \"%s%d\", \"n_prompt\": %d, \"n_gen\": %d, "
               "\"repetitions\": %d, \"avg_ts\": %.6g, \"stddev_ts\": %.6g, \"samples_ts\": [",
               r->threads, r->pp ? "pp" : "tg", r->n_tokens, r->pp ? r->n_tokens : 0,
               r->pp ? 0 : r->n_tokens, r->reps, r->avg_ts, r->sd_ts);
        for (int k = 0; k < r->reps; k++)
            printf("%s%.6g", k ? ", " : "", r->samples[k]);
        printf("], \"cpu_share\": %.4g, \"bytes_per_token\": %" PRIu64, r->cpu_share,
               d->bytes_per_token);
        double roof = roof_ts(r, d);
        if (roof > 0) {
            printf(", \"read_insn\": ");
            ork_json_put_quoted(stdout, ork_cpu_read_insn());
            printf(", \"read_array_bytes\": %zu, \"read_runs\": %d, \"read_gbps_before\": %.6g, "
                   "\"read_gbps_after\": %.6g, \"read_gbps\": %.6g, \"roofline_ts\": %.6g, "
                   "\"roofline_pct\": %.4g, \"read_drift\": %s", r->roof_bytes, r->roof_runs,
                   r->read_before, r->read_after, roof_gbps(r), roof, 100.0 * r->avg_ts / roof,
                   roof_drift(r) ? "true" : "false");
        }
        if (r->twin) {
            const struct ork_twin_result *t = &r->tw.total;
            double rows = twin_rows(r), end = twin_end(r);
            printf(", \"modelled\": true, \"host_avg_ts\": %.6g, \"host_stddev_ts\": %.6g, "
                   "\"twin\": {\"steps\": %" PRIu64 ", \"rows\": %" PRIu64 ", \"samplings\": %"
                   PRIu64 ", \"ms_per_token\": %.6g, \"npu_busy_pct\": [", r->host_ts, r->host_sd,
                   r->tw.n_steps, r->tw.n_rows, r->tw.n_samples, t->end_ns / 1e6 / rows);
            for (uint32_t c = 0; c < r->tw.npu_cores; c++)
                printf("%s%.4g", c ? ", " : "", 100.0 * t->npu_busy_ns[c] / end);
            printf("], \"cpu_busy_pct\": [");
            for (uint32_t c = 0; c < r->tw.cpu_cores; c++)
                printf("%s%.4g", c ? ", " : "", 100.0 * t->cpu_busy_ns[c] / end);
            printf("], \"dram_util\": %.4g, \"dram_bytes_per_token\": %.6g, \"hidden_share\": "
                   "%.4g, \"hidden_ms_per_token\": %.6g, \"phase_ms_per_token\": {",
                   t->dram_util, t->dram_bytes / rows, t->hidden_share, t->hidden_ns / 1e6 / rows);
            bool first = true;
            for (int p = 0; p < ORK_TWIN_PHASE_COUNT; p++)
                if (t->phase_ns[p] > 0) {
                    printf("%s\"%s\": %.6g", first ? "" : ", ",
                           ork_twin_phase_name((enum ork_twin_phase)p), t->phase_ns[p] / 1e6 / rows);
                    first = false;
                }
            printf("}}");
        }
        const struct ork_cpu_peak *k = peak_for(rf->pk, rf->n_pk, r->threads);
        if (k && r->pp) {
            double ops = pp_ops_per_token(d, r->n_tokens) * r->avg_ts;
            printf(", \"gops\": %.6g, \"f32_peak_pct\": %.4g, \"int8_peak_pct\": %.4g", ops / 1e9,
                   k->f32_flops > 0 ? 100.0 * ops / k->f32_flops : 0.0,
                   k->int8_ops > 0 ? 100.0 * ops / k->int8_ops : 0.0);
        }
        printf("}");
    }
    printf("%s],\n  \"membw\": [", n_res ? "\n  " : "");
    for (int i = 0; i < n_bw; i++) {
        printf("%s\n    {\"threads\": %d, \"array_bytes\": %zu, \"runs\": %d, \"read_insn\": ",
               i ? "," : "", bw[i].n_threads, bw[i].array_bytes, bw[i].n_runs);
        ork_json_put_quoted(stdout, ork_cpu_read_insn());
        for (int k = 0; k < ORK_MEMBW_COUNT; k++)
            printf(", \"%s_gbps\": %.6g", ork_membw_kernel_name((enum ork_membw_kernel)k),
                   bw[i].gbps[k]);
        printf("}");
    }
    printf("%s],\n  \"peak\": [", n_bw ? "\n  " : "");
    for (int i = 0; i < rf->n_pk; i++) {
        const struct ork_cpu_peak *k = &rf->pk[i];
        printf("%s\n    {\"threads\": %d, \"f32_insn\": ", i ? "," : "", k->threads);
        ork_json_put_quoted(stdout, k->f32_insn);
        printf(", \"f32_gflops\": %.6g, \"int8_insn\": ", k->f32_flops / 1e9);
        ork_json_put_quoted(stdout, k->int8_insn);
        printf(", \"int8_gops\": %.6g}", k->int8_ops / 1e9);
    }
    printf("%s]\n}\n", rf->n_pk ? "\n  " : "");
}

static void print_csv(const struct opts *o, const struct model_desc *md,
                      const struct result *res, int n_res, const struct bench_refs *rf)
{
    const struct ork_membw_result *bw = rf->bw;
    int n_bw = rf->n_bw;
    if (n_res) {
        printf("model,model_path,size_bytes,n_params,backend,kernels,type_k,type_v,threads,test,n_prompt,"
               "n_gen,repetitions,avg_ts,stddev_ts,bytes_per_token,read_array_bytes,"
               "read_gbps_before,read_gbps_after,roofline_ts,roofline_pct,modelled,host_avg_ts,"
               "twin_ms_per_token,npu_busy0_pct,npu_busy1_pct,npu_busy2_pct,cpu_busy0_pct,"
               "cpu_busy1_pct,cpu_busy2_pct,cpu_busy3_pct,dram_util,hidden_share");
        for (int p = 0; p < ORK_TWIN_PHASE_COUNT; p++)
            printf(",ms_%s", ork_twin_phase_name((enum ork_twin_phase)p));
        printf("\n");
        for (int i = 0; i < n_res; i++) {
            const struct result *r = &res[i];
            const struct model_desc *d = &md[r->model];
            double roof = roof_ts(r, d);
            printf("\"%s\",\"%s\",%" PRIu64 ",%" PRIu64 ",%s,%s,%s,%s,%d,%s%d,%d,%d,%d,%.6g,%.6g,%"
                   PRIu64 ",%zu,%.6g,%.6g,%.6g,%.4g", d->name, o->models[r->model],
                   d->size_bytes, d->n_params, d->backend, ork_kernels_path(), ork_cli_bench_kv_name(o),
                   ork_cli_bench_kv_name(o), r->threads,
                   r->pp ? "pp" : "tg", r->n_tokens, r->pp ? r->n_tokens : 0,
                   r->pp ? 0 : r->n_tokens, r->reps, r->avg_ts, r->sd_ts, d->bytes_per_token,
                   roof > 0 ? r->roof_bytes : 0, r->read_before, r->read_after, roof,
                   roof > 0 ? 100.0 * r->avg_ts / roof : 0.0);
            const struct ork_twin_result *t = &r->tw.total;
            double rows = twin_rows(r), end = twin_end(r);
            printf(",%d,%.6g,%.6g", r->twin ? 1 : 0, r->twin ? r->host_ts : r->avg_ts,
                   r->twin ? t->end_ns / 1e6 / rows : 0.0);
            for (int c = 0; c < 3; c++)
                printf(",%.4g", r->twin ? 100.0 * t->npu_busy_ns[c] / end : 0.0);
            for (int c = 0; c < 4; c++)
                printf(",%.4g", r->twin ? 100.0 * t->cpu_busy_ns[c] / end : 0.0);
            printf(",%.4g,%.4g", r->twin ? t->dram_util : 0.0, r->twin ? t->hidden_share : 0.0);
            for (int p = 0; p < ORK_TWIN_PHASE_COUNT; p++)
                printf(",%.6g", r->twin ? t->phase_ns[p] / 1e6 / rows : 0.0);
            printf("\n");
        }
    }
    if (n_bw) {
        printf("%sthreads,array_bytes,runs,read_insn", n_res ? "\n" : "");
        for (int k = 0; k < ORK_MEMBW_COUNT; k++)
            printf(",%s_gbps", ork_membw_kernel_name((enum ork_membw_kernel)k));
        printf("\n");
        for (int i = 0; i < n_bw; i++) {
            printf("%d,%zu,%d,\"%s\"", bw[i].n_threads, bw[i].array_bytes, bw[i].n_runs,
                   ork_cpu_read_insn());
            for (int k = 0; k < ORK_MEMBW_COUNT; k++)
                printf(",%.6g", bw[i].gbps[k]);
            printf("\n");
        }
    }
}

const char *ork_cli_bench_kv_name(const struct opts *o)
{
    return o->kv_type == ORK_KV_F16 ? "f16" : "f32";
}

void ork_cli_bench_print(const struct opts *o, const struct model_desc *md,
                         const struct result *res, int n_res, const struct bench_refs *rf)
{
    switch (o->fmt) {
    case FMT_MD: print_md(o, md, res, n_res, rf); break;
    case FMT_JSON: print_json(o, md, res, n_res, rf); break;
    case FMT_CSV: print_csv(o, md, res, n_res, rf); break;
    }
}
