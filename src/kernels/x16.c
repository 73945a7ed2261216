/* x16.c -- Q8_0 / Q4_0 / Q4_K matrices with their rows interleaved by 16 (ORK_LAYOUT_X16): the
 * layout, packing a matrix into it in place, reading one row back in the GGUF layout, and for
 * Q8_0 / Q4_0 the X form their kernels read and those kernels (AVX-512 VNNI: decode streams and
 * the M > 1 tiles); the entry points also run the AVX2 kernels (x16a.c, x16ka.c) and the Q4_K
 * ones (x16k.c). Not here: the thread split (matmul.c) or the plain-row kernels (gemm_q8.c,
 * qdot.c).
 *
 * Why: a plain Q8_0 / Q4_0 row keeps one block's 32 quants together, so a 512-bit dot product
 * holds two blocks of one row, and every block needs its own scale widened and its partials
 * reduced across lanes. Decoding Q4_0 that way costs about 17 instructions per 36 bytes of
 * weights, which is slower than this machine's memory (docs/kernels.md "Interleaved weights").
 * With 16 rows interleaved, lane i of every vector is row i: one 32-byte load and one convert
 * widen the scales of 16 rows, each dot-product instruction feeds 16 rows, and nothing is
 * reduced across lanes.
 *
 * Layout. A group is 16 consecutive rows (16 * row_bytes bytes, where the rows were); block b of
 * the group (bytes b * 16 * block_bytes onward) holds block b of all 16 rows:
 *   d[16]        f16 scales, row i's at 2i (32 bytes);
 *   Q8_0: 8 chunks of 64 bytes: chunk c holds, in bytes 4i..4i+3, row i's quants 4c..4c+3 as
 *         u8 (q + 128, the unsigned operand of vpdpbusd);
 *   Q4_0: 4 chunks of 64 bytes: chunk c holds, in bytes 4i..4i+3, row i's quant bytes 4c..4c+3
 *         unchanged (low nibbles: elements 4c..4c+3, high nibbles: elements 16 + 4c ..).
 *   Q4_K: f16 dmin[16], then its scale bytes and quant bytes in 64-byte chunks of words the
 *         same way (x16k.c; x16_types below cuts every type's blocks).
 * Same bytes per block as the plain layout (16 * 34 = 32 + 512, 16 * 18 = 32 + 256,
 * 16 * 144 = 64 + 192 + 2048).
 *
 * X form (XF_X16, ork__x16_xprep): per block ORK_X16_XBLOCK (48) bytes: q[32] int8 (the Q8_0
 * quants of ork_quantize_row_q8_0), f32 d, int32 -128 * sum(q), 8 bytes of zeros. The sum is
 * the exact correction for the weights' u8 offset: sum (w + 128) x - 128 sum x. Q4_0 (nibbles
 * n = w + 8) takes it too: its chain starts from it, takes the high nibbles in place
 * (byte & 0xf0 = 16 n) to 16 (sum n_hi x_hi - 8 sum(q)), is shifted right by 4 (exact), then
 * takes the low nibbles (byte & 0x0f): the block's integer dot sum (n - 8) x.
 *
 * Arithmetic: per row, block by block in order, acc = fmaf((float)isum_b, d_w * d_x, acc) with
 * isum_b the exact integer dot of the block (|isum| <= 32 * 128 * 127 < 2^24, exact in f32).
 * That is a plain loop over the blocks, not the 16-lane order of the row-layout kernels
 * (kern_priv.h struct q8_acc): results differ from theirs by the f32 rounding of the sum
 * (tests/unit/test_kernels_x16.c bounds it). */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <ork/error.h>
#include <ork/alloc.h>
#include <ork-kernels/kernels.h>

#include "kern_priv.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define X16_X86 1
#include <immintrin.h>
#endif

#define Q8_0_BLOCK 32
#define Q8_0_BYTES 34
#define Q4_0_BYTES 18
#define Q4_K_BYTES 144
#define X16_D_BYTES 32          /* a block's 16 f16 scales */
#define X16_CHUNK 64            /* one vector of quants: 4 bytes of each of 16 rows */
#define X16_U8_OFFSET 128       /* Q8_0 quants stored as q + 128 */
#define X16_U8_FLIP_BYTE 0x80   /* ... = q xor 0x80 */
_Static_assert(ORK_X16_STREAMS <= ORK_X16_STREAMS_MAX && ORK_X16K_STREAMS <= ORK_X16_STREAMS_MAX &&
                   ORK_X16_STREAMS_MAX <= ORK_WSTREAMS_MAX,
               "the decode spans (matmul.c) hold ORK_WSTREAMS_MAX streams");
