/* test_npu_rotate.c -- the rotation of K of the NPU weights (ORK_NPU_WENC_ROTATE,
 * src/engine/npu/rotate.c; docs/w4a8.md "Engine"):
 *   - the transform is orthonormal to float precision: R R^T = I over all columns for K = 1,
 *     3, 64, 172 (the fixture's FFN: 43 x 4), 384 (3 x 128), and over 64 sampled columns (the
 *     first, the last and a stride) for K = 2048, 6144 (3 x 2048) and 18944 (37 x 512,
 *     Qwen2.5-7B's FFN);
 *     it keeps norms and inner products of random vectors; a power-of-two K is the normalised
 *     Walsh-Hadamard transform (its first column is constant);
 *   - the twin's charge grows with K (Q + log2 P) and is zero for no rows;
 *   - on the simulator, rotated int8 weights with rotated inputs give logits close to the
 *     unrotated int8 run's (the bound below) and the same greedy tokens, on stories260K and its
 *     qwen3 variant (a 5-row prefill and 8 steps fed the CPU's greedy tokens);
 *   - bad combinations are refused naming what is wrong, in the engine and on the CLI. */
#include "ork_test.h"
#include "npu_greedy.h"

#include "engine/npu/rotate.h"

#include <ork-engine/engine.h>
#include <ork/error.h>

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

int ork__npu_wenc_check(const struct ork_npu_weights_opts *o);

/* ---- the transform ----------------------------------------------------------------------- */

/* Float precision of a Gram entry: each column is made by at most Q + log2 P rounded float
 * operations per element (rotate.c) and the DCT's coefficients are rounded to float; the
 * bound allows 8 ulps of 1 (measured worst: 5e-8 at K = 18944). */
#define GRAM_TOL (8.0 * FLT_EPSILON)

/* Columns cols[0..nc) of R^T (R^T e_i), then their Gram matrix against I. */
static double gram_err(uint32_t k, const uint32_t *cols, uint32_t nc)
{
    struct ork__npu_rot r;
    float *e = calloc(k, sizeof(float)), *c = malloc((size_t)nc * k * sizeof(float));
    if (ork__npu_rot_init(&r, k) < 0 || !e || !c) {
        free(e);
        free(c);
        return INFINITY;
    }
    CHECK_EQ_INT(r.p * r.q, k);
    CHECK(r.q % 2 == 1);
    for (uint32_t i = 0; i < nc; i++) {
        e[cols[i]] = 1.0f;
        ork__npu_rot_apply(&r, e, c + (size_t)i * k);
        e[cols[i]] = 0.0f;
    }
    double worst = 0.0;
    for (uint32_t i = 0; i < nc; i++)
        for (uint32_t j = i; j < nc; j++) {
            double d = 0.0;
            for (uint32_t t = 0; t < k; t++)
                d += (double)c[(size_t)i * k + t] * c[(size_t)j * k + t];
            double err = fabs(d - (i == j ? 1.0 : 0.0));
            worst = err > worst ? err : worst;
        }
    free(e);
    free(c);
    ork__npu_rot_fini(&r);
    return worst;
}

static void test_orthonormal(void)
{
    static const uint32_t full[] = { 1, 3, 64, 172, 384 };
    uint32_t *cols = malloc(384 * sizeof(uint32_t));
    REQUIRE(cols);
    for (size_t i = 0; i < sizeof full / sizeof full[0]; i++) {
        for (uint32_t j = 0; j < full[i]; j++)
            cols[j] = j;
        double err = gram_err(full[i], cols, full[i]);
        printf("  K = %u: |R R^T - I| <= %.2e (all columns)\n", full[i], err);
        CHECK(err <= GRAM_TOL);
    }
    static const uint32_t sampled[] = { 2048, 6144, 18944 };
    for (size_t i = 0; i < 3; i++) {
        uint32_t k = sampled[i], nc = 64;
        for (uint32_t j = 0; j + 1 < nc; j++)
            cols[j] = j * (k / nc) + j % 7;     /* spread over the blocks and inside them */
        cols[nc - 1] = k - 1;
        double err = gram_err(k, cols, nc);
        printf("  K = %u: |R R^T - I| <= %.2e (%u columns)\n", k, err, nc);
        CHECK(err <= GRAM_TOL);
    }
    free(cols);
}

