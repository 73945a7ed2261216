/* test_npu_rows_wide.c -- plans above 64 rows, decode copies and the wide-K capability gate
 * (docs/npu-inference.md "Row-sized programs", "Decode copies"), on the simulator with a
 * one-layer synthetic Qwen2.5-0.5B (dim 896, FFN 4864: the down projection's K is above 4096, so
 * prefill weights slice it in two while one row takes it in one program, spec §5.1):
 *   - npu_max_m = 128: a 100-row batch runs the 128-row plan and its logits equal the rows one
 *     at a time, bit for bit;
 *   - npu_decode_kslice single: the down projection gets a decode copy of one K-slice; greedy
 *     decoding gives the same tokens (and logits, bit for bit) as the shared K-slices, and the
 *     copy's runs are counted;
 *   - the gate: without ORK_NPU_FORM_WIDE_K an 8-row batch runs the shared K-sliced plans (the
 *     old rule) and the load logs that once; with a capability record confirming
 *     "wide_k_m_tile" the batch runs on the copy, with the same logits;
 *   - a pack built for npu_max_m 64 is rebuilt (its header records 128) when the model loads
 *     with 128;
 *   - libork's gate: 32 rows of K = 6144 in one program per M-tile where the simulator confirms
 *     the rules (ork_sim_opts.confirm_wide_k), bit-exact; refused, naming the form, where not.
 * Speed of the host is not asserted. */
#include "ork_test.h"

#include <ork-engine/engine.h>
#include <ork-engine/gguf.h>
#include <ork-kernels/types.h>
#include <ork-tooling/synth.h>
#include <ork/error.h>
#include <ork/log.h>
#include <ork/npu.h>
#include <ork/sim.h>
#include <ork/twin.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N_VOCAB 512
#define BIG_BATCH 100        /* > 64 rows: one run of the 128-row plan */
#define SMALL_BATCH 8        /* <= 32: the wide-K cap at K = 4864 */
#define N_GEN 12
#define PACK_MAX_M_OFFSET 80 /* docs/orkpack.md: the header's npu_max_m */

static char dir[256], model[300], caps[300];
static int n_gate_logs;

static void count_logs(void *user, enum ork_log_level level, const char *msg)
{
    (void)user;
    if (strstr(msg, "are not confirmed on this device"))
        n_gate_logs++;
    if (level >= ORK_LOG_WARN)
        fprintf(stderr, "ork: %s\n", msg);
}

/* Plan sizes: 1, 64 and npu_max_m, plus `rows` (each plan's creation runs two warm-up
 * submits of all its rows on the simulator: fewer sizes keep the test light under ASan). A
 * pack's loads (pack) need no arithmetic: timing only. */
static struct ork_model *load(int32_t max_m, int32_t kslice, const char *capfile, bool pack,
                              uint32_t rows)
{
    struct ork_model_params mp;
    ork_model_params_default(&mp);
    mp.device = "sim";
    mp.sim_timing = pack ? ORK_SIM_TIMING_ONLY : 0;
    mp.npu_prog_rows = 1u | rows;
    mp.npu_max_m = max_m;
    mp.npu_decode_kslice = kslice;
    mp.npu_capabilities = capfile;
    mp.npu_flags = ORK_NPU_EXEC_QUIET | (pack ? 0 : ORK_NPU_EXEC_NO_PACK);
    struct ork_model *m = NULL;
    if (ork_model_load(model, &mp, &m) < 0)
        fprintf(stderr, "load %s: %s\n", model, ork_error_message());
    return m;
}

static struct ork_session *session(struct ork_model *m)
{
    struct ork_session_params sp;
    ork_session_params_default(&sp);
    sp.ctx_size = 256;
    sp.n_batch = 128;
    sp.n_threads = 1;
    struct ork_session *s = NULL;
    if (ork_session_create(m, &sp, &s) < 0)
        fprintf(stderr, "session: %s\n", ork_error_message());
    return s;
}

