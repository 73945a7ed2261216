/* kv_file.c -- a session's KV cache to a file and back (llama-server's slot save / restore, the
 * prompt cache rkllm users know): the cached tokens and, per layer and KV head, the K and V
 * rows of every cached position, in the cache's own element type (F32 or F16), host byte
 * order. A file is only read back into a session of the same shape (layers, KV heads,
 * head_dim, vocabulary, dim) and KV type; everything else is ORK_EFORMAT.
 *
 * File: "ORKKV001" | u32 version | u32 kv type | i32 n_layers, n_kv_heads, head_dim, n_vocab,
 * dim, n_tokens | i32 tokens[n_tokens] | per layer, per KV head: K rows (n_tokens x head_dim),
 * V rows (same).
 *
 * Reading the rows needs kv.c's layout (positions in blocks of KV_FILE_BLOCK); save checks it
 * against kv.c's own accessors (ork__kv_scores with basis queries for K, ork__kv_weighted_sum
 * with a one-hot weight for V) before writing, so a layout change fails loudly rather than
 * writing garbage. Restoring goes through ork__kv_store_head only.
 *
 * Not here: the KV cache (kv.c), the server's /slots endpoint (src/server). */
#include "model_priv.h"

#include <ork/alloc.h>
#include <ork/error.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* kv.c's KV_BLOCK (positions per layout block); verified by layout_ok() before each save. */
#define KV_FILE_BLOCK 256
#define KV_FILE_MAGIC "ORKKV001"
#define KV_FILE_VERSION 1u

struct kv_file_hdr {
    char magic[8];
    uint32_t version, kv_type;
    int32_t n_layers, n_kv_heads, head_dim, n_vocab, dim, n_tokens;
};

static size_t elt_size(const struct ork_kv_cache *kv)
{
    return kv->type == ORK_KV_F32 ? sizeof(float) : sizeof(uint16_t);
}

static const uint8_t *raw_row(const struct ork_kv_cache *kv, const void *base, int32_t layer,
                              int32_t head, int32_t pos)
{
    pos %= kv->cap[layer];      /* a sliding-window layer's ring (kv.c) */
    size_t blk = (size_t)kv->blk0[layer] + (size_t)(pos / KV_FILE_BLOCK);
    size_t idx = ((blk * (size_t)kv->n_kv_heads + (size_t)head) * KV_FILE_BLOCK +
                  (size_t)(pos % KV_FILE_BLOCK)) * (size_t)kv->head_dim;
    return (const uint8_t *)base + idx * elt_size(kv);
}

static float raw_at(const struct ork_kv_cache *kv, const uint8_t *row, int32_t j)
{
    if (kv->type == ORK_KV_F32) {
        float f;
        memcpy(&f, row + (size_t)j * sizeof(float), sizeof f);
        return f;
    }
    uint16_t h;
    memcpy(&h, row + (size_t)j * sizeof(uint16_t), sizeof h);
    return ork_fp16_to_f32(h);
}

/* The raw layout matches kv.c's for (layer, head): K column j at every position through
 * ork__kv_scores with the basis query e_j (scale 1), V at the last position through
 * ork__kv_weighted_sum with a one-hot weight. */
static bool layout_ok(const struct ork_kv_cache *kv, int32_t layer, int32_t head, int32_t n,
                      float *scratch /* (n + 2 * head_dim) */)
{
    int32_t hd = kv->head_dim;
    float *q = scratch + n, *vout = q + hd;
    const int32_t cols[2] = { 0, hd - 1 };
    for (int c = 0; c < 2; c++) {
        memset(q, 0, (size_t)hd * sizeof(float));
        q[cols[c]] = 1.0f;
        const float *qs[1] = { q };
        float *sc[1] = { scratch };
        ork__kv_scores(kv, layer, head, qs, 1, 1.0f, 0, n, sc);
        for (int32_t t = 0; t < n; t++)
            if (scratch[t] != raw_at(kv, raw_row(kv, kv->k, layer, head, t), cols[c]))
                return false;
    }
    memset(scratch, 0, (size_t)n * sizeof(float));
    scratch[n - 1] = 1.0f;
    const float *ws[1] = { scratch };
    float *outs[1] = { vout };
    ork__kv_weighted_sum(kv, layer, head, ws, 1, 0, n, outs);
    const uint8_t *vr = raw_row(kv, kv->v, layer, head, n - 1);
    for (int32_t j = 0; j < hd; j++)
        if (vout[j] != raw_at(kv, vr, j))
            return false;
    return true;
}

