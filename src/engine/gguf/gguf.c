/* gguf.c -- GGUF v2/v3 reader: parse and validate the header, metadata and tensor table of a
 * mapped (or borrowed) buffer, and index the names for lookups. Opening a file is gguf_open.c,
 * the accessors and typed getters gguf_get.c.
 *
 * What it is: a bounds-checked, single-pass parser. Every count, length and offset is checked
 * against the bytes that remain before it is used or allocated for; any inconsistency yields
 * ORK_EFORMAT with a message naming the field (see docs/gguf.md for the list). Strings, numeric
 * array payloads and tensor data stay in the mapping; the reader allocates only the key/tensor
 * name copies, the kv/tensor tables, one index per string array and one item table per array of
 * arrays.
 *
 * What it is not: it does not decide whether ork can compute with a tensor type (any type id
 * known to ork-kernels/types.h is readable; the model loader checks support), does not interpret
 * metadata beyond general.alignment, and does not read big-endian files.
 *
 * Format facts (GGUF specification, ggml docs/gguf.md): little-endian; "GGUF" magic, u32 version,
 * u64 tensor count, u64 kv count; kv = string key, u32 value type, value; tensor info = string
 * name, u32 n_dims, u64 ne[n_dims], u32 ggml type, u64 offset relative to the data section; the
 * data section starts at the next multiple of general.alignment (u32, default 32). Version 1 used
 * u32 counts and lengths and is not supported; versions 2 and 3 share the layout (3 only adds
 * big-endian files, which are marked by a byte-swapped version). */
#include "gguf_priv.h"

#include <ork-engine/gguf.h>

#include <ork-kernels/types.h>
#include <ork/alloc.h>
#include <ork/error.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* "GGUF" read as a little-endian u32 (GGUF spec: magic bytes 0x47 0x47 0x55 0x46). */
#define GGUF_MAGIC 0x46554747u
/* magic + version + n_tensors + n_kv (4 + 4 + 8 + 8 bytes). */
#define GGUF_HEADER_BYTES 24u
/* Smallest possible encodings, used to bound counts by the bytes that remain before anything
 * is allocated: a kv is key length (8) + at least 1 key byte + value type (4) + at least a
 * 1-byte value; a tensor info is name length (8) + at least 1 name byte + n_dims (4) + one
 * ne (8) + type (4) + offset (8); a string is its u64 length; an array header is element type
 * (4) + count (8). */
#define GGUF_MIN_KV_BYTES 14u
#define GGUF_MIN_TENSOR_INFO_BYTES 33u
#define GGUF_STR_LEN_BYTES 8u
#define GGUF_ARRAY_HEADER_BYTES 12u
/* Arrays of arrays nest at most this deep (our bound; the spec sets none). A key's own array is
 * level 1. Keeps recursion, and so stack use, bounded on hostile input. */
#define GGUF_MAX_ARRAY_DEPTH 8
/* Key length limit from the GGUF spec ("at most 2^16-1 bytes"); we apply the same bound to
 * tensor names (ggml itself limits them to 63 bytes, but that is an implementation limit). */
#define GGUF_MAX_NAME_LEN 65535u
/* Longest key/name excerpt quoted in an error message. */
#define GGUF_MSG_NAME_MAX 80
/* Elements of a tensor must fit ggml's int64_t element count. */
#define GGUF_MAX_NELEMENTS ((uint64_t)INT64_MAX)

/* --- allocation ---------------------------------------------------------------------------- */

static void *g_alloc(struct ork_gguf *g, uint64_t n)
{
    if (n > SIZE_MAX - sizeof(gguf_block))
        return NULL;
    gguf_block *b = ork_malloc(sizeof(gguf_block) + (size_t)n);
    if (!b)
        return NULL;
    b->next = g->blocks;
    g->blocks = b;
    return b + 1;
}

static void g_free_all(struct ork_gguf *g)
{
    gguf_block *b = g->blocks;
    while (b) {
        gguf_block *next = b->next;
        ork_free(b);
        b = next;
    }
    g->blocks = NULL;
}

/* --- byte reader ----------------------------------------------------------------------------- */

struct reader {
    const uint8_t *p;
    uint64_t size;
    uint64_t off;               /* invariant: off <= size */
};

static uint64_t rd_left(const struct reader *r)
{
    return r->size - r->off;
}

