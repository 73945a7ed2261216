/* twin_timeline.c -- the twin's timeline: ops on A76 and NPU cores, simulated event by event on
 * the model clock (docs/twin.md "Timeline semantics").
 *
 * An op starts when every dependency is done and it can take its cores (ready ops are started
 * in id order, each taking the lowest free cores its mask allows). It runs its fixed latency,
 * then its body: overlapped (the slower of its issue bound and its DRAM share) or serial (the
 * DRAM stream, then the compute). Every op streaming DRAM is a stream weighted by its cores;
 * rates are max-min fair under each stream's cap (its cores' per-core bandwidth, and the rate
 * at which an overlapped body becomes issue-bound), the CPU and NPU group caps and the DRAM
 * total, and are recomputed at every event (a stage starting or ending). Pure double
 * arithmetic in a fixed order: the same ops give the same bits on every host. Not here: the
 * trace writer and totals (twin_trace.c). */
#include <ork/alloc.h>
#include <ork/error.h>

#include "twin_timeline.h"

#include <math.h>
#include <string.h>

/* An overlapped body or stream counts as finished when less than this share of it is left,
 * so rounding in rate * dt cannot leave a sliver that creates an extra event. */
#define TWIN_REL_EPS 1e-12

enum { ST_WAIT, ST_READY, ST_RUN, ST_DONE };
enum { STG_FIXED, STG_BODY, STG_STREAM, STG_COMPUTE, STG_END };

int ork_twin_create(const struct ork_twin_consts *c, struct ork_twin **out)
{
    struct ork_twin_consts def;
    if (!c) {
        ork_twin_consts_default(&def);
        c = &def;
    }
    int ret = ork_twin_consts_check(c);
    if (ret < 0)
        return ret;
    struct ork_twin *tw = ork_calloc(1, sizeof(*tw));
    if (!tw)
        return ORK_ENOMEM;
    tw->c = *c;
    *out = tw;
    return 0;
}

void ork_twin_destroy(struct ork_twin *tw)
{
    if (!tw)
        return;
    ork_free(tw->ops);
    ork_free(tw->deps);
    ork_free(tw->succ);
    ork_free(tw->ready);
    ork_free(tw);
}

const struct ork_twin_consts *ork_twin_consts_of(const struct ork_twin *tw)
{
    return &tw->c;
}

void ork_twin_step_begin(struct ork_twin *tw)
{
    tw->n_ops = 0;
    tw->n_deps = 0;
    tw->ran = false;
}

static int grow(void **p, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    uint32_t n = *cap ? *cap : 64;
    while (n < need) {
        if (n > UINT32_MAX / 2)
            return ork_errorf(ORK_ENOMEM, "twin: too many ops");
        n *= 2;
    }
    void *q = ork_realloc(*p, (size_t)n * elem);
    if (!q)
        return ORK_ENOMEM;
    *p = q;
    *cap = n;
    return 0;
}

static uint32_t res_mask(const struct ork_twin *tw, enum ork_twin_res r)
{
    int n = (int)(r == ORK_TWIN_CPU ? tw->c.cpu_cores : tw->c.npu_cores);
    return (uint32_t)((1u << n) - 1);
}

static bool work_ok(const struct ork_twin_work *w)
{
    return isfinite(w->fixed_ns) && isfinite(w->issue_ns) && isfinite(w->bytes) &&
           w->fixed_ns >= 0 && w->issue_ns >= 0 && w->bytes >= 0;
}

