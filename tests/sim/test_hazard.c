/* test_hazard.c -- every single-task hazard of spec §14 (plus §5.5 and §6.2) that the
 * simulator's executor detects: a hand-built program (§3.1) is altered to trigger it, and the
 * test expects the error code, the hazard id and the register name in the message (ERROR), or
 * the warning bit with a normal result (WARN). Also the §15.3 CBUF boundaries, §15.5 N limit
 * and §15.6 small-K requant vectors. Hazards of the walker (chains, task descriptors, domains,
 * submit flags) are tested with the walker. */
#include <stdio.h>

#include <ork/error.h>

#include "ork_test.h"
#include "test_exec_util.h"

#define A_IOVA 0x10000000u
#define B_IOVA 0x20000000u
#define C_IOVA 0x40000000u
#define PROG_IOVA 0x00100000u
#define TASKS_IOVA 0x00200000u

static struct ork_sim_regfile rf;

struct hres {
    int ret;
    uint64_t warnings;
    char msg[512];
};

static struct tprog prog(enum tmode md, uint32_t m, uint32_t k, uint32_t n)
{
    struct tprog p = { .mode = md, .m = m, .k = k, .n = n, .a = A_IOVA, .b = B_IOVA, .c = C_IOVA };
    return p;
}

/* Run the (possibly altered) program `b` of `p` on memory holding A, B and C sized for `p`
 * (timing-only: the check is what matters). `tin` NULL: the default descriptor. */
static struct hres run_built(const struct tprog *p, const struct tbuilt *b,
                             const struct ork_sim_task_in *tin, size_t n_fetched)
{
    struct tmem mem = { 0 };
    uint32_t s = p->s ? p->s : p->n;
    tmem_add(&mem, p->a, (uint64_t)p->m * p->k * tp_esz(p->mode));
    tmem_add(&mem, p->b, (uint64_t)p->k * p->n * tp_esz(p->mode));
    tmem_add(&mem, p->c, (uint64_t)p->m * s * tp_osz(p->mode));
    struct ork_sim_task_in t = { .index = 3, .regcmd_addr = PROG_IOVA, .regcfg_amount = b->amount,
                                 .enable_mask = ORK_ENABLE_MATMUL };
    if (tin)
        t = *tin;
    struct ork_sim_mem im = tmem_iface(&mem);
    struct ork_sim_stats st;
    struct hres r;
    ork_error_clear();
    r.ret = ork__sim_task_run(b->e, n_fetched ? n_fetched : b->n, &t, &im, true, &rf, NULL, &st);
    r.warnings = st.warnings;
    snprintf(r.msg, sizeof r.msg, "%s", ork_error_message());
    tmem_free(&mem);
    return r;
}

static struct hres run_prog(const struct tprog *p)
{
    struct tbuilt b;
    tp_build(p, &b);
    return run_built(p, &b, NULL, 0);
}

/* ERROR expected: code, hazard id and (when given) register name in the message, which also
 * names the task index. */
static void expect_err(struct hres r, int code, const char *hazard, const char *reg, int line)
{
    if (r.ret != code || !strstr(r.msg, hazard) || (reg && !strstr(r.msg, reg)) ||
        !strstr(r.msg, "task 3")) {
        fprintf(stderr, "%s:%d: expected %s (%d) naming %s; got %d: \"%s\"\n", __FILE__, line,
                hazard, code, reg ? reg : "-", r.ret, r.msg);
        ork_test_failures_++;
    }
}
#define EXPECT_ERR(r, code, hazard, reg) expect_err((r), (code), (hazard), (reg), __LINE__)

static void expect_ok(struct hres r, int line)
{
    if (r.ret != 0) {
        fprintf(stderr, "%s:%d: expected success; got %d: \"%s\"\n", __FILE__, line, r.ret, r.msg);
        ork_test_failures_++;
    }
}
#define EXPECT_OK(r) expect_ok((r), __LINE__)
#define HAS_WARN(r, h) (((r).warnings >> ORK_SIM_HAZARD_##h) & 1u)

/* ---- §14.1 program and encoding --------------------------------------------------------------- */

static void test_valid_programs_pass(void)
{
    static const enum tmode modes[] = { TM_I8_I32, TM_F16_F32, TM_F16_F16 };
    for (int i = 0; i < 3; i++) {
        struct tprog p = prog(modes[i], 4, 64, 32);
        struct hres r = run_prog(&p);
        EXPECT_OK(r);
        CHECK_EQ_INT(r.warnings, 0);
    }
    struct tprog p = prog(TM_I8_I8, 4, 512, 32);
    p.mult = 0x4000;
    p.shift = 14;
    EXPECT_OK(run_prog(&p));
    p.mode = TM_I8_I16;
    EXPECT_OK(run_prog(&p));
}

