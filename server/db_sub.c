/*
 * db_sub.c - submissions: the row and its invariants, insert (with the
 * group commit and the per-user rate limits), get, the previous one,
 * list, count and disqualify.
 *
 * api_submissions.c inserts and reads submissions, api_detail.c reads the
 * previous one, api_admin.c disqualifies; db_job.c (the transitions after
 * the insert) and db_list.c read rows through db_sub_row(). The state
 * machine and its transition list are in db.h; assert_sub_state() checks
 * every row read back.
 */
#include "db_int.h"
#include "sub_lang.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The invariants of each state (db.h); returns 1 so it can sit in KJ_NEVER(!...). */
static int assert_sub_state(const struct db_sub *s)
{
    if (s->attempts < 0 || s->attempts >= DB_MAX_ATTEMPTS)
        return 0;
    if (s->withdrawn_at != 0 && s->status != DB_DONE)
        return 0;
    switch (s->status) {
    case DB_QUEUED:
        return s->runner_id == 0 && s->started_at == 0 && !s->has_verdict &&
               s->lease_until_ms == 0;
    case DB_RUNNING:
        return s->runner_id != 0 && s->started_at != 0 && !s->has_verdict;
    case DB_DONE:
        return s->finished_at != 0 && s->has_verdict && s->lease_until_ms == 0;
    }
    return 0;
}

void db_sub_clear(struct db_sub *s)
{
    if (s == NULL)
        return;
    free(s->source);
    free(s->result);
    s->source = NULL;
    s->result = NULL;
}

int db_sub_row(struct db *db, struct kj_err *err, sqlite3_stmt *st, int with_blobs,
                      struct db_sub *out)
{
    int rc;
    memset(out, 0, sizeof *out);
    out->id = sqlite3_column_int64(st, 0);
    out->user_id = sqlite3_column_int64(st, 1);
    db_col_text(st, 2, out->user, sizeof out->user);
    db_col_text(st, 3, out->leaderboard, sizeof out->leaderboard);
    db_col_text(st, 4, out->gpu, sizeof out->gpu);
    db_col_text(st, 6, out->file_name, sizeof out->file_name);
    db_col_text(st, 7, out->source_sha256, sizeof out->source_sha256);
    out->has_score = sqlite3_column_type(st, 10) != SQLITE_NULL;
    out->score_ns = sqlite3_column_double(st, 10);
    out->runner_id = sqlite3_column_int64(st, 11);
    db_col_text(st, 12, out->runner_name, sizeof out->runner_name);
    out->created_at = sqlite3_column_int64(st, 13);
    out->started_at = sqlite3_column_int64(st, 14);
    out->finished_at = sqlite3_column_int64(st, 15);
    out->attempts = sqlite3_column_int(st, 16);
    out->lease_until_ms = sqlite3_column_int64(st, 17);
    db_col_text(st, 18, out->reason, sizeof out->reason);
    out->disqualified = sqlite3_column_int(st, 21) != 0;
    db_col_text(st, 22, out->dq_reason, sizeof out->dq_reason);
    out->withdrawn_at = sqlite3_column_int64(st, 23);
    db_col_text(st, 24, out->sanitizer, sizeof out->sanitizer);
    out->profile_shape = sqlite3_column_int(st, 25);
    out->rejudge_of = sqlite3_column_int64(st, 27);
    if ((rc = db_col_lang(err, st, 26, &out->lang)) != 0 ||
        (rc = db_col_mode(err, st, 5, &out->mode)) != 0 ||
        (rc = db_col_status(err, st, 8, &out->status)) != 0 ||
        (rc = db_col_verdict(err, st, 9, &out->has_verdict, &out->verdict)) != 0)
        return rc;
    if (KJ_NEVER(!assert_sub_state(out)))
        return KJ_FAIL(err, KJ_EINTERNAL, "submission %lld breaks the invariants of state %s",
                       (long long)out->id, db_status_name(out->status));
    if (!with_blobs)
        return 0;
    if ((rc = db_col_dup(db, err, st, 19, &out->source, &out->source_len)) != 0 ||
        (rc = db_col_dup(db, err, st, 20, &out->result, NULL)) != 0) {
        db_sub_clear(out);
        return rc;
    }
    return 0;
}

/* db_sub_insert with db->mu held. */
static int db_sub_insert_locked(struct db *db, struct db_sub *s, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    s->created_at = db_now();
    rc = db_prep(db, err, &st,
                 "INSERT INTO submissions(user_id, leaderboard, gpu, mode, file_name, source, "
                 "source_sha256, status, created_at, sanitizer, profile_shape, lang) VALUES "
                 "(?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?, ?, ?)",
                 "ittttbtitit", s->user_id, s->leaderboard, s->gpu, kj_mode_name(s->mode),
                 s->file_name, (const void *)s->source, s->source_len, s->source_sha256,
                 s->created_at, s->sanitizer, (int64_t)s->profile_shape, sub_lang_name(s->lang));
    /* Durable (synchronous=FULL) when the step returns in autocommit (db_sub_insert),
     * or when the caller's transaction commits (db_pending_commit). */
    if (rc == 0 && (rc = db_step(db, err, st)) == 0) {
        s->id = sqlite3_last_insert_rowid(db->h);
        s->status = DB_QUEUED;
    }
    sqlite3_finalize(st);
    return rc;
}

