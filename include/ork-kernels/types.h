/* ork-kernels/types.h -- tensor element types (GGML numbering, as stored in GGUF files).
 *
 * Every type a GGUF file may name is listed so that the reader can size and validate any
 * tensor; `supported` says whether ork can compute with it. Block layouts of the supported
 * quantized types are documented in src/kernels/quant_ref.c. */
#ifndef ORK_KERNELS_TYPES_H
#define ORK_KERNELS_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum ork_type {
    ORK_TYPE_F32 = 0, ORK_TYPE_F16 = 1, ORK_TYPE_Q4_0 = 2, ORK_TYPE_Q4_1 = 3,
    ORK_TYPE_Q5_0 = 6, ORK_TYPE_Q5_1 = 7, ORK_TYPE_Q8_0 = 8, ORK_TYPE_Q8_1 = 9,
    ORK_TYPE_Q2_K = 10, ORK_TYPE_Q3_K = 11, ORK_TYPE_Q4_K = 12, ORK_TYPE_Q5_K = 13,
    ORK_TYPE_Q6_K = 14, ORK_TYPE_Q8_K = 15, ORK_TYPE_IQ2_XXS = 16, ORK_TYPE_IQ2_XS = 17,
    ORK_TYPE_IQ3_XXS = 18, ORK_TYPE_IQ1_S = 19, ORK_TYPE_IQ4_NL = 20, ORK_TYPE_IQ3_S = 21,
    ORK_TYPE_IQ2_S = 22, ORK_TYPE_IQ4_XS = 23, ORK_TYPE_I8 = 24, ORK_TYPE_I16 = 25,
    ORK_TYPE_I32 = 26, ORK_TYPE_I64 = 27, ORK_TYPE_F64 = 28, ORK_TYPE_IQ1_M = 29,
    ORK_TYPE_BF16 = 30, ORK_TYPE_TQ1_0 = 34, ORK_TYPE_TQ2_0 = 35,
    ORK_TYPE_COUNT = 36
};

struct ork_type_traits {
    const char *name;       /* "Q8_0" */
    uint32_t block;         /* elements per block (1 for plain types) */
    uint32_t block_bytes;   /* bytes per block */
    bool supported;         /* ork can dequantize and compute with it */
};

/* Traits of a type id, or NULL for ids that name no type. */
const struct ork_type_traits *ork_type_traits(uint32_t type);
/* Name for messages ("type 99" style string for unknown ids; static storage per call site
 * is not needed: unknown ids return "unknown"). */
const char *ork_type_name(uint32_t type);
/* Bytes of a row of n elements; n must be a multiple of the block size (0 otherwise). */
size_t ork_type_row_bytes(uint32_t type, uint64_t n);

#ifdef __cplusplus
}
#endif
#endif
