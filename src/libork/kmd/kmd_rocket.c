/* kmd_rocket.c -- the "rocket" backend: the mainline Linux accel driver (spec/rk3588-npu.md
 * §11), done as mainline does it:
 *  - one file (fd) per IOMMU domain: each open fd gets its own domain and address space
 *    (§11.3, §13), so domain d's buffers are created on file d, opened on first use;
 *  - buffers from CREATE_BO, mapped at the returned offset; PREP_BO / FINI_BO bracket CPU
 *    access (our FROM_DEVICE / TO_DEVICE syncs); PREP_BO's timeout_ns is an ABSOLUTE
 *    CLOCK_MONOTONIC deadline (mainline converts it with drm_timeout_abs_to_jiffies);
 *  - SUBMIT carries one drm_rocket_job per core range with its in and out BO handle lists
 *    (the kernel orders jobs by them and the scheduler spreads jobs over the cores: multi-core
 *    is several jobs in one SUBMIT) and one drm_rocket_task per program, regcmd_count counting
 *    the trailer (§11.3; ROCKET_COUNT_SHORT §14.1), every program enabling the DPU
 *    (ROCKET_NO_DPU §14.5); programs are not trailer-chained (TASK_NUMBER = 1 per kick, §8.5);
 *  - completion is observed by PREP_BO on the job's output buffers, bounded by the deadline.
 * Every request goes through a transport (kmd_rocket.h): device fds here, the simulator's
 * rocket model in kmd_sim.c ("sim-rocket"), so both run this same code. */
#include "kmd_rocket.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <ork/alloc.h>
#include <ork/debug.h>
#include <ork/error.h>
#include <ork/log.h>

#include "kmd_discovery.h"

#ifdef ORK_HAVE_LIBDRM
#include <xf86drm.h>
#endif

#define ROCKET_MAX_JOB_TASKS 4096u      /* our bound on tasks per job (one host array each) */
/* A host wait outlives the kernel's own 500 ms job timeout by this much, so the kernel's
 * reset (§11.3) comes first and the wait sees its outcome. */
#define ROCKET_WAIT_SLACK_MS 100u
/* Per-domain mapping guard: the same 32-bit window as rknpu (§13). */
#define ROCKET_DOMAIN_GUARD_BYTES (3900ull << 20)

struct rocket_ctx {
    struct ork_rocket_transport tr;
    pthread_mutex_t lock;                /* guards file opening */
    int file[ROCKET_MAX_FILES];          /* transport file of domain d; -1 = not open */
    uint64_t seq;
};

int64_t ork__kmd_rocket_deadline(int64_t timeout_ns)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + (timeout_ns > 0 ? timeout_ns : 0);
}

static int rocket_file(struct rocket_ctx *c, uint32_t domain, int *file)
{
    if (domain >= ROCKET_MAX_FILES)
        return ork_errorf(ORK_EINVAL, "%s: IOMMU domain %u outside 0..%u (one fd per domain, "
                          "§11.3)", c->tr.name, domain, ROCKET_MAX_FILES - 1);
    pthread_mutex_lock(&c->lock);
    int ret = 0;
    if (c->file[domain] < 0) {
        /* a new fd is a new IOMMU domain (§11.3): domain d of the model is file d */
        ret = c->tr.file_open(c->tr.t);
        if (ret >= 0) {
            c->file[domain] = ret;
            ret = 0;
        }
    }
    *file = c->file[domain];
    pthread_mutex_unlock(&c->lock);
    return ret;
}

static int rocket_ioctl(struct rocket_ctx *c, int file, uint32_t req, void *arg)
{
    return c->tr.ioctl(c->tr.t, file, req, arg);
}

/* ---- buffers ------------------------------------------------------------------------------ */

