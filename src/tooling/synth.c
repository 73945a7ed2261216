/* synth.c -- synthetic GGUF models with the shapes of published ones (see ork-tooling/synth.h).
 *
 * Tensor names and shapes are the ones ork's loader binds (src/engine/model/model.c): the layer
 * tensors the architecture's descriptor requires (ork-engine/arch.h), in its order; token_embd, blk.N.{attn_norm, attn_q/k/v (+ .bias for qwen2), attn_q_norm/attn_k_norm (qwen3),
 * attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down}, output_norm, output (untied presets only).
 * Weights: per row a splitmix64 stream seeded from (seed, tensor name, row); each element is the
 * sum of four 16-bit uniforms (Irwin-Hall, close to normal) scaled to std WEIGHT_STD. Norm
 * weights are 1, biases use the same generator. Matrices are quantized to the requested type;
 * a matrix whose rows are not a multiple of that type's block falls back to Q8_0. Rows are
 * generated and quantized in parallel (a thread pool), then written in order.
 *
 * Not here: the GGUF encoding (gguf_write.c), the quantizers (synth_quant.c). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/log.h>
#include <ork-engine/arch.h>
#include <ork-engine/gguf.h>
#include <ork-engine/gguf_write.h>
#include <ork-tooling/synth.h>
#include <ork-kernels/kernels.h>
#include <ork-kernels/pool.h>
#include <ork-kernels/types.h>

/* Standard deviation of the random weights: the usual initializer range of these model
 * families (config.json "initializer_range": 0.02); keeps activations finite through all
 * layers with unit norms. */
#define WEIGHT_STD 0.02f
/* Output chunk: rows are generated and quantized in groups of about this many bytes. */
#define CHUNK_BYTES (4u << 20)
/* splitmix64 increment and finalizer constants (Steele, Lea, Flood 2014). */
#define SM64_GAMMA 0x9e3779b97f4a7c15ull
#define SM64_M1 0xbf58476d1ce4e5b9ull
#define SM64_M2 0x94d049bb133111ebull
/* Odd multiplier separating the per-row streams (an LCG multiplier from Steele & Vigna 2021). */
#define ROW_STRIDE 0xd1342543de582b55ull
/* Irwin-Hall of four uniforms on [0, 65535]: mean 4 * 32767.5, std 65536 / sqrt(3). */
#define IH_MEAN 131070.0f
#define IH_STD_INV (1.7320508f / 65536.0f)
/* llama.cpp file-type ids recorded in general.file_type (LLAMA_FTYPE_MOSTLY_*). */
#define FTYPE_F16 1
#define FTYPE_Q4_0 2
#define FTYPE_Q8_0 7
#define FTYPE_Q4_K_S 14
#define QUANT_VERSION 2         /* general.quantization_version of current GGUF quants */
/* GGUF token types (tokenizer.ggml.token_type). */
#define TOKTYPE_NORMAL 1
#define TOKTYPE_CONTROL 3
#define TOKTYPE_UNUSED 5
#define N_BYTE_TOKENS 256

/* Llama 3.1 / 3.2 rope scaling (their config.json rope_scaling: factor 8 for 3.1, 32 for 3.2,
 * low_freq_factor 1, high_freq_factor 4, original_max_position_embeddings 8192). */
#define LLAMA32_ROPE_FACTOR 32.0f
#define LLAMA3_ROPE_LOW 1.0f
#define LLAMA3_ROPE_HIGH 4.0f
#define LLAMA3_ROPE_ORIG_CTX 8192
#define SYNTH_PI 3.14159265358979323846

/* Shapes from each model's published config.json (Hugging Face model cards); docs/synth.md
 * lists them. Aliases map the sizes 0.5b / 1.7b / 3b / 7b onto the nearest published model of
 * each family. */
/* The published shape of a preset, as designated initializers (the extras follow by name). */
#define SHAPE(a, n, al, src, d, l, h, kv, hd, ff, voc, ctx, rope, eps, tie)                    \
    .arch = a, .name = n, .aliases = al, .source = src, .dim = d, .n_layers = l, .n_heads = h, \
    .n_kv_heads = kv, .head_dim = hd, .ffn_dim = ff, .n_vocab = voc, .n_ctx = ctx,            \
    .rope_base = rope, .rms_eps = eps, .tied = tie

