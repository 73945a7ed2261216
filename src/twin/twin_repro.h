/* twin_repro.h -- the seed's published experiments rebuilt on the twin timeline (docs/twin.md
 * "Reproductions"), for tools/twin_repro.c and tests/twin/test_twin_repro.c. Internal: not part
 * of ork/twin.h. Shapes are Qwen2.5-7B's and Qwen3-1.7B's (anchors §4, §5). */
#ifndef ORK_TWIN_REPRO_H
#define ORK_TWIN_REPRO_H

#include <ork/twin.h>

/* (b) 7B Q8_0 decode, one submit per matmul, synchronous: each projection pays the open
 * runtime's host_submit_floor_ns on the driving A76 core, then runs on `npu_cores` (N-split),
 * then the CPU phases of the layer on that one core; context `n_past` keys; `extra_cpu_ns` is
 * added once per token on the driving core (0 for the counted model). */
struct ork__twin_repro_decode {
    double ms_per_token, tok_s;
    double npu_active_ms, cpu_active_ms;  /* time with >= 1 NPU (CPU) op running */
    double floor_ms, cpu_phases_ms;       /* host floors; counted CPU phases (no floors) */
    double weight_bytes;
    uint32_t submits;
};
int ork__twin_repro_decode_7b(const struct ork_twin_consts *c, uint32_t npu_cores,
                              uint32_t n_past, double extra_cpu_ns,
                              struct ork__twin_repro_decode *out);

/* (a) the async-overlap probe: a 7B layer's 7 projections (x `layers`), M=1, 3-core N-split,
 * CPU prep (RMSNorm + int8 quantisation of the matmul's input, repeated to reach `ratio` =
 * prep time / NPU call time of the synchronous run) before each matmul; synchronous vs a
 * persistent worker pinned on a second A76 core (two sleeping-thread wakes per matmul). */
struct ork__twin_repro_async {
    double sync_ms, async_ms, speedup, ceiling;   /* ceiling = (1 + r) / max(1, r) */
    double prep_ms, call_ms;                      /* sums over the matmuls (sync run) */
};
int ork__twin_repro_async_probe(const struct ork_twin_consts *c, double ratio, uint32_t layers,
                                struct ork__twin_repro_async *out);

/* (c) the twin's ceilings for w8a8 on the NPU: decode streams every int8 weight once per token
 * at npu_bw_all (and, the absolute bound, dram_bw_total); prefill does every MAC at 3 cores x
 * npu_mac_int8 (LM head excluded: one row per prompt). */
struct ork__twin_repro_ceiling {
    double weight_bytes, macs_per_token;
    double decode_tok_s_npu, decode_tok_s_dram, prefill_tok_s;
};
enum ork__twin_repro_model { ORK__REPRO_QWEN25_7B, ORK__REPRO_QWEN3_1_7B };
void ork__twin_repro_ceiling(const struct ork_twin_consts *c, enum ork__twin_repro_model m,
                             struct ork__twin_repro_ceiling *out);

#endif
