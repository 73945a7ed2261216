/* test_model_batch.c -- properties of evaluation on stories260K (no reference vectors needed):
 * batched prefill equals token-by-token decode, all-logits rows equal last-logits results, an F16
 * KV cache still gives the F32 greedy ids, truncating the cache and re-evaluating reproduces the
 * same logits, and overflowing the context fails with ORK_ECONTEXT (and leaves the session
 * usable), and decoding several sessions in one batch equals decoding them one by one. */
#include "ork_test.h"

#include <ork/error.h>
#include <ork-engine/engine.h>

#include "engine/model/model_priv.h"   /* ork__forward_multi: the shared-layer-code implementation */

#define MAX_VOCAB 512
#define N_SEQ 53                /* prompt (5) + 48 greedy ids of the reference story */
#define BATCH_TOL 1e-5          /* batching changes only the summation grouping */

/* BOS + "Once upon a time" and its greedy continuation (vectors/stories260K-quant.greedy.json). */
static const int32_t seq[N_SEQ] = {
    1, 403, 407, 261, 378,
    432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401, 396, 267, 337, 410, 408, 419,
    292, 411, 322, 265, 282, 295, 433, 426, 385, 328, 432, 358, 394, 261, 370, 432, 352, 266, 268,
    388, 426, 338, 391, 266, 267, 337, 335, 312, 432,
};

static struct ork_model *g_model;

static struct ork_session *new_session(int ctx, int batch, enum ork_kv_type kv, int threads)
{
    struct ork_session_params sp;
    ork_session_params_default(&sp);
    sp.ctx_size = ctx;
    sp.n_batch = batch;
    sp.kv_type = kv;
    sp.n_threads = threads;
    struct ork_session *s = NULL;
    int ret = ork_session_create(g_model, &sp, &s);
    if (ret < 0)
        fprintf(stderr, "session: %s\n", ork_error_describe(ret));
    return s;
}

static float g_ref[N_SEQ][MAX_VOCAB];    /* token-by-token logits */

static void test_token_by_token_reference(void)
{
    struct ork_session *s = new_session(64, 1, ORK_KV_F32, 1);
    REQUIRE(s != NULL);
    for (int i = 0; i < N_SEQ; i++)
        CHECK_EQ_INT(ork_model_eval(s, &seq[i], 1, i, g_ref[i], ORK_EVAL_LAST_LOGITS), 0);
    CHECK_EQ_INT(ork_session_n_past(s), N_SEQ);
    for (int i = 0; i < N_SEQ; i++)
        CHECK_EQ_INT(ork_session_tokens(s)[i], seq[i]);
    ork_session_free(s);
}

static void check_batched(int batch, int threads)
{
    int nv = ork_model_config(g_model)->n_vocab;
    struct ork_session *s = new_session(64, batch, ORK_KV_F32, threads);
    REQUIRE(s != NULL);
    static float all[N_SEQ][MAX_VOCAB];
    REQUIRE(ork_model_eval(s, seq, N_SEQ, 0, &all[0][0], ORK_EVAL_ALL_LOGITS) == 0);
    double maxdiff = 0;
    for (int i = 0; i < N_SEQ; i++)
        for (int k = 0; k < nv; k++) {
            double d = fabs((double)all[i][k] - (double)g_ref[i][k]);
            maxdiff = d > maxdiff ? d : maxdiff;
        }
    printf("  batch %d, %d threads: max |dlogit| vs token-by-token = %.3g\n", batch, threads,
           maxdiff);
    CHECK(maxdiff <= BATCH_TOL);

    /* last-logits mode returns the last row */
    float last[MAX_VOCAB];
    ork_session_reset(s);
    REQUIRE(ork_model_eval(s, seq, N_SEQ, 0, last, ORK_EVAL_LAST_LOGITS) == 0);
    for (int k = 0; k < nv; k++)
        CHECK_NEAR(last[k], g_ref[N_SEQ - 1][k], BATCH_TOL);
    ork_session_free(s);
}

static void test_batched_prefill(void)
{
    check_batched(64, 1);
    check_batched(16, 2);
    check_batched(7, 2);
}

