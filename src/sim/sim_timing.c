/* sim_timing.c -- the simulator's timing model: the per-task formula of anchors §8 "Proposed
 * calibration" on the NPU constants of the twin's one table (include/ork/twin.h; every value's
 * source is listed there and in docs/twin.md "Constants"):
 *
 *   t_program = t_launch + t_w + M*K*N / R_mac + t_out,   t_out = M*N*osz / BW_core
 *   t_w = W_bytes / BW_core (raw weights), or for a DCOMP task (npu-weight-decompression.md)
 *   t_w = max(stream_bytes / BW_core, K*N / R_dcomp): the stream crosses DRAM, the core's
 *   decompressor outputs the int8 block at R_dcomp (npu_dcomp_gbps, a guess, §5 (a));
 *   tasks 2..T of a core's chained range pay t_chain instead of t_launch;
 *   BW_core = min(BW_core_max, BW_npu_total / streaming_cores).
 *
 * An int4 task (W4A8, npu-weight-decompression.md §2) reads its K*N/2 weight bytes and M*K/2
 * feature bytes and writes M*N*2 bytes of int16; its int4 MACs are charged at the int8 rate
 * R_mac: no int4 MAC rate is published (a stated assumption; the §2 source measures none, and
 * a faster int4 array would only shorten the MAC term).
 *
 * The model is additive (no overlap of weight streaming and MACs), which the anchors fit within
 * ~10 % once host work is excluded (§8 "Known gaps"). Host-side costs (program build, MEM_SYNC,
 * copies, thread hand-off; the 167 µs open-runtime floor of §2) are NOT modelled here: they are
 * the caller's own real time. A device fixes its table at create (ork_sim_opts.twin); only the
 * walker (sim_submit.c), the domain switch and the load window read it. */
#include <ork/twin.h>

#include "sim.h"
#include "sim_exec.h"
#include "sim_priv.h"

/* RKNPU_LOAD_INTERVAL = 1 s (spec §12.1, anchors §2 "debugfs load window"): a driver constant,
 * not a board timing, so it stays here. */
#define SIM_LOAD_WINDOW_NS 1.0e9

void ork__sim_timing_from_twin(const struct ork_twin_consts *c, struct ork_sim_timing_table *T)
{
    struct ork_twin_consts def;
    if (!c) {
        ork_twin_consts_default(&def);
        c = &def;
    }
    T->t_launch_ns = c->npu_launch_ns;
    T->t_chain_ns = c->npu_chain_ns;
    T->bw_core_max = c->npu_bw_core;
    T->bw_npu_total = c->npu_bw_all;
    T->dcomp_bps = c->npu_dcomp_gbps * 1e9;
    T->mac_int8 = c->npu_mac_int8;
    T->mac_fp16 = c->npu_mac_fp16;
    T->ref_freq_mhz = ORK_TWIN_NPU_REF_FREQ_MHZ;
    T->t_domain_switch_ns = c->npu_domain_switch_ns;
    /* A LUT-load streams ~1100 register writes and no memory (spec §7); unmeasured: charge one
     * chained-program dispatch [INF], so it follows a calibrated npu_chain_ns. */
    T->t_lut_load_ns = c->npu_chain_ns;
    T->load_window_ns = SIM_LOAD_WINDOW_NS;
}

const struct ork_sim_timing_table *ork__sim_timing_of(const struct ork_sim *sim)
{
    return &sim->timing;
}

double ork__sim_task_time_ns(const struct ork_sim_timing_table *T, const struct ork_sim_stats *st,
                             bool first, int streaming_cores, uint32_t freq_mhz)
{
    double t = first ? T->t_launch_ns : T->t_chain_ns;
    if (st->op == ORK_SIM_OP_LUT_LOAD)
        return t + T->t_lut_load_ns;
    if (streaming_cores < 1)
        streaming_cores = 1;
    double bw = T->bw_npu_total / streaming_cores;
    if (bw > T->bw_core_max)
        bw = T->bw_core_max;
    double f = freq_mhz ? (double)freq_mhz : T->ref_freq_mhz;
    /* int8 and int4 (no published int4 rate, see above) at mac_int8 */
    double mac = (st->in_prec == ORK_SIM_PREC_FP16 ? T->mac_fp16 : T->mac_int8) *
                 (f / T->ref_freq_mhz);
    double tw = (double)st->b_bytes / bw * 1e9;
    if (st->dcomp_bytes) {      /* the decompressor runs on the NPU clock, as the MACs [INF] */
        double td = (double)st->dcomp_bytes / (T->dcomp_bps * (f / T->ref_freq_mhz)) * 1e9;
        tw = td > tw ? td : tw;
    }
    t += tw;
    t += (double)st->macs / mac * 1e9;
    t += (double)st->c_bytes / bw * 1e9;
    return t;
}
