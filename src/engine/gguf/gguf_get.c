/* gguf_get.c -- the GGUF reader's accessors and typed getters: header facts, kv and tensor
 * tables by index, and metadata values by key with type and range checks (docs/gguf.md). */
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

static bool type_is_signed(enum ork_gguf_type t)
{
    return t == ORK_GGUF_INT8 || t == ORK_GGUF_INT16 || t == ORK_GGUF_INT32 || t == ORK_GGUF_INT64;
}

static bool type_is_unsigned(enum ork_gguf_type t)
{
    return t == ORK_GGUF_UINT8 || t == ORK_GGUF_UINT16 || t == ORK_GGUF_UINT32 ||
           t == ORK_GGUF_UINT64;
}

/* --- accessors ------------------------------------------------------------------------------- */

uint32_t ork_gguf_version(const struct ork_gguf *g) { return g->version; }
uint32_t ork_gguf_alignment(const struct ork_gguf *g) { return g->alignment; }
uint64_t ork_gguf_file_size(const struct ork_gguf *g) { return g->size; }
uint64_t ork_gguf_data_offset(const struct ork_gguf *g) { return g->data_offset; }
const void *ork_gguf_base(const struct ork_gguf *g) { return g->base; }
uint64_t ork_gguf_n_kv(const struct ork_gguf *g) { return g->n_kv; }
uint64_t ork_gguf_n_tensors(const struct ork_gguf *g) { return g->n_tensors; }

const struct ork_gguf_kv *ork_gguf_kv_at(const struct ork_gguf *g, uint64_t i)
{
    return g && i < g->n_kv ? &g->kvs[i] : NULL;
}

const struct ork_gguf_tensor *ork_gguf_tensor_at(const struct ork_gguf *g, uint64_t i)
{
    return g && i < g->n_tensors ? &g->tensors[i] : NULL;
}

/* --- typed getters --------------------------------------------------------------------------- */

static int lookup(const struct ork_gguf *g, const char *key, const struct ork_gguf_kv **kv)
{
    if (!g || !key)
        return ork_errorf(ORK_EINVAL, "gguf: get: NULL argument");
    *kv = ork_gguf_kv_find(g, key);
    return *kv ? 0 : ORK_ENOENT;
}

/* Integer getter core: accept any integer type whose value lies in [lo, hi]. */
static int get_int(const struct ork_gguf *g, const char *key, int64_t lo, uint64_t hi,
                   const char *want, uint64_t *uout, int64_t *iout)
{
    const struct ork_gguf_kv *kv = NULL;
    int ret = lookup(g, key, &kv);
    if (ret < 0)
        return ret;
    enum ork_gguf_type t = kv->value.type;
    if (type_is_unsigned(t)) {
        uint64_t v = kv->value.v.u64;
        if (v > hi)
            return ork_errorf(ORK_EFORMAT, "gguf: key '%s': value %llu (%s) does not fit in %s", key,
                              (unsigned long long)v, ork_gguf_type_name(t), want);
        *uout = v;
        *iout = (int64_t)v;  /* hi <= INT64_MAX for signed callers */
        return 0;
    }
    if (type_is_signed(t)) {
        int64_t v = kv->value.v.i64;
        if (v < lo || (v >= 0 && (uint64_t)v > hi))
            return ork_errorf(ORK_EFORMAT, "gguf: key '%s': value %lld (%s) does not fit in %s", key,
                              (long long)v, ork_gguf_type_name(t), want);
        *uout = (uint64_t)v;
        *iout = v;
        return 0;
    }
    return ork_errorf(ORK_EFORMAT, "gguf: key '%s' has type %s, expected an integer (%s)", key,
                      ork_gguf_type_name(t), want);
}

int ork_gguf_get_u32(const struct ork_gguf *g, const char *key, uint32_t *out)
{
    uint64_t u = 0;
    int64_t i = 0;
    int ret = get_int(g, key, 0, UINT32_MAX, "u32", &u, &i);
    if (ret == 0)
        *out = (uint32_t)u;
    return ret;
}

int ork_gguf_get_u64(const struct ork_gguf *g, const char *key, uint64_t *out)
{
    uint64_t u = 0;
    int64_t i = 0;
    int ret = get_int(g, key, 0, UINT64_MAX, "u64", &u, &i);
    if (ret == 0)
        *out = u;
    return ret;
}

