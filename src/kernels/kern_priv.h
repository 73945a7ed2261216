/* kern_priv.h -- internal interface between the CPU kernel files: which instruction-set path
 * runs (cpu.c) and the integer block dots on quantized activations (qdot.c). Not a public
 * header: the engine uses include/ork-kernels/kernels.h only. */
#ifndef ORK_KERNELS_KERN_PRIV_H
#define ORK_KERNELS_KERN_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <ork-kernels/types.h>

struct ork_mat;

/* Instruction-set paths, from the most portable up. Each x86 level implies the ones before it
 * (the detector only picks a level whose prerequisites are all present). */
enum kisa {
    KISA_SCALAR = 0,    /* the reference loops */
    KISA_AVX2,          /* AVX2 + FMA + F16C */
    KISA_AVXVNNI,       /* AVX2 level + AVX-VNNI (256-bit vpdpbusd, VEX) */
    KISA_AVX512VNNI,    /* AVX2 level + AVX-512 F/BW/VL + AVX512_VNNI (512-bit vpdpbusd) */
    KISA_NEON,          /* AArch64 Advanced SIMD (baseline) */
    KISA_NEON_DOT,      /* NEON + dot product (sdot, ARMv8.2 DotProd) */
    KISA_COUNT
};

/* The path in use (detected once; ORK_DEBUG=scalar forces KISA_SCALAR). */
enum kisa ork__kisa(void);
/* True when this CPU (and OS) can run path k. */
bool ork__kisa_available(enum kisa k);
const char *ork__kisa_name(enum kisa k);

/* Accumulator of a Q8_0/Q4_0 x Q8_0 dot: 16 f32 lanes. Block b of a row (counted from the
 * row's first block) adds its 8 integer partial sums p_j (j = 0..7, p_j = sum of the products
 * of elements 4j..4j+3) into lanes 8 * (b % 2) + j as lane = fmaf((float)p_j, d_w * d_x, lane).
 * ork__q8_end reduces: r8[j] = l[j] + l[j+8]; r4[j] = r8[j] + r8[j+4]; r2[j] = r4[j] + r4[j+2];
 * result r2[0] + r2[1]. Integer partials are exact, so every path gives the same bits. */
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

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
/* ork__unpack32 in one AVX2 register. */
__attribute__((target("avx2"))) static inline __m256i ork__unpack32_avx2(uint32_t type,
                                                                         const uint8_t *wq)
{
    if (type == ORK_TYPE_Q8_0)
        return _mm256_loadu_si256((const __m256i *)(const void *)wq);
    __m128i b = _mm_loadu_si128((const __m128i *)(const void *)wq);
    __m128i lo = _mm_and_si128(b, _mm_set1_epi8(15));
    __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), _mm_set1_epi8(15));
    return _mm256_sub_epi8(_mm256_set_m128i(hi, lo), _mm256_set1_epi8(ORK__Q4_0_OFFSET));
}
#endif

struct q8_acc {
    float l[16];
};

/* Blocks [0, nb) of a Q8_0 or Q4_0 row w against Q8_0 blocks xq. w must start at an even block
 * of the row (chunks of a row are fed in multiples of two blocks, keeping the lane parity). */
void ork__q8_blocks(enum kisa k, uint32_t type, const uint8_t *w, const uint8_t *xq, int64_t nb,
                    struct q8_acc *acc);
float ork__q8_end(const struct q8_acc *acc);

/* Most X rows per ork__q8_rows call. */
#define ORK_Q8_ROWS_MAX 4
/* Whole-row dots of one Q8_0/Q4_0 weight row w (nb blocks) with nr <= ORK_Q8_ROWS_MAX
 * Q8_0-quantized X rows (xq, xq + x_stride, ...): out[t] gets exactly the bits of
 * ork__q8_blocks over the row followed by ork__q8_end. */
void ork__q8_rows(enum kisa k, uint32_t type, const uint8_t *w, const uint8_t *xq,
                  size_t x_stride, int nr, int64_t nb, float *out);

/* Q4_K / Q6_K row (nb 256-element blocks) dot Q8_K activations, added block by block into
 * *sum (order in qdot.c), so a row fed in chunks gives the whole row's bits. */
void ork__q8k_blocks(enum kisa k, uint32_t type, const uint8_t *w, const uint8_t *xq, int64_t nb,
                     float *sum);

/* ork__q8k_blocks of one Q4_K / Q6_K weight row w (nb blocks, each sum from 0) with
 * nr <= ORK_Q8_ROWS_MAX Q8_K X rows (xq, xq + x_stride, ...), the weight blocks unpacked once
 * for all of them: out[t] has the bits of ork__q8k_blocks on row t. */
