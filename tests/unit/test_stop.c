/* test_stop.c -- the incremental stop-string matcher: held-back bytes, stops spanning many
 * pushes, several stop strings, UTF-8 stops, and independence from how the text is split
 * (checked against a brute-force search over the whole text). */
#include "ork_test.h"

#include <ork-engine/sampler.h>
#include <ork/error.h>

#include <stdbool.h>
#include <stdint.h>

/* Feeds pieces and collects the emitted text (plus the flush when no stop matched). */
struct run {
    char text[4096];
    size_t len;
    bool stopped;
    int stopped_at;   /* index of the push that reported the stop, or -1 */
};

static int feed(struct ork_stop *st, const char *piece, size_t n, struct run *r, int push_index)
{
    char out[1024];
    bool stopped = false;
    int got = ork_stop_push(st, piece, n, out, sizeof out, &stopped);
    if (got < 0)
        return got;
    memcpy(r->text + r->len, out, (size_t)got);
    r->len += (size_t)got;
    r->text[r->len] = '\0';
    if (stopped && !r->stopped) {
        r->stopped = true;
        r->stopped_at = push_index;
    }
    return got;
}

static void finish(struct ork_stop *st, struct run *r)
{
    char out[1024];
    int got = ork_stop_flush(st, out, sizeof out);
    CHECK(got >= 0);
    if (got > 0) {
        memcpy(r->text + r->len, out, (size_t)got);
        r->len += (size_t)got;
        r->text[r->len] = '\0';
    }
}

static void run_pieces(struct ork_stop *st, const char *const *pieces, size_t n, struct run *r)
{
    memset(r, 0, sizeof(*r));
    r->stopped_at = -1;
    ork_stop_reset(st);
    for (size_t i = 0; i < n; i++)
        CHECK(feed(st, pieces[i], strlen(pieces[i]), r, (int)i) >= 0);
    finish(st, r);
}

/* ------------------------------------------------------------------------------------------ */

static void test_stop_across_pushes(void)
{
    const char *stops[] = { "</answer>" };
    struct ork_stop *st;
    REQUIRE(ork_stop_create(stops, 1, &st) == 0);
    CHECK_EQ_INT(ork_stop_max_len(st), 9);

    struct run r = { .stopped_at = -1 };
    CHECK_EQ_INT(feed(st, "Hello </an", 10, &r, 0), 6);   /* "</an" held back */
    CHECK_STR(r.text, "Hello ");
    CHECK(!r.stopped);
    CHECK_EQ_INT(feed(st, "s", 1, &r, 1), 0);
    CHECK_EQ_INT(feed(st, "we", 2, &r, 2), 0);
    CHECK_EQ_INT(feed(st, "r> trailing", 11, &r, 3), 0);
    CHECK(r.stopped);
    CHECK_EQ_INT(r.stopped_at, 3);
    CHECK_STR(r.text, "Hello ");
    CHECK_EQ_INT(ork_stop_matched(st), 0);

    /* after a stop nothing more comes out, and stopped stays set */
    bool stopped = false;
    char out[64];
    CHECK_EQ_INT(ork_stop_push(st, "more", 4, out, sizeof out, &stopped), 0);
    CHECK(stopped);
    CHECK_EQ_INT(ork_stop_flush(st, out, sizeof out), 0);
    ork_stop_free(st);
}

static void test_false_start_is_released(void)
{
    const char *stops[] = { "STOP" };
    struct ork_stop *st;
    REQUIRE(ork_stop_create(stops, 1, &st) == 0);
    struct run r = { .stopped_at = -1 };
    CHECK_EQ_INT(feed(st, "ST", 2, &r, 0), 0);
    CHECK_EQ_INT(feed(st, "AR S", 4, &r, 1), 5);   /* "STAR " out, "S" held */
    CHECK_STR(r.text, "STAR ");
    CHECK_EQ_INT(feed(st, "TO", 2, &r, 2), 0);
    finish(st, &r);                                 /* end of generation: "STO" was text */
    CHECK_STR(r.text, "STAR STO");
    CHECK(!r.stopped);
    CHECK_EQ_INT(ork_stop_matched(st), -1);

    /* overlapping prefix: "SSTOP" must still stop after one "S" */
    const char *p2[] = { "SS", "TOP!" };
    run_pieces(st, p2, 2, &r);
    CHECK(r.stopped);
    CHECK_STR(r.text, "S");
    ork_stop_free(st);
}

