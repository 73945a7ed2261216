/* ork/npu.h -- libork public API: open an RK3588 NPU (or the simulator), make weights resident in
 * NPU memory once, and run int8 x int8 -> int32 or fp16 x fp16 -> fp32 matmuls on them many
 * times. This is the only header the engine needs from libork.
 *
 *   struct ork_npu *npu;                    ork_npu_open(&opts, &npu)          ("auto"|"rknpu"|"rocket"|"sim")
 *   struct ork_npu_weights *w;              ork_npu_weights_create(npu, &wdesc, &w)   pack once
 *   struct ork_npu_matmul *mm;              ork_npu_matmul_create(w, &mdesc, &mm)     programs precompiled
 *   ork_npu_matmul_run_i8(mm, a, m, c);     ... many times: copy A in, one submit, sum K-slices out
 *   ork_npu_matmul_destroy(mm); ork_npu_weights_destroy(w); ork_npu_close(npu);
 *
 * Shapes: C[m][n] = sum_k A[m][k] * W[n][k]. Weights are given as W[n][k] (one row of k values
 * per output column, the usual LLM layout); any k, n >= 1 and any m up to the plan's size: the
 * library pads K and N to the hardware multiples, slices K and N and tiles M (docs/npu.md,
 * spec/rk3588-npu.md §5.7) and adds the K-slice partial sums on the host (§1.4).
 *
 * Ownership: the device owns nothing of the caller's; weights objects copy what they need and
 * must be destroyed before the device; a matmul plan borrows its weights (destroy it first).
 * A plan is used by one thread at a time; different plans may run from different threads.
 * Errors: negative ORK_E* codes with an ork_error_message(); nothing here exits or aborts.
 *
 * Scheduling (core budget, per-core workers, async jobs, streams, recovery): <ork/sched.h>;
 * timelines: <ork/trace.h>. */
#ifndef ORK_NPU_H
#define ORK_NPU_H

#include <ork/log.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum ork_npu_dtype {
    ORK_NPU_I8 = 0,     /* int8 A and W, int32 C (spec §6.2 "int8 MAC -> int32") */
    ORK_NPU_F16 = 1,    /* fp16 A and W (IEEE half bits in uint16_t), fp32 C */
};

/* ---- device ------------------------------------------------------------------------------ */

struct ork_npu;
struct ork_sim_opts;                /* <ork/sim.h>: include it to fill simulator options */

struct ork_npu_opts {
    uint32_t struct_size;           /* sizeof(struct ork_npu_opts); 0 or NULL opts = defaults */
    const char *device;             /* "auto" (default: the board's rknpu, else rocket; never
                                     * the simulator), "rknpu", "rocket", "sim" (the simulator
                                     * behind the rknpu backend) or "sim-rocket" (the simulator
                                     * behind the rocket backend) */
    const char *node;               /* device node override (e.g. "/dev/dri/card1"); NULL probes */
    const struct ork_sim_opts *sim; /* "sim" only: simulator options; NULL = defaults */
    ork_log_fn log;                 /* when set, installed with ork_log_set (process-wide) */
    void *log_user;
    uint32_t domain;                /* IOMMU domain for every buffer of this device (spec §13) */
    /* Submit forms beyond the validated ones (docs/npu.md "Submit forms"). A plan asking for a
     * form that is not confirmed runs in the validated form instead (logged once per device). */
    const char *capabilities;       /* capability record: a twin calibration JSON whose
                                     * "capabilities" object says which forms a board confirmed
                                     * (ork_twin_caps_load, written by `ork selftest
                                     * --confirm-forms`); NULL = none. A file that cannot be
                                     * read fails the open, naming it */
    uint32_t confirmed_forms;       /* ORK_NPU_FORM_* the caller vouches for itself (e.g. a
                                     * record it loaded); OR-ed with the file's */
    /* Bounded waits (docs/npu.md "Bounded waits"). On rknpu (and "sim") every single-core job
     * is submitted NONBLOCK and its last output word polled as a doorbell (spec §8.6), so a
     * hung or dropped job is ORK_ETIMEDOUT after this host bound, the NPU is reset and the
     * device stays usable -- never the kernel's uninterruptible sleep, which ran past its own
     * timeout on a wedged board (§8.6: 61 s -> 122 s). The kernel's timeout of such a job is
     * the same bound. A plan's own timeout_ms (ork_npu_matmul_desc) overrides it. rocket's
     * waits are PREP_BO deadlines, bounded already (500 ms job timeout + slack, §11.3). */
    uint32_t wait_timeout_ms;       /* host bound on one job; 0 = ORK_NPU_WAIT_TIMEOUT_MS */
    bool blocking_submits;          /* submit every job blocking and rely on the kernel's
                                     * timeout (the behaviour before bounded waits; for
                                     * bisecting driver problems) */
    /* Between runs, the persistent per-core submit workers and the async worker
     * (docs/scheduling.md) poll for the next run for up to this long before they sleep on
     * their condition variable, and a submitter (an async job's waiter) polls as long for
     * their end before it sleeps: within a decode step a
     * hand-off is then a cache-line transfer instead of a futex wake-up (~25 us each, anchors
     * §2), at the price of a busy A76 core per spinning worker (docs/twin.md "Spinning
     * workers"). 0 = never spin (sleep at once); at most ORK_NPU_WORKER_SPIN_US_MAX. */
    uint32_t worker_spin_us;
};

