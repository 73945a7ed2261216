/* ork/regs.h -- the RK3588 NPU register database: blocks, registers, fields, target ids, regcmd
 * entry encode/decode, lookup by offset and a table-driven pretty-printer.
 *
 * This header is the one place register offsets and bit fields are written down. Everything
 * else (program emission, the simulator's decoder, `ork regdump`) uses the named constants and
 * field packers generated here from ORK_REG_TABLE by X-macros. It is not an emitter (that is
 * src/libork/program.c) and it knows nothing about matmul rules.
 *
 * Source of every offset and field: spec/rk3588-npu.md §1.1 (blocks), §2 (entry encoding and
 * target ids), §3.1 (the matmul program's registers and field names), §3.3 (enable mask bits),
 * §8.2/§8.3 (PC registers and the trailer). Field bit ranges not given by the spec are left out
 * (the register prints as a plain value); names marked [INF] are ours, not TRM names.
 *
 * Generated symbols, for a register R of block B with a field F[hi:lo]:
 *   ORK_REG_B_R                 the per-core offset (enum ork_reg)
 *   ORK_B_R_F(v)                packs v into the field (masked to its width)
 *   ORK_B_R_F_GET(r)            extracts the field from a register value
 * e.g. ORK_REG_CNA_DATA_SIZE0, ORK_CNA_DATA_SIZE0_DATAIN_HEIGHT(m). */
#ifndef ORK_REGS_H
#define ORK_REGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- blocks and target ids (spec §1.1, §2.2) ------------------------------------------------ */

enum ork_reg_block {
    ORK_BLOCK_PC = 0,       /* 0x0000-0x003c program controller */
    ORK_BLOCK_CNA,          /* 0x1000-0x1184 feature/weight DMA, CBUF, CSC */
    ORK_BLOCK_CORE,         /* 0x3000-0x301c (+0x3030) MAC array */
    ORK_BLOCK_DPU,          /* 0x4000-0x412c output stage and write DMA */
    ORK_BLOCK_DPU_RDMA,     /* 0x5000-0x506c second-operand read DMA */
    ORK_BLOCK_PPU,          /* 0x6000-0x60dc pooling; unused for matmul */
    ORK_BLOCK_PPU_RDMA,     /* 0x7000-0x7030 pooling read DMA; unused for matmul */
    ORK_BLOCK_COUNT,
    ORK_BLOCK_NONE = -1,
};

/* Target ids: the high 16 bits of an entry, block id with bit 0 ("write") set (spec §2.2). */
#define ORK_TARGET_NULL      0x0000u  /* all-zero null entry; "no next task" slot */
#define ORK_TARGET_PC_MARKER 0x0041u  /* PC control marker, reg 0, value 0; precedes op-enable */
#define ORK_TARGET_PC_OPEN   0x0081u  /* PC operation enable, reg 0x0008, value = enable mask */
#define ORK_TARGET_PC        0x0101u
#define ORK_TARGET_CNA       0x0201u
#define ORK_TARGET_CORE      0x0801u
#define ORK_TARGET_DPU       0x1001u
#define ORK_TARGET_DPU_RDMA  0x2001u
#define ORK_TARGET_PPU       0x4001u  /* [INF] from block id 0x4000 (spec §2.2) */
#define ORK_TARGET_PPU_RDMA  0x8001u  /* [INF] from block id 0x8000 (spec §2.2) */

/* Block-enable mask bits of OPERATION_ENABLE / task enable_mask (spec §3.3, bit positions [INF]). */
#define ORK_ENABLE_CNA       0x01u
#define ORK_ENABLE_CORE      0x04u
#define ORK_ENABLE_DPU       0x08u
#define ORK_ENABLE_DPU_RDMA  0x10u
#define ORK_ENABLE_PPU       0x20u
#define ORK_ENABLE_PPU_RDMA  0x40u
/* 0x0d: CNA + CORE + DPU, the plain matmul (spec §3.3). */
#define ORK_ENABLE_MATMUL    (ORK_ENABLE_CNA | ORK_ENABLE_CORE | ORK_ENABLE_DPU)

