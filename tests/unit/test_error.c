/* test_error.c -- error codes, messages and the allocation hooks. */
#include "ork_test.h"

#include <ork/alloc.h>
#include <ork/error.h>

static void test_strerror_table(void)
{
    CHECK_STR(ork_strerror(ORK_OK), "success");
    CHECK_STR(ork_strerror(ORK_EFORMAT), "malformed or corrupt data");
    CHECK_STR(ork_strerror(12345), "unknown error");
}

static void test_errorf_records_message(void)
{
    ork_error_clear();
    CHECK_STR(ork_error_describe(ORK_EIO), "input/output error");
    int r = ork_errorf(ORK_ERANGE, "field %s = %d", "n_dims", 9);
    CHECK_EQ_INT(r, ORK_ERANGE);
    CHECK_STR(ork_error_message(), "field n_dims = 9");
}

static void test_alloc_fail_injection(void)
{
    ork_alloc_fail_after(2);
    void *a = ork_malloc(8);
    void *b = ork_malloc(8);
    void *c = ork_malloc(8);
    CHECK(a != NULL);
    CHECK(b == NULL);
    CHECK(c != NULL);
    ork_alloc_fail_after(0);
    ork_free(a);
    ork_free(c);
    CHECK(ork_calloc(SIZE_MAX / 2, 4) == NULL);
}

int main(void)
{
    RUN(test_strerror_table);
    RUN(test_errorf_records_message);
    RUN(test_alloc_fail_injection);
    return ork_test_done();
}