int ork_twin_op_add(struct ork_twin *tw, const struct ork_twin_op_desc *d, const int *deps,
                    uint32_t n_deps)
{
    if (!d || (d->res != ORK_TWIN_CPU && d->res != ORK_TWIN_NPU) ||
        (unsigned)d->phase >= ORK_TWIN_PHASE_COUNT)
        return ork_errorf(ORK_EINVAL, "twin op %u: bad resource or phase", tw->n_ops);
    uint32_t all = res_mask(tw, d->res), mask = d->core_mask ? d->core_mask & all : all;
    uint32_t k = d->n_cores ? d->n_cores : 1;
    if ((d->res == ORK_TWIN_NPU && k != 1) || (uint32_t)__builtin_popcount(mask) < k)
        return ork_errorf(ORK_EINVAL, "twin op %u: %u cores wanted, mask 0x%x allows %d", tw->n_ops,
                          k, d->core_mask, __builtin_popcount(mask));
    if (!work_ok(&d->work) || !work_ok(&d->spin.cold))
        return ork_errorf(ORK_EINVAL, "twin op %u: work must be finite and >= 0", tw->n_ops);
    if ((d->flags & ORK_TWIN_OP_SPIN) && (d->res != ORK_TWIN_CPU || k != 1 || d->spin.op))
        return ork_errorf(ORK_EINVAL, "twin op %u: a spin is one CPU core and names no spin",
                          tw->n_ops);
    if (d->spin.op && (d->spin.op > tw->n_ops ||
                       !(tw->ops[d->spin.op - 1].d.flags & ORK_TWIN_OP_SPIN) ||
                       (unsigned)d->spin.cold_phase >= ORK_TWIN_PHASE_COUNT))
        return ork_errorf(ORK_EINVAL, "twin op %u: spin reference %u is not an earlier spin op "
                          "(or its cold phase is bad)", tw->n_ops, d->spin.op);
    if ((d->flags & ORK_TWIN_OP_RELEASE) && (!d->spin.op || d->res != ORK_TWIN_CPU || k != 1))
        return ork_errorf(ORK_EINVAL, "twin op %u: a release is one CPU core naming a spin",
                          tw->n_ops);
    for (uint32_t i = 0; i < n_deps; i++)
        if (deps[i] < 0 || (uint32_t)deps[i] >= tw->n_ops)
            return ork_errorf(ORK_EINVAL, "twin op %u: dependency %d is not an earlier op",
                              tw->n_ops, deps[i]);
    if (tw->n_ops >= (uint32_t)INT32_MAX || tw->n_deps > UINT32_MAX - n_deps)
        return ork_errorf(ORK_ENOMEM, "twin: too many ops");
    int ret;
    if ((ret = grow((void **)&tw->ops, &tw->cap_ops, tw->n_ops + 1, sizeof(*tw->ops))) < 0 ||
        (ret = grow((void **)&tw->deps, &tw->cap_deps, tw->n_deps + n_deps, sizeof(*tw->deps))) < 0)
        return ret;
    struct ork__twin_op *op = &tw->ops[tw->n_ops];
    memset(op, 0, sizeof(*op));
    op->d = *d;
    op->d.core_mask = mask;
    op->d.n_cores = k;
    op->dep_off = tw->n_deps;
    op->n_deps = n_deps;
    if (n_deps)
        memcpy(tw->deps + tw->n_deps, deps, n_deps * sizeof(*deps));
    tw->n_deps += n_deps;
    tw->ran = false;
    return (int)tw->n_ops++;
}

int ork_twin_cpu_op(struct ork_twin *tw, enum ork_twin_phase p, uint32_t n_cores,
                    struct ork_twin_work w, int dep)
{
    struct ork_twin_op_desc d = { .res = ORK_TWIN_CPU, .n_cores = n_cores, .phase = p, .work = w };
    return ork_twin_op_add(tw, &d, dep >= 0 ? &dep : NULL, dep >= 0 ? 1 : 0);
}

/* ---- the simulation ------------------------------------------------------------------------ */

struct sim {
    struct ork_twin *tw;
    double t;                       /* model clock, ns */
    uint32_t free[2];               /* free core masks: [ORK_TWIN_CPU], [ORK_TWIN_NPU] */
    uint32_t spin_held;             /* CPU cores held by running spins */
    uint32_t n_work, n_work_done;   /* ops that are not spins, and those done */
    uint32_t run[ORK_TWIN_MAX_CPU + ORK_TWIN_MAX_NPU], n_run;
    uint32_t n_ready, n_done;
    double bw_core[2], bw_group[2], bw_total;   /* B/ns */
    struct ork_twin_result *res;
};

/* Time of a k-core body's compute (ns): the single-core issue time split over its cores. */
static double body_ns(const struct ork__twin_op *op)
{
    return op->w.issue_ns / op->k;
}

