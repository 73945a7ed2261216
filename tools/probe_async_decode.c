/* probe_async_decode.c -- overlap of the CPU's preparation of the next matmul with the NPU work
 * of the current one, on the seven decode projections of a 7B-class layer (Qwen2.5-7B: q
 * 3584x3584, k/v 3584x512, o 3584x3584, gate/up 3584x18944, down 18944x3584), M=1, the core
 * budget's cores (cores = 0: the big projections split over three cores).
 *
 *   serial      per projection: prep; run                         (t_cpu + t_npu per token)
 *   pipelined   prep(0); per projection i: submit_async(i); prep(i+1); wait(i)
 *
 * The CPU prep is real work: RMSNorm of the projection's input activation and its int8
 * requantisation (ork_npu_quantize_rows_i8), repeated to sweep the CPU/NPU time ratio from 0.1
 * to 2 (anchors §4: decode runs at ~1.9). Each prep reads the layer input, not the previous
 * projection's output, so every step may overlap (an upper bound: in a real layer only {q,k,v}
 * and {gate,up} are independent, anchors §4). Ideal = the sum->max ceiling (t_cpu + t_npu) /
 * max(t_cpu, t_npu); share = speedup / ideal.
 *
 * Bit-exact gate first: the same two schedules on a dim-256 layer with arithmetic (the sim's
 * instant mode), pipelined on 3-core async plans vs serial on single-core plans, every output
 * compared bit for bit. The timing sweep then runs the full-size layer on the simulator in paced
 * timing-only mode (no arithmetic, completions delayed in real time to the timing model): at
 * 7B sizes the sim's arithmetic would be ~100x slower than the modelled NPU.
 * Usage: probe_async_decode [--tokens N] [--device D] [--load-file PATH] [--trace FILE.json] */
#include "probe_common.h"

#include <math.h>

#define MAX_K 18944
#define RMS_EPS 1e-6f           /* Qwen2.5 rms_norm_eps */
#define CALIBRATE_ROUNDS 3      /* serial tokens spent steering the prep toward each ratio */

static const double ratios[] = { 0.1, 0.25, 0.5, 1.0, 1.5, 1.9, 2.0 };
enum { NR = sizeof ratios / sizeof ratios[0] };

static float x_in[MAX_K], gamma_w[MAX_K], y_tmp[MAX_K];
static volatile float sink;

/* RMSNorm of x[k] with weights gamma, then int8 requantisation into a; `reps` times. */
static void prep(int8_t *a, uint32_t k, int reps)
{
    ork_trace_begin("prep");
    for (int r = 0; r < reps; r++) {
        double ss = 0;
        for (uint32_t i = 0; i < k; i++)
            ss += (double)x_in[i] * x_in[i];
        float inv = 1.0f / sqrtf((float)(ss / k) + RMS_EPS + (float)r * 1e-12f);
        for (uint32_t i = 0; i < k; i++)
            y_tmp[i] = x_in[i] * inv * gamma_w[i];
        float scale;
        ork_npu_quantize_rows_i8(y_tmp, 1, k, a, &scale);
        sink = scale;
    }
    ork_trace_end();
}

struct layer {
    struct ork_npu_weights *wt[PROBE_NPROJ];
    struct ork_npu_matmul *mm[PROBE_NPROJ];
    int8_t *a[PROBE_NPROJ];
    int32_t *c[PROBE_NPROJ];
    struct probe_proj shape[PROBE_NPROJ];
};

static void layer_free(struct layer *L)
{
    for (int p = 0; p < PROBE_NPROJ; p++) {
        ork_npu_matmul_destroy(L->mm[p]);
        ork_npu_weights_destroy(L->wt[p]);
        ork_free(L->a[p]);
        ork_free(L->c[p]);
    }
}

static int layer_init(struct layer *L, struct ork_npu *npu, const struct probe_proj *shape,
                      uint32_t cores)
{
    memset(L, 0, sizeof *L);
    for (int p = 0; p < PROBE_NPROJ; p++) {
        L->shape[p] = shape[p];
        L->a[p] = ork_calloc(shape[p].k, 1);
        L->c[p] = ork_calloc(shape[p].n, sizeof(int32_t));
        L->wt[p] = probe_weights(npu, shape[p].k, shape[p].n, 1, (uint64_t)p + 1);
        if (!L->a[p] || !L->c[p] || !L->wt[p] || !(L->mm[p] = probe_plan(L->wt[p], 1, cores)))
            return -1;
    }
    return 0;
}

