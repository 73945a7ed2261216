/* kmd_rocket.h -- internals of the rocket backend exposed for unit tests (the device itself
 * cannot be exercised without hardware). */
#ifndef ORK_KMD_ROCKET_H
#define ORK_KMD_ROCKET_H

#include <stdint.h>

#include "kmd.h"
#include "uapi/rocket_uapi.h"

/* Translate `job` into rocket structs (§11.2, §11.3): tasks[i] = {regcmd_iova, amount + 4};
 * one drm_rocket_job per selected core range (core_mask 0 = range[0]) in jobs[0..*n_jobs);
 * in_h/out_h receive the BO handles (arrays of n_in_bos / n_out_bos). */
int ork__kmd_rocket_fill(const struct ork_kjob *job, struct drm_rocket_task *tasks,
                         struct drm_rocket_job *jobs, uint32_t *n_jobs, uint32_t *in_h,
                         uint32_t *out_h);

#endif
