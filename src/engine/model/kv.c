/* kv.c -- the KV cache: per layer and KV head, one row of head_dim rotated keys and one row of
 * values per position, stored as F32 (exact) or F16 (half the memory). Also the two attention
 * inner loops that read it (scores against K, weighted sum of V), so that the storage type stays
 * inside this file. Allocation happens once, at session creation.
 *
 * Layout: positions in blocks of KV_BLOCK, [layer][block][kv head][position in block][head_dim]:
 * the keys (values) of one head are contiguous for KV_BLOCK positions (128 KiB at F32 for a
 * head_dim of 128), so attention reads each head as a few long sequential runs, while a layer's
 * positions still fill memory in order (the first touch of a block's pages comes when decoding
 * reaches it, as with one row of kv_dim per position). docs/engine.md "Threading" (KV cache
 * layout) has the measurements.
 *
 * Memory: rows are written (ork__kv_store) before any read, so the buffers are not zeroed, and
 * buffers of at least KV_HUGE_BYTES are aligned to it and offered to the kernel as transparent
 * huge pages (Linux madvise; elsewhere, or when refused, plain pages). Decode writes one new
 * K and one new V row per layer and token, each on a page not touched before, and a first
 * touch is a page fault on the decode thread between two pool runs: measured on the 2-vCPU
 * development VM (an anonymous 64 MiB buffer touched page by page) ~15.5 us per 4 KiB page
 * against ~2-3.5 us per 4 KiB worth with huge pages (one fault per 2 MiB, ~1-1.7 ms), i.e.
 * for Qwen3-1.7B (F32 K/V, 56 new rows per token) ~1.7 ms of page faults per token without.
 *
 * Sliding-window layers (ork__kv_init_layers): a local layer never reads a key older than its
 * window again, so it keeps a ring of `cap` positions (a multiple of KV_BLOCK, at least the
 * window plus a batch: the rows of one batch are all stored before any is read) and position p
 * lives in slot p % cap. A Gemma-2 shape at ctx 8192 with its 4096 window and every 2nd layer
 * local keeps 3/4 of the full cache. kv->hi (the highest position stored) tells the forward
 * pass whether a rewind still finds the keys it needs (ork__kv_window_valid). */
#include "model_priv.h"

#include <ork/alloc.h>
#include <ork/error.h>

#include <stdint.h>
#include <string.h>

#if defined(__linux__)
#include <sys/mman.h>
#endif

/* Positions per block of the layout: 256 rows of a head are 64-128 KiB for head_dims of 64-128
 * at F32, long runs for the prefetchers (each run starts a new stream: with 64 positions per
 * block the decode attention phase of a Qwen3-1.7B shape at 512 tokens took 2.51-2.59 ms per
 * token, with 256 1.89-2.03, two threads, binaries alternated; docs/engine.md "KV cache
 * layout"). A 2 MiB huge page still holds 512 positions of one layer's heads at F32 for
 * head_dim 128 and 8 KV heads, so pages are first touched at the same positions as with 64. */
#define KV_BLOCK 256

/* Huge page size for KV buffers (2 MiB: the PMD size of x86-64 and of arm64 with 4 KiB
 * pages); smaller buffers use ordinary pages. */
#define KV_HUGE_BYTES ((size_t)2 << 20)

/* A KV buffer of `bytes` (contents undefined; NULL when memory is short). */
static void *kv_alloc(size_t bytes)
{
    if (bytes < KV_HUGE_BYTES)
        return ork_aligned_alloc(64, bytes);
    size_t size = (bytes + KV_HUGE_BYTES - 1) / KV_HUGE_BYTES * KV_HUGE_BYTES;
    void *p = size >= bytes ? ork_aligned_alloc(KV_HUGE_BYTES, size) : NULL;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (p)
        (void)madvise(p, size, MADV_HUGEPAGE);     /* a hint: refused means ordinary pages */
#endif
    return p;
}

