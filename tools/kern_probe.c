/* kern_probe.c -- CPU kernel micro-benchmarks: (1) the measured peak of this machine's vector
 * units (f32 FMA and int8 dot-product instructions, per thread and with all threads), the
 * denominator of the prefill efficiency in docs/benchmarks.md; (2) ork_matmul_act on synthetic
 * in-memory weights of a given type and shape, per kernel path and thread count, reported as
 * weight GB/s (decode, M = 1) or GOP/s (prefill, M > 1). Not a test; not linked into libork.
 *
 *   kern_probe peak [threads]
 *   kern_probe mm TYPE N K M [threads] [path] [reps]     e.g. kern_probe mm q8_0 6144 2048 1 2
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>

#include <ork/error.h>
#include <ork-kernels/kernels.h>
#include <ork-kernels/pool.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- peaks: independent dependency chains so that throughput, not latency, limits ---- */

#define PEAK_ITERS 20000000L
#define CHAINS 12   /* enough independent accumulators to cover FMA latency x ports */

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) static double peak_fma256(void)
{
    __m256 a[CHAINS];
    for (int i = 0; i < CHAINS; i++)
        a[i] = _mm256_set1_ps((float)i);
    __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
    double t0 = now();
    for (long it = 0; it < PEAK_ITERS; it++)
        for (int i = 0; i < CHAINS; i++)
            a[i] = _mm256_fmadd_ps(a[i], m, c);
    double dt = now() - t0;
    float sink = 0;
    for (int i = 0; i < CHAINS; i++)
        sink += _mm256_cvtss_f32(a[i]);
    if (sink == 12345.0f)
        printf(" ");
    return (double)PEAK_ITERS * CHAINS * 8 * 2 / dt;   /* flops: 8 lanes x (mul + add) */
}

__attribute__((target("avx512f"))) static double peak_fma512(void)
{
    __m512 a[CHAINS];
    for (int i = 0; i < CHAINS; i++)
        a[i] = _mm512_set1_ps((float)i);
    __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
    double t0 = now();
    for (long it = 0; it < PEAK_ITERS; it++)
        for (int i = 0; i < CHAINS; i++)
            a[i] = _mm512_fmadd_ps(a[i], m, c);
    double dt = now() - t0;
    float sink = 0;
    for (int i = 0; i < CHAINS; i++)
        sink += _mm512_reduce_add_ps(a[i]);
    if (sink == 12345.0f)
        printf(" ");
    return (double)PEAK_ITERS * CHAINS * 16 * 2 / dt;
}

/* int8 ops: each vpdpbusd lane does 4 multiplies and 4 adds. */
__attribute__((target("avx512f,avx512vnni"))) static double peak_vnni512(void)
{
    __m512i a[CHAINS];
    for (int i = 0; i < CHAINS; i++)
        a[i] = _mm512_set1_epi32(i);
    __m512i x = _mm512_set1_epi8(3), y = _mm512_set1_epi8(-2);
    double t0 = now();
    for (long it = 0; it < PEAK_ITERS; it++)
        for (int i = 0; i < CHAINS; i++)
            a[i] = _mm512_dpbusd_epi32(a[i], x, y);
    double dt = now() - t0;
    int sink = 0;
    for (int i = 0; i < CHAINS; i++)
        sink += _mm512_reduce_add_epi32(a[i]);
    if (sink == 12345)
        printf(" ");
    return (double)PEAK_ITERS * CHAINS * 64 * 2 / dt;
}

