/* model.c -- load a GGUF model: the architecture's descriptor (arch.c), hyperparameters from
 * metadata, weight binding (views into the mapping, the tensors the descriptor lists) and
 * validation of every tensor's presence, shape and type.
 *
 * This file decides *what* the model is; it computes nothing (forward.c) and holds no run state
 * (model_session.c). Errors name the key or tensor that was wrong. */
#include "model_priv.h"
#include "npu/calib.h"

#include <ork/alloc.h>
#include <ork/debug.h>
#include <ork/error.h>
#include <ork/log.h>
#include <ork-kernels/types.h>

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* Defaults when the metadata omits a key (GGUF spec / llama.cpp conventions). */
#define ORK_ROPE_BASE_DEFAULT 10000.0f  /* RoFormer paper, theta = 10000 */
#define ORK_RMS_EPS_DEFAULT 1e-5f       /* llama.cpp's default for llama-family models */
/* A bound on layer count and sizes that no real model reaches; it keeps a corrupt header from
 * turning into a huge allocation or an int32 overflow. */
#define ORK_MAX_LAYERS 1024
#define ORK_MAX_DIM (1 << 20)
#define ORK_MAX_EXPERTS 1024    /* routing scratch is sized by it (forward.c) */

/* Where each ORK_LT_* tensor of a descriptor's list is bound in the layer weights. */
#define LT_VEC(field) { offsetof(struct ork_layer_weights, field), false }
#define LT_MAT(field) { offsetof(struct ork_layer_weights, field), true }
static const struct {
    size_t off;
    bool mat;               /* struct ork_mat (else const float *) */
} lt_field[ORK_LT_COUNT] = {
    [ORK_LT_ATTN_NORM] = LT_VEC(attn_norm), [ORK_LT_WQ] = LT_MAT(wq), [ORK_LT_WK] = LT_MAT(wk),
    [ORK_LT_WV] = LT_MAT(wv), [ORK_LT_BQ] = LT_VEC(bq), [ORK_LT_BK] = LT_VEC(bk),
    [ORK_LT_BV] = LT_VEC(bv), [ORK_LT_Q_NORM] = LT_VEC(q_norm), [ORK_LT_K_NORM] = LT_VEC(k_norm),
    [ORK_LT_WO] = LT_MAT(wo), [ORK_LT_FFN_NORM] = LT_VEC(ffn_norm),
    [ORK_LT_W_GATE] = LT_MAT(w_gate), [ORK_LT_W_UP] = LT_MAT(w_up),
    [ORK_LT_W_DOWN] = LT_MAT(w_down), [ORK_LT_POST_ATTN_NORM] = LT_VEC(post_attn_norm),
    [ORK_LT_POST_FFN_NORM] = LT_VEC(post_ffn_norm), [ORK_LT_WQKV] = LT_MAT(wqkv),
    [ORK_LT_W_GATE_UP] = LT_MAT(w_gate_up), [ORK_LT_GATE_INP] = LT_MAT(gate_inp),
    [ORK_LT_GATE_EXPS] = LT_MAT(gate_exps), [ORK_LT_UP_EXPS] = LT_MAT(up_exps),
    [ORK_LT_DOWN_EXPS] = LT_MAT(down_exps),
};
#undef LT_VEC
#undef LT_MAT

void ork_model_params_default(struct ork_model_params *p)
{
    memset(p, 0, sizeof(*p));
}

/* ---- metadata ---------------------------------------------------------------------------- */

static int get_i32_key(const struct ork_gguf *g, const char *arch, const char *suffix, bool required,
                       int32_t def, int32_t lo, int32_t hi, int32_t *out)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    uint32_t v;
    int ret = ork_gguf_get_u32(g, key, &v);
    if (ret == ORK_ENOENT) {
        if (required)
            return ork_errorf(ORK_EFORMAT, "model metadata: required key '%s' is missing", key);
        *out = def;
        return 0;
    }
    if (ret < 0)
        return ret;
    if ((int64_t)v < lo || (int64_t)v > hi)
        return ork_errorf(ORK_EFORMAT, "model metadata: '%s' = %u is out of range [%d, %d]", key, v,
                          lo, hi);
    *out = (int32_t)v;
    return 0;
}

static int get_f32_key(const struct ork_gguf *g, const char *arch, const char *suffix, float def,
                       float *out)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    int ret = ork_gguf_get_f32(g, key, out);
    if (ret == ORK_ENOENT) {
        *out = def;
        return 0;
    }
    return ret;
}

/* RoPE scaling. "linear" (position interpolation) divides positions by the factor; no scaling
 * or "none" leaves them. Others (yarn, longrope...) change the rotation in ways ork does not
 * implement, so they are refused rather than run wrongly. Llama 3.1+ "llama3" scaling is carried
 * by the rope_freqs.weight tensor (bound in bind_weights), not by this key. */