/* Norms and inner products of random vectors survive; a power of two is the Hadamard. */
static void test_isometry(void)
{
    static const uint32_t ks[] = { 64, 172, 6144, 18944 };
    srand(7);
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        uint32_t k = ks[i];
        struct ork__npu_rot r;
        REQUIRE(ork__npu_rot_init(&r, k) == 0);
        float *x = malloc(k * sizeof(float)), *y = malloc(k * sizeof(float));
        float *rx = malloc(k * sizeof(float)), *ry = malloc(k * sizeof(float));
        REQUIRE(x && y && rx && ry);
        for (uint32_t j = 0; j < k; j++) {
            x[j] = (float)((double)rand() / RAND_MAX) - 0.5f;
            y[j] = (float)((double)rand() / RAND_MAX) - 0.5f;
        }
        x[k / 3] = 40.0f;                       /* an outlier */
        ork__npu_rot_apply(&r, x, rx);
        ork__npu_rot_apply(&r, y, ry);
        double xx = 0, xy = 0, rxx = 0, rxy = 0, rmax = 0;
        for (uint32_t j = 0; j < k; j++) {
            xx += (double)x[j] * x[j];
            xy += (double)x[j] * y[j];
            rxx += (double)rx[j] * rx[j];
            rxy += (double)rx[j] * ry[j];
            rmax = fabs(rx[j]) > rmax ? fabs(rx[j]) : rmax;
        }
        CHECK(fabs(rxx - xx) <= 1e-5 * xx);
        CHECK(fabs(rxy - xy) <= 1e-5 * sqrt(xx * k / 12.0));
        CHECK(rmax < 40.0 * 0.5);               /* the outlier is spread */
        printf("  K = %u: |x| %.4f -> %.4f, max |x_j| 40 -> %.2f\n", k, sqrt(xx), sqrt(rxx),
               rmax);
        free(x);
        free(y);
        free(rx);
        free(ry);
        ork__npu_rot_fini(&r);
    }
    struct ork__npu_rot r;
    REQUIRE(ork__npu_rot_init(&r, 64) == 0);
    float e[64] = { 1.0f }, c[64];
    ork__npu_rot_apply(&r, e, c);
    for (int j = 0; j < 64; j++)
        CHECK_NEAR(c[j], 0.125, 1e-7);          /* 1 / sqrt(64) */
    ork__npu_rot_fini(&r);
    CHECK(ork__npu_rot_init(&r, 0) == ORK_EINVAL);
}

static void test_twin_work(void)
{
    struct ork_twin_consts c;
    ork_twin_consts_default(&c);
    struct ork_twin_work a = ork__npu_rot_work(&c, 1, 2048), b = ork__npu_rot_work(&c, 1, 6144);
    struct ork_twin_work d = ork__npu_rot_work(&c, 1, 18944), z = ork__npu_rot_work(&c, 0, 6144);
    printf("  twin: one row of K = 2048 %.0f ns, 6144 %.0f ns, 18944 %.0f ns\n", a.issue_ns,
           b.issue_ns, d.issue_ns);
    CHECK(a.issue_ns > 0 && a.issue_ns < b.issue_ns && b.issue_ns < d.issue_ns);
    CHECK(z.issue_ns == 0 && z.bytes == 0);
    CHECK(a.bytes == 0);                         /* one row stays in the caches */
    /* between the V pipes' bound of the operation count (K (Q + log2 P) lane operations, 4
     * lanes, 2 pipes: rotate.c) and 4x it (the loads and stores of a stage-at-a-time
     * Hadamard make it memory-bound) */
    static const struct { uint32_t k, q, lg; } s[] = { { 2048, 1, 11 }, { 6144, 3, 11 },
                                                      { 18944, 37, 9 } };
    for (int i = 0; i < 3; i++) {
        double v_ns = (double)s[i].k * (s[i].q + s[i].lg) / 4.0 / 2.0 / c.cpu_freq_hz * 1e9;
        double got = ork__npu_rot_work(&c, 1, s[i].k).issue_ns;
        CHECK(got >= v_ns && got <= 4.0 * v_ns);
    }
    struct ork_twin_work r4 = ork__npu_rot_work(&c, 4, 6144);
    CHECK_NEAR(r4.issue_ns, 4.0 * b.issue_ns, 1e-6 * b.issue_ns);   /* per row */
}

