/* test_orkpack.c -- .orkpack files: write/read round trip; each kind of bad pack (truncated,
 * bit-flipped, other version, other source model, other SoC caps, not a pack) is refused with
 * its own problem and message; an aborted build leaves nothing. With the stories260K fixture:
 * a model's pack is built on first use, reused, gives the same logits as in-memory
 * quantisation, holds tiled bytes that load as they are, and a corrupt, stale or other-max_m
 * pack is explained and rebuilt. libork's tiled-weights
 * export and import (ork_npu_weights_export / ork_npu_weights_create_packed) round-trip. */
#include "ork_test.h"
#include "test_orkpack_files.h"

#include <ork/error.h>
#include <ork-engine/engine.h>
#include <ork-engine/gguf.h>
#include <ork-engine/orkpack.h>
#include <ork/npu.h>

#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>

static char g_dir[256];

static void tmp_path(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s", g_dir, name);
}

static const struct ork_orkpack_source src_a = { 1000, 123456789, 0x1122334455667788ull };

/* Two small tensors with known contents. */
static int write_pack(const char *path, const struct ork_orkpack_source *src,
                      const struct ork_orkpack_caps *caps)
{
    int8_t q[3 * 40];
    float s[3];
    for (int i = 0; i < 3 * 40; i++)
        q[i] = (int8_t)(i * 7 - 100);
    for (int i = 0; i < 3; i++)
        s[i] = 0.5f + (float)i;
    struct ork_orkpack_writer *w;
    int ret = ork_orkpack_writer_open(path, src, caps, 2, &w);
    if (ret < 0)
        return ret;
    if ((ret = ork_orkpack_writer_add(w, "a", 3, 40, q, s)) < 0 ||
        (ret = ork_orkpack_writer_add(w, "b", 1, 40, q + 40, s + 1)) < 0) {
        ork_orkpack_writer_abort(w);
        return ret;
    }
    return ork_orkpack_writer_commit(w);
}

static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static void flip_byte(const char *path, long off)
{
    FILE *f = fopen(path, "r+b");
    if (!f)
        return;
    fseek(f, off, SEEK_SET);
    int c = fgetc(f);
    fseek(f, off, SEEK_SET);
    fputc(c ^ 0x10, f);
    fclose(f);
}

static enum ork_orkpack_problem open_why(const char *path, const struct ork_orkpack_source *src,
                                         char *msg, size_t cap)
{
    struct ork_orkpack_caps caps;
    ork_orkpack_caps_default(&caps);
    struct ork_orkpack *p = NULL;
    enum ork_orkpack_problem why = ORK_ORKPACK_OK;
    int ret = ork_orkpack_open(path, src, &caps, &p, &why);
    snprintf(msg, cap, "%s", ret < 0 ? ork_error_message() : "");
    ork_orkpack_close(p);
    return why;
}

static void test_round_trip(void)
{
    char path[512];
    tmp_path(path, sizeof path, "rt.orkpack");
    struct ork_orkpack_caps caps;
    ork_orkpack_caps_default(&caps);
    REQUIRE(write_pack(path, &src_a, &caps) == 0);
    struct ork_orkpack *p;
    enum ork_orkpack_problem why;
    REQUIRE(ork_orkpack_open(path, &src_a, &caps, &p, &why) == 0);
    CHECK_EQ_INT(why, ORK_ORKPACK_OK);
    CHECK_EQ_INT(ork_orkpack_n_tensors(p), 2);
    struct ork_orkpack_tensor t;
    REQUIRE(ork_orkpack_tensor_find(p, "b", &t) == 0);
    CHECK_EQ_INT(t.n, 1);
    CHECK_EQ_INT(t.k, 40);
    CHECK_EQ_INT(t.q[0], (int8_t)(40 * 7 - 100));
    CHECK(t.scales[0] == 1.5f);
    REQUIRE(ork_orkpack_tensor_find(p, "a", &t) == 0);
    CHECK_EQ_INT(t.q[119], (int8_t)(119 * 7 - 100));
    CHECK(((uintptr_t)t.q & 4095) == 0);        /* page-aligned tensor data */
    CHECK(ork_orkpack_tensor_find(p, "c", &t) == ORK_ENOENT);
    ork_orkpack_close(p);
}

