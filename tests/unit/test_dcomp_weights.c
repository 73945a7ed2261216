/* test_dcomp_weights.c -- whole weights as per-core decompressor streams and the weight grids
 * (include/ork/dcomp.h): the split matches a plan's (K-slices tile K, each core's N-slices are
 * contiguous column-tile ranges of <= 8192 columns, every block 64-aligned), random and real
 * fixture weights round-trip on every grid and core count, grids quantise as documented, the
 * Hadamard rotation is orthonormal and its own inverse, and the grid pick honours the bound. */
#include "ork_test.h"

#include <ork-engine/gguf.h>
#include <ork-kernels/kernels.h>
#include <ork/dcomp.h>
#include <ork/error.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x853c49e6748fea9bull;

static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

static float gauss(void)
{
    float s = 0.0f;
    for (int i = 0; i < 12; i++)
        s += (float)(rnd() & 0xffff) / 65536.0f;
    return s - 6.0f;
}

/* Encode W with the given split, check the layout, decode and compare. */
static void check_weights(const int8_t *w, uint32_t n, uint32_t k, uint32_t max_m,
                          uint32_t cores, uint32_t grid)
{
    struct ork_dcomp_weights dw;
    const struct ork_dcomp_weights_desc d = {
        .struct_size = sizeof d, .k = k, .n = n, .w = w, .max_m = max_m, .cores = cores,
    };
    REQUIRE(ork_dcomp_weights_encode(&d, &dw) == 0);
    CHECK_EQ_INT(dw.n_parts, dw.n_kslices * dw.n_nslices);
    uint32_t kcov = 0;
    for (uint32_t p = 0; p < dw.n_parts; p++) {
        const struct ork_dcomp_part *pt = &dw.parts[p];
        CHECK(pt->off % 64 == 0);
        CHECK(pt->npad <= 8192 && pt->npad % 32 == 0 && pt->kpad % 32 == 0);
        if (pt->nslice == 0)
            kcov += pt->klen;
        if (pt->nslice > 0) {          /* columns contiguous, cores in order */
            const struct ork_dcomp_part *prev = pt - 1;
            CHECK_EQ_INT(pt->n0, prev->n0 + prev->npad);
            CHECK(pt->core == prev->core || pt->core == prev->core + 1);
        }
    }
    CHECK_EQ_INT(kcov, k);
    uint64_t per_core = 0, blocks = 0;
    for (uint32_t c = 0; c < 4; c++)
        per_core += ork_dcomp_weights_core_bytes(&dw, c);
    for (uint32_t p = 0; p < dw.n_parts; p++)
        blocks += dw.parts[p].info.bytes;
    CHECK_EQ_INT(per_core, blocks);
    CHECK_EQ_INT(ork_dcomp_weights_core_bytes(&dw, dw.n_cores), 0);
    CHECK(dw.bytes >= blocks);
    const struct ork_dcomp_part *last = &dw.parts[dw.n_parts - 1];
    CHECK_EQ_INT(last->core + 1, dw.n_cores);
    CHECK(last->n0 + last->nlen == n);
    int8_t *back = malloc((size_t)n * k);
    struct ork_dcomp_check chk = { .max_abs = grid };
    CHECK_EQ_INT(ork_dcomp_weights_decode(&dw, &chk, back), 0);
    CHECK(memcmp(back, w, (size_t)n * k) == 0);
    free(back);
    ork_dcomp_weights_fini(&dw);
}

