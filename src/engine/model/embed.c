/* embed.c -- embeddings from a generative model: the final hidden states of a prompt (the output
 * of the final norm, the vector the LM head multiplies), pooled over its positions (mean or
 * last) and optionally L2-normalised, as llama-server's --embeddings gives for models without
 * a pooling head.
 *
 * The forward pass ends in the LM head. Rather than a second forward pass, the embedder runs
 * the same one (ork__forward_batch) over a shallow copy of the model whose output matrix is
 * the dim x dim F32 identity: the "logits" of every row are then exactly its normed hidden
 * state (each output is one product by 1 plus products by 0). The copy has no NPU executor
 * and no board twin, so embeddings run on the CPU and leave the model's counters alone. The
 * copy shares the weights; only the identity is the embedder's own.
 *
 * Not here: the forward pass itself (forward.c), the server's endpoints (src/server). */
#include "model_priv.h"

#include <ork/alloc.h>
#include <ork/error.h>

#include <math.h>
#include <string.h>

struct ork_embedder {
    struct ork_model *m;        /* borrowed */
    struct ork_model shadow;    /* m with the identity as its output matrix */
    float *identity;            /* (dim, dim) */
    float *rows;                /* (n_batch_max, dim) hidden states of one batch */
    int32_t rows_cap;           /* rows allocated */
};

int ork_embedder_create(struct ork_model *m, struct ork_embedder **out)
{
    if (!m || !out)
        return ork_errorf(ORK_EINVAL, "ork_embedder_create: model and out are required");
    int32_t dim = m->cfg.dim;
    struct ork_embedder *e = ork_calloc(1, sizeof(*e));
    if (!e)
        return ORK_ENOMEM;
    e->identity = ork_calloc((size_t)dim * (size_t)dim, sizeof(float));
    if (!e->identity) {
        ork_free(e);
        return ork_errorf(ORK_ENOMEM, "embedder: cannot allocate the %d x %d identity head", dim,
                          dim);
    }
    for (int32_t i = 0; i < dim; i++)
        e->identity[(size_t)i * dim + i] = 1.0f;
    e->m = m;
    e->shadow = *m;
    e->shadow.npu = NULL;
    e->shadow.twin = NULL;
    e->shadow.w.output = (struct ork_mat){
        .type = ORK_TYPE_F32, .n_rows = dim, .n_cols = dim,
        .row_bytes = (size_t)dim * sizeof(float), .data = e->identity,
    };
    *out = e;
    return 0;
}

void ork_embedder_free(struct ork_embedder *e)
{
    if (!e)
        return;
    ork_free(e->identity);
    ork_free(e->rows);
    ork_free(e);
}

int32_t ork_embedder_dim(const struct ork_embedder *e)
{
    return e->m->cfg.dim;
}

int ork_embed(struct ork_embedder *e, struct ork_session *s, const int32_t *tokens, int32_t n,
              enum ork_embd_pooling pooling, bool normalize, float *out)
{
    const struct ork_model_config *c = &e->m->cfg;
    int32_t dim = c->dim;
    if (!s || !tokens || !out || n < 1)
        return ork_errorf(ORK_EINVAL, "ork_embed: session, tokens and out are required (n = %d)",
                          n);
    if (s->m != e->m)
        return ork_errorf(ORK_EINVAL, "ork_embed: the session belongs to another model");
    if (n > s->kv.ctx)
        return ork_errorf(ORK_ECONTEXT, "context full: %d tokens > ctx_size %d", n, s->kv.ctx);
    for (int32_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= c->n_vocab)
            return ork_errorf(ORK_EINVAL, "token id %d at index %d is outside the vocabulary "
                              "(%d tokens)", tokens[i], i, c->n_vocab);
    int32_t nb = s->p.n_batch;
    if (e->rows_cap < nb) {
        float *r = ork_realloc(e->rows, (size_t)nb * (size_t)dim * sizeof(float));
        if (!r)
            return ork_errorf(ORK_ENOMEM, "embedder: cannot allocate %d hidden-state rows", nb);
        e->rows = r;
        e->rows_cap = nb;
    }
    double *acc = ork_calloc((size_t)dim, sizeof(double));
    if (!acc)
        return ORK_ENOMEM;
    int ret = 0;
    s->n_past = 0;
    s->m = &e->shadow;          /* the forward pass ends in the identity head */
    for (int32_t done = 0; done < n && ret == 0; done += nb) {
        int32_t k = n - done < nb ? n - done : nb;
        ret = ork__forward_batch(s, tokens + done, k, done, e->rows, true);
        if (ret < 0)
            break;
        memcpy(s->tokens + done, tokens + done, (size_t)k * sizeof(int32_t));
        s->n_past = done + k;
        if (pooling == ORK_EMBD_POOL_MEAN) {
            for (int32_t r = 0; r < k; r++)
                for (int32_t j = 0; j < dim; j++)
                    acc[j] += e->rows[(size_t)r * dim + j];
        } else if (done + k == n) {
            for (int32_t j = 0; j < dim; j++)
                acc[j] = e->rows[(size_t)(k - 1) * dim + j];
        }
    }
    s->m = e->m;
    if (ret == 0) {
        double scale = pooling == ORK_EMBD_POOL_MEAN ? 1.0 / n : 1.0, norm = 0;
        for (int32_t j = 0; j < dim; j++) {
            acc[j] *= scale;
            norm += acc[j] * acc[j];
        }
        norm = sqrt(norm);
        double inv = normalize && norm > 0 ? 1.0 / norm : 1.0;
        for (int32_t j = 0; j < dim; j++)
            out[j] = (float)(acc[j] * inv);
    }
    ork_free(acc);
    return ret;
}
