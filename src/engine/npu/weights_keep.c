/* weights_keep.c -- the NPU tensors a coarse setting keeps on int8 (ork_npu_weights_opts
 * .int8_tensors, CLI --npu-weights-int8 SPEC; docs/w4a8.md "Mixed precision").
 *
 * SPEC is a comma-separated list of items CLASS or CLASS:LAYERS. CLASS is a tensor class of
 * the load report (qkv, o, gate_up, down: the layer ops of model_priv.h; output: the LM head)
 * or `all` (every layer op, and the LM head when no layers are given). LAYERS is one layer L
 * or an inclusive range A..B, 0-based, a negative index counting from the end (-1 = the last
 * layer). `output` takes no layers. Every tensor an item names keeps per-channel int8 codes
 * ([-127, 127], as --npu-weights int8 makes them) under dcomp and w4a8; the rest take the
 * setting's codes. Syntax errors are found without a model (ork__npu_keep_check), layers
 * outside a model's when it loads (ork__npu_keep_check_layers). */
#include "npu_priv.h"

#include <ork/error.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A SPEC longer than this is refused (a few dozen items at most make sense). */
#define KEEP_SPEC_MAX 512u

#define CLASS_NAME(id, name) name,
static const char *const keep_class[ORK__NPU_N_OPS] = { ORK__LAYER_OPS(CLASS_NAME) "output" };
#undef CLASS_NAME
#define KEEP_ALL ORK__NPU_N_OPS          /* the class `all` */

/* One parsed item: class (an enum ork__npu_op or KEEP_ALL), layers [a, b] (negative: from
 * the end) or every layer. */
struct keep_item {
    int cls;
    bool ranged;
    long a, b;
};

static bool parse_index(const char *s, const char *end, long *out)
{
    char buf[24];
    size_t n = (size_t)(end - s);
    if (!n || n >= sizeof buf)
        return false;
    memcpy(buf, s, n);
    buf[n] = 0;
    char *e;
    errno = 0;
    long v = strtol(buf, &e, 10);
    if (errno || *e || e == buf || v < -(long)ORK__NPU_KEEP_MAX_LAYERS ||
        v >= (long)ORK__NPU_KEEP_MAX_LAYERS)
        return false;
    *out = v;
    return true;
}

/* Parse the item [s, end) into *it; ORK_EINVAL naming it. */
static int parse_item(const char *s, const char *end, struct keep_item *it)
{
    const char *colon = memchr(s, ':', (size_t)(end - s));
    const char *cend = colon ? colon : end;
    size_t cn = (size_t)(cend - s);
    int len = (int)(end - s);
    it->cls = -1;
    for (int c = 0; c < ORK__NPU_N_OPS; c++)
        if (strlen(keep_class[c]) == cn && !memcmp(s, keep_class[c], cn))
            it->cls = c;
    if (cn == 3 && !memcmp(s, "all", 3))
        it->cls = KEEP_ALL;
    if (it->cls < 0)
        return ork_errorf(ORK_EINVAL, "--npu-weights-int8: '%.*s' is not a tensor class (qkv, "
                          "o, gate_up, down, output or all, optionally :LAYER or :A..B)", len,
                          s);
    it->ranged = colon != NULL;
    if (!colon)
        return 0;
    if (it->cls == ORK__NPU_LM_HEAD)
        return ork_errorf(ORK_EINVAL, "--npu-weights-int8: '%.*s': output (the LM head) has "
                          "no layers", len, s);
    const char *l = colon + 1, *dots = NULL;
    for (const char *p = l; p + 1 < end; p++)
        if (p[0] == '.' && p[1] == '.') {
            dots = p;
            break;
        }
    bool ok = dots ? parse_index(l, dots, &it->a) && parse_index(dots + 2, end, &it->b)
                   : parse_index(l, end, &it->a);
    if (!dots)
        it->b = it->a;
    if (!ok)
        return ork_errorf(ORK_EINVAL, "--npu-weights-int8: '%.*s': layers must be L or A..B "
                          "(integers, negative from the last layer, |L| < %u)", len, s,
                          ORK__NPU_KEEP_MAX_LAYERS);
    if ((it->a >= 0) == (it->b >= 0) && it->a > it->b)
        return ork_errorf(ORK_EINVAL, "--npu-weights-int8: '%.*s': the range runs backwards",
                          len, s);
    return 0;
}

