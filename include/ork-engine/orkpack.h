/* ork-engine/orkpack.h -- the .orkpack file: NPU-ready weights stored beside a GGUF model
 * (MODEL.orkpack), so that the int8 per-output-channel quantisation of every NPU matmul is done
 * once, not at every load. Format: docs/orkpack.md.
 *
 * A pack is a header (format version, the SoC capabilities the layout assumed, the identity of
 * the source model: size, mtime and an XXH3 hash of its header and metadata), a tensor table
 * and, per tensor, its encoding (raw NPU-tiled int8, libork's DCOMP blob of compressed
 * streams, docs/dcomp.md, or libork's W4A8 int4 weights, docs/w4a8.md) and grid, the weights' bytes as ork_npu_weights_export gives them for
 * the recorded npu_max_m plus n float scales, each tensor with an XXH3_64bits checksum. The
 * header records the --npu-weights setting the pack was built with (its rotation included). Packs are written to a temporary file and renamed into place, so an interrupted
 * build never leaves a file that loads. Opening checks everything and says what is wrong
 * (missing / stale / foreign SoC / wrong version / truncated / corrupt), so the caller can
 * explain and rebuild.
 *
 * This module is file format only: which tensors go in a pack and how they are computed is the
 * NPU backend's business (src/engine/npu/). Errors are ORK_E* codes with a message. */
#ifndef ORK_ENGINE_ORKPACK_H
#define ORK_ENGINE_ORKPACK_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ORK_ORKPACK_VERSION 5u          /* 2: NPU-tiled weights, npu_max_m in the header;
                                         * 3: the layer plan's tensors by name (the O
                                         * projection whole; packs holding it as halves by
                                         * heads, .a / .b, are stale and rebuilt:
                                         * docs/orkpack.md); 4: the weights' setting in the
                                         * header, each tensor's encoding and grid; 5: the
                                         * weights' rotation of K in the header, w4a8 tensors */
#define ORK_ORKPACK_NAME_MAX 48         /* tensor names, NUL included */

/* Identity of the source GGUF: a pack built from other bytes is stale. */
struct ork_orkpack_source {
    uint64_t size;                      /* file size in bytes */
    int64_t mtime_ns;                   /* modification time */
    uint64_t meta_hash;                 /* XXH3_64bits of bytes [0, tensor data offset) */
};

/* What a pack's layout assumed about the device (a pack made for other caps is foreign). */
struct ork_orkpack_caps {
    uint32_t soc;                       /* 0x3588 */
    uint32_t layout;                    /* ORK_ORKPACK_LAYOUT_* */
    uint32_t k_align, n_align;          /* hardware K and N multiples (int8: 32, 32) */
    uint32_t npu_max_m;                 /* prefill rows of the plans the tiling was made for
                                         * (it decides the K-slicing); another value: rebuild */
    /* The NPU weights' setting it was built with (ork_npu_weights_opts, normalised: all 0 for
     * int8); another setting: ORK_ORKPACK_OTHER_WEIGHTS, rebuilt. */
    uint32_t w_encoding, w_levels, w_flags;
    float w_max_rel_rmse;
    uint32_t w_rotation;                /* the rotation of K the weights were made with (0:
                                         * none; src/engine/npu/rotate.c's identity, bumped when
                                         * the transform changes): another one is
                                         * ORK_ORKPACK_OTHER_WEIGHTS */
    uint32_t w_int8;                    /* the tensors kept int8 (--npu-weights-int8): an
                                         * identity of the list (src/engine/npu/
                                         * weights_keep.c), 0: none (header bytes 104-107,
                                         * zero in packs made before the option) */
};

enum ork_orkpack_layout {
    ORK_ORKPACK_LAYOUT_I8_ROWS = 1,     /* int8 W[n][k] row-major + float scales[n] (v1) */
    ORK_ORKPACK_LAYOUT_NPU_TILED = 2,   /* the bytes ork_npu_weights_export gives + scales[n] */
};

/* Why a pack could not be used (for messages and tests). */
enum ork_orkpack_problem {
    ORK_ORKPACK_OK = 0,
    ORK_ORKPACK_MISSING,                /* no file */
    ORK_ORKPACK_TRUNCATED,              /* shorter than its header/table say */
    ORK_ORKPACK_BAD_MAGIC,              /* not a pack */
    ORK_ORKPACK_WRONG_VERSION,          /* another format version */
    ORK_ORKPACK_FOREIGN,                /* built for other SoC caps */
    ORK_ORKPACK_STALE,                  /* built from another model file */
    ORK_ORKPACK_CORRUPT,                /* a checksum does not match */
    ORK_ORKPACK_OTHER_PLAN,             /* tiled for another npu_max_m */
    ORK_ORKPACK_OTHER_WEIGHTS,          /* built with another --npu-weights setting */
};

/* A tensor's encoding (the value of libork's ork_npu_weights_desc.encoding). */
enum ork_orkpack_encoding {
    ORK_ORKPACK_ENC_RAW = 0,            /* NPU-tiled int8 */
    ORK_ORKPACK_ENC_DCOMP = 1,          /* libork's DCOMP blob (opaque here) */
    ORK_ORKPACK_ENC_W4A8 = 2,           /* libork's W4A8 weights as exported (opaque here) */
};
/* How one tensor's codes were made. */
struct ork_orkpack_coding {
    uint32_t encoding;                  /* ORK_ORKPACK_ENC_* */
    uint32_t grid;                      /* the codes' bound L (1..127; 127 for int8) */
    float rel_rmse;                     /* measured against the source weights (0: not) */
};
const char *ork_orkpack_problem_name(enum ork_orkpack_problem p);

