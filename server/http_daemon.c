/*
 * http_daemon.c - the libmicrohttpd daemon: per-request state from the
 * first callback to the completion callback, routing (http_route.c),
 * authentication, body collection with limits, and request logs.
 *
 * The serve set-up calls http_start()/http_stop(). For every request MHD
 * calls on_request() several times: the first call creates a struct
 * http_req, routes and authenticates it; body chunks are collected (JSON
 * routes) or fed to upload.c (multipart routes), never past the route's
 * limit; the last call runs the route's handler (api_*.c, web.c), which
 * answers through http.c. on_completed() frees the request and logs
 * "method path status ms". Errors found at the first call are answered at
 * the last one, after any body was drained (req_reject), so connections
 * stay alive and clients read the answer.
 *
 * Defences (docs/operator.md "Hostile clients"): MHD's per-address connection limit;
 * guard.c's deadlines for a request's head and body; checks of the head
 * that MHD leaves to us (req_check_head: its size, a NUL in the URL,
 * folded or malformed header lines, conflicting Content-Length or
 * Transfer-Encoding), answered in JSON and
 * closing the connection; MHD's memory per connection raised so that
 * over-long heads reach those checks instead of MHD's HTML error pages.
 */
#include "http_daemon.h"
#include "auth.h"
#include "boards.h"
#include "http.h"
#include "http_route.h"
#include "metrics.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* Query arguments                                                     */
/* ------------------------------------------------------------------ */

/* The query arguments seen so far, to find one given twice. */
struct query_scan {
    const char *keys[HTTP_MAX_QUERY_ARGS]; /* borrowed from MHD for the request */
    int n;
    int too_many;
    const char *dup;                       /* the first key given twice, or NULL */
};

static enum MHD_Result query_key(void *cls, enum MHD_ValueKind kind, const char *key,
                                 const char *value)
{
    struct query_scan *q = cls;
    (void)kind, (void)value;
    if (key == NULL)
        return MHD_YES;
    for (int i = 0; i < q->n; i++)
        if (strcmp(q->keys[i], key) == 0) {
            q->dup = key;
            return MHD_NO;
        }
    if (q->n == HTTP_MAX_QUERY_ARGS) {
        q->too_many = 1;
        return MHD_NO;
    }
    q->keys[q->n++] = key;
    return MHD_YES;
}

/* A query argument given twice (?timeout=1&timeout=600) would be read as
 * its first value only: refuse it, and more arguments than any route reads. */
