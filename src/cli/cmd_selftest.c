/* cmd_selftest.c -- `ork selftest [--device D] [--quick] [--json] [--capabilities FILE]
 * [--confirm-forms FILE] [--calibrate [-o FILE]]`: the validation a board owner runs, and the
 * twin's calibration (measured by src/tooling/calibrate.c; this file only handles arguments and
 * writes the file). First the ladder (src/tooling/selftest_ladder.c): discovery and every submit
 * form the engine uses, one verdict line each; then the shape sweep below.
 * A sweep of matmul shapes (int8 -> int32 and fp16 -> fp32) through libork on the chosen
 * device, each compared with a CPU reference: int8 must be bit-exact, fp16 within a tolerance
 * relative to sum_k |a_k * w_k| (the device's fp32 accumulation order is unknown, spec §3.4).
 * One line per case, a summary line, exit status 0 only when every case passed. The shapes
 * cover the tiling boundaries of spec §5 (M caps, K-slices, N-slices above 8192). */
#include "cli.h"

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/npu.h>
#include <ork/sim.h>
#include <ork/trace.h>
#include <ork/twin.h>
#include <ork-tooling/calibrate.h>
#include <ork-tooling/selftest.h>

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* fp16 tolerance: |npu - ref| <= F16_REL_TOL * sum_k |a_k w_k| + F16_ABS_TOL. Products of fp16
 * values are exact in fp32; the rest is fp32 accumulation error over up to ~19k terms. */
#define F16_REL_TOL 1e-4
#define F16_ABS_TOL 1e-6

/* Where --calibrate writes without -o. */
#define CALIB_DEFAULT_PATH "ork-twin-calibration.json"

struct st_case {
    enum ork_npu_dtype dt;
    uint32_t m, k, n;
    bool quick;                  /* part of --quick */
    uint32_t cores;              /* N-split over cores (spec §9); 0 = one core */
};

/* Shapes: boundaries of spec §5 (caps 64/320/128 for int8 K = 4096/1024/2048, fp16 176 at
 * K = 1024 and 8 at K = 2048; N 8192/8224; decode K-slices above 8192; the LM-head width). */
static const struct st_case cases[] = {
    { ORK_NPU_I8, 1, 32, 32, true, 0 },
    { ORK_NPU_I8, 1, 1024, 1024, false, 0 },
    { ORK_NPU_I8, 1, 4096, 4096, false, 0 },
    { ORK_NPU_I8, 2, 96, 512, false, 0 },
    { ORK_NPU_I8, 64, 4096, 32, false, 0 },
    { ORK_NPU_I8, 65, 4096, 32, true, 0 },
    { ORK_NPU_I8, 320, 1024, 64, false, 0 },
    { ORK_NPU_I8, 321, 1024, 64, false, 0 },
    { ORK_NPU_I8, 129, 2048, 64, false, 0 },
    { ORK_NPU_I8, 7, 3584, 512, false, 0 },
    { ORK_NPU_I8, 1, 2048, 8192, false, 0 },
    { ORK_NPU_I8, 1, 1024, 8224, true, 0 },
    { ORK_NPU_I8, 3, 18944, 32, true, 0 },
    { ORK_NPU_I8, 1, 64, 151936, false, 0 },
    { ORK_NPU_I8, 1, 4096, 4096, true, 3 },
    { ORK_NPU_I8, 1, 1024, 8224, false, 3 },
    { ORK_NPU_I8, 321, 1024, 192, false, 3 },
    { ORK_NPU_F16, 4, 32, 16, true, 0 },
    { ORK_NPU_F16, 1, 1024, 1024, false, 0 },
    { ORK_NPU_F16, 176, 1024, 32, false, 0 },
    { ORK_NPU_F16, 177, 1024, 16, true, 0 },
    { ORK_NPU_F16, 9, 2048, 32, false, 0 },
    { ORK_NPU_F16, 1, 4096, 1024, false, 0 },
    { ORK_NPU_F16, 1, 512, 8224, false, 0 },
    { ORK_NPU_F16, 1, 18944, 32, true, 0 },
    { ORK_NPU_F16, 3, 100, 40, false, 0 },
    { ORK_NPU_F16, 1, 1024, 1024, true, 3 },
    { ORK_NPU_F16, 257, 64, 96, false, 2 },
};

static uint64_t rng_state;

