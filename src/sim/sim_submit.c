/* sim_submit.c -- RKNPU_SUBMIT in the simulated kernel driver: validation (spec §10.8, §14.5),
 * core selection and the subcore_task slot rules (§9), IOMMU domain switches (§13), the per-core
 * PC walk with trailer chaining (§8.2, §8.3), fault injection, the timing model and completion
 * (blocking, NONBLOCK §8.6, timeouts). Each task's fetched entries go to the executor
 * (sim_exec.h); this file never decodes a register. */
#include "sim_priv.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <ork/debug.h>
#include <ork/error.h>
#include <ork/log.h>

#include "uapi/rknpu_uapi.h"

/* The calling thread's last accepted SUBMIT: lets the transport name a NONBLOCK job for wait()
 * without serialising submits from several threads. */
static _Thread_local uint64_t sim_tls_last_seq;

#define TASK_DESC_SIZE ((uint64_t)sizeof(struct rknpu_task))   /* 40 bytes (§10.3) */
#define MS_NS 1000000ll
/* A blocking submit on a wedged NPU returned after twice its timeout (spec §8.6: 61 s -> 122 s). */
#define SIM_WEDGE_FACTOR 2

/* Executor memory callback: translation through the active domain only (§13, WRONG_DOMAIN). */
struct walk_mem {
    struct ork_sim *sim;
    uint32_t domain;
};

static void *walk_map(void *ctx, uint32_t iova, uint64_t len, bool write)
{
    struct walk_mem *wm = ctx;
    struct sim_bo *bo = ork__sim_bo_find(wm->sim, wm->domain, iova, len);
    if (!bo)
        return NULL;
    uint64_t off = (uint64_t)iova - bo->iova;
    /* strict MISSING_SYNC (§14.3): the CPU copy differs from what the device reads */
    if (!write && bo->cpu != bo->dev && memcmp(bo->cpu + off, bo->dev + off, len) != 0) {
        wm->sim->c.missing_sync++;
        ORK_LOGW("sim: MISSING_SYNC: buffer at IOVA 0x%08x read by the NPU differs from the "
                 "CPU's copy (no MEM_SYNC TO_DEVICE after a CPU write?) (§14.3)", bo->iova);
    }
    return bo->dev + off;
}

/* PC_DATA_AMOUNT for n counted entries: ceil((n + 4) / 2) - 1 (§2.3, §8.2). */
static uint32_t pc_amount(uint32_t n)
{
    return (n + RKNPU_PC_DATA_EXTRA_AMOUNT + RKNPU_PC_DATA_AMOUNT_SCALE - 1) /
           RKNPU_PC_DATA_AMOUNT_SCALE - 1;
}

