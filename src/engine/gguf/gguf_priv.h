/* gguf_priv.h -- private to the GGUF reader (src/engine/gguf/): the reader's object, shared by
 * gguf.c (parse and validate the header, metadata and tensor table; the name indexes),
 * gguf_open.c (putting a file or buffer in memory, close) and gguf_get.c (accessors and typed
 * getters). */
#ifndef ORK_ENGINE_GGUF_PRIV_H
#define ORK_ENGINE_GGUF_PRIV_H

#include <ork-engine/gguf.h>

#include <stddef.h>
#include <stdint.h>

/* Every allocation made while parsing is chained through this header and freed at close. */
typedef union gguf_block {
    union gguf_block *next;
    max_align_t align_;
} gguf_block;

struct ork_gguf {
    const uint8_t *base;        /* first byte of the file (mapping or borrowed buffer) */
    uint64_t size;              /* file size in bytes */
    void *map;                  /* mmap'd region to unmap at close; NULL for open_mem */
    size_t map_len;
    uint32_t version;
    uint32_t alignment;
    uint64_t data_offset;       /* start of the data section (== size when past the end) */

    struct ork_gguf_kv *kvs;    /* (n_kv) */
    uint64_t n_kv;
    struct ork_gguf_tensor *tensors;  /* (n_tensors) */
    uint64_t n_tensors;

    uint32_t *kv_hash;          /* open addressing: index + 1, 0 = empty; (kv_mask + 1) slots */
    uint64_t kv_mask;
    uint32_t *tensor_hash;
    uint64_t tensor_mask;
    uint64_t hash_seed;

    gguf_block *blocks;         /* names, string-array indexes, nested-array item tables */
};

/* Bytes of one scalar of type t (0: not a scalar type), and its value decoded from p. */
unsigned ork__gguf_scalar_size(enum ork_gguf_type t);
void ork__gguf_decode_scalar(enum ork_gguf_type t, const uint8_t *p, struct ork_gguf_value *v);
/* Parse and validate g->base[0, g->size) into g (the tables, indexes and names). */
int ork__gguf_parse(struct ork_gguf *g);
/* Free everything ork__gguf_parse allocated (not g, not the mapping). */
void ork__gguf_free_tables(struct ork_gguf *g);
/* A seed for the name hashes of g (varies per object and run: hostile names cannot aim at one
 * bucket). */
uint64_t ork__gguf_hash_seed(const struct ork_gguf *g);

#endif
