/* test_dcomp_errors.c -- the decompressor stream decoder (include/ork/dcomp.h) rejects each
 * kind of malformed stream with ORK_EFORMAT and a message naming what is wrong: a bad AMOUNTn
 * (below the minimum, larger than its lane needs), a truncated lane, lanes past the readable
 * bytes, a bad header, a code outside the grid, a misaligned DCOMP_ADDR0, bad DCOMP_CTRL /
 * DCOMP_REGNUM, non-zero padding; random corruption never crashes or reads past the stream. */
#include "ork_test.h"

#include <ork/dcomp.h>
#include <ork/error.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define K 128u
#define N 128u

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

/* A valid compressed stream of a 128 x 128 block of codes in [-15, 15] (shrinks). */
struct fixture {
    uint8_t native[K * N];
    uint8_t stream[K * N + 4096];
    uint8_t out[K * N];
    struct ork_dcomp_regs regs;
    struct ork_dcomp_block_info info;
};

static void setup(struct fixture *f)
{
    memset(f, 0, sizeof *f);
    for (uint32_t i = 0; i < K * N; i++) {
        int v = (int)(rnd() % 11) + (int)(rnd() % 11) + (int)(rnd() % 11) - 15;
        f->native[i] = (uint8_t)(int8_t)v;
    }
    int ret = ork_dcomp_block_encode(f->native, K, N, 0, f->stream, sizeof f->stream, &f->regs,
                                     &f->info);
    if (ret != 0 || f->info.raw)
        fprintf(stderr, "setup: %d raw=%d %s\n", ret, f->info.raw, ork_error_message());
}

/* Decode and expect ORK_EFORMAT whose message contains `want`. */
static int expect(struct fixture *f, const struct ork_dcomp_regs *regs, uint64_t avail,
                  const struct ork_dcomp_check *chk, const char *want)
{
    ork_error_clear();
    int ret = ork_dcomp_block_decode(f->stream, avail, K, N, regs, chk, f->out);
    if (ret != ORK_EFORMAT || !strstr(ork_error_message(), want)) {
        fprintf(stderr, "expected EFORMAT with \"%s\", got %d \"%s\"\n", want, ret,
                ork_error_message());
        return 0;
    }
    return 1;
}

static void test_valid_first(void)
{
    static struct fixture f;
    setup(&f);
    REQUIRE(!f.info.raw);
    CHECK_EQ_INT(ork_dcomp_block_decode(f.stream, f.info.bytes, K, N, &f.regs, NULL, f.out), 0);
    CHECK(memcmp(f.out, f.native, sizeof f.out) == 0);
    /* the grid check passes for the grid the codes are on */
    struct ork_dcomp_check chk = { .max_abs = 15 };
    CHECK_EQ_INT(ork_dcomp_block_decode(f.stream, f.info.bytes, K, N, &f.regs, &chk, f.out), 0);
}

static void test_bad_amount(void)
{
    static struct fixture f;
    setup(&f);
    struct ork_dcomp_regs r = f.regs;
    r.amount[3] = 5;
    CHECK(expect(&f, &r, f.info.bytes, NULL, "AMOUNT3 = 5 is below the minimum"));
    /* a last lane declared larger than its symbols need: strict rejects, lenient decodes */
    r = f.regs;
    r.amount[15] += 4;
    CHECK(expect(&f, &r, sizeof f.stream, NULL, "AMOUNT15"));
    struct ork_dcomp_check lenient = { .lenient = true };
    CHECK_EQ_INT(ork_dcomp_block_decode(f.stream, sizeof f.stream, K, N, &r, &lenient, f.out), 0);
    CHECK(memcmp(f.out, f.native, sizeof f.out) == 0);
}

static void test_truncated(void)
{
    static struct fixture f;
    setup(&f);
    struct ork_dcomp_regs r = f.regs;
    REQUIRE(r.amount[3] > 8);
    r.amount[3] -= 1;               /* lane 3 one unit short of its symbols */
    CHECK(expect(&f, &r, f.info.bytes, NULL, "lane 3 truncated"));
    /* fewer bytes readable than the lanes span */
    CHECK(expect(&f, &f.regs, f.info.bytes - 64, NULL, "lane 15"));
    CHECK(expect(&f, &f.regs, f.info.bytes - 64, NULL, "past the"));
    CHECK(expect(&f, &f.regs, 0, NULL, "lane 0"));
}

