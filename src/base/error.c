/* error.c -- ork_strerror and the per-thread last-error message. */
#include <ork/error.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define ORK_ERROR_MSG_MAX 512

static _Thread_local char last_msg[ORK_ERROR_MSG_MAX];

const char *ork_strerror(int code)
{
    switch (code) {
    case ORK_OK:
        return "success";
#define ORK_ERR_CASE_(name, val, desc) \
    case ORK_##name:                   \
        return desc;
        ORK_ERRNO_MAP(ORK_ERR_CASE_)
#undef ORK_ERR_CASE_
    }
    return "unknown error";
}

int ork_errorf(int code, const char *fmt, ...)
{
    /* formatted aside first: the arguments may include ork_error_message() itself */
    char buf[ORK_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    memcpy(last_msg, buf, sizeof buf);
    return code;
}

const char *ork_error_message(void)
{
    return last_msg;
}

const char *ork_error_describe(int code)
{
    return last_msg[0] ? last_msg : ork_strerror(code);
}

void ork_error_clear(void)
{
    last_msg[0] = '\0';
}