/* Enter stage `s` or the first later one with work; STG_END when none is left. */
static void enter_stage(struct ork__twin_op *op, int s)
{
    const struct ork_twin_work *w = &op->w;
    for (;; s++) {
        op->stage = (uint8_t)s;
        switch (s) {
        case STG_FIXED:
            op->rem = op->fixed_ns;
            break;
        case STG_BODY:
            op->rem = (!w->serial && (w->bytes > 0 || w->issue_ns > 0)) ? 1.0 : 0;
            break;
        case STG_STREAM:
            op->rem = w->serial ? w->bytes : 0;
            break;
        case STG_COMPUTE:
            op->rem = w->serial ? body_ns(op) : 0;
            break;
        default:
            return;
        }
        op->len = op->rem;
        if (op->rem > 0)
            return;
    }
}

static bool streaming(const struct ork__twin_op *op)
{
    return op->stage == STG_STREAM || (op->stage == STG_BODY && op->w.bytes > 0);
}

/* Max-min fair shares (B/ns) for every streaming op, by progressive filling (docs/twin.md). */
static void share_dram(struct sim *s)
{
    struct ork__twin_op *ops = s->tw->ops;
    uint32_t idx[ORK_TWIN_MAX_CPU + ORK_TWIN_MAX_NPU], n = 0;
    double cap[ORK_TWIN_MAX_CPU + ORK_TWIN_MAX_NPU], w[ORK_TWIN_MAX_CPU + ORK_TWIN_MAX_NPU];
    bool act[ORK_TWIN_MAX_CPU + ORK_TWIN_MAX_NPU];
    for (uint32_t i = 0; i < s->n_run; i++) {
        struct ork__twin_op *op = &ops[s->run[i]];
        op->rate = 0;
        if (!streaming(op))
            continue;
        w[n] = op->k;
        cap[n] = w[n] * s->bw_core[op->d.res];
        double t = body_ns(op);
        if (op->stage == STG_BODY && t > 0 && op->w.bytes / t < cap[n])
            cap[n] = op->w.bytes / t;               /* beyond this it is issue-bound */
        act[n] = true;
        idx[n++] = s->run[i];
    }
    double r[ORK_TWIN_MAX_CPU + ORK_TWIN_MAX_NPU] = { 0 };
    for (uint32_t iter = 0; iter <= n + 3; iter++) {
        double sum[2] = { 0, 0 }, wact[2] = { 0, 0 }, tot = 0, wtot = 0;
        for (uint32_t i = 0; i < n; i++) {
            int g = ops[idx[i]].d.res;
            sum[g] += r[i], tot += r[i];
            if (act[i])
                wact[g] += w[i], wtot += w[i];
        }
        if (wtot == 0)
            break;
        double delta = (s->bw_total - tot) / wtot;
        for (int g = 0; g < 2; g++)
            if (wact[g] > 0)
                delta = fmin(delta, (s->bw_group[g] - sum[g]) / wact[g]);
        for (uint32_t i = 0; i < n; i++)
            if (act[i])
                delta = fmin(delta, (cap[i] - r[i]) / w[i]);
        if (delta < 0)
            delta = 0;
        bool full[2];
        for (uint32_t i = 0; i < n; i++)
            if (act[i])
                r[i] += delta * w[i];
        tot = sum[0] = sum[1] = 0;
        for (uint32_t i = 0; i < n; i++)
            sum[ops[idx[i]].d.res] += r[i], tot += r[i];
        for (int g = 0; g < 2; g++)
            full[g] = sum[g] >= s->bw_group[g] * (1 - TWIN_REL_EPS);
        bool all = tot >= s->bw_total * (1 - TWIN_REL_EPS) || iter == n + 3;
        for (uint32_t i = 0; i < n; i++)
            if (act[i] && (all || full[ops[idx[i]].d.res] || r[i] >= cap[i] * (1 - TWIN_REL_EPS)))
                act[i] = false;
    }
    for (uint32_t i = 0; i < n; i++)
        ops[idx[i]].rate = r[i];
}