static uint64_t le_load(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Read an n-byte little-endian unsigned integer; false when fewer than n bytes remain. */
static bool rd_uint(struct reader *r, unsigned n, uint64_t *out)
{
    if (rd_left(r) < n)
        return false;
    *out = le_load(r->p + r->off, n);
    r->off += n;
    return true;
}

static bool rd_u32(struct reader *r, uint32_t *out)
{
    uint64_t v;
    if (!rd_uint(r, 4, &v))
        return false;
    *out = (uint32_t)v;
    return true;
}

static bool rd_u64(struct reader *r, uint64_t *out)
{
    return rd_uint(r, 8, out);
}

/* --- value types ------------------------------------------------------------------------------ */

static const char *const type_names[ORK_GGUF_TYPE_COUNT] = {
    [ORK_GGUF_UINT8] = "u8",    [ORK_GGUF_INT8] = "i8",     [ORK_GGUF_UINT16] = "u16",
    [ORK_GGUF_INT16] = "i16",   [ORK_GGUF_UINT32] = "u32",  [ORK_GGUF_INT32] = "i32",
    [ORK_GGUF_FLOAT32] = "f32", [ORK_GGUF_BOOL] = "bool",   [ORK_GGUF_STRING] = "str",
    [ORK_GGUF_ARRAY] = "arr",   [ORK_GGUF_UINT64] = "u64",  [ORK_GGUF_INT64] = "i64",
    [ORK_GGUF_FLOAT64] = "f64",
};

const char *ork_gguf_type_name(enum ork_gguf_type t)
{
    if ((unsigned)t >= ORK_GGUF_TYPE_COUNT)
        return "unknown";
    return type_names[t];
}

/* Encoded size of a fixed-size value type; 0 for STRING and ARRAY. */
unsigned ork__gguf_scalar_size(enum ork_gguf_type t)
{
    switch (t) {
    case ORK_GGUF_UINT8: case ORK_GGUF_INT8: case ORK_GGUF_BOOL:
        return 1;
    case ORK_GGUF_UINT16: case ORK_GGUF_INT16:
        return 2;
    case ORK_GGUF_UINT32: case ORK_GGUF_INT32: case ORK_GGUF_FLOAT32:
        return 4;
    case ORK_GGUF_UINT64: case ORK_GGUF_INT64: case ORK_GGUF_FLOAT64:
        return 8;
    default:
        return 0;
    }
}



/* Decode one fixed-size element from packed little-endian bytes into a value. */
void ork__gguf_decode_scalar(enum ork_gguf_type t, const uint8_t *p, struct ork_gguf_value *v)
{
    uint64_t bits = le_load(p, ork__gguf_scalar_size(t));
    v->type = t;
    switch (t) {
    case ORK_GGUF_INT8:
        v->v.i64 = (int8_t)(uint8_t)bits;
        break;
    case ORK_GGUF_INT16:
        v->v.i64 = (int16_t)(uint16_t)bits;
        break;
    case ORK_GGUF_INT32:
        v->v.i64 = (int32_t)(uint32_t)bits;
        break;
    case ORK_GGUF_INT64:
        v->v.i64 = (int64_t)bits;
        break;
    case ORK_GGUF_FLOAT32: {
        uint32_t b32 = (uint32_t)bits;
        float f;
        memcpy(&f, &b32, sizeof f);
        v->v.f64 = f;
        break;
    }
    case ORK_GGUF_FLOAT64:
        memcpy(&v->v.f64, &bits, sizeof bits);
        break;
    default:        /* unsigned and bool */
        v->v.u64 = bits;
        break;
    }
}

/* --- metadata parsing ------------------------------------------------------------------------ */

/* `what` names the value for messages, e.g. "key 3 ('llama.block_count')". */
static int read_str(struct reader *r, struct ork_gguf_str *s, const char *what)
{
    uint64_t len;
    if (!rd_u64(r, &len))
        return ork_errorf(ORK_EFORMAT, "gguf: truncated reading %s string length (offset %llu, file %llu bytes)",
                          what, (unsigned long long)r->off, (unsigned long long)r->size);
    if (len > rd_left(r))
        return ork_errorf(ORK_EFORMAT, "gguf: %s: string length %llu exceeds the remaining %llu bytes",
                          what, (unsigned long long)len, (unsigned long long)rd_left(r));
    s->ptr = (const char *)r->p + r->off;
    s->len = len;
    r->off += len;
    return 0;
}

static int read_array(struct ork_gguf *g, struct reader *r, struct ork_gguf_array *a, int depth,
                      const char *what);

static int read_value(struct ork_gguf *g, struct reader *r, enum ork_gguf_type t,
                      struct ork_gguf_value *v, const char *what)
{
    if (t == ORK_GGUF_STRING) {
        v->type = t;
        return read_str(r, &v->v.str, what);
    }
    if (t == ORK_GGUF_ARRAY) {
        v->type = t;
        return read_array(g, r, &v->v.arr, 1, what);
    }
    unsigned sz = ork__gguf_scalar_size(t);
    if (rd_left(r) < sz)
        return ork_errorf(ORK_EFORMAT, "gguf: truncated reading %s value (%s at offset %llu, file %llu bytes)",
                          what, ork_gguf_type_name(t), (unsigned long long)r->off,
                          (unsigned long long)r->size);
    ork__gguf_decode_scalar(t, r->p + r->off, v);
    if (t == ORK_GGUF_BOOL && v->v.u64 > 1)
        return ork_errorf(ORK_EFORMAT, "gguf: %s: bool value %llu is not 0 or 1 (offset %llu)", what,
                          (unsigned long long)v->v.u64, (unsigned long long)r->off);
    r->off += sz;
    return 0;
}

/* Strings of an array: first walk the lengths to prove all n strings fit (no allocation yet),
 * then build the index in one allocation. */
static int read_str_array(struct ork_gguf *g, struct reader *r, struct ork_gguf_array *a,
                          const char *what)
{
    uint64_t n = a->n, start = r->off;
    if (n > rd_left(r) / GGUF_STR_LEN_BYTES)
        return ork_errorf(ORK_EFORMAT, "gguf: %s: array of %llu strings cannot fit in the remaining %llu bytes",
                          what, (unsigned long long)n, (unsigned long long)rd_left(r));
    for (uint64_t i = 0; i < n; i++) {
        uint64_t len;
        if (!rd_u64(r, &len))
            return ork_errorf(ORK_EFORMAT, "gguf: truncated reading %s string %llu of %llu length (offset %llu, file %llu bytes)",
                              what, (unsigned long long)i, (unsigned long long)n,
                              (unsigned long long)r->off, (unsigned long long)r->size);
        if (len > rd_left(r))
            return ork_errorf(ORK_EFORMAT, "gguf: %s: string %llu of %llu: length %llu exceeds the remaining %llu bytes",
                              what, (unsigned long long)i, (unsigned long long)n,
                              (unsigned long long)len, (unsigned long long)rd_left(r));
        r->off += len;
    }
    if (n == 0)
        return 0;
    struct ork_gguf_str *strs = g_alloc(g, n * sizeof(*strs));  /* n <= size / 8: no overflow */
    if (!strs)
        return ork_errorf(ORK_ENOMEM, "gguf: %s: out of memory indexing %llu strings", what,
                          (unsigned long long)n);
    uint64_t off = start;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t len = le_load(r->p + off, GGUF_STR_LEN_BYTES);
        off += GGUF_STR_LEN_BYTES;
        strs[i].ptr = (const char *)r->p + off;
        strs[i].len = len;
        off += len;
    }
    a->strs = strs;
    return 0;
}

