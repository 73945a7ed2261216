/* log.c -- the library's single log sink. */
#include <ork/debug.h>
#include <ork/log.h>

#include <stdarg.h>
#include <stdio.h>

#define ORK_LOG_LINE_MAX 1024

static ork_log_fn log_fn;
static void *log_user;
static enum ork_log_level log_level = ORK_LOG_NOTE;

void ork_log_set(ork_log_fn fn, void *user)
{
    log_fn = fn;
    log_user = user;
}

void ork_log_set_level(enum ork_log_level level)
{
    log_level = level;
}

void ork_logf(enum ork_log_level level, const char *fmt, ...)
{
    /* a logging flag of ORK_DEBUG asks for its info lines whatever the level */
    if (level < log_level && !(level == ORK_LOG_INFO && (ork_debug_flags() & ORK_DBG_LOGGING)))
        return;
    char line[ORK_LOG_LINE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (log_fn) {
        log_fn(log_user, level, line);
        return;
    }
    static const char *const names[] = { "debug", "info", "note", "warning", "error" };
    if (level == ORK_LOG_NOTE)
        fprintf(stderr, "ork: %s\n", line);
    else
        fprintf(stderr, "ork: %s: %s\n", names[(unsigned)level <= ORK_LOG_ERROR ? level : ORK_LOG_ERROR], line);
}
