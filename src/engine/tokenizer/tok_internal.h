/* tok_internal.h -- private state shared by the tokenizer modules (tok_*.c).
 *
 * One struct ork_tokenizer holds a copy of the vocabulary (texts, kinds, scores), the hash maps
 * over it (text -> id, merge pair -> rank), the special-token list used to split raw text, and
 * the compiled pre-tokenizer. Everything here is read-only after ork_tokenizer_load(), so one
 * tokenizer may be used from several threads; per-call scratch lives in struct ork__tok_scratch.
 *
 * Not here: the public API (include/ork-engine/tokenizer.h) and GGUF parsing (gguf.c). */
#ifndef ORK_ENGINE_TOK_INTERNAL_H
#define ORK_ENGINE_TOK_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ork-engine/tokenizer.h>

/* The two tokenizer families, selected by tokenizer.ggml.model. */
enum ork__tok_family {
    ORK__TOK_SPM,       /* "llama": SentencePiece BPE with scores and <0xNN> byte fallback */
    ORK__TOK_BPE,       /* "gpt2":  byte-level BPE with merge ranks and a regex pre-tokenizer */
};

/* Per-token attribute bits beyond the kind (only the strip flags of special tokens). */
#define ORK__TOK_ATTR_LSTRIP 0x1u   /* matching this special eats ASCII spaces on its left */
#define ORK__TOK_ATTR_RSTRIP 0x2u   /* ... and on its right */

/* Open-addressing hash set of ids, keyed by bytes the owner knows how to fetch. */
struct ork__tok_map {
    uint32_t mask;          /* capacity - 1 (capacity is a power of two) */
    int32_t *slot;          /* id or -1 */
    uint32_t *hash;         /* hash of the key in the same slot */
};

/* Merge pair "first second" -> rank (its index in tokenizer.ggml.merges). */
struct ork__tok_merge {
    uint32_t off;           /* into merge_blob: first, then second, no separator */
    uint32_t n_first;
    uint32_t n_second;
};

#define ORK__PRETOK_MAX_REGEX 6  /* the longest sequence (deepseek-llm) has six expressions */

struct ork__pretok {
    char name[48];                              /* tokenizer.ggml.pre as given */
    int n_regex;
    void *re[ORK__PRETOK_MAX_REGEX];            /* pcre2_code_8 *, applied in order */
    bool jit[ORK__PRETOK_MAX_REGEX];            /* JIT compilation succeeded */
};

/* GPT-2 byte-level map: byte -> UTF-8 of its printable stand-in, and back. */
#define ORK__BYTEMAP_DEC_SIZE 0x144u    /* stand-ins are U+0021..U+00FF and U+0100..U+0143 */
struct ork__bytemap {
    char enc[256][2];
    uint8_t enc_len[256];
    int16_t dec[ORK__BYTEMAP_DEC_SIZE]; /* code point -> byte, or -1 */
};

struct ork_tokenizer {
    enum ork__tok_family family;
    int32_t n_vocab;
    char *blob;                 /* all token texts back to back */
    uint32_t *off;              /* (n_vocab + 1) offsets into blob */
    float *score;               /* (n_vocab) SPM merge scores; zeros when absent */
    uint8_t *kind;              /* (n_vocab) enum ork_token_kind */
    uint8_t *attr;              /* (n_vocab) ORK__TOK_ATTR_* */
    struct ork__tok_map vocab;  /* text -> id (a later duplicate text wins) */

    char *merge_blob;           /* BPE only */
    struct ork__tok_merge *merge;
    uint32_t n_merges;
    struct ork__tok_map merges; /* (first, second) -> rank (the first occurrence wins) */

    int32_t bos, eos, unk, eot, eom;
    bool add_bos, add_eos;
    bool add_space_prefix;      /* SPM: prepend U+2581 to text that starts a fragment run */
    bool ignore_merges;         /* BPE: a whole pre-token found in the vocab is one token */
    int32_t byte_tok[256];      /* SPM: id of <0xNN>, or -1 */

    int32_t *special;           /* control/user-defined/unknown ids, longest text first */
    uint32_t n_special;

    int32_t *eog;               /* sorted end-of-generation ids */
    uint32_t n_eog;

    struct ork__pretok pre;     /* BPE only */
    struct ork__bytemap bytemap;
};

/* Growable arrays reused across the pieces of one ork_tokenize() call. */
struct ork__tok_sym {
    int32_t prev, next;         /* neighbours in the live chain, -1 at the ends */
    uint32_t start, n;          /* byte range in the word; n == 0 once merged away */
};

struct ork__tok_bigram {       /* the pair (left, its next symbol) */
    uint64_t key;               /* heap order: smaller pops first */
    int32_t left;
    uint32_t size;              /* left.n + right.n when queued (stale check) */
};

struct ork__tok_frag {
    int32_t id;                 /* >= 0: a special token; -1: raw text */
    uint32_t off, len;          /* raw text range */
};