/* Time (ns) until `op` finishes its current stage at its current rate. */
static double stage_left(const struct ork__twin_op *op)
{
    const struct ork_twin_work *w = &op->w;
    switch (op->stage) {
    case STG_FIXED:
    case STG_COMPUTE:
        return op->rem;
    case STG_STREAM:
        return op->rate > 0 ? op->rem / op->rate : INFINITY;
    case STG_BODY:
        if (w->bytes > 0)
            return op->rate > 0 ? op->rem * w->bytes / op->rate : INFINITY;
        return op->rem * body_ns(op);
    default:
        return 0;
    }
}

static void advance(struct ork__twin_op *op, double dt)
{
    const struct ork_twin_work *w = &op->w;
    switch (op->stage) {
    case STG_FIXED:
    case STG_COMPUTE:
        op->rem -= dt;
        break;
    case STG_STREAM:
        op->rem -= op->rate * dt;
        break;
    case STG_BODY:
        op->rem -= w->bytes > 0 ? op->rate * dt / w->bytes : dt / body_ns(op);
        break;
    default:
        break;
    }
}

/* An op naming a spin, now ready: the hot work while the spin polls (a release ends it and
 * takes its core), else the cold work (the thread is asleep). */
static void resolve_spin(struct ork__twin_op *op, struct ork__twin_op *sp)
{
    if (sp->state == ST_DONE) {
        op->w = op->d.spin.cold;
        op->flags = op->d.spin.cold_flags | (op->d.flags & ~ORK_TWIN_OP_RELEASE);
        op->phase = op->d.spin.cold_phase;
        return;
    }
    if (!(op->d.flags & ORK_TWIN_OP_RELEASE))
        return;
    if (sp->state == ST_RUN) {
        sp->stage = STG_END;                    /* removed and finished by the caller's loop */
        sp->handed = true;
        op->given = sp->taken;
    } else {
        sp->w.fixed_ns = 0;                     /* it never got to poll: it ends as it starts */
    }
}

static void ready_insert(struct sim *s, uint32_t id)
{
    struct ork__twin_op *op = &s->tw->ops[id];
    if (op->d.spin.op)
        resolve_spin(op, &s->tw->ops[op->d.spin.op - 1]);
    uint32_t *rd = s->tw->ready, i = s->n_ready++;
    while (i > 0 && rd[i - 1] > id) {
        rd[i] = rd[i - 1];
        i--;
    }
    rd[i] = id;
    s->tw->ops[id].state = ST_READY;
}

static void finish(struct sim *s, uint32_t id)
{
    struct ork_twin *tw = s->tw;
    struct ork__twin_op *op = &tw->ops[id];
    op->state = ST_DONE;
    op->end = s->t;
    if (!op->handed)
        s->free[op->d.res] |= op->taken;
    if (op->flags & ORK_TWIN_OP_SPIN)
        s->spin_held &= ~op->taken;
    else
        s->n_work_done++;
    s->n_done++;
    double dur = op->end - op->start;
    struct ork_twin_result *r = s->res;
    r->phase_ns[op->phase] += dur;
    r->phase_core_ns[op->phase] += dur * op->k;
    if (!(op->flags & ORK_TWIN_OP_IDLE))
        for (int c = 0; c < ORK_TWIN_MAX_CPU; c++)
            if (op->taken & (1u << c)) {
                if (op->d.res == ORK_TWIN_CPU)
                    r->cpu_busy_ns[c] += dur;
                else if (c < ORK_TWIN_MAX_NPU)
                    r->npu_busy_ns[c] += dur;
            }
    for (uint32_t i = 0; i < op->n_succ; i++) {
        struct ork__twin_op *q = &tw->ops[tw->succ[op->succ_off + i]];
        if (--q->pending == 0)
            ready_insert(s, tw->succ[op->succ_off + i]);
    }
}

/* Lowest `k` set bits of `avail`, or 0 when it has fewer. */
static uint32_t pick(uint32_t avail, uint32_t k)
{
    uint32_t got = 0;
    for (int c = 0; c < 32 && k; c++)
        if (avail & (1u << c))
            got |= 1u << c, k--;
    return k ? 0 : got;
}

/* Start every ready op whose cores are free, in id order; zero-work ops finish at once and
 * may make more ops ready, so repeat until nothing changes. */
