/* weights_policy.h -- the NPU weights' load policy (weights_policy.c; docs/dcomp.md
 * "Fallback"): DCOMP streams only where the device's decompressor can be faster than raw
 * int8. Private to src/engine/npu/. */
#ifndef ORK_ENGINE_NPU_WEIGHTS_POLICY_H
#define ORK_ENGINE_NPU_WEIGHTS_POLICY_H

#include <ork-engine/engine.h>
#include <ork/npu.h>
#include <ork/twin.h>

#include <stdbool.h>

/* What the policy knows of a device's weight path. */
struct ork__npu_wpolicy {
    bool known;             /* the decompressor's rate is known (else the setting is kept) */
    double dcomp_bps;       /* its int8 output per core, B/s */
    double share_bps;       /* a core's DRAM share with every NPU core streaming, B/s */
    uint32_t cores;         /* the NPU cores of that share */
    const char *from;       /* where the rate came from (for the log line) */
};

/* The rates of the device the model loads on: the simulator's are the twin's table with the
 * calibration (p->twin_calibration) and --sim-dcomp-gbps over it, as the twin recorder sees
 * them; a board's are known only when p->twin_calibration gives npu_dcomp_gbps a value other
 * than the table's unmeasured guess. ORK_EFORMAT/ORK_ERANGE/ORK_EIO naming the file when the
 * calibration is needed and refused. */
int ork__npu_wpolicy_rates(const struct ork_model_params *p, bool sim, struct ork__npu_wpolicy *out);

/* Called once per model load, after the device check: for a setting that stores DCOMP streams
 * (dcomp, dcomp:L), when the decompressor's rate is known and no faster than a core's DRAM
 * share (max(stream / share, raw / R) >= raw / share for every block), every tensor falls back
 * to int8 (the setting becomes int8, --npu-weights-rotate kept) with one warning naming both
 * rates, unless o->force. 0, or < 0 on error (a calibration file it needs and cannot load). */
int ork__npu_weights_policy(struct ork_npu_weights_opts *o, struct ork_npu *npu,
                            const struct ork_model_params *p);

#endif
