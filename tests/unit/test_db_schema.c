/*
 * test_db_schema.c - unit tests for the database's schema in server/db.c:
 * a database newer than the code refused, the migrations from versions 4
 * and 6 (runner tokens bound to GPU types; events counted per job) and 10
 * (a submission's language), 14 (each result's timing and each ranking's,
 * docs/rejudge.md), the
 * CHECK lists equal to protocol.h's name tables, and a database that cannot
 * grow (KJ_ESTORAGE, remembered until a probe write works). Each test opens
 * its own file under a temporary folder.
 */
#define KT_MAIN
#include "kt.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "db_int.h"
#include "db_fixture.h"

static char dir[] = "/tmp/kj_test_db_schema.XXXXXX";

static void test_newer_schema(void)
{
    char p2[160];
    sqlite3 *h = NULL;
    struct db *db = NULL;
    struct kj_err err;
    snprintf(p2, sizeof p2, "%s/newer.db", dir);
    KT_CHECK(sqlite3_open(p2, &h) == SQLITE_OK && sqlite3_exec(h, "PRAGMA user_version=99", NULL, NULL, NULL) ==
             SQLITE_OK, "make a newer database");
    sqlite3_close(h);
    KT_CHECK(db_open(p2, &db, &err) == KJ_EDB && db == NULL && strstr(err.msg, "newer") != NULL,
             "a newer schema is refused: %s", err.msg);
}

/* Runner tokens bound to GPU types (schema 5), and a version-4 runner
 * token migrated unbound. */


