/* selftest_ladder.c -- the selftest ladder (include/ork-tooling/selftest.h): discovery, then
 * each submit form the engine can use, bit-exact against the CPU, one verdict each:
 *   per-core     one plan on one core (the kernel's pick)
 *   multi-core   a 3-core N-split in the validated form: one submit per core (spec §9 [HW]);
 *                on rocket several jobs in one SUBMIT (§11.3)
 *   one-job      core_mask 0x7 with subcore_task[2..4] (§9 [CAP]): "not confirmed" unless a
 *                capability confirms it, or tested and recorded with confirm_forms
 *   wide-k       int8 M > 1 programs of K in (4096, 8192] (npu-weight-decompression.md §4.3):
 *                "not confirmed" as one-job
 *   dcomp        the CNA weight decompressor (npu-weight-decompression.md §1): DCOMP weights
 *                against raw ones and the CPU, bit-exact; "not confirmed" as one-job (the
 *                simulator confirms it: it implements the format)
 *   w4a8         int4 x int4 -> int16 programs with split activations (npu-weight-decompression.md
 *                §2): W4A8 weights against the CPU's int32 A.W, bit-exact; "not confirmed" as
 *                dcomp (the simulator confirms it: it implements them)
 *   chain        three plans in one chained submit (§8.3)
 *   async        a 3-core plan run from the async worker while the caller waits
 *   multi-domain a second device in IOMMU domain 1 (§13): refused on drivers < 0.9.8
 *   layer        the executor's programs for one decoder layer of a real shape (Qwen2.5-0.5B:
 *                q/k/v/o, gate/up, down at M = 1, cores chosen by the budget, the one-job flag
 *                as the executor asks for it)
 * A step failing with ORK_ETIMEDOUT (a wedge: libork's waits are bounded -- NONBLOCK with a
 * doorbell on rknpu, ork_npu_opts.wait_timeout_ms -- and reset the NPU) is re-warmed and
 * retried once; a second failure is the step's clear error. */
#include <ork-tooling/selftest.h>

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/npu.h>
#include <ork/sched.h>
#include <ork/text.h>
#include <ork/twin.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* One decoder layer of Qwen2.5-0.5B (dim 896, 2 KV heads of 64, FFN 4864): the shapes the
 * executor plans for a real model, small enough for the simulator. */
#define LAYER_DIM 896u
#define LAYER_KV 128u
#define LAYER_FFN 4864u

/* The wide-K check (npu-weight-decompression.md §4.3 [SRC]): one single-slice program per
 * M-tile at K in (4096, 6144] (32 rows) and (6144, 8192] (16 rows), a tile cut short, and the
 * decode projection of a Qwen3-1.7B layer (K = 6144, dim 2048). */
#define WIDE_K_N 256u
static const struct { uint32_t k, n, m; } wide_k_cases[] = {
    { 4608, WIDE_K_N, 32 }, { 6144, WIDE_K_N, 32 }, { 6144, WIDE_K_N, 7 },
    { 6176, WIDE_K_N, 16 }, { 8192, WIDE_K_N, 16 }, { 6144, 2048, 32 },
};

struct ladder {
    const struct ork_selftest_opts *o;
    struct ork_selftest_report *r;
    struct ork_npu *npu;
    uint64_t rng;
    uint32_t tested, confirmed;     /* ORK_TWIN_FORM_* tested under confirm_forms, and passed */
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

const char *ork_selftest_verdict_name(enum ork_selftest_verdict v)
{
    switch (v) {
    case ORK_SELFTEST_PASS: return "pass";
    case ORK_SELFTEST_PASS_RETRY: return "pass-after-retry";
    case ORK_SELFTEST_FAIL: return "FAIL";
    case ORK_SELFTEST_NOT_CONFIRMED: return "not-confirmed";
    case ORK_SELFTEST_REFUSED: return "refused";
    }
    return "?";
}

static void step_add(struct ladder *L, const char *name, enum ork_selftest_verdict v, double ms,
                     const char *fmt, ...)
{
    struct ork_selftest_report *r = L->r;
    if (r->n_steps >= ORK_SELFTEST_MAX_STEPS)
        return;
    struct ork_selftest_step *s = &r->steps[r->n_steps++];
    snprintf(s->name, sizeof s->name, "%s", name);
    s->verdict = v;
    s->ms = ms;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->detail, sizeof s->detail, fmt, ap);
    va_end(ap);
    if (v == ORK_SELFTEST_FAIL)
        r->n_failed++;
    if (L->o->out) {
        fprintf(L->o->out, "form  %-12s %-16s %8.2f ms  %s\n", s->name,
                ork_selftest_verdict_name(v), ms, s->detail);
        fflush(L->o->out);
    }
}

