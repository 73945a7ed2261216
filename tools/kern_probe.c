/* kern_probe.c -- CPU kernel micro-benchmarks: (1) the measured peak of this machine's vector
 * units (f32 FMA and int8 dot-product instructions, per thread and with all threads), the
 * denominator of the prefill efficiency in docs/benchmarks.md; (2) ork_matmul_act on synthetic
 * in-memory weights of a given type and shape, per kernel path and thread count, reported as
 * weight GB/s (decode, M = 1) or GOP/s (prefill, M > 1). Not a test; not linked into libork.
 *
 *   kern_probe peak [threads]
 *   kern_probe mm TYPE N K M [threads] [path] [reps] [--file F] [--huge] [--split ROWS] [--x16]
 *     e.g. kern_probe mm q8_0 6144 2048 1 2
 *   --file F: the weights written to file F and read through a private file mapping (what the
 *     engine does with a GGUF) instead of anonymous memory; --huge: madvise that mapping
 *     MADV_HUGEPAGE; --split ROWS: each timed run walks the matrix as a chain of matmuls of
 *     ROWS rows (a decode step's stream of medium matrices over weights not in cache);
 *   --x16: the matrix interleaved by 16 rows first (ork_mat_x16_pack; Q8_0 / Q4_0 / Q4_K,
 *     anonymous memory only; ROWS a multiple of 16).
 *   kern_probe chain TYPE [threads] [reps]
 *     the decode matmuls of one token of a Qwen3-1.7B-shaped model (28 layers of Q/K/V, O,
 *     gate/up, down, then the LM head: the engine's calls, interleaved where the engine would)
 *     on in-memory weights, against the read kernel over the same bytes in one pool run
 *     ("whole") and in one pool run per matmul call ("chain"), and (interleaved Q8_0 / Q4_0)
 *     the decode kernel's loads without its arithmetic ("loads": per thread its share of each
 *     matrix as 5 streams of 16-row groups, per block the 32-byte scale load and the 64-byte
 *     quant loads of docs/kernels.md "Interleaved weights", in the kernel's order); all are
 *     timed in turn in every rep, and the medians of each and of the per-rep ratios are
 *     printed, so the shares hold even while the machine's bandwidth drifts.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <math.h>
#include <stdbool.h>
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
#include <ork-tooling/peak.h>
#include <ork-kernels/pool.h>
#include <ork-tooling/readbw.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define CH_HAVE_LOADS 1     /* the interleaved layout exists only on x86-64 (AVX-512 VNNI) */
#endif

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- peaks: ork_cpu_peak_measure (kernels/peak.c) on every kernel path of this CPU ---- */

#define PEAK_MS 200     /* per loop: long enough to ramp the clocks */

