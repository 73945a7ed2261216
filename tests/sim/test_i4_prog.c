/* test_i4_prog.c -- int4 x int4 -> int16 programs (W4A8's device side): libork's emitter
 * (program.c, t->i4) writes the register values of npu-weight-decompression.md §2, and the
 * simulator (exec_i4.c) runs them bit for bit against a CPU int16 reference on shapes across
 * K 32..2048, N 64..4096, M 1..128, in the layouts of i4_layout.h (spec §4.6). Hazards: a
 * partial sum leaving int16 (I4_OVERFLOW: an error naming task, row and column; strict mode
 * saturates), a wrong int4 register value (named), shapes past the limits refused by
 * ork__mm_task_check and by the simulator (I4_LIMIT). Raw int8 / fp16 / DCOMP programs are the
 * bytes the emitter wrote before int4 existed (hashes below). Tasks are built by hand and run
 * through ork__sim_task_run on a fake device memory (test_exec_util.h). */
#include <stdio.h>
#include <string.h>

#include <ork/dcomp.h>
#include <ork/error.h>

#include "libork/i4_layout.h"
#include "libork/program.h"
#include "ork_test.h"
#include "sim/sim.h"
#include "test_exec_util.h"

#define A_IOVA 0x10000000u
#define B_IOVA 0x20000000u
#define C_IOVA 0x40000000u
#define PROG_IOVA 0x00100000u

static struct ork_sim_regfile rf;      /* 66 KiB: static */
static uint64_t prog[ORK_PROG_ENTRIES];
static uint64_t seed = 0x5eed1234abcdull;

/* A shape's operands (logical int4 values) and its device buffers. */
struct i4_case {
    uint32_t m, k, n;
    int8_t *a, *b;          /* a[r*K + k], b[n*K + k], values in [-8, 7] */
    struct tmem mem;
    uint8_t *da, *db, *dc;  /* A, B, C device buffers */
    struct ork_sim_stats st;
};

static int rand_i4(void)
{
    return (int)(trand(&seed) % 16u) - 8;
}

static void case_init(struct i4_case *c, uint32_t m, uint32_t k, uint32_t n)
{
    memset(c, 0, sizeof *c);
    c->m = m;
    c->k = k;
    c->n = n;
    c->a = malloc((size_t)m * k);
    c->b = malloc((size_t)n * k);
    if (!c->a || !c->b)
        abort();
    for (size_t i = 0; i < (size_t)m * k; i++)
        c->a[i] = (int8_t)rand_i4();
    for (size_t i = 0; i < (size_t)n * k; i++)
        c->b[i] = (int8_t)rand_i4();
}

/* Pack A and B into the §4.6 layouts (i4_layout.h) and fill C with a sentinel. */
static void case_pack(struct i4_case *c)
{
    tmem_free(&c->mem);
    c->da = tmem_add(&c->mem, A_IOVA, (uint64_t)c->m * c->k / 2);
    c->db = tmem_add(&c->mem, B_IOVA, (uint64_t)c->k * c->n / 2);
    c->dc = tmem_add(&c->mem, C_IOVA, (uint64_t)c->n * c->m * 2);
    memset(c->dc, 0xa5, (size_t)c->n * c->m * 2);
    for (uint32_t r = 0; r < c->m; r++)
        for (uint32_t k = 0; k < c->k; k++)
            ork__i4_set(c->da + ork__i4_a_byte(c->m, r, k), k & 1u, c->a[(size_t)r * c->k + k]);
    for (uint32_t n = 0; n < c->n; n++)
        for (uint32_t k = 0; k < c->k; k++)
            ork__i4_set(c->db + ork__i4_b_byte(c->k, n, k), k & 1u, c->b[(size_t)n * c->k + k]);
}

static void case_free(struct i4_case *c)
{
    tmem_free(&c->mem);
    free(c->a);
    free(c->b);
}

static struct ork_mm_task i4_task(uint32_t m, uint32_t k, uint32_t n)
{
    struct ork_mm_task t = { .dtype = ORK_NPU_I8, .i4 = true, .m = m, .k = k, .n = n,
                             .a = A_IOVA, .b = B_IOVA, .c = C_IOVA };
    return t;
}

