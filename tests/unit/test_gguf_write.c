/* test_gguf_write.c -- the streaming GGUF writer, checked by reading its files back with ork's
 * reader: every metadata value type (scalars, strings, numeric/string/nested arrays), tensor
 * shapes, offsets, alignment and data, streaming in odd chunk sizes, copying keys from one file
 * to another, and the error paths (duplicates, short data, writes past the end). */
#include "ork_test.h"

#include <ork-engine/gguf.h>
#include <ork-engine/gguf_write.h>
#include <ork-kernels/types.h>
#include <ork/error.h>

#include <stdint.h>
#include <sys/stat.h>

static char path_a[256], path_b[256];

static void make_paths(void)
{
    snprintf(path_a, sizeof path_a, "%s/test_gguf_write_%d_a.gguf", ORK_BINARY_DIR, (int)getpid());
    snprintf(path_b, sizeof path_b, "%s/test_gguf_write_%d_b.gguf", ORK_BINARY_DIR, (int)getpid());
}

/* Deterministic tensor bytes: byte i of tensor t. */
static uint8_t tbyte(int t, uint64_t i)
{
    return (uint8_t)(i * 31u + (uint64_t)t * 7u + (i >> 8));
}

static const uint64_t ne_f32[2] = { 5, 3 };     /* 60 bytes: not a multiple of the alignment */
static const uint64_t ne_q8[2] = { 64, 2 };     /* 2 rows x 2 blocks x 34 = 136 bytes */
static const uint64_t ne_f16[1] = { 7 };        /* 14 bytes */

static int write_all_types(const char *path, uint32_t alignment, size_t chunk)
{
    struct ork_gguf_writer *w;
    int ret = ork_gguf_writer_create(path, alignment, &w);
    if (ret < 0)
        return ret;
    uint8_t u8s[3] = { 1, 2, 255 };
    int16_t i16s[2] = { -300, 300 };
    float f32s[3] = { 1.5f, -2.25f, 1e-6f };
    double f64s[2] = { 3.141592653589793, -1e300 };
    uint64_t u64s[2] = { 0, UINT64_MAX };
    uint8_t bools[2] = { 1, 0 };
    const char *strs[3] = { "alpha", "", "\xce\xb2\xce\xb3 gamma" };
    /* Nested: an array of two arrays (u32 x2, string x1). */
    uint32_t inner_u32[2] = { 7, 9 };
    struct ork_gguf_str inner_s = { "x y", 3 };
    struct ork_gguf_value items[2];
    memset(items, 0, sizeof items);
    items[0].type = ORK_GGUF_ARRAY;
    items[0].v.arr.type = ORK_GGUF_UINT32;
    items[0].v.arr.n = 2;
    items[0].v.arr.raw = (const uint8_t *)inner_u32;
    items[1].type = ORK_GGUF_ARRAY;
    items[1].v.arr.type = ORK_GGUF_STRING;
    items[1].v.arr.n = 1;
    items[1].v.arr.strs = &inner_s;
    struct ork_gguf_value nested = { .type = ORK_GGUF_ARRAY };
    nested.v.arr.type = ORK_GGUF_ARRAY;
    nested.v.arr.n = 2;
    nested.v.arr.items = items;
    struct ork_gguf_value v;
#define ADD(k, t, field, val) \
    (memset(&v, 0, sizeof v), v.type = (t), v.v.field = (val), ork_gguf_writer_add_value(w, (k), &v))
    if ((ret = ADD("t.u8", ORK_GGUF_UINT8, u64, 200)) < 0 ||
        (ret = ADD("t.i8", ORK_GGUF_INT8, i64, -100)) < 0 ||
        (ret = ADD("t.u16", ORK_GGUF_UINT16, u64, 65000)) < 0 ||
        (ret = ADD("t.i16", ORK_GGUF_INT16, i64, -32000)) < 0 ||
        (ret = ork_gguf_writer_add_u32(w, "t.u32", 4000000000u)) < 0 ||
        (ret = ork_gguf_writer_add_i32(w, "t.i32", -2000000000)) < 0 ||
        (ret = ork_gguf_writer_add_f32(w, "t.f32", 0.125f)) < 0 ||
        (ret = ork_gguf_writer_add_bool(w, "t.bool", true)) < 0 ||
        (ret = ork_gguf_writer_add_str(w, "t.str", "hello, world")) < 0 ||
        (ret = ork_gguf_writer_add_u64(w, "t.u64", 0x123456789abcdef0ull)) < 0 ||
        (ret = ADD("t.i64", ORK_GGUF_INT64, i64, INT64_MIN)) < 0 ||
        (ret = ADD("t.f64", ORK_GGUF_FLOAT64, f64, 2.718281828459045)) < 0 ||
        (ret = ork_gguf_writer_add_arr(w, "a.u8", ORK_GGUF_UINT8, u8s, 3)) < 0 ||
        (ret = ork_gguf_writer_add_arr(w, "a.i16", ORK_GGUF_INT16, i16s, 2)) < 0 ||
        (ret = ork_gguf_writer_add_arr(w, "a.f32", ORK_GGUF_FLOAT32, f32s, 3)) < 0 ||
        (ret = ork_gguf_writer_add_arr(w, "a.f64", ORK_GGUF_FLOAT64, f64s, 2)) < 0 ||
        (ret = ork_gguf_writer_add_arr(w, "a.u64", ORK_GGUF_UINT64, u64s, 2)) < 0 ||
        (ret = ork_gguf_writer_add_arr(w, "a.bool", ORK_GGUF_BOOL, bools, 2)) < 0 ||
        (ret = ork_gguf_writer_add_arr(w, "a.empty", ORK_GGUF_INT32, NULL, 0)) < 0 ||
        (ret = ork_gguf_writer_add_arr_str(w, "a.str", strs, 3)) < 0 ||
        (ret = ork_gguf_writer_add_value(w, "a.nested", &nested)) < 0)
        goto out;
#undef ADD
    if ((ret = ork_gguf_writer_add_tensor(w, "f32", 2, ne_f32, ORK_TYPE_F32)) < 0 ||
        (ret = ork_gguf_writer_add_tensor(w, "q8", 2, ne_q8, ORK_TYPE_Q8_0)) < 0 ||
        (ret = ork_gguf_writer_add_tensor(w, "f16", 1, ne_f16, ORK_TYPE_F16)) < 0)
        goto out;
    uint8_t buf[256];
    for (int t = 0; t < 3; t++) {
        uint64_t n = ork_gguf_writer_tensor_bytes(w, (uint64_t)t);
        for (uint64_t i = 0; i < n; i += chunk) {
            size_t k = n - i < chunk ? (size_t)(n - i) : chunk;
            for (size_t j = 0; j < k; j++)
                buf[j] = tbyte(t, i + j);
            if ((ret = ork_gguf_writer_write(w, buf, k)) < 0)
                goto out;
        }
    }
    ret = ork_gguf_writer_finish(w);
out:
    ork_gguf_writer_free(w);
    return ret;
}