void ork__sim_sleep_until(struct ork_sim *sim, int64_t model_ns)
{
    int64_t target = sim->epoch_real_ns + model_ns;
    struct timespec ts = { .tv_sec = target / 1000000000, .tv_nsec = target % 1000000000 };
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

int ork__sim_set_domain(struct ork_sim *sim, uint32_t domain)
{
    if (domain == sim->active_domain)
        return 0;
    /* wait until no running job holds the old domain, then switch (§10.8 step 2, §13) */
    int64_t t = ork__sim_now(sim);
    for (uint32_t i = 0; i < sim->o.n_cores; i++)
        if (sim->core[i].busy_until > t && sim->core[i].busy_until != INT64_MAX)
            t = sim->core[i].busy_until;
    t += (int64_t)sim->timing.t_domain_switch_ns;
    for (uint32_t i = 0; i < sim->o.n_cores; i++)
        if (sim->core[i].busy_until < t)
            sim->core[i].busy_until = t;
    sim->active_domain = domain;
    sim->c.domain_switches++;
    return 0;
}

const struct ork_sim_fault *ork__sim_fault_for(const struct ork_sim *sim, uint64_t seq)
{
    for (int i = 0; i < ORK_SIM_MAX_FAULTS; i++) {
        const struct ork_sim_fault *f = &sim->o.faults[i];
        if (f->kind != ORK_SIM_FAULT_NONE && f->submit == seq)
            return f;
    }
    return NULL;
}

/* Result of walking one core's range. */
struct core_run {
    int status;                 /* 0 or ORK_E* (message recorded) */
    bool hang;                  /* never completes: ends at start + timeout */
    uint32_t done;              /* tasks completed */
    double ns;                  /* modelled busy time */
};

/* The precision mode a matmul ran in (STALE_FIRST_SUBMIT, §14.4: int8 <-> fp16 <-> int4). */
static const char *mode_name(int prec)
{
    return prec == ORK_SIM_PREC_INT4 ? "int4" : prec == ORK_SIM_PREC_FP16 ? "fp16" : "int8";
}

/* Walk tasks [start, start + number) of the task buffer on `core`, as the kernel commits them
 * (chunks of <= max_submit_number, PC programmed from each chunk's first task, §8.2) and as the
 * PC follows each program's trailer (§8.3). */
static void walk_core(struct ork_sim *sim, int core, const struct sim_bo *tbo, uint32_t start,
                      uint32_t number, uint32_t domain, int streaming, uint64_t seq,
                      uint32_t task_start, struct core_run *r)
{
    const struct rknpu_task *desc = (const struct rknpu_task *)tbo->dev; /* kernel mapping */
    const struct ork_sim_fault *fault = ork__sim_fault_for(sim, seq);
    struct walk_mem wm = { sim, domain };
    struct ork_sim_mem mem = { &wm, walk_map };
    bool timing_only = sim->o.timing == ORK_SIM_TIMING_ONLY ||
                       sim->o.timing == ORK_SIM_TIMING_PACED_ONLY;
    memset(r, 0, sizeof(*r));

    for (uint32_t c0 = 0; c0 < number; c0 += RKNPU_MAX_SUBMIT_NUMBER) {
        uint32_t chunk = number - c0 < RKNPU_MAX_SUBMIT_NUMBER ? number - c0
                                                               : RKNPU_MAX_SUBMIT_NUMBER;
        const struct rknpu_task *d0 = &desc[start + c0];
        uint32_t addr = (uint32_t)d0->regcmd_addr;
        uint32_t amount = pc_amount(d0->regcfg_amount);
        for (uint32_t t = 0; t < chunk; t++) {
            /* messages name tasks relative to the submit's task_start (the caller's index) */
            uint32_t desc_idx = start + c0 + t;
            uint32_t idx = desc_idx >= task_start ? desc_idx - task_start : desc_idx;
            const struct rknpu_task *d = &desc[desc_idx];
            struct ork_sim_task_in tin = {
                .index = idx,
                .regcmd_addr = addr,
                .regcfg_amount = d->regcfg_amount,
                .enable_mask = d->enable_mask,
                .task_array_addr = tbo->iova,
                .task_array_len = (uint32_t)((uint64_t)(start + number) * TASK_DESC_SIZE),
                .strict = sim->o.strict,
            };
            if (t > 0) {
                if ((uint32_t)d->regcmd_addr != addr) {
                    /* the hardware follows the chain; which one it would honour is [UNK] */
                    sim->c.warnings++;
                    ORK_LOGW("sim: task %u: CHAIN_DESC_MISMATCH: descriptor regcmd_addr 0x%08x, "
                             "chain reached 0x%08x; following the chain (§8.3)", idx,
                             (uint32_t)d->regcmd_addr, addr);
                    tin.regcfg_amount = 2 * (amount + 1) - RKNPU_PC_DATA_EXTRA_AMOUNT;
                    tin.enable_mask = 0;
                } else if (pc_amount(d->regcfg_amount) != amount) {
                    r->status = ork_errorf(ORK_EHAZARD, "task %u: CHAIN_AMOUNT_MISMATCH: previous "
                                           "trailer PC REGISTER_AMOUNTS %u, but regcfg_amount %u "
                                           "needs %u (§8.3)", idx, amount, d->regcfg_amount,
                                           pc_amount(d->regcfg_amount));
                    return;
                }
            }
            if (fault && fault->task == idx && (fault->kind == ORK_SIM_FAULT_HANG ||
                                                fault->kind == ORK_SIM_FAULT_WEDGE)) {
                r->hang = true;
                sim->core[core].hung = true;
                r->status = ork_errorf(ORK_ETIMEDOUT, "task %u on core %d hung (injected %s "
                                       "fault, submit %llu): timed out; ACT_RESET recovers "
                                       "(§10.8)", idx, core,
                                       fault->kind == ORK_SIM_FAULT_HANG ? "HANG" : "WEDGE",
                                       (unsigned long long)seq);
                return;
            }
            if (fault && fault->task == idx && fault->kind == ORK_SIM_FAULT_SLOW)
                r->ns += (double)fault->delay_ms * MS_NS;   /* then runs as usual */
            if (fault && fault->task == idx && fault->kind == ORK_SIM_FAULT_DMA) {
                ork__sim_soft_reset(sim);
                r->status = ork_errorf(ORK_EFAULT, "task %u on core %d: DMA_READ_ERROR interrupt "
                                       "(injected DMA fault, submit %llu) at program 0x%08x; "
                                       "NPU soft-reset (§8.2, §14.3)", idx, core,
                                       (unsigned long long)seq, addr);
                return;
            }
            uint32_t n_fetch = RKNPU_PC_DATA_AMOUNT_SCALE * (amount + 1);
            if (addr == 0 || (addr & 15u)) {
                r->status = ork_errorf(ORK_EFAULT, "task %u: program address 0x%08x is %s (%s, "
                                       "§8.3/§14.3)", idx, addr, addr ? "not 16-byte aligned"
                                       : "zero", addr ? "ADDR_MISALIGNED" : "ADDR_ZERO");
                return;
            }
            const uint64_t *entries = walk_map(&wm, addr, (uint64_t)n_fetch * 8u, false);
            if (!entries) {
                const struct sim_bo *other = ork__sim_bo_any(sim, addr);
                if (other && other->domain != domain)
                    r->status = ork_errorf(ORK_EFAULT, "task %u: PC fetch at IOVA 0x%08x: the "
                                           "program is mapped in domain %u, the submit runs in "
                                           "domain %u (WRONG_DOMAIN, §13/§14.3)", idx, addr,
                                           other->domain, domain);
                else
                    r->status = ork_errorf(ORK_EFAULT, "task %u: PC fetch of %u entries at IOVA "
                                           "0x%08x is not inside one mapped buffer of domain %u "
                                           "(IOMMU_FAULT, ADDR_OOB §14.3)", idx, n_fetch, addr,
                                           domain);
                return;
            }
            struct ork_sim_decoded dec;
            struct ork_sim_stats st;
            memset(&dec, 0, sizeof dec);
            memset(&st, 0, sizeof st);
            int ret = ork__sim_task_run(entries, n_fetch, &tin, &mem, timing_only, sim->rf, &dec,
                                        &st);
            if (ret < 0) {
                r->status = ret;      /* the executor's message names task, hazard, register */
                return;
            }
            if (st.warnings) {
                sim->c.warnings += (uint64_t)__builtin_popcountll(st.warnings);
                if (ork_debug(ORK_DBG_SIM))
                    ORK_LOGI("sim: task %u: warnings 0x%llx", idx,
                             (unsigned long long)st.warnings);
            }
            if (st.op == ORK_SIM_OP_MATMUL) {
                int prec = (int)st.in_prec;
                if (sim->core[core].last_prec != prec && ork_debug(ORK_DBG_SIM))
                    ORK_LOGI("sim: core %d: first %s matmul since reset or a mode change: on a "
                             "board the first submit may return stale data "
                             "(STALE_FIRST_SUBMIT, §14.4)", core, mode_name(prec));
                sim->core[core].last_prec = prec;
            }
            r->ns += ork__sim_task_time_ns(&sim->timing, &st, t == 0, streaming,
                                           sim->o.freq_mhz);
            r->done++;
            sim->c.weight_bytes += st.b_bytes;
            sim->c.dcomp_tasks += st.dcomp_bytes != 0;
            sim->c.dcomp_bytes += st.dcomp_bytes;
            sim->core[core].tasks++;
            sim->c.tasks++;
            if (t + 1 < chunk) {
                if (!dec.has_next_addr || dec.next_addr == 0) {
                    r->hang = true;
                    r->status = ork_errorf(ORK_ETIMEDOUT, "task %u: trailer has no next program "
                                           "address but %u task(s) remain in the range: the PC "
                                           "never advances (CHAIN_BROKEN, §8.3)", idx,
                                           chunk - t - 1);
                    return;
                }
                if (dec.next_amount == 0) {
                    r->hang = true;
                    r->status = ork_errorf(ORK_ETIMEDOUT, "task %u: trailer PC REGISTER_AMOUNTS "
                                           "is 0 with a next program at 0x%08x: hangs at the "
                                           "transition (CHAIN_HANG, §8.3)", idx, dec.next_addr);
                    return;
                }
                if (!ork__sim_bo_find(sim, domain, dec.next_addr, 1)) {
                    r->hang = true;
                    r->status = ork_errorf(ORK_ETIMEDOUT, "task %u: trailer next program address "
                                           "0x%08x is not mapped in domain %u (CHAIN_BROKEN, "
                                           "§8.3)", idx, dec.next_addr, domain);
                    return;
                }
                addr = dec.next_addr;
                amount = dec.next_amount;
            }
        }
    }
}

static struct sim_job *sim_job_slot(struct ork_sim *sim, uint64_t seq)
{
    return &sim->jobs[seq % SIM_JOB_RING];
}

/* Check a SUBMIT as the kernel does before accepting it (§10.5, §10.8, §13, §14.5) and resolve
 * its cores: the task buffer, the core mask (0 = the least-loaded single core, §9) and each
 * selected core's range from its subcore_task slot. Nothing is changed but warnings. */
static int submit_check(struct ork_sim *sim, const struct rknpu_submit *s,
                        const struct sim_bo **tbo_out, uint32_t *mask_out,
                        struct rknpu_subcore_task range[SIM_MAX_CORES])
{
    if (!(s->flags & RKNPU_JOB_PC))
        return ork_errorf(ORK_EINVAL, "sim SUBMIT: flags 0x%x lack RKNPU_JOB_PC (NO_PC_FLAG, "
                          "§10.5/§14.5)", s->flags);
    if (s->flags & (RKNPU_JOB_FENCE_IN | RKNPU_JOB_FENCE_OUT))
        return ork_errorf(ORK_EINVAL, "sim SUBMIT: fence flags 0x%x: fences are compiled out of "
                          "the reference kernel (§10.5)", s->flags);
    if (s->task_number == 0)
        return ork_errorf(ORK_EINVAL, "sim SUBMIT: task_number 0 (must be >= 1, §10.3)");
    if (s->timeout == 0)
        return ork_errorf(ORK_EINVAL, "sim SUBMIT: timeout 0 ms");
    if (s->iommu_domain_id >= SIM_MAX_DOMAINS)
        return ork_errorf(ORK_EINVAL, "sim SUBMIT: iommu_domain_id %u outside 0..%u (§13)",
                          s->iommu_domain_id, SIM_MAX_DOMAINS - 1);
    const struct sim_bo *tbo = ork__sim_bo_by_obj(sim, s->task_obj_addr);
    if (!tbo)
        return ork_errorf(ORK_EINVAL, "sim SUBMIT: task_obj_addr 0x%llx names no buffer",
                          (unsigned long long)s->task_obj_addr);
    if (!(tbo->flags & RKNPU_MEM_KERNEL_MAPPING))
        return ork_errorf(ORK_EHAZARD, "sim SUBMIT: task buffer (IOVA 0x%08x) was created without "
                          "KERNEL_MAPPING: the kernel cannot read descriptors (TASK_NO_KMAP, "
                          "§8.1/§14.3)", tbo->iova);
    if (tbo->domain != s->iommu_domain_id)
        return ork_errorf(ORK_EFAULT, "sim SUBMIT: task buffer is mapped in domain %u, the "
                          "submit runs in domain %u (WRONG_DOMAIN, §13)", tbo->domain,
                          s->iommu_domain_id);
    uint32_t all = (1u << sim->o.n_cores) - 1;
    uint32_t mask = s->core_mask;
    if (mask & ~all)
        return ork_errorf(ORK_EINVAL, "sim SUBMIT: core_mask 0x%x names cores beyond the %u "
                          "present (§9)", mask, sim->o.n_cores);
    if (mask == 0) {                     /* auto: the least-loaded single core (§9) */
        uint32_t best = 0;
        for (uint32_t i = 1; i < sim->o.n_cores; i++)
            if (sim->core[i].busy_until < sim->core[best].busy_until)
                best = i;
        mask = 1u << best;
    }
    int ncores = __builtin_popcount(mask);
    for (uint32_t i = 0; i < sim->o.n_cores; i++) {
        if (!(mask & (1u << i)))
            continue;
        /* §9: 1 or 2 cores read subcore_task[i]; 3 cores read subcore_task[i + 2] */
        uint32_t slot = ncores == 3 ? i + 2 : i;
        range[i] = s->subcore_task[slot];
        if (range[i].task_number == 0)
            return ork_errorf(ORK_EHAZARD, "sim SUBMIT: core %u reads subcore_task[%u], which "
                              "has task_number 0 (SUBCORE_EMPTY, §9/§14.5; the kernel Oopsed)",
                              i, slot);
        uint64_t end = ((uint64_t)range[i].task_start + range[i].task_number) * TASK_DESC_SIZE;
        if (end > tbo->size)
            return ork_errorf(ORK_EFAULT, "sim SUBMIT: core %u range subcore_task[%u] = {%u, %u} "
                              "ends at byte %llu of the %llu-byte task buffer (TASK_RANGE_OOB, "
                              "§14.5)", i, slot, range[i].task_start, range[i].task_number,
                              (unsigned long long)end, (unsigned long long)tbo->size);
    }
    *tbo_out = tbo;
    *mask_out = mask;
    if (!sim->reset_seen && !sim->warned_no_reset) {
        sim->warned_no_reset = true;
        sim->c.warnings++;
        ORK_LOGW("sim: first SUBMIT without a prior ACT_RESET: task iteration may not advance on "
                 "a board (NO_RESET_AT_INIT, §10.7/§14.4)");
    }
    return 0;
}

/* Run an accepted job on each core of `mask` in turn (each starting when that core is free), with
 * the cores' shared weight-stream bandwidth; fills the job's status, message and task count and
 * returns the modelled completion and the longest commit -> end span of one core. */
static void submit_run_cores(struct ork_sim *sim, const struct rknpu_submit *s,
                             const struct sim_bo *tbo, uint32_t mask,
                             const struct rknpu_subcore_task range[SIM_MAX_CORES],
                             struct sim_job *job, int64_t now, int64_t *done_out,
                             int64_t *longest_out)
{
    uint64_t seq = job->seq;
    int64_t done = now, longest = 0;
    int streaming = 0;
    for (uint32_t i = 0; i < sim->o.n_cores; i++)
        if ((mask & (1u << i)) || sim->core[i].busy_until > now)
            streaming++;
    for (uint32_t i = 0; i < sim->o.n_cores && job->status == 0; i++) {
        if (!(mask & (1u << i)))
            continue;
        struct sim_core *c = &sim->core[i];
        int64_t start = c->busy_until > now ? c->busy_until : now;
        struct core_run r;
        if (c->hung) {
            memset(&r, 0, sizeof r);
            r.hang = true;
            r.status = ork_errorf(ORK_ETIMEDOUT, "core %u is hung since an earlier timeout: "
                                  "job %llu never completes; ACT_RESET recovers (§10.8)", i,
                                  (unsigned long long)seq);
        } else {
            walk_core(sim, (int)i, tbo, range[i].task_start, range[i].task_number,
                      s->iommu_domain_id, streaming, seq, s->task_start, &r);
        }
        int64_t end = r.hang ? start + job->timeout_ns : start + (int64_t)r.ns;
        if (end - start > longest)
            longest = end - start;
        ork__sim_busy_add(sim, (int)i, start, end);
        c->busy_until = end;
        if (end > done)
            done = end;
        job->task_counter += r.done;
        if (r.status < 0) {
            job->status = r.status;
            snprintf(job->msg, sizeof job->msg, "%s", ork_error_message());
        }
    }
    *done_out = done;
    *longest_out = longest;
}

static int submit_locked(struct ork_sim *sim, struct rknpu_submit *s, int64_t *sleep_until)
{
    *sleep_until = -1;
    s->task_counter = 0;
    const struct sim_bo *tbo = NULL;
    uint32_t mask = 0;
    struct rknpu_subcore_task range[SIM_MAX_CORES] = {{0}};
    int ret = submit_check(sim, s, &tbo, &mask, range);
    if (ret < 0)
        return ret;
    int64_t now = ork__sim_now(sim);

    /* accepted */
    uint64_t seq = ++sim->n_accepted;
    sim_tls_last_seq = seq;
    sim->c.submits++;
    sim->c.last_core_mask = mask;
    struct sim_job *job = sim_job_slot(sim, seq);
    memset(job, 0, sizeof(*job));
    job->seq = seq;
    job->timeout_ns = (int64_t)s->timeout * MS_NS;
    ork__sim_set_domain(sim, s->iommu_domain_id);
    const struct ork_sim_fault *fault = ork__sim_fault_for(sim, seq);

    int64_t t0 = now, done = now, longest = 0;   /* longest: commit -> end on one core */
    if (fault && fault->kind == ORK_SIM_FAULT_DROP) {
        /* accepted but never started (DISPATCH_DROP, §8.6/§14.5) */
        job->done_ns = INT64_MAX;
        job->status = ork_errorf(ORK_ETIMEDOUT, "job %llu (submit %llu) was accepted but never "
                                 "started (injected DISPATCH_DROP, §8.6): reset and resubmit",
                                 (unsigned long long)seq, (unsigned long long)seq);
        snprintf(job->msg, sizeof job->msg, "%s", ork_error_message());
        done = INT64_MAX;
    } else {
        submit_run_cores(sim, s, tbo, mask, range, job, now, &done, &longest);
        job->done_ns = done;
        /* the kernel's timer runs from each core's commit, not from queueing (§10.8) */
        if (job->status == 0 && longest > job->timeout_ns) {
            job->status = ork_errorf(ORK_ETIMEDOUT, "job %llu: modelled %.3f ms > timeout %u ms "
                                     "(TIMEOUT, §14.5)", (unsigned long long)seq,
                                     (double)longest / 1e6, s->timeout);
            snprintf(job->msg, sizeof job->msg, "%s", ork_error_message());
        }
        if (job->status == ORK_ETIMEDOUT)
            sim->c.resets++;          /* the kernel soft-resets after a timeout (§10.8 step 5) */
    }
    if (job->status < 0)
        sim->c.failed_jobs++;
    sim->c.last_job_ns = done == INT64_MAX ? -1 : done - t0;
    if (ork_debug(ORK_DBG_SIM))
        ORK_LOGI("sim: submit %llu: cores 0x%x domain %u tasks %u -> %s (%.1f us)",
                 (unsigned long long)seq, mask, s->iommu_domain_id, job->task_counter,
                 job->status ? job->msg : "ok",
                 done == INT64_MAX ? -1.0 : (double)(done - t0) / 1e3);

    if (s->flags & RKNPU_JOB_NONBLOCK) {
        ork__sim_load_update(sim);
        return 0;                     /* queued; the result comes from wait (§8.6) */
    }
    /* blocking: the caller waits until completion (or the timeout); on a wedged NPU the
     * kernel's wait outlives its own timeout (WEDGE: 2x, §8.6) */
    int64_t end = done == INT64_MAX ? t0 + job->timeout_ns : done;
    if (fault && fault->kind == ORK_SIM_FAULT_WEDGE)
        end = t0 + SIM_WEDGE_FACTOR * job->timeout_ns;
    bool paced = sim->o.timing == ORK_SIM_TIMING_PACED ||
                 sim->o.timing == ORK_SIM_TIMING_PACED_ONLY;
    if (paced)
        *sleep_until = end;
    else if (end > sim->now_ns)
        sim->now_ns = end;
    s->task_counter = job->task_counter;
    s->hw_elapse_time = done == INT64_MAX ? 0 : (done - t0) / 1000;   /* µs (§10.3 [INF]) */
    ork__sim_load_update(sim);
    if (job->status < 0)
        return ork_errorf(job->status, "%s", job->msg);
    return 0;
}

int ork__sim_submit(struct ork_sim *sim, void *arg)
{
    int64_t sleep_until;
    pthread_mutex_lock(&sim->lock);
    int ret = submit_locked(sim, arg, &sleep_until);
    pthread_mutex_unlock(&sim->lock);
    if (sleep_until >= 0)
        ork__sim_sleep_until(sim, sleep_until);
    return ret;
}

int ork__sim_wait(struct ork_sim *sim, uint64_t seq, int64_t timeout_ns)
{
    pthread_mutex_lock(&sim->lock);
    if (seq == 0 || seq > sim->n_accepted) {
        pthread_mutex_unlock(&sim->lock);
        return ork_errorf(ORK_EINVAL, "sim wait: job %llu was never submitted",
                          (unsigned long long)seq);
    }
    struct sim_job *job = sim_job_slot(sim, seq);
    if (job->seq != seq) {                /* long finished and forgotten: it completed */
        pthread_mutex_unlock(&sim->lock);
        return 0;
    }
    int64_t now = ork__sim_now(sim);
    int64_t limit = timeout_ns < 0 ? job->timeout_ns : timeout_ns;
    int64_t until = job->done_ns;
    int status = job->status;
    char msg[sizeof job->msg];
    memcpy(msg, job->msg, sizeof msg);
    bool timed_out = until == INT64_MAX || until - now > limit;
    if (timed_out)
        until = now + limit;
    bool paced = sim->o.timing == ORK_SIM_TIMING_PACED ||
                 sim->o.timing == ORK_SIM_TIMING_PACED_ONLY;
    if (!paced && until > sim->now_ns)
        sim->now_ns = until;
    pthread_mutex_unlock(&sim->lock);
    if (paced)
        ork__sim_sleep_until(sim, until);
    if (timed_out && status == 0)
        return ork_errorf(ORK_ETIMEDOUT, "job %llu not complete after %.3f ms",
                          (unsigned long long)seq, (double)limit / 1e6);
    if (timed_out)
        return ork_errorf(ORK_ETIMEDOUT, "%s", msg);
    if (status < 0)
        return ork_errorf(status, "%s", msg);
    return 0;
}

uint64_t ork__sim_last_seq(struct ork_sim *sim)
{
    (void)sim;
    return sim_tls_last_seq;
}
