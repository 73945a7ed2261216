/* ork-engine/gguf_write.h -- streaming GGUF v3 writer.
 *
 * Usage: create, add metadata (any order), declare every tensor (name, shape, type), then
 * stream the tensor bytes in declaration order with ork_gguf_writer_write (any chunk sizes;
 * the writer pads each tensor to the alignment), and finish. Metadata and the tensor table are
 * held in memory until the first data byte (they are written once, in front); tensor data never
 * is: it goes to the file through one large buffer, so files far larger than RAM can be written.
 *
 * Values use the reader's struct ork_gguf_value, so a key read from one file (e.g. every
 * tokenizer.* key) can be copied into another with ork_gguf_writer_add_value. Numeric arrays
 * are packed little-endian (the reader's `raw` layout); the host must be little-endian.
 *
 * Not here: choosing tensor contents or quantizing (see synth.h), reading (gguf.h). */
#ifndef ORK_ENGINE_GGUF_WRITE_H
#define ORK_ENGINE_GGUF_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ork-engine/gguf.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ork_gguf_writer;

/* Create (truncate) path. alignment: power of two, 0 = ORK_GGUF_DEFAULT_ALIGNMENT; a
 * non-default alignment is also recorded as general.alignment. ORK_EIO, ORK_EINVAL, ORK_ENOMEM. */
int ork_gguf_writer_create(const char *path, uint32_t alignment, struct ork_gguf_writer **out);
/* Close the file. When ork_gguf_writer_finish has not succeeded the partial file is removed. */
void ork_gguf_writer_free(struct ork_gguf_writer *w);

/* Metadata (only before the first ork_gguf_writer_write). Duplicate keys: ORK_EINVAL. */
int ork_gguf_writer_add_value(struct ork_gguf_writer *w, const char *key,
                              const struct ork_gguf_value *v);
int ork_gguf_writer_add_str(struct ork_gguf_writer *w, const char *key, const char *s);
int ork_gguf_writer_add_u32(struct ork_gguf_writer *w, const char *key, uint32_t v);
int ork_gguf_writer_add_i32(struct ork_gguf_writer *w, const char *key, int32_t v);
int ork_gguf_writer_add_u64(struct ork_gguf_writer *w, const char *key, uint64_t v);
int ork_gguf_writer_add_f32(struct ork_gguf_writer *w, const char *key, float v);
int ork_gguf_writer_add_bool(struct ork_gguf_writer *w, const char *key, bool v);
/* Numeric array: n elements of `type` packed little-endian at data. */
int ork_gguf_writer_add_arr(struct ork_gguf_writer *w, const char *key, enum ork_gguf_type type,
                            const void *data, uint64_t n);
/* String array of n NUL-terminated strings. */
int ork_gguf_writer_add_arr_str(struct ork_gguf_writer *w, const char *key,
                                const char *const *strs, uint64_t n);

/* Declare a tensor (ne[0] = row length; n_dims 1..4). Its size comes from the type traits
 * (ORK_EINVAL if ne[0] is not a multiple of the type's block). */
int ork_gguf_writer_add_tensor(struct ork_gguf_writer *w, const char *name, uint32_t n_dims,
                               const uint64_t *ne, uint32_t type);
/* Bytes of declared tensor i (0 .. n-1), or 0 when out of range. */
uint64_t ork_gguf_writer_tensor_bytes(const struct ork_gguf_writer *w, uint64_t i);

/* Append tensor data, in declaration order. The first call writes the header, metadata and
 * tensor table. Writing past the last tensor: ORK_EINVAL. */
int ork_gguf_writer_write(struct ork_gguf_writer *w, const void *data, size_t n);
/* Check every declared byte was written, flush and close. ORK_EINVAL (names the short tensor),
 * ORK_EIO. Writes the header when no tensor was declared. */
int ork_gguf_writer_finish(struct ork_gguf_writer *w);
/* Total file bytes written so far (after finish: the file size). */
uint64_t ork_gguf_writer_bytes(const struct ork_gguf_writer *w);

#ifdef __cplusplus
}
#endif
#endif