static int query_bad(struct http_req *r, char *why, size_t whysz)
{
    struct query_scan q = {.n = 0};
    char safe[40];
    MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, query_key, &q);
    if (q.dup != NULL) {
        kj_printable(safe, sizeof safe, q.dup, 32);
        snprintf(why, whysz, "the query argument '%s' is given more than once", safe);
        return 1;
    }
    if (q.too_many) {
        snprintf(why, whysz, "more than %d query arguments", HTTP_MAX_QUERY_ARGS);
        return 1;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Request life                                                        */
/* ------------------------------------------------------------------ */

/* How much of a body is read before the connection is cut: the route's
 * own limit (an artifact's 64 MiB is more than KJ_MAX_DRAIN_BYTES) plus
 * KJ_MAX_DRAIN_BYTES, so that a body over its limit by less than that is
 * read to its end and answered 413. */
static uint64_t drain_limit(const struct http_req *r)
{
    return (uint64_t)KJ_MAX_DRAIN_BYTES + (r->route != NULL ? r->route->max_body : 0);
}

/* Must an error found at the first callback be sent at once? Only when the
 * client waits for "100 Continue" (answering stops it before it sends the
 * body) or declares a body too large to drain. Otherwise the answer waits
 * for the last callback: MHD keeps the connection alive only for answers
 * queued after the whole request was read, and a client still writing a
 * body would lose an early answer when the connection closes under it. */
static int answer_now(struct http_req *r)
{
    const char *cl = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Content-Length");
    const char *ex = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Expect");
    if (ex != NULL && strcasecmp(ex, "100-continue") == 0)
        return 1;
    return cl != NULL && strtoull(cl, NULL, 10) > drain_limit(r);
}

/* Answer an error now or after the body is drained (see answer_now). */
static enum MHD_Result req_reject(struct http_req *r, unsigned status, const char *code,
                                  const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static enum MHD_Result req_reject(struct http_req *r, unsigned status, const char *code,
                                  const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->deferred_msg, sizeof r->deferred_msg, fmt, ap);
    va_end(ap);
    if (r->phase == HTTP_PHASE_NEW && !answer_now(r)) {
        r->deferred_status = status;
        snprintf(r->deferred_code, sizeof r->deferred_code, "%s", code);
        r->phase = HTTP_PHASE_RECEIVING;
        return MHD_YES;
    }
    return http_error(r, status, code, "%s", r->deferred_msg);
}

/* Answer at once and close the connection: the request's framing cannot
 * be trusted, so nothing after it on the connection is read. */
static enum MHD_Result req_refuse(struct http_req *r, unsigned status, const char *code,
                                  const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static enum MHD_Result req_refuse(struct http_req *r, unsigned status, const char *code,
                                  const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->deferred_msg, sizeof r->deferred_msg, fmt, ap);
    va_end(ap);
    r->close_conn = 1;
    return http_error(r, status, code, "%s", r->deferred_msg);
}

/* How often the headers that frame a body were sent, and the first header
 * line that is malformed (header_line_bad). */
struct head_framing {
    int content_length, transfer_encoding;
    uintptr_t lo, hi;        /* where the head's lines lie in MHD's buffer (see header_line_bad) */
    const char *bad;         /* NULL, or why a header line is refused */
};

/* Is c a character of an HTTP token (RFC 9110 5.6.2), a header's name? */
static int http_tchar(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* A header line that must be refused (RFC 9112 5.1, 5.2), else NULL:
 *  - a name that is not a token: white space before the colon
 *    ("Transfer-Encoding : chunked") or a line starting with white space
 *    right after the request line;
 *  - a line folded onto the next ones (obs-fold: "X: a\r\n b"). MHD 0.9.75
 *    takes such a continuation as part of the header's NAME
 *    ("Transfer-Encoding:\r\n chunked" becomes a header
 *    "Transfer-Encodingchunked" with an empty value), copied to a new block
 *    past its read buffer, while the value stays in place in the head. Any
 *    other header has its name in the head just before its value. So a value
 *    inside the head [lo, hi) whose name is not inside [lo, value) was
 *    folded. Only addresses are compared; a value elsewhere (another MHD,
 *    which unfolds in place) is not judged. */
static const char *header_line_bad(const struct head_framing *f, const char *key,
                                   const char *value)
{
    uintptr_t k = (uintptr_t)key, v = (uintptr_t)value;
    if (f->lo != 0 && v >= f->lo && v < f->hi && (k < f->lo || k >= v))
        return "a header line is folded onto the next one (obs-fold); send each header on one line";
    if (key[0] == '\0')
        return "a header has an empty name";
    for (const char *c = key; *c != '\0'; c++)
        if (!http_tchar((unsigned char)*c))
            return "a header name holds white space or a character not allowed in it";
    return NULL;
}

static enum MHD_Result count_framing(void *cls, enum MHD_ValueKind kind, const char *key,
                                     const char *value)
{
    struct head_framing *f = cls;
    (void)kind;
    if (key != NULL && value != NULL && f->bad == NULL)
        f->bad = header_line_bad(f, key, value);
    if (key != NULL && strcasecmp(key, "Content-Length") == 0)
        f->content_length++;
    else if (key != NULL && strcasecmp(key, "Transfer-Encoding") == 0)
        f->transfer_encoding++;
    return MHD_YES;
}

/* Did the request line hold a NUL byte inside the URL? MHD 0.9.75 splits
 * "METHOD URL VERSION" in place: the URL seen by the URI log callback
 * (on_uri) ends at the NUL written over the space before the version, and
 * the version given to on_request starts right after it. A version further
 * on means the URL was cut short by a NUL of its own. Only addresses are
 * compared; a version elsewhere (another MHD) is not judged. */
static int uri_raw_nul(const struct http_req *r, const char *version)
{
    uintptr_t v = (uintptr_t)version, end = r->raw_uri + r->raw_uri_len + 1;
    return r->raw_uri != 0 && version != NULL && v > end &&
           v - r->raw_uri <= (uintptr_t)KJ_HTTP_CONN_MEMORY;
}

/* Checks of the request's head that MHD does not make. Answers at once,
 * closing the connection, and returns 1 on a problem. */
static int req_check_head(struct http_req *r, const char *version, enum MHD_Result *res)
{
    const union MHD_ConnectionInfo *hs =
        MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    struct head_framing f = {0, 0, 0, 0, NULL};
    const char *te;
    if (r->raw_uri != 0 && hs != NULL) { /* the head: from the URL on, at most header_size bytes */
        f.lo = r->raw_uri;
        f.hi = r->raw_uri + hs->header_size;
    }
    MHD_get_connection_values(r->conn, MHD_HEADER_KIND, count_framing, &f);
    if (r->raw_uri_len > KJ_HTTP_MAX_URI_BYTES)
        *res = req_refuse(r, MHD_HTTP_URI_TOO_LONG, "uri_too_long",
                          "the URL is longer than %d bytes", KJ_HTTP_MAX_URI_BYTES);
    else if (hs != NULL && hs->header_size > KJ_HTTP_MAX_HEAD_BYTES)
        *res = req_refuse(r, MHD_HTTP_REQUEST_HEADER_FIELDS_TOO_LARGE, "headers_too_large",
                          "the request line and headers are longer than %d bytes",
                          KJ_HTTP_MAX_HEAD_BYTES);
    else if (r->uri_pct00 || uri_raw_nul(r, version))
        *res = req_refuse(r, MHD_HTTP_BAD_REQUEST, "bad_request",
                          "the URL contains a NUL byte (or %%00)");
    else if (f.bad != NULL)
        *res = req_refuse(r, MHD_HTTP_BAD_REQUEST, "bad_request", "%s", f.bad);
    else if (f.content_length > 1 || f.transfer_encoding > 1)
        *res = req_refuse(r, MHD_HTTP_BAD_REQUEST, "bad_request",
                          "%s is sent more than once",
                          f.content_length > 1 ? "Content-Length" : "Transfer-Encoding");
    else if (f.content_length > 0 && f.transfer_encoding > 0)
        *res = req_refuse(r, MHD_HTTP_BAD_REQUEST, "bad_request",
                          "send Content-Length or Transfer-Encoding, not both");
    else if (f.transfer_encoding > 0 &&
             ((te = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND,
                                                "Transfer-Encoding")) == NULL ||
              strcasecmp(te, "chunked") != 0))
        *res = req_refuse(r, MHD_HTTP_NOT_IMPLEMENTED, "not_implemented",
                          "the only Transfer-Encoding understood is chunked");
    else
        return 0;
    return 1;
}

/* A token sent to a public route: ignored unless it belongs to a banned
 * user, who is refused everywhere. Returns 1 when it answered. */
static int req_auth_public(struct http_req *r, const char *h, enum MHD_Result *res)
{
    char token[AUTH_MAX_TOKEN + 1];
    struct db_user u;
    struct kj_err err;
    int rc;
    if (h == NULL || auth_parse_bearer(h, token, sizeof token) != 0)
        return 0;
    kj_err_clear(&err);
    rc = auth_lookup(r->srv->db, token, &u, &err);
    memset(token, 0, sizeof token);
    if (rc != 0 || !u.banned)
        return 0;
    *res = req_reject(r, MHD_HTTP_FORBIDDEN, "banned", "this account is banned");
    return 1;
}

/* Is the authenticated user's role allowed on the route? Returns 1 when it answered. */
static int req_role(struct http_req *r, enum http_auth need, enum MHD_Result *res)
{
    int is_runner = strcmp(r->user.role, "runner") == 0;
    if (r->user.banned) {
        *res = req_reject(r, MHD_HTTP_FORBIDDEN, "banned", "this account is banned");
        return 1;
    }
    if (need == HTTP_AUTH_USER && is_runner) {
        *res = req_reject(r, MHD_HTTP_FORBIDDEN, "forbidden", "a runner token cannot do this; use a user token");
        return 1;
    }
    if (need == HTTP_AUTH_RUNNER && !is_runner) {
        *res = req_reject(r, MHD_HTTP_FORBIDDEN, "forbidden", "only runner tokens may use the runner endpoints");
        return 1;
    }
    if (need == HTTP_AUTH_ADMIN && strcmp(r->user.role, "admin") != 0) {
        *res = req_reject(r, MHD_HTTP_FORBIDDEN, "forbidden", "only an admin may do this");
        return 1;
    }
    return 0;
}

/* popcorn-cli's routes: the token is the whole X-Popcorn-Cli-Id value.
 * Into tok (size toksz); 0, or 1 when it answered 401. */
static int req_cli_id(struct http_req *r, char *tok, size_t toksz, enum MHD_Result *res)
{
    const char *h = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "X-Popcorn-Cli-Id");
    size_t n = h != NULL ? strlen(h) : 0, ok = 0;
    while (ok < n && (unsigned char)h[ok] > ' ' && (unsigned char)h[ok] < 0x7f)
        ok++;
    if (n == 0)
        *res = req_reject(r, MHD_HTTP_UNAUTHORIZED, "missing_cli_id",
                          "send \"X-Popcorn-Cli-Id: TOKEN\" (cli_id: TOKEN in ~/.popcorn.yaml; "
                          "the organizers give you the TOKEN)");
    else if (n >= toksz || ok != n)
        *res = req_reject(r, MHD_HTTP_UNAUTHORIZED, "invalid_token", "the cli id is not valid");
    else {
        memcpy(tok, h, n + 1);
        return 0;
    }
    return 1;
}