static void test_truncate_and_reevaluate(void)
{
    int nv = ork_model_config(g_model)->n_vocab;
    struct ork_session *s = new_session(64, 32, ORK_KV_F32, 2);
    REQUIRE(s != NULL);
    float out[MAX_VOCAB];
    REQUIRE(ork_model_eval(s, seq, 30, 0, NULL, ORK_EVAL_LAST_LOGITS) == 0);
    /* rewind to 20 and evaluate the rest: same logits as an uninterrupted run (the cache
     * prefaulted in between: the 20 cached tokens are kept) */
    REQUIRE(ork_session_truncate(s, 20) == 0);
    REQUIRE(ork_session_prefault(s, 64) == 0);
    CHECK_EQ_INT(ork_session_n_past(s), 20);
    CHECK_EQ_INT(ork_session_prefault(s, 65), ORK_EINVAL);
    CHECK_EQ_INT(ork_session_prefault(s, -1), ORK_EINVAL);
    REQUIRE(ork_model_eval(s, seq + 20, N_SEQ - 20, 20, out, ORK_EVAL_LAST_LOGITS) == 0);
    for (int k = 0; k < nv; k++)
        CHECK_NEAR(out[k], g_ref[N_SEQ - 1][k], BATCH_TOL);
    /* a position past the cache is refused */
    CHECK_EQ_INT(ork_model_eval(s, seq, 1, N_SEQ + 1, out, 0), ORK_EINVAL);
    CHECK_EQ_INT(ork_session_truncate(s, N_SEQ + 1), ORK_EINVAL);
    /* a token outside the vocabulary is refused */
    int32_t bad = 100000;
    CHECK_EQ_INT(ork_model_eval(s, &bad, 1, 0, out, 0), ORK_EINVAL);
    ork_session_free(s);
}

static void test_kv_f16_greedy(void)
{
    int nv = ork_model_config(g_model)->n_vocab;
    struct ork_session *s = new_session(64, 8, ORK_KV_F16, 2);
    REQUIRE(s != NULL);
    float logits[MAX_VOCAB];
    REQUIRE(ork_model_eval(s, seq, 5, 0, logits, 0) == 0);
    for (int i = 5; i < N_SEQ; i++) {
        int32_t best = 0;
        for (int k = 1; k < nv; k++)
            if (logits[k] > logits[best])
                best = k;
        CHECK_EQ_INT(best, seq[i]);
        if (best != seq[i])
            break;
        REQUIRE(ork_model_eval(s, &best, 1, i, logits, 0) == 0);
    }
    ork_session_free(s);
}

static void test_context_overflow(void)
{
    struct ork_session *s = new_session(16, 8, ORK_KV_F32, 1);
    REQUIRE(s != NULL);
    float logits[MAX_VOCAB];
    CHECK_EQ_INT(ork_session_ctx_size(s), 16);
    int ret = ork_model_eval(s, seq, 17, 0, logits, 0);
    CHECK_EQ_INT(ret, ORK_ECONTEXT);
    CHECK(strstr(ork_error_message(), "context full: 17 tokens > ctx_size 16") != NULL);
    CHECK_EQ_INT(ork_session_n_past(s), 0);
    REQUIRE(ork_model_eval(s, seq, 16, 0, logits, 0) == 0);
    CHECK_EQ_INT(ork_model_eval(s, &seq[16], 1, 16, logits, 0), ORK_ECONTEXT);
    CHECK_EQ_INT(ork_session_n_past(s), 16);
    /* still usable after the error */
    REQUIRE(ork_session_truncate(s, 5) == 0);
    CHECK_EQ_INT(ork_model_eval(s, &seq[5], 1, 5, logits, 0), 0);
    ork_session_free(s);
}

/* Three sessions at different points of the story decode one token each in one pass: the
 * logits equal what each session computes alone, and each cache grows by one. */
typedef int (*multi_fn)(struct ork_session *const *, const int32_t *, int32_t, float *);

