/* kmd_rknpu.c -- the "rknpu" backend: the vendor rknpu DRM driver (spec/rk3588-npu.md §10).
 *
 * Finds the device by driver name through the DRM version ioctl (libdrm's drmGetVersion when
 * ORK_HAVE_LIBDRM), creates/maps/syncs/destroys buffers with MEM_CREATE/MAP/SYNC/DESTROY, keeps
 * a task-descriptor ring per IOMMU domain (KERNEL_MAPPING buffers, §8.1), fills SUBMIT with the
 * §9 subcore_task slot rules, and waits for NONBLOCK jobs through their doorbell (§8.6).
 * Every request goes through a transport (kmd_rknpu.h): a device fd here, the simulator in
 * kmd_sim.c, so both run this same code. No program emission or planning here. */
#include "kmd_rknpu.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
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
#include "uapi/rknpu_uapi.h"

#ifdef ORK_HAVE_LIBDRM
#include <xf86drm.h>
#endif

/* The task-descriptor buffer: 512 KiB, i.e. 13107 descriptors, as the open project reserves
 * (spec §8.1). One per IOMMU domain, because every buffer a submit touches must live in the
 * submit's domain (§13). */
#define RKNPU_TASK_BUF_BYTES (512u << 10)
#define RKNPU_TASK_CAP (RKNPU_TASK_BUF_BYTES / (uint32_t)sizeof(struct rknpu_task))
/* Default job timeout: the vendor runtime's 6000 ms (§10.5). */
#define RKNPU_DEFAULT_TIMEOUT_MS 6000u
/* Matmul task descriptor constants (§8.1). */
#define RKNPU_TASK_INT_CLEAR RKNPU_INT_CLEAR_ALL
/* Per-domain mapping guard the project keeps (§13): 3900 MiB. */
#define RKNPU_DOMAIN_GUARD_BYTES (3900ull << 20)
/* Doorbell polling (§8.6): back to back (each poll is a cache-invalidating MEM_SYNC ioctl) for
 * the first 2 ms, the run time of the executor's longest common jobs (an M = 256 3-core matmul,
 * 1820 us: anchors §3.3, whose figure was 5147 us "before a polling fix"), since a sleep costs
 * about 50 us of timer slack and wake-up (anchors §4: "~50 us per matmul of worker
 * sleep/wake"); then a short sleep per poll up to the bound. */
#define RKNPU_DOORBELL_SPIN_NS 2000000
#define RKNPU_DOORBELL_POLL_NS 2000
#define RKNPU_CACHE_LINE 64u

struct rknpu_taskbuf {
    struct ork_kbo bo;
    uint32_t head;                       /* next free descriptor (ring) */
};

struct rknpu_ctx {
    struct ork_rknpu_transport tr;
    pthread_mutex_t lock;
    struct rknpu_taskbuf tb[RKNPU_MAX_IOMMU_DOMAINS];
    uint64_t seq;                        /* submits issued (job names on a board) */
    uint32_t n_cores;
    uint32_t drv_version;
};

static int rknpu_ioctl(struct rknpu_ctx *c, uint32_t req, void *arg)
{
    return c->tr.ioctl(c->tr.t, req, arg);
}

/* Driver older than 0.9.8 (§10.3): offset 32 of its SUBMIT is regcfg_obj_addr, not
 * iommu_domain_id, so a job cannot name a domain; refuse instead of running in the wrong one. */
static int rknpu_old_driver(const struct rknpu_ctx *c, uint32_t domain)
{
    return ork_errorf(ORK_EUNSUPPORTED, "%s: IOMMU domain %u needs driver 0.9.8 or newer; this "
                      "driver is %u.%u.%u, whose SUBMIT cannot name a domain (§10.3): update the "
                      "rknpu driver, or use a model that fits one domain (~3.8 GiB, §13)",
                      c->tr.name, domain, c->drv_version / 10000, c->drv_version / 100 % 100,
                      c->drv_version % 100);
}

