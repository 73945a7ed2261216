/* tok_pretok.c -- pre-tokenizers of byte-level BPE vocabularies: the regex sequence named by
 * tokenizer.ggml.pre, compiled with PCRE2 (UTF + Unicode properties, JIT when available).
 *
 * Splitting applies the expressions in order; each one refines the current pieces: inside a
 * piece, every match becomes a piece and so does every stretch of text between matches (the
 * reference's sequential split). A match never crosses a piece boundary, and lookarounds and
 * '$' see only the piece.
 *
 * The expressions are facts of the public tokenizers (HF tokenizer.json pre_tokenizer
 * patterns, with case-insensitive contractions written out as character classes as the
 * reference does); see docs/tokenizers.md for the supported names.
 *
 * Not here: the BPE merge loop (tok_bpe.c) or the byte map (tok_unicode.c). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <string.h>

#include <ork/error.h>
#include <ork/log.h>

#include "tok_internal.h"

/* GPT-2 (openai/gpt-2 encoder.py). */
#define RE_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"

/* Llama 3 (tiktoken cl100k-style), digits in runs of up to three. */
#define RE_LLAMA3                                                                           \
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+" \
    "|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

/* Qwen2 / Qwen3: as Llama 3 but every digit on its own. */
#define RE_QWEN2                                                                            \
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+" \
    "|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

/* DeepSeek LLM: cased letters of its tokenizer.json (Latin, Greek, Cyrillic, Armenian,
 * Georgian, Cherokee, Glagolitic, Coptic, full-width, Deseret, Osage, Old Hungarian, Warang
 * Citi, Adlam...), written as code points. */
#define RE_DEEPSEEK_LETTERS                                                                  \
    "\\s?[A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}"       \
    "\\x{1C4}-\\x{293}\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}"    \
    "\\x{37F}\\x{386}\\x{388}-\\x{38A}\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}"              \
    "\\x{3F7}-\\x{481}\\x{48A}-\\x{52F}\\x{531}-\\x{556}\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}" \
    "\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}\\x{1D00}-\\x{1D2B}"             \
    "\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}"             \
    "\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}\\x{1F5D}"     \
    "\\x{1F5F}-\\x{1F7D}\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}\\x{1FC2}-\\x{1FC4}"   \
    "\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}"             \
    "\\x{1FF2}-\\x{1FF4}\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}\\x{210A}-\\x{2113}\\x{2115}"     \
    "\\x{2119}-\\x{211D}\\x{2124}\\x{2126}\\x{2128}\\x{212A}-\\x{212D}\\x{212F}-\\x{2134}"    \
    "\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-\\x{2149}\\x{214E}\\x{2183}\\x{2184}"               \
    "\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}\\x{2CF2}\\x{2CF3}"              \
    "\\x{A640}-\\x{A66D}\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}\\x{A771}-\\x{A787}"             \
    "\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}\\x{FB13}-\\x{FB17}"             \
    "\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}\\x{104B0}-\\x{104D3}"         \
    "\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}\\x{118A0}-\\x{118DF}"     \
    "\\x{1E900}-\\x{1E943}]+"
/* ASCII and full-width punctuation, curly quotes, ideographic space/comma/full stop. */
#define RE_DEEPSEEK_PUNCT \
    "\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+"
/* CJK unified ideographs, U+0800..U+4E00, Hangul syllables. */
#define RE_DEEPSEEK_CJK "[\\x{4E00}-\\x{9FA5}\\x{800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+"

struct pretok_def {
    const char *names;              /* '|'-separated tokenizer.ggml.pre values */
    const char *re[ORK__PRETOK_MAX_REGEX];
    bool ignore_merges;             /* a pre-token already in the vocabulary is kept whole */
    bool add_bos;                   /* default of tokenizer.ggml.add_bos_token */
};

