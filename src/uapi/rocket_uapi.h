/* rocket_uapi.h -- the mainline `rocket` accel driver's userspace interface (Linux 6.18+),
 * written from spec/rk3588-npu.md §11.1-§11.2: request numbers and structs, with compile-time
 * size and offset checks. Used by the rocket backend (src/libork/kmd/kmd_rocket.c) and its unit
 * tests; holds no logic. Lives in src/uapi/ beside rknpu_uapi.h, whose ioctl encoding it reuses. */
#ifndef ORK_ROCKET_UAPI_H
#define ORK_ROCKET_UAPI_H

#include <stddef.h>
#include <stdint.h>

#include "rknpu_uapi.h"   /* ORK_IOC encoding, ORK_UAPI_CHECK, DRM version struct */

enum rocket_cmd {
    ROCKET_CMD_CREATE_BO = 0,
    ROCKET_CMD_SUBMIT = 1,
    ROCKET_CMD_PREP_BO = 2,
    ROCKET_CMD_FINI_BO = 3,
};

struct drm_rocket_create_bo {
    uint32_t size;           /* in: bytes */
    uint32_t handle;         /* out: GEM handle */
    uint64_t dma_address;    /* out: NPU address, private to this fd */
    uint64_t offset;         /* out: mmap offset on the same fd */
};

struct drm_rocket_prep_bo {
    uint32_t handle;         /* begin CPU access: wait for jobs using it, sync for the CPU */
    uint32_t reserved;       /* must be 0 */
    int64_t timeout_ns;
};

struct drm_rocket_fini_bo {
    uint32_t handle;         /* end CPU access: sync for the NPU */
    uint32_t reserved;       /* must be 0 */
};

struct drm_rocket_task {
    uint32_t regcmd;         /* NPU address of the program */
    uint32_t regcmd_count;   /* 64-bit entries, trailer included (112 for a matmul, §11.3) */
};

struct drm_rocket_job {
    uint64_t tasks;          /* user pointer to drm_rocket_task[] */
    uint64_t in_bo_handles;  /* user pointer to u32[] */
    uint64_t out_bo_handles; /* user pointer to u32[] */
    uint32_t task_count;
    uint32_t task_struct_size;
    uint32_t in_bo_handle_count;
    uint32_t out_bo_handle_count;
};

struct drm_rocket_submit {
    uint64_t jobs;           /* user pointer to drm_rocket_job[] */
    uint32_t job_count;
    uint32_t job_struct_size;
    uint64_t reserved;       /* must be 0 */
};

_Static_assert(sizeof(struct drm_rocket_create_bo) == 24, "drm_rocket_create_bo is 24 bytes");
ORK_UAPI_CHECK(drm_rocket_create_bo, size, 0);
ORK_UAPI_CHECK(drm_rocket_create_bo, handle, 4);
ORK_UAPI_CHECK(drm_rocket_create_bo, dma_address, 8);
ORK_UAPI_CHECK(drm_rocket_create_bo, offset, 16);
_Static_assert(sizeof(struct drm_rocket_prep_bo) == 16, "drm_rocket_prep_bo is 16 bytes");
ORK_UAPI_CHECK(drm_rocket_prep_bo, handle, 0);
ORK_UAPI_CHECK(drm_rocket_prep_bo, reserved, 4);
ORK_UAPI_CHECK(drm_rocket_prep_bo, timeout_ns, 8);
_Static_assert(sizeof(struct drm_rocket_fini_bo) == 8, "drm_rocket_fini_bo is 8 bytes");
ORK_UAPI_CHECK(drm_rocket_fini_bo, handle, 0);
ORK_UAPI_CHECK(drm_rocket_fini_bo, reserved, 4);
_Static_assert(sizeof(struct drm_rocket_task) == 8, "drm_rocket_task is 8 bytes");
ORK_UAPI_CHECK(drm_rocket_task, regcmd, 0);
ORK_UAPI_CHECK(drm_rocket_task, regcmd_count, 4);
_Static_assert(sizeof(struct drm_rocket_job) == 40, "drm_rocket_job is 40 bytes");
ORK_UAPI_CHECK(drm_rocket_job, tasks, 0);
ORK_UAPI_CHECK(drm_rocket_job, in_bo_handles, 8);
ORK_UAPI_CHECK(drm_rocket_job, out_bo_handles, 16);
ORK_UAPI_CHECK(drm_rocket_job, task_count, 24);
ORK_UAPI_CHECK(drm_rocket_job, task_struct_size, 28);
ORK_UAPI_CHECK(drm_rocket_job, in_bo_handle_count, 32);
ORK_UAPI_CHECK(drm_rocket_job, out_bo_handle_count, 36);
_Static_assert(sizeof(struct drm_rocket_submit) == 24, "drm_rocket_submit is 24 bytes");
ORK_UAPI_CHECK(drm_rocket_submit, jobs, 0);
ORK_UAPI_CHECK(drm_rocket_submit, job_count, 8);
ORK_UAPI_CHECK(drm_rocket_submit, job_struct_size, 12);
ORK_UAPI_CHECK(drm_rocket_submit, reserved, 16);

