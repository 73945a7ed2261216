/* test_gguf_builder.h -- a tiny in-memory GGUF writer for tests (header-only, test code only).
 *
 * Writes exactly the byte layout of the GGUF specification, field by field, so tests can build
 * valid files and then corrupt any single field. Not a general writer: no error handling beyond
 * aborting the test process on OOM. */
#ifndef ORK_TEST_GGUF_BUILDER_H
#define ORK_TEST_GGUF_BUILDER_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gb {
    uint8_t *buf;
    size_t len, cap;
};

static inline void gb_bytes(struct gb *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n)
            cap *= 2;
        b->buf = realloc(b->buf, cap);
        if (!b->buf) {
            fprintf(stderr, "gguf_builder: out of memory\n");
            exit(1);
        }
        b->cap = cap;
    }
    if (n)
        memcpy(b->buf + b->len, p, n);
    b->len += n;
}

static inline void gb_le(struct gb *b, uint64_t v, unsigned n)
{
    uint8_t t[8];
    for (unsigned i = 0; i < n; i++)
        t[i] = (uint8_t)(v >> (8 * i));
    gb_bytes(b, t, n);
}

static inline void gb_u8(struct gb *b, uint8_t v) { gb_le(b, v, 1); }
static inline void gb_u16(struct gb *b, uint16_t v) { gb_le(b, v, 2); }
static inline void gb_u32(struct gb *b, uint32_t v) { gb_le(b, v, 4); }
static inline void gb_u64(struct gb *b, uint64_t v) { gb_le(b, v, 8); }

static inline void gb_f32(struct gb *b, float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    gb_u32(b, u);
}

static inline void gb_f64(struct gb *b, double f)
{
    uint64_t u;
    memcpy(&u, &f, 8);
    gb_u64(b, u);
}

/* GGUF string: u64 length + bytes. */
static inline void gb_strn(struct gb *b, const char *s, size_t n)
{
    gb_u64(b, n);
    gb_bytes(b, s, n);
}

static inline void gb_str(struct gb *b, const char *s) { gb_strn(b, s, strlen(s)); }

/* Header: magic, version, n_tensors, n_kv. */
static inline void gb_header(struct gb *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
    gb_bytes(b, "GGUF", 4);
    gb_u32(b, version);
    gb_u64(b, n_tensors);
    gb_u64(b, n_kv);
}

/* A key and its value type; the caller writes the value. */
static inline void gb_key(struct gb *b, const char *key, uint32_t type)
{
    gb_str(b, key);
    gb_u32(b, type);
}

static inline void gb_kv_u32(struct gb *b, const char *key, uint32_t v)
{
    gb_key(b, key, 4 /* UINT32 */);
    gb_u32(b, v);
}

static inline void gb_kv_str(struct gb *b, const char *key, const char *v)
{
    gb_key(b, key, 8 /* STRING */);
    gb_str(b, v);
}

/* Tensor info: name, n_dims, ne[], type, offset. */
static inline void gb_tensor(struct gb *b, const char *name, uint32_t n_dims, const uint64_t *ne,
                      uint32_t type, uint64_t offset)
{
    gb_str(b, name);
    gb_u32(b, n_dims);
    for (uint32_t i = 0; i < n_dims; i++)
        gb_u64(b, ne[i]);
    gb_u32(b, type);
    gb_u64(b, offset);
}

/* Zero padding up to the next multiple of align. */
static inline void gb_pad(struct gb *b, size_t align)
{
    while (b->len % align)
        gb_u8(b, 0);
}

/* n bytes of a recognisable pattern (byte i = seed + i). */
static inline void gb_fill(struct gb *b, size_t n, uint8_t seed)
{
    for (size_t i = 0; i < n; i++)
        gb_u8(b, (uint8_t)(seed + i));
}

static inline void gb_free(struct gb *b)
{
    free(b->buf);
    b->buf = NULL;
    b->len = b->cap = 0;
}

#endif
