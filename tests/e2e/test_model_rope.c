/* test_model_rope.c -- RoPE scaling options, on copies of stories260K.gguf rewritten with extra
 * metadata and/or a rope_freqs.weight tensor:
 *   - frequency divisors of 1 change nothing (bit-identical logits);
 *   - divisors of 2 equal linear scaling by 2 (both halve every rotation angle), and differ from
 *     the unscaled model;
 *   - an unsupported scaling type is refused by name; a rope_freqs tensor of the wrong length is
 *     refused naming the tensor. */
#include "ork_test.h"

#include <ork/error.h>
#include <ork-engine/engine.h>

#include <stdint.h>

#define MAX_VOCAB 512
#define N_SEQ 24
#define GGUF_ALIGN 32           /* GGUF default alignment (stories260K sets no other) */
#define GGUF_T_STRING 8
#define GGUF_T_ARRAY 9
#define GGUF_T_FLOAT32 6

static const int32_t seq[N_SEQ] = {
    1, 403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401,
    396, 267, 337, 410, 408, 419,
};

static uint8_t *g_file;
static size_t g_size;

struct buf {
    uint8_t *p;
    size_t n, cap;
};

static void put(struct buf *b, const void *src, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2;
        b->p = realloc(b->p, b->cap);
        if (!b->p)
            exit(1);
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}
static void put_u32(struct buf *b, uint32_t v) { put(b, &v, 4); }
static void put_u64(struct buf *b, uint64_t v) { put(b, &v, 8); }
static void put_str(struct buf *b, const char *s) { put_u64(b, strlen(s)); put(b, s, strlen(s)); }
static void pad(struct buf *b)
{
    static const uint8_t z[GGUF_ALIGN];
    put(b, z, (GGUF_ALIGN - b->n % GGUF_ALIGN) % GGUF_ALIGN);
}

static uint64_t rd64(size_t at) { uint64_t v; memcpy(&v, g_file + at, 8); return v; }
static uint32_t rd32(size_t at) { uint32_t v; memcpy(&v, g_file + at, 4); return v; }

static size_t scalar_size(uint32_t t)
{
    static const size_t sz[] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };
    return t < sizeof sz / sizeof sz[0] ? sz[t] : 0;
}

static size_t skip_value(size_t p, uint32_t t)
{
    if (t == GGUF_T_STRING)
        return p + 8 + rd64(p);
    if (t == GGUF_T_ARRAY) {
        uint32_t et = rd32(p);
        uint64_t n = rd64(p + 4);
        p += 12;
        for (uint64_t i = 0; i < n; i++)
            p = skip_value(p, et);
        return p;
    }
    return p + scalar_size(t);
}

struct extra {
    const char *scaling_type;       /* NULL: no key */
    float scaling_factor;           /* 0: no key */
    int n_freqs;                    /* 0: no tensor */
    float freq;                     /* every divisor */
};

