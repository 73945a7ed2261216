/* pool.c -- a persistent thread pool: n - 1 worker threads created once, the caller's thread
 * acting as thread 0. A run publishes (fn, ctx) under the mutex, bumps a generation counter and
 * wakes the workers; each runs fn once for the new generation and the last to finish wakes the
 * caller. Running allocates nothing and creates no thread. Runs must not overlap: one caller
 * thread at a time (the engine's decode thread). Not here: how work is split (the job does it
 * from ith/nth). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>

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

/* Worker threads ever started by any pool of the process (ork_pool_threads_created). */
static atomic_uint_fast64_t g_threads_created;

struct pool_worker {
    struct ork_pool *pool;
    int ith;
    pthread_t thread;
};

struct ork_pool {
    int n;                          /* threads including the caller */
    pthread_mutex_t mu;
    pthread_cond_t start;           /* workers wait here for a new generation or stop */
    pthread_cond_t done;            /* the caller waits here for pending == 0 */
    uint64_t gen;                   /* incremented once per run */
    int pending;                    /* workers still running the current generation */
    int stop;
    ork_pool_fn fn;
    void *ctx;
    int n_started;                  /* workers successfully created */
    struct pool_worker *workers;    /* n - 1 entries: ith 1 .. n-1 */
    void *scratch;                  /* ork_pool_scratch: grown on demand, never shrunk */
    size_t scratch_bytes;
};

static void *worker_main(void *arg)
{
    struct pool_worker *w = arg;
    struct ork_pool *p = w->pool;
    uint64_t seen = 0;

    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->gen == seen && !p->stop)
            pthread_cond_wait(&p->start, &p->mu);
        if (p->stop)
            break;
        seen = p->gen;
        ork_pool_fn fn = p->fn;
        void *ctx = p->ctx;
        pthread_mutex_unlock(&p->mu);
        fn(ctx, w->ith, p->n);
        pthread_mutex_lock(&p->mu);
        if (--p->pending == 0)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void stop_workers(struct ork_pool *p)
{
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n_started; i++)
        pthread_join(p->workers[i].thread, NULL);
}

int ork_pool_create(int n_threads, struct ork_pool **out)
{
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
    int ret;
    if (n_threads > 1) {
        p->workers = ork_calloc((size_t)(n_threads - 1), sizeof(*p->workers));
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
        struct pool_worker *w = &p->workers[i];
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

void ork_pool_run(struct ork_pool *p, ork_pool_fn fn, void *ctx)
{
    if (!p || p->n == 1) {
        fn(ctx, 0, 1);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->pending = p->n - 1;
    p->gen++;
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->mu);

    fn(ctx, 0, p->n);

    pthread_mutex_lock(&p->mu);
    while (p->pending > 0)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}
