/* test_tok_detok.c -- detokenization against the fixtures: every tokenize vector decodes back
 * to its text (SPM: with the dummy-prefix space in front), streaming output is valid UTF-8 at
 * every step and adds up to the whole, the stories260K greedy ids decode to the reference
 * text, and tokenizing long inputs stays fast. */
#include <time.h>

#include "ork_test.h"
#include "unit/test_tok_util.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Strict UTF-8 check (Unicode 15 table 3-7). */
static bool valid_utf8(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        unsigned c = p[i], len, lo = 0x80, hi = 0xBF;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF)
            len = 2;
        else if (c >= 0xE0 && c <= 0xEF)
            len = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        else if (c >= 0xF0 && c <= 0xF4)
            len = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        else
            return false;
        if (i + len > n)
            return false;
        for (unsigned k = 1; k < len; k++) {
            unsigned b = p[i + k];
            if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF))
                return false;
        }
        i += len;
    }
    return true;
}

/* Decode ids one by one; returns the concatenation (malloc'd) or NULL on a failed check. */
static char *stream_decode(const struct ork_tokenizer *t, const int32_t *ids, size_t n,
                           bool render, int *n_held)
{
    struct ork_detok d;
    ork_detok_init(&d, t, render);
    char *all = malloc(64 * n + 64);
    size_t len = 0;
    *n_held = 0;
    for (size_t i = 0; i < n; i++) {
        char piece[1024];
        int k = ork_detok_push(&d, ids[i], piece, sizeof piece);
        if (k < 0 || !valid_utf8(piece, (size_t)k)) {
            free(all);
            return NULL;
        }
        int raw = ork_token_to_bytes(t, ids[i], render, NULL, 0);
        if (k != raw)
            (*n_held)++;
        memcpy(all + len, piece, (size_t)k);
        len += (size_t)k;
    }
    int k = ork_detok_flush(&d, all + len, 64);
    if (k < 0) {
        free(all);
        return NULL;
    }
    all[len + (size_t)k] = 0;
    return all;
}

static void check_roundtrip(const char *gguf_rel, const char *jsonl_rel, bool spm)
{
    char gguf_path[4096];
    snprintf(gguf_path, sizeof gguf_path, "%s", ork_test_fixture(gguf_rel));
    size_t len;
    char *all = tt_read_file(ork_test_fixture(jsonl_rel), &len);
    REQUIRE(all);
    struct ork_gguf *g = NULL;
    struct ork_tokenizer *t = tt_load(gguf_path, &g);
    CHECK(t != NULL);
    if (!t) {
        free(all);
        return;
    }
    int n_cases = 0, n_bad = 0, n_held = 0;
    for (char *line = all; line && *line;) {
        char *eol = strchr(line, '\n');
        if (eol)
            *eol = 0;
        struct tt_case c;
        if (*line && tt_parse_case(line, &c)) {
            /* Render specials so that parsed ChatML markers come back as text. */
            char want[4096];
            snprintf(want, sizeof want, "%s%s", spm ? " " : "", c.text);
            char got[4096];
            int k = ork_detokenize(t, c.ids, c.n_ids, c.parse_special, got, sizeof got);
            const int32_t *ids = c.ids;
            size_t n_ids = c.n_ids;
            if (c.add_bos && ork_tokenizer_add_bos(t) && n_ids) {  /* "<s>" would render */
                ids++;
                n_ids--;
                k = ork_detokenize(t, ids, n_ids, c.parse_special, got, sizeof got);
            }
            int held = 0;
            char *streamed = stream_decode(t, ids, n_ids, c.parse_special, &held);
            n_held += held;
            bool ok = k >= 0 && strcmp(got, want) == 0 && streamed && strcmp(streamed, got) == 0;
            if (!ok) {
                fprintf(stderr, "%s line %d: detok (ret %d) ", jsonl_rel, n_cases + 1, k);
                tt_print_escaped(stderr, k >= 0 ? got : "", k >= 0 ? (size_t)k : 0);
                fprintf(stderr, " want ");
                tt_print_escaped(stderr, want, strlen(want));
                fprintf(stderr, " streamed %s\n", streamed ? streamed : "(failed)");
                n_bad++;
            }
            free(streamed);
            tt_case_free(&c);
            n_cases++;
        }
        line = eol ? eol + 1 : NULL;
    }
    printf("  %s: %d round trips, %d bad, %d pushes held bytes back\n", jsonl_rel, n_cases,
           n_bad, n_held);
    CHECK(n_cases > 0);
    CHECK_EQ_INT(n_bad, 0);
    CHECK(n_held > 0);      /* emoji / CJK split over byte tokens were held back */
    ork_tokenizer_free(t);
    ork_gguf_close(g);
    free(all);
}

