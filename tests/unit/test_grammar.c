/* test_grammar.c -- GBNF grammars: parsing, matching, errors with line:column, the token filter
 * against a brute-force check of every token, and sampling under a grammar (random logits on a
 * synthetic vocabulary, and the real stories260K model and vocabulary through the engine API):
 * every sampled text must be accepted by the grammar. Prints the filter's cost per token on the
 * 152k-token Qwen3 vocabulary when that fixture is present (docs/sampling.md quotes it).
 *
 * Expected results come from the grammars' definitions (written out by hand here), and the
 * filter's from feeding each token's bytes to a fresh matcher. */
#include "ork_test.h"

#include <ork-engine/engine.h>
#include <ork-engine/grammar.h>
#include <ork-engine/gguf.h>
#include <ork-engine/sampler.h>
#include <ork-engine/tokenizer.h>
#include <ork/alloc.h>
#include <ork/error.h>

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

static struct ork_grammar *parse(const char *text)
{
    struct ork_grammar *g = NULL;
    int ret = ork_grammar_parse(text, strlen(text), &g);
    if (ret < 0)
        fprintf(stderr, "parse failed: %s\n", ork_error_describe(ret));
    return g;
}

/* Does g accept the whole string s (fed in pieces of `chunk` bytes)? */
static bool matches_chunked(const struct ork_grammar *g, const char *s, size_t chunk)
{
    struct ork_grammar_matcher *m = NULL;
    if (ork_grammar_matcher_create(g, &m) < 0)
        return false;
    size_t n = strlen(s);
    bool ok = true;
    for (size_t i = 0; i < n && ok; i += chunk)
        ok = ork_grammar_matcher_accept_bytes(m, s + i, n - i < chunk ? n - i : chunk) == 0;
    ok = ok && ork_grammar_matcher_can_end(m);
    ork_grammar_matcher_free(m);
    return ok;
}

static bool matches(const struct ork_grammar *g, const char *s)
{
    bool a = matches_chunked(g, s, 1 << 20), b = matches_chunked(g, s, 1);
    if (a != b)
        fprintf(stderr, "chunking changed the result for '%s'\n", s);
    return a && b;
}

static const char *JSON_GBNF =
    "# JSON, as the format's users write it\n"
    "root   ::= object\n"
    "value  ::= object | array | string | number | (\"true\" | \"false\" | \"null\") ws\n"
    "\n"
    "object ::=\n"
    "  \"{\" ws (\n"
    "            string \":\" ws value\n"
    "    (\",\" ws string \":\" ws value)*\n"
    "  )? \"}\" ws\n"
    "\n"
    "array  ::=\n"
    "  \"[\" ws (\n"
    "            value\n"
    "    (\",\" ws value)*\n"
    "  )? \"]\" ws\n"
    "\n"
    "string ::=\n"
    "  \"\\\"\" (\n"
    "    [^\"\\\\\\x7F\\x00-\\x1F] |\n"
    "    \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4}) # escapes\n"
    "  )* \"\\\"\" ws\n"
    "\n"
    "number ::= (\"-\"? ([0-9] | [1-9] [0-9]{0,15})) (\".\" [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws\n"
    "ws ::= | \" \" | \"\\n\" [ \\t]{0,20}\n";

static void test_json_grammar(void)
{
    struct ork_grammar *g = parse(JSON_GBNF);
    REQUIRE(g);
    CHECK(matches(g, "{}"));
    CHECK(matches(g, "{\"a\": 1}"));
    CHECK(matches(g, "{\"a\": [1, 2.5e3, true, null, \"x\\n\\u00e9\"], \"b\": {\"c\": false}}"));
    CHECK(matches(g, "{\"caf\xc3\xa9\": \"\xe6\x97\xa5\xe6\x9c\xac\"}"));   /* UTF-8 in strings */
    CHECK(!matches(g, "{"));
    CHECK(!matches(g, "[]"));               /* root is an object */
    CHECK(!matches(g, "{\"a\" 1}"));
    CHECK(!matches(g, "{\"a\": tru}"));
    CHECK(!matches(g, "{\"a\": \"\x01\"}"));  /* control character in a string */
    CHECK(!matches(g, "{\"a\": 1,}"));
    CHECK(!matches(g, "{\"\xff\": 1}"));      /* invalid UTF-8 */
    ork_grammar_free(g);
}