/* One token, serial; returns its µs and adds the prep µs to *cpu_us. */
static double token_serial(struct layer *L, const int *reps, double *cpu_us)
{
    double t0 = probe_now_us();
    for (int p = 0; p < PROBE_NPROJ; p++) {
        double p0 = probe_now_us();
        prep(L->a[p], L->shape[p].k, reps[p]);
        *cpu_us += probe_now_us() - p0;
        ork_trace_begin("run");
        int ret = ork_npu_matmul_run_i8(L->mm[p], L->a[p], 1, L->c[p]);
        ork_trace_end();
        if (ret < 0)
            return -1;
    }
    return probe_now_us() - t0;
}

static double token_pipelined(struct layer *L, const int *reps)
{
    double t0 = probe_now_us();
    prep(L->a[0], L->shape[0].k, reps[0]);
    for (int p = 0; p < PROBE_NPROJ; p++) {
        struct ork_npu_job *job = NULL;
        if (ork_npu_matmul_submit_async(L->mm[p], L->a[p], 1, L->c[p], &job) < 0)
            return -1;
        if (p + 1 < PROBE_NPROJ)
            prep(L->a[p + 1], L->shape[p + 1].k, reps[p + 1]);
        ork_trace_begin("wait");
        int ret = ork_npu_job_wait(job);
        ork_trace_end();
        if (ret < 0)
            return -1;
    }
    return probe_now_us() - t0;
}

/* Serial on single-core plans vs pipelined on 3-core async plans, with arithmetic. */
static int bit_exact_gate(void)
{
    static const struct probe_proj small[PROBE_NPROJ] = {
        { "q", 256, 256 }, { "k", 256, 64 }, { "v", 256, 64 }, { "o", 256, 256 },
        { "gate", 256, 704 }, { "up", 256, 704 }, { "down", 704, 256 },
    };
    struct probe_opts io = { .timing = ORK_SIM_TIMING_INSTANT };
    struct ork_npu *npu = probe_open(&io);
    if (!npu)
        return -1;
    struct layer s, p;
    int same = 0, rc = -1;
    const int reps[PROBE_NPROJ] = { 1, 1, 1, 1, 1, 1, 1 };
    if (layer_init(&s, npu, small, 1) < 0 || layer_init(&p, npu, small, 3) < 0)
        goto out;
    double cpu = 0;
    if (token_serial(&s, reps, &cpu) < 0 || token_pipelined(&p, reps) < 0)
        goto out;
    for (int i = 0; i < PROBE_NPROJ; i++) {
        struct ork_npu_matmul_info info;
        ork_npu_matmul_get_info(p.mm[i], &info);
        bool eq = memcmp(s.c[i], p.c[i], small[i].n * sizeof(int32_t)) == 0;
        bool nonzero = false;
        for (uint32_t j = 0; j < small[i].n; j++)
            nonzero |= s.c[i][j] != 0;
        same += eq && nonzero;
        if (!eq || !nonzero)
            fprintf(stderr, "bit-exact gate: %s differs (pipelined on %u cores)\n", small[i].name,
                    info.n_cores);
    }
    printf("bit-exact gate: %d/%d outputs identical (dim-256 layer with arithmetic: serial "
           "single-core vs pipelined async multi-core)\n", same, PROBE_NPROJ);
    rc = same == PROBE_NPROJ ? 0 : -1;
out:
    layer_free(&p);
    layer_free(&s);
    ork_npu_close(npu);
    return rc;
}

