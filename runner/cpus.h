/*
 * cpus.h - the CPUs a host's compile boxes may use: all that the runner may
 * use except the first few, which stay free for the run boxes.
 *
 * A timed sample is a GPU measurement, but the box's launching thread must
 * queue its launches while the stream is held by the blocking kernel; a
 * thread that waits for a CPU then may let the GPU idle inside the sample.
 * On an H200 host, leaderboard runs beside fourteen NVRTC workers kept the
 * same mean score but twice the spread (docs/timing.md 7.3). So the compile
 * boxes (cbox.c, which applies the set in each child before NVRTC runs)
 * keep off the first R CPUs of the runner's affinity mask, one per GPU of
 * the host, and the scheduler finds those idle when a run box wakes up;
 * compile slots (cslot.c) count only the CPUs that are left.
 *
 * R is the number of GPUs of the host (the /dev/nvidiaN device nodes),
 * $KJUDGE_TIMING_CPUS when set (0 to 1024; 0 = keep none), and never more
 * than half the CPUs, so compiles keep at least half. A host without a GPU
 * (CI, a server) keeps none. Pure computation plus two reads of the host
 * (the affinity mask, /dev); no state.
 */
#ifndef KJ_CPUS_H
#define KJ_CPUS_H

#include <sched.h>

/* The CPUs to keep free: $KJUDGE_TIMING_CPUS, else the host's GPU count;
 * -1 when the variable is set but not a whole number from 0 to 1024. */
int cpus_reserved(void);

/* The compile set from the allowed mask: allowed less its first reserve
 * CPUs (at most half of them, rounded down). Returns the CPUs in *out; 0
 * (and *out = allowed) when nothing is kept free. */
int cpus_compile_set_from(const cpu_set_t *allowed, int reserve, cpu_set_t *out);

/* The compile set of this process (its affinity mask, cpus_reserved()):
 * the count of *out, 0 when compiles may run anywhere the runner may
 * (*out then the whole mask), -1 when the mask cannot be read. */
int cpus_compile_set(cpu_set_t *out);

#endif
