/* sampler.c -- token sampling (see ork-engine/sampler.h): repetition/presence/frequency penalties
 * over a window of accepted tokens, then top-k -> top-p -> min-p -> temperature -> draw, with a
 * self-contained seeded RNG (xoshiro256**, seeded through splitmix64).
 *
 * This module is not a tokenizer or a stop-string matcher (stop.c), and it never looks at text.
 * Everything it needs is allocated at create time: ork_sampler_sample() does no allocation
 * (with a grammar, the matcher's buffers grow during the first tokens and then stay).
 *
 * Under a grammar (grammar.h) the token filter marks the allowed tokens before anything else;
 * the rest are -inf from the start, so penalties, top-k, top-p, min-p and the draw only ever
 * see allowed tokens.
 *
 * Candidate selection uses one binary max-heap over the candidate array: building it is O(n) and
 * every pop yields the next-best token, so top-k pops k tokens and top-p pops only until the
 * cumulative probability is reached. Only the survivors are ever put in order. */
#include <ork-engine/grammar.h>
#include <ork-engine/sampler.h>

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/log.h>

#include <float.h>
#include <math.h>
#include <string.h>
#include <time.h>

/* Longest penalty window we preallocate a ring buffer for. Longer windows would cost more memory
 * than any supported context length needs (the largest models we run have 128 Ki contexts). */
#define SAMPLER_MAX_LAST_N (1 << 20)

/* splitmix64 increment and mixing constants: Steele, Lea and Flood, "Fast splittable
 * pseudorandom number generators" (OOPSLA 2014), as used to seed xoshiro by its authors. */
#define SPLITMIX_GAMMA 0x9e3779b97f4a7c15ull
#define SPLITMIX_MUL1 0xbf58476d1ce4e5b9ull
#define SPLITMIX_MUL2 0x94d049bb133111ebull

/* 2^-53: turns the top 53 bits of a 64-bit draw into a double in [0, 1). */
#define RNG_DOUBLE_SCALE (1.0 / 9007199254740992.0)

struct cand {
    int32_t id;
    float logit;   /* after penalties; NaN replaced by -inf and +inf by FLT_MAX */
    float p;       /* scratch: unnormalised probability during the draw */
};

struct ork_sampler {
    struct ork_sampler_params params;
    int32_t n_vocab;
    uint64_t seed;            /* effective seed (never ORK_SEED_RANDOM) */
    uint64_t rng[4];          /* xoshiro256** state */

    struct cand *cand;        /* (n_vocab) candidates, rebuilt on every sample */

    /* Penalty history: the multiset of the last `penalty_last_n` accepted tokens. */
    int32_t *ring;            /* (ring_cap) accepted ids in arrival order; NULL when last_n == -1 */
    int32_t ring_cap, ring_len, ring_head;   /* head: index of the oldest entry */
    uint32_t *count;          /* (n_vocab) occurrences of each id in the window */
    int32_t *distinct;        /* (n_vocab) ids with count > 0, unordered */
    int32_t *distinct_pos;    /* (n_vocab) position of an id in `distinct`, or -1 */

    /* Grammar (NULL when none): the matcher, the allowed mask of the current step, and the id
     * the last sample returned (the accept that advances the grammar), or -1. */
    struct ork_grammar_matcher *gm;
    uint8_t *allowed;         /* (n_vocab) */
    int32_t last_sampled;
    int32_t n_distinct;
};

/* ---------------------------------------------------------------------------------------------
 * RNG */

static uint64_t splitmix64_next(uint64_t *x)
{
    uint64_t z = (*x += SPLITMIX_GAMMA);
    z = (z ^ (z >> 30)) * SPLITMIX_MUL1;
    z = (z ^ (z >> 27)) * SPLITMIX_MUL2;
    return z ^ (z >> 31);
}

