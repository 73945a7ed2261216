/* program.c -- regcmd emission of one matmul program (spec §3.1), its PC trailer, chaining of
 * programs (spec §8.3) and DMA address validation (spec §14.3).
 *
 * The register list is written in the spec's stored order, one EMIT per entry, with the entry
 * number of §3.1 beside it (two flat lists: the CNA group, then CORE and DPU). Values that depend on the shape follow the "int8 rule" / "fp16 rule"
 * columns; the constant ones are named below with their source. What this file does not decide:
 * the CBUF bank split and the FEATURE_GRAINS hint come in the task from plan.c (§5), and where
 * buffers live comes from matmul.c. An int4 task (t->i4, W4A8) writes the same entries with the
 * values of npu-weight-decompression.md §2 (constants below, docs/w4a8.md "Programs") and, when
 * the task leaves them 0, derives its own CBUF split (i4_layout.h) and grains. */
#include "program.h"

#include "i4_layout.h"

#include <ork/dcomp.h>
#include <ork/error.h>

#include <string.h>

/* ---- constants of the matmul program (spec §3.1, §6) --------------------------------------- */

/* Precision enum used by CONV_CON1, MISC_CFG and DATA_FORMAT (spec §6.1). */
enum {
    PREC_INT8 = 0,
    PREC_INT16 = 1,
    PREC_FP16 = 2,
    PREC_INT32 = 4,
    PREC_FP32 = 5,
    PREC_INT4 = 6,      /* npu-weight-decompression.md §2: "precision code 6" [SRC] */
};

/* #4 DPU S_POINTER: pointer ping-pong enable | executer ping-pong enable | pointer ping-pong
 * mode (spec §3.1, §8.2). */
#define DPU_S_POINTER_PINGPONG 0xeu
/* #17 CVT_CON0 = 0xb: input conversion bypassed (spec §3.1). Field layout not in the spec. */
#define CNA_CVT_CON0_BYPASS 0xbu
/* #18-#21 CVT_CON1..4 = 0x00010000: scale 1, offset 0 (spec §3.1). */
#define CNA_CVT_SCALE_ONE 0x00010000u
/* #27 DMA_CON0: maximum weight and data bursts (spec §3.1). */
#define CNA_BURST_MAX 15u
/* #58 FEATURE_MODE_CFG: BURST_LEN 15, OUTPUT_MODE 2 (spec §3.1). */
#define DPU_BURST_LEN 15u
#define DPU_OUTPUT_MODE 2u
/* #62 DST_SURF_STRIDE: constant for plain matmul (spec §3.1). */
#define DPU_DST_SURF_STRIDE_MATMUL 0x10u
/* #67 BS_CFG, #75 BN_CFG = 0x53 (stage bypassed), #79 EW_CFG = 0x383 (element-wise and LUT
 * bypassed) (spec §3.1). */
#define DPU_BS_BYPASS 0x53u
#define DPU_BN_BYPASS 0x53u
#define DPU_EW_BYPASS 0x383u
/* #81 EW_CVT_SCALE_VALUE = 1, #84 OUT_CVT_SCALE = 1 (identity, spec §3.1, §6.2). */
#define DPU_SCALE_ONE 1u
/* #71 BS_OW_CFG and #94 SURFACE_ADD per output mode (spec §6.2, production rows). */
#define DPU_BS_OW_CFG_I32 0x7fcu
#define DPU_BS_OW_CFG_F32 0x36eu
#define DPU_SURFACE_ADD_I32 0x80u
#define DPU_SURFACE_ADD_F32 0x40u
/* Output element size: int32 or fp32 (spec §0, §4.2). */
#define OUT_BYTES 4u
/* C row pitch / length registers count 16-byte units (spec §4.2). */
#define DPU_UNIT_BYTES 16u
/* Feature/weight byte counts of CBUF_CON1 use 64-byte entries (spec §3.1 #16). */
#define CBUF_ENTRY_BYTES 64u
/* DMA_CON1 LINE_STRIDE counts 16-byte units (spec §3.1 #28, §4.1). */
#define LINE_STRIDE_UNIT 16u

/* ---- int4 x int4 -> int16 programs (W4A8) --------------------------------------------------- *
 * Values of npu-weight-decompression.md §2 "int4 program values" [SRC], for M physical int4
 * rows, K and N elements. Every other entry keeps the int8 rule of spec §3.1 with the element
 * sizes of the int4 layouts (spec §4.6): A (K/32, M, 32) of M*K/2 bytes, B of K*N/2 bytes,
 * C (N/8, M, 8) int16 of M*N*2 bytes. */
/* #3/#5 CONV_CON1 = 0x360: PROC_PRECISION = IN_PRECISION = 6; GROUP_LINE_OFF (bit 29) is the
 * panel layouts' bit (§2: "plus bit 29 for panel layouts"), clear for the native layout. */
