/* cmd_bench_multi.c -- the two `ork bench` tests of M > 1 decode (a measured run of both:
 * docs/bench-log/2026-mrows.md):
 *
 * --parallel LIST: N sequences decoded together (like llama-batched-bench): N sessions, each
 * step one ork_model_eval_multi of M = N rows (the weights stream once for all), one sampling
 * charged per sequence per step; aggregate tok/s = N x tokens per sequence / time, and per
 * sequence = tokens per sequence / time.
 *
 * --verify LIST: the step time of a speculative verify forward of M = k + 1 rows (one session
 * at position P = -p, every row's logits, k + 1 samplings charged) against the M = 1 decode
 * step (one row, one sampling), per k; with --draft-model FILE, the draft's own decode step on
 * its device (--device cpu --twin: the twin's A76 cores) charged k times per cycle. Throughput
 * at a mean of tau tokens accepted per cycle: plain = 1 / t(M = 1); speculative = tau / (t(M =
 * k + 1) + k t_draft), the best k with k + 1 >= tau. "Nearly free": the largest M whose step is
 * <= 1.1 x the M = 1 step.
 *
 * With the board twin (--device sim, or --twin) every time is the twin's modelled time; the
 * host's own speed is given beside it and never as the board's. */
#include "bench.h"
#include "cli.h"
#include "cmd_run.h"

#include <ork-engine/engine.h>
#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/twin.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CMD "bench"
/* "Nearly free": a verify step within 10 % of the M = 1 step (the threshold of the issue
 * this measures; a choice, not a hardware constant). */
#define NEARLY_FREE_RATIO 1.1
#define MAX_VERIFY_K 63            /* k + 1 <= 64 rows: one NPU plan (NPU_DEFAULT_MAX_M) */

/* Modelled ns of the twin since *a (updated to now), and, when ph is not NULL, each phase's
 * ns and the NPU cores' busy ns since then added to ph; 0 without a twin. */
static double twin_since(const struct ork_model *m, struct ork_model_twin_stats *a,
                         struct ork_twin_result *ph)
{
    struct ork_model_twin_stats b;
    if (ork_model_twin_stats(m, &b) < 0)
        return 0;
    double d = b.total.end_ns - a->total.end_ns;
    for (int p = 0; ph && p < ORK_TWIN_PHASE_COUNT; p++)
        ph->phase_ns[p] += b.total.phase_ns[p] - a->total.phase_ns[p];
    for (int c = 0; ph && c < ORK_TWIN_MAX_NPU; c++)
        ph->npu_busy_ns[c] += b.total.npu_busy_ns[c] - a->total.npu_busy_ns[c];
    if (ph)
        ph->end_ns += d;
    *a = b;
    return d;
}

void ork_cli_bench_npu_plans(FILE *out, const struct ork_model *m, double load_s)
{
    struct ork_npu_exec_stats st;
    if (ork_model_npu_stats(m, &st) < 0 || !st.n_prog_sizes)
        return;
    uint64_t total = 0;
    fprintf(out, "ork bench: NPU plans per size (rows: device MiB, regcmd KiB, summed over the "
            "matrices):");
    for (uint32_t i = 0; i < st.n_prog_sizes && i < 8; i++) {
        fprintf(out, " %u: %.1f, %.1f;", st.prog_rows[i], st.prog_bytes[i] / 1048576.0,
                st.prog_regcmd_bytes[i] / 1024.0);
        total += st.prog_bytes[i];
    }
    fprintf(out, " total %.1f MiB beside %.1f MiB of weights; sizes between 1 and the largest "
            "made in %.0f ms of a %.1f s load (host wall)%s\n", total / 1048576.0,
            st.resident_bytes / 1048576.0, st.prog_extra_load_ms, load_s,
            st.prog_missing ? " (some did not fit their domain)" : "");
}

static int load_model(const char *path, const struct ork_model_params *base, struct ork_model **m)
{
    struct ork_model_params mp = *base;
    mp.no_tokenizer = true;
    ork_cli_device_resolve(CMD, &mp, false);
    double t0 = ork_cli_bench_now();
    int ret = ork_model_load(path, &mp, m);
    if (ret == 0)
        ork_cli_bench_npu_plans(stderr, *m, ork_cli_bench_now() - t0);
    return ret;
}

