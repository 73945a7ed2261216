/* ork-kernels/pool.h -- one persistent thread pool: threads are created once and fed work
 * through an atomic generation counter; between jobs the threads spin for a bounded time and
 * then sleep on a condition variable. Running a job allocates nothing and creates no thread. */
#ifndef ORK_KERNELS_POOL_H
#define ORK_KERNELS_POOL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ork_pool;

/* Job body: called once per thread with ith in [0, nth); the caller's thread runs ith 0. */
typedef void (*ork_pool_fn)(void *ctx, int ith, int nth);

/* Spin bound used by ork_pool_create and by opts with spin_us < 0 (microseconds). The serial
 * work between two pool jobs of a decode token (norms, RoPE, residual adds) takes a few
 * microseconds, so 50 us covers it with margin, while the ends of tokens (sampling) and idle
 * periods fall back to sleeping. Measured with `pool_probe 2 0,20,50,100,200` (tools/
 * pool_probe.c; numbers in docs/engine.md "Threading"): spinning cuts the empty-job round trip
 * from ~15-25 us to ~2-5 us when the threads have their CPUs, and costs time when the machine
 * is oversubscribed, which a shorter bound (and the yield past a quarter of it) limits. */
#define ORK_POOL_SPIN_US_DEFAULT 50
/* Most spin accepted (a sanity bound: an idle pool must fall asleep soon). */
#define ORK_POOL_SPIN_US_MAX 100000

struct ork_pool_opts {
    int n_threads;      /* <= 0: number of online CPUs */
    /* After finishing a job (workers) or its own share (caller), a thread polls for the next
     * event this long before sleeping on a condition variable. 0: sleep at once (condvar only);
     * < 0: ORK_POOL_SPIN_US_DEFAULT; at most ORK_POOL_SPIN_US_MAX. */
    int spin_us;
};

/* n_threads <= 0: number of online CPUs; spin bound ORK_POOL_SPIN_US_DEFAULT. */
int ork_pool_create(int n_threads, struct ork_pool **out);
/* opts NULL: all defaults. ORK_EINVAL for too many threads or spin_us > ORK_POOL_SPIN_US_MAX. */
int ork_pool_create_opts(const struct ork_pool_opts *opts, struct ork_pool **out);
/* The spin bound in effect (microseconds); 0 without a pool. */
int ork_pool_spin_us(const struct ork_pool *p);
void ork_pool_destroy(struct ork_pool *p);
int ork_pool_threads(const struct ork_pool *p);
/* Run fn on all threads and return when all have finished. */
void ork_pool_run(struct ork_pool *p, ork_pool_fn fn, void *ctx);
/* For jobs whose threads take work items from a counter of the job's own until none is left
 * (any ith may do any item, and a thread finding nothing left does nothing): the caller runs
 * fn as thread 0, and when it returns every worker that has not started yet is released from
 * the run (fn is not called for its ith), so a descheduled or waking worker never delays the
 * caller; the call returns when the workers that did start have finished. Not for jobs that
 * give fixed work to each ith. */
void ork_pool_run_shared(struct ork_pool *p, ork_pool_fn fn, void *ctx);
/* A 64-byte-aligned buffer of at least `bytes` owned by the pool, for the data a job shares
 * between its threads (e.g. activations quantized once per matmul). Grown (one allocation)
 * only when a larger size is asked for, so a steady decode loop allocates nothing; the
 * contents do not survive a call that grows it. Call from the pool's caller thread outside
 * ork_pool_run only. NULL when p is NULL or memory is short. */
void *ork_pool_scratch(struct ork_pool *p, size_t bytes);
/* Worker threads started so far by all pools of the process (creating a pool of n threads
 * adds n - 1; running jobs adds nothing): lets tests check that no thread is created per op
 * or per token. */
uint64_t ork_pool_threads_created(void);

/* Counters of one pool since its creation, for tests and probes (read while no run is in
 * progress, or approximately from another thread). */
struct ork_pool_stats {
    uint64_t runs;              /* ork_pool_run calls that used the workers */
    uint64_t worker_sleeps;     /* times a worker gave up spinning and waited on the condvar */
    uint64_t caller_sleeps;     /* times the caller waited on the condvar for the workers */
    uint64_t workers_released;  /* workers ork_pool_run_shared released before they started */
    int workers_asleep;         /* workers waiting on the condvar right now */
};
void ork_pool_get_stats(const struct ork_pool *p, struct ork_pool_stats *st);

#ifdef __cplusplus
}
#endif
#endif
