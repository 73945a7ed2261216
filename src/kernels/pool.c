/* pool.c -- a persistent thread pool: n - 1 worker threads created once, the caller's thread
 * acting as thread 0. A run publishes (fn, ctx), sets the pending count and bumps an atomic
 * generation counter; each worker runs fn once for the new generation and decrements pending.
 * Between runs a worker polls the generation for up to spin_us before sleeping on a condvar,
 * and the caller polls pending for up to spin_us before sleeping on another, so back-to-back
 * jobs (a decode token runs ~200) never enter the kernel, while an idle pool is asleep after
 * spin_us. Running allocates nothing and creates no thread. Runs must not overlap: one caller
 * thread at a time (the engine's decode thread). Not here: how work is split (the job does it
 * from ith/nth, or from a counter of its own for ork_pool_run_shared).
 *
 * Late workers (ork_pool_run_shared): each worker has a claim word holding the last generation
 * it was settled for. For generation g both the worker (when it sees g) and the caller (when
 * its own fn returns, i.e. the job's shared work is all taken) try to move the word from g - 1
 * to g with one compare-and-swap; the winner decides: the worker runs fn, or the caller counts
 * the worker as done without it. So a worker that is descheduled or still waking up when the
 * work runs out never holds up the caller, and fn/ctx are read only by a worker that won. Plain
 * runs never claim, so every worker runs fn.
 *
 * Sleeping without lost wake-ups: a sleeper announces itself (a seq_cst increment of asleep /
 * caller_asleep) under the mutex and re-checks the condition before waiting; the waker changes
 * the condition (seq_cst) and then reads the announcement, taking the mutex to signal only when
 * someone announced. Sequential consistency guarantees at least one side sees the other. Each
 * side also puts a full fence (DEKKER_FENCE) between its write and its read: C11 does not need
 * it after seq_cst operations, but it makes the store-load order explicit as one barrier
 * instruction (dmb ish, mfence), which emulators translate faithfully: under qemu-aarch64 user
 * mode on an x86-64 host the fence-less version lost a wake-up (tests/unit/test_pool.c hung
 * in 3 runs of 3, workers and caller each asleep on their condition variable). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork-kernels/pool.h>

/* Upper bound on threads, a sanity limit on the argument (far above any SoC we target). */
#define POOL_MAX_THREADS 256
/* Least worker stack: the matmul keeps up to ~200 KiB of row and activation tiles on the stack
 * (matmul.c); glibc's default is larger, but C libraries with small thread stacks are not. */
#define POOL_MIN_STACK_BYTES (2u << 20)

/* Alignment of the pool's scratch buffer: a cache line and an AVX-512 register (64 bytes). */
#define POOL_SCRATCH_ALIGN 64
/* Polls between two clock reads while spinning: a pause is ~40-140 cycles, so the deadline is
 * checked every few microseconds at most while the clock (vDSO) is read rarely. */
#define POOL_SPIN_CHECK_EVERY 32
/* After this fraction (1/POOL_SPIN_YIELD_DIV) of the spin bound, each clock check also yields
 * the CPU: when the machine is oversubscribed, the thread being waited for may be runnable
 * but not running, and a pure pause loop would keep it off the CPU for the whole bound. Gaps
 * shorter than that fraction (the engine's usual ones) never enter the kernel. */
#define POOL_SPIN_YIELD_DIV 4
#define NS_PER_US 1000

/* Worker threads ever started by any pool of the process (ork_pool_threads_created). */
static atomic_uint_fast64_t g_threads_created;

/* Bytes per worker record: a cache line, so one worker's claim word shares its line with no
 * other thread's (the caller writes each worker's word in ork_pool_run_shared). */
#define POOL_WORKER_BYTES 64

struct pool_worker {
    atomic_uint_fast64_t claim;     /* last generation settled (run by the worker or released) */
    struct ork_pool *pool;
    int ith;
    pthread_t thread;
};
union pool_worker_slot {
    struct pool_worker w;
    char pad[POOL_WORKER_BYTES];
};
_Static_assert(sizeof(struct pool_worker) <= POOL_WORKER_BYTES, "worker record fits a line");