static int read_rope_scaling(const struct ork_gguf *g, const struct ork_arch_desc *d,
                             struct ork_model_config *c)
{
    const char *a = d->name;
    char key[128];
    struct ork_gguf_str s;
    float factor = 0.0f;
    int ret;
    c->rope_freq_scale = 1.0f;
    snprintf(key, sizeof key, "%s.rope.scaling.type", a);
    ret = ork_gguf_get_str(g, key, &s);
    if (ret < 0 && ret != ORK_ENOENT)
        return ret;
    bool linear = false;
    if (ret == 0) {
        if (s.len == 6 && !memcmp(s.ptr, "linear", 6))
            linear = true;
        else if (!(s.len == 4 && !memcmp(s.ptr, "none", 4)) &&
                 !(s.len == 6 && !memcmp(s.ptr, "llama3", 6)) &&
                 !(s.len == 8 && !memcmp(s.ptr, "longrope", 8) &&
                   (d->rope_scaling & ORK_ROPE_SCALING_LONGROPE)))
            return ork_errorf(ORK_EUNSUPPORTED, "model metadata: RoPE scaling '%.*s' (%s) is not "
                              "supported (ork supports none and linear)",
                              (int)(s.len > 32 ? 32 : s.len), s.ptr, key);
    }
    if (linear && !(d->rope_scaling & ORK_ROPE_SCALING_LINEAR))
        return ork_errorf(ORK_EUNSUPPORTED, "model metadata: linear RoPE scaling (%s) is not "
                          "supported for architecture '%s'", key, a);
    if (linear) {
        if ((ret = get_f32_key(g, a, "rope.scaling.factor", 1.0f, &factor)) < 0)
            return ret;
    } else if ((ret = get_f32_key(g, a, "rope.scale_linear", 1.0f, &factor)) < 0) {
        return ret;   /* the older key for the same thing */
    }
    if (!(factor > 0.0f))
        return ork_errorf(ORK_EFORMAT, "model metadata: %s.rope scaling factor %g must be > 0", a,
                          (double)factor);
    c->rope_freq_scale = 1.0f / factor;
    c->rope_attn_factor = 1.0f;
    c->n_ctx_orig = c->n_ctx_train;
    if (d->rope_scaling & ORK_ROPE_SCALING_LONGROPE) {
        if ((ret = get_f32_key(g, a, "rope.scaling.attn_factor", 1.0f,
                               &c->rope_attn_factor)) < 0 ||
            (ret = get_i32_key(g, a, "rope.scaling.original_context_length", false,
                               c->n_ctx_train, 1, INT32_MAX / 2, &c->n_ctx_orig)) < 0)
            return ret;
        if (!(c->rope_attn_factor > 0.0f))
            return ork_errorf(ORK_EFORMAT, "model metadata: %s.rope.scaling.attn_factor %g must "
                              "be > 0", a, (double)c->rope_attn_factor);
    }
    return 0;
}

/* RoPE base of sliding-window layers when the file has no rope.freq_base_swa (gemma3:
 * llama-hparams.h:127). */
#define ORK_ROPE_BASE_SWA_DEFAULT 10000.0f

/* The descriptor's settings that come with keys: embedding scale, attention scale, softcaps,
 * the sliding window and its layers' RoPE, experts (ARCHS.md per architecture). */
