/* sim_dev.c -- the simulated rknpu device: creation, buffer objects with 32-bit IOVAs in
 * per-domain windows (spec §13), mmap offsets, MEM_CREATE / MEM_MAP / MEM_SYNC / MEM_DESTROY
 * (§10.3), ACTION (§10.6), the ioctl dispatcher (§10.2), counters and the debugfs `load` file
 * (§12.1). SUBMIT and the task walker live in sim_submit.c; program execution in exec*.c. */
#include "sim_priv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/log.h>
#include <ork/twin.h>

#include "uapi/rknpu_uapi.h"

#define SIM_OPP_MIN_HZ 300000000u      /* NPU OPP table 300 MHz - 1 GHz (§1.2) */
#define SIM_OPP_MAX_HZ 1000000000u

int64_t ork__sim_real_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t ork__sim_now(struct ork_sim *sim)
{
    if (sim->o.timing == ORK_SIM_TIMING_PACED || sim->o.timing == ORK_SIM_TIMING_PACED_ONLY) {
        int64_t r = ork__sim_real_ns() - sim->epoch_real_ns;
        if (r > sim->now_ns)
            sim->now_ns = r;
    }
    return sim->now_ns;
}

int ork__sim_create(const struct ork_sim_opts *opts, struct ork_sim **out)
{
    struct ork_sim *sim = ork_calloc(1, sizeof(*sim));
    if (!sim)
        return ork_errorf(ORK_ENOMEM, "sim: out of memory creating the device");
    if (opts && opts->struct_size) {
        size_t n = opts->struct_size < sizeof(sim->o) ? opts->struct_size : sizeof(sim->o);
        memcpy(&sim->o, opts, n);
    }
    sim->o.struct_size = sizeof(sim->o);
    if (sim->o.n_cores == 0)
        sim->o.n_cores = SIM_MAX_CORES;
    if (sim->o.n_cores > SIM_MAX_CORES) {
        ork_free(sim);
        return ork_errorf(ORK_EINVAL, "sim: n_cores %u > %d (RK3588 has 3 NPU cores, §1.1)",
                          opts->n_cores, SIM_MAX_CORES);
    }
    if (sim->o.domain_limit == 0 || sim->o.domain_limit > (uint64_t)(SIM_IOVA_TOP - SIM_IOVA_FLOOR))
        sim->o.domain_limit = sim->o.domain_limit ? (uint64_t)(SIM_IOVA_TOP - SIM_IOVA_FLOOR)
                                                  : SIM_DEFAULT_DOMAIN_LIMIT;
    if (sim->o.freq_mhz == 0)
        sim->o.freq_mhz = SIM_DEFAULT_FREQ_MHZ;
    if (sim->o.twin) {
        int ret = ork_twin_consts_check(sim->o.twin);
        if (ret < 0) {
            ork_free(sim);
            return ret;    /* the message names the constant */
        }
    }
    ork__sim_timing_from_twin(sim->o.twin, &sim->timing);
    if (!(sim->o.dcomp_gbps >= 0) || !isfinite(sim->o.dcomp_gbps)) {
        const double bad = sim->o.dcomp_gbps;
        ork_free(sim);
        return ork_errorf(ORK_ERANGE, "sim: dcomp_gbps %g must be > 0 (0 = the twin's "
                          "npu_dcomp_gbps)", bad);
    }
    if (sim->o.dcomp_gbps > 0)
        sim->timing.dcomp_bps = sim->o.dcomp_gbps * 1e9;
    sim->o.twin = NULL;    /* copied: the caller's table is not kept */
    if (sim->o.load_path) {
        sim->load_path = ork_strdup(sim->o.load_path);
        if (!sim->load_path) {
            ork_free(sim);
            return ork_errorf(ORK_ENOMEM, "sim: out of memory");
        }
        sim->o.load_path = sim->load_path;
    }
    sim->rf = ork_malloc(sizeof(*sim->rf));
    if (!sim->rf) {
        ork_free(sim->load_path);
        ork_free(sim);
        return ork_errorf(ORK_ENOMEM, "sim: out of memory for the register file");
    }
    for (int i = 0; i < SIM_MAX_CORES; i++) {
        sim->core[i].last_prec = -1;
        for (int b = 0; b < SIM_LOAD_BUCKETS; b++)
            sim->core[i].load[b].index = -1;
    }
    pthread_mutex_init(&sim->lock, NULL);
    sim->epoch_real_ns = ork__sim_real_ns();
    ork__sim_load_update(sim);
    *out = sim;
    return 0;
}

