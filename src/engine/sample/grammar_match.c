/* grammar_match.c -- following a compiled grammar (grammar_priv.h) over text, and the token
 * filter: which tokens of a vocabulary may come next.
 *
 * Positions. The matcher keeps every way the text so far can continue as a set of stacks. A
 * stack is a chain of frames (pos, parent) in a node arena: pos is the element to match next in
 * that frame and parent the caller's frame, whose pos is where the caller resumes. The top
 * frame of a live stack always points at a character element; a stack that finished the root
 * rule is the empty stack (ACCEPT). Calls whose return position would be the end of an
 * alternative pass their caller's frame instead (tail calls), so x* and right recursion run
 * in constant depth. Frames are shared between stacks and never modified.
 *
 * Characters. The grammar matches code points; text arrives as UTF-8 bytes and a token may end
 * inside a character, so the state also holds the pending bytes of an incomplete character
 * (shared by all stacks: they all consumed the same bytes). A stack survives a partial
 * character when its class can match some character with that prefix.
 *
 * The filter. The vocabulary's token bytes are a byte trie (ork_grammar_vocab). One
 * depth-first walk from the current state visits a trie edge only while some stack survives
 * its byte, so every token under a rejected prefix is skipped at once; frames made during the
 * walk are released as it backtracks (the arena is a stack). The cost is the number of trie
 * nodes the grammar lets through, times the live stacks -- measured in docs/sampling.md.
 *
 * The filter cache. The walk's result is a function of the committed state alone (the stacks
 * as chains of positions, and the pending character), of the grammar and of the vocabulary.
 * Inside a free string that state comes back after every character, so an expensive walk's
 * result is kept as a bitmask under its state (the full chains, compared word by word; a hash
 * only picks the candidate). A bounded number of entries per matcher, least recently used out;
 * cheap walks are not stored; a different vocabulary empties the cache.
 *
 * This file does not parse grammars (grammar.c) and does not sample (sampler.c). */
#include "grammar_priv.h"

#include <ork-engine/tokenizer.h>
#include <ork/alloc.h>
#include <ork/error.h>

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define GRAM_NIL UINT32_MAX          /* no parent frame; as a stack top: the empty stack */
/* Work items one expansion may process before the matcher gives up: only grammars with
 * exponentially many ways to match nothing get near it. */
#define GRAM_MAX_EXPAND (1u << 16)
/* Bytes of one token we decode at most (longer pieces are never allowed under a grammar). */
#define GRAM_MAX_TOKEN_BYTES 1024
/* Words of a cache key (state) beyond which the state is not cached: a JSON state is a few
 * dozen words; only very ambiguous or deeply nested states get here, and hashing and
 * comparing them would cost more than it saves. */
#define GRAM_CACHE_MAX_KEY 4096u
/* Key words that are not positions (positions are element indexes, far below these). */
#define GRAM_KEY_ACCEPT UINT32_MAX       /* the empty stack */
#define GRAM_KEY_END (UINT32_MAX - 1)    /* end of one stack's chain */

struct gnode {
    uint32_t pos, parent;
};

/* Pending bytes of an incomplete UTF-8 character. */
struct u8state {
    uint32_t acc;          /* bits decoded so far */
    uint8_t need;          /* continuation bytes still expected (0: none pending) */
    uint8_t len;           /* bytes of the character so far */
};

struct tnode {
    uint32_t first_edge, n_edges;   /* edges first_edge .. + n_edges, sorted by byte */
    uint32_t tok_off, n_tok;        /* tokens whose bytes end here: tok_ids[tok_off ..] */
};

struct ork_grammar_vocab {
    int32_t n_vocab;
    uint64_t serial;                /* unique per vocabulary created: the cache's validity */
    struct tnode *nodes;            /* (n_nodes) node 0 is the root (the empty prefix) */
    uint32_t n_nodes;
    uint8_t *edge_byte;             /* (n_nodes - 1) */
    uint32_t *edge_child;           /* (n_nodes - 1) */
    int32_t *tok_ids;               /* (n_in_trie) ids sorted by their bytes */
    int32_t *eog_ids;               /* (n_eog) end-of-generation tokens */
    int32_t n_eog;
    uint8_t *eog;                   /* (n_vocab) */
    char *bytes;                    /* all token bytes; token i is bytes[off[i] .. off[i+1]) */
    uint32_t *off;                  /* (n_vocab + 1) */
};

/* One cached filter result: the state it is for and the allowed tokens (eog excluded). */
struct gcache_entry {
    uint64_t hash, used;            /* used: LRU stamp; 0 = empty */
    uint32_t *key;                  /* (key_len) */
    uint32_t key_len, key_cap;
    uint64_t *mask;                 /* (n_vocab bits) */
    int32_t count;
};

struct gcache {
    struct gcache_entry *e;         /* (n) */
    uint32_t n, min_nodes;
    uint64_t vocab_serial, clock;
    uint32_t *key;                  /* the current state's key (scratch) */
    uint32_t key_cap;
    struct ork_grammar_cache_stats stats;
};

