/* test_twin_calib.c -- the constants table and the calibration file: every constant has a
 * name, unit, source and an acceptable default; save -> load reproduces awkward doubles bit
 * for bit; partial files keep the other values; bad files fail naming the key and change
 * nothing. */
#include "ork_test.h"

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/twin.h>

static void test_table(void)
{
    size_t n;
    const struct ork_twin_const_info *t = ork_twin_consts_table(&n);
    CHECK(n >= 30);
    struct ork_twin_consts c;
    ork_twin_consts_default(&c);
    CHECK(ork_twin_consts_check(&c) == 0);
    for (size_t i = 0; i < n; i++) {
        CHECK(t[i].name[0] && t[i].unit[0] && strlen(t[i].source) > 10);
        double v;
        CHECK(ork_twin_consts_get(&c, t[i].name, &v) == 0 && v == t[i].def);
    }
    CHECK(c.cpu_cores == 4 && c.npu_cores == 3 && c.cpu_freq_hz == 2.4e9);
    CHECK(ork_twin_consts_set(&c, "cpu_cores", 2.5) == ORK_ERANGE);
    CHECK(ork_twin_consts_set(&c, "npu_cores", 4) == ORK_ERANGE);
    CHECK(ork_twin_consts_set(&c, "cpu_bw_all", 0) == ORK_ERANGE);
    CHECK(ork_twin_consts_set(&c, "ioctl_ns", 0) == 0);
    CHECK(ork_twin_consts_set(&c, "no_such", 1) == ORK_ENOENT);
    CHECK(strstr(ork_error_message(), "no_such") != NULL);
}

static void test_round_trip(void)
{
    struct ork_twin_consts a, b;
    ork_twin_consts_default(&a);
    a.cpu_bw_all = 0.1 + 0.2;                   /* 0.30000000000000004 */
    a.npu_mac_int8 = 1.0 / 3.0 * 1e12;
    a.cpu_line_transfer_ns = 5e-324;            /* smallest subnormal */
    a.dram_bw_total = 1.7976931348623157e308;
    a.cpu_cores = 2;
    char path[] = "/tmp/ork_twin_calib_XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);
    REQUIRE(ork_twin_calib_save(path, &a, "test \"board\"") == 0);
    ork_twin_consts_default(&b);
    REQUIRE(ork_twin_calib_load(path, &b) == 0);
    CHECK(memcmp(&a, &b, sizeof a) == 0);
    /* the defaults round trip too, and the text names every constant */
    char *text = NULL;
    ork_twin_consts_default(&a);
    REQUIRE(ork_twin_calib_format(&a, NULL, &text) == 0);
    size_t n;
    const struct ork_twin_const_info *t = ork_twin_consts_table(&n);
    for (size_t i = 0; i < n; i++)
        CHECK(strstr(text, t[i].name) != NULL);
    memset(&b, 0, sizeof b);
    CHECK(ork_twin_calib_parse(text, strlen(text), &b) == 0);
    CHECK(memcmp(&a, &b, sizeof a) == 0);
    ork_free(text);
    unlink(path);
}

static void test_partial(void)
{
    struct ork_twin_consts c, d;
    ork_twin_consts_default(&c);
    ork_twin_consts_default(&d);
    const char *js = "{\"format\":\"ork-twin-calibration\",\"version\":1,"
                     "\"constants\":{\"npu_launch_ns\":48000,\"cpu_bw_all\":2.1e10}}";
    REQUIRE(ork_twin_calib_parse(js, strlen(js), &c) == 0);
    CHECK(c.npu_launch_ns == 48000 && c.cpu_bw_all == 2.1e10);
    d.npu_launch_ns = 48000, d.cpu_bw_all = 2.1e10;
    CHECK(memcmp(&c, &d, sizeof c) == 0);
    js = "{\"format\":\"ork-twin-calibration\",\"version\":1}";     /* nothing to change */
    CHECK(ork_twin_calib_parse(js, strlen(js), &c) == 0);
    CHECK(memcmp(&c, &d, sizeof c) == 0);
}