static const struct pretok_def pretok_defs[] = {
    { "default",
      { "[\\p{P}\\$\\+<=>\\^~\\|]+", RE_GPT2, "\\p{N}+", "[0-9][0-9][0-9]" }, false, false },
    { "gpt2|gpt-2|phi-2|mpt|olmo", { RE_GPT2 }, false, false },
    { "llama3|llama-v3|llama-bpe|falcon3", { RE_LLAMA3 }, true, true },
    { "dbrx|smaug-bpe", { RE_LLAMA3 }, false, false },
    { "qwen2|deepseek-r1-qwen|stablelm2", { RE_QWEN2 }, false, false },
    { "deepseek-llm",
      { "[\\r\\n]", RE_DEEPSEEK_LETTERS, RE_DEEPSEEK_PUNCT, "\\s+$", RE_DEEPSEEK_CJK,
        "\\p{N}+" }, false, false },
    { "deepseek-coder",
      { "[\\r\\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", RE_DEEPSEEK_CJK, "\\p{N}" }, false, false },
    { "falcon", { "[\\p{P}\\$\\+<=>\\^~\\|`]+", RE_GPT2, "[0-9][0-9][0-9]" }, false, false },
    { "starcoder|refact|command-r|smollm|codeshell", { "\\p{N}", RE_GPT2 }, false, false },
};

static bool name_in(const char *names, const char *s, size_t n)
{
    for (const char *p = names; *p;) {
        const char *e = strchr(p, '|');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && memcmp(p, s, n) == 0)
            return true;
        if (!e)
            break;
        p = e + 1;
    }
    return false;
}

int ork__pretok_init(struct ork__pretok *p, const char *name, size_t name_len,
                     bool *ignore_merges, bool *add_bos_default)
{
    memset(p, 0, sizeof(*p));
    const struct pretok_def *d = NULL;
    for (size_t i = 0; i < sizeof pretok_defs / sizeof pretok_defs[0] && !d; i++)
        if (name_in(pretok_defs[i].names, name, name_len))
            d = &pretok_defs[i];
    if (!d)
        return ork_errorf(ORK_EUNSUPPORTED, "tokenizer: unknown pre-tokenizer '%.*s'",
                          (int)(name_len > 64 ? 64 : name_len), name);
    size_t cn = name_len < sizeof p->name - 1 ? name_len : sizeof p->name - 1;
    memcpy(p->name, name, cn);
    *ignore_merges = d->ignore_merges;
    *add_bos_default = d->add_bos;
    for (int i = 0; i < ORK__PRETOK_MAX_REGEX && d->re[i]; i++) {
        int err;
        PCRE2_SIZE erroff;
        /* DOLLAR_ENDONLY: '$' means the end of the piece, never "before a final newline". */
        pcre2_code *re = pcre2_compile((PCRE2_SPTR)d->re[i], PCRE2_ZERO_TERMINATED,
                                       PCRE2_UTF | PCRE2_UCP | PCRE2_DOLLAR_ENDONLY, &err,
                                       &erroff, NULL);
        if (!re) {
            PCRE2_UCHAR msg[128];
            pcre2_get_error_message(err, msg, sizeof msg);
            ork__pretok_fini(p);
            return ork_errorf(ORK_EUNSUPPORTED, "tokenizer: pre-tokenizer '%s' expression %d: "
                              "%s at offset %zu", d->names, i, (const char *)msg,
                              (size_t)erroff);
        }
        p->re[i] = re;
        p->jit[i] = pcre2_jit_compile(re, PCRE2_JIT_COMPLETE) == 0;
        p->n_regex = i + 1;
    }
    return 0;
}

void ork__pretok_fini(struct ork__pretok *p)
{
    for (int i = 0; i < ORK__PRETOK_MAX_REGEX; i++) {
        pcre2_code_free(p->re[i]);
        p->re[i] = NULL;
    }
    p->n_regex = 0;
}

void ork__pretok_match_data_free(void *md)
{
    pcre2_match_data_free(md);
}