int main(int argc, char **argv)
{
    struct probe_opts o = { .timing = ORK_SIM_TIMING_PACED_ONLY };
    int tokens;
    if (probe_parse_count(argc, argv, &o, "--tokens", 5, &tokens,
                          "usage: probe_async_decode [--tokens N] [--device D] "
                          "[--load-file PATH] [--trace FILE.json]\n"))
        return 2;
    for (int i = 0; i < MAX_K; i++) {
        x_in[i] = sinf((float)i * 0.37f) * 2.0f;
        gamma_w[i] = 0.5f + (float)(i % 7) * 0.1f;
    }
    if (bit_exact_gate() < 0)
        return 1;

    struct ork_npu *npu = probe_open(&o);
    if (!npu)
        return 1;
    struct layer L;
    int rc = 1;
    double *ts = ork_calloc((size_t)tokens, sizeof *ts), *tp = ork_calloc((size_t)tokens, sizeof *tp);
    double *tc = ork_calloc((size_t)tokens, sizeof *tc);
    if (!ts || !tp || !tc || layer_init(&L, npu, probe_7b, 0) < 0)
        goto out;
    /* NPU time of the layer alone, and one prep's cost per input width */
    const int none[PROBE_NPROJ] = { 0 };
    double cpu = 0;
    for (int t = 0; t < tokens; t++)
        ts[t] = token_serial(&L, none, &cpu);
    double t_npu = probe_min(ts, tokens);
    double unit[2];
    for (int w = 0; w < 2; w++) {
        uint32_t k = w ? 18944 : 3584;
        for (int t = 0; t < tokens; t++) {
            double t0 = probe_now_us();
            for (int r = 0; r < 20; r++)
                prep(L.a[w ? 6 : 0], k, 1);
            tc[t] = (probe_now_us() - t0) / 20;
        }
        unit[w] = probe_min(tc, tokens);
    }
    printf("layer NPU time %.0f us per token (%s backend%s, budgeted cores); prep (RMSNorm + "
           "int8 requant) %.1f us at K=3584, %.1f us at K=18944; best of %d tokens\n",
           t_npu, ork_npu_backend(npu), ork_npu_is_sim(npu) ? ", paced timing-only" : "",
           unit[0], unit[1], tokens);
    printf("%6s %8s %10s %13s %9s %7s %7s\n", "target", "ratio", "serial us", "pipelined us",
           "speedup", "ideal", "share");
    for (int ri = 0; ri < NR; ri++) {
        int reps[PROBE_NPROJ];
        for (int p = 0; p < PROBE_NPROJ; p++) {
            double want = ratios[ri] * t_npu / PROBE_NPROJ;
            int n = (int)lround(want / unit[probe_7b[p].k > 3584]);
            reps[p] = n < 1 ? 1 : n;
        }
        /* the prep's cost drifts with cache state: steer the repetitions until the serial
         * run's measured CPU/NPU ratio is near the target */
        for (int it = 0; it < CALIBRATE_ROUNDS; it++) {
            double c0 = 0, s0 = token_serial(&L, reps, &c0);
            if (s0 < 0 || s0 <= c0)
                break;
            double f = ratios[ri] / (c0 / (s0 - c0));
            f = f < 0.5 ? 0.5 : f > 2.0 ? 2.0 : f;
            for (int p = 0; p < PROBE_NPROJ; p++)
                reps[p] = (int)lround(reps[p] * f) < 1 ? 1 : (int)lround(reps[p] * f);
        }
        for (int t = 0; t < tokens; t++) {
            tc[t] = 0;
            ts[t] = token_serial(&L, reps, &tc[t]);
            tp[t] = token_pipelined(&L, reps);
            if (ts[t] < 0 || tp[t] < 0) {
                fprintf(stderr, "run: %s\n", ork_error_message());
                goto out;
            }
        }
        double s = probe_min(ts, tokens), pl = probe_min(tp, tokens);
        double c = probe_min(tc, tokens), n = s - c;
        double ideal = (c + n) / (c > n ? c : n), sp = s / pl;
        printf("%6.2f %8.2f %10.0f %13.0f %8.2fx %6.2fx %6.0f%%\n", ratios[ri], c / n, s, pl, sp,
               ideal, 100.0 * sp / ideal);
        fflush(stdout);
    }
    rc = 0;
out:
    layer_free(&L);
    ork_free(ts);
    ork_free(tp);
    ork_free(tc);
    probe_close(npu, &o);
    return rc;
}
