/* calibrate.c -- measure the board twin's constants on the device at hand (docs/twin.md
 * "Calibration"; API in ork-tooling/calibrate.h).
 *
 * NPU: six probes through libork, each run `reps` times and its median kept, timed on the
 * device's clock (wall on a board, the simulator's model clock on `sim`):
 *   tiny    M=1 K=32 N=32, one core                 (the submit floor)
 *   wide    M=1 K=4096 N=8192, one core             (the single-core weight stream)
 *   rows    M=128 K=2048 N=512, one core            (the MAC rate: 134 M MACs)
 *   chain   8 tiny plans in one chained submit      (the chain cost)
 *   wide3   M=1 K=4096 N=12288, 3-core N-split      (the all-core weight stream)
 *   rows16  fp16 M=176 K=1024 N=256, one core       (the fp16 MAC rate)
 * Each single-core probe is one row of the per-program formula the twin and the simulator share
 * (anchors §8): t = S*launch + (T-S)*chain + bytes/bw_core + MACs/mac_int8, with S submits, T
 * programs (ork_npu_matmul_get_info), bytes = padded weights + int32 outputs. The four int8
 * rows (tiny, wide, rows, chain) are solved exactly for the four unknowns; wide3 and rows16 then
 * give the 3-core per-core rate (x3 = npu_bw_all) and the fp16 rate. On the simulator the
 * formula is the model itself, so the solve gives back its table to the model clock's 1 ns.
 *
 * CPU (a board's A76, or forced): the real kernels on this CPU, converted to the twin's
 * constants: a Q8_0 GEMV over 32 MiB on 1 and on cpu_cores threads -> cpu_bw_core, cpu_bw_all
 * (effective weight bandwidth); RMSNorm and Q8_0 quantisation on a cache-resident row -> an
 * effective cpu_freq_hz (the twin's issue model scaled to the measured time); softmax and
 * SiLU x up -> cpu_exp_cycles at that clock. */
#include <ork-tooling/calibrate.h>

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/npu.h>
#include <ork-kernels/kernels.h>
#include <ork-kernels/pool.h>

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

#define CAL_MAX_REPS 32
#define CAL_BOARD_REPS 5          /* median of 5: one outlier (an IRQ, a DVFS step) is dropped */
#define CAL_CHAIN_N 8             /* programs in the chain probe (8: 7 chain steps measured) */
#define CAL_CPU_ROW 16384         /* floats per cache-resident CPU probe row: 64 KiB < L2 */
#define CAL_CPU_MIN_NS 2.0e6      /* each CPU sample runs >= 2 ms (clock resolution << 1e-3) */
#define CAL_GEMV_K 4096           /* Q8_0 GEMV probe: 4096 x 7680 = 33.4 MB of weights, >> L3 */
#define CAL_GEMV_N 7680

/* ---- the report -------------------------------------------------------------------------- */

static void report_init(struct ork_calib_report *r, const struct ork_twin_consts *c, bool sim,
                        bool cpu)
{
    size_t n;
    const struct ork_twin_const_info *t = ork_twin_consts_table(&n);
    memset(r, 0, sizeof(*r));
    r->n = (uint32_t)(n < ORK_CALIB_MAX_ENTRIES ? n : ORK_CALIB_MAX_ENTRIES);
    for (uint32_t i = 0; i < r->n; i++) {
        struct ork_calib_entry *e = &r->e[i];
        e->name = t[i].name;
        e->unit = t[i].unit;
        ork_twin_consts_get(c, t[i].name, &e->before);
        e->raw = e->value = e->before;
        const char *why = "no probe isolates it yet (docs/twin.md 'Calibration')";
        if (!strncmp(e->name, "cpu_", 4) && !cpu)
            why = sim ? "the simulator has no A76: default kept" : "CPU probes not run";
        else if (!strcmp(e->name, "npu_domain_switch_ns"))
            why = "needs two IOMMU domains on one device; libork gives each device one";
        else if (!strcmp(e->name, "host_submit_floor_ns"))
            why = "the open runtime's figure, kept for the reproductions";
        else if (!strcmp(e->name, "dram_bw_total"))
            why = "needs the NPU and the CPU streaming at once";
        else if (!strcmp(e->name, "cpu_cores") || !strcmp(e->name, "npu_cores") ||
                 !strcmp(e->name, "cpu_l2_bytes") || !strcmp(e->name, "cpu_l3_bytes"))
            why = "the RK3588's configuration";
        snprintf(e->how, sizeof e->how, "%s", why);
    }
}

