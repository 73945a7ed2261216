/* ork-tooling/membw.h -- achievable memory bandwidth (STREAM-like), for reading decode speed
 * against the roofline: a decode step streams every weight once, so tok/s can be at most
 * bandwidth / bytes per token.
 *
 * Kernels over arrays of doubles much larger than the caches, split over a thread pool (each
 * thread first-touches its own part), best of several runs; bytes counted as in STREAM (no
 * write-allocate traffic): copy c = a (2 x 8 B per element), scale b = s * c (2 x 8), add
 * c = a + b (3 x 8), triad a = b + s * c (3 x 8), and read (sum of a, 1 x 8: the access pattern
 * of a matmul streaming its weights; the SIMD ork_cpu_read_sum of ork-kernels/readbw.h, on the
 * kernels' instruction-set path). The copy / scale / add / triad loops are portable C.
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

/* The read kernel alone, over one array kept allocated (first-touched by its own pool of
 * n_threads, <= 0: online CPUs) so it can be timed again and again at little cost: `ork bench`
 * brackets each decode test with it. bytes: the array (>= 1 MiB). ORK_ENOMEM, ORK_EINVAL. */
struct ork_membw_reader;
int ork_membw_reader_create(int n_threads, size_t bytes, struct ork_membw_reader **out);
/* Best of n_runs (<= 0: 5) passes over the array, 1e9 bytes per second; 0 for NULL. */
double ork_membw_reader_run(struct ork_membw_reader *r, int n_runs);
size_t ork_membw_reader_bytes(const struct ork_membw_reader *r);   /* the array's bytes */
int ork_membw_reader_threads(const struct ork_membw_reader *r);
void ork_membw_reader_free(struct ork_membw_reader *r);             /* NULL: no-op */

#ifdef __cplusplus
}
#endif
#endif
