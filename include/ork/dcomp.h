/* ork/dcomp.h -- the stream of the CNA weight decompressor (DCOMP) and weight grids for it.
 *
 * The RK3588 CNA can read a task's int8 weight block as a lossless, per-lane prefix-coded stream
 * and expand it back into the native int8 layout before the MAC (spec
 * npu-weight-decompression.md §1; the format is §1.4, the registers §1.1/§1.2). This header is
 * the host side of that: encode a block (one K-slice x one N-partition of the native layout
 * [N/32][K/32][32 n][32 k], spec rk3588-npu.md §4.3 and include/ork/npu.h) into the stream plus
 * the DCOMP_CTRL / DCOMP_REGNUM / DCOMP_AMOUNT0..15 values, decode it back bit for bit with
 * strict validation, and encode a whole W[n][k] as the per-core N-partitions a matmul plan
 * splits it into (one stream per K-slice x core N-slice, §1.6). Resident weights hold such
 * streams with encoding = ORK_NPU_WEIGHTS_DCOMP (<ork/npu.h>); their programs write these
 * registers and the simulator executes them. docs/dcomp.md has the details and what is not
 * done yet.
 *
 * The grid half (dcomp_grid.c) quantises float weights per output channel onto a symmetric grid
 * of 2L+1 levels, measures the error against the source weights, rotates K by a Hadamard
 * transform if asked, and picks the coarsest grid under an error bound: the int8 codes of a
 * coarse grid are what makes the stream short (§1.8).
 *
 * Host-side only: nothing here touches a device. Errors: negative ORK_E* codes with an
 * ork_error_message() naming what was wrong (which lane, which AMOUNTn, which symbol). */
#ifndef ORK_DCOMP_H
#define ORK_DCOMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the stream (spec npu-weight-decompression.md §1.4) ---------------------------------- */

#define ORK_DCOMP_LANES 16u             /* independent lanes per block (§1.4 "Lanes") */
#define ORK_DCOMP_ALIGN 64u             /* block base and every lane start (§1.4 "Sizes") */
#define ORK_DCOMP_UNIT 16u              /* bytes per AMOUNTn unit (§1.2: blocks of 16 bytes) */
#define ORK_DCOMP_MIN_UNITS 8u          /* a lane is at least 8 units = 128 bytes (§1.4) */
#define ORK_DCOMP_HEADER_BYTES 16u      /* per-lane header (§1.4 "Per-lane stream") */
#define ORK_DCOMP_CTRL_ON 1u            /* DCOMP_CTRL: DECOMP_CONTROL = 1, WT_DEC_BYPASS = 0 */
#define ORK_DCOMP_CTRL_RAW 0u           /* DCOMP_CTRL of a raw task (§1.2 "Raw task") */
#define ORK_DCOMP_REGNUM_NORMAL 0x55555555u /* DCOMP_REGNUM of a compressed task (§1.2) */
#define ORK_DCOMP_TILE 32u              /* K and N of a block are multiples of this (§1.4) */
#define ORK_DCOMP_GRID_MIN 7u           /* code bounds L resident DCOMP weights accept: the */
#define ORK_DCOMP_GRID_MAX 127u         /* coarsest and finest of ork_dcomp_grids */

/* The decompressor registers of one task (§1.1, §1.2). DCOMP_ADDR0 is the block's device
 * address: the caller places the block and writes its address. */
struct ork_dcomp_regs {
    uint32_t ctrl;                      /* DCOMP_CTRL: ORK_DCOMP_CTRL_ON or _RAW */
    uint32_t regnum;                    /* DCOMP_REGNUM: _REGNUM_NORMAL, or 0 for a raw task */
    uint32_t amount[ORK_DCOMP_LANES];   /* DCOMP_AMOUNTn: lane n's 16-byte units minus one; 0
                                         * for a raw task */
};

/* What an encoded block is. */
struct ork_dcomp_block_info {
    uint32_t k, n;                      /* block shape (multiples of 32) */
    bool raw;                           /* stored raw: the stream would not be smaller */
    uint64_t bytes;                     /* bytes the block occupies (multiple of 64) */
    uint64_t stream_bytes;              /* bytes of the compressed form (even when stored raw) */
    uint64_t bits;                      /* header and symbol bits of the compressed form */
};

enum ork_dcomp_encode_flags {
    ORK_DCOMP_ENCODE_FORCE = 1u << 0,   /* keep the compressed form even when it does not
                                         * shrink the block (tests; a task must then use it) */
};

/* Largest number of bytes ork_dcomp_block_encode may write for a k x n block (the compressed
 * form at 12 bits a weight, or the raw block, whichever is larger); 0 for a bad shape. */
uint64_t ork_dcomp_block_bound(uint32_t k, uint32_t n);