/* CPU reference: the int16 accumulator of npu-weight-decompression.md §2, blocks of 32 along K
 * added in K order; `saturate` clamps at each block. *over: some partial sum left int16. */
static int16_t ref_at(const struct i4_case *c, uint32_t r, uint32_t n, bool saturate, bool *over)
{
    int32_t acc = 0;
    for (uint32_t k0 = 0; k0 < c->k; k0 += 32) {
        for (uint32_t i = 0; i < 32; i++)
            acc += c->a[(size_t)r * c->k + k0 + i] * c->b[(size_t)n * c->k + k0 + i];
        if (acc > 32767 || acc < -32768) {
            *over = true;
            if (saturate)
                acc = acc > 0 ? 32767 : -32768;
        }
    }
    return (int16_t)acc;
}

/* Emit (libork) and run (sim) one task; returns the executor's code. */
static int case_run(struct i4_case *c, bool strict, const uint16_t *patch_reg,
                    const uint32_t *patch_val, int n_patch)
{
    struct ork_mm_task t = i4_task(c->m, c->k, c->n);
    int ret = ork__prog_emit_matmul(&t, prog, NULL, NULL);
    if (ret < 0) {
        fprintf(stderr, "  emit %ux%ux%u: %s\n", c->m, c->k, c->n, ork_error_message());
        return ret;
    }
    for (int p = 0; p < n_patch; p++)
        for (uint32_t i = 0; i < ORK_PROG_COUNTED; i++) {
            struct ork_regcmd e = ork_regcmd_decode(prog[i]);
            if (e.reg == patch_reg[p])
                prog[i] = ork_regcmd_encode(e.target, e.reg, patch_val[p]);
        }
    struct ork_sim_task_in tin = { .index = 5, .regcmd_addr = PROG_IOVA,
                                   .regcfg_amount = ORK_PROG_COUNTED,
                                   .enable_mask = ORK_ENABLE_MATMUL, .strict = strict };
    struct ork_sim_mem mem = tmem_iface(&c->mem);
    struct ork_sim_decoded dec;
    return ork__sim_task_run(prog, ORK_PROG_ENTRIES, &tin, &mem, false, &rf, &dec, &c->st);
}

/* C element (r, n) as the simulator wrote it, from the (N/8, M, 8) layout. */
static int16_t c_at(const struct i4_case *c, uint32_t r, uint32_t n)
{
    int16_t v;
    memcpy(&v, c->dc + ork__i4_c_index(c->m, r, n) * 2, sizeof v);
    return v;
}

/* Mismatches of C against the reference (and any reference overflow in *over). */
static uint64_t c_mismatches(const struct i4_case *c, bool saturate, bool *over)
{
    uint64_t bad = 0;
    *over = false;
    for (uint32_t r = 0; r < c->m; r++)
        for (uint32_t n = 0; n < c->n; n++) {
            int16_t want = ref_at(c, r, n, saturate, over), have = c_at(c, r, n);
            if (want != have && bad++ < 4)
                fprintf(stderr, "  %ux%ux%u C[%u][%u] = %d, expected %d\n", c->m, c->k, c->n,
                        r, n, have, want);
        }
    return bad;
}

/* Last write of `reg` in the emitted program (the one in force, spec §3.2). */
static uint32_t reg_of(uint16_t reg)
{
    uint32_t v = 0xdeadbeef;
    for (uint32_t i = 0; i < ORK_PROG_COUNTED; i++) {
        struct ork_regcmd e = ork_regcmd_decode(prog[i]);
        if (e.reg == reg)
            v = e.value;
    }
    return v;
}

