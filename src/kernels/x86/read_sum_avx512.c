/* x86/read_sum_avx512.c -- the AVX-512 read-sum loop (read_sum.c, read_sum.h): zmm loads of
 * several parts side by side, 64-bit lane adds. */
#include <stdint.h>
#include <string.h>

#include "x86_priv.h"
#include "read_sum.h"

#ifdef ORK_KERN_X86

#define TGT_512 __attribute__((target("avx512f")))

TGT_512 static inline __m512i ld_zmm(const uint8_t *p) { return _mm512_loadu_si512(p); }

/* lanes summed as unsigned (the compiler's reduce intrinsic adds signed: overflow) */
TGT_512 static inline uint64_t sum_lanes_zmm(__m512i v)
{
    uint64_t w[8];
    _mm512_storeu_si512(w, v);
    return w[0] + w[1] + w[2] + w[3] + w[4] + w[5] + w[6] + w[7];
}
READ_SUM(sum_zmm, TGT_512, __m512i, 64, _mm512_setzero_si512, ld_zmm, _mm512_add_epi64,
         sum_lanes_zmm)

void ork__fill_read_sum_avx512(struct ork__kern *t)
{
    t->read_sum = sum_zmm;
    t->read_insn = "vmovdqu64 zmm";
}
#endif