static void test_bad_header(void)
{
    static struct fixture f;
    setup(&f);
    const uint64_t l5 = ork_dcomp_lane_offset(&f.regs, 5);
    f.stream[l5] = 1;
    CHECK(expect(&f, &f.regs, f.info.bytes, NULL, "lane 5 header byte 0"));
    f.stream[l5] = 0;
    f.stream[l5 + 9] = 0x40;
    CHECK(expect(&f, &f.regs, f.info.bytes, NULL, "lane 5 header byte 9"));
    f.stream[l5 + 9] = 0;
    f.stream[l5 + 4] = (uint8_t)((f.stream[l5 + 4] & 0xf0) | (f.stream[l5 + 4] >> 4));
    CHECK(expect(&f, &f.regs, f.info.bytes, NULL, "lane 5 rank table is not a permutation"));
}

static void test_grid_and_alignment(void)
{
    static struct fixture f;
    setup(&f);
    struct ork_dcomp_check chk = { .max_abs = 7 };
    CHECK(expect(&f, &f.regs, f.info.bytes, &chk, "outside the grid [-7, 7]"));
    chk = (struct ork_dcomp_check){ .addr = 0x10010 };
    CHECK(expect(&f, &f.regs, f.info.bytes, &chk, "DCOMP_ADDR0 = 0x10010 is not 64-byte aligned"));
    chk = (struct ork_dcomp_check){ .addr = 0x10040 };
    CHECK_EQ_INT(ork_dcomp_block_decode(f.stream, f.info.bytes, K, N, &f.regs, &chk, f.out), 0);
}

static void test_bad_ctrl_regnum(void)
{
    static struct fixture f;
    setup(&f);
    struct ork_dcomp_regs r = f.regs;
    r.ctrl = 9;                     /* WT_DEC_BYPASS | DECOMP_CONTROL = 1: not a known mode */
    CHECK(expect(&f, &r, f.info.bytes, NULL, "DCOMP_CTRL = 0x9"));
    r = f.regs;
    r.regnum = 0;
    CHECK(expect(&f, &r, f.info.bytes, NULL, "DCOMP_REGNUM = 0x00000000"));
    /* a raw task must not carry AMOUNTs (spec §1.2) and needs the whole raw block */
    r = f.regs;
    r.ctrl = 0;
    r.regnum = 0;
    CHECK(expect(&f, &r, sizeof f.stream, NULL, "raw task (DCOMP_CTRL = 0) with AMOUNT0"));
    memset(&r, 0, sizeof r);
    CHECK(expect(&f, &r, K * N - 1, NULL, "raw block 128 x 128 needs 16384 bytes"));
}

static void test_padding(void)
{
    uint8_t blk[1024] = { 0 }, s[2048], out[1024];
    struct ork_dcomp_regs regs;
    struct ork_dcomp_block_info info;
    REQUIRE(ork_dcomp_block_encode(blk, 32, 32, ORK_DCOMP_ENCODE_FORCE, s, sizeof s, &regs,
                                   &info) == 0);
    s[127] = 0x80;                  /* lane 0's symbols end at bit 320 of 1024 */
    CHECK_EQ_INT(ork_dcomp_block_decode(s, sizeof s, 32, 32, &regs, NULL, out), ORK_EFORMAT);
    CHECK(strstr(ork_error_message(), "lane 0 has a non-zero bit 1023 in its padding") != NULL);
    struct ork_dcomp_check lenient = { .lenient = true };
    CHECK_EQ_INT(ork_dcomp_block_decode(s, sizeof s, 32, 32, &regs, &lenient, out), 0);
    CHECK(memcmp(out, blk, sizeof blk) == 0);
}

/* Random byte and register corruption: every decode returns 0 or an error with a message
 * (ASan catches any read past the stream, which is allocated to its exact size). */
static void test_random_corruption(void)
{
    static struct fixture f;
    setup(&f);
    uint8_t *exact = malloc(f.info.bytes);
    REQUIRE(exact);
    int rejected = 0;
    for (int it = 0; it < 300; it++) {
        memcpy(exact, f.stream, f.info.bytes);
        struct ork_dcomp_regs r = f.regs;
        for (int j = 0; j < 1 + it % 4; j++)
            exact[rnd() % f.info.bytes] ^= (uint8_t)(1u << (rnd() % 8));
        if (it % 5 == 0)
            r.amount[rnd() % 16] = rnd() % 64;
        ork_error_clear();
        int ret = ork_dcomp_block_decode(exact, f.info.bytes, K, N, &r, NULL, f.out);
        CHECK(ret == 0 || (ret == ORK_EFORMAT && ork_error_message()[0] != '\0'));
        rejected += ret != 0;
    }
    CHECK(rejected > 0);
    free(exact);
}

int main(void)
{
    RUN(test_valid_first);
    RUN(test_bad_amount);
    RUN(test_truncated);
    RUN(test_bad_header);
    RUN(test_grid_and_alignment);
    RUN(test_bad_ctrl_regnum);
    RUN(test_padding);
    RUN(test_random_corruption);
    return ork_test_done();
}
