/*
 * teardown.c - a judged job's boxes torn down beside the next job (see
 * teardown.h).
 *
 * serve.c's main thread posts a job's result, then teardown_start() gives
 * the job's judge_leftover to a new thread, which reaps the killed boxes
 * (judge_leftover_finish: waitpid, the cgroup removed), logs how long that
 * took and clears busy. The main thread meanwhile claims the next job.
 * busy is set before the thread exists and cleared by it last, under mu,
 * so a waiter on any thread (the watcher giving a job back before the
 * process ends) sees the teardown as running until it is over. Only the
 * main thread starts and joins threads, so one thread is never joined
 * twice.
 */
#include "teardown.h"
#include "judge.h"
#include "kj_err.h"
#include "mono.h"

#include <time.h>

/* Tear down now, on this thread: reap, log, and clear busy. */
static void teardown_run(struct teardown *t)
{
    double t0 = mono_now();
    judge_leftover_finish(t->left);
    t->left = NULL;
    kj_log(KJ_LOG_INFO, "serve", "torn down job=%ld in %.3f s", t->job_id, mono_now() - t0);
    pthread_mutex_lock(&t->mu);
    t->busy = 0;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

static void *teardown_main(void *arg)
{
    teardown_run(arg);
    return NULL;
}

int teardown_init(struct teardown *t)
{
    pthread_condattr_t ca;
    t->joinable = t->busy = 0;
    t->left = NULL;
    t->job_id = 0;
    if (pthread_mutex_init(&t->mu, NULL) != 0)
        return KJ_EINTERNAL;
    if (pthread_condattr_init(&ca) != 0) {
        pthread_mutex_destroy(&t->mu);
        return KJ_EINTERNAL;
    }
    int ok = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 && pthread_cond_init(&t->cv, &ca) == 0;
    pthread_condattr_destroy(&ca);
    if (!ok) {
        pthread_mutex_destroy(&t->mu);
        return KJ_EINTERNAL;
    }
    return KJ_OK;
}

void teardown_wait(struct teardown *t)
{
    if (t->joinable) {
        pthread_join(t->tid, NULL); /* the thread cleared busy last */
        t->joinable = 0;
    }
}

void teardown_start(struct teardown *t, long job_id, struct judge_leftover *left)
{
    teardown_wait(t); /* at most one at a time */
    if (left == NULL)
        return;
    t->left = left;
    t->job_id = job_id;
    pthread_mutex_lock(&t->mu);
    t->busy = 1;
    pthread_mutex_unlock(&t->mu);
    if (pthread_create(&t->tid, NULL, teardown_main, t) == 0) {
        t->joinable = 1;
        return;
    }
    kj_log(KJ_LOG_WARN, "serve", "no thread for the teardown of job=%ld: done now", job_id);
    teardown_run(t);
}

int teardown_wait_for(struct teardown *t, double seconds)
{
    double until = mono_now() + seconds;
    struct timespec ts = {(time_t)until, (long)((until - (double)(time_t)until) * 1e9)};
    pthread_mutex_lock(&t->mu);
    while (t->busy && pthread_cond_timedwait(&t->cv, &t->mu, &ts) == 0)
        ;
    int idle = !t->busy;
    pthread_mutex_unlock(&t->mu);
    return idle;
}

void teardown_destroy(struct teardown *t)
{
    teardown_wait(t);
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
}
