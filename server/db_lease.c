/*
 * db_lease.c - job leases, retries, queue positions and the runners seen.
 *
 * lease.c's sweeper thread calls db_lease_sweep() to return jobs whose
 * runner stopped answering to the queue (or to fail them on the last
 * attempt); main.c sets the lease length and grants a fresh lease to every
 * running job at start; main.c creates runner tokens bound to GPU types
 * (db_runner_add, db_runner_bind), api_runner.c reads the binding
 * (db_runner_gpus) and records runners (db_runner_seen), and api_gpus.c
 * reads them back. The state machine these serve is in db.h.
 */
#include "db_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void db_set_lease_ms(struct db *db, int64_t ms)
{
    KJ_ASSERT(ms > 0);
    pthread_mutex_lock(&db->mu);
    db->lease_ms = ms;
    pthread_mutex_unlock(&db->mu);
}

int64_t db_lease_ms(struct db *db)
{
    int64_t ms;
    pthread_mutex_lock(&db->mu);
    ms = db->lease_ms;
    pthread_mutex_unlock(&db->mu);
    return ms;
}

int64_t db_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int db_lease_grace(struct db *db, int64_t *n, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int64_t until;
    int rc;
    *n = 0;
    pthread_mutex_lock(&db->mu);
    until = db_now_ms() + db->lease_ms;
    rc = db_prep(db, err, &st, "UPDATE submissions SET lease_until = ? WHERE status = 'running' "
                 "AND (lease_until IS NULL OR lease_until < ?)", "ii", until, until);
    if (rc == 0 && (rc = db_step(db, err, st)) == 0)
        *n = sqlite3_changes(db->h);
    sqlite3_finalize(st);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

/* Inside a transaction: the position of queued job id (0 when not queued). */
static int db_position_locked(struct db *db, int64_t id, int64_t *pos, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = db_prep(db, err, &st, "SELECT count(*) FROM submissions q, submissions s WHERE "
                     "s.id = ? AND s.status = 'queued' AND q.status = 'queued' AND q.gpu = s.gpu "
                     "AND q.id <= s.id", "i", id);
    *pos = 0;
    if (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        *pos = sqlite3_column_int64(st, 0);
        rc = 0;
    }
    sqlite3_finalize(st);
    return rc;
}

int db_queue_position(struct db *db, int64_t id, int64_t *pos, struct kj_err *err)
{
    int rc;
    pthread_mutex_lock(&db->mu);
    rc = db_position_locked(db, id, pos, err);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

/* Inside a transaction: the last attempt of running job id failed: done as internal_error. */
static int db_give_up_locked(struct db *db, int64_t id, const char *reason, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    char result[DB_MAX_REASON + 96], data[DB_MAX_REASON + 64];
    int rc;
    KJ_ASSERT(strpbrk(reason, "\"\\") == NULL); /* our own text, safe inside JSON quotes */
    snprintf(result, sizeof result, "{\"verdict\":\"internal_error\",\"message\":\"%s\","
             "\"score_ns\":null}", reason);
    snprintf(data, sizeof data, "{\"verdict\":\"internal_error\",\"message\":\"%s\"}", reason);
    rc = db_prep(db, err, &st, "UPDATE submissions SET status = 'done', verdict = "
                 "'internal_error', score_ns = NULL, result = ?, reason = ?, finished_at = ?, "
                 "lease_until = NULL WHERE id = ? AND status = 'running'", "ttii", result, reason,
                 db_now(), id);
    if (rc == 0)
        rc = db_step(db, err, st);
    sqlite3_finalize(st);
    if (rc == 0 && sqlite3_changes(db->h) != 1)
        rc = KJ_FAIL(err, KJ_EINTERNAL, "failing submission %lld changed no row", (long long)id);
    return rc != 0 ? rc : db_event_insert_locked(db, id, KJ_EV_VERDICT, data, err);
}

int db_requeue_locked(struct db *db, int64_t id, const char *reason, const char *final_reason,
                      int *tries, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    char data[DB_MAX_REASON + 96];
    int64_t pos = 0;
    int attempts = 0, rc;
    *tries = 0;
    rc = db_prep(db, err, &st, "SELECT attempts FROM submissions WHERE id = ? AND "
                 "status = 'running'", "i", id);
    if (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        attempts = sqlite3_column_int(st, 0);
        rc = 0;
    } else if (rc == 0) {
        rc = KJ_FAIL(err, KJ_EINTERNAL, "requeue of submission %lld: not running", (long long)id);
    }
    sqlite3_finalize(st);
    if (rc != 0)
        return rc;
    *tries = attempts + 1;
    if (attempts + 1 >= DB_MAX_ATTEMPTS)
        return db_give_up_locked(db, id, final_reason, err);
    rc = db_prep(db, err, &st, "UPDATE submissions SET status = 'queued', runner_id = NULL, "
                 "runner_name = NULL, started_at = NULL, lease_until = NULL, attempts = ? "
                 "WHERE id = ? AND status = 'running'", "ii", (int64_t)attempts + 1, id);
    if (rc == 0)
        rc = db_step(db, err, st);
    sqlite3_finalize(st);
    if (rc != 0 || (rc = db_position_locked(db, id, &pos, err)) != 0)
        return rc;
    KJ_ASSERT(strpbrk(reason, "\"\\") == NULL);
    snprintf(data, sizeof data, "{\"position\":%lld,\"attempt\":%d,\"reason\":\"%s\"}",
             (long long)pos, attempts + 2, reason);
    return db_event_insert_locked(db, id, KJ_EV_QUEUED, data, err);
}

/* Inside a transaction: up to max running jobs whose lease ended before now_ms. */
static int db_expired_locked(struct db *db, int64_t now_ms, struct db_expired *out, int max,
                             int *n, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = db_prep(db, err, &st, "SELECT id, runner_name FROM submissions WHERE "
                     "status = 'running' AND lease_until < ? ORDER BY id LIMIT ?", "ii", now_ms,
                     (int64_t)max);
    *n = 0;
    while (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        out[*n].id = sqlite3_column_int64(st, 0);
        db_col_text(st, 1, out[*n].runner_name, sizeof out[*n].runner_name);
        (*n)++;
        rc = 0;
    }
    sqlite3_finalize(st);
    return rc;
}

#define DB_SWEEP_MAX 256 /* jobs handled per sweep; the rest wait for the next one */

int db_lease_sweep(struct db *db, int64_t now_ms, struct db_expired **out, int *n,
                   struct kj_err *err)
{
    char why[DB_MAX_REASON];
    struct db_expired *ex = calloc(DB_SWEEP_MAX, sizeof *ex);
    int count = 0, rc;
    *out = NULL;
    *n = 0;
    if (ex == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory sweeping leases");
    pthread_mutex_lock(&db->mu);
    if ((rc = db_exec(db, err, "BEGIN IMMEDIATE")) != 0)
        goto out;
    if ((rc = db_expired_locked(db, now_ms, ex, DB_SWEEP_MAX, &count, err)) != 0)
        goto fail;
    snprintf(why, sizeof why, "the runner stopped answering %d times", DB_MAX_ATTEMPTS);
    for (int i = 0; i < count && rc == 0; i++) {
        rc = db_requeue_locked(db, ex[i].id, "the runner stopped answering", why,
                               &ex[i].attempts, err);
        ex[i].failed = ex[i].attempts >= DB_MAX_ATTEMPTS;
    }
    if (rc != 0)
        goto fail;
    rc = db_exec(db, err, "COMMIT");
    goto out;
fail:
    db_exec(db, NULL, "ROLLBACK");
    count = 0;
out:
    pthread_mutex_unlock(&db->mu);
    if (rc != 0 || count == 0) {
        free(ex);
        return rc;
    }
    *out = ex;
    *n = count;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Runners                                                             */
/* ------------------------------------------------------------------ */

int db_runner_add(struct db *db, const char *name, const char *token_hash, const char *gpus,
                  struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    pthread_mutex_lock(&db->mu);
    rc = db_prep(db, err, &st, "INSERT INTO users(name, role, token_hash, created_at, "
                 "runner_gpus) VALUES (?, 'runner', ?, ?, ?)", "ttit", name, token_hash, db_now(),
                 gpus);
    if (rc == 0 && (rc = db_step(db, err, st)) == KJ_ECONFLICT)
        KJ_FAIL(err, KJ_ECONFLICT, "the name '%s' (or the token) is already taken", name);
    sqlite3_finalize(st);
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

int db_gpu_runners(struct db *db, const char *gpu, struct db_runner **out, int *n,
                   int64_t *queued, int64_t *running, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    struct db_runner *rows = NULL;
    int count = 0, cap = 0, rc;
    *out = NULL;
    *n = 0;
    pthread_mutex_lock(&db->mu);
    rc = db_gpu_counts(db, gpu, queued, running, err);
    if (rc == 0)
        rc = db_prep(db, err, &st, "SELECT r.name, r.last_seen, EXISTS (SELECT 1 FROM submissions "
                     "s WHERE s.status = 'running' AND s.runner_id = r.runner_id AND "
                     "s.runner_name = r.name AND s.gpu = r.gpu) FROM runners r WHERE r.gpu = ? "
                     "ORDER BY r.name, r.runner_id", "t", gpu);
    while (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        if ((rc = db_grow((void **)&rows, &cap, count, sizeof *rows, "runners", err)) != 0)
            break;
        struct db_runner *r = &rows[count++];
        db_col_text(st, 0, r->name, sizeof r->name);
        r->last_seen = sqlite3_column_int64(st, 1);
        r->busy = sqlite3_column_int(st, 2);
        rc = 0;
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