/* Most worker_spin_us accepted: a sanity bound (an idle worker must fall asleep soon). */
#define ORK_NPU_WORKER_SPIN_US_MAX 100000u
/* The engine's default worker_spin_us (ork_model_params.npu_spin_us = 0; docs/twin.md
 * "Spinning workers" has the measurements it was chosen from). */
#define ORK_NPU_WORKER_SPIN_US_DEFAULT 200u

/* Default host bound on one NPU job: 2x the mainline driver's 500 ms job timeout (spec §11.3),
 * which every job of the same programs must meet on rocket; the longest job the executor
 * submits is far shorter (docs/npu.md "Bounded waits"). The vendor runtime's 6000 ms (§10.5)
 * was the kernel's own timeout, behind which a wedged board slept. */
#define ORK_NPU_WAIT_TIMEOUT_MS 1000u

/* Submit forms a capability can confirm (bits of ork_npu_opts.confirmed_forms; the same bits
 * as ORK_TWIN_FORM_* in <ork/twin.h>). */
enum ork_npu_form {
    ORK_NPU_FORM_ONE_JOB = 1u << 0, /* multi-core as one job, core_mask 0x7 with the per-core
                                     * ranges in subcore_task[2..4] (spec §9 [CAP]) */
    ORK_NPU_FORM_DCOMP = 1u << 1,   /* the CNA weight decompressor (npu-weight-decompression.md
                                     * §1) confirmed bit-exact on this device; the simulator
                                     * implements the format and confirms it unless
                                     * ork_sim_opts.deny_dcomp */
    ORK_NPU_FORM_WIDE_K = 1u << 2,  /* int8 programs of K in (4096, 8192] with more than one
                                     * row, by the published M-tile rules
                                     * (npu-weight-decompression.md §4.3 [SRC]: 32 rows up to
                                     * K = 6144, 16 up to 8192, D = ceil(M*K/32768) data banks,
                                     * FEATURE_GRAINS 30); without it such K is K-sliced into
                                     * the full-K envelope of spec §5.3. The simulator confirms
                                     * it when ork_sim_opts.confirm_wide_k asks */
    ORK_NPU_FORM_W4A8 = 1u << 3,    /* int4 x int4 -> int16 programs (spec §4.6 layouts,
                                     * npu-weight-decompression.md §2 register values) confirmed
                                     * bit-exact on this device; the simulator implements them
                                     * and confirms it unless ork_sim_opts.deny_w4a8 */
};
/* The forms this device may use: the options' and the capability file's, plus what the backend
 * confirms itself (only the simulator, when ork_sim_opts.confirm_one_job asks it to). */
uint32_t ork_npu_confirmed_forms(const struct ork_npu *npu);

/* How the device waits for a job (ork_npu_opts.wait_timeout_ms): the host bound in ms when jobs
 * go NONBLOCK with a doorbell (rknpu, sim), 0 when submits block in the kernel (rocket, whose
 * PREP_BO waits carry their own deadline, or blocking_submits). */
uint32_t ork_npu_wait_bound_ms(const struct ork_npu *npu);

/* Open a device. With "auto" and no NPU present: ORK_ENOENT, message "no RK3588 NPU found
 * (tried rknpu, rocket); use --device sim for the simulator". A node that exists but cannot be
 * opened is ORK_EACCES naming the node, its group and a udev rule (never "not found"). */
