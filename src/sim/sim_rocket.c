/* sim_rocket.c -- the simulator's model of the mainline rocket accel driver (spec §11), on the
 * same simulated NPU as the rknpu model (sim_dev.c, sim_submit.c):
 *  - files: each open file is its own IOMMU domain and address space (§11.3, §13); file f maps
 *    to the device's domain window f, so addresses never resolve across files;
 *  - CREATE_BO (u32 size; handle, NPU address top-down in the file's window, mmap offset),
 *    PREP_BO (waits for the jobs using the BO until an ABSOLUTE CLOCK_MONOTONIC deadline, then
 *    syncs for the CPU), FINI_BO (syncs for the NPU), GEM_CLOSE; reserved fields must be 0;
 *  - SUBMIT: jobs of tasks; each job runs its tasks in order on one core, one program per kick
 *    (TASK_NUMBER = 1, PC REGISTER_AMOUNTS = (regcmd_count + 1) / 2 - 1, §11.3), on the core
 *    the scheduler picks (the least busy), after the earlier jobs its in/out BO lists depend on
 *    (implicit dependencies: a job reading a BO waits for its writers, a job writing it for
 *    everyone); SUBMIT returns at once (drm_sched), completion is PREP_BO's business;
 *  - the 500 ms job timeout: a task that never completes (ROCKET_COUNT_SHORT, ROCKET_NO_DPU, an
 *    injected HANG or DROP) ends its job 500 ms after it started; the kernel resets that core and
 *    signals the job's fence [INF: PREP_BO then returns 0 with the outputs unwritten; callers
 *    detect it with a sentinel in the last output word, §8.6], and the core stays usable;
 *  - hazards: ROCKET_COUNT_SHORT (§14.1), ROCKET_NO_DPU (§14.5), TIMEOUT (500 ms), and a WARN
 *    when a program writes a BO missing from its job's out list (no implicit dependency orders
 *    that write: a race on a board).
 * Tasks execute through the same executor as rknpu tasks (sim_exec.h). */
#include "sim_priv.h"

#include <stdio.h>
#include <string.h>

#include <ork/debug.h>
#include <ork/error.h>
#include <ork/log.h>

#include "uapi/rocket_uapi.h"

#define MS_NS 1000000ll
/* BO handles one simulated job may list (in + out); mainline has no such bound, ours keeps the
 * per-job record fixed-size. */
#define SIM_ROCKET_MAX_JOB_BOS 64u
#define SIM_ROCKET_MAX_JOBS 64u       /* jobs per SUBMIT the model takes */
#define SIM_ROCKET_MAX_TASKS 65536u   /* tasks per job the model takes */

int ork__sim_rocket_file_open(struct ork_sim *sim)
{
    pthread_mutex_lock(&sim->lock);
    int file = -1;
    for (uint32_t f = 0; f < SIM_MAX_DOMAINS; f++) {
        if (!sim->rocket_file[f]) {
            sim->rocket_file[f] = true;
            file = (int)f;
            break;
        }
    }
    pthread_mutex_unlock(&sim->lock);
    if (file < 0)
        return ork_errorf(ORK_ERANGE, "sim rocket: more than %u open files (the model maps each "
                          "file to one of its %u domain windows)", SIM_MAX_DOMAINS,
                          SIM_MAX_DOMAINS);
    return file;
}

void ork__sim_rocket_file_close(struct ork_sim *sim, int file)
{
    if (file < 0 || (uint32_t)file >= SIM_MAX_DOMAINS)
        return;
    pthread_mutex_lock(&sim->lock);
    /* closing the fd drops its GEM handles (and so its address space) */
    for (uint32_t h = 1; h < sim->n_handles; h++) {
        struct sim_bo *bo = sim->handles[h];
        if (bo && bo->rocket && bo->domain == (uint32_t)file)
            ork__sim_bo_free(sim, bo);
    }
    sim->rocket_file[file] = false;
    pthread_mutex_unlock(&sim->lock);
}

static struct sim_bo *rocket_bo(struct ork_sim *sim, int file, uint32_t handle, const char *what)
{
    struct sim_bo *bo = ork__sim_bo_by_handle(sim, handle);
    if (!bo || !bo->rocket || bo->domain != (uint32_t)file) {
        ork_errorf(ORK_EINVAL, "sim rocket %s: no buffer with handle %u on this file (handles "
                   "are per fd, §11.2)", what, handle);
        return NULL;
    }
    return bo;
}