static void sim_bo_free_mem(struct sim_bo *bo)
{
    if (bo->cpu && bo->cpu != bo->dev)
        munmap(bo->cpu, bo->size);
    if (bo->dev)
        munmap(bo->dev, bo->size);
}

void ork__sim_destroy(struct ork_sim *sim)
{
    if (!sim)
        return;
    int64_t now = ork__sim_now(sim);
    for (uint32_t i = 0; i < SIM_JOB_RING; i++) {
        /* board_wait: the host polls doorbells, so the model clock lags completions */
        if (sim->jobs[i].seq && sim->jobs[i].done_ns > now && !sim->o.board_wait) {
            ORK_LOGW("sim: device closed with job %llu still in flight: a wedge risk on a "
                     "board (CLOSE_IN_FLIGHT, §14.5)", (unsigned long long)sim->jobs[i].seq);
            break;
        }
    }
    for (uint32_t h = 1; h < sim->n_handles; h++) {
        if (sim->handles[h]) {
            sim_bo_free_mem(sim->handles[h]);
            ork_free(sim->handles[h]);
        }
    }
    for (uint32_t d = 0; d < SIM_MAX_DOMAINS; d++)
        ork_free(sim->dom[d].bos);
    ork_free(sim->handles);
    ork_free(sim->rf);
    ork_free(sim->load_path);
    pthread_mutex_destroy(&sim->lock);
    ork_free(sim);
}

/* ---- buffer objects ------------------------------------------------------------------- */

struct sim_bo *ork__sim_bo_by_obj(struct ork_sim *sim, uint64_t obj_addr)
{
    if (obj_addr < SIM_OBJ_ADDR_BASE || (obj_addr - SIM_OBJ_ADDR_BASE) % SIM_PAGE)
        return NULL;
    uint64_t h = (obj_addr - SIM_OBJ_ADDR_BASE) / SIM_PAGE;
    if (h == 0 || h >= sim->n_handles)
        return NULL;
    return sim->handles[h];
}

static struct sim_bo *sim_bo_by_handle(struct ork_sim *sim, uint32_t handle)
{
    return handle && handle < sim->n_handles ? sim->handles[handle] : NULL;
}

struct sim_bo *ork__sim_bo_find(struct ork_sim *sim, uint32_t domain, uint32_t iova, uint64_t len)
{
    if (domain >= SIM_MAX_DOMAINS)
        return NULL;
    struct sim_domain *d = &sim->dom[domain];
    uint32_t lo = 0, hi = d->n;              /* last BO with bo->iova <= iova */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (d->bos[mid]->iova <= iova)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    struct sim_bo *bo = d->bos[lo - 1];
    uint64_t off = (uint64_t)iova - bo->iova;
    if (off >= bo->size || len > bo->size - off)
        return NULL;
    return bo;
}

struct sim_bo *ork__sim_bo_any(struct ork_sim *sim, uint32_t iova)
{
    for (uint32_t d = 0; d < SIM_MAX_DOMAINS; d++) {
        struct sim_bo *bo = ork__sim_bo_find(sim, d, iova, 1);
        if (bo)
            return bo;
    }
    return NULL;
}

/* Highest free, page-aligned range of `size` bytes in the domain window (top-down, §13). */
static int sim_iova_alloc(struct sim_domain *d, uint64_t size, uint32_t *iova, uint32_t *pos)
{
    uint64_t top = SIM_IOVA_TOP;
    for (uint32_t i = d->n; i-- > 0;) {           /* walk BOs from the highest down */
        struct sim_bo *bo = d->bos[i];
        uint64_t end = (uint64_t)bo->iova + bo->size;
        if (top >= end && top - end >= size) {
            *iova = (uint32_t)(top - size);
            *pos = i + 1;
            return 0;
        }
        top = bo->iova;
    }
    if (top >= SIM_IOVA_FLOOR && top - SIM_IOVA_FLOOR >= size) {
        *iova = (uint32_t)(top - size);
        *pos = 0;
        return 0;
    }
    return -1;
}

