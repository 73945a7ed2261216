/* ork-tooling/synth.h -- synthetic models with the shapes of published ones.
 *
 * ork_synth_write streams a GGUF v3 file with the exact tensor shapes and hyperparameters of a
 * published model (presets table in src/tooling/synth.c, sources in docs/synth.md), filled with
 * seeded pseudo-random weights (std ~0.02, norms = 1) quantized to the requested type, and a
 * real tokenizer copied from another GGUF file (every tokenizer.* key) or a byte-level
 * fallback vocabulary. The output is for speed measurements and loader tests: it generates
 * tokens, never meaningful text. The same parameters always give the same bytes.
 *
 * Not here: the GGUF encoding (gguf_write.h), the quantized block formats (docs/kernels.md). */
#ifndef ORK_ENGINE_SYNTH_H
#define ORK_ENGINE_SYNTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ork_synth_preset {
    const char *arch;           /* "llama", "qwen2", "qwen3", "gemma2", "gemma3", "phi3",
                                 * "qwen3moe" */
    const char *name;           /* "1.7b" */
    const char *aliases;        /* other accepted names, '|'-separated ("" when none) */
    const char *source;         /* published model whose shapes these are */
    int32_t dim, n_layers, n_heads, n_kv_heads, head_dim, ffn_dim, n_vocab, n_ctx;
    float rope_base, rms_eps;
    bool tied;                  /* LM head shares token_embd (no output.weight) */
    /* Architecture extras (0: the key is not written; docs/synth.md cites each). */
    int32_t n_expert, n_expert_used, expert_ffn_dim;   /* MoE: <arch>.expert_* */
    int32_t swa_window;         /* <arch>.attention.sliding_window */
    float attn_softcap, final_softcap;  /* <arch>.attn/final_logit_softcapping */
    float rope_linear;          /* <arch>.rope.scaling.type linear, .factor */
    /* Llama 3.1+ rope scaling written as rope_freqs.weight (factor, low and high frequency
     * factors, original context), as convert_hf_to_gguf does */
    float llama3_factor, llama3_low, llama3_high;
    int32_t llama3_orig_ctx;
};

/* Presets: number, and entry i (NULL when out of range). */
size_t ork_synth_n_presets(void);
const struct ork_synth_preset *ork_synth_preset_at(size_t i);
/* Preset of an architecture by name or alias (NULL when unknown). */
const struct ork_synth_preset *ork_synth_preset_find(const char *arch, const char *name);

/* Progress callback: bytes of tensor data written so far of total. */
typedef void (*ork_synth_progress_fn)(void *user, uint64_t done, uint64_t total);

struct ork_synth_params {
    const char *arch;           /* required */
    const char *preset;         /* required */
    uint32_t type;              /* weight type: ORK_TYPE_F16, Q8_0, Q4_0 or Q4_K */
    int32_t n_layers;           /* > 0: override the preset's block count */
    int32_t n_vocab;            /* > 0: override the preset's vocabulary rows (small test models) */
    int n_threads;              /* generation threads; <= 0: online CPUs */
    uint64_t seed;
    const char *vocab_path;     /* GGUF to copy tokenizer.* from; NULL: byte-level fallback */
    const char *out_path;       /* required */
    ork_synth_progress_fn progress;  /* may be NULL */
    void *user;
};
void ork_synth_params_default(struct ork_synth_params *p);

struct ork_synth_info {
    uint64_t file_bytes;
    uint64_t n_params;          /* elements of all tensors */
    uint64_t n_tensors;
    int32_t n_vocab;            /* rows of token_embd (>= the tokenizer's token count) */
    int32_t n_tokens;           /* tokens of the tokenizer written */
    uint32_t n_fallback;        /* tensors stored as Q8_0 because their rows do not fit the
                                 * requested type's block (e.g. Q4_K with rows of 896) */
};

/* Write the file. Errors: ORK_EINVAL (unknown preset/arch, unsupported type; message names
 * it), ORK_EIO, ORK_EFORMAT (vocab file), ORK_ENOMEM. info may be NULL. A failed write
 * leaves no file behind. */
int ork_synth_write(const struct ork_synth_params *p, struct ork_synth_info *info);

/* Quantize n f32 values to `type` blocks (F16, Q8_0, Q4_0 or Q4_K; n a multiple of the
 * block). 0, ORK_EINVAL or ORK_EUNSUPPORTED. Dequantizing the result with ork_dequant_row
 * gives values within half a quantization step of x. */
int ork_synth_quantize_row(uint32_t type, const float *x, void *dst, int64_t n);

#ifdef __cplusplus
}
#endif
#endif