void ork__q8k_rows(enum kisa k, uint32_t type, const uint8_t *w, const uint8_t *xq,
                   size_t x_stride, int nr, int64_t nb, float *out);

/* ---- dot.c: F16 / BF16 weights against X rounded to their type ---- */

/* X rounded to the 16-bit weight type and widened back (as ork_vec_dot_act does). */
void ork__round_act(uint32_t type, const float *x, float *out, int64_t n);
/* nw <= 3 F16/BF16 weight rows at w (stride row_bytes) x mx <= 4 rounded X rows xr (stride
 * x_stride floats), n elements: y[t * ldy + j] gets exactly ork_vec_dot_act(row j, x row t)'s
 * bits. False (nothing done) when path k has no such kernel. */
bool ork__dot16_tile(enum kisa k, uint32_t type, const uint8_t *w, size_t row_bytes, int nw,
                     const float *xr, size_t x_stride, int mx, int64_t n, float *y, size_t ldy);

/* Bytes of one Q8_K activation block: f32 d, int8 q[256], int16 bsums[16]; the byte offsets
 * of q and bsums. */
#define ORK_Q8_K_BYTES 292
#define ORK_Q8_K_BLOCK 256
#define ORK_Q8_K_Q 4
#define ORK_Q8_K_BSUMS 260

/* ---- gemm_q8.c: shared activation quantizers and the register-tiled Q8_0 / Q4_0 GEMM ---- */

/* Vectorized activation quantizers on path k, bit for bit ork_quantize_row_q8_0 /
 * ork_quantize_row_q8_k (n a multiple of 32 / 256, not checked). */
void ork__quantize_q8_0(enum kisa k, const float *x, uint8_t *dst, int64_t n);
void ork__quantize_q8_k(enum kisa k, const float *x, uint8_t *dst, int64_t n);
/* ork__quantize_q8_0 of nb blocks laid out differently: block b's 32 quants at q + b * qstride,
 * its f16 scale as f32 in d[b] and the sum of its quants in sum[b] (one pass on AVX-512). */
void ork__quantize_q8_0_sums(enum kisa k, const float *x, int64_t nb, uint8_t *q, size_t qstride,
                             float *d, int32_t *sum);

/* Weight rows per panel and X rows per tile of the tiled kernel; alignment of its buffers. */
#define ORK_GEMM_NW 4
#define ORK_GEMM_MX 4
#define ORK_GEMM_ALIGN 64
/* Decode: nr Q8_0 / Q4_0 weight rows (row_bytes apart) against one Q8_0 X row of nb blocks;
 * out[i] has the bits of ork__q8_blocks + ork__q8_end. False (nothing done) when path k has
 * no such kernel. */
bool ork__q8_wrows(enum kisa k, uint32_t type, const uint8_t *w, size_t row_bytes, int64_t nr,
                   const uint8_t *xq, int64_t nb, float *out);
/* Decode in streams: stream t is s[t].n weight rows (row_bytes apart) from s[t].w, results to
 * s[t].out, each row with the bits of ork__q8_wrows. ork__q8_wstreams_width: streams the kernel
 * of path k reads side by side (4 with AVX-512, 1 with AVX2; 0: no kernel). ork__q8_wstreams
 * takes up to that many (more run one after another); false when path k has no kernel, with
 * nothing done. */
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
int ork__q8_wstreams_width(enum kisa k);
bool ork__q8_wstreams(enum kisa k, uint32_t type, const struct ork__wstream *s, int ns,
                      size_t row_bytes, const uint8_t *xq, int64_t nb);
/* True when path k has the tiled kernel (x86-64 AVX2 and up). */
bool ork__gemm_q8_ok(enum kisa k);
/* Bytes of one packed X row of k elements (Q8_0 blocks by pairs, biases, f32 scales). */
size_t ork__xpack_row_bytes(int64_t k);
/* Quantize rows X rows of k elements to packed rows at dst (stride ork__xpack_row_bytes). */
void ork__xpack_rows(enum kisa kp, const float *x, int64_t k, int64_t rows, uint8_t *dst);
/* Bytes of the weight panel buffer one thread needs for rows of k elements. */
size_t ork__gemm_panel_bytes(int64_t k);
/* X rows per L2-resident chunk of the tiled kernel. */
int64_t ork__gemm_chunk_rows(int64_t k);
/* Y[i][r] (Y + i * ldy + r) for weight rows r in [r0, r1) of a Q8_0 / Q4_0 matrix and the m
 * packed X rows at xp; panel: ork__gemm_panel_bytes scratch. Each output has the bits of
 * ork__q8_blocks + ork__q8_end over the whole row. */