static double round_digits(double v)
{
    char buf[40];
    snprintf(buf, sizeof buf, "%.*g", ORK_CALIB_DIGITS, v);
    return strtod(buf, NULL);
}

static void report_set(struct ork_calib_report *r, struct ork_twin_consts *c, const char *name,
                       double raw, const char *fmt, ...)
{
    for (uint32_t i = 0; i < r->n; i++) {
        struct ork_calib_entry *e = &r->e[i];
        if (strcmp(e->name, name))
            continue;
        e->raw = raw;
        e->value = round_digits(raw);
        e->measured = true;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->how, sizeof e->how, fmt, ap);
        va_end(ap);
        ork_twin_consts_set(c, name, e->value);
        return;
    }
}

void ork_calib_report_print(const struct ork_calib_report *r, FILE *f)
{
    fprintf(f, "calibration: %s\n", r->source);
    for (uint32_t i = 0; i < r->n; i++) {
        const struct ork_calib_entry *e = &r->e[i];
        if (e->measured)
            fprintf(f, "  measured      %-22s %-12.6g %-13s (was %.6g): %s\n", e->name, e->value,
                    e->unit, e->before, e->how);
    }
    for (uint32_t i = 0; i < r->n; i++) {
        const struct ork_calib_entry *e = &r->e[i];
        if (!e->measured)
            fprintf(f, "  not measured  %-22s %-12.6g %-13s kept: %s\n", e->name, e->value,
                    e->unit, e->how);
    }
}

/* ---- clocks and medians ------------------------------------------------------------------ */

static double wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* The device's clock: the simulator's model clock, else the wall clock. */
static double dev_ns(struct ork_npu *npu, bool model)
{
    struct ork_npu_model_time t;
    if (model && ork_npu_model_time(npu, &t) == 0)
        return (double)t.now_ns;
    return wall_ns();
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, uint32_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* ---- NPU probes -------------------------------------------------------------------------- */

struct probe {
    enum ork_npu_dtype dt;
    uint32_t m, k, n, cores;
    struct ork_npu_weights *w;
    struct ork_npu_matmul *mm;
    void *a, *c;
    struct ork_npu_matmul_info info;
};

static void probe_free(struct probe *p)
{
    ork_npu_matmul_destroy(p->mm);
    ork_npu_weights_destroy(p->w);
    ork_free(p->a);
    ork_free(p->c);
    p->mm = NULL;
    p->w = NULL;
    p->a = p->c = NULL;
}

static int probe_make(struct ork_npu *npu, struct probe *p)
{
    size_t esz = p->dt == ORK_NPU_I8 ? 1 : 2, wn = (size_t)p->n * p->k;
    void *w = ork_malloc(wn * esz);
    p->a = ork_malloc((size_t)p->m * p->k * esz);
    p->c = ork_malloc((size_t)p->m * p->n * 4);
    int ret = 0;
    if (!w || !p->a || !p->c) {
        ret = ork_errorf(ORK_ENOMEM, "calibrate: out of host memory for a %ux%ux%u probe",
                         p->m, p->k, p->n);
        goto out;
    }
    /* small deterministic values: the arithmetic does not change the time */
    for (size_t i = 0; i < wn; i++) {
        if (p->dt == ORK_NPU_I8)
            ((int8_t *)w)[i] = (int8_t)((i * 7) % 15 - 7);
        else
            ((uint16_t *)w)[i] = ork_npu_f32_to_f16((float)((i * 7) % 15 - 7) / 8);
    }
    for (size_t i = 0; i < (size_t)p->m * p->k; i++) {
        if (p->dt == ORK_NPU_I8)
            ((int8_t *)p->a)[i] = (int8_t)((i * 5) % 9 - 4);
        else
            ((uint16_t *)p->a)[i] = ork_npu_f32_to_f16((float)((i * 5) % 9 - 4) / 4);
    }
    struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = p->dt, .k = p->k,
                                       .n = p->n, .w = w, .max_m = p->m };
    /* On the simulator's instant clock, blocking submits from the per-core workers' threads
     * follow each other (each completion advances the model clock), so a multi-core probe there
     * takes the one-job form, whose cores stream together as the per-core submits do on a
     * board; on a board the default per-core form, the one the engine validates (docs/twin.md). */
    uint32_t flags = p->cores > 1 && ork_npu_is_sim(npu) ? ORK_NPU_MATMUL_ONE_JOB : 0;
    struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = p->m, .cores = p->cores,
                                      .flags = flags };
    if ((ret = ork_npu_weights_create(npu, &wd, &p->w)) < 0 ||
        (ret = ork_npu_matmul_create(p->w, &md, &p->mm)) < 0) {
        ret = ork_errorf(ret, "calibrate: probe %ux%ux%u on %u core(s): %s", p->m, p->k, p->n,
                         p->cores, ork_error_message());
        goto out;
    }
    ork_npu_matmul_get_info(p->mm, &p->info);