static const struct ork_synth_preset presets[] = {
    /* arch   name   aliases    source                 dim   L   H  KV  hd  ffn    vocab  ctx  rope  eps  tied */
    { SHAPE("qwen2", "0.5b", "",       "Qwen2.5-0.5B",  896, 24, 14, 2, 64, 4864, 151936, 32768, 1e6f, 1e-6f, true) },
    { SHAPE("qwen2", "1.5b", "1.7b",   "Qwen2.5-1.5B", 1536, 28, 12, 2, 128, 8960, 151936, 32768, 1e6f, 1e-6f, true) },
    { SHAPE("qwen2", "3b",   "",       "Qwen2.5-3B",   2048, 36, 16, 2, 128, 11008, 151936, 32768, 1e6f, 1e-6f, true) },
    { SHAPE("qwen2", "7b",   "",       "Qwen2.5-7B",   3584, 28, 28, 4, 128, 18944, 152064, 32768, 1e6f, 1e-6f, false) },
    { SHAPE("qwen3", "0.6b", "0.5b",   "Qwen3-0.6B",   1024, 28, 16, 8, 128, 3072, 151936, 40960, 1e6f, 1e-6f, true) },
    { SHAPE("qwen3", "1.7b", "",       "Qwen3-1.7B",   2048, 28, 16, 8, 128, 6144, 151936, 40960, 1e6f, 1e-6f, true) },
    { SHAPE("qwen3", "4b",   "3b",     "Qwen3-4B",     2560, 36, 32, 8, 128, 9728, 151936, 40960, 1e6f, 1e-6f, true) },
    { SHAPE("qwen3", "8b",   "7b",     "Qwen3-8B",     4096, 36, 32, 8, 128, 12288, 151936, 40960, 1e6f, 1e-6f, false) },
    { SHAPE("llama", "1b",   "0.5b|1.7b", "Llama-3.2-1B", 2048, 16, 32, 8, 64, 8192, 128256, 131072, 5e5f, 1e-5f, true),
      .llama3_factor = LLAMA32_ROPE_FACTOR, .llama3_low = LLAMA3_ROPE_LOW,
      .llama3_high = LLAMA3_ROPE_HIGH, .llama3_orig_ctx = LLAMA3_ROPE_ORIG_CTX },
    { SHAPE("llama", "3b",   "",       "Llama-3.2-3B", 3072, 28, 24, 8, 128, 8192, 128256, 131072, 5e5f, 1e-5f, true),
      .llama3_factor = LLAMA32_ROPE_FACTOR, .llama3_low = LLAMA3_ROPE_LOW,
      .llama3_high = LLAMA3_ROPE_HIGH, .llama3_orig_ctx = LLAMA3_ROPE_ORIG_CTX },
    { SHAPE("llama", "7b",   "",       "Llama-2-7B",   4096, 32, 32, 32, 128, 11008, 32000, 4096, 1e4f, 1e-5f, false) },
    { SHAPE("llama", "8b",   "",       "Llama-3.1-8B", 4096, 32, 32, 8, 128, 14336, 128256, 131072, 5e5f, 1e-5f, false) },
    /* Gemma 2/3: head_dim 256, sliding windows (period: the architecture's default), GeGLU */
    { SHAPE("gemma2", "2b",  "",       "Gemma-2-2B",   2304, 26, 8, 4, 256, 9216, 256000, 8192, 1e4f, 1e-6f, true),
      .swa_window = 4096, .attn_softcap = 50.0f, .final_softcap = 30.0f },
    { SHAPE("gemma3", "1b",  "",       "Gemma-3-1B",   1152, 26, 4, 1, 256, 6912, 262144, 32768, 1e6f, 1e-6f, true),
      .swa_window = 512 },
    { SHAPE("gemma3", "4b",  "",       "Gemma-3-4B",   2560, 34, 8, 4, 256, 10240, 262208, 131072, 1e6f, 1e-6f, true),
      .swa_window = 1024, .rope_linear = 8.0f },
    /* Phi-3-mini-4k: fused attn_qkv and gate|up, MHA, head_dim 96; its 2047 window is ignored
     * by llama.cpp (phi3.cpp:14-24) and by ork */
    { SHAPE("phi3", "mini",  "3.8b|4b", "Phi-3-mini-4k", 3072, 32, 32, 32, 96, 8192, 32064, 4096, 1e4f, 1e-5f, false),
      .swa_window = 2047 },
    /* Qwen3-30B-A3B: 128 experts of 768, 8 used; feed_forward_length is the dense 6144 */
    { SHAPE("qwen3moe", "30b-a3b", "30b", "Qwen3-30B-A3B", 2048, 48, 32, 4, 128, 6144, 151936, 40960, 1e6f, 1e-6f, false),
      .n_expert = 128, .n_expert_used = 8, .expert_ffn_dim = 768 },
};

