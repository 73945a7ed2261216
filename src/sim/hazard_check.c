/* hazard_check.c -- validation of one decoded task for the simulator's executor: the register
 * file after exec_decode.c -> a checked matmul description (struct ork_sim_matmul), with the
 * hazards of spec §14.1 (enable, precision, geometry), §14.2 (shapes and CBUF, §5) and the
 * address checks of §14.3 that need no memory (zero, alignment, overlap). Output modes: §6.2.
 *
 * This file does not read device memory (address RANGES are checked when exec_matmul.c maps
 * them) and does not compute anything. Rules marked [INF] in the spec are enforced as the
 * spec's simulator column says; where the spec leaves a choice, the comment says which. */
#include "sim_exec.h"

#include "libork/i4_layout.h"

#include <stdio.h>
#include <string.h>

#include <ork/error.h>
#include <ork/regs.h>

/* ---- constants (spec §1.3, §5) --------------------------------------------------------------- */

#define CBUF_BANKS 12u            /* §1.3: 12 banks of 32 KiB */
#define CBUF_BANK_BYTES 32768u
#define CBUF_WEIGHT_FULL 11u      /* §5.2: D + W = 12, so at most 11 data banks */
#define SCHED_ROWS 64u            /* §5.2/§5.3: the schedule walks one step per 64 rows of M */
#define K_ALIGN 32u               /* §5.1 */
#define N_TILE_INT8 32u           /* §4.3, §5.1 */
#define N_TILE_FP16 16u           /* §4.4, §5.1 */
#define N_MAX 8192u               /* §5.1: N_ABOVE_8192 */
#define DECODE_K_MAX 8192u        /* §5.1: largest validated K at M = 1 */
#define REQUANT_K_MIN 512u        /* §6.3: requant needs K >= 512 */
#define FULLK_K_STEP 512u         /* §5.3: full-K envelope K % 512 == 0 */
#define FULLK_K_MAX 4096u         /*       and K <= 4096 */
#define FP16_SCHED_K_MIN 128u     /* §5.4: fp16 schedule: power of two, 128 <= K < 2048 */
#define FP16_SCHED_K_END 2048u
#define FP16_K128_M_MAX 256u      /* §5.4: fp16 K = 128 is validated up to M = 256 only */
#define CBUF_DECODE 0xb1u         /* §5.2: template / decode value: 1 data + 11 weight banks */
#define CBUF_FLAG_BITS 0x3f00u    /* §5.5: bits 8-13 (FC_DATA_BANK, DATA/WEIGHT_REUSE) */
#define ADDR_ALIGN 16u            /* §14.3 ADDR_MISALIGNED */
#define LINE_UNIT 16u             /* §4.1: LINE_STRIDE counts 16 bytes */
#define NOTCH_UNIT 16u            /* §4.2: DATA_CUBE_NOTCH_ADDR counts 16 bytes */
#define ENTRY_BYTES 8u            /* §2.1 */
#define TRAILER_ENTRIES 4u        /* §2.3 */

/* Fixed values of the plain matmul program (§3.1); a different value switches on a stage the
 * simulator does not model. */
#define CONV_MODE_DIRECT 0u       /* §3.1 #5: CONV_CON1.CONV_MODE = 0 */
#define CVT_CON0_BYPASS 0xbu      /* §3.1 #17 */
#define BS_CFG_BYPASS 0x53u       /* §3.1 #67 */
#define BN_CFG_BYPASS 0x53u       /* §3.1 #75 */
#define EW_CFG_BYPASS 0x383u      /* §3.1 #79 */
/* DATA_FORMAT bits outside OUT/IN/PROC_PRECISION: 0xe0 is the fused element-wise multiply
 * (DEAD, wedges, §6.2); 0x4400 the fused LUT activation bits (§7: 0x44e0). */
#define DATA_FORMAT_FIELDS 0xfc000007u
#define DATA_FORMAT_EW_BITS 0xe0u
#define DATA_FORMAT_LUT_BITS 0x4400u

/* §6.2 output-mode table (the modes the simulator computes). */
struct out_mode {
    enum ork_sim_prec in, out;
    uint32_t osz;            /* bytes per output element */
    uint32_t bs_ow_cfg;      /* 0x4050 */
    uint32_t surface_add;    /* 0x40c0 */
    bool requant;            /* OUT_CVT_SCALE/SHIFT/OFFSET are applied (§6.3) */
    const char *name;
};
static const struct out_mode out_modes[] = {
    { ORK_SIM_PREC_INT8, ORK_SIM_PREC_INT32, 4, 0x7fc, 0x80, false, "int8 -> int32" },
    { ORK_SIM_PREC_FP16, ORK_SIM_PREC_FP32, 4, 0x36e, 0x40, false, "fp16 -> fp32" },
    { ORK_SIM_PREC_INT8, ORK_SIM_PREC_INT8, 1, 0x124, 0x20, true, "int8 -> int8 requant" },
    { ORK_SIM_PREC_INT8, ORK_SIM_PREC_INT16, 2, 0x36e, 0x40, true, "int8 -> int16" },
    { ORK_SIM_PREC_FP16, ORK_SIM_PREC_FP16, 2, 0x126, 0x20, false, "fp16 -> fp16" },
    /* npu-weight-decompression.md §2: BS_OW_CFG 0x7fe, SURFACE_ADD 128*M (exec_i4.c checks both) */
    { ORK_SIM_PREC_INT4, ORK_SIM_PREC_INT16, 2, 0x7fe, 0, false, "int4 -> int16" },
};
#define OUT_CVT_SCALE_ONE 1u                  /* §6.2: plain modes write scale 1, shift 0 */
#define OUT_CVT_SCALE_FP16 0x00010001u        /* §6.4: FP32TOFP16_EN | scale 1 */

/* ---- helpers ------------------------------------------------------------------------------- */

#define R(off) ork__sim_reg(rf, (off))
#define NAME(off) ork__sim_reg_name(off)

static const char *prec_name(uint32_t p);

