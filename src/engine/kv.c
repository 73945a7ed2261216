/* kv.c -- the KV cache: per layer, one row of n_kv_heads * head_dim rotated keys and one row of
 * values per position, stored as F32 (exact) or F16 (half the memory). Also the two attention
 * inner loops that read it (scores against K, weighted sum of V), so that the storage type stays
 * inside this file. Allocation happens once, at session creation. */
#include "model_priv.h"

#include <ork/alloc.h>
#include <ork/error.h>

#include <string.h>

int ork__kv_init(struct ork_kv_cache *kv, enum ork_kv_type type, int32_t n_layers, int32_t ctx,
                 int32_t kv_dim)
{
    memset(kv, 0, sizeof(*kv));
    if (type != ORK_KV_F32 && type != ORK_KV_F16)
        return ork_errorf(ORK_EINVAL, "kv cache: unknown type %d", (int)type);
    size_t elt = type == ORK_KV_F32 ? sizeof(float) : sizeof(uint16_t);
    size_t n = (size_t)n_layers * (size_t)ctx * (size_t)kv_dim;
    kv->k = ork_calloc(n, elt);
    kv->v = ork_calloc(n, elt);
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