int db_sub_insert(struct db *db, struct db_sub *s, struct kj_err *err)
{
    int rc;
    pthread_mutex_lock(&db->mu);
    rc = db_sub_insert_locked(db, s, err);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

/* With db->mu held: how many submissions of mode user_id made after since,
 * and the time of the oldest of them (a rejudge's jobs, db_rejudge.h, are
 * the admin's but not the admin's own submissions: not counted). */
static int db_rate_count(struct db *db, int64_t user_id, enum kj_mode mode, int64_t since,
                         int64_t *count, int64_t *oldest, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = db_prep(db, err, &st, "SELECT count(*), coalesce(min(created_at), 0) FROM "
                     "submissions WHERE user_id = ? AND mode = ? AND created_at > ? AND "
                     "rejudge_id IS NULL", "iti",
                     user_id, kj_mode_name(mode), since);
    if (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        *count = sqlite3_column_int64(st, 0);
        *oldest = sqlite3_column_int64(st, 1);
        rc = 0;
    } else if (rc == 0) {
        rc = KJ_FAIL(err, KJ_EDB, "sqlite: count(*) gave no row");
    }
    sqlite3_finalize(st);
    return rc;
}

/* One submission waiting to be stored by a group commit. Lives on the
 * stack of the thread that waits for it; the leader that takes it writes
 * rc, retry_after and s->id, then sets done under q_mu before it lets go of mu. */
struct db_pending {
    struct db_sub *s;
    int limit, window_s;
    int retry_after;
    int rc;
    struct kj_err err;
    int done;
    struct db_pending *next;
};

/* With db->mu held, inside a transaction: the rate check and insert of one pending row. */
static int db_pending_run(struct db *db, struct db_pending *p, int64_t now)
{
    int64_t count = 0, oldest = 0;
    int rc = 0;
    if (p->limit > 0)
        rc = db_rate_count(db, p->s->user_id, p->s->mode, now - p->window_s, &count, &oldest,
                           &p->err);
    if (rc == 0 && p->limit > 0 && count >= p->limit) {
        int64_t wait = oldest + p->window_s - now + 1;
        p->retry_after = wait < 1 ? 1 : (int)wait;
        return KJ_FAIL(&p->err, KJ_ELIMIT, "%d %s submissions per %d s", p->limit,
                       kj_mode_name(p->s->mode), p->window_s);
    }
    return rc != 0 ? rc : db_sub_insert_locked(db, p->s, &p->err);
}

/* With db->mu held: store every row of batch in one transaction (one
 * fsync for all). A row over its rate limit is skipped; a database error
 * rolls the whole batch back and fails every row with it. */
static void db_pending_commit(struct db *db, struct db_pending *batch)
{
    struct kj_err err;
    int64_t now = db_now();
    int rc = db_exec(db, &err, "BEGIN IMMEDIATE");
    for (struct db_pending *p = batch; rc == 0 && p != NULL; p = p->next)
        if ((p->rc = db_pending_run(db, p, now)) != 0 && p->rc != KJ_ELIMIT) {
            err = p->err;
            rc = p->rc;
        }
    if (rc == 0)
        rc = db_exec(db, &err, "COMMIT");
    if (rc != 0) {
        db_exec(db, NULL, "ROLLBACK");
        for (struct db_pending *p = batch; p != NULL; p = p->next) {
            p->rc = rc;
            p->err = err;
            p->s->id = 0;
        }
    }
    pthread_mutex_lock(&db->q_mu);
    for (struct db_pending *p = batch; p != NULL; p = p->next)
        p->done = 1;
    pthread_mutex_unlock(&db->q_mu);
}

/* Group commit: every caller queues its row, then waits for db->mu. The
 * first to get it takes all queued rows and commits them together; the
 * others find theirs done when they get the mutex. So while one commit
 * waits for the disk, the rows that arrive meanwhile share the next one,
 * and each row is durable before its caller returns. */
int db_sub_insert_limited(struct db *db, struct db_sub *s, int limit, int window_s,
                          int *retry_after, struct kj_err *err)
{
    struct db_pending me, *batch, **tail;
    memset(&me, 0, sizeof me);
    me.s = s;
    me.limit = limit;
    me.window_s = window_s;
    pthread_mutex_lock(&db->q_mu);
    for (tail = &db->pending; *tail != NULL; tail = &(*tail)->next)
        ;
    *tail = &me;
    pthread_mutex_unlock(&db->q_mu);

    pthread_mutex_lock(&db->mu);
    pthread_mutex_lock(&db->q_mu);
    batch = me.done ? NULL : db->pending;
    if (batch != NULL)
        db->pending = NULL;
    pthread_mutex_unlock(&db->q_mu);
    if (batch != NULL)
        db_pending_commit(db, batch);
    pthread_mutex_unlock(&db->mu);
    /* Not KJ_NEVER: a row still pending would leave this stack frame in
     * db->pending, and the next commit would write through it. */
    KJ_ASSERT(me.done);
    *retry_after = me.retry_after;
    if (me.rc != 0 && err != NULL)
        *err = me.err;
    return me.rc;
}

int db_sub_disqualify(struct db *db, int64_t id, const char *reason, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    pthread_mutex_lock(&db->mu);
    rc = db_prep(db, err, &st, "UPDATE submissions SET disqualified = 1, dq_reason = ? "
                 "WHERE id = ?", "ti", reason, id);
    if (rc == 0 && (rc = db_step(db, err, st)) == 0 && sqlite3_changes(db->h) == 0)
        rc = KJ_FAIL(err, KJ_ENOTFOUND, "no submission %lld", (long long)id);
    sqlite3_finalize(st);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

int db_sub_get_locked(struct db *db, int64_t id, int with_blobs, struct db_sub *out,
                             struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    memset(out, 0, sizeof *out);
    int rc = db_prep(db, err, &st, "SELECT " DB_SUB_COLS "WHERE s.id = ?", "i", id);
    if (rc == 0 && (rc = db_step(db, err, st)) == 1)
        rc = db_sub_row(db, err, st, with_blobs, out);
    else if (rc == 0)
        rc = KJ_FAIL(err, KJ_ENOTFOUND, "no submission %lld", (long long)id);
    sqlite3_finalize(st);
    return rc;
}

int db_sub_get(struct db *db, int64_t id, int with_blobs, struct db_sub *out, struct kj_err *err)
{
    int rc;
    pthread_mutex_lock(&db->mu);
    rc = db_sub_get_locked(db, id, with_blobs, out, err);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

int db_sub_prev(struct db *db, const struct db_sub *s, struct db_sub *out, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&db->mu);
    rc = db_prep(db, err, &st, "SELECT " DB_SUB_COLS "WHERE s.user_id = ? AND s.leaderboard = ? "
                 "AND s.id < ? ORDER BY s.id DESC LIMIT 1", "iti", s->user_id, s->leaderboard,
                 s->id);
    if (rc == 0 && (rc = db_step(db, err, st)) == 1)
        rc = db_sub_row(db, err, st, 1, out);
    else if (rc == 0)
        rc = KJ_FAIL(err, KJ_ENOTFOUND, "no earlier submission");
    sqlite3_finalize(st);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

int db_sub_list(struct db *db, int64_t user_id, int limit, struct db_sub **out, int *n,
                struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    struct db_sub *rows = NULL;
    int count = 0, rc;
    *out = NULL;
    *n = 0;
    if (limit < 1)
        return KJ_FAIL(err, KJ_EINVAL, "limit must be >= 1");
    if ((rows = calloc((size_t)limit, sizeof *rows)) == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory listing submissions");
    pthread_mutex_lock(&db->mu);
    rc = db_prep(db, err, &st, "SELECT " DB_SUB_COLS "WHERE s.user_id = ? ORDER BY s.id DESC LIMIT ?",
                 "ii", user_id, (int64_t)limit);
    while (rc == 0 && count < limit && (rc = db_step(db, err, st)) == 1)
        rc = db_sub_row(db, err, st, 0, &rows[count++]);
    sqlite3_finalize(st);
    pthread_mutex_unlock(&db->mu);
    if (rc < 0) {
        db_sub_list_free(rows, count);
        return rc;
    }
    *out = rows;
    *n = count;
    return 0;
}

void db_sub_list_free(struct db_sub *rows, int n)
{
    if (rows == NULL)
        return;
    for (int i = 0; i < n; i++)
        db_sub_clear(&rows[i]);
    free(rows);
}

int db_sub_count(struct db *db, enum db_status status, int64_t *n, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    pthread_mutex_lock(&db->mu);
    rc = db_prep(db, err, &st, "SELECT count(*) FROM submissions WHERE status = ?", "t",
                 db_status_name(status));
    if (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        *n = sqlite3_column_int64(st, 0);
        rc = 0;
    } else if (rc == 0) {
        rc = KJ_FAIL(err, KJ_EDB, "sqlite: count(*) gave no row");
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&db->mu);
    return rc;
}
