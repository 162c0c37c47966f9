/*
 * test_httpc.c - unit tests for runner/httpc.c against a loopback server.
 *
 * A thread in this test listens on 127.0.0.1 (port chosen by the kernel),
 * accepts one connection per case, records the request and answers with a
 * canned reply, possibly in pieces: Content-Length and chunked bodies, 204,
 * a body ended by close, a server that never answers, a refused connection,
 * oversized and malformed replies. Needs no network beyond loopback.
 */
#define KT_MAIN
#include "kt.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "httpc.h"
#include "kj_err.h"

#define TOKEN "tok-0123456789abcdef"

/* One canned exchange. The reply is sent as the given pieces, with a short
 * pause between them; hold_open keeps the connection open after the reply
 * until the client closes it (or 5 s pass). */
struct canned {
    const char *pieces[6];
    size_t big_len;      /* if > 0: a reply of this many bytes after pieces[0] */
    int hold_open;
};

struct server {
    int lfd;
    int port;
    int family;
    const struct canned *reply;
    char req[16384];     /* the request as received, NUL-terminated */
    size_t req_len;
    pthread_t tid;
};

static int server_start(struct server *s, int family)
{
    struct sockaddr_storage ss;
    socklen_t len;
    memset(s, 0, sizeof *s);
    memset(&ss, 0, sizeof ss);
    s->family = family;
    s->lfd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s->lfd < 0)
        return -1;
    if (family == AF_INET) {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        len = sizeof *a;
    } else {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_loopback;
        len = sizeof *a;
    }
    if (bind(s->lfd, (struct sockaddr *)&ss, len) != 0 || listen(s->lfd, 4) != 0 ||
        getsockname(s->lfd, (struct sockaddr *)&ss, &len) != 0) {
        close(s->lfd);
        return -1;
    }
    s->port = ntohs(family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                      : ((struct sockaddr_in6 *)&ss)->sin6_port);
    return 0;
}

/* Read the request head and its Content-Length body into s->req. */
static void read_request(struct server *s, int fd)
{
    size_t want = 0;
    char *end = NULL;
    while (s->req_len < sizeof s->req - 1) {
        ssize_t k = recv(fd, s->req + s->req_len, sizeof s->req - 1 - s->req_len, 0);
        if (k <= 0)
            break;
        s->req_len += (size_t)k;
        s->req[s->req_len] = '\0';
        if (end == NULL && (end = strstr(s->req, "\r\n\r\n")) != NULL) {
            const char *cl = strstr(s->req, "Content-Length: ");
            want = (size_t)(end + 4 - s->req) + (cl ? strtoul(cl + 16, NULL, 10) : 0);
        }
        if (end != NULL && s->req_len >= want)
            break;
    }
}

static void send_big(int fd, size_t n)
{
    char block[4096];
    for (size_t i = 0; i < sizeof block; i++)
        block[i] = (char)('a' + i % 26);
    while (n > 0) {
        size_t k = n < sizeof block ? n : sizeof block;
        if (send(fd, block, k, MSG_NOSIGNAL) <= 0)
            return;
        n -= k;
    }
}

static void *server_main(void *arg)
{
    struct server *s = arg;
    struct timeval tv = {5, 0};
    char sink[256];
    int fd = accept(s->lfd, NULL, NULL);
    if (fd < 0)
        return NULL;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    read_request(s, fd);
    for (int i = 0; i < 6 && s->reply->pieces[i] != NULL; i++) {
        if (i > 0)
            usleep(20000);
        send(fd, s->reply->pieces[i], strlen(s->reply->pieces[i]), MSG_NOSIGNAL);
        if (i == 0 && s->reply->big_len > 0)
            send_big(fd, s->reply->big_len);
    }
    if (s->reply->hold_open)
        while (recv(fd, sink, sizeof sink, 0) > 0)
            ;
    close(fd);
    return NULL;
}

static void server_serve(struct server *s, const struct canned *reply)
{
    s->reply = reply;
    s->req_len = 0;
    s->req[0] = '\0';
    pthread_create(&s->tid, NULL, server_main, s);
}

static void server_join(struct server *s)
{
    pthread_join(s->tid, NULL);
}

static void base_url(const struct server *s, char *buf, size_t n)
{
    if (s->family == AF_INET6)
        snprintf(buf, n, "http://[::1]:%d", s->port);
    else
        snprintf(buf, n, "http://127.0.0.1:%d", s->port);
}

