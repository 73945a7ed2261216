/* tools/twin_repro.c -- research probe, not libork API: print the twin's reproductions of the
 * seed's published experiments (src/twin/twin_repro.c) next to the published figures (anchors
 * §3.6, §4, §5; docs/twin.md "Reproductions"). Usage: twin_repro [CALIBRATION.json] */
#include <ork/error.h>
#include <ork/twin.h>

#include <stdio.h>

#include "twin/twin_repro.h"

/* Published (anchors §4 async-probe table; 1.9 is the decode operating point, 1.22-1.28
 * interpolated in the source) */
static const double async_ratio[] = { 0.27, 0.61, 1.36, 1.9, 2.37 };
static const double async_pub[] = { 1.25, 1.36, 1.28, 1.22, 1.22 };
#define ASYNC_LAYERS 4          /* 28 matmuls: the pipeline's ends are < 4 % of the run */
#define DECODE_N_PAST 128       /* context of the published decode runs: not stated; 128 keys */

int main(int argc, char **argv)
{
    struct ork_twin_consts c;
    ork_twin_consts_default(&c);
    if (argc > 1 && ork_twin_calib_load(argv[1], &c) < 0) {
        fprintf(stderr, "twin_repro: %s\n", ork_error_message());
        return 1;
    }
    printf("(a) async-overlap probe, 7B layer x %d, M=1, 3-core N-split, persistent worker\n",
           ASYNC_LAYERS);
    printf("  ratio  sync ms  async ms  twin   published  ceiling\n");
    for (size_t i = 0; i < sizeof async_ratio / sizeof async_ratio[0]; i++) {
        struct ork__twin_repro_async a;
        if (ork__twin_repro_async_probe(&c, async_ratio[i], ASYNC_LAYERS, &a) < 0) {
            fprintf(stderr, "twin_repro: %s\n", ork_error_message());
            return 1;
        }
        printf("  %5.2f  %7.2f  %8.2f  %.3fx %.2fx      %.3fx\n", async_ratio[i], a.sync_ms,
               a.async_ms, a.speedup, async_pub[i], a.ceiling);
    }
    printf("(b) 7B Q8_0 decode, one submit per matmul, synchronous, %g us host floor per submit\n",
           c.host_submit_floor_ns / 1e3);
    struct ork__twin_repro_decode d1, d3, r3;
    if (ork__twin_repro_decode_7b(&c, 1, DECODE_N_PAST, 0, &d1) < 0 ||
        ork__twin_repro_decode_7b(&c, 3, DECODE_N_PAST, 0, &d3) < 0) {
        fprintf(stderr, "twin_repro: %s\n", ork_error_message());
        return 1;
    }
    const double pub1 = 0.92, pub3 = 1.49;
    for (int k = 0; k < 2; k++) {
        const struct ork__twin_repro_decode *d = k ? &d3 : &d1;
        printf("  %d core(s): %.3f tok/s (published %.2f, %+.0f %%): %.1f ms/token = NPU active "
               "%.1f + floors %.1f (%u submits) + CPU phases %.2f ms\n", k ? 3 : 1, d->tok_s,
               k ? pub3 : pub1, (d->tok_s / (k ? pub3 : pub1) - 1) * 100, d->ms_per_token,
               d->npu_active_ms, d->floor_ms, d->submits, d->cpu_phases_ms);
    }
    double resid = 1e9 / pub1 - d1.ms_per_token * 1e6;
    if (ork__twin_repro_decode_7b(&c, 3, DECODE_N_PAST, resid, &r3) < 0)
        return 1;
    printf("  1-core figure implies %.0f ms/token of CPU work the twin does not count; with it "
           "3 cores: %.3f tok/s (published %.2f, %+.1f %%), NPU busy %.0f %%\n", resid / 1e6,
           r3.tok_s, pub3, (r3.tok_s / pub3 - 1) * 100, r3.npu_active_ms / r3.ms_per_token * 100);
    printf("(c) rkllm plausibility (w8a8 on the NPU): the twin's ceilings\n");
    struct ork__twin_repro_ceiling q7, q17;
    ork__twin_repro_ceiling(&c, ORK__REPRO_QWEN25_7B, &q7);
    ork__twin_repro_ceiling(&c, ORK__REPRO_QWEN3_1_7B, &q17);
    printf("  Qwen2.5-7B decode: rkllm 4.09 tok/s; ceiling %.2f (npu_bw_all) / %.2f (dram_bw_total)"
           " tok/s; rkllm implies %.1f GB/s over %.2f GB\n", q7.decode_tok_s_npu,
           q7.decode_tok_s_dram, 4.09 * q7.weight_bytes / 1e9, q7.weight_bytes / 1e9);
    printf("  Qwen3-1.7B decode: rkllm 11.71 tok/s; ceiling %.2f / %.2f tok/s (%.0f %% of the "
           "NPU ceiling)\n", q17.decode_tok_s_npu, q17.decode_tok_s_dram,
           11.71 / q17.decode_tok_s_npu * 100);
    printf("  Qwen3-1.7B prefill: rkllm 184 tok/s; MAC ceiling %.0f tok/s (%.0f %%)\n",
           q17.prefill_tok_s, 184 / q17.prefill_tok_s * 100);
    return 0;
}
