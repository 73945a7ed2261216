/* test_dcomp_matmul.c -- DCOMP weights (encoding = ORK_NPU_WEIGHTS_DCOMP) through the whole
 * libork path on the simulator, which decodes each compressed task's stream from DCOMP_ADDR0
 * with its AMOUNTs (npu-weight-decompression.md §1.4): every matmul on compressed weights must
 * be bit-identical to the same matmul on raw weights and to an integer reference, across small
 * and real-size K and N, K-sliced weights, N above 8192 per core, 1 and 3 cores (a plan of
 * other cores than the streams were cut for), M > 1 with several plans of different rows on
 * one weights object, chains, the grids L = 7..127, and the export / create_packed round trip.
 * Also the refusals: codes outside the grid, fp16, and a device without the capability. */
#include "ork_test.h"

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/npu.h>
#include <ork/sim.h>

#include "libork/ork_priv.h"
#include "sim/sim.h"

#include <stdint.h>
#include <string.h>

#define NW ORK_NPU_MATMUL_NO_WARMUP

static struct ork_npu *npu;
static uint64_t rng = 0x2545f4914f6cdd1dull;
#include "test_rand_mm.h"

/* Codes on the grid [-L, L], peaked at 0 like quantised weights (so blocks compress): the sum
 * of four uniforms over [-L/4, L/4], clamped. */
static void gen_codes(int8_t *w, size_t count, uint32_t L)
{
    for (size_t i = 0; i < count; i++) {
        int32_t v = 0;
        for (int r = 0; r < 4; r++)
            v += (int32_t)(next_u32() % (L / 2 + 1)) - (int32_t)(L / 4);
        v = v > (int32_t)L ? (int32_t)L : v < -(int32_t)L ? -(int32_t)L : v;
        w[i] = (int8_t)v;
    }
}

static int make_weights(const int8_t *w, uint32_t k, uint32_t n, uint32_t max_m, uint32_t enc,
                        uint32_t L, struct ork_npu_weights **out)
{
    struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = ORK_NPU_I8, .k = k,
                                       .n = n, .w = w, .max_m = max_m, .encoding = enc,
                                       .grid_max_abs = L };
    int ret = ork_npu_weights_create(npu, &wd, out);
    if (ret < 0)
        fprintf(stderr, "  weights (%s): %s\n", enc ? "dcomp" : "raw", ork_error_describe(ret));
    return ret;
}

/* Run m rows of a on weights wt with a plan of `cores`; C into c. */
static int run_plan(struct ork_npu_weights *wt, uint32_t m, uint32_t cores, const int8_t *a,
                    int32_t *c, struct ork_npu_matmul_info *info)
{
    struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = m, .flags = NW,
                                      .cores = cores };
    struct ork_npu_matmul *mm = NULL;
    int ret = ork_npu_matmul_create(wt, &md, &mm);
    if (ret == 0) {
        if (info)
            ork_npu_matmul_get_info(mm, info);
        ret = ork_npu_matmul_run_i8(mm, a, m, c);
    }
    if (ret < 0)
        fprintf(stderr, "  plan/run: %s\n", ork_error_describe(ret));
    ork_npu_matmul_destroy(mm);
    return ret;
}

struct dcase {
    uint32_t m, k, n, max_m, cores, L;
    bool want_compressed;        /* some block must be stored as a stream */
};

