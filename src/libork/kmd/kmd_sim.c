/* kmd_sim.c -- the "sim" backend: the rknpu backend (kmd_rknpu.c) running over the simulator
 * (src/sim/sim.h), which serves the same ioctl requests, mmap offsets and struct layouts as the
 * vendor driver. Only the transport differs: requests go to ork__sim_ioctl instead of ioctl(2),
 * mappings come from ork__sim_mmap, and NONBLOCK jobs are waited for through the simulator
 * (a board would poll the doorbell word, §8.6). Nothing NPU-specific lives here. */
#include "kmd_rknpu.h"

#include <ork/error.h>

#include "sim/sim.h"        /* the simulator's entry points; only this file of libork includes it */

static int sim_tr_ioctl(void *t, uint32_t request, void *arg)
{
    return ork__sim_ioctl(t, request, arg);
}

static void *sim_tr_mmap(void *t, uint64_t offset, uint64_t size)
{
    return ork__sim_mmap(t, offset, size);
}

static void sim_tr_munmap(void *t, void *p, uint64_t size)
{
    (void)t;
    (void)p;
    (void)size;                          /* the mapping lives as long as the BO */
}

static int sim_tr_wait(void *t, uint64_t seq, int64_t timeout_ns)
{
    return ork__sim_wait(t, seq, timeout_ns);
}

static uint64_t sim_tr_last_seq(void *t)
{
    return ork__sim_last_seq(t);
}

static void sim_tr_close(void *t)
{
    ork__sim_destroy(t);
}

static int sim_open(const struct ork_kmd_opts *o, void **ctx)
{
    const struct ork_sim_opts *so = o && o->struct_size ? o->sim : NULL;
    struct ork_sim *sim;
    int ret = ork__sim_create(so, &sim);
    if (ret < 0)
        return ret;
    struct ork_rknpu_transport tr = {
        .t = sim, .name = "sim", .ioctl = sim_tr_ioctl, .mmap = sim_tr_mmap,
        .munmap = sim_tr_munmap, .wait = sim_tr_wait, .last_seq = sim_tr_last_seq,
        .close = sim_tr_close,
    };
    uint32_t n_cores = so && so->n_cores ? so->n_cores : ORK_KMD_MAX_CORES;
    return ork__kmd_rknpu_open_transport(&tr, n_cores, ctx);
}

/* The rknpu answers, except what the simulator was configured with. */
static int sim_query(void *ctx, enum ork_kmd_cap cap, uint64_t *val)
{
    if (cap == ORK_KMD_CAP_DOMAIN_BYTES || cap == ORK_KMD_CAP_N_CORES) {
        struct ork_sim_counters c;
        ork__sim_counters(ork__kmd_rknpu_transport_ctx(ctx), &c);
        *val = cap == ORK_KMD_CAP_N_CORES ? c.n_cores : c.domain_limit;
        return 0;
    }
    return ork__kmd_rknpu_query(ctx, cap, val);
}

/* The counters behind the simulator's `load` file, and its timing table's switch cost. */
static int sim_model_time(void *ctx, struct ork_kmd_model_time *out)
{
    struct ork_sim_counters c;
    ork__sim_counters(ork__kmd_rknpu_transport_ctx(ctx), &c);
    out->now_ns = c.now_ns;
    out->n_cores = c.n_cores < ORK_KMD_MAX_CORES ? c.n_cores : ORK_KMD_MAX_CORES;
    for (uint32_t i = 0; i < out->n_cores; i++)
        out->core_busy_ns[i] = c.busy_ns[i];
    out->domain_switch_ns =
        (int64_t)ork__sim_timing_of(ork__kmd_rknpu_transport_ctx(ctx))->t_domain_switch_ns;
    return 0;
}

struct ork_sim *ork__kmd_sim_get(const struct ork_kmd_ops *ops, void *ctx)
{
    if (ops != &ork__kmd_sim_ops)
        return NULL;
    return ork__kmd_rknpu_transport_ctx(ctx);
}

const struct ork_kmd_ops ork__kmd_sim_ops = {
    .name = "sim",
    .open = sim_open,
    .close = ork__kmd_rknpu_close,
    .bo_create = ork__kmd_rknpu_bo_create,
    .bo_destroy = ork__kmd_rknpu_bo_destroy,
    .bo_sync = ork__kmd_rknpu_bo_sync,
    .submit = ork__kmd_rknpu_submit,
    .wait = ork__kmd_rknpu_wait,
    .action = ork__kmd_rknpu_action,
    .query = sim_query,
    .model_time = sim_model_time,
};
