/* npu_priv.h -- private to the engine's NPU backend (src/engine/npu/): the executor plans and
 * the pack slots derived from them (plan.c), building and checking a model's .orkpack
 * (pack_build.c), devices and the placement of ops on them (placement.c), running ops and
 * the statistics (run.c). The rest of the engine sees ork__npu_exec_* (model/model_priv.h).
 *
 * The NPU backend: w8a8 matmuls of a model on libork (int8 activations with a per-row scale,
 * int8 weights with per-output-channel scales, int32 results dequantised on the CPU);
 * everything else stays on the CPU (model/forward.c). docs/npu-inference.md describes it. */
#ifndef ORK_ENGINE_NPU_PRIV_H
#define ORK_ENGINE_NPU_PRIV_H

#include "model/model_priv.h"
#include "rotate.h"

#include <ork-engine/orkpack.h>
#include <ork/npu.h>
#include <ork/twin.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define NPU_MAX_DOMAINS 16              /* RKNPU_MAX_IOMMU_DOMAIN_NUM (spec §13) */
#define NPU_DEFAULT_MAX_M 128           /* rows of the largest prefill plan (ork_model_params
                                         * .npu_max_m 0), for matrices it keeps at their K-slicing
                                         * for NPU_BASE_MAX_M rows (ork__npu_mat_rows;
                                         * docs/bench-log/2026-12-rows.md chose it) */
#define NPU_BASE_MAX_M 64               /* rows every K of the full-K envelope takes in one
                                         * M-tile (the cap at K = 3072..4096 is 64, spec §5.3) */
/* Row-sized programs (docs/npu-inference.md "Row-sized programs"): each resident matrix holds
 * one plan per row count of the set, powers of two from 1 up to max_m, plus max_m itself; a
 * run of M rows takes the smallest plan of >= M rows. 8 = 1, 2, 4, ..., 64 and one more for a
 * max_m that is not a power of two. */
#define NPU_MAX_PROGS 8
/* Distinct K of one model's NPU matrices, at most: dim, q_dim, ffn, the two halves of a K-split
 * O projection, with room to spare. */
#define NPU_MAX_ROTS 8
/* Decode copies by default (ork_model_params.npu_decode_kslice; docs/npu-inference.md "Decode
 * copies" gives the measurement that chose it). */
#define NPU_DEFAULT_DECODE_SINGLE false

/* ---- plans (plan.c) ----------------------------------------------------------------------- */

/* How one executor plan runs one op of the layer. */
struct npu_step {
    uint8_t n_slots;        /* pack tensors of the op: 1, or 2 = its input split in two along
                             * K by attention heads (the halves of npu_opmat.k_split) */
    bool fused;             /* the op's matrices stacked by rows into one NPU matrix (one
                             * submit); else one NPU matrix per model matrix */
    bool overlap;           /* the first half may be in flight while the caller computes the
                             * rest of its input (ork__npu_exec_o_submit / _o_finish) */
};

/* An executor plan: the steps of one layer, then the LM head. */
struct npu_plan {
    const char *name;       /* "fused", "per-matmul", "per-matmul-mc" */
    const char *summary;    /* for the placement report */
    uint32_t cores;         /* NPU cores per matmul: 0 = libork's budget picks per shape */
    bool pack;              /* weights may come from the .orkpack (else quantised in memory) */
    struct npu_step step[ORK__NPU_N_OPS];
};

/* The plan for executor flags (ORK_NPU_EXEC_PER_MATMUL: the per-matmul baseline;
 * ORK_NPU_EXEC_PER_MATMUL_MC: its 3-core variant). */
const struct npu_plan *ork__npu_plan_for(uint32_t flags);
/* The plan the .orkpack is laid out for. */
const struct npu_plan *ork__npu_plan_pack(void);
/* Rows of the largest prefill plan of a matrix of reduction k in an executor of max_m rows:
 * max_m when its weights' K-slicing for max_m rows is the one for NPU_BASE_MAX_M rows (so that
 * decode and the smaller plans keep their K-slices: libork slices K for the weights' max_m),
 * else NPU_BASE_MAX_M (docs/npu-inference.md "Plans above 64 rows"). */
uint32_t ork__npu_mat_rows(uint32_t max_m, uint32_t k);
/* Pack slots per layer, and the first slot of op within a layer (the LM head: slot 0 of the
 * "layer" n_layers). */
uint32_t ork__npu_plan_slots_per_layer(const struct npu_plan *p);
uint32_t ork__npu_plan_op_slot(const struct npu_plan *p, enum ork__npu_op op);
/* Slots of the whole model: n_layers * per layer + 1. */
uint32_t ork__npu_plan_n_slots(const struct npu_plan *p, const struct ork_model *m);
/* "npu qkv", ...: the op's name on the trace timeline. */
const char *ork__npu_op_trace_name(enum ork__npu_op op);

