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

int db_backup(const char *db_path, const char *dest, int64_t *pages, struct kj_err *err)
{
    struct db src, dst;
    char tmp[PATH_MAX + 32], check[256];
    struct stat st;
    int rc;

    memset(&dst, 0, sizeof dst);
    if (stat(db_path, &st) != 0 || !S_ISREG(st.st_mode))
        return KJ_FAIL(err, KJ_EIO, "no database at %s", db_path);
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
    if (rename(tmp, dest) != 0) {
        rc = KJ_FAIL(err, KJ_EIO, "cannot rename %s to %s: %s", tmp, dest, strerror(errno));
        goto out;
    }
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

int db_check_file(const char *path, int *version, struct kj_err *err)
{
    struct db c;
    struct stat st;
    char text[256];
    int rc;

    *version = 0;
    memset(&c, 0, sizeof c);
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
    rc = bk_tables(&c, path, err);
out:
    bk_close(&c);
    return rc;
}

int db_restore(const char *src_path, const char *db_path, struct kj_err *err)
{
    struct db src, dst;
    char keep[PATH_MAX + 32], text[256];
    struct stat st;
    int version = 0, lock = -1, rc;

    memset(&src, 0, sizeof src);
    memset(&dst, 0, sizeof dst);
    if ((rc = db_check_file(src_path, &version, err)) != 0 || (rc = db_lock(db_path, &lock, err)) != 0)
        return rc;
    if (stat(db_path, &st) == 0) {
        snprintf(keep, sizeof keep, "%s.before-restore", db_path);
        if ((rc = db_backup(db_path, keep, NULL, err)) != 0)
            goto out;
        kj_log(KJ_LOG_INFO, "db", "saved the database being replaced to %s", keep);
    }
    if ((rc = bk_open(&src, src_path, SQLITE_OPEN_READONLY, err)) != 0 ||
        (rc = bk_open(&dst, db_path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, err)) != 0 ||
        (rc = bk_copy(&dst, &src, NULL, err)) != 0 ||
        (rc = bk_text(&dst, "PRAGMA journal_mode=WAL", text, sizeof text, err)) != 0 ||
        (rc = bk_text(&dst, "PRAGMA quick_check", text, sizeof text, err)) != 0)
        goto out;
    if (strcmp(text, "ok") != 0)
        rc = KJ_FAIL(err, KJ_EDB, "%s fails its check after the restore: %.120s", db_path, text);
    else if (chmod(db_path, 0600) != 0)
        rc = KJ_FAIL(err, KJ_EIO, "cannot chmod %s: %s", db_path, strerror(errno));
    else
        kj_log(KJ_LOG_INFO, "db", "restored %s from %s schema=%d", db_path, src_path, version);
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
