/*
 * netacl.h - lists of IP networks, and the client address of a request.
 *
 * main.c parses the config keys trusted_proxies and metrics_allow
 * ("127.0.0.1, 10.0.0.0/8, ::1, fd00::/8") into a struct netacl at `serve`;
 * http_daemon.c asks netacl_client() for each request's client address (the peer,
 * or the address a trusted proxy forwarded in X-Forwarded-For) and
 * metrics.c matches that address against metrics_allow. IPv4-mapped IPv6
 * addresses (::ffff:a.b.c.d) count as the IPv4 address.
 */
#ifndef KJ_NETACL_H
#define KJ_NETACL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include "kj_err.h"

#define NETACL_MAX 64        /* networks in one list */
#define NETACL_ADDR_MAX 48   /* an address as text, NUL included (INET6_ADDRSTRLEN = 46) */
#define NETACL_MAX_XFF 2048  /* longer X-Forwarded-For headers are not read */

struct netacl_net {
    int family;              /* AF_INET or AF_INET6 */
    uint8_t addr[16];        /* network address (4 bytes used for AF_INET) */
    int bits;                /* prefix length */
};

/* A list of networks; all zero = the empty list, which matches nothing. */
struct netacl {
    int n;
    struct netacl_net nets[NETACL_MAX];
};

/* Parse "ADDR[/BITS], ..." (commas and/or spaces between items; "" is the
 * empty list) into out. KJ_EINVAL names the item that is not an address,
 * a prefix too long for its family, or a list over NETACL_MAX. */
int netacl_parse(const char *text, struct netacl *out, struct kj_err *err);

/* 1 when the address (text, or a socket address) is in one of a's networks. */
int netacl_match_text(const struct netacl *a, const char *addr);
int netacl_match_sa(const struct netacl *a, const struct sockaddr *sa);

/* The socket address sa as text ("127.0.0.1", "::1"; "?" for other families). */
void netacl_sa_text(const struct sockaddr *sa, char *out, size_t outsz);

/* The request's client address into out (size >= NETACL_ADDR_MAX): the
 * peer's, unless the peer is in trusted and xff (the X-Forwarded-For
 * header, may be NULL) names addresses: then the rightmost address of xff
 * that is not itself a trusted proxy (the leftmost one when all are
 * trusted). A malformed entry stops the walk at the address to its right.
 * Returns 1 when out came from xff, 0 when it is the peer's. */
int netacl_client(const struct netacl *trusted, const struct sockaddr *peer, const char *xff,
                  char *out, size_t outsz);

#endif
