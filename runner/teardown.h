/*
 * teardown.h - a judged job's boxes torn down on a thread of their own,
 * while the supervisor (runner/serve.c) already claims and judges the next
 * job. At most one teardown runs; starting a second waits for the first.
 *
 * Used by serve.c only: it posts a job's result, hands the job's
 * judge_leftover (judge.h) to teardown_start() and asks for the next job.
 * Before judging anything but a test-mode job, before a GPU health check
 * and before it ends, it waits (teardown_wait) so that no ranked timing and
 * no health check shares the GPU with a context being destroyed; why the
 * overlap is safe is written in serve.c's top comment.
 */
#ifndef KJ_TEARDOWN_H
#define KJ_TEARDOWN_H

#include <pthread.h>

struct judge_leftover;

struct teardown {
    pthread_mutex_t mu;          /* guards busy */
    pthread_cond_t cv;           /* on CLOCK_MONOTONIC: broadcast when busy drops to 0 */
    pthread_t tid;
    int joinable;                /* tid is to be joined (the owner's thread only) */
    int busy;                    /* 1 from teardown_start until the leftover is torn down */
    struct judge_leftover *left; /* owned by the thread while busy */
    long job_id;                 /* whose it is, for the log */
};

/* Set up t (nothing running). 0, or KJ_EINTERNAL when pthreads fail. */
int teardown_init(struct teardown *t);

/* Tear down left (job job_id's; NULL: nothing) on a thread, after waiting
 * for the one before; takes ownership of left. Logs "torn down job=N in
 * X s" when done. Without a thread (pthread_create failed) it tears down
 * here. Only the thread that owns t calls it. */
void teardown_start(struct teardown *t, long job_id, struct judge_leftover *left);

/* Wait until no teardown runs (and join its thread). The owner's thread only. */
void teardown_wait(struct teardown *t);

/* Any thread: wait at most seconds for the running teardown to end.
 * 1 when none runs, 0 when it still does. Never joins. */
int teardown_wait_for(struct teardown *t, double seconds);

/* teardown_wait(), then release t's mutex and condition. */
void teardown_destroy(struct teardown *t);

#endif
