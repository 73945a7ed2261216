/* test_npu_int8_keep.c -- mixed precision: the tensors --npu-weights-int8 SPEC keeps on int8
 * under w4a8 and dcomp (src/engine/npu/weights_keep.c; docs/w4a8.md "Mixed precision"):
 *   - which slots a SPEC names: classes, `all`, single layers, ranges, negative layers, the
 *     LM head; nothing under int8 or without a SPEC; the pack identity;
 *   - bad SPECs refused naming the item (syntax without a model, layers at load);
 *   - on the simulator with stories260K: w4a8 and dcomp:7 with `all` give int8's logits bit
 *     for bit; w4a8 with `output` equals its raw-codes run bit for bit, differs from both pure
 *     settings, and holds device bytes between them;
 *   - a pack records the SPEC: its kept entries are raw int8 (grid 127), the rest W4A8; it
 *     loads into the in-memory logits; another SPEC or none meets it as built for other
 *     weights;
 *   - the DCOMP fallback (a decompressor no faster than raw int8) drops the SPEC with the rest:
 *     int8's logits;
 *   - the CLI refuses a bad SPEC naming it, exit status non-zero. */
#include "ork_test.h"
#include "npu_greedy.h"

#include "engine/npu/npu_priv.h"

#include <ork-engine/engine.h>
#include <ork-engine/orkpack.h>
#include <ork/error.h>

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define N_DECODE 4
#define N_VOCAB 512         /* stories260K */
#define N_LAYERS 5          /* stories260K */
#define LOGITS_N ((size_t)(N_DECODE + 1) * N_VOCAB)

static const int32_t prompt[] = { 1, 403, 407, 261, 378 };
#define N_PROMPT ((int)(sizeof prompt / sizeof prompt[0]))

static bool keeps(const char *spec, uint32_t enc, enum ork__npu_op op, int32_t layer)
{
    struct ork_npu_weights_opts o = { .encoding = enc, .int8_tensors = spec };
    struct pack_src ps = { .op = op, .layer = layer, .n_layers = N_LAYERS };
    if (op == ORK__NPU_LM_HEAD)
        ps.layer = N_LAYERS;
    return ork__npu_keep_int8(&o, &ps);
}

static void test_decision(void)
{
    const uint32_t w4 = ORK_NPU_WENC_W4A8;
    CHECK(keeps("output", w4, ORK__NPU_LM_HEAD, 0));
    CHECK(!keeps("output", w4, ORK__NPU_DOWN, 0));
    CHECK(!keeps(NULL, w4, ORK__NPU_LM_HEAD, 0));
    CHECK(!keeps("all", ORK_NPU_WENC_INT8, ORK__NPU_QKV, 0));       /* int8: all int8 anyway */
    CHECK(keeps("all", ORK_NPU_WENC_DCOMP, ORK__NPU_LM_HEAD, 0));
    for (int32_t l = 0; l < N_LAYERS; l++) {
        CHECK(keeps("down", w4, ORK__NPU_DOWN, l));
        CHECK(!keeps("down", w4, ORK__NPU_GATE_UP, l));
        CHECK(keeps("down:1..2", w4, ORK__NPU_DOWN, l) == (l == 1 || l == 2));
        CHECK(keeps("down:-1", w4, ORK__NPU_DOWN, l) == (l == N_LAYERS - 1));
        CHECK(keeps("qkv:-2..-1", w4, ORK__NPU_QKV, l) == (l >= N_LAYERS - 2));
        CHECK(keeps("o:1..-2", w4, ORK__NPU_O, l) == (l >= 1 && l <= N_LAYERS - 2));
        CHECK(keeps("all:0", w4, ORK__NPU_GATE_UP, l) == (l == 0));
        CHECK(keeps("qkv,down:3", w4, ORK__NPU_DOWN, l) == (l == 3));
        CHECK(keeps("qkv,down:3", w4, ORK__NPU_QKV, l));
    }
    CHECK(!keeps("all:0..4", w4, ORK__NPU_LM_HEAD, 0));  /* layers: not the head */
    CHECK(keeps("all", w4, ORK__NPU_LM_HEAD, 0));
    /* the pack identity: none is 0, two SPECs differ */
    struct ork_npu_weights_opts a = { .encoding = w4, .int8_tensors = "output" };
    struct ork_npu_weights_opts b = { .encoding = w4, .int8_tensors = "down" };
    struct ork_npu_weights_opts none = { .encoding = w4 };
    CHECK(ork__npu_keep_id(&a) != 0);
    CHECK(ork__npu_keep_id(&a) != ork__npu_keep_id(&b));
    CHECK_EQ_INT(ork__npu_keep_id(&none), 0);
}

