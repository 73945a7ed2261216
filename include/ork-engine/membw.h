/* ork-engine/membw.h -- achievable memory bandwidth (STREAM-like), for reading decode speed
 * against the roofline: a decode step streams every weight once, so tok/s can be at most
 * bandwidth / bytes per token.
 *
 * Kernels over arrays of doubles much larger than the caches, split over a thread pool (each
 * thread first-touches its own part), best of several runs; bytes counted as in STREAM (no
 * write-allocate traffic): copy c = a (2 x 8 B per element), scale b = s * c (2 x 8), add
 * c = a + b (3 x 8), triad a = b + s * c (3 x 8), and read (sum of a, 1 x 8: the access pattern
 * of a matmul streaming its weights).
 * Not here: the cache hierarchy or latency. */
#ifndef ORK_ENGINE_MEMBW_H
#define ORK_ENGINE_MEMBW_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum ork_membw_kernel {
    ORK_MEMBW_COPY, ORK_MEMBW_SCALE, ORK_MEMBW_ADD, ORK_MEMBW_TRIAD, ORK_MEMBW_READ,
    ORK_MEMBW_COUNT
};

struct ork_membw_result {
    int n_threads;
    size_t array_bytes;             /* bytes of each of the three arrays */
    int n_runs;
    double gbps[ORK_MEMBW_COUNT];   /* best run, 1e9 bytes per second */
};

const char *ork_membw_kernel_name(enum ork_membw_kernel k);   /* "copy", ... */

/* Measure with n_threads (<= 0: online CPUs), arrays of array_bytes (0: 128 MiB each), n_runs
 * runs per kernel (<= 0: 5). ORK_ENOMEM, ORK_EINVAL. */
int ork_membw_measure(int n_threads, size_t array_bytes, int n_runs,
                      struct ork_membw_result *out);

#ifdef __cplusplus
}
#endif
#endif