int ork__kmd_rocket_bo_create(void *ctx, uint64_t size, uint32_t flags, uint32_t domain,
                              struct ork_kbo *out)
{
    struct rocket_ctx *c = ctx;
    memset(out, 0, sizeof(*out));
    if (size == 0 || size > UINT32_MAX)
        return ork_errorf(ORK_EINVAL, "%s: buffer size %llu outside 1..4 GiB (u32 size, §11.2)",
                          c->tr.name, (unsigned long long)size);
    int file = -1;
    int ret = rocket_file(c, domain, &file);
    if (ret < 0)
        return ret;
    struct drm_rocket_create_bo cb = { .size = (uint32_t)size };
    ret = rocket_ioctl(c, file, DRM_IOCTL_ROCKET_CREATE_BO, &cb);
    if (ret < 0)
        return ret;
    if (cb.dma_address > UINT32_MAX || cb.dma_address == 0) {
        ret = ork_errorf(ORK_EDEVICE, "%s: CREATE_BO returned NPU address 0x%llx, not a non-zero "
                         "32-bit address (§1.2)", c->tr.name, (unsigned long long)cb.dma_address);
        goto err_close;
    }
    void *map = c->tr.mmap(c->tr.t, file, cb.offset, size);
    if (!map) {
        ret = ORK_ENOMEM;
        goto err_close;
    }
    out->handle = cb.handle;
    out->flags = flags | ORK_KBO_CACHEABLE;   /* shmem BOs: CPU access bracketed by PREP/FINI */
    out->size = size;
    out->iova = (uint32_t)cb.dma_address;
    out->domain = domain;
    out->cookie = (uint64_t)file;
    out->map_offset = cb.offset;
    out->map = map;
    return 0;
err_close:;
    struct ork_drm_gem_close gc = { cb.handle, 0 };
    (void)rocket_ioctl(c, file, ORK_DRM_IOCTL_GEM_CLOSE, &gc);
    return ret;
}

void ork__kmd_rocket_bo_destroy(void *ctx, struct ork_kbo *bo)
{
    struct rocket_ctx *c = ctx;
    if (!bo || (!bo->handle && !bo->map))
        return;
    if (bo->map)
        c->tr.munmap(c->tr.t, bo->map, bo->size);
    struct ork_drm_gem_close gc = { bo->handle, 0 };
    if (rocket_ioctl(c, (int)bo->cookie, ORK_DRM_IOCTL_GEM_CLOSE, &gc) < 0)
        ORK_LOGW("%s: GEM_CLOSE of buffer at 0x%08x failed: %s", c->tr.name, bo->iova,
                 ork_error_message());
    memset(bo, 0, sizeof(*bo));
}

/* PREP_BO with an absolute deadline (§11.2): waits for the jobs using the BO, syncs for the
 * CPU. A relative timeout would be a time long past (CLOCK_MONOTONIC counts from boot), so
 * the kernel would not wait at all. */
static int rocket_prep(struct rocket_ctx *c, const struct ork_kbo *bo, int64_t deadline_ns)
{
    struct drm_rocket_prep_bo p = { .handle = bo->handle, .reserved = 0,
                                    .timeout_ns = deadline_ns };
    return rocket_ioctl(c, (int)bo->cookie, DRM_IOCTL_ROCKET_PREP_BO, &p);
}

int ork__kmd_rocket_bo_sync(void *ctx, const struct ork_kbo *bo, uint64_t off, uint64_t size,
                            enum ork_kbo_sync dir)
{
    struct rocket_ctx *c = ctx;
    (void)off;
    (void)size;                          /* whole-BO granularity */
    int ret = 0;
    if (dir & ORK_KBO_SYNC_FROM_DEVICE)
        ret = rocket_prep(c, bo, ork__kmd_rocket_deadline(
                                     (int64_t)(ROCKET_JOB_TIMEOUT_MS + ROCKET_WAIT_SLACK_MS) *
                                     1000000));
    if (ret == 0 && (dir & ORK_KBO_SYNC_TO_DEVICE)) {
        struct drm_rocket_fini_bo f = { .handle = bo->handle, .reserved = 0 };
        ret = rocket_ioctl(c, (int)bo->cookie, DRM_IOCTL_ROCKET_FINI_BO, &f);
    }
    return ret;
}

/* ---- submit ------------------------------------------------------------------------------ */