static int read_array(struct ork_gguf *g, struct reader *r, struct ork_gguf_array *a, int depth,
                      const char *what)
{
    uint32_t et;
    uint64_t n;
    if (depth > GGUF_MAX_ARRAY_DEPTH)
        return ork_errorf(ORK_EFORMAT, "gguf: %s: arrays nested deeper than %d levels (offset %llu)",
                          what, GGUF_MAX_ARRAY_DEPTH, (unsigned long long)r->off);
    if (!rd_u32(r, &et) || !rd_u64(r, &n))
        return ork_errorf(ORK_EFORMAT, "gguf: truncated reading %s array header (level %d, offset %llu, file %llu bytes)",
                          what, depth, (unsigned long long)r->off, (unsigned long long)r->size);
    if (et >= ORK_GGUF_TYPE_COUNT)
        return ork_errorf(ORK_EFORMAT, "gguf: %s: unknown array element type id %u (level %d)", what,
                          et, depth);
    a->type = (enum ork_gguf_type)et;
    a->n = n;
    a->raw = NULL;
    a->strs = NULL;
    a->items = NULL;

    if (et == ORK_GGUF_STRING)
        return read_str_array(g, r, a, what);

    if (et == ORK_GGUF_ARRAY) {
        if (n > rd_left(r) / GGUF_ARRAY_HEADER_BYTES)
            return ork_errorf(ORK_EFORMAT, "gguf: %s: array of %llu arrays cannot fit in the remaining %llu bytes",
                              what, (unsigned long long)n, (unsigned long long)rd_left(r));
        if (n == 0)
            return 0;
        struct ork_gguf_value *items = g_alloc(g, n * sizeof(*items));
        if (!items)
            return ork_errorf(ORK_ENOMEM, "gguf: %s: out of memory for %llu nested arrays", what,
                              (unsigned long long)n);
        memset(items, 0, n * sizeof(*items));
        a->items = items;
        for (uint64_t i = 0; i < n; i++) {
            items[i].type = ORK_GGUF_ARRAY;
            int ret = read_array(g, r, &items[i].v.arr, depth + 1, what);
            if (ret < 0)
                return ret;
        }
        return 0;
    }

    unsigned esz = ork__gguf_scalar_size(a->type);
    if (n > rd_left(r) / esz)
        return ork_errorf(ORK_EFORMAT, "gguf: %s: array of %llu %s (%u bytes each) exceeds the remaining %llu bytes",
                          what, (unsigned long long)n, ork_gguf_type_name(a->type), esz,
                          (unsigned long long)rd_left(r));
    a->raw = r->p + r->off;
    if (et == ORK_GGUF_BOOL) {
        for (uint64_t i = 0; i < n; i++)
            if (a->raw[i] > 1)
                return ork_errorf(ORK_EFORMAT, "gguf: %s: bool element %llu is %u, not 0 or 1", what,
                                  (unsigned long long)i, a->raw[i]);
    }
    r->off += n * esz;
    return 0;
}

