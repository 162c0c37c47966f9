/*
 * lease.c - the lease sweeper thread (see lease.h).
 *
 * One thread, woken every LEASE_TICK_MS or to quit. A failed sweep is
 * logged and tried again at the next tick; it never stops the server.
 */
#include "lease.h"
#include "db.h"
#include "wait.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct lease_sweeper {
    pthread_mutex_t mu;
    pthread_cond_t cv;       /* signalled to quit */
    int quit;
    struct db *db;           /* borrowed */
    struct wait_list *wait;  /* borrowed */
    pthread_t thread;
};

/* One sweep: requeue or fail the expired jobs, log them, wake their waiters. */
static void sweep_once(struct lease_sweeper *s)
{
    struct db_expired *ex = NULL;
    struct kj_err err;
    int n = 0;
    kj_err_clear(&err);
    if (db_lease_sweep(s->db, db_now_ms(), &ex, &n, &err) != 0) {
        kj_log(KJ_LOG_ERROR, "lease", "sweep failed: %s", err.msg);
        return;
    }
    for (int i = 0; i < n; i++) {
        if (ex[i].failed)
            kj_log(KJ_LOG_WARN, "lease", "expired id=%lld runner=%s attempts=%d: failed as "
                   "internal_error", (long long)ex[i].id, ex[i].runner_name, ex[i].attempts);
        else
            kj_log(KJ_LOG_WARN, "lease", "expired id=%lld runner=%s attempts=%d: queued again",
                   (long long)ex[i].id, ex[i].runner_name, ex[i].attempts);
        wait_notify(s->wait, ex[i].id);
    }
    free(ex);
}

static void *sweeper(void *arg)
{
    struct lease_sweeper *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->quit) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += LEASE_TICK_MS * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        int rc = pthread_cond_timedwait(&s->cv, &s->mu, &until);
        KJ_ASSERT(rc == 0 || rc == ETIMEDOUT);
        if (s->quit)
            break;
        pthread_mutex_unlock(&s->mu);
        sweep_once(s);
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

int lease_start(struct db *db, struct wait_list *wait, struct lease_sweeper **out,
                struct kj_err *err)
{
    struct lease_sweeper *s = calloc(1, sizeof *s);
    int rc;
    *out = NULL;
    if (s == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory starting the lease sweeper");
    s->db = db;
    s->wait = wait;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    if ((rc = pthread_create(&s->thread, NULL, sweeper, s)) != 0) {
        pthread_cond_destroy(&s->cv);
        pthread_mutex_destroy(&s->mu);
        free(s);
        return KJ_FAIL(err, KJ_EINTERNAL, "pthread_create(lease sweeper): %s", strerror(rc));
    }
    *out = s;
    return 0;
}

void lease_free(struct lease_sweeper *s)
{
    if (s == NULL)
        return;
    pthread_mutex_lock(&s->mu);
    s->quit = 1;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->thread, NULL);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}
