/* test_program.c -- regcmd emission against the spec's register table: the int8 4x32x32 and
 * fp16 4x32x16 templates (spec §3.1 "tmpl" column, §15.2) compared as decoded lists, the
 * counting check, duplicate registers (§3.2), the trailer and chaining (§2.3, §8.3), and
 * address validation (§14.3). The expected values below are transcribed from the spec, not
 * produced by the generator. */
#include "ork_test.h"

#include "libork/program.h"

#include <ork/error.h>

#define A_IOVA 0xfff00000u
#define B_IOVA 0xffe00000u
#define C_IOVA 0xffd00000u
#define ADDR_A 0xaaaaaaaau   /* placeholders in the expected table */
#define ADDR_B 0xbbbbbbbbu
#define ADDR_C 0xccccccccu

struct expect {
    uint16_t target, reg;
    uint32_t i8, f16;
};

/* spec §3.1, entries #0-#107 with the template values (int8 4x32x32 / fp16 4x32x16). */
static const struct expect tmpl[] = {
    { 0x0201, 0x1040, 0xb1, 0xb1 },                 /* 0 */
    { 0x0201, 0x1104, 0, 0 },
    { 0x0201, 0x1100, 0, 0 },
    { 0x0201, 0x100c, 0x20000000, 0x20000120 },
    { 0x1001, 0x4004, 0xe, 0xe },
    { 0x0201, 0x100c, 0x20000000, 0x20000120 },     /* 5 */
    { 0x0201, 0x1010, 0x50, 0x50 },
    { 0x0201, 0x1014, 0x9, 0x9 },
    { 0x0201, 0x1020, 0x10004, 0x10004 },
    { 0x0201, 0x1024, 0x1f0020, 0x1f0020 },
    { 0x0201, 0x1028, 1, 1 },                       /* 10 */
    { 0x0201, 0x102c, 4, 4 },
    { 0x0201, 0x1030, 0x400, 0x400 },
    { 0x0201, 0x1034, 0x20, 0x40 },
    { 0x0201, 0x1038, 0x1010020, 0x1010010 },
    { 0x0201, 0x1040, 0xb1, 0xb1 },                 /* 15 */
    { 0x0201, 0x1044, 1, 1 },
    { 0x0201, 0x104c, 0xb, 0xb },
    { 0x0201, 0x1050, 0x10000, 0x10000 },
    { 0x0201, 0x1054, 0x10000, 0x10000 },
    { 0x0201, 0x1058, 0x10000, 0x10000 },           /* 20 */
    { 0x0201, 0x105c, 0x10000, 0x10000 },
    { 0x0201, 0x1060, 0, 0 },
    { 0x0201, 0x1064, 0, 0 },
    { 0x0201, 0x1068, 0, 0 },
    { 0x0201, 0x1070, ADDR_A, ADDR_A },             /* 25 */
    { 0x0201, 0x1074, 0, 0 },
    { 0x0201, 0x1078, 0xf000f, 0xf000f },
    { 0x0201, 0x107c, 2, 4 },
    { 0x0201, 0x1080, 0, 0 },
    { 0x0201, 0x1084, 0x10004, 0x10004 },           /* 30 */
    { 0x0201, 0x1088, 0x20, 0x20 },
    { 0x0201, 0x1100, 0, 0 },
    { 0x0201, 0x1104, 0, 0 },
    { 0x0201, 0x1110, ADDR_B, ADDR_B },
    /* 35-50: DCOMP_AMOUNT0..15 = 0, filled by build_expected() */
};

