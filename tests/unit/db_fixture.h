/*
 * db_fixture.h - rows the database unit tests make through server/db*.c:
 * a user, a submission, a finished job, an event, a running job. Included
 * by test_db.c and test_db_schema.c (after kt.h).
 */
#ifndef KJ_DB_FIXTURE_H
#define KJ_DB_FIXTURE_H

#include <stdio.h>
#include <string.h>

#include "db.h"
#include "db_int.h"

static inline int64_t add_user(struct db *db, const char *name, const char *role)
{
    static int serial;
    char hash[DB_HASH_HEX];
    int64_t id = 0;
    struct kj_err err;
    snprintf(hash, sizeof hash, "%060d%04d", 7, ++serial);
    KT_CHECK(db_user_add(db, name, role, hash, &id, &err) == 0, "add %s: %s", name, err.msg);
    return id;
}

static inline int64_t submit(struct db *db, int64_t user, const char *gpu, const char *mode)
{
    struct db_sub s;
    struct kj_err err;
    memset(&s, 0, sizeof s);
    s.user_id = user;
    snprintf(s.leaderboard, sizeof s.leaderboard, "fp8_quant");
    snprintf(s.gpu, sizeof s.gpu, "%s", gpu);
    KT_CHECK(kj_mode_parse(mode, &s.mode) == 0, "mode %s", mode);
    snprintf(s.file_name, sizeof s.file_name, "k.cu");
    snprintf(s.source_sha256, sizeof s.source_sha256, "%064d", 0);
    s.source = "int x;\n";
    s.source_len = 7;
    KT_CHECK(db_sub_insert(db, &s, &err) == 0 && s.id > 0, "insert: %s", err.msg);
    return s.id;
}

/* db_job_finish for any attempt of job id held by runner_id; *dup when the
 * job was already done. */
static inline int finish(struct db *db, int64_t id, int64_t runner_id, const char *verdict,
                  int has_score, double score_ns, const char *result, int *dup,
                  struct kj_err *err)
{
    struct db_job_ref ref = {id, runner_id, 0};
    enum db_finish outcome = DB_FINISH_DONE;
    struct db_result res = {KJ_V_COUNT, has_score, score_ns, result, NULL, 0};
    /* An unknown name stays KJ_V_COUNT: stored as "?", which the CHECK refuses. */
    kj_verdict_parse(verdict, &res.verdict);
    int rc = db_job_finish(db, &ref, &res, &outcome, err);
    *dup = rc == 0 && outcome == DB_FINISH_DUPLICATE;
    return rc;
}

/* db_job_event for any attempt of job id held by runner_id. */
static inline int event(struct db *db, int64_t id, int64_t runner_id, const char *ev, const char *data,
                 struct kj_err *err)
{
    struct db_job_ref ref = {id, runner_id, 0};
    enum kj_event e = KJ_EV_QUEUED;
    KT_CHECK(kj_event_parse(ev, &e) == 0, "event %s", ev);
    return db_job_event(db, &ref, e, data, err);
}

static inline int64_t running_job(struct db *db, int64_t u, int64_t r)
{
    struct db_sub s;
    struct kj_err err;
    char secret[32];
    int64_t id = submit(db, u, "EV1", "test");
    KT_CHECK(db_job_claim(db, "EV1", NULL, r, "ev", &s, secret, sizeof secret, &err) == 0 && s.id == id,
             "claim the events job: %s", err.msg);
    db_sub_clear(&s);
    return id;
}


#endif