#define I4_CONV_CON1_GROUP_LINE_OFF 0u
/* #53 MISC_CFG = 0x601: PROC_PRECISION 6, QD_EN (§2). */
/* #59 DATA_FORMAT = 0x38000006: OUT_PRECISION int16 (§6.1 code 1), IN/PROC 6 (§2). */
/* #12 WEIGHT_SIZE0 = K*N/2, #13 WEIGHT_SIZE1 = K/2: two int4 codes a byte (§2). */
#define I4_PER_BYTE 2u
/* #16 CBUF_CON1 = M*ceil(K/128): a row's K/2 bytes in 64-byte entries, for all M rows (§2). */
#define I4_CBUF_CON1_K_UNIT 128u
/* #28 DMA_CON1 = 4M, #29 DMA_CON2 = (-3M) & 0xfffffff (§2; the mask is the source's, the
 * 28 bits of a LINE_STRIDE-wide field). */
#define I4_DMA_CON1_PER_ROW 4u
#define I4_DMA_CON2_PER_ROW 3u
#define I4_DMA_CON2_MASK 0xfffffffu
/* #62 DST_SURF_STRIDE = 16M: one C surface (M, 8) of int16 is 16 bytes a row (§2, §4.6). */
#define I4_DST_SURF_STRIDE_PER_ROW 16u
/* #71 BS_OW_CFG = 0x7fe, #94 SURFACE_ADD = 128M (§2). */
#define I4_BS_OW_CFG 0x7feu
#define I4_SURFACE_ADD_PER_ROW 128u
/* int16 output (spec §4.6, §6.1). */
#define I4_OUT_BYTES 2u
/* Limits per program (§2 "Limits"): K % 32, K <= 2048; N % 64, N <= 4096 per core; native
 * layout M <= 128 physical rows. */
#define I4_MAX_K 2048u
#define I4_MAX_N 4096u
#define I4_MAX_M 128u

/* Per-program limits (spec §5.1). */
#define MAX_M 2047u          /* DATAIN_HEIGHT is 11 bits */
#define MAX_N 8192u          /* N = 16384 is silently wrong */
#define MAX_K 65535u         /* DATAIN_CHANNEL is 16 bits */
#define K_ALIGN 32u
#define N_ALIGN_I8 32u
#define N_ALIGN_F16 16u
#define ADDR_ALIGN 16u       /* spec §14.3 ADDR_MISALIGNED */
#define MAX_STRIDE 65536u    /* DATA_CUBE_CHANNEL.ORIG_CHANNEL holds s-1 in 16 bits */

void ork__cs_emit(struct ork_cs *cs, uint16_t reg, uint32_t value)
{
    ork__cs_emit_raw(cs, ork_regcmd_encode(ork_reg_target(reg), reg, value));
}

void ork__cs_emit_raw(struct ork_cs *cs, uint64_t entry)
{
    if (cs->n >= cs->cap) {
        cs->overflow = true;
        return;
    }
    cs->e[cs->n++] = entry;
}

uint32_t ork__cs_reloc(struct ork_cs *cs, uint16_t reg, uint32_t iova, uint64_t len, bool write)
{
    if (cs->n_reloc < ORK_PROG_MAX_RELOCS) {
        struct ork_prog_reloc *r = &cs->reloc[cs->n_reloc++];
        r->reg = reg;
        r->write = write;
        r->iova = iova;
        r->len = len;
    } else {
        cs->overflow = true;
    }
    return iova;
}

/* The int4 task (npu-weight-decompression.md §2 "Limits"): int8 dtype, no DCOMP, M physical rows
 * <= 128, K % 32 <= 2048, N % 64 <= 4096, no C row stride (C is (N/8, M, 8)); CBUF_CON0 and
 * FEATURE_GRAINS 0 take the derived values (ork__i4_cbuf_con0, rows M + 1 of spec §5.6). */
