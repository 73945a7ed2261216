/* test_w4a8_selftest.c -- the selftest ladder's w4a8 step on the simulator: on a device that
 * has not shown the int4 programs (deny_w4a8), --confirm-forms tests W4A8 weights against the
 * CPU's int32 product and records "w4a8" in the capability file, which a later open honours
 * (ORK_NPU_FORM_W4A8). The "not-confirmed" verdict without --confirm-forms is the shared
 * form_device path, checked for dcomp by test_ladder.c. One ladder run (a few seconds). */
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

static void test_confirm_records_w4a8(void)
{
    struct ork_sim_opts so = { .struct_size = sizeof so, .deny_w4a8 = true };
    char path[] = "/tmp/ork-test-w4a8-caps-XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);
    unlink(path);
    struct ork_selftest_opts o = { .struct_size = sizeof o, .device = "sim", .sim = &so,
                                   .confirm_forms = true, .capabilities_out = path };
    struct ork_selftest_report r;
    CHECK_EQ_INT(ork_selftest_ladder(&o, &r), 0);
    CHECK_EQ_INT(r.n_failed, 0);
    const struct ork_selftest_step *s = step(&r, "w4a8");
    CHECK(s && s->verdict == ORK_SELFTEST_PASS);
    if (s && s->verdict != ORK_SELFTEST_PASS)
        fprintf(stderr, "  w4a8 step: %s\n", s->detail);
    CHECK(s && strstr(s->detail, "bit-exact") != NULL);
    s = step(&r, "record");
    CHECK(s && strstr(s->detail, "w4a8 confirmed") != NULL);
    struct ork_twin_caps caps;
    CHECK_EQ_INT(ork_twin_caps_load(path, &caps), 0);
    CHECK(caps.confirmed & ORK_TWIN_FORM_W4A8);
    /* the record is what a later open goes by */
    struct ork_npu_opts no = { .struct_size = sizeof no, .device = "sim", .sim = &so };
    struct ork_npu *d = NULL;
    REQUIRE(ork_npu_open(&no, &d) == 0);
    CHECK(!(ork_npu_confirmed_forms(d) & ORK_NPU_FORM_W4A8));
    ork_npu_close(d);
    no.capabilities = path;
    REQUIRE(ork_npu_open(&no, &d) == 0);
    CHECK(ork_npu_confirmed_forms(d) & ORK_NPU_FORM_W4A8);
    ork_npu_close(d);
    unlink(path);
}

int main(void)
{
    RUN(test_confirm_records_w4a8);
    return ork_test_done();
}