static int read_arch_config(const struct ork_gguf *g, const struct ork_arch_desc *d,
                            struct ork_model_config *c)
{
    const char *a = d->name;
    char key[128];
    int ret;
    c->embd_scale = d->embd_scale == ORK_EMBD_SCALE_SQRT_DIM ? sqrtf((float)c->dim) : 1.0f;
    c->attn_scale = 1.0f / sqrtf((float)c->head_dim);
    if (d->attn_scale_alt_layers && c->n_layers == d->attn_scale_alt_layers)
        c->attn_scale = 1.0f / sqrtf((float)(c->dim / c->n_heads));
    c->attn_softcap = c->final_softcap = 0.0f;
    if (d->attn_softcap != ORK_SOFTCAP_OFF) {
        float def = d->attn_softcap == ORK_SOFTCAP_ALWAYS ? d->attn_softcap_default : 0.0f;
        if ((ret = get_f32_key(g, a, "attn_logit_softcapping", def, &c->attn_softcap)) < 0)
            return ret;
    }
    if (d->final_softcap != ORK_SOFTCAP_OFF) {
        float def = d->final_softcap == ORK_SOFTCAP_ALWAYS ? d->final_softcap_default : 0.0f;
        if ((ret = get_f32_key(g, a, "final_logit_softcapping", def, &c->final_softcap)) < 0)
            return ret;
    }
    if (c->attn_softcap < 0.0f || c->final_softcap < 0.0f)
        return ork_errorf(ORK_EFORMAT, "model metadata: %s softcapping must be >= 0", a);
    c->rope_base_swa = c->rope_base;
    c->rope_freq_scale_swa = c->rope_freq_scale;
    c->swa_window = c->swa_period = 0;
    if (d->sliding_window) {
        if ((ret = get_i32_key(g, a, "attention.sliding_window", false, d->swa_window_default, 0,
                               INT32_MAX / 2, &c->swa_window)) < 0)
            return ret;
        /* a scalar only: an array-valued pattern is ignored, as llama.cpp does
         * (llama-model-loader.cpp:502-508) */
        snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", a);
        uint32_t period;
        ret = ork_gguf_get_u32(g, key, &period);
        c->swa_period = ret == 0 ? (int32_t)(period > 1024 ? 1024 : period)
                                 : d->swa_period_default;
        if (c->swa_period < 1)
            c->swa_window = 0;
        if (d->swa_rope == ORK_SWA_ROPE_OWN) {
            if ((ret = get_f32_key(g, a, "rope.freq_base_swa", ORK_ROPE_BASE_SWA_DEFAULT,
                                   &c->rope_base_swa)) < 0)
                return ret;
            c->rope_freq_scale_swa = 1.0f;
            if (!(c->rope_base_swa > 0.0f))
                return ork_errorf(ORK_EFORMAT, "model metadata: %s.rope.freq_base_swa %g must "
                                  "be > 0", a, (double)c->rope_base_swa);
        }
    }
    c->n_expert = c->n_expert_used = c->expert_ffn_dim = 0;
    if (d->moe) {
        if ((ret = get_i32_key(g, a, "expert_count", true, 0, 1, ORK_MAX_EXPERTS,
                               &c->n_expert)) < 0 ||
            (ret = get_i32_key(g, a, "expert_used_count", true, 0, 1, c->n_expert,
                               &c->n_expert_used)) < 0 ||
            (ret = get_i32_key(g, a, "expert_feed_forward_length", false,
                               c->ffn_dim / c->n_expert_used, 1, ORK_MAX_DIM,
                               &c->expert_ffn_dim)) < 0)
            return ret;
    }
    return 0;
}

bool ork_model_layer_swa(const struct ork_model_config *c, int32_t l)
{
    return c->swa_window > 0 && c->swa_period > 0 && l % c->swa_period < c->swa_period - 1;
}

