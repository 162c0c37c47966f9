/*
 * db_rejudge.h - rejudging a board (docs/rejudge.md): the timing each
 * result was measured with, the one timing each ranking holds, and the
 * rejudge runs that bring a ranking from one timing to another.
 *
 * api_admin.c starts, cancels and reports rejudges (`kjudge admin
 * rejudge`); db_job.c records a finished job's timing and, when the job is
 * the last of a rejudge, swaps that ranking in the same transaction;
 * db_rank.c and db_history.c rank only results at the ranking's timing.
 * Like db.h: each function takes the connection's mutex, copies what it
 * reads into caller-owned memory and returns 0 or a negative KJ_E*.
 *
 * A rejudge's states (table rejudges), each change one SQL transaction:
 *
 *   db_rejudge_start           last job done, one timing,     swapped
 *   ------------------> running --- no internal_error ------> (the ranking holds
 *                          |        (db_rejudge_done_locked)   the new results)
 *                          |--- last job done, a job ended ---> failed
 *                          |    internal_error or the results   (nothing swapped)
 *                          |    name two timings
 *                          +--- db_rejudge_cancel -----------> cancelled
 *                               (its queued jobs end as        (nothing swapped)
 *                                internal_error; running ones
 *                                finish and are kept)
 *
 * A rejudge job is a submission row of the operator who asked
 * (submissions.rejudge_id, .rejudge_of: the submission it re-measures),
 * queued behind every participant's job (db_queue.c) and never ranked
 * itself. Nothing leaves swapped, failed or cancelled; at most one
 * rejudge per (board, GPU type) is running. assert_rejudge_state() in
 * db_rejudge.c checks every rejudge read back against its state.
 */
#ifndef KJ_DB_REJUDGE_H
#define KJ_DB_REJUDGE_H

#include <stdint.h>
#include "db.h"

#define DB_REJUDGE_MAX_LIST 20 /* rejudges a status view lists (newest first) */
#define DB_TIMING_PROTO 16     /* a timing protocol's name ("v2") plus NUL */
#define DB_REJUDGE_MAX_GPUS 16 /* GPU types one db_rejudge_start may name */

enum db_rejudge_state { DB_RJ_RUNNING = 0, DB_RJ_SWAPPED, DB_RJ_FAILED, DB_RJ_CANCELLED };

/* "running", "swapped", "failed", "cancelled" (static; "?" out of range). */
const char *db_rejudge_state_name(enum db_rejudge_state s);

/* A timing: the protocol's name and its version (protocol.h's
 * KJ_TIMING_VERSION). protocol "" = none (a result without a score). */
struct db_timing {
    char protocol[DB_TIMING_PROTO];
    int version;
};

/* One rejudge with the count of its jobs in each state. */
struct db_rejudge {
    int64_t id;
    char leaderboard[DB_MAX_NAME];
    char gpu[DB_MAX_NAME];
    enum db_rejudge_state state;
    int64_t since;                 /* unix seconds: only submissions made since; 0 = all */
    char by[DB_MAX_NAME];          /* the admin who asked */
    int64_t created_at, ended_at;  /* unix seconds; ended_at 0 while running */
    char reason[DB_MAX_REASON];    /* failed or cancelled: why; "" otherwise */
    struct db_timing from;         /* the ranking's timing when it started ("" = none) */
    struct db_timing to;           /* swapped: the ranking's timing since ("" = none) */
    int64_t jobs, queued, running, done;
    int64_t accepted;              /* done jobs whose new verdict is accepted */
    int64_t failed;                /* done jobs with another verdict */
};

/* One job of a rejudge for the status view: the submission, its job and
 * the new verdict (has_verdict 0 while not done). */
struct db_rejudge_job {
    int64_t submission_id, job_id;
    char user[DB_MAX_NAME];
    enum db_status status;
    int has_verdict;
    enum kj_verdict verdict;
    int has_score;
    double score_ns;
    struct db_timing timing;
};

/* Start a rejudge of board on each of gpus[0..ngpus) in one transaction:
 * queue again, as jobs of by_user, every submission of the board on that
 * GPU type that counts for the rankings (leaderboard mode, accepted with a
 * score, neither disqualified, withdrawn nor a rejudge job) made at or
 * after since (0: all). A GPU type with none is left out. *out: the new
 * rejudges (caller frees with free()), *n of them. KJ_ECONFLICT when one
 * is running on any of the GPU types (message names it); KJ_ENOTFOUND when
 * no GPU type has a submission to rejudge. Either way nothing changes. */
int db_rejudge_start(struct db *db, const char *board, const char *const *gpus, int ngpus,
                     int64_t since, int64_t by_user, struct db_rejudge **out, int *n,
                     struct kj_err *err);
/* Cancel the running rejudges of board (on gpu; NULL: every GPU type):
 * their queued jobs go straight to done as internal_error ("the rejudge
 * was cancelled ..."; db.h's one queued -> done transition), running ones
 * finish and are kept, nothing is swapped. *out as db_rejudge_start.
 * KJ_ENOTFOUND when none runs. */
int db_rejudge_cancel(struct db *db, const char *board, const char *gpu,
                      struct db_rejudge **out, int *n, struct kj_err *err);
/* The rejudges of board, newest first, at most DB_REJUDGE_MAX_LIST.
 * *out as db_rejudge_start (NULL, 0 when none). */
int db_rejudge_list(struct db *db, const char *board, struct db_rejudge **out, int *n,
                    struct kj_err *err);
/* The jobs of rejudge id in submission order; *out as db_rejudge_start. */
int db_rejudge_jobs(struct db *db, int64_t id, struct db_rejudge_job **out, int *n,
                    struct kj_err *err);
/* The timing submission id's result was measured with; protocol "" when
 * it has none (no score). KJ_ENOTFOUND: no such submission. */
int db_sub_timing(struct db *db, int64_t id, struct db_timing *out, struct kj_err *err);
/* The timing board's ranking on gpu holds; protocol "" when it holds none yet. */
int db_rank_timing(struct db *db, const char *board, const char *gpu, struct db_timing *out,
                   struct kj_err *err);

/* Inside db_job.c's transactions (db_int.h's "_locked"): */
/* Finished job id: record the timing of its result (when it has a score)
 * and, for a board's first ranked result, make it the ranking's timing. */
int db_timing_store_locked(struct db *db, int64_t id, struct kj_err *err);
/* Finished job id: when it is the last job of a running rejudge, end the
 * rejudge: swap (every original takes its job's result, its own going to
 * its history; the ranking takes the new timing) or fail. */
int db_rejudge_done_locked(struct db *db, int64_t id, struct kj_err *err);
/* db.c: schema version 14 (self-contained, as db_lang.c's). */
int db_migrate_v14(struct db *db, struct kj_err *err);

#endif