static int i4_task_check(const struct ork_mm_task *t)
{
    if (t->dtype != ORK_NPU_I8)
        return ork_errorf(ORK_EINVAL, "matmul task: i4 task with dtype %d: int4 tasks carry "
                          "dtype ORK_NPU_I8 (program.h)", (int)t->dtype);
    if (t->dcomp)
        return ork_errorf(ORK_EINVAL, "matmul task: i4 task with dcomp set: int4 weights are "
                          "not decompressed (npu-weight-decompression.md §2)");
    if (t->m < 1 || t->m > I4_MAX_M)
        return ork_errorf(ORK_EINVAL, "matmul task: i4 M=%u physical rows outside 1..%u "
                          "(npu-weight-decompression.md §2 Limits)", t->m, I4_MAX_M);
    if (t->k < ORK_I4_K_ALIGN || t->k % ORK_I4_K_ALIGN || t->k > I4_MAX_K)
        return ork_errorf(ORK_EINVAL, "matmul task: i4 K=%u not a multiple of %u in %u..%u "
                          "(npu-weight-decompression.md §2 Limits)", t->k, ORK_I4_K_ALIGN,
                          ORK_I4_K_ALIGN, I4_MAX_K);
    if (t->n < ORK_I4_N_ALIGN || t->n % ORK_I4_N_ALIGN || t->n > I4_MAX_N)
        return ork_errorf(ORK_EINVAL, "matmul task: i4 N=%u not a multiple of %u in %u..%u "
                          "(npu-weight-decompression.md §2 Limits)", t->n, ORK_I4_N_ALIGN,
                          ORK_I4_N_ALIGN, I4_MAX_N);
    if (t->stride && t->stride != t->n)
        return ork_errorf(ORK_EINVAL, "matmul task: i4 C stride %u for N=%u: the int4 C "
                          "layout (N/8, M, 8) has no row stride (spec §4.6)", t->stride, t->n);
    if (!t->a || !t->b || !t->c || t->a % ADDR_ALIGN || t->b % ADDR_ALIGN || t->c % ADDR_ALIGN)
        return ork_errorf(ORK_EINVAL,
                          "matmul task: A=0x%08x B=0x%08x C=0x%08x must be non-zero and 16-byte "
                          "aligned (spec §14.3)", t->a, t->b, t->c);
    if (t->cbuf) {
        const uint32_t d = ORK_CNA_CBUF_CON0_DATA_BANK_GET(t->cbuf);
        const uint32_t need = ork__i4_cbuf_data_banks(t->m, t->k);
        if (ORK_CNA_CBUF_CON0_WEIGHT_BANK_GET(t->cbuf) == 0 || d < need || d >= ORK_I4_CBUF_BANKS)
            return ork_errorf(ORK_EINVAL, "matmul task: i4 CBUF_CON0=0x%x: M=%u rows of K=%u "
                              "int4 need %u..11 data banks and a weight bank (spec §5.2, "
                              "i4_layout.h)", t->cbuf, t->m, t->k, need);
    }
    if (t->grains && t->grains != ORK_CNA_CONV_CON2_FEATURE_GRAINS_GET(
                                      ORK_CNA_CONV_CON2_FEATURE_GRAINS(t->grains)))
        return ork_errorf(ORK_EINVAL, "matmul task: FEATURE_GRAINS %u does not fit (spec §5.6)",
                          t->grains);
    return 0;
}

int ork__mm_task_check(const struct ork_mm_task *t)
{
    if (t->i4)
        return i4_task_check(t);
    uint32_t n_align = t->dtype == ORK_NPU_I8 ? N_ALIGN_I8 : N_ALIGN_F16;
    uint32_t s = t->stride ? t->stride : t->n;
    if (t->dtype != ORK_NPU_I8 && t->dtype != ORK_NPU_F16)
        return ork_errorf(ORK_EINVAL, "matmul task: unknown dtype %d", (int)t->dtype);
    if (t->m < 1 || t->m > MAX_M)
        return ork_errorf(ORK_EINVAL, "matmul task: M=%u outside 1..%u (DATAIN_HEIGHT, spec §5.1)",
                          t->m, MAX_M);
    if (t->k < K_ALIGN || t->k % K_ALIGN || t->k > MAX_K)
        return ork_errorf(ORK_EINVAL, "matmul task: K=%u not a multiple of %u in 1..%u (spec §5.1)",
                          t->k, K_ALIGN, MAX_K);
    if (t->n < n_align || t->n % n_align || t->n > MAX_N)
        return ork_errorf(ORK_EINVAL, "matmul task: N=%u not a multiple of %u in 1..%u (spec §5.1)",
                          t->n, n_align, MAX_N);
    if (s < t->n || s > MAX_STRIDE || s % (DPU_UNIT_BYTES / OUT_BYTES))
        return ork_errorf(ORK_EINVAL, "matmul task: C stride %u invalid for N=%u (spec §4.2)", s,
                          t->n);
    if (!t->a || !t->b || !t->c || t->a % ADDR_ALIGN || t->b % ADDR_ALIGN || t->c % ADDR_ALIGN)
        return ork_errorf(ORK_EINVAL,
                          "matmul task: A=0x%08x B=0x%08x C=0x%08x must be non-zero and 16-byte "
                          "aligned (spec §14.3)", t->a, t->b, t->c);
    if (ORK_CNA_CBUF_CON0_WEIGHT_BANK_GET(t->cbuf) == 0)
        return ork_errorf(ORK_EINVAL, "matmul task: CBUF_CON0=0x%x has no weight bank (hangs, "
                          "spec §5.2)", t->cbuf);
    if (t->grains == 0 || t->grains != ORK_CNA_CONV_CON2_FEATURE_GRAINS_GET(
                                            ORK_CNA_CONV_CON2_FEATURE_GRAINS(t->grains)))
        return ork_errorf(ORK_EINVAL, "matmul task: FEATURE_GRAINS %u does not fit (spec §5.6)",
                          t->grains);
    return 0;
}

