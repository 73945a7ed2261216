/* ork-engine/engine.h -- the model and session API: everything the CLI and the server need to
 * load a GGUF model, evaluate tokens, and generate text.
 *
 * Objects and ownership:
 *   struct ork_model    the GGUF mapping, the hyperparameters, the weight views (borrowed from the
 *                       mapping) and the tokenizer. Read-only after load; one model may back any
 *                       number of sessions (each session used by one thread at a time).
 *   struct ork_session  one conversation: KV cache, thread pool, scratch arena and the list of
 *                       tokens the cache holds. Everything is allocated at create time, so
 *                       evaluating and generating allocate nothing per token.
 *
 * Supported architectures: llama, qwen2 (q/k/v biases, NEOX RoPE), qwen3 (per-head q/k RMSNorm,
 * NEOX RoPE, head_dim from attention.key_length): the descriptors of ork-engine/arch.h. See
 * docs/engine.md.
 *
 * Errors follow ork/error.h: negative ORK_E* codes with a message naming what was wrong
 * (ork_error_message()). ORK_ECONTEXT means the KV cache is full. */
#ifndef ORK_ENGINE_ENGINE_H
#define ORK_ENGINE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ork-engine/arch.h>
#include <ork-engine/gguf.h>
#include <ork/twin.h>
#include <ork-engine/sampler.h>
#include <ork-engine/tokenizer.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- model ------------------------------------------------------------------------------- */

/* Hyperparameters, read from "<arch>.*" metadata and checked against the tensors. */
struct ork_model_config {
    enum ork_arch arch;
    char arch_name[16];         /* general.architecture */
    int32_t dim;                /* embedding_length */
    int32_t n_layers;           /* block_count */
    int32_t ffn_dim;            /* feed_forward_length */
    int32_t n_heads;            /* attention.head_count */
    int32_t n_kv_heads;         /* attention.head_count_kv (default n_heads) */
    int32_t head_dim;           /* attention.key_length (default dim / n_heads) */
    int32_t n_rot;              /* rope.dimension_count (default head_dim) */
    int32_t n_vocab;            /* rows of token_embd */
    int32_t n_ctx_train;        /* context_length */
    float rope_base;            /* rope.freq_base (default 10000) */
    float rope_freq_scale;      /* 1 / rope.scaling.factor for linear scaling, else 1 */
    bool rope_freq_factors;     /* rope_freqs.weight present (Llama 3.1+ per-pair divisors) */
    float rms_eps;              /* attention.layer_norm_rms_epsilon */
    bool tied_output;           /* no output.weight: the LM head is token_embd */
    /* Set from the architecture's descriptor (ork-engine/arch.h) and its keys; neutral values
     * (1, 0) for the llama family. */
    float embd_scale;           /* token embedding multiplier (Gemma: sqrt(dim)) */
    float attn_scale;           /* attention score scale (1/sqrt(head_dim) unless the arch says) */
    float attn_softcap;         /* cap of cap*tanh(s/cap) on attention scores; 0: none */
    float final_softcap;        /* the same on the logits; 0: none */
    int32_t swa_window;         /* attention.sliding_window: keys a local layer sees; 0: none */
    int32_t swa_period;         /* attention.sliding_window_pattern: l local iff l%p < p-1 */
    float rope_base_swa;        /* RoPE base of local layers */
    float rope_freq_scale_swa;  /* RoPE position scale of local layers */
    float rope_attn_factor;     /* rope.scaling.attn_factor (LongRoPE cos/sin multiplier), 1 */
    int32_t n_ctx_orig;         /* rope.scaling.original_context_length (LongRoPE choice) */
    int32_t n_expert;           /* expert_count (MoE), else 0 */
    int32_t n_expert_used;      /* expert_used_count */
    int32_t expert_ffn_dim;     /* expert_feed_forward_length */
};

/* Whether layer l of c attends through a sliding window (c->swa_window > 0 and the pattern
 * marks it local). */
bool ork_model_layer_swa(const struct ork_model_config *c, int32_t l);

struct ork_model;

