/*
 * db.c - the SQLite connection: open (pragmas, schema creation and
 * migration, with the one data migration: version 8's shape medians from
 * the results stored before), close, and the health checks behind /healthz.
 *
 * main.c opens it (serve and the user/runner CLI); api_meta.c pings it
 * and checks that it can be written. Every other table lives in a db_*.c
 * file named for it (db.h lists them); the checked-call helpers are in
 * db_sql.c.
 */
#include "db_int.h"
#include "db_rejudge.h"

#include <cjson/cJSON.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>

#define DB_BUSY_TIMEOUT_MS 10000

/* Version 1: the whole schema, with the CHECK lists of modes and verdicts
 * filled from protocol.h's name tables (db_schema_v1). Later versions
 * append ALTERs in db_migrate. */
static const char schema_v1_fmt[] =
    "CREATE TABLE users ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " name TEXT NOT NULL UNIQUE,"
    " role TEXT NOT NULL CHECK (role IN ('user','admin','runner')),"
    " token_hash TEXT NOT NULL UNIQUE,"
    " created_at INTEGER NOT NULL);"
    "CREATE TABLE submissions ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " user_id INTEGER NOT NULL REFERENCES users(id),"
    " leaderboard TEXT NOT NULL,"
    " gpu TEXT NOT NULL,"
    " mode TEXT NOT NULL CHECK (mode IN (%s)),"
    " file_name TEXT NOT NULL,"
    " source BLOB NOT NULL,"
    " source_sha256 TEXT NOT NULL,"
    " status TEXT NOT NULL DEFAULT 'queued' CHECK (status IN ('queued','running','done')),"
    " verdict TEXT CHECK (verdict IS NULL OR verdict IN (%s)),"
    " score_ns REAL,"
    " result TEXT,"
    " runner_id INTEGER REFERENCES users(id),"
    " runner_name TEXT,"
    " created_at INTEGER NOT NULL,"
    " started_at INTEGER,"
    " finished_at INTEGER);"
    "CREATE INDEX submissions_queue ON submissions(status, gpu, id);"
    "CREATE INDEX submissions_user ON submissions(user_id, id);"
    "CREATE INDEX submissions_rank ON submissions(leaderboard, gpu, mode, verdict, score_ns);"
    "CREATE TABLE events ("
    " submission_id INTEGER NOT NULL REFERENCES submissions(id),"
    " seq INTEGER NOT NULL,"
    " event TEXT NOT NULL,"
    " data TEXT,"
    " at INTEGER NOT NULL,"
    " PRIMARY KEY (submission_id, seq));"
    "CREATE TABLE leaderboard_secrets ("
    " leaderboard TEXT PRIMARY KEY,"
    " secret_seed TEXT NOT NULL,"
    " created_at INTEGER NOT NULL);";

/* Version 2: job leases and retries, the runners seen per GPU type. A job
 * running when the database is migrated gets an expired lease (serve's
 * db_job_grace renews it at start). */
static const char schema_v2[] =
    "ALTER TABLE submissions ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE submissions ADD COLUMN lease_until INTEGER;"
    "ALTER TABLE submissions ADD COLUMN reason TEXT;"
    "UPDATE submissions SET lease_until = 0 WHERE status = 'running';"
    "CREATE INDEX submissions_lease ON submissions(status, lease_until);"
    "CREATE TABLE runners ("
    " runner_id INTEGER NOT NULL REFERENCES users(id),"
    " name TEXT NOT NULL,"
    " gpu TEXT NOT NULL,"
    " last_seen INTEGER NOT NULL,"
    " PRIMARY KEY (runner_id, name, gpu));";

/* Version 3: bans, invite codes, disqualification, and an index for the
 * per-user rate limits. Existing rows: not banned, not disqualified. */
static const char schema_v3[] =
    "ALTER TABLE users ADD COLUMN banned INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE submissions ADD COLUMN disqualified INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE submissions ADD COLUMN dq_reason TEXT;"
    "CREATE INDEX submissions_rate ON submissions(user_id, mode, created_at);"
    "CREATE TABLE invites ("
    " code_hash TEXT PRIMARY KEY,"
    " created_at INTEGER NOT NULL,"
    " expires_at INTEGER NOT NULL,"
    " used_by INTEGER REFERENCES users(id),"
    " used_at INTEGER);";