static int8_t rnd8(struct ladder *L)
{
    L->rng ^= L->rng << 13;
    L->rng ^= L->rng >> 7;
    L->rng ^= L->rng << 17;
    return (int8_t)(L->rng >> 24);
}

/* One int8 matmul n x k at M = 1 on `npu`, through the plan form asked for; compares with the
 * CPU. mode: 0 blocking, 1 async. Returns 0 (bit-exact), ORK_EHAZARD (mismatch) or an error. */
static int matmul_case(struct ladder *L, struct ork_npu *npu, uint32_t k, uint32_t n,
                       uint32_t cores, uint32_t flags, int mode, char *why, size_t cap)
{
    int8_t *a = ork_malloc(k), *w = ork_malloc((size_t)n * k);
    int32_t *c = ork_calloc(n, sizeof *c);
    struct ork_npu_weights *wt = NULL;
    struct ork_npu_matmul *mm = NULL;
    int ret = ORK_ENOMEM;
    if (!a || !w || !c)
        goto out;
    for (uint32_t i = 0; i < k; i++)
        a[i] = rnd8(L);
    for (size_t i = 0; i < (size_t)n * k; i++)
        w[i] = rnd8(L);
    struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = ORK_NPU_I8, .k = k,
                                       .n = n, .w = w, .max_m = 1 };
    struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = 1, .cores = cores,
                                      .flags = flags };
    if ((ret = ork_npu_weights_create(npu, &wd, &wt)) < 0 ||
        (ret = ork_npu_matmul_create(wt, &md, &mm)) < 0)
        goto out;
    /* a timeout (libork has reset the NPU) gets one re-warm run and one retry */
    bool retried = false;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (mode == 1) {
            struct ork_npu_job *job = NULL;
            ret = ork_npu_matmul_submit_async(mm, a, 1, c, &job);
            if (ret == 0)
                ret = ork_npu_job_wait(job);
        } else {
            ret = ork_npu_matmul_run_i8(mm, a, 1, c);
        }
        if (ret != ORK_ETIMEDOUT || attempt == 1)
            break;
        snprintf(why, cap, "%s", ork_error_message());
        retried = true;
        ret = ork_npu_matmul_run_i8(mm, a, 1, c);      /* re-warm */
        if (ret < 0 && ret != ORK_ETIMEDOUT)
            break;
    }
    if (ret < 0)
        goto out;
    uint32_t bad = 0;
    for (uint32_t j = 0; j < n; j++) {
        int32_t acc = 0;
        for (uint32_t i = 0; i < k; i++)
            acc += (int32_t)a[i] * w[(size_t)j * k + i];
        bad += c[j] != acc;
    }
    if (bad)
        ret = ork_errorf(ORK_EHAZARD, "%u of %u outputs differ from the CPU", bad, n);
    else
        ret = retried ? 1 : 0;
out:
    if (ret < 0 && ret != ORK_EHAZARD)
        ret = ork_errorf(ret, "%ux%u: %s", k, n, ork_error_describe(ret));
    ork_npu_matmul_destroy(mm);
    ork_npu_weights_destroy(wt);
    ork_free(a);
    ork_free(w);
    ork_free(c);
    return ret;
}

static void form_step(struct ladder *L, const char *name, struct ork_npu *npu, uint32_t k,
                      uint32_t n, uint32_t cores, uint32_t flags, int mode, const char *what)
{
    char why[256] = "";
    double t0 = now_ms();
    int ret = matmul_case(L, npu, k, n, cores, flags, mode, why, sizeof why);
    double ms = now_ms() - t0;
    if (ret == 0)
        step_add(L, name, ORK_SELFTEST_PASS, ms, "%s: bit-exact", what);
    else if (ret == 1)
        step_add(L, name, ORK_SELFTEST_PASS_RETRY, ms, "%s: bit-exact after a reset, re-warm and "
                 "retry (first: %s)", what, why);
    else
        step_add(L, name, ORK_SELFTEST_FAIL, ms, "%s: %s", what, ork_error_message());
}

