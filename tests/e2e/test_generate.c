/* test_generate.c -- the generation loop end to end on stories260K: greedy text from the prompt
 * string equals the reference continuation (vectors/stories260K-quant.greedy.json), streamed
 * chunks are valid UTF-8, the stop reasons (length, stop string, callback, context full) and
 * stats are right, a repeated prompt reuses the cache, and the decode loop allocates nothing
 * per token. */
#include "ork_test.h"
#include "golden/json_lite.h"

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork-engine/engine.h>

static struct ork_model *g_model;
static char g_want[4096];          /* the reference text of the 48 greedy tokens */

struct sink {
    char text[8192];
    size_t len;
    int chunks;
    int stop_after;                /* > 0: ask to stop after this many chunks */
    int bad_utf8;
};

static int utf8_valid(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (!k || i + k > n)
            return 0;
        for (size_t j = 1; j < k; j++)
            if ((s[i + j] & 0xc0) != 0x80)
                return 0;
        i += k;
    }
    return 1;
}

static int on_text(void *user, const char *t, size_t n)
{
    struct sink *s = user;
    if (!utf8_valid((const unsigned char *)t, n))
        s->bad_utf8++;
    if (s->len + n < sizeof s->text) {
        memcpy(s->text + s->len, t, n);
        s->len += n;
        s->text[s->len] = 0;
    }
    s->chunks++;
    return s->stop_after > 0 && s->chunks >= s->stop_after;
}

static struct ork_session *session(int ctx)
{
    struct ork_session_params sp;
    ork_session_params_default(&sp);
    sp.ctx_size = ctx;
    sp.n_threads = 2;
    struct ork_session *s = NULL;
    if (ork_session_create(g_model, &sp, &s) < 0)
        return NULL;
    return s;
}

static struct ork_sampler *greedy_sampler(void)
{
    struct ork_sampler_params p;
    ork_sampler_params_default(&p);
    p.temp = 0;
    p.seed = 1;
    struct ork_sampler *smp = NULL;
    ork_sampler_create(&p, ork_model_config(g_model)->n_vocab, &smp);
    return smp;
}

static void gen_params(struct ork_gen_params *gp, struct sink *sk, int n_predict)
{
    ork_gen_params_default(gp);
    gp->sampling.temp = 0;
    gp->n_predict = n_predict;
    gp->on_text = on_text;
    gp->user = sk;
}

static void test_greedy_text_and_reuse(void)
{
    struct ork_session *s = session(128);
    struct ork_sampler *smp = greedy_sampler();
    REQUIRE(s && smp);
    static struct sink sk;
    struct ork_gen_params gp;
    gen_params(&gp, &sk, 48);
    struct ork_gen_stats st;
    REQUIRE(ork_generate(s, smp, "Once upon a time", &gp, &st) == 0);
    CHECK_STR(sk.text, g_want);
    CHECK_EQ_INT(sk.bad_utf8, 0);
    CHECK_EQ_INT(st.n_prompt, 5);
    CHECK_EQ_INT(st.n_reused, 0);
    CHECK_EQ_INT(st.n_gen, 48);
    CHECK_EQ_INT(st.stop, ORK_STOP_N_PREDICT);
    CHECK(st.prompt_ms >= 0 && st.gen_ms > 0);

    /* the same prompt again: everything but the last prompt token comes from the cache, and the
     * greedy text is the same */
    memset(&sk, 0, sizeof sk);
    ork_sampler_reset(smp);
    REQUIRE(ork_generate(s, smp, "Once upon a time", &gp, &st) == 0);
    CHECK_EQ_INT(st.n_reused, 4);
    CHECK_STR(sk.text, g_want);

    /* without reuse the cache starts over */
    gp.reuse_cache = false;
    memset(&sk, 0, sizeof sk);
    REQUIRE(ork_generate(s, smp, "Once upon a time", &gp, &st) == 0);
    CHECK_EQ_INT(st.n_reused, 0);
    CHECK_STR(sk.text, g_want);
    ork_sampler_free(smp);
    ork_session_free(s);
}

static void test_stop_string(void)
{
    struct ork_session *s = session(128);
    struct ork_sampler *smp = greedy_sampler();
    REQUIRE(s && smp);
    static struct sink sk;
    struct ork_gen_params gp;
    gen_params(&gp, &sk, 48);
    const char *stops[] = { "zzz", "Lily" };
    gp.stops = stops;
    gp.n_stops = 2;
    struct ork_gen_stats st;
    REQUIRE(ork_generate(s, smp, "Once upon a time", &gp, &st) == 0);
    CHECK_EQ_INT(st.stop, ORK_STOP_STRING);
    const char *at = strstr(g_want, "Lily");
    REQUIRE(at != NULL);
    CHECK_EQ_INT(sk.len, (size_t)(at - g_want));
    CHECK(strncmp(sk.text, g_want, sk.len) == 0);
    ork_sampler_free(smp);
    ork_session_free(s);
}

