/* async.c -- asynchronous runs: `submit` copies A in on the caller and queues the run on the
 * device's one persistent async worker (created on first use, pinned to a big CPU core other
 * than the caller's, topology.c); `wait` blocks on its completion. Overlapping the caller's
 * preparation of the next matmul with the NPU work of this one only pays with a persistent
 * worker on a free big core; a thread per call inheriting the caller's affinity did not (anchors
 * §4; the board figures are in docs/scheduling.md "The decode story"). Multi-core plans fan out
 * from the worker through the per-core pool. Between jobs the worker polls for the next one for
 * ork_npu_opts.worker_spin_us before it sleeps, and a waiter polls as long for its job's end
 * before it sleeps (as the per-core workers do, sched.c).
 * Not here: what a run submits (matmul.c, matmul_chain.c), placement policy (topology.c). */
#include "ork_priv.h"

#include <ork/alloc.h>
#include <ork/debug.h>
#include <ork/error.h>
#include <ork/log.h>
#include <ork/trace.h>

#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

struct ork__async {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t work_cv;     /* a job was queued, or stop */
    pthread_cond_t done_cv;     /* a job completed */
    struct ork_npu_job *head, *tail;
    bool stop;
    atomic_uint posts;          /* bumped (under mu) for every job queued and at stop */
    atomic_uint ends;           /* bumped (under mu) for every job done */
    uint32_t asleep, waiters;   /* the worker on work_cv, waiters on done_cv (under mu) */
    int64_t spin_ns;            /* poll this long before sleeping; 0: sleep at once */
    int cpu;                    /* pinned CPU, -1 = unpinned */
    atomic_int last_cpu;        /* sched_getcpu() at the worker's last job */
};

static void run_job(struct ork_npu_job *j)
{
    int ret;
    if (j->mm) {
        ret = ork__matmul_exec(j->mm, j->m, -1);
        if (ret == 0)
            ret = ork__matmul_gather(j->mm, j->c, j->m);
    } else {
        ret = ork__chain_exec(j->ch, j->cs);
    }
    j->ret = ret;
    if (ret < 0)
        snprintf(j->msg, sizeof j->msg, "%s", ork_error_describe(ret));
}

static void *async_main(void *arg)
{
    struct ork__async *as = arg;
    pthread_mutex_lock(&as->mu);
    for (;;) {
        if (!as->head && !as->stop && as->spin_ns > 0) {
            unsigned seen = atomic_load_explicit(&as->posts, memory_order_relaxed);
            pthread_mutex_unlock(&as->mu);
            ork__spin_until_changed(&as->posts, seen, as->spin_ns);
            pthread_mutex_lock(&as->mu);
        }
        while (!as->head && !as->stop) {
            as->asleep++;
            pthread_cond_wait(&as->work_cv, &as->mu);
            as->asleep--;
        }
        if (!as->head)
            break;
        struct ork_npu_job *j = as->head;
        as->head = j->next;
        if (!as->head)
            as->tail = NULL;
        pthread_mutex_unlock(&as->mu);
        atomic_store(&as->last_cpu, sched_getcpu());
        run_job(j);
        pthread_mutex_lock(&as->mu);
        __atomic_store_n(&j->done, true, __ATOMIC_RELEASE);
        atomic_fetch_add_explicit(&as->ends, 1, memory_order_release);
        if (as->waiters)
            pthread_cond_broadcast(&as->done_cv);
    }
    pthread_mutex_unlock(&as->mu);
    return NULL;
}

/* Create the worker and place it (under npu->sched_lock). */
static int async_start(struct ork_npu *npu)
{
    struct ork__async *as = ork_calloc(1, sizeof *as);
    if (!as)
        return ork_errorf(ORK_ENOMEM, "npu async: out of memory");
    pthread_mutex_init(&as->mu, NULL);
    pthread_cond_init(&as->work_cv, NULL);
    pthread_cond_init(&as->done_cv, NULL);
    atomic_init(&as->last_cpu, -1);
    as->spin_ns = (int64_t)npu->worker_spin_us * 1000;
    struct ork_cpu_topology topo;
    if (npu->has_topo)
        topo = npu->topo;
    else
        (void)ork_cpu_topology_detect(&topo);
    int caller = sched_getcpu();
    /* A caller pinned to one CPU is on that CPU; an unpinned caller is on the one it runs on
     * now (the best guess available). */
    cpu_set_t mine;
    CPU_ZERO(&mine);
    if (pthread_getaffinity_np(pthread_self(), sizeof mine, &mine) == 0 && CPU_COUNT(&mine) == 1)
        for (int i = 0; i < CPU_SETSIZE; i++)
            if (CPU_ISSET(i, &mine))
                caller = i;
    as->cpu = ork_cpu_topology_pick_worker(&topo, caller);
    if (pthread_create(&as->th, NULL, async_main, as) != 0) {
        pthread_cond_destroy(&as->done_cv);
        pthread_cond_destroy(&as->work_cv);
        pthread_mutex_destroy(&as->mu);
        ork_free(as);
        return ork_errorf(ORK_ENOMEM, "npu async: cannot start the worker thread");
    }
    if (as->cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(as->cpu, &set);
        if (pthread_setaffinity_np(as->th, sizeof set, &set) != 0) {
            ORK_LOGW("npu async: cannot pin the worker to CPU %d; it runs unpinned", as->cpu);
            as->cpu = -1;
        }
    }
    if (ork_debug(ORK_DBG_SUBMIT))
        ORK_LOGI("npu async: worker on CPU %d (caller on CPU %d)", as->cpu, caller);
    npu->async = as;
    return 0;
}

