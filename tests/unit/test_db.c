/*
 * test_db.c - unit tests for server/db.c and server/db_sub.c.
 *
 * Against a temporary SQLite file: schema creation and re-open, users and
 * name conflicts, the admin row, secret seeds, the submission state
 * machine (queued -> running -> done) with every refused transition,
 * events, listing, ranking rows, claims racing from several connections
 * (each job claimed exactly once), group commits of submissions from many
 * threads (every row stored once, the rate limit exact within a batch),
 * the published-sources table, runner tokens bound to GPU types, and a
 * job's events: read from a cursor in bounded batches, capped per job
 * (count and bytes; a refused event stores nothing), and a claim's filter
 * (modes, skip): the queue rule picking among the jobs it allows by every
 * user's usage, the class streak moved as by any claim; a heartbeat's
 * gpu_start restarting a job's fair-share charge. The schema's
 * migrations and limits are in test_db_schema.c.
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

static char dir[] = "/tmp/kj_test_db.XXXXXX";
static char path[128];

static void test_users(struct db *db)
{
    struct kj_err err;
    struct db_user u;
    char hash[DB_HASH_HEX];
    add_user(db, "alice", "user");
    snprintf(hash, sizeof hash, "%064d", 42);
    KT_CHECK(db_user_add(db, "alice", "user", hash, NULL, &err) == KJ_ECONFLICT, "duplicate name");
    KT_CHECK(db_user_add(db, "zed", "superuser", hash, NULL, &err) != 0, "bad role refused");
    KT_CHECK(db_user_set_admin(db, hash, &err) == 0, "admin row");
    snprintf(hash, sizeof hash, "%064d", 43);
    KT_CHECK(db_user_set_admin(db, hash, &err) == 0, "admin row updated");
    KT_CHECK(db_user_by_hash(db, hash, &u, &err) == 0 && strcmp(u.name, "admin") == 0 &&
             strcmp(u.role, "admin") == 0, "admin found by its new hash");
    snprintf(hash, sizeof hash, "%064d", 42);
    KT_CHECK(db_user_by_hash(db, hash, &u, &err) == KJ_ENOTFOUND, "old admin hash is gone");
}

static void test_secrets(struct db *db)
{
    char a[32], b[32];
    struct kj_err err;
    KT_CHECK(db_secret_ensure(db, "fp8_quant", 18446744073709551615ULL, &err) == 0, "ensure");
    KT_CHECK(db_secret_get(db, "fp8_quant", a, sizeof a, &err) == 0 &&
             strcmp(a, "18446744073709551615") == 0, "get: the seed as a decimal: %s", a);
    KT_CHECK(db_secret_ensure(db, "fp8_quant", 7, &err) == 0 &&
             db_secret_get(db, "fp8_quant", b, sizeof b, &err) == 0 && strcmp(a, b) == 0,
             "ensure keeps the existing secret");
    KT_CHECK(db_secret_get(db, "nope", a, sizeof a, &err) == KJ_ENOTFOUND, "unknown board");
}

static void test_lifecycle(struct db *db)
{
    struct kj_err err;
    struct db_sub s;
    char secret[32];
    int dup = 0;
    int64_t u = add_user(db, "bob", "user"), r1 = add_user(db, "r1", "runner"),
            r2 = add_user(db, "r2", "runner");
    int64_t a = submit(db, u, "H200", "test"), b = submit(db, u, "B200", "leaderboard"),
            c = submit(db, u, "H200", "leaderboard");

    KT_CHECK(db_sub_get(db, a, 1, &s, &err) == 0 && s.status == DB_QUEUED &&
             s.source_len == 7 && strcmp(s.source, "int x;\n") == 0 && strcmp(s.user, "bob") == 0,
             "queued row with source");
    db_sub_clear(&s);
    KT_CHECK(finish(db, a, r1, "accepted", 0, 0, "{}", &dup, &err) == KJ_ECONFLICT,
             "a queued job cannot be finished");
    KT_CHECK(event(db, a, r1, "compiled", NULL, &err) == KJ_ECONFLICT, "no events while queued");
    KT_CHECK(db_job_claim(db, "H200", NULL, r1, "h0", &s, secret, sizeof secret, &err) == 0 && s.id == a &&
             s.status == DB_RUNNING && s.source != NULL && secret[0] == '\0',
             "claim takes the oldest H200 job, no secret for test mode");
    db_sub_clear(&s);
    KT_CHECK(db_job_claim(db, "H200", NULL, r2, "h1", &s, secret, sizeof secret, &err) == 0 && s.id == c &&
             secret[0] != '\0', "the next claim takes the leaderboard job with its secret");
    db_sub_clear(&s);
    KT_CHECK(db_job_claim(db, "H200", NULL, r2, "h1", &s, secret, sizeof secret, &err) == KJ_ENOTFOUND,
             "nothing left for H200");
    KT_CHECK(event(db, a, r1, "compiled", "{\"ok\":true}", &err) == 0 &&
             event(db, a, r1, "test", NULL, &err) == 0, "events");
    KT_CHECK(event(db, a, r2, "test", NULL, &err) == KJ_ECONFLICT, "event from another runner");
    KT_CHECK(finish(db, a, r2, "accepted", 1, 10.0, "{}", &dup, &err) == KJ_ECONFLICT,
             "finish by another runner");
    KT_CHECK(finish(db, a, r1, "accepted", 1, 10.0, "{\"verdict\":\"accepted\"}", &dup, &err) == 0 &&
             !dup, "finish");
    KT_CHECK(finish(db, a, r1, "wrong_answer", 0, 0, "{}", &dup, &err) == 0 && dup,
             "a second finish is a duplicate");
    KT_CHECK(db_sub_get(db, a, 1, &s, &err) == 0 && s.has_verdict && s.verdict == KJ_V_ACCEPTED &&
             s.has_score && s.score_ns == 10.0 && s.finished_at > 0 && s.result != NULL,
             "the duplicate changed nothing");
    db_sub_clear(&s);
    KT_CHECK(finish(db, 9999, r1, "accepted", 0, 0, "{}", &dup, &err) == KJ_ENOTFOUND, "unknown job");
    KT_CHECK(finish(db, c, r2, "bogus", 0, 0, "{}", &dup, &err) != 0, "the CHECK refuses a bad verdict");
    KT_CHECK(db_sub_get(db, c, 0, &s, &err) == 0 && s.status == DB_RUNNING,
             "a refused finish leaves the job running");

    struct db_event *ev = NULL;
    int n = 0;
    KT_CHECK(db_events_list(db, a, &ev, &n, &err) == 0 && n == 2 && ev[0].seq == 1 && ev[1].seq == 2 &&
             ev[0].event == KJ_EV_COMPILED && ev[1].data == NULL, "events in order");
    db_events_free(ev, n);

    struct db_sub *rows = NULL;
    KT_CHECK(db_sub_list(db, u, 10, &rows, &n, &err) == 0 && n == 3 && rows[0].id == c &&
             rows[2].id == a && rows[0].source == NULL, "list newest first, no blobs");
    db_sub_list_free(rows, n);
    int64_t cnt = 0;
    KT_CHECK(db_sub_count(db, DB_QUEUED, &cnt, &err) == 0 && cnt == 1, "one queued (B200)");
    (void)b;
}

static void test_rank_rows(struct db *db)
{
    struct kj_err err;
    struct db_sub s;
    char secret[32];
    int dup, n = 0;
    int64_t r = add_user(db, "rr", "runner"), u1 = add_user(db, "u1", "user"), u2 = add_user(db, "u2", "user");
    double scores[][2] = {{300, 0}, {100, 0}, {200, 0}};
    int64_t owners[] = {u1, u1, u2};
    for (int i = 0; i < 3; i++) {
        submit(db, owners[i], "X1", "leaderboard");
        KT_CHECK(db_job_claim(db, "X1", NULL, r, "rr", &s, secret, sizeof secret, &err) == 0, "claim");
        finish(db, s.id, r, "accepted", 1, scores[i][0], "{}", &dup, &err);
        db_sub_clear(&s);
    }
    submit(db, u2, "X1", "leaderboard");
    KT_CHECK(db_job_claim(db, "X1", NULL, r, "rr", &s, secret, sizeof secret, &err) == 0, "claim");
    finish(db, s.id, r, "wrong_answer", 1, 1.0, "{}", &dup, &err);
    db_sub_clear(&s);
    struct db_rank_row *rows = NULL;
    KT_CHECK(db_rank_rows(db, "fp8_quant", "X1", &rows, &n, &err) == 0 && n == 2, "two users ranked: %d", n);
    if (n == 2)
        KT_CHECK(strcmp(rows[0].user, "u1") == 0 && rows[0].score_ns == 100 &&
                 strcmp(rows[1].user, "u2") == 0 && rows[1].score_ns == 200,
                 "best per user, wrong answers ignored");
    db_rank_rows_free(rows, n);
}

/* A finished job's medians are numbers the rankings read back (the ranked
 * one, the raw one and whether it was corrected); an internal_error that is
 * retried stores none of its result. */
