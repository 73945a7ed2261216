/* calib.h -- calibrated, error-compensating quantisation of the NPU weights (docs/dcomp.md
 * "Calibrated quantisation"): gptq.c quantises one tensor's rows with their per-channel scales
 * fixed, spreading each column's rounding error over the columns not yet quantised through the
 * inverse of the input second moment H = sum x x^T; calib.c collects H per NPU tensor slot from
 * the rows the executor quantises while the model runs over a calibration text, and re-creates
 * the executor with the compensated codes. Private to src/engine/npu/ and its tests. */
#ifndef ORK_ENGINE_NPU_CALIB_H
#define ORK_ENGINE_NPU_CALIB_H

#include <stddef.h>
#include <stdint.h>

/* Damping added to H's diagonal before it is inverted, as a fraction of its mean diagonal:
 * keeps H positive definite when some inputs are (nearly) linearly dependent or never active.
 * 0.01 is the published method's default, not tuned here. */
#define ORK__NPU_GPTQ_DAMP 0.01

/* The order the columns are quantised in. NATURAL: 0 .. k-1. ACT ("activation order", the
 * published method's variant): decreasing H[j][j], ties by the lower index, columns with
 * H[j][j] <= 0 (inputs never seen) last. */
enum ork__npu_gptq_order {
    ORK__NPU_GPTQ_ORDER_NATURAL = 0,
    ORK__NPU_GPTQ_ORDER_ACT = 1,
};
/* The order calib.c uses (docs/bench-log/2026-12-gptq-actorder.md measured both; a build
 * may set it with -DORK__NPU_GPTQ_ORDER_DEFAULT=ORK__NPU_GPTQ_ORDER_NATURAL to compare). */
#ifndef ORK__NPU_GPTQ_ORDER_DEFAULT
#define ORK__NPU_GPTQ_ORDER_DEFAULT ORK__NPU_GPTQ_ORDER_ACT
#endif

/* Codes q [n][k] of the rows w [n][k] on the integer grid [lo, hi] at the fixed per-row scales
 * scales[n] (> 0), quantising the columns in the given order (step t takes column perm[t]) and,
 * after each, spreading every row's rounding error over the columns not yet quantised through
 * the upper Cholesky factor U of P^T (H + damp I)^-1 P, P the order's permutation (h: k x k,
 * row-major, symmetric; only its values matter, not its scale):
 * w[perm[l]] -= U[t][l] * (w[perm[t]] - s q[perm[t]]) / U[t][t], l > t. Rounding is
 * roundf(w * (1 / s)) clamped, as round-to-nearest's is (ork_dcomp_quantize), so a diagonal H
 * gives round-to-nearest's codes exactly in either order. Columns with H[j][j] == 0 (inputs
 * never seen) take diagonal 1. ORK_EINVAL on a bad argument, ORK_ENOMEM, ORK_ERANGE when the
 * damped H is not positive definite. */
int ork__npu_gptq(const float *w, uint32_t n, uint32_t k, const float *h,
                  enum ork__npu_gptq_order order, int32_t lo, int32_t hi, const float *scales,
                  int8_t *q);
/* The same in two steps, for a tensor whose rows come one at a time: the order perm [k] (a
 * permutation of 0 .. k-1) and U [k][k] (double, in that order) from h, then rows w [n][k]
 * with both (wr: scratch of k doubles). */
int ork__npu_gptq_factor(const float *h, uint32_t k, enum ork__npu_gptq_order order,
                         double *u, uint32_t *perm);
int ork__npu_gptq_rows(const float *w, uint32_t n, uint32_t k, const double *u,
                       const uint32_t *perm, int32_t lo, int32_t hi, const float *scales,
                       double *wr, int8_t *q);

/* Block-diagonal H: a slot of K inputs keeps only the diagonal blocks of H, B x B each over
 * inputs [b B, min(K, (b + 1) B)) (the last block shorter), and GPTQ runs on each block
 * independently (in its own activation order): a column's rounding error is spread over the
 * not yet quantised columns of its own block only. B = 512: H then costs K x 512 x 4 B per
 * slot (Qwen2.5-7B's down projection, K = 18944: 37 MiB instead of 1.34 GiB; the whole 7B
 * about 1.6 GiB instead of 41 GiB), the factorisation O(K B^2) and the row updates B / 2
 * multiply-adds per weight (docs/bench-log/2026-12-calib-scale.md times it on Qwen3-1.7B's
 * shapes); every slot of the fixtures (K <= 172) is one block, i.e. the full H
 * as before. */
#define ORK__NPU_GPTQ_BLOCK 512u

static inline uint32_t ork__npu_gptq_n_blocks(uint32_t k)
{
    return (k + ORK__NPU_GPTQ_BLOCK - 1) / ORK__NPU_GPTQ_BLOCK;
}

/* Inputs of block b of a slot of k. */
static inline uint32_t ork__npu_gptq_block_k(uint32_t k, uint32_t b)
{
    uint32_t c0 = b * ORK__NPU_GPTQ_BLOCK;
    return k - c0 < ORK__NPU_GPTQ_BLOCK ? k - c0 : ORK__NPU_GPTQ_BLOCK;
}

/* The blocked H of a slot of k ("hb"): its blocks one after the other, block b (kb x kb,
 * row-major, symmetric) at float offset ork__npu_gptq_block_off(k, b); ork__npu_gptq_hb_floats
 * in all (k <= B: the whole k x k H). */
