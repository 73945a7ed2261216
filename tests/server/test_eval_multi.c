/* test_eval_multi.c -- ork_model_eval_multi (the server's batched decode step) against
 * ork_model_eval one session at a time, on the stories260K fixtures (llama, qwen2 with biases,
 * qwen3 with q/k norms, F16 weights): sessions at different positions with different histories
 * decode one token each in one pass, and the logits must be bit-identical to evaluating each
 * session alone (the matmul computes every element with the same dot product for any M); then
 * greedy continuations over many steps stay identical. Also the argument checks. */
#include "ork_test.h"

#include <ork/error.h>
#include <ork-engine/engine.h>

#include <stdlib.h>
#include <string.h>

#define N_SESS 5
#define N_STEPS 24
#define CTX 128
#define MAX_VOCAB 4096

static struct ork_model *g_model;
static int32_t g_vocab;

static struct ork_session *new_session(enum ork_kv_type kv)
{
    struct ork_session_params sp;
    ork_session_params_default(&sp);
    sp.ctx_size = CTX;
    sp.n_threads = 2;
    sp.kv_type = kv;
    struct ork_session *s = NULL;
    if (ork_session_create(g_model, &sp, &s) < 0)
        return NULL;
    return s;
}

static int32_t argmax(const float *x, int32_t n)
{
    int32_t b = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[b])
            b = i;
    return b;
}

/* Prompts of different lengths (token ids inside the vocabulary), so every session sits at
 * its own position. */
static void prompt_of(int i, int32_t *ids, int32_t *n)
{
    *n = 2 + 3 * i;
    for (int32_t k = 0; k < *n; k++)
        ids[k] = (int32_t)((7 + 13 * k + 31 * i) % g_vocab);
    ids[0] = 1;
}

static void run_equivalence(enum ork_kv_type kv)
{
    struct ork_session *a[N_SESS], *b[N_SESS];
    static float la[N_SESS][MAX_VOCAB], lb[N_SESS * MAX_VOCAB];
    int32_t tok[N_SESS];
    for (int i = 0; i < N_SESS; i++) {
        a[i] = new_session(kv);
        b[i] = new_session(kv);
        REQUIRE(a[i] && b[i]);
        int32_t ids[64], n;
        prompt_of(i, ids, &n);
        REQUIRE(ork_model_eval(a[i], ids, n, 0, la[i], ORK_EVAL_LAST_LOGITS) == 0);
        REQUIRE(ork_model_eval(b[i], ids, n, 0, lb + (size_t)i * g_vocab, ORK_EVAL_LAST_LOGITS) == 0);
        tok[i] = argmax(la[i], g_vocab);
    }
    int mismatches = 0;
    for (int step = 0; step < N_STEPS; step++) {
        /* reference: one session at a time */
        for (int i = 0; i < N_SESS; i++)
            REQUIRE(ork_model_eval(a[i], &tok[i], 1, ork_session_n_past(a[i]), la[i],
                                   ORK_EVAL_LAST_LOGITS) == 0);
        /* batched: all at once; vary how many take part so M changes from step to step */
        int n = step % 3 == 2 ? N_SESS - 2 : N_SESS;
        REQUIRE(ork_model_eval_multi(b, tok, n, lb) == 0);
        for (int i = n; i < N_SESS; i++)
            REQUIRE(ork_model_eval(b[i], &tok[i], 1, ork_session_n_past(b[i]),
                                   lb + (size_t)i * g_vocab, ORK_EVAL_LAST_LOGITS) == 0);
        for (int i = 0; i < N_SESS; i++) {
            CHECK_EQ_INT(ork_session_n_past(a[i]), ork_session_n_past(b[i]));
            if (memcmp(la[i], lb + (size_t)i * g_vocab, (size_t)g_vocab * sizeof(float)))
                mismatches++;
            tok[i] = argmax(la[i], g_vocab);
        }
    }
    CHECK_EQ_INT(mismatches, 0);
    for (int i = 0; i < N_SESS; i++) {
        CHECK(!memcmp(ork_session_tokens(a[i]), ork_session_tokens(b[i]),
                      (size_t)ork_session_n_past(a[i]) * sizeof(int32_t)));
        ork_session_free(a[i]);
        ork_session_free(b[i]);
    }
}

static void test_equivalence_f32_kv(void) { run_equivalence(ORK_KV_F32); }
static void test_equivalence_f16_kv(void) { run_equivalence(ORK_KV_F16); }

static void test_errors(void)
{
    struct ork_session *s[2] = { new_session(ORK_KV_F32), new_session(ORK_KV_F32) };
    REQUIRE(s[0] && s[1]);
    static float lg[2 * MAX_VOCAB];
    int32_t tok[2] = { 1, 1 };
    CHECK_EQ_INT(ork_model_eval_multi(s, tok, 0, lg), ORK_EINVAL);
    struct ork_session *dup[2] = { s[0], s[0] };
    CHECK_EQ_INT(ork_model_eval_multi(dup, tok, 2, lg), ORK_EINVAL);
    CHECK(strstr(ork_error_message(), "twice") != NULL);
    int32_t bad[2] = { 1, g_vocab };
    CHECK_EQ_INT(ork_model_eval_multi(s, bad, 2, lg), ORK_EINVAL);
    CHECK(strstr(ork_error_message(), "vocabulary") != NULL);
    CHECK_EQ_INT(ork_session_n_past(s[0]), 0);   /* nothing was evaluated */
    /* a full session: ORK_ECONTEXT, nothing evaluated */
    int32_t fill[CTX];
    for (int i = 0; i < CTX; i++)
        fill[i] = 1 + i % (g_vocab - 1);
    REQUIRE(ork_model_eval(s[1], fill, CTX, 0, NULL, ORK_EVAL_LAST_LOGITS) == 0);
    CHECK_EQ_INT(ork_model_eval_multi(s, tok, 2, lg), ORK_ECONTEXT);
    CHECK_EQ_INT(ork_session_n_past(s[0]), 0);
    ork_session_free(s[0]);
    ork_session_free(s[1]);
}

int main(void)
{
    static const char *models[] = {
        "models/stories260K.gguf", "models/stories260K-qwen2-bias.gguf",
        "models/stories260K-qwen3.gguf", "models/stories260K-F16.gguf",
    };
    ork_test_fixture(models[0]);
    for (size_t k = 0; k < sizeof models / sizeof models[0]; k++) {
        const char *path = ork_test_fixture_opt(models[k]);
        if (!path)
            continue;
        printf("# %s\n", models[k]);
        int ret = ork_model_load(path, NULL, &g_model);
        if (ret < 0) {
            fprintf(stderr, "load %s: %s\n", path, ork_error_describe(ret));
            return 1;
        }
        g_vocab = ork_model_config(g_model)->n_vocab;
        if (g_vocab > MAX_VOCAB) {
            ork_model_free(g_model);
            continue;
        }
        RUN(test_equivalence_f32_kv);
        RUN(test_equivalence_f16_kv);
        if (k == 0)
            RUN(test_errors);
        ork_model_free(g_model);
    }
    return ork_test_done();
}
