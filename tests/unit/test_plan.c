/* test_plan.c -- tiling rules against spec §5: the CBUF_CON0 schedule tables (§5.3, §5.4,
 * §15.3-§15.4), the M cap per K and its agreement with the consolidated CBUF predicate (§5.5),
 * and K/N/M tilings that cover the matrix exactly once within the per-program limits (§5.1, §5.7).
 * Expected numbers are the spec's tables, typed in here. */
#include "ork_test.h"

#include "libork/plan.h"

#include <ork/error.h>

static uint32_t ceil_div(uint32_t a, uint32_t b)
{
    return (a + b - 1) / b;
}

static void test_cbuf_vectors(void)
{
    /* spec §15.3 */
    CHECK_EQ_INT(ork__plan_cbuf_con0(ORK_NPU_I8, 100, 2048), 0x48);
    CHECK_EQ_INT(ork__plan_cbuf_con0(ORK_NPU_I8, 300, 1024), 0x2a);
    CHECK_EQ_INT(ork__plan_cbuf_con0(ORK_NPU_F16, 340, 512), 0x1b);
    /* spec §15.4: decode M = 1 uses 0xb1 and grains 0x20 = 16 * 2 */
    const uint32_t ks[] = { 2048, 4096, 8192 };
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_INT(ork__plan_cbuf_con0(ORK_NPU_I8, 1, ks[i]), 0xb1);
        CHECK_EQ_INT(ork__plan_cbuf_con0(ORK_NPU_F16, 1, ks[i]), 0xb1);
        CHECK_EQ_INT(ork__plan_grains(ORK_NPU_I8, 1, ks[i]) * 16, 0x20);
        CHECK_EQ_INT(ork__plan_grains(ORK_NPU_F16, 1, ks[i]) * 16, 0x20);
    }
    /* template (M = 4, K = 32, no schedule): 0xb1 and 0x1010 = 0x50 */
    CHECK_EQ_INT(ork__plan_cbuf_con0(ORK_NPU_I8, 4, 32), 0xb1);
    CHECK_EQ_INT(ork__plan_grains(ORK_NPU_I8, 4, 32) * 16, 0x50);
}