static int make_sessions(struct ork_model *m, int n, int ctx, int batch, int threads,
                         const struct opts *o, struct ork_session **s)
{
    struct ork_session_params sp;
    ork_session_params_default(&sp);
    sp.ctx_size = ctx;
    sp.n_batch = batch;
    sp.n_threads = threads;
    sp.act_quant = !o->f32_act;
    sp.spin_us = o->spin_us;
    sp.kv_type = o->kv_type;
    for (int i = 0; i < n; i++) {
        int ret = ork_session_create(m, &sp, &s[i]);
        if (ret == 0)
            ret = ork_session_prefault(s[i], ctx);
        if (ret < 0)
            return ret;
    }
    return 0;
}

/* ---- parallel sequences ------------------------------------------------------------------ */

struct par_result {
    int np, n_gen, reps;
    double agg_ts, agg_sd;      /* aggregate tok/s (modelled with the twin, else host) */
    double host_agg_ts;
    double step_ms;             /* per step (N rows) */
    bool twin;
    struct ork_model_twin_stats tw;
};

/* One timed run: n steps of np sequences from empty caches. */
static int par_once(struct ork_model *m, struct ork_session **s, int np, int n, uint64_t *rng,
                    float *logits, double *host_ts, double *model_ns)
{
    int32_t nv = ork_model_config(m)->n_vocab, tok[MAX_LIST];
    struct ork_sampler_params sp;
    ork_sampler_params_default(&sp);
    for (int i = 0; i < np; i++)
        ork_session_reset(s[i]);
    struct ork_model_twin_stats a;
    bool twin = ork_model_twin_stats(m, &a) == 0;
    double t0 = ork_cli_bench_now();
    int ret = 0;
    for (int step = 0; step < n && ret == 0; step++) {
        for (int i = 0; i < np; i++)
            tok[i] = (int32_t)(ork_cli_bench_rng(rng) % (uint64_t)nv);
        ret = ork_model_eval_multi(s, tok, np, logits);
        for (int i = 0; ret == 0 && twin && i < np; i++)
            ret = ork_model_twin_sample(m, (uint32_t)sp.top_k);
    }
    double dt = ork_cli_bench_now() - t0;
    *host_ts = dt > 0 ? (double)np * n / dt : 0;
    *model_ns = twin ? twin_since(m, &a, NULL) : 0;
    return ret;
}

static int par_test(struct ork_model *m, const struct opts *o, int np, int n, int threads,
                    struct par_result *r)
{
    struct ork_session *s[MAX_LIST] = { 0 };
    int32_t nv = ork_model_config(m)->n_vocab;
    float *logits = ork_malloc((size_t)np * nv * sizeof(float));
    double *ts = ork_malloc((size_t)o->reps * sizeof(double));
    uint64_t rng = ORK_CLI_BENCH_SEED;
    int ret = logits && ts ? make_sessions(m, np, n, np, threads, o, s) : ORK_ENOMEM;
    memset(r, 0, sizeof(*r));
    r->np = np;
    r->n_gen = n;
    r->reps = o->reps;
    double host, model_ns, host_sum = 0;
    /* warm-up: a short run pages the weights in */
    if (ret == 0)
        ret = par_once(m, s, np, n < 4 ? n : 4, &rng, logits, &host, &model_ns);
    ork_model_twin_stats_reset(m);
    r->twin = ork_model_twin_stats(m, &r->tw) == 0;
    if (ret == 0 && o->trace && r->twin && np == o->par.v[o->par.n - 1])
        ret = ork_model_twin_trace_begin(m, o->trace, (uint32_t)(1 + np));
    for (int k = 0; k < o->reps && ret == 0; k++) {
        ret = par_once(m, s, np, n, &rng, logits, &host, &model_ns);
        if (k == 0 && o->trace && r->twin && np == o->par.v[o->par.n - 1])
            ork_model_twin_trace_end(m);
        host_sum += host;
        ts[k] = r->twin && model_ns > 0 ? (double)np * n * 1e9 / model_ns : host;
    }
    if (ret == 0) {
        ork_cli_bench_mean_sd(ts, o->reps, &r->agg_ts, &r->agg_sd);
        r->host_agg_ts = host_sum / o->reps;
        r->step_ms = r->agg_ts > 0 ? 1e3 * np / r->agg_ts : 0;
        if (r->twin)
            ork_model_twin_stats(m, &r->tw);
    }
    for (int i = 0; i < np; i++)
        ork_session_free(s[i]);
    ork_free(logits);
    ork_free(ts);
    return ret;
}

