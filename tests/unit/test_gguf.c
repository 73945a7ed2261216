/* test_gguf.c -- the GGUF reader on files built in memory: every metadata type, nested arrays,
 * versions, alignment, typed getters, and one test per kind of corruption (each must fail with
 * the right code and a message naming the field), every truncation point, random byte damage
 * and allocation failures. Fixture files are covered by test_gguf_fixtures.c. */
#include "ork_test.h"
#include "unit/test_gguf_builder.h"

#include <ork-engine/gguf.h>
#include <ork-kernels/types.h>
#include <ork/alloc.h>
#include <ork/error.h>

#include <float.h>
#include <stdint.h>

enum { T_U8, T_I8, T_U16, T_I16, T_U32, T_I32, T_F32, T_BOOL, T_STR, T_ARR, T_U64, T_I64, T_F64 };

static int open_gb(const struct gb *b, struct ork_gguf **g)
{
    ork_error_clear();
    return ork_gguf_open_mem(b->buf, b->len, g);
}

/* Open b, expect `code` and a message containing every given fragment. */
#define EXPECT_ERR(b, code, ...)                                                                \
    do {                                                                                        \
        struct ork_gguf *g_ = NULL;                                                             \
        int r_ = open_gb((b), &g_);                                                             \
        CHECK_EQ_INT(r_, (code));                                                               \
        CHECK(g_ == NULL);                                                                      \
        const char *frags_[] = { __VA_ARGS__ };                                                 \
        for (size_t k_ = 0; k_ < sizeof frags_ / sizeof frags_[0]; k_++)                        \
            if (!strstr(ork_error_message(), frags_[k_])) {                                     \
                fprintf(stderr, "%s:%d: message \"%s\" lacks \"%s\"\n", __FILE__, __LINE__,      \
                        ork_error_message(), frags_[k_]);                                       \
                ork_test_failures_++;                                                           \
            }                                                                                   \
        if (r_ == 0)                                                                            \
            ork_gguf_close(g_);                                                                 \
    } while (0)

/* Sizes used by the small model below (GGML facts: F32 4 bytes, F16 2, Q8_0 34 per 32). */
#define SMALL_DATA_BYTES 108

/* A small valid v3 file: 3 kvs, 3 tensors of different types, alignment 32, data ends at EOF.
 *   a: F32 [4, 2] @ 0 (32 bytes); b: Q8_0 [32] @ 32 (34 bytes); c: F16 [3, 1, 1, 2] @ 96 (12). */
static void build_small(struct gb *b, uint32_t version)
{
    gb_header(b, version, 3, 3);
    gb_kv_str(b, "general.architecture", "llama");
    gb_kv_u32(b, "general.alignment", 32);
    gb_kv_u32(b, "llama.block_count", 5);
    gb_tensor(b, "a", 2, (uint64_t[]){ 4, 2 }, ORK_TYPE_F32, 0);
    gb_tensor(b, "b", 1, (uint64_t[]){ 32 }, ORK_TYPE_Q8_0, 32);
    gb_tensor(b, "c", 4, (uint64_t[]){ 3, 1, 1, 2 }, ORK_TYPE_F16, 96);
    gb_pad(b, 32);
    gb_fill(b, SMALL_DATA_BYTES, 7);
}

static void test_small_file(void)
{
    for (uint32_t version = 2; version <= 3; version++) {
        struct gb b = { 0 };
        build_small(&b, version);
        struct ork_gguf *g = NULL;
        int ret = open_gb(&b, &g);
        if (ret)
            fprintf(stderr, "open: %s\n", ork_error_message());
        REQUIRE(ret == 0);
        CHECK_EQ_INT(ork_gguf_version(g), version);
        CHECK_EQ_INT(ork_gguf_alignment(g), 32);
        CHECK_EQ_INT(ork_gguf_file_size(g), b.len);
        CHECK_EQ_INT(ork_gguf_data_offset(g), b.len - SMALL_DATA_BYTES);
        CHECK_EQ_INT(ork_gguf_data_offset(g) % 32, 0);
        CHECK(ork_gguf_base(g) == b.buf);
        CHECK_EQ_INT(ork_gguf_n_kv(g), 3);
        CHECK_EQ_INT(ork_gguf_n_tensors(g), 3);
        CHECK_STR(ork_gguf_kv_at(g, 0)->key, "general.architecture");
        CHECK(ork_gguf_kv_at(g, 3) == NULL);
        uint32_t u = 0;
        CHECK_EQ_INT(ork_gguf_get_u32(g, "llama.block_count", &u), 0);
        CHECK_EQ_INT(u, 5);

        const struct ork_gguf_tensor *a = ork_gguf_tensor_find(g, "a");
        const struct ork_gguf_tensor *tb = ork_gguf_tensor_find(g, "b");
        const struct ork_gguf_tensor *c = ork_gguf_tensor_find(g, "c");
        REQUIRE(a && tb && c);
        CHECK(ork_gguf_tensor_find(g, "d") == NULL);
        CHECK(ork_gguf_tensor_at(g, 1) == tb);
        CHECK(ork_gguf_tensor_at(g, 3) == NULL);
        CHECK_EQ_INT(a->n_dims, 2);
        CHECK_EQ_INT(a->ne[0], 4);
        CHECK_EQ_INT(a->ne[1], 2);
        CHECK_EQ_INT(a->ne[2], 1);
        CHECK_EQ_INT(a->ne[3], 1);
        CHECK_EQ_INT(a->type, ORK_TYPE_F32);
        CHECK_EQ_INT(a->nbytes, 32);
        CHECK_EQ_INT(tb->nbytes, 34);
        CHECK_EQ_INT(tb->type, ORK_TYPE_Q8_0);
        CHECK_EQ_INT(c->nbytes, 12);
        CHECK_EQ_INT(c->n_dims, 4);
        CHECK_EQ_INT(c->ne[3], 2);
        CHECK_EQ_INT(c->offset, 96);
        size_t data = b.len - SMALL_DATA_BYTES;
        CHECK((const uint8_t *)a->data == b.buf + data);
        CHECK((const uint8_t *)tb->data == b.buf + data + 32);
        CHECK((const uint8_t *)c->data == b.buf + data + 96);
        CHECK_EQ_INT(((const uint8_t *)c->data)[0], (uint8_t)(7 + 96));
        ork_gguf_close(g);
        gb_free(&b);
    }
}

/* The file paths (mapped, and read into memory): the same small file written to disk, an empty
 * file, a directory, a missing file, an unknown mode. */
