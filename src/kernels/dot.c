/* dot.c -- the dispatched f32-activation CPU kernels' entry points and scalar references: f32
 * dot products, row dots for every supported type, row dequantization, y += a * v, the
 * attention loops over KV rows, and the entry points of the quantized-activation dots
 * (ork_vec_dot_act). Each calls through the path's table (kern_priv.h); the SIMD kernels are
 * x86/dot_avx2.c, x86/kv_rows_*.c, x86/tile_f16_avx512.c and arm/dot_neon.c. Not here: the
 * definition of the types (quant_ref.c), threading (matmul.c, pool.c).
 *
 * Accumulation order. Every dot product in ork is "the f32 dot of the dequantized weight row
 * with x", computed through an accumulator state so that a long row can be fed in chunks
 * without changing a bit of the result:
 *   scalar: one f32 accumulator, elements in order 0, 1, 2, ... (= ork_vec_dot_ref);
 *   simd:   32 f32 lanes (AVX2: 4 registers x 8; NEON: 8 registers x 4); element i goes to
 *           lane i % 32 with a fused multiply-add while 32 elements remain; the last n % 32
 *           elements are summed in order into a separate f32 tail; at the end lanes k, k+8,
 *           k+16, k+24 are added as (l[k] + l[k+8]) + (l[k+16] + l[k+24]), the 8 results
 *           pairwise ((s0+s1)+(s2+s3)) + ((s4+s5)+(s6+s7)), and the tail added last.
 * AVX2 and NEON therefore give the same bits. The scalar and SIMD orders differ by rounding;
 * tests/unit/test_kernels_dot.c bounds the difference (relative to sum |w x|) by 1e-5.
 * Dequantization is exact on every path (same bits). The attention helpers ork_vec_dot_rows /
 * ork_vec_mad_rows take several KV rows per pass (AVX-512 on the avx512vnni path, AVX2 on the
 * other x86 paths) with the same per-row bits as the one-row kernels. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <ork/debug.h>
#include <ork/error.h>
#include <ork-kernels/kernels.h>

#include "kern_priv.h"

/* Elements dequantized at a time by ork_vec_dot (a multiple of every block size and of
 * ORK_DOT_LANES; 4 KiB of stack). */
#define DOT_CHUNK 1024

/* ---- scalar ---- */

static void acc_step_scalar(struct ork__dot_acc *acc, const float *a, const float *b, int64_t n)
{
    float s = acc->lane[0];
    for (int64_t i = 0; i < n; i++)
        s += a[i] * b[i];
    acc->lane[0] = s;
}

static float acc_end_scalar(const struct ork__dot_acc *acc)
{
    return acc->lane[0];
}

static void deq_f16_scalar(const uint8_t *p, float *dst, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] = ork__f16le(p + 2 * i);
}

float ork__acc_end32(const struct ork__dot_acc *acc)
{
    const float *l = acc->lane;
    float s[8];
    for (int k = 0; k < 8; k++)
        s[k] = (l[k] + l[k + 8]) + (l[k + 16] + l[k + 24]);
    return (((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))) + acc->tail;
}

float ork_vec_dot_f32(const float *a, const float *b, int64_t n)
{
    const struct ork__kern *t = ork__kcur();
    struct ork__dot_acc acc;
    memset(&acc, 0, sizeof acc);
    t->acc_step(&acc, a, b, n);
    return t->acc_end(&acc);
}

int ork_dequant_row(uint32_t type, const void *src, float *dst, int64_t n)
{
    const struct ork__kern *t = ork__kcur();
    if (type == ORK_TYPE_F16 && n >= 0) {
        t->deq_f16(src, dst, n);
        return 0;
    }
    const struct ork__type_kern *tk = ork__tkern(t->isa, type);
    if (tk && tk->deq_block && ork_kernels_check(type, n) == 0) {
        const struct ork_type_traits *tt = ork_type_traits(type);
        const uint8_t *p = src;
        for (int64_t i = 0; i < n / tt->block; i++)
            tk->deq_block(p + (size_t)i * tt->block_bytes, dst + i * tt->block);
        return 0;
    }
    return ork_dequant_row_ref(type, src, dst, n);
}

