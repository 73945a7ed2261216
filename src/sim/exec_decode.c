/* exec_decode.c -- regcmd program decoder of the simulator's executor: one task's fetched
 * entries -> register file + trailer (spec §2, §3.2, §8.3), with the program/encoding
 * hazards of §14.1 (TRAILER_MISSING, AMOUNT_MISMATCH, TARGET_REG_MISMATCH, DUP_DIVERGENT,
 * ODD_AMOUNT). Also the hazard-id names.
 *
 * This file does not interpret register values (hazard_check.c does) and never follows the
 * chain (the task walker in sim_*.c does, from the trailer reported here). */
#include "sim_exec.h"

#include <string.h>

#include <ork/debug.h>
#include <ork/error.h>
#include <ork/log.h>

#include <ork/regs.h>

/* ---- hazard names ------------------------------------------------------------------------- */

static const char *const hazard_names[ORK_SIM_HAZARD_COUNT] = {
#define ORK_SIM_HAZARD_NAME_(name, desc) #name,
    ORK_SIM_HAZARD_MAP(ORK_SIM_HAZARD_NAME_)
#undef ORK_SIM_HAZARD_NAME_
};

static const char *const hazard_descs[ORK_SIM_HAZARD_COUNT] = {
#define ORK_SIM_HAZARD_DESC_(name, desc) desc,
    ORK_SIM_HAZARD_MAP(ORK_SIM_HAZARD_DESC_)
#undef ORK_SIM_HAZARD_DESC_
};

const char *ork__sim_hazard_name(enum ork_sim_hazard h)
{
    return (unsigned)h < ORK_SIM_HAZARD_COUNT ? hazard_names[h] : "?";
}

const char *ork__sim_hazard_desc(enum ork_sim_hazard h)
{
    return (unsigned)h < ORK_SIM_HAZARD_COUNT ? hazard_descs[h] : "?";
}

/* ---- entries (spec §2.1, §2.2) ---------------------------------------------------------------- */

/* The 4 trailer entries (spec §2.3, §3.1 #108-#111) end with OPERATION_ENABLE. */
#define TRAILER_ENTRIES 4u
#define ENTRY_BYTES 8u

const char *ork__sim_reg_name(uint32_t reg)
{
    const struct ork_reg_info *r = reg <= 0xffffu ? ork_reg_lookup((uint16_t)reg) : NULL;
    return r ? r->name : "unknown register";
}

static uint64_t entry_at(const void *entries, size_t i)
{
    return ork_regcmd_load((const uint8_t *)entries + i * ENTRY_BYTES);
}

/* Registers written as streaming ports (many different values by design, spec §7): exempt
 * from DUP_DIVERGENT. */
static bool reg_is_port(uint16_t reg)
{
    return reg == ORK_REG_DPU_LUT_INDEX || reg == ORK_REG_DPU_LUT_DATA;
}

static void set_warning(uint64_t *w, enum ork_sim_hazard h)
{
    *w |= 1ull << h;
}

int ork__sim_decode(const void *entries, size_t n_fetched, const struct ork_sim_task_in *t,
                    struct ork_sim_regfile *rf, struct ork_sim_decoded *out)
{
    memset(rf, 0, sizeof(*rf));
    memset(out, 0, sizeof(*out));
    uint32_t ti = t->index;
    const char *op_name = ork__sim_reg_name(ORK_REG_PC_OPERATION_ENABLE);

    /* The program ends at the first OPERATION_ENABLE entry: the PC starts the blocks there
     * (spec §8.3). Entries fetched after it (padding of an odd count) are not applied. */
    size_t p = n_fetched;
    for (size_t i = 0; i < n_fetched; i++) {
        if (ork_regcmd_decode(entry_at(entries, i)).target == ORK_TARGET_PC_OPEN) {
            p = i;
            break;
        }
    }
    if (p == n_fetched)
        return ork_errorf(ORK_EHAZARD,
                          "task %u: TRAILER_MISSING: no OPERATION_ENABLE entry (target 0x%04x, "
                          "%s) in the %zu entries fetched from 0x%08x (regcfg_amount %u): "
                          "the job never starts (§2.3, §14.1)",
                          ti, ORK_TARGET_PC_OPEN, op_name, n_fetched, t->regcmd_addr,
                          t->regcfg_amount);
    if (p < TRAILER_ENTRIES - 1)
        return ork_errorf(ORK_EHAZARD,
                          "task %u: TRAILER_MISSING: %s at entry %zu leaves no room for the 3 "
                          "trailer entries before it (§2.3, §3.1)", ti, op_name, p);

    struct ork_regcmd op = ork_regcmd_decode(entry_at(entries, p));
    if (op.reg != ORK_REG_PC_OPERATION_ENABLE)
        return ork_errorf(ORK_EHAZARD,
                          "task %u: TARGET_REG_MISMATCH: entry %zu has the OPERATION_ENABLE "
                          "target 0x%04x but register 0x%04x (%s), expected %s (§2.2)",
                          ti, p, op.target, op.reg, ork__sim_reg_name(op.reg), op_name);