out:
    ork_free(w);
    if (ret < 0)
        probe_free(p);
    return ret;
}

static int probe_run(struct probe *p)
{
    return p->dt == ORK_NPU_I8 ? ork_npu_matmul_run_i8(p->mm, p->a, p->m, p->c)
                               : ork_npu_matmul_run_f16(p->mm, p->a, p->m, p->c);
}

/* Median time of `reps` blocking runs (one untimed run first). */
static int probe_time(struct ork_npu *npu, bool model, uint32_t reps, struct probe *p, double *ns)
{
    double v[CAL_MAX_REPS];
    int ret = probe_run(p);
    for (uint32_t i = 0; i < reps && ret == 0; i++) {
        double t0 = dev_ns(npu, model);
        ret = probe_run(p);
        v[i] = dev_ns(npu, model) - t0;
    }
    if (ret < 0)
        return ork_errorf(ret, "calibrate: probe %ux%ux%u: %s", p->m, p->k, p->n,
                          ork_error_message());
    *ns = median(v, reps);
    return 0;
}

/* One row of the per-program formula for a probe on one core: [S, T - S, bytes, MACs]. */
static void probe_row(const struct probe *p, uint32_t times, double row[4])
{
    const struct ork_npu_matmul_info *in = &p->info;
    double esz = p->dt == ORK_NPU_I8 ? 1 : 2;
    row[0] = in->n_submits;
    row[1] = (double)in->n_tasks * times - in->n_submits;
    row[2] = times * ((double)in->k_padded * in->n_padded * esz + (double)p->m * in->n_padded * 4);
    row[3] = times * (double)p->m * in->k_padded * in->n_padded;
}

/* Solve A x = b (4x4) by Gaussian elimination with partial pivoting; ORK_ERANGE if singular. */
static int solve4(double A[4][4], double b[4], double x[4])
{
    for (int col = 0; col < 4; col++) {
        int piv = col;
        for (int r = col + 1; r < 4; r++)
            if (fabs(A[r][col]) > fabs(A[piv][col]))
                piv = r;
        if (A[piv][col] == 0)
            return ork_errorf(ORK_ERANGE, "calibrate: the probes do not separate the constants");
        for (int k = 0; k < 4; k++) {
            double t = A[col][k];
            A[col][k] = A[piv][k];
            A[piv][k] = t;
        }
        double t = b[col];
        b[col] = b[piv];
        b[piv] = t;
        for (int r = col + 1; r < 4; r++) {
            double f = A[r][col] / A[col][col];
            for (int k = col; k < 4; k++)
                A[r][k] -= f * A[col][k];
            b[r] -= f * b[col];
        }
    }
    for (int r = 3; r >= 0; r--) {
        double s = b[r];
        for (int k = r + 1; k < 4; k++)
            s -= A[r][k] * x[k];
        x[r] = s / A[r][r];
    }
    return 0;
}

