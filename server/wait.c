/*
 * wait.c - the list of parked ?wait=1 connections and its notifier thread.
 *
 * See wait.h for the protocol. The notifier collects due entries under the
 * mutex, unlinks them, and calls MHD_resume_connection() after dropping the
 * mutex, so no MHD lock is ever taken while ours is held. Probing a parked
 * socket (MHD_get_connection_info only reads a field of the connection,
 * which stays valid while it is suspended) is done under our mutex.
 *
 * Slots are counted per user in a small array (at most max_total users
 * hold one at a time), searched linearly under the mutex.
 */
#include "wait.h"
#include "kj_ticker.h"
#include "server.h"

#include <microhttpd.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WAIT_BATCH 64

/* Slots held by one user. */
struct wait_user {
    int64_t user_id;
    int n;
};

struct wait_list {
    pthread_mutex_t mu;
    struct kj_ticker *ticker;  /* owned: the notifier; kicked on notify, park and stop */
    struct wait_entry *head;   /* linked entries */
    int count;                 /* linked entries */
    int stopping;              /* refuse new entries, resume everything */
    int max_total, max_per_user;
    int held;                  /* slots held, all users */
    struct wait_user *users;   /* owned: max_total entries, the first nusers in use */
    int nusers;
    int64_t next_probe_ms;     /* CLOCK_MONOTONIC: when parked sockets are probed next */
};

/* The entry states of wait.h hold; returns 1 so it can sit in KJ_ASSERT.
 * The list's checks stay asserts: going on with a broken list would
 * resume a connection twice or write through a freed request. */
static int assert_wait_state(const struct wait_entry *e)
{
    if (!e->linked)
        return e->prev == NULL && e->next == NULL;
    return e->conn != NULL && (e->submission_id > 0) != (e->gpu[0] != '\0') &&
           (!e->parked || e->linked);
}

int64_t wait_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void unlink_entry(struct wait_list *w, struct wait_entry *e)
{
    KJ_ASSERT(assert_wait_state(e));
    if (!e->linked)
        return;
    if (e->prev != NULL)
        e->prev->next = e->next;
    else
        w->head = e->next;
    if (e->next != NULL)
        e->next->prev = e->prev;
    e->prev = e->next = NULL;
    e->linked = 0;
    w->count--;
}

