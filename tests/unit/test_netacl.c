/*
 * test_netacl.c - unit tests for server/netacl.c.
 *
 * Parsing network lists (IPv4, IPv6, prefixes, mapped addresses, bad
 * items), matching, and the client address behind a reverse proxy: the
 * peer unless it is trusted, then the rightmost untrusted X-Forwarded-For
 * entry, never a spoofed entry to the left of an untrusted hop.
 */
#define KT_MAIN
#include "kt.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "netacl.h"

static struct sockaddr_in v4(const char *a)
{
    struct sockaddr_in s;
    memset(&s, 0, sizeof s);
    s.sin_family = AF_INET;
    inet_pton(AF_INET, a, &s.sin_addr);
    return s;
}

static struct sockaddr_in6 v6(const char *a)
{
    struct sockaddr_in6 s;
    memset(&s, 0, sizeof s);
    s.sin6_family = AF_INET6;
    inet_pton(AF_INET6, a, &s.sin6_addr);
    return s;
}

static void test_parse(void)
{
    struct netacl a;
    struct kj_err err;
    KT_CHECK(netacl_parse("", &a, &err) == 0 && a.n == 0, "empty list");
    KT_CHECK(netacl_parse(" 127.0.0.1, 10.0.0.0/8 ::1\tfd00::/8,", &a, &err) == 0 && a.n == 4,
             "four items, n=%d %s", a.n, err.msg);
    KT_CHECK(a.nets[1].bits == 8 && a.nets[2].bits == 128 && a.nets[0].bits == 32, "bits");
    KT_CHECK(netacl_parse("10.0.0.0/33", &a, &err) == KJ_EINVAL && strstr(err.msg, "0 to 32"),
             "v4 prefix > 32: %s", err.msg);
    KT_CHECK(netacl_parse("fd00::/129", &a, &err) == KJ_EINVAL, "v6 prefix > 128");
    KT_CHECK(netacl_parse("10.0.0.0/x", &a, &err) == KJ_EINVAL, "bad prefix");
    KT_CHECK(netacl_parse("10.0.0.0/", &a, &err) == KJ_EINVAL, "empty prefix");
    KT_CHECK(netacl_parse("localhost", &a, &err) == KJ_EINVAL && strstr(err.msg, "localhost"),
             "a name is refused, named: %s", err.msg);
    KT_CHECK(netacl_parse("1.2.3.4:80", &a, &err) == KJ_EINVAL, "a port is refused");
    KT_CHECK(netacl_parse("::ffff:10.0.0.0/104", &a, &err) == 0 && a.nets[0].family == AF_INET &&
             a.nets[0].bits == 8, "a mapped network is the IPv4 one");
    char many[2000] = "";
    for (int i = 0; i < NETACL_MAX + 1; i++)
        strcat(many, "1.1.1.1,");
    KT_CHECK(netacl_parse(many, &a, &err) == KJ_EINVAL, "too many networks");
}

static void test_match(void)
{
    struct netacl a;
    struct kj_err err;
    KT_CHECK(netacl_parse("10.1.0.0/16, 192.168.1.7, fd00::/8, 172.16.0.0/12", &a, &err) == 0,
             "parse");
    KT_CHECK(netacl_match_text(&a, "10.1.200.3"), "in /16");
    KT_CHECK(!netacl_match_text(&a, "10.2.0.1"), "outside /16");
    KT_CHECK(netacl_match_text(&a, "192.168.1.7") && !netacl_match_text(&a, "192.168.1.8"),
             "single address");
    KT_CHECK(netacl_match_text(&a, "172.31.255.255") && !netacl_match_text(&a, "172.32.0.0"),
             "/12 boundary");
    KT_CHECK(netacl_match_text(&a, "fd12:3456::1") && !netacl_match_text(&a, "fe80::1"), "v6");
    KT_CHECK(netacl_match_text(&a, "::ffff:10.1.2.3"), "a mapped address matches v4");
    KT_CHECK(!netacl_match_text(&a, "garbage") && !netacl_match_text(&a, ""), "garbage");
    struct sockaddr_in s = v4("10.1.9.9");
    struct sockaddr_in6 s6 = v6("::ffff:192.168.1.7");
    KT_CHECK(netacl_match_sa(&a, (struct sockaddr *)&s), "sockaddr v4");
    KT_CHECK(netacl_match_sa(&a, (struct sockaddr *)&s6), "sockaddr mapped v6");
    struct netacl empty;
    memset(&empty, 0, sizeof empty);
    KT_CHECK(!netacl_match_text(&empty, "10.1.0.1"), "the empty list matches nothing");
    KT_CHECK(netacl_parse("0.0.0.0/0", &a, &err) == 0 && netacl_match_text(&a, "8.8.8.8") &&
             !netacl_match_text(&a, "::1"), "0.0.0.0/0 is every IPv4 address");
}

