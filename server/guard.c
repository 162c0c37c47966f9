/*
 * guard.c - the open connections, what each is waiting for, and the thread
 * that shuts down the ones past their deadline (guard.h has the states).
 *
 * Called by http_daemon.c from MHD's threads (connection notifications, the
 * request callbacks); the thread started here only reads the list and
 * calls shutdown() on a socket. The socket stays MHD's: the entry is
 * removed in guard_closed(), which MHD calls before it closes the socket,
 * and both run under the guard's mutex, so the thread never touches a
 * socket number that was closed (and maybe reused). MHD sees the shut
 * down socket as closed by the client and cleans up as usual.
 */
#include "guard.h"
#include "kj_ticker.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

enum guard_state { GUARD_HEAD = 0, GUARD_BODY, GUARD_BUSY, GUARD_CUT };

struct guard_conn {
    struct guard_conn *prev, *next;
    int fd;                  /* MHD's socket; valid until guard_closed */
    enum guard_state state;
    int64_t since_ms;        /* CLOCK_MONOTONIC when the state began */
    uint64_t body_bytes;     /* BODY: bytes read so far */
    int served;              /* 1: a request of it was answered (HEAD again: keep-alive) */
};

struct guard {
    pthread_mutex_t mu;      /* guards the list and every entry */
    struct guard_conn *head;
    int64_t timeout_ms;      /* header timeout; 0 = no deadlines (no thread) */
    struct kj_ticker *ticker; /* owned: the thread that cuts overdue connections, or NULL */
    uint64_t cut_heads, cut_bodies, cut_idle;
    int64_t log_sec;         /* guard_log_ok: the second counted, its lines, lines dropped */
    int log_n;
    uint64_t log_dropped;
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Under the mutex: is c past its deadline at now? */
static int overdue(const struct guard *g, const struct guard_conn *c, int64_t now)
{
    if (c->state == GUARD_HEAD)
        return now - c->since_ms > g->timeout_ms;
    if (c->state == GUARD_BODY)
        return now - c->since_ms >
               g->timeout_ms + (int64_t)(c->body_bytes * 1000 / GUARD_BODY_MIN_BPS);
    return 0;
}

/* Under the mutex: shut down every overdue connection; returns how many.
 * An answered connection that sent nothing more (a client's idle
 * keep-alive, as libcurl keeps its connections) counts in *idle, not as a
 * slow head. */
static int cut_overdue(struct guard *g, uint64_t *heads, uint64_t *bodies, uint64_t *idle)
{
    int64_t now = now_ms();
    int n = 0;
    for (struct guard_conn *c = g->head; c != NULL; c = c->next) {
        if (!overdue(g, c, now))
            continue;
        if (c->state == GUARD_HEAD && c->served)
            (*idle)++;
        else if (c->state == GUARD_HEAD)
            (*heads)++;
        else
            (*bodies)++;
        c->state = GUARD_CUT;
        if (c->fd >= 0)
            shutdown(c->fd, SHUT_RDWR);
        n++;
    }
    return n;
}

/* The guard thread's tick: cut what is overdue, one log line for all of it. */
static void guard_tick(void *arg)
{
    struct guard *g = arg;
    uint64_t heads = 0, bodies = 0, idle = 0;
    pthread_mutex_lock(&g->mu);
    if (cut_overdue(g, &heads, &bodies, &idle) > 0) {
        g->cut_heads += heads;
        g->cut_bodies += bodies;
        g->cut_idle += idle;
        /* One line per tick, not per connection: a flood must not flood the
         * log. Idle keep-alives closed are routine: no line for them alone. */
        if (heads > 0 || bodies > 0)
            kj_log(KJ_LOG_WARN, "http", "closed slow connections heads=%llu bodies=%llu "
                   "header_timeout_s=%lld", (unsigned long long)heads,
                   (unsigned long long)bodies, (long long)(g->timeout_ms / 1000));
    }
    pthread_mutex_unlock(&g->mu);
}

int guard_start(struct guard **out, int header_timeout_s, struct kj_err *err)
{
    struct guard *g = calloc(1, sizeof *g);
    int rc;
    *out = NULL;
    if (g == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory starting the connection guard");
    pthread_mutex_init(&g->mu, NULL);
    g->timeout_ms = (int64_t)header_timeout_s * 1000;
    if (header_timeout_s > 0 &&
        (rc = kj_ticker_start(GUARD_TICK_MS, guard_tick, g, "guard", &g->ticker, err)) != 0) {
        pthread_mutex_destroy(&g->mu);
        free(g);
        return rc;
    }
    *out = g;
    return 0;
}

void guard_free(struct guard *g)
{
    struct guard_conn *c, *next;
    if (g == NULL)
        return;
    kj_ticker_stop(g->ticker);
    for (c = g->head; c != NULL; c = next) {
        next = c->next;
        free(c);
    }
    pthread_mutex_destroy(&g->mu);
    free(g);
}

void guard_opened(struct guard *g, int fd, void **socket_context)
{
    struct guard_conn *c = g != NULL ? calloc(1, sizeof *c) : NULL;
    *socket_context = NULL;
    if (c == NULL)
        return;
    c->fd = fd;
    c->state = GUARD_HEAD;
    c->since_ms = now_ms();
    pthread_mutex_lock(&g->mu);
    c->next = g->head;
    if (g->head != NULL)
        g->head->prev = c;
    g->head = c;
    pthread_mutex_unlock(&g->mu);
    *socket_context = c;
}

void guard_closed(struct guard *g, void **socket_context)
{
    struct guard_conn *c = *socket_context;
    if (g == NULL || c == NULL)
        return;
    pthread_mutex_lock(&g->mu);
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        g->head = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    pthread_mutex_unlock(&g->mu);
    free(c);
    *socket_context = NULL;
}

/* Move c to state s (a cut connection stays cut). Back to HEAD is only
 * ever after an answer (guard_opened starts there itself): served. */
static void set_state(struct guard *g, struct guard_conn *c, enum guard_state s)
{
    if (g == NULL || c == NULL)
        return;
    pthread_mutex_lock(&g->mu);
    if (s == GUARD_HEAD)
        c->served = 1;
    if (c->state != GUARD_CUT && c->state != s) {
        c->state = s;
        c->since_ms = now_ms();
        c->body_bytes = 0;
    }
    pthread_mutex_unlock(&g->mu);
}

void guard_head_done(struct guard *g, struct guard_conn *c, int has_body)
{
    set_state(g, c, has_body ? GUARD_BODY : GUARD_BUSY);
}

void guard_body(struct guard *g, struct guard_conn *c, size_t n)
{
    if (g == NULL || c == NULL)
        return;
    pthread_mutex_lock(&g->mu);
    if (c->state == GUARD_BODY)
        c->body_bytes += n;
    pthread_mutex_unlock(&g->mu);
}

void guard_busy(struct guard *g, struct guard_conn *c)
{
    set_state(g, c, GUARD_BUSY);
}

void guard_request_done(struct guard *g, struct guard_conn *c)
{
    set_state(g, c, GUARD_HEAD);
}

int guard_log_ok(struct guard *g, uint64_t *dropped)
{
    int64_t sec = now_ms() / 1000;
    int ok;
    *dropped = 0;
    if (g == NULL)
        return 1;
    pthread_mutex_lock(&g->mu);
    if (sec != g->log_sec) {
        g->log_sec = sec;
        g->log_n = 0;
    }
    ok = g->log_n++ < GUARD_LOG_PER_S;
    if (!ok)
        g->log_dropped++;
    else {
        *dropped = g->log_dropped;
        g->log_dropped = 0;
    }
    pthread_mutex_unlock(&g->mu);
    return ok;
}

void guard_counts(struct guard *g, uint64_t *heads, uint64_t *bodies, uint64_t *idle)
{
    pthread_mutex_lock(&g->mu);
    *heads = g->cut_heads;
    *bodies = g->cut_bodies;
    *idle = g->cut_idle;
    pthread_mutex_unlock(&g->mu);
}
