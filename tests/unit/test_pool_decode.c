/* test_pool_decode.c -- decoding tokens with a multi-threaded session creates no thread and
 * allocates nothing per token: the session's pool is created once, and prefill and every decode
 * step only run jobs on it (counted with ork_pool_threads_created and ork_alloc_count). Uses the
 * stories260K fixture in its F32 and Q8_0 forms (skips without fixtures). */
#include <stdint.h>
#include <string.h>

#include <ork/alloc.h>
#include <ork-engine/engine.h>
#include <ork-kernels/pool.h>

#include "ork_test.h"

#define N_PROMPT 8
#define N_DECODE 24

static void check_model(const char *rel, bool act_quant)
{
    const char *path = ork_test_fixture_opt(rel);
    if (!path)
        return;
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    struct ork_model *m = NULL;
    REQUIRE(ork_model_load(buf, NULL, &m) == 0);
    struct ork_session_params sp;
    ork_session_params_default(&sp);
    sp.ctx_size = 64;
    sp.n_threads = 2;
    sp.act_quant = act_quant;
    struct ork_session *s = NULL;
    uint64_t before_session = ork_pool_threads_created();
    REQUIRE(ork_session_create(m, &sp, &s) == 0);
    CHECK(ork_pool_threads_created() - before_session <= 1);    /* the pool's one worker */
    int32_t n_vocab = ork_model_config(m)->n_vocab;
    float *logits = ork_malloc(sizeof(float) * (size_t)n_vocab);
    REQUIRE(logits);
    int32_t toks[N_PROMPT];
    for (int i = 0; i < N_PROMPT; i++)
        toks[i] = 1 + (i * 37) % (n_vocab - 1);
    uint64_t threads0 = ork_pool_threads_created();
    REQUIRE(ork_model_eval(s, toks, N_PROMPT, 0, logits, 0) == 0);
    uint64_t allocs0 = ork_alloc_count();
    int32_t tok = toks[N_PROMPT - 1];
    for (int i = 0; i < N_DECODE; i++) {
        REQUIRE(ork_model_eval(s, &tok, 1, N_PROMPT + i, logits, 0) == 0);
        int32_t best = 0;
        for (int32_t v = 1; v < n_vocab; v++)
            if (logits[v] > logits[best])
                best = v;
        tok = best;
    }
    CHECK(ork_pool_threads_created() == threads0);
    CHECK(ork_alloc_count() == allocs0);
    printf("  %s: %llu threads created by prefill + %d decode steps, %llu allocations\n", rel,
           (unsigned long long)(ork_pool_threads_created() - threads0), N_DECODE,
           (unsigned long long)(ork_alloc_count() - allocs0));
    ork_free(logits);
    ork_session_free(s);
    ork_model_free(m);
}

static void test_no_thread_per_token(void)
{
    ork_test_fixture("models/stories260K.gguf");     /* skips the test without fixtures */
    check_model("models/stories260K.gguf", false);
    check_model("models/stories260K-Q8_0.gguf", true);
}

int main(void)
{
    RUN(test_no_thread_per_token);
    return ork_test_done();
}