float ork_vec_dot(uint32_t type, const void *row, const float *x, int64_t n)
{
    if (ork_kernels_check(type, n) < 0)
        return __builtin_nanf("");
    if (type == ORK_TYPE_F32)
        return ork_vec_dot_f32(row, x, n);
    const struct ork__kern *t = ork__kcur();
    const struct ork__type_kern *tk = ork__tkern(t->isa, type);
    struct ork__dot_acc acc;
    memset(&acc, 0, sizeof acc);
    if (tk && tk->dot_fused) {
        tk->dot_fused(type, row, x, n, &acc);
        return t->acc_end(&acc);
    }
    float buf[DOT_CHUNK];
    const uint8_t *p = row;
    for (int64_t off = 0; off < n; off += DOT_CHUNK) {
        int64_t c = n - off < DOT_CHUNK ? n - off : DOT_CHUNK;
        ork_dequant_row(type, p + ork_type_row_bytes(type, (uint64_t)off), buf, c);
        t->acc_step(&acc, buf, x + off, c);
    }
    return t->acc_end(&acc);
}

/* ---- y += a * v (attention's weighted sum of values) ----
 * Per element y[i] = y[i] + a * v[i], the product rounded before the add (never fused), so the
 * SIMD paths give the scalar loop's bits. v is f32 or f16 (widened exactly). */

/* y[i] += a * v[i]: the scalar reference (the SIMD paths' tail is ork__mad_tail). */
static void mad_scalar(float *y, const uint8_t *v, uint32_t type, float a, int64_t n)
{
    ork__mad_tail(y, v, type, a, 0, n);
}

int ork_vec_mad(float *y, const void *v, uint32_t type, float a, int64_t n)
{
    if (type != ORK_TYPE_F32 && type != ORK_TYPE_F16)
        return ork_errorf(ORK_EUNSUPPORTED, "vec_mad: %s values", ork_type_name(type));
    ork__kcur()->mad(y, v, type, a, n);
    return 0;
}

/* ---- several rows at once (attention over a KV cache) ----
 * ork_vec_dot_rows: each row's dot takes exactly the lanes, operations and reduction of
 * ork_vec_dot (a lane's FMA chain does not depend on how wide the register holding it is), so
 * the bits are the same; the x values are loaded once for several rows and several independent
 * FMA chains are in flight. ork_vec_mad_rows: each element of y gets y + a_r * v_r (product
 * rounded, then the add) for r = 0, 1, ... in order, as nr ork_vec_mad calls would, while y
 * stays in registers across the rows. The kernels: the table's kv_dot / kv_mad (x86/kv_rows_avx2.c,
 * x86/kv_rows_avx512.c); without them the one-row kernels are called. */

/* The attention loops (ork_vec_dot_rows, ork_vec_mad_rows over KV runs) read row t while the
 * row ORK_KV_PREFETCH_ROWS ahead is prefetched (kern_priv.h; docs/engine.md "KV cache layout"). */

/* The attention loops for nq (1 or 2) queries x[q] / weight vectors a[q] over the same rows:
 * with kv_queries == 2 the rows are loaded once for both, else the one-query loop runs per
 * query (each query's bits are the same either way). */
static int dot_rows(uint32_t type, const void *rows, size_t row_stride, const float *const *x,
                    int nq, int64_t n, int64_t nr, float *const *out)
{
    if (type != ORK_TYPE_F32 && type != ORK_TYPE_F16)
        return ork_errorf(ORK_EUNSUPPORTED, "vec_dot_rows: %s rows", ork_type_name(type));
    const uint8_t *p = rows;
    size_t sb = row_stride * ork__elt_bytes(type);
    int64_t r = 0;
    const struct ork__kern *t = ork__kcur();
    const int group = t->kv_dot ? t->kv_rows : 0;
    if (group && nq > t->kv_queries) {
        for (int q = 0; q < nq; q++)
            (void)dot_rows(type, rows, row_stride, &x[q], 1, n, nr, &out[q]);
        return 0;
    }
    for (; group && r < nr; r += group) {
        const uint8_t *rp[ORK_KV_ROWS_MAX];
        float o[ORK_KV_QUERIES_MAX][ORK_KV_ROWS_MAX];
        for (int j = 0; j < group; j++)     /* past the last row: repeat it, drop the result */
            rp[j] = p + (size_t)(r + j < nr ? r + j : nr - 1) * sb;
        for (int64_t j = r + ORK_KV_PREFETCH_ROWS; j < r + ORK_KV_PREFETCH_ROWS + group && j < nr;
             j++)
            ork__prefetch_bytes(p + (size_t)j * sb, (size_t)n * ork__elt_bytes(type));
        t->kv_dot(type, rp, x, nq, n, o);
        for (int q = 0; q < nq; q++)
            for (int j = 0; j < group && r + j < nr; j++)
                out[q][r + j] = o[q][j];
    }
    for (int q = 0; q < nq; q++)
        for (int64_t i = r; i < nr; i++)
            out[q][i] = ork_vec_dot(type, p + (size_t)i * sb, x[q], n);
    return 0;
}

