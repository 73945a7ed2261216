/* test_twin_a76_table.c -- the twin's CPU matmul constants are the NEON kernels' cost table
 * (tools/a76_cost.tsv, folded in at build time by cmake/twin_a76_cost.cmake): each cpu_mm_*
 * default equals its kernel's mca_cycles_per_block in the table, its source names the kernel,
 * and ork_twin_cpu_matmul charges blocks x those cycles (decode stream, full tiles (6 rows for
 * Q8_0/Q4_0, 4 for Q4_K) and the smallest tile holding the rows left, the one-row dot for
 * matrices that are not interleaved), overridable
 * like every constant. docs/twin.md "CPU matmuls from the kernels' cost table". */
#include "ork_test.h"

#include <ork/twin.h>

#include <stdlib.h>
#include <string.h>

static const struct { const char *name, *fn; } mapping[] = {
    { "cpu_mm_q8_0_m1_cycles", "xn_q8_g4m1" }, { "cpu_mm_q8_0_m2_cycles", "xn_q8_g1m2" },
    { "cpu_mm_q8_0_m4_cycles", "xn_q8_g1m4" }, { "cpu_mm_q8_0_m6_cycles", "xn_q8_g1m6" },
    { "cpu_mm_q4_0_m1_cycles", "xn_q4_g4m1" }, { "cpu_mm_q4_0_m2_cycles", "xn_q4_g1m2" },
    { "cpu_mm_q4_0_m4_cycles", "xn_q4_g1m4" }, { "cpu_mm_q4_0_m6_cycles", "xn_q4_g1m6" },
    { "cpu_mm_q4_k_m1_cycles", "xkn_g4m1" },   { "cpu_mm_q4_k_m4_cycles", "xkn_g1m4" },
    { "cpu_mm_q6_k_m1_cycles", "x6n_g4m1" },   { "cpu_mm_q6_k_m2_cycles", "x6n_g1m2" },
    { "cpu_mm_q6_k_m4_cycles", "x6n_g1m4" },   { "cpu_mm_q6_k_m6_cycles", "x6n_g1m6" },
    { "cpu_mm_rows_m1_cycles", "q8_blocks_neon_dot" },
};
#define N_MAP (sizeof mapping / sizeof mapping[0])

/* The table's mca_cycles_per_block of kernel function fn; -1 when absent. */
static double tsv_cycles(const char *fn)
{
    FILE *f = fopen(ORK_SOURCE_DIR "/tools/a76_cost.tsv", "r");
    if (!f)
        return -1;
    char line[1024];
    int col_fn = -1, col_cy = -1;
    double v = -1;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#')
            continue;
        line[strcspn(line, "\r\n")] = 0;
        char *save = NULL, *tok = strtok_r(line, "\t", &save);
        char *cells[32];
        int n = 0;
        for (; tok && n < 32; tok = strtok_r(NULL, "\t", &save))
            cells[n++] = tok;
        if (n && !strcmp(cells[0], "kernel")) {
            for (int i = 0; i < n; i++) {
                if (!strcmp(cells[i], "function"))
                    col_fn = i;
                if (!strcmp(cells[i], "mca_cycles_per_block"))
                    col_cy = i;
            }
            continue;
        }
        if (col_fn >= 0 && col_cy >= 0 && col_fn < n && col_cy < n && !strcmp(cells[col_fn], fn))
            v = strtod(cells[col_cy], NULL);
    }
    fclose(f);
    return v;
}

static const struct ork_twin_const_info *find(const char *name)
{
    size_t n;
    const struct ork_twin_const_info *t = ork_twin_consts_table(&n);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(t[i].name, name))
            return &t[i];
    return NULL;
}

static void test_defaults_are_the_table(void)
{
    for (size_t i = 0; i < N_MAP; i++) {
        const struct ork_twin_const_info *e = find(mapping[i].name);
        double v = tsv_cycles(mapping[i].fn);
        CHECK(e != NULL);
        CHECK(v > 0);
        if (!e || v <= 0)
            continue;
        if (e->def != v)
            printf("  %s: default %.17g, table %.17g\n", e->name, e->def, v);
        CHECK(e->def == v);
        CHECK(strstr(e->source, "tools/a76_cost.tsv") != NULL);
        CHECK(strstr(e->source, mapping[i].fn) != NULL);
        CHECK(!strcmp(e->unit, "cycles/block"));
    }
}

