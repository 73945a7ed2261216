/* twin_rec.c -- recording forward batches on the board twin (ork/twin.h; docs/twin.md "In the
 * engine"): one twin step per batch, the ops added in program order as forward.c and the NPU
 * executor (npu/run.c) run them, each depending on what the code really waits on.
 *
 * The caller's thread is a chain: every caller op depends on the caller's previous op. CPU
 * phases the engine spreads over its pool (matmuls, attention) take the twin's cpu_cores A76
 * cores, the others one core: never the host's thread count, so the modelled numbers are the
 * same at any -t. An NPU submit is host ops on the submitting thread (the copy of A into the
 * device buffer, MEM_SYNC to the device, the SUBMIT ioctl; on libork's async worker also the
 * caller's signal and the worker's wake), one NPU op per core of the plan (its weight bytes,
 * MACs and output bytes; the first program pays the launch, the others a chain) depending on
 * the SUBMIT, then the wait, MEM_SYNC from the device and the gather or K-slice sums (on the
 * worker when asynchronous, the caller then waits on a futex for it).
 *
 * The host computes every value exactly as without the twin; this file only counts. Nothing is
 * allocated per batch once the twin's arena has grown to the largest batch. Not thread-safe by
 * itself: a batch holds the recorder's lock from _begin to _end. */
#include "model_priv.h"

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/npu.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define TWIN_SLOTS 2                /* NPU runs in flight at once (the prefill double buffer) */

/* One submitted NPU run, until its wait is recorded. */
struct twin_slot {
    bool async, used;
    bool percore;                   /* per-core form: done[0] core 0's NPU op (the submitter's),
                                     * done[1..] the per-core workers' completion signals */
    int done[ORK_TWIN_MAX_NPU];     /* sync: its NPU ops; async: the worker's completion op */
    uint32_t n_done;
    bool spin_done;                 /* per-core with spinning workers: done[1..] are the NPU
                                     * ops, the workers' signals are added by the wait */
    bool async_spin;                /* async with a polling worker: done[0] is its gather, its
                                     * signal is added by the caller's wait */
    uint64_t c_bytes, c_bo_bytes;   /* C rows gathered (m * n * 4); the C buffer synced */
    uint64_t c_elems;
    uint32_t kslices;
    bool w4a8;                      /* int16 partials rebuilt into int32 (n_cols columns) */
    uint64_t n_cols;
};

struct ork__twin_rec {
    struct ork_twin *tw;
    const struct ork_twin_consts *c;
    pthread_mutex_t lock;
    uint32_t flags;                 /* ORK_TWIN_REC_* */
    int last;                       /* the caller's last op (-1: none yet this step) */
    int worker_last;                /* the async worker's last op */
    int last_dev;                   /* device (IOMMU domain) of the last submit */
    int err;                        /* first recording error of the step (sticky) */
    struct twin_slot slot[TWIN_SLOTS];
    /* libork's per-core workers 1..npu_cores-1 between runs (docs/twin.md "Spinning workers"):
     * spin_ns their poll before sleeping (0: they sleep at once), wspin[k] worker k's spin op
     * of this step (-1: asleep), wwin[k] its window, wcarry[k] the poll left at the end of the
     * last step (it goes on into this one) */
    double spin_ns;
    int wspin[ORK_TWIN_MAX_NPU];
    double wwin[ORK_TWIN_MAX_NPU], wcarry[ORK_TWIN_MAX_NPU];
    struct ork_model_twin_stats st;
    FILE *trace;
    char trace_path[256];
    uint32_t trace_left;
    double trace_t;                 /* model clock at the start of the next traced step */
};

enum ork_twin_wtype ork__twin_wtype(uint32_t type)
{
    switch (type) {
    case ORK_TYPE_F32: return ORK_TWIN_W_F32;
    case ORK_TYPE_Q8_0: return ORK_TWIN_W_Q8_0;
    case ORK_TYPE_Q4_0: return ORK_TWIN_W_Q4_0;
    case ORK_TYPE_Q4_K: return ORK_TWIN_W_Q4_K;
    case ORK_TYPE_Q6_K: return ORK_TWIN_W_Q6_K;
    default: return ORK_TWIN_W_F16;     /* F16, BF16: two bytes a weight, converted to f32 */
    }
}

