/*
 * db_metrics.c - the database reads behind GET /metrics (metrics.c).
 *
 * Counts of submissions by leaderboard, GPU type, mode and verdict (read
 * from the covering index submissions_rank, so a scrape never touches the
 * rows and their sources), the age of the oldest queued job of a GPU type,
 * and the start and end of one finished job. Each takes the connection's
 * mutex for one short statement.
 */
#include "db_int.h"

#include <stdlib.h>
#include <string.h>

/* One row of db_metrics_counts' query. */
static int count_row(struct kj_err *err, sqlite3_stmt *st, void *row)
{
    struct db_count *c = row;
    int rc;
    db_col_text(st, 0, c->leaderboard, sizeof c->leaderboard);
    db_col_text(st, 1, c->gpu, sizeof c->gpu);
    c->n = sqlite3_column_int64(st, 4);
    if ((rc = db_col_mode(err, st, 2, &c->mode)) != 0)
        return rc;
    return db_col_verdict(err, st, 3, &c->has_verdict, &c->verdict);
}

int db_metrics_counts(struct db *db, struct db_count **out, int *n, struct kj_err *err)
{
    return db_rows(db, err, out, n, "submission counts", count_row,
                   "SELECT leaderboard, gpu, mode, verdict, COUNT(*) FROM submissions "
                   "INDEXED BY submissions_rank GROUP BY leaderboard, gpu, mode, verdict", "");
}

int db_metrics_oldest(struct db *db, const char *gpu, int64_t *created_at, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    *created_at = 0;
    pthread_mutex_lock(&db->mu);
    /* The lowest queued id comes from the queue index; one row lookup for its time. */
    rc = db_prep(db, err, &st, "SELECT created_at FROM submissions WHERE id = (SELECT MIN(id) "
                 "FROM submissions WHERE status = 'queued' AND gpu = ?)", "t", gpu);
    if (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        *created_at = sqlite3_column_int64(st, 0);
        rc = 0;
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&db->mu);
    return rc < 0 ? rc : 0;
}

int db_job_span(struct db *db, int64_t id, struct db_span *out, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&db->mu);
    rc = db_prep(db, err, &st, "SELECT gpu, mode, started_at, finished_at FROM submissions "
                 "WHERE id = ? AND status = 'done'", "i", id);
    if (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        db_col_text(st, 0, out->gpu, sizeof out->gpu);
        out->started_at = sqlite3_column_int64(st, 2);
        out->finished_at = sqlite3_column_int64(st, 3);
        rc = db_col_mode(err, st, 1, &out->mode);
    } else if (rc == 0) {
        rc = KJ_FAIL(err, KJ_ENOTFOUND, "no finished job %lld", (long long)id);
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&db->mu);
    return rc;
}