size_t ork_synth_n_presets(void)
{
    return sizeof presets / sizeof presets[0];
}

const struct ork_synth_preset *ork_synth_preset_at(size_t i)
{
    return i < ork_synth_n_presets() ? &presets[i] : NULL;
}

static bool alias_match(const char *aliases, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = aliases; *p;) {
        const char *e = strchr(p, '|');
        size_t k = e ? (size_t)(e - p) : strlen(p);
        if (k == n && !memcmp(p, name, n))
            return true;
        if (!e)
            break;
        p = e + 1;
    }
    return false;
}

const struct ork_synth_preset *ork_synth_preset_find(const char *arch, const char *name)
{
    if (!arch || !name)
        return NULL;
    for (size_t i = 0; i < ork_synth_n_presets(); i++)
        if (!strcmp(presets[i].arch, arch) && !strcmp(presets[i].name, name))
            return &presets[i];
    for (size_t i = 0; i < ork_synth_n_presets(); i++)
        if (!strcmp(presets[i].arch, arch) && alias_match(presets[i].aliases, name))
            return &presets[i];
    return NULL;
}

void ork_synth_params_default(struct ork_synth_params *p)
{
    memset(p, 0, sizeof(*p));
    p->type = ORK_TYPE_Q8_0;
    p->seed = 1;
}

/* ---- random numbers ------------------------------------------------------------------- */

static inline uint64_t sm64_next(uint64_t *s)
{
    uint64_t z = (*s += SM64_GAMMA);
    z = (z ^ (z >> 30)) * SM64_M1;
    z = (z ^ (z >> 27)) * SM64_M2;
    return z ^ (z >> 31);
}

/* FNV-1a 64-bit of a string (offset basis and prime from the FNV specification). */
static uint64_t fnv1a(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h;
}

static void fill_random(uint64_t *state, float *x, size_t n, float std)
{
    float k = std * IH_STD_INV;
    for (size_t i = 0; i < n; i++) {
        uint64_t r = sm64_next(state);
        float s = (float)((r & 0xffff) + ((r >> 16) & 0xffff) + ((r >> 32) & 0xffff) + (r >> 48));
        x[i] = (s - IH_MEAN) * k;
    }
}

/* ---- tensor plan ------------------------------------------------------------------------ */

enum fill { FILL_RANDOM, FILL_ONES, FILL_LLAMA3_ROPE };

struct plan_tensor {
    char name[64];
    uint32_t n_dims;
    uint64_t ne[3];
    uint32_t type;
    enum fill fill;
};

struct plan {
    struct plan_tensor *t;
    size_t n, cap;
};