/* ---- the table ---------------------------------------------------------------------------- */

/* PC interrupt bits (spec §8.2), shared by the four interrupt registers. */
#define ORK__PC_INT_FIELDS(F, b, r)                                                      \
    F(b, r, DMA_WRITE_ERROR, 13, 13) F(b, r, DMA_READ_ERROR, 12, 12)                     \
    F(b, r, PPU_1, 11, 11) F(b, r, PPU_0, 10, 10) F(b, r, DPU_1, 9, 9) F(b, r, DPU_0, 8, 8) \
    F(b, r, CORE_1, 7, 7) F(b, r, CORE_0, 6, 6) F(b, r, CNA_CSC_1, 5, 5)                 \
    F(b, r, CNA_CSC_0, 4, 4) F(b, r, CNA_WEIGHT_1, 3, 3) F(b, r, CNA_WEIGHT_0, 2, 2)     \
    F(b, r, CNA_FEATURE_1, 1, 1) F(b, r, CNA_FEATURE_0, 0, 0)

/* R(block, name, offset, description)   F(block, name, field, hi, lo)
 * Registers are listed in offset order within each block; a register's fields follow it,
 * most significant first. */
#define ORK_REG_TABLE(R, F)                                                                       \
    /* PC (spec §8.2, §8.3, §11.3) */                                                             \
    R(PC, OPERATION_ENABLE, 0x0008, "start the enabled blocks (trailer op-enable, target 0x0081)") \
    F(PC, OPERATION_ENABLE, PPU_RDMA, 6, 6) F(PC, OPERATION_ENABLE, PPU, 5, 5)                    \
    F(PC, OPERATION_ENABLE, DPU_RDMA, 4, 4) F(PC, OPERATION_ENABLE, DPU, 3, 3)                    \
    F(PC, OPERATION_ENABLE, CORE, 2, 2) F(PC, OPERATION_ENABLE, CNA, 0, 0)                        \
    R(PC, BASE_ADDRESS, 0x0010, "next program IOVA (16-byte aligned)")                            \
    F(PC, BASE_ADDRESS, SOURCE_ADDR, 31, 4)                                                       \
    R(PC, REGISTER_AMOUNTS, 0x0014, "next program length: ceil((n+4)/2)-1 entry pairs")           \
    R(PC, INTERRUPT_MASK, 0x0020, "interrupt mask") ORK__PC_INT_FIELDS(F, PC, INTERRUPT_MASK)     \
    R(PC, INTERRUPT_CLEAR, 0x0024, "interrupt clear") ORK__PC_INT_FIELDS(F, PC, INTERRUPT_CLEAR)  \
    R(PC, INTERRUPT_STATUS, 0x0028, "interrupt status") ORK__PC_INT_FIELDS(F, PC, INTERRUPT_STATUS) \
    R(PC, INTERRUPT_RAW_STATUS, 0x002c, "raw interrupt status")                                   \
    ORK__PC_INT_FIELDS(F, PC, INTERRUPT_RAW_STATUS)                                               \
    R(PC, TASK_CON, 0x0030, "task control")                                                       \
    F(PC, TASK_CON, RESERVED_14, 14, 14) F(PC, TASK_CON, TASK_COUNT_CLEAR, 13, 13)                \
    F(PC, TASK_CON, TASK_PP_EN, 12, 12) F(PC, TASK_CON, TASK_NUMBER, 11, 0)                       \
    R(PC, TASK_DMA_BASE_ADDR, 0x0034, "task descriptor base")                                     \
    R(PC, TASK_STATUS, 0x003c, "completed task count (low 12 bits)")                              \
    /* CNA (spec §3.1 #0-#52, §8.2) */                                                            \
    R(CNA, S_POINTER, 0x1004, "CNA ping-pong pointer (written by the kernel)")                    \
    R(CNA, CONV_CON1, 0x100c, "precision and mode")                                               \
    F(CNA, CONV_CON1, NONALIGN_DMA, 30, 30) F(CNA, CONV_CON1, GROUP_LINE_OFF, 29, 29)             \
    F(CNA, CONV_CON1, PROC_PRECISION, 9, 7) F(CNA, CONV_CON1, IN_PRECISION, 6, 4)                 \
    F(CNA, CONV_CON1, CONV_MODE, 3, 0)                                                            \
    R(CNA, CONV_CON2, 0x1010, "feature grains (row-count hint, §5.6)")                            \
    F(CNA, CONV_CON2, KERNEL_GROUP, 23, 16) F(CNA, CONV_CON2, FEATURE_GRAINS, 13, 4)              \
    R(CNA, CONV_CON3, 0x1014, "strides and dilation")                                             \
    F(CNA, CONV_CON3, CONV_Y_STRIDE, 5, 3) F(CNA, CONV_CON3, CONV_X_STRIDE, 2, 0)                 \
    R(CNA, DATA_SIZE0, 0x1020, "input width (1) and height (M)")                                  \
    F(CNA, DATA_SIZE0, DATAIN_WIDTH, 26, 16) F(CNA, DATA_SIZE0, DATAIN_HEIGHT, 10, 0)             \
    R(CNA, DATA_SIZE1, 0x1024, "input channels (K-1, K)")                                         \
    F(CNA, DATA_SIZE1, DATAIN_CHANNEL_REAL, 29, 16) F(CNA, DATA_SIZE1, DATAIN_CHANNEL, 15, 0)     \
    R(CNA, DATA_SIZE2, 0x1028, "output width")                                                    \
    R(CNA, DATA_SIZE3, 0x102c, "output atoms (M)")                                                \
    F(CNA, DATA_SIZE3, DATAOUT_ATOMICS, 21, 0)                                                    \
    R(CNA, WEIGHT_SIZE0, 0x1030, "total weight bytes")                                            \
    R(CNA, WEIGHT_SIZE1, 0x1034, "weight bytes per kernel (output column)")                       \
    F(CNA, WEIGHT_SIZE1, WEIGHT_BYTES_PER_KERNEL, 18, 0)                                          \
    R(CNA, WEIGHT_SIZE2, 0x1038, "kernel width, height and count (N)")                            \
    F(CNA, WEIGHT_SIZE2, WEIGHT_WIDTH, 28, 24) F(CNA, WEIGHT_SIZE2, WEIGHT_HEIGHT, 20, 16)        \
    F(CNA, WEIGHT_SIZE2, WEIGHT_KERNELS, 13, 0)                                                   \
    R(CNA, CBUF_CON0, 0x1040, "CBUF bank split (§5.2)")                                           \
    F(CNA, CBUF_CON0, WEIGHT_REUSE, 13, 13) F(CNA, CBUF_CON0, DATA_REUSE, 12, 12)                 \
    F(CNA, CBUF_CON0, FC_DATA_BANK, 10, 8) F(CNA, CBUF_CON0, WEIGHT_BANK, 7, 4)                   \
    F(CNA, CBUF_CON0, DATA_BANK, 3, 0)                                                            \
    R(CNA, CBUF_CON1, 0x1044, "64-byte CBUF entries per feature row")                             \
    F(CNA, CBUF_CON1, DATA_ENTRIES, 13, 0)                                                        \
    R(CNA, CVT_CON0, 0x104c, "input conversion control (0xb: bypass)")                            \
    R(CNA, CVT_CON1, 0x1050, "input conversion scale/offset")                                     \
    R(CNA, CVT_CON2, 0x1054, "input conversion scale/offset")                                     \
    R(CNA, CVT_CON3, 0x1058, "input conversion scale/offset")                                     \
    R(CNA, CVT_CON4, 0x105c, "input conversion scale/offset")                                     \
    R(CNA, FC_CON0, 0x1060, "")                                                                   \
    R(CNA, FC_CON1, 0x1064, "")                                                                   \
    R(CNA, PAD_CON0, 0x1068, "padding")                                                           \
    F(CNA, PAD_CON0, PAD_LEFT, 7, 4) F(CNA, PAD_CON0, PAD_TOP, 3, 0)                              \
    R(CNA, FEATURE_DATA_ADDR, 0x1070, "feature (A) IOVA")                                         \
    R(CNA, FC_CON2, 0x1074, "")                                                                   \
    R(CNA, DMA_CON0, 0x1078, "DMA burst lengths")                                                 \
    F(CNA, DMA_CON0, WEIGHT_BURST_LEN, 19, 16) F(CNA, DMA_CON0, DATA_BURST_LEN, 3, 0)             \
    R(CNA, DMA_CON1, 0x107c, "A row pitch in 16-byte units")                                      \
    F(CNA, DMA_CON1, LINE_STRIDE, 27, 0)                                                          \
    R(CNA, DMA_CON2, 0x1080, "surface stride (unused for matmul)")                                \
    R(CNA, FC_DATA_SIZE0, 0x1084, "DMA width/height (mirror of DATA_SIZE0)")                      \
    F(CNA, FC_DATA_SIZE0, DMA_WIDTH, 26, 16) F(CNA, FC_DATA_SIZE0, DMA_HEIGHT, 10, 0)             \
    R(CNA, FC_DATA_SIZE1, 0x1088, "DMA channels (K)")                                             \
    R(CNA, DCOMP_CTRL, 0x1100, "weight decompression control")                                    \
    R(CNA, DCOMP_REGNUM, 0x1104, "weight decompression register count")                           \
    R(CNA, DCOMP_ADDR0, 0x1110, "weight (B) IOVA")                                                \
    R(CNA, DCOMP_AMOUNT0, 0x1140, "") R(CNA, DCOMP_AMOUNT1, 0x1144, "")                           \
    R(CNA, DCOMP_AMOUNT2, 0x1148, "") R(CNA, DCOMP_AMOUNT3, 0x114c, "")                           \
    R(CNA, DCOMP_AMOUNT4, 0x1150, "") R(CNA, DCOMP_AMOUNT5, 0x1154, "")                           \
    R(CNA, DCOMP_AMOUNT6, 0x1158, "") R(CNA, DCOMP_AMOUNT7, 0x115c, "")                           \
    R(CNA, DCOMP_AMOUNT8, 0x1160, "") R(CNA, DCOMP_AMOUNT9, 0x1164, "")                           \
    R(CNA, DCOMP_AMOUNT10, 0x1168, "") R(CNA, DCOMP_AMOUNT11, 0x116c, "")                         \
    R(CNA, DCOMP_AMOUNT12, 0x1170, "") R(CNA, DCOMP_AMOUNT13, 0x1174, "")                         \
    R(CNA, DCOMP_AMOUNT14, 0x1178, "") R(CNA, DCOMP_AMOUNT15, 0x117c, "")                         \
    R(CNA, CVT_CON5, 0x1180, "")                                                                  \
    R(CNA, PAD_CON1, 0x1184, "pad value")                                                         \
    /* CORE (spec §3.1 #53-#57, §8.2) */                                                          \
    R(CORE, S_POINTER, 0x3004, "CORE ping-pong pointer (written by the kernel)")                  \
    R(CORE, MISC_CFG, 0x3010, "MAC precision")                                                    \
    F(CORE, MISC_CFG, SOFT_GATING, 19, 14) F(CORE, MISC_CFG, PROC_PRECISION, 10, 8)               \
    F(CORE, MISC_CFG, DW_EN, 1, 1) F(CORE, MISC_CFG, QD_EN, 0, 0)                                 \
    R(CORE, DATAOUT_SIZE_0, 0x3014, "output height-1 and width-1")                                \
    F(CORE, DATAOUT_SIZE_0, DATAOUT_HEIGHT, 31, 16) F(CORE, DATAOUT_SIZE_0, DATAOUT_WIDTH, 15, 0) \
    R(CORE, DATAOUT_SIZE_1, 0x3018, "output channels-1 (N-1)")                                    \
    R(CORE, CLIP_TRUNCATE, 0x301c, "accumulator clip/round")                                      \
    F(CORE, CLIP_TRUNCATE, ROUND_TYPE, 6, 6) F(CORE, CLIP_TRUNCATE, CLIP_TRUNCATE, 4, 0)          \
    R(CORE, UNDOC_3030, 0x3030, "undocumented, written 0 by matmul programs")                     \
    /* DPU (spec §3.1 #4, #58-#107, §6) */                                                        \
    R(DPU, S_POINTER, 0x4004, "DPU ping-pong pointer control")                                    \
    R(DPU, FEATURE_MODE_CFG, 0x400c, "burst length and output mode")                              \
    F(DPU, FEATURE_MODE_CFG, BURST_LEN, 8, 5) F(DPU, FEATURE_MODE_CFG, CONV_MODE, 4, 3)           \
    F(DPU, FEATURE_MODE_CFG, OUTPUT_MODE, 2, 1) F(DPU, FEATURE_MODE_CFG, FLYING_MODE, 0, 0)       \
    R(DPU, DATA_FORMAT, 0x4010, "output/input/process precision (§6.1)")                          \
    F(DPU, DATA_FORMAT, OUT_PRECISION, 31, 29) F(DPU, DATA_FORMAT, IN_PRECISION, 28, 26)          \
    F(DPU, DATA_FORMAT, PROC_PRECISION, 2, 0)                                                     \
    R(DPU, UNNAMED_4014, 0x4014, "unnamed, written 0")                                            \
    R(DPU, DST_BASE_ADDR, 0x4020, "output (C) IOVA")                                              \
    R(DPU, DST_SURF_STRIDE, 0x4024, "surface stride (0x10 for plain matmul)")                     \
    R(DPU, DATA_CUBE_WIDTH, 0x4030, "output width-1")                                             \
    R(DPU, DATA_CUBE_HEIGHT, 0x4034, "output height-1 (M-1)")                                     \
    R(DPU, DATA_CUBE_NOTCH_ADDR, 0x4038, "row pitch and row length in 16-byte units, minus one")  \
    F(DPU, DATA_CUBE_NOTCH_ADDR, ROW_PITCH_M1, 31, 16) /* [INF] name */                           \
    F(DPU, DATA_CUBE_NOTCH_ADDR, ROW_LEN_M1, 15, 0)    /* [INF] name */                           \
    R(DPU, DATA_CUBE_CHANNEL, 0x403c, "row stride-1 and channels-1")                              \
    F(DPU, DATA_CUBE_CHANNEL, ORIG_CHANNEL, 31, 16) F(DPU, DATA_CUBE_CHANNEL, CHANNEL, 15, 0)     \
    R(DPU, BS_CFG, 0x4040, "bias/scale stage (0x53: bypass)")                                     \
    R(DPU, BS_ALU_CFG, 0x4044, "") R(DPU, BS_MUL_CFG, 0x4048, "")                                 \
    R(DPU, BS_RELUX_CMP_VALUE, 0x404c, "")                                                        \
    R(DPU, BS_OW_CFG, 0x4050, "output-write config (§6)")                                         \
    R(DPU, BS_OW_OP, 0x4054, "weight zero-point offset")                                          \
    R(DPU, WDMA_SIZE_0, 0x4058, "write DMA channels-1 (N-1)")                                     \
    R(DPU, WDMA_SIZE_1, 0x405c, "write DMA height-1 (M-1) in the high half")                      \
    F(DPU, WDMA_SIZE_1, HEIGHT_M1, 31, 16) /* [INF] name */                                       \
    R(DPU, BN_CFG, 0x4060, "batch-norm stage (0x53: bypass)")                                     \
    R(DPU, BN_ALU_CFG, 0x4064, "") R(DPU, BN_MUL_CFG, 0x4068, "")                                 \
    R(DPU, BN_RELUX_CMP_VALUE, 0x406c, "")                                                        \
    R(DPU, EW_CFG, 0x4070, "element-wise stage and LUT (0x383: bypass)")                          \
    R(DPU, EW_CVT_OFFSET_VALUE, 0x4074, "") R(DPU, EW_CVT_SCALE_VALUE, 0x4078, "")                \
    R(DPU, EW_RELUX_CMP_VALUE, 0x407c, "")                                                        \
    R(DPU, OUT_CVT_OFFSET, 0x4080, "requant offset")                                              \
    R(DPU, OUT_CVT_SCALE, 0x4084, "requant multiplier")                                           \
    F(DPU, OUT_CVT_SCALE, FP32TOFP16_EN, 16, 16) F(DPU, OUT_CVT_SCALE, SCALE, 15, 0)              \
    R(DPU, OUT_CVT_SHIFT, 0x4088, "requant shift")                                                \
    R(DPU, EW_OP_VALUE_0, 0x4090, "") R(DPU, EW_OP_VALUE_1, 0x4094, "")                           \
    R(DPU, EW_OP_VALUE_2, 0x4098, "") R(DPU, EW_OP_VALUE_3, 0x409c, "")                           \
    R(DPU, EW_OP_VALUE_4, 0x40a0, "") R(DPU, EW_OP_VALUE_5, 0x40a4, "")                           \
    R(DPU, EW_OP_VALUE_6, 0x40a8, "") R(DPU, EW_OP_VALUE_7, 0x40ac, "")                           \
    R(DPU, SURFACE_ADD, 0x40c0, "output element config (a value, not an address)")                \
    R(DPU, UNNAMED_40C4, 0x40c4, "unnamed, written 0")                                            \
    R(DPU, LUT_INDEX, 0x4100, "LUT index port")                                                   \
    R(DPU, LUT_DATA, 0x4104, "LUT data port")                                                     \
    R(DPU, LUT_CFG_0, 0x4108, "LUT config") R(DPU, LUT_CFG_1, 0x410c, "LUT config")               \
    R(DPU, LUT_CFG_2, 0x4110, "LUT config") R(DPU, LUT_CFG_3, 0x4114, "LUT config")               \
    R(DPU, LUT_CFG_4, 0x4118, "LUT config") R(DPU, LUT_CFG_5, 0x411c, "LUT config")               \
    R(DPU, LUT_CFG_6, 0x4120, "LUT config") R(DPU, LUT_CFG_7, 0x4124, "LUT config")               \
    R(DPU, LUT_CFG_8, 0x4128, "LUT config") R(DPU, LUT_CFG_9, 0x412c, "LUT config")               \
    /* DPU_RDMA (spec §7: 0x5004 written like the DPU S_POINTER) */                               \
    R(DPU_RDMA, S_POINTER, 0x5004, "DPU_RDMA ping-pong pointer control [INF] name")

