/*
 * test_serve.c - what runner/serve.c (and runner/deliver.c, which posts
 * the results) sends to the server, without a GPU.
 *
 * Includes runner/serve.c to reach its static functions (the archive's copy
 * is then never linked). A thread listens on 127.0.0.1, answers each
 * request with the next canned reply and records it. Checks: progress
 * events and results name the claim's ?attempt; a result the server
 * refuses (422) is replaced by one internal_error that quotes the server's
 * message, and a refused replacement ends the posting; a claim answered
 * 403 stops the runner with the server's message.
 */
#define KT_MAIN
#include "kt.h"

#include "../../runner/serve.c"

#include <arpa/inet.h>
#include <pthread.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>

#define MAX_EXCHANGES 8

struct fake {
    int lfd, port, n;                  /* n: requests to answer */
    const char *replies[MAX_EXCHANGES];
    char req[MAX_EXCHANGES][8192];     /* each request as received */
    int got;
    pthread_t tid;
};

static int fake_start(struct fake *f)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (f->lfd < 0 || bind(f->lfd, (struct sockaddr *)&a, len) != 0 || listen(f->lfd, 8) != 0 ||
        getsockname(f->lfd, (struct sockaddr *)&a, &len) != 0)
        return -1;
    f->port = ntohs(a.sin_port);
    return 0;
}

/* Read one request (head and Content-Length body) into buf. */
static void fake_read(int fd, char *buf, size_t cap)
{
    size_t got = 0, want = 0;
    char *end = NULL;
    while (got < cap - 1) {
        ssize_t k = recv(fd, buf + got, cap - 1 - got, 0);
        if (k <= 0)
            break;
        got += (size_t)k;
        buf[got] = '\0';
        if (end == NULL && (end = strstr(buf, "\r\n\r\n")) != NULL) {
            const char *cl = strcasestr(buf, "Content-Length: ");
            want = (size_t)(end + 4 - buf) + (cl ? strtoul(cl + 16, NULL, 10) : 0);
        }
        if (end != NULL && got >= want)
            break;
    }
}

static void *fake_main(void *arg)
{
    struct fake *f = arg;
    for (int i = 0; i < f->n; i++) {
        struct timeval tv = {5, 0};
        char out[1024];
        int fd = accept(f->lfd, NULL, NULL);
        if (fd < 0)
            return NULL;
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        fake_read(fd, f->req[i], sizeof f->req[i]);
        f->got = i + 1;
        const char *body = f->replies[i];
        int st = atoi(body);
        body = strchr(body, ' ') + 1;
        snprintf(out, sizeof out, "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n"
                 "Content-Length: %zu\r\nConnection: close\r\n\r\n%s", st, strlen(body), body);
        send(fd, out, strlen(out), MSG_NOSIGNAL);
        close(fd);
    }
    return NULL;
}

/* Answer the next n requests with replies ("STATUS BODY" each). */
static void fake_serve(struct fake *f, int n, const char *const *replies)
{
    f->n = n;
    f->got = 0;
    for (int i = 0; i < n; i++)
        f->replies[i] = replies[i];
    pthread_create(&f->tid, NULL, fake_main, f);
}

