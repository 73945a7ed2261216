/* test_sampler.c -- the sampling chain: determinism, greedy, top-k/top-p/min-p sets, penalties,
 * empirical frequencies, parameter validation and no allocation per sample.
 *
 * Expected sets and values are computed here from the definitions (sort by probability, prefix
 * sums, softmax), independently of the sampler's heap-based selection. */
#include "ork_test.h"

#include <ork-engine/sampler.h>
#include <ork/alloc.h>
#include <ork/error.h>

#include <float.h>
#include <stdbool.h>
#include <stdint.h>

/* A small test-local generator for logits (not the sampler's RNG). */
static uint32_t lcg_state = 12345u;
static float rand_unit(void)
{
    lcg_state = lcg_state * 1664525u + 1013904223u;   /* Numerical Recipes LCG constants */
    return (float)(lcg_state >> 8) / (float)(1u << 24);
}

static void random_logits(float *l, int n, float scale)
{
    for (int i = 0; i < n; i++)
        l[i] = (rand_unit() * 2.0f - 1.0f) * scale;
}

static void params_plain(struct ork_sampler_params *p, uint64_t seed)
{
    ork_sampler_params_default(p);
    p->temp = 1.0f;
    p->top_k = 0;
    p->top_p = 1.0f;
    p->min_p = 0.0f;
    p->seed = seed;
}

static int argmax(const float *l, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (l[i] > l[best])
            best = i;
    return best;
}

/* ---- reference for the allowed set: sort ids by logit (desc, ties by id), apply the rules. */
static const float *ref_logits;
static int ref_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    if (ref_logits[x] != ref_logits[y])
        return ref_logits[x] > ref_logits[y] ? -1 : 1;
    return x - y;
}

/* allowed[i] = 1 for ids that survive top-k -> top-p -> min-p at temperature 1. */
static void reference_allowed(const float *l, int n, int top_k, float top_p, float min_p,
                              unsigned char *allowed)
{
    int *order = malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++)
        order[i] = i;
    ref_logits = l;
    qsort(order, (size_t)n, sizeof(int), ref_cmp);
    int m = (top_k > 0 && top_k < n) ? top_k : n;
    if (top_p < 1.0f) {
        double z = 0.0, mx = l[order[0]];
        for (int i = 0; i < m; i++)
            z += exp(l[order[i]] - mx);
        double cum = 0.0;
        int keep = 0;
        while (keep < m) {
            cum += exp(l[order[keep]] - mx) / z;
            keep++;
            if (cum >= top_p)
                break;
        }
        m = keep;
    }
    if (min_p > 0.0f) {   /* probabilities over the current set: p_i / p_max is set-independent */
        double mx = l[order[0]];
        int keep = 0;
        while (keep < m && exp(l[order[keep]] - mx) >= min_p)
            keep++;
        m = keep > 0 ? keep : 1;
    }
    memset(allowed, 0, (size_t)n);
    for (int i = 0; i < m; i++)
        allowed[order[i]] = 1;
    free(order);
}

/* Draw `draws` tokens and check: only allowed ids appear, and every allowed id appears when
 * `expect_all` (the caller picks distributions where that is overwhelmingly likely). */
static void check_draws_within(struct ork_sampler *s, const float *l, int n,
                               const unsigned char *allowed, int draws, bool expect_all)
{
    int *hits = calloc((size_t)n, sizeof(int));
    for (int d = 0; d < draws; d++) {
        int32_t t = ork_sampler_sample(s, l);
        REQUIRE(t >= 0 && t < n);
        hits[t]++;
    }
    for (int i = 0; i < n; i++) {
        if (!allowed[i] && hits[i]) {
            fprintf(stderr, "  excluded id %d drawn %d times\n", i, hits[i]);
            CHECK(!hits[i]);
        }
        if (allowed[i] && expect_all && !hits[i]) {
            fprintf(stderr, "  allowed id %d never drawn\n", i);
            CHECK(hits[i] > 0);
        }
    }
    free(hits);
}

/* ------------------------------------------------------------------------------------------ */

