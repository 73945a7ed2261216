/* sim.h -- the simulator's model of the vendor rknpu KERNEL DRIVER (spec/rk3588-npu.md §8-§13)
 * and of the mainline rocket driver (§11, sim_rocket.c): one simulated device serving the rknpu
 * ioctl requests exactly as the driver would, so the rknpu backend (src/libork/kmd/kmd_rknpu.c)
 * runs unchanged on top of it, and the rocket requests per open file for the rocket backend.
 *
 * It owns: buffer objects with 32-bit IOVAs handed out top-down in per-domain windows (§13),
 * mmap offsets and host mappings, cache-sync bookkeeping (§10.4, MISSING_SYNC §14.3), SUBMIT
 * validation (§10.8, §14.5), core_mask and the subcore_task slot rules (§9), the PC walk of each
 * core's task range with trailer chaining (§8.2, §8.3), domain switches, per-job timeouts,
 * NONBLOCK completion (§8.6), ACT_RESET and the other actions (§10.6), the per-core timing
 * model (sim_timing.c), the debugfs `load` file (§12.1) and fault injection (include/ork/sim.h).
 *
 * It does NOT decode or execute programs: each task's fetched entries go to the executor
 * (sim_exec.h), which checks hazards and computes through the IOVA translation given here. */
#ifndef ORK_SIM_DRIVER_H
#define ORK_SIM_DRIVER_H

#include <stdbool.h>
#include <stdint.h>

#include <ork/sim.h>

struct ork_sim;

/* Create / destroy a simulated device (NULL opts = defaults). Destroy frees every BO. */
int ork__sim_create(const struct ork_sim_opts *opts, struct ork_sim **out);
void ork__sim_destroy(struct ork_sim *sim);

/* Serve one rknpu DRM ioctl (request numbers and structs of src/uapi/rknpu_uapi.h, §10.2/§10.3;
 * the misc-device numbers are accepted too). Returns 0 or a negative ORK_E* code with an
 * ork_errorf message (e.g. "task 3: ..."), where the kernel would return -errno. */
int ork__sim_ioctl(struct ork_sim *sim, uint32_t request, void *arg);

/* The host mapping of the BO whose MEM_MAP offset is `offset` (the sim's mmap(2)); NULL with a
 * message when no BO has that offset or `size` exceeds it. Valid until MEM_DESTROY. */
void *ork__sim_mmap(struct ork_sim *sim, uint64_t offset, uint64_t size);

/* Wait for the job that was the `seq`-th accepted SUBMIT (1-based) to finish: returns its
 * status (0, ORK_ETIMEDOUT for a hung or dropped job, or its execution error). In paced mode
 * sleeps until the modelled completion. timeout_ns < 0: the job's own timeout. */
int ork__sim_wait(struct ork_sim *sim, uint64_t seq, int64_t timeout_ns);

/* ---- the rocket driver model (sim_rocket.c, spec §11) ------------------------------------
 * Files are the model's open fds: each is its own IOMMU domain (§11.3). Requests are the
 * rocket_uapi.h numbers plus DRM GEM_CLOSE; mappings come from ork__sim_mmap with the
 * CREATE_BO offset. SUBMIT returns once the jobs are queued; PREP_BO waits for them until its
 * absolute CLOCK_MONOTONIC deadline. */
int ork__sim_rocket_file_open(struct ork_sim *sim);       /* file id >= 0, or ORK_E* */
void ork__sim_rocket_file_close(struct ork_sim *sim, int file);   /* frees its BOs */
int ork__sim_rocket_ioctl(struct ork_sim *sim, int file, uint32_t request, void *arg);
/* The weight decompressor (ORK_NPU_FORM_DCOMP) is confirmed here unless ork_sim_opts.deny_dcomp:
 * the simulator implements the format (exec_matmul.c). */
bool ork__sim_confirms_dcomp(const struct ork_sim *sim);
/* int4 x int4 -> int16 programs (ORK_NPU_FORM_W4A8) are confirmed here unless
 * ork_sim_opts.deny_w4a8: the simulator implements them (exec_i4.c). */
bool ork__sim_confirms_w4a8(const struct ork_sim *sim);
/* ork_sim_opts.confirm_one_job: the one-job multi-core form is declared confirmed here. */
bool ork__sim_confirms_one_job(const struct ork_sim *sim);

/* CLOCK_MONOTONIC in ns (the paced clock's source). */
int64_t ork__sim_real_ns(void);

/* Sequence number of the last SUBMIT accepted from the calling thread (0: none yet); read it
 * right after the ioctl to name a NONBLOCK job for ork__sim_wait. */
uint64_t ork__sim_last_seq(struct ork_sim *sim);

