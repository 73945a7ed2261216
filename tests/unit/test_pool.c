/* test_pool.c -- the persistent thread pool: every thread runs each job exactly once with the
 * right ith/nth, many runs in a row give correct sums, results of one run are visible to the
 * caller after ork_pool_run returns, threads = 1 and n <= 0 work, and a run allocates nothing;
 * the same with spinning off (spin_us = 0) and long; the spin/sleep transitions: idle workers
 * fall asleep after the spin bound and wake for the next run, runs separated by sleeps longer
 * than the bound, destroy while workers spin; ork_pool_run_shared does every item of a shared
 * counter exactly once and calls fn once per thread that was not released (and the caller
 * always). Run under ASan/TSan via the sanitizer builds. */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

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

static void check_pool_opts(int n, int spin_us, int runs)
{
    struct ork_pool *p = NULL;
    uint64_t created0 = ork_pool_threads_created();
    if (spin_us < 0) {
        REQUIRE(ork_pool_create(n, &p) == 0);
    } else {
        struct ork_pool_opts o = { .n_threads = n, .spin_us = spin_us };
        REQUIRE(ork_pool_create_opts(&o, &p) == 0);
        CHECK_EQ_INT(ork_pool_spin_us(p), spin_us);
    }
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

static void check_pool(int n, int runs) { check_pool_opts(n, -1, runs); }

static void test_pool_threads_1(void) { check_pool(1, 200); }
static void test_pool_threads_2(void) { check_pool(2, 2000); }
static void test_pool_threads_3(void) { check_pool(3, 2000); }
static void test_pool_threads_8(void) { check_pool(8, 300); }
static void test_pool_default(void)   { check_pool(0, 100); }
static void test_pool_nospin(void)    { check_pool_opts(2, 0, 2000); check_pool_opts(3, 0, 500); }
/* many back-to-back runs with a long spin (the workers poll between them) */
static void test_pool_longspin(void)  { check_pool_opts(2, 50000, 20000); }

static void sleep_ms(int ms)
{
    struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* Poll (up to ~5 s, a bound only a stuck pool reaches) until all workers of p wait on the
 * condvar. True if they did. */
static int wait_all_asleep(const struct ork_pool *p)
{
    struct ork_pool_stats st;
    for (int i = 0; i < 5000; i++) {
        ork_pool_get_stats(p, &st);
        if (st.workers_asleep == ork_pool_threads(p) - 1)
            return 1;
        sleep_ms(1);
    }
    return 0;
}

static void add_one_fn(void *ctx, int ith, int nth)
{
    (void)nth;
    int64_t *slots = ctx;
    slots[ith] += ith + 1;
}

/* Runs separated by idle periods much longer than the spin bound: after each idle period every
 * worker has gone to sleep (an idle pool does not keep polling), and the next run wakes them
 * all and completes correctly. */
static void check_sleep_wake(int n, int spin_us)
{
    struct ork_pool_opts o = { .n_threads = n, .spin_us = spin_us };
    struct ork_pool *p = NULL;
    REQUIRE(ork_pool_create_opts(&o, &p) == 0);
    int64_t slots[MAX_T] = { 0 };
    const int rounds = 6;
    struct ork_pool_stats st0, st1;
    ork_pool_get_stats(p, &st0);
    for (int r = 0; r < rounds; r++) {
        CHECK(wait_all_asleep(p));
        ork_pool_run(p, add_one_fn, slots);
        for (int t = 0; t < n; t++)
            CHECK(slots[t] == (int64_t)(r + 1) * (t + 1));
        sleep_ms(spin_us / 1000 * 3 + 5);
    }
    CHECK(wait_all_asleep(p));
    ork_pool_get_stats(p, &st1);
    CHECK(st1.runs - st0.runs == (uint64_t)rounds);
    /* each worker went to sleep after every run (the sleep before the first may predate st0) */
    CHECK(st1.worker_sleeps - st0.worker_sleeps >= (uint64_t)rounds * (uint64_t)(n - 1));
    ork_pool_destroy(p);
}

static void test_pool_sleep_wake(void)
{
    check_sleep_wake(2, 0);
    check_sleep_wake(2, 1000);
    check_sleep_wake(4, 2000);
}

/* Bursts of back-to-back runs separated by idle periods: alternating spin and sleep phases. */
static void test_pool_bursts(void)
{
    struct ork_pool_opts o = { .n_threads = 3, .spin_us = 500 };
    struct ork_pool *p = NULL;
    REQUIRE(ork_pool_create_opts(&o, &p) == 0);
    int64_t slots[MAX_T] = { 0 };
    int64_t runs = 0;
    for (int b = 0; b < 5; b++) {
        for (int i = 0; i < 300; i++, runs++)
            ork_pool_run(p, add_one_fn, slots);
        for (int t = 0; t < 3; t++)
            CHECK(slots[t] == runs * (t + 1));
        sleep_ms(b % 2 ? 10 : 0);
    }
    ork_pool_destroy(p);
}

/* Destroying while the workers poll for the next run (right after a run, long spin) stops
 * them at once; so does destroying a pool whose workers sleep. */
static void test_pool_destroy_while_spinning(void)
{
    for (int i = 0; i < 20; i++) {
        struct ork_pool_opts o = { .n_threads = 3, .spin_us = ORK_POOL_SPIN_US_MAX };
        struct ork_pool *p = NULL;
        REQUIRE(ork_pool_create_opts(&o, &p) == 0);
        int64_t slots[MAX_T] = { 0 };
        ork_pool_run(p, add_one_fn, slots);
        CHECK(slots[2] == 3);
        ork_pool_destroy(p);
    }
    struct ork_pool_opts o = { .n_threads = 2, .spin_us = 0 };
    struct ork_pool *p = NULL;
    REQUIRE(ork_pool_create_opts(&o, &p) == 0);
    CHECK(wait_all_asleep(p));
    ork_pool_destroy(p);
}

static void test_pool_opts(void)
{
    struct ork_pool *p = NULL;
    REQUIRE(ork_pool_create_opts(NULL, &p) == 0);       /* all defaults */
    CHECK(ork_pool_threads(p) >= 1);
    CHECK_EQ_INT(ork_pool_spin_us(p), ORK_POOL_SPIN_US_DEFAULT);
    ork_pool_destroy(p);
    REQUIRE(ork_pool_create(2, &p) == 0);
    CHECK_EQ_INT(ork_pool_spin_us(p), ORK_POOL_SPIN_US_DEFAULT);
    ork_pool_destroy(p);
    struct ork_pool_opts o = { .n_threads = 2, .spin_us = -5 };
    REQUIRE(ork_pool_create_opts(&o, &p) == 0);
    CHECK_EQ_INT(ork_pool_spin_us(p), ORK_POOL_SPIN_US_DEFAULT);
    ork_pool_destroy(p);
    p = NULL;
    o.spin_us = ORK_POOL_SPIN_US_MAX + 1;
    CHECK_EQ_INT(ork_pool_create_opts(&o, &p), ORK_EINVAL);
    CHECK(p == NULL);
    CHECK_EQ_INT(ork_pool_spin_us(NULL), 0);
    struct ork_pool_stats st;
    ork_pool_get_stats(NULL, &st);
    CHECK(st.runs == 0 && st.workers_asleep == 0);
}

/* ---- ork_pool_run_shared ---- */

#define SHARED_ITEMS 997

struct shared_job {
    atomic_int next;
    atomic_int hits[SHARED_ITEMS];
    atomic_int calls[MAX_T];
    int spin_per_item;          /* busy work per item (volatile loop iterations) */
};

static void shared_fn(void *ctx, int ith, int nth)
{
    struct shared_job *j = ctx;
    (void)nth;
    atomic_fetch_add(&j->calls[ith], 1);
    for (int it; (it = atomic_fetch_add(&j->next, 1)) < SHARED_ITEMS;) {
        for (volatile int k = 0; k < j->spin_per_item; k++) {
        }
        atomic_fetch_add(&j->hits[it], 1);
    }
}

/* One shared run on a fresh stack frame (the job dies when it returns, so a released worker
 * that still touched it would be caught by the sanitizer builds); returns the calls made. */
static int shared_run_once(struct ork_pool *p, int spin_per_item, int *bad_items)
{
    struct shared_job j;
    memset(&j, 0, sizeof j);
    j.spin_per_item = spin_per_item;
    ork_pool_run_shared(p, shared_fn, &j);
    int calls = 0;
    for (int t = 0; t < MAX_T; t++) {
        int c = atomic_load(&j.calls[t]);
        if (c > 1 || (t >= ork_pool_threads(p) && c))
            (*bad_items)++;
        calls += c;
    }
    if (atomic_load(&j.calls[0]) != 1)
        (*bad_items)++;         /* the caller always runs */
    for (int i = 0; i < SHARED_ITEMS; i++)
        if (atomic_load(&j.hits[i]) != 1)
            (*bad_items)++;
    return calls;
}

/* Every item exactly once; calls = runs * nth - released (each worker either ran or was
 * released, never both); nothing allocated. With spin 0 the workers sleep between runs, so
 * with tiny items the caller finishes before they wake and releases them (at least sometimes:
 * a wake-up takes microseconds, the whole job well under one); with long items they join. */
static void check_shared(int n, int spin_us, int spin_per_item, int runs, int want_released)
{
    struct ork_pool_opts o = { .n_threads = n, .spin_us = spin_us };
    struct ork_pool *p = NULL;
    REQUIRE(ork_pool_create_opts(&o, &p) == 0);
    struct ork_pool_stats st0, st1;
    ork_pool_get_stats(p, &st0);
    uint64_t allocs = ork_alloc_count();
    int bad = 0;
    int64_t calls = 0;
    for (int r = 0; r < runs; r++)
        calls += shared_run_once(p, spin_per_item, &bad);
    CHECK(ork_alloc_count() == allocs);
    ork_pool_get_stats(p, &st1);
    CHECK_EQ_INT(bad, 0);
    uint64_t released = st1.workers_released - st0.workers_released;
    CHECK(calls == (int64_t)runs * n - (int64_t)released);
    CHECK(st1.runs - st0.runs == (uint64_t)(n > 1 ? runs : 0));
    if (want_released)
        CHECK(released > 0);
    /* plain runs on the same pool still run every thread */
    int64_t slots[MAX_T] = { 0 };
    ork_pool_run(p, add_one_fn, slots);
    for (int t = 0; t < n; t++)
        CHECK(slots[t] == t + 1);
    ork_pool_destroy(p);
}

static void test_pool_shared(void)
{
    check_shared(1, -1, 0, 50, 0);
    check_shared(2, 0, 0, 300, 1);
    check_shared(3, 0, 0, 300, 1);
    check_shared(2, -1, 0, 3000, 0);
    check_shared(2, -1, 2000, 300, 0);
    check_shared(4, 1000, 500, 300, 0);
    struct shared_job j;
    memset(&j, 0, sizeof j);
    ork_pool_run_shared(NULL, shared_fn, &j);       /* no pool: inline, all items */
    CHECK(atomic_load(&j.calls[0]) == 1 && atomic_load(&j.next) > SHARED_ITEMS);
}

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
    RUN(test_pool_nospin);
    RUN(test_pool_longspin);
    RUN(test_pool_sleep_wake);
    RUN(test_pool_bursts);
    RUN(test_pool_destroy_while_spinning);
    RUN(test_pool_opts);
    RUN(test_pool_caller_is_thread_0);
    RUN(test_pool_null_and_errors);
    RUN(test_pool_oom);
    RUN(test_pool_scratch);
    RUN(test_pool_shared);
    return ork_test_done();
}