/* Register offsets: ORK_REG_<BLOCK>_<NAME>. */
#define ORK__REG_ENUM(b, n, off, desc) ORK_REG_##b##_##n = (off),
#define ORK__NOTHING(...)
enum ork_reg { ORK_REG_TABLE(ORK__REG_ENUM, ORK__NOTHING) };
#undef ORK__REG_ENUM

/* Field packers ORK_<BLOCK>_<NAME>_<FIELD>(v) and extractors ..._GET(r). Packing masks the
 * value to the field width; callers that can overflow a field validate first (plan.c). */
#define ORK__FIELD_MASK(hi, lo) ((((uint32_t)1 << ((hi) - (lo))) << 1) - 1u)
#define ORK__FIELD_FN(b, n, f, hi, lo)                                                   \
    static inline uint32_t ORK_##b##_##n##_##f(uint32_t v)                               \
    { return (v & ORK__FIELD_MASK(hi, lo)) << (lo); }                                    \
    static inline uint32_t ORK_##b##_##n##_##f##_GET(uint32_t r)                         \
    { return (r >> (lo)) & ORK__FIELD_MASK(hi, lo); }
ORK_REG_TABLE(ORK__NOTHING, ORK__FIELD_FN)
#undef ORK__FIELD_FN

/* ---- entries (spec §2.1) ------------------------------------------------------------------- */

