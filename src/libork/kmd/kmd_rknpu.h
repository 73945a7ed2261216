/* kmd_rknpu.h -- the rknpu backend's ioctl transport. The backend fills the vendor structs
 * (rknpu_uapi.h) and hands each request to a transport: a real device fd (ioctl(2), mmap(2)) or
 * the simulator (src/sim/sim.h serves the same requests), so `--device sim` runs the exact
 * struct-filling code a board runs. Only kmd_rknpu.c and kmd_sim.c include this. */
#ifndef ORK_KMD_RKNPU_H
#define ORK_KMD_RKNPU_H

#include <stdint.h>

#include "kmd.h"

struct ork_rknpu_transport {
    void *t;
    const char *name;                    /* backend name reported by the ops ("rknpu", "sim") */
    /* One request (rknpu_uapi.h numbers): 0, or a negative ORK_E* with a recorded message. */
    int (*ioctl)(void *t, uint32_t request, void *arg);
    /* Host mapping of `size` bytes at MEM_MAP `offset`; NULL with a message on failure. */
    void *(*mmap)(void *t, uint64_t offset, uint64_t size);
    void (*munmap)(void *t, void *p, uint64_t size);
    /* (optional) Wait for the seq-th accepted SUBMIT of this transport. NULL (a board): the
     * driver has no wait ioctl and NONBLOCK jobs are waited for through their doorbell. */
    int (*wait)(void *t, uint64_t seq, int64_t timeout_ns);
    /* (optional, with wait) Sequence number of the last SUBMIT this thread had accepted, read
     * right after issuing one to name the job for wait(). */
    uint64_t (*last_seq)(void *t);
    void (*close)(void *t);              /* release the transport (fd or simulator) */
};

/* Open the rknpu backend over `tr` (takes ownership: tr->close runs on failure and in close). */
int ork__kmd_rknpu_open_transport(const struct ork_rknpu_transport *tr, uint32_t n_cores,
                                  void **ctx);
/* The transport's `t` behind an rknpu-backend ctx. */
void *ork__kmd_rknpu_transport_ctx(void *ctx);

/* The backend's vtable slots, shared by the "rknpu" and "sim" ops tables. */
void ork__kmd_rknpu_close(void *ctx);
int ork__kmd_rknpu_bo_create(void *ctx, uint64_t size, uint32_t flags, uint32_t domain,
                             struct ork_kbo *out);
void ork__kmd_rknpu_bo_destroy(void *ctx, struct ork_kbo *bo);
int ork__kmd_rknpu_bo_sync(void *ctx, const struct ork_kbo *bo, uint64_t off, uint64_t size,
                           enum ork_kbo_sync dir);
int ork__kmd_rknpu_submit(void *ctx, struct ork_kjob *job);
int ork__kmd_rknpu_wait(void *ctx, struct ork_kjob *job, int64_t timeout_ns);
int ork__kmd_rknpu_action(void *ctx, enum ork_kmd_action act, uint32_t *value);
int ork__kmd_rknpu_query(void *ctx, enum ork_kmd_cap cap, uint64_t *val);

/* Fill the vendor SUBMIT struct for `job` whose tasks start at descriptor `base` of the task
 * buffer `task_obj_addr` (exposed for unit tests of the §9 slot rules). */
struct rknpu_submit;
int ork__kmd_rknpu_fill_submit(const struct ork_kjob *job, uint32_t base, uint64_t task_obj_addr,
                               uint32_t n_cores, struct rknpu_submit *s);

#endif