/* How the model file is put in memory (docs/engine.md "Loading"). */
enum ork_model_load {
    ORK_LOAD_AUTO = 0,          /* READ when the matmuls run on the CPU (device NULL or "cpu"),
                                 * MMAP otherwise (the NPU reads its own packed copy) */
    ORK_LOAD_MMAP = 1,          /* map the file (fast start, pages shared with the page cache) */
    ORK_LOAD_READ = 2,          /* read it into private memory on transparent huge pages
                                 * (faster decode on the CPU; the copy is the model's size) */
};

/* How the NPU's int8 weight codes are made and stored (docs/dcomp.md "The executor"; CLI
 * --npu-weights int8|dcomp|dcomp:L|w4a8). Zero-initialised = int8, the per-channel +-127 codes. */
enum ork_npu_wenc {
    ORK_NPU_WENC_INT8 = 0,      /* per output channel max|w| / 127, codes in [-127, 127], raw */
    ORK_NPU_WENC_DCOMP = 1,     /* per tensor a grid [-L, L] (ork/dcomp.h), the codes stored as
                                 * streams of the CNA weight decompressor: needs the device's
                                 * ORK_NPU_FORM_DCOMP confirmed (the simulator has it) */
    ORK_NPU_WENC_W4A8 = 2,      /* per output channel int4 codes in [-8, 7], scale max(P / 7,
                                 * N / 8) of the row's largest positive value P and negative
                                 * magnitude N (src/engine/npu/w4a8_codes.c), stored as int4
                                 * and run by the int4 MAC (ORK_NPU_WEIGHTS_W4A8,
                                 * npu-weight-decompression.md §2): needs the device's
                                 * ORK_NPU_FORM_W4A8 confirmed (the simulator has it) */
};
enum ork_npu_wenc_flags {
    ORK_NPU_WENC_RAW_CODES = 1u << 0,   /* dcomp, w4a8: the same codes stored raw int8 (no
                                         * decompressor or int4 MAC needed): the accuracy of a
                                         * grid alone, and the reference a compressed or int4
                                         * run must equal */
    ORK_NPU_WENC_CLIP = 1u << 1,        /* dcomp: per channel the clipping of max|w| with the
                                         * least squared error (ORK_DCOMP_QUANT_CLIP; 20 trial
                                         * scales a row) instead of max-abs scales: 2 % less
                                         * error at L = 31 on stories260K, docs/dcomp.md;
                                         * also w4a8 */
    ORK_NPU_WENC_ROTATE = 1u << 2,      /* any encoding: an orthonormal rotation R of K
                                         * (Walsh-Hadamard x DCT-II, src/engine/npu/rotate.c)
                                         * applied to every NPU matrix's weights before their
                                         * quantisation (W R) and to its input rows on the CPU
                                         * before theirs (R^T x): the same products, outliers
                                         * spread over K (docs/w4a8.md "Engine") */
    ORK_NPU_WENC_CALIBRATED = 1u << 3,  /* set by the load on the setting its calibrated codes
                                         * are made and packed under (--npu-weights-calib,
                                         * src/engine/npu/calib.c): a pack records it with the
                                         * flags, so packs of calibrated and of round-to-nearest
                                         * codes are other settings to each other (rebuilt);
                                         * callers leave it 0 */
};
/* dcomp's default bound on a tensor's rel-RMSE against its source weights (docs/dcomp.md
 * "Accuracy": chosen from the fixtures' perplexity per grid). */
