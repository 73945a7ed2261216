/* test_npu_w4a8.c -- the engine's W4A8 weights (--npu-weights w4a8; docs/w4a8.md "Engine"), on
 * the simulator with stories260K and its qwen3 variant:
 *   - a w4a8 run (int4 codes on the int4 MAC, each int8 activation split into two int4 rows by
 *     libork) gives the same logits, bit for bit, as the same [-8, 7] codes run as raw int8
 *     (w4a8 with ORK_NPU_WENC_RAW_CODES): a 5-row prefill and 6 greedy steps, max-abs and
 *     clipped scales, with and without the rotation of K (the qwen3 variant: max-abs, and
 *     clipped and rotated); the greedy tokens are the same; the
 *     codes use -8 (w4a8_codes.c's asymmetric scale), so they are not dcomp:7's [-7, 7];
 *   - the int4 weights hold fewer device bytes than int8's;
 *   - a w4a8 pack holds W4A8 tensors on grid 7 (libork's blob) and loads into the in-memory
 *     logits; an int8 run meets it as built for other NPU weights and rebuilds it;
 *   - a device that has not confirmed ORK_NPU_FORM_W4A8 refuses w4a8 naming the capability and
 *     how to confirm it (and the model load fails, no silent int8);
 *   - bad settings and CLI values are refused naming them. */
#include "ork_test.h"
#include "npu_greedy.h"

#include <ork-engine/engine.h>
#include <ork-engine/orkpack.h>
#include <ork/error.h>
#include <ork/npu.h>
#include <ork/sim.h>

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The executor's checks (src/engine/npu/npu_priv.h, weights_grid.c). */
int ork__npu_wenc_check(const struct ork_npu_weights_opts *o);
int ork__npu_wenc_device_check(const struct ork_npu_weights_opts *o, struct ork_npu *npu);

#define N_DECODE 6
#define N_VOCAB 512         /* stories260K */
#define LOGITS_N ((size_t)(N_DECODE + 1) * N_VOCAB)

static const int32_t prompt[] = { 1, 403, 407, 261, 378 };
#define N_PROMPT ((int)(sizeof prompt / sizeof prompt[0]))

/* Logits of the prompt's last row then of N_DECODE greedy steps (out: (N_DECODE + 1) x 512),
 * the tokens chosen and the resident bytes; flags: executor flags (NO_PACK, or 0 and the pack
 * at pack_path). */
static int run_greedy(const char *path, uint32_t flags, const char *pack_path,
                      const struct ork_npu_weights_opts *wo, float *out, int32_t *toks,
                      uint64_t *resident)
{
    struct ork_model_params mp;
    npu_greedy_params(&mp, "sim", flags, wo);
    mp.npu_pack_path = pack_path;
    return npu_greedy_run(path, &mp, prompt, N_PROMPT, N_DECODE, N_VOCAB, NULL, out, toks,
                          resident);
}

/* w4a8 (flags variants[0..nv): clip, rotate) vs its codes stored raw with the same flags,
 * against int8's and (unflagged) dcomp:7's, the symmetric [-7, 7], logits, and int8's bytes. */
static void check_model(const char *rel, const uint32_t *variants, size_t nv)
{
    const char *path = ork_test_fixture(rel);
    float *a = malloc(LOGITS_N * sizeof(float)), *b = malloc(LOGITS_N * sizeof(float));
    float *i8 = malloc(LOGITS_N * sizeof(float)), *d7 = malloc(LOGITS_N * sizeof(float));
    REQUIRE(a && b && i8 && d7);
    int32_t ta[N_DECODE], tb[N_DECODE], t8[N_DECODE], t7[N_DECODE];
    uint64_t bytes_i8 = 0;
    REQUIRE(run_greedy(path, ORK_NPU_EXEC_NO_PACK, NULL, NULL, i8, t8, &bytes_i8) == 0);
    const struct ork_npu_weights_opts sym = { .encoding = ORK_NPU_WENC_DCOMP, .levels = 7,
                                              .flags = ORK_NPU_WENC_RAW_CODES };
    REQUIRE(run_greedy(path, ORK_NPU_EXEC_NO_PACK, NULL, &sym, d7, t7, NULL) == 0);
    for (size_t v = 0; v < nv; v++) {
        struct ork_npu_weights_opts w4 = { .encoding = ORK_NPU_WENC_W4A8, .flags = variants[v] };
        struct ork_npu_weights_opts raw = { .encoding = ORK_NPU_WENC_W4A8,
                                            .flags = variants[v] | ORK_NPU_WENC_RAW_CODES };
        uint64_t bytes = 0;
        REQUIRE(run_greedy(path, ORK_NPU_EXEC_NO_PACK, NULL, &w4, a, ta, &bytes) == 0);
        REQUIRE(run_greedy(path, ORK_NPU_EXEC_NO_PACK, NULL, &raw, b, tb, NULL) == 0);
        printf("  %s flags 0x%x: %llu device bytes (int8 %llu); tokens %d %d %d ...\n", rel,
               variants[v], (unsigned long long)bytes, (unsigned long long)bytes_i8, ta[0],
               ta[1], ta[2]);
        CHECK(memcmp(a, b, LOGITS_N * sizeof(float)) == 0);   /* exact int32 A.W */
        CHECK(memcmp(ta, tb, sizeof ta) == 0);
        CHECK(memcmp(a, i8, LOGITS_N * sizeof(float)) != 0);  /* other codes than int8's */
        if (!variants[v])
            CHECK(memcmp(a, d7, LOGITS_N * sizeof(float)) != 0);  /* and than [-7, 7]'s */
        CHECK(bytes < bytes_i8);
    }
    free(a);
    free(b);
    free(i8);
    free(d7);
}

