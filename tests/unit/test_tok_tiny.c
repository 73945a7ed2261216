/* test_tok_tiny.c -- tokenizer rules on hand-built vocabularies (no fixtures needed): SPM
 * score order and leftmost ties, byte fallback, dummy prefix after specials, byte-level BPE
 * rank order, specials split longest-first, user-defined tokens matched without
 * parse_special, Phi-3 right-strip, add_bos/add_eos/add_space_prefix keys, load errors and
 * API misuse. Expected ids are worked out by hand from the algorithms' definitions. */
#include "ork_test.h"
#include "unit/test_tok_gguf.h"
#include "unit/test_tok_util.h"

/* ---- a tiny SentencePiece vocabulary ---- */

enum {
    S_UNK = 0, S_BOS = 1, S_EOS = 2, S_BYTE0 = 3,   /* <0x00>..<0xFF> = 3..258 */
    S_SPACE = 259, S_A, S_B, S_C, S_AB, S_BC, S_SPACE_A, S_USER, S_CTRL, S_CTRL_X, S_AA,
    S_N
};

struct spm_opts {
    const char *name;
    int add_space_prefix;   /* -1: key absent */
    int add_eos;            /* -1: key absent */
    bool drop_scores_entry; /* scores one shorter than tokens */
};

static struct ork_tokenizer *tiny_spm(const struct spm_opts *o, struct ork_gguf **g, void **mem,
                                      int *err)
{
    static char bytes[256][8];
    const char *tok[S_N];
    float score[S_N];
    int32_t type[S_N];
    for (int i = 0; i < S_N; i++) {
        score[i] = 0;
        type[i] = ORK_TOKEN_NORMAL;
    }
    tok[S_UNK] = "<unk>";
    type[S_UNK] = ORK_TOKEN_UNKNOWN;
    tok[S_BOS] = "<s>";
    type[S_BOS] = ORK_TOKEN_CONTROL;
    tok[S_EOS] = "</s>";
    type[S_EOS] = ORK_TOKEN_CONTROL;
    for (int b = 0; b < 256; b++) {
        snprintf(bytes[b], sizeof bytes[b], "<0x%02X>", b);
        tok[S_BYTE0 + b] = bytes[b];
        type[S_BYTE0 + b] = ORK_TOKEN_BYTE;
    }
    tok[S_SPACE] = "\xe2\x96\x81";
    score[S_SPACE] = -1;
    tok[S_A] = "a";
    score[S_A] = -2;
    tok[S_B] = "b";
    score[S_B] = -3;
    tok[S_C] = "c";
    score[S_C] = -4;
    tok[S_AB] = "ab";
    score[S_AB] = -5;
    tok[S_BC] = "bc";
    score[S_BC] = -1;
    tok[S_SPACE_A] = "\xe2\x96\x81" "a";
    score[S_SPACE_A] = -6;
    tok[S_USER] = "<|u|>";
    type[S_USER] = ORK_TOKEN_USER_DEFINED;
    tok[S_CTRL] = "<|c|>";
    type[S_CTRL] = ORK_TOKEN_CONTROL;
    tok[S_CTRL_X] = "<|c|>x";
    type[S_CTRL_X] = ORK_TOKEN_CONTROL;
    tok[S_AA] = "aa";
    score[S_AA] = -1;

    struct tg b;
    tg_begin(&b);
    tg_kv_str(&b, "general.architecture", "llama");
    if (o->name)
        tg_kv_str(&b, "general.name", o->name);
    tg_kv_str(&b, "tokenizer.ggml.model", "llama");
    tg_kv_strs(&b, "tokenizer.ggml.tokens", tok, S_N);
    tg_kv_f32s(&b, "tokenizer.ggml.scores", score, o->drop_scores_entry ? S_N - 1 : S_N);
    tg_kv_i32s(&b, "tokenizer.ggml.token_type", type, S_N);
    if (o->add_space_prefix >= 0)
        tg_kv_bool(&b, "tokenizer.ggml.add_space_prefix", o->add_space_prefix);
    if (o->add_eos >= 0)
        tg_kv_bool(&b, "tokenizer.ggml.add_eos_token", o->add_eos);
    tg_end(&b);
    *mem = b.p;
    *err = ork_gguf_open_mem(b.p, b.n, g);
    if (*err < 0)
        return NULL;
    struct ork_tokenizer *t = NULL;
    *err = ork_tokenizer_load(*g, &t);
    if (*err < 0) {
        ork_gguf_close(*g);
        *g = NULL;
    }
    return t;
}

