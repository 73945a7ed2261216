/* test_exec_util.h -- helpers shared by the executor tests (test_exec*.c, test_hazard*.c):
 * a builder for the 108-entry matmul program of spec §3.1 (written from the spec table with the
 * register database's encoders, independently of libork's emitter), a fake device memory of a
 * few buffers for struct ork_sim_mem, the spec's weight-layout formulas (§4.3, §4.4) and naive
 * CPU references. Header-only (static) so each test stays one process. */
#ifndef TEST_EXEC_UTIL_H
#define TEST_EXEC_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ork/regs.h>

#include "sim/sim_exec.h"

/* ---- program builder (spec §3.1) -------------------------------------------------------------- */

enum tmode { TM_I8_I32, TM_F16_F32, TM_I8_I8, TM_I8_I16, TM_F16_F16 };

struct tprog {
    enum tmode mode;
    uint32_t m, k, n, s;       /* s = 0: s = N */
    uint32_t a, b, c;          /* IOVAs */
    uint32_t cbuf;             /* 0: the §5.3/§5.4 schedule value, else forced */
    uint32_t mult, shift;      /* requant modes (§6.3) */
    int32_t offset;
    uint32_t line_stride;      /* 0: dense K*esz/16 */
};

#define TP_ENTRIES_MAX 128
#define TP_COUNTED 108u        /* §2.3 */
#define TP_TRAILER 4u

struct tbuilt {
    uint64_t e[TP_ENTRIES_MAX]; /* host-order u64 entries (little-endian host) */
    uint32_t n;                 /* total entries including the trailer */
    uint32_t amount;            /* counted entries */
};

static inline bool tp_fp16_in(enum tmode md)
{
    return md == TM_F16_F32 || md == TM_F16_F16;
}
static inline uint32_t tp_esz(enum tmode md)
{
    return tp_fp16_in(md) ? 2 : 1;
}
static inline uint32_t tp_osz(enum tmode md)
{
    switch (md) {
    case TM_I8_I8: return 1;
    case TM_I8_I16: case TM_F16_F16: return 2;
    default: return 4;
    }
}

/* CBUF_CON0 by the schedule (§5.3 int8, §5.4 fp16), else 0xb1. */
static inline uint32_t tp_cbuf_rule(enum tmode md, uint32_t m, uint32_t k)
{
    uint32_t g = (m + 63) / 64;
    if (!tp_fp16_in(md)) {
        if (k % 512 || k > 4096 || m == 1)
            return 0xb1;
        uint32_t d = (k / 512) * g;
        if (d > 11)
            d = 11;
        return 192 - 15 * d;
    }
    if (m == 1 || k < 128 || k >= 2048 || (k & (k - 1)))
        return 0xb1;
    int base, slope;
    if (k == 128) {
        base = 184;
        slope = 7;
    } else {
        int s = (int)(k / 256);
        base = 177 - 15 * (s - 1);
        slope = 15 * s;
    }
    int v = base - slope * (int)(g - 1);
    return (uint32_t)(v < 0x1b ? 0x1b : v);
}

static inline void tp_emit(struct tbuilt *b, uint16_t reg, uint32_t v)
{
    b->e[b->n++] = ork_regcmd_encode(ork_reg_target(reg), reg, v);
}

