/* dcomp.c -- encoder and decoder of one task weight block in the CNA decompressor's stream
 * (spec npu-weight-decompression.md §1.4, written from its description of the format; the
 * registers are §1.1/§1.2). A block is k x n int8 weights in the native layout
 * [n/32][k/32][32 n][32 k] (spec rk3588-npu.md §4.3, pack.h). Host-side only. */
#include <ork/dcomp.h>
#include <ork/error.h>

#include <string.h>

/* Lane geometry (§1.4 "Lanes"): lane 8p + q takes, from every 32 x 32 tile, the columns of
 * parity p (two halves of 8 column pairs) x the 4 k-bytes 4q..4q+3: 64 bytes a tile. */
#define TILE_BYTES (ORK_DCOMP_TILE * ORK_DCOMP_TILE)
#define LANE_BYTES_PER_TILE (TILE_BYTES / ORK_DCOMP_LANES)
#define KBYTES_PER_LANE 4u
#define PAIRS_PER_HALF 8u
/* Width classes 0..7: the bit length of a folded magnitude of at most 127 (§1.4). */
#define N_CLASSES 8u
/* Longest codeword (5) + sign (1) + low bits of class 7 (6) (§1.4). */
#define MAX_SYMBOL_BITS 12u
#define PREFIX_MAX_BITS 5u
#define HEADER_BITS (ORK_DCOMP_HEADER_BYTES * 8u)
#define UNIT_BITS (ORK_DCOMP_UNIT * 8u)
/* Header bytes (§1.4): 0 must be zero, 1 is the base value, 4..7 the rank table. */
#define HDR_BASE 1u
#define HDR_TABLE 4u

/* The eight prefix codewords by rank, in bit-stream order (§1.4): 00, 10, 111, 110, 011, 0101,
 * 01001, 01000. `bits` holds the first stream bit in bit 0 (the stream is LSB-first). */
static const struct {
    uint8_t bits, len;
} prefix[N_CLASSES] = {
    { 0x00, 2 }, { 0x01, 2 }, { 0x07, 3 }, { 0x03, 3 },
    { 0x06, 3 }, { 0x0a, 4 }, { 0x12, 5 }, { 0x02, 5 },
};

static uint64_t align64(uint64_t v)
{
    return (v + ORK_DCOMP_ALIGN - 1) / ORK_DCOMP_ALIGN * ORK_DCOMP_ALIGN;
}

static uint32_t width_class(uint32_t m)
{
    uint32_t w = 0;
    while (m) {
        w++;
        m >>= 1;
    }
    return w;
}

/* Byte index in the block of symbol i of lane `lane` (§1.4 "Order inside a lane"): tiles in
 * memory order, then column half, column pair g (column 16*half + 2g + p), then the 4 k-bytes. */
static uint64_t lane_index(uint32_t lane, uint64_t i)
{
    const uint32_t p = lane / 8, q = lane % 8;
    const uint64_t tile = i / LANE_BYTES_PER_TILE;
    const uint32_t r = (uint32_t)(i % LANE_BYTES_PER_TILE);
    const uint32_t half = r / (PAIRS_PER_HALF * KBYTES_PER_LANE);
    const uint32_t g = (r / KBYTES_PER_LANE) % PAIRS_PER_HALF, b = r % KBYTES_PER_LANE;
    const uint32_t col = 16 * half + 2 * g + p;
    return tile * TILE_BYTES + col * ORK_DCOMP_TILE + KBYTES_PER_LANE * q + b;
}

static bool shape_ok(uint32_t k, uint32_t n)
{
    return k && n && k % ORK_DCOMP_TILE == 0 && n % ORK_DCOMP_TILE == 0;
}

uint64_t ork_dcomp_block_bound(uint32_t k, uint32_t n)
{
    if (!shape_ok(k, n))
        return 0;
    const uint64_t raw = (uint64_t)k * n, syms = raw / ORK_DCOMP_LANES;
    const uint64_t lane_bits = HEADER_BITS + syms * MAX_SYMBOL_BITS;
    const uint64_t lane = align64((lane_bits + UNIT_BITS - 1) / UNIT_BITS * ORK_DCOMP_UNIT);
    const uint64_t comp = lane * ORK_DCOMP_LANES;
    return comp > raw ? comp : raw;
}

