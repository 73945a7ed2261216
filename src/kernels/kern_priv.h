/* kern_priv.h -- internal interface between the CPU kernel files: which instruction-set path
 * runs (cpu.c) and the integer block dots on quantized activations (qdot.c). Not a public
 * header: the engine uses include/ork-kernels/kernels.h only. */
#ifndef ORK_KERNELS_KERN_PRIV_H
#define ORK_KERNELS_KERN_PRIV_H

#include <stdbool.h>
#include <stdint.h>

/* Instruction-set paths, from the most portable up. Each x86 level implies the ones before it
 * (the detector only picks a level whose prerequisites are all present). */
enum kisa {
    KISA_SCALAR = 0,    /* the reference loops */
    KISA_AVX2,          /* AVX2 + FMA + F16C */
    KISA_AVXVNNI,       /* AVX2 level + AVX-VNNI (256-bit vpdpbusd, VEX) */
    KISA_AVX512VNNI,    /* AVX2 level + AVX-512 F/BW/VL + AVX512_VNNI (512-bit vpdpbusd) */
    KISA_NEON,          /* AArch64 Advanced SIMD (baseline) */
    KISA_NEON_DOT,      /* NEON + dot product (sdot, ARMv8.2 DotProd) */
    KISA_COUNT
};

/* The path in use (detected once; ORK_DEBUG=scalar forces KISA_SCALAR). */
enum kisa ork__kisa(void);
/* True when this CPU (and OS) can run path k. */
bool ork__kisa_available(enum kisa k);
const char *ork__kisa_name(enum kisa k);

/* Accumulator of a Q8_0/Q4_0 x Q8_0 dot: 16 f32 lanes. Block b of a row (counted from the
 * row's first block) adds its 8 integer partial sums p_j (j = 0..7, p_j = sum of the products
 * of elements 4j..4j+3) into lanes 8 * (b % 2) + j as lane = fmaf((float)p_j, d_w * d_x, lane).
 * ork__q8_end reduces: r8[j] = l[j] + l[j+8]; r4[j] = r8[j] + r8[j+4]; r2[j] = r4[j] + r4[j+2];
 * result r2[0] + r2[1]. Integer partials are exact, so every path gives the same bits. */
struct q8_acc {
    float l[16];
};

/* Blocks [0, nb) of a Q8_0 or Q4_0 row w against Q8_0 blocks xq. w must start at an even block
 * of the row (chunks of a row are fed in multiples of two blocks, keeping the lane parity). */
void ork__q8_blocks(enum kisa k, uint32_t type, const uint8_t *w, const uint8_t *xq, int64_t nb,
                    struct q8_acc *acc);
float ork__q8_end(const struct q8_acc *acc);

/* Most X rows per ork__q8_rows call. */
#define ORK_Q8_ROWS_MAX 4
/* Whole-row dots of one Q8_0/Q4_0 weight row w (nb blocks) with nr <= ORK_Q8_ROWS_MAX
 * Q8_0-quantized X rows (xq, xq + x_stride, ...): out[t] gets exactly the bits of
 * ork__q8_blocks over the row followed by ork__q8_end. */
void ork__q8_rows(enum kisa k, uint32_t type, const uint8_t *w, const uint8_t *xq,
                  size_t x_stride, int nr, int64_t nb, float *out);

/* Q4_K / Q6_K row (nb 256-element blocks) dot Q8_K activations, added block by block into
 * *sum (order in qdot.c), so a row fed in chunks gives the whole row's bits. */
void ork__q8k_blocks(enum kisa k, uint32_t type, const uint8_t *w, const uint8_t *xq, int64_t nb,
                     float *sum);

/* Bytes of one Q8_K activation block: f32 d, int8 q[256], int16 bsums[16]. */
#define ORK_Q8_K_BYTES 292
#define ORK_Q8_K_BLOCK 256

#endif
