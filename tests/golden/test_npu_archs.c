/* test_npu_archs.c -- the NPU path (w8a8 matmuls on the simulator, everything else on the CPU)
 * against the CPU path for gemma2, gemma3, phi3, llama with rope_freqs and qwen3moe (first
 * variants, their Q8_0 copies and the -v2 files), as test_npu_accuracy.c does for llama/qwen3:
 *   - teacher-forced greedy agreement over 48 steps of the CPU's continuation >= 90 %;
 *   - perplexity on vectors/ppl_text.txt (context 64, 8 chunks) within 3 % of the CPU's;
 *   - which matrices the NPU holds: every layer-plan matrix (phi3's fused attn_qkv and ffn_up
 *     as their row views), and for qwen3moe the attention only (the experts stay on the CPU);
 *   - qwen3moe decode reads only the selected experts: expert bytes per token = layers x k
 *     experts x their three matrices. */
#include "golden_model.h"
#include "ork_test.h"

#include <ork/error.h>
#include <ork-engine/engine.h>

#include <math.h>

#define N_STEPS 48
#define MIN_AGREE 0.90
#define PPL_TOL 0.03
#define PPL_CTX 64
#define PPL_CHUNKS 8
#define N_PROMPT 5
#define MATS_PER_LAYER 7        /* q, k, v, o, gate, up, down */

static const int32_t prompt[N_PROMPT] = { 1, 403, 407, 261, 378 };     /* fixtures README */

static void check_model(const char *file)
{
    char rel[256], path[4096];
    snprintf(rel, sizeof rel, "models/%s", file);
    snprintf(path, sizeof path, "%s", ork_test_fixture(rel));
    struct ork_model *cpu = golden_load_device(path, "cpu", 0, 0, 0);
    struct ork_model *npu = golden_load_device(path, "sim", 0, 0, 0);
    REQUIRE(cpu && npu);
    const struct ork_model_config *c = ork_model_config(cpu);
    int nv = c->n_vocab, n = N_PROMPT + N_STEPS;
    int32_t ids[N_PROMPT + N_STEPS];
    memcpy(ids, prompt, sizeof prompt);
    float *lc = malloc((size_t)n * nv * sizeof(float)), *ln = malloc((size_t)n * nv * sizeof(float));
    REQUIRE(lc && ln);
    struct ork_session *s = golden_session(cpu, 128);
    REQUIRE(s);
    REQUIRE(ork_model_eval(s, ids, N_PROMPT, 0, lc, 0) == 0);
    for (int i = N_PROMPT; i < n; i++) {
        ids[i] = golden_argmax(lc, nv);
        if (i + 1 < n)
            REQUIRE(ork_model_eval(s, &ids[i], 1, i, lc, 0) == 0);
    }
    ork_session_free(s);

    uint64_t eb_cpu = 0, eb_npu = 0;
    REQUIRE(golden_eval_all(cpu, ids, n - 1, lc, nv, &eb_cpu) == 0);
    REQUIRE(golden_eval_all(npu, ids, n - 1, ln, nv, &eb_npu) == 0);
    int agree = 0;
    for (int i = N_PROMPT - 1; i < n - 1; i++)
        agree += golden_argmax(lc + (size_t)i * nv, nv) ==
                 golden_argmax(ln + (size_t)i * nv, nv);

    struct ork_npu_exec_stats st;
    REQUIRE(ork_model_npu_stats(npu, &st) == 0);
    int want_mats = c->n_layers * (c->n_expert > 0 ? 4 : MATS_PER_LAYER) + 1;
    CHECK_EQ_INT(st.n_npu_mats, want_mats);
    if (c->n_expert > 0) {
        /* per decoded token: k experts per layer, gate + up (expert_ffn x dim) and down (dim x
         * expert_ffn) at the file's types; ffn_down_exps is F16 in the Q8_0 copy */
        CHECK(eb_cpu > 0 && eb_cpu == eb_npu);
        CHECK_EQ_INT(eb_cpu % (uint64_t)((n - 1) * c->n_layers * c->n_expert_used), 0);
        if (!strstr(file, "Q8_0"))     /* F32: 3 matrices of expert_ffn x dim floats */
            CHECK(eb_cpu == (uint64_t)(n - 1) * (uint64_t)c->n_layers * (uint64_t)c->n_expert_used *
                                3u * (uint64_t)c->expert_ffn_dim * (uint64_t)c->dim * sizeof(float));
        printf("  %s: %.0f expert bytes per token (%d of %d experts, %d layers)\n", file,
               (double)eb_cpu / (n - 1), c->n_expert_used, c->n_expert, c->n_layers);
    }

    char ppl_path[4096];
    snprintf(ppl_path, sizeof ppl_path, "%s", ork_test_fixture("vectors/ppl_text.txt"));
    FILE *f = fopen(ppl_path, "rb");
    REQUIRE(f);
    static char text[65536];
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[len] = 0;
    static int32_t toks[16384];
    size_t n_tok = 0;
    REQUIRE(ork_tokenize(ork_model_tokenizer(cpu), text, len, true, false, toks,
                         sizeof toks / sizeof toks[0], &n_tok) == 0);
    double pc = golden_perplexity(cpu, toks, (int)n_tok, PPL_CTX, PPL_CHUNKS);
    double pn = golden_perplexity(npu, toks, (int)n_tok, PPL_CTX, PPL_CHUNKS);
    printf("  %s: %d / %d teacher-forced steps agree; perplexity cpu %.4f, sim %.4f (%+.2f %%)\n",
           file, agree, N_STEPS, pc, pn, 100.0 * (pn - pc) / pc);
    CHECK(agree >= (int)(MIN_AGREE * N_STEPS + 0.999));
    CHECK(pc > 0 && pn > 0);
    CHECK(fabs(pn - pc) <= PPL_TOL * pc);
    free(lc);
    free(ln);
    ork_model_free(npu);
    ork_model_free(cpu);
}

static void test_archs(void)
{
    static const char *const archs[] = { "gemma2", "gemma3", "phi3", "llama3rope", "qwen3moe" };
    static const char *const kinds[] = { "", "-Q8_0", "-v2" };
    for (size_t a = 0; a < sizeof archs / sizeof archs[0]; a++)
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
            char file[128];
            snprintf(file, sizeof file, "stories260K-%s%s.gguf", archs[a], kinds[k]);
            check_model(file);
        }
}

int main(void)
{
    ork_test_fixture("models/stories260K-phi3.gguf");     /* skips when absent */
    RUN(test_archs);
    return ork_test_done();
}