/* The register values of npu-weight-decompression.md §2, written here from the table. */
static void test_register_values(void)
{
    static const uint32_t shapes[][3] = { { 1, 32, 64 }, { 2, 256, 128 }, { 64, 1024, 512 },
                                          { 65, 2048, 64 }, { 128, 2048, 4096 } };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        uint32_t M = shapes[i][0], K = shapes[i][1], N = shapes[i][2];
        struct ork_mm_task t = i4_task(M, K, N);
        struct ork_prog_reloc rel[ORK_PROG_MAX_RELOCS];
        uint32_t nrel = 0;
        REQUIRE(ork__prog_emit_matmul(&t, prog, rel, &nrel) == 0);
        CHECK_EQ_INT(reg_of(ORK_REG_CNA_CONV_CON1), 0x360);
        CHECK_EQ_INT(reg_of(ORK_REG_CORE_MISC_CFG), 0x601);
        CHECK_EQ_INT(reg_of(ORK_REG_DPU_DATA_FORMAT), 0x38000006);
        CHECK_EQ_INT(reg_of(ORK_REG_CNA_WEIGHT_SIZE0), K * N / 2);
        CHECK_EQ_INT(reg_of(ORK_REG_CNA_WEIGHT_SIZE1), K / 2);
        CHECK_EQ_INT(reg_of(ORK_REG_CNA_CBUF_CON1), M * ((K + 127) / 128));
        CHECK_EQ_INT(reg_of(ORK_REG_CNA_DMA_CON1), 4 * M);
        CHECK_EQ_INT(reg_of(ORK_REG_CNA_DMA_CON2), (0u - 3 * M) & 0xfffffffu);
        CHECK_EQ_INT(reg_of(ORK_REG_DPU_BS_OW_CFG), 0x7fe);
        CHECK_EQ_INT(reg_of(ORK_REG_DPU_DST_SURF_STRIDE), 16 * M);
        CHECK_EQ_INT(reg_of(ORK_REG_DPU_SURFACE_ADD), 128 * M);
        CHECK_EQ_INT(reg_of(ORK_REG_CNA_DATA_SIZE0), 0x10000 | M);
        CHECK_EQ_INT(reg_of(ORK_REG_CNA_WEIGHT_SIZE2), 0x01010000u | N);
        CHECK_EQ_INT(reg_of(ORK_REG_CNA_DCOMP_CTRL), 0);
        /* the bank split: ceil(64 ceil(M/64) K/2 / 32 KiB) data banks (M > 64), M K/2 else */
        uint32_t bytes = M > 64 ? 64 * ((M + 63) / 64) * K / 2 : M * K / 2;
        uint32_t d = (bytes + 32767) / 32768;
        CHECK_EQ_INT(reg_of(ORK_REG_CNA_CBUF_CON0), ((12 - d) << 4) | d);
        /* the relocations: A M*K/2, B K*N/2, C N*M*2 bytes */
        CHECK_EQ_INT(nrel, 3);
        for (uint32_t r = 0; r < nrel; r++) {
            uint64_t want = rel[r].reg == ORK_REG_CNA_FEATURE_DATA_ADDR ? (uint64_t)M * K / 2
                            : rel[r].reg == ORK_REG_CNA_DCOMP_ADDR0     ? (uint64_t)K * N / 2
                                                                        : (uint64_t)N * M * 2;
            CHECK_EQ_INT(rel[r].len, want);
        }
    }
    /* the template-like small case: 0xb1 */
    struct ork_mm_task t = i4_task(4, 32, 64);
    REQUIRE(ork__prog_emit_matmul(&t, prog, NULL, NULL) == 0);
    CHECK_EQ_INT(reg_of(ORK_REG_CNA_CBUF_CON0), 0xb1);
}

/* Bit-exact against the CPU on shapes across the limits. */
static void test_bit_exact(void)
{
    static const uint32_t shapes[][3] = {
        { 1, 32, 64 }, { 2, 64, 128 }, { 3, 96, 192 }, { 7, 160, 64 }, { 16, 512, 256 },
        { 33, 1024, 128 }, { 64, 2048, 64 }, { 65, 256, 320 }, { 128, 2048, 64 },
        { 128, 128, 512 }, { 2, 64, 4096 }, { 1, 2048, 1024 },
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        struct i4_case c;
        case_init(&c, shapes[i][0], shapes[i][1], shapes[i][2]);
        case_pack(&c);
        int ret = case_run(&c, false, NULL, NULL, 0);
        if (ret < 0)
            fprintf(stderr, "  %ux%ux%u: %s\n", c.m, c.k, c.n, ork_error_message());
        CHECK_EQ_INT(ret, 0);
        bool over = false;
        CHECK_EQ_INT(c_mismatches(&c, false, &over), 0);
        CHECK(!over);                          /* random data stays inside int16 */
        CHECK_EQ_INT(c.st.warnings, 0);
        /* the timing model's inputs: K*N/2 weight, M*K/2 feature, M*N*2 output bytes */
        CHECK_EQ_INT(c.st.in_prec, ORK_SIM_PREC_INT4);
        CHECK_EQ_INT(c.st.macs, (uint64_t)c.m * c.k * c.n);
        CHECK_EQ_INT(c.st.b_bytes, (uint64_t)c.k * c.n / 2);
        CHECK_EQ_INT(c.st.a_bytes, (uint64_t)c.m * c.k / 2);
        CHECK_EQ_INT(c.st.c_bytes, (uint64_t)c.m * c.n * 2);
        case_free(&c);
    }
}

