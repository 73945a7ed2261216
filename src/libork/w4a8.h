/* w4a8.h -- the host halves of W4A8 resident weights (encoding ORK_NPU_WEIGHTS_W4A8,
 * npu-weight-decompression.md §2): int4 codes packed two a byte in the B layout of spec §4.6,
 * K-sliced by the int16 accumulator bound, the per-column sums for the correction, the
 * activation split into the A layout, the widening of int16 partials into the exact int32
 * result, and the self-describing blob of export / create_packed. Pure host arithmetic on
 * buffers (no device, no plan objects), so tests/unit/test_w4a8_host.c checks it alone.
 * Layouts and the split of one value: i4_layout.h. Internal to libork.
 *
 * The arithmetic (§2): an int8 activation q becomes h = q >> 4 and l = (q & 15) - 8, both in
 * [-8, 7], q = 16 h + l + 8. For one K-slice j the NPU gives the int16 partials H_j = h.B_j
 * and L_j = l.B_j (physical rows 2r and 2r + 1); the host sums
 *     acc = sum_j (16 H_j + L_j) + 8 sum_k B[k][n]
 * in int32, the correction once over the whole K. Padding k has code 0 (h = 0, l = -8) and
 * padded B is 0, so it adds nothing; padded columns of B are 0 too.
 *
 * The int16 bound (§2 "int16 accumulator limit"): with a, b in [-8, 7], a slice's partial lies
 * in [-(8P + 7Q), 7P + 8Q] where P = sum of the positive codes of the column in the slice and
 * Q = sum of |negative codes|; it cannot leave int16 when 7P + 8Q <= 32767 and
 * 8P + 7Q <= 32768. Any slice of <= 480 passes (480 * 8 * 8 = 30720, one code a term). */
#ifndef ORK_W4A8_H
#define ORK_W4A8_H

#include "plan.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ORK_W4A8_POS_MAX 32767u         /* 7P + 8Q: the most positive int16 partial */
#define ORK_W4A8_NEG_MAX 32768u         /* 8P + 7Q: the most negative int16 partial's magnitude */
#define ORK_W4A8_CORRECTION 8           /* q = 16 h + l + 8 (§2) */
#define ORK_W4A8_H_WEIGHT 16

/* Every code of W (int8_t[n][k]) in [-8, 7]: ORK_EINVAL naming the first outside (row = output
 * column, column = k). */
int ork__w4a8_check_codes(const int8_t *w, uint32_t n, uint32_t k);

/* The fewest even K-slices (ork__plan_kslices_even) of at most 2048 each whose every column
 * passes the int16 bound, slices of <= 480 passing always (w4a8.h head). Fills out (dtype
 * ORK_NPU_I8, max_m as given); ORK_ERANGE when no slicing of <= ORK_PLAN_MAX_KSLICES slices
 * fits (K above 64 x 480 with weights that need narrow slices). */
int ork__w4a8_kslices(const int8_t *w, uint32_t n, uint32_t k, uint32_t max_m,
                      struct ork_kplan *out);

/* Bytes of the packed weights for slicing kp and np (N padded to 64) columns, and the byte
 * offset of each slice (slice_off[0..kp->n_slices)). */
uint64_t ork__w4a8_layout(const struct ork_kplan *kp, uint32_t np, uint64_t *slice_off);

/* Pack K-slice s of W (int8_t[n][k], codes checked) into dst, the B layout (np/64, pad/32, 64,
 * 32) of s->pad x np int4 (pad * np / 2 bytes, written whole: padding zero). */
void ork__w4a8_pack_slice(uint8_t *dst, const int8_t *w, uint32_t k, uint32_t n,
                          const struct ork_slice *s, uint32_t np);

/* The codes of column c (c < np) of a packed slice of reduction pad: P and Q (w4a8.h head). */
void ork__w4a8_column_pq(const uint8_t *slice, uint32_t pad, uint32_t c, uint32_t *p,
                         uint32_t *q);