/* ---- the executor ------------------------------------------------------------------------ */

#define N_DECODE 8
#define N_VOCAB 512         /* stories260K */
#define LOGITS_N ((size_t)(N_DECODE + 1) * N_VOCAB)

static const int32_t prompt[] = { 1, 403, 407, 261, 378 };
#define N_PROMPT ((int)(sizeof prompt / sizeof prompt[0]))

/* Logits of the prompt's last row then of N_DECODE greedy steps on `device` (the tokens fed are
 * `feed`'s when given, else the run's own greedy picks, written to toks). */
static int run_greedy(const char *path, const char *device, const struct ork_npu_weights_opts *wo,
                      const int32_t *feed, float *out, int32_t *toks)
{
    struct ork_model_params mp;
    npu_greedy_params(&mp, device, ORK_NPU_EXEC_NO_PACK, wo);
    return npu_greedy_run(path, &mp, prompt, N_PROMPT, N_DECODE, N_VOCAB, feed, out, toks, NULL);
}

/* RMS of a - b over the RMS of ref. */
static double rel_rms(const float *a, const float *b, const float *ref, size_t n)
{
    double d = 0, r = 0;
    for (size_t i = 0; i < n; i++) {
        d += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        r += (double)ref[i] * ref[i];
    }
    return sqrt(d / r);
}

/* Rotated vs unrotated int8, both fed the CPU's greedy tokens (teacher-forced, so one near tie
 * cannot send the two runs down different texts), against the CPU F32 logits.
 * The bound: each int8 run differs from F32 by its own rounding of weights and activations
 * (per channel max|w| / 127: rel-RMSE 0.006 per matmul on these weights, docs/dcomp.md;
 * e8, er below, 0.012-0.016 in the logits). The rotation rounds other values (the rotated
 * rows), so the two runs' errors are independent draws of the same size and their difference
 * is about sqrt(e8^2 + er^2) (measured 1.04-1.18x that); allowed: 1.5x. And the rotated run
 * is no worse than int8 (er <= 1.5 e8; measured 0.76-0.84). A rotation that did not pair up
 * (the weights rotated, the input not) gives errors of order 1. */
static void check_model(const char *rel)
{
    const char *path = ork_test_fixture(rel);
    float *f32 = malloc(LOGITS_N * sizeof(float)), *i8 = malloc(LOGITS_N * sizeof(float));
    float *rot = malloc(LOGITS_N * sizeof(float));
    REQUIRE(f32 && i8 && rot);
    int32_t tf[N_DECODE], t8[N_DECODE], tr[N_DECODE];
    REQUIRE(run_greedy(path, "cpu", NULL, NULL, f32, tf) == 0);
    REQUIRE(run_greedy(path, "sim", NULL, tf, i8, t8) == 0);
    const struct ork_npu_weights_opts wr = { .encoding = ORK_NPU_WENC_INT8,
                                             .flags = ORK_NPU_WENC_ROTATE };
    REQUIRE(run_greedy(path, "sim", &wr, tf, rot, tr) == 0);
    double e8 = rel_rms(i8, f32, f32, LOGITS_N), er = rel_rms(rot, f32, f32, LOGITS_N);
    double d = rel_rms(rot, i8, f32, LOGITS_N);
    int same = 0, same8 = 0;
    for (int t = 0; t < N_DECODE; t++) {
        same += tr[t] == tf[t];
        same8 += t8[t] == tf[t];
    }
    printf("  %s: logits rel-RMS vs F32: int8 %.4f, rotated %.4f; rotated vs int8 %.4f; "
           "greedy picks as F32's: int8 %d, rotated %d of %d\n", rel, e8, er, d, same8, same,
           N_DECODE);
    CHECK(d > 0.0);                             /* other codes */
    CHECK(d <= 1.5 * sqrt(e8 * e8 + er * er));
    CHECK(er <= 1.5 * e8);
    CHECK(same >= same8 - 1);
    free(f32);
    free(i8);
    free(rot);
}