static int32_t tok(int i)
{
    return (int32_t)(1 + (i * 37 + 11) % (N_VOCAB - 1));
}

/* Logits (n, N_VOCAB) of tokens 0..n-1 as one batch, or one token at a time. */
static int rows(struct ork_model *m, int n, bool one_by_one, float *logits)
{
    struct ork_session *s = session(m);
    if (!s)
        return -1;
    int32_t t[BIG_BATCH];
    for (int i = 0; i < n; i++)
        t[i] = tok(i);
    ork_model_npu_stats_reset(m);
    int ret = 0;
    if (!one_by_one)
        ret = ork_model_eval(s, t, n, 0, logits, ORK_EVAL_ALL_LOGITS);
    for (int i = 0; i < n && ret == 0 && one_by_one; i++)
        ret = ork_model_eval(s, &t[i], 1, i, logits + (size_t)i * N_VOCAB, 0);
    ork_session_free(s);
    return ret;
}

/* Greedy decoding of N_GEN tokens after a 4-token prompt; the last step's logits. */
static int greedy(struct ork_model *m, int32_t *out, float *last)
{
    struct ork_session *s = session(m);
    if (!s)
        return -1;
    int32_t t[4] = { tok(0), tok(1), tok(2), tok(3) };
    int ret = ork_model_eval(s, t, 4, 0, last, 0);
    ork_model_npu_stats_reset(m);
    for (int g = 0; g < N_GEN && ret == 0; g++) {
        int best = 0;
        for (int v = 1; v < N_VOCAB; v++)
            if (last[v] > last[best])
                best = v;
        out[g] = best;
        ret = ork_model_eval(s, &out[g], 1, 4 + g, last, 0);
    }
    ork_session_free(s);
    return ret;
}

static uint64_t runs_of(const struct ork_model *m, uint32_t rows_want)
{
    struct ork_npu_exec_stats st;
    if (ork_model_npu_stats(m, &st) < 0)
        return 0;
    for (uint32_t i = 0; i < st.n_prog_sizes; i++)
        if (st.prog_rows[i] == rows_want)
            return st.prog_runs[i];
    return 0;
}

static void test_big_plans(void)
{
    struct ork_model *m = load(128, ORK_NPU_DECODE_KSLICE_SHARED, NULL, false, 0);
    REQUIRE(m);
    struct ork_npu_exec_stats st;
    REQUIRE(ork_model_npu_stats(m, &st) == 0);
    CHECK_EQ_INT(st.n_prog_sizes, 3);         /* 1, 64 (always) and 128 */
    CHECK_EQ_INT(st.prog_rows[st.n_prog_sizes - 1], 128);
    size_t bytes = (size_t)BIG_BATCH * N_VOCAB * sizeof(float);
    float *a = malloc(bytes), *b = malloc(bytes);
    REQUIRE(a && b);
    REQUIRE(rows(m, BIG_BATCH, true, b) == 0);
    REQUIRE(rows(m, BIG_BATCH, false, a) == 0);
    CHECK(runs_of(m, 128) > 0);
    CHECK(runs_of(m, 64) == 0);
    CHECK(memcmp(a, b, bytes) == 0);
    free(a);
    free(b);
    ork_model_free(m);
}