uint64_t ork_dcomp_lane_offset(const struct ork_dcomp_regs *regs, uint32_t lane)
{
    uint64_t off = 0;
    for (uint32_t j = 0; j < lane && j < ORK_DCOMP_LANES; j++)
        off += align64((uint64_t)ORK_DCOMP_UNIT * ((uint64_t)regs->amount[j] + 1));
    return off;
}

/* ---- encoder -------------------------------------------------------------------------- */

/* One lane's statistics: the base value, the rank of each width class and the bit count. */
struct lane_code {
    uint8_t base;
    uint8_t rank_of[N_CLASSES];         /* width class -> rank */
    uint8_t class_of[N_CLASSES];        /* rank -> width class (the header table) */
    uint64_t bits;                      /* header + symbols */
};

static uint32_t symbol_class(uint8_t byte, uint8_t base, uint32_t *sign, uint32_t *m)
{
    int r = (int8_t)(uint8_t)(byte - base);     /* (byte - base) mod 256, as signed */
    *sign = r < 0;
    *m = r < 0 ? (uint32_t)(-r - 1) : (uint32_t)r;
    return width_class(*m);
}

static void lane_stats(const uint8_t *native, uint64_t syms, uint32_t lane, struct lane_code *lc)
{
    uint64_t hist[256] = { 0 }, cls[N_CLASSES] = { 0 };
    for (uint64_t i = 0; i < syms; i++)
        hist[native[lane_index(lane, i)]]++;
    uint32_t base = 0;              /* the most frequent byte; ties to the smaller value */
    for (uint32_t v = 1; v < 256; v++)
        if (hist[v] > hist[base])
            base = v;
    lc->base = (uint8_t)base;
    for (uint32_t v = 0; v < 256; v++) {
        uint32_t sign, m;
        cls[symbol_class((uint8_t)v, lc->base, &sign, &m)] += hist[v];
    }
    /* Ranks by frequency, most frequent first; ties go to the smaller width (§1.4). */
    bool used[N_CLASSES] = { false };
    for (uint32_t r = 0; r < N_CLASSES; r++) {
        uint32_t best = N_CLASSES;
        for (uint32_t w = 0; w < N_CLASSES; w++)
            if (!used[w] && (best == N_CLASSES || cls[w] > cls[best]))
                best = w;
        used[best] = true;
        lc->class_of[r] = (uint8_t)best;
        lc->rank_of[best] = (uint8_t)r;
    }
    lc->bits = HEADER_BITS;
    for (uint32_t w = 0; w < N_CLASSES; w++)
        lc->bits += cls[w] * (prefix[lc->rank_of[w]].len + 1u + (w >= 2 ? w - 1 : 0));
}

static uint64_t lane_units(uint64_t bits)
{
    uint64_t u = (bits + UNIT_BITS - 1) / UNIT_BITS;
    return u < ORK_DCOMP_MIN_UNITS ? ORK_DCOMP_MIN_UNITS : u;
}

/* Write the lane (header and symbols) at dst, which the caller zeroed (LSB-first bits). */
static void lane_write(const uint8_t *native, uint64_t syms, uint32_t lane,
                       const struct lane_code *lc, uint8_t *dst)
{
    dst[HDR_BASE] = lc->base;
    for (uint32_t r = 0; r < N_CLASSES; r += 2)
        dst[HDR_TABLE + r / 2] = (uint8_t)(lc->class_of[r] | lc->class_of[r + 1] << 4);
    uint64_t pos = HEADER_BITS;
    for (uint64_t i = 0; i < syms; i++) {
        uint32_t sign, m, w = symbol_class(native[lane_index(lane, i)], lc->base, &sign, &m);
        uint32_t rank = lc->rank_of[w], len = prefix[rank].len;
        uint32_t v = prefix[rank].bits | sign << len, nb = len + 1;
        if (w >= 2) {
            v |= (m & ((1u << (w - 1)) - 1)) << nb;  /* the w-1 low bits; the top one implied */
            nb += w - 1;
        }
        for (uint32_t b = 0; b < nb; b++, pos++)
            dst[pos / 8] |= (uint8_t)(((v >> b) & 1u) << (pos % 8));
    }
}

