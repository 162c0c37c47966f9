/*
 * httpc.c - blocking HTTP/1.1 client: one request per TCP connection.
 *
 * Called by the runner's supervisor for every exchange with kjudge-server
 * (claim, events, result). It resolves the host, connects with a
 * non-blocking socket, sends the request and reads the response through a
 * small buffer, every wait bounded by one poll() deadline; it hands back
 * the status and the whole body (owned by the caller's httpc_response).
 */
#include "httpc.h"

#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HTTP_MAX_LINE 8192   /* one status, header, chunk-size or trailer line */
#define HTTP_MAX_INTERIM 8   /* 1xx responses skipped before the final one */
#define HTTP_WHAT 320        /* "METHOD URL" used in messages */

/* base_url taken apart. */
struct http_url {
    char host[256];      /* for getaddrinfo(): no brackets */
    char authority[272]; /* Host header value, as written in the URL */
    char port[8];
    char prefix[512];    /* path prefix without a trailing '/', "" if none */
};

/* One connection and its read buffer (bytes [pos, len) are unread). */
struct http_conn {
    int fd;              /* owned; -1 when closed */
    int64_t deadline;    /* CLOCK_MONOTONIC, ms */
    int timeout_ms;
    const char *what;    /* "METHOD URL", borrowed from httpc_request() */
    char buf[16384];
    size_t pos, len;
};

/* What the status line and headers said. */
struct http_head {
    int status;
    int chunked;
    int has_length;
    uint64_t length;
};

/* A growing body; p is owned and NUL-terminated once non-NULL. */
struct http_buf {
    char *p;
    size_t len, cap;
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* 1 if s[0..n) has only visible ASCII (no space, no control bytes). */
static int visible(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
            return 0;
    return 1;
}

/* 1 if s has no control bytes (header values may contain spaces). */
static int header_safe(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s == 0x7f)
            return 0;
    return 1;
}

/* ---- URL ------------------------------------------------------------------ */

static int parse_port(const char *p, size_t n, struct http_url *u)
{
    long v = 0;

    if (n == 0 || n > 5)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        v = v * 10 + (p[i] - '0');
    }
    if (v < 1 || v > 65535)
        return -1;
    snprintf(u->port, sizeof u->port, "%ld", v);
    return 0;
}

/* Split "http://host[:port][/prefix]". Returns 0 or -1 (malformed). */
static int split_url(const char *url, struct http_url *u)
{
    const char *auth = url + 7, *end, *host, *host_end, *after;

    if (strncmp(url, "http://", 7) != 0)
        return -1;
    end = auth + strcspn(auth, "/");
    if (end == auth || memchr(auth, '@', (size_t)(end - auth)) != NULL ||
        !visible(auth, (size_t)(end - auth)))
        return -1;
    if (*auth == '[') {
        host = auth + 1;
        host_end = memchr(host, ']', (size_t)(end - host));
        if (host_end == NULL)
            return -1;
        after = host_end + 1;
    } else {
        host = auth;
        host_end = memchr(auth, ':', (size_t)(end - auth));
        if (host_end == NULL)
            host_end = end;
        after = host_end;
    }
    if (host_end == host || (size_t)(host_end - host) >= sizeof u->host ||
        (size_t)(end - auth) >= sizeof u->authority)
        return -1;
    memcpy(u->host, host, (size_t)(host_end - host));
    memcpy(u->authority, auth, (size_t)(end - auth));
    if (after == end)
        snprintf(u->port, sizeof u->port, "80");
    else if (*after != ':' || parse_port(after + 1, (size_t)(end - after - 1), u) != 0)
        return -1;
    size_t plen = strlen(end);
    while (plen > 0 && end[plen - 1] == '/')
        plen--;
    if (plen >= sizeof u->prefix || !visible(end, plen))
        return -1;
    memcpy(u->prefix, end, plen);
    return 0;
}