int ork_npu_open(const struct ork_npu_opts *opts, struct ork_npu **out);
void ork_npu_close(struct ork_npu *npu);
/* Backend name: "rknpu", "rocket", "sim" or "sim-rocket". */
const char *ork_npu_backend(const struct ork_npu *npu);
/* True when the device is the simulator. */
bool ork_npu_is_sim(const struct ork_npu *npu);

/* ---- resident weights ------------------------------------------------------------------- */

struct ork_npu_weights;

struct ork_npu_weights_desc {
    uint32_t struct_size;           /* sizeof(struct ork_npu_weights_desc) */
    enum ork_npu_dtype dtype;
    uint32_t k, n;                  /* reduction length, output columns (any >= 1) */
    const void *w;                  /* int8_t[n][k] or uint16_t (fp16 bits)[n][k]; copied */
    const float *scales;            /* int8 only, optional: per-output-column scales [n] (kept
                                     * for ork_npu_dequantize); NULL = none */
    uint32_t max_m;                 /* largest M a plan on these weights will run; decides the
                                     * K-slicing (M = 1 allows 8192-wide slices, spec §5.1).
                                     * 0 = 1 (decode only) */
    uint32_t encoding;              /* enum ork_npu_weights_encoding: ORK_NPU_WEIGHTS_RAW (0,
                                     * default) or ORK_NPU_WEIGHTS_DCOMP (int8 only): the int8
                                     * codes as given (the caller quantised them onto its grid)
                                     * are stored as DCOMP streams, one per K-slice x
                                     * N-partition block; blocks that do not shrink stay raw.
                                     * Without ORK_NPU_FORM_DCOMP confirmed: ORK_EUNSUPPORTED
                                     * naming the capability and `ork selftest --confirm-forms` */
    uint32_t grid_max_abs;          /* DCOMP: the codes' bound L (7..127); a code outside is
                                     * ORK_EINVAL naming row and column; 0 = 127 */
};

/* How resident weights are stored (ork_npu_weights_desc.encoding). */
enum ork_npu_weights_encoding {
    ORK_NPU_WEIGHTS_RAW = 0,        /* tiled int8/fp16 (spec §4.3, §4.4) */
    ORK_NPU_WEIGHTS_DCOMP = 1,      /* CNA decompressor streams (npu-weight-decompression.md) */
    ORK_NPU_WEIGHTS_W4A8 = 2,       /* int4 codes in [-8, 7] (given as int8), packed two a byte
                                     * in the int4 layout (spec §4.6), run by the int4 x int4
                                     * MAC with each int8 activation split into two int4 rows
                                     * (npu-weight-decompression.md §2); ork_npu_matmul_run_i8
                                     * still takes int8 A and gives the exact int32 A.W.
                                     * Without ORK_NPU_FORM_W4A8 confirmed: ORK_EUNSUPPORTED */
};

/* Pack W into the hardware layout (spec §4.3 int8 [Nt][Kt][32][32], §4.4 fp16 [Nt][Kt][16][32],
 * per K-slice) in one device buffer. */
int ork_npu_weights_create(struct ork_npu *npu, const struct ork_npu_weights_desc *d,
                           struct ork_npu_weights **out);
void ork_npu_weights_destroy(struct ork_npu_weights *w);
/* Per-column scales given at creation, or NULL. */
const float *ork_npu_weights_scales(const struct ork_npu_weights *w);
/* Device bytes held by the packed weights (padding included). */
uint64_t ork_npu_weights_bytes(const struct ork_npu_weights *w);
/* Weights from bytes already in the hardware layout, as ork_npu_weights_export gives them for
 * the same dtype, k, n and max_m: the slicing is planned as ork_npu_weights_create would, the
 * size checked against it (ORK_EFORMAT names both) and the bytes copied without re-tiling.
 * desc->w is ignored; desc->scales as for ork_npu_weights_create. */
int ork_npu_weights_create_packed(struct ork_npu *npu, const struct ork_npu_weights_desc *d,
                                  const void *tiled, uint64_t bytes,
                                  struct ork_npu_weights **out);
/* Copy the tiled bytes of w (ork_npu_weights_bytes of them) into buf: ORK_ENOSPC if cap is
 * smaller. */
