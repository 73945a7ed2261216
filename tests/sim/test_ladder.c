/* test_ladder.c -- the selftest ladder on the simulator: every step passes on sim and
 * sim-rocket, the one-job form is "not-confirmed" without a capability, an injected HANG is
 * caught by libork's bounded wait and recovered by the ladder's reset, re-warm and retry, and a
 * faked permission-denied node stops the ladder at discovery with its own message. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ork/npu.h>
#include <ork/sim.h>
#include <ork/twin.h>
#include <ork-tooling/selftest.h>

#include "ork_test.h"

static const struct ork_selftest_step *step(const struct ork_selftest_report *r, const char *n)
{
    for (uint32_t i = 0; i < r->n_steps; i++)
        if (!strcmp(r->steps[i].name, n))
            return &r->steps[i];
    return NULL;
}

static void test_all_pass(void)
{
    const char *devs[2] = { "sim", "sim-rocket" };
    for (int d = 0; d < 2; d++) {
        struct ork_selftest_opts o = { .struct_size = sizeof o, .device = devs[d] };
        struct ork_selftest_report r;
        CHECK_EQ_INT(ork_selftest_ladder(&o, &r), 0);
        CHECK_EQ_INT(r.n_failed, 0);
        CHECK(r.n_steps >= 8);
        const struct ork_selftest_step *s = step(&r, "one-job");
        CHECK(s && s->verdict == ORK_SELFTEST_NOT_CONFIRMED);
        s = step(&r, "dcomp");                     /* the sim implements the decompressor */
        CHECK(s && s->verdict == ORK_SELFTEST_PASS);
        /* discovery says how waits are bounded: NONBLOCK + doorbell on the rknpu model */
        s = step(&r, "discovery");
        CHECK(s && strstr(s->detail, d == 0 ? "bounded at 1000 ms" : "PREP_BO") != NULL);
    }
}

/* A device that has not shown the decompressor: "not-confirmed"; --confirm-forms tests it and
 * records "dcomp", which a later open honours. */
static void test_dcomp_gate(void)
{
    struct ork_sim_opts so = { .struct_size = sizeof so, .deny_dcomp = true };
    struct ork_selftest_opts o = { .struct_size = sizeof o, .device = "sim", .sim = &so };
    struct ork_selftest_report r;
    CHECK_EQ_INT(ork_selftest_ladder(&o, &r), 0);
    const struct ork_selftest_step *s = step(&r, "dcomp");
    CHECK(s && s->verdict == ORK_SELFTEST_NOT_CONFIRMED && strstr(s->detail, "--confirm-forms"));
    char path[] = "/tmp/ork-test-ladder-caps-XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);
    unlink(path);
    o.confirm_forms = true;
    o.capabilities_out = path;
    CHECK_EQ_INT(ork_selftest_ladder(&o, &r), 0);
    s = step(&r, "dcomp");
    CHECK(s && s->verdict == ORK_SELFTEST_PASS);
    struct ork_twin_caps caps;
    CHECK_EQ_INT(ork_twin_caps_load(path, &caps), 0);
    CHECK(caps.confirmed & ORK_TWIN_FORM_DCOMP);
    struct ork_npu_opts no = { .struct_size = sizeof no, .device = "sim", .sim = &so,
                               .capabilities = path };
    struct ork_npu *npu = NULL;
    CHECK_EQ_INT(ork_npu_open(&no, &npu), 0);
    CHECK(ork_npu_confirmed_forms(npu) & ORK_NPU_FORM_DCOMP);
    ork_npu_close(npu);
    unlink(path);
}

static void test_wedge_retry(void)
{
    struct ork_sim_opts so = { .struct_size = sizeof so };
    /* submits 1-2: the per-core plan's warm-ups; 3: its run */
    so.faults[0] = (struct ork_sim_fault){ .kind = ORK_SIM_FAULT_HANG, .submit = 3, .task = 0 };
    const char *devs[2] = { "sim", "sim-rocket" };
    for (int d = 0; d < 2; d++) {
        struct ork_selftest_opts o = { .struct_size = sizeof o, .device = devs[d], .sim = &so };
        struct ork_selftest_report r;
        CHECK_EQ_INT(ork_selftest_ladder(&o, &r), 0);
        const struct ork_selftest_step *s = step(&r, "per-core");
        CHECK(s && s->verdict == ORK_SELFTEST_PASS_RETRY);
        CHECK(s && strstr(s->detail, "retry") != NULL);
        CHECK_EQ_INT(r.n_failed, 0);
    }
}

/* A wedged NPU (a blocking submit would sleep twice the kernel's 6000 ms timeout, spec §8.6) is
 * caught by the bound the ladder was given, then reset, re-warmed and retried. */
static void test_wedge_bounded(void)
{
    struct ork_sim_opts so = { .struct_size = sizeof so };
    so.faults[0] = (struct ork_sim_fault){ .kind = ORK_SIM_FAULT_WEDGE, .submit = 3, .task = 0 };
    struct ork_selftest_opts o = { .struct_size = sizeof o, .device = "sim", .sim = &so,
                                   .wait_timeout_ms = 50 };
    struct ork_selftest_report r;
    CHECK_EQ_INT(ork_selftest_ladder(&o, &r), 0);
    const struct ork_selftest_step *s = step(&r, "per-core");
    CHECK(s && s->verdict == ORK_SELFTEST_PASS_RETRY);
    CHECK(s && strstr(s->detail, "host bound of 50 ms") != NULL);
    CHECK_EQ_INT(r.n_failed, 0);
}

static void test_discovery_denied(void)
{
    struct ork_sim_opts so = { .struct_size = sizeof so, .fake_node_errno = EACCES };
    struct ork_selftest_opts o = { .struct_size = sizeof o, .device = "sim", .sim = &so };
    struct ork_selftest_report r;
    CHECK(ork_selftest_ladder(&o, &r) < 0);
    CHECK_EQ_INT(r.n_steps, 1);
    CHECK(r.steps[0].verdict == ORK_SELFTEST_FAIL);
    CHECK(strstr(r.steps[0].detail, "permission denied") != NULL);
}

int main(void)
{
    RUN(test_all_pass);
    RUN(test_dcomp_gate);
    RUN(test_wedge_retry);
    RUN(test_wedge_bounded);
    RUN(test_discovery_denied);
    return ork_test_done();
}