/* Authenticate r for its route. Returns 0 to go on, 1 when it answered. */
static int req_auth(struct http_req *r, enum MHD_Result *res)
{
    const char *h = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Authorization");
    enum http_auth need = r->route->auth;
    char token[AUTH_MAX_TOKEN + 1];
    struct kj_err err;
    int rc;

    if (need == HTTP_AUTH_NONE)
        return req_auth_public(r, h, res);
    if (need == HTTP_AUTH_CLI_ID) {
        if (req_cli_id(r, token, sizeof token, res))
            return 1;
        need = HTTP_AUTH_USER;
    } else if (h == NULL && need == HTTP_AUTH_OPTIONAL) {
        return 0;
    } else if (h == NULL) {
        *res = req_reject(r, MHD_HTTP_UNAUTHORIZED, "missing_token",
                          "send \"Authorization: Bearer TOKEN\"");
        return 1;
    } else if (auth_parse_bearer(h, token, sizeof token) != 0) {
        *res = req_reject(r, MHD_HTTP_UNAUTHORIZED, "invalid_token",
                          "the Authorization header must be \"Bearer TOKEN\"");
        return 1;
    }
    kj_err_clear(&err);
    rc = auth_lookup(r->srv->db, token, &r->user, &err);
    memset(token, 0, sizeof token);
    if (rc == KJ_ENOTFOUND) {
        *res = req_reject(r, MHD_HTTP_UNAUTHORIZED, "invalid_token", "the token is not valid");
        return 1;
    }
    if (rc != 0) {
        *res = http_internal(r, &err);
        return 1;
    }
    r->authed = 1;
    return req_role(r, need, res);
}