static void test_roundtrip_qwen3(void)
{
    check_roundtrip("vocab/qwen3-vocab.gguf", "vectors/qwen3-vocab.gguf.tokenize.jsonl", false);
}

static void test_roundtrip_llama_spm(void)
{
    check_roundtrip("vocab/ggml-vocab-llama-spm.gguf",
                    "vectors/ggml-vocab-llama-spm.gguf.tokenize.jsonl", true);
}

static void test_roundtrip_stories(void)
{
    check_roundtrip("models/stories260K.gguf", "vectors/stories260K.gguf.tokenize.jsonl", true);
}

/* The emoji U+1F999 of "café naïve 😀 🦙" is split over three Qwen3 byte tokens. */
static void test_stream_emoji(void)
{
    struct ork_gguf *g = NULL;
    struct ork_tokenizer *t = tt_load(ork_test_fixture("vocab/qwen3-vocab.gguf"), &g);
    REQUIRE(t);
    static const int32_t ids[] = { 90316, 11162, 99, 247 };
    struct ork_detok d;
    ork_detok_init(&d, t, false);
    char out[4][64];
    int k[4];
    for (int i = 0; i < 4; i++) {
        k[i] = ork_detok_push(&d, ids[i], out[i], sizeof out[i]);
        CHECK(k[i] >= 0 && valid_utf8(out[i], (size_t)k[i]));
    }
    CHECK_EQ_INT(k[2], 0);                  /* still incomplete after two of three bytes */
    CHECK_EQ_INT(k[3], 4);
    CHECK(memcmp(out[3], "\xf0\x9f\xa6\x99", 4) == 0);
    CHECK_EQ_INT(ork_detok_flush(&d, out[0], sizeof out[0]), 0);
    /* A dangling prefix is flushed as U+FFFD. */
    ork_detok_init(&d, t, false);
    CHECK(ork_detok_push(&d, 11162, out[0], sizeof out[0]) >= 0);
    CHECK_EQ_INT(ork_detok_flush(&d, out[0], sizeof out[0]), 3);
    CHECK(memcmp(out[0], "\xef\xbf\xbd", 3) == 0);
    /* Too small a buffer: ORK_ENOSPC and the state is unchanged. */
    ork_detok_init(&d, t, false);
    CHECK_EQ_INT(ork_detok_push(&d, 9707, out[0], 2), ORK_ENOSPC);   /* "Hello" */
    CHECK_EQ_INT(ork_detok_push(&d, 9707, out[0], sizeof out[0]), 5);
    CHECK(ork_detok_push(&d, -3, out[0], sizeof out[0]) < 0);
    ork_tokenizer_free(t);
    ork_gguf_close(g);
}

