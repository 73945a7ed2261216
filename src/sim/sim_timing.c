/* sim_timing.c -- the simulator's timing model: ONE table of constants, each derived from
 * spec/performance-anchors.md, and the per-task formula of its §8 "Proposed calibration":
 *
 *   t_program = t_launch + W_bytes / BW_core + M*K*N / R_mac + t_out,   t_out = M*N*osz / BW_core
 *   tasks 2..T of a core's chained range pay t_chain instead of t_launch;
 *   BW_core = min(BW_core_max, BW_npu_total / streaming_cores).
 *
 * The model is additive (no overlap of weight streaming and MACs), which the anchors fit within
 * ~10 % once host work is excluded (§8 "Known gaps"). Host-side costs (program build, MEM_SYNC,
 * copies, thread hand-off; the 167 µs open-runtime floor of §2) are NOT modelled here: they are
 * the caller's own real time. Only the walker (sim_submit.c) calls this. */
#include "sim.h"
#include "sim_exec.h"

const struct ork_sim_timing_table ork__sim_timing = {
    /* Intercept of the M-sweep fit, 52-56 µs (anchors §3.1, §8 `t_launch`). */
    .t_launch_ns = 55000.0,
    /* ~18 µs per extra program in one PC-chained submit (anchors §2 "Chained program dispatch",
     * §8 `t_chain`). */
    .t_chain_ns = 18000.0,
    /* ~11 GB/s single-core int8 weight stream (anchors §1, §8 `BW_core_max`; how the other
     * anchor figures bracket it: docs/sim.md "Timing model"). */
    .bw_core_max = 11.0e9,
    /* 28.5 GB/s with all cores streaming (anchors §1 int8 3-core figure, §8 `BW_npu_total`). */
    .bw_npu_total = 28.5e9,
    /* 0.6 TMAC/s per core effective int8 (anchors §8 `R_mac` int8: slope of the §3.1 M sweep
     * and the §3.2 M-tile delta). */
    .mac_int8 = 0.6e12,
    /* 0.3 TMAC/s per core fp16: half of int8 by the 1024:512 peak MAC ratio (anchors §8,
     * inferred; not measured directly). */
    .mac_fp16 = 0.3e12,
    /* The MAC rates were measured at the vendor kernel's 1 GHz (anchors §8 "NPU clock"). */
    .ref_freq_mhz = 1000.0,
    /* Not measured (anchors §8 "Known gaps"): half of the per-op multi-domain overhead of
     * anchors §2, §8 is charged to the switch itself [INF] (docs/sim.md "Timing model"). */
    .t_domain_switch_ns = 100000.0,
    /* A LUT-load streams ~1100 register writes and no memory (spec §7); unmeasured: charge one
     * chained-program dispatch [INF]. */
    .t_lut_load_ns = 18000.0,
    /* RKNPU_LOAD_INTERVAL = 1 s (spec §12.1, anchors §2 "debugfs load window"). */
    .load_window_ns = 1.0e9,
};

double ork__sim_task_time_ns(const struct ork_sim_stats *st, bool first, int streaming_cores,
                             uint32_t freq_mhz)
{
    const struct ork_sim_timing_table *T = &ork__sim_timing;
    double t = first ? T->t_launch_ns : T->t_chain_ns;
    if (st->op == ORK_SIM_OP_LUT_LOAD)
        return t + T->t_lut_load_ns;
    if (streaming_cores < 1)
        streaming_cores = 1;
    double bw = T->bw_npu_total / streaming_cores;
    if (bw > T->bw_core_max)
        bw = T->bw_core_max;
    double f = freq_mhz ? (double)freq_mhz : T->ref_freq_mhz;
    double mac = (st->in_prec == ORK_SIM_PREC_FP16 ? T->mac_fp16 : T->mac_int8) *
                 (f / T->ref_freq_mhz);
    t += (double)st->b_bytes / bw * 1e9;
    t += (double)st->macs / mac * 1e9;
    t += (double)st->c_bytes / bw * 1e9;
    return t;
}
