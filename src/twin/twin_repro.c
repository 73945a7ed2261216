/* twin_repro.c -- the seed's published experiments rebuilt on the twin timeline from shapes,
 * the cost functions and the constants table alone (nothing is fitted here; docs/twin.md
 * "Reproductions" compares them with the published figures and says why they miss where they
 * do). Not here: printing (tools/twin_repro.c) or the tolerances (tests/twin/test_twin_repro.c). */
#include "twin_repro.h"

#include <ork/error.h>

#include <string.h>

/* Programs the matmul of libork is cut into at M = 1 (spec §5, docs/npu.md): at most 8192
 * output columns per program (N-slices) and, at M = 1, 8192-wide K-slices (spec §5.1) whose
 * int32 partial sums the host adds. */
#define REPRO_N_SLICE 8192
#define REPRO_K_SLICE_M1 8192
#define REPRO_CPU_MAIN 0x1u      /* the driving thread's A76 core */
#define REPRO_CPU_WORKER 0x2u    /* the persistent worker's A76 core (pinned) */

struct shape {
    uint32_t dim, n_layers, n_heads, n_kv_heads, head_dim, ffn, vocab;
};

/* Qwen2.5-7B and Qwen3-1.7B (their config.json; anchors §4 list the 7B projections). */
static const struct shape shapes[] = {
    [ORK__REPRO_QWEN25_7B] = { 3584, 28, 28, 4, 128, 18944, 152064 },
    [ORK__REPRO_QWEN3_1_7B] = { 2048, 28, 16, 8, 128, 6144, 151936 },
};

/* The 7 projections of a layer, {K, N}: Q, K, V, O, gate, up, down. */
static void layer_proj(const struct shape *s, uint64_t kn[7][2])
{
    uint64_t q = (uint64_t)s->n_heads * s->head_dim, kv = (uint64_t)s->n_kv_heads * s->head_dim;
    uint64_t t[7][2] = { { s->dim, q }, { s->dim, kv }, { s->dim, kv }, { q, s->dim },
                         { s->dim, s->ffn }, { s->dim, s->ffn }, { s->ffn, s->dim } };
    memcpy(kn, t, sizeof t);
}

static int cpu_on(struct ork_twin *tw, uint32_t mask, enum ork_twin_phase p, uint32_t flags,
                  struct ork_twin_work w, const int *deps, uint32_t nd, const char *label)
{
    struct ork_twin_op_desc d = { .res = ORK_TWIN_CPU, .core_mask = mask, .n_cores = 1,
                                  .phase = p, .flags = flags, .work = w, .label = label };
    return ork_twin_op_add(tw, &d, deps, nd);
}

static struct ork_twin_work fixed(double ns)
{
    return (struct ork_twin_work){ .fixed_ns = ns };
}

/* One M=1 int8 matmul K x N split over `cores` NPU cores: per core one op carrying its
 * programs (the first launched, the rest chained). ids[] gets one op per core; returns the
 * count or a negative code. */
static int npu_mm(struct ork_twin *tw, const struct ork_twin_consts *c, uint64_t K, uint64_t N,
                  uint32_t cores, const int *deps, uint32_t nd, int ids[ORK_TWIN_MAX_NPU])
{
    uint64_t ks = (K + REPRO_K_SLICE_M1 - 1) / REPRO_K_SLICE_M1;
    for (uint32_t i = 0; i < cores; i++) {
        uint64_t n0 = N * i / cores, n1 = N * (i + 1) / cores, nc = n1 - n0;
        uint64_t ns = (nc + REPRO_N_SLICE - 1) / REPRO_N_SLICE;
        struct ork_twin_work w = ork_twin_npu_task(c, true, false, K * nc, K * nc, nc * 4 * ks, 0);
        w.fixed_ns += (double)(ns * ks - 1) * c->npu_chain_ns;
        struct ork_twin_op_desc d = { .res = ORK_TWIN_NPU, .core_mask = 1u << i, .n_cores = 1,
                                      .phase = ORK_TWIN_PHASE_NPU_MATMUL, .work = w };
        if ((ids[i] = ork_twin_op_add(tw, &d, deps, nd)) < 0)
            return ids[i];
    }
    return (int)cores;
}

