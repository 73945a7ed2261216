/* rknpu_uapi.h -- the vendor rknpu driver's userspace interface (driver 0.9.8), written from
 * spec/rk3588-npu.md §10.2-§10.6: ioctl request numbers, the six ioctl structs, task descriptors,
 * memory flags, job flags and action ids. Layouts are checked at compile time against the
 * spec's offset tables. Shared by the rknpu backend (src/libork/kmd/kmd_rknpu.c, which fills the
 * structs) and the simulator (src/sim/, which serves the same requests), so it lives in src/uapi/
 * below both (included as "uapi/rknpu_uapi.h"); it holds no logic. */
#ifndef ORK_RKNPU_UAPI_H
#define ORK_RKNPU_UAPI_H

#include <stddef.h>
#include <stdint.h>

/* ioctl request encoding (spec §10.2): (dir << 30) | (size << 16) | (type << 8) | nr. */
#define ORK_IOC_DIR_WRITE     1u   /* _IOW: userspace -> kernel */
#define ORK_IOC_DIR_READWRITE 3u   /* _IOWR */
#define ORK_IOC(dir, type, nr, size) \
    ((uint32_t)(((uint32_t)(dir) << 30) | ((uint32_t)(size) << 16) | ((uint32_t)(type) << 8) | (uint32_t)(nr)))
#define ORK_IOC_NR(req)   ((uint32_t)(req) & 0xffu)
#define ORK_IOC_TYPE(req) (((uint32_t)(req) >> 8) & 0xffu)
#define ORK_IOC_SIZE(req) (((uint32_t)(req) >> 16) & 0x3fffu)
#define ORK_IOC_DIR(req)  ((uint32_t)(req) >> 30)

#define ORK_DRM_IOCTL_TYPE   0x64u /* 'd' */
#define ORK_DRM_COMMAND_BASE 0x40u /* driver-private DRM ioctls start at nr 0x40 (§10.2) */
#define RKNPU_MISC_IOCTL_TYPE 0x72u /* 'r': misc-device variant (§10.2) */

/* Command numbers n (§10.2). */
enum rknpu_cmd {
    RKNPU_CMD_ACTION = 0,
    RKNPU_CMD_SUBMIT = 1,
    RKNPU_CMD_MEM_CREATE = 2,
    RKNPU_CMD_MEM_MAP = 3,
    RKNPU_CMD_MEM_DESTROY = 4,
    RKNPU_CMD_MEM_SYNC = 5,
};

/* §10.3 structs (exact field order; naturally aligned; no implicit padding). */
struct rknpu_action {
    uint32_t flags;          /* action id (§10.6) */
    uint32_t value;          /* argument or result */
};

struct rknpu_subcore_task {
    uint32_t task_start;
    uint32_t task_number;
};

#define RKNPU_MAX_SUBCORE_TASKS 5   /* subcore_task[5] (§10.3, indexing rules §9) */

struct rknpu_submit {
    uint32_t flags;          /* job flags (§10.5) */
    uint32_t timeout;        /* ms */
    uint32_t task_start;
    uint32_t task_number;
    uint32_t task_counter;   /* out: completed tasks */
    int32_t priority;
    uint64_t task_obj_addr;  /* obj_addr of the task buffer */
    uint32_t iommu_domain_id;
    uint32_t reserved;
    uint64_t task_base_addr;
    int64_t hw_elapse_time;  /* out: commit -> IRQ (µs likely, §10.3 [INF]) */
    uint32_t core_mask;
    int32_t fence_fd;        /* -1 when unused */
    struct rknpu_subcore_task subcore_task[RKNPU_MAX_SUBCORE_TASKS];
};

struct rknpu_mem_create {
    uint32_t handle;         /* out */
    uint32_t flags;          /* §10.4 */
    uint64_t size;
    uint64_t obj_addr;       /* out: kernel cookie */
    uint64_t dma_addr;       /* out: IOVA (32-bit value) */
    uint64_t sram_size;
    int32_t iommu_domain_id;
    uint32_t core_mask;
};

struct rknpu_mem_map {
    uint32_t handle;
    uint32_t reserved;
    uint64_t offset;         /* out: mmap offset on the same fd */
};

struct rknpu_mem_destroy {
    uint32_t handle;
    uint32_t reserved;
    uint64_t obj_addr;
};

struct rknpu_mem_sync {
    uint32_t flags;          /* RKNPU_MEM_SYNC_* */
    uint32_t reserved;
    uint64_t obj_addr;
    uint64_t offset;
    uint64_t size;
};

/* Task descriptor in the task buffer (40 bytes, packed; §10.3). */
struct rknpu_task {
    uint32_t flags;
    uint32_t op_idx;
    uint32_t enable_mask;
    uint32_t int_mask;
    uint32_t int_clear;
    uint32_t int_status;
    uint32_t regcfg_amount;
    uint32_t regcfg_offset;
    uint64_t regcmd_addr;
} __attribute__((packed));