static void test_trailer_missing(void)
{
    struct tprog p = prog(TM_I8_I32, 4, 32, 32);
    struct tbuilt b;
    tp_build(&p, &b);
    /* only the counted entries fetched (rocket count 108 instead of 112, ROCKET_COUNT_SHORT) */
    EXPECT_ERR(run_built(&p, &b, NULL, b.amount), ORK_EHAZARD, "TRAILER_MISSING",
               "PC_OPERATION_ENABLE");
    /* op-enable replaced by a null entry */
    b.e[b.n - 1] = 0;
    EXPECT_ERR(run_built(&p, &b, NULL, 0), ORK_EHAZARD, "TRAILER_MISSING", "PC_OPERATION_ENABLE");
    /* marker missing before op-enable */
    tp_build(&p, &b);
    b.e[b.n - 2] = 0;
    EXPECT_ERR(run_built(&p, &b, NULL, 0), ORK_EHAZARD, "TRAILER_MISSING", "PC_OPERATION_ENABLE");
    /* wrong register in the amount slot */
    tp_build(&p, &b);
    b.e[b.n - 3] = ork_regcmd_encode(ORK_TARGET_PC, ORK_REG_PC_TASK_CON, 0);
    EXPECT_ERR(run_built(&p, &b, NULL, 0), ORK_EHAZARD, "TRAILER_MISSING", "PC_REGISTER_AMOUNTS");
    /* op-enable with a wrong register */
    tp_build(&p, &b);
    b.e[b.n - 1] = ork_regcmd_encode(ORK_TARGET_PC_OPEN, ORK_REG_PC_TASK_CON, 0xd);
    EXPECT_ERR(run_built(&p, &b, NULL, 0), ORK_EHAZARD, "TARGET_REG_MISMATCH",
               "PC_OPERATION_ENABLE");
}

static void test_trailer_chain_fields(void)
{
    struct tprog p = prog(TM_I8_I32, 4, 32, 32);
    struct tbuilt b;
    tp_build(&p, &b);
    b.e[b.amount] = ork_regcmd_encode(ORK_TARGET_PC, ORK_REG_PC_BASE_ADDRESS, 0x00300000);
    b.e[b.amount + 1] = ork_regcmd_encode(ORK_TARGET_PC, ORK_REG_PC_REGISTER_AMOUNTS, 0x37);
    struct ork_sim_task_in t = { .index = 3, .regcmd_addr = PROG_IOVA, .regcfg_amount = b.amount };
    struct ork_sim_decoded d;
    REQUIRE(ork__sim_decode(b.e, b.n, &t, &rf, &d) == 0);
    CHECK_EQ_INT(d.next_addr, 0x00300000);
    CHECK(d.has_next_addr);
    CHECK_EQ_INT(d.next_amount, 0x37);
    CHECK_EQ_INT(d.n_counted, 108);
    CHECK_EQ_INT(d.n_used, 112);
    CHECK_EQ_INT(d.enable, 0x0d);
    CHECK_EQ_INT(ork__sim_reg(&rf, ORK_REG_CNA_DATA_SIZE1), (31u << 16) | 32);
    CHECK(ork__sim_reg_written(&rf, ORK_REG_DPU_LUT_CFG_9));
    CHECK(!ork__sim_reg_written(&rf, ORK_REG_CNA_S_POINTER));
}

static void test_amount_mismatch(void)
{
    struct tprog p = prog(TM_I8_I32, 4, 32, 32);
    struct tbuilt b;
    tp_build(&p, &b);
    struct ork_sim_task_in t = { .index = 3, .regcmd_addr = PROG_IOVA, .regcfg_amount = 100 };
    EXPECT_ERR(run_built(&p, &b, &t, 0), ORK_EHAZARD, "AMOUNT_MISMATCH", NULL);
    t.regcfg_amount = 110;
    EXPECT_ERR(run_built(&p, &b, &t, 0), ORK_EHAZARD, "AMOUNT_MISMATCH", NULL);
    /* odd amount 107 + a null padding entry before the trailer: accepted with ODD_AMOUNT */
    tp_build(&p, &b);
    b.e[107] = 0; /* last LUT register write becomes the padding */
    t.regcfg_amount = 107;
    struct hres r = run_built(&p, &b, &t, 0);
    EXPECT_OK(r);
    CHECK(HAS_WARN(r, ODD_AMOUNT));
    /* odd amount without padding: fetched one entry past the trailer, WARN */
    tp_build(&p, &b);
    memmove(&b.e[106], &b.e[107], 5 * sizeof b.e[0]); /* drop one write: 107 counted */
    b.amount = 107;
    b.n = 111;
    b.e[111] = 0x1234; /* garbage after the trailer is never applied */
    t.regcfg_amount = 107;
    r = run_built(&p, &b, &t, 112);
    EXPECT_OK(r);
    CHECK(HAS_WARN(r, ODD_AMOUNT));
}

