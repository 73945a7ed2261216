/* kmd_sim.c -- the two simulator backends:
 *  "sim"        the rknpu backend (kmd_rknpu.c) running over the simulator (src/sim/sim.h),
 *               which serves the same ioctl requests, mmap offsets and struct layouts as the
 *               vendor driver. Only the transport differs: requests go to ork__sim_ioctl
 *               instead of ioctl(2), mappings come from ork__sim_mmap, and NONBLOCK jobs are
 *               waited for through the simulator (a board would poll the doorbell word, §8.6);
 *  "sim-rocket" the rocket backend (kmd_rocket.c) over the simulator's rocket driver model
 *               (src/sim/sim_rocket.c): files, CREATE/PREP/FINI_BO, SUBMIT of jobs.
 * Both honour the simulator's discovery fakes (ork_sim_opts.fake_node_errno, drv_version), so the
 * failure messages of a board's discovery are produced by the same code (kmd_discovery.h).
 * Nothing NPU-specific lives here. */
#include "kmd_discovery.h"
#include "kmd_rknpu.h"
#include "kmd_rocket.h"
#include "uapi/rknpu_uapi.h"

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

/* A faked absent or denied node fails the open as the real probe would (kmd_discovery.h). */
static int sim_fake_discovery(const struct ork_sim_opts *so, const char *backend,
                              const char *driver, const char *node, const char *where)
{
    if (!so || !so->struct_size || !so->fake_node_errno)
        return 0;
    struct ork__kmd_probe pr;
    ork__kmd_probe_init(&pr, backend, driver);
    ork__kmd_probe_fail(&pr, so->fake_node ? so->fake_node : node, so->fake_node_errno);
    return ork__kmd_probe_error(&pr, so->fake_node ? so->fake_node : where);
}

static int sim_open(const struct ork_kmd_opts *o, void **ctx)
{
    const struct ork_sim_opts *so = o && o->struct_size ? o->sim : NULL;
    int fr = sim_fake_discovery(so, "rknpu", "rknpu", "/dev/dri/card1", "/dev/dri/card*");
    if (fr < 0)
        return fr;
    struct ork_sim *sim;
    int ret = ork__sim_create(so, &sim);
    if (ret < 0)
        return ret;
    /* board_wait: no wait of the simulator's, so NONBLOCK jobs are waited for by polling
     * their doorbell in host time, the code a board runs (kmd_rknpu.c, §8.6) */
    bool board_wait = so && so->struct_size && so->board_wait;
    struct ork_rknpu_transport tr = {
        .t = sim, .name = "sim", .ioctl = sim_tr_ioctl, .mmap = sim_tr_mmap,
        .munmap = sim_tr_munmap, .wait = board_wait ? NULL : sim_tr_wait,
        .last_seq = sim_tr_last_seq, .close = sim_tr_close,
    };
    uint32_t n_cores = so && so->n_cores ? so->n_cores : ORK_KMD_MAX_CORES;
    return ork__kmd_rknpu_open_transport(&tr, n_cores, ctx);
}

/* What the simulator was configured with (cores, domain bytes, the one-job confirmation). */
static int sim_query_common(struct ork_sim *sim, enum ork_kmd_cap cap, uint64_t *val)
{
    if (cap == ORK_KMD_CAP_DOMAIN_BYTES || cap == ORK_KMD_CAP_N_CORES) {
        struct ork_sim_counters c;
        ork__sim_counters(sim, &c);
        *val = cap == ORK_KMD_CAP_N_CORES ? c.n_cores : c.domain_limit;
        return 0;
    }
    return 1;
}

/* The rknpu answers, except what the simulator was configured with. */
static int sim_query(void *ctx, enum ork_kmd_cap cap, uint64_t *val)
{
    struct ork_sim *sim = ork__kmd_rknpu_transport_ctx(ctx);
    int r = sim_query_common(sim, cap, val);
    if (r <= 0)
        return r;
    if (cap == ORK_KMD_CAP_ONE_JOB_CONFIRMED) {
        *val = ork__sim_confirms_one_job(sim);
        return 0;
    }
    if (cap == ORK_KMD_CAP_DCOMP_CONFIRMED) {
        *val = ork__sim_confirms_dcomp(sim);
        return 0;
    }
    if (cap == ORK_KMD_CAP_W4A8_CONFIRMED) {
        *val = ork__sim_confirms_w4a8(sim);
        return 0;
    }
    return ork__kmd_rknpu_query(ctx, cap, val);
}

