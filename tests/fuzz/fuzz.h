/*
 * fuzz.h - small helpers shared by the libFuzzer harnesses of tests/fuzz/.
 *
 * Each tests/fuzz/fuzz_X.c defines LLVMFuzzerTestOneInput and is built by
 * the Makefile into build/fuzz/fuzz_X; tests/fuzz/run.sh runs it on its seed
 * corpus tests/fuzz/corpus/X/ (and tests/fuzz/X.dict when there is one).
 * A property that does not hold is reported with fuzz_fail(), which aborts,
 * so libFuzzer saves the input as a crash like any sanitizer finding.
 */
#ifndef KJ_FUZZ_H
#define KJ_FUZZ_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A NUL-terminated copy of the fuzzer's bytes (embedded NULs kept). The
 * caller frees it. Aborts when out of memory (not a finding of the target). */
static inline char *fuzz_text(const uint8_t *data, size_t size)
{
    char *t = malloc(size + 1);
    if (t == NULL)
        abort();
    if (size > 0)
        memcpy(t, data, size);
    t[size] = '\0';
    return t;
}

/* 1 when s[0..n) is valid UTF-8 (RFC 3629: no overlong forms, no UTF-16
 * surrogates, nothing above U+10FFFF). Written apart from the server's own
 * check so that one can test the other. */
static inline int fuzz_utf8_ok(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        unsigned c = p[i], need, cp;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF)
            need = 1, cp = c & 0x1F;
        else if (c >= 0xE0 && c <= 0xEF)
            need = 2, cp = c & 0x0F;
        else if (c >= 0xF0 && c <= 0xF4)
            need = 3, cp = c & 0x07;
        else
            return 0;
        for (unsigned k = 1; k <= need; k++) {
            if (i + k >= n || (p[i + k] & 0xC0) != 0x80)
                return 0;
            cp = (cp << 6) | (p[i + k] & 0x3F);
        }
        if ((need == 2 && cp < 0x800) || (need == 3 && cp < 0x10000) || cp > 0x10FFFF ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += need + 1;
    }
    return 1;
}

/* Report a broken property and abort. fd is where the message goes: 2, or a
 * copy of the original stderr kept by a harness that silences fd 2. */
static inline void fuzz_fail_fd(int fd, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
static inline void fuzz_fail_fd(int fd, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if ((size_t)n > sizeof msg - 2)
        n = (int)(sizeof msg - 2);
    msg[n++] = '\n';
    ssize_t w = write(fd, "FUZZ PROPERTY FAILED: ", 22);
    w = write(fd, msg, (size_t)n);
    (void)w;
    abort();
}
#define fuzz_fail(...) fuzz_fail_fd(2, __VA_ARGS__)

#endif