static void test_defaults(void)
{
    struct ork_sampler_params p;
    ork_sampler_params_default(&p);
    CHECK_NEAR(p.temp, 0.8, 1e-6);
    CHECK_EQ_INT(p.top_k, 40);
    CHECK_NEAR(p.top_p, 0.95, 1e-6);
    CHECK_NEAR(p.min_p, 0.05, 1e-6);
    CHECK_NEAR(p.repeat_penalty, 1.0, 0);
    CHECK_EQ_INT(p.penalty_last_n, 64);
    CHECK(p.seed == ORK_SEED_RANDOM);
}

static void test_determinism(void)
{
    enum { N = 1000, DRAWS = 200 };
    static float l[N];
    random_logits(l, N, 3.0f);
    struct ork_sampler_params p;
    struct ork_sampler *a, *b, *c;
    params_plain(&p, 42);
    REQUIRE(ork_sampler_create(&p, N, &a) == 0);
    REQUIRE(ork_sampler_create(&p, N, &b) == 0);
    p.seed = 43;
    REQUIRE(ork_sampler_create(&p, N, &c) == 0);
    CHECK(ork_sampler_seed(a) == 42);
    int32_t seq[DRAWS];
    int same_ab = 0, same_ac = 0;
    for (int i = 0; i < DRAWS; i++) {
        int32_t x = ork_sampler_sample(a, l), y = ork_sampler_sample(b, l);
        int32_t z = ork_sampler_sample(c, l);
        seq[i] = x;
        same_ab += x == y;
        same_ac += x == z;
    }
    CHECK_EQ_INT(same_ab, DRAWS);
    CHECK(same_ac < DRAWS / 2);   /* 1000 tokens: chance agreement is a few percent */

    /* reset re-seeds with the same seed: the sequence repeats. */
    ork_sampler_reset(a);
    int again = 0;
    for (int i = 0; i < DRAWS; i++)
        again += ork_sampler_sample(a, l) == seq[i];
    CHECK_EQ_INT(again, DRAWS);
    ork_sampler_free(a);
    ork_sampler_free(b);
    ork_sampler_free(c);
}

static void test_random_seed_is_reported(void)
{
    enum { N = 500, DRAWS = 100 };
    static float l[N];
    random_logits(l, N, 3.0f);
    struct ork_sampler_params p;
    params_plain(&p, ORK_SEED_RANDOM);
    struct ork_sampler *a, *b;
    REQUIRE(ork_sampler_create(&p, N, &a) == 0);
    uint64_t eff = ork_sampler_seed(a);
    CHECK(eff != ORK_SEED_RANDOM);
    p.seed = eff;   /* the reported seed reproduces the run */
    REQUIRE(ork_sampler_create(&p, N, &b) == 0);
    int same = 0;
    for (int i = 0; i < DRAWS; i++)
        same += ork_sampler_sample(a, l) == ork_sampler_sample(b, l);
    CHECK_EQ_INT(same, DRAWS);
    ork_sampler_free(a);
    ork_sampler_free(b);
}

static void test_greedy_is_argmax(void)
{
    enum { N = 3000 };
    static float l[N];
    struct ork_sampler_params p;
    params_plain(&p, 7);
    p.temp = 0.0f;
    p.top_k = 40;       /* filters do not change the argmax */
    p.top_p = 0.5f;
    struct ork_sampler *s;
    REQUIRE(ork_sampler_create(&p, N, &s) == 0);
    for (int r = 0; r < 20; r++) {
        random_logits(l, N, 10.0f);
        CHECK_EQ_INT(ork_sampler_sample(s, l), argmax(l, N));
    }
    /* ties go to the lowest id */
    for (int i = 0; i < N; i++)
        l[i] = 0.0f;
    l[2000] = 5.0f;
    l[17] = 5.0f;
    l[900] = 5.0f;
    CHECK_EQ_INT(ork_sampler_sample(s, l), 17);
    ork_sampler_free(s);

    p.temp = -1.0f;     /* negative temperature is greedy too */
    REQUIRE(ork_sampler_create(&p, N, &s) == 0);
    CHECK_EQ_INT(ork_sampler_sample(s, l), 17);
    ork_sampler_free(s);
}

static void test_top_k_1_is_greedy(void)
{
    enum { N = 2000 };
    static float l[N];
    struct ork_sampler_params p;
    params_plain(&p, 99);
    p.temp = 1.5f;
    p.top_k = 1;
    struct ork_sampler *s;
    REQUIRE(ork_sampler_create(&p, N, &s) == 0);
    for (int r = 0; r < 50; r++) {
        random_logits(l, N, 2.0f);
        CHECK_EQ_INT(ork_sampler_sample(s, l), argmax(l, N));
    }
    ork_sampler_free(s);
}

