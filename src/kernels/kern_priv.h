/* kern_priv.h -- the internal interface of the CPU kernels: the instruction-set paths
 * (dispatch.c), the dispatch table each path fills once at start (struct ork__kern: one
 * struct ork__type_kern per weight type, plus the type-independent slots), and the layouts and
 * accumulators the kernel files share. Not a public header: the engine uses
 * include/ork-kernels/kernels.h only. The x86 files add x86/x86_priv.h. */
#ifndef ORK_KERNELS_KERN_PRIV_H
#define ORK_KERNELS_KERN_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <ork-kernels/kernels.h>
#include <ork-kernels/types.h>

struct ork_mat;

/* Which instruction-set files this build compiles (each file under x86/ or arm/ is empty
 * elsewhere). */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ORK_KERN_X86 1
#elif defined(__aarch64__) && defined(__ARM_NEON)
#define ORK_KERN_ARM 1
#endif

/* Instruction-set paths, from the most portable up. Each x86 level implies the ones before it
 * (the detector only picks a level whose prerequisites are all present). */
enum kisa {
    KISA_SCALAR = 0,    /* the reference loops */
    KISA_AVX2,          /* AVX2 + FMA + F16C */
    KISA_AVXVNNI,       /* AVX2 level + AVX-VNNI (256-bit vpdpbusd, VEX) */
    KISA_AVX512VNNI,    /* AVX2 level + AVX-512 F/BW/VL + AVX512_VNNI (512-bit vpdpbusd) */
    KISA_NEON,          /* AArch64 Advanced SIMD (baseline) */
    KISA_NEON_DOT,      /* NEON + dot product (sdot, ARMv8.2 DotProd) */
    KISA_NEON_I8MM,     /* NEON dotprod level + int8 matrix multiply (smmla, FEAT_I8MM) */
    KISA_COUNT
};

/* AArch64 capabilities the paths depend on (arm/hwcap.c, built on every architecture): the
 * ORK__ACAP_* bits of the AT_HWCAP / AT_HWCAP2 words, whether they allow path k, the best path
 * they allow, and their names ("asimddp fphp asimdhp i8mm") into buf (snprintf's return). */
#define ORK__ACAP_ASIMDDP (1u << 0)
#define ORK__ACAP_FPHP (1u << 1)
#define ORK__ACAP_ASIMDHP (1u << 2)
#define ORK__ACAP_ASIMDFHM (1u << 3)
#define ORK__ACAP_I8MM (1u << 4)
unsigned ork__arm_caps(unsigned long hwcap, unsigned long hwcap2);
bool ork__arm_path_ok(enum kisa k, unsigned caps);
enum kisa ork__arm_best(unsigned caps);
size_t ork__arm_caps_str(unsigned caps, char *buf, size_t size);

/* The path in use (detected once; ORK_DEBUG=scalar forces KISA_SCALAR). */
enum kisa ork__kisa(void);
/* True when this CPU (and OS) can run path k. */
bool ork__kisa_available(enum kisa k);
const char *ork__kisa_name(enum kisa k);

/* ---- shared layouts and accumulators ---- */

/* An f16 stored little-endian at p, widened (the value of ork_fp16_to_f32). */
static inline float ork__f16le(const uint8_t *p)
{
    return ork_fp16_to_f32((uint16_t)(p[0] | (p[1] << 8)));
}

/* The f32 dot accumulator (dot.c has the order): 32 lanes and an in-order tail. Chunks fed to
 * it are multiples of ORK_DOT_LANES, so chunking never changes which lane an element lands in. */
#define ORK_DOT_LANES 32
struct ork__dot_acc {
    float lane[ORK_DOT_LANES];
    float tail;
};
/* The 32-lane reduction of the SIMD paths (dot.c). */
float ork__acc_end32(const struct ork__dot_acc *acc);

/* Accumulator of a Q8_0/Q4_0 x Q8_0 dot: 16 f32 lanes. Block b of a row (counted from the
 * row's first block) adds its 8 integer partial sums p_j (j = 0..7, p_j = sum of the products
 * of elements 4j..4j+3) into lanes 8 * (b % 2) + j as lane = fmaf((float)p_j, d_w * d_x, lane).
 * ork__q8_end reduces: r8[j] = l[j] + l[j+8]; r4[j] = r8[j] + r8[j+4]; r2[j] = r4[j] + r4[j+2];
 * result r2[0] + r2[1]. Integer partials are exact, so every path gives the same bits. */
