/* test_kernels_ops.c -- RMSNorm, softmax, SiLU*up and RoPE (normal and NEOX) against
 * straightforward double-precision formulas, plus their edge cases (masked -inf entries,
 * partial rotation, position 0, in-place RMSNorm); and every SIMD path available on this CPU
 * against the scalar path over random inputs of many lengths (not multiples of the vector
 * width included) and edge values, within the tolerances stated in src/kernels/ops.c. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
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

/* ---- SIMD paths against the scalar reference ---- */

/* Tolerances of src/kernels/ops.c's header: rmsnorm within 1 ulp; softmax and silu_mul within
 * 1e-6 relative or 2^-124 absolute (the vector exp flushes results below ~2^-124 to 0). */
#define OPS_REL_TOL 1e-6
#define OPS_ABS_TOL 0x1p-124
#define RMS_ULPS 1
#define LONG_N 4100

static int64_t ulp_diff(float a, float b)
{
    int32_t ia, ib;
    memcpy(&ia, &a, 4);
    memcpy(&ib, &b, 4);
    int64_t la = ia < 0 ? (int64_t)INT32_MIN - ia : ia;  /* monotonic integer order */
    int64_t lb = ib < 0 ? (int64_t)INT32_MIN - ib : ib;
    return la > lb ? la - lb : lb - la;
}

/* a (SIMD) agrees with b (scalar): same bits, both NaN, or within the tolerance. */
static int close_rel(float a, float b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    if (a == b)
        return 1;
    if (isinf(a) || isinf(b))
        return 0;
    return fabs((double)a - (double)b) <= OPS_REL_TOL * fabs((double)b) + OPS_ABS_TOL;
}

static int close_ulp(float a, float b, int64_t ulps)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    return a == b || ulp_diff(a, b) <= ulps;
}

/* A random value of magnitude 10^e, e uniform in [lo, hi] decades, either sign. */
static float rand_mag(int lo, int hi)
{
    int e = lo + (int)(rnd() % (uint32_t)(hi - lo + 1));
    return frand() * powf(10.0f, (float)e);
}

enum op { OP_RMS, OP_SOFTMAX, OP_SILU, OP_COUNT };

/* Inputs for case k of op: lengths 1..40, then around vector multiples, then long rows;
 * magnitudes from tiny to huge; masked (-inf) entries for softmax. */
static int64_t fill_case(enum op op, int k, float *x, float *w)
{
    static const int64_t lens[] = { 1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 127,
                                    128, 129, 517, 1000, LONG_N };
    int64_t n = k < 40 ? k + 1 : lens[k % (int)(sizeof lens / sizeof lens[0])];
    int kind = k % 6;
    for (int64_t i = 0; i < n; i++) {
        switch (kind) {
        case 0: x[i] = frand(); break;
        case 1: x[i] = frand() * 30.0f; break;
        case 2: x[i] = rand_mag(-38, 18); break;            /* tiny .. large (squares finite) */
        case 3: x[i] = frand() * 200.0f; break;             /* exp under/overflow */
        case 4: x[i] = rand_mag(-3, 3); break;
        default: x[i] = 1e-3f * frand() + 5.0f; break;      /* nearly equal values */
        }
        w[i] = 0.5f + frand();
        if (op == OP_SOFTMAX && kind >= 3 && rnd() % 3 == 0)
            x[i] = -INFINITY;                               /* masked positions */
    }
    return n;
}

static void run_op(enum op op, float *y, const float *x, const float *w, int64_t n)
{
    memcpy(y, x, (size_t)n * sizeof(float));
    if (op == OP_RMS)
        ork_rmsnorm(y, y, w, n, 1e-6f);
    else if (op == OP_SOFTMAX)
        ork_softmax(y, n);
    else
        ork_silu_mul(y, w, n);
}