static void test_split_random(void)
{
    static const uint32_t shapes[][3] = {       /* n, k, max_m */
        { 100, 70, 1 }, { 64, 64, 1 }, { 200, 300, 1 }, { 8300, 64, 1 }, { 96, 6000, 64 },
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (uint32_t cores = 1; cores <= 3; cores++) {
            uint32_t n = shapes[s][0], k = shapes[s][1];
            int8_t *w = malloc((size_t)n * k);
            for (size_t i = 0; i < (size_t)n * k; i++)
                w[i] = (int8_t)((int)(rnd() % 31) - 15);
            check_weights(w, n, k, shapes[s][2], cores, 15);
            free(w);
        }
}

static void test_split_cores(void)
{
    /* a plan clamps cores to >= 2 column tiles each (matmul.c, spec §9): 3 tiles -> 1 core */
    int8_t w[96 * 32] = { 0 };
    struct ork_dcomp_weights dw;
    struct ork_dcomp_weights_desc d = {
        .struct_size = sizeof d, .k = 32, .n = 96, .w = w, .cores = 3,
    };
    REQUIRE(ork_dcomp_weights_encode(&d, &dw) == 0);
    CHECK_EQ_INT(dw.n_cores, 1);
    ork_dcomp_weights_fini(&dw);
    /* 20000 columns on 2 cores: each core's 10000 columns cut into two slices <= 8192 */
    int8_t *big = calloc(20000, 32);
    d.n = 20000;
    d.w = big;
    d.cores = 2;
    REQUIRE(ork_dcomp_weights_encode(&d, &dw) == 0);
    CHECK_EQ_INT(dw.n_cores, 2);
    CHECK_EQ_INT(dw.n_nslices, 4);
    CHECK_EQ_INT(dw.parts[2].core, 1);
    CHECK_EQ_INT(dw.parts[2].n0, 9984);         /* tile 312 of 625 */
    CHECK_EQ_INT(dw.n_raw, 0);                  /* all-zero blocks shrink */
    /* to the format's floor: 2-bit codeword + sign bit = 3 bits a weight (spec §1.4) */
    CHECK(ork_dcomp_weights_bpw(&dw) > 3.0 && ork_dcomp_weights_bpw(&dw) < 3.1);
    ork_dcomp_weights_fini(&dw);
    free(big);
}

static void test_quantize_grid(void)
{
    const float w[8] = { 7.0f, -3.5f, 1.75f, 0.0f, 0, 0, 0, 0 };
    int8_t q[8];
    float s[2];
    REQUIRE(ork_dcomp_quantize(w, 2, 4, 7, 0, q, s) == 0);
    CHECK_NEAR(s[0], 1.0f, 1e-7);
    CHECK_EQ_INT(q[0], 7);
    CHECK_EQ_INT(q[1], -4);                    /* -3.5 rounds half away from zero */
    CHECK_EQ_INT(q[2], 2);                     /* 1.75 */
    CHECK_EQ_INT(q[3], 0);
    CHECK_EQ_INT(s[1], 1.0f);                  /* all-zero row */
    CHECK_EQ_INT(ork_dcomp_quantize(w, 2, 4, 128, 0, q, s), ORK_ERANGE);
    /* exact codes have zero error; a coarser grid never has less error than a finer one on
     * Gaussian rows; clipping never increases it */
    const uint32_t n = 64, k = 256;
    float *g = malloc(sizeof(float) * n * k);
    int8_t *c = malloc((size_t)n * k);
    float sc[64];
    for (uint32_t i = 0; i < n * k; i++)
        g[i] = gauss();
    double prev = 1e9;
    for (uint32_t i = 0; i < ORK_DCOMP_N_GRIDS; i++) {
        REQUIRE(ork_dcomp_quantize(g, n, k, ork_dcomp_grids[i], 0, c, sc) == 0);
        double e = ork_dcomp_rel_rmse(g, c, sc, n, k);
        REQUIRE(ork_dcomp_quantize(g, n, k, ork_dcomp_grids[i], ORK_DCOMP_QUANT_CLIP, c, sc) == 0);
        double ec = ork_dcomp_rel_rmse(g, c, sc, n, k);
        CHECK(e < prev);
        CHECK(ec <= e);
        prev = e;
    }
    free(g);
    free(c);
}

static void test_hadamard(void)
{
    float x[8] = { 1, 0, 0, 0, 3, -1, 2, 0.5f };
    const float orig[8] = { 1, 0, 0, 0, 3, -1, 2, 0.5f };
    REQUIRE(ork_dcomp_hadamard_rows(x, 2, 4, 4) == 0);
    for (int i = 0; i < 4; i++)
        CHECK_NEAR(x[i], 0.5f, 1e-7);
    double n0 = 0, n1 = 0;
    for (int i = 4; i < 8; i++) {
        n0 += (double)orig[i] * orig[i];
        n1 += (double)x[i] * x[i];
    }
    CHECK_NEAR(n1, n0, 1e-5);
    REQUIRE(ork_dcomp_hadamard_rows(x, 2, 4, 4) == 0);
    for (int i = 0; i < 8; i++)
        CHECK_NEAR(x[i], orig[i], 1e-6);
    CHECK_EQ_INT(ork_dcomp_hadamard_rows(x, 2, 4, 3), ORK_EINVAL);
    CHECK_EQ_INT(ork_dcomp_hadamard_block(6144, 0), 2048);
    CHECK_EQ_INT(ork_dcomp_hadamard_block(172, 0), 4);
    CHECK_EQ_INT(ork_dcomp_hadamard_block(4096, 256), 256);
}

static void test_pick(void)
{
    const uint32_t n = 32, k = 256;
    float *g = malloc(sizeof(float) * n * k);
    for (uint32_t i = 0; i < n * k; i++)
        g[i] = gauss();
    struct ork_dcomp_grid_result res[ORK_DCOMP_N_GRIDS];
    struct ork_dcomp_grid_opts o = { .max_rel_rmse = 1.0 };
    uint32_t picked;
    bool met;
    REQUIRE(ork_dcomp_grid_pick(g, n, k, &o, res, &picked, &met) == 0);
    CHECK(met);
    CHECK_EQ_INT(picked, 0);
    for (uint32_t i = 1; i < ORK_DCOMP_N_GRIDS; i++) {
        CHECK(res[i].rel_rmse < res[i - 1].rel_rmse);
        CHECK(res[i].bpw > res[i - 1].bpw);
    }
    o.max_rel_rmse = (res[1].rel_rmse + res[2].rel_rmse) / 2;   /* between L = 15 and L = 31 */
    REQUIRE(ork_dcomp_grid_pick(g, n, k, &o, res, &picked, &met) == 0);
    CHECK(met);
    CHECK_EQ_INT(ork_dcomp_grids[picked], 31);
    o.max_rel_rmse = 0.0;
    REQUIRE(ork_dcomp_grid_pick(g, n, k, &o, res, &picked, &met) == 0);
    CHECK(!met);
    CHECK_EQ_INT(picked, ORK_DCOMP_N_GRIDS - 1);
    o.hadamard_block = 256;
    o.quant_flags = ORK_DCOMP_QUANT_CLIP;
    REQUIRE(ork_dcomp_grid_pick(g, n, k, &o, res, &picked, &met) == 0);
    CHECK(res[0].rel_rmse > 0 && res[0].rel_rmse < 1);
    free(g);
}

/* Real weights: every 2-D tensor of the fixtures, on every grid, 1 and 2 cores. */
static void fixture_roundtrip(const char *rel)
{
    struct ork_gguf *gg;
    REQUIRE(ork_gguf_open(ork_test_fixture(rel), &gg) == 0);
    uint32_t tested = 0;
    for (uint64_t t = 0; t < ork_gguf_n_tensors(gg); t++) {
        const struct ork_gguf_tensor *ts = ork_gguf_tensor_at(gg, t);
        if (ts->n_dims != 2 || ts->ne[1] < 2)
            continue;
        const uint32_t k = (uint32_t)ts->ne[0], n = (uint32_t)ts->ne[1];
        float *f = malloc(sizeof(float) * n * k);
        int8_t *q = malloc((size_t)n * k);
        float *sc = malloc(sizeof(float) * n);
        size_t rb = ork_type_row_bytes(ts->type, k);
        int ok = 1;
        for (uint32_t r = 0; r < n && ok; r++)
            ok = ork_dequant_row(ts->type, (const uint8_t *)ts->data + r * rb, f + (size_t)r * k,
                                 k) == 0;
        CHECK(ok);
        for (uint32_t i = 0; ok && i < ORK_DCOMP_N_GRIDS; i++) {
            CHECK(ork_dcomp_quantize(f, n, k, ork_dcomp_grids[i], ORK_DCOMP_QUANT_CLIP, q, sc) == 0);
            check_weights(q, n, k, 1, 1 + i % 2, ork_dcomp_grids[i]);
        }
        tested++;
        free(f);
        free(q);
        free(sc);
    }
    CHECK(tested >= 20);
    ork_gguf_close(gg);
}

static void test_fixture_weights(void)
{
    fixture_roundtrip("models/stories260K.gguf");
    fixture_roundtrip("models/stories260K-qwen3.gguf");
}

int main(void)
{
    RUN(test_split_random);
    RUN(test_split_cores);
    RUN(test_quantize_grid);
    RUN(test_hadamard);
    RUN(test_pick);
    RUN(test_fixture_weights);
    return ork_test_done();
}
