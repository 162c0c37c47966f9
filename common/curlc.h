/*
 * curlc.h - a small HTTP(S) client on libcurl: JSON GETs and POSTs,
 * multipart uploads and Server-Sent Events streams, with caps and timeouts.
 *
 * The command-line client (cli/kjc.c) and the runner (runner/serve.c) talk
 * to kjudge-server through it; it depends only on libcurl and kj_err. The
 * server never links it (the Makefile keeps it out of bin/kjudge-server).
 * One struct curlc per thread: it keeps one libcurl handle, so consecutive
 * requests reuse the connection. TLS is verified against the system's CA
 * bundle (plus an optional CA file); proxies come from the environment as
 * libcurl reads them (http_proxy, https_proxy, no_proxy); redirects are
 * not followed; only http and https URLs are accepted; the bearer token is
 * sent only as a header and never appears in an error message.
 *
 * Every request function fills a caller-owned struct curlc_resp (freed
 * with curlc_resp_free) and returns 0 when a complete HTTP answer arrived,
 * whatever its status, or a negative KJ_E* with err naming the method and
 * URL and out->fail saying what kind of failure it was:
 *   KJ_EIO       CURLC_FAIL_RESOLVE, _CONNECT, _TLS, _IO
 *   KJ_ETIMEOUT  CURLC_FAIL_TIMEOUT (connect, whole request, or an idle stream)
 *   KJ_ECONFLICT CURLC_FAIL_ABORTED (the client's abort flag was set)
 *   KJ_ELIMIT    CURLC_FAIL_TOO_LARGE (the body passed max_body)
 *   KJ_EINVAL    a malformed URL, path or header text (nothing was sent)
 *   KJ_ENOMEM    out of memory
 */
#ifndef KJ_CURLC_H
#define KJ_CURLC_H

#include <signal.h>
#include <stddef.h>
#include "kj_err.h"

#define CURLC_DEFAULT_CONNECT_MS 10000L
#define CURLC_DEFAULT_MAX_BODY (16u * 1024 * 1024)
#define CURLC_MAX_EVENT_BYTES (1024u * 1024)  /* one SSE event's data */

struct curlc;

struct curlc_opts {
    const char *base_url;   /* "http[s]://host[:port][/prefix]"; a trailing '/' is dropped */
    const char *bearer;     /* token for "Authorization: Bearer", or NULL */
    long connect_timeout_ms;/* 0: CURLC_DEFAULT_CONNECT_MS */
    long timeout_ms;        /* whole request (not streams); 0: none */
    size_t max_body;        /* response body cap; 0: CURLC_DEFAULT_MAX_BODY */
    const char *ca_file;    /* PEM bundle of extra trusted CAs, or NULL */
    const char *user_agent; /* or NULL for "kjudge-curlc" */
    const volatile sig_atomic_t *abort_flag; /* borrowed, or NULL: a request in flight
                                                is dropped (CURLC_FAIL_ABORTED) within
                                                about a second of *abort_flag turning
                                                non-zero (the runner's long-poll claim),
                                                unless its answer has begun (never cut
                                                in the middle) or it has run less than
                                                abort_after_ms */
    long abort_after_ms;    /* with abort_flag: how long a request may wait for the
                               start of its answer once the flag is set, counted from
                               the request's start; 0: not at all */
};

enum curlc_fail {
    CURLC_FAIL_NONE = 0,
    CURLC_FAIL_RESOLVE,     /* the host name does not resolve */
    CURLC_FAIL_CONNECT,     /* nothing listens there, or it is unreachable */
    CURLC_FAIL_TLS,         /* handshake failed or the certificate was not trusted */
    CURLC_FAIL_TIMEOUT,
    CURLC_FAIL_TOO_LARGE,
    CURLC_FAIL_IO,          /* anything else on the wire (reset, not HTTP, ...) */
    CURLC_FAIL_ABORTED      /* opts.abort_flag was set while the request ran */
};

