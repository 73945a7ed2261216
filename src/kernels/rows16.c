/* rows16.c -- Q8_0 / Q4_0 / Q4_K / Q6_K matrices with their rows interleaved by 16
 * (ORK_LAYOUT_X16): the layout, packing a matrix into it in place, reading one row back in the
 * GGUF layout, the X forms their kernels read (Q8_0 / Q4_0, and Q4_K for Q4_K and Q6_K), and the
 * decode / GEMM drivers that call the path's kernels through the table:
 * x86/rows16_q8_0_q4_0_avx512.c, x86/rows16_q8_0_q4_0_avx2.c, x86/rows16_q4_k_avx512.c,
 * x86/rows16_q4_k_avx2.c, arm/rows16_q8_0_q4_0_neon.c, arm/rows16_q4_k_neon.c and
 * arm/rows16_q6_k_neon.c (the `neon-dotprod` path; Q6_K has no x86 kernels, so x86 keeps Q6_K
 * rows as they are). Not here: the Q6_K layout's packing (rows16_q6_k.c), the thread split
 * (matmul.c) or the plain-row kernels (gemm_q8_*.c, qdot*.c).
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
 *   Q8_0: 8 chunks of 64 bytes: chunk c holds, in bytes 4i..4i+3, row i's quants 4c..4c+3:
 *         on x86-64 as u8 (q + 128, the unsigned operand of vpdpbusd), on AArch64 unchanged
 *         (sdot multiplies signed by signed);
 *   Q4_0: 4 chunks of 64 bytes: chunk c holds, in bytes 4i..4i+3, row i's quant bytes 4c..4c+3
 *         (low nibbles: elements 4c..4c+3, high nibbles: elements 16 + 4c ..): on x86-64
 *         unchanged, on AArch64 xor 0x88 (X16_Q4_0_XOR below).
 *   Q4_K: f16 dmin[16], then its scale bytes and quant bytes in 64-byte chunks of words the
 *         same way (rows16_q4_k_*.c; x16_types below cuts every type's blocks).
 *   Q6_K: f16 d[16], the int8 scales in 4 chunks of words, the 6-bit values re-encoded so
 *         that six bit operations make sdot's operands (rows16_q6_k.h); it takes the Q4_K X
 *         form.
 * Same bytes per block as the plain layout (16 * 34 = 32 + 512, 16 * 18 = 32 + 256,
 * 16 * 144 = 64 + 192 + 2048, 16 * 210 = 32 + 256 + 3072).
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
#include "qk_block.h"
#include "rows16_q6_k.h"


#define X16_D_BYTES 32          /* a block's 16 f16 scales */
#define X16_CHUNK 64            /* one vector of quants: 4 bytes of each of 16 rows */
#define X16_U8_OFFSET 128       /* the X form's bias: -128 x sum(q) (x86 Q8_0 weights are q + 128) */
/* Each quant byte as the build's kernels read it: packing xors it in, reading back xors it out.
 * x86-64: Q8_0 q + 128 = q xor 0x80 (vpdpbusd's unsigned operand), Q4_0 unchanged. AArch64:
 * Q8_0 unchanged (sdot is signed x signed; the flip would cost an eor per 16 bytes), Q4_0 xor
 * 0x88: each nibble n becomes n xor 8, whose 4-bit two's complement value is n - 8, so one shift
 * (low nibble) or one mask (high nibble) gives sdot the byte 16 (n - 8) and the block needs no
 * offset term (arm/rows16_q8_0_q4_0_neon.c). The layout lives in memory only (packed at load),
 * never in a file, so the two conventions never meet. */
#ifdef ORK_KERN_ARM
#define X16_Q8_0_XOR 0x00
#define X16_Q4_0_XOR 0x88
#else
#define X16_Q8_0_XOR 0x80
#define X16_Q4_0_XOR 0x00
#endif
_Static_assert(ORK_X16_STREAMS <= ORK_X16_STREAMS_MAX && ORK_X16K_STREAMS <= ORK_X16_STREAMS_MAX &&
                   ORK_X16_STREAMS_MAX <= ORK_WSTREAMS_MAX,
               "the decode spans (matmul.c) hold ORK_WSTREAMS_MAX streams");
/* Largest row handled by the packer (bytes of one plain row): its group buffer is 16 rows. */
#define X16_ROW_BYTES_MAX (64u << 10)

/* How the layout cuts one block of a row: `count` pieces of `size` bytes from byte `off` of
 * the block, each byte xor `mask` (the quants: X16_*_XOR). A group's block holds the fields in order, each
 * piece as row 0's, row 1's, ... row 15's (16 * size bytes). */
struct x16_field {
    uint8_t off, size, count;
    uint8_t mask;
};

struct x16_type {
    uint32_t type;
    size_t bytes;               /* bytes per block of one row */
    int n_fields;
    struct x16_field f[4];
    /* a layout that is not cut into byte pieces (Q6_K: rows16_q6_k.c re-encodes its quants):
     * 16 plain rows into one group, and row i of a group back (NULL: the fields above) */
    void (*pack)(const uint8_t *src, size_t row_bytes, uint8_t *dst);
    void (*row)(const uint8_t *grp, size_t row_bytes, int i, uint8_t *dst);
};

