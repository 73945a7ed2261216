/* fuzz_tokenizer.c -- libFuzzer target for the tokenizers.
 *
 * The first input byte selects the mode:
 *   0 mod 3: the rest is a GGUF file; if it opens and a tokenizer loads from it, a few fixed
 *            strings are tokenized (all flag combinations) and decoded back;
 *   1 mod 3: the rest is text for a small SentencePiece vocabulary built here in memory;
 *   2 mod 3: the next byte picks a pre-tokenizer and the rest is text for a small byte-level
 *            BPE vocabulary built here.
 * In the text modes, valid UTF-8 must survive tokenize -> detokenize unchanged (both small
 * vocabularies have all 256 byte tokens); any other failure is a crash or sanitizer report. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ork-engine/gguf.h>
#include <ork-engine/tokenizer.h>
#include <ork/error.h>

#include "../unit/test_tok_gguf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_TEXT 4096      /* keep each input fast */
#define FUZZ_PIECE_CAP 1024

static const char *const pretok_names[] = {
    "gpt2", "llama-bpe", "qwen2", "deepseek-llm", "default", "deepseek-coder", "falcon",
    "starcoder",
};
#define N_PRETOK (sizeof pretok_names / sizeof pretok_names[0])

static bool valid_utf8(const uint8_t *p, size_t n)
{
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
        for (unsigned k = 1; k < len; k++)
            if (p[i + k] < (k == 1 ? lo : 0x80) || p[i + k] > (k == 1 ? hi : 0xBF))
                return false;
        i += len;
    }
    return true;
}

/* ---- the built-in vocabularies (built once) ---- */

/* The tokenizer copies what it needs, so the file and reader go away at once; the
 * tokenizers themselves live for the whole run (static). */
static struct ork_tokenizer *load_mem(struct tg *b)
{
    tg_end(b);
    struct ork_gguf *g = NULL;
    struct ork_tokenizer *t = NULL;
    if (ork_gguf_open_mem(b->p, b->n, &g) < 0 || ork_tokenizer_load(g, &t) < 0) {
        fprintf(stderr, "fuzz_tokenizer: built-in vocabulary failed: %s\n",
                ork_error_message());
        abort();
    }
    ork_gguf_close(g);
    free(b->p);
    return t;
}

static struct ork_tokenizer *spm_vocab(void)
{
    static struct ork_tokenizer *t;
    if (t)
        return t;
    static char bytes[256][8];
    static const char *const extra[] = {
        "\xe2\x96\x81", "\xe2\x96\x81t", "he", "\xe2\x96\x81the", "\xe2\x96\x81th", "in",
        "\xe2\x96\x81\xe2\x96\x81", "<|im_start|>", "e", "h", "t",
    };
    enum { N_EXTRA = sizeof extra / sizeof extra[0], N = 3 + 256 + N_EXTRA };
    const char *tok[N];
    float score[N];
    int32_t type[N];
    tok[0] = "<unk>", tok[1] = "<s>", tok[2] = "</s>";
    type[0] = ORK_TOKEN_UNKNOWN, type[1] = type[2] = ORK_TOKEN_CONTROL;
    for (int i = 0; i < 256; i++) {
        snprintf(bytes[i], sizeof bytes[i], "<0x%02X>", i);
        tok[3 + i] = bytes[i];
        type[3 + i] = ORK_TOKEN_BYTE;
    }
    for (int i = 0; i < N_EXTRA; i++) {
        tok[259 + i] = extra[i];
        type[259 + i] = ORK_TOKEN_NORMAL;
    }
    type[259 + 7] = ORK_TOKEN_CONTROL;  /* <|im_start|> */
    for (int i = 0; i < N; i++)
        score[i] = -(float)(i % 7);
    struct tg b;
    tg_begin(&b);
    tg_kv_str(&b, "tokenizer.ggml.model", "llama");
    tg_kv_strs(&b, "tokenizer.ggml.tokens", tok, N);
    tg_kv_f32s(&b, "tokenizer.ggml.scores", score, N);
    tg_kv_i32s(&b, "tokenizer.ggml.token_type", type, N);
    return t = load_mem(&b);
}

static struct ork_tokenizer *bpe_vocab(unsigned pre)
{
    static struct ork_tokenizer *t[N_PRETOK];
    if (t[pre])
        return t[pre];
    static char bytes[256][3];
    static const char *const extra[] = {
        "\xc4\xa0t", "th", "\xc4\xa0th", "he", "\xc4\xa0the", "in", "<|endoftext|>", "<think>",
    };
    static const char *const merges[] = {
        "\xc4\xa0 t", "t h", "\xc4\xa0t h", "h e", "\xc4\xa0th e", "i n",
    };
    enum { N_EXTRA = sizeof extra / sizeof extra[0], N = 256 + N_EXTRA };
    const char *tok[N];
    int32_t type[N];
    for (int i = 0; i < 256; i++) {
        tg_gpt2_byte((unsigned)i, bytes[i]);
        tok[i] = bytes[i];
        type[i] = ORK_TOKEN_NORMAL;
    }
    for (int i = 0; i < N_EXTRA; i++) {
        tok[256 + i] = extra[i];
        type[256 + i] = ORK_TOKEN_NORMAL;
    }
    type[256 + 6] = ORK_TOKEN_CONTROL;          /* <|endoftext|> */
    type[256 + 7] = ORK_TOKEN_USER_DEFINED;     /* <think> */
    struct tg b;
    tg_begin(&b);
    tg_kv_str(&b, "tokenizer.ggml.model", "gpt2");
    tg_kv_str(&b, "tokenizer.ggml.pre", pretok_names[pre]);
    tg_kv_strs(&b, "tokenizer.ggml.tokens", tok, N);
    tg_kv_i32s(&b, "tokenizer.ggml.token_type", type, N);
    tg_kv_strs(&b, "tokenizer.ggml.merges", merges, sizeof merges / sizeof merges[0]);
    tg_kv_u32(&b, "tokenizer.ggml.eos_token_id", 256 + 6);
    return t[pre] = load_mem(&b);
}

