/*
 * db_backup.c - backups and checked restores of the database file, and the
 * serve lock that keeps a restore away from a database in use.
 *
 * main.c runs `kjudge-server backup FILE` (db_backup: SQLite's online
 * backup API copies one consistent snapshot while a server keeps writing;
 * the copy is a single file in rollback-journal mode, checked with
 * quick_check, written beside FILE and renamed into place) and `restore
 * FILE` (db_restore: db_check_file first, then the backup API again, into
 * the live path, in one transaction). `serve` holds db_lock() for as long
 * as it runs. These work on paths, each with its own short-lived
 * connections; a struct db here only carries the handle for the checking
 * helpers of db_int.h.
 *
 * A file is restored only when its schema is exactly one this version
 * knows: it holds no trigger or view, and a scratch copy of it, migrated
 * (db_schema_migrate), has the very objects (type, name, table and SQL
 * text) of a database this version creates. What is restored is that
 * checked copy, never the file read again. Every replaced database is kept
 * beside it as DB.before-restore-YYYYMMDDTHHMMSSZ (UTC).
 */
#include "db_int.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DB_BACKUP_BUSY_MS 10000
/* Tables every schema version has; a file without them is not ours. */
static const char *const db_tables[] = {"users", "submissions", "events", "leaderboard_secrets",
                                        NULL};

/* Open path into c->h (flags as sqlite3_open_v2) with a busy timeout. */
static int bk_open(struct db *c, const char *path, int flags, struct kj_err *err)
{
    int rc;
    memset(c, 0, sizeof *c);
    rc = DB_CHECK(c, err, sqlite3_open_v2(path, &c->h, flags, NULL), SQLITE_OK);
    if (rc == 0)
        rc = DB_CHECK(c, err, sqlite3_busy_timeout(c->h, DB_BACKUP_BUSY_MS), SQLITE_OK);
    return rc;
}

static void bk_close(struct db *c)
{
    if (c->h != NULL && sqlite3_close(c->h) != SQLITE_OK)
        kj_log(KJ_LOG_WARN, "db", "close: %s", sqlite3_errmsg(c->h));
    c->h = NULL;
}

/* The first column of the first row of sql as text into out. */
static int bk_text(struct db *c, const char *sql, char *out, size_t outsz, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = db_prep(c, err, &st, sql, "");
    out[0] = '\0';
    if (rc == 0 && (rc = db_step(c, err, st)) == 1) {
        db_col_text(st, 0, out, outsz);
        rc = 0;
    }
    sqlite3_finalize(st);
    return rc;
}

/* Copy all of src's main database into dst's, in one step (one read
 * transaction on src: a consistent snapshot). *pages gets the page count. */
static int bk_copy(struct db *dst, struct db *src, int64_t *pages, struct kj_err *err)
{
    sqlite3_backup *b = sqlite3_backup_init(dst->h, "main", src->h, "main");
    int rc;
    if (b == NULL)
        return DB_CHECK(dst, err, sqlite3_errcode(dst->h), SQLITE_OK);
    rc = sqlite3_backup_step(b, -1);
    if (pages != NULL)
        *pages = sqlite3_backup_pagecount(b);
    sqlite3_backup_finish(b);
    if (rc != SQLITE_DONE)
        return kj_errf(err, KJ_EDB, __FILE__, __LINE__, "sqlite: backup step: %s (%d)",
                       sqlite3_errstr(rc), rc);
    return DB_CHECK(dst, err, sqlite3_errcode(dst->h), SQLITE_OK);
}

/* fsync path's folder, so that a rename into it is durable. */
static int bk_sync_dir(const char *path, struct kj_err *err)
{
    char dir[PATH_MAX];
    char *slash;
    int fd, rc = 0;
    snprintf(dir, sizeof dir, "%s", path);
    slash = strrchr(dir, '/');
    if (slash == NULL)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        return KJ_FAIL(err, KJ_EIO, "cannot open folder %s: %s", dir, strerror(errno));
    if (fsync(fd) != 0)
        rc = KJ_FAIL(err, KJ_EIO, "cannot sync folder %s: %s", dir, strerror(errno));
    close(fd);
    return rc;
}