static void test_rank_medians(struct db *db)
{
    struct kj_err err;
    struct db_sub s;
    struct db_rank_row *rows = NULL;
    char secret[32], shape0[] = "{\"T\":1}", shape2[] = "{\"T\":3}";
    struct db_median m[] = {{0, 10.5, 10.5, 0, shape0, 0}, {2, 30, 30.25, 1, shape2, 0}};
    /* The result names shape 2's floor (its benchmarks carry their index);
     * shape 0's is not a number: no floor. */
    struct db_result ok = {KJ_V_ACCEPTED, 1, 17.5, "{\"verdict\":\"accepted\",\"benchmarks\":["
                           "{\"index\":0,\"floor_ns\":\"x\"},{\"index\":2,\"floor_ns\":12.5}]}", m, 2};
    struct db_result bad = {KJ_V_INTERNAL, 0, 0, "{\"verdict\":\"internal_error\"}", m, 2};
    enum db_finish outcome;
    int n = 0;
    int64_t u = add_user(db, "medu", "user"), r = add_user(db, "medr", "runner");
    int64_t id = submit(db, u, "X2", "leaderboard");
    struct db_job_ref ref = {id, r, 0};
    KT_CHECK(db_job_claim(db, "X2", NULL, r, "mr", &s, secret, sizeof secret, &err) == 0, "claim: %s",
             err.msg);
    db_sub_clear(&s);
    KT_CHECK(db_job_finish(db, &ref, &bad, &outcome, &err) == 0 && outcome == DB_FINISH_REQUEUED,
             "internal_error: queued again");
    KT_CHECK(db_job_claim(db, "X2", NULL, r, "mr", &s, secret, sizeof secret, &err) == 0, "claim again");
    db_sub_clear(&s);
    KT_CHECK(db_job_finish(db, &ref, &ok, &outcome, &err) == 0 && outcome == DB_FINISH_DONE,
             "finish: %s", err.msg);
    KT_CHECK(db_rank_rows(db, "fp8_quant", "X2", &rows, &n, &err) == 0 && n == 1 &&
             rows[0].nmedians == 2, "one ranked row with its two medians: %d", n);
    if (n == 1 && rows[0].nmedians == 2)
        KT_CHECK(rows[0].medians[0].idx == 0 && rows[0].medians[0].median_ns == 10.5 &&
                 rows[0].medians[0].raw_median_ns == 10.5 && !rows[0].medians[0].corrected &&
                 strcmp(rows[0].medians[0].shape, shape0) == 0 && rows[0].medians[1].idx == 2 &&
                 rows[0].medians[1].median_ns == 30 && rows[0].medians[1].raw_median_ns == 30.25 &&
                 rows[0].medians[1].corrected && strcmp(rows[0].medians[1].shape, shape2) == 0,
                 "the medians as stored, in index order");
    if (n == 1 && rows[0].nmedians == 2)
        KT_CHECK(rows[0].medians[0].floor_ns == 0 && rows[0].medians[1].floor_ns == 12.5,
                 "each median's floor from the result, by the benchmark's index (none when not a "
                 "number): %g %g", rows[0].medians[0].floor_ns, rows[0].medians[1].floor_ns);
    db_rank_rows_free(rows, n);
}