/* Copy a name out of the file as a NUL-terminated string; `what` is "key 3" / "tensor 5". */
static int read_name(struct ork_gguf *g, struct reader *r, const char *what, char **out)
{
    struct ork_gguf_str s = { NULL, 0 };
    int ret = read_str(r, &s, what);
    if (ret < 0)
        return ret;
    if (s.len == 0)
        return ork_errorf(ORK_EFORMAT, "gguf: %s: empty name", what);
    if (s.len > GGUF_MAX_NAME_LEN)
        return ork_errorf(ORK_EFORMAT, "gguf: %s: name length %llu exceeds %u", what,
                          (unsigned long long)s.len, GGUF_MAX_NAME_LEN);
    if (memchr(s.ptr, '\0', s.len))
        return ork_errorf(ORK_EFORMAT, "gguf: %s: name '%.*s' contains a NUL byte", what,
                          GGUF_MSG_NAME_MAX, s.ptr);
    char *name = g_alloc(g, s.len + 1);
    if (!name)
        return ork_errorf(ORK_ENOMEM, "gguf: %s: out of memory for its name", what);
    memcpy(name, s.ptr, s.len);
    name[s.len] = '\0';
    *out = name;
    return 0;
}

/* Grow a table of `elem` byte entries to hold at least need entries (doubling, capped at max:
 * the count the file announced, already bounded by its size). */
static int grow(void **tab, uint64_t *cap, uint64_t need, uint64_t max, size_t elem)
{
    if (need <= *cap)
        return 0;
    uint64_t ncap = *cap ? *cap * 2 : 64;
    if (ncap > max)
        ncap = max;
    if (ncap < need)
        ncap = need;
    if (ncap > SIZE_MAX / elem)
        return ORK_ENOMEM;
    void *p = ork_realloc(*tab, (size_t)(ncap * elem));
    if (!p)
        return ORK_ENOMEM;
    *tab = p;
    *cap = ncap;
    return 0;
}

/* --- hashing --------------------------------------------------------------------------------- */

/* FNV-1a, 64-bit (offset basis and prime from the FNV specification). */
#define FNV64_OFFSET 0xcbf29ce484222325ull
#define FNV64_PRIME 0x100000001b3ull

/* The per-reader seed (from the reader's address, so not predictable from the file) keeps
 * crafted names from all landing in one probe chain. */
static uint64_t hash_str(uint64_t seed, const char *s)
{
    uint64_t h = FNV64_OFFSET ^ seed;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * FNV64_PRIME;
    /* FNV's low bits depend only on low bits: mix the high ones down (splitmix64 finalizer) */
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
    return h ^ (h >> 31);
}

/* Build an open-addressing index over n names (name_at(i)); on a duplicate, dup_a and dup_b get
 * the two indices and the return is ORK_EFORMAT without a message (the caller writes it). */
