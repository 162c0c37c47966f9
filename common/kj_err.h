/*
 * kj_err.h - error values and logging shared by kjudge-server and kjudge-runner.
 *
 * Every fallible function returns an int (0 = KJ_OK, negative = KJ_E*) and,
 * on failure, fills a caller-owned struct kj_err with a message meant for a
 * human: which object, which line of the user's input (if any), what was
 * expected. Use KJ_FAIL() so the message also records where in our code the
 * failure was raised. Logging goes through kj_log(): one line per event,
 * "2026-11-30T12:00:00.123Z WARN queue: message key=value".
 */
#ifndef KJ_ERR_H
#define KJ_ERR_H

#include <stddef.h>

enum kj_code {
    KJ_OK = 0,
    KJ_EINVAL = -1,    /* bad input from outside: user, file, network */
    KJ_ENOMEM = -2,    /* allocation failed */
    KJ_EIO = -3,       /* file, pipe or socket error */
    KJ_ECUDA = -4,     /* CUDA driver error */
    KJ_ENVRTC = -5,    /* NVRTC error (not a compile error of the source) */
    KJ_EDB = -6,       /* SQLite error */
    KJ_ENOTFOUND = -7, /* named thing does not exist */
    KJ_ELIMIT = -8,    /* a named limit was exceeded */
    KJ_EINTERNAL = -9, /* our own bug or an impossible state */
    KJ_ETIMEOUT = -10, /* a deadline passed */
    KJ_ECONFLICT = -11, /* state does not allow the operation */
    KJ_ESTORAGE = -12  /* the disk is full or failing (SQLite FULL or IOERR) */
};

#define KJ_ERR_MSG 256

struct kj_err {
    int code;             /* one of enum kj_code */
    int line;             /* 1-based line in the user's input, 0 if none */
    char msg[KJ_ERR_MSG]; /* human-readable, never contains secrets */
    const char *file;     /* our source file that raised it (static string) */
    int src_line;         /* our source line that raised it */
};

/* Fill err (if not NULL) and return code. Use through KJ_FAIL. */
int kj_errf(struct kj_err *err, int code, const char *file, int src_line,
            const char *fmt, ...) __attribute__((format(printf, 5, 6)));
#define KJ_FAIL(err, code, ...) kj_errf((err), (code), __FILE__, __LINE__, __VA_ARGS__)

/* Reset err to "no error". */
void kj_err_clear(struct kj_err *err);

/* Static name of a code, e.g. "EINVAL". */
const char *kj_code_name(int code);

enum kj_log_level { KJ_LOG_DEBUG = 0, KJ_LOG_INFO = 1, KJ_LOG_WARN = 2, KJ_LOG_ERROR = 3 };

/* Write one log line to stderr: UTC time, level, module, message.
 * Messages must not contain tokens or submitted source. */
void kj_log(int level, const char *module, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Copy at most max bytes of untrusted text into dst (size dstsz), replacing
 * non-printable bytes with '.', for logs and error messages. */
void kj_printable(char *dst, size_t dstsz, const char *src, size_t max);

/* Assert that stays on in release builds and logs file:line. */
#define KJ_ASSERT(x) \
    ((x) ? (void)0 : kj_assert_fail(#x, __FILE__, __LINE__))
void kj_assert_fail(const char *expr, const char *file, int line) __attribute__((noreturn));

/* Defensive checks of conditions believed impossible, as SQLite's
 * ALWAYS/NEVER: the value is x's truth, and when the impossible happens a
 * line "ERROR never: EXPR at file:line" is logged and the caller
 * takes its safe branch instead of aborting a process that holds other
 * people's work:
 *     if (KJ_NEVER(n < 0))
 *         return KJ_FAIL(err, KJ_EINTERNAL, "...");
 * Use KJ_ASSERT where going on would corrupt data. */
#define KJ_NEVER(x) ((x) ? kj_never_hit(#x, __FILE__, __LINE__) : 0)
#define KJ_ALWAYS(x) ((x) ? 1 : !kj_never_hit("!(" #x ")", __FILE__, __LINE__))
/* Logs the line above; returns 1. */
int kj_never_hit(const char *expr, const char *file, int line);

#endif
