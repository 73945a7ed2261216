/* dcomp.c -- encoder and decoder of one task weight block in the CNA decompressor's stream
 * (spec npu-weight-decompression.md §1.4, written from its description of the format; the
 * registers are §1.1/§1.2). A block is k x n int8 weights in the native layout
 * [n/32][k/32][32 n][32 k] (spec rk3588-npu.md §4.3, pack.h). Host-side only. */
#include <ork/alloc.h>
#include <ork/dcomp.h>
#include <ork/error.h>

#include <string.h>

/* Lane geometry (§1.4 "Lanes"): lane 8p + q takes, from every 32 x 32 tile, the columns of
 * parity p (two halves of 8 column pairs) x the 4 k-bytes 4q..4q+3: 64 bytes a tile. */
#define TILE_BYTES (ORK_DCOMP_TILE * ORK_DCOMP_TILE)
#define LANE_BYTES_PER_TILE (TILE_BYTES / ORK_DCOMP_LANES)
#define KBYTES_PER_LANE 4u
/* Width classes 0..7: the bit length of a folded magnitude of at most 127 (§1.4). */
#define N_CLASSES 8u
/* Longest codeword (5) + sign (1) + low bits of class 7 (6) (§1.4). */
#define MAX_SYMBOL_BITS 12u
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

/* Lane order (§1.4 "Order inside a lane"): tiles in memory order, then column half, column pair
 * g (column 16*half + 2g + p), then the 4 k-bytes. Column 16*half + 2g + p = 2c + p with
 * c = 8*half + g running 0..15, so in tile t lane 8p + q reads, for c = 0..15, the 4 bytes at
 * t*1024 + (2c + p)*32 + 4q: LANE_RUN(lane) is that base offset, LANE_STEP the stride of c. */
#define COLS_PER_LANE 16u
#define LANE_STEP (2u * ORK_DCOMP_TILE)
#define LANE_RUN(lane) (((lane) / 8) * ORK_DCOMP_TILE + KBYTES_PER_LANE * ((lane) % 8))

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

/* One lane's statistics: the base value, the rank of each width class and the bit count, and
 * the symbol of every byte value (codeword, sign and low bits; at most 12 bits). */
struct lane_code {
    uint8_t base;
    uint8_t rank_of[N_CLASSES];         /* width class -> rank */
    uint8_t class_of[N_CLASSES];        /* rank -> width class (the header table) */
    uint64_t bits;                      /* header + symbols */
    uint16_t sym[256];                  /* byte value -> symbol bits, LSB-first */
    uint8_t sym_len[256];               /* and its length */
};

static uint32_t symbol_class(uint8_t byte, uint8_t base, uint32_t *sign, uint32_t *m)
{
    int r = (int8_t)(uint8_t)(byte - base);     /* (byte - base) mod 256, as signed */
    *sign = r < 0;
    *m = r < 0 ? (uint32_t)(-r - 1) : (uint32_t)r;
    return width_class(*m);
}

/* Byte histograms of the 16 lanes in one pass over the block: in a tile, byte (col, kk)
 * belongs to lane 8 * (col % 2) + kk / 4 (§1.4 "Lanes"). */
static void lane_histograms(const uint8_t *native, uint64_t tiles, uint64_t (*hist)[256])
{
    for (uint64_t t = 0; t < tiles; t++)
        for (uint32_t col = 0; col < ORK_DCOMP_TILE; col++) {
            const uint8_t *row = native + t * TILE_BYTES + (uint64_t)col * ORK_DCOMP_TILE;
            uint64_t(*h)[256] = hist + 8 * (col % 2);
            for (uint32_t kk = 0; kk < ORK_DCOMP_TILE; kk++)
                h[kk / KBYTES_PER_LANE][row[kk]]++;
        }
}

static void lane_stats(const uint64_t *hist, struct lane_code *lc)
{
    uint64_t cls[N_CLASSES] = { 0 };
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
    for (uint32_t v = 0; v < 256; v++) {
        uint32_t sign, m, w = symbol_class((uint8_t)v, lc->base, &sign, &m);
        uint32_t rank = lc->rank_of[w], len = prefix[rank].len;
        uint32_t code = prefix[rank].bits | sign << len, nb = len + 1;
        if (w >= 2) {
            code |= (m & ((1u << (w - 1)) - 1)) << nb;  /* the w-1 low bits; the top implied */
            nb += w - 1;
        }
        lc->sym[v] = (uint16_t)code;
        lc->sym_len[v] = (uint8_t)nb;
        lc->bits += hist[v] * nb;
    }
}