/* The lease sweep: a silent runner's job goes back to the queue twice, then
 * fails; what it writes (the "queued" events, the result and the "verdict"
 * event) is JSON. */
static void test_sweep(struct db *db)
{
    struct kj_err err;
    struct db_sub s;
    struct db_event *ev = NULL;
    struct db_expired *ex = NULL;
    char secret[32];
    int n = 0, nev = 0, ok = 1;
    int64_t u = add_user(db, "swu", "user"), r = add_user(db, "swr", "runner");
    int64_t id = submit(db, u, "SW1", "test");
    db_job_set_lease(db, 1000);
    for (int attempt = 1; attempt <= DB_MAX_ATTEMPTS; attempt++) {
        ok &= db_job_claim(db, "SW1", NULL, r, "sw", &s, secret, sizeof secret, &err) == 0 && s.id == id;
        db_sub_clear(&s);
        ok &= db_job_sweep(db, db_now_ms() + 5000, &ex, &n, &err) == 0 && n == 1 &&
              ex[0].id == id && ex[0].attempts == attempt &&
              ex[0].failed == (attempt == DB_MAX_ATTEMPTS);
        free(ex);
        ex = NULL;
    }
    db_job_set_lease(db, DB_LEASE_DEFAULT_MS);
    KT_CHECK(ok, "requeued twice, then failed: %s", err.msg);
    KT_CHECK(db_sub_get(db, id, 1, &s, &err) == 0 && s.status == DB_DONE &&
             s.verdict == KJ_V_INTERNAL && s.result != NULL &&
             strcmp(s.result, "{\"verdict\":\"internal_error\",\"message\":\"the runner stopped "
                    "answering 3 times\",\"score_ns\":null}") == 0 &&
             strcmp(s.reason, "the runner stopped answering 3 times") == 0,
             "done as internal_error: %s", s.result != NULL ? s.result : "");
    db_sub_clear(&s);
    KT_CHECK(db_events_list(db, id, &ev, &nev, &err) == 0 && nev == 3 &&
             ev[0].event == KJ_EV_QUEUED && ev[2].event == KJ_EV_VERDICT &&
             strcmp(ev[0].data, "{\"position\":1,\"attempt\":2,\"reason\":\"the runner stopped "
                    "answering\"}") == 0 &&
             strcmp(ev[2].data, "{\"verdict\":\"internal_error\",\"message\":\"the runner "
                    "stopped answering 3 times\"}") == 0, "the events: %s / %s",
             nev > 0 ? ev[0].data : "", nev > 2 ? ev[2].data : "");
    db_events_free(ev, nev);
}