static void drop(struct ork_tokenizer *t, struct ork_gguf *g, void *mem)
{
    ork_tokenizer_free(t);
    if (g)
        ork_gguf_close(g);
    free(mem);
}

#define CHECK_IDS(t, text, add, parse, ...)                                                  \
    do {                                                                                     \
        static const int32_t want_[] = { __VA_ARGS__ };                                      \
        CHECK(tt_check((t), __func__, (text), strlen(text), (add), (parse), want_,           \
                       sizeof want_ / sizeof want_[0]));                                     \
    } while (0)

#define BYTE(c) (S_BYTE0 + (unsigned char)(c))

static void test_spm_rules(void)
{
    struct ork_gguf *g;
    void *mem;
    int err;
    struct spm_opts o = { NULL, -1, -1, false };
    struct ork_tokenizer *t = tiny_spm(&o, &g, &mem, &err);
    REQUIRE(t);
    /* ▁ a b c: "bc" scores highest, then "▁a"; "abc" is no entry. */
    CHECK_IDS(t, "abc", false, false, S_SPACE_A, S_BC);
    /* Default add_bos for SPM; BOS is not followed by EOS unless asked. */
    CHECK_IDS(t, "abc", true, false, S_BOS, S_SPACE_A, S_BC);
    /* Unknown characters fall back to their UTF-8 bytes. */
    CHECK_IDS(t, "\xc3\xa9", false, false, S_SPACE, BYTE(0xC3), BYTE(0xA9));
    /* Control token not parsed: plain text, byte fallback for < | > */
    CHECK_IDS(t, "<|c|>abc", false, false, S_SPACE, BYTE('<'), BYTE('|'), S_C, BYTE('|'),
              BYTE('>'), S_A, S_BC);
    /* Parsed: the text after a special token gets its own dummy prefix. */
    CHECK_IDS(t, "<|c|>abc", false, true, S_CTRL, S_SPACE_A, S_BC);
    /* Longest special text first. */
    CHECK_IDS(t, "<|c|>x", false, true, S_CTRL_X);
    /* User-defined tokens split even without parse_special. */
    CHECK_IDS(t, "x<|u|>y", false, false, S_SPACE, BYTE('x'), S_USER, S_SPACE, BYTE('y'));
    /* No rstrip outside Phi-3: spaces stay as text. */
    CHECK_IDS(t, "<|c|>  a", false, true, S_CTRL, S_SPACE, S_SPACE, S_SPACE_A);
    /* Empty text: nothing (no dummy prefix), BOS only when asked. */
    size_t n = 99;
    CHECK_EQ_INT(ork_tokenize(t, "", 0, false, false, NULL, 0, &n), 0);
    CHECK_EQ_INT(n, 0);
    CHECK_IDS(t, "", true, false, S_BOS);
    drop(t, g, mem);

    /* Without the dummy prefix: "aa" and "aa" tie on score, the left pair wins. */
    o.add_space_prefix = 0;
    o.add_eos = 1;
    t = tiny_spm(&o, &g, &mem, &err);
    REQUIRE(t);
    CHECK_IDS(t, "aaa", false, false, S_AA, S_A);
    CHECK_IDS(t, "abc", false, false, S_A, S_BC);
    CHECK_IDS(t, "abc", true, false, S_BOS, S_A, S_BC, S_EOS);
    CHECK(ork_tokenizer_add_eos(t));
    drop(t, g, mem);
}