int wait_conn_gone(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    struct pollfd p;
    if (ci == NULL)
        return 0;
    p.fd = ci->connect_fd;
    p.events = POLLRDHUP;
    p.revents = 0;
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

/* Under the mutex, every WAIT_PROBE_MS: mark the parked entries whose
 * client has gone, so collect_due resumes them (MHD then closes them). */
static void probe_parked(struct wait_list *w, int64_t now)
{
    if (now < w->next_probe_ms)
        return;
    w->next_probe_ms = now + WAIT_PROBE_MS;
    for (struct wait_entry *e = w->head; e != NULL; e = e->next)
        if (e->parked && !e->gone && wait_conn_gone(e->conn))
            e->gone = 1;
}

/* Under the mutex: unlink up to max due entries, copying their connections. */
static int collect_due(struct wait_list *w, struct MHD_Connection **out, int max)
{
    int64_t now = wait_now_ms();
    int n = 0;
    struct wait_entry *e = w->head, *next;
    for (; e != NULL && n < max; e = next) {
        next = e->next;
        if (!e->parked)
            continue;
        if (!e->ready && !e->gone && !w->stopping && now < e->deadline_ms)
            continue;
        e->timed_out = !e->ready && !e->gone;
        out[n++] = e->conn;
        unlink_entry(w, e);
    }
    return n;
}

/* The notifier's tick: mark gone clients, then resume every due entry,
 * calling MHD_resume_connection() without the mutex held. */
static void notify_tick(void *arg)
{
    struct wait_list *w = arg;
    struct MHD_Connection *due[WAIT_BATCH];
    int n;
    pthread_mutex_lock(&w->mu);
    probe_parked(w, wait_now_ms());
    while ((n = collect_due(w, due, WAIT_BATCH)) > 0) {
        pthread_mutex_unlock(&w->mu);
        for (int i = 0; i < n; i++)
            MHD_resume_connection(due[i]);
        pthread_mutex_lock(&w->mu);
    }
    pthread_mutex_unlock(&w->mu);
}

int wait_start(struct wait_list **out, int max_total, int max_per_user, struct kj_err *err)
{
    struct wait_list *w = calloc(1, sizeof *w);
    int rc;
    *out = NULL;
    if (KJ_NEVER(max_total < 1 || max_per_user < 1)) { /* serve checks its options */
        free(w);
        return KJ_FAIL(err, KJ_EINVAL, "the wait list needs at least one slot");
    }
    if (w != NULL && (w->users = calloc((size_t)max_total, sizeof *w->users)) == NULL) {
        free(w);
        w = NULL;
    }
    if (w == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory starting the wait list");
    w->max_total = max_total;
    w->max_per_user = max_per_user;
    pthread_mutex_init(&w->mu, NULL);
    if ((rc = kj_ticker_start(WAIT_TICK_MS, notify_tick, w, "wait notifier", &w->ticker,
                              err)) != 0) {
        pthread_mutex_destroy(&w->mu);
        free(w->users);
        free(w);
        return rc;
    }
    *out = w;
    return 0;
}

void wait_free(struct wait_list *w)
{
    if (w == NULL)
        return;
    kj_ticker_stop(w->ticker);
    KJ_ASSERT(w->count == 0);
    if (w->held != 0)
        kj_log(KJ_LOG_WARN, "wait", "slots still held at exit held=%d", w->held);
    pthread_mutex_destroy(&w->mu);
    free(w->users);
    free(w);
}

/* Under the mutex: user_id's counter, or NULL when it holds no slot. */
static struct wait_user *find_user(struct wait_list *w, int64_t user_id)
{
    for (int i = 0; i < w->nusers; i++)
        if (w->users[i].user_id == user_id)
            return &w->users[i];
    return NULL;
}

int wait_hold(struct wait_list *w, struct wait_hold *h, int64_t user_id, int exempt,
              struct kj_err *err)
{
    struct wait_user *u;
    int rc = 0;
    pthread_mutex_lock(&w->mu);
    if (KJ_NEVER(h->held)) { /* one slot per request or stream */
        pthread_mutex_unlock(&w->mu);
        return KJ_FAIL(err, KJ_EINTERNAL, "this request holds a waiting slot already");
    }
    h->user_full = 0;
    u = find_user(w, user_id);
    if (w->held >= w->max_total) {
        rc = KJ_FAIL(err, KJ_ELIMIT, "all %d waiting slots are taken", w->max_total);
    } else if (!exempt && u != NULL && u->n >= w->max_per_user) {
        h->user_full = 1;
        rc = KJ_FAIL(err, KJ_ELIMIT, "at most %d waiting requests and event streams per user",
                     w->max_per_user);
    } else {
        if (u == NULL) {
            KJ_ASSERT(w->nusers < w->max_total); /* each user in the array holds >= 1 slot */
            u = &w->users[w->nusers++];
            u->user_id = user_id;
            u->n = 0;
        }
        u->n++;
        w->held++;
        h->user_id = user_id;
        h->held = 1;
    }
    pthread_mutex_unlock(&w->mu);
    return rc;
}

void wait_unhold(struct wait_list *w, struct wait_hold *h)
{
    struct wait_user *u;
    pthread_mutex_lock(&w->mu);
    if (h->held) {
        u = find_user(w, h->user_id);
        KJ_ASSERT(u != NULL && u->n > 0 && w->held > 0);
        w->held--;
        if (--u->n == 0)
            *u = w->users[--w->nusers];
        h->held = 0;
    }
    pthread_mutex_unlock(&w->mu);
}

void wait_counts(struct wait_list *w, int64_t user_id, int *total, int *user)
{
    struct wait_user *u;
    pthread_mutex_lock(&w->mu);
    u = find_user(w, user_id);
    *total = w->held;
    *user = u != NULL ? u->n : 0;
    pthread_mutex_unlock(&w->mu);
}

/* Link e (waiting for submission_id, or for a job of gpu when not NULL)
 * until deadline_ms (wait_now_ms's clock). */
static int add_entry(struct wait_list *w, struct wait_entry *e, const struct wait_hold *h,
                     struct MHD_Connection *conn, int64_t submission_id, const char *gpu,
                     int64_t deadline_ms, struct kj_err *err)
{
    int rc = 0;
    pthread_mutex_lock(&w->mu);
    KJ_ASSERT(!e->linked && h->held);
    if (w->stopping) {
        rc = KJ_FAIL(err, KJ_ECONFLICT, "the server is stopping");
    } else {
        KJ_ASSERT(w->count < w->held); /* every linked entry sits on a held slot */
        memset(e, 0, sizeof *e);
        e->conn = conn;
        e->submission_id = submission_id;
        if (gpu != NULL)
            snprintf(e->gpu, sizeof e->gpu, "%s", gpu);
        e->user_id = h->user_id;
        e->deadline_ms = deadline_ms;
        e->linked = 1;
        e->next = w->head;
        if (w->head != NULL)
            w->head->prev = e;
        w->head = e;
        w->count++;
        KJ_ASSERT(assert_wait_state(e));
    }
    pthread_mutex_unlock(&w->mu);
    return rc;
}

int wait_add(struct wait_list *w, struct wait_entry *e, const struct wait_hold *h,
             struct MHD_Connection *conn, int64_t submission_id, int timeout_s,
             struct kj_err *err)
{
    return add_entry(w, e, h, conn, submission_id, NULL,
                     wait_now_ms() + (int64_t)timeout_s * 1000, err);
}

int wait_add_claim(struct wait_list *w, struct wait_entry *e, const struct wait_hold *h,
                   struct MHD_Connection *conn, const char *gpu, int64_t deadline_ms,
                   struct kj_err *err)
{
    if (KJ_NEVER(gpu == NULL || gpu[0] == '\0' || strlen(gpu) >= sizeof e->gpu))
        return KJ_FAIL(err, KJ_EINVAL, "a claim waits for a GPU type name");
    return add_entry(w, e, h, conn, 0, gpu, deadline_ms, err);
}

void wait_parked(struct wait_list *w, struct wait_entry *e)
{
    pthread_mutex_lock(&w->mu);
    KJ_ASSERT(e->linked && !e->parked && assert_wait_state(e));
    e->parked = 1;
    kj_ticker_kick(w->ticker);
    pthread_mutex_unlock(&w->mu);
}

void wait_remove(struct wait_list *w, struct wait_entry *e)
{
    pthread_mutex_lock(&w->mu);
    unlink_entry(w, e);
    pthread_mutex_unlock(&w->mu);
}

void wait_notify(struct wait_list *w, int64_t submission_id)
{
    int woke = 0;
    pthread_mutex_lock(&w->mu);
    for (struct wait_entry *e = w->head; e != NULL; e = e->next) {
        if (e->submission_id == submission_id) {
            e->ready = 1;
            woke = 1;
        }
    }
    if (woke)
        kj_ticker_kick(w->ticker);
    pthread_mutex_unlock(&w->mu);
}

void wait_notify_gpu(struct wait_list *w, const char *gpu)
{
    int woke = 0;
    pthread_mutex_lock(&w->mu);
    for (struct wait_entry *e = w->head; e != NULL; e = e->next) {
        if (e->gpu[0] != '\0' && (gpu == NULL || strcmp(e->gpu, gpu) == 0)) {
            e->ready = 1;
            woke = 1;
        }
    }
    if (woke)
        kj_ticker_kick(w->ticker);
    pthread_mutex_unlock(&w->mu);
}

void wait_kick_user(struct wait_list *w, int64_t user_id)
{
    int woke = 0;
    pthread_mutex_lock(&w->mu);
    for (struct wait_entry *e = w->head; e != NULL; e = e->next) {
        if (e->user_id == user_id) {
            e->ready = e->kicked = 1;
            woke = 1;
        }
    }
    if (woke)
        kj_ticker_kick(w->ticker);
    pthread_mutex_unlock(&w->mu);
}

void wait_release_all(struct wait_list *w, int timeout_ms)
{
    int64_t until = wait_now_ms() + timeout_ms;
    pthread_mutex_lock(&w->mu);
    w->stopping = 1;
    kj_ticker_kick(w->ticker);
    while (w->count > 0 && wait_now_ms() < until) {
        pthread_mutex_unlock(&w->mu);
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&w->mu);
        kj_ticker_kick(w->ticker);
    }
    if (w->count > 0)
        kj_log(KJ_LOG_WARN, "wait", "still linked at shutdown count=%d", w->count);
    pthread_mutex_unlock(&w->mu);
}
