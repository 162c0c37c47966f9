/*
 * kj_ticker.c - the periodic background thread of kj_ticker.h, with a
 * monotonic timed wait so that wall-clock steps neither stall nor rush it.
 */
#include "kj_ticker.h"
#include "kj_err.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct kj_ticker {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;      /* signalled by kick and stop; CLOCK_MONOTONIC */
    unsigned period_ms;
    kj_ticker_fn fn;
    void *arg;
    int kicked;             /* under mu: run the next tick now */
    int quit;               /* under mu: leave the loop */
};

static void deadline_after(struct timespec *ts, unsigned ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

static void *ticker_main(void *p)
{
    struct kj_ticker *t = p;
    struct timespec until;
    pthread_mutex_lock(&t->mu);
    deadline_after(&until, t->period_ms);
    while (!t->quit) {
        int rc = 0;
        while (!t->quit && !t->kicked && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&t->cv, &t->mu, &until);
        if (t->quit)
            break;
        t->kicked = 0;
        pthread_mutex_unlock(&t->mu);
        t->fn(t->arg);
        pthread_mutex_lock(&t->mu);
        deadline_after(&until, t->period_ms);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

int kj_ticker_start(unsigned period_ms, kj_ticker_fn fn, void *arg, const char *name,
                    struct kj_ticker **out, struct kj_err *err)
{
    struct kj_ticker *t = calloc(1, sizeof *t);
    pthread_condattr_t ca;
    int rc;

    *out = NULL;
    if (t == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory starting the %s thread", name);
    t->period_ms = period_ms;
    t->fn = fn;
    t->arg = arg;
    pthread_mutex_init(&t->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&t->cv, &ca);
    pthread_condattr_destroy(&ca);
    if ((rc = pthread_create(&t->thread, NULL, ticker_main, t)) != 0) {
        pthread_cond_destroy(&t->cv);
        pthread_mutex_destroy(&t->mu);
        free(t);
        return KJ_FAIL(err, KJ_EINTERNAL, "pthread_create(%s): %s", name, strerror(rc));
    }
    *out = t;
    return 0;
}

void kj_ticker_kick(struct kj_ticker *t)
{
    pthread_mutex_lock(&t->mu);
    t->kicked = 1;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

void kj_ticker_stop(struct kj_ticker *t)
{
    if (t == NULL)
        return;
    pthread_mutex_lock(&t->mu);
    t->quit = 1;
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
    pthread_join(t->thread, NULL);
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    free(t);
}