static int bk_sync_file(const char *path, struct kj_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;
    if (fd < 0)
        return KJ_FAIL(err, KJ_EIO, "cannot open %s: %s", path, strerror(errno));
    if (fchmod(fd, 0600) != 0 || fsync(fd) != 0)
        rc = KJ_FAIL(err, KJ_EIO, "cannot sync %s: %s", path, strerror(errno));
    close(fd);
    return rc;
}

int db_backup(const char *db_path, const char *dest, int replace, int64_t *pages,
              struct kj_err *err)
{
    struct db src, dst;
    char tmp[PATH_MAX + 32], check[256];
    struct stat st;
    int rc;

    memset(&dst, 0, sizeof dst);
    if (stat(db_path, &st) != 0 || !S_ISREG(st.st_mode))
        return KJ_FAIL(err, KJ_EIO, "no database at %s", db_path);
    if (!replace && lstat(dest, &st) == 0) /* said early; link() below decides */
        return KJ_FAIL(err, KJ_ECONFLICT, "%s exists; give --force to replace it", dest);
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp-%d", dest, (int)getpid()) >= sizeof tmp)
        return KJ_FAIL(err, KJ_EINVAL, "the backup path is too long");
    unlink(tmp);
    if ((rc = bk_open(&src, db_path, SQLITE_OPEN_READWRITE, err)) != 0)
        goto out;
    if ((rc = bk_open(&dst, tmp, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, err)) != 0) {
        if (rc == KJ_EDB)
            rc = KJ_FAIL(err, KJ_EIO, "cannot create %s: %s", tmp, strerror(errno));
        goto out;
    }
    if ((rc = bk_copy(&dst, &src, pages, err)) != 0 ||
        (rc = bk_text(&dst, "PRAGMA journal_mode=DELETE", check, sizeof check, err)) != 0 ||
        (rc = bk_text(&dst, "PRAGMA quick_check", check, sizeof check, err)) != 0)
        goto out;
    if (strcmp(check, "ok") != 0) {
        rc = KJ_FAIL(err, KJ_EDB, "the copy of %s fails its check: %.120s", db_path, check);
        goto out;
    }
    bk_close(&dst);
    if ((rc = bk_sync_file(tmp, err)) != 0)
        goto out;
    /* Without replace, link() puts the copy in place only where no file is:
     * one that appeared since the check above is kept, never overwritten. */
    if (replace ? rename(tmp, dest) != 0 : link(tmp, dest) != 0) {
        if (!replace && errno == EEXIST)
            rc = KJ_FAIL(err, KJ_ECONFLICT, "%s exists; give --force to replace it", dest);
        else
            rc = KJ_FAIL(err, KJ_EIO, "cannot %s %s to %s: %s", replace ? "rename" : "link",
                         tmp, dest, strerror(errno));
        goto out;
    }
    if (!replace)
        unlink(tmp);
    rc = bk_sync_dir(dest, err);
out:
    bk_close(&src);
    bk_close(&dst);
    if (rc != 0)
        unlink(tmp);
    return rc;
}

/* Are the tables of db_tables all in c's schema? Names the first one missing. */
static int bk_tables(struct db *c, const char *path, struct kj_err *err)
{
    for (int i = 0; db_tables[i] != NULL; i++) {
        sqlite3_stmt *st = NULL;
        int rc = db_prep(c, err, &st, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND "
                         "name = ?", "t", db_tables[i]);
        if (rc == 0)
            rc = db_step(c, err, st);
        sqlite3_finalize(st);
        if (rc < 0)
            return rc;
        if (rc == 0)
            return KJ_FAIL(err, KJ_EINVAL, "%s is not a kjudge database (no table %s)", path,
                           db_tables[i]);
    }
    return 0;
}

