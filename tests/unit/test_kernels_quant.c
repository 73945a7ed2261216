/* test_kernels_quant.c -- dequantization of every supported type: hand-built blocks whose
 * values are worked out by hand, blocks packed by a test-local packer from random fields and
 * compared with the values computed in double from those fields, and a test-local Q8_0/Q4_0
 * quantizer whose round trip must land within one quantization step. Also: unsupported types
 * and bad lengths are refused with a message naming the type. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <ork/error.h>
#include <ork-kernels/kernels.h>

#include "ork_test.h"

#define QK_K 256

#define KT_RNG_SEED 0x2545f4914f6cdd1dull
#include "kernels_test_util.h"

/* binary16 value from its fields, in double (independent of the library's conversion). */
static double half_value(uint16_t h)
{
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v = e ? ldexp((double)(1024 + m), e - 25) : ldexp((double)m, -24);
    return s ? -v : v;
}

/* A random finite, normal half in roughly [2^-12, 2^-4] with random sign. */
static uint16_t rand_half(void)
{
    uint16_t e = (uint16_t)(3 + rnd() % 9);       /* biased exponent 3..11 */
    return (uint16_t)((rnd() & 1) << 15 | e << 10 | (rnd() & 1023));
}

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

/* max |a - b| relative to max |b| */
static double max_rel_err(const float *a, const double *b, int n)
{
    double mx = 0, err = 0;
    for (int i = 0; i < n; i++) {
        mx = fmax(mx, fabs(b[i]));
        err = fmax(err, fabs((double)a[i] - b[i]));
    }
    return mx > 0 ? err / mx : err;
}

/* ---- hand-built blocks ---- */

static void test_q8_0_hand(void)
{
    uint8_t b[34] = {0};
    put16(b, 0x3800);                 /* d = 0.5 */
    int8_t *q = (int8_t *)(b + 2);
    q[0] = 1; q[1] = -128; q[5] = 127; q[31] = -3;
    float y[32];
    REQUIRE(ork_dequant_row_ref(ORK_TYPE_Q8_0, b, y, 32) == 0);
    CHECK(y[0] == 0.5f);
    CHECK(y[1] == -64.0f);
    CHECK(y[5] == 63.5f);
    CHECK(y[31] == -1.5f);
    CHECK(y[2] == 0.0f);
}

static void test_q4_0_hand(void)
{
    uint8_t b[18] = {0};
    put16(b, 0x4000);                 /* d = 2 */
    memset(b + 2, 0x88, 16);          /* all nibbles 8 -> 0 */
    b[2] = 0x1f;                      /* element 0: 15-8 = 7; element 16: 1-8 = -7 */
    b[17] = 0x09;                     /* element 15: 9-8 = 1; element 31: 0-8 = -8 */
    float y[32];
    REQUIRE(ork_dequant_row_ref(ORK_TYPE_Q4_0, b, y, 32) == 0);
    CHECK(y[0] == 14.0f);
    CHECK(y[16] == -14.0f);
    CHECK(y[15] == 2.0f);
    CHECK(y[31] == -16.0f);
    CHECK(y[1] == 0.0f && y[17] == 0.0f);
}

static void test_q4_k_hand(void)
{
    uint8_t b[144] = {0};
    put16(b, 0x3c00);                 /* d = 1 */
    put16(b + 2, 0x3800);             /* dmin = 0.5 */
    uint8_t *s = b + 4, *qs = b + 16;
    /* sub-block 0: scale 3, min 2; sub-block 1: scale 5, min 0;
     * sub-block 5: scale 0x2a (42: low 4 bits 0xa in s[9], high 2 bits 0b10 in s[1] bits 6-7),
     *              min 0x13 (19: low 4 bits 3 in s[9] high nibble, high 2 bits 1 in s[5] bits 6-7) */
    s[0] = 3; s[4] = 2; s[1] = 5 | (2 << 6); s[5] = 0 | (1 << 6);
    s[9] = 0x0a | (0x3 << 4);
    qs[0] = 0x74;                     /* element 0: nibble 4 (sub-block 0); element 32: 7 (sub-block 1) */
    qs[32 * 2 + 3] = 0x90;            /* pair 2, l = 3: element 128+3 (sub 4) = 0; 160+3 (sub 5) = 9 */
    float y[256];
    REQUIRE(ork_dequant_row_ref(ORK_TYPE_Q4_K, b, y, 256) == 0);
    CHECK(y[0] == 3.0f * 4 - 1.0f);           /* 11 */
    CHECK(y[1] == -1.0f);                     /* nibble 0, min 2 * 0.5 */
    CHECK(y[32] == 5.0f * 7 - 0.0f);          /* 35 */
    CHECK(y[163] == 42.0f * 9 - 9.5f);        /* sub 5: 42 * 9 - 19 * 0.5 */
    CHECK(y[160] == -9.5f);
    CHECK(y[131] == 0.0f);                    /* sub 4: scale 0, min 0 */
}

