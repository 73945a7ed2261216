/* topology.c -- which CPU the async worker runs on: read the big.LITTLE layout from sysfs
 * (cpu_capacity, else cpufreq maximum frequency), and pick a big core other than the caller's.
 * Overlap only pays when the worker does not compete with the caller for a core, and a little
 * core's sleep/wake latency eats the gain (anchors §4, §7 "core partitioning for overlap").
 * Not here: the worker itself (async.c). */
#include "ork_priv.h"

#include <ork/error.h>

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A core counts as "big" at >= 3/4 of the largest capacity: RK3588's two A76 clusters differ
 * slightly in capacity, its A55s are at ~40 % of an A76 (kernel cpu_capacity from the DT). */
#define BIG_NUM 3u
#define BIG_DEN 4u

static int read_u32(const char *path, uint32_t *out)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    unsigned long v = 0;
    int ok = fscanf(f, "%lu", &v) == 1;
    fclose(f);
    if (!ok || v == 0 || v > UINT32_MAX)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

int ork_cpu_topology_detect(struct ork_cpu_topology *out)
{
    if (!out)
        return ork_errorf(ORK_EINVAL, "cpu topology: NULL output");
    memset(out, 0, sizeof *out);
    long n = sysconf(_SC_NPROCESSORS_CONF);
    if (n < 1)
        n = 1;
    if (n > ORK_TOPO_MAX_CPUS)
        n = ORK_TOPO_MAX_CPUS;
    out->n_cpus = (uint32_t)n;
    static const char *const files[] = { "cpu_capacity", "cpufreq/cpuinfo_max_freq" };
    bool found = false;
    for (size_t s = 0; s < sizeof files / sizeof files[0] && !found; s++) {
        for (uint32_t i = 0; i < out->n_cpus; i++) {
            char path[128];
            snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%u/%s", i, files[s]);
            if (read_u32(path, &out->capacity[i]) == 0)
                found = true;
        }
        if (!found)
            memset(out->capacity, 0, sizeof out->capacity);
    }
    for (uint32_t i = 0; i < out->n_cpus; i++)
        if (!found)
            out->capacity[i] = 1;            /* unknown: all equal */
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        for (uint32_t i = 0; i < out->n_cpus; i++)
            if (!CPU_ISSET(i, &set))
                out->capacity[i] = 0;
    return 0;
}

int ork_cpu_topology_pick_worker(const struct ork_cpu_topology *t, int caller_cpu)
{
    if (!t || t->n_cpus == 0)
        return -1;
    uint32_t n = t->n_cpus < ORK_TOPO_MAX_CPUS ? t->n_cpus : ORK_TOPO_MAX_CPUS, max = 0;
    for (uint32_t i = 0; i < n; i++)
        max = t->capacity[i] > max ? t->capacity[i] : max;
    if (max == 0)
        return -1;
    /* the highest-numbered big core that is not the caller's: thread pools usually fill CPUs
     * from the low end of a cluster */
    for (uint32_t i = n; i-- > 0;) {
        uint64_t cap = t->capacity[i];
        if (cap && cap * BIG_DEN >= (uint64_t)max * BIG_NUM && (int)i != caller_cpu)
            return (int)i;
    }
    return -1;
}

int ork_npu_set_topology(struct ork_npu *npu, const struct ork_cpu_topology *t)
{
    if (!npu || !t)
        return ork_errorf(ORK_EINVAL, "npu topology: NULL device or topology");
    if (t->n_cpus == 0 || t->n_cpus > ORK_TOPO_MAX_CPUS)
        return ork_errorf(ORK_ERANGE, "npu topology: %u CPUs (1..%d)", t->n_cpus,
                          ORK_TOPO_MAX_CPUS);
    pthread_mutex_lock(&npu->sched_lock);
    bool started = npu->async != NULL;
    if (!started) {
        npu->topo = *t;
        npu->has_topo = true;
    }
    pthread_mutex_unlock(&npu->sched_lock);
    if (started)
        return ork_errorf(ORK_EBUSY, "npu topology: the async worker is already placed");
    return 0;
}
