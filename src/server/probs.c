/* probs.c -- per-token log-probabilities (llama-server n_probs, OpenAI logprobs/top_logprobs)
 * off the scheduler's critical path.
 *
 * The scheduler only copies the logits it sampled from into a free snapshot (n_vocab floats,
 * a memcpy) and queues it; one worker thread computes the log-sum-exp and the top N by
 * partial selection (a size-N min-heap over the vocabulary: O(n_vocab log N), not the
 * n_vocab x N^2 of repeated arg-max), writes the entry into the task and wakes its HTTP
 * thread. Snapshots come from a fixed pool (SRV_PROBS_SNAPS_PER_SLOT per slot, allocated with
 * the first request that asks for probabilities); the scheduler waits for a free one only
 * when the worker is that many tokens behind, which it never is while it keeps up (one
 * computation is about an O(n_vocab) pass, a decode step several).
 *
 * Not here: sampling (sched.c), the response shapes (routes_native.c, routes_openai.c). */
#include "srv_priv.h"

#include <ork/alloc.h>
#include <ork/error.h>

#include <math.h>
#include <string.h>

/* Terms of the softmax denominator summed in float before they join the double total: each
 * term is <= 1, so a float partial sum of 256 loses at most ~256 * 2^-24 relative. */
#define SRV_PROBS_SUM_BLOCK 256

/* Snapshots per slot: how many tokens the worker may lag behind before the scheduler waits. */
#define SRV_PROBS_SNAPS_PER_SLOT 4

/* e^x for x <= 0 (a logit minus the maximum), to about 2e-7 relative: 2^(x log2 e) as 2^n by
 * the exponent bits times 2^f, |f| <= 1/2, by its Taylor series in f ln 2 to the 6th power
 * (the next term is < 1.2e-7). Below -87 (past float's normal range) it is 0. Written for
 * the denominator of the softmax, where glibc's expf was 10 ns a term on the development VM
 * (1.5 ms over a 152k vocabulary) and this loop vectorises. */
static inline float exp_neg(float x)
{
    if (x < -87.0f)
        return 0.0f;
    float t = x * 1.44269504f;                     /* log2(e) */
    float n = (t + 12582912.0f) - 12582912.0f;    /* round to nearest: 1.5 * 2^23 */
    float g = (t - n) * 0.693147181f;              /* f ln 2 */
    float p = 1.0f + g * (1.0f + g * (0.5f + g * (1.0f / 6 + g * (1.0f / 24 + g * (1.0f / 120 +
              g * (1.0f / 720))))));
    union { float f; int32_t i; } u = { .f = p };
    u.i += (int32_t)n * (1 << 23);                 /* times 2^n: n >= -126, the result normal */
    return u.f;
}

/* Heap order: a is "below" b when its logit is smaller, or equal with a larger id (so that
 * ties keep the lowest ids, as greedy sampling picks them). */
static bool below(const float *lg, int32_t a, int32_t b)
{
    return lg[a] < lg[b] || (lg[a] == lg[b] && a > b);
}