/* A version-6 database with events: the version 7 migration counts them. */
static void test_migrate_v6(void)
{
    char p2[160];
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    struct db *db = NULL;
    struct kj_err err;
    int64_t u, r, id, cnt = -1, bytes = -1;
    snprintf(p2, sizeof p2, "%s/v4.db", dir);
    KT_CHECK(db_open(p2, &db, &err) == 0, "open: %s", err.msg);
    if (db == NULL)
        return;
    u = add_user(db, "mu", "user");
    r = add_user(db, "mr", "runner");
    id = running_job(db, u, r);
    KT_CHECK(event(db, id, r, "test", "{\"a\":1}", &err) == 0 && event(db, id, r, "compiled", NULL, &err) == 0,
             "two events");
    db_close(db);
    KT_CHECK(sqlite3_open(p2, &h) == SQLITE_OK &&
             sqlite3_exec(h, "ALTER TABLE submissions DROP COLUMN event_count;"
                             "ALTER TABLE submissions DROP COLUMN event_bytes;"
                             "DROP TABLE shape_medians; "
                             "ALTER TABLE submissions DROP COLUMN claimed_ms; DROP TABLE queue_usage; DROP TABLE queue_state; "
                             "PRAGMA user_version=6",
                          NULL, NULL, NULL) == SQLITE_OK, "back to version 6: %s", sqlite3_errmsg(h));
    sqlite3_close(h);
    db = NULL;
    KT_CHECK(db_open(p2, &db, &err) == 0, "migrate: %s", err.msg);
    db_close(db);
    KT_CHECK(sqlite3_open(p2, &h) == SQLITE_OK &&
             sqlite3_prepare_v2(h, "SELECT event_count, event_bytes FROM submissions WHERE id = ?", -1, &st,
                                NULL) == SQLITE_OK && sqlite3_bind_int64(st, 1, id) == SQLITE_OK &&
             sqlite3_step(st) == SQLITE_ROW, "read the counters");
    if (st != NULL) {
        cnt = sqlite3_column_int64(st, 0);
        bytes = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    sqlite3_close(h);
    KT_CHECK(cnt == 2 && bytes == (int64_t)(strlen("test") + strlen("{\"a\":1}") + strlen("compiled")),
             "existing events are counted: %lld events, %lld bytes", (long long)cnt, (long long)bytes);
}

/* Column 0 of the first row of sql on h as text into out ("" when none). */
static void sql_text(sqlite3 *h, const char *sql, char *out, size_t outsz)
{
    sqlite3_stmt *st = NULL;
    out[0] = '\0';
    if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
        sqlite3_column_text(st, 0) != NULL)
        snprintf(out, outsz, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
}

/* Version 7 to 8: the medians of results stored before are filled from
 * their text: entries with a shape and a median only, in list order, the
 * raw median equal to the ranked one; a timing protocol v2 result with its
 * correction applied ranks its corrected medians, the raw ones beside
 * them, one without it (timing.corrected false) its raw ones; a result
 * that does not parse, or whose benchmarks are no list, has none. */
static void test_migrate_v7(void)
{
    static const char *const results[] = {
        "{\"benchmarks\": [{\"shape\": {\"T\": 1}, \"median_ns\": 10.5, \"n\": 3},"
        " {\"shape\": {\"T\": 2}}, {\"median_ns\": 4}, {\"shape\": {\"T\": 3}, \"median_ns\": 30}]}",
        "{not json", "{\"benchmarks\": 5}",
        "{\"timing\": {\"protocol\": \"v2\", \"corrected\": true, \"offset_ns\": 50},"
        " \"benchmarks\": [{\"shape\": {\"T\": 1}, \"median_ns\": 7000, \"corrected_median_ns\": 6950},"
        " {\"shape\": {\"T\": 3}, \"median_ns\": 900, \"corrected_median_ns\": 850}]}",
        "{\"timing\": {\"protocol\": \"v2\", \"corrected\": false},"
        " \"benchmarks\": [{\"shape\": {\"T\": 1}, \"median_ns\": 7000, \"corrected_median_ns\": 6950}]}"};
    enum { NRES = sizeof results / sizeof results[0] };
    char p2[160], sql[256], got[256];
    sqlite3 *h = NULL;
    struct db *db = NULL;
    struct db_sub s;
    struct db_rank_row *rows = NULL;
    struct kj_err err;
    char secret[32];
    int64_t ids[NRES];
    int dup = 0, n = 0, ok = 1;
    snprintf(p2, sizeof p2, "%s/v7.db", dir);
    KT_CHECK(db_open(p2, &db, &err) == 0 && db_secret_ensure(db, "fp8_quant", 1, &err) == 0,
             "open: %s", err.msg);
    if (db == NULL)
        return;
    int64_t u = add_user(db, "v7u", "user"), r = add_user(db, "v7r", "runner");
    for (int i = 0; i < NRES; i++) {
        ids[i] = submit(db, u, "V7", "leaderboard");
        ok &= db_job_claim(db, "V7", NULL, r, "v7", &s, secret, sizeof secret, &err) == 0 && s.id == ids[i];
        db_sub_clear(&s);
        ok &= finish(db, ids[i], r, "accepted", 1, 100.0 + i, results[i], &dup, &err) == 0;
    }
    KT_CHECK(ok, "%d finished jobs: %s", NRES, err.msg);
    db_close(db);
    db = NULL;
    KT_CHECK(sqlite3_open(p2, &h) == SQLITE_OK &&
             sqlite3_exec(h, "DROP TABLE shape_medians; " "ALTER TABLE submissions DROP COLUMN claimed_ms; DROP TABLE queue_usage; DROP TABLE queue_state; "
                             "PRAGMA user_version=7", NULL, NULL,
                          NULL) == SQLITE_OK, "back to version 7: %s", sqlite3_errmsg(h));
    sqlite3_close(h);
    KT_CHECK(db_open(p2, &db, &err) == 0, "version 7 migrates: %s", err.msg);
    KT_CHECK(sqlite3_open(p2, &h) == SQLITE_OK, "open with sqlite3");
    static const char medians_sql[] =
        "SELECT group_concat(idx || '=' || shape || '=' || median_ns || '=' || raw_median_ns || "
        "'=' || corrected, ';') FROM (SELECT * FROM shape_medians WHERE submission_id = %lld "
        "ORDER BY idx)";
    snprintf(sql, sizeof sql, medians_sql, (long long)ids[0]);
    sql_text(h, sql, got, sizeof got);
    KT_CHECK(strcmp(got, "0={\"T\":1}=10.5=10.5=0;3={\"T\":3}=30.0=30.0=0") == 0,
             "complete entries only, at their place in the list, raw = median: %s", got);
    snprintf(sql, sizeof sql, medians_sql, (long long)ids[3]);
    sql_text(h, sql, got, sizeof got);
    KT_CHECK(strcmp(got, "0={\"T\":1}=6950.0=7000.0=1;1={\"T\":3}=850.0=900.0=1") == 0,
             "a corrected v2 result: the corrected medians ranked, the raw ones kept: %s", got);
    snprintf(sql, sizeof sql, medians_sql, (long long)ids[4]);
    sql_text(h, sql, got, sizeof got);
    KT_CHECK(strcmp(got, "0={\"T\":1}=7000.0=7000.0=0") == 0,
             "timing.corrected false: the raw medians ranked: %s", got);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM shape_medians WHERE submission_id IN (%lld, %lld)",
             (long long)ids[1], (long long)ids[2]);
    sql_text(h, sql, got, sizeof got);
    KT_CHECK(strcmp(got, "0") == 0, "a malformed result and benchmarks that are no list: none (%s)",
             got);
    sqlite3_close(h);
    KT_CHECK(db != NULL && db_rank_rows(db, "fp8_quant", "V7", &rows, &n, &err) == 0 && n == 1 &&
             rows[0].submission_id == ids[0] && rows[0].nmedians == 2 &&
             rows[0].medians[1].median_ns == 30, "the rankings read the migrated medians");
    db_rank_rows_free(rows, n);
    db_close(db);
}