static int rocket_create_bo(struct ork_sim *sim, int file, struct drm_rocket_create_bo *cb)
{
    if (cb->size == 0)
        return ork_errorf(ORK_EINVAL, "sim rocket CREATE_BO: size 0");
    struct sim_bo *bo;
    /* shmem-backed, CPU-cached: PREP/FINI are the syncs (MISSING_SYNC in strict mode, §14.3) */
    int ret = ork__sim_bo_new(sim, (uint32_t)file, cb->size, RKNPU_MEM_CACHEABLE, &bo);
    if (ret < 0)
        return ret;
    bo->rocket = true;
    bo->r_read_until = bo->r_write_until = 0;
    cb->handle = bo->handle;
    cb->dma_address = bo->iova;
    cb->offset = bo->mmap_off;
    return 0;
}

static void rocket_sync(struct ork_sim *sim, struct sim_bo *bo, bool to_device)
{
    if (to_device) {
        sim->c.syncs_to_device++;
        if (bo->cpu != bo->dev)
            memcpy(bo->dev, bo->cpu, bo->size);
    } else {
        sim->c.syncs_from_device++;
        if (bo->cpu != bo->dev)
            memcpy(bo->cpu, bo->dev, bo->size);
    }
}

/* PREP_BO: wait for every job using the BO, bounded by the absolute deadline (§11.2). */
static int rocket_prep_bo(struct ork_sim *sim, int file, const struct drm_rocket_prep_bo *p,
                          int64_t *sleep_until)
{
    *sleep_until = -1;
    if (p->reserved)
        return ork_errorf(ORK_EINVAL, "sim rocket PREP_BO: reserved is %u, must be 0", p->reserved);
    struct sim_bo *bo = rocket_bo(sim, file, p->handle, "PREP_BO");
    if (!bo)
        return ORK_EINVAL;
    int64_t now = ork__sim_now(sim);
    int64_t until = bo->r_read_until > bo->r_write_until ? bo->r_read_until : bo->r_write_until;
    if (until > now) {
        /* timeout_ns is absolute CLOCK_MONOTONIC (drm_timeout_abs_to_jiffies): time left */
        int64_t left = p->timeout_ns - ork__sim_real_ns();
        if (left <= 0)
            return ork_errorf(ORK_EBUSY, "sim rocket PREP_BO: buffer at 0x%08x is busy for %.3f "
                              "ms more and the deadline %lld ns has passed: timeout_ns is an "
                              "absolute CLOCK_MONOTONIC time, so a relative timeout waits zero "
                              "time (§11.2)", bo->iova, (double)(until - now) / 1e6,
                              (long long)p->timeout_ns);
        bool paced = sim->o.timing == ORK_SIM_TIMING_PACED ||
                     sim->o.timing == ORK_SIM_TIMING_PACED_ONLY;
        if (until - now > left) {
            if (paced)
                *sleep_until = now + left;
            else
                sim->now_ns = now + left;
            return ork_errorf(ORK_ETIMEDOUT, "sim rocket PREP_BO: buffer at 0x%08x still busy "
                              "at the deadline (%.3f ms of jobs left)", bo->iova,
                              (double)(until - now - left) / 1e6);
        }
        if (paced)
            *sleep_until = until;
        else
            sim->now_ns = until;
    }
    rocket_sync(sim, bo, false);
    return 0;
}

/* ---- SUBMIT ------------------------------------------------------------------------------ */

/* One job's BO lists, resolved (the executor's memory callback checks writes against them). */
struct rjob_bos {
    struct ork_sim *sim;
    uint32_t domain;
    struct sim_bo *in[SIM_ROCKET_MAX_JOB_BOS], *out[SIM_ROCKET_MAX_JOB_BOS];
    uint32_t n_in, n_out;
    bool warned;
};

static bool listed(struct sim_bo *const *list, uint32_t n, const struct sim_bo *bo)
{
    for (uint32_t i = 0; i < n; i++)
        if (list[i] == bo)
            return true;
    return false;
}