/* Probabilities 1/2, 1/4, 1/8, ... placed at scattered ids. */
enum { GEO_N = 64, GEO_K = 10 };
static const int geo_ids[GEO_K] = { 37, 5, 60, 12, 0, 44, 23, 63, 8, 31 };
static void geometric_logits(float *l)
{
    for (int i = 0; i < GEO_N; i++)
        l[i] = -1e4f;   /* effectively zero probability; min-p and top-p must exclude them */
    for (int j = 0; j < GEO_K; j++)
        l[geo_ids[j]] = (float)log(pow(0.5, j + 1));
}

static void run_filter_case(int top_k, float top_p, float min_p, int expect_n_allowed)
{
    float l[GEO_N];
    geometric_logits(l);
    unsigned char allowed[GEO_N];
    reference_allowed(l, GEO_N, top_k, top_p, min_p, allowed);
    int n_allowed = 0;
    for (int i = 0; i < GEO_N; i++)
        n_allowed += allowed[i];
    CHECK_EQ_INT(n_allowed, expect_n_allowed);   /* the reference agrees with hand arithmetic */

    struct ork_sampler_params p;
    params_plain(&p, 2024);
    p.top_k = top_k;
    p.top_p = top_p;
    p.min_p = min_p;
    struct ork_sampler *s;
    REQUIRE(ork_sampler_create(&p, GEO_N, &s) == 0);
    check_draws_within(s, l, GEO_N, allowed, 4000, true);
    ork_sampler_free(s);
}

static void test_top_k_excludes(void)
{
    run_filter_case(3, 1.0f, 0.0f, 3);    /* ids 37, 5, 60 */
}

static void test_top_p_excludes(void)
{
    /* cumulative 0.5, 0.75, 0.875, 0.9375: top_p 0.7 keeps 2, 0.8 keeps 3, 0.9 keeps 4. */
    run_filter_case(0, 0.7f, 0.0f, 2);
    run_filter_case(0, 0.8f, 0.0f, 3);
    run_filter_case(0, 0.9f, 0.0f, 4);
    /* with top-k first, top-p renormalises over the k survivors: k = 3 gives 4/7, 6/7, 1, so
     * top_p 0.8 keeps 2 ... */
    run_filter_case(3, 0.8f, 0.0f, 2);
    /* ... and top_p 0.9 keeps all 3 (it would keep 4 without top-k). */
    run_filter_case(3, 0.9f, 0.0f, 3);
    run_filter_case(0, 0.0f, 0.0f, 1);    /* at least one token survives */
}

static void test_min_p_excludes(void)
{
    /* p_max = 1/2: min_p 0.2 keeps p >= 0.1 -> 1/2, 1/4, 1/8; min_p 0.1 keeps p >= 0.05 -> 4. */
    run_filter_case(0, 1.0f, 0.2f, 3);
    run_filter_case(0, 1.0f, 0.1f, 4);
    run_filter_case(0, 0.9f, 0.2f, 3);    /* top-p keeps 4, min-p 3 */
    run_filter_case(0, 0.7f, 0.1f, 2);    /* top-p keeps 2, min-p 4 */
    /* the defaults' shape: top-5 renormalised gives cumulative 16/31, 24/31, 28/31, 30/31, so
     * top_p 0.95 keeps 4 while min_p 0.05 would keep 5 (1/32 >= 0.05 * 1/2). */
    run_filter_case(5, 0.95f, 0.05f, 4);
}

/* Random large vocabularies against the sort-based reference, both selection paths. */
static void test_filters_match_reference(void)
{
    enum { N = 5000 };
    static float l[N];
    static unsigned char allowed[N];
    const struct { int k; float tp, mp; } cases[] = {
        { 0, 0.9f, 0.0f }, { 0, 0.5f, 0.0f }, { 50, 0.9f, 0.0f }, { 0, 1.0f, 0.05f },
        { 100, 0.95f, 0.05f }, { 0, 0.8f, 0.02f }, { 20, 1.0f, 0.0f },
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        random_logits(l, N, 8.0f);
        reference_allowed(l, N, cases[c].k, cases[c].tp, cases[c].mp, allowed);
        struct ork_sampler_params p;
        params_plain(&p, 500 + c);
        p.top_k = cases[c].k;
        p.top_p = cases[c].tp;
        p.min_p = cases[c].mp;
        struct ork_sampler *s;
        REQUIRE(ork_sampler_create(&p, N, &s) == 0);
        check_draws_within(s, l, N, allowed, 2000, false);
        ork_sampler_free(s);
    }
}