static inline uint64_t rotl64(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

/* xoshiro256** (Blackman and Vigna, 2018): the published recurrence, written from its
 * definition. Its state must not be all zero, which splitmix64 seeding guarantees in practice. */
static uint64_t rng_next(uint64_t s[4])
{
    uint64_t result = rotl64(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl64(s[3], 45);
    return result;
}

static double rng_uniform(uint64_t s[4])
{
    return (double)(rng_next(s) >> 11) * RNG_DOUBLE_SCALE;
}

static void rng_seed(struct ork_sampler *s)
{
    uint64_t x = s->seed;
    for (int i = 0; i < 4; i++)
        s->rng[i] = splitmix64_next(&x);
}

static uint64_t seed_from_clock(void)
{
    struct timespec rt = { 0 }, mono = { 0 };
    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    uint64_t x = (uint64_t)rt.tv_sec * 1000000000ull + (uint64_t)rt.tv_nsec;
    x ^= ((uint64_t)mono.tv_nsec << 32) ^ (uint64_t)mono.tv_sec;
    uint64_t seed = splitmix64_next(&x);
    return seed == ORK_SEED_RANDOM ? seed - 1 : seed;
}

/* ---------------------------------------------------------------------------------------------
 * Parameters */

void ork_sampler_params_default(struct ork_sampler_params *p)
{
    if (!p)
        return;
    memset(p, 0, sizeof(*p));
    p->temp = 0.8f;
    p->top_k = 40;
    p->top_p = 0.95f;
    p->min_p = 0.05f;
    p->repeat_penalty = 1.0f;
    p->presence_penalty = 0.0f;
    p->frequency_penalty = 0.0f;
    p->penalty_last_n = 64;
    p->seed = ORK_SEED_RANDOM;
}

static int params_validate(const struct ork_sampler_params *p, int32_t n_vocab)
{
    if (n_vocab <= 0)
        return ork_errorf(ORK_EINVAL, "sampler: n_vocab %d must be > 0", n_vocab);
    if (!isfinite(p->temp))
        return ork_errorf(ORK_EINVAL, "sampler: temp must be a finite number");
    if (isnan(p->top_p) || p->top_p < 0.0f)
        return ork_errorf(ORK_EINVAL, "sampler: top_p %g must be >= 0 (>= 1 disables it)",
                          (double)p->top_p);
    if (isnan(p->min_p) || p->min_p > 1.0f)
        return ork_errorf(ORK_EINVAL, "sampler: min_p %g must be <= 1 (<= 0 disables it)",
                          (double)p->min_p);
    if (!isfinite(p->repeat_penalty) || p->repeat_penalty <= 0.0f)
        return ork_errorf(ORK_EINVAL, "sampler: repeat_penalty %g must be finite and > 0 "
                          "(1 disables it)", (double)p->repeat_penalty);
    if (!isfinite(p->presence_penalty))
        return ork_errorf(ORK_EINVAL, "sampler: presence_penalty must be a finite number");
    if (!isfinite(p->frequency_penalty))
        return ork_errorf(ORK_EINVAL, "sampler: frequency_penalty must be a finite number");
    if (p->penalty_last_n < -1 || p->penalty_last_n > SAMPLER_MAX_LAST_N)
        return ork_errorf(ORK_EINVAL, "sampler: penalty_last_n %d must be in [-1, %d]",
                          p->penalty_last_n, SAMPLER_MAX_LAST_N);
    if (p->grammar && !p->grammar_vocab)
        return ork_errorf(ORK_EINVAL, "sampler: a grammar needs grammar_vocab (the model's "
                          "tokens)");
    if (p->grammar && ork_grammar_vocab_n(p->grammar_vocab) != n_vocab)
        return ork_errorf(ORK_EINVAL, "sampler: grammar_vocab has %d tokens, the model %d",
                          ork_grammar_vocab_n(p->grammar_vocab), n_vocab);
    return 0;
}

static bool penalties_active(const struct ork_sampler_params *p)
{
    return p->penalty_last_n != 0 && (p->repeat_penalty != 1.0f || p->presence_penalty != 0.0f ||
                                      p->frequency_penalty != 0.0f);
}

/* ---------------------------------------------------------------------------------------------
 * Lifecycle */

void ork_sampler_free(struct ork_sampler *s)
{
    if (!s)
        return;
    ork_free(s->cand);
    ork_free(s->ring);
    ork_free(s->count);
    ork_free(s->distinct);
    ork_free(s->distinct_pos);
    ork_grammar_matcher_free(s->gm);
    ork_free(s->allowed);
    ork_free(s);
}

static void history_clear(struct ork_sampler *s)
{
    for (int32_t i = 0; i < s->n_distinct; i++) {
        int32_t id = s->distinct[i];
        s->count[id] = 0;
        s->distinct_pos[id] = -1;
    }
    s->n_distinct = 0;
    s->ring_len = 0;
    s->ring_head = 0;
}

int ork_sampler_create(const struct ork_sampler_params *p, int32_t n_vocab, struct ork_sampler **out)
{
    if (!p || !out)
        return ork_errorf(ORK_EINVAL, "sampler: params and out must not be NULL");
    *out = NULL;
    int ret = params_validate(p, n_vocab);
    if (ret < 0)
        return ret;

    struct ork_sampler *s = ork_calloc(1, sizeof(*s));
    if (!s)
        return ork_errorf(ORK_ENOMEM, "sampler: cannot allocate state");
    s->params = *p;
    s->n_vocab = n_vocab;
    s->cand = ork_calloc((size_t)n_vocab, sizeof(*s->cand));
    s->count = ork_calloc((size_t)n_vocab, sizeof(*s->count));
    s->distinct = ork_calloc((size_t)n_vocab, sizeof(*s->distinct));
    s->distinct_pos = ork_calloc((size_t)n_vocab, sizeof(*s->distinct_pos));
    if (!s->cand || !s->count || !s->distinct || !s->distinct_pos)
        goto err_nomem;
    if (p->penalty_last_n > 0) {
        s->ring_cap = p->penalty_last_n;
        s->ring = ork_calloc((size_t)s->ring_cap, sizeof(*s->ring));
        if (!s->ring)
            goto err_nomem;
    }
    for (int32_t i = 0; i < n_vocab; i++)
        s->distinct_pos[i] = -1;
    s->last_sampled = -1;
    if (p->grammar) {
        if ((ret = ork_grammar_matcher_create(p->grammar, &s->gm)) < 0) {
            ork_sampler_free(s);
            return ret;
        }
        if (!(s->allowed = ork_calloc((size_t)n_vocab, 1)))
            goto err_nomem;
    }

    s->seed = p->seed == ORK_SEED_RANDOM ? seed_from_clock() : p->seed;
    rng_seed(s);
    *out = s;
    return 0;

err_nomem:
    ork_sampler_free(s);
    return ork_errorf(ORK_ENOMEM, "sampler: cannot allocate buffers for n_vocab %d", n_vocab);
}

void ork_sampler_reset(struct ork_sampler *s)
{
    if (!s)
        return;
    history_clear(s);
    rng_seed(s);
    ork_sampler_grammar_restart(s);
}

void ork_sampler_grammar_restart(struct ork_sampler *s)
{
    if (!s || !s->gm)
        return;
    ork_grammar_matcher_reset(s->gm);
    s->last_sampled = -1;
}

uint32_t ork_sampler_kept(const struct ork_sampler *s)
{
    if (s->params.temp <= 0.0f)
        return 1;
    return s->params.top_k > 0 ? (uint32_t)s->params.top_k : 0;
}

uint64_t ork_sampler_seed(const struct ork_sampler *s)
{
    return s ? s->seed : 0;
}

/* ---------------------------------------------------------------------------------------------
 * Penalty history */

static void count_add(struct ork_sampler *s, int32_t id)
{
    if (s->count[id]++ == 0) {
        s->distinct_pos[id] = s->n_distinct;
        s->distinct[s->n_distinct++] = id;
    }
}

static void count_remove(struct ork_sampler *s, int32_t id)
{
    if (--s->count[id] == 0) {
        int32_t pos = s->distinct_pos[id];
        int32_t last = s->distinct[--s->n_distinct];
        s->distinct[pos] = last;
        s->distinct_pos[last] = pos;
        s->distinct_pos[id] = -1;
    }
}

void ork_sampler_accept(struct ork_sampler *s, int32_t id)
{
    if (!s)
        return;
    if (id < 0 || id >= s->n_vocab) {
        ORK_LOGW("sampler: accept: token id %d outside the vocabulary [0, %d); ignored", id,
                 s->n_vocab);
        return;
    }
    if (s->gm && id == s->last_sampled) {
        int ret = ork_grammar_matcher_accept_token(s->gm, s->params.grammar_vocab, id);
        if (ret < 0)
            ORK_LOGW("sampler: accept: %s", ork_error_describe(ret));
        s->last_sampled = -1;
    }
    if (s->params.penalty_last_n == 0)
        return;
    if (s->params.penalty_last_n == -1) {   /* whole history: counts only */
        count_add(s, id);
        return;
    }
    if (s->ring_len == s->ring_cap) {       /* window full: the oldest token leaves */
        count_remove(s, s->ring[s->ring_head]);
        s->ring[s->ring_head] = id;
        s->ring_head = (s->ring_head + 1) % s->ring_cap;
    } else {
        s->ring[(s->ring_head + s->ring_len) % s->ring_cap] = id;
        s->ring_len++;
    }
    count_add(s, id);
}

/* The penalty applied to one logit with `cnt` > 0 occurrences in the window: the repeat penalty
 * divides positive logits and multiplies non-positive ones; then frequency * count and the
 * presence penalty (once) are subtracted (llama.cpp's definitions). */
static float penalize(const struct ork_sampler_params *p, float logit, uint32_t cnt)
{
    if (logit <= 0.0f)
        logit *= p->repeat_penalty;
    else
        logit /= p->repeat_penalty;
    return logit - (float)cnt * p->frequency_penalty - p->presence_penalty;
}

void ork_sampler_apply_penalties(const struct ork_sampler *s, float *logits)
{
    if (!s || !logits || !penalties_active(&s->params))
        return;
    for (int32_t i = 0; i < s->n_distinct; i++) {
        int32_t id = s->distinct[i];
        logits[id] = penalize(&s->params, logits[id], s->count[id]);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Candidate ordering: higher logit first, ties broken by lower id (a strict total order, so
 * every result is deterministic). */

static inline bool cand_before(const struct cand *a, const struct cand *b)
{
    return a->logit > b->logit || (a->logit == b->logit && a->id < b->id);
}

static inline void cand_swap(struct cand *a, struct cand *b)
{
    struct cand t = *a;
    *a = *b;
    *b = t;
}

/* Sift down in a heap whose root is the WORST element of c[0..n). */
static void worst_heap_sift(struct cand *c, size_t n, size_t i)
{
    struct cand x = c[i];
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= n)
            break;
        if (child + 1 < n && cand_before(&c[child], &c[child + 1]))
            child++;                          /* the worse of the two children */
        if (!cand_before(&x, &c[child]))
            break;
        c[i] = c[child];
        i = child;
    }
    c[i] = x;
}

/* Partial selection and sort: afterwards c[0..k) holds the k best of c[0..n), best first
 * (1 <= k <= n). A heap of the k best seen so far, with the worst at its root, is kept while
 * scanning: O(n + k log n) on typical logits, and no full sort when k is small. The elements of
 * c[k..n) are permuted, never lost. */
static void select_best_sorted(struct cand *c, size_t n, size_t k)
{
    for (size_t i = k / 2; i-- > 0;)
        worst_heap_sift(c, k, i);
    for (size_t i = k; i < n; i++) {
        if (cand_before(&c[i], &c[0])) {
            cand_swap(&c[0], &c[i]);
            worst_heap_sift(c, k, 0);
        }
    }
    for (size_t end = k; end > 1; end--) {   /* heapsort: the worst goes to the back */
        cand_swap(&c[0], &c[end - 1]);
        worst_heap_sift(c, end - 1, 0);
    }
}

static float sanitize_logit(float x)
{
    if (isnan(x))
        return -INFINITY;
    if (x > FLT_MAX)
        return FLT_MAX;
    return x;
}

/* ---------------------------------------------------------------------------------------------
 * The chain */

/* Walk the best-first candidates c[0..n): the length of the smallest prefix whose probability
 * mass (exp(logit - max) summed) reaches `target`, stopping early at the first logit below
 * `min_logit`. *reached says whether the walk ended for one of those two reasons. */
static size_t top_p_prefix(const struct cand *c, size_t n, float max, double target,
                           float min_logit, bool *reached)
{
    double cum = 0.0;
    *reached = true;
    for (size_t keep = 0; keep < n; keep++) {
        if (c[keep].logit < min_logit)
            return keep;
        cum += exp((double)c[keep].logit - (double)max);
        if (cum >= target)
            return keep + 1;
    }
    *reached = false;
    return n;
}

/* Draw from c[0..n) with probabilities softmax(logit / temp). */
static int32_t draw(struct ork_sampler *s, struct cand *c, size_t n, float temp)
{
    float max = c[0].logit;
    for (size_t i = 1; i < n; i++)
        if (c[i].logit > max)
            max = c[i].logit;
    if (max == -INFINITY)     /* everything masked: fall back to the first candidate */
        return c[0].id;
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        c[i].p = expf((c[i].logit - max) / temp);
        sum += (double)c[i].p;
    }
    double r = rng_uniform(s->rng) * sum;
    double acc = 0.0;
    for (size_t i = 0; i < n; i++) {
        acc += (double)c[i].p;
        if (r < acc)
            return c[i].id;
    }
    for (size_t i = n; i-- > 0;)   /* rounding put r past the total: last non-zero candidate */
        if (c[i].p > 0.0f)
            return c[i].id;
    return c[0].id;
}

/* Steps 0-4 of the chain: the candidates the draw picks from, in c[0..*n_out). Returns 1 with
 * *greedy_id set when the sampler is greedy (no candidate set), 0, or a negative error. */
static int chain_select(struct ork_sampler *s, const float *logits, size_t *n_out,
                        int32_t *greedy_id);

static int32_t sample_chain(struct ork_sampler *s, const float *logits)
{
    size_t n = 0;
    int32_t greedy_id = -1;
    int ret = chain_select(s, logits, &n, &greedy_id);
    if (ret < 0)
        return ret;
    if (ret == 1)
        return greedy_id;
    return draw(s, s->cand, n, s->params.temp);
}

int32_t ork_sampler_sample(struct ork_sampler *s, const float *logits)
{
    int32_t id = sample_chain(s, logits);
    if (s && s->gm && id >= 0) {
        if (!s->allowed[id])   /* every allowed token had a -inf logit */
            return ork_errorf(ORK_ERANGE, "sampler: no token the grammar allows has a finite "
                              "logit");
        s->last_sampled = id;
    }
    return id;
}

int ork_sampler_probs(struct ork_sampler *s, const float *logits, float *probs)
{
    if (!s || !probs)
        return ork_errorf(ORK_EINVAL, "sampler: probs: sampler and probs must not be NULL");
    size_t n = 0;
    int32_t greedy_id = -1;
    int ret = chain_select(s, logits, &n, &greedy_id);
    if (ret < 0)
        return ret;
    memset(probs, 0, (size_t)s->n_vocab * sizeof(float));
    if (ret == 1) {
        probs[greedy_id] = 1.0f;
        return 1;
    }
    /* The same weights draw() computes, normalised. */
    struct cand *c = s->cand;
    float max = c[0].logit, temp = s->params.temp;
    for (size_t i = 1; i < n; i++)
        if (c[i].logit > max)
            max = c[i].logit;
    if (max == -INFINITY) {
        probs[c[0].id] = 1.0f;
        return 1;
    }
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        c[i].p = expf((c[i].logit - max) / temp);
        sum += (double)c[i].p;
    }
    int kept = 0;
    for (size_t i = 0; i < n; i++) {
        probs[c[i].id] = (float)((double)c[i].p / sum);
        kept += c[i].p > 0.0f;
    }
    return kept;
}