/* Counters for tests, tools and docs. */
struct ork_sim_counters {
    uint64_t submits;           /* accepted SUBMITs */
    uint64_t tasks;             /* tasks executed */
    uint64_t failed_jobs;       /* jobs that ended in an error or timeout */
    uint64_t resets;            /* ACT_RESET actions + soft resets after faults */
    uint64_t domain_switches;
    uint64_t syncs_to_device, syncs_from_device;
    uint64_t missing_sync;      /* MISSING_SYNC warnings (§14.3) */
    uint64_t warnings;          /* WARN-level hazards reported by the executor and the walker */
    uint64_t weight_bytes;      /* weight bytes the tasks read from DRAM (a DCOMP task: its
                                 * stream, npu-weight-decompression.md §1.4) */
    uint64_t dcomp_tasks;       /* tasks that ran on compressed weights */
    uint64_t dcomp_bytes;       /* int8 bytes their decompressors output */
    uint64_t bos, bo_bytes;     /* live BOs and their bytes (all domains) */
    uint32_t active_domain;
    int64_t now_ns;             /* model clock */
    int64_t last_job_ns;        /* modelled device time of the last job (submit -> done) */
    int64_t busy_ns[3];         /* total modelled busy time per core */
    uint64_t core_tasks[3];     /* tasks executed per core */
    uint32_t last_core_mask;    /* cores that ran the last job */
    uint32_t n_cores;           /* cores modelled */
    uint64_t domain_limit;      /* bytes mappable per domain */
};
void ork__sim_counters(struct ork_sim *sim, struct ork_sim_counters *out);

/* Current per-core load in percent over the last 1 s window (§12.1) and the exact text of the
 * debugfs `load` file; `buf` gets the NUL-terminated text. Returns the text length. */
int ork__sim_load_text(struct ork_sim *sim, char *buf, int cap);
/* Format a `load` line for `n` cores with the given percentages (§12.1, "%2.d%%," quirk). */
int ork__sim_load_format(char *buf, int cap, const int *pct, int n);
/* Parse a `load` line (either quirk form: "Core0:   %" or "Core0:  0%"); returns the number
 * of cores read (up to `max`) or ORK_EFORMAT. */
int ork__sim_load_parse(const char *text, int *pct, int max);

/* ---- timing model (sim_timing.c) ---------------------------------------------------------
 * The NPU board constants come from the twin's one table (include/ork/twin.h, docs/twin.md:
 * npu_launch_ns, npu_chain_ns, npu_bw_core, npu_bw_all, npu_mac_int8, npu_mac_fp16,
 * npu_domain_switch_ns); a device copies them into this table when it is created
 * (ork_sim_opts.twin, NULL = ork_twin_consts_default). Only what the twin does not hold lives
 * here: the MAC rates' reference clock, the LUT-load body and the debugfs load window. */

struct ork_sim_stats;
struct ork_twin_consts;

struct ork_sim_timing_table {
    double t_launch_ns;         /* npu_launch_ns: commit -> PC start -> IRQ -> waiter, per job */
    double t_chain_ns;          /* npu_chain_ns: each extra chained program in one core's range */
    double bw_core_max;         /* npu_bw_core: bytes/s one core's weight DMA can stream */
    double bw_npu_total;        /* npu_bw_all: bytes/s all streaming cores share */
    double dcomp_bps;           /* npu_dcomp_gbps * 1e9: int8 bytes/s one core's weight
                                 * decompressor outputs at ref_freq_mhz (or ork_sim_opts.dcomp_gbps) */
    double mac_int8;            /* npu_mac_int8: effective int8 MAC/s per core at ref_freq_mhz */
    double mac_fp16;            /* npu_mac_fp16: effective fp16 MAC/s per core at ref_freq_mhz */
    double ref_freq_mhz;        /* clock the MAC rates were measured at */
    double t_domain_switch_ns;  /* npu_domain_switch_ns: IOMMU domain switch (drain + reattach) */
    double t_lut_load_ns;       /* LUT-load program body (no memory traffic) */
    double load_window_ns;      /* debugfs load accounting window (§12.1) */
};

/* Fill *T from the twin constants (NULL = the twin's defaults) and the sim-only values. */
void ork__sim_timing_from_twin(const struct ork_twin_consts *c, struct ork_sim_timing_table *T);
/* The table a device runs on (fixed at create). */
const struct ork_sim_timing_table *ork__sim_timing_of(const struct ork_sim *sim);

/* Modelled time of one task on one core with table T. `first` = it starts the core's range
 * (pays launch), else it is a chained program (pays t_chain). `streaming_cores` = cores
 * streaming weights at the same time (shares bw_npu_total). */
double ork__sim_task_time_ns(const struct ork_sim_timing_table *T, const struct ork_sim_stats *st,
                             bool first, int streaming_cores, uint32_t freq_mhz);

#endif
