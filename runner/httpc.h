/*
 * httpc.h - a minimal blocking HTTP/1.1 client over plain TCP.
 *
 * The runner's supervisor uses it to talk to kjudge-server: claim a job,
 * post progress events and post the result (docs/protocol.md). One request
 * per connection (Connection: close), no TLS, no redirects, no proxies; a
 * GPU host reaches the server over a trusted network or through a local
 * TLS-terminating tunnel. The caller gets the status and the whole body.
 */
#ifndef KJ_HTTPC_H
#define KJ_HTTPC_H

#include <stddef.h>

#include "kj_err.h"

#define HTTPC_MAX_BODY (64u * 1024 * 1024) /* response bodies above this fail with KJ_ELIMIT */
#define HTTPC_MAX_HEADERS (64 * 1024)      /* bytes of status line plus headers */

struct httpc_response {
    int status;      /* e.g. 200, 204, 409 */
    char *body;      /* owned; NUL-terminated (an extra byte past body_len);
                        "" when the response has no body; free with
                        httpc_response_free() */
    size_t body_len; /* bytes of body, excluding the NUL */
};

/* Send one request and read the whole response.
 *   base_url     "http://host[:port][/prefix]"; host is a name, an IPv4
 *                literal or an IPv6 literal in brackets; the port defaults
 *                to 80; a prefix is put before path. No user info.
 *   method       "GET", "POST", ...
 *   path         starts with '/', e.g. "/api/v1/runner/claim"
 *   bearer       token for "Authorization: Bearer", or NULL for none
 *   content_type Content-Type of body, or NULL for none
 *   body         body_len bytes to send (NULL if body_len is 0)
 *   timeout_ms   deadline for the whole exchange (connect, send, receive),
 *                enforced with poll(); name resolution through
 *                getaddrinfo() is not covered by it (use IP literals where
 *                that matters)
 * Any complete HTTP response, whatever its status, returns 0 with *out
 * filled (the caller judges out->status). Otherwise *out is left zeroed and
 * err says why, naming the method and URL (never the token):
 *   KJ_EINVAL  bad arguments, a malformed URL, or header text with control
 *              characters (no header injection);
 *   KJ_EIO     resolution, connect, send or receive failed, or the response
 *              is not valid HTTP/1.x;
 *   KJ_ETIMEOUT the deadline passed;
 *   KJ_ELIMIT  the body exceeds HTTPC_MAX_BODY or the headers HTTPC_MAX_HEADERS;
 *   KJ_ENOMEM  out of memory.
 * The body is framed by Content-Length, by chunked transfer encoding, or by
 * the server closing the connection. SIGPIPE is never raised. */
int httpc_request(const char *base_url, const char *method, const char *path,
                 const char *bearer, const char *content_type, const char *body,
                 size_t body_len, int timeout_ms, struct httpc_response *out,
                 struct kj_err *err);

/* Free the body and zero *r. Accepts NULL and zeroed responses. */
void httpc_response_free(struct httpc_response *r);

#endif