static void test_bad_specs(void)
{
    const struct {
        const char *spec;
        uint32_t enc;
        const char *says;
    } bad[] = {
        { "bogus", ORK_NPU_WENC_W4A8, "'bogus' is not a tensor class" },
        { "", ORK_NPU_WENC_W4A8, "empty" },
        { "down,,o", ORK_NPU_WENC_W4A8, "an empty item" },
        { "down,", ORK_NPU_WENC_W4A8, "an empty item" },
        { "output:1", ORK_NPU_WENC_W4A8, "output (the LM head) has no layers" },
        { "down:x", ORK_NPU_WENC_W4A8, "layers must be L or A..B" },
        { "down:1..", ORK_NPU_WENC_W4A8, "layers must be L or A..B" },
        { "down:99999", ORK_NPU_WENC_W4A8, "layers must be L or A..B" },
        { "down:3..1", ORK_NPU_WENC_W4A8, "the range runs backwards" },
        { "down:-1..-2", ORK_NPU_WENC_DCOMP, "the range runs backwards" },
        { "Down", ORK_NPU_WENC_W4A8, "'Down' is not a tensor class" },
        { "output", ORK_NPU_WENC_INT8, "needs a coarser setting" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct ork_npu_weights_opts o = { .encoding = bad[i].enc, .int8_tensors = bad[i].spec };
        CHECK(ork__npu_wenc_check(&o) == ORK_EINVAL);
        CHECK(strstr(ork_error_message(), bad[i].says) != NULL);
        if (!strstr(ork_error_message(), bad[i].says))
            printf("  '%s': %s\n", bad[i].spec, ork_error_message());
    }
    const char *outside[] = { "down:5", "down:-6", "qkv:2..5", "o:4..-3" };
    for (size_t i = 0; i < sizeof outside / sizeof outside[0]; i++) {
        struct ork_npu_weights_opts o = { .encoding = ORK_NPU_WENC_W4A8,
                                          .int8_tensors = outside[i] };
        CHECK(ork__npu_wenc_check(&o) == 0);
        CHECK(ork__npu_keep_check_layers(&o, N_LAYERS) == ORK_EINVAL);
        CHECK(strstr(ork_error_message(), "outside the model's 0..4") != NULL);
    }
    struct ork_npu_weights_opts ok = { .encoding = ORK_NPU_WENC_W4A8,
                                       .int8_tensors = "down:-5..4,output,all:0" };
    CHECK(ork__npu_wenc_check(&ok) == 0);
    CHECK(ork__npu_keep_check_layers(&ok, N_LAYERS) == 0);
    /* the load refuses it too: no silent w4a8 */
    const struct ork_npu_weights_opts wo = { .encoding = ORK_NPU_WENC_W4A8,
                                             .int8_tensors = "down:7" };
    npu_check_load_refused("models/stories260K.gguf", &wo);
}

static int run_greedy(const char *path, uint32_t flags, const char *pack_path,
                      const struct ork_npu_weights_opts *wo, float *out, uint64_t *resident)
{
    struct ork_model_params mp;
    npu_greedy_params(&mp, "sim", flags, wo);
    mp.npu_pack_path = pack_path;
    return npu_greedy_run(path, &mp, prompt, N_PROMPT, N_DECODE, N_VOCAB, NULL, out, NULL,
                          resident);
}

static bool same(const float *a, const float *b)
{
    return memcmp(a, b, LOGITS_N * sizeof(float)) == 0;
}

static void test_logits(void)
{
    const char *path = ork_test_fixture("models/stories260K.gguf");
    float *i8 = malloc(LOGITS_N * sizeof(float)), *w4 = malloc(LOGITS_N * sizeof(float));
    float *a = malloc(LOGITS_N * sizeof(float)), *b = malloc(LOGITS_N * sizeof(float));
    REQUIRE(i8 && w4 && a && b);
    uint64_t by_i8 = 0, by_w4 = 0, by_mix = 0;
    REQUIRE(run_greedy(path, ORK_NPU_EXEC_NO_PACK, NULL, NULL, i8, &by_i8) == 0);
    const struct ork_npu_weights_opts pure = { .encoding = ORK_NPU_WENC_W4A8 };
    REQUIRE(run_greedy(path, ORK_NPU_EXEC_NO_PACK, NULL, &pure, w4, &by_w4) == 0);
    /* every tensor kept: int8's codes, bit for bit, under either coarse setting */
    const struct ork_npu_weights_opts all4 = { .encoding = ORK_NPU_WENC_W4A8,
                                               .int8_tensors = "all" };
    REQUIRE(run_greedy(path, ORK_NPU_EXEC_NO_PACK, NULL, &all4, a, NULL) == 0);
    CHECK(same(a, i8));
    const struct ork_npu_weights_opts alld = { .encoding = ORK_NPU_WENC_DCOMP, .levels = 7,
                                               .int8_tensors = "qkv,o,gate_up,down,output" };
    REQUIRE(run_greedy(path, ORK_NPU_EXEC_NO_PACK, NULL, &alld, a, NULL) == 0);
    CHECK(same(a, i8));
    /* the head kept: the int4 MAC's run equals the same codes raw; neither pure setting */
    const struct ork_npu_weights_opts head = { .encoding = ORK_NPU_WENC_W4A8,
                                               .int8_tensors = "output" };
    const struct ork_npu_weights_opts head_raw = { .encoding = ORK_NPU_WENC_W4A8,
                                                   .flags = ORK_NPU_WENC_RAW_CODES,
                                                   .int8_tensors = "output" };
    REQUIRE(run_greedy(path, ORK_NPU_EXEC_NO_PACK, NULL, &head, a, &by_mix) == 0);
    REQUIRE(run_greedy(path, ORK_NPU_EXEC_NO_PACK, NULL, &head_raw, b, NULL) == 0);
    CHECK(same(a, b));
    CHECK(!same(a, i8));
    CHECK(!same(a, w4));
    printf("  device bytes: w4a8 %llu, w4a8 + int8 output %llu, int8 %llu\n",
           (unsigned long long)by_w4, (unsigned long long)by_mix, (unsigned long long)by_i8);
    CHECK(by_w4 < by_mix && by_mix < by_i8);
    free(i8);
    free(w4);
    free(a);
    free(b);
}

/* A decompressor of 8 GB/s a core is slower than a core's DRAM share (docs/dcomp.md
 * "Fallback"): dcomp:7 with a SPEC loads as int8. */
static void test_fallback(void)
{
    const char *path = ork_test_fixture("models/stories260K.gguf");
    float *i8 = malloc(LOGITS_N * sizeof(float)), *a = malloc(LOGITS_N * sizeof(float));
    REQUIRE(i8 && a);
    REQUIRE(run_greedy(path, ORK_NPU_EXEC_NO_PACK, NULL, NULL, i8, NULL) == 0);
    const struct ork_npu_weights_opts wo = { .encoding = ORK_NPU_WENC_DCOMP, .levels = 7,
                                             .int8_tensors = "output" };
    struct ork_model_params mp;
    npu_greedy_params(&mp, "sim", ORK_NPU_EXEC_NO_PACK, &wo);
    mp.sim_dcomp_gbps = 8.0;
    REQUIRE(npu_greedy_run(path, &mp, prompt, N_PROMPT, N_DECODE, N_VOCAB, NULL, a, NULL,
                           NULL) == 0);
    CHECK(same(a, i8));
    free(i8);
    free(a);
}

static char g_dir[256];

static void test_pack(void)
{
    char model[512], pack[512];
    REQUIRE(npu_pack_paths(g_dir, "models/stories260K.gguf", model, pack, sizeof model) == 0);
    const struct ork_npu_weights_opts wo = { .encoding = ORK_NPU_WENC_W4A8,
                                             .int8_tensors = "output,down:0" };
    float *ref = malloc(LOGITS_N * sizeof(float)), *got = malloc(LOGITS_N * sizeof(float));
    REQUIRE(ref && got);
    REQUIRE(run_greedy(model, ORK_NPU_EXEC_NO_PACK, NULL, &wo, ref, NULL) == 0);
    enum ork_orkpack_problem found;
    REQUIRE(ork_orkpack_build_for_model(model, pack, &wo, NULL, false, true, &found) == 0);
    struct ork_orkpack *pk;
    REQUIRE(ork_orkpack_open(pack, NULL, NULL, &pk, NULL) == 0);
    uint32_t n_i8 = 0, n_w4 = 0;
    for (uint32_t i = 0; i < ork_orkpack_n_tensors(pk); i++) {
        struct ork_orkpack_tensor t;
        REQUIRE(ork_orkpack_tensor_at(pk, i, &t) == 0);
        bool kept = !strcmp(t.name, "output") || !strcmp(t.name, "blk.0.ffn_down");
        if (t.coding.grid == ORK__NPU_INT8_GRID) {
            n_i8++;
            CHECK(kept);
            CHECK_EQ_INT(t.coding.encoding, ORK_ORKPACK_ENC_RAW);
        } else {
            n_w4++;
            CHECK(!kept);
            CHECK_EQ_INT(t.coding.encoding, ORK_ORKPACK_ENC_W4A8);
        }
    }
    printf("  pack: %u tensors int8, %u w4a8\n", n_i8, n_w4);
    CHECK_EQ_INT(n_i8, 2);
    CHECK_EQ_INT(n_w4, ork_orkpack_n_tensors(pk) - 2);
    ork_orkpack_close(pk);
    CHECK(ork_orkpack_check_for_model(model, pack, &wo) == 0);
    REQUIRE(run_greedy(model, 0, pack, &wo, got, NULL) == 0);       /* from the pack */
    CHECK(same(ref, got));
    const struct ork_npu_weights_opts other = { .encoding = ORK_NPU_WENC_W4A8,
                                                .int8_tensors = "output" };
    const struct ork_npu_weights_opts none = { .encoding = ORK_NPU_WENC_W4A8 };
    CHECK(ork_orkpack_check_for_model(model, pack, &other) < 0);
    CHECK(strstr(ork_error_message(), "built for other NPU weights") != NULL);
    CHECK(strstr(ork_error_message(), "int8 tensors") != NULL);
    printf("  %s\n", ork_error_message());
    CHECK(ork_orkpack_check_for_model(model, pack, &none) < 0);
    CHECK(strstr(ork_error_message(), "built for other NPU weights") != NULL);
    free(ref);
    free(got);
    unlink(pack);
    unlink(model);
}

/* The CLI: a bad SPEC fails the load naming it. */
static void test_cli(void)
{
    const char *path = ork_test_fixture("models/stories260K.gguf");
    const struct {
        const char *args, *says;
    } cases[] = {
        { "--npu-weights w4a8 --npu-weights-int8 ffn", "'ffn' is not a tensor class" },
        { "--npu-weights w4a8 --npu-weights-int8 down:9", "outside the model's 0..4" },
        { "--npu-weights-int8 down", "needs a coarser setting" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "%s %s/ork run -m '%s' --device sim --no-pack %s -p a -n 1 "
                 "-t 1 2>&1 >/dev/null", ORK_TEST_RUNNER, ORK_BINARY_DIR, path, cases[i].args);
        char out[4096];
        int st = ork_test_shell(cmd, out, sizeof out);
        CHECK(st != 0);
        CHECK(strstr(out, cases[i].says) != NULL);
    }
}

int main(void)
{
    snprintf(g_dir, sizeof g_dir, "/tmp/ork-test-int8-keep.%ld", (long)getpid());
    mkdir(g_dir, 0700);
    RUN(test_decision);
    RUN(test_bad_specs);
    RUN(test_logits);
    RUN(test_fallback);
    RUN(test_pack);
    RUN(test_cli);
    rmdir(g_dir);
    return ork_test_done();
}
