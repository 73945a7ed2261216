/* test_forms.c -- discovery errors and the submit forms libork allows, on the simulator:
 *  - a faked absent node, a permission-denied node (named with its group and a udev rule) and a
 *    driver older than 0.9.8 (domains other than 0 refused) each give their own error;
 *  - the one-job multi-core form (core_mask 0x7, §9 [CAP]) runs only when confirmed: by the
 *    sim when asked (ork_sim_opts.confirm_one_job) or by a capability file (the twin
 *    calibration file's "capabilities" object); otherwise a ONE_JOB plan runs per core. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/npu.h>
#include <ork/sim.h>
#include <ork/twin.h>

#include "ork_test.h"
#include "libork/ork_priv.h"
#include "sim/sim.h"

static int open_dev(const char *dev, const struct ork_sim_opts *so, uint32_t domain,
                    const char *caps, struct ork_npu **out)
{
    struct ork_npu_opts o = { .struct_size = sizeof o, .device = dev, .sim = so,
                              .domain = domain, .capabilities = caps };
    return ork_npu_open(&o, out);
}

static void test_discovery(void)
{
    const char *devs[2] = { "sim", "sim-rocket" };
    for (int d = 0; d < 2; d++) {
        struct ork_npu *npu = NULL;
        struct ork_sim_opts so = { .struct_size = sizeof so, .fake_node_errno = ENOENT };
        CHECK_EQ_INT(open_dev(devs[d], &so, 0, NULL, &npu), ORK_ENOENT);
        CHECK(strstr(ork_error_message(), "device found") != NULL);
        so.fake_node_errno = EACCES;
        CHECK_EQ_INT(open_dev(devs[d], &so, 0, NULL, &npu), ORK_EACCES);
        const char *m = ork_error_message();
        CHECK(strstr(m, "permission denied") != NULL);
        CHECK(strstr(m, d ? "/dev/accel/accel0" : "/dev/dri/card1") != NULL);
        CHECK(strstr(m, "group") != NULL && strstr(m, "udev") != NULL);
        CHECK(strstr(m, "not found") == NULL && strstr(m, "no rknpu device") == NULL);
        CHECK(npu == NULL);
    }
    /* driver 0.9.7: one domain only (§10.3) */
    struct ork_sim_opts so = { .struct_size = sizeof so, .drv_version = 907 };
    struct ork_npu *npu = NULL;
    CHECK_EQ_INT(open_dev("sim", &so, 1, NULL, &npu), 0);
    if (npu) {
        int8_t w[64 * 32] = { 0 };
        struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = ORK_NPU_I8,
                                           .k = 64, .n = 32, .w = w };
        struct ork_npu_weights *wt = NULL;
        CHECK_EQ_INT(ork_npu_weights_create(npu, &wd, &wt), ORK_EUNSUPPORTED);
        CHECK(strstr(ork_error_message(), "0.9.8") != NULL);
        ork_npu_close(npu);
    }
    CHECK_EQ_INT(open_dev("sim", &so, 0, NULL, &npu), 0);   /* domain 0 still works */
    ork_npu_close(npu);
}

/* Run a 3-core ONE_JOB plan; returns the core mask of the sim's last job (0x7 = one job). */
static uint32_t one_job_mask(struct ork_npu *npu)
{
    const uint32_t K = 256, N = 384;
    int8_t *w = ork_calloc((size_t)N * K, 1), a[256] = { 1 };
    int32_t *c = ork_calloc(N, 4);
    for (size_t i = 0; i < (size_t)N * K; i++)
        w[i] = (int8_t)(i % 7 - 3);
    struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = ORK_NPU_I8, .k = K,
                                       .n = N, .w = w };
    struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = 1, .cores = 3,
                                      .flags = ORK_NPU_MATMUL_ONE_JOB };
    struct ork_npu_weights *wt = NULL;
    struct ork_npu_matmul *mm = NULL;
    uint32_t mask = 0;
    CHECK_EQ_INT(ork_npu_weights_create(npu, &wd, &wt), 0);
    CHECK_EQ_INT(ork_npu_matmul_create(wt, &md, &mm), 0);
    if (mm && ork_npu_matmul_run_i8(mm, a, 1, c) == 0) {
        struct ork_sim_counters sc;
        ork__sim_counters(ork__kmd_sim_get(npu->kmd, npu->kctx), &sc);
        mask = sc.last_core_mask;
        for (uint32_t j = 0; j < N; j++) {
            int32_t acc = 0;
            for (uint32_t k = 0; k < K; k++)
                acc += a[k] * w[(size_t)j * K + k];
            CHECK_EQ_INT(c[j], acc);
            if (c[j] != acc)
                break;
        }
    }
    ork_npu_matmul_destroy(mm);
    ork_npu_weights_destroy(wt);
    ork_free(w);
    ork_free(c);
    return mask;
}

