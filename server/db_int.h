/*
 * db_int.h - what the db_*.c files share: the connection struct, the
 * checking helpers every SQLite call goes through (db_sql.c), and the
 * pieces one file's transaction borrows from another ("_locked": called
 * with db->mu held, inside the caller's transaction). Not for other modules.
 *
 * DB_CHECK(db, err, call, want) runs call and, unless it returns want,
 * fills err with KJ_EDB (KJ_ESTORAGE for SQLITE_FULL and SQLITE_IOERR,
 * which the connection also remembers for db_storage_check), the call's
 * text, file:line and sqlite3_errmsg. db_step() and db_exec() do the same.
 * db_prep() prepares a statement and binds its parameters from a format
 * string; db_step() steps it (1 = row, 0 = done, <0 = error).
 * sqlite3_finalize() is not checked: it only repeats the error of the
 * statement's last step, which db_step() has already reported; column
 * reads, sqlite3_changes() and sqlite3_last_insert_rowid() cannot fail.
 */
#ifndef KJ_DB_INT_H
#define KJ_DB_INT_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include "db.h"

struct db_pending;

struct db {
    sqlite3 *h;          /* owned */
    char path[1024];     /* the database file, as opened */
    atomic_llong storage_fail_ms; /* wall-clock ms of the last SQLITE_FULL/IOERR; 0 = none
                                     since the last good probe (db_storage_check) */
    atomic_int storage_full;      /* 1 when that failure was SQLITE_FULL */
    pthread_mutex_t mu;  /* serializes every use of h */
    int64_t lease_ms;    /* job lease length (db_set_lease_ms); guarded by mu */
    enum queue_rule queue_rule; /* the claim's rule (db_queue_set_rule); guarded by mu */
    pthread_mutex_t q_mu;       /* guards pending (never held while waiting for mu) */
    struct db_pending *pending; /* submissions waiting for the next group commit (db_sub.c) */
};

/* Columns read by every submission query, in db_sub_row()'s order
 * ("SELECT " DB_SUB_COLS "WHERE ..."). */
#define DB_SUB_COLS                                                                        \
    "s.id, s.user_id, u.name, s.leaderboard, s.gpu, s.mode, s.file_name, s.source_sha256, " \
    "s.status, s.verdict, s.score_ns, s.runner_id, s.runner_name, s.created_at, "          \
    "s.started_at, s.finished_at, s.attempts, s.lease_until, s.reason, s.source, s.result, " \
    "s.disqualified, s.dq_reason, s.withdrawn_at, s.sanitizer, s.profile_shape, "        \
    "s.lang, coalesce(s.rejudge_of, 0) "                                                   \
    "FROM submissions s JOIN users u ON u.id = s.user_id "

/* Fill out from the current row of a DB_SUB_COLS query (db_sub.c); with_blobs
 * also copies source and result (freed with db_sub_clear). */
int db_sub_row(struct db *db, struct kj_err *err, sqlite3_stmt *st, int with_blobs,
               struct db_sub *out);

/* db_artifact.c: schema version 10 (run by db_migrate in its transaction). */
int db_migrate_v10(struct db *db, struct kj_err *err);
/* db.c: create the schema or bring it to DB_SCHEMA_VERSION, in one write
 * transaction on db->h (every version's steps in order: a fresh database
 * is version 1's schema and every migration since). quiet: no log line.
 * db_backup.c runs it on scratch copies to compare a restore's schema. */
int db_schema_migrate(struct db *db, int quiet, struct kj_err *err);

/* db_lang.c: schema version 12 (submissions.lang), and that column read
 * into an enum sub_lang value. */
int db_migrate_v12(struct db *db, struct kj_err *err);
int db_col_lang(struct kj_err *err, sqlite3_stmt *st, int i, int *out);

/* db_sub.c: db_sub_get inside a transaction. */
int db_sub_get_locked(struct db *db, int64_t id, int with_blobs, struct db_sub *out,
                      struct kj_err *err);
/* db_event.c: append an event to submission id (seq = last + 1). */
int db_event_insert_locked(struct db *db, int64_t id, enum kj_event event, const char *data,
                           struct kj_err *err);
/* db_event.c: KJ_ELIMIT when one more event (event, data) would take job
 * id past DB_MAX_JOB_EVENTS or DB_MAX_JOB_EVENT_BYTES. */
int db_event_room_locked(struct db *db, int64_t id, enum kj_event event, const char *data,
                         struct kj_err *err);
/* db_board.c: board's secret seed into out; KJ_ENOTFOUND when it has none. */
int db_secret_get_locked(struct db *db, const char *board, char *out, size_t outsz,
                         struct kj_err *err);
/* db_rank.c: store the n timed shapes m of finished submission id. */
int db_rank_store_locked(struct db *db, int64_t id, const struct db_median *m, int n,
                         struct kj_err *err);
/* db_user.c: insert a user row (gpus: a runner token's GPU types, or NULL);
 * KJ_ECONFLICT when the name (or hash) is taken. */
int db_user_insert_locked(struct db *db, const char *name, const char *role,
                          const char *token_hash, const char *gpus, int64_t *id_out,
                          struct kj_err *err);

int db_check_at(struct db *db, struct kj_err *err, int rc, int want, const char *text,
                const char *file, int line);
