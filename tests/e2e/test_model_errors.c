/* test_model_errors.c -- loading a broken model fails with the right code and a message naming
 * what is wrong: a missing tensor, a tensor of an unsupported type, a tensor of the wrong shape,
 * an unknown architecture, a truncated file, a missing file, an unknown load mode; the file
 * mapped and read into memory give the same logits. The broken models are copies of
 * stories260K.gguf with a few header bytes patched (same-length edits keep the file valid GGUF). */
#include "ork_test.h"

#include <ork/error.h>
#include <ork-engine/engine.h>

#include <stdint.h>

static unsigned char *g_file;
static size_t g_size;

static unsigned char *load_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return b;
}

/* Offset of a GGUF string (u64 length + bytes) equal to s, counting from the length field. */
static long find_gguf_string(const unsigned char *b, size_t n, const char *s)
{
    size_t l = strlen(s);
    for (size_t i = 0; i + 8 + l <= n; i++) {
        uint64_t len;
        memcpy(&len, b + i, 8);
        if (len == l && !memcmp(b + i + 8, s, l))
            return (long)i;
    }
    return -1;
}

/* Write a patched copy to a temp file, load it, return the load result. */
static int load_patched(const unsigned char *b, size_t n)
{
    char path[] = "/tmp/ork_test_model_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return -1000;
    FILE *f = fdopen(fd, "wb");
    fwrite(b, 1, n, f);
    fclose(f);
    struct ork_model_params mp;
    ork_model_params_default(&mp);
    mp.no_tokenizer = true;
    struct ork_model *m = NULL;
    int ret = ork_model_load(path, &mp, &m);
    if (ret == 0)
        ork_model_free(m);
    unlink(path);
    return ret;
}

static unsigned char *copy(void)
{
    unsigned char *b = malloc(g_size);
    memcpy(b, g_file, g_size);
    return b;
}

static void test_original_loads(void)
{
    CHECK_EQ_INT(load_patched(g_file, g_size), 0);
}

static void test_missing_tensor(void)
{
    unsigned char *b = copy();
    long at = find_gguf_string(b, g_size, "blk.3.ffn_down.weight");
    REQUIRE(at >= 0);
    b[at + 8 + strlen("blk.3.ffn_down.weight") - 1] = 'X';     /* ...weighX */
    int ret = load_patched(b, g_size);
    CHECK_EQ_INT(ret, ORK_EFORMAT);
    CHECK(strstr(ork_error_message(), "'blk.3.ffn_down.weight'") != NULL);
    CHECK(strstr(ork_error_message(), "missing") != NULL);
    free(b);
}

static void test_unsupported_type(void)
{
    unsigned char *b = copy();
    const char *name = "blk.0.attn_q.weight";   /* F32 [64, 64]: as Q5_1 it is smaller */
    long at = find_gguf_string(b, g_size, name);
    REQUIRE(at >= 0);
    size_t p = (size_t)at + 8 + strlen(name);
    uint32_t n_dims;
    memcpy(&n_dims, b + p, 4);
    REQUIRE(n_dims == 2);
    uint32_t q5_1 = 7;  /* GGML type id of Q5_1 */
    memcpy(b + p + 4 + 8 * n_dims, &q5_1, 4);
    int ret = load_patched(b, g_size);
    CHECK_EQ_INT(ret, ORK_EUNSUPPORTED);
    CHECK_STR(ork_error_message(),
              "tensor 'blk.0.attn_q.weight' has type Q5_1, which ork does not support");
    free(b);
}

static void test_wrong_shape(void)
{
    unsigned char *b = copy();
    const char *name = "blk.1.ffn_down.weight";  /* [172, 64] -> [64, 172]: same size */
    long at = find_gguf_string(b, g_size, name);
    REQUIRE(at >= 0);
    size_t p = (size_t)at + 8 + strlen(name) + 4;
    uint64_t ne0, ne1;
    memcpy(&ne0, b + p, 8);
    memcpy(&ne1, b + p + 8, 8);
    REQUIRE(ne0 == 172 && ne1 == 64);
    memcpy(b + p, &ne1, 8);
    memcpy(b + p + 8, &ne0, 8);
    int ret = load_patched(b, g_size);
    CHECK_EQ_INT(ret, ORK_EFORMAT);
    CHECK(strstr(ork_error_message(), "'blk.1.ffn_down.weight'") != NULL);
    CHECK(strstr(ork_error_message(), "shape") != NULL);
    free(b);
}