/* AVX2 int8: vpmaddubsw + vpmaddwd (the pair the AVX2 kernels use): 32 mul + 32 add. */
__attribute__((target("avx2"))) static double peak_maddubs256(void)
{
    __m256i a[CHAINS];
    for (int i = 0; i < CHAINS; i++)
        a[i] = _mm256_set1_epi32(i);
    __m256i x = _mm256_set1_epi8(3), y = _mm256_set1_epi8(-2), one = _mm256_set1_epi16(1);
    double t0 = now();
    for (long it = 0; it < PEAK_ITERS; it++)
        for (int i = 0; i < CHAINS; i++)
            a[i] = _mm256_add_epi32(a[i], _mm256_madd_epi16(_mm256_maddubs_epi16(x, y), one));
    double dt = now() - t0;
    int sink = 0;
    for (int i = 0; i < CHAINS; i++)
        sink += _mm256_extract_epi32(a[i], 0);
    if (sink == 12345)
        printf(" ");
    return (double)PEAK_ITERS * CHAINS * 32 * 2 / dt;
}
#endif

struct peak_job {
    double (*fn)(void);
    double result[64];
};

static void *peak_thread(void *arg)
{
    struct peak_job *j = ((struct peak_job **)arg)[0];
    intptr_t i = (intptr_t)((void **)arg)[1];
    j->result[i] = j->fn();
    return NULL;
}

static double run_peak(double (*fn)(void), int threads)
{
    struct peak_job j = { .fn = fn };
    pthread_t th[64];
    void *args[64][2];
    for (int i = 0; i < threads; i++) {
        args[i][0] = &j;
        args[i][1] = (void *)(intptr_t)i;
        pthread_create(&th[i], NULL, peak_thread, args[i]);
    }
    double sum = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        sum += j.result[i];
    }
    return sum;
}

static int cmd_peak(int threads)
{
#if defined(__x86_64__)
    __builtin_cpu_init();
    struct { const char *name; double (*fn)(void); int ok; } t[] = {
        { "f32 FMA ymm (GFLOP/s)", peak_fma256, __builtin_cpu_supports("avx2") },
        { "f32 FMA zmm (GFLOP/s)", peak_fma512, __builtin_cpu_supports("avx512f") },
        { "int8 maddubs+madd ymm (GOP/s)", peak_maddubs256, __builtin_cpu_supports("avx2") },
        { "int8 vpdpbusd zmm (GOP/s)", peak_vnni512, __builtin_cpu_supports("avx512vnni") },
    };
    printf("| peak | t=1 | t=%d |\n| --- | ---: | ---: |\n", threads);
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        if (!t[i].ok)
            continue;
        double p1 = run_peak(t[i].fn, 1) / 1e9;
        double pn = run_peak(t[i].fn, threads) / 1e9;
        printf("| %s | %.1f | %.1f |\n", t[i].name, p1, pn);
    }
    return 0;
#else
    (void)threads;
    fprintf(stderr, "peak: x86-64 only\n");
    return 1;
#endif
}

/* ---- matmul ---- */

static uint32_t type_by_name(const char *s)
{
    for (uint32_t t = 0; t < ORK_TYPE_COUNT; t++) {
        const struct ork_type_traits *tr = ork_type_traits(t);
        if (tr && !strcasecmp(tr->name, s))
            return t;
    }
    return UINT32_MAX;
}

static uint64_t rs = 88172645463325252ull;
static uint32_t rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (uint32_t)rs;
}