static void test_client(void)
{
    struct netacl t;
    struct kj_err err;
    char out[NETACL_ADDR_MAX];
    struct sockaddr_in proxy = v4("127.0.0.1"), other = v4("203.0.113.9");
    struct sockaddr_in6 proxy6 = v6("::ffff:127.0.0.1");
    KT_CHECK(netacl_parse("127.0.0.1, 10.0.0.0/8", &t, &err) == 0, "parse");

    KT_CHECK(netacl_client(&t, (struct sockaddr *)&other, "1.2.3.4", out, sizeof out) == 0 &&
             strcmp(out, "203.0.113.9") == 0, "an untrusted peer's header is ignored: %s", out);
    KT_CHECK(netacl_client(&t, (struct sockaddr *)&proxy, NULL, out, sizeof out) == 0 &&
             strcmp(out, "127.0.0.1") == 0, "no header: the peer");
    KT_CHECK(netacl_client(&t, (struct sockaddr *)&proxy, "198.51.100.4", out, sizeof out) == 1 &&
             strcmp(out, "198.51.100.4") == 0, "one hop: %s", out);
    KT_CHECK(netacl_client(&t, (struct sockaddr *)&proxy6, "198.51.100.4", out, sizeof out) == 1 &&
             strcmp(out, "198.51.100.4") == 0, "a mapped peer counts as trusted: %s", out);
    KT_CHECK(netacl_client(&t, (struct sockaddr *)&proxy, "6.6.6.6, 198.51.100.4", out,
                           sizeof out) == 1 && strcmp(out, "198.51.100.4") == 0,
             "a spoofed entry left of the client is not taken: %s", out);
    KT_CHECK(netacl_client(&t, (struct sockaddr *)&proxy, "6.6.6.6,198.51.100.4 , 10.2.3.4", out,
                           sizeof out) == 1 && strcmp(out, "198.51.100.4") == 0,
             "trusted hops are skipped: %s", out);
    KT_CHECK(netacl_client(&t, (struct sockaddr *)&proxy, "10.9.9.9, 10.2.3.4", out,
                           sizeof out) == 1 && strcmp(out, "10.9.9.9") == 0,
             "all trusted: the leftmost: %s", out);
    KT_CHECK(netacl_client(&t, (struct sockaddr *)&proxy, "garbage", out, sizeof out) == 0 &&
             strcmp(out, "127.0.0.1") == 0, "a malformed header: the peer: %s", out);
    KT_CHECK(netacl_client(&t, (struct sockaddr *)&proxy, "6.6.6.6, bad, 10.2.3.4", out,
                           sizeof out) == 1 && strcmp(out, "10.2.3.4") == 0,
             "a malformed entry stops the walk at the hop to its right: %s", out);
    KT_CHECK(netacl_client(&t, (struct sockaddr *)&proxy, "", out, sizeof out) == 0 &&
             strcmp(out, "127.0.0.1") == 0, "an empty header: the peer");
    KT_CHECK(netacl_client(&t, (struct sockaddr *)&proxy, "2001:db8::1", out, sizeof out) == 1 &&
             strcmp(out, "2001:db8::1") == 0, "a v6 client: %s", out);
    struct netacl none;
    memset(&none, 0, sizeof none);
    KT_CHECK(netacl_client(&none, (struct sockaddr *)&proxy, "1.2.3.4", out, sizeof out) == 0 &&
             strcmp(out, "127.0.0.1") == 0, "no trusted proxies: the header is ignored");
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    KT_RUN(test_parse());
    KT_RUN(test_match());
    KT_RUN(test_client());
    return kt_done("test_netacl");
}