int32_t ork_sampler_sample_probs(struct ork_sampler *s, const float *probs)
{
    if (!s || !probs)
        return ork_errorf(ORK_EINVAL, "sampler: sample_probs: sampler and probs must not be "
                          "NULL");
    double sum = 0.0;
    int32_t last = -1;
    for (int32_t i = 0; i < s->n_vocab; i++)
        if (probs[i] > 0.0f) {
            sum += (double)probs[i];
            last = i;
        }
    if (last < 0)
        return ork_errorf(ORK_ERANGE, "sampler: sample_probs: no token has a positive "
                          "probability");
    double r = rng_uniform(s->rng) * sum, acc = 0.0;
    int32_t id = last;   /* rounding put r past the total: the last non-zero token */
    for (int32_t i = 0; i < s->n_vocab; i++) {
        if (probs[i] <= 0.0f)
            continue;
        acc += (double)probs[i];
        if (r < acc) {
            id = i;
            break;
        }
    }
    ork_sampler_choose(s, id);
    return id;
}

double ork_sampler_uniform(struct ork_sampler *s)
{
    return rng_uniform(s->rng);
}

void ork_sampler_choose(struct ork_sampler *s, int32_t id)
{
    if (s && s->gm && id >= 0 && id < s->n_vocab)
        s->last_sampled = id;
}

