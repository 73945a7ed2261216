/* test_twin_calibrate.c -- `ork selftest --calibrate` on the simulator (src/tooling/calibrate.c):
 * the probes measured on the sim's model clock give back the table the sim runs on -- the
 * defaults, and a table of other values passed through ork_sim_opts.twin -- and the file
 * written from them loads back equal. Tolerances: the unrounded NPU values within 1e-4 of the
 * table (the model clock counts whole ns; the probes' shortest differences are ~18 us, so
 * rounding moves a solved constant by < 1e-4), the written values (ORK_CALIB_DIGITS = 4)
 * exactly; every constant not measured exactly. The CPU probes run here on the host only to
 * check that they produce finite, positive constants (the host is not an A76). */
#include <ork/error.h>
#include <ork/npu.h>
#include <ork/sim.h>
#include <ork/twin.h>
#include <ork-tooling/calibrate.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ork_test.h"

#define RAW_REL_TOL 1e-4

static int calib_on_sim(const struct ork_twin_consts *sim_table, int cpu,
                        struct ork_twin_consts *out, struct ork_calib_report *r)
{
    /* the sim's multi-core probe takes the one-job form (the instant clock serialises
     * per-core submits), which the sim confirms only when asked (docs/sim.md) */
    struct ork_sim_opts so = { .struct_size = sizeof so, .twin = sim_table,
                               .confirm_one_job = true };
    struct ork_npu_opts no = { .struct_size = sizeof no, .device = "sim", .sim = &so };
    struct ork_npu *npu = NULL;
    int ret = ork_npu_open(&no, &npu);
    if (ret < 0)
        return ret;
    ork_twin_consts_default(out);
    struct ork_calib_opts co = { .struct_size = sizeof co, .cpu = cpu, .reps = 1 };
    ret = ork_calib_run(npu, &co, out, r);
    ork_npu_close(npu);
    return ret;
}

/* Every constant of *got equals *want (measured ones: raw within RAW_REL_TOL, value exact). */
static void check_table(const struct ork_calib_report *r, const struct ork_twin_consts *got,
                        const struct ork_twin_consts *want, uint32_t want_measured)
{
    uint32_t measured = 0;
    for (uint32_t i = 0; i < r->n; i++) {
        const struct ork_calib_entry *e = &r->e[i];
        double g, w;
        ork_twin_consts_get(got, e->name, &g);
        ork_twin_consts_get(want, e->name, &w);
        if (e->measured) {
            measured++;
            double rel = fabs(e->raw - w) / w;
            printf("  %-22s raw %.10g table %.10g rel %.1e\n", e->name, e->raw, w, rel);
            CHECK(rel < RAW_REL_TOL);
        }
        if (g != w)
            printf("  %s: written %.17g, table %.17g\n", e->name, g, w);
        CHECK(g == w);
    }
    CHECK_EQ_INT((int)measured, (int)want_measured);
}

static struct ork_calib_report rep;

static void test_defaults_round_trip(void)
{
    struct ork_twin_consts got, def;
    ork_twin_consts_default(&def);
    REQUIRE(calib_on_sim(NULL, -1, &got, &rep) == 0);
    check_table(&rep, &got, &def, 6);
    char path[] = "/tmp/ork_calib_XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);
    REQUIRE(ork_twin_calib_save(path, &got, rep.source) == 0);
    struct ork_twin_consts loaded;
    ork_twin_consts_default(&loaded);
    loaded.npu_launch_ns = 1;                       /* the file must set it back */
    CHECK(ork_twin_calib_load(path, &loaded) == 0);
    CHECK(memcmp(&loaded, &def, sizeof def) == 0);  /* the default table, bit for bit */
    unlink(path);
    CHECK(strstr(rep.source, "--device sim") != NULL);
}

/* Another table through ork_sim_opts.twin: the probes find it, not the defaults. */
static void test_other_table(void)
{
    struct ork_twin_consts t, got;
    ork_twin_consts_default(&t);
    t.npu_launch_ns = 40000;
    t.npu_chain_ns = 12000;
    t.npu_bw_core = 9.0e9;
    t.npu_bw_all = 24.0e9;
    t.npu_mac_int8 = 0.5e12;
    t.npu_mac_fp16 = 0.2e12;
    REQUIRE(calib_on_sim(&t, -1, &got, &rep) == 0);
    check_table(&rep, &got, &t, 6);
}

/* The CPU probes' mechanics on the host (values are this host's, not an A76's). */
static void test_cpu_probes_run(void)
{
    struct ork_twin_consts got;
    REQUIRE(calib_on_sim(NULL, 1, &got, &rep) == 0);
    static const char *const names[] = { "cpu_freq_hz", "cpu_exp_cycles", "cpu_bw_core",
                                         "cpu_bw_all" };
    for (size_t n = 0; n < sizeof names / sizeof names[0]; n++) {
        bool found = false;
        for (uint32_t i = 0; i < rep.n; i++)
            if (!strcmp(rep.e[i].name, names[n])) {
                found = rep.e[i].measured && isfinite(rep.e[i].value) && rep.e[i].value > 0;
                printf("  host %-16s %.4g\n", names[n], rep.e[i].value);
            }
        CHECK(found);
    }
    CHECK(ork_twin_consts_check(&got) == 0);
}

int main(void)
{
    RUN(test_defaults_round_trip);
    RUN(test_other_table);
    RUN(test_cpu_probes_run);
    return ork_test_done();
}
