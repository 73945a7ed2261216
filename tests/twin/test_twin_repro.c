/* test_twin_repro.c -- the seed's published experiments on the twin timeline (src/twin/
 * twin_repro.c) against the published figures, with the tolerances docs/twin.md
 * "Reproductions" states and justifies:
 *   (a) async-overlap probe (anchors §4): each ratio within ±12 % of the published speedup and
 *       never above the sum->max ceiling;
 *   (b) 7B per-matmul synchronous decode (anchors §3.6, §4): the counted model is a known miss
 *       (it does not have the ~0.38 s/token of CPU work the 1-core figure implies), bounded so
 *       a change is noticed; with that residual taken from the 1-core figure, the 3-core figure
 *       within ±10 %;
 *   (c) rkllm (anchors §5): plausibility only -- below the twin's ceilings. */
#include <ork/twin.h>

#include <stdio.h>

#include "ork_test.h"
#include "twin/twin_repro.h"

#define ASYNC_TOL 0.12
#define DECODE_RESIDUAL_TOL 0.10

static struct ork_twin_consts C;

static void test_async_probe(void)
{
    static const double ratio[] = { 0.27, 0.61, 1.36, 1.9, 2.37 };
    static const double pub[] = { 1.25, 1.36, 1.28, 1.22, 1.22 };
    for (size_t i = 0; i < sizeof ratio / sizeof ratio[0]; i++) {
        struct ork__twin_repro_async a;
        REQUIRE(ork__twin_repro_async_probe(&C, ratio[i], 4, &a) == 0);
        printf("  ratio %.2f: twin %.3fx published %.2fx (%+.1f %%), ceiling %.3fx\n", ratio[i],
               a.speedup, pub[i], (a.speedup / pub[i] - 1) * 100, a.ceiling);
        CHECK(a.speedup > 1 && a.speedup <= a.ceiling + 1e-9);
        CHECK(a.speedup >= pub[i] * (1 - ASYNC_TOL) && a.speedup <= pub[i] * (1 + ASYNC_TOL));
        CHECK_NEAR(a.prep_ms / a.call_ms, ratio[i], 1e-9);
    }
}

static void test_decode_7b(void)
{
    struct ork__twin_repro_decode d1, d3, r3;
    REQUIRE(ork__twin_repro_decode_7b(&C, 1, 128, 0, &d1) == 0);
    REQUIRE(ork__twin_repro_decode_7b(&C, 3, 128, 0, &d3) == 0);
    printf("  counted: 1 core %.3f tok/s (published 0.92), 3 cores %.3f (published 1.49)\n",
           d1.tok_s, d3.tok_s);
    CHECK_EQ_INT((int)d1.submits, 28 * 7 + 1);
    CHECK_NEAR(d1.weight_bytes / 1e9, 7.07, 0.01);            /* anchors §8: 7.1 GB */
    /* known miss: the counted model is faster; bounded 1.3-1.8x (1 core), 1.9-2.6x (3 cores) */
    CHECK(d1.tok_s / 0.92 > 1.3 && d1.tok_s / 0.92 < 1.8);
    CHECK(d3.tok_s / 1.49 > 1.9 && d3.tok_s / 1.49 < 2.6);
    double resid = 1e9 / 0.92 - d1.ms_per_token * 1e6;
    REQUIRE(ork__twin_repro_decode_7b(&C, 3, 128, resid, &r3) == 0);
    printf("  with the implied %.0f ms/token residual: 3 cores %.3f tok/s (%+.1f %%)\n",
           resid / 1e6, r3.tok_s, (r3.tok_s / 1.49 - 1) * 100);
    CHECK(r3.tok_s >= 1.49 * (1 - DECODE_RESIDUAL_TOL) &&
          r3.tok_s <= 1.49 * (1 + DECODE_RESIDUAL_TOL));
}

static void test_rkllm_plausible(void)
{
    struct ork__twin_repro_ceiling q7, q17;
    ork__twin_repro_ceiling(&C, ORK__REPRO_QWEN25_7B, &q7);
    ork__twin_repro_ceiling(&C, ORK__REPRO_QWEN3_1_7B, &q17);
    printf("  7B tg: rkllm 4.09 vs ceiling %.2f/%.2f; 1.7B tg 11.71 vs %.2f; pp 184 vs %.0f\n",
           q7.decode_tok_s_npu, q7.decode_tok_s_dram, q17.decode_tok_s_npu, q17.prefill_tok_s);
    CHECK(4.09 <= q7.decode_tok_s_dram && 4.09 >= 0.9 * q7.decode_tok_s_npu);
    CHECK(11.71 <= q17.decode_tok_s_npu);
    CHECK(184 <= q17.prefill_tok_s);
}

int main(void)
{
    ork_twin_consts_default(&C);
    RUN(test_async_probe);
    RUN(test_decode_7b);
    RUN(test_rkllm_plausible);
    return ork_test_done();
}