static uint32_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 11);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: ork selftest [--device D] [--quick] [--json] [--trace FILE.json]\n"
            "                    [--capabilities FILE] [--confirm-forms FILE]\n"
            "                    [--npu-wait-ms MS] [--blocking-submits]\n"
            "       ork selftest --calibrate [-o FILE] [--device D]\n"
            "\n"
            "First the ladder: discovery (the node, its permissions, the driver version), then\n"
            "each submit form the engine uses (per-core, multi-core, one-job, chain, async,\n"
            "multi-domain, one real layer's programs), bit-exact against the CPU, one line\n"
            "'form NAME VERDICT ...' each. Then a sweep of NPU matmul shapes (int8 -> int32 and fp16 -> fp32) and compare each\n"
            "with a CPU reference: int8 must be bit-exact, fp16 within %.0e of sum |a*w|.\n"
            "Prints one line per case (shape, dtype, result, run time) and a summary; exits 0\n"
            "only when every case passes.\n"
            "\n"
            "  --device D   auto (default: the board's NPU, else the simulator with a note),\n"
            "               rknpu, rocket, sim or sim-rocket (the simulator behind rocket)\n"
            "  --json       print the ladder as one JSON report (to post with a bug report)\n"
            "               instead of the lines and the sweep\n"
            "  --capabilities FILE  honour the submit forms FILE confirms (twin calibration\n"
            "               JSON, \"capabilities\" object)\n"
            "  --confirm-forms FILE test the forms the spec marks [CAP] or [SRC] (the one-job\n"
            "               0x7 form, the wide-K M-tile rules) and record each verdict in FILE\n"
            "  --npu-wait-ms MS  host bound on one NPU job (default %u): rknpu jobs go\n"
            "               NONBLOCK and a job not done in MS is a timeout, then a reset\n"
            "               and one retry (docs/board.md)\n"
            "  --blocking-submits  submit blocking and rely on the kernel's timeout (the\n"
            "               old behaviour; for bisecting driver problems)\n"
            "  --quick      a short subset of the shapes\n"
            "  --trace F    write a Chrome/Perfetto trace-event timeline of the NPU submits\n"
            "               (one track per core) and of each case to F\n"
            "  --calibrate  instead of the sweep, measure the board twin's constants on the\n"
            "               device (NPU: submit floor, chain cost, 1- and 3-core weight\n"
            "               bandwidth, int8 and fp16 MAC rates; on a board also the A76: GEMV\n"
            "               bandwidth on 1 and 4 threads, effective clock, exp cost) and write\n"
            "               the calibration JSON (docs/twin.md). Prints each measured constant\n"
            "               with what it replaced and lists the ones not measured. On --device\n"
            "               sim the model clock is measured: the file gives back the defaults\n"
            "  -o FILE      where --calibrate writes (default " CALIB_DEFAULT_PATH ")\n",
            F16_REL_TOL, ORK_NPU_WAIT_TIMEOUT_MS);
}