const struct ork_sampler_params *ork_sampler_get_params(const struct ork_sampler *s)
{
    return &s->params;
}

bool ork_sampler_greedy(const struct ork_sampler *s)
{
    return s->params.temp <= 0.0f;
}

static int chain_select(struct ork_sampler *s, const float *logits, size_t *n_out,
                        int32_t *greedy_id)
{
    if (!s || !logits)
        return ork_errorf(ORK_EINVAL, "sampler: sample: sampler and logits must not be NULL");
    const struct ork_sampler_params *p = &s->params;
    struct cand *c = s->cand;
    size_t n = (size_t)s->n_vocab;

    /* 0. Grammar: tokens it does not allow are -inf from here on. */
    if (s->gm) {
        int ret = ork_grammar_matcher_allowed(s->gm, p->grammar_vocab, s->allowed);
        if (ret < 0)
            return ret;
        if (ret == 0)
            return ork_errorf(ORK_ERANGE, "sampler: the grammar allows no token of the "
                              "vocabulary here");
        for (size_t i = 0; i < n; i++) {
            c[i].id = (int32_t)i;
            c[i].logit = s->allowed[i] ? sanitize_logit(logits[i]) : -INFINITY;
        }
    } else {
        for (size_t i = 0; i < n; i++) {
            c[i].id = (int32_t)i;
            c[i].logit = sanitize_logit(logits[i]);
        }
    }

    /* 1. Penalties (candidates are indexed by id here). */
    if (penalties_active(p)) {
        for (int32_t i = 0; i < s->n_distinct; i++) {
            int32_t id = s->distinct[i];
            c[id].logit = sanitize_logit(penalize(p, c[id].logit, s->count[id]));
        }
    }

    /* Greedy: argmax, ties to the lowest id. Top-k/top-p/min-p always keep the argmax, so they
     * cannot change the result. */
    if (p->temp <= 0.0f) {
        size_t best = 0;
        for (size_t i = 1; i < n; i++)
            if (c[i].logit > c[best].logit)
                best = i;
        *greedy_id = c[best].id;
        return 1;
    }

    /* 2. Top-k: the k best, sorted, in c[0..k). */
    bool sorted = false;
    if (p->top_k > 0 && (size_t)p->top_k < n) {
        n = (size_t)p->top_k;
        select_best_sorted(c, (size_t)s->n_vocab, n);
        sorted = true;
    }

    float max = c[0].logit;
    for (size_t i = 1; i < n; i++)
        if (c[i].logit > max)
            max = c[i].logit;
    if (max == -INFINITY) {
        *n_out = n;
        return 0;
    }

    /* 4 (done together with 3, same result). Min-p keeps p_i >= min_p * p_max, i.e.
     * logit_i >= max + ln(min_p): a threshold on logits, unaffected by renormalisation. Top-p
     * and min-p both keep a best-first prefix, so their intersection does not depend on the
     * order they run in, provided top-p's probabilities are normalised over the top-k set. */
    float min_logit = -INFINITY;
    if (p->min_p > 0.0f)
        min_logit = max + logf(p->min_p);

    /* 3. Top-p: the smallest best-first prefix whose probability reaches top_p (at least one). */
    if (p->top_p < 1.0f) {
        double z = 0.0;   /* softmax normaliser over the top-k set, at temperature 1 */
        for (size_t i = 0; i < n; i++)
            z += exp((double)c[i].logit - (double)max);
        double target = (double)p->top_p * z;
        bool reached;
        size_t keep;
        if (sorted) {
            keep = top_p_prefix(c, n, max, target, min_logit, &reached);
        } else {
            /* Without top-k, sort only plausible members: tokens with probability below
             * eps = (1 - top_p) / n together hold less than 1 - top_p, so the prefix reaches
             * top_p before any of them. Move the others to the front and sort just those. */
            float thr = (float)((double)max + log((1.0 - (double)p->top_p) * z / (double)n));
            if (min_logit > thr)
                thr = min_logit;
            size_t m = 0;
            for (size_t i = 0; i < n; i++)
                if (c[i].logit >= thr)
                    cand_swap(&c[m++], &c[i]);
            select_best_sorted(c, m, m);   /* m >= 1: the maximum passes both thresholds */
            keep = top_p_prefix(c, m, max, target, min_logit, &reached);
            if (!reached && m < n && thr > min_logit) {
                /* Rounding left the prefix short of top_p: sort everything (rare). */
                select_best_sorted(c, n, n);
                keep = top_p_prefix(c, n, max, target, min_logit, &reached);
            }
        }
        n = keep ? keep : 1;
    } else if (p->min_p > 0.0f) {
        size_t keep = 0;
        for (size_t i = 0; i < n; i++)
            if (c[i].logit >= min_logit)
                c[keep++] = c[i];
        n = keep ? keep : 1;
    }

    /* 5-6. Temperature and draw: the caller's. */
    *n_out = n;
    return 0;
}