static int build_index(uint64_t n, const char *(*name_at)(const struct ork_gguf *, uint64_t),
                       const struct ork_gguf *g, uint32_t **slots_out, uint64_t *mask_out,
                       uint64_t *dup_a, uint64_t *dup_b)
{
    uint64_t cap = 16;
    while (cap < 2 * n)
        cap *= 2;
    if (cap > SIZE_MAX / sizeof(uint32_t))
        return ORK_ENOMEM;
    uint32_t *slots = ork_calloc((size_t)cap, sizeof(uint32_t));
    if (!slots)
        return ORK_ENOMEM;
    uint64_t mask = cap - 1;
    for (uint64_t i = 0; i < n; i++) {
        const char *name = name_at(g, i);
        uint64_t h = hash_str(g->hash_seed, name) & mask;
        while (slots[h]) {
            if (!strcmp(name_at(g, slots[h] - 1), name)) {
                *dup_a = slots[h] - 1;
                *dup_b = i;
                ork_free(slots);
                return ORK_EFORMAT;
            }
            h = (h + 1) & mask;
        }
        slots[h] = (uint32_t)(i + 1);
    }
    *slots_out = slots;
    *mask_out = mask;
    return 0;
}

static const char *kv_name_at(const struct ork_gguf *g, uint64_t i)
{
    return g->kvs[i].key;
}

static const char *tensor_name_at(const struct ork_gguf *g, uint64_t i)
{
    return g->tensors[i].name;
}

static uint64_t index_lookup(const struct ork_gguf *g, const uint32_t *slots, uint64_t mask,
                             const char *(*name_at)(const struct ork_gguf *, uint64_t),
                             const char *name)
{
    if (!slots || !name)
        return UINT64_MAX;
    uint64_t h = hash_str(g->hash_seed, name) & mask;
    while (slots[h]) {
        if (!strcmp(name_at(g, slots[h] - 1), name))
            return slots[h] - 1;
        h = (h + 1) & mask;
    }
    return UINT64_MAX;
}

/* --- top-level parse ------------------------------------------------------------------------- */

static int parse_header(struct ork_gguf *g, struct reader *r, uint64_t *n_tensors, uint64_t *n_kv)
{
    uint32_t magic, version;
    if (r->size < 4)
        return ork_errorf(ORK_EFORMAT, "gguf: file too small (%llu bytes) to hold the magic",
                          (unsigned long long)r->size);
    rd_u32(r, &magic);
    if (magic != GGUF_MAGIC)
        return ork_errorf(ORK_EFORMAT, "gguf: bad magic 0x%08x (expected 'GGUF')", magic);
    if (!rd_u32(r, &version))
        return ork_errorf(ORK_EFORMAT, "gguf: truncated reading the version (file %llu bytes)",
                          (unsigned long long)r->size);
    if ((version & 0xffffu) == 0 && (version >> 16) != 0)
        return ork_errorf(ORK_EUNSUPPORTED, "gguf: version field 0x%08x looks byte-swapped: big-endian GGUF files are not supported",
                          version);
    if (version == 1)
        return ork_errorf(ORK_EUNSUPPORTED, "gguf: version 1 is not supported (only versions 2 and 3)");
    if (version != 2 && version != 3)
        return ork_errorf(ORK_EUNSUPPORTED, "gguf: unsupported version %u (expected 2 or 3)", version);
    g->version = version;
    if (!rd_u64(r, n_tensors))
        return ork_errorf(ORK_EFORMAT, "gguf: truncated reading n_tensors (file %llu bytes, header needs %u)",
                          (unsigned long long)r->size, GGUF_HEADER_BYTES);
    if (!rd_u64(r, n_kv))
        return ork_errorf(ORK_EFORMAT, "gguf: truncated reading n_kv (file %llu bytes, header needs %u)",
                          (unsigned long long)r->size, GGUF_HEADER_BYTES);
    if (*n_kv > rd_left(r) / GGUF_MIN_KV_BYTES)
        return ork_errorf(ORK_EFORMAT, "gguf: n_kv %llu cannot fit in the remaining %llu bytes",
                          (unsigned long long)*n_kv, (unsigned long long)rd_left(r));
    if (*n_tensors > rd_left(r) / GGUF_MIN_TENSOR_INFO_BYTES)
        return ork_errorf(ORK_EFORMAT, "gguf: n_tensors %llu cannot fit in the remaining %llu bytes",
                          (unsigned long long)*n_tensors, (unsigned long long)rd_left(r));
    if (*n_kv > UINT32_MAX - 1 || *n_tensors > UINT32_MAX - 1)  /* hash slots hold index + 1 */
        return ork_errorf(ORK_EFORMAT, "gguf: n_kv %llu / n_tensors %llu too large",
                          (unsigned long long)*n_kv, (unsigned long long)*n_tensors);
    return 0;
}