/* Run one case; returns true when it passed. Prints its line. */
static bool run_case(struct ork_npu *npu, const struct st_case *c)
{
    const size_t esz = c->dt == ORK_NPU_I8 ? 1 : 2;
    const uint32_t M = c->m, K = c->k, N = c->n;
    void *a = ork_malloc((size_t)M * K * esz), *w = ork_malloc((size_t)N * K * esz);
    void *out = ork_malloc((size_t)M * N * 4);
    struct ork_npu_weights *wt = NULL;
    struct ork_npu_matmul *mm = NULL;
    bool pass = false;
    int ret = 0;
    char cores[24] = "";
    if (c->cores > 1)
        snprintf(cores, sizeof cores, "cores=%u", c->cores);
    printf("%s  M=%-5u K=%-6u N=%-7u %-8s ", c->dt == ORK_NPU_I8 ? "int8" : "fp16", M, K, N,
           cores);
    fflush(stdout);
    if (!a || !w || !out) {
        printf("ERROR out of host memory\n");
        goto done;
    }
    for (size_t i = 0; i < (size_t)M * K; i++) {
        if (c->dt == ORK_NPU_I8)
            ((int8_t *)a)[i] = (int8_t)rnd();
        else
            ((uint16_t *)a)[i] = ork_npu_f32_to_f16(((float)(rnd() % 20001) - 10000) / 10000);
    }
    for (size_t i = 0; i < (size_t)N * K; i++) {
        if (c->dt == ORK_NPU_I8)
            ((int8_t *)w)[i] = (int8_t)rnd();
        else
            ((uint16_t *)w)[i] = ork_npu_f32_to_f16(((float)(rnd() % 20001) - 10000) / 10000);
    }
    struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = c->dt, .k = K, .n = N,
                                       .w = w, .max_m = M };
    struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = M, .cores = c->cores };
    if ((ret = ork_npu_weights_create(npu, &wd, &wt)) < 0 ||
        (ret = ork_npu_matmul_create(wt, &md, &mm)) < 0) {
        printf("ERROR %s\n", ork_error_describe(ret));
        goto done;
    }
    double t0 = now_ms();
    ret = c->dt == ORK_NPU_I8 ? ork_npu_matmul_run_i8(mm, a, M, out)
                              : ork_npu_matmul_run_f16(mm, a, M, out);
    double ms = now_ms() - t0;
    if (ret < 0) {
        printf("ERROR %s\n", ork_error_describe(ret));
        goto done;
    }
    uint64_t bad = 0;
    double max_err = 0, max_int = 0;
    for (uint32_t i = 0; i < M; i++)
        for (uint32_t j = 0; j < N; j++) {
            if (c->dt == ORK_NPU_I8) {
                const int8_t *ar = (const int8_t *)a + (size_t)i * K;
                const int8_t *wr = (const int8_t *)w + (size_t)j * K;
                int64_t acc = 0;
                for (uint32_t k = 0; k < K; k++)
                    acc += (int32_t)ar[k] * wr[k];
                int64_t d = (int64_t)((int32_t *)out)[(size_t)i * N + j] - acc;
                if (d) {
                    bad++;
                    max_int = fmax(max_int, fabs((double)d));
                }
            } else {
                const uint16_t *ar = (const uint16_t *)a + (size_t)i * K;
                const uint16_t *wr = (const uint16_t *)w + (size_t)j * K;
                double acc = 0, mag = 0;
                for (uint32_t k = 0; k < K; k++) {
                    double p = (double)ork_npu_f16_to_f32(ar[k]) * ork_npu_f16_to_f32(wr[k]);
                    acc += p;
                    mag += fabs(p);
                }
                double err = fabs(((float *)out)[(size_t)i * N + j] - acc);
                if (err > F16_REL_TOL * mag + F16_ABS_TOL)
                    bad++;
                max_err = fmax(max_err, err / (mag + 1e-30));
            }
        }
    if (c->dt == ORK_NPU_I8) {
        if (bad)
            printf("FAIL %llu of %llu differ (max |diff| %.0f)", (unsigned long long)bad,
                   (unsigned long long)M * N, max_int);
        else
            printf("bit-exact                ");
    } else {
        printf("%s max rel err %.1e", bad ? "FAIL" : "ok  ", max_err);
        if (bad)
            printf(" (%llu of %llu above tol)", (unsigned long long)bad,
                   (unsigned long long)M * N);
    }
    printf(" %9.2f ms\n", ms);
    pass = bad == 0;
done:
    ork_npu_matmul_destroy(mm);
    ork_npu_weights_destroy(wt);
    ork_free(a);
    ork_free(w);
    ork_free(out);
    return pass;
}

/* Three int8 plans of one layer-like shape (Q, K, V) run by one chained submit (spec §8.3). */
#define CHAIN_PLANS 3
static bool run_chain_case(struct ork_npu *npu)
{
    static const uint32_t M = 2, K = 1024, ns[CHAIN_PLANS] = { 1024, 256, 256 };
    struct ork_npu_weights *wt[CHAIN_PLANS] = { 0 };
    struct ork_npu_matmul *mm[CHAIN_PLANS] = { 0 };
    int8_t *a = ork_malloc((size_t)M * K), *w[CHAIN_PLANS] = { 0 };
    int32_t *c[CHAIN_PLANS] = { 0 };
    struct ork_npu_chain *ch = NULL;
    bool pass = false;
    int ret = 0;
    printf("int8  M=%-5u K=%-6u N=%u+%u+%u chain    ", M, K, ns[0], ns[1], ns[2]);
    fflush(stdout);
    if (!a) {
        printf("ERROR out of host memory\n");
        return false;
    }
    for (size_t i = 0; i < (size_t)M * K; i++)
        a[i] = (int8_t)rnd();
    for (int p = 0; p < CHAIN_PLANS && ret == 0; p++) {
        w[p] = ork_malloc((size_t)ns[p] * K);
        c[p] = ork_calloc((size_t)M * ns[p], sizeof *c[p]);
        if (!w[p] || !c[p]) {
            ret = ork_errorf(ORK_ENOMEM, "out of host memory");
            break;
        }
        for (size_t i = 0; i < (size_t)ns[p] * K; i++)
            w[p][i] = (int8_t)rnd();
        struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = ORK_NPU_I8, .k = K,
                                           .n = ns[p], .w = w[p], .max_m = M };
        struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = M };
        if ((ret = ork_npu_weights_create(npu, &wd, &wt[p])) == 0)
            ret = ork_npu_matmul_create(wt[p], &md, &mm[p]);
    }
    if (ret == 0)
        ret = ork_npu_chain_create(mm, CHAIN_PLANS, &ch);
    double ms = 0;
    if (ret == 0) {
        const void *av[CHAIN_PLANS] = { a, a, a };
        void *cv[CHAIN_PLANS] = { c[0], c[1], c[2] };
        double t0 = now_ms();
        ret = ork_npu_chain_run(ch, av, cv);
        ms = now_ms() - t0;
    }
    if (ret < 0) {
        printf("ERROR %s\n", ork_error_describe(ret));
        goto done;
    }
    uint64_t bad = 0, total = 0;
    for (int p = 0; p < CHAIN_PLANS; p++)
        for (uint32_t i = 0; i < M; i++)
            for (uint32_t j = 0; j < ns[p]; j++, total++) {
                int64_t acc = 0;
                for (uint32_t k = 0; k < K; k++)
                    acc += (int32_t)a[(size_t)i * K + k] * w[p][(size_t)j * K + k];
                bad += c[p][(size_t)i * ns[p] + j] != acc;
            }
    if (bad)
        printf("FAIL %llu of %llu differ     ", (unsigned long long)bad, (unsigned long long)total);
    else
        printf("bit-exact                ");
    printf(" %9.2f ms\n", ms);
    pass = bad == 0;
