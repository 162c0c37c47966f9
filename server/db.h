/*
 * db.h - kjudge-server's storage: one SQLite database (WAL, synchronous=FULL).
 *
 * The HTTP handlers (api_*.c) and the CLI (main.c) call these functions;
 * they copy what they read into caller-owned structs, so nothing returned
 * points into SQLite. Every function takes the connection's mutex for its
 * whole duration (the MHD worker threads share one connection); other
 * processes (`kjudge-server user add` while the server runs) are handled by
 * SQLite's locking and busy_timeout. Functions return 0 or a negative KJ_E*
 * and fill err; KJ_EDB errors name the SQLite call, file:line and message.
 * KJ_ESTORAGE means the disk is full or failing (SQLITE_FULL, SQLITE_IOERR):
 * nothing was changed, and the same call may work once there is room
 * (the HTTP layer answers 503 with Retry-After; db_storage_check() tells
 * /healthz).
 *
 * Submission states (docs/protocol.md), with the job lease of a running one:
 *
 *                       db_job_claim (lease = now + lease_ms, attempt += 0)
 *   db_sub_insert            +------------------------------+
 *  --------------> queued ---+                              v
 *                    ^                                   running --+ db_job_heartbeat,
 *                    |   db_job_sweep: lease expired,       |  ^   | db_job_event:
 *                    |     attempts + 1 < DB_MAX_ATTEMPTS   |  +---+ lease extended
 *                    +--------------------------------------+
 *                    |   db_job_finish: verdict internal_error,
 *                    |     attempts + 1 < DB_MAX_ATTEMPTS   |
 *                    +--------------------------------------+
 *                    |   db_job_release: the runner gave    |
 *                    |     it back (attempts unchanged)     |
 *                                                           |  db_job_finish (any other
 *                                                           |  verdict, or the last attempt);
 *                                                           v  db_job_sweep on the last attempt
 *                                                          done   (internal_error + reason)
 *
 * Transitions, each one SQL transaction:
 *   (none)  -> queued   db_sub_insert
 *   queued  -> running  db_job_claim: runner_id, started_at, lease_until set
 *   running -> running  db_job_heartbeat, db_job_event: lease_until moved on;
 *                       a heartbeat with gpu_start also sets claimed_ms to
 *                       now (its GPU work starts: fair share counts from then)
 *   running -> queued   db_job_sweep (lease_until passed) or db_job_finish
 *                       (internal_error): attempts + 1, a "queued" event logged
 *   running -> queued   db_job_release (a stopping runner gave it back):
 *                       attempts unchanged, a "queued" event logged; the next
 *                       claim gets the same attempt number
 *   queued  -> done     db_rejudge_cancel, for the queued jobs of a
 *                       cancelled rejudge only (db_rejudge.h): verdict
 *                       internal_error, no runner, a "verdict" event logged
 *   running -> done     db_job_finish; or db_job_sweep when the expired
 *                       attempt was the DB_MAX_ATTEMPTS-th (verdict
 *                       internal_error, reason "the runner stopped answering
 *                       3 times", a "verdict" event logged)
 *
 * queued: runner_id NULL, started_at NULL, verdict NULL, lease_until NULL.
 * running: runner_id, started_at and lease_until set, verdict NULL.
 * done: finished_at, verdict and result set, lease_until NULL; score_ns set
 *       only when the runner reported one; a shape_medians row per timed
 *       shape of the result. Nothing leaves done.
 * withdrawn (withdrawn_at set, db_sub_withdraw): only a done submission; a
 *       mark like disqualified, never cleared; never ranked.
 * always: 0 <= attempts < DB_MAX_ATTEMPTS; the attempt in progress (or the
 *       one that finished the job) is number attempts + 1.
 *
 * The lease is held while now < lease_until (wall-clock ms, so it survives a
 * restart; serve grants every running job a fresh lease at start, db_job_grace).
 * A request about a job whose lease expired, or that names another attempt,
 * is refused with KJ_ECONFLICT and changes nothing. assert_sub_state() in
 * db_sub.c checks every row read back against the lists above, and
 * assert_job_state() in db_job.c the lease a claim grants.
 *
 * The functions are grouped below by the file that holds them: db.c (open,
 * migrate, health), db_user.c, db_board.c, db_sub.c (submissions),
 * db_job.c (every transition after the insert), db_event.c, db_rank.c,
 * db_runner.c, db_metrics.c, db_backup.c; db_list.h has the listings,
 * db_history.h a board's and a submission's history, db_rejudge.h the
 * timings of results and rankings and the rejudges (schema version 14).
 */