struct ork_regcmd {
    uint16_t target;    /* bits 63..48 */
    uint16_t reg;       /* bits 15..0: per-core offset */
    uint32_t value;     /* bits 47..16 */
};

static inline uint64_t ork_regcmd_encode(uint16_t target, uint16_t reg, uint32_t value)
{
    return ((uint64_t)target << 48) | ((uint64_t)value << 16) | reg;
}

static inline struct ork_regcmd ork_regcmd_decode(uint64_t e)
{
    struct ork_regcmd c = { (uint16_t)(e >> 48), (uint16_t)(e & 0xffff), (uint32_t)(e >> 16) };
    return c;
}

/* Little-endian u64 from / to 8 bytes (program buffers are little-endian, spec §0). */
static inline uint64_t ork_regcmd_load(const void *p)
{
    const uint8_t *b = (const uint8_t *)p;
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | b[i];
    return v;
}
static inline void ork_regcmd_store(void *p, uint64_t v)
{
    uint8_t *b = (uint8_t *)p;
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
}

/* ---- lookup ----------------------------------------------------------------------------------- */

struct ork_reg_field {
    uint16_t reg;       /* owning register offset */
    uint8_t hi, lo;     /* bit range, inclusive */
    const char *name;   /* "DATAIN_HEIGHT" */
};

