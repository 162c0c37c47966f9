/*
 * test_curlc.c - unit tests for common/curlc.c: the Server-Sent Events parser
 * (line endings, chunk boundaries anywhere, multi-line data, comments,
 * ids kept across events, a stop from the callback, the size limits), the
 * client's refusal of malformed URLs and tokens before anything is sent,
 * the failure kind of a request to a closed loopback port, and against a
 * loopback listener of this test: the token only in the Authorization
 * header, the body cap (with and without Content-Length) and the request
 * timeout. tests/api/test_runner_net.py runs the client against the real
 * server, plain and HTTPS.
 * Prints "test_curlc: N passed, N failed, N skipped".
 */
#define KT_MAIN
#include "kt.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "curlc.h"

/* What the callback saw: "id|event|data" per event, joined by ';'. */
struct seen {
    char log[4096];
    int n, stop_after;
};

static int on_event(void *ctx, const char *id, const char *event, const char *data)
{
    struct seen *s = ctx;
    size_t used = strlen(s->log);
    snprintf(s->log + used, sizeof s->log - used, "%s%s|%s|%s", s->n ? ";" : "", id, event, data);
    s->n++;
    return s->stop_after > 0 && s->n >= s->stop_after;
}

/* Feed text in chunks of chunk bytes (0: all at once); returns the last rc. */
static int feed(struct seen *s, const char *text, size_t chunk)
{
    struct curlc_ssep p;
    struct kj_err err;
    size_t n = strlen(text), off = 0;
    int rc = 0;
    memset(s->log, 0, sizeof s->log);
    s->n = 0;
    curlc_ssep_init(&p);
    kj_err_clear(&err);
    while (off < n && rc == 0) {
        size_t k = chunk == 0 || n - off < chunk ? n - off : chunk;
        rc = curlc_ssep_feed(&p, text + off, k, on_event, s, &err);
        off += k;
    }
    curlc_ssep_free(&p);
    return rc;
}

static void test_sse(void)
{
    static const char stream[] =
        ": events of submission 7\nretry: 3000\n\n"
        "id: 0\nevent: queued\ndata: {\"position\":3}\n\n"
        "id: 1\r\nevent: compiling\r\ndata: {}\r\n\r\n"
        "id: 2\revent: test\rdata: {\"a\":1,\rdata: \"b\":2}\r\r"
        ": keep-alive\n\n"
        "event: verdict\ndata:{\"verdict\":\"accepted\"}\n\n";
    static const char want[] =
        "0|queued|{\"position\":3};1|compiling|{};2|test|{\"a\":1,\n\"b\":2};"
        "2|verdict|{\"verdict\":\"accepted\"}";
    struct seen s;
    memset(&s, 0, sizeof s);
    for (size_t chunk = 0; chunk <= 7; chunk++) {
        int rc = feed(&s, stream, chunk);
        KT_CHECK(rc == 0 && strcmp(s.log, want) == 0, "chunk %zu: rc %d log '%s'", chunk, rc, s.log);
    }
    /* An event without data is not dispatched; the default name is "message". */
    feed(&s, "event: nothing\n\ndata: x\n\n", 0);
    KT_CHECK(strcmp(s.log, "|message|x") == 0, "'%s'", s.log);
    /* A trailing event without its blank line is not dispatched. */
    feed(&s, "data: a\n\ndata: b\n", 0);
    KT_CHECK(s.n == 1 && strcmp(s.log, "|message|a") == 0, "'%s'", s.log);
    /* The callback stops the stream. */
    s.stop_after = 2;
    int rc = feed(&s, "data: 1\n\ndata: 2\n\ndata: 3\n\n", 0);
    KT_CHECK(rc == 1 && s.n == 2, "stop: rc %d n %d", rc, s.n);
    s.stop_after = 0;
}