#ifndef KJ_DB_H
#define KJ_DB_H

#include <stddef.h>
#include <stdint.h>
#include "kj_err.h"
#include "protocol.h"
#include "queue.h"

#define DB_SCHEMA_VERSION 14
#define DB_MAX_ARTIFACT_BYTES (64 * 1024 * 1024)  /* one artifact (an Nsight Compute report) */
#define DB_MAX_ATTEMPTS 3    /* attempts of one job before it ends as internal_error */
#define DB_MAX_JOB_EVENTS 1000               /* progress events a runner may store per job (all attempts) */
#define DB_MAX_JOB_EVENT_BYTES (1024 * 1024) /*   and their bytes (event name + data) */
#define DB_LEASE_DEFAULT_MS (120 * 1000)
#define DB_MAX_REASON 256
#define DB_MAX_NAME 64       /* user, runner, leaderboard and GPU names */
#define DB_MAX_FILE_NAME 128 /* submitted file name */
#define DB_HASH_HEX 65       /* SHA-256 as hex plus NUL */
#define DB_MIN_FREE_BYTES (4 * 1024 * 1024) /* less free space than this on the database's
                                               filesystem counts as a full disk (/healthz) */

struct db;

/* A submission's state (the diagram above). */
enum db_status { DB_QUEUED = 0, DB_RUNNING, DB_DONE };

/* "queued", "running" or "done" (static; "?" out of range). */
const char *db_status_name(enum db_status s);

struct db_user {
    int64_t id;
    char name[DB_MAX_NAME];
    char role[16];                 /* "user", "admin" or "runner" */
    char token_hash[DB_HASH_HEX];
    int banned;                    /* 1: every request with this token is refused (403) */
};

/* One submission row. Strings are copies; source and result are owned by
 * the struct and freed with db_sub_clear(). Times are unix seconds, 0 = NULL. */
struct db_sub {
    int64_t id;
    int64_t user_id;
    char user[DB_MAX_NAME];        /* the owner's name */
    char leaderboard[DB_MAX_NAME];
    char gpu[DB_MAX_NAME];
    enum kj_mode mode;
    char file_name[DB_MAX_FILE_NAME];
    char *source;                  /* owned; NULL unless asked for */
    size_t source_len;
    char source_sha256[DB_HASH_HEX];
    enum db_status status;
    int has_verdict;               /* 1 once done; 0 while queued or running */
    enum kj_verdict verdict;       /* meaningful when has_verdict */
    int has_score;
    double score_ns;
    char *result;                  /* owned; the runner's JSON text, NULL until done or unless asked for */
    int64_t runner_id;             /* 0 = none */
    char runner_name[DB_MAX_NAME];
    int64_t created_at, started_at, finished_at;
    int attempts;                  /* attempts that ended without a verdict (lease lost, internal_error) */
    int64_t lease_until_ms;        /* running only: wall-clock ms the lease ends; 0 = none */
    char reason[DB_MAX_REASON];    /* why the judge gave up ("" when it did not) */
    int disqualified;              /* 1: marked by an admin; never ranked */
    char dq_reason[DB_MAX_REASON]; /* the admin's reason ("" when not disqualified) */
    int64_t withdrawn_at;          /* unix seconds its owner withdrew it from the rankings; 0 = not */
    char sanitizer[16];            /* sanitize mode: the tool ("" = memcheck) */
    int profile_shape;             /* profile mode: 1 + the benchmark shape; 0 = every shape */
    int lang;                      /* its language, an enum sub_lang value (sub_lang.h):
                                      0 = CUDA C++ */
    int64_t rejudge_of;            /* a rejudge's job (db_rejudge.h): the submission it
                                      measures again; 0 = a participant's own */
};