static void test_operators(void)
{
    struct ork_grammar *g = parse("root ::= \"a\"{2,3} \"b\"* (\"c\" | \"d\")+ \"e\"? [x-z]{2} .");
    REQUIRE(g);
    CHECK(matches(g, "aacxy!"));
    CHECK(matches(g, "aaabbbcdcdezz\xe2\x82\xac"));   /* '.' takes a 3-byte character */
    CHECK(!matches(g, "acxy!"));                       /* a{2,3}: one is too few */
    CHECK(!matches(g, "aaaacxy!"));                    /* four too many */
    CHECK(!matches(g, "aaxy!"));                       /* (c|d)+ needs one */
    CHECK(!matches(g, "aacxy"));                       /* '.' needs a character */
    CHECK(!matches(g, "aacxyzz"));
    ork_grammar_free(g);

    g = parse("root ::= x{,2} \"-\" y{3,}\nx ::= \"x\"\ny ::= [0-9]");
    REQUIRE(g);
    CHECK(matches(g, "-123"));
    CHECK(matches(g, "xx-12345"));
    CHECK(!matches(g, "xxx-123"));
    CHECK(!matches(g, "-12"));
    ork_grammar_free(g);

    /* negated classes, escapes, rule continued on a line starting with '|', comments */
    g = parse("root ::= item # first\n"
              "   | \"\\x41\\u00e9\\U0001F600\" # second\n"
              "item ::= [^a-c\\]] [\\-\\n]\n");
    REQUIRE(g);
    CHECK(matches(g, "d-"));
    CHECK(matches(g, "\xe2\x82\xac\n"));
    CHECK(matches(g, "A\xc3\xa9\xf0\x9f\x98\x80"));
    CHECK(!matches(g, "a-"));
    CHECK(!matches(g, "]-"));
    CHECK(!matches(g, "dx"));
    ork_grammar_free(g);

    /* recursion that is not left recursion; an empty alternative */
    g = parse("root ::= \"(\" root \")\" | \"\"");
    REQUIRE(g);
    CHECK(matches(g, ""));
    CHECK(matches(g, "((()))"));
    CHECK(!matches(g, "(()"));
    ork_grammar_free(g);
}

static void check_error(const char *text, const char *want)
{
    struct ork_grammar *g = NULL;
    int ret = ork_grammar_parse(text, strlen(text), &g);
    CHECK(ret == ORK_EFORMAT);
    CHECK(g == NULL);
    const char *msg = ork_error_message();
    if (!strstr(msg, want)) {
        fprintf(stderr, "grammar %s\n  message '%s'\n  wanted  '%s'\n", text, msg, want);
        CHECK(!"error message");
    }
}

static void test_errors(void)
{
    check_error("root ::= foo", "1:10: rule 'foo' is used but not defined");
    check_error("root ::= \"abc", "1:10: unterminated string literal");
    check_error("root ::= [a-", "1:10: unterminated character class");
    check_error("a ::= \"x\"", "no 'root' rule");
    check_error("root ::= root \"x\"", "'root' is left-recursive");
    check_error("root ::= a\na ::= b? a\nb ::= \"b\"", "'a' is left-recursive");
    check_error("root ::= \"x\"{3,2}", "1:13: repetition {3,2} has max below min");
    check_error("root ::= \"x\"{20000}", "repetition bound above 10000");
    check_error("root ::= (\"a\"", "1:10: expected ')'");
    check_error("root ::= \"a\")", "1:13: unmatched ')'");
    check_error("root ::= \"a\"\n\nroot ::= \"b\"", "3:1: rule 'root' is defined twice");
    check_error("root ::= \"\\q\"", "1:11: unknown escape '\\q'");
    check_error("root ::= [z-a]", "reversed");
    check_error("root = \"a\"", "1:6: expected '::=' after the rule name 'root'");
    check_error("root ::= \"a\" @", "1:14: unexpected '@'");
    check_error("root ::= \"\\xZZ\"", "'Z' is not a hex digit");
}