void ork__gemm_q8(enum kisa k, const struct ork_mat *w, int64_t r0, int64_t r1,
                  const uint8_t *xp, int64_t m, float *y, int64_t ldy, uint8_t *panel);

/* ---- x16.c / x16k.c: Q8_0 / Q4_0 / Q4_K rows interleaved by 16 (ORK_LAYOUT_X16) ---- */

#define ORK_X16_ROWS 16         /* rows per group, one per 32-bit lane of a 512-bit vector */
#define ORK_X16_XBLOCK 48       /* bytes of one X block in the interleaved kernels' X form */
#define ORK_X16_XD 32           /* ... its f32 scale */
#define ORK_X16_XB 36           /* ... its int32 bias, -128 x the sum of its quants */
/* Groups the decode kernels read side by side (ork__x16_streams_width): Q8_0 / Q4_0 five,
 * Q4_K four (its kernels hold four groups' scales in registers). Five streams per thread
 * instead of four, the two builds run alternately (A B B A, `ork bench -p 0 -n 128 -t 2`,
 * Qwen3-1.7B shape): Q4_0 1.019x faster (median of 8 rounds, 0.999-1.049), Q8_0 1.023x (5
 * rounds, 0.997-1.057); six streams as five, eight slower (the kernel spills), one to three
 * slower (docs/kernels.md "Interleaved weights"). */
#define ORK_X16_STREAMS_MAX 5
#define ORK_X16_STREAMS 5
#define ORK_X16K_STREAMS 4
/* X rows per M > 1 tile: the four outputs per weight vector fit the 32 zmm registers beside
 * the 8 unpacked weight vectors. */
#define ORK_X16_MX 4
/* 0, or the error naming why an interleaved matrix is malformed (rows layout: 0). */
int ork__x16_check(const struct ork_mat *w);
/* True when path k has the interleaved kernels of `type` (Q8_0 / Q4_0 / Q4_K on x86-64 `avx2`,
 * `avxvnni` and `avx512vnni`). */
bool ork__x16_ok(enum kisa k, uint32_t type);
int ork__x16_streams_width(enum kisa k, uint32_t type);
/* Row r of w in the plain GGUF row layout: a pointer into w (rows layout) or buf filled with
 * it (interleaved; buf holds row_bytes). */
const uint8_t *ork__mat_row(const struct ork_mat *w, int64_t r, uint8_t *buf);
/* Bytes of one X row of k elements in the X form, and quantizing n elements into it (the
 * quants bit for bit ork_quantize_row_q8_0's). */
size_t ork__x16_xrow_bytes(int64_t k);
void ork__x16_xprep(enum kisa k, const float *x, int64_t n, uint8_t *dst);
/* Decode: stream t is s[t].n rows (a multiple of 16) of an interleaved matrix from s[t].w (a
 * group start), results to s[t].out, against one X row xs in the type's X form; up to
 * ORK_X16_STREAMS_MAX streams read side by side. False (nothing done) when path k has no
 * kernel. */
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
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* Target of the interleaved kernels (x16.c, x16k.c): the AVX-512 VNNI path. */
#define ORK_TGT_X16 __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))

/* A 4-bit quant byte's low nibble, and its high nibble in place (16 x the nibble): a dot
 * product chain over the latter is a multiple of 16, brought back by an exact arithmetic
 * shift of ORK_NIB_HI_SHIFT (Q4_0 in x16.c, Q4_K in x16k.c). */
#define ORK_NIB_LO 0x0f
#define ORK_NIB_HI 0xf0
#define ORK_NIB_HI_SHIFT 4

/* acc + vpdpbusd(w, the int32 at x in every lane), the int32 read by the instruction itself
 * ({1to16} memory broadcast). GCC 12 keeps a broadcast shared by several groups in a register
 * of its own (one more instruction per use); with the broadcast folded, interleaved Q4_0 decode
 * from DRAM ran 1.06-1.09x faster (`tools/kern_probe chain q4_0 2`, both kernels in one binary,
 * each rep timed both ways), Q8_0 0.99-1.07x (docs/kernels.md). */
ORK_TGT_X16 static inline __attribute__((always_inline)) __m512i
ork__dpbusd_bcast(__m512i acc, __m512i w, const uint8_t *x)
{
    __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*(const int32_t *)x));
    return acc;
}

/* The 64 bytes at p and m, with p's load inside the `vpandd` (two per quant vector, one per
 * nibble). GCC 12 loads most of the vectors into a register of their own first (one more
 * instruction each, 12 more per 4 Q4_0 group blocks); with the loads folded, Q4_0 decode from
 * DRAM ran 1.02-1.04x faster (measured as for ork__dpbusd_bcast). */
