/* fuzz_grammar.c -- libFuzzer target for the GBNF parser and matcher.
 *
 * The input is split at its first NUL byte: before it, a grammar; after it, text. A grammar
 * that parses is then driven three ways: the text is fed to a matcher byte by byte and all at
 * once (both must agree), the token filter runs over a small vocabulary built here at every
 * step of a walk through allowed tokens, and each token it allows must be accepted. Any
 * crash, sanitizer report or disagreement (abort) is a finding. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ork-engine/grammar.h>
#include <ork/error.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_INPUT 8192     /* keep each input fast */
#define FUZZ_STEPS 16           /* filter steps per input */
#define FUZZ_VOCAB 300

static const char *pieces[FUZZ_VOCAB];
static size_t lens[FUZZ_VOCAB];
static bool eog[FUZZ_VOCAB];
static char store[FUZZ_VOCAB][4];
static struct ork_grammar_vocab *vocab;

static void vocab_init(void)
{
    static const char *const words[] = { "ab", "a", "\"", "{\"", "\":", " ", "\n", "12", "x]",
                                         "\xc3\xa9", "\xe6\x97", "\xa5", "true", "},", "\\u" };
    for (int i = 0; i < FUZZ_VOCAB; i++) {
        if (i < 256) {
            store[i][0] = (char)i;
            pieces[i] = store[i];
            lens[i] = 1;
        } else if (i - 256 < (int)(sizeof words / sizeof words[0])) {
            pieces[i] = words[i - 256];
            lens[i] = strlen(words[i - 256]);
        } else {
            pieces[i] = "";
        }
    }
    eog[FUZZ_VOCAB - 1] = true;
    if (ork_grammar_vocab_create_raw(FUZZ_VOCAB, pieces, lens, eog, &vocab) < 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FUZZ_MAX_INPUT)
        return 0;
    if (!vocab)
        vocab_init();
    const uint8_t *nul = memchr(data, 0, size);
    size_t glen = nul ? (size_t)(nul - data) : size;
    const char *text = nul ? (const char *)nul + 1 : "";
    size_t tlen = nul ? size - glen - 1 : 0;
    struct ork_grammar *g = NULL;
    if (ork_grammar_parse((const char *)data, glen, &g) < 0)
        return 0;
    struct ork_grammar_matcher *a = NULL, *b = NULL;
    if (ork_grammar_matcher_create(g, &a) < 0 || ork_grammar_matcher_create(g, &b) < 0)
        goto out;
    int whole = ork_grammar_matcher_accept_bytes(a, text, tlen);
    int bytes = 0;
    for (size_t i = 0; i < tlen && bytes == 0; i++)
        bytes = ork_grammar_matcher_accept_bytes(b, text + i, 1);
    if ((whole == 0) != (bytes == 0) && whole != ORK_ERANGE && bytes != ORK_ERANGE)
        abort();
    ork_grammar_matcher_reset(a);
    static uint8_t allowed[FUZZ_VOCAB];
    for (int step = 0; step < FUZZ_STEPS; step++) {
        int n = ork_grammar_matcher_allowed(a, vocab, allowed);
        if (n <= 0)
            break;
        int id = -1;
        for (int i = (step * 37) % FUZZ_VOCAB, k = 0; k < FUZZ_VOCAB && id < 0; k++)
            if (allowed[(i + k) % FUZZ_VOCAB])
                id = (i + k) % FUZZ_VOCAB;
        if (id < 0)
            abort();   /* the count said some were allowed */
        int r = ork_grammar_matcher_accept_token(a, vocab, id);
        if (r < 0 && r != ORK_ERANGE)
            abort();   /* an allowed token must be accepted */
        if (eog[id] || r < 0)
            break;
    }
out:
    ork_grammar_matcher_free(a);
    ork_grammar_matcher_free(b);
    ork_grammar_free(g);
    return 0;
}
