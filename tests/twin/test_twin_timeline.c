/* test_twin_timeline.c -- the timeline's semantics on small hand-built steps: determinism,
 * per-core vs all-core CPU bandwidth, DRAM shared between NPU and CPU streams and re-shared
 * when one stops, dependency chains, core choice, the trace, bad ops, and no allocation once
 * the arena has grown. Expected times are computed from the default constants by hand. */
#include "ork_test.h"

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/twin.h>

#include <cjson/cJSON.h>

static struct ork_twin *tw;
static struct ork_twin_consts C;

#define REL(a, b) (fabs((a) - (b)) <= 1e-9 * fabs(b))

static struct ork_twin_work bytes_only(double b)
{
    return (struct ork_twin_work){ .bytes = b };
}

static int add(enum ork_twin_res res, uint32_t mask, uint32_t k, struct ork_twin_work w,
               const int *deps, uint32_t n)
{
    struct ork_twin_op_desc d = { .res = res, .core_mask = mask, .n_cores = k,
                                  .phase = res == ORK_TWIN_NPU ? ORK_TWIN_PHASE_NPU_MATMUL
                                                               : ORK_TWIN_PHASE_OTHER,
                                  .work = w };
    return ork_twin_op_add(tw, &d, deps, n);
}

/* A small mixed step: an NPU chain overlapping CPU phases, with fan-in. */
static void build_mixed(void)
{
    ork_twin_step_begin(tw);
    int a = ork_twin_cpu_op(tw, ORK_TWIN_PHASE_RMSNORM, 4, ork_twin_cpu_rmsnorm(&C, 1, 3584), -1);
    int q = ork_twin_cpu_op(tw, ORK_TWIN_PHASE_QUANT, 1, ork_twin_cpu_quantize(&C, 1, 3584), a);
    int n[3];
    for (int i = 0; i < 3; i++)
        n[i] = add(ORK_TWIN_NPU, 1u << i, 1,
                   ork_twin_npu_task(&C, true, false, 3584ull * 6315, 3584ull * 6315, 6315 * 4, 0),
                   &q, 1);
    int cpu = ork_twin_cpu_op(tw, ORK_TWIN_PHASE_CPU_MATMUL, 3,
                              ork_twin_cpu_matmul(&C, ORK_TWIN_W_Q8_0, 1, 3584, 512), q);
    int all[4] = { n[0], n[1], n[2], cpu };
    struct ork_twin_op_desc d = { .res = ORK_TWIN_CPU, .n_cores = 1, .phase = ORK_TWIN_PHASE_DEQUANT,
                                  .work = ork_twin_cpu_dequant(&C, 18944, 4), .label = "dequant \"x\"" };
    ork_twin_op_add(tw, &d, all, 4);
}

static void test_determinism(void)
{
    struct ork_twin_result r1, r2;
    build_mixed();
    REQUIRE(ork_twin_step_run(tw, &r1) == 0);
    build_mixed();
    REQUIRE(ork_twin_step_run(tw, &r2) == 0);
    CHECK(memcmp(&r1, &r2, sizeof r1) == 0);
    CHECK(r1.end_ns > 0 && r1.n_ops == 7);
    CHECK(r1.hidden_ns > 0 && r1.hidden_share > 0 && r1.hidden_share <= 1);
    printf("  mixed step: %.3f us, hidden %.1f %%, DRAM util %.1f %%\n", r1.end_ns / 1e3,
           100 * r1.hidden_share, 100 * r1.dram_util);
}

static void test_cpu_bandwidth_one_vs_four(void)
{
    const double B = 64e6;
    struct ork_twin_result r1, r4;
    ork_twin_step_begin(tw);
    add(ORK_TWIN_CPU, 0, 1, bytes_only(B), NULL, 0);
    REQUIRE(ork_twin_step_run(tw, &r1) == 0);
    ork_twin_step_begin(tw);
    add(ORK_TWIN_CPU, 0, 4, bytes_only(B), NULL, 0);
    REQUIRE(ork_twin_step_run(tw, &r4) == 0);
    double barrier = ork_twin_host_barrier(&C, 4).fixed_ns;
    CHECK(REL(r1.end_ns, B / C.cpu_bw_core * 1e9));
    CHECK(REL(r4.end_ns, barrier + B / C.cpu_bw_all * 1e9));
    CHECK(r1.cpu_busy_ns[0] == r1.end_ns && r1.cpu_busy_ns[1] == 0);
    CHECK(r4.cpu_busy_ns[3] == r4.end_ns);
}

/* Three NPU cores and a 4-core CPU stream: the DRAM total binds, shares are weighted by
 * cores (3 : 4); when the CPU stream ends the NPU streams speed up to their own caps. */
