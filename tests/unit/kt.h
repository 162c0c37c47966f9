/*
 * kt.h - the tiny test harness every unit test binary uses.
 *
 * KT_CHECK(cond, fmt, ...) counts one check; a failure prints file:line and
 * the message. KT_SKIP(reason) counts a skipped check (never a pass).
 * kt_done() prints "N passed, N failed, N skipped" and returns the exit code.
 * The counters live in a struct defined once per test binary (by the file
 * that defines KT_MAIN before including this header).
 *
 * Picking tests: main() calls kt_init(argc, argv) first and each test
 * function through KT_RUN(test_x(args)). `./build/tests/test_db lease` then
 * runs only the functions whose name contains "lease" (checks made in main
 * itself, such as set-up, still run); "users,lease" runs those whose name
 * contains either, for a function that builds on another's state. A name
 * that matches no function is a failure, so a typo cannot pass as an empty
 * run.
 */
#ifndef KJ_KT_H
#define KJ_KT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct kt_counts {
    int passed, failed, skipped;
    const char *filter; /* argv[1]: run only test functions whose name holds it; NULL: all */
    int ran, picked;    /* KT_RUN calls seen; those that ran */
};
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

/* Take the optional test-name filter from the command line. */
static inline void kt_init(int argc, char **argv)
{
    kt_counts.filter = argc > 1 && argv[1][0] != '\0' ? argv[1] : NULL;
}

/* Whether the test function called as `call` ("test_x(db)") is picked: the
 * filter is a comma-separated list of name parts ("users,lifecycle" runs a
 * function with the ones it builds on). */
static inline int kt_want(const char *call)
{
    const char *paren = strchr(call, '(');
    size_t n = paren != NULL ? (size_t)(paren - call) : strlen(call);
    kt_counts.ran++;
    for (const char *f = kt_counts.filter; f != NULL; f = strchr(f, ',') ? strchr(f, ',') + 1 : NULL) {
        size_t flen = strcspn(f, ",");
        for (size_t i = 0; flen > 0 && i + flen <= n; i++)
            if (memcmp(call + i, f, flen) == 0) {
                kt_counts.picked++;
                return 1;
            }
    }
    if (kt_counts.filter == NULL)
        kt_counts.picked++;
    return kt_counts.filter == NULL;
}

#define KT_RUN(call)          \
    do {                      \
        if (kt_want(#call)) { \
            call;             \
        }                     \
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
    if (kt_counts.filter != NULL && kt_counts.ran > 0 && kt_counts.picked == 0) {
        kt_counts.failed++;
        fprintf(stderr, "FAIL no test function of %s matches '%s'\n", name, kt_counts.filter);
    }
    printf("%s: %d passed, %d failed, %d skipped\n", name, kt_counts.passed,
           kt_counts.failed, kt_counts.skipped);
    return kt_counts.failed ? 1 : 0;
}

#endif
