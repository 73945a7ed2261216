/* fuzz_orkpack.c -- libFuzzer target on the .orkpack reader (src/engine/npu/orkpack.c).
 *
 * Two kinds of input, by the low bit of the first byte:
 *   even: the bytes after it are a pack file as is (every header field, the table,
 *         truncation; the checksums stop most mutations early, as they should);
 *   odd:  a description the target writes through the writer first (so that the checksums
 *         hold and the table's fields reach the reader): byte 1 = tensors (0..3), then per
 *         tensor n, k, encoding (0..3: raw, dcomp, w4a8 and one unknown), grid (one byte each)
 *         and a data length (one byte), the data taken from the rest of the input; bit 1 of
 *         the first byte = the header records a rotated setting (ORK_NPU_WENC_ROTATE, rotation
 *         1). The writer refuses codings outside the format; what it accepts must open and
 *         every tensor must be readable.
 * The pack is opened without caps, with the default caps and with the rotated setting's; every
 * tensor is walked. No crash, no read past the mapping. The file lives under /tmp (one per
 * process). */
#include <ork-engine/engine.h>
#include <ork-engine/orkpack.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;

static void walk(const char *path, const struct ork_orkpack_caps *caps)
{
    struct ork_orkpack *p;
    if (ork_orkpack_open(path, NULL, caps, &p, NULL) < 0)
        return;
    for (uint32_t i = 0; i < ork_orkpack_n_tensors(p); i++) {
        struct ork_orkpack_tensor t;
        if (ork_orkpack_tensor_at(p, i, &t) < 0)
            continue;
        sink += strlen(t.name) + t.n + t.k + t.coding.encoding + t.coding.grid;
        if (t.q_bytes)
            sink += (uint8_t)t.q[0] + (uint8_t)t.q[t.q_bytes - 1];
        if (t.n)
            sink += (uint64_t)(t.scales[0] + t.scales[t.n - 1]);
        struct ork_orkpack_tensor u;
        sink += ork_orkpack_tensor_find(p, t.name, &u) == 0;
    }
    struct ork_orkpack_tensor none;
    sink += ork_orkpack_tensor_find(p, "no such tensor", &none) < 0;
    ork_orkpack_close(p);
}

/* The odd inputs: write the described pack (0 when written). */
static int write_described(const char *path, const uint8_t *d, size_t size)
{
    static const struct ork_orkpack_source src = { 1, 2, 3 };
    struct ork_orkpack_caps caps;
    ork_orkpack_caps_default(&caps);
    if (d[0] & 2) {
        caps.w_flags = ORK_NPU_WENC_ROTATE;
        caps.w_rotation = 1;
    }
    size_t at = 1;
    uint32_t n_t = size > at ? d[at++] % 4u : 0;
    struct ork_orkpack_writer *w;
    if (ork_orkpack_writer_open(path, &src, &caps, n_t, &w) < 0)
        return -1;
    static uint8_t data[256];
    static float scales[256];
    for (uint32_t t = 0; t < n_t; t++) {
        if (size < at + 5) {
            ork_orkpack_writer_abort(w);
            return -1;
        }
        uint32_t n = d[at] + 1u, k = d[at + 1] + 1u;
        struct ork_orkpack_coding c = { .encoding = d[at + 2] % 4u, .grid = d[at + 3] };
        size_t len = d[at + 4];
        at += 5;
        if (len > size - at)
            len = size - at;
        memset(data, 0, sizeof data);
        memcpy(data, d + at, len);
        at += len;
        for (uint32_t j = 0; j < n; j++)
            scales[j] = (float)j;
        char name[16];
        snprintf(name, sizeof name, "t%u", t);
        if (ork_orkpack_writer_add_coded(w, name, n, k, data, len, scales, &c) < 0) {
            ork_orkpack_writer_abort(w);
            return -1;
        }
    }
    return ork_orkpack_writer_commit(w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/fuzz-orkpack.%ld", (long)getpid());
    if (size && (data[0] & 1)) {
        if (write_described(path, data, size) < 0)
            return 0;
    } else {
        FILE *f = fopen(path, "wb");
        if (!f)
            return 0;
        if (size > 1 && fwrite(data + 1, 1, size - 1, f) != size - 1) {
            fclose(f);
            unlink(path);
            return 0;
        }
        fclose(f);
    }
    struct ork_orkpack_caps caps;
    ork_orkpack_caps_default(&caps);
    walk(path, NULL);
    walk(path, &caps);
    caps.w_flags = ORK_NPU_WENC_ROTATE;
    caps.w_rotation = 1;
    walk(path, &caps);
    unlink(path);
    return 0;
}