static int plan_add3(struct plan *pl, const char *name, uint32_t n_dims, uint64_t ne0,
                     uint64_t ne1, uint64_t ne2, uint32_t type, enum fill fill)
{
    if (pl->n == pl->cap) {
        size_t cap = pl->cap ? pl->cap * 2 : 256;
        struct plan_tensor *t = ork_realloc(pl->t, cap * sizeof(*t));
        if (!t)
            return ORK_ENOMEM;
        pl->t = t;
        pl->cap = cap;
    }
    struct plan_tensor *t = &pl->t[pl->n++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->n_dims = n_dims;
    t->ne[0] = ne0;
    t->ne[1] = ne1;
    t->ne[2] = ne2;
    t->type = type;
    t->fill = fill;
    return 0;
}

static int plan_add(struct plan *pl, const char *name, uint32_t n_dims, uint64_t ne0, uint64_t ne1,
                    uint32_t type, enum fill fill)
{
    return plan_add3(pl, name, n_dims, ne0, ne1, 1, type, fill);
}

/* Rows of a tensor (its elements / ne[0]). */
static uint64_t plan_rows(const struct plan_tensor *t)
{
    return t->n_dims >= 3 ? t->ne[1] * t->ne[2] : t->n_dims == 2 ? t->ne[1] : 1;
}

/* Type for a matrix with rows of k elements: the requested one when k fits its block. */
static uint32_t mat_type(uint32_t want, uint64_t k, uint32_t *n_fallback)
{
    const struct ork_type_traits *tr = ork_type_traits(want);
    if (k % tr->block == 0)
        return want;
    (*n_fallback)++;
    return ORK_TYPE_Q8_0;
}

/* The size a descriptor dimension stands for in preset ps. */
static uint64_t synth_dim(const struct ork_synth_preset *ps, enum ork_arch_dim d)
{
    switch (d) {
    case ORK_DIM_Q:
        return (uint64_t)ps->n_heads * (uint64_t)ps->head_dim;
    case ORK_DIM_KV:
        return (uint64_t)ps->n_kv_heads * (uint64_t)ps->head_dim;
    case ORK_DIM_FFN:
        return (uint64_t)ps->ffn_dim;
    case ORK_DIM_HEAD:
        return (uint64_t)ps->head_dim;
    case ORK_DIM_QKV:
        return ((uint64_t)ps->n_heads + 2 * (uint64_t)ps->n_kv_heads) * (uint64_t)ps->head_dim;
    case ORK_DIM_FFN2:
        return 2 * (uint64_t)ps->ffn_dim;
    case ORK_DIM_EXPERTS:
        return (uint64_t)ps->n_expert;
    case ORK_DIM_FFN_EXP:
        return (uint64_t)ps->expert_ffn_dim;
    case ORK_DIM_MODEL:
    default:
        return (uint64_t)ps->dim;
    }
}

/* The tensors of the file: the layer tensors the architecture's descriptor requires, in its
 * order (ork-engine/arch.h; optional ones are left out), between the embedding and the head. */
static int build_plan(const struct ork_synth_preset *ps, const struct ork_arch_desc *ad,
                      int32_t n_layers, int32_t n_vocab, uint32_t type, struct plan *pl,
                      uint32_t *n_fallback)
{
    uint64_t dim = (uint64_t)ps->dim;
    char nm[64];
    int ret;
    if ((ret = plan_add(pl, "token_embd.weight", 2, dim, (uint64_t)n_vocab,
                        mat_type(type, dim, n_fallback), FILL_RANDOM)) < 0)
        return ret;
    if (ps->llama3_factor > 0.0f &&
        (ret = plan_add(pl, "rope_freqs.weight", 1, (uint64_t)ps->head_dim / 2, 1, ORK_TYPE_F32,
                        FILL_LLAMA3_ROPE)) < 0)
        return ret;
    for (int32_t l = 0; l < n_layers; l++) {
        for (size_t i = 0; i < ad->n_layer_tensors; i++) {
            const struct ork_arch_tensor *t = &ad->layer_tensors[i];
            if (!ork_arch_tensor_required(ad, t))
                continue;
            uint64_t rows = synth_dim(ps, t->rows), cols = synth_dim(ps, t->cols);
            snprintf(nm, sizeof nm, "blk.%d.%s", (int)l, t->suffix);
            if (t->kind == ORK_TK_MAT && t->slot == ORK_LT_GATE_INP)
                ret = plan_add(pl, nm, 2, cols, rows, ORK_TYPE_F32, FILL_RANDOM);
            else if (t->kind == ORK_TK_MAT)
                ret = plan_add(pl, nm, 2, cols, rows, mat_type(type, cols, n_fallback),
                               FILL_RANDOM);
            else if (t->kind == ORK_TK_EXPS)
                ret = plan_add3(pl, nm, 3, cols, rows, (uint64_t)ps->n_expert,
                                mat_type(type, cols, n_fallback), FILL_RANDOM);
            else
                ret = plan_add(pl, nm, 1, rows, 1, ORK_TYPE_F32,
                               t->kind == ORK_TK_NORM ? FILL_ONES : FILL_RANDOM);
            if (ret < 0)
                return ret;
        }
    }
    if ((ret = plan_add(pl, "output_norm.weight", 1, dim, 1, ORK_TYPE_F32, FILL_ONES)) < 0)
        return ret;
    if (!ps->tied && ad->output != ORK_OUTPUT_TIED &&
        (ret = plan_add(pl, "output.weight", 2, dim, (uint64_t)n_vocab,
                        mat_type(type, dim, n_fallback), FILL_RANDOM)) < 0)
        return ret;
    return ret;
}

/* ---- tokenizer -------------------------------------------------------------------------- */

/* Copy every tokenizer.* key of the vocabulary file; *n_tokens = entries of
 * tokenizer.ggml.tokens. */
static int copy_vocab(struct ork_gguf_writer *w, const char *path, int32_t *n_tokens)
{
    struct ork_gguf *g;
    int ret = ork_gguf_open(path, &g);
    if (ret < 0)
        return ret;
    const struct ork_gguf_array *tok;
    ret = ork_gguf_get_arr(g, "tokenizer.ggml.tokens", ORK_GGUF_STRING, &tok);
    if (ret == ORK_ENOENT)
        ret = ork_errorf(ORK_EFORMAT, "vocabulary '%s' has no tokenizer.ggml.tokens", path);
    if (ret == 0 && tok->n > (uint64_t)INT32_MAX)
        ret = ork_errorf(ORK_EFORMAT, "vocabulary '%s': %llu tokens", path,
                         (unsigned long long)tok->n);
    if (ret == 0)
        *n_tokens = (int32_t)tok->n;
    for (uint64_t i = 0; ret == 0 && i < ork_gguf_n_kv(g); i++) {
        const struct ork_gguf_kv *kv = ork_gguf_kv_at(g, i);
        if (!strncmp(kv->key, "tokenizer.", strlen("tokenizer.")))
            ret = ork_gguf_writer_add_value(w, kv->key, &kv->value);
    }
    ork_gguf_close(g);
    return ret;
}

/* Append the UTF-8 encoding of code point c (< 0x800 here) to s. */
static size_t utf8_put(char *s, uint32_t c)
{
    if (c < 0x80) {
        s[0] = (char)c;
        return 1;
    }
    s[0] = (char)(0xc0 | (c >> 6));
    s[1] = (char)(0x80 | (c & 0x3f));
    return 2;
}

/* Byte-level fallback: the 256 bytes spelled with the GPT-2 byte-to-unicode map (printable
 * bytes 33-126, 161-172, 174-255 stand for themselves; the others, in order, for U+0100 + k),
 * then the special tokens, then unused padding up to n_vocab rows. Model "gpt2", no merges,
 * pre-tokenizer "default". */
static const char *const fallback_specials[] = { "<|endoftext|>", "<|im_start|>", "<|im_end|>" };
#define N_SPECIALS (sizeof fallback_specials / sizeof fallback_specials[0])

static int write_fallback_vocab(struct ork_gguf_writer *w, int32_t n_vocab, int32_t *n_tokens)
{
    size_t n = (size_t)n_vocab;
    char **tok = ork_calloc(n, sizeof(*tok));
    int32_t *type = ork_calloc(n, sizeof(*type));
    char *text = ork_malloc(n * 24);
    int ret = ORK_ENOMEM;
    if (!tok || !type || !text)
        goto out;
    char *p = text;
    uint32_t extra = 0;
    for (uint32_t b = 0; b < N_BYTE_TOKENS; b++) {
        bool self = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
        tok[b] = p;
        p += utf8_put(p, self ? b : 256 + extra++);
        *p++ = 0;
        type[b] = TOKTYPE_NORMAL;
    }
    for (size_t i = 0; i < N_SPECIALS; i++) {
        tok[N_BYTE_TOKENS + i] = (char *)fallback_specials[i];
        type[N_BYTE_TOKENS + i] = TOKTYPE_CONTROL;
    }
    for (size_t i = N_BYTE_TOKENS + N_SPECIALS; i < n; i++) {
        tok[i] = p;
        p += (size_t)snprintf(p, 24, "[PAD%zu]", i) + 1;
        type[i] = TOKTYPE_UNUSED;
    }
    uint32_t eos = N_BYTE_TOKENS;   /* <|endoftext|> */
    if ((ret = ork_gguf_writer_add_str(w, "tokenizer.ggml.model", "gpt2")) < 0 ||
        (ret = ork_gguf_writer_add_str(w, "tokenizer.ggml.pre", "default")) < 0 ||
        (ret = ork_gguf_writer_add_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)tok,
                                           n)) < 0 ||
        (ret = ork_gguf_writer_add_arr(w, "tokenizer.ggml.token_type", ORK_GGUF_INT32, type,
                                       n)) < 0 ||
        (ret = ork_gguf_writer_add_arr_str(w, "tokenizer.ggml.merges", NULL, 0)) < 0 ||
        (ret = ork_gguf_writer_add_u32(w, "tokenizer.ggml.bos_token_id", eos)) < 0 ||
        (ret = ork_gguf_writer_add_u32(w, "tokenizer.ggml.eos_token_id", eos)) < 0 ||
        (ret = ork_gguf_writer_add_bool(w, "tokenizer.ggml.add_bos_token", false)) < 0)
        goto out;
    *n_tokens = n_vocab;
