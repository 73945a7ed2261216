/* test_synth.c -- synthetic models: the quantizers against the kernels' dequantization, the
 * preset table against the published shapes, and small models (preset shapes with one layer
 * and a reduced vocabulary) that ork loads, tokenizes with and evaluates to finite logits,
 * written identically for the same seed and thread count independent. */
#include "ork_test.h"

#include <ork-engine/engine.h>
#include <ork-engine/gguf.h>
#include <ork-tooling/synth.h>
#include <ork-engine/tokenizer.h>
#include <ork-kernels/kernels.h>
#include <ork-kernels/types.h>
#include <ork/alloc.h>
#include <ork/error.h>

#include <stdint.h>

static char path_a[256], path_b[256];

/* Quantize random-ish rows and dequantize with the kernels: every element within half a step
 * of its block's scale (plus the f16 rounding of the scales). */
static void check_quant(uint32_t type, int64_t n, float spread)
{
    float *x = ork_malloc((size_t)n * sizeof(float)), *y = ork_malloc((size_t)n * sizeof(float));
    uint8_t *q = ork_malloc(ork_type_row_bytes(type, (uint64_t)n));
    REQUIRE(x && y && q);
    uint32_t s = 12345;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = ((float)(s >> 8) / 16777216.0f - 0.5f) * spread;
    }
    x[3] = 0.0f;
    REQUIRE(ork_synth_quantize_row(type, x, q, n) == 0);
    REQUIRE(ork_dequant_row(type, q, y, n) == 0);
    /* Levels per block: F16 ~ 2^11 relative, Q8_0 127 (+-), Q4_0 8 (+-; the side opposite the
     * largest value clamps at 7 steps, an error up to 1/8), Q4_K 15 per sub-block. */
    double max_rel = 0;
    float amax = 0;
    for (int64_t i = 0; i < n; i++)
        amax = fabsf(x[i]) > amax ? fabsf(x[i]) : amax;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs((double)x[i] - (double)y[i]) / amax;
        max_rel = e > max_rel ? e : max_rel;
    }
    double tol = type == ORK_TYPE_F16 ? 1e-3 : type == ORK_TYPE_Q8_0 ? 0.5 / 127 + 1e-3 :
                 type == ORK_TYPE_Q4_0 ? 1.0 / 8 + 1e-2 : 1.0 / 15 + 2e-2;
    if (!(max_rel <= tol))
        fprintf(stderr, "type %s: max error %.5f of amax (tol %.5f)\n", ork_type_name(type), max_rel,
                tol);
    CHECK(max_rel <= tol);
    /* And not trivially zero: the dequantized row follows the input. */
    double dot = 0, nx = 0, ny = 0;
    for (int64_t i = 0; i < n; i++) {
        dot += (double)x[i] * y[i];
        nx += (double)x[i] * x[i];
        ny += (double)y[i] * y[i];
    }
    CHECK(dot / sqrt(nx * ny) > 0.98);
    ork_free(x);
    ork_free(y);
    ork_free(q);
}

static void test_quantizers(void)
{
    check_quant(ORK_TYPE_F16, 512, 2.0f);
    check_quant(ORK_TYPE_Q8_0, 512, 0.1f);
    check_quant(ORK_TYPE_Q4_0, 512, 0.1f);
    check_quant(ORK_TYPE_Q4_K, 1024, 0.1f);
    check_quant(ORK_TYPE_Q4_K, 256, 30.0f);
    float x[256] = { 0 };
    uint8_t q[256 * 2];
    CHECK(ork_synth_quantize_row(ORK_TYPE_Q4_K, x, q, 100) == ORK_EINVAL);
    CHECK(ork_synth_quantize_row(ORK_TYPE_Q6_K, x, q, 256) == ORK_EUNSUPPORTED);
    /* All-zero blocks dequantize to zeros. */
    float y[256];
    REQUIRE(ork_synth_quantize_row(ORK_TYPE_Q4_K, x, q, 256) == 0);
    REQUIRE(ork_dequant_row(ORK_TYPE_Q4_K, q, y, 256) == 0);
    int nz = 0;
    for (int i = 0; i < 256; i++)
        nz += y[i] != 0.0f;
    CHECK_EQ_INT(nz, 0);
}