static void chain_step(struct ladder *L)
{
    static const uint32_t K = 1024, ns[3] = { 1024, 256, 256 };
    struct ork_npu_weights *wt[3] = { 0 };
    struct ork_npu_matmul *mm[3] = { 0 };
    int8_t *a = ork_malloc(K), *w[3] = { 0 };
    int32_t *c[3] = { 0 };
    struct ork_npu_chain *ch = NULL;
    double t0 = now_ms();
    int ret = a ? 0 : ORK_ENOMEM;
    for (uint32_t i = 0; a && i < K; i++)
        a[i] = rnd8(L);
    for (int p = 0; p < 3 && ret == 0; p++) {
        w[p] = ork_malloc((size_t)ns[p] * K);
        c[p] = ork_calloc(ns[p], sizeof *c[p]);
        if (!w[p] || !c[p]) {
            ret = ORK_ENOMEM;
            break;
        }
        for (size_t i = 0; i < (size_t)ns[p] * K; i++)
            w[p][i] = rnd8(L);
        struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = ORK_NPU_I8,
                                           .k = K, .n = ns[p], .w = w[p], .max_m = 1 };
        struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = 1, .cores = 1 };
        if ((ret = ork_npu_weights_create(L->npu, &wd, &wt[p])) == 0)
            ret = ork_npu_matmul_create(wt[p], &md, &mm[p]);
    }
    if (ret == 0)
        ret = ork_npu_chain_create(mm, 3, &ch);
    if (ret == 0) {
        const void *av[3] = { a, a, a };
        void *cv[3] = { c[0], c[1], c[2] };
        ret = ork_npu_chain_run(ch, av, cv);
    }
    uint32_t bad = 0;
    for (int p = 0; p < 3 && ret == 0; p++)
        for (uint32_t j = 0; j < ns[p]; j++) {
            int32_t acc = 0;
            for (uint32_t i = 0; i < K; i++)
                acc += (int32_t)a[i] * w[p][(size_t)j * K + i];
            bad += c[p][j] != acc;
        }
    double ms = now_ms() - t0;
    if (ret < 0)
        step_add(L, "chain", ORK_SELFTEST_FAIL, ms, "q/k/v 1024x(1024+256+256): %s",
                 ork_error_describe(ret));
    else if (bad)
        step_add(L, "chain", ORK_SELFTEST_FAIL, ms, "%u outputs differ from the CPU", bad);
    else
        step_add(L, "chain", ORK_SELFTEST_PASS, ms, "3 plans in one chained submit: bit-exact");
    ork_npu_chain_destroy(ch);
    for (int p = 0; p < 3; p++) {
        ork_npu_matmul_destroy(mm[p]);
        ork_npu_weights_destroy(wt[p]);
        ork_free(w[p]);
        ork_free(c[p]);
    }
    ork_free(a);
}

static struct ork_npu *open_dev(const struct ork_selftest_opts *o, uint32_t domain,
                                uint32_t forms, int *ret)
{
    struct ork_npu_opts no = { .struct_size = sizeof no, .device = o->device, .sim = o->sim,
                               .domain = domain, .capabilities = o->capabilities,
                               .confirmed_forms = forms, .wait_timeout_ms = o->wait_timeout_ms,
                               .blocking_submits = o->blocking_submits };
    struct ork_npu *npu = NULL;
    *ret = ork_npu_open(&no, &npu);
    return npu;
}

/* The end of a form check on device d: d closed unless it is the ladder's; under confirm_forms
 * the form (an ORK_TWIN_FORM_* bit) recorded as tested, and as confirmed when ok. */
static void form_done(struct ladder *L, struct ork_npu *d, uint32_t form, bool ok)
{
    if (d != L->npu)
        ork_npu_close(d);
    if (L->o->confirm_forms) {
        L->tested |= form;
        L->confirmed |= ok ? form : 0;
    }
}

static void one_job_step(struct ladder *L)
{
    bool confirmed = ork_npu_confirmed_forms(L->npu) & ORK_NPU_FORM_ONE_JOB;
    if (!confirmed && !L->o->confirm_forms) {
        step_add(L, "one-job", ORK_SELFTEST_NOT_CONFIRMED, 0, "core_mask 0x7 + subcore_task[2..4] "
                 "(spec §9 [CAP]): no capability confirms it, so plans asking for it run one "
                 "submit per core; test and record it with --confirm-forms");
        return;
    }
    /* --confirm-forms: vouch for the form on a second device for this one test */
    int ret;
    struct ork_npu *d = confirmed ? L->npu : open_dev(L->o, 0, ORK_NPU_FORM_ONE_JOB, &ret);
    if (!d) {
        step_add(L, "one-job", ORK_SELFTEST_FAIL, 0, "%s", ork_error_message());
        return;
    }
    uint32_t before = L->r->n_failed;
    form_step(L, "one-job", d, 4096, 4096, 3, ORK_NPU_MATMUL_ONE_JOB, 0,
              "one job, core_mask 0x7, 4096x4096");
    bool ok = L->r->n_failed == before;
    form_done(L, d, ORK_TWIN_FORM_ONE_JOB, ok);
}