static void test_w4a8_equals_raw_codes(void)
{
    static const uint32_t v[] = { 0, ORK_NPU_WENC_CLIP, ORK_NPU_WENC_ROTATE,
                                  ORK_NPU_WENC_CLIP | ORK_NPU_WENC_ROTATE };
    check_model("models/stories260K.gguf", v, 4);
}

static void test_w4a8_equals_raw_codes_qwen3(void)
{
    static const uint32_t v[] = { 0, ORK_NPU_WENC_CLIP | ORK_NPU_WENC_ROTATE };
    check_model("models/stories260K-qwen3.gguf", v, 2);
}

static char g_dir[256];

/* A w4a8 pack: built, W4A8 tensors on grid 7, the in-memory logits from it; an int8 run meets it
 * as built for other NPU weights and rebuilds it. */
static void test_pack(void)
{
    char model[512], pack[512];
    REQUIRE(npu_pack_paths(g_dir, "models/stories260K.gguf", model, pack, sizeof model) == 0);
    const struct ork_npu_weights_opts w4 = { .encoding = ORK_NPU_WENC_W4A8,
                                             .flags = ORK_NPU_WENC_ROTATE };
    float *ref = malloc(LOGITS_N * sizeof(float)), *got = malloc(LOGITS_N * sizeof(float));
    REQUIRE(ref && got);
    int32_t tr[N_DECODE], tg[N_DECODE];
    REQUIRE(run_greedy(model, ORK_NPU_EXEC_NO_PACK, NULL, &w4, ref, tr, NULL) == 0);
    enum ork_orkpack_problem found;
    REQUIRE(ork_orkpack_build_for_model(model, pack, &w4, NULL, false, true, &found) == 0);
    CHECK_EQ_INT(found, ORK_ORKPACK_MISSING);
    struct ork_orkpack *pk;
    REQUIRE(ork_orkpack_open(pack, NULL, NULL, &pk, NULL) == 0);
    uint32_t n_w4 = 0;
    for (uint32_t i = 0; i < ork_orkpack_n_tensors(pk); i++) {
        struct ork_orkpack_tensor t;
        REQUIRE(ork_orkpack_tensor_at(pk, i, &t) == 0);
        CHECK_EQ_INT(t.coding.grid, 8);
        CHECK(t.coding.rel_rmse > 0.02f && t.coding.rel_rmse < 0.3f);
        CHECK(t.q_bytes < (uint64_t)t.n * t.k);     /* int4: under a byte a weight */
        n_w4 += t.coding.encoding == ORK_ORKPACK_ENC_W4A8;
    }
    CHECK_EQ_INT(n_w4, ork_orkpack_n_tensors(pk));
    ork_orkpack_close(pk);
    CHECK(ork_orkpack_check_for_model(model, pack, &w4) == 0);
    REQUIRE(run_greedy(model, 0, pack, &w4, got, tg, NULL) == 0);   /* from the pack */
    CHECK(memcmp(ref, got, LOGITS_N * sizeof(float)) == 0);
    CHECK(ork_orkpack_check_for_model(model, pack, NULL) < 0);      /* int8 wants its own */
    CHECK(strstr(ork_error_message(), "built for other NPU weights") != NULL);
    CHECK(strstr(ork_error_message(), "w4a8, rotated") != NULL);
    printf("  %s\n", ork_error_message());
    REQUIRE(ork_orkpack_build_for_model(model, pack, NULL, NULL, false, true, &found) == 0);
    CHECK_EQ_INT(found, ORK_ORKPACK_OTHER_WEIGHTS);
    free(ref);
    free(got);
    unlink(pack);
    unlink(model);
}