static void *rjob_map(void *ctx, uint32_t iova, uint64_t len, bool write)
{
    struct rjob_bos *jb = ctx;
    struct sim_bo *bo = ork__sim_bo_find(jb->sim, jb->domain, iova, len);
    if (!bo)
        return NULL;
    uint64_t off = (uint64_t)iova - bo->iova;
    bool ok = write ? listed(jb->out, jb->n_out, bo)
                    : listed(jb->in, jb->n_in, bo) || listed(jb->out, jb->n_out, bo);
    if (!ok && !jb->warned) {
        jb->warned = true;
        jb->sim->c.warnings++;
        ORK_LOGW("sim rocket: the job %s the buffer at 0x%08x, which is not in its %s BO list: "
                 "no implicit dependency orders that access against other jobs (§11.3)",
                 write ? "writes" : "reads", bo->iova, write ? "out" : "in");
    }
    if (!write && bo->cpu != bo->dev && memcmp(bo->cpu + off, bo->dev + off, len) != 0) {
        jb->sim->c.missing_sync++;
        ORK_LOGW("sim rocket: MISSING_SYNC: buffer at 0x%08x read by the NPU differs from the "
                 "CPU's copy (no FINI_BO after a CPU write?) (§14.3)", bo->iova);
    }
    return bo->dev + off;
}

static int resolve_bos(struct ork_sim *sim, int file, const struct drm_rocket_job *j,
                       struct rjob_bos *jb)
{
    memset(jb, 0, sizeof *jb);
    jb->sim = sim;
    jb->domain = (uint32_t)file;
    if ((uint64_t)j->in_bo_handle_count + j->out_bo_handle_count > SIM_ROCKET_MAX_JOB_BOS)
        return ork_errorf(ORK_EINVAL, "sim rocket SUBMIT: %u + %u BO handles in one job (the "
                          "model takes %u)", j->in_bo_handle_count, j->out_bo_handle_count,
                          SIM_ROCKET_MAX_JOB_BOS);
    const uint32_t *in = (const uint32_t *)(uintptr_t)j->in_bo_handles;
    const uint32_t *out = (const uint32_t *)(uintptr_t)j->out_bo_handles;
    if ((j->in_bo_handle_count && !in) || (j->out_bo_handle_count && !out))
        return ork_errorf(ORK_EFAULT, "sim rocket SUBMIT: NULL BO handle array");
    for (uint32_t i = 0; i < j->in_bo_handle_count; i++)
        if (!(jb->in[jb->n_in++] = rocket_bo(sim, file, in[i], "SUBMIT in_bo_handles")))
            return ORK_EINVAL;
    for (uint32_t i = 0; i < j->out_bo_handle_count; i++)
        if (!(jb->out[jb->n_out++] = rocket_bo(sim, file, out[i], "SUBMIT out_bo_handles")))
            return ORK_EINVAL;
    return 0;
}

/* Check a whole SUBMIT before anything runs (the kernel copies and validates every job). */
static int rocket_submit_check(struct ork_sim *sim, int file, const struct drm_rocket_submit *s)
{
    if (s->reserved)
        return ork_errorf(ORK_EINVAL, "sim rocket SUBMIT: reserved is 0x%llx, must be 0",
                          (unsigned long long)s->reserved);
    if (s->job_struct_size != sizeof(struct drm_rocket_job))
        return ork_errorf(ORK_EINVAL, "sim rocket SUBMIT: job_struct_size %u, expected %zu "
                          "(§11.2)", s->job_struct_size, sizeof(struct drm_rocket_job));
    if (s->job_count == 0 || s->job_count > SIM_ROCKET_MAX_JOBS || !s->jobs)
        return ork_errorf(ORK_EINVAL, "sim rocket SUBMIT: %u jobs (1..%u)", s->job_count,
                          SIM_ROCKET_MAX_JOBS);
    const struct drm_rocket_job *jobs = (const struct drm_rocket_job *)(uintptr_t)s->jobs;
    for (uint32_t i = 0; i < s->job_count; i++) {
        const struct drm_rocket_job *j = &jobs[i];
        if (j->task_struct_size != sizeof(struct drm_rocket_task))
            return ork_errorf(ORK_EINVAL, "sim rocket SUBMIT: job %u task_struct_size %u, "
                              "expected %zu (§11.2)", i, j->task_struct_size,
                              sizeof(struct drm_rocket_task));
        if (j->task_count == 0 || j->task_count > SIM_ROCKET_MAX_TASKS || !j->tasks)
            return ork_errorf(ORK_EINVAL, "sim rocket SUBMIT: job %u has %u tasks", i,
                              j->task_count);
        struct rjob_bos jb;
        int ret = resolve_bos(sim, file, j, &jb);
        if (ret < 0)
            return ret;
    }
    return 0;
}