static void test_cbuf_int8_table(void)
{
    /* spec §5.3 worked table: v per 64-row group g (0 = beyond the cap) */
    static const struct { uint32_t k; uint32_t v[11]; } t[] = {
        { 512, { 0xb1, 0xa2, 0x93, 0x84, 0x75, 0x66, 0x57, 0x48, 0x39, 0x2a, 0x1b } },
        { 1024, { 0xa2, 0x84, 0x66, 0x48, 0x2a } },
        { 1536, { 0x93, 0x66, 0x39 } },
        { 2048, { 0x84, 0x48 } },
        { 2560, { 0x75, 0x2a } },
        { 3072, { 0x66 } },
        { 3584, { 0x57 } },
        { 4096, { 0x48 } },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        for (uint32_t g = 1; g <= 11 && t[i].v[g - 1]; g++) {
            /* every M of the group gets the group's value (ceil, not floor: M = 65 is g = 2) */
            uint32_t m_lo = g == 1 ? 2 : 64 * (g - 1) + 1, m_hi = 64 * g;
            CHECK_EQ_INT(ork__plan_cbuf_con0(ORK_NPU_I8, m_lo, t[i].k), t[i].v[g - 1]);
            CHECK_EQ_INT(ork__plan_cbuf_con0(ORK_NPU_I8, m_hi, t[i].k), t[i].v[g - 1]);
        }
    /* outside the full-K envelope: 0xb1 (the planner pads K to 512 instead) */
    CHECK_EQ_INT(ork__plan_cbuf_con0(ORK_NPU_I8, 100, 768), 0xb1);
    CHECK(!ork__plan_sched(ORK_NPU_I8, 768));
    CHECK(!ork__plan_sched(ORK_NPU_I8, 4608));
}

static void test_cbuf_fp16_table(void)
{
    /* spec §5.4: v sequences per 64-row group */
    static const uint32_t k128[] = { 0xb8, 0xb1, 0xaa, 0xa3 };
    static const uint32_t k256[] = { 0xb1, 0xa2, 0x93, 0x84, 0x75, 0x66, 0x57, 0x48, 0x39, 0x2a, 0x1b };
    static const uint32_t k512[] = { 0xa2, 0x84, 0x66, 0x48, 0x2a, 0x1b };
    static const uint32_t k1024[] = { 0x84, 0x48, 0x1b };
    for (uint32_t g = 1; g <= 4; g++)
        CHECK_EQ_INT(ork__plan_cbuf_con0(ORK_NPU_F16, 64 * g, 128), k128[g - 1]);
    for (uint32_t g = 1; g <= 11; g++)
        CHECK_EQ_INT(ork__plan_cbuf_con0(ORK_NPU_F16, 64 * g, 256), k256[g - 1]);
    for (uint32_t g = 1; g <= 6; g++)
        CHECK_EQ_INT(ork__plan_cbuf_con0(ORK_NPU_F16, 64 * g, 512), k512[g - 1]);
    CHECK_EQ_INT(ork__plan_cbuf_con0(ORK_NPU_F16, 352, 512), 0x1b);
    for (uint32_t g = 1; g <= 3; g++)
        CHECK_EQ_INT(ork__plan_cbuf_con0(ORK_NPU_F16, 64 * g, 1024), k1024[g - 1]);
    /* without the schedule: 0xb1 */
    const uint32_t nos[] = { 64, 384, 640, 768, 1536, 2048, 4096 };
    for (size_t i = 0; i < sizeof nos / sizeof nos[0]; i++)
        CHECK_EQ_INT(ork__plan_cbuf_con0(ORK_NPU_F16, 8, nos[i]), 0xb1);
}

static void test_m_caps(void)
{
    /* spec §5.3 M_max column, §15.3 boundaries */
    static const uint32_t i8[][2] = { { 512, 704 }, { 1024, 320 }, { 1536, 192 }, { 2048, 128 },
                                      { 2560, 128 }, { 3072, 64 }, { 3584, 64 }, { 4096, 64 } };
    for (size_t i = 0; i < sizeof i8 / sizeof i8[0]; i++)
        CHECK_EQ_INT(ork__plan_m_cap(ORK_NPU_I8, i8[i][0]), i8[i][1]);
    CHECK_EQ_INT(ork__plan_m_cap(ORK_NPU_I8, 768), 0);
    /* spec §5.4 table */
    static const uint32_t f16[][2] = { { 64, 256 }, { 128, 256 }, { 256, 704 }, { 512, 352 },
                                       { 1024, 176 }, { 384, 42 }, { 640, 25 }, { 768, 21 },
                                       { 1536, 10 }, { 2048, 8 } };
    for (size_t i = 0; i < sizeof f16 / sizeof f16[0]; i++)
        CHECK_EQ_INT(ork__plan_m_cap(ORK_NPU_F16, f16[i][0]), f16[i][1]);
}

/* spec §5.5 consolidated predicate: true when (v, K, M) computes correctly. */
static bool predicate_ok(enum ork_npu_dtype dt, uint32_t v, uint32_t k, uint32_t m)
{
    uint32_t d = v & 0xf, w = (v >> 4) & 0xf;
    if (w == 0 || d == 0 || d >= 12)
        return false;
    uint64_t cap = 32768ull * d;
    if (dt == ORK_NPU_I8)
        return (uint64_t)m * k <= cap && (m <= 64 || 64ull * ceil_div(m, 64) * k <= cap);
    if (k == 128 && m > 256)
        return false;
    return (uint64_t)m * 2 * k <= cap;
}

static void test_caps_match_predicate(void)
{
    const enum ork_npu_dtype dts[] = { ORK_NPU_I8, ORK_NPU_F16 };
    for (int d = 0; d < 2; d++)
        for (uint32_t k = 32; k <= 4096; k += 32) {
            uint32_t cap = ork__plan_m_cap(dts[d], k);
            if (!cap)
                continue;
            /* every M up to the cap is accepted with the value the plan programs */
            for (uint32_t m = 2; m <= cap; m++)
                if (!predicate_ok(dts[d], ork__plan_cbuf_con0(dts[d], m, k), k, m)) {
                    fprintf(stderr, "  dt %d K=%u M=%u fails the predicate\n", d, k, m);
                    CHECK(0);
                    break;
                }
            /* and cap + 1 is rejected (spec §15.3: each cap + 1 is wrong) */
            if (dts[d] == ORK_NPU_I8 || ork__plan_sched(dts[d], k))
                CHECK(!predicate_ok(dts[d], ork__plan_cbuf_con0(dts[d], cap + 1, k), k, cap + 1));
        }
}

static void check_cover(const struct ork_slice *s, uint32_t n, uint32_t len, uint32_t align,
                        uint32_t max_pad)
{
    uint32_t off = 0;
    for (uint32_t i = 0; i < n; i++) {
        CHECK_EQ_INT(s[i].off, off);
        CHECK(s[i].pad % align == 0);
        CHECK(s[i].pad <= max_pad);
        CHECK(s[i].len >= 1 && s[i].len <= s[i].pad);
        if (i + 1 < n)
            CHECK_EQ_INT(s[i].len, s[i].pad);    /* only the last slice is padded */
        off += s[i].len;
    }
    CHECK_EQ_INT(off, len);                      /* exactly once, no gaps */
}

static void test_kslices(void)
{
    const uint32_t ks[] = { 1, 31, 32, 33, 96, 512, 1000, 1024, 2048, 3584, 4096, 4097, 8192,
                            8193, 11008, 18944, 27392 };
    const uint32_t ms[] = { 1, 2, 63, 64, 65, 128, 129, 320, 704, 705, 2047 };
    for (size_t a = 0; a < sizeof ks / sizeof ks[0]; a++)
        for (size_t b = 0; b < sizeof ms / sizeof ms[0]; b++)
            for (int dt = 0; dt < 2; dt++) {
                struct ork_kplan p;
                REQUIRE(ork__plan_kslices((enum ork_npu_dtype)dt, ks[a], ms[b], &p) == 0);
                uint32_t max_pad = ms[b] == 1 ? ORK_PLAN_DECODE_K_MAX : (dt == ORK_NPU_I8 ? 4096 : 8192);
                check_cover(p.s, p.n_slices, ks[a], dt == ORK_NPU_I8 && ms[b] > 1 ? 512 : 32,
                            max_pad);
                uint32_t sum = 0;
                for (uint32_t j = 0; j < p.n_slices; j++) {
                    sum += p.s[j].pad;
                    uint32_t tile = ork__plan_m_tile((enum ork_npu_dtype)dt, ms[b], p.s[j].pad);
                    CHECK(tile >= 1);
                    if (ms[b] > 1) {
                        CHECK(tile <= ork__plan_m_cap((enum ork_npu_dtype)dt, p.s[j].pad));
                        if (dt == ORK_NPU_I8)   /* full-K envelope (spec §5.3) */
                            CHECK(ork__plan_sched(ORK_NPU_I8, p.s[j].pad));
                    }
                }
                CHECK_EQ_INT(sum, p.k_padded);
            }
    struct ork_kplan p;
    CHECK(ork__plan_kslices(ORK_NPU_I8, 0, 1, &p) == ORK_EINVAL);
    /* decode: 18944 -> three slices of at most 8192 (spec §5.1 M = 1 limit) */
    REQUIRE(ork__plan_kslices(ORK_NPU_I8, 18944, 1, &p) == 0);
    CHECK_EQ_INT(p.n_slices, 3);
    /* int8 K = 4096 with 64 rows: one full-K program (spec §5.7 rule 2) */
    REQUIRE(ork__plan_kslices(ORK_NPU_I8, 4096, 64, &p) == 0);
    CHECK_EQ_INT(p.n_slices, 1);
    CHECK_EQ_INT(p.s[0].pad, 4096);
    /* small K is zero-padded to 512 for M > 1 (spec §5.3 notes) */
    REQUIRE(ork__plan_kslices(ORK_NPU_I8, 96, 8, &p) == 0);
    CHECK_EQ_INT(p.n_slices, 1);
    CHECK_EQ_INT(p.s[0].pad, 512);
    CHECK_EQ_INT(p.s[0].len, 96);
}

static void test_nslices(void)
{
    const uint32_t ns[] = { 1, 15, 16, 17, 31, 32, 33, 512, 3584, 8192, 8193, 8224, 18944, 151936 };
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++)
        for (int dt = 0; dt < 2; dt++) {
            struct ork_nplan p;
            REQUIRE(ork__plan_nslices((enum ork_npu_dtype)dt, ns[a], &p) == 0);
            uint32_t tile = dt == ORK_NPU_I8 ? 32 : 16;
            CHECK_EQ_INT(p.tile, tile);
            CHECK_EQ_INT(p.n_padded, ceil_div(ns[a], tile) * tile);
            CHECK_EQ_INT(p.n_slices, ceil_div(p.n_padded, 8192));
            check_cover(p.s, p.n_slices, ns[a], tile, 8192);
            ork__plan_nslices_fini(&p);
        }
    struct ork_nplan p;
    REQUIRE(ork__plan_nslices(ORK_NPU_I8, 8224, &p) == 0);   /* spec §15.5: 8224 needs 2 programs */
    CHECK_EQ_INT(p.n_slices, 2);
    ork__plan_nslices_fini(&p);
}