/* Prepare body collection: declared size, content type, post processor. */
static enum MHD_Result req_body_setup(struct http_req *r)
{
    const struct http_route *rt = r->route;
    const char *cl = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Content-Length");
    const char *ct = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Content-Type");
    struct kj_err err;

    if (cl != NULL && strtoull(cl, NULL, 10) > rt->max_body)
        return req_reject(r, MHD_HTTP_CONTENT_TOO_LARGE, "too_large",
                          "the request body is larger than the limit of %zu bytes", rt->max_body);
    if (rt->body == HTTP_BODY_JSON) {
        if (ct != NULL && strncasecmp(ct, "application/json", 16) != 0)
            return req_reject(r, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type",
                              "the body must be application/json");
        r->phase = HTTP_PHASE_RECEIVING;
        return MHD_YES;
    }
    if (rt->body == HTTP_BODY_OCTETS) {
        if (ct == NULL || strncasecmp(ct, "application/octet-stream", 24) != 0)
            return req_reject(r, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type",
                              "the body must be application/octet-stream");
        r->phase = HTTP_PHASE_RECEIVING;
        return MHD_YES;
    }
    if (ct == NULL || strncasecmp(ct, "multipart/form-data", 19) != 0)
        return req_reject(r, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type",
                          "the body must be multipart/form-data (curl -F ...)");
    kj_err_clear(&err);
    if (upload_new(r->conn, KJ_MAX_SOURCE_BYTES, &r->upload, &err) != 0)
        return err.code == KJ_ENOMEM ? http_internal(r, &err)
               : req_reject(r, MHD_HTTP_BAD_REQUEST, "bad_multipart", "%s", err.msg);
    r->phase = HTTP_PHASE_RECEIVING;
    return MHD_YES;
}

