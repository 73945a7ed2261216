/* plan.h -- tiling of one matmul into hardware programs: K-slices (host-summed), N-slices
 * (<= 8192 columns), M-tiles (<= the CBUF schedule's cap for the slice's K), and the per-program
 * CBUF bank split and FEATURE_GRAINS values (spec §5). Shapes and offsets only: register
 * emission is program.c, buffers and submission matmul.c. Internal to libork. */
#ifndef ORK_PLAN_H
#define ORK_PLAN_H

#include <ork/npu.h>

#include <stdint.h>

/* Hardware multiples (spec §5.1). */
#define ORK_PLAN_K_ALIGN 32u
#define ORK_PLAN_N_TILE_I8 32u
#define ORK_PLAN_N_TILE_F16 16u
#define ORK_PLAN_N_MAX 8192u        /* N per program (N_ABOVE_8192, spec §5.1) */
#define ORK_PLAN_DECODE_K_MAX 8192u /* M = 1: any K up to 8192 in one program (spec §5.1) */
#define ORK_PLAN_M_MAX (1u << 20)   /* rows of one plan (M-tiled), as weights' max_m is bounded */

/* One slice of a dimension: real indices [off, off + len) of the caller's matrix, computed by a
 * program of size `pad` >= len (the rest is zero padding). Padded offsets equal real offsets
 * because only the last slice of a dimension is ever padded. */
struct ork_slice {
    uint32_t off;
    uint32_t len;
    uint32_t pad;
};

#define ORK_PLAN_MAX_KSLICES 64u

/* K-slicing of a weights object, fixed at pack time (it decides the weight layout). */
struct ork_kplan {
    enum ork_npu_dtype dtype;
    uint32_t k;                              /* caller's K */
    uint32_t max_m;                          /* plans may use M up to this */
    uint32_t n_slices;
    uint32_t k_padded;                       /* sum of pads */
    struct ork_slice s[ORK_PLAN_MAX_KSLICES];
};

/* N-slicing (depends on N only). */
struct ork_nplan {
    uint32_t n;                              /* caller's N */
    uint32_t tile;                           /* 32 int8, 16 fp16 */
    uint32_t n_padded;                       /* N rounded up to the tile */
    uint32_t n_slices;
    struct ork_slice *s;                     /* n_slices entries (ork_calloc'd) */
};

/* Column tile of a dtype (spec §4.3/§4.4). */
uint32_t ork__plan_n_tile(enum ork_npu_dtype dt);

/* CNA_CBUF_CON0 for a program of m rows and reduction k (spec §5.2-§5.4; m = 1 uses the decode
 * value 0xb1). */
uint32_t ork__plan_cbuf_con0(enum ork_npu_dtype dt, uint32_t m, uint32_t k);
/* FEATURE_GRAINS rows (spec §5.6): m + 1, capped by pow2_floor(65536/k) (int8) or
 * pow2_floor(32768/k) (fp16) under the bank schedule. */
uint32_t ork__plan_grains(enum ork_npu_dtype dt, uint32_t m, uint32_t k);
/* True when the bank schedule applies to a program of reduction k with m > 1 rows:
 * int8 k % 512 == 0 && k <= 4096 (§5.3); fp16 k a power of two in [128, 2048) (§5.4). */
bool ork__plan_sched(enum ork_npu_dtype dt, uint32_t k);
/* Largest correct M for a program of reduction k with more than one row (spec §5.3 M_max,
 * §5.4 table); 0 when no M > 1 is supported at this k. */
uint32_t ork__plan_m_cap(enum ork_npu_dtype dt, uint32_t k);

/* The same with the submit forms a device confirmed (ork_npu_confirmed_forms): with
 * ORK_NPU_FORM_WIDE_K, an int8 program of K in (4096, 8192] (K % 32 == 0) takes M > 1 rows by
 * the published rules (npu-weight-decompression.md §4.3 [SRC]: up to 32 rows for K <= 6144, 16
 * above; D = ceil(M*K/32768) data banks; FEATURE_GRAINS 30); without it, or outside that K,
 * exactly the functions above. */
bool ork__plan_wide_k(enum ork_npu_dtype dt, uint32_t k, uint32_t forms);
uint32_t ork__plan_m_cap_forms(enum ork_npu_dtype dt, uint32_t k, uint32_t forms);
uint32_t ork__plan_m_tile_forms(enum ork_npu_dtype dt, uint32_t m, uint32_t kpad, uint32_t forms);
uint32_t ork__plan_cbuf_con0_forms(enum ork_npu_dtype dt, uint32_t m, uint32_t k, uint32_t forms);
uint32_t ork__plan_grains_forms(enum ork_npu_dtype dt, uint32_t m, uint32_t k, uint32_t forms);

