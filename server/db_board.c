/*
 * db_board.c - what the database keeps per leaderboard besides its
 * submissions: whether its sources were published, and whether it has any
 * submission at all.
 *
 * api_admin.c publishes sources (after the deadline) and asks, before a
 * reload, which boards have submissions; api_submissions.c, api_detail.c
 * and api_leaderboards.c read the published flag to decide who sees a
 * source. The secret seeds, also per board, stay in db.c.
 */
#include "db_int.h"

#include <stdio.h>
#include <string.h>

/* With db->mu held: when board was published, 0 if not. */
static int published_locked(struct db *db, const char *board, int64_t *at, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = db_prep(db, err, &st, "SELECT published_at FROM published_sources WHERE "
                     "leaderboard = ?", "t", board);
    *at = 0;
    if (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        *at = sqlite3_column_int64(st, 0);
        rc = 0;
    }
    sqlite3_finalize(st);
    return rc;
}

int db_publish(struct db *db, const char *board, int64_t by_user, int64_t *at, int *already,
               struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    *already = 0;
    pthread_mutex_lock(&db->mu);
    rc = db_prep(db, err, &st, "INSERT OR IGNORE INTO published_sources(leaderboard, "
                 "published_at, published_by) VALUES (?, ?, ?)", "tii", board, db_now(), by_user);
    if (rc == 0 && (rc = db_step(db, err, st)) == 0)
        *already = sqlite3_changes(db->h) == 0;
    sqlite3_finalize(st);
    if (rc == 0)
        rc = published_locked(db, board, at, err);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

int db_published(struct db *db, const char *board, int64_t *at, struct kj_err *err)
{
    int rc;
    pthread_mutex_lock(&db->mu);
    rc = published_locked(db, board, at, err);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

int db_board_has_subs(struct db *db, const char *board, int *has, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    *has = 0;
    pthread_mutex_lock(&db->mu);
    rc = db_prep(db, err, &st, "SELECT 1 FROM submissions WHERE leaderboard = ? LIMIT 1", "t",
                 board);
    if (rc == 0 && (rc = db_step(db, err, st)) >= 0) {
        *has = rc == 1;
        rc = 0;
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&db->mu);
    return rc;
}
