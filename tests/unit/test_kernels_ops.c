/* test_kernels_ops.c -- RMSNorm, softmax, SiLU*up and RoPE (normal and NEOX) against
 * straightforward double-precision formulas, plus their edge cases (masked -inf entries,
 * partial rotation, position 0, in-place RMSNorm). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <ork-kernels/kernels.h>

#include "ork_test.h"

#define KT_RNG_SEED 0x6a09e667f3bcc909ull
#include "kernels_test_util.h"

#define N 517

static void test_rmsnorm(void)
{
    float x[N], w[N], out[N];
    for (int i = 0; i < N; i++) {
        x[i] = frand() * 4.0f;
        w[i] = 0.5f + frand();
    }
    float eps = 1e-5f;
    ork_rmsnorm(out, x, w, N, eps);
    double ss = 0;
    for (int i = 0; i < N; i++)
        ss += (double)x[i] * x[i];
    double scale = 1.0 / sqrt(ss / N + eps);
    for (int i = 0; i < N; i++)
        CHECK_NEAR(out[i], x[i] * scale * w[i], 1e-6 * fabs(x[i] * scale * w[i]) + 1e-7);
    /* in place */
    float y[N];
    memcpy(y, x, sizeof x);
    ork_rmsnorm(y, y, w, N, eps);
    CHECK(memcmp(y, out, sizeof y) == 0);
    /* eps matters for a zero vector: output 0, not NaN */
    float z[8] = {0}, wz[8] = {1, 1, 1, 1, 1, 1, 1, 1}, oz[8];
    ork_rmsnorm(oz, z, wz, 8, eps);
    for (int i = 0; i < 8; i++)
        CHECK(oz[i] == 0.0f);
}

static void test_softmax(void)
{
    float x[N], y[N];
    for (int i = 0; i < N; i++)
        x[i] = frand() * 20.0f;
    x[7] = 90.0f;                       /* large values: must subtract the max */
    memcpy(y, x, sizeof x);
    ork_softmax(y, N);
    double mx = -INFINITY, s = 0, total = 0;
    for (int i = 0; i < N; i++)
        mx = fmax(mx, x[i]);
    for (int i = 0; i < N; i++)
        s += exp((double)x[i] - mx);
    for (int i = 0; i < N; i++) {
        double want = exp((double)x[i] - mx) / s;
        CHECK_NEAR(y[i], want, 2e-6 * want + 1e-12);
        total += y[i];
    }
    CHECK_NEAR(total, 1.0, 1e-5);
    /* masked entries */
    float m[5] = {1.0f, -INFINITY, 2.0f, -INFINITY, 0.5f};
    ork_softmax(m, 5);
    CHECK(m[1] == 0.0f && m[3] == 0.0f);
    double e = exp(1.0) + exp(2.0) + exp(0.5);
    CHECK_NEAR(m[2], exp(2.0) / e, 1e-6);
    float one[1] = {-3.0f};
    ork_softmax(one, 1);
    CHECK(one[0] == 1.0f);
}

static void test_silu_mul(void)
{
    float g[N], u[N], o[N];
    for (int i = 0; i < N; i++) {
        g[i] = frand() * 12.0f;
        u[i] = frand() * 2.0f;
    }
    g[0] = -100.0f;                     /* expf(100) overflows to inf: silu -> -0 */
    g[1] = 100.0f;
    memcpy(o, g, sizeof g);
    ork_silu_mul(o, u, N);
    for (int i = 0; i < N; i++) {
        double want = g[i] / (1.0 + exp(-(double)g[i])) * u[i];
        CHECK_NEAR(o[i], want, 1e-6 * fabs(want) + 1e-30);
    }
}

/* Double-precision RoPE reference: angle pos * base^(-2i/n_rot). */
static void rope_ref(double *x, int head_dim, int n_rot, int pos, double base, int neox)
{
    for (int i = 0; i < n_rot / 2; i++) {
        double th = pos * pow(base, -2.0 * i / n_rot);
        int i0 = neox ? i : 2 * i, i1 = neox ? i + n_rot / 2 : 2 * i + 1;
        double a = x[i0], b = x[i1];
        x[i0] = a * cos(th) - b * sin(th);
        x[i1] = a * sin(th) + b * cos(th);
    }
    (void)head_dim;
}

