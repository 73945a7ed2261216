/* membw.c -- STREAM-like memory bandwidth measurement (see ork-tooling/membw.h).
 *
 * The kernels are the four STREAM ones (McCalpin, "STREAM: Sustainable Memory Bandwidth in High
 * Performance Computers") plus a read-only sum; written here from that description. The read
 * sum is the SIMD kernel of the kernels layer (ork_cpu_read_sum, on the kernels' path), so the
 * "read" number is what a matmul's weight stream can get, not what portable C can add up.
 * The reader (ork_membw_reader_*) keeps one array and a pool so `ork bench` can time the read
 * kernel right before and after each decode test.
 * Not here: any use of the result (the bench command computes the roofline). */
#include <string.h>
#include <time.h>

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork-tooling/membw.h>
#include <ork-kernels/pool.h>
#include <ork-tooling/readbw.h>

#define DEFAULT_ARRAY_BYTES (128u << 20)    /* 128 MiB per array: far beyond any L3 */
#define MIN_ARRAY_BYTES (1u << 20)
#define DEFAULT_RUNS 5
#define ARRAY_ALIGN 64                      /* cache line */
#define STREAM_SCALAR 3.0                   /* the STREAM scale factor */
#define SINK_SLOTS 64                       /* per-thread read sums kept */

static volatile uint64_t g_sink;            /* the read sums end here: the loads stay */

struct job {
    double *a, *b, *c;
    size_t n;
    enum ork_membw_kernel k;
    int init;                               /* first-touch pass */
    uint64_t sink[SINK_SLOTS];              /* per-thread read sums (kept live) */
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
        for (size_t i = lo; i < hi; i++)
            a[i] = 1.0;
        if (b && c)
            for (size_t i = lo; i < hi; i++) {
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
    case ORK_MEMBW_READ:
        if (ith < SINK_SLOTS)
            j->sink[ith] += ork_cpu_read_sum(a + lo, (hi - lo) * sizeof(double));
        break;
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

static void keep_sums(const struct job *j)
{
    uint64_t s = 0;
    for (int i = 0; i < SINK_SLOTS; i++)
        s += j->sink[i];
    g_sink += s;
}

/* One timed pass of kernel k over the job's arrays; seconds. */
static double timed_pass(struct ork_pool *pool, struct job *j, enum ork_membw_kernel k)
{
    j->k = k;
    double t0 = now_s();
    ork_pool_run(pool, run_part, j);
    return now_s() - t0;
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
            double dt = timed_pass(pool, &j, (enum ork_membw_kernel)k);
            double gbps = dt > 0 ? bytes_per_elem[k] * (double)j.n / dt / 1e9 : 0.0;
            if (gbps > out->gbps[k])
                out->gbps[k] = gbps;
        }
    ret = 0;
out:
    keep_sums(&j);
    ork_free(j.a);
    ork_free(j.b);
    ork_free(j.c);
    ork_pool_destroy(pool);
    return ret;
}

/* ---- the read kernel alone over one array kept between measurements ---- */

struct ork_membw_reader {
    struct ork_pool *pool;
    struct job j;                           /* a only (b, c NULL) */
};

int ork_membw_reader_create(int n_threads, size_t bytes, struct ork_membw_reader **out)
{
    if (!out)
        return ork_errorf(ORK_EINVAL, "membw reader: NULL result");
    *out = NULL;
    if (bytes < MIN_ARRAY_BYTES)
        return ork_errorf(ORK_EINVAL, "membw reader: an array of %zu bytes is too small", bytes);
    struct ork_membw_reader *r = ork_calloc(1, sizeof(*r));
    if (!r)
        return ORK_ENOMEM;
    /* No spinning between passes: an idle reader must not take CPU from the work it brackets. */
    struct ork_pool_opts po = { .n_threads = n_threads, .spin_us = 0 };
    int ret = ork_pool_create_opts(&po, &r->pool);
    if (ret < 0)
        goto err_free;
    r->j.n = bytes / sizeof(double);
    r->j.a = ork_aligned_alloc(ARRAY_ALIGN, r->j.n * sizeof(double));
    if (!r->j.a) {
        ret = ork_errorf(ORK_ENOMEM, "membw reader: an array of %zu bytes", bytes);
        goto err_pool;
    }
    r->j.init = 1;
    ork_pool_run(r->pool, run_part, &r->j);
    r->j.init = 0;
    *out = r;
    return 0;
err_pool:
    ork_pool_destroy(r->pool);
err_free:
    ork_free(r);
    return ret;
}

double ork_membw_reader_run(struct ork_membw_reader *r, int n_runs)
{
    if (!r)
        return 0.0;
    if (n_runs <= 0)
        n_runs = DEFAULT_RUNS;
    double best = 0.0;
    for (int i = 0; i < n_runs; i++) {
        double dt = timed_pass(r->pool, &r->j, ORK_MEMBW_READ);
        double gbps = dt > 0 ? (double)(r->j.n * sizeof(double)) / dt / 1e9 : 0.0;
        if (gbps > best)
            best = gbps;
    }
    keep_sums(&r->j);
    return best;
}

size_t ork_membw_reader_bytes(const struct ork_membw_reader *r)
{
    return r ? r->j.n * sizeof(double) : 0;
}

int ork_membw_reader_threads(const struct ork_membw_reader *r)
{
    return r ? ork_pool_threads(r->pool) : 0;
}

void ork_membw_reader_free(struct ork_membw_reader *r)
{
    if (!r)
        return;
    keep_sums(&r->j);
    ork_free(r->j.a);
    ork_pool_destroy(r->pool);
    ork_free(r);
}