static int read_config(const struct ork_gguf *g, struct ork_model_config *c,
                       const struct ork_arch_desc **desc)
{
    struct ork_gguf_str s;
    int ret = ork_gguf_get_str(g, "general.architecture", &s);
    if (ret == ORK_ENOENT)
        return ork_errorf(ORK_EFORMAT, "model metadata: 'general.architecture' is missing");
    if (ret < 0)
        return ret;
    *desc = ork_arch_find(s.ptr, s.len);
    if (!*desc) {
        char known[128] = "";
        for (size_t i = 0; i < ork_arch_count(); i++)
            snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s",
                     i ? ", " : "", ork_arch_at(i)->name);
        return ork_errorf(ORK_EUNSUPPORTED, "architecture '%.*s' is not supported (ork runs %s)",
                          (int)(s.len > 64 ? 64 : s.len), s.ptr, known);
    }
    if ((ret = ork_arch_check(*desc)) < 0)
        return ret;
    const char *a = (*desc)->name;
    memset(c, 0, sizeof(*c));
    c->arch = (*desc)->arch;
    snprintf(c->arch_name, sizeof c->arch_name, "%s", a);

    if ((ret = get_i32_key(g, a, "embedding_length", true, 0, 1, ORK_MAX_DIM, &c->dim)) < 0 ||
        (ret = get_i32_key(g, a, "block_count", true, 0, 1, ORK_MAX_LAYERS, &c->n_layers)) < 0 ||
        (ret = get_i32_key(g, a, "feed_forward_length", true, 0, 1, ORK_MAX_DIM, &c->ffn_dim)) < 0 ||
        (ret = get_i32_key(g, a, "attention.head_count", true, 0, 1, ORK_MAX_DIM, &c->n_heads)) < 0 ||
        (ret = get_i32_key(g, a, "attention.head_count_kv", false, c->n_heads, 1, ORK_MAX_DIM,
                           &c->n_kv_heads)) < 0 ||
        (ret = get_i32_key(g, a, "context_length", false, 2048, 1, INT32_MAX / 2,
                           &c->n_ctx_train)) < 0)
        return ret;
    if (c->n_heads % c->n_kv_heads)
        return ork_errorf(ORK_EFORMAT,
                          "model metadata: head_count %d is not a multiple of head_count_kv %d",
                          c->n_heads, c->n_kv_heads);
    int32_t def_hd = c->dim / c->n_heads;
    int32_t vlen = 0;
    if ((ret = get_i32_key(g, a, "attention.key_length", false, def_hd, 1, ORK_MAX_DIM,
                           &c->head_dim)) < 0 ||
        (ret = get_i32_key(g, a, "attention.value_length", false, c->head_dim, 1, ORK_MAX_DIM,
                           &vlen)) < 0)
        return ret;
    if (vlen != c->head_dim)
        return ork_errorf(ORK_EUNSUPPORTED,
                          "model metadata: attention.value_length %d != key_length %d is not supported",
                          vlen, c->head_dim);
    if (c->head_dim < 1)
        return ork_errorf(ORK_EFORMAT, "model metadata: head dimension is 0 (dim %d, %d heads)",
                          c->dim, c->n_heads);
    if ((ret = get_i32_key(g, a, "rope.dimension_count", false, c->head_dim, 0, c->head_dim,
                           &c->n_rot)) < 0)
        return ret;
    if (c->n_rot % 2)
        return ork_errorf(ORK_EFORMAT, "model metadata: rope.dimension_count %d is odd", c->n_rot);
    if ((ret = get_f32_key(g, a, "rope.freq_base", ORK_ROPE_BASE_DEFAULT, &c->rope_base)) < 0 ||
        (ret = get_f32_key(g, a, "attention.layer_norm_rms_epsilon", ORK_RMS_EPS_DEFAULT,
                           &c->rms_eps)) < 0)
        return ret;
    if ((ret = read_rope_scaling(g, *desc, c)) < 0 || (ret = read_arch_config(g, *desc, c)) < 0)
        return ret;
    if (!(c->rope_base > 0.0f))
        return ork_errorf(ORK_EFORMAT, "model metadata: %s.rope.freq_base %g must be > 0", a,
                          (double)c->rope_base);
    if (!(c->rms_eps >= 0.0f))
        return ork_errorf(ORK_EFORMAT, "model metadata: %s.attention.layer_norm_rms_epsilon %g "
                          "must be >= 0", a, (double)c->rms_eps);
    return 0;
}

/* ---- tensors ----------------------------------------------------------------------------- */

static int find_tensor(const struct ork_gguf *g, const char *name, bool required,
                       const struct ork_gguf_tensor **out)
{
    *out = ork_gguf_tensor_find(g, name);
    if (!*out && required)
        return ork_errorf(ORK_EFORMAT, "tensor '%s' is missing from the model", name);
    return 0;
}

static int check_type(const struct ork_gguf_tensor *t)
{
    const struct ork_type_traits *tr = ork_type_traits(t->type);
    if (!tr || !tr->supported)
        return ork_errorf(ORK_EUNSUPPORTED, "tensor '%s' has type %s, which ork does not support",
                          t->name, tr ? tr->name : ork_type_name(t->type));
    if (t->ne[0] % tr->block)
        return ork_errorf(ORK_EFORMAT, "tensor '%s': row length %llu is not a multiple of the "
                          "%s block size %u", t->name, (unsigned long long)t->ne[0], tr->name,
                          tr->block);
    return 0;
}

/* A matrix of `rows` outputs by `cols` inputs: GGUF ne = [cols, rows]. */
static int bind_mat(const struct ork_gguf *g, const char *name, int64_t rows, int64_t cols,
                    struct ork_mat *m)
{
    const struct ork_gguf_tensor *t;
    int ret = find_tensor(g, name, true, &t);
    if (ret < 0)
        return ret;
    if (t->n_dims != 2 || (int64_t)t->ne[0] != cols || (int64_t)t->ne[1] != rows)
        return ork_errorf(ORK_EFORMAT, "tensor '%s' has shape [%llu, %llu] (%u dims), expected "
                          "[%lld, %lld] from the model config", name,
                          (unsigned long long)t->ne[0], (unsigned long long)t->ne[1], t->n_dims,
                          (long long)cols, (long long)rows);
    if ((ret = check_type(t)) < 0)
        return ret;
    m->type = t->type;
    m->n_rows = rows;
    m->n_cols = cols;
    m->row_bytes = ork_type_row_bytes(t->type, (uint64_t)cols);
    m->data = t->data;
    if (m->row_bytes * (uint64_t)rows > t->nbytes)
        return ork_errorf(ORK_EFORMAT, "tensor '%s': %llu bytes is too small for its shape", name,
                          (unsigned long long)t->nbytes);
    return 0;
}

