/* program.h -- regcmd program emission for one matmul task, the PC trailer, chaining of tasks
 * and address validation (spec §2, §3, §8.3, §14.3). Internal to libork.
 *
 * Emission writes one task as a flat list in the order of the spec's register table (§3.1)
 * through a tiny EMIT API; every value is a named field packer from <ork/regs.h>. Chaining
 * (ork__prog_link) patches entries #108/#109 of each program after all tasks are laid out, and
 * ork__prog_validate refuses any DMA address outside a known buffer. Shapes come from plan.c;
 * buffers and submission from matmul.c. */
#ifndef ORK_PROGRAM_H
#define ORK_PROGRAM_H

#include <ork/npu.h>
#include <ork/regs.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ork_dcomp_regs;          /* <ork/dcomp.h> */

/* Program size (spec §2.3): 108 counted writes + 4 trailer entries = 112 entries = 896 bytes. */
#define ORK_PROG_COUNTED 108u
#define ORK_PROG_TRAILER 4u
#define ORK_PROG_ENTRIES (ORK_PROG_COUNTED + ORK_PROG_TRAILER)
#define ORK_PROG_BYTES (ORK_PROG_ENTRIES * 8u)
/* Program slot stride inside a program buffer: chained programs must be 16-byte aligned; 64 is
 * what Mesa uses (spec §8.3). 896 is already a multiple of 64. */
#define ORK_PROG_ALIGN 64u
#define ORK_PROG_SLOT (((ORK_PROG_BYTES + ORK_PROG_ALIGN - 1) / ORK_PROG_ALIGN) * ORK_PROG_ALIGN)
/* Trailer entry positions (spec §3.1 #108-#111). */
#define ORK_PROG_NEXT_ADDR_IDX (ORK_PROG_COUNTED + 0)
#define ORK_PROG_NEXT_AMOUNT_IDX (ORK_PROG_COUNTED + 1)
#define ORK_PROG_MARKER_IDX (ORK_PROG_COUNTED + 2)
#define ORK_PROG_ENABLE_IDX (ORK_PROG_COUNTED + 3)
/* Matmul task descriptor values (spec §8.1). */
#define ORK_TASK_INT_MASK_DPU 0x300u   /* DPU_0 | DPU_1 completion interrupts */

/* PC "data amount" for a program of n counted entries: ceil((n + 4) / 2) - 1 (spec §2.3, §8.3). */
static inline uint32_t ork__prog_pc_amount(uint32_t n_counted)
{
    return (n_counted + ORK_PROG_TRAILER + 1) / 2 - 1;
}

/* One matmul program (spec §3.1): C[m][n] (row stride `stride`) = A[m][k] . B[k][n]. */
struct ork_mm_task {
    enum ork_npu_dtype dtype;   /* int8 -> int32 or fp16 -> fp32 (spec §6.2 production modes) */
    uint32_t m;                 /* rows (1..2047, DATAIN_HEIGHT is 11 bits, spec §5.1) */
    uint32_t k;                 /* reduction, multiple of 32 */
    uint32_t n;                 /* columns: multiple of 32 (int8) / 16 (fp16), <= 8192 */
    uint32_t stride;            /* C row stride in elements (s, spec §4.2); 0 = n */
    uint32_t a, b, c;           /* IOVAs of A (dense rows of k), B (tiled, §4.3/§4.4), C */
    uint32_t cbuf;              /* CNA_CBUF_CON0 (plan: ork__plan_cbuf_con0, §5.2-§5.4) */
    uint32_t grains;            /* FEATURE_GRAINS rows (plan: ork__plan_grains, §5.6) */
    const struct ork_dcomp_regs *dcomp; /* B is a DCOMP stream with these registers
                                 * (npu-weight-decompression.md §1.2); NULL = raw B */
    uint64_t b_bytes;           /* DCOMP: the stream's bytes at b (its DMA extent) */
    bool i4;                    /* int4 x int4 -> int16 (W4A8, npu-weight-decompression.md §2):
                                 * dtype is ORK_NPU_I8, m counts physical int4 rows, A/B/C are
                                 * in the layouts of i4_layout.h (spec §4.6), stride unused;
                                 * cbuf / grains 0: the emitter derives them (program.c) */
};