static void sift_down(const float *lg, int32_t *h, int32_t n, int32_t i)
{
    for (;;) {
        int32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && below(lg, h[l], h[m]))
            m = l;
        if (r < n && below(lg, h[r], h[m]))
            m = r;
        if (m == i)
            return;
        int32_t t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

void ork__srv_token_probs(const float *logits, int32_t n_vocab, int32_t id, int32_t n,
                          struct srv_prob *pr)
{
    if (n > SRV_MAX_N_PROBS)
        n = SRV_MAX_N_PROBS;
    if (n > n_vocab)
        n = n_vocab;
    int32_t *h = pr->top_ids, k = 0;
    float mx = -INFINITY;
    for (int32_t i = 0; i < n_vocab; i++) {
        float x = logits[i];
        mx = x > mx ? x : mx;
        if (k < n) {
            h[k++] = i;
            if (k == n)
                for (int32_t j = n / 2 - 1; j >= 0; j--)
                    sift_down(logits, h, n, j);
        } else if (n > 0 && below(logits, h[0], i)) {
            h[0] = i;
            sift_down(logits, h, n, 0);
        }
    }
    /* exp_neg in float (exp in double took 2.9 ms over a 152k vocabulary on the development VM),
     * partial sums of SRV_PROBS_SUM_BLOCK terms added in double */
    double sum = 0;
    for (int32_t i0 = 0; i0 < n_vocab; i0 += SRV_PROBS_SUM_BLOCK) {
        int32_t i1 = i0 + SRV_PROBS_SUM_BLOCK < n_vocab ? i0 + SRV_PROBS_SUM_BLOCK : n_vocab;
        float part = 0;
        for (int32_t i = i0; i < i1; i++)
            part += exp_neg(logits[i] - mx);
        sum += part;
    }
    double lse = (double)mx + log(sum);
    /* heap -> descending: repeatedly move the smallest to the end */
    for (int32_t end = k - 1; end > 0; end--) {
        int32_t t = h[0];
        h[0] = h[end];
        h[end] = t;
        sift_down(logits, h, end, 0);
    }
    pr->id = id;
    pr->logprob = (float)((double)logits[id] - lse);
    pr->n_top = k;
    for (int32_t j = 0; j < k; j++)
        pr->top_logprobs[j] = (float)((double)logits[h[j]] - lse);
}

static int pool_alloc_locked(struct ork_server *srv)
{
    if (srv->snap)
        return 0;
    int32_t n = srv->p.n_parallel * SRV_PROBS_SNAPS_PER_SLOT;
    srv->pjobs = ork_calloc((size_t)n, sizeof(*srv->pjobs));
    srv->snap = ork_malloc((size_t)n * (size_t)srv->n_vocab * sizeof(float));
    if (!srv->pjobs || !srv->snap) {
        ork_free(srv->pjobs);
        ork_free(srv->snap);
        srv->pjobs = NULL;
        srv->snap = NULL;
        return ORK_ENOMEM;
    }
    srv->n_snap = n;
    for (int32_t i = 0; i < n; i++)
        srv->pjobs[i].next = i + 1 < n ? i + 1 : -1;
    srv->pj_free = 0;
    srv->pj_head = srv->pj_tail = -1;
    return 0;
}

int ork__srv_probs_queue(struct ork_server *srv, struct srv_task *t, int32_t idx,
                         const float *logits)
{
    pthread_mutex_lock(&srv->mu);
    if (pool_alloc_locked(srv) < 0) {
        pthread_mutex_unlock(&srv->mu);
        return ORK_ENOMEM;
    }
    while (srv->pj_free < 0 && !srv->probs_stop)
        pthread_cond_wait(&srv->snap_cv, &srv->mu);
    if (srv->pj_free < 0) {
        pthread_mutex_unlock(&srv->mu);
        return ORK_ECANCELED;
    }
    int32_t j = srv->pj_free;
    struct srv_probs_job *pj = &srv->pjobs[j];
    srv->pj_free = pj->next;
    pthread_mutex_unlock(&srv->mu);
    /* the snapshot is ours alone until queued */
    memcpy(srv->snap + (size_t)j * (size_t)srv->n_vocab, logits,
           (size_t)srv->n_vocab * sizeof(float));
    pthread_mutex_lock(&srv->mu);
    t->refs++;
    pj->t = t;
    pj->idx = idx;
    pj->next = -1;
    if (srv->pj_tail >= 0)
        srv->pjobs[srv->pj_tail].next = j;
    else
        srv->pj_head = j;
    srv->pj_tail = j;
    pthread_cond_signal(&srv->probs_cv);
    pthread_mutex_unlock(&srv->mu);
    return 0;
}

static void *probs_main(void *arg)
{
    struct ork_server *srv = arg;
    pthread_mutex_lock(&srv->mu);
    for (;;) {
        while (srv->pj_head < 0 && !srv->probs_stop)
            pthread_cond_wait(&srv->probs_cv, &srv->mu);
        if (srv->pj_head < 0)
            break;   /* stopping and drained */
        int32_t j = srv->pj_head;
        struct srv_probs_job *pj = &srv->pjobs[j];
        srv->pj_head = pj->next;
        if (srv->pj_head < 0)
            srv->pj_tail = -1;
        struct srv_task *t = pj->t;
        int32_t idx = pj->idx, id = t->ids[idx], n = t->rq->n_probs;
        pthread_mutex_unlock(&srv->mu);
        struct srv_prob pr;
        ork__srv_token_probs(srv->snap + (size_t)j * (size_t)srv->n_vocab, srv->n_vocab, id, n,
                             &pr);
        pthread_mutex_lock(&srv->mu);
        t->probs[idx] = pr;
        t->n_probs_done = idx + 1;   /* jobs of one task are queued and run in order */
        pthread_cond_broadcast(t->wake);
        ork__srv_task_release_locked(srv, t);
        pj->t = NULL;
        pj->next = srv->pj_free;
        srv->pj_free = j;
        pthread_cond_signal(&srv->snap_cv);
    }
    pthread_mutex_unlock(&srv->mu);
    return NULL;
}

int ork__srv_probs_start(struct ork_server *srv)
{
    srv->pj_free = srv->pj_head = srv->pj_tail = -1;
    if (pthread_create(&srv->probs_thread, NULL, probs_main, srv) != 0)
        return ork_errorf(ORK_ENOMEM, "server: cannot create the log-probability thread");
    srv->probs_running = true;
    return 0;
}

void ork__srv_probs_stop(struct ork_server *srv)
{
    if (!srv->probs_running)
        return;
    pthread_mutex_lock(&srv->mu);
    srv->probs_stop = true;
    pthread_cond_broadcast(&srv->probs_cv);
    pthread_cond_broadcast(&srv->snap_cv);
    pthread_mutex_unlock(&srv->mu);
    pthread_join(srv->probs_thread, NULL);
    srv->probs_running = false;
    ork_free(srv->pjobs);
    ork_free(srv->snap);
    srv->pjobs = NULL;
    srv->snap = NULL;
}