/* A trigger or a view in c: our schema has none, and a trigger would run
 * in the server (one on users can make every new user an admin). */
static int bk_no_code(struct db *c, const char *path, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    char type[32] = "", name[128] = "";
    int rc = db_prep(c, err, &st, "SELECT type, name FROM sqlite_master WHERE type NOT IN "
                     "('table', 'index') ORDER BY type, name LIMIT 1", "");
    if (rc == 0 && (rc = db_step(c, err, st)) == 1) {
        db_col_text(st, 0, type, sizeof type);
        db_col_text(st, 1, name, sizeof name);
    }
    sqlite3_finalize(st);
    if (rc < 0)
        return rc;
    if (rc == 1)
        return KJ_FAIL(err, KJ_EINVAL, "%s holds %s '%s'; a kjudge database has no triggers "
                       "or views, so this file is not a backup this server made", path, type,
                       name);
    return 0;
}

/* One object of a schema, as bk_same_schema reads them. */
struct bk_obj {
    char type[16], name[128], table[128], sql[4096];
};

/* The next row of st (sqlite_master in name order) into o; 1, 0 at the end, or < 0. */
static int bk_next(struct db *c, sqlite3_stmt *st, struct bk_obj *o, struct kj_err *err)
{
    int rc = db_step(c, err, st);
    if (rc == 1) {
        db_col_text(st, 0, o->type, sizeof o->type);
        db_col_text(st, 1, o->name, sizeof o->name);
        db_col_text(st, 2, o->table, sizeof o->table);
        db_col_text(st, 3, o->sql, sizeof o->sql);
    }
    return rc;
}

/* Does got (the migrated copy of path) have exactly want's schema objects?
 * Names the first difference. A text longer than bk_obj holds is cut the
 * same way on both sides, and longer than any of ours. */
