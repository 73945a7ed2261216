/* gen_regcmd_corpus.c -- writes the seed corpus of tests/fuzz/fuzz_regcmd.c: valid programs of
 * every simulated output mode (built from the spec §3.1 table by tests/sim/test_exec_util.h)
 * and corrupt ones (one hazard each). Not part of the build; regenerate with
 *   cc -std=c11 -Iinclude -Isrc -Itests/sim tests/fuzz/corpus/regcmd/gen_regcmd_corpus.c \
 *      build/libork.a -o /tmp/gen_regcmd && /tmp/gen_regcmd tests/fuzz/corpus/regcmd
 * Input format: see fuzz_regcmd.c (4-byte header, then 8-byte little-endian entries). */
#include <stdio.h>

#include "test_exec_util.h"

#include "libork/program.h"

#define A_IOVA 0x10000000u  /* = fuzz_regcmd.c FZ_*_IOVA */
#define B_IOVA 0x20000000u
#define C_IOVA 0x40000000u

enum { F_STRICT = 1, F_COMPUTE = 2, F_ENABLE = 4, F_AMOUNT_UNKNOWN = 8 };

static const char *dir;

static void put(const char *name, uint8_t flags, int8_t delta, const uint64_t *e, uint32_t n)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        exit(1);
    }
    uint8_t hdr[4] = { flags, (uint8_t)delta, 0, 0 };
    fwrite(hdr, 1, 4, f);
    for (uint32_t i = 0; i < n; i++) {
        uint8_t b[8];
        ork_regcmd_store(b, e[i]);
        fwrite(b, 1, 8, f);
    }
    fclose(f);
}

static struct tprog P(enum tmode md, uint32_t m, uint32_t k, uint32_t n)
{
    struct tprog p = { .mode = md, .m = m, .k = k, .n = n, .a = A_IOVA, .b = B_IOVA, .c = C_IOVA };
    return p;
}

static void valid(const char *name, struct tprog p, uint8_t flags)
{
    struct tbuilt b;
    tp_build(&p, &b);
    put(name, flags, 0, b.e, b.n);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
        return 2;
    }
    dir = argv[1];
    uint8_t run = F_COMPUTE | F_ENABLE;
    struct tprog p;
    struct tbuilt b;

    valid("ok_i8_4x32x32", P(TM_I8_I32, 4, 32, 32), run);
    valid("ok_f16_4x32x16", P(TM_F16_F32, 4, 32, 16), run);
    p = P(TM_I8_I8, 4, 512, 32);
    p.mult = 0x4000;
    p.shift = 14;
    valid("ok_i8_requant", p, run);
    p.mode = TM_I8_I16;
    p.mult = 3;
    p.shift = 1;
    p.offset = -5;
    valid("ok_i8_int16", p, run);
    valid("ok_f16_f16", P(TM_F16_F16, 2, 64, 32), run);
    p = P(TM_I8_I32, 64, 512, 64);
    p.s = 96;
    valid("ok_i8_stride", p, run);
    valid("ok_i8_decode", P(TM_I8_I32, 1, 4096, 32), run);
    p = P(TM_F16_F32, 200, 128, 16);
    valid("ok_f16_k128", p, F_ENABLE);

    /* chained: the trailer names a next program */
    p = P(TM_I8_I32, 4, 32, 32);
    tp_build(&p, &b);
    b.e[b.amount] = ork_regcmd_encode(ORK_TARGET_PC, ORK_REG_PC_BASE_ADDRESS, 0x00100400);
    b.e[b.amount + 1] = ork_regcmd_encode(ORK_TARGET_PC, ORK_REG_PC_REGISTER_AMOUNTS, 0x37);
    put("ok_chained", run, 0, b.e, b.n);

    /* LUT load (§7) */
    memset(&b, 0, sizeof b);
    tp_emit(&b, ORK_REG_DPU_LUT_INDEX, 0);
    for (uint32_t i = 0; i < 64; i++)
        tp_emit(&b, ORK_REG_DPU_LUT_DATA, i * 1021u);
    b.amount = b.n;
    b.e[b.n++] = 0;
    b.e[b.n++] = ork_regcmd_encode(ORK_TARGET_PC, ORK_REG_PC_REGISTER_AMOUNTS, 0);
    b.e[b.n++] = ork_regcmd_encode(ORK_TARGET_PC_MARKER, 0, 0);
    b.e[b.n++] = ork_regcmd_encode(ORK_TARGET_PC_OPEN, ORK_REG_PC_OPERATION_ENABLE, 0x18);
    put("ok_lut_load", 0, 0, b.e, b.n);

    /* odd amount with a padding entry */
    p = P(TM_I8_I32, 4, 32, 32);
    tp_build(&p, &b);
    b.e[107] = 0;
    put("ok_odd_padded", run, -1, b.e, b.n);

    /* corrupt ones */
    tp_build(&p, &b);
    put("bad_no_trailer", run, -4, b.e, b.amount);
    put("bad_amount", run, 2, b.e, b.n);
    b.e[59] = ork_regcmd_encode(ORK_TARGET_CNA, ORK_REG_DPU_DATA_FORMAT, 0x80000000u);
    put("bad_target", run, 0, b.e, b.n);
    tp_build(&p, &b);
    tp_set(&b, ORK_REG_DPU_DATA_FORMAT, 0x40000000u);
    put("bad_dead_mode", run, 0, b.e, b.n);
    tp_build(&p, &b);
    tp_set(&b, ORK_REG_DPU_DST_BASE_ADDR, C_IOVA + (256u << 10) - 64);
    put("bad_c_oob", run, 0, b.e, b.n);
    tp_build(&p, &b);
    tp_set(&b, ORK_REG_CORE_MISC_CFG, 0x201);
    put("bad_mixed_precision", run, 0, b.e, b.n);
    p = P(TM_I8_I32, 65, 512, 32);
    p.cbuf = 0xb1;
    tp_build(&p, &b);
    put("bad_m_above_cap", run, 0, b.e, b.n);
    put("strict_m_above_cap", run | F_STRICT, 0, b.e, b.n);

    /* int4 x int4 -> int16 programs (W4A8), from libork's emitter (program.c, t.i4) */
    static const uint32_t i4_shapes[][3] = { { 8, 256, 128 }, { 128, 512, 64 } };
    static const char *const i4_names[] = { "ok_i4_8x256x128", "strict_i4_128x512x64" };
    uint64_t e[ORK_PROG_ENTRIES];
    for (int i = 0; i < 2; i++) {
        struct ork_mm_task t = { .dtype = ORK_NPU_I8, .i4 = true, .m = i4_shapes[i][0],
                                 .k = i4_shapes[i][1], .n = i4_shapes[i][2], .a = A_IOVA,
                                 .b = B_IOVA, .c = C_IOVA };
        if (ork__prog_emit_matmul(&t, e, NULL, NULL) < 0)
            return 1;
        put(i4_names[i], i ? run | F_STRICT : run, 0, e, ORK_PROG_ENTRIES);
        if (i == 0) {
            e[29] = ork_regcmd_encode(ORK_TARGET_CNA, ORK_REG_CNA_DMA_CON2, 0); /* #29 */
            put("bad_i4_dma_con2", run, 0, e, ORK_PROG_ENTRIES);
        }
    }
    return 0;
}