void ork__async_shutdown(struct ork_npu *npu)
{
    struct ork__async *as = npu->async;
    if (!as)
        return;
    pthread_mutex_lock(&as->mu);
    as->stop = true;
    atomic_fetch_add_explicit(&as->posts, 1, memory_order_release);
    pthread_cond_broadcast(&as->work_cv);
    pthread_mutex_unlock(&as->mu);
    pthread_join(as->th, NULL);
    pthread_cond_destroy(&as->done_cv);
    pthread_cond_destroy(&as->work_cv);
    pthread_mutex_destroy(&as->mu);
    ork_free(as);
    npu->async = NULL;
}

static int enqueue(struct ork_npu *npu, struct ork_npu_job *j)
{
    pthread_mutex_lock(&npu->sched_lock);
    int ret = npu->async ? 0 : async_start(npu);
    pthread_mutex_unlock(&npu->sched_lock);
    if (ret < 0)
        return ret;
    struct ork__async *as = npu->async;
    pthread_mutex_lock(&as->mu);
    j->next = NULL;
    j->done = false;
    j->queued = true;
    j->ret = 0;
    if (as->tail)
        as->tail->next = j;
    else
        as->head = j;
    as->tail = j;
    atomic_fetch_add_explicit(&as->posts, 1, memory_order_release);
    if (as->asleep)             /* a polling worker sees posts change */
        pthread_cond_signal(&as->work_cv);
    pthread_mutex_unlock(&as->mu);
    return 0;
}

int ork_npu_matmul_submit_async(struct ork_npu_matmul *mm, const void *a, uint32_t m, void *c,
                                struct ork_npu_job **out)
{
    if (out)
        *out = NULL;
    if (!mm || !a || !c || !out)
        return ork_errorf(ORK_EINVAL, "npu async: NULL plan, A, C or job");
    if (mm->in_flight || mm->ajob.queued)
        return ork_errorf(ORK_EBUSY, "npu async: a run is already in flight on this plan");
    if (m < 1 || m > mm->m)
        return ork_errorf(ORK_ERANGE, "npu async: M=%u outside 1..%u (the plan's rows)", m, mm->m);
    int ret = ork__matmul_copy_in(mm, a, m);
    if (ret < 0)
        return ret;
    struct ork_npu_job *j = &mm->ajob;
    memset(j, 0, sizeof *j);
    j->mm = mm;
    j->c = c;
    j->m = m;
    mm->in_flight = true;
    ret = enqueue(mm->npu, j);
    if (ret < 0) {
        mm->in_flight = false;
        return ret;
    }
    *out = j;
    return 0;
}

int ork_npu_chain_submit_async(struct ork_npu_chain *ch, const void *const *a, void *const *c,
                               struct ork_npu_job **out)
{
    if (out)
        *out = NULL;
    if (!ch || !a || !c || !out)
        return ork_errorf(ORK_EINVAL, "npu async: NULL chain, A list, C list or job");
    struct ork_npu_job *j = ork__chain_job(ch);
    if (j->queued)
        return ork_errorf(ORK_EBUSY, "npu async: the chain has a run in flight");
    int ret = ork__chain_copy_in(ch, a);
    if (ret < 0)
        return ret;
    memset(j, 0, sizeof *j);
    j->ch = ch;
    j->cs = c;
    ret = enqueue(ork__chain_npu(ch), j);
    if (ret < 0)
        return ret;
    *out = j;
    return 0;
}

int ork_npu_job_wait(struct ork_npu_job *j)
{
    if (!j)
        return ork_errorf(ORK_EINVAL, "npu async: NULL job");
    if (!j->queued)
        return ork_errorf(ORK_EINVAL, "npu async: wait on a job that is not in flight");
    struct ork_npu *npu = j->mm ? j->mm->npu : ork__chain_npu(j->ch);
    struct ork__async *as = npu->async;
    /* poll while jobs keep ending within the spin bound, then sleep */
    for (unsigned seen = atomic_load_explicit(&as->ends, memory_order_acquire);
         !__atomic_load_n(&j->done, __ATOMIC_ACQUIRE) &&
         ork__spin_until_changed(&as->ends, seen, as->spin_ns);
         seen = atomic_load_explicit(&as->ends, memory_order_acquire))
        ;
    pthread_mutex_lock(&as->mu);
    as->waiters++;
    while (!j->done)
        pthread_cond_wait(&as->done_cv, &as->mu);
    as->waiters--;
    j->queued = false;
    pthread_mutex_unlock(&as->mu);
    if (j->mm)
        j->mm->in_flight = false;
    if (j->ret < 0)
        return ork_errorf(j->ret, "%s", j->msg);
    return 0;
}

int ork_npu_async_worker_cpu(const struct ork_npu *npu)
{
    return npu && npu->async ? npu->async->cpu : -1;
}

int ork_npu_async_worker_last_cpu(const struct ork_npu *npu)
{
    return npu && npu->async ? atomic_load(&npu->async->last_cpu) : -1;
}