static int bk_same_schema(struct db *got, struct db *want, const char *path, int version,
                          struct kj_err *err)
{
    static const char q[] = "SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master "
                            "ORDER BY name, type";
    sqlite3_stmt *a = NULL, *b = NULL;
    struct bk_obj *x = calloc(2, sizeof *x), *y = x + 1;
    int ra = 0, rb = 0, rc;
    if (x == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory checking %s", path);
    if ((rc = db_prep(got, err, &a, q, "")) != 0 || (rc = db_prep(want, err, &b, q, "")) != 0)
        goto out;
    for (;;) {
        if ((ra = bk_next(got, a, x, err)) < 0 || (rb = bk_next(want, b, y, err)) < 0) {
            rc = ra < 0 ? ra : rb;
            goto out;
        }
        if (ra == 0 && rb == 0)
            break;
        if (rb == 0 || (ra == 1 && strcmp(x->name, y->name) < 0))
            rc = KJ_FAIL(err, KJ_EINVAL, "%s (schema version %d) has %s '%s', which this "
                         "version's schema has not", path, version, x->type, x->name);
        else if (ra == 0 || strcmp(x->name, y->name) > 0)
            rc = KJ_FAIL(err, KJ_EINVAL, "%s (schema version %d) lacks %s '%s' of this "
                         "version's schema", path, version, y->type, y->name);
        else if (strcmp(x->type, y->type) != 0 || strcmp(x->table, y->table) != 0 ||
                 strcmp(x->sql, y->sql) != 0)
            rc = KJ_FAIL(err, KJ_EINVAL, "%s (schema version %d): %s '%s' is not this "
                         "version's (its columns or constraints differ): %.200s", path, version,
                         x->type, x->name, x->sql);
        if (rc != 0)
            goto out;
    }
out:
    sqlite3_finalize(a);
    sqlite3_finalize(b);
    free(x);
    return rc;
}

/* Copy the checked file c (at path, schema version) into *scratch, a
 * private temporary database (SQLite's "" name: removed when closed),
 * migrate it there, and compare its schema with a fresh database's. On
 * success *scratch is open (the caller closes it with bk_close). */
static int bk_schema(struct db *c, const char *path, int version, struct db *scratch,
                     struct kj_err *err)
{
    struct db fresh;
    struct kj_err why;
    int rc;
    memset(&fresh, 0, sizeof fresh);
    if ((rc = bk_no_code(c, path, err)) != 0 ||
        (rc = bk_open(scratch, "", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, err)) != 0 ||
        (rc = bk_copy(scratch, c, NULL, err)) != 0 ||
        (rc = bk_open(&fresh, ":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, err)) != 0 ||
        (rc = db_schema_migrate(&fresh, 1, err)) != 0)
        goto out;
    kj_err_clear(&why);
    if (db_schema_migrate(scratch, 1, &why) != 0) {
        rc = KJ_FAIL(err, KJ_EINVAL, "%s (schema version %d) is not a schema this server knows: "
                     "its migration fails: %.200s", path, version, why.msg);
        goto out;
    }
    rc = bk_same_schema(scratch, &fresh, path, version, err);
out:
    bk_close(&fresh);
    return rc;
}

/* db_check_file's checks, then bk_schema into *scratch (open on success). */
static int bk_check(const char *path, int *version, struct db *scratch, struct kj_err *err)
{
    struct db c;
    struct stat st;
    char text[256];
    int rc;

    *version = 0;
    memset(&c, 0, sizeof c);
    memset(scratch, 0, sizeof *scratch);
    if (stat(path, &st) != 0)
        return KJ_FAIL(err, KJ_EIO, "cannot read %s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode) || st.st_size == 0)
        return KJ_FAIL(err, KJ_EINVAL, "%s is not a database file (empty, or not a file)", path);
    if ((rc = bk_open(&c, path, SQLITE_OPEN_READONLY, err)) != 0)
        goto out;
    if (bk_text(&c, "PRAGMA user_version", text, sizeof text, err) != 0) {
        rc = KJ_FAIL(err, KJ_EINVAL, "%s is not an SQLite database (%s)", path,
                     sqlite3_errmsg(c.h));
        goto out;
    }
    *version = atoi(text);
    if (bk_text(&c, "PRAGMA integrity_check", text, sizeof text, err) != 0 ||
        strcmp(text, "ok") != 0) {
        rc = KJ_FAIL(err, KJ_EINVAL, "%s fails SQLite's integrity check: %.160s", path,
                     text[0] != '\0' ? text : sqlite3_errmsg(c.h));
        goto out;
    }
    if (*version < 1 || *version > DB_SCHEMA_VERSION) {
        rc = KJ_FAIL(err, KJ_EINVAL, "%s has schema version %d; this kjudge-server reads "
                     "versions 1 to %d", path, *version, DB_SCHEMA_VERSION);
        goto out;
    }
    if ((rc = bk_tables(&c, path, err)) == 0)
        rc = bk_schema(&c, path, *version, scratch, err);
out:
    bk_close(&c);
    if (rc != 0)
        bk_close(scratch);
    return rc;
}

int db_check_file(const char *path, int *version, struct kj_err *err)
{
    struct db scratch;
    int rc = bk_check(path, version, &scratch, err);
    bk_close(&scratch);
    return rc;
}

/* A name for the database being replaced, db_path.before-restore-
 * YYYYMMDDTHHMMSSZ (UTC), with -2, -3, ... when one of that second exists:
 * every earlier database is kept. */
static int bk_keep_name(const char *db_path, char *out, size_t outsz, struct kj_err *err)
{
    char stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    struct stat st;
    if (gmtime_r(&now, &tm) == NULL || strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm) == 0)
        return KJ_FAIL(err, KJ_EIO, "cannot read the clock");
    for (int n = 1; n < 1000; n++) {
        int len = n == 1 ? snprintf(out, outsz, "%s.before-restore-%s", db_path, stamp)
                         : snprintf(out, outsz, "%s.before-restore-%s-%d", db_path, stamp, n);
        if (len < 0 || (size_t)len >= outsz)
            return KJ_FAIL(err, KJ_EINVAL, "the database path is too long");
        if (stat(out, &st) != 0 && errno == ENOENT)
            return 0;
    }
    return KJ_FAIL(err, KJ_EIO, "%s.before-restore-%s-*: too many copies", db_path, stamp);
}

int db_restore(const char *src_path, const char *db_path, struct kj_err *err)
{
    struct db src, dst;
    char keep[PATH_MAX + 64], text[256];
    struct stat st;
    int version = 0, lock = -1, rc;

    memset(&dst, 0, sizeof dst);
    /* src: the checked, migrated copy; the file is not read again */
    if ((rc = bk_check(src_path, &version, &src, err)) != 0)
        return rc;
    if ((rc = db_lock(db_path, &lock, err)) != 0)
        goto out;
    if (stat(db_path, &st) == 0) {
        if ((rc = bk_keep_name(db_path, keep, sizeof keep, err)) != 0 ||
            (rc = db_backup(db_path, keep, 0, NULL, err)) != 0)
            goto out;
        kj_log(KJ_LOG_INFO, "db", "saved the database being replaced to %s", keep);
    }
    if ((rc = bk_open(&dst, db_path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, err)) != 0 ||
        (rc = bk_copy(&dst, &src, NULL, err)) != 0 ||
        (rc = bk_text(&dst, "PRAGMA journal_mode=WAL", text, sizeof text, err)) != 0 ||
        (rc = bk_text(&dst, "PRAGMA quick_check", text, sizeof text, err)) != 0)
        goto out;
    if (strcmp(text, "ok") != 0)
        rc = KJ_FAIL(err, KJ_EDB, "%s fails its check after the restore: %.120s", db_path, text);
    else if (chmod(db_path, 0600) != 0)
        rc = KJ_FAIL(err, KJ_EIO, "cannot chmod %s: %s", db_path, strerror(errno));
    else
        kj_log(KJ_LOG_INFO, "db", "restored %s from %s schema=%d now=%d", db_path, src_path,
               version, DB_SCHEMA_VERSION);
out:
    bk_close(&src);
    bk_close(&dst);
    db_unlock(lock);
    return rc;
}

int db_lock(const char *db_path, int *fd, struct kj_err *err)
{
    char path[PATH_MAX + 8];
    *fd = -1;
    if ((size_t)snprintf(path, sizeof path, "%s.lock", db_path) >= sizeof path)
        return KJ_FAIL(err, KJ_EINVAL, "the database path is too long");
    int f = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (f < 0 && errno == ENOENT) {
        /* The folder does not exist yet: create it as db_open would (one level). */
        char dir[PATH_MAX];
        char *slash;
        snprintf(dir, sizeof dir, "%s", db_path);
        if ((slash = strrchr(dir, '/')) != NULL && slash != dir) {
            *slash = '\0';
            if (mkdir(dir, 0700) != 0 && errno != EEXIST)
                return KJ_FAIL(err, KJ_EIO, "cannot create folder %s: %s", dir, strerror(errno));
        }
        f = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    }
    if (f < 0)
        return KJ_FAIL(err, KJ_EIO, "cannot open %s: %s", path, strerror(errno));
    if (flock(f, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        close(f);
        if (e == EWOULDBLOCK)
            return KJ_FAIL(err, KJ_ECONFLICT, "a kjudge-server is using %s (it holds %s); stop "
                           "it first", db_path, path);
        return KJ_FAIL(err, KJ_EIO, "cannot lock %s: %s", path, strerror(e));
    }
    *fd = f;
    return 0;
}

void db_unlock(int fd)
{
    if (fd >= 0)
        close(fd); /* closing the descriptor drops the flock */
}
