/* test_twin_spin.c -- spinning threads on the timeline (docs/twin.md "Spinning workers"): a
 * hand-off to a thread still polling costs its line transfers and runs on the polling core; a
 * hand-off after the poll expired pays the sleeping thread's wake-up; a poll still going at the
 * step's end is cut there (the step ends with its last real op); a poll holds a busy core that
 * is not CPU work; k-core ops run on the cores the polls leave; bad spin ops are refused.
 * Expected times come from the default constants by hand. */
#include "ork_test.h"

#include <ork/error.h>
#include <ork/twin.h>

static struct ork_twin *tw;
static struct ork_twin_consts C;

#define REL(a, b) (fabs((a) - (b)) <= 1e-9 * fabs(b) + 1e-9)

static int cpu(uint32_t k, double fixed_ns, const int *deps, uint32_t n)
{
    struct ork_twin_op_desc d = { .res = ORK_TWIN_CPU, .n_cores = k,
                                  .phase = ORK_TWIN_PHASE_OTHER,
                                  .work = { .fixed_ns = fixed_ns } };
    return ork_twin_op_add(tw, &d, deps, n);
}

static int spin(double window_ns, const int *deps, uint32_t n)
{
    struct ork_twin_op_desc d = { .res = ORK_TWIN_CPU, .n_cores = 1, .phase = ORK_TWIN_PHASE_SPIN,
                                  .flags = ORK_TWIN_OP_SPIN, .work = { .fixed_ns = window_ns } };
    return ork_twin_op_add(tw, &d, deps, n);
}

/* The worker's next hand-off: hot = a spinning hand-off on the polling core, cold = a wake. */
static int handoff(int sp, uint32_t flags, int dep)
{
    struct ork_twin_op_desc d = { .res = ORK_TWIN_CPU, .n_cores = 1,
                                  .phase = ORK_TWIN_PHASE_HANDOFF, .flags = flags,
                                  .work = ork_twin_host_handoff(&C),
                                  .spin = { .op = (uint32_t)sp + 1, .cold = ork_twin_host_wake(&C),
                                            .cold_flags = ORK_TWIN_OP_IDLE,
                                            .cold_phase = ORK_TWIN_PHASE_WAKE } };
    return ork_twin_op_add(tw, &d, &dep, 1);
}

static double busy_sum(const struct ork_twin_result *r)
{
    double s = 0;
    for (int c = 0; c < ORK_TWIN_MAX_CPU; c++)
        s += r->cpu_busy_ns[c];
    return s;
}

/* The caller works 10 us while the worker polls (window 100 us): the hand-off is hot. */
static void test_hot_handoff(void)
{
    ork_twin_step_begin(tw);
    int sp = spin(100e3, NULL, 0);
    int a = cpu(1, 10e3, NULL, 0);
    int h = handoff(sp, ORK_TWIN_OP_RELEASE, a);
    struct ork_twin_result r;
    CHECK(ork_twin_step_run(tw, &r) == 0);
    double hand = 2 * C.cpu_line_transfer_ns, s0, s1, h0, h1;
    CHECK(REL(r.end_ns, 10e3 + hand));
    CHECK(ork_twin_op_times(tw, sp, &s0, &s1) == 0 && REL(s1 - s0, 10e3));
    CHECK(ork_twin_op_times(tw, h, &h0, &h1) == 0 && REL(h0, 10e3));
    CHECK(REL(r.phase_ns[ORK_TWIN_PHASE_SPIN], 10e3));
    CHECK(REL(r.phase_ns[ORK_TWIN_PHASE_HANDOFF], hand));
    CHECK(r.phase_ns[ORK_TWIN_PHASE_WAKE] == 0);
    /* the poll's core (0: the spin was added first) stays busy into the hand-off */
    CHECK(REL(r.cpu_busy_ns[0], 10e3 + hand) && REL(r.cpu_busy_ns[1], 10e3));
    /* polling is not CPU work: the active time is the caller's and the hand-off's */
    CHECK(REL(r.cpu_active_ns, 10e3 + hand));
}

/* The caller works 200 us: the 100 us poll expired, the thread sleeps and must be woken. */
static void test_cold_wake(void)
{
    ork_twin_step_begin(tw);
    int sp = spin(100e3, NULL, 0);
    int a = cpu(1, 200e3, NULL, 0);
    handoff(sp, ORK_TWIN_OP_RELEASE, a);
    struct ork_twin_result r;
    CHECK(ork_twin_step_run(tw, &r) == 0);
    CHECK(REL(r.end_ns, 200e3 + C.thread_wake_ns));
    CHECK(REL(r.phase_ns[ORK_TWIN_PHASE_SPIN], 100e3));
    CHECK(REL(r.phase_ns[ORK_TWIN_PHASE_WAKE], C.thread_wake_ns));
    CHECK(r.phase_ns[ORK_TWIN_PHASE_HANDOFF] == 0);
    CHECK(REL(busy_sum(&r), 300e3));         /* the wake-up is IDLE */
}