/* What one pack slot holds: the stacked rows of 1..3 model matrices, columns [c0, c0 + k) of
 * each, for op `op` at `layer`; `half` is 1 for the second of a K-split op. ns = 0: no such
 * tensor for this model. */
struct pack_src {
    int ns;
    const struct ork_mat *src[3];
    uint32_t c0, k, n;
    enum ork__npu_op op;
    int32_t layer;
    int32_t n_layers;                   /* the model's (negative layers of --npu-weights-int8) */
    int half;
};

/* Pack slot t of model m under plan p into *ps, and its name (blk.<l>.<tensor>[.a|.b]). */
void ork__npu_pack_source(const struct npu_plan *p, const struct ork_model *m, uint32_t t,
                     struct pack_src *ps, char *name, size_t cap);
/* Tensors the pack of m holds (slots with a tensor). */
uint32_t ork__npu_pack_n_tensors(const struct npu_plan *p, const struct ork_model *m);
/* Largest rows x cols, rows, cols and whole source row over the slots (scratch sizing). */
void ork__npu_pack_max_dims(const struct npu_plan *p, const struct ork_model *m, size_t *max_q,
                       size_t *max_n, size_t *max_k, size_t *max_row);

/* ---- the weights' encoding (weights_grid.c) ---------------------------------------------- */

/* The grid a tensor's coding records (ork_orkpack_coding.grid): int8's codes [-127, 127]
 * (ork_npu_quantize_weights_i8), and w4a8's int4 [-8, 7] (w4a8_codes.c) recorded as the
 * bound 8 (no dcomp grid is 8: ork_dcomp_grids). */
#define ORK__NPU_INT8_GRID 127u
#define ORK__NPU_W4A8_GRID 8u

/* 0, or ORK_EINVAL naming what is wrong with the setting. */
int ork__npu_wenc_check(const struct ork_npu_weights_opts *o);
/* 0, or ORK_EUNSUPPORTED naming the capability when o asks for DCOMP streams and npu has not
 * confirmed ORK_NPU_FORM_DCOMP (`ork selftest --confirm-forms`, --npu-caps). */
int ork__npu_wenc_device_check(const struct ork_npu_weights_opts *o, struct ork_npu *npu);
/* libork's ork_npu_weights_desc.encoding for the setting (o NULL: int8). */
uint32_t ork__npu_wenc_libork(const struct ork_npu_weights_opts *o);
/* The setting as a pack records it (caps->w_*). */
void ork__npu_wenc_caps(const struct ork_npu_weights_opts *o, struct ork_orkpack_caps *caps);
/* "int8", "dcomp:31", "dcomp (per tensor, rel-RMSE <= 0.03)". */
void ork__npu_wenc_name(const struct ork_npu_weights_opts *o, char *buf, size_t cap);
/* Quantise pack slot ps (named name: columns [c0, c0 + k) of the rows of its sources, stacked)
 * per output channel onto its grid under o (NULL: int8), each row rotated first under
 * ORK_NPU_WENC_ROTATE, into q [n][k] and scales [n]; row holds one whole source row; *c = the
 * libork encoding, the grid and its rel-RMSE against the (rotated) rows. */
int ork__npu_quantize_slot(const struct ork_npu_weights_opts *o, const struct pack_src *ps,
                           const char *name, float *row, int8_t *q, float *scales,
                           struct ork_orkpack_coding *c);

/* ---- the tensors kept int8 (weights_keep.c, --npu-weights-int8 SPEC) ------------------- */

/* Layer indices of a SPEC are refused from this magnitude on (no model has so many). */
#define ORK__NPU_KEEP_MAX_LAYERS 4096u
/* 0, or ORK_EINVAL naming the item at fault in o->int8_tensors (syntax; a SPEC with the int8
 * setting, where it means nothing). */
int ork__npu_keep_check(const struct ork_npu_weights_opts *o);
/* 0, or ORK_EINVAL naming an item whose layers lie outside 0..n_layers-1. */
int ork__npu_keep_check_layers(const struct ork_npu_weights_opts *o, int32_t n_layers);
/* Whether slot ps keeps int8 codes under o (a checked SPEC; false without one or for int8). */
bool ork__npu_keep_int8(const struct ork_npu_weights_opts *o, const struct pack_src *ps);
/* The SPEC's identity for a pack (ork_orkpack_caps.w_int8): FNV-1a 32 of it as written, never
 * 0; 0 without one. */