/* n_expert stacked matrices of `rows` outputs by `cols` inputs: GGUF ne = [cols, rows,
 * n_expert], bound as one matrix of n_expert * rows rows. */
static int bind_exps(const struct ork_gguf *g, const char *name, int64_t rows, int64_t cols,
                     int64_t n_expert, struct ork_mat *m)
{
    const struct ork_gguf_tensor *t;
    int ret = find_tensor(g, name, true, &t);
    if (ret < 0)
        return ret;
    if (t->n_dims != 3 || (int64_t)t->ne[0] != cols || (int64_t)t->ne[1] != rows ||
        (int64_t)t->ne[2] != n_expert)
        return ork_errorf(ORK_EFORMAT, "tensor '%s' has shape [%llu, %llu, %llu] (%u dims), "
                          "expected [%lld, %lld, %lld] from the model config", name,
                          (unsigned long long)t->ne[0], (unsigned long long)t->ne[1],
                          (unsigned long long)t->ne[2], t->n_dims, (long long)cols,
                          (long long)rows, (long long)n_expert);
    if ((ret = check_type(t)) < 0)
        return ret;
    m->type = t->type;
    m->n_rows = rows * n_expert;
    m->n_cols = cols;
    m->row_bytes = ork_type_row_bytes(t->type, (uint64_t)cols);
    m->data = t->data;
    if (m->row_bytes * (uint64_t)m->n_rows > t->nbytes)
        return ork_errorf(ORK_EFORMAT, "tensor '%s': %llu bytes is too small for its shape", name,
                          (unsigned long long)t->nbytes);
    return 0;
}

/* Rows [r0, r0 + n) of src as a matrix (a view: fused tensors split for the forward pass and
 * the NPU layer plan). */
static struct ork_mat row_view(const struct ork_mat *src, int64_t r0, int64_t n)
{
    struct ork_mat m = *src;
    m.data = (const uint8_t *)src->data + (size_t)r0 * src->row_bytes;
    m.n_rows = n;
    return m;
}

/* A vector of n F32 values (norm weights, biases). required = false: absent -> NULL. */
static int bind_vec(const struct ork_gguf *g, const char *name, int64_t n, bool required,
                    const float **out)
{
    const struct ork_gguf_tensor *t;
    int ret = find_tensor(g, name, required, &t);
    *out = NULL;
    if (ret < 0 || !t)
        return ret;
    if (t->n_dims != 1 || (int64_t)t->ne[0] != n)
        return ork_errorf(ORK_EFORMAT, "tensor '%s' has shape [%llu] (%u dims), expected [%lld] "
                          "from the model config", name, (unsigned long long)t->ne[0], t->n_dims,
                          (long long)n);
    if (t->type != ORK_TYPE_F32)
        return ork_errorf(ORK_EUNSUPPORTED, "tensor '%s' has type %s; ork needs F32 for 1-D "
                          "tensors (norm weights and biases)", name, ork_type_name(t->type));
    if (((uintptr_t)t->data % sizeof(float)) != 0)
        return ork_errorf(ORK_EFORMAT, "tensor '%s' data is not 4-byte aligned", name);
    *out = t->data;
    return 0;
}

const struct ork_mat *ork__layer_mat(const struct ork_layer_weights *L, enum ork_layer_tensor t)
{
    if ((unsigned)t >= ORK_LT_COUNT || !lt_field[t].mat)
        return NULL;
    return (const struct ork_mat *)(const void *)((const char *)L + lt_field[t].off);
}

/* The size a descriptor dimension stands for under config c. */
static int64_t dim_of(const struct ork_model_config *c, enum ork_arch_dim d)
{
    switch (d) {
    case ORK_DIM_Q:
        return (int64_t)c->n_heads * c->head_dim;
    case ORK_DIM_KV:
        return (int64_t)c->n_kv_heads * c->head_dim;
    case ORK_DIM_FFN:
        return c->ffn_dim;
    case ORK_DIM_HEAD:
        return c->head_dim;
    case ORK_DIM_QKV:
        return ((int64_t)c->n_heads + 2 * (int64_t)c->n_kv_heads) * c->head_dim;
    case ORK_DIM_FFN2:
        return 2 * (int64_t)c->ffn_dim;
    case ORK_DIM_EXPERTS:
        return c->n_expert;
    case ORK_DIM_FFN_EXP:
        return c->expert_ffn_dim;
    case ORK_DIM_MODEL:
    default:
        return c->dim;
    }
}

