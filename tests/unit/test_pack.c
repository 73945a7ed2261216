/* test_pack.c -- weight layouts element by element against spec §4.3 (int8 [N/32][K/32][32][32])
 * and §4.4 (fp16 [N/16][K/32][16][32]) including the §15.7 vectors, K-slice packing with zero
 * padding, the quantisation helpers and the fp16 conversions. */
#include "ork_test.h"

#include "libork/pack.h"

#include <ork/alloc.h>
#include <ork/npu.h>

#include <stdint.h>

/* The spec's formulas, written out independently of pack.h. */
static size_t spec_i8(uint32_t k, uint32_t n, uint32_t K)
{
    return (size_t)(n / 32) * (K / 32) * 1024 + (size_t)(k / 32) * 1024 + (n % 32) * 32 + (k % 32);
}

static size_t spec_f16(uint32_t k, uint32_t n, uint32_t K)
{
    return (size_t)(n / 16) * (K / 32) * 512 + (size_t)(k / 32) * 512 + (n % 16) * 32 + (k % 32);
}

static void test_vectors(void)
{
    /* spec §15.7 */
    CHECK_EQ_INT(ork__pack_offset_i8(33, 35, 64), 3169);
    CHECK_EQ_INT(ork__pack_index_f16(33, 17, 64), 1569);
    CHECK_EQ_INT(2 * ork__pack_index_f16(33, 17, 64), 3138);
}

/* W[n][k] with distinct values so that any misplaced element is caught. */
static int8_t w8(uint32_t n, uint32_t k)
{
    return (int8_t)((n * 7 + k * 13 + 1) % 255 - 127);
}

static void test_int8_layout(void)
{
    const uint32_t K = 96, N = 96, ldw = 100;     /* doubly tiled in both directions */
    int8_t *w = ork_malloc((size_t)N * ldw);
    uint8_t *dst = ork_malloc((size_t)K * N);
    REQUIRE(w && dst);
    for (uint32_t n = 0; n < N; n++)
        for (uint32_t k = 0; k < ldw; k++)
            w[(size_t)n * ldw + k] = w8(n, k);
    ork__pack_slice_i8(dst, w, ldw, N, 0, K, K, N);
    int bad = 0;
    for (uint32_t n = 0; n < N; n++)
        for (uint32_t k = 0; k < K; k++)
            bad += (int8_t)dst[spec_i8(k, n, K)] != w8(n, k);
    CHECK_EQ_INT(bad, 0);
    /* a K-slice [32, 96) of the same W packed as its own K = 64 buffer (spec §4.5) */
    ork__pack_slice_i8(dst, w, ldw, N, 32, 64, 64, N);
    bad = 0;
    for (uint32_t n = 0; n < N; n++)
        for (uint32_t k = 0; k < 64; k++)
            bad += (int8_t)dst[spec_i8(k, n, 64)] != w8(n, 32 + k);
    CHECK_EQ_INT(bad, 0);
    ork_free(w);
    ork_free(dst);
}

static void test_int8_padding(void)
{
    /* K = 40 real rows in a 64 slice, N = 40 real columns in 64: the rest must be zero. */
    const uint32_t K = 40, N = 40, KP = 64, NP = 64;
    int8_t w[40 * 40];
    for (uint32_t n = 0; n < N; n++)
        for (uint32_t k = 0; k < K; k++)
            w[n * K + k] = (int8_t)(1 + (n + k) % 100);
    uint8_t dst[64 * 64];
    memset(dst, 0x5a, sizeof dst);
    ork__pack_slice_i8(dst, w, K, N, 0, K, KP, NP);
    int bad = 0;
    for (uint32_t n = 0; n < NP; n++)
        for (uint32_t k = 0; k < KP; k++) {
            int8_t want = (n < N && k < K) ? w[n * K + k] : 0;
            bad += (int8_t)dst[spec_i8(k, n, KP)] != want;
        }
    CHECK_EQ_INT(bad, 0);
}

