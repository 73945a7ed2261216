/* tok_vocab.c -- build a tokenizer from GGUF metadata: copy the vocabulary (texts, kinds,
 * scores) and the BPE merges out of the file, index them with hash maps, read the special ids
 * and flags, and answer the vocabulary queries of the public API.
 *
 * Keys read (GGUF "tokenizer.ggml.*" namespace): model, tokens, scores, token_type, merges,
 * pre, bos/eos/unknown/eot/eom_token_id, add_bos_token, add_eos_token, add_space_prefix.
 *
 * Not here: special-token lists and the EOG set (tok_special.c), encoding (tok_encode.c,
 * tok_spm.c, tok_bpe.c, tok_pretok.c), decoding (tok_detok.c). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/log.h>

#include "tok_internal.h"

#define KEY_MODEL            "tokenizer.ggml.model"
#define KEY_TOKENS           "tokenizer.ggml.tokens"
#define KEY_SCORES           "tokenizer.ggml.scores"
#define KEY_TOKEN_TYPE       "tokenizer.ggml.token_type"
#define KEY_MERGES           "tokenizer.ggml.merges"
#define KEY_PRE              "tokenizer.ggml.pre"
#define KEY_ADD_BOS          "tokenizer.ggml.add_bos_token"
#define KEY_ADD_EOS          "tokenizer.ggml.add_eos_token"
#define KEY_ADD_SPACE_PREFIX "tokenizer.ggml.add_space_prefix"

/* SentencePiece's conventional ids, used when an SPM vocabulary does not name its own:
 * <unk> = 0, <s> = 1, </s> = 2 (the llama tokenizer.model layout). */
#define SPM_DEFAULT_UNK 0
#define SPM_DEFAULT_BOS 1
#define SPM_DEFAULT_EOS 2

/* ---- hashing ---------------------------------------------------------------------------- */

uint32_t ork__tok_hash(const void *p, size_t n, uint32_t h)
{
    /* FNV-1a, 32-bit (prime 16777619): short keys, no alignment needs, deterministic. */
    const uint8_t *s = p;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 16777619u;
    }
    return h;
}

static int map_init(struct ork__tok_map *m, uint32_t n_keys)
{
    uint32_t cap = 16;
    while (cap < 2u * n_keys && cap < (1u << 30))
        cap <<= 1;
    m->mask = cap - 1;
    m->slot = ork_malloc((size_t)cap * sizeof(*m->slot));
    m->hash = ork_malloc((size_t)cap * sizeof(*m->hash));
    if (!m->slot || !m->hash)
        return ork_errorf(ORK_ENOMEM, "tokenizer: hash map of %u entries", cap);
    memset(m->slot, 0xFF, (size_t)cap * sizeof(*m->slot));  /* all -1 */
    return 0;
}

static void map_free(struct ork__tok_map *m)
{
    ork_free(m->slot);
    ork_free(m->hash);
    m->slot = NULL;
    m->hash = NULL;
}

/* Vocabulary text -> id. Insertion of an equal text replaces the id (the reference keeps the
 * last of duplicate vocabulary entries). */
static void vocab_insert(struct ork_tokenizer *t, int32_t id)
{
    size_t n;
    const char *s = ork__tok_text(t, id, &n);
    uint32_t h = ork__tok_hash(s, n, ORK__TOK_HASH_SEED);
    uint32_t i = h & t->vocab.mask;
    for (;; i = (i + 1) & t->vocab.mask) {
        int32_t o = t->vocab.slot[i];
        if (o < 0) {
            t->vocab.slot[i] = id;
            t->vocab.hash[i] = h;
            return;
        }
        size_t on;
        const char *os = ork__tok_text(t, o, &on);
        if (t->vocab.hash[i] == h && on == n && memcmp(os, s, n) == 0) {
            t->vocab.slot[i] = id;
            return;
        }
    }
}

int32_t ork__tok_find(const struct ork_tokenizer *t, const char *s, size_t n)
{
    uint32_t h = ork__tok_hash(s, n, ORK__TOK_HASH_SEED);
    for (uint32_t i = h & t->vocab.mask;; i = (i + 1) & t->vocab.mask) {
        int32_t id = t->vocab.slot[i];
        if (id < 0)
            return -1;
        size_t on;
        const char *os = ork__tok_text(t, id, &on);
        if (t->vocab.hash[i] == h && on == n && memcmp(os, s, n) == 0)
            return id;
    }
}