/* A DMA range one program touches, recorded at emission for ork__prog_validate. */
struct ork_prog_reloc {
    uint16_t reg;               /* the address register (e.g. ORK_REG_DPU_DST_BASE_ADDR) */
    bool write;
    uint32_t iova;
    uint64_t len;               /* extent per spec §14.3 ADDR_OOB */
};

#define ORK_PROG_MAX_RELOCS 4

/* The command stream being written: a bounded list of entries plus its relocations. */
struct ork_cs {
    uint64_t *e;                /* entries (host order; stored little-endian on copy out) */
    uint32_t n, cap;
    bool overflow;
    struct ork_prog_reloc reloc[ORK_PROG_MAX_RELOCS];
    uint32_t n_reloc;
};

static inline void ork__cs_init(struct ork_cs *cs, uint64_t *entries, uint32_t cap)
{
    cs->e = entries;
    cs->n = 0;
    cs->cap = cap;
    cs->overflow = false;
    cs->n_reloc = 0;
}

/* Append one write to register `reg` with its block's target id. */
void ork__cs_emit(struct ork_cs *cs, uint16_t reg, uint32_t value);
/* Append a raw entry (trailer entries with special targets). */
void ork__cs_emit_raw(struct ork_cs *cs, uint64_t entry);
/* Record a DMA range used by the program and return its address (for use inside EMIT). */
uint32_t ork__cs_reloc(struct ork_cs *cs, uint16_t reg, uint32_t iova, uint64_t len, bool write);

#define EMIT(cs, REG, value) ork__cs_emit((cs), ORK_REG_##REG, (value))

/* Check a task against the per-program limits (spec §5.1, field widths §3.1). 0 or ORK_EINVAL
 * with a message naming the field. */
int ork__mm_task_check(const struct ork_mm_task *t);

/* Emit the 112-entry program of one matmul task into `out` (ORK_PROG_ENTRIES entries, host
 * order): 108 counted writes in §3.1 order, duplicates written with the same value (§3.2),
 * then a terminal trailer (#108 null, #109 amount 0, marker, OPERATION_ENABLE 0x0d).
 * `relocs` (may be NULL) receives the task's DMA ranges (A, B, C), `*n_relocs` their count. */
int ork__prog_emit_matmul(const struct ork_mm_task *t, uint64_t *out,
                          struct ork_prog_reloc *relocs, uint32_t *n_relocs);

/* Set a program's trailer to chain to the next program at `next_iova` of `next_counted`
 * counted entries (spec §8.3), or make it terminal when next_iova == 0. */
void ork__prog_set_next(uint64_t *prog, uint32_t next_iova, uint32_t next_counted);

/* Chain programs laid out at iovas[i] (host copies progs[i]) so that program i continues with
 * program i+1; the last is terminal. ORK_EINVAL for a misaligned address. */
int ork__prog_link(uint64_t *const *progs, const uint32_t *iovas, uint32_t n);

/* Known buffer ranges for validation. */
struct ork_iova_range {
    uint32_t iova;
    uint64_t size;
};

/* Refuse any address outside a known buffer (spec §14.3 ADDR_ZERO / ADDR_MISALIGNED / ADDR_OOB)
 * and outputs that overlap a program (OVERLAP). Returns 0 or ORK_EFAULT with a message naming
 * the task and register. */
int ork__prog_validate(const struct ork_prog_reloc *relocs, uint32_t n_relocs, uint32_t task,
                       const struct ork_iova_range *bufs, uint32_t n_bufs);

/* Copy a program to device memory as little-endian u64 entries (spec §2.1). */
void ork__prog_store(void *dst, const uint64_t *prog, uint32_t n);

#endif
