/* device.c -- opening an NPU through the kernel vtable (rknpu, rocket or the simulator), its
 * capabilities and modelled clock (the vtable's model_time slot: only the sim has one), and the
 * buffer helpers the other libork objects use. No planning or emission. */
#include "ork_priv.h"

#include <ork/alloc.h>
#include <ork/debug.h>
#include <ork/error.h>
#include <ork/sim.h>
#include <ork/twin.h>

#include <stddef.h>
#include <stdio.h>
#include <string.h>

_Static_assert((unsigned)ORK_NPU_FORM_ONE_JOB == (unsigned)ORK_TWIN_FORM_ONE_JOB,
               "npu.h and twin.h name the same form bits");
_Static_assert((unsigned)ORK_NPU_FORM_DCOMP == (unsigned)ORK_TWIN_FORM_DCOMP,
               "npu.h and twin.h name the same form bits");
_Static_assert((unsigned)ORK_NPU_FORM_WIDE_K == (unsigned)ORK_TWIN_FORM_WIDE_K,
               "npu.h and twin.h name the same form bits");
_Static_assert((unsigned)ORK_NPU_FORM_W4A8 == (unsigned)ORK_TWIN_FORM_W4A8,
               "npu.h and twin.h name the same form bits");

/* Tasks per job when the backend does not say (the vendor driver's max_submit_number, spec §10.1). */
#define DEFAULT_MAX_TASKS 4095u

int ork_npu_open(const struct ork_npu_opts *opts, struct ork_npu **out)
{
    struct ork_npu_opts o = { 0 };
    if (!out)
        return ork_errorf(ORK_EINVAL, "npu open: NULL output");
    *out = NULL;
    if (opts && opts->struct_size) {
        size_t n = opts->struct_size < sizeof o ? opts->struct_size : sizeof o;
        memcpy(&o, opts, n);
    }
    const char *dev = o.device && *o.device ? o.device : "auto";
    if (strcmp(dev, "auto") && strcmp(dev, "rknpu") && strcmp(dev, "rocket") && strcmp(dev, "sim") &&
        strcmp(dev, "sim-rocket"))
        return ork_errorf(ORK_EINVAL, "npu open: unknown device '%s' (auto, rknpu, rocket, sim, "
                          "sim-rocket)", dev);
    if (o.worker_spin_us > ORK_NPU_WORKER_SPIN_US_MAX)
        return ork_errorf(ORK_ERANGE, "npu open: worker_spin_us %u above %u", o.worker_spin_us,
                          ORK_NPU_WORKER_SPIN_US_MAX);
    uint32_t forms = o.confirmed_forms;
    if (o.capabilities) {
        struct ork_twin_caps caps;
        int r = ork_twin_caps_load(o.capabilities, &caps);
        if (r < 0)
            return r;                    /* the message names the file */
        forms |= caps.confirmed;
    }
    if (o.log)
        ork_log_set(o.log, o.log_user);

    struct ork_npu *npu = ork_calloc(1, sizeof *npu);
    if (!npu)
        return ork_errorf(ORK_ENOMEM, "npu open: out of memory");
    struct ork_kmd_opts ko = { .struct_size = sizeof ko, .node = o.node, .sim = o.sim };
    int ret = ork__kmd_open(dev, &ko, &npu->kmd, &npu->kctx);
    if (ret < 0) {
        /* absent: the short advice; present but unusable (EACCES, render node): its own words */
        if (!strcmp(dev, "auto") && ret == ORK_ENOENT)
            ret = ork_errorf(ORK_ENOENT, "no RK3588 NPU found (tried rknpu, rocket); use "
                             "--device sim for the simulator");
        goto err_free;
    }
    pthread_mutex_init(&npu->sched_lock, NULL);
    npu->domain = o.domain;
    npu->wait_ms = o.wait_timeout_ms ? o.wait_timeout_ms : ORK_NPU_WAIT_TIMEOUT_MS;
    npu->worker_spin_us = o.worker_spin_us;
    npu->max_tasks = DEFAULT_MAX_TASKS;
    npu->n_cores = 1;
    uint64_t v;
    if (npu->kmd->query) {
        uint64_t sel = 0;
        if (npu->kmd->query(npu->kctx, ORK_KMD_CAP_N_CORES, &v) == 0 && v &&
            npu->kmd->query(npu->kctx, ORK_KMD_CAP_CORE_SELECT, &sel) == 0 && sel)
            npu->n_cores = v < ORK_MM_MAX_CORES ? (uint32_t)v : ORK_MM_MAX_CORES;
        /* rocket: no core select, but several jobs in one SUBMIT go to several cores (§11.3) */
        uint64_t mj = 0, nc = 0;
        if (!sel && npu->kmd->query(npu->kctx, ORK_KMD_CAP_MULTI_JOB, &mj) == 0 && mj &&
            npu->kmd->query(npu->kctx, ORK_KMD_CAP_N_CORES, &nc) == 0 && nc) {
            npu->multi_job = true;
            npu->n_cores = nc < ORK_MM_MAX_CORES ? (uint32_t)nc : ORK_MM_MAX_CORES;
        }
        if (npu->kmd->query(npu->kctx, ORK_KMD_CAP_ONE_JOB_CONFIRMED, &v) == 0 && v)
            forms |= ORK_NPU_FORM_ONE_JOB;
        if (npu->kmd->query(npu->kctx, ORK_KMD_CAP_DCOMP_CONFIRMED, &v) == 0 && v)
            forms |= ORK_NPU_FORM_DCOMP;
        if (npu->kmd->query(npu->kctx, ORK_KMD_CAP_W4A8_CONFIRMED, &v) == 0 && v)
            forms |= ORK_NPU_FORM_W4A8;
        if (npu->kmd->query(npu->kctx, ORK_KMD_CAP_PC_CHAIN, &v) == 0)
            npu->pc_chain = v != 0;
        if (npu->kmd->query(npu->kctx, ORK_KMD_CAP_MAX_TASKS, &v) == 0 && v)
            npu->max_tasks = v < DEFAULT_MAX_TASKS ? (uint32_t)v : DEFAULT_MAX_TASKS;
        if (npu->kmd->query(npu->kctx, ORK_KMD_CAP_SIM, &v) == 0)
            npu->is_sim = v != 0;
    }
    if (!strcmp(npu->kmd->name, "sim") || !strcmp(npu->kmd->name, "sim-rocket"))
        npu->is_sim = true;
    /* the simulator vouches for the wide-K M-tile rule when its options ask */
    if (npu->is_sim && o.sim &&
        o.sim->struct_size >= offsetof(struct ork_sim_opts, confirm_wide_k) + sizeof(bool) &&
        o.sim->confirm_wide_k)
        forms |= ORK_NPU_FORM_WIDE_K;
    npu->confirmed_forms = forms;
    /* NONBLOCK + doorbell where the driver has no wait of its own but the programs chain
     * (rknpu, §8.6); rocket's completion is PREP_BO on the outputs (§11.2) */
    npu->nonblock = npu->pc_chain && !npu->multi_job && !o.blocking_submits &&
                    npu->kmd->wait != NULL;
    ork_error_clear();
    *out = npu;
    return 0;
err_free:
    ork_free(npu);
    return ret;
}

