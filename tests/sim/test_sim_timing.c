/* test_sim_timing.c -- the simulator's timing model (sim_timing.c, anchors §8) and the debugfs
 * `load` file (spec §12.1, test vector §15.8): exact text, parsing of both quirk forms, the file
 * written to a caller-chosen path, model monotonicity and calibration points, timing-only mode
 * (no arithmetic), instant mode speed and paced mode real-time delay. */
#include <pthread.h>
#include <sys/stat.h>

#include <ork/error.h>
#include <ork/twin.h>

#include "ork_test.h"
#include "test_sim_prog.h"
#include "sim/sim.h"
#include "sim/sim_exec.h"

static void test_load_format(void)
{
    char buf[128];
    int idle[3] = { 0, 0, 0 };
    CHECK(ork__sim_load_format(buf, sizeof buf, idle, 3) > 0);
    CHECK_STR(buf, "NPU load:  Core0:   %, Core1:   %, Core2:   %,\n");
    int some[3] = { 5, 37, 100 };
    ork__sim_load_format(buf, sizeof buf, some, 3);
    CHECK_STR(buf, "NPU load:  Core0:  5%, Core1: 37%, Core2: 100%,\n");
    int one[1] = { 42 };
    ork__sim_load_format(buf, sizeof buf, one, 1);
    CHECK_STR(buf, "NPU load: 42%\n");
    CHECK_EQ_INT(ork__sim_load_format(buf, 10, some, 3), ORK_ENOSPC);
}

static void test_load_parse(void)
{
    int p[3] = { -1, -1, -1 };
    CHECK_EQ_INT(ork__sim_load_parse("NPU load:  Core0:   %, Core1:   %, Core2:   %,\n", p, 3), 3);
    CHECK(p[0] == 0 && p[1] == 0 && p[2] == 0);
    CHECK_EQ_INT(ork__sim_load_parse("NPU load:  Core0:  0%, Core1: 37%, Core2: 100%,\n", p, 3), 3);
    CHECK(p[0] == 0 && p[1] == 37 && p[2] == 100);
    CHECK_EQ_INT(ork__sim_load_parse("NPU load: 42%\n", p, 3), 1);
    CHECK_EQ_INT(p[0], 42);
    CHECK(ork__sim_load_parse("CPU load: 1%", p, 3) < 0);
    CHECK_EQ_INT(ork_sim_load_parse("NPU load:  Core0:  7%, Core1:   %,\n", p, 3), 2);   /* public */
    CHECK(p[0] == 7 && p[1] == 0);
    char buf[64];
    int two[2] = { 0, 9 };
    CHECK(ork_sim_load_format(buf, sizeof buf, two, 2) > 0);
    CHECK_STR(buf, "NPU load:  Core0:   %, Core1:  9%,\n");
    CHECK(ork__sim_load_parse("NPU load:  Core0: x%,", p, 3) < 0);
}

static struct ork_sim_stats mk_stats(uint32_t m, uint32_t k, uint32_t n)
{
    struct ork_sim_stats st;
    memset(&st, 0, sizeof st);
    st.op = ORK_SIM_OP_MATMUL;
    st.in_prec = ORK_SIM_PREC_INT8;
    st.out_prec = ORK_SIM_PREC_INT32;
    st.m = m;
    st.k = k;
    st.n = n;
    st.macs = (uint64_t)m * k * n;
    st.a_bytes = (uint64_t)m * k;
    st.b_bytes = (uint64_t)k * n;
    st.c_bytes = (uint64_t)m * n * 4;
    return st;
}

/* The default table, built from the twin's defaults like every device's (sim_timing.c). */
static struct ork_sim_timing_table T;