/* ---- the token filter ---------------------------------------------------------------------- */

#define SYN_N 400
static char syn_bytes[SYN_N][8];
static const char *syn_pieces[SYN_N];
static size_t syn_lens[SYN_N];
static bool syn_eog[SYN_N];

static uint32_t lcg = 987654321u;
static uint32_t rnd(uint32_t n)
{
    lcg = lcg * 1664525u + 1013904223u;   /* Numerical Recipes LCG constants */
    return (lcg >> 8) % n;
}

/* A vocabulary of short strings over JSON's characters, with the 256 single bytes, one
 * end-of-generation token and one empty (control) token. */
static struct ork_grammar_vocab *synthetic_vocab(void)
{
    static const char alpha[] = "{}[]\":, 0123456789.-eatrufsnl\\";
    for (int i = 0; i < SYN_N; i++) {
        size_t len;
        if (i < 256) {
            syn_bytes[i][0] = (char)i;
            len = 1;
        } else {
            len = 1 + rnd(6);
            for (size_t k = 0; k < len; k++)
                syn_bytes[i][k] = alpha[rnd(sizeof alpha - 1)];
        }
        syn_pieces[i] = syn_bytes[i];
        syn_lens[i] = len;
        syn_eog[i] = false;
    }
    syn_lens[0] = 0;        /* a control token: no text */
    syn_eog[SYN_N - 1] = true;
    struct ork_grammar_vocab *v = NULL;
    if (ork_grammar_vocab_create_raw(SYN_N, syn_pieces, syn_lens, syn_eog, &v) < 0)
        return NULL;
    return v;
}

/* allowed[] must equal: the token's bytes extend the text (a fresh matcher fed text + token),
 * and for the end-of-generation token, the text is complete. */
static void check_filter(const struct ork_grammar *g, const struct ork_grammar_vocab *v,
                         const char *text, size_t text_len, const uint8_t *allowed)
{
    for (int i = 0; i < SYN_N; i++) {
        bool want;
        struct ork_grammar_matcher *m = NULL;
        if (ork_grammar_matcher_create(g, &m) < 0 ||
            ork_grammar_matcher_accept_bytes(m, text, text_len) < 0) {
            CHECK(!"replaying the text");
            ork_grammar_matcher_free(m);
            return;
        }
        if (syn_eog[i])
            want = ork_grammar_matcher_can_end(m);
        else
            want = syn_lens[i] > 0 &&
                   ork_grammar_matcher_accept_bytes(m, syn_pieces[i], syn_lens[i]) == 0;
        ork_grammar_matcher_free(m);
        if (want != (allowed[i] != 0)) {
            fprintf(stderr, "token %d ('%.*s') after '%.*s': allowed %d, want %d\n", i,
                    (int)syn_lens[i], syn_pieces[i], (int)text_len, text, allowed[i], want);
            CHECK(!"filter");
            return;
        }
    }
}

static void test_filter_matches_brute_force(void)
{
    struct ork_grammar *g = parse(JSON_GBNF);
    struct ork_grammar_vocab *v = synthetic_vocab();
    struct ork_grammar_matcher *m = NULL;
    REQUIRE(g && v && ork_grammar_matcher_create(g, &m) == 0);
    static uint8_t allowed[SYN_N];
    char text[4096];
    size_t len = 0;
    /* a random walk through allowed tokens, checking the filter at every step */
    for (int step = 0; step < 60; step++) {
        int n = ork_grammar_matcher_allowed(m, v, allowed);
        REQUIRE(n > 0);
        check_filter(g, v, text, len, allowed);
        int pick = (int)rnd((uint32_t)n), id = -1;
        for (int i = 0; i < SYN_N && id < 0; i++)
            if (allowed[i] && pick-- == 0)
                id = i;
        REQUIRE(id >= 0);
        if (syn_eog[id])
            break;
        REQUIRE(ork_grammar_matcher_accept_token(m, v, id) == 0);
        memcpy(text + len, syn_pieces[id], syn_lens[id]);
        len += syn_lens[id];
    }
    ork_grammar_matcher_free(m);
    ork_grammar_vocab_free(v);
    ork_grammar_free(g);
}