static void test_multiple_stops(void)
{
    const char *stops[] = { "\n\n", "User:" };
    struct ork_stop *st;
    REQUIRE(ork_stop_create(stops, 2, &st) == 0);
    struct run r;
    const char *a[] = { "hi\nUs", "er: x" };
    run_pieces(st, a, 2, &r);
    CHECK(r.stopped);
    CHECK_STR(r.text, "hi\n");
    CHECK_EQ_INT(ork_stop_matched(st), 1);

    const char *b[] = { "one\n", "\ntwo User:" };
    run_pieces(st, b, 2, &r);
    CHECK(r.stopped);
    CHECK_STR(r.text, "one");
    CHECK_EQ_INT(ork_stop_matched(st), 0);
    ork_stop_free(st);

    /* the stop that completes first wins, even if another started earlier */
    const char *s2[] = { "abcd", "bc" };
    REQUIRE(ork_stop_create(s2, 2, &st) == 0);
    const char *c[] = { "xabcd" };
    run_pieces(st, c, 1, &r);
    CHECK_STR(r.text, "xa");
    CHECK_EQ_INT(ork_stop_matched(st), 1);
    ork_stop_free(st);

    /* completing on the same byte: the longer one wins */
    const char *s3[] = { "b", "ab" };
    REQUIRE(ork_stop_create(s3, 2, &st) == 0);
    const char *d[] = { "xa", "b" };
    run_pieces(st, d, 2, &r);
    CHECK_STR(r.text, "x");
    CHECK_EQ_INT(ork_stop_matched(st), 1);
    ork_stop_free(st);
}

static void test_utf8_stops(void)
{
    /* "。" is E3 80 82; "日本" is E6 97 A5 E6 9C AC */
    const char *stops[] = { "\xE3\x80\x82", "\xE6\x97\xA5\xE6\x9C\xAC" };
    struct ork_stop *st;
    REQUIRE(ork_stop_create(stops, 2, &st) == 0);
    struct run r;
    const char *a[] = { "caf\xC3\xA9 \xE3", "\x80", "\x82 rest" };
    run_pieces(st, a, 3, &r);
    CHECK(r.stopped);
    CHECK_EQ_INT(r.stopped_at, 2);
    CHECK_STR(r.text, "caf\xC3\xA9 ");

    const char *b[] = { "\xE6\x97", "\xA5\xE6", "\x9C", "\xAC!" };
    run_pieces(st, b, 4, &r);
    CHECK(r.stopped);
    CHECK_STR(r.text, "");
    CHECK_EQ_INT(ork_stop_matched(st), 1);

    /* "日" followed by another character is ordinary text: released whole */
    const char *c[] = { "\xE6\x97", "\xA5", "\xE8\xAA\x9E" };   /* 日語 */
    run_pieces(st, c, 3, &r);
    CHECK(!r.stopped);
    CHECK_STR(r.text, "\xE6\x97\xA5\xE8\xAA\x9E");

    /* a lead byte shared with the stop, then a different continuation (← is E2 86 90) */
    const char *arrow[] = { "\xE2\x86\x92" };   /* → */
    struct ork_stop *st2;
    REQUIRE(ork_stop_create(arrow, 1, &st2) == 0);
    const char *d[] = { "a\xE2", "\x86", ("\x90" "b\xE2\x86"), "\x92" };
    run_pieces(st2, d, 4, &r);
    CHECK(r.stopped);
    CHECK_STR(r.text, "a\xE2\x86\x90" "b");
    ork_stop_free(st2);
    ork_stop_free(st);
}