/* ---- (b) synchronous per-matmul decode ----------------------------------------------------- */

struct dec {
    struct ork_twin *tw;
    const struct ork_twin_consts *c;
    uint32_t cores, submits;
    int prev;
    int err;
};

static void dec_cpu(struct dec *d, enum ork_twin_phase p, struct ork_twin_work w)
{
    if (d->err)
        return;
    int id = cpu_on(d->tw, REPRO_CPU_MAIN, p, 0, w, d->prev >= 0 ? &d->prev : NULL,
                    d->prev >= 0 ? 1 : 0, NULL);
    if (id < 0)
        d->err = id;
    else
        d->prev = id;
}

/* host floor on the driving core, the NPU, then dequantisation (+ K-slice sums) on the CPU */
static void dec_proj(struct dec *d, uint64_t K, uint64_t N)
{
    dec_cpu(d, ORK_TWIN_PHASE_OTHER, fixed(d->c->host_submit_floor_ns));
    if (d->err)
        return;
    int ids[ORK_TWIN_MAX_NPU + 1];
    int n = npu_mm(d->tw, d->c, K, N, d->cores, &d->prev, 1, ids);
    if (n < 0) {
        d->err = n;
        return;
    }
    d->submits++;
    int id = cpu_on(d->tw, REPRO_CPU_MAIN, ORK_TWIN_PHASE_DEQUANT, 0,
                    ork_twin_cpu_dequant(d->c, N, 4), ids, (uint32_t)n, NULL);
    if (id < 0) {
        d->err = id;
        return;
    }
    d->prev = id;
    uint32_t ks = (uint32_t)((K + REPRO_K_SLICE_M1 - 1) / REPRO_K_SLICE_M1);
    if (ks > 1)
        dec_cpu(d, ORK_TWIN_PHASE_KSLICE, ork_twin_cpu_kslice_sum(d->c, N, ks));
}

static void dec_layer(struct dec *d, const struct shape *s, uint32_t n_past)
{
    const struct ork_twin_consts *c = d->c;
    uint64_t kn[7][2], q = (uint64_t)s->n_heads * s->head_dim;
    uint64_t kv = (uint64_t)s->n_kv_heads * s->head_dim;
    layer_proj(s, kn);
    dec_cpu(d, ORK_TWIN_PHASE_RMSNORM, ork_twin_cpu_rmsnorm(c, 1, s->dim));
    dec_cpu(d, ORK_TWIN_PHASE_QUANT, ork_twin_cpu_quantize(c, 1, s->dim));
    for (int p = 0; p < 3; p++)
        dec_proj(d, kn[p][0], kn[p][1]);
    dec_cpu(d, ORK_TWIN_PHASE_BIAS, ork_twin_cpu_bias(c, q + 2 * kv));   /* Qwen2.5: QKV bias */
    dec_cpu(d, ORK_TWIN_PHASE_ROPE, ork_twin_cpu_rope(c, q + kv));
    dec_cpu(d, ORK_TWIN_PHASE_KV_APPEND, ork_twin_cpu_kv_append(c, 2 * kv, 2));
    struct ork_twin_attn a = { .q_rows = 1, .pairs = n_past + 1u, .keys = n_past + 1u,
                               .n_heads = s->n_heads, .n_kv_heads = s->n_kv_heads,
                               .head_dim = s->head_dim, .kv_el_bytes = 2 };
    dec_cpu(d, ORK_TWIN_PHASE_ATTENTION, ork_twin_cpu_attention(c, &a));
    dec_cpu(d, ORK_TWIN_PHASE_QUANT, ork_twin_cpu_quantize(c, 1, q));
    dec_proj(d, kn[3][0], kn[3][1]);
    dec_cpu(d, ORK_TWIN_PHASE_RESIDUAL, ork_twin_cpu_residual(c, s->dim));
    dec_cpu(d, ORK_TWIN_PHASE_RMSNORM, ork_twin_cpu_rmsnorm(c, 1, s->dim));
    dec_cpu(d, ORK_TWIN_PHASE_QUANT, ork_twin_cpu_quantize(c, 1, s->dim));
    dec_proj(d, kn[4][0], kn[4][1]);
    dec_proj(d, kn[5][0], kn[5][1]);
    dec_cpu(d, ORK_TWIN_PHASE_SILU_MUL, ork_twin_cpu_silu_mul(c, s->ffn));
    dec_cpu(d, ORK_TWIN_PHASE_QUANT, ork_twin_cpu_quantize(c, 1, s->ffn));
    dec_proj(d, kn[6][0], kn[6][1]);
    dec_cpu(d, ORK_TWIN_PHASE_RESIDUAL, ork_twin_cpu_residual(c, s->dim));
}