/* ---- exercising one tokenizer ---- */

/* Tokenize with every flag combination, decode whole and streamed. With `want` set, the
 * plain (no specials) decode must equal it. */
static void exercise(const struct ork_tokenizer *t, const char *text, size_t len,
                     const char *want, size_t want_len)
{
    for (int mode = 0; mode < 4; mode++) {
        bool add = mode & 1, parse = mode & 2;
        size_t cap = 2 * len + 8, n = 0;
        int32_t *ids = malloc(cap * sizeof(*ids));
        int ret = ork_tokenize(t, text, len, add, parse, ids, cap, &n);
        if (ret == ORK_ENOSPC) {
            ids = realloc(ids, n * sizeof(*ids));
            cap = n;
            ret = ork_tokenize(t, text, len, add, parse, ids, cap, &n);
        }
        if (ret < 0 || n > cap) {
            free(ids);
            continue;
        }
        for (int render = 0; render < 2; render++) {
            int need = ork_detokenize(t, ids, n, render, NULL, 0);
            if (need < 0)
                abort();    /* ids from ork_tokenize are always valid */
            char *out = malloc((size_t)need + 1);
            if (ork_detokenize(t, ids, n, render, out, (size_t)need + 1) != need)
                abort();
            if (!valid_utf8((const uint8_t *)out, (size_t)need))
                abort();
            if (want && !add && !parse && !render &&
                ((size_t)need != want_len || memcmp(out, want, want_len) != 0)) {
                fprintf(stderr, "fuzz_tokenizer: round trip changed the text\n");
                abort();
            }
            free(out);
        }
        struct ork_detok d;
        ork_detok_init(&d, t, parse);
        char piece[FUZZ_PIECE_CAP];
        for (size_t i = 0; i < n; i++) {
            int k = ork_detok_push(&d, ids[i], piece, sizeof piece);
            if (k > 0 && !valid_utf8((const uint8_t *)piece, (size_t)k))
                abort();
        }
        ork_detok_flush(&d, piece, sizeof piece);
        free(ids);
    }
    int32_t nv = ork_tokenizer_n_vocab(t);
    const int32_t probe[] = { -1, 0, nv / 2, nv - 1, nv };
    char buf[64];
    for (size_t i = 0; i < sizeof probe / sizeof probe[0]; i++) {
        size_t plen;
        const char *p = ork_tokenizer_piece(t, probe[i], &plen);
        if (p && ork_tokenizer_find(t, p, plen) < 0)
            abort();    /* every vocabulary text can be found (maybe as a later duplicate) */
        ork_token_to_bytes(t, probe[i], true, buf, sizeof buf);
        (void)ork_tokenizer_kind(t, probe[i]);
        (void)ork_tokenizer_is_eog(t, probe[i]);
    }
}

static void fuzz_gguf(const uint8_t *data, size_t size)
{
    static const char *const texts[] = {
        "Hello world", " <s>x</s> <|im_start|>user\nHi!<|im_end|>\n", "\xe6\x95\xb0 1234 \xf0\x9f\x98\x80",
        "\xff\xfe\xc3 bad utf8", "   \t\n\n  ", "",
    };
    struct ork_gguf *g = NULL;
    if (ork_gguf_open_mem(data, size, &g) < 0)
        return;
    struct ork_tokenizer *t = NULL;
    if (ork_tokenizer_load(g, &t) == 0) {
        for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
            exercise(t, texts[i], strlen(texts[i]), NULL, 0);
        ork_tokenizer_free(t);
    }
    ork_gguf_close(g);
}

static void fuzz_text(const struct ork_tokenizer *t, const uint8_t *data, size_t size, bool spm)
{
    if (size > FUZZ_MAX_TEXT)
        size = FUZZ_MAX_TEXT;
    const char *text = (const char *)data;
    char *want = NULL;
    size_t want_len = 0;
    /* A literal U+2581 in SPM input is indistinguishable from an escaped space. */
    bool lossless = valid_utf8(data, size) && !(spm && memmem(data, size, "\xe2\x96\x81", 3));
    if (lossless) {
        /* SPM adds its dummy-prefix space to non-empty text. */
        want = malloc(size + 2);
        if (spm && size)
            want[want_len++] = ' ';
        memcpy(want + want_len, text, size);
        want_len += size;
    }
    exercise(t, text, size, want, want_len);
    free(want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    switch (data[0] % 3) {
    case 0:
        fuzz_gguf(data + 1, size - 1);
        break;
    case 1:
        fuzz_text(spm_vocab(), data + 1, size - 1, true);
        break;
    default:
        if (size < 2)
            return 0;
        fuzz_text(bpe_vocab(data[1] % N_PRETOK), data + 2, size - 2, false);
        break;
    }
    return 0;
}