static void test_target_reg_mismatch(void)
{
    struct tprog p = prog(TM_I8_I32, 4, 32, 32);
    struct tbuilt b;
    tp_build(&p, &b);
    /* target CNA with a DPU register (the spec's example, §2.2) */
    int i = tp_find(&b, ORK_REG_DPU_DATA_FORMAT);
    b.e[i] = ork_regcmd_encode(ORK_TARGET_CNA, ORK_REG_DPU_DATA_FORMAT, 0x80000000u);
    EXPECT_ERR(run_built(&p, &b, NULL, 0), ORK_EHAZARD, "TARGET_REG_MISMATCH", "DPU_DATA_FORMAT");
    /* unknown target id */
    tp_build(&p, &b);
    i = tp_find(&b, ORK_REG_CNA_CONV_CON3);
    b.e[i] = ork_regcmd_encode(0x0301, ORK_REG_CNA_CONV_CON3, 9);
    EXPECT_ERR(run_built(&p, &b, NULL, 0), ORK_EHAZARD, "TARGET_REG_MISMATCH", "CNA_CONV_CON3");
    /* a PC write among the counted entries */
    tp_build(&p, &b);
    b.e[10] = ork_regcmd_encode(ORK_TARGET_PC, ORK_REG_PC_BASE_ADDRESS, 0x1000);
    EXPECT_ERR(run_built(&p, &b, NULL, 0), ORK_EHAZARD, "TARGET_REG_MISMATCH", "PC_BASE_ADDRESS");
}

/* DUP_DIVERGENT (§3.2): WARN, and the later write is the one in force. */
static void test_dup_divergent_last_wins(void)
{
    struct tprog p = prog(TM_I8_I32, 100, 2048, 32);
    struct tbuilt b;
    tp_build(&p, &b);
    CHECK_EQ_INT(ork_regcmd_decode(b.e[15]).value, 0x48);
    b.e[0] = ork_regcmd_encode(ORK_TARGET_CNA, ORK_REG_CNA_CBUF_CON0, 0xb1); /* stale first copy */
    struct hres r = run_built(&p, &b, NULL, 0);
    EXPECT_OK(r);
    CHECK(HAS_WARN(r, DUP_DIVERGENT));
    /* reversed: the stale value second is in force -> M_ABOVE_CAP (§3.2's multi-M-tile bug) */
    b.e[0] = ork_regcmd_encode(ORK_TARGET_CNA, ORK_REG_CNA_CBUF_CON0, 0x48);
    b.e[15] = ork_regcmd_encode(ORK_TARGET_CNA, ORK_REG_CNA_CBUF_CON0, 0xb1);
    EXPECT_ERR(run_built(&p, &b, NULL, 0), ORK_EHAZARD, "M_ABOVE_CAP", "CNA_CBUF_CON0");
}

static void test_inconsistent_geometry(void)
{
    static const uint16_t regs[] = {
        ORK_REG_CNA_DATA_SIZE1,      ORK_REG_CNA_DATA_SIZE3,       ORK_REG_CNA_WEIGHT_SIZE0,
        ORK_REG_CNA_WEIGHT_SIZE1,    ORK_REG_CNA_CBUF_CON1,        ORK_REG_CNA_DMA_CON1,
        ORK_REG_CNA_FC_DATA_SIZE0,   ORK_REG_CNA_FC_DATA_SIZE1,    ORK_REG_CORE_DATAOUT_SIZE_0,
        ORK_REG_CORE_DATAOUT_SIZE_1, ORK_REG_DPU_DATA_CUBE_HEIGHT, ORK_REG_DPU_WDMA_SIZE_0,
        ORK_REG_DPU_WDMA_SIZE_1,     ORK_REG_DPU_DATA_CUBE_CHANNEL, ORK_REG_DPU_DATA_CUBE_NOTCH_ADDR,
        ORK_REG_DPU_DATA_CUBE_WIDTH,
    };
    struct tprog p = prog(TM_I8_I32, 4, 64, 64);
    for (size_t i = 0; i < sizeof regs / sizeof regs[0]; i++) {
        struct tbuilt b;
        tp_build(&p, &b);
        int at = tp_find(&b, regs[i]);
        REQUIRE(at >= 0);
        uint32_t v = ork_regcmd_decode(b.e[at]).value;
        /* low-half changes: M/N/K-derived fields (DMA_CON1 lower = pitch below K) */
        uint32_t bad = regs[i] == ORK_REG_CNA_DMA_CON1  ? v - 1           /* pitch < K */
                       : regs[i] == ORK_REG_CNA_DATA_SIZE1 ? v ^ (1u << 16) /* K-1 field */
                                                           : v ^ 1u;
        tp_set(&b, regs[i], bad);
        EXPECT_ERR(run_built(&p, &b, NULL, 0), ORK_EHAZARD, "INCONSISTENT_GEOMETRY",
                   ork_reg_lookup(regs[i])->name);
    }
    /* a derived register not written at all */
    struct tbuilt b;
    tp_build(&p, &b);
    b.e[tp_find(&b, ORK_REG_CORE_DATAOUT_SIZE_1)] = 0;
    struct hres r = run_built(&p, &b, NULL, 0);
    EXPECT_ERR(r, ORK_EHAZARD, "INCONSISTENT_GEOMETRY", "CORE_DATAOUT_SIZE_1");
    CHECK(strstr(r.msg, "not written") != NULL);
    /* output-write configuration of another mode (§6.2) */
    tp_build(&p, &b);
    tp_set(&b, ORK_REG_DPU_BS_OW_CFG, 0x36e);
    EXPECT_ERR(run_built(&p, &b, NULL, 0), ORK_EHAZARD, "INCONSISTENT_GEOMETRY", "DPU_BS_OW_CFG");
    /* s < N */
    p.s = 0;
    tp_build(&p, &b);
    tp_set(&b, ORK_REG_DPU_DATA_CUBE_CHANNEL, (31u << 16) | 63);
    EXPECT_ERR(run_built(&p, &b, NULL, 0), ORK_EHAZARD, "INCONSISTENT_GEOMETRY",
               "DPU_DATA_CUBE_CHANNEL");
}

