/* orkpack.c -- read and write .orkpack files (include/ork-engine/orkpack.h, docs/orkpack.md).
 *
 * Layout (little-endian, offsets in bytes):
 *   [0, 128)        header: magic, version, SoC caps, source identity, table place, checksum
 *   [128, ...)      tensor table: n_tensors entries of PACK_ENTRY_BYTES
 *   page-aligned    per tensor: q_bytes of weights (tiled int8, libork's DCOMP blob or its
 *                   W4A8 weights: the entry's encoding), then (64-aligned) float scales[n]
 * Each entry's checksum is XXH3_64bits over q then scales; the header checksum covers the
 * header (with its checksum field zero) and the table. Written to "path.tmp.PID" and renamed,
 * so an interrupted build leaves no file under the real name.
 *
 * Not here: what goes in a pack (pack_build.c, weights_grid.c) or device buffers (libork). */
#include <ork-engine/engine.h>
#include <ork-engine/orkpack.h>

#include <ork/alloc.h>
#include <ork/error.h>

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef ORK_HAVE_XXHASH
#include <xxhash.h>
#endif

#define PACK_MAGIC "ORKPACK"            /* 8 bytes with the NUL */
#define PACK_HEADER_BYTES 128u
#define PACK_ENTRY_BYTES 112u           /* name[48] + n, k (u32) + q, scales offsets, checksum,
                                         * q bytes (u64) + encoding, grid (u32), rel-RMSE (f32)
                                         * + 12 reserved */
#define PACK_DATA_ALIGN 4096u           /* page: a tensor can be mapped and handed over alone */
#define PACK_SCALES_ALIGN 64u
#define PACK_SOC_RK3588 0x3588u
/* Hardware multiples of the int8 matmul: K % 32 and N % 32 (spec/rk3588-npu.md §5.1). */
#define PACK_I8_K_ALIGN 32u
#define PACK_I8_N_ALIGN 32u

/* Header field offsets. */
enum {
    H_MAGIC = 0, H_VERSION = 8, H_HEADER_BYTES = 12, H_SOC = 16, H_LAYOUT = 20, H_KALIGN = 24,
    H_NALIGN = 28, H_SRC_SIZE = 32, H_SRC_MTIME = 40, H_SRC_HASH = 48, H_NTENSORS = 56,
    H_TABLE_OFF = 64, H_FILE_BYTES = 72, H_MAX_M = 80, H_W_ENC = 84, H_W_LEVELS = 88,
    H_W_FLAGS = 92, H_W_MAX_ERR = 96, H_W_ROTATION = 100, H_W_INT8 = 104, H_CHECKSUM = 120,
};
/* Entry field offsets. */
enum { E_NAME = 0, E_N = 48, E_K = 52, E_Q_OFF = 56, E_S_OFF = 64, E_SUM = 72, E_Q_BYTES = 80,
       E_ENC = 88, E_GRID = 92, E_REL_RMSE = 96 };
/* The largest grid: int8's [-127, 127] (ork/dcomp.h). */
#define PACK_GRID_MAX 127u

/* ---- hashing ----------------------------------------------------------------------------- */

struct hasher {
#ifdef ORK_HAVE_XXHASH
    XXH3_state_t *st;
#else
    uint64_t h;                         /* FNV-1a 64 when libxxhash is absent */
#endif
};

static int hasher_init(struct hasher *h)
{
#ifdef ORK_HAVE_XXHASH
    h->st = XXH3_createState();
    if (!h->st)
        return ORK_ENOMEM;
    XXH3_64bits_reset(h->st);
#else
    h->h = 0xcbf29ce484222325ull;       /* FNV-1a offset basis */
#endif
    return 0;
}

static void hasher_update(struct hasher *h, const void *p, size_t n)
{
#ifdef ORK_HAVE_XXHASH
    XXH3_64bits_update(h->st, p, n);
#else
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        h->h = (h->h ^ b[i]) * 0x100000001b3ull;   /* FNV-1a 64 prime */
#endif
}

