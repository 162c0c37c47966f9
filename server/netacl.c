/*
 * netacl.c - IP network lists (trusted_proxies, metrics_allow) and the
 * client address of a request behind a reverse proxy (see netacl.h).
 *
 * Called by main.c (parse, at `serve`), http_daemon.c (netacl_client, once per
 * request) and metrics.c (netacl_match_text). Pure functions over caller
 * memory; nothing is allocated.
 */
#include "netacl.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An address as family + 16 bytes, IPv4-mapped IPv6 folded to IPv4. */
struct ipaddr {
    int family;
    uint8_t b[16];
};

static const uint8_t v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

static void ip_fold(struct ipaddr *ip)
{
    if (ip->family == AF_INET6 && memcmp(ip->b, v4_mapped, sizeof v4_mapped) == 0) {
        memmove(ip->b, ip->b + 12, 4);
        memset(ip->b + 4, 0, 12);
        ip->family = AF_INET;
    }
}

/* 1 when text is an IPv4 or IPv6 address (no brackets, no port). */
static int ip_parse(const char *text, struct ipaddr *ip)
{
    memset(ip, 0, sizeof *ip);
    if (inet_pton(AF_INET, text, ip->b) == 1) {
        ip->family = AF_INET;
        return 1;
    }
    if (inet_pton(AF_INET6, text, ip->b) == 1) {
        ip->family = AF_INET6;
        ip_fold(ip);
        return 1;
    }
    return 0;
}

