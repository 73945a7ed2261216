/* test_dcomp_hazard.c -- the simulator's checks on compressed weight tasks (hazard_check.c,
 * exec_matmul.c; npu-weight-decompression.md §1.2, §1.4): a task whose DCOMP registers or stream
 * are wrong fails its job with a hazard naming the fault -- a lane size below the minimum, an
 * AMOUNTn that disagrees with its lane, a damaged stream, a DCOMP_ADDR0 that is not 64-byte
 * aligned or whose lanes run past its buffer, an unknown mode -- and never crashes, on any
 * random damage of the stream (run under the sanitizers). The programs come from libork's own
 * emitter; each case damages one task's program or stream in the device buffers, as a bug or
 * a bad blob would. */
#include "ork_test.h"

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/npu.h>
#include <ork/regs.h>
#include <ork/sim.h>

#include "libork/ork_priv.h"

#include <stdint.h>
#include <string.h>

#define K 1024u
#define N 3072u

static struct ork_npu *npu;
static int8_t w[N * K], a[K];
static int32_t c[N];
static uint64_t rng = 0x853c49e6748fea9bull;

static uint32_t next_u32(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

struct fixture {
    struct ork_npu_weights *wt;
    struct ork_npu_matmul *mm;
};

static bool setup(struct fixture *f)
{
    memset(f, 0, sizeof *f);
    struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = ORK_NPU_I8, .k = K,
                                       .n = N, .w = w, .encoding = ORK_NPU_WEIGHTS_DCOMP,
                                       .grid_max_abs = 15 };
    struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = 1, .cores = 3,
                                      .flags = ORK_NPU_MATMUL_NO_WARMUP };
    if (ork_npu_weights_create(npu, &wd, &f->wt) < 0 || ork_npu_matmul_create(f->wt, &md, &f->mm) < 0) {
        fprintf(stderr, "setup: %s\n", ork_error_message());
        return false;
    }
    return f->wt->dw.n_raw == 0 && f->mm->n_tasks == 3;
}

static void teardown(struct fixture *f)
{
    ork_npu_matmul_destroy(f->mm);
    ork_npu_weights_destroy(f->wt);
}

/* Set every write of register `reg` in task t's program to v (both copies of CTRL/REGNUM). */
static void patch_reg(struct fixture *f, uint32_t t, uint16_t reg, uint32_t v)
{
    uint8_t *p = (uint8_t *)f->mm->prog_bo.map + (size_t)t * ORK_PROG_SLOT;
    for (uint32_t i = 0; i < ORK_PROG_COUNTED; i++) {
        uint64_t e = ork_regcmd_load(p + 8 * i);
        struct ork_regcmd rc = ork_regcmd_decode(e);
        if (rc.reg == reg)
            ork_regcmd_store(p + 8 * i, ork_regcmd_encode(rc.target, reg, v));
    }
    ork__npu_bo_sync(npu, &f->mm->prog_bo, 0, f->mm->prog_bo.size, ORK_KBO_SYNC_TO_DEVICE);
}

static uint32_t get_reg(struct fixture *f, uint32_t t, uint16_t reg)
{
    const uint8_t *p = (const uint8_t *)f->mm->prog_bo.map + (size_t)t * ORK_PROG_SLOT;
    for (uint32_t i = 0; i < ORK_PROG_COUNTED; i++) {
        struct ork_regcmd rc = ork_regcmd_decode(ork_regcmd_load(p + 8 * i));
        if (rc.reg == reg)
            return rc.value;
    }
    return 0;
}

static void poke_stream(struct fixture *f, uint32_t block, uint64_t off, uint8_t xor_mask)
{
    uint64_t at = f->wt->dw.parts[block].off + off;
    ((uint8_t *)f->wt->bo.map)[at] ^= xor_mask;
    ork__npu_bo_sync(npu, &f->wt->bo, 0, f->wt->bo.size, ORK_KBO_SYNC_TO_DEVICE);
}

/* Run, expect a failure whose message holds every one of the words. */
static bool fails_with(struct fixture *f, const char *w1, const char *w2)
{
    int ret = ork_npu_matmul_run_i8(f->mm, a, 1, c);
    const char *msg = ork_error_message();
    bool ok = ret < 0 && strstr(msg, w1) && (!w2 || strstr(msg, w2));
    printf("  %s: %s\n", ok ? "ok" : "WRONG", ret < 0 ? msg : "(ran)");
    return ok;
}

static void test_intact(void)
{
    struct fixture f;
    REQUIRE(setup(&f));
    CHECK(ork_npu_matmul_run_i8(f.mm, a, 1, c) == 0);
    for (uint32_t j = 0; j < N; j++) {
        int32_t acc = 0;
        for (uint32_t k = 0; k < K; k++)
            acc += (int32_t)a[k] * w[(size_t)j * K + k];
        CHECK_EQ_INT(c[j], acc);
    }
    CHECK_EQ_INT(get_reg(&f, 0, ORK_REG_CNA_DCOMP_CTRL), ORK_DCOMP_CTRL_ON);
    CHECK_EQ_INT(get_reg(&f, 0, ORK_REG_CNA_DCOMP_REGNUM), ORK_DCOMP_REGNUM_NORMAL);
    CHECK_EQ_INT(get_reg(&f, 1, ORK_REG_CNA_DCOMP_AMOUNT7), f.wt->dw.parts[1].regs.amount[7]);
    teardown(&f);
}