static void test_unknown_arch(void)
{
    unsigned char *b = copy();
    long at = find_gguf_string(b, g_size, "general.architecture");
    REQUIRE(at >= 0);
    size_t p = (size_t)at + 8 + strlen("general.architecture") + 4;  /* past the value type */
    uint64_t len;
    memcpy(&len, b + p, 8);
    REQUIRE(len == 5 && !memcmp(b + p + 8, "llama", 5));
    memcpy(b + p + 8, "gptj9", 5);
    int ret = load_patched(b, g_size);
    CHECK_EQ_INT(ret, ORK_EUNSUPPORTED);
    CHECK(strstr(ork_error_message(), "'gptj9'") != NULL);
    free(b);
}

static void test_truncated(void)
{
    int ret = load_patched(g_file, g_size / 2);
    CHECK(ret < 0);
    CHECK(strlen(ork_error_message()) > 0);
}

/* Logits of a few tokens with the model loaded in mode `load` (0 on success). */
static int logits_with(const char *path, int32_t load, float *out, int32_t *nv)
{
    struct ork_model_params mp;
    ork_model_params_default(&mp);
    mp.load = load;
    struct ork_model *m = NULL;
    int ret = ork_model_load(path, &mp, &m);
    if (ret < 0)
        return ret;
    struct ork_session_params sp;
    ork_session_params_default(&sp);
    sp.ctx_size = 16;
    sp.n_threads = 2;
    struct ork_session *s = NULL;
    const int32_t toks[3] = { 1, 42, 7 };
    *nv = ork_model_config(m)->n_vocab;
    if ((ret = ork_session_create(m, &sp, &s)) == 0)
        ret = ork_model_eval(s, toks, 3, 0, out, ORK_EVAL_LAST_LOGITS);
    ork_session_free(s);
    ork_model_free(m);
    return ret;
}

static void test_load_modes(void)
{
    enum { MAX_VOCAB = 1024 };
    static float a[MAX_VOCAB], b[MAX_VOCAB];
    const char *path = ork_test_fixture("models/stories260K.gguf");
    int32_t nv = 0;
    REQUIRE(logits_with(path, ORK_LOAD_MMAP, a, &nv) == 0);
    REQUIRE(nv <= MAX_VOCAB);
    REQUIRE(logits_with(path, ORK_LOAD_READ, b, &nv) == 0);
    CHECK(memcmp(a, b, sizeof(float) * (size_t)nv) == 0);
    ork_error_clear();
    struct ork_model_params mp;
    ork_model_params_default(&mp);
    mp.load = 9;
    struct ork_model *m = NULL;
    CHECK_EQ_INT(ork_model_load(path, &mp, &m), ORK_EINVAL);
    CHECK(m == NULL);
    CHECK(strstr(ork_error_message(), "load mode 9") != NULL);
}

static void test_missing_file(void)
{
    struct ork_model *m = NULL;
    int ret = ork_model_load("/nonexistent/dir/model.gguf", NULL, &m);
    CHECK(ret < 0);
    CHECK(m == NULL);
    CHECK(strstr(ork_error_describe(ret), "model.gguf") != NULL);
}

int main(void)
{
    g_file = load_file(ork_test_fixture("models/stories260K.gguf"), &g_size);
    if (!g_file)
        SKIP("cannot read stories260K.gguf");
    RUN(test_original_loads);
    RUN(test_missing_tensor);
    RUN(test_unsupported_type);
    RUN(test_wrong_shape);
    RUN(test_unknown_arch);
    RUN(test_truncated);
    RUN(test_missing_file);
    RUN(test_load_modes);
    free(g_file);
    return ork_test_done();
}