struct ork_pool {
    int n;                          /* threads including the caller */
    int64_t spin_ns;                /* poll this long before sleeping (0: never poll) */
    pthread_mutex_t mu;
    pthread_cond_t start;           /* workers wait here for a new generation or stop */
    pthread_cond_t done;            /* the caller waits here for pending == 0 */
    atomic_uint_fast64_t gen;       /* incremented once per run, after fn/ctx/pending are set */
    atomic_int pending;             /* workers still running the current generation */
    atomic_int stop;
    atomic_int asleep;              /* workers announced as (about to be) waiting on start */
    atomic_int caller_asleep;       /* the caller announced as waiting on done */
    ork_pool_fn fn;                 /* written by the caller before gen is bumped */
    void *ctx;
    int n_started;                  /* workers successfully created */
    union pool_worker_slot *workers;    /* n - 1 entries: ith 1 .. n-1, one line each */
    void *scratch;                  /* ork_pool_scratch: grown on demand, never shrunk */
    size_t scratch_bytes;
    /* ork_pool_get_stats */
    atomic_uint_fast64_t n_runs, n_worker_sleeps, n_caller_sleeps, n_released;
};

/* The store-load barrier of the sleep / wake-up handshake (see the top of the file). */
#define DEKKER_FENCE() atomic_thread_fence(memory_order_seq_cst)

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* True once spin_ns has passed since t0; past the yield point, yields the CPU first. */
static int spin_expired(const struct ork_pool *p, int64_t t0)
{
    int64_t el = now_ns() - t0;
    if (el >= p->spin_ns)
        return 1;
    if (el >= p->spin_ns / POOL_SPIN_YIELD_DIV)
        sched_yield();
    return 0;
}

/* Poll until a new generation (or stop) is published or spin_ns has passed. True if one was. */
static int spin_for_gen(struct ork_pool *p, uint_fast64_t seen)
{
    if (p->spin_ns <= 0)
        return 0;
    int64_t t0 = now_ns();
    for (unsigned k = 1;; k++) {
        if (atomic_load_explicit(&p->gen, memory_order_acquire) != seen ||
            atomic_load_explicit(&p->stop, memory_order_relaxed))
            return 1;
        cpu_relax();
        if (k % POOL_SPIN_CHECK_EVERY == 0 && spin_expired(p, t0))
            return 0;
    }
}

/* Poll until pending reaches 0 or spin_ns has passed. True if it did. */
static int spin_for_done(struct ork_pool *p)
{
    if (atomic_load_explicit(&p->pending, memory_order_acquire) == 0)
        return 1;
    if (p->spin_ns <= 0)
        return 0;
    int64_t t0 = now_ns();
    for (unsigned k = 1;; k++) {
        if (atomic_load_explicit(&p->pending, memory_order_acquire) == 0)
            return 1;
        cpu_relax();
        if (k % POOL_SPIN_CHECK_EVERY == 0 && spin_expired(p, t0))
            return 0;
    }
}

/* Wait for a generation newer than `seen`; returns it, or `seen` when the pool stops. */
static uint_fast64_t wait_for_gen(struct ork_pool *p, uint_fast64_t seen)
{
    if (!spin_for_gen(p, seen)) {
        pthread_mutex_lock(&p->mu);
        atomic_fetch_add(&p->asleep, 1);
        DEKKER_FENCE();
        if (atomic_load(&p->gen) == seen && !atomic_load(&p->stop)) {
            atomic_fetch_add_explicit(&p->n_worker_sleeps, 1, memory_order_relaxed);
            do
                pthread_cond_wait(&p->start, &p->mu);
            while (atomic_load(&p->gen) == seen && !atomic_load(&p->stop));
        }
        atomic_fetch_sub(&p->asleep, 1);
        pthread_mutex_unlock(&p->mu);
    }
    if (atomic_load(&p->stop))
        return seen;
    return atomic_load_explicit(&p->gen, memory_order_acquire);
}

static void *worker_main(void *arg)
{
    struct pool_worker *w = arg;
    struct ork_pool *p = w->pool;
    uint_fast64_t seen = 0;

    for (;;) {
        uint_fast64_t g = wait_for_gen(p, seen);
        if (g == seen)
            break;                  /* stop */
        seen = g;
        uint_fast64_t prev = g - 1;
        if (!atomic_compare_exchange_strong(&w->claim, &prev, g))
            continue;               /* released: the caller finished this run without us */
        p->fn(p->ctx, w->ith, p->n);
        /* the last worker out wakes the caller if it went to sleep */
        bool last = atomic_fetch_sub(&p->pending, 1) == 1;
        DEKKER_FENCE();
        if (last && atomic_load(&p->caller_asleep)) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
    }
    return NULL;
}

