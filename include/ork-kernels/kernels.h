/* ork-kernels/kernels.h -- CPU kernels: the scalar reference for every supported type, the
 * dispatched (possibly SIMD) versions, and the math ops of a transformer block.
 *
 * Conventions: a weight matrix W has N rows of K elements (GGUF ne[0] = K, ne[1] = N), row r
 * at (const uint8_t *)data + r * row_bytes. A matmul computes Y[M][N] = X[M][K] * W^T with X and
 * Y in f32, row-major. K must be a multiple of the type's block size. */
#ifndef ORK_KERNELS_KERNELS_H
#define ORK_KERNELS_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ork-kernels/types.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ork_pool;

/* Where a matrix's rows are (struct ork_mat.layout). */
enum ork_mat_layout {
    ORK_LAYOUT_ROWS = 0,    /* row r at data + r * row_bytes (the GGUF layout) */
    ORK_LAYOUT_X16 = 1,     /* Q8_0 / Q4_0 / Q4_K rows interleaved by 16 for the CPU kernels
                             * (ork_mat_x16_pack; docs/kernels.md "Interleaved weights") */
};

struct ork_mat {
    uint32_t type;          /* enum ork_type */
    int64_t n_rows;         /* N */
    int64_t n_cols;         /* K */
    size_t row_bytes;       /* ork_type_row_bytes(type, K) unless strided */
    const void *data;
    uint32_t layout;        /* enum ork_mat_layout; 0 (rows) when zero-initialized */
};

/* True when w (rows layout) can be interleaved and this CPU's kernel path reads the interleaved
 * layout faster: Q8_0 / Q4_0 / Q4_K, a multiple of 16 rows, unstrided rows of at most 64 KiB,
 * and x86-64 AVX-512 VNNI. */
bool ork_mat_x16_wanted(const struct ork_mat *w);
/* Rearranges w's data IN PLACE into ORK_LAYOUT_X16 and sets w->layout (w->data must point to
 * writable memory the caller owns; same size). Every kernel accepts either layout (a path
 * without interleaved kernels reads the rows back one at a time, slowly). Errors: ORK_EINVAL
 * (no data, already interleaved), ORK_EUNSUPPORTED naming why the matrix does not fit,
 * ORK_ENOMEM (a 16-row buffer). */
int ork_mat_x16_pack(struct ork_mat *w);

/* Scalar reference: dequantize n elements (multiple of the block) of one row. 0 or
 * ORK_EUNSUPPORTED naming the type. */
int ork_dequant_row_ref(uint32_t type, const void *src, float *dst, int64_t n);
/* Scalar reference dot product of one weight row with an f32 vector. */
float ork_vec_dot_ref(uint32_t type, const void *row, const float *x, int64_t n);

/* Dispatched versions (fastest available path; same results as the reference within the
 * tolerance documented in src/kernels/). */
int ork_dequant_row(uint32_t type, const void *src, float *dst, int64_t n);

/* Y[M][N] = X[M][K] * W^T, split over the pool's threads (pool may be NULL: caller's thread).
 * Returns ORK_EUNSUPPORTED for unsupported types. */
int ork_matmul(struct ork_pool *pool, const struct ork_mat *w, const float *x, int64_t m, float *y);

/* Row of an embedding table as f32 (any supported type). */
int ork_get_row(const struct ork_mat *w, int64_t row, float *dst);

/* Transformer math (scalar-exact order documented in the implementation). */
void ork_rmsnorm(float *out, const float *x, const float *w, int64_t n, float eps);
void ork_softmax(float *x, int64_t n);
void ork_silu_mul(float *gate, const float *up, int64_t n);     /* gate = silu(gate) * up */
/* RoPE on one head vector of length head_dim (rotating the first n_rot dims). neox = false:
 * pairs (2i, 2i+1) (GGML "normal", llama); neox = true: pairs (i, i + n_rot/2) (qwen2/3). */
void ork_rope(float *x, int64_t head_dim, int64_t n_rot, int64_t pos, float base, int neox);
/* Attention over a KV cache of F32 or F16 rows, row_stride elements apart: out[r] gets the
 * bits of ork_vec_dot(type, row r, x, n) for r in [0, nr); ork_vec_mad_rows adds a[r] * row r
 * into y for r = 0 .. nr-1, the bits of nr ork_vec_mad calls. ORK_EUNSUPPORTED otherwise. */
int ork_vec_dot_rows(uint32_t type, const void *rows, size_t row_stride, const float *x,
                     int64_t n, int64_t nr, float *out);
int ork_vec_mad_rows(float *y, const void *v, size_t row_stride, uint32_t type, const float *a,
                     int64_t nr, int64_t n);
/* Two queries over the same rows (the GQA heads sharing a KV head), the rows read once: out[q]
 * and y[q] get exactly what ork_vec_dot_rows / ork_vec_mad_rows give for x[q] / a[q]. */
