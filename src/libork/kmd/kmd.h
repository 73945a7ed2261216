/* kmd.h -- the kernel-driver vtable: the only way libork reaches an NPU kernel driver.
 *
 * Three backends implement it: "rknpu" (vendor DRM driver, spec/rk3588-npu.md §10), "rocket"
 * (mainline accel driver, §11) and "sim" (the rknpu backend with its ioctls served by the
 * userspace simulator in src/sim/, so the struct-filling code a board runs is the code CI runs).
 * The vtable speaks in buffers, programs and jobs; the vendor quirks (task descriptor buffers,
 * subcore_task slot indexing §9, the PC flag, rocket's one-task-per-kick model §11.3) stay inside
 * the backends. No register encoding, planning or program emission lives here.
 *
 * Threading: one ctx may be used from several threads at once (e.g. one submitting thread per
 * core); backends serialise what they must internally. */
#ifndef ORK_KMD_H
#define ORK_KMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ORK_KMD_MAX_CORES 3       /* RK3588 NPU cores (spec §1.1) */

struct ork_sim_opts;              /* <ork/sim.h>; only the "sim" backend reads it */

struct ork_kmd_opts {
    uint32_t struct_size;         /* sizeof(struct ork_kmd_opts); 0 = defaults */
    const char *node;             /* device node to open (e.g. "/dev/dri/card1"); NULL = probe */
    const struct ork_sim_opts *sim; /* "sim" only: simulator options; NULL = defaults */
};

/* Buffer flags (mapped by each backend onto its own flags, e.g. rknpu §10.4). */
enum ork_kbo_flags {
    ORK_KBO_CACHEABLE  = 1u << 0, /* CPU-cached: bo_sync TO_DEVICE after CPU writes and
                                   * FROM_DEVICE before CPU reads (§10.4, MISSING_SYNC §14.3) */
    ORK_KBO_KERNEL_MAP = 1u << 1, /* the kernel reads it (task descriptors, §8.1) */
    ORK_KBO_ZEROED     = 1u << 2, /* contents start zeroed */
};

/* One buffer object, filled by bo_create; the caller owns the struct, the backend the BO. */
struct ork_kbo {
    uint32_t handle;              /* GEM handle on the backend's fd */
    uint32_t flags;               /* ORK_KBO_* as created */
    uint64_t size;                /* bytes as requested (the kernel rounds up to pages) */
    uint32_t iova;                /* 32-bit NPU address (§1.2); valid in `domain` only */
    uint32_t domain;              /* IOMMU domain it is mapped in (§13); rocket: always 0 */
    uint64_t cookie;              /* backend private (rknpu: obj_addr from MEM_CREATE) */
    uint64_t map_offset;          /* mmap offset on the backend's fd */
    void *map;                    /* host mapping of all `size` bytes, read/write */
};

enum ork_kbo_sync {
    ORK_KBO_SYNC_TO_DEVICE   = 1, /* CPU wrote; make it visible to the NPU (rknpu MEM_SYNC 1) */
    ORK_KBO_SYNC_FROM_DEVICE = 2, /* NPU wrote; make it visible to the CPU (rknpu MEM_SYNC 2) */
    ORK_KBO_SYNC_BOTH        = 3,
};

/* One regcmd program (one rknpu_task, §8.1/§10.3; one drm_rocket_task, §11.2). */
struct ork_ktask {
    uint32_t regcmd_iova;         /* program address; 16-byte aligned (§8.3) */
    uint32_t regcfg_amount;       /* counted entries WITHOUT the 4 trailer entries (§2.3): 108 for
                                   * the matmul; the program buffer holds amount + 4 entries */
    uint32_t enable_mask;         /* block enables (§3.3): 0x0d matmul; equals the trailer's */
    uint32_t int_mask;            /* completion interrupts (§8.1): 0x300 = DPU_0 | DPU_1 */
    uint32_t op_idx;              /* free debug sequence number (never read by drivers) */
};

/* Tasks [start, start + count) of the job's task array. */
struct ork_kcore_range {
    uint32_t start;
    uint32_t count;
};

enum ork_kjob_flags {
    ORK_KJOB_NONBLOCK = 1u << 0,  /* submit returns once queued; finish with wait() (§8.6) */
    ORK_KJOB_PINGPONG = 1u << 1,  /* configure the next chained task early (§8.4); never with a
                                   * LUT load (§7). rocket ignores it (its kernel sets it). */
};

/* One submission. Inside a core's range the tasks run in order, found through each program's
 * trailer chain (§8.3) on rknpu, or kicked one by one by the kernel on rocket (§11.3). */