struct q8_acc {
    float l[16];
};
float ork__q8_end(const struct q8_acc *acc);

/* The 32 signed weight values of a Q8_0 or Q4_0 block's quants wq (Q4_0: element i < 16 is
 * the low nibble of wq[i] minus 8, element i + 16 the high nibble minus 8; GGUF's layout). */
#define ORK__Q4_0_OFFSET 8
static inline void ork__unpack32(uint32_t type, const uint8_t *wq, int8_t *out)
{
    if (type == ORK_TYPE_Q8_0) {
        memcpy(out, wq, 32);
        return;
    }
    for (int i = 0; i < 16; i++) {
        out[i] = (int8_t)((wq[i] & 15) - ORK__Q4_0_OFFSET);
        out[i + 16] = (int8_t)((wq[i] >> 4) - ORK__Q4_0_OFFSET);
    }
}

/* Most X rows per q8_rows / q8k_rows call. */
#define ORK_Q8_ROWS_MAX 4

/* Bytes of one Q8_K activation block: f32 d, int8 q[256], int16 bsums[16]; the byte offsets
 * of q and bsums. */
#define ORK_Q8_K_BYTES 292
#define ORK_Q8_K_BLOCK 256
#define ORK_Q8_K_Q 4
#define ORK_Q8_K_BSUMS 260

/* Weight rows per panel and X rows per tile of the tiled Q8_0 / Q4_0 GEMM; alignment of its
 * buffers. */
#define ORK_GEMM_NW 4
#define ORK_GEMM_MX 4
#define ORK_GEMM_ALIGN 64

/* Decode in streams: stream t is s[t].n weight rows (row_bytes apart) from s[t].w, results to
 * s[t].out. */
#define ORK_WSTREAMS_MAX 5     /* the most any decode kernel reads: ORK_X16_STREAMS_MAX */
struct ork__wstream {
    const uint8_t *w;
    int64_t n;
    float *out;
};
/* nr rows from w (row_bytes apart) cut into at most `parts` streams of equal length in whole
 * units of `unit` rows (the last one shorter), outputs from out: the stream count. */
static inline int ork__wstreams_split(const uint8_t *w, size_t row_bytes, int64_t nr,
                                      int64_t unit, int parts, float *out,
                                      struct ork__wstream *s)
{
    const int64_t part = (nr / unit + parts - 1) / parts * unit;
    int ns = 0;
    for (int64_t r0 = 0; r0 < nr; r0 += part, ns++)
        s[ns] = (struct ork__wstream){ .w = w + (size_t)r0 * row_bytes,
                                       .n = nr - r0 < part ? nr - r0 : part, .out = out + r0 };
    return ns;
}

/* Attention over KV rows (ork_vec_dot_rows / ork_vec_mad_rows): most rows and queries one
 * pass of a multi-row kernel takes. */
#define ORK_KV_ROWS_MAX 4
#define ORK_KV_QUERIES_MAX 2

/* The attention loops read row t while the row ORK_KV_PREFETCH_ROWS ahead is prefetched
 * (faster from DRAM: docs/kernels.md "Attention rows", docs/engine.md "KV cache layout"). */
#define ORK_KV_PREFETCH_ROWS 4
#define ORK_KV_LINE 64          /* bytes per prefetch: a cache line */

/* Bytes per element of the F32 / F16 rows the attention loops read. */
static inline size_t ork__elt_bytes(uint32_t type)
{
    return type == ORK_TYPE_F16 ? sizeof(uint16_t) : sizeof(float);
}

/* Prefetches `bytes` from p (a row or part of one). */
static inline void ork__prefetch_bytes(const uint8_t *p, size_t bytes)
{
    for (size_t b = 0; b < bytes; b += ORK_KV_LINE)
        __builtin_prefetch(p + b, 0, 3);
}

/* One element of ork_vec_mad: v[i] (F32 or F16) widened; y + a * v with the product rounded
 * before the add (never fused), the same bits on every path. */
static inline float ork__mad_elem(float y, const uint8_t *v, uint32_t type, float a, int64_t i)
{
    float w;
    if (type == ORK_TYPE_F16)
        w = ork__f16le(v + 2 * i);
    else
        memcpy(&w, v + 4 * i, sizeof w);
    float pr = a * w;
    return y + pr;
}

