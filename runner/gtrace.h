/*
 * gtrace.h - the run box's recording of kernel, copy and set activity with
 * CUPTI (docs/timing.md, "GPU time"): the GPU's own start and end
 * timestamps of every kernel, memcpy and memset, beside the events. box.c
 * starts it in box_init (before the sandbox locks and before any
 * submission code runs); box_time.c marks each timed call's window
 * (gputime.h) and collects the call's records after the call has finished
 * on the GPU.
 *
 * libcupti is opened at run time: $KJUDGE_CUPTI_LIB names the file, else
 * "libcupti.so.13" is found through the loader's path (LD_LIBRARY_PATH,
 * the toolkit's lib64 in the runner's rpath). When it is missing, too old,
 * or refuses (another tool owns it: a profiler, a sanitizer), gtrace_start
 * says why and the box times with events only; the result then says so.
 * $KJUDGE_GPU_TIME=0 turns the recording off.
 *
 * What the submission can reach, and what defends the records:
 *   - A CUDA entry runs only device code, between the blocking kernel's
 *     release and the box's context-wide synchronisation. CUPTI hands the
 *     records over (gtrace_collect) only after that synchronisation, so no
 *     kernel of the entry runs while they are parsed; they are copied at
 *     once into this module's store, and CUPTI's buffer is unmapped. The
 *     store is mapped read-only except while gtrace writes it, so a kernel
 *     reaching host memory (HMM, or a mapped pointer it found) faults
 *     instead of writing it. What is not defended: CUPTI's own device-side
 *     staging of the timestamps, which lives in the context's memory; a
 *     kernel that found and rewrote it would change its own times. The
 *     checks of gputime_span (count of kernels, order, inside the events,
 *     no more launch path than the job's empty kernel shows) bound what
 *     that could gain, and a job whose records fail them has no GPU time.
 *   - A Python entry runs in this process: its code could call CUPTI
 *     itself (PyTorch's profiler takes the activity callbacks over), or
 *     write any memory. Only the checks stand there: missing or extra
 *     records, or a span the events contradict, end the job's GPU time.
 *
 * One recording per process: CUPTI's buffer callbacks carry no user
 * pointer, so the store the callbacks fill is this module's one static
 * (gtrace_start makes it; nothing else may start CUPTI in the box).
 */
#ifndef KJ_GTRACE_H
#define KJ_GTRACE_H

#include <stddef.h>
#include <stdint.h>
#include "gputime.h"

#define GTRACE_MAX_RECS 65536  /* records kept between two gtrace_clear; more are counted lost */

/* Start recording kernel, copy and set activity. 0, or -1 with why filled:
 * then nothing is recorded and the other calls do nothing. */
int gtrace_start(char *why, size_t whysz);

/* 1 while recording. */
int gtrace_on(void);

/* Around one driver call of the harness: gtrace_mark_arm(), the call,
 * gtrace_mark_take() returns the call's correlation id (0: none seen). The
 * first mark after gtrace_clear is also the store's floor: records of
 * earlier launches are not kept. */
void gtrace_mark_arm(void);
uint32_t gtrace_mark_take(void);

/* Hand every finished record to the store: call after the context is
 * synchronised (one collect for the calls of a request: a forced flush
 * costs host time). *recs points at the store (read-only, valid until the
 * next gtrace_collect or gtrace_clear), *n its records; *lost counts
 * records CUPTI dropped or the store had no room for since the last
 * gtrace_clear. 0, or -1 with why filled. */
int gtrace_collect(const struct gputime_rec **recs, size_t *n, long *lost, char *why, size_t whysz);

/* Forget the stored records, and keep none of launches before the next
 * mark (before the first call of a request). */
void gtrace_clear(void);

#endif