static int chain_time(struct ork_npu *npu, bool model, uint32_t reps, struct probe *tiny,
                      struct probe *extra, double *ns)
{
    struct ork_npu_matmul *plans[CAL_CHAIN_N];
    const void *av[CAL_CHAIN_N];
    void *cv[CAL_CHAIN_N];
    plans[0] = tiny->mm;
    for (int i = 1; i < CAL_CHAIN_N; i++)
        plans[i] = extra[i - 1].mm;
    for (int i = 0; i < CAL_CHAIN_N; i++) {
        av[i] = tiny->a;
        cv[i] = i ? extra[i - 1].c : tiny->c;
    }
    struct ork_npu_chain *ch = NULL;
    int ret = ork_npu_chain_create(plans, CAL_CHAIN_N, &ch);
    double v[CAL_MAX_REPS];
    if (ret == 0)
        ret = ork_npu_chain_run(ch, av, cv);
    for (uint32_t i = 0; i < reps && ret == 0; i++) {
        double t0 = dev_ns(npu, model);
        ret = ork_npu_chain_run(ch, av, cv);
        v[i] = dev_ns(npu, model) - t0;
    }
    ork_npu_chain_destroy(ch);
    if (ret < 0)
        return ork_errorf(ret, "calibrate: chain of %d programs: %s", CAL_CHAIN_N,
                          ork_error_message());
    *ns = median(v, reps);
    return 0;
}

enum { P_TINY, P_WIDE, P_ROWS, P_WIDE3, P_ROWS16, P_COUNT };

static const struct probe probe_shapes[P_COUNT] = {
    [P_TINY] = { .dt = ORK_NPU_I8, .m = 1, .k = 32, .n = 32, .cores = 1 },
    [P_WIDE] = { .dt = ORK_NPU_I8, .m = 1, .k = 4096, .n = 8192, .cores = 1 },
    [P_ROWS] = { .dt = ORK_NPU_I8, .m = 128, .k = 2048, .n = 512, .cores = 1 },     /* 128 = the int8 M cap at K = 2048 */
    [P_WIDE3] = { .dt = ORK_NPU_I8, .m = 1, .k = 4096, .n = 12288, .cores = 3 },    /* 4096 columns per core */
    [P_ROWS16] = { .dt = ORK_NPU_F16, .m = 176, .k = 1024, .n = 256, .cores = 1 },  /* 176 = the fp16 M cap at K = 1024 */
};

