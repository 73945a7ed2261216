/* test_spec_rows.c -- ork_model_eval_multi_rows: several sessions, each with one or more
 * consecutive new tokens (a speculative verify of k+1 rows beside the one row of a plain
 * decode), in one forward pass.
 *   - every row's logits are bit-identical to evaluating the session alone, one token at a
 *     time (one row per forward, so attention takes one query row per pass), over many steps
 *     with rollbacks between them (a rejected draft's positions truncated away), on the CPU
 *     with F32 and F16 caches and on the simulator;
 *   - the same on a synthetic model whose KV heads have an odd number of query heads (Qwen2.5-
 *     0.5B's shape, 14 heads on 2 KV heads, one layer, a small vocabulary): there attention
 *     pairs the queries of consecutive rows (prefill chunks, verify rows), and each query's
 *     bits must be those of the one-query path -- a prefill of the whole prompt against one
 *     token per forward (with f32 activations too, so that no rounding of the activations hides
 *     a difference);
 *   - the argument checks (a row count of 0, more rows than a pass holds, a full context). */
#include "ork_test.h"

#include <ork/error.h>
#include <ork-engine/engine.h>
#include <ork-kernels/types.h>
#include <ork-tooling/synth.h>

#include "test_spec_load.h"

#include <stdlib.h>
#include <string.h>

#define N_SESS 4
#define N_STEPS 12
#define MAX_ROWS 6          /* rows of a speculating session in one step */
#define CTX 160
#define MAX_VOCAB 1024

static struct ork_model *g_model;
static int32_t g_vocab;
static bool g_f32_act;      /* f32 activations: no rounding hides a difference in attention */

static struct ork_session *new_session(enum ork_kv_type kv)
{
    struct ork_session_params sp;
    ork_session_params_default(&sp);
    sp.ctx_size = CTX;
    sp.n_threads = 2;
    sp.kv_type = kv;
    sp.act_quant = !g_f32_act;
    struct ork_session *s = NULL;
    if (ork_session_create(g_model, &sp, &s) < 0)
        return NULL;
    return s;
}

static int32_t tok_at(int i, int k)
{
    return (int32_t)(1 + (7 + 13 * k + 31 * i) % (g_vocab - 1));
}

/* Reference: session s evaluates toks[0..n) one token per forward into lg (n rows). */
static int eval_one_by_one(struct ork_session *s, const int32_t *toks, int32_t n, float *lg)
{
    for (int32_t j = 0; j < n; j++) {
        int ret = ork_model_eval(s, toks + j, 1, ork_session_n_past(s),
                                 lg + (size_t)j * (size_t)g_vocab, ORK_EVAL_LAST_LOGITS);
        if (ret < 0)
            return ret;
    }
    return 0;
}

static void run_rows(enum ork_kv_type kv)
{
    struct ork_session *a[N_SESS], *b[N_SESS];
    static float la[N_SESS * MAX_ROWS * MAX_VOCAB], lb[N_SESS * MAX_ROWS * MAX_VOCAB];
    for (int i = 0; i < N_SESS; i++) {
        a[i] = new_session(kv);
        b[i] = new_session(kv);
        REQUIRE(a[i] && b[i]);
        int32_t ids[32], n = 3 + 5 * i;
        for (int k = 0; k < n; k++)
            ids[k] = tok_at(i, k);
        REQUIRE(ork_model_eval(a[i], ids, n, 0, NULL, ORK_EVAL_LAST_LOGITS) == 0);
        REQUIRE(ork_model_eval(b[i], ids, n, 0, NULL, ORK_EVAL_LAST_LOGITS) == 0);
    }
    int mismatches = 0, rows_total = 0;
    for (int step = 0; step < N_STEPS; step++) {
        int32_t n_tok[N_SESS], toks[N_SESS * MAX_ROWS], at = 0;
        for (int i = 0; i < N_SESS; i++) {
            /* sessions 1 and 3 speculate (2 .. MAX_ROWS rows), 0 and 2 decode one row */
            n_tok[i] = i % 2 ? 2 + (step + i) % (MAX_ROWS - 1) : 1;
            for (int k = 0; k < n_tok[i]; k++)
                toks[at + k] = tok_at(i + step, k + ork_session_n_past(a[i]));
            REQUIRE(eval_one_by_one(a[i], toks + at, n_tok[i], la + (size_t)at * g_vocab) == 0);
            at += n_tok[i];
        }
        REQUIRE(ork_model_eval_multi_rows(b, n_tok, toks, N_SESS, lb) == 0);
        rows_total += at;
        for (int r = 0; r < at; r++)
            if (memcmp(la + (size_t)r * g_vocab, lb + (size_t)r * g_vocab,
                       (size_t)g_vocab * sizeof(float)))
                mismatches++;
        for (int i = 0; i < N_SESS; i++) {
            CHECK_EQ_INT(ork_session_n_past(a[i]), ork_session_n_past(b[i]));
            /* a rejection: roll the speculating sessions back by a step-dependent count */
            int32_t back = i % 2 ? (step * 3 + i) % n_tok[i] : 0;
            REQUIRE(ork_session_truncate(a[i], ork_session_n_past(a[i]) - back) == 0);
            REQUIRE(ork_session_truncate(b[i], ork_session_n_past(b[i]) - back) == 0);
        }
    }
    printf("#   %d rows compared\n", rows_total);
    CHECK_EQ_INT(mismatches, 0);
    for (int i = 0; i < N_SESS; i++) {
        CHECK(!memcmp(ork_session_tokens(a[i]), ork_session_tokens(b[i]),
                      (size_t)ork_session_n_past(a[i]) * sizeof(int32_t)));
        ork_session_free(a[i]);
        ork_session_free(b[i]);
    }
}