static void test_open_file(void)
{
    char path[] = "/tmp/ork_test_gguf_XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    struct gb b = { 0 };
    build_small(&b, 3);
    CHECK_EQ_INT(write(fd, b.buf, b.len), (long long)b.len);
    close(fd);
    struct ork_gguf *g = NULL;
    CHECK_EQ_INT(ork_gguf_open(path, &g), 0);
    if (g) {
        CHECK_EQ_INT(ork_gguf_file_size(g), b.len);
        const struct ork_gguf_tensor *t = ork_gguf_tensor_find(g, "c");
        CHECK(t && !memcmp(t->data, b.buf + b.len - SMALL_DATA_BYTES + 96, 12));
        CHECK((uintptr_t)t->data % 32 == 0);    /* the mapping is page aligned */
        ork_gguf_close(g);
    }
    /* read into memory: the same bytes, from a copy placed just past a 2 MiB boundary so
     * that the data section starts on a 64-byte line */
    CHECK_EQ_INT(ork_gguf_open_mode(path, ORK_GGUF_READ, &g), 0);
    if (g) {
        CHECK_EQ_INT(ork_gguf_file_size(g), b.len);
        CHECK(!memcmp(ork_gguf_base(g), b.buf, b.len));
        uintptr_t base = (uintptr_t)ork_gguf_base(g);
        CHECK(base % ((uintptr_t)2 << 20) < 64);
        CHECK((base + ork_gguf_data_offset(g)) % 64 == 0);
        CHECK(ork_gguf_data_offset(g) % 64 != 0);     /* so the copy was shifted */
        const struct ork_gguf_tensor *t = ork_gguf_tensor_find(g, "c");
        CHECK(t && !memcmp(t->data, b.buf + b.len - SMALL_DATA_BYTES + 96, 12));
        ork_gguf_close(g);
    }
    ork_error_clear();
    CHECK_EQ_INT(ork_gguf_open_mode(path, (enum ork_gguf_mode)7, &g), ORK_EINVAL);
    CHECK(strstr(ork_error_message(), "unknown mode 7"));
    CHECK_EQ_INT(truncate(path, 0), 0);
    for (int mode = ORK_GGUF_MMAP; mode <= ORK_GGUF_READ; mode++) {
        ork_error_clear();
        CHECK_EQ_INT(ork_gguf_open_mode(path, (enum ork_gguf_mode)mode, &g), ORK_EFORMAT);
        CHECK(strstr(ork_error_message(), "empty") && strstr(ork_error_message(), path));
    }
    unlink(path);
    for (int mode = ORK_GGUF_MMAP; mode <= ORK_GGUF_READ; mode++) {
        ork_error_clear();
        CHECK_EQ_INT(ork_gguf_open_mode(path, (enum ork_gguf_mode)mode, &g), ORK_EIO);
        CHECK(strstr(ork_error_message(), "cannot open") && strstr(ork_error_message(), path));
        CHECK_EQ_INT(ork_gguf_open_mode("/tmp", (enum ork_gguf_mode)mode, &g), ORK_EIO);
        CHECK(strstr(ork_error_message(), "not a regular file"));
    }
    CHECK_EQ_INT(ork_gguf_open(NULL, &g), ORK_EINVAL);
    gb_free(&b);
}

/* One key of every type, including arrays of every element type and nested arrays. */
static void build_all_types(struct gb *b)
{
    gb_header(b, 3, 0, 21);
    gb_key(b, "u8", T_U8);      gb_u8(b, 200);
    gb_key(b, "i8", T_I8);      gb_u8(b, (uint8_t)-100);
    gb_key(b, "u16", T_U16);    gb_u16(b, 60000);
    gb_key(b, "i16", T_I16);    gb_u16(b, (uint16_t)-30000);
    gb_key(b, "u32", T_U32);    gb_u32(b, 4000000000u);
    gb_key(b, "i32", T_I32);    gb_u32(b, (uint32_t)-2000000000);
    gb_key(b, "f32", T_F32);    gb_f32(b, 1.5f);
    gb_key(b, "bool", T_BOOL);  gb_u8(b, 1);
    gb_key(b, "str", T_STR);    gb_str(b, "h\xc3\xa9llo");
    gb_key(b, "u64", T_U64);    gb_u64(b, UINT64_MAX);
    gb_key(b, "i64", T_I64);    gb_u64(b, (uint64_t)INT64_MIN);
    gb_key(b, "f64", T_F64);    gb_f64(b, -2.25);
    /* arrays */
    gb_key(b, "arr.u8", T_ARR);  gb_u32(b, T_U8);  gb_u64(b, 3); gb_u8(b, 1); gb_u8(b, 2); gb_u8(b, 255);
    gb_key(b, "arr.i16", T_ARR); gb_u32(b, T_I16); gb_u64(b, 2); gb_u16(b, (uint16_t)-5); gb_u16(b, 7);
    gb_key(b, "arr.i32", T_ARR); gb_u32(b, T_I32); gb_u64(b, 2); gb_u32(b, (uint32_t)-1); gb_u32(b, 123456);
    gb_key(b, "arr.f32", T_ARR); gb_u32(b, T_F32); gb_u64(b, 2); gb_f32(b, 0.25f); gb_f32(b, -3.0f);
    gb_key(b, "arr.bool", T_ARR); gb_u32(b, T_BOOL); gb_u64(b, 3); gb_u8(b, 1); gb_u8(b, 0); gb_u8(b, 1);
    gb_key(b, "arr.str", T_ARR); gb_u32(b, T_STR); gb_u64(b, 3); gb_str(b, "x"); gb_str(b, ""); gb_str(b, "yz");
    gb_key(b, "arr.u64", T_ARR); gb_u32(b, T_U64); gb_u64(b, 1); gb_u64(b, 1ull << 40);
    gb_key(b, "arr.f64", T_ARR); gb_u32(b, T_F64); gb_u64(b, 1); gb_f64(b, 1e300);
    /* [[1, 2], [[]], ["s"]]... an array of arrays: [ [i32: 1, 2], [arr: [u8: 9]], [str: "s"] ] */
    gb_key(b, "arr.nested", T_ARR); gb_u32(b, T_ARR); gb_u64(b, 3);
    gb_u32(b, T_I32); gb_u64(b, 2); gb_u32(b, 1); gb_u32(b, 2);
    gb_u32(b, T_ARR); gb_u64(b, 1); gb_u32(b, T_U8); gb_u64(b, 1); gb_u8(b, 9);
    gb_u32(b, T_STR); gb_u64(b, 1); gb_str(b, "s");
}