int ork_dcomp_block_encode(const uint8_t *native, uint32_t k, uint32_t n, uint32_t flags,
                           uint8_t *dst, uint64_t cap, struct ork_dcomp_regs *regs,
                           struct ork_dcomp_block_info *info)
{
    if (!native || !regs || !info)
        return ork_errorf(ORK_EINVAL, "dcomp encode: NULL block, registers or info");
    if (!shape_ok(k, n))
        return ork_errorf(ORK_EINVAL, "dcomp encode: block %u x %u: K and N must be non-zero "
                          "multiples of %u (spec §1.4)", k, n, ORK_DCOMP_TILE);
    const uint64_t raw = (uint64_t)k * n, syms = raw / ORK_DCOMP_LANES;
    struct lane_code lc[ORK_DCOMP_LANES];
    memset(info, 0, sizeof *info);
    memset(regs, 0, sizeof *regs);
    info->k = k;
    info->n = n;
    uint64_t comp = 0;
    for (uint32_t l = 0; l < ORK_DCOMP_LANES; l++) {
        lane_stats(native, syms, l, &lc[l]);
        uint64_t u = lane_units(lc[l].bits);
        info->bits += lc[l].bits;
        regs->amount[l] = (uint32_t)(u - 1);
        comp += align64(u * ORK_DCOMP_UNIT);
    }
    info->stream_bytes = comp;
    info->raw = comp >= raw && !(flags & ORK_DCOMP_ENCODE_FORCE);
    info->bytes = info->raw ? raw : comp;
    if (info->raw)
        memset(regs, 0, sizeof *regs);      /* CTRL = REGNUM = AMOUNTn = 0 (§1.2 raw task) */
    else {
        regs->ctrl = ORK_DCOMP_CTRL_ON;
        regs->regnum = ORK_DCOMP_REGNUM_NORMAL;
    }
    if (!dst && !cap)
        return 0;                           /* measure only */
    if (!dst || cap < info->bytes)
        return ork_errorf(ORK_ENOSPC, "dcomp encode: block %u x %u needs %llu bytes, %llu given",
                          k, n, (unsigned long long)info->bytes, (unsigned long long)cap);
    if (info->raw) {
        memcpy(dst, native, raw);
        return 0;
    }
    memset(dst, 0, comp);
    for (uint32_t l = 0; l < ORK_DCOMP_LANES; l++)
        lane_write(native, syms, l, &lc[l], dst + ork_dcomp_lane_offset(regs, l));
    return 0;
}

/* ---- decoder -------------------------------------------------------------------------- */

/* Up to 16 bits of the lane from bit pos, LSB-first; bits at or past `end_bit` read as 0 (the
 * caller then sees the symbol end past the lane and rejects it). */
static uint32_t peek_bits(const uint8_t *lane, uint64_t pos, uint64_t end_bit)
{
    uint32_t v = 0;
    for (uint32_t i = 0; i < 3; i++) {
        uint64_t byte = pos / 8 + i;
        if (byte * 8 < end_bit)
            v |= (uint32_t)lane[byte] << (8 * i);
    }
    v >>= pos % 8;
    uint64_t left = end_bit > pos ? end_bit - pos : 0;
    return left >= 16 ? v & 0xffffu : v & ((1u << left) - 1);
}

/* rank of the codeword at the low bits of v, and its length (the code is complete, §1.4) */
static uint32_t prefix_decode(uint32_t v, uint32_t *len)
{
    for (uint32_t r = 0; r < N_CLASSES; r++)
        if ((v & ((1u << prefix[r].len) - 1)) == prefix[r].bits) {
            *len = prefix[r].len;
            return r;
        }
    *len = PREFIX_MAX_BITS;                 /* unreachable: every 5-bit pattern matches */
    return 0;
}