/* ---- buffers ---------------------------------------------------------------------------- */

int ork__kmd_rknpu_bo_create(void *ctx, uint64_t size, uint32_t flags, uint32_t domain,
                             struct ork_kbo *out)
{
    struct rknpu_ctx *c = ctx;
    memset(out, 0, sizeof(*out));
    if (size == 0)
        return ork_errorf(ORK_EINVAL, "%s: buffer of 0 bytes", c->tr.name);
    if (domain >= RKNPU_MAX_IOMMU_DOMAINS)
        return ork_errorf(ORK_EINVAL, "%s: IOMMU domain %u outside 0..%u (§13)", c->tr.name,
                          domain, RKNPU_MAX_IOMMU_DOMAINS - 1);
    if (domain != 0 && c->drv_version < RKNPU_DRV_VERSION_0_9_8)
        return rknpu_old_driver(c, domain);
    /* validated data-buffer flags 0x403 minus CACHEABLE when the caller wants it uncached,
     * plus KERNEL_MAPPING for task buffers (§10.4) */
    struct rknpu_mem_create mc = {
        .flags = RKNPU_MEM_NON_CONTIGUOUS | RKNPU_MEM_IOMMU_LIMIT_IOVA_ALIGNMENT |
                 ((flags & ORK_KBO_CACHEABLE) ? RKNPU_MEM_CACHEABLE : 0) |
                 ((flags & ORK_KBO_KERNEL_MAP) ? RKNPU_MEM_KERNEL_MAPPING : 0) |
                 ((flags & ORK_KBO_ZEROED) ? RKNPU_MEM_ZEROING : 0),
        .size = size,
        .iommu_domain_id = (int32_t)domain,
    };
    int ret = rknpu_ioctl(c, DRM_IOCTL_RKNPU_MEM_CREATE, &mc);
    if (ret < 0)
        return ret;
    if (mc.dma_addr > UINT32_MAX || mc.dma_addr == 0) {
        ret = ork_errorf(ORK_EDEVICE, "%s: MEM_CREATE returned IOVA 0x%llx, not a non-zero "
                         "32-bit address (§1.2)", c->tr.name, (unsigned long long)mc.dma_addr);
        goto err_destroy;
    }
    struct rknpu_mem_map mm = { .handle = mc.handle };
    ret = rknpu_ioctl(c, DRM_IOCTL_RKNPU_MEM_MAP, &mm);
    if (ret < 0)
        goto err_destroy;
    void *map = c->tr.mmap(c->tr.t, mm.offset, size);
    if (!map) {
        ret = ORK_ENOMEM;
        goto err_destroy;
    }
    out->handle = mc.handle;
    out->flags = flags;
    out->size = size;
    out->iova = (uint32_t)mc.dma_addr;
    out->domain = domain;
    out->cookie = mc.obj_addr;
    out->map_offset = mm.offset;
    out->map = map;
    return 0;
err_destroy:;
    struct rknpu_mem_destroy md = { .handle = mc.handle, .obj_addr = mc.obj_addr };
    rknpu_ioctl(c, DRM_IOCTL_RKNPU_MEM_DESTROY, &md);
    return ret;
}

void ork__kmd_rknpu_bo_destroy(void *ctx, struct ork_kbo *bo)
{
    struct rknpu_ctx *c = ctx;
    if (!bo || (!bo->handle && !bo->map))
        return;
    if (bo->map)
        c->tr.munmap(c->tr.t, bo->map, bo->size);
    struct rknpu_mem_destroy md = { .handle = bo->handle, .obj_addr = bo->cookie };
    if (rknpu_ioctl(c, DRM_IOCTL_RKNPU_MEM_DESTROY, &md) < 0)
        ORK_LOGW("%s: MEM_DESTROY of buffer at IOVA 0x%08x failed: %s", c->tr.name, bo->iova,
                 ork_error_message());
    memset(bo, 0, sizeof(*bo));
}

