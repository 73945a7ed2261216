/* test_npu_dcomp_policy.c -- the DCOMP fallback (src/engine/npu/weights_policy.c; docs/dcomp.md
 * "Fallback") on the simulator with stories260K:
 *   - --npu-weights dcomp:15 with a decompressor of 8 GB/s a core (below a core's DRAM share
 *     with three cores streaming, 28.5 / 3 = 9.5 GB/s) falls back to int8: one warning naming
 *     both rates, int8's logits bit for bit;
 *   - at 16 GB/s, at the table's 11 GB/s, and at 8 GB/s with force, DCOMP stays: the logits
 *     are dcomp:15's codes (those of the raw codes, which need no decompressor), not int8's,
 *     and nothing is logged; the raw codes at 8 GB/s are kept too (no decompressor involved);
 *   - a board's rate is known only from a calibration that sets npu_dcomp_gbps to a value of
 *     its own: unknown without a file, with a file that lacks it or repeats the table's guess.
 * Modelled rates only; no host timing. */
#include "ork_test.h"
#include "npu_greedy.h"

#include "engine/npu/weights_policy.h"

#include <ork-engine/engine.h>
#include <ork/error.h>
#include <ork/log.h>

#include <stdlib.h>
#include <string.h>

#define N_DECODE 4
#define N_VOCAB 512         /* stories260K */
#define LOGITS_N ((size_t)(N_DECODE + 1) * N_VOCAB)
#define WHY "DCOMP cannot win"

static const int32_t prompt[] = { 1, 403, 407, 261, 378 };
#define N_PROMPT ((int)(sizeof prompt / sizeof prompt[0]))

static int n_lines;
static char last_line[1024];

static void capture(void *user, enum ork_log_level level, const char *msg)
{
    (void)user;
    if (level >= ORK_LOG_WARN && strstr(msg, WHY)) {
        n_lines++;
        snprintf(last_line, sizeof last_line, "%s", msg);
    }
}

/* The prompt's last logits and N_DECODE greedy steps' into out; 0 or an error. */
static int run(const char *path, const struct ork_npu_weights_opts *wo, double gbps, float *out)
{
    struct ork_model_params mp;
    npu_greedy_params(&mp, "sim", ORK_NPU_EXEC_NO_PACK, wo);
    mp.sim_dcomp_gbps = gbps;
    return npu_greedy_run(path, &mp, prompt, N_PROMPT, N_DECODE, N_VOCAB, NULL, out, NULL, NULL);
}

static bool same(const float *a, const float *b)
{
    return memcmp(a, b, LOGITS_N * sizeof(float)) == 0;
}

static void test_fallback_on_the_sim(void)
{
    const char *path = ork_test_fixture("models/stories260K.gguf");
    float *i8 = malloc(LOGITS_N * sizeof(float)), *raw = malloc(LOGITS_N * sizeof(float));
    float *out = malloc(LOGITS_N * sizeof(float));
    REQUIRE(i8 && raw && out);
    ork_log_set(capture, NULL);
    REQUIRE(run(path, NULL, 0, i8) == 0);
    struct ork_npu_weights_opts wo = { .encoding = ORK_NPU_WENC_DCOMP, .levels = 15,
                                       .flags = ORK_NPU_WENC_RAW_CODES };
    REQUIRE(run(path, &wo, 8, raw) == 0);           /* no decompressor: kept */
    CHECK_EQ_INT(n_lines, 0);
    CHECK(!same(raw, i8));                           /* another grid, other codes */

    wo.flags = 0;
    n_lines = 0;
    REQUIRE(run(path, &wo, 8, out) == 0);
    CHECK_EQ_INT(n_lines, 1);
    printf("  8 GB/s: %s\n", last_line);
    CHECK(strstr(last_line, "8 GB/s") != NULL && strstr(last_line, "9.5 GB/s") != NULL);
    CHECK(strstr(last_line, "--npu-weights-force") != NULL);
    CHECK(same(out, i8));

    const double kept[] = { 16, 0 /* the table's 11 */ };
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++) {
        n_lines = 0;
        REQUIRE(run(path, &wo, kept[i], out) == 0);
        CHECK_EQ_INT(n_lines, 0);
        CHECK(same(out, raw));
    }
    wo.force = true;
    n_lines = 0;
    REQUIRE(run(path, &wo, 8, out) == 0);
    CHECK_EQ_INT(n_lines, 0);
    CHECK(same(out, raw));
    ork_log_set(NULL, NULL);
    free(i8);
    free(raw);
    free(out);
}