static void test_callback_stop(void)
{
    struct ork_session *s = session(128);
    struct ork_sampler *smp = greedy_sampler();
    REQUIRE(s && smp);
    static struct sink sk;
    sk.stop_after = 3;
    struct ork_gen_params gp;
    gen_params(&gp, &sk, 48);
    struct ork_gen_stats st;
    REQUIRE(ork_generate(s, smp, "Once upon a time", &gp, &st) == 0);
    CHECK_EQ_INT(st.stop, ORK_STOP_CALLBACK);
    CHECK_EQ_INT(sk.chunks, 3);
    CHECK(st.n_gen >= 3 && st.n_gen < 48);
    ork_sampler_free(smp);
    ork_session_free(s);
}

static void test_context_full(void)
{
    struct ork_session *s = session(16);
    struct ork_sampler *smp = greedy_sampler();
    REQUIRE(s && smp);
    static struct sink sk;
    struct ork_gen_params gp;
    gen_params(&gp, &sk, -1);
    struct ork_gen_stats st;
    REQUIRE(ork_generate(s, smp, "Once upon a time", &gp, &st) == 0);
    CHECK_EQ_INT(st.stop, ORK_STOP_CONTEXT);
    CHECK_EQ_INT(st.n_gen, 16 - 5 + 1);   /* the last sampled token needs no cache row */
    CHECK_EQ_INT(ork_session_n_past(s), 16);
    CHECK(strncmp(sk.text, g_want, sk.len) == 0);

    /* a prompt longer than the context is an error, not a crash */
    ork_session_reset(s);
    int ret = ork_generate(s, smp, "Once upon a time there was a little girl named Lily who loved",
                           &gp, &st);
    CHECK_EQ_INT(ret, ORK_ECONTEXT);
    CHECK(strstr(ork_error_message(), "context full") != NULL);
    ork_sampler_free(smp);
    ork_session_free(s);
}

/* The allocation count of a generate call does not depend on how many tokens it generates. */
static void test_no_allocation_per_token(void)
{
    struct ork_session *s = session(128);
    struct ork_sampler *smp = greedy_sampler();
    REQUIRE(s && smp);
    static struct sink sk;
    struct ork_gen_params gp;
    uint64_t counts[2];
    int n_predict[2] = { 8, 40 };
    for (int k = 0; k < 2; k++) {
        memset(&sk, 0, sizeof sk);
        gen_params(&gp, &sk, n_predict[k]);
        gp.reuse_cache = false;
        struct ork_gen_stats st;
        uint64_t before = ork_alloc_count();
        REQUIRE(ork_generate(s, smp, "Once upon a time", &gp, &st) == 0);
        counts[k] = ork_alloc_count() - before;
        CHECK_EQ_INT(st.n_gen, n_predict[k]);
    }
    printf("  allocations per generate call: %llu (8 tokens), %llu (40 tokens)\n",
           (unsigned long long)counts[0], (unsigned long long)counts[1]);
    CHECK_EQ_INT(counts[0], counts[1]);
    ork_sampler_free(smp);
    ork_session_free(s);
}

int main(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s", ork_test_fixture("models/stories260K.gguf"));
    char *json = jl_read_file(ork_test_fixture("vectors/stories260K-quant.greedy.json"));
    if (!json)
        SKIP("cannot read the quant vectors");
    const char *t = jl_get(jl_get(json, "stories260K.gguf"), "text");
    if (!t || *t != '"')
        return 1;
    const char *end = jl_skip_string(t) - 1;   /* the text has no escapes */
    snprintf(g_want, sizeof g_want, "%.*s", (int)(end - t - 1), t + 1);
    free(json);

    int ret = ork_model_load(path, NULL, &g_model);
    if (ret < 0) {
        fprintf(stderr, "load: %s\n", ork_error_describe(ret));
        return 1;
    }
    RUN(test_greedy_text_and_reuse);
    RUN(test_stop_string);
    RUN(test_callback_stop);
    RUN(test_context_full);
    RUN(test_no_allocation_per_token);
    ork_model_free(g_model);
    return ork_test_done();
}