static int cmd_peak(int threads)
{
    struct ork_pool *pool = NULL;
    if (threads < 1 || ork_pool_create(threads, &pool) < 0) {
        fprintf(stderr, "peak: cannot create a pool of %d threads\n", threads);
        return 1;
    }
    printf("| path | f32 instruction | f32 GFLOP/s t=1 | t=%d | int8 instruction | int8 GOP/s t=1 | "
           "t=%d |\n| --- | --- | ---: | ---: | --- | ---: | ---: |\n", threads, threads);
    for (int i = 0; ork_kernels_path_name(i); i++) {
        const char *name = ork_kernels_path_name(i);
        struct ork_cpu_peak p1, pn;
        if (ork_kernels_set_path(name) < 0 || ork_cpu_peak_measure(NULL, PEAK_MS, &p1) < 0 ||
            ork_cpu_peak_measure(pool, PEAK_MS, &pn) < 0 || (!p1.f32_flops && !p1.int8_ops))
            continue;
        printf("| %s | %s | %.1f | %.1f | %s | %.1f | %.1f |\n", name, p1.f32_insn,
               p1.f32_flops / 1e9, pn.f32_flops / 1e9, p1.int8_insn, p1.int8_ops / 1e9,
               pn.int8_ops / 1e9);
    }
    ork_kernels_set_path(NULL);
    ork_pool_destroy(pool);
    return 0;
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
    /* options after the positional arguments */
    const char *file = NULL;
    bool huge = false, x16 = false;
    int64_t chunk = 0;
    int npos = argc;
    for (int i = 6; i < argc; i++) {
        if (strncmp(argv[i], "--", 2))
            continue;
        if (npos == argc)
            npos = i;
        if (!strcmp(argv[i], "--file") && i + 1 < argc)
            file = argv[++i];
        else if (!strcmp(argv[i], "--huge"))
            huge = true;
        else if (!strcmp(argv[i], "--split") && i + 1 < argc)
            chunk = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--x16"))
            x16 = true;
        else {
            fprintf(stderr, "unknown option '%s'\n", argv[i]);
            return 2;
        }
    }
    int threads = npos > 6 ? atoi(argv[6]) : 0;
    const char *path = npos > 7 ? argv[7] : NULL;
    int reps = npos > 8 ? atoi(argv[8]) : 10;
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
    /* --file: the same weights through a private file mapping, to compare page-cache mappings
     * with anonymous memory */
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
        if (huge)
            madvise(wmap, bytes, MADV_HUGEPAGE);
    }
    struct ork_pool *pool = NULL;
    if (ork_pool_create(threads, &pool) < 0)
        return 1;
    struct ork_mat mat = { .type = type, .n_rows = n, .n_cols = k, .row_bytes = rb,
                           .data = wmap ? wmap : w };
    if (chunk <= 0 || chunk > n)
        chunk = n;
    if (x16 && (wmap || chunk % 16 || ork_mat_x16_pack(&mat) < 0)) {
        fprintf(stderr, "--x16: %s\n", wmap ? "not with --file" : chunk % 16 ? "--split ROWS "
                "must be a multiple of 16" : ork_error_message());
        return 1;
    }
    ork_matmul_act(pool, &mat, x, m, y, ORK_ACT_QUANT);     /* warm */
    double best = 1e30, sum = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        for (int64_t r0 = 0; r0 < n; r0 += chunk) {
            struct ork_mat sub = mat;   /* r0 is a group start with --x16 */
            sub.n_rows = n - r0 < chunk ? n - r0 : chunk;
            sub.data = (const uint8_t *)mat.data + (size_t)r0 * rb;
            ork_matmul_act(pool, &sub, x, m, y, ORK_ACT_QUANT);
        }
        double dt = now() - t0;
        sum += dt;
        if (dt < best)
            best = dt;
    }
    double mean = sum / reps;
    double ops = 2.0 * (double)n * (double)k * (double)m;
    printf("%s %s N=%lld K=%lld M=%lld t=%d: %.3f ms, weights %.2f GB/s, %.1f GOP/s "
           "(best of %d; mean %.3f ms, %.2f GB/s)\n",
           ork_kernels_path(), tr->name, (long long)n, (long long)k, (long long)m,
           ork_pool_threads(pool), best * 1e3, (double)bytes / best / 1e9, ops / best / 1e9,
           reps, mean * 1e3, (double)bytes / mean / 1e9);
    ork_pool_destroy(pool);
    if (wmap)
        munmap(wmap, bytes);
    free(w);
    free(x);
    free(y);
    return 0;
}


/* ---- chain: a decode token's matmuls against the read kernel ---- */

/* Qwen3-1.7B (the shapes of `ork gguf synth --preset 1.7b`): dim 2048, 16 query heads and 8 KV
 * heads of 128, FFN 6144, 28 layers, vocabulary 151936 (the LM head). */
#define CH_LAYERS 28
#define CH_DIM 2048
#define CH_KV 1024
#define CH_FFN 6144
#define CH_VOCAB 151936
#define CH_PER_LAYER 7          /* q k v | o | gate up | down */
#define CH_CALLS_PER_LAYER 4    /* the engine's calls: Q/K/V together, O, gate/up together, down */
#define CH_REPS_MAX 1000

struct ch_read {
    const uint8_t *p;
    size_t n;
    uint64_t sink;
};

/* Thread ith reads its 4 KiB-aligned share of [p, p + n). */
static void ch_read_fn(void *ctx, int ith, int nth)
{
    struct ch_read *j = ctx;
    size_t per = j->n / (size_t)nth & ~(size_t)4095;
    size_t a = per * (size_t)ith, b = ith == nth - 1 ? j->n : a + per;
    uint64_t v = ork_cpu_read_sum(j->p + a, b - a);
    __atomic_fetch_add(&j->sink, v, __ATOMIC_RELAXED);
}

static void ch_read(struct ork_pool *pool, const uint8_t *p, size_t n, struct ch_read *j)
{
    j->p = p;
    j->n = n;
    ork_pool_run(pool, ch_read_fn, j);
}

/* The interleaved decode kernel's loads without its arithmetic (docs/kernels.md "Interleaved
 * weights": a group is 16 rows; per block 32 bytes of scales, then 8 (Q8_0) or 4 (Q4_0)
 * 64-byte vectors of quants). */
