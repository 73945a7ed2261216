/* gguf_write.c -- streaming GGUF v3 writer (see ork-engine/gguf_write.h).
 *
 * File layout written (GGUF specification, version 3, little-endian):
 *   u32 magic "GGUF" | u32 version | u64 n_tensors | u64 n_kv
 *   n_kv x { string key | u32 value type | value }
 *   n_tensors x { string name | u32 n_dims | u64 ne[n_dims] | u32 ggml type | u64 offset }
 *   zero padding to the alignment | tensor data, each tensor at an aligned offset
 * with string = u64 length + bytes (no NUL) and array = u32 element type + u64 count + elements.
 *
 * Metadata is serialized into a growing memory buffer as keys are added; tensor data goes
 * through a fixed output buffer straight to the file descriptor.
 * Not here: reading (gguf.c), tensor contents (synth.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork-engine/gguf_write.h>
#include <ork-kernels/types.h>

#define GGUF_MAGIC 0x46554747u          /* "GGUF" read as a little-endian u32 (GGUF spec) */
#define GGUF_VERSION 3u                 /* the version this writer produces */
#define OUT_BUF_BYTES (8u << 20)        /* output buffer: large sequential writes */
#define KEY_GENERAL_ALIGNMENT "general.alignment"

struct wtensor {
    char *name;
    uint32_t n_dims;
    uint64_t ne[ORK_GGUF_MAX_DIMS];
    uint32_t type;
    uint64_t offset;                    /* in the data section */
    uint64_t nbytes;
};

struct bytes {
    uint8_t *p;
    size_t len, cap;
};

struct ork_gguf_writer {
    char *path;
    int fd;
    uint32_t alignment;
    bool finished;
    int failed;                         /* first write error (sticky) */

    struct bytes meta;                  /* serialized key/value pairs */
    uint64_t n_kv;
    char **keys;                        /* for duplicate detection */
    size_t keys_cap;

    struct wtensor *t;
    uint64_t n_t, cap_t;
    uint64_t data_bytes;                /* data section size so far (aligned ends) */

    bool header_done;
    uint64_t cur;                       /* tensor being streamed */
    uint64_t cur_written;               /* bytes of it written */

    uint8_t *out;                       /* output buffer */
    size_t out_len;
    uint64_t file_bytes;
};

/* ---- small helpers ---------------------------------------------------------------------- */

static int bytes_put(struct bytes *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n)
            cap *= 2;
        uint8_t *q = ork_realloc(b->p, cap);
        if (!q)
            return ork_errorf(ORK_ENOMEM, "gguf writer: metadata of %zu bytes", cap);
        b->p = q;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->len, p, n);
    b->len += n;
    return 0;
}

static int put_u32(struct bytes *b, uint32_t v)
{
    uint8_t x[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };
    return bytes_put(b, x, 4);
}

static int put_u64(struct bytes *b, uint64_t v)
{
    uint8_t x[8];
    for (int i = 0; i < 8; i++)
        x[i] = (uint8_t)(v >> (8 * i));
    return bytes_put(b, x, 8);
}

static int put_str(struct bytes *b, const char *p, uint64_t n)
{
    int ret = put_u64(b, n);
    return ret < 0 ? ret : bytes_put(b, p, (size_t)n);
}

/* Size in bytes of one scalar of a numeric/bool GGUF type, 0 for STRING/ARRAY/unknown. */
static size_t scalar_size(enum ork_gguf_type t)
{
    switch (t) {
    case ORK_GGUF_UINT8: case ORK_GGUF_INT8: case ORK_GGUF_BOOL: return 1;
    case ORK_GGUF_UINT16: case ORK_GGUF_INT16: return 2;
    case ORK_GGUF_UINT32: case ORK_GGUF_INT32: case ORK_GGUF_FLOAT32: return 4;
    case ORK_GGUF_UINT64: case ORK_GGUF_INT64: case ORK_GGUF_FLOAT64: return 8;
    default: return 0;
    }
}