/* The filter cache changes nothing: on random walks through several grammars, a matcher with
 * a small cache (every walk stored, so entries are evicted and reused) gives the same allowed
 * tokens and counts as one without, at every step, also when calls alternate between two
 * vocabularies (the cache must not answer for the other one). */
static void test_filter_cache_equals_uncached(void)
{
    static const char *grammars[] = {
        NULL,   /* JSON_GBNF */
        "root ::= \"a\"{2,3} \"b\"* (\"c\" | \"d\")+ \"e\"? [x-z]{2} .",
        "root ::= \"(\" root \")\" | \"\"",
        "root ::= \"[\" (num (\", \" num){0,3})? \"]\"\nnum ::= \"-\"? [1-9] [0-9]{0,2}",
        "root ::= (\"\\\"\" [^\"]* \"\\\"\" | [\u00e0-\u00ff]+ | \"\xe6\x97\xa5\")+",
    };
    struct ork_grammar_vocab *va = synthetic_vocab(), *vb = NULL;
    REQUIRE(va);
    /* the second vocabulary: the same pieces in reverse id order */
    static const char *rp[SYN_N];
    static size_t rl[SYN_N];
    static bool re[SYN_N];
    for (int i = 0; i < SYN_N; i++)
        rp[i] = syn_pieces[SYN_N - 1 - i], rl[i] = syn_lens[SYN_N - 1 - i],
        re[i] = syn_eog[SYN_N - 1 - i];
    REQUIRE(ork_grammar_vocab_create_raw(SYN_N, rp, rl, re, &vb) == 0);
    static uint8_t a1[SYN_N], a2[SYN_N];
    uint64_t hits = 0;
    for (size_t gi = 0; gi < sizeof grammars / sizeof grammars[0]; gi++) {
        struct ork_grammar *g = parse(grammars[gi] ? grammars[gi] : JSON_GBNF);
        struct ork_grammar_matcher *mc = NULL, *mn = NULL;
        REQUIRE(g && ork_grammar_matcher_create(g, &mc) == 0 &&
                ork_grammar_matcher_create(g, &mn) == 0);
        REQUIRE(ork_grammar_matcher_set_cache(mc, 3, 0) == 0);
        REQUIRE(ork_grammar_matcher_set_cache(mn, 0, 0) == 0);
        for (int walk = 0; walk < 8; walk++) {
            ork_grammar_matcher_reset(mc);
            ork_grammar_matcher_reset(mn);
            for (int step = 0; step < 40; step++) {
                const struct ork_grammar_vocab *v = rnd(3) == 0 ? vb : va;
                int n1 = ork_grammar_matcher_allowed(mc, v, a1);
                int n2 = ork_grammar_matcher_allowed(mn, v, a2);
                CHECK_EQ_INT(n1, n2);
                if (memcmp(a1, a2, SYN_N)) {
                    fprintf(stderr, "grammar %zu walk %d step %d: cached filter differs\n", gi,
                            walk, step);
                    CHECK(!"cache");
                    break;
                }
                if (v == vb)
                    continue;
                if (n1 <= 0)
                    break;
                int pick = (int)rnd((uint32_t)n1), id = -1;
                for (int i = 0; i < SYN_N && id < 0; i++)
                    if (a1[i] && pick-- == 0)
                        id = i;
                if (syn_eog[id])
                    break;
                CHECK(ork_grammar_matcher_accept_token(mc, va, id) == 0);
                CHECK(ork_grammar_matcher_accept_token(mn, va, id) == 0);
            }
        }
        struct ork_grammar_cache_stats st;
        ork_grammar_matcher_cache_stats(mc, &st);
        hits += st.hits;
        ork_grammar_matcher_cache_stats(mn, &st);
        CHECK(st.hits == 0 && st.stored == 0);
        ork_grammar_matcher_free(mc);
        ork_grammar_matcher_free(mn);
        ork_grammar_free(g);
    }
    printf("  filter cache: %llu hits over the walks\n", (unsigned long long)hits);
    CHECK(hits > 100);   /* the walks did reuse entries */
    ork_grammar_vocab_free(va);
    ork_grammar_vocab_free(vb);
}

