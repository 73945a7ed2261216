/* test_gguf_fixtures.c -- the GGUF reader on the real files in ../shared/fixtures (skips when
 * absent). Expected facts come from the fixtures README and /work/shared/tools/gguf_dump.py, an
 * independent reader. */
#include "ork_test.h"

#include <ork-engine/gguf.h>
#include <ork-kernels/types.h>
#include <ork/error.h>

#include <dirent.h>
#include <time.h>

/* Open every *.gguf of a fixture directory and check each tensor lies inside the file. */
static void open_all_in(const char *sub)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", ORK_FIXTURES_DIR, sub);
    DIR *d = opendir(dir);
    REQUIRE(d != NULL);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 5, ".gguf"))
            continue;
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct ork_gguf *g = NULL;
        int ret = ork_gguf_open(path, &g);
        if (ret) {
            fprintf(stderr, "%s: %s\n", path, ork_error_describe(ret));
            CHECK_EQ_INT(ret, 0);
            continue;
        }
        n++;
        CHECK(ork_gguf_version(g) == 2 || ork_gguf_version(g) == 3);
        CHECK(ork_gguf_kv_find(g, "general.architecture") != NULL);
        for (uint64_t i = 0; i < ork_gguf_n_tensors(g); i++) {
            const struct ork_gguf_tensor *t = ork_gguf_tensor_at(g, i);
            const uint8_t *base = ork_gguf_base(g), *p = t->data;
            CHECK(p >= base + ork_gguf_data_offset(g));
            CHECK((uint64_t)(p - base) + t->nbytes <= ork_gguf_file_size(g));
            CHECK((uint64_t)(p - base) % ork_gguf_alignment(g) == 0);
            CHECK(ork_gguf_tensor_find(g, t->name) == t);
        }
        ork_gguf_close(g);
    }
    closedir(d);
    CHECK(n > 0);
}

static void test_open_all_models(void) { open_all_in("models"); }
static void test_open_all_vocabs(void) { open_all_in("vocab"); }

static void test_stories260k(void)
{
    struct ork_gguf *g = NULL;
    REQUIRE(ork_gguf_open(ork_test_fixture("models/stories260K.gguf"), &g) == 0);
    CHECK_EQ_INT(ork_gguf_version(g), 3);
    CHECK_EQ_INT(ork_gguf_n_tensors(g), 48);
    CHECK_EQ_INT(ork_gguf_n_kv(g), 19);
    CHECK_EQ_INT(ork_gguf_data_offset(g), 14176);   /* gguf_dump.py: "data at 14176" */
    uint32_t u = 0;
    CHECK_EQ_INT(ork_gguf_get_u32(g, "llama.block_count", &u), 0);
    CHECK_EQ_INT(u, 5);
    CHECK_EQ_INT(ork_gguf_get_u32(g, "llama.embedding_length", &u), 0);
    CHECK_EQ_INT(u, 64);
    CHECK_EQ_INT(ork_gguf_get_u32(g, "tokenizer.ggml.seperator_token_id", &u), 0);
    CHECK(u == UINT32_MAX);
    float eps = 0;
    CHECK_EQ_INT(ork_gguf_get_f32(g, "llama.attention.layer_norm_rms_epsilon", &eps), 0);
    CHECK_NEAR(eps, 1e-5, 1e-9);
    struct ork_gguf_str s = { 0 };
    CHECK_EQ_INT(ork_gguf_get_str(g, "general.architecture", &s), 0);
    CHECK(s.len == 5 && !memcmp(s.ptr, "llama", 5));

    const struct ork_gguf_tensor *t = ork_gguf_tensor_find(g, "token_embd.weight");
    REQUIRE(t);
    CHECK_EQ_INT(t->type, ORK_TYPE_F32);
    CHECK_EQ_INT(t->n_dims, 2);
    CHECK_EQ_INT(t->ne[0], 64);
    CHECK_EQ_INT(t->ne[1], 512);
    CHECK_EQ_INT(t->offset, 0);
    CHECK_EQ_INT(t->nbytes, 64 * 512 * 4);
    t = ork_gguf_tensor_find(g, "blk.4.ffn_norm.weight");
    REQUIRE(t);
    CHECK_EQ_INT(t->offset, 1170944);
    CHECK_EQ_INT(t->ne[0], 64);
    CHECK_EQ_INT(t->n_dims, 1);

    const struct ork_gguf_array *a = NULL;
    REQUIRE(ork_gguf_get_arr(g, "tokenizer.ggml.tokens", ORK_GGUF_STRING, &a) == 0);
    CHECK_EQ_INT(a->n, 512);
    CHECK(a->strs[1].len == 3 && !memcmp(a->strs[1].ptr, "<s>", 3));
    CHECK(a->strs[3].len == 6 && !memcmp(a->strs[3].ptr, "<0x00>", 6));
    REQUIRE(ork_gguf_get_arr(g, "tokenizer.ggml.token_type", ORK_GGUF_INT32, &a) == 0);
    CHECK_EQ_INT(a->n, 512);
    CHECK_EQ_INT(ork_gguf_arr_i64(a, 0), 2);
    CHECK_EQ_INT(ork_gguf_arr_i64(a, 1), 3);
    CHECK_EQ_INT(ork_gguf_arr_i64(a, 3), 6);
    REQUIRE(ork_gguf_get_arr(g, "tokenizer.ggml.scores", ORK_GGUF_FLOAT32, &a) == 0);
    CHECK_EQ_INT(a->n, 512);
    ork_gguf_close(g);
}