uint32_t ork__npu_keep_id(const struct ork_npu_weights_opts *o);

/* One row x (k values) onto int4 [-8, 7] with one scale (w4a8_codes.c; clip: the clipped
 * scale with the least squared error): q [k], *scale. ORK_EINVAL for a value not finite. */
int ork__npu_w4a8_quantize_row(const float *x, uint32_t k, bool clip, int8_t *q, float *scale);

/* Bits per weight and grids of a model's NPU weights, for the load / pack report. */
struct npu_wstats {
    uint64_t weights;                   /* k x n summed */
    uint64_t n_scales;                  /* n summed (one fp32 scale per output channel) */
    uint64_t stored_bytes, raw_bytes;   /* device bytes held, and as raw tiled int8 */
    uint32_t n_tensors, n_compressed;
    uint32_t grid_count[ORK__NPU_N_OPS][5]; /* per tensor class, per grid of ork_dcomp_grids */
    uint32_t int8_count[ORK__NPU_N_OPS];    /* per tensor class, the int8 ones (w4a8 report) */
};
void ork__npu_wstats_add(struct npu_wstats *s, enum ork__npu_op op, uint32_t grid,
                         const struct ork_npu_weights *w, uint32_t n, uint32_t k);
void ork__npu_wstats_log(const struct npu_wstats *s, const struct ork_npu_weights_opts *o,
                         bool show);

/* ---- pack (pack_build.c) ------------------------------------------------------------------ */

/* A progress bar on stderr (show: draw it; *last: the percentage last drawn, -1 first). */
void ork__npu_progress(bool show, const char *what, uint64_t done, uint64_t total, int *last);
/* A status line beside the progress bar (the pack being built, the placement report): through
 * the log at NOTE level (on stderr by default), unless quiet, like the bar. */