/* The first callback: check the head, route, authenticate, set up the
 * body. The handler runs at the last callback (req_run), once the request
 * is complete. */
static enum MHD_Result req_begin(struct http_req *r, const char *version)
{
    enum MHD_Result res;
    const char *cl = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Content-Length");
    int has_body = (cl != NULL && strtoull(cl, NULL, 10) > 0) ||
                   MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Transfer-Encoding") != NULL;
    char why[96];
    unsigned st;
    guard_head_done(r->srv->guard, r->gc, has_body);
    if (req_check_head(r, version, &res))
        return res;
    if (r->path_too_long)
        return req_reject(r, MHD_HTTP_URI_TOO_LONG, "uri_too_long", "the path is too long");
    st = http_route_find(r, r->allow, sizeof r->allow);
    if (st == MHD_HTTP_NOT_FOUND)
        return req_reject(r, st, "not_found", "no such resource: %s", r->path);
    if (st == MHD_HTTP_METHOD_NOT_ALLOWED) {
        res = req_reject(r, st, "method_not_allowed", "%s is not allowed here (allowed: %s)",
                         r->method, r->allow);
        return res;
    }
    if (req_auth(r, &res))
        return res;
    if (query_bad(r, why, sizeof why))
        return req_reject(r, MHD_HTTP_BAD_REQUEST, "bad_query", "%s", why);
    if (r->route->body != HTTP_BODY_NONE)
        return req_body_setup(r);
    r->phase = HTTP_PHASE_RECEIVING;
    return MHD_YES;
}

static void req_body_chunk(struct http_req *r, const char *data, size_t n)
{
    size_t max = r->route != NULL ? r->route->max_body : 0;
    r->received += n;
    guard_body(r->srv->guard, r->gc, n);
    if (r->deferred_status != 0 || r->too_large)
        return;
    if (r->received > max) {
        r->too_large = 1;
        kj_buf_free(&r->body);
        return;
    }
    if (r->upload != NULL) {
        upload_feed(r->upload, data, n);
        return;
    }
    if (kj_buf_putn(&r->body, data, n) != 0) {
        r->too_large = 1; /* answered as 413 */
        kj_log(KJ_LOG_ERROR, "http", "out of memory for a body of %zu bytes", r->body.len + n);
        kj_buf_free(&r->body);
    }
}

/* The last callback (body complete) or a callback after a resume. */
static enum MHD_Result req_run(struct http_req *r)
{
    guard_busy(r->srv->guard, r->gc);
    if (r->deferred_status != 0)
        return http_error(r, r->deferred_status, r->deferred_code, "%s", r->deferred_msg);
    if (r->too_large)
        return http_error(r, MHD_HTTP_CONTENT_TOO_LARGE, "too_large",
                          "the request body is larger than the limit");
    if ((r->route->body == HTTP_BODY_JSON || r->route->body == HTTP_BODY_OCTETS) &&
        r->body.p == NULL &&
        kj_buf_putn(&r->body, "", 0) != 0) /* no body: "" */
        return MHD_NO;
    return r->route->handler(r);
}

/* A new request on conn; its method and path are filled at the first callback. */
static struct http_req *req_new(struct server *srv, struct MHD_Connection *conn)
{
    struct http_req *r = calloc(1, sizeof *r);
    const union MHD_ConnectionInfo *sc =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    if (r == NULL)
        return NULL;
    r->srv = srv;
    r->conn = conn;
    r->gc = sc != NULL ? sc->socket_context : NULL;
    r->boards = boards_acquire(srv);
    kj_buf_init(&r->body, 0); /* capped by the route's max_body as it arrives */
    clock_gettime(CLOCK_MONOTONIC, &r->start);
    snprintf(r->method, sizeof r->method, "-");
    return r;
}

