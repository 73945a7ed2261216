/* dcomp_blob.c -- write and validate the self-describing form of resident DCOMP weights
 * (layout in dcomp_blob.h). The parser trusts nothing: every count is checked against the
 * split libork plans for the same shape (plan.c), every block against its place in it, and
 * every offset and size against the bytes present, before anything is allocated from them. */
#include "dcomp_blob.h"
#include "plan.h"

#include <ork/alloc.h>
#include <ork/error.h>

#include <string.h>

static const uint8_t blob_magic[8] = { 'O', 'R', 'K', 'D', 'C', 'M', 'P', 0 };

#define BLOB_HEADER_BYTES 64u
#define BLOB_PART_BYTES 128u
#define BLOB_PART_U32 10u                /* kslice .. raw */
#define BLOB_REG_U32 (2u + ORK_DCOMP_LANES)

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

uint64_t ork__dcomp_blob_table_bytes(uint32_t n_parts)
{
    return BLOB_HEADER_BYTES + (uint64_t)BLOB_PART_BYTES * n_parts;
}

void ork__dcomp_blob_write_table(const struct ork_dcomp_weights *dw, uint32_t max_m, uint32_t grid,
                                 uint8_t *out)
{
    memset(out, 0, (size_t)ork__dcomp_blob_table_bytes(dw->n_parts));
    memcpy(out, blob_magic, sizeof blob_magic);
    const uint32_t hdr[9] = { ORK_DCOMP_BLOB_VERSION, dw->k, dw->n, max_m, grid,
                              dw->n_kslices, dw->n_cores, dw->n_nslices, dw->n_parts };
    for (uint32_t i = 0; i < 9; i++)
        put32(out + 8 + 4 * i, hdr[i]);
    put64(out + 48, dw->bytes);
    for (uint32_t p = 0; p < dw->n_parts; p++) {
        const struct ork_dcomp_part *pt = &dw->parts[p];
        uint8_t *r = out + BLOB_HEADER_BYTES + (size_t)p * BLOB_PART_BYTES;
        const uint32_t f[BLOB_PART_U32] = { pt->kslice, pt->core, pt->nslice, pt->k0, pt->klen,
                                            pt->kpad, pt->n0, pt->nlen, pt->npad, pt->info.raw };
        for (uint32_t i = 0; i < BLOB_PART_U32; i++)
            put32(r + 4 * i, f[i]);
        put64(r + 40, pt->off);
        put64(r + 48, pt->info.bytes);
        put32(r + 56, pt->regs.ctrl);
        put32(r + 60, pt->regs.regnum);
        for (uint32_t l = 0; l < ORK_DCOMP_LANES; l++)
            put32(r + 64 + 4 * l, pt->regs.amount[l]);
    }
}