static void test_sse_limits(void)
{
    struct seen s;
    size_t big = CURLC_MAX_EVENT_BYTES + 64;
    char *text = malloc(big + 16);
    memset(&s, 0, sizeof s);
    memcpy(text, "data: ", 6);
    memset(text + 6, 'x', big);
    strcpy(text + 6 + big, "\n\n");
    KT_CHECK(feed(&s, text, 4096) == KJ_ELIMIT && s.n == 0, "an overlong line is refused");
    /* Many data lines that add up past the limit. */
    size_t line = 1000, lines = CURLC_MAX_EVENT_BYTES / line + 2, off = 0;
    char *many = malloc(lines * (line + 8) + 4);
    for (size_t i = 0; i < lines; i++) {
        memcpy(many + off, "data: ", 6);
        memset(many + off + 6, 'y', line);
        many[off + 6 + line] = '\n';
        off += line + 7;
    }
    strcpy(many + off, "\n");
    KT_CHECK(feed(&s, many, 65536) == KJ_ELIMIT && s.n == 0, "data past the limit is refused");
    char id[128] = "id: ";
    memset(id + 4, '7', 70);
    strcpy(id + 74, "\ndata: x\n\n");
    KT_CHECK(feed(&s, id, 0) == KJ_ELIMIT, "an overlong id is refused");
    struct curlc_ssep p;
    curlc_ssep_init(&p);
    memset(&s, 0, sizeof s);
    KT_CHECK(curlc_ssep_feed(&p, "data: a\0b\n\n", 11, on_event, &s, NULL) == 0 &&
             strcmp(s.log, "|message|a b") == 0, "a NUL byte in a line becomes a blank: '%s'", s.log);
    curlc_ssep_free(&p);
    free(text);
    free(many);
}

static void test_new(void)
{
    static const char *const bad_urls[] = {"ftp://h", "http://", "https:///x", "http://h/a b",
                                           "http://u:p@h", "http://h/?q=1", "http://h/#f", "h:80",
                                           "http://h\n", NULL};
    struct curlc_opts o;
    struct curlc *c = NULL;
    struct kj_err err;
    memset(&o, 0, sizeof o);
    for (int i = 0; bad_urls[i] != NULL; i++) {
        o.base_url = bad_urls[i];
        kj_err_clear(&err);
        KT_CHECK(curlc_new(&o, &c, &err) == KJ_EINVAL && c == NULL, "'%s' refused", bad_urls[i]);
    }
    o.base_url = "http://127.0.0.1:1/prefix//";
    o.bearer = "a token";
    KT_CHECK(curlc_new(&o, &c, &err) == KJ_EINVAL && c == NULL, "a token with a blank is refused");
    o.bearer = "abc\r\nX-Evil: 1";
    KT_CHECK(curlc_new(&o, &c, &err) == KJ_EINVAL && strstr(err.msg, "X-Evil") == NULL,
             "a token with CR LF is refused and not echoed: %s", err.msg);
    o.bearer = "0123456789abcdef";
    KT_CHECK(curlc_new(&o, &c, &err) == 0 && c != NULL, "a good client: %s", err.msg);
    if (c == NULL)
        return;
    KT_CHECK(strcmp(curlc_base(c), "http://127.0.0.1:1/prefix") == 0, "trailing '/' dropped: %s",
             curlc_base(c));
    struct curlc_resp r;
    kj_err_clear(&err);
    KT_CHECK(curlc_get(c, "no-slash", &r, &err) == KJ_EINVAL, "a path must start with '/'");
    KT_CHECK(curlc_get(c, "/a b", &r, &err) == KJ_EINVAL, "a path must not have blanks");
    curlc_free(c);
    curlc_free(NULL);
    curlc_resp_free(NULL);
}

/* A loopback port that nothing listens on (bound, then closed). */
static int closed_port(void)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0), port;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, (struct sockaddr *)&a, sizeof a);
    getsockname(fd, (struct sockaddr *)&a, &len);
    port = ntohs(a.sin_port);
    close(fd);
    return port;
}

static void test_closed_port(void)
{
    char url[64];
    struct curlc_opts o;
    struct curlc *c = NULL;
    struct curlc_resp r;
    struct kj_err err;
    memset(&o, 0, sizeof o);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", closed_port());
    o.base_url = url;
    o.bearer = "secret-token-value";
    kj_err_clear(&err);
    if (curlc_new(&o, &c, &err) != 0) {
        KT_CHECK(0, "client: %s", err.msg);
        return;
    }
    int rc = curlc_get(c, "/api/v1/me", &r, &err);
    KT_CHECK(rc == KJ_EIO && r.fail == CURLC_FAIL_CONNECT && r.body == NULL,
             "a closed port: rc %d fail %d", rc, r.fail);
    KT_CHECK(strstr(err.msg, "GET http://127.0.0.1:") != NULL && strstr(err.msg, "secret") == NULL,
             "the message names the URL, not the token: %s", err.msg);
    rc = curlc_sse(c, "/x", "5", 1000, on_event, NULL, &r, &err);
    KT_CHECK(rc == KJ_EIO && r.fail == CURLC_FAIL_CONNECT, "a stream to a closed port: %d", rc);
    curlc_free(c);
}

/* A loopback listener answering each connection with the next canned reply
 * ("" = read the request, then say nothing until the client goes). */
struct canned {
    int lfd, port, n;
    const char *replies[4];
    size_t pad[4];       /* bytes of 'x' sent after each reply */
    char req[4096];      /* the first request as received */
    pthread_t tid;
};