out:
    ork_free(tok);
    ork_free(type);
    ork_free(text);
    return ret;
}

/* ---- metadata --------------------------------------------------------------------------- */

static int write_hparams(struct ork_gguf_writer *w, const struct ork_synth_preset *ps,
                         const char *arch, int32_t n_layers, int32_t n_vocab, uint32_t type)
{
    char key[96], name[96];
    int ret;
    uint32_t ftype = type == ORK_TYPE_F16 ? FTYPE_F16 : type == ORK_TYPE_Q4_0 ? FTYPE_Q4_0 :
                     type == ORK_TYPE_Q4_K ? FTYPE_Q4_K_S : FTYPE_Q8_0;
    snprintf(name, sizeof name, "synthetic %s shapes, %s, random weights", ps->source,
             ork_type_name(type));
#define K(suffix) (snprintf(key, sizeof key, "%s." suffix, arch), key)
    if ((ret = ork_gguf_writer_add_str(w, "general.architecture", arch)) < 0 ||
        (ret = ork_gguf_writer_add_str(w, "general.name", name)) < 0 ||
        (ret = ork_gguf_writer_add_u32(w, "general.file_type", ftype)) < 0 ||
        (ret = ork_gguf_writer_add_u32(w, "general.quantization_version", QUANT_VERSION)) < 0 ||
        (ret = ork_gguf_writer_add_u32(w, K("context_length"), (uint32_t)ps->n_ctx)) < 0 ||
        (ret = ork_gguf_writer_add_u32(w, K("embedding_length"), (uint32_t)ps->dim)) < 0 ||
        (ret = ork_gguf_writer_add_u32(w, K("block_count"), (uint32_t)n_layers)) < 0 ||
        (ret = ork_gguf_writer_add_u32(w, K("feed_forward_length"), (uint32_t)ps->ffn_dim)) < 0 ||
        (ret = ork_gguf_writer_add_u32(w, K("attention.head_count"), (uint32_t)ps->n_heads)) < 0 ||
        (ret = ork_gguf_writer_add_u32(w, K("attention.head_count_kv"),
                                       (uint32_t)ps->n_kv_heads)) < 0 ||
        (ret = ork_gguf_writer_add_u32(w, K("attention.key_length"), (uint32_t)ps->head_dim)) < 0 ||
        (ret = ork_gguf_writer_add_u32(w, K("attention.value_length"),
                                       (uint32_t)ps->head_dim)) < 0 ||
        (ret = ork_gguf_writer_add_u32(w, K("rope.dimension_count"), (uint32_t)ps->head_dim)) < 0 ||
        (ret = ork_gguf_writer_add_f32(w, K("rope.freq_base"), ps->rope_base)) < 0 ||
        (ret = ork_gguf_writer_add_f32(w, K("attention.layer_norm_rms_epsilon"), ps->rms_eps)) < 0 ||
        (ret = ork_gguf_writer_add_u32(w, K("vocab_size"), (uint32_t)n_vocab)) < 0)
        return ret;
    if (ps->n_expert > 0 &&
        ((ret = ork_gguf_writer_add_u32(w, K("expert_count"), (uint32_t)ps->n_expert)) < 0 ||
         (ret = ork_gguf_writer_add_u32(w, K("expert_used_count"),
                                        (uint32_t)ps->n_expert_used)) < 0 ||
         (ret = ork_gguf_writer_add_u32(w, K("expert_feed_forward_length"),
                                        (uint32_t)ps->expert_ffn_dim)) < 0))
        return ret;
    if (ps->swa_window > 0 &&
        (ret = ork_gguf_writer_add_u32(w, K("attention.sliding_window"),
                                       (uint32_t)ps->swa_window)) < 0)
        return ret;
    if (ps->attn_softcap > 0.0f &&
        (ret = ork_gguf_writer_add_f32(w, K("attn_logit_softcapping"), ps->attn_softcap)) < 0)
        return ret;
    if (ps->final_softcap > 0.0f &&
        (ret = ork_gguf_writer_add_f32(w, K("final_logit_softcapping"), ps->final_softcap)) < 0)
        return ret;
    if (ps->rope_linear > 0.0f &&
        ((ret = ork_gguf_writer_add_str(w, K("rope.scaling.type"), "linear")) < 0 ||
         (ret = ork_gguf_writer_add_f32(w, K("rope.scaling.factor"), ps->rope_linear)) < 0))
        return ret;
#undef K
    return 0;
}