static void start_ready(struct sim *s)
{
    struct ork_twin *tw = s->tw;
    for (bool again = true; again;) {
        again = false;
        uint32_t keep = 0;
        for (uint32_t i = 0; i < s->n_ready; i++) {
            uint32_t id = tw->ready[i];
            struct ork__twin_op *op = &tw->ops[id];
            uint32_t k = op->d.n_cores;
            if (op->d.res == ORK_TWIN_CPU && k > 1) {
                /* the cores spinning threads hold are not the op's */
                int other = __builtin_popcount(op->d.core_mask & ~s->spin_held);
                k = other < 1 ? 1 : (uint32_t)other < k ? (uint32_t)other : k;
            }
            uint32_t got = op->given ? op->given
                                     : pick(s->free[op->d.res] & op->d.core_mask, k);
            if (!got) {
                tw->ready[keep++] = id;
                continue;
            }
            s->free[op->d.res] &= ~got;
            op->taken = got;
            op->k = k;
            if (op->flags & ORK_TWIN_OP_SPIN)
                s->spin_held |= got;
            op->start = s->t;
            op->state = ST_RUN;
            op->fixed_ns = op->w.fixed_ns +
                           (op->d.res == ORK_TWIN_CPU ? ork_twin_host_barrier(&tw->c, k).fixed_ns : 0);
            enter_stage(op, STG_FIXED);
            s->run[s->n_run++] = id;
        }
        s->n_ready = keep;
        for (uint32_t i = 0; i < s->n_run;) {
            if (tw->ops[s->run[i]].stage == STG_END) {
                uint32_t id = s->run[i];
                memmove(&s->run[i], &s->run[i + 1], (s->n_run - i - 1) * sizeof(s->run[0]));
                s->n_run--;
                finish(s, id);
                again = true;
            } else {
                i++;
            }
        }
    }
}

/* Every op but the spins has ended: the spins still polling end now (the poll goes on into the
 * next step, which the caller carries over), those that never started end as they start. */
static void cut_spins(struct sim *s)
{
    struct ork_twin *tw = s->tw;
    for (uint32_t i = 0; i < s->n_run; i++)
        finish(s, s->run[i]);
    s->n_run = 0;
    for (uint32_t i = 0; i < tw->n_ops; i++) {
        struct ork__twin_op *op = &tw->ops[i];
        if (op->state != ST_DONE) {
            op->start = s->t;
            op->taken = 0;
            finish(s, i);
        }
    }
    s->n_ready = 0;
}

static int build_graph(struct ork_twin *tw)
{
    int ret;
    if ((ret = grow((void **)&tw->succ, &tw->cap_succ, tw->n_deps ? tw->n_deps : 1,
                    sizeof(*tw->succ))) < 0 ||
        (ret = grow((void **)&tw->ready, &tw->cap_ready, tw->n_ops ? tw->n_ops : 1,
                    sizeof(*tw->ready))) < 0)
        return ret;
    for (uint32_t i = 0; i < tw->n_ops; i++) {
        struct ork__twin_op *op = &tw->ops[i];
        op->n_succ = 0;
        op->pending = op->n_deps;
        op->state = ST_WAIT;
        op->w = op->d.work;
        op->k = op->d.n_cores;
        op->flags = op->d.flags;
        op->phase = op->d.phase;
        op->handed = false;
        op->given = 0;
        op->taken = 0;
    }
    for (uint32_t i = 0; i < tw->n_deps; i++)
        tw->ops[tw->deps[i]].n_succ++;
    uint32_t off = 0;
    for (uint32_t i = 0; i < tw->n_ops; i++) {
        tw->ops[i].succ_off = off;
        off += tw->ops[i].n_succ;
        tw->ops[i].n_succ = 0;
    }
    for (uint32_t i = 0; i < tw->n_ops; i++) {
        const struct ork__twin_op *op = &tw->ops[i];
        for (uint32_t j = 0; j < op->n_deps; j++) {
            struct ork__twin_op *p = &tw->ops[tw->deps[op->dep_off + j]];
            tw->succ[p->succ_off + p->n_succ++] = i;
        }
    }
    return 0;
}