int ork_vec_dot_rows2(uint32_t type, const void *rows, size_t row_stride, const float *const *x,
                      int64_t n, int64_t nr, float *const *out);
int ork_vec_mad_rows2(float *const *y, const void *v, size_t row_stride, uint32_t type,
                      const float *const *a, int64_t nr, int64_t n);

/* fp16/bf16 conversions (round-to-nearest-even). */
float ork_fp16_to_f32(uint16_t h);
uint16_t ork_f32_to_fp16(float f);
float ork_bf16_to_f32(uint16_t h);
uint16_t ork_f32_to_bf16(float f);
/* n values of x to F16 in dst: the bits of ork_f32_to_fp16 on each (F16C / NEON when present). */
void ork_f32_to_fp16_row(const float *x, uint16_t *dst, int64_t n);


/* --- Additions: dispatched dots, argument check, active path. --- */

/* 0 when the CPU kernels can compute with `type` over rows of n elements; otherwise
 * ORK_EUNSUPPORTED (naming the type) or ORK_EINVAL (n not a multiple of the block). */
int ork_kernels_check(uint32_t type, int64_t n);
/* Dispatched dot of one weight row with an f32 vector: equals the dispatched f32 dot of the
 * dequantized row with x, bit for bit (NaN for an unsupported type or bad n). */
float ork_vec_dot(uint32_t type, const void *row, const float *x, int64_t n);
/* y[i] += a * v[i] for i < n (the product rounded, then added: the same bits on every path),
 * v of type F32 or F16 (ORK_EUNSUPPORTED otherwise). Attention's weighted sum of values. */
int ork_vec_mad(float *y, const void *v, uint32_t type, float a, int64_t n);
/* Dispatched f32 dot product (the one ork_matmul uses for every output element). */
float ork_vec_dot_f32(const float *a, const float *b, int64_t n);
/* Name of the path the dispatched kernels take on this CPU: "scalar", "avx2", "avxvnni"
 * (AVX2 + AVX-VNNI), "avx512vnni" (AVX-512 F/BW/VL/DQ + VNNI), "neon", "neon-dotprod"
 * or "neon-i8mm" (dotprod + the smmla tiles of FEAT_I8MM).
 * Detected once (CPUID / XGETBV, getauxval(AT_HWCAP)); ORK_DEBUG=scalar forces "scalar". */
const char *ork_kernels_path(void);
/* Use the named path from now on (tests and benchmarks compare paths; not thread-safe against
 * kernels running at the same time); NULL restores the detected best. 0, ORK_EUNSUPPORTED when
 * this CPU cannot run it, ORK_EINVAL for an unknown name. */
int ork_kernels_set_path(const char *name);
/* The CPU capabilities the path detection read, by name, space-separated (AArch64: those of
 * "asimddp fphp asimdhp asimdfhm i8mm" in AT_HWCAP / AT_HWCAP2; x86-64: "avx2", "avxvnni",
 * "avx512vnni"); "" when none. What the path in use runs is ork_kernels_path(). */
const char *ork_kernels_cpu_caps(void);
/* Name of path number i (0, 1, ...), NULL past the last: for listing every path. */
const char *ork_kernels_path_name(int i);
/* Instruction sets the path in use runs (for probes that time the same units, e.g. the
 * tooling's arithmetic peak): ORK_KFEAT_* bits, 0 on the scalar path. */
#define ORK_KFEAT_AVX2 (1u << 0)        /* AVX2 + FMA + F16C */
#define ORK_KFEAT_AVXVNNI (1u << 1)     /* AVX-VNNI (256-bit vpdpbusd) */
#define ORK_KFEAT_AVX512VNNI (1u << 2)  /* AVX-512 F/BW/VL/DQ + VNNI */
#define ORK_KFEAT_NEON (1u << 3)        /* AArch64 Advanced SIMD */
#define ORK_KFEAT_DOTPROD (1u << 4)     /* ARMv8.2 dot product (sdot) */
#define ORK_KFEAT_I8MM (1u << 5)        /* int8 matrix multiply (smmla, FEAT_I8MM) */
unsigned ork_kernels_path_features(void);
/* Sum modulo 2^64 of the native-order 64-bit words at p, p + 8, ..., p + bytes - 1 (the last
 * bytes % 8 bytes zero-extended to one more word; p needs no alignment), read with the widest
 * loads of the path in use and several streams side by side: the loop the matmul's read-ahead
 * pulls the next weights into the caches with. Every path gives the same value. */
uint64_t ork_kernels_read_sum(const void *p, size_t bytes);
/* The load instruction ork_kernels_read_sum streams with on the path in use, e.g.
 * "vmovdqu64 zmm", "vmovdqu ymm", "ld1 v.16b", "scalar". */