/* The counters behind the simulator's `load` file, and its timing table's switch cost. */
static int sim_model_time_of(struct ork_sim *sim, struct ork_kmd_model_time *out)
{
    struct ork_sim_counters c;
    ork__sim_counters(sim, &c);
    out->now_ns = c.now_ns;
    out->n_cores = c.n_cores < ORK_KMD_MAX_CORES ? c.n_cores : ORK_KMD_MAX_CORES;
    for (uint32_t i = 0; i < out->n_cores; i++)
        out->core_busy_ns[i] = c.busy_ns[i];
    out->domain_switch_ns = (int64_t)ork__sim_timing_of(sim)->t_domain_switch_ns;
    return 0;
}

static int sim_model_time(void *ctx, struct ork_kmd_model_time *out)
{
    return sim_model_time_of(ork__kmd_rknpu_transport_ctx(ctx), out);
}

struct ork_sim *ork__kmd_sim_get(const struct ork_kmd_ops *ops, void *ctx)
{
    if (ops == &ork__kmd_sim_ops)
        return ork__kmd_rknpu_transport_ctx(ctx);
    if (ops == &ork__kmd_sim_rocket_ops)
        return ork__kmd_rocket_transport_ctx(ctx);
    return NULL;
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

/* ---- "sim-rocket": the rocket backend over the simulator's rocket model ------------------ */

static int simr_file_open(void *t)
{
    return ork__sim_rocket_file_open(t);
}

static void simr_file_close(void *t, int file)
{
    ork__sim_rocket_file_close(t, file);
}

static int simr_ioctl(void *t, int file, uint32_t request, void *arg)
{
    return ork__sim_rocket_ioctl(t, file, request, arg);
}

static void *simr_mmap(void *t, int file, uint64_t offset, uint64_t size)
{
    (void)file;
    return ork__sim_mmap(t, offset, size);
}

/* The simulated kernel's reset (clears cores an injected fault left hung) and versions; a
 * board's rocket has no action ioctl (the backend then answers RESET itself). */
static int simr_action(void *t, enum ork_kmd_action act, uint32_t *value)
{
    struct rknpu_action a = { 0, 0 };
    if (act == ORK_KMD_ACT_RESET)
        a.flags = RKNPU_ACT_RESET;
    else if (act == ORK_KMD_ACT_GET_FREQ)
        a.flags = RKNPU_GET_FREQ;
    else
        return ork_errorf(ORK_EUNSUPPORTED, "sim-rocket: action %d: rocket has no action ioctl "
                          "(§11.1)", (int)act);
    int ret = ork__sim_ioctl(t, DRM_IOCTL_RKNPU_ACTION, &a);
    if (ret == 0 && value)
        *value = act == ORK_KMD_ACT_GET_FREQ ? a.value / 1000000u : 0;
    return ret;
}

static int simr_open(const struct ork_kmd_opts *o, void **ctx)
{
    const struct ork_sim_opts *so = o && o->struct_size ? o->sim : NULL;
    int fr = sim_fake_discovery(so, "rocket", "rocket", "/dev/accel/accel0", "/dev/accel/accel*");
    if (fr < 0)
        return fr;
    struct ork_sim *sim;
    int ret = ork__sim_create(so, &sim);
    if (ret < 0)
        return ret;
    struct ork_rocket_transport tr = {
        .t = sim, .name = "sim-rocket", .file_open = simr_file_open,
        .file_close = simr_file_close, .ioctl = simr_ioctl, .mmap = simr_mmap,
        .munmap = sim_tr_munmap, .action = simr_action, .close = sim_tr_close,
    };
    return ork__kmd_rocket_open_transport(&tr, ctx);
}

static int simr_query(void *ctx, enum ork_kmd_cap cap, uint64_t *val)
{
    struct ork_sim *sim = ork__kmd_rocket_transport_ctx(ctx);
    int r = sim_query_common(sim, cap, val);
    if (r <= 0)
        return r;
    if (cap == ORK_KMD_CAP_DCOMP_CONFIRMED) {
        *val = ork__sim_confirms_dcomp(sim);
        return 0;
    }
    if (cap == ORK_KMD_CAP_W4A8_CONFIRMED) {
        *val = ork__sim_confirms_w4a8(sim);
        return 0;
    }
    return ork__kmd_rocket_query(ctx, cap, val);
}

static int simr_model_time(void *ctx, struct ork_kmd_model_time *out)
{
    return sim_model_time_of(ork__kmd_rocket_transport_ctx(ctx), out);
}

const struct ork_kmd_ops ork__kmd_sim_rocket_ops = {
    .name = "sim-rocket",
    .open = simr_open,
    .close = ork__kmd_rocket_close,
    .bo_create = ork__kmd_rocket_bo_create,
    .bo_destroy = ork__kmd_rocket_bo_destroy,
    .bo_sync = ork__kmd_rocket_bo_sync,
    .submit = ork__kmd_rocket_submit,
    .wait = ork__kmd_rocket_wait,
    .action = ork__kmd_rocket_action,
    .query = simr_query,
    .model_time = simr_model_time,
};