static void test_shared_dram_reevaluated(void)
{
    const double Bn = 10e6, Bc = 4e6;
    ork_twin_step_begin(tw);
    int n0 = add(ORK_TWIN_NPU, 1, 1, bytes_only(Bn), NULL, 0);
    add(ORK_TWIN_NPU, 2, 1, bytes_only(Bn), NULL, 0);
    add(ORK_TWIN_NPU, 4, 1, bytes_only(Bn), NULL, 0);
    int cpu = add(ORK_TWIN_CPU, 0, 4, bytes_only(Bc), NULL, 0);
    struct ork_twin_result r;
    REQUIRE(ork_twin_step_run(tw, &r) == 0);
    double share = C.dram_bw_total / 7 * 1e-9;                  /* B/ns per core */
    CHECK(3 * share <= C.npu_bw_all * 1e-9 && 4 * share <= C.cpu_bw_all * 1e-9);
    double barrier = ork_twin_host_barrier(&C, 4).fixed_ns;
    /* before the CPU stream starts streaming (its barrier), the NPU gets min(11, 28.5/3) */
    double npu_alone = fmin(C.npu_bw_core, C.npu_bw_all / 3) * 1e-9;
    double npu_done = barrier * npu_alone;
    double t_cpu_end = barrier + Bc / (4 * share);
    npu_done += (t_cpu_end - barrier) * share;
    double t_npu_end = t_cpu_end + (Bn - npu_done) / npu_alone;
    double s, e;
    REQUIRE(ork_twin_op_times(tw, cpu, &s, &e) == 0);
    CHECK(REL(e, t_cpu_end));
    REQUIRE(ork_twin_op_times(tw, n0, &s, &e) == 0);
    CHECK(REL(e, t_npu_end));
    CHECK(REL(r.end_ns, t_npu_end));
    CHECK(REL(r.dram_bytes, 3 * Bn + Bc));
    /* the survivor ran faster than its shared rate once the CPU stopped */
    CHECK(npu_alone > share);
}

/* An issue-bound CPU body leaves the rest of the DRAM to the NPU (demand cap). */
static void test_issue_bound_releases_bandwidth(void)
{
    ork_twin_step_begin(tw);
    int n0 = add(ORK_TWIN_NPU, 1, 1, bytes_only(11e6), NULL, 0);
    /* 1 MB over 1 ms of issue: the CPU needs only 1 GB/s */
    add(ORK_TWIN_CPU, 1, 1, (struct ork_twin_work){ .issue_ns = 1e6, .bytes = 1e6 }, NULL, 0);
    struct ork_twin_result r;
    REQUIRE(ork_twin_step_run(tw, &r) == 0);
    double e;
    REQUIRE(ork_twin_op_times(tw, n0, NULL, &e) == 0);
    CHECK(REL(e, 11e6 / C.npu_bw_core * 1e9));          /* 1 ms: untouched by the CPU */
    CHECK(REL(r.end_ns, 1e6));
    CHECK(REL(r.hidden_ns, 1e6) && REL(r.hidden_share, 1.0));
}

static void test_chain_serialises(void)
{
    ork_twin_step_begin(tw);
    struct ork_twin_work w = { .fixed_ns = 1000, .issue_ns = 4000 };
    int prev = -1;
    for (int i = 0; i < 5; i++) {
        struct ork_twin_op_desc d = { .res = ORK_TWIN_CPU, .n_cores = 1, .work = w };
        prev = ork_twin_op_add(tw, &d, prev >= 0 ? &prev : NULL, prev >= 0 ? 1 : 0);
    }
    struct ork_twin_result r;
    REQUIRE(ork_twin_step_run(tw, &r) == 0);
    CHECK(REL(r.end_ns, 5 * 5000.0));
    CHECK(r.cpu_busy_ns[0] == r.end_ns);   /* each takes the lowest free core: core 0 */
    /* the same ops without dependencies spread over the 4 cores: two rounds */
    ork_twin_step_begin(tw);
    for (int i = 0; i < 5; i++) {
        struct ork_twin_op_desc d = { .res = ORK_TWIN_CPU, .n_cores = 1, .work = w };
        ork_twin_op_add(tw, &d, NULL, 0);
    }
    REQUIRE(ork_twin_step_run(tw, &r) == 0);
    CHECK(REL(r.end_ns, 10000.0));
    CHECK(REL(r.cpu_busy_ns[0], 10000.0) && REL(r.cpu_busy_ns[3], 5000.0));
    /* an IDLE op holds its core without counting as busy */
    ork_twin_step_begin(tw);
    struct ork_twin_op_desc d = { .res = ORK_TWIN_CPU, .core_mask = 2, .n_cores = 1,
                                  .phase = ORK_TWIN_PHASE_WAKE, .flags = ORK_TWIN_OP_IDLE,
                                  .work = ork_twin_host_wake(&C) };
    int wake = ork_twin_op_add(tw, &d, NULL, 0);
    d.flags = 0, d.phase = ORK_TWIN_PHASE_OTHER, d.work = w;
    ork_twin_op_add(tw, &d, &wake, 1);
    REQUIRE(ork_twin_step_run(tw, &r) == 0);
    CHECK(REL(r.end_ns, C.thread_wake_ns + 5000) && REL(r.cpu_busy_ns[1], 5000.0));
    CHECK(REL(r.phase_ns[ORK_TWIN_PHASE_WAKE], C.thread_wake_ns));
}