static bool pair_case(const struct dcase *d)
{
    const uint32_t max_m = d->max_m ? d->max_m : d->m;
    int8_t *w = ork_malloc((size_t)d->n * d->k), *a = ork_malloc((size_t)d->m * d->k);
    int32_t *c_raw = ork_malloc((size_t)d->m * d->n * 4), *c_dc = ork_malloc((size_t)d->m * d->n * 4);
    struct ork_npu_weights *raw = NULL, *dc = NULL;
    bool ok = false;
    if (!w || !a || !c_raw || !c_dc)
        goto done;
    gen_codes(w, (size_t)d->n * d->k, d->L);
    gen_any(a, (size_t)d->m * d->k);
    if (make_weights(w, d->k, d->n, max_m, ORK_NPU_WEIGHTS_RAW, 0, &raw) < 0 ||
        make_weights(w, d->k, d->n, max_m, ORK_NPU_WEIGHTS_DCOMP, d->L, &dc) < 0)
        goto done;
    struct ork_npu_weights_dcomp_info di;
    ork_npu_weights_get_dcomp_info(dc, &di);
    struct ork_npu_matmul_info info;
    memset(c_dc, 0x5a, (size_t)d->m * d->n * 4);
    if (run_plan(raw, d->m, d->cores, a, c_raw, NULL) < 0 ||
        run_plan(dc, d->m, d->cores, a, c_dc, &info) < 0)
        goto done;
    bool same = memcmp(c_raw, c_dc, (size_t)d->m * d->n * 4) == 0;
    uint64_t bad = ref_mismatches(a, w, c_dc, d->m, d->k, d->n);
    bool shrunk = di.n_raw_blocks < di.n_blocks && di.stored_bytes < di.raw_bytes;
    ok = di.compressed && same && bad == 0 && (!d->want_compressed || shrunk);
    printf("  M=%u K=%u N=%u L=%u cores %u: plan cores %u tasks %u; %u blocks (%u raw), %.2f "
           "bpw, %llu of %llu bytes: %s\n", d->m, d->k, d->n, d->L, d->cores, info.n_cores,
           info.n_tasks, di.n_blocks, di.n_raw_blocks, di.bpw,
           (unsigned long long)di.stored_bytes, (unsigned long long)di.raw_bytes,
           ok ? "ok" : same ? "NOT COMPRESSED" : "MISMATCH");
done:
    ork_npu_weights_destroy(raw);
    ork_npu_weights_destroy(dc);
    ork_free(w);
    ork_free(a);
    ork_free(c_raw);
    ork_free(c_dc);
    return ok;
}

static void test_shapes(void)
{
    static const struct dcase cases[] = {
        { 1, 64, 64, 0, 1, 7, false },             /* tiny: blocks stay raw (§1.4) */
        { 3, 100, 40, 0, 1, 15, false },           /* K and N padded */
        { 1, 1024, 256, 0, 1, 15, true },
        { 1, 2048, 2048, 0, 3, 31, true },         /* real size, 3 cores */
        { 1, 2048, 2048, 0, 1, 31, true },         /* 1-core plan on 3-core streams */
        { 1, 18944, 64, 0, 1, 15, true },          /* K-sliced at M = 1 (K > 8192) */
        { 1, 64, 18944, 0, 1, 7, true },           /* N > 8192: several N-slices */
        { 1, 1024, 18944, 0, 3, 7, true },         /* N > 8192 on 3 cores */
        { 5, 6144, 96, 16, 0, 31, true },          /* M > 1, K-sliced for max_m */
        { 64, 512, 512, 0, 3, 63, true },
        { 130, 512, 64, 0, 1, 127, false },        /* several M-tiles, full int8 grid */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK(pair_case(&cases[i]));
}

static void test_grids(void)
{
    static const uint32_t grids[] = { 7, 15, 31, 63, 127 };
    double last_bpw = 0;
    for (size_t g = 0; g < sizeof grids / sizeof grids[0]; g++) {
        struct dcase d = { 2, 1024, 512, 0, 3, grids[g], grids[g] < 127 };
        CHECK(pair_case(&d));
        /* coarser grids are shorter streams */
        int8_t *w = ork_malloc((size_t)512 * 1024);
        REQUIRE(w != NULL);
        gen_codes(w, (size_t)512 * 1024, grids[g]);
        struct ork_npu_weights *dc = NULL;
        CHECK(make_weights(w, 1024, 512, 2, ORK_NPU_WEIGHTS_DCOMP, grids[g], &dc) == 0);
        struct ork_npu_weights_dcomp_info di;
        ork_npu_weights_get_dcomp_info(dc, &di);
        CHECK(di.bpw >= last_bpw);
        last_bpw = di.bpw;
        ork_npu_weights_destroy(dc);
        ork_free(w);
    }
}

/* Several plans of different rows on one DCOMP weights object, and a chain of two of them. */
static void test_row_plans_and_chain(void)
{
    const uint32_t K = 1536, N = 768, MAXM = 48;
    int8_t *w = ork_malloc((size_t)N * K), *a = ork_malloc((size_t)MAXM * K);
    int32_t *c = ork_malloc((size_t)MAXM * N * 4), *c2 = ork_malloc((size_t)MAXM * N * 4);
    REQUIRE(w && a && c && c2);
    gen_codes(w, (size_t)N * K, 15);
    gen_any(a, (size_t)MAXM * K);
    struct ork_npu_weights *dc = NULL;
    REQUIRE(make_weights(w, K, N, MAXM, ORK_NPU_WEIGHTS_DCOMP, 15, &dc) == 0);
    static const uint32_t rows[] = { 1, 4, 17, 48 };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        CHECK(run_plan(dc, rows[i], 0, a, c, NULL) == 0);
        CHECK_EQ_INT(ref_mismatches(a, w, c, rows[i], K, N), 0);
    }
    struct ork_npu_matmul *p[2] = { NULL, NULL };
    struct ork_npu_matmul_desc md1 = { .struct_size = sizeof md1, .m = 1, .flags = NW, .cores = 3 };
    struct ork_npu_matmul_desc md2 = { .struct_size = sizeof md2, .m = 8, .flags = NW, .cores = 1 };
    REQUIRE(ork_npu_matmul_create(dc, &md1, &p[0]) == 0);
    REQUIRE(ork_npu_matmul_create(dc, &md2, &p[1]) == 0);
    struct ork_npu_chain *ch = NULL;
    REQUIRE(ork_npu_chain_create(p, 2, &ch) == 0);
    const void *as[2] = { a, a + K };
    void *cs[2] = { c, c2 };
    CHECK(ork_npu_chain_run(ch, as, cs) == 0);
    CHECK_EQ_INT(ref_mismatches(a, w, c, 1, K, N), 0);
    CHECK_EQ_INT(ref_mismatches(a + K, w, c2, 8, K, N), 0);
    ork_npu_chain_destroy(ch);
    ork_npu_matmul_destroy(p[0]);
    ork_npu_matmul_destroy(p[1]);
    ork_npu_weights_destroy(dc);
    ork_free(w);
    ork_free(a);
    ork_free(c);
    ork_free(c2);
}

