/* test_model_archs.c -- gemma2, gemma3, phi3, llama with Llama-3 rope_freqs and qwen3moe
 * against llama.cpp (vectors/stories260K-archs.greedy.json, fixtures ARCHS.md), on the CPU:
 *   - every first variant and its Q8_0 copy: the 48 greedy ids from the prompt ids (batched
 *     prefill, then one token at a time) equal llama.cpp's 48/48;
 *   - top-5 logprobs at all 48 steps within the tolerance of the file's kind (below);
 *   - every file, -v2 included (no expected output: ARCHS.md holds it back): it loads, runs 48
 *     greedy tokens with finite logits, and a batched evaluation of prompt + those tokens gives
 *     the logits of the one-at-a-time decode (sliding windows, per-layer rope and the expert
 *     grouping must not depend on the batch shape).
 *   - the sliding-window layers' rings (kv.c): a long teacher-forced run with small batches
 *     (rings of one block) gives the logits of the full cache, its KV is smaller, and a
 *     rewind past what the rings kept evaluates the prefix again and gets the same logits.
 * F32 KV cache; no tokenizer needed. */
#include "ork_test.h"
#include "golden/json_lite.h"
#include "golden/golden_model.h"

#include "engine/model/model_priv.h"

#include <ork/error.h>
#include <ork-engine/engine.h>

#include <math.h>

#define N_GEN 48
#define MAX_VOCAB 512
#define MAX_PROMPT 16
/* Non-Gemma F32: exact F32 arithmetic, ARCHS.md's independent pass agrees to 1e-5. */
#define TOL_F32 1e-4
/* Gemma F32: the GELU goes through llama.cpp's FP16 table (ops_arch.c), and an input within
 * float noise of an FP16 rounding boundary can round the other way (one table step, ~1e-3
 * relative, of one hidden unit); ARCHS.md measured 3.7e-4 (gemma2) and 1.6e-3 (gemma3) for an
 * independent pass with the table, 1.6e-3 / 3.7e-2 with exact tanh-gelu. Measured here 2.3e-4
 * (gemma2) and 5.4e-3 (gemma3: below 6.4e-5 up to step 5, one flip at step 7). */
#define TOL_GEMMA2 1e-3
#define TOL_GEMMA3 1e-2
/* Q8_0 copies run with act_quant (activations rounded to Q8_0 blocks like llama.cpp: the
 * reference's integer block sums; without it the ids leave llama.cpp's at step 22 of qwen3moe).
 * A Q8_0 rounding of an activation is a step function too, so the same boundary noise as the
 * GELU table: measured 2.6e-6 (phi3), 4.2e-6 (gemma3), 5.2e-6 (qwen3moe), 3.5e-3 (llama3rope),
 * 4.4e-2 (gemma2: 46 layers; llama.cpp's own gemma2 Q8_0-vs-F32 spread is 5.4e-2, ARCHS.md). */
#define TOL_Q8_0 6e-2
/* Batched against one-at-a-time logits: the same arithmetic per row but for the matmul's
 * blocking of M rows. */
#define TOL_BATCH 1e-3

static char *g_json;

struct run {
    int ids[N_GEN];
    float logits[N_GEN][MAX_VOCAB];     /* before each generated token */
    float batch[N_GEN][MAX_VOCAB];      /* the same from one batched evaluation */
    int n_vocab;
};

/* Prefill (batched), N_GEN greedy tokens one at a time, then prompt + ids again as one batch
 * (all logits) in a fresh session. */
static int greedy(const char *file, const int32_t *prompt, int n_prompt, bool act_quant,
                  struct run *r)
{
    struct ork_model *m = NULL;
    int ret = golden_load_model(file, &m);
    if (ret < 0)
        return ret;
    struct ork_session_params sp;
    ork_session_params_default(&sp);
    sp.ctx_size = 128;
    sp.n_threads = 2;
    sp.kv_type = ORK_KV_F32;
    sp.act_quant = act_quant;
    struct ork_session *s = NULL;
    static float all[(MAX_PROMPT + N_GEN) * MAX_VOCAB];
    int32_t toks[MAX_PROMPT + N_GEN];
    if ((ret = ork_session_create(m, &sp, &s)) < 0)
        goto out;
    r->n_vocab = ork_model_config(m)->n_vocab;
    if (r->n_vocab > MAX_VOCAB || n_prompt > MAX_PROMPT) {
        ret = -1;
        goto out;
    }
    memcpy(toks, prompt, sizeof(int32_t) * (size_t)n_prompt);
    float logits[MAX_VOCAB];
    ret = ork_model_eval(s, toks, n_prompt, 0, logits, ORK_EVAL_LAST_LOGITS);
    for (int step = 0; ret == 0 && step < N_GEN; step++) {
        memcpy(r->logits[step], logits, sizeof(float) * (size_t)r->n_vocab);
        int32_t id = golden_argmax(logits, r->n_vocab);
        r->ids[step] = id;
        toks[n_prompt + step] = id;
        if (step + 1 < N_GEN)
            ret = ork_model_eval(s, &id, 1, n_prompt + step, logits, ORK_EVAL_LAST_LOGITS);
    }
    ork_session_free(s);
    s = NULL;
    if (ret == 0 && (ret = ork_session_create(m, &sp, &s)) == 0)
        ret = ork_model_eval(s, toks, n_prompt + N_GEN - 1, 0, all, ORK_EVAL_ALL_LOGITS);
    for (int step = 0; ret == 0 && step < N_GEN; step++)
        memcpy(r->batch[step], all + (size_t)(n_prompt - 1 + step) * (size_t)r->n_vocab,
               sizeof(float) * (size_t)r->n_vocab);
    if (ret < 0)
        fprintf(stderr, "eval %s: %s\n", file, ork_error_describe(ret));
out:
    ork_session_free(s);
    ork_model_free(m);
    return ret;
}