static int push_seg(uint32_t **v, size_t *cap, size_t *n, size_t start, size_t len)
{
    int ret = ork__tok_reserve((void **)v, cap, 2 * (*n + 1), sizeof(**v));
    if (ret < 0)
        return ret;
    (*v)[2 * *n] = (uint32_t)start;
    (*v)[2 * *n + 1] = (uint32_t)len;
    (*n)++;
    return 0;
}

/* First match of re in subject[0, len) at or after pos: 1 with [*ms, *me), 0 for none. */
static int find_match(const struct ork__pretok *p, int i, pcre2_match_data *md,
                      const char *subject, size_t len, size_t pos, size_t *ms, size_t *me)
{
    uint32_t opts = PCRE2_NO_UTF_CHECK;     /* the text was sanitized to valid UTF-8 */
    int rc = pcre2_match(p->re[i], (PCRE2_SPTR)subject, len, pos, opts, md, NULL);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT)   /* deep backtracking: the interpreter copes */
        rc = pcre2_match(p->re[i], (PCRE2_SPTR)subject, len, pos, opts | PCRE2_NO_JIT, md,
                         NULL);
    if (rc == PCRE2_ERROR_NOMATCH)
        return 0;
    if (rc < 0) {
        PCRE2_UCHAR msg[128];
        pcre2_get_error_message(rc, msg, sizeof msg);
        return ork_errorf(ORK_ERANGE, "tokenizer: pre-tokenizer '%s' expression %d failed on "
                          "a %zu-byte piece: %s", p->name, i, len, (const char *)msg);
    }
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    *ms = ov[0];
    *me = ov[1];
    return 1;
}

int ork__pretok_split(const struct ork__pretok *p, struct ork__tok_scratch *s, const char *text,
                      size_t len, size_t *n_seg)
{
    int ret;
    size_t n = 0;
    *n_seg = 0;
    if (len > UINT32_MAX)
        return ork_errorf(ORK_ERANGE, "tokenizer: input of %zu bytes is too long", len);
    if ((ret = push_seg(&s->seg, &s->seg_cap, &n, 0, len)) < 0)
        return ret;
    if (!s->match_data && p->n_regex) {
        s->match_data = pcre2_match_data_create(1, NULL);
        if (!s->match_data)
            return ork_errorf(ORK_ENOMEM, "tokenizer: regex match data");
    }
    for (int i = 0; i < p->n_regex; i++) {
        size_t m = 0;
        for (size_t k = 0; k < n; k++) {
            size_t st = s->seg[2 * k], sl = s->seg[2 * k + 1];
            const char *sub = text + st;
            size_t pos = 0, last = 0, ms = 0, me = 0;
            while (pos <= sl) {
                ret = find_match(p, i, s->match_data, sub, sl, pos, &ms, &me);
                if (ret < 0)
                    return ret;
                if (ret == 0)
                    break;
                if (me == ms) {     /* empty match: step over one character */
                    pos = ms + (ms < sl ? ork__utf8_lead_len((uint8_t)sub[ms]) : 1);
                    continue;
                }
                if (ms > last && (ret = push_seg(&s->seg2, &s->seg2_cap, &m, st + last,
                                                 ms - last)) < 0)
                    return ret;
                if ((ret = push_seg(&s->seg2, &s->seg2_cap, &m, st + ms, me - ms)) < 0)
                    return ret;
                last = pos = me;
            }
            if (last < sl && (ret = push_seg(&s->seg2, &s->seg2_cap, &m, st + last,
                                             sl - last)) < 0)
                return ret;
        }
        uint32_t *tv = s->seg;
        s->seg = s->seg2;
        s->seg2 = tv;
        size_t tc = s->seg_cap;
        s->seg_cap = s->seg2_cap;
        s->seg2_cap = tc;
        n = m;
    }
    *n_seg = n;
    return 0;
}