static void test_one_job_gate(void)
{
    struct ork_npu *npu = NULL;
    CHECK_EQ_INT(open_dev("sim", NULL, 0, NULL, &npu), 0);
    /* the simulator confirms only the decompressor and the int4 programs, whose formats it
     * implements */
    CHECK_EQ_INT(ork_npu_confirmed_forms(npu), ORK_NPU_FORM_DCOMP | ORK_NPU_FORM_W4A8);
    CHECK(one_job_mask(npu) != 0x7);              /* fell back to one submit per core */
    ork_npu_close(npu);

    struct ork_sim_opts so = { .struct_size = sizeof so, .confirm_one_job = true };
    CHECK_EQ_INT(open_dev("sim", &so, 0, NULL, &npu), 0);
    CHECK_EQ_INT(ork_npu_confirmed_forms(npu),
                 ORK_NPU_FORM_ONE_JOB | ORK_NPU_FORM_DCOMP | ORK_NPU_FORM_W4A8);
    CHECK_EQ_INT(one_job_mask(npu), 0x7);         /* the one-job form, confirmed */
    ork_npu_close(npu);

    /* deny_w4a8: a device that has not shown the int4 programs (also on the rocket model) */
    struct ork_sim_opts so4 = { .struct_size = sizeof so4, .deny_w4a8 = true };
    CHECK_EQ_INT(open_dev("sim", &so4, 0, NULL, &npu), 0);
    CHECK_EQ_INT(ork_npu_confirmed_forms(npu), ORK_NPU_FORM_DCOMP);
    ork_npu_close(npu);
    CHECK_EQ_INT(open_dev("sim-rocket", NULL, 0, NULL, &npu), 0);
    CHECK(ork_npu_confirmed_forms(npu) & ORK_NPU_FORM_W4A8);
    ork_npu_close(npu);
    CHECK_EQ_INT(open_dev("sim-rocket", &so4, 0, NULL, &npu), 0);
    CHECK(!(ork_npu_confirmed_forms(npu) & ORK_NPU_FORM_W4A8));
    ork_npu_close(npu);

    /* a capability file, as `ork selftest --confirm-forms` writes it */
    char path[] = "/tmp/ork-caps-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    unlink(path);
    struct ork_twin_caps caps = { .struct_size = sizeof caps, .confirmed = ORK_TWIN_FORM_ONE_JOB };
    snprintf(caps.source, sizeof caps.source, "test_forms");
    CHECK_EQ_INT(ork_twin_caps_save(path, &caps, ORK_TWIN_FORM_ONE_JOB), 0);
    CHECK_EQ_INT(open_dev("sim", NULL, 0, path, &npu), 0);
    CHECK_EQ_INT(one_job_mask(npu), 0x7);
    ork_npu_close(npu);
    caps.confirmed = 0;                            /* recorded as failed: refused again */
    CHECK_EQ_INT(ork_twin_caps_save(path, &caps, ORK_TWIN_FORM_ONE_JOB), 0);
    CHECK_EQ_INT(open_dev("sim", NULL, 0, path, &npu), 0);
    CHECK(one_job_mask(npu) != 0x7);
    ork_npu_close(npu);
    /* the file stays a valid calibration file */
    struct ork_twin_consts tc;
    ork_twin_consts_default(&tc);
    CHECK_EQ_INT(ork_twin_calib_load(path, &tc), 0);
    unlink(path);
    CHECK_EQ_INT(open_dev("sim", NULL, 0, "/nonexistent/caps.json", &npu), ORK_EIO);
    CHECK(strstr(ork_error_message(), "/nonexistent/caps.json") != NULL);
}

int main(void)
{
    RUN(test_discovery);
    RUN(test_one_job_gate);
    return ork_test_done();
}