static void test_q6_k_hand(void)
{
    uint8_t b[210] = {0};
    uint8_t *ql = b, *qh = b + 128;
    int8_t *sc = (int8_t *)(b + 192);
    put16(b + 208, 0x3c00);           /* d = 1 */
    for (int i = 0; i < 16; i++)
        sc[i] = (int8_t)(i + 1);
    /* all q = 0 -> value -32 * scale; set a few:
     * element 0: ql[0] low = 5, qh[0] bits 0-1 = 2 -> q = 5 | 32 = 37 -> 5 * scale 1
     * element 96 (l=0, fourth quarter): ql[32] high = 0xf, qh[0] bits 6-7 = 3 -> 63 -> 31 * sc[6]
     * element 128 + 70 (second half, l=6, third quarter): ql[64+6] high = 1, qh[32+6] bits 4-5 = 1
     *    -> q = 1 | 16 = 17 -> -15 * sc[8 + 4 + 0] */
    ql[0] = 5;
    qh[0] = 2 | (3 << 6);
    ql[32] = 0xf0;
    ql[64 + 6] = 0x10;
    qh[32 + 6] = 1 << 4;
    float y[256];
    REQUIRE(ork_dequant_row_ref(ORK_TYPE_Q6_K, b, y, 256) == 0);
    CHECK(y[0] == 5.0f);
    CHECK(y[96] == 31.0f * 7);
    CHECK(y[128 + 70] == -15.0f * 13);
    CHECK(y[1] == -32.0f * 1);
    CHECK(y[16] == -32.0f * 2);               /* second 16 of the first quarter: scale 2 */
    CHECK(y[32] == -32.0f * 3);
    CHECK(y[255] == -32.0f * 16);
}

static void test_plain_types_hand(void)
{
    uint8_t h[4] = {0x00, 0x3c, 0x00, 0xc1};  /* F16 1.0, -2.5 */
    uint8_t bf[4] = {0x80, 0x3f, 0x20, 0xc0}; /* BF16 1.0, -2.5 */
    float f[2] = {1.0f, -2.5f}, y[2];
    REQUIRE(ork_dequant_row_ref(ORK_TYPE_F16, h, y, 2) == 0);
    CHECK(y[0] == 1.0f && y[1] == -2.5f);
    REQUIRE(ork_dequant_row_ref(ORK_TYPE_BF16, bf, y, 2) == 0);
    CHECK(y[0] == 1.0f && y[1] == -2.5f);
    REQUIRE(ork_dequant_row_ref(ORK_TYPE_F32, f, y, 2) == 0);
    CHECK(y[0] == 1.0f && y[1] == -2.5f);
}

/* ---- random fields through a test-local packer ---- */

#define NB 6    /* blocks per row in the random tests */

static void test_q8_0_fields(void)
{
    uint8_t row[NB * 34];
    double want[NB * 32];
    for (int b = 0; b < NB; b++) {
        uint16_t d = rand_half();
        put16(row + b * 34, d);
        for (int i = 0; i < 32; i++) {
            int8_t q = (int8_t)rnd();
            row[b * 34 + 2 + i] = (uint8_t)q;
            want[b * 32 + i] = q * half_value(d);
        }
    }
    float y[NB * 32];
    REQUIRE(ork_dequant_row_ref(ORK_TYPE_Q8_0, row, y, NB * 32) == 0);
    CHECK(max_rel_err(y, want, NB * 32) == 0.0);      /* exact: 8 x 11 bit products */
}

static void test_q4_0_fields(void)
{
    uint8_t row[NB * 18];
    double want[NB * 32];
    for (int b = 0; b < NB; b++) {
        uint16_t d = rand_half();
        put16(row + b * 18, d);
        for (int i = 0; i < 16; i++) {
            int lo = (int)(rnd() & 15), hi = (int)(rnd() & 15);
            row[b * 18 + 2 + i] = (uint8_t)(lo | hi << 4);
            want[b * 32 + i] = (lo - 8) * half_value(d);
            want[b * 32 + 16 + i] = (hi - 8) * half_value(d);
        }
    }
    float y[NB * 32];
    REQUIRE(ork_dequant_row_ref(ORK_TYPE_Q4_0, row, y, NB * 32) == 0);
    CHECK(max_rel_err(y, want, NB * 32) == 0.0);
}