static inline void tp_build(const struct tprog *p, struct tbuilt *b)
{
    memset(b, 0, sizeof(*b));
    uint32_t m = p->m, k = p->k, n = p->n, s = p->s ? p->s : p->n;
    uint32_t esz = tp_esz(p->mode), osz = tp_osz(p->mode);
    bool f16 = tp_fp16_in(p->mode);
    uint32_t cbuf = p->cbuf ? p->cbuf : tp_cbuf_rule(p->mode, m, k);
    uint32_t con1 = f16 ? 0x20000120u : 0x20000000u;
    uint32_t fmt = 0, ow = 0, sadd = 0, scale = 1, shift = 0;
    int32_t off = 0;
    switch (p->mode) {
    case TM_I8_I32: fmt = 0x80000000u; ow = 0x7fc; sadd = 0x80; break;
    case TM_F16_F32: fmt = 0xa8000002u; ow = 0x36e; sadd = 0x40; break;
    case TM_I8_I8: fmt = 0x00000000u; ow = 0x124; sadd = 0x20; scale = p->mult;
        shift = p->shift; off = p->offset; break;
    case TM_I8_I16: fmt = 0x20000000u; ow = 0x36e; sadd = 0x40; scale = p->mult;
        shift = p->shift; off = p->offset; break;
    case TM_F16_F16: fmt = 0x48000002u; ow = 0x126; sadd = 0x20; scale = 0x00010001u; break;
    }
    uint32_t rows = m + 1;
    tp_emit(b, ORK_REG_CNA_CBUF_CON0, cbuf);                                   /* #0 */
    tp_emit(b, ORK_REG_CNA_DCOMP_REGNUM, 0);
    tp_emit(b, ORK_REG_CNA_DCOMP_CTRL, 0);
    tp_emit(b, ORK_REG_CNA_CONV_CON1, con1);
    tp_emit(b, ORK_REG_DPU_S_POINTER, 0xe);                                    /* #4 */
    tp_emit(b, ORK_REG_CNA_CONV_CON1, con1);
    tp_emit(b, ORK_REG_CNA_CONV_CON2, m == 1 ? 0x20 : (16 * rows) & 0x3ff0);
    tp_emit(b, ORK_REG_CNA_CONV_CON3, 0x9);
    tp_emit(b, ORK_REG_CNA_DATA_SIZE0, 0x00010000u | m);                       /* #8 */
    tp_emit(b, ORK_REG_CNA_DATA_SIZE1, ((k - 1) << 16) | k);
    tp_emit(b, ORK_REG_CNA_DATA_SIZE2, 1);
    tp_emit(b, ORK_REG_CNA_DATA_SIZE3, m);
    tp_emit(b, ORK_REG_CNA_WEIGHT_SIZE0, k * n * esz);                         /* #12 */
    tp_emit(b, ORK_REG_CNA_WEIGHT_SIZE1, k * esz);
    tp_emit(b, ORK_REG_CNA_WEIGHT_SIZE2, 0x01010000u | n);
    tp_emit(b, ORK_REG_CNA_CBUF_CON0, cbuf);                                   /* #15 */
    tp_emit(b, ORK_REG_CNA_CBUF_CON1, (k * esz + 63) / 64);
    tp_emit(b, ORK_REG_CNA_CVT_CON0, 0xb);
    tp_emit(b, ORK_REG_CNA_CVT_CON1, 0x10000);
    tp_emit(b, ORK_REG_CNA_CVT_CON2, 0x10000);
    tp_emit(b, ORK_REG_CNA_CVT_CON3, 0x10000);
    tp_emit(b, ORK_REG_CNA_CVT_CON4, 0x10000);
    tp_emit(b, ORK_REG_CNA_FC_CON0, 0);
    tp_emit(b, ORK_REG_CNA_FC_CON1, 0);
    tp_emit(b, ORK_REG_CNA_PAD_CON0, 0);
    tp_emit(b, ORK_REG_CNA_FEATURE_DATA_ADDR, p->a);                           /* #25 */
    tp_emit(b, ORK_REG_CNA_FC_CON2, 0);
    tp_emit(b, ORK_REG_CNA_DMA_CON0, 0x000f000f);
    tp_emit(b, ORK_REG_CNA_DMA_CON1, p->line_stride ? p->line_stride : k * esz / 16);
    tp_emit(b, ORK_REG_CNA_DMA_CON2, 0);
    tp_emit(b, ORK_REG_CNA_FC_DATA_SIZE0, 0x00010000u | m);                    /* #30 */
    tp_emit(b, ORK_REG_CNA_FC_DATA_SIZE1, k);
    tp_emit(b, ORK_REG_CNA_DCOMP_CTRL, 0);
    tp_emit(b, ORK_REG_CNA_DCOMP_REGNUM, 0);
    tp_emit(b, ORK_REG_CNA_DCOMP_ADDR0, p->b);                                 /* #34 */
    for (uint16_t r = ORK_REG_CNA_DCOMP_AMOUNT0; r <= ORK_REG_CNA_DCOMP_AMOUNT15; r += 4)
        tp_emit(b, r, 0);                                                      /* #35-#50 */
    tp_emit(b, ORK_REG_CNA_CVT_CON5, 0);
    tp_emit(b, ORK_REG_CNA_PAD_CON1, 0);
    tp_emit(b, ORK_REG_CORE_MISC_CFG, f16 ? 0x201 : 0x1);                      /* #53 */
    tp_emit(b, ORK_REG_CORE_DATAOUT_SIZE_0, (m - 1) << 16);
    tp_emit(b, ORK_REG_CORE_DATAOUT_SIZE_1, n - 1);
    tp_emit(b, ORK_REG_CORE_CLIP_TRUNCATE, 0);
    tp_emit(b, ORK_REG_CORE_UNDOC_3030, 0);
    tp_emit(b, ORK_REG_DPU_FEATURE_MODE_CFG, 0x1e4);                           /* #58 */
    tp_emit(b, ORK_REG_DPU_DATA_FORMAT, fmt);
    tp_emit(b, ORK_REG_DPU_UNNAMED_4014, 0);
    tp_emit(b, ORK_REG_DPU_DST_BASE_ADDR, p->c);                               /* #61 */
    tp_emit(b, ORK_REG_DPU_DST_SURF_STRIDE, 0x10);
    tp_emit(b, ORK_REG_DPU_DATA_CUBE_WIDTH, 0);
    tp_emit(b, ORK_REG_DPU_DATA_CUBE_HEIGHT, m - 1);
    tp_emit(b, ORK_REG_DPU_DATA_CUBE_NOTCH_ADDR, ((s * osz / 16 - 1) << 16) | (n * osz / 16 - 1));
    tp_emit(b, ORK_REG_DPU_DATA_CUBE_CHANNEL, ((s - 1) << 16) | (n - 1));
    tp_emit(b, ORK_REG_DPU_BS_CFG, 0x53);                                      /* #67 */
    tp_emit(b, ORK_REG_DPU_BS_ALU_CFG, 0);
    tp_emit(b, ORK_REG_DPU_BS_MUL_CFG, 0);
    tp_emit(b, ORK_REG_DPU_BS_RELUX_CMP_VALUE, 0);
    tp_emit(b, ORK_REG_DPU_BS_OW_CFG, ow);                                     /* #71 */
    tp_emit(b, ORK_REG_DPU_BS_OW_OP, 0);
    tp_emit(b, ORK_REG_DPU_WDMA_SIZE_0, n - 1);
    tp_emit(b, ORK_REG_DPU_WDMA_SIZE_1, (m - 1) << 16);
    tp_emit(b, ORK_REG_DPU_BN_CFG, 0x53);                                      /* #75 */
    tp_emit(b, ORK_REG_DPU_BN_ALU_CFG, 0);
    tp_emit(b, ORK_REG_DPU_BN_MUL_CFG, 0);
    tp_emit(b, ORK_REG_DPU_BN_RELUX_CMP_VALUE, 0);
    tp_emit(b, ORK_REG_DPU_EW_CFG, 0x383);                                     /* #79 */
    tp_emit(b, ORK_REG_DPU_EW_CVT_OFFSET_VALUE, 0);
    tp_emit(b, ORK_REG_DPU_EW_CVT_SCALE_VALUE, 1);
    tp_emit(b, ORK_REG_DPU_EW_RELUX_CMP_VALUE, 0);
    tp_emit(b, ORK_REG_DPU_OUT_CVT_OFFSET, (uint32_t)off);                     /* #83 */
    tp_emit(b, ORK_REG_DPU_OUT_CVT_SCALE, scale);
    tp_emit(b, ORK_REG_DPU_OUT_CVT_SHIFT, shift);
    for (uint16_t r = ORK_REG_DPU_EW_OP_VALUE_0; r <= ORK_REG_DPU_EW_OP_VALUE_7; r += 4)
        tp_emit(b, r, 0);                                                      /* #86-#93 */
    tp_emit(b, ORK_REG_DPU_SURFACE_ADD, sadd);                                 /* #94 */
    tp_emit(b, ORK_REG_DPU_UNNAMED_40C4, 0);
    for (uint16_t r = ORK_REG_DPU_LUT_INDEX; r <= ORK_REG_DPU_LUT_CFG_9; r += 4)
        tp_emit(b, r, 0);                                                      /* #96-#107 */
    b->amount = b->n;
    b->e[b->n++] = 0;                                                          /* #108 */
    b->e[b->n++] = ork_regcmd_encode(ORK_TARGET_PC, ORK_REG_PC_REGISTER_AMOUNTS, 0);
    b->e[b->n++] = ork_regcmd_encode(ORK_TARGET_PC_MARKER, 0, 0);
    b->e[b->n++] = ork_regcmd_encode(ORK_TARGET_PC_OPEN, ORK_REG_PC_OPERATION_ENABLE,
                                     ORK_ENABLE_MATMUL);
}