static void warn(struct ork_sim_matmul *mm, enum ork_sim_hazard h)
{
    mm->warnings |= 1ull << h;
}

static uint32_t ceil_div(uint32_t a, uint32_t b)
{
    return (a + b - 1) / b;
}

static bool is_pow2(uint32_t x)
{
    return x && !(x & (x - 1));
}

/* INCONSISTENT_GEOMETRY (§3.4 step 2): a derived register must hold the rule's value. */
static int expect(const struct ork_sim_regfile *rf, uint32_t ti, uint16_t reg, uint32_t want,
                  const char *rule)
{
    uint32_t have = R(reg);
    if (have == want)
        return 0;
    return ork_errorf(ORK_EHAZARD,
                      "task %u: INCONSISTENT_GEOMETRY: %s = 0x%x%s, expected 0x%x (%s) (§3.1, "
                      "§3.4)", ti, NAME(reg), have,
                      ork__sim_reg_written(rf, reg) ? "" : " (not written)", want, rule);
}

/* [a0, a0+al) and [b0, b0+bl) intersect (64-bit arithmetic: no wrap). */
static bool ranges_overlap(uint64_t a0, uint64_t al, uint64_t b0, uint64_t bl)
{
    return al && bl && a0 < b0 + bl && b0 < a0 + al;
}

/* Some register of block `b` was written (with a non-zero value when `nonzero`). Walks the
 * block's whole 4 KiB page, so registers the table does not name count too (§1.1). */
#define REG_PAGE 0x1000u
static bool block_written(const struct ork_sim_regfile *rf, enum ork_reg_block b, bool nonzero)
{
    for (uint32_t page = 0; page < ORK_SIM_REG_SPACE; page += REG_PAGE) {
        if (ork_reg_block_of((uint16_t)page) != b)
            continue;
        for (uint32_t off = page; off < page + REG_PAGE; off += 4u)
            if (ork__sim_reg_written(rf, off) && (!nonzero || R(off) != 0))
                return true;
    }
    return false;
}

/* ---- CBUF (§5.2-§5.5) ------------------------------------------------------------------------ */

/* The largest M that the data banks hold (§5.5 predicate, solved for M). */
static uint32_t cbuf_m_cap(enum ork_sim_prec in, uint32_t k, uint32_t d)
{
    uint64_t bytes = (uint64_t)CBUF_BANK_BYTES * d;
    if (in == ORK_SIM_PREC_INT4) {
        /* the int8 rule on K/2-byte rows (i4_layout.h ork__i4_cbuf_data_banks [INF]) */
        uint64_t row = k / 2u, cap = bytes / row;
        if (cap > SCHED_ROWS)
            cap = SCHED_ROWS * (bytes / ((uint64_t)SCHED_ROWS * row));
        return (uint32_t)(cap > 0xffffffffu ? 0xffffffffu : cap);
    }
    if (in == ORK_SIM_PREC_INT8) {
        uint64_t cap = bytes / k;                    /* M*K <= 32768*D */
        if (cap > SCHED_ROWS)                        /* 64*ceil(M/64)*K <= 32768*D */
            cap = SCHED_ROWS * (bytes / ((uint64_t)SCHED_ROWS * k));
        return (uint32_t)(cap > 0xffffffffu ? 0xffffffffu : cap);
    }
    uint64_t cap = bytes / (2ull * k);               /* M*2K <= 32768*D */
    if (k == FP16_SCHED_K_MIN && cap > FP16_K128_M_MAX)
        cap = FP16_K128_M_MAX;
    return (uint32_t)(cap > 0xffffffffu ? 0xffffffffu : cap);
}

/* The CBUF_CON0 value the bank schedule of §5.3/§5.4 produces for (prec, K, M), or 0 when
 * the schedule does not cover K (then only the 0xb1 template is validated). */
static uint32_t cbuf_rule(enum ork_sim_prec in, uint32_t k, uint32_t m)
{
    uint32_t g = ceil_div(m, SCHED_ROWS);
    if (in == ORK_SIM_PREC_INT4)
        return ork__i4_cbuf_con0(m, k);              /* i4_layout.h [INF] */
    if (in == ORK_SIM_PREC_INT8) {
        if (k % FULLK_K_STEP || k > FULLK_K_MAX)
            return 0;
        uint32_t d = (k / FULLK_K_STEP) * g;         /* D = min(11, s*g), v = 192 - 15*D */
        if (d > CBUF_WEIGHT_FULL)
            d = CBUF_WEIGHT_FULL;
        return ((CBUF_BANKS - d) << 4) | d;
    }
    if (!is_pow2(k) || k < FP16_SCHED_K_MIN || k >= FP16_SCHED_K_END)
        return 0;
    /* v = max(0x1b, base - slope*(g-1)); s = K/256, base = 177 - 15*(s-1), slope = 15*s.
     * K = 128 (s = 0.5) rounds to base 184, slope 7 (§5.4 table). Computed in units of
     * s/2 so that K = 128 stays integral: base = 192 - 15*s, slope = 15*s. */
    int32_t s2 = (int32_t)(k / 128u);                /* 2*s */
    int32_t base = 192 - (15 * s2 + 1) / 2;          /* K=128: 184; K=256: 177; K=512: 162 */
    int32_t slope = (15 * s2) / 2;                   /* K=128: 7;   K=256: 15;  K=512: 30 */
    int32_t v = base - slope * (int32_t)(g - 1);
    int32_t floor_v = (int32_t)(((CBUF_BANKS - CBUF_WEIGHT_FULL) << 4) | CBUF_WEIGHT_FULL);
    return (uint32_t)(v < floor_v ? floor_v : v);
}

