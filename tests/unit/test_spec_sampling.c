/* test_spec_sampling.c -- speculative sampling keeps the target distribution, checked through
 * the sampler API on a small synthetic vocabulary with fixed seeds:
 *   - ork_sampler_probs is the distribution ork_sampler_sample draws from (penalties, top-k,
 *     min-p, temperature);
 *   - drafts drawn from a different distribution q and judged by ork_spec_verify_token come out
 *     distributed as p, for a sampled draft (q full) and a deterministic one (q one-hot), while
 *     the drafts themselves are measurably not (the test can fail);
 *   - a greedy target accepts exactly its argmax.
 * The bound: Pearson's chi-square over the V = 8 tokens (V - 1 = 7 degrees of freedom) below
 * 24.32, its 0.1 % critical value, with N = 200,000 draws per check; and the total-variation
 * distance below 0.01 (the expected one is about sqrt(V / (2 pi N)) = 0.0025). */
#include "ork_test.h"

#include <ork-engine/sampler.h>
#include <ork-engine/speculative.h>

#include <math.h>

#define V 8
#define N_DRAWS 200000
#define CHI2_CRIT_7DF_0P1 24.32   /* chi-square, 7 degrees of freedom, upper 0.1 % point */
#define TV_BOUND 0.01

static const float TARGET_LOGITS[V] = { 2.0f, 1.5f, 1.4f, 0.3f, -0.5f, 0.9f, -3.0f, 1.1f };
static const float DRAFT_LOGITS[V] = { 0.1f, 2.2f, -0.4f, 1.0f, 0.8f, -1.0f, 0.5f, 1.9f };

static struct ork_sampler *make(float temp, int32_t top_k, float min_p, uint64_t seed)
{
    struct ork_sampler_params p;
    ork_sampler_params_default(&p);
    p.temp = temp;
    p.top_k = top_k;
    p.top_p = 1.0f;
    p.min_p = min_p;
    p.seed = seed;
    struct ork_sampler *s = NULL;
    if (ork_sampler_create(&p, V, &s) < 0)
        return NULL;
    return s;
}

static double chi2(const double *counts, const float *p, double n)
{
    double x = 0;
    for (int i = 0; i < V; i++) {
        double e = n * p[i];
        if (e > 0)
            x += (counts[i] - e) * (counts[i] - e) / e;
        else if (counts[i] > 0)
            return INFINITY;   /* a token the target never gives */
    }
    return x;
}

static double tv(const double *counts, const float *p, double n)
{
    double d = 0;
    for (int i = 0; i < V; i++)
        d += fabs(counts[i] / n - p[i]);
    return d / 2;
}

/* ork_sampler_probs is what ork_sampler_sample draws from. */
static void test_probs_match_sample(void)
{
    struct ork_sampler_params p;
    ork_sampler_params_default(&p);
    p.temp = 0.7f;
    p.top_k = 6;
    p.top_p = 1.0f;
    p.min_p = 0.02f;
    p.repeat_penalty = 1.3f;
    p.seed = 11;
    struct ork_sampler *s = NULL;
    REQUIRE(ork_sampler_create(&p, V, &s) == 0);
    ork_sampler_accept(s, 0);   /* a history for the penalty */
    float probs[V];
    int kept = ork_sampler_probs(s, TARGET_LOGITS, probs);
    CHECK_EQ_INT(kept, 6);
    double sum = 0;
    for (int i = 0; i < V; i++)
        sum += probs[i];
    CHECK_NEAR(sum, 1.0, 1e-6);
    CHECK(probs[6] == 0.0f);   /* outside the top 6 */
    double counts[V] = { 0 };
    for (int i = 0; i < N_DRAWS; i++)
        counts[ork_sampler_sample(s, TARGET_LOGITS)]++;
    double x = chi2(counts, probs, N_DRAWS);
    fprintf(stderr, "probs vs sample: chi2 %.2f, tv %.4f\n", x, tv(counts, probs, N_DRAWS));
    CHECK(x < CHI2_CRIT_7DF_0P1);
    CHECK(tv(counts, probs, N_DRAWS) < TV_BOUND);
    /* greedy: one-hot at the argmax */
    struct ork_sampler *g = make(0.0f, 0, 0.0f, 1);
    REQUIRE(g);
    CHECK_EQ_INT(ork_sampler_probs(g, TARGET_LOGITS, probs), 1);
    CHECK(probs[0] == 1.0f);
    ork_sampler_free(g);
    ork_sampler_free(s);
}

/* Draft from q (or a fixed token), verify against p: the output follows p. */
static void spec_check(bool deterministic)
{
    struct ork_sampler *tgt = make(0.9f, 7, 0.0f, 1234);
    struct ork_sampler *drf = make(1.0f, 0, 0.0f, 4321);
    REQUIRE(tgt && drf);
    float p[V], q[V], scratch[V];
    REQUIRE(ork_sampler_probs(tgt, TARGET_LOGITS, p) > 0);
    REQUIRE(ork_sampler_probs(drf, DRAFT_LOGITS, q) > 0);
    double out[V] = { 0 }, drafts[V] = { 0 };
    int accepted = 0;
    for (int i = 0; i < N_DRAWS; i++) {
        int32_t x = deterministic ? 1 : ork_sampler_sample_probs(drf, q), y = -1;
        drafts[x]++;
        int r = ork_spec_verify_token(tgt, V, TARGET_LOGITS, x, deterministic ? NULL : q,
                                      scratch, &y);
        REQUIRE(r == 0 || r == 1);
        REQUIRE(y >= 0 && y < V);
        accepted += r;
        out[y]++;
    }
    double x2 = chi2(out, p, N_DRAWS), d = tv(out, p, N_DRAWS);
    double d_draft = tv(drafts, p, N_DRAWS);
    fprintf(stderr, "%s draft: acceptance %.3f, output chi2 %.2f tv %.4f; drafts tv %.4f\n",
            deterministic ? "one-hot" : "sampled", (double)accepted / N_DRAWS, x2, d, d_draft);
    CHECK(x2 < CHI2_CRIT_7DF_0P1);
    CHECK(d < TV_BOUND);
    CHECK(d_draft > 10 * TV_BOUND);   /* the drafts alone are far from p: the check has power */
    /* the acceptance rate is sum_x min(p(x), q(x)) (one-hot: p(x)) */
    double want = 0;
    for (int i = 0; i < V; i++)
        want += deterministic ? (i == 1 ? p[i] : 0) : fmin(p[i], q[i]);
    CHECK_NEAR((double)accepted / N_DRAWS, want, 0.01);
    ork_sampler_free(tgt);
    ork_sampler_free(drf);
}

static void test_sampled_draft(void)
{
    spec_check(false);
}

static void test_one_hot_draft(void)
{
    spec_check(true);
}

static void test_greedy_target(void)
{
    struct ork_sampler *g = make(0.0f, 0, 0.0f, 1);
    REQUIRE(g);
    float scratch[V];
    int32_t y = -1;
    CHECK_EQ_INT(ork_spec_verify_token(g, V, TARGET_LOGITS, 0, NULL, scratch, &y), 1);
    CHECK_EQ_INT(y, 0);
    CHECK_EQ_INT(ork_spec_verify_token(g, V, TARGET_LOGITS, 3, NULL, scratch, &y), 0);
    CHECK_EQ_INT(y, 0);   /* the replacement is the argmax */
    ork_sampler_free(g);
}

int main(void)
{
    RUN(test_probs_match_sample);
    RUN(test_sampled_draft);
    RUN(test_one_hot_draft);
    RUN(test_greedy_target);
    return ork_test_done();
}
