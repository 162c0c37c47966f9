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
 *
 * Submission states (docs/protocol.md):
 *
 *     db_sub_insert        db_sub_claim           db_sub_finish
 *   ----------------> queued ----------> running ---------------> done
 *
 * queued: runner_id NULL, started_at NULL, verdict NULL.
 * running: runner_id and started_at set, verdict NULL.
 * done: finished_at, verdict and result set; score_ns set only when the
 *       runner reported one. Nothing leaves done.
 */
#ifndef KJ_DB_H
#define KJ_DB_H

#include <stddef.h>
#include <stdint.h>
#include "kj_err.h"

#define DB_SCHEMA_VERSION 1
#define DB_MAX_NAME 64       /* user, runner, leaderboard and GPU names */
#define DB_MAX_FILE_NAME 128 /* submitted file name */
#define DB_HASH_HEX 65       /* SHA-256 as hex plus NUL */

struct db;

struct db_user {
    int64_t id;
    char name[DB_MAX_NAME];
    char role[16];                 /* "user", "admin" or "runner" */
    char token_hash[DB_HASH_HEX];
};

/* One submission row. Strings are copies; source and result are owned by
 * the struct and freed with db_sub_clear(). Times are unix seconds, 0 = NULL. */
struct db_sub {
    int64_t id;
    int64_t user_id;
    char user[DB_MAX_NAME];        /* the owner's name */
    char leaderboard[DB_MAX_NAME];
    char gpu[DB_MAX_NAME];
    char mode[16];                 /* test | benchmark | leaderboard */
    char file_name[DB_MAX_FILE_NAME];
    char *source;                  /* owned; NULL unless asked for */
    size_t source_len;
    char source_sha256[DB_HASH_HEX];
    char status[16];               /* queued | running | done */
    char verdict[24];              /* "" while not done */
    int has_score;
    double score_ns;
    char *result;                  /* owned; the runner's JSON text, NULL until done or unless asked for */
    int64_t runner_id;             /* 0 = none */
    char runner_name[DB_MAX_NAME];
    int64_t created_at, started_at, finished_at;
};

struct db_event {
    int64_t seq;
    char event[32];
    char *data;                    /* owned JSON text, may be NULL */
    int64_t at;
};

/* One candidate row of a ranking: the best accepted leaderboard-mode
 * submission of one user. result is owned (freed by db_rank_rows_free). */
struct db_rank_row {
    int64_t submission_id;
    char user[DB_MAX_NAME];
    double score_ns;
    int64_t created_at;
    char *result;
};

/* Open (creating the file and its parent folder if needed) and migrate the
 * schema. *out is owned by the caller: db_close(). */
int db_open(const char *path, struct db **out, struct kj_err *err);
void db_close(struct db *db);

/* Check that the database answers (for /healthz). */
int db_ping(struct db *db, struct kj_err *err);

/* users */
/* Insert a user; KJ_ECONFLICT when the name (or hash) exists. */
int db_user_add(struct db *db, const char *name, const char *role, const char *token_hash,
                int64_t *id_out, struct kj_err *err);
/* Create or update the row "admin" (role admin) that holds the configured admin token's hash. */
int db_user_set_admin(struct db *db, const char *token_hash, struct kj_err *err);
/* Look a user up by token hash; KJ_ENOTFOUND when none. */
int db_user_by_hash(struct db *db, const char *token_hash, struct db_user *out, struct kj_err *err);

/* leaderboard secrets */
/* Create board's secret seed (RAND_bytes) if it has none. */
int db_secret_ensure(struct db *db, const char *board, struct kj_err *err);
/* The board's secret seed as a decimal string in out (>= 21 bytes). */
int db_secret_get(struct db *db, const char *board, char *out, size_t outsz, struct kj_err *err);

/* submissions */
void db_sub_clear(struct db_sub *s);
/* Insert a queued submission from s (user_id, leaderboard, gpu, mode,
 * file_name, source, source_len, source_sha256); the row is committed
 * (durable) on return. Sets s->id, s->created_at and s->status. */
int db_sub_insert(struct db *db, struct db_sub *s, struct kj_err *err);
/* Read one submission; with_blobs also copies source and result. KJ_ENOTFOUND. */
int db_sub_get(struct db *db, int64_t id, int with_blobs, struct db_sub *out, struct kj_err *err);
/* The caller's submissions, newest first, at most limit, without blobs.
 * *out is a new array of *n rows; free with db_sub_list_free(). */
int db_sub_list(struct db *db, int64_t user_id, int limit, struct db_sub **out, int *n,
                struct kj_err *err);
void db_sub_list_free(struct db_sub *rows, int n);
/* Count rows of the submissions table (for tests and /healthz). */
int db_sub_count(struct db *db, const char *status, int64_t *n, struct kj_err *err);
/* Move the oldest queued submission for gpu to running for this runner, in
 * one transaction, and copy it (with source) into out; for mode leaderboard
 * also copy the board's secret seed into secret (else secret = ""), read in
 * the same transaction so a claimed job always comes with its seed.
 * KJ_ENOTFOUND when nothing is queued for that GPU type. */
int db_sub_claim(struct db *db, const char *gpu, int64_t runner_id, const char *runner_name,
                 struct db_sub *out, char *secret, size_t secretsz, struct kj_err *err);
/* Store the result of a running job held by runner_id: verdict, score
 * (has_score 0 = NULL), result text; status done. A job already done by
 * this runner sets *duplicate and changes nothing. KJ_ENOTFOUND: no such
 * submission; KJ_ECONFLICT: this runner does not hold it. */
int db_sub_finish(struct db *db, int64_t id, int64_t runner_id, const char *verdict,
                  int has_score, double score_ns, const char *result, int *duplicate,
                  struct kj_err *err);

/* events */
/* Append a progress event to a job running on runner_id (same errors as db_sub_finish). */
int db_event_add(struct db *db, int64_t id, int64_t runner_id, const char *event,
                 const char *data, struct kj_err *err);
/* Every event of a submission in order; free with db_events_free(). */
int db_events_list(struct db *db, int64_t id, struct db_event **out, int *n, struct kj_err *err);
void db_events_free(struct db_event *ev, int n);

/* rankings: the best accepted mode=leaderboard submission per user for
 * (board, gpu), ordered by score, then submission time, then id. */
int db_rank_rows(struct db *db, const char *board, const char *gpu, struct db_rank_row **out,
                 int *n, struct kj_err *err);
void db_rank_rows_free(struct db_rank_row *rows, int n);

#endif
