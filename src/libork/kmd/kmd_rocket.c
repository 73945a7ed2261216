/* kmd_rocket.c -- the "rocket" backend: the mainline Linux accel driver (spec/rk3588-npu.md
 * §11). The device is found by driver name "rocket" on /dev/accel/accel*. Buffers come from
 * CREATE_BO (NPU address private to this fd; one IOMMU domain per fd, §11.3) and are mapped at
 * the returned offset; PREP_BO / FINI_BO bracket CPU access (our FROM_DEVICE / TO_DEVICE syncs).
 * SUBMIT carries one drm_rocket_task per program (the kernel kicks them one by one on one core,
 * TASK_NUMBER = 1, so programs are not trailer-chained: §8.5, §11.3) and one drm_rocket_job per
 * core range; the scheduler picks the cores. Completion is observed by PREP_BO on the job's
 * output buffers. Not exercised without hardware: tests cover struct layouts and requests. */
#include "kmd_rocket.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/log.h>

#ifdef ORK_HAVE_LIBDRM
#include <xf86drm.h>
#endif

#define ROCKET_MAX_JOB_TASKS 4096u      /* our bound on tasks per job (stack-free build) */

struct rocket_ctx {
    int fd;
    char path[512];
};

static int rocket_errno(int e)
{
    switch (e) {
    case ETIMEDOUT: case ETIME: return ORK_ETIMEDOUT;
    case ENOMEM: return ORK_ENOMEM;
    case EFAULT: return ORK_EFAULT;
    case EINVAL: return ORK_EINVAL;
    case EBUSY: return ORK_EBUSY;
    default: return ORK_EDEVICE;
    }
}

static int rocket_ioctl(struct rocket_ctx *c, uint32_t req, void *arg, const char *what)
{
    int r;
    do
        r = ioctl(c->fd, (unsigned long)req, arg);
    while (r == -1 && (errno == EINTR || errno == EAGAIN));
    if (r == -1) {
        int e = errno;
        return ork_errorf(rocket_errno(e), "rocket %s ioctl: %s (errno %d)", what, strerror(e), e);
    }
    return 0;
}

static int rocket_bo_create(void *ctx, uint64_t size, uint32_t flags, uint32_t domain,
                            struct ork_kbo *out)
{
    struct rocket_ctx *c = ctx;
    memset(out, 0, sizeof(*out));
    if (domain != 0)
        return ork_errorf(ORK_EUNSUPPORTED, "rocket: IOMMU domain %u requested; rocket has one "
                          "domain per fd and no ids (§11.3)", domain);
    if (size == 0 || size > UINT32_MAX)
        return ork_errorf(ORK_EINVAL, "rocket: buffer size %llu outside 1..4 GiB (u32 size, "
                          "§11.2)", (unsigned long long)size);
    struct drm_rocket_create_bo cb = { .size = (uint32_t)size };
    int ret = rocket_ioctl(c, DRM_IOCTL_ROCKET_CREATE_BO, &cb, "CREATE_BO");
    if (ret < 0)
        return ret;
    void *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, (off_t)cb.offset);
    if (map == MAP_FAILED) {
        ret = ork_errorf(ORK_ENOMEM, "rocket: mmap of %llu bytes: %s", (unsigned long long)size,
                         strerror(errno));
        goto err_close;
    }
    if (cb.dma_address > UINT32_MAX) {
        munmap(map, size);
        ret = ork_errorf(ORK_EDEVICE, "rocket: NPU address 0x%llx is not 32-bit",
                         (unsigned long long)cb.dma_address);
        goto err_close;
    }
    out->handle = cb.handle;
    out->flags = flags;
    out->size = size;
    out->iova = (uint32_t)cb.dma_address;
    out->domain = 0;
    out->cookie = cb.handle;
    out->map_offset = cb.offset;
    out->map = map;
    return 0;