static void *canned_main(void *arg)
{
    struct canned *k = arg;
    static char pad[64 * 1024];
    memset(pad, 'x', sizeof pad);
    for (int i = 0; i < k->n; i++) {
        char buf[4096];
        int fd = accept(k->lfd, NULL, NULL);
        if (fd < 0)
            return NULL;
        ssize_t got = recv(fd, buf, sizeof buf - 1, 0);
        if (i == 0 && got > 0) {
            memcpy(k->req, buf, (size_t)got);
            k->req[got] = '\0';
        }
        if (k->replies[i][0] != '\0') {
            send(fd, k->replies[i], strlen(k->replies[i]), MSG_NOSIGNAL);
            for (size_t left = k->pad[i]; left > 0;) {
                size_t m = left < sizeof pad ? left : sizeof pad;
                if (send(fd, pad, m, MSG_NOSIGNAL) <= 0)
                    break;
                left -= m;
            }
        } else {
            while (recv(fd, buf, sizeof buf, 0) > 0) /* until the client gives up */
                ;
        }
        close(fd);
    }
    return NULL;
}

static void test_caps(void)
{
    struct canned k;
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    struct curlc_opts o;
    struct curlc *c = NULL;
    struct curlc_resp r;
    struct kj_err err;
    char url[64];
    memset(&k, 0, sizeof k);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    k.lfd = socket(AF_INET, SOCK_STREAM, 0);
    if (bind(k.lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(k.lfd, 4) != 0 ||
        getsockname(k.lfd, (struct sockaddr *)&a, &len) != 0) {
        KT_CHECK(0, "listen on loopback");
        return;
    }
    k.port = ntohs(a.sin_port);
    k.n = 4;
    k.replies[0] = "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n";
    k.replies[1] = "HTTP/1.1 200 OK\r\nContent-Length: 5000\r\nConnection: close\r\n\r\n";
    k.pad[1] = 5000;
    k.replies[2] = "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"; /* ended by the close */
    k.pad[2] = 200 * 1024;
    k.replies[3] = "";
    pthread_create(&k.tid, NULL, canned_main, &k);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", k.port);
    memset(&o, 0, sizeof o);
    o.base_url = url;
    o.bearer = "tok-5ec7e7";
    o.max_body = 1024;
    o.timeout_ms = 500;
    kj_err_clear(&err);
    if (curlc_new(&o, &c, &err) != 0) {
        KT_CHECK(0, "client: %s", err.msg);
        return;
    }
    int rc = curlc_post(c, "/api/v1/runner/claim", "application/json", "{}", 2, &r, &err);
    KT_CHECK(rc == 0 && r.status == 204, "a 204: rc %d status %ld", rc, r.status);
    KT_CHECK(strncmp(k.req, "POST /api/v1/runner/claim HTTP/1.1\r\n", 36) == 0 &&
             strstr(k.req, "\r\nAuthorization: Bearer tok-5ec7e7\r\n") != NULL &&
             strstr(k.req, "5ec7e7") == strstr(k.req, "Bearer tok-5ec7e7") + 11,
             "the token only in the Authorization header: %.200s", k.req);
    curlc_resp_free(&r);
    rc = curlc_get(c, "/big", &r, &err);
    KT_CHECK(rc == KJ_ELIMIT && r.fail == CURLC_FAIL_TOO_LARGE && strstr(err.msg, "1024 bytes"),
             "a Content-Length over the cap: rc %d fail %d: %s", rc, r.fail, err.msg);
    rc = curlc_get(c, "/big-unframed", &r, &err);
    KT_CHECK(rc == KJ_ELIMIT && r.fail == CURLC_FAIL_TOO_LARGE,
             "a body past the cap without Content-Length: rc %d fail %d: %s", rc, r.fail, err.msg);
    rc = curlc_get(c, "/silent", &r, &err);
    KT_CHECK(rc == KJ_ETIMEOUT && r.fail == CURLC_FAIL_TIMEOUT,
             "no answer within timeout_ms: rc %d fail %d: %s", rc, r.fail, err.msg);
    curlc_free(c);
    pthread_join(k.tid, NULL);
    close(k.lfd);
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    struct kj_err err;
    kj_err_clear(&err);
    KT_CHECK(curlc_init(&err) == 0, "curl init: %s", err.msg);
    KT_RUN(test_sse());
    KT_RUN(test_sse_limits());
    KT_RUN(test_new());
    KT_RUN(test_closed_port());
    KT_RUN(test_caps());
    curlc_cleanup();
    return kt_done("test_curlc");
}