static int parse_kvs(struct ork_gguf *g, struct reader *r, uint64_t n_kv)
{
    uint64_t cap = 0;
    for (uint64_t i = 0; i < n_kv; i++) {
        char what[GGUF_MSG_NAME_MAX + 48];
        int ret = grow((void **)&g->kvs, &cap, i + 1, n_kv, sizeof(*g->kvs));
        if (ret < 0)
            return ork_errorf(ret, "gguf: out of memory for %llu keys", (unsigned long long)n_kv);
        struct ork_gguf_kv *kv = &g->kvs[i];
        memset(kv, 0, sizeof(*kv));
        snprintf(what, sizeof what, "key %llu", (unsigned long long)i);
        char *key;
        ret = read_name(g, r, what, &key);
        if (ret < 0)
            return ret;
        kv->key = key;
        g->n_kv = i + 1;
        snprintf(what, sizeof what, "key %llu ('%.*s')", (unsigned long long)i, GGUF_MSG_NAME_MAX, key);
        uint32_t t;
        if (!rd_u32(r, &t))
            return ork_errorf(ORK_EFORMAT, "gguf: truncated reading %s value type (offset %llu, file %llu bytes)",
                              what, (unsigned long long)r->off, (unsigned long long)r->size);
        if (t >= ORK_GGUF_TYPE_COUNT)
            return ork_errorf(ORK_EFORMAT, "gguf: %s: unknown value type id %u", what, t);
        ret = read_value(g, r, (enum ork_gguf_type)t, &kv->value, what);
        if (ret < 0)
            return ret;
    }
    uint64_t a = 0, b = 0;
    int ret = build_index(g->n_kv, kv_name_at, g, &g->kv_hash, &g->kv_mask, &a, &b);
    if (ret == ORK_EFORMAT)
        return ork_errorf(ORK_EFORMAT, "gguf: duplicate key '%.*s' (keys %llu and %llu)",
                          GGUF_MSG_NAME_MAX, g->kvs[b].key, (unsigned long long)a, (unsigned long long)b);
    if (ret < 0)
        return ork_errorf(ret, "gguf: out of memory for the key index");
    return 0;
}

static int parse_alignment(struct ork_gguf *g)
{
    const struct ork_gguf_kv *kv = ork_gguf_kv_find(g, "general.alignment");
    g->alignment = ORK_GGUF_DEFAULT_ALIGNMENT;
    if (!kv)
        return 0;
    if (kv->value.type != ORK_GGUF_UINT32)
        return ork_errorf(ORK_EFORMAT, "gguf: general.alignment has type %s, expected u32",
                          ork_gguf_type_name(kv->value.type));
    uint64_t a = kv->value.v.u64;
    if (a == 0 || (a & (a - 1)))
        return ork_errorf(ORK_EFORMAT, "gguf: general.alignment %llu is not a nonzero power of two",
                          (unsigned long long)a);
    g->alignment = (uint32_t)a;
    return 0;
}