static void test_logits(void)
{
    check_model("models/stories260K.gguf");
}

static void test_logits_qwen3(void)
{
    check_model("models/stories260K-qwen3.gguf");
}

/* Every encoding takes the rotation; what does not combine is refused naming it. */
static void test_combinations(void)
{
    const struct ork_npu_weights_opts good[] = {
        { .encoding = ORK_NPU_WENC_INT8, .flags = ORK_NPU_WENC_ROTATE },
        { .encoding = ORK_NPU_WENC_DCOMP, .levels = 15, .flags = ORK_NPU_WENC_ROTATE },
        { .encoding = ORK_NPU_WENC_DCOMP, .flags = ORK_NPU_WENC_ROTATE | ORK_NPU_WENC_RAW_CODES |
                                                  ORK_NPU_WENC_CLIP },
        { .encoding = ORK_NPU_WENC_W4A8, .flags = ORK_NPU_WENC_ROTATE | ORK_NPU_WENC_CLIP },
        { .encoding = ORK_NPU_WENC_W4A8, .flags = ORK_NPU_WENC_ROTATE | ORK_NPU_WENC_RAW_CODES },
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        CHECK(ork__npu_wenc_check(&good[i]) == 0);
    const struct {
        struct ork_npu_weights_opts wo;
        const char *says;
    } bad[] = {
        { { .encoding = ORK_NPU_WENC_INT8, .flags = ORK_NPU_WENC_ROTATE | ORK_NPU_WENC_RAW_CODES },
          "takes --npu-weights-rotate only" },
        { { .encoding = ORK_NPU_WENC_INT8, .flags = ORK_NPU_WENC_CLIP }, "need dcomp" },
        { { .encoding = ORK_NPU_WENC_W4A8, .levels = 15 }, "w4a8 has one grid" },
        { { .encoding = ORK_NPU_WENC_W4A8, .max_rel_rmse = 0.05 }, "--npu-weights-max-err" },
        { { .encoding = ORK_NPU_WENC_INT8, .flags = 1u << 9 }, "unknown flags 0x200" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(ork__npu_wenc_check(&bad[i].wo) == ORK_EINVAL);
        CHECK(strstr(ork_error_message(), bad[i].says) != NULL);
    }
    /* on the CLI: the same message, and the load fails (exit 1), nothing runs silently */
    const char *path = ork_test_fixture("models/stories260K.gguf");
    const char *args[] = { "--npu-weights int8 --npu-weights-rotate --npu-weights-raw",
                           "--npu-weights w4a8 --npu-weights-rotate --npu-weights-max-err 0.1" };
    const char *says[] = { "takes --npu-weights-rotate only", "w4a8 has one grid" };
    for (int i = 0; i < 2; i++) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "%s %s/ork run -m '%s' --device sim --no-pack %s -p a -n 1 "
                 "-t 1 2>&1 >/dev/null", ORK_TEST_RUNNER, ORK_BINARY_DIR, path, args[i]);
        char out[4096];
        int st = ork_test_shell(cmd, out, sizeof out);
        CHECK(st != 0);
        CHECK(strstr(out, says[i]) != NULL);
    }
}

int main(void)
{
    RUN(test_orthonormal);
    RUN(test_isometry);
    RUN(test_twin_work);
    RUN(test_combinations);
    RUN(test_logits);
    RUN(test_logits_qwen3);
    return ork_test_done();
}