/* Index of the LAST entry writing `reg` (the one in force, §3.2), or -1. */
static inline int tp_find(const struct tbuilt *b, uint16_t reg)
{
    for (int i = (int)b->amount - 1; i >= 0; i--)
        if ((b->e[i] & 0xffff) == reg && b->e[i] >> 48 != 0)
            return i;
    return -1;
}

/* Overwrite every write of `reg` with `v` (both copies of duplicated registers). */
static inline void tp_set(struct tbuilt *b, uint16_t reg, uint32_t v)
{
    for (uint32_t i = 0; i < b->amount; i++)
        if ((b->e[i] & 0xffff) == reg && b->e[i] >> 48 != 0)
            b->e[i] = ork_regcmd_encode((uint16_t)(b->e[i] >> 48), reg, v);
}

/* ---- fake device memory ------------------------------------------------------------------------ */

#define TMEM_MAX 8
struct tmem {
    struct { uint32_t iova; uint64_t size; uint8_t *host; } buf[TMEM_MAX];
    int n;
};

static inline void *tmem_map(void *ctx, uint32_t iova, uint64_t len, bool write)
{
    (void)write;
    struct tmem *mm = ctx;
    for (int i = 0; i < mm->n; i++)
        if (iova >= mm->buf[i].iova && (uint64_t)iova + len <= mm->buf[i].iova + mm->buf[i].size)
            return mm->buf[i].host + (iova - mm->buf[i].iova);
    return NULL;
}