/* Weights wd (int8 codes wd->w, n x k) and a plan md on npu, one run of md->m rows of a into
 * c (m x n scratch), against the CPU's int32 A.W: 0, ORK_EHAZARD naming how many outputs
 * differ, or the run's error. */
static int run_vs_cpu(struct ork_npu *npu, const struct ork_npu_weights_desc *wd,
                      const struct ork_npu_matmul_desc *md, const int8_t *a, int32_t *c)
{
    const int8_t *w = wd->w;
    const uint32_t m = md->m, k = wd->k, n = wd->n;
    struct ork_npu_weights *wt = NULL;
    struct ork_npu_matmul *mm = NULL;
    int ret;
    if ((ret = ork_npu_weights_create(npu, wd, &wt)) < 0 ||
        (ret = ork_npu_matmul_create(wt, md, &mm)) < 0 ||
        (ret = ork_npu_matmul_run_i8(mm, a, m, c)) < 0)
        goto out;
    uint32_t bad = 0;
    for (uint32_t r = 0; r < m; r++)
        for (uint32_t j = 0; j < n; j++) {
            int32_t acc = 0;
            for (uint32_t i = 0; i < k; i++)
                acc += (int32_t)a[(size_t)r * k + i] * w[(size_t)j * k + i];
            bad += c[(size_t)r * n + j] != acc;
        }
    if (bad)
        ret = ork_errorf(ORK_EHAZARD, "%u of %u outputs differ from the CPU", bad, m * n);
out:
    if (ret < 0 && ret != ORK_EHAZARD)
        ret = ork_errorf(ret, "%s", ork_error_describe(ret));
    ork_npu_matmul_destroy(mm);
    ork_npu_weights_destroy(wt);
    return ret;
}

/* One int8 matmul of m rows, n x k, on weights of one K-slice (max_m = 1: K <= 8192 in one
 * program, spec §5.1), against the CPU: every row bit-exact. */
static int rows_case(struct ladder *L, struct ork_npu *npu, uint32_t k, uint32_t n, uint32_t m)
{
    int8_t *a = ork_malloc((size_t)m * k), *w = ork_malloc((size_t)n * k);
    int32_t *c = ork_calloc((size_t)m * n, sizeof *c);
    int ret = ORK_ENOMEM;
    if (!a || !w || !c)
        goto out;
    for (size_t i = 0; i < (size_t)m * k; i++)
        a[i] = rnd8(L);
    for (size_t i = 0; i < (size_t)n * k; i++)
        w[i] = rnd8(L);
    struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = ORK_NPU_I8, .k = k,
                                       .n = n, .w = w, .max_m = 1 };
    struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = m, .cores = 1 };
    ret = run_vs_cpu(npu, &wd, &md, a, c);
out:
    ork_free(a);
    ork_free(w);
    ork_free(c);
    return ret;
}

/* A form check's device: the ladder's when a capability confirms `form`; under confirm_forms a
 * second device vouching for it; else NULL after a "not confirmed" line saying `why_not`. */
static struct ork_npu *form_device(struct ladder *L, const char *name, uint32_t form,
                                   const char *why_not)
{
    if (ork_npu_confirmed_forms(L->npu) & form)
        return L->npu;
    if (!L->o->confirm_forms) {
        step_add(L, name, ORK_SELFTEST_NOT_CONFIRMED, 0, "%s; test and record it with "
                 "--confirm-forms", why_not);
        return NULL;
    }
    int ret;
    struct ork_npu *d = open_dev(L->o, 0, form, &ret);
    if (!d)
        step_add(L, name, ORK_SELFTEST_FAIL, 0, "%s", ork_error_message());
    return d;
}

/* The decompressor check (ORK_NPU_FORM_DCOMP, npu-weight-decompression.md §1, §5 "first board
 * checks"): the same codes as raw and as DCOMP weights, M rows, bit-compared with each other
 * and the CPU -- 7B-sized decode shapes on 3 cores, a K-sliced one, M > 1 on 1 core. */
static const struct { uint32_t k, n, m, cores, grid; } dcomp_cases[] = {
    { 4096, 4096, 1, 3, 15 }, { 2048, 2816, 1, 3, 7 }, { 11008, 1024, 1, 1, 31 },
    { 1536, 1024, 8, 1, 127 },
};

