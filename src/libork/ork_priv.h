/* ork_priv.h -- libork internals shared by device.c, matmul_weights.c and matmul.c: the objects behind
 * the opaque handles of <ork/npu.h> and the buffer helpers over the kernel vtable. Not API. */
#ifndef ORK_PRIV_H
#define ORK_PRIV_H

#include <ork/dcomp.h>
#include <ork/npu.h>
#include <ork/sched.h>

#include <pthread.h>

#include "kmd/kmd.h"
#include "plan.h"
#include "program.h"

struct ork_npu {
    const struct ork_kmd_ops *kmd;
    void *kctx;
    uint32_t domain;            /* IOMMU domain of every buffer (spec §13) */
    bool pc_chain;              /* tasks of one job chain through trailers (spec §8.3) */
    uint32_t max_tasks;         /* tasks per job the backend accepts */
    uint32_t n_cores;           /* cores a job may select (1 when the kernel schedules) */
    bool is_sim;
    /* scheduling (budget.c, sched.c, async.c) */
    uint32_t core_budget;       /* 0 = every core; else the cap for plans created from now */
    pthread_mutex_t sched_lock; /* guards the lazy creation of pool and async worker, resets */
    struct ork__pool *pool;     /* persistent per-core submit workers, created on first split */
    struct ork__async *async;   /* the async worker, created on first async submit */
    bool has_topo;              /* `topo` was injected (ork_npu_set_topology) */
    struct ork_cpu_topology topo;
    uint64_t resets;            /* NPU resets after failed submits */
    bool multi_job;             /* several core ranges = several kernel jobs in one submit, the
                                 * kernel picking cores (rocket, §11.3) */
    uint32_t confirmed_forms;   /* ORK_NPU_FORM_* usable (ork_npu_confirmed_forms) */
    bool one_job_logged;        /* the one-job fallback was logged */
    uint32_t wait_ms;           /* host bound on one job (ork_npu_opts.wait_timeout_ms) */
    bool nonblock;              /* single-core jobs go NONBLOCK with a doorbell (spec §8.6) */
    uint32_t worker_spin_us;    /* per-core workers poll before sleeping (ork_npu_opts) */
};

struct ork_npu_weights {
    struct ork_npu *npu;
    enum ork_npu_dtype dtype;
    uint32_t k, n;
    struct ork_kplan kplan;     /* K-slices, fixed here because they decide the layout */
    struct ork_nplan nplan;     /* N-slices (<= 8192 columns) */
    uint64_t slice_off[ORK_PLAN_MAX_KSLICES];  /* byte offset of K-slice j in `bo` */
    struct ork_kbo bo;          /* all slices: [Np/tile][pad_j/32][tile][32] each (spec §4.5) */
    float *scales;              /* [n] or NULL */
    uint32_t encoding;          /* ORK_NPU_WEIGHTS_RAW or _DCOMP */
    uint32_t grid_max_abs;      /* DCOMP: the codes' bound L (7..127) */
    struct ork_dcomp_weights dw;/* DCOMP: the task weight blocks, K-slice major (parts[].off:
                                 * offsets in `bo`, parts[].regs: the task's DCOMP registers),
                                 * cut for dw.n_cores cores; dw.data is NULL (the bytes are bo's) */
    int32_t *colsum;            /* W4A8: [n] sum over the whole K of each column's codes, for
                                 * the correction 8 sum_k B[k][n] (w4a8.h); NULL otherwise.
                                 * W4A8 slices are (Np/64, pad_j/32, 64, 32) int4, pad_j * Np / 2
                                 * bytes each (spec §4.6), Np = N padded to 64 */
};

static inline bool ork__weights_w4a8(const struct ork_npu_weights *w)
{
    return w->encoding == ORK_NPU_WEIGHTS_W4A8;
}

/* The N-split of a plan on w over `want` cores (clamped: ork__plan_split_cores): raw weights
 * take plan.c's ork__plan_nsplit; DCOMP weights keep their blocks' N-slices (the partition the
 * streams were cut for, spec §9), each core of a plan of as many cores its own, any other count
 * of cores contiguous runs of them. Sets *n_cores, *ns (ork_calloc'd, [*n_ns]) and
 * core_ns0[0..*n_cores]. */
int ork__weights_nsplit(const struct ork_npu_weights *w, uint32_t want, uint32_t *n_cores,
                        struct ork_slice **ns, uint32_t *n_ns, uint32_t *core_ns0);
/* The weight operand of a task on K-slice kslice x N-slice nslice (ns, from
 * ork__weights_nsplit): sets task->b and, for a compressed DCOMP block, task->dcomp (its
 * registers) and task->b_bytes (its stream's size); raw blocks leave the raw form. */
void ork__weights_block(const struct ork_npu_weights *w, uint32_t kslice, uint32_t nslice,
                        const struct ork_slice *ns, struct ork_mm_task *task);