/* Merge pairs hash first, a separator byte that never occurs in UTF-8, then second. */
#define MERGE_HASH_SEPARATOR 0xFF
static uint32_t merge_hash(const char *a, size_t na, const char *b, size_t nb)
{
    static const uint8_t sep = MERGE_HASH_SEPARATOR;
    uint32_t h = ork__tok_hash(a, na, ORK__TOK_HASH_SEED);
    h = ork__tok_hash(&sep, 1, h);
    return ork__tok_hash(b, nb, h);
}

static bool merge_eq(const struct ork_tokenizer *t, uint32_t rank, const char *a, size_t na,
                     const char *b, size_t nb)
{
    const struct ork__tok_merge *m = &t->merge[rank];
    const char *s = t->merge_blob + m->off;
    return m->n_first == na && m->n_second == nb && memcmp(s, a, na) == 0 &&
           memcmp(s + na, b, nb) == 0;
}

int32_t ork__tok_merge_rank(const struct ork_tokenizer *t, const char *a, size_t na,
                            const char *b, size_t nb)
{
    if (!t->n_merges)
        return -1;
    uint32_t h = merge_hash(a, na, b, nb);
    for (uint32_t i = h & t->merges.mask;; i = (i + 1) & t->merges.mask) {
        int32_t r = t->merges.slot[i];
        if (r < 0)
            return -1;
        if (t->merges.hash[i] == h && merge_eq(t, (uint32_t)r, a, na, b, nb))
            return r;
    }
}

/* Rank r: keeps the first of duplicate pairs (the reference's map insert does not replace). */
static void merge_insert(struct ork_tokenizer *t, uint32_t r)
{
    const struct ork__tok_merge *m = &t->merge[r];
    const char *a = t->merge_blob + m->off, *b = a + m->n_first;
    uint32_t h = merge_hash(a, m->n_first, b, m->n_second);
    for (uint32_t i = h & t->merges.mask;; i = (i + 1) & t->merges.mask) {
        int32_t o = t->merges.slot[i];
        if (o < 0) {
            t->merges.slot[i] = (int32_t)r;
            t->merges.hash[i] = h;
            return;
        }
        if (t->merges.hash[i] == h && merge_eq(t, (uint32_t)o, a, m->n_first, b, m->n_second))
            return;
    }
}

/* ---- loading --------------------------------------------------------------------------- */

static int load_tokens(struct ork_tokenizer *t, const struct ork_gguf *g)
{
    const struct ork_gguf_array *a;
    int ret = ork_gguf_get_arr(g, KEY_TOKENS, ORK_GGUF_STRING, &a);
    if (ret == ORK_ENOENT)
        return ork_errorf(ORK_EFORMAT, "tokenizer: %s is missing", KEY_TOKENS);
    if (ret < 0)
        return ret;
    if (a->n == 0 || a->n > (uint64_t)INT32_MAX)
        return ork_errorf(ORK_EFORMAT, "tokenizer: %s has %llu entries", KEY_TOKENS,
                          (unsigned long long)a->n);
    uint64_t total = 0;
    for (uint64_t i = 0; i < a->n; i++)
        total += a->strs[i].len;
    if (total >= UINT32_MAX)
        return ork_errorf(ORK_EFORMAT, "tokenizer: %s holds %llu bytes of text", KEY_TOKENS,
                          (unsigned long long)total);
    t->n_vocab = (int32_t)a->n;
    t->blob = ork_malloc(total ? (size_t)total : 1);
    t->off = ork_malloc(((size_t)a->n + 1) * sizeof(*t->off));
    t->score = ork_calloc((size_t)a->n, sizeof(*t->score));
    t->kind = ork_malloc((size_t)a->n);
    t->attr = ork_calloc((size_t)a->n, 1);
    if (!t->blob || !t->off || !t->score || !t->kind || !t->attr)
        return ork_errorf(ORK_ENOMEM, "tokenizer: vocabulary of %llu tokens",
                          (unsigned long long)a->n);
    uint32_t o = 0;
    for (uint64_t i = 0; i < a->n; i++) {
        t->off[i] = o;
        if (a->strs[i].len)
            memcpy(t->blob + o, a->strs[i].ptr, (size_t)a->strs[i].len);
        o += (uint32_t)a->strs[i].len;
    }
    t->off[a->n] = o;
    memset(t->kind, ORK_TOKEN_NORMAL, (size_t)a->n);
    return 0;
}

static bool is_numeric(enum ork_gguf_type ty)
{
    return ty != ORK_GGUF_STRING && ty != ORK_GGUF_ARRAY && ty != ORK_GGUF_BOOL &&
           ty < ORK_GGUF_TYPE_COUNT;
}

