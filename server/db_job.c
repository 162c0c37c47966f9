/*
 * db_job.c - the job state machine after the insert: claim, heartbeat and
 * progress events (each extends the lease; a heartbeat may also say the
 * job's GPU work starts, which restarts its fair-share clock), finish,
 * requeue, give up, and the lease sweep; plus the lease length and queue
 * positions.
 *
 * api_runner.c calls db_job_claim, db_job_event, db_job_heartbeat,
 * db_job_finish and db_job_release (a stopping runner gives its job back); lease.c's ticker calls db_job_sweep; the serve set-up
 * sets the lease length and grants every running job a fresh lease
 * (db_job_grace); sse.c reads queue positions. The states, their
 * invariants and the function of each transition are drawn in db.h; each
 * transition is one SQL transaction here, and every row it reads passes
 * assert_sub_state() (db_sub.c); the lease a claim grants passes
 * assert_job_state() below.
 */
#include "db_int.h"
#include "db_rejudge.h"

#include <cjson/cJSON.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The job just claimed (or extended) by runner_id at now_ms: running, held
 * by that runner, under a lease that ends after now. Returns 1 so it can
 * sit in KJ_ALWAYS. */
static int assert_job_state(const struct db_sub *s, int64_t runner_id, int64_t now_ms)
{
    return s->status == DB_RUNNING && s->runner_id == runner_id && s->lease_until_ms > now_ms &&
           s->attempts >= 0 && s->attempts < DB_MAX_ATTEMPTS;
}

static int requeue_locked(struct db *db, int64_t id, const char *reason, const char *final_reason,
                          int *tries, struct kj_err *err);

/* ------------------------------------------------------------------ */
/* Lease length, grace, queue positions                                */
/* ------------------------------------------------------------------ */

void db_job_set_lease(struct db *db, int64_t ms)
{
    if (KJ_NEVER(ms <= 0)) /* serve checks --lease-seconds: keep the length there is */
        return;
    pthread_mutex_lock(&db->mu);
    db->lease_ms = ms;
    pthread_mutex_unlock(&db->mu);
}

int64_t db_job_lease_ms(struct db *db)
{
    int64_t ms;
    pthread_mutex_lock(&db->mu);
    ms = db->lease_ms;
    pthread_mutex_unlock(&db->mu);
    return ms;
}

int db_job_grace(struct db *db, int64_t *n, struct kj_err *err)
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

/* Inside a transaction: the position of queued job id under the queue
 * rule (db_queue.c; 0 when not queued). */
static int position_locked(struct db *db, int64_t id, int64_t *pos, struct kj_err *err)
{
    return db_queue_position_locked(db, id, pos, err);
}