struct racer { int64_t runner; int claimed[64]; int n; };

static void *race(void *arg)
{
    struct racer *rc = arg;
    struct db *db = NULL;
    struct db_sub s;
    struct kj_err err;
    char secret[32];
    if (db_open(path, &db, &err) != 0)
        return NULL;
    while (rc->n < 64 && db_job_claim(db, "RACE", NULL, rc->runner, "r", &s, secret, sizeof secret, &err) == 0) {
        rc->claimed[rc->n++] = (int)s.id;
        db_sub_clear(&s);
    }
    db_close(db);
    return NULL;
}

static void test_race(struct db *db)
{
    struct racer rs[4];
    pthread_t th[4];
    int64_t u = add_user(db, "racer", "user"), total = 0;
    for (int i = 0; i < 40; i++)
        submit(db, u, "RACE", "test");
    for (int i = 0; i < 4; i++) {
        char name[16];
        snprintf(name, sizeof name, "race%d", i);
        memset(&rs[i], 0, sizeof rs[i]);
        rs[i].runner = add_user(db, name, "runner");
        pthread_create(&th[i], NULL, race, &rs[i]);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    int seen[4096] = {0}, twice = 0;
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < rs[i].n; k++) {
            twice += seen[rs[i].claimed[k]]++ > 0;
            total++;
        }
    KT_CHECK(total == 40 && twice == 0, "40 jobs claimed exactly once by 4 connections (%lld, %d twice)",
             (long long)total, twice);
}

/* Runner tokens bound to GPU types (schema 5), and a version-4 runner
 * token migrated unbound. */
static void test_runner_gpus(struct db *db)
{
    char gpus[128], p2[160], hash[DB_HASH_HEX];
    struct db_user u;
    struct db *old = NULL;
    sqlite3 *h = NULL;
    struct kj_err err;
    snprintf(hash, sizeof hash, "%064d", 42);
    KT_CHECK(db_runner_add(db, "gpu-r", hash, "H200,B200", &err) == 0, "runner add: %s", err.msg);
    KT_CHECK(db_runner_add(db, "gpu-r", "x", "H200", &err) == KJ_ECONFLICT, "a taken name");
    KT_CHECK(db_user_by_name(db, "gpu-r", &u, &err) == 0 && strcmp(u.role, "runner") == 0,
             "the runner exists");
    KT_CHECK(db_runner_gpus(db, u.id, gpus, sizeof gpus, &err) == 0 &&
             strcmp(gpus, "H200,B200") == 0, "its GPU types: %s", gpus);
    KT_CHECK(db_runner_bind(db, "gpu-r", "B200", &err) == 0 &&
             db_runner_gpus(db, u.id, gpus, sizeof gpus, &err) == 0 && strcmp(gpus, "B200") == 0,
             "bind replaces them: %s", gpus);
    KT_CHECK(db_runner_bind(db, "alice", "H200", &err) == KJ_ENOTFOUND, "a user is not a runner");
    KT_CHECK(db_runner_bind(db, "nobody", "H200", &err) == KJ_ENOTFOUND, "an unknown name");
    KT_CHECK(db_runner_gpus(db, 999999, gpus, sizeof gpus, &err) == KJ_ENOTFOUND, "an unknown id");
    /* A version-4 database with a runner token: it opens, unbound. */
    snprintf(p2, sizeof p2, "%s/v4.db", dir);
    KT_CHECK(db_open(p2, &old, &err) == 0, "make a database: %s", err.msg);
    db_close(old);
    old = NULL;
    KT_CHECK(sqlite3_open(p2, &h) == SQLITE_OK &&
             sqlite3_exec(h, "ALTER TABLE users DROP COLUMN runner_gpus; "
                          "ALTER TABLE submissions DROP COLUMN withdrawn_at; "
                          "ALTER TABLE submissions DROP COLUMN event_count; "
                          "ALTER TABLE submissions DROP COLUMN event_bytes; DROP TABLE shape_medians; "
                          "ALTER TABLE submissions DROP COLUMN claimed_ms; DROP TABLE queue_usage; DROP TABLE queue_state; "
                          "PRAGMA user_version=4; "
                          "INSERT INTO users(name, role, token_hash, created_at) VALUES "
                          "('old', 'runner', 'h', 0)", NULL, NULL, NULL) == SQLITE_OK,
             "turn it into version 4 with a runner: %s", sqlite3_errmsg(h));
    sqlite3_close(h);
    KT_CHECK(db_open(p2, &old, &err) == 0, "version 4 migrates: %s", err.msg);
    KT_CHECK(old != NULL && db_user_by_name(old, "old", &u, &err) == 0 &&
             db_runner_gpus(old, u.id, gpus, sizeof gpus, &err) == 0 && gpus[0] == '\0',
             "the old runner token is bound to nothing");
    KT_CHECK(old != NULL && db_runner_bind(old, "old", "H200", &err) == 0 &&
             db_runner_gpus(old, u.id, gpus, sizeof gpus, &err) == 0 && strcmp(gpus, "H200") == 0,
             "until it is bound");
    db_close(old);
}

