/* dcomp_blob.h -- the self-describing form of resident DCOMP weights (ork_npu_weights_export /
 * _create_packed with encoding = ORK_NPU_WEIGHTS_DCOMP): a versioned header, the block table
 * (shape, offset, registers of every task weight block) and the blocks' bytes. Internal to
 * libork; the layout is documented in docs/dcomp.md "The weights blob".
 *
 *   bytes 0-7     magic "ORKDCMP\0"
 *   8-11          version (1)
 *   12-47         k, n, max_m, grid_max_abs, n_kslices, n_cores, n_nslices, n_parts (u32 each)
 *   48-55         data bytes (u64)
 *   56-63         zero
 *   64 + 128 i    block i (K-slice major): kslice, core, nslice, k0, klen, kpad, n0, nlen, npad,
 *                 raw (u32 each), off, bytes (u64), DCOMP_CTRL, DCOMP_REGNUM, AMOUNT0..15 (u32)
 *   64 + 128 P    the data: every block at its offset, 64-byte aligned
 * All integers little-endian. */
#ifndef ORK_DCOMP_BLOB_H
#define ORK_DCOMP_BLOB_H

#include <ork/dcomp.h>

#include <stdint.h>

#define ORK_DCOMP_BLOB_VERSION 1u

/* Bytes of the header and block table of a blob of n_parts blocks (where the data starts). */
uint64_t ork__dcomp_blob_table_bytes(uint32_t n_parts);

/* Write the header and block table of dw (data bytes dw->bytes, for weights of max_m and grid
 * bound grid) into out (ork__dcomp_blob_table_bytes(dw->n_parts) bytes). */
void ork__dcomp_blob_write_table(const struct ork_dcomp_weights *dw, uint32_t max_m, uint32_t grid,
                                 uint8_t *out);

/* Parse and validate a blob for weights of k x n made for max_m (0 = 1): every header field,
 * the split against the one libork plans for the blob's cores, every block's shape, offset,
 * size and registers (a compressed block's size is what its AMOUNTs give, spec
 * npu-weight-decompression.md §1.4). Fills out (parts owned, data NULL; ork_dcomp_weights_fini
 * frees), *data (inside blob) and *grid. ORK_EFORMAT naming the fault. The streams themselves
 * are not decoded here. */
int ork__dcomp_blob_parse(const void *blob, uint64_t bytes, uint32_t k, uint32_t n, uint32_t max_m,
                          struct ork_dcomp_weights *out, const uint8_t **data, uint32_t *grid);

#endif
