/* test_philox.c - known-answer vectors of Philox4x32-10 and the element mapping
 * that makes inputs identical on every GPU and on the host (common/philox.h). */
#define KT_MAIN
#include "kt.h"
#include "philox.h"

static int eq4(struct philox4 r, uint32_t a, uint32_t b, uint32_t c, uint32_t d)
{
    return r.v[0] == a && r.v[1] == b && r.v[2] == c && r.v[3] == d;
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    struct philox4 z = {{0, 0, 0, 0}};
    struct philox4 r = philox4x32_10(z, 0, 0);
    KT_CHECK(eq4(r, 0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u),
             "zero vector: %08x %08x %08x %08x", r.v[0], r.v[1], r.v[2], r.v[3]);
    struct philox4 f = {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}};
    r = philox4x32_10(f, 0xffffffffu, 0xffffffffu);
    KT_CHECK(eq4(r, 0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu),
             "ones vector: %08x %08x %08x %08x", r.v[0], r.v[1], r.v[2], r.v[3]);
    struct philox4 p = {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}};
    r = philox4x32_10(p, 0xa4093822u, 0x299f31d0u);
    KT_CHECK(eq4(r, 0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u),
             "pi vector: %08x %08x %08x %08x", r.v[0], r.v[1], r.v[2], r.v[3]);

    /* Distinct elements, buffers and seeds give distinct words. */
    struct philox4 a = philox_element(42, 0, 7, PHILOX_DOMAIN_INPUT);
    struct philox4 b = philox_element(42, 1, 7, PHILOX_DOMAIN_INPUT);
    struct philox4 c = philox_element(43, 0, 7, PHILOX_DOMAIN_INPUT);
    struct philox4 d = philox_element(42, 0, 8, PHILOX_DOMAIN_INPUT);
    KT_CHECK(a.v[0] != b.v[0] && a.v[0] != c.v[0] && a.v[0] != d.v[0], "streams collide");
    struct philox4 a2 = philox_element(42, 0, 7, PHILOX_DOMAIN_INPUT);
    KT_CHECK(eq4(a2, a.v[0], a.v[1], a.v[2], a.v[3]), "not deterministic");

    /* Unit interval: never 0, at most 1. */
    KT_CHECK(philox_unit(0, 0) > 0.0, "unit(0,0) must be > 0");
    KT_CHECK(philox_unit(0xffffffffu, 0xffffffffu) <= 1.0, "unit(max) must be <= 1");

    /* Seed mixing: Cantor pairing a + (a+b)(a+b+1)/2. */
    KT_CHECK(philox_mix_seed(2146, 0) == 2146 + (2146ull * 2147ull) / 2, "mix(a,0)");
    KT_CHECK(philox_mix_seed(3, 4) == 3 + 28, "mix(3,4) = %llu", (unsigned long long)philox_mix_seed(3, 4));
    KT_CHECK(philox_mix_seed(3, 4) != philox_mix_seed(4, 3), "mix must not be symmetric");
    return kt_done("test_philox");
}
