/*
 * mono.h - the runner's one clock: CLOCK_MONOTONIC in seconds. The
 * deadlines of the boxes, the compiles and nvdisasm, and the wall times in
 * the reports all read it.
 */
#ifndef KJ_MONO_H
#define KJ_MONO_H

#include <time.h>

static inline double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