int ork_npu_weights_export(const struct ork_npu_weights *w, void *buf, uint64_t cap);
/* DCOMP weights (encoding = ORK_NPU_WEIGHTS_DCOMP): ork_npu_weights_bytes is the size of a
 * self-describing blob (libork's versioned format: a block table + the streams and raw blocks)
 * that ork_npu_weights_export writes and ork_npu_weights_create_packed with the same desc
 * (dtype, k, n, max_m, encoding) takes back, validating every field (ORK_EFORMAT naming the
 * fault). The streams are cut for the device's N-split (the cores plans use, spec §9).
 * W4A8 weights (ORK_NPU_WEIGHTS_W4A8) likewise: a versioned blob of the K-slicing and the int4
 * bytes, the column sums recomputed and the padding and int16 bound checked at load
 * (docs/w4a8.md "Packs"). */
struct ork_npu_weights_dcomp_info {
    bool compressed;                /* encoding is DCOMP */
    uint64_t raw_bytes;             /* device bytes the same weights take raw (tiled int8) */
    uint64_t stored_bytes;          /* device bytes held: streams + raw blocks + padding */
    double bpw;                     /* stored bits per weight of the k x n weights */
    uint32_t n_blocks, n_raw_blocks;
};
void ork_npu_weights_get_dcomp_info(const struct ork_npu_weights *w,
                                    struct ork_npu_weights_dcomp_info *out);
/* Device bytes of weights of dtype, n x k, made for plans of up to max_m rows, together with the
 * plans an executor makes on them (M = 1 and, when max_m > 1, M = max_m), sliced as libork
 * slices them (page rounding included; N-slices counted for the most cores a plan may take).
 * No device needed; 0 for shapes libork cannot plan. For placing weights into IOMMU domains
 * before creating them (src/libork/estimate.c). The raw size: an upper bound for DCOMP weights
 * too, which never store more than raw plus their per-block alignment. */
uint64_t ork_npu_weights_estimate_bytes(enum ork_npu_dtype dtype, uint32_t n, uint32_t k,
                                        uint32_t max_m);
/* The same for W4A8 weights (ORK_NPU_WEIGHTS_W4A8) of n x k and their plans of 1 and max_m
 * tokens: the int4 slices take ceil32(k) ceil64(n) / 2 bytes whatever the slicing, but their
 * K-slicing depends on the codes (the int16 bound, docs/w4a8.md) and a plan's int16 partials
 * grow with it, so this is an upper bound: the most slices the rule may choose,
 * min(64, ceil(k / 480)). 0 for shapes libork cannot plan. */
uint64_t ork_npu_weights_estimate_bytes_w4a8(uint32_t n, uint32_t k, uint32_t max_m);
/* K-slices (host-summed partials, spec §1.4) of weights of dtype and reduction k made for plans
 * of up to max_m rows, as ork_npu_weights_create slices them; 0 for shapes libork cannot plan.
 * A caller compares e.g. its prefill weights' slicing with decode's (max_m = 1: one slice per
 * 8192 of K, spec §5.1). */
uint32_t ork_npu_weights_kslices(enum ork_npu_dtype dtype, uint32_t k, uint32_t max_m);

/* ---- matmul plans ----------------------------------------------------------------------- */

struct ork_npu_matmul;

enum ork_npu_matmul_flags {
    ORK_NPU_MATMUL_NO_CHAIN = 1u << 0,   /* one submit per program instead of one chained
                                          * submit (spec §8.3); for bisecting problems */
    ORK_NPU_MATMUL_NO_WARMUP = 1u << 1,  /* skip the two warm-up submits at creation that
                                          * absorb the stale-first-submit effect (spec §14.4) */
    ORK_NPU_MATMUL_ONE_JOB = 1u << 2,    /* multi-core plans: one job carrying a task range
                                          * per core (spec §9 [CAP]) instead of the default one
                                          * submit per core from the per-core workers. Honoured
                                          * only when ORK_NPU_FORM_ONE_JOB is confirmed
                                          * (ork_npu_confirmed_forms); otherwise the plan uses
                                          * the per-core form and the device logs why, once.
                                          * rocket: multi-core is several jobs in one SUBMIT
                                          * either way (§11.3) */
};