/* Entries #51-#107, after the 16 DCOMP_AMOUNT writes. */
static const struct expect tmpl2[] = {
    { 0x0201, 0x1180, 0, 0 },                       /* 51 */
    { 0x0201, 0x1184, 0, 0 },
    { 0x0801, 0x3010, 1, 0x201 },
    { 0x0801, 0x3014, 0x30000, 0x30000 },
    { 0x0801, 0x3018, 0x1f, 0xf },
    { 0x0801, 0x301c, 0, 0 },                       /* 56 */
    { 0x0801, 0x3030, 0, 0 },
    { 0x1001, 0x400c, 0x1e4, 0x1e4 },
    { 0x1001, 0x4010, 0x80000000, 0xa8000002 },
    { 0x1001, 0x4014, 0, 0 },                       /* 60 */
    { 0x1001, 0x4020, ADDR_C, ADDR_C },
    { 0x1001, 0x4024, 0x10, 0x10 },
    { 0x1001, 0x4030, 0, 0 },
    { 0x1001, 0x4034, 3, 3 },
    { 0x1001, 0x4038, 0x70007, 0x30003 },           /* 65 */
    { 0x1001, 0x403c, 0x1f001f, 0xf000f },
    { 0x1001, 0x4040, 0x53, 0x53 },
    { 0x1001, 0x4044, 0, 0 },
    { 0x1001, 0x4048, 0, 0 },
    { 0x1001, 0x404c, 0, 0 },                       /* 70 */
    { 0x1001, 0x4050, 0x7fc, 0x36e },
    { 0x1001, 0x4054, 0, 0 },
    { 0x1001, 0x4058, 0x1f, 0xf },
    { 0x1001, 0x405c, 0x30000, 0x30000 },
    { 0x1001, 0x4060, 0x53, 0x53 },                 /* 75 */
    { 0x1001, 0x4064, 0, 0 },
    { 0x1001, 0x4068, 0, 0 },
    { 0x1001, 0x406c, 0, 0 },
    { 0x1001, 0x4070, 0x383, 0x383 },
    { 0x1001, 0x4074, 0, 0 },                       /* 80 */
    { 0x1001, 0x4078, 1, 1 },
    { 0x1001, 0x407c, 0, 0 },
    { 0x1001, 0x4080, 0, 0 },
    { 0x1001, 0x4084, 1, 1 },
    { 0x1001, 0x4088, 0, 0 },                       /* 85 */
    /* 86-93: EW_OP_VALUE_0..7 (0x4090..0x40ac) = 0, then 94, 95, then 96-107 LUT = 0 */
};

static struct expect expected[ORK_PROG_COUNTED];

static void build_expected(void)
{
    size_t n = 0;
    for (size_t i = 0; i < sizeof tmpl / sizeof tmpl[0]; i++)
        expected[n++] = tmpl[i];
    for (uint16_t r = 0x1140; r <= 0x117c; r += 4)          /* #35-#50 */
        expected[n++] = (struct expect){ 0x0201, r, 0, 0 };
    for (size_t i = 0; i < sizeof tmpl2 / sizeof tmpl2[0]; i++)
        expected[n++] = tmpl2[i];
    for (uint16_t r = 0x4090; r <= 0x40ac; r += 4)          /* #86-#93 */
        expected[n++] = (struct expect){ 0x1001, r, 0, 0 };
    expected[n++] = (struct expect){ 0x1001, 0x40c0, 0x80, 0x40 };   /* #94 */
    expected[n++] = (struct expect){ 0x1001, 0x40c4, 0, 0 };         /* #95 */
    for (uint16_t r = 0x4100; r <= 0x412c; r += 4)          /* #96-#107 */
        expected[n++] = (struct expect){ 0x1001, r, 0, 0 };
    if (n != ORK_PROG_COUNTED) {
        fprintf(stderr, "expected table has %zu entries\n", n);
        exit(1);
    }
}

static uint32_t subst(uint32_t v)
{
    return v == ADDR_A ? A_IOVA : v == ADDR_B ? B_IOVA : v == ADDR_C ? C_IOVA : v;
}

static void check_template(enum ork_npu_dtype dt, uint32_t n)
{
    struct ork_mm_task t = {
        .dtype = dt, .m = 4, .k = 32, .n = n, .a = A_IOVA, .b = B_IOVA, .c = C_IOVA,
        .cbuf = 0xb1, .grains = 5,   /* the template's 0x1040 and 0x1010 = 16 * (M + 1) */
    };
    uint64_t prog[ORK_PROG_ENTRIES];
    struct ork_prog_reloc rel[ORK_PROG_MAX_RELOCS];
    uint32_t n_rel = 0;
    REQUIRE(ork__prog_emit_matmul(&t, prog, rel, &n_rel) == 0);
    int bad = 0;
    for (uint32_t i = 0; i < ORK_PROG_COUNTED; i++) {
        struct ork_regcmd c = ork_regcmd_decode(prog[i]);
        uint32_t want = subst(dt == ORK_NPU_I8 ? expected[i].i8 : expected[i].f16);
        if (c.target != expected[i].target || c.reg != expected[i].reg || c.value != want) {
            fprintf(stderr, "  #%u: got (%04x, %04x, 0x%08x) want (%04x, %04x, 0x%08x)\n", i,
                    c.target, c.reg, c.value, expected[i].target, expected[i].reg, want);
            bad++;
        }
    }
    CHECK_EQ_INT(bad, 0);
    /* trailer, terminal (spec §3.1 #108-#111, §15.1) */
    CHECK(prog[108] == 0);
    CHECK(prog[109] == ork_regcmd_encode(0x0101, 0x0014, 0));
    CHECK(prog[110] == 0x0041000000000000ull);
    CHECK(prog[111] == 0x00810000000d0008ull);
    CHECK_EQ_INT(n_rel, 3);
}

