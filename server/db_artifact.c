/*
 * db_artifact.c - schema version 10 (profile and sanitize modes) and the
 * artifacts table: files a runner uploads for a finished job (profile
 * mode's Nsight Compute report), stored as blobs next to the submission.
 *
 * Callers: db.c (the migration), api_runner.c (the runner's upload),
 * api_files.c-like handlers in api_artifacts.c (the download). Access
 * rules are the handlers' (api_access.c); this file only stores.
 */
#include "db_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Version 10: the request options of profile and sanitize modes (two
 * columns, db_v10_column), and the artifacts. Existing rows have no options
 * (NULL: memcheck, every shape). Each step is skipped when its result is
 * already there, so the migration is self-contained whatever version
 * precedes it. */
static const char schema_v10[] =
    "CREATE TABLE IF NOT EXISTS artifacts ("
    " submission_id INTEGER NOT NULL REFERENCES submissions(id),"
    " name TEXT NOT NULL,"
    " data BLOB NOT NULL,"
    " created_at INTEGER NOT NULL,"
    " PRIMARY KEY (submission_id, name));";

/* The CHECK list of submissions.mode that version 1 wrote before profile
 * and sanitize existed; rewritten in place (the list is only a constraint:
 * no stored row changes), the way SQLite documents for constraint changes:
 * writable_schema, then a new schema_version so every connection rereads. */
static int db_v10_modes(struct db *db, struct kj_err *err)
{
    static const char old[] = "mode IN ('test','benchmark','leaderboard')";
    char list[256], want[300];
    sqlite3_stmt *st = NULL;
    int rc, version = 0;
    if (kj_mode_sql_list(list, sizeof list) != 0)
        return KJ_FAIL(err, KJ_EINTERNAL, "the mode list does not fit");
    snprintf(want, sizeof want, "mode IN (%s)", list);
    if ((rc = db_prep(db, err, &st, "PRAGMA schema_version", "")) != 0)
        return rc;
    rc = db_step(db, err, st);
    version = rc == 1 ? sqlite3_column_int(st, 0) : 0;
    sqlite3_finalize(st);
    if (rc < 0)
        return rc;
    if ((rc = db_exec(db, err, "PRAGMA writable_schema=ON")) != 0)
        return rc;
    rc = db_prep(db, err, &st, "UPDATE sqlite_master SET sql = replace(sql, ?, ?) WHERE "
                 "type = 'table' AND name = 'submissions' AND instr(sql, ?) > 0", "ttt", old, want,
                 old);
    if (rc == 0)
        rc = db_step(db, err, st);
    sqlite3_finalize(st);
    int changed = rc == 0 && sqlite3_changes(db->h) > 0;
    if (rc == 0 && changed) {
        char sql[64];
        snprintf(sql, sizeof sql, "PRAGMA schema_version=%d", version + 1);
        rc = db_exec(db, err, sql);
    }
    int off = db_exec(db, rc == 0 ? err : NULL, "PRAGMA writable_schema=OFF");
    return rc != 0 ? rc : off;
}

int db_migrate_v10(struct db *db, struct kj_err *err)
{
    int rc = db_add_column(db, "sanitizer", "TEXT", err);
    if (rc == 0)
        rc = db_add_column(db, "profile_shape", "INTEGER", err);
    if (rc == 0)
        rc = db_exec(db, err, schema_v10);
    return rc != 0 ? rc : db_v10_modes(db, err);
}

int db_artifact_put(struct db *db, int64_t id, const char *name, const void *data, size_t len,
                    struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    if (len > DB_MAX_ARTIFACT_BYTES)
        return KJ_FAIL(err, KJ_ELIMIT, "an artifact may have at most %d bytes",
                       DB_MAX_ARTIFACT_BYTES);
    pthread_mutex_lock(&db->mu);
    int rc = db_prep(db, err, &st, "INSERT OR REPLACE INTO artifacts(submission_id, name, data, "
                     "created_at) VALUES (?, ?, ?, ?)", "itbi", id, name, data, len, db_now());
    if (rc == 0)
        rc = db_step(db, err, st);
    sqlite3_finalize(st);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

int db_artifact_get(struct db *db, int64_t id, const char *name, char **data, size_t *len,
                    struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    *data = NULL;
    *len = 0;
    pthread_mutex_lock(&db->mu);
    int rc = db_prep(db, err, &st, "SELECT data FROM artifacts WHERE submission_id = ? AND "
                     "name = ?", "it", id, name);
    if (rc == 0 && (rc = db_step(db, err, st)) == 1)
        rc = db_col_dup(db, err, st, 0, data, len);
    else if (rc == 0)
        rc = KJ_FAIL(err, KJ_ENOTFOUND, "submission %lld has no artifact %s", (long long)id,
                     name);
    sqlite3_finalize(st);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

int db_artifact_size(struct db *db, int64_t id, const char *name, int64_t *size,
                     struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    *size = -1;
    pthread_mutex_lock(&db->mu);
    int rc = db_prep(db, err, &st, "SELECT length(data) FROM artifacts WHERE submission_id = ? "
                     "AND name = ?", "it", id, name);
    if (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        *size = sqlite3_column_int64(st, 0);
        rc = 0;
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&db->mu);
    return rc;
}