/* Decode-only look at one fetched program for the rocket hazards: the OPERATION_ENABLE trailer
 * entry must be among the entries fetched (ROCKET_COUNT_SHORT) and enable the DPU
 * (ROCKET_NO_DPU). Returns 0 or ORK_ETIMEDOUT (the task never completes) with a message. */
static int rocket_task_hazards(struct ork_sim *sim, const uint64_t *entries, uint32_t n_fetch,
                               uint32_t count, uint32_t job, uint32_t task)
{
    struct ork_sim_task_in tin = { .index = task, .strict = sim->o.strict };
    struct ork_sim_decoded dec;
    memset(&dec, 0, sizeof dec);
    int ret = ork__sim_decode(entries, n_fetch, &tin, sim->rf, &dec);
    char why[256];
    snprintf(why, sizeof why, "%s", ret < 0 ? ork_error_message() : "");
    if (ret < 0)
        return ork_errorf(ORK_ETIMEDOUT, "job %u task %u: ROCKET_COUNT_SHORT: regcmd_count %u "
                          "makes the PC fetch %u entries, which lack the trailer (%s): the task "
                          "never starts, 500 ms job timeout (regcmd_count must include the 4 "
                          "trailer entries: 112 for a matmul, §11.3/§14.1)", job, task, count,
                          n_fetch, why);
    if (!(dec.enable & ROCKET_ENABLE_DPU))
        return ork_errorf(ORK_ETIMEDOUT, "job %u task %u: ROCKET_NO_DPU: OPERATION_ENABLE 0x%x "
                          "does not enable the DPU; rocket's IRQ handler accepts only DPU "
                          "completions, so the job times out after 500 ms (§11.3/§14.5)", job,
                          task, dec.enable);
    return 0;
}

/* Result of running one job on one core. */
struct rjob_run {
    int status;
    bool hang;                  /* ends at start + the 500 ms job timeout */
    uint32_t done;
    double ns;
};

static void rocket_run_job(struct ork_sim *sim, int core, const struct drm_rocket_job *j,
                           uint32_t job_idx, uint64_t seq, struct rjob_bos *jb, int streaming,
                           struct rjob_run *r)
{
    const struct drm_rocket_task *tasks = (const struct drm_rocket_task *)(uintptr_t)j->tasks;
    const struct ork_sim_fault *fault = ork__sim_fault_for(sim, seq);
    struct ork_sim_mem mem = { jb, rjob_map };
    bool timing_only = sim->o.timing == ORK_SIM_TIMING_ONLY ||
                       sim->o.timing == ORK_SIM_TIMING_PACED_ONLY;
    memset(r, 0, sizeof *r);
    if (fault && fault->kind == ORK_SIM_FAULT_DROP) {
        r->hang = true;
        r->status = ork_errorf(ORK_ETIMEDOUT, "job %u (submit %llu) never started (injected "
                               "DISPATCH_DROP, §8.6): 500 ms job timeout, core %d reset (§11.3)",
                               job_idx, (unsigned long long)seq, core);
        return;
    }
    for (uint32_t t = 0; t < j->task_count; t++) {
        uint32_t addr = tasks[t].regcmd, count = tasks[t].regcmd_count;
        /* the kernel kicks each task with PC REGISTER_AMOUNTS = (count + 1) / 2 - 1 (§11.3) */
        uint32_t n_fetch = count ? 2u * (ROCKET_PC_AMOUNT(count) + 1u) : 0;
        if (fault && fault->task == t && fault->kind == ORK_SIM_FAULT_SLOW)
            r->ns += (double)fault->delay_ms * MS_NS;   /* then runs as usual */
        if (fault && fault->task == t && (fault->kind == ORK_SIM_FAULT_HANG ||
                                          fault->kind == ORK_SIM_FAULT_WEDGE)) {
            r->hang = true;
            r->status = ork_errorf(ORK_ETIMEDOUT, "job %u task %u on core %d hung (injected HANG "
                                   "fault, submit %llu): 500 ms job timeout, core reset (§11.3)",
                                   job_idx, t, core, (unsigned long long)seq);
            return;
        }
        if (fault && fault->task == t && fault->kind == ORK_SIM_FAULT_DMA) {
            r->hang = true;
            r->status = ork_errorf(ORK_EFAULT, "job %u task %u on core %d: DMA_READ_ERROR "
                                   "(injected DMA fault, submit %llu) at program 0x%08x",
                                   job_idx, t, core, (unsigned long long)seq, addr);
            return;
        }
        if (addr == 0 || (addr & 15u) || n_fetch == 0) {
            r->status = ork_errorf(ORK_EFAULT, "job %u task %u: program address 0x%08x with "
                                   "regcmd_count %u (ADDR_ZERO / ADDR_MISALIGNED, §14.3)",
                                   job_idx, t, addr, count);
            r->hang = true;
            return;
        }
        const uint64_t *entries = rjob_map(jb, addr, (uint64_t)n_fetch * 8u, false);
        if (!entries) {
            r->hang = true;
            r->status = ork_errorf(ORK_EFAULT, "job %u task %u: PC fetch of %u entries at 0x%08x "
                                   "is not inside one buffer of this file's address space "
                                   "(IOMMU_FAULT, §11.3/§14.3)", job_idx, t, n_fetch, addr);
            return;
        }
        int ret = rocket_task_hazards(sim, entries, n_fetch, count, job_idx, t);
        if (ret < 0) {
            r->hang = true;
            r->status = ret;
            return;
        }
        struct ork_sim_task_in tin = {
            .index = t, .regcmd_addr = addr, .regcfg_amount = 0, .enable_mask = 0,
            .strict = sim->o.strict,
        };
        struct ork_sim_decoded dec;
        struct ork_sim_stats st;
        memset(&dec, 0, sizeof dec);
        memset(&st, 0, sizeof st);
        ret = ork__sim_task_run(entries, n_fetch, &tin, &mem, timing_only, sim->rf, &dec, &st);
        if (ret < 0) {
            r->hang = true;           /* a board faults or hangs: the job times out */
            r->status = ret;
            return;
        }
        if (st.warnings)
            sim->c.warnings += (uint64_t)__builtin_popcountll(st.warnings);
        /* every task is its own kick from the IRQ thread: a launch each [INF] */
        r->ns += ork__sim_task_time_ns(&sim->timing, &st, true, streaming, sim->o.freq_mhz);
        r->done++;
        sim->c.weight_bytes += st.b_bytes;
        sim->c.dcomp_tasks += st.dcomp_bytes != 0;
        sim->c.dcomp_bytes += st.dcomp_bytes;
        sim->core[core].tasks++;
        sim->c.tasks++;
    }
}

