/* sim_exec.h -- the simulator's task executor: the interface between the task walker
 * (sim_*.c, which follows PC chains and owns BOs, IOVAs, submits and timing) and the
 * executor (exec*.c, hazard*.c), which handles ONE task:
 *
 *   1. ork__sim_decode()  regcmd entries -> register file + trailer (spec §2, §3.2, §14.1)
 *   2. ork__sim_check()   register file -> validated matmul description (spec §3.4 steps 1-3,
 *                         §4, §5, §6, §14.1-§14.3)
 *   3. ork__sim_exec()    reads A and B, computes, writes C through ork_sim_mem (spec §3.4
 *                         steps 4-5, §4, §6); returns per-task stats for the timing model.
 *
 * ork__sim_task_run() does all three. This module is NOT the walker: it never follows the
 * chain (it only reports the trailer's next address/amount), knows nothing of task
 * descriptors beyond the fields copied into struct ork_sim_task_in, and keeps no state
 * between calls (thread-safe; one call per task, any core).
 *
 * Errors are negative ORK_E* codes with an ork_errorf() message naming the task index, the
 * hazard id from spec §14, the register (by its register-database name) and the values:
 *   "task 3: M_ABOVE_CAP: CNA_DATA_SIZE0.DATAIN_HEIGHT M=705 ... (§5.5)".
 * ORK_EHAZARD: the program violates a hardware rule (a board gives garbage, hangs or faults);
 * ORK_EFAULT: an address is not inside one mapped buffer (IOMMU fault on a board);
 * ORK_EUNSUPPORTED: a valid-looking program using a feature the simulator does not model
 * (e.g. an active LUT). WARN-level hazards never fail; they are collected in `warnings`. */
#ifndef ORK_SIM_EXEC_H
#define ORK_SIM_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ork/dcomp.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Device memory as the executor sees it. `map` translates [iova, iova + len) to a host
 * pointer, or returns NULL when that range is not fully inside ONE live buffer mapped in the
 * submit's IOMMU domain (-> ADDR_OOB / WRONG_DOMAIN, spec §14.3). `write` says the executor
 * will store through the pointer (the walker may use it for MISSING_SYNC bookkeeping). */
struct ork_sim_mem {
    void *ctx;
    void *(*map)(void *ctx, uint32_t iova, uint64_t len, bool write);
};