/* Largest row handled by the packer (bytes of one plain row): its group buffer is 16 rows. */
#define X16_ROW_BYTES_MAX (64u << 10)

/* How the layout cuts one block of a row: `count` pieces of `size` bytes from byte `off` of
 * the block (Q8_0 quants flipped to u8). A group's block holds the fields in order, each
 * piece as row 0's, row 1's, ... row 15's (16 * size bytes). */
struct x16_field {
    uint8_t off, size, count;
    bool flip;
};

struct x16_type {
    uint32_t type;
    size_t bytes;               /* bytes per block of one row */
    int n_fields;
    struct x16_field f[4];
};

static const struct x16_type x16_types[] = {
    { ORK_TYPE_Q8_0, Q8_0_BYTES, 2, { { 0, 2, 1, false }, { 2, 4, 8, true } } },
    { ORK_TYPE_Q4_0, Q4_0_BYTES, 2, { { 0, 2, 1, false }, { 2, 4, 4, false } } },
    /* d, dmin, scales[12] as 3 words, qs[128] as 32 words (x16k.c) */
    { ORK_TYPE_Q4_K, Q4_K_BYTES, 4,
      { { 0, 2, 1, false }, { 2, 2, 1, false }, { 4, 4, 3, false }, { 16, 4, 32, false } } },
};

static const struct x16_type *x16_type_of(uint32_t type)
{
    for (size_t i = 0; i < sizeof x16_types / sizeof x16_types[0]; i++)
        if (x16_types[i].type == type)
            return &x16_types[i];
    return NULL;
}

/* ---- layout ---------------------------------------------------------------------------------- */

/* Moves one piece between a plain row (r) and a group (g), either way (to_group), flipping
 * Q8_0 quants (xor is its own inverse). */
static inline void move_piece(uint8_t *to, const uint8_t *from, size_t size, bool flip)
{
    memcpy(to, from, size);
    if (flip)
        for (size_t e = 0; e < size; e++)
            to[e] ^= X16_U8_FLIP_BYTE;
}

/* Plain rows r0 .. r0 + 15 (src, row_bytes apart: whole blocks) into one interleaved group at
 * dst, or (when !to_group) row `only` of the group at src back into its plain bytes at dst. */
static void x16_move(const struct x16_type *t, bool to_group, const uint8_t *src,
                     size_t row_bytes, int only, uint8_t *dst)
{
    size_t at = 0;      /* the group's byte being filled or read */
    for (size_t blk = 0; blk < row_bytes; blk += t->bytes)
        for (int fi = 0; fi < t->n_fields; fi++) {
            const struct x16_field *f = &t->f[fi];
            for (int n = 0; n < f->count; n++, at += ORK_X16_ROWS * f->size) {
                size_t in_row = blk + f->off + (size_t)n * f->size;
                if (to_group)
                    for (int i = 0; i < ORK_X16_ROWS; i++)
                        move_piece(dst + at + (size_t)i * f->size,
                                   src + (size_t)i * row_bytes + in_row, f->size, f->flip);
                else
                    move_piece(dst + in_row, src + at + (size_t)only * f->size, f->size,
                               f->flip);
            }
        }
}

const uint8_t *ork__mat_row(const struct ork_mat *w, int64_t r, uint8_t *buf)
{
    const uint8_t *base = w->data;
    if (w->layout != ORK_LAYOUT_X16)
        return base + (size_t)r * w->row_bytes;
    const struct x16_type *t = x16_type_of(w->type);    /* ork__x16_check: one of them */
    const int64_t i = r % ORK_X16_ROWS;
    x16_move(t, false, base + (size_t)(r - i) * w->row_bytes, w->row_bytes, (int)i, buf);
    return buf;
}

