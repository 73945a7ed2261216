/* ork-kernels/pool.h -- one persistent thread pool: threads are created once and fed work
 * through a condition variable; running a job allocates nothing and creates no thread. */
#ifndef ORK_KERNELS_POOL_H
#define ORK_KERNELS_POOL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ork_pool;

/* Job body: called once per thread with ith in [0, nth); the caller's thread runs ith 0. */
typedef void (*ork_pool_fn)(void *ctx, int ith, int nth);

/* n_threads <= 0: number of online CPUs. */
int ork_pool_create(int n_threads, struct ork_pool **out);
void ork_pool_destroy(struct ork_pool *p);
int ork_pool_threads(const struct ork_pool *p);
/* Run fn on all threads and return when all have finished. */
void ork_pool_run(struct ork_pool *p, ork_pool_fn fn, void *ctx);
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

#ifdef __cplusplus
}
#endif
#endif