/* Codes on the grid [-L, L], peaked at 0 like quantised weights (so the streams are short). */
static int8_t rnd_code(struct ladder *L, uint32_t grid)
{
    int32_t v = 0;
    for (int r = 0; r < 4; r++)
        v += (int32_t)((uint8_t)rnd8(L) % (grid / 2 + 1)) - (int32_t)(grid / 4);
    return (int8_t)(v > (int32_t)grid ? (int32_t)grid : v < -(int32_t)grid ? -(int32_t)grid : v);
}

static int dcomp_case(struct ladder *L, struct ork_npu *npu, uint32_t k, uint32_t n, uint32_t m,
                      uint32_t cores, uint32_t grid)
{
    int8_t *a = ork_malloc((size_t)m * k), *w = ork_malloc((size_t)n * k);
    int32_t *c[2] = { ork_calloc((size_t)m * n, 4), ork_calloc((size_t)m * n, 4) };
    struct ork_npu_weights *wt[2] = { NULL, NULL };
    struct ork_npu_matmul *mm[2] = { NULL, NULL };
    int ret = ORK_ENOMEM;
    if (!a || !w || !c[0] || !c[1])
        goto out;
    for (size_t i = 0; i < (size_t)m * k; i++)
        a[i] = rnd8(L);
    for (size_t i = 0; i < (size_t)n * k; i++)
        w[i] = rnd_code(L, grid);
    ret = 0;
    for (int e = 0; e < 2 && ret == 0; e++) {      /* raw, then the same codes compressed */
        struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = ORK_NPU_I8, .k = k,
                                           .n = n, .w = w, .max_m = m, .encoding = (uint32_t)e,
                                           .grid_max_abs = grid };
        struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = m, .cores = cores };
        if ((ret = ork_npu_weights_create(npu, &wd, &wt[e])) == 0 &&
            (ret = ork_npu_matmul_create(wt[e], &md, &mm[e])) == 0)
            ret = ork_npu_matmul_run_i8(mm[e], a, m, c[e]);
    }
    if (ret < 0)
        goto out;
    struct ork_npu_weights_dcomp_info di;
    ork_npu_weights_get_dcomp_info(wt[1], &di);
    uint32_t bad = 0, diff = 0;
    for (uint32_t r = 0; r < m; r++)
        for (uint32_t j = 0; j < n; j++) {
            int32_t acc = 0;
            for (uint32_t i = 0; i < k; i++)
                acc += (int32_t)a[(size_t)r * k + i] * w[(size_t)j * k + i];
            bad += c[1][(size_t)r * n + j] != acc;
            diff += c[1][(size_t)r * n + j] != c[0][(size_t)r * n + j];
        }
    if (bad || diff)
        ret = ork_errorf(ORK_EHAZARD, "%u of %u outputs differ from the CPU, %u from raw weights",
                         bad, m * n, diff);
    else if (di.n_raw_blocks == di.n_blocks)
        ret = ork_errorf(ORK_EHAZARD, "no block was stored compressed (%.2f bpw)", di.bpw);
out:
    if (ret < 0 && ret != ORK_EHAZARD)              /* the code's name before the message */
        ret = ork_errorf(ret, "%s", ork_error_describe(ret));
    for (int e = 0; e < 2; e++) {
        ork_npu_matmul_destroy(mm[e]);
        ork_npu_weights_destroy(wt[e]);
        ork_free(c[e]);
    }
    ork_free(a);
    ork_free(w);
    return ret;
}

/* One form check (dcomp, wide-k, w4a8): its shapes run in order on the form's device
 * (form_device), the first failure ends it naming the shape (`describe`), the pass line says
 * what was covered; under confirm_forms the verdict is recorded (form_done). */
struct form_check {
    const char *name;
    uint32_t npu_form, twin_form;
    const char *why_not;            /* "not confirmed" detail */
    size_t n_cases;
    int (*run)(struct ladder *L, struct ork_npu *d, size_t i);
    void (*describe)(size_t i, char *buf, size_t cap);
    const char *pass;               /* pass detail, before " (N shapes)" */
};

