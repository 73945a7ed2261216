/* exec_i4.c -- int4 x int4 -> int16 programs (W4A8's device side) in the simulator's executor:
 * the register checks of a task whose CNA/CORE/DPU precisions are 6, and its execution.
 *
 * Register values: npu-weight-decompression.md §2 "int4 program values" [SRC] for M physical
 * rows, K and N elements; the rest keep the int8 rules of spec §3.1 with int16 output. Layouts
 * (spec §4.6, i4_layout.h): A (K/32, M, 32), B (N/64, K/32, 64, 32) packed two a byte, C
 * (N/8, M, 8) int16. A register that disagrees with the geometry is INCONSISTENT_GEOMETRY
 * naming it, as on the int8 path (§3.4 step 2); shapes past the published limits are I4_LIMIT.
 *
 * The accumulator is int16 (§2). The MAC's internal order is not published: the simulator
 * sums each 32-element K block exactly (|block| <= 32 * 64 = 2048, no overflow possible) and
 * adds the blocks in K order into the int16 accumulator [INF]. A partial sum outside
 * [-32768, 32767] is I4_OVERFLOW: an error naming task, row and column; in strict mode
 * (reproduce the hardware, spec §14) the accumulator saturates there and keeps adding, as §2
 * says the output "may then saturate", and the task carries the warning.
 *
 * Not here: precision consistency, the output stage's fixed values, CBUF, addresses
 * (hazard_check.c); mapping the buffers (exec_matmul.c, ork__sim_exec). */
#include "sim_exec.h"

#include "libork/i4_layout.h"

#include <stdio.h>
#include <string.h>

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/regs.h>

/* Precision code 6 (npu-weight-decompression.md §2) and int16 output (spec §6.1 code 1). */
#define I4_PREC 6u
#define I4_OUT_PREC 1u
#define I4_OUT_BYTES 2u
/* §2 "int4 program values" (program.c emits the same, named with the same sources). */
#define I4_CONV_CON1 (ORK_CNA_CONV_CON1_PROC_PRECISION(I4_PREC) | \
                      ORK_CNA_CONV_CON1_IN_PRECISION(I4_PREC))          /* 0x360, bit 29 clear */
#define I4_MISC_CFG (ORK_CORE_MISC_CFG_PROC_PRECISION(I4_PREC) | ORK_CORE_MISC_CFG_QD_EN(1)) /* 0x601 */
#define I4_DATA_FORMAT (ORK_DPU_DATA_FORMAT_OUT_PRECISION(I4_OUT_PREC) | \
                        ORK_DPU_DATA_FORMAT_IN_PRECISION(I4_PREC) | \
                        ORK_DPU_DATA_FORMAT_PROC_PRECISION(I4_PREC))    /* 0x38000006 */
#define I4_CBUF_CON1_K_UNIT 128u        /* CBUF_CON1 = M*ceil(K/128) */
#define I4_DMA_CON1_PER_ROW 4u          /* DMA_CON1 = 4M */
#define I4_DMA_CON2_PER_ROW 3u          /* DMA_CON2 = (-3M) & 0xfffffff */
#define I4_DMA_CON2_MASK 0xfffffffu
#define I4_DST_SURF_STRIDE_PER_ROW 16u  /* DST_SURF_STRIDE = 16M */
#define I4_BS_OW_CFG 0x7feu
#define I4_SURFACE_ADD_PER_ROW 128u     /* SURFACE_ADD = 128M */
/* §2 "Limits": M <= 128 physical rows (native layout), K <= 2048, N <= 4096 per core. */
#define I4_MAX_M 128u
#define I4_MAX_K 2048u
#define I4_MAX_N 4096u
#define NOTCH_UNIT 16u                  /* spec §4.2: DATA_CUBE_NOTCH_ADDR counts 16 bytes */
#define ACC_MIN (-32768)                /* the int16 accumulator (§2) */
#define ACC_MAX 32767

#define R(off) ork__sim_reg(rf, (off))
#define NAME(off) ork__sim_reg_name(off)

static int expect(const struct ork_sim_regfile *rf, uint32_t ti, uint16_t reg, uint32_t want,
                  const char *rule)
{
    uint32_t have = R(reg);
    if (have == want)
        return 0;
    return ork_errorf(ORK_EHAZARD,
                      "task %u: INCONSISTENT_GEOMETRY: %s = 0x%x%s, expected 0x%x (int4 program: "
                      "%s) (npu-weight-decompression.md §2, spec §3.4)", ti, NAME(reg), have,
                      ork__sim_reg_written(rf, reg) ? "" : " (not written)", want, rule);
}