int ork__twin_repro_decode_7b(const struct ork_twin_consts *c, uint32_t npu_cores,
                              uint32_t n_past, double extra_cpu_ns,
                              struct ork__twin_repro_decode *out)
{
    const struct shape *s = &shapes[ORK__REPRO_QWEN25_7B];
    if (npu_cores < 1 || npu_cores > ORK_TWIN_MAX_NPU)
        return ork_errorf(ORK_EINVAL, "twin repro: %u NPU cores", npu_cores);
    struct ork_twin *tw;
    int ret = ork_twin_create(c, &tw);
    if (ret < 0)
        return ret;
    c = ork_twin_consts_of(tw);
    struct dec d = { .tw = tw, .c = c, .cores = npu_cores, .prev = -1 };
    ork_twin_step_begin(tw);
    for (uint32_t l = 0; l < s->n_layers; l++)
        dec_layer(&d, s, n_past);
    dec_cpu(&d, ORK_TWIN_PHASE_RMSNORM, ork_twin_cpu_rmsnorm(c, 1, s->dim));
    dec_cpu(&d, ORK_TWIN_PHASE_QUANT, ork_twin_cpu_quantize(c, 1, s->dim));
    dec_proj(&d, s->dim, s->vocab);                               /* LM head on the NPU */
    dec_cpu(&d, ORK_TWIN_PHASE_SAMPLE, ork_twin_cpu_sample(c, s->vocab, 1));
    if (extra_cpu_ns > 0)
        dec_cpu(&d, ORK_TWIN_PHASE_OTHER, fixed(extra_cpu_ns));
    struct ork_twin_result r;
    if ((ret = d.err) == 0)
        ret = ork_twin_step_run(tw, &r);
    if (ret == 0) {
        uint64_t kn[7][2], wl = 0;
        layer_proj(s, kn);
        for (int p = 0; p < 7; p++)
            wl += kn[p][0] * kn[p][1];
        memset(out, 0, sizeof(*out));
        out->ms_per_token = r.end_ns / 1e6;
        out->tok_s = 1e9 / r.end_ns;
        out->npu_active_ms = r.npu_active_ns / 1e6;
        out->cpu_active_ms = r.cpu_active_ns / 1e6;
        out->submits = d.submits;
        out->floor_ms = d.submits * c->host_submit_floor_ns / 1e6;
        out->cpu_phases_ms = out->cpu_active_ms - out->floor_ms - extra_cpu_ns / 1e6;
        out->weight_bytes = (double)wl * s->n_layers + (double)s->dim * s->vocab;
    }
    ork_twin_destroy(tw);
    return ret;
}

/* ---- (a) the async-overlap probe ----------------------------------------------------------- */

#define REPRO_ASYNC_CORES 3
#define REPRO_MAX_MM 256

/* The prep before matmul i: RMSNorm + int8 quantisation of its K inputs, `reps` times. */
static struct ork_twin_work prep_work(const struct ork_twin_consts *c, uint64_t K, double reps)
{
    struct ork_twin_work w = ork_twin_work_sum(ork_twin_cpu_rmsnorm(c, 1, K),
                                               ork_twin_cpu_quantize(c, 1, K));
    w.fixed_ns *= reps;
    w.issue_ns *= reps;
    w.bytes *= reps;
    return w;
}