#define CH_GROUP_ROWS 16
#define CH_SCALE_BYTES 32
#define CH_CHUNK 64
#define CH_STREAMS 5     /* as the Q8_0 / Q4_0 decode kernels (ORK_X16_STREAMS) */

struct ch_loads {
    const struct ork_mat *const *w;
    int n_w;
    uint64_t sink;
};

#ifdef CH_HAVE_LOADS
#define CH_TGT __attribute__((target("avx512f")))

/* One pass: block by block, each of the ns (<= CH_STREAMS) groups' scale load and `chunks`
 * quant loads (constant when inlined), into one accumulator per stream. */
CH_TGT static inline __attribute__((always_inline)) __m512i
ch_pass(const uint8_t *const *g, int ns, int64_t nb, size_t bbytes, int chunks)
{
    __m512i acc[CH_STREAMS];
    for (int t = 0; t < CH_STREAMS; t++)
        acc[t] = _mm512_setzero_si512();
    for (int64_t b = 0; b < nb; b++)
        for (int t = 0; t < CH_STREAMS; t++) {
            if (t >= ns)
                break;
            const uint8_t *p = g[t] + (size_t)b * bbytes;
            __m512i v = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)p));
            for (int c = 0; c < chunks; c += 2)
                v = _mm512_add_epi64(v, _mm512_add_epi64(
                        _mm512_loadu_si512(p + CH_SCALE_BYTES + c * CH_CHUNK),
                        _mm512_loadu_si512(p + CH_SCALE_BYTES + (c + 1) * CH_CHUNK)));
            acc[t] = _mm512_add_epi64(acc[t], v);
        }
    __m512i sum = acc[0];
    for (int t = 1; t < CH_STREAMS; t++)
        sum = _mm512_add_epi64(sum, acc[t]);
    return sum;
}

CH_TGT static __m512i ch_pass8(const uint8_t *const *g, int ns, int64_t nb, size_t bbytes)
{
    return ch_pass(g, ns, nb, bbytes, 8);
}

CH_TGT static __m512i ch_pass4(const uint8_t *const *g, int ns, int64_t nb, size_t bbytes)
{
    return ch_pass(g, ns, nb, bbytes, 4);
}

