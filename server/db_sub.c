/*
 * db_sub.c - submissions, their progress events and the ranking query.
 *
 * api_submissions.c inserts and reads submissions; api_runner.c claims
 * jobs, appends events and stores results; api_leaderboards.c reads the
 * ranking rows. The state machine and its transition list are in db.h;
 * db_sub_claim() and db_job_*() here and db_lease_sweep() (db_lease.c) are
 * its transitions after the insert, each one SQL transaction, and
 * assert_sub_state() checks every row read back.
 */
#include "db_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The invariants of each state (db.h); returns 1 so it can sit in KJ_ASSERT. */
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
    if ((rc = db_col_mode(err, st, 5, &out->mode)) != 0 ||
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
                 "source_sha256, status, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'queued', ?)",
                 "ittttbti", s->user_id, s->leaderboard, s->gpu, kj_mode_name(s->mode), s->file_name,
                 (const void *)s->source, s->source_len, s->source_sha256, s->created_at);
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
 * and the time of the oldest of them. */
static int db_rate_count(struct db *db, int64_t user_id, enum kj_mode mode, int64_t since,
                         int64_t *count, int64_t *oldest, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = db_prep(db, err, &st, "SELECT count(*), coalesce(min(created_at), 0) FROM "
                     "submissions WHERE user_id = ? AND mode = ? AND created_at > ?", "iti",
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

/* db_sub_get without the lock, for use inside transactions. */
static int db_sub_get_locked(struct db *db, int64_t id, int with_blobs, struct db_sub *out,
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

/* Inside a transaction: the oldest queued id for gpu, or 0. */
static int db_oldest_queued(struct db *db, const char *gpu, int64_t *id, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = db_prep(db, err, &st, "SELECT id FROM submissions WHERE status = 'queued' AND gpu = ? "
                     "ORDER BY id LIMIT 1", "t", gpu);
    *id = 0;
    if (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        *id = sqlite3_column_int64(st, 0);
        rc = 0;
    }
    sqlite3_finalize(st);
    return rc;
}

/* Inside a transaction: the secret seed of board. */
static int db_secret_locked(struct db *db, const char *board, char *out, size_t outsz,
                            struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = db_prep(db, err, &st, "SELECT secret_seed FROM leaderboard_secrets WHERE "
                     "leaderboard = ?", "t", board);
    if (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        db_col_text(st, 0, out, outsz);
        rc = 0;
    } else if (rc == 0) {
        rc = KJ_FAIL(err, KJ_EINTERNAL, "no secret seed for leaderboard %s", board);
    }
    sqlite3_finalize(st);
    return rc;
}

int db_sub_claim(struct db *db, const char *gpu, int64_t runner_id, const char *runner_name,
                 struct db_sub *out, char *secret, size_t secretsz, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int64_t id = 0;
    int rc;
    secret[0] = '\0';
    memset(out, 0, sizeof *out); /* db_sub_clear(out) is safe whatever happens */
    pthread_mutex_lock(&db->mu);
    /* IMMEDIATE takes the write lock first, so another process cannot claim the same row. */
    if ((rc = db_exec(db, err, "BEGIN IMMEDIATE")) != 0)
        goto out;
    if ((rc = db_oldest_queued(db, gpu, &id, err)) != 0)
        goto fail;
    if (id == 0) {
        rc = KJ_FAIL(err, KJ_ENOTFOUND, "no queued job for gpu %s", gpu);
        goto fail;
    }
    rc = db_prep(db, err, &st, "UPDATE submissions SET status = 'running', runner_id = ?, "
                 "runner_name = ?, started_at = ?, lease_until = ? WHERE id = ? AND "
                 "status = 'queued'", "itiii", runner_id, runner_name, db_now(),
                 db_now_ms() + db->lease_ms, id);
    if (rc == 0)
        rc = db_step(db, err, st);
    sqlite3_finalize(st);
    if (rc == 0 && sqlite3_changes(db->h) != 1)
        rc = KJ_FAIL(err, KJ_EINTERNAL, "claim of submission %lld changed no row", (long long)id);
    if (rc != 0 || (rc = db_sub_get_locked(db, id, 1, out, err)) != 0)
        goto fail;
    if (out->mode == KJ_MODE_LEADERBOARD &&
        (rc = db_secret_locked(db, out->leaderboard, secret, secretsz, err)) != 0) {
        db_sub_clear(out);
        goto fail;
    }
    if ((rc = db_exec(db, err, "COMMIT")) != 0) {
        db_sub_clear(out);
        goto fail;
    }
    goto out;
fail:
    db_exec(db, NULL, "ROLLBACK");
out:
    pthread_mutex_unlock(&db->mu);
    return rc;
}

/* Inside a transaction: check that ref's runner holds ref's job under a
 * live lease, and copy the row into s. *done is set when the job is
 * already done by this runner (rc 0). */
static int db_holds(struct db *db, const struct db_job_ref *ref, struct db_sub *s, int *done,
                    struct kj_err *err)
{
    int rc = db_sub_get_locked(db, ref->id, 0, s, err);
    *done = 0;
    if (rc != 0)
        return rc;
    if (ref->attempt != 0 && ref->attempt != s->attempts + 1)
        return KJ_FAIL(err, KJ_ECONFLICT, "job %lld is on attempt %d, not %d", (long long)ref->id,
                       s->attempts + 1, ref->attempt);
    if (s->runner_id != ref->runner_id)
        return KJ_FAIL(err, KJ_ECONFLICT, "job %lld is not held by this runner", (long long)ref->id);
    if (s->status == DB_DONE) {
        *done = 1;
        return 0;
    }
    if (s->lease_until_ms <= db_now_ms())
        return KJ_FAIL(err, KJ_ECONFLICT, "the lease on job %lld expired; it goes back to the queue",
                       (long long)ref->id);
    return 0;
}

/* Inside a transaction: move the lease of running job s on by a full
 * lease and note that its runner was seen. */
static int db_extend_locked(struct db *db, const struct db_sub *s, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = db_prep(db, err, &st, "UPDATE submissions SET lease_until = ? WHERE id = ? AND "
                     "status = 'running'", "ii", db_now_ms() + db->lease_ms, s->id);
    if (rc == 0)
        rc = db_step(db, err, st);
    sqlite3_finalize(st);
    if (rc != 0)
        return rc;
    rc = db_prep(db, err, &st, "UPDATE runners SET last_seen = ? WHERE runner_id = ? AND name = ? "
                 "AND gpu = ?", "iitt", db_now(), s->runner_id, s->runner_name, s->gpu);
    if (rc == 0)
        rc = db_step(db, err, st);
    sqlite3_finalize(st);
    return rc;
}

/* Inside a transaction: running job id -> done with the runner's result. */
static int db_finish_locked(struct db *db, int64_t id, enum kj_verdict verdict, int has_score,
                            double score_ns, const char *result, const char *reason,
                            struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (has_score)
        rc = db_prep(db, err, &st, "UPDATE submissions SET status = 'done', verdict = ?, "
                     "score_ns = ?, result = ?, finished_at = ?, lease_until = NULL, reason = ? "
                     "WHERE id = ? AND status = 'running'", "tdtiti", kj_verdict_name(verdict),
                     score_ns, result,
                     db_now(), reason, id);
    else
        rc = db_prep(db, err, &st, "UPDATE submissions SET status = 'done', verdict = ?, "
                     "score_ns = NULL, result = ?, finished_at = ?, lease_until = NULL, "
                     "reason = ? WHERE id = ? AND status = 'running'", "ttiti",
                     kj_verdict_name(verdict), result,
                     db_now(), reason, id);
    if (rc == 0)
        rc = db_step(db, err, st);
    sqlite3_finalize(st);
    if (rc == 0 && sqlite3_changes(db->h) != 1)
        rc = KJ_FAIL(err, KJ_EINTERNAL, "finishing submission %lld changed no row", (long long)id);
    return rc;
}

int db_job_finish(struct db *db, const struct db_job_ref *ref, enum kj_verdict verdict, int has_score,
                  double score_ns, const char *result, enum db_finish *outcome,
                  struct kj_err *err)
{
    struct db_sub s;
    char reason[DB_MAX_REASON];
    int done = 0, tries = 0, rc;
    *outcome = DB_FINISH_DONE;
    pthread_mutex_lock(&db->mu);
    if ((rc = db_exec(db, err, "BEGIN IMMEDIATE")) != 0)
        goto out;
    if ((rc = db_holds(db, ref, &s, &done, err)) != 0)
        goto fail;
    if (done) {
        *outcome = DB_FINISH_DUPLICATE;
        goto fail; /* nothing to change */
    }
    if (verdict != KJ_V_INTERNAL) {
        rc = db_finish_locked(db, ref->id, verdict, has_score, score_ns, result, NULL, err);
    } else if (s.attempts + 1 < DB_MAX_ATTEMPTS) {
        snprintf(reason, sizeof reason, "the judge failed (attempt %d of %d)", s.attempts + 1,
                 DB_MAX_ATTEMPTS);
        rc = db_requeue_locked(db, ref->id, reason, reason, &tries, err);
        *outcome = DB_FINISH_REQUEUED;
        KJ_ASSERT(rc != 0 || tries < DB_MAX_ATTEMPTS);
    } else {
        snprintf(reason, sizeof reason, "the judge failed %d times", DB_MAX_ATTEMPTS);
        rc = db_finish_locked(db, ref->id, verdict, has_score, score_ns, result, reason, err);
    }
    if (rc != 0)
        goto fail;
    rc = db_exec(db, err, "COMMIT");
    goto out;
fail:
    db_exec(db, NULL, "ROLLBACK");
out:
    pthread_mutex_unlock(&db->mu);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Events and heartbeats                                               */
/* ------------------------------------------------------------------ */

/* Bytes an event counts against its job's cap: its name and its data. */
static int64_t event_bytes(enum kj_event event, const char *data)
{
    return (int64_t)strlen(kj_event_name(event)) + (data != NULL ? (int64_t)strlen(data) : 0);
}

int db_event_insert_locked(struct db *db, int64_t id, enum kj_event event, const char *data,
                           struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = db_prep(db, err, &st, "INSERT INTO events(submission_id, seq, event, data, at) VALUES "
                     "(?, (SELECT coalesce(max(seq), 0) + 1 FROM events WHERE submission_id = ?), "
                     "?, ?, ?)", "iitti", id, id, kj_event_name(event), data, db_now());
    if (rc == 0)
        rc = db_step(db, err, st);
    sqlite3_finalize(st);
    if (rc != 0)
        return rc;
    rc = db_prep(db, err, &st, "UPDATE submissions SET event_count = event_count + 1, "
                 "event_bytes = event_bytes + ? WHERE id = ?", "ii", event_bytes(event, data), id);
    if (rc == 0)
        rc = db_step(db, err, st);
    sqlite3_finalize(st);
    return rc;
}

/* Inside a transaction: KJ_ELIMIT when one more event (event, data) would
 * take job id past DB_MAX_JOB_EVENTS or DB_MAX_JOB_EVENT_BYTES. */
static int db_event_room_locked(struct db *db, int64_t id, enum kj_event event,
                                const char *data, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int64_t count = 0, bytes = 0, add = event_bytes(event, data);
    int rc = db_prep(db, err, &st, "SELECT event_count, event_bytes FROM submissions WHERE id = ?",
                     "i", id);
    if (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        count = sqlite3_column_int64(st, 0);
        bytes = sqlite3_column_int64(st, 1);
        rc = 0;
    }
    sqlite3_finalize(st);
    if (rc != 0)
        return rc;
    if (count >= DB_MAX_JOB_EVENTS || bytes + add > DB_MAX_JOB_EVENT_BYTES)
        return KJ_FAIL(err, KJ_ELIMIT, "job %lld holds %lld events of %lld bytes; at most %d "
                       "events and %d bytes are stored per job", (long long)id, (long long)count,
                       (long long)bytes, DB_MAX_JOB_EVENTS, DB_MAX_JOB_EVENT_BYTES);
    return 0;
}

/* Event (event != NULL) or heartbeat (event == NULL) of a running job. */
static int db_job_touch(struct db *db, const struct db_job_ref *ref, const enum kj_event *event,
                        const char *data, struct kj_err *err)
{
    struct db_sub s;
    int done = 0, rc;
    pthread_mutex_lock(&db->mu);
    if ((rc = db_exec(db, err, "BEGIN IMMEDIATE")) != 0)
        goto out;
    if ((rc = db_holds(db, ref, &s, &done, err)) != 0)
        goto fail;
    if (done) {
        rc = KJ_FAIL(err, KJ_ECONFLICT, "job %lld is already done", (long long)ref->id);
        goto fail;
    }
    if (event != NULL && (rc = db_event_room_locked(db, ref->id, *event, data, err)) != 0)
        goto fail;
    if ((rc = db_extend_locked(db, &s, err)) != 0 ||
        (event != NULL && (rc = db_event_insert_locked(db, ref->id, *event, data, err)) != 0))
        goto fail;
    rc = db_exec(db, err, "COMMIT");
    goto out;
fail:
    db_exec(db, NULL, "ROLLBACK");
out:
    pthread_mutex_unlock(&db->mu);
    return rc;
}

int db_job_event(struct db *db, const struct db_job_ref *ref, enum kj_event event,
                 const char *data, struct kj_err *err)
{
    return db_job_touch(db, ref, &event, data, err);
}

int db_job_heartbeat(struct db *db, const struct db_job_ref *ref, struct kj_err *err)
{
    return db_job_touch(db, ref, NULL, NULL, err);
}

int db_events_list(struct db *db, int64_t id, struct db_event **out, int *n, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    struct db_event *ev = NULL;
    int count = 0, cap = 0, rc;
    *out = NULL;
    *n = 0;
    pthread_mutex_lock(&db->mu);
    rc = db_prep(db, err, &st, "SELECT seq, event, data, at FROM events WHERE submission_id = ? "
                 "ORDER BY seq", "i", id);
    while (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        if ((rc = db_grow((void **)&ev, &cap, count, sizeof *ev, "events", err)) != 0)
            break;
        struct db_event *e = &ev[count++];
        e->seq = sqlite3_column_int64(st, 0);
        e->at = sqlite3_column_int64(st, 3);
        e->data = NULL;
        if ((rc = db_col_event(err, st, 1, &e->event)) != 0)
            break;
        rc = db_col_dup(db, err, st, 2, &e->data, NULL);
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&db->mu);
    if (rc < 0) {
        db_events_free(ev, count);
        return rc;
    }
    *out = ev;
    *n = count;
    return 0;
}

int db_events_after(struct db *db, int64_t id, int64_t after_seq, int max_events,
                    size_t max_bytes, struct db_event **out, int *n, int *more,
                    struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    struct db_event *ev = NULL;
    size_t bytes = 0;
    int count = 0, cap = 0, rc;
    KJ_ASSERT(max_events > 0);
    *out = NULL;
    *n = 0;
    *more = 0;
    pthread_mutex_lock(&db->mu);
    rc = db_prep(db, err, &st, "SELECT seq, event, data, at FROM events WHERE submission_id = ? "
                 "AND seq > ? ORDER BY seq LIMIT ?", "iii", id, after_seq, (int64_t)max_events + 1);
    while (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        size_t len = (size_t)sqlite3_column_bytes(st, 2);
        if (count == max_events || (count > 0 && bytes + len > max_bytes)) {
            *more = 1;
            rc = 0;
            break;
        }
        if ((rc = db_grow((void **)&ev, &cap, count, sizeof *ev, "events", err)) != 0)
            break;
        struct db_event *e = &ev[count++];
        e->seq = sqlite3_column_int64(st, 0);
        e->at = sqlite3_column_int64(st, 3);
        e->data = NULL;
        if ((rc = db_col_event(err, st, 1, &e->event)) != 0)
            break;
        bytes += len;
        rc = db_col_dup(db, err, st, 2, &e->data, NULL);
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&db->mu);
    if (rc < 0) {
        db_events_free(ev, count);
        return rc;
    }
    *out = ev;
    *n = count;
    return 0;
}

int db_event_last(struct db *db, int64_t id, int64_t *seq, enum kj_event *event,
                  struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    *seq = 0;
    pthread_mutex_lock(&db->mu);
    rc = db_prep(db, err, &st, "SELECT seq, event FROM events WHERE submission_id = ? "
                 "ORDER BY seq DESC LIMIT 1", "i", id);
    if (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        *seq = sqlite3_column_int64(st, 0);
        rc = db_col_event(err, st, 1, event);
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

void db_events_free(struct db_event *ev, int n)
{
    if (ev == NULL)
        return;
    for (int i = 0; i < n; i++)
        free(ev[i].data);
    free(ev);
}

/* ------------------------------------------------------------------ */
/* Rankings                                                            */
/* ------------------------------------------------------------------ */

int db_rank_rows(struct db *db, const char *board, const char *gpu, struct db_rank_row **out,
                 int *n, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    struct db_rank_row *rows = NULL;
    int count = 0, cap = 0, rc;
    *out = NULL;
    *n = 0;
    pthread_mutex_lock(&db->mu);
    /* Per user, the lowest score; ties go to the earlier submission. */
    rc = db_prep(db, err, &st,
                 "SELECT id, name, score_ns, created_at, result FROM ("
                 " SELECT s.id, u.name, s.score_ns, s.created_at, s.result, row_number() OVER ("
                 "  PARTITION BY s.user_id ORDER BY s.score_ns, s.created_at, s.id) AS k"
                 " FROM submissions s JOIN users u ON u.id = s.user_id"
                 " WHERE s.leaderboard = ? AND s.gpu = ? AND s.mode = 'leaderboard'"
                 "  AND s.status = 'done' AND s.verdict = 'accepted' AND s.score_ns IS NOT NULL"
                 "  AND s.score_ns > 0 AND s.disqualified = 0 AND s.withdrawn_at IS NULL)"
                 " WHERE k = 1 ORDER BY score_ns, created_at, id", "tt", board, gpu);
    while (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        if ((rc = db_grow((void **)&rows, &cap, count, sizeof *rows, "rankings", err)) != 0)
            break;
        struct db_rank_row *r = &rows[count++];
        r->submission_id = sqlite3_column_int64(st, 0);
        db_col_text(st, 1, r->user, sizeof r->user);
        r->score_ns = sqlite3_column_double(st, 2);
        r->created_at = sqlite3_column_int64(st, 3);
        rc = db_col_dup(db, err, st, 4, &r->result, NULL);
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&db->mu);
    if (rc < 0) {
        db_rank_rows_free(rows, count);
        return rc;
    }
    *out = rows;
    *n = count;
    return 0;
}

void db_rank_rows_free(struct db_rank_row *rows, int n)
{
    if (rows == NULL)
        return;
    for (int i = 0; i < n; i++)
        free(rows[i].result);
    free(rows);
}