int ork__twin_rec_create(const struct ork_model_params *p, struct ork__twin_rec **out)
{
    *out = NULL;
    bool sim = p->device && !strcmp(p->device, "sim");
    if (!sim && !p->twin)
        return 0;
    struct ork_twin_consts c;
    ork_twin_consts_default(&c);
    int ret;
    if (p->twin_calibration && (ret = ork_twin_calib_load(p->twin_calibration, &c)) < 0) {
        char why[256];
        snprintf(why, sizeof why, "%s", ork_error_message());
        return ork_errorf(ret, "twin calibration '%s': %s", p->twin_calibration, why);
    }
    if (p->sim_dcomp_gbps > 0)  /* --sim-dcomp-gbps: the decompressor's rate, for sweeps */
        c.npu_dcomp_gbps = p->sim_dcomp_gbps;
    struct ork__twin_rec *r = ork_calloc(1, sizeof(*r));
    if (!r)
        return ORK_ENOMEM;
    if ((ret = ork_twin_create(&c, &r->tw)) < 0) {
        ork_free(r);
        return ret;
    }
    r->c = ork_twin_consts_of(r->tw);
    r->flags = p->twin_flags;
    /* the engine's workers' spin (placement.c passes the same to ork_npu_opts) */
    uint32_t spin_us = p->npu_spin_us < 0 ? 0 : p->npu_spin_us ? (uint32_t)p->npu_spin_us
                                                               : ORK_NPU_WORKER_SPIN_US_DEFAULT;
    r->spin_ns = sim ? spin_us * 1e3 : 0;
    r->st.cpu_cores = (uint32_t)r->c->cpu_cores;
    r->st.npu_cores = (uint32_t)r->c->npu_cores;
    pthread_mutex_init(&r->lock, NULL);
    *out = r;
    return 0;
}

static void trace_close(struct ork__twin_rec *r)
{
    if (!r->trace)
        return;
    ork_twin_trace_close(r->trace);
    fclose(r->trace);
    r->trace = NULL;
}

void ork__twin_rec_destroy(struct ork__twin_rec *r)
{
    if (!r)
        return;
    trace_close(r);
    ork_twin_destroy(r->tw);
    pthread_mutex_destroy(&r->lock);
    ork_free(r);
}

const struct ork_twin_consts *ork__twin_consts(const struct ork__twin_rec *r)
{
    return r->c;
}

uint32_t ork__twin_cores(const struct ork__twin_rec *r, bool pool)
{
    return pool ? (uint32_t)r->c->cpu_cores : 1;
}

static int spin_op(struct ork__twin_rec *r, int dep, double window_ns, const char *label);

void ork__twin_begin(struct ork__twin_rec *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->lock);
    ork_twin_step_begin(r->tw);
    r->last = r->worker_last = -1;
    r->last_dev = -1;
    r->err = 0;
    memset(r->slot, 0, sizeof r->slot);
    for (uint32_t k = 0; k < ORK_TWIN_MAX_NPU; k++) {
        r->wspin[k] = -1;
        if (r->wcarry[k] > 0)
            r->wspin[k] = spin_op(r, -1, r->wcarry[k], k ? "per-core worker polls" : "async worker polls");
        r->wwin[k] = r->wcarry[k];
        r->wcarry[k] = 0;
    }
}

/* Add an op after deps (negative entries skipped); the id, or -1 after an error (sticky). */
static int add(struct ork__twin_rec *r, const struct ork_twin_op_desc *d, const int *deps,
               uint32_t n)
{
    if (r->err)
        return -1;
    int dd[ORK_TWIN_MAX_NPU + 2];
    uint32_t k = 0;
    for (uint32_t i = 0; i < n && k < ORK_TWIN_MAX_NPU + 2; i++)
        if (deps[i] >= 0)
            dd[k++] = deps[i];
    int id = ork_twin_op_add(r->tw, d, dd, k);
    if (id < 0) {
        r->err = id;
        return -1;
    }
    return id;
}

/* A spinning thread's poll after dep (< 0: none), at most window_ns; the id. */
static int spin_op(struct ork__twin_rec *r, int dep, double window_ns, const char *label)
{
    struct ork_twin_op_desc d = { .res = ORK_TWIN_CPU, .n_cores = 1,
                                  .phase = ORK_TWIN_PHASE_SPIN, .flags = ORK_TWIN_OP_SPIN,
                                  .work = { .fixed_ns = window_ns }, .label = label };
    return add(r, &d, &dep, 1);
}

/* One side of a hand-off with a thread that may be polling (spin op sp; < 0: it sleeps): the
 * hot work (a line) while it polls, else the cold one (a futex call, or a wake-up with
 * ORK_TWIN_OP_IDLE); `release` ends the poll and runs on its core. One CPU core; the id. */