int db_job_position(struct db *db, int64_t id, int64_t *pos, struct kj_err *err)
{
    int rc;
    pthread_mutex_lock(&db->mu);
    rc = position_locked(db, id, pos, err);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

/* ------------------------------------------------------------------ */
/* Claim, hold, finish                                                 */
/* ------------------------------------------------------------------ */

int db_job_claim(struct db *db, const char *gpu, const struct db_claim_filter *filter,
                 int64_t runner_id, const char *runner_name, struct db_sub *out, char *secret,
                 size_t secretsz, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int64_t id = 0, now_ms = db_now_ms();
    int rc;
    secret[0] = '\0';
    memset(out, 0, sizeof *out); /* db_sub_clear(out) is safe whatever happens */
    pthread_mutex_lock(&db->mu);
    /* IMMEDIATE takes the write lock first, so another process cannot claim the same row. */
    if ((rc = db_exec(db, err, "BEGIN IMMEDIATE")) != 0)
        goto out;
    if ((rc = db_queue_pick_locked(db, gpu, filter, now_ms, &id, err)) != 0)
        goto fail;
    if (id == 0) {
        rc = KJ_FAIL(err, KJ_ENOTFOUND, "no queued job for gpu %s%s", gpu,
                     filter != NULL ? " the claim's filter allows" : "");
        goto fail;
    }
    rc = db_prep(db, err, &st, "UPDATE submissions SET status = 'running', runner_id = ?, "
                 "runner_name = ?, started_at = ?, claimed_ms = ?, lease_until = ? WHERE id = ? "
                 "AND status = 'queued'", "itiiii", runner_id, runner_name, db_now(), now_ms,
                 now_ms + db->lease_ms, id);
    if (rc == 0)
        rc = db_step(db, err, st);
    sqlite3_finalize(st);
    if (rc == 0 && sqlite3_changes(db->h) != 1)
        rc = KJ_FAIL(err, KJ_EINTERNAL, "claim of submission %lld changed no row", (long long)id);
    if (rc != 0 || (rc = db_sub_get_locked(db, id, 1, out, err)) != 0)
        goto fail;
    if (KJ_NEVER(!assert_job_state(out, runner_id, now_ms))) {
        rc = KJ_FAIL(err, KJ_EINTERNAL, "claim of submission %lld left it unheld", (long long)id);
        db_sub_clear(out);
        goto fail;
    }
    if (out->mode == KJ_MODE_LEADERBOARD &&
        (rc = db_secret_get_locked(db, out->leaderboard, secret, secretsz, err)) != 0) {
        /* A claimed job always comes with its seed; a board without one is our fault
         * (not "nothing queued", which KJ_ENOTFOUND means to the caller). */
        if (rc == KJ_ENOTFOUND)
            rc = KJ_FAIL(err, KJ_EINTERNAL, "no secret seed for leaderboard %s",
                         out->leaderboard);
        db_sub_clear(out);
        goto fail;
    }
    if ((rc = db_exec(db, err, "COMMIT")) != 0) {
        db_sub_clear(out);
        goto fail;
    }
    goto out;
fail:
    db_exec(db, NULL, "ROLLBACK");
out:
    pthread_mutex_unlock(&db->mu);
    return rc;
}

/* Inside a transaction: check that ref's runner holds ref's job under a
 * live lease, and copy the row into s. *done is set when the job is
 * already done by this runner (rc 0). */
static int holds_locked(struct db *db, const struct db_job_ref *ref, struct db_sub *s, int *done,
                    struct kj_err *err)
{
    int rc = db_sub_get_locked(db, ref->id, 0, s, err);
    *done = 0;
    if (rc != 0)
        return rc;
    if (ref->attempt != 0 && ref->attempt != s->attempts + 1)
        return KJ_FAIL(err, KJ_ECONFLICT, "job %lld is on attempt %d, not %d", (long long)ref->id,
                       s->attempts + 1, ref->attempt);
    if (s->runner_id != ref->runner_id)
        return KJ_FAIL(err, KJ_ECONFLICT, "job %lld is not held by this runner", (long long)ref->id);
    if (s->status == DB_DONE) {
        *done = 1;
        return 0;
    }
    if (s->lease_until_ms <= db_now_ms())
        return KJ_FAIL(err, KJ_ECONFLICT, "the lease on job %lld expired; it goes back to the queue",
                       (long long)ref->id);
    return 0;
}

/* Inside a transaction: move the lease of running job s on by a full
 * lease and note that its runner was seen. */
static int extend_locked(struct db *db, const struct db_sub *s, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = db_prep(db, err, &st, "UPDATE submissions SET lease_until = ? WHERE id = ? AND "
                     "status = 'running'", "ii", db_now_ms() + db->lease_ms, s->id);
    if (rc == 0)
        rc = db_step(db, err, st);
    sqlite3_finalize(st);
    if (rc != 0)
        return rc;
    rc = db_prep(db, err, &st, "UPDATE runners SET last_seen = ? WHERE runner_id = ? AND name = ? "
                 "AND gpu = ?", "iitt", db_now(), s->runner_id, s->runner_name, s->gpu);
    if (rc == 0)
        rc = db_step(db, err, st);
    sqlite3_finalize(st);
    return rc;
}

/* Inside a transaction: running job id -> done with the runner's result
 * and its timed shapes' medians (reason: why the judge gave up, or NULL). */
static int finish_locked(struct db *db, int64_t id, const struct db_result *res,
                         const char *reason, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    if (res->has_score)
        rc = db_prep(db, err, &st, "UPDATE submissions SET status = 'done', verdict = ?, "
                     "score_ns = ?, result = ?, finished_at = ?, lease_until = NULL, reason = ? "
                     "WHERE id = ? AND status = 'running'", "tdtiti",
                     kj_verdict_name(res->verdict), res->score_ns, res->json, db_now(), reason,
                     id);
    else
        rc = db_prep(db, err, &st, "UPDATE submissions SET status = 'done', verdict = ?, "
                     "score_ns = NULL, result = ?, finished_at = ?, lease_until = NULL, "
                     "reason = ? WHERE id = ? AND status = 'running'", "ttiti",
                     kj_verdict_name(res->verdict), res->json, db_now(), reason, id);
    if (rc == 0)
        rc = db_step(db, err, st);
    sqlite3_finalize(st);
    if (rc == 0 && sqlite3_changes(db->h) != 1)
        rc = KJ_FAIL(err, KJ_EINTERNAL, "finishing submission %lld changed no row", (long long)id);
    if (rc == 0)
        rc = db_rank_store_locked(db, id, res->medians, res->nmedians, err);
    if (rc == 0) /* the GPU time it took, for the queue's fair share */
        rc = db_queue_charge_locked(db, id, 1, err);
    if (rc == 0) /* the timing it was measured with; a rejudge's last job swaps its ranking */
        rc = db_timing_store_locked(db, id, err);
    if (rc == 0)
        rc = db_rejudge_done_locked(db, id, err);
    return rc;
}

/* What a runner request does to the row of the job it holds (s; done: the
 * job is already done by this runner), inside job_txn's transaction.
 * Returns 0 to commit, 1 to change nothing (a success), or an error. */
typedef int (*job_step)(struct db *db, const struct db_job_ref *ref, const struct db_sub *s,
                        int done, void *arg, struct kj_err *err);

/* One runner request about job ref as one transaction: check that ref's
 * runner holds it under a live lease (holds_locked), then step. */
static int job_txn(struct db *db, const struct db_job_ref *ref, job_step step, void *arg,
                   struct kj_err *err)
{
    struct db_sub s;
    int done = 0, rc;
    pthread_mutex_lock(&db->mu);
    if ((rc = db_exec(db, err, "BEGIN IMMEDIATE")) == 0) {
        if ((rc = holds_locked(db, ref, &s, &done, err)) == 0)
            rc = step(db, ref, &s, done, arg, err);
        if (rc == 0)
            rc = db_exec(db, err, "COMMIT");
        else
            db_exec(db, NULL, "ROLLBACK");
    }
    pthread_mutex_unlock(&db->mu);
    return rc == 1 ? 0 : rc;
}

/* db_job_finish's arguments for finish_step. */
struct finish_arg {
    const struct db_result *res;
    enum db_finish *outcome;
};

static int finish_step(struct db *db, const struct db_job_ref *ref, const struct db_sub *s,
                       int done, void *arg, struct kj_err *err)
{
    struct finish_arg *a = arg;
    char reason[DB_MAX_REASON];
    int tries = 0, rc;
    if (done) {
        *a->outcome = DB_FINISH_DUPLICATE;
        return 1; /* nothing to change */
    }
    if (a->res->verdict != KJ_V_INTERNAL)
        return finish_locked(db, ref->id, a->res, NULL, err);
    if (s->attempts + 1 >= DB_MAX_ATTEMPTS) {
        snprintf(reason, sizeof reason, "the judge failed %d times", DB_MAX_ATTEMPTS);
        return finish_locked(db, ref->id, a->res, reason, err);
    }
    snprintf(reason, sizeof reason, "the judge failed (attempt %d of %d)", s->attempts + 1,
             DB_MAX_ATTEMPTS);
    rc = requeue_locked(db, ref->id, reason, reason, &tries, err);
    /* It was not the last attempt, so the job is queued; were it failed
     * instead, say so (it is done). */
    *a->outcome = KJ_NEVER(rc == 0 && tries >= DB_MAX_ATTEMPTS) ? DB_FINISH_DONE
                                                             : DB_FINISH_REQUEUED;
    return rc;
}

int db_job_finish(struct db *db, const struct db_job_ref *ref, const struct db_result *res,
                  enum db_finish *outcome, struct kj_err *err)
{
    struct finish_arg a = {res, outcome};
    *outcome = DB_FINISH_DONE;
    return job_txn(db, ref, finish_step, &a, err);
}

/* Inside a transaction: running job s's GPU work starts now, so its
 * run time counts from now (claimed_ms: what the fair-share charge and the
 * queue's estimate of running jobs, db_queue.c, count from), not from the
 * claim: a runner that holds a job before its GPU work starts (compiling
 * it ahead while its GPU judges another) does not charge its user the
 * wait. Sent again, it moves claimed_ms again. */
static int gpu_start_locked(struct db *db, const struct db_sub *s, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = db_prep(db, err, &st, "UPDATE submissions SET claimed_ms = ? WHERE id = ? AND "
                     "status = 'running'", "ii", db_now_ms(), s->id);
    if (rc == 0)
        rc = db_step(db, err, st);
    sqlite3_finalize(st);
    if (rc == 0 && sqlite3_changes(db->h) != 1)
        rc = KJ_FAIL(err, KJ_EINTERNAL, "gpu start of submission %lld changed no row",
                     (long long)s->id);
    return rc;
}

/* What touch_step does besides moving the lease on: store an event
 * (db_job_event), or for a heartbeat restart the job's run time
 * (gpu_start) or nothing. */
struct touch_arg {
    int has_event;
    enum kj_event event;
    const char *data;
    int gpu_start;
};

/* An event or a heartbeat: the lease moves on, the event is stored if the
 * job's cap has room (else nothing changes), a gpu_start sets claimed_ms. */
static int touch_step(struct db *db, const struct db_job_ref *ref, const struct db_sub *s,
                      int done, void *arg, struct kj_err *err)
{
    const struct touch_arg *t = arg;
    int rc;
    if (done)
        return KJ_FAIL(err, KJ_ECONFLICT, "job %lld is already done", (long long)ref->id);
    if (t->has_event && (rc = db_event_room_locked(db, ref->id, t->event, t->data, err)) != 0)
        return rc;
    if ((rc = extend_locked(db, s, err)) != 0)
        return rc;
    if (t->gpu_start && (rc = gpu_start_locked(db, s, err)) != 0)
        return rc;
    return t->has_event ? db_event_insert_locked(db, ref->id, t->event, t->data, err) : 0;
}

int db_job_event(struct db *db, const struct db_job_ref *ref, enum kj_event event,
                 const char *data, struct kj_err *err)
{
    struct touch_arg t = {1, event, data, 0};
    return job_txn(db, ref, touch_step, &t, err);
}

int db_job_heartbeat(struct db *db, const struct db_job_ref *ref, int gpu_start,
                     struct kj_err *err)
{
    struct touch_arg t = {0, KJ_EV_QUEUED, NULL, gpu_start != 0};
    return job_txn(db, ref, touch_step, &t, err);
}

/* ------------------------------------------------------------------ */
/* Requeue, give up, sweep                                             */
/* ------------------------------------------------------------------ */

/* The JSON text of the judge's own failure: {"verdict": "internal_error",
 * "message": reason}, with "score_ns": null as a result (with_score).
 * Caller frees with cJSON_free; NULL when out of memory. */
static char *internal_json(const char *reason, int with_score)
{
    cJSON *o = cJSON_CreateObject();
    char *text = NULL;
    if (o != NULL && cJSON_AddStringToObject(o, "verdict", kj_verdict_name(KJ_V_INTERNAL)) &&
        cJSON_AddStringToObject(o, "message", reason) &&
        (!with_score || cJSON_AddNullToObject(o, "score_ns")))
        text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return text;
}

/* Inside a transaction: the last attempt of running job id failed: done as internal_error. */
static int give_up_locked(struct db *db, int64_t id, const char *reason, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    char *result = internal_json(reason, 1), *data = internal_json(reason, 0);
    int rc;
    if (result == NULL || data == NULL) {
        rc = KJ_FAIL(err, KJ_ENOMEM, "out of memory failing submission %lld", (long long)id);
        goto out;
    }
    rc = db_prep(db, err, &st, "UPDATE submissions SET status = 'done', verdict = ?, "
                 "score_ns = NULL, result = ?, reason = ?, finished_at = ?, lease_until = NULL "
                 "WHERE id = ? AND status = 'running'", "tttii", kj_verdict_name(KJ_V_INTERNAL),
                 result, reason, db_now(), id);
    if (rc == 0)
        rc = db_step(db, err, st);
    sqlite3_finalize(st);
    if (rc == 0 && sqlite3_changes(db->h) != 1)
        rc = KJ_FAIL(err, KJ_EINTERNAL, "failing submission %lld changed no row", (long long)id);
    if (rc == 0)
        rc = db_event_insert_locked(db, id, KJ_EV_VERDICT, data, err);
    if (rc == 0) /* the last job of a rejudge: it fails */
        rc = db_rejudge_done_locked(db, id, err);
out:
    cJSON_free(result);
    cJSON_free(data);
    return rc;
}

/* The "queued" event of a job going back to the queue: {"position",
 * "attempt", "reason"}. Caller frees with cJSON_free; NULL when out of memory. */
static char *queued_json(int64_t pos, int attempt, const char *reason)
{
    cJSON *o = cJSON_CreateObject();
    char *text = NULL;
    if (o != NULL && cJSON_AddNumberToObject(o, "position", (double)pos) &&
        cJSON_AddNumberToObject(o, "attempt", attempt) &&
        cJSON_AddStringToObject(o, "reason", reason))
        text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return text;
}

/* Inside a transaction: running job id back to queued with attempts set
 * to attempts, and a "queued" event (position, attempt, reason). */
static int back_to_queue_locked(struct db *db, int64_t id, int attempts, const char *reason,
                                struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    char *data;
    int64_t pos = 0;
    int rc = db_prep(db, err, &st, "UPDATE submissions SET status = 'queued', runner_id = NULL, "
                     "runner_name = NULL, started_at = NULL, lease_until = NULL, attempts = ? "
                     "WHERE id = ? AND status = 'running'", "ii", (int64_t)attempts, id);
    if (rc == 0)
        rc = db_step(db, err, st);
    sqlite3_finalize(st);
    if (rc == 0 && sqlite3_changes(db->h) != 1)
        rc = KJ_FAIL(err, KJ_EINTERNAL, "requeue of submission %lld changed no row", (long long)id);
    if (rc != 0 || (rc = position_locked(db, id, &pos, err)) != 0)
        return rc;
    if ((data = queued_json(pos, attempts + 1, reason)) == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory requeueing submission %lld", (long long)id);
    rc = db_event_insert_locked(db, id, KJ_EV_QUEUED, data, err);
    cJSON_free(data);
    return rc;
}

static int requeue_locked(struct db *db, int64_t id, const char *reason, const char *final_reason,
                          int *tries, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
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
        return give_up_locked(db, id, final_reason, err);
    return back_to_queue_locked(db, id, attempts + 1, reason, err);
}

/* db_job_release's runner name, for release_step. */
struct release_arg {
    int gap;
    char *runner_name;
    size_t namesz;
};

/* A runner gives its job back (it stops, or the job did not fit a gap):
 * queued again, the attempt not counted. */
static int release_step(struct db *db, const struct db_job_ref *ref, const struct db_sub *s,
                        int done, void *arg, struct kj_err *err)
{
    struct release_arg *a = arg;
    char reason[DB_MAX_REASON];
    if (done)
        return KJ_FAIL(err, KJ_ECONFLICT, "job %lld is already done", (long long)ref->id);
    int rc;
    if (a->gap)
        snprintf(reason, sizeof reason, "runner %s gave the job back: no verdict within a gap "
                 "of a timed job; it is judged later as usual", s->runner_name);
    else
        snprintf(reason, sizeof reason, "runner %s stopped and gave the job back", s->runner_name);
    snprintf(a->runner_name, a->namesz, "%s", s->runner_name);
    /* The GPU time a gap job took before it was given up is its user's
     * (fair share: a slow compile sent again and again costs its sender);
     * a stopping runner's is not. */
    if (a->gap && (rc = db_queue_charge_locked(db, ref->id, 0, err)) != 0)
        return rc;
    return back_to_queue_locked(db, ref->id, s->attempts, reason, err);
}

int db_job_release(struct db *db, const struct db_job_ref *ref, int gap, char *runner_name,
                   size_t namesz, struct kj_err *err)
{
    struct release_arg a = {gap, runner_name, namesz};
    runner_name[0] = '\0';
    return job_txn(db, ref, release_step, &a, err);
}

/* Inside a transaction: up to max running jobs whose lease ended before now_ms. */
static int expired_locked(struct db *db, int64_t now_ms, struct db_expired *out, int max,
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

int db_job_sweep(struct db *db, int64_t now_ms, struct db_expired **out, int *n,
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
    if ((rc = expired_locked(db, now_ms, ex, DB_SWEEP_MAX, &count, err)) != 0)
        goto fail;
    snprintf(why, sizeof why, "the runner stopped answering %d times", DB_MAX_ATTEMPTS);
    for (int i = 0; i < count && rc == 0; i++) {
        rc = requeue_locked(db, ex[i].id, "the runner stopped answering", why,
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
