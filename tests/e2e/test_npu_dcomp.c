/* test_npu_dcomp.c -- the NPU weights' encoding in the executor (docs/dcomp.md "The executor"),
 * on the simulator with stories260K and its qwen3 variant:
 *   - weights stored as DCOMP streams give the same logits, bit for bit, as the same grid codes
 *     stored raw (ORK_NPU_WENC_RAW_CODES): for a prefill of 5 rows and 12 greedy decode steps,
 *     at L = 127, 31, 15, 7 and the per-tensor pick (the qwen3 variant: 31 and the pick); and
 *     the greedy tokens are the same;
 *   - dcomp:127 gives int8's logits (the same codes: max-abs onto +-127);
 *   - the compressed weights hold fewer device bytes than int8's, the coarser the fewer;
 *   - a device that has not confirmed ORK_NPU_FORM_DCOMP refuses dcomp with a message naming
 *     the capability and how to confirm it, and still takes the raw codes;
 *   - bad settings are refused with a message naming the value (engine), and the CLI names the
 *     value and the choices. */
#include "ork_test.h"
#include "npu_greedy.h"

#include <ork-engine/engine.h>
#include <ork/error.h>
#include <ork/npu.h>
#include <ork/sim.h>

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* The executor's checks (src/engine/npu/npu_priv.h, weights_grid.c). */
int ork__npu_wenc_check(const struct ork_npu_weights_opts *o);
int ork__npu_wenc_device_check(const struct ork_npu_weights_opts *o, struct ork_npu *npu);

#define N_DECODE 12
#define N_VOCAB 512         /* stories260K */

static const int32_t prompt[] = { 1, 403, 407, 261, 378 };
#define N_PROMPT ((int)(sizeof prompt / sizeof prompt[0]))

/* Logits of the prompt's last row then of N_DECODE greedy steps (out: (N_DECODE + 1) x 512),
 * the tokens chosen, and the resident bytes; 0 or an error. */
static int run_greedy(const char *path, const struct ork_npu_weights_opts *wo, float *out,
                      int32_t *toks, uint64_t *resident)
{
    struct ork_model_params mp;
    npu_greedy_params(&mp, "sim", ORK_NPU_EXEC_NO_PACK, wo);
    return npu_greedy_run(path, &mp, prompt, N_PROMPT, N_DECODE, N_VOCAB, NULL, out, toks,
                          resident);
}

#define LOGITS_N ((size_t)(N_DECODE + 1) * N_VOCAB)

/* Each grid of levels[0..n) (0: the per-tensor pick) compressed vs raw codes, against int8. */
static void check_model(const char *rel, const uint32_t *levels, size_t n)
{
    const char *path = ork_test_fixture(rel);
    float *a = malloc(LOGITS_N * sizeof(float)), *b = malloc(LOGITS_N * sizeof(float));
    float *i8 = malloc(LOGITS_N * sizeof(float));
    REQUIRE(a && b && i8);
    int32_t ta[N_DECODE], tb[N_DECODE], t8[N_DECODE];
    uint64_t bytes_i8 = 0, prev = UINT64_MAX;
    REQUIRE(run_greedy(path, NULL, i8, t8, &bytes_i8) == 0);
    for (size_t g = 0; g < n; g++) {
        struct ork_npu_weights_opts wo = { .encoding = ORK_NPU_WENC_DCOMP, .levels = levels[g] };
        uint64_t bytes = 0;
        REQUIRE(run_greedy(path, &wo, a, ta, &bytes) == 0);
        wo.flags = ORK_NPU_WENC_RAW_CODES;
        REQUIRE(run_greedy(path, &wo, b, tb, NULL) == 0);
        printf("  %s L%u: %llu device bytes (int8 %llu); tokens %d %d %d ...\n", rel, levels[g],
               (unsigned long long)bytes, (unsigned long long)bytes_i8, ta[0], ta[1], ta[2]);
        CHECK(memcmp(a, b, LOGITS_N * sizeof(float)) == 0);   /* lossless over the codes */
        CHECK(memcmp(ta, tb, sizeof ta) == 0);
        CHECK(bytes < bytes_i8);
        if (levels[g]) {
            CHECK(bytes <= prev);                               /* coarser, fewer bytes */
            prev = bytes;
        }
        if (levels[g] == 127) {
            CHECK(memcmp(a, i8, LOGITS_N * sizeof(float)) == 0); /* int8's codes */
            CHECK(memcmp(ta, t8, sizeof ta) == 0);
        }
        if (levels[g] == 7)
            CHECK(memcmp(a, i8, LOGITS_N * sizeof(float)) != 0); /* another grid, other codes */
    }
    free(a);
    free(b);
    free(i8);
}