/* Call fn on every item of spec (0 or fn's first error; ORK_EINVAL for a syntax error). */
static int each_item(const char *spec, int (*fn)(const struct keep_item *, const char *, int,
                                                 void *),
                     void *arg)
{
    if (strlen(spec) > KEEP_SPEC_MAX)
        return ork_errorf(ORK_EINVAL, "--npu-weights-int8: longer than %u characters",
                          KEEP_SPEC_MAX);
    if (!*spec)
        return ork_errorf(ORK_EINVAL, "--npu-weights-int8: empty (a list such as "
                          "'output,down:0..1')");
    const char *s = spec;
    for (;;) {
        const char *end = strchr(s, ',');
        if (!end)
            end = s + strlen(s);
        if (end == s)
            return ork_errorf(ORK_EINVAL, "--npu-weights-int8 '%s': an empty item", spec);
        struct keep_item it = { .cls = -1 };
        int ret = parse_item(s, end, &it);
        if (ret == 0 && fn)
            ret = fn(&it, s, (int)(end - s), arg);
        if (ret < 0)
            return ret;
        if (!*end)
            return 0;
        s = end + 1;
    }
}

int ork__npu_keep_check(const struct ork_npu_weights_opts *o)
{
    if (!o->int8_tensors)
        return 0;
    if (o->encoding == ORK_NPU_WENC_INT8)
        return ork_errorf(ORK_EINVAL, "--npu-weights-int8 '%s' needs a coarser setting (dcomp "
                          "or w4a8): with int8 every tensor is int8", o->int8_tensors);
    return each_item(o->int8_tensors, NULL, NULL);
}

/* A layer index of an item resolved against n layers (negative: from the end). */
static long resolve(long i, int32_t n)
{
    return i < 0 ? (long)n + i : i;
}

static int layers_fit(const struct keep_item *it, const char *s, int len, void *arg)
{
    int32_t n = *(const int32_t *)arg;
    if (!it->ranged)
        return 0;
    long a = resolve(it->a, n), b = resolve(it->b, n);
    if (a < 0 || b >= n || a > b)
        return ork_errorf(ORK_EINVAL, "--npu-weights-int8: '%.*s' names layers outside the "
                          "model's 0..%d (or a range that is empty there)", len, s,
                          (int)n - 1);
    return 0;
}

int ork__npu_keep_check_layers(const struct ork_npu_weights_opts *o, int32_t n_layers)
{
    if (!o->int8_tensors)
        return 0;
    return each_item(o->int8_tensors, layers_fit, &n_layers);
}

struct keep_query {
    enum ork__npu_op op;
    int32_t layer, n_layers;
    bool hit;
};

static int item_hits(const struct keep_item *it, const char *s, int len, void *arg)
{
    (void)s;
    (void)len;
    struct keep_query *q = arg;
    bool head = q->op == ORK__NPU_LM_HEAD;
    if (it->cls != KEEP_ALL && it->cls != (int)q->op)
        return 0;
    if (!it->ranged)
        q->hit = true;
    else if (!head && q->layer >= resolve(it->a, q->n_layers) &&
             q->layer <= resolve(it->b, q->n_layers))
        q->hit = true;
    return 0;
}

bool ork__npu_keep_int8(const struct ork_npu_weights_opts *o, const struct pack_src *ps)
{
    if (!o || !o->int8_tensors || o->encoding == ORK_NPU_WENC_INT8)
        return false;
    struct keep_query q = { .op = ps->op, .layer = ps->layer, .n_layers = ps->n_layers };
    return each_item(o->int8_tensors, item_hits, &q) == 0 && q.hit;
}

uint32_t ork__npu_keep_id(const struct ork_npu_weights_opts *o)
{
    if (!o || !o->int8_tensors || o->encoding == ORK_NPU_WENC_INT8)
        return 0;
    uint32_t h = 2166136261u;               /* FNV-1a 32 over the spec as written */
    for (const unsigned char *p = (const unsigned char *)o->int8_tensors; *p; p++)
        h = (h ^ *p) * 16777619u;
    return h ? h : 1u;                      /* 0 means "none" in a pack */
}