static int check_header(const uint8_t *h, uint32_t lane, uint8_t class_of[N_CLASSES])
{
    if (h[0] != 0)
        return ork_errorf(ORK_EFORMAT, "dcomp: lane %u header byte 0 is 0x%02x, must be 0 "
                          "(spec §1.4)", lane, h[0]);
    for (uint32_t b = 2; b < ORK_DCOMP_HEADER_BYTES; b++)
        if ((b < HDR_TABLE || b >= HDR_TABLE + 4) && h[b] != 0)
            return ork_errorf(ORK_EFORMAT, "dcomp: lane %u header byte %u is 0x%02x, must be "
                              "0 (spec §1.4)", lane, b, h[b]);
    uint32_t seen = 0;
    for (uint32_t r = 0; r < N_CLASSES; r++) {
        uint32_t w = (h[HDR_TABLE + r / 2] >> (4 * (r % 2))) & 0xfu;
        if (w >= N_CLASSES || (seen & (1u << w)))
            return ork_errorf(ORK_EFORMAT, "dcomp: lane %u rank table is not a permutation of "
                              "0..7 (rank %u gives width %u)", lane, r, w);
        seen |= 1u << w;
        class_of[r] = (uint8_t)w;
    }
    return 0;
}

/* Decode lane `lane` of `units` 16-byte units at src into native. */
static int lane_decode(const uint8_t *src, uint64_t units, uint64_t syms, uint32_t lane,
                       const struct ork_dcomp_check *chk, uint8_t *native)
{
    uint8_t class_of[N_CLASSES];
    int ret = check_header(src, lane, class_of);
    if (ret < 0)
        return ret;
    const uint8_t base = src[HDR_BASE];
    const uint64_t end = units * UNIT_BITS;
    uint64_t pos = HEADER_BITS;
    for (uint64_t i = 0; i < syms; i++) {
        uint32_t v = peek_bits(src, pos, end), len;
        uint32_t w = class_of[prefix_decode(v, &len)];
        uint32_t nb = len + 1 + (w >= 2 ? w - 1 : 0);
        if (pos + nb > end)
            return ork_errorf(ORK_EFORMAT, "dcomp: lane %u truncated: symbol %llu of %llu ends "
                              "at bit %llu, past the lane's %llu bits (AMOUNT%u = %llu)", lane,
                              (unsigned long long)i, (unsigned long long)syms,
                              (unsigned long long)(pos + nb), (unsigned long long)end, lane,
                              (unsigned long long)(units - 1));
        uint32_t sign = (v >> len) & 1u;
        uint32_t m = w == 0 ? 0 : (1u << (w - 1)) | ((v >> (len + 1)) & ((1u << (w - 1)) - 1));
        int r = sign ? -(int)m - 1 : (int)m;
        int8_t code = (int8_t)(uint8_t)(base + r);
        if (chk->max_abs && (code > (int)chk->max_abs || code < -(int)chk->max_abs))
            return ork_errorf(ORK_EFORMAT, "dcomp: lane %u symbol %llu decodes to %d, outside "
                              "the grid [-%u, %u]", lane, (unsigned long long)i, code,
                              chk->max_abs, chk->max_abs);
        native[lane_index(lane, i)] = (uint8_t)code;
        pos += nb;
    }
    if (chk->lenient)
        return 0;
    if (lane_units(pos) != units)
        return ork_errorf(ORK_EFORMAT, "dcomp: AMOUNT%u = %llu declares %llu units but lane %u's "
                          "symbols need %llu (AMOUNTn = units - 1, at least %u units)", lane,
                          (unsigned long long)(units - 1), (unsigned long long)units, lane,
                          (unsigned long long)lane_units(pos), ORK_DCOMP_MIN_UNITS);
    const uint64_t pad_end = align64(units * ORK_DCOMP_UNIT) * 8;
    for (uint64_t b = pos; b < pad_end; b++)
        if (src[b / 8] & (1u << (b % 8)))
            return ork_errorf(ORK_EFORMAT, "dcomp: lane %u has a non-zero bit %llu in its "
                              "padding (symbols end at bit %llu)", lane, (unsigned long long)b,
                              (unsigned long long)pos);
    return 0;
}