/* Version 4: leaderboards whose sources the admin published (after their
 * deadline), and an index for a user's previous submission to a board.
 * Existing boards: not published. */
static const char schema_v4[] =
    "CREATE TABLE published_sources ("
    " leaderboard TEXT PRIMARY KEY,"
    " published_at INTEGER NOT NULL,"
    " published_by INTEGER REFERENCES users(id));"
    "CREATE INDEX submissions_user_board ON submissions(user_id, leaderboard, id);";

/* Version 5: the GPU types each runner token may claim (comma-separated,
 * "H200,B200"; kjudge-server runner add/bind --gpu). Existing runner
 * tokens: NULL, refused by claim until the operator binds them. */
static const char schema_v5[] =
    "ALTER TABLE users ADD COLUMN runner_gpus TEXT;";

/* Version 6: a submission its owner withdrew from the rankings (kept for
 * the record). Existing rows: not withdrawn. */
static const char schema_v6[] =
    "ALTER TABLE submissions ADD COLUMN withdrawn_at INTEGER;";

/* Version 7: how many progress events a job holds and their bytes (event
 * name plus data), so the per-job cap (DB_MAX_JOB_EVENTS,
 * DB_MAX_JOB_EVENT_BYTES) costs no scan. Existing rows are counted. */
static const char schema_v7[] =
    "ALTER TABLE submissions ADD COLUMN event_count INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE submissions ADD COLUMN event_bytes INTEGER NOT NULL DEFAULT 0;"
    "UPDATE submissions SET"
    " event_count = (SELECT count(*) FROM events e WHERE e.submission_id = submissions.id),"
    " event_bytes = (SELECT coalesce(sum(length(CAST(e.event AS BLOB))"
    "   + coalesce(length(CAST(e.data AS BLOB)), 0)), 0)"
    "   FROM events e WHERE e.submission_id = submissions.id);";

/* Version 8: the medians of every finished job's timed shapes, as numbers,
 * for the rankings: db_job.c stores them with the result, db_rank.c reads
 * them. median_ns is the ranked one (a timing protocol v2 result's
 * corrected median, docs/timing.md), raw_median_ns the median as timed
 * (equal to median_ns unless corrected is 1). Existing rows are filled
 * from their stored results once (migrate_v8_medians). */
static const char schema_v8[] =
    "CREATE TABLE shape_medians ("
    " submission_id INTEGER NOT NULL REFERENCES submissions(id),"
    " idx INTEGER NOT NULL,"
    " shape TEXT NOT NULL,"
    " median_ns REAL NOT NULL,"
    " raw_median_ns REAL NOT NULL,"
    " corrected INTEGER NOT NULL DEFAULT 0 CHECK (corrected IN (0, 1)),"
    " PRIMARY KEY (submission_id, idx));";

/* Version 9: fair share (queue.c, db_queue.c). The millisecond a job was
 * claimed, for the GPU time its finish charges; each user's decayed GPU
 * time per GPU type; per GPU type, the rule's class streak and the
 * measured run time of each class. Existing rows: no usage, no streak. */
static const char schema_v9[] =
    "ALTER TABLE submissions ADD COLUMN claimed_ms INTEGER;"
    "CREATE TABLE queue_usage ("
    " gpu TEXT NOT NULL,"
    " user_id INTEGER NOT NULL REFERENCES users(id),"
    " usage_ms REAL NOT NULL,"
    " at_ms INTEGER NOT NULL,"
    " PRIMARY KEY (gpu, user_id));"
    "CREATE TABLE queue_state ("
    " gpu TEXT PRIMARY KEY,"
    " last_class INTEGER NOT NULL CHECK (last_class IN (0, 1)),"
    " streak INTEGER NOT NULL,"
    " est_test_ms REAL NOT NULL,"
    " est_ranked_ms REAL NOT NULL);";

/* Version 11: the runner names each runner token reported (besides its
 * own account name), so that a token reports a bounded number of them
 * (db_runner_adopt). Existing tokens: none yet; each adopts its names
 * again as it reports them. (IF NOT EXISTS: a test's database turned back
 * to an older version by dropping what came later may keep it.) */
static const char schema_v11[] =
    "CREATE TABLE IF NOT EXISTS runner_names ("
    " runner_id INTEGER NOT NULL REFERENCES users(id),"
    " name TEXT NOT NULL,"
    " adopted_at INTEGER NOT NULL,"
    " PRIMARY KEY (runner_id, name));";

