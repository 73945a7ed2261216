/* ork-engine/gguf.h -- GGUF v2/v3 reader.
 *
 * The file is mmap'd read-only; every string, array and tensor view points into the mapping and
 * lives as long as the struct ork_gguf. Every count, offset and size is validated against the
 * file at open time: a truncated or corrupt file yields ORK_EFORMAT with a message naming the
 * field (see ork_error_message()), never a crash. Strings in the file are not NUL-terminated;
 * they are exposed as (ptr, len) pairs. Keys and tensor names are additionally copied into
 * NUL-terminated strings owned by the reader.
 *
 * Numeric array payloads in the metadata may be unaligned in the file: read them with the
 * copy-out helpers (ork_gguf_arr_*), never by casting the raw pointer. */
#ifndef ORK_ENGINE_GGUF_H
#define ORK_ENGINE_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ORK_GGUF_MAX_DIMS 4
#define ORK_GGUF_DEFAULT_ALIGNMENT 32

/* Metadata value types, numbered as in the GGUF specification. */
enum ork_gguf_type {
    ORK_GGUF_UINT8 = 0, ORK_GGUF_INT8 = 1, ORK_GGUF_UINT16 = 2, ORK_GGUF_INT16 = 3,
    ORK_GGUF_UINT32 = 4, ORK_GGUF_INT32 = 5, ORK_GGUF_FLOAT32 = 6, ORK_GGUF_BOOL = 7,
    ORK_GGUF_STRING = 8, ORK_GGUF_ARRAY = 9, ORK_GGUF_UINT64 = 10, ORK_GGUF_INT64 = 11,
    ORK_GGUF_FLOAT64 = 12,
    ORK_GGUF_TYPE_COUNT
};

struct ork_gguf_str {
    const char *ptr;        /* into the mapping; NOT NUL-terminated */
    uint64_t len;
};

struct ork_gguf_value;

struct ork_gguf_array {
    enum ork_gguf_type type;            /* element type */
    uint64_t n;                         /* element count */
    const uint8_t *raw;                 /* numeric/bool elements: packed little-endian, maybe unaligned */
    const struct ork_gguf_str *strs;    /* type == STRING: n entries (index built at open) */
    const struct ork_gguf_value *items; /* type == ARRAY: n nested values (each of type ARRAY) */
};

struct ork_gguf_value {
    enum ork_gguf_type type;
    union {
        uint64_t u64;       /* UINT8/16/32/64 and BOOL (0/1) */
        int64_t i64;        /* INT8/16/32/64 */
        double f64;         /* FLOAT32/64 */
        struct ork_gguf_str str;
        struct ork_gguf_array arr;
    } v;
};

struct ork_gguf_kv {
    const char *key;        /* NUL-terminated copy */
    struct ork_gguf_value value;
};

struct ork_gguf_tensor {
    const char *name;       /* NUL-terminated copy */
    uint32_t n_dims;
    uint64_t ne[ORK_GGUF_MAX_DIMS];  /* ne[0] is the contiguous (row) dimension; unused dims = 1 */
    uint32_t type;          /* GGML type id (enum ork_type in ork-kernels/types.h) */
    uint64_t offset;        /* relative to the data section */
    uint64_t nbytes;        /* computed from type and shape (validated against the file) */
    const void *data;       /* into the mapping, aligned to general.alignment from file start */
};

struct ork_gguf;

/* How ork_gguf_open_mode puts the file in memory. */
enum ork_gguf_mode {
    ORK_GGUF_MMAP = 0,  /* map it: pages shared with the page cache, read on first touch */
    ORK_GGUF_READ = 1,  /* read it whole into private memory on transparent huge pages (where
                         * the system gives them; docs/engine.md "Loading") */
};

/* Open a file (mmap). Errors: ORK_EIO (cannot open/map), ORK_EFORMAT (corrupt; message names
 * the field), ORK_EUNSUPPORTED (version), ORK_ENOMEM. */
int ork_gguf_open(const char *path, struct ork_gguf **out);
/* ork_gguf_open with a mode; ORK_GGUF_READ also fails with ORK_ENOMEM (no memory for the copy)
 * or ORK_EIO (a read error, named with its offset). */
int ork_gguf_open_mode(const char *path, enum ork_gguf_mode mode, struct ork_gguf **out);
/* Parse a caller-owned buffer (borrowed: must outlive the reader). Used by fuzzers and tests. */
int ork_gguf_open_mem(const void *data, size_t size, struct ork_gguf **out);
void ork_gguf_close(struct ork_gguf *g);

uint32_t ork_gguf_version(const struct ork_gguf *g);
uint32_t ork_gguf_alignment(const struct ork_gguf *g);
uint64_t ork_gguf_file_size(const struct ork_gguf *g);
uint64_t ork_gguf_data_offset(const struct ork_gguf *g);   /* start of the tensor data section */
const void *ork_gguf_base(const struct ork_gguf *g);       /* first byte of the file */

/* Metadata. */
uint64_t ork_gguf_n_kv(const struct ork_gguf *g);
const struct ork_gguf_kv *ork_gguf_kv_at(const struct ork_gguf *g, uint64_t i);
const struct ork_gguf_kv *ork_gguf_kv_find(const struct ork_gguf *g, const char *key); /* NULL if absent */
const char *ork_gguf_type_name(enum ork_gguf_type t);

/* Typed getters. Return 0, ORK_ENOENT if the key is absent (no message recorded), or
 * ORK_EFORMAT naming the key if the stored type cannot be converted (integers convert between
 * widths when the value fits; floats accept FLOAT32/FLOAT64; bool accepts BOOL only). */
int ork_gguf_get_u32(const struct ork_gguf *g, const char *key, uint32_t *out);
int ork_gguf_get_u64(const struct ork_gguf *g, const char *key, uint64_t *out);
int ork_gguf_get_i32(const struct ork_gguf *g, const char *key, int32_t *out);
int ork_gguf_get_f32(const struct ork_gguf *g, const char *key, float *out);
int ork_gguf_get_bool(const struct ork_gguf *g, const char *key, bool *out);
int ork_gguf_get_str(const struct ork_gguf *g, const char *key, struct ork_gguf_str *out);
/* Array getter: ORK_EFORMAT naming the key when the value is not an array (of `want` element
 * type, unless want == ORK_GGUF_TYPE_COUNT meaning any). */
int ork_gguf_get_arr(const struct ork_gguf *g, const char *key, enum ork_gguf_type want,
                     const struct ork_gguf_array **out);

/* Copy-out element readers for numeric arrays (handle unaligned storage and widths). */
int64_t ork_gguf_arr_i64(const struct ork_gguf_array *a, uint64_t i);   /* integer/bool types */
double ork_gguf_arr_f64(const struct ork_gguf_array *a, uint64_t i);    /* any numeric type */

/* Tensors. */
uint64_t ork_gguf_n_tensors(const struct ork_gguf *g);
const struct ork_gguf_tensor *ork_gguf_tensor_at(const struct ork_gguf *g, uint64_t i);
const struct ork_gguf_tensor *ork_gguf_tensor_find(const struct ork_gguf *g, const char *name);

#ifdef __cplusplus
}
#endif
#endif