struct handoff_side {
    enum ork_twin_phase hot_phase, cold_phase;
    struct ork_twin_work hot, cold;
    uint32_t cold_flags;
};
static int handoff_op(struct ork__twin_rec *r, int sp, bool release, struct handoff_side h,
                      const int *deps, uint32_t nd, const char *label)
{
    struct ork_twin_op_desc d = { .res = ORK_TWIN_CPU, .n_cores = 1, .phase = h.cold_phase,
                                  .flags = h.cold_flags, .work = h.cold, .label = label };
    if (sp >= 0)
        d = (struct ork_twin_op_desc){ .res = ORK_TWIN_CPU, .n_cores = 1, .phase = h.hot_phase,
                                       .flags = release ? ORK_TWIN_OP_RELEASE : 0,
                                       .work = h.hot, .label = label,
                                       .spin = { .op = (uint32_t)sp + 1, .cold = h.cold,
                                                 .cold_flags = h.cold_flags,
                                                 .cold_phase = h.cold_phase } };
    return add(r, &d, deps, nd);
}

/* The poster's side of a hand-off: a line, or the futex call that wakes a sleeper. */
static struct handoff_side post_side(const struct ork_twin_consts *c)
{
    return (struct handoff_side){ .hot_phase = ORK_TWIN_PHASE_HANDOFF,
                               .cold_phase = ORK_TWIN_PHASE_WAKE,
                               .hot = { .fixed_ns = c->cpu_line_transfer_ns },
                               .cold = ork_twin_host_futex(c) };
}

/* The receiver's side: a spinning hand-off (two lines), or the sleeper's wake-up (IDLE). */
static struct handoff_side wake_side(const struct ork_twin_consts *c)
{
    return (struct handoff_side){ .hot_phase = ORK_TWIN_PHASE_HANDOFF,
                               .cold_phase = ORK_TWIN_PHASE_WAKE,
                               .hot = ork_twin_host_handoff(c), .cold = ork_twin_host_wake(c),
                               .cold_flags = ORK_TWIN_OP_IDLE };
}

/* A CPU op on `cores` cores after dep; the id. */
static int cpu_after(struct ork__twin_rec *r, int dep, enum ork_twin_phase ph, uint32_t cores,
                     struct ork_twin_work w, const char *label)
{
    struct ork_twin_op_desc d = { .res = ORK_TWIN_CPU, .n_cores = cores, .phase = ph, .work = w,
                                  .label = label };
    return add(r, &d, &dep, 1);
}

void ork__twin_cpu(struct ork__twin_rec *r, enum ork_twin_phase ph, bool pool,
                   struct ork_twin_work w, const char *label)
{
    int id = cpu_after(r, r->last, ph, ork__twin_cores(r, pool), w, label);
    if (id >= 0)
        r->last = id;
}

/* ---- NPU submits ------------------------------------------------------------------------- */

/* The submitting thread's op after *chain (caller or worker). */
static void host_op(struct ork__twin_rec *r, int *chain, enum ork_twin_phase ph,
                    struct ork_twin_work w, const char *label)
{
    int id = cpu_after(r, *chain, ph, 1, w, label);
    if (id >= 0)
        *chain = id;
}

/* The submitter's wait for a run: libork submits NONBLOCK and polls the run's doorbell (spec
 * §8.6; src/libork/matmul.c, device.c: rknpu), one line read after the device wrote it; in the
 * per-core form (a multi-core plan, spec §9: libork's persistent per-core workers,
 * src/libork/sched.c) it polls its own core's and then sleeps on the workers' condition
 * variable until the last one signals, a wake-up on its core. The floor mode charges nothing
 * here (the open runtime's floor holds its host work). Returns the op that ends the wait,
 * after chain and sl's ops. */
static int wait_spinning(struct ork__twin_rec *r, int bell, struct twin_slot *sl,
                         const char *label);

static int wait_ops(struct ork__twin_rec *r, int chain, struct twin_slot *sl, bool floor,
                    const char *label)
{
    const struct ork_twin_consts *c = r->c;
    int deps[ORK_TWIN_MAX_NPU + 1];
    uint32_t nd = 0;
    deps[nd++] = chain;
    struct ork_twin_work poll = { .fixed_ns = c->cpu_line_transfer_ns };
    if (!sl->percore || floor) {
        for (uint32_t k = 0; k < sl->n_done; k++)
            deps[nd++] = sl->done[k];
        struct ork_twin_op_desc d = { .res = ORK_TWIN_CPU, .n_cores = 1,
                                      .phase = ORK_TWIN_PHASE_IOCTL,
                                      .work = floor ? (struct ork_twin_work){ 0 } : poll,
                                      .label = label };
        return add(r, &d, deps, nd);
    }
    deps[nd++] = sl->done[0];
    struct ork_twin_op_desc d = { .res = ORK_TWIN_CPU, .n_cores = 1,
                                  .phase = ORK_TWIN_PHASE_IOCTL, .work = poll,
                                  .label = "doorbell (core 0)" };
    int id = add(r, &d, deps, nd);
    if (sl->spin_done)
        return wait_spinning(r, id, sl, label);
    nd = 0;
    deps[nd++] = id;
    for (uint32_t k = 1; k < sl->n_done; k++)
        deps[nd++] = sl->done[k];
    struct ork_twin_op_desc w = { .res = ORK_TWIN_CPU, .n_cores = 1,
                                  .phase = ORK_TWIN_PHASE_WAKE, .flags = ORK_TWIN_OP_IDLE,
                                  .work = ork_twin_host_wake(c), .label = label };
    return add(r, &w, deps, nd);
}