/* y[i] += a * v[i] for i in [from, n): the reference loop, and the SIMD kernels' tail. */
static inline void ork__mad_tail(float *y, const uint8_t *v, uint32_t type, float a,
                                 int64_t from, int64_t n)
{
    for (int64_t i = from; i < n; i++)
        y[i] = ork__mad_elem(y[i], v, type, a, i);
}

/* ---- rows16: Q8_0 / Q4_0 / Q4_K / Q6_K rows interleaved by 16 (ORK_LAYOUT_X16; rows16.c) ---- */

#define ORK_X16_ROWS 16         /* rows per group, one per 32-bit lane of a 512-bit vector */
#define ORK_X16_XBLOCK 48       /* bytes of one X block in the interleaved kernels' X form */
#define ORK_X16_XD 32           /* ... its f32 scale */
#define ORK_X16_XB 36           /* ... its int32 bias, -128 x the sum of its quants */
/* Groups the decode kernels read side by side: Q8_0 / Q4_0 five, Q4_K four (its kernels hold
 * four groups' scales in registers). Five rather than four streams measured faster, six the
 * same, eight slower (the kernel spills), one to three slower (docs/kernels.md "Interleaved
 * weights", "Streams per thread"). */
#define ORK_X16_STREAMS_MAX 5
#define ORK_X16_STREAMS 5
#define ORK_X16K_STREAMS 4
/* X rows per M > 1 tile: the four outputs per weight vector fit the 32 zmm registers beside
 * the 8 unpacked weight vectors. A path may take more (x16_tile_mx, at most ORK_X16_MX_MAX:
 * the NEON Q8_0 / Q4_0 tiles take six). */
#define ORK_X16_MX 4
#define ORK_X16_MX_MAX 8
/* 0, or the error naming why an interleaved matrix is malformed (rows layout: 0). */
int ork__x16_check(const struct ork_mat *w);
/* Row r of w in the plain GGUF row layout: a pointer into w (rows layout) or buf filled with
 * it (interleaved; buf holds row_bytes). */
const uint8_t *ork__mat_row(const struct ork_mat *w, int64_t r, uint8_t *buf);
/* Bytes of one X row of k elements in the Q8_0 / Q4_0 X form, and quantizing n elements into
 * it (the quants bit for bit ork_quantize_row_q8_0's). */
size_t ork__x16_xrow_bytes(int64_t k);
void ork__x16_xprep(enum kisa k, const float *x, int64_t n, uint8_t *dst);
/* Q4_K X form: per 256-element block ORK_X16K_XBLOCK bytes with the quants and scale of
 * ork_quantize_row_q8_k and its 32-element sums split for the kernels. */
#define ORK_X16K_XBLOCK 288
#define ORK_X16K_XD 256         /* ... its f32 scale */
#define ORK_X16K_XA 260         /* ... a[8], b[8]: each 32-element sum as 128 a + b (int8) */
#define ORK_X16K_XB 268
#define ORK_X16K_SPLIT_SHIFT 7  /* log2 128 */
/* A Q4_K group block (16 x 144 bytes): f16 d[16], f16 dmin[16], 3 chunks of scale words, 32
 * chunks of quant words (64 bytes each; rows16.c) */
#define ORK_X16K_D 0
#define ORK_X16K_DMIN 32
#define ORK_X16K_SC 64
#define ORK_X16K_QS 256
size_t ork__x16k_xrow_bytes(int64_t k);
void ork__x16k_xprep(enum kisa k, const float *x, int64_t n, uint8_t *dst);
/* Decode: stream t is s[t].n rows (a multiple of 16) of an interleaved matrix from s[t].w (a
 * group start), results to s[t].out, against one X row xs in the type's X form; up to the
 * path's x16_streams read side by side. False (nothing done) when path k has no kernel. */
bool ork__x16_streams(enum kisa k, uint32_t type, const struct ork__wstream *s, int ns,
                      size_t row_bytes, const uint8_t *xs);
/* Y[i][r] (y + i * ldy + r) for the nr rows (a multiple of 16) of an interleaved matrix from w
 * (a group start) and the m X rows at xs (xrow bytes apart). False when path k has no kernel. */
bool ork__x16_gemm(enum kisa k, uint32_t type, const uint8_t *w, size_t row_bytes, int64_t nr,
                   const uint8_t *xs, size_t xrow, int64_t m, float *y, int64_t ldy);
