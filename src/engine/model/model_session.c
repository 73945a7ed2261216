/* model_session.c -- a session: the run state of one conversation over a loaded model (KV cache,
 * thread pool, scratch arena, the token list the cache holds). Everything is allocated here,
 * once; evaluation (forward.c) and generation (generate.c) only reuse it. */
#include "model_priv.h"

#include <ork/alloc.h>
#include <ork/debug.h>
#include <ork/error.h>
#include <ork/log.h>

#include <string.h>
#include <time.h>

/* Default cache length: the model's training context, capped so that a model trained on 128k
 * tokens does not reserve gigabytes for a short chat (same cap as the brief for `ork run`). */
#define ORK_CTX_DEFAULT_CAP 4096
/* Default prefill batch: large enough that each weight matrix streams once per 256 prompt
 * tokens, small enough that the activations stay in the L2 of a small model. */
#define ORK_BATCH_DEFAULT 256

void ork_session_params_default(struct ork_session_params *p)
{
    memset(p, 0, sizeof(*p));
    p->kv_type = ORK_KV_F32;
    p->act_quant = true;
    p->spin_us = -1;
}

int ork_session_create(struct ork_model *m, const struct ork_session_params *p,
                       struct ork_session **out)
{
    struct ork_session_params def;
    if (!p) {
        ork_session_params_default(&def);
        p = &def;
    }
    if (!m || !out)
        return ork_errorf(ORK_EINVAL, "ork_session_create: model and out are required");
    const struct ork_model_config *c = &m->cfg;
    struct ork_session *s = ork_calloc(1, sizeof(*s));
    if (!s)
        return ORK_ENOMEM;
    s->m = m;
    s->p = *p;
    s->phases_on = ork_debug(ORK_DBG_PHASES);
    int ret;
    if (s->p.ctx_size < 0) {
        ret = ork_errorf(ORK_EINVAL, "ctx_size %d must be >= 0", s->p.ctx_size);
        goto err_free;
    }
    if (s->p.ctx_size == 0)
        s->p.ctx_size = c->n_ctx_train < ORK_CTX_DEFAULT_CAP ? c->n_ctx_train : ORK_CTX_DEFAULT_CAP;
    if (s->p.ctx_size > c->n_ctx_train)
        ORK_LOGW("ctx_size %d is larger than the model's training context %d; quality may drop "
                 "past %d tokens", s->p.ctx_size, c->n_ctx_train, c->n_ctx_train);
    if (s->p.n_batch < 0) {
        ret = ork_errorf(ORK_EINVAL, "n_batch %d must be >= 0", s->p.n_batch);
        goto err_free;
    }
    if (s->p.n_batch == 0)
        s->p.n_batch = ORK_BATCH_DEFAULT;
    if (s->p.n_batch > s->p.ctx_size)
        s->p.n_batch = s->p.ctx_size;

    /* LongRoPE: the long factors only past the original context (llama-model.cpp:2039-2052) */
    s->rope_freqs = m->w.rope_freqs;
    if (!s->rope_freqs && m->w.rope_long)
        s->rope_freqs = s->p.ctx_size > c->n_ctx_orig ? m->w.rope_long : m->w.rope_short;