#define DB_CHECK(db, err, call, want) \
    db_check_at((db), (err), (call), (want), #call, __FILE__, __LINE__)

/* Prepare sql into *st and bind parameters 1.. from fmt:
 *   't' const char * (text), 'i' int64_t, 'd' double, 'n' NULL (no argument),
 *   'b' const void *, size_t (blob).
 * On failure *st is NULL. The caller finalizes *st. */
int db_prep_at(struct db *db, struct kj_err *err, const char *file, int line,
               sqlite3_stmt **st, const char *sql, const char *fmt, ...);
#define db_prep(db, err, st, sql, ...) \
    db_prep_at((db), (err), __FILE__, __LINE__, (st), (sql), __VA_ARGS__)

/* Fill row (zeroed, of the size db_rows was given) from st's current row:
 * 0 or an error. */
typedef int (*db_row_fn)(struct kj_err *err, sqlite3_stmt *st, void *row);

/* Run sql (parameters as db_prep) under db->mu and read every row of it
 * into *out, a new array of *n rows of elem bytes each, filled by fn
 * (caller frees with free(): rows that own nothing). On failure nothing
 * is returned. what names the rows in an out-of-memory message. */
int db_rows_at(struct db *db, struct kj_err *err, const char *file, int line, void **out,
               int *n, size_t elem, const char *what, db_row_fn fn, const char *sql,
               const char *fmt, ...);
#define db_rows(db, err, out, n, what, fn, sql, ...) \
    db_rows_at((db), (err), __FILE__, __LINE__, (void **)(out), (n), sizeof **(out), (what), \
               (fn), (sql), __VA_ARGS__)
/* The same with db->mu already held by the caller. */
int db_rows_locked_at(struct db *db, struct kj_err *err, const char *file, int line,
                      void **out, int *n, size_t elem, const char *what, db_row_fn fn,
                      const char *sql, const char *fmt, ...);
#define db_rows_locked(db, err, out, n, what, fn, sql, ...) \
    db_rows_locked_at((db), (err), __FILE__, __LINE__, (void **)(out), (n), sizeof **(out), \
                      (what), (fn), (sql), __VA_ARGS__)

/* Step st: 1 = a row, 0 = done, <0 = error (err filled). */
int db_step_at(struct db *db, struct kj_err *err, sqlite3_stmt *st, const char *file, int line);
#define db_step(db, err, st) db_step_at((db), (err), (st), __FILE__, __LINE__)

/* Run one SQL statement without results. */
int db_exec_at(struct db *db, struct kj_err *err, const char *sql, const char *file, int line);
#define db_exec(db, err, sql) db_exec_at((db), (err), (sql), __FILE__, __LINE__)

/* ALTER TABLE submissions ADD COLUMN name decl, unless submissions has a
 * column name already (a migration that may meet its own work: one run
 * half done, a database already at a later version's shape). */
int db_add_column(struct db *db, const char *name, const char *decl, struct kj_err *err);

/* Copy column i as text into dst (size dstsz); NULL becomes "". */
void db_col_text(sqlite3_stmt *st, int i, char *dst, size_t dstsz);
/* Column i (text) as a mode, a verdict (SQL NULL: *has = 0), an event or a
 * submission state. A name the enum does not know cannot be stored (the
 * CHECK constraints; events only come from the server): KJ_EINTERNAL
 * through KJ_NEVER, naming the column. */
int db_col_mode(struct kj_err *err, sqlite3_stmt *st, int i, enum kj_mode *out);
int db_col_verdict(struct kj_err *err, sqlite3_stmt *st, int i, int *has,
                   enum kj_verdict *out);
int db_col_event(struct kj_err *err, sqlite3_stmt *st, int i, enum kj_event *out);
int db_col_status(struct kj_err *err, sqlite3_stmt *st, int i, enum db_status *out);
/* Column i as a new heap string (caller frees), NULL for SQL NULL; *len gets the byte length. */
int db_col_dup(struct db *db, struct kj_err *err, sqlite3_stmt *st, int i, char **out, size_t *len);

/* Make room for one more element in a row array being filled: grows *arr
 * (elem bytes each, *cap slots, count used) by doubling. 0, or KJ_ENOMEM
 * with err filled (what names the rows); *arr stays valid either way. */
int db_grow(void **arr, int *cap, int count, size_t elem, const char *what, struct kj_err *err);

/* db_queue.c, inside a transaction: the queued job of gpu the rule picks
 * next among those filter allows (NULL: all; db.h), *id = 0 when none,
 * noting the pick in the class streak. */
int db_queue_pick_locked(struct db *db, const char *gpu, const struct db_claim_filter *filter,
                         int64_t now_ms, int64_t *id, struct kj_err *err);
/* The position of queued job id under the rule (queue.h); 0 when not queued. */
int db_queue_position_locked(struct db *db, int64_t id, int64_t *pos, struct kj_err *err);
/* Charge job id's user the job's run time (claimed_ms to now: from the
 * claim, or from the heartbeat that said its GPU work started) on its GPU type,
 * and when measured, fold it into its class's estimate (a job given back
 * from a gap is charged, but its time is no job's run time). A job claimed
 * before schema version 9 (no claimed_ms) charges nothing. */
int db_queue_charge_locked(struct db *db, int64_t id, int measured, struct kj_err *err);

/* Current unix time in seconds. */
int64_t db_now(void);

#endif
