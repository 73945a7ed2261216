/* matmul_chain.c -- several matmul plans run by one submit: their programs are copied into one
 * program buffer and linked through the PC trailers (spec §8.3), so a layer's independent
 * projections cost one kernel round trip instead of one each. The plans keep their own buffers,
 * addresses and programs; this file only relinks copies. Emission rules: program.c. */
#include "ork_priv.h"

#include <ork/alloc.h>
#include <ork/debug.h>
#include <ork/error.h>
#include <ork/log.h>
#include <ork/trace.h>

#include <stdio.h>
#include <string.h>

struct ork_npu_chain {
    struct ork_npu *npu;
    struct ork_npu_matmul **plans;   /* borrowed */
    uint32_t n_plans;
    uint32_t n_tasks;
    struct ork_kbo prog_bo;          /* n_tasks program slots */
    struct ork_ktask *tasks;         /* [n_tasks], pointing into prog_bo */
    const struct ork_kbo **in_bos;   /* every plan's weights and A, and prog_bo (rocket, §11.3) */
    const struct ork_kbo **out_bos;  /* every plan's C */
    struct ork_npu_job job;          /* async run (async.c) */
};

struct ork_npu_job *ork__chain_job(struct ork_npu_chain *ch)
{
    return &ch->job;
}

struct ork_npu *ork__chain_npu(const struct ork_npu_chain *ch)
{
    return ch->npu;
}

void ork_npu_chain_destroy(struct ork_npu_chain *ch)
{
    if (!ch)
        return;
    if (ch->job.queued)
        (void)ork_npu_job_wait(&ch->job);
    ork__npu_bo_destroy(ch->npu, &ch->prog_bo);
    ork_free(ch->in_bos);
    ork_free(ch->out_bos);
    ork_free(ch->tasks);
    ork_free(ch->plans);
    ork_free(ch);
}

int ork_npu_chain_create(struct ork_npu_matmul *const *plans, uint32_t n,
                         struct ork_npu_chain **out)
{
    if (!out)
        return ork_errorf(ORK_EINVAL, "npu chain: NULL output");
    *out = NULL;
    if (!plans || n < 1)
        return ork_errorf(ORK_EINVAL, "npu chain: no plans");
    struct ork_npu *npu = plans[0] ? plans[0]->npu : NULL;
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        const struct ork_npu_matmul *mm = plans[i];
        if (!mm)
            return ork_errorf(ORK_EINVAL, "npu chain: plan %u is NULL", i);
        if (mm->npu != npu)
            return ork_errorf(ORK_EINVAL, "npu chain: plan %u is on another device", i);
        /* int8 and W4A8 plans share ORK_NPU_I8 and may chain: each program sets its own
         * precision, as the published MoE backend chains int4 and int8 bodies
         * (npu-weight-decompression.md §4 item 7 [SRC]); fp16 next to either may not */
        if (mm->w->dtype != plans[0]->w->dtype)
            return ork_errorf(ORK_EUNSUPPORTED, "npu chain: plan %u changes precision inside "
                              "the chain (mode changes need separate submits, spec §14.4)", i);
        if (mm->n_cores != 1)
            return ork_errorf(ORK_EUNSUPPORTED, "npu chain: plan %u is split over %u cores; "
                              "chains are single-core", i, mm->n_cores);
        if (mm->in_flight)
            return ork_errorf(ORK_EBUSY, "npu chain: plan %u has a run in flight", i);
        total += mm->n_tasks;
    }
    if (total > npu->max_tasks)
        return ork_errorf(ORK_ERANGE, "npu chain: %llu programs, one submit takes at most %u",
                          (unsigned long long)total, npu->max_tasks);

    struct ork_npu_chain *ch = ork_calloc(1, sizeof *ch);
    if (!ch)
        return ork_errorf(ORK_ENOMEM, "npu chain: out of memory");
    ch->npu = npu;
    ch->n_plans = n;
    ch->n_tasks = (uint32_t)total;
    ch->plans = ork_calloc(n, sizeof *ch->plans);
    ch->tasks = ork_calloc(total, sizeof *ch->tasks);
    int ret = 0;
    if (!ch->plans || !ch->tasks) {
        ret = ork_errorf(ORK_ENOMEM, "npu chain: %llu task records", (unsigned long long)total);
        goto err;
    }
    ch->in_bos = ork_calloc(2u * n + 1u, sizeof *ch->in_bos);
    ch->out_bos = ork_calloc(n, sizeof *ch->out_bos);
    if (!ch->in_bos || !ch->out_bos) {
        ret = ork_errorf(ORK_ENOMEM, "npu chain: BO lists");
        goto err;
    }
    memcpy(ch->plans, plans, n * sizeof *plans);
    for (uint32_t i = 0; i < n; i++) {
        ch->in_bos[2 * i] = &plans[i]->w->bo;
        ch->in_bos[2 * i + 1] = &plans[i]->a_bo;
        ch->out_bos[i] = &plans[i]->c_bo[0];   /* single-core plans: one C */
    }
    ret = ork__npu_bo_create(npu, total * ORK_PROG_SLOT, ORK_KBO_CACHEABLE, &ch->prog_bo,
                             "npu chain programs");
    if (ret < 0)
        goto err;
    ch->in_bos[2 * n] = &ch->prog_bo;
    uint32_t t = 0;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = 0; j < plans[i]->n_tasks; j++, t++) {
            ch->tasks[t] = plans[i]->tasks[j];
            ch->tasks[t].regcmd_iova = (uint32_t)(ch->prog_bo.iova + (uint64_t)t * ORK_PROG_SLOT);
            ch->tasks[t].op_idx = t;
        }
    uint64_t prog[ORK_PROG_ENTRIES];
    t = 0;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = 0; j < plans[i]->n_tasks; j++, t++) {
            const uint8_t *src = (const uint8_t *)plans[i]->prog_bo.map + (size_t)j * ORK_PROG_SLOT;
            for (uint32_t e = 0; e < ORK_PROG_ENTRIES; e++)
                prog[e] = ork_regcmd_load(src + 8 * e);
            /* relink: next program of the chain, the last terminal; rocket kicks each task
             * itself, so its trailers stay terminal (spec §11.3) */
            bool last = t + 1 == total || !npu->pc_chain;
            ork__prog_set_next(prog, last ? 0 : ch->tasks[t + 1].regcmd_iova, ORK_PROG_COUNTED);
            ork__prog_store((uint8_t *)ch->prog_bo.map + (size_t)t * ORK_PROG_SLOT, prog,
                            ORK_PROG_ENTRIES);
        }
    ret = ork__npu_bo_sync(npu, &ch->prog_bo, 0, ch->prog_bo.size, ORK_KBO_SYNC_TO_DEVICE);
    if (ret < 0)
        goto err;
    *out = ch;
    return 0;
