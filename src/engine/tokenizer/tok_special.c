/* tok_special.c -- special tokens: which ids they are, which of them end generation, and how
 * their texts are cut out of raw input before the normal tokenizer runs.
 *
 * Special tokens are those of kind CONTROL, USER_DEFINED or UNKNOWN. Raw text is split on
 * their texts, longest text first: for each special token in that order, every occurrence in
 * the still-raw fragments becomes a token fragment. CONTROL and UNKNOWN tokens are only
 * recognised when the caller asks to parse specials; USER_DEFINED ones always are (as the
 * reference and HF tokenizers pre-split "added tokens"; e.g. Qwen3's <think>).
 *
 * Not here: the tokenizers that run on the raw fragments (tok_spm.c, tok_bpe.c). */
#include <stdlib.h>
#include <string.h>

#include <ork/alloc.h>
#include <ork/error.h>

#include "tok_internal.h"

/* Texts that end a turn in the chat formats we know (ChatML, Llama 3, Phi-3, Gemma, GPT-2 /
 * Qwen base, DeepSeek, ...). Such tokens join the EOG set and are treated as CONTROL, as the
 * reference loader does. Source: the chat templates of those model families. */
static const char *const eog_texts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<end_of_turn>",
    "<|endoftext|>", "<|eom_id|>", "<EOT>", "_<EOT>", "<|end_of_text|>", "<end_of_utterance>",
};

/* Candidates for the EOT id when tokenizer.ggml.eot_token_id is absent, in preference order.
 * The DeepSeek text is "<｜end▁of▁sentence｜>" (full-width bars, U+2581 spaces). */
static const char *const eot_texts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<EOT>", "_<EOT>",
    "<\xef\xbd\x9c" "end\xe2\x96\x81" "of\xe2\x96\x81" "sentence\xef\xbd\x9c>",
    "<end_of_utterance>",
};

/* EOS-like texts that end generation without changing their kind. */
static const char *const eog_extra_texts[] = { "</s>" };

static int32_t find_cstr(const struct ork_tokenizer *t, const char *s)
{
    return ork__tok_find(t, s, strlen(s));
}