size_t ork__npu_gptq_block_off(uint32_t k, uint32_t b);
size_t ork__npu_gptq_hb_floats(uint32_t k);

/* A blocked H factored for rows: per block b its order (perm + b B, block-local indices) and
 * U (u + ork__npu_gptq_block_off(k, b), kb x kb), as ork__npu_gptq_factor gives them. */
struct ork__npu_gptq_plan {
    uint32_t k, nb;
    double *u;
    uint32_t *perm;
    double *wr;                 /* scratch of the rows */
};
int ork__npu_gptq_plan_init(struct ork__npu_gptq_plan *p, const float *hb, uint32_t k,
                            enum ork__npu_gptq_order order);
/* Codes q [n][k] of rows w [n][k]: each block's columns by ork__npu_gptq_rows' rule with that
 * block's order and U (the same bits as ork__npu_gptq on the block's columns and H; rows taken
 * a few at a time, each U row read once for them). */
int ork__npu_gptq_plan_rows(struct ork__npu_gptq_plan *p, const float *w, uint32_t n,
                            int32_t lo, int32_t hi, const float *scales, int8_t *q);
/* The same with the caller's scratch wr of ORK__NPU_GPTQ_ROWS_SCRATCH_ROWS x min(k, B)
 * doubles (p is then only read: threads may share it, each with its own wr). */
#define ORK__NPU_GPTQ_ROWS_SCRATCH_ROWS 4u
int ork__npu_gptq_plan_rows_wr(const struct ork__npu_gptq_plan *p, const float *w, uint32_t n,
                               int32_t lo, int32_t hi, const float *scales, double *wr,
                               int8_t *q);
void ork__npu_gptq_plan_fini(struct ork__npu_gptq_plan *p);
/* ork__npu_gptq on a blocked H (k <= B: exactly ork__npu_gptq). */
int ork__npu_gptq_blocked(const float *w, uint32_t n, uint32_t k, const float *hb,
                          enum ork__npu_gptq_order order, int32_t lo, int32_t hi,
                          const float *scales, int8_t *q);

/* The default bound on the bytes of H (fp32, blocked) one calibration pass holds
 * (ork_npu_weights_opts.calib_mem_bytes 0; --npu-weights-calib-mem): the slots are grouped
 * into passes whose H fit it, each pass running the calibration text once (H of earlier
 * passes wait in a temporary file); a slot whose H alone is above it is refused with
 * ORK_ENOMEM naming it. Our choice: well inside the host memory of a 16 GB board next to a
 * 7B model (whose H at B = 512, about 1.6 GiB, then takes two passes). */
#define ORK__NPU_CALIB_MAX_H_BYTES (1024ull << 20)

struct ork_model;
struct ork_model_params;
struct ork__npu_exec;
struct pack_src;
struct ork_orkpack_coding;
struct ork_npu_weights_opts;

/* The calibration flow (--npu-weights-calib FILE): with m's executor placed as p says, run m
 * over the first p->npu_weights.calib_tokens tokens of the file (windows of the model's context
 * or 512 tokens, whichever is smaller), collecting the blocked H per NPU slot
 * (ork__npu_calib_observe; in as many passes over the text as the memory bound needs), then
 * destroy the executor and create it again with every slot's codes from ork__npu_gptq_blocked
 * on the grid and scales its setting gives (ork__npu_calib_requant). No-op without a
 * calibration file or an executor. */
int ork__npu_calibrate(struct ork_model *m, const char *path, const struct ork_model_params *p);

/* The executor hook: m rows of x (the op's whole input, row-major, as ork__npu_exec_run gets
 * it) for op at layer: when a calibration is collecting on ex, each of the op's NPU matrices'
 * input columns, rotated as the executor rotates them before quantising, are added to its
 * slot's blocked H (the slots of the pass running). Cheap no-op otherwise. op is an enum
 * ork__npu_op. */
void ork__npu_calib_observe(const struct ork__npu_exec *ex, int op, int32_t layer,
                            const float *x, int32_t m);

/* The quantisation hook: after ork__npu_quantize_slot put ps's codes q [n][k] and scales in
 * place, when a calibration is being applied and holds H for ps, the codes are replaced with
 * ork__npu_gptq_blocked's on the grid of c (c->grid: -L..L) at the same scales, from ps's
 * rows (rotated under o's ORK_NPU_WENC_ROTATE; row: scratch of one whole source row), and
 * c->rel_rmse is the new codes'. w4a8's codes take int4's whole [-8, 7]. 0 when there is
 * nothing to do. */
int ork__npu_calib_requant(const struct ork_npu_weights_opts *o, const struct pack_src *ps,
                           const char *name, float *row, int8_t *q, const float *scales,
                           struct ork_orkpack_coding *c);

/* What a pack built now should record of the calibration (for ork_orkpack_caps, once the
 * header has a field for it): while a calibration is being applied, a nonzero 32-bit identity
 * of it (FNV-1a over ORK__NPU_CALIB_ID, the damping and the token ids run), else 0
 * (round-to-nearest codes). */
uint32_t ork__npu_calib_pack_id(void);
/* The passes over the text the last calibration of the process ran (0: none yet; tests). */
uint32_t ork__npu_calib_last_passes(void);

/* Bump when gptq.c or calib.c changes the codes it computes from the same text. */
#define ORK__NPU_CALIB_ID 3u

#endif
