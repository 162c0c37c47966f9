/*
 * kj_buf.h - a growable, NUL-terminated byte string with an optional cap.
 *
 * Used wherever text is built piece by piece: compile logs, diffs, HTTP
 * bodies. Failure is sticky (Redis sds's convenience with SQLite's
 * StrAccum idea): once an append runs out of memory or would pass the cap,
 * the buffer stops growing and every later append is a no-op, so a caller
 * appends freely and checks kj_buf_status() once at the end.
 *
 *   struct kj_buf b;
 *   kj_buf_init(&b, 1 << 20);          // cap 1 MiB; 0 = no cap
 *   kj_buf_printf(&b, "line %d\n", 1);
 *   if (kj_buf_status(&b) != KJ_OK) ...
 *   char *text = kj_buf_take(&b, &len); // caller frees text
 */
#ifndef KJ_BUF_H
#define KJ_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct kj_buf {
    char *p;       /* owned; NULL until the first append, else NUL-terminated */
    size_t len;    /* bytes used, the NUL not counted */
    size_t cap;    /* bytes allocated */
    size_t max;    /* largest len allowed; 0 = unlimited */
    int failed;    /* 0, or KJ_ENOMEM / KJ_ELIMIT once an append failed (sticky) */
};

/* An empty buffer whose length may not pass max bytes (0 = no cap). */
void kj_buf_init(struct kj_buf *b, size_t max);

/* Append n bytes of s. On failure nothing is appended and the buffer is
 * marked failed; returns 0 or that failure (KJ_ENOMEM, KJ_ELIMIT). */
int kj_buf_putn(struct kj_buf *b, const char *s, size_t n);
int kj_buf_puts(struct kj_buf *b, const char *s);
int kj_buf_putc(struct kj_buf *b, char c);
int kj_buf_printf(struct kj_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* kj_buf_printf with a va_list (for printf-like wrappers); ap is consumed. */
int kj_buf_vprintf(struct kj_buf *b, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/* KJ_OK, or the first failure of an append (KJ_ENOMEM, KJ_ELIMIT). */
int kj_buf_status(const struct kj_buf *b);

/* The text so far: never NULL ("" when empty); borrowed until the next
 * append, kj_buf_take or kj_buf_free. */
const char *kj_buf_str(const struct kj_buf *b);

/* Hand the text to the caller (caller frees it; never NULL unless out of
 * memory) and reset b to empty, keeping its cap and clearing a failure.
 * *len (when not NULL) receives the length. */
char *kj_buf_take(struct kj_buf *b, size_t *len);

/* Free the text and reset b to empty; accepts a zeroed or freed buffer. */
void kj_buf_free(struct kj_buf *b);

#endif