struct ork__tok_out {
    int32_t *ids;
    size_t cap, n;              /* n counts every id, written or not */
};

struct ork__tok_scratch {
    struct ork__tok_sym *sym;
    size_t sym_cap;
    struct ork__tok_bigram *heap;
    size_t heap_n, heap_cap;
    char *buf;                  /* escaped/sanitized text of one fragment */
    size_t buf_cap;
    char *word;                 /* byte-level encoding of one pre-token */
    size_t word_cap;
    uint32_t *seg, *seg2;       /* pre-token boundaries: (start, len) pairs */
    size_t seg_cap, seg2_cap;
    void *match_data;           /* pcre2_match_data_8 * */
};

/* tok_vocab.c */
uint32_t ork__tok_hash(const void *p, size_t n, uint32_t h);
#define ORK__TOK_HASH_SEED 2166136261u  /* FNV-1a 32-bit offset basis */
int32_t ork__tok_find(const struct ork_tokenizer *t, const char *s, size_t n);
int32_t ork__tok_merge_rank(const struct ork_tokenizer *t, const char *a, size_t na,
                            const char *b, size_t nb);
static inline const char *ork__tok_text(const struct ork_tokenizer *t, int32_t id, size_t *n)
{
    *n = t->off[id + 1] - t->off[id];
    return t->blob + t->off[id];
}

/* tok_special.c: load-time setup (special list, EOG set, strip flags). */
int ork__tok_setup_special(struct ork_tokenizer *t, const struct ork_gguf *g);

/* tok_encode.c: scratch buffers and the bigram heap. */
void ork__tok_scratch_free(struct ork__tok_scratch *s);
int ork__tok_reserve(void **p, size_t *cap, size_t need, size_t elem);
int ork__tok_heap_push(struct ork__tok_scratch *s, uint64_t key, int32_t left, uint32_t size);
bool ork__tok_heap_pop(struct ork__tok_scratch *s, struct ork__tok_bigram *out);
/* A tokenizer's bigram scorer: pushes the pair (l, r) onto the heap if it can merge. */
typedef int (*ork__tok_try_bigram_fn)(const struct ork_tokenizer *t, struct ork__tok_scratch *s,
                                      int32_t l, int32_t r);
/* Pop bigrams best first and merge them in s->sym, re-scoring the new neighbours with
 * try_bigram, until the heap is empty. 0, or the first negative error of try_bigram. */
int ork__tok_merge_queue(const struct ork_tokenizer *t, struct ork__tok_scratch *s,
                         ork__tok_try_bigram_fn try_bigram);
static inline void ork__tok_out_push(struct ork__tok_out *o, int32_t id)
{
    if (o->n < o->cap)
        o->ids[o->n] = id;
    o->n++;
}

/* tok_special.c: split text into raw and special-token fragments (ork_free *frags). */
int ork__tok_partition(const struct ork_tokenizer *t, const char *text, size_t len,
                       bool parse_special, struct ork__tok_frag **frags, size_t *n_frags);

/* tok_spm.c / tok_bpe.c: encode one raw fragment. */
int ork__tok_spm_encode(const struct ork_tokenizer *t, struct ork__tok_scratch *s,
                        const char *text, size_t len, bool space_prefix, struct ork__tok_out *o);
int ork__tok_bpe_encode(const struct ork_tokenizer *t, struct ork__tok_scratch *s,
                        const char *text, size_t len, struct ork__tok_out *o);

/* tok_pretok.c */
int ork__pretok_init(struct ork__pretok *p, const char *name, size_t name_len,
                     bool *ignore_merges, bool *add_bos_default);
void ork__pretok_fini(struct ork__pretok *p);
void ork__pretok_match_data_free(void *md);
/* Split valid UTF-8 text into pre-tokens: s->seg receives (start, len) pairs, *n_seg pairs. */
int ork__pretok_split(const struct ork__pretok *p, struct ork__tok_scratch *s, const char *text,
                      size_t len, size_t *n_seg);

/* tok_unicode.c */
/* Byte length of the UTF-8 sequence led by c, as the reference splitter counts it (no
 * validation: continuation bytes count 1, 0xF8..0xFF count 4). */
static inline uint32_t ork__utf8_lead_len(uint8_t c)
{
    static const uint8_t len_by_high_nibble[16] = { 1, 1, 1, 1, 1, 1, 1, 1,
                                                    1, 1, 1, 1, 2, 2, 3, 4 };
    return len_by_high_nibble[c >> 4];
}
/* Copy text into dst as valid UTF-8 (invalid bytes -> U+FFFD). Returns bytes written; dst
 * must hold 3 * len bytes. */
size_t ork__utf8_sanitize(const char *src, size_t len, char *dst);
void ork__bytemap_init(struct ork__bytemap *m);
/* Decode one UTF-8 code point at s (n bytes left); returns its length, or 0 if invalid. */
uint32_t ork__utf8_decode(const uint8_t *s, size_t n, uint32_t *cp);

#endif
