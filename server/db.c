/*
 * db.c - the SQLite connection: open, pragmas, schema migration, the
 * checked-call helpers, users and leaderboard secrets.
 *
 * main.c opens it (serve and the user/runner CLI); auth.c looks tokens up
 * through db_user_by_hash(); api_runner.c reads secrets for claim answers.
 * Submissions, events and rankings are in db_sub.c.
 */
#include "db_int.h"
#include "auth.h"

#include <errno.h>
#include <inttypes.h>
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
 * db_lease_grace renews it at start). */
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

/* ------------------------------------------------------------------ */
/* Checked-call helpers (db_int.h)                                     */
/* ------------------------------------------------------------------ */

/* The kj code for SQLite's result rc of a failed call: KJ_ESTORAGE when
 * the disk is full or failing (remembered in db for db_storage_check),
 * KJ_EDB otherwise. */
static int db_code(struct db *db, int rc)
{
    int prim = rc & 0xff;
    if (prim != SQLITE_FULL && prim != SQLITE_IOERR)
        return KJ_EDB;
    if (db != NULL) {
        atomic_store(&db->storage_full, prim == SQLITE_FULL);
        atomic_store(&db->storage_fail_ms, db_now_ms());
    }
    return KJ_ESTORAGE;
}

int db_check_at(struct db *db, struct kj_err *err, int rc, int want, const char *text,
                const char *file, int line)
{
    if (rc == want)
        return 0;
    return kj_errf(err, db_code(db, rc), file, line, "sqlite: %.80s at %s:%d: %s (%d)", text,
                   file, line,
                   db != NULL && db->h != NULL ? sqlite3_errmsg(db->h) : sqlite3_errstr(rc), rc);
}

static int db_bind(struct db *db, struct kj_err *err, sqlite3_stmt *st, int i, char f,
                   va_list *ap)
{
    switch (f) {
    case 't':
        return DB_CHECK(db, err, sqlite3_bind_text(st, i, va_arg(*ap, const char *), -1,
                                                   SQLITE_TRANSIENT), SQLITE_OK);
    case 'i':
        return DB_CHECK(db, err, sqlite3_bind_int64(st, i, va_arg(*ap, int64_t)), SQLITE_OK);
    case 'd':
        return DB_CHECK(db, err, sqlite3_bind_double(st, i, va_arg(*ap, double)), SQLITE_OK);
    case 'n':
        return DB_CHECK(db, err, sqlite3_bind_null(st, i), SQLITE_OK);
    case 'b': {
        const void *p = va_arg(*ap, const void *);
        size_t n = va_arg(*ap, size_t);
        return DB_CHECK(db, err, sqlite3_bind_blob64(st, i, p, n, SQLITE_TRANSIENT), SQLITE_OK);
    }
    }
    return KJ_FAIL(err, KJ_EINTERNAL, "db_prep: bad format character '%c'", f);
}

int db_prep_at(struct db *db, struct kj_err *err, const char *file, int line,
               sqlite3_stmt **st, const char *sql, const char *fmt, ...)
{
    va_list ap;
    int rc = sqlite3_prepare_v2(db->h, sql, -1, st, NULL);
    if (rc != SQLITE_OK) {
        *st = NULL;
        return kj_errf(err, db_code(db, rc), file, line, "sqlite: prepare '%.60s' at %s:%d: %s",
                       sql, file, line, sqlite3_errmsg(db->h));
    }
    va_start(ap, fmt);
    for (int i = 0; fmt[i] != '\0'; i++) {
        if ((rc = db_bind(db, err, *st, i + 1, fmt[i], &ap)) != 0)
            break;
    }
    va_end(ap);
    if (rc != 0) {
        sqlite3_finalize(*st);
        *st = NULL;
    }
    return rc;
}