#define ORK_NPU_WENC_DEFAULT_MAX_ERR 0.03
struct ork_npu_weights_opts {
    uint32_t encoding;          /* enum ork_npu_wenc */
    uint32_t levels;            /* dcomp: the grid L of every tensor (7, 15, 31, 63 or 127);
                                 * 0 = per tensor the coarsest grid whose rel-RMSE is within
                                 * max_rel_rmse (the finest when none is) */
    double max_rel_rmse;        /* dcomp with levels 0: the bound; 0 = the default above */
    uint32_t flags;             /* ORK_NPU_WENC_RAW_CODES, ORK_NPU_WENC_CLIP,
                                 * ORK_NPU_WENC_ROTATE */
    bool force;                 /* dcomp: keep DCOMP streams where the device's decompressor
                                 * is known to be no faster than a core's DRAM share of raw
                                 * int8 (by default the load falls back to int8 for every
                                 * tensor and says why: src/engine/npu/weights_policy.c,
                                 * docs/dcomp.md "Fallback"); CLI --npu-weights-force */
    const char *calib_path;     /* a calibration text (CLI --npu-weights-calib FILE): at load
                                 * the model runs over it on the NPU and every NPU tensor's
                                 * codes are chosen again, at the same scales and grid, to
                                 * compensate each column's rounding error on the inputs seen
                                 * (docs/dcomp.md "Calibrated quantisation"); NULL: none */
    uint32_t calib_tokens;      /* tokens of it to run; 0: ORK_NPU_WENC_DEFAULT_CALIB_TOKENS */
    uint64_t calib_mem_bytes;   /* bound on the bytes of input statistics one pass over the
                                 * text holds (more passes when they do not fit); 0: 1 GiB;
                                 * CLI --npu-weights-calib-mem MIB */
    const char *int8_tensors;   /* dcomp, w4a8: the tensors kept on per-channel int8 codes, a
                                 * list such as "output,down:0..1,qkv:-1" of tensor classes
                                 * (qkv, o, gate_up, down, output, all) with optional layers
                                 * L or A..B (negative from the last); CLI --npu-weights-int8
                                 * (docs/w4a8.md "Mixed precision"; the load keeps a
                                 * copy); NULL: none */
};
#define ORK_NPU_WENC_DEFAULT_CALIB_TOKENS 2048

struct ork_model_params {
    bool no_tokenizer;          /* skip loading the tokenizer (evaluation from ids only) */
    int32_t load;               /* enum ork_model_load */
    bool no_repack;             /* keep the GGUF row layout; by default a model read into
                                 * memory for the CPU has its Q8_0 / Q4_0 / Q4_K matrices
                                 * interleaved by 16 rows when the CPU's kernels read that
                                 * faster (x86-64 AVX-512 VNNI; docs/engine.md "Loading") */
    /* Where the matmuls run (docs/npu-inference.md): NULL or "cpu" = the CPU; "npu" = the
     * board's NPU (error without one); "sim" = the NPU simulator; "auto" = the NPU when one
     * exists, else the CPU. Everything but the matmuls stays on the CPU. */
    const char *device;
    int32_t sim_timing;         /* "sim" only: enum ork_sim_timing (0 instant, 1 paced, 2 timing
                                 * only, ...) */
    int32_t npu_max_m;          /* rows of the largest NPU plan (prefill; 0: 128); a matrix
                                 * whose K-slicing for them would be finer than for 64 keeps
                                 * 64 (docs/npu-inference.md "Plans above 64 rows") */
    uint32_t npu_flags;         /* ORK_NPU_EXEC_* */
    const char *npu_pack_path;  /* .orkpack to use; NULL: MODEL.orkpack beside the model */
    uint64_t npu_domain_bytes;  /* bytes per IOMMU domain (weights and plans, split at layer
                                 * boundaries); 0: 3900 MiB, spec §13. Smaller values exercise
                                 * multi-domain placement on small models (the simulator gets
                                 * the same limit). */
    uint32_t npu_prog_rows;     /* row-sized plans per resident matrix (docs/npu-inference.md
                                 * "Row-sized programs"): bit i set = a plan of 2^i rows (M = 1
                                 * and M = npu_max_m are always made); 0 = every power of two
                                 * below npu_max_m */
    const char *npu_capabilities;   /* capability record for libork (ork_npu_opts.capabilities:
                                     * the submit forms a board confirmed, `ork selftest
                                     * --confirm-forms`); NULL: none */
    uint32_t npu_wait_ms;       /* host bound on one NPU job (ork_npu_opts.wait_timeout_ms,
                                 * docs/npu.md "Bounded waits"); 0: libork's default */
    bool npu_blocking_submits;  /* submit every job blocking, bounded only by the kernel's
                                 * own timeout (ork_npu_opts.blocking_submits) */
    int32_t npu_spin_us;        /* libork's per-core workers poll this long between runs
                                 * before sleeping (ork_npu_opts.worker_spin_us; the twin
                                 * charges it, docs/twin.md "Spinning workers"); 0:
                                 * ORK_NPU_WORKER_SPIN_US_DEFAULT, < 0: never spin */
    struct ork_npu_weights_opts npu_weights; /* the weights' grid and storage (int8 default) */
    double sim_dcomp_gbps;      /* "sim" and its twin: the weight decompressor's int8 output per
                                 * core in GB/s (ork_sim_opts.dcomp_gbps, the twin constant
                                 * npu_dcomp_gbps); 0: the twin table's (or calibration's) */
    int32_t npu_decode_kslice;  /* enum ork_npu_decode_kslice: decode on the prefill weights'
                                 * K-slicing or on a decode-only copy of one K-slice
                                 * (docs/npu-inference.md "Decode copies") */
    /* The board twin (docs/twin.md "In the engine"): every forward batch recorded as one twin
     * step on the board's model clock. Always on with device "sim"; `twin` turns it on for
     * the CPU (every phase, the matmuls included, charged on the A76 cores). */
    bool twin;
    const char *twin_calibration;   /* twin constants file (ork_twin_calib_load); NULL: the
                                     * defaults of include/ork/twin.h */
    uint32_t twin_flags;            /* ORK_TWIN_REC_* */
};