/* Entries #0-#52 (spec §3.1): the CNA group (with DPU S_POINTER at #4, where §3.1 stores it):
 * precision, input and weight geometry, CBUF split, A and B addresses, decompression off. */
static void emit_cna(struct ork_cs *cs, const struct ork_mm_task *t)
{
    const bool f16 = t->dtype == ORK_NPU_F16;
    const uint32_t esz = f16 ? 2 : 1;                    /* bytes per input element (§0) */
    const uint32_t M = t->m, K = t->k, N = t->n;
    const bool i4 = t->i4;
    const uint32_t in_prec = i4 ? PREC_INT4 : f16 ? PREC_FP16 : PREC_INT8;

    const uint32_t conv_con1 =
        ORK_CNA_CONV_CON1_GROUP_LINE_OFF(i4 ? I4_CONV_CON1_GROUP_LINE_OFF : 1) |
        ORK_CNA_CONV_CON1_PROC_PRECISION(in_prec) |
        ORK_CNA_CONV_CON1_IN_PRECISION(in_prec);                                 /* #3/#5 */
    const uint32_t cbuf = i4 && !t->cbuf ? ork__i4_cbuf_con0(M, K) : t->cbuf;  /* #0/#15 */
    /* FEATURE_GRAINS: an int4 task without one takes rows M + 1 (§5.6, a hint only) */
    const uint32_t grains = i4 && !t->grains ? M + 1 : t->grains;               /* #6 */
    /* decompression: off for raw B; a DCOMP task's CTRL/REGNUM in both copies and its 16 lane
     * sizes (npu-weight-decompression.md §1.2), the stream at ADDR0 (§1.5: nothing else
     * changes, WEIGHT_SIZE0..2 keep the uncompressed values) */
    const struct ork_dcomp_regs *dc = t->dcomp;
    const uint32_t dcomp_regnum = dc ? dc->regnum : 0, dcomp_ctrl = dc ? dc->ctrl : 0; /* #1/#33, #2/#32 */
    /* weight bytes (#12, B extent) and bytes per column (#13): int4 packs two a byte */
    const uint32_t w_bytes = i4 ? K * N / I4_PER_BYTE : K * N * esz;
    const uint32_t w_per_kernel = i4 ? K / I4_PER_BYTE : K * esz;
    const uint64_t b_extent = dc ? t->b_bytes : w_bytes;
    const uint32_t data_size0 = ORK_CNA_DATA_SIZE0_DATAIN_WIDTH(1) |
                                ORK_CNA_DATA_SIZE0_DATAIN_HEIGHT(M);
    /* #16: 64-byte CBUF entries per feature row: int8 ceil(K/64), fp16 K/32 = 2K/64. */
    const uint32_t data_entries =
        i4 ? M * ((K + I4_CBUF_CON1_K_UNIT - 1) / I4_CBUF_CON1_K_UNIT)
           : (K * esz + CBUF_ENTRY_BYTES - 1) / CBUF_ENTRY_BYTES;
    /* A extent: dense rows (§4.1), or the int4 (K/32, M, 32) block of M*K/2 bytes (§4.6) */
    const uint64_t a_extent = i4 ? (uint64_t)M * K / I4_PER_BYTE
                                 : (uint64_t)(M - 1) * K * esz + (uint64_t)K * esz;
    /* #28/#29: the A row pitch, or the int4 values of npu-weight-decompression.md §2 */
    const uint32_t dma_con1 = i4 ? ORK_CNA_DMA_CON1_LINE_STRIDE(I4_DMA_CON1_PER_ROW * M)
                                 : ORK_CNA_DMA_CON1_LINE_STRIDE(K * esz / LINE_STRIDE_UNIT);
    const uint32_t dma_con2 = i4 ? (0u - I4_DMA_CON2_PER_ROW * M) & I4_DMA_CON2_MASK : 0;

    EMIT(cs, CNA_CBUF_CON0, cbuf);                                      /* #0 (copy 1) */
    EMIT(cs, CNA_DCOMP_REGNUM, dcomp_regnum);                           /* #1 (copy 1) */
    EMIT(cs, CNA_DCOMP_CTRL, dcomp_ctrl);                               /* #2 (copy 1) */
    EMIT(cs, CNA_CONV_CON1, conv_con1);                                 /* #3 (copy 1) */
    EMIT(cs, DPU_S_POINTER, DPU_S_POINTER_PINGPONG);                    /* #4 */
    EMIT(cs, CNA_CONV_CON1, conv_con1);                                 /* #5 */
    EMIT(cs, CNA_CONV_CON2, ORK_CNA_CONV_CON2_FEATURE_GRAINS(grains));  /* #6 */
    EMIT(cs, CNA_CONV_CON3, ORK_CNA_CONV_CON3_CONV_Y_STRIDE(1) |
                            ORK_CNA_CONV_CON3_CONV_X_STRIDE(1));        /* #7 */
    EMIT(cs, CNA_DATA_SIZE0, data_size0);                               /* #8 */
    EMIT(cs, CNA_DATA_SIZE1, ORK_CNA_DATA_SIZE1_DATAIN_CHANNEL_REAL(K - 1) |
                             ORK_CNA_DATA_SIZE1_DATAIN_CHANNEL(K));     /* #9 */
    EMIT(cs, CNA_DATA_SIZE2, 1);                                        /* #10 output width 1 */
    EMIT(cs, CNA_DATA_SIZE3, ORK_CNA_DATA_SIZE3_DATAOUT_ATOMICS(M));    /* #11 */
    EMIT(cs, CNA_WEIGHT_SIZE0, w_bytes);                                /* #12 */
    EMIT(cs, CNA_WEIGHT_SIZE1, ORK_CNA_WEIGHT_SIZE1_WEIGHT_BYTES_PER_KERNEL(w_per_kernel)); /* #13 */
    EMIT(cs, CNA_WEIGHT_SIZE2, ORK_CNA_WEIGHT_SIZE2_WEIGHT_WIDTH(1) |
                               ORK_CNA_WEIGHT_SIZE2_WEIGHT_HEIGHT(1) |
                               ORK_CNA_WEIGHT_SIZE2_WEIGHT_KERNELS(N)); /* #14 */
    EMIT(cs, CNA_CBUF_CON0, cbuf);                                      /* #15 (effective) */
    EMIT(cs, CNA_CBUF_CON1, ORK_CNA_CBUF_CON1_DATA_ENTRIES(data_entries)); /* #16 */
    EMIT(cs, CNA_CVT_CON0, CNA_CVT_CON0_BYPASS);                        /* #17 */
    EMIT(cs, CNA_CVT_CON1, CNA_CVT_SCALE_ONE);                          /* #18 */
    EMIT(cs, CNA_CVT_CON2, CNA_CVT_SCALE_ONE);                          /* #19 */
    EMIT(cs, CNA_CVT_CON3, CNA_CVT_SCALE_ONE);                          /* #20 */
    EMIT(cs, CNA_CVT_CON4, CNA_CVT_SCALE_ONE);                          /* #21 */
    EMIT(cs, CNA_FC_CON0, 0);                                           /* #22 */
    EMIT(cs, CNA_FC_CON1, 0);                                           /* #23 */
    EMIT(cs, CNA_PAD_CON0, ORK_CNA_PAD_CON0_PAD_LEFT(0) | ORK_CNA_PAD_CON0_PAD_TOP(0)); /* #24 */
    EMIT(cs, CNA_FEATURE_DATA_ADDR,
        ork__cs_reloc(cs, ORK_REG_CNA_FEATURE_DATA_ADDR, t->a, a_extent, false)); /* #25 A */
    EMIT(cs, CNA_FC_CON2, 0);                                           /* #26 */
    EMIT(cs, CNA_DMA_CON0, ORK_CNA_DMA_CON0_WEIGHT_BURST_LEN(CNA_BURST_MAX) |
                           ORK_CNA_DMA_CON0_DATA_BURST_LEN(CNA_BURST_MAX)); /* #27 */
    EMIT(cs, CNA_DMA_CON1, dma_con1);                                   /* #28 */
    EMIT(cs, CNA_DMA_CON2, dma_con2);                                   /* #29 */
    EMIT(cs, CNA_FC_DATA_SIZE0, ORK_CNA_FC_DATA_SIZE0_DMA_WIDTH(1) |
                                ORK_CNA_FC_DATA_SIZE0_DMA_HEIGHT(M));   /* #30 */
    EMIT(cs, CNA_FC_DATA_SIZE1, K);                                     /* #31 */
    EMIT(cs, CNA_DCOMP_CTRL, dcomp_ctrl);                               /* #32 (copy 2) */
    EMIT(cs, CNA_DCOMP_REGNUM, dcomp_regnum);                           /* #33 (copy 2) */
    EMIT(cs, CNA_DCOMP_ADDR0,
        ork__cs_reloc(cs, ORK_REG_CNA_DCOMP_ADDR0, t->b, b_extent, false)); /* #34 B */
    for (uint32_t l = 0; l < ORK_DCOMP_LANES; l++)                      /* #35-#50 */
        ork__cs_emit(cs, (uint16_t)(ORK_REG_CNA_DCOMP_AMOUNT0 + 4u * l), dc ? dc->amount[l] : 0);
    EMIT(cs, CNA_CVT_CON5, 0);                                          /* #51 */
    EMIT(cs, CNA_PAD_CON1, 0);                                          /* #52 */
}

