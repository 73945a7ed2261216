/* test_kernels_dot.c -- dot products and the dispatched paths: for every supported type the
 * reference dot equals the sequential f32 dot of the reference dequantization bit for bit;
 * the dispatched dot equals the dispatched f32 dot of the dequantized row bit for bit; the
 * dispatched (SIMD) results stay within 1e-5 of the scalar reference relative to sum |w x|;
 * F16 dequantization on the SIMD path gives the scalar's bits for all 65536 values;
 * ork_vec_dot_rows / ork_vec_mad_rows (attention; one or two queries) give the bits of the
 * one-row kernels on every path, for F32 and F16 rows, row counts around the rows-per-pass and
 * lengths around the lane count. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork-kernels/kernels.h>

#include "ork_test.h"

/* Relative tolerance between the SIMD and scalar accumulation orders (f32, n <= a few
 * thousand): rounding differences are ~n * 2^-24 of sum |w x| in the worst case, typically
 * far smaller. Documented in docs/kernels.md. */
#define SIMD_REL_TOL 1e-5

#define KT_RNG_SEED 0x853c49e6748fea9bull
#include "kernels_test_util.h"

static const uint32_t types[] = {
    ORK_TYPE_F32, ORK_TYPE_F16, ORK_TYPE_BF16, ORK_TYPE_Q8_0, ORK_TYPE_Q4_0, ORK_TYPE_Q4_K,
    ORK_TYPE_Q6_K,
};

#define MAXN 3072

static void test_ref_dot_equals_dequant_dot(void)
{
    static uint8_t row[MAXN * 4];
    static float w[MAXN], x[MAXN];
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        uint32_t t = types[ti];
        int64_t blk = ork_type_traits(t)->block;
        int64_t lens[] = {blk, 2 * blk, 3 * 256, MAXN};
        for (int li = 0; li < 4; li++) {
            int64_t n = lens[li];
            kt_random_row(t, row, n);
            for (int64_t i = 0; i < n; i++)
                x[i] = frand();
            REQUIRE(ork_dequant_row_ref(t, row, w, n) == 0);
            float s = 0;
            for (int64_t i = 0; i < n; i++)
                s += w[i] * x[i];
            float r = ork_vec_dot_ref(t, row, x, n);
            if (memcmp(&s, &r, 4) != 0)
                fprintf(stderr, "type %s n %lld: ref dot %.9g, dequant+dot %.9g\n",
                        ork_type_name(t), (long long)n, r, s);
            CHECK(memcmp(&s, &r, 4) == 0);
        }
    }
}

static void test_dispatched_dot(void)
{
    static uint8_t row[MAXN * 4];
    static float w[MAXN], x[MAXN];
    printf("dispatched path: %s\n", ork_kernels_path());
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        uint32_t t = types[ti];
        int64_t blk = ork_type_traits(t)->block;
        /* odd lengths for plain types exercise the SIMD tail */
        int64_t lens[] = {blk, 3 * blk, blk == 1 ? 37 : 512, blk == 1 ? 1029 : 2048, MAXN};
        for (int li = 0; li < 5; li++) {
            int64_t n = lens[li];
            kt_random_row(t, row, n);
            for (int64_t i = 0; i < n; i++)
                x[i] = frand();
            REQUIRE(ork_dequant_row(t, row, w, n) == 0);
            float d = ork_vec_dot(t, row, x, n);
            float f = ork_vec_dot_f32(w, x, n);
            CHECK(memcmp(&d, &f, 4) == 0);           /* same order, chunked or not */
            double mag = 0, exact = 0;
            for (int64_t i = 0; i < n; i++) {
                mag += fabs((double)w[i] * x[i]);
                exact += (double)w[i] * x[i];
            }
            float r = ork_vec_dot_ref(t, row, x, n);
            CHECK(fabs((double)d - r) <= SIMD_REL_TOL * mag);
            CHECK(fabs((double)d - exact) <= SIMD_REL_TOL * mag);
            CHECK(fabs((double)r - exact) <= SIMD_REL_TOL * mag);
        }
    }
}

static void test_dispatched_dequant_matches_ref(void)
{
    /* all 65536 F16 bit patterns through the dispatched (F16C when available) path */
    static uint8_t row[65536 * 2];
    static float a[65536], b[65536];
    for (uint32_t h = 0; h < 65536; h++) {
        row[2 * h] = (uint8_t)h;
        row[2 * h + 1] = (uint8_t)(h >> 8);
    }
    REQUIRE(ork_dequant_row(ORK_TYPE_F16, row, a, 65536) == 0);
    REQUIRE(ork_dequant_row_ref(ORK_TYPE_F16, row, b, 65536) == 0);
    CHECK(memcmp(a, b, sizeof a) == 0);
    /* unaligned start and odd length: tail handling */
    REQUIRE(ork_dequant_row(ORK_TYPE_F16, row + 2 * 13, a, 1001) == 0);
    CHECK(memcmp(a, b + 13, 1001 * sizeof(float)) == 0);
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        kt_random_row(types[ti], row, 2048);
        REQUIRE(ork_dequant_row(types[ti], row, a, 2048) == 0);
        REQUIRE(ork_dequant_row_ref(types[ti], row, b, 2048) == 0);
        CHECK(memcmp(a, b, 2048 * sizeof(float)) == 0);
    }
}

