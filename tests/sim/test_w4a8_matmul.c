/* test_w4a8_matmul.c -- W4A8 weights (encoding = ORK_NPU_WEIGHTS_W4A8) through the whole libork
 * path on the strict simulator, which runs the int4 x int4 -> int16 programs bit-exactly and
 * fails a task whose int16 accumulator would overflow (npu-weight-decompression.md §2): every
 * matmul of int8 A on int4 codes must equal the CPU's int32 A.W bit for bit -- K 32..19000
 * (odd K padded), N 64..12000 (N not a multiple of 64, several 4096-column slices), K-sliced at
 * 2048 for small codes and narrower by the int16 bound for full-range codes, 1 and 3 cores,
 * M = 1 and M > 64 tokens (several M-tiles), runs of fewer rows than the plan, run_f32,
 * submit/wait and async, a chain mixing int8 and W4A8 plans, sim-rocket; the export /
 * create_packed round trip and the blob's refusals; the refusals of codes outside [-8, 7], fp16
 * and a device without the capability (deny_w4a8), and the device-bytes estimate. The
 * selftest's w4a8 step: test_w4a8_selftest.c. */
#include "ork_test.h"

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/npu.h>
#include <ork/sched.h>
#include <ork/sim.h>

#include "libork/ork_priv.h"
#include "sim/sim.h"

#include <stdint.h>
#include <string.h>

#define NW ORK_NPU_MATMUL_NO_WARMUP

static struct ork_npu *npu;
static uint64_t rng = 0x853c49e6748fea9bull;
#include "test_rand_mm.h"

static void gen_codes(int8_t *w, size_t count, int lo, int hi)
{
    for (size_t i = 0; i < count; i++)
        w[i] = (int8_t)(lo + (int)(next_u32() % (uint32_t)(hi - lo + 1)));
}

static int make_w4(struct ork_npu *dev, const int8_t *w, uint32_t k, uint32_t n, uint32_t max_m,
                   const float *scales, struct ork_npu_weights **out)
{
    struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = ORK_NPU_I8, .k = k,
                                       .n = n, .w = w, .max_m = max_m, .scales = scales,
                                       .encoding = ORK_NPU_WEIGHTS_W4A8 };
    int ret = ork_npu_weights_create(dev, &wd, out);
    if (ret < 0)
        fprintf(stderr, "  w4a8 weights %ux%u: %s\n", n, k, ork_error_describe(ret));
    return ret;
}

struct wcase {
    uint32_t m, k, n, cores;
    int lo, hi;                 /* code range */
    uint32_t want_kslices;      /* 0: any */
};

static bool run_case(struct ork_npu *dev, const struct wcase *d)
{
    int8_t *w = ork_malloc((size_t)d->n * d->k), *a = ork_malloc((size_t)d->m * d->k);
    int32_t *c = ork_malloc((size_t)d->m * d->n * 4);
    struct ork_npu_weights *wt = NULL;
    struct ork_npu_matmul *mm = NULL;
    bool ok = false;
    if (!w || !a || !c)
        goto done;
    gen_codes(w, (size_t)d->n * d->k, d->lo, d->hi);
    gen_any(a, (size_t)d->m * d->k);
    a[0] = -128;
    if (make_w4(dev, w, d->k, d->n, d->m, NULL, &wt) < 0)
        goto done;
    struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = d->m, .flags = NW,
                                      .cores = d->cores };
    struct ork_npu_matmul_info info;
    memset(c, 0x5a, (size_t)d->m * d->n * 4);
    int ret = ork_npu_matmul_create(wt, &md, &mm);
    if (ret == 0) {
        ork_npu_matmul_get_info(mm, &info);
        ret = ork_npu_matmul_run_i8(mm, a, d->m, c);
    }
    if (ret < 0) {
        fprintf(stderr, "  plan/run: %s\n", ork_error_describe(ret));
        goto done;
    }
    uint64_t bad = ref_mismatches(a, w, c, d->m, d->k, d->n);
    const uint64_t int4_bytes = (uint64_t)info.k_padded * info.n_padded / 2;
    ok = bad == 0 && info.w4a8 && info.m_tile <= 64 && info.n_padded % 64 == 0 &&
         info.w_stored_bytes == int4_bytes && info.w_dcomp_bytes == 0 &&
         (!d->want_kslices || info.n_kslices == d->want_kslices) &&
         (d->cores < 2 || info.n_cores == d->cores);
    printf("  M=%u K=%u N=%u codes [%d, %d] cores %u: %u K-slices (K %u), %u N-slices, %u "
           "cores, M-tile %u, %u tasks, %llu weight bytes: %s (%llu wrong)\n", d->m, d->k, d->n,
           d->lo, d->hi, d->cores, info.n_kslices, info.k_padded, info.n_nslices, info.n_cores,
           info.m_tile, info.n_tasks, (unsigned long long)info.w_stored_bytes,
           ok ? "ok" : "FAIL", (unsigned long long)bad);