/* Entries #53-#107 (spec §3.1): CORE output geometry, then the DPU output stage with every
 * post-processing unit bypassed (§6.2) and the C address. */
static void emit_core_dpu(struct ork_cs *cs, const struct ork_mm_task *t)
{
    const bool f16 = t->dtype == ORK_NPU_F16;
    const uint32_t M = t->m, N = t->n;
    const bool i4 = t->i4;
    const uint32_t s = t->stride && !i4 ? t->stride : N;
    const uint32_t in_prec = i4 ? PREC_INT4 : f16 ? PREC_FP16 : PREC_INT8;
    const uint32_t out_prec = i4 ? PREC_INT16 : f16 ? PREC_FP32 : PREC_INT32;
    const uint32_t osz = i4 ? I4_OUT_BYTES : OUT_BYTES;
    /* C extent: rows of stride s (§4.2), or the int4 (N/8, M, 8) int16 block (§4.6) */
    const uint64_t c_extent = i4 ? (uint64_t)N * M * I4_OUT_BYTES
                                 : ((uint64_t)(M - 1) * s + N) * OUT_BYTES;
    const uint32_t surf_stride = i4 ? I4_DST_SURF_STRIDE_PER_ROW * M : DPU_DST_SURF_STRIDE_MATMUL;
    const uint32_t bs_ow = i4 ? I4_BS_OW_CFG : f16 ? DPU_BS_OW_CFG_F32 : DPU_BS_OW_CFG_I32;
    const uint32_t surface_add = i4 ? I4_SURFACE_ADD_PER_ROW * M
                                    : f16 ? DPU_SURFACE_ADD_F32 : DPU_SURFACE_ADD_I32;

    EMIT(cs, CORE_MISC_CFG, ORK_CORE_MISC_CFG_PROC_PRECISION(in_prec) |
                            ORK_CORE_MISC_CFG_QD_EN(1));                /* #53 */
    EMIT(cs, CORE_DATAOUT_SIZE_0, ORK_CORE_DATAOUT_SIZE_0_DATAOUT_HEIGHT(M - 1) |
                                  ORK_CORE_DATAOUT_SIZE_0_DATAOUT_WIDTH(0)); /* #54 */
    EMIT(cs, CORE_DATAOUT_SIZE_1, N - 1);                               /* #55 */
    EMIT(cs, CORE_CLIP_TRUNCATE, 0);                                    /* #56 */
    EMIT(cs, CORE_UNDOC_3030, 0);                                       /* #57 */
    EMIT(cs, DPU_FEATURE_MODE_CFG, ORK_DPU_FEATURE_MODE_CFG_BURST_LEN(DPU_BURST_LEN) |
                                   ORK_DPU_FEATURE_MODE_CFG_OUTPUT_MODE(DPU_OUTPUT_MODE)); /* #58 */
    EMIT(cs, DPU_DATA_FORMAT, ORK_DPU_DATA_FORMAT_OUT_PRECISION(out_prec) |
                              ORK_DPU_DATA_FORMAT_IN_PRECISION(in_prec) |
                              ORK_DPU_DATA_FORMAT_PROC_PRECISION(in_prec));
                                                                         /* #59 (§6.1) */
    EMIT(cs, DPU_UNNAMED_4014, 0);                                      /* #60 */
    EMIT(cs, DPU_DST_BASE_ADDR,
        ork__cs_reloc(cs, ORK_REG_DPU_DST_BASE_ADDR, t->c, c_extent, true)); /* #61 C */
    EMIT(cs, DPU_DST_SURF_STRIDE, surf_stride);                         /* #62 */
    EMIT(cs, DPU_DATA_CUBE_WIDTH, 0);                                   /* #63 W-1 */
    EMIT(cs, DPU_DATA_CUBE_HEIGHT, M - 1);                              /* #64 */
    EMIT(cs, DPU_DATA_CUBE_NOTCH_ADDR,
        ORK_DPU_DATA_CUBE_NOTCH_ADDR_ROW_PITCH_M1(s * osz / DPU_UNIT_BYTES - 1) |
        ORK_DPU_DATA_CUBE_NOTCH_ADDR_ROW_LEN_M1(N * osz / DPU_UNIT_BYTES - 1)); /* #65 */
    EMIT(cs, DPU_DATA_CUBE_CHANNEL, ORK_DPU_DATA_CUBE_CHANNEL_ORIG_CHANNEL(s - 1) |
                                    ORK_DPU_DATA_CUBE_CHANNEL_CHANNEL(N - 1)); /* #66 */
    EMIT(cs, DPU_BS_CFG, DPU_BS_BYPASS);                                /* #67 */
    EMIT(cs, DPU_BS_ALU_CFG, 0);                                        /* #68 */
    EMIT(cs, DPU_BS_MUL_CFG, 0);                                        /* #69 */
    EMIT(cs, DPU_BS_RELUX_CMP_VALUE, 0);                                /* #70 */
    EMIT(cs, DPU_BS_OW_CFG, bs_ow);                                     /* #71 */
    EMIT(cs, DPU_BS_OW_OP, 0);                                          /* #72 */
    EMIT(cs, DPU_WDMA_SIZE_0, N - 1);                                   /* #73 */
    EMIT(cs, DPU_WDMA_SIZE_1, ORK_DPU_WDMA_SIZE_1_HEIGHT_M1(M - 1));    /* #74 */
    EMIT(cs, DPU_BN_CFG, DPU_BN_BYPASS);                                /* #75 */
    EMIT(cs, DPU_BN_ALU_CFG, 0);                                        /* #76 */
    EMIT(cs, DPU_BN_MUL_CFG, 0);                                        /* #77 */
    EMIT(cs, DPU_BN_RELUX_CMP_VALUE, 0);                                /* #78 */
    EMIT(cs, DPU_EW_CFG, DPU_EW_BYPASS);                                /* #79 */
    EMIT(cs, DPU_EW_CVT_OFFSET_VALUE, 0);                               /* #80 */
    EMIT(cs, DPU_EW_CVT_SCALE_VALUE, DPU_SCALE_ONE);                    /* #81 */
    EMIT(cs, DPU_EW_RELUX_CMP_VALUE, 0);                                /* #82 */
    EMIT(cs, DPU_OUT_CVT_OFFSET, 0);                                    /* #83 */
    EMIT(cs, DPU_OUT_CVT_SCALE, ORK_DPU_OUT_CVT_SCALE_SCALE(DPU_SCALE_ONE)); /* #84 */
    EMIT(cs, DPU_OUT_CVT_SHIFT, 0);                                     /* #85 */
    EMIT(cs, DPU_EW_OP_VALUE_0, 0);                                     /* #86 */
    EMIT(cs, DPU_EW_OP_VALUE_1, 0);
    EMIT(cs, DPU_EW_OP_VALUE_2, 0);
    EMIT(cs, DPU_EW_OP_VALUE_3, 0);
    EMIT(cs, DPU_EW_OP_VALUE_4, 0);
    EMIT(cs, DPU_EW_OP_VALUE_5, 0);
    EMIT(cs, DPU_EW_OP_VALUE_6, 0);
    EMIT(cs, DPU_EW_OP_VALUE_7, 0);                                     /* #93 */
    EMIT(cs, DPU_SURFACE_ADD, surface_add);                             /* #94 */
    EMIT(cs, DPU_UNNAMED_40C4, 0);                                      /* #95 */
    EMIT(cs, DPU_LUT_INDEX, 0);                                         /* #96 */
    EMIT(cs, DPU_LUT_DATA, 0);
    EMIT(cs, DPU_LUT_CFG_0, 0);
    EMIT(cs, DPU_LUT_CFG_1, 0);
    EMIT(cs, DPU_LUT_CFG_2, 0);
    EMIT(cs, DPU_LUT_CFG_3, 0);
    EMIT(cs, DPU_LUT_CFG_4, 0);
    EMIT(cs, DPU_LUT_CFG_5, 0);
    EMIT(cs, DPU_LUT_CFG_6, 0);
    EMIT(cs, DPU_LUT_CFG_7, 0);
    EMIT(cs, DPU_LUT_CFG_8, 0);
    EMIT(cs, DPU_LUT_CFG_9, 0);                                         /* #107 */
}

