/* test_kernels_hwcap.c -- the AArch64 kernel path chosen from the HWCAP bits (arm/hwcap.c):
 * the capabilities and the path of given AT_HWCAP / AT_HWCAP2 words (a Cortex-A76's, A55's,
 * A53's, a Neoverse N2's; on every host), the path this process runs against the words the
 * kernel gave it (AArch64), the `neon-i8mm` table's make-up, and the smmla tiles against the
 * sdot tiles bit for bit when the CPU has i8mm.
 *
 * Usage: test_kernels_hwcap [--expect-path NAME]: NAME is the path the CPU must select
 * (scripts/ci-aarch64 runs it under QEMU as a Cortex-A76 with neon-dotprod and as `-cpu max`
 * with neon-i8mm). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <ork/alloc.h>
#include <ork/debug.h>
#include <ork/error.h>
#include <ork-kernels/kernels.h>
#include <ork-kernels/pool.h>

#include "kernels/kern_priv.h"
#include "ork_test.h"

#define KT_RNG_SEED 0x5bd1e995a3c4f1b7ull
#include "kernels_test_util.h"

#if defined(__aarch64__)
#include <sys/auxv.h>
#endif

/* Linux's AT_HWCAP / AT_HWCAP2 bit numbers (arch/arm64/include/uapi/asm/hwcap.h), restated
 * here so that a wrong bit in arm/hwcap.c shows. */
#define B(n) (1ul << (n))
enum { H_FP = 0, H_ASIMD = 1, H_EVTSTRM = 2, H_AES = 3, H_PMULL = 4, H_SHA1 = 5, H_SHA2 = 6,
       H_CRC32 = 7, H_ATOMICS = 8, H_FPHP = 9, H_ASIMDHP = 10, H_CPUID = 11, H_ASIMDRDM = 12,
       H_JSCVT = 13, H_FCMA = 14, H_LRCPC = 15, H_DCPOP = 16, H_SHA3 = 17, H_ASIMDDP = 20,
       H_SHA512 = 21, H_SVE = 22, H_ASIMDFHM = 23, H_USCAT = 25, H_ILRCPC = 26, H_FLAGM = 27,
       H_SSBS = 28, H_SB = 29, H_PACA = 30, H_PACG = 31 };
enum { H2_DCPODP = 0, H2_SVE2 = 1, H2_SVEI8MM = 9, H2_I8MM = 13, H2_BF16 = 14 };

/* The baseline every ARMv8.2 core here reports, then each core's (the Features lines of
 * /proc/cpuinfo: Cortex-A53 / A55 / A76 from their TRMs' ID registers, Neoverse N2 ARMv9.0). */
#define HW_V80 (B(H_FP) | B(H_ASIMD) | B(H_EVTSTRM) | B(H_AES) | B(H_PMULL) | B(H_SHA1) | \
                B(H_SHA2) | B(H_CRC32) | B(H_CPUID))
#define HW_V82 (HW_V80 | B(H_ATOMICS) | B(H_FPHP) | B(H_ASIMDHP) | B(H_ASIMDRDM) | \
                B(H_LRCPC) | B(H_DCPOP) | B(H_ASIMDDP))

static const struct {
    const char *core;
    unsigned long hwcap, hwcap2;
    unsigned caps;
    const char *names, *path;
} cores[] = {
    { "Cortex-A53", HW_V80, 0, 0, "", "neon" },
    { "Cortex-A55", HW_V82, 0, ORK__ACAP_ASIMDDP | ORK__ACAP_FPHP | ORK__ACAP_ASIMDHP,
      "asimddp fphp asimdhp", "neon-dotprod" },
    { "Cortex-A76 (RK3588)", HW_V82 | B(H_SSBS), 0,
      ORK__ACAP_ASIMDDP | ORK__ACAP_FPHP | ORK__ACAP_ASIMDHP, "asimddp fphp asimdhp",
      "neon-dotprod" },
    { "Neoverse N2", HW_V82 | B(H_JSCVT) | B(H_FCMA) | B(H_SHA3) | B(H_SHA512) | B(H_SVE) |
      B(H_ASIMDFHM) | B(H_USCAT) | B(H_ILRCPC) | B(H_FLAGM) | B(H_SSBS) | B(H_SB) |
      B(H_PACA) | B(H_PACG), B(H2_DCPODP) | B(H2_SVE2) | B(H2_SVEI8MM) | B(H2_I8MM) |
      B(H2_BF16), ORK__ACAP_ASIMDDP | ORK__ACAP_FPHP | ORK__ACAP_ASIMDHP |
      ORK__ACAP_ASIMDFHM | ORK__ACAP_I8MM, "asimddp fphp asimdhp asimdfhm i8mm", "neon-i8mm" },
    /* i8mm without dotprod (no such core): the i8mm path needs the dotprod one under it */
    { "i8mm only", HW_V80, B(H2_I8MM), ORK__ACAP_I8MM, "i8mm", "neon" },
    /* the SVE form of i8mm alone is not the Advanced SIMD one */
    { "SVE i8mm only", HW_V82, B(H2_SVEI8MM), ORK__ACAP_ASIMDDP | ORK__ACAP_FPHP |
      ORK__ACAP_ASIMDHP, "asimddp fphp asimdhp", "neon-dotprod" },
};

