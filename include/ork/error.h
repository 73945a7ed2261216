/* ork/error.h -- error codes shared by every ork layer.
 *
 * Fallible calls return 0 (or a non-negative count) on success and a negative ORK_E* code on
 * failure. The code says what kind of failure; the message says exactly what was wrong (which
 * field, which tensor, which register). ork_errorf() records that message in a thread-local
 * buffer and returns the code, so a failing path reads:
 *
 *     if (n_dims > ORK_GGUF_MAX_DIMS)
 *         return ork_errorf(ORK_EFORMAT, "tensor '%s': n_dims %u > %d", name, n_dims, 4);
 *
 * and the caller prints ork_error_message() (falls back to ork_strerror(code) when empty).
 * The library never exits or aborts; only the CLI turns an error into an exit status. */
#ifndef ORK_ERROR_H
#define ORK_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/* X(name, value, description) -- the one table of error codes. */
#define ORK_ERRNO_MAP(X)                                                        \
    X(EINVAL,       -1,  "invalid argument")                                    \
    X(ENOMEM,       -2,  "out of memory")                                       \
    X(EIO,          -3,  "input/output error")                                  \
    X(EFORMAT,      -4,  "malformed or corrupt data")                           \
    X(EUNSUPPORTED, -5,  "not supported")                                       \
    X(ERANGE,       -6,  "value out of range")                                  \
    X(ENOENT,       -7,  "not found")                                           \
    X(ETIMEDOUT,    -8,  "timed out")                                           \
    X(EDEVICE,      -9,  "device error")                                        \
    X(EHAZARD,      -10, "program violates a hardware constraint")              \
    X(EBUSY,        -11, "busy")                                                \
    X(ECANCELED,    -12, "canceled")                                            \
    X(ECONTEXT,     -13, "context length exceeded")                             \
    X(ENOSPC,       -14, "buffer too small")                                    \
    X(ESTALE,       -15, "stale or foreign data")                               \
    X(EFAULT,       -16, "bad address")                                         \
    X(EACCES,       -17, "permission denied")

enum ork_error {
    ORK_OK = 0,
#define ORK_ERR_ENUM_(name, val, desc) ORK_##name = (val),
    ORK_ERRNO_MAP(ORK_ERR_ENUM_)
#undef ORK_ERR_ENUM_
};

/* Static description of a code ("unknown error" for values not in the table). */
const char *ork_strerror(int code);

/* Record a formatted message for the calling thread and return `code`. */
int ork_errorf(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The calling thread's last recorded message, or "" when none since ork_error_clear(). */
const char *ork_error_message(void);

/* "<message>" if one was recorded, else ork_strerror(code). Convenience for printing. */
const char *ork_error_describe(int code);

void ork_error_clear(void);

#ifdef __cplusplus
}
#endif
#endif