static void test_mixed_precision(void)
{
    struct tprog p = prog(TM_F16_F32, 4, 32, 16);
    struct tbuilt b;
    tp_build(&p, &b);
    tp_set(&b, ORK_REG_CORE_MISC_CFG, 0x1); /* fp16 A, int8 MAC */
    EXPECT_ERR(run_built(&p, &b, NULL, 0), ORK_EHAZARD, "MIXED_PRECISION", "CORE_MISC_CFG");
    tp_build(&p, &b);
    tp_set(&b, ORK_REG_DPU_DATA_FORMAT, 0xa0000002u); /* DPU IN_PRECISION int8 */
    EXPECT_ERR(run_built(&p, &b, NULL, 0), ORK_EHAZARD, "MIXED_PRECISION", "DPU_DATA_FORMAT");
    p = prog(TM_I8_I32, 4, 32, 32);
    tp_build(&p, &b);
    tp_set(&b, ORK_REG_CNA_CONV_CON1, 0x20000120u); /* CNA fp16, CORE/DPU int8 */
    EXPECT_ERR(run_built(&p, &b, NULL, 0), ORK_EHAZARD, "MIXED_PRECISION", "CNA_CONV_CON1");
}

static void test_enable_mismatch(void)
{
    struct tprog p = prog(TM_I8_I32, 4, 32, 32);
    struct tbuilt b;
    tp_build(&p, &b);
    b.e[b.n - 1] = ork_regcmd_encode(ORK_TARGET_PC_OPEN, ORK_REG_PC_OPERATION_ENABLE, 0x09);
    struct ork_sim_task_in t = { .index = 3, .regcmd_addr = PROG_IOVA, .regcfg_amount = b.amount };
    EXPECT_ERR(run_built(&p, &b, &t, 0), ORK_EHAZARD, "ENABLE_MISMATCH", "PC_OPERATION_ENABLE");
    /* a program that configures DPU_RDMA but enables 0x0d hangs */
    tp_build(&p, &b);
    b.e[b.amount - 1] = ork_regcmd_encode(ORK_TARGET_DPU_RDMA, ORK_REG_DPU_RDMA_S_POINTER, 0x30);
    EXPECT_ERR(run_built(&p, &b, NULL, 0), ORK_EHAZARD, "ENABLE_MISMATCH", "PC_OPERATION_ENABLE");
    /* descriptor enable_mask differs from the trailer's: WARN */
    tp_build(&p, &b);
    t.enable_mask = 0x1d;
    struct hres r = run_built(&p, &b, &t, 0);
    EXPECT_OK(r);
    CHECK(HAS_WARN(r, ENABLE_MISMATCH));
}

/* ---- §14.2 shapes and CBUF ---------------------------------------------------------------------- */

static void test_alignment(void)
{
    struct tprog p = prog(TM_I8_I32, 4, 48, 32);
    EXPECT_ERR(run_prog(&p), ORK_EHAZARD, "K_ALIGN", "CNA_DATA_SIZE1");
    p = prog(TM_I8_I32, 4, 32, 48);
    EXPECT_ERR(run_prog(&p), ORK_EHAZARD, "N_ALIGN", "CNA_WEIGHT_SIZE2");
    p = prog(TM_F16_F32, 4, 32, 24);
    EXPECT_ERR(run_prog(&p), ORK_EHAZARD, "N_ALIGN", "CNA_WEIGHT_SIZE2");
    p = prog(TM_F16_F32, 4, 32, 48); /* fp16 N%16 == 0 is fine */
    EXPECT_OK(run_prog(&p));
}

/* §15.5 */
static void test_n_above_8192(void)
{
    struct tprog p = prog(TM_I8_I32, 1, 32, 8224);
    EXPECT_ERR(run_prog(&p), ORK_EHAZARD, "N_ABOVE_8192", "CNA_WEIGHT_SIZE2");
    p = prog(TM_I8_I32, 1, 32, 8192);
    EXPECT_OK(run_prog(&p));
}

