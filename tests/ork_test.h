/* ork_test.h -- the tiny test harness every tests/<tier>/test_*.c uses.
 *
 *   static void test_something(void) { CHECK(x == 1); CHECK_EQ_INT(a, b); }
 *   int main(void) { RUN(test_something); return ork_test_done(); }
 *
 * Each test file is one process (CTest runs it with a timeout). A failed CHECK records the
 * failure with file:line and the test continues; ork_test_done() prints "N passed, N failed"
 * and returns the exit status. SKIP("reason") exits 77, which CTest reports as skipped.
 * ork_test_fixture("models/x.gguf") returns the fixture path or skips when it is absent. */
#ifndef ORK_TEST_H
#define ORK_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int ork_test_failures_;      /* CHECK failures in the current test */
static int ork_test_passed_, ork_test_failed_;

#define CHECK(cond)                                                                     \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);    \
            ork_test_failures_++;                                                       \
        }                                                                               \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                              \
    do {                                                                                \
        long long a_ = (long long)(a), b_ = (long long)(b);                             \
        if (a_ != b_) {                                                                 \
            fprintf(stderr, "%s:%d: CHECK_EQ_INT failed: %s = %lld, %s = %lld\n",       \
                    __FILE__, __LINE__, #a, a_, #b, b_);                                \
            ork_test_failures_++;                                                       \
        }                                                                               \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                           \
    do {                                                                                \
        double a_ = (double)(a), b_ = (double)(b);                                      \
        if (!(fabs(a_ - b_) <= (double)(tol))) {                                        \
            fprintf(stderr, "%s:%d: CHECK_NEAR failed: %s = %.9g, %s = %.9g (tol %g)\n",\
                    __FILE__, __LINE__, #a, a_, #b, b_, (double)(tol));                 \
            ork_test_failures_++;                                                       \
        }                                                                               \
    } while (0)

#define CHECK_STR(a, b)                                                                 \
    do {                                                                                \
        const char *a_ = (a), *b_ = (b);                                                \
        if (!a_ || !b_ || strcmp(a_, b_) != 0) {                                        \
            fprintf(stderr, "%s:%d: CHECK_STR failed: %s = \"%s\", %s = \"%s\"\n",      \
                    __FILE__, __LINE__, #a, a_ ? a_ : "(null)", #b, b_ ? b_ : "(null)");\
            ork_test_failures_++;                                                       \
        }                                                                               \
    } while (0)

/* Stop the current test function on failure (use when later steps depend on it). */
#define REQUIRE(cond)                                                                   \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "%s:%d: REQUIRE failed: %s\n", __FILE__, __LINE__, #cond);  \
            ork_test_failures_++;                                                       \
            return;                                                                     \
        }                                                                               \
    } while (0)

#define SKIP(...)                                                                       \
    do {                                                                                \
        printf("SKIP: ");                                                               \
        printf(__VA_ARGS__);                                                            \
        printf("\n");                                                                   \
        exit(77);                                                                       \
    } while (0)

#define RUN(fn)                                                                         \
    do {                                                                                \
        ork_test_failures_ = 0;                                                         \
        fn();                                                                           \
        if (ork_test_failures_) {                                                       \
            ork_test_failed_++;                                                         \
            fprintf(stderr, "FAIL %s\n", #fn);                                          \
        } else {                                                                        \
            ork_test_passed_++;                                                         \
            printf("ok   %s\n", #fn);                                                   \
        }                                                                               \
    } while (0)

static inline int ork_test_done(void)
{
    printf("%d passed, %d failed\n", ork_test_passed_, ork_test_failed_);
    return ork_test_failed_ ? 1 : 0;
}

/* Path of a fixture under ../shared/fixtures (static buffer), or SKIP when absent. */
static inline const char *ork_test_fixture(const char *rel)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/%s", ORK_FIXTURES_DIR, rel);
    if (access(path, R_OK) != 0)
        SKIP("fixture %s not found (needs ../shared/fixtures)", path);
    return path;
}

/* Run cmd through the shell (typically `RUNNER BINARY_DIR/ork ... 2>&1`), its output (what
 * it writes to the pipe, up to cap - 1 bytes) NUL-terminated in out; returns its exit status,
 * or -1 when it did not exit normally (or could not be started). */
static inline int ork_test_shell(const char *cmd, char *out, size_t cap)
{
    out[0] = 0;
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Like ork_test_fixture but returns NULL instead of skipping. */
static inline const char *ork_test_fixture_opt(const char *rel)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/%s", ORK_FIXTURES_DIR, rel);
    return access(path, R_OK) == 0 ? path : NULL;
}

#endif
