/* test_moe_experts.c -- the Qwen3-30B-A3B shape (synth preset qwen3moe 30b-a3b: 128 experts of
 * 768, 8 used, dim 2048; one layer, a 512-row vocabulary, Q4_0) reads only what routing picks:
 *   - a decoded token reads exactly 8 experts' gate, up and down matrices per layer;
 *   - a prefill batch reads each expert it uses once (a multiple of one expert's bytes, at most
 *     all 128), not once per token.
 * The file is ~350 MB; the test is skipped under the sanitizers (minutes there). */
#include "ork_test.h"

#include <ork/error.h>
#include <ork-engine/engine.h>
#include <ork-kernels/types.h>
#include <ork-tooling/synth.h>

#include <unistd.h>

#define N_PREFILL 64
#define N_DECODE 4

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_SANITIZER 1
#endif
#endif

static char g_path[256];

static void test_expert_bytes(void)
{
    const struct ork_synth_preset *ps = ork_synth_preset_find("qwen3moe", "30b-a3b");
    REQUIRE(ps);
    struct ork_synth_params sp;
    ork_synth_params_default(&sp);
    sp.arch = "qwen3moe";
    sp.preset = "30b-a3b";
    sp.type = ORK_TYPE_Q4_0;
    sp.n_layers = 1;
    sp.n_vocab = 512;
    sp.n_threads = 2;
    sp.out_path = g_path;
    REQUIRE(ork_synth_write(&sp, NULL) == 0);
    struct ork_model_params mp;
    ork_model_params_default(&mp);
    mp.no_tokenizer = true;
    struct ork_model *m = NULL;
    REQUIRE(ork_model_load(g_path, &mp, &m) == 0);
    const struct ork_model_config *c = ork_model_config(m);
    CHECK_EQ_INT(c->n_expert, 128);
    CHECK_EQ_INT(c->n_expert_used, 8);
    CHECK_EQ_INT(c->expert_ffn_dim, 768);
    uint64_t per_expert = 2 * (uint64_t)c->expert_ffn_dim * ork_type_row_bytes(ORK_TYPE_Q4_0, 2048) +
                          (uint64_t)c->dim * ork_type_row_bytes(ORK_TYPE_Q4_0, 768);
    struct ork_session_params ssp;
    ork_session_params_default(&ssp);
    ssp.ctx_size = 128;
    ssp.n_threads = 2;
    struct ork_session *s = NULL;
    REQUIRE(ork_session_create(m, &ssp, &s) == 0);
    int32_t toks[N_PREFILL];
    for (int i = 0; i < N_PREFILL; i++)
        toks[i] = (int32_t)((i * 37 + 11) % c->n_vocab);
    static float logits[512];
    REQUIRE(ork_model_eval(s, toks, N_PREFILL, 0, logits, 0) == 0);
    uint64_t pre = ork_session_expert_bytes(s);
    printf("  prefill of %d tokens: %llu expert bytes = %llu experts of %llu (one read each)\n",
           N_PREFILL, (unsigned long long)pre, (unsigned long long)(pre / per_expert),
           (unsigned long long)per_expert);
    CHECK_EQ_INT(pre % per_expert, 0);
    CHECK(pre / per_expert >= (uint64_t)c->n_expert_used && pre / per_expert <= 128);
    for (int i = 0; i < N_DECODE; i++) {
        uint64_t b0 = ork_session_expert_bytes(s);
        int32_t id = toks[i];
        REQUIRE(ork_model_eval(s, &id, 1, N_PREFILL + i, logits, 0) == 0);
        uint64_t d = ork_session_expert_bytes(s) - b0;
        CHECK(d == (uint64_t)c->n_layers * (uint64_t)c->n_expert_used * per_expert);
        if (i == 0)
            printf("  decode: %llu expert bytes per token per layer (8 of 128 experts: %.2f %% "
                   "of the layer's %llu); x48 layers = %.1f MB per token\n",
                   (unsigned long long)d, 100.0 * (double)d / (128.0 * (double)per_expert),
                   (unsigned long long)(128 * per_expert), 48.0 * (double)d / 1e6);
    }
    ork_session_free(s);
    ork_model_free(m);
}

int main(void)
{
#ifdef UNDER_SANITIZER
    SKIP("a 350 MB synthetic model: skipped under the sanitizers");
#endif
    snprintf(g_path, sizeof g_path, "/tmp/ork-test-moe-%d.gguf", (int)getpid());
    RUN(test_expert_bytes);
    unlink(g_path);
    return ork_test_done();
}