static void stop_workers(struct ork_pool *p)
{
    atomic_store(&p->stop, 1);
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n_started; i++)
        pthread_join(p->workers[i].w.thread, NULL);
}

int ork_pool_create(int n_threads, struct ork_pool **out)
{
    struct ork_pool_opts o = { .n_threads = n_threads, .spin_us = -1 };
    return ork_pool_create_opts(&o, out);
}

int ork_pool_create_opts(const struct ork_pool_opts *opts, struct ork_pool **out)
{
    int n_threads = opts ? opts->n_threads : 0;
    int spin_us = opts && opts->spin_us >= 0 ? opts->spin_us : ORK_POOL_SPIN_US_DEFAULT;
    if (spin_us > ORK_POOL_SPIN_US_MAX)
        return ork_errorf(ORK_EINVAL, "thread pool: spin %d us > %d", spin_us,
                          ORK_POOL_SPIN_US_MAX);
    if (n_threads <= 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = c > 0 ? (int)(c < POOL_MAX_THREADS ? c : POOL_MAX_THREADS) : 1;
    }
    if (n_threads > POOL_MAX_THREADS)
        return ork_errorf(ORK_EINVAL, "thread pool: %d threads > %d", n_threads, POOL_MAX_THREADS);

    struct ork_pool *p = ork_calloc(1, sizeof(*p));
    if (!p)
        return ork_errorf(ORK_ENOMEM, "thread pool: out of memory");
    p->n = n_threads;
    p->spin_ns = (int64_t)spin_us * NS_PER_US;
    atomic_init(&p->gen, 0);
    atomic_init(&p->pending, 0);
    atomic_init(&p->stop, 0);
    atomic_init(&p->asleep, 0);
    atomic_init(&p->caller_asleep, 0);
    atomic_init(&p->n_runs, 0);
    atomic_init(&p->n_worker_sleeps, 0);
    atomic_init(&p->n_caller_sleeps, 0);
    atomic_init(&p->n_released, 0);
    int ret;
    if (n_threads > 1) {
        size_t wbytes = (size_t)(n_threads - 1) * sizeof(*p->workers);
        p->workers = ork_aligned_alloc(POOL_WORKER_BYTES, wbytes);
        if (p->workers)
            memset(p->workers, 0, wbytes);
        if (!p->workers) {
            ret = ork_errorf(ORK_ENOMEM, "thread pool: out of memory for %d workers",
                             n_threads - 1);
            goto err_free;
        }
    }
    if (pthread_mutex_init(&p->mu, NULL) != 0) {
        ret = ork_errorf(ORK_ENOMEM, "thread pool: mutex init failed");
        goto err_free_workers;
    }
    if (pthread_cond_init(&p->start, NULL) != 0) {
        ret = ork_errorf(ORK_ENOMEM, "thread pool: condvar init failed");
        goto err_mutex;
    }
    if (pthread_cond_init(&p->done, NULL) != 0) {
        ret = ork_errorf(ORK_ENOMEM, "thread pool: condvar init failed");
        goto err_cond_start;
    }
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0) {
        ret = ork_errorf(ORK_ENOMEM, "thread pool: thread attribute init failed");
        goto err_cond_done;
    }
    size_t stack = 0;
    if (pthread_attr_getstacksize(&attr, &stack) != 0 || stack < POOL_MIN_STACK_BYTES)
        pthread_attr_setstacksize(&attr, POOL_MIN_STACK_BYTES);
    for (int i = 0; i < n_threads - 1; i++) {
        struct pool_worker *w = &p->workers[i].w;
        atomic_init(&w->claim, 0);
        w->pool = p;
        w->ith = i + 1;
        int e = pthread_create(&w->thread, &attr, worker_main, w);
        if (e != 0) {
            pthread_attr_destroy(&attr);
            ret = ork_errorf(ORK_ENOMEM, "thread pool: creating thread %d of %d failed (error %d)",
                             i + 1, n_threads, e);
            goto err_threads;
        }
        p->n_started++;
        atomic_fetch_add(&g_threads_created, 1);
    }
    pthread_attr_destroy(&attr);
    *out = p;
    return 0;

err_threads:
    stop_workers(p);
err_cond_done:
    pthread_cond_destroy(&p->done);
err_cond_start:
    pthread_cond_destroy(&p->start);
err_mutex:
    pthread_mutex_destroy(&p->mu);
err_free_workers:
    ork_free(p->workers);
err_free:
    ork_free(p);
    return ret;
}

