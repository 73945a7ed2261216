/* tok_spm.c -- SentencePiece BPE ("llama" tokenizer model) on one raw text fragment.
 *
 * The text is escaped (' ' -> U+2581 "▁", plus a leading "▁" when the fragment starts a
 * sentence), split into UTF-8 characters, and then the adjacent pair whose concatenation is a
 * vocabulary entry with the highest score is merged, repeatedly (ties: leftmost first). Each
 * final piece that is not in the vocabulary falls back to its bytes as <0xNN> tokens.
 *
 * Not here: special-token splitting and BOS/EOS (tok_encode.c, tok_special.c). */
#include <string.h>

#include <ork/error.h>

#include "tok_internal.h"

/* U+2581 LOWER ONE EIGHTH BLOCK: SentencePiece's visible stand-in for a space. */
static const char spm_space[3] = { (char)0xE2, (char)0x96, (char)0x81 };

/* Map a float onto uint32 so that unsigned order equals float order (sign-magnitude ->
 * offset binary). */
static uint32_t float_order(float f)
{
    if (f == 0.0f)
        f = 0.0f;   /* -0 and +0 compare equal */
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

static int try_bigram(const struct ork_tokenizer *t, struct ork__tok_scratch *s, int32_t l,
                      int32_t r)
{
    if (l < 0 || r < 0)
        return 0;
    const struct ork__tok_sym *a = &s->sym[l], *b = &s->sym[r];
    uint32_t size = a->n + b->n;
    int32_t id = ork__tok_find(t, s->buf + a->start, size);
    if (id < 0)
        return 0;
    /* Highest score first, then leftmost: the heap pops the smallest key. */
    uint64_t key = ((uint64_t)~float_order(t->score[id]) << 32) | (uint32_t)l;
    return ork__tok_heap_push(s, key, l, size);
}

static void emit_piece(const struct ork_tokenizer *t, const char *p, uint32_t n,
                       struct ork__tok_out *o)
{
    int32_t id = ork__tok_find(t, p, n);
    if (id >= 0) {
        ork__tok_out_push(o, id);
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        uint8_t c = (uint8_t)p[i];
        id = t->byte_tok[c];
        if (id < 0)
            id = ork__tok_find(t, p + i, 1);    /* a vocabulary without <0xNN> pieces */
        if (id < 0)
            id = t->unk;
        if (id >= 0)
            ork__tok_out_push(o, id);
    }
}

int ork__tok_spm_encode(const struct ork_tokenizer *t, struct ork__tok_scratch *s,
                        const char *text, size_t len, bool space_prefix, struct ork__tok_out *o)
{
    /* Escaping grows the text up to 3x; symbol indices are int32. */
    if (len > (size_t)INT32_MAX / 3 - 1)
        return ork_errorf(ORK_ERANGE, "tokenizer: text fragment of %zu bytes is too long", len);
    size_t need = 3 * (len + 1);
    int ret = ork__tok_reserve((void **)&s->buf, &s->buf_cap, need, 1);
    if (ret < 0)
        return ret;
    size_t n = 0;
    if (space_prefix) {
        memcpy(s->buf, spm_space, sizeof spm_space);
        n = sizeof spm_space;
    }
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') {
            memcpy(s->buf + n, spm_space, sizeof spm_space);
            n += sizeof spm_space;
        } else {
            s->buf[n++] = text[i];
        }
    }
    if (n == 0)
        return 0;

    /* One symbol per UTF-8 character (lead-byte length, clamped at the end). */
    if ((ret = ork__tok_reserve((void **)&s->sym, &s->sym_cap, n, sizeof(*s->sym))) < 0)
        return ret;
    int32_t n_sym = 0;
    for (size_t off = 0; off < n;) {
        uint32_t cl = ork__utf8_lead_len((uint8_t)s->buf[off]);
        if (cl > n - off)
            cl = (uint32_t)(n - off);
        s->sym[n_sym] = (struct ork__tok_sym){ n_sym - 1, -1, (uint32_t)off, cl };
        off += cl;
        if (off < n)
            s->sym[n_sym].next = n_sym + 1;
        n_sym++;
    }

    s->heap_n = 0;
    for (int32_t i = 1; i < n_sym; i++)
        if ((ret = try_bigram(t, s, i - 1, i)) < 0)
            return ret;
    if ((ret = ork__tok_merge_queue(t, s, try_bigram)) < 0)
        return ret;
    for (int32_t i = 0; i >= 0; i = s->sym[i].next)
        emit_piece(t, s->buf + s->sym[i].start, s->sym[i].n, o);
    return 0;
}
