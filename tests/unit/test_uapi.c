/* test_uapi.c -- the kernel uapi structs and request numbers match spec/rk3588-npu.md: the
 * vendor rknpu tables of §10.2-§10.6 and the mainline rocket tables of §11.1-§11.2. The headers
 * carry compile-time checks too; this test restates each table independently at run time. */
#include <stddef.h>

#include "ork_test.h"
#include "uapi/rknpu_uapi.h"
#include "uapi/rocket_uapi.h"

#define OFF(type, field) ((long long)offsetof(struct type, field))

static void test_rknpu_sizes(void)
{
    CHECK_EQ_INT(sizeof(struct rknpu_action), 8);
    CHECK_EQ_INT(sizeof(struct rknpu_submit), 104);
    CHECK_EQ_INT(sizeof(struct rknpu_mem_create), 48);
    CHECK_EQ_INT(sizeof(struct rknpu_mem_map), 16);
    CHECK_EQ_INT(sizeof(struct rknpu_mem_destroy), 16);
    CHECK_EQ_INT(sizeof(struct rknpu_mem_sync), 32);
    CHECK_EQ_INT(sizeof(struct rknpu_task), 40);
    CHECK_EQ_INT(sizeof(struct rknpu_subcore_task), 8);
}

static void test_rknpu_offsets(void)
{
    /* rknpu_submit (§10.3) */
    CHECK_EQ_INT(OFF(rknpu_submit, flags), 0);
    CHECK_EQ_INT(OFF(rknpu_submit, timeout), 4);
    CHECK_EQ_INT(OFF(rknpu_submit, task_start), 8);
    CHECK_EQ_INT(OFF(rknpu_submit, task_number), 12);
    CHECK_EQ_INT(OFF(rknpu_submit, task_counter), 16);
    CHECK_EQ_INT(OFF(rknpu_submit, priority), 20);
    CHECK_EQ_INT(OFF(rknpu_submit, task_obj_addr), 24);
    CHECK_EQ_INT(OFF(rknpu_submit, iommu_domain_id), 32);
    CHECK_EQ_INT(OFF(rknpu_submit, reserved), 36);
    CHECK_EQ_INT(OFF(rknpu_submit, task_base_addr), 40);
    CHECK_EQ_INT(OFF(rknpu_submit, hw_elapse_time), 48);
    CHECK_EQ_INT(OFF(rknpu_submit, core_mask), 56);
    CHECK_EQ_INT(OFF(rknpu_submit, fence_fd), 60);
    CHECK_EQ_INT(OFF(rknpu_submit, subcore_task), 64);
    CHECK_EQ_INT(OFF(rknpu_submit, subcore_task[4].task_number), 100);
    /* rknpu_mem_create */
    CHECK_EQ_INT(OFF(rknpu_mem_create, handle), 0);
    CHECK_EQ_INT(OFF(rknpu_mem_create, flags), 4);
    CHECK_EQ_INT(OFF(rknpu_mem_create, size), 8);
    CHECK_EQ_INT(OFF(rknpu_mem_create, obj_addr), 16);
    CHECK_EQ_INT(OFF(rknpu_mem_create, dma_addr), 24);
    CHECK_EQ_INT(OFF(rknpu_mem_create, sram_size), 32);
    CHECK_EQ_INT(OFF(rknpu_mem_create, iommu_domain_id), 40);
    CHECK_EQ_INT(OFF(rknpu_mem_create, core_mask), 44);
    /* map / destroy / sync */
    CHECK_EQ_INT(OFF(rknpu_mem_map, handle), 0);
    CHECK_EQ_INT(OFF(rknpu_mem_map, reserved), 4);
    CHECK_EQ_INT(OFF(rknpu_mem_map, offset), 8);
    CHECK_EQ_INT(OFF(rknpu_mem_destroy, handle), 0);
    CHECK_EQ_INT(OFF(rknpu_mem_destroy, obj_addr), 8);
    CHECK_EQ_INT(OFF(rknpu_mem_sync, flags), 0);
    CHECK_EQ_INT(OFF(rknpu_mem_sync, obj_addr), 8);
    CHECK_EQ_INT(OFF(rknpu_mem_sync, offset), 16);
    CHECK_EQ_INT(OFF(rknpu_mem_sync, size), 24);
    /* rknpu_task (packed) */
    CHECK_EQ_INT(OFF(rknpu_task, enable_mask), 8);
    CHECK_EQ_INT(OFF(rknpu_task, int_mask), 12);
    CHECK_EQ_INT(OFF(rknpu_task, int_clear), 16);
    CHECK_EQ_INT(OFF(rknpu_task, regcfg_amount), 24);
    CHECK_EQ_INT(OFF(rknpu_task, regcmd_addr), 32);
    CHECK_EQ_INT(OFF(rknpu_action, value), 4);
}