static int load_scores_and_types(struct ork_tokenizer *t, const struct ork_gguf *g)
{
    const struct ork_gguf_array *a;
    int ret = ork_gguf_get_arr(g, KEY_SCORES, ORK_GGUF_TYPE_COUNT, &a);
    if (ret < 0 && ret != ORK_ENOENT)
        return ret;
    if (ret == 0) {
        if (!is_numeric(a->type))
            return ork_errorf(ORK_EFORMAT, "tokenizer: %s has elements of type %s",
                              KEY_SCORES, ork_gguf_type_name(a->type));
        if (a->n != (uint64_t)t->n_vocab)
            return ork_errorf(ORK_EFORMAT, "tokenizer: %s has %llu entries but %s has %d",
                              KEY_SCORES, (unsigned long long)a->n, KEY_TOKENS, t->n_vocab);
        for (int32_t i = 0; i < t->n_vocab; i++)
            t->score[i] = (float)ork_gguf_arr_f64(a, (uint64_t)i);
    }
    ret = ork_gguf_get_arr(g, KEY_TOKEN_TYPE, ORK_GGUF_TYPE_COUNT, &a);
    if (ret < 0 && ret != ORK_ENOENT)
        return ret;
    if (ret == 0) {
        if (!is_numeric(a->type) || a->type == ORK_GGUF_FLOAT32 || a->type == ORK_GGUF_FLOAT64)
            return ork_errorf(ORK_EFORMAT, "tokenizer: %s has elements of type %s",
                              KEY_TOKEN_TYPE, ork_gguf_type_name(a->type));
        if (a->n != (uint64_t)t->n_vocab)
            return ork_errorf(ORK_EFORMAT, "tokenizer: %s has %llu entries but %s has %d",
                              KEY_TOKEN_TYPE, (unsigned long long)a->n, KEY_TOKENS, t->n_vocab);
        for (int32_t i = 0; i < t->n_vocab; i++) {
            int64_t k = ork_gguf_arr_i64(a, (uint64_t)i);
            /* Out-of-range kinds (0 = undefined) are treated as normal text. */
            t->kind[i] = (k >= ORK_TOKEN_NORMAL && k <= ORK_TOKEN_BYTE) ? (uint8_t)k
                                                                         : ORK_TOKEN_NORMAL;
        }
    }
    return 0;
}

static int load_merges(struct ork_tokenizer *t, const struct ork_gguf *g)
{
    const struct ork_gguf_array *a;
    int ret = ork_gguf_get_arr(g, KEY_MERGES, ORK_GGUF_STRING, &a);
    if (ret == ORK_ENOENT)
        return ork_errorf(ORK_EFORMAT, "tokenizer: %s is missing (required by the gpt2 "
                          "byte-level BPE tokenizer)", KEY_MERGES);
    if (ret < 0)
        return ret;
    if (a->n > (uint64_t)INT32_MAX)
        return ork_errorf(ORK_EFORMAT, "tokenizer: %s has %llu entries", KEY_MERGES,
                          (unsigned long long)a->n);
    uint64_t total = 0;
    for (uint64_t i = 0; i < a->n; i++)
        total += a->strs[i].len;
    if (total >= UINT32_MAX)
        return ork_errorf(ORK_EFORMAT, "tokenizer: %s holds %llu bytes", KEY_MERGES,
                          (unsigned long long)total);
    t->merge_blob = ork_malloc(total ? (size_t)total : 1);
    t->merge = ork_malloc((a->n ? (size_t)a->n : 1) * sizeof(*t->merge));
    if (!t->merge_blob || !t->merge)
        return ork_errorf(ORK_ENOMEM, "tokenizer: %llu merges", (unsigned long long)a->n);
    t->n_merges = (uint32_t)a->n;
    uint32_t o = 0;
    for (uint64_t i = 0; i < a->n; i++) {
        const char *s = a->strs[i].ptr;
        size_t n = (size_t)a->strs[i].len;
        /* "first second": split at the first space after the first byte, so that a first
         * part may itself be a space. Entries without one can never match (empty parts). */
        const char *sp = n > 1 ? memchr(s + 1, ' ', n - 1) : NULL;
        struct ork__tok_merge *m = &t->merge[i];
        m->off = o;
        if (!sp) {
            m->n_first = m->n_second = 0;
            continue;
        }
        m->n_first = (uint32_t)(sp - s);
        m->n_second = (uint32_t)(n - m->n_first - 1);
        memcpy(t->merge_blob + o, s, m->n_first);
        memcpy(t->merge_blob + o + m->n_first, sp + 1, m->n_second);
        o += m->n_first + m->n_second;
    }
    if ((ret = map_init(&t->merges, t->n_merges)) < 0)
        return ret;
    for (uint32_t r = 0; r < t->n_merges; r++)
        if (t->merge[r].n_first && t->merge[r].n_second)
            merge_insert(t, r);
    return 0;
}