static void test_all_types(void)
{
    struct gb b = { 0 };
    build_all_types(&b);
    struct ork_gguf *g = NULL;
    int ret = open_gb(&b, &g);
    if (ret)
        fprintf(stderr, "open: %s\n", ork_error_message());
    REQUIRE(ret == 0);
    CHECK_EQ_INT(ork_gguf_n_kv(g), 21);
    CHECK_EQ_INT(ork_gguf_n_tensors(g), 0);
    CHECK_EQ_INT(ork_gguf_alignment(g), ORK_GGUF_DEFAULT_ALIGNMENT);
    CHECK_EQ_INT(ork_gguf_data_offset(g), b.len);   /* no data section */

    const struct ork_gguf_kv *kv;
    CHECK((kv = ork_gguf_kv_find(g, "u8")) && kv->value.type == ORK_GGUF_UINT8 && kv->value.v.u64 == 200);
    CHECK((kv = ork_gguf_kv_find(g, "i8")) && kv->value.type == ORK_GGUF_INT8 && kv->value.v.i64 == -100);
    CHECK((kv = ork_gguf_kv_find(g, "u16")) && kv->value.v.u64 == 60000);
    CHECK((kv = ork_gguf_kv_find(g, "i16")) && kv->value.v.i64 == -30000);
    CHECK((kv = ork_gguf_kv_find(g, "u32")) && kv->value.v.u64 == 4000000000u);
    CHECK((kv = ork_gguf_kv_find(g, "i32")) && kv->value.v.i64 == -2000000000);
    CHECK((kv = ork_gguf_kv_find(g, "f32")) && kv->value.type == ORK_GGUF_FLOAT32 && kv->value.v.f64 == 1.5);
    CHECK((kv = ork_gguf_kv_find(g, "bool")) && kv->value.type == ORK_GGUF_BOOL && kv->value.v.u64 == 1);
    CHECK((kv = ork_gguf_kv_find(g, "u64")) && kv->value.v.u64 == UINT64_MAX);
    CHECK((kv = ork_gguf_kv_find(g, "i64")) && kv->value.v.i64 == INT64_MIN);
    CHECK((kv = ork_gguf_kv_find(g, "f64")) && kv->value.type == ORK_GGUF_FLOAT64 && kv->value.v.f64 == -2.25);
    CHECK(ork_gguf_kv_find(g, "nope") == NULL);
    CHECK(ork_gguf_kv_find(g, "") == NULL);

    struct ork_gguf_str s = { 0 };
    CHECK_EQ_INT(ork_gguf_get_str(g, "str", &s), 0);
    CHECK(s.len == 6 && !memcmp(s.ptr, "h\xc3\xa9llo", 6));

    const struct ork_gguf_array *a = NULL;
    REQUIRE(ork_gguf_get_arr(g, "arr.u8", ORK_GGUF_UINT8, &a) == 0);
    CHECK_EQ_INT(a->n, 3);
    CHECK_EQ_INT(ork_gguf_arr_i64(a, 2), 255);
    CHECK_EQ_INT(ork_gguf_arr_i64(a, 3), 0);          /* out of range */
    CHECK_NEAR(ork_gguf_arr_f64(a, 1), 2.0, 0);
    REQUIRE(ork_gguf_get_arr(g, "arr.i16", ORK_GGUF_INT16, &a) == 0);
    CHECK_EQ_INT(ork_gguf_arr_i64(a, 0), -5);
    CHECK_EQ_INT(ork_gguf_arr_i64(a, 1), 7);
    REQUIRE(ork_gguf_get_arr(g, "arr.i32", ORK_GGUF_INT32, &a) == 0);
    CHECK_EQ_INT(ork_gguf_arr_i64(a, 0), -1);
    CHECK_EQ_INT(ork_gguf_arr_i64(a, 1), 123456);
    CHECK_NEAR(ork_gguf_arr_f64(a, 0), -1.0, 0);
    REQUIRE(ork_gguf_get_arr(g, "arr.f32", ORK_GGUF_FLOAT32, &a) == 0);
    CHECK_NEAR(ork_gguf_arr_f64(a, 0), 0.25, 0);
    CHECK_NEAR(ork_gguf_arr_f64(a, 1), -3.0, 0);
    CHECK_EQ_INT(ork_gguf_arr_i64(a, 0), 0);          /* not an integer type */
    REQUIRE(ork_gguf_get_arr(g, "arr.bool", ORK_GGUF_BOOL, &a) == 0);
    CHECK_EQ_INT(ork_gguf_arr_i64(a, 0) + 2 * ork_gguf_arr_i64(a, 1) + 4 * ork_gguf_arr_i64(a, 2), 5);
    REQUIRE(ork_gguf_get_arr(g, "arr.str", ORK_GGUF_STRING, &a) == 0);
    REQUIRE(a->n == 3 && a->strs);
    CHECK(a->strs[0].len == 1 && a->strs[0].ptr[0] == 'x');
    CHECK(a->strs[1].len == 0);
    CHECK(a->strs[2].len == 2 && !memcmp(a->strs[2].ptr, "yz", 2));
    CHECK_NEAR(ork_gguf_arr_f64(a, 0), 0, 0);          /* strings are not numeric */
    REQUIRE(ork_gguf_get_arr(g, "arr.u64", ORK_GGUF_UINT64, &a) == 0);
    CHECK_EQ_INT(ork_gguf_arr_i64(a, 0), 1ll << 40);
    REQUIRE(ork_gguf_get_arr(g, "arr.f64", ORK_GGUF_TYPE_COUNT, &a) == 0);
    CHECK_NEAR(ork_gguf_arr_f64(a, 0), 1e300, 1e285);

    REQUIRE(ork_gguf_get_arr(g, "arr.nested", ORK_GGUF_ARRAY, &a) == 0);
    REQUIRE(a->n == 3 && a->items);
    const struct ork_gguf_array *a0 = &a->items[0].v.arr, *a1 = &a->items[1].v.arr,
                                *a2 = &a->items[2].v.arr;
    CHECK_EQ_INT(a->items[0].type, ORK_GGUF_ARRAY);
    CHECK(a0->type == ORK_GGUF_INT32 && a0->n == 2);
    CHECK_EQ_INT(ork_gguf_arr_i64(a0, 1), 2);
    REQUIRE(a1->type == ORK_GGUF_ARRAY && a1->n == 1 && a1->items);
    CHECK(a1->items[0].v.arr.type == ORK_GGUF_UINT8 && a1->items[0].v.arr.n == 1);
    CHECK_EQ_INT(ork_gguf_arr_i64(&a1->items[0].v.arr, 0), 9);
    CHECK(a2->type == ORK_GGUF_STRING && a2->n == 1 && a2->strs && a2->strs[0].len == 1);

    ork_gguf_close(g);
    gb_free(&b);
}

