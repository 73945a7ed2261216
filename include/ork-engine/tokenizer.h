/* ork-engine/tokenizer.h -- tokenizers built from GGUF metadata.
 *
 * tokenizer.ggml.model "llama" -> SentencePiece BPE (scores, byte fallback <0xNN>);
 * "gpt2" -> byte-level BPE with merges and the pre-tokenizer named by tokenizer.ggml.pre
 * (gpt2/default, llama-bpe, qwen2, deepseek-llm, ...; PCRE2 Unicode regexes). An unknown
 * model or pre-tokenizer is ORK_EUNSUPPORTED with a message naming it.
 *
 * The tokenizer copies what it needs out of the GGUF; it does not borrow the mapping. */
#ifndef ORK_ENGINE_TOKENIZER_H
#define ORK_ENGINE_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ork-engine/gguf.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ork_tokenizer;

/* Token attribute bits (from tokenizer.ggml.token_type: 1 normal, 2 unknown, 3 control,
 * 4 user-defined, 5 unused, 6 byte). */
enum ork_token_kind {
    ORK_TOKEN_NORMAL = 1, ORK_TOKEN_UNKNOWN = 2, ORK_TOKEN_CONTROL = 3,
    ORK_TOKEN_USER_DEFINED = 4, ORK_TOKEN_UNUSED = 5, ORK_TOKEN_BYTE = 6,
};

int ork_tokenizer_load(const struct ork_gguf *g, struct ork_tokenizer **out);
void ork_tokenizer_free(struct ork_tokenizer *t);

int32_t ork_tokenizer_n_vocab(const struct ork_tokenizer *t);
int32_t ork_tokenizer_bos(const struct ork_tokenizer *t);   /* -1 if none */
int32_t ork_tokenizer_eos(const struct ork_tokenizer *t);   /* -1 if none */
bool ork_tokenizer_add_bos(const struct ork_tokenizer *t);  /* the model wants BOS prepended */
bool ork_tokenizer_add_eos(const struct ork_tokenizer *t);
/* End-of-generation: EOS, EOT (<|im_end|>, <|eot_id|>, <|endoftext|>...) per metadata/vocab. */
bool ork_tokenizer_is_eog(const struct ork_tokenizer *t, int32_t id);
enum ork_token_kind ork_tokenizer_kind(const struct ork_tokenizer *t, int32_t id);
/* Raw vocabulary entry (not NUL-terminated; as stored in the GGUF). NULL for bad ids. */
const char *ork_tokenizer_piece(const struct ork_tokenizer *t, int32_t id, size_t *len);
/* Id of an exact vocabulary entry, or -1. */
int32_t ork_tokenizer_find(const struct ork_tokenizer *t, const char *piece, size_t len);

/* Encode text. add_special: prepend BOS / append EOS as the model's add flags say.
 * parse_special: recognise control/user-defined token texts (e.g. "<|im_start|>") in the input.
 * Writes at most cap ids; *n_out receives the full count. Returns 0, or ORK_ENOSPC when cap
 * was too small (call again with *n_out), or another error. */
int ork_tokenize(const struct ork_tokenizer *t, const char *text, size_t len, bool add_special,
                 bool parse_special, int32_t *ids, size_t cap, size_t *n_out);

/* Bytes of one token as text (SPM: "▁" -> " ", <0xNN> -> the byte; byte-level BPE: unmapped
 * bytes). Control tokens give "" unless render_special. Returns the byte count (may exceed
 * cap: then nothing useful was written), or a negative error for a bad id. */
int ork_token_to_bytes(const struct ork_tokenizer *t, int32_t id, bool render_special,
                       char *buf, size_t cap);

/* Streaming detokenizer: holds back incomplete UTF-8 sequences so every emitted chunk is valid
 * UTF-8 (invalid sequences become U+FFFD). Caller-owned state; no allocation.
 * Leading space: nothing is stripped. The first SPM piece after BOS keeps its space
 * ("▁Once" -> " Once"), as when printing piece by piece: BOS + "Once upon a time" decodes to
 * " Once upon a time". ork_detokenize() does the same. */
struct ork_detok {
    const struct ork_tokenizer *t;
    bool render_special;
    bool first;             /* no text emitted yet (informational; nothing is stripped) */
    uint8_t pending[8];     /* bytes of an incomplete UTF-8 sequence */
    uint32_t n_pending;
};
void ork_detok_init(struct ork_detok *d, const struct ork_tokenizer *t, bool render_special);
/* Append the text of `id`; returns bytes written to out (needs cap >= 256 + piece length),
 * or a negative error (ORK_ENOSPC: buffer too small, state unchanged; ORK_EINVAL: bad id). */
int ork_detok_push(struct ork_detok *d, int32_t id, char *out, size_t cap);
/* Emit whatever is pending (incomplete sequences as U+FFFD). */
int ork_detok_flush(struct ork_detok *d, char *out, size_t cap);

/* Whole-sequence convenience: NUL-terminated result; returns length or negative error
 * (ORK_ENOSPC with the needed length available by calling with cap 0: with cap 0 (or out
 * NULL) nothing is written and the length without the NUL is returned). */
int ork_detokenize(const struct ork_tokenizer *t, const int32_t *ids, size_t n, bool render_special,
                   char *out, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