/* ------------------------------------------------------------------ */
/* Open and migrate                                                    */
/* ------------------------------------------------------------------ */

/* Create the folder that will hold path, if any (one level, mode 0700). */
static int db_mkparent(const char *path, struct kj_err *err)
{
    char dir[1024];
    char *slash;
    snprintf(dir, sizeof dir, "%s", path);
    if ((slash = strrchr(dir, '/')) == NULL || slash == dir)
        return 0;
    *slash = '\0';
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return KJ_FAIL(err, KJ_EIO, "cannot create folder %s: %s", dir, strerror(errno));
    return 0;
}

static int db_pragmas(struct db *db, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    char mode[16] = "";
    int rc;
    if ((rc = DB_CHECK(db, err, sqlite3_busy_timeout(db->h, DB_BUSY_TIMEOUT_MS), SQLITE_OK)) != 0)
        return rc;
    if ((rc = db_prep(db, err, &st, "PRAGMA journal_mode=WAL", "")) != 0)
        return rc;
    if ((rc = db_step(db, err, st)) == 1)
        db_col_text(st, 0, mode, sizeof mode);
    sqlite3_finalize(st);
    if (rc < 0)
        return rc;
    if (strcmp(mode, "wal") != 0)
        return KJ_FAIL(err, KJ_EDB, "sqlite: journal_mode is '%s', WAL is required", mode);
    if ((rc = db_exec(db, err, "PRAGMA synchronous=FULL")) != 0 ||
        (rc = db_exec(db, err, "PRAGMA foreign_keys=ON")) != 0)
        return rc;
    return 0;
}

static int db_user_version(struct db *db, int *out, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if ((rc = db_prep(db, err, &st, "PRAGMA user_version", "")) != 0)
        return rc;
    rc = db_step(db, err, st);
    *out = rc == 1 ? sqlite3_column_int(st, 0) : 0;
    sqlite3_finalize(st);
    return rc < 0 ? rc : 0;
}

/* The timed shapes of one stored result (every "benchmarks" entry with a
 * shape object and a numeric median_ns, idx = its place in the list) into
 * shape_medians for submission id, as result_check.c takes them from a new
 * result: the ranked median is corrected_median_ns when timing.corrected
 * is true (a timing protocol v2 result) and the entry has it, else
 * median_ns, which is the raw one either way. A result that does not parse
 * has none. */
static int v8_medians_of(struct db *db, int64_t id, const char *result, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    cJSON *res = cJSON_Parse(result), *b;
    const cJSON *timing = cJSON_GetObjectItemCaseSensitive(res, "timing");
    int on = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(timing, "corrected"));
    int idx = 0, rc = 0;
    cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(res, "benchmarks")) {
        const cJSON *shape = cJSON_GetObjectItemCaseSensitive(b, "shape");
        const cJSON *med = cJSON_GetObjectItemCaseSensitive(b, "median_ns");
        const cJSON *cor = cJSON_GetObjectItemCaseSensitive(b, "corrected_median_ns");
        int corrected = on && cJSON_IsNumber(cor);
        char *text;
        if (rc == 0 && cJSON_IsObject(shape) && cJSON_IsNumber(med)) {
            if ((text = cJSON_PrintUnformatted(shape)) == NULL) {
                rc = KJ_FAIL(err, KJ_ENOMEM, "out of memory migrating submission %lld",
                             (long long)id);
                break;
            }
            rc = db_prep(db, err, &st, "INSERT INTO shape_medians(submission_id, idx, shape, "
                         "median_ns, raw_median_ns, corrected) VALUES (?, ?, ?, ?, ?, ?)",
                         "iitddi", id, (int64_t)idx, text,
                         corrected ? cor->valuedouble : med->valuedouble, med->valuedouble,
                         (int64_t)corrected);
            if (rc == 0)
                rc = db_step(db, err, st);
            sqlite3_finalize(st);
            st = NULL;
            cJSON_free(text);
        }
        idx++;
    }
    cJSON_Delete(res);
    return rc;
}