struct curlc_resp {
    long status;               /* HTTP status, 0 when none arrived */
    char *body;                /* owned, NUL-terminated ("" when empty); curlc_resp_free() */
    size_t len;
    char content_type[128];
    char content_disposition[256];
    int retry_after;           /* Retry-After in seconds, -1 when absent */
    enum curlc_fail fail;      /* why the request failed; NONE on success */
};

/* One field of a multipart/form-data body. */
struct curlc_part {
    const char *name;
    const char *data;          /* borrowed for the call */
    size_t len;
    const char *filename;      /* non-NULL: a file part with this file name */
};

/* Called for each SSE event (id "" when the event had none). Return 0 to
 * go on, non-zero to close the stream (the request then returns 0). */
typedef int (*curlc_event_fn)(void *ctx, const char *id, const char *event, const char *data);

/* libcurl's global setup and teardown: once per process, before any thread starts. */
int curlc_init(struct kj_err *err);
void curlc_cleanup(void);

/* A client for o (strings are copied). *out is freed with curlc_free(). */
int curlc_new(const struct curlc_opts *o, struct curlc **out, struct kj_err *err);
void curlc_free(struct curlc *c);
/* The base URL as given, without a trailing '/'. Borrowed from c. */
const char *curlc_base(const struct curlc *c);
/* Where c keeps its "Authorization: Bearer TOKEN" text (*len bytes), so
 * that a forked child can wipe its copy (runner/secret.h); NULL when c has
 * no token. Borrowed from c. libcurl's own copies (the header list of a
 * request, its send buffer) live only while a request runs. */
char *curlc_auth(struct curlc *c, size_t *len);

/* GET base_url + path (path starts with '/', query included). */
int curlc_get(struct curlc *c, const char *path, struct curlc_resp *out, struct kj_err *err);
/* POST body (len bytes, may be 0) with content_type (e.g. "application/json"; NULL: none). */
int curlc_post(struct curlc *c, const char *path, const char *content_type, const char *body,
               size_t len, struct curlc_resp *out, struct kj_err *err);
/* POST a multipart/form-data body of n parts. */
int curlc_post_form(struct curlc *c, const char *path, const struct curlc_part *parts, int n,
                    struct curlc_resp *out, struct kj_err *err);
/* GET an event stream (Accept: text/event-stream; Last-Event-ID when
 * last_id is not NULL) and call fn for each event until the server closes
 * it or fn says stop. idle_ms: fail with CURLC_FAIL_TIMEOUT after this
 * long without a byte (0: none). An answer that is not a 200 event stream
 * is collected into out->body as for curlc_get, and fn is not called. */
int curlc_sse(struct curlc *c, const char *path, const char *last_id, long idle_ms,
              curlc_event_fn fn, void *ctx, struct curlc_resp *out, struct kj_err *err);

/* Wipe and free r's body and zero r; NULL and zeroed responses are fine.
 * (Bodies are wiped when they grow too; libcurl's own receive buffer is
 * not ours to wipe.) */
void curlc_resp_free(struct curlc_resp *r);

/* The Server-Sent Events parser curlc_sse() feeds (exposed for its tests).
 * Lines end in LF, CRLF or CR; "data:" lines are joined with '\n'; a blank
 * line dispatches an event that had data; ':' lines are comments. A line
 * or an event's data over CURLC_MAX_EVENT_BYTES, or an id or event name
 * over 63 bytes, is KJ_ELIMIT. */
struct curlc_ssep {
    char *line;             /* owned: the line being read */
    size_t len, cap;
    char *data;             /* owned: the event's data so far */
    size_t dlen, dcap;
    int has_data;
    char id[64];            /* the last id seen (kept across events, as the spec says) */
    char event[64];         /* "" = "message" */
    int after_cr;           /* the previous byte ended a line with CR */
};

void curlc_ssep_init(struct curlc_ssep *p);
/* Free what p owns; p can be initialized again. */
void curlc_ssep_free(struct curlc_ssep *p);
/* Feed n bytes: 0 to go on, 1 when fn asked to stop, or KJ_ELIMIT / KJ_ENOMEM. */
int curlc_ssep_feed(struct curlc_ssep *p, const char *buf, size_t n, curlc_event_fn fn,
                    void *ctx, struct kj_err *err);

#endif