/* No hand-off: the poll is cut when the step's last real op ends. */
static void test_cut_at_step_end(void)
{
    ork_twin_step_begin(tw);
    int sp = spin(100e3, NULL, 0);
    cpu(1, 10e3, NULL, 0);
    struct ork_twin_result r;
    CHECK(ork_twin_step_run(tw, &r) == 0);
    double s0, s1;
    CHECK(REL(r.end_ns, 10e3));
    CHECK(ork_twin_op_times(tw, sp, &s0, &s1) == 0 && s0 == 0 && REL(s1, 10e3));
    CHECK(REL(busy_sum(&r), 20e3) && REL(r.cpu_active_ns, 10e3));
}

/* An op that only checks the poll (no release) runs on its own core, the poll goes on. */
static void test_check_without_release(void)
{
    ork_twin_step_begin(tw);
    int sp = spin(100e3, NULL, 0);
    int a = cpu(1, 10e3, NULL, 0);
    int h = handoff(sp, 0, a);
    cpu(1, 50e3, &h, 1);
    struct ork_twin_result r;
    CHECK(ork_twin_step_run(tw, &r) == 0);
    double s0, s1;
    CHECK(REL(r.end_ns, 10e3 + 2 * C.cpu_line_transfer_ns + 50e3));
    CHECK(ork_twin_op_times(tw, sp, &s0, &s1) == 0 && REL(s1, r.end_ns));
}

/* A 4-core op while two polls hold two cores runs on the other two, with their barrier. */
static void test_kcore_op_around_polls(void)
{
    struct ork_twin_result r;
    ork_twin_step_begin(tw);
    struct ork_twin_op_desc d = { .res = ORK_TWIN_CPU, .n_cores = 4, .phase = ORK_TWIN_PHASE_OTHER,
                                  .work = { .issue_ns = 40e3 } };
    CHECK(ork_twin_op_add(tw, &d, NULL, 0) == 0);
    CHECK(ork_twin_step_run(tw, &r) == 0);
    double t4 = r.end_ns;
    CHECK(REL(t4, 10e3 + ork_twin_host_barrier(&C, 4).fixed_ns));
    ork_twin_step_begin(tw);
    spin(1e6, NULL, 0);
    spin(1e6, NULL, 0);
    CHECK(ork_twin_op_add(tw, &d, NULL, 0) == 2);
    CHECK(ork_twin_step_run(tw, &r) == 0);
    CHECK(REL(r.end_ns, 20e3 + ork_twin_host_barrier(&C, 2).fixed_ns));
    CHECK(REL(r.phase_core_ns[ORK_TWIN_PHASE_OTHER], 2 * r.end_ns));
}

static void test_bad_spin_ops(void)
{
    ork_twin_step_begin(tw);
    int a = cpu(1, 1e3, NULL, 0);
    struct ork_twin_op_desc d = { .res = ORK_TWIN_NPU, .n_cores = 1, .flags = ORK_TWIN_OP_SPIN,
                                  .phase = ORK_TWIN_PHASE_SPIN };
    CHECK(ork_twin_op_add(tw, &d, NULL, 0) == ORK_EINVAL);           /* a spin on the NPU */
    d.res = ORK_TWIN_CPU;
    d.n_cores = 2;
    CHECK(ork_twin_op_add(tw, &d, NULL, 0) == ORK_EINVAL);           /* on two cores */
    struct ork_twin_op_desc h = { .res = ORK_TWIN_CPU, .n_cores = 1, .spin = { .op = a + 1 } };
    CHECK(ork_twin_op_add(tw, &h, NULL, 0) == ORK_EINVAL);           /* names a non-spin */
    CHECK(strstr(ork_error_message(), "spin") != NULL);
    h.spin.op = 7;
    CHECK(ork_twin_op_add(tw, &h, NULL, 0) == ORK_EINVAL);           /* not an earlier op */
    struct ork_twin_op_desc rel = { .res = ORK_TWIN_CPU, .n_cores = 1,
                                    .flags = ORK_TWIN_OP_RELEASE };
    CHECK(ork_twin_op_add(tw, &rel, NULL, 0) == ORK_EINVAL);         /* releases nothing */
}

static void test_determinism(void)
{
    struct ork_twin_result r1, r2;
    for (int i = 0; i < 2; i++) {
        ork_twin_step_begin(tw);
        int sp = spin(30e3, NULL, 0);
        int a = cpu(1, 10e3, NULL, 0);
        int h = handoff(sp, ORK_TWIN_OP_RELEASE, a);
        int sp2 = spin(5e3, &h, 1);
        int b = cpu(4, 20e3, &a, 1);
        handoff(sp2, ORK_TWIN_OP_RELEASE, b);
        CHECK(ork_twin_step_run(tw, i ? &r2 : &r1) == 0);
    }
    CHECK(memcmp(&r1, &r2, sizeof r1) == 0);
}

int main(void)
{
    ork_twin_consts_default(&C);
    if (ork_twin_create(&C, &tw) < 0)
        return 1;
    RUN(test_hot_handoff);
    RUN(test_cold_wake);
    RUN(test_cut_at_step_end);
    RUN(test_check_without_release);
    RUN(test_kcore_op_around_polls);
    RUN(test_bad_spin_ops);
    RUN(test_determinism);
    ork_twin_destroy(tw);
    return ork_test_done();
}
