/* test_twin_anchor_cpu.c -- the twin's CPU side against llama.cpp on 4 x A76 (anchors §5.4:
 * Qwen3-1.7B Q8_0 pp512 73 / tg128 11.4 tok/s, Q4_0 tg128 16.6), modelled from the shapes
 * alone with the default constants (nothing here is fitted; the matmuls are charged from the
 * kernels' cost table, tools/a76_cost.tsv). Prints the figures docs/twin.md quotes.
 * Tolerances, the prefill gap and the known Q4_0 miss are justified in docs/twin.md
 * "Anchors". */
#include "ork_test.h"

#include <ork/error.h>
#include <ork/twin.h>

/* Qwen3-1.7B: dim 2048, 28 layers, 16/8 heads of 128, ffn 6144, vocab 151936, tied
 * embeddings, QK-norm, no QKV bias; llama.cpp's default f16 KV cache. */
static struct ork_twin_llm qwen3_17b(enum ork_twin_wtype w, enum ork_twin_wtype out)
{
    return (struct ork_twin_llm){ .dim = 2048, .n_layers = 28, .n_heads = 16, .n_kv_heads = 8,
                                  .head_dim = 128, .ffn = 6144, .vocab = 151936, .qk_norm = true,
                                  .wtype = w, .out_wtype = out, .embd_wtype = out,
                                  .kv_el_bytes = 2 };
}

/* llama-bench tg128: 128 single-token steps from an empty cache, logits every step, no
 * sampler. Returns tok/s; *acc gets the totals. */
static double tg128(struct ork_twin *tw, const struct ork_twin_llm *m, struct ork_twin_result *acc)
{
    memset(acc, 0, sizeof(*acc));
    for (uint32_t pos = 0; pos < 128; pos++) {
        struct ork_twin_result r;
        ork_twin_step_begin(tw);
        if (ork_twin_cpu_forward(tw, m, 1, pos, 1, 4, -1) < 0 || ork_twin_step_run(tw, &r) < 0) {
            fprintf(stderr, "%s\n", ork_error_message());
            return 0;
        }
        ork_twin_result_accumulate(acc, &r, ork_twin_consts_of(tw));
    }
    return 128.0 / (acc->end_ns * 1e-9);
}

/* llama-bench pp512: one 512-token batch (n_ubatch 512), logits for the last token only. */
static double pp512(struct ork_twin *tw, const struct ork_twin_llm *m, struct ork_twin_result *r)
{
    ork_twin_step_begin(tw);
    if (ork_twin_cpu_forward(tw, m, 512, 0, 1, 4, -1) < 0 || ork_twin_step_run(tw, r) < 0) {
        fprintf(stderr, "%s\n", ork_error_message());
        return 0;
    }
    return 512.0 / (r->end_ns * 1e-9);
}

static void print_phases(const char *what, const struct ork_twin_result *r, double steps)
{
    printf("  %s: %.2f ms/step, DRAM %.1f MB/step (%.0f %% of the DRAM total), CPU busy %.1f %%\n",
           what, r->end_ns / 1e6 / steps, r->dram_bytes / 1e6 / steps, 100 * r->dram_util,
           100 * r->cpu_active_ns / r->end_ns);
    for (int p = 0; p < ORK_TWIN_PHASE_COUNT; p++)
        if (r->phase_ns[p] > 0)
            printf("    %-12s %9.3f ms/step\n", ork_twin_phase_name((enum ork_twin_phase)p),
                   r->phase_ns[p] / 1e6 / steps);
}

static struct ork_twin *tw;

/* Stated tolerance (docs/twin.md): +-15 % for the Q8_0 decode anchor. */
#define TOL_Q8 0.15
/* Prefill is a prediction for ork's own interleaved tiles (the cpu_mm_* constants from
 * tools/a76_cost.tsv), not a reproduction of llama.cpp's kernels (docs/twin.md "Anchors"): at
 * least llama.cpp's measured figure, and the gap guarded at this much either way (the table's
 * Neoverse N1 model and the magic-float tiles, docs/kernels.md "A76 cost table": +82 %). */
#define PP_KERNEL_GAP_MAX 1.0
/* The documented Q4_0 decode miss: the twin is faster than llama.cpp by at most this. */
#define TOL_Q4_MISS 0.35

static void test_q8_0_decode(void)
{
    struct ork_twin_llm m = qwen3_17b(ORK_TWIN_W_Q8_0, ORK_TWIN_W_Q8_0);
    struct ork_twin_result r;
    double tps = tg128(tw, &m, &r);
    printf("ANCHOR qwen3-1.7b Q8_0 tg128: twin %.2f tok/s, llama.cpp 11.4 (%+.1f %%)\n", tps,
           100 * (tps / 11.4 - 1));
    print_phases("tg128", &r, 128);
    CHECK(fabs(tps / 11.4 - 1) <= TOL_Q8);
}

static void test_q8_0_prefill(void)
{
    struct ork_twin_llm m = qwen3_17b(ORK_TWIN_W_Q8_0, ORK_TWIN_W_Q8_0);
    struct ork_twin_result r;
    double tps = pp512(tw, &m, &r);
    printf("ANCHOR qwen3-1.7b Q8_0 pp512: twin %.2f tok/s, llama.cpp 73 (%+.1f %%)\n", tps,
           100 * (tps / 73 - 1));
    print_phases("pp512", &r, 1);
    CHECK(tps / 73 - 1 >= 0 && tps / 73 - 1 <= PP_KERNEL_GAP_MAX);
}

static void test_q4_0_decode(void)
{
    /* llama-quantize stores a tied token_embd of a Q4_0 model as Q6_K (its output-tensor rule) */
    struct ork_twin_llm m = qwen3_17b(ORK_TWIN_W_Q4_0, ORK_TWIN_W_Q6_K);
    struct ork_twin_result r;
    double tps = tg128(tw, &m, &r);
    printf("ANCHOR qwen3-1.7b Q4_0 tg128: twin %.2f tok/s, llama.cpp 16.6 (%+.1f %%)\n", tps,
           100 * (tps / 16.6 - 1));
    print_phases("tg128", &r, 128);
    /* Known miss (docs/twin.md): the roofline max() lets the Q4_0 GEMV reach the DRAM bound;
     * llama.cpp's Q4_0 ran at ~17 GB/s effective. Guard the size of the miss both ways. */
    CHECK(tps / 16.6 - 1 >= 0 && tps / 16.6 - 1 <= TOL_Q4_MISS);
}

int main(void)
{
    if (ork_twin_create(NULL, &tw) < 0)
        return 1;
    RUN(test_q8_0_decode);
    RUN(test_q8_0_prefill);
    RUN(test_q4_0_decode);
    ork_twin_destroy(tw);
    return ork_test_done();
}
