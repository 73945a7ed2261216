/* w4a8_run.c -- the host halves of a W4A8 run (w4a8.h): split each int8 activation row into
 * its h and l int4 rows in the A layout (K/32, M, 32), and widen the int16 partials of the C
 * layout (N/8, M, 8) into the exact int32 result (spec §4.6, npu-weight-decompression.md §2).
 * Which blocks exist and where they lie is matmul.c's; this file only transforms one block. */
#include "w4a8.h"
#include "i4_layout.h"

#define UNIT ORK_I4_K_ALIGN             /* one A group: 32 codes of a row, 16 bytes */
#define GROUP_BYTES (UNIT / 2u)

/* The h and l bytes of the activation pair (q0, q1) (even k in the low nibble, i4_layout.h):
 * h = q >> 4 is the high nibble of q's byte; l = (q & 15) - 8 is (q & 15) ^ 8 mod 16. */
static inline uint8_t split_h(uint8_t u0, uint8_t u1)
{
    return (uint8_t)((u0 >> 4) | (u1 & 0xf0u));
}

static inline uint8_t split_l(uint8_t u0, uint8_t u1)
{
    return (uint8_t)(((u0 & 0x0fu) | (uint8_t)(u1 << 4)) ^ 0x88u);
}

void ork__w4a8_split_rows(uint8_t *blk, uint32_t mt, const int8_t *a, size_t lda,
                          const struct ork_slice *s, uint32_t rows)
{
    const uint32_t M = 2 * mt, groups = s->pad / UNIT;
    for (uint32_t r = 0; r < rows; r++) {
        const uint8_t *src = (const uint8_t *)(a + (size_t)r * lda + s->off);
        for (uint32_t g = 0; g < groups; g++) {
            uint8_t *h = blk + ork__i4_a_byte(M, 2 * r, g * UNIT);
            uint8_t *l = blk + ork__i4_a_byte(M, 2 * r + 1, g * UNIT);
            const uint32_t k0 = g * UNIT;
            if (k0 + UNIT <= s->len) {
                for (uint32_t b = 0; b < GROUP_BYTES; b++) {
                    const uint8_t u0 = src[k0 + 2 * b], u1 = src[k0 + 2 * b + 1];
                    h[b] = split_h(u0, u1);
                    l[b] = split_l(u0, u1);
                }
                continue;
            }
            for (uint32_t b = 0; b < GROUP_BYTES; b++) {  /* padding k: code 0 (h 0, l -8) */
                const uint32_t k = k0 + 2 * b;
                const uint8_t u0 = k < s->len ? src[k] : 0, u1 = k + 1 < s->len ? src[k + 1] : 0;
                h[b] = split_h(u0, u1);
                l[b] = split_l(u0, u1);
            }
        }
    }
}

void ork__w4a8_gather_block(int32_t *c, size_t ldc, const int16_t *blk, uint32_t mt,
                            uint32_t rows, const struct ork_slice *ns, const int32_t *colsum,
                            bool first)
{
    const uint32_t M = 2 * mt;
    for (uint32_t r = 0; r < rows; r++) {
        int32_t *dst = c + (size_t)r * ldc + ns->off;
        for (uint32_t x0 = 0; x0 < ns->len; x0 += ORK_I4_C_ATOM) {
            const int16_t *h = blk + ork__i4_c_index(M, 2 * r, x0);
            const int16_t *l = blk + ork__i4_c_index(M, 2 * r + 1, x0);
            const uint32_t e1 = ns->len - x0 < ORK_I4_C_ATOM ? ns->len - x0 : ORK_I4_C_ATOM;
            for (uint32_t e = 0; e < e1; e++) {
                const int32_t part = ORK_W4A8_H_WEIGHT * (int32_t)h[e] + (int32_t)l[e];
                const uint32_t x = x0 + e;
                /* unsigned adds: wrap like an int32 accumulator, never UB (matmul.c) */
                dst[x] = first ? (int32_t)((uint32_t)part +
                                           (uint32_t)ORK_W4A8_CORRECTION *
                                               (uint32_t)colsum[ns->off + x])
                               : (int32_t)((uint32_t)dst[x] + (uint32_t)part);
            }
        }
    }
}
