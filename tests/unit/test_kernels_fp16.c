/* test_kernels_fp16.c -- f32 <-> fp16/bf16 conversions against an independent decoder built
 * from ldexp, exhaustively for fp16 -> f32 and on edge cases and random values for f32 -> fp16
 * (nearest with ties to even, checked by comparing neighbours in double). */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <ork-kernels/kernels.h>

#include "ork_test.h"

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* binary16 decoded with ldexp from the field definitions (not the library's bit tricks). */
static double half_value(uint16_t h)
{
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v;
    if (e == 0)
        v = ldexp((double)m, -24);
    else if (e == 31)
        v = m ? NAN : INFINITY;
    else
        v = ldexp((double)(1024 + m), e - 25);
    return s ? -v : v;
}

#define KT_RNG_SEED 0x9e3779b97f4a7c15ull
#include "kernels_test_util.h"

static void test_fp16_to_f32_exhaustive(void)
{
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = ork_fp16_to_f32((uint16_t)h);
        double want = half_value((uint16_t)h);
        if (isnan(want)) {
            /* NaN: stays NaN, sign kept, quiet bit set, payload kept in the top bits */
            uint32_t u = bits(f);
            uint32_t want_bits = ((h & 0x8000u) << 16) | 0x7fc00000u | ((h & 0x3ffu) << 13);
            if (!isnan(f) || u != want_bits)
                bad++;
        } else if ((double)f != want || !signbit(f) != !signbit(want)) {
            bad++;
        }
    }
    CHECK_EQ_INT(bad, 0);
}

static void test_fp16_round_trip_exhaustive(void)
{
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        uint16_t back = ork_f32_to_fp16(ork_fp16_to_f32((uint16_t)h));
        uint16_t want = (uint16_t)h;
        if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu))
            want = (uint16_t)(h | 0x200u);          /* NaN comes back quiet */
        if (back != want)
            bad++;
    }
    CHECK_EQ_INT(bad, 0);
}

static void test_fp16_edge_cases(void)
{
    CHECK_EQ_INT(ork_f32_to_fp16(0.0f), 0x0000);
    CHECK_EQ_INT(ork_f32_to_fp16(-0.0f), 0x8000);
    CHECK_EQ_INT(ork_f32_to_fp16(1.0f), 0x3c00);
    CHECK_EQ_INT(ork_f32_to_fp16(-2.0f), 0xc000);
    CHECK_EQ_INT(ork_f32_to_fp16(65504.0f), 0x7bff);                 /* max half */
    CHECK_EQ_INT(ork_f32_to_fp16(65519.99f), 0x7bff);                /* below the tie */
    CHECK_EQ_INT(ork_f32_to_fp16(65520.0f), 0x7c00);                 /* tie -> even = inf */
    CHECK_EQ_INT(ork_f32_to_fp16(1e10f), 0x7c00);
    CHECK_EQ_INT(ork_f32_to_fp16(-INFINITY), 0xfc00);
    CHECK_EQ_INT(ork_f32_to_fp16(INFINITY), 0x7c00);
    uint16_t n = ork_f32_to_fp16(NAN);
    CHECK((n & 0x7c00) == 0x7c00 && (n & 0x3ff) != 0);
    CHECK_EQ_INT(ork_f32_to_fp16(ldexpf(1.0f, -14)), 0x0400);        /* smallest normal */
    CHECK_EQ_INT(ork_f32_to_fp16(ldexpf(1.0f, -24)), 0x0001);        /* smallest subnormal */
    CHECK_EQ_INT(ork_f32_to_fp16(ldexpf(1.0f, -25)), 0x0000);        /* tie -> even = 0 */
    CHECK_EQ_INT(ork_f32_to_fp16(ldexpf(1.5f, -25)), 0x0001);        /* above the tie */
    CHECK_EQ_INT(ork_f32_to_fp16(ldexpf(3.0f, -25)), 0x0002);        /* 1.5 ulp tie -> 2 */
    CHECK_EQ_INT(ork_f32_to_fp16(-ldexpf(1.0f, -26)), 0x8000);       /* -tiny -> -0 */
    CHECK_EQ_INT(ork_f32_to_fp16(FLT_MIN), 0x0000);
    CHECK_EQ_INT(ork_f32_to_fp16(from_bits(1)), 0x0000);             /* f32 subnormal */
    /* ties in the normal range: 1 + 2^-11 is halfway between 1 and 1 + 2^-10 -> even (1) */
    CHECK_EQ_INT(ork_f32_to_fp16(1.0f + ldexpf(1.0f, -11)), 0x3c00);
    CHECK_EQ_INT(ork_f32_to_fp16(1.0f + 3 * ldexpf(1.0f, -11)), 0x3c02);
    CHECK_EQ_INT(ork_f32_to_fp16(ldexpf(1023.5f, -24)), 0x0400);     /* carry into exponent */
    CHECK_EQ_INT(bits(ork_fp16_to_f32(0x8000)), 0x80000000u);
    CHECK(ork_fp16_to_f32(0x0001) == ldexpf(1.0f, -24));
    CHECK(ork_fp16_to_f32(0x03ff) == ldexpf(1023.0f, -24));
}