/* Why w cannot take the interleaved layout, or NULL when it can (the kernels aside). */
static const char *x16_unfit(const struct ork_mat *w)
{
    if (!x16_type_of(w->type))
        return "only Q8_0, Q4_0 and Q4_K matrices can be interleaved";
    if (w->n_rows <= 0 || w->n_rows % ORK_X16_ROWS)
        return "the row count is not a multiple of 16";
    if (w->n_cols <= 0 || w->row_bytes != ork_type_row_bytes(w->type, (uint64_t)w->n_cols))
        return "the rows are strided (row_bytes is not the row's size)";
    if (w->row_bytes > X16_ROW_BYTES_MAX)
        return "the rows are longer than 64 KiB";
    return NULL;
}

/* 0 when w fits the interleaved layout, else error `code` saying what (after `what`). */
static int x16_fit_error(const struct ork_mat *w, int code, const char *what)
{
    const char *why = x16_unfit(w);
    if (!why)
        return 0;
    return ork_errorf(code, "%s%s matrix %lld x %lld: %s", what, ork_type_name(w->type),
                      (long long)w->n_rows, (long long)w->n_cols, why);
}

int ork__x16_check(const struct ork_mat *w)
{
    if (w->layout == ORK_LAYOUT_ROWS)
        return 0;
    if (w->layout != ORK_LAYOUT_X16)
        return ork_errorf(ORK_EINVAL, "matrix with unknown layout %u", w->layout);
    return x16_fit_error(w, ORK_EINVAL, "interleaved ");
}

bool ork_mat_x16_wanted(const struct ork_mat *w)
{
    return w && w->data && w->layout == ORK_LAYOUT_ROWS && !x16_unfit(w) &&
           ork__x16_ok(ork__kisa(), w->type);
}

int ork_mat_x16_pack(struct ork_mat *w)
{
    if (!w || !w->data)
        return ork_errorf(ORK_EINVAL, "interleave: matrix without data");
    if (w->layout == ORK_LAYOUT_X16)
        return ork_errorf(ORK_EINVAL, "interleave: the matrix is interleaved already");
    if (w->layout != ORK_LAYOUT_ROWS)
        return ork_errorf(ORK_EINVAL, "interleave: matrix with unknown layout %u", w->layout);
    int ret = x16_fit_error(w, ORK_EUNSUPPORTED, "interleave: ");
    if (ret < 0)
        return ret;
    const size_t gbytes = ORK_X16_ROWS * w->row_bytes;
    uint8_t *tmp = ork_malloc(gbytes);
    if (!tmp)
        return ork_errorf(ORK_ENOMEM, "interleave: cannot allocate %zu bytes", gbytes);
    uint8_t *data = (uint8_t *)(uintptr_t)w->data;     /* writable: the caller's promise */
    const struct x16_type *t = x16_type_of(w->type);
    for (int64_t g = 0; g < w->n_rows / ORK_X16_ROWS; g++) {
        uint8_t *grp = data + (size_t)g * gbytes;
        memcpy(tmp, grp, gbytes);
        x16_move(t, true, tmp, w->row_bytes, 0, grp);
    }
    ork_free(tmp);
    w->layout = ORK_LAYOUT_X16;
    return 0;
}

/* ---- X form ---------------------------------------------------------------------------------- */

size_t ork__x16_xrow_bytes(int64_t k)
{
    return (size_t)(k / Q8_0_BLOCK) * ORK_X16_XBLOCK;
}

/* Blocks quantized per call of ork__quantize_q8_0_sums (their scales and sums on the stack). */
#define X16_PREP_BLOCKS 16

/* The quants written in place; then per block d, the -128 sum bias and the zeros. The decode
 * thread prepares X while the other threads wait, so this is on the token's critical path: one
 * fused AVX-512 pass instead of Q8_0 blocks widened by scalar code took the X preparation of a
 * Qwen3-1.7B-shaped Q4_0 decode from 0.21 to 0.13 ms per token (113 calls, K = 2048 and
 * 6144; TSC-timed in ork bench tg128 at two threads). */