static void test_getters(void)
{
    struct gb b = { 0 };
    build_all_types(&b);
    struct ork_gguf *g = NULL;
    REQUIRE(open_gb(&b, &g) == 0);
    uint32_t u32 = 0;
    uint64_t u64 = 0;
    int32_t i32 = 0;
    float f = 0;
    bool bl = false;
    struct ork_gguf_str s;
    const struct ork_gguf_array *a;

    /* integers convert across widths when the value fits */
    CHECK_EQ_INT(ork_gguf_get_u32(g, "u8", &u32), 0);
    CHECK_EQ_INT(u32, 200);
    CHECK_EQ_INT(ork_gguf_get_u32(g, "u16", &u32), 0);
    CHECK_EQ_INT(u32, 60000);
    CHECK_EQ_INT(ork_gguf_get_i32(g, "i8", &i32), 0);
    CHECK_EQ_INT(i32, -100);
    CHECK_EQ_INT(ork_gguf_get_i32(g, "u16", &i32), 0);
    CHECK_EQ_INT(i32, 60000);
    CHECK_EQ_INT(ork_gguf_get_u64(g, "u64", &u64), 0);
    CHECK(u64 == UINT64_MAX);
    CHECK_EQ_INT(ork_gguf_get_u64(g, "u32", &u64), 0);
    CHECK_EQ_INT(u64, 4000000000u);
    CHECK_EQ_INT(ork_gguf_get_i32(g, "i32", &i32), 0);
    CHECK_EQ_INT(i32, -2000000000);

    /* ...and fail naming the key when it does not */
    ork_error_clear();
    CHECK_EQ_INT(ork_gguf_get_u32(g, "i8", &u32), ORK_EFORMAT);
    CHECK(strstr(ork_error_message(), "'i8'") && strstr(ork_error_message(), "-100"));
    CHECK_EQ_INT(ork_gguf_get_u32(g, "u64", &u32), ORK_EFORMAT);
    CHECK(strstr(ork_error_message(), "'u64'"));
    CHECK_EQ_INT(ork_gguf_get_i32(g, "u32", &i32), ORK_EFORMAT);
    CHECK_EQ_INT(ork_gguf_get_u64(g, "i64", &u64), ORK_EFORMAT);
    CHECK_EQ_INT(ork_gguf_get_u32(g, "f32", &u32), ORK_EFORMAT);
    CHECK(strstr(ork_error_message(), "'f32'") && strstr(ork_error_message(), "type f32"));
    CHECK_EQ_INT(ork_gguf_get_u32(g, "bool", &u32), ORK_EFORMAT);
    CHECK_EQ_INT(ork_gguf_get_u32(g, "str", &u32), ORK_EFORMAT);
    CHECK(strstr(ork_error_message(), "type str"));

    /* floats accept f32 and f64 only */
    CHECK_EQ_INT(ork_gguf_get_f32(g, "f32", &f), 0);
    CHECK_NEAR(f, 1.5, 0);
    CHECK_EQ_INT(ork_gguf_get_f32(g, "f64", &f), 0);
    CHECK_NEAR(f, -2.25, 0);
    CHECK_EQ_INT(ork_gguf_get_f32(g, "u32", &f), ORK_EFORMAT);
    CHECK(strstr(ork_error_message(), "'u32'") && strstr(ork_error_message(), "type u32"));

    /* bool accepts bool only */
    CHECK_EQ_INT(ork_gguf_get_bool(g, "bool", &bl), 0);
    CHECK(bl);
    CHECK_EQ_INT(ork_gguf_get_bool(g, "u8", &bl), ORK_EFORMAT);
    CHECK(strstr(ork_error_message(), "'u8'"));

    CHECK_EQ_INT(ork_gguf_get_str(g, "u8", &s), ORK_EFORMAT);
    CHECK(strstr(ork_error_message(), "'u8'") && strstr(ork_error_message(), "type u8"));

    CHECK_EQ_INT(ork_gguf_get_arr(g, "str", ORK_GGUF_TYPE_COUNT, &a), ORK_EFORMAT);
    CHECK(strstr(ork_error_message(), "'str'"));
    CHECK_EQ_INT(ork_gguf_get_arr(g, "arr.u8", ORK_GGUF_STRING, &a), ORK_EFORMAT);
    CHECK(strstr(ork_error_message(), "'arr.u8'") && strstr(ork_error_message(), "array of u8"));

    /* absent: ORK_ENOENT and no message */
    ork_error_clear();
    CHECK_EQ_INT(ork_gguf_get_u32(g, "missing", &u32), ORK_ENOENT);
    CHECK_EQ_INT(ork_gguf_get_u64(g, "missing", &u64), ORK_ENOENT);
    CHECK_EQ_INT(ork_gguf_get_i32(g, "missing", &i32), ORK_ENOENT);
    CHECK_EQ_INT(ork_gguf_get_f32(g, "missing", &f), ORK_ENOENT);
    CHECK_EQ_INT(ork_gguf_get_bool(g, "missing", &bl), ORK_ENOENT);
    CHECK_EQ_INT(ork_gguf_get_str(g, "missing", &s), ORK_ENOENT);
    CHECK_EQ_INT(ork_gguf_get_arr(g, "missing", ORK_GGUF_TYPE_COUNT, &a), ORK_ENOENT);
    CHECK_STR(ork_error_message(), "");

    CHECK_STR(ork_gguf_type_name(ORK_GGUF_UINT32), "u32");
    CHECK_STR(ork_gguf_type_name(ORK_GGUF_ARRAY), "arr");
    CHECK_STR(ork_gguf_type_name(ORK_GGUF_TYPE_COUNT), "unknown");
    ork_gguf_close(g);
    gb_free(&b);
}