/* Which job a runner request is about: the job, the runner's user id and,
 * when the runner named it, the attempt number (0 = whichever is current). */
struct db_job_ref {
    int64_t id;
    int64_t runner_id;
    int attempt;
};

/* A timed shape of a finished job, kept as numbers for the rankings
 * (table shape_medians, schema version 8). */
struct db_median {
    int idx;                       /* the benchmark's index in the board's list */
    double median_ns;              /* the ranked median: the corrected one of a timing
                                      protocol v2 result (docs/timing.md), else the median */
    double raw_median_ns;          /* the median as timed; = median_ns when not corrected */
    int corrected;                 /* 1: median_ns is raw_median_ns less the job's offset */
    char *shape;                   /* the shape's variables as JSON, {"T":1024}: borrowed
                                      when passed in, owned when read (db_rank_rows_free) */
    double floor_ns;               /* read only (db_rank_rows): the result's floor of the
                                      shape (its bound), 0 when it has none */
};

/* A job's result as db_job_finish stores it; borrowed for the call. */
struct db_result {
    enum kj_verdict verdict;
    int has_score;                 /* 0: score_ns is stored as NULL */
    double score_ns;
    const char *json;              /* the checked result text */
    const struct db_median *medians; /* its timed shapes (nmedians, in index order) */
    int nmedians;
};

/* What db_job_finish did. */
enum db_finish {
    DB_FINISH_DONE = 0,   /* running -> done with the runner's verdict */
    DB_FINISH_DUPLICATE,  /* already done by this runner: nothing changed */
    DB_FINISH_REQUEUED    /* internal_error with attempts left: running -> queued */
};

/* A job whose lease expired, as db_job_sweep handled it. */
struct db_expired {
    int64_t id;
    char runner_name[DB_MAX_NAME];
    int attempts;                  /* attempts made, this one included */
    int failed;                    /* 1: ended as internal_error; 0: queued again */
};

/* A runner seen by the server for one GPU type (GET /api/v1/gpus). */
struct db_runner {
    char name[DB_MAX_NAME];
    int64_t last_seen;             /* unix seconds */
    int busy;                      /* holds a running job */
};

struct db_event {
    int64_t seq;
    enum kj_event event;
    char *data;                    /* owned JSON text, may be NULL */
    int64_t at;
};

/* One candidate row of a ranking: the best accepted leaderboard-mode
 * submission of one user, with its timed shapes (medians owned: freed by
 * db_rank_rows_free). */
struct db_rank_row {
    int64_t submission_id;
    char user[DB_MAX_NAME];
    double score_ns;
    int64_t created_at;
    int lang;                      /* the submission's language (sub_lang.h) */
    struct db_median *medians;
    int nmedians;
};

/* Open (creating the file and its parent folder if needed) and migrate the
 * schema. *out is owned by the caller: db_close(). */
int db_open(const char *path, struct db **out, struct kj_err *err);
void db_close(struct db *db);

/* Check that the database answers (for /healthz). */
int db_ping(struct db *db, struct kj_err *err);
/* Can the database be written (for /healthz)? 0, or KJ_ESTORAGE with a
 * short reason in why ("disk full: 12 KiB free on var"): when the
 * filesystem holding it has less than DB_MIN_FREE_BYTES free, or when a
 * call failed with KJ_ESTORAGE since the last check and a probe write (one
 * small committed transaction) still fails. A probe that works forgets
 * the failure, so the answer recovers by itself. */
int db_storage_check(struct db *db, char *why, size_t whysz, struct kj_err *err);
/* What the last KJ_ESTORAGE was: "disk full" or "I/O error" (static). */
const char *db_storage_reason(struct db *db);

/* users (db_user.c) */
/* Insert a user; KJ_ECONFLICT when the name (or hash) exists. */
int db_user_add(struct db *db, const char *name, const char *role, const char *token_hash,
                int64_t *id_out, struct kj_err *err);