/* §15.3: the schedule value at M_max is OK, at M_max + 1 M_ABOVE_CAP. */
static void test_cbuf_boundaries(void)
{
    static const struct { enum tmode md; uint32_t k, ok, bad; } v[] = {
        { TM_I8_I32, 512, 704, 705 },  { TM_I8_I32, 1024, 320, 321 },
        { TM_I8_I32, 2048, 128, 129 }, { TM_I8_I32, 4096, 64, 65 },
        { TM_F16_F32, 256, 704, 705 }, { TM_F16_F32, 512, 352, 353 },
        { TM_F16_F32, 1024, 176, 177 }, { TM_F16_F32, 2048, 8, 9 },
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        struct tprog p = prog(v[i].md, v[i].ok, v[i].k, 32);
        struct hres r = run_prog(&p);
        EXPECT_OK(r);
        CHECK(!HAS_WARN(r, CBUF_UNVALIDATED));
        p.m = v[i].bad;
        r = run_prog(&p);
        EXPECT_ERR(r, ORK_EHAZARD, "M_ABOVE_CAP", "CNA_DATA_SIZE0");
        if (!strstr(r.msg, "CNA_CBUF_CON0")) {
            fprintf(stderr, "  message lacks CNA_CBUF_CON0: %s\n", r.msg);
            ork_test_failures_++;
        }
    }
    /* fp16 K = 128: M = 256 OK; beyond it the envelope is non-monotonic (§5.4). With the
     * schedule's values M = 320 gets 0x9c (12 data banks: CBUF_WRONG, §5.5 evaluates it
     * first) and M = 384 gets 0x95, which holds the rows but is above the validated 256. */
    struct tprog p = prog(TM_F16_F32, 256, 128, 32);
    EXPECT_OK(run_prog(&p));
    p.m = 320;
    EXPECT_ERR(run_prog(&p), ORK_EHAZARD, "CBUF_WRONG", "CNA_CBUF_CON0");
    p.m = 384;
    EXPECT_ERR(run_prog(&p), ORK_EHAZARD, "FP16_K128", "CNA_DATA_SIZE0");
}

/* §15.3: 0x1040 values the schedule produces are accepted without CBUF_UNVALIDATED; others
 * that still hold the rows are accepted with it. */
static void test_cbuf_values(void)
{
    static const struct { enum tmode md; uint32_t m, k, v; } ok[] = {
        { TM_I8_I32, 100, 2048, 0x48 }, { TM_I8_I32, 300, 1024, 0x2a },
        { TM_F16_F32, 340, 512, 0x1b }, { TM_F16_F32, 200, 128, 0xa3 },
        { TM_I8_I32, 1, 4096, 0xb1 },   { TM_I8_I32, 32, 1024, 0xb1 },
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        struct tprog p = prog(ok[i].md, ok[i].m, ok[i].k, 32);
        p.cbuf = ok[i].v;
        struct hres r = run_prog(&p);
        EXPECT_OK(r);
        CHECK(!HAS_WARN(r, CBUF_UNVALIDATED));
    }
    struct tprog p = prog(TM_I8_I32, 64, 512, 32);
    p.cbuf = 0x93; /* 3 data banks where the rule says 1: holds the rows, unvalidated */
    struct hres r = run_prog(&p);
    EXPECT_OK(r);
    CHECK(HAS_WARN(r, CBUF_UNVALIDATED));
    p.cbuf = 0x20b1; /* WEIGHT_REUSE set */
    r = run_prog(&p);
    EXPECT_OK(r);
    CHECK(HAS_WARN(r, CBUF_FLAGS_UNVALIDATED));
}

static void test_cbuf_hang_wrong(void)
{
    struct tprog p = prog(TM_I8_I32, 4, 32, 32);
    p.cbuf = 0x0c; /* 12 data banks, 0 weight banks */
    EXPECT_ERR(run_prog(&p), ORK_EHAZARD, "CBUF_HANG", "CNA_CBUF_CON0");
    p.cbuf = 0xc0; /* 0 data banks */
    EXPECT_ERR(run_prog(&p), ORK_EHAZARD, "CBUF_WRONG", "CNA_CBUF_CON0");
    p.cbuf = 0x1c; /* 12 data banks */
    EXPECT_ERR(run_prog(&p), ORK_EHAZARD, "CBUF_WRONG", "CNA_CBUF_CON0");
}

/* SCHEDULE_FLOOR_BUG (§14.2): M = 100 at K = 2048 with the <=64-row value 0x84 is caught as
 * M_ABOVE_CAP. */
static void test_schedule_floor_bug(void)
{
    struct tprog p = prog(TM_I8_I32, 100, 2048, 32);
    p.cbuf = 0x84;
    EXPECT_ERR(run_prog(&p), ORK_EHAZARD, "M_ABOVE_CAP", "CNA_CBUF_CON0");
    p = prog(TM_I8_I32, 65, 512, 32);
    p.cbuf = 0xb1;
    EXPECT_ERR(run_prog(&p), ORK_EHAZARD, "M_ABOVE_CAP", "CNA_DATA_SIZE0");
}