static int mad_rows(float *const *y, const void *v, size_t row_stride, uint32_t type,
                    const float *const *a, int nq, int64_t nr, int64_t n)
{
    if (type != ORK_TYPE_F32 && type != ORK_TYPE_F16)
        return ork_errorf(ORK_EUNSUPPORTED, "vec_mad_rows: %s values", ork_type_name(type));
    const uint8_t *p = v;
    size_t sb = row_stride * ork__elt_bytes(type);
    const struct ork__kern *t = ork__kcur();
    if (t->kv_mad) {
        t->kv_mad(y, p, sb, type, a, nq, nr, n);
        return 0;
    }
    for (int q = 0; q < nq; q++)
        for (int64_t r = 0; r < nr; r++)
            ork_vec_mad(y[q], p + (size_t)r * sb, type, a[q][r], n);
    return 0;
}

bool ork__dot16_tile(enum kisa k, uint32_t type, const uint8_t *w, size_t row_bytes, int nw,
                     const float *xr, size_t x_stride, int mx, int64_t n, float *y, size_t ldy)
{
    const struct ork__type_kern *tk = ork__tkern(k, type);
    if (!tk || !tk->dot16_tile || nw < 1 || nw > ORK_DOT16_NW || mx < 1 || mx > ORK_DOT16_MX)
        return false;
    tk->dot16_tile(type, w, row_bytes, nw, xr, x_stride, mx, n, y, ldy);
    return true;
}

int ork_vec_dot_rows(uint32_t type, const void *rows, size_t row_stride, const float *x,
                     int64_t n, int64_t nr, float *out)
{
    return dot_rows(type, rows, row_stride, &x, 1, n, nr, &out);
}

int ork_vec_dot_rows2(uint32_t type, const void *rows, size_t row_stride, const float *const *x,
                      int64_t n, int64_t nr, float *const *out)
{
    return dot_rows(type, rows, row_stride, x, ORK_KV_QUERIES_MAX, n, nr, out);
}

int ork_vec_mad_rows(float *y, const void *v, size_t row_stride, uint32_t type, const float *a,
                     int64_t nr, int64_t n)
{
    return mad_rows(&y, v, row_stride, type, &a, 1, nr, n);
}

int ork_vec_mad_rows2(float *const *y, const void *v, size_t row_stride, uint32_t type,
                      const float *const *a, int64_t nr, int64_t n)
{
    return mad_rows(y, v, row_stride, type, a, ORK_KV_QUERIES_MAX, nr, n);
}

/* ---- activations converted like the weights (ORK_ACT_QUANT) ---- */

/* Q8_0 block: f16 d, int8 q[32] (quant_ref.c). */
#define Q8_BLOCK 32
#define Q8_BYTES 34
#define Q4_0_BYTES 18

int ork_quantize_row_q8_0(const float *x, void *dst, int64_t n)
{
    if (n < 0 || n % Q8_BLOCK)
        return ork_errorf(ORK_EINVAL, "Q8_0 quantization of %lld elements (not a multiple of 32)",
                          (long long)n);
    /* the SIMD quantizers give the scalar block's bytes (gemm_q8.c, test_kernels_gemm) */
    ork__quantize_q8_0(ork__kisa(), x, dst, n);
    return 0;
}

float ork_vec_dot_q8(uint32_t type, const void *row, const void *xq, int64_t n)
{
    if ((type != ORK_TYPE_Q8_0 && type != ORK_TYPE_Q4_0) || n < 0 || n % Q8_BLOCK)
        return __builtin_nanf("");
    struct q8_acc acc;
    memset(&acc, 0, sizeof acc);
    ork__q8_blocks(ork__kisa(), type, row, xq, n / Q8_BLOCK, &acc);
    return ork__q8_end(&acc);
}