static int parse_tensor_info(struct ork_gguf *g, struct reader *r, uint64_t i,
                             struct ork_gguf_tensor *t)
{
    char what[GGUF_MSG_NAME_MAX + 48];
    snprintf(what, sizeof what, "tensor %llu", (unsigned long long)i);
    char *name;
    int ret = read_name(g, r, what, &name);
    if (ret < 0)
        return ret;
    t->name = name;
    snprintf(what, sizeof what, "tensor %llu ('%.*s')", (unsigned long long)i, GGUF_MSG_NAME_MAX, name);
#define TRUNC(field)                                                                              \
    ork_errorf(ORK_EFORMAT, "gguf: truncated reading %s " field " (offset %llu, file %llu bytes)", \
               what, (unsigned long long)r->off, (unsigned long long)r->size)
    if (!rd_u32(r, &t->n_dims))
        return TRUNC("n_dims");
    if (t->n_dims < 1 || t->n_dims > ORK_GGUF_MAX_DIMS)
        return ork_errorf(ORK_EFORMAT, "gguf: tensor '%.*s': n_dims %u is not in 1..%d",
                          GGUF_MSG_NAME_MAX, name, t->n_dims, ORK_GGUF_MAX_DIMS);
    uint64_t nel = 1;
    for (uint32_t d = 0; d < ORK_GGUF_MAX_DIMS; d++)
        t->ne[d] = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) {
        if (!rd_u64(r, &t->ne[d]))
            return TRUNC("shape");
        if (t->ne[d] == 0)
            return ork_errorf(ORK_EFORMAT, "gguf: tensor '%.*s': ne[%u] is 0", GGUF_MSG_NAME_MAX,
                              name, d);
        if (__builtin_mul_overflow(nel, t->ne[d], &nel) || nel > GGUF_MAX_NELEMENTS)
            return ork_errorf(ORK_EFORMAT, "gguf: tensor '%.*s': element count overflows (ne[%u] = %llu)",
                              GGUF_MSG_NAME_MAX, name, d, (unsigned long long)t->ne[d]);
    }
    if (!rd_u32(r, &t->type))
        return TRUNC("type");
    const struct ork_type_traits *tt = ork_type_traits(t->type);
    if (!tt)
        return ork_errorf(ORK_EFORMAT, "gguf: tensor '%.*s': unknown tensor type id %u",
                          GGUF_MSG_NAME_MAX, name, t->type);
    if (t->ne[0] % tt->block)
        return ork_errorf(ORK_EFORMAT, "gguf: tensor '%.*s': ne[0] = %llu is not a multiple of the %s block size %u",
                          GGUF_MSG_NAME_MAX, name, (unsigned long long)t->ne[0], tt->name, tt->block);
    if (!rd_u64(r, &t->offset))
        return TRUNC("offset");
#undef TRUNC
    uint64_t rows = nel / t->ne[0], row_bytes;
    if (__builtin_mul_overflow(t->ne[0] / tt->block, (uint64_t)tt->block_bytes, &row_bytes) ||
        __builtin_mul_overflow(row_bytes, rows, &t->nbytes))
        return ork_errorf(ORK_EFORMAT, "gguf: tensor '%.*s': byte size overflows", GGUF_MSG_NAME_MAX,
                          name);
    if (t->offset % g->alignment)
        return ork_errorf(ORK_EFORMAT, "gguf: tensor '%.*s': offset %llu is not a multiple of the alignment %u",
                          GGUF_MSG_NAME_MAX, name, (unsigned long long)t->offset, g->alignment);
    return 0;
}

struct span {
    uint64_t offset;
    uint64_t index;
};

static int cmp_span(const void *pa, const void *pb)
{
    const struct span *a = pa, *b = pb;
    return a->offset < b->offset ? -1 : a->offset > b->offset;
}

/* Sort the tensors by offset and require each to end at or before the next one starts. */
static int check_overlaps(struct ork_gguf *g)
{
    uint64_t n = g->n_tensors;
    if (n < 2)
        return 0;
    struct span *order = ork_malloc((size_t)n * sizeof(*order));  /* n < size / 33 */
    if (!order)
        return ork_errorf(ORK_ENOMEM, "gguf: out of memory checking %llu tensors", (unsigned long long)n);
    for (uint64_t i = 0; i < n; i++)
        order[i] = (struct span){ g->tensors[i].offset, i };
    qsort(order, (size_t)n, sizeof(*order), cmp_span);
    int ret = 0;
    for (uint64_t i = 0; i + 1 < n; i++) {
        const struct ork_gguf_tensor *a = &g->tensors[order[i].index];
        const struct ork_gguf_tensor *b = &g->tensors[order[i + 1].index];
        if (a->offset + a->nbytes > b->offset) {  /* both lie inside the file: no overflow */
            ret = ork_errorf(ORK_EFORMAT, "gguf: tensors '%.*s' [offset %llu, size %llu] and '%.*s' [offset %llu, size %llu] overlap",
                             GGUF_MSG_NAME_MAX, a->name, (unsigned long long)a->offset,
                             (unsigned long long)a->nbytes, GGUF_MSG_NAME_MAX, b->name,
                             (unsigned long long)b->offset, (unsigned long long)b->nbytes);
            break;
        }
    }
    ork_free(order);
    return ret;
}

