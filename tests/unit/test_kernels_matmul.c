/* test_kernels_matmul.c -- ork_matmul against a naive triple loop in double for every
 * supported type, odd M/N/K, pool thread counts 1/2/3 and no pool; results identical bit for
 * bit across thread counts and M (each output is one fixed-order dot); rows longer than the
 * stack buffer; strided rows; ork_get_row; argument errors; no allocation per call. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork-kernels/kernels.h>
#include <ork-kernels/pool.h>

#include "ork_test.h"

#define REL_TOL 1e-5    /* vs the double-precision loop, relative to sum |w x| (docs/kernels.md) */

#define KT_RNG_SEED 0xda3e39cb94b95bdbull
#include "kernels_test_util.h"

static const uint32_t types[] = {
    ORK_TYPE_F32, ORK_TYPE_F16, ORK_TYPE_BF16, ORK_TYPE_Q8_0, ORK_TYPE_Q4_0, ORK_TYPE_Q4_K,
    ORK_TYPE_Q6_K,
};

struct case_ {
    uint32_t type;
    int64_t m, n, k;
    size_t pad;             /* extra bytes per row (stride > row size) */
};

/* Run one case with every pool; check against double and across runs. */
static void run_case(struct ork_pool **pools, int n_pools, const struct case_ *c)
{
    size_t rb = ork_type_row_bytes(c->type, (uint64_t)c->k) + c->pad;
    uint8_t *wdata = ork_malloc(rb * (size_t)c->n);
    float *x = ork_malloc(sizeof(float) * (size_t)(c->m * c->k));
    float *wf = ork_malloc(sizeof(float) * (size_t)(c->n * c->k));
    float *y = ork_malloc(sizeof(float) * (size_t)(c->m * c->n));
    float *y0 = ork_malloc(sizeof(float) * (size_t)(c->m * c->n));
    REQUIRE(wdata && x && wf && y && y0);
    for (int64_t r = 0; r < c->n; r++) {
        kt_random_row(c->type, wdata + r * rb, c->k);
        REQUIRE(ork_dequant_row_ref(c->type, wdata + r * rb, wf + r * c->k, c->k) == 0);
    }
    for (int64_t i = 0; i < c->m * c->k; i++)
        x[i] = frand();
    struct ork_mat w = { .type = c->type, .n_rows = c->n, .n_cols = c->k, .row_bytes = rb,
                         .data = wdata };
    int bad = 0, differ = 0;
    for (int pi = -1; pi < n_pools; pi++) {
        struct ork_pool *pool = pi < 0 ? NULL : pools[pi];
        memset(y, 0xff, sizeof(float) * (size_t)(c->m * c->n));
        REQUIRE(ork_matmul(pool, &w, x, c->m, y) == 0);
        if (pi < 0) {
            memcpy(y0, y, sizeof(float) * (size_t)(c->m * c->n));
            for (int64_t i = 0; i < c->m; i++)
                for (int64_t j = 0; j < c->n; j++) {
                    double s = 0, mag = 0;
                    for (int64_t l = 0; l < c->k; l++) {
                        s += (double)wf[j * c->k + l] * x[i * c->k + l];
                        mag += fabs((double)wf[j * c->k + l] * x[i * c->k + l]);
                    }
                    if (!(fabs(y[i * c->n + j] - s) <= REL_TOL * mag + 1e-30))
                        bad++;
                    /* each output is exactly the dispatched f32 dot of its row */
                    float d = ork_vec_dot_f32(wf + j * c->k, x + i * c->k, c->k);
                    if (memcmp(&d, &y[i * c->n + j], 4) != 0)
                        differ++;
                }
        } else if (memcmp(y, y0, sizeof(float) * (size_t)(c->m * c->n)) != 0) {
            differ++;
        }
    }
    if (bad || differ)
        fprintf(stderr, "case %s M=%lld N=%lld K=%lld: %d outside tolerance, %d differ\n",
                ork_type_name(c->type), (long long)c->m, (long long)c->n, (long long)c->k, bad,
                differ);
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(differ, 0);
    /* M = 1 on one row of X gives the same bits as that row of the M > 1 result */
    if (c->m > 1) {
        REQUIRE(ork_matmul(pools[n_pools - 1], &w, x + c->k, 1, y) == 0);
        CHECK(memcmp(y, y0 + c->n, sizeof(float) * (size_t)c->n) == 0);
    }
    ork_free(wdata);
    ork_free(x);
    ork_free(wf);
    ork_free(y);
    ork_free(y0);
}

static struct ork_pool *pools[3];

static void test_matmul_all_types(void)
{
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        uint32_t t = types[ti];
        int64_t blk = ork_type_traits(t)->block;
        struct case_ cases[] = {
            { t, 1, 1, blk, 0 },
            { t, 3, 7, blk * (blk == 1 ? 37 : 3), 0 },
            { t, 5, 13, blk * (blk == 1 ? 101 : 5), 0 },
            { t, 2, 9, blk * (blk == 1 ? 64 : 2), 6 },        /* strided rows */
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            run_case(pools, 3, &cases[i]);
    }
}