static bool write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    bool ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok;
}

/* Where the rates come from, without a model. */
static void test_rates(void)
{
    struct ork_model_params p;
    ork_model_params_default(&p);
    struct ork__npu_wpolicy w;
    REQUIRE(ork__npu_wpolicy_rates(&p, true, &w) == 0);     /* sim: the table */
    CHECK(w.known);
    CHECK_NEAR(w.dcomp_bps, 11e9, 0);
    CHECK_NEAR(w.share_bps, 28.5e9 / 3, 1e-3);
    CHECK_EQ_INT(w.cores, 3);
    p.sim_dcomp_gbps = 8;
    REQUIRE(ork__npu_wpolicy_rates(&p, true, &w) == 0);
    CHECK_NEAR(w.dcomp_bps, 8e9, 0);
    REQUIRE(ork__npu_wpolicy_rates(&p, false, &w) == 0);    /* a board without a file */
    CHECK(!w.known);

    char dir[] = "/tmp/ork-policy-XXXXXX";
    REQUIRE(mkdtemp(dir));
    char f1[64], f2[64], f3[64];
    snprintf(f1, sizeof f1, "%s/measured.json", dir);
    snprintf(f2, sizeof f2, "%s/none.json", dir);
    snprintf(f3, sizeof f3, "%s/guess.json", dir);
    REQUIRE(write_file(f1, "{\"format\": \"ork-twin-calibration\", \"version\": 1, \"constants\": "
                           "{\"npu_dcomp_gbps\": 7.5, \"npu_bw_all\": 3.0e10}}"));
    REQUIRE(write_file(f2, "{\"format\": \"ork-twin-calibration\", \"version\": 1, \"constants\": "
                           "{\"npu_bw_all\": 3.0e10}}"));
    REQUIRE(write_file(f3, "{\"format\": \"ork-twin-calibration\", \"version\": 1, \"constants\": "
                           "{\"npu_dcomp_gbps\": 11}}"));
    p.sim_dcomp_gbps = 0;
    p.twin_calibration = f1;
    REQUIRE(ork__npu_wpolicy_rates(&p, false, &w) == 0);
    CHECK(w.known);
    CHECK_NEAR(w.dcomp_bps, 7.5e9, 0);
    CHECK_NEAR(w.share_bps, 10e9, 1e-3);                    /* min(11, 30 / 3) */
    p.twin_calibration = f2;
    REQUIRE(ork__npu_wpolicy_rates(&p, false, &w) == 0);
    CHECK(!w.known);
    REQUIRE(ork__npu_wpolicy_rates(&p, true, &w) == 0);     /* the sim: the table's rate */
    CHECK(w.known);
    CHECK_NEAR(w.share_bps, 10e9, 1e-3);
    p.twin_calibration = f3;
    REQUIRE(ork__npu_wpolicy_rates(&p, false, &w) == 0);
    CHECK(!w.known);
    p.twin_calibration = "/nonexistent/ork-calibration.json";
    CHECK(ork__npu_wpolicy_rates(&p, false, &w) < 0);
    CHECK(strstr(ork_error_message(), "/nonexistent/ork-calibration.json") != NULL);
    remove(f1);
    remove(f2);
    remove(f3);
    rmdir(dir);
}

/* The CLI: --npu-weights-force keeps DCOMP (no line), without it the load says why. */
static void test_cli_force(void)
{
    const char *path = ork_test_fixture("models/stories260K.gguf");
    for (int force = 0; force <= 1; force++) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "%s %s/ork run -m '%s' --device sim --sim-timing only "
                 "--no-pack --npu-weights dcomp:15 --sim-dcomp-gbps 8 %s -p a -n 1 -t 1 "
                 "2>&1 >/dev/null", ORK_TEST_RUNNER, ORK_BINARY_DIR, path,
                 force ? "--npu-weights-force" : "");
        static char out[16384];
        CHECK(ork_test_shell(cmd, out, sizeof out) == 0);
        CHECK((strstr(out, WHY) != NULL) == !force);
        CHECK(strstr(out, "dcomp:15") != NULL);     /* the load report or the warning */
    }
}

int main(void)
{
    RUN(test_rates);
    RUN(test_fallback_on_the_sim);
    RUN(test_cli_force);
    return ork_test_done();
}