/* Every logit finite, and the batched logits equal the decoded ones (as log-softmax). */
static void check_shape(const char *file, const struct run *r)
{
    double maxdiff = 0;
    int bad = 0;
    for (int st = 0; st < N_GEN; st++) {
        double a[MAX_VOCAB], b[MAX_VOCAB];
        for (int i = 0; i < r->n_vocab; i++)
            bad += !isfinite(r->logits[st][i]) || !isfinite(r->batch[st][i]);
        golden_log_softmax(r->logits[st], r->n_vocab, a);
        golden_log_softmax(r->batch[st], r->n_vocab, b);
        for (int i = 0; i < r->n_vocab; i++)
            maxdiff = fmax(maxdiff, fabs(a[i] - b[i]));
    }
    printf("  %s: batched vs decoded max |dlogprob| = %.3g\n", file, maxdiff);
    CHECK_EQ_INT(bad, 0);
    CHECK(maxdiff <= TOL_BATCH);
}

static void check_file(const char *file, double tol)
{
    const char *obj = jl_get(g_json, file);
    REQUIRE(obj != NULL);
    double pd[MAX_PROMPT], ids_d[N_GEN];
    int n_prompt = jl_numbers(jl_get(g_json, "prompt_ids"), pd, MAX_PROMPT);
    REQUIRE(n_prompt > 0 && n_prompt <= MAX_PROMPT);
    REQUIRE(jl_numbers(jl_get(obj, "greedy_ids"), ids_d, N_GEN) == N_GEN);
    int32_t prompt[MAX_PROMPT];
    for (int i = 0; i < n_prompt; i++)
        prompt[i] = (int32_t)pd[i];
    static struct run r;
    bool q8 = strstr(file, "Q8_0") != NULL;
    REQUIRE(greedy(file, prompt, n_prompt, q8, &r) == 0);
    int same = 0, first_diff = -1;
    for (int i = 0; i < N_GEN; i++) {
        same += r.ids[i] == (int)ids_d[i];
        if (r.ids[i] != (int)ids_d[i] && first_diff < 0)
            first_diff = i;
    }
    if (first_diff >= 0)
        fprintf(stderr, "%s: greedy ids differ from step %d (got %d, want %d)\n", file,
                first_diff, r.ids[first_diff], (int)ids_d[first_diff]);
    CHECK_EQ_INT(same, N_GEN);
    static double top[N_GEN * 10];
    REQUIRE(jl_numbers(jl_get(obj, "top5_logprobs"), top, N_GEN * 10) == N_GEN * 10);
    double maxdiff = 0;
    for (int st = 0; st < N_GEN; st++) {
        double lp[MAX_VOCAB];
        golden_log_softmax(r.logits[st], r.n_vocab, lp);
        for (int k = 0; k < 5; k++) {
            int id = (int)top[st * 10 + k * 2];
            REQUIRE(id >= 0 && id < r.n_vocab);
            maxdiff = fmax(maxdiff, fabs(lp[id] - top[st * 10 + k * 2 + 1]));
        }
    }
    printf("  %s: greedy %d/%d, top-5 max |dlogprob| = %.3g (tolerance %.g)\n", file, same,
           N_GEN, maxdiff, tol);
    CHECK(maxdiff <= tol);
    check_shape(file, &r);
}

/* A -v2 file: loads, runs, batched == decoded. */
static void check_v2(const char *file)
{
    static const int32_t prompt[5] = { 1, 403, 407, 261, 378 };
    static struct run r;
    REQUIRE(greedy(file, prompt, 5, false, &r) == 0);
    check_shape(file, &r);
}

/* Ring: ctx 1024, window 16, n_batch 16 -> local layers keep 256 positions; n_batch 1024 ->
 * every layer keeps 1024. */
#define RING_CTX 1024
#define RING_N 700
#define RING_REWIND 300

static int ring_session(struct ork_model *m, int32_t n_batch, struct ork_session **s)
{
    struct ork_session_params sp;
    ork_session_params_default(&sp);
    sp.ctx_size = RING_CTX;
    sp.n_batch = n_batch;
    sp.n_threads = 2;
    return ork_session_create(m, &sp, s);
}

