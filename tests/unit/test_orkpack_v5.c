/* test_orkpack_v5.c -- what versions 4 and 5 of the .orkpack add (docs/orkpack.md): each
 * tensor's encoding (raw, dcomp, w4a8), grid and rel-RMSE round-trip; an unknown encoding or
 * grid is refused as corrupt; the --npu-weights setting in the header, its rotation of K
 * included (a pack built for another one is ORK_ORKPACK_OTHER_WEIGHTS); version-3 and -4 packs
 * are explained and refused. With the stories260K fixture: a dcomp:31 pack holds libork's
 * DCOMP blobs on grid 31, loads into the same logits as the in-memory quantisation, and an int8
 * pack met by a dcomp run (or the reverse) is explained and rebuilt; a rotated int8 pack loads
 * into the rotated in-memory logits and an unrotated run rebuilds it. */
#include "ork_test.h"
#include "test_orkpack_files.h"

#include <ork-engine/engine.h>
#include <ork-engine/orkpack.h>
#include <ork/error.h>

#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>

static char g_dir[256];
static const struct ork_orkpack_source src_a = { 2000, 987654321, 0x0102030405060708ull };

static void tmp_path(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s", g_dir, name);
}

/* One tensor "t" of 2 x 64 with the given coding. */
static int write_coded(const char *path, const struct ork_orkpack_caps *caps,
                       const struct ork_orkpack_coding *c)
{
    int8_t q[2 * 64];
    float s[2] = { 0.25f, 0.5f };
    for (int i = 0; i < 2 * 64; i++)
        q[i] = (int8_t)(i % 15 - 7);
    struct ork_orkpack_writer *w;
    int ret = ork_orkpack_writer_open(path, &src_a, caps, 1, &w);
    if (ret < 0)
        return ret;
    if ((ret = ork_orkpack_writer_add_coded(w, "t", 2, 64, q, sizeof q, s, c)) < 0) {
        ork_orkpack_writer_abort(w);
        return ret;
    }
    return ork_orkpack_writer_commit(w);
}

static enum ork_orkpack_problem open_why(const char *path, const struct ork_orkpack_caps *caps,
                                         char *msg, size_t cap)
{
    struct ork_orkpack *p = NULL;
    enum ork_orkpack_problem why = ORK_ORKPACK_OK;
    int ret = ork_orkpack_open(path, &src_a, caps, &p, &why);
    snprintf(msg, cap, "%s", ret < 0 ? ork_error_message() : "");
    ork_orkpack_close(p);
    return why;
}

static void test_coding_round_trip(void)
{
    char path[512], msg[512];
    tmp_path(path, sizeof path, "coded.orkpack");
    struct ork_orkpack_caps caps;
    ork_orkpack_caps_default(&caps);
    caps.w_encoding = 1;
    caps.w_max_rel_rmse = 0.03f;
    const struct ork_orkpack_coding c = { .encoding = ORK_ORKPACK_ENC_DCOMP, .grid = 15,
                                          .rel_rmse = 0.0412f };
    REQUIRE(write_coded(path, &caps, &c) == 0);
    struct ork_orkpack *p;
    REQUIRE(ork_orkpack_open(path, &src_a, &caps, &p, NULL) == 0);
    struct ork_orkpack_tensor t;
    REQUIRE(ork_orkpack_tensor_find(p, "t", &t) == 0);
    CHECK_EQ_INT(t.coding.encoding, ORK_ORKPACK_ENC_DCOMP);
    CHECK_EQ_INT(t.coding.grid, 15);
    CHECK(t.coding.rel_rmse == 0.0412f);
    CHECK_EQ_INT(t.q[3], 3 - 7);
    ork_orkpack_close(p);

    /* the same pack met by a run with another setting: its own problem */
    struct ork_orkpack_caps other = caps;
    other.w_max_rel_rmse = 0.05f;
    CHECK_EQ_INT(open_why(path, &other, msg, sizeof msg), ORK_ORKPACK_OTHER_WEIGHTS);
    CHECK(strstr(msg, "--npu-weights dcomp (rel-RMSE <= 0.03), this run wants dcomp "
                      "(rel-RMSE <= 0.05)") != NULL);
    printf("  %s\n", msg);
    other = caps;
    other.w_encoding = 0;
    other.w_max_rel_rmse = 0.0f;
    CHECK_EQ_INT(open_why(path, &other, msg, sizeof msg), ORK_ORKPACK_OTHER_WEIGHTS);
    CHECK_EQ_INT(open_why(path, &caps, msg, sizeof msg), ORK_ORKPACK_OK);

    /* the writer refuses codings outside the format */
    const struct ork_orkpack_coding bad[3] = { { .encoding = 3, .grid = 15 },
                                               { .encoding = 1, .grid = 0 },
                                               { .encoding = 0, .grid = 128 } };
    for (int i = 0; i < 3; i++)
        CHECK(write_coded(path, &caps, &bad[i]) == ORK_EINVAL);
    unlink(path);
}

