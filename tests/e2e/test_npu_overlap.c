/* test_npu_overlap.c -- the NPU executor's decode overlap on the simulator (stories260K), with
 * the O projection split by heads (--npu-executor fused-split-o):
 *   - every layer of every decoded token submits the first half of its O projection
 *     asynchronously and the CPU computes the other heads' attention while it is in flight
 *     (counted by the executor: n_overlapped, cpu_inflight_ms > 0);
 *   - the hidden CPU time is bounded by what was in flight and by the modelled NPU time;
 *   - <= 5 submits per layer per decoded token (the LM head once per token);
 *   - the overlapped decode gives the same logits, bit for bit, as the synchronous path of the
 *     same split (prefill through plans of one row, which runs both O halves back to back);
 *   - the per-matmul baseline does not overlap (n_overlapped == 0);
 *   - the default fused executor runs the O projection whole: 4 submits per layer per token,
 *     nothing in flight.
 * Speed is not asserted (the machine is shared); only that the work really overlapped. */
#include "ork_test.h"

#include <ork/error.h>
#include <ork-engine/engine.h>

#define N_TOK 24
#define MAX_SUBMITS_PER_LAYER 5

static const int32_t seq[N_TOK] = {
    1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401,
    396, 267, 337, 410, 408, 419,
};

static struct ork_model *load(const char *path, uint32_t flags, int max_m)
{
    struct ork_model_params mp;
    ork_model_params_default(&mp);
    mp.device = "sim";
    mp.npu_max_m = max_m;
    mp.npu_flags = flags | ORK_NPU_EXEC_NO_PACK | ORK_NPU_EXEC_QUIET;
    struct ork_model *m = NULL;
    if (ork_model_load(path, &mp, &m) < 0)
        fprintf(stderr, "load %s: %s\n", path, ork_error_message());
    return m;
}

static struct ork_session *session(struct ork_model *m)
{
    struct ork_session_params sp;
    ork_session_params_default(&sp);
    sp.ctx_size = 64;
    sp.n_threads = 1;
    struct ork_session *s = NULL;
    if (ork_session_create(m, &sp, &s) < 0)
        fprintf(stderr, "session: %s\n", ork_error_message());
    return s;
}

/* Decode seq one token at a time; logits (N_TOK, nv). */
static int decode(struct ork_model *m, float *logits, int nv)
{
    struct ork_session *s = session(m);
    if (!s)
        return -1;
    int ret = 0;
    for (int i = 0; i < N_TOK && ret == 0; i++)
        ret = ork_model_eval(s, &seq[i], 1, i, logits + (size_t)i * nv, 0);
    ork_session_free(s);
    return ret;
}

static void check_model(const char *rel)
{
    char path[4096];
    snprintf(path, sizeof path, "%s", ork_test_fixture(rel));
    struct ork_model *m = load(path, ORK_NPU_EXEC_SPLIT_O, 0);
    REQUIRE(m);
    int nv = ork_model_config(m)->n_vocab, nl = ork_model_config(m)->n_layers;
    float *ld = malloc((size_t)N_TOK * nv * sizeof(float));
    float *lp = malloc((size_t)N_TOK * nv * sizeof(float));
    REQUIRE(ld && lp);

    ork_model_npu_stats_reset(m);
    REQUIRE(decode(m, ld, nv) == 0);
    struct ork_npu_exec_stats st;
    REQUIRE(ork_model_npu_stats(m, &st) == 0);
    printf("%s: %llu overlapped submits for %d tokens x %d layers; CPU in flight %.3f ms, "
           "hidden %.3f ms of modelled NPU %.3f ms\n", rel, (unsigned long long)st.n_overlapped,
           N_TOK, nl, st.cpu_inflight_ms, st.cpu_overlap_ms, st.model_npu_ms);
    CHECK(st.n_overlapped == (uint64_t)N_TOK * (uint64_t)nl);
    CHECK(st.cpu_inflight_ms > 0);
    CHECK(st.cpu_overlap_ms > 0);
    CHECK(st.cpu_overlap_ms <= st.cpu_inflight_ms + 1e-9);
    CHECK(st.cpu_overlap_ms <= st.model_npu_ms + 1e-9);
    /* the CPU column of the modelled time never goes negative */
    CHECK(st.wall_ms - st.npu_wall_ms - st.cpu_overlap_ms >= -1e-9);
    double per_layer = ((double)st.n_submits / (double)st.n_rows - 1.0) / nl;  /* LM head: 1 */
    printf("%s: %.2f submits per layer per token\n", rel, per_layer);
    CHECK(per_layer <= MAX_SUBMITS_PER_LAYER);
    CHECK(per_layer > 4);          /* the split O really runs as two submits */
    ork_model_npu_stats_reset(m);
    ork_model_npu_stats(m, &st);
    CHECK(st.n_overlapped == 0 && st.cpu_inflight_ms == 0 && st.cpu_overlap_ms == 0);

    /* the synchronous path of the same split: prefill over plans of one row */
    struct ork_model *one = load(path, ORK_NPU_EXEC_SPLIT_O, 1);
    REQUIRE(one);
    struct ork_session *s = session(one);
    REQUIRE(s);
    CHECK(ork_model_eval(s, seq, N_TOK, 0, lp, ORK_EVAL_ALL_LOGITS) == 0);
    ork_model_npu_stats(one, &st);
    CHECK(st.n_overlapped == 0);
    CHECK(memcmp(ld, lp, (size_t)N_TOK * nv * sizeof(float)) == 0);
    ork_session_free(s);
    ork_model_free(one);

    /* the baseline: one synchronous submit per matmul, nothing in flight */
    struct ork_model *base = load(path, ORK_NPU_EXEC_PER_MATMUL, 0);
    REQUIRE(base);
    REQUIRE(decode(base, lp, nv) == 0);
    ork_model_npu_stats(base, &st);
    CHECK(st.n_overlapped == 0 && st.cpu_overlap_ms == 0);
    CHECK(st.n_submits == (uint64_t)N_TOK * (uint64_t)(nl * 7 + 1));
    ork_model_free(base);

    /* the default fused executor: QKV, O, gate_up and down per layer, nothing in flight */
    struct ork_model *whole = load(path, 0, 0);
    REQUIRE(whole);
    REQUIRE(decode(whole, lp, nv) == 0);
    ork_model_npu_stats(whole, &st);
    CHECK(st.n_overlapped == 0 && st.cpu_overlap_ms == 0);
    CHECK(st.n_submits == (uint64_t)N_TOK * (uint64_t)(nl * 4 + 1));
    ork_model_free(whole);

    free(ld);
    free(lp);
    ork_model_free(m);
}

static void test_llama(void)
{
    check_model("models/stories260K.gguf");
}

static void test_qwen3(void)
{
    check_model("models/stories260K-qwen3.gguf");
}

int main(void)
{
    RUN(test_llama);
    RUN(test_qwen3);
    return ork_test_done();
}