/* Pack Q4_K: 8 (scale, min) 6-bit pairs as described in the format (low 6 bits of bytes 0-7
 * for sub-blocks 0-3, sub-blocks 4-7 split into low nibbles in bytes 8-11 and 2 high bits in
 * the top bits of bytes 0-7). */
static void pack_q4_k(uint8_t *b, uint16_t d, uint16_t dmin, const int *sc, const int *mn,
                      const int *q)
{
    put16(b, d);
    put16(b + 2, dmin);
    uint8_t *s = b + 4;
    for (int j = 0; j < 4; j++) {
        s[j] = (uint8_t)(sc[j] | (sc[j + 4] >> 4) << 6);
        s[j + 4] = (uint8_t)(mn[j] | (mn[j + 4] >> 4) << 6);
        s[j + 8] = (uint8_t)((sc[j + 4] & 15) | (mn[j + 4] & 15) << 4);
    }
    uint8_t *qs = b + 16;
    for (int p = 0; p < 4; p++)
        for (int l = 0; l < 32; l++)
            qs[32 * p + l] = (uint8_t)(q[64 * p + l] | q[64 * p + 32 + l] << 4);
}

static void test_q4_k_fields(void)
{
    uint8_t row[NB * 144];
    double want[NB * QK_K];
    for (int b = 0; b < NB; b++) {
        uint16_t d = rand_half() & 0x7fff, dmin = rand_half() & 0x7fff;
        int sc[8], mn[8], q[QK_K];
        for (int j = 0; j < 8; j++) {
            sc[j] = (int)(rnd() & 63);
            mn[j] = (int)(rnd() & 63);
        }
        for (int i = 0; i < QK_K; i++)
            q[i] = (int)(rnd() & 15);
        pack_q4_k(row + b * 144, d, dmin, sc, mn, q);
        for (int i = 0; i < QK_K; i++)
            want[b * QK_K + i] = half_value(d) * sc[i / 32] * q[i] - half_value(dmin) * mn[i / 32];
    }
    float y[NB * QK_K];
    REQUIRE(ork_dequant_row_ref(ORK_TYPE_Q4_K, row, y, NB * QK_K) == 0);
    CHECK(max_rel_err(y, want, NB * QK_K) < 1e-6);
}

/* Pack Q6_K from 256 6-bit values and 16 int8 scales. */
static void pack_q6_k(uint8_t *b, uint16_t d, const int8_t *sc, const int *q)
{
    memset(b, 0, 210);
    uint8_t *ql = b, *qh = b + 128;
    for (int h = 0; h < 2; h++) {
        for (int l = 0; l < 32; l++) {
            const int *v = q + 128 * h;
            ql[64 * h + l] = (uint8_t)((v[l] & 15) | (v[l + 64] & 15) << 4);
            ql[64 * h + l + 32] = (uint8_t)((v[l + 32] & 15) | (v[l + 96] & 15) << 4);
            qh[32 * h + l] = (uint8_t)((v[l] >> 4) | (v[l + 32] >> 4) << 2 | (v[l + 64] >> 4) << 4 |
                                       (v[l + 96] >> 4) << 6);
        }
    }
    memcpy(b + 192, sc, 16);
    put16(b + 208, d);
}

static void test_q6_k_fields(void)
{
    uint8_t row[NB * 210];
    double want[NB * QK_K];
    for (int b = 0; b < NB; b++) {
        uint16_t d = rand_half();
        int8_t sc[16];
        int q[QK_K];
        for (int j = 0; j < 16; j++)
            sc[j] = (int8_t)rnd();
        for (int i = 0; i < QK_K; i++)
            q[i] = (int)(rnd() & 63);
        pack_q6_k(row + b * 210, d, sc, q);
        for (int i = 0; i < QK_K; i++)
            want[b * QK_K + i] = half_value(d) * sc[i / 16] * (q[i] - 32);
    }
    float y[NB * QK_K];
    REQUIRE(ork_dequant_row_ref(ORK_TYPE_Q6_K, row, y, NB * QK_K) == 0);
    CHECK(max_rel_err(y, want, NB * QK_K) < 1e-6);
}

/* ---- test-local quantizers: round trip within one step ---- */