static void test_rope(void)
{
    const int dims[][2] = { {8, 8}, {64, 64}, {128, 128}, {128, 64}, {96, 32} };
    const int positions[] = {0, 1, 5, 37, 511, 4000};
    const float bases[] = {10000.0f, 1000000.0f};
    for (int neox = 0; neox < 2; neox++)
        for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++)
            for (size_t pi = 0; pi < sizeof positions / sizeof positions[0]; pi++)
                for (int bi = 0; bi < 2; bi++) {
                    int hd = dims[di][0], nr = dims[di][1], pos = positions[pi];
                    float x[128];
                    double r[128];
                    for (int i = 0; i < hd; i++)
                        r[i] = x[i] = frand();
                    ork_rope(x, hd, nr, pos, bases[bi], neox);
                    rope_ref(r, hd, nr, pos, bases[bi], neox);
                    /* The angle is an f32 (as in the GGML reference): rounding theta = pos * s^i
                     * costs up to a few ulp of pos, so the error grows linearly with pos
                     * (measured <= 1.7e-7 * pos for |x| < 1); allow 3e-7 * pos. */
                    double tol = 1e-6 + 3e-7 * pos;
                    int bad = 0;
                    for (int i = 0; i < hd; i++)
                        if (!(fabs(x[i] - r[i]) <= tol))
                            bad++;
                    if (bad)
                        fprintf(stderr, "rope neox=%d hd=%d n_rot=%d pos=%d base=%g: %d off\n",
                                neox, hd, nr, pos, bases[bi], bad);
                    CHECK_EQ_INT(bad, 0);
                    /* untouched tail */
                    for (int i = nr; i < hd; i++)
                        CHECK(x[i] == (float)r[i]);
                }
    /* pos 0 is the identity */
    float v[16], w[16];
    for (int i = 0; i < 16; i++)
        v[i] = w[i] = frand();
    ork_rope(v, 16, 16, 0, 10000.0f, 0);
    CHECK(memcmp(v, w, sizeof v) == 0);
    /* normal vs neox differ in pairing: a vector with one non-zero element moves differently */
    float a[8] = {1, 0, 0, 0, 0, 0, 0, 0}, b[8] = {1, 0, 0, 0, 0, 0, 0, 0};
    ork_rope(a, 8, 8, 1, 10000.0f, 0);
    ork_rope(b, 8, 8, 1, 10000.0f, 1);
    CHECK_NEAR(a[1], sin(1.0), 1e-6);
    CHECK_NEAR(b[4], sin(1.0), 1e-6);
    CHECK(b[1] == 0.0f && a[4] == 0.0f);
}

/* Frequency factors and linear scaling against the double formula; identity settings give
 * ork_rope's bits. */
static void test_rope_ext(void)
{
    enum { HD = 64 };
    float ff[HD / 2];
    for (int i = 0; i < HD / 2; i++)
        ff[i] = 1.0f + (float)i * 0.37f;
    const int positions[] = {0, 3, 100, 2000};
    for (int neox = 0; neox < 2; neox++)
        for (int pi = 0; pi < 4; pi++) {
            int pos = positions[pi];
            float a[HD], b[HD], c[HD];
            double r[HD];
            for (int i = 0; i < HD; i++)
                r[i] = a[i] = b[i] = c[i] = frand();
            ork_rope_ext(a, HD, HD, pos, 500000.0f, neox, ff, 0.25f);
            for (int i = 0; i < HD / 2; i++) {
                double th = 0.25 * pos * pow(500000.0, -2.0 * i / HD) / ff[i];
                int i0 = neox ? i : 2 * i, i1 = neox ? i + HD / 2 : 2 * i + 1;
                double p = r[i0], q = r[i1];
                r[i0] = p * cos(th) - q * sin(th);
                r[i1] = p * sin(th) + q * cos(th);
            }
            for (int i = 0; i < HD; i++)
                CHECK_NEAR(a[i], r[i], 1e-6 + 3e-7 * 0.25 * pos);
            float ones[HD / 2];
            for (int i = 0; i < HD / 2; i++)
                ones[i] = 1.0f;
            ork_rope_ext(b, HD, HD, pos, 10000.0f, neox, ones, 1.0f);
            ork_rope(c, HD, HD, pos, 10000.0f, neox);
            CHECK(memcmp(b, c, sizeof b) == 0);
        }
}

int main(void)
{
    RUN(test_rmsnorm);
    RUN(test_softmax);
    RUN(test_silu_mul);
    RUN(test_rope);
    RUN(test_rope_ext);
    return ork_test_done();
}