struct ork_npu_matmul_desc {
    uint32_t struct_size;           /* sizeof(struct ork_npu_matmul_desc) */
    uint32_t m;                     /* rows per run, 1..weights' max_m (runs may use fewer);
                                     * weights of max_m 1 also take more rows where their
                                     * K-slices have an M-tile for them (ORK_ERANGE if not) */
    uint32_t flags;                 /* ORK_NPU_MATMUL_* */
    uint32_t timeout_ms;            /* per submit; 0 = the device's host bound on NONBLOCK
                                     * jobs (ork_npu_opts.wait_timeout_ms), else the backend's
                                     * default (rknpu 6000 ms, rocket 500 ms) */
    uint32_t cores;                 /* NPU cores to split the columns across (spec §9 N-split):
                                     * 0 = auto: the core budget's cost model picks (sched.h);
                                     * 1 = one core (the kernel picks it); 2 or 3 = contiguous
                                     * column ranges, one submit per core from persistent
                                     * per-core workers, each >= 2 column tiles. Clamped to the
                                     * device, N and ork_npu_set_core_budget. */
};

/* Plan a matmul of up to desc->m rows on resident weights: tiles, device buffers for A, C and
 * the programs, all programs emitted and chained now (none at run time). */
int ork_npu_matmul_create(struct ork_npu_weights *w, const struct ork_npu_matmul_desc *d,
                          struct ork_npu_matmul **out);
void ork_npu_matmul_destroy(struct ork_npu_matmul *mm);

/* C[m][n] = A[m][k] . W^T, m <= the plan's m. A is dense [m][k] (int8 or fp16 bits), C dense
 * [m][n] (int32 for int8, float for fp16). Blocking. */
int ork_npu_matmul_run_i8(struct ork_npu_matmul *mm, const int8_t *a, uint32_t m, int32_t *c);
int ork_npu_matmul_run_f16(struct ork_npu_matmul *mm, const uint16_t *a, uint32_t m, float *c);

/* Float convenience: Y[m][n] from X[m][k] as floats. int8 plans (weights created with scales)
 * quantise each row of X symmetrically (ork_npu_quantize_rows_i8), run, and dequantise with
 * a_scale[row] * w_scale[col] (spec §6.5); fp16 plans round X to fp16 and run. The host scratch
 * this needs is allocated on the first call and kept by the plan. */
int ork_npu_matmul_run_f32(struct ork_npu_matmul *mm, const float *x, uint32_t m, float *y);

/* The same run in two halves: submit copies A in and queues the work; wait completes it and
 * writes C (int32_t or float per dtype). One submit in flight per plan. */
int ork_npu_matmul_submit(struct ork_npu_matmul *mm, const void *a, uint32_t m);
int ork_npu_matmul_wait(struct ork_npu_matmul *mm, void *c);

struct ork_npu_matmul_info {
    enum ork_npu_dtype dtype;
    uint32_t m, k, n;               /* caller's shape (m = plan rows) */
    uint32_t k_padded, n_padded;    /* after padding to the hardware multiples */
    uint32_t n_kslices, n_nslices;  /* K-slices (host-summed) and N-slices (<= 8192 columns) */
    uint32_t n_cores;               /* cores the columns are split across */
    uint32_t m_tile;                /* largest M-tile used (the schedule's cap, spec §5.3/§5.4) */
    uint32_t n_tasks;               /* programs per run */
    uint32_t n_submits;             /* submits per run */
    uint64_t w_stored_bytes;        /* weight bytes one pass over the plan's blocks reads from
                                     * DRAM (all cores, one M-tile): the tiled weights, or for
                                     * DCOMP weights the streams and raw blocks */
    uint64_t w_dcomp_bytes;         /* of that pass, the int8 bytes the decompressors output
                                     * (0 for raw weights; a timing model charges them at
                                     * npu_dcomp_gbps per core, <ork/twin.h>) */
    bool w4a8;                      /* W4A8 weights (ORK_NPU_WEIGHTS_W4A8): each of the m rows
                                     * runs as 2 physical int4 rows (m_tile counts tokens), the
                                     * partials are int16 (2 rows x n x 2 bytes a token and
                                     * K-slice), w_stored_bytes is the int4 bytes (k n / 2) */
};
void ork_npu_matmul_get_info(const struct ork_npu_matmul *mm, struct ork_npu_matmul_info *out);

/* ---- chains: several plans in one submit ------------------------------------------------ */

struct ork_npu_chain;

