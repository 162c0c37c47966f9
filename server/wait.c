/*
 * wait.c - the list of parked ?wait=1 connections and its notifier thread.
 *
 * See wait.h for the protocol. The notifier collects due entries under the
 * mutex, unlinks them, and calls MHD_resume_connection() after dropping the
 * mutex, so no MHD lock is ever taken while ours is held. Probing a parked
 * socket (MHD_get_connection_info only reads a field of the connection,
 * which stays valid while it is suspended) is done under our mutex.
 *
 * Slots come from two pools, each with a total and a cap per holder:
 * users' ?wait=1 requests and event streams, and runners' long-poll claims
 * (per runner token), so that neither side can take the other's slots. In
 * each pool the slots are counted per holder in a small array (at most
 * its total hold one at a time), searched linearly under the mutex.
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

/* One pool of slots (WAIT_POOL_*). */
struct wait_pool {
    int max_total, max_per_user;
    int held;                  /* slots held, all holders */
    struct wait_user *users;   /* owned: max_total entries, the first nusers in use */
    int nusers;
};

struct wait_list {
    pthread_mutex_t mu;
    struct kj_ticker *ticker;  /* owned: the notifier; kicked on notify, park and stop */
    struct wait_entry *head;   /* linked entries */
    int count;                 /* linked entries */
    int stopping;              /* refuse new entries, resume everything */
    struct wait_pool pool[WAIT_POOLS];
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

/* Free w's pools and w (NULL is fine); the ticker is not running. */
static void free_list(struct wait_list *w)
{
    if (w == NULL)
        return;
    for (int i = 0; i < WAIT_POOLS; i++)
        free(w->pool[i].users);
    free(w);
}

int wait_start(struct wait_list **out, const struct wait_limits *lim, struct kj_err *err)
{
    const int sizes[WAIT_POOLS][2] = {{lim->total, lim->per_user},
                                      {lim->claims, lim->claims_per_runner}};
    struct wait_list *w = calloc(1, sizeof *w);
    int rc;
    *out = NULL;
    for (int i = 0; i < WAIT_POOLS; i++) {
        if (KJ_NEVER(sizes[i][0] < 1 || sizes[i][1] < 1)) { /* serve checks its options */
            free_list(w);
            return KJ_FAIL(err, KJ_EINVAL, "the wait list needs at least one slot");
        }
        if (w != NULL && (w->pool[i].users = calloc((size_t)sizes[i][0],
                                                    sizeof *w->pool[i].users)) == NULL) {
            free_list(w);
            w = NULL;
        }
        if (w == NULL)
            return KJ_FAIL(err, KJ_ENOMEM, "out of memory starting the wait list");
        w->pool[i].max_total = sizes[i][0];
        w->pool[i].max_per_user = sizes[i][1];
    }
    pthread_mutex_init(&w->mu, NULL);
    if ((rc = kj_ticker_start(WAIT_TICK_MS, notify_tick, w, "wait notifier", &w->ticker,
                              err)) != 0) {
        pthread_mutex_destroy(&w->mu);
        free_list(w);
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
    if (w->pool[0].held + w->pool[1].held != 0)
        kj_log(KJ_LOG_WARN, "wait", "slots still held at exit held=%d claims=%d",
               w->pool[0].held, w->pool[1].held);
    pthread_mutex_destroy(&w->mu);
    free_list(w);
}

/* Under the mutex: user_id's counter in p, or NULL when it holds no slot. */
static struct wait_user *find_user(struct wait_pool *p, int64_t user_id)
{
    for (int i = 0; i < p->nusers; i++)
        if (p->users[i].user_id == user_id)
            return &p->users[i];
    return NULL;
}

/* Take a slot of pool for user_id into h (see wait_hold). */
static int hold_slot(struct wait_list *w, int pool, struct wait_hold *h, int64_t user_id,
                     int exempt, struct kj_err *err)
{
    static const char *const full[WAIT_POOLS] = {
        "waiting requests and event streams per user", "parked claims per runner token"};
    struct wait_pool *p = &w->pool[pool];
    struct wait_user *u;
    int rc = 0;
    pthread_mutex_lock(&w->mu);
    if (KJ_NEVER(h->held)) { /* one slot per request or stream */
        pthread_mutex_unlock(&w->mu);
        return KJ_FAIL(err, KJ_EINTERNAL, "this request holds a waiting slot already");
    }
    h->user_full = 0;
    u = find_user(p, user_id);
    if (p->held >= p->max_total) {
        rc = KJ_FAIL(err, KJ_ELIMIT, "all %d %s slots are taken", p->max_total,
                     pool == WAIT_POOL_CLAIMS ? "claim" : "waiting");
    } else if (!exempt && u != NULL && u->n >= p->max_per_user) {
        h->user_full = 1;
        rc = KJ_FAIL(err, KJ_ELIMIT, "at most %d %s", p->max_per_user, full[pool]);
    } else {
        if (u == NULL) {
            KJ_ASSERT(p->nusers < p->max_total); /* each user in the array holds >= 1 slot */
            u = &p->users[p->nusers++];
            u->user_id = user_id;
            u->n = 0;
        }
        u->n++;
        p->held++;
        h->user_id = user_id;
        h->pool = pool;
        h->held = 1;
    }
    pthread_mutex_unlock(&w->mu);
    return rc;
}

int wait_hold(struct wait_list *w, struct wait_hold *h, int64_t user_id, int exempt,
              struct kj_err *err)
{
    return hold_slot(w, WAIT_POOL_USERS, h, user_id, exempt, err);
}

int wait_hold_claim(struct wait_list *w, struct wait_hold *h, int64_t runner_id,
                    struct kj_err *err)
{
    return hold_slot(w, WAIT_POOL_CLAIMS, h, runner_id, 0, err);
}

void wait_unhold(struct wait_list *w, struct wait_hold *h)
{
    struct wait_pool *p;
    struct wait_user *u;
    pthread_mutex_lock(&w->mu);
    if (h->held) {
        KJ_ASSERT(h->pool >= 0 && h->pool < WAIT_POOLS);
        p = &w->pool[h->pool];
        u = find_user(p, h->user_id);
        KJ_ASSERT(u != NULL && u->n > 0 && p->held > 0);
        p->held--;
        if (--u->n == 0)
            *u = p->users[--p->nusers];
        h->held = 0;
    }
    pthread_mutex_unlock(&w->mu);
}

void wait_counts(struct wait_list *w, int pool, int64_t user_id, int *total, int *user)
{
    struct wait_user *u;
    KJ_ASSERT(pool >= 0 && pool < WAIT_POOLS);
    pthread_mutex_lock(&w->mu);
    u = find_user(&w->pool[pool], user_id);
    *total = w->pool[pool].held;
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
        /* every linked entry sits on a held slot */
        KJ_ASSERT(w->count < w->pool[0].held + w->pool[1].held);
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
