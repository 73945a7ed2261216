/* test_sched.c -- every run mode of the scheduling layer on the simulator gives the same bits as
 * the single-core path: the default split (one submit per core from the per-core workers), the
 * one-job split, chains, streams, async jobs (single- and multi-core, and chains), and fewer rows
 * than planned. The single-core path itself is checked against an integer CPU reference first,
 * so a wrong common result cannot pass. Also: the core budget's auto pick and cap, and the
 * trace-event file of a split run. */
#include "ork_test.h"

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/npu.h>
#include <ork/sched.h>
#include <ork/trace.h>

#include "libork/ork_priv.h"   /* the simulator's counters */
#include "sim/sim.h"

#include <stdint.h>

static struct ork_npu *npu;
static uint64_t rng = 0x243f6a8885a308d3ull;

static uint32_t next_u32(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

static void fill(void *p, size_t n, enum ork_npu_dtype dt)
{
    for (size_t i = 0; i < n; i++) {
        if (dt == ORK_NPU_I8)
            ((int8_t *)p)[i] = (int8_t)(next_u32() & 0xff);
        else
            ((uint16_t *)p)[i] =
                ork_npu_f32_to_f16(((float)(next_u32() % 2001) - 1000.0f) / 1000.0f);
    }
}

/* One shape: weights, A, and the single-core result as the reference. */
struct shape {
    enum ork_npu_dtype dt;
    uint32_t m, k, n;
    void *a, *w, *ref;
    struct ork_npu_weights *wt;
};

static struct ork_npu_matmul *plan(struct shape *s, uint32_t cores, uint32_t flags)
{
    struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = s->m, .cores = cores,
                                      .flags = flags | ORK_NPU_MATMUL_NO_WARMUP };
    struct ork_npu_matmul *mm = NULL;
    int ret = ork_npu_matmul_create(s->wt, &md, &mm);
    if (ret < 0)
        fprintf(stderr, "  plan %ux%ux%u cores %u: %s\n", s->m, s->k, s->n, cores,
                ork_error_describe(ret));
    return mm;
}

static int run(struct ork_npu_matmul *mm, const struct shape *s, uint32_t m, void *c)
{
    return s->dt == ORK_NPU_I8 ? ork_npu_matmul_run_i8(mm, s->a, m, c)
                               : ork_npu_matmul_run_f16(mm, s->a, m, c);
}

static bool shape_init(struct shape *s, enum ork_npu_dtype dt, uint32_t m, uint32_t k, uint32_t n)
{
    const size_t esz = dt == ORK_NPU_I8 ? 1 : 2;
    *s = (struct shape){ .dt = dt, .m = m, .k = k, .n = n };
    s->a = ork_malloc((size_t)m * k * esz);
    s->w = ork_malloc((size_t)n * k * esz);
    s->ref = ork_calloc((size_t)m * n, 4);
    if (!s->a || !s->w || !s->ref)
        return false;
    fill(s->a, (size_t)m * k, dt);
    fill(s->w, (size_t)n * k, dt);
    struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = dt, .k = k, .n = n,
                                       .w = s->w, .max_m = m };
    if (ork_npu_weights_create(npu, &wd, &s->wt) < 0)
        return false;
    struct ork_npu_matmul *mm = plan(s, 1, 0);
    if (!mm)
        return false;
    int ret = run(mm, s, m, s->ref);
    ork_npu_matmul_destroy(mm);
    if (ret < 0)
        return false;
    if (dt == ORK_NPU_I8) {     /* the reference itself against integer arithmetic */
        for (uint32_t i = 0; i < m; i++)
            for (uint32_t j = 0; j < n; j++) {
                int64_t acc = 0;
                for (uint32_t x = 0; x < k; x++)
                    acc += (int64_t)((int8_t *)s->a)[(size_t)i * k + x] *
                           ((int8_t *)s->w)[(size_t)j * k + x];
                if (acc != ((int32_t *)s->ref)[(size_t)i * n + j])
                    return false;
            }
    }
    return true;
}

static void shape_free(struct shape *s)
{
    ork_npu_weights_destroy(s->wt);
    ork_free(s->a);
    ork_free(s->w);
    ork_free(s->ref);
}

static bool same(const struct shape *s, const void *c, uint32_t m)
{
    return memcmp(c, s->ref, (size_t)m * s->n * 4) == 0;
}

static struct shape S[3];

