/* test_kernels_readbw.c -- ork_cpu_read_sum on every kernel path available here equals a
 * word-by-word reference for all sizes 0..RB_SMALL at every start offset within a cache line,
 * for every size from 3800 to 5400 bytes (whole iterations of the side-by-side parts loops with
 * every remainder) at a few offsets, and for large odd
 * sizes (crossing the parts, the single-vector remainder and the scalar tail);
 * random contents with the top bits set, so a lost carry or a dropped word changes the sum.
 * Each path names its load instruction. No speed is asserted (the machine is shared). */
#include <stdint.h>
#include <string.h>

#include <ork/alloc.h>
#include <ork-kernels/kernels.h>
#include <ork-tooling/readbw.h>

#include "ork_test.h"

#define RB_SMALL 1100           /* > 4 parts x 4 zmm (the AVX-512 loop's smallest input) + tails */
#define RB_OFFSETS 64           /* start offsets 0..63: every alignment within a cache line */
#define RB_MID_LO 3800        /* around 4 KiB: whole iterations of every parts loop, each rest */
#define RB_MID_HI 5400
#define RB_BIG (3u << 20)       /* 3 MiB: the block loop dominates */
#define RB_BUF (RB_BIG + 4096)

static uint64_t rng_next(uint64_t *s)
{
    /* xorshift64* (Vigna 2014): shifts 12/25/27, multiplier 2685821657736338717. */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

/* The definition: native-order words, the last partial word zero-extended. */
static uint64_t ref_sum(const uint8_t *p, size_t bytes)
{
    uint64_t s = 0;
    for (size_t off = 0; off < bytes; off += 8) {
        uint64_t w = 0;
        memcpy(&w, p + off, bytes - off < 8 ? bytes - off : 8);
        s += w;
    }
    return s;
}

static int check_path(const uint8_t *buf)
{
    int bad = 0;
    for (size_t off = 0; off < RB_OFFSETS; off++)
        for (size_t n = 0; n <= RB_SMALL; n++)
            if (ork_cpu_read_sum(buf + off, n) != ref_sum(buf + off, n)) {
                if (bad++ < 5)
                    fprintf(stderr, "     mismatch at offset %zu, %zu bytes\n", off, n);
            }
    /* a few whole iterations of the parts loops with every remainder */
    static const size_t mid_off[] = { 0, 1, 8, 63 };
    for (size_t i = 0; i < sizeof mid_off / sizeof mid_off[0]; i++)
        for (size_t n = RB_MID_LO; n < RB_MID_HI; n++)
            if (ork_cpu_read_sum(buf + mid_off[i], n) != ref_sum(buf + mid_off[i], n)) {
                if (bad++ < 5)
                    fprintf(stderr, "     mismatch at offset %zu, %zu bytes\n", mid_off[i], n);
            }
    static const size_t big[] = { RB_BIG, RB_BIG - 1, RB_BIG - 8, RB_BIG + 7, RB_BIG - 520 };
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++)
        for (size_t off = 0; off < 3; off++)
            if (ork_cpu_read_sum(buf + off * 17, big[i]) != ref_sum(buf + off * 17, big[i])) {
                if (bad++ < 5)
                    fprintf(stderr, "     mismatch at offset %zu, %zu bytes\n", off * 17, big[i]);
            }
    return bad;
}

static void test_paths(void)
{
    uint8_t *buf = ork_aligned_alloc(64, RB_BUF);
    REQUIRE(buf);
    uint64_t seed = 0x72656164626dull;
    for (size_t i = 0; i + 8 <= RB_BUF; i += 8) {
        uint64_t w = rng_next(&seed) | (1ull << 63);
        memcpy(buf + i, &w, 8);
    }
    int n_paths = 0;
    for (int i = 0; ork_kernels_path_name(i); i++) {
        const char *name = ork_kernels_path_name(i);
        if (ork_kernels_set_path(name) < 0)
            continue;           /* not available on this CPU */
        const char *insn = ork_cpu_read_insn();
        REQUIRE(insn && *insn);
        if (!strcmp(name, "scalar"))
            CHECK_STR(insn, "scalar");
        else
            CHECK(strcmp(insn, "scalar") != 0);
        int bad = check_path(buf);
        CHECK_EQ_INT(bad, 0);
        printf("     %-12s %-14s %s\n", name, insn, bad ? "MISMATCH" : "matches the reference");
        n_paths++;
    }
    CHECK(n_paths >= 1);
    ork_kernels_set_path(NULL);
    ork_free(buf);
}

/* The sum is not trivially constant: changing one word anywhere changes it. */
static void test_sensitive(void)
{
    uint8_t buf[640];
    memset(buf, 0, sizeof buf);
    CHECK(ork_cpu_read_sum(buf, sizeof buf) == 0);
    buf[600] = 1;
    CHECK(ork_cpu_read_sum(buf, sizeof buf) == ref_sum(buf, sizeof buf));
    CHECK(ork_cpu_read_sum(buf, sizeof buf) != 0);
    CHECK(ork_cpu_read_sum(buf, 600) == 0);
}

int main(void)
{
    RUN(test_paths);
    RUN(test_sensitive);
    return ork_test_done();
}