err_close:;
    /* GEM handles are released with the generic DRM_IOCTL_GEM_CLOSE ('d', 0x09, 8 bytes) */
    struct { uint32_t handle, pad; } gc = { cb.handle, 0 };
    ioctl(c->fd, (unsigned long)ORK_IOC(1u, ORK_DRM_IOCTL_TYPE, 0x09, sizeof gc), &gc);
    return ret;
}

static void rocket_bo_destroy(void *ctx, struct ork_kbo *bo)
{
    struct rocket_ctx *c = ctx;
    if (!bo || (!bo->handle && !bo->map))
        return;
    if (bo->map)
        munmap(bo->map, bo->size);
    struct { uint32_t handle, pad; } gc = { bo->handle, 0 };
    ioctl(c->fd, (unsigned long)ORK_IOC(1u, ORK_DRM_IOCTL_TYPE, 0x09, sizeof gc), &gc);
    memset(bo, 0, sizeof(*bo));
}

static int rocket_prep(struct rocket_ctx *c, uint32_t handle, int64_t timeout_ns)
{
    struct drm_rocket_prep_bo p = { .handle = handle, .reserved = 0, .timeout_ns = timeout_ns };
    return rocket_ioctl(c, DRM_IOCTL_ROCKET_PREP_BO, &p, "PREP_BO");
}

static int rocket_bo_sync(void *ctx, const struct ork_kbo *bo, uint64_t off, uint64_t size,
                          enum ork_kbo_sync dir)
{
    struct rocket_ctx *c = ctx;
    int ret = 0;
    /* whole-BO granularity: PREP waits for jobs and syncs for the CPU, FINI syncs for the NPU */
    if (dir & ORK_KBO_SYNC_FROM_DEVICE)
        ret = rocket_prep(c, bo->handle, (int64_t)ROCKET_JOB_TIMEOUT_MS * 1000000);
    if (ret == 0 && (dir & ORK_KBO_SYNC_TO_DEVICE)) {
        struct drm_rocket_fini_bo f = { .handle = bo->handle, .reserved = 0 };
        ret = rocket_ioctl(c, DRM_IOCTL_ROCKET_FINI_BO, &f, "FINI_BO");
    }
    return ret;
}

int ork__kmd_rocket_fill(const struct ork_kjob *job, struct drm_rocket_task *tasks,
                         struct drm_rocket_job *jobs, uint32_t *n_jobs, uint32_t *in_h,
                         uint32_t *out_h)
{
    for (uint32_t i = 0; i < job->n_tasks; i++) {
        tasks[i].regcmd = job->tasks[i].regcmd_iova;
        tasks[i].regcmd_count = job->tasks[i].regcfg_amount + 4;  /* trailer included (§11.3) */
    }
    for (uint32_t i = 0; i < job->n_in_bos; i++)
        in_h[i] = job->in_bos[i]->handle;
    for (uint32_t i = 0; i < job->n_out_bos; i++)
        out_h[i] = job->out_bos[i]->handle;
    uint32_t mask = job->core_mask ? job->core_mask : 1u, n = 0;
    for (uint32_t core = 0; core < ORK_KMD_MAX_CORES; core++) {
        if (!(mask & (1u << core)))
            continue;
        const struct ork_kcore_range *r = &job->range[core];
        if (r->count == 0 || r->start >= job->n_tasks || r->count > job->n_tasks - r->start)
            return ork_errorf(ORK_EINVAL, "rocket submit: core %u task range {start %u, count %u} "
                              "outside the job's %u tasks", core, r->start, r->count,
                              job->n_tasks);
        /* one rocket job per range: its tasks run in order on one core (§11.3) */
        jobs[n] = (struct drm_rocket_job){
            .tasks = (uint64_t)(uintptr_t)(tasks + r->start),
            .in_bo_handles = (uint64_t)(uintptr_t)in_h,
            .out_bo_handles = (uint64_t)(uintptr_t)out_h,
            .task_count = r->count,
            .task_struct_size = sizeof(struct drm_rocket_task),
            .in_bo_handle_count = job->n_in_bos,
            .out_bo_handle_count = job->n_out_bos,
        };
        n++;
    }
    *n_jobs = n;
    return 0;
}