static int check_cbuf(const struct ork_sim_regfile *rf, uint32_t ti, struct ork_sim_matmul *mm,
                      bool strict)
{
    uint32_t v = R(ORK_REG_CNA_CBUF_CON0);
    uint32_t d = ORK_CNA_CBUF_CON0_DATA_BANK_GET(v);
    uint32_t w = ORK_CNA_CBUF_CON0_WEIGHT_BANK_GET(v);
    uint32_t m = mm->m, k = mm->k;
    bool int8 = mm->in_prec == ORK_SIM_PREC_INT8;
    mm->cbuf = v;
    mm->m_cap = m;

    if (w == 0)
        return ork_errorf(ORK_EHAZARD,
                          "task %u: CBUF_HANG: %s = 0x%x gives 0 weight banks: the submit "
                          "hangs (§5.2, §14.2)", ti, NAME(ORK_REG_CNA_CBUF_CON0), v);
    if (d == 0 || d >= CBUF_BANKS)
        return ork_errorf(ORK_EHAZARD,
                          "task %u: CBUF_WRONG: %s = 0x%x gives %u data banks (valid 1..11): "
                          "wrong results (§5.5, §14.2)", ti, NAME(ORK_REG_CNA_CBUF_CON0), v, d);

    /* D + W may exceed 12: the validated fp16 K = 128 schedule writes 0xb8 and 0xaa (§5.4), so
     * only the two §5.5 conditions above are errors. */

    uint32_t cap = cbuf_m_cap(mm->in_prec, k, d);
    if (m > cap) {
        if (!int8 && k == FP16_SCHED_K_MIN && m > FP16_K128_M_MAX)
            return ork_errorf(ORK_EHAZARD,
                              "task %u: FP16_K128: %s.DATAIN_HEIGHT M=%u with fp16 K=128 is "
                              "above the validated M=%u (the envelope is non-monotonic) "
                              "(§5.4, §14.2)", ti, NAME(ORK_REG_CNA_DATA_SIZE0), m,
                              FP16_K128_M_MAX);
        if (!strict)
            return ork_errorf(ORK_EHAZARD,
                              "task %u: M_ABOVE_CAP: %s.DATAIN_HEIGHT M=%u exceeds the %s cap "
                              "M=%u for K=%u with %s = 0x%x (%u data banks): rows beyond the "
                              "cap are wrong (§5.3-§5.5)",
                              ti, NAME(ORK_REG_CNA_DATA_SIZE0), m, prec_name(mm->in_prec), cap,
                              k, NAME(ORK_REG_CNA_CBUF_CON0), v, d);
        warn(mm, ORK_SIM_HAZARD_M_ABOVE_CAP);
        mm->m_cap = cap;
    }

    /* WARN-level CBUF rules (§5.5). */
    if (v & CBUF_FLAG_BITS)
        warn(mm, ORK_SIM_HAZARD_CBUF_FLAGS_UNVALIDATED);
    uint32_t rule = cbuf_rule(mm->in_prec, k, m);
    uint32_t split = v & ~CBUF_FLAG_BITS;
    /* 0xb1 is the template/decode value, validated wherever the cap check above passed
     * (§5.1: M = 1 decode, and M*K*esz <= 32768 without the schedule). */
    if (split != rule && split != CBUF_DECODE)
        warn(mm, ORK_SIM_HAZARD_CBUF_UNVALIDATED);
    /* FULLK_ENVELOPE (§5.3): int8 M > 1 using the bank schedule outside the full-K envelope;
     * an invalid split already failed as M_ABOVE_CAP above. */
    if (int8 && m > 1 && split != CBUF_DECODE && (k % FULLK_K_STEP || k > FULLK_K_MAX))
        warn(mm, ORK_SIM_HAZARD_FULLK_ENVELOPE);
    if (m == 1 && k > DECODE_K_MAX)
        warn(mm, ORK_SIM_HAZARD_DECODE_K);
    return 0;
}

/* ---- precision and output mode (§3.4 step 1, §6) ------------------------------------------------ */

static const char *prec_name(uint32_t p)
{
    switch (p) {
    case ORK_SIM_PREC_INT8: return "int8";
    case ORK_SIM_PREC_INT16: return "int16";
    case ORK_SIM_PREC_FP16: return "fp16";
    case ORK_SIM_PREC_INT32: return "int32";
    case ORK_SIM_PREC_FP32: return "fp32";
    case ORK_SIM_PREC_INT4: return "int4";
    }
    return "unknown";
}

static int check_precision(const struct ork_sim_regfile *rf, uint32_t ti,
                           struct ork_sim_matmul *mm, const struct out_mode **mode_out)
{
    uint32_t con1 = R(ORK_REG_CNA_CONV_CON1);
    uint32_t misc = R(ORK_REG_CORE_MISC_CFG);
    uint32_t fmt = R(ORK_REG_DPU_DATA_FORMAT);
    uint32_t cna_in = ORK_CNA_CONV_CON1_IN_PRECISION_GET(con1);
    uint32_t cna_proc = ORK_CNA_CONV_CON1_PROC_PRECISION_GET(con1);
    uint32_t core_proc = ORK_CORE_MISC_CFG_PROC_PRECISION_GET(misc);
    uint32_t dpu_in = ORK_DPU_DATA_FORMAT_IN_PRECISION_GET(fmt);
    uint32_t dpu_proc = ORK_DPU_DATA_FORMAT_PROC_PRECISION_GET(fmt);
    uint32_t out = ORK_DPU_DATA_FORMAT_OUT_PRECISION_GET(fmt);

