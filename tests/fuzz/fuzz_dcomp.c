/* fuzz_dcomp.c -- libFuzzer target for the decompressor stream decoder (include/ork/dcomp.h;
 * also replayed over the committed corpus tests/fuzz/corpus/dcomp/ by every build).
 * Input: byte 0 = K tiles - 1 (mod 4), byte 1 = N tiles - 1 (mod 4), byte 2 = mode (bit 0
 * lenient, bits 1-3 the grid bound, bit 4 a raw task, bit 5 a misaligned DCOMP_ADDR0), byte 3
 * unused, then DCOMP_AMOUNT0..15 as 16 little-endian uint32, then the stream. A rejected
 * stream must say why; an accepted one must lie on the grid and survive encode -> decode. */
#include <ork/alloc.h>
#include <ork/dcomp.h>
#include <ork/error.h>

#include <stdint.h>
#include <string.h>

#define HDR 4u
#define TILES 4u

static const uint32_t bounds[8] = { 0, 7, 15, 31, 63, 127, 1, 3 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < HDR + 4 * ORK_DCOMP_LANES)
        return 0;
    const uint32_t k = ORK_DCOMP_TILE * (1 + data[0] % TILES);
    const uint32_t n = ORK_DCOMP_TILE * (1 + data[1] % TILES);
    const uint8_t mode = data[2];
    struct ork_dcomp_regs regs = {
        .ctrl = (mode & 0x10) ? ORK_DCOMP_CTRL_RAW : ORK_DCOMP_CTRL_ON,
        .regnum = (mode & 0x10) ? 0 : ORK_DCOMP_REGNUM_NORMAL,
    };
    for (uint32_t l = 0; l < ORK_DCOMP_LANES; l++) {
        const uint8_t *p = data + HDR + 4 * l;
        regs.amount[l] = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                         (uint32_t)p[3] << 24;
    }
    const struct ork_dcomp_check chk = {
        .addr = (mode & 0x20) ? 0x1010 : 0x1000,
        .max_abs = bounds[(mode >> 1) & 7],
        .lenient = mode & 1,
    };
    const size_t off = HDR + 4 * ORK_DCOMP_LANES;
    /* the stream in a buffer of its exact size, so any over-read is a sanitizer report */
    uint8_t *src = ork_malloc(size - off ? size - off : 1);
    uint8_t *out = ork_malloc((size_t)k * n), *again = ork_malloc((size_t)k * n);
    uint64_t cap = ork_dcomp_block_bound(k, n);
    uint8_t *enc = ork_malloc(cap);
    if (!src || !out || !again || !enc)
        goto done;
    memcpy(src, data + off, size - off);
    ork_error_clear();
    int ret = ork_dcomp_block_decode(src, size - off, k, n, &regs, &chk, out);
    if (ret < 0) {
        if (ret != ORK_EFORMAT || ork_error_message()[0] == '\0')
            __builtin_trap();               /* every rejection says why */
        goto done;
    }
    for (size_t i = 0; chk.max_abs && i < (size_t)k * n; i++)
        if ((int8_t)out[i] > (int)chk.max_abs || (int8_t)out[i] < -(int)chk.max_abs)
            __builtin_trap();               /* accepted codes lie on the grid */
    struct ork_dcomp_regs r2;
    struct ork_dcomp_block_info info;
    if (ork_dcomp_block_encode(out, k, n, ORK_DCOMP_ENCODE_FORCE, enc, cap, &r2, &info) != 0 ||
        ork_dcomp_block_decode(enc, info.bytes, k, n, &r2, NULL, again) != 0 ||
        memcmp(out, again, (size_t)k * n) != 0)
        __builtin_trap();                   /* what decodes re-encodes exactly */
done:
    ork_free(enc);
    ork_free(again);
    ork_free(out);
    ork_free(src);
    return 0;
}
