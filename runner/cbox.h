/*
 * cbox.h - the compile box: runs compile_source() (NVRTC) in a fresh child
 * process inside the sandbox (sandbox.h: namespaces, read-only toolkit, uid
 * 65534, seccomp) with CPU, memory and wall-time limits, and brings the
 * result back over a pipe. The judge compiles every submission and reference through it,
 * so a compiler hang or crash ends as a verdict, and the runner process never
 * loads anything that could initialise CUDA before it forks its run boxes.
 *
 * The child is a fork() of the multi-threaded runner (box.h, "Process
 * model"): it has only the forking thread, so it must not take a lock
 * another thread may hold (no pthread mutex of the runner's, no stdio
 * stream the other threads write; compile_source() logs nothing), and it
 * inherits the runner's memory: the first thing it does is wipe the
 * secrets the caller lists (cbox_start's wipe, secret.h), so that NVRTC
 * never runs on a submission's source in a process holding the runner token
 * or the secret seed.
 */
#ifndef KJ_CBOX_H
#define KJ_CBOX_H

#include "compile.h"
#include "secret.h"

#define CBOX_WALL_S 60          /* wall limit of one compile */
#define CBOX_CPU_S 60           /* RLIMIT_CPU of the child */
#define CBOX_MEM_BYTES (8ull << 30) /* RLIMIT_AS of the child: NVRTC needs no more */

/* Same contract as compile_source(): returns 0 when the box ran (out->ok says
 * whether the source compiled; a compile that hit a limit is a compile error
 * with a log saying which), <0 for the judge's own faults. For callers that
 * hold no secret (`kjudge-runner compile`): the child wipes nothing. */
int cbox_compile(const char *src, size_t len, const struct directives *d,
                 const char *arch, struct compile_result *out, struct kj_err *err);

/* The two halves of cbox_compile, so that two compiles can run at once:
 * cbox_start forks the child, which wipes its copy of wipe (secret.h; may
 * be NULL) first; cbox_finish collects it (and always reaps it). */
struct cbox_proc {
    int pid, fd;
    double deadline;  /* CLOCK_MONOTONIC seconds: start + CBOX_WALL_S */
};
int cbox_start(const char *src, size_t len, const struct directives *d, const char *arch,
               const struct secret_list *wipe, struct cbox_proc *p, struct kj_err *err);
int cbox_finish(struct cbox_proc *p, const char *arch, struct compile_result *out,
                struct kj_err *err);

/* Tests: run fn(arg) in the same box as a compile (the same fork, the same
 * wipe of wipe, the filter too unless flags has CBOX_NO_FILTER) and return
 * 0 with *result = fn's return; <0 when the box could not be built, fn made
 * a call the filter stopped (KJ_EINTERNAL, the message names the syscall),
 * or the box died. */
#define CBOX_NO_FILTER 1u
int cbox_run_in_box(int (*fn)(void *), void *arg, unsigned flags,
                    const struct secret_list *wipe, int *result, struct kj_err *err);

#endif