/* Bytes one pass over every block of w reads from DRAM (*stored) and, of its compressed
 * blocks, the int8 bytes decompressed (*dcomp; 0 for raw weights). */
void ork__weights_pass_bytes(const struct ork_npu_weights *w, uint64_t *stored, uint64_t *dcomp);

/* One program of a plan: which slice/tile it computes and on which core. */
struct ork_mm_tile {
    uint32_t kslice, nslice;    /* nslice indexes the plan's N-slices */
    uint32_t m0, m;             /* rows [m0, m0 + m) */
    uint32_t core;              /* index into the plan's cores (0 for single-core plans) */
};

#define ORK_MM_MAX_CORES 3      /* RK3588 (spec §1.1) */

/* An async run (async.c): embedded in its plan or chain, queued on the device's worker. */
struct ork_npu_job {
    struct ork_npu_matmul *mm;  /* exactly one of mm, ch */
    struct ork_npu_chain *ch;
    void *c;                    /* plan: C */
    void *const *cs;            /* chain: C list */
    uint32_t m;
    bool queued, done;
    int ret;
    char msg[512];              /* the failing run's message, re-raised by wait */
    struct ork_npu_job *next;
};

struct ork_npu_matmul {
    struct ork_npu_weights *w;
    struct ork_npu *npu;
    uint32_t m;                 /* plan rows */
    uint32_t m_tile;            /* rows per M-tile (common to all slices) */
    uint32_t n_mtiles;
    uint32_t n_cores;           /* 1: single-core jobs (kernel's choice); 2-3: N-split (§9) */
    uint32_t n_ns;              /* the plan's N-slices: each core's columns cut to <= 8192 */
    struct ork_slice *ns;       /* [n_ns] */
    uint32_t core_ns0[ORK_MM_MAX_CORES + 1];   /* core c owns N-slices [ns0[c], ns0[c+1]) */
    uint32_t core_t0[ORK_MM_MAX_CORES + 1];    /* and tasks [t0[c], t0[c+1]) */
    uint32_t flags, timeout_ms;
    struct ork_kbo a_bo;        /* per K-slice j: A_j [m][pad_j] dense (spec §4.1); W4A8: per
                                 * K-slice and M-tile of mt tokens at the same offsets, the
                                 * split rows (pad_j/32, 2 mt, 32) int4 (spec §4.6), and the C
                                 * blocks below (pad_i/8, 2 mt, 8) int16 */
    struct ork_kbo c_bo[ORK_MM_MAX_CORES]; /* per (j, i): C_ji [m][pad_i] int32/fp32 (spec
                                 * §4.2) in c_bo[0]; on rocket a multi-core plan gives each
                                 * core its own C buffer (c_bo[core]), so its jobs do not order
                                 * after each other's writes (§11.3) */
    uint32_t n_cbo;             /* C buffers in use (1, or n_cores on rocket) */
    struct ork_kbo prog_bo;     /* n_tasks program slots of ORK_PROG_SLOT bytes */
    uint64_t a_off[ORK_PLAN_MAX_KSLICES];
    uint64_t *c_off;            /* [n_kslices * n_ns]: offset in the N-slice's C buffer */
    uint32_t n_tasks;
    struct ork_mm_tile *tiles;  /* [n_tasks], M-tile outermost so a run of fewer rows is a prefix */
    struct ork_ktask *tasks;    /* [n_tasks] */
    uint32_t group;             /* tasks per core per job; programs chain within a group only */
    uint32_t *sentinel;         /* W4A8: [n_tasks] each task's doorbell sentinel (w4a8.h
                                 * ork__w4a8_sentinel); NULL: DOORBELL_SENTINEL for all */
    void *xq;                   /* run_f32 scratch: quantised/rounded X [m][k], lazily made */
    float *xscale;              /* run_f32 scratch: per-row scales [m] (int8) */
    /* state of the run in flight */
    bool in_flight;
    uint32_t run_m;             /* rows of the current run */
    uint32_t run_mtiles;        /* M-tiles it runs (a prefix of each core's tasks) */
    uint32_t run_count[ORK_MM_MAX_CORES];  /* tasks per core in it */
    struct ork_kjob job;        /* the last job submitted (kept for wait) */
    bool job_pending;           /* a NONBLOCK job awaits finish_tasks() */
    bool cut_pending;           /* its prefix cut must be restored after it completes */
    int run_ret;
    struct ork_npu_job ajob;    /* async run (async.c) */
    /* BO lists every job of the plan carries: rocket orders jobs by them (spec §11.3) */
    const struct ork_kbo *in_bos[3];    /* weights, A, programs */
    const struct ork_kbo *out_bos[1];   /* C (c_bo[0]; per core instead when n_cbo > 1) */
};

/* On backends whose kernel times a job out silently (rocket: the fence signals after the core
 * reset, §11.3 [INF]), each core range's last output word is seeded with the sentinel before a
 * submit and checked after it (spec §8.6): still the sentinel = the job never finished. */
