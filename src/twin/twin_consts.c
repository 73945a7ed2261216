/* twin_consts.c -- the twin's one table of constants: defaults, names, units, sources (all in
 * the X-macro ORK_TWIN_CONSTS of include/ork/twin.h), lookup by name and the range check
 * every override goes through. The values themselves are justified in docs/twin.md. */
#include <ork/error.h>
#include "twin_priv.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

/* The ORK_TWIN_A76_* defaults of the matmul constants come from tools/a76_cost.tsv as compile
 * definitions (cmake/twin_a76_cost.cmake). */
#ifndef ORK_TWIN_A76_Q8_0_M1
#error "ORK_TWIN_A76_*: build the twin with cmake/twin_a76_cost.cmake's definitions"
#endif

static const struct ork_twin_const_info twin_table[] = {
#define ORK_TWIN_INFO_(nm, un, df, kd, src) \
    { .name = #nm, .unit = un, .source = src, .def = df, .kind = ORK_TWIN_K_##kd, \
      .offset = offsetof(struct ork_twin_consts, nm) },
    ORK_TWIN_CONSTS(ORK_TWIN_INFO_)
#undef ORK_TWIN_INFO_
};

#define TWIN_N (sizeof(twin_table) / sizeof(twin_table[0]))

const struct ork_twin_const_info *ork_twin_consts_table(size_t *n)
{
    if (n)
        *n = TWIN_N;
    return twin_table;
}

static double *field(struct ork_twin_consts *c, const struct ork_twin_const_info *e)
{
    return (double *)(void *)((char *)c + e->offset);
}

static double field_get(const struct ork_twin_consts *c, const struct ork_twin_const_info *e)
{
    double v;
    memcpy(&v, (const char *)c + e->offset, sizeof v);
    return v;
}

void ork_twin_consts_default(struct ork_twin_consts *c)
{
    for (size_t i = 0; i < TWIN_N; i++)
        *field(c, &twin_table[i]) = twin_table[i].def;
}

const struct ork_twin_const_info *ork__twin_const_find(const char *name)
{
    for (size_t i = 0; i < TWIN_N; i++)
        if (strcmp(twin_table[i].name, name) == 0)
            return &twin_table[i];
    return NULL;
}

int ork__twin_const_validate(const struct ork_twin_const_info *e, double v)
{
    if (!isfinite(v))
        return ork_errorf(ORK_ERANGE, "twin constant '%s': value is not finite", e->name);
    switch (e->kind) {
    case ORK_TWIN_K_POS:
        if (!(v > 0))
            return ork_errorf(ORK_ERANGE, "twin constant '%s': %.17g must be > 0 (%s)", e->name,
                              v, e->unit);
        break;
    case ORK_TWIN_K_NONNEG:
        if (v < 0)
            return ork_errorf(ORK_ERANGE, "twin constant '%s': %.17g must be >= 0 (%s)", e->name,
                              v, e->unit);
        break;
    case ORK_TWIN_K_CPUS:
    case ORK_TWIN_K_NPUS: {
        double max = e->kind == ORK_TWIN_K_CPUS ? ORK_TWIN_MAX_CPU : ORK_TWIN_MAX_NPU;
        if (v != floor(v) || v < 1 || v > max)
            return ork_errorf(ORK_ERANGE, "twin constant '%s': %.17g must be a whole number "
                              "of cores in 1..%g", e->name, v, max);
        break;
    }
    }
    return 0;
}

int ork_twin_consts_get(const struct ork_twin_consts *c, const char *name, double *v)
{
    const struct ork_twin_const_info *e = name ? ork__twin_const_find(name) : NULL;
    if (!e)
        return ork_errorf(ORK_ENOENT, "twin constant '%s': unknown", name ? name : "(null)");
    *v = field_get(c, e);
    return 0;
}

int ork_twin_consts_set(struct ork_twin_consts *c, const char *name, double v)
{
    const struct ork_twin_const_info *e = name ? ork__twin_const_find(name) : NULL;
    if (!e)
        return ork_errorf(ORK_ENOENT, "twin constant '%s': unknown", name ? name : "(null)");
    int ret = ork__twin_const_validate(e, v);
    if (ret < 0)
        return ret;
    *field(c, e) = v;
    return 0;
}

int ork_twin_consts_check(const struct ork_twin_consts *c)
{
    for (size_t i = 0; i < TWIN_N; i++) {
        int ret = ork__twin_const_validate(&twin_table[i], field_get(c, &twin_table[i]));
        if (ret < 0)
            return ret;
    }
    return 0;
}