static int rocket_submit(struct ork_sim *sim, int file, const struct drm_rocket_submit *s)
{
    int ret = rocket_submit_check(sim, file, s);
    if (ret < 0)
        return ret;
    const struct drm_rocket_job *jobs = (const struct drm_rocket_job *)(uintptr_t)s->jobs;
    int64_t now = ork__sim_now(sim);
    uint64_t seq = ++sim->n_accepted;      /* fault injection counts submits */
    sim->c.submits++;
    uint32_t mask = 0;
    for (uint32_t i = 0; i < s->job_count; i++) {
        const struct drm_rocket_job *j = &jobs[i];
        struct rjob_bos jb;
        (void)resolve_bos(sim, file, j, &jb);    /* checked above */
        /* implicit dependencies (§11.3): after the writers of what it reads, after everyone
         * using what it writes */
        int64_t dep = now;
        for (uint32_t k = 0; k < jb.n_in; k++)
            if (jb.in[k]->r_write_until > dep)
                dep = jb.in[k]->r_write_until;
        for (uint32_t k = 0; k < jb.n_out; k++) {
            if (jb.out[k]->r_write_until > dep)
                dep = jb.out[k]->r_write_until;
            if (jb.out[k]->r_read_until > dep)
                dep = jb.out[k]->r_read_until;
        }
        /* the scheduler: the core that frees up first (one job in flight per core) */
        int core = 0;
        for (uint32_t c = 1; c < sim->o.n_cores; c++)
            if (sim->core[c].busy_until < sim->core[core].busy_until)
                core = (int)c;
        int64_t start = sim->core[core].busy_until > dep ? sim->core[core].busy_until : dep;
        int streaming = 1;
        for (uint32_t c = 0; c < sim->o.n_cores; c++)
            if ((int)c != core && sim->core[c].busy_until > start)
                streaming++;
        struct rjob_run r;
        rocket_run_job(sim, core, j, i, seq, &jb, streaming, &r);
        int64_t end = start + (r.hang ? (int64_t)ROCKET_JOB_TIMEOUT_MS * MS_NS : (int64_t)r.ns);
        if (r.status == 0 && end - start > (int64_t)ROCKET_JOB_TIMEOUT_MS * MS_NS) {
            r.status = ork_errorf(ORK_ETIMEDOUT, "job %u: modelled %.3f ms > the 500 ms job "
                                  "timeout (TIMEOUT, §11.3/§14.5)", i,
                                  (double)(end - start) / 1e6);
            end = start + (int64_t)ROCKET_JOB_TIMEOUT_MS * MS_NS;
        }
        ork__sim_busy_add(sim, core, start, end);
        sim->core[core].busy_until = end;
        mask |= 1u << core;
        for (uint32_t k = 0; k < jb.n_in; k++)
            if (jb.in[k]->r_read_until < end)
                jb.in[k]->r_read_until = end;
        for (uint32_t k = 0; k < jb.n_out; k++)
            if (jb.out[k]->r_write_until < end)
                jb.out[k]->r_write_until = end;
        sim->rocket_jobs++;
        sim->c.last_job_ns = end - now;
        if (r.status < 0) {
            /* the kernel resets the core at the timeout and the fence signals; nothing reports
             * the error to userspace but the unwritten outputs [INF] */
            sim->c.failed_jobs++;
            sim->c.resets++;
            ORK_LOGW("sim rocket: %s", ork_error_message());
        }
        if (ork_debug(ORK_DBG_SIM))
            ORK_LOGI("sim rocket: submit %llu job %u: core %d, %u task(s), %u in / %u out BOs, "
                     "%.1f us%s", (unsigned long long)seq, i, core, r.done, jb.n_in, jb.n_out,
                     (double)(end - start) / 1e3, r.status ? " (timed out, core reset)" : "");
    }
    sim->c.last_core_mask = mask;
    ork__sim_load_update(sim);
    ork_error_clear();
    return 0;
}