static void test_split_modes(void)
{
    for (int i = 0; i < 3; i++) {
        struct shape *s = &S[i];
        void *c = ork_calloc((size_t)s->m * s->n, 4);
        REQUIRE(c);
        for (uint32_t cores = 2; cores <= 3; cores++)
            for (int onejob = 0; onejob < 2; onejob++) {
                struct ork_npu_matmul *mm = plan(s, cores, onejob ? ORK_NPU_MATMUL_ONE_JOB : 0);
                REQUIRE(mm);
                struct ork_npu_matmul_info info;
                ork_npu_matmul_get_info(mm, &info);
                CHECK_EQ_INT(info.n_cores, cores);
                memset(c, 0x5a, (size_t)s->m * s->n * 4);
                CHECK_EQ_INT(run(mm, s, s->m, c), 0);
                CHECK(same(s, c, s->m));
                if (s->m > 1) {                  /* fewer rows: a prefix of each core's tasks */
                    memset(c, 0x5a, (size_t)s->m * s->n * 4);
                    CHECK_EQ_INT(run(mm, s, 1, c), 0);
                    CHECK(same(s, c, 1));
                    CHECK_EQ_INT(run(mm, s, s->m, c), 0);   /* and the cut links restored */
                    CHECK(same(s, c, s->m));
                }
                ork_npu_matmul_destroy(mm);
            }
        ork_free(c);
    }
}

static void test_split_uses_every_core(void)
{
    struct shape *s = &S[0];
    struct ork_npu_matmul *mm = plan(s, 3, 0);
    REQUIRE(mm);
    struct ork_sim *sim = ork__kmd_sim_get(npu->kmd, npu->kctx);
    struct ork_sim_counters k0, k1;
    ork__sim_counters(sim, &k0);
    void *c = ork_calloc((size_t)s->m * s->n, 4);
    REQUIRE(c);
    CHECK_EQ_INT(run(mm, s, s->m, c), 0);
    ork__sim_counters(sim, &k1);
    for (int i = 0; i < 3; i++)
        CHECK(k1.core_tasks[i] > k0.core_tasks[i]);
    CHECK(k1.submits - k0.submits >= 3);          /* one submit per core */
    ork_free(c);
    ork_npu_matmul_destroy(mm);
}

static void test_chain_stream_async(void)
{
    enum { NP = 3 };
    struct ork_npu_matmul *mm[NP];
    const void *a[NP];
    void *c[NP];
    for (int i = 0; i < NP; i++) {
        mm[i] = plan(&S[i], 1, 0);
        REQUIRE(mm[i]);
        a[i] = S[i].a;
        c[i] = ork_calloc((size_t)S[i].m * S[i].n, 4);
        REQUIRE(c[i]);
    }
    /* S[2] is fp16: chain and stream the two int8 plans plus, separately, all three */
    struct ork_npu_chain *ch = NULL;
    REQUIRE(ork_npu_chain_create(mm, 2, &ch) == 0);
    CHECK_EQ_INT(ork_npu_chain_run(ch, a, c), 0);
    CHECK(same(&S[0], c[0], S[0].m));
    CHECK(same(&S[1], c[1], S[1].m));

    for (int i = 0; i < NP; i++)
        memset(c[i], 0x33, (size_t)S[i].m * S[i].n * 4);
    struct ork_sim *sim = ork__kmd_sim_get(npu->kmd, npu->kctx);
    struct ork_sim_counters k0, k1;
    ork__sim_counters(sim, &k0);
    CHECK_EQ_INT(ork_npu_stream_run(mm, NP, a, c), 0);
    ork__sim_counters(sim, &k1);
    for (int i = 0; i < NP; i++) {
        CHECK(same(&S[i], c[i], S[i].m));
        CHECK(k1.core_tasks[i] > k0.core_tasks[i]);   /* plan i went to core i */
    }

    /* async: all three in flight at once, then the chain */
    struct ork_npu_job *job[NP];
    for (int i = 0; i < NP; i++) {
        memset(c[i], 0x44, (size_t)S[i].m * S[i].n * 4);
        CHECK_EQ_INT(ork_npu_matmul_submit_async(mm[i], a[i], S[i].m, c[i], &job[i]), 0);
    }
    struct ork_npu_job *again = NULL;
    CHECK_EQ_INT(ork_npu_matmul_submit_async(mm[0], a[0], S[0].m, c[0], &again), ORK_EBUSY);
    CHECK(again == NULL);
    for (int i = 0; i < NP; i++) {
        CHECK_EQ_INT(ork_npu_job_wait(job[i]), 0);
        CHECK(same(&S[i], c[i], S[i].m));
    }
    memset(c[0], 0, (size_t)S[0].m * S[0].n * 4);
    memset(c[1], 0, (size_t)S[1].m * S[1].n * 4);
    struct ork_npu_job *cj = NULL;
    CHECK_EQ_INT(ork_npu_chain_submit_async(ch, a, c, &cj), 0);
    CHECK_EQ_INT(ork_npu_job_wait(cj), 0);
    CHECK(same(&S[0], c[0], S[0].m));
    CHECK(same(&S[1], c[1], S[1].m));
    CHECK(ork_npu_job_wait(cj) == ORK_EINVAL);     /* already completed */
    ork_npu_chain_destroy(ch);

    /* a split plan stays split, and exact, under the async worker */
    struct ork_npu_matmul *m3 = plan(&S[0], 3, 0);
    REQUIRE(m3);
    for (int rep = 0; rep < 3; rep++) {
        memset(c[0], 0x77, (size_t)S[0].m * S[0].n * 4);
        struct ork_npu_job *j = NULL;
        CHECK_EQ_INT(ork_npu_matmul_submit_async(m3, S[0].a, S[0].m, c[0], &j), 0);
        CHECK_EQ_INT(ork_npu_job_wait(j), 0);
        CHECK(same(&S[0], c[0], S[0].m));
    }
    ork_npu_matmul_destroy(m3);
    for (int i = 0; i < NP; i++) {
        ork_npu_matmul_destroy(mm[i]);
        ork_free(c[i]);
    }
}