static void par_print(const struct opts *o, const struct model_desc *d, const struct par_result *r,
                      int n_res)
{
    double one = n_res && r[0].np == 1 ? r[0].agg_ts : 0;
    bool twin = n_res && r[0].twin;
    if (o->fmt == FMT_JSON) {
        printf("[\n");
        for (int i = 0; i < n_res; i++)
            printf("  {\"model\": \"%s\", \"backend\": \"%s\", \"n_parallel\": %d, "
                   "\"n_gen\": %d, \"reps\": %d, \"twin\": %s, \"agg_ts\": %.4f, "
                   "\"agg_sd\": %.4f, \"seq_ts\": %.4f, \"step_ms\": %.4f, "
                   "\"host_agg_ts\": %.4f, \"scaling\": %.4f}%s\n", d->name, d->backend,
                   r[i].np, r[i].n_gen, r[i].reps, r[i].twin ? "true" : "false", r[i].agg_ts,
                   r[i].agg_sd, r[i].agg_ts / r[i].np, r[i].step_ms, r[i].host_agg_ts,
                   one > 0 ? r[i].agg_ts / one : 0, i + 1 < n_res ? "," : "");
        printf("]\n");
        return;
    }
    if (o->fmt == FMT_CSV) {
        printf("model,backend,n_parallel,n_gen,reps,twin,agg_ts,agg_sd,seq_ts,step_ms,"
               "host_agg_ts,scaling\n");
        for (int i = 0; i < n_res; i++)
            printf("\"%s\",%s,%d,%d,%d,%d,%.4f,%.4f,%.4f,%.4f,%.4f,%.4f\n", d->name,
                   d->backend, r[i].np, r[i].n_gen, r[i].reps, r[i].twin, r[i].agg_ts,
                   r[i].agg_sd, r[i].agg_ts / r[i].np, r[i].step_ms, r[i].host_agg_ts,
                   one > 0 ? r[i].agg_ts / one : 0);
        return;
    }
    printf("| model | backend | parallel | tokens/seq | aggregate t/s | per-seq t/s | ms/step | "
           "x 1 seq | NPU busy %% | host aggregate t/s |\n"
           "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |\n");
    for (int i = 0; i < n_res; i++) {
        const struct ork_twin_result *t = &r[i].tw.total;
        printf("| %s | %s | %d | %d | %.2f ± %.2f | %.2f | %.3f | %.2f | ", d->name, d->backend,
               r[i].np, r[i].n_gen, r[i].agg_ts, r[i].agg_sd, r[i].agg_ts / r[i].np,
               r[i].step_ms, one > 0 ? r[i].agg_ts / one : 0);
        for (uint32_t c = 0; r[i].twin && c < r[i].tw.npu_cores; c++)
            printf("%s%.0f", c ? "/" : "",
                   100.0 * t->npu_busy_ns[c] / (t->end_ns > 0 ? t->end_ns : 1));
        printf(" | %.2f |\n", r[i].host_agg_ts);
    }
    if (twin)
        printf("\nModelled on the board twin (docs/twin.md): aggregate and per-sequence t/s "
               "are the RK3588's modelled time (one sampling charged per sequence per step); "
               "host t/s is this machine's speed.\n");
    else
        printf("\nThis machine's wall time (no board twin: --device sim, or --twin, models "
               "the RK3588).\n");
}