ORK_TGT_X16 static inline __attribute__((always_inline)) __m512i
ork__and_mem(const uint8_t *p, __m512i m)
{
    __m512i r;
    __asm__("vpandd %1, %2, %0" : "=v"(r) : "m"(*(const struct { uint8_t b[64]; } *)p), "v"(m));
    return r;
}
#endif

/* Defines one such kernel (x86-64 AVX-512 code only) with constant NG groups and MX X rows:
 * __m512 acc[NG * MX] zeroed, CORE (a statement using g, xs, xstride, nb and acc) run, then
 * acc[s * MX + t] stored at out[s] + t * ldo. TGT: the function's target attribute. */
#define ORK_X16_KERNEL(NAME, TGT, CORE, NG, MX)                                                 \
    TGT static void NAME(const uint8_t *const *g, const uint8_t *xs, size_t xstride,            \
                         int64_t nb, float *const *out, size_t ldo)                             \
    {                                                                                           \
        __m512 acc[(NG) * (MX)];                                                                \
        for (int i = 0; i < (NG) * (MX); i++)                                                   \
            acc[i] = _mm512_setzero_ps();                                                       \
        CORE;                                                                                   \
        for (int s = 0; s < (NG); s++)                                                          \
            for (int t = 0; t < (MX); t++)                                                      \
                _mm512_storeu_ps(out[s] + (size_t)t * ldo, acc[s * (MX) + t]);                  \
    }

/* x16a.c: the AVX2 kernels of Q8_0 (q8) / Q4_0 reading n groups side by side (tile: one group
 * against n X rows); NULL off x86-64. */
ork__x16_fn ork__x16a_fn(bool q8, bool tile, int n);

/* The AVX2 form (x16a.c, x16ka.c): two __m256 accumulators per output row, for its lanes 0..7
 * and 8..15: acc[(s * MX + t) * 2 + h] zeroed, CORE run, then stored at out[s] + t * ldo. */
#define ORK_X16_HALVES 2
#define ORK_X16_KERNEL256(NAME, TGT, CORE, NG, MX)                                              \
    TGT static void NAME(const uint8_t *const *g, const uint8_t *xs, size_t xstride,            \
                         int64_t nb, float *const *out, size_t ldo)                             \
    {                                                                                           \
        __m256 acc[ORK_X16_HALVES * (NG) * (MX)];                                               \
        for (int i = 0; i < ORK_X16_HALVES * (NG) * (MX); i++)                                  \
            acc[i] = _mm256_setzero_ps();                                                       \
        CORE;                                                                                   \
        for (int s = 0; s < (NG); s++)                                                          \
            for (int t = 0; t < (MX); t++)                                                      \
                for (int h = 0; h < ORK_X16_HALVES; h++)                                        \
                    _mm256_storeu_ps(out[s] + (size_t)t * ldo + h * (ORK_X16_ROWS / 2),        \
                                     acc[(s * (MX) + t) * ORK_X16_HALVES + h]);                 \
    }

/* x16k.c: Q4_K. X form (ork__x16k_xprep): per 256-element block ORK_X16K_XBLOCK bytes with the
 * quants and scale of ork_quantize_row_q8_k and its 32-element sums split for the kernels. */
#define ORK_X16K_XBLOCK 288
#define ORK_X16K_XD 256         /* ... its f32 scale */
#define ORK_X16K_XA 260         /* ... a[8], b[8]: each 32-element sum as 128 a + b (int8) */
#define ORK_X16K_XB 268
#define ORK_X16K_SPLIT_SHIFT 7  /* log2 128 */
/* A Q4_K group block (16 x 144 bytes): f16 d[16], f16 dmin[16], 3 chunks of scale words, 32
 * chunks of quant words (64 bytes each; x16k.c) */
#define ORK_X16K_D 0
#define ORK_X16K_DMIN 32
#define ORK_X16K_SC 64
#define ORK_X16K_QS 256
size_t ork__x16k_xrow_bytes(int64_t k);
void ork__x16k_xprep(enum kisa k, const float *x, int64_t n, uint8_t *dst);
/* The Q4_K kernel reading n groups side by side (tile: one group against n X rows): AVX-512
 * VNNI (x16k.c; NULL off x86-64) and AVX2 (x16ka.c). Each output has the bits of
 * ork__q8k_blocks on its row. */
ork__x16_fn ork__x16k_fn(bool tile, int n);
ork__x16_fn ork__x16ka_fn(bool tile, int n);

#endif