/* The int4 MACs are charged at the int8 rate (no published int4 rate). */
static void test_timing_rate(void)
{
    struct ork_sim_timing_table T;
    ork__sim_timing_from_twin(NULL, &T);
    struct ork_sim_stats s4 = { .op = ORK_SIM_OP_MATMUL, .in_prec = ORK_SIM_PREC_INT4,
                                .out_prec = ORK_SIM_PREC_INT16, .m = 64, .k = 2048, .n = 4096,
                                .macs = 64ull * 2048 * 4096, .a_bytes = 64 * 1024,
                                .b_bytes = 2048ull * 2048, .c_bytes = 64 * 4096 * 2 };
    struct ork_sim_stats s8 = s4;
    s8.in_prec = ORK_SIM_PREC_INT8;
    double t4 = ork__sim_task_time_ns(&T, &s4, true, 1, 0);
    CHECK(t4 > 0);
    CHECK(t4 == ork__sim_task_time_ns(&T, &s8, true, 1, 0));
}

/* One column of B and two rows of A all extreme: (2, 70) climbs past 32767, (3, 70) below
 * -32768; every other output stays in range. */
static void make_overflow(struct i4_case *c)
{
    case_init(c, 4, 2048, 128);
    for (uint32_t k = 0; k < c->k; k++) {
        c->a[2 * (size_t)c->k + k] = 7;
        c->a[3 * (size_t)c->k + k] = -8;
        c->b[70 * (size_t)c->k + k] = 7;
    }
    case_pack(c);
}

static void test_overflow(void)
{
    struct i4_case c;
    make_overflow(&c);
    /* default: the hazard, naming the task, row and column */
    int ret = case_run(&c, false, NULL, NULL, 0);
    const char *msg = ork_error_message();
    printf("  overflow: %s\n", msg);
    CHECK_EQ_INT(ret, ORK_EHAZARD);
    CHECK(strstr(msg, "task 5") && strstr(msg, "I4_OVERFLOW") && strstr(msg, "row 2 column 70"));
    /* 49 per product, 1568 per block: the 21st block (K = 672) passes 32767 */
    CHECK(strstr(msg, "K = 672") != NULL);
    /* strict (reproduce the board): saturated values, the warning, everything else exact */
    case_pack(&c);
    CHECK_EQ_INT(case_run(&c, true, NULL, NULL, 0), 0);
    CHECK(c.st.warnings & (1ull << ORK_SIM_HAZARD_I4_OVERFLOW));
    CHECK_EQ_INT(c_at(&c, 2, 70), 32767);
    CHECK_EQ_INT(c_at(&c, 3, 70), -32768);
    bool over = false;
    CHECK_EQ_INT(c_mismatches(&c, true, &over), 0);
    CHECK(over);
    case_free(&c);
}