/* Write the rows of positions [0, n) of (layer, head) from base. */
static int write_rows(FILE *f, const struct ork_kv_cache *kv, const void *base, int32_t layer,
                      int32_t head, int32_t n)
{
    size_t row = (size_t)kv->head_dim * elt_size(kv);
    for (int32_t t0 = 0, m; t0 < n; t0 += m) {
        int32_t end = (t0 / KV_FILE_BLOCK + 1) * KV_FILE_BLOCK;
        m = (end < n ? end : n) - t0;   /* consecutive rows up to the block's end */
        if (fwrite(raw_row(kv, base, layer, head, t0), row, (size_t)m, f) != (size_t)m)
            return ORK_EIO;
    }
    return 0;
}

int ork_session_save_file(const struct ork_session *s, const char *path, int64_t *bytes)
{
    const struct ork_kv_cache *kv = &s->kv;
    const struct ork_model_config *c = &s->m->cfg;
    int32_t n = s->n_past;
    if (n > kv->min_cap)
        return ork_errorf(ORK_EUNSUPPORTED, "session save: %d cached tokens, but the "
                          "sliding-window layers keep only the last %d positions", n,
                          kv->min_cap);
    if (n > 0) {
        float *scratch = ork_malloc(((size_t)n + 2 * (size_t)kv->head_dim) * sizeof(float));
        if (!scratch)
            return ORK_ENOMEM;
        bool ok = layout_ok(kv, 0, 0, n, scratch) &&
                  layout_ok(kv, kv->n_layers - 1, kv->n_kv_heads - 1, n, scratch);
        ork_free(scratch);
        if (!ok)
            return ork_errorf(ORK_EUNSUPPORTED, "session save: the KV cache layout is not the "
                              "one kv_file.c reads (KV_FILE_BLOCK %d)", KV_FILE_BLOCK);
    }
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
        return ork_errorf(ORK_EINVAL, "session save: path too long");
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return ork_errorf(ORK_EIO, "session save: cannot create '%s': %s", tmp, strerror(errno));
    struct kv_file_hdr h = {
        .version = KV_FILE_VERSION, .kv_type = (uint32_t)kv->type, .n_layers = kv->n_layers,
        .n_kv_heads = kv->n_kv_heads, .head_dim = kv->head_dim, .n_vocab = c->n_vocab,
        .dim = c->dim, .n_tokens = n,
    };
    memcpy(h.magic, KV_FILE_MAGIC, sizeof h.magic);
    int ret = 0;
    if (fwrite(&h, sizeof h, 1, f) != 1 ||
        (n > 0 && fwrite(s->tokens, sizeof(int32_t), (size_t)n, f) != (size_t)n))
        ret = ORK_EIO;
    for (int32_t l = 0; l < kv->n_layers && ret == 0; l++)
        for (int32_t hd = 0; hd < kv->n_kv_heads && ret == 0; hd++)
            if ((ret = write_rows(f, kv, kv->k, l, hd, n)) == 0)
                ret = write_rows(f, kv, kv->v, l, hd, n);
    long size = ret == 0 ? ftell(f) : -1;
    if (fclose(f) != 0)
        ret = ORK_EIO;
    if (ret == 0 && rename(tmp, path) != 0)
        ret = ORK_EIO;
    if (ret < 0) {
        remove(tmp);
        return ork_errorf(ORK_EIO, "session save: cannot write '%s': %s", path, strerror(errno));
    }
    if (bytes)
        *bytes = size;
    return 0;
}

/* Read the n K rows then the n V rows of (layer, head) and store each position's pair through
 * ork__kv_store_head; kall holds (n, head_dim) floats, row one raw row, v head_dim floats. */