static void check_file(const char *path, uint32_t alignment)
{
    struct ork_gguf *g;
    int ret = ork_gguf_open(path, &g);
    if (ret < 0)
        fprintf(stderr, "open: %s\n", ork_error_describe(ret));
    REQUIRE(ret == 0);
    CHECK_EQ_INT(ork_gguf_version(g), 3);
    CHECK_EQ_INT(ork_gguf_alignment(g), alignment);
    const struct ork_gguf_kv *kv;
    uint32_t u32;
    int32_t i32;
    uint64_t u64;
    float f;
    bool b;
    struct ork_gguf_str s;
    CHECK((kv = ork_gguf_kv_find(g, "t.u8")) && kv->value.type == ORK_GGUF_UINT8 &&
          kv->value.v.u64 == 200);
    CHECK((kv = ork_gguf_kv_find(g, "t.i8")) && kv->value.type == ORK_GGUF_INT8 &&
          kv->value.v.i64 == -100);
    CHECK((kv = ork_gguf_kv_find(g, "t.u16")) && kv->value.type == ORK_GGUF_UINT16 &&
          kv->value.v.u64 == 65000);
    CHECK((kv = ork_gguf_kv_find(g, "t.i16")) && kv->value.type == ORK_GGUF_INT16 &&
          kv->value.v.i64 == -32000);
    CHECK(ork_gguf_get_u32(g, "t.u32", &u32) == 0 && u32 == 4000000000u);
    CHECK(ork_gguf_get_i32(g, "t.i32", &i32) == 0 && i32 == -2000000000);
    CHECK(ork_gguf_get_f32(g, "t.f32", &f) == 0 && f == 0.125f);
    CHECK(ork_gguf_get_bool(g, "t.bool", &b) == 0 && b);
    CHECK(ork_gguf_get_str(g, "t.str", &s) == 0 && s.len == 12 && !memcmp(s.ptr, "hello, world", 12));
    CHECK(ork_gguf_get_u64(g, "t.u64", &u64) == 0 && u64 == 0x123456789abcdef0ull);
    CHECK((kv = ork_gguf_kv_find(g, "t.i64")) && kv->value.type == ORK_GGUF_INT64 &&
          kv->value.v.i64 == INT64_MIN);
    CHECK((kv = ork_gguf_kv_find(g, "t.f64")) && kv->value.type == ORK_GGUF_FLOAT64 &&
          kv->value.v.f64 == 2.718281828459045);

    const struct ork_gguf_array *a;
    CHECK(ork_gguf_get_arr(g, "a.u8", ORK_GGUF_UINT8, &a) == 0 && a->n == 3 &&
          ork_gguf_arr_i64(a, 2) == 255);
    CHECK(ork_gguf_get_arr(g, "a.i16", ORK_GGUF_INT16, &a) == 0 && a->n == 2 &&
          ork_gguf_arr_i64(a, 0) == -300 && ork_gguf_arr_i64(a, 1) == 300);
    CHECK(ork_gguf_get_arr(g, "a.f32", ORK_GGUF_FLOAT32, &a) == 0 && a->n == 3 &&
          ork_gguf_arr_f64(a, 1) == -2.25 && (float)ork_gguf_arr_f64(a, 2) == 1e-6f);
    CHECK(ork_gguf_get_arr(g, "a.f64", ORK_GGUF_FLOAT64, &a) == 0 && a->n == 2 &&
          ork_gguf_arr_f64(a, 1) == -1e300);
    CHECK(ork_gguf_get_arr(g, "a.u64", ORK_GGUF_UINT64, &a) == 0 && a->n == 2 &&
          (uint64_t)ork_gguf_arr_i64(a, 1) == UINT64_MAX);
    CHECK(ork_gguf_get_arr(g, "a.bool", ORK_GGUF_BOOL, &a) == 0 && a->n == 2 &&
          ork_gguf_arr_i64(a, 0) == 1 && ork_gguf_arr_i64(a, 1) == 0);
    CHECK(ork_gguf_get_arr(g, "a.empty", ORK_GGUF_INT32, &a) == 0 && a->n == 0);
    CHECK(ork_gguf_get_arr(g, "a.str", ORK_GGUF_STRING, &a) == 0 && a->n == 3 &&
          a->strs[0].len == 5 && !memcmp(a->strs[0].ptr, "alpha", 5) && a->strs[1].len == 0 &&
          a->strs[2].len == 10 && !memcmp(a->strs[2].ptr, "\xce\xb2\xce\xb3 gamma", 10));
    CHECK(ork_gguf_get_arr(g, "a.nested", ORK_GGUF_ARRAY, &a) == 0 && a->n == 2);
    if (a && a->type == ORK_GGUF_ARRAY && a->n == 2 && a->items) {
        const struct ork_gguf_array *i0 = &a->items[0].v.arr, *i1 = &a->items[1].v.arr;
        CHECK(i0->type == ORK_GGUF_UINT32 && i0->n == 2 && ork_gguf_arr_i64(i0, 1) == 9);
        CHECK(i1->type == ORK_GGUF_STRING && i1->n == 1 && i1->strs[0].len == 3 &&
              !memcmp(i1->strs[0].ptr, "x y", 3));
    }

    CHECK_EQ_INT(ork_gguf_n_tensors(g), 3);
    const char *names[3] = { "f32", "q8", "f16" };
    const uint64_t *nes[3] = { ne_f32, ne_q8, ne_f16 };
    const uint32_t types[3] = { ORK_TYPE_F32, ORK_TYPE_Q8_0, ORK_TYPE_F16 };
    const uint32_t ndims[3] = { 2, 2, 1 };
    for (int t = 0; t < 3; t++) {
        const struct ork_gguf_tensor *ti = ork_gguf_tensor_find(g, names[t]);
        REQUIRE(ti);
        CHECK_EQ_INT(ti->type, types[t]);
        CHECK_EQ_INT(ti->n_dims, ndims[t]);
        for (uint32_t d = 0; d < ndims[t]; d++)
            CHECK_EQ_INT(ti->ne[d], nes[t][d]);
        CHECK_EQ_INT(ti->offset % alignment, 0);
        CHECK_EQ_INT(((const uint8_t *)ti->data - (const uint8_t *)ork_gguf_base(g)) % alignment, 0);
        int bad = 0;
        for (uint64_t i = 0; i < ti->nbytes; i++)
            bad += ((const uint8_t *)ti->data)[i] != tbyte(t, i);
        CHECK_EQ_INT(bad, 0);
    }
    ork_gguf_close(g);
}