    if (cna_proc != cna_in || core_proc != cna_in || dpu_in != cna_in || dpu_proc != cna_in)
        return ork_errorf(ORK_EHAZARD,
                          "task %u: MIXED_PRECISION: %s.IN_PRECISION=%u (%s), .PROC_PRECISION=%u, "
                          "%s.PROC_PRECISION=%u, %s.IN_PRECISION=%u, .PROC_PRECISION=%u disagree: "
                          "operands are read with the wrong type (§3.4, §14.1)",
                          ti, NAME(ORK_REG_CNA_CONV_CON1), cna_in, prec_name(cna_in), cna_proc,
                          NAME(ORK_REG_CORE_MISC_CFG), core_proc, NAME(ORK_REG_DPU_DATA_FORMAT),
                          dpu_in, dpu_proc);
    if (cna_in != ORK_SIM_PREC_INT8 && cna_in != ORK_SIM_PREC_FP16 && cna_in != ORK_SIM_PREC_INT4)
        return ork_errorf(ORK_EUNSUPPORTED,
                          "task %u: UNSUPPORTED_OP: %s.IN_PRECISION=%u (%s): only int8, fp16 and "
                          "int4 matmuls are simulated (§1.2, §3.4)",
                          ti, NAME(ORK_REG_CNA_CONV_CON1), cna_in, prec_name(cna_in));
    if (ORK_CNA_CONV_CON1_CONV_MODE_GET(con1) != CONV_MODE_DIRECT)
        return ork_errorf(ORK_EUNSUPPORTED,
                          "task %u: UNSUPPORTED_OP: %s.CONV_MODE=%u: only the direct 1x1 "
                          "convolution of §1.4 is simulated", ti, NAME(ORK_REG_CNA_CONV_CON1),
                          ORK_CNA_CONV_CON1_CONV_MODE_GET(con1));
    mm->in_prec = (enum ork_sim_prec)cna_in;
    mm->esz = cna_in == ORK_SIM_PREC_FP16 ? 2 : 1;   /* int4: extents in exec_i4.c */

    /* DATA_FORMAT extra bits: fused element-wise (DEAD) or LUT activation (unmodelled). */
    uint32_t extra = fmt & ~DATA_FORMAT_FIELDS;
    if (extra & DATA_FORMAT_LUT_BITS)
        return ork_errorf(ORK_EUNSUPPORTED,
                          "task %u: UNSUPPORTED_LUT: %s = 0x%08x has LUT activation bits: the "
                          "LUT index function is unknown (§7)", ti, NAME(ORK_REG_DPU_DATA_FORMAT),
                          fmt);
    if ((extra & DATA_FORMAT_EW_BITS) == DATA_FORMAT_EW_BITS)
        return ork_errorf(ORK_EHAZARD,
                          "task %u: DEAD_OUTPUT_MODE: %s = 0x%08x is the fused element-wise "
                          "multiply via DPU_RDMA: wedges the NPU (§6.2, §14.4)",
                          ti, NAME(ORK_REG_DPU_DATA_FORMAT), fmt);
    if (extra)
        return ork_errorf(ORK_EUNSUPPORTED,
                          "task %u: UNSUPPORTED_OP: %s = 0x%08x sets bits 0x%x outside the "
                          "precision fields (§6.1)", ti, NAME(ORK_REG_DPU_DATA_FORMAT), fmt, extra);

    /* §6.2 DEAD rows. */
    uint32_t scale = R(ORK_REG_DPU_OUT_CVT_SCALE);
    if (mm->in_prec == ORK_SIM_PREC_INT8 && out == ORK_SIM_PREC_FP16)
        return ork_errorf(ORK_EHAZARD,
                          "task %u: DEAD_OUTPUT_MODE: %s = 0x%08x (int8 MAC -> fp16 output) "
                          "hangs the NPU (§6.2, §14.4)", ti, NAME(ORK_REG_DPU_DATA_FORMAT), fmt);
    if (mm->in_prec == ORK_SIM_PREC_FP16 && out == ORK_SIM_PREC_FP16) {
        if (!ORK_DPU_OUT_CVT_SCALE_FP32TOFP16_EN_GET(scale))
            return ork_errorf(ORK_EHAZARD,
                              "task %u: DEAD_OUTPUT_MODE: fp16 output with %s = 0x%x "
                              "(FP32TOFP16_EN clear) hangs the NPU (§6.2, §6.4)",
                              ti, NAME(ORK_REG_DPU_OUT_CVT_SCALE), scale);
        static const uint16_t stages[] = { ORK_REG_DPU_BS_CFG, ORK_REG_DPU_BN_CFG,
                                           ORK_REG_DPU_EW_CFG };
        static const uint32_t bypass[] = { BS_CFG_BYPASS, BN_CFG_BYPASS, EW_CFG_BYPASS };
        for (size_t i = 0; i < sizeof stages / sizeof stages[0]; i++)
            if (R(stages[i]) != bypass[i])
                return ork_errorf(ORK_EHAZARD,
                                  "task %u: DEAD_OUTPUT_MODE: fp16 output with %s = 0x%x (not "
                                  "the bypass 0x%x) hangs the NPU (§6.2)",
                                  ti, NAME(stages[i]), R(stages[i]), bypass[i]);
    }

    const struct out_mode *mode = NULL;
    for (size_t i = 0; i < sizeof out_modes / sizeof out_modes[0]; i++)
        if (out_modes[i].in == mm->in_prec && (uint32_t)out_modes[i].out == out)
            mode = &out_modes[i];
    if (!mode)
        return ork_errorf(ORK_EUNSUPPORTED,
                          "task %u: UNSUPPORTED_OP: %s = 0x%08x: %s MAC with %s output is not a "
                          "validated output mode (§6.2)", ti, NAME(ORK_REG_DPU_DATA_FORMAT), fmt,
                          prec_name(mm->in_prec), prec_name(out));
    mm->out_prec = mode->out;
    mm->osz = mode->osz;

    /* Stages the simulator does not model must be bypassed (§3.1 #17, #67, #75, #79). */
    if (R(ORK_REG_DPU_EW_CFG) != EW_CFG_BYPASS)
        return ork_errorf(ORK_EUNSUPPORTED,
                          "task %u: UNSUPPORTED_LUT: %s = 0x%x (bypass is 0x%x): the "
                          "element-wise/LUT stage is not modelled (§7)",
                          ti, NAME(ORK_REG_DPU_EW_CFG), R(ORK_REG_DPU_EW_CFG), EW_CFG_BYPASS);
    static const uint16_t fixed_regs[] = { ORK_REG_CNA_CVT_CON0, ORK_REG_DPU_BS_CFG,
                                           ORK_REG_DPU_BN_CFG };
    static const uint32_t fixed_vals[] = { CVT_CON0_BYPASS, BS_CFG_BYPASS, BN_CFG_BYPASS };
    for (size_t i = 0; i < sizeof fixed_regs / sizeof fixed_regs[0]; i++)
        if (R(fixed_regs[i]) != fixed_vals[i])
            return ork_errorf(ORK_EUNSUPPORTED,
                              "task %u: UNSUPPORTED_OP: %s = 0x%x (the matmul program writes "
                              "0x%x): input conversion, bias/scale and batch-norm are not "
                              "modelled (§3.1)",
                              ti, NAME(fixed_regs[i]), R(fixed_regs[i]), fixed_vals[i]);

