/* test_pool.c -- the persistent thread pool: every thread runs each job exactly once with the
 * right ith/nth, many runs in a row give correct sums, results of one run are visible to the
 * caller after ork_pool_run returns, threads = 1 and n <= 0 work, and a run allocates nothing.
 * Run under ASan/TSan via the sanitizer builds. */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork-kernels/pool.h>

#include "ork_test.h"

#define MAX_T 8
#define DATA_N 10007

struct sum_job {
    const int64_t *data;
    int64_t partial[MAX_T];     /* written by thread ith only */
    int seen_nth[MAX_T];
    atomic_int calls;
};

static void sum_fn(void *ctx, int ith, int nth)
{
    struct sum_job *j = ctx;
    int64_t per = (DATA_N + nth - 1) / nth, s = 0;
    int64_t a = per * ith, b = a + per < DATA_N ? a + per : DATA_N;
    for (int64_t i = a; i < b; i++)
        s += j->data[i];
    j->partial[ith] += s;
    j->seen_nth[ith] = nth;
    atomic_fetch_add(&j->calls, 1);
}

static int64_t data[DATA_N];

static void check_pool(int n, int runs)
{
    struct ork_pool *p = NULL;
    uint64_t created0 = ork_pool_threads_created();
    REQUIRE(ork_pool_create(n, &p) == 0);
    int nth = ork_pool_threads(p);
    CHECK(ork_pool_threads_created() == created0 + (uint64_t)(nth - 1));
    if (n > 0)
        CHECK_EQ_INT(nth, n);
    else
        CHECK(nth >= 1);
    REQUIRE(nth <= MAX_T);
    int64_t want = 0;
    for (int i = 0; i < DATA_N; i++)
        want += data[i];
    struct sum_job j;
    memset(&j, 0, sizeof j);
    j.data = data;
    atomic_init(&j.calls, 0);
    uint64_t allocs = ork_alloc_count();
    uint64_t created = ork_pool_threads_created();
    int bad = 0;
    for (int r = 0; r < runs; r++) {
        int64_t before = 0;
        for (int t = 0; t < nth; t++)
            before += j.partial[t];
        ork_pool_run(p, sum_fn, &j);
        int64_t after = 0;
        for (int t = 0; t < nth; t++)
            after += j.partial[t];
        if (after - before != want)
            bad++;
    }
    CHECK(ork_alloc_count() == allocs);
    CHECK(ork_pool_threads_created() == created);       /* runs start no thread */
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(atomic_load(&j.calls), runs * nth);
    for (int t = 0; t < nth; t++)
        CHECK_EQ_INT(j.seen_nth[t], nth);
    ork_pool_destroy(p);
}

static void test_pool_threads_1(void) { check_pool(1, 200); }
static void test_pool_threads_2(void) { check_pool(2, 2000); }
static void test_pool_threads_3(void) { check_pool(3, 2000); }
static void test_pool_threads_8(void) { check_pool(8, 300); }
static void test_pool_default(void)   { check_pool(0, 100); }

/* The caller is thread 0. */
static _Thread_local int tl_marker;
static void mark_fn(void *ctx, int ith, int nth)
{
    int *who = ctx;
    if (ith == 0)
        *who = tl_marker;
}

static void test_pool_caller_is_thread_0(void)
{
    struct ork_pool *p;
    REQUIRE(ork_pool_create(3, &p) == 0);
    tl_marker = 1234;
    int who = 0;
    ork_pool_run(p, mark_fn, &who);
    CHECK_EQ_INT(who, 1234);
    ork_pool_destroy(p);
}

static void test_pool_null_and_errors(void)
{
    CHECK_EQ_INT(ork_pool_threads(NULL), 1);
    int who = 0;
    tl_marker = 7;
    ork_pool_run(NULL, mark_fn, &who);       /* runs inline */
    CHECK_EQ_INT(who, 7);
    ork_pool_destroy(NULL);
    struct ork_pool *p = NULL;
    CHECK_EQ_INT(ork_pool_create(100000, &p), ORK_EINVAL);
    CHECK(p == NULL);
    /* create/destroy cycles without running anything */
    for (int i = 0; i < 20; i++) {
        REQUIRE(ork_pool_create(3, &p) == 0);
        ork_pool_destroy(p);
    }
}

static void test_pool_oom(void)
{
    struct ork_pool *p = NULL;
    ork_alloc_fail_after(1);
    CHECK_EQ_INT(ork_pool_create(3, &p), ORK_ENOMEM);
    ork_alloc_fail_after(2);
    CHECK_EQ_INT(ork_pool_create(3, &p), ORK_ENOMEM);
    ork_alloc_fail_after(0);
    CHECK(p == NULL);
}

/* The pool's scratch: aligned, grown only for a larger request (one allocation each time),
 * kept for smaller ones, NULL without a pool or when memory is short (the old buffer stays). */
static void test_pool_scratch(void)
{
    CHECK(ork_pool_scratch(NULL, 16) == NULL);
    struct ork_pool *p = NULL;
    REQUIRE(ork_pool_create(2, &p) == 0);
    uint8_t *a = ork_pool_scratch(p, 1000);
    REQUIRE(a != NULL);
    CHECK((uintptr_t)a % 64 == 0);
    memset(a, 0x5a, 1000);
    uint64_t before = ork_alloc_count();
    CHECK(ork_pool_scratch(p, 1000) == a);
    CHECK(ork_pool_scratch(p, 10) == a);
    CHECK(ork_pool_scratch(p, 1024) == a);      /* rounded up to whole cache lines */
    CHECK(ork_alloc_count() == before);
    uint8_t *b = ork_pool_scratch(p, 1 << 20);
    REQUIRE(b != NULL);
    CHECK((uintptr_t)b % 64 == 0);
    memset(b, 1, 1 << 20);
    ork_alloc_fail_after(1);
    CHECK(ork_pool_scratch(p, 2 << 20) == NULL);
    ork_alloc_fail_after(0);
    CHECK(ork_pool_scratch(p, 1 << 20) == b);
    CHECK(ork_pool_scratch(p, SIZE_MAX) == NULL);
    ork_pool_destroy(p);
}

int main(void)
{
    for (int i = 0; i < DATA_N; i++)
        data[i] = (int64_t)i * 7919 % 1000003 - 500000;
    RUN(test_pool_threads_1);
    RUN(test_pool_threads_2);
    RUN(test_pool_threads_3);
    RUN(test_pool_threads_8);
    RUN(test_pool_default);
    RUN(test_pool_caller_is_thread_0);
    RUN(test_pool_null_and_errors);
    RUN(test_pool_oom);
    RUN(test_pool_scratch);
    return ork_test_done();
}
