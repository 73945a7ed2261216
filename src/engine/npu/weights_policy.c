/* weights_policy.c -- DCOMP only where it can win (docs/dcomp.md "Fallback").
 *
 * A DCOMP block of `raw` int8 bytes stored as `stream` bytes takes max(stream / BW, raw / R)
 * on a core whose DRAM share is BW and whose decompressor outputs R int8 bytes a second; raw
 * int8 takes raw / BW (the simulator's and the twin's formula, src/sim/sim_timing.c,
 * model/twin_rec.c dcomp_extra_ns). With R <= BW the compressed block is never faster,
 * whatever the stream's size, and the grid's codes lose accuracy for nothing: the load then
 * runs int8 for every tensor and says why. BW is a core's share with every NPU core streaming,
 * min(npu_bw_core, npu_bw_all / npu_cores) (ork_twin_npu_share_bps): the case of the large
 * matrices the executor splits over the cores, whose bytes decide decode's time.
 *
 * Where R comes from: the simulator's is the twin table's npu_dcomp_gbps (a guess,
 * npu-weight-decompression.md §5 (a)), a calibration's, or --sim-dcomp-gbps; a board's is
 * known only from a calibration file that gives npu_dcomp_gbps a value of its own (`ork
 * selftest --calibrate` writes every constant, the unmeasured guess included, and a guess is
 * no measurement). Unknown: the user's setting stands. --npu-weights-force keeps DCOMP. */
#include "weights_policy.h"

#include "npu_priv.h"

#include <ork/error.h>
#include <ork/log.h>

#include <stdio.h>
#include <string.h>

/* GB/s -> B/s (npu_dcomp_gbps is in GB/s, the bandwidths in B/s: include/ork/twin.h). */
#define GBPS 1e9

/* Whether the calibration file at path sets npu_dcomp_gbps: loaded over two tables that differ
 * only there, it does when both come back equal. *c gets the first (defaults + the file). */
static int calib_sets_dcomp(const char *path, struct ork_twin_consts *c, bool *sets)
{
    struct ork_twin_consts a, b;
    ork_twin_consts_default(&a);
    b = a;
    b.npu_dcomp_gbps = 2.0 * a.npu_dcomp_gbps;
    int ret = ork_twin_calib_load(path, &a);
    if (ret == 0)
        ret = ork_twin_calib_load(path, &b);
    if (ret < 0) {
        char why[256];
        snprintf(why, sizeof why, "%s", ork_error_message());
        return ork_errorf(ret, "twin calibration '%s': %s", path, why);
    }
    *sets = a.npu_dcomp_gbps == b.npu_dcomp_gbps;
    *c = a;
    return 0;
}

int ork__npu_wpolicy_rates(const struct ork_model_params *p, bool sim, struct ork__npu_wpolicy *out)
{
    memset(out, 0, sizeof(*out));
    struct ork_twin_consts c, def;
    ork_twin_consts_default(&def);
    c = def;
    bool sets = false;
    int ret;
    if (p->twin_calibration && (ret = calib_sets_dcomp(p->twin_calibration, &c, &sets)) < 0)
        return ret;
    if (sim) {
        out->known = true;
        out->from = "the twin's table";
        if (sets)
            out->from = "the calibration";
        if (p->sim_dcomp_gbps > 0) {    /* the recorder's and the simulator's override */
            c.npu_dcomp_gbps = p->sim_dcomp_gbps;
            out->from = "--sim-dcomp-gbps";
        }
    } else {
        out->known = sets && c.npu_dcomp_gbps != def.npu_dcomp_gbps;
        out->from = "the calibration";
    }
    out->cores = (uint32_t)c.npu_cores;
    out->dcomp_bps = c.npu_dcomp_gbps * GBPS;
    out->share_bps = ork_twin_npu_share_bps(&c, out->cores);
    return 0;
}

int ork__npu_weights_policy(struct ork_npu_weights_opts *o, struct ork_npu *npu,
                            const struct ork_model_params *p)
{
    if (ork__npu_wenc_libork(o) != ORK_NPU_WEIGHTS_DCOMP)
        return 0;                       /* no decompressor in the weights' path */
    struct ork__npu_wpolicy w;
    int ret = ork__npu_wpolicy_rates(p, ork_npu_is_sim(npu), &w);
    if (ret < 0)
        return ret;
    if (!w.known || w.dcomp_bps > w.share_bps || o->force)
        return 0;
    char name[128];
    ork__npu_wenc_name(o, name, sizeof name);
    ORK_LOGW("--npu-weights %s: the %s decompressor's %.4g GB/s a core (%s) is no faster than "
             "a core's DRAM share of raw int8, %.4g GB/s (min(npu_bw_core, npu_bw_all / %u)): "
             "DCOMP cannot win, so every NPU tensor is int8 (--npu-weights-force keeps DCOMP)",
             name, ork_npu_backend(npu), w.dcomp_bps / GBPS, w.from, w.share_bps / GBPS,
             w.cores);
    o->encoding = ORK_NPU_WENC_INT8;
    o->levels = 0;
    o->max_rel_rmse = 0.0;
    o->flags &= ~(uint32_t)(ORK_NPU_WENC_RAW_CODES | ORK_NPU_WENC_CLIP); /* dcomp only */
    o->int8_tensors = NULL;             /* every tensor is int8 now */
    return 0;
}
