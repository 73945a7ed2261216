/* sched.c -- the per-device pool of persistent per-core submit workers (condvar-fed, created once
 * on first use, stopped at device close; between runs a worker polls for up to
 * ork_npu_opts.worker_spin_us before it sleeps, and the submitter polls for the workers' end as
 * long before it sleeps: a hand-off inside a decode step is then a cache line, not a futex
 * wake), the stream mode built on it, and recovery of failed submits (reset, report, stay
 * usable). Which cores a plan uses is budget.c; what a core runs is
 * matmul.c; the async worker is async.c. */
#include "ork_priv.h"

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/log.h>
#include <ork/trace.h>

#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define MSG_MAX 512             /* a worker's error message carried back to the caller */
/* Polls between two clock reads while spinning: each poll is a pause (x86 PAUSE, A76 YIELD)
 * and a load of a line that stays in the L1 until it is written, so the clock is read once
 * per few microseconds at most. */
#define SPIN_POLLS_PER_CLOCK 64

/* One fan-out in progress: the caller's stack object every worker reports to. */
struct pool_batch {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_uint pending;        /* written under mu; the submitter polls it while it spins */
    bool asleep;                /* the submitter waits on cv (under mu) */
    int (*fn)(void *arg, uint32_t i);
    void *arg;
    int ret;                    /* first failure */
    char msg[MSG_MAX];
};

/* Work for one worker: index i of a batch. */
struct pool_item {
    struct pool_batch *b;
    uint32_t i;
    struct pool_item *next;
};

struct pool_worker {
    pthread_t th;
    bool started;
    struct pool_item *head, *tail;
    atomic_uint posts;          /* bumped (under the pool's mu) for every item and at stop */
};

struct ork__pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;          /* work posted or stop */
    bool stop;
    uint32_t n;                 /* workers 1..n-1 exist (index 0 is the caller) */
    uint32_t asleep;            /* workers waiting on cv (under mu) */
    int64_t spin_ns;            /* poll this long before sleeping; 0: sleep at once */
    struct pool_worker w[ORK_MM_MAX_CORES];
};

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline void spin_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

bool ork__spin_until_changed(_Atomic unsigned *word, unsigned from, int64_t spin_ns)
{
    if (spin_ns <= 0)
        return false;
    const int64_t t0 = mono_ns();
    for (unsigned k = 1;; k++) {
        if (atomic_load_explicit(word, memory_order_acquire) != from)
            return true;
        spin_pause();
        if (k % SPIN_POLLS_PER_CLOCK == 0 && mono_ns() - t0 >= spin_ns)
            return false;
    }
}

/* The worker's last touch of b is under b->mu: the submitter takes b->mu once before b goes
 * out of scope, so a submitter that saw pending reach 0 while polling cannot free it early. */