/* A kernel over interleaved groups: ng groups g[s] (block 0 of each) x mx X rows (xs, xstride
 * apart), nb blocks; out[s] + t * ldo gets the 16 outputs of group s and X row t. */
typedef void (*ork__x16_fn)(const uint8_t *const *g, const uint8_t *xs, size_t xstride,
                            int64_t nb, float *const *out, size_t ldo);

/* ---- packed X of the tiled Q8_0 / Q4_0 GEMM (quant_act.c) ---- */

/* Bytes of one packed X row of k elements (Q8_0 blocks by pairs, biases, f32 scales). */
size_t ork__xpack_row_bytes(int64_t k);
/* Quantize rows X rows of k elements to packed rows at dst (stride ork__xpack_row_bytes). */
void ork__xpack_rows(enum kisa kp, const float *x, int64_t k, int64_t rows, uint8_t *dst);
/* Bytes of the weight panel buffer one thread needs for rows of k elements. */
size_t ork__gemm_panel_bytes(int64_t k);
/* X rows per L2-resident chunk of the tiled kernel. */
int64_t ork__gemm_chunk_rows(int64_t k);

/* ---- the dispatch table ------------------------------------------------------------------
 * One struct ork__kern per path, filled once at start (dispatch.c) by the fill functions of
 * that path's files in order: the scalar ones first (every required slot then holds the
 * reference), then each instruction-set file overrides the slots it has a kernel for. Slots
 * marked "optional" may stay NULL; the comment says what NULL means. The hot paths call
 * ork__kern(k)->slot(...) and never test the path themselves. */

/* The weight types with kernels of their own (the index of struct ork__kern.t). */
enum ork__kt {
    ORK__KT_F16 = 0, ORK__KT_BF16, ORK__KT_Q8_0, ORK__KT_Q4_0, ORK__KT_Q4_K, ORK__KT_Q6_K,
    ORK__KT_COUNT
};
/* Index of a type in struct ork__kern.t, or -1. */
static inline int ork__kt_of(uint32_t type)
{
    switch (type) {
    case ORK_TYPE_F16: return ORK__KT_F16;
    case ORK_TYPE_BF16: return ORK__KT_BF16;
    case ORK_TYPE_Q8_0: return ORK__KT_Q8_0;
    case ORK_TYPE_Q4_0: return ORK__KT_Q4_0;
    case ORK_TYPE_Q4_K: return ORK__KT_Q4_K;
    case ORK_TYPE_Q6_K: return ORK__KT_Q6_K;
    default: return -1;
    }
}

/* Most weight rows and X rows of one dot16_tile call. */
#define ORK_DOT16_NW 3
#define ORK_DOT16_MX 4

/* The kernels of one weight type on one path. Every kernel takes the type too (one function
 * often serves Q8_0 and Q4_0, or Q4_K and Q6_K). */
struct ork__type_kern {
    /* -- f32 X (ork_vec_dot, ork_dequant_row) -- */
    /* one block to f32, exactly (optional; NULL: ork_dequant_row_ref) */
    void (*deq_block)(const uint8_t *b, float *y);
    /* a whole row's dot fed into acc, weights widened in registers (optional; NULL: the row
     * dequantized in chunks and fed through acc_step) */
    void (*dot_fused)(uint32_t type, const uint8_t *row, const float *x, int64_t n,
                      struct ork__dot_acc *acc);
    /* F16 / BF16: nw <= 3 weight rows x mx <= 4 rounded X rows, each output ork_vec_dot_act's
     * bits (optional; NULL: dequantize + ork_vec_dot_f32) */
    void (*dot16_tile)(uint32_t type, const uint8_t *w, size_t row_bytes, int nw,
                       const float *xr, size_t x_stride, int mx, int64_t n, float *y,
                       size_t ldy);