static uint64_t hasher_done(struct hasher *h)
{
#ifdef ORK_HAVE_XXHASH
    uint64_t v = XXH3_64bits_digest(h->st);
    XXH3_freeState(h->st);
    return v;
#else
    return h->h;
#endif
}

static uint64_t hash_bytes(const void *p, size_t n)
{
#ifdef ORK_HAVE_XXHASH
    return XXH3_64bits(p, n);
#else
    struct hasher h;
    hasher_init(&h);
    hasher_update(&h, p, n);
    return hasher_done(&h);
#endif
}

/* ---- little-endian fields ---------------------------------------------------------------- */

static void put32(uint8_t *b, uint32_t v) { memcpy(b, &v, 4); }
static void put64(uint8_t *b, uint64_t v) { memcpy(b, &v, 8); }
static uint32_t get32(const uint8_t *b) { uint32_t v; memcpy(&v, b, 4); return v; }
static void putf(uint8_t *b, float v) { memcpy(b, &v, 4); }
static float getf(const uint8_t *b) { float v; memcpy(&v, b, 4); return v; }
static uint64_t get64(const uint8_t *b) { uint64_t v; memcpy(&v, b, 8); return v; }

static uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

/* ---- misc -------------------------------------------------------------------------------- */

const char *ork_orkpack_problem_name(enum ork_orkpack_problem p)
{
    switch (p) {
    case ORK_ORKPACK_OK: return "ok";
    case ORK_ORKPACK_MISSING: return "missing";
    case ORK_ORKPACK_TRUNCATED: return "truncated";
    case ORK_ORKPACK_BAD_MAGIC: return "not a pack";
    case ORK_ORKPACK_WRONG_VERSION: return "wrong version";
    case ORK_ORKPACK_OTHER_PLAN: return "tiled for another max_m";
    case ORK_ORKPACK_OTHER_WEIGHTS: return "built for other NPU weights";
    case ORK_ORKPACK_FOREIGN: return "foreign SoC";
    case ORK_ORKPACK_STALE: return "stale";
    case ORK_ORKPACK_CORRUPT: return "corrupt";
    }
    return "?";
}

void ork_orkpack_caps_default(struct ork_orkpack_caps *c)
{
    c->soc = PACK_SOC_RK3588;
    c->layout = ORK_ORKPACK_LAYOUT_NPU_TILED;
    c->npu_max_m = 0;
    c->w_encoding = c->w_levels = c->w_flags = 0;
    c->w_max_rel_rmse = 0.0f;
    c->w_rotation = 0;
    c->w_int8 = 0;
    c->k_align = PACK_I8_K_ALIGN;
    c->n_align = PACK_I8_N_ALIGN;
}