/* stories260K-quant.greedy.json: the greedy ids of the F32 model and their text. */
static void test_greedy_text(void)
{
    size_t len;
    char *js = tt_read_file(ork_test_fixture("vectors/stories260K-quant.greedy.json"), &len);
    REQUIRE(js);
    const char *m = strstr(js, "\"stories260K.gguf\"");
    REQUIRE(m);
    const char *p = strstr(m, "\"greedy_ids\"");
    const char *tx = strstr(m, "\"text\"");
    REQUIRE(p && tx);
    int32_t ids[256];
    size_t n = 0;
    p = strchr(p, '[') + 1;
    while (*p && *p != ']' && n < 256) {
        char *e;
        ids[n++] = (int32_t)strtol(p, &e, 10);
        p = e;
        while (*p == ',' || *p == ' ')
            p++;
    }
    tx = strchr(tx + 6, '"');
    char *want = NULL;
    size_t want_len = 0;
    REQUIRE(tt_json_string(tx, &want, &want_len));

    struct ork_gguf *g = NULL;
    struct ork_tokenizer *t = tt_load(ork_test_fixture("models/stories260K.gguf"), &g);
    REQUIRE(t);
    char got[2048];
    CHECK(ork_detokenize(t, ids, n, false, got, sizeof got) == (int)want_len);
    CHECK_STR(got, want);
    /* BOS + "Once upon a time": the leading space of the first piece is kept. */
    static const int32_t prompt[] = { 1, 403, 407, 261, 378 };
    CHECK(ork_detokenize(t, prompt, 5, false, got, sizeof got) > 0);
    CHECK_STR(got, " Once upon a time");
    ork_tokenizer_free(t);
    ork_gguf_close(g);
    free(want);
    free(js);
}

/* Long inputs: a few KB of prose, one 20 KB "word", 6 KB of CJK; loading Qwen3's 151k
 * tokens and merges. Bounds are loose (sanitizer builds are several times slower). */
static void test_speed(void)
{
    size_t plen;
    char *prose = tt_read_file(ork_test_fixture("vectors/ppl_text.txt"), &plen);
    REQUIRE(prose);
    size_t cap = 16 * plen + 32768;
    char *text = malloc(cap);
    size_t n = 0;
    for (int i = 0; i < 8; i++) {
        memcpy(text + n, prose, plen);
        n += plen;
    }
    double t0 = now_s();
    struct ork_gguf *g = NULL;
    struct ork_tokenizer *t = tt_load(ork_test_fixture("vocab/qwen3-vocab.gguf"), &g);
    double t_load = now_s() - t0;
    REQUIRE(t);
    int32_t *ids = malloc(cap * sizeof(*ids));
    size_t n_ids = 0;
    t0 = now_s();
    CHECK_EQ_INT(ork_tokenize(t, text, n, true, true, ids, cap, &n_ids), 0);
    double t_prose = now_s() - t0;
    memset(text, 'a', 20000);
    t0 = now_s();
    CHECK_EQ_INT(ork_tokenize(t, text, 20000, false, false, ids, cap, &n_ids), 0);
    double t_word = now_s() - t0;
    for (size_t i = 0; i < 2000; i++)
        memcpy(text + 3 * i, "\xe4\xbd\xa0", 3);    /* U+4F60 */
    t0 = now_s();
    CHECK_EQ_INT(ork_tokenize(t, text, 6000, false, false, ids, cap, &n_ids), 0);
    double t_cjk = now_s() - t0;
    printf("  qwen3: load %.3f s, %zu B prose %.4f s, 20 KB word %.4f s, 6 KB CJK %.4f s\n",
           t_load, n, t_prose, t_word, t_cjk);
    CHECK(t_load < 5.0);
    CHECK(t_prose < 1.0 && t_word < 1.0 && t_cjk < 1.0);
    ork_tokenizer_free(t);
    ork_gguf_close(g);

    t = tt_load(ork_test_fixture("vocab/ggml-vocab-llama-spm.gguf"), &g);
    REQUIRE(t);
    n = 0;
    for (int i = 0; i < 8; i++) {
        memcpy(text + n, prose, plen);
        n += plen;
    }
    t0 = now_s();
    CHECK_EQ_INT(ork_tokenize(t, text, n, true, false, ids, cap, &n_ids), 0);
    double t_spm = now_s() - t0;
    printf("  llama-spm: %zu B prose %.4f s (%zu ids)\n", n, t_spm, n_ids);
    CHECK(t_spm < 1.0);
    ork_tokenizer_free(t);
    ork_gguf_close(g);
    free(ids);
    free(text);
    free(prose);
}

int main(void)
{
    ork_test_fixture("vectors");
    RUN(test_roundtrip_qwen3);
    RUN(test_roundtrip_llama_spm);
    RUN(test_roundtrip_stories);
    RUN(test_stream_emoji);
    RUN(test_greedy_text);
    RUN(test_speed);
    return ork_test_done();
}