int ork__kmd_rknpu_bo_sync(void *ctx, const struct ork_kbo *bo, uint64_t off, uint64_t size,
                           enum ork_kbo_sync dir)
{
    struct rknpu_ctx *c = ctx;
    if (off > bo->size || size > bo->size - off)
        return ork_errorf(ORK_ERANGE, "%s: sync of [%llu, +%llu) outside the %llu-byte buffer at "
                          "IOVA 0x%08x", c->tr.name, (unsigned long long)off,
                          (unsigned long long)size, (unsigned long long)bo->size, bo->iova);
    struct rknpu_mem_sync ms = {
        .flags = ((dir & ORK_KBO_SYNC_TO_DEVICE) ? RKNPU_MEM_SYNC_TO_DEVICE : 0) |
                 ((dir & ORK_KBO_SYNC_FROM_DEVICE) ? RKNPU_MEM_SYNC_FROM_DEVICE : 0),
        .obj_addr = bo->cookie,
        .offset = off,
        .size = size,
    };
    return rknpu_ioctl(c, DRM_IOCTL_RKNPU_MEM_SYNC, &ms);
}

/* ---- submit ---------------------------------------------------------------------------- */

int ork__kmd_rknpu_fill_submit(const struct ork_kjob *job, uint32_t base, uint64_t task_obj_addr,
                               uint32_t n_cores, struct rknpu_submit *s)
{
    memset(s, 0, sizeof(*s));
    if (!job->tasks || job->n_tasks == 0)
        return ork_errorf(ORK_EINVAL, "rknpu submit: job has no tasks");
    uint32_t all = (1u << n_cores) - 1;
    if (job->core_mask & ~all)
        return ork_errorf(ORK_EINVAL, "rknpu submit: core_mask 0x%x names cores beyond the %u "
                          "present (§9)", job->core_mask, n_cores);
    struct rknpu_subcore_task r[ORK_KMD_MAX_CORES] = { { 0, 0 } };
    uint32_t mask = job->core_mask ? job->core_mask : 1u;  /* auto: range[0] describes it */
    uint32_t first = 0;
    for (uint32_t i = 0; i < n_cores; i++) {
        if (!(mask & (1u << i)))
            continue;
        const struct ork_kcore_range *cr = &job->range[i];
        if (cr->count == 0 || cr->start >= job->n_tasks || cr->count > job->n_tasks - cr->start)
            return ork_errorf(ORK_EINVAL, "rknpu submit: core %u task range {start %u, count %u} "
                              "outside the job's %u tasks (an empty slot Oopses the kernel, §9)",
                              i, cr->start, cr->count, job->n_tasks);
        r[i].task_start = base + cr->start;
        r[i].task_number = cr->count;
        if (!r[first].task_number)
            first = i;
    }
    s->flags = RKNPU_JOB_PC | ((job->flags & ORK_KJOB_NONBLOCK) ? RKNPU_JOB_NONBLOCK : 0) |
               ((job->flags & ORK_KJOB_PINGPONG) ? RKNPU_JOB_PINGPONG : 0);
    s->timeout = job->timeout_ms ? job->timeout_ms : RKNPU_DEFAULT_TIMEOUT_MS;
    s->task_start = base;
    s->task_number = job->n_tasks;
    s->priority = 0;
    s->task_obj_addr = task_obj_addr;
    s->iommu_domain_id = job->domain;
    s->task_base_addr = 0;               /* TASK_DMA_BASE_ADDR; 0 works (§10.3) */
    s->core_mask = job->core_mask;
    s->fence_fd = -1;                    /* fences compiled out of the reference kernel */
    /* §9: 1- and 2-core jobs read subcore_task[i]; 3-core jobs read subcore_task[i + 2].
     * Every slot a job could read is filled (unfilled slots Oopsed the kernel): slots 0..2
     * default to the first core's range, then the real per-core slots are written. */
    int ncores = __builtin_popcount(mask);
    for (uint32_t slot = 0; slot < RKNPU_MAX_SUBCORE_TASKS; slot++)
        s->subcore_task[slot] = r[first];
    for (uint32_t i = 0; i < n_cores; i++) {
        if (!(mask & (1u << i)))
            continue;
        if (ncores == 3)
            s->subcore_task[i + 2] = r[i];
        else
            s->subcore_task[i] = r[i];
    }
    if (ncores == 3) {                   /* keep slots 0, 1 meaningful for the 1/2-core table */
        s->subcore_task[0] = r[0];
        s->subcore_task[1] = r[1];
    }
    return 0;
}