int ork_orkpack_source_of(const char *gguf_path, uint64_t data_offset, struct ork_orkpack_source *out)
{
    int fd = open(gguf_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ork_errorf(ORK_EIO, "%s: %s", gguf_path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0 || (uint64_t)st.st_size < data_offset) {
        close(fd);
        return ork_errorf(ORK_EIO, "%s: cannot stat or shorter than its header", gguf_path);
    }
    out->size = (uint64_t)st.st_size;
    out->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    out->meta_hash = 0;
    if (data_offset) {
        void *p = mmap(NULL, data_offset, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            close(fd);
            return ork_errorf(ORK_EIO, "%s: mmap: %s", gguf_path, strerror(errno));
        }
        out->meta_hash = hash_bytes(p, data_offset);
        munmap(p, data_offset);
    }
    close(fd);
    return 0;
}

int ork_orkpack_path_for(const char *gguf_path, char *buf, uint64_t cap)
{
    size_t n = strlen(gguf_path);
    if (n >= 5 && !strcmp(gguf_path + n - 5, ".gguf"))
        n -= 5;
    int len = snprintf(buf, cap, "%.*s.orkpack", (int)n, gguf_path);
    if (len < 0 || (uint64_t)len >= cap)
        return ork_errorf(ORK_ENOSPC, "orkpack path for '%s' is too long", gguf_path);
    return 0;
}

/* ---- writer ------------------------------------------------------------------------------ */

struct ork_orkpack_writer {
    char *path, *tmp;
    FILE *f;
    uint8_t header[PACK_HEADER_BYTES];
    uint8_t *table;                     /* (n_tensors, PACK_ENTRY_BYTES) */
    uint32_t n_tensors, n_added;
    uint64_t pos;                       /* file offset of the next byte */
};

static int w_pad_to(struct ork_orkpack_writer *w, uint64_t off)
{
    static const uint8_t zeros[PACK_DATA_ALIGN];
    while (w->pos < off) {
        uint64_t k = off - w->pos < sizeof zeros ? off - w->pos : sizeof zeros;
        if (fwrite(zeros, 1, k, w->f) != k)
            return ork_errorf(ORK_EIO, "%s: write: %s", w->tmp, strerror(errno));
        w->pos += k;
    }
    return 0;
}

static int w_write(struct ork_orkpack_writer *w, const void *p, uint64_t n)
{
    if (n && fwrite(p, 1, n, w->f) != n)
        return ork_errorf(ORK_EIO, "%s: write: %s", w->tmp, strerror(errno));
    w->pos += n;
    return 0;
}

int ork_orkpack_writer_open(const char *path, const struct ork_orkpack_source *src,
                            const struct ork_orkpack_caps *caps, uint32_t n_tensors,
                            struct ork_orkpack_writer **out)
{
    struct ork_orkpack_writer *w = ork_calloc(1, sizeof(*w));
    if (!w)
        return ORK_ENOMEM;
    size_t plen = strlen(path) + 32;
    w->path = ork_strdup(path);
    w->tmp = ork_malloc(plen);
    w->table = ork_calloc(n_tensors ? n_tensors : 1, PACK_ENTRY_BYTES);
    if (!w->path || !w->tmp || !w->table) {
        ork_orkpack_writer_abort(w);
        return ORK_ENOMEM;
    }
    snprintf(w->tmp, plen, "%s.tmp.%ld", path, (long)getpid());
    w->f = fopen(w->tmp, "wb");
    if (!w->f) {
        int ret = ork_errorf(ORK_EIO, "cannot create '%s': %s", w->tmp, strerror(errno));
        ork_orkpack_writer_abort(w);
        return ret;
    }
    w->n_tensors = n_tensors;
    uint8_t *h = w->header;
    memcpy(h + H_MAGIC, PACK_MAGIC, 8);
    put32(h + H_VERSION, ORK_ORKPACK_VERSION);
    put32(h + H_HEADER_BYTES, PACK_HEADER_BYTES);
    put32(h + H_SOC, caps->soc);
    put32(h + H_LAYOUT, caps->layout);
    put32(h + H_KALIGN, caps->k_align);
    put32(h + H_NALIGN, caps->n_align);
    put32(h + H_MAX_M, caps->npu_max_m);
    put32(h + H_W_ENC, caps->w_encoding);
    put32(h + H_W_LEVELS, caps->w_levels);
    put32(h + H_W_FLAGS, caps->w_flags);
    putf(h + H_W_MAX_ERR, caps->w_max_rel_rmse);
    put32(h + H_W_ROTATION, caps->w_rotation);
    put32(h + H_W_INT8, caps->w_int8);
    put64(h + H_SRC_SIZE, src->size);
    put64(h + H_SRC_MTIME, (uint64_t)src->mtime_ns);
    put64(h + H_SRC_HASH, src->meta_hash);
    put32(h + H_NTENSORS, n_tensors);
    put64(h + H_TABLE_OFF, PACK_HEADER_BYTES);
    /* Header and table are written at commit; reserve their space now. */
    uint64_t data0 = align_up(PACK_HEADER_BYTES + (uint64_t)n_tensors * PACK_ENTRY_BYTES,
                              PACK_DATA_ALIGN);
    int ret = w_pad_to(w, data0);
    if (ret < 0) {
        ork_orkpack_writer_abort(w);
        return ret;
    }
    *out = w;
    return 0;
}

int ork_orkpack_writer_add(struct ork_orkpack_writer *w, const char *name, uint32_t n, uint32_t k,
                           const int8_t *q, const float *scales)
{
    return ork_orkpack_writer_add_bytes(w, name, n, k, q, (uint64_t)n * k, scales);
}

int ork_orkpack_writer_add_bytes(struct ork_orkpack_writer *w, const char *name, uint32_t n,
                                 uint32_t k, const void *q, uint64_t q_bytes, const float *scales)
{
    const struct ork_orkpack_coding raw = { .encoding = ORK_ORKPACK_ENC_RAW,
                                            .grid = PACK_GRID_MAX };
    return ork_orkpack_writer_add_coded(w, name, n, k, q, q_bytes, scales, &raw);
}

int ork_orkpack_writer_add_coded(struct ork_orkpack_writer *w, const char *name, uint32_t n,
                                 uint32_t k, const void *q, uint64_t q_bytes, const float *scales,
                                 const struct ork_orkpack_coding *c)
{
    if (c->encoding > ORK_ORKPACK_ENC_W4A8 || c->grid < 1 || c->grid > PACK_GRID_MAX)
        return ork_errorf(ORK_EINVAL, "orkpack: tensor '%s': encoding %u / grid %u (must be "
                          "0, 1 or 2 / 1..%u)", name, c->encoding, c->grid, PACK_GRID_MAX);
    if (w->n_added >= w->n_tensors)
        return ork_errorf(ORK_EINVAL, "orkpack: more than the %u announced tensors", w->n_tensors);
    if (strlen(name) >= ORK_ORKPACK_NAME_MAX)
        return ork_errorf(ORK_EINVAL, "orkpack: tensor name '%s' is too long", name);
    int ret;
    uint64_t q_off = align_up(w->pos, PACK_DATA_ALIGN);
    if ((ret = w_pad_to(w, q_off)) < 0 || (ret = w_write(w, q, q_bytes)) < 0)
        return ret;
    uint64_t s_off = align_up(w->pos, PACK_SCALES_ALIGN);
    if ((ret = w_pad_to(w, s_off)) < 0 || (ret = w_write(w, scales, (uint64_t)n * 4)) < 0)
        return ret;
    struct hasher hs;
    if ((ret = hasher_init(&hs)) < 0)
        return ret;
    hasher_update(&hs, q, q_bytes);
    hasher_update(&hs, scales, (size_t)n * 4);
    uint8_t *e = w->table + (size_t)w->n_added * PACK_ENTRY_BYTES;
    strncpy((char *)e + E_NAME, name, ORK_ORKPACK_NAME_MAX - 1);
    put32(e + E_N, n);
    put32(e + E_K, k);
    put64(e + E_Q_OFF, q_off);
    put64(e + E_S_OFF, s_off);
    put64(e + E_SUM, hasher_done(&hs));
    put64(e + E_Q_BYTES, q_bytes);
    put32(e + E_ENC, c->encoding);
    put32(e + E_GRID, c->grid);
    putf(e + E_REL_RMSE, c->rel_rmse);
    w->n_added++;
    return 0;
}

int ork_orkpack_writer_commit(struct ork_orkpack_writer *w)
{
    int ret = 0;
    if (w->n_added != w->n_tensors) {
        ret = ork_errorf(ORK_EINVAL, "orkpack: %u of %u tensors written", w->n_added,
                         w->n_tensors);
        goto out;
    }
    uint64_t total = align_up(w->pos, PACK_SCALES_ALIGN);
    if ((ret = w_pad_to(w, total)) < 0)
        goto out;
    put64(w->header + H_FILE_BYTES, total);
    struct hasher hs;
    if ((ret = hasher_init(&hs)) < 0)
        goto out;
    hasher_update(&hs, w->header, PACK_HEADER_BYTES);
    hasher_update(&hs, w->table, (size_t)w->n_tensors * PACK_ENTRY_BYTES);
    put64(w->header + H_CHECKSUM, hasher_done(&hs));
    if (fseek(w->f, 0, SEEK_SET) != 0 ||
        fwrite(w->header, 1, PACK_HEADER_BYTES, w->f) != PACK_HEADER_BYTES ||
        fwrite(w->table, PACK_ENTRY_BYTES, w->n_tensors, w->f) != w->n_tensors ||
        fflush(w->f) != 0 || fsync(fileno(w->f)) != 0) {
        ret = ork_errorf(ORK_EIO, "%s: write: %s", w->tmp, strerror(errno));
        goto out;
    }
    if (fclose(w->f) != 0) {
        w->f = NULL;
        ret = ork_errorf(ORK_EIO, "%s: close: %s", w->tmp, strerror(errno));
        goto out;
    }
    w->f = NULL;
    if (rename(w->tmp, w->path) != 0) {
        ret = ork_errorf(ORK_EIO, "cannot rename '%s' to '%s': %s", w->tmp, w->path,
                         strerror(errno));
        goto out;
    }
    ork_free(w->tmp);
    w->tmp = NULL;
out:
    ork_orkpack_writer_abort(w);
    return ret;
}

void ork_orkpack_writer_abort(struct ork_orkpack_writer *w)
{
    if (!w)
        return;
    if (w->f)
        fclose(w->f);
    if (w->tmp)
        unlink(w->tmp);
    ork_free(w->tmp);
    ork_free(w->path);
    ork_free(w->table);
    ork_free(w);
}

/* ---- reader ------------------------------------------------------------------------------ */

struct ork_orkpack {
    const uint8_t *base;
    size_t size;
    uint32_t n_tensors;
    const uint8_t *table;
};

static int fail(enum ork_orkpack_problem *why, enum ork_orkpack_problem p, int code,
                const char *path, const char *detail)
{
    if (why)
        *why = p;
    return ork_errorf(code, "orkpack '%s' is %s: %s", path, ork_orkpack_problem_name(p), detail);
}

/* What an older pack lacks, for the rebuild message (orkpack.h, ORK_ORKPACK_VERSION). */
static const char *version_note(uint32_t ver)
{
    switch (ver) {
    case 1: return " (int8 rows, not tiled for the NPU)";
    case 2: return " (one O projection; version 3 stores it as two halves by attention heads "
                   "for the decode overlap)";
    case 3: return " (raw int8 only; version 4 records the --npu-weights setting and each "
                   "tensor's encoding and grid)";
    case 4: return " (no rotation of K and no w4a8 tensors; version 5 records the weights' "
                   "rotation and stores w4a8)";
    default: return "";
    }
}

/* A pack's --npu-weights setting in words: "int8", "dcomp:31", "dcomp (rel-RMSE <= 0.03)",
 * "w4a8", with its flags (ORK_NPU_WENC_* of ork-engine/engine.h) but the rotation's in hex
 * when set, then ", rotated (R<id>)" for a rotation of K. */
static void weights_words(char *buf, size_t cap, uint32_t enc, uint32_t levels, uint32_t flags,
                          float max_err, uint32_t rotation, uint32_t int8)
{
    char fl[96] = "";
    int at = 0;
    flags &= ~(uint32_t)ORK_NPU_WENC_ROTATE;
    if (flags)
        at = snprintf(fl, sizeof fl, ", flags 0x%x", flags);
    if (rotation && at >= 0 && (size_t)at < sizeof fl)
        at += snprintf(fl + at, sizeof fl - (size_t)at, ", rotated (R%u)", rotation);
    if (int8 && at >= 0 && (size_t)at < sizeof fl)
        snprintf(fl + at, sizeof fl - (size_t)at, ", int8 tensors %08x", int8);
    if (enc == 0)
        snprintf(buf, cap, "int8%s", fl);
    else if (enc == 1 && levels)
        snprintf(buf, cap, "dcomp:%u%s", levels, fl);
    else if (enc == 1)
        snprintf(buf, cap, "dcomp (rel-RMSE <= %g%s)", (double)max_err, fl);
    else if (enc == 2)
        snprintf(buf, cap, "w4a8%s", fl);
    else
        snprintf(buf, cap, "encoding %u", enc);
}

static int check_pack(const char *path, const uint8_t *b, uint64_t size,
                      const struct ork_orkpack_source *expect, const struct ork_orkpack_caps *caps,
                      enum ork_orkpack_problem *why)
{
    char msg[384];
    if (size < PACK_HEADER_BYTES)
        return fail(why, size >= 8 && memcmp(b, PACK_MAGIC, 8) ? ORK_ORKPACK_BAD_MAGIC
                    : ORK_ORKPACK_TRUNCATED, ORK_EFORMAT, path, "shorter than its header");
    if (memcmp(b + H_MAGIC, PACK_MAGIC, 8))
        return fail(why, ORK_ORKPACK_BAD_MAGIC, ORK_EFORMAT, path, "bad magic");
    uint32_t ver = get32(b + H_VERSION);
    if (ver != ORK_ORKPACK_VERSION) {
        snprintf(msg, sizeof msg, "format version %u%s, this build reads version %u", ver,
                 version_note(ver), ORK_ORKPACK_VERSION);
        return fail(why, ORK_ORKPACK_WRONG_VERSION, ORK_ESTALE, path, msg);
    }
    uint32_t n = get32(b + H_NTENSORS);
    uint64_t table_off = get64(b + H_TABLE_OFF), file_bytes = get64(b + H_FILE_BYTES);
    if (get32(b + H_HEADER_BYTES) != PACK_HEADER_BYTES || table_off != PACK_HEADER_BYTES ||
        n > (1u << 20))
        return fail(why, ORK_ORKPACK_CORRUPT, ORK_EFORMAT, path, "header fields out of range");
    if (file_bytes > size || table_off + (uint64_t)n * PACK_ENTRY_BYTES > size) {
        snprintf(msg, sizeof msg, "%llu bytes, the header says %llu", (unsigned long long)size,
                 (unsigned long long)file_bytes);
        return fail(why, ORK_ORKPACK_TRUNCATED, ORK_EFORMAT, path, msg);
    }
    uint8_t hdr[PACK_HEADER_BYTES];
    memcpy(hdr, b, PACK_HEADER_BYTES);
    put64(hdr + H_CHECKSUM, 0);
    struct hasher hs;
    int ret = hasher_init(&hs);
    if (ret < 0)
        return ret;
    hasher_update(&hs, hdr, PACK_HEADER_BYTES);
    hasher_update(&hs, b + table_off, (size_t)n * PACK_ENTRY_BYTES);
    if (hasher_done(&hs) != get64(b + H_CHECKSUM))
        return fail(why, ORK_ORKPACK_CORRUPT, ORK_EFORMAT, path,
                    "header or tensor table checksum mismatch");
    if (caps && (get32(b + H_SOC) != caps->soc || get32(b + H_LAYOUT) != caps->layout ||
                 get32(b + H_KALIGN) != caps->k_align || get32(b + H_NALIGN) != caps->n_align)) {
        snprintf(msg, sizeof msg, "built for SoC 0x%x layout %u (K%%%u, N%%%u), this device "
                 "wants SoC 0x%x layout %u (K%%%u, N%%%u)", get32(b + H_SOC),
                 get32(b + H_LAYOUT), get32(b + H_KALIGN), get32(b + H_NALIGN), caps->soc,
                 caps->layout, caps->k_align, caps->n_align);
        return fail(why, ORK_ORKPACK_FOREIGN, ORK_ESTALE, path, msg);
    }
    if (caps && get32(b + H_MAX_M) != caps->npu_max_m) {
        snprintf(msg, sizeof msg, "tiled for NPU plans of max_m %u, this executor uses max_m %u",
                 get32(b + H_MAX_M), caps->npu_max_m);
        return fail(why, ORK_ORKPACK_OTHER_PLAN, ORK_ESTALE, path, msg);
    }
    if (caps && (get32(b + H_W_ENC) != caps->w_encoding ||
                 get32(b + H_W_LEVELS) != caps->w_levels ||
                 get32(b + H_W_FLAGS) != caps->w_flags ||
                 getf(b + H_W_MAX_ERR) != caps->w_max_rel_rmse ||
                 get32(b + H_W_ROTATION) != caps->w_rotation ||
                 get32(b + H_W_INT8) != caps->w_int8)) {
        char had[144], want[144];
        weights_words(had, sizeof had, get32(b + H_W_ENC), get32(b + H_W_LEVELS),
                      get32(b + H_W_FLAGS), getf(b + H_W_MAX_ERR), get32(b + H_W_ROTATION),
                      get32(b + H_W_INT8));
        weights_words(want, sizeof want, caps->w_encoding, caps->w_levels, caps->w_flags,
                      caps->w_max_rel_rmse, caps->w_rotation, caps->w_int8);
        snprintf(msg, sizeof msg, "built with --npu-weights %s, this run wants %s", had, want);
        return fail(why, ORK_ORKPACK_OTHER_WEIGHTS, ORK_ESTALE, path, msg);
    }
    if (expect && (get64(b + H_SRC_SIZE) != expect->size ||
                   (int64_t)get64(b + H_SRC_MTIME) != expect->mtime_ns ||
                   get64(b + H_SRC_HASH) != expect->meta_hash)) {
        snprintf(msg, sizeof msg, "built from a model of %llu bytes (mtime %lld, metadata hash "
                 "%016llx); the model now has %llu bytes (mtime %lld, hash %016llx)",
                 (unsigned long long)get64(b + H_SRC_SIZE), (long long)get64(b + H_SRC_MTIME),
                 (unsigned long long)get64(b + H_SRC_HASH), (unsigned long long)expect->size,
                 (long long)expect->mtime_ns, (unsigned long long)expect->meta_hash);
        return fail(why, ORK_ORKPACK_STALE, ORK_ESTALE, path, msg);
    }
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *e = b + table_off + (size_t)i * PACK_ENTRY_BYTES;
        uint64_t tn = get32(e + E_N), tk = get32(e + E_K);
        uint64_t qo = get64(e + E_Q_OFF), so = get64(e + E_S_OFF), qb = get64(e + E_Q_BYTES);
        uint32_t enc = get32(e + E_ENC), grid = get32(e + E_GRID);
        (void)tk;
        if (enc > ORK_ORKPACK_ENC_W4A8 || grid < 1 || grid > PACK_GRID_MAX) {
            snprintf(msg, sizeof msg, "tensor %u has encoding %u / grid %u (known: 0 raw, 1 "
                     "dcomp, 2 w4a8 / 1..%u)", i, enc, grid, PACK_GRID_MAX);
            return fail(why, ORK_ORKPACK_CORRUPT, ORK_EFORMAT, path, msg);
        }
        if (e[E_NAME + ORK_ORKPACK_NAME_MAX - 1] != 0 || qo > size || qb > size - qo ||
            so > size || tn * 4 > size - so) {
            snprintf(msg, sizeof msg, "tensor %u lies outside the file", i);
            return fail(why, ORK_ORKPACK_TRUNCATED, ORK_EFORMAT, path, msg);
        }
        if ((ret = hasher_init(&hs)) < 0)
            return ret;
        hasher_update(&hs, b + qo, qb);
        hasher_update(&hs, b + so, tn * 4);
        if (hasher_done(&hs) != get64(e + E_SUM)) {
            snprintf(msg, sizeof msg, "tensor '%s' checksum mismatch", (const char *)e + E_NAME);
            return fail(why, ORK_ORKPACK_CORRUPT, ORK_EFORMAT, path, msg);
        }
    }
    if (why)
        *why = ORK_ORKPACK_OK;
    return 0;
}