/* One wrong int4 register at a time: the simulator names it. */
static void test_wrong_register(void)
{
    const uint32_t M = 8, K = 256, N = 128;
    struct {
        uint16_t reg;
        uint32_t val;
        const char *hazard, *name;
    } cases[] = {
        { ORK_REG_CNA_DMA_CON2, 0, "INCONSISTENT_GEOMETRY", "CNA_DMA_CON2" },
        { ORK_REG_CNA_DMA_CON1, K / 16, "INCONSISTENT_GEOMETRY", "CNA_DMA_CON1" },
        { ORK_REG_CNA_WEIGHT_SIZE0, K * N, "INCONSISTENT_GEOMETRY", "CNA_WEIGHT_SIZE0" },
        { ORK_REG_CNA_WEIGHT_SIZE1, K, "INCONSISTENT_GEOMETRY", "CNA_WEIGHT_SIZE1" },
        { ORK_REG_CNA_CBUF_CON1, (K + 63) / 64, "INCONSISTENT_GEOMETRY", "CNA_CBUF_CON1" },
        { ORK_REG_DPU_DST_SURF_STRIDE, 0x10, "INCONSISTENT_GEOMETRY", "DPU_DST_SURF_STRIDE" },
        { ORK_REG_DPU_SURFACE_ADD, 0x80, "INCONSISTENT_GEOMETRY", "DPU_SURFACE_ADD" },
        { ORK_REG_DPU_BS_OW_CFG, 0x7fc, "INCONSISTENT_GEOMETRY", "DPU_BS_OW_CFG" },
        { ORK_REG_CNA_CONV_CON1, 0x20000360, "INCONSISTENT_GEOMETRY", "CNA_CONV_CON1" },
        { ORK_REG_DPU_DATA_CUBE_NOTCH_ADDR, (31u << 16) | 31u, "INCONSISTENT_GEOMETRY",
          "DPU_DATA_CUBE_NOTCH_ADDR" },
        { ORK_REG_CORE_MISC_CFG, 0x1, "MIXED_PRECISION", "CORE_MISC_CFG" },
        { ORK_REG_DPU_DATA_FORMAT, 0x18000006, "UNSUPPORTED_OP", "DPU_DATA_FORMAT" },
        { ORK_REG_CNA_DATA_SIZE0, 0x10000 | 129, "I4_LIMIT", "CNA_DATA_SIZE0" },
        { ORK_REG_CNA_CBUF_CON0, 0x01, "CBUF_HANG", "CNA_CBUF_CON0" },
    };
    struct i4_case c;
    case_init(&c, M, K, N);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        case_pack(&c);
        int ret = case_run(&c, false, &cases[i].reg, &cases[i].val, 1);
        const char *msg = ork_error_message();
        bool ok = ret < 0 && strstr(msg, cases[i].hazard) && strstr(msg, cases[i].name);
        printf("  %s: %s\n", ok ? "ok" : "WRONG", ret < 0 ? msg : "(ran)");
        CHECK(ok);
    }
    /* intact: runs */
    case_pack(&c);
    CHECK_EQ_INT(case_run(&c, false, NULL, NULL, 0), 0);
    /* M_ABOVE_CAP: 128 rows of K = 2048 with one data bank */
    case_free(&c);
    case_init(&c, 128, 2048, 64);
    case_pack(&c);
    uint16_t reg = ORK_REG_CNA_CBUF_CON0;
    uint32_t val = 0xb1;
    int ret = case_run(&c, false, &reg, &val, 1);
    CHECK(ret < 0 && strstr(ork_error_message(), "M_ABOVE_CAP"));
    case_free(&c);
}

/* ork__mm_task_check refuses shapes past npu-weight-decompression.md §2 "Limits". */
static void test_task_check(void)
{
    struct ork_dcomp_regs dr = { .ctrl = ORK_DCOMP_CTRL_ON, .regnum = ORK_DCOMP_REGNUM_NORMAL };
    struct {
        struct ork_mm_task t;
        const char *word;
    } bad[] = {
        { i4_task(4, 48, 64), "K=48" },      { i4_task(4, 2080, 64), "K=2080" },
        { i4_task(4, 0, 64), "K=0" },        { i4_task(4, 64, 96), "N=96" },
        { i4_task(4, 64, 4160), "N=4160" },  { i4_task(4, 64, 32), "N=32" },
        { i4_task(129, 64, 64), "M=129" },   { i4_task(0, 64, 64), "M=0" },
        { i4_task(4, 64, 64), "dcomp" },     { i4_task(4, 64, 64), "dtype" },
        { i4_task(4, 64, 64), "stride" },    { i4_task(128, 2048, 64), "CBUF_CON0" },
        { i4_task(4, 64, 64), "aligned" },
    };
    bad[8].t.dcomp = &dr;
    bad[9].t.dtype = ORK_NPU_F16;
    bad[10].t.stride = 128;
    bad[11].t.cbuf = 0xb1;                   /* 1 data bank: too few for 128 x 2048 */
    bad[12].t.c = C_IOVA + 8;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int ret = ork__mm_task_check(&bad[i].t);
        const char *msg = ork_error_message();
        bool ok = ret == ORK_EINVAL && strstr(msg, bad[i].word);
        printf("  %s: %s\n", ok ? "ok" : "WRONG", ret < 0 ? msg : "(accepted)");
        CHECK(ok);
        CHECK(ork__prog_emit_matmul(&bad[i].t, prog, NULL, NULL) < 0);
    }
    struct ork_mm_task edge[] = { i4_task(128, 2048, 4096), i4_task(1, 32, 64) };
    for (size_t i = 0; i < 2; i++)
        CHECK_EQ_INT(ork__mm_task_check(&edge[i]), 0);
    edge[0].cbuf = 0x84;                     /* the derived 4 data banks, given explicitly */
    CHECK_EQ_INT(ork__mm_task_check(&edge[0]), 0);
}