static void test_penalties_values(void)
{
    enum { N = 8 };
    const float base[N] = { 2.0f, -2.0f, 1.0f, 0.0f, 3.0f, -1.0f, 0.5f, 4.0f };
    const float rp = 2.0f, fp = 0.5f, pp = 0.25f;
    struct ork_sampler_params p;
    params_plain(&p, 1);
    p.repeat_penalty = rp;
    p.frequency_penalty = fp;
    p.presence_penalty = pp;
    p.penalty_last_n = -1;
    struct ork_sampler *s;
    REQUIRE(ork_sampler_create(&p, N, &s) == 0);
    const int32_t hist[] = { 0, 0, 1, 3, 0 };
    for (size_t i = 0; i < sizeof(hist) / sizeof(hist[0]); i++)
        ork_sampler_accept(s, hist[i]);
    float l[N];
    memcpy(l, base, sizeof l);
    ork_sampler_apply_penalties(s, l);
    /* id 0: count 3, positive -> 2/2 - 3*0.5 - 0.25; id 1: count 1, negative -> -2*2 - 0.5 - 0.25;
     * id 3: count 1, zero -> 0*2 - 0.5 - 0.25; the others are untouched. */
    CHECK_NEAR(l[0], 2.0 / rp - 3 * fp - pp, 1e-6);
    CHECK_NEAR(l[1], -2.0 * rp - 1 * fp - pp, 1e-6);
    CHECK_NEAR(l[3], 0.0 * rp - 1 * fp - pp, 1e-6);
    const int untouched[] = { 2, 4, 5, 6, 7 };
    for (size_t i = 0; i < sizeof(untouched) / sizeof(untouched[0]); i++)
        CHECK_NEAR(l[untouched[i]], base[untouched[i]], 0);
    ork_sampler_free(s);

    /* window of 3: history 0 0 1 3 0 -> last three are 1 3 0 (each count 1). */
    p.penalty_last_n = 3;
    REQUIRE(ork_sampler_create(&p, N, &s) == 0);
    for (size_t i = 0; i < sizeof(hist) / sizeof(hist[0]); i++)
        ork_sampler_accept(s, hist[i]);
    memcpy(l, base, sizeof l);
    ork_sampler_apply_penalties(s, l);
    CHECK_NEAR(l[0], 2.0 / rp - 1 * fp - pp, 1e-6);
    CHECK_NEAR(l[1], -2.0 * rp - 1 * fp - pp, 1e-6);
    CHECK_NEAR(l[3], 0.0 * rp - 1 * fp - pp, 1e-6);
    CHECK_NEAR(l[2], base[2], 0);
    /* reset clears the history */
    ork_sampler_reset(s);
    memcpy(l, base, sizeof l);
    ork_sampler_apply_penalties(s, l);
    for (int i = 0; i < N; i++)
        CHECK_NEAR(l[i], base[i], 0);
    ork_sampler_free(s);

    /* penalty_last_n = 0 disables penalties */
    p.penalty_last_n = 0;
    REQUIRE(ork_sampler_create(&p, N, &s) == 0);
    ork_sampler_accept(s, 0);
    memcpy(l, base, sizeof l);
    ork_sampler_apply_penalties(s, l);
    CHECK_NEAR(l[0], base[0], 0);
    ork_sampler_free(s);
}

