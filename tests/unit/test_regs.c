/* test_regs.c -- the register database: entry encoding (spec §15.1), table integrity, lookup,
 * classification (spec §2.2) and the pretty-printer. */
#include "ork_test.h"

#include <ork/regs.h>

static void test_encode_vectors(void)
{
    /* spec §15.1 */
    uint64_t e = ork_regcmd_encode(0x0201, 0x1024, 0x001f0020);
    CHECK(e == 0x0201001f00201024ull);
    uint8_t b[8];
    ork_regcmd_store(b, e);
    uint32_t w0 = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    uint32_t w1 = (uint32_t)b[4] | (uint32_t)b[5] << 8 | (uint32_t)b[6] << 16 | (uint32_t)b[7] << 24;
    CHECK_EQ_INT(w0, 0x00201024);
    CHECK_EQ_INT(w1, 0x0201001f);
    CHECK(ork_regcmd_load(b) == e);
    struct ork_regcmd c = ork_regcmd_decode(e);
    CHECK_EQ_INT(c.target, 0x0201);
    CHECK_EQ_INT(c.reg, 0x1024);
    CHECK_EQ_INT(c.value, 0x001f0020);
    CHECK(ork_regcmd_encode(0x0081, 0x0008, 0x0d) == 0x00810000000d0008ull);
    CHECK(ork_regcmd_encode(0x0041, 0, 0) == 0x0041000000000000ull);
    /* full 32-bit values survive (spec §2.1 discrepancy note) */
    c = ork_regcmd_decode(ork_regcmd_encode(0x1001, 0x4010, 0x80000000u));
    CHECK_EQ_INT(c.value, 0x80000000u);
}

static void test_table_integrity(void)
{
    size_t n;
    const struct ork_reg_info *all = ork_reg_all(&n);
    CHECK(n > 100);
    for (size_t i = 0; i < n; i++) {
        if (i)
            CHECK(all[i].offset > all[i - 1].offset);   /* ascending: lookup binary-searches */
        CHECK(ork_reg_lookup(all[i].offset) == &all[i]);
        CHECK(ork_reg_find(all[i].name) == &all[i]);
        CHECK_EQ_INT(ork_reg_block_of(all[i].offset), all[i].block);
        CHECK((all[i].offset & 3) == 0);
        size_t nf;
        const struct ork_reg_field *f = ork_reg_fields(&all[i], &nf);
        uint32_t seen = 0;
        for (size_t j = 0; j < nf; j++) {
            CHECK_EQ_INT(f[j].reg, all[i].offset);
            CHECK(f[j].hi >= f[j].lo && f[j].hi < 32);
            uint32_t m = ORK__FIELD_MASK(f[j].hi, f[j].lo) << f[j].lo;
            CHECK((seen & m) == 0);                      /* fields never overlap */
            seen |= m;
            if (j)
                CHECK(f[j].lo < f[j - 1].lo);            /* most significant first */
        }
    }
    CHECK(ork_reg_lookup(0x1000) == NULL);
    CHECK(ork_reg_lookup(0xffff) == NULL);
    CHECK(ork_reg_find("NOPE") == NULL);
}

static void test_named_constants(void)
{
    CHECK_EQ_INT(ORK_REG_CNA_CBUF_CON0, 0x1040);
    CHECK_EQ_INT(ORK_REG_CNA_DATA_SIZE1, 0x1024);
    CHECK_EQ_INT(ORK_REG_CORE_MISC_CFG, 0x3010);
    CHECK_EQ_INT(ORK_REG_DPU_DATA_FORMAT, 0x4010);
    CHECK_EQ_INT(ORK_REG_DPU_LUT_CFG_9, 0x412c);
    CHECK_EQ_INT(ORK_REG_CNA_DCOMP_AMOUNT15, 0x117c);
    CHECK_EQ_INT(ORK_REG_PC_REGISTER_AMOUNTS, 0x0014);
    CHECK_EQ_INT(ORK_CNA_DATA_SIZE0_DATAIN_WIDTH(1) | ORK_CNA_DATA_SIZE0_DATAIN_HEIGHT(4), 0x10004);
    CHECK_EQ_INT(ORK_CNA_DATA_SIZE0_DATAIN_HEIGHT(0x800), 0);          /* masked to 11 bits */
    CHECK_EQ_INT(ORK_CNA_CBUF_CON0_WEIGHT_BANK(11) | ORK_CNA_CBUF_CON0_DATA_BANK(1), 0xb1);
    CHECK_EQ_INT(ORK_DPU_DATA_FORMAT_OUT_PRECISION_GET(0xa8000002u), 5);
    CHECK_EQ_INT(ORK_DPU_DATA_FORMAT_IN_PRECISION_GET(0xa8000002u), 2);
    CHECK_EQ_INT(ORK_CNA_CONV_CON1_IN_PRECISION_GET(0x20000120u), 2);
    CHECK_EQ_INT(ORK_CNA_CONV_CON1_PROC_PRECISION_GET(0x20000120u), 2);
    CHECK_EQ_INT(ORK_CORE_MISC_CFG_PROC_PRECISION_GET(0x201u), 2);
    CHECK_EQ_INT(ORK_PC_BASE_ADDRESS_SOURCE_ADDR_GET(0xffff0040u), 0xffff0040u >> 4);
    CHECK_EQ_INT(ork_reg_target(ORK_REG_CNA_CBUF_CON0), ORK_TARGET_CNA);
    CHECK_EQ_INT(ork_reg_target(ORK_REG_CORE_MISC_CFG), ORK_TARGET_CORE);
    CHECK_EQ_INT(ork_reg_target(ORK_REG_DPU_S_POINTER), ORK_TARGET_DPU);
    CHECK_EQ_INT(ork_reg_target(ORK_REG_PC_BASE_ADDRESS), ORK_TARGET_PC);
    CHECK_EQ_INT(ORK_ENABLE_MATMUL, 0x0d);
}