/* A special id key: absent keeps the default; an out-of-range value (e.g. 0xFFFFFFFF for
 * "none") is ignored with a warning, like the reference loader. */
static int read_special_id(const struct ork_gguf *g, const char *key, int32_t n_vocab,
                           int32_t *id)
{
    uint64_t v;
    int ret = ork_gguf_get_u64(g, key, &v);
    if (ret == ORK_ENOENT)
        return 0;
    if (ret < 0) {
        int32_t s32;    /* a signed key holding a negative id means "none" */
        if (ork_gguf_get_i32(g, key, &s32) == 0 && s32 < 0) {
            ork_error_clear();
            *id = -1;
            return 0;
        }
        return ret;
    }
    if (v >= (uint64_t)n_vocab) {
        if (v != UINT32_MAX && v != UINT64_MAX)
            ORK_LOGW("tokenizer: %s = %llu is not below the vocabulary size %d; ignored", key,
                     (unsigned long long)v, n_vocab);
        return 0;
    }
    *id = (int32_t)v;
    return 0;
}

static int read_flag(const struct ork_gguf *g, const char *key, bool *flag)
{
    int ret = ork_gguf_get_bool(g, key, flag);
    return ret == ORK_ENOENT ? 0 : ret;
}

static int load_special_ids(struct ork_tokenizer *t, const struct ork_gguf *g)
{
    t->bos = t->eos = t->unk = t->eot = t->eom = -1;
    if (t->family == ORK__TOK_SPM) {
        if (t->n_vocab > SPM_DEFAULT_UNK)
            t->unk = SPM_DEFAULT_UNK;
        if (t->n_vocab > SPM_DEFAULT_BOS)
            t->bos = SPM_DEFAULT_BOS;
        if (t->n_vocab > SPM_DEFAULT_EOS)
            t->eos = SPM_DEFAULT_EOS;
    }
    static const struct { const char *key; size_t field; } ids[] = {
        { "tokenizer.ggml.bos_token_id", offsetof(struct ork_tokenizer, bos) },
        { "tokenizer.ggml.eos_token_id", offsetof(struct ork_tokenizer, eos) },
        { "tokenizer.ggml.unknown_token_id", offsetof(struct ork_tokenizer, unk) },
        { "tokenizer.ggml.eot_token_id", offsetof(struct ork_tokenizer, eot) },
        { "tokenizer.ggml.eom_token_id", offsetof(struct ork_tokenizer, eom) },
    };
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        int32_t *p = (int32_t *)((char *)t + ids[i].field);
        int ret = read_special_id(g, ids[i].key, t->n_vocab, p);
        if (ret < 0)
            return ret;
    }
    int ret;
    if ((ret = read_flag(g, KEY_ADD_BOS, &t->add_bos)) < 0 ||
        (ret = read_flag(g, KEY_ADD_EOS, &t->add_eos)) < 0 ||
        (ret = read_flag(g, KEY_ADD_SPACE_PREFIX, &t->add_space_prefix)) < 0)
        return ret;
    return 0;
}

static int load_family(struct ork_tokenizer *t, const struct ork_gguf *g)
{
    struct ork_gguf_str model;
    int ret = ork_gguf_get_str(g, KEY_MODEL, &model);
    if (ret == ORK_ENOENT)
        return ork_errorf(ORK_EFORMAT, "tokenizer: %s is missing", KEY_MODEL);
    if (ret < 0)
        return ret;
    if (model.len == 5 && memcmp(model.ptr, "llama", 5) == 0) {
        t->family = ORK__TOK_SPM;
        t->add_bos = true;           /* SentencePiece prepends <s> unless told otherwise */
        t->add_space_prefix = true;  /* ... and the dummy-prefix U+2581 */
    } else if (model.len == 4 && memcmp(model.ptr, "gpt2", 4) == 0) {
        t->family = ORK__TOK_BPE;
    } else {
        return ork_errorf(ORK_EUNSUPPORTED, "tokenizer: unknown tokenizer model '%.*s'",
                          (int)(model.len > 64 ? 64 : model.len), model.ptr);
    }
    return 0;
}