/* Every available non-scalar path, each op, many cases: SIMD vs scalar element by element. */
static void test_ops_simd_vs_scalar(void)
{
    static float x[LONG_N], w[LONG_N], ys[LONG_N], yv[LONG_N];
    int paths = 0;
    for (int pi = 0; ork_kernels_path_name(pi); pi++) {
        const char *name = ork_kernels_path_name(pi);
        if (!strcmp(name, "scalar") || ork_kernels_set_path(name) < 0)
            continue;
        paths++;
        for (int op = 0; op < OP_COUNT; op++) {
            int bad = 0;
            for (int k = 0; k < 120; k++) {
                int64_t n = fill_case((enum op)op, k, x, w);
                REQUIRE(ork_kernels_set_path("scalar") == 0);
                run_op((enum op)op, ys, x, w, n);
                REQUIRE(ork_kernels_set_path(name) == 0);
                run_op((enum op)op, yv, x, w, n);
                for (int64_t i = 0; i < n; i++) {
                    int ok = op == OP_RMS ? close_ulp(yv[i], ys[i], RMS_ULPS)
                                          : close_rel(yv[i], ys[i]);
                    if (!ok && bad++ < 5)
                        fprintf(stderr, "  %s op %d case %d n %lld [%lld]: x %a simd %a scalar %a\n",
                                name, op, k, (long long)n, (long long)i, x[i], yv[i], ys[i]);
                }
            }
            CHECK_EQ_INT(bad, 0);
        }
    }
    ork_kernels_set_path(NULL);
    if (!paths)
        fprintf(stderr, "  (no SIMD path on this CPU: scalar only)\n");
}

/* Edge values through the SIMD path, against the scalar: exp overflow/underflow boundaries,
 * +-inf, NaN, +-0, denormals, an all -inf row (NaN), a single unmasked entry. */
static void test_ops_simd_edges(void)
{
    static const float edge[] = { 0.0f, -0.0f, 1e-45f, -1e-45f, FLT_MIN, 88.7f, 88.73f, -88.7f,
                                  -86.0f, -86.01f, -87.4f, -103.0f, -104.0f, 89.0f, -89.0f,
                                  1e30f, -1e30f, INFINITY, -INFINITY, NAN, 0.5f, -0.5f,
                                  100.0f, -100.0f, 1.0f };
    enum { NE = sizeof edge / sizeof edge[0] };
    float up[64], ys[64], yv[64];
    for (int i = 0; i < 64; i++)
        up[i] = 1.0f + 0.1f * (float)i;
    for (int pi = 0; ork_kernels_path_name(pi); pi++) {
        const char *name = ork_kernels_path_name(pi);
        if (!strcmp(name, "scalar") || ork_kernels_set_path(name) < 0)
            continue;
        /* silu over the edge values (every position, so each lands in a vector and a tail) */
        for (int shift = 0; shift < 8; shift++) {
            float g[NE];
            for (int i = 0; i < NE; i++)
                g[i] = edge[(i + shift) % NE];
            REQUIRE(ork_kernels_set_path("scalar") == 0);
            run_op(OP_SILU, ys, g, up, NE);
            REQUIRE(ork_kernels_set_path(name) == 0);
            run_op(OP_SILU, yv, g, up, NE);
            for (int i = 0; i < NE; i++)
                CHECK(close_rel(yv[i], ys[i]));
        }
        /* softmax: scores x - max spanning the exp range around the 0 flush point */
        float sx[64];
        for (int i = 0; i < 64; i++)
            sx[i] = -(float)i * 1.75f;                     /* 0 .. -110 */
        REQUIRE(ork_kernels_set_path("scalar") == 0);
        run_op(OP_SOFTMAX, ys, sx, up, 40);
        REQUIRE(ork_kernels_set_path(name) == 0);
        run_op(OP_SOFTMAX, yv, sx, up, 40);
        for (int i = 0; i < 40; i++)
            CHECK(close_rel(yv[i], ys[i]));
        float allinf[19];
        for (int i = 0; i < 19; i++)
            allinf[i] = -INFINITY;
        ork_softmax(allinf, 19);
        for (int i = 0; i < 19; i++)
            CHECK(isnan(allinf[i]));
        float one_valid[19];
        for (int i = 0; i < 19; i++)
            one_valid[i] = i == 11 ? 3.0f : -INFINITY;
        ork_softmax(one_valid, 19);
        for (int i = 0; i < 19; i++)
            CHECK(one_valid[i] == (i == 11 ? 1.0f : 0.0f));
        /* rmsnorm of huge values (squares overflow to inf) and of zeros */
        float big[21], bw[21], bs[21], bv[21];
        for (int i = 0; i < 21; i++) {
            big[i] = i % 2 ? 3e20f : -1e-40f;
            bw[i] = 1.0f;
        }
        REQUIRE(ork_kernels_set_path("scalar") == 0);
        run_op(OP_RMS, bs, big, bw, 21);
        REQUIRE(ork_kernels_set_path(name) == 0);
        run_op(OP_RMS, bv, big, bw, 21);
        for (int i = 0; i < 21; i++)
            CHECK(close_ulp(bv[i], bs[i], RMS_ULPS));
    }
    ork_kernels_set_path(NULL);
}

