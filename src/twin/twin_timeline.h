/* twin_timeline.h -- the timeline's internal state, shared by twin_timeline.c (ops and the
 * event simulation) and twin_trace.c (trace writer and totals). Not installed. */
#ifndef ORK_TWIN_TIMELINE_H
#define ORK_TWIN_TIMELINE_H

#include "twin_priv.h"

struct ork__twin_op {
    struct ork_twin_op_desc d;      /* as added; core_mask clipped, n_cores >= 1 */
    uint32_t dep_off, n_deps;       /* its dependencies: tw->deps[dep_off ..] */
    uint32_t succ_off, n_succ;      /* ops waiting on it: tw->succ[succ_off ..] (built per run) */
    uint32_t pending;               /* dependencies not yet done */
    uint32_t taken;                 /* cores it holds while running */
    uint8_t state, stage;
    /* what the run uses (set per run from d: the spin reference may pick d.spin's cold work,
     * spins held may lower a k-core op's cores) */
    struct ork_twin_work w;
    uint32_t k, flags;
    enum ork_twin_phase phase;
    bool handed;                    /* a released spin: its core went to the releasing op */
    uint32_t given;                 /* a release: the cores it takes over from its spin */
    double fixed_ns;                /* work.fixed_ns + the k-core barrier */
    double rem, len;                /* left / initial amount of the current stage */
    double rate;                    /* DRAM share while streaming, B/ns */
    double start, end;              /* model clock, ns */
};

struct ork_twin {
    struct ork_twin_consts c;
    struct ork__twin_op *ops;
    uint32_t n_ops, cap_ops;
    int *deps;
    uint32_t n_deps, cap_deps;
    uint32_t *succ, cap_succ;
    uint32_t *ready, cap_ready;
    bool ran;                       /* ops hold the times of a completed run */
};

#endif