static int load_pretokenizer(struct ork_tokenizer *t, const struct ork_gguf *g)
{
    struct ork_gguf_str pre = { "default", 7 };
    int ret = ork_gguf_get_str(g, KEY_PRE, &pre);
    if (ret < 0 && ret != ORK_ENOENT)
        return ret;
    bool add_bos_default = false;
    ret = ork__pretok_init(&t->pre, pre.ptr, (size_t)pre.len, &t->ignore_merges,
                           &add_bos_default);
    if (ret < 0)
        return ret;
    t->add_bos = add_bos_default;   /* the add_bos_token key, read later, overrides */
    return 0;
}

static void spm_byte_tokens(struct ork_tokenizer *t)
{
    for (int b = 0; b < 256; b++) {
        char name[8];
        /* SentencePiece byte pieces are spelled "<0x%02X>" (upper-case hex). */
        int n = snprintf(name, sizeof name, "<0x%02X>", b);
        t->byte_tok[b] = ork__tok_find(t, name, (size_t)n);
    }
}

int ork_tokenizer_load(const struct ork_gguf *g, struct ork_tokenizer **out)
{
    if (!g || !out)
        return ork_errorf(ORK_EINVAL, "tokenizer: NULL argument");
    *out = NULL;
    struct ork_tokenizer *t = ork_calloc(1, sizeof(*t));
    if (!t)
        return ORK_ENOMEM;
    int ret;
    if ((ret = load_family(t, g)) < 0 || (ret = load_tokens(t, g)) < 0 ||
        (ret = load_scores_and_types(t, g)) < 0)
        goto err;
    if (t->family == ORK__TOK_BPE &&
        ((ret = load_merges(t, g)) < 0 || (ret = load_pretokenizer(t, g)) < 0))
        goto err;
    if ((ret = load_special_ids(t, g)) < 0)
        goto err;
    if ((ret = map_init(&t->vocab, (uint32_t)t->n_vocab)) < 0)
        goto err;
    for (int32_t i = 0; i < t->n_vocab; i++)
        vocab_insert(t, i);
    if (t->family == ORK__TOK_SPM)
        spm_byte_tokens(t);
    ork__bytemap_init(&t->bytemap);
    if ((ret = ork__tok_setup_special(t, g)) < 0)
        goto err;
    *out = t;
    return 0;
err:
    ork_tokenizer_free(t);
    return ret;
}

void ork_tokenizer_free(struct ork_tokenizer *t)
{
    if (!t)
        return;
    ork__pretok_fini(&t->pre);
    map_free(&t->vocab);
    map_free(&t->merges);
    ork_free(t->blob);
    ork_free(t->off);
    ork_free(t->score);
    ork_free(t->kind);
    ork_free(t->attr);
    ork_free(t->merge_blob);
    ork_free(t->merge);
    ork_free(t->special);
    ork_free(t->eog);
    ork_free(t);
}

/* ---- queries ---------------------------------------------------------------------------- */

int32_t ork_tokenizer_n_vocab(const struct ork_tokenizer *t)
{
    return t ? t->n_vocab : 0;
}

int32_t ork_tokenizer_bos(const struct ork_tokenizer *t)
{
    return t ? t->bos : -1;
}

int32_t ork_tokenizer_eos(const struct ork_tokenizer *t)
{
    return t ? t->eos : -1;
}

bool ork_tokenizer_add_bos(const struct ork_tokenizer *t)
{
    return t && t->add_bos && t->bos >= 0;
}

bool ork_tokenizer_add_eos(const struct ork_tokenizer *t)
{
    return t && t->add_eos && t->eos >= 0;
}

enum ork_token_kind ork_tokenizer_kind(const struct ork_tokenizer *t, int32_t id)
{
    if (!t || id < 0 || id >= t->n_vocab)
        return ORK_TOKEN_UNUSED;
    return (enum ork_token_kind)t->kind[id];
}

const char *ork_tokenizer_piece(const struct ork_tokenizer *t, int32_t id, size_t *len)
{
    if (!t || id < 0 || id >= t->n_vocab) {
        if (len)
            *len = 0;
        return NULL;
    }
    size_t n;
    const char *s = ork__tok_text(t, id, &n);
    if (len)
        *len = n;
    return s;
}

int32_t ork_tokenizer_find(const struct ork_tokenizer *t, const char *piece, size_t len)
{
    if (!t || (!piece && len))
        return -1;
    return ork__tok_find(t, piece ? piece : "", len);
}