/* How decode (M = 1) runs matrices whose K the prefill plans slice more finely than M = 1
 * needs (M = 1 takes any K <= 8192 in one program, spec §5.1; prefill weights are sliced for
 * npu_max_m rows, e.g. Qwen3-1.7B's down projection, K = 6144, in two). */
enum ork_npu_decode_kslice {
    ORK_NPU_DECODE_KSLICE_DEFAULT = 0,  /* the measured default (docs/npu-inference.md) */
    ORK_NPU_DECODE_KSLICE_SHARED,       /* decode runs on the prefill weights' K-slices */
    ORK_NPU_DECODE_KSLICE_SINGLE,       /* a decode-only copy, one K-slice per 8192 of K, at
                                         * the copy's device memory */
};

enum ork_twin_rec_flags {
    /* Charge the open runtime's host cost per submit (host_submit_floor_ns, less the launch the
     * NPU task pays) in place of ork's own ioctls and cache syncs: for reproducing the seed's
     * per-matmul baselines (anchors §2, §4), not a model of ork. */
    ORK_TWIN_REC_HOST_FLOOR = 1u << 0,
};

enum ork_npu_exec_flags {
    ORK_NPU_EXEC_NO_PACK = 1u << 0,     /* quantise in memory; never read or write a pack */
    ORK_NPU_EXEC_REBUILD_PACK = 1u << 1,/* rebuild the pack even if it is valid */
    ORK_NPU_EXEC_PER_MATMUL = 1u << 2,  /* baseline executor: one single-core synchronous
                                         * submit per model matmul (no fusion, no core split) */
    ORK_NPU_EXEC_QUIET = 1u << 3,       /* no progress bar or placement report on stderr */
    ORK_NPU_EXEC_PER_MATMUL_MC = 1u << 4, /* baseline executor, 3-core variant: one synchronous
                                         * submit per model matmul, its columns split over the
                                         * three cores (the seed's ORK_DECODE_MC, anchors §3.6) */
    ORK_NPU_EXEC_SPLIT_O = 1u << 5,     /* fused executor with the O projection split by heads,
                                         * the first half overlapped with the rest of attention
                                         * (one more submit per layer; no pack) */
};

/* Counters of the NPU executor since load (or the last reset). Modelled times come from the
 * simulator's own model clock (ork_npu_model_time, docs/sim.md); they are 0 on hardware. */
