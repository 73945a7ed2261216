/* w4a8_blob.c -- write and validate the self-describing form of W4A8 resident weights
 * (layout in w4a8.h; docs/w4a8.md "Packs"). The parser trusts nothing: the header against the
 * descriptor, the slice count against the bounds of a W4A8 slicing, every slice record against
 * the even cut of that count, the data size against the slicing, before anything is taken from
 * the data. The data itself (padding, the int16 bound) is ork__w4a8_check_packed's. */
#include "w4a8.h"

#include <ork/error.h>

#include <string.h>

static const uint8_t blob_magic[8] = { 'O', 'R', 'K', 'W', '4', 'A', '8', 0 };

#define BLOB_HEADER_BYTES 64u
#define BLOB_SLICE_BYTES 16u
#define BLOB_HDR_U32 6u                 /* version, k, n, max_m, n_kslices, n_padded */
#define BLOB_RESERVED_OFF 40u

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
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

uint64_t ork__w4a8_blob_table_bytes(uint32_t n_kslices)
{
    return BLOB_HEADER_BYTES + (uint64_t)BLOB_SLICE_BYTES * n_kslices;
}

void ork__w4a8_blob_write_table(const struct ork_kplan *kp, uint32_t n, uint32_t np,
                                uint64_t data_bytes, uint8_t *out)
{
    memset(out, 0, (size_t)ork__w4a8_blob_table_bytes(kp->n_slices));
    memcpy(out, blob_magic, sizeof blob_magic);
    const uint32_t hdr[BLOB_HDR_U32] = { ORK_W4A8_BLOB_VERSION, kp->k, n, kp->max_m,
                                         kp->n_slices, np };
    for (uint32_t i = 0; i < BLOB_HDR_U32; i++)
        put32(out + 8 + 4 * i, hdr[i]);
    put32(out + 32, (uint32_t)data_bytes);
    put32(out + 36, (uint32_t)(data_bytes >> 32));
    for (uint32_t j = 0; j < kp->n_slices; j++) {
        uint8_t *r = out + BLOB_HEADER_BYTES + (size_t)j * BLOB_SLICE_BYTES;
        put32(r, kp->s[j].off);
        put32(r + 4, kp->s[j].len);
        put32(r + 8, kp->s[j].pad);
    }
}

static int parse_slices(const uint8_t *b, uint32_t k, uint32_t max_m, uint32_t n_slices,
                        struct ork_kplan *kp)
{
    const uint32_t units = (k + ORK_PLAN_K_ALIGN - 1) / ORK_PLAN_K_ALIGN;
    const uint32_t lo = (units + ORK_PLAN_I4_K_MAX / ORK_PLAN_K_ALIGN - 1) /
                        (ORK_PLAN_I4_K_MAX / ORK_PLAN_K_ALIGN);
    if (n_slices < lo || n_slices > ORK_PLAN_MAX_KSLICES || n_slices > units)
        return ork_errorf(ORK_EFORMAT, "w4a8 weights blob: n_kslices %u: K=%u takes %u..%u "
                          "slices of <= %u", n_slices, k, lo,
                          units < ORK_PLAN_MAX_KSLICES ? units : ORK_PLAN_MAX_KSLICES,
                          ORK_PLAN_I4_K_MAX);
    int ret = ork__plan_kslices_even(ORK_NPU_I8, k, max_m, n_slices, kp);
    if (ret < 0)
        return ork_errorf(ORK_EFORMAT, "w4a8 weights blob: n_kslices %u: %s", n_slices,
                          ork_error_message());
    static const char *const names[3] = { "off", "len", "pad" };
    for (uint32_t j = 0; j < n_slices; j++) {
        const uint8_t *r = b + BLOB_HEADER_BYTES + (size_t)j * BLOB_SLICE_BYTES;
        const uint32_t want[3] = { kp->s[j].off, kp->s[j].len, kp->s[j].pad };
        for (uint32_t f = 0; f < 3; f++)
            if (get32(r + 4 * f) != want[f])
                return ork_errorf(ORK_EFORMAT, "w4a8 weights blob: K-slice %u field %s is %u, "
                                  "the even cut of K=%u into %u slices has %u", j, names[f],
                                  get32(r + 4 * f), k, n_slices, want[f]);
        if (get32(r + 12) != 0)
            return ork_errorf(ORK_EFORMAT, "w4a8 weights blob: K-slice %u reserved field is "
                              "not 0", j);
    }
    return 0;
}