static int check_args(const char *base_url, const char *method, const char *path,
                      const char *bearer, const char *content_type, const char *body,
                      size_t body_len, int timeout_ms, struct kj_err *err)
{
    if (base_url == NULL || method == NULL || path == NULL)
        return KJ_FAIL(err, KJ_EINVAL, "http: missing URL, method or path");
    if (method[0] == '\0' || strspn(method, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != strlen(method))
        return KJ_FAIL(err, KJ_EINVAL, "http: bad method");
    if (path[0] != '/' || !visible(path, strlen(path)))
        return KJ_FAIL(err, KJ_EINVAL, "http: path must start with '/' and have no spaces or control characters");
    if ((bearer != NULL && (!visible(bearer, strlen(bearer)) || bearer[0] == '\0')) ||
        (content_type != NULL && !header_safe(content_type)))
        return KJ_FAIL(err, KJ_EINVAL, "http: token or content type has forbidden characters");
    if (body == NULL && body_len > 0)
        return KJ_FAIL(err, KJ_EINVAL, "http: body is NULL but body_len is %zu", body_len);
    if (timeout_ms <= 0)
        return KJ_FAIL(err, KJ_EINVAL, "http: timeout_ms must be positive");
    return 0;
}

/* ---- socket I/O ------------------------------------------------------------- */

/* Wait until the socket is ready for events or the deadline passes. */
static int wait_io(struct http_conn *c, short events, struct kj_err *err)
{
    for (;;) {
        int64_t left = c->deadline - now_ms();
        if (left <= 0)
            return KJ_FAIL(err, KJ_ETIMEOUT, "%s: no answer within %d ms", c->what, c->timeout_ms);
        struct pollfd pfd = {.fd = c->fd, .events = events};
        int rc = poll(&pfd, 1, left > INT_MAX ? INT_MAX : (int)left);
        if (rc > 0)
            return 0;
        if (rc < 0 && errno != EINTR)
            return KJ_FAIL(err, KJ_EIO, "%s: poll: %s", c->what, strerror(errno));
    }
}

static int try_connect(struct http_conn *c, const struct addrinfo *ai, struct kj_err *err)
{
    int soerr = 0, rc;
    socklen_t len = sizeof soerr;

    c->fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                   ai->ai_protocol);
    if (c->fd < 0)
        return KJ_FAIL(err, KJ_EIO, "%s: socket: %s", c->what, strerror(errno));
    if (connect(c->fd, ai->ai_addr, ai->ai_addrlen) == 0)
        return 0;
    if (errno != EINPROGRESS) {
        rc = KJ_FAIL(err, KJ_EIO, "%s: connect: %s", c->what, strerror(errno));
        goto fail;
    }
    rc = wait_io(c, POLLOUT, err);
    if (rc != 0)
        goto fail;
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0)
        soerr = errno;
    if (soerr == 0)
        return 0;
    rc = KJ_FAIL(err, KJ_EIO, "%s: connect: %s", c->what, strerror(soerr));
fail:
    close(c->fd);
    c->fd = -1;
    return rc;
}

/* Connect to the first address of u that answers. */
static int conn_open(struct http_conn *c, const struct http_url *u, struct kj_err *err)
{
    struct addrinfo hints, *res = NULL;
    int gai, rc = KJ_EIO;

    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    gai = getaddrinfo(u->host, u->port, &hints, &res);
    if (gai != 0)
        return KJ_FAIL(err, KJ_EIO, "%s: cannot resolve '%s': %s", c->what, u->host,
                       gai_strerror(gai));
    if (res == NULL)
        return KJ_FAIL(err, KJ_EIO, "%s: no address for '%s'", c->what, u->host);
    for (const struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
        rc = try_connect(c, ai, err);
        if (rc == 0 || rc == KJ_ETIMEOUT)
            break;
    }
    freeaddrinfo(res);
    return rc;
}