    /* The output-write configuration of the mode (§6.2; int4: exec_i4.c, it depends on M). */
    if (mode->in != ORK_SIM_PREC_INT4 &&
        (R(ORK_REG_DPU_BS_OW_CFG) != mode->bs_ow_cfg || R(ORK_REG_DPU_SURFACE_ADD) != mode->surface_add))
        return ork_errorf(ORK_EHAZARD,
                          "task %u: INCONSISTENT_GEOMETRY: %s = 0x%x and %s = 0x%x, but the %s "
                          "output mode needs 0x%x and 0x%x (§6.2)",
                          ti, NAME(ORK_REG_DPU_BS_OW_CFG), R(ORK_REG_DPU_BS_OW_CFG),
                          NAME(ORK_REG_DPU_SURFACE_ADD), R(ORK_REG_DPU_SURFACE_ADD), mode->name,
                          mode->bs_ow_cfg, mode->surface_add);

    uint32_t shift = R(ORK_REG_DPU_OUT_CVT_SHIFT);
    int32_t offset = (int32_t)R(ORK_REG_DPU_OUT_CVT_OFFSET);
    if (mode->requant) {
        mm->cvt_mult = ORK_DPU_OUT_CVT_SCALE_SCALE_GET(scale);
        mm->cvt_shift = shift;
        mm->cvt_offset = offset;
    } else {
        uint32_t want_scale = mode->out == ORK_SIM_PREC_FP16 ? OUT_CVT_SCALE_FP16 : OUT_CVT_SCALE_ONE;
        if (scale != want_scale || shift != 0 || offset != 0)
            return ork_errorf(ORK_EUNSUPPORTED,
                              "task %u: UNSUPPORTED_OP: %s output with %s = 0x%x, %s = %u, %s = %d "
                              "(validated: 0x%x, 0, 0) (§6.2)",
                              ti, mode->name, NAME(ORK_REG_DPU_OUT_CVT_SCALE), scale,
                              NAME(ORK_REG_DPU_OUT_CVT_SHIFT), shift,
                              NAME(ORK_REG_DPU_OUT_CVT_OFFSET), offset, want_scale);
        mm->cvt_mult = 1;
    }
    *mode_out = mode;
    return 0;
}

/* ---- geometry (§3.4 steps 1-2, §4, §5.1) --------------------------------------------------- */