/* Close a program after its counted entries: the trailer and the relocation list. */
static int prog_finish(struct ork_cs *cs, struct ork_prog_reloc *relocs, uint32_t *n_relocs)
{
    if (cs->n != ORK_PROG_COUNTED)
        return ork_errorf(ORK_EINVAL, "matmul program: %u counted entries, expected %u", cs->n,
                          ORK_PROG_COUNTED);
    /* Trailer #108-#111 (spec §2.3, §3.1): terminal next pointer, marker, op-enable. */
    ork__cs_emit_raw(cs, 0);                                            /* #108 null entry */
    ork__cs_emit_raw(cs, ork_regcmd_encode(ORK_TARGET_PC, ORK_REG_PC_REGISTER_AMOUNTS, 0));
    ork__cs_emit_raw(cs, ork_regcmd_encode(ORK_TARGET_PC_MARKER, 0, 0)); /* #110 */
    ork__cs_emit_raw(cs, ork_regcmd_encode(ORK_TARGET_PC_OPEN, ORK_REG_PC_OPERATION_ENABLE,
                                           ORK_ENABLE_MATMUL));         /* #111 */
    if (cs->overflow || cs->n != ORK_PROG_ENTRIES)
        return ork_errorf(ORK_EINVAL, "matmul program: emission overflow (%u entries)", cs->n);
    if (relocs) {
        memcpy(relocs, cs->reloc, cs->n_reloc * sizeof cs->reloc[0]);
        *n_relocs = cs->n_reloc;
    }
    return 0;
}