static void test_template_int8(void)
{
    check_template(ORK_NPU_I8, 32);
}

static void test_template_fp16(void)
{
    check_template(ORK_NPU_F16, 16);
}

static void test_counts_and_duplicates(void)
{
    struct ork_mm_task t = { .dtype = ORK_NPU_I8, .m = 100, .k = 2048, .n = 256,
                             .a = A_IOVA, .b = B_IOVA, .c = C_IOVA, .cbuf = 0x48, .grains = 32 };
    uint64_t prog[ORK_PROG_ENTRIES];
    REQUIRE(ork__prog_emit_matmul(&t, prog, NULL, NULL) == 0);
    int cna = 0, core = 0, dpu = 0;
    for (uint32_t i = 0; i < ORK_PROG_COUNTED; i++) {
        struct ork_regcmd c = ork_regcmd_decode(prog[i]);
        CHECK_EQ_INT(ork_regcmd_classify(prog[i]), ORK_REGCMD_WRITE);
        cna += c.target == ORK_TARGET_CNA;
        core += c.target == ORK_TARGET_CORE;
        dpu += c.target == ORK_TARGET_DPU;
        /* every duplicate carries the same value (spec §3.2) */
        for (uint32_t j = 0; j < i; j++) {
            struct ork_regcmd d = ork_regcmd_decode(prog[j]);
            if (d.reg == c.reg)
                CHECK_EQ_INT(d.value, c.value);
        }
    }
    CHECK_EQ_INT(cna, 52);    /* spec §3.1 counting check */
    CHECK_EQ_INT(dpu, 51);
    CHECK_EQ_INT(core, 5);
    /* rules of §3.1 for a general shape */
    CHECK(ork_regcmd_decode(prog[15]).value == 0x48);
    CHECK(ork_regcmd_decode(prog[0]).value == 0x48);
    CHECK(ork_regcmd_decode(prog[8]).value == (0x00010000u | 100));
    CHECK(ork_regcmd_decode(prog[9]).value == ((2047u << 16) | 2048));
    CHECK(ork_regcmd_decode(prog[12]).value == 2048u * 256);
    CHECK(ork_regcmd_decode(prog[16]).value == 2048u / 64);
    CHECK(ork_regcmd_decode(prog[28]).value == 2048u / 16);
    CHECK(ork_regcmd_decode(prog[54]).value == (99u << 16));
    CHECK(ork_regcmd_decode(prog[65]).value == (((256u / 4 - 1) << 16) | (256u / 4 - 1)));
    CHECK(ork_regcmd_decode(prog[66]).value == ((255u << 16) | 255u));
    CHECK(ork_regcmd_decode(prog[74]).value == (99u << 16));
}

static void test_stride(void)
{
    /* A column slice of a wider C: stride s > N (spec §4.2, §4.5). */
    struct ork_mm_task t = { .dtype = ORK_NPU_F16, .m = 8, .k = 64, .n = 32, .stride = 96,
                             .a = A_IOVA, .b = B_IOVA, .c = C_IOVA, .cbuf = 0xb1, .grains = 9 };
    uint64_t prog[ORK_PROG_ENTRIES];
    REQUIRE(ork__prog_emit_matmul(&t, prog, NULL, NULL) == 0);
    CHECK(ork_regcmd_decode(prog[65]).value == (((96u / 4 - 1) << 16) | (32u / 4 - 1)));
    CHECK(ork_regcmd_decode(prog[66]).value == ((95u << 16) | 31u));
    CHECK(ork_regcmd_decode(prog[16]).value == 64u / 32);  /* fp16 DATA_ENTRIES = K/32 */
    CHECK(ork_regcmd_decode(prog[28]).value == 64u / 8);
}