/* RoPE: the same bits on every path, and the per-thread cos/sin table never serves a stale
 * row: changing the position, base, n_rot, frequency factors (even in place) or scale gives
 * the bits of a call that could not have hit the table. */
static void rope_fresh(float *x, int64_t hd, int64_t n_rot, int64_t pos, float base, int neox,
                       const float *ff, float fs)
{
    float dummy[4] = { 1, 2, 3, 4 };
    ork_rope_ext(dummy, 4, 4, pos + 12345, 77.0f, 0, NULL, 1.0f);   /* evict */
    ork_rope_ext(x, hd, n_rot, pos, base, neox, ff, fs);
}

static void test_rope_paths_and_table(void)
{
    enum { HD = 128 };
    float x0[HD], a[HD], b[HD], ff[HD / 2];
    for (int i = 0; i < HD; i++)
        x0[i] = frand();
    for (int i = 0; i < HD / 2; i++)
        ff[i] = 1.0f + (float)i * 0.25f;
    /* path independence */
    memcpy(a, x0, sizeof a);
    REQUIRE(ork_kernels_set_path("scalar") == 0);
    rope_fresh(a, HD, HD, 1234, 1e6f, 1, ff, 0.5f);
    ork_kernels_set_path(NULL);
    memcpy(b, x0, sizeof b);
    rope_fresh(b, HD, HD, 1234, 1e6f, 1, ff, 0.5f);
    CHECK(memcmp(a, b, sizeof a) == 0);
    /* repeated calls (table hits) equal fresh ones; every key field invalidates */
    struct { int64_t pos, n_rot; float base, fs; int mutate_ff; } v[] = {
        { 7, HD, 1e4f, 1.0f, 0 }, { 7, HD, 1e4f, 1.0f, 0 }, { 8, HD, 1e4f, 1.0f, 0 },
        { 8, HD, 5e5f, 1.0f, 0 }, { 8, 64, 5e5f, 1.0f, 0 }, { 8, 64, 5e5f, 0.25f, 0 },
        { 8, 64, 5e5f, 0.25f, 1 }, { 8, 64, 5e5f, 0.25f, 0 },
    };
    for (int use_ff = 0; use_ff < 2; use_ff++)
        for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
            if (v[k].mutate_ff)
                ff[3] += 1.0f;                              /* same pointer, new contents */
            const float *f = use_ff ? ff : NULL;
            memcpy(a, x0, sizeof a);
            ork_rope_ext(a, HD, v[k].n_rot, v[k].pos, v[k].base, 1, f, v[k].fs);
            memcpy(b, x0, sizeof b);
            rope_fresh(b, HD, v[k].n_rot, v[k].pos, v[k].base, 1, f, v[k].fs);
            CHECK(memcmp(a, b, sizeof a) == 0);
            /* and a hit right after gives the same bits again */
            memcpy(a, x0, sizeof a);
            ork_rope_ext(a, HD, v[k].n_rot, v[k].pos, v[k].base, 1, f, v[k].fs);
            CHECK(memcmp(a, b, sizeof a) == 0);
        }
    /* a row wider than the table (bypass) matches the double reference like the others */
    enum { WIDE = 600 };
    static float wx[WIDE];
    static double wr[WIDE];
    for (int i = 0; i < WIDE; i++)
        wr[i] = wx[i] = frand();
    ork_rope(wx, WIDE, WIDE, 33, 1e4f, 1);
    rope_ref(wr, WIDE, WIDE, 33, 1e4, 1);
    for (int i = 0; i < WIDE; i++)
        CHECK_NEAR(wx[i], wr[i], 2e-4);
}