static int rocket_wait(void *ctx, struct ork_kjob *job, int64_t timeout_ns)
{
    struct rocket_ctx *c = ctx;
    if (timeout_ns < 0)
        timeout_ns = (int64_t)ROCKET_JOB_TIMEOUT_MS * 1000000;
    if (job->n_out_bos == 0)
        return ork_errorf(ORK_EINVAL, "rocket: waiting needs the job's out_bos (completion is "
                          "observed through PREP_BO, §11.2)");
    for (uint32_t i = 0; i < job->n_out_bos; i++) {
        int ret = rocket_prep(c, job->out_bos[i]->handle, timeout_ns);
        if (ret < 0)
            return ret;
    }
    job->task_counter = job->n_tasks;
    return 0;
}

static int rocket_submit(void *ctx, struct ork_kjob *job)
{
    struct rocket_ctx *c = ctx;
    job->task_counter = 0;
    job->hw_elapse_ns = 0;
    if (!job->tasks || job->n_tasks == 0 || job->n_tasks > ROCKET_MAX_JOB_TASKS)
        return ork_errorf(ORK_EINVAL, "rocket submit: %u tasks (1..%u)", job->n_tasks,
                          ROCKET_MAX_JOB_TASKS);
    if (job->domain != 0)
        return ork_errorf(ORK_EUNSUPPORTED, "rocket submit: domain %u; rocket has one domain per "
                          "fd (§11.3)", job->domain);
    if (job->core_mask & ~((1u << ORK_KMD_MAX_CORES) - 1))
        return ork_errorf(ORK_EINVAL, "rocket submit: core_mask 0x%x", job->core_mask);
    if (!(job->flags & ORK_KJOB_NONBLOCK) && job->n_out_bos == 0)
        return ork_errorf(ORK_EINVAL, "rocket submit: a blocking job needs out_bos to wait on");
    struct drm_rocket_task *tasks = ork_calloc(job->n_tasks, sizeof(*tasks));
    uint32_t *in_h = ork_calloc(job->n_in_bos + 1, sizeof(*in_h));
    uint32_t *out_h = ork_calloc(job->n_out_bos + 1, sizeof(*out_h));
    struct drm_rocket_job jobs[ORK_KMD_MAX_CORES];
    uint32_t n_jobs = 0;
    int ret;
    if (!tasks || !in_h || !out_h) {
        ret = ork_errorf(ORK_ENOMEM, "rocket submit: out of memory");
        goto out;
    }
    ret = ork__kmd_rocket_fill(job, tasks, jobs, &n_jobs, in_h, out_h);
    if (ret < 0)
        goto out;
    struct drm_rocket_submit s = {
        .jobs = (uint64_t)(uintptr_t)jobs,
        .job_count = n_jobs,
        .job_struct_size = sizeof(struct drm_rocket_job),
        .reserved = 0,
    };
    ret = rocket_ioctl(c, DRM_IOCTL_ROCKET_SUBMIT, &s, "SUBMIT");
    if (ret == 0 && !(job->flags & ORK_KJOB_NONBLOCK)) {
        struct ork_kjob *j = job;
        ret = rocket_wait(c, j, (int64_t)(job->timeout_ms ? job->timeout_ms
                                                           : ROCKET_JOB_TIMEOUT_MS) * 1000000);
    }
out:
    ork_free(tasks);
    ork_free(in_h);
    ork_free(out_h);
    return ret;
}

