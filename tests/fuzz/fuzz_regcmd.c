/* fuzz_regcmd.c -- libFuzzer target for the simulator's regcmd decoder, hazard checker and
 * executor (src/sim/sim_exec.h), also replayed over tests/fuzz/corpus/regcmd/ by every build.
 *
 * Input: a 4-byte header, then the program as stored (8-byte little-endian entries, spec §2.1):
 *   byte 0   flags: bit 0 strict mode, bit 1 compute (else timing-only), bit 2 descriptor
 *            enable_mask 0x0d (else 0 = not compared), bit 3 regcfg_amount unknown (0)
 *   byte 1   regcfg_amount = (entries - 4) + (int8)byte1 (the descriptor may lie, §14.1)
 *   byte 2-3 reserved
 * The fake device memory has A, B and C buffers at the IOVAs the seed programs use, so mutated
 * programs reach the executor. Errors are expected; crashes, sanitizer reports and hangs are
 * not. Large shapes run timing-only so that one input stays fast. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ork/error.h>

#include "sim/sim_exec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HDR_BYTES 4u
#define ENTRY_BYTES 8u
#define TRAILER 4u
#define MAX_ENTRIES 4096u                /* longer inputs are cut (the LUT load is 1101) */
#define COMPUTE_MAC_LIMIT (1u << 22)     /* above this, timing-only */

/* Buffers of the seed programs (gen_regcmd_corpus.c uses the same IOVAs). */
#define FZ_A_IOVA 0x10000000u
#define FZ_B_IOVA 0x20000000u
#define FZ_C_IOVA 0x40000000u
#define FZ_PROG_IOVA 0x00100000u
#define FZ_A_BYTES (128u << 10)
#define FZ_B_BYTES (512u << 10)
#define FZ_C_BYTES (256u << 10)

struct fz_buf {
    uint32_t iova;
    uint32_t size;
    uint8_t *host;
};
static struct fz_buf bufs[3] = {
    { FZ_A_IOVA, FZ_A_BYTES, NULL },
    { FZ_B_IOVA, FZ_B_BYTES, NULL },
    { FZ_C_IOVA, FZ_C_BYTES, NULL },
};
static struct ork_sim_regfile *rf;

static void *fz_map(void *ctx, uint32_t iova, uint64_t len, bool write)
{
    (void)ctx;
    (void)write;
    for (int i = 0; i < 3; i++)
        if (iova >= bufs[i].iova && (uint64_t)iova + len <= (uint64_t)bufs[i].iova + bufs[i].size)
            return bufs[i].host + (iova - bufs[i].iova);
    return NULL;
}

static bool fz_init(void)
{
    if (rf)
        return true;
    for (int i = 0; i < 3; i++) {
        bufs[i].host = calloc(1, bufs[i].size);
        if (!bufs[i].host)
            return false;
        for (uint32_t j = 0; j < bufs[i].size; j++)
            bufs[i].host[j] = (uint8_t)(j * 37u + (uint32_t)i); /* some non-zero operands */
    }
    rf = calloc(1, sizeof(*rf));
    return rf != NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < HDR_BYTES || !fz_init())
        return 0;
    uint8_t flags = data[0];
    int8_t delta = (int8_t)data[1];
    size_t n = (size - HDR_BYTES) / ENTRY_BYTES;
    if (n > MAX_ENTRIES)
        n = MAX_ENTRIES;
    const uint8_t *entries = data + HDR_BYTES;

    struct ork_sim_task_in t;
    memset(&t, 0, sizeof t);
    t.index = 0;
    t.regcmd_addr = FZ_PROG_IOVA;
    int64_t amount = (int64_t)n - TRAILER + delta;
    t.regcfg_amount = (flags & 8u) || amount < 0 ? 0 : (uint32_t)amount;
    t.enable_mask = (flags & 4u) ? 0x0du : 0;
    t.strict = flags & 1u;
    struct ork_sim_mem mem = { NULL, fz_map };

    /* The three steps separately (as the walker may call them) ... */
    struct ork_sim_decoded dec;
    struct ork_sim_matmul mm;
    struct ork_sim_stats st;
    ork_error_clear();
    if (ork__sim_decode(entries, n, &t, rf, &dec) == 0 && ork__sim_check(rf, &dec, &t, &mm) == 0) {
        if (dec.n_counted > n || dec.n_used > n)
            __builtin_trap(); /* the decoder must stay inside the fetched range */
        uint64_t macs = (uint64_t)mm.m * mm.k * mm.n;
        bool timing_only = !(flags & 2u) || macs > COMPUTE_MAC_LIMIT;
        (void)ork__sim_exec(&mm, &mem, &t, timing_only, &st);
    }
    /* ... and combined, timing-only (must agree on success/failure with the steps above). */
    (void)ork__sim_task_run(entries, n, &t, &mem, true, rf, &dec, &st);
    /* Every message is a bounded, terminated string. */
    if (strlen(ork_error_message()) >= 512)
        __builtin_trap();
    return 0;
}