/* Many keys: the hashed lookup finds each one, and misses cleanly. */
static void test_many_keys(void)
{
    enum { N = 500 };
    struct gb b = { 0 };
    gb_header(&b, 3, 0, N);
    char key[64];
    for (int i = 0; i < N; i++) {
        snprintf(key, sizeof key, "k.%d", i);
        gb_kv_u32(&b, key, (uint32_t)i * 3);
    }
    struct ork_gguf *g = NULL;
    REQUIRE(open_gb(&b, &g) == 0);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        uint32_t v = 0;
        snprintf(key, sizeof key, "k.%d", i);
        if (ork_gguf_get_u32(g, key, &v) != 0 || v != (uint32_t)i * 3)
            bad++;
        snprintf(key, sizeof key, "k.%d.x", i);
        if (ork_gguf_kv_find(g, key))
            bad++;
    }
    CHECK_EQ_INT(bad, 0);
    ork_gguf_close(g);
    gb_free(&b);
}

static void test_alignment(void)
{
    /* general.alignment = 64: data section and every tensor offset on 64-byte boundaries */
    struct gb b = { 0 };
    gb_header(&b, 3, 2, 1);
    gb_kv_u32(&b, "general.alignment", 64);
    gb_tensor(&b, "x", 1, (uint64_t[]){ 8 }, ORK_TYPE_F32, 0);
    gb_tensor(&b, "y", 1, (uint64_t[]){ 256 }, ORK_TYPE_Q4_K, 64);
    size_t infos_end = b.len;
    gb_pad(&b, 64);
    size_t data = b.len;
    gb_fill(&b, 64 + 144, 1);
    struct ork_gguf *g = NULL;
    REQUIRE(open_gb(&b, &g) == 0);
    CHECK_EQ_INT(ork_gguf_alignment(g), 64);
    CHECK_EQ_INT(ork_gguf_data_offset(g), data);
    CHECK(data > infos_end);
    CHECK_EQ_INT(ork_gguf_tensor_find(g, "y")->nbytes, 144);
    CHECK((const uint8_t *)ork_gguf_tensor_find(g, "y")->data == b.buf + data + 64);
    ork_gguf_close(g);

    /* an offset aligned to 32 but not 64 is rejected */
    gb_free(&b);
    gb_header(&b, 3, 1, 1);
    gb_kv_u32(&b, "general.alignment", 64);
    gb_tensor(&b, "x", 1, (uint64_t[]){ 8 }, ORK_TYPE_F32, 32);
    gb_pad(&b, 64);
    gb_fill(&b, 64, 1);
    EXPECT_ERR(&b, ORK_EFORMAT, "tensor 'x'", "offset 32", "alignment 64");
    gb_free(&b);

    /* alignment 1 is legal: no padding at all */
    gb_header(&b, 3, 1, 1);
    gb_kv_u32(&b, "general.alignment", 1);
    gb_tensor(&b, "x", 1, (uint64_t[]){ 3 }, ORK_TYPE_I8, 0);
    data = b.len;
    gb_fill(&b, 3, 1);
    REQUIRE(open_gb(&b, &g) == 0);
    CHECK_EQ_INT(ork_gguf_data_offset(g), data);
    ork_gguf_close(g);
    gb_free(&b);
}

static void test_bad_alignment(void)
{
    static const uint32_t bad[] = { 0, 3, 48, 0x80000001u };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct gb b = { 0 };
        gb_header(&b, 3, 0, 1);
        gb_kv_u32(&b, "general.alignment", bad[i]);
        EXPECT_ERR(&b, ORK_EFORMAT, "general.alignment", "power of two");
        gb_free(&b);
    }
    struct gb b = { 0 };
    gb_header(&b, 3, 0, 1);
    gb_key(&b, "general.alignment", T_U64);
    gb_u64(&b, 32);
    EXPECT_ERR(&b, ORK_EFORMAT, "general.alignment", "type u64", "expected u32");
    gb_free(&b);
    gb_header(&b, 3, 0, 1);
    gb_kv_str(&b, "general.alignment", "32");
    EXPECT_ERR(&b, ORK_EFORMAT, "general.alignment", "type str");
    gb_free(&b);
}

static void test_header_errors(void)
{
    struct gb b = { 0 };
    build_small(&b, 3);
    memcpy(b.buf, "GGUX", 4);
    EXPECT_ERR(&b, ORK_EFORMAT, "bad magic", "0x58554747");
    memcpy(b.buf, "GGUF", 4);

    b.buf[4] = 1;
    EXPECT_ERR(&b, ORK_EUNSUPPORTED, "version 1");
    b.buf[4] = 4;
    EXPECT_ERR(&b, ORK_EUNSUPPORTED, "version 4");
    b.buf[4] = 0;
    EXPECT_ERR(&b, ORK_EUNSUPPORTED, "version 0");
    b.buf[4] = 0;
    b.buf[7] = 3;       /* 0x03000000: a big-endian file */
    EXPECT_ERR(&b, ORK_EUNSUPPORTED, "big-endian");
    b.buf[7] = 0;
    b.buf[4] = 3;

    struct ork_gguf *g = NULL;
    ork_error_clear();
    CHECK_EQ_INT(ork_gguf_open_mem(b.buf, 0, &g), ORK_EFORMAT);
    CHECK(strstr(ork_error_message(), "too small"));
    CHECK_EQ_INT(ork_gguf_open_mem(NULL, 0, &g), ORK_EFORMAT);
    CHECK_EQ_INT(ork_gguf_open_mem(NULL, 5, &g), ORK_EINVAL);
    gb_free(&b);

    /* absurd counts are refused before anything is allocated for them */
    gb_header(&b, 3, 0, UINT64_MAX);
    gb_fill(&b, 100, 0);
    EXPECT_ERR(&b, ORK_EFORMAT, "n_kv", "18446744073709551615");
    gb_free(&b);
    gb_header(&b, 3, 1ull << 40, 0);
    gb_fill(&b, 100, 0);
    EXPECT_ERR(&b, ORK_EFORMAT, "n_tensors");
    gb_free(&b);
    /* n_tensors fits after the header, but not after the metadata */
    gb_header(&b, 3, 3, 1);
    gb_kv_str(&b, "k", "0123456789012345678901234567890123456789012345678901234567890123456789");
    gb_fill(&b, 40, 0);
    EXPECT_ERR(&b, ORK_EFORMAT, "n_tensors 3", "after the metadata");
    gb_free(&b);
}

