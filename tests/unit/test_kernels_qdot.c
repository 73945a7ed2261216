/* test_kernels_qdot.c -- the integer kernels on quantized activations, on every instruction-set
 * path this CPU can run (ork_kernels_set_path): Q8_0/Q4_0 x Q8_0 and Q4_K/Q6_K x Q8_K must give
 * bit for bit the order documented in src/kernels/qdot.c, re-implemented here from the block
 * layouts, and stay within 1e-6 x sum |terms| of a double-precision sum; the Q8_K quantizer
 * (scale, rounding, block sums); matmuls (multi-row kernels, decode, thread counts) equal to
 * the single dot on each path. Runs without fixtures (also under qemu-aarch64). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork-kernels/kernels.h>
#include <ork-kernels/pool.h>

#include "ork_test.h"

#define KT_RNG_SEED 0x9e3779b97f4a7c15ull
#include "kernels_test_util.h"

static float h2f(const uint8_t *p)
{
    return ork_fp16_to_f32((uint16_t)(p[0] | p[1] << 8));
}

/* ---- the documented orders, written from the block layouts ---- */

static int w_q8(uint32_t type, const uint8_t *blk, int i)
{
    if (type == ORK_TYPE_Q8_0)
        return (int8_t)blk[2 + i];
    return (i < 16 ? (blk[2 + i] & 15) : (blk[2 + i - 16] >> 4)) - 8;
}

static float spec_q8(uint32_t type, const uint8_t *w, const uint8_t *xq, int64_t n, double *exact,
                     double *mag)
{
    float l[16] = {0};
    size_t wb = type == ORK_TYPE_Q8_0 ? 34 : 18;
    *exact = *mag = 0;
    for (int64_t b = 0; b < n / 32; b++) {
        const uint8_t *wp = w + b * wb, *xp = xq + b * 34;
        float d = h2f(wp) * h2f(xp);
        for (int j = 0; j < 8; j++) {
            int32_t p = 0;
            for (int i = 4 * j; i < 4 * j + 4; i++) {
                int prod = w_q8(type, wp, i) * (int8_t)xp[2 + i];
                p += prod;
                *exact += (double)h2f(wp) * h2f(xp) * prod;
                *mag += fabs((double)h2f(wp) * h2f(xp) * prod);
            }
            l[8 * (b % 2) + j] = fmaf((float)p, d, l[8 * (b % 2) + j]);
        }
    }
    float r8[8], r4[4];
    for (int j = 0; j < 8; j++)
        r8[j] = l[j] + l[j + 8];
    for (int j = 0; j < 4; j++)
        r4[j] = r8[j] + r8[j + 4];
    return (r4[0] + r4[2]) + (r4[1] + r4[3]);
}

static float q8k_d(const uint8_t *xb)
{
    float d;
    memcpy(&d, xb, 4);
    return d;
}

