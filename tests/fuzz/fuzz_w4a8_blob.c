/* fuzz_w4a8_blob.c -- libFuzzer target for the parser of the W4A8 weights blob
 * (src/libork/w4a8_blob.c and the packed-data checks of w4a8_weights.c: what
 * ork_npu_weights_create_packed takes back from an .orkpack; also replayed over
 * tests/fuzz/corpus/w4a8_blob/ by every build).
 * Input: the blob itself. The shape the parser is asked to expect (k, n, max_m) is read from the
 * blob's own header (bytes 12-23), bounded so that planning stays cheap, so mutated headers
 * reach the slice table and the data. An accepted blob has every slice even, of <= 2048, and
 * exactly its declared bytes; its data is then checked (padding zero, the int16 bound) and
 * summed per column. Crashes, sanitizer reports and hangs are bugs. */
#include <ork/alloc.h>
#include <ork/error.h>

#include "libork/w4a8.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DIM 20000u                  /* bounds of the expected shape */
#define MAX_M 512u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 24)
        return 0;
    const uint32_t k = 1 + (le32(data + 12) - 1) % MAX_DIM, n = 1 + (le32(data + 16) - 1) % MAX_DIM;
    const uint32_t max_m = 1 + (le32(data + 20) - 1) % MAX_M;
    struct ork_kplan kp;
    const uint8_t *d = NULL;
    if (ork__w4a8_blob_parse(data, size, k, n, max_m, &kp, &d) < 0) {
        if (!ork_error_message()[0])
            abort();                    /* a refusal names its fault */
        return 0;
    }
    const uint32_t np = (n + ORK_PLAN_I4_N_TILE - 1) / ORK_PLAN_I4_N_TILE * ORK_PLAN_I4_N_TILE;
    uint64_t off[ORK_PLAN_MAX_KSLICES];
    const uint64_t bytes = ork__w4a8_layout(&kp, np, off);
    if (!d || d < data || (uint64_t)(data + size - d) != bytes || kp.n_slices < 1)
        abort();
    uint32_t covered = 0;
    for (uint32_t j = 0; j < kp.n_slices; j++) {
        if (kp.s[j].pad > ORK_PLAN_I4_K_MAX || kp.s[j].pad % ORK_PLAN_K_ALIGN ||
            kp.s[j].off != covered || kp.s[j].len > kp.s[j].pad)
            abort();
        covered += kp.s[j].len;
    }
    if (covered != k)
        abort();
    int32_t *sums = ork_malloc((size_t)n * sizeof *sums);
    if (!sums)
        return 0;
    if (ork__w4a8_check_packed(d, &kp, n, np, off, sums) < 0 && !ork_error_message()[0])
        abort();
    ork_free(sums);
    return 0;
}