CH_TGT static void ch_loads_fn(void *ctx, int ith, int nth)
{
    struct ch_loads *j = ctx;
    int64_t rows = 0;
    for (int q = 0; q < j->n_w; q++)
        rows += j->w[q]->n_rows;
    int64_t groups = rows / CH_GROUP_ROWS, per = (groups + nth - 1) / nth;
    int64_t g0 = per * ith, g1 = g0 + per < groups ? g0 + per : groups;
    const struct ork_mat *w = j->w[0];          /* matrices of one call share K and type */
    size_t gbytes = CH_GROUP_ROWS * w->row_bytes;
    size_t bbytes = CH_GROUP_ROWS * ork_type_traits(w->type)->block_bytes;
    int chunks = (int)((bbytes - CH_SCALE_BYTES) / CH_CHUNK);
    int64_t nb = w->n_cols / (int64_t)ork_type_traits(w->type)->block;
    int64_t span = (g1 - g0 + CH_STREAMS - 1) / CH_STREAMS;
    __m512i acc = _mm512_setzero_si512();
    for (int64_t r = 0; r < span; r++) {
        const uint8_t *g[CH_STREAMS];
        int ns = 0;
        for (int t = 0; t < CH_STREAMS; t++) {
            int64_t gi = g0 + t * span + r, base = 0;
            if (gi >= g1)
                continue;
            int q = 0;      /* the matrix holding group gi (rows of the call end to end) */
            while (gi >= base + j->w[q]->n_rows / CH_GROUP_ROWS)
                base += j->w[q++]->n_rows / CH_GROUP_ROWS;
            g[ns++] = (const uint8_t *)j->w[q]->data + (size_t)(gi - base) * gbytes;
        }
        acc = _mm512_add_epi64(acc, chunks == 8 ? ch_pass8(g, ns, nb, bbytes)
                                                : ch_pass4(g, ns, nb, bbytes));
    }
    __atomic_fetch_add(&j->sink, (uint64_t)_mm512_reduce_add_epi64(acc), __ATOMIC_RELAXED);
}
#else
static void ch_loads_fn(void *ctx, int ith, int nth)
{
    (void)ctx, (void)ith, (void)nth;
}
#endif

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int cmd_chain(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    uint32_t type = type_by_name(argv[2]);
    int threads = argc > 3 ? atoi(argv[3]) : 2, reps = argc > 4 ? atoi(argv[4]) : 20;
    const struct ork_type_traits *tr = type == UINT32_MAX ? NULL : ork_type_traits(type);
    if (!tr || threads < 1 || reps < 1 || reps > CH_REPS_MAX) {
        fprintf(stderr, "chain: bad type, thread count or reps (1..%d)\n", CH_REPS_MAX);
        return 2;
    }
    static const int64_t rows[CH_PER_LAYER] = { CH_DIM, CH_KV, CH_KV, CH_DIM, CH_FFN, CH_FFN,
                                                 CH_DIM };
    static const int64_t cols[CH_PER_LAYER] = { CH_DIM, CH_DIM, CH_DIM, CH_DIM, CH_DIM, CH_DIM,
                                                CH_FFN };
    enum { N_MATS = CH_LAYERS * CH_PER_LAYER + 1 };
    struct ork_mat *mats = calloc(N_MATS, sizeof *mats);
    size_t total = 0;
    for (int i = 0; i < N_MATS; i++) {
        int r = i == N_MATS - 1 ? -1 : i % CH_PER_LAYER;
        mats[i].type = type;
        mats[i].n_rows = r < 0 ? CH_VOCAB : rows[r];
        mats[i].n_cols = r < 0 ? CH_DIM : cols[r];
        mats[i].row_bytes = ork_type_row_bytes(type, (uint64_t)mats[i].n_cols);
        total += mats[i].row_bytes * (size_t)mats[i].n_rows;
    }
    const size_t huge = (size_t)2 << 20;
    uint8_t *w = aligned_alloc(huge, (total + huge - 1) / huge * huge);
    float *x = malloc(CH_FFN * sizeof(float)), *y = malloc((CH_VOCAB + 2 * CH_FFN) * sizeof(float));
    struct ork_pool *pool = NULL;
    if (!mats || !w || !x || !y || ork_pool_create(threads, &pool) < 0) {
        fprintf(stderr, "chain: out of memory (%zu MiB of weights)\n", total >> 20);
        return 1;
    }
    (void)madvise(w, (total + huge - 1) / huge * huge, MADV_HUGEPAGE);
    /* random bytes, then every block's leading f16 scale set to a small finite value */
    for (size_t i = 0; i < total; i += 4) {
        uint32_t v = rnd();
        memcpy(w + i, &v, total - i < 4 ? total - i : 4);
    }
    size_t off = 0;
    int n_x16 = 0;
    for (int i = 0; i < N_MATS; i++) {
        mats[i].data = w + off;
        size_t bytes = mats[i].row_bytes * (size_t)mats[i].n_rows;
        if (type == ORK_TYPE_Q8_0 || type == ORK_TYPE_Q4_0)
            for (size_t b = 0; b < bytes; b += tr->block_bytes) {
                uint16_t h = 0x2000;    /* 2^-7 */
                memcpy(w + off + b, &h, 2);
            }
        if (ork_mat_x16_wanted(&mats[i]) && ork_mat_x16_pack(&mats[i]) == 0)
            n_x16++;
        off += bytes;
    }
    for (int i = 0; i < CH_FFN; i++)
        x[i] = sinf(0.37f * (float)i);

    /* the load-only walk follows the interleaved layout */
#ifdef CH_HAVE_LOADS
    const bool loads = n_x16 == N_MATS && __builtin_cpu_supports("avx512f") &&
                       (type == ORK_TYPE_Q8_0 || type == ORK_TYPE_Q4_0);
#else
    const bool loads = false;
#endif
    double *res[4], *ratio[3];
    for (int v = 0; v < 4; v++)
        res[v] = calloc((size_t)reps, sizeof(double));
    for (int v = 0; v < 3; v++)
        ratio[v] = calloc((size_t)reps, sizeof(double));
    struct ch_read rj = { 0 };
    for (int rep = -1; rep < reps; rep++) {       /* rep -1: warm-up, not kept */
        double t[4];
        double t0 = now();
        ch_read(pool, w, total, &rj);
        t[0] = now() - t0;

        t0 = now();
        const uint8_t *p = w;
        for (int l = 0; l < CH_LAYERS; l++) {
            static const int first[CH_CALLS_PER_LAYER + 1] = { 0, 3, 4, 6, 7 };
            for (int c = 0; c < CH_CALLS_PER_LAYER; c++) {
                size_t n = 0;
                for (int i = first[c]; i < first[c + 1]; i++)
                    n += mats[l * CH_PER_LAYER + i].row_bytes *
                         (size_t)mats[l * CH_PER_LAYER + i].n_rows;
                ch_read(pool, p, n, &rj);
                p += n;
            }
        }
        ch_read(pool, p, (size_t)(w + total - p), &rj);
        t[1] = now() - t0;

        t0 = now();
        int bad = 0;
        for (int l = 0; l < CH_LAYERS; l++) {
            const struct ork_mat *m = &mats[l * CH_PER_LAYER];
            const struct ork_mat *qkv[3] = { &m[0], &m[1], &m[2] }, *gu[2] = { &m[4], &m[5] };
            float *qkv_y[3] = { y, y + CH_DIM, y + CH_DIM + CH_KV }, *gu_y[2] = { y, y + CH_FFN };
            bad |= ork_matmul_act_multi(pool, qkv, 3, x, 1, qkv_y, ORK_ACT_QUANT);
            bad |= ork_matmul_act(pool, &m[3], x, 1, y, ORK_ACT_QUANT);
            bad |= ork_matmul_act_multi(pool, gu, 2, x, 1, gu_y, ORK_ACT_QUANT);
            bad |= ork_matmul_act(pool, &m[6], x, 1, y, ORK_ACT_QUANT);
        }
        bad |= ork_matmul_act(pool, &mats[N_MATS - 1], x, 1, y, ORK_ACT_QUANT);
        t[2] = now() - t0;
        if (bad) {
            fprintf(stderr, "chain: %s\n", ork_error_message());
            return 1;
        }
        t[3] = 0;
        if (loads) {
            struct ch_loads lj = { 0 };
            t0 = now();
            for (int l = 0; l < CH_LAYERS; l++) {
                const struct ork_mat *m = &mats[l * CH_PER_LAYER];
                const struct ork_mat *calls[CH_CALLS_PER_LAYER][3] = {
                    { &m[0], &m[1], &m[2] }, { &m[3] }, { &m[4], &m[5] }, { &m[6] } };
                static const int n_in[CH_CALLS_PER_LAYER] = { 3, 1, 2, 1 };
                for (int c = 0; c < CH_CALLS_PER_LAYER; c++) {
                    lj.w = calls[c];
                    lj.n_w = n_in[c];
                    ork_pool_run(pool, ch_loads_fn, &lj);
                }
            }
            const struct ork_mat *head[1] = { &mats[N_MATS - 1] };
            lj.w = head;
            lj.n_w = 1;
            ork_pool_run(pool, ch_loads_fn, &lj);
            t[3] = now() - t0;
        }
        if (rep < 0)
            continue;
        for (int v = 0; v < 4; v++)
            res[v][rep] = t[v] > 0 ? (double)total / t[v] / 1e9 : 0;
        ratio[0][rep] = t[1] / t[2];
        ratio[1][rep] = t[0] / t[2];
        ratio[2][rep] = loads ? t[1] / t[3] : 0;
    }
    printf("%s %s chain t=%d: %.1f MiB per token (%d of %d matrices interleaved), %d reps\n",
           ork_kernels_path(), tr->name, ork_pool_threads(pool), (double)total / (1 << 20),
           n_x16, N_MATS, reps);
    printf("read whole %.1f GB/s, read chain %.1f GB/s, matmul chain %.1f GB/s (medians); "
           "matmul / read chain %.3f, matmul / read whole %.3f (medians of per-rep ratios)\n",
           median(res[0], reps), median(res[1], reps), median(res[2], reps),
           median(ratio[0], reps), median(ratio[1], reps));
    if (loads)
        printf("loads only (the interleaved kernel's loads, no arithmetic) %.1f GB/s; loads / "
               "read chain %.3f (median of per-rep ratios)\n", median(res[3], reps),
               median(ratio[2], reps));
    ork_pool_destroy(pool);
    for (int v = 0; v < 4; v++)
        free(res[v]);
    for (int v = 0; v < 3; v++)
        free(ratio[v]);
    free(mats);
    free(w);
    free(x);
    free(y);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "peak"))
        return cmd_peak(argc > 2 ? atoi(argv[2]) : 2);
    if (argc >= 2 && !strcmp(argv[1], "chain")) {
        int r = cmd_chain(argc, argv);
        if (r != 2)
            return r;
    }
    if (argc >= 2 && !strcmp(argv[1], "mm")) {
        int r = cmd_mm(argc, argv);
        if (r != 2)
            return r;
    }
    fprintf(stderr, "usage: kern_probe peak [threads]\n"
                    "       kern_probe mm TYPE N K M [threads] [path|-] [reps] [--file F] [--huge]\n"
                    "                     [--split ROWS] [--x16]\n"
                    "       kern_probe chain TYPE [threads] [reps]\n");
    return 2;
}