static int64_t ms_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void test_content_length(struct server *s, const char *url)
{
    static const struct canned c = {{"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                     "content-length: 13\r\n\r\n{\"ok\": true}\n", NULL}, 0, 0};
    const char *body = "{\"runner\": \"h200-0\", \"gpu\": \"H200\"}";
    struct httpc_response r;
    struct kj_err err = {0};
    char host[64];
    server_serve(s, &c);
    int rc = httpc_request(url, "POST", "/api/v1/runner/claim", TOKEN, "application/json", body,
                          strlen(body), 2000, &r, &err);
    server_join(s);
    KT_CHECK(rc == 0, "rc %d: %s", rc, err.msg);
    KT_CHECK(r.status == 200 && r.body_len == 13 && strcmp(r.body, "{\"ok\": true}\n") == 0,
             "status %d body '%s'", r.status, r.body ? r.body : "(null)");
    KT_CHECK(strncmp(s->req, "POST /api/v1/runner/claim HTTP/1.1\r\n", 36) == 0, "request line");
    KT_CHECK(strstr(s->req, "\r\nAuthorization: Bearer " TOKEN "\r\n") != NULL, "bearer sent");
    KT_CHECK(strstr(s->req, "\r\nContent-Type: application/json\r\n") != NULL, "content type");
    KT_CHECK(strstr(s->req, "\r\nConnection: close\r\n") != NULL, "connection close");
    snprintf(host, sizeof host, "\r\nHost: 127.0.0.1:%d\r\n", s->port);
    KT_CHECK(strstr(s->req, host) != NULL, "host header");
    char cl[64];
    snprintf(cl, sizeof cl, "\r\nContent-Length: %zu\r\n\r\n", strlen(body));
    KT_CHECK(strstr(s->req, cl) != NULL, "content length");
    KT_CHECK(s->req_len > strlen(body) && strcmp(s->req + s->req_len - strlen(body), body) == 0,
             "body sent");
    httpc_response_free(&r);
    KT_CHECK(r.body == NULL && r.status == 0, "freed and zeroed");
}

static void test_chunked(struct server *s, const char *url)
{
    static const struct canned c = {{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
                                     "lo\r\n7;ext=1\r\n, world\r\n",
                                     "A\r\n0123456789\r\n0\r\nX-Trailer: y\r\n\r\n", NULL}, 0, 1};
    struct httpc_response r;
    struct kj_err err = {0};
    server_serve(s, &c);
    int rc = httpc_request(url, "GET", "/api/v1/x", NULL, NULL, NULL, 0, 2000, &r, &err);
    server_join(s);
    KT_CHECK(rc == 0 && r.status == 200, "rc %d: %s", rc, err.msg);
    KT_CHECK(rc == 0 && strcmp(r.body, "hello, world0123456789") == 0 && r.body_len == 22,
             "chunked body '%s'", r.body ? r.body : "(null)");
    KT_CHECK(strstr(s->req, "Authorization") == NULL, "no bearer header without a token");
    KT_CHECK(strstr(s->req, "Content-Type") == NULL, "no content type without one");
    httpc_response_free(&r);
}

static void test_no_body(struct server *s, const char *url)
{
    /* The server keeps the connection open: 204 must not wait for close. */
    static const struct canned c = {{"HTTP/1.1 204 No Content\r\nDate: today\r\n\r\n", NULL}, 0, 1};
    static const struct canned cont = {{"HTTP/1.1 100 Continue\r\n\r\n",
                                        "HTTP/1.1 409 Conflict\r\nContent-Length: 2\r\n\r\nno",
                                        NULL}, 0, 1};
    struct httpc_response r;
    struct kj_err err = {0};
    int64_t t0 = ms_now();
    server_serve(s, &c);
    int rc = httpc_request(url, "POST", "/api/v1/runner/jobs/1/events", TOKEN, "application/json",
                          "{}", 2, 3000, &r, &err);
    int64_t took = ms_now() - t0;
    server_join(s);
    KT_CHECK(rc == 0 && r.status == 204, "rc %d status %d: %s", rc, r.status, err.msg);
    KT_CHECK(rc == 0 && r.body != NULL && r.body_len == 0 && r.body[0] == '\0', "empty body");
    KT_CHECK(took < 1000, "204 returned in %lld ms", (long long)took);
    httpc_response_free(&r);

    server_serve(s, &cont);
    rc = httpc_request(url, "POST", "/r", TOKEN, NULL, "x", 1, 3000, &r, &err);
    server_join(s);
    KT_CHECK(rc == 0 && r.status == 409 && strcmp(r.body, "no") == 0,
             "100 skipped, 409 returned: rc %d status %d", rc, r.status);
    httpc_response_free(&r);
}

static void test_until_close_and_big(struct server *s, const char *url)
{
    static const struct canned close_c = {{"HTTP/1.0 200 OK\r\n\r\nbody until ", "close", NULL}, 0, 0};
    static const struct canned big = {{"HTTP/1.1 200 OK\r\nContent-Length: 3000000\r\n\r\n", NULL},
                                      3000000, 0};
    struct httpc_response r;
    struct kj_err err = {0};
    server_serve(s, &close_c);
    int rc = httpc_request(url, "GET", "/", NULL, NULL, NULL, 0, 2000, &r, &err);
    server_join(s);
    KT_CHECK(rc == 0 && r.status == 200 && strcmp(r.body, "body until close") == 0,
             "until close: rc %d '%s'", rc, r.body ? r.body : "");
    httpc_response_free(&r);

    server_serve(s, &big);
    rc = httpc_request(url, "GET", "/big", NULL, NULL, NULL, 0, 5000, &r, &err);
    server_join(s);
    int ok = rc == 0 && r.body_len == 3000000;
    for (size_t i = 0; ok && i < r.body_len; i += 4093)
        ok = r.body[i] == (char)('a' + (i % 4096) % 26);
    KT_CHECK(ok && r.body[r.body_len] == '\0', "3 MB body: rc %d len %zu", rc, r.body_len);
    httpc_response_free(&r);
}

static void test_timeout(struct server *s, const char *url)
{
    static const struct canned silent = {{NULL}, 0, 1};
    struct httpc_response r;
    struct kj_err err = {0};
    int64_t t0 = ms_now();
    server_serve(s, &silent);
    int rc = httpc_request(url, "POST", "/api/v1/runner/claim", TOKEN, "application/json", "{}", 2,
                          300, &r, &err);
    int64_t took = ms_now() - t0;
    server_join(s);
    KT_CHECK(rc == KJ_ETIMEOUT, "rc %d (%s)", rc, err.msg);
    KT_CHECK(took >= 290 && took < 2000, "timed out after %lld ms", (long long)took);
    KT_CHECK(strstr(err.msg, url) != NULL && strstr(err.msg, TOKEN) == NULL,
             "message names the URL, not the token: %s", err.msg);
    KT_CHECK(r.body == NULL && r.status == 0, "out zeroed on failure");
}

static void test_refused(void)
{
    /* A bound socket that does not listen: connecting is refused. */
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    char url[64];
    struct httpc_response r;
    struct kj_err err = {0};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        KT_SKIP("cannot bind a loopback socket");
        return;
    }
    snprintf(url, sizeof url, "http://127.0.0.1:%d", ntohs(a.sin_port));
    int rc = httpc_request(url, "GET", "/", TOKEN, NULL, NULL, 0, 2000, &r, &err);
    KT_CHECK(rc == KJ_EIO, "refused rc %d (%s)", rc, err.msg);
    KT_CHECK(strstr(err.msg, url) != NULL && strstr(err.msg, "refused") != NULL &&
             strstr(err.msg, TOKEN) == NULL, "message: %s", err.msg);
    close(fd);
}

