/*
 * db_rejudge.c - schema version 14 and the rejudge runs of db_rejudge.h:
 * each result's timing, each ranking's timing (table rank_timing), the
 * rejudges (table rejudges), their jobs (submission rows of the operator
 * with rejudge_id and rejudge_of) and the swap that ends one.
 *
 * api_admin.c starts, cancels and lists rejudges; db_job.c calls the two
 * "_locked" functions in the transaction that finishes a job, so the swap
 * of a ranking is part of the commit of its last job: a reader sees the
 * old ranking or the new one, never a mix. The earlier result of every
 * swapped submission goes to result_history (read by db_history.c).
 */
#include "db_int.h"
#include "db_rejudge.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Version 14. Existing results with a score get their timing from the
 * stored result (no "timing": protocol v1; no version: 1, protocol.h),
 * and each ranking the timing of its newest ranked result. */
static const char schema_v14[] =
    "CREATE TABLE IF NOT EXISTS rejudges ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " leaderboard TEXT NOT NULL,"
    " gpu TEXT NOT NULL,"
    " state TEXT NOT NULL CHECK (state IN ('running','swapped','failed','cancelled')),"
    " since INTEGER,"
    " by_user INTEGER NOT NULL REFERENCES users(id),"
    " created_at INTEGER NOT NULL,"
    " ended_at INTEGER,"
    " reason TEXT,"
    " from_protocol TEXT, from_version INTEGER,"
    " to_protocol TEXT, to_version INTEGER);"
    "CREATE INDEX IF NOT EXISTS rejudges_board ON rejudges(leaderboard, gpu, state);"
    "CREATE TABLE IF NOT EXISTS rank_timing ("
    " leaderboard TEXT NOT NULL,"
    " gpu TEXT NOT NULL,"
    " protocol TEXT NOT NULL,"
    " version INTEGER NOT NULL,"
    " set_at INTEGER NOT NULL,"
    " rejudge_id INTEGER REFERENCES rejudges(id),"
    " PRIMARY KEY (leaderboard, gpu));"
    "CREATE TABLE IF NOT EXISTS result_history ("
    " submission_id INTEGER NOT NULL REFERENCES submissions(id),"
    " seq INTEGER NOT NULL,"
    " verdict TEXT NOT NULL,"
    " score_ns REAL,"
    " result TEXT,"
    " timing_protocol TEXT,"
    " timing_version INTEGER,"
    " finished_at INTEGER,"
    " replaced_at INTEGER NOT NULL,"
    " rejudge_id INTEGER REFERENCES rejudges(id),"
    " PRIMARY KEY (submission_id, seq));";

static const char schema_v14_fill[] =
    "UPDATE submissions SET timing_protocol = coalesce(CASE WHEN json_valid(result) THEN"
    "  json_extract(result, '$.timing.protocol') END, 'v1'),"
    " timing_version = coalesce(CASE WHEN json_valid(result) THEN"
    "  json_extract(result, '$.timing.version') END, 1)"
    " WHERE status = 'done' AND score_ns IS NOT NULL AND timing_protocol IS NULL;"
    "INSERT OR IGNORE INTO rank_timing(leaderboard, gpu, protocol, version, set_at)"
    " SELECT leaderboard, gpu, timing_protocol, timing_version, strftime('%s','now')"
    " FROM submissions s WHERE id = (SELECT max(id) FROM submissions t"
    "  WHERE t.leaderboard = s.leaderboard AND t.gpu = s.gpu AND t.mode = 'leaderboard'"
    "  AND t.status = 'done' AND t.verdict = 'accepted' AND t.score_ns IS NOT NULL"
    "  AND t.rejudge_of IS NULL);";

int db_migrate_v14(struct db *db, struct kj_err *err)
{
    int rc = db_exec(db, err, schema_v14);
    if (rc == 0)
        rc = db_add_column(db, "timing_protocol", "TEXT", err);
    if (rc == 0)
        rc = db_add_column(db, "timing_version", "INTEGER", err);
    /* Plain integers (a rejudges id, a submissions id): a column added with
     * REFERENCES could never be dropped again (SQLite), and the rows are
     * only ever written by this file. */
    if (rc == 0)
        rc = db_add_column(db, "rejudge_id", "INTEGER", err);
    if (rc == 0)
        rc = db_add_column(db, "rejudge_of", "INTEGER", err);
    if (rc == 0)
        rc = db_exec(db, err, "CREATE INDEX IF NOT EXISTS submissions_rejudge ON "
                     "submissions(rejudge_id)");
    return rc != 0 ? rc : db_exec(db, err, schema_v14_fill);
}