struct ork_kjob {
    const struct ork_ktask *tasks; /* host array; backends copy what they need during submit */
    uint32_t n_tasks;
    uint32_t core_mask;           /* bit i = core i (§9); 0 = any one core, range[0] applies */
    struct ork_kcore_range range[ORK_KMD_MAX_CORES]; /* per selected core i: its tasks */
    uint32_t flags;               /* ORK_KJOB_* */
    uint32_t timeout_ms;          /* 0 = backend default (rknpu 6000 ms as the vendor runtime
                                   * uses, §10.5; rocket's kernel fixes 500 ms, §11.3) */
    uint32_t domain;              /* IOMMU domain to run in (§13); every BO used must live there */
    /* Optional buffer lists (NULL/0 allowed): rocket uses them for implicit dependencies and for
     * wait() (§11.3); rknpu ignores them. */
    const struct ork_kbo *const *in_bos;
    uint32_t n_in_bos;
    const struct ork_kbo *const *out_bos;
    uint32_t n_out_bos;
    /* Optional output buffer of each core range (rocket): range i's kernel job lists
     * range_out[i] as its out BO, in addition to out_bos, so ranges writing disjoint buffers
     * are not ordered after each other and run on several cores at once (§11.3); wait()
     * waits for them too. NULL = out_bos only. rknpu ignores them. */
    const struct ork_kbo *range_out[ORK_KMD_MAX_CORES];
    /* Optional completion doorbell for NONBLOCK jobs on rknpu (§8.6): the output word the NPU
     * writes last (row M-1, column N-1 of the last task's C), as BO + byte offset, seeded by the
     * caller with `doorbell_sentinel` (0x7fffffff for int32) before submit. The vendor driver has
     * no wait ioctl, so on a board wait() polls that word with cache-invalidating reads; without
     * a doorbell, wait() on a board NONBLOCK job is ORK_EUNSUPPORTED. The sim ignores it. */
    const struct ork_kbo *doorbell_bo;
    uint64_t doorbell_off;
    uint32_t doorbell_sentinel;
    /* Results, written by submit (and by wait for NONBLOCK jobs). */
    uint64_t seq;                 /* backend job id */
    uint32_t task_counter;        /* tasks completed (= n_tasks run on success) */
    int64_t hw_elapse_ns;         /* device time commit -> completion, when known; else 0 */
};

enum ork_kmd_action {
    ORK_KMD_ACT_RESET = 0,        /* soft-reset the NPU (rknpu ACT_RESET, §10.6); value unused */
    ORK_KMD_ACT_GET_FREQ,         /* value <- NPU clock in MHz (rknpu GET_FREQ returns Hz) */
    ORK_KMD_ACT_GET_DRV_VERSION,  /* value <- major*10000 + minor*100 + patch (908 = 0.9.8) */
    ORK_KMD_ACT_GET_HW_VERSION,   /* value <- hardware id (0x46495245 on RK3588, §10.1) */
};

enum ork_kmd_cap {
    ORK_KMD_CAP_N_CORES = 0,      /* NPU cores usable */
    ORK_KMD_CAP_N_DOMAINS,        /* IOMMU domains (rknpu 16, rocket 1: one per fd, §13) */
    ORK_KMD_CAP_DOMAIN_BYTES,     /* bytes mappable per domain before refusal (§13) */
    ORK_KMD_CAP_PC_CHAIN,         /* 1: tasks in one core range chain through trailers (§8.3) */
    ORK_KMD_CAP_CORE_SELECT,      /* 1: core_mask chooses cores; 0: kernel schedules (rocket) */
    ORK_KMD_CAP_MAX_TASKS,        /* tasks per job (rknpu: task buffer capacity) */
    ORK_KMD_CAP_SIM,              /* 1 when the backend is the simulator */
    ORK_KMD_CAP_MULTI_JOB,        /* 1: a job with several core ranges becomes several kernel
                                   * jobs in one submit, spread over the cores by the kernel's
                                   * scheduler (rocket, §11.3); 0: core_mask selects (rknpu) */
    ORK_KMD_CAP_ONE_JOB_CONFIRMED,/* 1: the one-job multi-core form (core_mask 0x7, ranges in
                                   * subcore_task[2..4], §9 [CAP]) is confirmed on this device;
                                   * only the sim says so, and only when asked */
    ORK_KMD_CAP_DRV_VERSION,      /* driver version as major*10000 + minor*100 + patch */
    ORK_KMD_CAP_DCOMP_CONFIRMED,  /* 1: the CNA weight decompressor is confirmed on this device
                                   * (npu-weight-decompression.md); only the sim says so */
    ORK_KMD_CAP_W4A8_CONFIRMED,   /* 1: int4 x int4 -> int16 programs are confirmed on this
                                   * device (npu-weight-decompression.md §2); only the sim */
};