static int parse_tensors(struct ork_gguf *g, struct reader *r, uint64_t n_tensors)
{
    if (n_tensors > rd_left(r) / GGUF_MIN_TENSOR_INFO_BYTES)
        return ork_errorf(ORK_EFORMAT, "gguf: n_tensors %llu cannot fit in the %llu bytes after the metadata",
                          (unsigned long long)n_tensors, (unsigned long long)rd_left(r));
    uint64_t cap = 0;
    for (uint64_t i = 0; i < n_tensors; i++) {
        int ret = grow((void **)&g->tensors, &cap, i + 1, n_tensors, sizeof(*g->tensors));
        if (ret < 0)
            return ork_errorf(ret, "gguf: out of memory for %llu tensors", (unsigned long long)n_tensors);
        memset(&g->tensors[i], 0, sizeof(g->tensors[i]));
        g->n_tensors = i + 1;
        ret = parse_tensor_info(g, r, i, &g->tensors[i]);
        if (ret < 0)
            return ret;
    }
    uint64_t a = 0, b = 0;
    int ret = build_index(g->n_tensors, tensor_name_at, g, &g->tensor_hash, &g->tensor_mask, &a, &b);
    if (ret == ORK_EFORMAT)
        return ork_errorf(ORK_EFORMAT, "gguf: duplicate tensor name '%.*s' (tensors %llu and %llu)",
                          GGUF_MSG_NAME_MAX, g->tensors[b].name, (unsigned long long)a,
                          (unsigned long long)b);
    if (ret < 0)
        return ork_errorf(ret, "gguf: out of memory for the tensor index");

    /* The data section starts at the first multiple of the alignment after the tensor infos.
     * A file without tensors may end before it (nothing is read there): clamp to the end. */
    uint64_t data = r->off + (g->alignment - r->off % g->alignment) % g->alignment;
    if (data > r->size) {
        if (g->n_tensors)
            return ork_errorf(ORK_EFORMAT, "gguf: data section would start at offset %llu, past end of file (%llu bytes)",
                              (unsigned long long)data, (unsigned long long)r->size);
        data = r->size;
    }
    g->data_offset = data;
    uint64_t avail = r->size - data;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        struct ork_gguf_tensor *t = &g->tensors[i];
        if (t->offset > avail || t->nbytes > avail - t->offset)
            return ork_errorf(ORK_EFORMAT, "gguf: tensor '%.*s': data [offset %llu, size %llu] ends past end of file (%llu bytes, data section at %llu)",
                              GGUF_MSG_NAME_MAX, t->name, (unsigned long long)t->offset,
                              (unsigned long long)t->nbytes, (unsigned long long)r->size,
                              (unsigned long long)data);
        t->data = r->p + data + t->offset;
    }
    return check_overlaps(g);
}

int ork__gguf_parse(struct ork_gguf *g)
{
    struct reader r = { .p = g->base, .size = g->size, .off = 0 };
    uint64_t n_tensors = 0, n_kv = 0;
    int ret = parse_header(g, &r, &n_tensors, &n_kv);
    if (ret < 0)
        return ret;
    if ((ret = parse_kvs(g, &r, n_kv)) < 0)
        return ret;
    if ((ret = parse_alignment(g)) < 0)
        return ret;
    return parse_tensors(g, &r, n_tensors);
}

void ork__gguf_free_tables(struct ork_gguf *g)
{
    g_free_all(g);
    ork_free(g->kvs);
    ork_free(g->tensors);
    ork_free(g->kv_hash);
    ork_free(g->tensor_hash);
    g->kvs = NULL;
    g->tensors = NULL;
    g->kv_hash = g->tensor_hash = NULL;
}

uint64_t ork__gguf_hash_seed(const struct ork_gguf *g)
{
    return ((uint64_t)(uintptr_t)g * FNV64_PRIME) ^ ((uint64_t)(uintptr_t)&g >> 4);
}

/* --- lookups --------------------------------------------------------------------------------- */

const struct ork_gguf_kv *ork_gguf_kv_find(const struct ork_gguf *g, const char *key)
{
    if (!g)
        return NULL;
    uint64_t i = index_lookup(g, g->kv_hash, g->kv_mask, kv_name_at, key);
    return i == UINT64_MAX ? NULL : &g->kvs[i];
}

const struct ork_gguf_tensor *ork_gguf_tensor_find(const struct ork_gguf *g, const char *name)
{
    if (!g)
        return NULL;
    uint64_t i = index_lookup(g, g->tensor_hash, g->tensor_mask, tensor_name_at, name);
    return i == UINT64_MAX ? NULL : &g->tensors[i];
}