const char *db_rejudge_state_name(enum db_rejudge_state s)
{
    static const char *const names[] = {"running", "swapped", "failed", "cancelled"};
    return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "?";
}

static enum db_rejudge_state state_parse(const char *v)
{
    for (int s = DB_RJ_RUNNING; s <= DB_RJ_CANCELLED; s++)
        if (v != NULL && strcmp(v, db_rejudge_state_name(s)) == 0)
            return s;
    return DB_RJ_FAILED; /* the CHECK list allows no other name */
}

/* Columns i (protocol) and i + 1 (version) of st into t. */
static void col_timing(sqlite3_stmt *st, int i, struct db_timing *t)
{
    db_col_text(st, i, t->protocol, sizeof t->protocol);
    t->version = sqlite3_column_int(st, i + 1);
}

/* ------------------------------------------------------------------ */
/* Timings                                                             */
/* ------------------------------------------------------------------ */

int db_timing_store_locked(struct db *db, int64_t id, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = db_prep(db, err, &st, "UPDATE submissions SET"
                     " timing_protocol = coalesce(json_extract(result, '$.timing.protocol'), 'v1'),"
                     " timing_version = coalesce(json_extract(result, '$.timing.version'), 1)"
                     " WHERE id = ? AND status = 'done' AND score_ns IS NOT NULL"
                     " AND json_valid(result)", "i", id);
    if (rc == 0)
        rc = db_step(db, err, st);
    sqlite3_finalize(st);
    if (rc != 0)
        return rc;
    /* A board's first ranked result sets its ranking's timing; later ones
     * at another timing wait for a rejudge. */
    rc = db_prep(db, err, &st, "INSERT OR IGNORE INTO rank_timing(leaderboard, gpu, protocol, "
                 "version, set_at) SELECT leaderboard, gpu, timing_protocol, timing_version, ? "
                 "FROM submissions WHERE id = ? AND mode = 'leaderboard' AND verdict = "
                 "'accepted' AND timing_protocol IS NOT NULL AND rejudge_of IS NULL", "ii",
                 db_now(), id);
    if (rc == 0)
        rc = db_step(db, err, st);
    sqlite3_finalize(st);
    return rc;
}

/* With db->mu held: board's ranking timing on gpu into t ("" when none). */
static int rank_timing_locked(struct db *db, const char *board, const char *gpu,
                              struct db_timing *t, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = db_prep(db, err, &st, "SELECT protocol, version FROM rank_timing WHERE "
                     "leaderboard = ? AND gpu = ?", "tt", board, gpu);
    memset(t, 0, sizeof *t);
    if (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        col_timing(st, 0, t);
        rc = 0;
    }
    sqlite3_finalize(st);
    return rc;
}