struct gc_arg {
    struct db *db;
    int64_t user;
    int limit;
    int ok, limited, failed;
    int64_t ids[20];
};

static void *gc_thread(void *p)
{
    struct gc_arg *a = p;
    for (int i = 0; i < 20; i++) {
        struct db_sub s;
        struct kj_err err;
        int retry = 0, rc;
        memset(&s, 0, sizeof s);
        s.user_id = a->user;
        snprintf(s.leaderboard, sizeof s.leaderboard, "gc_board");
        snprintf(s.gpu, sizeof s.gpu, "H200");
        s.mode = KJ_MODE_TEST;
        snprintf(s.file_name, sizeof s.file_name, "k.cu");
        s.source = "int y;\n";
        s.source_len = 7;
        rc = db_sub_insert_limited(a->db, &s, a->limit, 60, &retry, &err);
        if (rc == 0)
            a->ids[a->ok++] = s.id;
        else if (rc == KJ_ELIMIT && retry >= 1)
            a->limited++;
        else
            a->failed++;
    }
    return NULL;
}

/* Eight threads insert at once: rows share commits, each is stored once,
 * and a shared user's limit of 25 lets exactly 25 through. */
static void test_group_commit(struct db *db)
{
    struct gc_arg a[8];
    pthread_t t[8];
    int64_t shared = add_user(db, "gc_shared", "user"), total = 0;
    int ok = 0, limited = 0, failed = 0, dup = 0, has = 0;
    struct kj_err err;
    for (int i = 0; i < 8; i++) {
        char name[16];
        snprintf(name, sizeof name, "gc_%d", i);
        memset(&a[i], 0, sizeof a[i]);
        a[i].db = db;
        a[i].user = i < 4 ? add_user(db, name, "user") : shared;
        a[i].limit = i < 4 ? 0 : 25;
        pthread_create(&t[i], NULL, gc_thread, &a[i]);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        failed += a[i].failed;
        if (i >= 4) {
            ok += a[i].ok;
            limited += a[i].limited;
        } else {
            total += a[i].ok;
        }
    }
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < a[i].ok; j++)
            for (int k = i; k < 8; k++)
                for (int l = k == i ? j + 1 : 0; l < a[k].ok; l++)
                    dup += a[i].ids[j] == a[k].ids[l];
    KT_CHECK(failed == 0 && total == 80, "unlimited users: 80 rows, %d failed", failed);
    KT_CHECK(ok == 25 && limited == 55, "a limit of 25 across 4 threads: %d stored, %d limited", ok,
             limited);
    KT_CHECK(dup == 0, "every id is distinct (%d duplicates)", dup);
    KT_CHECK(db_board_has_subs(db, "gc_board", &has, &err) == 0 && has, "the board has rows");
}

static void test_published(struct db *db)
{
    struct kj_err err;
    int64_t at = -1, at2 = 0;
    int already = -1, has = 1;
    KT_CHECK(db_published(db, "pub", &at, &err) == 0 && at == 0, "not published at first");
    KT_CHECK(db_publish(db, "pub", 1, &at, &already, &err) == 0 && at > 0 && already == 0,
             "publish: %s", err.msg);
    KT_CHECK(db_publish(db, "pub", 1, &at2, &already, &err) == 0 && at2 == at && already == 1,
             "publishing again keeps the first time");
    KT_CHECK(db_published(db, "pub", &at2, &err) == 0 && at2 == at, "read back");
    KT_CHECK(db_board_has_subs(db, "no_such_board", &has, &err) == 0 && has == 0, "an empty board");
}

