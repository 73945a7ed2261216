/* probe_multicore.c -- M=1 decode projections of a 7B-class layer on one NPU core vs the cores
 * the core budget picks (plans created with cores = 0). Prints per projection the cores picked, the
 * best-of-N µs per run on one core and budgeted, and the speedup; then the layer total. With
 * --seconds S it then keeps running the budgeted layer for S seconds (watch it with
 * `ork top --load-file PATH` while this runs with --load-file PATH).
 *
 * On the simulator it runs in paced timing-only mode: the timing model's completions are
 * delayed in real time, no arithmetic is done (outputs are not checked here; bit-exactness of
 * the split is tests/sim/test_sched). Usage:
 *   probe_multicore [--reps N] [--seconds S] [--device sim|rknpu|rocket] [--load-file PATH]
 *                   [--trace FILE.json] */
#include "probe_common.h"

int main(int argc, char **argv)
{
    struct probe_opts o = { .timing = ORK_SIM_TIMING_PACED_ONLY };
    int reps = 10;
    double seconds = 0;
    for (int i = 1; i < argc; i++) {
        int r = probe_common_flag(&o, argc, argv, &i);
        if (r < 0)
            return 2;
        if (r)
            continue;
        if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            seconds = atof(argv[++i]);
        else {
            fprintf(stderr, "usage: probe_multicore [--reps N] [--seconds S] [--device D] "
                    "[--load-file PATH] [--trace FILE.json]\n");
            return 2;
        }
    }
    if (reps < 1 || reps > 1000)
        reps = 10;
    struct ork_npu *npu = probe_open(&o);
    if (!npu)
        return 1;
    struct ork_npu_weights *wt[PROBE_NPROJ] = { 0 };
    struct ork_npu_matmul *one[PROBE_NPROJ] = { 0 }, *bud[PROBE_NPROJ] = { 0 };
    int8_t *a = ork_calloc(18944, 1);
    int32_t *c = ork_calloc(18944, sizeof *c);
    int rc = 1;
    if (!a || !c)
        goto out;
    for (int p = 0; p < PROBE_NPROJ; p++) {
        wt[p] = probe_weights(npu, probe_7b[p].k, probe_7b[p].n, 1, (uint64_t)p + 1);
        if (!wt[p] || !(one[p] = probe_plan(wt[p], 1, 1)) || !(bud[p] = probe_plan(wt[p], 1, 0)))
            goto out;
    }
    printf("M=1 decode projections (Qwen2.5-7B layer), %s backend%s, best of %d runs\n",
           ork_npu_backend(npu), ork_npu_is_sim(npu) ? " (paced timing-only)" : "", reps);
    printf("%-6s %6s %6s %6s %10s %12s %8s %12s\n", "proj", "K", "N", "cores", "1-core us",
           "budgeted us", "speedup", "model 1c/bc");
    double sum1 = 0, sumb = 0;
    double *t1 = ork_calloc((size_t)reps, sizeof *t1), *tb = ork_calloc((size_t)reps, sizeof *tb);
    if (!t1 || !tb)
        goto out;
    for (int p = 0; p < PROBE_NPROJ; p++) {
        struct ork_npu_matmul_info info;
        ork_npu_matmul_get_info(bud[p], &info);
        for (int r = 0; r < reps; r++) {
            double t0 = probe_now_us();
            if (ork_npu_matmul_run_i8(one[p], a, 1, c) < 0)
                goto run_err;
            double t_1 = probe_now_us();
            if (ork_npu_matmul_run_i8(bud[p], a, 1, c) < 0)
                goto run_err;
            t1[r] = t_1 - t0;
            tb[r] = probe_now_us() - t_1;
        }
        double m1 = probe_min(t1, reps), mb = probe_min(tb, reps);
        sum1 += m1;
        sumb += mb;
        printf("%-6s %6u %6u %6u %10.0f %12.0f %7.2fx %5.0f/%-5.0f\n", probe_7b[p].name,
               probe_7b[p].k, probe_7b[p].n, info.n_cores, m1, mb, m1 / mb,
               ork_npu_cost_ns(ORK_NPU_I8, 1, probe_7b[p].k, probe_7b[p].n, 1) / 1e3,
               ork_npu_cost_ns(ORK_NPU_I8, 1, probe_7b[p].k, probe_7b[p].n, info.n_cores) / 1e3);
    }
    printf("%-6s %6s %6s %6s %10.0f %12.0f %7.2fx\n", "layer", "", "", "", sum1, sumb,
           sum1 / sumb);
    if (seconds > 0) {
        printf("running the budgeted layer for %.1f s\n", seconds);
        fflush(stdout);
        double end = probe_now_us() + seconds * 1e6;
        while (probe_now_us() < end)
            for (int p = 0; p < PROBE_NPROJ; p++)
                if (ork_npu_matmul_run_i8(bud[p], a, 1, c) < 0)
                    goto run_err;
    }
    rc = 0;
    goto freet;
run_err:
    fprintf(stderr, "run: %s\n", ork_error_message());
freet:
    ork_free(t1);
    ork_free(tb);
out:
    for (int p = 0; p < PROBE_NPROJ; p++) {
        ork_npu_matmul_destroy(one[p]);
        ork_npu_matmul_destroy(bud[p]);
        ork_npu_weights_destroy(wt[p]);
    }
    ork_free(a);
    ork_free(c);
    probe_close(npu, &o);
    return rc;
}