static void test_penalties_steer_greedy(void)
{
    enum { N = 4 };
    const float l[N] = { 2.0f, 1.5f, -3.0f, 0.0f };
    struct ork_sampler_params p;
    params_plain(&p, 1);
    p.temp = 0.0f;
    p.repeat_penalty = 2.0f;   /* token 0: 2.0 -> 1.0 < 1.5 */
    struct ork_sampler *s;
    REQUIRE(ork_sampler_create(&p, N, &s) == 0);
    CHECK_EQ_INT(ork_sampler_sample(s, l), 0);
    ork_sampler_accept(s, 0);
    CHECK_EQ_INT(ork_sampler_sample(s, l), 1);
    ork_sampler_free(s);

    /* a negative presence penalty favours a seen token: token 3 goes 0 -> 2.5 */
    params_plain(&p, 1);
    p.temp = 0.0f;
    p.presence_penalty = -2.5f;
    REQUIRE(ork_sampler_create(&p, N, &s) == 0);
    ork_sampler_accept(s, 3);
    CHECK_EQ_INT(ork_sampler_sample(s, l), 3);
    ork_sampler_free(s);
}

/* Pearson chi-square of observed counts against softmax(l / temp). */
static double chi_square(struct ork_sampler *s, const float *l, int n, float temp, int draws)
{
    double e[16], z = 0.0, mx = l[argmax(l, n)];
    int hits[16] = { 0 };
    for (int i = 0; i < n; i++)
        z += e[i] = exp((l[i] - mx) / temp);
    for (int d = 0; d < draws; d++) {
        int32_t t = ork_sampler_sample(s, l);
        if (t < 0 || t >= n)
            return INFINITY;
        hits[t]++;
    }
    double chi = 0.0;
    for (int i = 0; i < n; i++) {
        double expect = draws * e[i] / z;
        chi += (hits[i] - expect) * (hits[i] - expect) / expect;
    }
    return chi;
}

static void test_frequencies_match_softmax(void)
{
    enum { N = 8, DRAWS = 20000 };
    const float l[N] = { 1.0f, 0.5f, 0.0f, -0.5f, 2.0f, 1.5f, -1.0f, 0.25f };
    /* 7 degrees of freedom: P(chi2 > 29) ~ 1.4e-4 for a correct sampler; a wrong temperature or
     * an off-by-one in the draw gives values in the hundreds. The seed is fixed. */
    const double bound = 29.0;
    const float temps[] = { 1.0f, 0.5f, 2.0f };
    for (size_t t = 0; t < sizeof(temps) / sizeof(temps[0]); t++) {
        struct ork_sampler_params p;
        params_plain(&p, 31337 + t);
        p.temp = temps[t];
        struct ork_sampler *s;
        REQUIRE(ork_sampler_create(&p, N, &s) == 0);
        double chi = chi_square(s, l, N, temps[t], DRAWS);
        if (!(chi < bound))
            fprintf(stderr, "  temp %g: chi-square %g\n", (double)temps[t], chi);
        CHECK(chi < bound);
        ork_sampler_free(s);
    }
    /* and a wrong expectation is rejected: temp 1 samples against a temp 2 softmax */
    struct ork_sampler_params p;
    params_plain(&p, 5);
    struct ork_sampler *s;
    REQUIRE(ork_sampler_create(&p, N, &s) == 0);
    CHECK(chi_square(s, l, N, 2.0f, DRAWS) > 10 * bound);
    ork_sampler_free(s);
}

static void test_nan_and_masked_logits(void)
{
    enum { N = 16 };
    float l[N];
    for (int i = 0; i < N; i++)
        l[i] = -INFINITY;
    l[3] = NAN;
    l[7] = 0.0f;
    l[9] = 0.0f;
    l[11] = NAN;
    struct ork_sampler_params p;
    params_plain(&p, 3);
    struct ork_sampler *s;
    REQUIRE(ork_sampler_create(&p, N, &s) == 0);
    for (int d = 0; d < 200; d++) {
        int32_t t = ork_sampler_sample(s, l);
        CHECK(t == 7 || t == 9);
    }
    ork_sampler_free(s);
    p.temp = 0.0f;
    REQUIRE(ork_sampler_create(&p, N, &s) == 0);
    CHECK_EQ_INT(ork_sampler_sample(s, l), 7);
    ork_sampler_free(s);
}

static void expect_einval(const struct ork_sampler_params *p, int32_t n_vocab, const char *field)
{
    struct ork_sampler *s = (struct ork_sampler *)(uintptr_t)1;
    ork_error_clear();
    int r = ork_sampler_create(p, n_vocab, &s);
    CHECK_EQ_INT(r, ORK_EINVAL);
    CHECK(s == NULL);
    if (!strstr(ork_error_message(), field)) {
        fprintf(stderr, "  message '%s' does not name '%s'\n", ork_error_message(), field);
        CHECK(strstr(ork_error_message(), field) != NULL);
    }
}