/* Calibration points of anchors §8 ("model with the values above" column) and monotonicity. */
static void test_model(void)
{
    ork__sim_timing_from_twin(NULL, &T);
    struct ork_sim_stats st = mk_stats(1, 2048, 128);
    CHECK_NEAR(ork__sim_task_time_ns(&T, &st, true, 1, 1000) / 1e3, 79.0, 2.0);
    st = mk_stats(36, 2048, 128);
    CHECK_NEAR(ork__sim_task_time_ns(&T, &st, true, 1, 1000) / 1e3, 95.0, 3.0);
    st = mk_stats(8, 3584, 128);
    CHECK_NEAR(ork__sim_task_time_ns(&T, &st, true, 1, 1000) / 1e3, 103.0, 3.0);
    /* M=512 K=N=2048 as 4 programs of 128 rows on one core: ~5.3 ms */
    st = mk_stats(128, 2048, 2048);
    double t4 = ork__sim_task_time_ns(&T, &st, true, 1, 1000) +
                3 * ork__sim_task_time_ns(&T, &st, false, 1, 1000);
    CHECK_NEAR(t4 / 1e6, 5.3, 0.4);
    /* more weight bytes -> more time; more rows -> more time; chained < launched */
    double prev = 0;
    for (uint32_t k = 512; k <= 8192; k *= 2) {
        st = mk_stats(1, k, 1024);
        double t = ork__sim_task_time_ns(&T, &st, true, 1, 1000);
        CHECK(t > prev);
        prev = t;
    }
    struct ork_sim_stats a = mk_stats(1, 2048, 1024), b = mk_stats(64, 2048, 1024);
    CHECK(ork__sim_task_time_ns(&T, &b, true, 1, 1000) > ork__sim_task_time_ns(&T, &a, true, 1, 1000));
    CHECK(ork__sim_task_time_ns(&T, &a, false, 1, 1000) < ork__sim_task_time_ns(&T, &a, true, 1, 1000));
    /* three cores streaming share 28.5 GB/s: each core is slower than alone (11 GB/s) */
    CHECK(ork__sim_task_time_ns(&T, &a, true, 3, 1000) > ork__sim_task_time_ns(&T, &a, true, 1, 1000));
    /* fp16 MACs are slower; a lower clock slows the MAC term */
    struct ork_sim_stats h = b;
    h.in_prec = ORK_SIM_PREC_FP16;
    CHECK(ork__sim_task_time_ns(&T, &h, true, 1, 1000) > ork__sim_task_time_ns(&T, &b, true, 1, 1000));
    CHECK(ork__sim_task_time_ns(&T, &b, true, 1, 300) > ork__sim_task_time_ns(&T, &b, true, 1, 1000));
}

/* One M x K x N int8 program through the sim (no data filled: timing-only or zero inputs). */
struct one {
    struct tp_dev d;
    struct ork_kbo prog, a, b, c;
    struct ork_ktask t;
};

static int one_setup(struct one *o, const struct ork_sim_opts *so, uint32_t M, uint32_t K,
                     uint32_t N)
{
    memset(o, 0, sizeof(*o));
    if (tp_open(&o->d, so) < 0)
        return -1;
    if (tp_bo(&o->d, 1024, 0, &o->prog) || tp_bo(&o->d, (uint64_t)M * K, 0, &o->a) ||
        tp_bo(&o->d, (uint64_t)K * N, 0, &o->b) || tp_bo(&o->d, (uint64_t)M * N * 4, 0, &o->c))
        return -1;
    struct tp_shape sh = { M, K, N, 0, o->a.iova, o->b.iova, o->c.iova };
    tp_build(o->prog.map, &sh, 0, 0);
    tp_sync_to(&o->d, &o->prog);
    o->t = tp_task(o->prog.iova, 0);
    return 0;
}

static int one_run(struct one *o, uint32_t core)
{
    struct ork_kjob j = { .tasks = &o->t, .n_tasks = 1, .core_mask = 1u << core };
    j.range[core] = (struct ork_kcore_range){ 0, 1 };
    return o->d.ops->submit(o->d.ctx, &j);
}