static void form_check_step(struct ladder *L, const struct form_check *fc)
{
    struct ork_npu *d = form_device(L, fc->name, fc->npu_form, fc->why_not);
    if (!d)
        return;
    double t0 = now_ms();
    int ret = 0;
    size_t i = 0;
    for (; i < fc->n_cases && ret == 0; i++)
        ret = fc->run(L, d, i);
    if (ret < 0) {
        char what[128];
        fc->describe(i - 1, what, sizeof what);
        step_add(L, fc->name, ORK_SELFTEST_FAIL, now_ms() - t0, "%s: %s", what,
                 ork_error_message());
    } else {
        step_add(L, fc->name, ORK_SELFTEST_PASS, now_ms() - t0, "%s (%zu shapes)", fc->pass,
                 fc->n_cases);
    }
    form_done(L, d, fc->twin_form, ret == 0);
}

static int dcomp_run(struct ladder *L, struct ork_npu *d, size_t i)
{
    return dcomp_case(L, d, dcomp_cases[i].k, dcomp_cases[i].n, dcomp_cases[i].m,
                      dcomp_cases[i].cores, dcomp_cases[i].grid);
}

static void dcomp_describe(size_t i, char *buf, size_t cap)
{
    snprintf(buf, cap, "M=%u K=%u N=%u L=%u on %u core(s)", dcomp_cases[i].m, dcomp_cases[i].k,
             dcomp_cases[i].n, dcomp_cases[i].grid, dcomp_cases[i].cores);
}

/* The decompressor: "not confirmed" unless a capability (or the simulator, which implements
 * the format) confirms it, or tested and recorded with confirm_forms. */
static void dcomp_step(struct ladder *L)
{
    static const struct form_check fc = {
        .name = "dcomp", .npu_form = ORK_NPU_FORM_DCOMP, .twin_form = ORK_TWIN_FORM_DCOMP,
        .why_not = "the CNA weight decompressor (npu-weight-decompression.md §1): no capability "
                   "confirms it, so DCOMP weights are refused",
        .n_cases = sizeof dcomp_cases / sizeof dcomp_cases[0],
        .run = dcomp_run, .describe = dcomp_describe,
        .pass = "compressed weights (L = 7..127, 1 and 3 cores, K-sliced, M = 8) equal raw and "
                "the CPU: bit-exact",
    };
    form_check_step(L, &fc);
}

static int wide_k_run(struct ladder *L, struct ork_npu *d, size_t i)
{
    return rows_case(L, d, wide_k_cases[i].k, wide_k_cases[i].n, wide_k_cases[i].m);
}

static void wide_k_describe(size_t i, char *buf, size_t cap)
{
    snprintf(buf, cap, "M=%u K=%u N=%u in one program", wide_k_cases[i].m, wide_k_cases[i].k,
             wide_k_cases[i].n);
}

/* The published M-tile rules for K above 4096 (ORK_NPU_FORM_WIDE_K, npu-weight-decompression.md
 * §4.3 [SRC]): "not confirmed" unless a capability confirms them, or tested (and recorded)
 * with confirm_forms on the shapes of wide_k_cases. */
static void wide_k_step(struct ladder *L)
{
    static const struct form_check fc = {
        .name = "wide-k", .npu_form = ORK_NPU_FORM_WIDE_K, .twin_form = ORK_TWIN_FORM_WIDE_K,
        .why_not = "M > 1 in one program at K in (4096, 8192] (npu-weight-decompression.md §4.3 "
                   "[SRC]): no capability confirms it, so such K stays K-sliced",
        .n_cases = sizeof wide_k_cases / sizeof wide_k_cases[0],
        .run = wide_k_run, .describe = wide_k_describe,
        .pass = "M up to 32 at K = 4608..6144, 16 at 6176..8192, one program per M-tile: "
                "bit-exact",
    };
    form_check_step(L, &fc);
}

/* The W4A8 check (ORK_NPU_FORM_W4A8, npu-weight-decompression.md §2): int8 A x int4 codes
 * against the CPU's int32 product, bit for bit -- a 7B-sized decode shape on 3 cores in
 * 2048-wide slices (small codes), K = 11008 sliced by the int16 bound (full-range codes:
 * narrower slices), odd K and N, M > 64 tokens (two M-tiles of 128 physical rows).
 * `wmax`: codes in [-wmax - 1, wmax]. */
static const struct { uint32_t k, n, m, cores, wmax; } w4a8_cases[] = {
    { 4096, 4096, 1, 3, 1 }, { 11008, 256, 1, 1, 7 }, { 1000, 100, 3, 1, 7 },
    { 640, 128, 70, 1, 7 },
};

