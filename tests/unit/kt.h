/*
 * kt.h - the tiny test harness every unit test binary uses.
 *
 * KT_CHECK(cond, fmt, ...) counts one check; a failure prints file:line and
 * the message. KT_SKIP(reason) counts a skipped check (never a pass).
 * kt_done() prints "N passed, N failed, N skipped" and returns the exit code.
 * The counters live in a struct defined once per test binary (by the file
 * that defines KT_MAIN before including this header).
 */
#ifndef KJ_KT_H
#define KJ_KT_H

#include <stdio.h>
#include <stdlib.h>

struct kt_counts { int passed, failed, skipped; };
extern struct kt_counts kt_counts;

#ifdef KT_MAIN
struct kt_counts kt_counts;
#endif

#define KT_CHECK(cond, ...)                                              \
    do {                                                                 \
        if (cond) {                                                      \
            kt_counts.passed++;                                          \
        } else {                                                         \
            kt_counts.failed++;                                          \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                \
            fputc('\n', stderr);                                         \
        }                                                                \
    } while (0)

#define KT_SKIP(...)                                                     \
    do {                                                                 \
        kt_counts.skipped++;                                             \
        fprintf(stderr, "SKIP %s:%d: ", __FILE__, __LINE__);             \
        fprintf(stderr, __VA_ARGS__);                                    \
        fputc('\n', stderr);                                             \
    } while (0)

/* The whole file at path, NUL-terminated, length in *len; NULL if it cannot
 * be read. The caller frees it. */
static inline char *kt_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n;

    if (f == NULL)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)n + 1)) != NULL) {
        *len = fread(buf, 1, (size_t)n, f);
        buf[*len] = '\0';
    }
    fclose(f);
    return buf;
}

static inline int kt_done(const char *name)
{
    printf("%s: %d passed, %d failed, %d skipped\n", name, kt_counts.passed,
           kt_counts.failed, kt_counts.skipped);
    return kt_counts.failed ? 1 : 0;
}

#endif