/* Version 8's data: the medians of the results stored before it. */
static int migrate_v8_medians(struct db *db, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int64_t n = 0;
    int rc = db_prep(db, err, &st, "SELECT id, result FROM submissions WHERE status = 'done' "
                     "AND result IS NOT NULL ORDER BY id", "");
    while (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        const char *result = (const char *)sqlite3_column_text(st, 1);
        rc = v8_medians_of(db, sqlite3_column_int64(st, 0), result != NULL ? result : "", err);
        n++;
    }
    sqlite3_finalize(st);
    if (rc == 0 && n > 0)
        kj_log(KJ_LOG_INFO, "db", "shape medians filled from stored results rows=%lld",
               (long long)n);
    return rc;
}

/* schema_v1 with its CHECK lists into buf. */
static int db_schema_v1(char *buf, size_t size, struct kj_err *err)
{
    char modes[128], verdicts[256];
    int n;
    if (kj_mode_sql_list(modes, sizeof modes) != 0 ||
        kj_verdict_sql_list(verdicts, sizeof verdicts) != 0 ||
        (n = snprintf(buf, size, schema_v1_fmt, modes, verdicts)) < 0 || (size_t)n >= size)
        return KJ_FAIL(err, KJ_EINTERNAL, "the version 1 schema does not fit its buffer");
    return 0;
}

/* Bring the schema to DB_SCHEMA_VERSION inside one write transaction
 * (db_int.h); quiet: no log line (a restore's scratch copy). */
int db_schema_migrate(struct db *db, int quiet, struct kj_err *err)
{
    char sql[64], v1[sizeof schema_v1_fmt + 384];
    int version = 0, rc;
    if ((rc = db_exec(db, err, "BEGIN IMMEDIATE")) != 0)
        return rc;
    if ((rc = db_user_version(db, &version, err)) != 0)
        goto fail;
    if (version > DB_SCHEMA_VERSION) {
        rc = KJ_FAIL(err, KJ_EDB, "database schema version %d is newer than this server's %d",
                     version, DB_SCHEMA_VERSION);
        goto fail;
    }
    if (version < 1 && ((rc = db_schema_v1(v1, sizeof v1, err)) != 0 ||
                        (rc = db_exec(db, err, v1)) != 0))
        goto fail;
    if (version < 2 && (rc = db_exec(db, err, schema_v2)) != 0)
        goto fail;
    if (version < 3 && (rc = db_exec(db, err, schema_v3)) != 0)
        goto fail;
    if (version < 4 && (rc = db_exec(db, err, schema_v4)) != 0)
        goto fail;
    if (version < 5 && (rc = db_exec(db, err, schema_v5)) != 0)
        goto fail;
    if (version < 6 && (rc = db_exec(db, err, schema_v6)) != 0)
        goto fail;
    if (version < 7 && (rc = db_exec(db, err, schema_v7)) != 0)
        goto fail;
    if (version < 8 && ((rc = db_exec(db, err, schema_v8)) != 0 ||
                        (rc = migrate_v8_medians(db, err)) != 0))
        goto fail;
    if (version < 9 && (rc = db_exec(db, err, schema_v9)) != 0)
        goto fail;
    if (version < 10 && (rc = db_migrate_v10(db, err)) != 0)
        goto fail;
    if (version < 11 && (rc = db_exec(db, err, schema_v11)) != 0)
        goto fail;
    if (version < 12 && (rc = db_migrate_v12(db, err)) != 0)
        goto fail;
    if (version < 14 && (rc = db_migrate_v14(db, err)) != 0)
        goto fail;
    if (version != DB_SCHEMA_VERSION) {
        snprintf(sql, sizeof sql, "PRAGMA user_version=%d", DB_SCHEMA_VERSION);
        if ((rc = db_exec(db, err, sql)) != 0)
            goto fail;
        if (!quiet)
            kj_log(KJ_LOG_INFO, "db", "schema migrated from=%d to=%d", version,
                   DB_SCHEMA_VERSION);
    }
    return db_exec(db, err, "COMMIT");
fail:
    db_exec(db, NULL, "ROLLBACK");
    return rc;
}

