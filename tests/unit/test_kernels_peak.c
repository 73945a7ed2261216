/* test_kernels_peak.c -- ork_cpu_peak_measure: every kernel path available here reports the
 * instruction it timed and a positive, finite rate for it (zero and "none" where the path has
 * no such instruction, as the scalar path), with the pool's thread count; NULL out is refused.
 * No speed is asserted (the machine is shared). */
#include <math.h>
#include <string.h>

#include <ork/error.h>
#include <ork-kernels/kernels.h>
#include <ork-tooling/peak.h>
#include <ork-kernels/pool.h>

#include "ork_test.h"

#define PEAK_MS 10

static void check_result(const struct ork_cpu_peak *p, int threads, const char *path)
{
    CHECK_EQ_INT(p->threads, threads);
    REQUIRE(p->f32_insn && p->int8_insn);
    if (!strcmp(path, "scalar")) {
        CHECK(p->f32_flops == 0 && p->int8_ops == 0);
        CHECK(!strcmp(p->f32_insn, "none") && !strcmp(p->int8_insn, "none"));
        return;
    }
    CHECK(strcmp(p->f32_insn, "none") != 0);
    CHECK(p->f32_flops > 0 && isfinite(p->f32_flops));
    if (strcmp(p->int8_insn, "none"))
        CHECK(p->int8_ops > 0 && isfinite(p->int8_ops));
    else
        CHECK(p->int8_ops == 0);
}

static void test_paths(void)
{
    struct ork_pool *pool = NULL;
    REQUIRE(ork_pool_create(2, &pool) == 0);
    for (int i = 0; ork_kernels_path_name(i); i++) {
        const char *name = ork_kernels_path_name(i);
        if (ork_kernels_set_path(name) < 0)
            continue;           /* not available on this CPU */
        struct ork_cpu_peak p;
        REQUIRE(ork_cpu_peak_measure(NULL, PEAK_MS, &p) == 0);
        check_result(&p, 1, name);
        REQUIRE(ork_cpu_peak_measure(pool, PEAK_MS, &p) == 0);
        check_result(&p, 2, name);
        printf("     %-12s f32 %-16s %7.1f G/s   int8 %-24s %7.1f G/s (2 threads)\n", name,
               p.f32_insn, p.f32_flops / 1e9, p.int8_insn, p.int8_ops / 1e9);
    }
    ork_kernels_set_path(NULL);
    ork_pool_destroy(pool);
}

static void test_errors(void)
{
    CHECK_EQ_INT(ork_cpu_peak_measure(NULL, PEAK_MS, NULL), ORK_EINVAL);
}

int main(void)
{
    RUN(test_paths);
    RUN(test_errors);
    return ork_test_done();
}