struct ork_grammar_matcher {
    const struct ork_grammar *g;    /* borrowed */
    struct gnode *nodes;            /* frame arena: committed frames, then the walk's */
    uint32_t n_nodes, cap_nodes;
    uint32_t *tops;                 /* stack tops: committed [0, n_tops), then the walk's */
    uint32_t n_tops, used_tops, cap_tops;
    struct u8state u8;              /* committed pending character */
    uint32_t *work;                 /* (pos, parent) pairs: the expansion worklist */
    uint32_t cap_work;
    struct gnode *nodes2;           /* compaction target */
    uint32_t cap_nodes2;
    uint32_t *remap;                /* (cap_remap) old frame -> new frame during compaction */
    uint32_t cap_remap;
    int err;                        /* a limit was hit during the walk */
    uint64_t visits;                /* trie nodes the current walk visited */
    struct gcache cache;
};

static int grow_u32(uint32_t **v, uint32_t *cap, uint64_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    if (need > UINT32_MAX / 2)
        return ORK_ENOMEM;
    uint32_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *n = ork_realloc(*v, (size_t)c * size);
    if (!n)
        return ORK_ENOMEM;
    *v = n;
    *cap = c;
    return 0;
}

/* ---- stacks -------------------------------------------------------------------------------- */

static int node_new(struct ork_grammar_matcher *m, uint32_t pos, uint32_t parent, uint32_t *id)
{
    if (grow_u32((uint32_t **)&m->nodes, &m->cap_nodes, (uint64_t)m->n_nodes + 1,
                 sizeof(*m->nodes)) < 0)
        return ork_errorf(ORK_ENOMEM, "grammar: out of memory for matcher frames");
    m->nodes[m->n_nodes] = (struct gnode){ .pos = pos, .parent = parent };
    *id = m->n_nodes++;
    return 0;
}

/* Append top t to the tops list being built from index `from`, unless already there. */
static int top_emit(struct ork_grammar_matcher *m, uint32_t from, uint32_t t)
{
    for (uint32_t k = from; k < m->used_tops; k++) {
        uint32_t o = m->tops[k];
        if (o == t || (o != GRAM_NIL && t != GRAM_NIL && m->nodes[o].pos == m->nodes[t].pos &&
                       m->nodes[o].parent == m->nodes[t].parent))
            return 0;
    }
    if (m->used_tops - from >= ORK_GRAMMAR_MAX_STACKS)
        return ork_errorf(ORK_ERANGE, "grammar: more than %d positions at once (the grammar is "
                          "too ambiguous)", ORK_GRAMMAR_MAX_STACKS);
    if (grow_u32(&m->tops, &m->cap_tops, (uint64_t)m->used_tops + 1, sizeof(*m->tops)) < 0)
        return ork_errorf(ORK_ENOMEM, "grammar: out of memory for matcher stacks");
    m->tops[m->used_tops++] = t;
    return 0;
}

/* Expand position pos in frame `parent` into stacks whose top is a character element (or the
 * empty stack), appended to the tops list that starts at `from`. A newly emitted top that
 * equals an existing frame by value is deduplicated. */
static int expand(struct ork_grammar_matcher *m, uint32_t pos, uint32_t parent, uint32_t from)
{
    const struct ork_grammar *g = m->g;
    uint32_t n = 0;
    int ret;
    if ((ret = grow_u32(&m->work, &m->cap_work, 2, 2 * sizeof(*m->work))) < 0)
        return ork_errorf(ORK_ENOMEM, "grammar: out of memory");
    m->work[0] = pos, m->work[1] = parent, n = 1;
    uint32_t steps = 0;
    while (n) {
        if (++steps > GRAM_MAX_EXPAND)
            return ork_errorf(ORK_ERANGE, "grammar: a position expands to more than %u items",
                              GRAM_MAX_EXPAND);
        n--;
        uint32_t p = m->work[2 * n], par = m->work[2 * n + 1];
        const struct gram_elem *e = &g->elems[p];
        if (e->type == GRAM_CHAR) {
            uint32_t id = GRAM_NIL;
            if ((ret = node_new(m, p, par, &id)) < 0)
                return ret;
            uint32_t before = m->used_tops;
            if ((ret = top_emit(m, from, id)) < 0)
                return ret;
            if (m->used_tops == before)
                m->n_nodes--;   /* a duplicate: give the frame back */
            continue;
        }
        if (e->type == GRAM_END) {
            if (par == GRAM_NIL) {
                if ((ret = top_emit(m, from, GRAM_NIL)) < 0)
                    return ret;
                continue;
            }
            struct gnode f = m->nodes[par];
            if ((ret = grow_u32(&m->work, &m->cap_work, n + 1, 2 * sizeof(*m->work))) < 0)
                return ork_errorf(ORK_ENOMEM, "grammar: out of memory");
            m->work[2 * n] = f.pos, m->work[2 * n + 1] = f.parent, n++;
            continue;
        }
        /* a call: the caller resumes at p + 1, unless that is the end (tail call) */
        uint32_t ret_frame = par;
        if (g->elems[p + 1].type != GRAM_END && (ret = node_new(m, p + 1, par, &ret_frame)) < 0)
            return ret;
        uint32_t na = g->rule_n_alt[e->a], a0 = g->rule_alt[e->a];
        if ((ret = grow_u32(&m->work, &m->cap_work, (uint64_t)n + na, 2 * sizeof(*m->work))) < 0)
            return ork_errorf(ORK_ENOMEM, "grammar: out of memory");
        for (uint32_t k = na; k-- > 0;)   /* reversed: alternatives come out in order */
            m->work[2 * n] = g->alts[a0 + k], m->work[2 * n + 1] = ret_frame, n++;
    }
    return 0;
}