int ork__kv_init_layers(struct ork_kv_cache *kv, enum ork_kv_type type, int32_t n_layers,
                        int32_t ctx, int32_t n_kv_heads, int32_t head_dim, const bool *local,
                        int32_t local_rows)
{
    int32_t kv_dim = n_kv_heads * head_dim;
    memset(kv, 0, sizeof(*kv));
    kv->hi = -1;
    if (type != ORK_KV_F32 && type != ORK_KV_F16)
        return ork_errorf(ORK_EINVAL, "kv cache: unknown type %d", (int)type);
    if (n_layers < 1 || ctx < 1)
        return ork_errorf(ORK_EINVAL, "kv cache: %d layers x %d positions", n_layers, ctx);
    size_t elt = type == ORK_KV_F32 ? sizeof(float) : sizeof(uint16_t);
    size_t n_blocks = ((size_t)ctx + KV_BLOCK - 1) / KV_BLOCK, n, bytes;
    size_t local_blocks = local_rows > 0 ? ((size_t)local_rows + KV_BLOCK - 1) / KV_BLOCK : 0;
    if (local_blocks > n_blocks)
        local_blocks = n_blocks;
    size_t total = 0;
    for (int32_t l = 0; l < n_layers; l++)
        total += local && local[l] && local_blocks ? local_blocks : n_blocks;
    if (__builtin_mul_overflow(total, (size_t)KV_BLOCK, &n) ||
        __builtin_mul_overflow(n, (size_t)kv_dim, &n) || __builtin_mul_overflow(n, elt, &bytes))
        return ork_errorf(ORK_ENOMEM, "kv cache: %d layers x %d positions x %d too large",
                          n_layers, ctx, kv_dim);
    kv->blk0 = ork_calloc((size_t)n_layers + 1, sizeof(int32_t));
    kv->cap = ork_calloc((size_t)n_layers, sizeof(int32_t));
    kv->k = kv_alloc(bytes);
    kv->v = kv_alloc(bytes);
    if (!kv->k || !kv->v || !kv->blk0 || !kv->cap) {
        ork__kv_fini(kv);
        return ork_errorf(ORK_ENOMEM, "kv cache: cannot allocate 2 x %zu bytes (%d layers x %d "
                          "positions x %d)", bytes, n_layers, ctx, kv_dim);
    }
    for (int32_t l = 0; l < n_layers; l++) {
        size_t nb = local && local[l] && local_blocks ? local_blocks : n_blocks;
        kv->cap[l] = (int32_t)(nb * KV_BLOCK);
        kv->blk0[l + 1] = kv->blk0[l] + (int32_t)nb;
        kv->min_cap = l == 0 || kv->cap[l] < kv->min_cap ? kv->cap[l] : kv->min_cap;
    }
    kv->type = type;
    kv->n_layers = n_layers;
    kv->ctx = ctx;
    kv->n_kv_heads = n_kv_heads;
    kv->n_blocks = (int32_t)n_blocks;
    kv->head_dim = head_dim;
    kv->bytes = 2 * bytes;
    return 0;
}

int ork__kv_init(struct ork_kv_cache *kv, enum ork_kv_type type, int32_t n_layers, int32_t ctx,
                 int32_t n_kv_heads, int32_t head_dim)
{
    return ork__kv_init_layers(kv, type, n_layers, ctx, n_kv_heads, head_dim, NULL, 0);
}

void ork__kv_fini(struct ork_kv_cache *kv)
{
    ork_free(kv->k);
    ork_free(kv->v);
    ork_free(kv->blk0);
    ork_free(kv->cap);
    memset(kv, 0, sizeof(*kv));
    kv->hi = -1;
}

bool ork__kv_window_valid(const struct ork_kv_cache *kv, int32_t pos, int32_t window)
{
    if (pos == 0 || kv->min_cap >= kv->n_blocks * KV_BLOCK)
        return true;        /* nothing to read, or no ring */
    int32_t need = window > 0 && pos > window - 1 ? pos - window + 1 : 0;
    return need > kv->hi - kv->min_cap;
}