static int add_eog(struct ork_tokenizer *t, int32_t id, uint32_t *cap)
{
    if (id < 0)
        return 0;
    for (uint32_t i = 0; i < t->n_eog; i++)
        if (t->eog[i] == id)
            return 0;
    if (t->n_eog == *cap) {
        uint32_t nc = *cap ? *cap * 2 : 8;
        int32_t *p = ork_realloc(t->eog, nc * sizeof(*p));
        if (!p)
            return ork_errorf(ORK_ENOMEM, "tokenizer: EOG set");
        t->eog = p;
        *cap = nc;
    }
    t->eog[t->n_eog++] = id;
    return 0;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static int setup_eog(struct ork_tokenizer *t)
{
    uint32_t cap = 0;
    int ret;
    if (t->eot < 0) {
        for (size_t i = 0; i < sizeof eot_texts / sizeof eot_texts[0] && t->eot < 0; i++)
            t->eot = find_cstr(t, eot_texts[i]);
    }
    for (size_t i = 0; i < sizeof eog_texts / sizeof eog_texts[0]; i++) {
        int32_t id = find_cstr(t, eog_texts[i]);
        if (id < 0)
            continue;
        t->kind[id] = ORK_TOKEN_CONTROL;
        if ((ret = add_eog(t, id, &cap)) < 0)
            return ret;
    }
    for (size_t i = 0; i < sizeof eog_extra_texts / sizeof eog_extra_texts[0]; i++)
        if ((ret = add_eog(t, find_cstr(t, eog_extra_texts[i]), &cap)) < 0)
            return ret;
    if ((ret = add_eog(t, t->eos, &cap)) < 0 || (ret = add_eog(t, t->eot, &cap)) < 0 ||
        (ret = add_eog(t, t->eom, &cap)) < 0)
        return ret;
    if (t->n_eog)
        qsort(t->eog, t->n_eog, sizeof(*t->eog), cmp_i32);
    return 0;
}

bool ork_tokenizer_is_eog(const struct ork_tokenizer *t, int32_t id)
{
    if (!t || id < 0)
        return false;
    return t->n_eog && bsearch(&id, t->eog, t->n_eog, sizeof(*t->eog), cmp_i32) != NULL;
}

static bool is_special_kind(uint8_t k)
{
    return k == ORK_TOKEN_CONTROL || k == ORK_TOKEN_USER_DEFINED || k == ORK_TOKEN_UNKNOWN;
}

/* qsort context-free comparison needs the tokenizer: sort (length, id) keys instead. */
struct special_key {
    uint32_t len;
    int32_t id;
};

static int cmp_special(const void *a, const void *b)
{
    const struct special_key *x = a, *y = b;
    if (x->len != y->len)
        return x->len > y->len ? -1 : 1;    /* longest first */
    return (x->id > y->id) - (x->id < y->id);
}

/* Phi-3 vocabularies: the special tokens swallow the whitespace after them, except <unk>,
 * <s> and <|endoftext|> (the rstrip flags of the Phi-3 tokenizer.json added_tokens). */
static void setup_phi3_strip(struct ork_tokenizer *t, const struct ork_gguf *g)
{
    struct ork_gguf_str name;
    if (ork_gguf_get_str(g, "general.name", &name) < 0)
        return;
    char low[64];
    size_t n = name.len < sizeof low - 1 ? (size_t)name.len : sizeof low - 1;
    for (size_t i = 0; i < n; i++) {
        char c = name.ptr[i];
        low[i] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
    }
    low[n] = 0;
    if (!strstr(low, "phi-3") && !strstr(low, "phi3"))
        return;
    for (uint32_t i = 0; i < t->n_special; i++)
        t->attr[t->special[i]] |= ORK__TOK_ATTR_RSTRIP;
    int32_t id = find_cstr(t, "</s>");
    if (id >= 0)
        t->attr[id] |= ORK__TOK_ATTR_RSTRIP;
    static const char *const keep[] = { "<unk>", "<s>", "<|endoftext|>" };
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++)
        if ((id = find_cstr(t, keep[i])) >= 0)
            t->attr[id] &= (uint8_t)~ORK__TOK_ATTR_RSTRIP;
}

int ork__tok_setup_special(struct ork_tokenizer *t, const struct ork_gguf *g)
{
    int ret = setup_eog(t);
    if (ret < 0)
        return ret;
    uint32_t n = 0;
    for (int32_t i = 0; i < t->n_vocab; i++)
        n += is_special_kind(t->kind[i]) && t->off[i + 1] > t->off[i];
    t->n_special = n;
    if (n) {
        struct special_key *k = ork_malloc(n * sizeof(*k));
        t->special = ork_malloc(n * sizeof(*t->special));
        if (!k || !t->special) {
            ork_free(k);
            return ork_errorf(ORK_ENOMEM, "tokenizer: %u special tokens", n);
        }
        uint32_t j = 0;
        for (int32_t i = 0; i < t->n_vocab; i++) {
            uint32_t len = t->off[i + 1] - t->off[i];
            if (is_special_kind(t->kind[i]) && len)
                k[j++] = (struct special_key){ len, i };
        }
        qsort(k, n, sizeof(*k), cmp_special);
        for (uint32_t i = 0; i < n; i++)
            t->special[i] = k[i].id;
        ork_free(k);
    }
    setup_phi3_strip(t, g);
    return 0;
}

/* ---- partition -------------------------------------------------------------------------- */

/* Whitespace for the strip flags: the C locale's isspace(). */
static bool ascii_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

struct frag_vec {
    struct ork__tok_frag *v;
    size_t n, cap;
};

