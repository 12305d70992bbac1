/*
 * status.c — the status-code list, kr_strerror and the error object.
 */
#include "kareus/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *kr_strerror(int code)
{
    switch (code) {
#define KR_STATUS_MSG_(name, value, msg) \
    case value:                          \
        return msg;
        KR_STATUS_LIST(KR_STATUS_MSG_)
#undef KR_STATUS_MSG_
    default:
        return "unknown status";
    }
}

const char *kr_status_name(int code)
{
    switch (code) {
#define KR_STATUS_NAME_(name, value, msg) \
    case value:                           \
        return #name;
        KR_STATUS_LIST(KR_STATUS_NAME_)
#undef KR_STATUS_NAME_
    default:
        return "KR_E?";
    }
}

int kr_error_set(kr_error *err, int code, const char *fmt, ...)
{
    if (err == NULL)
        return code;
    err->code = code;
    if (fmt == NULL) {
        snprintf(err->msg, sizeof err->msg, "%s", kr_strerror(code));
        return code;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return code;
}

int kr_error_prefix(kr_error *err, const char *fmt, ...)
{
    if (err == NULL)
        return KR_EINTERNAL;
    char prefix[KR_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    char old[KR_ERROR_MSG_MAX];
    memcpy(old, err->msg, sizeof old);
    old[sizeof old - 1] = '\0';
    snprintf(err->msg, sizeof err->msg, "%s: %s", prefix, old);
    return err->code;
}

void kr_error_clear(kr_error *err)
{
    if (err == NULL)
        return;
    err->code = KR_OK;
    err->msg[0] = '\0';
}

int kr_status_is_input_error(int code)
{
    switch (code) {
    case KR_EINVAL:
    case KR_EPARSE:
    case KR_ERANGE:
    case KR_ENOTFOUND:
    case KR_EMISMATCH:
    case KR_ECYCLE:
    case KR_EIO:
        return 1;
    default:
        return 0;
    }
}