static int read_head(FILE *f, struct ork_kv_cache *kv, int32_t layer, int32_t head, int32_t n,
                     void *row, float *kall, float *v)
{
    int32_t hd = kv->head_dim;
    for (int32_t t = 0; t < n; t++) {
        if (fread(row, elt_size(kv), (size_t)hd, f) != (size_t)hd)
            return ORK_EFORMAT;
        for (int32_t j = 0; j < hd; j++)
            kall[(size_t)t * hd + j] = raw_at(kv, row, j);
    }
    for (int32_t t = 0; t < n; t++) {
        if (fread(row, elt_size(kv), (size_t)hd, f) != (size_t)hd)
            return ORK_EFORMAT;
        for (int32_t j = 0; j < hd; j++)
            v[j] = raw_at(kv, row, j);
        ork__kv_store_head(kv, layer, t, head, kall + (size_t)t * hd, v);
    }
    return 0;
}

int ork_session_load_file(struct ork_session *s, const char *path, int32_t *n_tokens,
                          int64_t *bytes)
{
    struct ork_kv_cache *kv = &s->kv;
    const struct ork_model_config *c = &s->m->cfg;
    FILE *f = fopen(path, "rb");
    if (!f)
        return ork_errorf(ORK_EIO, "session restore: cannot open '%s': %s", path,
                          strerror(errno));
    struct kv_file_hdr h;
    int ret = 0;
    void *row = NULL;
    float *kbuf = NULL;
    ork_session_reset(s);
    if (fread(&h, sizeof h, 1, f) != 1 || memcmp(h.magic, KV_FILE_MAGIC, sizeof h.magic) ||
        h.version != KV_FILE_VERSION) {
        ret = ork_errorf(ORK_EFORMAT, "session restore: '%s' is not an ork session file", path);
        goto out;
    }
    if (h.kv_type != (uint32_t)kv->type || h.n_layers != kv->n_layers ||
        h.n_kv_heads != kv->n_kv_heads || h.head_dim != kv->head_dim ||
        h.n_vocab != c->n_vocab || h.dim != c->dim || h.n_tokens < 0) {
        ret = ork_errorf(ORK_EFORMAT, "session restore: '%s' was saved for another model shape "
                         "or KV type", path);
        goto out;
    }
    if (h.n_tokens > kv->ctx) {
        ret = ork_errorf(ORK_ECONTEXT, "session restore: '%s' holds %d tokens, more than "
                         "ctx_size %d", path, h.n_tokens, kv->ctx);
        goto out;
    }
    int32_t n = h.n_tokens;
    if (n > 0 && fread(s->tokens, sizeof(int32_t), (size_t)n, f) != (size_t)n) {
        ret = ork_errorf(ORK_EFORMAT, "session restore: '%s' is truncated", path);
        goto out;
    }
    for (int32_t i = 0; i < n; i++)
        if (s->tokens[i] < 0 || s->tokens[i] >= c->n_vocab) {
            ret = ork_errorf(ORK_EFORMAT, "session restore: token %d outside the vocabulary",
                             s->tokens[i]);
            goto out;
        }
    row = ork_malloc((size_t)kv->head_dim * elt_size(kv));
    kbuf = ork_malloc(((size_t)n + 1) * (size_t)kv->head_dim * sizeof(float));
    if (!row || !kbuf) {
        ret = ORK_ENOMEM;
        goto out;
    }
    for (int32_t l = 0; l < kv->n_layers && ret == 0; l++)
        for (int32_t hd = 0; hd < kv->n_kv_heads && ret == 0; hd++)
            ret = read_head(f, kv, l, hd, n, row, kbuf, kbuf + (size_t)n * kv->head_dim);
    if (ret < 0 || fgetc(f) != EOF) {
        ret = ork_errorf(ORK_EFORMAT, "session restore: '%s' is truncated or too long", path);
        goto out;
    }
    s->n_past = n;
    s->kv.hi = n - 1;
    if (n_tokens)
        *n_tokens = n;
    if (bytes)
        *bytes = ftell(f);
out:
    if (ret < 0)
        ork_session_reset(s);
    ork_free(row);
    ork_free(kbuf);
    fclose(f);
    return ret;
}