static void test_decode_copy(void)
{
    struct ork_model *sh = load(64, ORK_NPU_DECODE_KSLICE_SHARED, NULL, false, 0);
    struct ork_model *si = load(64, ORK_NPU_DECODE_KSLICE_SINGLE, NULL, false, 0);
    REQUIRE(sh && si);
    struct ork_npu_exec_stats a, b;
    REQUIRE(ork_model_npu_stats(sh, &a) == 0 && ork_model_npu_stats(si, &b) == 0);
    CHECK_EQ_INT(a.n_decode_copies, 0);
    CHECK_EQ_INT(b.n_decode_copies, 1);       /* the down projection, K = 4864 */
    CHECK(b.decode_copy_bytes > 0);
    printf("decode copy: %u matrix, %.1f KiB device, made in %.1f ms\n", b.n_decode_copies,
           b.decode_copy_bytes / 1024.0, b.decode_copy_load_ms);
    int32_t ta[N_GEN], tb[N_GEN];
    float *la = malloc(N_VOCAB * sizeof(float)), *lb = malloc(N_VOCAB * sizeof(float));
    REQUIRE(la && lb);
    REQUIRE(greedy(sh, ta, la) == 0);
    REQUIRE(greedy(si, tb, lb) == 0);
    CHECK(memcmp(ta, tb, sizeof ta) == 0);
    CHECK(memcmp(la, lb, N_VOCAB * sizeof(float)) == 0);
    REQUIRE(ork_model_npu_stats(si, &b) == 0 && ork_model_npu_stats(sh, &a) == 0);
    CHECK_EQ_INT(b.decode_copy_runs, N_GEN);  /* one down projection per token */
    CHECK_EQ_INT(a.decode_copy_runs, 0);
    CHECK(b.n_submits == a.n_submits);        /* one submit per matmul either way */
    free(la);
    free(lb);
    ork_model_free(sh);
    ork_model_free(si);
}

static void test_wide_k_gate(void)
{
    ork_log_set(count_logs, NULL);
    n_gate_logs = 0;
    struct ork_model *off = load(64, ORK_NPU_DECODE_KSLICE_SINGLE, NULL, false, SMALL_BATCH);
    CHECK_EQ_INT(n_gate_logs, 1);
    n_gate_logs = 0;
    struct ork_model *on = load(64, ORK_NPU_DECODE_KSLICE_SINGLE, caps, false, SMALL_BATCH);
    CHECK_EQ_INT(n_gate_logs, 0);
    struct ork_model *sh = load(64, ORK_NPU_DECODE_KSLICE_SHARED, NULL, false, SMALL_BATCH);
    ork_log_set(NULL, NULL);
    REQUIRE(off && on && sh);
    size_t bytes = (size_t)SMALL_BATCH * N_VOCAB * sizeof(float);
    float *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
    REQUIRE(a && b && c);
    struct ork_npu_exec_stats st;
    REQUIRE(rows(off, SMALL_BATCH, false, a) == 0);
    REQUIRE(ork_model_npu_stats(off, &st) == 0);
    CHECK_EQ_INT(st.decode_copy_runs, 0);     /* unconfirmed: the K-sliced 8-row plan */
    REQUIRE(rows(on, SMALL_BATCH, false, b) == 0);
    REQUIRE(ork_model_npu_stats(on, &st) == 0);
    CHECK_EQ_INT(st.decode_copy_runs, 1);     /* confirmed: one program per N-slice */
    REQUIRE(rows(sh, SMALL_BATCH, false, c) == 0);
    CHECK(memcmp(a, c, bytes) == 0);
    CHECK(memcmp(b, c, bytes) == 0);
    free(a);
    free(b);
    free(c);
    ork_model_free(off);
    ork_model_free(on);
    ork_model_free(sh);
}

static uint32_t pack_max_m(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint32_t v = 0;
    if (f && fseek(f, PACK_MAX_M_OFFSET, SEEK_SET) == 0 && fread(&v, sizeof v, 1, f) != 1)
        v = 0;
    if (f)
        fclose(f);
    return v;
}

static void test_pack_rebuild(void)
{
    char pack[320];
    snprintf(pack, sizeof pack, "%s/m.orkpack", dir);
    struct ork_model *m = load(64, ORK_NPU_DECODE_KSLICE_SHARED, NULL, true, 0);
    REQUIRE(m);
    ork_model_free(m);
    CHECK_EQ_INT(pack_max_m(pack), 64);
    m = load(128, ORK_NPU_DECODE_KSLICE_SHARED, NULL, true, 0);
    REQUIRE(m);
    ork_model_free(m);
    CHECK_EQ_INT(pack_max_m(pack), 128);
    unlink(pack);
}