static void test_compressed_equals_raw(void)
{
    static const uint32_t levels[] = { 127, 31, 15, 7, 0 };
    check_model("models/stories260K.gguf", levels, 5);
}

static void test_compressed_equals_raw_qwen3(void)
{
    static const uint32_t levels[] = { 31, 0 };     /* the same weights: two grids suffice */
    check_model("models/stories260K-qwen3.gguf", levels, 2);
}

static void test_capability(void)
{
    struct ork_sim_opts so = { .struct_size = sizeof so, .deny_dcomp = true };
    struct ork_npu_opts o = { .struct_size = sizeof o, .device = "sim", .sim = &so };
    struct ork_npu *npu;
    REQUIRE(ork_npu_open(&o, &npu) == 0);
    CHECK(!(ork_npu_confirmed_forms(npu) & ORK_NPU_FORM_DCOMP));
    struct ork_npu_weights_opts wo = { .encoding = ORK_NPU_WENC_DCOMP, .levels = 15 };
    CHECK(ork__npu_wenc_device_check(&wo, npu) == ORK_EUNSUPPORTED);
    const char *msg = ork_error_message();
    printf("  %s\n", msg);
    CHECK(strstr(msg, "ORK_NPU_FORM_DCOMP") != NULL);
    CHECK(strstr(msg, "ork selftest --confirm-forms") != NULL);
    CHECK(strstr(msg, "--npu-caps") != NULL);
    wo.flags = ORK_NPU_WENC_RAW_CODES;          /* the raw codes need no decompressor */
    CHECK(ork__npu_wenc_device_check(&wo, npu) == 0);
    CHECK(ork__npu_wenc_device_check(NULL, npu) == 0);
    ork_npu_close(npu);
    REQUIRE(ork_npu_open(&(struct ork_npu_opts){ .struct_size = sizeof o, .device = "sim" },
                         &npu) == 0);
    wo.flags = 0;
    CHECK(ork__npu_wenc_device_check(&wo, npu) == 0);   /* the simulator confirms it */
    ork_npu_close(npu);
}

static void test_bad_settings(void)
{
    const struct {
        struct ork_npu_weights_opts wo;
        const char *says;
    } bad[] = {
        { { .encoding = 9 }, "unknown encoding 9" },
        { { .encoding = ORK_NPU_WENC_DCOMP, .levels = 9 }, "grid 9" },
        { { .encoding = ORK_NPU_WENC_INT8, .levels = 31 }, "need dcomp" },
        { { .encoding = ORK_NPU_WENC_DCOMP, .max_rel_rmse = 1.5 }, "1.5" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(ork__npu_wenc_check(&bad[i].wo) == ORK_EINVAL);
        CHECK(strstr(ork_error_message(), bad[i].says) != NULL);
    }
    npu_check_load_refused("models/stories260K.gguf", &bad[1].wo);  /* no silent int8 */
}

/* The CLI: a bad --npu-weights value names the value and the choices (exit 2). */
static void test_cli_values(void)
{
    static const char *const vals[] = { "dcomp:9", "int4", "dcomp:", "dcomp:31x" };
    npu_check_bad_weights_values(vals, sizeof vals / sizeof vals[0],
                                 "int8, dcomp or dcomp:L with L one of 7, 15, 31, 63, 127");
}

/* On the CPU the setting has nothing to act on: the load says so instead of ignoring it --
 * an encoding, or int8 with only a flag (the rotation). */
static void cpu_note(const char *path, const char *weights)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s/ork run -m '%s' --device cpu %s -p a -n 1 -t 1 "
             "2>&1 >/dev/null", ORK_TEST_RUNNER, ORK_BINARY_DIR, path, weights);
    char out[4096];
    CHECK(ork_test_shell(cmd, out, sizeof out) == 0);
    CHECK(strstr(out, "--npu-weights applies to NPU weights") != NULL);
}

static void test_cpu_note(void)
{
    const char *path = ork_test_fixture("models/stories260K.gguf");
    if (!path)
        return;
    cpu_note(path, "--npu-weights dcomp:31");
    cpu_note(path, "--npu-weights int8 --npu-weights-rotate");
}

int main(void)
{
    RUN(test_capability);
    RUN(test_bad_settings);
    RUN(test_cli_values);
    RUN(test_cpu_note);
    RUN(test_compressed_equals_raw);
    RUN(test_compressed_equals_raw_qwen3);
    return ork_test_done();
}