static const char *expect_path;

/* Each core's words: its capabilities, their names, the best path; never an x86 path. */
static void test_cores(void)
{
    for (size_t i = 0; i < sizeof cores / sizeof cores[0]; i++) {
        const unsigned caps = ork__arm_caps(cores[i].hwcap, cores[i].hwcap2);
        char names[64];
        const size_t n = ork__arm_caps_str(caps, names, sizeof names);
        printf("%-20s caps \"%s\" -> %s\n", cores[i].core, names,
               ork__kisa_name(ork__arm_best(caps)));
        CHECK_EQ_INT((int)caps, (int)cores[i].caps);
        CHECK_STR(names, cores[i].names);
        CHECK_EQ_INT((int)n, (int)strlen(cores[i].names));
        CHECK_STR(ork__kisa_name(ork__arm_best(caps)), cores[i].path);
        CHECK(!ork__arm_path_ok(KISA_AVX2, caps) && !ork__arm_path_ok(KISA_AVX512VNNI, caps));
        CHECK(ork__arm_path_ok(KISA_NEON, caps) && ork__arm_path_ok(KISA_SCALAR, caps));
    }
    /* the A76: dotprod selected, the i8mm path not even allowed */
    const unsigned a76 = ork__arm_caps(HW_V82 | B(H_SSBS), 0);
    CHECK(ork__arm_path_ok(KISA_NEON_DOT, a76));
    CHECK(!ork__arm_path_ok(KISA_NEON_I8MM, a76));
    /* a short buffer: truncated, terminated, the full length returned */
    char small[8];
    CHECK_EQ_INT((int)ork__arm_caps_str(cores[3].caps, small, sizeof small),
                 (int)strlen(cores[3].names));
    CHECK_STR(small, "asimddp");
}

/* The path this process runs: the one its own HWCAP words select (AArch64), and --expect-path. */
static void test_this_cpu(void)
{
    REQUIRE(ork_kernels_set_path(NULL) == 0);
    printf("this CPU: caps \"%s\", kernels path %s\n", ork_kernels_cpu_caps(),
           ork_kernels_path());
#if defined(__aarch64__)
    const unsigned caps = ork__arm_caps(getauxval(AT_HWCAP), getauxval(AT_HWCAP2));
    char names[64];
    ork__arm_caps_str(caps, names, sizeof names);
    CHECK_STR(ork_kernels_cpu_caps(), names);
    CHECK_STR(ork_kernels_path(),
              ork_debug(ORK_DBG_SCALAR) ? "scalar" : ork__kisa_name(ork__arm_best(caps)));
    for (int k = 0; k < KISA_COUNT; k++)
        CHECK_EQ_INT(ork__kisa_available((enum kisa)k), ork__arm_path_ok((enum kisa)k, caps));
    if (!(caps & ORK__ACAP_I8MM))
        CHECK_EQ_INT(ork_kernels_set_path("neon-i8mm"), ORK_EUNSUPPORTED);
#endif
    if (expect_path)
        CHECK_STR(ork_kernels_path(), expect_path);
}

/* neon-i8mm is neon-dotprod with the tiles replaced: the same decode kernels and table
 * otherwise; on x86-64 the path is never available. */