static void test_warn_envelopes(void)
{
    struct tprog p = prog(TM_I8_I32, 2, 768, 32); /* bank schedule outside K%512 */
    p.cbuf = 0xa2;
    struct hres r = run_prog(&p);
    EXPECT_OK(r);
    CHECK(HAS_WARN(r, FULLK_ENVELOPE));
    p.cbuf = 0xa9; /* the meaningless K=768 formula value (§5.3 note): holds 2 rows */
    r = run_prog(&p);
    EXPECT_OK(r);
    CHECK(HAS_WARN(r, FULLK_ENVELOPE));
    CHECK(HAS_WARN(r, CBUF_UNVALIDATED));
    p = prog(TM_I8_I32, 1, 8224, 32); /* DECODE_K */
    r = run_prog(&p);
    EXPECT_OK(r);
    CHECK(HAS_WARN(r, DECODE_K));
    CHECK(!HAS_WARN(r, FULLK_ENVELOPE));
}

/* §15.6 */
static void test_requant_small_k(void)
{
    struct tprog p = prog(TM_I8_I8, 4, 256, 32);
    p.mult = 0x4000;
    p.shift = 14;
    EXPECT_ERR(run_prog(&p), ORK_EHAZARD, "REQUANT_SMALL_K", "CNA_DATA_SIZE1");
    p.mode = TM_I8_I16;
    EXPECT_ERR(run_prog(&p), ORK_EHAZARD, "REQUANT_SMALL_K", "CNA_DATA_SIZE1");
    p.k = 512;
    EXPECT_OK(run_prog(&p));
}

static void test_mfold(void)
{
    struct tprog p = prog(TM_I8_I32, 4, 32, 32);
    struct tbuilt b;
    tp_build(&p, &b);
    tp_set(&b, ORK_REG_CNA_DATA_SIZE2, 4); /* 0x1028 = M */
    EXPECT_ERR(run_built(&p, &b, NULL, 0), ORK_EHAZARD, "MFOLD_UNSUPPORTED", "CNA_DATA_SIZE2");
    tp_build(&p, &b);
    tp_set(&b, ORK_REG_CNA_DATA_SIZE0, (4u << 16) | 1); /* M folded into the width */
    EXPECT_ERR(run_built(&p, &b, NULL, 0), ORK_EHAZARD, "MFOLD_UNSUPPORTED", "CNA_DATA_SIZE0");
}

/* ---- §14.3 addresses ---------------------------------------------------------------------------- */

static void test_addresses(void)
{
    struct tprog p = prog(TM_I8_I32, 4, 32, 32);
    struct tbuilt b;
    tp_build(&p, &b);
    tp_set(&b, ORK_REG_CNA_FEATURE_DATA_ADDR, 0);
    EXPECT_ERR(run_built(&p, &b, NULL, 0), ORK_EHAZARD, "ADDR_ZERO", "CNA_FEATURE_DATA_ADDR");
    tp_build(&p, &b);
    tp_set(&b, ORK_REG_CNA_DCOMP_ADDR0, B_IOVA + 8);
    EXPECT_ERR(run_built(&p, &b, NULL, 0), ORK_EHAZARD, "ADDR_MISALIGNED", "CNA_DCOMP_ADDR0");
    tp_build(&p, &b);
    tp_set(&b, ORK_REG_DPU_DST_BASE_ADDR, C_IOVA + 4);
    EXPECT_ERR(run_built(&p, &b, NULL, 0), ORK_EHAZARD, "ADDR_MISALIGNED", "DPU_DST_BASE_ADDR");
    /* C 16 bytes into its buffer: its extent runs past the end (IOMMU fault) */
    tp_build(&p, &b);
    tp_set(&b, ORK_REG_DPU_DST_BASE_ADDR, C_IOVA + 16);
    EXPECT_ERR(run_built(&p, &b, NULL, 0), ORK_EFAULT, "ADDR_OOB", "DPU_DST_BASE_ADDR");
    /* B in no buffer at all (or in another domain: the walker's map refuses both) */
    tp_build(&p, &b);
    tp_set(&b, ORK_REG_CNA_DCOMP_ADDR0, 0x70000000u);
    EXPECT_ERR(run_built(&p, &b, NULL, 0), ORK_EFAULT, "ADDR_OOB", "CNA_DCOMP_ADDR0");
    /* A pitch larger than the buffer holds */
    p.line_stride = 8;
    EXPECT_ERR(run_prog(&p), ORK_EFAULT, "ADDR_OOB", "CNA_FEATURE_DATA_ADDR");
    /* an extent that wraps the 32-bit IOVA space */
    p = prog(TM_I8_I32, 4, 32, 32);
    tp_build(&p, &b);
    tp_set(&b, ORK_REG_DPU_DST_BASE_ADDR, 0xfffffff0u);
    EXPECT_ERR(run_built(&p, &b, NULL, 0), ORK_EFAULT, "ADDR_OOB", "DPU_DST_BASE_ADDR");
}