/* export -> create_packed gives the same blob and the same results; damaged blobs are refused. */
static void test_blob_round_trip(void)
{
    const uint32_t K = 2048, N = 1024, M = 2;
    int8_t *w = ork_malloc((size_t)N * K), *a = ork_malloc((size_t)M * K);
    int32_t *c = ork_malloc((size_t)M * N * 4);
    REQUIRE(w && a && c);
    gen_codes(w, (size_t)N * K, 31);
    gen_any(a, (size_t)M * K);
    struct ork_npu_weights *dc = NULL, *back = NULL;
    REQUIRE(make_weights(w, K, N, M, ORK_NPU_WEIGHTS_DCOMP, 31, &dc) == 0);
    const uint64_t bytes = ork_npu_weights_bytes(dc);
    struct ork_npu_weights_dcomp_info di;
    ork_npu_weights_get_dcomp_info(dc, &di);
    CHECK(bytes > di.stored_bytes && bytes < di.raw_bytes);
    uint8_t *blob = ork_malloc(bytes), *again = ork_malloc(bytes);
    REQUIRE(blob && again);
    CHECK(ork_npu_weights_export(dc, blob, bytes - 1) == ORK_ENOSPC);
    REQUIRE(ork_npu_weights_export(dc, blob, bytes) == 0);
    struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = ORK_NPU_I8, .k = K,
                                       .n = N, .max_m = M, .encoding = ORK_NPU_WEIGHTS_DCOMP };
    REQUIRE(ork_npu_weights_create_packed(npu, &wd, blob, bytes, &back) == 0);
    REQUIRE(ork_npu_weights_export(back, again, bytes) == 0);
    CHECK(memcmp(blob, again, bytes) == 0);
    CHECK(run_plan(back, M, 0, a, c, NULL) == 0);
    CHECK_EQ_INT(ref_mismatches(a, w, c, M, K, N), 0);
    ork_npu_weights_destroy(back);
    back = NULL;
    /* refusals, each naming its field */
    CHECK(ork_npu_weights_create_packed(npu, &wd, blob, bytes - 1, &back) == ORK_EFORMAT);
    wd.k = K + 32;
    CHECK(ork_npu_weights_create_packed(npu, &wd, blob, bytes, &back) == ORK_EFORMAT);
    CHECK(strstr(ork_error_message(), "k=") != NULL);
    wd.k = K;
    blob[64 + 40] ^= 0x10;                       /* block 0's offset: misaligned */
    CHECK(ork_npu_weights_create_packed(npu, &wd, blob, bytes, &back) == ORK_EFORMAT);
    CHECK(strstr(ork_error_message(), "aligned") != NULL);
    blob[64 + 40] ^= 0x10;
    blob[64 + 64] ^= 0x08;                       /* block 0's AMOUNT0: size disagrees */
    CHECK(ork_npu_weights_create_packed(npu, &wd, blob, bytes, &back) == ORK_EFORMAT);
    CHECK(strstr(ork_error_message(), "AMOUNT") != NULL);
    blob[64 + 64] ^= 0x08;
    blob[8] = 9;                                 /* version */
    CHECK(ork_npu_weights_create_packed(npu, &wd, blob, bytes, &back) == ORK_EFORMAT);
    CHECK(strstr(ork_error_message(), "version") != NULL);
    CHECK(back == NULL);
    ork_npu_weights_destroy(dc);
    ork_free(blob);
    ork_free(again);
    ork_free(w);
    ork_free(a);
    ork_free(c);
}

