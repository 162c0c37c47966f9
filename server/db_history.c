/*
 * db_history.c - the improvements behind a board's ranking (db_history.h),
 * and the earlier results of one submission, for api_history.c.
 *
 * One query over the board's ranked submissions (the submissions_rank
 * index, at the ranking's timing: db_rejudge.h): a window per user gives
 * the best score among that user's earlier submissions, and a row is kept
 * when it beats it. A submission's earlier results are the rows a
 * rejudge's swap wrote into result_history (db_rejudge.c).
 */
#include "db_int.h"
#include "db_history.h"

#include <stdlib.h>
#include <string.h>

int db_history_rows(struct db *db, const char *board, const char *gpu,
                    struct db_history_row **out, int *n, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    struct db_history_row *rows = NULL;
    int count = 0, cap = 0, rc;
    *out = NULL;
    *n = 0;
    pthread_mutex_lock(&db->mu);
    rc = db_prep(db, err, &st,
                 "SELECT id, name, score_ns, created_at FROM ("
                 " SELECT s.id, u.name, s.score_ns, s.created_at, min(s.score_ns) OVER ("
                 "  PARTITION BY s.user_id ORDER BY s.created_at, s.id"
                 "  ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before"
                 " FROM submissions s JOIN users u ON u.id = s.user_id"
                 " JOIN rank_timing rt ON rt.leaderboard = s.leaderboard AND rt.gpu = s.gpu"
                 "  AND rt.protocol = s.timing_protocol AND rt.version = s.timing_version"
                 " WHERE s.leaderboard = ? AND s.gpu = ? AND s.mode = 'leaderboard'"
                 "  AND s.status = 'done' AND s.verdict = 'accepted' AND s.score_ns IS NOT NULL"
                 "  AND s.score_ns > 0 AND s.disqualified = 0 AND s.withdrawn_at IS NULL"
                 "  AND s.rejudge_of IS NULL)"
                 " WHERE before IS NULL OR score_ns < before ORDER BY created_at, id",
                 "tt", board, gpu);
    while (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        if ((rc = db_grow((void **)&rows, &cap, count, sizeof *rows, "history", err)) != 0)
            break;
        struct db_history_row *r = &rows[count++];
        r->submission_id = sqlite3_column_int64(st, 0);
        db_col_text(st, 1, r->user, sizeof r->user);
        r->score_ns = sqlite3_column_double(st, 2);
        r->created_at = sqlite3_column_int64(st, 3);
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&db->mu);
    if (rc < 0) {
        free(rows);
        return rc;
    }
    *out = rows;
    *n = count;
    return 0;
}

int db_sub_history(struct db *db, int64_t id, struct db_result_old **out, int *n,
                   struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    struct db_result_old *rows = NULL;
    int count = 0, cap = 0, rc;
    *out = NULL;
    *n = 0;
    pthread_mutex_lock(&db->mu);
    rc = db_prep(db, err, &st, "SELECT seq, verdict, score_ns, coalesce(timing_protocol, ''), "
                 "coalesce(timing_version, 0), coalesce(finished_at, 0), replaced_at, "
                 "coalesce(rejudge_id, 0), result FROM result_history WHERE submission_id = ? "
                 "ORDER BY seq", "i", id);
    while (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        int has;
        if ((rc = db_grow((void **)&rows, &cap, count, sizeof *rows, "result history", err)) != 0)
            break;
        struct db_result_old *h = &rows[count++];
        memset(h, 0, sizeof *h);
        h->seq = sqlite3_column_int(st, 0);
        h->has_score = sqlite3_column_type(st, 2) != SQLITE_NULL;
        h->score_ns = sqlite3_column_double(st, 2);
        db_col_text(st, 3, h->timing_protocol, sizeof h->timing_protocol);
        h->timing_version = sqlite3_column_int(st, 4);
        h->finished_at = sqlite3_column_int64(st, 5);
        h->replaced_at = sqlite3_column_int64(st, 6);
        h->rejudge_id = sqlite3_column_int64(st, 7);
        if ((rc = db_col_verdict(err, st, 1, &has, &h->verdict)) != 0 ||
            (rc = db_col_dup(db, err, st, 8, &h->result, NULL)) != 0)
            break;
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&db->mu);
    if (rc < 0) {
        db_result_old_free(rows, count);
        return rc;
    }
    *out = rows;
    *n = count;
    return 0;
}

void db_result_old_free(struct db_result_old *rows, int n)
{
    if (rows == NULL)
        return;
    for (int i = 0; i < n; i++)
        free(rows[i].result);
    free(rows);
}
