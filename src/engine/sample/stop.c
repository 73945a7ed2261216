/* stop.c -- incremental stop-string matcher over streamed generated text (see
 * ork-engine/sampler.h, ork_stop_*).
 *
 * Text arrives in arbitrary pieces (one token's bytes at a time, split anywhere, even inside a
 * UTF-8 sequence). Each push returns the bytes that can no longer be part of a stop string; the
 * longest tail that is still a proper prefix of some stop string is held back until later bytes
 * decide it. Matching is on bytes, so multi-byte UTF-8 stop strings need nothing special.
 *
 * The result does not depend on how the text was split: when several stop strings occur, the one
 * that completes first in the stream wins (as if bytes arrived one at a time), and among those
 * completing at the same byte the longest wins, so the emitted text is the shortest possible.
 *
 * Not here: token-level stops (EOS ids) and anything about detokenization. */
#include <ork-engine/sampler.h>

#include <ork/alloc.h>
#include <ork/error.h>

#include <string.h>

struct ork_stop {
    char **stops;        /* (n) NUL-terminated copies */
    size_t *lens;        /* (n) */
    size_t n;
    size_t max_len;      /* longest stop string */
    char *held;          /* (max_len) bytes held back: a proper prefix of some stop string */
    size_t n_held;
    bool stopped;
    int matched;         /* index of the stop string that matched, or -1 */
};

void ork_stop_free(struct ork_stop *st)
{
    if (!st)
        return;
    if (st->stops)
        for (size_t i = 0; i < st->n; i++)
            ork_free(st->stops[i]);
    ork_free(st->stops);
    ork_free(st->lens);
    ork_free(st->held);
    ork_free(st);
}

int ork_stop_create(const char *const *stops, size_t n, struct ork_stop **out)
{
    if (!out)
        return ork_errorf(ORK_EINVAL, "stop: out must not be NULL");
    *out = NULL;
    if (n > 0 && !stops)
        return ork_errorf(ORK_EINVAL, "stop: %zu stop strings but the array is NULL", n);
    for (size_t i = 0; i < n; i++) {
        if (!stops[i])
            return ork_errorf(ORK_EINVAL, "stop: stop string %zu is NULL", i);
        if (stops[i][0] == '\0')
            return ork_errorf(ORK_EINVAL, "stop: stop string %zu is empty", i);
    }

    struct ork_stop *st = ork_calloc(1, sizeof(*st));
    if (!st)
        return ork_errorf(ORK_ENOMEM, "stop: cannot allocate matcher");
    st->matched = -1;
    if (n > 0) {
        st->stops = ork_calloc(n, sizeof(*st->stops));
        st->lens = ork_calloc(n, sizeof(*st->lens));
        if (!st->stops || !st->lens)
            goto err_nomem;
        st->n = n;
        for (size_t i = 0; i < n; i++) {
            st->stops[i] = ork_strdup(stops[i]);
            if (!st->stops[i])
                goto err_nomem;
            st->lens[i] = strlen(stops[i]);
            if (st->lens[i] > st->max_len)
                st->max_len = st->lens[i];
        }
        st->held = ork_malloc(st->max_len);
        if (!st->held)
            goto err_nomem;
    }
    *out = st;
    return 0;

err_nomem:
    ork_stop_free(st);
    return ork_errorf(ORK_ENOMEM, "stop: cannot allocate %zu stop strings", n);
}

void ork_stop_reset(struct ork_stop *st)
{
    if (!st)
        return;
    st->n_held = 0;
    st->stopped = false;
    st->matched = -1;
}

size_t ork_stop_max_len(const struct ork_stop *st)
{
    return st ? st->max_len : 0;
}

int ork_stop_matched(const struct ork_stop *st)
{
    return st ? st->matched : -1;
}

/* Earliest-completing occurrence of any stop string in buf[0..len): sets *start and returns the
 * stop's index, or -1. Ties on the end position go to the longer stop string. */
static int find_first_stop(const struct ork_stop *st, const char *buf, size_t len, size_t *start)
{
    int best = -1;
    size_t best_end = 0;
    for (size_t i = 0; i < st->n; i++) {
        if (st->lens[i] > len)
            continue;
        const char *hit = memmem(buf, len, st->stops[i], st->lens[i]);
        if (!hit)
            continue;
        size_t s = (size_t)(hit - buf), e = s + st->lens[i];
        if (best < 0 || e < best_end || (e == best_end && s < *start)) {
            best = (int)i;
            best_end = e;
            *start = s;
        }
    }
    return best;
}

/* Length of the longest suffix of buf[0..len) that is a proper prefix of some stop string. */
static size_t partial_suffix(const struct ork_stop *st, const char *buf, size_t len)
{
    size_t k = len < st->max_len ? len : st->max_len - 1;
    for (; k > 0; k--) {
        const char *tail = buf + len - k;
        for (size_t i = 0; i < st->n; i++)
            if (st->lens[i] > k && memcmp(st->stops[i], tail, k) == 0)
                return k;
    }
    return 0;
}

int ork_stop_push(struct ork_stop *st, const char *text, size_t len, char *out, size_t cap,
                  bool *stopped)
{
    if (stopped)
        *stopped = false;
    if (!st || (!text && len > 0) || (!out && cap > 0))
        return ork_errorf(ORK_EINVAL, "stop: push: matcher, text and out must not be NULL");
    if (st->stopped) {                  /* nothing more is emitted after a stop */
        if (stopped)
            *stopped = true;
        return 0;
    }
    size_t total = st->n_held + len;
    if (total > cap)
        return ork_errorf(ORK_ENOSPC, "stop: push: %zu held + %zu new bytes exceed out capacity %zu",
                          st->n_held, len, cap);
    if (total > (size_t)INT32_MAX)
        return ork_errorf(ORK_ERANGE, "stop: push: %zu bytes at once is too many", total);

    /* Work directly in `out`: held bytes, then the new ones. */
    if (st->n_held)
        memcpy(out, st->held, st->n_held);
    if (len)
        memcpy(out + st->n_held, text, len);
    st->n_held = 0;

    size_t start = 0;
    int hit = find_first_stop(st, out, total, &start);
    if (hit >= 0) {
        st->stopped = true;
        st->matched = hit;
        if (stopped)
            *stopped = true;
        return (int)start;
    }
    size_t keep = st->n ? partial_suffix(st, out, total) : 0;
    if (keep)
        memcpy(st->held, out + total - keep, keep);
    st->n_held = keep;
    return (int)(total - keep);
}

int ork_stop_flush(struct ork_stop *st, char *out, size_t cap)
{
    if (!st || (!out && cap > 0))
        return ork_errorf(ORK_EINVAL, "stop: flush: matcher and out must not be NULL");
    size_t n = st->n_held;
    if (n > cap)
        return ork_errorf(ORK_ENOSPC, "stop: flush: %zu held bytes exceed out capacity %zu", n, cap);
    if (n)
        memcpy(out, st->held, n);
    st->n_held = 0;
    return (int)n;
}
