/*
 * kj_utf8.h - strict UTF-8 decoding for untrusted text.
 *
 * The server checks uploaded sources and runner results with it, the
 * runner cleans NVRTC logs with it. Strict means RFC 3629: no overlong
 * forms, no UTF-16 surrogates, nothing above U+10FFFF.
 */
#ifndef KJ_UTF8_H
#define KJ_UTF8_H

#include <stddef.h>

/* Decode one sequence at s (n >= 1 bytes available). Returns its length
 * (1-4) and sets *cp (may be NULL) to the code point; returns 0 when s
 * does not start a valid sequence (a lone continuation byte, a truncated
 * or overlong sequence, a surrogate, a value above U+10FFFF). */
size_t kj_utf8_decode(const unsigned char *s, size_t n, unsigned *cp);

/* 1 when the n bytes of s are valid UTF-8 holding no NUL byte, else 0 and
 * *bad (may be NULL) is the offset of the first offending byte. */
int kj_utf8_valid(const char *s, size_t n, size_t *bad);

#endif