void ork__x16_xprep(enum kisa k, const float *x, int64_t n, uint8_t *dst)
{
    float d[X16_PREP_BLOCKS];
    int32_t sum[X16_PREP_BLOCKS];
    for (int64_t b0 = 0; b0 < n / Q8_0_BLOCK; b0 += X16_PREP_BLOCKS) {
        int64_t nb = n / Q8_0_BLOCK - b0 < X16_PREP_BLOCKS ? n / Q8_0_BLOCK - b0 : X16_PREP_BLOCKS;
        uint8_t *o = dst + (size_t)b0 * ORK_X16_XBLOCK;
        ork__quantize_q8_0_sums(k, x + b0 * Q8_0_BLOCK, nb, o, ORK_X16_XBLOCK, d, sum);
        for (int64_t b = 0; b < nb; b++) {
            uint8_t *ob = o + (size_t)b * ORK_X16_XBLOCK;
            int32_t bias = -X16_U8_OFFSET * sum[b];
            memcpy(ob + ORK_X16_XD, &d[b], 4);
            memcpy(ob + ORK_X16_XB, &bias, 4);
            memset(ob + ORK_X16_XB + 4, 0, ORK_X16_XBLOCK - ORK_X16_XB - 4);
        }
    }
}

/* ---- kernels --------------------------------------------------------------------------------- */

#ifdef X16_X86

static inline int32_t ld32(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* How far ahead of each group's block decode (mx = 1) prefetches into L1. Measured with
 * `tools/kern_probe chain TYPE 2` with a second kernel set in the same binary (each rep timed
 * both ways, medians of per-rep ratios; docs/kernels.md): Q4_0 1 KiB ahead 1.01-1.13x faster
 * over half an hour's minutes, 768 bytes 1.03x, 1.25-1.5 KiB 1.07-1.09x, 2 KiB 1.04-1.06x,
 * 256-512 bytes 0.97-0.98x, 4-16 KiB 0.85-0.95x (the four streams' lines then crowd L1);
 * into L2 only (T1) 0.96-0.97x. Q8_0 1 KiB mostly 1.01-1.04x. */
#define X16_PF_BYTES 1024
#define X16_LINE 64

/* Accumulators of one kernel call: ng x mx <= 5 for every kernel below (up to five groups
 * against one X row, or one group against up to four). */
#define X16_ACC_MAX 5
_Static_assert(ORK_X16_STREAMS_MAX <= X16_ACC_MAX && ORK_X16_MX <= X16_ACC_MAX,
               "x16_core keeps ng x mx accumulators in X16_ACC_MAX variables");

/* *a[u] += f * sc, with u constant once inlined: a[] points at x16_core's accumulators, which
 * stay separate variables rather than an array (GCC 12 stored each array element once per
 * block; as variables the decode loop has no stores and Q4_0 decode from DRAM ran 1.00-1.02x
 * faster, measured as for dpbusd_bcast). */
ORK_TGT_X16 static inline __attribute__((always_inline)) void
acc_fma(int u, __m512 f, __m512 sc, __m512 *const *a)
{
    *a[u] = _mm512_fmadd_ps(f, sc, *a[u]);
}

/* Block b of one group (its bytes at wb) against mx X rows (the block's X at xb, xstride
 * apart): into accumulators s * mx + t. Decode (mx = 1) first prefetches the group's stream
 * X16_PF_BYTES ahead. */
ORK_TGT_X16 static inline __attribute__((always_inline)) void
x16_block(bool q8, int s, int mx, const uint8_t *wb, const uint8_t *xb, size_t xstride,
          __m512i lo, __m512i hi, __m512 *const *a)
{
    const size_t gb = ORK_X16_ROWS * (q8 ? Q8_0_BYTES : Q4_0_BYTES);
    if (mx == 1)
        for (size_t o = 0; o < gb; o += X16_LINE)
            _mm_prefetch((const char *)wb + X16_PF_BYTES + o, _MM_HINT_T0);
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)wb));
    __m512i wv[8];
    if (q8) {
        for (int c = 0; c < 8; c++)
            wv[c] = _mm512_loadu_si512(wb + X16_D_BYTES + c * X16_CHUNK);
    } else {
        for (int c = 0; c < 4; c++) {
            const uint8_t *q = wb + X16_D_BYTES + c * X16_CHUNK;
            wv[c] = ork__and_mem(q, lo);         /* elements 4c .. */
            wv[c + 4] = ork__and_mem(q, hi);     /* 16 x elements 16 + 4c .. */
        }
    }
    for (int t = 0; t < mx; t++) {
        const uint8_t *x = xb + (size_t)t * xstride;
        __m512i i0 = _mm512_set1_epi32(ld32(x + ORK_X16_XB));
        if (q8) {           /* one chain from the bias */
            for (int c = 0; c < 8; c++)
                i0 = ork__dpbusd_bcast(i0, wv[c], x + 4 * c);
        } else {            /* the high nibbles from the bias, shifted, the low */
            for (int c = 4; c < 8; c++)
                i0 = ork__dpbusd_bcast(i0, wv[c], x + 4 * c);
            i0 = _mm512_srai_epi32(i0, ORK_NIB_HI_SHIFT);
            for (int c = 0; c < 4; c++)
                i0 = ork__dpbusd_bcast(i0, wv[c], x + 4 * c);
        }
        float dx;
        memcpy(&dx, x + ORK_X16_XD, 4);
        acc_fma(s * mx + t, _mm512_cvtepi32_ps(i0), _mm512_mul_ps(dw, _mm512_set1_ps(dx)), a);
    }
}

