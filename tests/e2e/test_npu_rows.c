/* test_npu_rows.c -- the NPU executor's row-sized programs on the simulator (stories260K, and
 * its qwen3 variant): every resident matrix holds plans of 1, 2, 4, ..., 64 rows
 * (docs/npu-inference.md "Row-sized programs"), and
 *   - the executor reports those sizes, each with device bytes and regcmd bytes;
 *   - a forward of M = 3, 5 and 8 rows -- M sessions decoding together (ork_model_eval_multi)
 *     and one session's M-token batch -- gives the same logits, bit for bit, as the same rows
 *     run one at a time (the NPU's int8 part is exact, and every CPU op works per row);
 *   - each such forward runs only the smallest plan that holds its rows (counted per plan
 *     size by the executor: 3 -> 4, 5 -> 8, 8 -> 8), and one row runs the M = 1 plan;
 *   - a model with only the M = 1 and M = 64 plans (npu_prog_rows = 1) gives the same logits
 *     and runs the 64-row plan, at a larger modelled NPU time than the 8-row plan (the
 *     simulator's model clock: deterministic, not the host's speed).
 * Speed of the host is not asserted. */
#include "ork_test.h"

#include <ork/error.h>
#include <ork-engine/engine.h>

#include <stdlib.h>
#include <string.h>

#define MAX_SEQ 8
#define PREFIX 4            /* tokens each session holds before the batched step */

static const int32_t toks[MAX_SEQ][PREFIX + 1] = {
    { 1, 403, 407, 261, 378 }, { 1, 432, 383, 286, 261 }, { 1, 376, 298, 315, 421 },
    { 1, 395, 317, 426, 338 }, { 1, 401, 396, 267, 337 }, { 1, 410, 408, 419, 300 },
    { 1, 290, 350, 270, 330 }, { 1, 280, 310, 360, 390 },
};

static struct ork_model *load(const char *path, uint32_t prog_rows)
{
    struct ork_model_params mp;
    ork_model_params_default(&mp);
    mp.device = "sim";
    mp.npu_prog_rows = prog_rows;
    mp.npu_max_m = 64;          /* the sizes 1..64 (plans above 64 rows: test_npu_rows_wide) */
    mp.npu_flags = ORK_NPU_EXEC_NO_PACK | ORK_NPU_EXEC_QUIET;
    struct ork_model *m = NULL;
    if (ork_model_load(path, &mp, &m) < 0)
        fprintf(stderr, "load %s: %s\n", path, ork_error_message());
    return m;
}

static struct ork_session *session(struct ork_model *m)
{
    struct ork_session_params sp;
    ork_session_params_default(&sp);
    sp.ctx_size = 32;
    sp.n_batch = 16;
    sp.n_threads = 1;
    struct ork_session *s = NULL;
    if (ork_session_create(m, &sp, &s) < 0)
        fprintf(stderr, "session: %s\n", ork_error_message());
    return s;
}

/* Index of the plan size of `rows` rows in the stats, or -1. */
static int size_index(const struct ork_npu_exec_stats *st, uint32_t rows)
{
    for (uint32_t i = 0; i < st->n_prog_sizes; i++)
        if (st->prog_rows[i] == rows)
            return (int)i;
    return -1;
}

/* Only plan size `want` ran since the last reset (and it did). */
static bool only_size_ran(const struct ork_model *m, uint32_t want)
{
    struct ork_npu_exec_stats st;
    if (ork_model_npu_stats(m, &st) < 0)
        return false;
    int w = size_index(&st, want);
    bool ok = w >= 0 && st.prog_runs[w] > 0;
    for (uint32_t i = 0; i < st.n_prog_sizes; i++) {
        if ((int)i != w && st.prog_runs[i]) {
            printf("  plan of %u rows ran %llu times (want only %u)\n", st.prog_rows[i],
                   (unsigned long long)st.prog_runs[i], want);
            ok = false;
        }
    }
    return ok;
}

/* n sessions holding PREFIX tokens each, then their next tokens decoded together (multi) or
 * one at a time; logits (n, nv) of that step. Plan runs counted over the step only. */
static int step(struct ork_model *m, int n, bool multi, float *logits, int nv)
{
    struct ork_session *s[MAX_SEQ] = { 0 };
    int32_t next[MAX_SEQ];
    int ret = 0;
    for (int i = 0; i < n && ret == 0; i++) {
        if (!(s[i] = session(m)))
            ret = -1;
        else
            ret = ork_model_eval(s[i], toks[i], PREFIX, 0, NULL, 0);
        next[i] = toks[i][PREFIX];
    }
    ork_model_npu_stats_reset(m);
    if (ret == 0 && multi)
        ret = ork_model_eval_multi(s, next, n, logits);
    for (int i = 0; i < n && ret == 0 && !multi; i++)
        ret = ork_model_eval(s[i], &next[i], 1, PREFIX, logits + (size_t)i * nv, 0);
    for (int i = 0; i < n; i++)
        ork_session_free(s[i]);
    return ret;
}