static int rknpu_taskbuf_get(struct rknpu_ctx *c, uint32_t domain, struct rknpu_taskbuf **out)
{
    struct rknpu_taskbuf *tb = &c->tb[domain];
    if (!tb->bo.map) {
        /* the validated task-buffer flags 0x40b (§10.4) */
        int ret = ork__kmd_rknpu_bo_create(c, RKNPU_TASK_BUF_BYTES,
                                           ORK_KBO_CACHEABLE | ORK_KBO_KERNEL_MAP, domain, &tb->bo);
        if (ret < 0)
            return ret;
        tb->head = 0;
    }
    *out = tb;
    return 0;
}

int ork__kmd_rknpu_submit(void *ctx, struct ork_kjob *job)
{
    struct rknpu_ctx *c = ctx;
    job->task_counter = 0;
    job->hw_elapse_ns = 0;
    if (job->domain >= RKNPU_MAX_IOMMU_DOMAINS)
        return ork_errorf(ORK_EINVAL, "%s: IOMMU domain %u outside 0..%u (§13)", c->tr.name,
                          job->domain, RKNPU_MAX_IOMMU_DOMAINS - 1);
    if (job->domain != 0 && c->drv_version < RKNPU_DRV_VERSION_0_9_8)
        return rknpu_old_driver(c, job->domain);
    if (job->n_tasks > RKNPU_TASK_CAP)
        return ork_errorf(ORK_EINVAL, "%s: %u tasks > task buffer capacity %u (§8.1)",
                          c->tr.name, job->n_tasks, RKNPU_TASK_CAP);
    pthread_mutex_lock(&c->lock);
    struct rknpu_taskbuf *tb;
    int ret = rknpu_taskbuf_get(c, job->domain, &tb);
    if (ret < 0)
        goto out_unlock;
    uint32_t base = tb->head;
    if (job->n_tasks > RKNPU_TASK_CAP - base)
        base = 0;                        /* wrap; older ranges are long finished */
    struct rknpu_submit s;
    ret = ork__kmd_rknpu_fill_submit(job, base, tb->bo.cookie, c->n_cores, &s);
    if (ret < 0)
        goto out_unlock;
    tb->head = base + job->n_tasks;
    struct rknpu_task *d = (struct rknpu_task *)tb->bo.map + base;
    for (uint32_t i = 0; i < job->n_tasks; i++) {
        const struct ork_ktask *t = &job->tasks[i];
        struct rknpu_task desc = {
            .flags = 0,
            .op_idx = t->op_idx,
            .enable_mask = t->enable_mask,
            .int_mask = t->int_mask,
            .int_clear = RKNPU_TASK_INT_CLEAR,
            .int_status = 0,
            .regcfg_amount = t->regcfg_amount,
            .regcfg_offset = 0,
            .regcmd_addr = t->regcmd_iova,
        };
        memcpy(&d[i], &desc, sizeof desc);
    }
    ret = ork__kmd_rknpu_bo_sync(c, &tb->bo, (uint64_t)base * sizeof(struct rknpu_task),
                                 (uint64_t)job->n_tasks * sizeof(struct rknpu_task),
                                 ORK_KBO_SYNC_TO_DEVICE);
    if (ret < 0)
        goto out_unlock;
    if (ork_debug(ORK_DBG_SUBMIT))
        ORK_LOGI("%s: submit %u task(s) at descriptor %u, cores 0x%x, domain %u, flags 0x%x",
                 c->tr.name, job->n_tasks, base, job->core_mask, job->domain, s.flags);
    /* The request runs unlocked: a blocking submit may take the whole timeout, and the cores'
     * submitting threads must not wait for each other. The simulator names jobs for wait() by
     * its per-thread count of accepted submits; on a board they carry our own count. */
    uint64_t seq = ++c->seq;
    pthread_mutex_unlock(&c->lock);
    ret = rknpu_ioctl(c, DRM_IOCTL_RKNPU_SUBMIT, &s);
    job->seq = c->tr.last_seq ? c->tr.last_seq(c->tr.t) : seq;
    job->task_counter = s.task_counter;
    job->hw_elapse_ns = s.hw_elapse_time > 0 ? s.hw_elapse_time * 1000 : 0;
    return ret;
out_unlock:
    pthread_mutex_unlock(&c->lock);
    return ret;
}

