/*
 * db_runner.c - runners: the GPU types each runner token may claim, and
 * the runners seen asking for work, per GPU type.
 *
 * main.c creates runner tokens bound to GPU types (db_runner_add,
 * db_runner_bind); api_runner.c reads the binding (db_runner_gpus), bounds
 * the runner names a token reports (db_runner_adopt, for claims and
 * hellos) and records every claim's runner (db_runner_seen); api_gpus.c and
 * api_metrics.c read them back with the queue depths (db_gpu_runners).
 */
#include "db_int.h"

#include <stdlib.h>
#include <string.h>

int db_runner_add(struct db *db, const char *name, const char *token_hash, const char *gpus,
                  struct kj_err *err)
{
    int rc;
    pthread_mutex_lock(&db->mu);
    rc = db_user_insert_locked(db, name, "runner", token_hash, gpus, NULL, err);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

int db_runner_bind(struct db *db, const char *name, const char *gpus, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    pthread_mutex_lock(&db->mu);
    rc = db_prep(db, err, &st, "UPDATE users SET runner_gpus = ? WHERE name = ? AND "
                 "role = 'runner'", "tt", gpus, name);
    if (rc == 0 && (rc = db_step(db, err, st)) == 0 && sqlite3_changes(db->h) == 0)
        rc = KJ_FAIL(err, KJ_ENOTFOUND, "no runner named '%s'", name);
    sqlite3_finalize(st);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

int db_runner_gpus(struct db *db, int64_t runner_id, char *out, size_t outsz, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    out[0] = '\0';
    pthread_mutex_lock(&db->mu);
    rc = db_prep(db, err, &st, "SELECT runner_gpus FROM users WHERE id = ?", "i", runner_id);
    if (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        db_col_text(st, 0, out, outsz);
        rc = 0;
    } else if (rc == 0) {
        rc = KJ_FAIL(err, KJ_ENOTFOUND, "no user %lld", (long long)runner_id);
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

/* Inside the lock: does runner_id hold name, and how many names does it hold? */
static int adopted_locked(struct db *db, int64_t runner_id, const char *name, int *has,
                          int *count, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = db_prep(db, err, &st, "SELECT EXISTS (SELECT 1 FROM runner_names WHERE "
                     "runner_id = ?1 AND name = ?2), (SELECT count(*) FROM runner_names WHERE "
                     "runner_id = ?1)", "it", runner_id, name);
    if (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        *has = sqlite3_column_int(st, 0);
        *count = sqlite3_column_int(st, 1);
        rc = 0;
    } else if (rc == 0) {
        rc = KJ_FAIL(err, KJ_EDB, "sqlite: the runner name count gave no row");
    }
    sqlite3_finalize(st);
    return rc;
}

/* Inside the lock: the limit's refusal, naming the first names held. */
static int adopt_refused_locked(struct db *db, int64_t runner_id, int limit,
                                struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    char names[160] = "";
    int rc = db_prep(db, err, &st, "SELECT group_concat(name, ', ') FROM (SELECT name FROM "
                     "runner_names WHERE runner_id = ? ORDER BY adopted_at, name LIMIT 8)", "i",
                     runner_id);
    if (rc == 0 && (rc = db_step(db, err, st)) == 1)
        db_col_text(st, 0, names, sizeof names);
    sqlite3_finalize(st);
    if (rc < 0)
        return rc;
    return KJ_FAIL(err, KJ_ELIMIT, "this runner token already reports %d runner names besides "
                   "its own (%s%s), the most it may (serve --runner-names %d)", limit, names,
                   limit > 8 ? ", ..." : "", limit);
}

int db_runner_adopt(struct db *db, int64_t runner_id, const char *name, int limit,
                    struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int has = 0, count = 0, rc;
    pthread_mutex_lock(&db->mu);
    rc = adopted_locked(db, runner_id, name, &has, &count, err);
    if (rc == 0 && !has && count >= limit)
        rc = adopt_refused_locked(db, runner_id, limit, err);
    else if (rc == 0 && !has &&
             (rc = db_prep(db, err, &st, "INSERT INTO runner_names(runner_id, name, adopted_at) "
                           "VALUES (?, ?, ?)", "iti", runner_id, name, db_now())) == 0)
        rc = db_step(db, err, st);
    sqlite3_finalize(st);
    pthread_mutex_unlock(&db->mu);
    return rc < 0 ? rc : 0;
}

int db_runner_seen(struct db *db, int64_t runner_id, const char *name, const char *gpu,
                   struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    pthread_mutex_lock(&db->mu);
    /* At most one write a second per runner: idle runners poll often. */
    rc = db_prep(db, err, &st, "INSERT INTO runners(runner_id, name, gpu, last_seen) VALUES "
                 "(?, ?, ?, ?) ON CONFLICT(runner_id, name, gpu) DO UPDATE SET last_seen = "
                 "excluded.last_seen WHERE last_seen < excluded.last_seen", "itti", runner_id, name,
                 gpu, db_now());
    if (rc == 0)
        rc = db_step(db, err, st);
    sqlite3_finalize(st);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

/* Inside the lock: the queued and running counts of gpu. */
static int db_gpu_counts(struct db *db, const char *gpu, int64_t *queued, int64_t *running,
                         struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = db_prep(db, err, &st, "SELECT coalesce(sum(status = 'queued'), 0), "
                     "coalesce(sum(status = 'running'), 0) FROM submissions WHERE gpu = ? AND "
                     "status IN ('queued', 'running')", "t", gpu);
    if (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        *queued = sqlite3_column_int64(st, 0);
        *running = sqlite3_column_int64(st, 1);
        rc = 0;
    } else if (rc == 0) {
        rc = KJ_FAIL(err, KJ_EDB, "sqlite: the queue count gave no row");
    }
    sqlite3_finalize(st);
    return rc;
}

/* One row of db_gpu_runners' query. */
static int runner_row(struct kj_err *err, sqlite3_stmt *st, void *row)
{
    struct db_runner *r = row;
    (void)err;
    db_col_text(st, 0, r->name, sizeof r->name);
    r->last_seen = sqlite3_column_int64(st, 1);
    r->busy = sqlite3_column_int(st, 2);
    return 0;
}

int db_gpu_runners(struct db *db, const char *gpu, struct db_runner **out, int *n,
                   int64_t *queued, int64_t *running, struct kj_err *err)
{
    int rc;
    *out = NULL;
    *n = 0;
    pthread_mutex_lock(&db->mu);
    /* The counts and the runners under one lock: busy runners and the running count agree. */
    if ((rc = db_gpu_counts(db, gpu, queued, running, err)) == 0)
        rc = db_rows_locked(db, err, out, n, "runners", runner_row,
                            "SELECT r.name, r.last_seen, EXISTS (SELECT 1 FROM submissions s "
                            "WHERE s.status = 'running' AND s.runner_id = r.runner_id AND "
                            "s.runner_name = r.name AND s.gpu = r.gpu) FROM runners r WHERE "
                            "r.gpu = ? ORDER BY r.name, r.runner_id", "t", gpu);
    pthread_mutex_unlock(&db->mu);
    return rc;
}