/* MHD's URI log callback: the request line has arrived (the headers may
 * not have). Creates the request and notes what the raw URL looks like
 * before MHD cuts it at '?' and decodes %XX in place. The result is the
 * request's con_cls. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    struct http_req *r = req_new(cls, conn);
    if (r == NULL || uri == NULL)
        return r;
    r->raw_uri = (uintptr_t)uri;
    r->raw_uri_len = strlen(uri);
    r->uri_pct00 = strstr(uri, "%00") != NULL;
    kj_printable(r->path, sizeof r->path, uri, strcspn(uri, "?") < sizeof r->path - 1
                 ? strcspn(uri, "?") : sizeof r->path - 1);
    return r;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    struct http_req *r = *con_cls;
    if (r == NULL && (*con_cls = r = req_new(cls, conn)) == NULL)
        return MHD_NO;
    if (!r->started) {
        /* The headers are complete now: the client's address may come from a
         * trusted proxy's X-Forwarded-For (netacl.h). */
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        r->forwarded = netacl_client(&r->srv->trusted_proxies,
                                     ci != NULL ? ci->client_addr : NULL,
                                     MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                                 "X-Forwarded-For"),
                                     r->client, sizeof r->client);
        r->started = 1;
        atomic_fetch_add(&r->srv->inflight, 1);
        r->path_too_long = strlen(url) >= HTTP_MAX_PATH;
        kj_printable(r->method, sizeof r->method, method, sizeof r->method - 1);
        kj_printable(r->path, sizeof r->path, url, sizeof r->path - 1);
        return req_begin(r, version);
    }
    if (*upload_data_size > 0) {
        req_body_chunk(r, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return r->received > drain_limit(r) ? MHD_NO : MHD_YES;
    }
    if (r->phase == HTTP_PHASE_ANSWERED)
        return MHD_YES;
    return req_run(r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct server *srv = cls;
    struct http_req *r = *con_cls;
    struct timespec now;
    if (r == NULL)
        return;
    if (r->started)
        atomic_fetch_sub(&srv->inflight, 1);
    wait_remove(srv->wait, &r->wait);
    wait_unhold(srv->wait, &r->hold);
    guard_request_done(srv->guard, r->gc);
    int by_mhd = 0;
    if (r->status == 0) { /* answered by MHD itself (a malformed request), or not at all */
        const union MHD_ConnectionInfo *st = MHD_get_connection_info(conn,
                                                                     MHD_CONNECTION_INFO_HTTP_STATUS);
        r->status = st != NULL ? st->http_status : 0;
        by_mhd = r->status != 0;
    }
    clock_gettime(CLOCK_MONOTONIC, &now);
    double ms = (double)(now.tv_sec - r->start.tv_sec) * 1e3 +
                (double)(now.tv_nsec - r->start.tv_nsec) / 1e6;
    kj_log(KJ_LOG_INFO, "http", "%s %s status=%u ms=%.1f addr=%s%s%s%s", r->method, r->path,
           r->status, ms, r->client[0] ? r->client : "-", r->forwarded ? " forwarded=1" : "",
           toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " aborted=1",
           by_mhd ? " by=mhd" : "");
    metrics_request(srv->metrics, http_route_index(r->route), r->status,
                    ms / 1e3);
    upload_free(r->upload);
    boards_release(r->boards);
    kj_buf_free(&r->body);
    free(r);
    *con_cls = NULL;
}

/* ------------------------------------------------------------------ */
/* Daemon                                                              */
/* ------------------------------------------------------------------ */

/* MHD's connection notifications: the guard tracks every open connection. */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    struct server *srv = cls;
    const union MHD_ConnectionInfo *fd;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        fd = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        guard_opened(srv->guard, fd != NULL ? (int)fd->connect_fd : -1, socket_context);
    }
    else if (code == MHD_CONNECTION_NOTIFY_CLOSED)
        guard_closed(srv->guard, socket_context);
}

static void mhd_logger(void *cls, const char *fmt, va_list ap)
{
    struct server *srv = cls;
    char line[512];
    size_t n;
    uint64_t dropped = 0;
    if (!guard_log_ok(srv->guard, &dropped))
        return;
    vsnprintf(line, sizeof line, fmt, ap);
    n = strlen(line);
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = '\0';
    if (dropped > 0)
        kj_log(KJ_LOG_WARN, "mhd", "%s (and %llu messages dropped before it)", line,
               (unsigned long long)dropped);
    else
        kj_log(KJ_LOG_WARN, "mhd", "%s", line);
}