static void test_overlap(void)
{
    struct tprog p = prog(TM_I8_I32, 4, 32, 32);
    p.c = A_IOVA + 64; /* inside A's rows */
    EXPECT_ERR(run_prog(&p), ORK_EHAZARD, "OVERLAP", "DPU_DST_BASE_ADDR");
    p = prog(TM_I8_I32, 4, 32, 32);
    p.c = B_IOVA + 512;
    EXPECT_ERR(run_prog(&p), ORK_EHAZARD, "OVERLAP", "DPU_DST_BASE_ADDR");
    p = prog(TM_I8_I32, 4, 32, 32);
    p.c = PROG_IOVA + 256; /* over the program itself */
    EXPECT_ERR(run_prog(&p), ORK_EHAZARD, "OVERLAP", "the program");
    struct tbuilt b;
    p = prog(TM_I8_I32, 4, 32, 32);
    tp_build(&p, &b);
    struct ork_sim_task_in t = { .index = 3, .regcmd_addr = PROG_IOVA, .regcfg_amount = b.amount,
                                 .task_array_addr = C_IOVA + 128, .task_array_len = 40 };
    EXPECT_ERR(run_built(&p, &b, &t, 0), ORK_EHAZARD, "OVERLAP", "task array");
}

/* ---- §6.2 / §14.4 dead output modes, §7 LUT ------------------------------------------------------ */

static void test_dead_output_modes(void)
{
    struct tprog p = prog(TM_I8_I32, 4, 32, 32);
    struct tbuilt b;
    tp_build(&p, &b);
    tp_set(&b, ORK_REG_DPU_DATA_FORMAT, 0x40000000u); /* int8 MAC -> fp16 */
    EXPECT_ERR(run_built(&p, &b, NULL, 0), ORK_EHAZARD, "DEAD_OUTPUT_MODE", "DPU_DATA_FORMAT");
    tp_build(&p, &b);
    tp_set(&b, ORK_REG_DPU_DATA_FORMAT, 0xe0); /* fused element-wise multiply */
    EXPECT_ERR(run_built(&p, &b, NULL, 0), ORK_EHAZARD, "DEAD_OUTPUT_MODE", "DPU_DATA_FORMAT");
    p = prog(TM_F16_F16, 4, 32, 16);
    tp_build(&p, &b);
    tp_set(&b, ORK_REG_DPU_OUT_CVT_SCALE, 1); /* FP32TOFP16_EN clear */
    EXPECT_ERR(run_built(&p, &b, NULL, 0), ORK_EHAZARD, "DEAD_OUTPUT_MODE", "DPU_OUT_CVT_SCALE");
    tp_build(&p, &b);
    tp_set(&b, ORK_REG_DPU_BN_CFG, 0x52); /* batch-norm stage not bypassed */
    EXPECT_ERR(run_built(&p, &b, NULL, 0), ORK_EHAZARD, "DEAD_OUTPUT_MODE", "DPU_BN_CFG");
}

static void test_lut(void)
{
    /* fused LUT activation (0x1d, EW_CFG active): not modelled (§7 UNSUPPORTED_LUT) */
    struct tprog p = prog(TM_I8_I8, 4, 512, 32);
    p.mult = 1;
    struct tbuilt b;
    tp_build(&p, &b);
    tp_set(&b, ORK_REG_DPU_EW_CFG, 0x302);
    b.e[b.n - 1] = ork_regcmd_encode(ORK_TARGET_PC_OPEN, ORK_REG_PC_OPERATION_ENABLE, 0x1d);
    struct ork_sim_task_in t = { .index = 3, .regcmd_addr = PROG_IOVA, .regcfg_amount = b.amount };
    EXPECT_ERR(run_built(&p, &b, &t, 0), ORK_EUNSUPPORTED, "UNSUPPORTED_LUT", "DPU_EW_CFG");
    /* the fused int8 SiLU setting of §7: DATA_FORMAT 0x44e0, DPU_RDMA enabled */
    tp_set(&b, ORK_REG_DPU_DATA_FORMAT, 0x44e0);
    b.e[b.amount - 1] = ork_regcmd_encode(ORK_TARGET_DPU_RDMA, ORK_REG_DPU_RDMA_S_POINTER, 0x30);
    EXPECT_ERR(run_built(&p, &b, &t, 0), ORK_EUNSUPPORTED, "UNSUPPORTED_LUT", "DPU_DATA_FORMAT");
    /* ... and with only 0x0d enabled it would hang first (ENABLE_MISMATCH) */
    b.e[b.n - 1] = ork_regcmd_encode(ORK_TARGET_PC_OPEN, ORK_REG_PC_OPERATION_ENABLE, 0x0d);
    EXPECT_ERR(run_built(&p, &b, &t, 0), ORK_EHAZARD, "ENABLE_MISMATCH", "PC_OPERATION_ENABLE");
    /* a LUT-load program (§7: enable 0x18, values streamed through the data port) */
    struct tbuilt l;
    memset(&l, 0, sizeof l);
    tp_emit(&l, ORK_REG_DPU_LUT_INDEX, 0);
    for (uint32_t i = 0; i < 100; i++)
        tp_emit(&l, ORK_REG_DPU_LUT_DATA, i * 7);
    l.amount = l.n;
    l.e[l.n++] = 0;
    l.e[l.n++] = ork_regcmd_encode(ORK_TARGET_PC, ORK_REG_PC_REGISTER_AMOUNTS, 0);
    l.e[l.n++] = ork_regcmd_encode(ORK_TARGET_PC_MARKER, 0, 0);
    l.e[l.n++] = ork_regcmd_encode(ORK_TARGET_PC_OPEN, ORK_REG_PC_OPERATION_ENABLE, 0x18);
    struct ork_sim_task_in lt = { .index = 3, .regcmd_addr = PROG_IOVA, .regcfg_amount = l.amount,
                                  .enable_mask = 0x18 };
    struct ork_sim_stats st;
    REQUIRE(ork__sim_task_run(l.e, l.n, &lt, NULL, false, &rf, NULL, &st) == 0);
    CHECK_EQ_INT(st.op, ORK_SIM_OP_LUT_LOAD);
    CHECK_EQ_INT(st.macs, 0);
    CHECK(!(st.warnings & (1ull << ORK_SIM_HAZARD_DUP_DIVERGENT))); /* a port, not a dup */
}