static int send_all(struct http_conn *c, const char *p, size_t n, struct kj_err *err)
{
    while (n > 0) {
        ssize_t k = send(c->fd, p, n, MSG_NOSIGNAL);
        if (k > 0) {
            p += k;
            n -= (size_t)k;
        } else if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int rc = wait_io(c, POLLOUT, err);
            if (rc != 0)
                return rc;
        } else if (k < 0 && errno != EINTR) {
            return KJ_FAIL(err, KJ_EIO, "%s: send: %s", c->what, strerror(errno));
        }
    }
    return 0;
}

/* Receive more bytes after the unread ones. Returns 1 (got some), 0 (the
 * server closed the connection) or a negative KJ_E*. */
static int conn_fill(struct http_conn *c, struct kj_err *err)
{
    if (c->pos == c->len) {
        c->pos = c->len = 0;
    } else if (c->pos > 0) {
        memmove(c->buf, c->buf + c->pos, c->len - c->pos);
        c->len -= c->pos;
        c->pos = 0;
    }
    for (;;) {
        ssize_t k = recv(c->fd, c->buf + c->len, sizeof c->buf - c->len, 0);
        if (k > 0) {
            c->len += (size_t)k;
            return 1;
        }
        if (k == 0)
            return 0;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            int rc = wait_io(c, POLLIN, err);
            if (rc != 0)
                return rc;
        } else if (errno != EINTR) {
            return KJ_FAIL(err, KJ_EIO, "%s: receive: %s", c->what, strerror(errno));
        }
    }
}

/* Read one line ending in LF into line (NUL-terminated, CR LF dropped);
 * *n is its length. Lines of HTTP_MAX_LINE bytes or more fail. */
static int read_line(struct http_conn *c, char line[HTTP_MAX_LINE], size_t *n,
                     struct kj_err *err)
{
    for (;;) {
        char *start = c->buf + c->pos;
        char *lf = memchr(start, '\n', c->len - c->pos);
        if (lf != NULL) {
            size_t len = (size_t)(lf - start);
            c->pos += len + 1;
            if (len > 0 && start[len - 1] == '\r')
                len--;
            if (len >= HTTP_MAX_LINE)
                break;
            memcpy(line, start, len);
            line[len] = '\0';
            *n = len;
            return 0;
        }
        if (c->len - c->pos >= HTTP_MAX_LINE)
            break;
        int rc = conn_fill(c, err);
        if (rc < 0)
            return rc;
        if (rc == 0)
            return KJ_FAIL(err, KJ_EIO, "%s: connection closed before the response was complete",
                           c->what);
    }
    return KJ_FAIL(err, KJ_ELIMIT, "%s: response line longer than %d bytes", c->what,
                   HTTP_MAX_LINE - 1);
}

/* ---- response head ----------------------------------------------------------- */

/* "HTTP/1.x NNN reason" -> status, or -1. */
static int parse_status(const char *line)
{
    if (strncmp(line, "HTTP/1.", 7) != 0 || line[7] < '0' || line[7] > '9' || line[8] != ' ')
        return -1;
    for (int i = 9; i < 12; i++)
        if (line[i] < '0' || line[i] > '9')
            return -1;
    if (line[12] != '\0' && line[12] != ' ')
        return -1;
    int status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
    return status >= 100 && status <= 599 ? status : -1;
}

/* Strip optional whitespace around s in place; returns the new start. */
static char *trim(char *s)
{
    size_t n;

    while (*s == ' ' || *s == '\t')
        s++;
    n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = '\0';
    return s;
}

static int parse_length(struct http_head *h, const char *v, const char *what,
                        struct kj_err *err)
{
    uint64_t len = 0;
    size_t n = strlen(v);

    if (n == 0 || n > 19 || strspn(v, "0123456789") != n)
        return KJ_FAIL(err, KJ_EIO, "%s: bad Content-Length in response", what);
    for (size_t i = 0; i < n; i++)
        len = len * 10 + (uint64_t)(v[i] - '0');
    if (h->has_length && h->length != len)
        return KJ_FAIL(err, KJ_EIO, "%s: conflicting Content-Length headers", what);
    h->has_length = 1;
    h->length = len;
    return 0;
}

