/* tok_bpe.c -- byte-level BPE ("gpt2" tokenizer model) on one raw text fragment.
 *
 * The fragment is made valid UTF-8 (invalid bytes -> U+FFFD), cut into pre-tokens by the
 * vocabulary's regexes (tok_pretok.c), and each pre-token's bytes are spelled with the GPT-2
 * byte map. Then, per pre-token, the adjacent pair with the lowest merge rank in
 * tokenizer.ggml.merges is merged, repeatedly (ties: leftmost first); each final piece is
 * looked up in the vocabulary.
 *
 * Not here: special-token splitting and BOS/EOS (tok_encode.c, tok_special.c). */
#include <string.h>

#include <ork/error.h>

#include "tok_internal.h"

static int try_bigram(const struct ork_tokenizer *t, struct ork__tok_scratch *s, int32_t l,
                      int32_t r)
{
    if (l < 0 || r < 0)
        return 0;
    const struct ork__tok_sym *a = &s->sym[l], *b = &s->sym[r];
    int32_t rank = ork__tok_merge_rank(t, s->word + a->start, a->n, s->word + b->start, b->n);
    if (rank < 0)
        return 0;
    /* Lowest rank first, then leftmost. */
    uint64_t key = ((uint64_t)(uint32_t)rank << 32) | (uint32_t)l;
    return ork__tok_heap_push(s, key, l, a->n + b->n);
}

static void emit_piece(const struct ork_tokenizer *t, const char *p, uint32_t n,
                       struct ork__tok_out *o)
{
    int32_t id = ork__tok_find(t, p, n);
    if (id >= 0) {
        ork__tok_out_push(o, id);
        return;
    }
    /* Not a vocabulary entry (a merge whose result is missing): its single bytes, where the
     * vocabulary has them; the rest is dropped, as in the reference. */
    for (uint32_t i = 0; i < n; i++)
        if ((id = ork__tok_find(t, p + i, 1)) >= 0)
            ork__tok_out_push(o, id);
}

static int encode_word(const struct ork_tokenizer *t, struct ork__tok_scratch *s,
                       const char *w, size_t len, struct ork__tok_out *o)
{
    int ret = ork__tok_reserve((void **)&s->word, &s->word_cap, 2 * len, 1);
    if (ret < 0)
        return ret;
    if ((ret = ork__tok_reserve((void **)&s->sym, &s->sym_cap, len, sizeof(*s->sym))) < 0)
        return ret;
    /* One symbol per input byte: its byte-map stand-in (one UTF-8 character). */
    uint32_t n = 0;
    for (size_t i = 0; i < len; i++) {
        uint8_t b = (uint8_t)w[i];
        uint32_t cl = t->bytemap.enc_len[b];
        memcpy(s->word + n, t->bytemap.enc[b], cl);
        s->sym[i] = (struct ork__tok_sym){ (int32_t)i - 1, i + 1 < len ? (int32_t)i + 1 : -1,
                                           n, cl };
        n += cl;
    }
    if (t->ignore_merges) {
        int32_t id = ork__tok_find(t, s->word, n);
        if (id >= 0) {
            ork__tok_out_push(o, id);
            return 0;
        }
    }
    s->heap_n = 0;
    for (size_t i = 1; i < len; i++)
        if ((ret = try_bigram(t, s, (int32_t)i - 1, (int32_t)i)) < 0)
            return ret;
    if ((ret = ork__tok_merge_queue(t, s, try_bigram)) < 0)
        return ret;
    for (int32_t i = 0; i >= 0; i = s->sym[i].next)
        emit_piece(t, s->word + s->sym[i].start, s->sym[i].n, o);
    return 0;
}

int ork__tok_bpe_encode(const struct ork_tokenizer *t, struct ork__tok_scratch *s,
                        const char *text, size_t len, struct ork__tok_out *o)
{
    if (len == 0)
        return 0;
    /* Repair grows the text up to 3x; piece offsets are uint32 and symbol indices int32. */
    if (len > (size_t)INT32_MAX / 3)
        return ork_errorf(ORK_ERANGE, "tokenizer: input of %zu bytes is too long", len);
    int ret = ork__tok_reserve((void **)&s->buf, &s->buf_cap, 3 * len, 1);
    if (ret < 0)
        return ret;
    size_t n = ork__utf8_sanitize(text, len, s->buf);
    size_t n_seg = 0;
    if ((ret = ork__pretok_split(&t->pre, s, s->buf, n, &n_seg)) < 0)
        return ret;
    for (size_t i = 0; i < n_seg; i++) {
        uint32_t start = s->seg[2 * i], slen = s->seg[2 * i + 1];
        if (slen && (ret = encode_word(t, s, s->buf + start, slen, o)) < 0)
            return ret;
    }
    return 0;
}