/* Brute force: the text before the earliest-completing stop (longest on ties), or all of it. */
static size_t reference_cut(const char *text, size_t len, const char *const *stops, size_t n,
                            bool *stopped)
{
    for (size_t end = 1; end <= len; end++) {
        size_t best_start = SIZE_MAX;
        for (size_t i = 0; i < n; i++) {
            size_t sl = strlen(stops[i]);
            if (sl <= end && memcmp(text + end - sl, stops[i], sl) == 0 && end - sl < best_start)
                best_start = end - sl;
        }
        if (best_start != SIZE_MAX) {
            *stopped = true;
            return best_start;
        }
    }
    *stopped = false;
    return len;
}

static void test_split_independence(void)
{
    const char *stops[] = { "aab", "ba", "<|im_end|>", "\xC3\xA9\xC3" };
    const size_t n_stops = 4;
    const char alphabet[] = "ab<|im_end>\xC3\xA9 ";
    struct ork_stop *st;
    REQUIRE(ork_stop_create(stops, n_stops, &st) == 0);
    uint32_t rng = 777;
    for (int trial = 0; trial < 3000; trial++) {
        char text[64];
        rng = rng * 1103515245u + 12345u;
        size_t len = 1 + (rng >> 16) % 40;
        for (size_t i = 0; i < len; i++) {
            rng = rng * 1103515245u + 12345u;
            text[i] = alphabet[(rng >> 16) % (sizeof(alphabet) - 1)];
        }
        bool want_stop;
        size_t want = reference_cut(text, len, stops, n_stops, &want_stop);

        /* random split points */
        struct run r = { .stopped_at = -1 };
        ork_stop_reset(st);
        size_t pos = 0;
        int k = 0;
        while (pos < len) {
            rng = rng * 1103515245u + 12345u;
            size_t piece = (rng >> 16) % 6;      /* includes empty pushes */
            if (piece > len - pos)
                piece = len - pos;
            REQUIRE(feed(st, text + pos, piece, &r, k++) >= 0);
            pos += piece;
        }
        finish(st, &r);
        if (r.stopped != want_stop || r.len != want || memcmp(r.text, text, want) != 0) {
            fprintf(stderr, "  trial %d: text '%.*s' emitted %zu (want %zu), stopped %d (want %d)\n",
                    trial, (int)len, text, r.len, want, r.stopped, want_stop);
            CHECK(0);
            break;
        }
    }
    ork_stop_free(st);
}

static void test_no_stops_passes_through(void)
{
    struct ork_stop *st;
    REQUIRE(ork_stop_create(NULL, 0, &st) == 0);
    CHECK_EQ_INT(ork_stop_max_len(st), 0);
    struct run r;
    const char *a[] = { "any", "thing" };
    run_pieces(st, a, 2, &r);
    CHECK(!r.stopped);
    CHECK_STR(r.text, "anything");
    ork_stop_free(st);
}

static void test_invalid(void)
{
    struct ork_stop *st = NULL;
    const char *empty[] = { "ok", "" };
    ork_error_clear();
    CHECK_EQ_INT(ork_stop_create(empty, 2, &st), ORK_EINVAL);
    CHECK(strstr(ork_error_message(), "stop string 1 is empty") != NULL);
    CHECK(st == NULL);
    const char *null_entry[] = { NULL };
    CHECK_EQ_INT(ork_stop_create(null_entry, 1, &st), ORK_EINVAL);
    CHECK_EQ_INT(ork_stop_create(NULL, 2, &st), ORK_EINVAL);

    /* an output buffer too small for held + new bytes is refused, not overrun */
    const char *stops[] = { "xyz" };
    REQUIRE(ork_stop_create(stops, 1, &st) == 0);
    char out[4];
    bool stopped;
    CHECK_EQ_INT(ork_stop_push(st, "abcdef", 6, out, sizeof out, &stopped), ORK_ENOSPC);
    CHECK_EQ_INT(ork_stop_push(st, "ab", 2, out, sizeof out, &stopped), 2);
    ork_stop_free(st);
}

int main(void)
{
    RUN(test_stop_across_pushes);
    RUN(test_false_start_is_released);
    RUN(test_multiple_stops);
    RUN(test_utf8_stops);
    RUN(test_split_independence);
    RUN(test_no_stops_passes_through);
    RUN(test_invalid);
    return ork_test_done();
}