void ork_pool_destroy(struct ork_pool *p)
{
    if (!p)
        return;
    stop_workers(p);
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->start);
    pthread_mutex_destroy(&p->mu);
    ork_free(p->workers);
    ork_free(p->scratch);
    ork_free(p);
}

void *ork_pool_scratch(struct ork_pool *p, size_t bytes)
{
    if (!p)
        return NULL;
    if (bytes <= p->scratch_bytes)
        return p->scratch;
    size_t size = (bytes + POOL_SCRATCH_ALIGN - 1) / POOL_SCRATCH_ALIGN * POOL_SCRATCH_ALIGN;
    void *n = size >= bytes ? ork_aligned_alloc(POOL_SCRATCH_ALIGN, size) : NULL;
    if (!n)
        return NULL;
    ork_free(p->scratch);
    p->scratch = n;
    p->scratch_bytes = size;
    return n;
}

uint64_t ork_pool_threads_created(void)
{
    return (uint64_t)atomic_load(&g_threads_created);
}

int ork_pool_threads(const struct ork_pool *p)
{
    return p ? p->n : 1;
}

int ork_pool_spin_us(const struct ork_pool *p)
{
    return p ? (int)(p->spin_ns / NS_PER_US) : 0;
}

void ork_pool_get_stats(const struct ork_pool *p, struct ork_pool_stats *st)
{
    if (!p) {
        *st = (struct ork_pool_stats){ 0 };
        return;
    }
    st->runs = (uint64_t)atomic_load_explicit(&p->n_runs, memory_order_relaxed);
    st->worker_sleeps = (uint64_t)atomic_load_explicit(&p->n_worker_sleeps, memory_order_relaxed);
    st->caller_sleeps = (uint64_t)atomic_load_explicit(&p->n_caller_sleeps, memory_order_relaxed);
    st->workers_released = (uint64_t)atomic_load_explicit(&p->n_released, memory_order_relaxed);
    st->workers_asleep = atomic_load(&p->asleep);
}

/* Publish (fn, ctx) as a new generation and wake sleeping workers; returns the generation. */
static uint_fast64_t publish(struct ork_pool *p, ork_pool_fn fn, void *ctx)
{
    atomic_fetch_add_explicit(&p->n_runs, 1, memory_order_relaxed);
    p->fn = fn;
    p->ctx = ctx;
    atomic_store_explicit(&p->pending, p->n - 1, memory_order_relaxed);
    /* seq_cst: publishes fn/ctx/pending, orders the load below */
    uint_fast64_t g = atomic_fetch_add(&p->gen, 1) + 1;
    DEKKER_FENCE();
    if (atomic_load(&p->asleep) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->start);
        pthread_mutex_unlock(&p->mu);
    }
    return g;
}

/* Return once every worker has finished (or been released from) the current generation. */
static void wait_done(struct ork_pool *p)
{
    if (spin_for_done(p))
        return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->caller_asleep, 1);
    DEKKER_FENCE();
    if (atomic_load(&p->pending) > 0) {
        atomic_fetch_add_explicit(&p->n_caller_sleeps, 1, memory_order_relaxed);
        do
            pthread_cond_wait(&p->done, &p->mu);
        while (atomic_load(&p->pending) > 0);
    }
    atomic_store(&p->caller_asleep, 0);
    pthread_mutex_unlock(&p->mu);
}

void ork_pool_run(struct ork_pool *p, ork_pool_fn fn, void *ctx)
{
    if (!p || p->n == 1) {
        fn(ctx, 0, 1);
        return;
    }
    publish(p, fn, ctx);
    fn(ctx, 0, p->n);
    wait_done(p);
}

void ork_pool_run_shared(struct ork_pool *p, ork_pool_fn fn, void *ctx)
{
    if (!p || p->n == 1) {
        fn(ctx, 0, 1);
        return;
    }
    uint_fast64_t g = publish(p, fn, ctx);
    fn(ctx, 0, p->n);
    /* the work is all taken: release the workers that have not started */
    int released = 0;
    for (int i = 0; i < p->n_started; i++) {
        uint_fast64_t prev = g - 1;
        if (atomic_compare_exchange_strong(&p->workers[i].w.claim, &prev, g))
            released++;
    }
    if (released) {
        atomic_fetch_sub(&p->pending, released);
        atomic_fetch_add_explicit(&p->n_released, (uint_fast64_t)released, memory_order_relaxed);
    }
    wait_done(p);
}
