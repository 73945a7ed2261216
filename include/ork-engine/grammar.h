/* ork-engine/grammar.h -- grammar-constrained generation: GBNF grammars (the format llama.cpp's
 * users write: `name ::= ...` rules, `|`, grouping, `*` `+` `?` `{m,n}`, string literals,
 * character classes, `.`, `#` comments, a `root` rule), a matcher that follows every way the
 * text so far can continue, a token filter over a model's vocabulary, and a JSON-schema to GBNF
 * converter.
 *
 * Objects and ownership:
 *   struct ork_grammar          the compiled grammar; immutable, may be shared by threads.
 *   struct ork_grammar_vocab    the vocabulary's token bytes in a byte trie, and which tokens end
 *                               generation; built once per model, immutable, shareable.
 *   struct ork_grammar_matcher  one sequence's position in a grammar; borrows the grammar, which
 *                               must outlive it (freeing the matcher does not touch it).
 *
 * The grammar matches Unicode code points over the UTF-8 bytes of the text; a token may end in
 * the middle of a character (the matcher keeps the pending bytes). See docs/sampling.md. */
#ifndef ORK_ENGINE_GRAMMAR_H
#define ORK_ENGINE_GRAMMAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ork_grammar;
struct ork_grammar_vocab;
struct ork_grammar_matcher;
struct ork_tokenizer;

/* Parse and compile GBNF text (len bytes, need not be NUL-terminated). Errors are ORK_EFORMAT
 * with a message "grammar: LINE:COL: what was wrong" (also: an undefined rule, no `root`
 * rule, left recursion, a repetition bound above ORK_GRAMMAR_MAX_REPEAT). */
int ork_grammar_parse(const char *text, size_t len, struct ork_grammar **out);
void ork_grammar_free(struct ork_grammar *g);
/* Largest m or n in x{m,n}: each repetition is expanded into rules. */
#define ORK_GRAMMAR_MAX_REPEAT 10000

/* JSON schema (a JSON document, len bytes) to GBNF text (NUL-terminated, free with ork_free).
 * Supported: type (object, array, string, number, integer, boolean, null, or a list of
 * those), properties, required, additionalProperties (false when properties are given),
 * enum, const, items, prefixItems, minItems, maxItems, minLength, maxLength, anyOf, oneOf,
 * allOf of one schema, $ref to "#/$defs/..." or "#/definitions/...", string formats date,
 * time, date-time, uuid; {} or true is any JSON value. Keywords that would constrain values
 * in ways the grammar cannot honour (pattern, minimum, maximum, multipleOf, ...) are
 * ORK_EUNSUPPORTED naming the keyword; a malformed schema is ORK_EFORMAT naming the path. */
int ork_json_schema_to_gbnf(const char *schema, size_t len, char **gbnf);
/* Convert and compile in one call. */
int ork_grammar_from_json_schema(const char *schema, size_t len, struct ork_grammar **out);
/* The schema of OpenAI's response_format {"type": "json_object"}: any JSON object. */
#define ORK_JSON_OBJECT_SCHEMA "{\"type\":\"object\"}"

/* The vocabulary as the filter needs it: every token's bytes (ork_token_to_bytes, control
 * tokens as "") and its end-of-generation flag. Tokens whose bytes are empty and that do not
 * end generation are never allowed under a grammar. */
int ork_grammar_vocab_create(const struct ork_tokenizer *tok, struct ork_grammar_vocab **out);
/* The same from explicit token bytes (tests, tools): pieces[i] of lens[i] bytes, eog[i]. */
int ork_grammar_vocab_create_raw(int32_t n_vocab, const char *const *pieces, const size_t *lens,
                                 const bool *eog, struct ork_grammar_vocab **out);
void ork_grammar_vocab_free(struct ork_grammar_vocab *v);
int32_t ork_grammar_vocab_n(const struct ork_grammar_vocab *v);

int ork_grammar_matcher_create(const struct ork_grammar *g, struct ork_grammar_matcher **out);
void ork_grammar_matcher_free(struct ork_grammar_matcher *m);
/* Back to the start of the root rule. */
void ork_grammar_matcher_reset(struct ork_grammar_matcher *m);
/* Advance by n bytes of text. ORK_EINVAL when the grammar does not allow them (the state is then
 * unchanged); ORK_ERANGE when the grammar is too ambiguous to follow (more than
 * ORK_GRAMMAR_MAX_STACKS positions at once). */
int ork_grammar_matcher_accept_bytes(struct ork_grammar_matcher *m, const char *s, size_t n);
/* Advance by a token's bytes; an end-of-generation token is accepted only when the grammar can
 * end, and then restarts the matcher at the root (the next text starts a new match). */
int ork_grammar_matcher_accept_token(struct ork_grammar_matcher *m,
                                     const struct ork_grammar_vocab *v, int32_t id);
/* The text so far is a complete match of the root rule. */
bool ork_grammar_matcher_can_end(const struct ork_grammar_matcher *m);
/* Which tokens may come next: allowed[n_vocab] set to 1 or 0; returns how many are allowed
 * (end-of-generation tokens count only when the grammar can end), or a negative error. Walks
 * the vocabulary's trie once against the current positions, pruning every subtree whose
 * prefix the grammar rejects. No allocation once the matcher's buffers have grown. */
int ork_grammar_matcher_allowed(struct ork_grammar_matcher *m, const struct ork_grammar_vocab *v,
                                uint8_t *allowed);
/* The filter cache (docs/sampling.md): a matcher keeps the result of up to max_entries walks
 * that visited at least min_nodes trie nodes, as a bitmask of the vocabulary keyed by the exact
 * matcher state, and reuses it when that state comes back (inside a free string it does after
 * every character). Memory: max_entries * n_vocab / 8 bytes (the defaults on a 152k
 * vocabulary: 304 KB per matcher). max_entries 0 turns the cache off; results are the same
 * either way. Set at creation to the defaults below; setting it empties the cache. */
int ork_grammar_matcher_set_cache(struct ork_grammar_matcher *m, uint32_t max_entries,
                                  uint32_t min_nodes);
struct ork_grammar_cache_stats {
    uint64_t hits, misses, stored;  /* filter calls answered from the cache, walked, kept */
};
void ork_grammar_matcher_cache_stats(const struct ork_grammar_matcher *m,
                                     struct ork_grammar_cache_stats *out);
/* Entries: a JSON schema's distinct expensive states are its string positions (one per
 * property or array of strings being written at a time), a handful; 16 leaves room for
 * nesting. */
#define ORK_GRAMMAR_CACHE_ENTRIES 16
/* Walks smaller than this are not kept: at structural JSON positions the walk visits tens to
 * hundreds of nodes and costs 0.005-0.014 ms (docs/sampling.md), less than unpacking a mask. */
#define ORK_GRAMMAR_CACHE_MIN_NODES 4096

/* Positions followed at once beyond which the matcher gives up (ORK_ERANGE): only very
 * ambiguous grammars get there; a JSON grammar follows one or two. */
#define ORK_GRAMMAR_MAX_STACKS 4096

#ifdef __cplusplus
}
#endif
#endif