/* Choose the K-slicing for weights of reduction k used with up to max_m rows. */
int ork__plan_kslices(enum ork_npu_dtype dt, uint32_t k, uint32_t max_m, struct ork_kplan *out);
/* Split N into slices of at most 8192 columns (multiples of the tile). */
int ork__plan_nslices(enum ork_npu_dtype dt, uint32_t n, struct ork_nplan *out);
void ork__plan_nslices_fini(struct ork_nplan *p);
/* The N-split of a plan over cores (spec §9): at most this many cores (RK3588, spec §1.1). */
#define ORK_PLAN_MAX_CORES 3u
/* Cores a plan asking for `want` (0 = 1) splits N of dtype dt over: at least 2 column tiles
 * each (spec §9), at most ORK_PLAN_MAX_CORES. */
uint32_t ork__plan_split_cores(enum ork_npu_dtype dt, uint32_t n, uint32_t want);
/* The N-slices of a split over nc cores (from ork__plan_split_cores): core c takes column tiles
 * [c NN / nc, (c+1) NN / nc) of the padded N, cut into even slices of <= 8192 columns (§5.1).
 * Column blocks are contiguous ranges of every packed K-slice (§4.5). Fills ns (NULL: count
 * only) and core_ns0[0..nc] (NULL: not wanted; core c owns slices [ns0[c], ns0[c+1])); returns
 * the number of slices. */
uint32_t ork__plan_nsplit(enum ork_npu_dtype dt, uint32_t n, uint32_t nc, struct ork_slice *ns,
                          uint32_t *core_ns0);
/* M-tile size for m rows with slice reduction kpad: min(m, cap) (m = 1 -> 1). */
uint32_t ork__plan_m_tile(enum ork_npu_dtype dt, uint32_t m, uint32_t kpad);

/* ---- W4A8 (int4 x int4 -> int16, npu-weight-decompression.md §2) ------------------------- *
 * Per-program limits (§2 "Limits" [SRC]): K % 32 and K <= 2048, N % 64 and N <= 4096, at most
 * 128 physical int4 rows (native layout). Every token is two physical rows (h and l), so an
 * M-tile holds at most 64 tokens. A K-slice of at most 480 never overflows the int16
 * accumulator; a wider one (up to 2048) only for weights whose every column passes
 * 7P + 8Q <= 32767 and 8P + 7Q <= 32768 in that slice (§2 "int16 accumulator limit";
 * w4a8_weights.c chooses the slicing from the codes). */
#define ORK_PLAN_I4_K_SAFE 480u
#define ORK_PLAN_I4_K_MAX 2048u
#define ORK_PLAN_I4_N_TILE 64u
#define ORK_PLAN_I4_N_MAX 4096u
#define ORK_PLAN_I4_ROWS_MAX 128u
#define ORK_PLAN_I4_TOKENS_MAX (ORK_PLAN_I4_ROWS_MAX / 2u)

/* K-slicing of reduction k into n_slices even slices of whole 32-wide units (the larger
 * first, only the last padded), as every dtype's slicing is cut. ORK_ERANGE when n_slices is
 * 0, above ORK_PLAN_MAX_KSLICES or above the units. */
int ork__plan_kslices_even(enum ork_npu_dtype dt, uint32_t k, uint32_t max_m, uint32_t n_slices,
                           struct ork_kplan *out);
/* N-slicing of W4A8 weights: 64-column tiles, slices of at most 4096 columns. */
int ork__plan_nslices_i4(uint32_t n, struct ork_nplan *out);
/* The core split and its N-slices for W4A8 plans: as ork__plan_split_cores / ork__plan_nsplit
 * with 64-column tiles (>= 2 tiles a core, spec §9) and slices of <= 4096 columns; column
 * blocks stay contiguous in B and C (spec §4.6, i4_layout.h). */
uint32_t ork__plan_split_cores_i4(uint32_t n, uint32_t want);
uint32_t ork__plan_nsplit_i4(uint32_t n, uint32_t nc, struct ork_slice *ns, uint32_t *core_ns0);
/* Tokens per M-tile for a plan of m tokens: min(m, 64). */
uint32_t ork__plan_m_tile_i4(uint32_t m);

#endif