struct ork_reg_info {
    uint16_t offset;
    int8_t block;               /* enum ork_reg_block */
    const char *name;           /* "CNA_DATA_SIZE0" */
    const char *desc;
    uint16_t field_start;       /* index of its first field in the field table */
};

/* Register at `offset`, or NULL when the table does not know it. */
const struct ork_reg_info *ork_reg_lookup(uint16_t offset);
/* Register by full name ("CNA_CBUF_CON0"), or NULL. */
const struct ork_reg_info *ork_reg_find(const char *name);
/* All registers, in table order; *n receives the count. */
const struct ork_reg_info *ork_reg_all(size_t *n);
/* The fields of a register (most significant first); *n receives the count (may be 0). */
const struct ork_reg_field *ork_reg_fields(const struct ork_reg_info *r, size_t *n);

/* Block of an offset by its range (spec §1.1), or ORK_BLOCK_NONE. */
enum ork_reg_block ork_reg_block_of(uint16_t offset);
const char *ork_reg_block_name(enum ork_reg_block b);
/* The write target id for a block (spec §2.2); 0 for ORK_BLOCK_NONE. */
uint16_t ork_reg_block_target(enum ork_reg_block b);
/* The target id a normal write to `offset` uses; 0 when the offset is in no known block. */
static inline uint16_t ork_reg_target(uint16_t offset)
{
    return ork_reg_block_target(ork_reg_block_of(offset));
}

