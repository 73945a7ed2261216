/* kmd_sim.c -- the "sim" kernel-driver backend (placeholder until the implementation lands). */
#include "kmd.h"

#include <ork/error.h>

static int sim_open(const struct ork_kmd_opts *o, void **ctx)
{
    (void)o;
    *ctx = NULL;
    return ork_errorf(ORK_ENOENT, "no sim device found");
}

static void sim_close(void *ctx) { (void)ctx; }

static int sim_bo_create(void *ctx, uint64_t size, uint32_t flags, uint32_t domain,
                          struct ork_kbo *out)
{
    return ork_errorf(ORK_EUNSUPPORTED, "sim: not implemented");
}

static void sim_bo_destroy(void *ctx, struct ork_kbo *bo) { (void)bo; }

static int sim_submit(void *ctx, struct ork_kjob *job)
{
    return ork_errorf(ORK_EUNSUPPORTED, "sim: not implemented");
}

static int sim_wait(void *ctx, struct ork_kjob *job, int64_t timeout_ns)
{
    return ork_errorf(ORK_EUNSUPPORTED, "sim: not implemented");
}

const struct ork_kmd_ops ork__kmd_sim_ops = {
    .name = "sim",
    .open = sim_open,
    .close = sim_close,
    .bo_create = sim_bo_create,
    .bo_destroy = sim_bo_destroy,
    .submit = sim_submit,
    .wait = sim_wait,
};

struct ork_sim *ork__kmd_sim_get(const struct ork_kmd_ops *ops, void *ctx)
{
    (void)ops;
    (void)ctx;
    return NULL;
}