/* Blocks per group the loop takes before moving to the next group: two, so the loop's address
 * and counter arithmetic is paid once per two blocks (227 instead of 2 x 118 instructions per
 * step of the four-group Q4_0 decode kernel). Measured in the real decode with the two loops
 * as two kernel sets of one binary, chosen per token (medians of the pairs' time ratios,
 * Qwen3-1.7B shape, tg128 at two threads): Q8_0 1.008-1.015x faster, Q4_0 0.99-1.01x (either
 * way in different minutes; 1.007-1.014x in an earlier build); taking both groups' first blocks
 * and then their second ones instead: Q4_0 0.969-0.977x. */
#define X16_UNROLL 2

/* ng groups (g[s] at block 0) x mx X rows (xs, xstride apart): blocks 0 .. nb-1 into acc[s * mx
 * + t] (lane i: row i of group s against X row t), each accumulator's blocks in order. Inlined
 * with constant ng and mx. */
ORK_TGT_X16 static inline __attribute__((always_inline)) void
x16_core(bool q8, int ng, int mx, const uint8_t *const *g, const uint8_t *xs, size_t xstride,
         int64_t nb, __m512 *acc)
{
    const size_t gb = ORK_X16_ROWS * (q8 ? Q8_0_BYTES : Q4_0_BYTES);
    const __m512i lo = _mm512_set1_epi8(ORK_NIB_LO), hi = _mm512_set1_epi8((char)ORK_NIB_HI);
    const int na = ng * mx;
    __m512 a0 = acc[0], a1 = _mm512_setzero_ps(), a2 = a1, a3 = a1, a4 = a1;
    __m512 *const a[X16_ACC_MAX] = { &a0, &a1, &a2, &a3, &a4 };
#pragma GCC unroll 4
    for (int i = 1; i < na; i++)
        *a[i] = acc[i];
    /* the groups' and X's pointers stepped once per X16_UNROLL blocks (fewer instructions than
     * indexing them by b); the loops unrolled whole (GCC 12 otherwise kept a loop over s and
     * picked the accumulator by branches) */
    const uint8_t *p[ORK_X16_STREAMS_MAX] = { g[0] };
#pragma GCC unroll 5
    for (int s = 1; s < ng; s++)
        p[s] = g[s];
    const uint8_t *x = xs;
    int64_t b = 0;
    for (; b + X16_UNROLL <= nb; b += X16_UNROLL, x += X16_UNROLL * ORK_X16_XBLOCK) {
#pragma GCC unroll 5
        for (int s = 0; s < ng; s++) {
#pragma GCC unroll 2
            for (int u = 0; u < X16_UNROLL; u++)
                x16_block(q8, s, mx, p[s] + (size_t)u * gb, x + (size_t)u * ORK_X16_XBLOCK,
                          xstride, lo, hi, a);
            p[s] += X16_UNROLL * gb;
        }
    }
    for (; b < nb; b++, x += ORK_X16_XBLOCK)
#pragma GCC unroll 5
        for (int s = 0; s < ng; s++) {
            x16_block(q8, s, mx, p[s], x, xstride, lo, hi, a);
            p[s] += gb;
        }
#pragma GCC unroll 5
    for (int i = 0; i < na; i++)
        acc[i] = *a[i];
}