/* The fixture with the extras appended to the metadata and tensor table; returns its path. */
static const char *write_variant(const struct extra *e, char *path, size_t cap)
{
    uint64_t n_tensors = rd64(8), n_kv = rd64(16);
    size_t p = 24;
    for (uint64_t i = 0; i < n_kv; i++) {
        p += 8 + rd64(p);                   /* key */
        uint32_t t = rd32(p);
        p = skip_value(p + 4, t);
    }
    size_t kv_end = p;
    for (uint64_t i = 0; i < n_tensors; i++) {
        p += 8 + rd64(p);                   /* name */
        uint32_t nd = rd32(p);
        p += 4 + 8 * (size_t)nd + 4 + 8;    /* dims, type, offset */
    }
    size_t ti_end = p;
    size_t data = (ti_end + GGUF_ALIGN - 1) / GGUF_ALIGN * GGUF_ALIGN;
    size_t data_len = g_size - data;

    struct buf b = { 0 };
    put(&b, g_file, 8);                     /* magic, version */
    put_u64(&b, n_tensors + (e->n_freqs ? 1 : 0));
    put_u64(&b, n_kv + (e->scaling_type ? 1 : 0) + (e->scaling_factor ? 1 : 0));
    put(&b, g_file + 24, kv_end - 24);
    if (e->scaling_type) {
        put_str(&b, "llama.rope.scaling.type");
        put_u32(&b, GGUF_T_STRING);
        put_str(&b, e->scaling_type);
    }
    if (e->scaling_factor) {
        put_str(&b, "llama.rope.scaling.factor");
        put_u32(&b, GGUF_T_FLOAT32);
        put(&b, &e->scaling_factor, 4);
    }
    put(&b, g_file + kv_end, ti_end - kv_end);
    uint64_t freq_off = (data_len + GGUF_ALIGN - 1) / GGUF_ALIGN * GGUF_ALIGN;
    if (e->n_freqs) {
        put_str(&b, "rope_freqs.weight");
        put_u32(&b, 1);
        put_u64(&b, (uint64_t)e->n_freqs);
        put_u32(&b, 0);                     /* F32 */
        put_u64(&b, freq_off);
    }
    pad(&b);
    put(&b, g_file + data, data_len);
    pad(&b);
    for (int i = 0; i < e->n_freqs; i++)
        put(&b, &e->freq, 4);

    snprintf(path, cap, "/tmp/ork_test_rope_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0 || write(fd, b.p, b.n) != (ssize_t)b.n)
        path[0] = 0;
    if (fd >= 0)
        close(fd);
    free(b.p);
    return path;
}

/* Load a variant and evaluate seq with all logits; returns the load/eval result. */
static int eval_variant(const struct extra *e, float (*out)[MAX_VOCAB])
{
    char path[64];
    write_variant(e, path, sizeof path);
    if (!path[0])
        return -1000;
    struct ork_model_params mp;
    ork_model_params_default(&mp);
    mp.no_tokenizer = true;
    struct ork_model *m = NULL;
    struct ork_session *s = NULL;
    int ret = ork_model_load(path, &mp, &m);
    unlink(path);
    if (ret < 0)
        return ret;
    struct ork_session_params sp;
    ork_session_params_default(&sp);
    sp.ctx_size = 32;
    sp.n_threads = 1;
    if ((ret = ork_session_create(m, &sp, &s)) == 0)
        ret = ork_model_eval(s, seq, N_SEQ, 0, &out[0][0], ORK_EVAL_ALL_LOGITS);
    ork_session_free(s);
    ork_model_free(m);
    return ret;
}

static double max_diff(float (*a)[MAX_VOCAB], float (*b)[MAX_VOCAB])
{
    double d = 0;
    for (int i = 0; i < N_SEQ; i++)
        for (int k = 0; k < MAX_VOCAB; k++) {
            double x = fabs((double)a[i][k] - (double)b[i][k]);
            d = x > d ? x : d;
        }
    return d;
}

static float g_base[N_SEQ][MAX_VOCAB], g_a[N_SEQ][MAX_VOCAB], g_b[N_SEQ][MAX_VOCAB];

/* With no extras the rewrite reproduces the fixture byte for byte (so the rewriting is right). */
static void test_rewrite_is_faithful(void)
{
    struct extra none = { 0 };
    char path[64];
    write_variant(&none, path, sizeof path);
    REQUIRE(path[0] != 0);
    FILE *f = fopen(path, "rb");
    REQUIRE(f != NULL);
    uint8_t *copy = malloc(g_size + 1);
    size_t n = fread(copy, 1, g_size + 1, f);
    fclose(f);
    unlink(path);
    CHECK_EQ_INT(n, g_size);
    CHECK(n == g_size && memcmp(copy, g_file, g_size) == 0);
    free(copy);
    REQUIRE(eval_variant(&none, g_base) == 0);
}

static void test_unit_divisors_change_nothing(void)
{
    struct extra e = { .n_freqs = 4, .freq = 1.0f };   /* n_rot / 2 = 4 pairs */
    REQUIRE(eval_variant(&e, g_a) == 0);
    CHECK(max_diff(g_a, g_base) == 0.0);
}

static void test_divisors_equal_linear_scaling(void)
{
    struct extra freqs = { .n_freqs = 4, .freq = 2.0f };
    struct extra linear = { .scaling_type = "linear", .scaling_factor = 2.0f };
    REQUIRE(eval_variant(&freqs, g_a) == 0);
    REQUIRE(eval_variant(&linear, g_b) == 0);
    double d_ab = max_diff(g_a, g_b), d_base = max_diff(g_a, g_base);
    printf("  divisors 2 vs linear 2: %.3g; vs unscaled: %.3g\n", d_ab, d_base);
    CHECK(d_ab < 1e-4);
    CHECK(d_base > 1e-2);
}

static void test_refusals(void)
{
    struct extra yarn = { .scaling_type = "yarn", .scaling_factor = 4.0f };
    CHECK_EQ_INT(eval_variant(&yarn, g_a), ORK_EUNSUPPORTED);
    CHECK(strstr(ork_error_message(), "'yarn'") != NULL);
    struct extra bad = { .n_freqs = 3, .freq = 1.0f };
    CHECK_EQ_INT(eval_variant(&bad, g_a), ORK_EFORMAT);
    CHECK(strstr(ork_error_message(), "'rope_freqs.weight'") != NULL);
}

int main(void)
{
    const char *path = ork_test_fixture("models/stories260K.gguf");
    FILE *f = fopen(path, "rb");
    if (!f)
        SKIP("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    g_size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    g_file = malloc(g_size);
    if (!g_file || fread(g_file, 1, g_size, f) != g_size)
        return 1;
    fclose(f);
    RUN(test_rewrite_is_faithful);
    RUN(test_unit_divisors_change_nothing);
    RUN(test_divisors_equal_linear_scaling);
    RUN(test_refusals);
    free(g_file);
    return ork_test_done();
}