int db_step_at(struct db *db, struct kj_err *err, sqlite3_stmt *st, const char *file, int line)
{
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        return 1;
    if (rc == SQLITE_DONE)
        return 0;
    if (rc == SQLITE_CONSTRAINT)
        return kj_errf(err, KJ_ECONFLICT, file, line, "sqlite: step at %s:%d: %s", file, line,
                       sqlite3_errmsg(db->h));
    return kj_errf(err, db_code(db, rc), file, line, "sqlite: step '%.60s' at %s:%d: %s (%d)",
                   sqlite3_sql(st), file, line, sqlite3_errmsg(db->h), rc);
}

int db_exec_at(struct db *db, struct kj_err *err, const char *sql, const char *file, int line)
{
    char *msg = NULL;
    int rc = sqlite3_exec(db->h, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        int code = db_code(db, rc);
        kj_errf(err, code, file, line, "sqlite: exec '%.60s' at %s:%d: %s", sql, file, line,
                msg != NULL ? msg : sqlite3_errstr(rc));
        sqlite3_free(msg);
        return code;
    }
    return 0;
}

int db_grow(void **arr, int *cap, int count, size_t elem, const char *what, struct kj_err *err)
{
    if (count < *cap)
        return 0;
    int ncap = *cap ? *cap * 2 : 16;
    void *grown = realloc(*arr, (size_t)ncap * elem);
    if (grown == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory reading %s", what);
    *arr = grown;
    *cap = ncap;
    return 0;
}

void db_col_text(sqlite3_stmt *st, int i, char *dst, size_t dstsz)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    snprintf(dst, dstsz, "%s", t != NULL ? (const char *)t : "");
}