    /* Trailer: [next address | null] [next amount | null] [marker] [op-enable] (§3.1). */
    uint64_t marker = ork_regcmd_encode(ORK_TARGET_PC_MARKER, 0, 0);
    uint64_t e1 = entry_at(entries, p - 1);
    if (e1 != marker)
        return ork_errorf(ORK_EHAZARD,
                          "task %u: TRAILER_MISSING: entry %zu before %s is 0x%016llx, expected "
                          "the PC control marker 0x%016llx (§2.2, §3.1 #110)",
                          ti, p - 1, op_name, (unsigned long long)e1, (unsigned long long)marker);
    uint64_t e2 = entry_at(entries, p - 2);
    if (e2 != 0) {
        struct ork_regcmd amt = ork_regcmd_decode(e2);
        if (amt.target != ORK_TARGET_PC || amt.reg != ORK_REG_PC_REGISTER_AMOUNTS)
            return ork_errorf(ORK_EHAZARD,
                              "task %u: TRAILER_MISSING: trailer entry %zu is (target 0x%04x, "
                              "reg 0x%04x %s), expected %s (§3.1 #109, §8.3)",
                              ti, p - 2, amt.target, amt.reg, ork__sim_reg_name(amt.reg),
                              ork__sim_reg_name(ORK_REG_PC_REGISTER_AMOUNTS));
        out->next_amount = amt.value;
    }
    uint64_t e3 = entry_at(entries, p - 3);
    if (e3 != 0) {
        struct ork_regcmd nxt = ork_regcmd_decode(e3);
        if (nxt.target != ORK_TARGET_PC || nxt.reg != ORK_REG_PC_BASE_ADDRESS)
            return ork_errorf(ORK_EHAZARD,
                              "task %u: TRAILER_MISSING: trailer entry %zu is (target 0x%04x, "
                              "reg 0x%04x %s), expected %s or a null entry (§3.1 #108, §8.3)",
                              ti, p - 3, nxt.target, nxt.reg, ork__sim_reg_name(nxt.reg),
                              ork__sim_reg_name(ORK_REG_PC_BASE_ADDRESS));
        out->next_addr = nxt.value;
        out->has_next_addr = true;
    }
    out->enable = op.value;
    out->n_used = (uint32_t)(p + 1);
    out->n_counted = (uint32_t)(p - (TRAILER_ENTRIES - 1));

    /* AMOUNT_MISMATCH (§14.1): the descriptor's count must reach the trailer. An odd count
     * may be followed by one null padding entry before the trailer (§2.3). */
    uint32_t n = out->n_counted, want = t->regcfg_amount;
    if (want != 0 && n != want) {
        bool padded = (want & 1u) && n == want + 1 && entry_at(entries, want) == 0;
        if (!padded)
            return ork_errorf(ORK_EHAZARD,
                              "task %u: AMOUNT_MISMATCH: regcfg_amount is %u but the program at "
                              "0x%08x has %u entries before its trailer (§2.3, §14.1)",
                              ti, want, t->regcmd_addr, n);
    }
    if (want & 1u)
        set_warning(&out->warnings, ORK_SIM_HAZARD_ODD_AMOUNT);

    /* Apply the counted entries in order; last write wins (§3.2). */
    bool dup_reported = false;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t raw = entry_at(entries, i);
        if (raw == 0)
            continue; /* null entry: harmless (§2.2) */
        struct ork_regcmd e = ork_regcmd_decode(raw);
        enum ork_reg_block blk = ork_reg_block_of(e.reg);
        uint16_t want_target = ork_reg_target(e.reg);
        if (e.target == ORK_TARGET_PC_MARKER || e.target == ORK_TARGET_PC ||
            blk == ORK_BLOCK_PC)
            return ork_errorf(ORK_EHAZARD,
                              "task %u: TARGET_REG_MISMATCH: entry %u (target 0x%04x, reg "
                              "0x%04x %s) is a PC write before the trailer (§2.3, §3.1)",
                              ti, i, e.target, e.reg, ork__sim_reg_name(e.reg));
        if (want_target == 0 || e.target != want_target || (e.reg & 3u))
            return ork_errorf(ORK_EHAZARD,
                              "task %u: TARGET_REG_MISMATCH: entry %u writes register 0x%04x "
                              "(%s) with target 0x%04x; that register needs target 0x%04x "
                              "(§2.2, §14.1)",
                              ti, i, e.reg, ork__sim_reg_name(e.reg), e.target, want_target);
        uint32_t w = e.reg / 4u;
        bool was = (rf->written[w / 64] >> (w % 64)) & 1u;
        if (was && rf->val[w] != e.value && !reg_is_port(e.reg)) {
            set_warning(&out->warnings, ORK_SIM_HAZARD_DUP_DIVERGENT);
            if (!dup_reported && ork_debug(ORK_DBG_SIM))
                ORK_LOGW("sim: task %u: DUP_DIVERGENT: %s written 0x%x then 0x%x at entry %u; "
                         "the later write is in force (§3.2)",
                         ti, ork__sim_reg_name(e.reg), rf->val[w], e.value, i);
            dup_reported = true;
        }
        rf->val[w] = e.value;
        rf->written[w / 64] |= 1ull << (w % 64);
    }
    return 0;
}
