/*
 * directive_int.h - what the files of the directive parser share (internal).
 *
 * directive.c parses the "//!kjudge" lines; directive_eval.c checks their
 * expressions' names and evaluates them for a shape; directive_nvrtc.c
 * holds the allow-list of NVRTC options. Errors read "line N: <message>"
 * with err->line = N (DFAIL). Not for use outside these three files.
 */
#ifndef KJ_DIRECTIVE_INT_H
#define KJ_DIRECTIVE_INT_H

#include "directive.h"

#include <stddef.h>
#include <stdint.h>

#define DIR_SHOW 32           /* bytes of user text quoted in a message */
#define DIR_MAX_WORKSPACE (INT64_C(1) << 34)

/* Fill err with "line N: <message>" and err->line = N; returns KJ_EINVAL. */
int dir_fail(struct kj_err *err, int line, const char *file, int src_line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
#define DFAIL(err, line, ...) dir_fail((err), (line), __FILE__, __LINE__, __VA_ARGS__)

/* Printable copy of n bytes of user text, cut at max (<= DIR_SHOW) bytes. */
struct shown { char s[DIR_SHOW + 4]; };
struct shown dir_show_max(const char *s, size_t n, size_t max);
struct shown dir_show(const char *s, size_t n);

static inline int dir_is_blank(int c) { return c == ' ' || c == '\t'; }
static inline int dir_is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static inline int dir_is_digit(int c) { return c >= '0' && c <= '9'; }
static inline int dir_is_alnum(int c) { return dir_is_alpha(c) || dir_is_digit(c); }

/* Write the allow-list of NVRTC options, for messages, into buf (directive_nvrtc.c). */
void dir_nvrtc_allowed_list(char *buf, size_t sz);

#endif