static int decode_raw(const uint8_t *src, uint64_t avail, uint32_t k, uint32_t n,
                      const struct ork_dcomp_regs *regs, const struct ork_dcomp_check *chk,
                      uint8_t *native)
{
    const uint64_t raw = (uint64_t)k * n;
    if (!chk->lenient) {
        if (regs->regnum != 0)
            return ork_errorf(ORK_EFORMAT, "dcomp: raw task (DCOMP_CTRL = 0) with DCOMP_REGNUM "
                              "= 0x%08x, must be 0 (spec §1.2)", regs->regnum);
        for (uint32_t l = 0; l < ORK_DCOMP_LANES; l++)
            if (regs->amount[l] != 0)
                return ork_errorf(ORK_EFORMAT, "dcomp: raw task (DCOMP_CTRL = 0) with AMOUNT%u "
                                  "= %u, must be 0 (spec §1.2)", l, regs->amount[l]);
    }
    if (avail < raw)
        return ork_errorf(ORK_EFORMAT, "dcomp: raw block %u x %u needs %llu bytes, %llu "
                          "readable", k, n, (unsigned long long)raw, (unsigned long long)avail);
    for (uint64_t i = 0; i < raw; i++) {
        int8_t c = (int8_t)src[i];
        if (chk->max_abs && (c > (int)chk->max_abs || c < -(int)chk->max_abs))
            return ork_errorf(ORK_EFORMAT, "dcomp: raw block byte %llu is %d, outside the grid "
                              "[-%u, %u]", (unsigned long long)i, c, chk->max_abs, chk->max_abs);
    }
    memcpy(native, src, raw);
    return 0;
}

int ork_dcomp_block_decode(const uint8_t *src, uint64_t avail, uint32_t k, uint32_t n,
                           const struct ork_dcomp_regs *regs, const struct ork_dcomp_check *chk,
                           uint8_t *native)
{
    static const struct ork_dcomp_check strict = { .addr = 0 };
    if (!chk)
        chk = &strict;
    if (!regs || !native || (!src && avail))
        return ork_errorf(ORK_EINVAL, "dcomp decode: NULL registers or output");
    if (!shape_ok(k, n))
        return ork_errorf(ORK_EINVAL, "dcomp decode: block %u x %u: K and N must be non-zero "
                          "multiples of %u", k, n, ORK_DCOMP_TILE);
    if (chk->addr % ORK_DCOMP_ALIGN)
        return ork_errorf(ORK_EFORMAT, "dcomp: DCOMP_ADDR0 = 0x%llx is not %u-byte aligned "
                          "(spec §1.4)", (unsigned long long)chk->addr, ORK_DCOMP_ALIGN);
    if (regs->ctrl == ORK_DCOMP_CTRL_RAW)
        return decode_raw(src, avail, k, n, regs, chk, native);
    if (regs->ctrl != ORK_DCOMP_CTRL_ON)
        return ork_errorf(ORK_EFORMAT, "dcomp: DCOMP_CTRL = 0x%x: only 0 (raw) and 1 "
                          "(decompress) are known (spec §1.2)", regs->ctrl);
    if (regs->regnum != ORK_DCOMP_REGNUM_NORMAL)
        return ork_errorf(ORK_EFORMAT, "dcomp: DCOMP_REGNUM = 0x%08x with DCOMP_CTRL = 1: only "
                          "0x%08x is known (spec §1.2)", regs->regnum, ORK_DCOMP_REGNUM_NORMAL);
    const uint64_t syms = (uint64_t)k * n / ORK_DCOMP_LANES;
    uint64_t off = 0;
    for (uint32_t l = 0; l < ORK_DCOMP_LANES; l++) {
        const uint64_t units = (uint64_t)regs->amount[l] + 1;
        if (units < ORK_DCOMP_MIN_UNITS)
            return ork_errorf(ORK_EFORMAT, "dcomp: AMOUNT%u = %u is below the minimum %u (a "
                              "lane is at least %u bytes, spec §1.4)", l, regs->amount[l],
                              ORK_DCOMP_MIN_UNITS - 1, ORK_DCOMP_MIN_UNITS * ORK_DCOMP_UNIT);
        const uint64_t span = align64(units * ORK_DCOMP_UNIT);
        if (off > avail || span > avail - off)
            return ork_errorf(ORK_EFORMAT, "dcomp: lane %u (AMOUNT%u = %u) spans bytes %llu..%llu "
                              "of the block, past the %llu readable", l, l, regs->amount[l],
                              (unsigned long long)off, (unsigned long long)(off + span),
                              (unsigned long long)avail);
        int ret = lane_decode(src + off, units, syms, l, chk, native);
        if (ret < 0)
            return ret;
        off += span;
    }
    return 0;
}