/* Layer l's tensors, as the descriptor lists them. */
static int bind_layer(const struct ork_gguf *g, const struct ork_model_config *c,
                      const struct ork_arch_desc *d, int32_t l, struct ork_layer_weights *L)
{
    char name[96];
    for (size_t i = 0; i < d->n_layer_tensors; i++) {
        const struct ork_arch_tensor *t = &d->layer_tensors[i];
        char *field = (char *)L + lt_field[t->slot].off;
        int64_t rows = dim_of(c, t->rows);
        int ret;
        snprintf(name, sizeof name, "blk.%d.%s", (int)l, t->suffix);
        if (t->kind == ORK_TK_EXPS)
            ret = bind_exps(g, name, rows, dim_of(c, t->cols), c->n_expert,
                            (struct ork_mat *)(void *)field);
        else if (lt_field[t->slot].mat)
            ret = bind_mat(g, name, rows, dim_of(c, t->cols), (struct ork_mat *)(void *)field);
        else
            ret = bind_vec(g, name, rows, ork_arch_tensor_required(d, t),
                           (const float **)(void *)field);
        if (ret < 0)
            return ret;
    }
    if ((L->q_norm == NULL) != (L->k_norm == NULL))
        return ork_errorf(ORK_EFORMAT, "layer %d: attn_q_norm and attn_k_norm must come together",
                          (int)l);
    if ((L->bq == NULL) != (L->bk == NULL) || (L->bq == NULL) != (L->bv == NULL))
        return ork_errorf(ORK_EFORMAT, "layer %d: attn_q/k/v.bias must come together", (int)l);
    if (L->wqkv.data) {
        int64_t q_dim = dim_of(c, ORK_DIM_Q), kv_dim = dim_of(c, ORK_DIM_KV);
        L->wq = row_view(&L->wqkv, 0, q_dim);
        L->wk = row_view(&L->wqkv, q_dim, kv_dim);
        L->wv = row_view(&L->wqkv, q_dim + kv_dim, kv_dim);
    }
    if (L->w_gate_up.data) {
        L->w_gate = row_view(&L->w_gate_up, 0, c->ffn_dim);
        L->w_up = row_view(&L->w_gate_up, c->ffn_dim, c->ffn_dim);
    }
    return 0;
}

static int bind_weights(const struct ork_gguf *g, struct ork_model_config *c,
                        const struct ork_arch_desc *d, struct ork_weights *w)
{
    const struct ork_gguf_tensor *te;
    int ret = find_tensor(g, "token_embd.weight", true, &te);
    if (ret < 0)
        return ret;
    if (te->n_dims != 2 || te->ne[1] < 1 || te->ne[1] > INT32_MAX)
        return ork_errorf(ORK_EFORMAT, "tensor 'token_embd.weight' must be 2-D (dim, n_vocab)");
    c->n_vocab = (int32_t)te->ne[1];
    if ((ret = bind_mat(g, "token_embd.weight", c->n_vocab, c->dim, &w->tok_embd)) < 0 ||
        (ret = bind_vec(g, "output_norm.weight", c->dim, true, &w->output_norm)) < 0)
        return ret;
    if (d->output == ORK_OUTPUT_TIED_IF_ABSENT && ork_gguf_tensor_find(g, "output.weight")) {
        if ((ret = bind_mat(g, "output.weight", c->n_vocab, c->dim, &w->output)) < 0)
            return ret;
        c->tied_output = false;
    } else {
        w->output = w->tok_embd;
        c->tied_output = true;
    }
    if ((d->rope_scaling & ORK_ROPE_SCALING_FACTORS) &&
        (ret = bind_vec(g, "rope_freqs.weight", c->n_rot / 2, false, &w->rope_freqs)) < 0)
        return ret;
    if ((d->rope_scaling & ORK_ROPE_SCALING_LONGROPE) && !w->rope_freqs &&
        ((ret = bind_vec(g, "rope_factors_long.weight", c->n_rot / 2, false, &w->rope_long)) < 0 ||
         (ret = bind_vec(g, "rope_factors_short.weight", c->n_rot / 2, false,
                         &w->rope_short)) < 0))
        return ret;
    if ((w->rope_long == NULL) != (w->rope_short == NULL))
        return ork_errorf(ORK_EFORMAT, "tensors 'rope_factors_long.weight' and "
                          "'rope_factors_short.weight' must come together");
    c->rope_freq_factors = w->rope_freqs != NULL || w->rope_long != NULL;
    w->layers = ork_calloc((size_t)c->n_layers, sizeof(*w->layers));
    if (!w->layers)
        return ork_errorf(ORK_ENOMEM, "model: cannot allocate %d layer descriptors", c->n_layers);
    for (int32_t l = 0; l < c->n_layers; l++)
        if ((ret = bind_layer(g, c, d, l, &w->layers[l])) < 0)
            return ret;
    return 0;
}