static void one_teardown(struct one *o)
{
    o->d.ops->bo_destroy(o->d.ctx, &o->prog);
    o->d.ops->bo_destroy(o->d.ctx, &o->a);
    o->d.ops->bo_destroy(o->d.ctx, &o->b);
    o->d.ops->bo_destroy(o->d.ctx, &o->c);
    o->d.ops->close(o->d.ctx);
}

static int64_t one_job_ns(struct one *o)
{
    struct ork_sim_counters c;
    ork__sim_counters(ork__kmd_sim_get(o->d.ops, o->d.ctx), &c);
    return c.last_job_ns;
}

/* Through a real submit: modelled job time follows the table; timing-only leaves C alone. */
static void test_submit_timing_only(void)
{
    struct ork_sim_opts so = { .struct_size = sizeof so, .timing = ORK_SIM_TIMING_ONLY };
    struct one o;
    REQUIRE(one_setup(&o, &so, 1, 2048, 128) == 0);
    memset(o.c.map, 0x33, o.c.size);
    tp_sync_to(&o.d, &o.c);
    CHECK_EQ_INT(one_run(&o, 0), 0);
    CHECK_NEAR(one_job_ns(&o) / 1e3, 79.0, 3.0);
    tp_sync_from(&o.d, &o.c);
    CHECK_EQ_INT(((uint32_t *)o.c.map)[0], 0x33333333);   /* no arithmetic */
    one_teardown(&o);

    /* a big decode projection: 64 MiB of weights, never touched in timing-only mode */
    REQUIRE(one_setup(&o, &so, 1, 8192, 8192) == 0);
    int64_t t0 = ork__sim_real_ns();
    CHECK_EQ_INT(one_run(&o, 0), 0);
    CHECK(ork__sim_real_ns() - t0 < 1000 * 1000000ll);
    double want = 55e3 + 8192.0 * 8192 / 11e9 * 1e9;          /* launch + weight stream */
    CHECK_NEAR((double)one_job_ns(&o), want, want * 0.05);
    one_teardown(&o);
}

/* Instant mode computes and completes at once: many submits are fast in real time. */
static void test_instant_fast(void)
{
    struct one o;
    REQUIRE(one_setup(&o, NULL, 4, 64, 32) == 0);
    int64_t t0 = ork__sim_real_ns();
    int ok = 0;
    for (int i = 0; i < 300; i++)
        ok += one_run(&o, (uint32_t)i % 3) == 0;
    CHECK_EQ_INT(ok, 300);
    CHECK(ork__sim_real_ns() - t0 < 3000 * 1000000ll);        /* modelled: 300 x 55 us = 16 ms */
    struct ork_sim_counters c;
    ork__sim_counters(ork__kmd_sim_get(o.d.ops, o.d.ctx), &c);
    CHECK_EQ_INT(c.tasks, 300);
    CHECK_EQ_INT(c.core_tasks[0] + c.core_tasks[1] + c.core_tasks[2], 300);
    one_teardown(&o);
}

/* Paced mode delays completion in real time to the model time. */
static void test_paced(void)
{
    struct ork_sim_opts so = { .struct_size = sizeof so, .timing = ORK_SIM_TIMING_PACED };
    struct one o;
    /* paced + arithmetic on a small shape, then a timing-heavy one with zero data */
    REQUIRE(one_setup(&o, &so, 1, 8192, 2048) == 0);          /* 16 MiB: ~1.6 ms modelled */
    int64_t t0 = ork__sim_real_ns();
    CHECK_EQ_INT(one_run(&o, 1), 0);
    int64_t el = ork__sim_real_ns() - t0;
    CHECK(one_job_ns(&o) > 1500000ll);
    CHECK(el >= one_job_ns(&o));
    one_teardown(&o);
}