/* Sampling with random logits never leaves the grammar, and ends only where it may. */
static void test_sampler_respects_grammar(void)
{
    struct ork_grammar *g = parse("root ::= \"[\" (num (\", \" num){0,3})? \"]\"\n"
                                  "num ::= \"-\"? [1-9] [0-9]{0,2}");
    struct ork_grammar_vocab *v = synthetic_vocab();
    REQUIRE(g && v);
    for (int run = 0; run < 20; run++) {
        struct ork_sampler_params p;
        ork_sampler_params_default(&p);
        p.temp = run % 4 == 0 ? 0.0f : 1.5f;
        p.top_k = run % 3 == 0 ? 0 : 40;
        p.seed = (uint64_t)run;
        p.grammar = g;
        p.grammar_vocab = v;
        struct ork_sampler *s = NULL;
        REQUIRE(ork_sampler_create(&p, SYN_N, &s) == 0);
        char text[512];
        size_t len = 0;
        bool ended = false;
        float logits[SYN_N];
        for (int step = 0; step < 64 && !ended; step++) {
            for (int i = 0; i < SYN_N; i++)
                logits[i] = (float)rnd(1000) / 100.0f;
            ork_sampler_accept(s, 5);   /* a "prompt" token: must not advance the grammar */
            int32_t id = ork_sampler_sample(s, logits);
            REQUIRE(id >= 0 && id < SYN_N);
            ork_sampler_accept(s, id);
            if (syn_eog[id]) {
                ended = true;
                break;
            }
            REQUIRE(len + syn_lens[id] < sizeof text);
            memcpy(text + len, syn_pieces[id], syn_lens[id]);
            len += syn_lens[id];
        }
        text[len] = 0;
        CHECK(ended);
        CHECK(matches(g, text));
        ork_sampler_free(s);
    }
    ork_grammar_vocab_free(v);
    ork_grammar_free(g);
}

static void test_sampler_grammar_params(void)
{
    struct ork_grammar *g = parse("root ::= \"a\"");
    struct ork_grammar_vocab *v = synthetic_vocab();
    REQUIRE(g && v);
    struct ork_sampler_params p;
    ork_sampler_params_default(&p);
    p.grammar = g;
    struct ork_sampler *s = NULL;
    CHECK_EQ_INT(ork_sampler_create(&p, SYN_N, &s), ORK_EINVAL);   /* no vocabulary */
    p.grammar_vocab = v;
    CHECK_EQ_INT(ork_sampler_create(&p, SYN_N + 1, &s), ORK_EINVAL);   /* wrong size */
    REQUIRE(ork_sampler_create(&p, SYN_N, &s) == 0);
    /* every allowed token at -inf: an error, not a disallowed token */
    float logits[SYN_N];
    for (int i = 0; i < SYN_N; i++)
        logits[i] = i == 'a' ? -INFINITY : 1.0f;
    CHECK(ork_sampler_sample(s, logits) < 0);
    logits['a'] = 0.0f;
    CHECK_EQ_INT(ork_sampler_sample(s, logits), 'a');
    ork_sampler_accept(s, 'a');
    CHECK_EQ_INT(ork_sampler_sample(s, logits), SYN_N - 1);   /* only the end is left */
    ork_sampler_free(s);
    ork_grammar_vocab_free(v);
    ork_grammar_free(g);
}

