/* ork-engine/arch.h -- the architecture descriptor: everything the forward pass varies on, one
 * entry per architecture in one table (src/engine/model/arch.c). The loader binds the tensors
 * an entry lists and refuses an entry whose settings need an op the engine does not implement;
 * forward.c reads the entry and never tests which architecture it runs. synth (ork-tooling)
 * writes the same tensors. Adding an architecture: docs/engine.md "Adding an architecture". */
#ifndef ORK_ENGINE_ARCH_H
#define ORK_ENGINE_ARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum ork_arch {
    ORK_ARCH_LLAMA = 0,         /* RoPE on adjacent pairs (the GGUF converter permutes Q/K for it) */
    ORK_ARCH_QWEN2 = 1,         /* NEOX RoPE, q/k/v biases */
    ORK_ARCH_QWEN3 = 2,         /* NEOX RoPE, per-head RMSNorm of q and k before RoPE */
    ORK_ARCH_GEMMA2 = 3,        /* GeGLU, post-norms, softcaps, sliding window every 2nd layer */
    ORK_ARCH_GEMMA3 = 4,        /* gemma2 + q/k norms, per-layer rope bases, no attention cap */
    ORK_ARCH_PHI3 = 5,          /* fused QKV and gate|up, LongRoPE factors */
    ORK_ARCH_QWEN3MOE = 6,      /* qwen3 attention, top-k routed experts */
};

/* Which elements RoPE rotates together (ork_rope_ext's neox argument). */
enum ork_rope_style {
    ORK_ROPE_NORM = 0,          /* adjacent pairs (2i, 2i + 1): llama */
    ORK_ROPE_NEOX = 1,          /* halves (i, i + n_rot / 2): GPT-NeoX, qwen */
};

/* RoPE scaling an architecture accepts (bits). */
enum ork_rope_scaling {
    ORK_ROPE_SCALING_LINEAR = 1u << 0,  /* <arch>.rope.scaling.type linear / rope.scale_linear */
    ORK_ROPE_SCALING_FACTORS = 1u << 1, /* rope_freqs.weight per-pair divisors (Llama 3.1+) */
    ORK_ROPE_SCALING_LONGROPE = 1u << 2,/* rope_factors_short/long.weight + rope.scaling.attn_factor
                                         * (Phi-3: ARCHS.md "phi3", llama-model.cpp:2039-2052) */
};

/* Where a block's RMSNorm sits relative to its sub-layer (attention, FFN). */
enum ork_norm_place {
    ORK_NORM_PRE = 0,           /* x + f(norm(x)) */
    ORK_NORM_POST = 1,          /* x + norm(f(x)) (not implemented) */
    ORK_NORM_BOTH = 2,          /* x + norm2(f(norm1(x))), Gemma 2/3 (post_attention_norm,
                                 * post_ffw_norm) */
};

enum ork_ffn_act {
    ORK_FFN_SILU = 0,           /* SiLU (swish) */
    ORK_FFN_GELU = 1,           /* GELU, tanh approximation through llama.cpp's FP16 table
                                 * (ops_arch.c) */
};

enum ork_embd_scale {
    ORK_EMBD_SCALE_NONE = 0,    /* the embedding row as stored */
    ORK_EMBD_SCALE_SQRT_DIM = 1,/* times sqrt(dim), Gemma (gemma2.cpp:70, gemma3.cpp:93) */
};

/* When a tanh softcap cap * tanh(s / cap) applies (attention scores or final logits). */
enum ork_softcap {
    ORK_SOFTCAP_OFF = 0,        /* never (the key is ignored) */
    ORK_SOFTCAP_IF_KEY = 1,     /* only when the file has the key (gemma3 final) */
    ORK_SOFTCAP_ALWAYS = 2,     /* always; the descriptor's default cap without the key */
};

/* Which RoPE base and scale sliding-window layers use. */
enum ork_swa_rope {
    ORK_SWA_ROPE_GLOBAL = 0,    /* the global layers' (gemma2: gemma2.cpp:10-13) */
    ORK_SWA_ROPE_OWN = 1,       /* rope.freq_base_swa (default 10000), scale 1 (gemma3:
                                 * llama-hparams.h:127-129) */
};

enum ork_output_tie {
    ORK_OUTPUT_TIED_IF_ABSENT = 0,  /* output.weight when present, else token_embd */
    ORK_OUTPUT_TIED = 1,            /* always token_embd (output.weight is ignored) */
};

/* The per-layer weights a descriptor's tensor list can bind. */
enum ork_layer_tensor {
    ORK_LT_ATTN_NORM = 0, ORK_LT_WQ, ORK_LT_WK, ORK_LT_WV, ORK_LT_BQ, ORK_LT_BK, ORK_LT_BV,
    ORK_LT_Q_NORM, ORK_LT_K_NORM, ORK_LT_WO, ORK_LT_FFN_NORM, ORK_LT_W_GATE, ORK_LT_W_UP,
    ORK_LT_W_DOWN,
    ORK_LT_POST_ATTN_NORM,      /* Gemma post_attention_norm */
    ORK_LT_POST_FFN_NORM,       /* Gemma post_ffw_norm */
    ORK_LT_WQKV,                /* phi3 attn_qkv: rows Q | K | V, bound as wq/wk/wv views */
    ORK_LT_W_GATE_UP,           /* phi3 ffn_up: rows gate | up, bound as w_gate/w_up views */
    ORK_LT_GATE_INP,            /* MoE router ffn_gate_inp (n_expert, dim) */
    ORK_LT_GATE_EXPS,           /* MoE ffn_gate_exps (n_expert x ffn_exp, dim), 3-D */
    ORK_LT_UP_EXPS,             /* MoE ffn_up_exps (n_expert x ffn_exp, dim), 3-D */
    ORK_LT_DOWN_EXPS,           /* MoE ffn_down_exps (n_expert x dim, ffn_exp), 3-D */
    ORK_LT_COUNT,
};

