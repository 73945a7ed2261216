/* arch.c -- the architecture table (ork-engine/arch.h): one descriptor per architecture the
 * engine runs, and the check that refuses settings with no op behind them.
 *
 * Sources: llama and qwen2/qwen3 layouts as llama.cpp's converter writes them (tensor names,
 * NEOX RoPE for the qwen families, qwen2's q/k/v biases, qwen3's per-head q/k RMSNorm); the
 * published model code (Hugging Face transformers modeling_llama / modeling_qwen2 /
 * modeling_qwen3) for norm placement and the gated SiLU FFN. */
#include <ork-engine/arch.h>

#include <ork/error.h>

#include <string.h>

/* The layer tensors of the llama family (llama, qwen2, qwen3), in the order the converter
 * writes them (synth writes them in this order too). */
static const struct ork_arch_tensor llama_layer[] = {
    { "attn_norm.weight",   ORK_LT_ATTN_NORM, ORK_TK_NORM, ORK_DIM_MODEL, 0, ORK_NEED_ALWAYS },
    { "attn_q.weight",      ORK_LT_WQ,        ORK_TK_MAT,  ORK_DIM_Q, ORK_DIM_MODEL, ORK_NEED_ALWAYS },
    { "attn_k.weight",      ORK_LT_WK,        ORK_TK_MAT,  ORK_DIM_KV, ORK_DIM_MODEL, ORK_NEED_ALWAYS },
    { "attn_v.weight",      ORK_LT_WV,        ORK_TK_MAT,  ORK_DIM_KV, ORK_DIM_MODEL, ORK_NEED_ALWAYS },
    { "attn_q.bias",        ORK_LT_BQ,        ORK_TK_BIAS, ORK_DIM_Q, 0, ORK_NEED_QKV_BIAS },
    { "attn_k.bias",        ORK_LT_BK,        ORK_TK_BIAS, ORK_DIM_KV, 0, ORK_NEED_QKV_BIAS },
    { "attn_v.bias",        ORK_LT_BV,        ORK_TK_BIAS, ORK_DIM_KV, 0, ORK_NEED_QKV_BIAS },
    { "attn_q_norm.weight", ORK_LT_Q_NORM,    ORK_TK_NORM, ORK_DIM_HEAD, 0, ORK_NEED_QK_NORM },
    { "attn_k_norm.weight", ORK_LT_K_NORM,    ORK_TK_NORM, ORK_DIM_HEAD, 0, ORK_NEED_QK_NORM },
    { "attn_output.weight", ORK_LT_WO,        ORK_TK_MAT,  ORK_DIM_MODEL, ORK_DIM_Q, ORK_NEED_ALWAYS },
    { "ffn_norm.weight",    ORK_LT_FFN_NORM,  ORK_TK_NORM, ORK_DIM_MODEL, 0, ORK_NEED_ALWAYS },
    { "ffn_gate.weight",    ORK_LT_W_GATE,    ORK_TK_MAT,  ORK_DIM_FFN, ORK_DIM_MODEL, ORK_NEED_ALWAYS },
    { "ffn_up.weight",      ORK_LT_W_UP,      ORK_TK_MAT,  ORK_DIM_FFN, ORK_DIM_MODEL, ORK_NEED_ALWAYS },
    { "ffn_down.weight",    ORK_LT_W_DOWN,    ORK_TK_MAT,  ORK_DIM_MODEL, ORK_DIM_FFN, ORK_NEED_ALWAYS },
};

#define LLAMA_LAYER llama_layer, sizeof llama_layer / sizeof llama_layer[0]
#define ROPE_SCALING_ALL (ORK_ROPE_SCALING_LINEAR | ORK_ROPE_SCALING_FACTORS)

static const struct ork_arch_desc arch_table[] = {
    { .name = "llama", .arch = ORK_ARCH_LLAMA, .rope = ORK_ROPE_NORM,
      .rope_scaling = ROPE_SCALING_ALL, .norm = ORK_NORM_PRE, .act = ORK_FFN_SILU,
      .ffn_gated = true, .output = ORK_OUTPUT_TIED_IF_ABSENT, .layer_tensors = LLAMA_LAYER },
    { .name = "qwen2", .arch = ORK_ARCH_QWEN2, .rope = ORK_ROPE_NEOX,
      .rope_scaling = ROPE_SCALING_ALL, .norm = ORK_NORM_PRE, .act = ORK_FFN_SILU,
      .ffn_gated = true, .qkv_bias = true, .output = ORK_OUTPUT_TIED_IF_ABSENT,
      .layer_tensors = LLAMA_LAYER },
    { .name = "qwen3", .arch = ORK_ARCH_QWEN3, .rope = ORK_ROPE_NEOX,
      .rope_scaling = ROPE_SCALING_ALL, .norm = ORK_NORM_PRE, .act = ORK_FFN_SILU,
      .ffn_gated = true, .qk_norm = true, .output = ORK_OUTPUT_TIED_IF_ABSENT,
      .layer_tensors = LLAMA_LAYER },
};

size_t ork_arch_count(void)
{
    return sizeof arch_table / sizeof arch_table[0];
}

const struct ork_arch_desc *ork_arch_at(size_t i)
{
    return i < ork_arch_count() ? &arch_table[i] : NULL;
}

const struct ork_arch_desc *ork_arch_find(const char *name, size_t len)
{
    if (!name)
        return NULL;
    for (size_t i = 0; i < ork_arch_count(); i++)
        if (strlen(arch_table[i].name) == len && !memcmp(arch_table[i].name, name, len))
            return &arch_table[i];
    return NULL;
}

int ork_arch_check(const struct ork_arch_desc *d)
{
    const char *missing = NULL;
    if (d->norm != ORK_NORM_PRE)
        missing = "post-sublayer RMSNorm (norm placement post or both)";
    else if (d->act != ORK_FFN_SILU)
        missing = "the GELU FFN activation";
    else if (!d->ffn_gated)
        missing = "an ungated FFN";
    else if (d->embd_scale != ORK_EMBD_SCALE_NONE)
        missing = "embedding scaling";
    else if (d->attn_softcap)
        missing = "attention logit softcapping";
    else if (d->final_softcap)
        missing = "final logit softcapping";
    else if (d->sliding_window)
        missing = "sliding-window attention";
    else if (!d->layer_tensors || !d->n_layer_tensors)
        missing = "a layer tensor list";
    if (missing)
        return ork_errorf(ORK_EUNSUPPORTED, "architecture '%s' needs %s, which ork does not "
                          "implement", d->name, missing);
    return 0;
}

bool ork_arch_tensor_required(const struct ork_arch_desc *d, const struct ork_arch_tensor *t)
{
    switch (t->need) {
    case ORK_NEED_QKV_BIAS:
        return d->qkv_bias;
    case ORK_NEED_QK_NORM:
        return d->qk_norm;
    case ORK_NEED_ALWAYS:
    default:
        return true;
    }
}