static void test_bad_packs(void)
{
    char path[512], msg[7][512];
    struct ork_orkpack_caps caps;
    ork_orkpack_caps_default(&caps);
    tmp_path(path, sizeof path, "bad.orkpack");

    unlink(path);
    CHECK_EQ_INT(open_why(path, &src_a, msg[0], sizeof msg[0]), ORK_ORKPACK_MISSING);

    REQUIRE(write_pack(path, &src_a, &caps) == 0);
    long size = file_size(path);
    REQUIRE(truncate(path, size - 100) == 0);
    CHECK_EQ_INT(open_why(path, &src_a, msg[1], sizeof msg[1]), ORK_ORKPACK_TRUNCATED);

    REQUIRE(write_pack(path, &src_a, &caps) == 0);
    flip_byte(path, size - 64);                     /* inside the last tensor's data */
    CHECK_EQ_INT(open_why(path, &src_a, msg[2], sizeof msg[2]), ORK_ORKPACK_CORRUPT);
    CHECK(strstr(msg[2], "checksum") != NULL);

    REQUIRE(write_pack(path, &src_a, &caps) == 0);
    flip_byte(path, 8);                             /* the version field */
    CHECK_EQ_INT(open_why(path, &src_a, msg[3], sizeof msg[3]), ORK_ORKPACK_WRONG_VERSION);

    /* a version-2 pack (one O projection per layer) is refused, and the message says what
     * changed; the rebuild itself is checked by tests/cli/test_pack.sh */
    CHECK(ORK_ORKPACK_VERSION == 5u);
    REQUIRE(write_pack(path, &src_a, &caps) == 0);
    put_u32_at(path, 8, 2);
    {
        char m2[512];
        CHECK_EQ_INT(open_why(path, &src_a, m2, sizeof m2), ORK_ORKPACK_WRONG_VERSION);
        CHECK(strstr(m2, "format version 2") != NULL);
        CHECK(strstr(m2, "two halves by attention heads") != NULL);
    }

    struct ork_orkpack_source other = src_a;
    other.mtime_ns += 1;
    REQUIRE(write_pack(path, &src_a, &caps) == 0);
    CHECK_EQ_INT(open_why(path, &other, msg[4], sizeof msg[4]), ORK_ORKPACK_STALE);

    struct ork_orkpack_caps foreign = caps;
    foreign.soc = 0x3576;
    REQUIRE(write_pack(path, &src_a, &foreign) == 0);
    CHECK_EQ_INT(open_why(path, &src_a, msg[5], sizeof msg[5]), ORK_ORKPACK_FOREIGN);

    FILE *f = fopen(path, "wb");
    REQUIRE(f);
    for (int i = 0; i < 200; i++)
        fputc('x', f);
    fclose(f);
    CHECK_EQ_INT(open_why(path, &src_a, msg[6], sizeof msg[6]), ORK_ORKPACK_BAD_MAGIC);

    for (int i = 0; i < 7; i++) {
        printf("  %s\n", msg[i]);
        for (int j = 0; j < i; j++)
            CHECK(strcmp(msg[i], msg[j]) != 0);     /* each problem explained its own way */
    }
}

static void test_abort_leaves_nothing(void)
{
    char path[512], tmp[600];
    tmp_path(path, sizeof path, "aborted.orkpack");
    unlink(path);
    struct ork_orkpack_caps caps;
    ork_orkpack_caps_default(&caps);
    struct ork_orkpack_writer *w;
    REQUIRE(ork_orkpack_writer_open(path, &src_a, &caps, 2, &w) == 0);
    int8_t q[40] = { 0 };
    float s = 1;
    REQUIRE(ork_orkpack_writer_add(w, "a", 1, 40, q, &s) == 0);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    CHECK(file_size(tmp) > 0);                      /* being written under the temporary name */
    CHECK(file_size(path) < 0);
    CHECK(ork_orkpack_writer_commit(w) < 0);        /* 1 of 2 tensors: refused, removed */
    CHECK(file_size(tmp) < 0);
    CHECK(file_size(path) < 0);
}

/* ---- with a model ------------------------------------------------------------------------ */

/* The executor's prefill rows (NPU_DEFAULT_MAX_M in src/engine/npu/npu_priv.h), which
 * `ork pack` tiles for. */
#define PACK_MAX_M 128u

