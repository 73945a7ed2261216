/* grammar_priv.h -- the compiled form of a GBNF grammar, shared by the parser (grammar.c) and
 * the matcher and token filter (grammar_match.c). Not a public header.
 *
 * A grammar is one flat array of elements. Every alternative of every rule is a run of
 * elements ending with an END element; a rule is a list of alternative start indexes. A
 * position in the grammar is an element index. Repetitions and groups were already turned
 * into rules by the parser, so the matcher only knows three kinds of element. */
#ifndef ORK_ENGINE_SAMPLE_GRAMMAR_PRIV_H
#define ORK_ENGINE_SAMPLE_GRAMMAR_PRIV_H

#include <ork-engine/grammar.h>

#include <stdbool.h>
#include <stdint.h>

enum gram_elem_type {
    GRAM_END = 0,      /* end of an alternative: return to the caller */
    GRAM_CHAR,         /* one code point from a class: ranges[a .. a + b), negated by neg */
    GRAM_REF,          /* the rule a */
};

struct gram_elem {
    uint8_t type;          /* enum gram_elem_type */
    uint8_t neg;           /* GRAM_CHAR: the class is negated ([^...]) */
    uint32_t a, b;         /* see the type */
    uint64_t ascii[2];     /* GRAM_CHAR: code points 0..127 the class matches (negation applied) */
};

struct gram_range {
    uint32_t lo, hi;       /* inclusive code points */
};

struct ork_grammar {
    struct gram_elem *elems;     /* (n_elems) */
    uint32_t n_elems;
    struct gram_range *ranges;   /* (n_ranges) */
    uint32_t n_ranges;
    uint32_t *alts;              /* (n_alts) element index where each alternative starts */
    uint32_t *rule_alt;          /* (n_rules) first entry of the rule in alts */
    uint32_t *rule_n_alt;        /* (n_rules) its alternative count */
    uint32_t n_rules, n_alts;
    uint32_t root;               /* the rule named root */
};

/* Does class element e match code point cp? */
static inline bool ork__gram_class_match(const struct ork_grammar *g, const struct gram_elem *e,
                                         uint32_t cp)
{
    if (cp < 128)
        return (e->ascii[cp >> 6] >> (cp & 63)) & 1u;
    bool in = false;
    for (uint32_t i = 0; i < e->b && !in; i++)
        in = cp >= g->ranges[e->a + i].lo && cp <= g->ranges[e->a + i].hi;
    return in != (bool)e->neg;
}

#endif