/* Requests (§11.1): CREATE_BO is _IOWR, the others _IOW. */
#define DRM_IOCTL_ROCKET_CREATE_BO \
    ORK_IOC(ORK_IOC_DIR_READWRITE, ORK_DRM_IOCTL_TYPE, ORK_DRM_COMMAND_BASE + ROCKET_CMD_CREATE_BO, \
            sizeof(struct drm_rocket_create_bo))
#define DRM_IOCTL_ROCKET_SUBMIT \
    ORK_IOC(ORK_IOC_DIR_WRITE, ORK_DRM_IOCTL_TYPE, ORK_DRM_COMMAND_BASE + ROCKET_CMD_SUBMIT, \
            sizeof(struct drm_rocket_submit))
#define DRM_IOCTL_ROCKET_PREP_BO \
    ORK_IOC(ORK_IOC_DIR_WRITE, ORK_DRM_IOCTL_TYPE, ORK_DRM_COMMAND_BASE + ROCKET_CMD_PREP_BO, \
            sizeof(struct drm_rocket_prep_bo))
#define DRM_IOCTL_ROCKET_FINI_BO \
    ORK_IOC(ORK_IOC_DIR_WRITE, ORK_DRM_IOCTL_TYPE, ORK_DRM_COMMAND_BASE + ROCKET_CMD_FINI_BO, \
            sizeof(struct drm_rocket_fini_bo))
_Static_assert(DRM_IOCTL_ROCKET_CREATE_BO == 0xc0186440u, "§11.1 CREATE_BO code");
_Static_assert(DRM_IOCTL_ROCKET_SUBMIT == 0x40186441u, "§11.1 SUBMIT code");
_Static_assert(DRM_IOCTL_ROCKET_PREP_BO == 0x40106442u, "§11.1 PREP_BO code");
_Static_assert(DRM_IOCTL_ROCKET_FINI_BO == 0x40086443u, "§11.1 FINI_BO code");

/* GEM objects are released with the generic DRM_IOCTL_GEM_CLOSE: _IOW('d', 0x09,
 * struct drm_gem_close { u32 handle; u32 pad; }) (standard Linux DRM uapi). */
struct ork_drm_gem_close {
    uint32_t handle;
    uint32_t pad;
};
_Static_assert(sizeof(struct ork_drm_gem_close) == 8, "drm_gem_close is 8 bytes");
#define ORK_DRM_IOCTL_GEM_CLOSE \
    ORK_IOC(ORK_IOC_DIR_WRITE, ORK_DRM_IOCTL_TYPE, 0x09, sizeof(struct ork_drm_gem_close))
_Static_assert(ORK_DRM_IOCTL_GEM_CLOSE == 0x40086409u, "DRM_IOCTL_GEM_CLOSE code");

#define ROCKET_DRIVER_NAME       "rocket"
#define ROCKET_JOB_TIMEOUT_MS    500u   /* kernel job timeout; then the core is reset (§11.3) */
#define ROCKET_ACCEL_NODE_PREFIX "/dev/accel/accel"   /* §11.1 */
/* PC REGISTER_AMOUNTS the kernel writes for a task: (regcmd_count + 1) / 2 - 1 (§11.3), i.e. it
 * fetches 2 * (amount + 1) entries; regcmd_count must therefore include the 4 trailer entries
 * (112 for a 108-write matmul), or the OPERATION_ENABLE trailer is never fetched
 * (ROCKET_COUNT_SHORT, §14.1). */
#define ROCKET_PC_AMOUNT(count)  (((count) + 1u) / 2u - 1u)
#define ROCKET_TRAILER_ENTRIES   4u
/* The IRQ handler accepts only completions whose raw status has DPU_0 or DPU_1 (§11.3): a
 * program whose block enable lacks the DPU (bit 3, §3.3) never completes (ROCKET_NO_DPU,
 * §14.5). */
#define ROCKET_ENABLE_DPU        (1u << 3)

#endif
