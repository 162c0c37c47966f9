/*
 * db_rank.c - what the rankings read: the best accepted leaderboard-mode
 * submission of each user on a (board, GPU type), in ranking order, with
 * the medians of its timed shapes as numbers.
 *
 * db_job.c stores a finished job's medians (db_rank_store_locked) in the
 * transaction that stores its result; boards.c reads the rows when it
 * builds a rankings body; rank.c numbers them. Only results measured with
 * the ranking's timing count (table rank_timing, db_rejudge.h), never a
 * rejudge's own jobs (rejudge_of). Nothing here parses a
 * stored result: the medians were taken from the checked result when the
 * job finished (result_check.c), or, for rows older than schema version 8,
 * once by the migration (db.c).
 */
#include "db_int.h"

#include <stdlib.h>
#include <string.h>

int db_rank_store_locked(struct db *db, int64_t id, const struct db_median *m, int n,
                         struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = 0;
    for (int i = 0; rc == 0 && i < n; i++) {
        rc = db_prep(db, err, &st, "INSERT INTO shape_medians(submission_id, idx, shape, "
                     "median_ns, raw_median_ns, corrected) VALUES (?, ?, ?, ?, ?, ?)", "iitddi",
                     id, (int64_t)m[i].idx, m[i].shape, m[i].median_ns, m[i].raw_median_ns,
                     (int64_t)(m[i].corrected != 0));
        if (rc == 0)
            rc = db_step(db, err, st);
        sqlite3_finalize(st);
        st = NULL;
    }
    return rc;
}

/* With db->mu held: the timed shapes of submission id into r. */
static int medians_locked(struct db *db, struct db_rank_row *r, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    /* The floor comes from the stored result, whose benchmarks name their index. */
    int cap = 0, rc = db_prep(db, err, &st, "SELECT m.idx, m.shape, m.median_ns, m.raw_median_ns, "
                              "m.corrected, (SELECT json_extract(b.value, '$.floor_ns') FROM "
                              "submissions s, json_each(CASE WHEN json_valid(s.result) THEN "
                              "s.result ELSE '{}' END, '$.benchmarks') b WHERE s.id = "
                              "m.submission_id AND json_extract(b.value, '$.index') = m.idx) "
                              "FROM shape_medians m WHERE m.submission_id = ? ORDER BY m.idx",
                              "i", r->submission_id);
    while (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        if ((rc = db_grow((void **)&r->medians, &cap, r->nmedians, sizeof *r->medians,
                          "shape medians", err)) != 0)
            break;
        struct db_median *m = &r->medians[r->nmedians++];
        m->idx = sqlite3_column_int(st, 0);
        m->median_ns = sqlite3_column_double(st, 2);
        m->raw_median_ns = sqlite3_column_double(st, 3);
        m->corrected = sqlite3_column_int(st, 4) != 0;
        m->floor_ns = sqlite3_column_type(st, 5) == SQLITE_NULL ? 0 : sqlite3_column_double(st, 5);
        if (!(m->floor_ns > 0 && m->floor_ns < 1e15))
            m->floor_ns = 0;
        m->shape = NULL;
        if ((rc = db_col_dup(db, err, st, 1, &m->shape, NULL)) == 0 && m->shape == NULL)
            rc = KJ_FAIL(err, KJ_EINTERNAL, "a shape median of submission %lld has no shape",
                         (long long)r->submission_id);
    }
    sqlite3_finalize(st);
    return rc < 0 ? rc : 0;
}

int db_rank_rows(struct db *db, const char *board, const char *gpu, struct db_rank_row **out,
                 int *n, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    struct db_rank_row *rows = NULL;
    int count = 0, cap = 0, rc;
    *out = NULL;
    *n = 0;
    pthread_mutex_lock(&db->mu);
    /* One read transaction: the rows and their medians from one snapshot. */
    if ((rc = db_exec(db, err, "BEGIN")) != 0)
        goto out;
    /* Per user, the lowest score; ties go to the earlier submission. */
    rc = db_prep(db, err, &st,
                 "SELECT id, name, score_ns, created_at, lang FROM ("
                 " SELECT s.id, u.name, s.score_ns, s.created_at, s.lang, row_number() OVER ("
                 "  PARTITION BY s.user_id ORDER BY s.score_ns, s.created_at, s.id) AS k"
                 " FROM submissions s JOIN users u ON u.id = s.user_id"
                 " JOIN rank_timing rt ON rt.leaderboard = s.leaderboard AND rt.gpu = s.gpu"
                 "  AND rt.protocol = s.timing_protocol AND rt.version = s.timing_version"
                 " WHERE s.leaderboard = ? AND s.gpu = ? AND s.mode = ?"
                 "  AND s.status = 'done' AND s.verdict = ? AND s.score_ns IS NOT NULL"
                 "  AND s.score_ns > 0 AND s.disqualified = 0 AND s.withdrawn_at IS NULL"
                 "  AND s.rejudge_of IS NULL)"
                 " WHERE k = 1 ORDER BY score_ns, created_at, id", "tttt", board, gpu,
                 kj_mode_name(KJ_MODE_LEADERBOARD), kj_verdict_name(KJ_V_ACCEPTED));
    while (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        if ((rc = db_grow((void **)&rows, &cap, count, sizeof *rows, "rankings", err)) != 0)
            break;
        struct db_rank_row *r = &rows[count++];
        memset(r, 0, sizeof *r);
        r->submission_id = sqlite3_column_int64(st, 0);
        db_col_text(st, 1, r->user, sizeof r->user);
        r->score_ns = sqlite3_column_double(st, 2);
        r->created_at = sqlite3_column_int64(st, 3);
        if ((rc = db_col_lang(err, st, 4, &r->lang)) != 0)
            break;
    }
    sqlite3_finalize(st);
    for (int i = 0; rc == 0 && i < count; i++)
        rc = medians_locked(db, &rows[i], err);
    db_exec(db, NULL, rc == 0 ? "COMMIT" : "ROLLBACK");
out:
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
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < rows[i].nmedians; k++)
            free(rows[i].medians[k].shape);
        free(rows[i].medians);
    }
    free(rows);
}
