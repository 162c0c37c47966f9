/*
 * mono.h - the runner's one clock: CLOCK_MONOTONIC in seconds. The
 * deadlines of the boxes, the compiles and nvdisasm, and the wall times in
 * the reports all read it; the supervisor's waits (mono_sleep) too.
 */
#ifndef KJ_MONO_H
#define KJ_MONO_H

#include <signal.h>
#include <time.h>

static inline double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Sleep s seconds, or less when *stop is set (looked at every 0.1 s). */
static inline void mono_sleep(double s, const volatile sig_atomic_t *stop)
{
    double until = mono_now() + s;
    for (double left = s; left > 0 && !*stop; left = until - mono_now()) {
        double step = left < 0.1 ? left : 0.1;
        struct timespec ts = {0, (long)(step * 1e9)};
        nanosleep(&ts, NULL);
    }
}

#endif