static void test_quantized_variants(void)
{
    static const struct { const char *file; const char *tensor; uint32_t type; } cases[] = {
        { "models/stories260K-Q8_0.gguf", "blk.0.attn_q.weight", ORK_TYPE_Q8_0 },
        { "models/stories260K-Q8_0.gguf", "blk.0.ffn_down.weight", ORK_TYPE_F16 }, /* 172 cols */
        { "models/stories260K-F16.gguf", "blk.0.attn_q.weight", ORK_TYPE_F16 },
        { "models/stories260K-Q4_0.gguf", "blk.0.attn_q.weight", ORK_TYPE_Q4_0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *path = ork_test_fixture_opt(cases[i].file);
        if (!path)
            continue;
        struct ork_gguf *g = NULL;
        REQUIRE(ork_gguf_open(path, &g) == 0);
        const struct ork_gguf_tensor *t = ork_gguf_tensor_find(g, cases[i].tensor);
        CHECK(t && t->type == cases[i].type);
        if (t)
            CHECK_EQ_INT(t->nbytes, ork_type_row_bytes(t->type, t->ne[0]) * t->ne[1]);
        ork_gguf_close(g);
    }
}

static void test_qwen3_vocab(void)
{
    struct ork_gguf *g = NULL;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    REQUIRE(ork_gguf_open(ork_test_fixture("vocab/qwen3-vocab.gguf"), &g) == 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("qwen3-vocab.gguf opened in %.1f ms\n",
           (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
    CHECK_EQ_INT(ork_gguf_n_tensors(g), 0);
    const struct ork_gguf_array *a = NULL;
    REQUIRE(ork_gguf_get_arr(g, "tokenizer.ggml.tokens", ORK_GGUF_STRING, &a) == 0);
    CHECK_EQ_INT(a->n, 151936);
    CHECK(a->strs[0].len == 1 && a->strs[0].ptr[0] == '!');
    CHECK(a->strs[151644].len == 12 && !memcmp(a->strs[151644].ptr, "<|im_start|>", 12));
    REQUIRE(ork_gguf_get_arr(g, "tokenizer.ggml.merges", ORK_GGUF_STRING, &a) == 0);
    CHECK_EQ_INT(a->n, 151387);
    uint32_t eos = 0;
    CHECK_EQ_INT(ork_gguf_get_u32(g, "tokenizer.ggml.eos_token_id", &eos), 0);
    CHECK_EQ_INT(eos, 151645);
    ork_gguf_close(g);
}

static void test_open_errors(void)
{
    struct ork_gguf *g = NULL;
    ork_error_clear();
    CHECK_EQ_INT(ork_gguf_open("/nonexistent/dir/x.gguf", &g), ORK_EIO);
    CHECK(strstr(ork_error_message(), "/nonexistent/dir/x.gguf"));
    CHECK_EQ_INT(ork_gguf_open("/", &g), ORK_EIO);
    CHECK(g == NULL);
}

int main(void)
{
    RUN(test_open_errors);
    ork_test_fixture("models/stories260K.gguf");    /* skips the rest when fixtures are absent */
    RUN(test_open_all_models);
    RUN(test_open_all_vocabs);
    RUN(test_stories260k);
    RUN(test_quantized_variants);
    RUN(test_qwen3_vocab);
    return ork_test_done();
}