/* Advance the stacks tops[src, src + n_src) by code point cp into a new list appended at
 * used_tops; *dst receives where it starts. */
static int advance(struct ork_grammar_matcher *m, uint32_t src, uint32_t n_src, uint32_t cp,
                   uint32_t *dst)
{
    *dst = m->used_tops;
    for (uint32_t k = 0; k < n_src; k++) {
        uint32_t t = m->tops[src + k];
        if (t == GRAM_NIL)
            continue;
        struct gnode f = m->nodes[t];
        if (!ork__gram_class_match(m->g, &m->g->elems[f.pos], cp))
            continue;
        int ret = expand(m, f.pos + 1, f.parent, *dst);
        if (ret < 0)
            return ret;
    }
    return 0;
}

/* Can class e match some code point in [lo, hi] (lo >= 128)? Exact for plain classes; for a
 * negated one, false only when a single range covers [lo, hi] (a superset, which is safe: the
 * whole character is checked exactly when it completes). */
static bool class_overlaps(const struct ork_grammar *g, const struct gram_elem *e, uint32_t lo,
                           uint32_t hi)
{
    for (uint32_t i = 0; i < e->b; i++) {
        const struct gram_range *r = &g->ranges[e->a + i];
        if (!e->neg && r->lo <= hi && r->hi >= lo)
            return true;
        if (e->neg && r->lo <= lo && r->hi >= hi)
            return false;
    }
    return e->neg;
}

/* Feed one byte to a pending-character state. Returns 1 and *cp when a character completed,
 * 0 when it is still pending (*lo, *hi: the code points it can still become), -1 when the
 * byte cannot continue valid UTF-8. */
static int u8_step(struct u8state *s, uint8_t b, uint32_t *cp, uint32_t *lo, uint32_t *hi)
{
    static const uint32_t min_of_len[5] = { 0, 0, 0x80, 0x800, 0x10000 };
    static const uint32_t max_of_len[5] = { 0, 0x7f, 0x7ff, 0xffff, 0x10ffff };
    if (s->need == 0) {
        if (b < 0x80) {
            *cp = b;
            return 1;
        }
        if (b >= 0xc2 && b <= 0xdf)
            s->acc = b & 0x1fu, s->need = 1, s->len = 2;
        else if ((b & 0xf0) == 0xe0)
            s->acc = b & 0x0fu, s->need = 2, s->len = 3;
        else if (b >= 0xf0 && b <= 0xf4)
            s->acc = b & 0x07u, s->need = 3, s->len = 4;
        else
            return -1;
    } else {
        if ((b & 0xc0) != 0x80)
            return -1;
        s->acc = (s->acc << 6) | (b & 0x3fu);
        if (--s->need == 0) {
            uint32_t v = s->acc;
            if (v < min_of_len[s->len] || v > max_of_len[s->len] || (v >= 0xd800 && v <= 0xdfff))
                return -1;
            *cp = v;
            return 1;
        }
    }
    uint32_t sh = 6u * s->need;
    uint32_t l = s->acc << sh, h = l | ((1u << sh) - 1);
    if (l < min_of_len[s->len])
        l = min_of_len[s->len];
    if (h > max_of_len[s->len])
        h = max_of_len[s->len];
    if (l > h)
        return -1;
    *lo = l, *hi = h;
    return 0;
}

/* One byte over the stacks tops[src, +n): the surviving list (*dst, *n_dst; the same list when
 * the byte leaves a character pending) and the new character state. 0 when nothing survives. */
static int step_byte(struct ork_grammar_matcher *m, uint32_t src, uint32_t n, struct u8state *u,
                     uint8_t b, uint32_t *dst, uint32_t *n_dst)
{
    uint32_t cp, lo, hi;
    int r = u8_step(u, b, &cp, &lo, &hi);
    *n_dst = 0;
    if (r < 0)
        return 0;
    if (r == 1) {
        int ret = advance(m, src, n, cp, dst);
        if (ret < 0)
            return ret;
        *n_dst = m->used_tops - *dst;
        return 0;
    }
    for (uint32_t k = 0; k < n; k++) {
        uint32_t t = m->tops[src + k];
        if (t != GRAM_NIL && class_overlaps(m->g, &m->g->elems[m->nodes[t].pos], lo, hi)) {
            *dst = src, *n_dst = n;
            return 0;
        }
    }
    return 0;
}

