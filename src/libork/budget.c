/* budget.c -- the core budget: a cost model of one matmul run per shape and core count, and the
 * pick of how many NPU cores a plan splits its columns over. ONE table of hardware cost
 * constants, each sourced from spec/performance-anchors.md. The simulator keeps its own timing
 * table (src/sim/sim_timing.c) for the same facts; libork never includes it.
 *
 * Model (anchors §8, per core c of `cores`, columns split evenly):
 *   t_core = t_launch + (programs_c - 1) * t_chain + W_bytes/cores / BW(cores)
 *            + macs/cores / R_mac
 *   BW(cores) = min(BW_core_max, BW_npu_total / cores)          (shared DRAM, anchors §1)
 *   t_run = t_core + (cores > 1 ? t_fanout + (cores - 1) * t_extra_submit : 0)
 * A split is taken only when it beats one core by more than the model's stated error.
 * Not here: the tiling (plan.c), running (matmul.c, sched.c). */
#include "ork_priv.h"

#include <ork/error.h>
#include <ork/sched.h>

/* Hardware and host cost constants (all ns or bytes/s). */
static const struct {
    double t_launch_ns, t_chain_ns, bw_core_max, bw_npu_total, mac_int8, mac_fp16;
    double t_fanout_ns, t_extra_submit_ns, split_margin;
    uint32_t n_slice_max, k_slice_m1;
} C = {
    /* Submit floor on the NPU side: launch + completion IRQ + waiter, intercept of the M-sweep
     * fit 52-56 µs (anchors §3.1, §8 `t_launch`). */
    .t_launch_ns = 55000.0,
    /* Each extra program in one PC-chained submit (anchors §2, §8 `t_chain`). */
    .t_chain_ns = 18000.0,
    /* Single-core int8 weight stream ~11 GB/s (anchors §1, §8 `BW_core_max`). */
    .bw_core_max = 11.0e9,
    /* All cores streaming share ~28.5 GB/s of DRAM (anchors §1, §8 `BW_npu_total`). */
    .bw_npu_total = 28.5e9,
    /* Effective MAC rates per core: int8 0.6 TMAC/s, fp16 half (anchors §8 `R_mac`). */
    .mac_int8 = 0.6e12,
    .mac_fp16 = 0.3e12,
    /* Waking the persistent per-core workers and joining them: the persistent-worker residual
     * ~50 µs per matmul (anchors §2 "Thread hand-off"). */
    .t_fanout_ns = 50000.0,
    /* Host cost of each extra per-core submit: the host gap of the anchors' 3-core M=1 point
     * less the fan-out above, shared by its 2 extra submits (anchors §8 validation, §3.3; the
     * arithmetic is in docs/scheduling.md "Core budget"). */
    .t_extra_submit_ns = 30000.0,
    /* Split only when the model predicts a gain above its error: the additive model fits the
     * anchors within ~10 % (anchors §8 "Known gaps"). */
    .split_margin = 0.10,
    /* Columns per program (spec §5.1: N <= 8192) and the M=1 K-slice width (spec §5.1). */
    .n_slice_max = ORK_PLAN_N_MAX,
    .k_slice_m1 = 8192,
};

/* Hardware tile multiples (spec §4.3/§4.4): K to 32, N to 16 (fp16 32), approximated as 32. */
#define PAD32(x) (((uint64_t)(x) + 31u) / 32u * 32u)

/* The model with `esz` weight bytes per weight (int8 1, fp16 2, W4A8 0.5: the int4 codes,
 * npu-weight-decompression.md §2 "half those of int8"). */