static void test_bad_replies(struct server *s, const char *url)
{
    static const struct canned huge = {{"HTTP/1.1 200 OK\r\nContent-Length: 100000000\r\n\r\n",
                                        NULL}, 0, 1};
    static const struct canned garbage = {{"SSH-2.0-OpenSSH_9.2\r\n\r\n", NULL}, 0, 0};
    static const struct canned short_body = {{"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
                                              NULL}, 0, 0};
    static const struct canned bad_chunk = {{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                             "zz\r\n", NULL}, 0, 0};
    static const struct canned gzip = {{"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
                                        NULL}, 0, 0};
    const struct canned *cases[] = {&huge, &garbage, &short_body, &bad_chunk, &gzip};
    const int want[] = {KJ_ELIMIT, KJ_EIO, KJ_EIO, KJ_EIO, KJ_EIO};
    for (int i = 0; i < 5; i++) {
        struct httpc_response r;
        struct kj_err err = {0};
        server_serve(s, cases[i]);
        int rc = httpc_request(url, "GET", "/", NULL, NULL, NULL, 0, 2000, &r, &err);
        server_join(s);
        KT_CHECK(rc == want[i] && r.body == NULL, "bad reply %d: rc %d (%s)", i, rc, err.msg);
    }
}

static void test_bad_args(void)
{
    struct httpc_response r;
    struct kj_err err = {0};
    const char *u = "http://127.0.0.1:1";
    KT_CHECK(httpc_request("https://x", "GET", "/", NULL, NULL, NULL, 0, 100, &r, &err) == KJ_EINVAL,
             "https refused");
    KT_CHECK(httpc_request("http://user:pw@h:1", "GET", "/", NULL, NULL, NULL, 0, 100, &r, &err) ==
             KJ_EINVAL && strstr(err.msg, "pw") == NULL, "userinfo refused, not echoed: %s", err.msg);
    KT_CHECK(httpc_request("http://h:99999", "GET", "/", NULL, NULL, NULL, 0, 100, &r, &err) ==
             KJ_EINVAL, "port range");
    KT_CHECK(httpc_request("http://[::1", "GET", "/", NULL, NULL, NULL, 0, 100, &r, &err) ==
             KJ_EINVAL, "unclosed bracket");
    KT_CHECK(httpc_request(u, "GET", "x", NULL, NULL, NULL, 0, 100, &r, &err) == KJ_EINVAL, "path");
    KT_CHECK(httpc_request(u, "GET", "/a b", NULL, NULL, NULL, 0, 100, &r, &err) == KJ_EINVAL,
             "space in path");
    KT_CHECK(httpc_request(u, "GET", "/", "tok\r\nX-Evil: 1", NULL, NULL, 0, 100, &r, &err) ==
             KJ_EINVAL && strstr(err.msg, "Evil") == NULL, "header injection via token");
    KT_CHECK(httpc_request(u, "GET", "/", NULL, "a\nb", NULL, 0, 100, &r, &err) == KJ_EINVAL,
             "header injection via content type");
    KT_CHECK(httpc_request(u, "G T", "/", NULL, NULL, NULL, 0, 100, &r, &err) == KJ_EINVAL, "method");
    KT_CHECK(httpc_request(u, "POST", "/", NULL, NULL, NULL, 5, 100, &r, &err) == KJ_EINVAL,
             "NULL body with length");
    KT_CHECK(httpc_request(u, "GET", "/", NULL, NULL, NULL, 0, 0, &r, &err) == KJ_EINVAL, "timeout");
    KT_CHECK(httpc_request(u, "GET", "/", NULL, NULL, NULL, 0, 100, NULL, &err) == KJ_EINVAL,
             "NULL out");
    httpc_response_free(NULL);
    memset(&r, 0, sizeof r);
    httpc_response_free(&r);
    KT_CHECK(1, "free accepts NULL and zeroed");
}