static void test_presets(void)
{
    /* The shapes stated in the published config.json files (see docs/synth.md). */
    const struct ork_synth_preset *p = ork_synth_preset_find("qwen2", "0.5b");
    REQUIRE(p);
    CHECK(p->dim == 896 && p->n_layers == 24 && p->n_heads == 14 && p->n_kv_heads == 2 &&
          p->ffn_dim == 4864 && p->n_vocab == 151936 && p->tied);
    p = ork_synth_preset_find("qwen3", "1.7b");
    REQUIRE(p);
    CHECK(p->dim == 2048 && p->n_layers == 28 && p->n_heads == 16 && p->n_kv_heads == 8 &&
          p->head_dim == 128 && p->ffn_dim == 6144 && p->n_vocab == 151936 && p->tied);
    p = ork_synth_preset_find("qwen2", "3b");
    REQUIRE(p);
    CHECK(p->dim == 2048 && p->n_layers == 36 && p->n_heads == 16 && p->n_kv_heads == 2 &&
          p->ffn_dim == 11008);
    p = ork_synth_preset_find("qwen2", "7b");
    REQUIRE(p);
    CHECK(p->dim == 3584 && p->n_layers == 28 && p->n_heads == 28 && p->n_kv_heads == 4 &&
          p->ffn_dim == 18944 && p->n_vocab == 152064 && !p->tied);
    /* Every arch answers the four sizes of the command line. */
    const char *archs[3] = { "llama", "qwen2", "qwen3" }, *sizes[4] = { "0.5b", "1.7b", "3b", "7b" };
    for (int a = 0; a < 3; a++)
        for (int s = 0; s < 4; s++)
            CHECK(ork_synth_preset_find(archs[a], sizes[s]) != NULL);
    CHECK(ork_synth_preset_find("qwen3", "13b") == NULL);
    CHECK(ork_synth_preset_find("gemma3", "1b") && ork_synth_preset_find("gemma3", "4b") &&
          ork_synth_preset_find("gemma2", "2b") && ork_synth_preset_find("phi3", "mini") &&
          ork_synth_preset_find("qwen3moe", "30b-a3b"));
    CHECK(ork_synth_preset_find("gpt2", "1.7b") == NULL);
    for (size_t i = 0; i < ork_synth_n_presets(); i++) {
        p = ork_synth_preset_at(i);
        CHECK(p->n_heads % p->n_kv_heads == 0);
        CHECK(p->head_dim % 2 == 0);
    }
    CHECK(ork_synth_preset_at(ork_synth_n_presets()) == NULL);
}

static int write_small(const char *path, const char *arch, const char *preset, uint32_t type,
                       uint64_t seed, int threads, const char *vocab)
{
    struct ork_synth_params p;
    ork_synth_params_default(&p);
    p.arch = arch;
    p.preset = preset;
    p.type = type;
    p.n_layers = 1;
    p.n_vocab = vocab ? 0 : 512;
    p.seed = seed;
    p.n_threads = threads;
    p.vocab_path = vocab;
    p.out_path = path;
    int ret = ork_synth_write(&p, NULL);
    if (ret < 0)
        fprintf(stderr, "synth: %s\n", ork_error_describe(ret));
    return ret;
}