    struct ork_pool_opts po = { .n_threads = s->p.n_threads, .spin_us = s->p.spin_us };
    if ((ret = ork_pool_create_opts(&po, &s->pool)) < 0)
        goto err_free;
    s->p.n_threads = ork_pool_threads(s->pool);
    /* sliding-window layers keep a ring of window + n_batch - 1 positions (kv.c): a batch's
     * rows are stored before any is read */
    bool *local = ork_calloc((size_t)c->n_layers, sizeof(bool));
    if (!local) {
        ret = ork_errorf(ORK_ENOMEM, "session: cannot allocate %d layer flags", c->n_layers);
        goto err_pool;
    }
    for (int32_t l = 0; l < c->n_layers; l++)
        local[l] = ork_model_layer_swa(c, l);
    int32_t local_rows = c->swa_window > 0 ? c->swa_window + s->p.n_batch - 1 : 0;
    ret = ork__kv_init_layers(&s->kv, s->p.kv_type, c->n_layers, s->p.ctx_size, c->n_kv_heads,
                              c->head_dim, local, local_rows);
    ork_free(local);
    if (ret < 0)
        goto err_pool;
    size_t scratch = ork__forward_scratch_bytes(c, s->p.n_batch, s->p.ctx_size, s->p.n_threads);
    if ((ret = ork_arena_create(scratch, &s->arena)) < 0)
        goto err_kv;
    s->tokens = ork_calloc((size_t)s->p.ctx_size, sizeof(int32_t));
    s->logits = ork_calloc((size_t)c->n_vocab, sizeof(float));
    if (!s->tokens || !s->logits) {
        ret = ork_errorf(ORK_ENOMEM, "session: cannot allocate token list / logits");
        goto err_arrays;
    }
    *out = s;
    return 0;
err_arrays:
    ork_free(s->tokens);
    ork_free(s->logits);
    ork_arena_destroy(s->arena);
err_kv:
    ork__kv_fini(&s->kv);
err_pool:
    ork_pool_destroy(s->pool);
err_free:
    ork_free(s);
    return ret;
}

uint64_t ork_session_expert_bytes(const struct ork_session *s)
{
    return s ? s->expert_bytes : 0;
}

int64_t ork__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ORK_DEBUG=phases: one line per kind of batch the session ran. */
static void log_phases(const struct ork_session *s)
{
    static const char *const kind[2] = { "decode", "batch" };
    for (int i = 0; i < 2; i++) {
        const struct ork__phases *p = &s->phases[i];
        if (!p->rows)
            continue;
        double per = 1e6 * (double)p->rows;     /* ns -> ms per row */
        ORK_LOGI("phases (%s): %lld batches, %lld rows; per row %.3f ms: matmul %.3f, attention "
                 "%.3f, other %.3f", kind[i], (long long)p->batches, (long long)p->rows,
                 (double)p->total_ns / per, (double)p->matmul_ns / per, (double)p->attn_ns / per,
                 (double)(p->total_ns - p->matmul_ns - p->attn_ns) / per);
    }
}

void ork_session_free(struct ork_session *s)
{
    if (!s)
        return;
    if (s->phases_on)
        log_phases(s);
    ork_free(s->tokens);
    ork_free(s->logits);
    ork_arena_destroy(s->arena);
    ork__kv_fini(&s->kv);
    ork_pool_destroy(s->pool);
    ork_free(s);
}

const struct ork_model *ork_session_model(const struct ork_session *s)
{
    return s->m;
}

int32_t ork_session_ctx_size(const struct ork_session *s)
{
    return s->p.ctx_size;
}

int32_t ork_session_n_batch(const struct ork_session *s)
{
    return s->p.n_batch;
}

int32_t ork_session_n_past(const struct ork_session *s)
{
    return s->n_past;
}

const int32_t *ork_session_tokens(const struct ork_session *s)
{
    return s->tokens;
}

int ork_session_truncate(struct ork_session *s, int32_t n)
{
    if (n < 0 || n > s->n_past)
        return ork_errorf(ORK_EINVAL, "session: cannot truncate %d cached tokens to %d", s->n_past,
                          n);
    s->n_past = n;   /* rows past n_past are never read, and are overwritten before use */
    return 0;
}

void ork_session_reset(struct ork_session *s)
{
    s->n_past = 0;
}

int ork_session_prefault(struct ork_session *s, int32_t n_pos)
{
    if (n_pos < 0 || n_pos > s->kv.ctx)
        return ork_errorf(ORK_EINVAL, "session: cannot prefault %d positions of a %d-token cache",
                          n_pos, s->kv.ctx);
    ork__kv_prefault(&s->kv, s->n_past, n_pos);
    return 0;
}
