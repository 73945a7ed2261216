/* ork/log.h -- the library logs through one callback; the application decides where it goes.
 * Default: NOTE, WARN and ERROR to stderr, prefixed "ork: " (NOTE: status lines a user expects
 * to see, such as "building MODEL.orkpack", without a level word). INFO/DEBUG are dropped
 * unless the application installs a callback or lowers the level (ork_log_set_level), or an
 * ORK_DEBUG logging flag asks for INFO lines. */
#ifndef ORK_LOG_H
#define ORK_LOG_H

#ifdef __cplusplus
extern "C" {
#endif

enum ork_log_level {
    ORK_LOG_DEBUG = 0,
    ORK_LOG_INFO = 1,
    ORK_LOG_NOTE = 2,           /* status a user expects by default (shown unless quiet) */
    ORK_LOG_WARN = 3,
    ORK_LOG_ERROR = 4,
};

typedef void (*ork_log_fn)(void *user, enum ork_log_level level, const char *msg);

/* Install a callback (NULL restores the default stderr sink). Not thread-safe against
 * concurrent logging: set it once at start-up. */
void ork_log_set(ork_log_fn fn, void *user);
/* Messages below `level` are dropped before formatting. */
void ork_log_set_level(enum ork_log_level level);
void ork_logf(enum ork_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define ORK_LOGD(...) ork_logf(ORK_LOG_DEBUG, __VA_ARGS__)
#define ORK_LOGI(...) ork_logf(ORK_LOG_INFO, __VA_ARGS__)
#define ORK_LOGN(...) ork_logf(ORK_LOG_NOTE, __VA_ARGS__)
#define ORK_LOGW(...) ork_logf(ORK_LOG_WARN, __VA_ARGS__)
#define ORK_LOGE(...) ork_logf(ORK_LOG_ERROR, __VA_ARGS__)

#ifdef __cplusplus
}
#endif
#endif