/* The `load` file at a caller-chosen path, in the exact vendor format. */
static void test_load_file(void)
{
    char dir[] = "/tmp/ork_sim_load_XXXXXX";
    REQUIRE(mkdtemp(dir) != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/load", dir);
    struct ork_sim_opts so = { .struct_size = sizeof so, .timing = ORK_SIM_TIMING_ONLY,
                               .load_path = path };
    struct one o;
    REQUIRE(one_setup(&o, &so, 1, 8192, 8192) == 0);
    char text[160] = "";
    FILE *f = fopen(path, "r");
    REQUIRE(f != NULL);                                       /* written at open: idle */
    CHECK(fgets(text, sizeof text, f) != NULL);
    fclose(f);
    CHECK_STR(text, "NPU load:  Core0:   %, Core1:   %, Core2:   %,\n");
    /* ~6.2 ms per job on core 2: 40 back-to-back jobs keep it ~25 % busy over the 1 s window */
    for (int i = 0; i < 40; i++)
        CHECK_EQ_INT(one_run(&o, 2), 0);
    f = fopen(path, "r");
    REQUIRE(f != NULL);
    CHECK(fgets(text, sizeof text, f) != NULL);
    fclose(f);
    int p[3] = { -1, -1, -1 };
    CHECK_EQ_INT(ork__sim_load_parse(text, p, 3), 3);
    CHECK_EQ_INT(p[0], 0);
    CHECK_EQ_INT(p[1], 0);
    CHECK(p[2] >= 20 && p[2] <= 30);
    char live[160];
    ork__sim_load_text(ork__kmd_sim_get(o.d.ops, o.d.ctx), live, sizeof live);
    CHECK_STR(live, text);
    one_teardown(&o);
    remove(path);
    rmdir(dir);
}

/* Three cores overlap in model time: NONBLOCK jobs on cores 0..2 end together (sharing the
 * 28.5 GB/s), not one after another. */
static void test_cores_overlap(void)
{
    struct ork_sim_opts so = { .struct_size = sizeof so, .timing = ORK_SIM_TIMING_ONLY };
    struct one o;
    REQUIRE(one_setup(&o, &so, 1, 8192, 8192) == 0);
    struct ork_sim *sim = ork__kmd_sim_get(o.d.ops, o.d.ctx);
    struct ork_sim_counters c0, c1;
    ork__sim_counters(sim, &c0);
    struct ork_kjob j[3];
    for (uint32_t i = 0; i < 3; i++) {
        j[i] = (struct ork_kjob){ .tasks = &o.t, .n_tasks = 1, .core_mask = 1u << i,
                                  .flags = ORK_KJOB_NONBLOCK };
        j[i].range[i] = (struct ork_kcore_range){ 0, 1 };
        CHECK_EQ_INT(o.d.ops->submit(o.d.ctx, &j[i]), 0);
    }
    for (int i = 0; i < 3; i++)
        CHECK_EQ_INT(o.d.ops->wait(o.d.ctx, &j[i], -1), 0);
    ork__sim_counters(sim, &c1);
    double one_core = 55e3 + 8192.0 * 8192 / 11e9 * 1e9;
    double span = (double)(c1.now_ns - c0.now_ns);
    CHECK(span < 2.0 * one_core);                      /* serial would be 3x */
    CHECK(span > one_core);                            /* shared bandwidth: slower than alone */
    for (int i = 0; i < 3; i++)
        CHECK(c1.busy_ns[i] - c0.busy_ns[i] > 0);
    one_teardown(&o);
}

struct thr {
    struct one *o;
    uint32_t core;
    int ret;
};

static void *thr_run(void *arg)
{
    struct thr *t = arg;
    t->ret = one_run(t->o, t->core);
    return NULL;
}

/* Paced blocking submits from three threads (one per core) run concurrently in real time. */
static void test_paced_threads(void)
{
    struct ork_sim_opts so = { .struct_size = sizeof so, .timing = ORK_SIM_TIMING_PACED };
    struct one o;
    REQUIRE(one_setup(&o, &so, 1, 4096, 2048) == 0);          /* ~0.8 ms modelled each */
    struct thr t[3];
    pthread_t th[3];
    int64_t t0 = ork__sim_real_ns();
    for (uint32_t i = 0; i < 3; i++) {
        t[i] = (struct thr){ &o, i, -1 };
        pthread_create(&th[i], NULL, thr_run, &t[i]);
    }
    for (int i = 0; i < 3; i++) {
        pthread_join(th[i], NULL);
        CHECK_EQ_INT(t[i].ret, 0);
    }
    int64_t el = ork__sim_real_ns() - t0;
    double one_core = 55e3 + 4096.0 * 2048 / 11e9 * 1e9;
    CHECK(el >= (int64_t)one_core);
    fprintf(stderr, "3 paced threads: %.2f ms (one job alone %.2f ms)\n", el / 1e6,
            one_core / 1e6);
    one_teardown(&o);
}

/* Many short jobs: the load reflects all of them (not only the most recent few). */
static void test_load_many_jobs(void)
{
    struct ork_sim_opts so = { .struct_size = sizeof so, .timing = ORK_SIM_TIMING_ONLY };
    struct one o;
    REQUIRE(one_setup(&o, &so, 1, 2048, 128) == 0);           /* ~79 us each */
    for (int i = 0; i < 3000; i++)                             /* ~237 ms on core 0 */
        CHECK_EQ_INT(one_run(&o, 0), 0);
    char text[160];
    ork__sim_load_text(ork__kmd_sim_get(o.d.ops, o.d.ctx), text, sizeof text);
    int p[3];
    CHECK_EQ_INT(ork__sim_load_parse(text, p, 3), 3);
    /* back-to-back: busy 237 ms of the last 1 s (the clock only advanced by the jobs) */
    CHECK(p[0] >= 22 && p[0] <= 25);
    one_teardown(&o);
}

/* One table: the sim's NPU constants are the twin's (same values as before the move), and a
 * table given through ork_sim_opts.twin is the one a device runs on. */
static void test_twin_table(void)
{
    struct ork_twin_consts c;
    ork_twin_consts_default(&c);
    struct ork_sim_timing_table d;
    ork__sim_timing_from_twin(&c, &d);
    CHECK(d.t_launch_ns == 55000.0 && d.t_chain_ns == 18000.0 && d.bw_core_max == 11.0e9 &&
          d.bw_npu_total == 28.5e9 && d.mac_int8 == 0.6e12 && d.mac_fp16 == 0.3e12 &&
          d.ref_freq_mhz == 1000.0 && d.t_domain_switch_ns == 100000.0 &&
          d.t_lut_load_ns == 18000.0 && d.load_window_ns == 1.0e9);
    c.npu_launch_ns = 40000;
    c.npu_bw_core = 5.5e9;
    struct ork_sim_opts so = { .struct_size = sizeof so, .timing = ORK_SIM_TIMING_ONLY,
                               .twin = &c };
    struct one o;
    REQUIRE(one_setup(&o, &so, 1, 8192, 8192) == 0);
    CHECK_EQ_INT(one_run(&o, 0), 0);
    double want = 40e3 + (8192.0 * 8192 + 8192 * 4) / 5.5e9 * 1e9 + 8192.0 * 8192 / 0.6e12 * 1e9;
    CHECK_NEAR((double)one_job_ns(&o), want, 2.0);
    one_teardown(&o);
    c.npu_bw_core = -1;                                      /* refused, naming the constant */
    struct tp_dev dv;
    CHECK(tp_open(&dv, &so) < 0);
    CHECK(strstr(ork_error_message(), "npu_bw_core") != NULL);
}

int main(void)
{
    RUN(test_load_format);
    RUN(test_load_parse);
    RUN(test_model);
    RUN(test_submit_timing_only);
    RUN(test_instant_fast);
    RUN(test_paced);
    RUN(test_load_file);
    RUN(test_cores_overlap);
    RUN(test_paced_threads);
    RUN(test_load_many_jobs);
    RUN(test_twin_table);
    return ork_test_done();
}
