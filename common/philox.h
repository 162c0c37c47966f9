/*
 * philox.h - the Philox4x32-10 counter-based generator, for host and device.
 *
 * The trusted input generator (kernels/kernels.cu) draws element i of buffer b
 * for seed s as philox(counter = {i_lo, i_hi, b, PHILOX_DOMAIN}, key = {s_lo, s_hi}),
 * so the same (seed, buffer, element) gives the same bits on every GPU model
 * and on the CPU (tests/unit/test_philox.c checks the published known-answer
 * vectors). Header-only so nvcc and gcc compile the same text.
 */
#ifndef KJ_PHILOX_H
#define KJ_PHILOX_H

#include <stdint.h>

#ifdef __CUDACC__
#define KJ_HD __host__ __device__ __forceinline__
#else
#define KJ_HD static inline
#endif

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u
#define PHILOX_DOMAIN_INPUT 0x6b6a0001u  /* inputs */
#define PHILOX_DOMAIN_POISON 0x6b6a0002u /* output poison patterns */

struct philox4 { uint32_t v[4]; };

KJ_HD void philox_mulhilo(uint32_t a, uint32_t b, uint32_t *hi, uint32_t *lo)
{
    uint64_t p = (uint64_t)a * (uint64_t)b;
    *hi = (uint32_t)(p >> 32);
    *lo = (uint32_t)p;
}

/* Ten rounds of Philox4x32 on counter c with key k. */
KJ_HD struct philox4 philox4x32_10(struct philox4 c, uint32_t k0, uint32_t k1)
{
    for (int r = 0; r < 10; r++) {
        uint32_t hi0, lo0, hi1, lo1;
        philox_mulhilo(PHILOX_M0, c.v[0], &hi0, &lo0);
        philox_mulhilo(PHILOX_M1, c.v[2], &hi1, &lo1);
        struct philox4 n;
        n.v[0] = hi1 ^ c.v[1] ^ k0;
        n.v[1] = lo1;
        n.v[2] = hi0 ^ c.v[3] ^ k1;
        n.v[3] = lo0;
        c = n;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    return c;
}

/* The four words for element i of buffer b under seed s in domain d. */
KJ_HD struct philox4 philox_element(uint64_t seed, uint32_t buffer, uint64_t i, uint32_t domain)
{
    struct philox4 c;
    c.v[0] = (uint32_t)i;
    c.v[1] = (uint32_t)(i >> 32);
    c.v[2] = buffer;
    c.v[3] = domain;
    return philox4x32_10(c, (uint32_t)seed, (uint32_t)(seed >> 32));
}

/* A double in (0, 1] from two words (53 random bits). */
KJ_HD double philox_unit(uint32_t a, uint32_t b)
{
    uint64_t m = ((uint64_t)a << 21) ^ (uint64_t)(b >> 11);
    m &= (1ull << 53) - 1;
    return ((double)m + 1.0) * (1.0 / 9007199254740992.0);
}

/* Mix a case seed with a leaderboard's secret seed (Cantor pairing, mod 2^64),
 * as GPU MODE's ranked runs do; used only in leaderboard mode. */
KJ_HD uint64_t philox_mix_seed(uint64_t a, uint64_t b)
{
    uint64_t s = a + b;
    uint64_t t = (s % 2 == 0) ? (s / 2) * (s + 1) : s * ((s + 1) / 2);
    return a + t;
}

#endif
