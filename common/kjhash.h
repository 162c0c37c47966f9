/*
 * kjhash.h - the fingerprint of a call's outputs, for host and device.
 *
 * Timing protocol v2 (docs/timing.md) times a batch of calls before the
 * reference box checks them, each call on its own buffer set. So that a
 * call cannot leave its work to a later one (which could find the earlier
 * set's buffers in the same context and fill them in before the check),
 * the run box takes the fingerprint of each call's outputs right after the
 * call, and the check takes it again: they must be equal.
 *
 * The fingerprint of nbytes at p under salt is the wrapping sum over its
 * 32-bit words of kjhash_word(word, index, salt) (and of kjhash_byte for a
 * tail shorter than a word): independent of the order in which threads add
 * it up, so the GPU (kernels/kernels.cu, kj_hash) and the host
 * (kjhash_host) agree bit for bit. The judge draws the salt per batch, so
 * the submission cannot build a change that keeps it. Header-only so nvcc
 * and gcc compile the same text (as common/philox.h).
 */
#ifndef KJ_KJHASH_H
#define KJ_KJHASH_H

#include <stdint.h>

#ifndef KJ_HD
#ifdef __CUDACC__
#define KJ_HD __host__ __device__ __forceinline__
#else
#define KJ_HD static inline
#endif
#endif

/* splitmix64's finalizer: every input bit moves every output bit. */
KJ_HD uint64_t kjhash_mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* The term of the 32-bit word w at word index i. */
KJ_HD uint64_t kjhash_word(uint32_t w, uint64_t i, uint64_t salt)
{
    return kjhash_mix(((uint64_t)w << 32 | 0x6b6au) ^ kjhash_mix(i + salt));
}

/* The term of a tail byte v at byte index i. */
KJ_HD uint64_t kjhash_byte(uint8_t v, uint64_t i, uint64_t salt)
{
    return kjhash_mix(((uint64_t)v << 40 | 0x6b6bu) ^ kjhash_mix(i + salt + 0x5bd1e995ull));
}

#ifndef __CUDACC__
/* The fingerprint of nbytes at p (4-byte aligned) on the host. */
static inline uint64_t kjhash_host(const unsigned char *p, uint64_t nbytes, uint64_t salt)
{
    uint64_t h = 0, nw = nbytes / 4;
    for (uint64_t i = 0; i < nw; i++) {
        uint32_t w;
        __builtin_memcpy(&w, p + 4 * i, 4);
        h += kjhash_word(w, i, salt);
    }
    for (uint64_t i = nw * 4; i < nbytes; i++)
        h += kjhash_byte(p[i], i, salt);
    return h;
}
#endif

#endif