static double cost_ns(enum ork_npu_dtype dt, uint32_t m, uint32_t k, uint32_t n, uint32_t cores,
                      double esz)
{
    if (cores < 1)
        cores = 1;
    const uint64_t kp = PAD32(k), np = PAD32(n);
    const double w_bytes = (double)(kp * np) * esz;
    const double macs = (double)m * (double)kp * (double)np;
    /* programs per core: K-slices x N-slices of that core's columns (M-tiles ignored at the
     * small M the budget matters for; they scale every option alike) */
    const uint32_t kslices = (uint32_t)((kp + C.k_slice_m1 - 1) / C.k_slice_m1);
    const uint64_t cols = (np + cores - 1) / cores;
    const uint32_t nslices = (uint32_t)((cols + C.n_slice_max - 1) / C.n_slice_max);
    const uint32_t progs = kslices * (nslices ? nslices : 1);
    double bw = C.bw_npu_total / cores;
    if (bw > C.bw_core_max)
        bw = C.bw_core_max;
    const double mac = dt == ORK_NPU_I8 ? C.mac_int8 : C.mac_fp16;
    double t = C.t_launch_ns + (double)(progs - 1) * C.t_chain_ns;
    t += w_bytes / cores / bw * 1e9;
    t += macs / cores / mac * 1e9;
    if (cores > 1)
        t += C.t_fanout_ns + (double)(cores - 1) * C.t_extra_submit_ns;
    return t;
}

double ork_npu_cost_ns(enum ork_npu_dtype dt, uint32_t m, uint32_t k, uint32_t n, uint32_t cores)
{
    return cost_ns(dt, m, k, n, cores, dt == ORK_NPU_I8 ? 1.0 : 2.0);
}

static uint32_t budget_pick(enum ork_npu_dtype dt, uint32_t m, uint32_t k, uint32_t n,
                            uint32_t max_cores, double esz)
{
    if (max_cores > ORK_MM_MAX_CORES)
        max_cores = ORK_MM_MAX_CORES;
    /* >= 2 column tiles per core (spec §9) */
    const uint32_t tiles = (uint32_t)(PAD32(n) / 32u);
    if (max_cores > tiles / 2)
        max_cores = tiles / 2;
    uint32_t best = 1;
    double t1 = cost_ns(dt, m, k, n, 1, esz), tbest = t1;
    for (uint32_t c = 2; c <= max_cores; c++) {
        double t = cost_ns(dt, m, k, n, c, esz);
        if (t < tbest && t < t1 * (1.0 - C.split_margin)) {
            best = c;
            tbest = t;
        }
    }
    return best;
}

uint32_t ork_npu_budget_pick(enum ork_npu_dtype dt, uint32_t m, uint32_t k, uint32_t n,
                             uint32_t max_cores)
{
    return budget_pick(dt, m, k, n, max_cores, dt == ORK_NPU_I8 ? 1.0 : 2.0);
}

int ork_npu_set_core_budget(struct ork_npu *npu, uint32_t n)
{
    if (!npu)
        return ork_errorf(ORK_EINVAL, "npu core budget: NULL device");
    if (n > ORK_MM_MAX_CORES)
        return ork_errorf(ORK_ERANGE, "npu core budget: %u cores (0 = all, 1..%u)", n,
                          ORK_MM_MAX_CORES);
    npu->core_budget = n;
    return 0;
}

uint32_t ork_npu_core_budget(const struct ork_npu *npu)
{
    if (!npu)
        return 0;
    return npu->core_budget && npu->core_budget < npu->n_cores ? npu->core_budget
                                                                 : npu->n_cores;
}

uint32_t ork__budget_cores(struct ork_npu_matmul *mm, uint32_t requested)
{
    const uint32_t cap = ork_npu_core_budget(mm->npu);
    if (requested == 0)   /* W4A8 streams half the bytes (the int4 codes; 2 rows a token) */
        return ork__weights_w4a8(mm->w)
                   ? budget_pick(mm->w->dtype, 2 * mm->m, mm->w->k, mm->w->n, cap, 0.5)
                   : ork_npu_budget_pick(mm->w->dtype, mm->m, mm->w->k, mm->w->n, cap);
    return requested < cap ? requested : cap;
}
