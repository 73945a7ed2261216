/* test_npu_calib.c -- calibrated NPU weights (--npu-weights-calib; docs/dcomp.md "Calibrated
 * quantisation") on the simulator with stories260K:
 *   - a calibrated load (dcomp:7's codes stored raw, and w4a8 with the rotation) changes the
 *     logits against the same setting's round-to-nearest codes, and two calibrated loads give
 *     the same logits bit for bit (the calibration is deterministic); int8 takes the same path
 *     on its +-127 grid (measured in docs/bench-log/2026-12-gptq.md, not repeated here: each
 *     load is about 2 s under ASan);
 *   - a pack built from calibrated codes records it: a later load of the same setting without
 *     the calibration rebuilds the pack and runs round-to-nearest's codes, not the pack's;
 *   - with a memory bound too small for all the inputs' statistics at once the slots are
 *     collected in several passes over the text, and the logits are those of one pass bit for
 *     bit; a bound below one tensor's statistics is refused naming the tensor;
 *   - on the CPU it has nothing to act on: the load succeeds with the model's own weights;
 *   - a missing or too short calibration text, a model loaded without its tokenizer, or the
 *     engine's ORK_NPU_WENC_CALIBRATED flag set without a text, is refused with a message
 *     naming what is wrong. */
#include "ork_test.h"

#include "engine/npu/calib.h"

#include <ork-engine/engine.h>
#include <ork/error.h>

#include <stdlib.h>
#include <string.h>

#define N_VOCAB 512         /* stories260K */

static const int32_t prompt[] = { 1, 403, 407, 261, 378 };
#define N_PROMPT ((int)(sizeof prompt / sizeof prompt[0]))

/* Our own short text in the fixture model's domain (children's stories). */
static const char calib_text[] =
    "Tim had a red kite. He ran to the hill with his dog Max. The wind was strong and the kite "
    "went up high. Max barked at the birds. Tim laughed and pulled the string. Then the kite "
    "got stuck in a tree. Tim was sad. His sister Sam came with a long stick. They got the kite "
    "down together. Tim said, \"Thank you, Sam!\" They went home and had some warm soup.\n"
    "A little cat lived by the sea. Every day she looked at the boats. One day a boat came "
    "close and a kind man gave her a fish. The cat was happy and purred all night.\n";

static char calib_path[256];

static void write_calib(void)
{
    snprintf(calib_path, sizeof calib_path, "/tmp/ork-test-calib-%d.txt", (int)getpid());
    FILE *f = fopen(calib_path, "w");
    if (!f)
        SKIP("cannot write %s", calib_path);
    fputs(calib_text, f);
    fclose(f);
}

static const char *pack_path;    /* NULL: no pack (ORK_NPU_EXEC_NO_PACK) */

/* Logits of every prompt row (N_PROMPT x N_VOCAB) under the setting, on device dev. */
static int run_prompt(const char *path, const char *dev, const struct ork_npu_weights_opts *wo,
                      bool no_tok, float *out)
{
    struct ork_model_params mp;
    ork_model_params_default(&mp);
    mp.device = dev;
    mp.no_tokenizer = no_tok;
    mp.npu_flags = (pack_path ? 0 : ORK_NPU_EXEC_NO_PACK) | ORK_NPU_EXEC_QUIET;
    mp.npu_pack_path = pack_path;
    mp.npu_weights = *wo;
    struct ork_model *m;
    int ret = ork_model_load(path, &mp, &m);
    if (ret < 0)
        return ret;
    struct ork_session *s;
    if ((ret = ork_session_create(m, NULL, &s)) == 0) {
        ret = ork_model_eval(s, prompt, N_PROMPT, 0, out, ORK_EVAL_ALL_LOGITS);
        ork_session_free(s);
    }
    ork_model_free(m);
    return ret;
}

static bool differs(const float *a, const float *b)
{
    return memcmp(a, b, sizeof(float) * N_PROMPT * N_VOCAB) != 0;
}

/* w4a8 rotated's calibrated logits (one pass), for test_passes */
static float w4a8_cal[N_PROMPT * N_VOCAB];
static bool w4a8_cal_set;

static void check_changes(const char *path, struct ork_npu_weights_opts wo, bool repeat,
                          float *keep)
{
    static float rtn[N_PROMPT * N_VOCAB], cal[N_PROMPT * N_VOCAB], cal2[N_PROMPT * N_VOCAB];
    REQUIRE(run_prompt(path, "sim", &wo, false, rtn) == 0);
    wo.calib_path = calib_path;
    wo.calib_tokens = 48;
    int ret = run_prompt(path, "sim", &wo, false, cal);
    if (ret < 0)
        fprintf(stderr, "calibrated load: %s\n", ork_error_message());
    REQUIRE(ret == 0);
    CHECK(differs(rtn, cal));
    if (keep)
        memcpy(keep, cal, sizeof cal);
    if (repeat) {
        REQUIRE(run_prompt(path, "sim", &wo, false, cal2) == 0);
        CHECK(!differs(cal, cal2));
    }
    bool finite = true;
    for (int i = 0; i < N_PROMPT * N_VOCAB; i++)
        finite &= isfinite(cal[i]) != 0;
    CHECK(finite);
}

static const char *model(void)
{
    return ork_test_fixture("models/stories260K.gguf");
}