int ork__w4a8_blob_parse(const void *blob, uint64_t bytes, uint32_t k, uint32_t n,
                         uint32_t max_m, struct ork_kplan *kp, const uint8_t **data)
{
    const uint8_t *b = blob;
    *data = NULL;
    memset(kp, 0, sizeof *kp);
    max_m = max_m ? max_m : 1;
    if (bytes < BLOB_HEADER_BYTES || memcmp(b, blob_magic, sizeof blob_magic) != 0)
        return ork_errorf(ORK_EFORMAT, "w4a8 weights blob: no 'ORKW4A8' magic (%llu bytes)",
                          (unsigned long long)bytes);
    uint32_t h[BLOB_HDR_U32];
    for (uint32_t i = 0; i < BLOB_HDR_U32; i++)
        h[i] = get32(b + 8 + 4 * i);
    if (h[0] != ORK_W4A8_BLOB_VERSION)
        return ork_errorf(ORK_EFORMAT, "w4a8 weights blob: version %u (this libork reads %u)",
                          h[0], ORK_W4A8_BLOB_VERSION);
    static const char *const names[3] = { "k", "n", "max_m" };
    const uint32_t want[3] = { k, n, max_m };
    for (uint32_t i = 0; i < 3; i++)
        if (h[1 + i] != want[i])
            return ork_errorf(ORK_EFORMAT, "w4a8 weights blob: field %s is %u, the descriptor "
                              "says %u", names[i], h[1 + i], want[i]);
    const uint32_t np = (n + ORK_PLAN_I4_N_TILE - 1) / ORK_PLAN_I4_N_TILE * ORK_PLAN_I4_N_TILE;
    if (h[5] != np)
        return ork_errorf(ORK_EFORMAT, "w4a8 weights blob: field n_padded is %u, N=%u pads to "
                          "%u", h[5], n, np);
    for (uint32_t i = BLOB_RESERVED_OFF; i < BLOB_HEADER_BYTES; i++)
        if (b[i])
            return ork_errorf(ORK_EFORMAT, "w4a8 weights blob: reserved header byte %u is not 0",
                              i);
    const uint32_t n_slices = h[4];
    if (n_slices > ORK_PLAN_MAX_KSLICES || bytes < ork__w4a8_blob_table_bytes(n_slices))
        return ork_errorf(ORK_EFORMAT, "w4a8 weights blob: n_kslices %u: the slice table does "
                          "not fit in %llu bytes (or above %u slices)", n_slices,
                          (unsigned long long)bytes, ORK_PLAN_MAX_KSLICES);
    int ret = parse_slices(b, k, max_m, n_slices, kp);
    if (ret < 0)
        return ret;
    uint64_t off[ORK_PLAN_MAX_KSLICES];
    const uint64_t need = ork__w4a8_layout(kp, np, off), declared = get64(b + 32);
    const uint64_t table = ork__w4a8_blob_table_bytes(n_slices);
    if (declared != need || bytes - table != need)
        return ork_errorf(ORK_EFORMAT, "w4a8 weights blob: field data_bytes is %llu and %llu "
                          "bytes follow the table; the slicing takes %llu",
                          (unsigned long long)declared, (unsigned long long)(bytes - table),
                          (unsigned long long)need);
    *data = b + table;
    return 0;
}