/* The rotation of K is part of the setting: recorded, compared, named. */
static void test_rotation_setting(void)
{
    char path[512], msg[512];
    tmp_path(path, sizeof path, "rot.orkpack");
    struct ork_orkpack_caps caps;
    ork_orkpack_caps_default(&caps);
    CHECK_EQ_INT(caps.w_rotation, 0);
    caps.w_flags = ORK_NPU_WENC_ROTATE;
    caps.w_rotation = 1;
    const struct ork_orkpack_coding c = { .encoding = ORK_ORKPACK_ENC_RAW, .grid = 127,
                                          .rel_rmse = 0.006f };
    REQUIRE(write_coded(path, &caps, &c) == 0);
    CHECK_EQ_INT(open_why(path, &caps, msg, sizeof msg), ORK_ORKPACK_OK);
    struct ork_orkpack_caps other = caps;
    other.w_flags = 0;
    other.w_rotation = 0;
    CHECK_EQ_INT(open_why(path, &other, msg, sizeof msg), ORK_ORKPACK_OTHER_WEIGHTS);
    CHECK(strstr(msg, "built with --npu-weights int8, rotated (R1), this run wants int8") != NULL);
    printf("  %s\n", msg);
    other = caps;
    other.w_rotation = 2;                           /* another transform of the same flag */
    CHECK_EQ_INT(open_why(path, &other, msg, sizeof msg), ORK_ORKPACK_OTHER_WEIGHTS);
    CHECK(strstr(msg, "this run wants int8, rotated (R2)") != NULL);
    /* a w4a8 tensor's coding round-trips */
    caps.w_encoding = 2;
    const struct ork_orkpack_coding w4 = { .encoding = ORK_ORKPACK_ENC_W4A8, .grid = 7,
                                           .rel_rmse = 0.11f };
    REQUIRE(write_coded(path, &caps, &w4) == 0);
    struct ork_orkpack *p;
    REQUIRE(ork_orkpack_open(path, &src_a, &caps, &p, NULL) == 0);
    struct ork_orkpack_tensor t;
    REQUIRE(ork_orkpack_tensor_find(p, "t", &t) == 0);
    CHECK_EQ_INT(t.coding.encoding, ORK_ORKPACK_ENC_W4A8);
    CHECK_EQ_INT(t.coding.grid, 7);
    ork_orkpack_close(p);
    other = caps;
    other.w_encoding = 1;
    CHECK_EQ_INT(open_why(path, &other, msg, sizeof msg), ORK_ORKPACK_OTHER_WEIGHTS);
    CHECK(strstr(msg, "built with --npu-weights w4a8, rotated (R1)") != NULL);
    unlink(path);
}

