/*
 * test_guard.c - unit tests for server/guard.c, the deadlines of slow
 * connections.
 *
 * Each "connection" is one end of a socketpair registered with a guard
 * whose head timeout is 1 s; the other end shows whether the guard shut it
 * down (a read there returns 0). A connection that never sends its head,
 * one whose body never comes and one kept alive idle after its request are
 * cut; one whose request is being handled (busy) and one whose body keeps
 * coming fast enough are not; a connection the guard forgot (closed) is
 * never touched. Also: the counts, a guard without deadlines, and the
 * limit on MHD's log messages. Needs no network.
 */
#define KT_MAIN
#include "kt.h"

#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "guard.h"
#include "kj_err.h"

struct pair {
    int fd[2];       /* fd[0]: the server's end, given to the guard; fd[1]: the client's */
    void *ctx;       /* the guard's entry (MHD's socket_context) */
};

static int pair_open(struct guard *g, struct pair *p)
{
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, p->fd) != 0)
        return -1;
    guard_opened(g, p->fd[0], &p->ctx);
    return 0;
}

/* Was the server's end shut down? Waits at most ms for it. */
static int pair_cut(struct pair *p, int ms)
{
    struct pollfd pf = {p->fd[1], POLLIN, 0};
    char c;
    if (poll(&pf, 1, ms) <= 0)
        return 0;
    return read(p->fd[1], &c, 1) == 0;
}

static void pair_close(struct guard *g, struct pair *p)
{
    guard_closed(g, &p->ctx);
    close(p->fd[0]);
    close(p->fd[1]);
}

static void test_deadlines(void)
{
    struct guard *g = NULL;
    struct kj_err err;
    struct pair head, body, idle, busy, fast, forgot;
    uint64_t heads = 0, bodies = 0, idles = 0;
    if (guard_start(&g, 1, &err) != 0) {
        KT_CHECK(0, "guard_start: %s", err.msg);
        return;
    }
    memset(&forgot, 0, sizeof forgot);
    KT_CHECK(pair_open(g, &head) == 0 && pair_open(g, &body) == 0 && pair_open(g, &idle) == 0 &&
             pair_open(g, &busy) == 0 && pair_open(g, &fast) == 0 && pair_open(g, &forgot) == 0,
             "socketpairs");
    KT_CHECK(head.ctx != NULL, "guard_opened stores an entry");
    guard_head_done(g, body.ctx, 1);
    guard_head_done(g, idle.ctx, 0);
    guard_request_done(g, idle.ctx);
    guard_head_done(g, busy.ctx, 1);
    guard_busy(g, busy.ctx);
    guard_head_done(g, fast.ctx, 1);
    guard_closed(g, &forgot.ctx); /* MHD closed it: the guard must not touch the socket */
    KT_CHECK(forgot.ctx == NULL, "guard_closed clears the context");
    for (int i = 0; i < 16; i++) { /* 16 KiB within the first second: 16 s more of grace */
        guard_body(g, fast.ctx, 1024);
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
    KT_CHECK(pair_cut(&head, 5000), "a connection that never sends its head is cut");
    KT_CHECK(pair_cut(&body, 5000), "a body that never comes is cut");
    KT_CHECK(pair_cut(&idle, 5000), "a kept-alive connection idle past the deadline is cut");
    KT_CHECK(!pair_cut(&busy, 500), "a busy request (handler, wait, stream) is not cut");
    KT_CHECK(!pair_cut(&fast, 10), "a body that keeps coming is not cut");
    KT_CHECK(!pair_cut(&forgot, 10), "a forgotten connection is not touched");
    guard_counts(g, &heads, &bodies, &idles);
    KT_CHECK(heads == 1 && bodies == 1 && idles == 1,
             "counts: %llu slow heads, %llu bodies, %llu idle keep-alives (not slow: no warning)",
             (unsigned long long)heads, (unsigned long long)bodies, (unsigned long long)idles);
    guard_request_done(g, busy.ctx);
    KT_CHECK(pair_cut(&busy, 5000), "after its answer, a connection waits for its next head again");
    pair_close(g, &head);
    pair_close(g, &body);
    pair_close(g, &idle);
    pair_close(g, &busy);
    pair_close(g, &fast);
    close(forgot.fd[0]);
    close(forgot.fd[1]);
    guard_free(g);
}

static void test_off_and_null(void)
{
    struct guard *g = NULL;
    struct kj_err err;
    struct pair p;
    uint64_t dropped = 0;
    KT_CHECK(guard_start(&g, 0, &err) == 0, "a guard without deadlines starts: %s", err.msg);
    if (g == NULL)
        return;
    KT_CHECK(pair_open(g, &p) == 0, "socketpair");
    KT_CHECK(!pair_cut(&p, 1500), "without a timeout nothing is cut");
    pair_close(g, &p);
    guard_free(g);
    guard_opened(NULL, 3, &p.ctx);
    KT_CHECK(p.ctx == NULL, "a NULL guard stores nothing");
    guard_head_done(NULL, NULL, 1);
    guard_body(NULL, NULL, 1);
    guard_busy(NULL, NULL);
    guard_request_done(NULL, NULL);
    guard_closed(NULL, &p.ctx);
    KT_CHECK(guard_log_ok(NULL, &dropped) == 1, "a NULL guard lets log lines through");
    guard_free(NULL);
}

static void test_log_limit(void)
{
    struct guard *g = NULL;
    struct kj_err err;
    uint64_t dropped = 0, seen = 0;
    int ok = 0, refused = 0;
    if (guard_start(&g, 0, &err) != 0)
        return;
    for (int i = 0; i < 200; i++) {
        if (guard_log_ok(g, &dropped))
            ok++;
        else
            refused++;
    }
    KT_CHECK(refused > 0 && ok >= GUARD_LOG_PER_S && ok <= 3 * GUARD_LOG_PER_S,
             "a burst of 200 messages: %d let through, %d dropped", ok, refused);
    struct timespec ts = {1, 100 * 1000000L};
    nanosleep(&ts, NULL);
    KT_CHECK(guard_log_ok(g, &seen) == 1 && seen > 0 && seen <= (uint64_t)refused,
             "the next second's first line reports %llu dropped", (unsigned long long)seen);
    guard_free(g);
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    KT_RUN(test_deadlines());
    KT_RUN(test_off_and_null());
    KT_RUN(test_log_limit());
    return kt_done("test_guard");
}