/* f32 -> fp16 is the nearest half (ties to the even mantissa), checked in double. */
static void test_fp16_nearest_random(void)
{
    int bad = 0;
    for (int i = 0; i < 200000; i++) {
        float f;
        if (i & 1)
            f = from_bits(rnd() << 1 ^ rnd());                   /* any bit pattern */
        else
            f = ldexpf((float)(int32_t)rnd() / 2147483648.0f, (int)(rnd() % 40) - 28);
        if (isnan(f))
            continue;
        uint16_t h = ork_f32_to_fp16(f);
        double v = half_value(h), x = (double)f;
        if (fabs(x) >= 65520.0) {
            if ((h & 0x7fff) != 0x7c00)
                bad++;
            continue;
        }
        if (!signbit(v) != !signbit(x)) {
            bad++;
            continue;
        }
        /* neighbours of h in magnitude */
        uint16_t mag = h & 0x7fff, sign = h & 0x8000;
        double err = fabs(v - x);
        if (mag < 0x7bff) {
            double up = half_value((uint16_t)(sign | (mag + 1)));
            double eu = fabs(up - x);
            if (eu < err || (eu == err && (mag & 1)))
                bad++;
        }
        if (mag > 0) {
            double dn = half_value((uint16_t)(sign | (mag - 1)));
            double ed = fabs(dn - x);
            if (ed < err || (ed == err && (mag & 1)))
                bad++;
        }
    }
    CHECK_EQ_INT(bad, 0);
}

static void test_bf16(void)
{
    CHECK_EQ_INT(ork_f32_to_bf16(1.0f), 0x3f80);
    CHECK_EQ_INT(ork_f32_to_bf16(-0.0f), 0x8000);
    CHECK_EQ_INT(ork_f32_to_bf16(INFINITY), 0x7f80);
    CHECK_EQ_INT(ork_f32_to_bf16(-INFINITY), 0xff80);
    uint16_t n = ork_f32_to_bf16(from_bits(0x7f800001u));           /* signalling NaN */
    CHECK((n & 0x7f80) == 0x7f80 && (n & 0x7f) != 0);
    CHECK_EQ_INT(ork_f32_to_bf16(from_bits(0x3f808000u)), 0x3f80);  /* tie -> even (down) */
    CHECK_EQ_INT(ork_f32_to_bf16(from_bits(0x3f818000u)), 0x3f82);  /* tie -> even (up) */
    CHECK_EQ_INT(ork_f32_to_bf16(from_bits(0x3f808001u)), 0x3f81);  /* above the tie */
    CHECK_EQ_INT(ork_f32_to_bf16(FLT_MAX), 0x7f80);                  /* rounds to inf */
    CHECK_EQ_INT(ork_f32_to_bf16(from_bits(0x00010000u)), 0x0001);  /* subnormal kept */
    int bad = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = ork_bf16_to_f32((uint16_t)h);
        if (bits(f) != h << 16)
            bad++;
        if (!isnan(f) && ork_f32_to_bf16(f) != h)
            bad++;
    }
    CHECK_EQ_INT(bad, 0);
    /* random: nearest in double */
    for (int i = 0; i < 100000; i++) {
        float f = from_bits(rnd() << 1 ^ rnd());
        if (isnan(f) || isinf(f))
            continue;
        uint16_t h = ork_f32_to_bf16(f);
        double v = ork_bf16_to_f32(h), x = f;
        if (isinf(v))
            continue;                       /* overflow region, checked above with FLT_MAX */
        double lo = ork_bf16_to_f32((uint16_t)(h - 1)), hi = ork_bf16_to_f32((uint16_t)(h + 1));
        if (fabs(v - x) > fabs(lo - x) || (!isinf(hi) && !isnan(hi) && fabs(v - x) > fabs(hi - x)))
            bad++;
    }
    CHECK_EQ_INT(bad, 0);
}

/* The row conversion gives ork_f32_to_fp16's bits on every kernel path: specials (NaNs with
 * payloads, infinities, subnormals, overflow, ties) and random bit patterns, at every offset
 * and length so the SIMD body and the scalar tail both run. */
#define ROW_N 4099
static void test_fp16_row(void)
{
    static float x[ROW_N];
    static uint16_t got[ROW_N];
    static const uint32_t special[] = {
        0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u,
        0x7f800001u, 0x7fa5a5a5u, 0x477ff000u, 0x477fefffu, 0x38800000u, 0x387fffffu,
        0x33000000u, 0x33000001u, 0x3f801000u, 0x3f803000u, 0x00000001u, 0x7f7fffffu,
    };
    const int n_sp = (int)(sizeof special / sizeof special[0]);
    for (int i = 0; i < ROW_N; i++)
        x[i] = i < n_sp ? from_bits(special[i]) : from_bits(rnd() << 1 ^ rnd());
    int bad = 0;
    for (int p = 0; ork_kernels_path_name(p); p++) {
        if (ork_kernels_set_path(ork_kernels_path_name(p)) < 0)
            continue;
        for (int off = 0; off < 9; off++)
            for (int64_t n = 0; n < 40; n++) {
                memset(got, 0xee, sizeof got);
                ork_f32_to_fp16_row(x + off, got, n);
                for (int64_t i = 0; i < n; i++)
                    bad += got[i] != ork_f32_to_fp16(x[off + i]);
                bad += got[n] != 0xeeee;            /* nothing written past n */
            }
        ork_f32_to_fp16_row(x, got, ROW_N);
        for (int i = 0; i < ROW_N; i++)
            bad += got[i] != ork_f32_to_fp16(x[i]);
    }
    ork_kernels_set_path(NULL);
    CHECK_EQ_INT(bad, 0);
}

int main(void)
{
    RUN(test_fp16_to_f32_exhaustive);
    RUN(test_fp16_round_trip_exhaustive);
    RUN(test_fp16_edge_cases);
    RUN(test_fp16_nearest_random);
    RUN(test_bf16);
    RUN(test_fp16_row);
    return ork_test_done();
}