static void test_kv_errors(void)
{
    struct gb b = { 0 };

    /* key length far beyond the file */
    gb_header(&b, 3, 0, 1);
    gb_u64(&b, 1ull << 62);
    gb_fill(&b, 20, 'a');
    EXPECT_ERR(&b, ORK_EFORMAT, "key 0", "string length 4611686018427387904");
    gb_free(&b);

    /* empty key; key with a NUL byte */
    gb_header(&b, 3, 0, 1);
    gb_key(&b, "", T_U8);
    gb_u8(&b, 0);
    gb_fill(&b, 8, 0);
    EXPECT_ERR(&b, ORK_EFORMAT, "key 0", "empty");
    gb_free(&b);
    gb_header(&b, 3, 0, 1);
    gb_strn(&b, "a\0b", 3);
    gb_u32(&b, T_U8);
    gb_u8(&b, 0);
    EXPECT_ERR(&b, ORK_EFORMAT, "key 0", "NUL");
    gb_free(&b);

    /* unknown value type id */
    gb_header(&b, 3, 0, 2);
    gb_kv_u32(&b, "fine", 1);
    gb_key(&b, "llama.weird", 13);
    gb_u64(&b, 0);
    EXPECT_ERR(&b, ORK_EFORMAT, "key 1 ('llama.weird')", "unknown value type id 13");
    gb_free(&b);

    /* bool other than 0/1, as a value and inside an array */
    gb_header(&b, 3, 0, 1);
    gb_key(&b, "flag", T_BOOL);
    gb_u8(&b, 2);
    gb_fill(&b, 16, 0);
    EXPECT_ERR(&b, ORK_EFORMAT, "'flag'", "bool value 2");
    gb_free(&b);
    gb_header(&b, 3, 0, 1);
    gb_key(&b, "flags", T_ARR);
    gb_u32(&b, T_BOOL);
    gb_u64(&b, 3);
    gb_u8(&b, 0); gb_u8(&b, 1); gb_u8(&b, 0xff);
    EXPECT_ERR(&b, ORK_EFORMAT, "'flags'", "bool element 2");
    gb_free(&b);

    /* string value longer than the file */
    gb_header(&b, 3, 0, 1);
    gb_key(&b, "general.name", T_STR);
    gb_u64(&b, 1000);
    gb_fill(&b, 20, 'a');
    EXPECT_ERR(&b, ORK_EFORMAT, "'general.name'", "string length 1000", "remaining 20");
    gb_free(&b);

    /* absurd array lengths: numeric, string, nested */
    gb_header(&b, 3, 0, 1);
    gb_key(&b, "tokenizer.ggml.scores", T_ARR);
    gb_u32(&b, T_F32);
    gb_u64(&b, 1ull << 61);
    gb_fill(&b, 64, 0);
    EXPECT_ERR(&b, ORK_EFORMAT, "'tokenizer.ggml.scores'", "array of 2305843009213693952 f32");
    gb_free(&b);
    gb_header(&b, 3, 0, 1);
    gb_key(&b, "tokenizer.ggml.tokens", T_ARR);
    gb_u32(&b, T_STR);
    gb_u64(&b, UINT64_MAX);
    gb_fill(&b, 64, 0);
    EXPECT_ERR(&b, ORK_EFORMAT, "'tokenizer.ggml.tokens'", "strings cannot fit");
    gb_free(&b);
    gb_header(&b, 3, 0, 1);
    gb_key(&b, "nest", T_ARR);
    gb_u32(&b, T_ARR);
    gb_u64(&b, 1000);
    gb_fill(&b, 64, 0);
    EXPECT_ERR(&b, ORK_EFORMAT, "'nest'", "array of 1000 arrays");
    gb_free(&b);

    /* string array whose last string overruns the file */
    gb_header(&b, 3, 0, 1);
    gb_key(&b, "tokenizer.ggml.tokens", T_ARR);
    gb_u32(&b, T_STR);
    gb_u64(&b, 3);
    gb_str(&b, "a");
    gb_str(&b, "b");
    gb_u64(&b, 5);
    gb_bytes(&b, "cc", 2);
    EXPECT_ERR(&b, ORK_EFORMAT, "'tokenizer.ggml.tokens'", "string 2 of 3");
    gb_free(&b);

    /* unknown array element type */
    gb_header(&b, 3, 0, 1);
    gb_key(&b, "arr", T_ARR);
    gb_u32(&b, 99);
    gb_u64(&b, 0);
    EXPECT_ERR(&b, ORK_EFORMAT, "'arr'", "unknown array element type id 99");
    gb_free(&b);

    /* duplicate keys */
    gb_header(&b, 3, 0, 3);
    gb_kv_u32(&b, "llama.block_count", 1);
    gb_kv_u32(&b, "other", 1);
    gb_kv_u32(&b, "llama.block_count", 2);
    EXPECT_ERR(&b, ORK_EFORMAT, "duplicate key 'llama.block_count'", "keys 0 and 2");
    gb_free(&b);

    /* truncated value: the message names the key */
    gb_header(&b, 3, 0, 4);
    gb_kv_u32(&b, "a", 1);
    gb_kv_u32(&b, "b", 1);
    gb_kv_u32(&b, "c", 1);
    gb_key(&b, "llama.block_count", T_U32);
    gb_u16(&b, 5);
    EXPECT_ERR(&b, ORK_EFORMAT, "truncated reading key 3 ('llama.block_count') value");
    gb_free(&b);
}

/* Arrays nested exactly to the limit are fine; one level more is refused. */
static void build_nested(struct gb *b, int levels)
{
    gb_header(b, 3, 0, 1);
    gb_key(b, "deep", T_ARR);
    for (int i = 1; i < levels; i++) {
        gb_u32(b, T_ARR);
        gb_u64(b, 1);
    }
    gb_u32(b, T_U16);
    gb_u64(b, 1);
    gb_u16(b, 4242);
}

static void test_nesting_depth(void)
{
    struct gb b = { 0 };
    build_nested(&b, 8);
    struct ork_gguf *g = NULL;
    REQUIRE(open_gb(&b, &g) == 0);
    const struct ork_gguf_array *a = NULL;
    REQUIRE(ork_gguf_get_arr(g, "deep", ORK_GGUF_ARRAY, &a) == 0);
    int levels = 1;
    while (a->type == ORK_GGUF_ARRAY && a->n == 1) {
        a = &a->items[0].v.arr;
        levels++;
    }
    CHECK_EQ_INT(levels, 8);
    CHECK_EQ_INT(ork_gguf_arr_i64(a, 0), 4242);
    ork_gguf_close(g);
    gb_free(&b);

    build_nested(&b, 9);
    EXPECT_ERR(&b, ORK_EFORMAT, "'deep'", "nested deeper than 8");
    gb_free(&b);
    build_nested(&b, 10000);
    EXPECT_ERR(&b, ORK_EFORMAT, "'deep'", "nested deeper than 8");
    gb_free(&b);
}