static void test_round_trip(void)
{
    REQUIRE(write_all_types(path_a, 0, 256) == 0);
    check_file(path_a, ORK_GGUF_DEFAULT_ALIGNMENT);
    struct stat st;
    REQUIRE(stat(path_a, &st) == 0);
    unlink(path_a);
}

static void test_odd_chunks_and_alignment(void)
{
    REQUIRE(write_all_types(path_a, 64, 7) == 0);
    check_file(path_a, 64);
    unlink(path_a);
    REQUIRE(write_all_types(path_a, 0, 1) == 0);
    check_file(path_a, ORK_GGUF_DEFAULT_ALIGNMENT);
    unlink(path_a);
}

/* Every key of file A copied with add_value gives a file B with the same values. */
static void test_copy_keys(void)
{
    REQUIRE(write_all_types(path_a, 0, 256) == 0);
    struct ork_gguf *g;
    REQUIRE(ork_gguf_open(path_a, &g) == 0);
    struct ork_gguf_writer *w;
    REQUIRE(ork_gguf_writer_create(path_b, 0, &w) == 0);
    int ret = 0;
    for (uint64_t i = 0; i < ork_gguf_n_kv(g) && ret == 0; i++)
        ret = ork_gguf_writer_add_value(w, ork_gguf_kv_at(g, i)->key, &ork_gguf_kv_at(g, i)->value);
    CHECK_EQ_INT(ret, 0);
    CHECK_EQ_INT(ork_gguf_writer_finish(w), 0);
    ork_gguf_writer_free(w);
    struct ork_gguf *g2;
    REQUIRE(ork_gguf_open(path_b, &g2) == 0);
    CHECK_EQ_INT(ork_gguf_n_kv(g2), ork_gguf_n_kv(g));
    CHECK_EQ_INT(ork_gguf_n_tensors(g2), 0);
    /* Same keys and same encoding: the metadata sections have the same length. */
    CHECK_EQ_INT(ork_gguf_data_offset(g2) <= ork_gguf_data_offset(g), 1);
    const struct ork_gguf_kv *kv = ork_gguf_kv_find(g2, "a.nested");
    CHECK(kv && kv->value.v.arr.n == 2);
    uint64_t u64;
    CHECK(ork_gguf_get_u64(g2, "t.u64", &u64) == 0 && u64 == 0x123456789abcdef0ull);
    const struct ork_gguf_array *a;
    CHECK(ork_gguf_get_arr(g2, "a.str", ORK_GGUF_STRING, &a) == 0 && a->n == 3 &&
          a->strs[2].len == 10);
    ork_gguf_close(g2);
    ork_gguf_close(g);
    unlink(path_a);
    unlink(path_b);
}