struct ork_npu_exec_stats {
    char backend[16];           /* "sim", "rknpu", "rocket" */
    int32_t n_domains;          /* IOMMU domains the resident weights span */
    uint64_t resident_bytes;    /* device bytes of the packed weights */
    int32_t n_npu_mats, n_cpu_mats; /* model matrices placed on the NPU / left on the CPU */
    uint64_t n_forward;         /* forward batches */
    uint64_t n_rows;            /* token rows evaluated */
    uint64_t n_submits;         /* NPU submits */
    double wall_ms;             /* wall time inside forward batches */
    double npu_wall_ms;         /* wall time inside NPU runs (quantise, submit, dequantise) */
    double model_npu_ms;        /* modelled NPU time of every submit (critical path) */
    double model_core_busy_ms[3]; /* modelled busy time per NPU core */
    double sect_ms[6];          /* wall per section: qkv, o, gate_up, down, lm_head, cpu rest */
    /* Decode overlap (CPU work while an asynchronous submit is in flight). Modelled time per
     * batch = model_npu_ms + (wall_ms - npu_wall_ms) - cpu_overlap_ms. */
    uint64_t n_overlapped;      /* asynchronous submits with CPU work of the forward behind them */
    double cpu_inflight_ms;     /* CPU wall time (outside NPU runs) while they were in flight */
    double cpu_overlap_ms;      /* the part of it hidden: per submit, up to its modelled duration
                                 * (sim; 0 on hardware, which has no modelled clock) */
    /* Row-sized programs (docs/npu-inference.md): the plan sizes every resident matrix holds
     * (rows, ascending), the matrix runs taken by each size, the device bytes of each size's
     * plans summed over the matrices (A, C and program buffers, page-rounded) and of their
     * regcmd programs alone, and the host wall time making the sizes between 1 and max_m. */
    uint32_t n_prog_sizes;
    uint32_t prog_rows[8];
    uint64_t prog_runs[8];
    uint64_t prog_bytes[8];
    uint64_t prog_regcmd_bytes[8];
    uint32_t prog_missing;      /* plans of those sizes that did not fit their domain */
    double prog_extra_load_ms;
    /* Decode copies (npu_decode_kslice single): matrices holding one, their device bytes
     * (weights and plans), the host wall time making them, and the runs they took */
    uint32_t n_decode_copies;
    uint64_t decode_copy_bytes;
    double decode_copy_load_ms;
    uint64_t decode_copy_runs;
};
/* 0 and the counters, or ORK_ENOENT when the model runs on the CPU. */
int ork_model_npu_stats(const struct ork_model *m, struct ork_npu_exec_stats *out);
void ork_model_npu_stats_reset(struct ork_model *m);
/* "cpu", or the NPU backend's name. */
const char *ork_model_device(const struct ork_model *m);

/* The board twin's totals since load or the last reset: every recorded forward batch (one twin
 * step each) and every charged sampling, run back to back on the model clock. Deterministic:
 * they depend on the shapes, the executor and the constants, never on the host's threads or
 * speed. */
struct ork_model_twin_stats {
    uint64_t n_steps;               /* forward batches recorded */
    uint64_t n_rows;                /* token rows of those batches */
    uint64_t n_samples;             /* samplings charged (ork_model_twin_sample) */
    uint32_t cpu_cores, npu_cores;  /* the twin's resources */
    struct ork_twin_result total;   /* end_ns = modelled time; per-phase, per-core, DRAM, hidden */
};
/* 0 and the totals, or ORK_ENOENT when the model has no twin. */
int ork_model_twin_stats(const struct ork_model *m, struct ork_model_twin_stats *out);
void ork_model_twin_stats_reset(struct ork_model *m);
/* Charge one sampling of the vocabulary (top_k: 1 greedy, 0 the full distribution, else the
 * k kept) as a step of its own after the last batch. No-op (0) without a twin. */
int ork_model_twin_sample(struct ork_model *m, uint32_t top_k);
/* Write the modelled timeline of the next max_steps steps (batches and samplings) to path as
 * one Perfetto trace, steps back to back on the model clock; ork_model_twin_trace_end (or
 * freeing the model) closes it. ORK_ENOENT without a twin, ORK_EIO naming the file. */
int ork_model_twin_trace_begin(struct ork_model *m, const char *path, uint32_t max_steps);
int ork_model_twin_trace_end(struct ork_model *m);
/* How the model file was put in memory: "read" (ORK_LOAD_READ, or AUTO's choice) or "mmap". */
const char *ork_model_load_name(const struct ork_model *m);
/* Matrices interleaved for the CPU kernels at load (0 with no_repack, a mapped file, the NPU,
 * or a CPU without the interleaved kernels). */