/* A one-tensor file with the given dims/type/offset and `data_bytes` of data. */
static void build_one_tensor(struct gb *b, const char *name, uint32_t n_dims, const uint64_t *ne,
                             uint32_t type, uint64_t offset, size_t data_bytes)
{
    gb_header(b, 3, 1, 0);
    gb_tensor(b, name, n_dims, ne, type, offset);
    gb_pad(b, 32);
    gb_fill(b, data_bytes, 3);
}

static void test_tensor_errors(void)
{
    struct gb b = { 0 };
    const char *nm = "blk.0.attn_q.weight";

    build_one_tensor(&b, nm, 0, NULL, ORK_TYPE_F32, 0, 64);
    EXPECT_ERR(&b, ORK_EFORMAT, "tensor 'blk.0.attn_q.weight'", "n_dims 0");
    gb_free(&b);
    build_one_tensor(&b, nm, 5, (uint64_t[]){ 1, 1, 1, 1, 1 }, ORK_TYPE_F32, 0, 64);
    EXPECT_ERR(&b, ORK_EFORMAT, "tensor 'blk.0.attn_q.weight'", "n_dims 5");
    gb_free(&b);
    build_one_tensor(&b, nm, 2, (uint64_t[]){ 4, 0 }, ORK_TYPE_F32, 0, 64);
    EXPECT_ERR(&b, ORK_EFORMAT, "tensor 'blk.0.attn_q.weight'", "ne[1] is 0");
    gb_free(&b);
    build_one_tensor(&b, nm, 3, (uint64_t[]){ 1ull << 32, 1ull << 20, 1ull << 20 }, ORK_TYPE_F32, 0, 64);
    EXPECT_ERR(&b, ORK_EFORMAT, "tensor 'blk.0.attn_q.weight'", "element count overflows");
    gb_free(&b);
    /* element count fits int64 but the byte size does not */
    build_one_tensor(&b, nm, 2, (uint64_t[]){ 1ull << 31, 1ull << 31 }, ORK_TYPE_F64, 0, 64);
    EXPECT_ERR(&b, ORK_EFORMAT, "tensor 'blk.0.attn_q.weight'", "byte size overflows");
    gb_free(&b);
    build_one_tensor(&b, nm, 1, (uint64_t[]){ 4 }, 4 /* a removed GGML type id */, 0, 64);
    EXPECT_ERR(&b, ORK_EFORMAT, "tensor 'blk.0.attn_q.weight'", "unknown tensor type id 4");
    gb_free(&b);
    build_one_tensor(&b, nm, 1, (uint64_t[]){ 4 }, 1000, 0, 64);
    EXPECT_ERR(&b, ORK_EFORMAT, "unknown tensor type id 1000");
    gb_free(&b);
    build_one_tensor(&b, nm, 2, (uint64_t[]){ 33, 2 }, ORK_TYPE_Q8_0, 0, 128);
    EXPECT_ERR(&b, ORK_EFORMAT, "tensor 'blk.0.attn_q.weight'", "ne[0] = 33", "Q8_0 block size 32");
    gb_free(&b);
    build_one_tensor(&b, nm, 1, (uint64_t[]){ 8 }, ORK_TYPE_F32, 16, 64);
    EXPECT_ERR(&b, ORK_EFORMAT, "tensor 'blk.0.attn_q.weight'", "offset 16", "alignment 32");
    gb_free(&b);

    /* data past the end of the file */
    build_one_tensor(&b, nm, 2, (uint64_t[]){ 64, 32 }, ORK_TYPE_F32, 1024, 5000);
    EXPECT_ERR(&b, ORK_EFORMAT, "tensor 'blk.0.attn_q.weight'", "offset 1024, size 8192",
               "past end of file");
    gb_free(&b);
    build_one_tensor(&b, nm, 1, (uint64_t[]){ 8 }, ORK_TYPE_F32, UINT64_MAX - 31, 64);
    EXPECT_ERR(&b, ORK_EFORMAT, "tensor 'blk.0.attn_q.weight'", "past end of file");
    gb_free(&b);
    /* exactly at the end is fine */
    build_one_tensor(&b, nm, 1, (uint64_t[]){ 8 }, ORK_TYPE_F32, 32, 64);
    struct ork_gguf *g = NULL;
    CHECK_EQ_INT(open_gb(&b, &g), 0);
    ork_gguf_close(g);
    gb_free(&b);

    /* tensor infos absent: the data section cannot even start */
    gb_header(&b, 3, 1, 0);
    gb_tensor(&b, "t", 1, (uint64_t[]){ 1 }, ORK_TYPE_I8, 0);
    EXPECT_ERR(&b, ORK_EFORMAT, "data section", "past end of file");
    gb_free(&b);

    /* overlapping tensors, declared out of order */
    gb_header(&b, 3, 3, 0);
    gb_tensor(&b, "late", 1, (uint64_t[]){ 16 }, ORK_TYPE_F32, 128);
    gb_tensor(&b, "first", 1, (uint64_t[]){ 16 }, ORK_TYPE_F32, 0);
    gb_tensor(&b, "second", 1, (uint64_t[]){ 16 }, ORK_TYPE_F32, 32);
    gb_pad(&b, 32);
    gb_fill(&b, 256, 0);
    EXPECT_ERR(&b, ORK_EFORMAT, "'first'", "'second'", "overlap");
    gb_free(&b);

    /* duplicate tensor names */
    gb_header(&b, 3, 2, 0);
    gb_tensor(&b, "w", 1, (uint64_t[]){ 8 }, ORK_TYPE_F32, 0);
    gb_tensor(&b, "w", 1, (uint64_t[]){ 8 }, ORK_TYPE_F32, 32);
    gb_pad(&b, 32);
    gb_fill(&b, 64, 0);
    EXPECT_ERR(&b, ORK_EFORMAT, "duplicate tensor name 'w'");
    gb_free(&b);

    /* empty tensor name */
    build_one_tensor(&b, "", 1, (uint64_t[]){ 8 }, ORK_TYPE_F32, 0, 64);
    EXPECT_ERR(&b, ORK_EFORMAT, "tensor 0", "empty");
    gb_free(&b);
}

/* Every proper prefix of a valid file must be refused (and not crash); the message says what
 * was being read. The full file must open. Runs the same on a file with every metadata type. */