static void test_task_check(void)
{
    struct ork_mm_task ok = { .dtype = ORK_NPU_I8, .m = 4, .k = 32, .n = 32,
                              .a = A_IOVA, .b = B_IOVA, .c = C_IOVA, .cbuf = 0xb1, .grains = 5 };
    uint64_t prog[ORK_PROG_ENTRIES];
    struct ork_mm_task t;
    CHECK(ork__mm_task_check(&ok) == 0);
    t = ok; t.k = 48;
    CHECK(ork__prog_emit_matmul(&t, prog, NULL, NULL) == ORK_EINVAL);
    CHECK(strstr(ork_error_message(), "K=48") != NULL);
    t = ok; t.n = 16;                        /* int8 N must be a multiple of 32 */
    CHECK(ork__mm_task_check(&t) == ORK_EINVAL);
    t = ok; t.dtype = ORK_NPU_F16; t.n = 16;
    CHECK(ork__mm_task_check(&t) == 0);
    t = ok; t.n = 8224;                      /* spec §15.5 */
    CHECK(ork__mm_task_check(&t) == ORK_EINVAL);
    t = ok; t.n = 8192;
    CHECK(ork__mm_task_check(&t) == 0);
    t = ok; t.m = 2048;
    CHECK(ork__mm_task_check(&t) == ORK_EINVAL);
    t = ok; t.a = A_IOVA + 8;
    CHECK(ork__mm_task_check(&t) == ORK_EINVAL);
    t = ok; t.c = 0;
    CHECK(ork__mm_task_check(&t) == ORK_EINVAL);
    t = ok; t.cbuf = 0x0c;                   /* no weight bank: hangs (spec §5.2) */
    CHECK(ork__mm_task_check(&t) == ORK_EINVAL);
    t = ok; t.stride = 16;
    CHECK(ork__mm_task_check(&t) == ORK_EINVAL);
}

static void test_chain(void)
{
    uint64_t p[3][ORK_PROG_ENTRIES];
    uint64_t *ptrs[3] = { p[0], p[1], p[2] };
    uint32_t iovas[3] = { 0x10000, 0x10000 + ORK_PROG_SLOT, 0x10000 + 2 * ORK_PROG_SLOT };
    struct ork_mm_task t = { .dtype = ORK_NPU_I8, .m = 1, .k = 64, .n = 64,
                             .a = A_IOVA, .b = B_IOVA, .c = C_IOVA, .cbuf = 0xb1, .grains = 2 };
    for (int i = 0; i < 3; i++)
        REQUIRE(ork__prog_emit_matmul(&t, p[i], NULL, NULL) == 0);
    REQUIRE(ork__prog_link(ptrs, iovas, 3) == 0);
    for (int i = 0; i < 2; i++) {
        /* (0x0101, 0x0010, next) and (0x0101, 0x0014, 0x37) (spec §8.3) */
        CHECK(p[i][108] == ork_regcmd_encode(0x0101, 0x0010, iovas[i + 1]));
        CHECK(p[i][109] == ork_regcmd_encode(0x0101, 0x0014, 0x37));
        CHECK(p[i][111] == 0x00810000000d0008ull);
    }
    CHECK(p[2][108] == 0);
    CHECK(p[2][109] == ork_regcmd_encode(0x0101, 0x0014, 0));
    CHECK_EQ_INT(ork__prog_pc_amount(108), 55);
    CHECK_EQ_INT(ORK_PROG_BYTES, 896);
    iovas[1] = 0x10008;
    CHECK(ork__prog_link(ptrs, iovas, 3) == ORK_EINVAL);
    /* little-endian store: spec §2.1 word order */
    uint8_t buf[8];
    uint64_t e = 0x0201001f00201024ull;
    ork__prog_store(buf, &e, 1);
    CHECK(buf[0] == 0x24 && buf[1] == 0x10 && buf[2] == 0x20 && buf[3] == 0x00);
    CHECK(buf[4] == 0x1f && buf[5] == 0x00 && buf[6] == 0x01 && buf[7] == 0x02);
}