/* Memory the kernel reports as available for new allocations without swapping (Linux
 * /proc/meminfo MemAvailable: free memory plus reclaimable page cache), or UINT64_MAX when
 * unknown. */
static uint64_t mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return UINT64_MAX;
    char line[128];
    unsigned long long kib = 0;
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = sscanf(line, "MemAvailable: %llu kB", &kib) == 1;
    fclose(f);
    return found && kib <= UINT64_MAX / 1024 ? (uint64_t)kib * 1024 : UINT64_MAX;
}

/* AUTO reads the file only while it takes at most this share of the available memory
 * (numerator / denominator), leaving the rest for the KV cache, the scratch and the other
 * processes; a larger file is mapped (its pages then come and go with the page cache). */
#define LOAD_AUTO_SHARE_NUM 3
#define LOAD_AUTO_SHARE_DEN 4

/* How to open the file: ORK_LOAD_* (AUTO: read when the matmuls run on the CPU and the file
 * fits the available memory, map otherwise), or an error when READ was asked for a file larger
 * than the available memory (the copy would push the system into the OOM killer). */
static int gguf_mode(const char *path, const struct ork_model_params *p, enum ork_gguf_mode *mode)
{
    bool cpu = !p->device || !strcmp(p->device, "cpu");
    *mode = ORK_GGUF_MMAP;
    if (p->load == ORK_LOAD_MMAP || (p->load == ORK_LOAD_AUTO && !cpu))
        return 0;
    struct stat st;
    if (stat(path, &st) != 0)
        return 0;       /* ork_gguf_open_mode names the problem */
    uint64_t size = (uint64_t)st.st_size, avail = mem_available();
    if (p->load == ORK_LOAD_READ) {
        if (avail != UINT64_MAX && size > avail)
            return ork_errorf(ORK_ENOMEM, "cannot read '%s' into memory: %llu MiB, %llu MiB "
                              "available; map it instead (--mmap)", path,
                              (unsigned long long)(size >> 20), (unsigned long long)(avail >> 20));
        *mode = ORK_GGUF_READ;
        return 0;
    }
    if (avail == UINT64_MAX || size <= avail / LOAD_AUTO_SHARE_DEN * LOAD_AUTO_SHARE_NUM) {
        *mode = ORK_GGUF_READ;
    } else if (ork_debug(ORK_DBG_MODEL)) {
        ORK_LOGI("model: %llu MiB > %d/%d of the %llu MiB available: mapped, not read",
                 (unsigned long long)(size >> 20), LOAD_AUTO_SHARE_NUM, LOAD_AUTO_SHARE_DEN,
                 (unsigned long long)(avail >> 20));
    }
    return 0;
}

/* Interleaves (ork_mat_x16_pack) every matrix the CPU kernels read faster that way; the copy
 * read into memory is private and writable (ORK_GGUF_READ), the file is untouched. With a tied
 * output matrix the embedding table is interleaved once and both views take the layout
 * (ork_get_row reads a row back for the token lookup). */
static int interleave(struct ork_model *m)
{
    struct ork_weights *w = &m->w;
    for (int32_t l = 0; l < m->cfg.n_layers; l++) {
        struct ork_layer_weights *L = &w->layers[l];
        struct ork_mat *mats[] = { &L->wq, &L->wk, &L->wv, &L->wo,
                                   &L->w_gate, &L->w_up, &L->w_down };
        for (size_t i = 0; i < sizeof mats / sizeof mats[0]; i++) {
            if (!ork_mat_x16_wanted(mats[i]))
                continue;
            int ret = ork_mat_x16_pack(mats[i]);
            if (ret < 0)
                return ret;
            m->n_interleaved++;
        }
    }
    struct ork_mat *out = m->cfg.tied_output ? &w->tok_embd : &w->output;
    if (ork_mat_x16_wanted(out)) {
        int ret = ork_mat_x16_pack(out);
        if (ret < 0)
            return ret;
        m->n_interleaved++;
        if (m->cfg.tied_output)
            w->output = w->tok_embd;
    }
    if (ork_debug(ORK_DBG_MODEL))
        ORK_LOGI("model: %d matrices interleaved by 16 rows for the CPU kernels",
                 m->n_interleaved);
    return 0;
}

/* ---- public ------------------------------------------------------------------------------ */

int32_t ork_model_n_interleaved(const struct ork_model *m)
{
    return m ? m->n_interleaved : 0;
}

const char *ork_model_load_name(const struct ork_model *m)
{
    return m && m->read_in ? "read" : "mmap";
}