static int w4a8_run(struct ladder *L, struct ork_npu *d, size_t ci)
{
    const uint32_t k = w4a8_cases[ci].k, n = w4a8_cases[ci].n, m = w4a8_cases[ci].m;
    const uint32_t span = 2 * w4a8_cases[ci].wmax + 2;
    int8_t *a = ork_malloc((size_t)m * k), *w = ork_malloc((size_t)n * k);
    int32_t *c = ork_calloc((size_t)m * n, sizeof *c);
    int ret = ORK_ENOMEM;
    if (!a || !w || !c)
        goto out;
    for (size_t i = 0; i < (size_t)m * k; i++)
        a[i] = rnd8(L);
    for (size_t i = 0; i < (size_t)n * k; i++)
        w[i] = (int8_t)((int)((uint8_t)rnd8(L) % span) - (int)(span / 2));
    struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = ORK_NPU_I8, .k = k,
                                       .n = n, .w = w, .max_m = m,
                                       .encoding = ORK_NPU_WEIGHTS_W4A8 };
    struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = m,
                                      .cores = w4a8_cases[ci].cores };
    ret = run_vs_cpu(d, &wd, &md, a, c);
out:
    ork_free(a);
    ork_free(w);
    ork_free(c);
    return ret;
}

static void w4a8_describe(size_t i, char *buf, size_t cap)
{
    snprintf(buf, cap, "M=%u K=%u N=%u codes in [%d, %u] on %u core(s)", w4a8_cases[i].m,
             w4a8_cases[i].k, w4a8_cases[i].n, -(int)w4a8_cases[i].wmax - 1, w4a8_cases[i].wmax,
             w4a8_cases[i].cores);
}

static void w4a8_step(struct ladder *L)
{
    static const struct form_check fc = {
        .name = "w4a8", .npu_form = ORK_NPU_FORM_W4A8, .twin_form = ORK_TWIN_FORM_W4A8,
        .why_not = "int4 x int4 -> int16 programs with split activations "
                   "(npu-weight-decompression.md §2): no capability confirms them, so W4A8 "
                   "weights are refused",
        .n_cases = sizeof w4a8_cases / sizeof w4a8_cases[0],
        .run = w4a8_run, .describe = w4a8_describe,
        .pass = "int8 A x int4 W (1 and 3 cores, K-sliced at 2048 and by the int16 bound, odd "
                "K and N, 70 tokens) equal the CPU's int32: bit-exact",
    };
    form_check_step(L, &fc);
}

/* --confirm-forms: the verdicts of the tested forms into the capability file, in one write. */
static void record_step(struct ladder *L)
{
    if (!L->o->confirm_forms || !L->o->capabilities_out)
        return;
    struct ork_twin_caps caps = { .struct_size = sizeof caps, .confirmed = L->confirmed };
    snprintf(caps.source, sizeof caps.source, "ork selftest --confirm-forms on %s",
             ork_npu_backend(L->npu));
    if (ork_twin_caps_save(L->o->capabilities_out, &caps, L->tested) < 0)
        step_add(L, "record", ORK_SELFTEST_FAIL, 0, "%s", ork_error_message());
    else
        step_add(L, "record", ORK_SELFTEST_PASS, 0, "one-job %s, wide-k %s, dcomp %s, w4a8 %s "
                 "in %s", L->confirmed & ORK_TWIN_FORM_ONE_JOB ? "confirmed" : "failed",
                 L->confirmed & ORK_TWIN_FORM_WIDE_K ? "confirmed" : "failed",
                 L->confirmed & ORK_TWIN_FORM_DCOMP ? "confirmed" : "failed",
                 L->confirmed & ORK_TWIN_FORM_W4A8 ? "confirmed" : "failed",
                 L->o->capabilities_out);
}

static void domain_step(struct ladder *L)
{
    int ret;
    double t0 = now_ms();
    struct ork_npu *d1 = open_dev(L->o, 1, 0, &ret);
    if (!d1) {
        step_add(L, "multi-domain", ORK_SELFTEST_FAIL, now_ms() - t0, "%s",
                 ork_error_describe(ret));
        return;
    }
    char why[256] = "";
    ret = matmul_case(L, d1, 1024, 512, 1, 0, 0, why, sizeof why);
    double ms = now_ms() - t0;
    if (ret == ORK_EUNSUPPORTED)
        step_add(L, "multi-domain", ORK_SELFTEST_REFUSED, ms, "%s: models above one domain "
                 "(~3.8 GiB) cannot load here", ork_error_message());
    else if (ret < 0)
        step_add(L, "multi-domain", ORK_SELFTEST_FAIL, ms, "%s", ork_error_message());
    else
        step_add(L, "multi-domain", ORK_SELFTEST_PASS, ms, "IOMMU domain 1: bit-exact");
    ork_npu_close(d1);
}