/* The rotation on every path (NEON: arm/ops_neon.c) has the scalar path's bits, NEOX and
 * normal pairs, for pair counts that are and are not multiples of the vector width, with
 * dimensions past n_rot left alone. */
static void test_rope_rotate_paths(void)
{
    enum { MAXHD = 256 };
    static const int dims[][2] = { { 128, 128 }, { 64, 64 }, { 80, 80 }, { 96, 64 }, { 10, 10 },
                                   { 6, 6 }, { 256, 200 }, { 128, 34 } };
    float x0[MAXHD], want[MAXHD], got[MAXHD];
    int paths = 0;
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
        const int hd = dims[di][0], nr = dims[di][1];
        for (int i = 0; i < hd; i++)
            x0[i] = frand() * 4.0f;
        for (int neox = 0; neox < 2; neox++)
            for (int pos = 0; pos < 300; pos += 37) {
                memcpy(want, x0, sizeof(float) * (size_t)hd);
                REQUIRE(ork_kernels_set_path("scalar") == 0);
                rope_fresh(want, hd, nr, pos, 1e4f, neox, NULL, 1.0f);
                CHECK(memcmp(want + nr, x0 + nr, sizeof(float) * (size_t)(hd - nr)) == 0);
                for (int pi = 0; ork_kernels_path_name(pi); pi++) {
                    if (ork_kernels_set_path(ork_kernels_path_name(pi)) < 0)
                        continue;
                    paths++;
                    memcpy(got, x0, sizeof(float) * (size_t)hd);
                    rope_fresh(got, hd, nr, pos, 1e4f, neox, NULL, 1.0f);
                    if (memcmp(got, want, sizeof(float) * (size_t)hd)) {
                        fprintf(stderr, "rope rotate: path %s hd=%d n_rot=%d neox=%d pos=%d "
                                "differs from scalar\n", ork_kernels_path_name(pi), hd, nr,
                                neox, pos);
                        CHECK(0);
                    }
                }
            }
    }
    ork_kernels_set_path(NULL);
    CHECK(paths > 0);
}

/* silu_mul over several rows at once equals row by row, bit for bit, on every path, for row
 * lengths that are not multiples of the vector width (batched decode relies on it). */
static void test_silu_mul_position_independent(void)
{
    enum { ROWS = 5, MAXLEN = 181 };
    static float g[ROWS * MAXLEN], u[ROWS * MAXLEN], all[ROWS * MAXLEN], one[ROWS * MAXLEN];
    static const int lens[] = { 1, 3, 9, 172, 181 };
    for (int pi = 0; ork_kernels_path_name(pi); pi++) {
        if (ork_kernels_set_path(ork_kernels_path_name(pi)) < 0)
            continue;
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
            int len = lens[li];
            for (int i = 0; i < ROWS * len; i++) {
                g[i] = frand() * 20.0f;
                u[i] = frand();
            }
            memcpy(all, g, sizeof(float) * (size_t)(ROWS * len));
            memcpy(one, g, sizeof(float) * (size_t)(ROWS * len));
            ork_silu_mul(all, u, ROWS * len);
            for (int r = 0; r < ROWS; r++)
                ork_silu_mul(one + r * len, u + r * len, len);
            CHECK(memcmp(all, one, sizeof(float) * (size_t)(ROWS * len)) == 0);
        }
    }
    ork_kernels_set_path(NULL);
}

int main(void)
{
    RUN(test_rmsnorm);
    RUN(test_softmax);
    RUN(test_silu_mul);
    RUN(test_rope);
    RUN(test_rope_ext);
    RUN(test_ops_simd_vs_scalar);
    RUN(test_ops_simd_edges);
    RUN(test_rope_paths_and_table);
    RUN(test_rope_rotate_paths);
    RUN(test_silu_mul_position_independent);
    return ork_test_done();
}
