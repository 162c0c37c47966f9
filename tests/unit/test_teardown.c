/*
 * test_teardown.c - runner/teardown.c: a job's leftover torn down on a
 * thread of its own, one at a time.
 *
 * The leftovers here are stand-ins (judge.h lets any finish be given) that
 * sleep, as a run box's reaping does while its CUDA context goes, and
 * record when they began and ended. Checks: teardown_start returns before
 * the leftover is torn down; a second start waits for the first, so two
 * never overlap; teardown_wait_for from another thread sees a running
 * teardown, times out while it runs and returns 1 once it is over;
 * teardown_wait and teardown_destroy leave nothing running; a NULL
 * leftover is nothing to do.
 */
#define KT_MAIN
#include "kt.h"

#include "judge.h"
#include "mono.h"
#include "teardown.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

struct slow_left {
    struct judge_leftover base; /* first */
    double sleep_s;
    double *began, *ended;      /* when finish began and ended (mono_now) */
};

static void slow_finish(struct judge_leftover *left)
{
    struct slow_left *s = (struct slow_left *)left;
    *s->began = mono_now();
    struct timespec ts = {0, (long)(s->sleep_s * 1e9)};
    nanosleep(&ts, NULL);
    *s->ended = mono_now();
    free(s);
}

static struct judge_leftover *slow_new(double sleep_s, double *began, double *ended)
{
    struct slow_left *s = malloc(sizeof *s);
    if (s == NULL)
        return NULL;
    s->base.finish = slow_finish;
    s->sleep_s = sleep_s;
    s->began = began;
    s->ended = ended;
    *began = *ended = 0;
    return &s->base;
}

struct waiter {
    struct teardown *t;
    double seconds;
    int idle;
};

static void *wait_thread(void *arg)
{
    struct waiter *w = arg;
    w->idle = teardown_wait_for(w->t, w->seconds);
    return NULL;
}

static void test_one_at_a_time(void)
{
    struct teardown t;
    double b1, e1, b2, e2;
    KT_CHECK(teardown_init(&t) == KJ_OK, "teardown_init");
    KT_CHECK(teardown_wait_for(&t, 0.01) == 1, "nothing runs at first");

    teardown_start(&t, 1, slow_new(0.3, &b1, &e1));
    KT_CHECK(teardown_wait_for(&t, 0) == 0, "start returns before the teardown is over");

    struct waiter w = {&t, 0.05, -1};
    pthread_t tid;
    pthread_create(&tid, NULL, wait_thread, &w);
    pthread_join(tid, NULL);
    KT_CHECK(w.idle == 0, "another thread sees it running (its short wait times out)");

    teardown_start(&t, 2, slow_new(0.1, &b2, &e2)); /* waits for job 1's */
    KT_CHECK(e1 > 0, "a second start waits for the first teardown to end");

    w.seconds = 5;
    w.idle = -1;
    pthread_create(&tid, NULL, wait_thread, &w);
    pthread_join(tid, NULL);
    KT_CHECK(w.idle == 1 && e2 > 0, "a long enough wait from another thread sees it end");
    KT_CHECK(b2 >= e1, "the two never overlapped: first ended %.3f, second began %.3f", e1, b2);

    teardown_wait(&t);
    KT_CHECK(teardown_wait_for(&t, 0) == 1, "teardown_wait: nothing runs");
    teardown_start(&t, 3, NULL);
    KT_CHECK(teardown_wait_for(&t, 0) == 1, "a NULL leftover is nothing to do");

    teardown_start(&t, 4, slow_new(0.1, &b1, &e1));
    teardown_destroy(&t);
    KT_CHECK(e1 > 0, "teardown_destroy waits for the running teardown");
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    test_one_at_a_time();
    return kt_done("test_teardown");
}