static bool same_file(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    bool same = fa && fb;
    while (same) {
        int ca = fgetc(fa), cb = fgetc(fb);
        if (ca != cb)
            same = false;
        if (ca == EOF || cb == EOF)
            break;
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return same;
}

/* Load, check the hyperparameters, tokenize with the fallback vocabulary, evaluate. */
static void load_and_eval(const char *path, const struct ork_synth_preset *ps, bool fallback)
{
    struct ork_model *m;
    int ret = ork_model_load(path, NULL, &m);
    if (ret < 0)
        fprintf(stderr, "load: %s\n", ork_error_describe(ret));
    REQUIRE(ret == 0);
    const struct ork_model_config *c = ork_model_config(m);
    CHECK_EQ_INT(c->dim, ps->dim);
    CHECK_EQ_INT(c->n_layers, 1);
    CHECK_EQ_INT(c->n_heads, ps->n_heads);
    CHECK_EQ_INT(c->n_kv_heads, ps->n_kv_heads);
    CHECK_EQ_INT(c->head_dim, ps->head_dim);
    CHECK_EQ_INT(c->ffn_dim, ps->ffn_dim);
    CHECK_EQ_INT(c->tied_output, ps->tied);
    CHECK_NEAR(c->rope_base, ps->rope_base, 1e-3);
    const struct ork_tokenizer *tok = ork_model_tokenizer(m);
    REQUIRE(tok);
    int32_t ids[64];
    size_t nt = 0;
    CHECK_EQ_INT(ork_tokenize(tok, "Hi there", 8, false, false, ids, 64, &nt), 0);
    int n = (int)nt;
    if (fallback)
        CHECK_EQ_INT(n, 8);     /* no merges: one token per byte */
    else
        CHECK(n > 0 && n < 8);
    REQUIRE(n > 0);
    struct ork_session_params sp;
    ork_session_params_default(&sp);
    sp.ctx_size = 32;
    sp.n_threads = 2;
    struct ork_session *s;
    REQUIRE(ork_session_create(m, &sp, &s) == 0);
    float *logits = ork_malloc((size_t)c->n_vocab * sizeof(float));
    REQUIRE(logits);
    CHECK_EQ_INT(ork_model_eval(s, ids, n, 0, logits, ORK_EVAL_LAST_LOGITS), 0);
    int bad = 0;
    double ss = 0;
    for (int32_t i = 0; i < c->n_vocab; i++) {
        bad += !isfinite(logits[i]);
        ss += (double)logits[i] * logits[i];
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(ss > 0);
    ork_free(logits);
    ork_session_free(s);
    ork_model_free(m);
}

static void test_small_models(void)
{
    const char *archs[3] = { "qwen2", "qwen3", "llama" }, *presets[3] = { "0.5b", "1.7b", "1b" };
    const uint32_t types[3] = { ORK_TYPE_Q4_K, ORK_TYPE_Q8_0, ORK_TYPE_Q4_0 };
    for (int i = 0; i < 3; i++) {
        REQUIRE(write_small(path_a, archs[i], presets[i], types[i], 7, 1, NULL) == 0);
        load_and_eval(path_a, ork_synth_preset_find(archs[i], presets[i]), true);
        unlink(path_a);
    }
    /* The architectures with their own tensors: post-norms and GeGLU (gemma2/3), fused
     * attn_qkv and gate|up (phi3), rope_freqs (Llama 3.2) */
    static const char *const more[][2] = {
        { "gemma2", "2b" }, { "gemma3", "1b" }, { "gemma3", "4b" }, { "phi3", "mini" },
    };
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++) {
        REQUIRE(write_small(path_a, more[i][0], more[i][1], ORK_TYPE_Q8_0, 7, 2, NULL) == 0);
        load_and_eval(path_a, ork_synth_preset_find(more[i][0], more[i][1]), true);
        unlink(path_a);
    }
    REQUIRE(write_small(path_a, "llama", "1b", ORK_TYPE_Q8_0, 7, 2, NULL) == 0);
    {
        struct ork_gguf *g;
        REQUIRE(ork_gguf_open(path_a, &g) == 0);
        const struct ork_gguf_tensor *t = ork_gguf_tensor_find(g, "rope_freqs.weight");
        REQUIRE(t && t->n_dims == 1 && t->ne[0] == 32);
        const float *f = t->data;
        /* Llama 3.2's factors (rope_scaling factor 32, low 1, high 4, original 8192): pair 0
         * keeps its frequency, the lowest frequencies are divided by 32 */
        CHECK_NEAR(f[0], 1.0, 1e-6);
        CHECK_NEAR(f[31], 32.0, 1e-6);
        for (int i = 1; i < 32; i++)
            CHECK(f[i] >= f[i - 1]);
        ork_gguf_close(g);
    }
    unlink(path_a);
    const struct ork_synth_preset *moe = ork_synth_preset_find("qwen3moe", "30b-a3b");
    REQUIRE(moe);
    CHECK(moe->n_expert == 128 && moe->n_expert_used == 8 && moe->expert_ffn_dim == 768 &&
          moe->dim == 2048 && moe->n_layers == 48 && !moe->tied);
    /* An untied preset (Llama-2-7B shapes): output.weight is written and bound. */
    REQUIRE(write_small(path_a, "llama", "7b", ORK_TYPE_Q4_0, 7, 2, NULL) == 0);
    load_and_eval(path_a, ork_synth_preset_find("llama", "7b"), true);
    unlink(path_a);
    /* F16, and rows that do not fit Q4_K's 256 (dim 896) fall back to Q8_0 per tensor. */
    REQUIRE(write_small(path_a, "qwen2", "0.5b", ORK_TYPE_F16, 7, 2, NULL) == 0);
    load_and_eval(path_a, ork_synth_preset_find("qwen2", "0.5b"), true);
    unlink(path_a);
    REQUIRE(write_small(path_a, "qwen2", "0.5b", ORK_TYPE_Q4_K, 7, 2, NULL) == 0);
    struct ork_gguf *g;
    REQUIRE(ork_gguf_open(path_a, &g) == 0);
    const struct ork_gguf_tensor *t = ork_gguf_tensor_find(g, "blk.0.ffn_down.weight");
    CHECK(t && t->type == ORK_TYPE_Q4_K);       /* rows of 4864 = 19 x 256 */
    t = ork_gguf_tensor_find(g, "blk.0.ffn_up.weight");
    CHECK(t && t->type == ORK_TYPE_Q8_0);       /* rows of 896 */
    CHECK(ork_gguf_tensor_find(g, "blk.0.attn_q.bias") != NULL);
    CHECK(ork_gguf_tensor_find(g, "output.weight") == NULL);
    /* Weights have the documented scale: std ~0.02 over a matrix. */
    t = ork_gguf_tensor_find(g, "blk.0.attn_q.weight");
    REQUIRE(t && t->type == ORK_TYPE_Q8_0);
    float row[896];
    double ss = 0;
    size_t rb = ork_type_row_bytes(t->type, t->ne[0]);
    for (uint64_t r = 0; r < 64; r++) {
        REQUIRE(ork_dequant_row(t->type, (const uint8_t *)t->data + r * rb, row, 896) == 0);
        for (int i = 0; i < 896; i++)
            ss += (double)row[i] * row[i];
    }
    CHECK_NEAR(sqrt(ss / (64.0 * 896)), 0.02, 0.002);
    ork_gguf_close(g);
    unlink(path_a);
}

static void test_deterministic(void)
{
    REQUIRE(write_small(path_a, "qwen3", "0.6b", ORK_TYPE_Q4_0, 42, 1, NULL) == 0);
    REQUIRE(write_small(path_b, "qwen3", "0.6b", ORK_TYPE_Q4_0, 42, 2, NULL) == 0);
    CHECK(same_file(path_a, path_b));
    REQUIRE(write_small(path_b, "qwen3", "0.6b", ORK_TYPE_Q4_0, 43, 2, NULL) == 0);
    CHECK(!same_file(path_a, path_b));
    unlink(path_a);
    unlink(path_b);
}

static void test_errors(void)
{
    struct ork_synth_params p;
    ork_synth_params_default(&p);
    p.arch = "qwen3";
    p.preset = "1.7b";
    p.out_path = path_a;
    p.type = ORK_TYPE_Q6_K;
    CHECK(ork_synth_write(&p, NULL) == ORK_EINVAL);
    p.type = ORK_TYPE_Q8_0;
    p.preset = "99b";
    CHECK(ork_synth_write(&p, NULL) == ORK_EINVAL);
    CHECK(strstr(ork_error_message(), "99b") != NULL);
    p.preset = "1.7b";
    p.n_layers = 1;
    p.n_vocab = 300;
    p.vocab_path = "/nonexistent/vocab.gguf";
    CHECK(ork_synth_write(&p, NULL) == ORK_EIO);
    CHECK(access(path_a, F_OK) != 0);   /* no partial file left behind */
}

/* A real tokenizer copied from a vocabulary file (every tokenizer.* key). */
static void test_vocab_copy(void)
{
    const char *vocab = ork_test_fixture_opt("vocab/qwen3-vocab.gguf");
    if (!vocab) {
        printf("  (qwen3-vocab.gguf absent: vocabulary copy not checked)\n");
        return;
    }
    struct ork_synth_params p;
    ork_synth_params_default(&p);
    p.arch = "qwen3";
    p.preset = "0.6b";
    p.n_layers = 1;
    p.type = ORK_TYPE_Q4_0;
    p.vocab_path = vocab;
    p.out_path = path_a;
    struct ork_synth_info info;
    REQUIRE(ork_synth_write(&p, &info) == 0);
    struct ork_gguf *v, *g;
    REQUIRE(ork_gguf_open(vocab, &v) == 0);
    REQUIRE(ork_gguf_open(path_a, &g) == 0);
    int n_tok_keys = 0;
    for (uint64_t i = 0; i < ork_gguf_n_kv(v); i++) {
        const struct ork_gguf_kv *kv = ork_gguf_kv_at(v, i);
        if (strncmp(kv->key, "tokenizer.", 10))
            continue;
        n_tok_keys++;
        const struct ork_gguf_kv *k2 = ork_gguf_kv_find(g, kv->key);
        CHECK(k2 && k2->value.type == kv->value.type);
    }
    CHECK(n_tok_keys >= 5);
    const struct ork_gguf_array *a;
    CHECK(ork_gguf_get_arr(g, "tokenizer.ggml.merges", ORK_GGUF_STRING, &a) == 0 && a->n > 1000);
    CHECK_EQ_INT(info.n_tokens, 151936);
    ork_gguf_close(g);
    ork_gguf_close(v);
    load_and_eval(path_a, ork_synth_preset_find("qwen3", "0.6b"), false);
    unlink(path_a);
}

int main(void)
{
    snprintf(path_a, sizeof path_a, "%s/test_synth_%d_a.gguf", ORK_BINARY_DIR, (int)getpid());
    snprintf(path_b, sizeof path_b, "%s/test_synth_%d_b.gguf", ORK_BINARY_DIR, (int)getpid());
    RUN(test_quantizers);
    RUN(test_presets);
    RUN(test_small_models);
    RUN(test_deterministic);
    RUN(test_errors);
    RUN(test_vocab_copy);
    return ork_test_done();
}