static int fd_write_all(struct ork_gguf_writer *w, const void *p, size_t n)
{
    const uint8_t *q = p;
    while (n) {
        ssize_t k = write(w->fd, q, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            w->failed = ork_errorf(ORK_EIO, "gguf writer: write to '%s' failed: %s", w->path,
                                   k < 0 ? strerror(errno) : "no progress");
            return w->failed;
        }
        q += k;
        n -= (size_t)k;
    }
    return 0;
}

static int out_flush(struct ork_gguf_writer *w)
{
    int ret = fd_write_all(w, w->out, w->out_len);
    w->out_len = 0;
    return ret;
}

static int out_put(struct ork_gguf_writer *w, const void *p, size_t n)
{
    if (w->failed)
        return w->failed;
    w->file_bytes += n;
    if (w->out_len + n <= OUT_BUF_BYTES) {
        memcpy(w->out + w->out_len, p, n);
        w->out_len += n;
        return 0;
    }
    int ret = out_flush(w);
    if (ret < 0)
        return ret;
    if (n >= OUT_BUF_BYTES)
        return fd_write_all(w, p, n);
    memcpy(w->out, p, n);
    w->out_len = n;
    return 0;
}

static int out_zeros(struct ork_gguf_writer *w, uint64_t n)
{
    static const uint8_t zero[256];
    while (n) {
        size_t k = n > sizeof zero ? sizeof zero : (size_t)n;
        int ret = out_put(w, zero, k);
        if (ret < 0)
            return ret;
        n -= k;
    }
    return 0;
}

