/*
 * db_board.c - what the database keeps per leaderboard besides its
 * submissions: its secret seed, whether its sources were published, and
 * whether it has any submission at all.
 *
 * The serve set-up and api_admin.c's reload give every board a secret seed
 * (db_secret_ensure, with random bytes the caller drew from auth.c);
 * db_job.c hands it out with a claimed leaderboard-mode job. api_admin.c
 * publishes sources (after the deadline) and asks, before a reload, which
 * boards have submissions; api_access.c and api_files.c read the published
 * flag to decide who sees a source.
 */
#include "db_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Secret seeds                                                        */
/* ------------------------------------------------------------------ */

int db_secret_ensure(struct db *db, const char *board, uint64_t seed, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    char text[24];
    int rc;
    snprintf(text, sizeof text, "%" PRIu64, seed);
    pthread_mutex_lock(&db->mu);
    rc = db_prep(db, err, &st, "INSERT OR IGNORE INTO leaderboard_secrets(leaderboard, "
                 "secret_seed, created_at) VALUES (?, ?, ?)", "tti", board, text, db_now());
    if (rc == 0 && (rc = db_step(db, err, st)) == 0 && sqlite3_changes(db->h) > 0)
        kj_log(KJ_LOG_INFO, "db", "created secret seed board=%s", board);
    sqlite3_finalize(st);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

int db_secret_get_locked(struct db *db, const char *board, char *out, size_t outsz,
                         struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = db_prep(db, err, &st, "SELECT secret_seed FROM leaderboard_secrets WHERE "
                     "leaderboard = ?", "t", board);
    if (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        db_col_text(st, 0, out, outsz);
        rc = 0;
    } else if (rc == 0) {
        rc = KJ_FAIL(err, KJ_ENOTFOUND, "no secret seed for leaderboard %s", board);
    }
    sqlite3_finalize(st);
    return rc;
}

int db_secret_get(struct db *db, const char *board, char *out, size_t outsz, struct kj_err *err)
{
    int rc;
    pthread_mutex_lock(&db->mu);
    rc = db_secret_get_locked(db, board, out, outsz, err);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Published sources, submissions                                      */
/* ------------------------------------------------------------------ */

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