static void test_fp16_layout(void)
{
    const uint32_t K = 96, N = 48, KP = 96, NP = 64;   /* N padded to a whole tile */
    uint16_t *w = ork_malloc((size_t)N * K * 2);
    uint8_t *dst = ork_malloc((size_t)KP * NP * 2);
    REQUIRE(w && dst);
    for (uint32_t n = 0; n < N; n++)
        for (uint32_t k = 0; k < K; k++)
            w[(size_t)n * K + k] = (uint16_t)(0x3c00 + n * 97 + k);
    ork__pack_slice_f16(dst, w, K, N, 0, K, KP, NP);
    int bad = 0;
    for (uint32_t n = 0; n < NP; n++)
        for (uint32_t k = 0; k < KP; k++) {
            size_t e = spec_f16(k, n, KP);
            uint16_t got = (uint16_t)(dst[2 * e] | dst[2 * e + 1] << 8);   /* little-endian */
            uint16_t want = n < N ? w[(size_t)n * K + k] : 0;
            bad += got != want;
        }
    CHECK_EQ_INT(bad, 0);
    ork_free(w);
    ork_free(dst);
}

static void test_quantize(void)
{
    float w[2 * 4] = { 1.0f, -2.0f, 0.5f, 2.0f, 0, 0, 0, 0 };
    int8_t q[8];
    float s[2];
    REQUIRE(ork_npu_quantize_weights_i8(w, 2, 4, q, s) == 0);
    CHECK_NEAR(s[0], 2.0f / 127.0f, 1e-9);
    CHECK_EQ_INT(q[1], -127);
    CHECK_EQ_INT(q[3], 127);
    CHECK_EQ_INT(q[0], 64);          /* 63.5 rounds away from zero */
    CHECK_EQ_INT(s[1], 1.0f);        /* all-zero row */
    CHECK_EQ_INT(q[4], 0);
    float bad[2] = { 1.0f, NAN };
    CHECK(ork_npu_quantize_rows_i8(bad, 1, 2, q, s) < 0);
    /* round trip error within half a step per element */
    float x[3 * 16];
    for (int i = 0; i < 48; i++)
        x[i] = sinf((float)i) * (float)(1 + i / 16);
    int8_t qx[48];
    float sx[3];
    REQUIRE(ork_npu_quantize_rows_i8(x, 3, 16, qx, sx) == 0);
    for (int i = 0; i < 48; i++)
        CHECK(fabsf(qx[i] * sx[i / 16] - x[i]) <= 0.5f * sx[i / 16] + 1e-6f);
    int32_t c[2] = { 10, -3 };
    float as[1] = { 0.5f }, ws[2] = { 2.0f, 4.0f }, out[2];
    ork_npu_dequantize(c, 1, 2, as, ws, out);
    CHECK_NEAR(out[0], 10.0f, 0);
    CHECK_NEAR(out[1], -6.0f, 0);
}

static void test_f16(void)
{
    CHECK_EQ_INT(ork_npu_f32_to_f16(1.0f), 0x3c00);
    CHECK_EQ_INT(ork_npu_f32_to_f16(-2.0f), 0xc000);
    CHECK_EQ_INT(ork_npu_f32_to_f16(65504.0f), 0x7bff);
    CHECK_EQ_INT(ork_npu_f32_to_f16(65520.0f), 0x7c00);      /* rounds to +inf */
    CHECK_EQ_INT(ork_npu_f32_to_f16(5.9604645e-8f), 0x0001); /* smallest subnormal */
    CHECK_EQ_INT(ork_npu_f32_to_f16(1.0f + 1.0f / 2048), 0x3c00);   /* tie to even */
    CHECK_EQ_INT(ork_npu_f32_to_f16(1.0f + 3.0f / 2048), 0x3c02);
    CHECK(isnan(ork_npu_f16_to_f32(ork_npu_f32_to_f16(NAN))));
    /* every finite half survives f16 -> f32 -> f16 */
    int bad = 0;
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff))
            continue;
        bad += ork_npu_f32_to_f16(ork_npu_f16_to_f32((uint16_t)h)) != h;
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_NEAR(ork_npu_f16_to_f32(0x0001), 5.9604645e-8, 1e-15);
    CHECK_NEAR(ork_npu_f16_to_f32(0x3555), 0.333251953125, 0);
}

int main(void)
{
    RUN(test_vectors);
    RUN(test_int8_layout);
    RUN(test_int8_padding);
    RUN(test_fp16_layout);
    RUN(test_quantize);
    RUN(test_f16);
    return ork_test_done();
}