static void test_model_pack(void)
{
    char model[512], pack[512];
    REQUIRE(model_copy_in(g_dir, model, pack, sizeof model) == 0);
    static float ref[512], got[512];
    REQUIRE(logits_of(model, ORK_NPU_EXEC_NO_PACK, NULL, ref) == 0);
    CHECK(file_size(pack) < 0);                     /* NO_PACK wrote nothing */

    enum ork_orkpack_problem found;
    REQUIRE(ork_orkpack_build_for_model(model, NULL, NULL, NULL, false, true, &found) == 0);
    CHECK_EQ_INT(found, ORK_ORKPACK_MISSING);
    CHECK(ork_orkpack_check_for_model(model, NULL, NULL) == 0);
    REQUIRE(ork_orkpack_build_for_model(model, NULL, NULL, NULL, false, true, &found) == 0);
    CHECK_EQ_INT(found, ORK_ORKPACK_OK);            /* valid: kept */
    REQUIRE(logits_of(model, 0, NULL, got) == 0);         /* loaded from the pack */
    CHECK(memcmp(ref, got, sizeof ref) == 0);

    /* the pack holds the NPU-tiled bytes: each tensor loads through create_packed as it is,
     * and a fresh tiling of the loaded weights exports the same bytes */
    struct ork_orkpack *pk;
    REQUIRE(ork_orkpack_open(pack, NULL, NULL, &pk, NULL) == 0);
    struct ork_npu_opts o = { .struct_size = sizeof o, .device = "sim" };
    struct ork_npu *npu;
    REQUIRE(ork_npu_open(&o, &npu) == 0);
    CHECK(ork_orkpack_n_tensors(pk) > 0);
    for (uint32_t i = 0; i < ork_orkpack_n_tensors(pk); i++) {
        struct ork_orkpack_tensor t;
        REQUIRE(ork_orkpack_tensor_at(pk, i, &t) == 0);
        CHECK(t.q_bytes >= (uint64_t)t.n * t.k);
        struct ork_npu_weights_desc d = { .struct_size = sizeof d, .dtype = ORK_NPU_I8,
                                          .k = t.k, .n = t.n, .scales = t.scales,
                                          .max_m = PACK_MAX_M };
        struct ork_npu_weights *w;
        REQUIRE(ork_npu_weights_create_packed(npu, &d, t.q, t.q_bytes, &w) == 0);
        uint8_t *b = malloc(t.q_bytes);
        REQUIRE(b);
        CHECK(ork_npu_weights_export(w, b, t.q_bytes) == 0);
        CHECK(memcmp(b, t.q, t.q_bytes) == 0);
        free(b);
        ork_npu_weights_destroy(w);
    }
    ork_npu_close(npu);
    ork_orkpack_close(pk);

    /* an executor with another max_m finds the pack tiled for another plan and rebuilds it */
    {
        struct ork_model_params mp;
        ork_model_params_default(&mp);
        mp.device = "sim";
        mp.no_tokenizer = true;
        mp.npu_max_m = 8;
        mp.npu_flags = ORK_NPU_EXEC_QUIET;
        struct ork_model *m;
        REQUIRE(ork_model_load(model, &mp, &m) == 0);
        ork_model_free(m);
        CHECK(ork_orkpack_check_for_model(model, NULL, NULL) < 0);
        CHECK(strstr(ork_error_message(), "max_m") != NULL);
        REQUIRE(ork_orkpack_build_for_model(model, NULL, NULL, NULL, false, true, &found) == 0);
        CHECK_EQ_INT(found, ORK_ORKPACK_OTHER_PLAN);
    }

    /* corrupt -> explained and rebuilt on load; same logits */
    flip_byte(pack, file_size(pack) - 16);
    CHECK(ork_orkpack_check_for_model(model, NULL, NULL) < 0);
    memset(got, 0, sizeof got);
    REQUIRE(logits_of(model, 0, NULL, got) == 0);
    CHECK(memcmp(ref, got, sizeof ref) == 0);
    CHECK(ork_orkpack_check_for_model(model, NULL, NULL) == 0);

    /* stale (the model changed) -> rebuilt */
    struct timespec ts[2] = { { 0, UTIME_NOW }, { 1000000, 0 } };
    REQUIRE(utimensat(AT_FDCWD, model, ts, 0) == 0);
    CHECK(ork_orkpack_check_for_model(model, NULL, NULL) < 0);
    REQUIRE(ork_orkpack_build_for_model(model, NULL, NULL, NULL, false, true, &found) == 0);
    CHECK_EQ_INT(found, ORK_ORKPACK_STALE);
    CHECK(ork_orkpack_check_for_model(model, NULL, NULL) == 0);

    /* a pack of this version for this model whose tensors do not fit the executor (here two
     * foreign tensors; in practice e.g. the O projection split at other heads) -> explained by
     * --check, rebuilt by the engine, with the fused executor's tensors (the O projection
     * whole; its halves only under fused-split-o, which quantises them in memory) */
    {
        struct ork_gguf *g;
        REQUIRE(ork_gguf_open(model, &g) == 0);
        struct ork_orkpack_source sid;
        REQUIRE(ork_orkpack_source_of(model, ork_gguf_data_offset(g), &sid) == 0);
        ork_gguf_close(g);
        struct ork_orkpack_caps caps;
        ork_orkpack_caps_default(&caps);
        caps.npu_max_m = PACK_MAX_M;
        REQUIRE(write_pack(pack, &sid, &caps) == 0);
        CHECK(ork_orkpack_check_for_model(model, NULL, NULL) < 0);
        CHECK(strstr(ork_error_message(), "does not fit the model") != NULL);
        REQUIRE(ork_orkpack_build_for_model(model, NULL, NULL, NULL, false, true, &found) == 0);
        CHECK_EQ_INT(found, ORK_ORKPACK_STALE);
        CHECK(ork_orkpack_check_for_model(model, NULL, NULL) == 0);
        struct ork_orkpack *pk2;
        struct ork_orkpack_tensor t;
        REQUIRE(ork_orkpack_open(pack, NULL, NULL, &pk2, NULL) == 0);
        CHECK(ork_orkpack_tensor_find(pk2, "blk.0.attn_output", &t) == 0);
        CHECK(ork_orkpack_tensor_find(pk2, "blk.0.attn_output.a", &t) == ORK_ENOENT);
        CHECK(ork_orkpack_tensor_find(pk2, "blk.0.attn_output.b", &t) == ORK_ENOENT);
        ork_orkpack_close(pk2);
        memset(got, 0, sizeof got);
        REQUIRE(logits_of(model, 0, NULL, got) == 0);
        CHECK(memcmp(ref, got, sizeof ref) == 0);
    }
    unlink(pack);
    unlink(model);
}