/* libork's gate: a device whose simulator confirms the wide-K rules (ork_sim_opts
 * .confirm_wide_k) plans 32 rows of K = 6144 in one program per M-tile, bit-exact against the
 * CPU; one that does not refuses the plan, naming the capability. */
static void test_libork_gate(void)
{
    enum { K = 6144, N = 64, M = 32 };
    static int8_t w[N * K], a[M * K];
    static int32_t c[M * N];
    for (int i = 0; i < N * K; i++)
        w[i] = (int8_t)((i * 7 + 3) % 255 - 127);
    for (int i = 0; i < M * K; i++)
        a[i] = (int8_t)((i * 13 + 5) % 255 - 127);
    for (int on = 0; on < 2; on++) {
        struct ork_sim_opts so = { .struct_size = sizeof so, .confirm_wide_k = on };
        struct ork_npu_opts o = { .struct_size = sizeof o, .device = "sim", .sim = &so };
        struct ork_npu *npu = NULL;
        REQUIRE(ork_npu_open(&o, &npu) == 0);
        CHECK_EQ_INT(!!(ork_npu_confirmed_forms(npu) & ORK_NPU_FORM_WIDE_K), on);
        struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = ORK_NPU_I8,
                                           .k = K, .n = N, .w = w, .max_m = 1 };
        struct ork_npu_weights *wt = NULL;
        struct ork_npu_matmul *mm = NULL;
        REQUIRE(ork_npu_weights_create(npu, &wd, &wt) == 0);
        struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = M, .cores = 1 };
        int ret = ork_npu_matmul_create(wt, &md, &mm);
        if (!on) {
            CHECK_EQ_INT(ret, ORK_ERANGE);
            CHECK(strstr(ork_error_message(), "ORK_NPU_FORM_WIDE_K") != NULL);
        } else {
            REQUIRE(ret == 0);
            struct ork_npu_matmul_info in;
            ork_npu_matmul_get_info(mm, &in);
            CHECK_EQ_INT(in.n_kslices, 1);
            CHECK_EQ_INT(in.m_tile, M);
            REQUIRE(ork_npu_matmul_run_i8(mm, a, M, c) == 0);
            uint32_t bad = 0;
            for (int r = 0; r < M; r++)
                for (int j = 0; j < N; j++) {
                    int32_t acc = 0;
                    for (int i = 0; i < K; i++)
                        acc += (int32_t)a[r * K + i] * w[j * K + i];
                    bad += c[r * N + j] != acc;
                }
            CHECK_EQ_INT(bad, 0);
        }
        ork_npu_matmul_destroy(mm);
        ork_npu_weights_destroy(wt);
        ork_npu_close(npu);
    }
}

/* The model and the capability record, in a fresh directory. */
static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/ork-test-rows-wide.XXXXXX");
    REQUIRE(mkdtemp(dir));
    snprintf(model, sizeof model, "%s/m.gguf", dir);
    snprintf(caps, sizeof caps, "%s/caps.json", dir);
    struct ork_synth_params p;
    ork_synth_params_default(&p);
    p.arch = "qwen2";
    p.preset = "0.5b";
    p.type = ORK_TYPE_Q8_0;
    p.n_layers = 1;
    p.n_vocab = N_VOCAB;
    p.n_threads = 1;
    p.out_path = model;
    REQUIRE(ork_synth_write(&p, NULL) == 0);
    struct ork_twin_caps c = { .struct_size = sizeof c, .confirmed = ORK_TWIN_FORM_WIDE_K };
    REQUIRE(ork_twin_caps_save(caps, &c, ORK_TWIN_FORM_WIDE_K) == 0);
}

int main(void)
{
    RUN(test_libork_gate);
    RUN(setup);
    RUN(test_big_plans);
    RUN(test_decode_copy);
    RUN(test_wide_k_gate);
    RUN(test_pack_rebuild);
    unlink(model);
    unlink(caps);
    rmdir(dir);
    return ork_test_done();
}
