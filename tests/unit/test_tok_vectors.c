/* test_tok_vectors.c -- the fixture tokenize vectors (vectors/X.tokenize.jsonl, from the
 * reference tokenizer): text x {add BOS if the model wants it, parse specials} -> ids, for
 * stories260K (SPM 512), llama-spm (SPM 32000) and Qwen3 (byte-level BPE 151936); plus the
 * known Qwen3 ids quoted in the fixture README. */
#include "ork_test.h"
#include "unit/test_tok_util.h"

static void check_jsonl(const char *gguf_rel, const char *jsonl_rel)
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
    int n_cases = 0, n_bad = 0;
    for (char *line = all; *line;) {
        char *eol = strchr(line, '\n');
        if (eol)
            *eol = 0;
        if (*line) {
            struct tt_case c;
            bool parsed = tt_parse_case(line, &c);
            CHECK(parsed);
            char where[128];
            snprintf(where, sizeof where, "%s line %d", jsonl_rel, n_cases + 1);
            if (parsed && !tt_check(t, where, c.text, c.len, c.add_bos, c.parse_special, c.ids,
                                    c.n_ids))
                n_bad++;
            tt_case_free(&c);
            n_cases++;
        }
        if (!eol)
            break;
        line = eol + 1;
    }
    printf("  %s: %d cases, %d mismatches\n", jsonl_rel, n_cases, n_bad);
    CHECK(n_cases > 0);
    CHECK_EQ_INT(n_bad, 0);
    ork_tokenizer_free(t);
    ork_gguf_close(g);
    free(all);
}

static void test_stories260k(void)
{
    check_jsonl("models/stories260K.gguf", "vectors/stories260K.gguf.tokenize.jsonl");
}

static void test_llama_spm(void)
{
    check_jsonl("vocab/ggml-vocab-llama-spm.gguf",
                "vectors/ggml-vocab-llama-spm.gguf.tokenize.jsonl");
}

static void test_qwen3(void)
{
    check_jsonl("vocab/qwen3-vocab.gguf", "vectors/qwen3-vocab.gguf.tokenize.jsonl");
}

/* The ids quoted in fixtures/README.md, and the prompt ids of the greedy vectors. */
static void test_readme_ids(void)
{
    struct ork_gguf *g = NULL;
    struct ork_tokenizer *t = tt_load(ork_test_fixture("vocab/qwen3-vocab.gguf"), &g);
    REQUIRE(t);
    static const int32_t hello[] = { 9707, 1879 };
    CHECK(tt_check(t, "qwen3", "Hello world", 11, true, true, hello, 2));
    static const char chatml[] = "<|im_start|>system\nYou are a helpful assistant.<|im_end|>";
    static const int32_t chatml_ids[] = { 151644, 8948, 198, 2610, 525, 264, 10950, 17847, 13,
                                          151645 };
    CHECK(tt_check(t, "qwen3", chatml, strlen(chatml), true, true, chatml_ids, 10));
    CHECK(!ork_tokenizer_add_bos(t));
    CHECK(ork_tokenizer_is_eog(t, 151645));     /* <|im_end|> */
    CHECK(ork_tokenizer_is_eog(t, 151643));     /* <|endoftext|> */
    CHECK(!ork_tokenizer_is_eog(t, 151644));    /* <|im_start|> */
    CHECK(!ork_tokenizer_is_eog(t, 9707));
    CHECK_EQ_INT(ork_tokenizer_kind(t, 151644), ORK_TOKEN_CONTROL);
    CHECK_EQ_INT(ork_tokenizer_kind(t, 151667), ORK_TOKEN_USER_DEFINED);
    CHECK_EQ_INT(ork_tokenizer_find(t, "<think>", 7), 151667);
    ork_tokenizer_free(t);
    ork_gguf_close(g);

    t = tt_load(ork_test_fixture("models/stories260K.gguf"), &g);
    REQUIRE(t);
    static const int32_t prompt[] = { 1, 403, 407, 261, 378 };
    CHECK(tt_check(t, "stories260K", "Once upon a time", 16, true, false, prompt, 5));
    CHECK(ork_tokenizer_add_bos(t));
    CHECK_EQ_INT(ork_tokenizer_bos(t), 1);
    CHECK_EQ_INT(ork_tokenizer_eos(t), 2);
    CHECK(ork_tokenizer_is_eog(t, 2));
    ork_tokenizer_free(t);
    ork_gguf_close(g);
}

int main(void)
{
    ork_test_fixture("vectors");
    RUN(test_stories260k);
    RUN(test_llama_spm);
    RUN(test_qwen3);
    RUN(test_readme_ids);
    return ork_test_done();
}