static void test_q8_0_q4_0_round_trip(void)
{
    float x[NB * 32], y[NB * 32];
    for (int i = 0; i < NB * 32; i++)
        x[i] = frand() * 3.0f;
    uint8_t q8[NB * 34], q4[NB * 18];
    double step8[NB], step4[NB];
    for (int b = 0; b < NB; b++) {
        float amax = 0, mx = 0;
        for (int i = 0; i < 32; i++)
            if (fabsf(x[b * 32 + i]) > amax) {
                amax = fabsf(x[b * 32 + i]);
                mx = x[b * 32 + i];
            }
        /* Q8_0: d = amax / 127, q = round(x / d) */
        uint16_t d8 = ork_f32_to_fp16(amax / 127.0f);
        put16(q8 + b * 34, d8);
        step8[b] = half_value(d8);
        for (int i = 0; i < 32; i++) {
            long v = lround(x[b * 32 + i] / step8[b]);
            q8[b * 34 + 2 + i] = (uint8_t)(int8_t)(v > 127 ? 127 : v < -127 ? -127 : v);
        }
        /* Q4_0: d = max / -8, q = round(x / d) + 8 clamped to 0..15 */
        uint16_t d4 = ork_f32_to_fp16(mx / -8.0f);
        put16(q4 + b * 18, d4);
        step4[b] = fabs(half_value(d4));
        for (int i = 0; i < 16; i++) {
            double d = half_value(d4);
            long lo = lround(x[b * 32 + i] / d) + 8, hi = lround(x[b * 32 + 16 + i] / d) + 8;
            lo = lo < 0 ? 0 : lo > 15 ? 15 : lo;
            hi = hi < 0 ? 0 : hi > 15 ? 15 : hi;
            q4[b * 18 + 2 + i] = (uint8_t)(lo | hi << 4);
        }
    }
    REQUIRE(ork_dequant_row_ref(ORK_TYPE_Q8_0, q8, y, NB * 32) == 0);
    for (int i = 0; i < NB * 32; i++)
        CHECK_NEAR(y[i], x[i], step8[i / 32] * 0.5 + 1e-6);
    REQUIRE(ork_dequant_row_ref(ORK_TYPE_Q4_0, q4, y, NB * 32) == 0);
    for (int i = 0; i < NB * 32; i++)
        CHECK_NEAR(y[i], x[i], step4[i / 32] * 1.0 + 1e-6);   /* +7 side clamps at up to 1 step */
}

static void test_unsupported_and_bad_length(void)
{
    uint8_t buf[512] = {0};
    float y[256];
    ork_error_clear();
    CHECK_EQ_INT(ork_dequant_row_ref(ORK_TYPE_Q5_K, buf, y, 256), ORK_EUNSUPPORTED);
    CHECK(strstr(ork_error_message(), "Q5_K") != NULL);
    CHECK_EQ_INT(ork_dequant_row(ORK_TYPE_IQ2_XXS, buf, y, 256), ORK_EUNSUPPORTED);
    CHECK(strstr(ork_error_message(), "IQ2_XXS") != NULL);
    CHECK_EQ_INT(ork_dequant_row_ref(99, buf, y, 32), ORK_EUNSUPPORTED);
    CHECK_EQ_INT(ork_dequant_row_ref(ORK_TYPE_Q8_0, buf, y, 48), ORK_EINVAL);
    CHECK_EQ_INT(ork_dequant_row_ref(ORK_TYPE_Q4_K, buf, y, 128), ORK_EINVAL);
    CHECK(isnan(ork_vec_dot_ref(ORK_TYPE_Q4_1, buf, y, 32)));
    CHECK(isnan(ork_vec_dot(ORK_TYPE_Q4_1, buf, y, 32)));
    CHECK_EQ_INT(ork_kernels_check(ORK_TYPE_Q6_K, 512), 0);
    CHECK_EQ_INT(ork_kernels_check(ORK_TYPE_F16, 7), 0);
}

int main(void)
{
    RUN(test_q8_0_hand);
    RUN(test_q4_0_hand);
    RUN(test_q4_k_hand);
    RUN(test_q6_k_hand);
    RUN(test_plain_types_hand);
    RUN(test_q8_0_fields);
    RUN(test_q4_0_fields);
    RUN(test_q4_k_fields);
    RUN(test_q6_k_fields);
    RUN(test_q8_0_q4_0_round_trip);
    RUN(test_unsupported_and_bad_length);
    return ork_test_done();
}