static void test_budget(void)
{
    /* the cost model: a 7B FFN projection at M=1 splits, a K/V-sized one does not */
    CHECK_EQ_INT(ork_npu_budget_pick(ORK_NPU_I8, 1, 3584, 18944, 3), 3);
    CHECK_EQ_INT(ork_npu_budget_pick(ORK_NPU_I8, 1, 3584, 512, 3), 1);
    CHECK_EQ_INT(ork_npu_budget_pick(ORK_NPU_I8, 1, 3584, 18944, 1), 1);
    /* auto plans follow it on the device; the budget caps explicit and auto requests */
    struct ork_npu_matmul_info info;
    struct ork_npu_matmul *mm = plan(&S[0], 0, 0);
    REQUIRE(mm);
    ork_npu_matmul_get_info(mm, &info);
    CHECK_EQ_INT(info.n_cores, ork_npu_budget_pick(S[0].dt, S[0].m, S[0].k, S[0].n, 3));
    ork_npu_matmul_destroy(mm);
    CHECK_EQ_INT(ork_npu_set_core_budget(npu, 2), 0);
    CHECK_EQ_INT(ork_npu_core_budget(npu), 2);
    mm = plan(&S[0], 3, 0);
    REQUIRE(mm);
    ork_npu_matmul_get_info(mm, &info);
    CHECK_EQ_INT(info.n_cores, 2);
    ork_npu_matmul_destroy(mm);
    CHECK(ork_npu_set_core_budget(npu, 4) == ORK_ERANGE);
    CHECK_EQ_INT(ork_npu_set_core_budget(npu, 0), 0);
    CHECK_EQ_INT(ork_npu_core_budget(npu), 3);
}

static void test_trace_file(void)
{
    char path[] = "/tmp/ork_test_sched_trace_XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);
    REQUIRE(ork_trace_start(path) == 0);
    struct ork_npu_matmul *mm = plan(&S[0], 3, 0);
    REQUIRE(mm);
    void *c = ork_calloc((size_t)S[0].m * S[0].n, 4);
    REQUIRE(c);
    ork_trace_begin("caller run");
    CHECK_EQ_INT(run(mm, &S[0], S[0].m, c), 0);
    ork_trace_end();
    CHECK_EQ_INT(ork_trace_stop(), 0);
    ork_free(c);
    ork_npu_matmul_destroy(mm);
    FILE *f = fopen(path, "r");
    REQUIRE(f);
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    fclose(f);
    unlink(path);
    CHECK(strstr(text, "\"traceEvents\"") != NULL);
    CHECK(strstr(text, "\"name\":\"caller run\"") != NULL);
    for (int core = 0; core < 3; core++) {     /* a submit on each NPU core's track */
        char want[64];
        snprintf(want, sizeof want, "\"pid\":1,\"tid\":%d,\"ts\"", core);
        CHECK(strstr(text, want) != NULL);
    }
    /* balanced JSON: as many closing as opening braces */
    int depth = 0;
    for (size_t i = 0; i < n; i++)
        depth += text[i] == '{' ? 1 : text[i] == '}' ? -1 : 0;
    CHECK_EQ_INT(depth, 0);
}

int main(void)
{
    struct ork_sim_opts so = { .struct_size = sizeof so, .strict = true };
    struct ork_npu_opts o = { .struct_size = sizeof o, .device = "sim", .sim = &so };
    if (ork_npu_open(&o, &npu) < 0) {
        fprintf(stderr, "open: %s\n", ork_error_message());
        return 1;
    }
    /* int8 with 3 rows over 24 column tiles; int8 with two K-slices at M=1 (K > 8192);
     * fp16 over several column tiles */
    if (!shape_init(&S[0], ORK_NPU_I8, 3, 200, 760) ||
        !shape_init(&S[1], ORK_NPU_I8, 1, 9000, 200) ||
        !shape_init(&S[2], ORK_NPU_F16, 2, 96, 400)) {
        fprintf(stderr, "setup: %s\n", ork_error_message());
        return 1;
    }
    RUN(test_split_modes);
    RUN(test_split_uses_every_core);
    RUN(test_chain_stream_async);
    RUN(test_budget);
    RUN(test_trace_file);
    for (int i = 0; i < 3; i++)
        shape_free(&S[i]);
    ork_npu_close(npu);
    return ork_test_done();
}
