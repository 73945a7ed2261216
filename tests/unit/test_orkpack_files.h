/* test_orkpack_files.h -- file helpers of the .orkpack tests (test_orkpack.c,
 * test_orkpack_v5.c): overwrite a little-endian u32 in a file, copy a file (and the fixture
 * model into a test directory), and the logits of
 * the stories260K prompt on the simulator under given executor flags and NPU weights. */
#ifndef TEST_ORKPACK_FILES_H
#define TEST_ORKPACK_FILES_H

#include <ork-engine/engine.h>

#include <stdint.h>
#include <stdio.h>

/* Overwrite the little-endian u32 at off. */
static void put_u32_at(const char *path, long off, uint32_t v)
{
    FILE *f = fopen(path, "r+b");
    if (!f)
        return;
    fseek(f, off, SEEK_SET);
    for (int i = 0; i < 4; i++)
        fputc((int)((v >> (8 * i)) & 0xff), f);
    fclose(f);
}

static int copy_file(const char *from, const char *to)
{
    FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
    int ok = a && b;
    char buf[65536];
    size_t n;
    while (ok && (n = fread(buf, 1, sizeof buf, a)) > 0)
        ok = fwrite(buf, 1, n, b) == n;
    if (a)
        fclose(a);
    if (b)
        fclose(b);
    return ok ? 0 : -1;
}

/* A copy of the stories260K fixture as DIR/m.gguf (skips without the fixtures), no pack beside
 * it yet; the paths in model and pack (cap bytes each). 0 or -1. */
static int model_copy_in(const char *dir, char *model, char *pack, size_t cap)
{
    const char *fx = ork_test_fixture("models/stories260K.gguf");
    snprintf(model, cap, "%s/m.gguf", dir);
    snprintf(pack, cap, "%s/m.orkpack", dir);
    if (copy_file(fx, model) < 0)
        return -1;
    unlink(pack);
    return 0;
}

/* wo NULL: int8. */
static int logits_of(const char *model, uint32_t flags, const struct ork_npu_weights_opts *wo,
                     float *out)
{
    struct ork_model_params mp;
    ork_model_params_default(&mp);
    mp.device = "sim";
    mp.no_tokenizer = true;
    mp.npu_flags = flags | ORK_NPU_EXEC_QUIET;
    if (wo)
        mp.npu_weights = *wo;
    struct ork_model *m;
    int ret = ork_model_load(model, &mp, &m);
    if (ret < 0)
        return ret;
    struct ork_session *s;
    if ((ret = ork_session_create(m, NULL, &s)) == 0) {
        static const int32_t ids[] = { 1, 403, 407, 261, 378 };
        ret = ork_model_eval(s, ids, 5, 0, out, 0);
        ork_session_free(s);
    }
    ork_model_free(m);
    return ret;
}

#endif