static void check_every_prefix(const struct gb *full)
{
    int accepted = 0, no_msg = 0;
    for (size_t n = 0; n < full->len; n++) {
        /* a fresh heap copy of exactly n bytes so ASan catches any read past the prefix */
        uint8_t *p = malloc(n ? n : 1);
        memcpy(p, full->buf, n);
        struct ork_gguf *g = NULL;
        ork_error_clear();
        int ret = ork_gguf_open_mem(p, n, &g);
        if (ret == 0) {
            accepted++;
            fprintf(stderr, "prefix of %zu/%zu bytes accepted\n", n, full->len);
            ork_gguf_close(g);
        } else if (ret != ORK_EFORMAT || !strstr(ork_error_message(), "gguf: ")) {
            no_msg++;
            fprintf(stderr, "prefix %zu: ret %d message '%s'\n", n, ret, ork_error_message());
        }
        free(p);
    }
    CHECK_EQ_INT(accepted, 0);
    CHECK_EQ_INT(no_msg, 0);
    struct ork_gguf *g = NULL;
    CHECK_EQ_INT(ork_gguf_open_mem(full->buf, full->len, &g), 0);
    ork_gguf_close(g);
}

static void test_every_prefix(void)
{
    struct gb b = { 0 };
    build_small(&b, 3);
    check_every_prefix(&b);
    gb_free(&b);

    /* the all-types file ends with metadata; give it a tensor so its tail is data too */
    build_all_types(&b);
    b.buf[8] = 1;       /* n_tensors = 1 */
    gb_tensor(&b, "t", 1, (uint64_t[]){ 2 }, ORK_TYPE_F32, 0);
    gb_pad(&b, 32);
    gb_fill(&b, 8, 0);
    check_every_prefix(&b);
    gb_free(&b);

    /* specific truncation messages */
    build_small(&b, 3);
    struct gb t = { 0 };
    gb_bytes(&t, b.buf, 10);
    EXPECT_ERR(&t, ORK_EFORMAT, "truncated reading n_tensors");
    t.len = 2;
    EXPECT_ERR(&t, ORK_EFORMAT, "too small");
    gb_free(&t);
    gb_free(&b);
}

/* Deterministic random damage (xorshift64): open must never crash; failures carry a message. */
static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void walk_array(const struct ork_gguf_array *a, double *acc)
{
    for (uint64_t i = 0; i < a->n; i++) {
        if (a->type == ORK_GGUF_ARRAY)
            walk_array(&a->items[i].v.arr, acc);
        else if (a->type == ORK_GGUF_STRING)
            *acc += a->strs[i].len ? (uint8_t)a->strs[i].ptr[a->strs[i].len - 1] : 0;
        else
            *acc += ork_gguf_arr_f64(a, i) + (double)ork_gguf_arr_i64(a, i);
    }
}

static void test_random_damage(void)
{
    struct gb base = { 0 };
    build_all_types(&base);
    base.buf[8] = 2;
    gb_tensor(&base, "t0", 2, (uint64_t[]){ 32, 2 }, ORK_TYPE_Q4_0, 0);
    gb_tensor(&base, "t1", 1, (uint64_t[]){ 3 }, ORK_TYPE_F16, 64);
    gb_pad(&base, 32);
    gb_fill(&base, 70, 0);
    uint64_t s = 0x9e3779b97f4a7c15ull;
    int ok = 0, err = 0, no_msg = 0;
    uint8_t *p = malloc(base.len);
    for (int iter = 0; iter < 4000; iter++) {
        memcpy(p, base.buf, base.len);
        int flips = 1 + (int)(rng_next(&s) % 4);
        for (int k = 0; k < flips; k++) {
            size_t at = (size_t)(rng_next(&s) % base.len);
            uint64_t r = rng_next(&s);
            p[at] = (r & 1) ? (uint8_t)(r >> 8) : (uint8_t)(p[at] ^ (1u << ((r >> 8) % 8)));
        }
        struct ork_gguf *g = NULL;
        ork_error_clear();
        int ret = ork_gguf_open_mem(p, base.len, &g);
        if (ret == 0) {
            ok++;
            double acc = 0;
            for (uint64_t i = 0; i < ork_gguf_n_kv(g); i++)
                if (ork_gguf_kv_at(g, i)->value.type == ORK_GGUF_ARRAY)
                    walk_array(&ork_gguf_kv_at(g, i)->value.v.arr, &acc);
            for (uint64_t i = 0; i < ork_gguf_n_tensors(g); i++) {
                const struct ork_gguf_tensor *t = ork_gguf_tensor_at(g, i);
                const uint8_t *d = t->data;
                acc += d[0] + d[t->nbytes - 1];
            }
            (void)acc;
            ork_gguf_close(g);
        } else {
            err++;
            if (!ork_error_message()[0])
                no_msg++;
        }
    }
    free(p);
    CHECK(ok > 0 && err > 0);   /* both outcomes occur, so the test exercises both paths */
    CHECK_EQ_INT(no_msg, 0);
    gb_free(&base);
}

/* Every allocation the reader makes may fail: ORK_ENOMEM, no leak (ASan), no crash. */
static void test_alloc_failures(void)
{
    struct gb b = { 0 };
    build_all_types(&b);
    b.buf[8] = 1;
    gb_tensor(&b, "t", 1, (uint64_t[]){ 2 }, ORK_TYPE_F32, 0);
    gb_pad(&b, 32);
    gb_fill(&b, 8, 0);
    int succeeded = 0;
    for (uint64_t n = 1; n < 200 && !succeeded; n++) {
        struct ork_gguf *g = NULL;
        ork_alloc_fail_after(n);
        int ret = ork_gguf_open_mem(b.buf, b.len, &g);
        ork_alloc_fail_after(0);
        if (ret == 0) {
            succeeded = 1;
            ork_gguf_close(g);
        } else {
            CHECK_EQ_INT(ret, ORK_ENOMEM);
        }
    }
    CHECK(succeeded);
    gb_free(&b);
}

int main(void)
{
    RUN(test_small_file);
    RUN(test_open_file);
    RUN(test_all_types);
    RUN(test_getters);
    RUN(test_many_keys);
    RUN(test_alignment);
    RUN(test_bad_alignment);
    RUN(test_header_errors);
    RUN(test_kv_errors);
    RUN(test_nesting_depth);
    RUN(test_tensor_errors);
    RUN(test_every_prefix);
    RUN(test_random_damage);
    RUN(test_alloc_failures);
    return ork_test_done();
}
