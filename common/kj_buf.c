/*
 * kj_buf.c - the growable string of kj_buf.h. Used by both binaries
 * (compile logs in the runner, diffs and bodies in the server).
 */
#include "kj_buf.h"
#include "kj_err.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KJ_BUF_FIRST 256 /* first allocation */

void kj_buf_init(struct kj_buf *b, size_t max)
{
    memset(b, 0, sizeof *b);
    b->max = max;
}

/* Make room for n more bytes plus the NUL. 0, or the failure (marked). */
static int buf_reserve(struct kj_buf *b, size_t n)
{
    size_t need, cap;
    char *p;
    if (b->failed)
        return b->failed;
    if (n > (size_t)-1 - b->len - 1 || (b->max != 0 && b->len + n > b->max))
        return b->failed = KJ_ELIMIT;
    need = b->len + n + 1;
    if (need <= b->cap)
        return 0;
    cap = b->cap ? b->cap : KJ_BUF_FIRST;
    while (cap < need)
        cap = cap > (size_t)-1 / 2 ? need : cap * 2;
    if ((p = realloc(b->p, cap)) == NULL)
        return b->failed = KJ_ENOMEM;
    b->p = p;
    b->cap = cap;
    return 0;
}

int kj_buf_putn(struct kj_buf *b, const char *s, size_t n)
{
    int rc = buf_reserve(b, n);
    if (rc != 0)
        return rc;
    if (n > 0)
        memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

int kj_buf_puts(struct kj_buf *b, const char *s) { return kj_buf_putn(b, s, strlen(s)); }

int kj_buf_putc(struct kj_buf *b, char c) { return kj_buf_putn(b, &c, 1); }

int kj_buf_printf(struct kj_buf *b, const char *fmt, ...)
{
    va_list ap;
    int rc;
    va_start(ap, fmt);
    rc = kj_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

int kj_buf_vprintf(struct kj_buf *b, const char *fmt, va_list ap)
{
    va_list again;
    int n, rc;
    if (b->failed)
        return b->failed;
    va_copy(again, ap);
    n = vsnprintf(NULL, 0, fmt, ap);
    if (n < 0)
        rc = b->failed = KJ_EINVAL;
    else if ((rc = buf_reserve(b, (size_t)n)) == 0) {
        vsnprintf(b->p + b->len, (size_t)n + 1, fmt, again);
        b->len += (size_t)n;
    }
    va_end(again);
    return rc;
}

int kj_buf_status(const struct kj_buf *b) { return b->failed; }

const char *kj_buf_str(const struct kj_buf *b) { return b->p != NULL ? b->p : ""; }

char *kj_buf_take(struct kj_buf *b, size_t *len)
{
    char *p = b->p;
    size_t n = b->len, max = b->max;
    if (p == NULL)
        p = calloc(1, 1);
    if (len != NULL)
        *len = p != NULL ? n : 0;
    memset(b, 0, sizeof *b);
    b->max = max;
    return p;
}

void kj_buf_free(struct kj_buf *b)
{
    size_t max = b->max;
    free(b->p);
    memset(b, 0, sizeof *b);
    b->max = max;
}