/* One "Name: value" line; only the framing headers matter here. */
static int parse_header(struct http_head *h, char *line, const char *what, struct kj_err *err)
{
    char *colon = strchr(line, ':'), *value, *last;

    if (colon == NULL || colon == line || line[0] == ' ' || line[0] == '\t')
        return KJ_FAIL(err, KJ_EIO, "%s: malformed header line in response", what);
    *colon = '\0';
    value = trim(colon + 1);
    if (strcasecmp(line, "Content-Length") == 0)
        return parse_length(h, value, what, err);
    if (strcasecmp(line, "Transfer-Encoding") != 0)
        return 0;
    last = strrchr(value, ',');
    last = trim(last != NULL ? last + 1 : value);
    if (strcasecmp(last, "chunked") == 0)
        h->chunked = 1;
    else if (strcasecmp(last, "identity") != 0)
        return KJ_FAIL(err, KJ_EIO, "%s: unsupported Transfer-Encoding in response", what);
    return 0;
}

/* Read the status line and headers of the final response (1xx skipped). */
static int read_head(struct http_conn *c, struct http_head *h, struct kj_err *err)
{
    char line[HTTP_MAX_LINE];
    size_t n, total = 0;
    int rc;

    for (int round = 0; round <= HTTP_MAX_INTERIM; round++) {
        memset(h, 0, sizeof *h);
        if ((rc = read_line(c, line, &n, err)) != 0)
            return rc;
        h->status = parse_status(line);
        if (h->status < 0 || h->status == 101)
            return KJ_FAIL(err, KJ_EIO, "%s: the server did not answer with HTTP/1.x", c->what);
        for (;;) {
            total += n + 2;
            if (total > HTTPC_MAX_HEADERS)
                return KJ_FAIL(err, KJ_ELIMIT, "%s: response headers longer than %d bytes",
                               c->what, HTTPC_MAX_HEADERS);
            if ((rc = read_line(c, line, &n, err)) != 0)
                return rc;
            if (n == 0)
                break;
            if ((rc = parse_header(h, line, c->what, err)) != 0)
                return rc;
        }
        if (h->status >= 200)
            return 0;
    }
    return KJ_FAIL(err, KJ_EIO, "%s: too many interim (1xx) responses", c->what);
}

/* ---- response body ------------------------------------------------------------ */