static const struct x16_type x16_types[] = {
    { ORK_TYPE_Q8_0, Q8_0_BYTES, 2, { { 0, 2, 1, 0 }, { 2, 4, 8, X16_Q8_0_XOR } }, NULL, NULL },
    { ORK_TYPE_Q4_0, Q4_0_BYTES, 2, { { 0, 2, 1, 0 }, { 2, 4, 4, X16_Q4_0_XOR } }, NULL, NULL },
    /* d, dmin, scales[12] as 3 words, qs[128] as 32 words (rows16_q4_k_*.c) */
    { ORK_TYPE_Q4_K, Q4_K_BYTES, 4,
      { { 0, 2, 1, 0 }, { 2, 2, 1, 0 }, { 4, 4, 3, 0 }, { 16, 4, 32, 0 } }, NULL, NULL },
    /* d, the scales as 4 words, the 6-bit values re-encoded (rows16_q6_k.h) */
    { ORK_TYPE_Q6_K, Q6_K_BYTES, 0, { { 0, 0, 0, 0 } }, ork__x16q6_pack, ork__x16q6_row },
};

static const struct x16_type *x16_type_of(uint32_t type)
{
    for (size_t i = 0; i < sizeof x16_types / sizeof x16_types[0]; i++)
        if (x16_types[i].type == type)
            return &x16_types[i];
    return NULL;
}

/* ---- layout ---------------------------------------------------------------------------------- */

/* Moves one piece between a plain row (r) and a group (g), either way (to_group), each byte
 * xor mask (xor is its own inverse). */
static inline void move_piece(uint8_t *to, const uint8_t *from, size_t size, uint8_t mask)
{
    memcpy(to, from, size);
    if (mask)
        for (size_t e = 0; e < size; e++)
            to[e] ^= mask;
}

/* Plain rows r0 .. r0 + 15 (src, row_bytes apart: whole blocks) into one interleaved group at
 * dst, or (when !to_group) row `only` of the group at src back into its plain bytes at dst. */
