/* kmd_rocket.h -- the rocket backend's transport and internals. Like the rknpu backend
 * (kmd_rknpu.h), the rocket backend fills the mainline uapi structs (rocket_uapi.h) and hands
 * each request to a transport: device fds on /dev/accel/accelN (ioctl(2), mmap(2)) or the
 * simulator's rocket driver model (src/sim/sim_rocket.c, through kmd_sim.c), so the
 * "sim-rocket" device runs the exact struct-filling code a board runs. Only kmd_rocket.c,
 * kmd_sim.c and unit tests include this. */
#ifndef ORK_KMD_ROCKET_H
#define ORK_KMD_ROCKET_H

#include <stdint.h>

#include "kmd.h"
#include "uapi/rocket_uapi.h"

/* Files (open fds) per backend ctx: each is its own IOMMU domain on rocket (§11.3, §13), so a
 * ctx serves domains 0..ROCKET_MAX_FILES-1 with one file each; the same bound as rknpu's 16. */
#define ROCKET_MAX_FILES 16u

struct ork_rocket_transport {
    void *t;
    const char *name;                    /* backend name reported by the ops ("rocket", "sim-rocket") */
    /* Open one more file on the device (a new fd: a new IOMMU domain and address space,
     * §11.3); returns its id >= 0 or a negative ORK_E* with a recorded message. */
    int (*file_open)(void *t);
    void (*file_close)(void *t, int file);
    /* One request on a file (rocket_uapi.h numbers, GEM_CLOSE): 0 or a negative ORK_E*. */
    int (*ioctl)(void *t, int file, uint32_t request, void *arg);
    /* Host mapping of `size` bytes at CREATE_BO `offset` on that file; NULL with a message. */
    void *(*mmap)(void *t, int file, uint64_t offset, uint64_t size);
    void (*munmap)(void *t, void *p, uint64_t size);
    /* (optional) Driver actions the transport answers itself (the sim's reset and versions);
     * NULL: a board, where rocket has no action ioctl. */
    int (*action)(void *t, enum ork_kmd_action act, uint32_t *value);
    void (*close)(void *t);              /* release the transport (all files) */
};

/* Open the rocket backend over `tr` (takes ownership: tr->close runs on failure and in close).
 * The file of domain 0 is opened now, the others on first use. */
int ork__kmd_rocket_open_transport(const struct ork_rocket_transport *tr, void **ctx);
/* The transport's `t` behind a rocket-backend ctx. */
void *ork__kmd_rocket_transport_ctx(void *ctx);

/* The backend's vtable slots, shared by the "rocket" and "sim-rocket" ops tables. */
void ork__kmd_rocket_close(void *ctx);
int ork__kmd_rocket_bo_create(void *ctx, uint64_t size, uint32_t flags, uint32_t domain,
                              struct ork_kbo *out);
void ork__kmd_rocket_bo_destroy(void *ctx, struct ork_kbo *bo);
int ork__kmd_rocket_bo_sync(void *ctx, const struct ork_kbo *bo, uint64_t off, uint64_t size,
                            enum ork_kbo_sync dir);
int ork__kmd_rocket_submit(void *ctx, struct ork_kjob *job);
int ork__kmd_rocket_wait(void *ctx, struct ork_kjob *job, int64_t timeout_ns);
int ork__kmd_rocket_action(void *ctx, enum ork_kmd_action act, uint32_t *value);
int ork__kmd_rocket_query(void *ctx, enum ork_kmd_cap cap, uint64_t *val);

/* Translate `job` into rocket structs (§11.2, §11.3): tasks[i] = {regcmd_iova, amount + 4}
 * (the trailer counted, ROCKET_COUNT_SHORT §14.1); one drm_rocket_job per selected core range
 * (core_mask 0 = range[0]) in jobs[0..*n_jobs), each with the job's in and out BO handle lists
 * (the kernel orders jobs by them, §11.3); in_h/out_h receive the handles (n_in_bos /
 * n_out_bos; with range_out, out_h needs (n_out_bos + 1) * (ORK_KMD_MAX_CORES + 1) entries:
 * each such range's job lists the shared outputs plus its own buffer). Refuses a task whose
 * enable mask lacks the DPU (ROCKET_NO_DPU, §14.5). */
int ork__kmd_rocket_fill(const struct ork_kjob *job, struct drm_rocket_task *tasks,
                         struct drm_rocket_job *jobs, uint32_t *n_jobs, uint32_t *in_h,
                         uint32_t *out_h);

/* The absolute CLOCK_MONOTONIC deadline PREP_BO takes for a wait of `timeout_ns` from now
 * (mainline converts timeout_ns with drm_timeout_abs_to_jiffies: an absolute time, §11.2). */
int64_t ork__kmd_rocket_deadline(int64_t timeout_ns);

#endif