static void layer_step(struct ladder *L)
{
    static const struct { const char *name; uint32_t k, n; } ops[] = {
        { "q", LAYER_DIM, LAYER_DIM }, { "k", LAYER_DIM, LAYER_KV }, { "v", LAYER_DIM, LAYER_KV },
        { "o", LAYER_DIM, LAYER_DIM }, { "gate", LAYER_DIM, LAYER_FFN },
        { "up", LAYER_DIM, LAYER_FFN }, { "down", LAYER_FFN, LAYER_DIM },
    };
    double t0 = now_ms();
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        char why[256] = "";
        /* as the executor plans them: cores from the budget, the one-job flag asked for (it
         * runs only where confirmed, else per core) */
        int ret = matmul_case(L, L->npu, ops[i].k, ops[i].n, 0, ORK_NPU_MATMUL_ONE_JOB, 0, why,
                              sizeof why);
        if (ret < 0) {
            step_add(L, "layer", ORK_SELFTEST_FAIL, now_ms() - t0, "%s %ux%u: %s", ops[i].name,
                     ops[i].k, ops[i].n, ork_error_message());
            return;
        }
    }
    step_add(L, "layer", ORK_SELFTEST_PASS, now_ms() - t0, "q k v o gate up down of a "
             "Qwen2.5-0.5B layer (dim %u, kv %u, ffn %u) at M=1: bit-exact", LAYER_DIM,
             LAYER_KV, LAYER_FFN);
}

int ork_selftest_ladder(const struct ork_selftest_opts *o, struct ork_selftest_report *r)
{
    memset(r, 0, sizeof *r);
    struct ladder L = { .o = o, .r = r, .rng = 0x2545f4914f6cdd1dull };
    int ret;
    double t0 = now_ms();
    L.npu = open_dev(o, 0, 0, &ret);
    if (!L.npu) {
        step_add(&L, "discovery", ORK_SELFTEST_FAIL, now_ms() - t0, "%s", ork_error_message());
        return ret;
    }
    snprintf(r->backend, sizeof r->backend, "%s", ork_npu_backend(L.npu));
    uint32_t bound = ork_npu_wait_bound_ms(L.npu);
    char waits[96];
    if (bound)
        snprintf(waits, sizeof waits, "bounded at %u ms (NONBLOCK + doorbell)", bound);
    else
        snprintf(waits, sizeof waits, "blocking, bounded by the kernel%s",
                 strstr(r->backend, "rocket") ? " (PREP_BO deadlines)" : "");
    step_add(&L, "discovery", ORK_SELFTEST_PASS, now_ms() - t0, "backend %s%s; waits: %s",
             r->backend, ork_npu_is_sim(L.npu) ? " (simulator)" : "", waits);
    form_step(&L, "per-core", L.npu, 1024, 512, 1, 0, 0, "1 core, 1024x512");
    form_step(&L, "multi-core", L.npu, 4096, 4096, 3, 0, 0,
              "3-core N-split, one submit per core (rocket: jobs of one SUBMIT), 4096x4096");
    one_job_step(&L);
    wide_k_step(&L);
    dcomp_step(&L);
    w4a8_step(&L);
    chain_step(&L);
    form_step(&L, "async", L.npu, 4096, 4096, 3, 0, 1, "3-core plan on the async worker");
    domain_step(&L);
    layer_step(&L);
    record_step(&L);
    ork_npu_close(L.npu);
    return 0;
}

void ork_selftest_report_json(const struct ork_selftest_report *r, FILE *f)
{
    fprintf(f, "{\"format\": \"ork-selftest\", \"version\": 1, \"backend\": ");
    ork_json_put_quoted(f, r->backend);
    fprintf(f, ", \"failed\": %u, \"steps\": [", r->n_failed);
    for (uint32_t i = 0; i < r->n_steps; i++) {
        const struct ork_selftest_step *s = &r->steps[i];
        fprintf(f, "%s\n  {\"name\": ", i ? "," : "");
        ork_json_put_quoted(f, s->name);
        fprintf(f, ", \"verdict\": ");
        ork_json_put_quoted(f, ork_selftest_verdict_name(s->verdict));
        fprintf(f, ", \"ms\": %.3f, \"detail\": ", s->ms);
        ork_json_put_quoted(f, s->detail);
        fputc('}', f);
    }
    fprintf(f, "\n]}\n");
}
