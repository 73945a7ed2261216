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
};

/* Where a block's RMSNorm sits relative to its sub-layer (attention, FFN). */
enum ork_norm_place {
    ORK_NORM_PRE = 0,           /* x + f(norm(x)) */
    ORK_NORM_POST = 1,          /* x + norm(f(x)) (not implemented) */
    ORK_NORM_BOTH = 2,          /* x + norm2(f(norm1(x))), e.g. Gemma 2 (not implemented) */
};

enum ork_ffn_act {
    ORK_FFN_SILU = 0,           /* SiLU (swish) */
    ORK_FFN_GELU = 1,           /* GELU, tanh approximation (not implemented) */
};

enum ork_embd_scale {
    ORK_EMBD_SCALE_NONE = 0,    /* the embedding row as stored */
    ORK_EMBD_SCALE_SQRT_DIM = 1,/* times sqrt(dim), e.g. Gemma (not implemented) */
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
    ORK_LT_COUNT,
};

/* A size a tensor's shape is stated in. */
enum ork_arch_dim {
    ORK_DIM_MODEL = 0,          /* embedding_length */
    ORK_DIM_Q,                  /* n_heads * head_dim */
    ORK_DIM_KV,                 /* n_kv_heads * head_dim */
    ORK_DIM_FFN,                /* feed_forward_length */
    ORK_DIM_HEAD,               /* head_dim */
};

enum ork_tensor_kind {
    ORK_TK_MAT = 0,             /* 2-D, any supported type: GGUF ne = [cols (inputs), rows] */
    ORK_TK_NORM,                /* 1-D F32 norm weight (synth fills ones) */
    ORK_TK_BIAS,                /* 1-D F32 bias */
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
    bool attn_softcap;          /* tanh softcap of attention scores (not implemented) */
    bool final_softcap;         /* tanh softcap of the logits (not implemented) */
    bool sliding_window;        /* layers with a sliding attention window (not implemented) */
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
