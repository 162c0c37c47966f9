/*
 * api_runner.c - the runner endpoints of docs/protocol.md:
 * POST /api/v1/runner/claim, /runner/jobs/{id}/events, /runner/jobs/{id}/heartbeat,
 * /runner/jobs/{id}/result, /runner/jobs/{id}/release.
 *
 * GPU hosts (runner tokens only) pull the job the queue rule picks
 * (queue.h: fair share, or FIFO) for a GPU type their token is bound to
 * (db_runner_gpus; db_job_claim moves it to running under a lease, in one
 * transaction), among the modes and less the jobs the claim's body names
 * (claim_filter.h), waiting for one with ?wait=S (a long poll parked in
 * wait.h, woken by wait_notify_gpu when a job of that type is queued),
 * report progress events and heartbeats (each extends the lease; a heartbeat
 * with {"gpu_start": true} also says the job's GPU work starts now, so its
 * fair-share charge counts from then), and post the result object, which
 * result_check.c checks against the job and its board and rebuilds before
 * db_job_finish stores it (an internal_error with attempts left queues the
 * job again). A stopping runner gives its job back (release; so does one
 * whose gap job had no verdict in time, {"why": "gap"}): queued again
 * at once, no attempt charged. Every change wakes the ?wait=1 requests and event streams of
 * that submission (wait_notify). Job requests name the claim's ?attempt; one
 * naming a lost lease or another attempt gets 409 and changes nothing. The
 * secret seed leaves the server only here.
 */