int ork__kmd_rocket_fill(const struct ork_kjob *job, struct drm_rocket_task *tasks,
                         struct drm_rocket_job *jobs, uint32_t *n_jobs, uint32_t *in_h,
                         uint32_t *out_h)
{
    /* out_h: the shared out_bos, then per core range its own list (shared + range_out) */
    const uint32_t n_out = job->n_out_bos;
    for (uint32_t i = 0; i < job->n_tasks; i++) {
        if (!(job->tasks[i].enable_mask & ROCKET_ENABLE_DPU))
            return ork_errorf(ORK_EHAZARD, "rocket submit: task %u enables blocks 0x%x without "
                              "the DPU: rocket accepts only DPU completions, so it would time "
                              "out (ROCKET_NO_DPU, §11.3/§14.5)", i, job->tasks[i].enable_mask);
        tasks[i].regcmd = job->tasks[i].regcmd_iova;
        /* the kernel fetches (count + 1) / 2 pairs: the trailer must be counted (§11.3) */
        tasks[i].regcmd_count = job->tasks[i].regcfg_amount + ROCKET_TRAILER_ENTRIES;
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
        /* a range with its own output buffer lists it: jobs writing disjoint BOs do not
         * depend on each other (§11.3) */
        uint32_t *oh = out_h, oc = n_out;
        if (job->range_out[core]) {
            oh = out_h + (size_t)(n_out + 1) * (core + 1);
            memcpy(oh, out_h, (size_t)n_out * sizeof *oh);
            oh[n_out] = job->range_out[core]->handle;
            oc = n_out + 1;
        }
        /* one rocket job per range: its tasks run in order on one core (§11.3) */
        jobs[n] = (struct drm_rocket_job){
            .tasks = (uint64_t)(uintptr_t)(tasks + r->start),
            .in_bo_handles = (uint64_t)(uintptr_t)in_h,
            .out_bo_handles = (uint64_t)(uintptr_t)oh,
            .task_count = r->count,
            .task_struct_size = sizeof(struct drm_rocket_task),
            .in_bo_handle_count = job->n_in_bos,
            .out_bo_handle_count = oc,
        };
        n++;
    }
    *n_jobs = n;
    return 0;
}

/* A job has something to wait on: shared outputs or a range's own. */
static bool rocket_has_outputs(const struct ork_kjob *job)
{
    for (uint32_t i = 0; i < ORK_KMD_MAX_CORES; i++)
        if (job->range_out[i])
            return true;
    return job->n_out_bos > 0;
}

int ork__kmd_rocket_wait(void *ctx, struct ork_kjob *job, int64_t timeout_ns)
{
    struct rocket_ctx *c = ctx;
    if (timeout_ns < 0)
        timeout_ns = (int64_t)((job->timeout_ms > ROCKET_JOB_TIMEOUT_MS ? job->timeout_ms
                                                                         : ROCKET_JOB_TIMEOUT_MS) +
                               ROCKET_WAIT_SLACK_MS) * 1000000;
    if (!rocket_has_outputs(job))
        return ork_errorf(ORK_EINVAL, "%s: waiting needs the job's out_bos (completion is "
                          "observed through PREP_BO on them, §11.2)", c->tr.name);
    /* one absolute deadline for all of them: the wait is bounded whatever their number */
    int64_t deadline = ork__kmd_rocket_deadline(timeout_ns);
    for (uint32_t i = 0; i < job->n_out_bos + ORK_KMD_MAX_CORES; i++) {
        const struct ork_kbo *bo = i < job->n_out_bos ? job->out_bos[i]
                                                      : job->range_out[i - job->n_out_bos];
        if (!bo)
            continue;
        int ret = rocket_prep(c, bo, deadline);
        if (ret == ORK_EBUSY || ret == ORK_ETIMEDOUT)
            return ork_errorf(ORK_ETIMEDOUT, "%s: job %llu: output buffer at 0x%08x still busy "
                              "after %.1f ms (PREP_BO deadline): %s", c->tr.name,
                              (unsigned long long)job->seq, bo->iova,
                              (double)timeout_ns / 1e6, ork_error_message());
        if (ret < 0)
            return ret;
    }
    job->task_counter = job->n_tasks;
    return 0;
}

