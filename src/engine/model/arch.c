/* arch.c -- the architecture table (ork-engine/arch.h): one descriptor per architecture the
 * engine runs, and the check that refuses settings with no op behind them.
 *
 * Sources: llama and qwen2/qwen3 layouts as llama.cpp's converter writes them (tensor names,
 * NEOX RoPE for the qwen families, qwen2's q/k/v biases, qwen3's per-head q/k RMSNorm); the
 * published model code (Hugging Face transformers modeling_llama / modeling_qwen2 /
 * modeling_qwen3) for norm placement and the gated SiLU FFN. gemma2, gemma3, phi3 and qwen3moe:
 * the rules ../shared/fixtures/ARCHS.md lists with their llama.cpp source lines (cited per
 * field below); docs/engine.md "Architectures" has the table. */
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

/* Gemma 2/3: llama's list plus the post-norms (gemma2.cpp:80-152); q/k norms bound when
 * present (required by gemma3's qk_norm). No output.weight (tied). */
static const struct ork_arch_tensor gemma_layer[] = {
    { "attn_norm.weight",   ORK_LT_ATTN_NORM, ORK_TK_NORM, ORK_DIM_MODEL, 0, ORK_NEED_ALWAYS },
    { "attn_q.weight",      ORK_LT_WQ,        ORK_TK_MAT,  ORK_DIM_Q, ORK_DIM_MODEL, ORK_NEED_ALWAYS },
    { "attn_k.weight",      ORK_LT_WK,        ORK_TK_MAT,  ORK_DIM_KV, ORK_DIM_MODEL, ORK_NEED_ALWAYS },
    { "attn_v.weight",      ORK_LT_WV,        ORK_TK_MAT,  ORK_DIM_KV, ORK_DIM_MODEL, ORK_NEED_ALWAYS },
    { "attn_q_norm.weight", ORK_LT_Q_NORM,    ORK_TK_NORM, ORK_DIM_HEAD, 0, ORK_NEED_QK_NORM },
    { "attn_k_norm.weight", ORK_LT_K_NORM,    ORK_TK_NORM, ORK_DIM_HEAD, 0, ORK_NEED_QK_NORM },
    { "attn_output.weight", ORK_LT_WO,        ORK_TK_MAT,  ORK_DIM_MODEL, ORK_DIM_Q, ORK_NEED_ALWAYS },
    { "post_attention_norm.weight", ORK_LT_POST_ATTN_NORM, ORK_TK_NORM, ORK_DIM_MODEL, 0,
      ORK_NEED_ALWAYS },
    { "ffn_norm.weight",    ORK_LT_FFN_NORM,  ORK_TK_NORM, ORK_DIM_MODEL, 0, ORK_NEED_ALWAYS },
    { "ffn_gate.weight",    ORK_LT_W_GATE,    ORK_TK_MAT,  ORK_DIM_FFN, ORK_DIM_MODEL, ORK_NEED_ALWAYS },
    { "ffn_up.weight",      ORK_LT_W_UP,      ORK_TK_MAT,  ORK_DIM_FFN, ORK_DIM_MODEL, ORK_NEED_ALWAYS },
    { "ffn_down.weight",    ORK_LT_W_DOWN,    ORK_TK_MAT,  ORK_DIM_MODEL, ORK_DIM_FFN, ORK_NEED_ALWAYS },
    { "post_ffw_norm.weight", ORK_LT_POST_FFN_NORM, ORK_TK_NORM, ORK_DIM_MODEL, 0, ORK_NEED_ALWAYS },
};

/* phi3: fused attn_qkv (rows Q | K | V: llama-graph.cpp:1615-1622) and ffn_up holding gate |
 * up (phi3.cpp:52, 149; LLM_FFN_SEQ: the first half is the gate). */