static int rocket_query(void *ctx, enum ork_kmd_cap cap, uint64_t *val)
{
    switch (cap) {
    case ORK_KMD_CAP_N_CORES: *val = ORK_KMD_MAX_CORES; return 0;
    case ORK_KMD_CAP_N_DOMAINS: *val = 1; return 0;            /* one per fd (§11.3) */
    case ORK_KMD_CAP_DOMAIN_BYTES: *val = 3900ull << 20; return 0; /* same 32-bit window, §13 */
    case ORK_KMD_CAP_PC_CHAIN: *val = 0; return 0;             /* one program per kick (§8.5) */
    case ORK_KMD_CAP_CORE_SELECT: *val = 0; return 0;          /* the scheduler spreads jobs */
    case ORK_KMD_CAP_MAX_TASKS: *val = ROCKET_MAX_JOB_TASKS; return 0;
    case ORK_KMD_CAP_SIM: *val = 0; return 0;
    default:
        return ork_errorf(ORK_EUNSUPPORTED, "rocket: unknown capability %d", (int)cap);
    }
}

static int accel_driver_is_rocket(int fd)
{
    char name[64] = "";
#ifdef ORK_HAVE_LIBDRM
    drmVersionPtr v = drmGetVersion(fd);
    if (v) {
        snprintf(name, sizeof name, "%.*s", v->name_len, v->name);
        drmFreeVersion(v);
    }
#else
    struct ork_drm_version v = { 0 };
    v.name_len = sizeof name - 1;
    v.name = (uint64_t)(uintptr_t)name;
    if (ioctl(fd, (unsigned long)ORK_DRM_IOCTL_VERSION, &v) != 0)
        return 0;
    name[v.name_len < sizeof name ? v.name_len : sizeof name - 1] = '\0';
#endif
    return strcmp(name, ROCKET_DRIVER_NAME) == 0;
}

static int rocket_open(const struct ork_kmd_opts *o, void **ctx)
{
    const char *node = o && o->struct_size ? o->node : NULL;
    char path[512] = "";
    int fd = -1;
    if (node) {
        snprintf(path, sizeof path, "%s", node);
        fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd >= 0 && !accel_driver_is_rocket(fd)) {
            close(fd);
            fd = -1;
        }
    } else {
        DIR *d = opendir("/dev/accel");
        struct dirent *e;
        while (d && fd < 0 && (e = readdir(d)) != NULL) {
            if (strncmp(e->d_name, "accel", 5) != 0)
                continue;
            snprintf(path, sizeof path, "/dev/accel/%s", e->d_name);
            fd = open(path, O_RDWR | O_CLOEXEC);
            if (fd >= 0 && !accel_driver_is_rocket(fd)) {
                close(fd);
                fd = -1;
            }
        }
        if (d)
            closedir(d);
    }
    if (fd < 0)
        return ork_errorf(ORK_ENOENT, node ? "no rocket device found at %s"
                                           : "no rocket device found (no %s* driven by rocket)",
                          node ? node : ROCKET_ACCEL_NODE_PREFIX);
    struct rocket_ctx *c = ork_calloc(1, sizeof(*c));
    if (!c) {
        close(fd);
        return ork_errorf(ORK_ENOMEM, "rocket: out of memory");
    }
    c->fd = fd;
    snprintf(c->path, sizeof c->path, "%s", path);
    ORK_LOGI("rocket: using %s", path);
    *ctx = c;
    return 0;
}

static void rocket_close(void *ctx)
{
    struct rocket_ctx *c = ctx;
    if (!c)
        return;
    close(c->fd);
    ork_free(c);
}

const struct ork_kmd_ops ork__kmd_rocket_ops = {
    .name = "rocket",
    .open = rocket_open,
    .close = rocket_close,
    .bo_create = rocket_bo_create,
    .bo_destroy = rocket_bo_destroy,
    .bo_sync = rocket_bo_sync,
    .submit = rocket_submit,
    .wait = rocket_wait,
    .action = NULL,                      /* no action ioctl; the kernel resets on timeout */
    .query = rocket_query,
};