static void test_rknpu_requests(void)
{
    /* §10.2 table, DRM codes and misc-device codes */
    CHECK_EQ_INT(DRM_IOCTL_RKNPU_ACTION, 0xc0086440u);
    CHECK_EQ_INT(DRM_IOCTL_RKNPU_SUBMIT, 0xc0686441u);
    CHECK_EQ_INT(DRM_IOCTL_RKNPU_MEM_CREATE, 0xc0306442u);
    CHECK_EQ_INT(DRM_IOCTL_RKNPU_MEM_MAP, 0xc0106443u);
    CHECK_EQ_INT(DRM_IOCTL_RKNPU_MEM_DESTROY, 0xc0106444u);
    CHECK_EQ_INT(DRM_IOCTL_RKNPU_MEM_SYNC, 0xc0206445u);
    CHECK_EQ_INT(RKNPU_MISC_IOCTL(RKNPU_CMD_ACTION, rknpu_action), 0xc0087200u);
    CHECK_EQ_INT(RKNPU_MISC_IOCTL(RKNPU_CMD_SUBMIT, rknpu_submit), 0xc0687201u);
    CHECK_EQ_INT(RKNPU_MISC_IOCTL(RKNPU_CMD_MEM_CREATE, rknpu_mem_create), 0xc0307202u);
    CHECK_EQ_INT(RKNPU_MISC_IOCTL(RKNPU_CMD_MEM_MAP, rknpu_mem_map), 0xc0107203u);
    CHECK_EQ_INT(RKNPU_MISC_IOCTL(RKNPU_CMD_MEM_DESTROY, rknpu_mem_destroy), 0xc0107204u);
    CHECK_EQ_INT(RKNPU_MISC_IOCTL(RKNPU_CMD_MEM_SYNC, rknpu_mem_sync), 0xc0207205u);
    /* decoding helpers invert the encoding */
    CHECK_EQ_INT(ORK_IOC_NR(DRM_IOCTL_RKNPU_SUBMIT), 0x41);
    CHECK_EQ_INT(ORK_IOC_TYPE(DRM_IOCTL_RKNPU_SUBMIT), 'd');
    CHECK_EQ_INT(ORK_IOC_SIZE(DRM_IOCTL_RKNPU_SUBMIT), 104);
    CHECK_EQ_INT(ORK_IOC_DIR(DRM_IOCTL_RKNPU_SUBMIT), 3);
    CHECK_EQ_INT(ORK_DRM_IOCTL_VERSION, 0xc0406400u);
}