/* The two derived probes, after the 4x4 solve gave launch L, chain C, 1/bw x, 1/mac y. */
static int npu_derived(struct ork_calib_report *r, struct ork_twin_consts *m, const struct probe *p,
                       const double t[P_COUNT], const double x[4])
{
    /* wide3: the slowest core's programs at the 3-streaming share */
    const struct probe *w3 = &p[P_WIDE3];
    uint32_t cores = w3->info.n_cores ? w3->info.n_cores : 1;
    double per_n = (double)w3->info.n_padded / cores;
    /* every core's range starts with a launch, whether it is its own submit or one job's */
    double tasks = (double)w3->info.n_tasks / cores;
    double subs = w3->info.n_submits >= cores ? (double)w3->info.n_submits / cores : 1;
    double bytes = (double)w3->info.k_padded * per_n + per_n * 4;
    double rest = t[P_WIDE3] - subs * x[0] - (tasks - subs) * x[1] -
                  (double)w3->info.k_padded * per_n * x[3];
    if (cores < 2 || !(rest > 0))
        return ork_errorf(ORK_ERANGE, "calibrate: the %u-core probe (%u cores) left no time for "
                          "its weight stream", w3->cores, cores);
    double rate = bytes / rest * 1e9;           /* one core's rate with `cores` streaming */
    report_set(r, m, "npu_bw_all", rate * cores,
               "M=1 K=%u N=%u on %u cores: %.0f us; per-core stream %.4g GB/s x %u%s", w3->k,
               w3->n, cores, t[P_WIDE3] / 1e3, rate / 1e9, cores,
               rate < 0.999 * m->npu_bw_core ? "" : " (at the per-core cap: a lower bound)");
    /* rows16: fp16 MAC rate */
    const struct probe *h = &p[P_ROWS16];
    double hb = (double)h->info.k_padded * h->info.n_padded * 2 + (double)h->m * h->info.n_padded * 4;
    double hm = (double)h->m * h->info.k_padded * h->info.n_padded;
    double hrest = t[P_ROWS16] - h->info.n_submits * x[0] -
                   ((double)h->info.n_tasks - h->info.n_submits) * x[1] - hb * x[2];
    if (!(hrest > 0))
        return ork_errorf(ORK_ERANGE, "calibrate: the fp16 probe left no time for its MACs");
    report_set(r, m, "npu_mac_fp16", hm / hrest * 1e9,
               "fp16 M=%u K=%u N=%u: %.0f us, minus launch and stream", h->m, h->k, h->n,
               t[P_ROWS16] / 1e3);
    return 0;
}

static int calib_npu(struct ork_npu *npu, uint32_t reps, struct ork_twin_consts *m,
                     struct ork_calib_report *r)
{
    bool model = ork_npu_is_sim(npu);
    struct probe p[P_COUNT], extra[CAL_CHAIN_N - 1];
    double t[P_COUNT], tchain = 0;
    int ret = 0;
    memcpy(p, probe_shapes, sizeof p);
    for (int i = 0; i < CAL_CHAIN_N - 1; i++)
        extra[i] = probe_shapes[P_TINY];
    for (int i = 0; i < P_COUNT && ret == 0; i++)
        if ((ret = probe_make(npu, &p[i])) == 0)
            ret = probe_time(npu, model, reps, &p[i], &t[i]);
    for (int i = 0; i < CAL_CHAIN_N - 1 && ret == 0; i++)
        ret = probe_make(npu, &extra[i]);
    if (ret == 0)
        ret = chain_time(npu, model, reps, &p[P_TINY], extra, &tchain);
    if (ret < 0)
        goto out;
    double A[4][4], b[4] = { t[P_TINY], t[P_WIDE], t[P_ROWS], tchain }, x[4];
    probe_row(&p[P_TINY], 1, A[0]);
    probe_row(&p[P_WIDE], 1, A[1]);
    probe_row(&p[P_ROWS], 1, A[2]);
    probe_row(&p[P_TINY], CAL_CHAIN_N, A[3]);
    A[3][0] = 1;                                  /* one submit for the whole chain */
    A[3][1] = (double)p[P_TINY].info.n_tasks * CAL_CHAIN_N - 1;
    if ((ret = solve4(A, b, x)) < 0)
        goto out;
    if (!(x[0] > 0 && x[1] > 0 && x[2] > 0 && x[3] > 0)) {
        ret = ork_errorf(ORK_ERANGE, "calibrate: the probes give a non-positive constant "
                         "(launch %.4g ns, chain %.4g ns, 1/bw %.4g, 1/mac %.4g): timings too "
                         "noisy", x[0], x[1], x[2], x[3]);
        goto out;
    }
    report_set(r, m, "npu_launch_ns", x[0], "M=1 K=32 N=32 round trip %.1f us, minus its body",
               t[P_TINY] / 1e3);
    report_set(r, m, "npu_chain_ns", x[1], "%d chained programs %.1f us vs one %.1f us",
               CAL_CHAIN_N, tchain / 1e3, t[P_TINY] / 1e3);
    report_set(r, m, "npu_bw_core", 1e9 / x[2], "M=1 K=%u N=%u on one core: %.0f us",
               p[P_WIDE].k, p[P_WIDE].n, t[P_WIDE] / 1e3);
    report_set(r, m, "npu_mac_int8", 1e9 / x[3], "M=%u K=%u N=%u on one core: %.0f us",
               p[P_ROWS].m, p[P_ROWS].k, p[P_ROWS].n, t[P_ROWS] / 1e3);
    ret = npu_derived(r, m, p, t, x);
out:
    for (int i = 0; i < P_COUNT; i++)
        probe_free(&p[i]);
    for (int i = 0; i < CAL_CHAIN_N - 1; i++)
        probe_free(&extra[i]);
    return ret;
}

