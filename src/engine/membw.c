/* membw.c -- STREAM-like memory bandwidth measurement (see ork-engine/membw.h).
 *
 * The kernels are the four STREAM ones (McCalpin, "STREAM: Sustainable Memory Bandwidth in High
 * Performance Computers") plus a read-only sum; written here from that description.
 * Not here: any use of the result (the bench command computes the roofline). */
#include <string.h>
#include <time.h>

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork-engine/membw.h>
#include <ork-kernels/pool.h>

#define DEFAULT_ARRAY_BYTES (128u << 20)    /* 128 MiB per array: far beyond any L3 */
#define MIN_ARRAY_BYTES (1u << 20)
#define DEFAULT_RUNS 5
#define ARRAY_ALIGN 64                      /* cache line */
#define STREAM_SCALAR 3.0                   /* the STREAM scale factor */
#define READ_LANES 4                        /* independent sums of the read kernel */

struct job {
    double *a, *b, *c;
    size_t n;
    enum ork_membw_kernel k;
    int init;                               /* first-touch pass */
    uint64_t sink[64];                      /* per-thread read results (kept live) */
};

static void split(size_t n, int ith, int nth, size_t *lo, size_t *hi)
{
    *lo = n * (size_t)ith / (size_t)nth;
    *hi = n * (size_t)(ith + 1) / (size_t)nth;
}

static void run_part(void *ctx, int ith, int nth)
{
    struct job *j = ctx;
    size_t lo, hi;
    split(j->n, ith, nth, &lo, &hi);
    double *a = j->a, *b = j->b, *c = j->c;
    if (j->init) {
        for (size_t i = lo; i < hi; i++) {
            a[i] = 1.0;
            b[i] = 2.0;
            c[i] = 0.0;
        }
        return;
    }
    switch (j->k) {
    case ORK_MEMBW_COPY:
        for (size_t i = lo; i < hi; i++)
            c[i] = a[i];
        break;
    case ORK_MEMBW_SCALE:
        for (size_t i = lo; i < hi; i++)
            b[i] = STREAM_SCALAR * c[i];
        break;
    case ORK_MEMBW_ADD:
        for (size_t i = lo; i < hi; i++)
            c[i] = a[i] + b[i];
        break;
    case ORK_MEMBW_TRIAD:
        for (size_t i = lo; i < hi; i++)
            a[i] = b[i] + STREAM_SCALAR * c[i];
        break;
    case ORK_MEMBW_READ: {
        /* Integer sums of the bit patterns: associative, so the compiler may vectorize. */
        const uint64_t *u = (const uint64_t *)(const void *)a;
        uint64_t s[READ_LANES] = { 0 };
        size_t i = lo;
        for (; i + READ_LANES <= hi; i += READ_LANES)
            for (int l = 0; l < READ_LANES; l++)
                s[l] += u[i + (size_t)l];
        for (; i < hi; i++)
            s[0] += u[i];
        if (ith < 64)
            j->sink[ith] = s[0] + s[1] + s[2] + s[3];
        break;
    }
    default:
        break;
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

const char *ork_membw_kernel_name(enum ork_membw_kernel k)
{
    static const char *const names[ORK_MEMBW_COUNT] = { "copy", "scale", "add", "triad", "read" };
    return (unsigned)k < ORK_MEMBW_COUNT ? names[k] : "?";
}

int ork_membw_measure(int n_threads, size_t array_bytes, int n_runs,
                      struct ork_membw_result *out)
{
    static const double bytes_per_elem[ORK_MEMBW_COUNT] = { 16, 16, 24, 24, 8 };
    if (!out)
        return ork_errorf(ORK_EINVAL, "membw: NULL result");
    if (array_bytes == 0)
        array_bytes = DEFAULT_ARRAY_BYTES;
    if (array_bytes < MIN_ARRAY_BYTES)
        return ork_errorf(ORK_EINVAL, "membw: arrays of %zu bytes are too small", array_bytes);
    if (n_runs <= 0)
        n_runs = DEFAULT_RUNS;
    struct ork_pool *pool;
    int ret = ork_pool_create(n_threads, &pool);
    if (ret < 0)
        return ret;
    struct job j;
    memset(&j, 0, sizeof j);
    j.n = array_bytes / sizeof(double);
    j.a = ork_aligned_alloc(ARRAY_ALIGN, j.n * sizeof(double));
    j.b = ork_aligned_alloc(ARRAY_ALIGN, j.n * sizeof(double));
    j.c = ork_aligned_alloc(ARRAY_ALIGN, j.n * sizeof(double));
    if (!j.a || !j.b || !j.c) {
        ret = ork_errorf(ORK_ENOMEM, "membw: three arrays of %zu bytes", array_bytes);
        goto out;
    }
    j.init = 1;
    ork_pool_run(pool, run_part, &j);
    j.init = 0;
    memset(out, 0, sizeof(*out));
    out->n_threads = ork_pool_threads(pool);
    out->array_bytes = j.n * sizeof(double);
    out->n_runs = n_runs;
    for (int r = 0; r < n_runs; r++)
        for (int k = 0; k < ORK_MEMBW_COUNT; k++) {
            j.k = (enum ork_membw_kernel)k;
            double t0 = now_s();
            ork_pool_run(pool, run_part, &j);
            double dt = now_s() - t0;
            double gbps = dt > 0 ? bytes_per_elem[k] * (double)j.n / dt / 1e9 : 0.0;
            if (gbps > out->gbps[k])
                out->gbps[k] = gbps;
        }
    ret = 0;
out:
    ork_free(j.a);
    ork_free(j.b);
    ork_free(j.c);
    ork_pool_destroy(pool);
    return ret;
}