#define ORK_UAPI_CHECK(type, field, off) \
    _Static_assert(offsetof(struct type, field) == (off), #type "." #field " at offset " #off)

_Static_assert(sizeof(struct rknpu_action) == 8, "rknpu_action is 8 bytes");
ORK_UAPI_CHECK(rknpu_action, flags, 0);
ORK_UAPI_CHECK(rknpu_action, value, 4);

_Static_assert(sizeof(struct rknpu_subcore_task) == 8, "rknpu_subcore_task is 8 bytes");
_Static_assert(sizeof(struct rknpu_submit) == 104, "rknpu_submit is 104 bytes");
ORK_UAPI_CHECK(rknpu_submit, flags, 0);
ORK_UAPI_CHECK(rknpu_submit, timeout, 4);
ORK_UAPI_CHECK(rknpu_submit, task_start, 8);
ORK_UAPI_CHECK(rknpu_submit, task_number, 12);
ORK_UAPI_CHECK(rknpu_submit, task_counter, 16);
ORK_UAPI_CHECK(rknpu_submit, priority, 20);
ORK_UAPI_CHECK(rknpu_submit, task_obj_addr, 24);
ORK_UAPI_CHECK(rknpu_submit, iommu_domain_id, 32);
ORK_UAPI_CHECK(rknpu_submit, reserved, 36);
ORK_UAPI_CHECK(rknpu_submit, task_base_addr, 40);
ORK_UAPI_CHECK(rknpu_submit, hw_elapse_time, 48);
ORK_UAPI_CHECK(rknpu_submit, core_mask, 56);
ORK_UAPI_CHECK(rknpu_submit, fence_fd, 60);
ORK_UAPI_CHECK(rknpu_submit, subcore_task, 64);

_Static_assert(sizeof(struct rknpu_mem_create) == 48, "rknpu_mem_create is 48 bytes");
ORK_UAPI_CHECK(rknpu_mem_create, handle, 0);
ORK_UAPI_CHECK(rknpu_mem_create, flags, 4);
ORK_UAPI_CHECK(rknpu_mem_create, size, 8);
ORK_UAPI_CHECK(rknpu_mem_create, obj_addr, 16);
ORK_UAPI_CHECK(rknpu_mem_create, dma_addr, 24);
ORK_UAPI_CHECK(rknpu_mem_create, sram_size, 32);
ORK_UAPI_CHECK(rknpu_mem_create, iommu_domain_id, 40);
ORK_UAPI_CHECK(rknpu_mem_create, core_mask, 44);

_Static_assert(sizeof(struct rknpu_mem_map) == 16, "rknpu_mem_map is 16 bytes");
ORK_UAPI_CHECK(rknpu_mem_map, handle, 0);
ORK_UAPI_CHECK(rknpu_mem_map, offset, 8);
_Static_assert(sizeof(struct rknpu_mem_destroy) == 16, "rknpu_mem_destroy is 16 bytes");
ORK_UAPI_CHECK(rknpu_mem_destroy, handle, 0);
ORK_UAPI_CHECK(rknpu_mem_destroy, obj_addr, 8);
_Static_assert(sizeof(struct rknpu_mem_sync) == 32, "rknpu_mem_sync is 32 bytes");
ORK_UAPI_CHECK(rknpu_mem_sync, flags, 0);
ORK_UAPI_CHECK(rknpu_mem_sync, obj_addr, 8);
ORK_UAPI_CHECK(rknpu_mem_sync, offset, 16);
ORK_UAPI_CHECK(rknpu_mem_sync, size, 24);

_Static_assert(sizeof(struct rknpu_task) == 40, "rknpu_task is 40 bytes");
ORK_UAPI_CHECK(rknpu_task, flags, 0);
ORK_UAPI_CHECK(rknpu_task, op_idx, 4);
ORK_UAPI_CHECK(rknpu_task, enable_mask, 8);
ORK_UAPI_CHECK(rknpu_task, int_mask, 12);
ORK_UAPI_CHECK(rknpu_task, int_clear, 16);
ORK_UAPI_CHECK(rknpu_task, int_status, 20);
ORK_UAPI_CHECK(rknpu_task, regcfg_amount, 24);
ORK_UAPI_CHECK(rknpu_task, regcfg_offset, 28);
ORK_UAPI_CHECK(rknpu_task, regcmd_addr, 32);

/* DRM ioctl requests (§10.2 table; all _IOWR). */
#define RKNPU_DRM_IOCTL(n, type) \
    ORK_IOC(ORK_IOC_DIR_READWRITE, ORK_DRM_IOCTL_TYPE, ORK_DRM_COMMAND_BASE + (n), sizeof(struct type))
#define DRM_IOCTL_RKNPU_ACTION      RKNPU_DRM_IOCTL(RKNPU_CMD_ACTION, rknpu_action)
#define DRM_IOCTL_RKNPU_SUBMIT      RKNPU_DRM_IOCTL(RKNPU_CMD_SUBMIT, rknpu_submit)
#define DRM_IOCTL_RKNPU_MEM_CREATE  RKNPU_DRM_IOCTL(RKNPU_CMD_MEM_CREATE, rknpu_mem_create)
#define DRM_IOCTL_RKNPU_MEM_MAP     RKNPU_DRM_IOCTL(RKNPU_CMD_MEM_MAP, rknpu_mem_map)
#define DRM_IOCTL_RKNPU_MEM_DESTROY RKNPU_DRM_IOCTL(RKNPU_CMD_MEM_DESTROY, rknpu_mem_destroy)
#define DRM_IOCTL_RKNPU_MEM_SYNC    RKNPU_DRM_IOCTL(RKNPU_CMD_MEM_SYNC, rknpu_mem_sync)
_Static_assert(DRM_IOCTL_RKNPU_ACTION == 0xc0086440u, "§10.2 RKNPU_ACTION code");
_Static_assert(DRM_IOCTL_RKNPU_SUBMIT == 0xc0686441u, "§10.2 RKNPU_SUBMIT code");
_Static_assert(DRM_IOCTL_RKNPU_MEM_CREATE == 0xc0306442u, "§10.2 RKNPU_MEM_CREATE code");
_Static_assert(DRM_IOCTL_RKNPU_MEM_MAP == 0xc0106443u, "§10.2 RKNPU_MEM_MAP code");
_Static_assert(DRM_IOCTL_RKNPU_MEM_DESTROY == 0xc0106444u, "§10.2 RKNPU_MEM_DESTROY code");
_Static_assert(DRM_IOCTL_RKNPU_MEM_SYNC == 0xc0206445u, "§10.2 RKNPU_MEM_SYNC code");

/* Misc-device variant (§10.2): same structs, magic 'r', nr = n. */
#define RKNPU_MISC_IOCTL(n, type) \
    ORK_IOC(ORK_IOC_DIR_READWRITE, RKNPU_MISC_IOCTL_TYPE, (n), sizeof(struct type))
_Static_assert(RKNPU_MISC_IOCTL(RKNPU_CMD_ACTION, rknpu_action) == 0xc0087200u, "§10.2 misc ACTION");
_Static_assert(RKNPU_MISC_IOCTL(RKNPU_CMD_SUBMIT, rknpu_submit) == 0xc0687201u, "§10.2 misc SUBMIT");
_Static_assert(RKNPU_MISC_IOCTL(RKNPU_CMD_MEM_SYNC, rknpu_mem_sync) == 0xc0207205u, "§10.2 misc SYNC");

/* Generic DRM version ioctl used to find the device by driver name: DRM_IOCTL_VERSION =
 * _IOWR('d', 0x00, struct drm_version) (standard Linux DRM uapi). */
struct ork_drm_version {
    int32_t version_major;
    int32_t version_minor;
    int32_t version_patchlevel;
    uint32_t pad0;           /* natural alignment of the size_t that follows on LP64 */
    uint64_t name_len;
    uint64_t name;           /* char * */
    uint64_t date_len;
    uint64_t date;
    uint64_t desc_len;
    uint64_t desc;
};
_Static_assert(sizeof(struct ork_drm_version) == 64, "drm_version is 64 bytes on LP64");
#define ORK_DRM_IOCTL_VERSION \
    ORK_IOC(ORK_IOC_DIR_READWRITE, ORK_DRM_IOCTL_TYPE, 0x00, sizeof(struct ork_drm_version))
_Static_assert(ORK_DRM_IOCTL_VERSION == 0xc0406400u, "DRM_IOCTL_VERSION on LP64");

/* Memory flags (MEM_CREATE.flags, §10.4). */
enum rknpu_mem_flags {
    RKNPU_MEM_NON_CONTIGUOUS = 1u << 0,
    RKNPU_MEM_CACHEABLE = 1u << 1,
    RKNPU_MEM_WRITE_COMBINE = 1u << 2,
    RKNPU_MEM_KERNEL_MAPPING = 1u << 3,
    RKNPU_MEM_IOMMU = 1u << 4,
    RKNPU_MEM_ZEROING = 1u << 5,
    RKNPU_MEM_SECURE = 1u << 6,
    RKNPU_MEM_DMA32 = 1u << 7,
    RKNPU_MEM_TRY_ALLOC_SRAM = 1u << 8,
    RKNPU_MEM_TRY_ALLOC_NBUF = 1u << 9,
    RKNPU_MEM_IOMMU_LIMIT_IOVA_ALIGNMENT = 1u << 10,
};
/* Validated choices (§10.4): data buffers 0x403, task buffer 0x40b. */
#define RKNPU_MEM_FLAGS_DATA \
    (RKNPU_MEM_IOMMU_LIMIT_IOVA_ALIGNMENT | RKNPU_MEM_CACHEABLE | RKNPU_MEM_NON_CONTIGUOUS)
#define RKNPU_MEM_FLAGS_TASKS (RKNPU_MEM_FLAGS_DATA | RKNPU_MEM_KERNEL_MAPPING)
_Static_assert(RKNPU_MEM_FLAGS_DATA == 0x403, "§10.4 data buffer flags");
_Static_assert(RKNPU_MEM_FLAGS_TASKS == 0x40b, "§10.4 task buffer flags");

/* MEM_SYNC.flags (§10.3). */
enum rknpu_mem_sync_flags {
    RKNPU_MEM_SYNC_TO_DEVICE = 1,
    RKNPU_MEM_SYNC_FROM_DEVICE = 2,
};

/* Job flags (SUBMIT.flags, §10.5). */
enum rknpu_job_flags {
    RKNPU_JOB_PC = 1u << 0,
    RKNPU_JOB_NONBLOCK = 1u << 1,
    RKNPU_JOB_PINGPONG = 1u << 2,
    RKNPU_JOB_FENCE_IN = 1u << 3,
    RKNPU_JOB_FENCE_OUT = 1u << 4,
};

/* Action ids (ACTION.flags, §10.6). */
enum rknpu_action_id {
    RKNPU_GET_HW_VERSION = 0,
    RKNPU_GET_DRV_VERSION = 1,
    RKNPU_GET_FREQ = 2,
    RKNPU_SET_FREQ = 3,
    RKNPU_GET_VOLT = 4,
    RKNPU_SET_VOLT = 5,
    RKNPU_ACT_RESET = 6,
    RKNPU_GET_BW_PRIORITY = 7,
    RKNPU_SET_BW_PRIORITY = 8,
    RKNPU_GET_BW_EXPECT = 9,
    RKNPU_SET_BW_EXPECT = 10,
    RKNPU_GET_BW_TW = 11,
    RKNPU_SET_BW_TW = 12,
    RKNPU_ACT_CLR_TOTAL_RW_AMOUNT = 13,
    RKNPU_GET_DT_WR_AMOUNT = 14,
    RKNPU_GET_DT_RD_AMOUNT = 15,
    RKNPU_GET_WT_RD_AMOUNT = 16,
    RKNPU_GET_TOTAL_RW_AMOUNT = 17,
    RKNPU_GET_IOMMU_EN = 18,
    RKNPU_SET_PROC_NICE = 19,
    RKNPU_POWER_ON = 20,
    RKNPU_POWER_OFF = 21,
    RKNPU_GET_TOTAL_SRAM_SIZE = 22,
    RKNPU_GET_FREE_SRAM_SIZE = 23,
    RKNPU_GET_IOMMU_DOMAIN_ID = 24,
    RKNPU_SET_IOMMU_DOMAIN_ID = 25,
};

/* Driver facts for RK3588 (§10.1, §8.2, §13). */
#define RKNPU_DRIVER_NAME        "rknpu"
#define RKNPU_HW_VERSION_RK3588  0x46495245u  /* GET_HW_VERSION (§10.1) */
#define RKNPU_DRV_VERSION_0_9_8  908u         /* GET_DRV_VERSION (§10.1) */
#define RKNPU_PC_DATA_EXTRA_AMOUNT 4u         /* trailer entries added by the kernel (§2.3) */
#define RKNPU_PC_DATA_AMOUNT_SCALE 2u         /* entries per PC fetch unit on RK3588 (§2.3, §10.1) */
#define RKNPU_MAX_SUBMIT_NUMBER  4095u        /* tasks per hardware commit (§8.2, §10.1) */
#define RKNPU_PC_TASK_NUMBER_MASK 0xfffu      /* pc_task_number_bits 12 (§10.1) */
#define RKNPU_MAX_IOMMU_DOMAINS  16u          /* RKNPU_MAX_IOMMU_DOMAIN_NUM (§13) */
#define RKNPU_CORE_MASK_RK3588   0x7u         /* §10.1 */

/* PC interrupt bits (§8.2). */
#define RKNPU_INT_DPU_0          (1u << 8)
#define RKNPU_INT_DPU_1          (1u << 9)
#define RKNPU_INT_DMA_READ_ERROR (1u << 12)
#define RKNPU_INT_DMA_WRITE_ERROR (1u << 13)
#define RKNPU_INT_CLEAR_ALL      0x1ffffu     /* int_clear value used in practice (§8.1) */

#endif