static void test_old_and_bad(void)
{
    char path[512], msg[512];
    tmp_path(path, sizeof path, "old.orkpack");
    struct ork_orkpack_caps caps;
    ork_orkpack_caps_default(&caps);
    const struct ork_orkpack_coding c = { .encoding = 0, .grid = 127 };
    CHECK(ORK_ORKPACK_VERSION == 5u);
    REQUIRE(write_coded(path, &caps, &c) == 0);
    put_u32_at(path, 8, 3);                         /* a version-3 pack */
    CHECK_EQ_INT(open_why(path, &caps, msg, sizeof msg), ORK_ORKPACK_WRONG_VERSION);
    CHECK(strstr(msg, "format version 3") != NULL);
    CHECK(strstr(msg, "encoding and grid") != NULL);
    printf("  %s\n", msg);
    REQUIRE(write_coded(path, &caps, &c) == 0);
    put_u32_at(path, 8, 4);                         /* a version-4 pack */
    CHECK_EQ_INT(open_why(path, &caps, msg, sizeof msg), ORK_ORKPACK_WRONG_VERSION);
    CHECK(strstr(msg, "format version 4 (no rotation of K and no w4a8") != NULL);
    CHECK(strstr(msg, "this build reads version 5") != NULL);
    printf("  %s\n", msg);
    /* an entry's encoding changed after the fact: the table checksum catches it first */
    REQUIRE(write_coded(path, &caps, &c) == 0);
    put_u32_at(path, 128 + 88, 9);
    CHECK_EQ_INT(open_why(path, &caps, msg, sizeof msg), ORK_ORKPACK_CORRUPT);
    unlink(path);
}

/* ---- with a model ------------------------------------------------------------------------ */

static void test_model_dcomp_pack(void)
{
    char model[512], pack[512];
    REQUIRE(model_copy_in(g_dir, model, pack, sizeof model) == 0);
    const struct ork_npu_weights_opts d31 = { .encoding = ORK_NPU_WENC_DCOMP, .levels = 31 };
    static float ref[512], got[512], i8[512];
    REQUIRE(logits_of(model, ORK_NPU_EXEC_NO_PACK, &d31, ref) == 0);
    REQUIRE(logits_of(model, ORK_NPU_EXEC_NO_PACK, NULL, i8) == 0);
    CHECK(memcmp(ref, i8, sizeof ref) != 0);        /* grid 31 is not int8's */

    enum ork_orkpack_problem found;
    REQUIRE(ork_orkpack_build_for_model(model, NULL, &d31, NULL, false, true, &found) == 0);
    CHECK_EQ_INT(found, ORK_ORKPACK_MISSING);
    CHECK(ork_orkpack_check_for_model(model, NULL, &d31) == 0);
    CHECK(ork_orkpack_check_for_model(model, NULL, NULL) < 0);     /* int8 wants its own */
    CHECK(strstr(ork_error_message(), "built for other NPU weights") != NULL);
    struct ork_orkpack *pk;
    REQUIRE(ork_orkpack_open(pack, NULL, NULL, &pk, NULL) == 0);
    uint32_t n_dcomp = 0;
    for (uint32_t i = 0; i < ork_orkpack_n_tensors(pk); i++) {
        struct ork_orkpack_tensor t;
        REQUIRE(ork_orkpack_tensor_at(pk, i, &t) == 0);
        CHECK_EQ_INT(t.coding.grid, 31);
        CHECK(t.coding.rel_rmse > 0.0f && t.coding.rel_rmse < 0.1f);
        n_dcomp += t.coding.encoding == ORK_ORKPACK_ENC_DCOMP;
    }
    CHECK(n_dcomp > 0);
    ork_orkpack_close(pk);
    memset(got, 0, sizeof got);
    REQUIRE(logits_of(model, 0, &d31, got) == 0);   /* from the pack */
    CHECK(memcmp(ref, got, sizeof ref) == 0);

    /* an int8 run meets the dcomp pack: rebuilt for int8, the int8 logits */
    memset(got, 0, sizeof got);
    REQUIRE(logits_of(model, 0, NULL, got) == 0);
    CHECK(memcmp(i8, got, sizeof got) == 0);
    CHECK(ork_orkpack_check_for_model(model, NULL, NULL) == 0);
    /* and `ork pack --npu-weights dcomp:31` on it reports what it found */
    REQUIRE(ork_orkpack_build_for_model(model, NULL, &d31, NULL, false, true, &found) == 0);
    CHECK_EQ_INT(found, ORK_ORKPACK_OTHER_WEIGHTS);
    /* a bad setting is refused before any work */
    const struct ork_npu_weights_opts bad = { .encoding = ORK_NPU_WENC_DCOMP, .levels = 9 };
    CHECK(ork_orkpack_build_for_model(model, NULL, &bad, NULL, false, true, &found) == ORK_EINVAL);
    CHECK(strstr(ork_error_message(), "grid 9") != NULL);
    unlink(pack);
    unlink(model);
}