/* Synchronous: prep_i, then the call (host floor, 3-core NPU) on the same core, in turn.
 * reps < 0: no prep at all (the calls alone). */
static int async_sync_run(struct ork_twin *tw, const struct ork_twin_consts *c,
                          const uint64_t (*kn)[2], uint32_t n, double reps, double *end_ns)
{
    int prev[ORK_TWIN_MAX_NPU], np = 0, ret = 0;
    ork_twin_step_begin(tw);
    for (uint32_t i = 0; i < n && ret >= 0; i++) {
        int id = np;
        if (reps >= 0) {
            id = cpu_on(tw, REPRO_CPU_MAIN, ORK_TWIN_PHASE_RMSNORM, 0, prep_work(c, kn[i][0], reps),
                        prev, (uint32_t)np, "prep");
            if (id < 0)
                return id;
            prev[0] = id;
            np = 1;
        }
        id = cpu_on(tw, REPRO_CPU_MAIN, ORK_TWIN_PHASE_OTHER, 0, fixed(c->host_submit_floor_ns),
                    prev, (uint32_t)np, "host floor");
        if (id < 0)
            return id;
        ret = np = npu_mm(tw, c, kn[i][0], kn[i][1], REPRO_ASYNC_CORES, &id, 1, prev);
    }
    struct ork_twin_result r;
    if (ret >= 0 && (ret = ork_twin_step_run(tw, &r)) == 0)
        *end_ns = r.end_ns;
    return ret < 0 ? ret : 0;
}

/* Persistent worker on its own A76 core: main preps i+1 while the worker submits i; each hand
 * over wakes a sleeping thread (thread_wake_ns on the woken core, both directions). */
static int async_worker_run(struct ork_twin *tw, const struct ork_twin_consts *c,
                            const uint64_t (*kn)[2], uint32_t n, double reps, double *end_ns)
{
    struct ork_twin_work wake = ork_twin_host_wake(c), futex = ork_twin_host_futex(c);
    int prep, kick, sig = -1, mwake = -1, ret = 0;
    ork_twin_step_begin(tw);
    if ((prep = cpu_on(tw, REPRO_CPU_MAIN, ORK_TWIN_PHASE_RMSNORM, 0, prep_work(c, kn[0][0], reps),
                       NULL, 0, "prep")) < 0)
        return prep;
    if ((kick = cpu_on(tw, REPRO_CPU_MAIN, ORK_TWIN_PHASE_HANDOFF, 0, futex, &prep, 1, "kick")) < 0)
        return kick;
    for (uint32_t i = 0; i < n; i++) {
        int d2[2] = { kick, sig }, npu[ORK_TWIN_MAX_NPU];
        int ww = cpu_on(tw, REPRO_CPU_WORKER, ORK_TWIN_PHASE_WAKE, ORK_TWIN_OP_IDLE, wake, d2,
                        sig >= 0 ? 2 : 1, "worker wake");
        int fl = ww < 0 ? ww : cpu_on(tw, REPRO_CPU_WORKER, ORK_TWIN_PHASE_OTHER, 0,
                                      fixed(c->host_submit_floor_ns), &ww, 1, "host floor");
        int nn = fl < 0 ? fl : npu_mm(tw, c, kn[i][0], kn[i][1], REPRO_ASYNC_CORES, &fl, 1, npu);
        if (nn < 0)
            return nn;
        if ((sig = cpu_on(tw, REPRO_CPU_WORKER, ORK_TWIN_PHASE_HANDOFF, 0, futex, npu,
                          (uint32_t)nn, "signal")) < 0)
            return sig;
        bool more = i + 1 < n;
        if (more && (prep = cpu_on(tw, REPRO_CPU_MAIN, ORK_TWIN_PHASE_RMSNORM, 0,
                                   prep_work(c, kn[i + 1][0], reps), &kick, 1, "prep")) < 0)
            return prep;
        int d3[2] = { sig, prep };
        if ((mwake = cpu_on(tw, REPRO_CPU_MAIN, ORK_TWIN_PHASE_WAKE, ORK_TWIN_OP_IDLE, wake, d3,
                            more ? 2 : 1, "main wake")) < 0)
            return mwake;
        if (more && (kick = cpu_on(tw, REPRO_CPU_MAIN, ORK_TWIN_PHASE_HANDOFF, 0, futex, &mwake,
                                   1, "kick")) < 0)
            return kick;
    }
    struct ork_twin_result r;
    if ((ret = ork_twin_step_run(tw, &r)) == 0)
        *end_ns = r.end_ns;
    return ret;
}