#include "api.h"
#include "auth.h"
#include "claim_filter.h"
#include "gputype.h"
#include "result_check.h"
#include "metrics.h"
#include "sub_lang.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A short name field ([A-Za-z0-9_.-]{1,63}); NULL when absent, "" when malformed. */
static const char *name_field(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    size_t n;
    if (v == NULL)
        return NULL;
    if (!cJSON_IsString(v) || (n = strlen(v->valuestring)) == 0 || n >= DB_MAX_NAME ||
        strspn(v->valuestring, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") != n)
        return "";
    return v->valuestring;
}

static cJSON *job_json(const struct db_sub *s, const char *secret, int lease_s)
{
    cJSON *root = cJSON_CreateObject(), *job = cJSON_AddObjectToObject(root, "job");
    cJSON_AddNumberToObject(job, "id", (double)s->id);
    cJSON_AddNumberToObject(job, "submission_id", (double)s->id);
    cJSON_AddStringToObject(job, "leaderboard", s->leaderboard);
    cJSON_AddStringToObject(job, "mode", kj_mode_name(s->mode));
    cJSON_AddStringToObject(job, "gpu", s->gpu);
    cJSON_AddStringToObject(job, "file_name", s->file_name);
    cJSON_AddStringToObject(job, "lang", sub_lang_name(s->lang)); /* "cuda" or "python" */
    cJSON_AddStringToObject(job, "source", s->source != NULL ? s->source : "");
    if (s->mode == KJ_MODE_LEADERBOARD)
        cJSON_AddStringToObject(job, "secret_seed", secret);
    if (s->mode == KJ_MODE_SANITIZE)
        cJSON_AddStringToObject(job, "tool", s->sanitizer[0] ? s->sanitizer :
                                kj_sanitizer_name(KJ_SAN_MEMCHECK));
    if (s->mode == KJ_MODE_PROFILE && s->profile_shape > 0)
        cJSON_AddNumberToObject(job, "shape", s->profile_shape - 1);
    cJSON_AddNumberToObject(job, "attempt", s->attempts + 1);
    cJSON_AddNumberToObject(job, "lease_seconds", lease_s);
    return root;
}

/* 403 unless the caller's token is bound to gpu (kjudge-server runner add/bind --gpu).
 * Returns 1 when it answered. */
static int gpu_allowed(struct http_req *r, const char *gpu, enum MHD_Result *res)
{
    char gpus[GPUTYPE_LIST_BYTES];
    struct kj_err err;
    kj_err_clear(&err);
    if (db_runner_gpus(r->srv->db, r->user.id, gpus, sizeof gpus, &err) != 0) {
        *res = http_internal(r, &err);
        return 1;
    }
    if (gpus[0] == '\0') {
        *res = http_error(r, MHD_HTTP_FORBIDDEN, "runner_unbound",
                          "runner token '%s' is not bound to a GPU type; the operator runs "
                          "`kjudge-server runner bind %s --gpu TYPE[,TYPE...]`", r->user.name,
                          r->user.name);
        return 1;
    }
    if (!gputype_list_has(gpus, gpu)) {
        *res = http_error(r, MHD_HTTP_FORBIDDEN, "gpu_not_allowed",
                          "runner token '%s' may claim jobs for %s only, not %s", r->user.name,
                          gpus, gpu);
        return 1;
    }
    return 0;
}

int api_runner_name_allowed(struct http_req *r, const char *name, enum MHD_Result *res)
{
    struct kj_err err;
    int rc;
    if (strcmp(name, r->user.name) == 0)
        return 0;
    kj_err_clear(&err);
    rc = db_runner_adopt(r->srv->db, r->user.id, name, r->srv->runner_names, &err);
    if (rc == 0)
        return 0;
    if (rc == KJ_ELIMIT)
        *res = http_error(r, MHD_HTTP_FORBIDDEN, "too_many_runner_names",
                          "runner name '%s' refused: %s", name, err.msg);
    else
        *res = http_internal(r, &err);
    return 1;
}

/* What a claim's JSON body asks for. */
struct claim_req {
    cJSON *body;                    /* owned: the parsed body; delete with cJSON_Delete() */
    const char *gpu, *runner;       /* borrowed from body */
    struct db_claim_filter filter;  /* its skip points into skip_ids */
    int64_t skip_ids[KJ_CLAIM_MAX_SKIP];
};

/* The claim's arguments from its JSON body: gpu (required), runner
 * (default: the token's name), and the optional filter (modes, skip), all
 * checked; the caller's token must be bound to gpu and may report the
 * runner name (api_runner_name_allowed, which records a name it adopts).
 * Nothing is claimed here, so a malformed body changes nothing. On failure
 * answers (400, 403) and returns 1. The caller deletes a->body in either case. */
static int claim_args(struct http_req *r, struct claim_req *a, enum MHD_Result *res)
{
    struct kj_err err;
    kj_err_clear(&err);
    if ((a->body = http_body_object(r, res)) == NULL)
        return 1;
    a->gpu = name_field(a->body, "gpu");
    a->runner = name_field(a->body, "runner");
    if (a->gpu == NULL || a->gpu[0] == '\0' || (a->runner != NULL && a->runner[0] == '\0')) {
        *res = http_error(r, MHD_HTTP_BAD_REQUEST, "bad_claim",
                          "send {\"runner\": NAME, \"gpu\": GPU_TYPE, \"arch\": ARCH}");
        return 1;
    }
    if (claim_filter_parse(a->body, &a->filter, a->skip_ids, &err) != 0) {
        *res = http_error(r, MHD_HTTP_BAD_REQUEST, "bad_claim", "%s", err.msg);
        return 1;
    }
    if (gpu_allowed(r, a->gpu, res))
        return 1;
    if (a->runner == NULL)
        a->runner = r->user.name;
    return api_runner_name_allowed(r, a->runner, res);
}

/* Claim the job the queue rule picks for a's gpu among those a's filter
 * allows. Returns 1 when it answered (the job, or an error), 0 when none
 * is queued (nothing answered). */
static int try_claim(struct http_req *r, const struct claim_req *a, enum MHD_Result *res)
{
    struct db_sub s;
    struct kj_err err;
    char secret[32];
    int rc;
    kj_err_clear(&err);
    rc = db_runner_seen(r->srv->db, r->user.id, a->runner, a->gpu, &err);
    if (rc == 0)
        rc = db_job_claim(r->srv->db, a->gpu, &a->filter, r->user.id, a->runner, &s, secret,
                          sizeof secret, &err);
    if (rc == KJ_ENOTFOUND)
        return 0;
    if (rc != 0) {
        *res = http_internal(r, &err);
        return 1;
    }
    kj_log(KJ_LOG_INFO, "queue", "claimed id=%lld runner=%s gpu=%s mode=%s", (long long)s.id,
           s.runner_name, s.gpu, kj_mode_name(s.mode));
    *res = http_json(r, MHD_HTTP_OK, job_json(&s, secret, r->srv->lease_s));
    explicit_bzero(secret, sizeof secret);
    wait_notify(r->srv->wait, s.id);
    db_sub_clear(&s);
    return 1;
}

/* Nothing queued and the runner asked to wait: park the connection on a
 * claim slot until a job of gpu is queued or deadline_ms (wait_now_ms's
 * clock) passes (wait.h).
 * Claims have a pool of their own (--max-claim-waiters), so runners never
 * take the slots of users' waits and streams, and a token parks at most
 * --max-claims-per-runner of them. Past the token's cap the answer is 429
 * too_many_claims, with every claim slot taken 503 too_many_claim_waiters
 * (each with Retry-After; the runner asks again later); while the server
 * stops, 204 at once. Any job of gpu wakes it, one its filter refuses
 * too: reclaim() then parks it again. */
static enum MHD_Result park_claim(struct http_req *r, const struct claim_req *a,
                                  int64_t deadline_ms)
{
    enum MHD_Result res;
    struct kj_err err;
    kj_err_clear(&err);
    if (!r->hold.held && wait_hold_claim(r->srv->wait, &r->hold, r->user.id, &err) != 0) {
        r->retry_after = KJ_WAITERS_RETRY_S;
        if (r->hold.user_full)
            return http_error(r, MHD_HTTP_TOO_MANY_REQUESTS, "too_many_claims",
                              "%s; claim without ?wait or retry in %d s", err.msg,
                              KJ_WAITERS_RETRY_S);
        return http_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, "too_many_claim_waiters",
                          "%s; retry in %d s", err.msg, KJ_WAITERS_RETRY_S);
    }
    if (wait_add_claim(r->srv->wait, &r->wait, &r->hold, r->conn, a->gpu, deadline_ms, &err) != 0)
        return http_no_content(r);
    /* Linked first, then claimed again: a job queued in between is not missed. */
    if (try_claim(r, a, &res)) {
        wait_remove(r->srv->wait, &r->wait);
        return res;
    }
    MHD_suspend_connection(r->conn);
    r->phase = HTTP_PHASE_WAITING;
    wait_parked(r->srv->wait, &r->wait);
    return MHD_YES;
}

/* A parked claim was resumed: a job of its type was queued, its time is
 * up, its token changed, or the server stops. The body is read again, so
 * the claim's filter holds for the job it may take now. */
static enum MHD_Result reclaim(struct http_req *r)
{
    enum MHD_Result res;
    struct kj_err err;
    const char *why = NULL;
    struct claim_req a = {0};
    /* Nobody to answer (MHD closes the connection): checked again now, so
     * that a runner stopped since the last probe is not handed a job. */
    if (r->wait.gone || wait_conn_gone(r->conn))
        return MHD_NO;
    kj_err_clear(&err);
    if (auth_recheck(r->srv->db, &r->user, &why, &err) != 0)
        return http_internal(r, &err);
    if (why != NULL)
        return api_token_gone(r, why);
    if (claim_args(r, &a, &res)) { /* the token was bound elsewhere */
        cJSON_Delete(a.body);
        return res;
    }
    /* A stopping server hands out nothing more: the runner asks the next one. */
    if (atomic_load(&r->srv->draining))
        res = http_no_content(r);
    else if (!try_claim(r, &a, &res)) {
        int64_t deadline_ms = r->wait.deadline_ms; /* the first park's: woken early, not extended */
        if (r->wait.timed_out || deadline_ms - wait_now_ms() <= 0)
            res = http_no_content(r);
        else
            res = park_claim(r, &a, deadline_ms);
    }
    cJSON_Delete(a.body);
    return res;
}

enum MHD_Result api_runner_claim(struct http_req *r)
{
    enum MHD_Result res;
    const char *w = http_query(r, "wait");
    struct claim_req a = {0};
    long wait_s = 0;
    char *end;

    if (r->phase == HTTP_PHASE_WAITING)
        return reclaim(r);
    if (w != NULL) { /* whole seconds; more than KJ_CLAIM_WAIT_MAX_S waits that long */
        wait_s = w[0] >= '0' && w[0] <= '9' && strlen(w) <= 6 ? strtol(w, &end, 10) : -1;
        if (wait_s < 0 || *end != '\0')
            return http_error(r, MHD_HTTP_BAD_REQUEST, "bad_wait",
                              "wait must be whole seconds (at most %d are waited)",
                              KJ_CLAIM_WAIT_MAX_S);
        if (wait_s > KJ_CLAIM_WAIT_MAX_S)
            wait_s = KJ_CLAIM_WAIT_MAX_S;
    }
    if (claim_args(r, &a, &res)) {
        cJSON_Delete(a.body);
        return res;
    }
    if (!try_claim(r, &a, &res))
        res = wait_s > 0 ? park_claim(r, &a, wait_now_ms() + wait_s * 1000) : http_no_content(r);
    cJSON_Delete(a.body);
    return res;
}

/* The job a runner request names: path id, the caller, and ?attempt=N
 * (required: the attempt of the claim, so a stale process sharing the
 * token cannot act on the attempt another one holds). Answers 404/400 and
 * returns 1 on a malformed request. */
static int job_ref(struct http_req *r, struct db_job_ref *ref, enum MHD_Result *res)
{
    const char *a = http_query(r, "attempt");
    ref->id = http_param_id(r, 0);
    ref->runner_id = r->user.id;
    ref->attempt = 0;
    if (ref->id == 0) {
        *res = http_error(r, MHD_HTTP_NOT_FOUND, "not_found", "no job '%.32s'", r->params[0]);
        return 1;
    }
    if (a == NULL || a[0] < '1' || a[0] > '0' + DB_MAX_ATTEMPTS || a[1] != '\0') {
        *res = http_error(r, MHD_HTTP_BAD_REQUEST, "bad_attempt",
                          "%s: send ?attempt=N, the job's attempt number from the claim (1-%d)",
                          a == NULL ? "?attempt is missing" : "?attempt is not an attempt number",
                          DB_MAX_ATTEMPTS);
        return 1;
    }
    ref->attempt = a[0] - '0';
    return 0;
}

/* Map a db error for job id to a response. */
static enum MHD_Result job_error(struct http_req *r, int rc, const struct kj_err *err)
{
    if (rc == KJ_ENOTFOUND)
        return http_error(r, MHD_HTTP_NOT_FOUND, "not_found", "no job %s", r->params[0]);
    if (rc == KJ_ECONFLICT)
        return http_error(r, MHD_HTTP_CONFLICT, "not_held", "%s", err->msg);
    return http_internal(r, err);
}

enum MHD_Result api_runner_event(struct http_req *r)
{
    struct db_job_ref ref;
    enum MHD_Result res;
    struct kj_err err;
    enum kj_event event;
    cJSON *body;
    char *data = NULL;
    int rc;

    if (job_ref(r, &ref, &res))
        return res;
    if ((body = http_body_object(r, &res)) == NULL)
        return res;
    const cJSON *ev = cJSON_GetObjectItemCaseSensitive(body, "event");
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(body, "data");
    /* Every event name but "queued", which only the server writes. */
    if (!cJSON_IsString(ev) || kj_event_parse(ev->valuestring, &event) != 0 ||
        event == KJ_EV_QUEUED) {
        cJSON_Delete(body);
        return http_error(r, MHD_HTTP_UNPROCESSABLE_CONTENT, "bad_event",
                          "event must be one of compiling, compiled, test, benchmark, verdict");
    }
    if (d != NULL && (data = cJSON_PrintUnformatted(d)) == NULL) {
        cJSON_Delete(body);
        KJ_FAIL(&err, KJ_ENOMEM, "out of memory storing an event");
        return http_internal(r, &err);
    }
    kj_err_clear(&err);
    rc = db_job_event(r->srv->db, &ref, event, data, &err);
    cJSON_free(data);
    cJSON_Delete(body);
    if (rc == KJ_ELIMIT) /* the job's event cap (db.h): refused, nothing stored */
        return http_error(r, MHD_HTTP_CONTENT_TOO_LARGE, "too_many_events", "%s", err.msg);
    if (rc != 0)
        return job_error(r, rc, &err);
    wait_notify(r->srv->wait, ref.id);
    return http_no_content(r);
}

enum MHD_Result api_runner_heartbeat(struct http_req *r)
{
    struct db_job_ref ref;
    enum MHD_Result res;
    struct kj_err err;
    const cJSON *g;
    cJSON *body;
    int rc, ok, gpu_start;

    if (job_ref(r, &ref, &res))
        return res;
    /* An optional JSON object (empty body: {}): {"gpu_start": true} says the
     * job's GPU work starts now (db_job_heartbeat); other members are
     * ignored, so runners older and newer than this server both work. */
    if ((body = http_body_object(r, &res)) == NULL)
        return res;
    g = cJSON_GetObjectItemCaseSensitive(body, "gpu_start");
    ok = g == NULL || cJSON_IsBool(g);
    gpu_start = cJSON_IsTrue(g);
    cJSON_Delete(body);
    if (!ok)
        return http_error(r, MHD_HTTP_BAD_REQUEST, "bad_heartbeat",
                          "gpu_start must be true (the job's GPU work starts now) or false");
    kj_err_clear(&err);
    if ((rc = db_job_heartbeat(r->srv->db, &ref, gpu_start, &err)) != 0)
        return job_error(r, rc, &err);
    return http_no_content(r);
}

enum MHD_Result api_runner_release(struct http_req *r)
{
    struct db_job_ref ref;
    enum MHD_Result res;
    struct kj_err err;
    char runner[DB_MAX_NAME];
    cJSON *body;
    int rc, gap = 0;

    if (job_ref(r, &ref, &res))
        return res;
    if (r->body.len > 0) { /* an optional JSON object: {"why": "stopping" | "gap"} */
        if ((body = http_body_object(r, &res)) == NULL)
            return res;
        const cJSON *why = cJSON_GetObjectItemCaseSensitive(body, "why");
        int ok = why == NULL || (cJSON_IsString(why) && (strcmp(why->valuestring, "stopping") == 0 ||
                                                        (gap = strcmp(why->valuestring, "gap") == 0)));
        cJSON_Delete(body);
        if (!ok)
            return http_error(r, MHD_HTTP_BAD_REQUEST, "bad_release",
                              "why must be \"stopping\" (the runner stops) or \"gap\" (no verdict "
                              "within a gap of a timed job)");
    }
    kj_err_clear(&err);
    if ((rc = db_job_release(r->srv->db, &ref, gap, runner, sizeof runner, &err)) != 0)
        return job_error(r, rc, &err);
    kj_log(KJ_LOG_INFO, "queue", "released id=%lld runner=%s attempt=%d%s: queued again",
           (long long)ref.id, runner, ref.attempt, gap ? " (no verdict within a gap)" : "");
    wait_notify(r->srv->wait, ref.id);
    wait_notify_gpu(r->srv->wait, NULL); /* queued again: any claim may take it */
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "ok", 1);
    cJSON_AddBoolToObject(o, "requeued", 1);
    return http_json(r, MHD_HTTP_OK, o);
}