/* Create or update the row "admin" (role admin) that holds the configured admin token's hash. */
int db_user_set_admin(struct db *db, const char *token_hash, struct kj_err *err);
/* Look a user up by token hash; KJ_ENOTFOUND when none. */
int db_user_by_hash(struct db *db, const char *token_hash, struct db_user *out, struct kj_err *err);

/* Look a user up by name; KJ_ENOTFOUND when none. */
int db_user_by_name(struct db *db, const char *name, struct db_user *out, struct kj_err *err);
/* Replace user_id's token hash (rotation); the old token stops working at once. */
int db_user_set_token(struct db *db, int64_t user_id, const char *token_hash, struct kj_err *err);
/* Revoke every token of the user called name: its hash becomes a value no
 * token hashes to. KJ_ENOTFOUND when no such user. */
int db_user_revoke(struct db *db, const char *name, struct kj_err *err);
/* Set or clear the ban of the user called name; KJ_ENOTFOUND when none. */
int db_user_set_banned(struct db *db, const char *name, int banned, struct kj_err *err);
/* Store a new invite (hash of its code) valid until expires_at (unix seconds). */
int db_invite_add(struct db *db, const char *code_hash, int64_t expires_at, struct kj_err *err);
/* In one transaction: use the invite code_hash (unused, not expired at now)
 * and create user name (role user) holding token_hash. KJ_ENOTFOUND: no
 * such usable invite; KJ_ECONFLICT: the name is taken. Either way nothing
 * changes. */
int db_register(struct db *db, const char *name, const char *code_hash, const char *token_hash,
                int64_t now, int64_t *id_out, struct kj_err *err);

/* leaderboard secrets (db_board.c) */
/* Give board the secret seed seed unless it has one already (the caller
 * draws it: auth_random_seed). */
int db_secret_ensure(struct db *db, const char *board, uint64_t seed, struct kj_err *err);
/* db_artifact.c: a finished job's files (profile mode's report), at most
 * DB_MAX_ARTIFACT_BYTES each (KJ_ELIMIT), replaced when put again. get:
 * KJ_ENOTFOUND when there is none; *data is the caller's to free. size:
 * -1 when there is none. */
int db_artifact_put(struct db *db, int64_t id, const char *name, const void *data, size_t len,
                    struct kj_err *err);
int db_artifact_get(struct db *db, int64_t id, const char *name, char **data, size_t *len,
                    struct kj_err *err);
int db_artifact_size(struct db *db, int64_t id, const char *name, int64_t *size,
                     struct kj_err *err);

/* The board's secret seed as a decimal string in out (>= 21 bytes). */
int db_secret_get(struct db *db, const char *board, char *out, size_t outsz, struct kj_err *err);

/* submissions (db_sub.c) */
void db_sub_clear(struct db_sub *s);
/* Insert a queued submission from s (user_id, leaderboard, gpu, mode,
 * file_name, source, source_len, source_sha256); the row is committed
 * (durable) on return. Sets s->id, s->created_at and s->status. */
int db_sub_insert(struct db *db, struct db_sub *s, struct kj_err *err);
/* db_sub_insert unless user s->user_id already made limit submissions of
 * s->mode in the last window_s seconds (limit 0: no limit): then
 * KJ_ELIMIT, nothing stored, *retry_after = seconds until one leaves the
 * window (>= 1). The count and the insert happen under one lock. */
int db_sub_insert_limited(struct db *db, struct db_sub *s, int limit, int window_s,
                          int *retry_after, struct kj_err *err);
/* Mark submission id disqualified with reason (it leaves every ranking). KJ_ENOTFOUND. */
int db_sub_disqualify(struct db *db, int64_t id, const char *reason, struct kj_err *err);
/* Read one submission; with_blobs also copies source and result. KJ_ENOTFOUND. */
int db_sub_get(struct db *db, int64_t id, int with_blobs, struct db_sub *out, struct kj_err *err);
/* The caller's submissions, newest first, at most limit, without blobs.
 * *out is a new array of *n rows; free with db_sub_list_free(). */