static void test_faults(void)
{
    struct fixture f;
    REQUIRE(setup(&f));
    patch_reg(&f, 0, ORK_REG_CNA_DCOMP_AMOUNT3, 5);                  /* below 8 units */
    CHECK(fails_with(&f, "DCOMP_AMOUNT", "CNA_DCOMP_AMOUNT3 = 5"));
    teardown(&f);

    REQUIRE(setup(&f));
    uint32_t am = get_reg(&f, 1, ORK_REG_CNA_DCOMP_AMOUNT9);
    patch_reg(&f, 1, ORK_REG_CNA_DCOMP_AMOUNT9, am + 8);             /* lane 9 says too much */
    CHECK(fails_with(&f, "DCOMP_STREAM", "AMOUNT9"));
    teardown(&f);

    REQUIRE(setup(&f));
    poke_stream(&f, 2, 0, 0x01);                                     /* lane 0 header byte 0 */
    CHECK(fails_with(&f, "DCOMP_STREAM", "header"));
    teardown(&f);

    REQUIRE(setup(&f));
    uint32_t addr = get_reg(&f, 0, ORK_REG_CNA_DCOMP_ADDR0);
    patch_reg(&f, 0, ORK_REG_CNA_DCOMP_ADDR0, addr + 16);            /* 16- but not 64-aligned */
    CHECK(fails_with(&f, "DCOMP_ALIGN", "64-byte"));
    teardown(&f);

    REQUIRE(setup(&f));
    addr = (uint32_t)(f.wt->bo.iova + f.wt->bo.size - 1024);       /* lanes past the buffer */
    patch_reg(&f, 0, ORK_REG_CNA_DCOMP_ADDR0, addr);
    CHECK(fails_with(&f, "ADDR_OOB", "DCOMP lanes"));
    teardown(&f);

    REQUIRE(setup(&f));
    patch_reg(&f, 2, ORK_REG_CNA_DCOMP_REGNUM, 0x12345678);          /* both copies */
    CHECK(fails_with(&f, "DCOMP_MODE", "0x12345678"));
    teardown(&f);

    REQUIRE(setup(&f));
    patch_reg(&f, 2, ORK_REG_CNA_DCOMP_CTRL, 9);                     /* WT_DEC_BYPASS | 1 */
    CHECK(fails_with(&f, "DCOMP_MODE", NULL));
    teardown(&f);

    /* the device is still usable */
    REQUIRE(setup(&f));
    CHECK(ork_npu_matmul_run_i8(f.mm, a, 1, c) == 0);
    teardown(&f);
}

/* Random damage of the streams: the prefix code is complete (§1.4), so most flipped bits
 * decode to other weights rather than to an error -- the run then computes with them (proof
 * that the simulator reads the stream it was given); flips in a header, a rank table or the
 * padding are refused as DCOMP_STREAM. Never a crash (the sanitizer build runs this too). */
static void test_random_damage(void)
{
    struct fixture f;
    REQUIRE(setup(&f));
    static int32_t good[N];
    REQUIRE(ork_npu_matmul_run_i8(f.mm, a, 1, good) == 0);
    uint32_t refused = 0, changed = 0;
    for (int it = 0; it < 40; it++) {
        uint32_t b = next_u32() % 3;
        uint64_t len = f.wt->dw.parts[b].info.bytes;
        uint64_t off = it % 4 == 0 ? next_u32() % 16 : next_u32() % len;   /* some headers */
        uint8_t mask = (uint8_t)(1u << (next_u32() % 8));
        poke_stream(&f, b, off, mask);
        int ret = ork_npu_matmul_run_i8(f.mm, a, 1, c);
        if (ret < 0) {
            refused++;
            CHECK(strstr(ork_error_message(), "DCOMP_STREAM") != NULL);
        } else {
            changed += memcmp(c, good, sizeof c) != 0;
        }
        poke_stream(&f, b, off, mask);                              /* undo */
    }
    printf("  40 single-bit flips: %u refused, %u ran with other weights\n", refused, changed);
    CHECK(refused > 0);
    CHECK(changed > 0);
    CHECK(ork_npu_matmul_run_i8(f.mm, a, 1, c) == 0);
    CHECK(memcmp(c, good, sizeof c) == 0);
    teardown(&f);
}

int main(void)
{
    for (size_t i = 0; i < sizeof w; i++) {
        int v = (int)(next_u32() % 9) + (int)(next_u32() % 9) - 8;  /* [-8, 8] peaked at 0 */
        w[i] = (int8_t)v;
    }
    for (size_t i = 0; i < sizeof a; i++)
        a[i] = (int8_t)(next_u32() & 0xff);
    struct ork_sim_opts so = { .struct_size = sizeof so, .strict = true };
    struct ork_npu_opts o = { .struct_size = sizeof o, .device = "sim", .sim = &so };
    int ret = ork_npu_open(&o, &npu);
    if (ret < 0) {
        fprintf(stderr, "open sim: %s\n", ork_error_describe(ret));
        return 1;
    }
    RUN(test_intact);
    RUN(test_faults);
    RUN(test_random_damage);
    ork_npu_close(npu);
    return ork_test_done();
}
