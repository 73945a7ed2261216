/* test_tok_gguf.h -- build small GGUF v3 files in memory (metadata only, no tensors) for the
 * tokenizer tests and the tokenizer fuzz target. Layout per the GGUF specification: magic
 * "GGUF", u32 version, u64 tensor count, u64 kv count, then key/value pairs (u64-length
 * strings, u32 type tags; arrays as u32 element type + u64 count + elements), padded to the
 * default 32-byte alignment. Test-only code. */
#ifndef TEST_TOK_GGUF_H
#define TEST_TOK_GGUF_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* GGUF value type tags (GGUF specification). */
enum { TG_UINT32 = 4, TG_INT32 = 5, TG_FLOAT32 = 6, TG_BOOL = 7, TG_STRING = 8, TG_ARRAY = 9 };
#define TG_VERSION 3
#define TG_ALIGN 32

struct tg {
    uint8_t *p;
    size_t n, cap;
    uint64_t n_kv;
};

static inline void tg_put(struct tg *b, const void *src, size_t n)
{
    if (b->n + n > b->cap) {
        size_t nc = b->cap ? b->cap : 1024;
        while (nc < b->n + n)
            nc *= 2;
        b->p = realloc(b->p, nc);
        b->cap = nc;
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

static inline void tg_u32(struct tg *b, uint32_t v) { tg_put(b, &v, 4); }
static inline void tg_u64(struct tg *b, uint64_t v) { tg_put(b, &v, 8); }
static inline void tg_strn(struct tg *b, const char *s, size_t n)
{
    tg_u64(b, n);
    tg_put(b, s, n);
}
static inline void tg_str(struct tg *b, const char *s) { tg_strn(b, s, strlen(s)); }

static inline void tg_begin(struct tg *b)
{
    memset(b, 0, sizeof(*b));
    tg_put(b, "GGUF", 4);
    tg_u32(b, TG_VERSION);
    tg_u64(b, 0);   /* tensors */
    tg_u64(b, 0);   /* kv count, patched by tg_end */
}

/* Finish: patch the kv count, pad; returns the buffer (caller frees b->p). */
static inline void tg_end(struct tg *b)
{
    memcpy(b->p + 16, &b->n_kv, 8);
    static const uint8_t zero[TG_ALIGN] = { 0 };
    if (b->n % TG_ALIGN)
        tg_put(b, zero, TG_ALIGN - b->n % TG_ALIGN);
}

static inline void tg_kv_str(struct tg *b, const char *k, const char *v)
{
    tg_str(b, k);
    tg_u32(b, TG_STRING);
    tg_str(b, v);
    b->n_kv++;
}

static inline void tg_kv_u32(struct tg *b, const char *k, uint32_t v)
{
    tg_str(b, k);
    tg_u32(b, TG_UINT32);
    tg_u32(b, v);
    b->n_kv++;
}

static inline void tg_kv_bool(struct tg *b, const char *k, bool v)
{
    uint8_t x = v;
    tg_str(b, k);
    tg_u32(b, TG_BOOL);
    tg_put(b, &x, 1);
    b->n_kv++;
}

static inline void tg_kv_strs(struct tg *b, const char *k, const char *const *v, size_t n)
{
    tg_str(b, k);
    tg_u32(b, TG_ARRAY);
    tg_u32(b, TG_STRING);
    tg_u64(b, n);
    for (size_t i = 0; i < n; i++)
        tg_str(b, v[i]);
    b->n_kv++;
}

static inline void tg_kv_f32s(struct tg *b, const char *k, const float *v, size_t n)
{
    tg_str(b, k);
    tg_u32(b, TG_ARRAY);
    tg_u32(b, TG_FLOAT32);
    tg_u64(b, n);
    tg_put(b, v, 4 * n);
    b->n_kv++;
}

static inline void tg_kv_i32s(struct tg *b, const char *k, const int32_t *v, size_t n)
{
    tg_str(b, k);
    tg_u32(b, TG_ARRAY);
    tg_u32(b, TG_INT32);
    tg_u64(b, n);
    tg_put(b, v, 4 * n);
    b->n_kv++;
}

/* GPT-2 byte-level stand-in of byte b (bytes_to_unicode in openai/gpt-2 encoder.py), as
 * NUL-terminated UTF-8 in out[3]. */
static inline void tg_gpt2_byte(unsigned b, char out[3])
{
#define TG_SELF(x) (((x) >= 0x21 && (x) <= 0x7E) || ((x) >= 0xA1 && (x) <= 0xAC) || (x) >= 0xAE)
    unsigned cp = b;
    if (!TG_SELF(b)) {
        cp = 0x100;
        for (unsigned x = 0; x < b; x++)
            cp += !TG_SELF(x);
    }
#undef TG_SELF
    if (cp < 0x80) {
        out[0] = (char)cp;
        out[1] = 0;
    } else {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        out[2] = 0;
    }
}

#endif