int32_t ork_model_n_interleaved(const struct ork_model *m);
void ork_model_params_default(struct ork_model_params *p);

/* Open, validate and bind a model. Errors: ORK_EIO / ORK_EFORMAT from the GGUF reader,
 * ORK_EUNSUPPORTED (architecture or tensor type; the message names it), ORK_EFORMAT (missing
 * tensor or wrong shape; the message names the tensor), ORK_ENOMEM. p may be NULL. */
int ork_model_load(const char *path, const struct ork_model_params *p, struct ork_model **out);
void ork_model_free(struct ork_model *m);

const struct ork_model_config *ork_model_config(const struct ork_model *m);
/* NULL when loaded with no_tokenizer. */
const struct ork_tokenizer *ork_model_tokenizer(const struct ork_model *m);
const struct ork_gguf *ork_model_gguf(const struct ork_model *m);
/* The model's architecture descriptor (ork-engine/arch.h). */
const struct ork_arch_desc *ork_model_arch(const struct ork_model *m);
/* Human-readable one-line summary ("llama, 5 layers, dim 64, ..."), into buf. */
int ork_model_describe(const struct ork_model *m, char *buf, size_t cap);

/* ---- session ----------------------------------------------------------------------------- */

enum ork_kv_type {
    ORK_KV_F32 = 0,             /* exact (default) */
    ORK_KV_F16 = 1,             /* half the memory; logprobs differ by up to ~2e-2 */
};

struct ork_session_params {
    int32_t ctx_size;           /* KV cache length in tokens; 0: min(context_length, 4096) */
    int32_t n_batch;            /* tokens per forward batch during prefill; 0: 256 */
    int32_t n_threads;          /* <= 0: online CPUs */
    enum ork_kv_type kv_type;   /* default ORK_KV_F32 */
    int32_t spin_us;            /* thread pool: poll this long for the next job before sleeping
                                 * (ork_pool_opts.spin_us); < 0: the pool's default */
    bool act_quant;             /* round activations the way GGUF reference engines do before
                                 * each matmul (Q8_0 blocks for Q8_0/Q4_0 weights, F16/BF16 for
                                 * 16-bit weights): logits of quantized models then match
                                 * llama.cpp's closely, and the integer dot-product kernels
                                 * run. Default true; false keeps f32 activations. */
};
void ork_session_params_default(struct ork_session_params *p);

struct ork_session;

/* p may be NULL (defaults). The session borrows the model (it must outlive the session). */
int ork_session_create(struct ork_model *m, const struct ork_session_params *p,
                       struct ork_session **out);
void ork_session_free(struct ork_session *s);
/* MoE models: bytes of expert weights the session's forward passes have read so far (only the
 * selected experts' matrices are read; 0 for dense models). */
uint64_t ork_session_expert_bytes(const struct ork_session *s);

const struct ork_model *ork_session_model(const struct ork_session *s);
int32_t ork_session_ctx_size(const struct ork_session *s);
int32_t ork_session_n_batch(const struct ork_session *s);
/* Tokens currently held by the KV cache (positions 0 .. n_past-1), in order. */
int32_t ork_session_n_past(const struct ork_session *s);
const int32_t *ork_session_tokens(const struct ork_session *s);
/* Forget everything after the first n tokens (n <= n_past). reset == truncate(0). */
int ork_session_truncate(struct ork_session *s, int32_t n);
void ork_session_reset(struct ork_session *s);
/* Writes the KV cache memory of positions [0, n_pos) past the cached tokens once (zeros), so
 * its pages are mapped now rather than by the decode steps that first reach them: one page
 * fault per 2 MiB (or 4 KiB) page, ~1-1.7 ms each on a 2 MiB page (kv.c). Cached tokens are
 * kept. `ork bench` calls it before timing, so that tests measure steady decoding. Errors:
 * ORK_EINVAL for n_pos outside 0 .. ctx_size. */
int ork_session_prefault(struct ork_session *s, int32_t n_pos);