static const struct ork_arch_tensor phi3_layer[] = {
    { "attn_norm.weight",   ORK_LT_ATTN_NORM, ORK_TK_NORM, ORK_DIM_MODEL, 0, ORK_NEED_ALWAYS },
    { "attn_qkv.weight",    ORK_LT_WQKV,      ORK_TK_MAT,  ORK_DIM_QKV, ORK_DIM_MODEL, ORK_NEED_ALWAYS },
    { "attn_output.weight", ORK_LT_WO,        ORK_TK_MAT,  ORK_DIM_MODEL, ORK_DIM_Q, ORK_NEED_ALWAYS },
    { "ffn_norm.weight",    ORK_LT_FFN_NORM,  ORK_TK_NORM, ORK_DIM_MODEL, 0, ORK_NEED_ALWAYS },
    { "ffn_up.weight",      ORK_LT_W_GATE_UP, ORK_TK_MAT,  ORK_DIM_FFN2, ORK_DIM_MODEL, ORK_NEED_ALWAYS },
    { "ffn_down.weight",    ORK_LT_W_DOWN,    ORK_TK_MAT,  ORK_DIM_MODEL, ORK_DIM_FFN, ORK_NEED_ALWAYS },
};

/* qwen3moe: qwen3's attention, then the router and the 3-D expert tensors (expert e is the
 * e-th contiguous block: qwen3moe.cpp, llama-graph.cpp:1946-2069). */
static const struct ork_arch_tensor qwen3moe_layer[] = {
    { "attn_norm.weight",   ORK_LT_ATTN_NORM, ORK_TK_NORM, ORK_DIM_MODEL, 0, ORK_NEED_ALWAYS },
    { "attn_q.weight",      ORK_LT_WQ,        ORK_TK_MAT,  ORK_DIM_Q, ORK_DIM_MODEL, ORK_NEED_ALWAYS },
    { "attn_k.weight",      ORK_LT_WK,        ORK_TK_MAT,  ORK_DIM_KV, ORK_DIM_MODEL, ORK_NEED_ALWAYS },
    { "attn_v.weight",      ORK_LT_WV,        ORK_TK_MAT,  ORK_DIM_KV, ORK_DIM_MODEL, ORK_NEED_ALWAYS },
    { "attn_q_norm.weight", ORK_LT_Q_NORM,    ORK_TK_NORM, ORK_DIM_HEAD, 0, ORK_NEED_QK_NORM },
    { "attn_k_norm.weight", ORK_LT_K_NORM,    ORK_TK_NORM, ORK_DIM_HEAD, 0, ORK_NEED_QK_NORM },
    { "attn_output.weight", ORK_LT_WO,        ORK_TK_MAT,  ORK_DIM_MODEL, ORK_DIM_Q, ORK_NEED_ALWAYS },
    { "ffn_norm.weight",    ORK_LT_FFN_NORM,  ORK_TK_NORM, ORK_DIM_MODEL, 0, ORK_NEED_ALWAYS },
    { "ffn_gate_inp.weight", ORK_LT_GATE_INP, ORK_TK_MAT,  ORK_DIM_EXPERTS, ORK_DIM_MODEL,
      ORK_NEED_ALWAYS },
    { "ffn_gate_exps.weight", ORK_LT_GATE_EXPS, ORK_TK_EXPS, ORK_DIM_FFN_EXP, ORK_DIM_MODEL,
      ORK_NEED_ALWAYS },
    { "ffn_up_exps.weight", ORK_LT_UP_EXPS,   ORK_TK_EXPS, ORK_DIM_FFN_EXP, ORK_DIM_MODEL,
      ORK_NEED_ALWAYS },
    { "ffn_down_exps.weight", ORK_LT_DOWN_EXPS, ORK_TK_EXPS, ORK_DIM_MODEL, ORK_DIM_FFN_EXP,
      ORK_NEED_ALWAYS },
};

#define LLAMA_LAYER llama_layer, sizeof llama_layer / sizeof llama_layer[0]
#define GEMMA_LAYER gemma_layer, sizeof gemma_layer / sizeof gemma_layer[0]
#define PHI3_LAYER phi3_layer, sizeof phi3_layer / sizeof phi3_layer[0]
#define QWEN3MOE_LAYER qwen3moe_layer, sizeof qwen3moe_layer / sizeof qwen3moe_layer[0]
#define ROPE_SCALING_ALL (ORK_ROPE_SCALING_LINEAR | ORK_ROPE_SCALING_FACTORS)