    /* -- Q8_0 / Q4_0 weights, Q8_0 X -- */
    /* blocks [0, nb) of a row into acc; w starts at an even block of the row (required) */
    void (*q8_blocks)(uint32_t type, const uint8_t *w, const uint8_t *xq, int64_t nb,
                      struct q8_acc *acc);
    /* one weight row x ORK_Q8_ROWS_MAX X rows (xs bytes apart): out[t] the bits of q8_blocks +
     * ork__q8_end (optional; NULL: q8_blocks per row) */
    void (*q8_rows4)(uint32_t type, const uint8_t *w, const uint8_t *xq, size_t xs, int64_t nb,
                     float *out);
    /* decode: nr weight rows (row_bytes apart) x one X row (optional; NULL: q8_blocks) */
    void (*q8_wrows)(uint32_t type, const uint8_t *w, size_t row_bytes, int64_t nr,
                     const uint8_t *xq, int64_t nb, float *out);
    /* decode in up to q8_wstreams_width streams read side by side (optional; NULL: q8_wrows
     * per stream); q8_wstreams_width: 0 when q8_wrows is NULL */
    void (*q8_wstreams)(uint32_t type, const struct ork__wstream *s, int ns, size_t row_bytes,
                        const uint8_t *xq, int64_t nb);
    int q8_wstreams_width;
    /* the tiled GEMM: Y[i][r] for weight rows [r0, r1) and m packed X rows (ork__xpack_rows),
     * panel: ork__gemm_panel_bytes scratch (optional; NULL: no tiled kernel, one-row dots) */
    void (*gemm)(const struct ork_mat *w, int64_t r0, int64_t r1, const uint8_t *xp, int64_t m,
                 float *y, int64_t ldy, uint8_t *panel);

    /* -- Q4_K / Q6_K weights, Q8_K X -- */
    /* blocks [0, nb) of a row added into *sum in block order (required) */
    void (*q8k_blocks)(uint32_t type, const uint8_t *w, const uint8_t *xq, int64_t nb,
                       float *sum);
    /* one weight row x nr <= ORK_Q8_ROWS_MAX X rows, each from 0 (optional; NULL: q8k_blocks
     * per row) */
    void (*q8k_rows)(uint32_t type, const uint8_t *w, const uint8_t *xq, size_t x_stride,
                     int nr, int64_t nb, float *out);

    /* -- rows16 (ORK_LAYOUT_X16: Q8_0, Q4_0, Q4_K, Q6_K) -- */
    /* the kernel reading n groups side by side (tile: one group against n X rows) (optional;
     * NULL: the path has no interleaved kernels, rows are read back one at a time) */
    ork__x16_fn (*x16_fn)(bool tile, int n);
    int x16_streams;            /* groups x16_fn takes side by side in decode */
    int x16_tile_mx;            /* X rows x16_fn takes in a tile (0: ORK_X16_MX) */
    int x16_prefetch;           /* bytes of each stream prefetched at its start (0: none) */
};

/* The type-independent kernels of one path, and its per-type tables. */
struct ork__kern {
    enum kisa isa;
    /* -- f32 dots (dot.c) -- */
    /* acc += a . b over n elements in the path's lane order (required) */
    void (*acc_step)(struct ork__dot_acc *acc, const float *a, const float *b, int64_t n);
    /* the accumulator's result (required: lane 0 on the scalar path, ork__acc_end32 else) */
    float (*acc_end)(const struct ork__dot_acc *acc);
    void (*deq_f16)(const uint8_t *p, float *dst, int64_t n);       /* required */
    /* y[i] += a * v[i], v F32 or F16 (required) */
    void (*mad)(float *y, const uint8_t *v, uint32_t type, float a, int64_t n);
    /* x rounded to F16 / BF16 and widened: elements done from 0 (optional; NULL: none) */
    int64_t (*round_act)(uint32_t type, const float *x, float *out, int64_t n);
    /* x to F16: elements done from 0 (optional; NULL: none) */
    int64_t (*to_fp16)(const float *x, uint16_t *dst, int64_t n);
    /* -- attention over KV rows (F32 / F16) -- */
    /* kv_rows rows r[] (repeats allowed) x nq <= kv_queries queries: out[q][k], each the bits
     * of ork_vec_dot (optional; NULL: one row at a time) */
    void (*kv_dot)(uint32_t type, const uint8_t *const *r, const float *const *x, int nq,
                   int64_t n, float (*out)[ORK_KV_ROWS_MAX]);
    int kv_rows, kv_queries;
    /* nq queries' weighted sums over nr rows (sb bytes apart), each the bits of nr
     * ork_vec_mad calls (optional; NULL: ork_vec_mad per row) */
    void (*kv_mad)(float *const *y, const uint8_t *v, size_t sb, uint32_t type,
                   const float *const *a, int nq, int64_t nr, int64_t n);
    /* -- activation quantizers (quant_act.c), bit for bit the scalar ones (required) -- */
    void (*quant_q8_0)(const float *x, uint8_t *dst, int64_t nb);
    /* nb blocks: quants at q + b * qstride, the f16 scale as f32 in d[b], the quant sum in
     * sum[b] (optional; NULL: quant_q8_0 block by block) */
    void (*quant_q8_0_sums)(const float *x, int64_t nb, uint8_t *q, size_t qstride, float *d,
                            int32_t *sum);
    void (*quant_q8_k)(const float *x, uint8_t *dst, int64_t nb);
    /* -- transformer ops (ops.c; required) -- */
    void (*rmsnorm)(float *out, const float *x, const float *w, int64_t n, float eps);
    void (*softmax)(float *x, int64_t n);
    void (*silu_mul)(float *gate, const float *up, int64_t n);
    /* RoPE's rotation of half pairs by the angles' cos c[i] / sin s[i] (ops.c rope_rotate):
     * the same bits on every path */
    void (*rope_rotate)(float *x, int64_t half, int neox, const float *c, const float *s);
    /* -- streaming read (read_sum.c) -- */
    /* the sum of the words of a prefix of p, its bytes (a multiple of 8) in *done (optional;
     * NULL: the portable loop) */
    uint64_t (*read_sum)(const uint8_t *p, size_t bytes, size_t *done);
    const char *read_insn;      /* the load it streams with, "scalar" for the portable loop */
    unsigned features;          /* ORK_KFEAT_* bits the path's kernels use */

