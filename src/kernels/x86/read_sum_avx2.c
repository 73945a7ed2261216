/* x86/read_sum_avx2.c -- the AVX2 read-sum loop (read_sum.c, read_sum.h): ymm loads of
 * several parts side by side, 64-bit lane adds. */
#include <stdint.h>
#include <string.h>

#include "x86_priv.h"
#include "read_sum.h"

#ifdef ORK_KERN_X86

#define TGT_256 __attribute__((target("avx2")))

TGT_256 static inline __m256i ld_ymm(const uint8_t *p)
{
    return _mm256_loadu_si256((const __m256i *)(const void *)p);
}

TGT_256 static inline uint64_t sum_lanes_ymm(__m256i v)
{
    __m128i h = _mm_add_epi64(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    return (uint64_t)_mm_cvtsi128_si64(h) + (uint64_t)_mm_extract_epi64(h, 1);
}
READ_SUM(sum_ymm, TGT_256, __m256i, 32, _mm256_setzero_si256, ld_ymm, _mm256_add_epi64,
         sum_lanes_ymm)

void ork__fill_read_sum_avx2(struct ork__kern *t)
{
    t->read_sum = sum_ymm;
    t->read_insn = "vmovdqu ymm";
}
#endif
