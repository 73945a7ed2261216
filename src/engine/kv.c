/* kv.c -- the KV cache: per layer, one row of n_kv_heads * head_dim rotated keys and one row of
 * values per position, stored as F32 (exact) or F16 (half the memory). Also the two attention
 * inner loops that read it (scores against K, weighted sum of V), so that the storage type stays
 * inside this file. Allocation happens once, at session creation.
 *
 * Memory: rows are written (ork__kv_store) before any read, so the buffers are not zeroed, and
 * buffers of at least KV_HUGE_BYTES are aligned to it and offered to the kernel as transparent
 * huge pages (Linux madvise; elsewhere, or when refused, plain pages). Decode writes one new
 * K and one new V row per layer and token, each on a page not touched before, and a first
 * touch is a page fault on the decode thread between two pool runs: measured on the 2-vCPU
 * development VM (an anonymous 64 MiB buffer touched page by page) ~15.5 us per 4 KiB page
 * against ~2-3.5 us per 4 KiB worth with huge pages (one fault per 2 MiB, ~1-1.7 ms), i.e.
 * for Qwen3-1.7B (F32 K/V, 56 new rows per token) ~1.7 ms of page faults per token without. */
#include "model_priv.h"

#include <ork/alloc.h>
#include <ork/error.h>

#include <stdint.h>
#include <string.h>

#if defined(__linux__)
#include <sys/mman.h>
#endif

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

int ork__kv_init(struct ork_kv_cache *kv, enum ork_kv_type type, int32_t n_layers, int32_t ctx,
                 int32_t kv_dim)
{
    memset(kv, 0, sizeof(*kv));
    if (type != ORK_KV_F32 && type != ORK_KV_F16)
        return ork_errorf(ORK_EINVAL, "kv cache: unknown type %d", (int)type);
    size_t elt = type == ORK_KV_F32 ? sizeof(float) : sizeof(uint16_t);
    size_t n = (size_t)n_layers * (size_t)ctx * (size_t)kv_dim;
    if (n != 0 && n > SIZE_MAX / elt)
        return ork_errorf(ORK_ENOMEM, "kv cache: %d layers x %d positions x %d too large",
                          n_layers, ctx, kv_dim);
    kv->k = kv_alloc(n * elt);
    kv->v = kv_alloc(n * elt);
    if (!kv->k || !kv->v) {
        ork_free(kv->k);
        ork_free(kv->v);
        kv->k = kv->v = NULL;
        return ork_errorf(ORK_ENOMEM, "kv cache: cannot allocate 2 x %zu bytes (%d layers x %d "
                          "positions x %d)", n * elt, n_layers, ctx, kv_dim);
    }
    kv->type = type;
    kv->n_layers = n_layers;
    kv->ctx = ctx;
    kv->kv_dim = kv_dim;
    return 0;
}

void ork__kv_fini(struct ork_kv_cache *kv)
{
    ork_free(kv->k);
    ork_free(kv->v);
    memset(kv, 0, sizeof(*kv));
}

static inline size_t row_index(const struct ork_kv_cache *kv, int32_t layer, int32_t pos)
{
    return ((size_t)layer * (size_t)kv->ctx + (size_t)pos) * (size_t)kv->kv_dim;
}

void ork__kv_store(struct ork_kv_cache *kv, int32_t layer, int32_t pos, const float *k,
                   const float *v)
{
    size_t at = row_index(kv, layer, pos);
    if (kv->type == ORK_KV_F32) {
        memcpy((float *)kv->k + at, k, (size_t)kv->kv_dim * sizeof(float));
        memcpy((float *)kv->v + at, v, (size_t)kv->kv_dim * sizeof(float));
        return;
    }
    uint16_t *kd = (uint16_t *)kv->k + at, *vd = (uint16_t *)kv->v + at;
    for (int32_t i = 0; i < kv->kv_dim; i++) {
        kd[i] = ork_f32_to_fp16(k[i]);
        vd[i] = ork_f32_to_fp16(v[i]);
    }
}

/* F16 rows are converted to f32 this many values at a time (a stack buffer; head_dim is
 * usually 64..256, so one piece per head). */
#define KV_PIECE 256

void ork__kv_scores(const struct ork_kv_cache *kv, int32_t layer, int32_t off, int32_t n,
                    const float *q, float scale, int32_t n_pos, float *scores)
{
    size_t base = row_index(kv, layer, 0) + (size_t)off;
    if (kv->type == ORK_KV_F32 || n <= KV_PIECE) {
        /* several keys per pass (ork_vec_dot_rows: the bits of one ork_vec_dot per key; F16
         * widened in registers, the same bits as converting the row first) */
        const void *k = kv->type == ORK_KV_F32 ? (const void *)((const float *)kv->k + base)
                                               : (const void *)((const uint16_t *)kv->k + base);
        uint32_t type = kv->type == ORK_KV_F32 ? ORK_TYPE_F32 : ORK_TYPE_F16;
        ork_vec_dot_rows(type, k, (size_t)kv->kv_dim, q, n, n_pos, scores);
        for (int32_t t = 0; t < n_pos; t++)
            scores[t] *= scale;
        return;
    }
    const uint16_t *k = (const uint16_t *)kv->k + base;
    float tmp[KV_PIECE];
    for (int32_t t = 0; t < n_pos; t++, k += kv->kv_dim) {
        float sum = 0.0f;
        for (int32_t c = 0; c < n; c += KV_PIECE) {
            int32_t m = n - c < KV_PIECE ? n - c : KV_PIECE;
            ork_dequant_row(ORK_TYPE_F16, k + c, tmp, m);
            sum += ork_vec_dot_f32(q + c, tmp, m);
        }
        scores[t] = sum * scale;
    }
}

void ork__kv_weighted_sum(const struct ork_kv_cache *kv, int32_t layer, int32_t off, int32_t n,
                          const float *w, int32_t n_pos, float *out)
{
    size_t base = row_index(kv, layer, 0) + (size_t)off;
    for (int32_t i = 0; i < n; i++)
        out[i] = 0.0f;
    /* out += w[t] * v_t for t in order, element by element as out[i] += w[t] * v[i]
     * (ork_vec_mad_rows: the bits of one ork_vec_mad per position, with out kept in registers
     * across positions) */
    if (kv->type == ORK_KV_F32)
        ork_vec_mad_rows(out, (const float *)kv->v + base, (size_t)kv->kv_dim, ORK_TYPE_F32, w,
                         n_pos, n);
    else
        ork_vec_mad_rows(out, (const uint16_t *)kv->v + base, (size_t)kv->kv_dim, ORK_TYPE_F16,
                         w, n_pos, n);
}