/* Each bad file fails with `code`, its message names `key`, and the table is unchanged. */
static void bad(const char *js, int code, const char *key)
{
    struct ork_twin_consts c, d;
    ork_twin_consts_default(&c);
    d = c;
    ork_error_clear();
    int ret = ork_twin_calib_parse(js, strlen(js), &c);
    if (ret != code || !strstr(ork_error_message(), key))
        fprintf(stderr, "  file %s -> %d \"%s\" (want %d naming '%s')\n", js, ret,
                ork_error_message(), code, key);
    CHECK(ret == code);
    CHECK(strstr(ork_error_message(), key) != NULL);
    CHECK(memcmp(&c, &d, sizeof c) == 0);
}

#define HDR "{\"format\":\"ork-twin-calibration\",\"version\":1,"

static void test_bad_files(void)
{
    bad(HDR "\"constants\":{\"npu_launch_ns\":1,\"cpu_bw_al\":1}}", ORK_EFORMAT, "cpu_bw_al");
    bad(HDR "\"constants\":{\"cpu_bw_all\":\"22e9\"}}", ORK_EFORMAT, "cpu_bw_all");
    bad(HDR "\"constants\":{\"ioctl_ns\":-1}}", ORK_ERANGE, "ioctl_ns");
    bad(HDR "\"constants\":{\"cpu_bw_core\":0}}", ORK_ERANGE, "cpu_bw_core");
    bad(HDR "\"constants\":{\"cpu_bw_core\":1e999}}", ORK_ERANGE, "cpu_bw_core");
    bad(HDR "\"constants\":{\"cpu_bw_core\":NaN}}", ORK_EFORMAT, "JSON");
    bad(HDR "\"constants\":{\"npu_cores\":4}}", ORK_ERANGE, "npu_cores");
    bad(HDR "\"constants\":{\"cpu_cores\":1.5}}", ORK_ERANGE, "cpu_cores");
    bad(HDR "\"constants\":{\"ioctl_ns\":1,\"ioctl_ns\":2}}", ORK_EFORMAT, "ioctl_ns");
    bad(HDR "\"constants\":[1,2]}", ORK_EFORMAT, "constants");
    bad(HDR "\"extra\":1}", ORK_EFORMAT, "extra");
    bad(HDR "\"source\":7}", ORK_EFORMAT, "source");
    bad("{\"version\":1}", ORK_EFORMAT, "format");
    bad("{\"format\":\"ork-twin-calibration\"}", ORK_EFORMAT, "version");
    bad(HDR "\"version\":2}", ORK_EFORMAT, "version");
    bad("{\"format\":\"other\",\"version\":1}", ORK_EFORMAT, "format");
    bad("[]", ORK_EFORMAT, "object");
    bad("{\"format\":", ORK_EFORMAT, "JSON");
    bad("", ORK_EFORMAT, "JSON");
    struct ork_twin_consts c;
    ork_twin_consts_default(&c);
    CHECK(ork_twin_calib_load("/nonexistent/twin.json", &c) == ORK_EIO);
    CHECK(strstr(ork_error_message(), "/nonexistent/twin.json") != NULL);
}

static void test_create_refuses_bad_table(void)
{
    struct ork_twin_consts c;
    ork_twin_consts_default(&c);
    c.npu_bw_core = -1;
    struct ork_twin *tw = NULL;
    CHECK(ork_twin_create(&c, &tw) == ORK_ERANGE && tw == NULL);
    CHECK(strstr(ork_error_message(), "npu_bw_core") != NULL);
    char *text = NULL;
    CHECK(ork_twin_calib_format(&c, NULL, &text) == ORK_ERANGE && text == NULL);
}

int main(void)
{
    RUN(test_table);
    RUN(test_round_trip);
    RUN(test_partial);
    RUN(test_bad_files);
    RUN(test_create_refuses_bad_table);
    return ork_test_done();
}