int ork_orkpack_open(const char *path, const struct ork_orkpack_source *expect,
                     const struct ork_orkpack_caps *caps, struct ork_orkpack **out,
                     enum ork_orkpack_problem *why)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return fail(why, ORK_ORKPACK_MISSING, ORK_ENOENT, path, "no such file");
        return ork_errorf(ORK_EIO, "orkpack '%s': %s", path, strerror(errno));
    }
    struct stat st;
    if (fstat(fd, &st) < 0) {
        close(fd);
        return ork_errorf(ORK_EIO, "orkpack '%s': %s", path, strerror(errno));
    }
    size_t size = (size_t)st.st_size;
    const uint8_t *b = NULL;
    if (size) {
        void *p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) {
            close(fd);
            return ork_errorf(ORK_EIO, "orkpack '%s': mmap: %s", path, strerror(errno));
        }
        b = p;
    }
    close(fd);
    static const uint8_t empty[PACK_HEADER_BYTES];
    int ret = check_pack(path, b ? b : empty, size, expect, caps, why);
    if (ret < 0) {
        if (b)
            munmap((void *)b, size);
        return ret;
    }
    struct ork_orkpack *pk = ork_calloc(1, sizeof(*pk));
    if (!pk) {
        munmap((void *)b, size);
        return ORK_ENOMEM;
    }
    pk->base = b;
    pk->size = size;
    pk->n_tensors = get32(b + H_NTENSORS);
    pk->table = b + PACK_HEADER_BYTES;
    *out = pk;
    return 0;
}