/* A backend's modelled device clock (docs/sim.md "Timing model"): the time a board would have
 * spent, as opposed to the host's wall clock. Filled in one consistent snapshot. */
struct ork_kmd_model_time {
    int64_t now_ns;               /* model clock: the modelled completion of the latest job */
    uint32_t n_cores;             /* cores modelled (entries of core_busy_ns that are valid) */
    int64_t core_busy_ns[ORK_KMD_MAX_CORES]; /* total modelled busy time per core */
    int64_t domain_switch_ns;     /* modelled cost of one IOMMU domain switch (§13) */
};

struct ork_kmd_ops {
    const char *name;             /* "rknpu", "rocket", "sim", "sim-rocket" */

    /* Find and open the device, reset it where the driver allows (§10.7 step 1). On failure
     * returns ORK_ENOENT with a message such as "no rocket device found". */
    int (*open)(const struct ork_kmd_opts *o, void **ctx);
    /* Release the device. Destroy BOs first: ones still alive are freed with the fd (and the
     * whole simulator), but their host mappings are not unmapped on a board. ctx may be NULL. */
    void (*close)(void *ctx);

    /* Allocate, map into the NPU IOMMU domain and mmap for the CPU. */
    int (*bo_create)(void *ctx, uint64_t size, uint32_t flags, uint32_t domain,
                     struct ork_kbo *out);
    /* Unmap and free; zeroes *bo. Safe on a zeroed struct. */
    void (*bo_destroy)(void *ctx, struct ork_kbo *bo);
    /* (optional) Cache maintenance over [off, off + size) of a CACHEABLE BO.
     * NULL: the backend is coherent; callers skip the call. */
    int (*bo_sync)(void *ctx, const struct ork_kbo *bo, uint64_t off, uint64_t size,
                   enum ork_kbo_sync dir);

    /* Submit a job. Blocking jobs return after completion (ORK_ETIMEDOUT after the timeout,
     * ORK_EDEVICE/ORK_EFAULT/ORK_EHAZARD with a message naming the task on failure); NONBLOCK
     * jobs return once queued. Fills job->seq (and task_counter/hw_elapse_ns when finished). */
    int (*submit)(void *ctx, struct ork_kjob *job);
    /* Wait for a submitted job (returns 0 at once for a finished blocking job).
     * timeout_ns < 0 = the job's own timeout. */
    int (*wait)(void *ctx, struct ork_kjob *job, int64_t timeout_ns);

    /* (optional) Driver actions. NULL: none supported (callers get ORK_EUNSUPPORTED). */
    int (*action)(void *ctx, enum ork_kmd_action act, uint32_t *value);
    /* (optional) Capabilities. NULL: no caps known (callers assume 1 core, 1 domain, no
     * chaining). Unknown cap: ORK_EUNSUPPORTED. */
    int (*query)(void *ctx, enum ork_kmd_cap cap, uint64_t *val);
    /* (optional) The modelled device clock. NULL: the backend has none (a board runs in real
     * time only); ork_npu_model_time then returns ORK_EUNSUPPORTED. The sim fills it from its
     * timing model (src/sim/sim_timing.c). */
    int (*model_time)(void *ctx, struct ork_kmd_model_time *out);
};

extern const struct ork_kmd_ops ork__kmd_rknpu_ops;
extern const struct ork_kmd_ops ork__kmd_rocket_ops;
extern const struct ork_kmd_ops ork__kmd_sim_ops;
extern const struct ork_kmd_ops ork__kmd_sim_rocket_ops;   /* the rocket backend over the sim */

/* Backend by name: "rknpu", "rocket", "sim", "sim-rocket"; NULL or "auto" = the first of rknpu, rocket that
 * opens is chosen by ork__kmd_open instead. ORK_ENOENT for an unknown name. */
int ork__kmd_select(const char *name, const struct ork_kmd_ops **out);
/* Select and open. "auto"/NULL tries rknpu then rocket (never the sim). */
int ork__kmd_open(const char *name, const struct ork_kmd_opts *o,
                  const struct ork_kmd_ops **ops, void **ctx);

/* The simulator behind a "sim" ctx (NULL for other backends), for tests that read its stats
 * and load figures through src/sim/sim.h. libork itself never calls it: what it needs of the
 * simulator comes through the vtable (query, model_time). Both sim backends ("sim" and
 * "sim-rocket") answer. */
struct ork_sim;
struct ork_sim *ork__kmd_sim_get(const struct ork_kmd_ops *ops, void *ctx);

#endif