/* Element index of (layer, kv head, position, 0); the rows of one head are consecutive up to
 * the end of pos's block. */
static inline size_t row_index(const struct ork_kv_cache *kv, int32_t layer, int32_t head,
                               int32_t pos)
{
    pos %= kv->cap[layer];      /* a local layer's ring; pos < ctx <= cap elsewhere */
    size_t blk = (size_t)kv->blk0[layer] + (size_t)(pos / KV_BLOCK);
    return ((blk * (size_t)kv->n_kv_heads + (size_t)head) * KV_BLOCK + (size_t)(pos % KV_BLOCK)) *
           (size_t)kv->head_dim;
}

/* Rows of one block run from position t0 on: at most KV_BLOCK, fewer at the block's end or
 * at n_pos. */
static inline int32_t run_len(int32_t t0, int32_t n_pos)
{
    int32_t end = (t0 / KV_BLOCK + 1) * KV_BLOCK;
    return (end < n_pos ? end : n_pos) - t0;
}

/* The cache's element type and bytes per element. */
static inline uint32_t kv_row_type(const struct ork_kv_cache *kv)
{
    return kv->type == ORK_KV_F32 ? ORK_TYPE_F32 : ORK_TYPE_F16;
}

static inline size_t kv_elt(const struct ork_kv_cache *kv)
{
    return kv->type == ORK_KV_F32 ? sizeof(float) : sizeof(uint16_t);
}

void ork__kv_prefault(struct ork_kv_cache *kv, int32_t from, int32_t to)
{
    size_t elt = kv_elt(kv);
    for (int32_t l = 0; l < kv->n_layers; l++)
        for (int32_t h = 0; h < kv->n_kv_heads; h++)
            /* a ring's slots past its first lap may hold live keys: first touches only */
            for (int32_t t0 = from, m, end = to < kv->cap[l] ? to : kv->cap[l]; t0 < end;
                 t0 += m) {
                m = run_len(t0, end);
                size_t at = row_index(kv, l, h, t0) * elt, bytes = (size_t)m * kv->head_dim * elt;
                memset((uint8_t *)kv->k + at, 0, bytes);
                memset((uint8_t *)kv->v + at, 0, bytes);
            }
}

void ork__kv_store_head(struct ork_kv_cache *kv, int32_t layer, int32_t pos, int32_t head,
                        const float *k, const float *v)
{
    size_t hd = (size_t)kv->head_dim;
    size_t at = row_index(kv, layer, head, pos);
    if (kv->type == ORK_KV_F32) {
        memcpy((float *)kv->k + at, k, hd * sizeof(float));
        memcpy((float *)kv->v + at, v, hd * sizeof(float));
        return;
    }
    ork_f32_to_fp16_row(k, (uint16_t *)kv->k + at, (int64_t)hd);
    ork_f32_to_fp16_row(v, (uint16_t *)kv->v + at, (int64_t)hd);
}

void ork__kv_store(struct ork_kv_cache *kv, int32_t layer, int32_t pos, const float *k,
                   const float *v)
{
    size_t hd = (size_t)kv->head_dim;
    for (int32_t h = 0; h < kv->n_kv_heads; h++)
        ork__kv_store_head(kv, layer, pos, h, k + (size_t)h * hd, v + (size_t)h * hd);
}

/* F16 rows are converted to f32 this many values at a time (a stack buffer; head_dim is
 * usually 64..256, so one piece per head). */
#define KV_PIECE 256

/* Bytes of a KV head's K and of its V run that ork__kv_prefetch_head asks for: the first
 * rows of the next item's runs, read ahead while the current item is computed. Decode
 * attention phase at tg128, Qwen3-1.7B Q4_0 shape, two threads, binaries alternated three
 * times: 0.79-0.83 ms per token without, 0.79-0.80 with 2 KiB, 0.77-0.79 with 4 KiB. */
#define KV_PREFETCH_BYTES 4096u
#define KV_LINE 64

