/* test_rand_mm.h -- the random operands and exact reference of the compressed-weights matmul
 * tests (test_dcomp_matmul.c, test_w4a8_matmul.c): a xorshift64 stream (the including file
 * defines `static uint64_t rng` with its own seed before including this), any-int8 fill, and
 * the count of results that differ from the CPU's int32 A.W. */
#ifndef TEST_RAND_MM_H
#define TEST_RAND_MM_H

#include <stddef.h>
#include <stdint.h>

static uint32_t next_u32(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

static void gen_any(int8_t *a, size_t count)
{
    for (size_t i = 0; i < count; i++)
        a[i] = (int8_t)(next_u32() & 0xff);
}

/* Results of c [m][n] other than sum_x a[i][x] w[j][x] (a [m][k], w [n][k]). */
static uint64_t ref_mismatches(const int8_t *a, const int8_t *w, const int32_t *c, uint32_t m,
                               uint32_t k, uint32_t n)
{
    uint64_t bad = 0;
    for (uint32_t i = 0; i < m; i++)
        for (uint32_t j = 0; j < n; j++) {
            int32_t acc = 0;
            for (uint32_t x = 0; x < k; x++)
                acc += (int32_t)a[(size_t)i * k + x] * w[(size_t)j * k + x];
            bad += c[(size_t)i * n + j] != acc;
        }
    return bad;
}

#endif