static int check_shape(const struct ork_sim_regfile *rf, uint32_t ti, uint32_t m, uint32_t k,
                       uint32_t n)
{
    uint32_t width = ORK_CNA_DATA_SIZE0_DATAIN_WIDTH_GET(R(ORK_REG_CNA_DATA_SIZE0));
    if (width != 1 || R(ORK_REG_CNA_DATA_SIZE2) != 1)
        return ork_errorf(ORK_EHAZARD,
                          "task %u: MFOLD_UNSUPPORTED: %s.DATAIN_WIDTH=%u, %s=%u (int4 matmul: 1 "
                          "and 1) (§4.6, §14.2)", ti, NAME(ORK_REG_CNA_DATA_SIZE0), width,
                          NAME(ORK_REG_CNA_DATA_SIZE2), R(ORK_REG_CNA_DATA_SIZE2));
    if (m == 0)
        return ork_errorf(ORK_EHAZARD, "task %u: INCONSISTENT_GEOMETRY: %s.DATAIN_HEIGHT M=0 (§3.4)",
                          ti, NAME(ORK_REG_CNA_DATA_SIZE0));
    if (k == 0 || k % ORK_I4_K_ALIGN)
        return ork_errorf(ORK_EHAZARD,
                          "task %u: K_ALIGN: %s.DATAIN_CHANNEL K=%u is not a positive multiple of "
                          "%u (int4, §4.6, §14.2)", ti, NAME(ORK_REG_CNA_DATA_SIZE1), k,
                          ORK_I4_K_ALIGN);
    if (n == 0 || n % ORK_I4_N_ALIGN)
        return ork_errorf(ORK_EHAZARD,
                          "task %u: N_ALIGN: %s.WEIGHT_KERNELS N=%u is not a positive multiple of "
                          "%u (int4, §4.6, §14.2)", ti, NAME(ORK_REG_CNA_WEIGHT_SIZE2), n,
                          ORK_I4_N_ALIGN);
    if (m > I4_MAX_M || k > I4_MAX_K || n > I4_MAX_N)
        return ork_errorf(ORK_EHAZARD,
                          "task %u: I4_LIMIT: %s M=%u, %s K=%u, %s N=%u: an int4 program holds "
                          "M <= %u physical rows, K <= %u, N <= %u (npu-weight-decompression.md "
                          "§2 Limits)", ti, NAME(ORK_REG_CNA_DATA_SIZE0), m,
                          NAME(ORK_REG_CNA_DATA_SIZE1), k, NAME(ORK_REG_CNA_WEIGHT_SIZE2), n,
                          I4_MAX_M, I4_MAX_K, I4_MAX_N);
    return 0;
}

/* One register and its rule (a table keeps the check flat). */
struct rule {
    uint16_t reg;
    uint32_t want;
    const char *what;
};