/* Check the result body of job ref against the job and its board
 * (result_check.h): 0 with *out filled, or 1 after answering (404, 422,
 * 500). */
static int check_result(struct http_req *r, const struct db_job_ref *ref, struct rcheck_out *out,
                        enum MHD_Result *res)
{
    struct db_sub s;
    struct kj_err err;
    const struct board *b;
    int rc;
    kj_err_clear(&err);
    if ((rc = db_sub_get(r->srv->db, ref->id, 0, &s, &err)) != 0) {
        *res = rc == KJ_ENOTFOUND ? http_error(r, MHD_HTTP_NOT_FOUND, "not_found", "no job %lld",
                                               (long long)ref->id)
                                  : http_internal(r, &err);
        return 1;
    }
    b = boards_find(r->boards, s.leaderboard);
    struct rcheck_job job = {b != NULL ? b->spec : NULL, s.mode, s.gpu, s.profile_shape};
    rc = rcheck_result(&job, r->body.p, r->body.len, out, &err);
    db_sub_clear(&s);
    if (rc == KJ_EINVAL) {
        char safe[KJ_ERR_MSG];
        kj_printable(safe, sizeof safe, err.msg, sizeof safe - 1);
        kj_log(KJ_LOG_WARN, "result", "refused id=%lld runner=%s: %s", (long long)ref->id,
               r->user.name, safe);
        *res = http_error(r, MHD_HTTP_UNPROCESSABLE_CONTENT, out->code, "%s", safe);
        return 1;
    }
    if (rc != 0) {
        *res = http_internal(r, &err);
        return 1;
    }
    if (out->ndropped > 0)
        kj_log(KJ_LOG_WARN, "result", "dropped unknown keys id=%lld runner=%s count=%d keys=%s",
               (long long)ref->id, r->user.name, out->ndropped, out->dropped);
    return 0;
}

