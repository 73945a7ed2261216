/* fuzz_json_schema.c -- libFuzzer target for the JSON-schema to GBNF converter.
 *
 * The input is a schema. When it converts, the grammar text must parse (the converter only
 * writes grammars the parser accepts: anything else aborts), and a matcher is run over a few
 * fixed JSON texts. Any crash or sanitizer report is a finding. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ork-engine/grammar.h>
#include <ork/alloc.h>
#include <ork/error.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_INPUT 16384    /* keep each input fast */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FUZZ_MAX_INPUT)
        return 0;
    char *text = NULL;
    if (ork_json_schema_to_gbnf((const char *)data, size, &text) < 0)
        return 0;
    struct ork_grammar *g = NULL;
    int ret = ork_grammar_parse(text, strlen(text), &g);
    /* too large or left-recursive schemas may be refused by the parser, nothing else */
    if (ret < 0 && ret != ORK_ENOMEM && !strstr(ork_error_message(), "left-recursive") &&
        !strstr(ork_error_message(), "more than") && !strstr(ork_error_message(), "defined twice"))
        abort();
    static const char *const samples[] = { "{}", "{\"a\": 1}", "[1, \"x\", null]", "\"s\"",
                                           "12.5e3", "true", "{\"a\": {\"b\": [true]}}" };
    for (size_t i = 0; g && i < sizeof samples / sizeof samples[0]; i++) {
        struct ork_grammar_matcher *m = NULL;
        if (ork_grammar_matcher_create(g, &m) == 0) {
            (void)ork_grammar_matcher_accept_bytes(m, samples[i], strlen(samples[i]));
            (void)ork_grammar_matcher_can_end(m);
        }
        ork_grammar_matcher_free(m);
    }
    ork_grammar_free(g);
    ork_free(text);
    return 0;
}