/* A new database's CHECK lists are protocol.h's name tables: every name is
 * accepted, anything else refused. */
static void test_check_lists(void)
{
    char p2[160], sql[64];
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    struct db *db = NULL;
    struct db_sub s;
    struct kj_err err;
    const char *text = NULL;
    int found = 0, rc;
    snprintf(p2, sizeof p2, "%s/lists.db", dir);
    KT_CHECK(db_open(p2, &db, &err) == 0, "open: %s", err.msg);
    if (db == NULL)
        return;
    KT_CHECK(sqlite3_open(p2, &h) == SQLITE_OK &&
             sqlite3_prepare_v2(h, "SELECT sql FROM sqlite_master WHERE name = 'submissions'", -1,
                                &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
             (text = (const char *)sqlite3_column_text(st, 0)) != NULL, "read the schema");
    for (int m = 0; text != NULL && m < KJ_MODE_COUNT; m++) {
        snprintf(sql, sizeof sql, "'%s'", kj_mode_name((enum kj_mode)m));
        found += strstr(text, sql) != NULL;
    }
    for (int v = 0; text != NULL && v < KJ_V_COUNT; v++) {
        snprintf(sql, sizeof sql, "'%s'", kj_verdict_name((enum kj_verdict)v));
        found += strstr(text, sql) != NULL;
    }
    KT_CHECK(found == KJ_MODE_COUNT + KJ_V_COUNT, "every mode and verdict is in the CHECK lists "
             "(%d of %d)", found, KJ_MODE_COUNT + KJ_V_COUNT);
    sqlite3_finalize(st);
    memset(&s, 0, sizeof s);
    s.user_id = add_user(db, "lists", "user");
    snprintf(s.leaderboard, sizeof s.leaderboard, "b");
    snprintf(s.gpu, sizeof s.gpu, "H200");
    s.mode = KJ_MODE_COUNT; /* no mode: stored as "?" */
    s.source = "x";
    s.source_len = 1;
    KT_CHECK(db_sub_insert(db, &s, &err) != 0, "the CHECK refuses a mode outside the table");
    /* A row the CHECK would refuse, written around it: read back as an
     * error, not a crash. */
    s.mode = KJ_MODE_TEST;
    KT_CHECK(db_sub_insert(db, &s, &err) == 0, "insert: %s", err.msg);
    rc = sqlite3_exec(h, "PRAGMA ignore_check_constraints = ON; UPDATE submissions SET "
                      "mode = 'bogus'", NULL, NULL, NULL);
    KT_CHECK(rc == SQLITE_OK, "write a bad mode: %s", sqlite3_errmsg(h));
    sqlite3_close(h);
    memset(&s, 0, sizeof s);
    KT_CHECK(db_sub_get(db, 1, 0, &s, &err) == KJ_EINTERNAL && strstr(err.msg, "bogus") != NULL,
             "an unknown mode in a row is KJ_EINTERNAL: %s", err.msg);
    db_close(db);
}

/* Schema version 11: a version-10 database (no lang column) migrates with
 * its rows as CUDA; a Python submission is stored and read back as such,
 * also in the rankings rows; the CHECK refuses a language outside the list
 * and a row written around it reads back as an error. */
static void test_migrate_v10_lang(void)
{
    char p2[160];
    sqlite3 *h = NULL;
    struct db *db = NULL;
    struct db_sub s;
    struct kj_err err;
    int64_t u, old, py;
    snprintf(p2, sizeof p2, "%s/v10.db", dir);
    KT_CHECK(db_open(p2, &db, &err) == 0, "open: %s", err.msg);
    if (db == NULL)
        return;
    u = add_user(db, "lu", "user");
    old = submit(db, u, "H200", "test");
    db_close(db);
    KT_CHECK(sqlite3_open(p2, &h) == SQLITE_OK &&
             sqlite3_exec(h, "ALTER TABLE submissions DROP COLUMN lang; PRAGMA user_version=10",
                          NULL, NULL, NULL) == SQLITE_OK, "back to version 10: %s",
             sqlite3_errmsg(h));
    sqlite3_close(h);
    db = NULL;
    KT_CHECK(db_open(p2, &db, &err) == 0, "migrate: %s", err.msg);
    if (db == NULL)
        return;
    memset(&s, 0, sizeof s);
    KT_CHECK(db_sub_get(db, old, 0, &s, &err) == 0 && s.lang == 0, "an old row is CUDA: rc "
             "lang %d %s", s.lang, err.msg);
    memset(&s, 0, sizeof s);
    s.user_id = u;
    snprintf(s.leaderboard, sizeof s.leaderboard, "fp8_quant");
    snprintf(s.gpu, sizeof s.gpu, "H200");
    s.mode = KJ_MODE_TEST;
    snprintf(s.file_name, sizeof s.file_name, "k.py");
    s.source = "def custom_kernel(d):\n  return d\n";
    s.source_len = strlen(s.source);
    s.lang = 1; /* SUB_LANG_PYTHON */
    KT_CHECK(db_sub_insert(db, &s, &err) == 0, "insert python: %s", err.msg);
    py = s.id;
    memset(&s, 0, sizeof s);
    KT_CHECK(db_sub_get(db, py, 0, &s, &err) == 0 && s.lang == 1, "read back as Python: %d %s",
             s.lang, err.msg);
    memset(&s, 0, sizeof s);
    s.user_id = u;
    s.source = "x";
    s.source_len = 1;
    s.lang = 99; /* no such language: stored as "?" */
    KT_CHECK(db_sub_insert(db, &s, &err) != 0, "the CHECK refuses a language outside the list");
    KT_CHECK(sqlite3_open(p2, &h) == SQLITE_OK &&
             sqlite3_exec(h, "PRAGMA ignore_check_constraints = ON; UPDATE submissions SET "
                          "lang = 'fortran' WHERE id = 1", NULL, NULL, NULL) == SQLITE_OK,
             "write a bad language: %s", sqlite3_errmsg(h));
    sqlite3_close(h);
    memset(&s, 0, sizeof s);
    KT_CHECK(db_sub_get(db, old, 0, &s, &err) == KJ_EINTERNAL && strstr(err.msg, "fortran") != NULL,
             "an unknown language in a row is KJ_EINTERNAL: %s", err.msg);
    db_close(db);
}

/* Version 14's data: a stored result's timing is its timing.protocol (none:
 * v1) and timing.version (none: 1); each ranking takes its newest ranked
 * result's timing, and ranks only results at it. */
static void test_migrate_v14_timing(void)
{
    static const char rows[] =
        "INSERT INTO submissions(user_id, leaderboard, gpu, mode, file_name, source, "
        "source_sha256, status, verdict, score_ns, result, created_at, finished_at) VALUES "
        "(%lld, 'fp8_quant', 'H200', 'leaderboard', 'k.cu', 'x', 'h', 'done', 'accepted', 100, "
        "'{\"timing\":{\"protocol\":\"v2\"}}', 1, 1),"
        "(%lld, 'fp8_quant', 'H200', 'leaderboard', 'k.cu', 'x', 'h', 'done', 'accepted', 50, "
        "'{\"score_ns\":50}', 2, 2),"
        "(%lld, 'fp8_quant', 'H200', 'leaderboard', 'k.cu', 'x', 'h', 'done', 'accepted', 70, "
        "'{\"timing\":{\"protocol\":\"v2\"}}', 3, 3),"
        "(%lld, 'fp8_quant', 'H200', 'test', 'k.cu', 'x', 'h', 'done', 'accepted', NULL, "
        "'{}', 4, 4);"
        "DROP TABLE result_history; DROP TABLE rank_timing; DROP TABLE rejudges;"
        "DROP INDEX submissions_rejudge;"
        "ALTER TABLE submissions DROP COLUMN timing_protocol;"
        "ALTER TABLE submissions DROP COLUMN timing_version;"
        "ALTER TABLE submissions DROP COLUMN rejudge_id;"
        "ALTER TABLE submissions DROP COLUMN rejudge_of; PRAGMA user_version=12";
    char p2[160], sql[sizeof rows + 128], got[256] = "";
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    struct db *db = NULL;
    struct db_rank_row *rk = NULL;
    struct kj_err err;
    int64_t a, b, c;
    int n = -1;
    snprintf(p2, sizeof p2, "%s/v14.db", dir);
    KT_CHECK(db_open(p2, &db, &err) == 0, "open: %s", err.msg);
    if (db == NULL)
        return;
    a = add_user(db, "ta", "user");
    b = add_user(db, "tb", "user");
    c = add_user(db, "tc", "user");
    db_close(db);
    db = NULL;
    snprintf(sql, sizeof sql, rows, (long long)a, (long long)b, (long long)c, (long long)a);
    KT_CHECK(sqlite3_open(p2, &h) == SQLITE_OK &&
             sqlite3_exec(h, sql, NULL, NULL, NULL) == SQLITE_OK, "four results at version 12: %s",
             sqlite3_errmsg(h));
    sqlite3_close(h);
    KT_CHECK(db_open(p2, &db, &err) == 0, "migrate: %s", err.msg);
    if (db == NULL)
        return;
    KT_CHECK(sqlite3_open(p2, &h) == SQLITE_OK &&
             sqlite3_prepare_v2(h, "SELECT group_concat(coalesce(timing_protocol, '-') || '/' || "
                                "coalesce(timing_version, '-'), ' ') || ' ' || (SELECT protocol "
                                "|| '/' || version FROM rank_timing) FROM (SELECT * FROM "
                                "submissions ORDER BY id)", -1, &st, NULL) == SQLITE_OK &&
             sqlite3_step(st) == SQLITE_ROW, "read the timings: %s", sqlite3_errmsg(h));
    if (st != NULL && sqlite3_column_text(st, 0) != NULL)
        snprintf(got, sizeof got, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(h);
    KT_CHECK(strcmp(got, "v2/1 v1/1 v2/1 -/- v2/1") == 0, "timings v2/1 v1/1 v2/1, none for the "
             "test-mode result, the ranking at its newest's: %s", got);
    KT_CHECK(db_rank_rows(db, "fp8_quant", "H200", &rk, &n, &err) == 0 && n == 2 &&
             rk[0].score_ns == 70 && rk[1].score_ns == 100, "the ranking: the two v2 results "
             "only (%d rows) %s", n, err.msg);
    db_rank_rows_free(rk, n);
    db_close(db);
}

/* PRAGMA max_page_count makes SQLite answer SQLITE_FULL as on a full disk. */
static void test_storage_full(void)
{
    char p3[160], why[160] = "", *big = malloc(256 * 1024);
    struct db *db = NULL;
    struct db_sub s;
    struct kj_err err;
    int64_t count = -1;
    snprintf(p3, sizeof p3, "%s/full.db", dir);
    if (big == NULL || db_open(p3, &db, &err) != 0) {
        KT_CHECK(0, "open %s: %s", p3, err.msg);
        free(big);
        return;
    }
    int64_t u = add_user(db, "filler", "user");
    KT_CHECK(db_storage_check(db, why, sizeof why, &err) == 0, "a fresh database is writable: %s", why);
    KT_CHECK(sqlite3_exec(db->h, "PRAGMA max_page_count = 40", NULL, NULL, NULL) == SQLITE_OK,
             "cap the database's size");
    memset(big, 'x', 256 * 1024);
    memset(&s, 0, sizeof s);
    s.user_id = u;
    snprintf(s.leaderboard, sizeof s.leaderboard, "fp8_quant");
    snprintf(s.gpu, sizeof s.gpu, "H200");
    s.mode = KJ_MODE_TEST;
    snprintf(s.file_name, sizeof s.file_name, "big.cu");
    snprintf(s.source_sha256, sizeof s.source_sha256, "%064d", 1);
    s.source = big;
    s.source_len = 256 * 1024;
    int rc = db_sub_insert(db, &s, &err);
    KT_CHECK(rc == KJ_ESTORAGE && strcmp(db_storage_reason(db), "disk full") == 0,
             "a row that does not fit -> KJ_ESTORAGE, disk full: %d %s", rc, err.msg);
    KT_CHECK(atomic_load(&db->storage_fail_ms) > 0, "the failure is remembered");
    KT_CHECK(db_sub_count(db, DB_QUEUED, &count, &err) == 0 && count == 0, "nothing was stored: %lld",
             (long long)count);
    KT_CHECK(db_storage_check(db, why, sizeof why, &err) == 0 && atomic_load(&db->storage_fail_ms) == 0,
             "a probe write that works forgets the failure: %s", why);
    s.source_len = 100;
    KT_CHECK(db_sub_insert(db, &s, &err) == 0, "a row that fits is stored: %s", err.msg);
    db_close(db);
    free(big);
}
int main(int argc, char **argv)
{
    kt_init(argc, argv);
    if (mkdtemp(dir) == NULL)
        return 1;
    KT_RUN(test_newer_schema());
    KT_RUN(test_migrate_v6());
    KT_RUN(test_migrate_v7());
    KT_RUN(test_check_lists());
    KT_RUN(test_migrate_v10_lang());
    KT_RUN(test_migrate_v14_timing());
    KT_RUN(test_storage_full());
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return kt_done("test_db_schema");
}
