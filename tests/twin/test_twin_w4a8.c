/* test_twin_w4a8.c -- the engine's twin recorder charges a W4A8 plan (ork_npu_matmul_info
 * .w4a8; docs/twin.md "W4A8") from synthetic infos: int4 weight bytes (w_stored_bytes), two
 * physical rows a token at the int8 MAC rate, int16 partials of both rows per K-slice, the
 * host's split of A and its int16 -> int32 rebuild as A76 phases of their own; the same info
 * without w4a8 is charged as int8 was (the copy-in, the K-slice sums, k_padded x n_padded
 * weight bytes). Everything is modelled time: exact sums of the cost functions, no host clock. */
#include "ork_test.h"

#include "engine/model/model_priv.h"

#include <ork-engine/engine.h>
#include <ork/npu.h>
#include <ork/twin.h>

#define KP 4096u
#define NP 4096u
#define KS 2u               /* K-slices (W4A8's int16 bound keeps int4 programs' K <= 2048) */
#define TASKS 2u

static struct ork_npu_matmul_info info_of(bool w4a8, uint32_t m, uint32_t m_tile, uint32_t cores)
{
    struct ork_npu_matmul_info in = {
        .dtype = ORK_NPU_I8, .m = m, .k = KP - 8, .n = NP - 32, .k_padded = KP, .n_padded = NP,
        .n_kslices = KS, .n_nslices = 1, .n_cores = cores, .m_tile = m_tile,
        .n_tasks = TASKS * cores * ((m + m_tile - 1) / m_tile), .n_submits = 1,
        .w_stored_bytes = w4a8 ? (uint64_t)KP * NP / 2 : (uint64_t)KP * NP, .w4a8 = w4a8 };
    return in;
}

/* One batch of a run of `rows` rows of the plan `in`, recorded on a fresh sim recorder. */
static bool record_traced(const struct ork_npu_matmul_info *in, uint32_t rows,
                          struct ork_model_twin_stats *st, const char *trace)
{
    struct ork_model_params p;
    ork_model_params_default(&p);
    p.device = "sim";
    p.npu_spin_us = -1;     /* workers sleep: no polls to account */
    struct ork__twin_rec *r = NULL;
    if (ork__twin_rec_create(&p, &r) < 0 || !r)
        return false;
    struct ork_model m;
    memset(&m, 0, sizeof m);
    m.twin = r;
    if (trace && ork_model_twin_trace_begin(&m, trace, 1) < 0) {
        ork__twin_rec_destroy(r);
        return false;
    }
    ork__twin_begin(r);
    int ret = ork__twin_npu_submit(r, in, rows, 0, false, 0, "npu test");
    if (ret == 0)
        ret = ork__twin_npu_wait(r, 0);
    int end = ork__twin_end(r, (int32_t)rows);
    bool ok = ret == 0 && end == 0 && ork_model_twin_stats(&m, st) == 0;
    ork__twin_rec_destroy(r);
    return ok;
}

static bool record(const struct ork_npu_matmul_info *in, uint32_t rows,
                   struct ork_model_twin_stats *st)
{
    return record_traced(in, rows, st, NULL);
}

/* The DRAM bytes the batch must move: the host side (copy-in or split, the two MEM_SYNCs, the
 * sums or the rebuild) and each core's NPU task. */
static double expect_bytes(const struct ork_twin_consts *c, const struct ork_npu_matmul_info *in,
                           uint32_t rows, uint64_t npu_bytes_core)
{
    double b = 0;
    uint64_t a_bo = (uint64_t)in->m * in->k_padded, c_bo = (uint64_t)in->m * in->n_padded * 4 * KS;
    if (in->w4a8) {
        b += ork_twin_cpu_i4_split(c, rows, in->k_padded).bytes;
        b += ork_twin_cpu_i4_reconstruct(c, (uint64_t)rows * in->n, in->n, KS).bytes;
    } else {
        b += ork_twin_cpu_gather(c, (uint64_t)rows * in->k).bytes;
        b += ork_twin_cpu_kslice_sum(c, (uint64_t)rows * in->n, KS).bytes;
    }
    b += ork_twin_host_cache_sync(c, a_bo, true).bytes + ork_twin_host_cache_sync(c, c_bo, false).bytes;
    return b + (double)npu_bytes_core * in->n_cores;
}

/* Decode: one token on one core. W4A8 reads half the weights, computes two rows, writes the
 * same partial bytes (2 rows x 2 bytes = one int32 row), and its host halves are the split
 * and the rebuild (the int8 copy-in and K-slice sums are not charged). */