/* Count a finished job's duration for GET /metrics; a failed read only loses the sample. */
static void job_metrics(struct http_req *r, int64_t id)
{
    struct db_span sp;
    struct kj_err err;
    if (db_job_span(r->srv->db, id, &sp, &err) == 0 && sp.started_at > 0)
        metrics_job(r->srv->metrics, sp.gpu, sp.mode, (double)(sp.finished_at - sp.started_at));
}

/* Store the checked result out of job ref: db_job_finish with the medians
 * of its timed shapes (at most one per benchmark shape of a board). */
static int store_result(struct http_req *r, const struct db_job_ref *ref,
                        const struct rcheck_out *out, enum db_finish *outcome,
                        struct kj_err *err)
{
    struct db_median med[SPEC_MAX_CASES];
    struct db_result res = {out->verdict, out->has_score, out->score_ns, out->json, med,
                            out->nmedians};
    if (KJ_NEVER(out->nmedians > SPEC_MAX_CASES))
        return KJ_FAIL(err, KJ_EINTERNAL, "a result with %d timed shapes", out->nmedians);
    for (int i = 0; i < out->nmedians; i++) {
        med[i].idx = out->medians[i].idx;
        med[i].median_ns = out->medians[i].median_ns;
        med[i].raw_median_ns = out->medians[i].raw_median_ns;
        med[i].corrected = out->medians[i].corrected;
        med[i].shape = out->medians[i].shape;
    }
    return db_job_finish(r->srv->db, ref, &res, outcome, err);
}