/* One specialization per (type, ng, mx): the core with constant counts, stores 16 lanes per
 * output row (out[s] + t * ldo). */
#define X16_KERNEL(NAME, Q8, NG, MX)                                                            \
    _Static_assert((NG) * (MX) <= X16_ACC_MAX, "too many accumulators for x16_core");         \
    ORK_X16_KERNEL(NAME, ORK_TGT_X16, x16_core(Q8, NG, MX, g, xs, xstride, nb, acc), NG, MX)

X16_KERNEL(x16_q8_g1m1, true, 1, 1)
X16_KERNEL(x16_q8_g2m1, true, 2, 1)
X16_KERNEL(x16_q8_g3m1, true, 3, 1)
X16_KERNEL(x16_q8_g4m1, true, 4, 1)
X16_KERNEL(x16_q8_g5m1, true, 5, 1)
X16_KERNEL(x16_q8_g1m2, true, 1, 2)
X16_KERNEL(x16_q8_g1m3, true, 1, 3)
X16_KERNEL(x16_q8_g1m4, true, 1, 4)
X16_KERNEL(x16_q4_g1m1, false, 1, 1)
X16_KERNEL(x16_q4_g2m1, false, 2, 1)
X16_KERNEL(x16_q4_g3m1, false, 3, 1)
X16_KERNEL(x16_q4_g4m1, false, 4, 1)
X16_KERNEL(x16_q4_g5m1, false, 5, 1)
X16_KERNEL(x16_q4_g1m2, false, 1, 2)
X16_KERNEL(x16_q4_g1m3, false, 1, 3)
X16_KERNEL(x16_q4_g1m4, false, 1, 4)

/* [q8][ng - 1] with mx = 1, and [q8][mx - 1] with ng = 1 */
static const ork__x16_fn x16_streams_fn[2][ORK_X16_STREAMS_MAX] = {
    { x16_q4_g1m1, x16_q4_g2m1, x16_q4_g3m1, x16_q4_g4m1, x16_q4_g5m1 },
    { x16_q8_g1m1, x16_q8_g2m1, x16_q8_g3m1, x16_q8_g4m1, x16_q8_g5m1 },
};
static const ork__x16_fn x16_tile_fn[2][ORK_X16_MX] = {
    { x16_q4_g1m1, x16_q4_g1m2, x16_q4_g1m3, x16_q4_g1m4 },
    { x16_q8_g1m1, x16_q8_g1m2, x16_q8_g1m3, x16_q8_g1m4 },
};

/* Path k's kernel of an interleaved type reading n groups side by side (tile: one group, n X
 * rows); ork__x16_ok(k, type) holds. */
static ork__x16_fn x16_fn_of(enum kisa k, uint32_t type, bool tile, int n)
{
    if (k != KISA_AVX512VNNI)
        return type == ORK_TYPE_Q4_K ? ork__x16ka_fn(tile, n)
                                     : ork__x16a_fn(type == ORK_TYPE_Q8_0, tile, n);
    if (type == ORK_TYPE_Q4_K)
        return ork__x16k_fn(tile, n);
    if (tile)
        return x16_tile_fn[type == ORK_TYPE_Q8_0][n - 1];
    return x16_streams_fn[type == ORK_TYPE_Q8_0][n - 1];
}
#endif

bool ork__x16_ok(enum kisa k, uint32_t type)
{
#ifdef X16_X86
    switch (type) {
    case ORK_TYPE_Q8_0:
    case ORK_TYPE_Q4_0:
    case ORK_TYPE_Q4_K: return k == KISA_AVX2 || k == KISA_AVXVNNI || k == KISA_AVX512VNNI;
    default: return false;
    }
#else
    (void)k, (void)type;
    return false;
#endif
}

int ork__x16_streams_width(enum kisa k, uint32_t type)
{
    if (!ork__x16_ok(k, type))
        return 0;
    return type == ORK_TYPE_Q4_K ? ORK_X16K_STREAMS : ORK_X16_STREAMS;
}

/* X rows of one M > 1 pass that stay in L2 while every group of the item meets them: 512 KiB
 * (half of a Zen 4/5 core's L2, 1/4 of an A76 cluster's L3 slice), at least one tile. */
#define X16_L2_X_BYTES (512u << 10)

