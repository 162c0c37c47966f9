/*
 * ahead.h - compile-ahead: the runner's next jobs are claimed and compiled
 * while its GPU judges the current one, so that the GPU never waits on a
 * compiler and a job that fails to compile never reaches it.
 *
 * Place in the data flow: the supervisor (serve.c) starts it once the host
 * and GPU are probed. It is a process of its own (ahead.c), forked then,
 * before any job is known: it claims jobs from the server with the runner's
 * token, compiles each submission in a compile box (cbox.h, one compile
 * slot each, cslot.h), posts the job's "compiling" and "compiled" events,
 * keeps the job's lease with heartbeats, and
 *   - when the submission does not compile, posts the compile_error
 *     result itself (judge.h's judge_compile_failed): the job never
 *     reaches the GPU;
 *   - otherwise hands the job, with its cubin, to the supervisor when the
 *     supervisor asks for its next job (ahead_next), which judges it
 *     (judge_job.compiled) in boxes of its own.
 * Jobs it cannot compile ahead (profile or sanitize mode, directives the
 * judge rejects, a board this runner lacks, a compile box that could not
 * start) are handed over as they came, and the judge does all.
 *
 * Why a process and not a thread: the supervisor forks a job's boxes while
 * the next jobs are claimed and compiled; in a process of its own, no
 * other job's source, secret seed or cubin is ever in the memory those
 * boxes are forked from (secret.h). The process forks only compile boxes,
 * and each wipes the other jobs it holds first.
 *
 * How many: at most `slots` jobs at once (AHEAD_SLOTS_DEFAULT), of which
 * at most one waits compiled for the supervisor, so that a busy runner
 * never sits on queued work another runner could take. A second job is
 * claimed beside one still compiling only after AHEAD_SECOND_S, so a
 * slow compile (a template bomb: up to the compile box's 60 s) holds one
 * slot while the others go on.
 *
 * Held time: a job claimed ahead waits for the GPU; its first heartbeat
 * from the supervisor says {"gpu_start": true}, and the server charges the
 * user's fair share from then (docs/protocol.md).
 *
 * A stop (SIGTERM or SIGINT reach both processes; ahead_end sends one too)
 * gives every job it holds back to the server ({"why": "stopping"}) and
 * ends it; so does the end of the supervisor (PR_SET_PDEATHSIG and the
 * socket's end of file). If it ends on its own, ahead_next says so and the
 * supervisor claims its jobs itself again.
 */
#ifndef KJ_AHEAD_H
#define KJ_AHEAD_H

#include <signal.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "box.h"
#include "compile.h"
#include "kj_err.h"
#include "secret.h"

#define AHEAD_SLOTS_DEFAULT 2 /* serve --ahead */
#define AHEAD_SLOTS_MAX 3     /* with a job's three secrets each, within SECRET_MAX */
#define AHEAD_SECOND_S 0.5    /* a compile older than this lets the next job be claimed */

struct ahead_cfg {                 /* all borrowed for ahead_start's call */
    const char *server, *token, *ca_file, *name;
    const char *gpu_type;          /* "H200": what the claims name */
    const struct box_device *dev;  /* the probe's: arch to compile for, result's system block */
    const char *leaderboards;      /* the boards' folder */
    int slots;                     /* 1..AHEAD_SLOTS_MAX */
    double claim_wait_s;           /* a claim's long poll when nothing compiles */
    const struct secret_list *secrets; /* the runner's (token, its clients' copies) */
    volatile sig_atomic_t *stop;   /* the runner's stop flag (its copy in the process) */
};

struct ahead; /* the supervisor's side: the process and its socket */

/* Fork the process. KJ_OK with *out (the caller's: ahead_end), else err. */
int ahead_start(const struct ahead_cfg *cfg, struct ahead **out, struct kj_err *err);

/* The supervisor is free: the next job. Blocks until one is handed over
 * or *stop is set. 1: *reply is the claim's answer (cJSON, the caller's:
 * its "job" object as the server sent it; every buffer that held its text
 * is wiped), and *compiled its compiled submission when *has_compiled is
 * 1 (the caller's: compile_result_free). 0: stopped, nothing handed over.
 * <0: the process has ended or failed (err says why); the caller claims
 * for itself from then on (ahead_end still frees a). */
int ahead_next(struct ahead *a, const volatile sig_atomic_t *stop, cJSON **reply,
               struct compile_result *compiled, int *has_compiled, struct kj_err *err);

/* In a gap of a timed job (judge.h's judge_gap_fn): a test-mode job the
 * process holds compiled, at once, none of whose id is among the nskip of
 * skip (given back from earlier gaps of this timed job). 1 with *reply,
 * *compiled, *has_compiled as ahead_next's; 0 when it holds none (it is
 * not asked then) or none fits; <0 when it failed to answer within a few
 * seconds (err; the caller claims from the server, and a late answer is
 * read by ahead_next). Not while ahead_next's request is outstanding. */
int ahead_gap(struct ahead *a, const int64_t *skip, int nskip, cJSON **reply,
              struct compile_result *compiled, int *has_compiled, struct kj_err *err);

/* A job handed over (ahead_next, ahead_gap) that will not be judged:
 * give_back(ctx, id, attempt) gives it back to the server, then its
 * source and cubin are wiped and reply and compiled (may be NULL) freed. */
void ahead_return(cJSON *reply, struct compile_result *compiled,
                  void (*give_back)(void *ctx, long id, long attempt), void *ctx);

/* Stop the process, which gives its jobs back, and wait for it (at most
 * a few seconds, then SIGKILL); a job it had already handed over on the
 * socket is passed to give_back(ctx, id, attempt) so that the caller
 * gives it back too. Frees a; NULL does nothing. Any thread may call it,
 * once. */
void ahead_end(struct ahead *a, void (*give_back)(void *ctx, long id, long attempt), void *ctx);

#endif
