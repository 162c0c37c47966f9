/*
 * kj_err.c - error filling, log lines and printable copies of untrusted text.
 * Used by every module of both binaries; see kj_err.h for the conventions.
 */
#include "kj_err.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int kj_errf(struct kj_err *err, int code, const char *file, int src_line,
            const char *fmt, ...)
{
    if (err == NULL)
        return code;
    va_list ap;
    err->code = code;
    err->file = file;
    err->src_line = src_line;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return code;
}

void kj_err_clear(struct kj_err *err)
{
    if (err == NULL)
        return;
    memset(err, 0, sizeof *err);
}

const char *kj_code_name(int code)
{
    switch (code) {
    case KJ_OK: return "OK";
    case KJ_EINVAL: return "EINVAL";
    case KJ_ENOMEM: return "ENOMEM";
    case KJ_EIO: return "EIO";
    case KJ_ECUDA: return "ECUDA";
    case KJ_ENVRTC: return "ENVRTC";
    case KJ_EDB: return "EDB";
    case KJ_ENOTFOUND: return "ENOTFOUND";
    case KJ_ELIMIT: return "ELIMIT";
    case KJ_EINTERNAL: return "EINTERNAL";
    case KJ_ETIMEOUT: return "ETIMEOUT";
    case KJ_ECONFLICT: return "ECONFLICT";
    case KJ_ESTORAGE: return "ESTORAGE";
    }
    return "EUNKNOWN";
}

void kj_log(int level, const char *module, const char *fmt, ...)
{
    static const char *names[] = {"DEBUG", "INFO", "WARN", "ERROR"};
    struct timespec ts;
    struct tm tm;
    char when[32], line[1024];
    va_list ap;

    if (level < KJ_LOG_INFO && getenv("KJUDGE_DEBUG") == NULL)
        return;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (level < KJ_LOG_DEBUG || level > KJ_LOG_ERROR)
        level = KJ_LOG_ERROR;
    /* One fprintf call so concurrent threads do not interleave inside a line. */
    fprintf(stderr, "%s.%03ldZ %s %s: %s\n", when, ts.tv_nsec / 1000000L,
            names[level], module, line);
}

void kj_printable(char *dst, size_t dstsz, const char *src, size_t max)
{
    size_t i;
    if (dstsz == 0)
        return;
    for (i = 0; i + 1 < dstsz && i < max && src[i] != '\0'; i++) {
        unsigned char c = (unsigned char)src[i];
        dst[i] = (c >= 0x20 && c < 0x7f) ? (char)c : '.';
    }
    dst[i] = '\0';
}

int kj_never_hit(const char *expr, const char *file, int line)
{
    kj_log(KJ_LOG_ERROR, "never", "%s at %s:%d", expr, file, line);
    return 1;
}

void kj_assert_fail(const char *expr, const char *file, int line)
{
    kj_log(KJ_LOG_ERROR, "assert", "assertion failed: %s at %s:%d", expr, file, line);
    abort();
}
