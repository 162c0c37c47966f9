/*
 * db_sql.c - the checked-call helpers every db_*.c goes through (db_int.h):
 * prepare with bound parameters, step, exec, copy columns out, read the
 * vocabulary columns into enums, grow row arrays, and the two clocks.
 *
 * Nothing here takes the connection's mutex: the callers hold it.
 */
#include "db_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* db_prep_at with the parameters in ap. */
static int db_vprep_at(struct db *db, struct kj_err *err, const char *file, int line,
                       sqlite3_stmt **st, const char *sql, const char *fmt, va_list *ap)
{
    int rc = sqlite3_prepare_v2(db->h, sql, -1, st, NULL);
    if (rc != SQLITE_OK) {
        *st = NULL;
        return kj_errf(err, db_code(db, rc), file, line, "sqlite: prepare '%.60s' at %s:%d: %s",
                       sql, file, line, sqlite3_errmsg(db->h));
    }
    for (int i = 0; fmt[i] != '\0'; i++) {
        if ((rc = db_bind(db, err, *st, i + 1, fmt[i], ap)) != 0)
            break;
    }
    if (rc != 0) {
        sqlite3_finalize(*st);
        *st = NULL;
    }
    return rc;
}

int db_prep_at(struct db *db, struct kj_err *err, const char *file, int line,
               sqlite3_stmt **st, const char *sql, const char *fmt, ...)
{
    va_list ap;
    int rc;
    va_start(ap, fmt);
    rc = db_vprep_at(db, err, file, line, st, sql, fmt, &ap);
    va_end(ap);
    return rc;
}

/* db_rows without the lock, the parameters in ap. */
static int rows_v(struct db *db, struct kj_err *err, const char *file, int line, void **out,
                  int *n, size_t elem, const char *what, db_row_fn fn, const char *sql,
                  const char *fmt, va_list *ap)
{
    sqlite3_stmt *st = NULL;
    char *rows = NULL;
    int count = 0, cap = 0;
    int rc = db_vprep_at(db, err, file, line, &st, sql, fmt, ap);
    *out = NULL;
    *n = 0;
    while (rc == 0 && (rc = db_step_at(db, err, st, file, line)) == 1) {
        if ((rc = db_grow((void **)&rows, &cap, count, elem, what, err)) != 0)
            break;
        memset(rows + (size_t)count * elem, 0, elem);
        rc = fn(err, st, rows + (size_t)count++ * elem);
    }
    sqlite3_finalize(st);
    if (rc < 0) {
        free(rows);
        return rc;
    }
    *out = rows;
    *n = count;
    return 0;
}

int db_rows_at(struct db *db, struct kj_err *err, const char *file, int line, void **out,
               int *n, size_t elem, const char *what, db_row_fn fn, const char *sql,
               const char *fmt, ...)
{
    va_list ap;
    int rc;
    pthread_mutex_lock(&db->mu);
    va_start(ap, fmt);
    rc = rows_v(db, err, file, line, out, n, elem, what, fn, sql, fmt, &ap);
    va_end(ap);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

int db_rows_locked_at(struct db *db, struct kj_err *err, const char *file, int line,
                      void **out, int *n, size_t elem, const char *what, db_row_fn fn,
                      const char *sql, const char *fmt, ...)
{
    va_list ap;
    int rc;
    va_start(ap, fmt);
    rc = rows_v(db, err, file, line, out, n, elem, what, fn, sql, fmt, &ap);
    va_end(ap);
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

int db_add_column(struct db *db, const char *name, const char *decl, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    char sql[512];
    int rc = db_prep(db, err, &st, "SELECT count(*) FROM pragma_table_info('submissions') "
                     "WHERE name = ?", "t", name);
    if (rc == 0 && (rc = db_step(db, err, st)) == 1)
        rc = sqlite3_column_int(st, 0) > 0 ? 1 : 0;
    sqlite3_finalize(st);
    if (rc != 0)
        return rc < 0 ? rc : 0;
    if ((size_t)snprintf(sql, sizeof sql, "ALTER TABLE submissions ADD COLUMN %s %s", name, decl) >=
        sizeof sql)
        return KJ_FAIL(err, KJ_EINTERNAL, "column %s: its declaration is too long", name);
    return db_exec(db, err, sql);
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

int64_t db_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
