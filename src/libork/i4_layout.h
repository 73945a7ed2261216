/* i4_layout.h -- the int4 (W4A8) memory layouts and the activation split, shared by the
 * program emitter, the host halves of a plan's run and the simulator. Internal to libork/sim.
 *
 * Layouts (spec rk3588-npu.md §4.6 [HW]): A (K/32, M, 32), B (N/64, K/32, 64, 32), C (N/8, M, 8)
 * with int16 C; K % 32 == 0, N % 64 == 0. Two int4 values a byte: the even element (k even for
 * A and B) in the low nibble, the odd one in the high nibble. §4.6 does not state the nibble
 * order: this is ork's choice [INF], the thing `ork selftest --confirm-forms` checks on a board
 * (its `w4a8` step compares against the CPU reference bit for bit).
 *
 * M here is the program's physical int4 rows. The activation split (npu-weight-decompression.md
 * §2 [SRC]): an int8 activation q in [-128, 127] becomes h = q >> 4 (arithmetic) and
 * l = (q & 15) - 8, both in [-8, 7], with q = 16 h + l + 8; token row r becomes the physical
 * rows 2r (h) and 2r + 1 (l). The host rebuilds acc = 16 (h.B) + (l.B) + 8 sum_k B[k][n].
 *
 * A column range [n0, n0 + Nc) with n0 % 64 == 0 is one contiguous byte range of B (starting at
 * n0 K / 2) and of C (starting at n0 M int16 elements): the N-split of §4.5 carries over. */
#ifndef ORK_I4_LAYOUT_H
#define ORK_I4_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#define ORK_I4_K_ALIGN 32u          /* §4.6: K % 32 */
#define ORK_I4_N_ALIGN 64u          /* §4.6: N % 64 */
#define ORK_I4_C_ATOM 8u            /* §4.6: C (N/8, M, 8) */
#define ORK_I4_MIN (-8)
#define ORK_I4_MAX 7

/* Byte offset of element (row r, k) of A (K/32, M, 32); its nibble is k & 1 (0 = low). */
static inline size_t ork__i4_a_byte(uint32_t M, uint32_t r, uint32_t k)
{
    return ((size_t)(k / 32u) * M + r) * 16u + (k % 32u) / 2u;
}

/* Byte offset of element (column n, k) of B (N/64, K/32, 64, 32) of reduction K. */
static inline size_t ork__i4_b_byte(uint32_t K, uint32_t n, uint32_t k)
{
    return (((size_t)(n / 64u) * (K / 32u) + k / 32u) * 64u + n % 64u) * 16u + (k % 32u) / 2u;
}

/* Element index (int16 units) of (row r, column n) of C (N/8, M, 8). */
static inline size_t ork__i4_c_index(uint32_t M, uint32_t r, uint32_t n)
{
    return ((size_t)(n / 8u) * M + r) * 8u + n % 8u;
}

/* Read / write one signed int4 at byte p, nibble `hi`. */
static inline int ork__i4_get(const uint8_t *p, unsigned hi)
{
    const int v = hi ? (*p >> 4) : (*p & 15);
    return v >= 8 ? v - 16 : v;
}
static inline void ork__i4_set(uint8_t *p, unsigned hi, int v)
{
    const uint8_t u = (uint8_t)(v & 15);
    *p = hi ? (uint8_t)((*p & 0x0f) | (u << 4)) : (uint8_t)((*p & 0xf0) | u);
}

/* The activation split of one int8 value (npu-weight-decompression.md §2). */
static inline int ork__i4_split_hi(int8_t q) { return q >> 4; }
static inline int ork__i4_split_lo(int8_t q) { return (q & 15) - 8; }

/* The CBUF bank split of an int4 program (CNA_CBUF_CON0, spec §5.2) [INF]: no int4 schedule is
 * published, so ork applies the int8 rule of spec §5.3/§5.5 to the feature bytes. A physical
 * row holds K/2 bytes; the data banks are filled in groups of 64 rows (§5.3 "use ceil"), so
 * D = ceil(64 ceil(M/64) (K/2) / 32768) banks of 32 KiB (§1.3), at least 1, and the other
 * 12 - D banks hold weights (§5.2: D + W = 12, v = ((12 - D) << 4) | D). Within the int4
 * limits (M <= 128, K <= 2048) D is at most 4; M = 1..64 with K <= 1024 gives the template
 * value 0xb1. */
#define ORK_I4_CBUF_BANKS 12u           /* spec §1.3: 12 banks */
#define ORK_I4_CBUF_BANK_BYTES 32768u   /* of 32 KiB */
#define ORK_I4_CBUF_ROW_GROUP 64u       /* spec §5.3: one schedule step per 64 rows */
#define ORK_I4_CBUF_DATA_MAX 11u        /* spec §5.2: at least one weight bank */
static inline uint32_t ork__i4_cbuf_data_banks(uint32_t M, uint32_t K)
{
    const uint64_t rows = (uint64_t)ORK_I4_CBUF_ROW_GROUP *
                          ((M + ORK_I4_CBUF_ROW_GROUP - 1) / ORK_I4_CBUF_ROW_GROUP);
    const uint64_t bytes = M > ORK_I4_CBUF_ROW_GROUP ? rows * (K / 2u) : (uint64_t)M * (K / 2u);
    uint64_t d = (bytes + ORK_I4_CBUF_BANK_BYTES - 1) / ORK_I4_CBUF_BANK_BYTES;
    return d < 1 ? 1u : d > ORK_I4_CBUF_DATA_MAX ? ORK_I4_CBUF_DATA_MAX : (uint32_t)d;
}
static inline uint32_t ork__i4_cbuf_con0(uint32_t M, uint32_t K)
{
    const uint32_t d = ork__i4_cbuf_data_banks(M, K);
    return ((ORK_I4_CBUF_BANKS - d) << 4) | d;
}

#endif