/* One block's record against the part the plan expects there (shape already in *pt). */
static int parse_part(const uint8_t *r, uint32_t p, struct ork_dcomp_part *pt, uint64_t data_bytes,
                      uint64_t *end)
{
    const uint32_t want[BLOB_PART_U32 - 1] = { pt->kslice, pt->core, pt->nslice, pt->k0,
                                               pt->klen, pt->kpad, pt->n0, pt->nlen, pt->npad };
    static const char *const names[BLOB_PART_U32 - 1] = { "kslice", "core", "nslice", "k0", "klen",
                                                          "kpad", "n0", "nlen", "npad" };
    for (uint32_t i = 0; i < BLOB_PART_U32 - 1; i++)
        if (get32(r + 4 * i) != want[i])
            return ork_errorf(ORK_EFORMAT, "dcomp weights blob: block %u field %s is %u, the "
                              "split of these weights has %u", p, names[i], get32(r + 4 * i),
                              want[i]);
    const uint32_t raw = get32(r + 36);
    const uint64_t off = get64(r + 40), bytes = get64(r + 48), raw_bytes = (uint64_t)pt->kpad * pt->npad;
    pt->regs.ctrl = get32(r + 56);
    pt->regs.regnum = get32(r + 60);
    for (uint32_t l = 0; l < ORK_DCOMP_LANES; l++)
        pt->regs.amount[l] = get32(r + 64 + 4 * l);
    if (raw > 1)
        return ork_errorf(ORK_EFORMAT, "dcomp weights blob: block %u raw flag %u (0 or 1)", p, raw);
    if (off % ORK_DCOMP_ALIGN || off < *end || off > data_bytes || bytes > data_bytes - off)
        return ork_errorf(ORK_EFORMAT, "dcomp weights blob: block %u at [%llu, +%llu) is not a "
                          "64-byte aligned range after the previous block (ends at %llu) inside "
                          "the %llu data bytes", p, (unsigned long long)off,
                          (unsigned long long)bytes, (unsigned long long)*end,
                          (unsigned long long)data_bytes);
    if (raw) {
        bool zero = pt->regs.ctrl == ORK_DCOMP_CTRL_RAW && pt->regs.regnum == 0;
        for (uint32_t l = 0; l < ORK_DCOMP_LANES; l++)
            zero = zero && pt->regs.amount[l] == 0;
        if (!zero || bytes != raw_bytes)
            return ork_errorf(ORK_EFORMAT, "dcomp weights blob: raw block %u must have %llu "
                              "bytes and zero DCOMP registers (has %llu bytes, CTRL 0x%x)", p,
                              (unsigned long long)raw_bytes, (unsigned long long)bytes,
                              pt->regs.ctrl);
    } else {
        if (pt->regs.ctrl != ORK_DCOMP_CTRL_ON || pt->regs.regnum != ORK_DCOMP_REGNUM_NORMAL)
            return ork_errorf(ORK_EFORMAT, "dcomp weights blob: block %u has DCOMP_CTRL 0x%x "
                              "DCOMP_REGNUM 0x%08x, a stream needs 0x%x and 0x%08x (spec §1.2)", p,
                              pt->regs.ctrl, pt->regs.regnum, ORK_DCOMP_CTRL_ON,
                              ORK_DCOMP_REGNUM_NORMAL);
        for (uint32_t l = 0; l < ORK_DCOMP_LANES; l++)
            if (pt->regs.amount[l] < ORK_DCOMP_MIN_UNITS - 1 ||
                pt->regs.amount[l] > raw_bytes / ORK_DCOMP_UNIT)
                return ork_errorf(ORK_EFORMAT, "dcomp weights blob: block %u AMOUNT%u = %u "
                                  "outside %u..%llu (spec §1.4)", p, l, pt->regs.amount[l],
                                  ORK_DCOMP_MIN_UNITS - 1,
                                  (unsigned long long)(raw_bytes / ORK_DCOMP_UNIT));
        if (bytes != ork_dcomp_lane_offset(&pt->regs, ORK_DCOMP_LANES))
            return ork_errorf(ORK_EFORMAT, "dcomp weights blob: block %u declares %llu bytes, "
                              "its AMOUNTs give %llu (spec §1.4)", p, (unsigned long long)bytes,
                              (unsigned long long)ork_dcomp_lane_offset(&pt->regs,
                                                                        ORK_DCOMP_LANES));
    }
    pt->off = off;
    pt->info = (struct ork_dcomp_block_info){ .k = pt->kpad, .n = pt->npad, .raw = raw != 0,
                                              .bytes = bytes, .stream_bytes = bytes };
    *end = off + bytes;
    return 0;
}