/* A rotated int8 pack: the rotated in-memory logits from it; an unrotated run rebuilds it. */
static void test_model_rotated_pack(void)
{
    char model[512], pack[512];
    REQUIRE(model_copy_in(g_dir, model, pack, sizeof model) == 0);
    const struct ork_npu_weights_opts rot = { .encoding = ORK_NPU_WENC_INT8,
                                              .flags = ORK_NPU_WENC_ROTATE };
    static float ref[512], got[512], i8[512];
    REQUIRE(logits_of(model, ORK_NPU_EXEC_NO_PACK, &rot, ref) == 0);
    REQUIRE(logits_of(model, ORK_NPU_EXEC_NO_PACK, NULL, i8) == 0);
    CHECK(memcmp(ref, i8, sizeof ref) != 0);        /* other codes */
    enum ork_orkpack_problem found;
    REQUIRE(ork_orkpack_build_for_model(model, NULL, &rot, NULL, false, true, &found) == 0);
    CHECK_EQ_INT(found, ORK_ORKPACK_MISSING);
    CHECK(ork_orkpack_check_for_model(model, NULL, &rot) == 0);
    CHECK(ork_orkpack_check_for_model(model, NULL, NULL) < 0);
    CHECK(strstr(ork_error_message(), "built for other NPU weights") != NULL);
    struct ork_orkpack *pk;
    REQUIRE(ork_orkpack_open(pack, NULL, NULL, &pk, NULL) == 0);
    for (uint32_t i = 0; i < ork_orkpack_n_tensors(pk); i++) {
        struct ork_orkpack_tensor t;
        REQUIRE(ork_orkpack_tensor_at(pk, i, &t) == 0);
        CHECK_EQ_INT(t.coding.encoding, ORK_ORKPACK_ENC_RAW);
        CHECK_EQ_INT(t.coding.grid, 127);
        CHECK(t.coding.rel_rmse > 0.0f && t.coding.rel_rmse < 0.02f);  /* int8's, rotated */
    }
    ork_orkpack_close(pk);
    REQUIRE(logits_of(model, 0, &rot, got) == 0);   /* from the pack */
    CHECK(memcmp(ref, got, sizeof ref) == 0);
    memset(got, 0, sizeof got);
    REQUIRE(logits_of(model, 0, NULL, got) == 0);   /* unrotated: rebuilt for int8 */
    CHECK(memcmp(i8, got, sizeof got) == 0);
    CHECK(ork_orkpack_check_for_model(model, NULL, NULL) == 0);
    unlink(pack);
    unlink(model);
}

int main(void)
{
    snprintf(g_dir, sizeof g_dir, "/tmp/ork-test-orkpack5.%ld", (long)getpid());
    mkdir(g_dir, 0700);
    RUN(test_coding_round_trip);
    RUN(test_rotation_setting);
    RUN(test_old_and_bad);
    RUN(test_model_dcomp_pack);
    RUN(test_model_rotated_pack);
    rmdir(g_dir);
    return ork_test_done();
}