/* ---- data ------------------------------------------------------------------------------- */

static const struct ork_synth_preset *p_preset(const struct ork_synth_params *p)
{
    return ork_synth_preset_find(p->arch, p->preset);
}

/* Divisor of rope pair i of n (theta base^(-i/n) of a head of 2n) under Llama 3.1+ scaling:
 * 1 for wavelengths below orig/high, the factor above orig/low, and between them the smooth
 * interpolation 1 / ((1 - s) / factor + s), s = (orig / wavelength - low) / (high - low)
 * (Meta's llama3 apply_scaling; written as rope_freqs by convert_hf_to_gguf). */
static float llama3_rope_factor(const struct ork_synth_preset *ps, uint64_t i, uint64_t n)
{
    double freq = pow((double)ps->rope_base, -(double)i / (double)n);
    double wavelen = 2.0 * SYNTH_PI / freq, orig = (double)ps->llama3_orig_ctx;
    double lo_wl = orig / ps->llama3_low, hi_wl = orig / ps->llama3_high;
    if (wavelen < hi_wl)
        return 1.0f;
    if (wavelen > lo_wl)
        return ps->llama3_factor;
    double sm = (orig / wavelen - ps->llama3_low) / (ps->llama3_high - ps->llama3_low);
    return (float)(1.0 / ((1.0 - sm) / ps->llama3_factor + sm));
}