/* wait_ops with spinning workers, after the submitter's doorbell op `bell`: the submitter polls
 * the run's pending count for up to spin_ns (a busy core); each worker, when its core is done,
 * decrements it (one line; a futex wake too if the submitter went to sleep) and polls for its
 * next run; the submitter sees the last decrement (one line) or, past its poll, sleeps and is
 * woken (thread_wake_ns). */
static int wait_spinning(struct ork__twin_rec *r, int bell, struct twin_slot *sl,
                         const char *label)
{
    const struct ork_twin_consts *c = r->c;
    int sp = spin_op(r, bell, r->spin_ns, "submitter polls the workers");
    int deps[ORK_TWIN_MAX_NPU + 1];
    uint32_t nd = 0;
    deps[nd++] = bell;
    for (uint32_t k = 1; k < sl->n_done; k++) {
        int id = handoff_op(r, sp, false, post_side(c), &sl->done[k], 1, "per-core worker done");
        deps[nd++] = id;
        if (k < ORK_TWIN_MAX_NPU) {
            r->wspin[k] = spin_op(r, id, r->spin_ns, "per-core worker polls");
            r->wwin[k] = r->spin_ns;
        }
    }
    sl->spin_done = false;
    struct handoff_side last = wake_side(c);
    last.hot.fixed_ns = c->cpu_line_transfer_ns;        /* it reads the count's line */
    return handoff_op(r, sp, true, last, deps, nd, label);
}

/* What one run of a plan moves, from its info (ork_npu_matmul_get_info) and its rows. */
struct run_shape {
    uint32_t cores, tasks_per_core, mtiles;
    uint64_t a_bytes, a_bo_bytes, c_bytes, c_bo_bytes;
    uint64_t w_core, macs_core, out_core;
    uint64_t dcomp_core;        /* DCOMP weights: int8 bytes a core's decompressor outputs */
    uint64_t hw_rows;           /* physical rows the NPU computes (W4A8: 2 a token) */
};

/* W4A8 (ork_npu_matmul_info.w4a8; npu-weight-decompression.md §2): each token is two
 * physical int4 rows, the partials are int16. */
#define W4A8_ROWS_PER_TOKEN 2u
#define W4A8_PARTIAL_BYTES 2u       /* int16 */
#define I8_RESULT_BYTES 4u          /* int32 */

static void run_shape(const struct ork_npu_matmul_info *in, uint32_t m, struct run_shape *s)
{
    uint32_t cores = in->n_cores ? in->n_cores : 1;
    uint32_t mt = in->m_tile ? in->m_tile : 1;
    uint32_t plan_mtiles = (in->m + mt - 1) / mt, run_mtiles = (m + mt - 1) / mt;
    uint32_t tasks = in->n_tasks ? in->n_tasks : 1;
    if (plan_mtiles > 1)        /* a run of fewer rows than the plan runs fewer M-tiles */
        tasks = (uint32_t)(((uint64_t)tasks * run_mtiles + plan_mtiles - 1) / plan_mtiles);
    s->cores = cores;
    s->tasks_per_core = tasks / cores ? tasks / cores : 1;
    s->mtiles = run_mtiles ? run_mtiles : 1;
    uint64_t kp = in->k_padded, np = in->n_padded, ks = in->n_kslices ? in->n_kslices : 1;
    s->a_bytes = (uint64_t)m * in->k;                 /* int8 rows copied in */
    s->a_bo_bytes = (uint64_t)in->m * kp;             /* the A buffer synced */
    s->c_bytes = (uint64_t)m * in->n * 4;             /* int32 results gathered */
    s->c_bo_bytes = (uint64_t)in->m * np * 4 * ks;    /* the C buffer synced */
    /* per core: its columns' weights (re-read per M-tile), MACs and int32 partials */
    /* the NPU computes and writes every row of each M-tile it is given (the program's
     * DATAIN_HEIGHT, spec §3.1), so a run of fewer rows than the plan's tile pays the tile */
    uint64_t hw_rows = (uint64_t)s->mtiles * mt;
    hw_rows = hw_rows > in->m ? in->m : hw_rows;
    hw_rows = hw_rows < m ? m : hw_rows;
    s->w_core = kp * np / cores * s->mtiles;
    s->dcomp_core = 0;
    if (in->w_dcomp_bytes) {    /* DCOMP weights: the streams cross DRAM (docs/dcomp.md "Twin") */
        s->w_core = in->w_stored_bytes / cores * s->mtiles;
        s->dcomp_core = in->w_dcomp_bytes / cores * s->mtiles;
    }
    s->macs_core = hw_rows * kp * np / cores;
    s->out_core = hw_rows * np / cores * I8_RESULT_BYTES * ks;
    s->hw_rows = hw_rows;
    if (in->w4a8) {
        /* int4 weights (w_stored_bytes = k_padded n_padded / 2); two int4 rows a token at the
         * int8 MAC rate (no int4 rate is published: the simulator's assumption too, docs/sim.md);
         * int16 partials of both rows per K-slice, in the device's C buffer (the plan's m
         * tokens) and on the NPU's DRAM side (each core's columns) */
        s->hw_rows = hw_rows * W4A8_ROWS_PER_TOKEN;
        s->w_core = in->w_stored_bytes / cores * s->mtiles;
        s->macs_core = s->hw_rows * kp * np / cores;
        s->out_core = s->hw_rows * np / cores * W4A8_PARTIAL_BYTES * ks;
        s->c_bo_bytes = (uint64_t)in->m * W4A8_ROWS_PER_TOKEN * np * W4A8_PARTIAL_BYTES * ks;
    }
}