void ork_orkpack_close(struct ork_orkpack *p)
{
    if (!p)
        return;
    munmap((void *)p->base, p->size);
    ork_free(p);
}

uint32_t ork_orkpack_n_tensors(const struct ork_orkpack *p)
{
    return p->n_tensors;
}

int ork_orkpack_tensor_at(const struct ork_orkpack *p, uint32_t i, struct ork_orkpack_tensor *out)
{
    if (i >= p->n_tensors)
        return ork_errorf(ORK_ERANGE, "orkpack tensor %u of %u", i, p->n_tensors);
    const uint8_t *e = p->table + (size_t)i * PACK_ENTRY_BYTES;
    out->name = (const char *)e + E_NAME;
    out->n = get32(e + E_N);
    out->k = get32(e + E_K);
    out->q = (const int8_t *)(p->base + get64(e + E_Q_OFF));
    out->q_bytes = get64(e + E_Q_BYTES);
    out->scales = (const float *)(const void *)(p->base + get64(e + E_S_OFF));
    out->coding.encoding = get32(e + E_ENC);
    out->coding.grid = get32(e + E_GRID);
    out->coding.rel_rmse = getf(e + E_REL_RMSE);
    return 0;
}

int ork_orkpack_tensor_find(const struct ork_orkpack *p, const char *name,
                            struct ork_orkpack_tensor *out)
{
    for (uint32_t i = 0; i < p->n_tensors; i++) {
        const uint8_t *e = p->table + (size_t)i * PACK_ENTRY_BYTES;
        if (!strcmp((const char *)e + E_NAME, name))
            return ork_orkpack_tensor_at(p, i, out);
    }
    return ork_errorf(ORK_ENOENT, "orkpack: no tensor '%s'", name);
}