/* ---- the matcher --------------------------------------------------------------------------- */

static void cache_free(struct gcache *c)
{
    for (uint32_t i = 0; i < c->n; i++) {
        ork_free(c->e[i].key);
        ork_free(c->e[i].mask);
    }
    ork_free(c->e);
    ork_free(c->key);
    *c = (struct gcache){ .n = 0 };
}

void ork_grammar_matcher_free(struct ork_grammar_matcher *m)
{
    if (!m)
        return;
    cache_free(&m->cache);
    ork_free(m->nodes);
    ork_free(m->tops);
    ork_free(m->work);
    ork_free(m->nodes2);
    ork_free(m->remap);
    ork_free(m);
}

static int matcher_start(struct ork_grammar_matcher *m)
{
    const struct ork_grammar *g = m->g;
    m->n_nodes = 0;
    m->used_tops = 0;
    m->u8 = (struct u8state){ .need = 0 };
    for (uint32_t k = 0; k < g->rule_n_alt[g->root]; k++) {
        int ret = expand(m, g->alts[g->rule_alt[g->root] + k], GRAM_NIL, 0);
        if (ret < 0)
            return ret;
    }
    m->n_tops = m->used_tops;
    return 0;
}

void ork_grammar_matcher_reset(struct ork_grammar_matcher *m)
{
    if (m)
        (void)matcher_start(m);
}

int ork_grammar_matcher_create(const struct ork_grammar *g, struct ork_grammar_matcher **out)
{
    if (!g || !out)
        return ork_errorf(ORK_EINVAL, "grammar: matcher: grammar and out must not be NULL");
    *out = NULL;
    struct ork_grammar_matcher *m = ork_calloc(1, sizeof(*m));
    if (!m)
        return ork_errorf(ORK_ENOMEM, "grammar: cannot allocate a matcher");
    m->g = g;
    int ret = ork_grammar_matcher_set_cache(m, ORK_GRAMMAR_CACHE_ENTRIES,
                                            ORK_GRAMMAR_CACHE_MIN_NODES);
    if (ret == 0)
        ret = matcher_start(m);
    if (ret < 0) {
        ork_grammar_matcher_free(m);
        return ret;
    }
    *out = m;
    return 0;
}

bool ork_grammar_matcher_can_end(const struct ork_grammar_matcher *m)
{
    if (!m || m->u8.need)
        return false;
    for (uint32_t k = 0; k < m->n_tops; k++)
        if (m->tops[k] == GRAM_NIL)
            return true;
    return false;
}

static bool stacks_equal(const struct gnode *nd, uint32_t a, uint32_t b)
{
    while (a != b) {
        if (a == GRAM_NIL || b == GRAM_NIL || nd[a].pos != nd[b].pos)
            return false;
        a = nd[a].parent, b = nd[b].parent;
    }
    return true;
}

/* Keep only the frames the stacks tops[src, +n) reach, renumbered from 0, and drop stacks
 * equal to an earlier one; the result is the committed state. */
static int compact(struct ork_grammar_matcher *m, uint32_t src, uint32_t n)
{
    if (grow_u32(&m->remap, &m->cap_remap, m->n_nodes ? m->n_nodes : 1, sizeof(*m->remap)) < 0 ||
        grow_u32((uint32_t **)&m->nodes2, &m->cap_nodes2, m->n_nodes ? m->n_nodes : 1,
                 sizeof(*m->nodes2)) < 0)
        return ork_errorf(ORK_ENOMEM, "grammar: out of memory for matcher frames");
    memset(m->remap, 0xff, (size_t)m->n_nodes * sizeof(*m->remap));
    uint32_t nn = 0, nt = 0;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t t = m->tops[src + k];
        /* copy the chain from t up to the first frame already copied */
        uint32_t c = t, prev = GRAM_NIL, first = GRAM_NIL;
        while (c != GRAM_NIL && m->remap[c] == GRAM_NIL) {
            m->remap[c] = nn;
            m->nodes2[nn] = (struct gnode){ .pos = m->nodes[c].pos, .parent = GRAM_NIL };
            if (prev != GRAM_NIL)
                m->nodes2[prev].parent = nn;
            else
                first = nn;
            prev = nn++;
            c = m->nodes[c].parent;
        }
        if (prev != GRAM_NIL)
            m->nodes2[prev].parent = c == GRAM_NIL ? GRAM_NIL : m->remap[c];
        uint32_t nt_top = t == GRAM_NIL ? GRAM_NIL : (first != GRAM_NIL ? first : m->remap[t]);
        bool dup = false;
        for (uint32_t j = 0; j < nt && !dup; j++)
            dup = stacks_equal(m->nodes2, m->tops[j], nt_top);
        if (!dup)
            m->tops[nt++] = nt_top;   /* nt <= src + k: never overwrites what is still read */
    }
    struct gnode *sw = m->nodes;
    uint32_t cs = m->cap_nodes;
    m->nodes = m->nodes2, m->cap_nodes = m->cap_nodes2;
    m->nodes2 = sw, m->cap_nodes2 = cs;
    m->n_nodes = nn;
    m->n_tops = m->used_tops = nt;
    return 0;
}