    struct ork__type_kern t[ORK__KT_COUNT];
};

/* The table of path k (filled at first use; any k, available or not: a path this CPU cannot
 * run is never selected). */
const struct ork__kern *ork__kern(enum kisa k);
/* The table of the path in use. */
static inline const struct ork__kern *ork__kcur(void)
{
    return ork__kern(ork__kisa());
}
/* The table of `type` on path k, NULL for a type without one. */
static inline const struct ork__type_kern *ork__tkern(enum kisa k, uint32_t type)
{
    int i = ork__kt_of(type);
    return i < 0 ? NULL : &ork__kern(k)->t[i];
}

/* Fill functions, one per kernel file, run in this order per path (dispatch.c). */
void ork__fill_dot_scalar(struct ork__kern *t);
void ork__fill_qdot_scalar(struct ork__kern *t);
void ork__fill_quant_act_scalar(struct ork__kern *t);
void ork__fill_ops_scalar(struct ork__kern *t);
void ork__fill_read_sum_scalar(struct ork__kern *t);
#ifdef ORK_KERN_X86
void ork__fill_dot_avx2(struct ork__kern *t);
void ork__fill_kv_rows_avx2(struct ork__kern *t);
void ork__fill_kv_rows_avx512(struct ork__kern *t);
void ork__fill_tile_f16_avx512(struct ork__kern *t);
void ork__fill_qdot_avx2(struct ork__kern *t);
void ork__fill_qdot_avxvnni(struct ork__kern *t);
void ork__fill_qdot_avx512(struct ork__kern *t);
void ork__fill_quant_act_avx2(struct ork__kern *t);
void ork__fill_quant_act_avx512(struct ork__kern *t);
void ork__fill_gemm_q8_avx2(struct ork__kern *t);
void ork__fill_gemm_q8_avxvnni(struct ork__kern *t);
void ork__fill_gemm_q8_avx512(struct ork__kern *t);
void ork__fill_rows16_q8_0_q4_0_avx2(struct ork__kern *t);
void ork__fill_rows16_q8_0_q4_0_avx512(struct ork__kern *t);
void ork__fill_rows16_q4_k_avx2(struct ork__kern *t);
void ork__fill_rows16_q4_k_avx512(struct ork__kern *t);
void ork__fill_ops_avx2(struct ork__kern *t);
void ork__fill_read_sum_avx2(struct ork__kern *t);
void ork__fill_read_sum_avx512(struct ork__kern *t);
#endif
#ifdef ORK_KERN_ARM
void ork__fill_dot_neon(struct ork__kern *t);
void ork__fill_qdot_neon(struct ork__kern *t);
void ork__fill_qdot_neon_dot(struct ork__kern *t);
void ork__fill_rows16_q8_0_q4_0_neon_dot(struct ork__kern *t);
void ork__fill_rows16_q4_k_neon_dot(struct ork__kern *t);
void ork__fill_rows16_q6_k_neon_dot(struct ork__kern *t);
void ork__fill_rows16_q8_0_q4_0_neon_i8mm(struct ork__kern *t);
void ork__fill_quant_act_neon(struct ork__kern *t);
void ork__fill_ops_neon(struct ork__kern *t);
void ork__fill_kv_rows_neon(struct ork__kern *t);
void ork__fill_read_sum_neon(struct ork__kern *t);
#endif