int ork_cli_bench_parallel(const struct opts *o, const char *path, int threads)
{
    struct ork_model *m;
    int ret = load_model(path, &o->mp, &m);
    if (ret < 0)
        return ret;
    struct model_desc d;
    ork_cli_bench_describe(m, &d);
    struct par_result res[MAX_LIST];
    int n_res = 0, n = (int)o->n.v[0];
    for (int i = 0; i < o->par.n && ret == 0; i++) {
        ret = par_test(m, o, (int)o->par.v[i], n, threads, &res[n_res]);
        if (ret == 0) {
            const struct par_result *r = &res[n_res++];
            fprintf(stderr, "ork bench: parallel %d x tg%d: %s %.2f t/s aggregate, %.2f per "
                    "sequence; host %.2f t/s\n", r->np, n, r->twin ? "twin (modelled)" : "host",
                    r->agg_ts, r->agg_ts / r->np, r->host_agg_ts);
        }
    }
    if (ret == 0)
        par_print(o, &d, res, n_res);
    ork_model_free(m);
    return ret;
}

/* ---- speculative verify ------------------------------------------------------------------ */

/* Modelled (or host) ns of one forward of rows tokens at position pos, every row's logits, and
 * `rows` samplings of top_k: the mean over reps. */
static int step_ns(struct ork_model *m, struct ork_session *s, int pos, int rows, uint32_t top_k,
                   const struct opts *o, uint64_t *rng, int32_t *tok, float *logits, double *ns,
                   struct ork_twin_result *ph)
{
    int32_t nv = ork_model_config(m)->n_vocab;
    struct ork_model_twin_stats a;
    bool twin = ork_model_twin_stats(m, &a) == 0;
    double sum = 0;
    for (int k = 0; k < o->reps; k++) {
        for (int i = 0; i < rows; i++)
            tok[i] = (int32_t)(ork_cli_bench_rng(rng) % (uint64_t)nv);
        int ret = ork_session_truncate(s, pos);
        twin_since(m, &a, NULL);
        double t0 = ork_cli_bench_now();
        if (ret == 0)
            ret = ork_model_eval(s, tok, rows, pos, logits, ORK_EVAL_ALL_LOGITS);
        for (int i = 0; ret == 0 && twin && i < rows; i++)
            ret = ork_model_twin_sample(m, top_k);
        if (ret < 0)
            return ret;
        sum += twin ? twin_since(m, &a, k == 0 ? ph : NULL) : (ork_cli_bench_now() - t0) * 1e9;
    }
    *ns = sum / o->reps;
    return 0;
}

/* A session at position pos (random tokens prefilled) able to take max_rows more. */
static int verify_session(struct ork_model *m, const struct opts *o, int pos, int max_rows,
                          int threads, uint64_t *rng, int32_t *tok, struct ork_session **s)
{
    int ret = make_sessions(m, 1, pos + max_rows, pos > max_rows ? pos : max_rows, threads, o, s);
    int32_t nv = ork_model_config(m)->n_vocab;
    for (int i = 0; i < pos; i++)
        tok[i] = (int32_t)(ork_cli_bench_rng(rng) % (uint64_t)nv);
    if (ret == 0 && pos > 0)
        ret = ork_model_eval(*s, tok, pos, 0, NULL, 0);
    return ret;
}

/* The draft's decode step (one row, greedy) at position pos on its own device. */
static int draft_step_ns(const struct opts *o, int pos, int threads, double *ns, char *name,
                         size_t cap)
{
    struct ork_model *d;
    int ret = load_model(o->draft, &o->draft_mp, &d);
    if (ret < 0)
        return ret;
    struct model_desc dd;
    ork_cli_bench_describe(d, &dd);
    snprintf(name, cap, "%s (%s%s)", dd.name, dd.backend,
             ork_model_twin_stats(d, &(struct ork_model_twin_stats){ 0 }) == 0 ? ", twin" : "");
    int32_t *tok = ork_malloc((size_t)(pos + 1) * sizeof(int32_t));
    float *logits = ork_malloc((size_t)ork_model_config(d)->n_vocab * sizeof(float));
    struct ork_session *s = NULL;
    uint64_t rng = ORK_CLI_BENCH_SEED ^ 1;
    ret = tok && logits ? verify_session(d, o, pos, 1, threads, &rng, tok, &s) : ORK_ENOMEM;
    if (ret == 0)
        ret = step_ns(d, s, pos, 1, 1, o, &rng, tok, logits, ns, NULL);
    ork_session_free(s);
    ork_free(tok);
    ork_free(logits);
    ork_model_free(d);
    return ret;
}