/* The default caps of this build (RK3588, NPU-tiled int8; npu_max_m 0: the caller sets it). */
void ork_orkpack_caps_default(struct ork_orkpack_caps *c);
/* Identity of a GGUF file (stat + hash of its first data_offset bytes, which the caller reads
 * from the GGUF header). */
int ork_orkpack_source_of(const char *gguf_path, uint64_t data_offset, struct ork_orkpack_source *out);
/* "MODEL.gguf" -> "MODEL.orkpack" (the .gguf suffix replaced, else appended). */
int ork_orkpack_path_for(const char *gguf_path, char *buf, uint64_t cap);

/* ---- writing ----------------------------------------------------------------------------- */

struct ork_orkpack_writer;

/* Start a pack of n_tensors tensors at path (written to "path.tmp.PID" until commit). */
int ork_orkpack_writer_open(const char *path, const struct ork_orkpack_source *src,
                            const struct ork_orkpack_caps *caps, uint32_t n_tensors,
                            struct ork_orkpack_writer **out);
/* Append the next tensor: q int8 [n][k], scales [n]. */
int ork_orkpack_writer_add(struct ork_orkpack_writer *w, const char *name, uint32_t n, uint32_t k,
                           const int8_t *q, const float *scales);
/* Append the next tensor as bytes bytes of data (the tiled layout of ork_npu_weights_export;
 * 0 bytes: a tensor the NPU cannot take) and scales [n]: raw int8 on the 127 grid. */
int ork_orkpack_writer_add_bytes(struct ork_orkpack_writer *w, const char *name, uint32_t n,
                                 uint32_t k, const void *data, uint64_t bytes,
                                 const float *scales);
/* The same with the tensor's coding (encoding ORK_ORKPACK_ENC_RAW, _DCOMP or _W4A8, grid
 * 1..127). */
int ork_orkpack_writer_add_coded(struct ork_orkpack_writer *w, const char *name, uint32_t n,
                                 uint32_t k, const void *data, uint64_t bytes,
                                 const float *scales, const struct ork_orkpack_coding *c);
/* Write the table and header, fsync, rename into place; frees w. */
int ork_orkpack_writer_commit(struct ork_orkpack_writer *w);
/* Remove the temporary file; frees w (NULL is fine). */
void ork_orkpack_writer_abort(struct ork_orkpack_writer *w);

/* ---- reading ----------------------------------------------------------------------------- */

struct ork_orkpack;

struct ork_orkpack_tensor {
    const char *name;
    uint32_t n, k;
    const int8_t *q;                    /* q_bytes of data inside the mapping (page-aligned) */
    uint64_t q_bytes;                   /* tiled bytes (or n * k for row data) */
    const float *scales;                /* (n) */
    struct ork_orkpack_coding coding;   /* encoding of q, its grid */
};

/* Map and validate a pack against the expected source and caps (either may be NULL: not
 * checked); every tensor checksum is verified. On failure returns a negative code with a
 * message, and *why (if not NULL) says which problem it was. */
int ork_orkpack_open(const char *path, const struct ork_orkpack_source *expect,
                     const struct ork_orkpack_caps *caps, struct ork_orkpack **out,
                     enum ork_orkpack_problem *why);
void ork_orkpack_close(struct ork_orkpack *p);
uint32_t ork_orkpack_n_tensors(const struct ork_orkpack *p);
int ork_orkpack_tensor_at(const struct ork_orkpack *p, uint32_t i, struct ork_orkpack_tensor *out);
/* ORK_ENOENT when absent. */
int ork_orkpack_tensor_find(const struct ork_orkpack *p, const char *name,
                            struct ork_orkpack_tensor *out);

/* ---- packs of models (src/engine/npu/pack_build.c) -------------------------------------- */

struct ork_npu_weights_opts;            /* ork-engine/engine.h: NULL = int8 */

/* Make sure the pack of a GGUF model (at pack_path, NULL: MODEL.orkpack beside it) is valid:
 * open and check it, and build it when it is missing, stale, foreign, of another version,
 * corrupt, tiled for another max_m or built for another weights setting wo (NULL: int8; a bad
 * setting is ORK_EINVAL, a DCOMP one on a device without the capability ORK_EUNSUPPORTED), or
 * always with force. *found (optional) says what was found before any rebuild
 * (ORK_ORKPACK_OK: it was valid and was kept). quiet: no progress bar. capabilities: a board's
 * capability record (ork_npu_opts.capabilities, `ork selftest --confirm-forms`), which a DCOMP
 * setting needs on a board; NULL = none. */
int ork_orkpack_build_for_model(const char *model_path, const char *pack_path,
                                const struct ork_npu_weights_opts *wo, const char *capabilities,
                                bool force, bool quiet, enum ork_orkpack_problem *found);
/* Check only (nothing built): 0 when the pack of the model is valid for the weights setting
 * wo (NULL: int8), else the open error. */
int ork_orkpack_check_for_model(const char *model_path, const char *pack_path,
                                const struct ork_npu_weights_opts *wo);

#ifdef __cplusplus
}
#endif
#endif