int http_start(struct server *srv, struct kj_err *err)
{
    struct sockaddr_in a4;
    struct sockaddr_in6 a6;
    const struct sockaddr *addr;
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_ERROR_LOG;
    /* HTTPS when main.c loaded a certificate and key (tls.h); else the list is empty. */
    struct MHD_OptionItem tls_opts[] = {
        {MHD_OPTION_HTTPS_MEM_KEY, 0, srv->tls.key},
        {MHD_OPTION_HTTPS_MEM_CERT, 0, srv->tls.cert},
        {MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)TLS_PRIORITIES},
        {MHD_OPTION_END, 0, NULL},
    };
    if (srv->tls.cert != NULL)
        flags |= MHD_USE_TLS;
    else
        tls_opts[0].option = MHD_OPTION_END;

    memset(&a4, 0, sizeof a4);
    memset(&a6, 0, sizeof a6);
    if (inet_pton(AF_INET, srv->bind, &a4.sin_addr) == 1) {
        a4.sin_family = AF_INET;
        a4.sin_port = htons((uint16_t)srv->port);
        addr = (const struct sockaddr *)&a4;
    } else if (inet_pton(AF_INET6, srv->bind, &a6.sin6_addr) == 1) {
        a6.sin6_family = AF_INET6;
        a6.sin6_port = htons((uint16_t)srv->port);
        addr = (const struct sockaddr *)&a6;
        flags |= MHD_USE_IPv6;
    } else {
        return KJ_FAIL(err, KJ_EINVAL, "--bind %s is not an IPv4 or IPv6 address", srv->bind);
    }
    srv->daemon = MHD_start_daemon(flags, (uint16_t)srv->port, NULL, NULL, on_request, srv,
                                   MHD_OPTION_EXTERNAL_LOGGER, mhd_logger, srv,
                                   MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
                                   MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv,
                                   MHD_OPTION_URI_LOG_CALLBACK, on_uri, srv,
                                   MHD_OPTION_THREAD_POOL_SIZE, (unsigned)KJ_HTTP_THREADS,
                                   MHD_OPTION_CONNECTION_LIMIT,
                                   srv->conn_limit > 0 ? srv->conn_limit : (unsigned)KJ_HTTP_CONN_LIMIT,
                                   MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                                   (unsigned)srv->max_conns_per_ip,
                                   MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                                   (size_t)KJ_HTTP_CONN_MEMORY,
                                   MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)KJ_HTTP_CONN_TIMEOUT_S,
                                   MHD_OPTION_SOCK_ADDR, addr,
                                   MHD_OPTION_ARRAY, tls_opts,
                                   MHD_OPTION_END);
    if (srv->daemon == NULL)
        return KJ_FAIL(err, KJ_EIO, "cannot listen on %s port %d (in use, or not allowed?)",
                       srv->bind, srv->port);
    return 0;
}

/* Stop: accept nothing more (the listening socket is shut down, so new
 * connections are refused at once), end parked waits and streams, give
 * the requests in flight up to KJ_DRAIN_S to finish (their answers close
 * the connection), then stop the daemon, which closes what is left. */
void http_stop(struct server *srv)
{
    MHD_socket s;
    int64_t until;
    if (srv->daemon == NULL)
        return;
    atomic_store(&srv->draining, 1);
    s = MHD_quiesce_daemon(srv->daemon);
    /* Not closed before MHD_stop_daemon (its threads may still hold it):
     * shutdown() ends the listening state and resets queued connections. */
    if (s != MHD_INVALID_SOCKET)
        shutdown(s, SHUT_RDWR);
    wait_release_all(srv->wait, 3000);
    until = wait_now_ms() + (int64_t)KJ_DRAIN_S * 1000;
    while (atomic_load(&srv->inflight) > 0 && wait_now_ms() < until) {
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (atomic_load(&srv->inflight) > 0)
        kj_log(KJ_LOG_WARN, "http", "stopping with requests still in flight count=%d",
               atomic_load(&srv->inflight));
    MHD_stop_daemon(srv->daemon);
    srv->daemon = NULL;
    if (s != MHD_INVALID_SOCKET)
        close(s);
}