int ork__kmd_rocket_submit(void *ctx, struct ork_kjob *job)
{
    struct rocket_ctx *c = ctx;
    job->task_counter = 0;
    job->hw_elapse_ns = 0;
    if (!job->tasks || job->n_tasks == 0 || job->n_tasks > ROCKET_MAX_JOB_TASKS)
        return ork_errorf(ORK_EINVAL, "%s submit: %u tasks (1..%u)", c->tr.name, job->n_tasks,
                          ROCKET_MAX_JOB_TASKS);
    if (job->core_mask & ~((1u << ORK_KMD_MAX_CORES) - 1))
        return ork_errorf(ORK_EINVAL, "%s submit: core_mask 0x%x", c->tr.name, job->core_mask);
    if (!(job->flags & ORK_KJOB_NONBLOCK) && !rocket_has_outputs(job))
        return ork_errorf(ORK_EINVAL, "%s submit: a blocking job needs out_bos to wait on "
                          "(completion is PREP_BO on the outputs, §11.2)", c->tr.name);
    for (uint32_t i = 0; i < job->n_in_bos + job->n_out_bos + ORK_KMD_MAX_CORES; i++) {
        const struct ork_kbo *b = i < job->n_in_bos ? job->in_bos[i]
                                  : i < job->n_in_bos + job->n_out_bos
                                  ? job->out_bos[i - job->n_in_bos]
                                  : job->range_out[i - job->n_in_bos - job->n_out_bos];
        if (!b)
            continue;
        if (b->domain != job->domain)
            return ork_errorf(ORK_EINVAL, "%s submit: buffer at 0x%08x lives in domain %u, the "
                              "job runs in domain %u: each domain is its own fd (§11.3)",
                              c->tr.name, b->iova, b->domain, job->domain);
    }
    int file = -1;
    int ret = rocket_file(c, job->domain, &file);
    if (ret < 0)
        return ret;
    struct drm_rocket_task *tasks = ork_calloc(job->n_tasks, sizeof(*tasks));
    uint32_t *in_h = ork_calloc(job->n_in_bos + 1, sizeof(*in_h));
    /* the shared list, then one (shared + own) list per core range (ork__kmd_rocket_fill) */
    uint32_t *out_h = ork_calloc((size_t)(job->n_out_bos + 1) * (ORK_KMD_MAX_CORES + 1),
                                 sizeof(*out_h));
    struct drm_rocket_job jobs[ORK_KMD_MAX_CORES];
    uint32_t n_jobs = 0;
    if (!tasks || !in_h || !out_h) {
        ret = ork_errorf(ORK_ENOMEM, "%s submit: out of memory", c->tr.name);
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
    if (ork_debug(ORK_DBG_SUBMIT))
        ORK_LOGI("%s: submit %u job(s), %u task(s), %u in / %u out BOs, domain %u", c->tr.name,
                 n_jobs, job->n_tasks, job->n_in_bos, job->n_out_bos, job->domain);
    ret = rocket_ioctl(c, file, DRM_IOCTL_ROCKET_SUBMIT, &s);
    if (ret < 0)
        goto out;
    pthread_mutex_lock(&c->lock);
    job->seq = ++c->seq;
    pthread_mutex_unlock(&c->lock);
    /* the kernel queues every job (drm_sched); a blocking job waits for its outputs here */
    if (!(job->flags & ORK_KJOB_NONBLOCK))
        ret = ork__kmd_rocket_wait(c, job, -1);
out:
    ork_free(tasks);
    ork_free(in_h);
    ork_free(out_h);
    return ret;
}

/* ---- actions, caps ------------------------------------------------------------------------ */

int ork__kmd_rocket_action(void *ctx, enum ork_kmd_action act, uint32_t *value)
{
    struct rocket_ctx *c = ctx;
    if (c->tr.action)
        return c->tr.action(c->tr.t, act, value);
    if (act == ORK_KMD_ACT_RESET) {
        /* no reset ioctl: the kernel resets a core itself when a job times out (§11.3) */
        if (value)
            *value = 0;
        return 0;
    }
    return ork_errorf(ORK_EUNSUPPORTED, "%s: action %d: rocket has no action ioctl (§11.1)",
                      c->tr.name, (int)act);
}

int ork__kmd_rocket_query(void *ctx, enum ork_kmd_cap cap, uint64_t *val)
{
    struct rocket_ctx *c = ctx;
    switch (cap) {
    case ORK_KMD_CAP_N_CORES: *val = ORK_KMD_MAX_CORES; return 0;
    case ORK_KMD_CAP_N_DOMAINS: *val = ROCKET_MAX_FILES; return 0;   /* one fd each (§11.3) */
    case ORK_KMD_CAP_DOMAIN_BYTES: *val = ROCKET_DOMAIN_GUARD_BYTES; return 0;
    case ORK_KMD_CAP_PC_CHAIN: *val = 0; return 0;             /* one program per kick (§8.5) */
    case ORK_KMD_CAP_CORE_SELECT: *val = 0; return 0;          /* the scheduler spreads jobs */
    case ORK_KMD_CAP_MULTI_JOB: *val = 1; return 0;            /* several jobs per SUBMIT */
    case ORK_KMD_CAP_MAX_TASKS: *val = ROCKET_MAX_JOB_TASKS; return 0;
    case ORK_KMD_CAP_SIM: *val = strcmp(c->tr.name, "rocket") != 0; return 0;
    case ORK_KMD_CAP_ONE_JOB_CONFIRMED: *val = 0; return 0;    /* no core_mask in the uapi */
    case ORK_KMD_CAP_DCOMP_CONFIRMED: *val = 0; return 0;      /* a capability file's to say */
    case ORK_KMD_CAP_W4A8_CONFIRMED: *val = 0; return 0;       /* a capability file's to say */
    default:
        return ork_errorf(ORK_EUNSUPPORTED, "%s: unknown capability %d", c->tr.name, (int)cap);
    }
}

/* ---- open / close ---------------------------------------------------------------------- */

int ork__kmd_rocket_open_transport(const struct ork_rocket_transport *tr, void **ctx)
{
    struct rocket_ctx *c = ork_calloc(1, sizeof(*c));
    if (!c) {
        tr->close(tr->t);
        return ork_errorf(ORK_ENOMEM, "%s: out of memory", tr->name);
    }
    c->tr = *tr;
    pthread_mutex_init(&c->lock, NULL);
    for (uint32_t d = 0; d < ROCKET_MAX_FILES; d++)
        c->file[d] = -1;
    int file = -1;
    int ret = rocket_file(c, 0, &file);
    if (ret < 0) {
        ork__kmd_rocket_close(c);
        return ret;
    }
    *ctx = c;
    return 0;
}

void *ork__kmd_rocket_transport_ctx(void *ctx)
{
    return ctx ? ((struct rocket_ctx *)ctx)->tr.t : NULL;
}

void ork__kmd_rocket_close(void *ctx)
{
    struct rocket_ctx *c = ctx;
    if (!c)
        return;
    for (uint32_t d = 0; d < ROCKET_MAX_FILES; d++)
        if (c->file[d] >= 0)
            c->tr.file_close(c->tr.t, c->file[d]);
    c->tr.close(c->tr.t);
    pthread_mutex_destroy(&c->lock);
    ork_free(c);
}

/* ---- the device-fd transport ------------------------------------------------------------- */

struct rocket_fds {
    char path[512];
    int fd[ROCKET_MAX_FILES];
    uint32_t n;
};

static int errno_to_ork(int e)
{
    switch (e) {
    case ETIMEDOUT: case ETIME: return ORK_ETIMEDOUT;
    case ENOMEM: return ORK_ENOMEM;
    case EFAULT: return ORK_EFAULT;
    case EINVAL: return ORK_EINVAL;
    case EBUSY: return ORK_EBUSY;
    case ENOENT: case ENODEV: return ORK_ENOENT;
    case EACCES: case EPERM: return ORK_EACCES;
    default: return ORK_EDEVICE;
    }
}

static const char *rocket_req_name(uint32_t req)
{
    if (req == ORK_DRM_IOCTL_GEM_CLOSE)
        return "GEM_CLOSE";
    switch (ORK_IOC_NR(req) - ORK_DRM_COMMAND_BASE) {
    case ROCKET_CMD_CREATE_BO: return "CREATE_BO";
    case ROCKET_CMD_SUBMIT: return "SUBMIT";
    case ROCKET_CMD_PREP_BO: return "PREP_BO";
    case ROCKET_CMD_FINI_BO: return "FINI_BO";
    default: return "?";
    }
}

static int fds_ioctl(void *t, int file, uint32_t req, void *arg)
{
    struct rocket_fds *f = t;
    int r;
    do
        r = ioctl(f->fd[file], (unsigned long)req, arg);
    while (r == -1 && (errno == EINTR || errno == EAGAIN));
    if (r == -1) {
        int e = errno;
        return ork_errorf(errno_to_ork(e), "rocket %s ioctl: %s (errno %d)", rocket_req_name(req),
                          strerror(e), e);
    }
    return 0;
}

static void *fds_mmap(void *t, int file, uint64_t offset, uint64_t size)
{
    struct rocket_fds *f = t;
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd[file], (off_t)offset);
    if (p == MAP_FAILED) {
        ork_errorf(ORK_ENOMEM, "rocket: mmap of %llu bytes: %s", (unsigned long long)size,
                   strerror(errno));
        return NULL;
    }
    return p;
}