/* ---- CPU probes -------------------------------------------------------------------------- */

enum cpu_kernel { K_RMSNORM, K_QUANT, K_SOFTMAX, K_SILU };

struct cpu_bufs {
    float *x, *y, *w;
    void *q;
};

static void cpu_call(enum cpu_kernel k, struct cpu_bufs *b)
{
    switch (k) {
    case K_RMSNORM:
        ork_rmsnorm(b->y, b->x, b->w, CAL_CPU_ROW, 1e-6f);
        break;
    case K_QUANT:
        ork_quantize_row_q8_0(b->x, b->q, CAL_CPU_ROW);
        break;
    case K_SOFTMAX:
        memcpy(b->y, b->x, CAL_CPU_ROW * sizeof(float));   /* softmax works in place */
        ork_softmax(b->y, CAL_CPU_ROW);
        break;
    case K_SILU:
        memcpy(b->y, b->x, CAL_CPU_ROW * sizeof(float));
        ork_silu_mul(b->y, b->w, CAL_CPU_ROW);
        break;
    }
}

/* Median over `reps` samples of the time of one call (each sample >= CAL_CPU_MIN_NS). */
static double cpu_kernel_ns(enum cpu_kernel k, struct cpu_bufs *b, uint32_t reps)
{
    double v[CAL_MAX_REPS];
    uint32_t calls = 1;
    for (;;) {                                   /* size a sample */
        double t0 = wall_ns();
        for (uint32_t i = 0; i < calls; i++)
            cpu_call(k, b);
        if (wall_ns() - t0 >= CAL_CPU_MIN_NS || calls >= (1u << 24))
            break;
        calls *= 2;
    }
    for (uint32_t s = 0; s < reps; s++) {
        double t0 = wall_ns();
        for (uint32_t i = 0; i < calls; i++)
            cpu_call(k, b);
        v[s] = (wall_ns() - t0) / calls;
    }
    /* memcpy in softmax / SiLU: 64 KiB in L2, ~1 % of the kernel; charged to the kernel */
    return median(v, reps);
}

/* The twin's issue time of kernel k on one core with table c. */
static double cpu_kernel_twin(enum cpu_kernel k, const struct ork_twin_consts *c)
{
    switch (k) {
    case K_RMSNORM: return ork_twin_cpu_rmsnorm(c, 1, CAL_CPU_ROW).issue_ns;
    case K_QUANT: return ork_twin_cpu_quantize(c, 1, CAL_CPU_ROW).issue_ns;
    case K_SOFTMAX: return ork_twin_cpu_softmax(c, 1, CAL_CPU_ROW).issue_ns;
    case K_SILU: return ork_twin_cpu_silu_mul(c, CAL_CPU_ROW).issue_ns;
    }
    return 0;
}

/* cpu_exp_cycles from one kernel: the twin is linear in it where exp is on the bound. */
static double cpu_exp_fit(enum cpu_kernel k, const struct ork_twin_consts *m, double meas)
{
    struct ork_twin_consts c1 = *m;
    double p0 = cpu_kernel_twin(k, m);
    c1.cpu_exp_cycles = m->cpu_exp_cycles + 1;
    double slope = cpu_kernel_twin(k, &c1) - p0;
    return slope > 0 ? m->cpu_exp_cycles + (meas - p0) / slope : -1;
}

struct gemv_ctx {
    struct ork_mat w;
    float *x, *y;
};