done:
    ork_npu_matmul_destroy(mm);
    ork_npu_weights_destroy(wt);
    ork_free(w);
    ork_free(a);
    ork_free(c);
    return ok;
}

static void test_shapes(void)
{
    static const struct wcase cases[] = {
        { 1, 32, 64, 1, -8, 7, 1 },
        { 3, 77, 100, 1, -8, 7, 1 },             /* odd K, N padded to 128 */
        { 2, 4133, 65, 1, -1, 1, 3 },            /* small codes: slices of 2048 (the last padded) */
        { 1, 2048, 4096, 3, -1, 1, 1 },          /* one 2048-wide slice, 3 cores */
        { 1, 19000, 64, 1, -8, 7, 0 },           /* full-range codes: the bound slices K */
        { 1, 1000, 12000, 3, -2, 2, 1 },         /* N above 4096 a core: several N-slices */
        { 70, 1500, 200, 1, -8, 7, 0 },          /* 70 tokens: two M-tiles */
        { 130, 640, 400, 3, -8, 7, 0 },          /* three M-tiles on 3 cores */
        { 5, 2500, 96, 0, -3, 3, 0 },            /* cores by the budget */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK(run_case(npu, &cases[i]));
}

/* K-slicing by the int16 bound, as the plan reports it: codes of +-1 take 2048-wide slices,
 * a column of -8 only the 480 rule (npu-weight-decompression.md §2). */
static void test_kslices(void)
{
    const uint32_t K = 6000, N = 64;
    int8_t *w = ork_malloc((size_t)N * K), *a = ork_malloc(K);
    int32_t *c = ork_malloc((size_t)N * 4);
    REQUIRE(w && a && c);
    gen_codes(w, (size_t)N * K, -1, 1);
    gen_any(a, K);
    for (int pass = 0; pass < 2; pass++) {
        if (pass)
            for (uint32_t i = 0; i < K; i++)
                w[(size_t)17 * K + i] = -8;
        struct ork_npu_weights *wt = NULL;
        REQUIRE(make_w4(npu, w, K, N, 1, NULL, &wt) == 0);
        struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = 1, .flags = NW };
        struct ork_npu_matmul *mm = NULL;
        REQUIRE(ork_npu_matmul_create(wt, &md, &mm) == 0);
        struct ork_npu_matmul_info info;
        ork_npu_matmul_get_info(mm, &info);
        CHECK_EQ_INT(info.n_kslices, pass ? 13u : 3u);   /* 188 units: /15 or /64 */
        CHECK(ork_npu_matmul_run_i8(mm, a, 1, c) == 0);
        CHECK_EQ_INT(ref_mismatches(a, w, c, 1, K, N), 0);
        ork_npu_matmul_destroy(mm);
        ork_npu_weights_destroy(wt);
    }
    ork_free(w);
    ork_free(a);
    ork_free(c);
}

/* One weights object, plans of several rows, runs of fewer rows than the plan, submit/wait,
 * async, run_f32, and a chain mixing an int8 plan with W4A8 plans. */