static void fds_munmap(void *t, void *p, uint64_t size)
{
    (void)t;
    munmap(p, size);
}

static int fds_file_open(void *t)
{
    struct rocket_fds *f = t;
    for (uint32_t i = 0; i < ROCKET_MAX_FILES; i++) {
        if (f->fd[i] >= 0)
            continue;
        if (i == 0 && f->n == 0)
            return ork_errorf(ORK_EINVAL, "rocket: transport without its first fd");
        f->fd[i] = open(f->path, O_RDWR | O_CLOEXEC);
        if (f->fd[i] < 0) {
            int e = errno;
            return ork_errorf(errno_to_ork(e), "rocket: opening %s again for another IOMMU "
                              "domain: %s", f->path, strerror(e));
        }
        f->n++;
        return (int)i;
    }
    return ork_errorf(ORK_ERANGE, "rocket: more than %u fds (domains)", ROCKET_MAX_FILES);
}

static void fds_file_close(void *t, int file)
{
    struct rocket_fds *f = t;
    if (file > 0 && f->fd[file] >= 0) {   /* fd 0 closes with the transport */
        close(f->fd[file]);
        f->fd[file] = -1;
        f->n--;
    }
}

static void fds_close(void *t)
{
    struct rocket_fds *f = t;
    for (uint32_t i = 0; i < ROCKET_MAX_FILES; i++)
        if (f->fd[i] >= 0)
            close(f->fd[i]);
    ork_free(f);
}