/* ---- entry points over the table (for matmul.c and the tests) ---- */

/* Blocks [0, nb) of a Q8_0 or Q4_0 row w against Q8_0 blocks xq, on path k. */
void ork__q8_blocks(enum kisa k, uint32_t type, const uint8_t *w, const uint8_t *xq, int64_t nb,
                    struct q8_acc *acc);
/* Whole-row dots of one Q8_0/Q4_0 weight row w (nb blocks) with nr <= ORK_Q8_ROWS_MAX
 * Q8_0-quantized X rows (xq, xq + x_stride, ...): out[t] gets exactly the bits of
 * ork__q8_blocks over the row followed by ork__q8_end. */
void ork__q8_rows(enum kisa k, uint32_t type, const uint8_t *w, const uint8_t *xq,
                  size_t x_stride, int nr, int64_t nb, float *out);
/* Q4_K / Q6_K row (nb 256-element blocks) dot Q8_K activations, added block by block into
 * *sum (order in qdot.c), so a row fed in chunks gives the whole row's bits. */
void ork__q8k_blocks(enum kisa k, uint32_t type, const uint8_t *w, const uint8_t *xq, int64_t nb,
                     float *sum);
/* ork__q8k_blocks of one weight row with nr <= ORK_Q8_ROWS_MAX Q8_K X rows, each from 0. */
void ork__q8k_rows(enum kisa k, uint32_t type, const uint8_t *w, const uint8_t *xq,
                   size_t x_stride, int nr, int64_t nb, float *out);
/* Activation quantizers on path k (n a multiple of 32 / 256, not checked). */
void ork__quantize_q8_0(enum kisa k, const float *x, uint8_t *dst, int64_t n);
void ork__quantize_q8_k(enum kisa k, const float *x, uint8_t *dst, int64_t n);
void ork__quantize_q8_0_sums(enum kisa k, const float *x, int64_t nb, uint8_t *q, size_t qstride,
                             float *d, int32_t *sum);
/* ork_kernels_read_sum on table t. */
uint64_t ork__read_sum(const struct ork__kern *t, const void *p, size_t bytes);
/* The table's optional kernels for matmul.c, false / 0 (nothing done) when path k has none:
 * decode of nr Q8_0 / Q4_0 rows (row_bytes apart) against one Q8_0 X row; the streams read side
 * by side (more than the width run one after another); the tiled GEMM; the F16 / BF16 tiles. */
bool ork__q8_wrows(enum kisa k, uint32_t type, const uint8_t *w, size_t row_bytes, int64_t nr,
                   const uint8_t *xq, int64_t nb, float *out);
int ork__q8_wstreams_width(enum kisa k, uint32_t type);
bool ork__q8_wstreams(enum kisa k, uint32_t type, const struct ork__wstream *s, int ns,
                      size_t row_bytes, const uint8_t *xq, int64_t nb);
bool ork__gemm_q8_ok(enum kisa k, uint32_t type);
void ork__gemm_q8(enum kisa k, const struct ork_mat *w, int64_t r0, int64_t r1,
                  const uint8_t *xp, int64_t m, float *y, int64_t ldy, uint8_t *panel);
bool ork__dot16_tile(enum kisa k, uint32_t type, const uint8_t *w, size_t row_bytes, int nw,
                     const float *xr, size_t x_stride, int mx, int64_t n, float *y, size_t ldy);
/* True when path k has the interleaved kernels of `type`; the groups they read side by side. */
bool ork__x16_ok(enum kisa k, uint32_t type);
int ork__x16_streams_width(enum kisa k, uint32_t type);
/* X rounded to the 16-bit weight type and widened back (as ork_vec_dot_act does). */
void ork__round_act(uint32_t type, const float *x, float *out, int64_t n);

#endif