static int cpu_gemv_ns(const struct gemv_ctx *g, uint32_t threads, uint32_t reps, double *ns)
{
    struct ork_pool *pool = NULL;
    double v[CAL_MAX_REPS];
    int ret = ork_pool_create((int)threads, &pool);
    if (ret == 0)
        ret = ork_matmul(pool, &g->w, g->x, 1, g->y);       /* warm: page in, spin up */
    for (uint32_t i = 0; i < reps && ret == 0; i++) {
        double t0 = wall_ns();
        ret = ork_matmul(pool, &g->w, g->x, 1, g->y);
        v[i] = wall_ns() - t0;
    }
    ork_pool_destroy(pool);
    if (ret < 0)
        return ork_errorf(ret, "calibrate: Q8_0 GEMV on %u thread(s): %s", threads,
                          ork_error_message());
    *ns = median(v, reps);
    return 0;
}

static int calib_cpu_gemv(uint32_t threads, uint32_t reps, struct ork_twin_consts *m,
                          struct ork_calib_report *r)
{
    struct gemv_ctx g = { .w = { .type = ORK_TYPE_Q8_0, .n_rows = CAL_GEMV_N,
                                 .n_cols = CAL_GEMV_K } };
    g.w.row_bytes = ork_type_row_bytes(ORK_TYPE_Q8_0, CAL_GEMV_K);
    size_t bytes = g.w.row_bytes * CAL_GEMV_N;
    uint8_t *w = ork_malloc(bytes);
    g.x = ork_malloc(CAL_GEMV_K * sizeof(float));
    g.y = ork_malloc(CAL_GEMV_N * sizeof(float));
    int ret = 0;
    if (!w || !g.x || !g.y) {
        ret = ork_errorf(ORK_ENOMEM, "calibrate: out of memory for the GEMV probe");
        goto out;
    }
    /* Q8_0 blocks: fp16 scale 1.0 (0x3c00) then 32 small int8 values */
    for (size_t i = 0; i < bytes; i++)
        w[i] = (uint8_t)((i % 34) == 0 ? 0x00 : (i % 34) == 1 ? 0x3c : (i * 7) % 15);
    for (int i = 0; i < CAL_GEMV_K; i++)
        g.x[i] = (float)(i % 11) / 11 - 0.5f;
    g.w.data = w;
    double t1, tn;
    if ((ret = cpu_gemv_ns(&g, 1, reps, &t1)) < 0 || (ret = cpu_gemv_ns(&g, threads, reps, &tn)) < 0)
        goto out;
    double wb = ork_twin_cpu_matmul(m, ORK_TWIN_W_Q8_0, 1, CAL_GEMV_K, CAL_GEMV_N).bytes;
    report_set(r, m, "cpu_bw_core", wb / t1 * 1e9,
               "Q8_0 GEMV %ux%u (%.1f MB) on 1 thread: %.0f us", CAL_GEMV_N, CAL_GEMV_K, wb / 1e6,
               t1 / 1e3);
    report_set(r, m, "cpu_bw_all", wb / tn * 1e9, "the same GEMV on %u threads: %.0f us",
               threads, tn / 1e3);
out:
    ork_free(w);
    ork_free(g.x);
    ork_free(g.y);
    return ret;
}