/* What a core's weight decompressor adds to its task: it outputs the int8 block at
 * npu_dcomp_gbps while the stream arrives at the core's DRAM share, so the weights take
 * max(stream / BW_core, int8 / R_dcomp) (the simulator's formula, src/sim/sim_timing.c); the
 * stream part is the task's bytes, the excess is charged as fixed time, with BW_core =
 * min(npu_bw_core, npu_bw_all / cores) (the twin's DRAM share when all its cores stream). */
static double dcomp_extra_ns(const struct ork_twin_consts *c, const struct run_shape *s)
{
    if (!s->dcomp_core)
        return 0.0;
    double bw = ork_twin_npu_share_bps(c, s->cores);
    double td = (double)s->dcomp_core / (c->npu_dcomp_gbps * 1e9) * 1e9;
    double tw = (double)s->w_core / bw * 1e9;
    return td > tw ? td - tw : 0.0;
}

/* W4A8: the host rebuilds each int32 result from its two int16 partial rows and K-slices
 * (libork's host half; ork_twin_cpu_i4_reconstruct). */
static struct ork_twin_work recon_work(const struct ork_twin_consts *c, const struct twin_slot *sl)
{
    return ork_twin_cpu_i4_reconstruct(c, sl->c_elems, sl->n_cols, sl->kslices);
}

/* The rebuild's trace label names its K-slices (labels are borrowed: static strings). */
static const char *recon_label(uint32_t kslices)
{
#define RL_(s) "rebuild C (int16 -> int32, " #s " K-slices)",
    static const char *const lab[] = { RL_(1) RL_(2) RL_(3) RL_(4) RL_(5) RL_(6) RL_(7) RL_(8)
                                       RL_(9) RL_(10) RL_(11) RL_(12) RL_(13) RL_(14) RL_(15)
                                       RL_(16) };
#undef RL_
    if (kslices >= 1 && kslices <= sizeof lab / sizeof lab[0])
        return lab[kslices - 1];
    return "rebuild C (int16 -> int32, > 16 K-slices)";
}

/* The submitter hands a run to the per-core workers 1..cores-1 (sched.c): it posts the items
 * and, when a worker sleeps, broadcasts the condition variable (a futex); a sleeping worker
 * wakes on an A76 of its own (thread_wake_ns, IDLE), a polling one sees its line change (a
 * spinning hand-off: two line transfers, on the core it polls on). Each then submits its
 * core; sub[k] gets worker k's SUBMIT. */
static void fan_out(struct ork__twin_rec *r, int *chain, uint32_t cores, int *sub)
{
    const struct ork_twin_consts *c = r->c;
    /* the items' line only, unless the worker went to sleep */
    int id = handoff_op(r, r->wspin[1], false, post_side(c), chain, 1,
                        r->wspin[1] >= 0 ? "post to per-core workers" : "signal per-core workers");
    if (id >= 0)
        *chain = id;
    for (uint32_t k = 1; k < cores && k < ORK_TWIN_MAX_NPU; k++) {
        sub[k] = handoff_op(r, r->wspin[k], true, wake_side(c), chain, 1,
                            r->wspin[k] >= 0 ? "per-core worker hand-off" : "per-core worker wake");
        r->wspin[k] = -1;       /* released (or found asleep): no poll to carry over */
        sub[k] = cpu_after(r, sub[k], ORK_TWIN_PHASE_IOCTL, 1, ork_twin_host_ioctl(c),
                           "SUBMIT (per-core worker)");
    }
}