/* A size a tensor's shape is stated in. */
enum ork_arch_dim {
    ORK_DIM_MODEL = 0,          /* embedding_length */
    ORK_DIM_Q,                  /* n_heads * head_dim */
    ORK_DIM_KV,                 /* n_kv_heads * head_dim */
    ORK_DIM_FFN,                /* feed_forward_length */
    ORK_DIM_HEAD,               /* head_dim */
    ORK_DIM_QKV,                /* (n_heads + 2 n_kv_heads) * head_dim: fused QKV */
    ORK_DIM_FFN2,               /* 2 * feed_forward_length: fused gate|up */
    ORK_DIM_EXPERTS,            /* expert_count */
    ORK_DIM_FFN_EXP,            /* expert_feed_forward_length */
};

enum ork_tensor_kind {
    ORK_TK_MAT = 0,             /* 2-D, any supported type: GGUF ne = [cols (inputs), rows] */
    ORK_TK_NORM,                /* 1-D F32 norm weight (synth fills ones) */
    ORK_TK_BIAS,                /* 1-D F32 bias */
    ORK_TK_EXPS,                /* 3-D experts: GGUF ne = [cols, rows, n_expert], bound as one
                                 * matrix of n_expert * rows rows (expert e: rows e*rows ..) */
};

/* When a tensor of the list must be present. An optional tensor is bound when the file has it
 * (a bias or q/k norm is then applied), so a file with extra biases still runs as written. */
enum ork_tensor_need {
    ORK_NEED_ALWAYS = 0,
    ORK_NEED_QKV_BIAS,          /* required when the descriptor's qkv_bias is set */
    ORK_NEED_QK_NORM,           /* required when qk_norm is set */
};

/* One tensor of a layer: blk.<l>.<suffix>, shape (rows, cols) in descriptor dims (a vector has
 * rows only), bound into `slot`. */
struct ork_arch_tensor {
    const char *suffix;         /* "attn_q.weight" */
    enum ork_layer_tensor slot;
    enum ork_tensor_kind kind;
    enum ork_arch_dim rows;     /* outputs (matrix) or length (vector) */
    enum ork_arch_dim cols;     /* inputs (matrices only) */
    enum ork_tensor_need need;
};

struct ork_arch_desc {
    const char *name;           /* general.architecture, and the metadata key prefix */
    enum ork_arch arch;
    enum ork_rope_style rope;
    uint32_t rope_scaling;      /* enum ork_rope_scaling bits the loader accepts */
    enum ork_norm_place norm;
    enum ork_ffn_act act;
    bool ffn_gated;             /* act(W_gate x) * W_up x; false: act(W_up x) (not implemented) */
    enum ork_embd_scale embd_scale;
    bool qkv_bias;              /* attn_q/k/v.bias required */
    bool qk_norm;               /* per-head RMSNorm of q and k before RoPE required */
    enum ork_softcap attn_softcap;  /* <arch>.attn_logit_softcapping (no "attention." prefix) */
    float attn_softcap_default;
    enum ork_softcap final_softcap; /* <arch>.final_logit_softcapping */
    float final_softcap_default;
    /* sliding-window layers: layer l is local iff l % period < period - 1 (llama-hparams.cpp:15);
     * <arch>.attention.sliding_window (0: none) and .sliding_window_pattern (scalar) override
     * the defaults; false: the keys are ignored (phi3: phi3.cpp:14-24) */
    bool sliding_window;
    int32_t swa_window_default;     /* 0: no window unless the key is present */
    int32_t swa_period_default;
    enum ork_swa_rope swa_rope;
    /* attention scale 1/sqrt(head_dim), or 1/sqrt(dim / n_heads) when block_count equals
     * attn_scale_alt_layers (Gemma's "27B" rule: gemma2.cpp:19-29, gemma3.cpp:20-33; 0: never) */
    int32_t attn_scale_alt_layers;
    bool moe;                       /* routed experts replace the FFN (qwen3moe) */
    enum ork_output_tie output;
    const struct ork_arch_tensor *layer_tensors;   /* bound per layer, in file order */
    size_t n_layer_tensors;
};

/* The descriptor named `name` (len bytes, not NUL-terminated; len = strlen for C strings),
 * or NULL when ork does not know it. */
const struct ork_arch_desc *ork_arch_find(const char *name, size_t len);
/* Table access (i < ork_arch_count()). */
size_t ork_arch_count(void);
const struct ork_arch_desc *ork_arch_at(size_t i);
/* 0, or ORK_EUNSUPPORTED with a message naming the first setting of d the engine has no op
 * for (the loader calls it before binding anything). */
int ork_arch_check(const struct ork_arch_desc *d);
/* Whether tensor t is required under d (ORK_NEED_*). */
bool ork_arch_tensor_required(const struct ork_arch_desc *d, const struct ork_arch_tensor *t);

#ifdef __cplusplus
}
#endif
#endif