static void test_dcomp7_raw(void)
{
    /* raw codes: the same grid codes without building decompressor streams (a faster load) */
    check_changes(model(), (struct ork_npu_weights_opts){ .encoding = ORK_NPU_WENC_DCOMP,
                                                          .levels = 7,
                                                          .flags = ORK_NPU_WENC_RAW_CODES },
                  true, NULL);
}

static void test_w4a8_rotated(void)
{
    check_changes(model(), (struct ork_npu_weights_opts){ .encoding = ORK_NPU_WENC_W4A8,
                                                          .flags = ORK_NPU_WENC_ROTATE },
                  false, w4a8_cal);
    CHECK_EQ_INT((int)ork__npu_calib_last_passes(), 1);
    w4a8_cal_set = true;
}

/* stories260K's slots: K = 64 (16 KiB of H each) and the down projections' K = 172
 * (115.6 KiB), 0.8 MiB in all. */
#define DOWN_H_BYTES (172u * 172u * 4u)

static void test_passes(void)
{
    static float cal[N_PROMPT * N_VOCAB];
    REQUIRE(w4a8_cal_set);
    struct ork_npu_weights_opts wo = { .encoding = ORK_NPU_WENC_W4A8,
                                       .flags = ORK_NPU_WENC_ROTATE, .calib_path = calib_path,
                                       .calib_tokens = 48,
                                       .calib_mem_bytes = DOWN_H_BYTES + 4096 };
    int ret = run_prompt(model(), "sim", &wo, false, cal);
    if (ret < 0)
        fprintf(stderr, "calibrated load in passes: %s\n", ork_error_message());
    REQUIRE(ret == 0);
    printf("     %u passes\n", ork__npu_calib_last_passes());
    CHECK(ork__npu_calib_last_passes() >= 5);     /* each down projection in its own */
    CHECK(!differs(cal, w4a8_cal));
    wo.calib_mem_bytes = DOWN_H_BYTES - 1;
    CHECK_EQ_INT(run_prompt(model(), "sim", &wo, false, cal), ORK_ENOMEM);
    CHECK(strstr(ork_error_message(), "npu down of layer 0") != NULL);
    CHECK(strstr(ork_error_message(), "calib-mem") != NULL);
}

static void test_pack_records(void)
{
    static float cal[N_PROMPT * N_VOCAB], rtn[N_PROMPT * N_VOCAB];
    char pk[256];
    snprintf(pk, sizeof pk, "/tmp/ork-test-calib-%d.orkpack", (int)getpid());
    pack_path = pk;
    struct ork_npu_weights_opts wo = { .encoding = ORK_NPU_WENC_DCOMP, .levels = 7,
                                       .flags = ORK_NPU_WENC_RAW_CODES,
                                       .calib_path = calib_path, .calib_tokens = 48 };
    int r1 = run_prompt(model(), "sim", &wo, false, cal);
    wo.calib_path = NULL;
    int r2 = run_prompt(model(), "sim", &wo, false, rtn);
    pack_path = NULL;
    remove(pk);
    REQUIRE(r1 == 0 && r2 == 0);
    CHECK(differs(cal, rtn));       /* the calibrated pack was not taken for round-to-nearest */
}

static void test_cpu_noop(void)
{
    static float a[N_PROMPT * N_VOCAB], b[N_PROMPT * N_VOCAB];
    struct ork_npu_weights_opts wo = { 0 };
    REQUIRE(run_prompt(model(), "cpu", &wo, false, a) == 0);
    wo.calib_path = calib_path;
    REQUIRE(run_prompt(model(), "cpu", &wo, false, b) == 0);
    CHECK(!differs(a, b));
}

static void test_refused(void)
{
    static float out[N_PROMPT * N_VOCAB];
    struct ork_npu_weights_opts wo = { .encoding = ORK_NPU_WENC_INT8,
                                       .calib_path = "/nonexistent/calib.txt" };
    CHECK_EQ_INT(run_prompt(model(), "sim", &wo, false, out), ORK_EIO);
    CHECK(strstr(ork_error_message(), "/nonexistent/calib.txt") != NULL);
    char empty[256];
    snprintf(empty, sizeof empty, "/tmp/ork-test-calib-empty-%d.txt", (int)getpid());
    FILE *f = fopen(empty, "w");
    REQUIRE(f != NULL);
    fputs("a", f);
    fclose(f);
    wo.calib_path = empty;
    CHECK_EQ_INT(run_prompt(model(), "sim", &wo, false, out), ORK_EINVAL);
    CHECK(strstr(ork_error_message(), "at least 2") != NULL);
    remove(empty);
    wo.calib_path = calib_path;
    CHECK_EQ_INT(run_prompt(model(), "sim", &wo, true, out), ORK_EINVAL);
    CHECK(strstr(ork_error_message(), "tokenizer") != NULL);
    wo.calib_path = NULL;
    wo.flags = ORK_NPU_WENC_CALIBRATED;
    CHECK_EQ_INT(run_prompt(model(), "sim", &wo, false, out), ORK_EINVAL);
    CHECK(strstr(ork_error_message(), "calibration text") != NULL);
}

int main(void)
{
    model();
    write_calib();
    RUN(test_dcomp7_raw);
    RUN(test_w4a8_rotated);
    RUN(test_passes);
    RUN(test_pack_records);
    RUN(test_cpu_noop);
    RUN(test_refused);
    remove(calib_path);
    return ork_test_done();
}
