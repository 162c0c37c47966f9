/*
 * wait.c - the list of parked ?wait=1 connections and its notifier thread.
 *
 * See wait.h for the protocol. The notifier collects due entries under the
 * mutex, unlinks them, and calls MHD_resume_connection() after dropping the
 * mutex, so no MHD lock is ever taken while ours is held.
 */
#include "wait.h"
#include "server.h"

#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WAIT_BATCH 64

struct wait_list {
    pthread_mutex_t mu;
    pthread_cond_t cv;         /* signalled on notify, park and stop */
    struct wait_entry *head;   /* linked entries */
    int count;                 /* linked entries */
    int stopping;              /* refuse new entries, resume everything */
    int quit;                  /* the thread should exit */
    pthread_t thread;
};

/* The entry states of wait.h hold; returns 1 so it can sit in KJ_ASSERT. */
static int assert_wait_state(const struct wait_entry *e)
{
    if (!e->linked)
        return e->prev == NULL && e->next == NULL;
    return e->conn != NULL && e->submission_id > 0 && (!e->parked || e->linked);
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
        if (!e->ready && !w->stopping && now < e->deadline_ms)
            continue;
        e->timed_out = !e->ready;
        out[n++] = e->conn;
        unlink_entry(w, e);
    }
    return n;
}

static void *notifier(void *arg)
{
    struct wait_list *w = arg;
    struct MHD_Connection *due[WAIT_BATCH];
    pthread_mutex_lock(&w->mu);
    while (!w->quit) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += WAIT_TICK_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        int rc = pthread_cond_timedwait(&w->cv, &w->mu, &until);
        KJ_ASSERT(rc == 0 || rc == ETIMEDOUT);
        int n;
        while ((n = collect_due(w, due, WAIT_BATCH)) > 0) {
            pthread_mutex_unlock(&w->mu);
            for (int i = 0; i < n; i++)
                MHD_resume_connection(due[i]);
            pthread_mutex_lock(&w->mu);
        }
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int wait_start(struct wait_list **out, struct kj_err *err)
{
    struct wait_list *w = calloc(1, sizeof *w);
    int rc;
    *out = NULL;
    if (w == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory starting the wait list");
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    if ((rc = pthread_create(&w->thread, NULL, notifier, w)) != 0) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        free(w);
        return KJ_FAIL(err, KJ_EINTERNAL, "pthread_create(notifier): %s", strerror(rc));
    }
    *out = w;
    return 0;
}

void wait_free(struct wait_list *w)
{
    if (w == NULL)
        return;
    pthread_mutex_lock(&w->mu);
    w->quit = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    KJ_ASSERT(w->count == 0);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

int wait_add(struct wait_list *w, struct wait_entry *e, struct MHD_Connection *conn,
             int64_t submission_id, int timeout_s, struct kj_err *err)
{
    int rc = 0;
    pthread_mutex_lock(&w->mu);
    KJ_ASSERT(!e->linked);
    if (w->stopping) {
        rc = KJ_FAIL(err, KJ_ECONFLICT, "the server is stopping");
    } else if (w->count >= KJ_MAX_WAITERS) {
        rc = KJ_FAIL(err, KJ_ELIMIT, "%d requests are already waiting", KJ_MAX_WAITERS);
    } else {
        memset(e, 0, sizeof *e);
        e->conn = conn;
        e->submission_id = submission_id;
        e->deadline_ms = wait_now_ms() + (int64_t)timeout_s * 1000;
        e->linked = 1;
        e->next = w->head;
        if (w->head != NULL)
            w->head->prev = e;
        w->head = e;
        w->count++;
    }
    pthread_mutex_unlock(&w->mu);
    return rc;
}

void wait_parked(struct wait_list *w, struct wait_entry *e)
{
    pthread_mutex_lock(&w->mu);
    KJ_ASSERT(e->linked && !e->parked && assert_wait_state(e));
    e->parked = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void wait_remove(struct wait_list *w, struct wait_entry *e)
{
    pthread_mutex_lock(&w->mu);
    unlink_entry(w, e);
    pthread_cond_broadcast(&w->cv);
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
        pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void wait_release_all(struct wait_list *w, int timeout_ms)
{
    int64_t until = wait_now_ms() + timeout_ms;
    pthread_mutex_lock(&w->mu);
    w->stopping = 1;
    pthread_cond_signal(&w->cv);
    while (w->count > 0 && wait_now_ms() < until) {
        pthread_mutex_unlock(&w->mu);
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&w->mu);
        pthread_cond_signal(&w->cv);
    }
    if (w->count > 0)
        kj_log(KJ_LOG_WARN, "wait", "still linked at shutdown count=%d", w->count);
    pthread_mutex_unlock(&w->mu);
}