/* Hazard ids of spec §14 (and §5.5, §7) that the executor detects; ERROR or WARN per spec. */
#define ORK_SIM_HAZARD_MAP(X)                                                                 \
    X(NONE,                   "no hazard")                                                    \
    /* §14.1 program and encoding */                                                          \
    X(TRAILER_MISSING,        "trailer or OPERATION_ENABLE entry missing (§2.3, §14.1)")      \
    X(AMOUNT_MISMATCH,        "regcfg_amount disagrees with the program (§14.1)")             \
    X(ODD_AMOUNT,             "odd regcfg_amount: a padding entry is fetched (§2.3)")          \
    X(TARGET_REG_MISMATCH,    "entry target does not match the register's block (§2.2)")      \
    X(DUP_DIVERGENT,          "register written twice with different values (§3.2)")          \
    X(INCONSISTENT_GEOMETRY,  "derived registers disagree with M/K/N (§3.4)")                  \
    X(MIXED_PRECISION,        "CNA/CORE/DPU precisions disagree (§3.4)")                      \
    X(ENABLE_MISMATCH,        "block-enable mask wrong for the program (§3.3)")               \
    /* §14.2 shapes and CBUF */                                                               \
    X(K_ALIGN,                "K not a multiple of 32 (§5.1)")                                \
    X(N_ALIGN,                "N not a multiple of the column tile (§5.1)")                   \
    X(N_ABOVE_8192,           "N > 8192 in one program (§5.1)")                               \
    X(M_ABOVE_CAP,            "M beyond the CBUF data banks (§5.5)")                           \
    X(CBUF_HANG,              "CBUF_CON0 gives 0 weight banks: hangs (§5.2)")                 \
    X(CBUF_WRONG,             "CBUF_CON0 data banks 0 or >= 12 (§5.5)")                        \
    X(CBUF_UNVALIDATED,       "CBUF_CON0 not from a validated rule (§5.5)")                   \
    X(CBUF_FLAGS_UNVALIDATED, "CBUF_CON0 bits 8-13 set (§5.5)")                               \
    X(FP16_K128,              "fp16 K=128 with M > 256 (§5.4)")                                \
    X(FULLK_ENVELOPE,         "int8 bank schedule outside the full-K envelope (§5.3)")        \
    X(DECODE_K,               "M=1 with K > 8192: unvalidated (§5.1)")                        \
    X(REQUANT_SMALL_K,        "int8/int16 requant output with K < 512 (§6.3)")                \
    X(MFOLD_UNSUPPORTED,      "vendor M-fold geometry (§4.6)")                                 \
    X(NONDENSE_PITCH,         "feature row pitch larger than K: unvalidated (§4.1)")          \
    /* §14.3 addresses and memory */                                                          \
    X(ADDR_ZERO,              "A, B or C address is zero (§14.3)")                            \
    X(ADDR_MISALIGNED,        "A, B or C address not 16-byte aligned (§14.3)")                \
    X(ADDR_OOB,               "address range not inside one mapped buffer (§14.3)")           \
    X(OVERLAP,                "C overlaps A, B, the program or the task array (§14.3)")       \
    /* §14.4 device state (output modes) */                                                   \
    X(DEAD_OUTPUT_MODE,       "output mode that hangs or wedges the NPU (§6.2)")              \
    /* §7 and unmodelled features */                                                          \
    X(UNSUPPORTED_LUT,        "active LUT / element-wise stage not modelled (§7)")            \
    X(UNSUPPORTED_OP,         "program is neither a matmul nor a LUT load")              \
    /* the CNA weight decompressor (npu-weight-decompression.md §1) */                        \
    X(DCOMP_MODE,             "DCOMP_CTRL/DCOMP_REGNUM not a known mode (dcomp §1.2)")        \
    X(DCOMP_ALIGN,            "DCOMP stream not 64-byte aligned (dcomp §1.4)")                 \
    X(DCOMP_AMOUNT,           "DCOMP_AMOUNTn below the 8-unit lane minimum (dcomp §1.4)")     \
    X(DCOMP_STREAM,           "malformed DCOMP stream or AMOUNTn (dcomp §1.4)")          \
    /* int4 x int4 -> int16 programs (W4A8, npu-weight-decompression.md §2) */                \
    X(I4_LIMIT,               "int4 program beyond M <= 128, K <= 2048, N <= 4096 (dcomp §2)") \
    X(I4_OVERFLOW,            "int4 partial sum outside the int16 accumulator (dcomp §2)")

enum ork_sim_hazard {
#define ORK_SIM_HAZARD_ENUM_(name, desc) ORK_SIM_HAZARD_##name,
    ORK_SIM_HAZARD_MAP(ORK_SIM_HAZARD_ENUM_)
#undef ORK_SIM_HAZARD_ENUM_
    ORK_SIM_HAZARD_COUNT
};

/* Register-database name of an offset ("CNA_CBUF_CON0"), or "unknown register". */
const char *ork__sim_reg_name(uint32_t reg);

/* "M_ABOVE_CAP" etc.; "?" for out-of-range ids. */
const char *ork__sim_hazard_name(enum ork_sim_hazard h);
const char *ork__sim_hazard_desc(enum ork_sim_hazard h);

/* ---- 1. decode ------------------------------------------------------------------------- */

/* Register offsets are 16 bits and word aligned (spec §2.1), so a dense file has 16384 words. */
#define ORK_SIM_REG_SPACE 0x10000u
#define ORK_SIM_REG_WORDS (ORK_SIM_REG_SPACE / 4u)

/* Values of all registers after applying one task's counted entries in order (last write
 * wins, spec §3.2). ~66 KiB: allocate it (ork_malloc) or keep one per core. */
struct ork_sim_regfile {
    uint32_t val[ORK_SIM_REG_WORDS];
    uint64_t written[ORK_SIM_REG_WORDS / 64];  /* bit (reg/4): written by this program */
};

static inline bool ork__sim_reg_written(const struct ork_sim_regfile *rf, uint32_t reg)
{
    uint32_t w = (reg & (ORK_SIM_REG_SPACE - 1)) / 4u;
    return (rf->written[w / 64] >> (w % 64)) & 1u;
}
static inline uint32_t ork__sim_reg(const struct ork_sim_regfile *rf, uint32_t reg)
{
    return rf->val[(reg & (ORK_SIM_REG_SPACE - 1)) / 4u];
}

