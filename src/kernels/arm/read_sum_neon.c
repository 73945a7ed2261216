/* arm/read_sum_neon.c -- the NEON read-sum loop (read_sum.c, read_sum.h): 128-bit loads of
 * several parts side by side, 64-bit lane adds. */
#include <stdint.h>
#include <string.h>

#include "kern_priv.h"
#include "read_sum.h"

#ifdef ORK_KERN_ARM
#include <arm_neon.h>

/* vld1q_u8: byte-element loads, so p needs no alignment */
static inline uint64x2_t ld_neon(const uint8_t *p)
{
    return vreinterpretq_u64_u8(vld1q_u8(p));
}

static inline uint64x2_t zero_neon(void)
{
    return vdupq_n_u64(0);
}

READ_SUM(sum_neon, , uint64x2_t, 16, zero_neon, ld_neon, vaddq_u64, vaddvq_u64)

void ork__fill_read_sum_neon(struct ork__kern *t)
{
    t->read_sum = sum_neon;
    t->read_insn = "ld1 v.16b";
}
#endif
