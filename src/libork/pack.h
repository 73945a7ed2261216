/* pack.h -- weight layouts of the NPU (spec §4.3 int8 [N/32][K/32][32][32], §4.4 fp16
 * [N/16][K/32][16][32]) and the packing of one K-slice of a caller's W[n][k] into them.
 * Host-side only; buffers and slicing decisions live in matmul.c / plan.c. Internal. */
#ifndef ORK_PACK_H
#define ORK_PACK_H

#include <stddef.h>
#include <stdint.h>

/* Byte offset of B[k][n] in an int8 slice of reduction kp (spec §4.3):
 * (n/32)*(kp/32)*1024 + (k/32)*1024 + (n%32)*32 + (k%32). */
static inline uint64_t ork__pack_offset_i8(uint32_t k, uint32_t n, uint32_t kp)
{
    return (uint64_t)(n / 32) * (kp / 32) * 1024 + (uint64_t)(k / 32) * 1024 + (n % 32) * 32 +
           (k % 32);
}

/* Element index of B[k][n] in an fp16 slice of reduction kp (spec §4.4); byte offset = 2x:
 * (n/16)*(kp/32)*512 + (k/32)*512 + (n%16)*32 + (k%32). */
static inline uint64_t ork__pack_index_f16(uint32_t k, uint32_t n, uint32_t kp)
{
    return (uint64_t)(n / 16) * (kp / 32) * 512 + (uint64_t)(k / 32) * 512 + (n % 16) * 32 +
           (k % 32);
}

/* Pack rows [k0, k0 + klen) of W (int8_t[n][ldw], row j = output column j) into `dst`, an int8
 * slice of reduction kp (multiple of 32) and np columns (multiple of 32): kp*np bytes, zeroed
 * first so K and N padding is exact zeros. */
void ork__pack_slice_i8(uint8_t *dst, const int8_t *w, uint32_t ldw, uint32_t n, uint32_t k0,
                        uint32_t klen, uint32_t kp, uint32_t np);
/* The same for fp16 (uint16_t bits; dst gets 2*kp*np bytes, little-endian; np multiple of 16). */
void ork__pack_slice_f16(uint8_t *dst, const uint16_t *w, uint32_t ldw, uint32_t n, uint32_t k0,
                         uint32_t klen, uint32_t kp, uint32_t np);

#endif