static void test_classify(void)
{
    CHECK_EQ_INT(ork_regcmd_classify(0), ORK_REGCMD_NULL);
    CHECK_EQ_INT(ork_regcmd_classify(0x0041000000000000ull), ORK_REGCMD_MARKER);
    CHECK_EQ_INT(ork_regcmd_classify(0x00810000000d0008ull), ORK_REGCMD_OP_ENABLE);
    CHECK_EQ_INT(ork_regcmd_classify(ork_regcmd_encode(0x0201, 0x1024, 5)), ORK_REGCMD_WRITE);
    CHECK_EQ_INT(ork_regcmd_classify(ork_regcmd_encode(0x0201, 0x4010, 5)),
                 ORK_REGCMD_TARGET_MISMATCH);
    CHECK_EQ_INT(ork_regcmd_classify(ork_regcmd_encode(0x0301, 0x1024, 5)),
                 ORK_REGCMD_UNKNOWN_TARGET);
    CHECK_EQ_INT(ork_regcmd_classify(ork_regcmd_encode(0x0201, 0x1ffc, 5)), ORK_REGCMD_UNKNOWN_REG);
    CHECK_EQ_INT(ork_regcmd_classify(ork_regcmd_encode(0x0101, 0x0010, 0x1000)), ORK_REGCMD_WRITE);
}

static void test_print(void)
{
    char buf[256];
    int n = ork_reg_format(buf, sizeof buf, 0x1020, 0x00010004);
    CHECK_STR(buf, "CNA_DATA_SIZE0 = 0x00010004 { DATAIN_WIDTH=1 DATAIN_HEIGHT=4 }");
    CHECK_EQ_INT(n, (int)strlen(buf));
    ork_reg_format(buf, sizeof buf, 0x1040, 0xb1);
    CHECK_STR(buf, "CNA_CBUF_CON0 = 0x000000b1 { WEIGHT_REUSE=0 DATA_REUSE=0 FC_DATA_BANK=0 "
                   "WEIGHT_BANK=11 DATA_BANK=1 }");
    ork_reg_format(buf, sizeof buf, 0x1070, 0xffff0000u);
    CHECK_STR(buf, "CNA_FEATURE_DATA_ADDR = 0xffff0000");
    ork_reg_format(buf, sizeof buf, 0x1068, 0x100);                /* bit outside the fields */
    CHECK_STR(buf, "CNA_PAD_CON0 = 0x00000100 { PAD_LEFT=0 PAD_TOP=0 ?=0x100 }");
    ork_reg_format(buf, sizeof buf, 0x1ff0, 7);
    CHECK_STR(buf, "REG_0x1ff0 = 0x00000007");
    ork_regcmd_format(buf, sizeof buf, 0x0201001f00201024ull);
    CHECK_STR(buf, "0201 CNA_DATA_SIZE1 = 0x001f0020 { DATAIN_CHANNEL_REAL=31 DATAIN_CHANNEL=32 }");
    ork_regcmd_format(buf, sizeof buf, 0x0041000000000000ull);
    CHECK_STR(buf, "0041 PC_MARKER");
    ork_regcmd_format(buf, sizeof buf, ork_regcmd_encode(0x0201, 0x4010, 0));
    CHECK(strstr(buf, "!! TARGET_REG_MISMATCH") != NULL);
    ork_regcmd_format(buf, sizeof buf, ork_regcmd_encode(0x0301, 0x1024, 0));
    CHECK(strstr(buf, "!! UNKNOWN_TARGET") != NULL);
    /* truncation behaves like snprintf */
    char small[8];
    n = ork_reg_format(small, sizeof small, 0x1020, 0x00010004);
    CHECK_EQ_INT(strlen(small), 7);
    CHECK(n > 7);
}

/* Arbitrary entries: classification never crashes, the printer's return value is the full
 * length, truncation keeps a prefix, and encode(decode(e)) == e. */
static void test_random_entries(void)
{
    uint64_t x = 0x123456789abcdefull;
    char big[512], small[24];
    size_t nregs;
    const struct ork_reg_info *all = ork_reg_all(&nregs);
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        uint64_t e = x;
        if (i & 1)   /* half of them aimed at real registers with their own target */
            e = ork_regcmd_encode(ork_reg_target(all[x % nregs].offset), all[x % nregs].offset,
                                  (uint32_t)(x >> 20));
        struct ork_regcmd c = ork_regcmd_decode(e);
        CHECK(ork_regcmd_encode(c.target, c.reg, c.value) == e);
        enum ork_regcmd_kind k = ork_regcmd_classify(e);
        if (i & 1)
            CHECK_EQ_INT(k, ORK_REGCMD_WRITE);
        int n = ork_regcmd_format(big, sizeof big, e);
        CHECK(n > 0 && (size_t)n < sizeof big && (size_t)n == strlen(big));
        int m = ork_regcmd_format(small, sizeof small, e);
        CHECK_EQ_INT(m, n);
        CHECK(strncmp(small, big, sizeof small - 1) == 0);
        if (ork_test_failures_)
            break;
    }
}

int main(void)
{
    RUN(test_encode_vectors);
    RUN(test_table_integrity);
    RUN(test_named_constants);
    RUN(test_classify);
    RUN(test_print);
    RUN(test_random_entries);
    return ork_test_done();
}
