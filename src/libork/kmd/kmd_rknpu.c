/* kmd_rknpu.c -- the "rknpu" kernel-driver backend (placeholder until the implementation lands). */
#include "kmd.h"

#include <ork/error.h>

static int rknpu_open(const struct ork_kmd_opts *o, void **ctx)
{
    (void)o;
    *ctx = NULL;
    return ork_errorf(ORK_ENOENT, "no rknpu device found");
}

static void rknpu_close(void *ctx) { (void)ctx; }

static int rknpu_bo_create(void *ctx, uint64_t size, uint32_t flags, uint32_t domain,
                          struct ork_kbo *out)
{
    return ork_errorf(ORK_EUNSUPPORTED, "rknpu: not implemented");
}

static void rknpu_bo_destroy(void *ctx, struct ork_kbo *bo) { (void)bo; }

static int rknpu_submit(void *ctx, struct ork_kjob *job)
{
    return ork_errorf(ORK_EUNSUPPORTED, "rknpu: not implemented");
}

static int rknpu_wait(void *ctx, struct ork_kjob *job, int64_t timeout_ns)
{
    return ork_errorf(ORK_EUNSUPPORTED, "rknpu: not implemented");
}

const struct ork_kmd_ops ork__kmd_rknpu_ops = {
    .name = "rknpu",
    .open = rknpu_open,
    .close = rknpu_close,
    .bo_create = rknpu_bo_create,
    .bo_destroy = rknpu_bo_destroy,
    .submit = rknpu_submit,
    .wait = rknpu_wait,
};
