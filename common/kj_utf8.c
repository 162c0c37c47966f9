/*
 * kj_utf8.c - strict UTF-8 decoding (kj_utf8.h), shared by the server's
 * input checks and the runner's log cleaning.
 */
#include "kj_utf8.h"

size_t kj_utf8_decode(const unsigned char *s, size_t n, unsigned *cp)
{
    unsigned char lo = 0x80, hi = 0xBF;
    unsigned v;
    size_t len;

    if (n == 0)
        return 0;
    if (s[0] < 0x80) {
        if (cp != NULL)
            *cp = s[0];
        return 1;
    }
    if (s[0] >= 0xC2 && s[0] <= 0xDF)
        len = 2, v = s[0] & 0x1Fu;
    else if (s[0] >= 0xE0 && s[0] <= 0xEF)
        len = 3, v = s[0] & 0x0Fu;
    else if (s[0] >= 0xF0 && s[0] <= 0xF4)
        len = 4, v = s[0] & 0x07u;
    else
        return 0; /* a continuation byte, C0/C1 (overlong 2-byte) or F5..FF */
    if (s[0] == 0xE0)
        lo = 0xA0; /* overlong 3-byte */
    else if (s[0] == 0xED)
        hi = 0x9F; /* UTF-16 surrogates */
    else if (s[0] == 0xF0)
        lo = 0x90; /* overlong 4-byte */
    else if (s[0] == 0xF4)
        hi = 0x8F; /* above U+10FFFF */
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    v = (v << 6) | (s[1] & 0x3Fu);
    for (size_t i = 2; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        v = (v << 6) | (s[i] & 0x3Fu);
    }
    if (cp != NULL)
        *cp = v;
    return len;
}

int kj_utf8_valid(const char *s, size_t n, size_t *bad)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t k = u[i] != 0 ? kj_utf8_decode(u + i, n - i, NULL) : 0;
        if (k == 0) {
            if (bad != NULL)
                *bad = i;
            return 0;
        }
        i += k;
    }
    return 1;
}