int ork_grammar_matcher_accept_bytes(struct ork_grammar_matcher *m, const char *s, size_t n)
{
    if (!m || (!s && n))
        return ork_errorf(ORK_EINVAL, "grammar: accept: NULL argument");
    uint32_t save_nodes = m->n_nodes;
    struct u8state u = m->u8;
    uint32_t src = 0, cnt = m->n_tops;
    m->used_tops = m->n_tops;
    for (size_t i = 0; i < n; i++) {
        uint32_t dst, nd;
        int ret = step_byte(m, src, cnt, &u, (uint8_t)s[i], &dst, &nd);
        if (ret < 0 || nd == 0) {
            m->n_nodes = save_nodes;
            m->used_tops = m->n_tops;
            return ret < 0 ? ret : ork_errorf(ORK_EINVAL, "grammar: the text does not match "
                                              "the grammar at byte %zu of %zu", i, n);
        }
        src = dst, cnt = nd;
    }
    m->u8 = u;
    return compact(m, src, cnt);
}

int ork_grammar_matcher_accept_token(struct ork_grammar_matcher *m,
                                     const struct ork_grammar_vocab *v, int32_t id)
{
    if (!m || !v || id < 0 || id >= v->n_vocab)
        return ork_errorf(ORK_EINVAL, "grammar: accept: token %d is not in the vocabulary", id);
    if (v->eog[id]) {
        if (!ork_grammar_matcher_can_end(m))
            return ork_errorf(ORK_EINVAL, "grammar: end of generation before the grammar is "
                              "complete");
        return matcher_start(m);
    }
    uint32_t len = v->off[id + 1] - v->off[id];
    if (len == 0)
        return ork_errorf(ORK_EINVAL, "grammar: token %d has no text", id);
    return ork_grammar_matcher_accept_bytes(m, v->bytes + v->off[id], len);
}

/* ---- the token filter ---------------------------------------------------------------------- */

static bool any_live(const struct ork_grammar_matcher *m, uint32_t src, uint32_t n)
{
    for (uint32_t k = 0; k < n; k++)
        if (m->tops[src + k] != GRAM_NIL)
            return true;
    return false;
}

static uint32_t walk(struct ork_grammar_matcher *m, const struct ork_grammar_vocab *v,
                     uint32_t node, uint32_t src, uint32_t n, struct u8state u, uint8_t *allowed)
{
    uint32_t count = 0;
    const struct tnode *t = &v->nodes[node];
    for (uint32_t k = 0; k < t->n_edges && !m->err; k++) {
        uint32_t e = t->first_edge + k, child = v->edge_child[e];
        uint32_t save_nodes = m->n_nodes, save_tops = m->used_tops;
        struct u8state cu = u;
        uint32_t dst, nd;
        int ret = step_byte(m, src, n, &cu, v->edge_byte[e], &dst, &nd);
        if (ret < 0) {
            m->err = ret;
            break;
        }
        if (nd) {
            m->visits++;
            const struct tnode *c = &v->nodes[child];
            for (uint32_t j = 0; j < c->n_tok; j++)
                allowed[v->tok_ids[c->tok_off + j]] = 1;
            count += c->n_tok;
            if (c->n_edges && any_live(m, dst, nd))
                count += walk(m, v, child, dst, nd, cu, allowed);
        }
        m->n_nodes = save_nodes;
        m->used_tops = save_tops;
    }
    return count;
}

int ork_grammar_matcher_set_cache(struct ork_grammar_matcher *m, uint32_t max_entries,
                                  uint32_t min_nodes)
{
    if (!m)
        return ork_errorf(ORK_EINVAL, "grammar: set_cache: NULL matcher");
    cache_free(&m->cache);
    m->cache.min_nodes = min_nodes;
    if (max_entries == 0)
        return 0;
    if (!(m->cache.e = ork_calloc(max_entries, sizeof(*m->cache.e))))
        return ork_errorf(ORK_ENOMEM, "grammar: out of memory for the filter cache");
    m->cache.n = max_entries;
    return 0;
}

void ork_grammar_matcher_cache_stats(const struct ork_grammar_matcher *m,
                                     struct ork_grammar_cache_stats *out)
{
    if (out)
        *out = m ? m->cache.stats : (struct ork_grammar_cache_stats){ .hits = 0 };
}

/* The committed state as key words: the pending character, then every stack's chain of
 * positions from the top. Returns the length, or 0 when it is too long to cache. */