/* Events of a running job held by r on a fresh H200 submission of u; returns the id. */
static void test_event_cursor(struct db *db)
{
    struct kj_err err;
    struct db_event *ev = NULL;
    char data[2048];
    enum kj_event last = KJ_EV_QUEUED;
    int64_t u = add_user(db, "evu", "user"), r = add_user(db, "evr", "runner"), seq = -1;
    int64_t id = running_job(db, u, r);
    int n = 0, more = 0, ok = 1;
    for (int i = 1; i <= 10; i++) {
        snprintf(data, sizeof data, "{\"i\":%d,\"pad\":\"%0*d\"}", i, 990, 0);
        ok &= event(db, id, r, i == 10 ? "verdict" : "test", data, &err) == 0;
    }
    KT_CHECK(ok, "ten events of about 1 KB: %s", err.msg);
    KT_CHECK(db_events_after(db, id, 0, 4, 1 << 20, &ev, &n, &more, &err) == 0 && n == 4 && more &&
             ev[0].seq == 1 && ev[3].seq == 4, "a batch stops at max_events and says more");
    db_events_free(ev, n);
    KT_CHECK(db_events_after(db, id, 4, 100, 2500, &ev, &n, &more, &err) == 0 && n == 2 && more &&
             ev[0].seq == 5 && ev[1].seq == 6, "and at max_bytes, after the cursor");
    db_events_free(ev, n);
    KT_CHECK(db_events_after(db, id, 6, 100, 10, &ev, &n, &more, &err) == 0 && n == 1 && more &&
             ev[0].seq == 7, "one event always comes, however large");
    db_events_free(ev, n);
    KT_CHECK(db_events_after(db, id, 7, 100, 1 << 20, &ev, &n, &more, &err) == 0 && n == 3 && !more &&
             ev[2].seq == 10, "the rest, and no more");
    db_events_free(ev, n);
    KT_CHECK(db_events_after(db, id, 10, 100, 1 << 20, &ev, &n, &more, &err) == 0 && n == 0 && !more &&
             ev == NULL, "nothing after the last");
    KT_CHECK(db_event_last(db, id, &seq, &last, &err) == 0 && seq == 10 && last == KJ_EV_VERDICT,
             "the last event");
    KT_CHECK(db_event_last(db, 999999, &seq, &last, &err) == 0 && seq == 0, "no events: seq 0");

    /* The count cap. */
    int64_t c = running_job(db, u, r);
    int stored = 0;
    while (stored < DB_MAX_JOB_EVENTS + 5 && event(db, c, r, "test", NULL, &err) == 0)
        stored++;
    KT_CHECK(stored == DB_MAX_JOB_EVENTS && err.code == KJ_ELIMIT, "%d events per job, then KJ_ELIMIT: %d",
             DB_MAX_JOB_EVENTS, stored);
    /* The byte cap: a refused event stores nothing and later small ones still fit. */
    int64_t b = running_job(db, u, r);
    size_t big = 300 * 1024;
    char *blob = malloc(big + 16);
    int accepted = 0, rc;
    memset(blob, 'x', big + 16);
    blob[0] = '"';
    blob[big - 1] = '"';
    blob[big] = '\0';
    while ((rc = event(db, b, r, "test", blob, &err)) == 0)
        accepted++;
    KT_CHECK(rc == KJ_ELIMIT && accepted == 3, "300 KiB events: 3 fit in 1 MiB, the 4th is refused (%d)",
             accepted);
    KT_CHECK(db_events_list(db, b, &ev, &n, &err) == 0 && n == 3, "the refused event was not stored: %d", n);
    db_events_free(ev, n);
    KT_CHECK(event(db, b, r, "test", "{}", &err) == 0, "a small event still fits");
    free(blob);
}

/* The class streak of gpu in queue_state: last class * 1000 + streak (-1: no row). */
static int streak_of(struct db *db, const char *gpu)
{
    sqlite3_stmt *q = NULL;
    int v = -1;
    if (sqlite3_prepare_v2(db->h, "SELECT last_class * 1000 + streak FROM queue_state WHERE gpu = ?",
                           -1, &q, NULL) == SQLITE_OK &&
        sqlite3_bind_text(q, 1, gpu, -1, SQLITE_STATIC) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW)
        v = sqlite3_column_int(q, 0);
    sqlite3_finalize(q);
    return v;
}