bool ork__matmul_sentinel_needed(const struct ork_npu_matmul *mm);
int ork__matmul_sentinel_seed(struct ork_npu_matmul *mm, uint32_t last_task);
int ork__matmul_sentinel_check(struct ork_npu_matmul *mm, uint32_t last_task, const char *what);

/* Bounded waits (npu.h wait_timeout_ms, spec §8.6). The host bound of one job of plan mm (the
 * plan's timeout_ms, else the device's). Arming a single-core job on a backend that allows it
 * makes it NONBLOCK, with the last output word of mm's task `last` as its doorbell (seeded with
 * the sentinel) and the bound as the kernel's timeout: returns 1 when armed, 0 when the job
 * stays blocking, or an error. An armed job is finished by ork__matmul_wait_armed, which waits
 * at most the bound (ORK_ETIMEDOUT naming it; the caller resets through ork__npu_failed). */
uint32_t ork__matmul_bound_ms(const struct ork_npu_matmul *mm);
int ork__matmul_arm(struct ork_npu_matmul *mm, struct ork_kjob *job, uint32_t last);
int ork__matmul_wait_armed(struct ork_npu_matmul *mm, struct ork_kjob *job);

/* The two host halves of a plan's run, shared with matmul_chain.c: copy A[m][k] into the
 * K-slice blocks (and sync), and sum/gather the partial C blocks into C[m][n]. */
int ork__matmul_copy_in(struct ork_npu_matmul *mm, const void *a, uint32_t m);
int ork__matmul_gather(struct ork_npu_matmul *mm, void *c, uint32_t m);
/* Index in mm->c_bo of N-slice i's C buffer (0, or the owning core's on a rocket split). */
uint32_t ork__matmul_cbo_idx(const struct ork_npu_matmul *mm, uint32_t nslice);
/* The same halves for W4A8 plans (w4a8_plan.c): split each row into its h and l int4 rows per
 * K-slice and M-tile, and widen the int16 partials into the exact int32 C (the correction once);
 * and, at emission, each task's doorbell sentinel (mm->sentinel). */
int ork__w4a8_copy_in(struct ork_npu_matmul *mm, const int8_t *a, uint32_t m);
int ork__w4a8_gather(struct ork_npu_matmul *mm, int32_t *c, uint32_t m);
int ork__w4a8_sentinels(struct ork_npu_matmul *mm);

/* Run a plan's first m rows to completion, blocking (async worker, stream); copy-in before and
 * gather after are the caller's. `hw_core`: -1 = as planned; else a single-core plan runs on
 * that core. */
int ork__matmul_exec(struct ork_npu_matmul *mm, uint32_t m, int hw_core);
/* Chains (matmul_chain.c) in the same halves, for the async worker. */
int ork__chain_copy_in(struct ork_npu_chain *ch, const void *const *a);
int ork__chain_exec(struct ork_npu_chain *ch, void *const *c);
struct ork_npu_job *ork__chain_job(struct ork_npu_chain *ch);
struct ork_npu *ork__chain_npu(const struct ork_npu_chain *ch);

/* Cores for a new plan: `requested` (0 = the budget's pick) capped by the core budget. */
uint32_t ork__budget_cores(struct ork_npu_matmul *mm, uint32_t requested);

/* The per-core worker pool (sched.c): run fn(arg, i) for i in [0, n), i = 0 on the calling
 * thread and i >= 1 on worker i (which submits to core i); returns after all finished, with
 * the first failure's code and message. n <= the device's cores. */
int ork__pool_run(struct ork_npu *npu, uint32_t n, int (*fn)(void *arg, uint32_t i), void *arg);
/* Poll *word (a pause per poll) until it differs from `from` or spin_ns has passed (sched.c);
 * true when it changed. spin_ns <= 0: false at once. */
bool ork__spin_until_changed(_Atomic unsigned *word, unsigned from, int64_t spin_ns);
/* Stop the device's pool and async worker (device close). */
void ork__sched_shutdown(struct ork_npu *npu);
void ork__async_shutdown(struct ork_npu *npu);
/* A submit or wait failed with `ret` (message recorded): timeouts and device faults reset the
 * NPU (spec §10.8) so the device stays usable; returns `ret` with "<what>: <message>[; reset]". */
int ork__npu_failed(struct ork_npu *npu, int ret, const char *what);
/* One NPU submit on the trace timeline (`core` -1: the kernel's pick). */
void ork__trace_submit(int core, const char *name, int64_t t0_ns);

/* Buffers in the device's domain: create (zeroed), destroy, sync (no-op on coherent backends). */
int ork__npu_bo_create(struct ork_npu *npu, uint64_t size, uint32_t flags, struct ork_kbo *out,
                       const char *what);
void ork__npu_bo_destroy(struct ork_npu *npu, struct ork_kbo *bo);
int ork__npu_bo_sync(struct ork_npu *npu, const struct ork_kbo *bo, uint64_t off, uint64_t size,
                     enum ork_kbo_sync dir);

#endif
