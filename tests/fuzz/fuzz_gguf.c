/* fuzz_gguf.c -- libFuzzer target for the GGUF reader (also replayed over the committed corpus
 * tests/fuzz/corpus/gguf/ by every build). Opens the input with ork_gguf_open_mem and, when it
 * is accepted, touches everything the reader promises is valid: every key, string and array
 * element (nested arrays included, through the copy-out readers), every tensor's first and last
 * data byte, and every lookup and typed getter. Sanitizers turn any out-of-bounds access into a
 * crash. */
#include <ork-engine/gguf.h>
#include <ork/error.h>

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;  /* keep the reads from being optimised away */
static volatile double fsink;

static void walk_str(const struct ork_gguf_str *s)
{
    if (s->len)
        sink += (uint8_t)s->ptr[0] + (uint8_t)s->ptr[s->len - 1];
}

static void walk_array(const struct ork_gguf_array *a)
{
    for (uint64_t i = 0; i < a->n; i++) {
        switch (a->type) {
        case ORK_GGUF_STRING:
            walk_str(&a->strs[i]);
            break;
        case ORK_GGUF_ARRAY:
            walk_array(&a->items[i].v.arr);
            break;
        default:
            sink += (uint64_t)ork_gguf_arr_i64(a, i);
            fsink += ork_gguf_arr_f64(a, i);
            break;
        }
    }
    /* out-of-range indices must be harmless */
    sink += (uint64_t)ork_gguf_arr_i64(a, a->n);
}

static void walk(const struct ork_gguf *g)
{
    sink += ork_gguf_version(g) + ork_gguf_alignment(g) + ork_gguf_file_size(g);
    const uint8_t *base = ork_gguf_base(g);
    if (ork_gguf_data_offset(g) < ork_gguf_file_size(g))
        sink += base[ork_gguf_data_offset(g)];
    for (uint64_t i = 0; i < ork_gguf_n_kv(g); i++) {
        const struct ork_gguf_kv *kv = ork_gguf_kv_at(g, i);
        sink += strlen(kv->key);
        if (ork_gguf_kv_find(g, kv->key) != kv)
            __builtin_trap();   /* keys are unique: find must return this entry */
        uint32_t u32;
        uint64_t u64;
        int32_t i32;
        float f;
        bool b;
        struct ork_gguf_str s;
        const struct ork_gguf_array *a;
        sink += (uint64_t)ork_gguf_get_u32(g, kv->key, &u32) + (uint64_t)ork_gguf_get_u64(g, kv->key, &u64);
        sink += (uint64_t)ork_gguf_get_i32(g, kv->key, &i32) + (uint64_t)ork_gguf_get_f32(g, kv->key, &f);
        sink += (uint64_t)ork_gguf_get_bool(g, kv->key, &b);
        if (ork_gguf_get_str(g, kv->key, &s) == 0)
            walk_str(&s);
        if (ork_gguf_get_arr(g, kv->key, ORK_GGUF_TYPE_COUNT, &a) == 0)
            walk_array(a);
    }
    for (uint64_t i = 0; i < ork_gguf_n_tensors(g); i++) {
        const struct ork_gguf_tensor *t = ork_gguf_tensor_at(g, i);
        const uint8_t *d = t->data;
        if (ork_gguf_tensor_find(g, t->name) != t || t->nbytes == 0 || t->n_dims < 1 ||
            t->n_dims > ORK_GGUF_MAX_DIMS)
            __builtin_trap();
        sink += d[0] + d[t->nbytes - 1] + t->ne[0] * t->ne[3];
    }
    sink += ork_gguf_kv_at(g, ork_gguf_n_kv(g)) == NULL;
    sink += ork_gguf_tensor_at(g, ork_gguf_n_tensors(g)) == NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ork_gguf *g = NULL;
    ork_error_clear();
    int ret = ork_gguf_open_mem(data, size, &g);
    if (ret == 0) {
        walk(g);
        ork_gguf_close(g);
    } else if (ork_error_message()[0] == '\0' && ret != ORK_ENOMEM) {
        __builtin_trap();       /* every rejection must say why */
    }
    return 0;
}