int ork__twin_npu_submit(struct ork__twin_rec *r, const struct ork_npu_matmul_info *in,
                         uint32_t m, int dev, bool async, int slot, const char *label)
{
    if (!r)
        return 0;
    if (slot < 0 || slot >= TWIN_SLOTS)
        return ork_errorf(ORK_EINVAL, "twin: NPU slot %d", slot);
    const struct ork_twin_consts *c = r->c;
    struct run_shape s;
    run_shape(in, m, &s);
    bool floor = (r->flags & ORK_TWIN_REC_HOST_FLOOR) != 0;
    /* caller: A into the device buffer (per K-slice dense blocks), cleaned to DRAM; W4A8: each
     * int8 row split into its two int4 rows there (libork's host half) */
    if (in->w4a8)
        ork__twin_cpu(r, ORK_TWIN_PHASE_I4_SPLIT, false,
                      ork_twin_cpu_i4_split(c, m, in->k_padded), "split A into int4 rows");
    else
        ork__twin_cpu(r, ORK_TWIN_PHASE_GATHER, false, ork_twin_cpu_gather(c, s.a_bytes),
                      "copy A in");
    if (!floor)
        ork__twin_cpu(r, ORK_TWIN_PHASE_CACHE_SYNC, false,
                      ork_twin_host_cache_sync(c, s.a_bo_bytes, true), "mem_sync A");
    int *chain = &r->last;
    if (async) {
        /* the caller signals libork's persistent worker (a condition variable: a futex wake),
         * which wakes on its own core and submits; a polling worker (wspin[0], async.c)
         * sees the job's line instead */
        int id = handoff_op(r, r->wspin[0], false, post_side(c), &r->last, 1, "signal worker");
        if (id >= 0)
            r->last = id;
        r->worker_last = r->last;
        chain = &r->worker_last;
        id = handoff_op(r, r->wspin[0], true, wake_side(c), chain, 1,
                        r->wspin[0] >= 0 ? "worker hand-off" : "worker wake");
        r->wspin[0] = -1;
        if (id >= 0)
            *chain = id;
    }
    if (dev != r->last_dev && r->last_dev >= 0) {
        struct ork_twin_work w = { .fixed_ns = c->npu_domain_switch_ns };
        host_op(r, chain, ORK_TWIN_PHASE_DOMAIN_SWITCH, w, "domain switch");
    }
    r->last_dev = dev;
    /* per-core form: the submitter wakes libork's sleeping per-core workers (a condition
     * variable broadcast); each wakes on its own A76 and submits its core */
    bool percore = s.cores > 1 && !floor;
    int sub[ORK_TWIN_MAX_NPU];
    if (percore)
        fan_out(r, chain, s.cores, sub);
    if (floor) {
        /* the open runtime's per-submit floor includes the launch the NPU op pays */
        double f = c->host_submit_floor_ns - c->npu_launch_ns;
        struct ork_twin_work w = { .fixed_ns = f > 0 ? f : 0 };
        host_op(r, chain, ORK_TWIN_PHASE_IOCTL, w, "host floor (open runtime)");
    } else {
        host_op(r, chain, ORK_TWIN_PHASE_IOCTL, ork_twin_host_ioctl(c), "SUBMIT");
    }
    struct twin_slot *sl = &r->slot[slot];
    memset(sl, 0, sizeof(*sl));
    sl->used = true;
    sl->async = async;
    sl->percore = percore;
    sl->spin_done = percore && r->spin_ns > 0;
    sl->c_bytes = s.c_bytes;
    sl->c_bo_bytes = s.c_bo_bytes;
    sl->c_elems = (uint64_t)m * in->n;
    sl->kslices = in->n_kslices ? in->n_kslices : 1;
    sl->w4a8 = in->w4a8;
    sl->n_cols = in->n;
    sub[0] = *chain;
    for (uint32_t k = 0; k < s.cores && k < ORK_TWIN_MAX_NPU; k++) {
        struct ork_twin_work w = ork_twin_npu_task(c, true, in->dtype == ORK_NPU_F16,
                                                   s.macs_core, s.w_core, s.out_core, 0);
        w.fixed_ns += (double)(s.tasks_per_core - 1) * c->npu_chain_ns + dcomp_extra_ns(c, &s);
        /* a split plan's core ranges are fixed; a single-core plan takes a free core */
        struct ork_twin_op_desc d = { .res = ORK_TWIN_NPU, .n_cores = 1,
                                      .core_mask = s.cores > 1 ? 1u << k : 0,
                                      .phase = ORK_TWIN_PHASE_NPU_MATMUL, .work = w,
                                      .label = label };
        int id = add(r, &d, &sub[percore ? k : 0], 1);
        /* a per-core worker polls its doorbell and signals the submitter (with spinning
         * workers the signal is recorded by the wait, after the submitter's poll) */
        if (percore && k > 0 && !sl->spin_done)
            id = cpu_after(r, id, ORK_TWIN_PHASE_WAKE, 1, ork_twin_host_futex(c),
                           "per-core worker done");
        sl->done[sl->n_done++] = id;
    }
    if (async) {
        /* the worker waits, syncs C back and gathers, then signals the caller */
        int id = wait_ops(r, *chain, sl, floor, "wait (worker)");
        if (id >= 0)
            *chain = id;
        if (!floor)
            host_op(r, chain, ORK_TWIN_PHASE_CACHE_SYNC,
                    ork_twin_host_cache_sync(c, sl->c_bo_bytes, false), "mem_sync C");
        if (sl->w4a8)
            host_op(r, chain, ORK_TWIN_PHASE_I4_RECON, recon_work(c, sl),
                    recon_label(sl->kslices));
        else if (sl->kslices > 1)
            host_op(r, chain, ORK_TWIN_PHASE_KSLICE,
                    ork_twin_cpu_kslice_sum(c, sl->c_elems, sl->kslices), "k-slice sums");
        else
            host_op(r, chain, ORK_TWIN_PHASE_GATHER, ork_twin_cpu_gather(c, sl->c_bytes),
                    "gather C");
        sl->async_spin = r->spin_ns > 0 && !floor;
        if (!sl->async_spin)
            host_op(r, chain, ORK_TWIN_PHASE_WAKE, ork_twin_host_futex(c), "signal done");
        sl->done[0] = *chain;
        sl->n_done = 1;
    }
    return r->err;
}