static uint32_t state_key(struct ork_grammar_matcher *m)
{
    struct gcache *c = &m->cache;
    if (!c->key && !(c->key = ork_malloc(GRAM_CACHE_MAX_KEY * sizeof(*c->key))))
        return 0;
    uint32_t n = 0;
    c->key[n++] = m->u8.acc;
    c->key[n++] = (uint32_t)m->u8.need | (uint32_t)m->u8.len << 8;
    for (uint32_t k = 0; k < m->n_tops; k++) {
        uint32_t t = m->tops[k];
        if (t == GRAM_NIL) {
            if (n >= GRAM_CACHE_MAX_KEY)
                return 0;
            c->key[n++] = GRAM_KEY_ACCEPT;
            continue;
        }
        for (; t != GRAM_NIL; t = m->nodes[t].parent) {
            if (n >= GRAM_CACHE_MAX_KEY)
                return 0;
            c->key[n++] = m->nodes[t].pos;
        }
        if (n >= GRAM_CACHE_MAX_KEY)
            return 0;
        c->key[n++] = GRAM_KEY_END;
    }
    return n;
}

static uint64_t key_hash(const uint32_t *k, uint32_t n)
{
    uint64_t h = 14695981039346656037ull;   /* FNV-1a 64-bit offset basis and prime */
    for (uint32_t i = 0; i < n; i++)
        h = (h ^ k[i]) * 1099511628211ull;
    return h;
}

static struct gcache_entry *cache_find(struct gcache *c, uint64_t h, uint32_t n)
{
    for (uint32_t i = 0; i < c->n; i++) {
        struct gcache_entry *e = &c->e[i];
        if (e->used && e->hash == h && e->key_len == n &&
            !memcmp(e->key, c->key, (size_t)n * sizeof(*c->key)))
            return e;
    }
    return NULL;
}

/* Store the walk's result allowed[] under the current key (c->key, n words), replacing the
 * least recently used entry. Out of memory only means the result is not kept. */
static void cache_store(struct gcache *c, uint64_t h, uint32_t n, const uint8_t *allowed,
                        int32_t n_vocab, int32_t count)
{
    struct gcache_entry *e = &c->e[0];
    for (uint32_t i = 1; i < c->n && e->used; i++)
        if (!c->e[i].used || c->e[i].used < e->used)
            e = &c->e[i];
    size_t words = ((size_t)n_vocab + 63) / 64;
    if (!e->mask && !(e->mask = ork_malloc(words * sizeof(*e->mask))))
        return;
    if (grow_u32(&e->key, &e->key_cap, n, sizeof(*e->key)) < 0) {
        e->used = 0;
        return;
    }
    memset(e->mask, 0, words * sizeof(*e->mask));
    for (int32_t i = 0; i < n_vocab; i++)
        e->mask[i >> 6] |= (uint64_t)(allowed[i] != 0) << (i & 63);
    memcpy(e->key, c->key, (size_t)n * sizeof(*e->key));
    e->key_len = n, e->hash = h, e->count = count, e->used = ++c->clock;
    c->stats.stored++;
}

static void mask_unpack(const uint64_t *mask, int32_t n_vocab, uint8_t *allowed)
{
    for (int32_t w = 0; w < n_vocab / 64; w++) {
        uint64_t x = mask[w];
        uint8_t *o = allowed + (size_t)w * 64;
        for (int b = 0; b < 64; b++)
            o[b] = (uint8_t)((x >> b) & 1u);
    }
    for (int32_t i = n_vocab / 64 * 64; i < n_vocab; i++)
        allowed[i] = (uint8_t)((mask[i >> 6] >> (i & 63)) & 1u);
}

/* The walk's part of the filter (eog tokens aside), through the cache. */
static int allowed_walk(struct ork_grammar_matcher *m, const struct ork_grammar_vocab *v,
                        uint8_t *allowed)
{
    struct gcache *c = &m->cache;
    uint32_t kn = 0;
    uint64_t h = 0;
    if (c->n) {
        if (c->vocab_serial != v->serial) {   /* entries of another vocabulary */
            for (uint32_t i = 0; i < c->n; i++)
                c->e[i].used = 0;
            c->vocab_serial = v->serial;
        }
        if ((kn = state_key(m)) != 0) {
            h = key_hash(c->key, kn);
            struct gcache_entry *e = cache_find(c, h, kn);
            if (e) {
                e->used = ++c->clock;
                c->stats.hits++;
                mask_unpack(e->mask, v->n_vocab, allowed);
                return e->count;
            }
        }
        c->stats.misses++;
    }
    memset(allowed, 0, (size_t)v->n_vocab);
    m->err = 0;
    m->visits = 0;
    m->used_tops = m->n_tops;
    uint32_t count = 0;
    if (any_live(m, 0, m->n_tops))
        count = walk(m, v, 0, 0, m->n_tops, m->u8, allowed);
    m->used_tops = m->n_tops;
    if (m->err)
        return m->err;
    if (kn && m->visits >= c->min_nodes)
        cache_store(c, h, kn, allowed, v->n_vocab, (int32_t)count);
    return (int)count;
}