static void test_swa_ring(void)
{
    struct ork_model *m = NULL;
    REQUIRE(golden_load_model("stories260K-gemma3.gguf", &m) == 0);
    const struct ork_model_config *c = ork_model_config(m);
    int nv = c->n_vocab;
    static int32_t toks[RING_N];
    for (int i = 0; i < RING_N; i++)       /* any ids: teacher-forced */
        toks[i] = i == 0 ? 1 : 3 + (i * 37 + (i / 11) * 5) % (nv - 3);
    static float full[RING_N * MAX_VOCAB], ring[RING_N * MAX_VOCAB];
    struct ork_session *a = NULL, *b = NULL;
    REQUIRE(ring_session(m, RING_CTX, &a) == 0);
    REQUIRE(ring_session(m, 16, &b) == 0);
    CHECK(b->kv.bytes < a->kv.bytes);
    CHECK_EQ_INT(b->kv.min_cap, 256);
    CHECK(ork_model_eval(a, toks, RING_N, 0, full, ORK_EVAL_ALL_LOGITS) == 0);
    CHECK(ork_model_eval(b, toks, RING_N, 0, ring, ORK_EVAL_ALL_LOGITS) == 0);
    double maxdiff = 0;
    for (size_t i = 0; i < (size_t)RING_N * nv; i++)
        maxdiff = fmax(maxdiff, fabs((double)full[i] - ring[i]));
    printf("  ring (%zu of %zu KV bytes) vs full cache: max |dlogit| = %.3g\n", b->kv.bytes,
           a->kv.bytes, maxdiff);
    CHECK(maxdiff <= TOL_BATCH);
    /* rewind to RING_REWIND: the rings hold 444..699 only, so the prefix is evaluated again */
    CHECK(!ork__kv_window_valid(&b->kv, RING_REWIND, c->swa_window));
    CHECK(ork_session_truncate(b, RING_REWIND) == 0);
    CHECK(ork_model_eval(b, toks + RING_REWIND, RING_N - RING_REWIND, RING_REWIND, ring,
                         ORK_EVAL_ALL_LOGITS) == 0);
    maxdiff = 0;
    for (size_t i = 0; i < (size_t)(RING_N - RING_REWIND) * nv; i++)
        maxdiff = fmax(maxdiff, fabs((double)full[(size_t)RING_REWIND * nv + i] - ring[i]));
    printf("  after a rewind past the rings: max |dlogit| = %.3g\n", maxdiff);
    CHECK(maxdiff <= TOL_BATCH);
    /* a save needs every position: refused with the rings past their first lap */
    CHECK_EQ_INT(ork_session_save_file(b, "/nonexistent/x", NULL), ORK_EUNSUPPORTED);
    ork_session_free(a);
    ork_session_free(b);
    ork_model_free(m);
}

static void test_gemma2(void) { check_file("stories260K-gemma2.gguf", TOL_GEMMA2); }
static void test_gemma2_q8(void) { check_file("stories260K-gemma2-Q8_0.gguf", TOL_Q8_0); }
static void test_gemma3(void) { check_file("stories260K-gemma3.gguf", TOL_GEMMA3); }
static void test_gemma3_q8(void) { check_file("stories260K-gemma3-Q8_0.gguf", TOL_Q8_0); }
static void test_phi3(void) { check_file("stories260K-phi3.gguf", TOL_F32); }
static void test_phi3_q8(void) { check_file("stories260K-phi3-Q8_0.gguf", TOL_Q8_0); }
static void test_llama3rope(void) { check_file("stories260K-llama3rope.gguf", TOL_F32); }
static void test_llama3rope_q8(void) { check_file("stories260K-llama3rope-Q8_0.gguf", TOL_Q8_0); }
static void test_qwen3moe(void) { check_file("stories260K-qwen3moe.gguf", TOL_F32); }
static void test_qwen3moe_q8(void) { check_file("stories260K-qwen3moe-Q8_0.gguf", TOL_Q8_0); }

static void test_v2(void)
{
    static const char *const files[] = {
        "stories260K-gemma2-v2.gguf", "stories260K-gemma3-v2.gguf", "stories260K-phi3-v2.gguf",
        "stories260K-llama3rope-v2.gguf", "stories260K-qwen3moe-v2.gguf",
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        check_v2(files[i]);
}

int main(void)
{
    g_json = jl_read_file(ork_test_fixture("vectors/stories260K-archs.greedy.json"));
    if (!g_json)
        SKIP("cannot read the architecture vectors");
    RUN(test_gemma2);
    RUN(test_gemma2_q8);
    RUN(test_gemma3);
    RUN(test_gemma3_q8);
    RUN(test_phi3);
    RUN(test_phi3_q8);
    RUN(test_llama3rope);
    RUN(test_llama3rope_q8);
    RUN(test_qwen3moe);
    RUN(test_qwen3moe_q8);
    RUN(test_v2);
    RUN(test_swa_ring);
    free(g_json);
    return ork_test_done();
}
