/* rows16_q4_k.h -- the interleaved Q4_K layout's offsets, shared by the packer and X form
 * (rows16.c) and the kernels that read them (x86/rows16_q4_k_*.c): the group block of 16 rows
 * and the activation X form (offsets named in kern_priv.h; the layout in docs/kernels.md). */
#ifndef ORK_KERNELS_ROWS16_Q4_K_H
#define ORK_KERNELS_ROWS16_Q4_K_H

#include "kern_priv.h"

#define XK_SUB 8                /* 32-element sub-blocks per block */
/* group block offsets (kern_priv.h) */
#define XK_D ORK_X16K_D
#define XK_DMIN ORK_X16K_DMIN
#define XK_SC ORK_X16K_SC       /* 3 chunks */
#define XK_QS ORK_X16K_QS       /* 32 chunks */
#define XK_CHUNK 64
#define XK_GROUP_BYTES (ORK_X16_ROWS * Q4_K_BYTES)
/* X form offsets */
#define XKX_D ORK_X16K_XD
#define XKX_A ORK_X16K_XA
#define XKX_B ORK_X16K_XB
#define XKX_END 276
/* s_j = XK_SPLIT * a_j + b_j with b_j in [-64, 63]: |s_j| <= 32 * 127 = 4064, so a_j is in
 * [-32, 32] and both fit int8 */
#define XK_SPLIT 128
#define XK_SPLIT_SHIFT ORK_X16K_SPLIT_SHIFT
#define XK_SPLIT_BIAS (32 * XK_SPLIT)   /* keeps the division's operand positive */

_Static_assert(XKX_END <= ORK_X16K_XBLOCK, "X form block");
_Static_assert(XK_QS + 32 * XK_CHUNK == XK_GROUP_BYTES, "group block layout");

#endif