static void test_refusals(void)
{
    int8_t w[64 * 64];
    gen_codes(w, sizeof w, 7);
    w[5 * 64 + 9] = 8;                           /* row 5, column 9 off the L = 7 grid */
    struct ork_npu_weights *wt = NULL;
    CHECK(make_weights(w, 64, 64, 1, ORK_NPU_WEIGHTS_DCOMP, 7, &wt) == ORK_EINVAL);
    CHECK(strstr(ork_error_message(), "row 5 column 9") != NULL);
    CHECK(make_weights(w, 64, 64, 1, ORK_NPU_WEIGHTS_DCOMP, 0, &wt) == 0);   /* 0 = 127 */
    ork_npu_weights_destroy(wt);
    wt = NULL;
    CHECK(make_weights(w, 64, 64, 1, ORK_NPU_WEIGHTS_DCOMP, 3, &wt) == ORK_EINVAL);
    CHECK(make_weights(w, 64, 64, 1, 7, 0, &wt) == ORK_EINVAL);
    uint16_t h[64 * 64] = { 0 };
    struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = ORK_NPU_F16, .k = 64,
                                       .n = 64, .w = h, .encoding = ORK_NPU_WEIGHTS_DCOMP };
    CHECK(ork_npu_weights_create(npu, &wd, &wt) == ORK_EINVAL);
    CHECK(strstr(ork_error_message(), "int8") != NULL);
    CHECK(ork_npu_confirmed_forms(npu) & ORK_NPU_FORM_DCOMP);

    /* a device that has not shown the decompressor refuses DCOMP weights, naming it */
    struct ork_sim_opts so = { .struct_size = sizeof so, .deny_dcomp = true };
    struct ork_npu_opts o = { .struct_size = sizeof o, .device = "sim", .sim = &so };
    struct ork_npu *d2 = NULL;
    REQUIRE(ork_npu_open(&o, &d2) == 0);
    CHECK(!(ork_npu_confirmed_forms(d2) & ORK_NPU_FORM_DCOMP));
    struct ork_npu_weights_desc wd2 = { .struct_size = sizeof wd2, .dtype = ORK_NPU_I8, .k = 64,
                                        .n = 64, .w = w, .encoding = ORK_NPU_WEIGHTS_DCOMP };
    w[5 * 64 + 9] = 1;
    CHECK(ork_npu_weights_create(d2, &wd2, &wt) == ORK_EUNSUPPORTED);
    CHECK(strstr(ork_error_message(), "'dcomp'") != NULL);
    CHECK(strstr(ork_error_message(), "--confirm-forms") != NULL);
    /* ... unless the caller vouches for it */
    ork_npu_close(d2);
    o.confirmed_forms = ORK_NPU_FORM_DCOMP;
    REQUIRE(ork_npu_open(&o, &d2) == 0);
    CHECK(ork_npu_weights_create(d2, &wd2, &wt) == 0);
    ork_npu_weights_destroy(wt);
    ork_npu_close(d2);
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
    RUN(test_shapes);
    RUN(test_grids);
    RUN(test_row_plans_and_chain);
    RUN(test_blob_round_trip);
    RUN(test_refusals);
    RUN(test_no_hazards);
    ork_npu_close(npu);
    return ork_test_done();
}
