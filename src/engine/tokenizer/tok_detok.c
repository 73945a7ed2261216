/* tok_detok.c -- token ids back to text: the bytes of one token, the streaming detokenizer
 * that only ever emits whole UTF-8 characters, and the whole-sequence convenience.
 *
 * Bytes of a token: SPM pieces turn U+2581 into ' ' and <0xNN> into the byte; byte-level BPE
 * pieces go through the inverse GPT-2 byte map (a character that is not a stand-in is kept as
 * its UTF-8); user-defined tokens are their text; control and unknown tokens are "" unless
 * render_special; unused tokens are always "".
 *
 * Leading space: a piece's leading space is always kept, also for the first piece after BOS
 * (SPM "▁Once" -> " Once"), so streaming output equals the concatenation of the pieces.
 *
 * Not here: encoding (tok_encode.c and friends). */
#include <limits.h>
#include <string.h>

#include <ork/error.h>

#include "tok_internal.h"

enum piece_mode { PIECE_NONE, PIECE_RAW, PIECE_SPM, PIECE_SPM_BYTE, PIECE_BPE };

/* Longest output of one raw unit (a UTF-8 character kept as is). */
#define PIECE_UNIT_MAX 4
#define PIECE_CHUNK 256

static int check_id(const struct ork_tokenizer *t, int32_t id)
{
    if (!t)
        return ork_errorf(ORK_EINVAL, "tokenizer: NULL tokenizer");
    if (id < 0 || id >= t->n_vocab)
        return ork_errorf(ORK_EINVAL, "tokenizer: token id %d is outside [0, %d)", id,
                          t->n_vocab);
    return 0;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* "<0xNN>" -> NN, or -1. */
static int spm_byte_value(const char *s, size_t n)
{
    if (n != 6 || s[0] != '<' || s[1] != '0' || s[2] != 'x' || s[5] != '>')
        return -1;
    int hi = hex_digit(s[3]), lo = hex_digit(s[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

static enum piece_mode piece_mode(const struct ork_tokenizer *t, int32_t id, bool render)
{
    switch (t->kind[id]) {
    case ORK_TOKEN_CONTROL:
    case ORK_TOKEN_UNKNOWN:
        return render ? PIECE_RAW : PIECE_NONE;
    case ORK_TOKEN_USER_DEFINED:
        return PIECE_RAW;
    case ORK_TOKEN_UNUSED:
        return PIECE_NONE;
    case ORK_TOKEN_BYTE:
        /* Byte-level BPE has no byte pieces; the reference renders them as nothing. */
        return t->family == ORK__TOK_SPM ? PIECE_SPM_BYTE : PIECE_NONE;
    default:
        return t->family == ORK__TOK_SPM ? PIECE_SPM : PIECE_BPE;
    }
}

/* Decode the piece from raw offset *pos into chunk (at most cap bytes, cap >= 4); advances
 * *pos by whole units and returns the bytes produced (0: finished). */
static size_t piece_chunk(const struct ork_tokenizer *t, int32_t id, enum piece_mode mode,
                          size_t *pos, char *chunk, size_t cap)
{
    size_t n;
    const char *s = ork__tok_text(t, id, &n);
    size_t i = *pos, o = 0;
    if (mode == PIECE_NONE)
        return 0;
    if (mode == PIECE_SPM_BYTE) {
        int v = spm_byte_value(s, n);
        if (v >= 0) {
            if (i == 0 && cap) {
                chunk[0] = (char)v;
                *pos = n;
                return 1;
            }
            return 0;
        }
        mode = PIECE_RAW;   /* not spelled <0xNN>: show the text */
    }
    while (i < n && o + PIECE_UNIT_MAX <= cap) {
        if (mode == PIECE_RAW) {
            chunk[o++] = s[i++];
        } else if (mode == PIECE_SPM) {
            if (n - i >= 3 && (uint8_t)s[i] == 0xE2 && (uint8_t)s[i + 1] == 0x96 &&
                (uint8_t)s[i + 2] == 0x81) {   /* U+2581 */
                chunk[o++] = ' ';
                i += 3;
            } else {
                chunk[o++] = s[i++];
            }
        } else {
            uint32_t cp;
            uint32_t l = ork__utf8_decode((const uint8_t *)s + i, n - i, &cp);
            if (l && cp < ORK__BYTEMAP_DEC_SIZE && t->bytemap.dec[cp] >= 0) {
                chunk[o++] = (char)t->bytemap.dec[cp];
                i += l;
            } else if (l) {
                memcpy(chunk + o, s + i, l);
                o += l;
                i += l;
            } else {
                chunk[o++] = s[i++];
            }
        }
    }
    *pos = i;
    return o;
}

int ork_token_to_bytes(const struct ork_tokenizer *t, int32_t id, bool render_special,
                       char *buf, size_t cap)
{
    int ret = check_id(t, id);
    if (ret < 0)
        return ret;
    if (!buf)
        cap = 0;
    enum piece_mode mode = piece_mode(t, id, render_special);
    char chunk[PIECE_CHUNK];
    size_t pos = 0, total = 0, k;
    while ((k = piece_chunk(t, id, mode, &pos, chunk, sizeof chunk)) > 0) {
        if (total + k <= cap)
            memcpy(buf + total, chunk, k);
        total += k;
    }
    if (total > INT_MAX)
        return ork_errorf(ORK_ERANGE, "tokenizer: token %d decodes to %zu bytes", id, total);
    return (int)total;
}

/* ---- streaming UTF-8 assembly ----------------------------------------------------------- */

/* U+FFFD REPLACEMENT CHARACTER. */
static const char replacement[3] = { (char)0xEF, (char)0xBF, (char)0xBD };

struct sink {
    char *out;
    size_t cap, n;      /* n counts everything, written or not */
};

static void sink_put(struct sink *k, const void *p, size_t n)
{
    if (k->n + n <= k->cap)
        memcpy(k->out + k->n, p, n);
    k->n += n;
}

/* Expected length of a sequence led by c, and the allowed range of its second byte
 * (Unicode 15, table 3-7); 0 when c cannot lead. */
static uint32_t utf8_lead(uint8_t c, uint8_t *lo, uint8_t *hi)
{
    *lo = 0x80;
    *hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        return 2;
    if (c >= 0xE0 && c <= 0xEF) {
        if (c == 0xE0)
            *lo = 0xA0;
        if (c == 0xED)
            *hi = 0x9F;
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (c == 0xF0)
            *lo = 0x90;
        if (c == 0xF4)
            *hi = 0x8F;
        return 4;
    }
    return 0;
}

static void feed_byte(struct ork_detok *d, uint8_t b, struct sink *k)
{
    for (;;) {
        uint8_t lo, hi;
        if (d->n_pending == 0) {
            if (b < 0x80)
                sink_put(k, &b, 1);
            else if (utf8_lead(b, &lo, &hi))
                d->pending[d->n_pending++] = b;
            else
                sink_put(k, replacement, sizeof replacement);
            return;
        }
        uint32_t need = utf8_lead(d->pending[0], &lo, &hi);
        if (d->n_pending > 1) {
            lo = 0x80;
            hi = 0xBF;
        }
        if (b >= lo && b <= hi) {
            d->pending[d->n_pending++] = b;
            if (d->n_pending == need) {
                sink_put(k, d->pending, need);
                d->n_pending = 0;
            }
            return;
        }
        /* The pending prefix can never complete: one U+FFFD for it, then retry b. */
        sink_put(k, replacement, sizeof replacement);
        d->n_pending = 0;
    }
}

static void feed_token(struct ork_detok *d, int32_t id, struct sink *k)
{
    enum piece_mode mode = piece_mode(d->t, id, d->render_special);
    char chunk[PIECE_CHUNK];
    size_t pos = 0, n;
    while ((n = piece_chunk(d->t, id, mode, &pos, chunk, sizeof chunk)) > 0)
        for (size_t i = 0; i < n; i++)
            feed_byte(d, (uint8_t)chunk[i], k);
}

void ork_detok_init(struct ork_detok *d, const struct ork_tokenizer *t, bool render_special)
{
    memset(d, 0, sizeof(*d));
    d->t = t;
    d->render_special = render_special;
    d->first = true;
}

int ork_detok_push(struct ork_detok *d, int32_t id, char *out, size_t cap)
{
    if (!d)
        return ork_errorf(ORK_EINVAL, "ork_detok_push: NULL state");
    int ret = check_id(d->t, id);
    if (ret < 0)
        return ret;
    /* Measure on a copy first so that a too-small buffer leaves the state untouched. */
    struct ork_detok probe = *d;
    struct sink count = { NULL, 0, 0 };
    feed_token(&probe, id, &count);
    if (count.n > INT_MAX)
        return ork_errorf(ORK_ERANGE, "ork_detok_push: token %d decodes to %zu bytes", id,
                          count.n);
    if (count.n > cap || (!out && count.n))
        return ork_errorf(ORK_ENOSPC, "ork_detok_push: token %d needs %zu bytes, buffer has "
                          "%zu", id, count.n, cap);
    struct sink k = { out, cap, 0 };
    feed_token(d, id, &k);
    if (k.n)
        d->first = false;
    return (int)k.n;
}

int ork_detok_flush(struct ork_detok *d, char *out, size_t cap)
{
    if (!d)
        return ork_errorf(ORK_EINVAL, "ork_detok_flush: NULL state");
    if (!d->n_pending)
        return 0;
    if (!out || cap < sizeof replacement)
        return ork_errorf(ORK_ENOSPC, "ork_detok_flush: needs %zu bytes, buffer has %zu",
                          sizeof replacement, out ? cap : 0);
    memcpy(out, replacement, sizeof replacement);
    d->n_pending = 0;
    return (int)sizeof replacement;
}

int ork_detokenize(const struct ork_tokenizer *t, const int32_t *ids, size_t n,
                   bool render_special, char *out, size_t cap)
{
    if (!t || (!ids && n))
        return ork_errorf(ORK_EINVAL, "ork_detokenize: NULL argument");
    if (!out)
        cap = 0;
    struct ork_detok d;
    ork_detok_init(&d, t, render_special);
    struct sink k = { out, cap ? cap - 1 : 0, 0 };  /* keep room for the NUL */
    for (size_t i = 0; i < n; i++) {
        int ret = check_id(t, ids[i]);
        if (ret < 0)
            return ret;
        feed_token(&d, ids[i], &k);
    }
    if (d.n_pending) {
        sink_put(&k, replacement, sizeof replacement);
        d.n_pending = 0;
    }
    if (k.n > INT_MAX - 1)
        return ork_errorf(ORK_ERANGE, "ork_detokenize: %zu bytes of text", k.n);
    if (cap == 0)
        return (int)k.n;    /* size query */
    if (k.n + 1 > cap) {
        out[cap - 1] = 0;
        return ork_errorf(ORK_ENOSPC, "ork_detokenize: %zu bytes of text do not fit in %zu",
                          k.n + 1, cap);
    }
    out[k.n] = 0;
    return (int)k.n;
}
