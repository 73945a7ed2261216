/* test_tok_vocab_files.c -- every case of the fixture vocabularies' X.gguf.inp / X.gguf.out
 * (produced by the reference tokenizer: no BOS, specials not parsed).
 *
 * .inp holds the test strings, each followed by "\n__ggml_vocab_test__\n"; .out holds one
 * line of space-separated ids per string (an empty line for an empty result). */
#include "ork_test.h"
#include "unit/test_tok_util.h"

#define SEPARATOR "\n__ggml_vocab_test__\n"

static void check_vocab(const char *gguf_rel, const char *cases_rel)
{
    char rel[256];
    const char *gpath = ork_test_fixture(gguf_rel);
    char gguf_path[4096];
    snprintf(gguf_path, sizeof gguf_path, "%s", gpath);
    snprintf(rel, sizeof rel, "%s.inp", cases_rel);
    size_t inp_len, out_len;
    char *inp = tt_read_file(ork_test_fixture(rel), &inp_len);
    snprintf(rel, sizeof rel, "%s.out", cases_rel);
    char *out = tt_read_file(ork_test_fixture(rel), &out_len);
    REQUIRE(inp && out);

    struct ork_gguf *g = NULL;
    struct ork_tokenizer *t = tt_load(gguf_path, &g);
    CHECK(t != NULL);
    if (!t) {
        free(inp);
        free(out);
        return;
    }
    int n_cases = 0, n_bad = 0;
    const char *p = inp, *end = inp + inp_len, *o = out;
    const size_t sep_len = strlen(SEPARATOR);
    while (p < end) {
        const char *s = memmem(p, (size_t)(end - p), SEPARATOR, sep_len);
        if (!s)
            break;
        const char *eol = strchr(o, '\n');
        CHECK(eol != NULL);
        if (!eol)
            break;
        int32_t want[1024];
        size_t n_want = 0;
        for (const char *q = o; q < eol;) {
            char *e;
            long v = strtol(q, &e, 10);
            if (e == q)
                break;
            if (n_want < 1024)
                want[n_want++] = (int32_t)v;
            q = e;
        }
        char where[128];
        snprintf(where, sizeof where, "%s case %d", cases_rel, n_cases);
        if (!tt_check(t, where, p, (size_t)(s - p), false, false, want, n_want))
            n_bad++;
        n_cases++;
        p = s + sep_len;
        o = eol + 1;
    }
    printf("  %s: %d cases, %d mismatches\n", cases_rel, n_cases, n_bad);
    CHECK(n_cases > 0);
    CHECK_EQ_INT(n_bad, 0);
    CHECK(*o == 0);     /* as many id lines as strings */
    ork_tokenizer_free(t);
    ork_gguf_close(g);
    free(inp);
    free(out);
}

static void test_llama_spm(void)
{
    check_vocab("vocab/ggml-vocab-llama-spm.gguf", "vocab/ggml-vocab-llama-spm.gguf");
}

static void test_phi3(void)
{
    check_vocab("vocab/ggml-vocab-phi-3.gguf", "vocab/ggml-vocab-phi-3.gguf");
}

static void test_gpt2(void)
{
    check_vocab("vocab/ggml-vocab-gpt-2.gguf", "vocab/ggml-vocab-gpt-2.gguf");
}

static void test_deepseek_llm(void)
{
    check_vocab("vocab/ggml-vocab-deepseek-llm.gguf", "vocab/ggml-vocab-deepseek-llm.gguf");
}

/* Qwen3 shares Qwen2's byte-level BPE (it only adds special tokens). */
static void test_qwen2_cases_on_qwen3(void)
{
    check_vocab("vocab/qwen3-vocab.gguf", "vocab/ggml-vocab-qwen2.gguf");
}

int main(void)
{
    ork_test_fixture("vocab");
    RUN(test_llama_spm);
    RUN(test_phi3);
    RUN(test_gpt2);
    RUN(test_deepseek_llm);
    RUN(test_qwen2_cases_on_qwen3);
    return ork_test_done();
}
