/*
 * ahead_int.h - what the two files of compile-ahead (ahead.h) share: the
 * frame a job is handed over in, and the process's entry point.
 *
 *   ahead.c       the process: claims, compile boxes, heartbeats, results
 *                 of jobs that do not compile, the hand-over
 *   ahead_link.c  the socket between it and the supervisor: the fork, the
 *                 supervisor's requests and reads, the end
 *
 * Only those files include it.
 */
#ifndef KJ_AHEAD_INT_H
#define KJ_AHEAD_INT_H

#include <stdint.h>
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

/* ahead.c: the process, on socket fd; runs until a stop or the
 * supervisor's end, and never returns. */
void ahead_main(const struct ahead_cfg *cfg, int fd) __attribute__((noreturn));

#endif