/* Claim for gpu through filter f; the id taken, 0 for KJ_ENOTFOUND, -1 on error. */
static int64_t claim_f(struct db *db, const char *gpu, const struct db_claim_filter *f, int64_t r)
{
    struct db_sub s;
    struct kj_err err;
    char secret[32];
    int rc = db_job_claim(db, gpu, f, r, "cf", &s, secret, sizeof secret, &err);
    int64_t id = rc == 0 ? s.id : rc == KJ_ENOTFOUND ? 0 : -1;
    db_sub_clear(&s);
    return id;
}

/* A claim's filter (modes, skip): the rule picks among the jobs it allows
 * by every user's usage, the streak moves as for any claim, and a claim
 * that finds nothing changes nothing. */
static void test_claim_filter(struct db *db)
{
    struct kj_err err;
    struct db_sub s;
    int64_t heavy = add_user(db, "cfheavy", "user"), light = add_user(db, "cflight", "user"),
            r = add_user(db, "cfr", "runner"), pos = 0;
    int64_t held = submit(db, heavy, "CF1", "test");
    KT_CHECK(claim_f(db, "CF1", NULL, r) == held, "the heavy user's first job runs");
    int64_t b1 = submit(db, heavy, "CF1", "benchmark"), t1 = submit(db, heavy, "CF1", "test"),
            t2 = submit(db, light, "CF1", "test"), t3 = submit(db, light, "CF1", "test");
    int64_t skip_t2[] = {t2}, skip_both[] = {t1, t2, 999999};
    struct db_claim_filter profile = {1u << KJ_MODE_PROFILE, NULL, 0},
                           test_not_t2 = {1u << KJ_MODE_TEST, skip_t2, 1},
                           bench = {1u << KJ_MODE_BENCHMARK, NULL, 0},
                           test_none = {1u << KJ_MODE_TEST, skip_both, 3};
    KT_CHECK(streak_of(db, "CF1") == 1, "one test pick so far: %d", streak_of(db, "CF1"));
    KT_CHECK(claim_f(db, "CF1", &profile, r) == 0 && streak_of(db, "CF1") == 1,
             "no profile job: not found, the streak unchanged");
    /* Unfiltered: t2 (light), b1 (heavy, oldest at equal usage), t3, then t1:
     * 4; but a job of CF1 runs, so a lane may take test jobs, and among the
     * test jobs alone t1 comes second (db_queue.c's "Positions over lanes"):
     * the smaller, 2. */
    KT_CHECK(db_job_position(db, t1, &pos, &err) == 0 && pos == 2,
             "t1's position: the smaller of the whole queue's (4) and the test lane's (2): %lld",
             (long long)pos);
    KT_CHECK(claim_f(db, "CF1", &test_not_t2, r) == t3,
             "test jobs less t2: the light user's t3 before the heavy user's older t1");
    KT_CHECK(streak_of(db, "CF1") == 2, "the filtered pick counts in the streak: %d", streak_of(db, "CF1"));
    KT_CHECK(claim_f(db, "CF1", &bench, r) == b1 && streak_of(db, "CF1") == 1001,
             "benchmark only: b1, a ranked streak begins");
    KT_CHECK(claim_f(db, "CF1", &test_none, r) == 0, "both test jobs left skipped: not found");
    KT_CHECK(db_sub_get(db, t1, 0, &s, &err) == 0 && s.status == DB_QUEUED, "t1 still queued");
    db_sub_clear(&s);
    KT_CHECK(db_sub_get(db, t2, 0, &s, &err) == 0 && s.status == DB_QUEUED, "t2 still queued");
    db_sub_clear(&s);
    KT_CHECK(claim_f(db, "CF1", NULL, r) == t2 && claim_f(db, "CF1", NULL, r) == t1 &&
             claim_f(db, "CF1", NULL, r) == 0, "no filter: the light user's t2, then t1");
}

/* One number a query about row id gives (-1: no row). */
static int64_t num_of(struct db *db, const char *sql, int64_t id)
{
    sqlite3_stmt *q = NULL;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db->h, sql, -1, &q, NULL) == SQLITE_OK &&
        sqlite3_bind_int64(q, 1, id) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW)
        v = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return v;
}

#define CLAIMED_MS "SELECT claimed_ms FROM submissions WHERE id = ?"
#define USAGE_MS "SELECT CAST(usage_ms AS INTEGER) FROM queue_usage WHERE gpu = 'GS1' AND user_id = ?"