static int check_geometry(const struct ork_sim_regfile *rf, uint32_t ti, struct ork_sim_matmul *mm,
                          const struct out_mode *mode)
{
    uint32_t size0 = R(ORK_REG_CNA_DATA_SIZE0);
    uint32_t size1 = R(ORK_REG_CNA_DATA_SIZE1);
    uint32_t wsize2 = R(ORK_REG_CNA_WEIGHT_SIZE2);
    uint32_t m = ORK_CNA_DATA_SIZE0_DATAIN_HEIGHT_GET(size0);
    uint32_t width = ORK_CNA_DATA_SIZE0_DATAIN_WIDTH_GET(size0);
    uint32_t k = ORK_CNA_DATA_SIZE1_DATAIN_CHANNEL_GET(size1);
    uint32_t n = ORK_CNA_WEIGHT_SIZE2_WEIGHT_KERNELS_GET(wsize2);
    uint32_t esz = mm->esz, osz = mode->osz;
    bool int8 = mm->in_prec == ORK_SIM_PREC_INT8;
    uint32_t ntile = int8 ? N_TILE_INT8 : N_TILE_FP16;
    int ret;

    /* MFOLD_UNSUPPORTED (§4.6, §14.2): M folded into the width. */
    if (width != 1 || R(ORK_REG_CNA_DATA_SIZE2) != 1)
        return ork_errorf(ORK_EHAZARD,
                          "task %u: MFOLD_UNSUPPORTED: %s.DATAIN_WIDTH=%u, %s=%u (plain matmul: 1 "
                          "and 1): the vendor M-fold weight layout is unsolved (§4.6, §14.2)",
                          ti, NAME(ORK_REG_CNA_DATA_SIZE0), width, NAME(ORK_REG_CNA_DATA_SIZE2),
                          R(ORK_REG_CNA_DATA_SIZE2));
    if (m == 0)
        return ork_errorf(ORK_EHAZARD, "task %u: INCONSISTENT_GEOMETRY: %s.DATAIN_HEIGHT M=0 (§3.4)",
                          ti, NAME(ORK_REG_CNA_DATA_SIZE0));
    if (k == 0 || k % K_ALIGN)
        return ork_errorf(ORK_EHAZARD,
                          "task %u: K_ALIGN: %s.DATAIN_CHANNEL K=%u is not a positive multiple of "
                          "%u: wrong results (§5.1, §14.2)",
                          ti, NAME(ORK_REG_CNA_DATA_SIZE1), k, K_ALIGN);
    if (n == 0 || n % ntile)
        return ork_errorf(ORK_EHAZARD,
                          "task %u: N_ALIGN: %s.WEIGHT_KERNELS N=%u is not a positive multiple of "
                          "%u (%s): wrong results (§5.1, §14.2)",
                          ti, NAME(ORK_REG_CNA_WEIGHT_SIZE2), n, ntile, int8 ? "int8" : "fp16");
    if (n > N_MAX)
        return ork_errorf(ORK_EHAZARD,
                          "task %u: N_ABOVE_8192: %s.WEIGHT_KERNELS N=%u > %u in one program: "
                          "silently wrong (§5.1, §14.2)",
                          ti, NAME(ORK_REG_CNA_WEIGHT_SIZE2), n, N_MAX);
    mm->m = m;
    mm->k = k;
    mm->n = n;

    /* Derived registers (§3.4 step 2; rules of §3.1). */
    char rule[96];
    snprintf(rule, sizeof rule, "K-1=%u, K=%u", k - 1, k);
    if ((ret = expect(rf, ti, ORK_REG_CNA_DATA_SIZE1,
                      ORK_CNA_DATA_SIZE1_DATAIN_CHANNEL_REAL(k - 1) |
                          ORK_CNA_DATA_SIZE1_DATAIN_CHANNEL(k), rule)))
        return ret;
    snprintf(rule, sizeof rule, "W=1, H=1, N=%u", n);
    if ((ret = expect(rf, ti, ORK_REG_CNA_WEIGHT_SIZE2,
                      ORK_CNA_WEIGHT_SIZE2_WEIGHT_WIDTH(1) | ORK_CNA_WEIGHT_SIZE2_WEIGHT_HEIGHT(1) |
                          ORK_CNA_WEIGHT_SIZE2_WEIGHT_KERNELS(n), rule)))
        return ret;
    snprintf(rule, sizeof rule, "M=%u", m);
    if ((ret = expect(rf, ti, ORK_REG_CNA_DATA_SIZE3, ORK_CNA_DATA_SIZE3_DATAOUT_ATOMICS(m), rule)))
        return ret;
    uint64_t wbytes = (uint64_t)k * n * esz;
    snprintf(rule, sizeof rule, "K*N*%u for K=%u N=%u", esz, k, n);
    if ((ret = expect(rf, ti, ORK_REG_CNA_WEIGHT_SIZE0, (uint32_t)wbytes, rule)))
        return ret;
    snprintf(rule, sizeof rule, "K*%u for K=%u", esz, k);
    if ((ret = expect(rf, ti, ORK_REG_CNA_WEIGHT_SIZE1, k * esz, rule)))
        return ret;
    snprintf(rule, sizeof rule, "64-byte entries per row of K=%u", k);
    if ((ret = expect(rf, ti, ORK_REG_CNA_CBUF_CON1, ceil_div(k * esz, 64), rule)))
        return ret;
    snprintf(rule, sizeof rule, "mirror of %s", NAME(ORK_REG_CNA_DATA_SIZE0));
    if ((ret = expect(rf, ti, ORK_REG_CNA_FC_DATA_SIZE0,
                      ORK_CNA_FC_DATA_SIZE0_DMA_WIDTH(1) | ORK_CNA_FC_DATA_SIZE0_DMA_HEIGHT(m), rule)))
        return ret;
    snprintf(rule, sizeof rule, "K=%u", k);
    if ((ret = expect(rf, ti, ORK_REG_CNA_FC_DATA_SIZE1, k, rule)))
        return ret;
    snprintf(rule, sizeof rule, "(M-1)<<16 for M=%u", m);
    if ((ret = expect(rf, ti, ORK_REG_CORE_DATAOUT_SIZE_0,
                      ORK_CORE_DATAOUT_SIZE_0_DATAOUT_HEIGHT(m - 1), rule)))
        return ret;
    if ((ret = expect(rf, ti, ORK_REG_DPU_WDMA_SIZE_1, ORK_DPU_WDMA_SIZE_1_HEIGHT_M1(m - 1), rule)))
        return ret;
    snprintf(rule, sizeof rule, "M-1 for M=%u", m);
    if ((ret = expect(rf, ti, ORK_REG_DPU_DATA_CUBE_HEIGHT, m - 1, rule)))
        return ret;
    snprintf(rule, sizeof rule, "N-1 for N=%u", n);
    if ((ret = expect(rf, ti, ORK_REG_CORE_DATAOUT_SIZE_1, n - 1, rule)))
        return ret;
    if ((ret = expect(rf, ti, ORK_REG_DPU_WDMA_SIZE_0, n - 1, rule)))
        return ret;
    if ((ret = expect(rf, ti, ORK_REG_DPU_DATA_CUBE_WIDTH, 0, "output width 1, minus one")))
        return ret;

    /* A row pitch (§4.1): dense is K*esz; a larger pitch is honoured with a warning. */
    uint32_t line = ORK_CNA_DMA_CON1_LINE_STRIDE_GET(R(ORK_REG_CNA_DMA_CON1));
    uint32_t dense = k * esz / LINE_UNIT;
    if (line < dense || R(ORK_REG_CNA_DMA_CON1) != ORK_CNA_DMA_CON1_LINE_STRIDE(line))
        return ork_errorf(ORK_EHAZARD,
                          "task %u: INCONSISTENT_GEOMETRY: %s = 0x%x, expected LINE_STRIDE >= "
                          "%u (K*%u/16 for K=%u) (§3.1 #28, §4.1)",
                          ti, NAME(ORK_REG_CNA_DMA_CON1), R(ORK_REG_CNA_DMA_CON1), dense, esz, k);
    if (line != dense)
        mm->warnings |= 1ull << ORK_SIM_HAZARD_NONDENSE_PITCH;
    mm->a_pitch = line * LINE_UNIT;

    /* C layout (§4.2): stride s from DATA_CUBE_CHANNEL, cross-checked with the notch. */
    uint32_t chan = R(ORK_REG_DPU_DATA_CUBE_CHANNEL);
    uint32_t s = ORK_DPU_DATA_CUBE_CHANNEL_ORIG_CHANNEL_GET(chan) + 1;
    if (ORK_DPU_DATA_CUBE_CHANNEL_CHANNEL_GET(chan) != n - 1 || s < n)
        return ork_errorf(ORK_EHAZARD,
                          "task %u: INCONSISTENT_GEOMETRY: %s = 0x%x: CHANNEL must be N-1=%u and "
                          "ORIG_CHANNEL+1 (row stride s=%u) at least N (§3.1 #66, §4.2)",
                          ti, NAME(ORK_REG_DPU_DATA_CUBE_CHANNEL), chan, n - 1, s);
    if ((uint64_t)s * osz % NOTCH_UNIT)
        return ork_errorf(ORK_EHAZARD,
                          "task %u: INCONSISTENT_GEOMETRY: %s row stride s=%u gives %u-byte rows, "
                          "not a multiple of 16 (§4.2)",
                          ti, NAME(ORK_REG_DPU_DATA_CUBE_CHANNEL), s, s * osz);
    snprintf(rule, sizeof rule, "((s*%u/16-1)<<16) | (N*%u/16-1) for s=%u N=%u", osz, osz, s, n);
    if ((ret = expect(rf, ti, ORK_REG_DPU_DATA_CUBE_NOTCH_ADDR,
                      ORK_DPU_DATA_CUBE_NOTCH_ADDR_ROW_PITCH_M1(s * osz / NOTCH_UNIT - 1) |
                          ORK_DPU_DATA_CUBE_NOTCH_ADDR_ROW_LEN_M1(n * osz / NOTCH_UNIT - 1),
                      rule)))
        return ret;
    mm->s = s;

    mm->a_extent = (uint64_t)(m - 1) * mm->a_pitch + (uint64_t)k * esz;
    mm->b_extent = wbytes;
    mm->c_extent = ((uint64_t)(m - 1) * s + n) * osz;

    /* REQUANT_SMALL_K (§6.3): int8/int16 requant output needs K >= 512. */
    if (mode->requant && k < REQUANT_K_MIN)
        return ork_errorf(ORK_EHAZARD,
                          "task %u: REQUANT_SMALL_K: %s output with %s.DATAIN_CHANNEL K=%u < %u "
                          "miscomputes; zero-pad K to %u (§6.3, §14.2)",
                          ti, mode->name, NAME(ORK_REG_CNA_DATA_SIZE1), k, REQUANT_K_MIN,
                          REQUANT_K_MIN);
    return 0;
}