void ork__kv_prefetch_head(const struct ork_kv_cache *kv, int32_t layer, int32_t head,
                           int32_t n_pos)
{
    size_t elt = kv_elt(kv);
    size_t bytes = (size_t)run_len(0, n_pos) * (size_t)kv->head_dim * elt;
    if (bytes > KV_PREFETCH_BYTES)
        bytes = KV_PREFETCH_BYTES;
    const uint8_t *k = (const uint8_t *)kv->k + row_index(kv, layer, head, 0) * elt;
    const uint8_t *v = (const uint8_t *)kv->v + row_index(kv, layer, head, 0) * elt;
    for (size_t o = 0; o < bytes; o += KV_LINE) {
        __builtin_prefetch(k + o, 0, 3);
        __builtin_prefetch(v + o, 0, 3);
    }
}

void ork__kv_scores(const struct ork_kv_cache *kv, int32_t layer, int32_t head,
                    const float *const *q, int nq, float scale, int32_t t_begin, int32_t n_pos,
                    float *const *scores)
{
    int32_t n = kv->head_dim;
    uint32_t type = kv_row_type(kv);
    for (int32_t t0 = t_begin, m; t0 < n_pos; t0 += m) {
        m = run_len(t0, n_pos);
        size_t base = row_index(kv, layer, head, t0);
        if (kv->type == ORK_KV_F32 || n <= KV_PIECE) {
            /* several keys per pass (ork_vec_dot_rows: the bits of one ork_vec_dot per key;
             * F16 widened in registers, the same bits as converting the row first); two
             * queries read the keys once (ork_vec_dot_rows2, the same bits per query) */
            const void *k = (const uint8_t *)kv->k + base * kv_elt(kv);
            if (nq == 2)
                ork_vec_dot_rows2(type, k, (size_t)n, q, n, m,
                                  (float *const[]){ scores[0] + t0, scores[1] + t0 });
            else
                ork_vec_dot_rows(type, k, (size_t)n, q[0], n, m, scores[0] + t0);
            continue;
        }
        const uint16_t *k = (const uint16_t *)kv->k + base;
        float tmp[KV_PIECE];
        for (int32_t t = t0; t < t0 + m; t++, k += n)
            for (int h = 0; h < nq; h++) {
                float sum = 0.0f;
                for (int32_t c = 0; c < n; c += KV_PIECE) {
                    int32_t pm = n - c < KV_PIECE ? n - c : KV_PIECE;
                    ork_dequant_row(ORK_TYPE_F16, k + c, tmp, pm);
                    sum += ork_vec_dot_f32(q[h] + c, tmp, pm);
                }
                scores[h][t] = sum;
            }
    }
    for (int h = 0; h < nq; h++)
        for (int32_t t = t_begin; t < n_pos; t++)
            scores[h][t] *= scale;
}

void ork__kv_weighted_sum(const struct ork_kv_cache *kv, int32_t layer, int32_t head,
                          const float *const *w, int nq, int32_t t_begin, int32_t n_pos,
                          float *const *out)
{
    int32_t n = kv->head_dim;
    for (int h = 0; h < nq; h++)
        for (int32_t i = 0; i < n; i++)
            out[h][i] = 0.0f;
    /* out += w[t] * v_t for t in order, element by element as out[i] += w[t] * v[i]
     * (ork_vec_mad_rows: the bits of one ork_vec_mad per position, with out kept in registers
     * across the positions of a run and stored between runs; two queries read the values
     * once, ork_vec_mad_rows2) */
    uint32_t type = kv_row_type(kv);
    size_t elt = kv_elt(kv);
    for (int32_t t0 = t_begin, m; t0 < n_pos; t0 += m) {
        m = run_len(t0, n_pos);
        const void *v = (const uint8_t *)kv->v + row_index(kv, layer, head, t0) * elt;
        if (nq == 2)
            ork_vec_mad_rows2(out, v, (size_t)n, type, (const float *const[]){ w[0] + t0,
                                                                                w[1] + t0 },
                              m, n);
        else
            ork_vec_mad_rows(out[0], v, (size_t)n, type, w[0] + t0, m, n);
    }
}