const char *ork_kernels_read_insn(void);

/* Activation handling of a matmul.
 * ORK_ACT_F32: X stays f32; every output is the f32 dot of the dequantized weight row with X
 *   (ork_matmul).
 * ORK_ACT_QUANT: X is first converted, block by block, to the type that GGUF reference engines
 *   pair with the weight type, and the dot runs on those values: Q8_0 and Q4_0 weights take X
 *   quantized to Q8_0 (ork_quantize_row_q8_0) with integer block sums; Q4_K / Q6_K weights take
 *   X quantized to Q8_K (ork_quantize_row_q8_k); F16 / BF16 weights take X rounded to F16 /
 *   BF16. F32 weights keep f32 X. This reproduces reference
 *   logits of quantized models far more closely (and is the int8 path the NPU also takes). */
enum ork_act { ORK_ACT_F32 = 0, ORK_ACT_QUANT = 1 };

/* ork_matmul with a choice of activation handling (no allocation; same thread split). */
int ork_matmul_act(struct ork_pool *pool, const struct ork_mat *w, const float *x, int64_t m,
                   float *y, enum ork_act act);
/* Several matrices sharing one input, in one call: Y_q[M][N_q] = X[M][K] * W_q^T for
 * q < n_w (all W_q with the same K; y[q] the output of w[q]). X is converted once for all of
 * them (ORK_ACT_QUANT) and the rows of all matrices are split over the threads in one pool
 * dispatch (e.g. the Q/K/V projections, or gate and up). Every output has the bits of
 * ork_matmul_act on that matrix alone. 0, ORK_EINVAL or ORK_EUNSUPPORTED. */
int ork_matmul_act_multi(struct ork_pool *pool, const struct ork_mat *const *w, int n_w,
                         const float *x, int64_t m, float *const *y, enum ork_act act);
/* ork_matmul_act_multi, told which matrices the caller multiplies next (next[0 .. n_next),
 * each with data and n_rows >= 0; NULL / 0: none; ORK_EINVAL otherwise). A decode call (M = 1,
 * several threads) then puts the time a thread would wait for the others' last rows to use:
 * it reads the start of its share of those matrices' bytes into its caches, during the call
 * only (reads only; outputs as ork_matmul_act_multi). */
int ork_matmul_act_multi_next(struct ork_pool *pool, const struct ork_mat *const *w, int n_w,
                              const float *x, int64_t m, float *const *y, enum ork_act act,
                              const struct ork_mat *const *next, int n_next);
/* One output of ork_matmul_act: weight row (type, n elements) with f32 x. NaN on bad input. */
float ork_vec_dot_act(uint32_t type, const void *row, const float *x, int64_t n, enum ork_act act);
/* Quantize n f32 values (multiple of 32) to Q8_0 blocks: per block d = amax / 127 (stored as
 * f16), q = roundf(x * (1 / d)) (0 when amax = 0). 0 or ORK_EINVAL. */
int ork_quantize_row_q8_0(const float *x, void *dst, int64_t n);
/* Dot of a Q8_0 or Q4_0 weight row with a Q8_0-quantized x: exact integer partial sums of 4
 * products, accumulated by FMA into 16 f32 lanes with the scale d_w * d_x, then a fixed
 * reduction (docs/kernels.md; the same bits on every path). NaN on bad input. */
float ork_vec_dot_q8(uint32_t type, const void *row, const void *xq, int64_t n);
/* Quantize n f32 values (multiple of 256) to Q8_K blocks of 292 bytes: f32 d = amax / 127,
 * int8 q[256] = roundf(x * (1 / d)) (0 when amax = 0), int16 bsums[16] (sums of q over each
 * 16 values). The activation type of Q4_K / Q6_K weights. 0 or ORK_EINVAL. */
int ork_quantize_row_q8_k(const float *x, void *dst, int64_t n);
/* Dot of a Q4_K or Q6_K weight row with Q8_K-quantized x (exact integer sums per block, f32
 * accumulation in block order; src/kernels/qdot.c). NaN on bad input. */
float ork_vec_dot_q8k(uint32_t type, const void *row, const void *xq, int64_t n);

/* RoPE with per-pair frequency factors and linear position scaling (Llama 3 "rope_freqs",
 * rope.scaling.type = linear): pair i is rotated by freq_scale * (theta_i / freq_factors[i])
 * with theta_i as in ork_rope. freq_factors may be NULL (all 1); n_rot/2 entries otherwise.
 * ork_rope(...) == ork_rope_ext(..., NULL, 1.0f) bit for bit. */
void ork_rope_ext(float *x, int64_t head_dim, int64_t n_rot, int64_t pos, float base, int neox,
                  const float *freq_factors, float freq_scale);

#ifdef __cplusplus
}
#endif
#endif