static int frag_push(struct frag_vec *f, int32_t id, size_t off, size_t len)
{
    if (f->n == f->cap) {
        size_t nc = f->cap ? f->cap * 2 : 16;
        struct ork__tok_frag *p = ork_realloc(f->v, nc * sizeof(*p));
        if (!p)
            return ork_errorf(ORK_ENOMEM, "tokenizer: %zu text fragments", nc);
        f->v = p;
        f->cap = nc;
    }
    f->v[f->n++] = (struct ork__tok_frag){ id, (uint32_t)off, (uint32_t)len };
    return 0;
}

/* Cut every occurrence of special token `id` out of the raw fragments of `in` into `out`. */
static int split_on(const struct ork_tokenizer *t, int32_t id, const char *text,
                    const struct frag_vec *in, struct frag_vec *out)
{
    size_t k;
    const char *s = ork__tok_text(t, id, &k);
    uint8_t attr = t->attr[id];
    out->n = 0;
    for (size_t i = 0; i < in->n; i++) {
        const struct ork__tok_frag *f = &in->v[i];
        int ret;
        if (f->id >= 0) {
            if ((ret = frag_push(out, f->id, f->off, f->len)) < 0)
                return ret;
            continue;
        }
        size_t base = f->off, blen = f->len;
        for (;;) {
            const char *m = blen >= k ? memmem(text + base, blen, s, k) : NULL;
            if (!m) {
                if (blen && (ret = frag_push(out, -1, base, blen)) < 0)
                    return ret;
                break;
            }
            size_t mo = (size_t)(m - text), left = mo - base;
            if (attr & ORK__TOK_ATTR_LSTRIP)
                while (left && ascii_space(text[base + left - 1]))
                    left--;
            if (left && (ret = frag_push(out, -1, base, left)) < 0)
                return ret;
            if ((ret = frag_push(out, id, mo, k)) < 0)
                return ret;
            size_t roff = mo + k, rlen = base + blen - roff;
            if (attr & ORK__TOK_ATTR_RSTRIP)
                while (rlen && ascii_space(text[roff])) {
                    roff++;
                    rlen--;
                }
            if (!rlen)
                break;
            base = roff;
            blen = rlen;
        }
    }
    return 0;
}

int ork__tok_partition(const struct ork_tokenizer *t, const char *text, size_t len,
                       bool parse_special, struct ork__tok_frag **frags, size_t *n_frags)
{
    struct frag_vec a = { 0 }, b = { 0 };
    int ret = 0;
    *frags = NULL;
    *n_frags = 0;
    if (len == 0)
        return 0;
    if (len > UINT32_MAX)
        return ork_errorf(ORK_ERANGE, "tokenizer: input of %zu bytes is too long", len);
    if ((ret = frag_push(&a, -1, 0, len)) < 0)
        goto out;
    uint8_t present[32] = { 0 };
    for (size_t i = 0; i < len; i++) {
        uint8_t c = (uint8_t)text[i];
        present[c >> 3] |= (uint8_t)(1u << (c & 7));
    }
    for (uint32_t i = 0; i < t->n_special; i++) {
        int32_t id = t->special[i];
        uint8_t kind = t->kind[id];
        if (!parse_special && (kind == ORK_TOKEN_CONTROL || kind == ORK_TOKEN_UNKNOWN))
            continue;
        size_t k;
        const char *s = ork__tok_text(t, id, &k);
        uint8_t c = (uint8_t)s[0];
        if (k > len || !(present[c >> 3] & (1u << (c & 7))) || !memmem(text, len, s, k))
            continue;
        if ((ret = split_on(t, id, text, &a, &b)) < 0)
            goto out;
        struct frag_vec tmp = a;
        a = b;
        b = tmp;
    }
    *frags = a.v;
    *n_frags = a.n;
    a.v = NULL;
out:
    ork_free(a.v);
    ork_free(b.v);
    return ret;
}