int ork_gguf_get_i32(const struct ork_gguf *g, const char *key, int32_t *out)
{
    uint64_t u = 0;
    int64_t i = 0;
    int ret = get_int(g, key, INT32_MIN, INT32_MAX, "i32", &u, &i);
    if (ret == 0)
        *out = (int32_t)i;
    return ret;
}

int ork_gguf_get_f32(const struct ork_gguf *g, const char *key, float *out)
{
    const struct ork_gguf_kv *kv = NULL;
    int ret = lookup(g, key, &kv);
    if (ret < 0)
        return ret;
    if (kv->value.type != ORK_GGUF_FLOAT32 && kv->value.type != ORK_GGUF_FLOAT64)
        return ork_errorf(ORK_EFORMAT, "gguf: key '%s' has type %s, expected f32 or f64", key,
                          ork_gguf_type_name(kv->value.type));
    *out = (float)kv->value.v.f64;
    return 0;
}

int ork_gguf_get_bool(const struct ork_gguf *g, const char *key, bool *out)
{
    const struct ork_gguf_kv *kv = NULL;
    int ret = lookup(g, key, &kv);
    if (ret < 0)
        return ret;
    if (kv->value.type != ORK_GGUF_BOOL)
        return ork_errorf(ORK_EFORMAT, "gguf: key '%s' has type %s, expected bool", key,
                          ork_gguf_type_name(kv->value.type));
    *out = kv->value.v.u64 != 0;
    return 0;
}

int ork_gguf_get_str(const struct ork_gguf *g, const char *key, struct ork_gguf_str *out)
{
    const struct ork_gguf_kv *kv = NULL;
    int ret = lookup(g, key, &kv);
    if (ret < 0)
        return ret;
    if (kv->value.type != ORK_GGUF_STRING)
        return ork_errorf(ORK_EFORMAT, "gguf: key '%s' has type %s, expected str", key,
                          ork_gguf_type_name(kv->value.type));
    *out = kv->value.v.str;
    return 0;
}

int ork_gguf_get_arr(const struct ork_gguf *g, const char *key, enum ork_gguf_type want,
                     const struct ork_gguf_array **out)
{
    const struct ork_gguf_kv *kv = NULL;
    int ret = lookup(g, key, &kv);
    if (ret < 0)
        return ret;
    if (kv->value.type != ORK_GGUF_ARRAY)
        return ork_errorf(ORK_EFORMAT, "gguf: key '%s' has type %s, expected an array%s%s", key,
                          ork_gguf_type_name(kv->value.type), want == ORK_GGUF_TYPE_COUNT ? "" : " of ",
                          want == ORK_GGUF_TYPE_COUNT ? "" : ork_gguf_type_name(want));
    if (want != ORK_GGUF_TYPE_COUNT && kv->value.v.arr.type != want)
        return ork_errorf(ORK_EFORMAT, "gguf: key '%s' is an array of %s, expected an array of %s",
                          key, ork_gguf_type_name(kv->value.v.arr.type), ork_gguf_type_name(want));
    *out = &kv->value.v.arr;
    return 0;
}

/* --- array element readers ------------------------------------------------------------------- */

int64_t ork_gguf_arr_i64(const struct ork_gguf_array *a, uint64_t i)
{
    if (!a || i >= a->n || !a->raw)
        return 0;
    unsigned sz = ork__gguf_scalar_size(a->type);
    if (!type_is_signed(a->type) && !type_is_unsigned(a->type) && a->type != ORK_GGUF_BOOL)
        return 0;
    struct ork_gguf_value v;
    ork__gguf_decode_scalar(a->type, a->raw + i * sz, &v);
    return type_is_signed(a->type) ? v.v.i64 : (int64_t)v.v.u64;
}

double ork_gguf_arr_f64(const struct ork_gguf_array *a, uint64_t i)
{
    if (!a || i >= a->n || !a->raw)
        return 0.0;
    unsigned sz = ork__gguf_scalar_size(a->type);
    if (sz == 0)
        return 0.0;
    struct ork_gguf_value v;
    ork__gguf_decode_scalar(a->type, a->raw + i * sz, &v);
    if (a->type == ORK_GGUF_FLOAT32 || a->type == ORK_GGUF_FLOAT64)
        return v.v.f64;
    return type_is_signed(a->type) ? (double)v.v.i64 : (double)v.v.u64;
}