static void check_eval_multi(multi_fn eval_multi)
{
    int nv = ork_model_config(g_model)->n_vocab;
    enum { NS = 3 };
    static const int start[NS] = { 5, 17, 40 };
    struct ork_session *ss[NS], *solo[NS];
    for (int i = 0; i < NS; i++) {
        ss[i] = new_session(64, 16, ORK_KV_F32, 2);
        solo[i] = new_session(64, 16, ORK_KV_F32, 1);
        REQUIRE(ss[i] && solo[i]);
        REQUIRE(ork_model_eval(ss[i], seq, start[i], 0, NULL, 0) == 0);
        REQUIRE(ork_model_eval(solo[i], seq, start[i], 0, NULL, 0) == 0);
    }
    int32_t toks[NS];
    for (int i = 0; i < NS; i++)
        toks[i] = seq[start[i]];
    static float multi[NS][MAX_VOCAB];
    REQUIRE(eval_multi(ss, toks, NS, &multi[0][0]) == 0);
    for (int i = 0; i < NS; i++) {
        float one[MAX_VOCAB];
        REQUIRE(ork_model_eval(solo[i], &toks[i], 1, start[i], one, 0) == 0);
        double d = 0;
        for (int k = 0; k < nv; k++) {
            double x = fabs((double)multi[i][k] - (double)one[k]);
            d = x > d ? x : d;
            /* and both equal the token-by-token reference */
            CHECK_NEAR(one[k], g_ref[start[i]][k], BATCH_TOL);
        }
        CHECK(d <= BATCH_TOL);
        CHECK_EQ_INT(ork_session_n_past(ss[i]), start[i] + 1);
        CHECK_EQ_INT(ork_session_tokens(ss[i])[start[i]], toks[i]);
    }
    /* a second step continues each session correctly */
    for (int i = 0; i < NS; i++)
        toks[i] = seq[start[i] + 1];
    REQUIRE(eval_multi(ss, toks, NS, &multi[0][0]) == 0);
    for (int i = 0; i < NS; i++)
        for (int k = 0; k < nv; k++)
            CHECK_NEAR(multi[i][k], g_ref[start[i] + 1][k], BATCH_TOL);

    /* refusals: a session twice, a full session (nothing evaluated) */
    struct ork_session *twice[2] = { ss[0], ss[0] };
    CHECK_EQ_INT(eval_multi(twice, toks, 2, &multi[0][0]), ORK_EINVAL);
    struct ork_session *small = new_session(8, 8, ORK_KV_F32, 1);
    REQUIRE(small != NULL);
    REQUIRE(ork_model_eval(small, seq, 8, 0, NULL, 0) == 0);
    struct ork_session *mixed[2] = { ss[1], small };
    int32_t before = ork_session_n_past(ss[1]);
    CHECK_EQ_INT(eval_multi(mixed, toks, 2, &multi[0][0]), ORK_ECONTEXT);
    CHECK_EQ_INT(ork_session_n_past(ss[1]), before);
    ork_session_free(small);
    for (int i = 0; i < NS; i++) {
        ork_session_free(ss[i]);
        ork_session_free(solo[i]);
    }
}

static void test_eval_multi(void) { check_eval_multi(ork_model_eval_multi); }
static void test_forward_multi(void) { check_eval_multi(ork__forward_multi); }

static void test_default_params(void)
{
    struct ork_session *s = NULL;
    REQUIRE(ork_session_create(g_model, NULL, &s) == 0);
    int32_t want = ork_model_config(g_model)->n_ctx_train;
    if (want > 4096)
        want = 4096;
    CHECK_EQ_INT(ork_session_ctx_size(s), want);
    CHECK(ork_session_n_batch(s) >= 1 && ork_session_n_batch(s) <= want);
    ork_session_free(s);
}

int main(void)
{
    const char *path = ork_test_fixture("models/stories260K.gguf");
    struct ork_model_params mp;
    ork_model_params_default(&mp);
    mp.no_tokenizer = true;
    int ret = ork_model_load(path, &mp, &g_model);
    if (ret < 0) {
        fprintf(stderr, "load: %s\n", ork_error_describe(ret));
        return 1;
    }
    if (ork_model_config(g_model)->n_vocab > MAX_VOCAB)
        return 1;
    RUN(test_token_by_token_reference);
    RUN(test_batched_prefill);
    RUN(test_truncate_and_reevaluate);
    RUN(test_kv_f16_greedy);
    RUN(test_context_overflow);
    RUN(test_eval_multi);
    RUN(test_forward_multi);
    RUN(test_default_params);
    ork_model_free(g_model);
    return ork_test_done();
}