/* ---- the weight decompressor (npu-weight-decompression.md §1) ------------------------------ */

/* DCOMP_CTRL = 0: raw B, as before. DCOMP_CTRL = 1: B at DCOMP_ADDR0 is a stream of 16 lanes
 * (REGNUM 0x55555555, int8 only, §1.2-§1.3), 64-byte aligned (§1.4), each lane at least 8
 * units; its extent (what exec maps and decodes) is the lanes the AMOUNTs give. */
static int check_dcomp(const struct ork_sim_regfile *rf, uint32_t ti, struct ork_sim_matmul *mm)
{
    const uint32_t ctrl = R(ORK_REG_CNA_DCOMP_CTRL), regnum = R(ORK_REG_CNA_DCOMP_REGNUM);
    if (ctrl == ORK_DCOMP_CTRL_RAW)
        return 0;
    if (ctrl != ORK_DCOMP_CTRL_ON || regnum != ORK_DCOMP_REGNUM_NORMAL)
        return ork_errorf(ORK_EUNSUPPORTED,
                          "task %u: DCOMP_MODE: %s = 0x%x, %s = 0x%08x: only 0 (raw) and 1 with "
                          "0x%08x (decompress) are known (npu-weight-decompression.md §1.2, §5 (b))",
                          ti, NAME(ORK_REG_CNA_DCOMP_CTRL), ctrl, NAME(ORK_REG_CNA_DCOMP_REGNUM),
                          regnum, ORK_DCOMP_REGNUM_NORMAL);
    if (mm->in_prec != ORK_SIM_PREC_INT8)
        return ork_errorf(ORK_EUNSUPPORTED,
                          "task %u: DCOMP_MODE: %s = 1 on %s weights: the decompressor is shown "
                          "for int8 only (npu-weight-decompression.md §1.3, §5 (c))", ti,
                          NAME(ORK_REG_CNA_DCOMP_CTRL), prec_name(mm->in_prec));
    const uint32_t addr = R(ORK_REG_CNA_DCOMP_ADDR0);
    if (addr % ORK_DCOMP_ALIGN)
        return ork_errorf(ORK_EHAZARD,
                          "task %u: DCOMP_ALIGN: %s = 0x%08x: a DCOMP stream must be 64-byte "
                          "aligned (npu-weight-decompression.md §1.4)", ti,
                          NAME(ORK_REG_CNA_DCOMP_ADDR0), addr);
    mm->dcomp = true;
    mm->dregs.ctrl = ctrl;
    mm->dregs.regnum = regnum;
    for (uint32_t l = 0; l < ORK_DCOMP_LANES; l++) {
        uint32_t reg = ORK_REG_CNA_DCOMP_AMOUNT0 + 4u * l, v = R(reg);
        if (v < ORK_DCOMP_MIN_UNITS - 1)
            return ork_errorf(ORK_EHAZARD,
                              "task %u: DCOMP_AMOUNT: %s = %u is below %u: a lane is at least %u "
                              "bytes (npu-weight-decompression.md §1.4)", ti, NAME(reg), v,
                              ORK_DCOMP_MIN_UNITS - 1, ORK_DCOMP_MIN_UNITS * ORK_DCOMP_UNIT);
        mm->dregs.amount[l] = v;
    }
    mm->b_extent = ork_dcomp_lane_offset(&mm->dregs, ORK_DCOMP_LANES);
    return 0;
}

/* ---- addresses (§14.3) ---------------------------------------------------------------------- */

