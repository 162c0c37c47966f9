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
 *
 * The socket (SOCK_STREAM, one each way):
 *   supervisor -> process: 'N', "I am free: the next job"; or 'G' and a
 *     skip list (AHEAD_GAP_MAX_SKIP), "a test-mode job for a gap of a
 *     timed job, at once, if one is compiled";
 *   process -> supervisor: one frame per job: struct ahead_head, the
 *     claim's answer (JSON text), then the compile's log and cubin; a
 *     header with json_len 0 answers a 'G' that nothing fits.
 * Both ends are this program, so the header is sent as it is in memory;
 * the reader still bounds every length.
 */
#ifndef KJ_AHEAD_INT_H
#define KJ_AHEAD_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "ahead.h"
#include "claim.h"
#include "compile.h"

#define AHEAD_MAGIC 0x6b6a6168u          /* "kjah" */
#define AHEAD_MAX_JSON (16u << 20)       /* a claim's answer: a 1 MiB source, escaped */
#define AHEAD_MAX_CUBIN (256u << 20)     /* as the compile box's */
/* ahead_end's wait for the process: a claim it has in flight may take
 * CLAIM_STOP_ANSWER_MS to end, then the job it brought goes back. */
#define AHEAD_END_WAIT_S (CLAIM_STOP_ANSWER_MS / 1000.0 + 10.0)
#define AHEAD_MAX_BACKOFF_S 30

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

/* A page both processes map (MAP_SHARED, made before the fork, kept out of
 * every later fork: MADV_DONTFORK): what the supervisor may read without
 * asking. Written by the process only; a hint, since a job may still go
 * (its lease lost) before the supervisor asks for it. */
struct ahead_shared {
    volatile int ready_test;    /* test-mode jobs held compiled: a gap may ask for one */
};

/* The supervisor's request for a gap job: 'G', then how many ids follow,
 * then the ids (int64) it must not be given (given back from this timed
 * job's gaps already). The answer is a frame, or a header with json_len 0
 * when none fits. */
#define AHEAD_GAP_MAX_SKIP 16
#define AHEAD_GAP_WAIT_S 2.0 /* the supervisor's wait for that answer */

/* ahead.c: the process, on socket fd; runs until a stop or the
 * supervisor's end, and never returns. */
void ahead_main(const struct ahead_cfg *cfg, int fd, struct ahead_shared *sh)
    __attribute__((noreturn));

#endif