static void test_mtiles(void)
{
    /* M-tiles of min(M, cap) rows cover [0, M) once, none above the cap */
    const uint32_t ms[] = { 2, 63, 64, 65, 128, 129, 320, 321, 704, 705, 1000 };
    const uint32_t ks[] = { 512, 1024, 2048, 4096 };
    for (size_t a = 0; a < sizeof ms / sizeof ms[0]; a++)
        for (size_t b = 0; b < sizeof ks / sizeof ks[0]; b++) {
            uint32_t tile = ork__plan_m_tile(ORK_NPU_I8, ms[a], ks[b]);
            uint32_t cap = ork__plan_m_cap(ORK_NPU_I8, ks[b]);
            CHECK(tile <= cap && tile <= ms[a] && tile >= 1);
            uint32_t covered = 0;
            for (uint32_t m0 = 0; m0 < ms[a]; m0 += tile)
                covered += ms[a] - m0 < tile ? ms[a] - m0 : tile;
            CHECK_EQ_INT(covered, ms[a]);
        }
    CHECK_EQ_INT(ork__plan_m_tile(ORK_NPU_I8, 1, 96), 1);
    CHECK_EQ_INT(ork__plan_m_tile(ORK_NPU_I8, 65, 4096), 64);
    CHECK_EQ_INT(ork__plan_m_tile(ORK_NPU_I8, 705, 512), 704);
}

int main(void)
{
    RUN(test_cbuf_vectors);
    RUN(test_cbuf_int8_table);
    RUN(test_cbuf_fp16_table);
    RUN(test_m_caps);
    RUN(test_caps_match_predicate);
    RUN(test_kslices);
    RUN(test_nslices);
    RUN(test_mtiles);
    return ork_test_done();
}