static void test_spm_phi3_rstrip(void)
{
    struct ork_gguf *g;
    void *mem;
    int err;
    struct spm_opts o = { "Phi3-tiny", -1, -1, false };
    struct ork_tokenizer *t = tiny_spm(&o, &g, &mem, &err);
    REQUIRE(t);
    CHECK_IDS(t, "<|c|>  a", false, true, S_CTRL, S_SPACE_A);
    drop(t, g, mem);
}

static void test_spm_detok(void)
{
    struct ork_gguf *g;
    void *mem;
    int err;
    struct spm_opts o = { NULL, -1, -1, false };
    struct ork_tokenizer *t = tiny_spm(&o, &g, &mem, &err);
    REQUIRE(t);
    char buf[64];
    CHECK_EQ_INT(ork_token_to_bytes(t, S_SPACE_A, false, buf, sizeof buf), 2);
    CHECK(memcmp(buf, " a", 2) == 0);
    CHECK_EQ_INT(ork_token_to_bytes(t, BYTE('\n'), false, buf, sizeof buf), 1);
    CHECK(buf[0] == '\n');
    CHECK_EQ_INT(ork_token_to_bytes(t, S_BOS, false, buf, sizeof buf), 0);
    CHECK_EQ_INT(ork_token_to_bytes(t, S_BOS, true, buf, sizeof buf), 3);
    CHECK(memcmp(buf, "<s>", 3) == 0);
    CHECK_EQ_INT(ork_token_to_bytes(t, S_UNK, false, buf, sizeof buf), 0);
    CHECK_EQ_INT(ork_token_to_bytes(t, S_USER, false, buf, sizeof buf), 5);
    /* Too small a buffer: the length is still reported. */
    CHECK_EQ_INT(ork_token_to_bytes(t, S_USER, false, buf, 2), 5);
    CHECK(ork_token_to_bytes(t, -1, false, buf, sizeof buf) < 0);
    CHECK(ork_token_to_bytes(t, S_N, false, buf, sizeof buf) < 0);
    CHECK(ork_tokenizer_piece(t, S_N, NULL) == NULL);
    CHECK(ork_tokenizer_is_eog(t, S_EOS));
    CHECK(!ork_tokenizer_is_eog(t, S_BOS));

    /* Whole sequence, with the size query and a too-small buffer. */
    static const int32_t ids[] = { S_BOS, S_SPACE_A, S_BC, S_SPACE, BYTE(0xC3), BYTE(0xA9) };
    CHECK_EQ_INT(ork_detokenize(t, ids, 6, false, NULL, 0), 7);
    CHECK_EQ_INT(ork_detokenize(t, ids, 6, false, buf, sizeof buf), 7);
    CHECK_STR(buf, " abc \xc3\xa9");
    CHECK_EQ_INT(ork_detokenize(t, ids, 6, true, buf, sizeof buf), 10);
    CHECK_STR(buf, "<s> abc \xc3\xa9");
    CHECK_EQ_INT(ork_detokenize(t, ids, 6, false, buf, 4), ORK_ENOSPC);
    static const int32_t bad[] = { S_A, 100000 };
    CHECK(ork_detokenize(t, bad, 2, false, buf, sizeof buf) < 0);

    /* Invalid UTF-8 from byte tokens becomes U+FFFD; a dangling lead byte too. */
    static const int32_t inv[] = { BYTE(0xFF), S_A, BYTE(0xE2), S_B, BYTE(0xE2), BYTE(0x82) };
    CHECK_EQ_INT(ork_detokenize(t, inv, 6, false, buf, sizeof buf), 11);
    CHECK_STR(buf, "\xef\xbf\xbd" "a" "\xef\xbf\xbd" "b" "\xef\xbf\xbd");
    drop(t, g, mem);
}

/* ---- a tiny byte-level BPE vocabulary ---- */

#define B_N_BYTES 256
enum { B_AB = B_N_BYTES, B_BC, B_GA, B_AA, B_EOT, B_THINK, B_N };