/* The header's counts against the split libork plans for k x n, max_m and its cores. */
static int parse_header(const uint8_t *b, uint64_t bytes, uint32_t k, uint32_t n, uint32_t max_m,
                        struct ork_dcomp_weights *out, struct ork_kplan *kp, uint32_t *grid)
{
    if (bytes < BLOB_HEADER_BYTES || memcmp(b, blob_magic, sizeof blob_magic) != 0)
        return ork_errorf(ORK_EFORMAT, "dcomp weights blob: no 'ORKDCMP' header (%llu bytes)",
                          (unsigned long long)bytes);
    uint32_t h[9];
    for (uint32_t i = 0; i < 9; i++)
        h[i] = get32(b + 8 + 4 * i);
    if (h[0] != ORK_DCOMP_BLOB_VERSION)
        return ork_errorf(ORK_EFORMAT, "dcomp weights blob: version %u (this libork reads %u)",
                          h[0], ORK_DCOMP_BLOB_VERSION);
    if (h[1] != k || h[2] != n || h[3] != max_m)
        return ork_errorf(ORK_EFORMAT, "dcomp weights blob: made for k=%u n=%u max_m=%u, the "
                          "descriptor says k=%u n=%u max_m=%u", h[1], h[2], h[3], k, n, max_m);
    if (h[4] < ORK_DCOMP_GRID_MIN || h[4] > ORK_DCOMP_GRID_MAX)
        return ork_errorf(ORK_EFORMAT, "dcomp weights blob: grid bound %u outside %u..%u", h[4],
                          ORK_DCOMP_GRID_MIN, ORK_DCOMP_GRID_MAX);
    if (get64(b + 56) != 0)
        return ork_errorf(ORK_EFORMAT, "dcomp weights blob: reserved header bytes are not 0");
    int ret = ork__plan_kslices(ORK_NPU_I8, k, max_m, kp);
    if (ret < 0)
        return ret;
    const uint32_t nc = h[6];
    if (nc < 1 || nc > ORK_PLAN_MAX_CORES || ork__plan_split_cores(ORK_NPU_I8, n, nc) != nc)
        return ork_errorf(ORK_EFORMAT, "dcomp weights blob: %u cores is not a split of %u "
                          "columns (spec §9)", nc, n);
    const uint32_t nns = ork__plan_nsplit(ORK_NPU_I8, n, nc, NULL, NULL);
    if (h[5] != kp->n_slices || h[7] != nns || (uint64_t)h[8] != (uint64_t)h[5] * h[7])
        return ork_errorf(ORK_EFORMAT, "dcomp weights blob: %u K-slices x %u N-slices = %u "
                          "blocks, the split of these weights is %u x %u", h[5], h[7], h[8],
                          kp->n_slices, nns);
    out->k = k;
    out->n = n;
    out->n_kslices = h[5];
    out->n_cores = nc;
    out->n_nslices = h[7];
    out->n_parts = h[8];
    out->bytes = get64(b + 48);
    const uint64_t table = ork__dcomp_blob_table_bytes(out->n_parts);
    if (bytes < table || bytes - table != out->bytes)
        return ork_errorf(ORK_EFORMAT, "dcomp weights blob: %llu bytes, the header and %u "
                          "blocks declare %llu + %llu", (unsigned long long)bytes, out->n_parts,
                          (unsigned long long)table, (unsigned long long)out->bytes);
    *grid = h[4];
    return 0;
}

int ork__dcomp_blob_parse(const void *blob, uint64_t bytes, uint32_t k, uint32_t n, uint32_t max_m,
                          struct ork_dcomp_weights *out, const uint8_t **data, uint32_t *grid)
{
    memset(out, 0, sizeof *out);
    *data = NULL;
    const uint8_t *b = blob;
    struct ork_kplan kp;
    int ret = parse_header(b, bytes, k, n, max_m ? max_m : 1, out, &kp, grid);
    if (ret < 0) {
        memset(out, 0, sizeof *out);
        return ret;
    }
    struct ork_slice *ns = ork_calloc(out->n_nslices, sizeof *ns);
    uint32_t ns0[ORK_PLAN_MAX_CORES + 1];
    out->parts = ork_calloc(out->n_parts, sizeof *out->parts);
    if (!ns || !out->parts) {
        ork_free(ns);
        ork_dcomp_weights_fini(out);
        return ork_errorf(ORK_ENOMEM, "dcomp weights blob: %u blocks", out->n_parts);
    }
    ork__plan_nsplit(ORK_NPU_I8, n, out->n_cores, ns, ns0);
    uint64_t end = 0;
    for (uint32_t p = 0; p < out->n_parts && ret == 0; p++) {
        struct ork_dcomp_part *pt = &out->parts[p];
        const uint32_t j = p / out->n_nslices, i = p % out->n_nslices;
        uint32_t c = 0;
        while (c + 1 < out->n_cores && i >= ns0[c + 1])
            c++;
        *pt = (struct ork_dcomp_part){ .kslice = j, .core = c, .nslice = i,
                                       .k0 = kp.s[j].off, .klen = kp.s[j].len, .kpad = kp.s[j].pad,
                                       .n0 = ns[i].off, .nlen = ns[i].len, .npad = ns[i].pad };
        ret = parse_part(b + BLOB_HEADER_BYTES + (size_t)p * BLOB_PART_BYTES, p, pt, out->bytes,
                         &end);
        out->raw_bytes += (uint64_t)pt->kpad * pt->npad;
        out->n_raw += pt->info.raw;
    }
    ork_free(ns);
    if (ret < 0) {
        ork_dcomp_weights_fini(out);
        return ret;
    }
    *data = b + ork__dcomp_blob_table_bytes(out->n_parts);
    return 0;
}
