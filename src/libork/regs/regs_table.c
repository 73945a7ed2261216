/* regs_table.c -- the register and field tables expanded from ORK_REG_TABLE (include/ork/regs.h),
 * lookup by offset and name, entry classification and the pretty-printer.
 *
 * No offsets are written here: every number comes from the X-macro table. This file does not
 * know the matmul rules (program.c) nor the hazard rules (the simulator). */
#include <ork/regs.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Combined position of each register and field in the table, and the register's index among
 * registers: the number of fields before register r is pos(r) - index(r). */
#define POS_R(b, n, off, desc) POS_R_##b##_##n,
#define POS_F(b, n, f, hi, lo) POS_F_##b##_##n##_##f,
enum { ORK_REG_TABLE(POS_R, POS_F) POS_COUNT_ };
#define IDX_R(b, n, off, desc) IDX_R_##b##_##n,
enum { ORK_REG_TABLE(IDX_R, ORK__NOTHING) REG_COUNT_ };

#define INFO_R(b, n, off, desc) \
    { (off), ORK_BLOCK_##b, #b "_" #n, (desc), (uint16_t)(POS_R_##b##_##n - IDX_R_##b##_##n) },
static const struct ork_reg_info reg_table[] = { ORK_REG_TABLE(INFO_R, ORK__NOTHING) };

#define INFO_F(b, n, f, hi, lo) { ORK_REG_##b##_##n, (hi), (lo), #f },
static const struct ork_reg_field field_table[] = { ORK_REG_TABLE(ORK__NOTHING, INFO_F) };

#define N_REGS (sizeof reg_table / sizeof reg_table[0])
#define N_FIELDS (sizeof field_table / sizeof field_table[0])

_Static_assert(N_REGS == REG_COUNT_, "register count");
_Static_assert(N_REGS + N_FIELDS == POS_COUNT_, "table count");

const struct ork_reg_info *ork_reg_lookup(uint16_t offset)
{
    /* Offsets ascend through the table (checked by tests/unit/test_regs.c): binary search. */
    size_t lo = 0, hi = N_REGS;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (reg_table[mid].offset == offset)
            return &reg_table[mid];
        if (reg_table[mid].offset < offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const struct ork_reg_info *ork_reg_find(const char *name)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < N_REGS; i++)
        if (!strcmp(reg_table[i].name, name))
            return &reg_table[i];
    return NULL;
}

const struct ork_reg_info *ork_reg_all(size_t *n)
{
    *n = N_REGS;
    return reg_table;
}

const struct ork_reg_field *ork_reg_fields(const struct ork_reg_info *r, size_t *n)
{
    size_t i = r->field_start, k = 0;
    while (i + k < N_FIELDS && field_table[i + k].reg == r->offset)
        k++;
    *n = k;
    return k ? &field_table[i] : NULL;
}

/* Block ranges, spec §1.1 (the high nibble of the per-core offset selects the block). */
enum ork_reg_block ork_reg_block_of(uint16_t offset)
{
    switch (offset >> 12) {
    case 0x0: return ORK_BLOCK_PC;
    case 0x1: return ORK_BLOCK_CNA;
    case 0x3: return ORK_BLOCK_CORE;
    case 0x4: return ORK_BLOCK_DPU;
    case 0x5: return ORK_BLOCK_DPU_RDMA;
    case 0x6: return ORK_BLOCK_PPU;
    case 0x7: return ORK_BLOCK_PPU_RDMA;
    default: return ORK_BLOCK_NONE;
    }
}

static const struct {
    const char *name;
    uint16_t target;
} blocks[ORK_BLOCK_COUNT] = {
    [ORK_BLOCK_PC] = { "PC", ORK_TARGET_PC },
    [ORK_BLOCK_CNA] = { "CNA", ORK_TARGET_CNA },
    [ORK_BLOCK_CORE] = { "CORE", ORK_TARGET_CORE },
    [ORK_BLOCK_DPU] = { "DPU", ORK_TARGET_DPU },
    [ORK_BLOCK_DPU_RDMA] = { "DPU_RDMA", ORK_TARGET_DPU_RDMA },
    [ORK_BLOCK_PPU] = { "PPU", ORK_TARGET_PPU },
    [ORK_BLOCK_PPU_RDMA] = { "PPU_RDMA", ORK_TARGET_PPU_RDMA },
};

const char *ork_reg_block_name(enum ork_reg_block b)
{
    return (b >= 0 && b < ORK_BLOCK_COUNT) ? blocks[b].name : "?";
}

uint16_t ork_reg_block_target(enum ork_reg_block b)
{
    return (b >= 0 && b < ORK_BLOCK_COUNT) ? blocks[b].target : 0;
}

static enum ork_reg_block block_of_target(uint16_t target)
{
    for (int b = 0; b < ORK_BLOCK_COUNT; b++)
        if (blocks[b].target == target)
            return (enum ork_reg_block)b;
    return ORK_BLOCK_NONE;
}

enum ork_regcmd_kind ork_regcmd_classify(uint64_t entry)
{
    struct ork_regcmd c = ork_regcmd_decode(entry);
    if (entry == 0)
        return ORK_REGCMD_NULL;
    if (c.target == ORK_TARGET_PC_MARKER)
        return (c.reg == 0 && c.value == 0) ? ORK_REGCMD_MARKER : ORK_REGCMD_TARGET_MISMATCH;
    if (c.target == ORK_TARGET_PC_OPEN)
        return c.reg == ORK_REG_PC_OPERATION_ENABLE ? ORK_REGCMD_OP_ENABLE
                                                    : ORK_REGCMD_TARGET_MISMATCH;
    enum ork_reg_block tb = block_of_target(c.target);
    if (tb == ORK_BLOCK_NONE)
        return ORK_REGCMD_UNKNOWN_TARGET;
    if (ork_reg_block_of(c.reg) != tb)
        return ORK_REGCMD_TARGET_MISMATCH;
    if (!ork_reg_lookup(c.reg))
        return ORK_REGCMD_UNKNOWN_REG;
    return ORK_REGCMD_WRITE;
}

const char *ork_regcmd_kind_name(enum ork_regcmd_kind k)
{
    switch (k) {
    case ORK_REGCMD_WRITE: return "write";
    case ORK_REGCMD_NULL: return "null";
    case ORK_REGCMD_MARKER: return "marker";
    case ORK_REGCMD_OP_ENABLE: return "op-enable";
    case ORK_REGCMD_UNKNOWN_TARGET: return "UNKNOWN_TARGET";
    case ORK_REGCMD_UNKNOWN_REG: return "UNKNOWN_REG";
    case ORK_REGCMD_TARGET_MISMATCH: return "TARGET_REG_MISMATCH";
    }
    return "?";
}

/* snprintf-like appender: keeps counting the needed length after the buffer is full. */
struct out {
    char *buf;
    size_t size;
    size_t len;
};

__attribute__((format(printf, 2, 3))) static void put(struct out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = o->len < o->size ? o->size - o->len : 0;
    int n = vsnprintf(room ? o->buf + o->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->len += (size_t)n;
}

static void format_reg(struct out *o, const char *name_override, uint16_t offset, uint32_t value)
{
    const struct ork_reg_info *r = ork_reg_lookup(offset);
    if (name_override)
        put(o, "%s = 0x%08x", name_override, value);
    else if (r)
        put(o, "%s = 0x%08x", r->name, value);
    else
        put(o, "REG_0x%04x = 0x%08x", offset, value);
    size_t nf = 0;
    const struct ork_reg_field *f = r ? ork_reg_fields(r, &nf) : NULL;
    if (!nf)
        return;
    uint32_t covered = 0;
    put(o, " {");
    for (size_t i = 0; i < nf; i++) {
        uint32_t mask = ORK__FIELD_MASK(f[i].hi, f[i].lo);
        uint32_t v = (value >> f[i].lo) & mask;
        covered |= mask << f[i].lo;
        if (f[i].hi - f[i].lo >= 16)
            put(o, " %s=0x%x", f[i].name, v);
        else
            put(o, " %s=%u", f[i].name, v);
    }
    if (value & ~covered)
        put(o, " ?=0x%x", value & ~covered);
    put(o, " }");
}

int ork_reg_format(char *buf, size_t size, uint16_t offset, uint32_t value)
{
    struct out o = { buf, size, 0 };
    if (size)
        buf[0] = 0;
    format_reg(&o, NULL, offset, value);
    return (int)o.len;
}

int ork_regcmd_format(char *buf, size_t size, uint64_t entry)
{
    struct out o = { buf, size, 0 };
    struct ork_regcmd c = ork_regcmd_decode(entry);
    enum ork_regcmd_kind k = ork_regcmd_classify(entry);
    if (size)
        buf[0] = 0;
    put(&o, "%04x ", c.target);
    switch (k) {
    case ORK_REGCMD_NULL:
        put(&o, "(null)");
        break;
    case ORK_REGCMD_MARKER:
        put(&o, "PC_MARKER");
        break;
    case ORK_REGCMD_OP_ENABLE:
        format_reg(&o, NULL, c.reg, c.value);
        break;
    default:
        format_reg(&o, NULL, c.reg, c.value);
        break;
    }
    if (k != ORK_REGCMD_WRITE && k != ORK_REGCMD_NULL && k != ORK_REGCMD_MARKER &&
        k != ORK_REGCMD_OP_ENABLE)
        put(&o, "  !! %s", ork_regcmd_kind_name(k));
    return (int)o.len;
}