/* Per-row random stream: rows are independent, so any number of threads writes the same bytes. */
static uint64_t row_state(uint64_t tensor_state, uint64_t row)
{
    uint64_t st = tensor_state ^ (row * ROW_STRIDE);
    sm64_next(&st);
    return st;
}

struct gen_job {
    const struct plan_tensor *t;
    uint64_t tensor_state;
    uint64_t row0;              /* first row of the chunk */
    size_t n_rows;
    size_t row_bytes;
    float *xf;                  /* per thread: max_k floats each */
    size_t xf_stride;
    uint8_t *qb;
    int err;                    /* first error (any thread) */
};

static void gen_rows(void *ctx, int ith, int nth)
{
    struct gen_job *j = ctx;
    size_t lo = j->n_rows * (size_t)ith / (size_t)nth, hi = j->n_rows * (size_t)(ith + 1) / (size_t)nth;
    float *xf = j->xf + (size_t)ith * j->xf_stride;
    int64_t k = (int64_t)j->t->ne[0];
    for (size_t i = lo; i < hi; i++) {
        uint64_t st = row_state(j->tensor_state, j->row0 + i);
        fill_random(&st, xf, (size_t)k, WEIGHT_STD);
        int ret = ork_synth_quantize_row(j->t->type, xf, j->qb + i * j->row_bytes, k);
        if (ret < 0)
            j->err = ret;
    }
}

static int write_tensor(struct ork_gguf_writer *w, struct ork_pool *pool, struct gen_job *j,
                        size_t rows_per_chunk, const struct ork_synth_params *p, uint64_t *done,
                        uint64_t total)
{
    const struct plan_tensor *t = j->t;
    uint64_t k = t->ne[0], rows = plan_rows(t);
    j->tensor_state = p->seed ^ fnv1a(t->name);
    j->row_bytes = ork_type_row_bytes(t->type, k);
    j->err = 0;
    if (t->fill == FILL_ONES || t->fill == FILL_LLAMA3_ROPE) {
        for (uint64_t i = 0; i < k; i++)
            j->xf[i] = t->fill == FILL_ONES ? 1.0f : llama3_rope_factor(p_preset(p), i, k);
        int ret = ork_gguf_writer_write(w, j->xf, (size_t)k * sizeof(float));
        *done += (uint64_t)k * sizeof(float);
        return ret;
    }
    for (uint64_t r = 0; r < rows; r += rows_per_chunk) {
        j->row0 = r;
        j->n_rows = rows - r < rows_per_chunk ? (size_t)(rows - r) : rows_per_chunk;
        ork_pool_run(pool, gen_rows, j);
        if (j->err < 0)
            return j->err;
        int ret = ork_gguf_writer_write(w, j->qb, j->n_rows * j->row_bytes);
        if (ret < 0)
            return ret;
        *done += j->n_rows * j->row_bytes;
        if (p->progress)
            p->progress(p->user, *done, total);
    }
    return 0;
}