int db_sub_list(struct db *db, int64_t user_id, int limit, struct db_sub **out, int *n,
                struct kj_err *err);
void db_sub_list_free(struct db_sub *rows, int n);
/* Count the submissions in state status (for tests and /healthz). */
int db_sub_count(struct db *db, enum db_status status, int64_t *n, struct kj_err *err);

/* Which queued jobs one claim may take (POST /runner/claim's "modes" and
 * "skip", docs/protocol.md): a runner filling the gaps of a timed job asks
 * for test-mode jobs only, less the ones it gave back in earlier gaps. The
 * queue rule picks among the jobs the filter allows; every user's usage,
 * the class streak and the queue positions are as without a filter. */
struct db_claim_filter {
    unsigned modes;        /* bit (1u << enum kj_mode) per mode it may take; 0 = every mode */
    const int64_t *skip;   /* borrowed for the call: submission ids it never takes */
    int nskip;             /* entries of skip; 0 = none (skip may then be NULL) */
};
/* 1 when filter (NULL: none) lets a claim take queued job id of mode m. */
int db_claim_filter_allows(const struct db_claim_filter *filter, int64_t id, enum kj_mode m);

/* jobs (db_job.c): every transition after the insert */
/* Move the queued submission for gpu that the queue rule picks among those
 * filter allows (NULL: all) to running for this runner, in one
 * transaction, and copy it (with source) into out; for mode leaderboard
 * also copy the board's secret seed into secret (else secret = ""), read in
 * the same transaction so a claimed job always comes with its seed.
 * KJ_ENOTFOUND when no job of that GPU type the filter allows is queued
 * (then nothing changed). */
int db_job_claim(struct db *db, const char *gpu, const struct db_claim_filter *filter,
                 int64_t runner_id, const char *runner_name, struct db_sub *out, char *secret,
                 size_t secretsz, struct kj_err *err);
/* Runner requests about a job (struct db_job_ref; attempt 0 = any).
 * KJ_ENOTFOUND: no such submission; KJ_ECONFLICT: the runner does not hold
 * it, its lease expired or ref->attempt is not the current attempt. Each
 * extends the lease of a running job. */
/* Store the result of a running job: verdict, score, result text and the
 * medians of its timed shapes, in one transaction; status done (or queued
 * again after an internal_error with attempts left, storing nothing of the
 * result). A job already done by this runner changes nothing and gives
 * DB_FINISH_DUPLICATE. *outcome says what happened (enum db_finish). */
int db_job_finish(struct db *db, const struct db_job_ref *ref, const struct db_result *res,
                  enum db_finish *outcome, struct kj_err *err);
/* Append a progress event. KJ_ELIMIT when the job already holds
 * DB_MAX_JOB_EVENTS events or this one would take it past
 * DB_MAX_JOB_EVENT_BYTES: nothing is stored and the lease is not extended
 * (the server's own events, a retry's "queued" and a lost job's "verdict",
 * are stored regardless). */
int db_job_event(struct db *db, const struct db_job_ref *ref, enum kj_event event,
                 const char *data, struct kj_err *err);
/* Extend the lease; with gpu_start (the runner says the job's GPU work
 * starts now) also set claimed_ms to now in the same transaction, so the
 * fair-share charge (db_queue_charge_locked) and the queue's count of
 * running jobs start from here rather than from the claim: a job held
 * before its GPU work starts (compiled ahead) charges nothing for the
 * wait. A second gpu_start moves claimed_ms again (a retried heartbeat
 * whose answer was lost must not fail). */
int db_job_heartbeat(struct db *db, const struct db_job_ref *ref, int gpu_start,
                     struct kj_err *err);
/* Give a running job back: queued again at once, its attempt not counted,
 * with a "queued" event naming the runner and why (gap 0: it is stopping;
 * 1: the job had no verdict within a gap of a timed job, runner/serve_gap.c,
 * whose time so far is charged to its user's fair share),
 * whose name is copied into runner_name. KJ_ECONFLICT as above, and for a
 * job already done. */