static uint64_t align_up(uint64_t x, uint64_t a)
{
    return (x + a - 1) / a * a;
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = ork_malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* ---- create / free ---------------------------------------------------------------------- */

int ork_gguf_writer_create(const char *path, uint32_t alignment, struct ork_gguf_writer **out)
{
    if (!path || !out)
        return ork_errorf(ORK_EINVAL, "gguf writer: path and out are required");
    if (alignment == 0)
        alignment = ORK_GGUF_DEFAULT_ALIGNMENT;
    if (alignment & (alignment - 1))
        return ork_errorf(ORK_EINVAL, "gguf writer: alignment %u is not a power of two",
                          alignment);
    struct ork_gguf_writer *w = ork_calloc(1, sizeof(*w));
    if (!w)
        return ORK_ENOMEM;
    w->fd = -1;
    w->alignment = alignment;
    w->path = dup_str(path);
    w->out = ork_malloc(OUT_BUF_BYTES);
    if (!w->path || !w->out) {
        ork_gguf_writer_free(w);
        return ORK_ENOMEM;
    }
    w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (w->fd < 0) {
        int ret = ork_errorf(ORK_EIO, "gguf writer: cannot create '%s': %s", path,
                             strerror(errno));
        ork_gguf_writer_free(w);
        return ret;
    }
    if (alignment != ORK_GGUF_DEFAULT_ALIGNMENT) {
        int ret = ork_gguf_writer_add_u32(w, KEY_GENERAL_ALIGNMENT, alignment);
        if (ret < 0) {
            ork_gguf_writer_free(w);
            return ret;
        }
    }
    *out = w;
    return 0;
}

void ork_gguf_writer_free(struct ork_gguf_writer *w)
{
    if (!w)
        return;
    if (w->fd >= 0) {
        close(w->fd);
        if (!w->finished && w->path)
            unlink(w->path);
    }
    for (uint64_t i = 0; i < w->n_kv; i++)
        ork_free(w->keys[i]);
    ork_free(w->keys);
    for (uint64_t i = 0; i < w->n_t; i++)
        ork_free(w->t[i].name);
    ork_free(w->t);
    ork_free(w->meta.p);
    ork_free(w->out);
    ork_free(w->path);
    ork_free(w);
}

/* ---- metadata --------------------------------------------------------------------------- */

static int put_value(struct bytes *b, const struct ork_gguf_value *v, bool with_type, int depth);

/* Elements of an array (after its element type and count). */
static int put_array_body(struct bytes *b, const struct ork_gguf_array *a, int depth)
{
    int ret = 0;
    if (a->type == ORK_GGUF_STRING) {
        if (a->n && !a->strs)
            return ork_errorf(ORK_EINVAL, "gguf writer: string array without strings");
        for (uint64_t i = 0; i < a->n && ret == 0; i++)
            ret = put_str(b, a->strs[i].ptr, a->strs[i].len);
        return ret;
    }
    if (a->type == ORK_GGUF_ARRAY) {
        if (a->n && !a->items)
            return ork_errorf(ORK_EINVAL, "gguf writer: nested array without items");
        for (uint64_t i = 0; i < a->n && ret == 0; i++) {
            if (a->items[i].type != ORK_GGUF_ARRAY)
                return ork_errorf(ORK_EINVAL, "gguf writer: nested array item %llu is not an "
                                  "array", (unsigned long long)i);
            ret = put_value(b, &a->items[i], false, depth + 1);
        }
        return ret;
    }
    size_t es = scalar_size(a->type);
    if (!es)
        return ork_errorf(ORK_EINVAL, "gguf writer: array element type %d", (int)a->type);
    if (a->n > SIZE_MAX / es)
        return ork_errorf(ORK_EINVAL, "gguf writer: array of %llu elements",
                          (unsigned long long)a->n);
    if (a->n && !a->raw)
        return ork_errorf(ORK_EINVAL, "gguf writer: numeric array without data");
    return bytes_put(b, a->raw, (size_t)a->n * es);
}

/* Maximum nesting of arrays in arrays (the reader applies a limit as well). */
#define MAX_ARRAY_DEPTH 8

static int put_value(struct bytes *b, const struct ork_gguf_value *v, bool with_type, int depth)
{
    int ret;
    if (with_type && (ret = put_u32(b, (uint32_t)v->type)) < 0)
        return ret;
    switch (v->type) {
    case ORK_GGUF_UINT8: case ORK_GGUF_UINT16: case ORK_GGUF_UINT32: case ORK_GGUF_UINT64:
    case ORK_GGUF_BOOL: {
        uint8_t x[8];
        size_t n = scalar_size(v->type);
        for (size_t i = 0; i < n; i++)
            x[i] = (uint8_t)(v->v.u64 >> (8 * i));
        return bytes_put(b, x, n);
    }
    case ORK_GGUF_INT8: case ORK_GGUF_INT16: case ORK_GGUF_INT32: case ORK_GGUF_INT64: {
        uint8_t x[8];
        size_t n = scalar_size(v->type);
        uint64_t u = (uint64_t)v->v.i64;
        for (size_t i = 0; i < n; i++)
            x[i] = (uint8_t)(u >> (8 * i));
        return bytes_put(b, x, n);
    }
    case ORK_GGUF_FLOAT32: {
        float f = (float)v->v.f64;
        uint32_t u;
        memcpy(&u, &f, 4);
        return put_u32(b, u);
    }
    case ORK_GGUF_FLOAT64: {
        uint64_t u;
        memcpy(&u, &v->v.f64, 8);
        return put_u64(b, u);
    }
    case ORK_GGUF_STRING:
        if (v->v.str.len && !v->v.str.ptr)
            return ork_errorf(ORK_EINVAL, "gguf writer: string value without bytes");
        return put_str(b, v->v.str.ptr, v->v.str.len);
    case ORK_GGUF_ARRAY:
        if (depth >= MAX_ARRAY_DEPTH)
            return ork_errorf(ORK_EINVAL, "gguf writer: arrays nested deeper than %d",
                              MAX_ARRAY_DEPTH);
        if ((ret = put_u32(b, (uint32_t)v->v.arr.type)) < 0 ||
            (ret = put_u64(b, v->v.arr.n)) < 0)
            return ret;
        return put_array_body(b, &v->v.arr, depth);
    default:
        return ork_errorf(ORK_EINVAL, "gguf writer: value type %d", (int)v->type);
    }
}

int ork_gguf_writer_add_value(struct ork_gguf_writer *w, const char *key,
                              const struct ork_gguf_value *v)
{
    if (!w || !key || !v)
        return ork_errorf(ORK_EINVAL, "gguf writer: NULL argument");
    if (w->header_done)
        return ork_errorf(ORK_EINVAL, "gguf writer: key '%s' added after tensor data", key);
    for (uint64_t i = 0; i < w->n_kv; i++)
        if (!strcmp(w->keys[i], key))
            return ork_errorf(ORK_EINVAL, "gguf writer: duplicate key '%s'", key);
    if (w->n_kv == w->keys_cap) {
        size_t cap = w->keys_cap ? w->keys_cap * 2 : 64;
        char **k = ork_realloc(w->keys, cap * sizeof(*k));
        if (!k)
            return ORK_ENOMEM;
        w->keys = k;
        w->keys_cap = cap;
    }
    char *kd = dup_str(key);
    if (!kd)
        return ORK_ENOMEM;
    size_t mark = w->meta.len;
    int ret = put_str(&w->meta, key, strlen(key));
    if (ret == 0)
        ret = put_value(&w->meta, v, true, 0);
    if (ret < 0) {
        w->meta.len = mark;
        ork_free(kd);
        return ret;
    }
    w->keys[w->n_kv++] = kd;
    return 0;
}

int ork_gguf_writer_add_str(struct ork_gguf_writer *w, const char *key, const char *s)
{
    struct ork_gguf_value v = { .type = ORK_GGUF_STRING };
    v.v.str.ptr = s ? s : "";
    v.v.str.len = s ? strlen(s) : 0;
    return ork_gguf_writer_add_value(w, key, &v);
}

int ork_gguf_writer_add_u32(struct ork_gguf_writer *w, const char *key, uint32_t x)
{
    struct ork_gguf_value v = { .type = ORK_GGUF_UINT32, .v.u64 = x };
    return ork_gguf_writer_add_value(w, key, &v);
}

int ork_gguf_writer_add_i32(struct ork_gguf_writer *w, const char *key, int32_t x)
{
    struct ork_gguf_value v = { .type = ORK_GGUF_INT32, .v.i64 = x };
    return ork_gguf_writer_add_value(w, key, &v);
}

int ork_gguf_writer_add_u64(struct ork_gguf_writer *w, const char *key, uint64_t x)
{
    struct ork_gguf_value v = { .type = ORK_GGUF_UINT64, .v.u64 = x };
    return ork_gguf_writer_add_value(w, key, &v);
}

int ork_gguf_writer_add_f32(struct ork_gguf_writer *w, const char *key, float x)
{
    struct ork_gguf_value v = { .type = ORK_GGUF_FLOAT32, .v.f64 = x };
    return ork_gguf_writer_add_value(w, key, &v);
}

int ork_gguf_writer_add_bool(struct ork_gguf_writer *w, const char *key, bool x)
{
    struct ork_gguf_value v = { .type = ORK_GGUF_BOOL, .v.u64 = x ? 1 : 0 };
    return ork_gguf_writer_add_value(w, key, &v);
}

int ork_gguf_writer_add_arr(struct ork_gguf_writer *w, const char *key, enum ork_gguf_type type,
                            const void *data, uint64_t n)
{
    if (!scalar_size(type))
        return ork_errorf(ORK_EINVAL, "gguf writer: key '%s': %s is not a numeric element type",
                          key ? key : "?", ork_gguf_type_name(type));
    struct ork_gguf_value v = { .type = ORK_GGUF_ARRAY };
    v.v.arr.type = type;
    v.v.arr.n = n;
    v.v.arr.raw = data;
    return ork_gguf_writer_add_value(w, key, &v);
}

int ork_gguf_writer_add_arr_str(struct ork_gguf_writer *w, const char *key,
                                const char *const *strs, uint64_t n)
{
    struct ork_gguf_str *s = ork_calloc(n ? (size_t)n : 1, sizeof(*s));
    if (!s)
        return ORK_ENOMEM;
    for (uint64_t i = 0; i < n; i++) {
        s[i].ptr = strs[i];
        s[i].len = strlen(strs[i]);
    }
    struct ork_gguf_value v = { .type = ORK_GGUF_ARRAY };
    v.v.arr.type = ORK_GGUF_STRING;
    v.v.arr.n = n;
    v.v.arr.strs = s;
    int ret = ork_gguf_writer_add_value(w, key, &v);
    ork_free(s);
    return ret;
}

/* ---- tensors ---------------------------------------------------------------------------- */

int ork_gguf_writer_add_tensor(struct ork_gguf_writer *w, const char *name, uint32_t n_dims,
                               const uint64_t *ne, uint32_t type)
{
    if (!w || !name || !ne)
        return ork_errorf(ORK_EINVAL, "gguf writer: NULL argument");
    if (w->header_done)
        return ork_errorf(ORK_EINVAL, "gguf writer: tensor '%s' declared after tensor data",
                          name);
    if (n_dims < 1 || n_dims > ORK_GGUF_MAX_DIMS)
        return ork_errorf(ORK_EINVAL, "gguf writer: tensor '%s': n_dims %u", name, n_dims);
    const struct ork_type_traits *tr = ork_type_traits(type);
    if (!tr)
        return ork_errorf(ORK_EINVAL, "gguf writer: tensor '%s': type %u", name, type);
    for (uint64_t i = 0; i < w->n_t; i++)
        if (!strcmp(w->t[i].name, name))
            return ork_errorf(ORK_EINVAL, "gguf writer: duplicate tensor '%s'", name);
    uint64_t rows = 1;
    for (uint32_t d = 1; d < n_dims; d++) {
        if (ne[d] == 0 || rows > UINT64_MAX / ne[d])
            return ork_errorf(ORK_EINVAL, "gguf writer: tensor '%s': bad ne[%u]", name, d);
        rows *= ne[d];
    }
    size_t row_bytes = ork_type_row_bytes(type, ne[0]);
    if (ne[0] == 0 || row_bytes == 0)
        return ork_errorf(ORK_EINVAL, "gguf writer: tensor '%s': row of %llu is not a multiple "
                          "of the %s block (%u)", name, (unsigned long long)ne[0], tr->name,
                          tr->block);
    if (rows > UINT64_MAX / row_bytes)
        return ork_errorf(ORK_EINVAL, "gguf writer: tensor '%s' is too large", name);
    if (w->n_t == w->cap_t) {
        uint64_t cap = w->cap_t ? w->cap_t * 2 : 64;
        struct wtensor *t = ork_realloc(w->t, (size_t)cap * sizeof(*t));
        if (!t)
            return ORK_ENOMEM;
        w->t = t;
        w->cap_t = cap;
    }
    struct wtensor *t = &w->t[w->n_t];
    memset(t, 0, sizeof(*t));
    t->name = dup_str(name);
    if (!t->name)
        return ORK_ENOMEM;
    t->n_dims = n_dims;
    for (uint32_t d = 0; d < ORK_GGUF_MAX_DIMS; d++)
        t->ne[d] = d < n_dims ? ne[d] : 1;
    t->type = type;
    t->nbytes = rows * row_bytes;
    t->offset = align_up(w->data_bytes, w->alignment);
    w->data_bytes = t->offset + t->nbytes;
    w->n_t++;
    return 0;
}

uint64_t ork_gguf_writer_tensor_bytes(const struct ork_gguf_writer *w, uint64_t i)
{
    return w && i < w->n_t ? w->t[i].nbytes : 0;
}

/* ---- data ------------------------------------------------------------------------------- */

static int write_header(struct ork_gguf_writer *w)
{
    struct bytes h = { 0 };
    int ret = 0;
    if ((ret = put_u32(&h, GGUF_MAGIC)) < 0 || (ret = put_u32(&h, GGUF_VERSION)) < 0 ||
        (ret = put_u64(&h, w->n_t)) < 0 || (ret = put_u64(&h, w->n_kv)) < 0 ||
        (ret = bytes_put(&h, w->meta.p, w->meta.len)) < 0)
        goto out;
    for (uint64_t i = 0; i < w->n_t && ret == 0; i++) {
        const struct wtensor *t = &w->t[i];
        if ((ret = put_str(&h, t->name, strlen(t->name))) < 0 || (ret = put_u32(&h, t->n_dims)) < 0)
            break;
        for (uint32_t d = 0; d < t->n_dims && ret == 0; d++)
            ret = put_u64(&h, t->ne[d]);
        if (ret == 0 && (ret = put_u32(&h, t->type)) == 0)
            ret = put_u64(&h, t->offset);
    }
    if (ret < 0)
        goto out;
    if ((ret = out_put(w, h.p, h.len)) < 0)
        goto out;
    ret = out_zeros(w, align_up(h.len, w->alignment) - h.len);
    w->header_done = true;
    w->cur = 0;
    w->cur_written = 0;
out:
    ork_free(h.p);
    return ret;
}

int ork_gguf_writer_write(struct ork_gguf_writer *w, const void *data, size_t n)
{
    if (!w || (n && !data))
        return ork_errorf(ORK_EINVAL, "gguf writer: NULL argument");
    if (w->failed)
        return w->failed;
    int ret;
    if (!w->header_done && (ret = write_header(w)) < 0)
        return ret;
    const uint8_t *p = data;
    while (n) {
        if (w->cur >= w->n_t)
            return ork_errorf(ORK_EINVAL, "gguf writer: %zu bytes past the last tensor", n);
        struct wtensor *t = &w->t[w->cur];
        uint64_t left = t->nbytes - w->cur_written;
        size_t k = left < n ? (size_t)left : n;
        if ((ret = out_put(w, p, k)) < 0)
            return ret;
        p += k;
        n -= k;
        w->cur_written += k;
        if (w->cur_written == t->nbytes) {
            /* Pad to the next tensor's offset (none after the last one). */
            if (w->cur + 1 < w->n_t &&
                (ret = out_zeros(w, w->t[w->cur + 1].offset - (t->offset + t->nbytes))) < 0)
                return ret;
            w->cur++;
            w->cur_written = 0;
        }
    }
    return 0;
}

int ork_gguf_writer_finish(struct ork_gguf_writer *w)
{
    if (!w)
        return ork_errorf(ORK_EINVAL, "gguf writer: NULL argument");
    if (w->failed)
        return w->failed;
    int ret;
    if (!w->header_done && (ret = write_header(w)) < 0)
        return ret;
    if (w->cur < w->n_t)
        return ork_errorf(ORK_EINVAL, "gguf writer: tensor '%s' has %llu of %llu bytes written",
                          w->t[w->cur].name, (unsigned long long)w->cur_written,
                          (unsigned long long)w->t[w->cur].nbytes);
    if ((ret = out_flush(w)) < 0)
        return ret;
    if (close(w->fd) < 0) {
        w->fd = -1;
        return ork_errorf(ORK_EIO, "gguf writer: close '%s': %s", w->path, strerror(errno));
    }
    w->fd = -1;
    w->finished = true;
    return 0;
}

uint64_t ork_gguf_writer_bytes(const struct ork_gguf_writer *w)
{
    return w ? w->file_bytes : 0;
}