static int rknpu_doorbell_wait(struct rknpu_ctx *c, struct ork_kjob *job, int64_t timeout_ns)
{
    const struct ork_kbo *bo = job->doorbell_bo;
    if (!bo || !bo->map || job->doorbell_off + 4 > bo->size)
        return ork_errorf(ORK_EUNSUPPORTED, "%s: waiting for a NONBLOCK job needs its doorbell "
                          "word (the driver has no wait ioctl, §8.6)", c->tr.name);
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint64_t line = job->doorbell_off & ~(uint64_t)(RKNPU_CACHE_LINE - 1);
    uint64_t len = bo->size - line < RKNPU_CACHE_LINE ? bo->size - line : RKNPU_CACHE_LINE;
    const volatile uint32_t *word =
        (const volatile uint32_t *)((const uint8_t *)bo->map + job->doorbell_off);
    for (;;) {
        if (bo->flags & ORK_KBO_CACHEABLE) {
            int ret = ork__kmd_rknpu_bo_sync(c, bo, line, len, ORK_KBO_SYNC_FROM_DEVICE);
            if (ret < 0)
                return ret;
        }
        if (*word != job->doorbell_sentinel) {
            __atomic_thread_fence(__ATOMIC_ACQUIRE);   /* the word is written last (§8.6) */
            job->task_counter = job->n_tasks;
            return 0;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        int64_t el = (int64_t)(now.tv_sec - t0.tv_sec) * 1000000000 + (now.tv_nsec - t0.tv_nsec);
        if (el < RKNPU_DOORBELL_SPIN_NS && el <= timeout_ns)
            continue;
        if (el > timeout_ns)
            return ork_errorf(ORK_ETIMEDOUT, "%s: NONBLOCK job %llu: doorbell at IOVA 0x%08x + %llu "
                              "still 0x%08x after %.1f ms (dispatch drop? reset and resubmit, "
                              "§8.6)", c->tr.name, (unsigned long long)job->seq, bo->iova,
                              (unsigned long long)job->doorbell_off, job->doorbell_sentinel,
                              (double)el / 1e6);
        struct timespec ts = { 0, RKNPU_DOORBELL_POLL_NS };
        nanosleep(&ts, NULL);
    }
}

int ork__kmd_rknpu_wait(void *ctx, struct ork_kjob *job, int64_t timeout_ns)
{
    struct rknpu_ctx *c = ctx;
    if (!(job->flags & ORK_KJOB_NONBLOCK))
        return 0;                        /* a blocking submit already returned its result */
    if (timeout_ns < 0)
        timeout_ns = (int64_t)(job->timeout_ms ? job->timeout_ms : RKNPU_DEFAULT_TIMEOUT_MS) *
                     1000000;
    if (c->tr.wait) {
        int ret = c->tr.wait(c->tr.t, job->seq, timeout_ns);
        if (ret == 0)
            job->task_counter = job->n_tasks;
        return ret;
    }
    return rknpu_doorbell_wait(c, job, timeout_ns);
}

/* ---- actions, caps ------------------------------------------------------------------------ */

int ork__kmd_rknpu_action(void *ctx, enum ork_kmd_action act, uint32_t *value)
{
    struct rknpu_ctx *c = ctx;
    struct rknpu_action a = { 0, 0 };
    switch (act) {
    case ORK_KMD_ACT_RESET: a.flags = RKNPU_ACT_RESET; break;
    case ORK_KMD_ACT_GET_FREQ: a.flags = RKNPU_GET_FREQ; break;
    case ORK_KMD_ACT_GET_DRV_VERSION: a.flags = RKNPU_GET_DRV_VERSION; break;
    case ORK_KMD_ACT_GET_HW_VERSION: a.flags = RKNPU_GET_HW_VERSION; break;
    default:
        return ork_errorf(ORK_EUNSUPPORTED, "%s: action %d not supported", c->tr.name, (int)act);
    }
    int ret = rknpu_ioctl(c, DRM_IOCTL_RKNPU_ACTION, &a);
    if (ret < 0)
        return ret;
    if (value)
        *value = act == ORK_KMD_ACT_GET_FREQ ? a.value / 1000000u : a.value;  /* Hz -> MHz */
    return 0;
}

int ork__kmd_rknpu_query(void *ctx, enum ork_kmd_cap cap, uint64_t *val)
{
    struct rknpu_ctx *c = ctx;
    switch (cap) {
    case ORK_KMD_CAP_N_CORES: *val = c->n_cores; return 0;
    case ORK_KMD_CAP_N_DOMAINS:
        *val = c->drv_version < RKNPU_DRV_VERSION_0_9_8 ? 1 : RKNPU_MAX_IOMMU_DOMAINS;
        return 0;
    case ORK_KMD_CAP_DOMAIN_BYTES: *val = RKNPU_DOMAIN_GUARD_BYTES; return 0;
    case ORK_KMD_CAP_PC_CHAIN: *val = 1; return 0;
    case ORK_KMD_CAP_CORE_SELECT: *val = 1; return 0;
    case ORK_KMD_CAP_MAX_TASKS: *val = RKNPU_TASK_CAP; return 0;
    case ORK_KMD_CAP_SIM: *val = strcmp(c->tr.name, "sim") == 0; return 0;
    case ORK_KMD_CAP_MULTI_JOB: *val = 0; return 0;
    case ORK_KMD_CAP_ONE_JOB_CONFIRMED: *val = 0; return 0;    /* §9 [CAP]: not by us */
    case ORK_KMD_CAP_DCOMP_CONFIRMED: *val = 0; return 0;      /* a capability file's to say */
    case ORK_KMD_CAP_W4A8_CONFIRMED: *val = 0; return 0;       /* a capability file's to say */
    case ORK_KMD_CAP_DRV_VERSION: *val = c->drv_version; return 0;
    default:
        return ork_errorf(ORK_EUNSUPPORTED, "%s: unknown capability %d", c->tr.name, (int)cap);
    }
}

/* ---- open / close ---------------------------------------------------------------------- */

int ork__kmd_rknpu_open_transport(const struct ork_rknpu_transport *tr, uint32_t n_cores,
                                  void **ctx)
{
    struct rknpu_ctx *c = ork_calloc(1, sizeof(*c));
    if (!c) {
        tr->close(tr->t);
        return ork_errorf(ORK_ENOMEM, "%s: out of memory", tr->name);
    }
    c->tr = *tr;
    c->n_cores = n_cores ? n_cores : ORK_KMD_MAX_CORES;
    pthread_mutex_init(&c->lock, NULL);
    /* §10.7 step 1: driver version, then ACT_RESET (the vendor runtimes reset at init; without
     * it task iteration may not advance, NO_RESET_AT_INIT §14.4) */
    struct rknpu_action a = { .flags = RKNPU_GET_DRV_VERSION };
    int ret = rknpu_ioctl(c, DRM_IOCTL_RKNPU_ACTION, &a);
    if (ret < 0)
        goto err;
    c->drv_version = a.value;
    if (a.value < RKNPU_DRV_VERSION_0_9_8)
        ORK_LOGW("%s: driver version %u.%u.%u is older than 0.9.8: its SUBMIT has no "
                 "iommu_domain_id (regcfg_obj_addr at offset 32, §10.3), so only IOMMU domain 0 "
                 "is usable: models needing more than one domain are refused", tr->name,
                 a.value / 10000, a.value / 100 % 100, a.value % 100);
    a = (struct rknpu_action){ .flags = RKNPU_ACT_RESET };
    ret = rknpu_ioctl(c, DRM_IOCTL_RKNPU_ACTION, &a);
    if (ret < 0)
        goto err;
    *ctx = c;
    return 0;
err:
    c->tr.close(c->tr.t);
    pthread_mutex_destroy(&c->lock);
    ork_free(c);
    return ret;
}

void *ork__kmd_rknpu_transport_ctx(void *ctx)
{
    return ctx ? ((struct rknpu_ctx *)ctx)->tr.t : NULL;
}

void ork__kmd_rknpu_close(void *ctx)
{
    struct rknpu_ctx *c = ctx;
    if (!c)
        return;
    for (uint32_t d = 0; d < RKNPU_MAX_IOMMU_DOMAINS; d++)
        ork__kmd_rknpu_bo_destroy(c, &c->tb[d].bo);
    c->tr.close(c->tr.t);
    pthread_mutex_destroy(&c->lock);
    ork_free(c);
}

/* ---- the device-fd transport ------------------------------------------------------------- */

struct rknpu_fd {
    int fd;
};

static int errno_to_ork(int e)
{
    switch (e) {
    case ETIMEDOUT: return ORK_ETIMEDOUT;
    case ENOMEM: return ORK_ENOMEM;
    case EFAULT: return ORK_EFAULT;
    case EINVAL: return ORK_EINVAL;
    case EBUSY: return ORK_EBUSY;
    case ENOENT: case ENODEV: return ORK_ENOENT;
    case EACCES: case EPERM: return ORK_EACCES;
    default: return ORK_EDEVICE;
    }
}

static const char *rknpu_req_name(uint32_t req)
{
    switch (ORK_IOC_NR(req) - ORK_DRM_COMMAND_BASE) {
    case RKNPU_CMD_ACTION: return "ACTION";
    case RKNPU_CMD_SUBMIT: return "SUBMIT";
    case RKNPU_CMD_MEM_CREATE: return "MEM_CREATE";
    case RKNPU_CMD_MEM_MAP: return "MEM_MAP";
    case RKNPU_CMD_MEM_DESTROY: return "MEM_DESTROY";
    case RKNPU_CMD_MEM_SYNC: return "MEM_SYNC";
    default: return "?";
    }
}

static int fd_ioctl(void *t, uint32_t req, void *arg)
{
    struct rknpu_fd *f = t;
    int r;
    do
        r = ioctl(f->fd, (unsigned long)req, arg);
    while (r == -1 && (errno == EINTR || errno == EAGAIN));
    if (r == -1) {
        int e = errno;
        return ork_errorf(errno_to_ork(e), "rknpu %s ioctl: %s (errno %d)", rknpu_req_name(req),
                          strerror(e), e);
    }
    return 0;
}

static void *fd_mmap(void *t, uint64_t offset, uint64_t size)
{
    struct rknpu_fd *f = t;
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, (off_t)offset);
    if (p == MAP_FAILED) {
        ork_errorf(ORK_ENOMEM, "rknpu mmap of %llu bytes at offset 0x%llx: %s",
                   (unsigned long long)size, (unsigned long long)offset, strerror(errno));
        return NULL;
    }
    return p;
}