static int check_addresses(const struct ork_sim_regfile *rf, const struct ork_sim_decoded *d,
                           const struct ork_sim_task_in *t, struct ork_sim_matmul *mm)
{
    uint32_t ti = t->index;
    static const uint16_t regs[3] = { ORK_REG_CNA_FEATURE_DATA_ADDR, ORK_REG_CNA_DCOMP_ADDR0,
                                      ORK_REG_DPU_DST_BASE_ADDR };
    static const char *const what[3] = { "A", "B", "C" };
    for (int i = 0; i < 3; i++) {
        uint32_t a = R(regs[i]);
        if (a == 0)
            return ork_errorf(ORK_EHAZARD, "task %u: ADDR_ZERO: %s (%s) is 0 (§14.3)", ti,
                              NAME(regs[i]), what[i]);
        if (a % ADDR_ALIGN)
            return ork_errorf(ORK_EHAZARD,
                              "task %u: ADDR_MISALIGNED: %s (%s) = 0x%08x is not 16-byte aligned "
                              "(§14.3)", ti, NAME(regs[i]), what[i], a);
    }
    mm->a = R(ORK_REG_CNA_FEATURE_DATA_ADDR);
    mm->b = R(ORK_REG_CNA_DCOMP_ADDR0);
    mm->c = R(ORK_REG_DPU_DST_BASE_ADDR);

    /* OVERLAP (§14.3): C against A, B, the program and the task array. */
    uint64_t prog_len = (uint64_t)(d->n_used > t->regcfg_amount + TRAILER_ENTRIES
                                       ? d->n_used
                                       : t->regcfg_amount + TRAILER_ENTRIES) * ENTRY_BYTES;
    struct {
        uint64_t addr, len;
        const char *name;
    } others[4] = {
        { mm->a, mm->a_extent, "A (CNA_FEATURE_DATA_ADDR)" },
        { mm->b, mm->b_extent, "B (CNA_DCOMP_ADDR0)" },
        { t->regcmd_addr, t->regcmd_addr ? prog_len : 0, "the program" },
        { t->task_array_addr, t->task_array_addr ? t->task_array_len : 0, "the task array" },
    };
    for (int i = 0; i < 4; i++)
        if (ranges_overlap(mm->c, mm->c_extent, others[i].addr, others[i].len))
            return ork_errorf(ORK_EHAZARD,
                              "task %u: OVERLAP: output C [0x%08x, +%llu) of %s overlaps %s "
                              "[0x%08llx, +%llu) (§14.3)",
                              ti, mm->c, (unsigned long long)mm->c_extent,
                              NAME(ORK_REG_DPU_DST_BASE_ADDR), others[i].name,
                              (unsigned long long)others[i].addr,
                              (unsigned long long)others[i].len);
    return 0;
}

/* ---- enable mask and op kind (§3.3, §7) ------------------------------------------------------ */

static int check_enable(const struct ork_sim_regfile *rf, const struct ork_sim_decoded *d,
                        const struct ork_sim_task_in *t, struct ork_sim_matmul *mm)
{
    uint32_t ti = t->index, en = d->enable;
    mm->enable = en;
    if (t->enable_mask && t->enable_mask != en)
        warn(mm, ORK_SIM_HAZARD_ENABLE_MISMATCH);

    bool cna = block_written(rf, ORK_BLOCK_CNA, false);
    bool core = block_written(rf, ORK_BLOCK_CORE, false);
    bool rdma = block_written(rf, ORK_BLOCK_DPU_RDMA, true);
    if (rdma && !(en & ORK_ENABLE_DPU_RDMA))
        return ork_errorf(ORK_EHAZARD,
                          "task %u: ENABLE_MISMATCH: the program configures DPU_RDMA but %s = "
                          "0x%x does not enable it (0x%x): the job hangs (§3.3, §14.1)",
                          ti, NAME(ORK_REG_PC_OPERATION_ENABLE), en, ORK_ENABLE_DPU_RDMA);

    if (!cna && !core && !(en & (ORK_ENABLE_CNA | ORK_ENABLE_CORE))) {
        /* A DPU-only program: the LUT load of §7 (streams the LUT ports) is accepted as a
         * no-op; standalone DPU ops are not modelled. */
        if (ork__sim_reg_written(rf, ORK_REG_DPU_LUT_DATA) && (en & ORK_ENABLE_DPU)) {
            mm->op = ORK_SIM_OP_LUT_LOAD;
            return 1;
        }
        return ork_errorf(ORK_EUNSUPPORTED,
                          "task %u: UNSUPPORTED_OP: %s = 0x%x without CNA/CORE registers is a "
                          "standalone DPU op, not simulated (§3.3)",
                          ti, NAME(ORK_REG_PC_OPERATION_ENABLE), en);
    }
    if ((en & ORK_ENABLE_MATMUL) != ORK_ENABLE_MATMUL)
        return ork_errorf(ORK_EHAZARD,
                          "task %u: ENABLE_MISMATCH: %s = 0x%x but a matmul needs CNA + CORE + DPU "
                          "(0x%x): the job never completes (§3.3, §14.1)",
                          ti, NAME(ORK_REG_PC_OPERATION_ENABLE), en, ORK_ENABLE_MATMUL);
    mm->op = ORK_SIM_OP_MATMUL;
    return 0;
}

int ork__sim_check(const struct ork_sim_regfile *rf, const struct ork_sim_decoded *d,
                   const struct ork_sim_task_in *t, struct ork_sim_matmul *mm)
{
    memset(mm, 0, sizeof(*mm));
    mm->warnings = d->warnings;
    uint32_t ti = t->index;
    const struct out_mode *mode = NULL;
    int ret = check_enable(rf, d, t, mm);
    if (ret)
        return ret < 0 ? ret : 0; /* 1: LUT load, nothing more to check */
    if ((ret = check_precision(rf, ti, mm, &mode)) < 0)
        return ret;
    ret = mm->in_prec == ORK_SIM_PREC_INT4 ? ork__sim_check_i4(rf, ti, mm)
                                           : check_geometry(rf, ti, mm, mode);
    if (ret < 0)
        return ret;
    if ((ret = check_cbuf(rf, ti, mm, t->strict)) < 0)
        return ret;
    if ((ret = check_dcomp(rf, ti, mm)) < 0)
        return ret;
    return check_addresses(rf, d, t, mm);
}