int ork_model_load(const char *path, const struct ork_model_params *p, struct ork_model **out)
{
    struct ork_model_params defp;
    if (!p) {
        ork_model_params_default(&defp);
        p = &defp;
    }
    if (!path || !out)
        return ork_errorf(ORK_EINVAL, "ork_model_load: path and out are required");
    if (p->load < ORK_LOAD_AUTO || p->load > ORK_LOAD_READ)
        return ork_errorf(ORK_EINVAL, "ork_model_load: unknown load mode %d", p->load);
    struct ork_model *m = ork_calloc(1, sizeof(*m));
    if (!m)
        return ORK_ENOMEM;
    const struct ork_arch_desc *d = NULL;
    enum ork_gguf_mode mode;
    int ret = gguf_mode(path, p, &mode);
    if (ret < 0 || (ret = ork_gguf_open_mode(path, mode, &m->gguf)) < 0)
        goto err_free;
    m->read_in = mode == ORK_GGUF_READ;
    if ((ret = read_config(m->gguf, &m->cfg, &d)) < 0 ||
        (ret = bind_weights(m->gguf, &m->cfg, d, &m->w)) < 0)
        goto err_close;
    m->arch = d;
    if (d->act == ORK_FFN_GELU)
        ork__gelu_init();
    if (!p->no_tokenizer) {
        if ((ret = ork_tokenizer_load(m->gguf, &m->tok)) < 0)
            goto err_close;
        int32_t nv = ork_tokenizer_n_vocab(m->tok);
        if (nv > m->cfg.n_vocab) {
            ret = ork_errorf(ORK_EFORMAT, "tokenizer has %d tokens but token_embd.weight has "
                             "only %d rows", nv, m->cfg.n_vocab);
            goto err_tok;
        }
    }
    if (ork_debug(ORK_DBG_MODEL)) {
        char buf[256];
        ork_model_describe(m, buf, sizeof buf);
        ORK_LOGI("model: %s", buf);
    }
    if ((ret = ork__twin_rec_create(p, &m->twin)) < 0)
        goto err_tok;
    if ((ret = ork__npu_exec_create(m, path, p, &m->npu)) < 0)
        goto err_tok;
    if ((ret = ork__npu_calibrate(m, path, p)) < 0)   /* --npu-weights-calib (npu/calib.c) */
        goto err_npu;
    if (!m->npu && (p->npu_weights.encoding != ORK_NPU_WENC_INT8 || p->npu_weights.flags ||
                    p->npu_weights.calib_path))
        ORK_LOGN("--npu-weights applies to NPU weights: the CPU runs the model's own (device %s)",
                 p->device ? p->device : "cpu");
    if (!m->npu && m->read_in && !p->no_repack && (ret = interleave(m)) < 0)
        goto err_npu;
    *out = m;
    return 0;
err_npu:
    ork__npu_exec_destroy(m->npu);
err_tok:
    ork__twin_rec_destroy(m->twin);
    ork_tokenizer_free(m->tok);
err_close:
    ork_free(m->w.layers);
    ork_gguf_close(m->gguf);
err_free:
    ork_free(m);
    return ret;
}

void ork_model_free(struct ork_model *m)
{
    if (!m)
        return;
    ork__npu_exec_destroy(m->npu);
    ork__twin_rec_destroy(m->twin);
    if (m->tok)
        ork_tokenizer_free(m->tok);
    ork_free(m->w.layers);
    ork_gguf_close(m->gguf);
    ork_free(m);
}

const struct ork_model_config *ork_model_config(const struct ork_model *m)
{
    return &m->cfg;
}

const struct ork_tokenizer *ork_model_tokenizer(const struct ork_model *m)
{
    return m->tok;
}

const struct ork_arch_desc *ork_model_arch(const struct ork_model *m)
{
    return m->arch;
}

const struct ork_gguf *ork_model_gguf(const struct ork_model *m)
{
    return m->gguf;
}

int ork_model_describe(const struct ork_model *m, char *buf, size_t cap)
{
    const struct ork_model_config *c = &m->cfg;
    return snprintf(buf, cap,
                    "%s, %d layers, dim %d, ffn %d, %d heads (%d kv, head_dim %d, rope %d%s), "
                    "vocab %d, ctx %d, weights %s%s",
                    c->arch_name, c->n_layers, c->dim, c->ffn_dim, c->n_heads, c->n_kv_heads,
                    c->head_dim, c->n_rot, m->arch->rope == ORK_ROPE_NEOX ? " neox" : "", c->n_vocab,
                    c->n_ctx_train, ork_type_name(m->w.layers[0].w_gate.data
                                                  ? m->w.layers[0].w_gate.type
                                                  : m->w.layers[0].gate_exps.type),
                    c->tied_output ? ", tied output" : "");
}
