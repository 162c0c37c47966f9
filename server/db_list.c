/*
 * db_list.c - submissions by filter and cursor, the owner's withdrawal,
 * the users with their counts, and the admin's statistics.
 *
 * api_sublist.c and api_stats.c call these (db_list.h). Queries only read,
 * except db_sub_withdraw, which sets withdrawn_at once (schema version 6;
 * db_rank_rows leaves withdrawn rows out). Filters are bound as text and
 * "" matches anything, so one statement serves every combination; the
 * per-user form walks the submissions_user index (user_id, id) backwards.
 */
#include "db_int.h"
#include "db_list.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Submissions by filter                                               */
/* ------------------------------------------------------------------ */

#define FIND_FILTERS                                        \
    "AND (?2 = '' OR s.leaderboard = ?2) AND (?3 = '' OR s.gpu = ?3) " \
    "AND (?4 = '' OR s.mode = ?4) AND (?5 = '' OR s.verdict = ?5) "   \
    "AND s.id < ?6 ORDER BY s.id DESC LIMIT ?7"

static const char *or_any(const char *s)
{
    return s != NULL ? s : "";
}

int db_sub_find(struct db *db, const struct db_sub_filter *f, int limit, struct db_sub **out,
                int *n, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    struct db_sub *rows = NULL;
    int count = 0, rc;
    int64_t before = f->before_id > 0 ? f->before_id : INT64_MAX;
    *out = NULL;
    *n = 0;
    if (limit < 1)
        return KJ_FAIL(err, KJ_EINVAL, "limit must be >= 1");
    if ((rows = calloc((size_t)limit, sizeof *rows)) == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory listing submissions");
    pthread_mutex_lock(&db->mu);
    rc = db_prep(db, err, &st, f->user_id != 0
                 ? "SELECT " DB_SUB_COLS "WHERE s.user_id = ?1 " FIND_FILTERS
                 : "SELECT " DB_SUB_COLS "WHERE ?1 = 0 " FIND_FILTERS,
                 "ittttii", f->user_id, or_any(f->leaderboard), or_any(f->gpu),
                 f->has_mode ? kj_mode_name(f->mode) : "",
                 f->has_verdict ? kj_verdict_name(f->verdict) : "", before, (int64_t)limit);
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

/* ------------------------------------------------------------------ */
/* Withdrawal                                                          */
/* ------------------------------------------------------------------ */

int db_sub_withdraw(struct db *db, int64_t id, int64_t now, int64_t *at, int *already,
                    struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    *at = 0;
    *already = 0;
    pthread_mutex_lock(&db->mu);
    /* Only a done row (db.h); the caller checked it, the WHERE keeps it so. */
    rc = db_prep(db, err, &st, "UPDATE submissions SET withdrawn_at = ? WHERE id = ? AND "
                 "status = 'done' AND withdrawn_at IS NULL", "ii", now, id);
    if (rc == 0 && (rc = db_step(db, err, st)) == 0)
        *already = sqlite3_changes(db->h) == 0;
    sqlite3_finalize(st);
    if (rc == 0)
        rc = db_prep(db, err, &st, "SELECT coalesce(withdrawn_at, 0) FROM submissions WHERE "
                     "id = ?", "i", id);
    if (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        *at = sqlite3_column_int64(st, 0);
        rc = 0;
    } else if (rc == 0) {
        rc = KJ_FAIL(err, KJ_ENOTFOUND, "no submission %lld", (long long)id);
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&db->mu);
    if (rc == 0 && *at == 0)
        rc = KJ_FAIL(err, KJ_ECONFLICT, "submission %lld is not done", (long long)id);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Users                                                               */
/* ------------------------------------------------------------------ */

/* One row of db_user_list's query. */
static int user_row(struct kj_err *err, sqlite3_stmt *st, void *row)
{
    struct db_user_row *u = row;
    (void)err;
    db_col_text(st, 0, u->name, sizeof u->name);
    db_col_text(st, 1, u->role, sizeof u->role);
    u->banned = sqlite3_column_int(st, 2) != 0;
    u->created_at = sqlite3_column_int64(st, 3);
    u->submissions = sqlite3_column_int64(st, 4);
    u->accepted = sqlite3_column_int64(st, 5);
    u->pending = sqlite3_column_int64(st, 6);
    u->last_submission_at = sqlite3_column_int64(st, 7);
    return 0;
}

int db_user_list(struct db *db, struct db_user_row **out, int *n, struct kj_err *err)
{
    return db_rows(db, err, out, n, "users", user_row,
                   "SELECT u.name, u.role, u.banned, u.created_at, count(s.id), "
                   "coalesce(sum(s.verdict = ?), 0), "
                   "coalesce(sum(s.status != 'done'), 0), coalesce(max(s.created_at), 0) "
                   "FROM users u LEFT JOIN submissions s ON s.user_id = u.id "
                   "GROUP BY u.id ORDER BY u.name", "t", kj_verdict_name(KJ_V_ACCEPTED));
}

/* ------------------------------------------------------------------ */
/* Statistics                                                          */
/* ------------------------------------------------------------------ */

/* With db->mu held: the totals. */
static int stats_totals(struct db *db, struct db_stats *s, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = db_prep(db, err, &st, "SELECT count(*), coalesce(sum(disqualified != 0), 0), "
                     "coalesce(sum(withdrawn_at IS NOT NULL), 0), (SELECT count(*) FROM users) "
                     "FROM submissions", "");
    if (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        s->total = sqlite3_column_int64(st, 0);
        s->disqualified = sqlite3_column_int64(st, 1);
        s->withdrawn = sqlite3_column_int64(st, 2);
        s->users = sqlite3_column_int64(st, 3);
        rc = 0;
    } else if (rc == 0) {
        rc = KJ_FAIL(err, KJ_EDB, "sqlite: count(*) gave no row");
    }
    sqlite3_finalize(st);
    return rc;
}

/* With db->mu held: submissions per board, mode and outcome. */
static int stats_groups(struct db *db, struct db_stats *s, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int cap = 0, rc = db_prep(db, err, &st, "SELECT leaderboard, mode, CASE WHEN status = 'done' "
                              "THEN verdict ELSE status END AS outcome, count(*) FROM submissions "
                              "GROUP BY leaderboard, mode, outcome ORDER BY leaderboard, mode, "
                              "outcome", "");
    while (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        if ((rc = db_grow((void **)&s->groups, &cap, s->ngroups, sizeof *s->groups, "stats",
                          err)) != 0)
            break;
        struct db_stat_group *g = &s->groups[s->ngroups++];
        db_col_text(st, 0, g->leaderboard, sizeof g->leaderboard);
        db_col_text(st, 2, g->outcome, sizeof g->outcome);
        g->count = sqlite3_column_int64(st, 3);
        rc = db_col_mode(err, st, 1, &g->mode);
    }
    sqlite3_finalize(st);
    return rc;
}

/* With db->mu held: the queues (submissions_queue index: status, gpu, id). */
static int stats_queues(struct db *db, struct db_stats *s, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int cap = 0, rc = db_prep(db, err, &st, "SELECT gpu, sum(status = 'queued'), "
                              "sum(status = 'running'), coalesce(min(CASE WHEN status = 'queued' "
                              "THEN created_at END), 0) FROM submissions WHERE status IN "
                              "('queued', 'running') GROUP BY gpu ORDER BY gpu", "");
    while (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        if ((rc = db_grow((void **)&s->queues, &cap, s->nqueues, sizeof *s->queues, "stats",
                          err)) != 0)
            break;
        struct db_stat_queue *q = &s->queues[s->nqueues++];
        db_col_text(st, 0, q->gpu, sizeof q->gpu);
        q->queued = sqlite3_column_int64(st, 1);
        q->running = sqlite3_column_int64(st, 2);
        q->oldest_queued_at = sqlite3_column_int64(st, 3);
        rc = 0;
    }
    sqlite3_finalize(st);
    return rc;
}

/* With db->mu held: every runner as last seen, busy when it holds a running job. */
static int stats_runners(struct db *db, struct db_stats *s, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int cap = 0, rc = db_prep(db, err, &st, "SELECT r.name, r.gpu, r.last_seen, EXISTS (SELECT 1 "
                              "FROM submissions s WHERE s.status = 'running' AND s.runner_id = "
                              "r.runner_id AND s.runner_name = r.name AND s.gpu = r.gpu) FROM "
                              "runners r ORDER BY r.gpu, r.name, r.runner_id", "");
    while (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        if ((rc = db_grow((void **)&s->runners, &cap, s->nrunners, sizeof *s->runners, "stats",
                          err)) != 0)
            break;
        struct db_stat_runner *r = &s->runners[s->nrunners++];
        db_col_text(st, 0, r->name, sizeof r->name);
        db_col_text(st, 1, r->gpu, sizeof r->gpu);
        r->last_seen = sqlite3_column_int64(st, 2);
        r->busy = sqlite3_column_int(st, 3) != 0;
        rc = 0;
    }
    sqlite3_finalize(st);
    return rc;
}

int db_stats(struct db *db, struct db_stats *out, struct kj_err *err)
{
    int rc;
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&db->mu);
    /* One read transaction: every count comes from the same snapshot. */
    if ((rc = db_exec(db, err, "BEGIN")) == 0) {
        if ((rc = stats_totals(db, out, err)) == 0 && (rc = stats_groups(db, out, err)) == 0 &&
            (rc = stats_queues(db, out, err)) == 0)
            rc = stats_runners(db, out, err);
        db_exec(db, NULL, rc == 0 ? "COMMIT" : "ROLLBACK");
    }
    pthread_mutex_unlock(&db->mu);
    if (rc != 0)
        db_stats_free(out);
    return rc;
}

void db_stats_free(struct db_stats *s)
{
    if (s == NULL)
        return;
    free(s->groups);
    free(s->queues);
    free(s->runners);
    memset(s, 0, sizeof *s);
}
