/* test_kernels_scalar.c -- ORK_DEBUG=scalar forces the scalar path: the dispatched dot,
 * dequantization and matmul then give exactly the reference's bits (one f32 accumulator,
 * elements in order) for every supported type and thread count. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ork-kernels/kernels.h>
#include <ork-kernels/pool.h>

#include "ork_test.h"

#define KT_RNG_SEED 0xbb67ae8584caa73bull
#include "kernels_test_util.h"

static const uint32_t types[] = {
    ORK_TYPE_F32, ORK_TYPE_F16, ORK_TYPE_BF16, ORK_TYPE_Q8_0, ORK_TYPE_Q4_0, ORK_TYPE_Q4_K,
    ORK_TYPE_Q6_K,
};

#define N 7
#define K 512
#define M 3

static void test_scalar_path_selected(void)
{
    CHECK_STR(ork_kernels_path(), "scalar");
}

static void test_scalar_matches_reference(void)
{
    static uint8_t w[N * K * 4];
    static float x[M * K], y[M * N];
    struct ork_pool *pool;
    REQUIRE(ork_pool_create(2, &pool) == 0);
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        uint32_t t = types[ti];
        size_t rb = ork_type_row_bytes(t, K);
        for (size_t i = 0; i < rb * N; i++)
            w[i] = (uint8_t)rnd();
        if (t == ORK_TYPE_F32)
            for (int i = 0; i < N * K; i++) {
                float v = frand();
                memcpy(w + 4 * i, &v, 4);
            }
        /* keep quantized scales and f16/bf16 values finite: clear the top exponent bits */
        if (t == ORK_TYPE_F16 || t == ORK_TYPE_BF16)
            for (size_t i = 1; i < rb * N; i += 2)
                w[i] &= 0x3b;
        if (t == ORK_TYPE_Q8_0 || t == ORK_TYPE_Q4_0 || t == ORK_TYPE_Q4_K || t == ORK_TYPE_Q6_K) {
            size_t bb = ork_type_traits(t)->block_bytes, off = t == ORK_TYPE_Q6_K ? 208 : 0;
            for (size_t b = 0; b < rb * N / bb; b++) {
                w[b * bb + off + 1] &= 0x1b;
                if (t == ORK_TYPE_Q4_K)
                    w[b * bb + 3] &= 0x1b;
            }
        }
        for (int i = 0; i < M * K; i++)
            x[i] = frand();
        struct ork_mat mat = { .type = t, .n_rows = N, .n_cols = K, .row_bytes = rb, .data = w };
        REQUIRE(ork_matmul(pool, &mat, x, M, y) == 0);
        int differ = 0;
        for (int i = 0; i < M; i++)
            for (int r = 0; r < N; r++) {
                float ref = ork_vec_dot_ref(t, w + r * rb, x + i * K, K);
                float d = ork_vec_dot(t, w + r * rb, x + i * K, K);
                if (memcmp(&ref, &y[i * N + r], 4) != 0 || memcmp(&ref, &d, 4) != 0)
                    differ++;
            }
        if (differ)
            fprintf(stderr, "type %s: %d outputs differ from the reference\n", ork_type_name(t),
                    differ);
        CHECK_EQ_INT(differ, 0);
    }
    ork_pool_destroy(pool);
}

int main(void)
{
    setenv("ORK_DEBUG", "scalar", 1);       /* before the first kernel call parses it */
    RUN(test_scalar_path_selected);
    RUN(test_scalar_matches_reference);
    return ork_test_done();
}