bool ork__x16_streams(enum kisa k, uint32_t type, const struct ork__wstream *s, int ns,
                      size_t row_bytes, const uint8_t *xs)
{
#ifdef X16_X86
    const struct x16_type *tt = x16_type_of(type);
    if (!tt || ns < 1 || ns > ork__x16_streams_width(k, type))
        return false;
    const size_t gbytes = ORK_X16_ROWS * row_bytes;
    const int64_t nb = (int64_t)(row_bytes / tt->bytes);
    int64_t passes = 0;
    for (int t = 0; t < ns; t++)
        passes = s[t].n / ORK_X16_ROWS > passes ? s[t].n / ORK_X16_ROWS : passes;
    /* the kernels prefetch X16_PF_BYTES ahead of each block, so a stream's first bytes are
     * asked for here: a call that starts a span (the first of a run, or after a steal) has no
     * call before it that prefetched past its end. Q4_0 decode at two threads, the real decode
     * with and without on alternate tokens: 1.003-1.004x faster in three runs (the X form
     * prefetched too: 1.00x). The Q4_K kernels and the AVX2 ones (x16a.c) do not prefetch. */
    if (type != ORK_TYPE_Q4_K && k == KISA_AVX512VNNI)
        for (size_t o = 0; o < X16_PF_BYTES; o += X16_LINE)
            for (int t = 0; t < ns; t++)
                _mm_prefetch((const char *)s[t].w + o, _MM_HINT_T0);
    for (int64_t r = 0; r < passes; r++) {
        const uint8_t *g[ORK_X16_STREAMS_MAX];
        float *out[ORK_X16_STREAMS_MAX];
        int n = 0;
        for (int t = 0; t < ns; t++)
            if (r < s[t].n / ORK_X16_ROWS) {
                g[n] = s[t].w + (size_t)r * gbytes;
                out[n++] = s[t].out + r * ORK_X16_ROWS;
            }
        x16_fn_of(k, type, false, n)(g, xs, 0, nb, out, 0);
    }
    return true;
#else
    (void)k, (void)type, (void)s, (void)ns, (void)row_bytes, (void)xs;
    return false;
#endif
}

bool ork__x16_gemm(enum kisa k, uint32_t type, const uint8_t *w, size_t row_bytes, int64_t nr,
                   const uint8_t *xs, size_t xrow, int64_t m, float *y, int64_t ldy)
{
#ifdef X16_X86
    const struct x16_type *tt = x16_type_of(type);
    if (!ork__x16_ok(k, type))
        return false;
    const size_t gbytes = ORK_X16_ROWS * row_bytes;
    const int64_t nb = (int64_t)(row_bytes / tt->bytes);
    if (m == 1) {
        /* decode: the rows as the type's streams of whole groups read side by side (a
         * group starts where its first row was) */
        struct ork__wstream s[ORK_X16_STREAMS_MAX];
        int ns = ork__wstreams_split(w, row_bytes, nr, ORK_X16_ROWS,
                                     ork__x16_streams_width(k, type), y, s);
        return ork__x16_streams(k, type, s, ns, row_bytes, xs);
    }
    int64_t chunk = xrow ? (int64_t)(X16_L2_X_BYTES / xrow) / ORK_X16_MX * ORK_X16_MX : ORK_X16_MX;
    chunk = chunk < ORK_X16_MX ? ORK_X16_MX : chunk;
    for (int64_t m0 = 0; m0 < m; m0 += chunk) {
        const int64_t mc = m - m0 < chunk ? m - m0 : chunk;
        for (int64_t r = 0; r < nr; r += ORK_X16_ROWS) {
            const uint8_t *g = w + (size_t)(r / ORK_X16_ROWS) * gbytes;
            for (int64_t t = 0; t < mc; t += ORK_X16_MX) {
                int mx = mc - t < ORK_X16_MX ? (int)(mc - t) : ORK_X16_MX;
                float *o = y + (m0 + t) * ldy + r;
                x16_fn_of(k, type, true, mx)(&g, xs + (size_t)(m0 + t) * xrow, xrow, nb, &o,
                                          (size_t)ldy);
            }
        }
    }
    return true;
#else
    (void)k, (void)type, (void)w, (void)row_bytes, (void)nr, (void)xs, (void)xrow, (void)m,
        (void)y, (void)ldy;
    return false;
#endif
}