/* Q4_K element e of a block: 6-bit scale/min of sub-block e / 32 and its nibble. */
static void q4k_elem(const uint8_t *blk, int e, int *q, int *sc, int *mn)
{
    const uint8_t *s = blk + 4;
    int j = e / 32;
    if (j < 4) {
        *sc = s[j] & 63;
        *mn = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
        *mn = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
    int p = e / 64, l = e % 32;
    uint8_t byte = blk[16 + 32 * p + l];
    *q = (e % 64) < 32 ? (byte & 15) : (byte >> 4);
}

/* Q6_K element e: 6-bit value 0..63 and its int8 scale. */
static void q6k_elem(const uint8_t *blk, int e, int *q, int *sc)
{
    int h = e / 128, r = e % 128, t = r / 32, l = r % 32;
    const uint8_t *ql = blk + 64 * h, *qh = blk + 128 + 32 * h;
    int lo = t == 0 ? ql[l] & 15 : t == 1 ? ql[l + 32] & 15 : t == 2 ? ql[l] >> 4 : ql[l + 32] >> 4;
    *q = lo | (((qh[l] >> (2 * t)) & 3) << 4);
    *sc = ((const int8_t *)(blk + 192))[e / 16];
}

static float spec_q8k(uint32_t type, const uint8_t *w, const uint8_t *xq, int64_t n, double *exact,
                      double *mag)
{
    float sum = 0;
    *exact = *mag = 0;
    for (int64_t b = 0; b < n / 256; b++) {
        const uint8_t *xb = xq + b * 292;
        const int8_t *qx = (const int8_t *)(xb + 4);
        float dx = q8k_d(xb);
        if (type == ORK_TYPE_Q4_K) {
            const uint8_t *blk = w + b * 144;
            int32_t s = 0, m = 0;
            for (int e = 0; e < 256; e++) {
                int q, sc, mn;
                q4k_elem(blk, e, &q, &sc, &mn);
                s += sc * q * qx[e];
                m += mn * qx[e];
                double t = (double)dx * ((double)h2f(blk) * sc * q - (double)h2f(blk + 2) * mn) * qx[e];
                *exact += t;
                *mag += fabs(t);
            }
            float dd = dx * h2f(blk), dm = dx * h2f(blk + 2);
            float ts = dd * (float)s, tm = dm * (float)m;
            float t = ts - tm;
            sum = sum + t;
        } else {
            const uint8_t *blk = w + b * 210;
            int32_t s = 0;
            for (int e = 0; e < 256; e++) {
                int q, sc;
                q6k_elem(blk, e, &q, &sc);
                s += sc * (q - 32) * qx[e];
                double t = (double)dx * h2f(blk + 208) * sc * (q - 32) * qx[e];
                *exact += t;
                *mag += fabs(t);
            }
            float dd = dx * h2f(blk + 208);
            float t = dd * (float)s;
            sum = sum + t;
        }
    }
    return sum;
}

/* ---- tests ---- */

static void test_quantize_q8_k(void)
{
    enum { N = 768 };
    static float x[N];
    static uint8_t q[N / 256 * 292];
    for (int i = 0; i < N; i++)
        x[i] = frand() * (float)(1 + i / 256);
    memset(x + 256, 0, 256 * sizeof(float));       /* an all-zero block */
    REQUIRE(ork_quantize_row_q8_k(x, q, N) == 0);
    int bad = 0;
    for (int b = 0; b < N / 256; b++) {
        const uint8_t *blk = q + b * 292;
        const int8_t *qs = (const int8_t *)(blk + 4);
        float amax = 0;
        for (int i = 0; i < 256; i++)
            amax = fmaxf(amax, fabsf(x[b * 256 + i]));
        float d = q8k_d(blk);
        bad += d != amax / 127.0f;
        for (int i = 0; i < 256; i++) {
            bad += qs[i] < -127;
            if (d != 0)
                bad += fabs(qs[i] - x[b * 256 + i] / (double)d) > 0.5 + 1e-4;
            else
                bad += qs[i] != 0;
        }
        for (int g = 0; g < 16; g++) {
            int s = 0;
            for (int i = 0; i < 16; i++)
                s += qs[16 * g + i];
            int16_t got;
            memcpy(&got, blk + 260 + 2 * g, 2);
            bad += got != s;
        }
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(ork_quantize_row_q8_k(x, q, 300), ORK_EINVAL);
}

/* One path: every dot type against its documented order, bit for bit. */
static void check_dots_on_path(const char *path)
{
    enum { N = 256 * 9 };       /* 72 Q8_0 blocks and 9 K blocks (odd counts at the end below) */
    static uint8_t w[N / 32 * 34], xq8[N / 32 * 34], xqk[N / 256 * 292];
    static float x[N];
    int fails = 0;
    for (int trial = 0; trial < 8; trial++) {
        int64_t n = trial % 2 ? N : N - 256 - 32;      /* odd block counts for both kinds */
        for (int i = 0; i < N; i++)
            x[i] = trial == 0 ? (i & 1 ? 1.0f : -1.0f) : frand() * (trial == 3 ? 1e-3f : 1.0f);
        REQUIRE(ork_quantize_row_q8_0(x, xq8, N) == 0);
        REQUIRE(ork_quantize_row_q8_k(x, xqk, N - N % 256) == 0);
        const uint32_t q8types[] = {ORK_TYPE_Q8_0, ORK_TYPE_Q4_0};
        for (int ti = 0; ti < 2; ti++) {
            kt_random_row(q8types[ti], w, N);
            if (trial == 2 && q8types[ti] == ORK_TYPE_Q8_0)
                for (int b = 0; b < N / 32; b++)
                    memset(w + b * 34 + 2, 0x80, 32);                  /* all -128 */
            double exact, mag;
            float want = spec_q8(q8types[ti], w, xq8, n, &exact, &mag);
            float got = ork_vec_dot_q8(q8types[ti], w, xq8, n);
            if (memcmp(&want, &got, 4) != 0) {
                fprintf(stderr, "%s %s trial %d: %.9g vs spec %.9g\n", path,
                        ork_type_name(q8types[ti]), trial, got, want);
                fails++;
            }
            CHECK(fabs(got - exact) <= 1e-6 * mag + 1e-30);
        }
        int64_t nk = n - n % 256;
        const uint32_t ktypes[] = {ORK_TYPE_Q4_K, ORK_TYPE_Q6_K};
        for (int ti = 0; ti < 2; ti++) {
            kt_random_row(ktypes[ti], w, N);
            double exact, mag;
            float want = spec_q8k(ktypes[ti], w, xqk, nk, &exact, &mag);
            float got = ork_vec_dot_q8k(ktypes[ti], w, xqk, nk);
            if (memcmp(&want, &got, 4) != 0) {
                fprintf(stderr, "%s %s trial %d: %.9g vs spec %.9g\n", path,
                        ork_type_name(ktypes[ti]), trial, got, want);
                fails++;
            }
            CHECK(fabs(got - exact) <= 1e-6 * mag + 1e-30);
        }
    }
    CHECK_EQ_INT(fails, 0);
    CHECK(isnan(ork_vec_dot_q8k(ORK_TYPE_Q8_0, w, xqk, 256)));
    CHECK(isnan(ork_vec_dot_q8k(ORK_TYPE_Q4_K, w, xqk, 100)));
}

static struct ork_pool *pool2;

/* Matmul (multi-row kernels for M >= 4, tiles, 1 and 2 threads) equals the single dot. */
static void check_matmul_on_path(const char *path, uint32_t type, int64_t m, int64_t n, int64_t k)
{
    size_t rb = ork_type_row_bytes(type, (uint64_t)k);
    uint8_t *w = ork_malloc(rb * (size_t)n);
    float *x = ork_malloc(sizeof(float) * (size_t)(m * k));
    float *y = ork_malloc(sizeof(float) * (size_t)(m * n));
    REQUIRE(w && x && y);
    for (int64_t r = 0; r < n; r++)
        kt_random_row(type, w + r * rb, k);
    for (int64_t i = 0; i < m * k; i++)
        x[i] = frand();
    struct ork_mat mat = { .type = type, .n_rows = n, .n_cols = k, .row_bytes = rb, .data = w };
    int differ = 0;
    for (int pi = 0; pi < (pool2 ? 2 : 1); pi++) {
        REQUIRE(ork_matmul_act(pi ? pool2 : NULL, &mat, x, m, y, ORK_ACT_QUANT) == 0);
        for (int64_t i = 0; i < m; i++)
            for (int64_t r = 0; r < n; r++) {
                float d = ork_vec_dot_act(type, w + r * rb, x + i * k, k, ORK_ACT_QUANT);
                differ += memcmp(&d, &y[i * n + r], 4) != 0;
            }
    }
    if (differ)
        fprintf(stderr, "%s %s M=%lld N=%lld K=%lld: %d outputs differ\n", path,
                ork_type_name(type), (long long)m, (long long)n, (long long)k, differ);
    CHECK_EQ_INT(differ, 0);
    ork_free(w);
    ork_free(x);
    ork_free(y);
}

static void test_every_path(void)
{
    int ran = 0;
    for (int i = 0; ork_kernels_path_name(i); i++) {
        const char *name = ork_kernels_path_name(i);
        int ret = ork_kernels_set_path(name);
        if (ret == ORK_EUNSUPPORTED)
            continue;
        REQUIRE(ret == 0);
        CHECK_STR(ork_kernels_path(), name);
        printf("path %s\n", name);
        ran++;
        check_dots_on_path(name);
        check_matmul_on_path(name, ORK_TYPE_Q8_0, 9, 7, 320);     /* 2 x 4 rows + 1, odd blocks */
        check_matmul_on_path(name, ORK_TYPE_Q4_0, 13, 5, 2048);
        check_matmul_on_path(name, ORK_TYPE_Q4_K, 6, 5, 512);
        check_matmul_on_path(name, ORK_TYPE_Q6_K, 5, 3, 768);
        check_matmul_on_path(name, ORK_TYPE_Q4_K, 1, 7, 768);      /* decode: 4 rows + 3 */
        check_matmul_on_path(name, ORK_TYPE_Q6_K, 1, 9, 512);
        check_matmul_on_path(name, ORK_TYPE_Q4_K, 1, 5, 256 * 9);  /* blocks past one batch */
        check_matmul_on_path(name, ORK_TYPE_Q6_K, 1, 3, 256 * 17);
    }
    CHECK(ran >= 1);
    CHECK_EQ_INT(ork_kernels_set_path("no-such-path"), ORK_EINVAL);
    REQUIRE(ork_kernels_set_path(NULL) == 0);
}

/* ork_vec_mad: y += a * v with the product rounded before the add, f32 and f16 values, on
 * the dispatched path, bit for bit the plain loop; unsupported value types refused. */
static void test_vec_mad(void)
{
    enum { N = 301 };
    static float y[N], want[N], vf[N];
    static uint16_t vh[N];
    for (int ti = 0; ti < 2; ti++) {
        for (int i = 0; i < N; i++) {
            y[i] = want[i] = frand();
            vh[i] = ork_f32_to_fp16(frand());
            vf[i] = frand();
        }
        float a = frand();
        for (int i = 0; i < N; i++) {
            float v = ti ? ork_fp16_to_f32(vh[i]) : vf[i];
            float pr = a * v;
            want[i] = want[i] + pr;
        }
        REQUIRE(ork_vec_mad(y, ti ? (const void *)vh : (const void *)vf,
                            ti ? ORK_TYPE_F16 : ORK_TYPE_F32, a, N) == 0);
        CHECK(memcmp(y, want, sizeof y) == 0);
    }
    CHECK_EQ_INT(ork_vec_mad(y, vf, ORK_TYPE_Q8_0, 1.0f, 32), ORK_EUNSUPPORTED);
}

int main(void)
{
    /* ORK_TEST_NO_THREADS: single-threaded only (emulators whose thread creation hangs) */
    if (!getenv("ORK_TEST_NO_THREADS") && ork_pool_create(2, &pool2) < 0)
        return 1;
    RUN(test_quantize_q8_k);
    RUN(test_every_path);
    RUN(test_vec_mad);
    ork_pool_destroy(pool2);
    return ork_test_done();
}