/* The first open fd of the first file is handed out as file 0 by fds_file_open's caller. */
static int fds_first_open(void *t)
{
    struct rocket_fds *f = t;
    return f->fd[0] >= 0 ? 0 : fds_file_open(t);
}

static void accel_driver_name(int fd, char *name, size_t cap)
{
    name[0] = '\0';
#ifdef ORK_HAVE_LIBDRM
    drmVersionPtr v = drmGetVersion(fd);
    if (v) {
        snprintf(name, cap, "%.*s", v->name_len, v->name);
        drmFreeVersion(v);
    }
#else
    struct ork_drm_version v = { 0 };
    v.name_len = cap - 1;
    v.name = (uint64_t)(uintptr_t)name;
    if (ioctl(fd, (unsigned long)ORK_DRM_IOCTL_VERSION, &v) != 0) {
        name[0] = '\0';
        return;
    }
    name[v.name_len < cap ? v.name_len : cap - 1] = '\0';
#endif
}

static int rocket_open(const struct ork_kmd_opts *o, void **ctx)
{
    const char *node = o && o->struct_size ? o->node : NULL;
    struct rocket_fds *f = ork_calloc(1, sizeof(*f));
    if (!f)
        return ork_errorf(ORK_ENOMEM, "rocket: out of memory");
    for (uint32_t i = 0; i < ROCKET_MAX_FILES; i++)
        f->fd[i] = -1;
    struct ork__kmd_probe pr;
    ork__kmd_probe_init(&pr, "rocket", ROCKET_DRIVER_NAME);
    if (node) {
        ork__kmd_probe_node(&pr, node, accel_driver_name);
    } else {
        DIR *d = opendir("/dev/accel");
        struct dirent *e;
        while (d && pr.fd < 0 && (e = readdir(d)) != NULL) {
            if (strncmp(e->d_name, "accel", 5) != 0)
                continue;
            char path[512];
            snprintf(path, sizeof path, "/dev/accel/%s", e->d_name);
            ork__kmd_probe_node(&pr, path, accel_driver_name);
        }
        if (d)
            closedir(d);
    }
    if (pr.fd < 0) {
        ork_free(f);
        return ork__kmd_probe_error(&pr, node ? node : ROCKET_ACCEL_NODE_PREFIX "*");
    }
    f->fd[0] = pr.fd;
    f->n = 1;
    snprintf(f->path, sizeof f->path, "%s", pr.path);
    ORK_LOGI("rocket: using %s (one fd per IOMMU domain)", f->path);
    struct ork_rocket_transport tr = {
        .t = f, .name = "rocket", .file_open = fds_first_open, .file_close = fds_file_close,
        .ioctl = fds_ioctl, .mmap = fds_mmap, .munmap = fds_munmap, .action = NULL,
        .close = fds_close,
    };
    int ret = ork__kmd_rocket_open_transport(&tr, ctx);
    if (ret == 0) {
        /* later files: new fds on the same node */
        ((struct rocket_ctx *)*ctx)->tr.file_open = fds_file_open;
    }
    return ret;
}

const struct ork_kmd_ops ork__kmd_rocket_ops = {
    .name = "rocket",
    .open = rocket_open,
    .close = ork__kmd_rocket_close,
    .bo_create = ork__kmd_rocket_bo_create,
    .bo_destroy = ork__kmd_rocket_bo_destroy,
    .bo_sync = ork__kmd_rocket_bo_sync,
    .submit = ork__kmd_rocket_submit,
    .wait = ork__kmd_rocket_wait,
    .action = ork__kmd_rocket_action,    /* RESET only: the kernel resets on timeout */
    .query = ork__kmd_rocket_query,
};