struct verify_out {
    int pos, n_k;
    int k[MAX_LIST];
    double t_ns[MAX_LIST];      /* verify step of M = k + 1 */
    double t1_ns, draft_ns;
    int nearly_free_m;
    bool twin;
    char draft_name[160];
    struct ork_twin_result ph1, phk;    /* the twin's phases of the M = 1 and largest steps */
};

/* Best speculative throughput at tau over the measured k with k + 1 >= tau: tok/s and its k
 * (0: none reachable). */
static double spec_best(const struct verify_out *v, double tau, int *best_k)
{
    double best = 0;
    *best_k = 0;
    for (int i = 0; i < v->n_k; i++) {
        if (v->k[i] + 1 < tau)
            continue;
        double ts = tau * 1e9 / (v->t_ns[i] + v->k[i] * v->draft_ns);
        if (ts > best) {
            best = ts;
            *best_k = v->k[i];
        }
    }
    return best;
}

static void verify_print(const struct opts *o, const struct model_desc *d,
                         const struct verify_out *v)
{
    double plain = 1e9 / v->t1_ns;
    const char *unit = v->twin ? "modelled" : "host";
    if (o->fmt == FMT_JSON || o->fmt == FMT_CSV) {
        bool js = o->fmt == FMT_JSON;
        if (js)
            printf("{\"model\": \"%s\", \"backend\": \"%s\", \"twin\": %s, \"pos\": %d, "
                   "\"decode_ms\": %.4f, \"draft\": \"%s\", \"draft_ms\": %.4f, "
                   "\"nearly_free_m\": %d, \"plain_ts\": %.4f,\n \"verify\": [", d->name,
                   d->backend, v->twin ? "true" : "false", v->pos, v->t1_ns / 1e6,
                   o->draft ? v->draft_name : "", v->draft_ns / 1e6, v->nearly_free_m, plain);
        else
            printf("kind,model,backend,twin,pos,k,m,ms,ratio,tau,ts,speedup\n");
        for (int i = 0; i < v->n_k; i++) {
            if (js)
                printf("%s{\"k\": %d, \"m\": %d, \"ms\": %.4f, \"ratio\": %.4f}", i ? ", " : "",
                       v->k[i], v->k[i] + 1, v->t_ns[i] / 1e6, v->t_ns[i] / v->t1_ns);
            else
                printf("verify,\"%s\",%s,%d,%d,%d,%d,%.4f,%.4f,,,\n", d->name, d->backend,
                       v->twin, v->pos, v->k[i], v->k[i] + 1, v->t_ns[i] / 1e6,
                       v->t_ns[i] / v->t1_ns);
        }
        if (js)
            printf("],\n \"speculative\": [");
        for (int i = 0; i < o->n_tau; i++) {
            int bk;
            double ts = spec_best(v, o->tau[i], &bk);
            if (js)
                printf("%s{\"tau\": %.3f, \"k\": %d, \"ts\": %.4f, \"speedup\": %.4f}",
                       i ? ", " : "", o->tau[i], bk, ts, ts / plain);
            else
                printf("spec,\"%s\",%s,%d,%d,%d,%d,,,%.3f,%.4f,%.4f\n", d->name, d->backend,
                       v->twin, v->pos, bk, bk + 1, o->tau[i], ts, ts / plain);
        }
        if (js)
            printf("]}\n");
        return;
    }
    printf("| model | backend | k | verify M | verify ms (%s) | x M = 1 | + k drafts ms |",
           unit);
    for (int j = 0; j < o->n_tau; j++)
        printf(" t/s at tau %.2g |", o->tau[j]);
    printf("\n| --- | --- | ---: | ---: | ---: | ---: | ---: |");
    for (int j = 0; j < o->n_tau; j++)
        printf(" ---: |");
    printf("\n| %s | %s | 0 | 1 | %.3f | 1.00 | - |", d->name, d->backend, v->t1_ns / 1e6);
    for (int j = 0; j < o->n_tau; j++)
        printf(" %.2f (plain) |", plain);
    printf("\n");
    for (int i = 0; i < v->n_k; i++) {
        double cyc = v->t_ns[i] + v->k[i] * v->draft_ns;
        printf("| %s | %s | %d | %d | %.3f | %.2f | %.3f |", d->name, d->backend, v->k[i],
               v->k[i] + 1, v->t_ns[i] / 1e6, v->t_ns[i] / v->t1_ns, cyc / 1e6);
        for (int j = 0; j < o->n_tau; j++) {
            if (v->k[i] + 1 < o->tau[j])
                printf(" - |");
            else
                printf(" %.2f |", o->tau[j] * 1e9 / cyc);
        }
        printf("\n");
    }
    printf("\n| model | tau | plain t/s | speculative t/s | best k | x plain |\n"
           "| --- | ---: | ---: | ---: | ---: | ---: |\n");
    for (int i = 0; i < o->n_tau; i++) {
        int bk;
        double ts = spec_best(v, o->tau[i], &bk);
        printf("| %s | %.2f | %.2f | %.2f | %d | %.2f |\n", d->name, o->tau[i], plain, ts, bk,
               ts / plain);
    }
    if (v->twin && v->n_k) {
        int kk = v->k[v->n_k - 1];
        for (int i = 0; i < v->n_k; i++)
            kk = v->k[i] > kk ? v->k[i] : kk;
        printf("\n| phase (modelled ms, wall on the model clock) | M = 1 | M = %d | growth per "
               "extra row |\n| --- | ---: | ---: | ---: |\n", kk + 1);
        for (int p = 0; p < ORK_TWIN_PHASE_COUNT; p++)
            if (v->ph1.phase_ns[p] > 0 || v->phk.phase_ns[p] > 0)
                printf("| %s | %.3f | %.3f | %.4f |\n",
                       ork_twin_phase_name((enum ork_twin_phase)p), v->ph1.phase_ns[p] / 1e6,
                       v->phk.phase_ns[p] / 1e6,
                       (v->phk.phase_ns[p] - v->ph1.phase_ns[p]) / 1e6 / kk);
        printf("| NPU core 0 busy | %.3f | %.3f | %.4f |\n| step | %.3f | %.3f | %.4f |\n",
               v->ph1.npu_busy_ns[0] / 1e6, v->phk.npu_busy_ns[0] / 1e6,
               (v->phk.npu_busy_ns[0] - v->ph1.npu_busy_ns[0]) / 1e6 / kk, v->ph1.end_ns / 1e6,
               v->phk.end_ns / 1e6, (v->phk.end_ns - v->ph1.end_ns) / 1e6 / kk);
    }
    printf("\nPosition %d. Verify stays nearly free (step <= %.1fx the M = 1 step) up to M = %d. "
           "Draft: %s, %.3f ms per step. speculative t/s = tau / (verify(M = k + 1) + k x "
           "draft step), the best measured k with k + 1 >= tau; plain = 1 / decode step.%s\n",
           v->pos, NEARLY_FREE_RATIO, v->nearly_free_m,
           o->draft ? v->draft_name : "none (not charged)", v->draft_ns / 1e6,
           v->twin ? " Times are the board twin's (modelled, docs/twin.md), one sampling "
                     "charged per row." : " Times are this host's wall time.");
}

