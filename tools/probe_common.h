/* probe_common.h -- shared pieces of the scheduling probes (tools/probe_*.c, never linked into
 * libork): the seven decode projections of a 7B-class layer (Qwen2.5-7B: dim 3584, kv dim 512,
 * ffn 18944), opening the simulator in paced timing-only mode, weights, timing helpers and the
 * common command-line flags (--device, --load-file, --trace). Public libork headers only. */
#ifndef ORK_PROBE_COMMON_H
#define ORK_PROBE_COMMON_H

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/npu.h>
#include <ork/sched.h>
#include <ork/sim.h>
#include <ork/trace.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PROBE_NPROJ 7

struct probe_proj {
    const char *name;
    uint32_t k, n;              /* W is n x k: C[m][n] = A[m][k] . W^T */
};

/* Qwen2.5-7B layer shapes (the decode story of anchors §4). */
static const struct probe_proj probe_7b[PROBE_NPROJ] = {
    { "q", 3584, 3584 }, { "k", 3584, 512 }, { "v", 3584, 512 }, { "o", 3584, 3584 },
    { "gate", 3584, 18944 }, { "up", 3584, 18944 }, { "down", 18944, 3584 },
};

struct probe_opts {
    const char *device;         /* "sim" (default) or a board backend */
    const char *load_file;      /* sim: write the debugfs load file here */
    const char *trace;          /* trace-event JSON output */
    enum ork_sim_timing timing;
};

static inline double probe_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static inline int probe_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static inline double probe_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, probe_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The fastest of n runs: on a shared machine the least disturbed one. */
static inline double probe_min(const double *v, int n)
{
    double m = v[0];
    for (int i = 1; i < n; i++)
        m = v[i] < m ? v[i] : m;
    return m;
}

/* Parse the common flags at argv[*i]; returns 1 if consumed, 0 if not ours, -1 on error. */
static inline int probe_common_flag(struct probe_opts *o, int argc, char **argv, int *i)
{
    const char *f = argv[*i];
    const char **dst = !strcmp(f, "--device") ? &o->device
                     : !strcmp(f, "--load-file") ? &o->load_file
                     : !strcmp(f, "--trace") ? &o->trace : NULL;
    if (!dst)
        return 0;
    if (*i + 1 >= argc) {
        fprintf(stderr, "%s needs a value\n", f);
        return -1;
    }
    *dst = argv[++*i];
    return 1;
}

/* Parse a command line of the common flags plus one count flag `name` N (1..1000; otherwise
 * *count = dflt). 0 on success; 2 (the exit status) after printing `usage` on anything else. */
static inline int probe_parse_count(int argc, char **argv, struct probe_opts *o,
                                    const char *name, int dflt, int *count, const char *usage)
{
    *count = dflt;
    for (int i = 1; i < argc; i++) {
        int r = probe_common_flag(o, argc, argv, &i);
        if (r < 0)
            return 2;
        if (r)
            continue;
        if (strcmp(argv[i], name) || i + 1 >= argc) {
            fprintf(stderr, "%s", usage);
            return 2;
        }
        *count = atoi(argv[++i]);
    }
    if (*count < 1 || *count > 1000)
        *count = dflt;
    return 0;
}

static inline struct ork_npu *probe_open(const struct probe_opts *o)
{
    struct ork_sim_opts so = { .struct_size = sizeof so, .timing = o->timing,
                               .load_path = o->load_file };
    struct ork_npu_opts no = { .struct_size = sizeof no, .device = o->device ? o->device : "sim",
                               .sim = &so };
    struct ork_npu *npu = NULL;
    int ret = ork_npu_open(&no, &npu);
    if (ret < 0) {
        fprintf(stderr, "open: %s\n", ork_error_describe(ret));
        return NULL;
    }
    if (o->trace && ork_trace_start(o->trace) < 0) {
        fprintf(stderr, "trace: %s\n", ork_error_message());
        ork_npu_close(npu);
        return NULL;
    }
    return npu;
}

static inline void probe_close(struct ork_npu *npu, const struct probe_opts *o)
{
    if (o->trace) {
        if (ork_trace_stop() < 0)
            fprintf(stderr, "trace: %s\n", ork_error_message());
        else
            printf("trace written to %s\n", o->trace);
    }
    ork_npu_close(npu);
}

/* int8 weights for one projection from a fixed pseudo-random stream (seeded per projection). */
static inline struct ork_npu_weights *probe_weights(struct ork_npu *npu, uint32_t k, uint32_t n,
                                                    uint32_t max_m, uint64_t seed)
{
    int8_t *w = ork_malloc((size_t)k * n);
    if (!w)
        return NULL;
    uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
    for (size_t i = 0; i < (size_t)k * n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        w[i] = (int8_t)((s >> 24) % 255 - 127);
    }
    struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = ORK_NPU_I8, .k = k,
                                       .n = n, .w = w, .max_m = max_m };
    struct ork_npu_weights *wt = NULL;
    int ret = ork_npu_weights_create(npu, &wd, &wt);
    ork_free(w);
    if (ret < 0)
        fprintf(stderr, "weights %ux%u: %s\n", k, n, ork_error_describe(ret));
    return wt;
}

static inline struct ork_npu_matmul *probe_plan(struct ork_npu_weights *wt, uint32_t m,
                                                uint32_t cores)
{
    struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = m, .cores = cores };
    struct ork_npu_matmul *mm = NULL;
    int ret = ork_npu_matmul_create(wt, &md, &mm);
    if (ret < 0)
        fprintf(stderr, "plan: %s\n", ork_error_describe(ret));
    return mm;
}

#endif