/* libork's tiled weights: the bytes exported from a fresh tiling load back through
 * ork_npu_weights_create_packed unchanged (no re-tiling), at decode and prefill slicings; a
 * wrong size is refused. */
static void test_tiled_weights(void)
{
    struct ork_npu_opts o = { .struct_size = sizeof o, .device = "sim" };
    struct ork_npu *npu;
    REQUIRE(ork_npu_open(&o, &npu) == 0);
    enum { K = 1100, N = 70 };           /* K and N not multiples of the 32-wide tiles */
    int8_t *q = malloc((size_t)N * K);
    float sc[N];
    REQUIRE(q);
    uint32_t x = 12345;
    for (size_t i = 0; i < (size_t)N * K; i++) {
        x = x * 1103515245u + 12345u;
        q[i] = (int8_t)((int)(x >> 16) % 255 - 127);
    }
    for (int j = 0; j < N; j++)
        sc[j] = 0.01f * (float)(j + 1);
    const uint32_t max_ms[2] = { 1, 64 };
    for (int t = 0; t < 2; t++) {
        struct ork_npu_weights_desc d = { .struct_size = sizeof d, .dtype = ORK_NPU_I8, .k = K,
                                          .n = N, .w = q, .scales = sc, .max_m = max_ms[t] };
        struct ork_npu_weights *w, *w2;
        REQUIRE(ork_npu_weights_create(npu, &d, &w) == 0);
        uint64_t bytes = ork_npu_weights_bytes(w);
        CHECK(bytes >= (uint64_t)N * K);
        uint8_t *a = malloc(bytes), *b = malloc(bytes);
        REQUIRE(a && b);
        CHECK(ork_npu_weights_export(w, a, bytes - 1) == ORK_ENOSPC);
        CHECK(ork_npu_weights_export(w, a, bytes) == 0);
        d.w = NULL;
        CHECK(ork_npu_weights_create_packed(npu, &d, a, bytes - 32, &w2) == ORK_EFORMAT);
        CHECK(w2 == NULL);
        REQUIRE(ork_npu_weights_create_packed(npu, &d, a, bytes, &w2) == 0);
        CHECK(ork_npu_weights_bytes(w2) == bytes);
        memset(b, 0x5a, bytes);
        CHECK(ork_npu_weights_export(w2, b, bytes) == 0);
        CHECK(memcmp(a, b, bytes) == 0);
        CHECK(memcmp(ork_npu_weights_scales(w2), sc, sizeof sc) == 0);
        free(a);
        free(b);
        ork_npu_weights_destroy(w2);
        ork_npu_weights_destroy(w);
    }
    free(q);
    ork_npu_close(npu);
}

int main(void)
{
    snprintf(g_dir, sizeof g_dir, "/tmp/ork-test-orkpack.%ld", (long)getpid());
    mkdir(g_dir, 0700);
    RUN(test_round_trip);
    RUN(test_bad_packs);
    RUN(test_abort_leaves_nothing);
    RUN(test_tiled_weights);
    char p[600];
    const char *names[] = { "rt.orkpack", "bad.orkpack" };
    for (int i = 0; i < 2; i++) {
        tmp_path(p, sizeof p, names[i]);
        unlink(p);
    }
    RUN(test_model_pack);
    rmdir(g_dir);
    return ork_test_done();
}