/* ---- the real model -------------------------------------------------------------------------- */

struct sink {
    char text[8192];
    size_t len;
};

static int on_text(void *user, const char *t, size_t n)
{
    struct sink *s = user;
    if (s->len + n < sizeof s->text) {
        memcpy(s->text + s->len, t, n);
        s->len += n;
        s->text[s->len] = 0;
    }
    return 0;
}

static bool g_model_skipped;

static void test_stories260k_under_grammars(void)
{
    const char *path = ork_test_fixture_opt("models/stories260K.gguf");
    if (!path) {
        printf("skip: models/stories260K.gguf not found (needs ../shared/fixtures)\n");
        g_model_skipped = true;
        return;
    }
    struct ork_model_params mp;
    ork_model_params_default(&mp);
    struct ork_model *model = NULL;
    REQUIRE(ork_model_load(path, &mp, &model) == 0);
    struct ork_grammar_vocab *v = NULL;
    REQUIRE(ork_grammar_vocab_create(ork_model_tokenizer(model), &v) == 0);
    static const char *const grammars[] = {
        "root ::= (\"yes\" | \"no\") \".\"",
        "root ::= \"Tom had \" [1-9] \" \" (\"cats\" | \"dogs\") \".\"",
        "root ::= \"{\\\"name\\\": \\\"\" [a-z]{1,8} \"\\\", \\\"age\\\": \" [1-9] [0-9]? \"}\"",
        "root ::= [a-z ]{4,30} \"!\"",
    };
    for (size_t k = 0; k < sizeof grammars / sizeof grammars[0]; k++) {
        struct ork_grammar *g = parse(grammars[k]);
        REQUIRE(g);
        for (int seed = 0; seed < 3; seed++) {
            struct ork_session_params sp;
            ork_session_params_default(&sp);
            sp.ctx_size = 256;
            sp.n_threads = 1;
            struct ork_session *sess = NULL;
            REQUIRE(ork_session_create(model, &sp, &sess) == 0);
            struct ork_gen_params gp;
            ork_gen_params_default(&gp);
            gp.sampling.temp = seed == 0 ? 0.0f : 1.0f;
            gp.sampling.seed = (uint64_t)seed;
            gp.sampling.grammar = g;
            gp.sampling.grammar_vocab = v;
            gp.n_predict = 96;
            static struct sink sk;
            memset(&sk, 0, sizeof sk);
            gp.on_text = on_text;
            gp.user = &sk;
            struct ork_sampler *smp = NULL;
            REQUIRE(ork_sampler_create(&gp.sampling, ork_model_config(model)->n_vocab, &smp) == 0);
            struct ork_gen_stats st;
            int ret = ork_generate(sess, smp, "Once upon a time", &gp, &st);
            CHECK(ret == 0);
            CHECK_EQ_INT(st.stop, ORK_STOP_EOG);
            if (!matches(g, sk.text))
                fprintf(stderr, "grammar %zu seed %d produced '%s'\n", k, seed, sk.text);
            CHECK(matches(g, sk.text));
            ork_sampler_free(smp);
            ork_session_free(sess);
        }
        ork_grammar_free(g);
    }
    ork_grammar_vocab_free(v);
    ork_model_free(model);
}

/* ---- cost per token on the Qwen3 vocabulary (printed, not asserted) --------------------------- */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void bench_state(const char *what, const struct ork_grammar *g,
                        const struct ork_grammar_vocab *v, const char *prefix, uint8_t *allowed)
{
    struct ork_grammar_matcher *m = NULL;
    if (ork_grammar_matcher_create(g, &m) < 0 ||
        ork_grammar_matcher_accept_bytes(m, prefix, strlen(prefix)) < 0) {
        CHECK(!"bench prefix");
        ork_grammar_matcher_free(m);
        return;
    }
    int n = 0, reps = 20;
    double t0 = now_ms();
    n = ork_grammar_matcher_allowed(m, v, allowed);   /* first call: the walk */
    double first = now_ms() - t0;
    t0 = now_ms();
    for (int r = 0; r < reps; r++)
        n = ork_grammar_matcher_allowed(m, v, allowed);
    double dt = (now_ms() - t0) / reps;
    CHECK(n > 0);
    printf("  grammar filter, qwen3 vocab (%d tokens), %-28s first %7.3f ms, again %7.3f ms "
           "(%d allowed)\n", ork_grammar_vocab_n(v), what, first, dt, n);
    ork_grammar_matcher_free(m);
}