int ork_grammar_matcher_allowed(struct ork_grammar_matcher *m, const struct ork_grammar_vocab *v,
                                uint8_t *allowed)
{
    if (!m || !v || !allowed)
        return ork_errorf(ORK_EINVAL, "grammar: allowed: NULL argument");
    int count = allowed_walk(m, v, allowed);
    if (count < 0)
        return count;
    if (ork_grammar_matcher_can_end(m))
        for (int32_t k = 0; k < v->n_eog; k++, count++)
            allowed[v->eog_ids[k]] = 1;
    return count;
}

/* ---- the vocabulary trie ------------------------------------------------------------------- */

void ork_grammar_vocab_free(struct ork_grammar_vocab *v)
{
    if (!v)
        return;
    ork_free(v->nodes);
    ork_free(v->edge_byte);
    ork_free(v->edge_child);
    ork_free(v->tok_ids);
    ork_free(v->eog_ids);
    ork_free(v->eog);
    ork_free(v->bytes);
    ork_free(v->off);
    ork_free(v);
}

int32_t ork_grammar_vocab_n(const struct ork_grammar_vocab *v)
{
    return v ? v->n_vocab : 0;
}

struct tok_key {
    const char *s;
    uint32_t len;
    int32_t id;
};

static int cmp_tok(const void *a, const void *b)
{
    const struct tok_key *x = a, *y = b;
    int c = memcmp(x->s, y->s, x->len < y->len ? x->len : y->len);
    if (c)
        return c;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return x->id < y->id ? -1 : 1;
}

/* Sorted token byte strings -> trie nodes in depth-first order (node 0: root), then edges
 * grouped per parent (children were created in byte order, so each group is sorted). */
static int build_trie(struct ork_grammar_vocab *v, int32_t n_tok)
{
    uint64_t total = 1;
    for (int32_t k = 0; k < n_tok; k++)
        total += v->off[v->tok_ids[k] + 1] - v->off[v->tok_ids[k]];
    uint32_t *parent = ork_malloc((size_t)total * sizeof(*parent));
    uint8_t *byte = ork_malloc((size_t)total);
    uint32_t *path = ork_malloc((GRAM_MAX_TOKEN_BYTES + 1) * sizeof(*path));
    v->nodes = ork_calloc((size_t)total, sizeof(*v->nodes));
    int ret = 0;
    if (!parent || !byte || !path || !v->nodes) {
        ret = ork_errorf(ORK_ENOMEM, "grammar: out of memory for the vocabulary trie");
        goto out;
    }
    uint32_t nn = 1, depth = 0;   /* path[0..depth]: nodes of the previous token's prefix */
    path[0] = 0;
    const char *prev = NULL;
    uint32_t prev_len = 0;
    for (int32_t k = 0; k < n_tok; k++) {
        int32_t id = v->tok_ids[k];
        const char *s = v->bytes + v->off[id];
        uint32_t len = v->off[id + 1] - v->off[id];
        uint32_t l = 0;
        while (prev && l < len && l < prev_len && s[l] == prev[l])
            l++;
        depth = l;
        for (uint32_t j = l; j < len; j++) {
            parent[nn] = path[depth];
            byte[nn] = (uint8_t)s[j];
            path[++depth] = nn++;
        }
        struct tnode *t = &v->nodes[path[len]];
        if (t->n_tok == 0)
            t->tok_off = (uint32_t)k;
        t->n_tok++;
        prev = s, prev_len = len;
    }
    v->n_nodes = nn;
    v->edge_byte = ork_malloc(nn);
    v->edge_child = ork_malloc((size_t)nn * sizeof(*v->edge_child));
    if (!v->edge_byte || !v->edge_child) {
        ret = ork_errorf(ORK_ENOMEM, "grammar: out of memory for the vocabulary trie");
        goto out;
    }
    for (uint32_t i = 1; i < nn; i++)
        v->nodes[parent[i]].n_edges++;
    uint32_t acc = 0;
    for (uint32_t i = 0; i < nn; i++) {
        v->nodes[i].first_edge = acc;
        acc += v->nodes[i].n_edges;
        v->nodes[i].n_edges = 0;
    }
    for (uint32_t i = 1; i < nn; i++) {
        struct tnode *p = &v->nodes[parent[i]];
        uint32_t e = p->first_edge + p->n_edges++;
        v->edge_byte[e] = byte[i];
        v->edge_child[e] = i;
    }
out:
    ork_free(parent);
    ork_free(byte);
    ork_free(path);
    return ret;
}