static int calib_cpu(uint32_t threads, uint32_t reps, struct ork_twin_consts *m,
                     struct ork_calib_report *r)
{
    struct cpu_bufs b = { ork_malloc(CAL_CPU_ROW * sizeof(float)),
                          ork_malloc(CAL_CPU_ROW * sizeof(float)),
                          ork_malloc(CAL_CPU_ROW * sizeof(float)),
                          ork_malloc(ork_type_row_bytes(ORK_TYPE_Q8_0, CAL_CPU_ROW)) };
    int ret = 0;
    if (!b.x || !b.y || !b.w || !b.q) {
        ret = ork_errorf(ORK_ENOMEM, "calibrate: out of memory for the CPU probes");
        goto out;
    }
    for (int i = 0; i < CAL_CPU_ROW; i++) {
        b.x[i] = (float)(i % 97) / 97 - 0.5f;
        b.w[i] = 1.0f + (float)(i % 13) / 64;
    }
    /* effective clock: the twin's issue model of RMSNorm and quantisation vs the real kernels */
    double mr = cpu_kernel_ns(K_RMSNORM, &b, reps), mq = cpu_kernel_ns(K_QUANT, &b, reps);
    double pr = cpu_kernel_twin(K_RMSNORM, m), pq = cpu_kernel_twin(K_QUANT, m);
    double f = m->cpu_freq_hz * sqrt((pr / mr) * (pq / mq));
    report_set(r, m, "cpu_freq_hz", f,
               "RMSNorm %d: %.2f us (twin %.2f), Q8_0 quantise: %.2f us (twin %.2f); "
               "geometric mean of the ratios", CAL_CPU_ROW, mr / 1e3, pr / 1e3, mq / 1e3, pq / 1e3);
    /* exp cost at that clock, from softmax and SiLU x up */
    double ms = cpu_kernel_ns(K_SOFTMAX, &b, reps), mu = cpu_kernel_ns(K_SILU, &b, reps);
    double es = cpu_exp_fit(K_SOFTMAX, m, ms), eu = cpu_exp_fit(K_SILU, m, mu);
    double e = es > 0 && eu > 0 ? 0.5 * (es + eu) : es > 0 ? es : eu;
    if (e > 0)
        report_set(r, m, "cpu_exp_cycles", e,
                   "softmax %d: %.2f us -> %.3g, SiLU x up: %.2f us -> %.3g cycles (mean)",
                   CAL_CPU_ROW, ms / 1e3, es, mu / 1e3, eu);
    ret = calib_cpu_gemv(threads, reps, m, r);
out:
    ork_free(b.x);
    ork_free(b.y);
    ork_free(b.w);
    ork_free(b.q);
    return ret;
}

/* ---- entry ------------------------------------------------------------------------------- */

static void make_source(struct ork_npu *npu, bool cpu, struct ork_calib_report *r)
{
    struct utsname u;
    char date[32] = "?";
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm))
        strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (uname(&u) < 0)
        memset(&u, 0, sizeof u);
    snprintf(r->source, sizeof r->source,
             "ork selftest --calibrate --device %s%s; %s %s %s; %s; CPU probes %s",
             ork_npu_backend(npu), ork_npu_is_sim(npu) ? " (model clock)" : " (wall clock)",
             u.sysname, u.release, u.machine, date, cpu ? "run on this CPU" : "not run");
}

int ork_calib_run(struct ork_npu *npu, const struct ork_calib_opts *o, struct ork_twin_consts *c,
                  struct ork_calib_report *r)
{
    struct ork_calib_opts op = { 0 };
    if (o && o->struct_size)
        memcpy(&op, o, o->struct_size < sizeof op ? o->struct_size : sizeof op);
    if (!npu || !c || !r)
        return ork_errorf(ORK_EINVAL, "calibrate: NULL argument");
    int ret = ork_twin_consts_check(c);
    if (ret < 0)
        return ret;
    bool sim = ork_npu_is_sim(npu);
    uint32_t reps = op.reps ? op.reps : sim ? 1 : CAL_BOARD_REPS;
    if (reps > CAL_MAX_REPS)
        reps = CAL_MAX_REPS;
    bool cpu = op.cpu > 0 || (op.cpu == 0 && !sim);
    uint32_t threads = op.cpu_threads ? op.cpu_threads : (uint32_t)c->cpu_cores;
    struct ork_twin_consts m = *c;
    report_init(r, c, sim, cpu);
    make_source(npu, cpu, r);
    if ((ret = calib_npu(npu, reps, &m, r)) < 0)
        return ret;
    if (cpu && (ret = calib_cpu(threads, reps, &m, r)) < 0)
        return ret;
    if ((ret = ork_twin_consts_check(&m)) < 0)
        return ret;
    *c = m;
    return 0;
}