int ork__sim_bo_new(struct ork_sim *sim, uint32_t domain, uint64_t req_size, uint32_t flags,
                    struct sim_bo **out)
{
    struct sim_domain *d = &sim->dom[domain];
    uint64_t size = (req_size + SIM_PAGE - 1) & ~(uint64_t)(SIM_PAGE - 1);
    if (size > sim->o.domain_limit || d->mapped + size > sim->o.domain_limit)
        return ork_errorf(ORK_ENOMEM, "sim MEM_CREATE: domain %u full: %llu bytes mapped + %llu "
                          "> limit %llu (DOMAIN_FULL, §13/§14.3)", domain,
                          (unsigned long long)d->mapped, (unsigned long long)size,
                          (unsigned long long)sim->o.domain_limit);
    uint32_t iova, pos;
    if (sim_iova_alloc(d, size, &iova, &pos) < 0)
        return ork_errorf(ORK_ENOMEM, "sim MEM_CREATE: no free %llu-byte IOVA range in domain %u",
                          (unsigned long long)size, domain);
    if (d->n == d->cap) {
        uint32_t cap = d->cap ? d->cap * 2 : 64;
        struct sim_bo **nb = ork_realloc(d->bos, cap * sizeof(*nb));
        if (!nb)
            return ork_errorf(ORK_ENOMEM, "sim MEM_CREATE: out of memory");
        d->bos = nb;
        d->cap = cap;
    }
    uint32_t handle = 0;
    for (uint32_t h = 1; h < sim->n_handles; h++) {
        if (!sim->handles[h]) {
            handle = h;
            break;
        }
    }
    if (!handle) {
        uint32_t n = sim->n_handles ? sim->n_handles * 2 : 64;
        struct sim_bo **nh = ork_realloc(sim->handles, n * sizeof(*nh));
        if (!nh)
            return ork_errorf(ORK_ENOMEM, "sim MEM_CREATE: out of memory");
        memset(nh + sim->n_handles, 0, (n - sim->n_handles) * sizeof(*nh));
        handle = sim->n_handles ? sim->n_handles : 1;
        sim->handles = nh;
        sim->n_handles = n;
    }
    struct sim_bo *bo = ork_calloc(1, sizeof(*bo));
    if (!bo)
        return ork_errorf(ORK_ENOMEM, "sim MEM_CREATE: out of memory");
    /* Anonymous NORESERVE mappings: zeroed (ZEROING is free), and pages of huge weight buffers
     * that a timing-only run never touches cost nothing. */
    bo->dev = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (bo->dev == MAP_FAILED) {
        ork_free(bo);
        return ork_errorf(ORK_ENOMEM, "sim MEM_CREATE: cannot map %llu bytes of host memory",
                          (unsigned long long)size);
    }
    bo->cpu = bo->dev;
    if (sim->o.strict && (flags & RKNPU_MEM_CACHEABLE)) {
        /* strict MISSING_SYNC (§14.3): separate CPU and device copies, copied only on sync */
        bo->cpu = mmap(NULL, size, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (bo->cpu == MAP_FAILED) {
            munmap(bo->dev, size);
            ork_free(bo);
            return ork_errorf(ORK_ENOMEM, "sim MEM_CREATE: cannot map the CPU copy");
        }
    }
    bo->handle = handle;
    bo->flags = flags;
    bo->domain = domain;
    bo->iova = iova;
    bo->size = size;
    bo->obj_addr = SIM_OBJ_ADDR_BASE + (uint64_t)handle * SIM_PAGE;
    bo->mmap_off = (uint64_t)handle << SIM_MMAP_OFF_SHIFT;
    memmove(d->bos + pos + 1, d->bos + pos, (d->n - pos) * sizeof(*d->bos));
    d->bos[pos] = bo;
    d->n++;
    d->mapped += size;
    sim->handles[handle] = bo;
    sim->c.bos++;
    sim->c.bo_bytes += size;
    *out = bo;
    return 0;
}

static int sim_mem_create(struct ork_sim *sim, struct rknpu_mem_create *mc)
{
    if (mc->size == 0)
        return ork_errorf(ORK_EINVAL, "sim MEM_CREATE: size 0");
    if (mc->iommu_domain_id < 0 || (uint32_t)mc->iommu_domain_id >= SIM_MAX_DOMAINS)
        return ork_errorf(ORK_EINVAL, "sim MEM_CREATE: iommu_domain_id %d outside 0..%u (§13)",
                          mc->iommu_domain_id, SIM_MAX_DOMAINS - 1);
    if (mc->flags & RKNPU_MEM_SECURE)
        return ork_errorf(ORK_EUNSUPPORTED, "sim MEM_CREATE: SECURE buffers are not modelled");
    struct sim_bo *bo;
    int ret = ork__sim_bo_new(sim, (uint32_t)mc->iommu_domain_id, mc->size, mc->flags, &bo);
    if (ret < 0)
        return ret;
    mc->handle = bo->handle;
    mc->obj_addr = bo->obj_addr;
    mc->dma_addr = bo->iova;
    mc->sram_size = 0;                   /* stock kernels give the NPU no SRAM (§1.2) */
    return 0;
}

struct sim_bo *ork__sim_bo_by_handle(struct ork_sim *sim, uint32_t handle)
{
    return sim_bo_by_handle(sim, handle);
}

void ork__sim_bo_free(struct ork_sim *sim, struct sim_bo *bo)
{
    struct sim_domain *d = &sim->dom[bo->domain];
    for (uint32_t i = 0; i < d->n; i++) {
        if (d->bos[i] == bo) {
            memmove(d->bos + i, d->bos + i + 1, (d->n - i - 1) * sizeof(*d->bos));
            d->n--;
            break;
        }
    }
    d->mapped -= bo->size;
    sim->c.bos--;
    sim->c.bo_bytes -= bo->size;
    sim->handles[bo->handle] = NULL;
    sim_bo_free_mem(bo);
    ork_free(bo);
}

static int sim_mem_destroy(struct ork_sim *sim, struct rknpu_mem_destroy *md)
{
    struct sim_bo *bo = sim_bo_by_handle(sim, md->handle);
    if (!bo || bo->obj_addr != md->obj_addr)
        return ork_errorf(ORK_EINVAL, "sim MEM_DESTROY: no buffer with handle %u and obj_addr "
                          "0x%llx", md->handle, (unsigned long long)md->obj_addr);
    ork__sim_bo_free(sim, bo);
    return 0;
}

static int sim_mem_map(struct ork_sim *sim, struct rknpu_mem_map *mm)
{
    struct sim_bo *bo = sim_bo_by_handle(sim, mm->handle);
    if (!bo)
        return ork_errorf(ORK_EINVAL, "sim MEM_MAP: no buffer with handle %u", mm->handle);
    mm->offset = bo->mmap_off;
    return 0;
}

static int sim_mem_sync(struct ork_sim *sim, struct rknpu_mem_sync *ms)
{
    struct sim_bo *bo = ork__sim_bo_by_obj(sim, ms->obj_addr);
    if (!bo)
        return ork_errorf(ORK_EINVAL, "sim MEM_SYNC: no buffer with obj_addr 0x%llx",
                          (unsigned long long)ms->obj_addr);
    if (ms->offset > bo->size || ms->size > bo->size - ms->offset)
        return ork_errorf(ORK_EINVAL, "sim MEM_SYNC: range [%llu, +%llu) outside the %llu-byte "
                          "buffer at IOVA 0x%08x", (unsigned long long)ms->offset,
                          (unsigned long long)ms->size, (unsigned long long)bo->size, bo->iova);
    if (!(ms->flags & (RKNPU_MEM_SYNC_TO_DEVICE | RKNPU_MEM_SYNC_FROM_DEVICE)))
        return ork_errorf(ORK_EINVAL, "sim MEM_SYNC: flags 0x%x name no direction", ms->flags);
    if (ms->flags & RKNPU_MEM_SYNC_TO_DEVICE) {
        sim->c.syncs_to_device++;
        if (bo->cpu != bo->dev)
            memcpy(bo->dev + ms->offset, bo->cpu + ms->offset, ms->size);
    }
    if (ms->flags & RKNPU_MEM_SYNC_FROM_DEVICE) {
        sim->c.syncs_from_device++;
        if (bo->cpu != bo->dev)
            memcpy(bo->cpu + ms->offset, bo->dev + ms->offset, ms->size);
    }
    return 0;
}

void *ork__sim_mmap(struct ork_sim *sim, uint64_t offset, uint64_t size)
{
    pthread_mutex_lock(&sim->lock);
    uint64_t h = offset >> SIM_MMAP_OFF_SHIFT;
    struct sim_bo *bo = h < sim->n_handles ? sim->handles[h] : NULL;
    void *p = NULL;
    if (!bo || bo->mmap_off != offset)
        ork_errorf(ORK_EINVAL, "sim mmap: no buffer at offset 0x%llx", (unsigned long long)offset);
    else if (size > bo->size)
        ork_errorf(ORK_EINVAL, "sim mmap: %llu bytes > buffer size %llu",
                   (unsigned long long)size, (unsigned long long)bo->size);
    else
        p = bo->cpu;
    pthread_mutex_unlock(&sim->lock);
    return p;
}

/* ---- actions ------------------------------------------------------------------------------ */

void ork__sim_soft_reset(struct ork_sim *sim)
{
    /* the reset stops whatever a core was still running (a hung job, or a slow one the host
     * gave up on): from now on it is free */
    int64_t now = ork__sim_now(sim);
    for (uint32_t i = 0; i < sim->o.n_cores; i++) {
        sim->core[i].hung = false;
        sim->core[i].last_prec = -1;
        if (sim->core[i].busy_until > now)
            sim->core[i].busy_until = now;
    }
    for (uint32_t i = 0; i < SIM_JOB_RING; i++) {
        struct sim_job *j = &sim->jobs[i];
        if (!j->seq || j->done_ns <= now)
            continue;
        j->done_ns = now;
        if (j->status == 0) {
            j->status = ORK_ETIMEDOUT;
            snprintf(j->msg, sizeof j->msg, "job %llu was stopped by an NPU reset before it "
                     "completed", (unsigned long long)j->seq);
        }
    }
    sim->c.resets++;
}

static int sim_action(struct ork_sim *sim, struct rknpu_action *a)
{
    switch (a->flags) {
    case RKNPU_GET_HW_VERSION:
        a->value = RKNPU_HW_VERSION_RK3588;
        return 0;
    case RKNPU_GET_DRV_VERSION:
        a->value = sim->o.drv_version ? sim->o.drv_version : RKNPU_DRV_VERSION_0_9_8;
        return 0;
    case RKNPU_GET_FREQ:
        a->value = sim->o.freq_mhz * 1000000u;
        return 0;
    case RKNPU_SET_FREQ:
        if (a->value < SIM_OPP_MIN_HZ || a->value > SIM_OPP_MAX_HZ)
            return ork_errorf(ORK_EINVAL, "sim SET_FREQ: %u Hz outside the OPP table "
                              "300 MHz - 1 GHz (§1.2)", a->value);
        sim->o.freq_mhz = a->value / 1000000u;
        return 0;
    case RKNPU_ACT_RESET:
        ork__sim_soft_reset(sim);
        sim->reset_seen = true;
        return 0;
    case RKNPU_GET_IOMMU_EN:
        a->value = 1;
        return 0;
    case RKNPU_GET_IOMMU_DOMAIN_ID:
        a->value = sim->active_domain;
        return 0;
    case RKNPU_SET_IOMMU_DOMAIN_ID:
        if (a->value >= SIM_MAX_DOMAINS)
            return ork_errorf(ORK_EINVAL, "sim SET_IOMMU_DOMAIN_ID: %u outside 0..%u (§13)",
                              a->value, SIM_MAX_DOMAINS - 1);
        return ork__sim_set_domain(sim, a->value);
    case RKNPU_GET_TOTAL_SRAM_SIZE:
    case RKNPU_GET_FREE_SRAM_SIZE:
        a->value = 0;                    /* stock kernels give the SRAM to the decoder (§1.2) */
        return 0;
    case RKNPU_POWER_ON:
        /* returns EINVAL on every init on the reference kernel; harmless (§10.6) */
        return ork_errorf(ORK_EINVAL, "sim POWER_ON: EINVAL (as the reference kernel)");
    case RKNPU_POWER_OFF:
    case RKNPU_SET_PROC_NICE:
    case RKNPU_ACT_CLR_TOTAL_RW_AMOUNT:
        return 0;
    default:
        return ork_errorf(ORK_EINVAL, "sim ACTION: action %u is not modelled", a->flags);
    }
}

/* ---- dispatcher ------------------------------------------------------------------------- */

int ork__sim_ioctl(struct ork_sim *sim, uint32_t request, void *arg)
{
    if (!sim || !arg)
        return ork_errorf(ORK_EINVAL, "sim ioctl: NULL device or argument");
    uint32_t type = ORK_IOC_TYPE(request), nr = ORK_IOC_NR(request), cmd;
    if (type == ORK_DRM_IOCTL_TYPE && nr >= ORK_DRM_COMMAND_BASE)
        cmd = nr - ORK_DRM_COMMAND_BASE;
    else if (type == RKNPU_MISC_IOCTL_TYPE)
        cmd = nr;
    else
        return ork_errorf(ORK_EINVAL, "sim ioctl: request 0x%08x is not an rknpu request", request);
    static const uint32_t sizes[] = {
        [RKNPU_CMD_ACTION] = sizeof(struct rknpu_action),
        [RKNPU_CMD_SUBMIT] = sizeof(struct rknpu_submit),
        [RKNPU_CMD_MEM_CREATE] = sizeof(struct rknpu_mem_create),
        [RKNPU_CMD_MEM_MAP] = sizeof(struct rknpu_mem_map),
        [RKNPU_CMD_MEM_DESTROY] = sizeof(struct rknpu_mem_destroy),
        [RKNPU_CMD_MEM_SYNC] = sizeof(struct rknpu_mem_sync),
    };
    if (cmd >= sizeof sizes / sizeof sizes[0] || ORK_IOC_SIZE(request) != sizes[cmd] ||
        ORK_IOC_DIR(request) != ORK_IOC_DIR_READWRITE)
        return ork_errorf(ORK_EINVAL, "sim ioctl: request 0x%08x (nr 0x%x, size %u) matches no "
                          "rknpu command (§10.2)", request, nr, ORK_IOC_SIZE(request));
    if (cmd == RKNPU_CMD_SUBMIT)
        return ork__sim_submit(sim, arg);   /* takes the lock itself (it may sleep) */
    pthread_mutex_lock(&sim->lock);
    int ret;
    switch (cmd) {
    case RKNPU_CMD_ACTION: ret = sim_action(sim, arg); break;
    case RKNPU_CMD_MEM_CREATE: ret = sim_mem_create(sim, arg); break;
    case RKNPU_CMD_MEM_MAP: ret = sim_mem_map(sim, arg); break;
    case RKNPU_CMD_MEM_DESTROY: ret = sim_mem_destroy(sim, arg); break;
    default: ret = sim_mem_sync(sim, arg); break;
    }
    pthread_mutex_unlock(&sim->lock);
    return ret;
}

bool ork__sim_confirms_dcomp(const struct ork_sim *sim)
{
    return sim && !sim->o.deny_dcomp;
}

bool ork__sim_confirms_w4a8(const struct ork_sim *sim)
{
    return sim && !sim->o.deny_w4a8;
}

bool ork__sim_confirms_one_job(const struct ork_sim *sim)
{
    return sim && sim->o.confirm_one_job;
}

void ork__sim_counters(struct ork_sim *sim, struct ork_sim_counters *out)
{
    pthread_mutex_lock(&sim->lock);
    *out = sim->c;
    out->active_domain = sim->active_domain;
    out->n_cores = sim->o.n_cores;
    out->domain_limit = sim->o.domain_limit;
    out->now_ns = ork__sim_now(sim);
    for (int i = 0; i < SIM_MAX_CORES; i++) {
        out->busy_ns[i] = sim->core[i].busy_total;
        out->core_tasks[i] = sim->core[i].tasks;
    }
    pthread_mutex_unlock(&sim->lock);
}

/* ---- load accounting (§12.1) -------------------------------------------------------------- */

void ork__sim_busy_add(struct ork_sim *sim, int core, int64_t start, int64_t end)
{
    struct sim_core *c = &sim->core[core];
    c->busy_total += end - start;
    /* only the last SIM_LOAD_BUCKETS buckets of the interval can ever be in a window */
    int64_t b_end = (end - 1) / SIM_LOAD_BUCKET_NS;
    int64_t b = start / SIM_LOAD_BUCKET_NS;
    if (b < b_end - SIM_LOAD_BUCKETS + 1)
        b = b_end - SIM_LOAD_BUCKETS + 1;
    for (; b <= b_end && end > start; b++) {
        int64_t s = b * SIM_LOAD_BUCKET_NS, e = s + SIM_LOAD_BUCKET_NS;
        if (s < start)
            s = start;
        if (e > end)
            e = end;
        struct sim_bucket *k = &c->load[b % SIM_LOAD_BUCKETS];
        if (k->index != b) {
            k->index = b;
            k->busy = 0;
        }
        k->busy += e - s;
    }
}

static int sim_load_pct(struct ork_sim *sim, int core, int64_t now)
{
    const struct sim_core *c = &sim->core[core];
    int64_t last = now / SIM_LOAD_BUCKET_NS;
    int64_t first = last - (int64_t)(sim->timing.load_window_ns / SIM_LOAD_BUCKET_NS) + 1;
    int64_t busy = 0;
    for (int i = 0; i < SIM_LOAD_BUCKETS; i++)
        if (c->load[i].index >= first && c->load[i].index <= last)
            busy += c->load[i].busy;
    /* busy ns in the window / 10,000,000, clamped to 100 (§12.1) */
    int64_t pct = busy / 10000000;
    return pct > 100 ? 100 : (int)pct;
}

static int sim_load_text_locked(struct ork_sim *sim, char *buf, int cap)
{
    int pct[SIM_MAX_CORES];
    int64_t now = ork__sim_now(sim);
    /* a job modelled to finish after `now` counts up to its end (instant mode completes at
     * submit; the file then shows the load as of the last completion) */
    for (uint32_t i = 0; i < sim->o.n_cores; i++)
        if (sim->core[i].busy_until > now)
            now = sim->core[i].busy_until;
    for (uint32_t i = 0; i < sim->o.n_cores; i++)
        pct[i] = sim_load_pct(sim, (int)i, now);
    return ork__sim_load_format(buf, cap, pct, (int)sim->o.n_cores);
}

int ork__sim_load_text(struct ork_sim *sim, char *buf, int cap)
{
    pthread_mutex_lock(&sim->lock);
    int ret = sim_load_text_locked(sim, buf, cap);
    pthread_mutex_unlock(&sim->lock);
    return ret;
}

void ork__sim_load_update(struct ork_sim *sim)
{
    if (!sim->load_path)
        return;
    char text[sizeof sim->load_text];
    if (sim_load_text_locked(sim, text, sizeof text) < 0 || strcmp(text, sim->load_text) == 0)
        return;
    /* write-then-rename so a reader (`ork top`) never sees a torn line */
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", sim->load_path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        ORK_LOGW("sim: cannot write load file %s: %s", tmp, strerror(errno));
        return;
    }
    fputs(text, f);
    if (fclose(f) != 0 || rename(tmp, sim->load_path) != 0) {
        ORK_LOGW("sim: cannot update load file %s: %s", sim->load_path, strerror(errno));
        return;
    }
    memcpy(sim->load_text, text, sizeof text);
}
