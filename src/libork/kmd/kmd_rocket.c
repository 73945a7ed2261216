/* kmd_rocket.c -- the "rocket" kernel-driver backend (placeholder until the implementation lands). */
#include "kmd.h"

#include <ork/error.h>

static int rocket_open(const struct ork_kmd_opts *o, void **ctx)
{
    (void)o;
    *ctx = NULL;
    return ork_errorf(ORK_ENOENT, "no rocket device found");
}

static void rocket_close(void *ctx) { (void)ctx; }

static int rocket_bo_create(void *ctx, uint64_t size, uint32_t flags, uint32_t domain,
                          struct ork_kbo *out)
{
    return ork_errorf(ORK_EUNSUPPORTED, "rocket: not implemented");
}

static void rocket_bo_destroy(void *ctx, struct ork_kbo *bo) { (void)bo; }

static int rocket_submit(void *ctx, struct ork_kjob *job)
{
    return ork_errorf(ORK_EUNSUPPORTED, "rocket: not implemented");
}

static int rocket_wait(void *ctx, struct ork_kjob *job, int64_t timeout_ns)
{
    return ork_errorf(ORK_EUNSUPPORTED, "rocket: not implemented");
}

const struct ork_kmd_ops ork__kmd_rocket_ops = {
    .name = "rocket",
    .open = rocket_open,
    .close = rocket_close,
    .bo_create = rocket_bo_create,
    .bo_destroy = rocket_bo_destroy,
    .submit = rocket_submit,
    .wait = rocket_wait,
};