static void x16_move(const struct x16_type *t, bool to_group, const uint8_t *src,
                     size_t row_bytes, int only, uint8_t *dst)
{
    if (t->pack) {
        if (to_group)
            t->pack(src, row_bytes, dst);
        else
            t->row(src, row_bytes, only, dst);
        return;
    }
    size_t at = 0;      /* the group's byte being filled or read */
    for (size_t blk = 0; blk < row_bytes; blk += t->bytes)
        for (int fi = 0; fi < t->n_fields; fi++) {
            const struct x16_field *f = &t->f[fi];
            for (int n = 0; n < f->count; n++, at += ORK_X16_ROWS * f->size) {
                size_t in_row = blk + f->off + (size_t)n * f->size;
                if (to_group)
                    for (int i = 0; i < ORK_X16_ROWS; i++)
                        move_piece(dst + at + (size_t)i * f->size,
                                   src + (size_t)i * row_bytes + in_row, f->size, f->mask);
                else
                    move_piece(dst + in_row, src + at + (size_t)only * f->size, f->size,
                               f->mask);
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
        return "only Q8_0, Q4_0, Q4_K and Q6_K matrices can be interleaved";
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
 * thread prepares X while the other threads wait, so this is on the token's critical path: the
 * quants and sums come from one fused pass (quant_q8_0_sums; docs/kernels.md "Interleaved
 * weights: X preparation"). */
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

/* ---- Q4_K X form ------------------------------------------------------------------------
 * X form (ork__x16k_xprep), per 256-element block, ORK_X16K_XBLOCK bytes: q[256] int8 and f32 d
 * from ork_quantize_row_q8_k, then each 32-element sum s_j = bsums[2j] + bsums[2j + 1] as
 * s_j = 128 * a_j + b_j with a[8] and b[8] int8, then zeros. The mins term sum_j mn_j * s_j is
 * then two pairs of vpdpbusd (mn_j u8 x a_j, mn_j x b_j) and a shift: exact.
 *
 * Arithmetic: per row and block the integers S = sum_j sc_j * (sum over sub-block j of q * x)
 * and M = sum_j mn_j * s_j, exactly those of the row-layout kernels, then the same f32 steps in
 * the same order as their q4k_block_sum: so every output has the bits of ork__q8k_blocks
 * (tests/unit/test_kernels_x16.c compares them bit for bit). */

#define QK QK_K                 /* elements per Q4_K / Q8_K block */
#include "rows16_q4_k.h"

size_t ork__x16k_xrow_bytes(int64_t k)
{
    return (size_t)(k / QK) * ORK_X16K_XBLOCK;
}

void ork__x16k_xprep(enum kisa k, const float *x, int64_t n, uint8_t *dst)
{
    uint8_t tmp[ORK_Q8_K_BYTES];
    for (int64_t b = 0; b < n / QK; b++) {
        uint8_t *o = dst + (size_t)b * ORK_X16K_XBLOCK;
        ork__quantize_q8_k(k, x + b * QK, tmp, QK);
        memcpy(o, tmp + ORK_Q8_K_Q, QK);
        memcpy(o + XKX_D, tmp, 4);
        for (int j = 0; j < XK_SUB; j++) {
            int16_t s0, s1;
            memcpy(&s0, tmp + ORK_Q8_K_BSUMS + 4 * j, 2);
            memcpy(&s1, tmp + ORK_Q8_K_BSUMS + 4 * j + 2, 2);
            int s = s0 + s1;
            int a = (s + XK_SPLIT / 2 + XK_SPLIT_BIAS) / XK_SPLIT - XK_SPLIT_BIAS / XK_SPLIT;
            o[XKX_A + j] = (uint8_t)(int8_t)a;
            o[XKX_B + j] = (uint8_t)(int8_t)(s - XK_SPLIT * a);
        }
        memset(o + XKX_END, 0, ORK_X16K_XBLOCK - XKX_END);
    }
}

/* ---- drivers ------------------------------------------------------------------------------ */

/* Bytes between the prefetches of a stream's start (a cache line). */
#define X16_LINE 64

bool ork__x16_ok(enum kisa k, uint32_t type)
{
    const struct ork__type_kern *tk = ork__tkern(k, type);
    return x16_type_of(type) && tk && tk->x16_fn;
}

int ork__x16_streams_width(enum kisa k, uint32_t type)
{
    if (!ork__x16_ok(k, type))
        return 0;
    return ork__tkern(k, type)->x16_streams;
}

/* X rows of one M > 1 pass that stay in L2 while every group of the item meets them: 512 KiB
 * (half of a Zen 4/5 core's L2, 1/4 of an A76 cluster's L3 slice), at least one tile. */
#define X16_L2_X_BYTES (512u << 10)

bool ork__x16_streams(enum kisa k, uint32_t type, const struct ork__wstream *s, int ns,
                      size_t row_bytes, const uint8_t *xs)
{
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
     * call before it that prefetched past its end (docs/kernels.md "Interleaved weights:
     * prefetch"). The Q4_K kernels and the AVX2 ones do not prefetch (x16_prefetch 0). */
    const struct ork__type_kern *tk = ork__tkern(k, type);
    for (size_t o = 0; o < (size_t)tk->x16_prefetch; o += X16_LINE)
        for (int t = 0; t < ns; t++)
            __builtin_prefetch(s[t].w + o, 0, 3);
    for (int64_t r = 0; r < passes; r++) {
        const uint8_t *g[ORK_X16_STREAMS_MAX];
        float *out[ORK_X16_STREAMS_MAX];
        int n = 0;
        for (int t = 0; t < ns; t++)
            if (r < s[t].n / ORK_X16_ROWS) {
                g[n] = s[t].w + (size_t)r * gbytes;
                out[n++] = s[t].out + r * ORK_X16_ROWS;
            }
        tk->x16_fn(false, n)(g, xs, 0, nb, out, 0);
    }
    return true;
}

bool ork__x16_gemm(enum kisa k, uint32_t type, const uint8_t *w, size_t row_bytes, int64_t nr,
                   const uint8_t *xs, size_t xrow, int64_t m, float *y, int64_t ldy)
{
    const struct x16_type *tt = x16_type_of(type);
    if (!ork__x16_ok(k, type))
        return false;
    const size_t gbytes = ORK_X16_ROWS * row_bytes;
    const int64_t nb = (int64_t)(row_bytes / tt->bytes);
    ork__x16_fn (*const fn_tile)(bool tile, int n) = ork__tkern(k, type)->x16_fn;
    if (m == 1) {
        /* decode: the rows as the type's streams of whole groups read side by side (a
         * group starts where its first row was) */
        struct ork__wstream s[ORK_X16_STREAMS_MAX];
        int ns = ork__wstreams_split(w, row_bytes, nr, ORK_X16_ROWS,
                                     ork__x16_streams_width(k, type), y, s);
        return ork__x16_streams(k, type, s, ns, row_bytes, xs);
    }
    const int tmx = ork__tkern(k, type)->x16_tile_mx ? ork__tkern(k, type)->x16_tile_mx
                                                      : ORK_X16_MX;
    int64_t chunk = xrow ? (int64_t)(X16_L2_X_BYTES / xrow) / tmx * tmx : tmx;
    chunk = chunk < tmx ? tmx : chunk;
    for (int64_t m0 = 0; m0 < m; m0 += chunk) {
        const int64_t mc = m - m0 < chunk ? m - m0 : chunk;
        for (int64_t r = 0; r < nr; r += ORK_X16_ROWS) {
            const uint8_t *g = w + (size_t)(r / ORK_X16_ROWS) * gbytes;
            for (int64_t t = 0; t < mc; t += tmx) {
                int mx = mc - t < tmx ? (int)(mc - t) : tmx;
                float *o = y + (m0 + t) * ldy + r;
                fn_tile(true, mx)(&g, xs + (size_t)(m0 + t) * xrow, xrow, nb, &o,
                                          (size_t)ldy);
            }
        }
    }
    return true;
}
