/* tok_unicode.c -- the small amount of Unicode the tokenizers need: UTF-8 decoding and
 * repair, and the GPT-2 byte-level map (every byte gets a printable stand-in code point so
 * byte-level BPE vocabularies are plain text).
 *
 * Not here: Unicode character classes (PCRE2 provides \p{L}, \p{N}, \s for the
 * pre-tokenizers) or any normalisation (none of the supported tokenizers normalises). */
#include <stdint.h>
#include <string.h>

#include "tok_internal.h"

/* U+FFFD REPLACEMENT CHARACTER in UTF-8 (Unicode 15, section 3.9 / 23.8). */
static const char utf8_replacement[3] = { (char)0xEF, (char)0xBF, (char)0xBD };

uint32_t ork__utf8_decode(const uint8_t *s, size_t n, uint32_t *cp)
{
    /* Well-formed UTF-8 byte sequences: Unicode 15, table 3-7. */
    if (n == 0)
        return 0;
    uint8_t c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    uint32_t len, v;
    uint8_t lo = 0x80, hi = 0xBF;   /* allowed range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
        v = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        v = c & 0x0F;
        if (c == 0xE0)
            lo = 0xA0;      /* no overlongs */
        if (c == 0xED)
            hi = 0x9F;      /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        v = c & 0x07;
        if (c == 0xF0)
            lo = 0x90;
        if (c == 0xF4)
            hi = 0x8F;      /* nothing above U+10FFFF */
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (uint32_t i = 1; i < len; i++) {
        uint8_t b = s[i];
        uint8_t l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
        if (b < l || b > h)
            return 0;
        v = (v << 6) | (b & 0x3F);
    }
    *cp = v;
    return len;
}

size_t ork__utf8_sanitize(const char *src, size_t len, char *dst)
{
    const uint8_t *s = (const uint8_t *)src;
    size_t i = 0, o = 0;
    while (i < len) {
        uint32_t cp;
        uint32_t n = ork__utf8_decode(s + i, len - i, &cp);
        if (n == 0) {
            /* One replacement per offending byte, as the reference pre-tokenizer does. */
            memcpy(dst + o, utf8_replacement, sizeof utf8_replacement);
            o += sizeof utf8_replacement;
            i++;
            continue;
        }
        memcpy(dst + o, s + i, n);
        o += n;
        i += n;
    }
    return o;
}

/* GPT-2 bytes_to_unicode(): the bytes '!'..'~', 0xA1..0xAC and 0xAE..0xFF stand for
 * themselves; the other 68 bytes (0x00..0x20, 0x7F..0xA0, 0xAD) take U+0100, U+0101, ... in
 * increasing byte order. Source: the GPT-2 encoder (openai/gpt-2, encoder.py). */
#define BYTEMAP_SHIFTED_BASE 0x100u

static bool bytemap_is_self(uint32_t b)
{
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

static uint32_t bytemap_cp(uint8_t b)
{
    if (bytemap_is_self(b))
        return b;
    uint32_t k = 0;     /* rank of b among the shifted bytes */
    for (uint32_t x = 0; x < b; x++)
        k += !bytemap_is_self(x);
    return BYTEMAP_SHIFTED_BASE + k;
}

void ork__bytemap_init(struct ork__bytemap *m)
{
    for (uint32_t i = 0; i < ORK__BYTEMAP_DEC_SIZE; i++)
        m->dec[i] = -1;
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t cp = bytemap_cp((uint8_t)b);
        if (cp < 0x80) {
            m->enc[b][0] = (char)cp;
            m->enc_len[b] = 1;
        } else {
            m->enc[b][0] = (char)(0xC0 | (cp >> 6));   /* every stand-in is below U+0800 */
            m->enc[b][1] = (char)(0x80 | (cp & 0x3F));
            m->enc_len[b] = 2;
        }
        m->dec[cp] = (int16_t)b;
    }
}