/* FNV-1a of the 112 emitted entries. */
static uint64_t prog_hash(void)
{
    uint64_t h = 1469598103934665603ull;
    for (uint32_t i = 0; i < ORK_PROG_ENTRIES; i++)
        for (int b = 0; b < 8; b++) {
            h ^= (prog[i] >> (8 * b)) & 0xff;
            h *= 1099511628211ull;
        }
    return h;
}

/* Raw int8, fp16 and DCOMP programs: the hashes of the emitter before int4 programs existed
 * (program.c as of cfbfa54, same tasks), so the int4 branches changed no other byte. */
static void test_raw_programs_unchanged(void)
{
    struct ork_dcomp_regs dr = { .ctrl = 1, .regnum = 0x55555555 };
    for (uint32_t i = 0; i < ORK_DCOMP_LANES; i++)
        dr.amount[i] = 100u + i;
    struct {
        struct ork_mm_task t;
        uint64_t hash;
    } cases[] = {
        { { .dtype = ORK_NPU_I8, .m = 4, .k = 32, .n = 32, .a = 0x1000, .b = 0x2000,
            .c = 0x3000, .cbuf = 0xb1, .grains = 5 }, 0x53d46cf86ad9a4a6ull },
        { { .dtype = ORK_NPU_F16, .m = 4, .k = 32, .n = 16, .a = 0x1000, .b = 0x2000,
            .c = 0x3000, .cbuf = 0xb1, .grains = 5 }, 0x57e7165424ab2c36ull },
        { { .dtype = ORK_NPU_I8, .m = 128, .k = 2048, .n = 8192, .stride = 9216, .a = 0x10000,
            .b = 0x200000, .c = 0x4000000, .cbuf = 0x48, .grains = 32 }, 0x2c070ac31d3b83adull },
        { { .dtype = ORK_NPU_F16, .m = 176, .k = 1024, .n = 2048, .a = 0x10000, .b = 0x200000,
            .c = 0x4000000, .cbuf = 0x1b, .grains = 32 }, 0x560d94ebe0a05775ull },
        { { .dtype = ORK_NPU_I8, .m = 1, .k = 1024, .n = 3072, .a = 0x10000, .b = 0x200000,
            .c = 0x4000000, .cbuf = 0xb1, .grains = 2, .dcomp = &dr, .b_bytes = 123456 },
          0x40f007fad3d4168bull },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        REQUIRE(ork__prog_emit_matmul(&cases[i].t, prog, NULL, NULL) == 0);
        uint64_t h = prog_hash();
        if (h != cases[i].hash)
            fprintf(stderr, "  case %zu: hash 0x%016llx, expected 0x%016llx\n", i,
                    (unsigned long long)h, (unsigned long long)cases[i].hash);
        CHECK(h == cases[i].hash);
    }
}

int main(void)
{
    RUN(test_register_values);
    RUN(test_bit_exact);
    RUN(test_timing_rate);
    RUN(test_overflow);
    RUN(test_wrong_register);
    RUN(test_task_check);
    RUN(test_raw_programs_unchanged);
    return ork_test_done();
}