static void test_invalid_params(void)
{
    struct ork_sampler_params p;
    params_plain(&p, 1);
    expect_einval(&p, 0, "n_vocab");
    params_plain(&p, 1); p.temp = NAN;                 expect_einval(&p, 10, "temp");
    params_plain(&p, 1); p.top_p = -0.1f;              expect_einval(&p, 10, "top_p");
    params_plain(&p, 1); p.top_p = NAN;                expect_einval(&p, 10, "top_p");
    params_plain(&p, 1); p.min_p = 1.5f;               expect_einval(&p, 10, "min_p");
    params_plain(&p, 1); p.repeat_penalty = 0.0f;      expect_einval(&p, 10, "repeat_penalty");
    params_plain(&p, 1); p.repeat_penalty = INFINITY;  expect_einval(&p, 10, "repeat_penalty");
    params_plain(&p, 1); p.presence_penalty = NAN;     expect_einval(&p, 10, "presence_penalty");
    params_plain(&p, 1); p.frequency_penalty = INFINITY; expect_einval(&p, 10, "frequency_penalty");
    params_plain(&p, 1); p.penalty_last_n = -2;        expect_einval(&p, 10, "penalty_last_n");
    struct ork_sampler *s;
    CHECK_EQ_INT(ork_sampler_create(NULL, 10, &s), ORK_EINVAL);
    /* disabled values are valid */
    params_plain(&p, 1);
    p.top_p = 1.5f;
    p.min_p = -1.0f;
    p.top_k = -5;
    p.temp = -0.5f;
    CHECK_EQ_INT(ork_sampler_create(&p, 10, &s), 0);
    ork_sampler_free(s);
}

static void test_no_allocation_per_sample(void)
{
    enum { N = 151936 };   /* a Qwen-sized vocabulary */
    float *l = malloc(sizeof(float) * N);
    random_logits(l, N, 10.0f);
    struct ork_sampler_params p;
    ork_sampler_params_default(&p);
    p.seed = 11;
    p.repeat_penalty = 1.1f;
    struct ork_sampler *s;
    REQUIRE(ork_sampler_create(&p, N, &s) == 0);
    p.top_k = 0;   /* the heap path without top-k as well */
    struct ork_sampler *s2;
    REQUIRE(ork_sampler_create(&p, N, &s2) == 0);
    uint64_t before = ork_alloc_count();
    for (int i = 0; i < 20; i++) {
        ork_sampler_accept(s, ork_sampler_sample(s, l));
        ork_sampler_accept(s2, ork_sampler_sample(s2, l));
    }
    CHECK(ork_alloc_count() == before);
    ork_sampler_free(s);
    ork_sampler_free(s2);
    free(l);
}

static void test_accept_out_of_range_ignored(void)
{
    struct ork_sampler_params p;
    params_plain(&p, 1);
    p.repeat_penalty = 2.0f;
    struct ork_sampler *s;
    REQUIRE(ork_sampler_create(&p, 4, &s) == 0);
    ork_sampler_accept(s, -1);
    ork_sampler_accept(s, 4);
    float l[4] = { 1, 1, 1, 1 };
    ork_sampler_apply_penalties(s, l);
    for (int i = 0; i < 4; i++)
        CHECK_NEAR(l[i], 1.0, 0);
    CHECK(ork_sampler_sample(NULL, l) < 0);
    ork_sampler_free(s);
}

int main(void)
{
    RUN(test_defaults);
    RUN(test_determinism);
    RUN(test_random_seed_is_reported);
    RUN(test_greedy_is_argmax);
    RUN(test_top_k_1_is_greedy);
    RUN(test_top_k_excludes);
    RUN(test_top_p_excludes);
    RUN(test_min_p_excludes);
    RUN(test_filters_match_reference);
    RUN(test_penalties_values);
    RUN(test_penalties_steer_greedy);
    RUN(test_frequencies_match_softmax);
    RUN(test_nan_and_masked_logits);
    RUN(test_invalid_params);
    RUN(test_no_allocation_per_sample);
    RUN(test_accept_out_of_range_ignored);
    return ork_test_done();
}