static void test_runs(void)
{
    const uint32_t K = 1200, N = 320, MAXM = 100;
    int8_t *w = ork_malloc((size_t)N * K), *a = ork_malloc((size_t)MAXM * K);
    int32_t *c = ork_malloc((size_t)MAXM * N * 4);
    float *scales = ork_malloc(N * sizeof *scales);
    REQUIRE(w && a && c && scales);
    gen_codes(w, (size_t)N * K, -8, 7);
    gen_any(a, (size_t)MAXM * K);
    for (uint32_t j = 0; j < N; j++)
        scales[j] = 0.01f + 0.001f * (float)j;
    struct ork_npu_weights *wt = NULL;
    REQUIRE(make_w4(npu, w, K, N, MAXM, scales, &wt) == 0);
    struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = MAXM, .cores = 3 };
    struct ork_npu_matmul *mm = NULL;
    REQUIRE(ork_npu_matmul_create(wt, &md, &mm) == 0);
    static const uint32_t rows[] = { 1, 64, 65, 100 };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        memset(c, 0x5a, (size_t)MAXM * N * 4);
        CHECK(ork_npu_matmul_run_i8(mm, a, rows[i], c) == 0);
        CHECK_EQ_INT(ref_mismatches(a, w, c, rows[i], K, N), 0);
    }
    /* submit / wait, and the async worker */
    CHECK(ork_npu_matmul_submit(mm, a, 7) == 0);
    CHECK(ork_npu_matmul_wait(mm, c) == 0);
    CHECK_EQ_INT(ref_mismatches(a, w, c, 7, K, N), 0);
    struct ork_npu_job *job = NULL;
    memset(c, 0, (size_t)MAXM * N * 4);
    CHECK(ork_npu_matmul_submit_async(mm, a, 33, c, &job) == 0);
    CHECK(ork_npu_job_wait(job) == 0);
    CHECK_EQ_INT(ref_mismatches(a, w, c, 33, K, N), 0);
    /* run_f32: quantised rows, int32, dequantised as the int8 path does */
    const uint32_t FM = 3;
    float *x = ork_malloc((size_t)FM * K * sizeof *x), *y = ork_malloc((size_t)FM * N * sizeof *y);
    float *xs = ork_malloc(FM * sizeof *xs);
    int8_t *xq = ork_malloc((size_t)FM * K);
    REQUIRE(x && y && xs && xq);
    for (size_t i = 0; i < (size_t)FM * K; i++)
        x[i] = (float)((int)(next_u32() % 2001) - 1000) / 333.0f;
    CHECK(ork_npu_matmul_run_f32(mm, x, FM, y) == 0);
    CHECK(ork_npu_quantize_rows_i8(x, FM, K, xq, xs) == 0);
    uint32_t fbad = 0;
    for (uint32_t r = 0; r < FM; r++)
        for (uint32_t j = 0; j < N; j++) {
            int32_t acc = 0;
            for (uint32_t i = 0; i < K; i++)
                acc += (int32_t)xq[(size_t)r * K + i] * w[(size_t)j * K + i];
            fbad += y[(size_t)r * N + j] != xs[r] * scales[j] * (float)acc;
        }
    CHECK_EQ_INT(fbad, 0);
    ork_npu_matmul_destroy(mm);
    /* a chain: W4A8, int8, W4A8 (single-core plans of one device) */
    int8_t *w8 = ork_malloc((size_t)N * K);
    REQUIRE(w8);
    gen_any(w8, (size_t)N * K);
    struct ork_npu_weights_desc wd8 = { .struct_size = sizeof wd8, .dtype = ORK_NPU_I8, .k = K,
                                        .n = N, .w = w8, .max_m = 4 };
    struct ork_npu_weights *wt8 = NULL;
    REQUIRE(ork_npu_weights_create(npu, &wd8, &wt8) == 0);
    struct ork_npu_matmul_desc m1 = { .struct_size = sizeof m1, .m = 4, .cores = 1 };
    struct ork_npu_matmul *p[3] = { NULL, NULL, NULL };
    REQUIRE(ork_npu_matmul_create(wt, &m1, &p[0]) == 0);
    REQUIRE(ork_npu_matmul_create(wt8, &m1, &p[1]) == 0);
    REQUIRE(ork_npu_matmul_create(wt, &m1, &p[2]) == 0);
    struct ork_npu_chain *ch = NULL;
    REQUIRE(ork_npu_chain_create(p, 3, &ch) == 0);
    int32_t *cc[3];
    for (int i = 0; i < 3; i++)
        cc[i] = ork_calloc((size_t)4 * N, 4);
    const void *av[3] = { a, a + (size_t)4 * K, a + (size_t)8 * K };
    void *cv[3] = { cc[0], cc[1], cc[2] };
    CHECK(ork_npu_chain_run(ch, av, cv) == 0);
    CHECK_EQ_INT(ref_mismatches(a, w, cc[0], 4, K, N), 0);
    CHECK_EQ_INT(ref_mismatches(a + (size_t)4 * K, w8, cc[1], 4, K, N), 0);
    CHECK_EQ_INT(ref_mismatches(a + (size_t)8 * K, w, cc[2], 4, K, N), 0);
    ork_npu_chain_destroy(ch);
    for (int i = 0; i < 3; i++) {
        ork_npu_matmul_destroy(p[i]);
        ork_free(cc[i]);
    }
    ork_npu_weights_destroy(wt8);
    ork_npu_weights_destroy(wt);
    ork_free(w8);
    ork_free(x);
    ork_free(y);
    ork_free(xs);
    ork_free(xq);
    ork_free(w);
    ork_free(a);
    ork_free(c);
    ork_free(scales);
}