/* Encode one block: `native` is k * n bytes of int8 weights in the layout [n/32][k/32][32][32]
 * (k, n multiples of 32). Writes info->bytes bytes to dst (cap >= ork_dcomp_block_bound, or
 * at least info->bytes: ORK_ENOSPC says how many were needed) and the registers. The
 * compressed form replaces the raw block only when it is smaller (§1.4 "Tiles that do not
 * shrink are stored raw"), unless ORK_DCOMP_ENCODE_FORCE. dst may be NULL with cap 0 to
 * measure only (regs and info are filled, nothing is written). */
int ork_dcomp_block_encode(const uint8_t *native, uint32_t k, uint32_t n, uint32_t flags,
                           uint8_t *dst, uint64_t cap, struct ork_dcomp_regs *regs,
                           struct ork_dcomp_block_info *info);

/* What the decoder checks beyond the format itself. Zero-initialised = strict, any int8 code,
 * base address 0. */
struct ork_dcomp_check {
    uint64_t addr;                      /* the block's device address (DCOMP_ADDR0): must be
                                         * 64-byte aligned (§1.4 "Alignment") */
    uint32_t max_abs;                   /* decoded codes must lie in [-max_abs, max_abs] (the
                                         * grid the weights were quantised on); 0 = any int8 */
    bool lenient;                       /* accept an AMOUNTn larger than its lane needs and
                                         * non-zero padding (what a board may well accept;
                                         * the encoder never writes either) */
};

/* Decode one block of k x n from `src` (avail bytes readable from the block's address) with
 * the task's registers into `native` (k * n bytes, the layout above). Raw tasks (CTRL = 0)
 * copy the block. Rejected with ORK_EFORMAT and a message naming what was wrong: a
 * misaligned address, a bad DCOMP_CTRL / DCOMP_REGNUM, an AMOUNTn below the 8-unit minimum or
 * (strict) not the size its lane's symbols need, lanes that run past `avail`, a bad lane
 * header, a truncated lane, a code outside the grid, non-zero padding (strict). No crash or
 * read past `avail` on any input. */
int ork_dcomp_block_decode(const uint8_t *src, uint64_t avail, uint32_t k, uint32_t n,
                           const struct ork_dcomp_regs *regs, const struct ork_dcomp_check *chk,
                           uint8_t *native);

/* Byte offset of lane `lane` from the block's address (§1.4 [INF]: lanes back to back, each
 * padded to 64 bytes): sum over j < lane of align64(16 * (AMOUNT_j + 1)); lane 16 = the
 * compressed block's size. */
uint64_t ork_dcomp_lane_offset(const struct ork_dcomp_regs *regs, uint32_t lane);

/* ---- whole weights as a matmul plan splits them (§1.6) ------------------------------------- */

/* One task weight block: K-slice `kslice` x the N-slice `nslice` of core `core`. */
struct ork_dcomp_part {
    uint32_t kslice, core, nslice;      /* which K-slice, core and (global) N-slice */
    uint32_t k0, klen, kpad;            /* caller rows [k0, k0 + klen) of K, padded to kpad */
    uint32_t n0, nlen, npad;            /* caller columns [n0, n0 + nlen), padded to npad */
    uint64_t off;                       /* byte offset of the block in data (64-aligned) */
    struct ork_dcomp_regs regs;
    struct ork_dcomp_block_info info;
};

struct ork_dcomp_weights_desc {
    uint32_t struct_size;               /* sizeof(struct ork_dcomp_weights_desc) */
    uint32_t k, n;                      /* W is int8_t[n][k] (one row per output column) */
    const int8_t *w;
    uint32_t max_m;                     /* decides the K-slicing as for ork_npu_weights_create
                                         * (0 = 1) */
    uint32_t cores;                     /* cores the plan splits N over (1..3; 0 = 1), clamped
                                         * as a plan clamps it (>= 2 column tiles per core) */
    uint32_t flags;                     /* ORK_DCOMP_ENCODE_* for every block */
};

/* The encoded weights. Owns parts and data (ork_dcomp_weights_fini frees them). */
struct ork_dcomp_weights {
    uint32_t k, n;                      /* caller's shape */
    uint32_t n_kslices, n_cores, n_nslices; /* the split (N-slices over all cores) */
    uint32_t n_parts;                   /* n_kslices * n_nslices, K-slice major */
    struct ork_dcomp_part *parts;
    uint8_t *data;                      /* every block back to back, each 64-aligned */
    uint64_t bytes;                     /* bytes of data */
    uint64_t raw_bytes;                 /* bytes of the same blocks stored raw (padded int8) */
    uint32_t n_raw;                     /* blocks stored raw */
};

