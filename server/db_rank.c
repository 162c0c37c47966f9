/*
 * db_rank.c - the ranking query: the best accepted leaderboard-mode
 * submission of each user on a (board, GPU type), in ranking order.
 *
 * boards.c reads the rows when it builds a rankings body; rank.c numbers
 * them.
 */
#include "db_int.h"

#include <stdlib.h>
#include <string.h>

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