/* The doorbell (spec §8.6) of a task whose last output word is 0x7fffffff, the int8 path's
 * fixed sentinel: the l-row partials of its last two columns are -1 (column 62) and 32767
 * (column 63, at both ends of the bound: P = 2185, Q = 2184, which a certified 2048-wide slice
 * allows). With that sentinel the job would look unfinished and time out; the per-task one
 * (w4a8.h ork__w4a8_sentinel) takes its low half from column 62, which cannot reach 0x7fff. */
static void test_doorbell_edge(void)
{
    const uint32_t K = 2048, N = 64;
    int8_t *w = ork_calloc((size_t)N * K, 1), *a = ork_malloc(K);
    int32_t *c = ork_malloc((size_t)N * 4);
    REQUIRE(w && a && c);
    int8_t *c62 = w + (size_t)62 * K, *c63 = w + (size_t)63 * K;
    for (uint32_t i = 0; i < 312; i++)
        c63[i] = 7;                                 /* P = 2185 */
    c63[312] = 1;
    for (uint32_t i = 313; i < 586; i++)
        c63[i] = -8;                                /* Q = 2184: 7P + 8Q = 32767, 8P + 7Q = 32768 */
    c62[1000] = 1;
    for (uint32_t i = 0; i < K; i++)                /* l = 7 on [0, 313), -8 on [313, 586), */
        a[i] = (int8_t)(i < 313 ? 15 : i < 586 ? 0 : 8);    /* 0 after (q = 8) ... */
    a[1000] = 7;                                    /* ... but -1 at k = 1000 (q = 7) */
    struct ork_sim_opts so = { .struct_size = sizeof so, .strict = true, .board_wait = true };
    struct ork_npu_opts o = { .struct_size = sizeof o, .device = "sim", .sim = &so,
                              .wait_timeout_ms = 300 };
    struct ork_npu *d = NULL;
    REQUIRE(ork_npu_open(&o, &d) == 0);
    struct ork_npu_weights *wt = NULL;
    REQUIRE(make_w4(d, w, K, N, 1, NULL, &wt) == 0);
    struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = 1, .flags = NW, .cores = 1 };
    struct ork_npu_matmul *mm = NULL;
    REQUIRE(ork_npu_matmul_create(wt, &md, &mm) == 0);
    struct ork_npu_matmul_info info;
    ork_npu_matmul_get_info(mm, &info);
    CHECK_EQ_INT(info.n_kslices, 1);
    int ret = ork_npu_matmul_run_i8(mm, a, 1, c);
    if (ret < 0)
        fprintf(stderr, "  run: %s\n", ork_error_describe(ret));
    CHECK_EQ_INT(ret, 0);
    CHECK_EQ_INT(ref_mismatches(a, w, c, 1, K, N), 0);
    ork_npu_matmul_destroy(mm);
    ork_npu_weights_destroy(wt);
    ork_npu_close(d);
    ork_free(w);
    ork_free(a);
    ork_free(c);
}