int db_open(const char *path, struct db **out, struct kj_err *err)
{
    struct db *db = NULL;
    struct stat st;
    int rc, existed = stat(path, &st) == 0;
    *out = NULL;
    if ((rc = db_mkparent(path, err)) != 0)
        return rc;
    if ((db = calloc(1, sizeof *db)) == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory opening %s", path);
    pthread_mutex_init(&db->mu, NULL);
    pthread_mutex_init(&db->q_mu, NULL);
    db->lease_ms = DB_LEASE_DEFAULT_MS;
    db->queue_rule = QUEUE_FAIR;
    snprintf(db->path, sizeof db->path, "%s", path);
    atomic_init(&db->storage_fail_ms, 0);
    atomic_init(&db->storage_full, 0);
    rc = DB_CHECK(db, err, sqlite3_open_v2(path, &db->h, SQLITE_OPEN_READWRITE |
                  SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, NULL), SQLITE_OK);
    if (rc != 0)
        goto fail;
    /* A new database holds token hashes and sources: owner only. */
    if (!existed && chmod(path, 0600) != 0) {
        rc = KJ_FAIL(err, KJ_EIO, "cannot chmod %s: %s", path, strerror(errno));
        goto fail;
    }
    if ((rc = db_pragmas(db, err)) != 0 || (rc = db_schema_migrate(db, 0, err)) != 0)
        goto fail;
    *out = db;
    return 0;
fail:
    db_close(db);
    return rc;
}

void db_close(struct db *db)
{
    if (db == NULL)
        return;
    if (db->h != NULL && sqlite3_close(db->h) != SQLITE_OK)
        kj_log(KJ_LOG_WARN, "db", "close: %s", sqlite3_errmsg(db->h));
    pthread_mutex_destroy(&db->mu);
    pthread_mutex_destroy(&db->q_mu);
    free(db);
}

int db_ping(struct db *db, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    pthread_mutex_lock(&db->mu);
    if ((rc = db_prep(db, err, &st, "SELECT 1", "")) == 0)
        rc = db_step(db, err, st) == 1 ? 0 : KJ_FAIL(err, KJ_EDB, "sqlite: SELECT 1 gave no row");
    sqlite3_finalize(st);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

/* One small committed write: read the header's application id and write
 * it back, which rewrites page 1 through the WAL. */
static int db_probe_write(struct db *db, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    char sql[64];
    int rc, app = 0;
    pthread_mutex_lock(&db->mu);
    if ((rc = db_exec(db, err, "BEGIN IMMEDIATE")) != 0)
        goto out;
    if ((rc = db_prep(db, err, &st, "PRAGMA application_id", "")) == 0 &&
        (rc = db_step(db, err, st)) == 1) {
        app = sqlite3_column_int(st, 0);
        rc = 0;
    }
    sqlite3_finalize(st);
    snprintf(sql, sizeof sql, "PRAGMA application_id = %d", app);
    if (rc == 0 && (rc = db_exec(db, err, sql)) == 0)
        rc = db_exec(db, err, "COMMIT");
    if (rc != 0)
        db_exec(db, NULL, "ROLLBACK");
out:
    pthread_mutex_unlock(&db->mu);
    return rc;
}

const char *db_storage_reason(struct db *db)
{
    return atomic_load(&db->storage_full) ? "disk full" : "I/O error";
}

int db_storage_check(struct db *db, char *why, size_t whysz, struct kj_err *err)
{
    char dir[sizeof db->path];
    char *slash;
    struct statvfs vfs;
    struct kj_err perr;
    snprintf(dir, sizeof dir, "%s", db->path);
    if ((slash = strrchr(dir, '/')) == NULL)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0'; /* "/k.db": the root */
    else
        *slash = '\0';
    if (statvfs(dir, &vfs) == 0 && (uint64_t)vfs.f_bavail * vfs.f_frsize < DB_MIN_FREE_BYTES) {
        snprintf(why, whysz, "disk full: %llu KiB free on %s",
                 (unsigned long long)((uint64_t)vfs.f_bavail * vfs.f_frsize / 1024), dir);
        return KJ_FAIL(err, KJ_ESTORAGE, "%s", why);
    }
    if (atomic_load(&db->storage_fail_ms) == 0)
        return 0;
    kj_err_clear(&perr);
    if (db_probe_write(db, &perr) == 0) {
        atomic_store(&db->storage_fail_ms, 0);
        kj_log(KJ_LOG_INFO, "db", "writes work again");
        return 0;
    }
    snprintf(why, whysz, "writes fail: %s", perr.code == KJ_ESTORAGE ? db_storage_reason(db)
             : "database error");
    return KJ_FAIL(err, KJ_ESTORAGE, "%s (%s)", why, perr.msg);
}