/* What the walker knows about the task (from its descriptor or the previous trailer). */
struct ork_sim_task_in {
    uint32_t index;           /* task index within the submit: used in messages only */
    uint32_t regcmd_addr;     /* program IOVA (messages; OVERLAP check when != 0) */
    uint32_t regcfg_amount;   /* counted entries n claimed by the descriptor (spec §2.3);
                               * 0 = unknown, skip AMOUNT_MISMATCH */
    uint32_t enable_mask;     /* descriptor enable_mask; 0 = not known, skip the comparison */
    uint32_t task_array_addr; /* task-array IOVA and length for the OVERLAP check; 0 = skip */
    uint32_t task_array_len;
    bool strict;              /* spec §14 "strict mode": reproduce misbehaviour (M_ABOVE_CAP
                               * computes and corrupts rows beyond the cap instead of failing) */
};

/* Decoder output besides the register file. */
struct ork_sim_decoded {
    uint32_t n_counted;       /* counted register writes found before the trailer */
    uint32_t n_used;          /* entries consumed up to and including OPERATION_ENABLE */
    uint32_t enable;          /* OPERATION_ENABLE value (block mask, spec §3.3) */
    uint32_t next_addr;       /* trailer PC BASE_ADDRESS (0: terminal task, spec §8.3) */
    uint32_t next_amount;     /* trailer PC REGISTER_AMOUNTS (0: terminal) */
    bool has_next_addr;       /* the trailer wrote PC BASE_ADDRESS (not a null entry) */
    uint64_t warnings;        /* bit (1 << hazard) for WARN-level hazards seen */
};

/* Decode one program. `entries` points at the fetched 64-bit entries as stored (little-endian
 * u64, spec §2.1; any alignment), `n_fetched` how many the PC fetched (2 * (PC amount + 1)),
 * `t->regcfg_amount` the counted writes expected before the 4 trailer entries. Resets `rf`
 * first. Errors: TRAILER_MISSING, AMOUNT_MISMATCH, TARGET_REG_MISMATCH (ORK_EHAZARD). */
int ork__sim_decode(const void *entries, size_t n_fetched, const struct ork_sim_task_in *t,
                    struct ork_sim_regfile *rf, struct ork_sim_decoded *out);

/* ---- 2. check ---------------------------------------------------------------------------- */

enum ork_sim_op {
    ORK_SIM_OP_MATMUL = 0,    /* CNA + CORE + DPU matmul (spec §3) */
    ORK_SIM_OP_LUT_LOAD = 1,  /* DPU-only LUT-load program (spec §7): no memory traffic */
};

/* Element precisions, numbered as the hardware fields (spec §6.1). */
enum ork_sim_prec {
    ORK_SIM_PREC_INT8 = 0,
    ORK_SIM_PREC_INT16 = 1,
    ORK_SIM_PREC_FP16 = 2,
    ORK_SIM_PREC_INT32 = 4,
    ORK_SIM_PREC_FP32 = 5,
    ORK_SIM_PREC_INT4 = 6,    /* int4 A and B, int16 accumulator (npu-weight-decompression.md §2) */
};

/* A validated task, ready to execute. */
struct ork_sim_matmul {
    enum ork_sim_op op;
    enum ork_sim_prec in_prec;   /* INT8, FP16 or INT4 (A and B) */
    enum ork_sim_prec out_prec;  /* INT32, FP32, INT8, INT16 or FP16 (C) */
    uint32_t m, k, n;            /* geometry (spec §3.4 step 1) */
    uint32_t s;                  /* C row stride in elements (spec §4.2) */
    uint32_t a, b, c;            /* IOVAs of A, B, C */
    uint32_t a_pitch;            /* bytes between A rows (16 * LINE_STRIDE, spec §4.1) */
    uint32_t esz, osz;           /* bytes per input / output element (int4: esz 1 counts a
                                  * byte of two elements; its extents are computed apart) */
    uint64_t a_extent;           /* (M-1)*pitch + K*esz (spec §14.3) */
    uint64_t b_extent;           /* WEIGHT_SIZE0 = K*N*esz; a DCOMP task: its stream's bytes,
                                  * the 16 lanes the AMOUNTs give (dcomp §1.4) */
    bool dcomp;                  /* DCOMP_CTRL = 1: B is a stream (npu-weight-decompression.md) */
    struct ork_dcomp_regs dregs; /* its DCOMP_CTRL, DCOMP_REGNUM, DCOMP_AMOUNT0..15 */
    uint64_t c_extent;           /* ((M-1)*s + N)*osz */
    uint32_t cvt_mult;           /* requant multiplier (OUT_CVT_SCALE & 0xffff, spec §6.3) */
    uint32_t cvt_shift;          /* requant shift */
    int32_t cvt_offset;          /* OUT_CVT_OFFSET, added after rounding (spec §6.3 [INF]) */
    uint32_t cbuf;               /* effective CBUF_CON0 */
    uint32_t m_cap;              /* rows that are correct with this CBUF split (strict mode) */
    uint32_t enable;             /* block-enable mask in force */
    uint64_t warnings;           /* decode + check warnings (1 << hazard) */
};

