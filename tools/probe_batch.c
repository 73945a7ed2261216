/* probe_batch.c -- µs per token of a 7B-class layer's seven projections at M = 1, 2, 4, 8, 16
 * rows (decode batch / speculative verify sizes): weights resident once (max_m 16), one plan per
 * M with the core budget's pick (cores = 0), median of --reps runs of the whole layer (the best run). The cost
 * of a run is nearly flat in M at these sizes (weights stream once per run, anchors §3.1, §3.3),
 * so µs per token falls ~1/M.
 *
 * On the simulator: paced timing-only mode (no arithmetic; completions delayed to model time).
 * Figures are the best of the runs (the least disturbed on a shared machine).
 * Usage: probe_batch [--reps N] [--device D] [--load-file PATH] [--trace FILE.json] */
#include "probe_common.h"

#define MAX_M 16

int main(int argc, char **argv)
{
    struct probe_opts o = { .timing = ORK_SIM_TIMING_PACED_ONLY };
    int reps;
    if (probe_parse_count(argc, argv, &o, "--reps", 5, &reps,
                          "usage: probe_batch [--reps N] [--device D] [--load-file PATH] "
                          "[--trace FILE.json]\n"))
        return 2;
    static const uint32_t ms[] = { 1, 2, 4, 8, 16 };
    enum { NM = sizeof ms / sizeof ms[0] };
    struct ork_npu *npu = probe_open(&o);
    if (!npu)
        return 1;
    struct ork_npu_weights *wt[PROBE_NPROJ] = { 0 };
    struct ork_npu_matmul *mm[NM][PROBE_NPROJ] = { { 0 } };
    int8_t *a = ork_calloc((size_t)MAX_M * 18944, 1);
    int32_t *c = ork_calloc((size_t)MAX_M * 18944, sizeof *c);
    double *t = ork_calloc((size_t)reps, sizeof *t);
    int rc = 1;
    if (!a || !c || !t)
        goto out;
    for (int p = 0; p < PROBE_NPROJ; p++) {
        wt[p] = probe_weights(npu, probe_7b[p].k, probe_7b[p].n, MAX_M, (uint64_t)p + 1);
        if (!wt[p])
            goto out;
        for (int j = 0; j < NM; j++)
            if (!(mm[j][p] = probe_plan(wt[p], ms[j], 0)))
                goto out;
    }
    printf("Qwen2.5-7B layer projections, %s backend%s, best of %d layer runs\n",
           ork_npu_backend(npu), ork_npu_is_sim(npu) ? " (paced timing-only)" : "", reps);
    printf("%4s %12s %14s %10s   cores q/k/v/o/gate/up/down\n", "M", "layer us", "us per token",
           "vs M=1");
    double base = 0;
    for (int j = 0; j < NM; j++) {
        for (int r = 0; r < reps; r++) {
            double t0 = probe_now_us();
            for (int p = 0; p < PROBE_NPROJ; p++)
                if (ork_npu_matmul_run_i8(mm[j][p], a, ms[j], c) < 0) {
                    fprintf(stderr, "run: %s\n", ork_error_message());
                    goto out;
                }
            t[r] = probe_now_us() - t0;
        }
        double med = probe_min(t, reps), per = med / ms[j];
        if (j == 0)
            base = per;
        printf("%4u %12.0f %14.0f %9.2fx   ", ms[j], med, per, base / per);
        for (int p = 0; p < PROBE_NPROJ; p++) {
            struct ork_npu_matmul_info info;
            ork_npu_matmul_get_info(mm[j][p], &info);
            printf("%u%s", info.n_cores, p + 1 < PROBE_NPROJ ? "/" : "\n");
        }
    }
    rc = 0;
out:
    for (int j = 0; j < NM; j++)
        for (int p = 0; p < PROBE_NPROJ; p++)
            ork_npu_matmul_destroy(mm[j][p]);
    for (int p = 0; p < PROBE_NPROJ; p++)
        ork_npu_weights_destroy(wt[p]);
    ork_free(a);
    ork_free(c);
    ork_free(t);
    probe_close(npu, &o);
    return rc;
}
