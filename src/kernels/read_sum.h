/* read_sum.h -- the shape of the streaming read-sum loops (read_sum.c has the scalar one and
 * the entry point, x86/read_sum_*.c and arm/read_sum_neon.c the vector ones): how the buffer is
 * cut into parts read side by side, and the loop template every vector type instantiates.
 * Internal to src/kernels. */
#ifndef ORK_KERNELS_READ_SUM_H
#define ORK_KERNELS_READ_SUM_H

#include <stddef.h>
#include <stdint.h>

/* The vector loops read RB_STREAMS equal parts of the buffer side by side, RB_PER
 * accumulators per part, each fed the sum of two loads: several parts side by side stream
 * faster than one sequential stream (as the decode matmul reads several weight rows at once),
 * and adding load pairs first faster than folding each load into its own accumulator
 * (docs/kernels.md "Streaming read"). 8 accumulators leave room in the 16 ymm / 32 zmm / 32
 * v-registers, and with 1-cycle adds they are never the limit. */
#define RB_STREAMS 4
#define RB_PER 2
#define RB_WORD 8               /* bytes per summed word */

/* Bytes of each of the RB_STREAMS parts: whole chunks (the bytes one part gives per iteration). */
static inline size_t part_bytes(size_t bytes, size_t chunk)
{
    return bytes / (RB_STREAMS * chunk) * chunk;
}

/* The read-sum loop for one vector type: the parts side by side, then single vectors of the
 * rest; the bytes consumed (a multiple of the vector size) go to *done. VEC: the vector type,
 * V: its bytes; ZERO(), LOAD(p), ADD(a, b) and REDUCE(a) (the lanes' sum, as unsigned) its
 * operations. */
#define READ_SUM(NAME, TGT, VEC, V, ZERO, LOAD, ADD, REDUCE)                                    \
    TGT static uint64_t NAME(const uint8_t *p, size_t bytes, size_t *done)                     \
    {                                                                                          \
        const size_t chunk = 2 * RB_PER * (V);                                                 \
        VEC a[RB_STREAMS * RB_PER];                                                            \
        for (int i = 0; i < RB_STREAMS * RB_PER; i++)                                          \
            a[i] = ZERO();                                                                     \
        size_t part = part_bytes(bytes, chunk);                                                \
        for (size_t o = 0; o < part; o += chunk)                                               \
            for (int s = 0; s < RB_STREAMS; s++) {                                             \
                const uint8_t *q = p + (size_t)s * part + o;                                   \
                for (int k = 0; k < RB_PER; k++) {                                             \
                    VEC x = LOAD(q + (size_t)k * (V)), y = LOAD(q + (size_t)(k + RB_PER) * (V)); \
                    a[s * RB_PER + k] = ADD(a[s * RB_PER + k], ADD(x, y));                     \
                }                                                                              \
            }                                                                                  \
        size_t off = RB_STREAMS * part;                                                        \
        for (; off + (V) <= bytes; off += (V))                                                 \
            a[0] = ADD(a[0], LOAD(p + off));                                                   \
        for (int i = 1; i < RB_STREAMS * RB_PER; i++)                                          \
            a[0] = ADD(a[0], a[i]);                                                            \
        *done = off;                                                                           \
        return REDUCE(a[0]);                                                                   \
    }

#endif