done:
    ork_npu_chain_destroy(ch);
    for (int p = 0; p < CHAIN_PLANS; p++) {
        ork_npu_matmul_destroy(mm[p]);
        ork_npu_weights_destroy(wt[p]);
        ork_free(w[p]);
        ork_free(c[p]);
    }
    ork_free(a);
    return pass;
}

/* --calibrate: measure, print the report, write the file. */
static int run_calibrate(struct ork_npu *npu, const char *path)
{
    struct ork_twin_consts c;
    struct ork_calib_report *r = ork_malloc(sizeof *r);
    if (!r) {
        ork_cli_error("selftest", ork_errorf(ORK_ENOMEM, "out of memory"));
        return ORK_EXIT_ERROR;
    }
    ork_twin_consts_default(&c);
    struct ork_calib_opts o = { .struct_size = sizeof o };
    int ret = ork_calib_run(npu, &o, &c, r);
    if (ret == 0) {
        ork_calib_report_print(r, stdout);
        ret = ork_twin_calib_save(path, &c, r->source);
    }
    ork_free(r);
    if (ret < 0) {
        ork_cli_error("selftest", ret);
        return ORK_EXIT_ERROR;
    }
    printf("calibration written: %s\n", path);
    return ORK_EXIT_OK;
}

int ork_cmd_selftest(int argc, char **argv)
{
    const char *device = "auto", *trace = NULL, *calib_out = NULL, *caps = NULL,
               *confirm = NULL;
    bool quick = false, calibrate = false, json = false, blocking = false;
    long long wait_ms = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return ORK_EXIT_OK;
        } else if (!strcmp(argv[i], "--quick")) {
            quick = true;
        } else if (!strcmp(argv[i], "--calibrate")) {
            calibrate = true;
        } else if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) {
            if (!(calib_out = ork_cli_value("selftest", argc, argv, &i)))
                return ORK_EXIT_USAGE;
        } else if (!strcmp(argv[i], "--json")) {
            json = true;
        } else if (!strcmp(argv[i], "--npu-wait-ms")) {
            const char *v = ork_cli_value("selftest", argc, argv, &i);
            if (!v || !ork_cli_parse_int("selftest", "--npu-wait-ms", v, 1,
                                         ORK_CLI_NPU_WAIT_MS_MAX, &wait_ms))
                return ORK_EXIT_USAGE;
        } else if (!strcmp(argv[i], "--blocking-submits")) {
            blocking = true;
        } else if (!strcmp(argv[i], "--capabilities")) {
            if (!(caps = ork_cli_value("selftest", argc, argv, &i)))
                return ORK_EXIT_USAGE;
        } else if (!strcmp(argv[i], "--confirm-forms")) {
            if (!(confirm = ork_cli_value("selftest", argc, argv, &i)))
                return ORK_EXIT_USAGE;
        } else if (!strcmp(argv[i], "--trace")) {
            if (!(trace = ork_cli_value("selftest", argc, argv, &i)))
                return ORK_EXIT_USAGE;
        } else if (!strcmp(argv[i], "--device")) {
            if (!(device = ork_cli_value("selftest", argc, argv, &i)))
                return ORK_EXIT_USAGE;
            if (strcmp(device, "auto") && strcmp(device, "rknpu") && strcmp(device, "rocket") &&
                strcmp(device, "sim") && strcmp(device, "sim-rocket")) {
                fprintf(stderr, "ork selftest: invalid value '%s' for --device: expected auto, "
                        "rknpu, rocket, sim or sim-rocket\n", device);
                return ORK_EXIT_USAGE;
            }
        } else {
            fprintf(stderr, "ork selftest: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return ORK_EXIT_USAGE;
        }
    }
    if (calib_out && !calibrate) {
        fprintf(stderr, "ork selftest: -o is the --calibrate output; add --calibrate\n");
        return ORK_EXIT_USAGE;
    }

    struct ork_npu *npu = NULL;
    /* --calibrate on the simulator measures its model clock, on which the per-core submits of
     * a multi-core probe follow each other (instant clock); the probe takes the one-job form
     * there (src/tooling/calibrate.c), which the sim confirms only when asked */
    struct ork_sim_opts so = { .struct_size = sizeof so, .confirm_one_job = calibrate };
    struct ork_npu_opts o = { .struct_size = sizeof o, .device = device, .capabilities = caps,
                              .sim = &so, .wait_timeout_ms = (uint32_t)wait_ms,
                              .blocking_submits = blocking };
    int ret = ork_npu_open(&o, &npu);
    if (ret < 0 && !strcmp(device, "auto")) {
        fprintf(stderr, "ork selftest: note: %s; running on the simulator instead\n",
                ork_error_describe(ret));
        o.device = "sim";
        ret = ork_npu_open(&o, &npu);
    }
    if (ret < 0) {
        ork_cli_error("selftest", ret);
        return ORK_EXIT_ERROR;
    }
    if (!json)
        printf("device: %s%s\n", ork_npu_backend(npu),
               ork_npu_is_sim(npu) ? " (simulator: timings are not hardware timings)" : "");
    if (calibrate) {
        int rc = run_calibrate(npu, calib_out ? calib_out : CALIB_DEFAULT_PATH);
        ork_npu_close(npu);
        return rc;
    }

    /* the ladder opens its own devices (a second domain, a vouched one-job device) */
    struct ork_selftest_opts lo = { .struct_size = sizeof lo, .device = o.device,
                                    .capabilities = caps, .confirm_forms = confirm != NULL,
                                    .capabilities_out = confirm, .out = json ? NULL : stdout,
                                    .wait_timeout_ms = (uint32_t)wait_ms,
                                    .blocking_submits = blocking };
    struct ork_selftest_report *rep = ork_calloc(1, sizeof *rep);
    if (!rep) {
        ork_npu_close(npu);
        ork_cli_error("selftest", ORK_ENOMEM);
        return ORK_EXIT_ERROR;
    }
    ret = ork_selftest_ladder(&lo, rep);
    uint32_t ladder_failed = rep->n_failed;
    if (json) {
        ork_selftest_report_json(rep, stdout);
        ork_free(rep);
        ork_npu_close(npu);
        return ret < 0 || ladder_failed ? ORK_EXIT_ERROR : ORK_EXIT_OK;
    }
    printf("ladder: %u of %u steps failed on %s\n", ladder_failed, rep->n_steps,
           ork_npu_backend(npu));
    ork_free(rep);

    if (trace && (ret = ork_trace_start(trace)) < 0) {
        ork_cli_error("selftest", ret);
        ork_npu_close(npu);
        return ORK_EXIT_ERROR;
    }
    rng_state = 0x2545f4914f6cdd1dull;   /* fixed seed: a failure reproduces */
    int n = 0, passed = 0;
    double t0 = now_ms();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (quick && !cases[i].quick)
            continue;
        n++;
        ork_trace_begin("selftest case");
        passed += run_case(npu, &cases[i]);
        ork_trace_end();
    }
    n++;
    ork_trace_begin("selftest chain");
    passed += run_chain_case(npu);
    ork_trace_end();
    printf("selftest: %d/%d passed on %s in %.1f s (int8 bit-exact; fp16 within %.0e of "
           "sum |a*w|)\n", passed, n, ork_npu_backend(npu), (now_ms() - t0) / 1e3, F16_REL_TOL);
    if (trace && (ret = ork_trace_stop()) < 0)
        ork_cli_error("selftest", ret);
    else if (trace)
        printf("trace: %s\n", trace);
    ork_npu_close(npu);
    return passed == n && !ladder_failed ? ORK_EXIT_OK : ORK_EXIT_ERROR;
}