static int buf_append(struct http_buf *b, const char *p, size_t n, const char *what,
                      struct kj_err *err)
{
    if (n > HTTPC_MAX_BODY - b->len)
        return KJ_FAIL(err, KJ_ELIMIT, "%s: response body larger than %u bytes", what,
                       HTTPC_MAX_BODY);
    if (b->p == NULL || b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        if (cap > (size_t)HTTPC_MAX_BODY + 1)
            cap = (size_t)HTTPC_MAX_BODY + 1;
        /* Not realloc: a body may hold a secret (a claim's seed), and the
         * block realloc frees would keep it (runner/secret.h). */
        char *np = malloc(cap);
        if (np == NULL)
            return KJ_FAIL(err, KJ_ENOMEM, "%s: out of memory for the response body", what);
        if (b->p != NULL) {
            memcpy(np, b->p, b->len + 1);
            explicit_bzero(b->p, b->cap);
            free(b->p);
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, p, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

/* Append exactly n body bytes from the connection to b. */
static int read_exact(struct http_conn *c, struct http_buf *b, uint64_t n, struct kj_err *err)
{
    while (n > 0) {
        if (c->pos == c->len) {
            int rc = conn_fill(c, err);
            if (rc < 0)
                return rc;
            if (rc == 0)
                return KJ_FAIL(err, KJ_EIO, "%s: connection closed before the end of the body",
                               c->what);
        }
        size_t k = c->len - c->pos;
        if ((uint64_t)k > n)
            k = (size_t)n;
        int rc = buf_append(b, c->buf + c->pos, k, c->what, err);
        if (rc != 0)
            return rc;
        c->pos += k;
        n -= k;
    }
    return 0;
}

/* Body framed by the server closing the connection. */
static int read_to_close(struct http_conn *c, struct http_buf *b, struct kj_err *err)
{
    for (;;) {
        int rc = buf_append(b, c->buf + c->pos, c->len - c->pos, c->what, err);
        if (rc != 0)
            return rc;
        c->pos = c->len;
        rc = conn_fill(c, err);
        if (rc <= 0)
            return rc;
    }
}

/* Size line of a chunk: hex digits, then optional ";extensions". */
static int chunk_size(const char *line, uint64_t *size)
{
    uint64_t v = 0;
    int digits = 0;

    for (; *line; line++, digits++) {
        int d;
        if (*line >= '0' && *line <= '9')
            d = *line - '0';
        else if ((*line | 0x20) >= 'a' && (*line | 0x20) <= 'f')
            d = (*line | 0x20) - 'a' + 10;
        else
            break;
        if (v > (UINT64_MAX >> 4))
            return -1;
        v = v * 16 + (uint64_t)d;
    }
    if (digits == 0 || (*line != '\0' && *line != ';' && *line != ' ' && *line != '\t'))
        return -1;
    *size = v;
    return 0;
}

static int read_chunked(struct http_conn *c, struct http_buf *b, struct kj_err *err)
{
    char line[HTTP_MAX_LINE];
    size_t n, trailer = 0;
    uint64_t size;
    int rc;

    for (;;) {
        if ((rc = read_line(c, line, &n, err)) != 0)
            return rc;
        if (chunk_size(line, &size) != 0)
            return KJ_FAIL(err, KJ_EIO, "%s: bad chunk size in response", c->what);
        if (size == 0)
            break;
        if (size > HTTPC_MAX_BODY - b->len)
            return KJ_FAIL(err, KJ_ELIMIT, "%s: response body larger than %u bytes", c->what,
                           HTTPC_MAX_BODY);
        if ((rc = read_exact(c, b, size, err)) != 0)
            return rc;
        if ((rc = read_line(c, line, &n, err)) != 0)
            return rc;
        if (n != 0)
            return KJ_FAIL(err, KJ_EIO, "%s: chunk longer than its size", c->what);
    }
    do { /* trailer fields, ignored, up to the empty line */
        if ((rc = read_line(c, line, &n, err)) != 0)
            return rc;
        trailer += n + 2;
        if (trailer > HTTPC_MAX_HEADERS)
            return KJ_FAIL(err, KJ_ELIMIT, "%s: response trailer too long", c->what);
    } while (n != 0);
    return 0;
}

/* Read the body as the head frames it (RFC 9112 section 6.3). */
static int read_body(struct http_conn *c, const struct http_head *h, const char *method,
                     struct http_buf *b, struct kj_err *err)
{
    int rc = buf_append(b, "", 0, c->what, err); /* an empty body is "" */

    if (rc != 0)
        return rc;
    if (strcmp(method, "HEAD") == 0 || h->status == 204 || h->status == 304)
        return 0;
    if (h->chunked)
        return read_chunked(c, b, err);
    if (!h->has_length)
        return read_to_close(c, b, err);
    if (h->length > HTTPC_MAX_BODY)
        return KJ_FAIL(err, KJ_ELIMIT, "%s: response body of %llu bytes is over the %u limit",
                       c->what, (unsigned long long)h->length, HTTPC_MAX_BODY);
    return read_exact(c, b, h->length, err);
}

/* ---- request ------------------------------------------------------------------- */

/* The request head; *out is malloc'd and owned by the caller. */
static int build_head(const struct http_url *u, const char *method, const char *path,
                      const char *bearer, const char *content_type, size_t body_len,
                      char **out, size_t *out_len, struct kj_err *err)
{
    const char *fmt = "%s %s%s HTTP/1.1\r\nHost: %s\r\nUser-Agent: kjudge-runner\r\n"
                      "Connection: close\r\n%s%s%s%s%s%sContent-Length: %zu\r\n\r\n";
    const char *auth = bearer ? "Authorization: Bearer " : "", *auth_end = bearer ? "\r\n" : "";
    const char *ct = content_type ? "Content-Type: " : "", *ct_end = content_type ? "\r\n" : "";
    int n = snprintf(NULL, 0, fmt, method, u->prefix, path, u->authority, auth,
                     bearer ? bearer : "", auth_end, ct, content_type ? content_type : "",
                     ct_end, body_len);

    *out = n < 0 ? NULL : malloc((size_t)n + 1);
    if (*out == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "http: out of memory for the request");
    snprintf(*out, (size_t)n + 1, fmt, method, u->prefix, path, u->authority, auth,
             bearer ? bearer : "", auth_end, ct, content_type ? content_type : "", ct_end,
             body_len);
    *out_len = (size_t)n;
    return 0;
}

int httpc_request(const char *base_url, const char *method, const char *path,
                 const char *bearer, const char *content_type, const char *body,
                 size_t body_len, int timeout_ms, struct httpc_response *out,
                 struct kj_err *err)
{
    struct http_url u;
    struct http_conn c;
    struct http_head h;
    struct http_buf b = {0};
    char what[HTTP_WHAT], raw[HTTP_WHAT];
    char *head = NULL;
    size_t head_len = 0;
    int rc;

    if (out == NULL)
        return KJ_FAIL(err, KJ_EINVAL, "http: no response struct");
    memset(out, 0, sizeof *out);
    rc = check_args(base_url, method, path, bearer, content_type, body, body_len, timeout_ms,
                    err);
    if (rc != 0)
        return rc;
    memset(&u, 0, sizeof u);
    if (split_url(base_url, &u) != 0) {
        /* Echo the URL unless it may hold a password ("user:pw@host"). */
        kj_printable(raw, sizeof raw, strchr(base_url, '@') ? "(redacted)" : base_url, 200);
        return KJ_FAIL(err, KJ_EINVAL, "http: base URL '%s' is not http://host[:port][/prefix]",
                       raw);
    }
    snprintf(raw, sizeof raw, "%s %s%s", method, base_url, path);
    kj_printable(what, sizeof what, raw, sizeof raw);
    c.fd = -1;
    c.pos = c.len = 0;
    c.what = what;
    c.timeout_ms = timeout_ms;
    c.deadline = now_ms() + timeout_ms;

    if ((rc = conn_open(&c, &u, err)) != 0 ||
        (rc = build_head(&u, method, path, bearer, content_type, body_len, &head, &head_len,
                         err)) != 0 ||
        (rc = send_all(&c, head, head_len, err)) != 0 ||
        (rc = send_all(&c, body, body_len, err)) != 0 ||
        (rc = read_head(&c, &h, err)) != 0 ||
        (rc = read_body(&c, &h, method, &b, err)) != 0)
        goto out;
    out->status = h.status;
    out->body = b.p;
    out->body_len = b.len;
    b.p = NULL;
out:
    /* The head holds the token, the connection's buffer the last bytes of
     * the answer: wiped before their memory is given back (secret.h). */
    if (head != NULL)
        explicit_bzero(head, head_len);
    free(head);
    if (b.p != NULL)
        explicit_bzero(b.p, b.cap);
    free(b.p);
    explicit_bzero(c.buf, sizeof c.buf);
    if (c.fd >= 0)
        close(c.fd);
    return rc;
}

void httpc_response_free(struct httpc_response *r)
{
    if (r == NULL)
        return;
    if (r->body != NULL)
        explicit_bzero(r->body, r->body_len);
    free(r->body);
    memset(r, 0, sizeof *r);
}