/* The rocket model: one C buffer per core and silent-timeout sentinels (per task for W4A8). */
static void test_rocket(void)
{
    struct ork_sim_opts so = { .struct_size = sizeof so, .strict = true };
    struct ork_npu_opts o = { .struct_size = sizeof o, .device = "sim-rocket", .sim = &so };
    struct ork_npu *r = NULL;
    REQUIRE(ork_npu_open(&o, &r) == 0);
    CHECK(ork_npu_confirmed_forms(r) & ORK_NPU_FORM_W4A8);
    const struct wcase d = { 66, 900, 390, 3, -8, 7, 0 };
    CHECK(run_case(r, &d));
    ork_npu_close(r);
}

static void test_blob_round_trip(void)
{
    const uint32_t K = 3000, N = 200, MAXM = 8;
    int8_t *w = ork_malloc((size_t)N * K), *a = ork_malloc((size_t)MAXM * K);
    int32_t *c = ork_malloc((size_t)MAXM * N * 4);
    REQUIRE(w && a && c);
    gen_codes(w, (size_t)N * K, -3, 3);
    gen_any(a, (size_t)MAXM * K);
    struct ork_npu_weights *wt = NULL, *wp = NULL;
    REQUIRE(make_w4(npu, w, K, N, MAXM, NULL, &wt) == 0);
    const uint64_t bytes = ork_npu_weights_bytes(wt);
    uint8_t *blob = ork_malloc(bytes), *bad = ork_malloc(bytes);
    REQUIRE(blob && bad);
    CHECK_EQ_INT(ork_npu_weights_export(wt, blob, bytes - 1), ORK_ENOSPC);
    REQUIRE(ork_npu_weights_export(wt, blob, bytes) == 0);
    CHECK(memcmp(blob, "ORKW4A8", 8) == 0);
    struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = ORK_NPU_I8, .k = K,
                                       .n = N, .max_m = MAXM, .encoding = ORK_NPU_WEIGHTS_W4A8 };
    REQUIRE(ork_npu_weights_create_packed(npu, &wd, blob, bytes, &wp) == 0);
    CHECK_EQ_INT(ork_npu_weights_bytes(wp), bytes);
    struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = MAXM, .flags = NW };
    struct ork_npu_matmul *mm = NULL;
    REQUIRE(ork_npu_matmul_create(wp, &md, &mm) == 0);
    CHECK(ork_npu_matmul_run_i8(mm, a, MAXM, c) == 0);
    CHECK_EQ_INT(ref_mismatches(a, w, c, MAXM, K, N), 0);    /* the sums came back too */
    ork_npu_matmul_destroy(mm);
    ork_npu_weights_destroy(wp);
    /* refusals: a header field, the descriptor's shape, truncation, a padding code */
    wp = NULL;
    memcpy(bad, blob, bytes);
    bad[8] = 9;                                             /* version */
    CHECK_EQ_INT(ork_npu_weights_create_packed(npu, &wd, bad, bytes, &wp), ORK_EFORMAT);
    CHECK(strstr(ork_error_message(), "version") != NULL);
    CHECK_EQ_INT(ork_npu_weights_create_packed(npu, &wd, blob, bytes - 16, &wp), ORK_EFORMAT);
    CHECK(strstr(ork_error_message(), "data_bytes") != NULL);
    struct ork_npu_weights_desc wk = wd;
    wk.k = K + 1;
    CHECK_EQ_INT(ork_npu_weights_create_packed(npu, &wk, blob, bytes, &wp), ORK_EFORMAT);
    CHECK(strstr(ork_error_message(), "field k") != NULL);
    memcpy(bad, blob, bytes);
    bad[bytes - 1] = 0x30;             /* the last byte: a padding column (N = 200 of 256) */
    CHECK_EQ_INT(ork_npu_weights_create_packed(npu, &wd, bad, bytes, &wp), ORK_EFORMAT);
    CHECK(strstr(ork_error_message(), "padding") != NULL);
    CHECK(wp == NULL);
    ork_npu_weights_destroy(wt);
    ork_free(blob);
    ork_free(bad);
    ork_free(w);
    ork_free(a);
    ork_free(c);
}