static void test_prefix_and_ipv6(struct server *s4)
{
    static const struct canned ok = {{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", NULL}, 0, 0};
    struct server s6;
    struct httpc_response r;
    struct kj_err err = {0};
    char url[96];

    snprintf(url, sizeof url, "http://127.0.0.1:%d/kj/", s4->port);
    server_serve(s4, &ok);
    int rc = httpc_request(url, "GET", "/api/v1/x", NULL, NULL, NULL, 0, 2000, &r, &err);
    server_join(s4);
    KT_CHECK(rc == 0 && strncmp(s4->req, "GET /kj/api/v1/x HTTP/1.1\r\n", 27) == 0,
             "prefix: rc %d", rc);
    httpc_response_free(&r);

    if (server_start(&s6, AF_INET6) != 0) {
        KT_SKIP("no IPv6 loopback");
        return;
    }
    base_url(&s6, url, sizeof url);
    server_serve(&s6, &ok);
    rc = httpc_request(url, "GET", "/", NULL, NULL, NULL, 0, 2000, &r, &err);
    server_join(&s6);
    KT_CHECK(rc == 0 && r.status == 200 && strcmp(r.body, "ok") == 0, "IPv6: rc %d (%s)", rc,
             err.msg);
    char host[64];
    snprintf(host, sizeof host, "\r\nHost: [::1]:%d\r\n", s6.port);
    KT_CHECK(strstr(s6.req, host) != NULL, "IPv6 Host header keeps brackets");
    httpc_response_free(&r);
    close(s6.lfd);
}

int main(void)
{
    struct server s;
    char url[64];
    if (server_start(&s, AF_INET) != 0) {
        KT_SKIP("cannot listen on 127.0.0.1");
        return kt_done("test_httpc");
    }
    base_url(&s, url, sizeof url);
    test_content_length(&s, url);
    test_chunked(&s, url);
    test_no_body(&s, url);
    test_until_close_and_big(&s, url);
    test_timeout(&s, url);
    test_refused();
    test_bad_replies(&s, url);
    test_bad_args();
    test_prefix_and_ipv6(&s);
    close(s.lfd);
    return kt_done("test_httpc");
}