/* Defaults when a Gemma file omits a key (ARCHS.md "gemma2"/"gemma3"). */
#define GEMMA_ATTN_SOFTCAP_DEFAULT 50.0f    /* llama-hparams.h:110 */
#define GEMMA_FINAL_SOFTCAP_DEFAULT 30.0f   /* llama-hparams.h:112 */
#define GEMMA2_SWA_WINDOW_DEFAULT 4096      /* gemma2.cpp:5 */
#define GEMMA2_SWA_PERIOD_DEFAULT 2         /* gemma2.cpp:6 */
#define GEMMA3_SWA_PERIOD_DEFAULT 6         /* gemma3.cpp:4-15 */
#define GEMMA2_27B_LAYERS 46                /* gemma2.cpp:19-23: type 27B scale rule */
#define GEMMA3_27B_LAYERS 62                /* gemma3.cpp:20-33 */

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
    { .name = "gemma2", .arch = ORK_ARCH_GEMMA2, .rope = ORK_ROPE_NEOX,
      .rope_scaling = ORK_ROPE_SCALING_LINEAR, .norm = ORK_NORM_BOTH, .act = ORK_FFN_GELU,
      .ffn_gated = true, .embd_scale = ORK_EMBD_SCALE_SQRT_DIM,
      .attn_softcap = ORK_SOFTCAP_ALWAYS, .attn_softcap_default = GEMMA_ATTN_SOFTCAP_DEFAULT,
      .final_softcap = ORK_SOFTCAP_ALWAYS, .final_softcap_default = GEMMA_FINAL_SOFTCAP_DEFAULT,
      .sliding_window = true, .swa_window_default = GEMMA2_SWA_WINDOW_DEFAULT,
      .swa_period_default = GEMMA2_SWA_PERIOD_DEFAULT, .swa_rope = ORK_SWA_ROPE_GLOBAL,
      .attn_scale_alt_layers = GEMMA2_27B_LAYERS, .output = ORK_OUTPUT_TIED,
      .layer_tensors = GEMMA_LAYER },
    { .name = "gemma3", .arch = ORK_ARCH_GEMMA3, .rope = ORK_ROPE_NEOX,
      .rope_scaling = ORK_ROPE_SCALING_LINEAR, .norm = ORK_NORM_BOTH, .act = ORK_FFN_GELU,
      .ffn_gated = true, .embd_scale = ORK_EMBD_SCALE_SQRT_DIM, .qk_norm = true,
      .final_softcap = ORK_SOFTCAP_IF_KEY, .final_softcap_default = GEMMA_FINAL_SOFTCAP_DEFAULT,
      .sliding_window = true, .swa_window_default = 0,
      .swa_period_default = GEMMA3_SWA_PERIOD_DEFAULT, .swa_rope = ORK_SWA_ROPE_OWN,
      .attn_scale_alt_layers = GEMMA3_27B_LAYERS, .output = ORK_OUTPUT_TIED_IF_ABSENT,
      .layer_tensors = GEMMA_LAYER },
    { .name = "phi3", .arch = ORK_ARCH_PHI3, .rope = ORK_ROPE_NEOX,
      .rope_scaling = ORK_ROPE_SCALING_LINEAR | ORK_ROPE_SCALING_FACTORS |
                      ORK_ROPE_SCALING_LONGROPE,
      .norm = ORK_NORM_PRE, .act = ORK_FFN_SILU, .ffn_gated = true,
      .output = ORK_OUTPUT_TIED_IF_ABSENT, .layer_tensors = PHI3_LAYER },
    { .name = "qwen3moe", .arch = ORK_ARCH_QWEN3MOE, .rope = ORK_ROPE_NEOX,
      .rope_scaling = ROPE_SCALING_ALL, .norm = ORK_NORM_PRE, .act = ORK_FFN_SILU,
      .ffn_gated = true, .qk_norm = true, .moe = true, .output = ORK_OUTPUT_TIED_IF_ABSENT,
      .layer_tensors = QWEN3MOE_LAYER },
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
    if (d->norm == ORK_NORM_POST)
        missing = "post-sublayer RMSNorm without a pre-norm (norm placement post)";
    else if (d->act != ORK_FFN_SILU && d->act != ORK_FFN_GELU)
        missing = "an unknown FFN activation";
    else if (!d->ffn_gated)
        missing = "an ungated FFN";
    else if (d->embd_scale != ORK_EMBD_SCALE_NONE && d->embd_scale != ORK_EMBD_SCALE_SQRT_DIM)
        missing = "an unknown embedding scale";
    else if (d->moe && d->act != ORK_FFN_SILU)
        missing = "experts with an activation other than SiLU";
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