static void test_matmul_charges_the_table(void)
{
    struct ork_twin_consts c;
    ork_twin_consts_default(&c);
    const double k = 2048, n = 4096, blocks = k / 32 * n, f = c.cpu_freq_hz;
    /* the part that is not the kernel loop: one store per 4 outputs, at cpu_store_per_cycle */
    double st1 = 0.25 * n / c.cpu_store_per_cycle / f * 1e9;
    struct ork_twin_work w = ork_twin_cpu_matmul(&c, ORK_TWIN_W_Q8_0, 1, 2048, 4096);
    CHECK_NEAR(w.issue_ns, blocks * c.cpu_mm_q8_0_m1_cycles / f * 1e9 + st1, 1e-6);
    CHECK_NEAR(w.bytes, blocks * 34, 1e-6);
    /* 9 rows of Q4_0: one 6-row tile and the 4-row tile's cost for the 3 left */
    w = ork_twin_cpu_matmul(&c, ORK_TWIN_W_Q4_0, 9, 2048, 4096);
    double cyc = c.cpu_mm_q4_0_m6_cycles + c.cpu_mm_q4_0_m4_cycles;
    CHECK_NEAR(w.issue_ns, blocks * cyc / f * 1e9 + 9 * st1, 1e-6);
    /* 14 rows of Q8_0: two 6-row tiles and the 2-row tile */
    w = ork_twin_cpu_matmul(&c, ORK_TWIN_W_Q8_0, 14, 2048, 4096);
    cyc = 2 * c.cpu_mm_q8_0_m6_cycles + c.cpu_mm_q8_0_m2_cycles;
    CHECK_NEAR(w.issue_ns, blocks * cyc / f * 1e9 + 14 * st1, 1e-6);
    /* 5 rows of Q4_K: a 4-row tile and the stream for the one left */
    w = ork_twin_cpu_matmul(&c, ORK_TWIN_W_Q4_K, 5, 2048, 4096);
    cyc = c.cpu_mm_q4_k_m4_cycles + c.cpu_mm_q4_k_m1_cycles;
    CHECK_NEAR(w.issue_ns, blocks * cyc / f * 1e9 + 5 * st1, 1e-6);
    /* 11 rows of Q6_K: one 6-row tile and the 6-row tile's cost for the 5 left; one row the
     * decode stream */
    w = ork_twin_cpu_matmul(&c, ORK_TWIN_W_Q6_K, 11, 2048, 4096);
    cyc = 2 * c.cpu_mm_q6_k_m6_cycles;
    CHECK_NEAR(w.issue_ns, blocks * cyc / f * 1e9 + 11 * st1, 1e-6);
    w = ork_twin_cpu_matmul(&c, ORK_TWIN_W_Q6_K, 1, 2048, 4096);
    CHECK_NEAR(w.issue_ns, blocks * c.cpu_mm_q6_k_m1_cycles / f * 1e9 + st1, 1e-6);
    /* 4100 rows cannot be interleaved by 16: the one-row dot per X row */
    w = ork_twin_cpu_matmul(&c, ORK_TWIN_W_Q8_0, 2, 2048, 4100);
    double b2 = k / 32 * 4100, st2 = 0.25 * 4100 / c.cpu_store_per_cycle / f * 1e9;
    CHECK_NEAR(w.issue_ns, b2 * 2 * c.cpu_mm_rows_m1_cycles / f * 1e9 + 2 * st2, 1e-6);
    /* overridable: twice the cycles, twice the loop time */
    double before = ork_twin_cpu_matmul(&c, ORK_TWIN_W_Q8_0, 1, 2048, 4096).issue_ns;
    CHECK(ork_twin_consts_set(&c, "cpu_mm_q8_0_m1_cycles", 2 * c.cpu_mm_q8_0_m1_cycles) == 0);
    double after = ork_twin_cpu_matmul(&c, ORK_TWIN_W_Q8_0, 1, 2048, 4096).issue_ns;
    CHECK_NEAR(after - before, before - st1, 1e-6);
}

int main(void)
{
    RUN(test_defaults_are_the_table);
    RUN(test_matmul_charges_the_table);
    return ork_test_done();
}