static void batch_done(struct pool_batch *b, int ret)
{
    pthread_mutex_lock(&b->mu);
    if (ret < 0 && b->ret == 0) {
        b->ret = ret;
        snprintf(b->msg, sizeof b->msg, "%s", ork_error_describe(ret));
    }
    if (atomic_fetch_sub_explicit(&b->pending, 1, memory_order_release) == 1 && b->asleep)
        pthread_cond_signal(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

/* What a worker thread is given: its pool and its core index (freed by the thread). */
struct pool_self {
    struct ork__pool *p;
    uint32_t idx;
};

static void *pool_main(void *arg)
{
    struct pool_self *self = arg;
    struct ork__pool *p = self->p;
    struct pool_worker *w = &p->w[self->idx];
    pthread_mutex_lock(&p->mu);
    for (;;) {
        if (!w->head && !p->stop && p->spin_ns > 0) {
            unsigned seen = atomic_load_explicit(&w->posts, memory_order_relaxed);
            pthread_mutex_unlock(&p->mu);
            ork__spin_until_changed(&w->posts, seen, p->spin_ns);
            pthread_mutex_lock(&p->mu);
        }
        while (!w->head && !p->stop) {
            p->asleep++;
            pthread_cond_wait(&p->cv, &p->mu);
            p->asleep--;
        }
        if (!w->head)
            break;                              /* stop, and nothing queued */
        struct pool_item *it = w->head;
        w->head = it->next;
        if (!w->head)
            w->tail = NULL;
        pthread_mutex_unlock(&p->mu);
        struct pool_batch *b = it->b;
        int ret = b->fn(b->arg, it->i);
        batch_done(b, ret);
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    ork_free(self);
    return NULL;
}

static int pool_start(struct ork_npu *npu)
{
    struct ork__pool *p = ork_calloc(1, sizeof *p);
    if (!p)
        return ork_errorf(ORK_ENOMEM, "npu scheduler: out of memory");
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->n = npu->n_cores;
    p->spin_ns = (int64_t)npu->worker_spin_us * 1000;
    for (uint32_t i = 1; i < p->n; i++) {
        struct pool_self *self = ork_calloc(1, sizeof *self);
        if (!self)
            goto err;
        self->p = p;
        self->idx = i;
        if (pthread_create(&p->w[i].th, NULL, pool_main, self) != 0) {
            ork_free(self);
            goto err;
        }
        p->w[i].started = true;
    }
    npu->pool = p;
    return 0;
err:
    npu->pool = p;              /* shutdown joins what started */
    ork__sched_shutdown(npu);
    return ork_errorf(ORK_ENOMEM, "npu scheduler: cannot start the per-core workers");
}

void ork__sched_shutdown(struct ork_npu *npu)
{
    struct ork__pool *p = npu->pool;
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    for (uint32_t i = 1; i < ORK_MM_MAX_CORES; i++)
        atomic_fetch_add_explicit(&p->w[i].posts, 1, memory_order_release);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (uint32_t i = 1; i < ORK_MM_MAX_CORES; i++)
        if (p->w[i].started)
            pthread_join(p->w[i].th, NULL);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    ork_free(p);
    npu->pool = NULL;
}

int ork__pool_run(struct ork_npu *npu, uint32_t n, int (*fn)(void *arg, uint32_t i), void *arg)
{
    if (n <= 1)
        return n ? fn(arg, 0) : 0;
    pthread_mutex_lock(&npu->sched_lock);
    int ret = npu->pool ? 0 : pool_start(npu);
    pthread_mutex_unlock(&npu->sched_lock);
    if (ret < 0)
        return ret;
    struct ork__pool *p = npu->pool;
    if (n > p->n)
        return ork_errorf(ORK_ERANGE, "npu scheduler: %u-way fan-out on %u cores", n, p->n);
    struct pool_batch b = { .fn = fn, .arg = arg };
    atomic_init(&b.pending, n - 1);
    struct pool_item items[ORK_MM_MAX_CORES];
    pthread_mutex_init(&b.mu, NULL);
    pthread_cond_init(&b.cv, NULL);
    pthread_mutex_lock(&p->mu);
    for (uint32_t i = 1; i < n; i++) {
        items[i] = (struct pool_item){ &b, i, NULL };
        struct pool_worker *w = &p->w[i];
        if (w->tail)
            w->tail->next = &items[i];
        else
            w->head = &items[i];
        w->tail = &items[i];
        atomic_fetch_add_explicit(&w->posts, 1, memory_order_release);
    }
    if (p->asleep)              /* spinning workers see their posts word change */
        pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    int r0 = fn(arg, 0);
    char msg0[MSG_MAX];
    if (r0 < 0)
        snprintf(msg0, sizeof msg0, "%s", ork_error_describe(r0));
    /* poll while the other cores keep ending within the spin bound, then sleep */
    for (unsigned left; (left = atomic_load_explicit(&b.pending, memory_order_acquire)) &&
                        ork__spin_until_changed(&b.pending, left, p->spin_ns);)
        ;
    pthread_mutex_lock(&b.mu);
    b.asleep = true;
    while (atomic_load_explicit(&b.pending, memory_order_relaxed))
        pthread_cond_wait(&b.cv, &b.mu);
    b.asleep = false;
    pthread_mutex_unlock(&b.mu);
    pthread_cond_destroy(&b.cv);
    pthread_mutex_destroy(&b.mu);
    if (r0 < 0)
        return ork_errorf(r0, "%s", msg0);
    if (b.ret < 0)
        return ork_errorf(b.ret, "%s", b.msg);
    return 0;
}

/* ---- recovery ---------------------------------------------------------------------------- */

int ork__npu_failed(struct ork_npu *npu, int ret, const char *what)
{
    char msg[MSG_MAX];
    snprintf(msg, sizeof msg, "%s", ork_error_describe(ret));
    /* A timeout leaves a core hung until reset; a DMA/device fault leaves it in an unknown
     * state: the vendor recovery is ACT_RESET (spec §10.8, §14.5). */
    if (ret != ORK_ETIMEDOUT && ret != ORK_EFAULT && ret != ORK_EDEVICE)
        return ork_errorf(ret, "%s: %s", what, msg);
    int rr = ORK_EUNSUPPORTED;
    pthread_mutex_lock(&npu->sched_lock);
    if (npu->kmd->action) {
        uint32_t v = 0;
        rr = npu->kmd->action(npu->kctx, ORK_KMD_ACT_RESET, &v);
    }
    if (rr == 0)
        npu->resets++;
    pthread_mutex_unlock(&npu->sched_lock);
    if (rr == 0) {
        ORK_LOGW("%s: %s; NPU reset", what, msg);
        return ork_errorf(ret, "%s: %s; the NPU was reset and stays usable", what, msg);
    }
    return ork_errorf(ret, "%s: %s; NPU reset not possible on this backend", what, msg);
}

uint64_t ork_npu_resets(const struct ork_npu *npu)
{
    return npu ? npu->resets : 0;
}

void ork__trace_submit(int core, const char *name, int64_t t0_ns)
{
    if (ork_trace_enabled())
        ork_trace_event(ORK_TRACE_PID_NPU, core < 0 ? ORK_TRACE_TID_ANY_CORE : core, name, t0_ns,
                        ork_trace_now_ns());
}

/* ---- stream ------------------------------------------------------------------------------ */

struct stream_ctx {
    struct ork_npu_matmul *const *plans;
    uint32_t n, cores;
    void *const *c;
};

static int stream_core(void *arg, uint32_t core)
{
    struct stream_ctx *s = arg;
    for (uint32_t i = core; i < s->n; i += s->cores) {
        struct ork_npu_matmul *mm = s->plans[i];
        int ret = ork__matmul_exec(mm, mm->m, s->cores > 1 ? (int)core : -1);
        if (ret == 0)
            ret = ork__matmul_gather(mm, s->c[i], mm->m);
        if (ret < 0)
            return ret;
    }
    return 0;
}

int ork_npu_stream_run(struct ork_npu_matmul *const *plans, uint32_t n, const void *const *a,
                       void *const *c)
{
    if (!plans || !a || !c || n < 1)
        return ork_errorf(ORK_EINVAL, "npu stream: no plans, A or C list");
    struct ork_npu *npu = plans[0] ? plans[0]->npu : NULL;
    for (uint32_t i = 0; i < n; i++) {
        if (!plans[i] || !a[i] || !c[i])
            return ork_errorf(ORK_EINVAL, "npu stream: plan %u, its A or its C is NULL", i);
        if (plans[i]->npu != npu)
            return ork_errorf(ORK_EINVAL, "npu stream: plan %u is on another device", i);
        if (plans[i]->n_cores != 1)
            return ork_errorf(ORK_EUNSUPPORTED, "npu stream: plan %u is split over %u cores; a "
                              "stream deals single-core plans over the cores", i,
                              plans[i]->n_cores);
        if (plans[i]->in_flight)
            return ork_errorf(ORK_EBUSY, "npu stream: plan %u has a run in flight", i);
        for (uint32_t j = 0; j < i; j++)
            if (plans[j] == plans[i])
                return ork_errorf(ORK_EINVAL, "npu stream: plan %u appears twice", i);
    }
    for (uint32_t i = 0; i < n; i++) {
        int ret = ork__matmul_copy_in(plans[i], a[i], plans[i]->m);
        if (ret < 0)
            return ret;
    }
    uint32_t cores = ork_npu_core_budget(npu);
    if (cores > n)
        cores = n;
    struct stream_ctx s = { plans, n, cores, c };
    return ork__pool_run(npu, cores, stream_core, &s);
}