int db_job_release(struct db *db, const struct db_job_ref *ref, int gap, char *runner_name,
                   size_t namesz, struct kj_err *err);
/* Lease length for later claims and extensions (ms > 0); default DB_LEASE_DEFAULT_MS. */
void db_job_set_lease(struct db *db, int64_t ms);
int64_t db_job_lease_ms(struct db *db);
/* Give every running job at least a full lease from now (at serve start). *n: jobs touched. */
int db_job_grace(struct db *db, int64_t *n, struct kj_err *err);
/* Requeue (or fail, on the last attempt) every running job whose lease
 * ended before now_ms. *out is a new array of *n entries (caller frees
 * with free()); NULL when none. */
int db_job_sweep(struct db *db, int64_t now_ms, struct db_expired **out, int *n,
                 struct kj_err *err);
/* 1-based position of queued job id among the queued jobs of its GPU type
 * under the queue rule: 1 + the jobs the rule would pick before it if
 * nothing new arrived (queue.h); 0 when not queued. */
int db_job_position(struct db *db, int64_t id, int64_t *pos, struct kj_err *err);

/* queue rule (db_queue.c) */
/* The rule claims follow (serve --queue-rule); default QUEUE_FAIR. */
void db_queue_set_rule(struct db *db, enum queue_rule rule);

/* clocks (db_sql.c) */
/* Wall-clock milliseconds, the clock leases are measured on. */
int64_t db_now_ms(void);

/* runners (db_runner.c) */
/* Create runner token owner name holding token_hash, bound to the GPU types
 * gpus ("H200,B200", checked by gputype_list_parse). KJ_ECONFLICT when the
 * name (or hash) exists. */
int db_runner_add(struct db *db, const char *name, const char *token_hash, const char *gpus,
                  struct kj_err *err);
/* Bind the runner called name to gpus instead of what it had (a token made
 * before binding had none). KJ_ENOTFOUND when no runner has that name. */
int db_runner_bind(struct db *db, const char *name, const char *gpus, struct kj_err *err);
/* The GPU types runner_id may claim into out (size outsz); "" when it is
 * bound to none. KJ_ENOTFOUND when no such user. */
int db_runner_gpus(struct db *db, int64_t runner_id, char *out, size_t outsz, struct kj_err *err);
/* May runner token runner_id report the runner name name? Yes when it
 * did before, or when it holds fewer than limit names (then name is
 * recorded, table runner_names); else KJ_ELIMIT, whose message names the
 * limit and the names held. The token's own account name is the caller's
 * to allow: it is not counted here. */
int db_runner_adopt(struct db *db, int64_t runner_id, const char *name, int limit,
                    struct kj_err *err);
/* Record that runner (user runner_id, name) asked for work for gpu now. */
int db_runner_seen(struct db *db, int64_t runner_id, const char *name, const char *gpu,
                   struct kj_err *err);
/* The runners seen for gpu, by name, and its queue depth. *out is a new
 * array of *n rows (caller frees with free()). */
int db_gpu_runners(struct db *db, const char *gpu, struct db_runner **out, int *n,
                   int64_t *queued, int64_t *running, struct kj_err *err);

/* events (db_event.c) */
/* Every event of a submission in order; free with db_events_free(). */
int db_events_list(struct db *db, int64_t id, struct db_event **out, int *n, struct kj_err *err);
/* The events of submission id after seq after_seq, in order: at most
 * max_events, and past the first no more than max_bytes of data in all.
 * *more = 1 when later events were left for the next call. Free with
 * db_events_free(). */
int db_events_after(struct db *db, int64_t id, int64_t after_seq, int max_events,
                    size_t max_bytes, struct db_event **out, int *n, int *more,
                    struct kj_err *err);
/* The seq and kind of submission id's last event; *seq = 0 (and *event
 * untouched) when it has none. */
int db_event_last(struct db *db, int64_t id, int64_t *seq, enum kj_event *event,
                  struct kj_err *err);
void db_events_free(struct db_event *ev, int n);

/* the previous submission (highest id below s->id) of s's user to s's
 * leaderboard, any mode and GPU type, with its source. KJ_ENOTFOUND when
 * there is none. */
