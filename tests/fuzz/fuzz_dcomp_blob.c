/* fuzz_dcomp_blob.c -- libFuzzer target for the parser of the DCOMP weights blob
 * (src/libork/dcomp_blob.c: what ork_npu_weights_create_packed takes back from an .orkpack;
 * also replayed over tests/fuzz/corpus/dcomp_blob/ by every build).
 * Input: the blob itself. The shape the parser is asked to expect (k, n, max_m) is read from
 * the blob's own header (bytes 12-23), bounded so that planning stays cheap, so mutated
 * headers reach the block table. An accepted blob has every block inside the data, 64-byte
 * aligned and of the size its registers give; each compressed block is then decoded strictly
 * (a rejected stream must say why). Crashes, sanitizer reports and hangs are bugs. */
#include <ork/alloc.h>
#include <ork/dcomp.h>
#include <ork/error.h>

#include "libork/dcomp_blob.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DIM 20000u                  /* bounds of the expected shape */
#define MAX_M 512u
#define MAX_BLOCK (1u << 22)            /* decode blocks up to 4 MiB */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 24)
        return 0;
    const uint32_t k = 1 + le32(data + 12) % MAX_DIM, n = 1 + le32(data + 16) % MAX_DIM;
    const uint32_t max_m = 1 + le32(data + 20) % MAX_M;
    struct ork_dcomp_weights dw;
    const uint8_t *blocks = NULL;
    uint32_t grid = 0;
    int ret = ork__dcomp_blob_parse(data, size, k, n, max_m, &dw, &blocks, &grid);
    if (ret < 0) {
        if (!ork_error_message()[0])
            abort();                    /* a refusal names its fault */
        return 0;
    }
    if (!blocks || grid < ORK_DCOMP_GRID_MIN || grid > ORK_DCOMP_GRID_MAX)
        abort();
    uint8_t *out = NULL;
    for (uint32_t p = 0; p < dw.n_parts; p++) {
        const struct ork_dcomp_part *pt = &dw.parts[p];
        const uint64_t raw = (uint64_t)pt->kpad * pt->npad;
        if (pt->off % ORK_DCOMP_ALIGN || pt->off + pt->info.bytes > dw.bytes)
            abort();
        if (pt->info.raw || raw > MAX_BLOCK)
            continue;
        if (!out && !(out = ork_malloc(MAX_BLOCK)))
            break;
        const struct ork_dcomp_check chk = { .addr = pt->off, .max_abs = grid };
        if (ork_dcomp_block_decode(blocks + pt->off, pt->info.bytes, pt->kpad, pt->npad,
                                   &pt->regs, &chk, out) < 0 && !ork_error_message()[0])
            abort();
    }
    ork_free(out);
    ork_dcomp_weights_fini(&dw);
    return 0;
}