int ork__prog_emit_matmul(const struct ork_mm_task *t, uint64_t *out,
                          struct ork_prog_reloc *relocs, uint32_t *n_relocs)
{
    int ret = ork__mm_task_check(t);
    if (ret < 0)
        return ret;
    struct ork_cs cs;
    ork__cs_init(&cs, out, ORK_PROG_ENTRIES);
    emit_cna(&cs, t);
    emit_core_dpu(&cs, t);
    return prog_finish(&cs, relocs, n_relocs);
}

void ork__prog_set_next(uint64_t *prog, uint32_t next_iova, uint32_t next_counted)
{
    if (next_iova) {
        prog[ORK_PROG_NEXT_ADDR_IDX] =
            ork_regcmd_encode(ORK_TARGET_PC, ORK_REG_PC_BASE_ADDRESS, next_iova);
        prog[ORK_PROG_NEXT_AMOUNT_IDX] = ork_regcmd_encode(
            ORK_TARGET_PC, ORK_REG_PC_REGISTER_AMOUNTS, ork__prog_pc_amount(next_counted));
    } else {
        prog[ORK_PROG_NEXT_ADDR_IDX] = 0;
        prog[ORK_PROG_NEXT_AMOUNT_IDX] =
            ork_regcmd_encode(ORK_TARGET_PC, ORK_REG_PC_REGISTER_AMOUNTS, 0);
    }
}

