/*
 * pydirective.c - parse the directive lines of a Python submission
 * (pydirective.h): "#!POPCORN" keys as KernelBot reads them and kjudge's
 * own "#!kjudge" lines, and the custom_kernel check.
 *
 * Called by the server on upload (api_submissions.c) after sub_lang.c
 * said the file is Python, and by the client's submit. The GPU names go
 * through gputype_of_kernelbot. Line-based like directive.c: a trailing
 * '\r' is dropped; a line longer than PYDIR_MAX_LINE is looked at only up
 * to that length (a directive is never that long).
 */
#include "pydirective.h"
#include "directive_int.h" /* dir_fail: a bad line is reported as a //!kjudge line is */
#include "gputype.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define PYDIR_MAX_LINE 1024
#define PYDIR_SHOW 40

/* A bad line: "line N: ..." with err->line = N, as for //!kjudge lines. */
#define PYFAIL(err, line, ...) DFAIL((err), (line), __VA_ARGS__)

static int is_blank(int c)
{
    return c == ' ' || c == '\t';
}

/* Append a note (printf-style) to d->notes, "; "-separated; cut with "..." when full. */
static void note(struct pydir *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void note(struct pydir *d, const char *fmt, ...)
{
    char text[256], safe[256];
    size_t used = strlen(d->notes);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    kj_printable(safe, sizeof safe, text, strlen(text));
    if (used + 2 + strlen(safe) + 4 >= sizeof d->notes) { /* full: end with "..." once */
        if (used < 3 || strcmp(d->notes + used - 3, "...") != 0)
            snprintf(d->notes + used, sizeof d->notes - used, "...");
        return;
    }
    snprintf(d->notes + used, sizeof d->notes - used, "%s%s", used > 0 ? "; " : "", safe);
}

/* The next blank-separated word of line (NUL-terminated) at *p: its start and length. */
static const char *word(const char **p, size_t *n)
{
    const char *s = *p;
    while (is_blank(*s))
        s++;
    *n = strcspn(s, " \t");
    *p = s + *n;
    return s;
}

/* A value "NAME" after a key: one word of [A-Za-z0-9_-] (board names are
 * checked by the server against its boards), copied into dst. */
static int one_value(struct kj_err *err, int line, const char *key, const char *p, char *dst,
                     size_t dstsz)
{
    char safe[PYDIR_SHOW + 1];
    size_t n, m;
    const char *v = word(&p, &n), *rest = word(&p, &m);
    if (n == 0)
        return PYFAIL(err, line, "%s: missing name", key);
    kj_printable(safe, sizeof safe, v, n > PYDIR_SHOW ? PYDIR_SHOW : n);
    if (n >= dstsz)
        return PYFAIL(err, line, "%s: name too long (max %zu characters)", key, dstsz - 1);
    for (size_t i = 0; i < n; i++)
        if (strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-", v[i]) ==
            NULL || v[i] == '\0')
            return PYFAIL(err, line, "%s: bad name '%s' (use A-Z, a-z, 0-9, _ and -)", key, safe);
    if (m > 0) {
        kj_printable(safe, sizeof safe, rest, m > PYDIR_SHOW ? PYDIR_SHOW : m);
        return PYFAIL(err, line, "%s: unexpected '%s' after the name (one name per line)", key,
                      safe);
    }
    memcpy(dst, v, n);
    dst[n] = '\0';
    return 0;
}

static int set_leaderboard(struct pydir *d, int line, const char *p, struct kj_err *err)
{
    char v[sizeof d->leaderboard];
    int rc = one_value(err, line, "leaderboard", p, v, sizeof v);
    if (rc != 0)
        return rc;
    if (d->leaderboard_line != 0 && strcmp(d->leaderboard, v) != 0)
        return PYFAIL(err, line, "leaderboard '%s' disagrees with '%s' on line %d", v,
                      d->leaderboard, d->leaderboard_line);
    if (d->leaderboard_line == 0) {
        memcpy(d->leaderboard, v, strlen(v) + 1);
        d->leaderboard_line = line;
    }
    return 0;
}

static int set_gpu(struct pydir *d, int line, const char *p, struct kj_err *err)
{
    char v[sizeof d->gpu], type[sizeof d->gpu];
    int rc = one_value(err, line, "gpu", p, v, sizeof v), mapped;
    if (rc != 0)
        return rc;
    mapped = gputype_of_kernelbot(v, type, sizeof type);
    if (d->gpu_line != 0 && strcmp(d->gpu, type) != 0)
        return PYFAIL(err, line, "gpu '%s' disagrees with '%s' on line %d", v, d->gpu_written,
                      d->gpu_line);
    if (d->gpu_line != 0)
        return 0;
    memcpy(d->gpu, type, strlen(type) + 1);
    memcpy(d->gpu_written, v, strlen(v) + 1);
    d->gpu_line = line;
    if (mapped)
        note(d, "line %d: gpu %s is GPU type %s", line, v, type);
    return 0;
}

/* One line (NUL-terminated, without its newline). */
static int one_line(struct pydir *d, int line, const char *text, struct kj_err *err)
{
    const char *p = text, *key;
    size_t n;
    char safe[PYDIR_SHOW + 1];
    while (is_blank(*p))
        p++;
    if (strncmp(p, "def", 3) == 0 && is_blank(p[3])) {
        const char *q = p + 3;
        while (is_blank(*q))
            q++;
        if (strncmp(q, "custom_kernel", 13) == 0) {
            q += 13;
            while (is_blank(*q))
                q++;
            if (*q == '(' && d->custom_kernel_line == 0)
                d->custom_kernel_line = line;
        }
        return 0;
    }
    if (strncmp(p, "custom_kernel", 13) == 0) {
        const char *q = p + 13;
        while (is_blank(*q))
            q++;
        if (q[0] == '=' && q[1] != '=' && d->custom_kernel_line == 0)
            d->custom_kernel_line = line;
        return 0;
    }
    if (strncmp(p, "#!POPCORN", 9) == 0 && (p[9] == '\0' || is_blank(p[9]))) {
        p += 9;
        key = word(&p, &n);
        if (n == 11 && strncmp(key, "leaderboard", 11) == 0)
            return set_leaderboard(d, line, p, err);
        if ((n == 3 && strncmp(key, "gpu", 3) == 0) || (n == 4 && strncmp(key, "gpus", 4) == 0))
            return set_gpu(d, line, p, err);
        kj_printable(safe, sizeof safe, key, n > PYDIR_SHOW ? PYDIR_SHOW : n);
        note(d, "line %d: #!POPCORN %s ignored", line, n > 0 ? safe : "(empty)");
        return 0;
    }
    if (strncmp(p, "#!kjudge", 8) != 0)
        return 0;
    p += 8;
    if (*p != '\0' && !is_blank(*p)) {
        kj_printable(safe, sizeof safe, p - 8, strcspn(p - 8, " \t") > PYDIR_SHOW ? PYDIR_SHOW
                     : strcspn(p - 8, " \t"));
        return PYFAIL(err, line, "'%s' is not a directive (write \"#!kjudge leaderboard NAME\" "
                      "or \"#!kjudge gpu NAME\")", safe);
    }
    key = word(&p, &n);
    if (n == 11 && strncmp(key, "leaderboard", 11) == 0)
        return set_leaderboard(d, line, p, err);
    if (n == 3 && strncmp(key, "gpu", 3) == 0)
        return set_gpu(d, line, p, err);
    kj_printable(safe, sizeof safe, key, n > PYDIR_SHOW ? PYDIR_SHOW : n);
    return PYFAIL(err, line, "unknown directive '#!kjudge %s' (a Python submission takes "
                  "only \"#!kjudge leaderboard NAME\" and \"#!kjudge gpu NAME\")",
                  n > 0 ? safe : "");
}

int pydir_parse(const char *src, size_t len, struct pydir *out, struct kj_err *err)
{
    char text[PYDIR_MAX_LINE + 1];
    size_t i = 0;
    int line = 0, rc;
    memset(out, 0, sizeof *out);
    while (i < len) {
        const char *nl = memchr(src + i, '\n', len - i);
        size_t end = nl != NULL ? (size_t)(nl - src) : len, n = end - i;
        line++;
        if (n > 0 && src[end - 1] == '\r')
            n--;
        if (n > PYDIR_MAX_LINE)
            n = PYDIR_MAX_LINE;
        memcpy(text, src + i, n);
        text[n] = '\0';
        if ((rc = one_line(out, line, text, err)) != 0)
            return rc;
        i = end + 1;
    }
    if (out->custom_kernel_line == 0) {
        KJ_FAIL(err, KJ_ENOTFOUND, "the file defines no custom_kernel: a Python submission "
                "needs a function `def custom_kernel(data: input_t) -> output_t:`");
        if (err != NULL)
            err->line = 0;
        return KJ_ENOTFOUND;
    }
    return 0;
}