static void test_i8mm_table(void)
{
#if defined(__aarch64__)
    const uint32_t types[] = { ORK_TYPE_Q8_0, ORK_TYPE_Q4_0 };
    for (size_t t = 0; t < 2; t++) {
        const struct ork__type_kern *d = ork__tkern(KISA_NEON_DOT, types[t]);
        const struct ork__type_kern *i = ork__tkern(KISA_NEON_I8MM, types[t]);
        REQUIRE(d->x16_fn && i->x16_fn);
        CHECK_EQ_INT(i->x16_streams, d->x16_streams);
        CHECK_EQ_INT(i->x16_tile_mx, d->x16_tile_mx);
        for (int n = 1; n <= d->x16_streams; n++)
            CHECK(i->x16_fn(false, n) == d->x16_fn(false, n));
        CHECK(i->x16_fn(true, 1) == d->x16_fn(true, 1));
        CHECK(i->x16_fn(true, 6) != d->x16_fn(true, 6));    /* the smmla tile */
    }
    CHECK(ork__kern(KISA_NEON_I8MM)->features & ORK_KFEAT_I8MM);
    CHECK(ork__tkern(KISA_NEON_I8MM, ORK_TYPE_Q4_K)->x16_fn ==
          ork__tkern(KISA_NEON_DOT, ORK_TYPE_Q4_K)->x16_fn);
#else
    CHECK(!ork__kisa_available(KISA_NEON_I8MM));
    CHECK_EQ_INT(ork_kernels_set_path("neon-i8mm"), ORK_EUNSUPPORTED);
#endif
}

/* Interleaved Q8_0 / Q4_0 matrices times 1..13 X rows (every tile width and ragged ends):
 * neon-i8mm gives neon-dotprod's bits, with a pool and without. */
static void test_i8mm_bits(void)
{
    if (!ork__kisa_available(KISA_NEON_I8MM)) {
        printf("neon-i8mm not available on this CPU: smmla tiles not run\n");
        return;
    }
    struct ork_pool *pool = NULL;
    REQUIRE(ork_pool_create(3, &pool) == 0);
    const uint32_t types[] = { ORK_TYPE_Q8_0, ORK_TYPE_Q4_0 };
    const int64_t ks[] = { 32, 32 * 7, 32 * 40, 2048 + 32 };   /* past the 32-block X chunks */
    int bad = 0, runs = 0;
    for (size_t t = 0; t < 2; t++)
        for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
            const int64_t n = 48, k = ks[ki], mmax = 13;
            const size_t rb = ork_type_row_bytes(types[t], (uint64_t)k);
            uint8_t *wd = ork_malloc(rb * (size_t)n);
            float *x = ork_malloc(sizeof(float) * (size_t)(mmax * k));
            float *y0 = ork_malloc(sizeof(float) * (size_t)(mmax * n));
            float *y1 = ork_malloc(sizeof(float) * (size_t)(mmax * n));
            REQUIRE(wd && x && y0 && y1);
            for (int64_t r = 0; r < n; r++)
                kt_random_row(types[t], wd + (size_t)r * rb, k);
            for (int64_t i = 0; i < mmax * k; i++)
                x[i] = frand() * (float)(1 + i % 5);
            struct ork_mat w = { .type = types[t], .n_rows = n, .n_cols = k, .row_bytes = rb,
                                 .data = wd };
            REQUIRE(ork_mat_x16_pack(&w) == 0 && w.layout == ORK_LAYOUT_X16);
            for (int64_t m = 1; m <= mmax; m++)
                for (int pi = 0; pi < 2; pi++) {
                    struct ork_pool *p = pi ? pool : NULL;
                    REQUIRE(ork_kernels_set_path("neon-dotprod") == 0);
                    REQUIRE(ork_matmul_act(p, &w, x, m, y0, ORK_ACT_QUANT) == 0);
                    REQUIRE(ork_kernels_set_path("neon-i8mm") == 0);
                    memset(y1, 0xff, sizeof(float) * (size_t)(m * n));
                    REQUIRE(ork_matmul_act(p, &w, x, m, y1, ORK_ACT_QUANT) == 0);
                    bad += memcmp(y0, y1, sizeof(float) * (size_t)(m * n)) != 0;
                    runs++;
                }
            ork_free(wd);
            ork_free(x);
            ork_free(y0);
            ork_free(y1);
        }
    REQUIRE(ork_kernels_set_path(NULL) == 0);
    ork_pool_destroy(pool);
    printf("smmla tiles against sdot tiles: %d of %d matmuls differ\n", bad, runs);
    CHECK_EQ_INT(bad, 0);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--expect-path") && i + 1 < argc) {
            expect_path = argv[++i];
        } else {
            fprintf(stderr, "usage: %s [--expect-path NAME]\n", argv[0]);
            return 2;
        }
    }
    RUN(test_cores);
    RUN(test_this_cpu);
    RUN(test_i8mm_table);
    RUN(test_i8mm_bits);
    return ork_test_done();
}