static int cmd_mm(int argc, char **argv)
{
    if (argc < 6)
        return 2;
    uint32_t type = type_by_name(argv[2]);
    int64_t n = atoll(argv[3]), k = atoll(argv[4]), m = atoll(argv[5]);
    int threads = argc > 6 ? atoi(argv[6]) : 0;
    const char *path = argc > 7 ? argv[7] : NULL;
    int reps = argc > 8 ? atoi(argv[8]) : 10;
    if (type == UINT32_MAX || ork_kernels_check(type, k) < 0 || n <= 0 || m <= 0) {
        fprintf(stderr, "bad type or shape\n");
        return 2;
    }
    if (path && strcmp(path, "-") && ork_kernels_set_path(path) < 0) {
        fprintf(stderr, "%s\n", ork_error_message());
        return 1;
    }
    size_t rb = ork_type_row_bytes(type, (uint64_t)k), bytes = rb * (size_t)n;
    uint8_t *w = aligned_alloc(1 << 21, (bytes + (1 << 21) - 1) & ~(size_t)((1 << 21) - 1));
    float *x = malloc(sizeof(float) * (size_t)(m * k)), *y = malloc(sizeof(float) * (size_t)(m * n));
    if (!w || !x || !y)
        return 1;
    madvise(w, bytes, MADV_HUGEPAGE);
    const struct ork_type_traits *tr = ork_type_traits(type);
    for (size_t i = 0; i < bytes; i++)
        w[i] = (uint8_t)rnd();
    /* sane scales: every block's f16 fields set to small values */
    for (int64_t r = 0; r < n && tr->block > 1; r++)
        for (int64_t b = 0; b < k / tr->block; b++) {
            uint8_t *blk = w + (size_t)r * rb + (size_t)b * tr->block_bytes;
            uint16_t h = ork_f32_to_fp16(0.01f);
            size_t off = type == ORK_TYPE_Q6_K ? 208 : 0;
            memcpy(blk + off, &h, 2);
            if (type == ORK_TYPE_Q4_K)
                memcpy(blk + 2, &h, 2);
        }
    if (tr->block == 1 && type != ORK_TYPE_F32)
        for (size_t i = 0; i < bytes; i += 2) {
            uint16_t h = type == ORK_TYPE_F16 ? ork_f32_to_fp16(0.01f) : ork_f32_to_bf16(0.01f);
            memcpy(w + i, &h, 2);
        }
    for (int64_t i = 0; i < m * k; i++)
        x[i] = (float)(rnd() % 2000) / 1000.0f - 1.0f;
    /* KP_FILE=path: the same weights written to a file and read through a private file
     * mapping (what the engine does with a GGUF), to compare page-cache mappings with
     * anonymous memory. */
    const char *file = getenv("KP_FILE");
    uint8_t *wmap = NULL;
    if (file) {
        FILE *f = fopen(file, "wb");
        if (!f || fwrite(w, 1, bytes, f) != bytes || fclose(f) != 0)
            return 1;
        int fd = open(file, O_RDONLY);
        wmap = fd >= 0 ? mmap(NULL, bytes, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
        if (fd >= 0)
            close(fd);
        if (wmap == MAP_FAILED)
            return 1;
        if (getenv("KP_HUGE"))
            madvise(wmap, bytes, MADV_HUGEPAGE);
    }
    struct ork_pool *pool = NULL;
    if (ork_pool_create(threads, &pool) < 0)
        return 1;
    struct ork_mat mat = { .type = type, .n_rows = n, .n_cols = k, .row_bytes = rb,
                           .data = wmap ? wmap : w };
    ork_matmul_act(pool, &mat, x, m, y, ORK_ACT_QUANT);     /* warm */
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        ork_matmul_act(pool, &mat, x, m, y, ORK_ACT_QUANT);
        double dt = now() - t0;
        if (dt < best)
            best = dt;
    }
    double ops = 2.0 * (double)n * (double)k * (double)m;
    printf("%s %s N=%lld K=%lld M=%lld t=%d: %.3f ms, weights %.2f GB/s, %.1f GOP/s\n",
           ork_kernels_path(), tr->name, (long long)n, (long long)k, (long long)m,
           ork_pool_threads(pool), best * 1e3, (double)bytes / best / 1e9, ops / best / 1e9);
    ork_pool_destroy(pool);
    if (wmap)
        munmap(wmap, bytes);
    free(w);
    free(x);
    free(y);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "peak"))
        return cmd_peak(argc > 2 ? atoi(argv[2]) : 2);
    if (argc >= 2 && !strcmp(argv[1], "mm")) {
        int r = cmd_mm(argc, argv);
        if (r != 2)
            return r;
    }
    fprintf(stderr, "usage: kern_probe peak [threads]\n"
                    "       kern_probe mm TYPE N K M [threads] [path|-] [reps]\n");
    return 2;
}