static void test_capability(void)
{
    struct ork_sim_opts so = { .struct_size = sizeof so, .deny_w4a8 = true };
    struct ork_npu_opts o = { .struct_size = sizeof o, .device = "sim", .sim = &so };
    struct ork_npu *npu;
    REQUIRE(ork_npu_open(&o, &npu) == 0);
    CHECK(!(ork_npu_confirmed_forms(npu) & ORK_NPU_FORM_W4A8));
    struct ork_npu_weights_opts wo = { .encoding = ORK_NPU_WENC_W4A8 };
    CHECK(ork__npu_wenc_device_check(&wo, npu) == ORK_EUNSUPPORTED);
    const char *msg = ork_error_message();
    printf("  %s\n", msg);
    CHECK(strstr(msg, "--npu-weights w4a8") != NULL);
    CHECK(strstr(msg, "ORK_NPU_FORM_W4A8") != NULL);
    CHECK(strstr(msg, "ork selftest --confirm-forms") != NULL);
    CHECK(strstr(msg, "--npu-caps") != NULL);
    wo.flags = ORK_NPU_WENC_RAW_CODES;              /* the same codes raw need no int4 MAC */
    CHECK(ork__npu_wenc_device_check(&wo, npu) == 0);
    wo.flags = 0;
    wo.encoding = ORK_NPU_WENC_DCOMP;               /* the decompressor is another form */
    wo.levels = 7;
    CHECK(ork__npu_wenc_device_check(&wo, npu) == 0);
    ork_npu_close(npu);
    REQUIRE(ork_npu_open(&(struct ork_npu_opts){ .struct_size = sizeof o, .device = "sim" },
                         &npu) == 0);
    wo = (struct ork_npu_weights_opts){ .encoding = ORK_NPU_WENC_W4A8 };
    CHECK(ork__npu_wenc_device_check(&wo, npu) == 0);   /* the simulator confirms it */
    ork_npu_close(npu);
}

static void test_bad_settings(void)
{
    const struct {
        struct ork_npu_weights_opts wo;
        const char *says;
    } bad[] = {
        { { .encoding = ORK_NPU_WENC_W4A8, .levels = 7 }, "w4a8 has one grid" },
        { { .encoding = ORK_NPU_WENC_W4A8, .max_rel_rmse = 0.05 }, "--npu-weights-max-err" },
        { { .encoding = 3 }, "unknown encoding 3 (int8, dcomp or w4a8)" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(ork__npu_wenc_check(&bad[i].wo) == ORK_EINVAL);
        CHECK(strstr(ork_error_message(), bad[i].says) != NULL);
    }
    npu_check_load_refused("models/stories260K.gguf", &bad[1].wo);  /* no silent int8 */
}

/* The CLI: a bad --npu-weights value names the value and the choices (exit 2); w4a8 with a
 * dcomp-only option fails the load naming it. */
static void test_cli_values(void)
{
    static const char *const vals[] = { "w4a8:7", "w4", "W4A8", "w4a8 " };
    npu_check_bad_weights_values(vals, sizeof vals / sizeof vals[0], "63, 127, or w4a8");
    const char *path = ork_test_fixture("models/stories260K.gguf");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s/ork run -m '%s' --device sim --no-pack --npu-weights w4a8 "
             "--npu-weights-max-err 0.05 -p a -n 1 -t 1 2>&1 >/dev/null", ORK_TEST_RUNNER,
             ORK_BINARY_DIR, path);
    char out[4096];
    CHECK(ork_test_shell(cmd, out, sizeof out) != 0);
    CHECK(strstr(out, "w4a8 has one grid") != NULL);
}

int main(void)
{
    snprintf(g_dir, sizeof g_dir, "/tmp/ork-test-w4a8.%ld", (long)getpid());
    mkdir(g_dir, 0700);
    RUN(test_capability);
    RUN(test_bad_settings);
    RUN(test_cli_values);
    RUN(test_w4a8_equals_raw_codes);
    RUN(test_w4a8_equals_raw_codes_qwen3);
    RUN(test_pack);
    rmdir(g_dir);
    return ork_test_done();
}