static void test_refusals(void)
{
    int8_t w[64 * 64] = { 0 };
    struct ork_npu_weights *wt = NULL;
    w[5 * 64 + 9] = 8;                                   /* above 7 */
    CHECK_EQ_INT(make_w4(npu, w, 64, 64, 1, NULL, &wt), ORK_EINVAL);
    CHECK(strstr(ork_error_message(), "row 5 column 9") != NULL);
    w[5 * 64 + 9] = -9;
    CHECK_EQ_INT(make_w4(npu, w, 64, 64, 1, NULL, &wt), ORK_EINVAL);
    w[5 * 64 + 9] = -8;
    uint16_t h[64 * 64] = { 0 };
    struct ork_npu_weights_desc wf = { .struct_size = sizeof wf, .dtype = ORK_NPU_F16, .k = 64,
                                       .n = 64, .w = h, .encoding = ORK_NPU_WEIGHTS_W4A8 };
    CHECK_EQ_INT(ork_npu_weights_create(npu, &wf, &wt), ORK_EINVAL);
    CHECK(strstr(ork_error_message(), "fp16") != NULL);
    /* an fp16 run on W4A8 weights */
    REQUIRE(make_w4(npu, w, 64, 64, 1, NULL, &wt) == 0);
    struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = 1, .flags = NW };
    struct ork_npu_matmul *mm = NULL;
    REQUIRE(ork_npu_matmul_create(wt, &md, &mm) == 0);
    float cf[64];
    CHECK_EQ_INT(ork_npu_matmul_run_f16(mm, h, 1, cf), ORK_EINVAL);
    CHECK_EQ_INT(ork_npu_matmul_run_f32(mm, (const float *)(const void *)h, 1, cf), ORK_EINVAL);
    ork_npu_matmul_destroy(mm);
    ork_npu_weights_destroy(wt);
    /* a device that has not shown the int4 programs */
    struct ork_sim_opts so = { .struct_size = sizeof so, .strict = true, .deny_w4a8 = true };
    struct ork_npu_opts o = { .struct_size = sizeof o, .device = "sim", .sim = &so };
    struct ork_npu *d2 = NULL;
    REQUIRE(ork_npu_open(&o, &d2) == 0);
    CHECK(!(ork_npu_confirmed_forms(d2) & ORK_NPU_FORM_W4A8));
    CHECK_EQ_INT(make_w4(d2, w, 64, 64, 1, NULL, &wt), ORK_EUNSUPPORTED);
    CHECK(strstr(ork_error_message(), "'w4a8'") != NULL);
    CHECK(strstr(ork_error_message(), "ork selftest --confirm-forms") != NULL);
    ork_npu_close(d2);
    o.confirmed_forms = ORK_NPU_FORM_W4A8;                /* ... unless the caller vouches */
    REQUIRE(ork_npu_open(&o, &d2) == 0);
    CHECK(make_w4(d2, w, 64, 64, 1, NULL, &wt) == 0);
    ork_npu_weights_destroy(wt);
    ork_npu_close(d2);
}

