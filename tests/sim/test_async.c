/* test_async.c -- placement of the async worker: with an injected CPU topology it runs on a big
 * core that is not the caller's (checked by the affinity it set and by sched_getcpu() inside the
 * worker), never on a little core when big ones are known, and stays unpinned rather than share
 * the caller's core. Its results are the single-core path's bits, and the worker is created once
 * per device, not per call. Needs >= 2 CPUs (skips otherwise). */
#include "ork_test.h"

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/npu.h>
#include <ork/sched.h>

#include <dirent.h>
#include <sched.h>
#include <stdint.h>

static struct ork_npu *open_sim(void)
{
    struct ork_npu_opts o = { .struct_size = sizeof o, .device = "sim" };
    struct ork_npu *npu = NULL;
    if (ork_npu_open(&o, &npu) < 0)
        return NULL;
    return npu;
}

/* Threads of this process (to show the worker is not re-created per call). */
static int thread_count(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* Run a small int8 matmul async `reps` times on a device with topology `t`, the caller pinned to
 * `caller`; returns the worker's pinned CPU and the CPU it last ran on. */
static void run_placed(const struct ork_cpu_topology *t, int caller, int *pinned, int *ran,
                       bool *exact)
{
    enum { M = 1, K = 64, N = 96 };
    *pinned = *ran = -2;
    *exact = false;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(caller, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0)
        return;
    struct ork_npu *npu = open_sim();
    if (!npu)
        return;
    int8_t a[M * K], w[N * K];
    int32_t c[M * N], ref[M * N];
    for (int i = 0; i < M * K; i++)
        a[i] = (int8_t)(i * 7 - 100);
    for (int i = 0; i < N * K; i++)
        w[i] = (int8_t)(i * 13 + 5);
    struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = ORK_NPU_I8, .k = K,
                                       .n = N, .w = w };
    struct ork_npu_weights *wt = NULL;
    struct ork_npu_matmul *mm = NULL;
    struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = M, .cores = 1 };
    if (ork_npu_set_topology(npu, t) < 0 || ork_npu_weights_create(npu, &wd, &wt) < 0 ||
        ork_npu_matmul_create(wt, &md, &mm) < 0 || ork_npu_matmul_run_i8(mm, a, M, ref) < 0)
        goto out;
    *exact = true;
    int threads = -1;
    for (int rep = 0; rep < 5; rep++) {
        struct ork_npu_job *j = NULL;
        memset(c, 0, sizeof c);
        if (ork_npu_matmul_submit_async(mm, a, M, c, &j) < 0 || ork_npu_job_wait(j) < 0) {
            *exact = false;
            break;
        }
        *exact = *exact && memcmp(c, ref, sizeof c) == 0;
        if (rep == 0)
            threads = thread_count();
        else if (thread_count() != threads)
            *exact = false;                 /* a thread per call would show here */
    }
    *pinned = ork_npu_async_worker_cpu(npu);
    *ran = ork_npu_async_worker_last_cpu(npu);
    /* placement is fixed once the worker exists */
    if (ork_npu_set_topology(npu, t) != ORK_EBUSY)
        *exact = false;
out:
    ork_npu_matmul_destroy(mm);
    ork_npu_weights_destroy(wt);
    ork_npu_close(npu);
}

static cpu_set_t original;

static void test_equal_cores_not_callers(void)
{
    struct ork_cpu_topology t = { .n_cpus = 2, .capacity = { 1024, 1024 } };
    for (int caller = 0; caller < 2; caller++) {
        int pinned, ran;
        bool exact;
        run_placed(&t, caller, &pinned, &ran, &exact);
        CHECK(exact);
        CHECK_EQ_INT(pinned, 1 - caller);
        CHECK_EQ_INT(ran, 1 - caller);
    }
}

static void test_big_not_little(void)
{
    /* CPU 0 little, CPU 1 big: a caller on the little core gets the big one */
    struct ork_cpu_topology t = { .n_cpus = 2, .capacity = { 414, 1024 } };
    int pinned, ran;
    bool exact;
    run_placed(&t, 0, &pinned, &ran, &exact);
    CHECK(exact);
    CHECK_EQ_INT(pinned, 1);
    CHECK_EQ_INT(ran, 1);
    /* a caller on the only big core: the worker is not put on the little core, nor on the
     * caller's; it runs unpinned */
    run_placed(&t, 1, &pinned, &ran, &exact);
    CHECK(exact);
    CHECK_EQ_INT(pinned, -1);
}

int main(void)
{
    if (sched_getaffinity(0, sizeof original, &original) != 0 || CPU_COUNT(&original) < 2 ||
        !CPU_ISSET(0, &original) || !CPU_ISSET(1, &original))
        SKIP("needs CPUs 0 and 1");
    RUN(test_equal_cores_not_callers);
    RUN(test_big_not_little);
    sched_setaffinity(0, sizeof original, &original);
    return ork_test_done();
}