/* The caller's wait for a polling async worker (async.c): the caller polls the jobs' end count
 * for up to spin_ns (a busy core); the worker, its gather done, bumps it (one line; a futex wake
 * too if the caller sleeps) and polls for its next job; the caller sees the line or, past its
 * poll, is woken. The op that ends the wait. */
static int wait_async_spinning(struct ork__twin_rec *r, const struct twin_slot *sl)
{
    const struct ork_twin_consts *c = r->c;
    int sp = spin_op(r, r->last, r->spin_ns, "caller polls the worker");
    int sig = handoff_op(r, sp, false, post_side(c), &sl->done[0], 1, "signal done");
    r->wspin[0] = spin_op(r, sig, r->spin_ns, "async worker polls");
    r->wwin[0] = r->spin_ns;
    struct handoff_side last = wake_side(c);
    last.hot.fixed_ns = c->cpu_line_transfer_ns;
    int deps[2] = { r->last, sig };
    return handoff_op(r, sp, true, last, deps, 2, "wait worker");
}

int ork__twin_npu_wait(struct ork__twin_rec *r, int slot)
{
    if (!r)
        return 0;
    if (slot < 0 || slot >= TWIN_SLOTS || !r->slot[slot].used)
        return ork_errorf(ORK_EINVAL, "twin: wait on NPU slot %d without a submit", slot);
    const struct ork_twin_consts *c = r->c;
    struct twin_slot *sl = &r->slot[slot];
    bool floor = (r->flags & ORK_TWIN_REC_HOST_FLOOR) != 0;
    int id;
    if (sl->async && sl->async_spin) {
        id = wait_async_spinning(r, sl);
    } else if (sl->async) {
        int deps[2] = { r->last, sl->done[0] };
        struct ork_twin_op_desc d = { .res = ORK_TWIN_CPU, .n_cores = 1,
                                      .phase = ORK_TWIN_PHASE_WAKE,
                                      .work = ork_twin_host_futex(c), .label = "wait worker" };
        id = add(r, &d, deps, 2);
    } else {
        id = wait_ops(r, r->last, sl, floor, "wait");
    }
    if (id >= 0)
        r->last = id;
    if (!sl->async) {
        if (!floor)
            ork__twin_cpu(r, ORK_TWIN_PHASE_CACHE_SYNC, false,
                          ork_twin_host_cache_sync(c, sl->c_bo_bytes, false), "mem_sync C");
        if (sl->w4a8)
            ork__twin_cpu(r, ORK_TWIN_PHASE_I4_RECON, false, recon_work(c, sl),
                          recon_label(sl->kslices));
        else if (sl->kslices > 1)
            ork__twin_cpu(r, ORK_TWIN_PHASE_KSLICE, false,
                          ork_twin_cpu_kslice_sum(c, sl->c_elems, sl->kslices), "k-slice sums");
        else
            ork__twin_cpu(r, ORK_TWIN_PHASE_GATHER, false, ork_twin_cpu_gather(c, sl->c_bytes),
                          "gather C");
    }
    sl->used = false;
    return r->err;
}