static void test_rknpu_flags(void)
{
    /* §10.4 memory flags, validated combinations 0x403 and 0x40b */
    CHECK_EQ_INT(RKNPU_MEM_KERNEL_MAPPING, 0x8);
    CHECK_EQ_INT(RKNPU_MEM_IOMMU_LIMIT_IOVA_ALIGNMENT, 0x400);
    CHECK_EQ_INT(RKNPU_MEM_TRY_ALLOC_SRAM, 0x100);
    CHECK_EQ_INT(RKNPU_MEM_FLAGS_DATA, 0x403);
    CHECK_EQ_INT(RKNPU_MEM_FLAGS_TASKS, 0x40b);
    /* §10.5 job flags: matmul 0x5, NONBLOCK matmul 0x7 */
    CHECK_EQ_INT(RKNPU_JOB_PC | RKNPU_JOB_PINGPONG, 0x5);
    CHECK_EQ_INT(RKNPU_JOB_PC | RKNPU_JOB_NONBLOCK | RKNPU_JOB_PINGPONG, 0x7);
    CHECK_EQ_INT(RKNPU_JOB_FENCE_OUT, 0x10);
    /* §10.6 action ids */
    CHECK_EQ_INT(RKNPU_GET_FREQ, 2);
    CHECK_EQ_INT(RKNPU_ACT_RESET, 6);
    CHECK_EQ_INT(RKNPU_GET_IOMMU_EN, 18);
    CHECK_EQ_INT(RKNPU_POWER_ON, 20);
    CHECK_EQ_INT(RKNPU_SET_IOMMU_DOMAIN_ID, 25);
}

static void test_rocket(void)
{
    CHECK_EQ_INT(sizeof(struct drm_rocket_create_bo), 24);
    CHECK_EQ_INT(sizeof(struct drm_rocket_prep_bo), 16);
    CHECK_EQ_INT(sizeof(struct drm_rocket_fini_bo), 8);
    CHECK_EQ_INT(sizeof(struct drm_rocket_task), 8);
    CHECK_EQ_INT(sizeof(struct drm_rocket_job), 40);
    CHECK_EQ_INT(sizeof(struct drm_rocket_submit), 24);
    CHECK_EQ_INT(OFF(drm_rocket_create_bo, handle), 4);
    CHECK_EQ_INT(OFF(drm_rocket_create_bo, dma_address), 8);
    CHECK_EQ_INT(OFF(drm_rocket_create_bo, offset), 16);
    CHECK_EQ_INT(OFF(drm_rocket_prep_bo, timeout_ns), 8);
    CHECK_EQ_INT(OFF(drm_rocket_fini_bo, reserved), 4);
    CHECK_EQ_INT(OFF(drm_rocket_task, regcmd_count), 4);
    CHECK_EQ_INT(OFF(drm_rocket_job, in_bo_handles), 8);
    CHECK_EQ_INT(OFF(drm_rocket_job, out_bo_handles), 16);
    CHECK_EQ_INT(OFF(drm_rocket_job, task_count), 24);
    CHECK_EQ_INT(OFF(drm_rocket_job, task_struct_size), 28);
    CHECK_EQ_INT(OFF(drm_rocket_job, in_bo_handle_count), 32);
    CHECK_EQ_INT(OFF(drm_rocket_job, out_bo_handle_count), 36);
    CHECK_EQ_INT(OFF(drm_rocket_submit, job_count), 8);
    CHECK_EQ_INT(OFF(drm_rocket_submit, job_struct_size), 12);
    CHECK_EQ_INT(OFF(drm_rocket_submit, reserved), 16);
    /* §11.1 codes */
    CHECK_EQ_INT(DRM_IOCTL_ROCKET_CREATE_BO, 0xc0186440u);
    CHECK_EQ_INT(DRM_IOCTL_ROCKET_SUBMIT, 0x40186441u);
    CHECK_EQ_INT(DRM_IOCTL_ROCKET_PREP_BO, 0x40106442u);
    CHECK_EQ_INT(DRM_IOCTL_ROCKET_FINI_BO, 0x40086443u);
}

int main(void)
{
    RUN(test_rknpu_sizes);
    RUN(test_rknpu_offsets);
    RUN(test_rknpu_requests);
    RUN(test_rknpu_flags);
    RUN(test_rocket);
    return ork_test_done();
}