/* Sum of column c's codes in a packed slice. */
int32_t ork__w4a8_column_sum(const uint8_t *slice, uint32_t pad, uint32_t c);

/* Check packed bytes for weights of n columns (np padded) sliced as kp at slice_off: every
 * padding nibble (k >= the slice's len, columns >= n) zero and every column of every slice
 * wider than 480 within the int16 bound; then colsum[0..n) = sum_k B[k][c]. ORK_EFORMAT
 * naming the slice and column at fault. */
int ork__w4a8_check_packed(const uint8_t *bytes, const struct ork_kplan *kp, uint32_t n,
                           uint32_t np, const uint64_t *slice_off, int32_t *colsum);

/* The activation split of rows [0, rows) of A (int8_t[.][lda], starting at column s->off of
 * the caller's K) into one tile block of the A layout (pad/32, 2 mt, 32) for K-slice s: row r
 * becomes physical rows 2r (h) and 2r + 1 (l); k in [len, pad) gets code 0. rows <= mt. */
void ork__w4a8_split_rows(uint8_t *blk, uint32_t mt, const int8_t *a, size_t lda,
                          const struct ork_slice *s, uint32_t rows);

/* Widen one tile block of int16 partials, C (pad/8, 2 mt, 8) of N-slice ns, into rows
 * [0, rows) of c (int32_t[.][ldc], at column ns->off): c += 16 H + L, or c = 16 H + L +
 * 8 colsum when `first` (the correction once, with the first K-slice). */
void ork__w4a8_gather_block(int32_t *c, size_t ldc, const int16_t *blk, uint32_t mt,
                            uint32_t rows, const struct ork_slice *ns, const int32_t *colsum,
                            bool first);

/* A doorbell sentinel for the C block of a task on packed slice `slice` (reduction pad) of
 * N-slice ns (padded columns ns->off .. + ns->pad of the slice): its last 32-bit
 * word holds the l-row partials of columns pad - 2 (low half) and pad - 1 (high half); a half
 * is chosen outside that column's attainable range [-(8P + 7Q), 7P + 8Q] (0x7fff, else
 * 0x8000), so a finished task never leaves the sentinel. Only a column at both ends of the
 * bound in both halves could (then the wait times out loudly: never a wrong result). */
uint32_t ork__w4a8_sentinel(const uint8_t *slice, uint32_t pad, const struct ork_slice *ns);

/* ---- the blob (ork_npu_weights_export / _create_packed; docs/w4a8.md "Packs") ---------- *
 *   bytes 0-7     magic "ORKW4A8\0"
 *   8-11          version (1)
 *   12-31         k, n, max_m, n_kslices, n_padded (u32 each)
 *   32-39         data bytes (u64)
 *   40-63         zero
 *   64 + 16 j     K-slice j: off, len, pad, zero (u32 each)
 *   64 + 16 S     the data: every slice's packed bytes, back to back (ork__w4a8_layout)
 * All integers little-endian. The column sums are not stored: create_packed recomputes them
 * (and checks the bound and the padding) from the data. */
#define ORK_W4A8_BLOB_VERSION 1u

uint64_t ork__w4a8_blob_table_bytes(uint32_t n_kslices);
/* Write the header and slice table (ork__w4a8_blob_table_bytes bytes). */
void ork__w4a8_blob_write_table(const struct ork_kplan *kp, uint32_t n, uint32_t np,
                                uint64_t data_bytes, uint8_t *out);
/* Parse and validate a blob for weights of k x n made for max_m (0 = 1): magic, version,
 * every header field against the descriptor, the slicing (even 32-unit slices of <= 2048, as
 * ork__plan_kslices_even cuts them), the data size. Fills *kp and *data (inside blob); the
 * data itself is checked by ork__w4a8_check_packed. ORK_EFORMAT naming the field. */
int ork__w4a8_blob_parse(const void *blob, uint64_t bytes, uint32_t k, uint32_t n,
                         uint32_t max_m, struct ork_kplan *kp, const uint8_t **data);

#endif
