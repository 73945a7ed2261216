/* ork/sim.h -- public options of the ork NPU simulator.
 *
 * The simulator is a userspace model of the vendor rknpu kernel driver (device "sim") and of the
 * mainline rocket accel driver (device "sim-rocket") plus the RK3588 NPU
 * (spec/rk3588-npu.md): buffer objects with 32-bit IOVAs in per-domain windows, the task and
 * PC-chain walker, a functional executor, hazard checks, a per-core timing model, the debugfs
 * `load` file and fault injection. It is reached through the same kernel vtable as real hardware
 * (the `sim` device), so callers only ever fill these options; see docs/sim.md.
 *
 * This header holds options and the `load` text helpers only: no simulator internals, no
 * hardware registers. */
#ifndef ORK_SIM_H
#define ORK_SIM_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ork_twin_consts;         /* <ork/twin.h> */

/* How modelled time relates to wall-clock time. */
enum ork_sim_timing {
    ORK_SIM_TIMING_INSTANT = 0, /* compute, complete at once (default; fastest for tests) */
    ORK_SIM_TIMING_PACED = 1,   /* compute, and delay each completion in real time to model time */
    ORK_SIM_TIMING_ONLY = 2,    /* no arithmetic (outputs untouched): study big shapes' timing */
    ORK_SIM_TIMING_PACED_ONLY = 3, /* no arithmetic, completions delayed in real time to model
                                    * time: overlap and multi-threaded submits of big shapes */
};

/* Faults the simulator injects, so that callers' timeout and recovery paths run in CI. */
enum ork_sim_fault_kind {
    ORK_SIM_FAULT_NONE = 0,
    ORK_SIM_FAULT_HANG = 1,     /* the task never completes: the submit times out (-> ORK_ETIMEDOUT)
                                 * and the NPU stays hung until a reset action (spec §10.8, §14.5) */
    ORK_SIM_FAULT_DMA = 2,      /* the task raises DMA_READ_ERROR (spec §8.2): the job fails with
                                 * an error naming the task; the simulated kernel soft-resets */
    ORK_SIM_FAULT_DROP = 3,     /* a NONBLOCK job is accepted but never started (spec §8.6,
                                 * DISPATCH_DROP in §14.5): waiting for it times out */
    ORK_SIM_FAULT_SLOW = 4,     /* the task takes `delay_ms` more modelled time, then completes:
                                 * a job slower than the kernel's timeout or the host's bound
                                 * times out, a shorter one succeeds late */
    ORK_SIM_FAULT_WEDGE = 5,    /* a hang on a wedged NPU: the task never completes, and a
                                 * BLOCKING submit of it returns only after twice its timeout,
                                 * as measured on a board (spec §8.6: 61 s -> 122 s; §10.8 step
                                 * 4 allows up to 3x); NONBLOCK waits are bounded as for HANG */
};

struct ork_sim_fault {
    enum ork_sim_fault_kind kind;
    uint32_t submit;            /* 1-based index of the submit it hits (counted per device) */
    uint32_t task;              /* 0-based task index inside that submit (HANG, DMA, SLOW,
                                 * WEDGE) */
    uint32_t delay_ms;          /* SLOW: extra modelled time of the task */
};

#define ORK_SIM_MAX_FAULTS 4

struct ork_sim_opts {
    uint32_t struct_size;       /* sizeof(struct ork_sim_opts); 0 = take every default */
    enum ork_sim_timing timing;
    const char *load_path;      /* write the vendor debugfs `load` file (spec §12.1) here after
                                 * every job; NULL: no file (ork_sim load is still computed) */
    uint32_t n_cores;           /* 1..3; 0 = 3 (RK3588) */
    uint64_t domain_limit;      /* bytes mappable per IOMMU domain; 0 = 3900 MiB (spec §13) */
    uint32_t freq_mhz;          /* NPU clock for the timing model; 0 = 1000 (spec §1.2) */
    bool strict;                /* reproduce hardware misbehaviour where the spec says "strict" */
    struct ork_sim_fault faults[ORK_SIM_MAX_FAULTS];
    const struct ork_twin_consts *twin; /* the NPU timing constants (<ork/twin.h>: npu_launch_ns,
                                 * npu_chain_ns, npu_bw_core, npu_bw_all, npu_mac_int8/fp16,
                                 * npu_domain_switch_ns), copied at create; NULL = the twin's
                                 * defaults (ork_twin_consts_default). One table for both. */
    /* Discovery fakes (docs/sim.md "Discovery"), so the board owner's failure messages are
     * tested in CI: the sim's open fails exactly as a board's would, from the same code. */
    uint32_t drv_version;       /* GET_DRV_VERSION answer (major*10000 + minor*100 + patch);
                                 * 0 = 908 (0.9.8, spec §10.1). 907: older than 0.9.8, so
                                 * IOMMU domains other than 0 are refused (§10.3) */
    int fake_node_errno;        /* 0: the device is present. ENOENT: no device node (open fails
                                 * "no rknpu device found"); EACCES: the node exists but opening
                                 * it is denied (ORK_EACCES naming node, group and a udev rule) */
    const char *fake_node;      /* the node named by those messages; NULL = /dev/dri/card1
                                 * ("sim") or /dev/accel/accel0 ("sim-rocket") */
    bool confirm_one_job;       /* declare the one-job multi-core form (core_mask 0x7, §9 [CAP])
                                 * confirmed on this simulated device, so tests can exercise it;
                                 * default false: the sim claims nothing a board has not shown */
    bool confirm_wide_k;        /* declare the published M-tile rules for int8 K above 4096
                                 * (ORK_NPU_FORM_WIDE_K, npu-weight-decompression.md §4.3
                                 * [SRC]) confirmed on this simulated device; default false */
    bool deny_dcomp;            /* do not confirm ORK_NPU_FORM_DCOMP (the weight decompressor,
                                 * npu-weight-decompression.md §1), which the simulator
                                 * implements and confirms by default, so tests see a board
                                 * that has not shown it */
    bool deny_w4a8;             /* do not confirm ORK_NPU_FORM_W4A8 (int4 x int4 -> int16
                                 * programs, npu-weight-decompression.md §2), which the
                                 * simulator implements and confirms by default */
    double dcomp_gbps;          /* the twin's decompressor output rate per core (int8 bytes a
                                 * second / 1e9, constant npu_dcomp_gbps); 0 = the twin table's
                                 * (default or calibration) */
    bool board_wait;            /* "sim": NONBLOCK jobs are waited for as on a board, by polling
                                 * their doorbell word in host time (kmd_rknpu.c, spec §8.6),
                                 * instead of through the simulator's own wait; the outputs of
                                 * a job are written when it is submitted, so a job that
                                 * completes is seen at once and one that never does (HANG,
                                 * DROP, WEDGE) is caught by the host bound */
};

/* The vendor debugfs `load` line (spec §12.1), as the kernel's `/sys/kernel/debug/rknpu/load` and
 * the simulator's load_path file print it: "NPU load:  Core0:   %, Core1: 37%, Core2: 100%,\n".
 * Parse: per-core percentages into pct[0..max); digits may be absent (the "%2.d" quirk prints
 * nothing for 0) or present ("Core0:  0%"). Returns the number of cores read, or ORK_EFORMAT.
 * Format: writes the exact line for n cores into buf; returns its length or ORK_ENOSPC. */
int ork_sim_load_parse(const char *text, int *pct, int max);
int ork_sim_load_format(char *buf, int cap, const int *pct, int n);

#ifdef __cplusplus
}
#endif
#endif