static void test_errors(void)
{
    struct ork_gguf_writer *w;
    CHECK(ork_gguf_writer_create(path_a, 48, &w) == ORK_EINVAL);
    CHECK(ork_gguf_writer_create("/nonexistent-dir/x.gguf", 0, &w) == ORK_EIO);

    REQUIRE(ork_gguf_writer_create(path_a, 0, &w) == 0);
    CHECK(ork_gguf_writer_add_u32(w, "k", 1) == 0);
    CHECK(ork_gguf_writer_add_u32(w, "k", 2) == ORK_EINVAL);
    CHECK(strstr(ork_error_message(), "duplicate key 'k'") != NULL);
    uint64_t ne[2] = { 33, 1 };
    CHECK(ork_gguf_writer_add_tensor(w, "q", 2, ne, ORK_TYPE_Q8_0) == ORK_EINVAL);
    CHECK(ork_gguf_writer_add_tensor(w, "q", 0, ne, ORK_TYPE_F32) == ORK_EINVAL);
    CHECK(ork_gguf_writer_add_tensor(w, "q", 2, ne, 99) == ORK_EINVAL);
    CHECK(ork_gguf_writer_add_tensor(w, "x", 2, ne, ORK_TYPE_F32) == 0);
    CHECK(ork_gguf_writer_add_tensor(w, "x", 2, ne, ORK_TYPE_F32) == ORK_EINVAL);
    uint8_t buf[200] = { 0 };
    CHECK(ork_gguf_writer_write(w, buf, 100) == 0);
    /* Short by 32 bytes: finish names the tensor and the file is removed on free. */
    CHECK(ork_gguf_writer_finish(w) == ORK_EINVAL);
    CHECK(strstr(ork_error_message(), "'x'") != NULL);
    CHECK(ork_gguf_writer_add_u32(w, "late", 1) == ORK_EINVAL);
    CHECK(ork_gguf_writer_write(w, buf, 33) == ORK_EINVAL);     /* one byte past the end */
    ork_gguf_writer_free(w);
    CHECK(access(path_a, F_OK) != 0);
}

int main(void)
{
    make_paths();
    RUN(test_round_trip);
    RUN(test_odd_chunks_and_alignment);
    RUN(test_copy_keys);
    RUN(test_errors);
    return ork_test_done();
}