int ork__prog_link(uint64_t *const *progs, const uint32_t *iovas, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        if (!iovas[i] || iovas[i] % ADDR_ALIGN)
            return ork_errorf(ORK_EINVAL, "program %u at 0x%08x: chained programs must be "
                              "non-zero and 16-byte aligned (spec §8.3)", i, iovas[i]);
    }
    for (uint32_t i = 0; i < n; i++)
        ork__prog_set_next(progs[i], i + 1 < n ? iovas[i + 1] : 0, ORK_PROG_COUNTED);
    return 0;
}

static const char *reg_name(uint16_t reg)
{
    const struct ork_reg_info *r = ork_reg_lookup(reg);
    return r ? r->name : "?";
}

int ork__prog_validate(const struct ork_prog_reloc *relocs, uint32_t n_relocs, uint32_t task,
                       const struct ork_iova_range *bufs, uint32_t n_bufs)
{
    for (uint32_t i = 0; i < n_relocs; i++) {
        const struct ork_prog_reloc *r = &relocs[i];
        if (!r->iova || r->iova % ADDR_ALIGN)
            return ork_errorf(ORK_EFAULT, "task %u: %s = 0x%08x is zero or not 16-byte aligned "
                              "(spec §14.3)", task, reg_name(r->reg), r->iova);
        bool inside = false;
        for (uint32_t b = 0; b < n_bufs && !inside; b++)
            inside = r->iova >= bufs[b].iova &&
                     (uint64_t)r->iova + r->len <= (uint64_t)bufs[b].iova + bufs[b].size;
        if (!inside)
            return ork_errorf(ORK_EFAULT, "task %u: %s range [0x%08x, +0x%llx) is not inside one "
                              "buffer (spec §14.3 ADDR_OOB)", task, reg_name(r->reg), r->iova,
                              (unsigned long long)r->len);
        if (!r->write)
            continue;
        for (uint32_t j = 0; j < n_relocs; j++) {
            const struct ork_prog_reloc *o = &relocs[j];
            if (j == i)
                continue;
            bool overlap = (uint64_t)r->iova < (uint64_t)o->iova + o->len &&
                           (uint64_t)o->iova < (uint64_t)r->iova + r->len;
            if (overlap)
                return ork_errorf(ORK_EFAULT, "task %u: output %s overlaps %s (spec §14.3 "
                                  "OVERLAP)", task, reg_name(r->reg), reg_name(o->reg));
        }
    }
    return 0;
}

void ork__prog_store(void *dst, const uint64_t *prog, uint32_t n)
{
    uint8_t *p = dst;
    for (uint32_t i = 0; i < n; i++)
        ork_regcmd_store(p + 8 * (size_t)i, prog[i]);
}