enum MHD_Result api_runner_result(struct http_req *r)
{
    struct db_job_ref ref;
    struct rcheck_out out;
    enum MHD_Result res;
    struct kj_err err;
    enum db_finish outcome = DB_FINISH_DONE;
    int rc;

    if (job_ref(r, &ref, &res) || check_result(r, &ref, &out, &res))
        return res;
    kj_err_clear(&err);
    rc = store_result(r, &ref, &out, &outcome, &err);
    if (rc == 0 && outcome == DB_FINISH_DONE)
        kj_log(KJ_LOG_INFO, "queue", "done id=%lld runner=%s verdict=%s", (long long)ref.id,
               r->user.name, kj_verdict_name(out.verdict));
    else if (rc == 0 && outcome == DB_FINISH_REQUEUED)
        kj_log(KJ_LOG_WARN, "queue", "internal_error id=%lld runner=%s: queued again",
               (long long)ref.id, r->user.name);
    rcheck_out_clear(&out);
    if (rc != 0)
        return job_error(r, rc, &err);
    if (outcome == DB_FINISH_DONE) {
        srv_rank_invalidate(r->srv); /* committed: cached rankings read before are stale */
        job_metrics(r, ref.id);
    }
    if (outcome != DB_FINISH_DUPLICATE)
        wait_notify(r->srv->wait, ref.id);
    if (outcome == DB_FINISH_REQUEUED)
        wait_notify_gpu(r->srv->wait, NULL);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "ok", 1);
    if (outcome == DB_FINISH_DUPLICATE)
        cJSON_AddBoolToObject(o, "duplicate", 1);
    if (outcome == DB_FINISH_REQUEUED)
        cJSON_AddBoolToObject(o, "requeued", 1);
    return http_json(r, MHD_HTTP_OK, o);
}