void ork_npu_close(struct ork_npu *npu)
{
    if (!npu)
        return;
    ork__async_shutdown(npu);      /* workers first: they may still reach the kernel */
    ork__sched_shutdown(npu);
    pthread_mutex_destroy(&npu->sched_lock);
    npu->kmd->close(npu->kctx);
    ork_free(npu);
}

uint32_t ork_npu_wait_bound_ms(const struct ork_npu *npu)
{
    return npu && npu->nonblock ? npu->wait_ms : 0;
}

uint32_t ork_npu_confirmed_forms(const struct ork_npu *npu)
{
    return npu ? npu->confirmed_forms : 0;
}

const char *ork_npu_backend(const struct ork_npu *npu)
{
    return npu ? npu->kmd->name : "none";
}

bool ork_npu_is_sim(const struct ork_npu *npu)
{
    return npu && npu->is_sim;
}

int ork__npu_bo_create(struct ork_npu *npu, uint64_t size, uint32_t flags, struct ork_kbo *out,
                       const char *what)
{
    memset(out, 0, sizeof *out);
    int ret = npu->kmd->bo_create(npu->kctx, size, flags | ORK_KBO_ZEROED, npu->domain, out);
    if (ret < 0) {
        char why[384];     /* the backend's reason (e.g. the driver version), kept */
        snprintf(why, sizeof why, "%s", ork_error_describe(ret));
        return ork_errorf(ret, "%s: cannot allocate %llu device bytes: %s", what,
                          (unsigned long long)size, why);
    }
    if (!out->map) {
        npu->kmd->bo_destroy(npu->kctx, out);
        return ork_errorf(ORK_EDEVICE, "%s: buffer has no CPU mapping", what);
    }
    /* ZEROED is a request the backend may ignore; padding must be zero (spec §5.3 notes). */
    memset(out->map, 0, size);
    return 0;
}

void ork__npu_bo_destroy(struct ork_npu *npu, struct ork_kbo *bo)
{
    if (bo->map || bo->handle || bo->iova)
        npu->kmd->bo_destroy(npu->kctx, bo);
    memset(bo, 0, sizeof *bo);
}

int ork__npu_bo_sync(struct ork_npu *npu, const struct ork_kbo *bo, uint64_t off, uint64_t size,
                     enum ork_kbo_sync dir)
{
    if (!npu->kmd->bo_sync || !(bo->flags & ORK_KBO_CACHEABLE) || !size)
        return 0;
    return npu->kmd->bo_sync(npu->kctx, bo, off, size, dir);
}

/* ---- modelled device clock (the sim's; a board has none) --------------------------------- */

int ork_npu_model_time(struct ork_npu *npu, struct ork_npu_model_time *out)
{
    if (!npu || !out)
        return ork_errorf(ORK_EINVAL, "npu model time: NULL argument");
    memset(out, 0, sizeof(*out));
    if (!npu->kmd->model_time)
        return ork_errorf(ORK_EUNSUPPORTED, "npu model time: backend '%s' is not the simulator",
                          npu->kmd->name);
    struct ork_kmd_model_time t = {0};
    int ret = npu->kmd->model_time(npu->kctx, &t);
    if (ret < 0)
        return ret;
    out->now_ns = t.now_ns;
    out->n_cores = t.n_cores < ORK_NPU_MODEL_MAX_CORES ? t.n_cores : ORK_NPU_MODEL_MAX_CORES;
    for (uint32_t i = 0; i < out->n_cores; i++)
        out->core_busy_ns[i] = t.core_busy_ns[i];
    out->domain_switch_ns = t.domain_switch_ns;
    return 0;
}