int ork_grammar_vocab_create_raw(int32_t n_vocab, const char *const *pieces, const size_t *lens,
                                 const bool *eog, struct ork_grammar_vocab **out)
{
    if (!out || n_vocab <= 0 || !pieces || !lens || !eog)
        return ork_errorf(ORK_EINVAL, "grammar: vocab: bad arguments (n_vocab %d)", n_vocab);
    *out = NULL;
    struct ork_grammar_vocab *v = ork_calloc(1, sizeof(*v));
    if (!v)
        return ork_errorf(ORK_ENOMEM, "grammar: out of memory for the vocabulary");
    static _Atomic uint64_t serials;
    v->n_vocab = n_vocab;
    v->serial = atomic_fetch_add(&serials, 1) + 1;
    uint64_t total = 0;
    for (int32_t i = 0; i < n_vocab; i++)
        if (!eog[i] && lens[i] <= GRAM_MAX_TOKEN_BYTES)
            total += lens[i];
    int ret = 0;
    v->off = ork_calloc((size_t)n_vocab + 1, sizeof(*v->off));
    v->bytes = ork_malloc(total ? (size_t)total : 1);
    v->eog = ork_calloc((size_t)n_vocab, 1);
    v->tok_ids = ork_calloc((size_t)n_vocab, sizeof(*v->tok_ids));
    v->eog_ids = ork_calloc((size_t)n_vocab, sizeof(*v->eog_ids));
    if (!v->off || !v->bytes || !v->eog || !v->tok_ids || !v->eog_ids || total > UINT32_MAX) {
        ret = ork_errorf(ORK_ENOMEM, "grammar: out of memory for the vocabulary");
        goto fail;
    }
    int32_t n_tok = 0;
    uint32_t o = 0;
    for (int32_t i = 0; i < n_vocab; i++) {
        v->off[i] = o;
        if (eog[i]) {
            v->eog[i] = 1;
            v->eog_ids[v->n_eog++] = i;
            continue;
        }
        if (lens[i] == 0 || lens[i] > GRAM_MAX_TOKEN_BYTES || !pieces[i])
            continue;   /* no text (control tokens): never allowed under a grammar */
        memcpy(v->bytes + o, pieces[i], lens[i]);
        o += (uint32_t)lens[i];
        v->tok_ids[n_tok++] = i;
    }
    v->off[n_vocab] = o;
    struct tok_key *keys = ork_malloc((size_t)(n_tok ? n_tok : 1) * sizeof(*keys));
    if (!keys) {
        ret = ork_errorf(ORK_ENOMEM, "grammar: out of memory for the vocabulary");
        goto fail;
    }
    for (int32_t k = 0; k < n_tok; k++) {
        int32_t id = v->tok_ids[k];
        keys[k] = (struct tok_key){ .s = v->bytes + v->off[id], .id = id,
                                    .len = v->off[id + 1] - v->off[id] };
    }
    qsort(keys, (size_t)n_tok, sizeof(*keys), cmp_tok);
    for (int32_t k = 0; k < n_tok; k++)
        v->tok_ids[k] = keys[k].id;
    ork_free(keys);
    if ((ret = build_trie(v, n_tok)) < 0)
        goto fail;
    *out = v;
    return 0;
fail:
    ork_grammar_vocab_free(v);
    return ret;
}

int ork_grammar_vocab_create(const struct ork_tokenizer *tok, struct ork_grammar_vocab **out)
{
    if (!tok || !out)
        return ork_errorf(ORK_EINVAL, "grammar: vocab: tokenizer and out must not be NULL");
    int32_t n = ork_tokenizer_n_vocab(tok);
    if (n <= 0)
        return ork_errorf(ORK_EINVAL, "grammar: vocab: the tokenizer has no tokens");
    char **pieces = ork_calloc((size_t)n, sizeof(*pieces));
    size_t *lens = ork_calloc((size_t)n, sizeof(*lens));
    bool *eog = ork_calloc((size_t)n, sizeof(*eog));
    char *buf = ork_malloc(GRAM_MAX_TOKEN_BYTES);
    int ret = 0;
    if (!pieces || !lens || !eog || !buf) {
        ret = ork_errorf(ORK_ENOMEM, "grammar: out of memory for the vocabulary");
        goto out;
    }
    for (int32_t i = 0; i < n; i++) {
        eog[i] = ork_tokenizer_is_eog(tok, i);
        int len = ork_token_to_bytes(tok, i, false, buf, GRAM_MAX_TOKEN_BYTES);
        if (len <= 0 || len > GRAM_MAX_TOKEN_BYTES)
            continue;
        if (!(pieces[i] = ork_malloc((size_t)len))) {
            ret = ork_errorf(ORK_ENOMEM, "grammar: out of memory for the vocabulary");
            goto out;
        }
        memcpy(pieces[i], buf, (size_t)len);
        lens[i] = (size_t)len;
    }
    ret = ork_grammar_vocab_create_raw(n, (const char *const *)pieces, lens, eog, out);
out:
    if (pieces)
        for (int32_t i = 0; i < n; i++)
            ork_free(pieces[i]);
    ork_free(pieces);
    ork_free(lens);
    ork_free(eog);
    ork_free(buf);
    return ret;
}