static uint64_t page_up(uint64_t b)
{
    return (b + 4095) / 4096 * 4096;
}

/* ork_npu_weights_estimate_bytes_w4a8 bounds the device bytes of the weights and their plans of
 * 1 and max_m tokens, and meets them for codes that take the most slices (a column of -8). */
static void test_estimate(void)
{
    static const struct { uint32_t k, n, max_m, cores; bool worst; } cases[] = {
        { 896, 4864, 128, 3, true }, { 4864, 896, 16, 3, false }, { 6000, 200, 70, 1, true },
        { 100, 64, 1, 1, false },
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const uint32_t k = cases[ci].k, n = cases[ci].n, mm_rows[2] = { 1, cases[ci].max_m };
        int8_t *w = ork_malloc((size_t)n * k);
        REQUIRE(w);
        gen_codes(w, (size_t)n * k, -1, 1);
        for (uint32_t i = 0; cases[ci].worst && i < k; i++)
            w[i] = -8;
        struct ork_npu_weights *wt = NULL;
        REQUIRE(make_w4(npu, w, k, n, cases[ci].max_m, NULL, &wt) == 0);
        uint64_t used = page_up(wt->bo.size);
        for (int p = 0; p < 1 + (cases[ci].max_m > 1); p++) {
            struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = mm_rows[p],
                                              .flags = NW, .cores = cases[ci].cores };
            struct ork_npu_matmul *mm = NULL;
            REQUIRE(ork_npu_matmul_create(wt, &md, &mm) == 0);
            used += page_up(mm->a_bo.size) + page_up(mm->prog_bo.size);
            for (uint32_t b = 0; b < mm->n_cbo; b++)
                used += page_up(mm->c_bo[b].size);
            ork_npu_matmul_destroy(mm);
        }
        const uint64_t est = ork_npu_weights_estimate_bytes_w4a8(n, k, cases[ci].max_m);
        printf("  K=%u N=%u max_m %u: estimate %llu, used %llu\n", k, n, cases[ci].max_m,
               (unsigned long long)est, (unsigned long long)used);
        CHECK(est >= used);
        if (cases[ci].worst)
            CHECK(est <= used + 65536);   /* the same slicing: pages and the most cores' programs */
        ork_npu_weights_destroy(wt);
        ork_free(w);
    }
    CHECK_EQ_INT(ork_npu_weights_estimate_bytes_w4a8(64, 64 * 2048 + 32, 1), 0);
    CHECK_EQ_INT(ork_npu_weights_estimate_bytes_w4a8(64, 0, 1), 0);
}

static void test_no_hazards(void)
{
    struct ork_sim_counters k;
    ork__sim_counters(ork__kmd_sim_get(npu->kmd, npu->kctx), &k);
    CHECK(k.tasks > 0);
    CHECK_EQ_INT(k.warnings, 0);
    CHECK_EQ_INT(k.failed_jobs, 0);
}

int main(void)
{
    struct ork_sim_opts so = { .struct_size = sizeof so, .strict = true };
    struct ork_npu_opts o = { .struct_size = sizeof o, .device = "sim", .sim = &so };
    int ret = ork_npu_open(&o, &npu);
    if (ret < 0) {
        fprintf(stderr, "open sim: %s\n", ork_error_describe(ret));
        return 1;
    }
    if (!(ork_npu_confirmed_forms(npu) & ORK_NPU_FORM_W4A8)) {
        fprintf(stderr, "the simulator does not confirm ORK_NPU_FORM_W4A8\n");
        return 1;
    }
    RUN(test_shapes);
    RUN(test_kslices);
    RUN(test_runs);
    RUN(test_rocket);
    RUN(test_doorbell_edge);
    RUN(test_blob_round_trip);
    RUN(test_refusals);
    RUN(test_estimate);
    RUN(test_no_hazards);
    ork_npu_close(npu);
    return ork_test_done();
}