static int ip_from_sa(const struct sockaddr *sa, struct ipaddr *ip)
{
    memset(ip, 0, sizeof *ip);
    if (sa == NULL)
        return 0;
    if (sa->sa_family == AF_INET) {
        ip->family = AF_INET;
        memcpy(ip->b, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
        return 1;
    }
    if (sa->sa_family == AF_INET6) {
        ip->family = AF_INET6;
        memcpy(ip->b, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
        ip_fold(ip);
        return 1;
    }
    return 0;
}

static void ip_text(const struct ipaddr *ip, char *out, size_t outsz)
{
    char buf[INET6_ADDRSTRLEN];
    if (inet_ntop(ip->family, ip->b, buf, sizeof buf) == NULL)
        snprintf(buf, sizeof buf, "?");
    snprintf(out, outsz, "%s", buf);
}

static int net_contains(const struct netacl_net *n, const struct ipaddr *ip)
{
    int full = n->bits / 8, rest = n->bits % 8;
    if (n->family != ip->family)
        return 0;
    if (memcmp(n->addr, ip->b, (size_t)full) != 0)
        return 0;
    if (rest == 0)
        return 1;
    uint8_t mask = (uint8_t)(0xff << (8 - rest));
    return (n->addr[full] & mask) == (ip->b[full] & mask);
}

static int acl_contains(const struct netacl *a, const struct ipaddr *ip)
{
    for (int i = 0; a != NULL && i < a->n; i++)
        if (net_contains(&a->nets[i], ip))
            return 1;
    return 0;
}

/* One "ADDR[/BITS]" item into n. */
static int net_parse(const char *item, struct netacl_net *n, struct kj_err *err)
{
    char addr[64];
    const char *slash = strchr(item, '/');
    size_t alen = slash != NULL ? (size_t)(slash - item) : strlen(item);
    struct ipaddr ip;
    int max;
    if (alen == 0 || alen >= sizeof addr)
        return KJ_FAIL(err, KJ_EINVAL, "'%.64s' is not an IP address or network", item);
    memcpy(addr, item, alen);
    addr[alen] = '\0';
    if (!ip_parse(addr, &ip))
        return KJ_FAIL(err, KJ_EINVAL, "'%.64s' is not an IP address or network "
                       "(e.g. 10.0.0.0/8, ::1)", item);
    max = ip.family == AF_INET ? 32 : 128;
    n->bits = max;
    if (slash != NULL) {
        char *end;
        long bits = strtol(slash + 1, &end, 10);
        if (slash[1] == '\0' || !isdigit((unsigned char)slash[1]) || *end != '\0' ||
            bits < 0 || bits > 128)
            return KJ_FAIL(err, KJ_EINVAL, "'%.64s': the prefix length must be a number", item);
        /* A mapped network (::ffff:10.0.0.0/104) is the IPv4 one (/8). */
        if (ip.family == AF_INET && strchr(addr, ':') != NULL)
            bits -= 96;
        if (bits < 0 || bits > max)
            return KJ_FAIL(err, KJ_EINVAL, "'%.64s': the prefix length must be 0 to %d", item,
                           max);
        n->bits = (int)bits;
    }
    n->family = ip.family;
    memcpy(n->addr, ip.b, sizeof n->addr);
    return 0;
}

int netacl_parse(const char *text, struct netacl *out, struct kj_err *err)
{
    const char *p = text;
    memset(out, 0, sizeof *out);
    while (*p != '\0') {
        char item[80];
        size_t n;
        int rc;
        p += strspn(p, ", \t");
        n = strcspn(p, ", \t");
        if (n == 0)
            break;
        if (n >= sizeof item)
            return KJ_FAIL(err, KJ_EINVAL, "'%.64s...' is not an IP address or network", p);
        if (out->n >= NETACL_MAX)
            return KJ_FAIL(err, KJ_EINVAL, "more than %d networks in one list", NETACL_MAX);
        memcpy(item, p, n);
        item[n] = '\0';
        if ((rc = net_parse(item, &out->nets[out->n], err)) != 0)
            return rc;
        out->n++;
        p += n;
    }
    return 0;
}

int netacl_match_text(const struct netacl *a, const char *addr)
{
    struct ipaddr ip;
    return ip_parse(addr, &ip) && acl_contains(a, &ip);
}

int netacl_match_sa(const struct netacl *a, const struct sockaddr *sa)
{
    struct ipaddr ip;
    return ip_from_sa(sa, &ip) && acl_contains(a, &ip);
}

void netacl_sa_text(const struct sockaddr *sa, char *out, size_t outsz)
{
    struct ipaddr ip;
    if (!ip_from_sa(sa, &ip)) {
        snprintf(out, outsz, "?");
        return;
    }
    ip_text(&ip, out, outsz);
}

/* The entry of xff that ends just before end, trimmed, into
 * item; returns where it starts (the comma before it, or xff). */
static const char *xff_prev(const char *xff, const char *end, char *item, size_t itemsz)
{
    const char *start = end;
    while (start > xff && start[-1] != ',')
        start--;
    const char *a = start, *b = end;
    while (a < b && (*a == ' ' || *a == '\t'))
        a++;
    while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
        b--;
    size_t n = (size_t)(b - a);
    if (n >= itemsz)
        n = 0; /* too long to be an address: treated as malformed */
    memcpy(item, a, n);
    item[n] = '\0';
    return start;
}

int netacl_client(const struct netacl *trusted, const struct sockaddr *peer, const char *xff,
                  char *out, size_t outsz)
{
    struct ipaddr ip, last;
    const char *end;
    char item[64];
    int found = 0;

    netacl_sa_text(peer, out, outsz);
    if (xff == NULL || trusted == NULL || trusted->n == 0 || !netacl_match_sa(trusted, peer) ||
        strlen(xff) > NETACL_MAX_XFF)
        return 0;
    end = xff + strlen(xff);
    for (;;) {
        const char *start = xff_prev(xff, end, item, sizeof item);
        if (!ip_parse(item, &ip))
            break;
        last = ip;
        found = 1;
        if (!acl_contains(trusted, &ip) || start == xff)
            break;
        end = start - 1; /* the comma before this entry */
    }
    if (!found)
        return 0;
    ip_text(&last, out, outsz);
    return 1;
}
