/* test_topology.c -- the async worker's placement policy on injected topologies (no threads):
 * a big core other than the caller's, the highest-numbered one; never a little core when big
 * cores are known; -1 rather than the caller's core; any other CPU when all are equal. And the
 * detected topology of this machine is usable. */
#include "ork_test.h"

#include <ork/error.h>
#include <ork/sched.h>

/* RK3588: CPUs 0-3 A55 (cpu_capacity ~414), 4-5 and 6-7 A76 (1024 / ~1021 per cluster). */
static const struct ork_cpu_topology rk3588 = {
    .n_cpus = 8, .capacity = { 414, 414, 414, 414, 1024, 1024, 1021, 1021 } };

static void test_rk3588(void)
{
    for (int caller = -1; caller < 8; caller++) {
        int w = ork_cpu_topology_pick_worker(&rk3588, caller);
        CHECK(w >= 4 && w <= 7);                 /* never a little core */
        CHECK(w != caller);
    }
    CHECK_EQ_INT(ork_cpu_topology_pick_worker(&rk3588, 7), 6);
    CHECK_EQ_INT(ork_cpu_topology_pick_worker(&rk3588, 2), 7);
}

static void test_equal_and_degenerate(void)
{
    struct ork_cpu_topology eq = { .n_cpus = 4, .capacity = { 1, 1, 1, 1 } };
    for (int caller = 0; caller < 4; caller++) {
        int w = ork_cpu_topology_pick_worker(&eq, caller);
        CHECK(w >= 0 && w < 4 && w != caller);
    }
    struct ork_cpu_topology one_big = { .n_cpus = 3, .capacity = { 400, 1024, 400 } };
    CHECK_EQ_INT(ork_cpu_topology_pick_worker(&one_big, 1), -1);
    CHECK_EQ_INT(ork_cpu_topology_pick_worker(&one_big, 0), 1);
    struct ork_cpu_topology offline = { .n_cpus = 3, .capacity = { 1024, 0, 1024 } };
    CHECK_EQ_INT(ork_cpu_topology_pick_worker(&offline, 2), 0);
    struct ork_cpu_topology single = { .n_cpus = 1, .capacity = { 1024 } };
    CHECK_EQ_INT(ork_cpu_topology_pick_worker(&single, 0), -1);
    CHECK_EQ_INT(ork_cpu_topology_pick_worker(NULL, 0), -1);
}

static void test_detect(void)
{
    struct ork_cpu_topology t;
    REQUIRE(ork_cpu_topology_detect(&t) == 0);
    CHECK(t.n_cpus >= 1 && t.n_cpus <= ORK_TOPO_MAX_CPUS);
    uint32_t usable = 0;
    for (uint32_t i = 0; i < t.n_cpus; i++)
        usable += t.capacity[i] > 0;
    CHECK(usable >= 1);
    CHECK(ork_cpu_topology_detect(NULL) == ORK_EINVAL);
}

int main(void)
{
    RUN(test_rk3588);
    RUN(test_equal_and_degenerate);
    RUN(test_detect);
    return ork_test_done();
}
