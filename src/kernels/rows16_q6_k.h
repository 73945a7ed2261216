/* rows16_q6_k.h -- the interleaved Q6_K layout (ORK_LAYOUT_X16), shared by its packer and
 * scalar reference (rows16_q6_k.c) and the kernels that read it (arm/rows16_q6_k_neon.c): the
 * offsets of one group block of 16 rows x 256 elements and the encoding of its quant bytes.
 *
 * Group block (16 x 210 = 3360 bytes, the plain rows' size):
 *   XQ6_D   f16 d[16], row i's at 2i;
 *   XQ6_SC  4 chunks of 64 bytes: chunk m holds in bytes 4i .. 4i + 3 the int8 scales of
 *           sub-blocks 4m .. 4m + 3 (elements 16k .. 16k + 15 each) of row i, so one register
 *           (a quarter of a chunk) is 4 sub-blocks' scales of 4 rows, and one sdot against a
 *           unit vector sign-extends one sub-block's into the rows' int32 lanes;
 *   XQ6_QS  per sub-block k three chunks R_0, R_1, R_2 of 64 bytes (4 bytes of each of 16 rows,
 *           row i's at 4i). With s(e) = q(e) xor 32 (the 6-bit value q in 0..63 of element e,
 *           as a 6-bit two's complement number: q - 32), byte b of row i in R_j is
 *             (s(16k + 4j + b) << 2) | (bits 5-4, 3-2, 1-0 for j = 0, 1, 2 of s(16k + 12 + b)),
 *           so R_j & 0xfc is the int8 4 (q - 32) of elements 16k + 4j .. + 3, and the low bits of
 *           the three chunks put together ((R_0 << 6) | (R_1 & 3) << 4 | (R_2 & 3) << 2) that of
 *           elements 16k + 12 .. 16k + 15: six bit operations give sdot its four operands.
 * X form: the Q4_K one (rows16.c ork__x16k_xprep; its quants and scale only). */
#ifndef ORK_KERNELS_ROWS16_Q6_K_H
#define ORK_KERNELS_ROWS16_Q6_K_H

#include <stdint.h>

#include "kern_priv.h"
#include "qk_block.h"

#define XQ6_SUB 16              /* 16-element sub-blocks per block (one int8 scale each) */
#define XQ6_SUB_ELEMS 16
#define XQ6_CHUNK 64            /* 4 bytes of each of 16 rows */
#define XQ6_CHUNKS_PER_SUB 3    /* R_0, R_1, R_2 */
#define XQ6_D 0
#define XQ6_SC 32
#define XQ6_QS 288
#define XQ6_GROUP_BYTES (ORK_X16_ROWS * Q6_K_BYTES)
#define XQ6_VALUE_SHIFT 2       /* R_j's top six bits: 4 (q - 32) as int8 */
#define XQ6_VALUE_MASK 0xfc
#define XQ6_LOW2 0x03
#define XQ6_SIGN 32             /* q xor 32: q - 32 as a 6-bit two's complement number */

_Static_assert(XQ6_QS + XQ6_SUB * XQ6_CHUNKS_PER_SUB * XQ6_CHUNK == XQ6_GROUP_BYTES,
               "group block layout");
_Static_assert(XQ6_SC + 4 * XQ6_CHUNK == XQ6_QS, "scale chunks");

/* Packing 16 plain rows (src, row_bytes apart: whole blocks) into one group (dst), reading
 * row i of a group back into its plain bytes (rows16.c calls both through its type table). */
void ork__x16q6_pack(const uint8_t *src, size_t row_bytes, uint8_t *dst);
void ork__x16q6_row(const uint8_t *grp, size_t row_bytes, int i, uint8_t *dst);
/* The scalar reference kernel: the 16 outputs of one group (g, nb blocks) against one X row in
 * the Q4_K X form (x), each the bits of ork__q8k_blocks over the plain row. */
void ork__x16q6_ref(const uint8_t *g, const uint8_t *x, int64_t nb, float *out);

#endif