/* ---- evaluation -------------------------------------------------------------------------- */

enum ork_eval_flags {
    ORK_EVAL_LAST_LOGITS = 0,       /* logits (n_vocab) of the last token only */
    ORK_EVAL_ALL_LOGITS = 1u << 0,  /* logits (n, n_vocab) of every token, row-major */
};

/* Run tokens[0..n) at positions pos .. pos+n-1 through the model, in batches of n_batch rows
 * (each matmul sees M = batch rows), appending their K/V to the cache with causal attention
 * over positions 0 .. p. pos must be <= n_past (a smaller pos first truncates the cache there).
 * logits may be NULL (prefill without output). Errors: ORK_ECONTEXT when pos + n > ctx_size
 * (nothing is evaluated), ORK_EINVAL for a token id outside the vocabulary. */
int ork_model_eval(struct ork_session *s, const int32_t *tokens, int32_t n, int32_t pos,
                   float *logits, uint32_t flags);

/* Decode one token for each of n_seq sessions in a single forward pass: tokens[i] is evaluated
 * at sessions[i]'s own position (its n_past) and appended to its cache. Every projection is one
 * matmul with M = n_seq rows (the weights stream once for all sequences); attention runs per
 * sequence over its own cache. logits receives (n_seq, n_vocab), row i for sessions[i]. The
 * result equals calling ork_model_eval on each session in turn. All sessions must share one
 * model and be distinct; the first session's thread pool and scratch arena are used, so n_seq
 * must be <= its n_batch and no session's ctx_size may exceed its ctx_size (ORK_EINVAL).
 * ORK_ECONTEXT when a session is full (nothing is evaluated). */
int ork_model_eval_multi(struct ork_session *const *sessions, const int32_t *tokens,
                         int32_t n_seq, float *logits);

/* The general form: for each of n_seq sessions, n_tok[i] consecutive tokens (>= 1; n_tok
 * NULL: one each), all in one forward pass. tokens holds them session after session; session
 * i's go at positions n_past .. n_past + n_tok[i] - 1 with causal attention over its cache and
 * its own earlier new rows (a speculative verify of k+1 rows beside the one row of a plain
 * decode). logits receives one row per token, (sum n_tok, n_vocab), in the order of tokens.
 * Each row equals what ork_model_eval of the session's tokens gives. The rows run in passes of
 * at most session 0's n_batch (and 256) rows, split between sessions; a session with more rows
 * than that is ORK_EINVAL. Other errors as ork_model_eval_multi (nothing is evaluated). */
int ork_model_eval_multi_rows(struct ork_session *const *sessions, const int32_t *n_tok,
                              const int32_t *tokens, int32_t n_seq, float *logits);

/* ---- generation -------------------------------------------------------------------------- */

/* Called with each chunk of generated text (valid UTF-8, stop strings held back / removed).
 * Return non-zero to stop generating. */
typedef int (*ork_gen_text_fn)(void *user, const char *text, size_t len);

struct ork_spec;

struct ork_gen_params {
    struct ork_sampler_params sampling;
    int32_t n_predict;          /* max tokens to generate; < 0: until EOG or context full */
    const char *const *stops;   /* stop strings (the text stops before them) */
    size_t n_stops;
    bool add_special;           /* prepend BOS (etc.) as the tokenizer flags say (default true) */
    bool parse_special;         /* recognise special-token text in the prompt (default false) */
    bool reuse_cache;           /* keep the longest common prefix of the cache (default true) */
    ork_gen_text_fn on_text;    /* may be NULL */
    void *user;
    bool ignore_eos;            /* end-of-generation tokens are never sampled (their logits are
                                 * masked), except under a grammar, which decides when to end */
    struct ork_spec *spec;      /* speculative decoding (ork-engine/speculative.h), or NULL */
};
void ork_gen_params_default(struct ork_gen_params *p);

enum ork_stop_reason {
    ORK_STOP_NONE = 0,
    ORK_STOP_N_PREDICT,         /* n_predict tokens generated */
    ORK_STOP_EOG,               /* end-of-generation token */
    ORK_STOP_STRING,            /* a stop string matched */
    ORK_STOP_CALLBACK,          /* on_text returned non-zero */
    ORK_STOP_CONTEXT,           /* the KV cache is full */
};
const char *ork_stop_reason_name(enum ork_stop_reason r);

