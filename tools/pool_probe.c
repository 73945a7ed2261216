/* pool_probe.c -- cost of dispatching jobs on the persistent thread pool (src/kernels/pool.c)
 * for several spin bounds side by side, spin_us = 0 being the condvar-only pool:
 *   rt      empty-job round trip: mean wall time of one ork_pool_run of a job that does nothing;
 *   decode  a decode-like token: DECODE_JOBS jobs of a calibrated compute loop (JOB_US of
 *           work per thread) separated by GAP_US of serial caller work; reported as the mean
 *           overhead per job over the ideal (work + gap), and the process CPU time per token;
 *   idle    one run after IDLE_MS of idleness (the workers have gone to sleep): wake-up cost.
 * Sleeps per run (workers / caller) come from ork_pool_get_stats. Not a test; not linked into
 * libork.
 *
 *   pool_probe [threads] [spin_us,...]       e.g. pool_probe 2 0,20,50,100,200,500
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <ork/error.h>
#include <ork-kernels/pool.h>

/* A decode token of a 1.7B model runs ~200 pool jobs of ~0.1-0.5 ms (docs/engine.md
 * "Threading"); between them the caller does a few microseconds of serial work (norms,
 * RoPE, residual adds). */
#define DECODE_JOBS 200
#define JOB_US 150
#define GAP_US 10
#define DECODE_TOKENS 20
#define RT_RUNS 20000
#define IDLE_RUNS 20
#define IDLE_MS 20
#define MAX_SPINS 16
/* Iterations of the compute loop between two clock reads (well under a microsecond). */
#define WORK_CHUNK 64

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
           (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

/* Compute (a dependent chain of float multiply-adds, no memory traffic) until `us` of wall
 * time have passed since the call. */
static volatile float g_sink;

static void busy_us(double us)
{
    double end = now_s() + us * 1e-6;
    float x = g_sink;
    do
        for (int i = 0; i < WORK_CHUNK; i++)
            x = x * 0.999f + 0.001f;
    while (now_s() < end);
    g_sink = x;
}

static void empty_fn(void *ctx, int ith, int nth)
{
    (void)ctx;
    (void)ith;
    (void)nth;
}

static void job_fn(void *ctx, int ith, int nth)
{
    (void)ctx;
    (void)ith;
    (void)nth;
    busy_us(JOB_US);
}

struct result {
    double rt_us, job_over_us, token_ms, token_cpu_ms, idle_us;
    double w_sleeps_per_run, c_sleeps_per_run;
};

static int measure(int threads, int spin_us, struct result *r)
{
    struct ork_pool_opts o = { .n_threads = threads, .spin_us = spin_us };
    struct ork_pool *p = NULL;
    int ret = ork_pool_create_opts(&o, &p);
    if (ret < 0)
        return ret;
    for (int i = 0; i < 1000; i++)          /* warm-up */
        ork_pool_run(p, empty_fn, NULL);

    double t0 = now_s();
    for (int i = 0; i < RT_RUNS; i++)
        ork_pool_run(p, empty_fn, NULL);
    r->rt_us = (now_s() - t0) * 1e6 / RT_RUNS;

    struct ork_pool_stats s0, s1;
    ork_pool_get_stats(p, &s0);
    double c0 = cpu_s();
    t0 = now_s();
    for (int t = 0; t < DECODE_TOKENS; t++)
        for (int j = 0; j < DECODE_JOBS; j++) {
            ork_pool_run(p, job_fn, NULL);
            busy_us(GAP_US);
        }
    double wall = now_s() - t0, cpu = cpu_s() - c0;
    ork_pool_get_stats(p, &s1);
    double runs = (double)(s1.runs - s0.runs);
    r->token_ms = wall * 1e3 / DECODE_TOKENS;
    r->token_cpu_ms = cpu * 1e3 / DECODE_TOKENS;
    r->job_over_us = (wall * 1e6 / (DECODE_TOKENS * DECODE_JOBS)) - (JOB_US + GAP_US);
    r->w_sleeps_per_run = runs > 0 ? (double)(s1.worker_sleeps - s0.worker_sleeps) / runs : 0;
    r->c_sleeps_per_run = runs > 0 ? (double)(s1.caller_sleeps - s0.caller_sleeps) / runs : 0;

    double idle = 0;
    for (int i = 0; i < IDLE_RUNS; i++) {
        struct timespec ts = { 0, IDLE_MS * 1000000L };
        nanosleep(&ts, NULL);
        double a = now_s();
        ork_pool_run(p, empty_fn, NULL);
        idle += now_s() - a;
    }
    r->idle_us = idle * 1e6 / IDLE_RUNS;
    ork_pool_destroy(p);
    return 0;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    int spins[MAX_SPINS] = { 0, 20, 50, 100, 200, 500 };
    int n_spins = 6;
    if (argc > 2) {
        n_spins = 0;
        char *s = argv[2];
        while (*s && n_spins < MAX_SPINS) {
            spins[n_spins++] = (int)strtol(s, &s, 10);
            if (*s == ',')
                s++;
        }
    }
    printf("pool_probe: %d threads; decode-like token = %d jobs x %d us work + %d us gap "
           "(ideal %.1f ms)\n", threads, DECODE_JOBS, JOB_US, GAP_US,
           DECODE_JOBS * (JOB_US + GAP_US) / 1e3);
    printf("| spin_us | empty rt us | overhead/job us | token ms | token cpu ms | "
           "worker sleeps/run | caller sleeps/run | run after %d ms idle us |\n", IDLE_MS);
    printf("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (int i = 0; i < n_spins; i++) {
        struct result r;
        int ret = measure(threads, spins[i], &r);
        if (ret < 0) {
            fprintf(stderr, "pool_probe: %s\n", ork_error_message());
            return 1;
        }
        printf("| %d | %.2f | %.2f | %.2f | %.2f | %.3f | %.3f | %.1f |\n", spins[i], r.rt_us,
               r.job_over_us, r.token_ms, r.token_cpu_ms, r.w_sleeps_per_run,
               r.c_sleeps_per_run, r.idle_us);
        fflush(stdout);
    }
    return 0;
}