/* The body of request i (after the head), or "". */
static const char *req_body(struct fake *f, int i)
{
    const char *e = strstr(f->req[i], "\r\n\r\n");
    return e != NULL ? e + 4 : "";
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    struct fake f;
    char url[64];
    volatile sig_atomic_t stop = 0;
    memset(&f, 0, sizeof f);
    if (fake_start(&f) != 0) {
        KT_CHECK(0, "listen on loopback");
        return kt_done("test_serve");
    }
    snprintf(url, sizeof url, "http://127.0.0.1:%d", f.port);
    struct serve_cfg cfg = {.server = url, .token = "tok-0123", .name = "box-7",
                            .leaderboards = "leaderboards", .once = 1, .stop = &stop};
    struct serve sv;
    struct kj_err err;
    memset(&sv, 0, sizeof sv);
    sv.cfg = &cfg;
    pthread_mutex_init(&sv.mu, NULL);
    pthread_cond_init(&sv.cv, NULL);
    KT_CHECK(curlc_init(&err) == KJ_OK && serve_open(&sv, &err) == KJ_OK, "the runner's HTTP "
             "clients: %s", err.msg);
    sv.job_id = 42;
    sv.attempt = 2;
    snprintf(sv.gpu_type, sizeof sv.gpu_type, "H200");

    /* A progress event names the attempt. */
    const char *ok204[] = {"204 "};
    cJSON *d = cJSON_CreateObject();
    fake_serve(&f, 1, ok204);
    serve_progress(&sv, KJ_EV_COMPILING, d);
    pthread_join(f.tid, NULL);
    KT_CHECK(f.got == 1 && strncmp(f.req[0], "POST /api/v1/runner/jobs/42/events?attempt=2 ", 45) == 0,
             "the event names ?attempt=2: %.60s", f.req[0]);
    cJSON_Delete(d);

    /* A refused result: one internal_error quoting the server, then done. */
    struct deliver_to to = serve_to(&sv); /* job 42, attempt 2 */
    struct judge_result *res = result_new(NULL, KJ_MODE_TEST);
    result_set_verdict(res, KJ_V_ACCEPTED, "");
    res->has_score = 1;
    res->score_ns = 5e-324;
    const char *refuse_then_ok[] = {
        "422 {\"error\":{\"code\":\"bad_score\",\"message\":\"score_ns: not the geometric mean\"}}",
        "200 {\"ok\":true,\"requeued\":true}"};
    fake_serve(&f, 2, refuse_then_ok);
    deliver_result(&to, res);
    pthread_join(f.tid, NULL);
    KT_CHECK(f.got == 2, "two posts: %d", f.got);
    KT_CHECK(strncmp(f.req[0], "POST /api/v1/runner/jobs/42/result?attempt=2 ", 45) == 0 &&
             strncmp(f.req[1], "POST /api/v1/runner/jobs/42/result?attempt=2 ", 45) == 0,
             "both name ?attempt=2: %.60s | %.60s", f.req[0], f.req[1]);
    KT_CHECK(strstr(req_body(&f, 0), "\"accepted\"") != NULL, "first the judge's result");
    cJSON *second = cJSON_Parse(req_body(&f, 1));
    const cJSON *v = cJSON_GetObjectItem(second, "verdict"), *m = cJSON_GetObjectItem(second, "message");
    KT_CHECK(cJSON_IsString(v) && strcmp(v->valuestring, "internal_error") == 0 && cJSON_IsString(m) &&
             strstr(m->valuestring, "score_ns: not the geometric mean") != NULL &&
             strstr(m->valuestring, "box-7") != NULL,
             "then an internal_error quoting the server: %s", req_body(&f, 1));
    cJSON_Delete(second);

    const char *refuse_twice[] = {
        "422 {\"error\":{\"code\":\"bad_result\",\"message\":\"mode: wrong\"}}",
        "422 {\"error\":{\"code\":\"bad_result\",\"message\":\"still wrong\"}}"};
    fake_serve(&f, 2, refuse_twice);
    deliver_result(&to, res);
    pthread_join(f.tid, NULL);
    KT_CHECK(f.got == 2, "a refused internal_error ends the posting after 2 requests: %d", f.got);
    result_free(res);

    /* A claim refused with 403 stops the runner with the server's words. */
    const char *forbidden[] = {
        "403 {\"error\":{\"code\":\"gpu_not_allowed\",\"message\":\"runner token 'r' may claim "
        "jobs for B200 only, not H200\"}}"};
    kj_err_clear(&err);
    fake_serve(&f, 1, forbidden);
    int rc = serve_claim(&sv, &err);
    pthread_join(f.tid, NULL);
    KT_CHECK(rc < 0 && sv.refused && strstr(err.msg, "B200 only") != NULL &&
             strstr(err.msg, "HTTP 403") != NULL, "403 on claim: rc %d refused %d: %s", rc,
             sv.refused, err.msg);
    KT_CHECK(strstr(req_body(&f, 0), "\"gpu\":\"H200\"") != NULL && strstr(f.req[0], "Bearer tok-0123"),
             "the claim names the GPU type, with the token");
    KT_CHECK(strstr(f.req[0], "POST /api/v1/runner/claim?wait=20 ") != NULL,
             "the claim is a long poll: %.80s", f.req[0]);
    close(f.lfd);
    curlc_free(sv.http);
    curlc_free(sv.watch_http);
    curlc_free(sv.claim_http);
    curlc_free(sv.side_http);
    curlc_cleanup();
    pthread_cond_destroy(&sv.cv);
    pthread_mutex_destroy(&sv.mu);
    return kt_done("test_serve");
}