/* K beyond the 16384-element stack buffer: chunked path, same bits as the whole-row dot. */
static void test_matmul_long_rows(void)
{
    struct case_ c1 = { ORK_TYPE_Q8_0, 2, 5, 16384 + 1024 + 32, 0 };
    struct case_ c2 = { ORK_TYPE_F16, 3, 3, 16384 + 77, 0 };
    run_case(pools, 3, &c1);
    run_case(pools, 3, &c2);
}

static void test_get_row(void)
{
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        uint32_t t = types[ti];
        int64_t k = ork_type_traits(t)->block == 1 ? 70 : 512;
        size_t rb = ork_type_row_bytes(t, (uint64_t)k);
        uint8_t data[5 * 2048];
        for (int r = 0; r < 5; r++)
            kt_random_row(t, data + r * rb, k);
        struct ork_mat w = { .type = t, .n_rows = 5, .n_cols = k, .row_bytes = rb, .data = data };
        float a[512], b[512];
        REQUIRE(ork_get_row(&w, 3, a) == 0);
        REQUIRE(ork_dequant_row_ref(t, data + 3 * rb, b, k) == 0);
        CHECK(memcmp(a, b, sizeof(float) * (size_t)k) == 0);
        CHECK_EQ_INT(ork_get_row(&w, 5, a), ORK_ERANGE);
        CHECK_EQ_INT(ork_get_row(&w, -1, a), ORK_ERANGE);
    }
}

static void test_errors(void)
{
    uint8_t data[1024] = {0};
    float x[256] = {0}, y[16];
    struct ork_mat w = { .type = ORK_TYPE_Q5_0, .n_rows = 2, .n_cols = 32, .row_bytes = 22,
                         .data = data };
    ork_error_clear();
    CHECK_EQ_INT(ork_matmul(NULL, &w, x, 1, y), ORK_EUNSUPPORTED);
    CHECK(strstr(ork_error_message(), "Q5_0") != NULL);
    CHECK_EQ_INT(ork_get_row(&w, 0, y), ORK_EUNSUPPORTED);
    w.type = ORK_TYPE_Q8_0;
    w.n_cols = 40;
    CHECK_EQ_INT(ork_matmul(pools[1], &w, x, 1, y), ORK_EINVAL);
    w.n_cols = 32;
    w.row_bytes = 20;                   /* < 34 */
    CHECK_EQ_INT(ork_matmul(pools[1], &w, x, 1, y), ORK_EINVAL);
    w.row_bytes = 34;
    CHECK_EQ_INT(ork_matmul(pools[1], &w, x, -1, y), ORK_EINVAL);
    CHECK_EQ_INT(ork_matmul(pools[1], &w, x, 0, y), 0);
    /* the read-ahead hint: a bad count, a missing list, a malformed matrix in it */
    const struct ork_mat *one[] = { &w };
    float *ys[] = { y };
    struct ork_mat bad = w;
    bad.data = NULL;
    const struct ork_mat *bads[] = { &bad };
    CHECK_EQ_INT(ork_matmul_act_multi_next(pools[1], one, 1, x, 1, ys, ORK_ACT_QUANT, one, -1),
                 ORK_EINVAL);
    CHECK_EQ_INT(ork_matmul_act_multi_next(pools[1], one, 1, x, 1, ys, ORK_ACT_QUANT, NULL, 1),
                 ORK_EINVAL);
    ork_error_clear();
    CHECK_EQ_INT(ork_matmul_act_multi_next(pools[1], one, 1, x, 1, ys, ORK_ACT_QUANT, bads, 1),
                 ORK_EINVAL);
    CHECK(strstr(ork_error_message(), "next matrix 0 without data") != NULL);
    CHECK_EQ_INT(ork_matmul_act_multi_next(pools[1], one, 1, x, 1, ys, ORK_ACT_QUANT, one, 1), 0);
    /* a type this path does not compute is fine as a hint (only its bytes are read) */
    struct ork_mat other = w;
    other.type = ORK_TYPE_Q5_0;
    const struct ork_mat *others[] = { &other };
    CHECK_EQ_INT(ork_matmul_act_multi_next(pools[1], one, 1, x, 1, ys, ORK_ACT_QUANT, others, 1),
                 0);
}

static void test_matmul_no_allocation(void)
{
    static uint8_t data[64 * 144 * 4];
    static float x[4 * 1024], y[4 * 64];
    for (int r = 0; r < 64; r++)
        kt_random_row(ORK_TYPE_Q4_K, data + r * 144 * 4, 1024);
    struct ork_mat w = { .type = ORK_TYPE_Q4_K, .n_rows = 64, .n_cols = 1024,
                         .row_bytes = 144 * 4, .data = data };
    REQUIRE(ork_matmul(pools[2], &w, x, 4, y) == 0);
    uint64_t before = ork_alloc_count();
    for (int i = 0; i < 20; i++)
        REQUIRE(ork_matmul(pools[2], &w, x, 4, y) == 0);
    CHECK(ork_alloc_count() == before);
}

int main(void)
{
    for (int i = 0; i < 3; i++)
        if (ork_pool_create(i + 1, &pools[i]) < 0) {
            fprintf(stderr, "pool: %s\n", ork_error_message());
            return 1;
        }
    RUN(test_matmul_all_types);
    RUN(test_matmul_long_rows);
    RUN(test_get_row);
    RUN(test_errors);
    RUN(test_matmul_no_allocation);
    for (int i = 0; i < 3; i++)
        ork_pool_destroy(pools[i]);
    return ork_test_done();
}
