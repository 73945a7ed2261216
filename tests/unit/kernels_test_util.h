/* kernels_test_util.h -- shared helpers of the kernel unit tests: the xorshift64 generator
 * (rnd, frand) and a random-row filler for every weight type with small positive f16 scales.
 * Not a reference implementation of any kernel: each test keeps its own reference.
 *
 * Each including file defines KT_RNG_SEED (its own generator seed, a 64-bit odd constant)
 * before including this header, so every test keeps its own reproducible stream. */
#ifndef ORK_KERNELS_TEST_UTIL_H
#define ORK_KERNELS_TEST_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ork-kernels/kernels.h>
#include <ork-kernels/pool.h>

#ifndef KT_RNG_SEED
#error "define KT_RNG_SEED before including kernels_test_util.h"
#endif

static uint64_t rng_state = KT_RNG_SEED;

/* xorshift64 (shifts 13, 7, 17); the upper bits are returned. */
static inline uint32_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}

/* Uniform-ish in (-1, 1) with 1e-6 steps. */
static inline float frand(void)
{
    return (float)((int32_t)rnd() % 1000000) / 1000000.0f;
}

/* Offset of the f16 super-block scale d in a Q6_K block (after ql[128], qh[64], scales[16]). */
#define KT_Q6_K_D_OFFSET 208

/* Random row bytes for a type: F32/F16/BF16 get frand() values; quantized blocks get random
 * bytes with a small positive f16 scale d (and the same dmin for Q4_K). */
static inline void kt_random_row(uint32_t type, uint8_t *row, int64_t n)
{
    const struct ork_type_traits *t = ork_type_traits(type);
    size_t bytes = ork_type_row_bytes(type, (uint64_t)n);
    for (size_t i = 0; i < bytes; i++)
        row[i] = (uint8_t)rnd();
    if (type == ORK_TYPE_F32) {
        for (int64_t i = 0; i < n; i++) {
            float v = frand();
            memcpy(row + 4 * i, &v, 4);
        }
    } else if (type == ORK_TYPE_F16 || type == ORK_TYPE_BF16) {
        for (int64_t i = 0; i < n; i++) {
            uint16_t h = type == ORK_TYPE_F16 ? ork_f32_to_fp16(frand()) : ork_f32_to_bf16(frand());
            row[2 * i] = (uint8_t)h;
            row[2 * i + 1] = (uint8_t)(h >> 8);
        }
    } else {
        for (int64_t b = 0; b < n / t->block; b++) {
            uint8_t *blk = row + b * t->block_bytes;
            uint16_t d = ork_f32_to_fp16(0.001f + 0.01f * fabsf(frand()));
            size_t off = type == ORK_TYPE_Q6_K ? KT_Q6_K_D_OFFSET : 0;
            blk[off] = (uint8_t)d;
            blk[off + 1] = (uint8_t)(d >> 8);
            if (type == ORK_TYPE_Q4_K) {
                blk[2] = (uint8_t)d;
                blk[3] = (uint8_t)(d >> 8);
            }
        }
    }
}

/* pools[t] gets a pool of t + 1 threads for t < n, NULL beyond, and with ORK_TEST_NO_THREADS
 * in the environment (emulators whose thread creation hangs) only pools[0]; 0, or -1 when a
 * pool cannot be created. */
static inline int kt_pools_create(struct ork_pool **pools, int n)
{
    int nt = getenv("ORK_TEST_NO_THREADS") ? 1 : n;
    for (int t = 0; t < n; t++) {
        pools[t] = NULL;
        if (t < nt && ork_pool_create(t + 1, &pools[t]) < 0)
            return -1;
    }
    return 0;
}

static inline void kt_pools_destroy(struct ork_pool **pools, int n)
{
    for (int t = 0; t < n; t++)
        ork_pool_destroy(pools[t]);
}

#endif