/* Job id as if claimed ms earlier: a hold without sleeping. */
static void hold_back(struct db *db, int64_t id, int64_t ms)
{
    char sql[128];
    snprintf(sql, sizeof sql, "UPDATE submissions SET claimed_ms = claimed_ms - %lld WHERE id = %lld",
             (long long)ms, (long long)id);
    KT_CHECK(sqlite3_exec(db->h, sql, NULL, NULL, NULL) == SQLITE_OK, "move claimed_ms back");
}

/* A heartbeat's gpu_start: claimed_ms set to now in the heartbeat's
 * transaction, so a job held before its GPU work starts charges its user
 * from then; a plain heartbeat, a refused one, or none: from the claim. */
static void test_gpu_start(struct db *db)
{
    struct kj_err err;
    int dup = 0;
    int64_t held = add_user(db, "gsheld", "user"), plain = add_user(db, "gsplain", "user"),
            r = add_user(db, "gsr", "runner"), other = add_user(db, "gsother", "runner");
    int64_t a = submit(db, held, "GS1", "test"), b = submit(db, plain, "GS1", "test"), t0;
    struct db_job_ref ref = {a, r, 1}, stranger = {a, other, 1}, stale = {a, r, 2};
    KT_CHECK(claim_f(db, "GS1", NULL, r) == a, "claim the held user's job");
    hold_back(db, a, 5000);
    int64_t claimed = num_of(db, CLAIMED_MS, a);
    KT_CHECK(db_job_heartbeat(db, &ref, 0, &err) == 0 && num_of(db, CLAIMED_MS, a) == claimed,
             "a heartbeat without gpu_start leaves claimed_ms: %s", err.msg);
    KT_CHECK(db_job_heartbeat(db, &stranger, 1, &err) == KJ_ECONFLICT &&
             db_job_heartbeat(db, &stale, 1, &err) == KJ_ECONFLICT &&
             num_of(db, CLAIMED_MS, a) == claimed,
             "gpu_start from another runner or for another attempt: refused, nothing changed");
    t0 = db_now_ms();
    KT_CHECK(db_job_heartbeat(db, &ref, 1, &err) == 0 && num_of(db, CLAIMED_MS, a) >= t0,
             "gpu_start sets claimed_ms to now (%lld >= %lld)", (long long)num_of(db, CLAIMED_MS, a),
             (long long)t0);
    hold_back(db, a, 3000);
    KT_CHECK(db_job_heartbeat(db, &ref, 1, &err) == 0 && num_of(db, CLAIMED_MS, a) >= t0,
             "a second gpu_start moves it again");
    KT_CHECK(finish(db, a, r, "accepted", 0, 0, "{}", &dup, &err) == 0, "finish: %s", err.msg);
    int64_t usage = num_of(db, USAGE_MS, held);
    KT_CHECK(usage >= 0 && usage < 1000, "charged from the GPU start, not the 5 s hold: %lld ms",
             (long long)usage);
    KT_CHECK(db_job_heartbeat(db, &ref, 1, &err) == KJ_ECONFLICT, "gpu_start for a done job: refused");
    KT_CHECK(claim_f(db, "GS1", NULL, r) == b, "claim the plain user's job");
    hold_back(db, b, 5000);
    ref.id = b;
    KT_CHECK(db_job_heartbeat(db, &ref, 0, &err) == 0 &&
             finish(db, b, r, "accepted", 0, 0, "{}", &dup, &err) == 0, "heartbeat, finish");
    usage = num_of(db, USAGE_MS, plain);
    KT_CHECK(usage >= 5000, "without gpu_start the hold is charged: %lld ms", (long long)usage);
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    struct db *db = NULL;
    struct kj_err err;
    if (mkdtemp(dir) == NULL)
        return 1;
    snprintf(path, sizeof path, "%s/var/t.db", dir);
    KT_CHECK(db_open(path, &db, &err) == 0, "open creates the folder and schema: %s", err.msg);
    if (db == NULL)
        return kt_done("test_db");
    db_close(db);
    KT_CHECK(db_open(path, &db, &err) == 0 && db_ping(db, &err) == 0, "re-open: %s", err.msg);
    KT_RUN(test_users(db));
    KT_RUN(test_secrets(db));
    KT_RUN(test_lifecycle(db));
    KT_RUN(test_rank_rows(db));
    KT_RUN(test_rank_medians(db));
    KT_RUN(test_sweep(db));
    KT_RUN(test_race(db));
    KT_RUN(test_group_commit(db));
    KT_RUN(test_published(db));
    KT_RUN(test_runner_gpus(db));
    KT_RUN(test_event_cursor(db));
    KT_RUN(test_claim_filter(db));
    KT_RUN(test_gpu_start(db));
    db_close(db);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return kt_done("test_db");
}
