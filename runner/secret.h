/*
 * secret.h - the memory a forked child wipes right after fork().
 *
 * The runner's children (run boxes, compile boxes, the NVML reader) are
 * forks of the runner, a multi-threaded process that holds the runner
 * token and, during a leaderboard job, the board's secret seed. fork()
 * copies all of its memory into the child, so a compiler bug exploited in
 * a compile box, or an escape from a run box, would find them there. The
 * supervisor (serve.c) and `eval` (main.c) list where those secrets live in
 * a struct secret_list and hand it down (judge_job.secrets, box_cfg.wipe,
 * cbox_start, gpumon_read_isolated); every fork site calls secret_wipe()
 * in the child before anything else. The parent keeps its copies: only
 * the child's are wiped.
 *
 * Not covered, and why: nvdisasm (sass.c) is exec'd, which replaces the
 * child's memory before it reads the cubin; the host probe
 * (sandbox_probe) runs only the runner's own code and exits. The parent
 * also wipes what it no longer needs before freeing it (the token file,
 * the claim's body and seed string, HTTP response bodies), so freed heap
 * blocks hold no secret either; libcurl's own copies of a request's
 * headers (common/curlc.c) are freed, not wiped, when the request ends.
 * What no list can name is a buffer of another thread caught in flight at
 * the fork: the watcher's heartbeat to the server (a few milliseconds
 * every 20 s).
 */
#ifndef KJ_SECRET_H
#define KJ_SECRET_H

#include <stddef.h>

#define SECRET_MAX 16 /* the runner's (5 at most), a job's seed, and in a gap the
                        * outer job's source and compiled code (judge.h) */

struct secret_list {
    int n;
    struct {
        void *p;       /* borrowed: writable memory (the child writes to its own copy) */
        size_t len;
    } at[SECRET_MAX];
};

/* Add len bytes at p to s (nothing for a NULL p or len 0). At most
 * SECRET_MAX ranges: one more is a bug of ours (assert). p must stay valid
 * for as long as s is handed to fork sites. */
void secret_add(struct secret_list *s, void *p, size_t len);

/* In a child right after fork(): overwrite every range of s with zeros
 * (explicit_bzero, which the compiler may not drop). Accepts NULL. Takes no
 * lock and allocates nothing, so it is safe in the child of a
 * multi-threaded process. */
void secret_wipe(const struct secret_list *s);

#endif