/* Adds a zeroed, 64-byte-aligned buffer; returns its host pointer. */
static inline uint8_t *tmem_add(struct tmem *mm, uint32_t iova, uint64_t size)
{
    uint64_t rounded = (size + 63) & ~63ull;
    uint8_t *p = aligned_alloc(64, rounded ? rounded : 64);
    if (!p)
        abort();
    memset(p, 0, rounded ? rounded : 64);
    mm->buf[mm->n].iova = iova;
    mm->buf[mm->n].size = size;
    mm->buf[mm->n].host = p;
    mm->n++;
    return p;
}

static inline void tmem_free(struct tmem *mm)
{
    for (int i = 0; i < mm->n; i++)
        free(mm->buf[i].host);
    mm->n = 0;
}

static inline struct ork_sim_mem tmem_iface(struct tmem *mm)
{
    struct ork_sim_mem m = { mm, tmem_map };
    return m;
}

/* ---- layouts (spec §4.3, §4.4) --------------------------------------------------------------- */

static inline size_t tl_i8_offset(uint32_t k, uint32_t n, uint32_t K)
{
    return (size_t)(n / 32) * (K / 32) * 1024 + (size_t)(k / 32) * 1024 + (n % 32) * 32 + k % 32;
}

static inline size_t tl_f16_element(uint32_t k, uint32_t n, uint32_t K)
{
    return (size_t)(n / 16) * (K / 32) * 512 + (size_t)(k / 32) * 512 + (n % 16) * 32 + k % 32;
}

/* ---- deterministic data --------------------------------------------------------------------- */

static inline uint32_t trand(uint64_t *st)
{
    *st = *st * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*st >> 33);
}

/* fp16 bits of a "nice" value v = i/64 with |i| <= 127 (exactly representable). */
static inline uint16_t th_from_small(int i)
{
    if (i == 0)
        return 0;
    uint16_t sign = i < 0 ? 0x8000 : 0;
    uint32_t a = (uint32_t)(i < 0 ? -i : i);
    int e = 0;
    while ((a >> e) > 1)
        e++;                               /* a in [2^e, 2^(e+1)) */
    uint32_t mant = (a << (10 - e)) & 0x3ff; /* e <= 6 < 10 */
    int exp = e - 6 + 15;                  /* value = a/64 = a * 2^-6 */
    return (uint16_t)(sign | (exp << 10) | mant);
}

#endif