/* x rounded to the 16-bit weight type and widened back (the activations F16/BF16 matmuls
 * use); every path gives ork_f32_to_fp16 / ork_f32_to_bf16's bits. */
static void round_act(uint32_t type, const float *x, float *out, int64_t n)
{
    const struct ork__kern *t = ork__kcur();
    int64_t i = t->round_act ? t->round_act(type, x, out, n) : 0;
    if (type == ORK_TYPE_F16)
        for (; i < n; i++)
            out[i] = ork_fp16_to_f32(ork_f32_to_fp16(x[i]));
    else
        for (; i < n; i++)
            out[i] = ork_bf16_to_f32(ork_f32_to_bf16(x[i]));
}

void ork_f32_to_fp16_row(const float *x, uint16_t *dst, int64_t n)
{
    const struct ork__kern *t = ork__kcur();
    int64_t i = t->to_fp16 ? t->to_fp16(x, dst, n) : 0;
    for (; i < n; i++)
        dst[i] = ork_f32_to_fp16(x[i]);
}

void ork__round_act(uint32_t type, const float *x, float *out, int64_t n)
{
    round_act(type, x, out, n);
}

float ork_vec_dot_act(uint32_t type, const void *row, const float *x, int64_t n, enum ork_act act)
{
    if (act != ORK_ACT_QUANT || type == ORK_TYPE_F32)
        return ork_vec_dot(type, row, x, n);
    if (ork_kernels_check(type, n) < 0)
        return __builtin_nanf("");
    const uint8_t *p = row;
    const enum kisa k = ork__kisa();
    if (type == ORK_TYPE_Q8_0 || type == ORK_TYPE_Q4_0) {
        uint8_t xq[DOT_CHUNK / Q8_BLOCK * Q8_BYTES];
        struct q8_acc acc;
        memset(&acc, 0, sizeof acc);
        for (int64_t off = 0; off < n; off += DOT_CHUNK) {
            int64_t c = n - off < DOT_CHUNK ? n - off : DOT_CHUNK;
            ork_quantize_row_q8_0(x + off, xq, c);
            const uint8_t *wc = p + ork_type_row_bytes(type, (uint64_t)off);
            ork__q8_blocks(k, type, wc, xq, c / Q8_BLOCK, &acc);
        }
        return ork__q8_end(&acc);
    }
    if (type == ORK_TYPE_Q4_K || type == ORK_TYPE_Q6_K) {
        uint8_t xq[DOT_CHUNK / ORK_Q8_K_BLOCK * ORK_Q8_K_BYTES];
        float sum = 0.0f;
        for (int64_t off = 0; off < n; off += DOT_CHUNK) {
            int64_t c = n - off < DOT_CHUNK ? n - off : DOT_CHUNK;
            ork_quantize_row_q8_k(x + off, xq, c);
            const uint8_t *wc = p + ork_type_row_bytes(type, (uint64_t)off);
            ork__q8k_blocks(k, type, wc, xq, c / ORK_Q8_K_BLOCK, &sum);
        }
        return sum;
    }
    /* F16, BF16: dequantized row times rounded x, the same accumulator as ork_vec_dot_f32 */
    const struct ork__kern *t = ork__kern(k);
    struct ork__dot_acc acc;
    memset(&acc, 0, sizeof acc);
    float wb[DOT_CHUNK], xb[DOT_CHUNK];
    for (int64_t off = 0; off < n; off += DOT_CHUNK) {
        int64_t c = n - off < DOT_CHUNK ? n - off : DOT_CHUNK;
        ork_dequant_row(type, p + ork_type_row_bytes(type, (uint64_t)off), wb, c);
        round_act(type, x + off, xb, c);
        t->acc_step(&acc, wb, xb, c);
    }
    return t->acc_end(&acc);
}

void ork__fill_dot_scalar(struct ork__kern *t)
{
    t->acc_step = acc_step_scalar;
    t->acc_end = acc_end_scalar;
    t->deq_f16 = deq_f16_scalar;
    t->mad = mad_scalar;
}