static void test_validate(void)
{
    struct ork_mm_task t = { .dtype = ORK_NPU_I8, .m = 4, .k = 64, .n = 32,
                             .a = 0x1000, .b = 0x2000, .c = 0x3000, .cbuf = 0xb1, .grains = 5 };
    uint64_t prog[ORK_PROG_ENTRIES];
    struct ork_prog_reloc rel[ORK_PROG_MAX_RELOCS];
    uint32_t n = 0;
    REQUIRE(ork__prog_emit_matmul(&t, prog, rel, &n) == 0);
    /* A = 4*64 = 256 bytes, B = 64*32 = 2048, C = 4*32*4 = 512 */
    struct ork_iova_range good[] = { { 0x1000, 256 }, { 0x2000, 2048 }, { 0x3000, 512 } };
    CHECK(ork__prog_validate(rel, n, 0, good, 3) == 0);
    struct ork_iova_range short_c[] = { { 0x1000, 256 }, { 0x2000, 2048 }, { 0x3000, 511 } };
    CHECK(ork__prog_validate(rel, n, 7, short_c, 3) == ORK_EFAULT);
    CHECK(strstr(ork_error_message(), "task 7: DPU_DST_BASE_ADDR") != NULL);
    /* C overlapping A */
    t.c = 0x1000;
    REQUIRE(ork__prog_emit_matmul(&t, prog, rel, &n) == 0);
    struct ork_iova_range big[] = { { 0x1000, 0x4000 } };
    CHECK(ork__prog_validate(rel, n, 0, big, 1) == ORK_EFAULT);
    CHECK(strstr(ork_error_message(), "OVERLAP") != NULL);
}

/* The generator's chained programs, stored as a program buffer, read back by `ork regdump`:
 * every entry decodes to a known register with its block's target (nothing flagged). */
static void test_regdump_roundtrip(void)
{
    char bin[512], path[] = "/tmp/ork_test_program_XXXXXX";
    snprintf(bin, sizeof bin, "%s/ork", ORK_BINARY_DIR);
    if (access(bin, X_OK) != 0) {
        printf("     (ork binary not built: regdump round trip skipped)\n");
        return;
    }
    uint64_t p[2][ORK_PROG_ENTRIES];
    uint64_t *ptrs[2] = { p[0], p[1] };
    uint32_t iovas[2] = { 0x20000, 0x20000 + ORK_PROG_SLOT };
    struct ork_mm_task t = { .dtype = ORK_NPU_F16, .m = 100, .k = 512, .n = 64, .a = A_IOVA,
                             .b = B_IOVA, .c = C_IOVA, .cbuf = 0x84, .grains = 64 };
    REQUIRE(ork__prog_emit_matmul(&t, p[0], NULL, NULL) == 0);
    t.dtype = ORK_NPU_I8;
    REQUIRE(ork__prog_emit_matmul(&t, p[1], NULL, NULL) == 0);
    REQUIRE(ork__prog_link(ptrs, iovas, 2) == 0);
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    uint8_t buf[2 * ORK_PROG_BYTES];
    ork__prog_store(buf, p[0], ORK_PROG_ENTRIES);
    ork__prog_store(buf + ORK_PROG_BYTES, p[1], ORK_PROG_ENTRIES);
    CHECK(write(fd, buf, sizeof buf) == (ssize_t)sizeof buf);
    close(fd);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "'%s' regdump '%s'", bin, path);
    FILE *f = popen(cmd, "r");
    REQUIRE(f != NULL);
    char line[512];
    int n_lines = 0, flagged = 0, ends = 0, summary = 0;
    while (fgets(line, sizeof line, f)) {
        n_lines++;
        flagged += strstr(line, "!!") != NULL;
        ends += strncmp(line, "-- end of task", 14) == 0;
        summary += strcmp(line, "224 entries, 0 flagged\n") == 0;
    }
    CHECK_EQ_INT(pclose(f), 0);
    unlink(path);
    CHECK_EQ_INT(flagged, 0);
    CHECK_EQ_INT(ends, 2);
    CHECK_EQ_INT(summary, 1);
    CHECK_EQ_INT(n_lines, 224 + 2 + 1);
}

int main(void)
{
    build_expected();
    RUN(test_template_int8);
    RUN(test_template_fp16);
    RUN(test_counts_and_duplicates);
    RUN(test_stride);
    RUN(test_task_check);
    RUN(test_chain);
    RUN(test_validate);
    RUN(test_regdump_roundtrip);
    return ork_test_done();
}