int db_sub_prev(struct db *db, const struct db_sub *s, struct db_sub *out, struct kj_err *err);

/* per leaderboard (db_board.c) */
/* Publish board's sources (idempotent): *at gets the time they were first
 * published, *already 1 when that was before this call. */
int db_publish(struct db *db, const char *board, int64_t by_user, int64_t *at, int *already,
               struct kj_err *err);
/* When board's sources were published (unix seconds), 0 when they are not. */
int db_published(struct db *db, const char *board, int64_t *at, struct kj_err *err);
/* *has = 1 when any submission names board. */
int db_board_has_subs(struct db *db, const char *board, int *has, struct kj_err *err);

/* rankings (db_rank.c): the best accepted mode=leaderboard submission per
 * user for (board, gpu), ordered by score, then submission time, then id;
 * only results measured with the ranking's timing (db_rejudge.h) and no
 * rejudge's own jobs. */
int db_rank_rows(struct db *db, const char *board, const char *gpu, struct db_rank_row **out,
                 int *n, struct kj_err *err);
void db_rank_rows_free(struct db_rank_row *rows, int n);

/* metrics (db_metrics.c) */
/* Submissions per (leaderboard, gpu, mode, verdict). */
struct db_count {
    char leaderboard[DB_MAX_NAME];
    char gpu[DB_MAX_NAME];
    enum kj_mode mode;
    int has_verdict;               /* 0: not done yet */
    enum kj_verdict verdict;
    int64_t n;
};
/* Every non-empty group; *out is a new array of *n rows (caller frees with free()). */
int db_metrics_counts(struct db *db, struct db_count **out, int *n, struct kj_err *err);
/* created_at of the oldest queued job for gpu; 0 when none is queued. */
int db_metrics_oldest(struct db *db, const char *gpu, int64_t *created_at, struct kj_err *err);
/* When a finished job started and ended (unix seconds). KJ_ENOTFOUND unless done. */
struct db_span {
    char gpu[DB_MAX_NAME];
    enum kj_mode mode;
    int64_t started_at, finished_at;
};
int db_job_span(struct db *db, int64_t id, struct db_span *out, struct kj_err *err);

/* backups (db_backup.c): whole-file operations, without a struct db. */
/* Copy the database at db_path into dest (a new file, mode 0600, written
 * beside dest and put into place) with SQLite's online backup API:
 * one consistent snapshot while a server keeps writing. An existing dest is
 * replaced only when replace is set (renamed over); otherwise KJ_ECONFLICT and
 * it is left as it was. *pages gets its size in pages. KJ_EIO for files,
 * KJ_EDB for SQLite. */
int db_backup(const char *db_path, const char *dest, int replace, int64_t *pages,
              struct kj_err *err);
/* Check that path is a kjudge database this server can open: integrity_check
 * "ok", schema version 1..DB_SCHEMA_VERSION (*version), the tables present,
 * no trigger or view, and, migrated in a scratch copy, exactly the schema
 * objects this version creates. KJ_EINVAL names what is wrong. */
int db_check_file(const char *path, int *version, struct kj_err *err);
/* Replace the database at db_path with the contents of src, checked first
 * (db_check_file; what is copied is the checked copy, migrated to this
 * version), in one transaction; the old contents are saved first to
 * db_path + ".before-restore-YYYYMMDDTHHMMSSZ" (UTC; "-2", ... within one
 * second), so every replaced database is kept. KJ_ECONFLICT when a server
 * holds db_path (db_lock). */
int db_restore(const char *src, const char *db_path, struct kj_err *err);
/* Hold the serve lock of db_path (an flock on db_path + ".lock") so that
 * a restore cannot replace a database in use, nor a second server open it.
 * *fd gets the lock's descriptor (keep it open to hold the lock).
 * KJ_ECONFLICT when another process holds it. */
int db_lock(const char *db_path, int *fd, struct kj_err *err);
/* Release a lock from db_lock (fd < 0 is ignored). */
void db_unlock(int fd);

#endif