/* Validate the register file of task `t` (decoded as `d`) and describe the matmul.
 * ORK_EHAZARD / ORK_EUNSUPPORTED with a message naming the hazard and register. Address
 * RANGES are checked by ork__sim_exec (it needs the memory); zero/misaligned/overlap here. */
int ork__sim_check(const struct ork_sim_regfile *rf, const struct ork_sim_decoded *d,
                   const struct ork_sim_task_in *t, struct ork_sim_matmul *mm);

/* ---- 3. execute ------------------------------------------------------------------------- */

/* Per-task numbers for the timing model (the walker's timing table turns them into time). */
struct ork_sim_stats {
    enum ork_sim_op op;
    enum ork_sim_prec in_prec, out_prec;
    uint32_t m, k, n;
    uint64_t macs;               /* M*K*N */
    uint64_t a_bytes;            /* feature bytes read (M*K*esz; int4 M*K/2) */
    uint64_t b_bytes;            /* weight bytes read from DRAM (K*N*esz; a DCOMP task: the
                                  * stream's bytes) */
    uint64_t dcomp_bytes;        /* a DCOMP task: the int8 bytes the decompressor outputs
                                  * (K*N); 0 for raw weights */
    uint64_t c_bytes;            /* output bytes written (M*N*osz) */
    uint32_t n_entries;          /* entries up to OPERATION_ENABLE (ork__sim_task_run fills it) */
    uint32_t cbuf_data_banks;    /* CBUF_CON0 DATA_BANK */
    uint64_t warnings;           /* all WARN hazards of the task (1 << hazard) */
};

/* Execute a checked task. Maps A, B (read) and C (write) through `mem` (ORK_EFAULT /
 * ADDR_OOB when a range is not inside one buffer), computes per spec §3.4 and §6, and
 * writes C row by row, the last element (row M-1, column N-1) last behind a release fence
 * (§8.6). `timing_only`: validate the ranges, compute nothing, leave C untouched. */
int ork__sim_exec(const struct ork_sim_matmul *mm, const struct ork_sim_mem *mem,
                  const struct ork_sim_task_in *t, bool timing_only, struct ork_sim_stats *st);

/* ---- int4 programs (exec_i4.c) ------------------------------------------------------------ */

/* Geometry and every int4-specific register of a task whose precisions are 6 (checked
 * consistent by the caller): fills m, k, n, s, a_pitch, osz and the extents of `mm`.
 * ORK_EHAZARD naming the register (INCONSISTENT_GEOMETRY, K_ALIGN, N_ALIGN, I4_LIMIT). */
int ork__sim_check_i4(const struct ork_sim_regfile *rf, uint32_t ti, struct ork_sim_matmul *mm);

/* int4 x int4 -> int16 of a checked task from the mapped A, B and C (spec §4.6 layouts). An
 * accumulator leaving int16 is I4_OVERFLOW: ORK_EHAZARD naming task, row and column, or with
 * t->strict (reproduce the hardware) a saturated value and the warning in *warnings. */
int ork__sim_exec_i4(const struct ork_sim_matmul *mm, const struct ork_sim_task_in *t,
                     const uint8_t *a, const uint8_t *b, uint8_t *c, uint64_t *warnings);

/* decode + check + exec. `rf` is scratch (see struct ork_sim_regfile); `dec` (may be NULL)
 * receives the trailer for the walker's chain step, filled even when check/exec fail after a
 * successful decode. */
int ork__sim_task_run(const void *entries, size_t n_fetched, const struct ork_sim_task_in *t,
                      const struct ork_sim_mem *mem, bool timing_only,
                      struct ork_sim_regfile *rf, struct ork_sim_decoded *dec,
                      struct ork_sim_stats *st);

#ifdef __cplusplus
}
#endif
#endif