/* A prompt in one forward (the paired-row attention when the group is odd) against one token
 * per forward: the same bits for every row. */
static void run_prefill_pairs(void)
{
    enum { N = 41 };    /* odd: the last row of the prompt is a block of its own */
    struct ork_session *a = new_session(ORK_KV_F32), *b = new_session(ORK_KV_F32);
    REQUIRE(a && b);
    static float la[N * MAX_VOCAB], lb[N * MAX_VOCAB];
    int32_t ids[N];
    for (int k = 0; k < N; k++)
        ids[k] = tok_at(2, k);
    REQUIRE(eval_one_by_one(a, ids, N, la) == 0);
    REQUIRE(ork_model_eval(b, ids, N, 0, lb, ORK_EVAL_ALL_LOGITS) == 0);
    int mismatches = 0;
    for (int r = 0; r < N; r++)
        mismatches += memcmp(la + (size_t)r * g_vocab, lb + (size_t)r * g_vocab,
                             (size_t)g_vocab * sizeof(float)) != 0;
    CHECK_EQ_INT(mismatches, 0);
    ork_session_free(a);
    ork_session_free(b);
}

static void test_errors(void)
{
    struct ork_session *s[2] = { new_session(ORK_KV_F32), new_session(ORK_KV_F32) };
    REQUIRE(s[0] && s[1]);
    static float lg[4 * MAX_VOCAB];
    int32_t tok[4] = { 1, 1, 1, 1 };
    int32_t zero[2] = { 1, 0 };
    CHECK_EQ_INT(ork_model_eval_multi_rows(s, zero, tok, 2, lg), ORK_EINVAL);
    CHECK(strstr(ork_error_message(), "rows") != NULL);
    int32_t huge[2] = { 1, 100000 };
    CHECK_EQ_INT(ork_model_eval_multi_rows(s, huge, tok, 2, lg), ORK_EINVAL);
    int32_t fill[CTX];
    for (int i = 0; i < CTX; i++)
        fill[i] = tok_at(0, i);
    REQUIRE(ork_model_eval(s[1], fill, CTX - 2, 0, NULL, ORK_EVAL_LAST_LOGITS) == 0);
    int32_t three[2] = { 1, 3 };    /* 3 rows where 2 fit */
    CHECK_EQ_INT(ork_model_eval_multi_rows(s, three, tok, 2, lg), ORK_ECONTEXT);
    CHECK_EQ_INT(ork_session_n_past(s[0]), 0);   /* nothing was evaluated */
    int32_t two[2] = { 1, 2 };
    CHECK_EQ_INT(ork_model_eval_multi_rows(s, two, tok, 2, lg), 0);
    CHECK_EQ_INT(ork_session_n_past(s[0]), 1);
    CHECK_EQ_INT(ork_session_n_past(s[1]), CTX);
    ork_session_free(s[0]);
    ork_session_free(s[1]);
}

static void use(struct ork_model *m)
{
    g_model = m;
    g_vocab = ork_model_config(m)->n_vocab;
}

static void test_rows_f32(void) { run_rows(ORK_KV_F32); }
static void test_rows_f16(void) { run_rows(ORK_KV_F16); }
static void test_prefill_pairs(void) { run_prefill_pairs(); }

/* The odd-group synthetic model (Qwen2.5-0.5B's attention: 14 query heads on 2 KV heads). */
static void test_odd_group(void)
{
    char dir[] = "/tmp/ork_spec_rows_XXXXXX";
    REQUIRE(mkdtemp(dir) != NULL);
    char path[64];
    snprintf(path, sizeof path, "%s/q05.gguf", dir);
    struct ork_synth_params sp;
    ork_synth_params_default(&sp);
    sp.arch = "qwen2";
    sp.preset = "0.5b";
    sp.type = ORK_TYPE_Q8_0;
    sp.n_layers = 1;
    sp.n_vocab = 512;
    sp.n_threads = 2;
    sp.out_path = path;
    REQUIRE(ork_synth_write(&sp, NULL) == 0);
    struct ork_model *m = spec_load(path, "cpu");
    unlink(path);
    rmdir(dir);
    REQUIRE(m != NULL);
    const struct ork_model_config *c = ork_model_config(m);
    CHECK((c->n_heads / c->n_kv_heads) % 2 == 1);
    use(m);
    REQUIRE(g_vocab <= MAX_VOCAB);
    for (int f32 = 0; f32 < 2; f32++) {
        g_f32_act = f32;
        run_prefill_pairs();
        run_rows(ORK_KV_F32);
        run_rows(ORK_KV_F16);
    }
    g_f32_act = false;
    ork_model_free(m);
}

int main(void)
{
    struct ork_model *m = spec_load(ork_test_fixture("models/stories260K.gguf"), "cpu");
    if (!m)
        return 1;
    use(m);
    if (g_vocab > MAX_VOCAB)
        return 1;
    RUN(test_rows_f32);
    RUN(test_rows_f16);
    RUN(test_prefill_pairs);
    RUN(test_errors);
    ork_model_free(m);
    struct ork_model *sim = spec_load(ork_test_fixture("models/stories260K.gguf"), "sim");
    if (sim) {
        use(sim);
        RUN(test_rows_f32);
        ork_model_free(sim);
    } else {
        fprintf(stderr, "sim: the simulator model did not load; skipped\n");
    }
    RUN(test_odd_group);
    return ork_test_done();
}