/* Classification of one entry (what a decoder or `ork regdump` reports). */
enum ork_regcmd_kind {
    ORK_REGCMD_WRITE = 0,       /* a known register written with its block's target */
    ORK_REGCMD_NULL,            /* all-zero entry */
    ORK_REGCMD_MARKER,          /* (0x0041, 0, 0) PC control marker */
    ORK_REGCMD_OP_ENABLE,       /* (0x0081, 0x0008, mask) */
    ORK_REGCMD_UNKNOWN_TARGET,  /* target id not in spec §2.2 */
    ORK_REGCMD_UNKNOWN_REG,     /* known target, offset not in the table */
    ORK_REGCMD_TARGET_MISMATCH, /* target does not match the register's block (spec §2.2) */
};
enum ork_regcmd_kind ork_regcmd_classify(uint64_t entry);
const char *ork_regcmd_kind_name(enum ork_regcmd_kind k);

/* Pretty-printers. They write at most `size` bytes (always NUL-terminated when size > 0) and
 * return the length the full text needs, like snprintf.
 *   ork_reg_format:    "CNA_DATA_SIZE0 = 0x00010004 { DATAIN_WIDTH=1 DATAIN_HEIGHT=4 }"
 *                      (bits set outside every field print as "?=0x..."; unknown offsets print
 *                      as "REG_0x1234 = 0x...").
 *   ork_regcmd_format: "0201 CNA_DATA_SIZE0 = 0x00010004 { ... }" plus a trailing
 *                      "  !! <kind>" for anything other than a valid write/null/marker/enable. */
int ork_reg_format(char *buf, size_t size, uint16_t offset, uint32_t value);
int ork_regcmd_format(char *buf, size_t size, uint64_t entry);

#ifdef __cplusplus
}
#endif
#endif