/* A generation inside a free string: filter, accept one token, filter, ... (the state after
 * each character repeats). Prints the mean filter cost per token over the walk. */
static void bench_string_walk(const struct ork_grammar *g, const struct ork_grammar_vocab *v,
                              const struct ork_tokenizer *tok, uint8_t *allowed)
{
    struct ork_grammar_matcher *m = NULL;
    const char *prefix = "{\"name\": \"";
    if (ork_grammar_matcher_create(g, &m) < 0 ||
        ork_grammar_matcher_accept_bytes(m, prefix, strlen(prefix)) < 0) {
        CHECK(!"bench prefix");
        ork_grammar_matcher_free(m);
        return;
    }
    int32_t ids[64];
    const char *words = " the cat sat on the mat and looked at the moon for a long time";
    size_t n_ids = 0;
    REQUIRE(ork_tokenize(tok, words, strlen(words), false, false, ids, 64, &n_ids) == 0);
    REQUIRE(n_ids > 0);
    double t0 = now_ms();
    int steps = 0;
    for (size_t k = 0; k < n_ids; k++, steps++) {
        CHECK(ork_grammar_matcher_allowed(m, v, allowed) > 0);
        CHECK(allowed[ids[k]]);
        CHECK(ork_grammar_matcher_accept_token(m, v, ids[k]) == 0);
    }
    double dt = (now_ms() - t0) / steps;
    printf("  grammar filter, qwen3 vocab, %d tokens of one string: %7.3f ms per token\n", steps,
           dt);
    ork_grammar_matcher_free(m);
}

static void test_cost_qwen3_vocab(void)
{
    const char *path = ork_test_fixture_opt("vocab/qwen3-vocab.gguf");
    if (!path) {
        printf("skip: vocab/qwen3-vocab.gguf not found\n");
        return;
    }
    struct ork_gguf *gg = NULL;
    struct ork_tokenizer *tok = NULL;
    REQUIRE(ork_gguf_open(path, &gg) == 0);
    REQUIRE(ork_tokenizer_load(gg, &tok) == 0);
    double t0 = now_ms();
    struct ork_grammar_vocab *v = NULL;
    REQUIRE(ork_grammar_vocab_create(tok, &v) == 0);
    printf("  vocabulary trie built in %.1f ms\n", now_ms() - t0);
    struct ork_grammar *g = parse(JSON_GBNF);
    uint8_t *allowed = ork_malloc((size_t)ork_grammar_vocab_n(v));
    REQUIRE(g && allowed);
    bench_state("at the start", g, v, "", allowed);
    bench_state("after a key", g, v, "{\"name\"", allowed);
    bench_state("inside a string", g, v, "{\"name\": \"Al", allowed);
    bench_state("inside a number", g, v, "{\"n\": 12", allowed);
    bench_string_walk(g, v, tok, allowed);
    ork_free(allowed);
    ork_grammar_free(g);
    ork_grammar_vocab_free(v);
    ork_tokenizer_free(tok);
    ork_gguf_close(gg);
}

int main(void)
{
    RUN(test_json_grammar);
    RUN(test_operators);
    RUN(test_errors);
    RUN(test_filter_matches_brute_force);
    RUN(test_filter_cache_equals_uncached);
    RUN(test_sampler_respects_grammar);
    RUN(test_sampler_grammar_params);
    RUN(test_stories260k_under_grammars);
    RUN(test_cost_qwen3_vocab);
    int rc = ork_test_done();
    return rc == 0 && g_model_skipped ? 77 : rc;
}
