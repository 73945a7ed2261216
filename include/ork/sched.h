/* ork/sched.h -- libork scheduling: how matmul plans use the NPU's three cores and overlap with
 * the caller's CPU work. Extends <ork/npu.h>; see docs/scheduling.md.
 *
 *   core budget   a cost model per shape (submit floor, weight bytes, per-core DMA bandwidth,
 *                 fan-out cost) picks the cores of plans created with desc.cores = 0 ("auto");
 *                 ork_npu_set_core_budget caps them for callers sharing the NPU.
 *   N-split       a multi-core plan runs one submit per core over contiguous column ranges,
 *                 issued by persistent per-core workers created once per device.
 *   chain         several plans in one PC-chained submit (ork_npu_chain_*, npu.h).
 *   stream        independent single-core plans dealt round-robin over the cores.
 *   async         submit returns a job, wait completes it; a persistent worker pinned to a big
 *                 CPU core other than the caller's runs it. No thread is created per call.
 *   recovery      a timed-out or faulted submit resets the NPU and returns the error; the
 *                 device, its weights and plans stay usable.
 *
 * Not here: tracing (ork/trace.h), planning and emission (npu.h). */
#ifndef ORK_SCHED_H
#define ORK_SCHED_H

#include <ork/npu.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- core budget ------------------------------------------------------------------------- */

/* Cap the NPU cores that plans created from now on may use (explicit desc.cores and "auto"
 * alike): 1..3, or 0 = every core of the device. Plans already created keep their split. */
int ork_npu_set_core_budget(struct ork_npu *npu, uint32_t n);
uint32_t ork_npu_core_budget(const struct ork_npu *npu);

/* The cost model's estimate for one run of an M x K x N matmul split over `cores` cores
 * (int8 or fp16), in ns: NPU time of the slowest core plus the host cost of the fan-out.
 * `out_cores` (optional) receives the cores the budget would pick for that shape on a device
 * with `max_cores` cores. Pure function of the shape; no device needed. */
double ork_npu_cost_ns(enum ork_npu_dtype dt, uint32_t m, uint32_t k, uint32_t n, uint32_t cores);
uint32_t ork_npu_budget_pick(enum ork_npu_dtype dt, uint32_t m, uint32_t k, uint32_t n,
                             uint32_t max_cores);

/* ---- CPU topology (for the async worker's placement) -------------------------------------- */

#define ORK_TOPO_MAX_CPUS 64

struct ork_cpu_topology {
    uint32_t n_cpus;                        /* CPUs 0..n_cpus-1 described */
    uint32_t capacity[ORK_TOPO_MAX_CPUS];   /* relative capacity (sysfs cpu_capacity, or the
                                             * cpufreq maximum in kHz); 0 = unusable/offline.
                                             * All equal = topology unknown. */
};

/* Read the machine's topology: /sys/devices/system/cpu/cpuN/cpu_capacity, else
 * cpufreq/cpuinfo_max_freq, else every allowed CPU equal. CPUs outside this thread's affinity
 * mask get capacity 0. */
int ork_cpu_topology_detect(struct ork_cpu_topology *out);
/* The CPU a worker serving a caller on `caller_cpu` should be pinned to: a big core (capacity
 * >= 3/4 of the largest) other than the caller's; never a smaller core when big ones are known.
 * When every candidate is the caller's, -1 (leave unpinned). All equal: any CPU but the caller's. */
int ork_cpu_topology_pick_worker(const struct ork_cpu_topology *t, int caller_cpu);
/* Use this topology instead of the detected one (tests; callers that partition the CPUs
 * themselves). Only before the first async submit on the device: ORK_EBUSY after. */
int ork_npu_set_topology(struct ork_npu *npu, const struct ork_cpu_topology *t);

/* ---- async ------------------------------------------------------------------------------- */

struct ork_npu_job;     /* lives inside its plan or chain: one in flight per plan/chain */

/* Copy A in now (the caller may reuse A at once) and queue the run on the device's async
 * worker; C[m][n] is written by the time ork_npu_job_wait returns (keep it alive until then). */
int ork_npu_matmul_submit_async(struct ork_npu_matmul *mm, const void *a, uint32_t m, void *c,
                                struct ork_npu_job **out);
/* The same for a chain: every plan with all its rows. */
int ork_npu_chain_submit_async(struct ork_npu_chain *ch, const void *const *a, void *const *c,
                               struct ork_npu_job **out);
/* Block until the job is done; returns its result (0 or the run's ORK_E* with its message). */
int ork_npu_job_wait(struct ork_npu_job *job);

/* The CPU the async worker pinned itself to (-1: unpinned or not started) and the CPU it last
 * ran a job on (sched_getcpu() inside the worker; -1 before its first job). */
int ork_npu_async_worker_cpu(const struct ork_npu *npu);
int ork_npu_async_worker_last_cpu(const struct ork_npu *npu);

/* ---- stream ------------------------------------------------------------------------------ */

/* Run n independent single-core plans, plan i on core i % cores (each with all its rows),
 * concurrently across the cores; blocking. Same types as ork_npu_chain_run. */
int ork_npu_stream_run(struct ork_npu_matmul *const *plans, uint32_t n, const void *const *a,
                       void *const *c);

/* ---- recovery ---------------------------------------------------------------------------- */

/* NPU resets the library performed after a timed-out or faulted submit. */
uint64_t ork_npu_resets(const struct ork_npu *npu);

#ifdef __cplusplus
}
#endif
#endif