/* Precompile one submit that runs the programs of every plan back to back through the PC chain
 * (spec §8.3), e.g. a layer's Q, K and V projections. The plans must share a device and a dtype
 * (no precision change inside a chain, spec §14.4) and be single-core; each keeps working on its
 * own. The chain copies the programs and borrows the plans: destroy it first. */
int ork_npu_chain_create(struct ork_npu_matmul *const *plans, uint32_t n,
                         struct ork_npu_chain **out);
void ork_npu_chain_destroy(struct ork_npu_chain *ch);
/* Run every plan with all its rows: a[i] is plan i's A [m_i][k_i], c[i] its C [m_i][n_i]
 * (types per dtype, as for the plan's own run). One submit; blocking. */
int ork_npu_chain_run(struct ork_npu_chain *ch, const void *const *a, void *const *c);

/* ---- modelled clock (the `sim` device) ---------------------------------------------------- */

/* The simulator's own modelled time of a device (docs/sim.md "Timing model"): its model clock
 * and each core's total modelled busy time since open, in ns, plus the time the model charges
 * for an IOMMU domain switch (one device is one domain, so a caller spreading work over several
 * devices charges switches between them itself). */
#define ORK_NPU_MODEL_MAX_CORES 3
struct ork_npu_model_time {
    int64_t now_ns;                                  /* model clock */
    int64_t core_busy_ns[ORK_NPU_MODEL_MAX_CORES];   /* busy time per core (0 past n_cores) */
    uint32_t n_cores;                                /* cores modelled */
    int64_t domain_switch_ns;                        /* cost of one domain switch */
};
/* 0 and the clock, or ORK_EUNSUPPORTED on hardware backends (wall time is their clock). */
int ork_npu_model_time(struct ork_npu *npu, struct ork_npu_model_time *out);

/* ---- host-side helpers (no device needed) ------------------------------------------------- */

/* Symmetric per-output-channel int8 quantisation of W[n][k]: scales[j] = max|W[j][:]| / 127
 * (1 for an all-zero row), q = round-half-away(W / scale) clamped to [-127, 127]. */
int ork_npu_quantize_weights_i8(const float *w, uint32_t n, uint32_t k, int8_t *q, float *scales);
/* The same per row of an activation X[m][k] (one scale per row). */
int ork_npu_quantize_rows_i8(const float *x, uint32_t m, uint32_t k, int8_t *q, float *scales);
/* out[i][j] = a_scales[i] * w_scales[j] * c[i][j] (spec §6.5). */
void ork_npu_dequantize(const int32_t *c, uint32_t m, uint32_t n, const float *a_scales,
                        const float *w_scales, float *out);
/* IEEE binary16 conversions (round to nearest even; NaN/Inf preserved). */
uint16_t ork_npu_f32_to_f16(float f);
float ork_npu_f16_to_f32(uint16_t h);

/* ---- discovery (src/libork/devices.c; `ork devices`) -------------------------------------- */

/* What one backend finds on this machine. status: 0 = opened; ORK_ENOENT = absent; ORK_EACCES =
 * a node exists but cannot be opened (permission); another ORK_E* = present but unusable (e.g. a
 * driver too old); `message` then says why, naming the node. */
struct ork_npu_probe_info {
    uint32_t struct_size;       /* sizeof(struct ork_npu_probe_info) */
    char backend[16];           /* "rknpu", "rocket", "sim", "sim-rocket" */
    int status;
    char node[256];             /* the device node opened ("" for the simulator or unknown) */
    uint32_t driver_version;    /* major * 10000 + minor * 100 + patch; 0 unknown */
    uint32_t n_cores;           /* NPU cores the backend reports (0 when not opened) */
    uint32_t n_domains;         /* IOMMU domains it gives (rknpu: per submit; rocket: per fd) */
    char message[512];          /* why, when status != 0 */
    uint64_t domain_bytes;      /* bytes mappable per domain (0 when not opened) */
};
/* Open backend (one of the names above) with default options, record what it reports, close
 * it. Returns 0 when the probe ran (the outcome is in out->status), ORK_EINVAL for an unknown
 * name. sim_opts: simulator options for "sim"/"sim-rocket" (NULL: defaults). */
int ork_npu_probe(const char *backend, const void *sim_opts, struct ork_npu_probe_info *out);

#ifdef __cplusplus
}
#endif
#endif
