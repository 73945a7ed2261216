/* test_model_oom.c -- out of memory at every allocation of load -> session -> generate fails
 * cleanly: an error code comes back (never a crash), and everything made so far is freed (the
 * ASan build checks for leaks). Once no injected failure is hit, the run succeeds. */
#include "ork_test.h"

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork-engine/engine.h>

#define MAX_STEPS 2000   /* more allocations than one load + generate makes */

static int discard(void *user, const char *t, size_t n)
{
    (void)user;
    (void)t;
    (void)n;
    return 0;
}

/* One full run; returns 0 or the first error. */
static int run_once(const char *path)
{
    struct ork_model *m = NULL;
    struct ork_session *s = NULL;
    struct ork_sampler *smp = NULL;
    int ret = ork_model_load(path, NULL, &m);
    if (ret < 0)
        return ret;
    struct ork_session_params sp;
    ork_session_params_default(&sp);
    sp.ctx_size = 32;
    sp.n_threads = 2;
    if ((ret = ork_session_create(m, &sp, &s)) < 0)
        goto out;
    struct ork_sampler_params pp;
    ork_sampler_params_default(&pp);
    pp.seed = 3;
    if ((ret = ork_sampler_create(&pp, ork_model_config(m)->n_vocab, &smp)) < 0)
        goto out;
    struct ork_gen_params gp;
    ork_gen_params_default(&gp);
    gp.n_predict = 8;
    gp.on_text = discard;
    const char *stops[] = { "zz" };
    gp.stops = stops;
    gp.n_stops = 1;
    struct ork_gen_stats st;
    ret = ork_generate(s, smp, "Once upon a time", &gp, &st);
out:
    if (smp)
        ork_sampler_free(smp);
    ork_session_free(s);
    ork_model_free(m);
    return ret;
}

static void test_every_allocation_failure(void)
{
    const char *path = ork_test_fixture("models/stories260K.gguf");
    int failures = 0, step;
    for (step = 1; step <= MAX_STEPS; step++) {
        ork_alloc_fail_after((uint64_t)step);
        int ret = run_once(path);
        ork_alloc_fail_after(0);
        if (ret == 0)
            break;      /* the injected failure was past the last allocation */
        failures++;
        if (ret != ORK_ENOMEM && step < 5)
            fprintf(stderr, "  step %d: %s\n", step, ork_error_describe(ret));
        CHECK(ret < 0);
    }
    printf("  %d injected failures handled; success from allocation %d on\n", failures, step);
    CHECK(step <= MAX_STEPS);
    CHECK(failures > 5);
}

int main(void)
{
    RUN(test_every_allocation_failure);
    return ork_test_done();
}
