/* test_exec_program.c -- libork's program emitter (src/libork/program.c, plan.c) and the
 * simulator's hazard checker agree: every task shape the planner can produce (int8 and fp16, M
 * from 1 to the schedule cap, K and N across the tiling rules of spec §5.7) is emitted and then
 * decoded and checked by the executor with no error and no warning; one past the planner's cap
 * the checker reports M_ABOVE_CAP (or the fp16 K=128 rule). Two independent readings of the
 * spec meet here: a disagreement fails this test. */
#include <stdio.h>

#include <ork/error.h>

#include "libork/plan.h"
#include "libork/program.h"
#include "ork_test.h"
#include "sim/sim_exec.h"

static struct ork_sim_regfile rf;
static uint64_t prog[ORK_PROG_ENTRIES];

#define A_IOVA 0x10000000u
#define B_IOVA 0x20000000u
#define C_IOVA 0x60000000u
#define PROG_IOVA 0x00100000u

/* Emit, decode and check one task; returns the check's code, warnings in *warn. */
static int emit_check(enum ork_npu_dtype dt, uint32_t m, uint32_t k, uint32_t n, uint64_t *warn)
{
    struct ork_mm_task t = {
        .dtype = dt, .m = m, .k = k, .n = n, .stride = 0, .a = A_IOVA, .b = B_IOVA, .c = C_IOVA,
        .cbuf = ork__plan_cbuf_con0(dt, m, k), .grains = ork__plan_grains(dt, m, k),
    };
    int ret = ork__prog_emit_matmul(&t, prog, NULL, NULL);
    if (ret < 0) {
        fprintf(stderr, "  emit %s %ux%ux%u: %s\n", dt ? "fp16" : "int8", m, k, n,
                ork_error_message());
        return ret;
    }
    struct ork_sim_task_in tin = { .index = 0, .regcmd_addr = PROG_IOVA,
                                   .regcfg_amount = ORK_PROG_COUNTED, .enable_mask = 0x0d };
    struct ork_sim_decoded d;
    struct ork_sim_matmul mm;
    if ((ret = ork__sim_decode(prog, ORK_PROG_ENTRIES, &tin, &rf, &d)) < 0 ||
        (ret = ork__sim_check(&rf, &d, &tin, &mm)) < 0)
        return ret;
    *warn = mm.warnings;
    return 0;
}

static int check_shape(enum ork_npu_dtype dt, uint32_t m, uint32_t k, uint32_t n)
{
    uint64_t warn = 0;
    int ret = emit_check(dt, m, k, n, &warn);
    if (ret < 0 || warn) {
        fprintf(stderr, "  %s %ux%ux%u: ret %d warnings 0x%llx: %s\n", dt ? "fp16" : "int8", m, k,
                n, ret, (unsigned long long)warn, ret < 0 ? ork_error_message() : "");
        return 1;
    }
    return 0;
}

static void test_emitter_shapes_pass_checker(void)
{
    static const uint32_t ks_i8[] = { 32, 64, 96, 512, 1024, 1536, 2048, 2560, 3072, 3584, 4096 };
    static const uint32_t ks_f16[] = { 32, 64, 128, 256, 384, 512, 640, 768, 1024, 1536, 2048 };
    static const uint32_t ns[] = { 32, 64, 96, 4096, 8192 };
    int bad = 0;
    for (int f = 0; f < 2; f++) {
        enum ork_npu_dtype dt = f ? ORK_NPU_F16 : ORK_NPU_I8;
        const uint32_t *ks = f ? ks_f16 : ks_i8;
        size_t nk = f ? sizeof ks_f16 / sizeof ks_f16[0] : sizeof ks_i8 / sizeof ks_i8[0];
        for (size_t i = 0; i < nk; i++) {
            uint32_t cap = ork__plan_m_cap(dt, ks[i]);
            uint32_t ms[] = { 1, 2, 63, 64, 65, 127, 128, 129, 200, 320, 704, cap };
            for (size_t j = 0; j < sizeof ms / sizeof ms[0]; j++) {
                if (ms[j] > cap || ms[j] == 0)
                    continue;
                for (size_t q = 0; q < sizeof ns / sizeof ns[0]; q++)
                    bad += check_shape(dt, ms[j], ks[i], ns[q]);
            }
        }
    }
    /* decode: M = 1 up to K = 8192 in one program (§5.1) */
    bad += check_shape(ORK_NPU_I8, 1, 8192, 32);
    bad += check_shape(ORK_NPU_F16, 1, 8192, 16);
    CHECK_EQ_INT(bad, 0);
}

/* One row past the planner's cap, with the planner's CBUF value, the checker refuses. */
static void test_one_past_cap_refused(void)
{
    static const struct { enum ork_npu_dtype dt; uint32_t k; } v[] = {
        { ORK_NPU_I8, 512 },   { ORK_NPU_I8, 1024 }, { ORK_NPU_I8, 2048 }, { ORK_NPU_I8, 4096 },
        { ORK_NPU_F16, 256 },  { ORK_NPU_F16, 512 }, { ORK_NPU_F16, 1024 }, { ORK_NPU_F16, 2048 },
        { ORK_NPU_F16, 128 },
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        uint32_t cap = ork__plan_m_cap(v[i].dt, v[i].k);
        uint64_t warn = 0;
        int ret = emit_check(v[i].dt, cap + 1, v[i].k, 32, &warn);
        if (ret != ORK_EHAZARD) {
            fprintf(stderr, "  %s K=%u M=%u (cap %u): ret %d, expected a hazard\n",
                    v[i].dt ? "fp16" : "int8", v[i].k, cap + 1, cap, ret);
            ork_test_failures_++;
        }
    }
}

int main(void)
{
    RUN(test_emitter_shapes_pass_checker);
    RUN(test_one_past_cap_refused);
    return ork_test_done();
}