static uint64_t lane_units(uint64_t bits)
{
    uint64_t u = (bits + UNIT_BITS - 1) / UNIT_BITS;
    return u < ORK_DCOMP_MIN_UNITS ? ORK_DCOMP_MIN_UNITS : u;
}

/* Write the lane (header and symbols) at dst, which the caller zeroed (LSB-first bits). */
static void lane_write(const uint8_t *native, uint64_t tiles, uint32_t lane,
                       const struct lane_code *lc, uint8_t *dst)
{
    dst[HDR_BASE] = lc->base;
    for (uint32_t r = 0; r < N_CLASSES; r += 2)
        dst[HDR_TABLE + r / 2] = (uint8_t)(lc->class_of[r] | lc->class_of[r + 1] << 4);
    uint8_t *out = dst + ORK_DCOMP_HEADER_BYTES;
    uint64_t acc = 0;
    uint32_t nacc = 0;
    for (uint64_t t = 0; t < tiles; t++) {
        const uint8_t *s = native + t * TILE_BYTES + LANE_RUN(lane);
        for (uint32_t c = 0; c < COLS_PER_LANE; c++, s += LANE_STEP) {
            for (uint32_t b = 0; b < KBYTES_PER_LANE; b++) {
                acc |= (uint64_t)lc->sym[s[b]] << nacc;
                nacc += lc->sym_len[s[b]];
            }
            while (nacc >= 8) {             /* at most 48 bits were added: no overflow */
                *out++ = (uint8_t)acc;
                acc >>= 8;
                nacc -= 8;
            }
        }
    }
    if (nacc)
        *out = (uint8_t)acc;
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
    const uint64_t raw = (uint64_t)k * n, tiles = raw / TILE_BYTES;
    struct lane_code lc[ORK_DCOMP_LANES];
    uint64_t hist[ORK_DCOMP_LANES][256];
    memset(hist, 0, sizeof hist);
    memset(info, 0, sizeof *info);
    memset(regs, 0, sizeof *regs);
    info->k = k;
    info->n = n;
    lane_histograms(native, tiles, hist);
    uint64_t comp = 0;
    for (uint32_t l = 0; l < ORK_DCOMP_LANES; l++) {
        lane_stats(hist[l], &lc[l]);
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
        lane_write(native, tiles, l, &lc[l], dst + ork_dcomp_lane_offset(regs, l));
    return 0;
}

/* ---- decoder -------------------------------------------------------------------------- */

/* LSB-first bit reader over one lane of `bytes` bytes: a 64-bit window refilled 8 bytes at a
 * time (byte by byte near the end); bits past the lane read as 0 (a symbol that then ends past
 * the lane is rejected by the caller). */
struct bitr {
    const uint8_t *src;
    uint64_t bytes, next;               /* lane size; next byte to load */
    uint64_t buf;                       /* unread bits, LSB first */
    uint32_t nbuf;                      /* how many of them are loaded */
};

static void bitr_refill(struct bitr *r)
{
    if (r->next + 8 <= r->bytes) {
        const uint8_t *p = r->src + r->next;
        uint64_t w = 0;
        for (uint32_t i = 0; i < 8; i++)
            w |= (uint64_t)p[i] << (8 * i);
        r->buf |= w << r->nbuf;
        r->next += (63 - r->nbuf) / 8;
        r->nbuf |= 56;
    } else {
        while (r->nbuf <= 56 && r->next < r->bytes) {
            r->buf |= (uint64_t)r->src[r->next++] << r->nbuf;
            r->nbuf += 8;
        }
    }
}

/* Decoding table of a lane: for every 12-bit window, the byte its first symbol stands for and
 * that symbol's length (the code is complete, so every window starts with a symbol, §1.4). */
struct lane_table {
    uint8_t byte[1u << MAX_SYMBOL_BITS];
    uint8_t len[1u << MAX_SYMBOL_BITS];
};

static void build_table(uint8_t base, const uint8_t class_of[N_CLASSES], struct lane_table *tb)
{
    for (uint32_t r = 0; r < N_CLASSES; r++) {
        const uint32_t w = class_of[r], len = prefix[r].len, low = w >= 2 ? w - 1 : 0;
        const uint32_t nb = len + 1 + low;
        for (uint32_t sign = 0; sign < 2; sign++)
            for (uint32_t lo = 0; lo < (1u << low); lo++) {
                uint32_t code = prefix[r].bits | sign << len | lo << (len + 1);
                uint32_t m = w == 0 ? 0 : (1u << (w - 1)) | lo;
                int rv = sign ? -(int)m - 1 : (int)m;
                for (uint32_t ext = 0; ext < (1u << (MAX_SYMBOL_BITS - nb)); ext++) {
                    tb->byte[code | ext << nb] = (uint8_t)(base + rv);
                    tb->len[code | ext << nb] = (uint8_t)nb;
                }
            }
    }
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

/* Decode lane `lane` of `units` 16-byte units at src into native (tiles 32 x 32 tiles). */
static int lane_decode(const uint8_t *src, uint64_t units, uint64_t tiles, uint32_t lane,
                       const struct ork_dcomp_check *chk, struct lane_table *tb, uint8_t *native)
{
    uint8_t class_of[N_CLASSES];
    int ret = check_header(src, lane, class_of);
    if (ret < 0)
        return ret;
    build_table(src[HDR_BASE], class_of, tb);
    const uint64_t bytes = units * ORK_DCOMP_UNIT, end = bytes * 8;
    const int lim = chk->max_abs ? (int)chk->max_abs : 128;
    struct bitr br = { .src = src, .bytes = bytes, .next = ORK_DCOMP_HEADER_BYTES };
    uint64_t pos = HEADER_BITS;
    for (uint64_t t = 0; t < tiles; t++) {
        uint8_t *d = native + t * TILE_BYTES + LANE_RUN(lane);
        for (uint32_t c = 0; c < COLS_PER_LANE; c++, d += LANE_STEP)
            for (uint32_t b = 0; b < KBYTES_PER_LANE; b++) {
                if (br.nbuf < MAX_SYMBOL_BITS)
                    bitr_refill(&br);
                const uint32_t v = (uint32_t)(br.buf & ((1u << MAX_SYMBOL_BITS) - 1));
                const uint32_t len = tb->len[v];
                const int8_t code = (int8_t)tb->byte[v];
                if (pos + len > end || code > lim || code < -lim) {
                    const uint64_t i = (t * COLS_PER_LANE + c) * KBYTES_PER_LANE + b;
                    if (pos + len > end)
                        return ork_errorf(ORK_EFORMAT, "dcomp: lane %u truncated: symbol %llu "
                                          "of %llu ends at bit %llu, past the lane's %llu bits "
                                          "(AMOUNT%u = %llu)", lane, (unsigned long long)i,
                                          (unsigned long long)(tiles * LANE_BYTES_PER_TILE),
                                          (unsigned long long)(pos + len),
                                          (unsigned long long)end, lane,
                                          (unsigned long long)(units - 1));
                    return ork_errorf(ORK_EFORMAT, "dcomp: lane %u symbol %llu decodes to %d, "
                                      "outside the grid [-%u, %u]", lane, (unsigned long long)i,
                                      code, chk->max_abs, chk->max_abs);
                }
                d[b] = (uint8_t)code;
                br.buf >>= len;
                br.nbuf -= len;             /* >= 0: every bit up to pos + len is loaded */
                pos += len;
            }
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
    const uint64_t tiles = (uint64_t)k * n / TILE_BYTES;
    struct lane_table *tb = ork_malloc(sizeof *tb);
    if (!tb)
        return ork_errorf(ORK_ENOMEM, "dcomp decode: lane table");
    int ret = 0;
    uint64_t off = 0;
    for (uint32_t l = 0; l < ORK_DCOMP_LANES && ret == 0; l++) {
        const uint64_t units = (uint64_t)regs->amount[l] + 1;
        const uint64_t span = align64(units * ORK_DCOMP_UNIT);
        if (units < ORK_DCOMP_MIN_UNITS)
            ret = ork_errorf(ORK_EFORMAT, "dcomp: AMOUNT%u = %u is below the minimum %u (a "
                             "lane is at least %u bytes, spec §1.4)", l, regs->amount[l],
                             ORK_DCOMP_MIN_UNITS - 1, ORK_DCOMP_MIN_UNITS * ORK_DCOMP_UNIT);
        else if (off > avail || span > avail - off)
            ret = ork_errorf(ORK_EFORMAT, "dcomp: lane %u (AMOUNT%u = %u) spans bytes %llu..%llu "
                             "of the block, past the %llu readable", l, l, regs->amount[l],
                             (unsigned long long)off, (unsigned long long)(off + span),
                             (unsigned long long)avail);
        else
            ret = lane_decode(src + off, units, tiles, l, chk, tb, native);
        off += span;
    }
    ork_free(tb);
    return ret;
}