static struct ork_tokenizer *tiny_bpe(const char *pre, const char *const *merges, size_t n_merges,
                                      int add_bos, struct ork_gguf **g, void **mem, int *err)
{
    static char bytes[256][3];
    const char *tok[B_N];
    int32_t type[B_N];
    for (int i = 0; i < 256; i++) {
        tg_gpt2_byte((unsigned)i, bytes[i]);
        tok[i] = bytes[i];
        type[i] = ORK_TOKEN_NORMAL;
    }
    tok[B_AB] = "ab";
    tok[B_BC] = "bc";
    tok[B_GA] = "\xc4\xa0" "a";     /* "Ġa": space + a */
    tok[B_AA] = "aa";
    tok[B_EOT] = "<|endoftext|>";
    tok[B_THINK] = "<think>";
    for (int i = B_AB; i < B_N; i++)
        type[i] = ORK_TOKEN_NORMAL;
    type[B_EOT] = ORK_TOKEN_CONTROL;
    type[B_THINK] = ORK_TOKEN_USER_DEFINED;
    struct tg b;
    tg_begin(&b);
    tg_kv_str(&b, "general.architecture", "qwen2");
    tg_kv_str(&b, "tokenizer.ggml.model", "gpt2");
    if (pre)
        tg_kv_str(&b, "tokenizer.ggml.pre", pre);
    tg_kv_strs(&b, "tokenizer.ggml.tokens", tok, B_N);
    tg_kv_i32s(&b, "tokenizer.ggml.token_type", type, B_N);
    if (merges)
        tg_kv_strs(&b, "tokenizer.ggml.merges", merges, n_merges);
    tg_kv_u32(&b, "tokenizer.ggml.bos_token_id", B_EOT);
    tg_kv_u32(&b, "tokenizer.ggml.eos_token_id", B_EOT);
    if (add_bos >= 0)
        tg_kv_bool(&b, "tokenizer.ggml.add_bos_token", add_bos);
    tg_end(&b);
    *mem = b.p;
    *g = NULL;
    *err = ork_gguf_open_mem(b.p, b.n, g);
    if (*err < 0)
        return NULL;
    struct ork_tokenizer *t = NULL;
    *err = ork_tokenizer_load(*g, &t);
    return t;
}

static void test_bpe_rules(void)
{
    static const char *const m1[] = { "a b", "b c", "\xc4\xa0 a", "a a" };
    static const char *const m2[] = { "b c", "a b", "\xc4\xa0 a", "a a" };
    struct ork_gguf *g;
    void *mem;
    int err;
    struct ork_tokenizer *t = tiny_bpe("gpt-2", m1, 4, -1, &g, &mem, &err);
    REQUIRE(t);
    CHECK_IDS(t, "abc", false, false, B_AB, 'c');       /* rank 0 "a b" first */
    CHECK_IDS(t, "aaa", false, false, B_AA, 'a');       /* same pair twice: leftmost */
    CHECK_IDS(t, "x abc", false, false, 'x', ' ', B_AB, 'c');   /* word " abc": Ġ ab c */
    CHECK_IDS(t, "x acb", false, false, 'x', B_GA, 'c', 'b');   /* word " acb": Ġa c b */
    CHECK_IDS(t, "abc", true, false, B_AB, 'c');        /* gpt2: no BOS by default */
    CHECK_IDS(t, "a<|endoftext|>", false, true, 'a', B_EOT);
    CHECK_IDS(t, "<think>a", false, false, B_THINK, 'a');
    CHECK(!ork_tokenizer_add_bos(t));
    CHECK(ork_tokenizer_is_eog(t, B_EOT));
    /* Byte-level detokenization: Ġ is a space; stand-ins map back to bytes. */
    static const int32_t ids[] = { 'x', B_GA, 'b', 0xC3, 0xA9 };
    char buf[32];
    CHECK_EQ_INT(ork_detokenize(t, ids, 5, false, buf, sizeof buf), 6);
    CHECK_STR(buf, "x ab\xc3\xa9");
    drop(t, g, mem);

    t = tiny_bpe("gpt-2", m2, 4, 1, &g, &mem, &err);
    REQUIRE(t);
    CHECK_IDS(t, "abc", false, false, 'a', B_BC);       /* now "b c" ranks first */
    CHECK_IDS(t, "abc", true, false, B_EOT, 'a', B_BC); /* add_bos_token key */
    drop(t, g, mem);

    /* Invalid UTF-8 input is tokenized as U+FFFD (EF BF BD) per bad byte. */
    t = tiny_bpe("qwen2", m1, 4, -1, &g, &mem, &err);
    REQUIRE(t);
    CHECK_IDS(t, "a\xff", false, false, 'a', 0xEF, 0xBF, 0xBD);
    drop(t, g, mem);
}