struct ork_gen_stats {
    int32_t n_prompt;           /* prompt tokens (including reused ones) */
    int32_t n_reused;           /* prompt tokens already in the cache (not evaluated again) */
    int32_t n_gen;              /* generated tokens */
    double prompt_ms;           /* prefill wall time */
    double gen_ms;              /* decode wall time (sampling included) */
    enum ork_stop_reason stop;
    /* Speculative decoding (p->spec): target decode forwards, drafted tokens, accepted ones;
     * tau = 1 + n_accepted / n_steps (n_steps 0 without speculation). */
    int32_t n_steps, n_drafted, n_accepted;
};

/* Tokenize prompt and generate (ork_generate_tokens). */
int ork_generate(struct ork_session *s, struct ork_sampler *smp, const char *prompt,
                 const struct ork_gen_params *p, struct ork_gen_stats *stats);
/* Generate from a token sequence. With reuse_cache, the cache keeps its longest common prefix
 * with ids and only the rest is evaluated (chat turns); otherwise the cache is reset. The
 * sampler (created by the caller for the model's vocabulary) is not reset: the evaluated
 * prompt tokens and the generated ones join its penalty history (reused tokens joined it in the
 * call that first evaluated them). The generated tokens stay in the cache (an EOG token is not
 * evaluated). */
int ork_generate_tokens(struct ork_session *s, struct ork_sampler *smp, const int32_t *ids,
                        int32_t n, const struct ork_gen_params *p, struct ork_gen_stats *stats);

/* ---- embeddings (model/embed.c) ---------------------------------------------------------- */

/* Pooled final hidden states: the output of the final norm (what the LM head multiplies),
 * mean over the prompt's positions or the last one's, optionally L2-normalised. An embedder
 * holds what the forward pass needs to stop before the LM head (an identity head of dim x dim
 * F32, so its memory is 4 * dim^2 bytes); it runs on the CPU. */
enum ork_embd_pooling {
    ORK_EMBD_POOL_MEAN = 0,
    ORK_EMBD_POOL_LAST = 1,
};
struct ork_embedder;
/* For sessions of m (m must outlive it). Errors: ORK_ENOMEM. */
int ork_embedder_create(struct ork_model *m, struct ork_embedder **out);
void ork_embedder_free(struct ork_embedder *e);
/* Embedding size (the model's dim). */
int32_t ork_embedder_dim(const struct ork_embedder *e);
/* Evaluate tokens[0..n) from position 0 in session s (a session of the embedder's model; its
 * cache then holds these tokens, as after ork_model_eval) and write the pooled hidden state
 * (dim floats) to out, L2-normalised when normalize. Errors: ORK_EINVAL (no tokens, a token
 * outside the vocabulary, another model's session), ORK_ECONTEXT (n > ctx_size),
 * ORK_ENOMEM. */
int ork_embed(struct ork_embedder *e, struct ork_session *s, const int32_t *tokens, int32_t n,
              enum ork_embd_pooling pooling, bool normalize, float *out);

/* ---- session files (model/kv_file.c) ----------------------------------------------------- */

/* Write the session's cached tokens and their K/V rows to path (a new file, replaced
 * atomically: written to path.tmp, then renamed). *bytes (may be NULL) receives the file
 * size. Errors: ORK_EIO (cannot write). */
int ork_session_save_file(const struct ork_session *s, const char *path, int64_t *bytes);
/* Replace the session's cache by a file written by ork_session_save_file for the same model
 * shape and KV type. *n_tokens and *bytes (may be NULL) receive what was read. Errors:
 * ORK_EIO (cannot read), ORK_EFORMAT (not such a file, truncated, or another model shape or
 * KV type; the cache is then empty), ORK_ECONTEXT (more tokens than ctx_size). */
int ork_session_load_file(struct ork_session *s, const char *path, int32_t *n_tokens,
                          int64_t *bytes);

#ifdef __cplusplus
}
#endif
#endif