static void test_dot_no_allocation(void)
{
    static uint8_t row[MAXN * 4];
    static float x[MAXN];
    kt_random_row(ORK_TYPE_Q4_K, row, MAXN);
    uint64_t before = ork_alloc_count();
    volatile float s = ork_vec_dot(ORK_TYPE_Q4_K, row, x, MAXN);
    (void)s;
    CHECK(ork_alloc_count() == before);
}

/* Several rows at once == one row at a time, bit for bit, on every available path. */
static void test_rows_match_single(void)
{
    enum { RN = 300, MAXR = 11, STRIDE = 320 };
    static uint8_t rows[MAXR * STRIDE * 4];
    static float x[RN], a[MAXR], y1[RN], y2[RN], o1[MAXR], o2[MAXR];
    static float xb[RN], ab[MAXR], y3[RN], y4[RN], y5[RN], o3[MAXR], o4[MAXR], o5[MAXR];
    static const int64_t ns[] = { 1, 7, 16, 31, 32, 33, 64, 96, 127, 128, 129, 200, 256, RN };
    static const uint32_t vt[] = { ORK_TYPE_F32, ORK_TYPE_F16 };
    for (int pi = 0; ork_kernels_path_name(pi); pi++) {
        if (ork_kernels_set_path(ork_kernels_path_name(pi)) < 0)
            continue;
        for (size_t ti = 0; ti < 2; ti++) {
            uint32_t type = vt[ti];
            size_t eb = type == ORK_TYPE_F16 ? 2 : 4;
            for (int r = 0; r < MAXR; r++)
                kt_random_row(type, rows + (size_t)r * STRIDE * eb, STRIDE);
            for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
                int64_t n = ns[ni];
                for (int64_t i = 0; i < n; i++) {
                    x[i] = frand() * 3.0f;
                    xb[i] = frand() * 3.0f;
                }
                for (int nr = 1; nr <= MAXR; nr++) {
                    for (int r = 0; r < nr; r++) {
                        a[r] = frand();
                        ab[r] = frand();
                        o1[r] = ork_vec_dot(type, rows + (size_t)r * STRIDE * eb, x, n);
                        o3[r] = ork_vec_dot(type, rows + (size_t)r * STRIDE * eb, xb, n);
                    }
                    REQUIRE(ork_vec_dot_rows(type, rows, STRIDE, x, n, nr, o2) == 0);
                    CHECK(memcmp(o1, o2, (size_t)nr * sizeof(float)) == 0);
                    /* two queries at once: each its own one-row bits */
                    REQUIRE(ork_vec_dot_rows2(type, rows, STRIDE, (const float *const[]){ xb, x },
                                              n, nr, (float *const[]){ o4, o5 }) == 0);
                    CHECK(memcmp(o3, o4, (size_t)nr * sizeof(float)) == 0);
                    CHECK(memcmp(o1, o5, (size_t)nr * sizeof(float)) == 0);
                    for (int64_t i = 0; i < n; i++) {
                        y1[i] = y2[i] = y5[i] = frand();
                        y3[i] = y4[i] = frand();
                    }
                    for (int r = 0; r < nr; r++) {
                        ork_vec_mad(y1, rows + (size_t)r * STRIDE * eb, type, a[r], n);
                        ork_vec_mad(y3, rows + (size_t)r * STRIDE * eb, type, ab[r], n);
                    }
                    REQUIRE(ork_vec_mad_rows(y2, rows, STRIDE, type, a, nr, n) == 0);
                    CHECK(memcmp(y1, y2, (size_t)n * sizeof(float)) == 0);
                    REQUIRE(ork_vec_mad_rows2((float *const[]){ y4, y5 }, rows, STRIDE, type,
                                              (const float *const[]){ ab, a }, nr, n) == 0);
                    CHECK(memcmp(y3, y4, (size_t)n * sizeof(float)) == 0);
                    CHECK(memcmp(y1, y5, (size_t)n * sizeof(float)) == 0);
                }
            }
        }
    }
    ork_kernels_set_path(NULL);
    CHECK_EQ_INT(ork_vec_dot_rows(ORK_TYPE_Q8_0, rows, 32, x, 32, 1, o1), ORK_EUNSUPPORTED);
    CHECK_EQ_INT(ork_vec_mad_rows(y1, rows, 32, ORK_TYPE_Q8_0, a, 1, 32), ORK_EUNSUPPORTED);
    CHECK_EQ_INT(ork_vec_dot_rows2(ORK_TYPE_Q8_0, rows, 32, (const float *const[]){ x, xb }, 32,
                                   1, (float *const[]){ o1, o2 }), ORK_EUNSUPPORTED);
    CHECK_EQ_INT(ork_vec_mad_rows2((float *const[]){ y1, y2 }, rows, 32, ORK_TYPE_Q8_0,
                                   (const float *const[]){ a, ab }, 1, 32), ORK_EUNSUPPORTED);
}

int main(void)
{
    RUN(test_ref_dot_equals_dequant_dot);
    RUN(test_dispatched_dot);
    RUN(test_dispatched_dequant_matches_ref);
    RUN(test_dot_no_allocation);
    RUN(test_rows_match_single);
    return ork_test_done();
}