/* ---- steps and totals --------------------------------------------------------------------- */

/* Run the step, add it to the totals and the trace. */
static int step_finish(struct ork__twin_rec *r, uint64_t rows, bool sample)
{
    int ret = r->err;
    struct ork_twin_result res;
    if (ret == 0 && (ret = ork_twin_step_run(r->tw, &res)) == 0) {
        ork_twin_result_accumulate(&r->st.total, &res, r->c);
        /* a worker's poll cut at the step's end goes on into the next step */
        for (uint32_t k = 0; k < ORK_TWIN_MAX_NPU; k++) {
            double t0, t1;
            if (r->wspin[k] >= 0 && ork_twin_op_times(r->tw, r->wspin[k], &t0, &t1) == 0 &&
                r->wwin[k] - (t1 - t0) > 0)
                r->wcarry[k] = r->wwin[k] - (t1 - t0);
        }
        if (sample)
            r->st.n_samples++;
        else
            r->st.n_steps++;
        r->st.n_rows += rows;
        if (r->trace && r->trace_left) {
            ret = ork_twin_trace_step(r->tw, r->trace, r->trace_t);
            r->trace_t += res.end_ns;
            if (ret < 0)
                ret = ork_errorf(ret, "twin trace '%s': write error", r->trace_path);
            if (--r->trace_left == 0)
                trace_close(r);
        }
    }
    return ret;
}

int ork__twin_end(struct ork__twin_rec *r, int32_t rows)
{
    if (!r)
        return 0;
    int ret = step_finish(r, (uint64_t)rows, false);
    pthread_mutex_unlock(&r->lock);
    return ret;
}

/* ---- public ------------------------------------------------------------------------------ */

int ork_model_twin_stats(const struct ork_model *m, struct ork_model_twin_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (!m || !m->twin)
        return ORK_ENOENT;
    pthread_mutex_lock(&m->twin->lock);
    *out = m->twin->st;
    pthread_mutex_unlock(&m->twin->lock);
    return 0;
}

void ork_model_twin_stats_reset(struct ork_model *m)
{
    if (!m || !m->twin)
        return;
    struct ork__twin_rec *r = m->twin;
    pthread_mutex_lock(&r->lock);
    uint32_t cc = r->st.cpu_cores, nc = r->st.npu_cores;
    memset(&r->st, 0, sizeof r->st);
    r->st.cpu_cores = cc;
    r->st.npu_cores = nc;
    pthread_mutex_unlock(&r->lock);
}

int ork_model_twin_sample(struct ork_model *m, uint32_t top_k)
{
    if (!m || !m->twin)
        return 0;
    struct ork__twin_rec *r = m->twin;
    ork__twin_begin(r);
    ork__twin_cpu(r, ORK_TWIN_PHASE_SAMPLE, false,
                  ork_twin_cpu_sample(r->c, (uint64_t)m->cfg.n_vocab, top_k), "sample");
    int ret = step_finish(r, 0, true);
    pthread_mutex_unlock(&r->lock);
    return ret;
}

int ork_model_twin_trace_begin(struct ork_model *m, const char *path, uint32_t max_steps)
{
    if (!m || !m->twin)
        return ork_errorf(ORK_ENOENT, "twin trace: the model has no twin (--device sim, or the "
                          "twin option on the CPU)");
    struct ork__twin_rec *r = m->twin;
    pthread_mutex_lock(&r->lock);
    trace_close(r);
    int ret = 0;
    r->trace = fopen(path, "w");
    if (!r->trace) {
        ret = ork_errorf(ORK_EIO, "twin trace '%s': %s", path, strerror(errno));
    } else {
        snprintf(r->trace_path, sizeof r->trace_path, "%s", path);
        r->trace_left = max_steps ? max_steps : 1;
        r->trace_t = 0;
        if ((ret = ork_twin_trace_open(r->tw, r->trace)) < 0)
            trace_close(r);
    }
    pthread_mutex_unlock(&r->lock);
    return ret;
}

int ork_model_twin_trace_end(struct ork_model *m)
{
    if (!m || !m->twin)
        return 0;
    pthread_mutex_lock(&m->twin->lock);
    FILE *f = m->twin->trace;
    int ret = 0;
    if (f) {
        ret = ork_twin_trace_close(f);
        if (fclose(f) != 0 && ret == 0)
            ret = ork_errorf(ORK_EIO, "twin trace '%s': %s", m->twin->trace_path, strerror(errno));
        m->twin->trace = NULL;
    }
    pthread_mutex_unlock(&m->twin->lock);
    return ret;
}