int ork__sim_check_i4(const struct ork_sim_regfile *rf, uint32_t ti, struct ork_sim_matmul *mm)
{
    uint32_t m = ORK_CNA_DATA_SIZE0_DATAIN_HEIGHT_GET(R(ORK_REG_CNA_DATA_SIZE0));
    uint32_t k = ORK_CNA_DATA_SIZE1_DATAIN_CHANNEL_GET(R(ORK_REG_CNA_DATA_SIZE1));
    uint32_t n = ORK_CNA_WEIGHT_SIZE2_WEIGHT_KERNELS_GET(R(ORK_REG_CNA_WEIGHT_SIZE2));
    int ret = check_shape(rf, ti, m, k, n);
    if (ret < 0)
        return ret;
    const uint32_t row16 = n * I4_OUT_BYTES / NOTCH_UNIT - 1;  /* C row of N int16, s = N */
    const struct rule rules[] = {
        { ORK_REG_CNA_CONV_CON1, I4_CONV_CON1, "precision 6, native layout (bit 29 is the "
                                               "panel layouts')" },
        { ORK_REG_CORE_MISC_CFG, I4_MISC_CFG, "PROC_PRECISION 6, QD_EN" },
        { ORK_REG_DPU_DATA_FORMAT, I4_DATA_FORMAT, "out int16, in/proc 6" },
        { ORK_REG_CNA_DATA_SIZE1, ORK_CNA_DATA_SIZE1_DATAIN_CHANNEL_REAL(k - 1) |
                                      ORK_CNA_DATA_SIZE1_DATAIN_CHANNEL(k), "K-1, K" },
        { ORK_REG_CNA_WEIGHT_SIZE2, ORK_CNA_WEIGHT_SIZE2_WEIGHT_WIDTH(1) |
                                        ORK_CNA_WEIGHT_SIZE2_WEIGHT_HEIGHT(1) |
                                        ORK_CNA_WEIGHT_SIZE2_WEIGHT_KERNELS(n), "1x1, N kernels" },
        { ORK_REG_CNA_DATA_SIZE3, ORK_CNA_DATA_SIZE3_DATAOUT_ATOMICS(m), "M" },
        { ORK_REG_CNA_WEIGHT_SIZE0, k * n / 2u, "K*N/2" },
        { ORK_REG_CNA_WEIGHT_SIZE1, k / 2u, "K/2" },
        { ORK_REG_CNA_CBUF_CON1,
          ORK_CNA_CBUF_CON1_DATA_ENTRIES(m * ((k + I4_CBUF_CON1_K_UNIT - 1) / I4_CBUF_CON1_K_UNIT)),
          "M*ceil(K/128)" },
        { ORK_REG_CNA_FC_DATA_SIZE0, ORK_CNA_FC_DATA_SIZE0_DMA_WIDTH(1) |
                                         ORK_CNA_FC_DATA_SIZE0_DMA_HEIGHT(m), "mirror of DATA_SIZE0" },
        { ORK_REG_CNA_FC_DATA_SIZE1, k, "K" },
        { ORK_REG_CNA_DMA_CON1, ORK_CNA_DMA_CON1_LINE_STRIDE(I4_DMA_CON1_PER_ROW * m), "4M" },
        { ORK_REG_CNA_DMA_CON2, (0u - I4_DMA_CON2_PER_ROW * m) & I4_DMA_CON2_MASK,
          "(-3M) & 0xfffffff" },
        { ORK_REG_CORE_DATAOUT_SIZE_0, ORK_CORE_DATAOUT_SIZE_0_DATAOUT_HEIGHT(m - 1), "(M-1)<<16" },
        { ORK_REG_CORE_DATAOUT_SIZE_1, n - 1, "N-1" },
        { ORK_REG_DPU_DST_SURF_STRIDE, I4_DST_SURF_STRIDE_PER_ROW * m, "16M" },
        { ORK_REG_DPU_DATA_CUBE_WIDTH, 0, "output width 1, minus one" },
        { ORK_REG_DPU_DATA_CUBE_HEIGHT, m - 1, "M-1" },
        { ORK_REG_DPU_DATA_CUBE_NOTCH_ADDR, ORK_DPU_DATA_CUBE_NOTCH_ADDR_ROW_PITCH_M1(row16) |
                                                ORK_DPU_DATA_CUBE_NOTCH_ADDR_ROW_LEN_M1(row16),
          "((N*2/16-1)<<16) | (N*2/16-1), int16, no row stride" },
        { ORK_REG_DPU_DATA_CUBE_CHANNEL, ORK_DPU_DATA_CUBE_CHANNEL_ORIG_CHANNEL(n - 1) |
                                             ORK_DPU_DATA_CUBE_CHANNEL_CHANNEL(n - 1),
          "((N-1)<<16) | (N-1), no row stride" },
        { ORK_REG_DPU_BS_OW_CFG, I4_BS_OW_CFG, "0x7fe" },
        { ORK_REG_DPU_WDMA_SIZE_0, n - 1, "N-1" },
        { ORK_REG_DPU_WDMA_SIZE_1, ORK_DPU_WDMA_SIZE_1_HEIGHT_M1(m - 1), "(M-1)<<16" },
        { ORK_REG_DPU_SURFACE_ADD, I4_SURFACE_ADD_PER_ROW * m, "128M" },
    };
    char what[160];
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        snprintf(what, sizeof what, "%s for M=%u K=%u N=%u", rules[i].what, m, k, n);
        if ((ret = expect(rf, ti, rules[i].reg, rules[i].want, what)) < 0)
            return ret;
    }
    mm->m = m;
    mm->k = k;
    mm->n = n;
    mm->s = n;
    mm->osz = I4_OUT_BYTES;
    mm->a_pitch = ORK_I4_K_ALIGN / 2u;                   /* one row of a K block: 16 bytes */
    mm->a_extent = (uint64_t)m * k / 2u;                 /* (K/32, M, 32) int4 */
    mm->b_extent = (uint64_t)k * n / 2u;                 /* (N/64, K/32, 64, 32) int4 */
    mm->c_extent = (uint64_t)n * m * I4_OUT_BYTES;       /* (N/8, M, 8) int16 */
    return 0;
}

/* ---- execution ------------------------------------------------------------------------------ */

