/* kmd.c -- choosing and opening a kernel-driver backend by name.
 * The backends themselves live in kmd_rknpu.c, kmd_rocket.c and kmd_sim.c. */
#include "kmd.h"

#include <stdio.h>
#include <string.h>

#include <ork/error.h>

static const struct ork_kmd_ops *const kmd_backends[] = {
    &ork__kmd_rknpu_ops,
    &ork__kmd_rocket_ops,
    &ork__kmd_sim_ops,
    &ork__kmd_sim_rocket_ops,
};

int ork__kmd_select(const char *name, const struct ork_kmd_ops **out)
{
    if (!name || !out)
        return ork_errorf(ORK_EINVAL, "kmd: no backend name given");
    for (size_t i = 0; i < sizeof kmd_backends / sizeof kmd_backends[0]; i++) {
        if (strcmp(kmd_backends[i]->name, name) == 0) {
            *out = kmd_backends[i];
            return 0;
        }
    }
    return ork_errorf(ORK_ENOENT, "kmd: unknown backend '%s' (rknpu, rocket, sim, sim-rocket, auto)", name);
}

int ork__kmd_open(const char *name, const struct ork_kmd_opts *o,
                  const struct ork_kmd_ops **ops, void **ctx)
{
    if (!ops || !ctx)
        return ork_errorf(ORK_EINVAL, "kmd: NULL output");
    if (name && strcmp(name, "auto") != 0) {
        int ret = ork__kmd_select(name, ops);
        if (ret < 0)
            return ret;
        return (*ops)->open(o, ctx);
    }
    /* auto: real drivers only, vendor first (the validated one, spec §10). */
    int ret = ork__kmd_rknpu_ops.open(o, ctx);
    if (ret == 0) {
        *ops = &ork__kmd_rknpu_ops;
        return 0;
    }
    /* a device that exists but cannot be used says so: never "not found" (discovery) */
    char first[512];
    int first_ret = ret;
    snprintf(first, sizeof first, "%s", ork_error_message());
    ret = ork__kmd_rocket_ops.open(o, ctx);
    if (ret == 0) {
        *ops = &ork__kmd_rocket_ops;
        return 0;
    }
    if (first_ret != ORK_ENOENT)
        return ork_errorf(first_ret, "%s", first);
    if (ret != ORK_ENOENT)
        return ret;
    return ork_errorf(ORK_ENOENT, "kmd: no NPU device found (neither rknpu nor rocket); "
                      "use the sim device to run without hardware");
}