err:
    ork_npu_chain_destroy(ch);
    return ret;
}

int ork__chain_copy_in(struct ork_npu_chain *ch, const void *const *a)
{
    int ret = 0;
    for (uint32_t i = 0; i < ch->n_plans && ret == 0; i++) {
        struct ork_npu_matmul *mm = ch->plans[i];
        if (!a[i])
            return ork_errorf(ORK_EINVAL, "npu chain: plan %u has no A", i);
        if (mm->in_flight)
            return ork_errorf(ORK_EBUSY, "npu chain: plan %u has a run in flight", i);
        ret = ork__matmul_copy_in(mm, a[i], mm->m);
    }
    return ret;
}

int ork__chain_exec(struct ork_npu_chain *ch, void *const *c)
{
    struct ork_kjob job = {
        .tasks = ch->tasks,
        .n_tasks = ch->n_tasks,
        .core_mask = 0,
        .range = { { 0, ch->n_tasks } },
        .flags = ch->npu->pc_chain && ch->n_tasks > 1 ? ORK_KJOB_PINGPONG : 0,   /* §8.3 */
        .timeout_ms = ch->plans[0]->timeout_ms,
        .domain = ch->npu->domain,
        .in_bos = ch->in_bos,
        .n_in_bos = 2 * ch->n_plans + 1,
        .out_bos = ch->out_bos,
        .n_out_bos = ch->n_plans,
    };
    /* rocket times out silently: the last plan's last word is the chain's sentinel (§8.6) */
    struct ork_npu_matmul *last = ch->plans[ch->n_plans - 1];
    const bool sentinel = ork__matmul_sentinel_needed(last);
    int ret = sentinel ? ork__matmul_sentinel_seed(last, last->n_tasks - 1) : 0;
    if (ret < 0)
        return ret;
    /* rknpu: NONBLOCK, the last plan's last word the doorbell, waited for within the bound */
    int armed = ork__matmul_arm(last, &job, last->n_tasks - 1);
    if (armed < 0)
        return armed;
    int64_t t0 = ork_trace_now_ns();
    ret = ch->npu->kmd->submit(ch->npu->kctx, &job);
    if (ret == 0 && armed)
        ret = ork__matmul_wait_armed(last, &job);
    if (ret == 0 && sentinel &&
        (ret = ork__matmul_sentinel_check(last, last->n_tasks - 1, "npu chain: submit")) < 0)
        return ret;                      /* already reset and described */
    if (ork_trace_enabled()) {
        char name[48];
        snprintf(name, sizeof name, "chain of %u plans", ch->n_plans);
        ork__trace_submit(-1, name, t0);
    }
    if (ret < 0) {
        char what[96];
        snprintf(what, sizeof what, "npu chain: submit of %u programs", ch->n_tasks);
        return ork__npu_failed(ch->npu, ret, what);
    }
    if (ork_debug(ORK_DBG_SUBMIT))
        ORK_LOGI("npu chain submit: %u plans, %u programs (%u done), %lld ns", ch->n_plans,
                 ch->n_tasks, job.task_counter, (long long)job.hw_elapse_ns);
    for (uint32_t i = 0; i < ch->n_plans && ret == 0; i++)
        ret = ork__matmul_gather(ch->plans[i], c[i], ch->plans[i]->m);
    return ret;
}

int ork_npu_chain_run(struct ork_npu_chain *ch, const void *const *a, void *const *c)
{
    if (!ch || !a || !c)
        return ork_errorf(ORK_EINVAL, "npu chain: NULL chain, A or C list");
    if (ch->job.queued)
        return ork_errorf(ORK_EBUSY, "npu chain: an async run is in flight");
    for (uint32_t i = 0; i < ch->n_plans; i++)
        if (!c[i])
            return ork_errorf(ORK_EINVAL, "npu chain: plan %u has no C", i);
    int ret = ork__chain_copy_in(ch, a);
    if (ret < 0)
        return ret;
    return ork__chain_exec(ch, c);
}
