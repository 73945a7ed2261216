/* test_membw.c -- ork_membw_measure and the reader (ork-tooling/membw.h): every kernel reports
 * a positive, finite bandwidth with the asked threads, array size and runs; the reader keeps
 * its array (the size asked, rounded down to whole doubles) and its pool, and can be timed
 * again; bad arguments are refused. No speed is asserted (the machine is shared). */
#include <math.h>

#include <ork/error.h>
#include <ork-tooling/membw.h>

#include "ork_test.h"

#define SMALL_BYTES ((size_t)2 << 20)   /* small arrays keep the test quick */

static void test_measure(void)
{
    struct ork_membw_result r;
    REQUIRE(ork_membw_measure(2, SMALL_BYTES, 2, &r) == 0);
    CHECK_EQ_INT(r.n_threads, 2);
    CHECK_EQ_INT(r.array_bytes, SMALL_BYTES);
    CHECK_EQ_INT(r.n_runs, 2);
    for (int k = 0; k < ORK_MEMBW_COUNT; k++)
        CHECK(r.gbps[k] > 0 && isfinite(r.gbps[k]));
    CHECK_STR(ork_membw_kernel_name(ORK_MEMBW_READ), "read");
    CHECK_EQ_INT(ork_membw_measure(1, 1024, 1, &r), ORK_EINVAL);
    CHECK_EQ_INT(ork_membw_measure(1, SMALL_BYTES, 1, NULL), ORK_EINVAL);
}

static void test_reader(void)
{
    struct ork_membw_reader *rd = NULL;
    REQUIRE(ork_membw_reader_create(2, SMALL_BYTES + 5, &rd) == 0);
    REQUIRE(rd);
    CHECK_EQ_INT(ork_membw_reader_bytes(rd), SMALL_BYTES);
    CHECK_EQ_INT(ork_membw_reader_threads(rd), 2);
    for (int i = 0; i < 3; i++) {
        double g = ork_membw_reader_run(rd, i);     /* i = 0: the default runs */
        CHECK(g > 0 && isfinite(g));
    }
    ork_membw_reader_free(rd);
    ork_membw_reader_free(NULL);
    CHECK(ork_membw_reader_run(NULL, 1) == 0.0);
    CHECK_EQ_INT(ork_membw_reader_bytes(NULL), 0);
}

static void test_reader_errors(void)
{
    struct ork_membw_reader *rd = (struct ork_membw_reader *)&rd;
    CHECK_EQ_INT(ork_membw_reader_create(1, 4096, &rd), ORK_EINVAL);
    CHECK(rd == NULL);
    CHECK_EQ_INT(ork_membw_reader_create(1, SMALL_BYTES, NULL), ORK_EINVAL);
}

int main(void)
{
    RUN(test_measure);
    RUN(test_reader);
    RUN(test_reader_errors);
    return ork_test_done();
}