void ork__npu_status(bool show, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Open the pack of model m (at pack_path, or beside path), building it when it is missing,
 * stale, foreign, of another version or corrupt (the reason is logged and put in *found). */
int ork__npu_pack_ensure(const struct ork_model *m, const char *path, const char *pack_path,
                    uint32_t flags, struct ork_npu *npu, uint32_t max_m,
                    const struct ork_npu_weights_opts *wo,
                    struct ork_orkpack **out, enum ork_orkpack_problem *found);

/* ---- the executor (placement.c, run.c) ---------------------------------------------------- */

/* One NPU matrix (a pack tensor, or in the baseline a row range of one) with its plans:
 * prog[i] runs up to ex->prog_rows[i] rows (ascending; prog[0] is M = 1, the decode plan, and
 * prog[ex->n_prog - 1] is M = max_m, the prefill plan). The M = 1 and M = max_m plans of every
 * matrix are made first, in load order (their buffers, hence their programs, are those of an
 * executor without the others); the sizes between come after every matrix is placed, and a
 * size that did not fit its domain is NULL (a run takes the next larger plan). */
struct npu_mat {
    struct ork_npu_weights *w;
    struct ork_npu_matmul *prog[NPU_MAX_PROGS];
    struct ork_npu_matmul_info info[NPU_MAX_PROGS];
    uint32_t n, k;
    int dev;                            /* device (domain) index */
    uint32_t cores;                     /* the plans' cores (0: libork's budget picks) */
    uint32_t c0;                        /* first input column (the second half: its K offset) */
    const float *scales;                /* (n) */
    uint32_t max_m;                     /* rows of its largest plan (ork__npu_mat_rows) */
    uint32_t grid;                      /* the codes' grid L (127: int8) */
    bool kept_int8;                     /* int8 under a coarser setting (--npu-weights-int8) */
    const struct ork__npu_rot *rot;     /* the input's rotation (ex->rot[]), NULL: none */
    /* The decode copy (docs/npu-inference.md "Decode copies"): the same int8 rows and scales
     * sliced for M = 1 (one K-slice per 8192 of K, spec §5.1) when w has more K-slices, with
     * plans dprog[i] of ex->prog_rows[i] rows for i < n_dprog: M = 1, and under
     * ORK_NPU_FORM_WIDE_K the sizes up to the wide-K M-tile cap. NULL: none. */
    struct ork_npu_weights *dw;
    struct ork_npu_matmul *dprog[NPU_MAX_PROGS];
    struct ork_npu_matmul_info dinfo[NPU_MAX_PROGS];
    uint32_t n_dprog;
};

/* One op of one layer: 1..3 matrices whose outputs are split into parts (q, k, v). */
struct npu_opmat {
    int n_mats;
    struct npu_mat mat[3];
    int n_parts;
    uint32_t part_n[3];                 /* output columns of each part (sum = total rows) */
    bool k_split;                       /* mat[0], mat[1] = the op's input columns split in two
                                         * (the O projection by heads): y = sum of both */
    bool on_npu;
};

struct ork__npu_exec {
    const struct npu_plan *plan;
    int n_dev;
    struct ork_npu *dev[NPU_MAX_DOMAINS];
    uint64_t dev_bytes[NPU_MAX_DOMAINS];
    uint32_t max_m;
    uint32_t n_prog;                    /* plan sizes per matrix (1 when max_m == 1) */
    uint32_t prog_rows[NPU_MAX_PROGS];  /* rows of each size, ascending; the last is max_m */
    uint32_t flags;
    bool decode_single;                 /* make decode copies (ORK_NPU_DECODE_KSLICE_SINGLE) */
    struct ork_npu_weights_opts wopts;  /* the weights' setting (the model's params) */
    char *wkeep_spec;                   /* its int8_tensors, the executor's copy (or NULL) */
    struct ork_orkpack_coding wcur;     /* coding of the tensor being placed (make_mat) */
    bool wkept;                         /* ... and whether --npu-weights-int8 keeps it int8 */
    int32_t n_layers;
    struct npu_opmat *ops;              /* (n_layers * ORK__OPS_PER_LAYER + 1): per layer its
                                         * ops in plan order; then the LM head */
    /* the rotations of K (ORK_NPU_WENC_ROTATE), one per distinct K of the placed matrices */
    struct ork__npu_rot rot[NPU_MAX_ROTS];
    int n_rot;
    /* scratch, sized at load for the largest op */
    float *xr;                          /* (max_m, max_k): rotated input rows (rotation only) */
    int8_t *a8;                         /* (max_m, max_k) */
    float *a_scales;                    /* (2, max_m): double-buffered for the prefill pipeline */
    int32_t *c32;                       /* (2, max_m, max_n) */
    size_t c32_half;                    /* elements of one c32 buffer */
    pthread_mutex_t lock;               /* one forward at a time (plans are single-user) */
    struct ork_npu_exec_stats st;
    int64_t batch_t0;
    double batch_npu_ms;
    int last_dev;                       /* domain of the last submit */
    uint64_t n_domain_switches;
    /* modelled clocks of the devices at load or the last stats reset (sim only) */
    struct ork_npu_model_time model_base[NPU_MAX_DOMAINS];
    uint64_t switches_base;
    bool is_sim;                        /* the devices are simulators (modelled clocks) */
    /* the O projection's first half in flight (ork__npu_exec_o_submit .. _o_finish) */
    struct ork__twin_rec *twin;         /* the model's board twin (borrowed), or NULL */
    const char *tw_label;               /* the op being run, for the twin's NPU ops */
    struct ork_npu_job *o_job;
    int64_t o_sub_ns;                   /* wall clock when the submit returned */
    int64_t o_model0_ns;                /* its device's model clock before the submit */
};

/* Log the bits per weight and grids of the executor's resident weights (weights_grid.c). */
void ork__npu_wstats_exec(const struct ork__npu_exec *ex, bool show);

static inline struct npu_opmat *npu_op_at(struct ork__npu_exec *ex, enum ork__npu_op op,
                                          int32_t layer)
{
    if (op == ORK__NPU_LM_HEAD)
        return &ex->ops[(size_t)ex->n_layers * ORK__OPS_PER_LAYER];
    return &ex->ops[(size_t)layer * ORK__OPS_PER_LAYER + (size_t)op];
}

/* The plan of mt for a run of m rows (1 <= m <= max_m): the smallest made with >= m rows (on
 * the decode copy when it has that size), its size index in *idx and its info in *info
 * (run.c). */
struct ork_npu_matmul *ork__npu_mat_plan(const struct ork__npu_exec *ex, const struct npu_mat *mt,
                                         uint32_t m, uint32_t *idx,
                                         const struct ork_npu_matmul_info **info);

/* Device bytes of a plan (its A, C and program buffers, page-rounded as libork's estimate
 * rounds them) and, in *regcmd when not NULL, of its regcmd programs (placement.c). */
uint64_t ork__npu_plan_bytes(const struct ork_npu_matmul_info *in, uint64_t *regcmd);

/* Make the decode copies of the placed matrices (decode_copy.c; after every other plan, so
 * that theirs sit where an executor without copies puts them). */
int ork__npu_make_decode_copies(struct ork__npu_exec *ex, const struct ork_model *m);

/* Take the devices' modelled clocks as the zero of the statistics (run.c). */
void ork__npu_model_base_reset(struct ork__npu_exec *ex);

#endif