static void store_i16(uint8_t *p, int16_t v)
{
    memcpy(p, &v, sizeof v);
}

/* The final element (row M-1, column N-1: the last int16 of C) is published last behind a
 * release fence (spec §3.4 step 5, §8.6). */
static void store_last_i16(uint8_t *p, int16_t v)
{
    __atomic_thread_fence(__ATOMIC_RELEASE);
    if ((uintptr_t)p % sizeof v == 0)
        __atomic_store_n((int16_t *)(void *)p, v, __ATOMIC_RELEASE);
    else
        store_i16(p, v);
}

/* Row of A feeding output row r: strict-mode rows past the CBUF cap read a wrong row
 * (M_ABOVE_CAP, as exec_matmul.c). */
static uint32_t src_row(const struct ork_sim_matmul *mm, uint32_t r)
{
    return (mm->m_cap && r >= mm->m_cap) ? r % mm->m_cap : r;
}

/* One output: 32-element blocks summed exactly, added in K order into the int16 accumulator.
 * Returns the value; *over: the first block (index) whose partial sum left int16, or -1. */
static int32_t dot_i4(const int16_t *a, const int16_t *b, uint32_t k, bool saturate,
                      int32_t *over, int32_t *over_sum)
{
    int32_t acc = 0;
    *over = -1;
    for (uint32_t k0 = 0; k0 < k; k0 += ORK_I4_K_ALIGN) {
        int32_t blk = 0;
        for (uint32_t i = 0; i < ORK_I4_K_ALIGN; i++)
            blk += (int32_t)a[k0 + i] * b[k0 + i];
        acc += blk;
        if (acc < ACC_MIN || acc > ACC_MAX) {
            if (*over < 0) {
                *over = (int32_t)(k0 / ORK_I4_K_ALIGN);
                *over_sum = acc;
            }
            if (!saturate)
                return acc;
            acc = acc < ACC_MIN ? ACC_MIN : ACC_MAX;
        }
    }
    return acc;
}

int ork__sim_exec_i4(const struct ork_sim_matmul *mm, const struct ork_sim_task_in *t,
                     const uint8_t *a, const uint8_t *b, uint8_t *c, uint64_t *warnings)
{
    const uint32_t M = mm->m, K = mm->k, N = mm->n;
    int16_t *a16 = ork_malloc((size_t)M * K * sizeof(int16_t));
    int16_t *col = ork_malloc((size_t)K * sizeof(int16_t));
    if (!a16 || !col) {
        ork_free(a16);
        ork_free(col);
        return ork_errorf(ORK_ENOMEM, "sim: no memory for a %ux%u int4 feature", M, K);
    }
    for (uint32_t r = 0; r < M; r++)
        for (uint32_t k = 0; k < K; k++)
            a16[(size_t)r * K + k] =
                (int16_t)ork__i4_get(a + ork__i4_a_byte(M, src_row(mm, r), k), k & 1u);
    int ret = 0;
    int16_t last = 0;
    for (uint32_t n = 0; n < N && ret == 0; n++) {
        for (uint32_t k = 0; k < K; k++)
            col[k] = (int16_t)ork__i4_get(b + ork__i4_b_byte(K, n, k), k & 1u);
        for (uint32_t r = 0; r < M; r++) {
            int32_t over, over_sum = 0;
            int32_t v = dot_i4(a16 + (size_t)r * K, col, K, t->strict, &over, &over_sum);
            if (over >= 0 && !t->strict) {
                ret = ork_errorf(ORK_EHAZARD,
                                 "task %u: I4_OVERFLOW: row %u column %u: the int16 accumulator "
                                 "reaches %d after K = %u of %u (%s K=%u): the board's output "
                                 "may saturate; slice K by the int16 bound "
                                 "(npu-weight-decompression.md §2)", t->index, r, n, over_sum,
                                 (uint32_t)(over + 1) * ORK_I4_K_ALIGN, K,
                                 NAME(ORK_REG_CNA_DATA_SIZE1), K);
                break;
            }
            if (over >= 0)
                *warnings |= 1ull << ORK_SIM_HAZARD_I4_OVERFLOW;
            uint8_t *p = c + ork__i4_c_index(M, r, n) * I4_OUT_BYTES;
            if (r == M - 1 && n == N - 1)
                last = (int16_t)v;
            else
                store_i16(p, (int16_t)v);
        }
    }
    if (ret == 0)
        store_last_i16(c + ork__i4_c_index(M, M - 1, N - 1) * I4_OUT_BYTES, last);
    ork_free(a16);
    ork_free(col);
    return ret;
}