static void test_load_errors(void)
{
    static const char *const m1[] = { "a b" };
    struct ork_gguf *g;
    void *mem;
    int err;
    struct ork_tokenizer *t = tiny_bpe("xyz", m1, 1, -1, &g, &mem, &err);
    CHECK(t == NULL);
    CHECK_EQ_INT(err, ORK_EUNSUPPORTED);
    CHECK(strstr(ork_error_message(), "unknown pre-tokenizer 'xyz'") != NULL);
    drop(t, g, mem);

    t = tiny_bpe("qwen2", NULL, 0, -1, &g, &mem, &err);
    CHECK(t == NULL);
    CHECK_EQ_INT(err, ORK_EFORMAT);
    CHECK(strstr(ork_error_message(), "tokenizer.ggml.merges") != NULL);
    drop(t, g, mem);

    struct spm_opts o = { NULL, -1, -1, true };
    t = tiny_spm(&o, &g, &mem, &err);
    CHECK(t == NULL);
    CHECK_EQ_INT(err, ORK_EFORMAT);
    CHECK(strstr(ork_error_message(), "tokenizer.ggml.scores") != NULL);
    free(mem);

    /* No tokens array; then an unknown tokenizer model. */
    struct tg b;
    tg_begin(&b);
    tg_kv_str(&b, "tokenizer.ggml.model", "llama");
    tg_end(&b);
    g = NULL;
    REQUIRE(ork_gguf_open_mem(b.p, b.n, &g) == 0);
    err = ork_tokenizer_load(g, &t);
    CHECK_EQ_INT(err, ORK_EFORMAT);
    CHECK(strstr(ork_error_message(), "tokenizer.ggml.tokens") != NULL);
    ork_gguf_close(g);
    free(b.p);

    static const char *const one[] = { "a" };
    tg_begin(&b);
    tg_kv_str(&b, "tokenizer.ggml.model", "bert");
    tg_kv_strs(&b, "tokenizer.ggml.tokens", one, 1);
    tg_end(&b);
    REQUIRE(ork_gguf_open_mem(b.p, b.n, &g) == 0);
    err = ork_tokenizer_load(g, &t);
    CHECK_EQ_INT(err, ORK_EUNSUPPORTED);
    CHECK(strstr(ork_error_message(), "bert") != NULL);
    ork_gguf_close(g);
    free(b.p);
}

static void test_enospc(void)
{
    struct ork_gguf *g;
    void *mem;
    int err;
    struct spm_opts o = { NULL, -1, -1, false };
    struct ork_tokenizer *t = tiny_spm(&o, &g, &mem, &err);
    REQUIRE(t);
    int32_t ids[8];
    size_t n = 0;
    CHECK_EQ_INT(ork_tokenize(t, "abc abc", 7, true, false, ids, 2, &n), ORK_ENOSPC);
    CHECK_EQ_INT(n, 5);     /* <s> ▁a bc ▁a bc */
    CHECK_EQ_INT(ork_tokenize(t, "abc abc", 7, true, false, ids, n, &n), 0);
    CHECK_EQ_INT(ids[4], S_BC);
    CHECK(ork_tokenize(NULL, "a", 1, true, false, ids, 8, &n) < 0);
    CHECK(ork_tokenize(t, NULL, 1, true, false, ids, 8, &n) < 0);
    drop(t, g, mem);
}

int main(void)
{
    RUN(test_spm_rules);
    RUN(test_spm_phi3_rstrip);
    RUN(test_spm_detok);
    RUN(test_bpe_rules);
    RUN(test_load_errors);
    RUN(test_enospc);
    return ork_test_done();
}