static void test_bad_ops(void)
{
    ork_twin_step_begin(tw);
    struct ork_twin_op_desc d = { .res = ORK_TWIN_NPU, .n_cores = 2 };
    CHECK(ork_twin_op_add(tw, &d, NULL, 0) == ORK_EINVAL);
    CHECK(strstr(ork_error_message(), "cores") != NULL);
    d = (struct ork_twin_op_desc){ .res = ORK_TWIN_CPU, .n_cores = 5 };
    CHECK(ork_twin_op_add(tw, &d, NULL, 0) == ORK_EINVAL);
    d = (struct ork_twin_op_desc){ .res = ORK_TWIN_CPU, .core_mask = 0x30 };  /* no such core */
    CHECK(ork_twin_op_add(tw, &d, NULL, 0) == ORK_EINVAL);
    d = (struct ork_twin_op_desc){ .res = ORK_TWIN_CPU, .work = { .bytes = -1 } };
    CHECK(ork_twin_op_add(tw, &d, NULL, 0) == ORK_EINVAL);
    d.work.bytes = NAN;
    CHECK(ork_twin_op_add(tw, &d, NULL, 0) == ORK_EINVAL);
    d.work.bytes = 0;
    int self = 0;
    CHECK(ork_twin_op_add(tw, &d, &self, 1) == ORK_EINVAL);     /* not an earlier op */
    CHECK(ork_twin_op_times(tw, 0, NULL, NULL) == ORK_EINVAL);
    struct ork_twin_result r;
    REQUIRE(ork_twin_step_run(tw, &r) == 0);                    /* empty step */
    CHECK(r.end_ns == 0 && r.n_ops == 0);
}

static void test_trace(void)
{
    build_mixed();
    struct ork_twin_result r;
    REQUIRE(ork_twin_step_run(tw, &r) == 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    REQUIRE(f);
    CHECK(ork_twin_trace_write(tw, f) == 0);
    fclose(f);
    cJSON *root = cJSON_ParseWithLength(buf, len);
    CHECK(root != NULL);
    const cJSON *ev = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
    int x = 0, npu = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, ev) {
        const cJSON *ph = cJSON_GetObjectItemCaseSensitive(it, "ph");
        if (cJSON_IsString(ph) && strcmp(ph->valuestring, "X") == 0) {
            x++;
            npu += cJSON_GetObjectItemCaseSensitive(it, "pid")->valueint == 1;
        }
    }
    CHECK_EQ_INT(x, 4 + 1 + 3 + 3 + 1);     /* one event per core an op occupies */
    CHECK_EQ_INT(npu, 3);
    CHECK(strstr(buf, "dequant \\\"x\\\"") != NULL);
    cJSON_Delete(root);
    free(buf);
}

static void test_no_alloc_steady_state(void)
{
    struct ork_twin_llm m = { .dim = 2048, .n_layers = 28, .n_heads = 16, .n_kv_heads = 8,
                              .head_dim = 128, .ffn = 6144, .vocab = 151936, .qk_norm = true,
                              .wtype = ORK_TWIN_W_Q8_0, .out_wtype = ORK_TWIN_W_Q8_0,
                              .embd_wtype = ORK_TWIN_W_Q8_0, .kv_el_bytes = 2 };
    struct ork_twin_result r;
    ork_twin_step_begin(tw);
    REQUIRE(ork_twin_cpu_forward(tw, &m, 1, 0, 1, 4, 40) > 0);
    REQUIRE(ork_twin_step_run(tw, &r) == 0);
    uint64_t before = ork_alloc_count();
    for (uint32_t pos = 1; pos < 8; pos++) {
        ork_twin_step_begin(tw);
        REQUIRE(ork_twin_cpu_forward(tw, &m, 1, pos, 1, 4, 40) > 0);
        REQUIRE(ork_twin_step_run(tw, &r) == 0);
    }
    CHECK_EQ_INT(ork_alloc_count(), before);
    CHECK(r.phase_ns[ORK_TWIN_PHASE_SAMPLE] > 0);
    /* thread count changes the modelled time (cores), never the host's */
    struct ork_twin_result r1;
    ork_twin_step_begin(tw);
    REQUIRE(ork_twin_cpu_forward(tw, &m, 1, 7, 1, 1, 40) > 0);
    REQUIRE(ork_twin_step_run(tw, &r1) == 0);
    CHECK(r1.end_ns > r.end_ns);
}

int main(void)
{
    ork_twin_consts_default(&C);
    if (ork_twin_create(&C, &tw) < 0)
        return 1;
    RUN(test_determinism);
    RUN(test_cpu_bandwidth_one_vs_four);
    RUN(test_shared_dram_reevaluated);
    RUN(test_issue_bound_releases_bandwidth);
    RUN(test_chain_serialises);
    RUN(test_bad_ops);
    RUN(test_trace);
    RUN(test_no_alloc_steady_state);
    ork_twin_destroy(tw);
    return ork_test_done();
}