/* ---- strict mode (§14.2 M_ABOVE_CAP: corrupt rows beyond the cap) ------------------------------ */

static void test_strict_m_above_cap(void)
{
    struct tprog p = prog(TM_I8_I32, 65, 512, 32);
    p.cbuf = 0xb1; /* 1 data bank: 64 rows at K = 512 */
    struct tbuilt b;
    tp_build(&p, &b);
    struct tmem mem = { 0 };
    uint8_t *a = tmem_add(&mem, p.a, 65 * 512);
    uint8_t *bw = tmem_add(&mem, p.b, 512 * 32);
    uint8_t *c = tmem_add(&mem, p.c, 65 * 32 * 4);
    for (int m = 0; m < 65; m++)
        a[m * 512] = (uint8_t)(m + 1);
    bw[tl_i8_offset(0, 0, 512)] = 1;
    struct ork_sim_task_in t = { .index = 3, .regcmd_addr = PROG_IOVA, .regcfg_amount = b.amount,
                                 .strict = true };
    struct ork_sim_mem im = tmem_iface(&mem);
    struct ork_sim_stats st;
    REQUIRE(ork__sim_task_run(b.e, b.n, &t, &im, false, &rf, NULL, &st) == 0);
    CHECK(st.warnings & (1ull << ORK_SIM_HAZARD_M_ABOVE_CAP));
    int32_t v;
    memcpy(&v, c + 63 * 32 * 4, 4);
    CHECK_EQ_INT(v, 64);          /* row 63 within the cap: correct */
    memcpy(&v, c + 64 * 32 * 4, 4);
    CHECK(v != 65);               /* row 64 beyond the cap: corrupted */
    tmem_free(&mem);
}

static void test_hazard_names(void)
{
    CHECK_STR(ork__sim_hazard_name(ORK_SIM_HAZARD_M_ABOVE_CAP), "M_ABOVE_CAP");
    CHECK_STR(ork__sim_hazard_name(ORK_SIM_HAZARD_COUNT), "?");
    CHECK_STR(ork__sim_reg_name(ORK_REG_CNA_CBUF_CON0), "CNA_CBUF_CON0");
    CHECK(ork__sim_hazard_desc(ORK_SIM_HAZARD_OVERLAP)[0] != '\0');
}

int main(void)
{
    RUN(test_valid_programs_pass);
    RUN(test_trailer_missing);
    RUN(test_trailer_chain_fields);
    RUN(test_amount_mismatch);
    RUN(test_target_reg_mismatch);
    RUN(test_dup_divergent_last_wins);
    RUN(test_inconsistent_geometry);
    RUN(test_mixed_precision);
    RUN(test_enable_mismatch);
    RUN(test_alignment);
    RUN(test_n_above_8192);
    RUN(test_cbuf_boundaries);
    RUN(test_cbuf_values);
    RUN(test_cbuf_hang_wrong);
    RUN(test_schedule_floor_bug);
    RUN(test_warn_envelopes);
    RUN(test_requant_small_k);
    RUN(test_mfold);
    RUN(test_addresses);
    RUN(test_overlap);
    RUN(test_dead_output_modes);
    RUN(test_lut);
    RUN(test_strict_m_above_cap);
    RUN(test_hazard_names);
    return ork_test_done();
}