static void fd_munmap(void *t, void *p, uint64_t size)
{
    munmap(p, size);
}

static void fd_close(void *t)
{
    struct rknpu_fd *f = t;
    if (f->fd >= 0)
        close(f->fd);
    ork_free(f);
}

/* Driver name of a DRM node, or "" when it is not a DRM device. */
static void drm_driver_name(int fd, char *name, size_t cap)
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
    if (ioctl(fd, (unsigned long)ORK_DRM_IOCTL_VERSION, &v) == 0)
        name[v.name_len < cap ? v.name_len : cap - 1] = '\0';
    else
        name[0] = '\0';
#endif
}

/* Probe the DRM nodes under `dir` whose names start with `prefix` ("card" or "renderD") for
 * the rknpu driver (kmd_discovery.h: denied nodes are remembered, never "not found"). */
static void drm_probe(struct ork__kmd_probe *p, const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && p->fd < 0) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
            continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        ork__kmd_probe_node(p, path, drm_driver_name);
    }
    closedir(d);
}

static int rknpu_open(const struct ork_kmd_opts *o, void **ctx)
{
    const char *node = o && o->struct_size ? o->node : NULL;
    struct ork__kmd_probe pr;
    ork__kmd_probe_init(&pr, "rknpu", RKNPU_DRIVER_NAME);
    if (node) {
        ork__kmd_probe_node(&pr, node, drm_driver_name);
        if (pr.fd < 0)
            return ork__kmd_probe_error(&pr, node);
    } else {
        /* submit on the card node: on the render node submits run 0 tasks (§10.1, §14.5) */
        drm_probe(&pr, "/dev/dri", "card");
        if (pr.fd < 0 && !pr.n_denied) {
            struct ork__kmd_probe rp;
            ork__kmd_probe_init(&rp, "rknpu", RKNPU_DRIVER_NAME);
            drm_probe(&rp, "/dev/dri", "renderD");
            if (rp.fd >= 0) {
                close(rp.fd);
                return ork_errorf(ORK_EDEVICE, "rknpu: found only the render node %s; submits "
                                  "there run 0 tasks (RENDER_NODE, §10.1): give access to the "
                                  "card node", rp.path);
            }
        }
        if (pr.fd < 0)
            return ork__kmd_probe_error(&pr, "/dev/dri/card*");
    }
    int fd = pr.fd;
    char path[512];
    snprintf(path, sizeof path, "%s", pr.path);
    struct rknpu_fd *f = ork_calloc(1, sizeof(*f));
    if (!f) {
        close(fd);
        return ork_errorf(ORK_ENOMEM, "rknpu: out of memory");
    }
    f->fd = fd;
    struct ork_rknpu_transport tr = {
        .t = f, .name = "rknpu", .ioctl = fd_ioctl, .mmap = fd_mmap, .munmap = fd_munmap,
        .wait = NULL, .last_seq = NULL, .close = fd_close,
    };
    ORK_LOGI("rknpu: using %s", path);
    return ork__kmd_rknpu_open_transport(&tr, ORK_KMD_MAX_CORES, ctx);
}

const struct ork_kmd_ops ork__kmd_rknpu_ops = {
    .name = "rknpu",
    .open = rknpu_open,
    .close = ork__kmd_rknpu_close,
    .bo_create = ork__kmd_rknpu_bo_create,
    .bo_destroy = ork__kmd_rknpu_bo_destroy,
    .bo_sync = ork__kmd_rknpu_bo_sync,
    .submit = ork__kmd_rknpu_submit,
    .wait = ork__kmd_rknpu_wait,
    .action = ork__kmd_rknpu_action,
    .query = ork__kmd_rknpu_query,
};