int db_col_dup(struct db *db, struct kj_err *err, sqlite3_stmt *st, int i, char **out, size_t *len)
{
    const void *p = sqlite3_column_blob(st, i);
    size_t n = (size_t)sqlite3_column_bytes(st, i);
    (void)db;
    *out = NULL;
    if (len != NULL)
        *len = 0;
    if (sqlite3_column_type(st, i) == SQLITE_NULL)
        return 0;
    if ((*out = malloc(n + 1)) == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory copying a column of %zu bytes", n);
    if (n > 0)
        memcpy(*out, p, n);
    (*out)[n] = '\0';
    if (len != NULL)
        *len = n;
    return 0;
}

static const char *const status_names[] = {"queued", "running", "done"};

const char *db_status_name(enum db_status s)
{
    return s >= DB_QUEUED && s <= DB_DONE ? status_names[s] : "?";
}

/* The text of column i, for the parsers below ("" for NULL). */
static const char *col_str(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t != NULL ? (const char *)t : "";
}

/* The failure of a column that names nothing its enum knows. */
static int col_unknown(struct kj_err *err, sqlite3_stmt *st, int i, const char *what)
{
    char safe[40];
    kj_printable(safe, sizeof safe, col_str(st, i), 32);
    return KJ_FAIL(err, KJ_EINTERNAL, "the database holds an unknown %s '%s' (column %s)", what,
                   safe, sqlite3_column_name(st, i));
}

int db_col_mode(struct kj_err *err, sqlite3_stmt *st, int i, enum kj_mode *out)
{
    if (KJ_NEVER(kj_mode_parse(col_str(st, i), out) != 0))
        return col_unknown(err, st, i, "mode");
    return 0;
}

int db_col_verdict(struct kj_err *err, sqlite3_stmt *st, int i, int *has,
                   enum kj_verdict *out)
{
    *has = sqlite3_column_type(st, i) != SQLITE_NULL;
    if (*has && KJ_NEVER(kj_verdict_parse(col_str(st, i), out) != 0))
        return col_unknown(err, st, i, "verdict");
    return 0;
}

int db_col_event(struct kj_err *err, sqlite3_stmt *st, int i, enum kj_event *out)
{
    if (KJ_NEVER(kj_event_parse(col_str(st, i), out) != 0))
        return col_unknown(err, st, i, "event");
    return 0;
}

int db_col_status(struct kj_err *err, sqlite3_stmt *st, int i, enum db_status *out)
{
    const char *t = col_str(st, i);
    int k = DB_QUEUED;
    while (k <= DB_DONE && strcmp(t, status_names[k]) != 0)
        k++;
    if (KJ_NEVER(k > DB_DONE))
        return col_unknown(err, st, i, "status");
    *out = (enum db_status)k;
    return 0;
}

int64_t db_now(void)
{
    return (int64_t)time(NULL);
}

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

/* Bring the schema to DB_SCHEMA_VERSION inside one write transaction. */
static int db_migrate(struct db *db, struct kj_err *err)
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
    if (version != DB_SCHEMA_VERSION) {
        snprintf(sql, sizeof sql, "PRAGMA user_version=%d", DB_SCHEMA_VERSION);
        if ((rc = db_exec(db, err, sql)) != 0)
            goto fail;
        kj_log(KJ_LOG_INFO, "db", "schema migrated from=%d to=%d", version, DB_SCHEMA_VERSION);
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
    if ((rc = db_pragmas(db, err)) != 0 || (rc = db_migrate(db, err)) != 0)
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

/* ------------------------------------------------------------------ */
/* Users                                                               */
/* ------------------------------------------------------------------ */

int db_user_add(struct db *db, const char *name, const char *role, const char *token_hash,
                int64_t *id_out, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    pthread_mutex_lock(&db->mu);
    rc = db_prep(db, err, &st, "INSERT INTO users(name, role, token_hash, created_at) "
                 "VALUES (?, ?, ?, ?)", "ttti", name, role, token_hash, db_now());
    if (rc == 0 && (rc = db_step(db, err, st)) == KJ_ECONFLICT)
        KJ_FAIL(err, KJ_ECONFLICT, "the name '%s' (or the token) is already taken", name);
    if (rc == 0 && id_out != NULL)
        *id_out = sqlite3_last_insert_rowid(db->h);
    sqlite3_finalize(st);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

int db_user_set_admin(struct db *db, const char *token_hash, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    pthread_mutex_lock(&db->mu);
    rc = db_prep(db, err, &st, "INSERT INTO users(name, role, token_hash, created_at) "
                 "VALUES ('admin', 'admin', ?, ?) ON CONFLICT(name) DO UPDATE SET "
                 "role = 'admin', token_hash = excluded.token_hash", "ti", token_hash, db_now());
    if (rc == 0)
        rc = db_step(db, err, st);
    sqlite3_finalize(st);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

int db_user_by_hash(struct db *db, const char *token_hash, struct db_user *out, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    pthread_mutex_lock(&db->mu);
    rc = db_prep(db, err, &st, "SELECT id, name, role, token_hash, banned FROM users "
                 "WHERE token_hash = ?",
                 "t", token_hash);
    if (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        out->id = sqlite3_column_int64(st, 0);
        db_col_text(st, 1, out->name, sizeof out->name);
        db_col_text(st, 2, out->role, sizeof out->role);
        db_col_text(st, 3, out->token_hash, sizeof out->token_hash);
        out->banned = sqlite3_column_int(st, 4) != 0;
        rc = 0;
    } else if (rc == 0) {
        rc = KJ_FAIL(err, KJ_ENOTFOUND, "no such token");
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Leaderboard secrets                                                 */
/* ------------------------------------------------------------------ */

int db_secret_ensure(struct db *db, const char *board, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    unsigned char raw[8];
    uint64_t seed = 0;
    char text[24];
    int rc;
    if ((rc = auth_random_bytes(raw, sizeof raw, err)) != 0)
        return rc;
    for (size_t i = 0; i < sizeof raw; i++)
        seed = seed << 8 | raw[i];
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

int db_secret_get(struct db *db, const char *board, char *out, size_t outsz, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    pthread_mutex_lock(&db->mu);
    rc = db_prep(db, err, &st, "SELECT secret_seed FROM leaderboard_secrets WHERE leaderboard = ?",
                 "t", board);
    if (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        db_col_text(st, 0, out, outsz);
        rc = 0;
    } else if (rc == 0) {
        rc = KJ_FAIL(err, KJ_ENOTFOUND, "no secret seed for leaderboard %s", board);
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&db->mu);
    return rc;
}
