/*
 * ahead_int.h - what the two files of compile-ahead (ahead.h) share: the
 * frame a job is handed over in, and the process's entry point.
 *
 *   ahead.c       the process: claims, compile boxes, heartbeats, results
 *                 of jobs that do not compile, the hand-over
 *   ahead_link.c  the socket between it and the supervisor: the fork, the
 *                 supervisor's requests and reads, the end
 *
 * Only those files (and tests/unit/test_ahead.c) include it.
 */
#ifndef KJ_AHEAD_INT_H
#define KJ_AHEAD_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "ahead.h"
#include "compile.h"

#define AHEAD_MAGIC 0x6b6a6168u          /* "kjah" */
#define AHEAD_MAX_JSON (16u << 20)       /* a claim's answer: a 1 MiB source, escaped */
#define AHEAD_MAX_CUBIN (256u << 20)     /* as the compile box's */
#define AHEAD_END_WAIT_S 5.0             /* ahead_end's wait for the process */
#define AHEAD_MAX_BACKOFF_S 30
#define AHEAD_BEAT_S 20.0               /* at most; a third of the lease when shorter */

struct ahead_head {
    uint32_t magic;
    uint32_t json_len;          /* the claim's answer */
    int32_t compiled;           /* 1: r, its log and cubin follow */
    struct compile_result r;    /* pointers meaningless here */
    uint32_t log_len, cubin_len;
};

/* ahead_link.c: the supervisor's handle of the process pid on socket fd
 * (owned from now on: ahead_end); NULL when out of memory. The unit tests
 * make one on a socket of their own and play the process's part. */
struct ahead *ahead_link_new(pid_t pid, int fd);

/* ahead.c: the process, on socket fd; runs until a stop or the
 * supervisor's end, and never returns. */
void ahead_main(const struct ahead_cfg *cfg, int fd) __attribute__((noreturn));

#endif