int ork_synth_write(const struct ork_synth_params *p, struct ork_synth_info *info)
{
    if (!p || !p->arch || !p->preset || !p->out_path)
        return ork_errorf(ORK_EINVAL, "synth: arch, preset and output path are required");
    const struct ork_synth_preset *ps = ork_synth_preset_find(p->arch, p->preset);
    if (!ps)
        return ork_errorf(ORK_EINVAL, "synth: no preset '%s' for architecture '%s'", p->preset,
                          p->arch);
    const struct ork_arch_desc *ad = ork_arch_find(p->arch, strlen(p->arch));
    if (!ad)
        return ork_errorf(ORK_EINVAL, "synth: architecture '%s' has no descriptor", p->arch);
    if (p->type != ORK_TYPE_F16 && p->type != ORK_TYPE_Q8_0 && p->type != ORK_TYPE_Q4_0 &&
        p->type != ORK_TYPE_Q4_K)
        return ork_errorf(ORK_EINVAL, "synth: weight type %s is not one of F16, Q8_0, Q4_0, Q4_K",
                          ork_type_name(p->type));
    int32_t n_layers = p->n_layers > 0 ? p->n_layers : ps->n_layers;
    struct ork_gguf_writer *w = NULL;
    struct ork_pool *pool = NULL;
    struct plan pl = { 0 };
    float *xf = NULL;
    uint8_t *qb = NULL;
    uint32_t n_fallback = 0;
    int32_t n_tokens = 0, n_vocab = p->n_vocab > 0 ? p->n_vocab : ps->n_vocab;
    int ret = ork_gguf_writer_create(p->out_path, 0, &w);
    if (ret < 0)
        return ret;
    if (p->vocab_path) {
        if ((ret = copy_vocab(w, p->vocab_path, &n_tokens)) < 0)
            goto out;
        if (n_tokens > n_vocab) {
            ORK_LOGW("synth: vocabulary has %d tokens, more than %s's %d: token_embd gets %d rows",
                     n_tokens, ps->source, n_vocab, n_tokens);
            n_vocab = n_tokens;
        }
    } else if ((ret = write_fallback_vocab(w, n_vocab, &n_tokens)) < 0) {
        goto out;
    }
    if ((ret = write_hparams(w, ps, p->arch, n_layers, n_vocab, p->type)) < 0 ||
        (ret = build_plan(ps, ad, n_layers, n_vocab, p->type, &pl, &n_fallback)) < 0)
        goto out;
    uint64_t total = 0, n_params = 0, max_k = 0;
    size_t max_row = 0;
    for (size_t i = 0; i < pl.n; i++) {
        const struct plan_tensor *t = &pl.t[i];
        if ((ret = ork_gguf_writer_add_tensor(w, t->name, t->n_dims, t->ne, t->type)) < 0)
            goto out;
        total += ork_gguf_writer_tensor_bytes(w, i);
        n_params += t->ne[0] * plan_rows(t);
        max_k = t->ne[0] > max_k ? t->ne[0] : max_k;
        size_t rb = ork_type_row_bytes(t->type, t->ne[0]);
        max_row = rb > max_row ? rb : max_row;
    }
    size_t rows_per_chunk = CHUNK_BYTES / max_row ? CHUNK_BYTES / max_row : 1;
    if ((ret = ork_pool_create(p->n_threads, &pool)) < 0)
        goto out;
    int nth = ork_pool_threads(pool);
    xf = ork_malloc((size_t)nth * (size_t)max_k * sizeof(float));
    qb = ork_malloc(rows_per_chunk * max_row);
    if (!xf || !qb) {
        ret = ORK_ENOMEM;
        goto out;
    }
    uint64_t done = 0;
    struct gen_job job = { .xf = xf, .xf_stride = (size_t)max_k, .qb = qb };
    for (size_t i = 0; i < pl.n; i++) {
        job.t = &pl.t[i];
        if ((ret = write_tensor(w, pool, &job, rows_per_chunk, p, &done, total)) < 0)
            goto out;
    }
    if ((ret = ork_gguf_writer_finish(w)) < 0)
        goto out;
    if (info) {
        info->file_bytes = ork_gguf_writer_bytes(w);
        info->n_params = n_params;
        info->n_tensors = pl.n;
        info->n_vocab = n_vocab;
        info->n_tokens = n_tokens;
        info->n_fallback = n_fallback;
    }
out:
    ork_gguf_writer_free(w);
    if (pool)
        ork_pool_destroy(pool);
    ork_free(pl.t);
    ork_free(xf);
    ork_free(qb);
    return ret;
}