int ork__twin_repro_async_probe(const struct ork_twin_consts *c, double ratio, uint32_t layers,
                                struct ork__twin_repro_async *out)
{
    const struct shape *s = &shapes[ORK__REPRO_QWEN25_7B];
    uint64_t kn[REPRO_MAX_MM][2], l7[7][2];
    uint32_t n = layers * 7;
    if (layers < 1 || n > REPRO_MAX_MM || !(ratio > 0))
        return ork_errorf(ORK_EINVAL, "twin repro: async probe of %u layers at ratio %g", layers,
                          ratio);
    layer_proj(s, l7);
    for (uint32_t i = 0; i < n; i++)
        memcpy(kn[i], l7[i % 7], sizeof kn[i]);
    struct ork_twin *tw;
    int ret = ork_twin_create(c, &tw);
    if (ret < 0)
        return ret;
    c = ork_twin_consts_of(tw);
    double calls = 0, prep1 = 0;
    for (uint32_t i = 0; i < n; i++) {
        struct ork_twin_work w = prep_work(c, kn[i][0], 1);
        prep1 += w.fixed_ns + w.issue_ns;          /* cache-resident: issue-bound, no bytes */
    }
    if ((ret = async_sync_run(tw, c, kn, n, -1, &calls)) < 0)
        goto out;
    double reps = ratio * calls / prep1;
    memset(out, 0, sizeof(*out));
    out->call_ms = calls / 1e6;
    out->prep_ms = prep1 * reps / 1e6;
    double t_sync = 0, t_async = 0;
    if ((ret = async_sync_run(tw, c, kn, n, reps, &t_sync)) < 0 ||
        (ret = async_worker_run(tw, c, kn, n, reps, &t_async)) < 0)
        goto out;
    out->sync_ms = t_sync / 1e6;
    out->async_ms = t_async / 1e6;
    out->speedup = t_sync / t_async;
    out->ceiling = (1 + ratio) / (ratio > 1 ? ratio : 1);
out:
    ork_twin_destroy(tw);
    return ret;
}

/* ---- (c) ceilings ------------------------------------------------------------------------- */

void ork__twin_repro_ceiling(const struct ork_twin_consts *c, enum ork__twin_repro_model m,
                             struct ork__twin_repro_ceiling *out)
{
    const struct shape *s = &shapes[m];
    uint64_t kn[7][2], wl = 0;
    layer_proj(s, kn);
    for (int p = 0; p < 7; p++)
        wl += kn[p][0] * kn[p][1];
    double layers = (double)wl * s->n_layers, head = (double)s->dim * s->vocab;
    double npu_bw = c->npu_bw_all < c->dram_bw_total ? c->npu_bw_all : c->dram_bw_total;
    memset(out, 0, sizeof(*out));
    out->weight_bytes = layers + head;               /* int8: one byte per weight */
    out->macs_per_token = layers;                    /* prefill: no LM head per prompt row */
    out->decode_tok_s_npu = npu_bw / out->weight_bytes;
    out->decode_tok_s_dram = c->dram_bw_total / out->weight_bytes;
    out->prefill_tok_s = c->npu_cores * c->npu_mac_int8 / out->macs_per_token;
}