/* One session's batch of n tokens (its first n of the flattened rows) as one forward, or
 * one token at a time; every row's logits (n, nv). */
static int batch(struct ork_model *m, int n, bool one_by_one, float *logits, int nv)
{
    struct ork_session *s = session(m);
    if (!s)
        return -1;
    const int32_t *t = &toks[0][0];
    ork_model_npu_stats_reset(m);
    int ret = 0;
    if (!one_by_one)
        ret = ork_model_eval(s, t, n, 0, logits, ORK_EVAL_ALL_LOGITS);
    for (int i = 0; i < n && ret == 0 && one_by_one; i++)
        ret = ork_model_eval(s, &t[i], 1, i, logits + (size_t)i * nv, 0);
    ork_session_free(s);
    return ret;
}

static uint32_t fitting(int n)
{
    uint32_t r = 1;
    while (r < (uint32_t)n)
        r *= 2;
    return r;
}

static void check_model(const char *rel)
{
    char path[4096];
    snprintf(path, sizeof path, "%s", ork_test_fixture(rel));
    struct ork_model *m = load(path, 0), *two = load(path, 1);
    REQUIRE(m && two);
    int nv = ork_model_config(m)->n_vocab;
    struct ork_npu_exec_stats st;
    REQUIRE(ork_model_npu_stats(m, &st) == 0);
    static const uint32_t want_sizes[] = { 1, 2, 4, 8, 16, 32, 64 };
    CHECK_EQ_INT(st.n_prog_sizes, 7);
    for (uint32_t i = 0; i < 7 && i < st.n_prog_sizes; i++) {
        CHECK_EQ_INT(st.prog_rows[i], want_sizes[i]);
        CHECK(st.prog_bytes[i] > 0 && st.prog_regcmd_bytes[i] > 0);
        printf("%s: plans of %2u rows: %8.1f KiB device (%6.1f KiB regcmd)\n", rel,
               st.prog_rows[i], st.prog_bytes[i] / 1024.0, st.prog_regcmd_bytes[i] / 1024.0);
    }
    CHECK_EQ_INT(st.prog_missing, 0);
    struct ork_npu_exec_stats s2;
    REQUIRE(ork_model_npu_stats(two, &s2) == 0);
    CHECK_EQ_INT(s2.n_prog_sizes, 2);
    CHECK(s2.prog_rows[0] == 1 && s2.prog_rows[1] == 64);

    float *a = malloc((size_t)MAX_SEQ * nv * sizeof(float));
    float *b = malloc((size_t)MAX_SEQ * nv * sizeof(float));
    float *c = malloc((size_t)MAX_SEQ * nv * sizeof(float));
    REQUIRE(a && b && c);
    static const int ms[] = { 3, 5, 8 };
    for (size_t k = 0; k < sizeof ms / sizeof ms[0]; k++) {
        int n = ms[k];
        size_t bytes = (size_t)n * nv * sizeof(float);
        /* n sequences decoding together */
        REQUIRE(step(m, n, false, b, nv) == 0);
        CHECK(only_size_ran(m, 1));
        REQUIRE(step(m, n, true, a, nv) == 0);
        CHECK(only_size_ran(m, fitting(n)));
        REQUIRE(ork_model_npu_stats(m, &st) == 0);
        REQUIRE(step(two, n, true, c, nv) == 0);
        CHECK(only_size_ran(two, 64));
        REQUIRE(ork_model_npu_stats(two, &s2) == 0);
        printf("%s: M=%d together: plan of %u rows, modelled NPU %.4f ms (%.4f ms on the "
               "64-row plan)\n", rel, n, fitting(n), st.model_npu_ms, s2.model_npu_ms);
        CHECK(memcmp(a, b, bytes) == 0);
        CHECK(memcmp(c, b, bytes) == 0);
        CHECK(st.model_npu_ms < s2.model_npu_ms);
        /* one sequence's n-token batch against its tokens one at a time */
        REQUIRE(batch(m, n, true, b, nv) == 0);
        REQUIRE(batch(m, n, false, a, nv) == 0);
        CHECK(only_size_ran(m, fitting(n)));
        CHECK(memcmp(a, b, bytes) == 0);
    }
    free(a);
    free(b);
    free(c);
    ork_model_free(two);
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