int ork_cli_bench_verify(const struct opts *o, const char *path, int threads)
{
    struct verify_out v = { .pos = (int)o->p.v[0] };
    int maxk = 0;
    for (int i = 0; i < o->verify.n; i++)
        maxk = o->verify.v[i] > maxk ? (int)o->verify.v[i] : maxk;
    int ret = 0;
    if (o->draft && (ret = draft_step_ns(o, v.pos, threads, &v.draft_ns, v.draft_name,
                                         sizeof v.draft_name)) < 0)
        return ret;
    struct ork_model *m;
    if ((ret = load_model(path, &o->mp, &m)) < 0)
        return ret;
    struct model_desc d;
    ork_cli_bench_describe(m, &d);
    int32_t nv = ork_model_config(m)->n_vocab;
    int32_t *tok = ork_malloc((size_t)(v.pos + maxk + 1) * sizeof(int32_t));
    float *logits = ork_malloc((size_t)(maxk + 1) * nv * sizeof(float));
    struct ork_session *s = NULL;
    uint64_t rng = ORK_CLI_BENCH_SEED;
    struct ork_sampler_params sp;
    ork_sampler_params_default(&sp);
    uint32_t top_k = (uint32_t)sp.top_k;
    ret = tok && logits ? verify_session(m, o, v.pos, maxk + 1, threads, &rng, tok, &s) : ORK_ENOMEM;
    double warm;
    if (ret == 0)       /* warm-up: pages every weight in */
        ret = step_ns(m, s, v.pos, 1, top_k, o, &rng, tok, logits, &warm, NULL);
    struct ork_model_twin_stats tw;
    v.twin = ork_model_twin_stats(m, &tw) == 0;
    if (ret == 0)
        ret = step_ns(m, s, v.pos, 1, top_k, o, &rng, tok, logits, &v.t1_ns, &v.ph1);
    v.nearly_free_m = 1;
    bool free_run = true;
    for (int i = 0; i < o->verify.n && ret == 0; i++) {
        v.k[v.n_k] = (int)o->verify.v[i];
        ret = step_ns(m, s, v.pos, v.k[v.n_k] + 1, top_k, o, &rng, tok, logits, &v.t_ns[v.n_k],
                      v.k[v.n_k] == maxk ? &v.phk : NULL);
        if (ret < 0)
            break;
        fprintf(stderr, "ork bench: verify k=%d (M=%d): %.3f ms, %.2fx the M=1 step (%s)\n",
                v.k[v.n_k], v.k[v.n_k] + 1, v.t_ns[v.n_k] / 1e6, v.t_ns[v.n_k] / v.t1_ns,
                v.twin ? "twin, modelled" : "host");
        free_run = free_run && v.t_ns[v.n_k] <= NEARLY_FREE_RATIO * v.t1_ns;
        if (free_run)
            v.nearly_free_m = v.k[v.n_k] + 1;
        v.n_k++;
    }
    /* --trace: the M = 1 step and the largest verify step, back to back */
    if (ret == 0 && o->trace && v.twin) {
        struct opts one = *o;
        one.reps = 1;
        double t;
        ret = ork_model_twin_trace_begin(m, o->trace, (uint32_t)(maxk + 4));
        if (ret == 0)
            ret = step_ns(m, s, v.pos, 1, top_k, &one, &rng, tok, logits, &t, NULL);
        if (ret == 0)
            ret = step_ns(m, s, v.pos, maxk + 1, top_k, &one, &rng, tok, logits, &t, NULL);
        ork_model_twin_trace_end(m);
    }
    if (ret == 0)
        verify_print(o, &d, &v);
    ork_session_free(s);
    ork_free(tok);
    ork_free(logits);
    ork_model_free(m);
    return ret;
}

bool ork_cli_bench_parse_tau(const char *s, struct opts *o)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    o->n_tau = 0;
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *end;
        double v = strtod(t, &end);
        if (*end || !(v >= 1.0 && v <= MAX_VERIFY_K + 1) || o->n_tau == MAX_LIST) {
            fprintf(stderr, "ork %s: invalid value '%s' for --tau: tokens per cycle, 1..%d, "
                    "at most %d values\n", CMD, t, MAX_VERIFY_K + 1, MAX_LIST);
            return false;
        }
        o->tau[o->n_tau++] = v;
    }
    if (!o->n_tau) {
        fprintf(stderr, "ork %s: --tau needs a value\n", CMD);
        return false;
    }
    return true;
}