/* Encode W as the blocks of a plan of desc->cores cores: K-sliced as libork slices weights for
 * max_m (src/libork/plan.c), N split per core into contiguous column-tile ranges cut into
 * slices of <= 8192 columns, by the rule every plan uses (plan.c ork__plan_nsplit, spec §9). */
int ork_dcomp_weights_encode(const struct ork_dcomp_weights_desc *d, struct ork_dcomp_weights *out);
void ork_dcomp_weights_fini(struct ork_dcomp_weights *dw);
/* Decode every block (strictly, chk as for ork_dcomp_block_decode; NULL = strict defaults with
 * the block offsets as addresses) back into w = int8_t[n][k]. */
int ork_dcomp_weights_decode(const struct ork_dcomp_weights *dw, const struct ork_dcomp_check *chk,
                             int8_t *w);
/* Weight bits per caller weight: 8 * bytes / (k * n) (per-channel scales not included). */
double ork_dcomp_weights_bpw(const struct ork_dcomp_weights *dw);
/* Bytes core `core` reads for one pass over its blocks (its streams, raw blocks at their raw
 * size): what a timing model charges that core's DRAM traffic per M-tile (§1.6: every M-tile
 * task decompresses the same stream again). 0 for a core the split does not use. */
uint64_t ork_dcomp_weights_core_bytes(const struct ork_dcomp_weights *dw, uint32_t core);

/* ---- weight grids (dcomp_grid.c) ----------------------------------------------------------- */

/* The grids considered, coarsest first: codes in [-L, L] for L = 7, 15, 31, 63, 127. Each L is
 * 2^j - 1, so a grid fills whole width classes of the code (§1.4: class w holds magnitudes
 * [2^(w-1), 2^w - 1]; a symmetric L = 2^j would open class j+1 for the single code +2^j). */
#define ORK_DCOMP_N_GRIDS 5u
extern const uint32_t ork_dcomp_grids[ORK_DCOMP_N_GRIDS];

enum ork_dcomp_quant_flags {
    ORK_DCOMP_QUANT_CLIP = 1u << 0,     /* per channel, the clipping of max|w| (a fixed set of
                                         * fractions, dcomp_grid.c) with the least squared
                                         * error, instead of plain max-abs */
};

/* Per output channel j: scale[j] = c_j * max|W[j][:]| / L (c_j = 1 without CLIP; 1 for an
 * all-zero row), q = round-half-away(W / scale) clamped to [-L, L]. L in 1..127. */
int ork_dcomp_quantize(const float *w, uint32_t n, uint32_t k, uint32_t levels, uint32_t flags,
                       int8_t *q, float *scales);
/* Relative RMS error of the dequantised codes against the source: sqrt(sum (w - s*q)^2 /
 * sum w^2) over the whole tensor (0 for an all-zero source). */
double ork_dcomp_rel_rmse(const float *w, const int8_t *q, const float *scales, uint32_t n,
                          uint32_t k);

/* Size of the Hadamard blocks used on rows of length k: the largest power of two dividing k,
 * at most max_block (0 = no cap). */
uint32_t ork_dcomp_hadamard_block(uint32_t k, uint32_t max_block);
/* Rotate every row of W[n][k] in place by the orthonormal block-diagonal Walsh-Hadamard
 * transform with blocks of `block` (a power of two dividing k): W' = W H, so W x = W' (H^T x)
 * with the rotation of x folded into the op before. H is symmetric and its own inverse, so a
 * second call undoes the first. Each row stays one output channel: per-channel scales still
 * apply. */
int ork_dcomp_hadamard_rows(float *w, uint32_t n, uint32_t k, uint32_t block);

/* One grid's result on a tensor. */
struct ork_dcomp_grid_result {
    uint32_t levels;                    /* L */
    double rel_rmse;                    /* ork_dcomp_rel_rmse of the codes */
    double bpw;                         /* stream bits per weight (1 core, max_m 1) */
    uint64_t bytes;                     /* stream bytes */
};

struct ork_dcomp_grid_opts {
    uint32_t quant_flags;               /* ORK_DCOMP_QUANT_* */
    uint32_t hadamard_block;            /* 0 = no rotation; else rotate K first (a power of two
                                         * dividing k) and measure in the rotated basis, which
                                         * equals the original one (H orthonormal) */
    double max_rel_rmse;                /* the user's error bound for the pick */
};

/* Evaluate every grid of ork_dcomp_grids on W[n][k] (res[ORK_DCOMP_N_GRIDS]) and pick the
 * coarsest whose rel-RMSE is within opts->max_rel_rmse: *picked = its index, or the finest
 * grid's index with *met = false when none is. */
int ork_dcomp_grid_pick(const float *w, uint32_t n, uint32_t k, const struct ork_dcomp_grid_opts *o,
                        struct ork_dcomp_grid_result *res, uint32_t *picked, bool *met);

#ifdef __cplusplus
}
#endif
#endif