int db_sub_timing(struct db *db, int64_t id, struct db_timing *out, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&db->mu);
    rc = db_prep(db, err, &st, "SELECT timing_protocol, timing_version FROM submissions WHERE "
                 "id = ?", "i", id);
    if (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        col_timing(st, 0, out);
        rc = 0;
    } else if (rc == 0) {
        rc = KJ_FAIL(err, KJ_ENOTFOUND, "no submission %lld", (long long)id);
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

int db_rank_timing(struct db *db, const char *board, const char *gpu, struct db_timing *out,
                   struct kj_err *err)
{
    int rc;
    pthread_mutex_lock(&db->mu);
    rc = rank_timing_locked(db, board, gpu, out, err);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Reading rejudges                                                    */
/* ------------------------------------------------------------------ */

#define RJ_COLS                                                                          \
    "r.id, r.leaderboard, r.gpu, r.state, coalesce(r.since, 0), u.name, r.created_at, "  \
    "coalesce(r.ended_at, 0), r.reason, r.from_protocol, r.from_version, r.to_protocol, " \
    "r.to_version, "                                                                     \
    "(SELECT count(*) FROM submissions j WHERE j.rejudge_id = r.id), "                   \
    "(SELECT count(*) FROM submissions j WHERE j.rejudge_id = r.id AND j.status = 'queued'), " \
    "(SELECT count(*) FROM submissions j WHERE j.rejudge_id = r.id AND j.status = 'running'), " \
    "(SELECT count(*) FROM submissions j WHERE j.rejudge_id = r.id AND j.status = 'done'), " \
    "(SELECT count(*) FROM submissions j WHERE j.rejudge_id = r.id AND j.status = 'done' " \
    " AND j.verdict = 'accepted') "                                                      \
    "FROM rejudges r JOIN users u ON u.id = r.by_user "

/* The invariants of each rejudge state (db_rejudge.h); returns 1 so it can
 * sit in KJ_NEVER(!...). running: not ended, no reason, no target timing;
 * swapped: ended, no reason; failed, cancelled: ended with a reason and no
 * target timing; always: every job counted once. */
static int assert_rejudge_state(const struct db_rejudge *r)
{
    if (r->queued + r->running + r->done != r->jobs || r->accepted > r->done)
        return 0;
    switch (r->state) {
    case DB_RJ_RUNNING:
        return r->ended_at == 0 && r->reason[0] == '\0' && r->to.protocol[0] == '\0';
    case DB_RJ_SWAPPED:
        return r->ended_at != 0 && r->reason[0] == '\0' && r->queued == 0 && r->running == 0;
    case DB_RJ_FAILED:
    case DB_RJ_CANCELLED:
        return r->ended_at != 0 && r->reason[0] != '\0' && r->to.protocol[0] == '\0';
    }
    return 0;
}

static int rj_row(struct kj_err *err, sqlite3_stmt *st, void *row)
{
    struct db_rejudge *r = row;
    r->id = sqlite3_column_int64(st, 0);
    db_col_text(st, 1, r->leaderboard, sizeof r->leaderboard);
    db_col_text(st, 2, r->gpu, sizeof r->gpu);
    r->state = state_parse((const char *)sqlite3_column_text(st, 3));
    r->since = sqlite3_column_int64(st, 4);
    db_col_text(st, 5, r->by, sizeof r->by);
    r->created_at = sqlite3_column_int64(st, 6);
    r->ended_at = sqlite3_column_int64(st, 7);
    db_col_text(st, 8, r->reason, sizeof r->reason);
    col_timing(st, 9, &r->from);
    col_timing(st, 11, &r->to);
    r->jobs = sqlite3_column_int64(st, 13);
    r->queued = sqlite3_column_int64(st, 14);
    r->running = sqlite3_column_int64(st, 15);
    r->done = sqlite3_column_int64(st, 16);
    r->accepted = sqlite3_column_int64(st, 17);
    r->failed = r->done - r->accepted;
    if (KJ_NEVER(!assert_rejudge_state(r)))
        return KJ_FAIL(err, KJ_EINTERNAL, "rejudge %lld breaks the invariants of state %s",
                       (long long)r->id, db_rejudge_state_name(r->state));
    return 0;
}

int db_rejudge_list(struct db *db, const char *board, struct db_rejudge **out, int *n,
                    struct kj_err *err)
{
    return db_rows(db, err, out, n, "rejudges", rj_row, "SELECT " RJ_COLS "WHERE "
                   "r.leaderboard = ? ORDER BY r.id DESC LIMIT ?", "ti", board,
                   (int64_t)DB_REJUDGE_MAX_LIST);
}

static int job_row(struct kj_err *err, sqlite3_stmt *st, void *row)
{
    struct db_rejudge_job *j = row;
    int rc;
    j->submission_id = sqlite3_column_int64(st, 0);
    j->job_id = sqlite3_column_int64(st, 1);
    db_col_text(st, 2, j->user, sizeof j->user);
    j->has_score = sqlite3_column_type(st, 5) != SQLITE_NULL;
    j->score_ns = sqlite3_column_double(st, 5);
    col_timing(st, 6, &j->timing);
    if ((rc = db_col_status(err, st, 3, &j->status)) != 0)
        return rc;
    return db_col_verdict(err, st, 4, &j->has_verdict, &j->verdict);
}

int db_rejudge_jobs(struct db *db, int64_t id, struct db_rejudge_job **out, int *n,
                    struct kj_err *err)
{
    return db_rows(db, err, out, n, "rejudge jobs", job_row,
                   "SELECT j.rejudge_of, j.id, u.name, j.status, j.verdict, j.score_ns, "
                   "j.timing_protocol, j.timing_version FROM submissions j JOIN submissions o "
                   "ON o.id = j.rejudge_of JOIN users u ON u.id = o.user_id WHERE "
                   "j.rejudge_id = ? ORDER BY j.rejudge_of", "i", id);
}

/* ------------------------------------------------------------------ */
/* Start and cancel                                                    */
/* ------------------------------------------------------------------ */

/* With db->mu held: the id of the running rejudge of board on gpu, 0 when none. */
static int running_locked(struct db *db, const char *board, const char *gpu, int64_t *id,
                          struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = db_prep(db, err, &st, "SELECT id FROM rejudges WHERE leaderboard = ? AND gpu = ? "
                     "AND state = 'running'", "tt", board, gpu);
    *id = 0;
    if (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        *id = sqlite3_column_int64(st, 0);
        rc = 0;
    }
    sqlite3_finalize(st);
    return rc;
}

/* With db->mu held, in a transaction: rejudge board on gpu; *id = 0 when
 * there is nothing to rejudge there (then nothing was added). */
static int start_one_locked(struct db *db, const char *board, const char *gpu, int64_t since,
                            int64_t by_user, int64_t *id, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    struct db_timing from;
    int64_t now = db_now();
    int rc = rank_timing_locked(db, board, gpu, &from, err);
    *id = 0;
    if (rc == 0)
        rc = db_prep(db, err, &st, "INSERT INTO rejudges(leaderboard, gpu, state, since, by_user, "
                     "created_at, from_protocol, from_version) VALUES (?, ?, 'running', ?, ?, ?, "
                     "nullif(?, ''), ?)", "ttiiiti", board, gpu, since, by_user, now,
                     from.protocol, (int64_t)from.version);
    if (rc == 0 && (rc = db_step(db, err, st)) == 0)
        *id = sqlite3_last_insert_rowid(db->h);
    sqlite3_finalize(st);
    if (rc != 0)
        return rc;
    /* The jobs: copies of each ranked submission, the operator's, queued. */
    rc = db_prep(db, err, &st, "INSERT INTO submissions(user_id, leaderboard, gpu, mode, "
                 "file_name, source, source_sha256, status, created_at, lang, rejudge_id, "
                 "rejudge_of) SELECT ?, leaderboard, gpu, mode, file_name, source, "
                 "source_sha256, 'queued', ?, lang, ?, id FROM submissions WHERE "
                 "leaderboard = ? AND gpu = ? AND mode = 'leaderboard' AND status = 'done' "
                 "AND verdict = 'accepted' AND score_ns IS NOT NULL AND score_ns > 0 AND "
                 "disqualified = 0 AND withdrawn_at IS NULL AND rejudge_of IS NULL AND "
                 "created_at >= ? ORDER BY id", "iiitti", by_user, now, *id, board, gpu, since);
    if (rc == 0)
        rc = db_step(db, err, st);
    sqlite3_finalize(st);
    if (rc == 0 && sqlite3_changes(db->h) == 0) { /* nothing there: no rejudge either */
        rc = db_prep(db, err, &st, "DELETE FROM rejudges WHERE id = ?", "i", *id);
        if (rc == 0)
            rc = db_step(db, err, st);
        sqlite3_finalize(st);
        *id = 0;
    }
    return rc;
}

/* With db->mu held: the rejudges ids[0..n) into *out (read back whole). */
static int read_ids_locked(struct db *db, const int64_t *ids, int n, struct db_rejudge **out,
                           struct kj_err *err)
{
    struct db_rejudge *rows = calloc(n > 0 ? (size_t)n : 1, sizeof *rows);
    int rc = rows == NULL ? KJ_FAIL(err, KJ_ENOMEM, "out of memory reading rejudges") : 0;
    for (int i = 0; rc == 0 && i < n; i++) {
        struct db_rejudge *one = NULL;
        int got = 0;
        rc = db_rows_locked(db, err, &one, &got, "rejudges", rj_row, "SELECT " RJ_COLS
                            "WHERE r.id = ?", "i", ids[i]);
        if (rc == 0 && got == 1)
            rows[i] = one[0];
        else if (rc == 0)
            rc = KJ_FAIL(err, KJ_EINTERNAL, "rejudge %lld vanished", (long long)ids[i]);
        free(one);
    }
    if (rc != 0) {
        free(rows);
        rows = NULL;
    }
    *out = rows;
    return rc;
}

int db_rejudge_start(struct db *db, const char *board, const char *const *gpus, int ngpus,
                     int64_t since, int64_t by_user, struct db_rejudge **out, int *n,
                     struct kj_err *err)
{
    int64_t ids[DB_REJUDGE_MAX_GPUS], id = 0;
    int count = 0, rc;
    *out = NULL;
    *n = 0;
    if (KJ_NEVER(ngpus < 0 || ngpus > DB_REJUDGE_MAX_GPUS))
        return KJ_FAIL(err, KJ_EINTERNAL, "a rejudge of %d GPU types", ngpus);
    pthread_mutex_lock(&db->mu);
    if ((rc = db_exec(db, err, "BEGIN IMMEDIATE")) != 0)
        goto out;
    for (int g = 0; rc == 0 && g < ngpus; g++) {
        if ((rc = running_locked(db, board, gpus[g], &id, err)) == 0 && id != 0)
            rc = KJ_FAIL(err, KJ_ECONFLICT, "rejudge %lld of %s on %s is still running; wait for "
                         "it or cancel it (kjudge admin rejudge --cancel %s)", (long long)id,
                         board, gpus[g], board);
    }
    for (int g = 0; rc == 0 && g < ngpus; g++)
        if ((rc = start_one_locked(db, board, gpus[g], since, by_user, &id, err)) == 0 && id != 0)
            ids[count++] = id;
    if (rc == 0 && count == 0)
        rc = KJ_FAIL(err, KJ_ENOTFOUND, "leaderboard %s has no ranked submission to rejudge%s",
                     board, since > 0 ? " made since then" : "");
    if (rc == 0)
        rc = read_ids_locked(db, ids, count, out, err);
    if (rc == 0 && (rc = db_exec(db, err, "COMMIT")) == 0)
        *n = count;
    if (rc != 0) {
        db_exec(db, NULL, "ROLLBACK");
        free(*out);
        *out = NULL;
    }
out:
    pthread_mutex_unlock(&db->mu);
    return rc;
}

/* With db->mu held, in a transaction: rejudge id ends in state with reason. */
static int end_locked(struct db *db, int64_t id, enum db_rejudge_state state, const char *reason,
                      const struct db_timing *to, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = db_prep(db, err, &st, "UPDATE rejudges SET state = ?, ended_at = ?, reason = ?, "
                     "to_protocol = nullif(?, ''), to_version = ? WHERE id = ? AND "
                     "state = 'running'", "tittii", db_rejudge_state_name(state), db_now(),
                     reason, to != NULL ? to->protocol : "",
                     (int64_t)(to != NULL ? to->version : 0), id);
    if (rc == 0)
        rc = db_step(db, err, st);
    sqlite3_finalize(st);
    if (rc == 0 && sqlite3_changes(db->h) != 1)
        rc = KJ_FAIL(err, KJ_EINTERNAL, "ending rejudge %lld changed no row", (long long)id);
    if (rc == 0)
        kj_log(KJ_LOG_INFO, "rejudge", "ended id=%lld state=%s%s%s", (long long)id,
               db_rejudge_state_name(state), reason != NULL ? ": " : "",
               reason != NULL ? reason : "");
    return rc;
}

/* With db->mu held, in a transaction: end the queued jobs of rejudge id
 * (never claimed) as done, internal_error "the rejudge was cancelled",
 * with a verdict event, so a stream or a wait on one ends too. */
static int end_queued_locked(struct db *db, int64_t id, struct kj_err *err)
{
    static const char why[] = "the rejudge was cancelled before this job was judged";
    static const char result[] = "{\"verdict\":\"internal_error\",\"message\":\"the rejudge "
                                 "was cancelled before this job was judged\",\"score_ns\":null}";
    static const char data[] = "{\"verdict\":\"internal_error\",\"message\":\"the rejudge "
                               "was cancelled before this job was judged\"}";
    sqlite3_stmt *st = NULL;
    int64_t *ids = NULL;
    int n = 0, cap = 0, rc = db_prep(db, err, &st, "SELECT id FROM submissions WHERE "
                                     "rejudge_id = ? AND status = 'queued'", "i", id);
    while (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        if ((rc = db_grow((void **)&ids, &cap, n, sizeof *ids, "rejudge jobs", err)) != 0)
            break;
        ids[n++] = sqlite3_column_int64(st, 0);
        rc = 0;
    }
    sqlite3_finalize(st);
    for (int i = 0; rc == 0 && i < n; i++) {
        rc = db_prep(db, err, &st, "UPDATE submissions SET status = 'done', verdict = ?, "
                     "result = ?, reason = ?, finished_at = ? WHERE id = ? AND status = 'queued'",
                     "tttii", kj_verdict_name(KJ_V_INTERNAL), result, why, db_now(), ids[i]);
        if (rc == 0)
            rc = db_step(db, err, st);
        sqlite3_finalize(st);
        if (rc == 0)
            rc = db_event_insert_locked(db, ids[i], KJ_EV_VERDICT, data, err);
    }
    free(ids);
    return rc < 0 ? rc : 0;
}

int db_rejudge_cancel(struct db *db, const char *board, const char *gpu,
                      struct db_rejudge **out, int *n, struct kj_err *err)
{
    struct db_rejudge *run = NULL;
    int64_t ids[DB_REJUDGE_MAX_LIST];
    int count = 0, got = 0, rc;
    *out = NULL;
    *n = 0;
    pthread_mutex_lock(&db->mu);
    if ((rc = db_exec(db, err, "BEGIN IMMEDIATE")) != 0)
        goto out;
    rc = db_rows_locked(db, err, &run, &got, "rejudges", rj_row, "SELECT " RJ_COLS "WHERE "
                        "r.leaderboard = ? AND (? = '' OR r.gpu = ?) AND r.state = 'running' "
                        "ORDER BY r.id LIMIT ?", "ttti", board, gpu != NULL ? gpu : "",
                        gpu != NULL ? gpu : "", (int64_t)DB_REJUDGE_MAX_LIST);
    if (rc == 0 && got == 0)
        rc = KJ_FAIL(err, KJ_ENOTFOUND, "no rejudge of %s%s%s is running", board,
                     gpu != NULL ? " on " : "", gpu != NULL ? gpu : "");
    for (int i = 0; rc == 0 && i < got; i++) {
        char why[DB_MAX_REASON];
        snprintf(why, sizeof why, "cancelled with %lld of %lld jobs done; nothing was swapped",
                 (long long)run[i].done, (long long)run[i].jobs);
        if ((rc = end_queued_locked(db, run[i].id, err)) == 0 &&
            (rc = end_locked(db, run[i].id, DB_RJ_CANCELLED, why, NULL, err)) == 0)
            ids[count++] = run[i].id;
    }
    if (rc == 0)
        rc = read_ids_locked(db, ids, count, out, err);
    if (rc == 0 && (rc = db_exec(db, err, "COMMIT")) == 0)
        *n = count;
    if (rc != 0) {
        db_exec(db, NULL, "ROLLBACK");
        free(*out);
        *out = NULL;
    }
out:
    pthread_mutex_unlock(&db->mu);
    free(run);
    return rc;
}

/* ------------------------------------------------------------------ */
/* The end of a rejudge: swap or fail                                  */
/* ------------------------------------------------------------------ */

/* With db->mu held: a reason the finished jobs of rejudge id cannot be
 * swapped into ("" when they can), and in *to the one timing of their
 * scored results ("" when none has a score). */
static int swap_check_locked(struct db *db, int64_t id, char *why, size_t whysz,
                             struct db_timing *to, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int n = 0, rc;
    why[0] = '\0';
    memset(to, 0, sizeof *to);
    rc = db_prep(db, err, &st, "SELECT id, rejudge_of FROM submissions WHERE rejudge_id = ? AND "
                 "verdict = 'internal_error' ORDER BY id LIMIT 1", "i", id);
    if (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        snprintf(why, whysz, "job %lld (submission %lld) ended as internal_error, the judge's "
                 "own failure; nothing was swapped", (long long)sqlite3_column_int64(st, 0),
                 (long long)sqlite3_column_int64(st, 1));
        rc = 0;
    }
    sqlite3_finalize(st);
    if (rc != 0 || why[0] != '\0')
        return rc;
    rc = db_prep(db, err, &st, "SELECT timing_protocol, timing_version, count(*) FROM submissions "
                 "WHERE rejudge_id = ? AND timing_protocol IS NOT NULL GROUP BY 1, 2 ORDER BY 3 "
                 "DESC", "i", id);
    while (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        struct db_timing t;
        col_timing(st, 0, &t);
        if (n++ == 0)
            *to = t;
        else
            snprintf(why, whysz, "the new results were measured with more than one timing "
                     "(%s version %d and %s version %d): every runner of the GPU type must "
                     "run the same one; nothing was swapped", to->protocol, to->version,
                     t.protocol, t.version);
        rc = 0;
    }
    sqlite3_finalize(st);
    return rc;
}

/* With db->mu held, in a transaction: every original of rejudge id takes
 * its job's result (verdict, score, result, timing, medians); its own goes
 * to result_history first. */
static int swap_locked(struct db *db, int64_t id, struct kj_err *err)
{
    static const char *const sql[] = {
        "INSERT INTO result_history(submission_id, seq, verdict, score_ns, result, "
        "timing_protocol, timing_version, finished_at, replaced_at, rejudge_id) "
        "SELECT o.id, (SELECT coalesce(max(h.seq), 0) + 1 FROM result_history h WHERE "
        "h.submission_id = o.id), o.verdict, o.score_ns, o.result, o.timing_protocol, "
        "o.timing_version, o.finished_at, strftime('%s','now'), j.rejudge_id FROM submissions j "
        "JOIN submissions o ON o.id = j.rejudge_of WHERE j.rejudge_id = ?1",
        "UPDATE submissions AS o SET (verdict, score_ns, result, timing_protocol, "
        "timing_version) = (SELECT j.verdict, j.score_ns, j.result, j.timing_protocol, "
        "j.timing_version FROM submissions j WHERE j.rejudge_id = ?1 AND j.rejudge_of = o.id) "
        "WHERE o.id IN (SELECT rejudge_of FROM submissions WHERE rejudge_id = ?1)",
        "DELETE FROM shape_medians WHERE submission_id IN (SELECT rejudge_of FROM submissions "
        "WHERE rejudge_id = ?1)",
        "INSERT INTO shape_medians(submission_id, idx, shape, median_ns, raw_median_ns, "
        "corrected) SELECT j.rejudge_of, m.idx, m.shape, m.median_ns, m.raw_median_ns, "
        "m.corrected FROM shape_medians m JOIN submissions j ON j.id = m.submission_id "
        "WHERE j.rejudge_id = ?1"};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < sizeof sql / sizeof sql[0]; i++) {
        sqlite3_stmt *st = NULL;
        if ((rc = db_prep(db, err, &st, sql[i], "i", id)) == 0)
            rc = db_step(db, err, st);
        sqlite3_finalize(st);
    }
    return rc;
}

/* With db->mu held, in a transaction: board's ranking on gpu holds timing
 * to from now on (set by rejudge id). */
static int set_rank_timing_locked(struct db *db, const char *board, const char *gpu,
                                  const struct db_timing *to, int64_t id, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = db_prep(db, err, &st, "INSERT OR REPLACE INTO rank_timing(leaderboard, gpu, "
                     "protocol, version, set_at, rejudge_id) VALUES (?, ?, ?, ?, ?, ?)",
                     "ttt" "iii", board, gpu, to->protocol, (int64_t)to->version, db_now(), id);
    if (rc == 0)
        rc = db_step(db, err, st);
    sqlite3_finalize(st);
    return rc;
}

int db_rejudge_done_locked(struct db *db, int64_t id, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    char board[DB_MAX_NAME] = "", gpu[DB_MAX_NAME] = "", why[DB_MAX_REASON];
    struct db_timing to;
    int64_t rid = 0, left = 1;
    int rc = db_prep(db, err, &st, "SELECT r.id, r.leaderboard, r.gpu, (SELECT count(*) FROM "
                     "submissions j WHERE j.rejudge_id = r.id AND j.status != 'done') FROM "
                     "submissions s JOIN rejudges r ON r.id = s.rejudge_id WHERE s.id = ? AND "
                     "r.state = 'running'", "i", id);
    if (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        rid = sqlite3_column_int64(st, 0);
        db_col_text(st, 1, board, sizeof board);
        db_col_text(st, 2, gpu, sizeof gpu);
        left = sqlite3_column_int64(st, 3);
        rc = 0;
    }
    sqlite3_finalize(st);
    if (rc != 0 || rid == 0 || left > 0) /* not a rejudge's job, or not its last */
        return rc;
    if ((rc = swap_check_locked(db, rid, why, sizeof why, &to, err)) != 0)
        return rc;
    if (why[0] != '\0')
        return end_locked(db, rid, DB_RJ_FAILED, why, NULL, err);
    if ((rc = swap_locked(db, rid, err)) != 0)
        return rc;
    if (to.protocol[0] != '\0' &&
        (rc = set_rank_timing_locked(db, board, gpu, &to, rid, err)) != 0)
        return rc;
    return end_locked(db, rid, DB_RJ_SWAPPED, NULL, &to, err);
}