static void test_decode_one_core(void)
{
    struct ork_twin_consts c;
    ork_twin_consts_default(&c);
    for (int w4 = 0; w4 <= 1; w4++) {
        struct ork_npu_matmul_info in = info_of(w4, 1, 1, 1);
        struct ork_model_twin_stats st;
        CHECK(record(&in, 1, &st));
        uint64_t rows_hw = w4 ? 2 : 1;
        uint64_t w = w4 ? (uint64_t)KP * NP / 2 : (uint64_t)KP * NP;
        uint64_t out = rows_hw * NP * (w4 ? 2 : 4) * KS;
        struct ork_twin_work t = ork_twin_npu_task(&c, true, false, rows_hw * KP * NP, w, out, 0);
        double bw = c.npu_bw_core;     /* one core streaming alone */
        double busy = t.fixed_ns + (TASKS - 1) * c.npu_chain_ns + t.bytes / bw * 1e9 + t.issue_ns;
        CHECK_NEAR(st.total.npu_busy_ns[0], busy, busy * 1e-9);
        CHECK_NEAR(st.total.dram_bytes, expect_bytes(&c, &in, 1, w + out), 1e-6);
        const double *ph = st.total.phase_ns;
        if (w4) {
            CHECK(ph[ORK_TWIN_PHASE_I4_SPLIT] > 0 && ph[ORK_TWIN_PHASE_I4_RECON] > 0);
            CHECK(ph[ORK_TWIN_PHASE_KSLICE] == 0 && ph[ORK_TWIN_PHASE_GATHER] == 0);
            /* alone on the DRAM: the slower of its issue time and its bytes at one A76's */
            struct ork_twin_work rw = ork_twin_cpu_i4_reconstruct(&c, in.n, in.n, KS);
            double rt = rw.bytes / c.cpu_bw_core * 1e9;
            CHECK_NEAR(ph[ORK_TWIN_PHASE_I4_RECON], rt > rw.issue_ns ? rt : rw.issue_ns, 1e-6);
        } else {
            CHECK(ph[ORK_TWIN_PHASE_I4_SPLIT] == 0 && ph[ORK_TWIN_PHASE_I4_RECON] == 0);
            CHECK(ph[ORK_TWIN_PHASE_KSLICE] > 0 && ph[ORK_TWIN_PHASE_GATHER] > 0);
        }
    }
}

/* Prefill: 48 tokens on a 64-token plan with 32-token M-tiles, split over 3 cores: two M-tiles
 * (the weights read twice), 64 tokens computed (the tiles' rows), 128 physical int4 rows. */
static void test_prefill_three_cores(void)
{
    struct ork_twin_consts c;
    ork_twin_consts_default(&c);
    for (int w4 = 0; w4 <= 1; w4++) {
        struct ork_npu_matmul_info in = info_of(w4, 64, 32, 3);
        struct ork_model_twin_stats st;
        CHECK(record(&in, 48, &st));
        uint64_t hw = 64u * (w4 ? 2 : 1);
        uint64_t w_core = in.w_stored_bytes / 3 * 2;
        uint64_t out_core = hw * NP / 3 * (w4 ? 2 : 4) * KS;
        CHECK_NEAR(st.total.dram_bytes, expect_bytes(&c, &in, 48, w_core + out_core), 1e-6);
        CHECK(st.total.npu_busy_ns[0] > 0 && st.total.npu_busy_ns[2] > 0);
    }
}

/* The MAC term doubles and the weight term halves: on a compute-heavy plan (K = N = 4096, 64
 * tokens, one core, MAC-bound) W4A8 is slower than int8 on the NPU, on a decode plan faster. */
static void test_rows_and_bytes_trade(void)
{
    struct ork_model_twin_stats a, b;
    struct ork_npu_matmul_info i8 = info_of(false, 64, 64, 1), i4 = info_of(true, 64, 64, 1);
    CHECK(record(&i8, 64, &a) && record(&i4, 64, &b));
    CHECK(b.total.npu_busy_ns[0] > a.total.npu_busy_ns[0]);
    i8 = info_of(false, 1, 1, 1);
    i4 = info_of(true, 1, 1, 1);
    CHECK(record(&i8, 1, &a) && record(&i4, 1, &b));
    CHECK(b.total.npu_busy_ns[0] < a.total.npu_busy_ns[0]);
}

/* The trace names the rebuild and its K-slices. */
static void test_trace_label(void)
{
    char path[] = "/tmp/ork-twin-w4a8-XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);
    struct ork_npu_matmul_info in = info_of(true, 1, 1, 1);
    struct ork_model_twin_stats st;
    CHECK(record_traced(&in, 1, &st, path));
    FILE *f = fopen(path, "r");
    REQUIRE(f);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    remove(path);
    CHECK(strstr(buf, "rebuild C (int16 -> int32, 2 K-slices)") != NULL);
    CHECK(strstr(buf, "split A into int4 rows") != NULL);
}

/* The host halves' cost functions grow with what they touch. */
static void test_cost_functions(void)
{
    struct ork_twin_consts c;
    ork_twin_consts_default(&c);
    struct ork_twin_work s1 = ork_twin_cpu_i4_split(&c, 1, 4096), s2 = ork_twin_cpu_i4_split(&c, 2, 4096);
    CHECK_NEAR(s1.bytes, 4096, 0);
    CHECK_NEAR(s2.issue_ns, 2 * s1.issue_ns, 1e-9);
    struct ork_twin_work r1 = ork_twin_cpu_i4_reconstruct(&c, 4096, 4096, 1);
    struct ork_twin_work r4 = ork_twin_cpu_i4_reconstruct(&c, 4096, 4096, 4);
    CHECK_NEAR(r1.bytes, 4.0 * 4096 + 4.0 * 4096, 0);
    CHECK_NEAR(r4.bytes, 16.0 * 4096 + 4.0 * 4096, 0);
    CHECK(r4.issue_ns > r1.issue_ns);
    CHECK_NEAR(ork_twin_npu_share_bps(&c, 3), 28.5e9 / 3, 1e-3);
    CHECK_NEAR(ork_twin_npu_share_bps(&c, 1), 11e9, 0);
    CHECK_NEAR(ork_twin_npu_share_bps(&c, 0), 28.5e9 / 3, 1e-3);
}

int main(void)
{
    RUN(test_decode_one_core);
    RUN(test_prefill_three_cores);
    RUN(test_rows_and_bytes_trade);
    RUN(test_trace_label);
    RUN(test_cost_functions);
    return ork_test_done();
}