int ork_twin_step_run(struct ork_twin *tw, struct ork_twin_result *out)
{
    struct ork_twin_result r;
    memset(&r, 0, sizeof r);
    int ret = build_graph(tw);
    if (ret < 0)
        return ret;
    const struct ork_twin_consts *c = &tw->c;
    struct sim s = { .tw = tw, .res = &r };
    s.free[ORK_TWIN_CPU] = res_mask(tw, ORK_TWIN_CPU);
    s.free[ORK_TWIN_NPU] = res_mask(tw, ORK_TWIN_NPU);
    s.bw_core[ORK_TWIN_CPU] = c->cpu_bw_core * 1e-9;
    s.bw_core[ORK_TWIN_NPU] = c->npu_bw_core * 1e-9;
    s.bw_group[ORK_TWIN_CPU] = c->cpu_bw_all * 1e-9;
    s.bw_group[ORK_TWIN_NPU] = c->npu_bw_all * 1e-9;
    s.bw_total = c->dram_bw_total * 1e-9;
    for (uint32_t i = 0; i < tw->n_ops; i++)
        s.n_work += !(tw->ops[i].d.flags & ORK_TWIN_OP_SPIN);
    for (uint32_t i = 0; i < tw->n_ops; i++)
        if (tw->ops[i].pending == 0)
            ready_insert(&s, i);
    for (;;) {
        start_ready(&s);
        if (s.n_work_done == s.n_work) {
            cut_spins(&s);
            break;
        }
        if (s.n_run == 0)
            break;
        share_dram(&s);
        double dt = INFINITY;
        uint32_t first = 0;
        bool cpu = false, npu = false;
        for (uint32_t i = 0; i < s.n_run; i++) {
            const struct ork__twin_op *op = &tw->ops[s.run[i]];
            double left = stage_left(op);
            if (left < dt)
                dt = left, first = i;
            if (!(op->flags & (ORK_TWIN_OP_IDLE | ORK_TWIN_OP_SPIN))) {
                cpu = cpu || op->d.res == ORK_TWIN_CPU;
                npu = npu || op->d.res == ORK_TWIN_NPU;
            }
        }
        if (!isfinite(dt))
            return ork_errorf(ORK_ERANGE, "twin: a stream got no DRAM bandwidth at %.3f us", s.t / 1e3);
        r.cpu_active_ns += cpu ? dt : 0;
        r.npu_active_ns += npu ? dt : 0;
        r.hidden_ns += cpu && npu ? dt : 0;
        s.t += dt;
        for (uint32_t i = 0; i < s.n_run; i++) {
            struct ork__twin_op *op = &tw->ops[s.run[i]];
            if (i == first)
                op->rem = 0;
            else
                advance(op, dt);
            if (op->rem <= op->len * TWIN_REL_EPS)
                enter_stage(op, op->stage + 1);
        }
        for (uint32_t i = 0; i < s.n_run;) {
            if (tw->ops[s.run[i]].stage == STG_END) {
                uint32_t id = s.run[i];
                memmove(&s.run[i], &s.run[i + 1], (s.n_run - i - 1) * sizeof(s.run[0]));
                s.n_run--;
                finish(&s, id);
            } else {
                i++;
            }
        }
    }
    if (s.n_done != tw->n_ops)
        return ork_errorf(ORK_EINVAL, "twin: %u of %u ops never started", tw->n_ops - s.n_done,
                          tw->n_ops);
    r.end_ns = s.t;
    r.n_ops = tw->n_ops;
    for (uint32_t i = 0; i < tw->n_ops; i++)
        r.dram_bytes += tw->ops[i].w.bytes;
    r.dram_util = r.end_ns > 0 ? r.dram_bytes / (r.end_ns * 1e-9 * c->dram_bw_total) : 0;
    r.hidden_share = r.cpu_active_ns > 0 ? r.hidden_ns / r.cpu_active_ns : 0;
    tw->ran = true;
    if (out)
        *out = r;
    return 0;
}

int ork_twin_op_times(const struct ork_twin *tw, int id, double *start_ns, double *end_ns)
{
    if (!tw->ran || id < 0 || (uint32_t)id >= tw->n_ops)
        return ork_errorf(ORK_EINVAL, "twin: no times for op %d (step not run?)", id);
    if (start_ns)
        *start_ns = tw->ops[id].start;
    if (end_ns)
        *end_ns = tw->ops[id].end;
    return 0;
}
