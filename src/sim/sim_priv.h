/* sim_priv.h -- private state of the simulated rknpu device, shared by sim_dev.c (device, BOs,
 * domains, memory ioctls, actions, load file) and sim_submit.c (SUBMIT and the task walker).
 * Nothing outside src/sim/sim_*.c includes it. */
#ifndef ORK_SIM_PRIV_H
#define ORK_SIM_PRIV_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "sim.h"
#include "sim_exec.h"

#define SIM_PAGE 4096u
/* IOVAs are handed out top-down from 0xffffe000 at page granularity (spec §13): the window's
 * exclusive top is therefore 0xfffff000. */
#define SIM_IOVA_TOP 0xfffff000u
/* Lowest IOVA handed out: keeps 0 (ADDR_ZERO, §14.3) and the first MiB unmapped [INF]. */
#define SIM_IOVA_FLOOR 0x00100000u
#define SIM_MAX_DOMAINS 16u            /* RKNPU_MAX_IOMMU_DOMAIN_NUM (§13) */
#define SIM_DEFAULT_DOMAIN_LIMIT (3900ull << 20) /* the project's per-domain guard (§13) */
#define SIM_MAX_CORES 3
#define SIM_JOB_RING 256               /* finished jobs remembered for wait() */
/* Busy-time accounting for `load` (§12.1): per core, busy ns in 1 ms buckets; 1024 buckets
 * cover the 1 s window whatever the job count. */
#define SIM_LOAD_BUCKET_NS 1000000ll
#define SIM_LOAD_BUCKETS 1024
#define SIM_DEFAULT_FREQ_MHZ 1000u     /* vendor kernel NPU clock (§1.2) */
#define SIM_OBJ_ADDR_BASE 0xffffff8000000000ull /* fake kernel cookies: base + handle * page */
#define SIM_MMAP_OFF_SHIFT 32          /* fake mmap offsets: handle << 32 */

struct sim_bo {
    uint32_t handle;
    uint32_t flags;                    /* rknpu MEM_CREATE flags (§10.4) */
    uint32_t domain;
    uint32_t iova;
    uint64_t size;                     /* page-rounded */
    uint64_t obj_addr;
    uint64_t mmap_off;
    uint8_t *dev;                      /* what the NPU reads and writes */
    uint8_t *cpu;                      /* what mmap returns: == dev unless strict + CACHEABLE */
    /* rocket (sim_rocket.c): the model time the jobs using it end, as the kernel's implicit
     * dependencies order them (§11.3); -1 / 0 = none */
    bool rocket;                       /* created by a rocket CREATE_BO on file `domain` */
    int64_t r_read_until;              /* latest end of a job listing it as an input */
    int64_t r_write_until;             /* latest end of a job listing it as an output */
};

struct sim_domain {
    struct sim_bo **bos;               /* sorted by iova */
    uint32_t n, cap;
    uint64_t mapped;                   /* bytes mapped */
};

struct sim_job {
    uint64_t seq;                      /* 0 = free slot */
    int64_t done_ns;                   /* model time it finishes; INT64_MAX = never */
    int64_t timeout_ns;
    int status;                        /* 0 or ORK_E*; ETIMEDOUT is decided at wait */
    uint32_t task_counter;
    char msg[320];
};

struct sim_bucket {
    int64_t index;                     /* absolute bucket number (time / bucket), -1 = empty */
    int64_t busy;                      /* busy ns inside it */
};

struct sim_core {
    int64_t busy_until;                /* model time */
    bool hung;                         /* a hang fault left it wedged until ACT_RESET */
    struct sim_bucket load[SIM_LOAD_BUCKETS];
    int64_t busy_total;
    uint64_t tasks;
    int last_prec;                     /* -1: none since reset (STALE_FIRST_SUBMIT, §14.4) */
};

struct ork_sim {
    struct ork_sim_opts o;
    char *load_path;
    pthread_mutex_t lock;
    struct sim_bo **handles;           /* index = GEM handle; [0] unused */
    uint32_t n_handles;
    struct sim_domain dom[SIM_MAX_DOMAINS];
    uint32_t active_domain;
    struct sim_core core[SIM_MAX_CORES];
    int64_t now_ns;                    /* model clock */
    int64_t epoch_real_ns;             /* CLOCK_MONOTONIC at create (paced mode) */
    uint64_t n_accepted;               /* accepted SUBMITs = last seq */
    struct sim_job jobs[SIM_JOB_RING];
    bool reset_seen;
    bool warned_no_reset;
    struct ork_sim_regfile *rf;        /* executor scratch, used under `lock` */
    struct ork_sim_counters c;
    struct ork_sim_timing_table timing; /* the twin's NPU constants, fixed at create */
    char load_text[160];               /* last text written to load_path */
    bool rocket_file[SIM_MAX_DOMAINS]; /* rocket files open: file f is IOMMU domain f (§11.3) */
    uint64_t rocket_jobs;              /* rocket jobs accepted */
};

/* sim_dev.c */
int64_t ork__sim_now(struct ork_sim *sim);              /* model clock (advances in paced) */
struct sim_bo *ork__sim_bo_by_obj(struct ork_sim *sim, uint64_t obj_addr);
/* BO of `domain` containing [iova, iova + len), or NULL. */
struct sim_bo *ork__sim_bo_find(struct ork_sim *sim, uint32_t domain, uint32_t iova, uint64_t len);
/* Any domain's BO containing iova (for WRONG_DOMAIN messages), or NULL. */
struct sim_bo *ork__sim_bo_any(struct ork_sim *sim, uint32_t iova);
void ork__sim_busy_add(struct ork_sim *sim, int core, int64_t start, int64_t end);
void ork__sim_load_update(struct ork_sim *sim);          /* rewrite load_path if changed */
void ork__sim_soft_reset(struct ork_sim *sim);
/* A new BO of `size` bytes (page-rounded) in `domain` with rknpu MEM_CREATE `flags`; DOMAIN_FULL
 * and IOVA exhaustion refused with a message. Free with ork__sim_bo_free. */
int ork__sim_bo_new(struct ork_sim *sim, uint32_t domain, uint64_t size, uint32_t flags,
                    struct sim_bo **out);
void ork__sim_bo_free(struct ork_sim *sim, struct sim_bo *bo);
struct sim_bo *ork__sim_bo_by_handle(struct ork_sim *sim, uint32_t handle);

/* sim_submit.c */
const struct ork_sim_fault *ork__sim_fault_for(const struct ork_sim *sim, uint64_t seq);
void ork__sim_sleep_until(struct ork_sim *sim, int64_t model_ns);
int ork__sim_submit(struct ork_sim *sim, void *arg);     /* RKNPU_SUBMIT */
int ork__sim_set_domain(struct ork_sim *sim, uint32_t domain); /* switch, charging the cost */

#endif