int ork__sim_rocket_ioctl(struct ork_sim *sim, int file, uint32_t request, void *arg)
{
    if (!sim || !arg)
        return ork_errorf(ORK_EINVAL, "sim rocket ioctl: NULL device or argument");
    if (file < 0 || (uint32_t)file >= SIM_MAX_DOMAINS || !sim->rocket_file[file])
        return ork_errorf(ORK_EINVAL, "sim rocket ioctl: file %d is not open", file);
    int ret;
    int64_t sleep_until = -1;
    pthread_mutex_lock(&sim->lock);
    switch (request) {
    case DRM_IOCTL_ROCKET_CREATE_BO:
        ret = rocket_create_bo(sim, file, arg);
        break;
    case DRM_IOCTL_ROCKET_SUBMIT:
        ret = rocket_submit(sim, file, arg);
        break;
    case DRM_IOCTL_ROCKET_PREP_BO:
        ret = rocket_prep_bo(sim, file, arg, &sleep_until);
        break;
    case DRM_IOCTL_ROCKET_FINI_BO: {
        const struct drm_rocket_fini_bo *f = arg;
        struct sim_bo *bo = f->reserved ? NULL : rocket_bo(sim, file, f->handle, "FINI_BO");
        if (f->reserved)
            ret = ork_errorf(ORK_EINVAL, "sim rocket FINI_BO: reserved is %u, must be 0",
                             f->reserved);
        else if (!bo)
            ret = ORK_EINVAL;
        else {
            rocket_sync(sim, bo, true);
            ret = 0;
        }
        break;
    }
    case ORK_DRM_IOCTL_GEM_CLOSE: {
        const struct ork_drm_gem_close *g = arg;
        struct sim_bo *bo = rocket_bo(sim, file, g->handle, "GEM_CLOSE");
        if (!bo) {
            ret = ORK_EINVAL;
        } else {
            if (bo->r_write_until > ork__sim_now(sim) || bo->r_read_until > ork__sim_now(sim))
                sim->c.warnings++;   /* the kernel keeps it alive for the job; harmless */
            ork__sim_bo_free(sim, bo);
            ret = 0;
        }
        break;
    }
    default:
        ret = ork_errorf(ORK_EINVAL, "sim rocket ioctl: request 0x%08x is not a rocket request "
                         "(§11.1)", request);
        break;
    }
    pthread_mutex_unlock(&sim->lock);
    if (sleep_until >= 0)
        ork__sim_sleep_until(sim, sleep_until);
    return ret;
}
