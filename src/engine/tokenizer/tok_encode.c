/* tok_encode.c -- ork_tokenize(): split the input on special tokens, run the model's
 * tokenizer (SPM or byte-level BPE) on each raw fragment, add BOS/EOS; plus the per-call
 * scratch buffers and the bigram priority queue both BPE variants use.
 *
 * Not here: the merge loops themselves (tok_spm.c, tok_bpe.c), the special-token split
 * (tok_special.c), pre-tokenizer regexes (tok_pretok.c). */
#include <string.h>

#include <ork/alloc.h>
#include <ork/error.h>

#include "tok_internal.h"

void ork__tok_scratch_free(struct ork__tok_scratch *s)
{
    ork_free(s->sym);
    ork_free(s->heap);
    ork_free(s->buf);
    ork_free(s->word);
    ork_free(s->seg);
    ork_free(s->seg2);
    ork__pretok_match_data_free(s->match_data);
    memset(s, 0, sizeof(*s));
}

int ork__tok_reserve(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t nc = *cap ? *cap : 64;
    while (nc < need) {
        if (nc > SIZE_MAX / 2 / elem)
            return ork_errorf(ORK_ENOMEM, "tokenizer: scratch of %zu elements", need);
        nc *= 2;
    }
    void *q = ork_realloc(*p, nc * elem);
    if (!q)
        return ork_errorf(ORK_ENOMEM, "tokenizer: scratch of %zu bytes", nc * elem);
    *p = q;
    *cap = nc;
    return 0;
}

/* Binary min-heap on (key): both tokenizers encode "best first, then leftmost" in the key. */
int ork__tok_heap_push(struct ork__tok_scratch *s, uint64_t key, int32_t left, uint32_t size)
{
    int ret = ork__tok_reserve((void **)&s->heap, &s->heap_cap, s->heap_n + 1,
                               sizeof(*s->heap));
    if (ret < 0)
        return ret;
    size_t i = s->heap_n++;
    struct ork__tok_bigram b = { key, left, size };
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (s->heap[p].key <= key)
            break;
        s->heap[i] = s->heap[p];
        i = p;
    }
    s->heap[i] = b;
    return 0;
}

bool ork__tok_heap_pop(struct ork__tok_scratch *s, struct ork__tok_bigram *out)
{
    if (!s->heap_n)
        return false;
    *out = s->heap[0];
    struct ork__tok_bigram last = s->heap[--s->heap_n];
    size_t n = s->heap_n, i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && s->heap[c + 1].key < s->heap[c].key)
            c++;
        if (last.key <= s->heap[c].key)
            break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (n)
        s->heap[i] = last;
    return true;
}

static int encode_fragments(const struct ork_tokenizer *t, struct ork__tok_scratch *s,
                            const char *text, const struct ork__tok_frag *f, size_t n_frags,
                            struct ork__tok_out *o)
{
    /* SPM: a raw run gets the dummy-prefix space when it starts the text or follows a
     * special token (SentencePiece treats each such run as a fresh sentence). */
    bool prev_special = true;
    for (size_t i = 0; i < n_frags; i++) {
        int ret = 0;
        if (f[i].id >= 0) {
            ork__tok_out_push(o, f[i].id);
            prev_special = true;
            continue;
        }
        if (t->family == ORK__TOK_SPM) {
            ret = ork__tok_spm_encode(t, s, text + f[i].off, f[i].len,
                                      t->add_space_prefix && prev_special, o);
        } else {
            ret = ork__tok_bpe_encode(t, s, text + f[i].off, f[i].len, o);
        }
        if (ret < 0)
            return ret;
        prev_special = false;
    }
    return 0;
}

int ork_tokenize(const struct ork_tokenizer *t, const char *text, size_t len, bool add_special,
                 bool parse_special, int32_t *ids, size_t cap, size_t *n_out)
{
    if (n_out)
        *n_out = 0;
    if (!t || !n_out || (!text && len) || (!ids && cap))
        return ork_errorf(ORK_EINVAL, "ork_tokenize: NULL argument");
    struct ork__tok_out o = { ids, cap, 0 };
    struct ork__tok_scratch s = { 0 };
    struct ork__tok_frag *frags = NULL;
    size_t n_frags = 0;
    int ret = ork__tok_partition(t, text, len, parse_special, &frags, &n_frags);
    if (ret < 0)
        goto out;
    if (add_special && t->add_bos && t->bos >= 0)
        ork__tok_out_push(&o, t->bos);
    if ((ret = encode_fragments(t, &s, text, frags, n_frags, &o)) < 0)
        goto out;
    if (add_special && t->add_eos && t->eos >= 0)
        ork__tok_out_push(&o, t->eos);
    *n_out = o.n;
    if (o.n > cap)
        ret = ork_errorf(ORK_ENOSPC, "ork_tokenize: %zu tokens do not fit in %zu", o.n, cap);
out:
    ork_free(frags);
    ork__tok_scratch_free(&s);
    return ret;
}

int ork__tok_merge_queue(const struct ork_tokenizer *t, struct ork__tok_scratch *s,
                         ork__tok_try_bigram_fn try_bigram)
{
    int ret;
    struct ork__tok_bigram bg;
    while (ork__tok_heap_pop(s, &bg)) {
        /* The right symbol is the left one's current neighbour: if either side was merged
         * into something else meanwhile, the sizes no longer add up. */
        struct ork__tok_sym *l = &s->sym[bg.left];
        if (l->n == 0 || l->next < 0)
            continue;
        struct ork__tok_sym *r = &s->sym[l->next];
        if (r->n == 0 || l->n + r->n != bg.size)
            continue;   /* stale: one side was merged into something else */
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0)
            s->sym[r->next].prev = bg.left;
        if ((ret = try_bigram(t, s, l->prev, bg.left)) < 0 ||
            (ret = try_bigram(t, s, bg.left, l->next)) < 0)
            return ret;
    }
    return 0;
}
