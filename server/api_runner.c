/*
 * api_runner.c - the runner endpoints of docs/protocol.md:
 * POST /api/v1/runner/claim, /runner/jobs/{id}/events, /runner/jobs/{id}/heartbeat,
 * /runner/jobs/{id}/result.
 *
 * GPU hosts (runner tokens only) pull the oldest queued job for their GPU
 * type (db_sub_claim moves it to running under a lease, in one transaction),
 * report progress events and heartbeats (each extends the lease), and post
 * the result object, which is validated and stored as sent (db_job_finish;
 * an internal_error with attempts left queues the job again). Every change
 * wakes the ?wait=1 requests and event streams of that submission
 * (wait_notify). A request naming a lost lease gets 409 and changes
 * nothing. The secret seed leaves the server only here.
 */
#include "api.h"
#include "metrics.h"

#include <math.h> /* isfinite only */
#include <stdio.h>
#include <string.h>

static const char *const verdicts[] = {"accepted", "compile_error", "rejected", "wrong_answer",
                                       "runtime_error", "time_limit", "internal_error", NULL};
static const char *const events[] = {"compiling", "compiled", "test", "benchmark", "verdict", NULL};

static int one_of(const char *v, const char *const *set)
{
    for (int i = 0; set[i] != NULL; i++)
        if (strcmp(v, set[i]) == 0)
            return 1;
    return 0;
}

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
    cJSON_AddStringToObject(job, "mode", s->mode);
    cJSON_AddStringToObject(job, "gpu", s->gpu);
    cJSON_AddStringToObject(job, "file_name", s->file_name);
    cJSON_AddStringToObject(job, "source", s->source != NULL ? s->source : "");
    if (strcmp(s->mode, "leaderboard") == 0)
        cJSON_AddStringToObject(job, "secret_seed", secret);
    cJSON_AddNumberToObject(job, "attempt", s->attempts + 1);
    cJSON_AddNumberToObject(job, "lease_seconds", lease_s);
    return root;
}

enum MHD_Result api_runner_claim(struct http_req *r)
{
    enum MHD_Result res;
    cJSON *body = api_body_object(r, &res);
    struct db_sub s;
    struct kj_err err;
    char secret[32];
    int rc;

    if (body == NULL)
        return res;
    const char *gpu = name_field(body, "gpu"), *runner = name_field(body, "runner");
    if (gpu == NULL || gpu[0] == '\0' || (runner != NULL && runner[0] == '\0')) {
        cJSON_Delete(body);
        return http_error(r, MHD_HTTP_BAD_REQUEST, "bad_claim",
                          "send {\"runner\": NAME, \"gpu\": GPU_TYPE, \"arch\": ARCH}");
    }
    kj_err_clear(&err);
    if (runner == NULL)
        runner = r->user.name;
    rc = db_runner_seen(r->srv->db, r->user.id, runner, gpu, &err);
    if (rc == 0)
        rc = db_sub_claim(r->srv->db, gpu, r->user.id, runner, &s, secret, sizeof secret, &err);
    cJSON_Delete(body);
    if (rc == KJ_ENOTFOUND)
        return http_no_content(r);
    if (rc != 0)
        return http_internal(r, &err);
    kj_log(KJ_LOG_INFO, "queue", "claimed id=%lld runner=%s gpu=%s mode=%s", (long long)s.id,
           s.runner_name, s.gpu, s.mode);
    res = http_json(r, MHD_HTTP_OK, job_json(&s, secret, r->srv->lease_s));
    db_sub_clear(&s);
    wait_notify(r->srv->wait, s.id);
    return res;
}

/* The job a runner request names: path id, the caller, ?attempt=N if given.
 * Answers 404/400 and returns 1 on a malformed request. */
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
    if (a == NULL)
        return 0;
    if (a[0] < '1' || a[0] > '9' || a[1] != '\0') {
        *res = http_error(r, MHD_HTTP_BAD_REQUEST, "bad_attempt",
                          "attempt must be the job's attempt number from the claim (1-%d)",
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
    cJSON *body;
    char *data = NULL;
    int rc;

    if (job_ref(r, &ref, &res))
        return res;
    if ((body = api_body_object(r, &res)) == NULL)
        return res;
    const cJSON *ev = cJSON_GetObjectItemCaseSensitive(body, "event");
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(body, "data");
    if (!cJSON_IsString(ev) || !one_of(ev->valuestring, events)) {
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
    rc = db_job_event(r->srv->db, &ref, ev->valuestring, data, &err);
    cJSON_free(data);
    cJSON_Delete(body);
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
    cJSON *body;
    int rc;

    if (job_ref(r, &ref, &res))
        return res;
    if (r->body_len > 0) { /* an optional JSON object, ignored */
        if ((body = api_body_object(r, &res)) == NULL)
            return res;
        cJSON_Delete(body);
    }
    kj_err_clear(&err);
    if ((rc = db_job_heartbeat(r->srv->db, &ref, &err)) != 0)
        return job_error(r, rc, &err);
    return http_no_content(r);
}

/* Validate verdict and score_ns of a result; answers 422 and returns 1 on a problem. */
static int check_result(struct http_req *r, const cJSON *res, const char **verdict,
                        int *has_score, double *score, enum MHD_Result *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(res, "verdict");
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(res, "score_ns");
    if (!cJSON_IsString(v) || !one_of(v->valuestring, verdicts)) {
        *out = http_error(r, MHD_HTTP_UNPROCESSABLE_CONTENT, "bad_verdict",
                          "verdict must be one of accepted, compile_error, rejected, wrong_answer, "
                          "runtime_error, time_limit, internal_error");
        return 1;
    }
    *verdict = v->valuestring;
    *has_score = 0;
    if (sc == NULL || cJSON_IsNull(sc))
        return 0;
    if (!cJSON_IsNumber(sc) || !isfinite(sc->valuedouble) || sc->valuedouble <= 0) {
        *out = http_error(r, MHD_HTTP_UNPROCESSABLE_CONTENT, "bad_score",
                          "score_ns must be a positive number or null");
        return 1;
    }
    *has_score = 1;
    *score = sc->valuedouble;
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

enum MHD_Result api_runner_result(struct http_req *r)
{
    struct db_job_ref ref;
    enum MHD_Result res;
    struct kj_err err;
    const char *verdict = NULL;
    double score = 0;
    enum db_finish outcome = DB_FINISH_DONE;
    int has_score = 0, rc;
    cJSON *body;

    if (job_ref(r, &ref, &res))
        return res;
    if ((body = api_body_object(r, &res)) == NULL)
        return res;
    if (check_result(r, body, &verdict, &has_score, &score, &res)) {
        cJSON_Delete(body);
        return res;
    }
    kj_err_clear(&err);
    rc = db_job_finish(r->srv->db, &ref, verdict, has_score, score, r->body, &outcome, &err);
    if (rc == 0 && outcome == DB_FINISH_DONE)
        kj_log(KJ_LOG_INFO, "queue", "done id=%lld runner=%s verdict=%s", (long long)ref.id,
               r->user.name, verdict);
    else if (rc == 0 && outcome == DB_FINISH_REQUEUED)
        kj_log(KJ_LOG_WARN, "queue", "internal_error id=%lld runner=%s: queued again",
               (long long)ref.id, r->user.name);
    cJSON_Delete(body);
    if (rc != 0)
        return job_error(r, rc, &err);
    if (outcome == DB_FINISH_DONE) {
        srv_rank_invalidate(r->srv); /* committed: cached rankings read before are stale */
        job_metrics(r, ref.id);
    }
    if (outcome != DB_FINISH_DUPLICATE)
        wait_notify(r->srv->wait, ref.id);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "ok", 1);
    if (outcome == DB_FINISH_DUPLICATE)
        cJSON_AddBoolToObject(o, "duplicate", 1);
    if (outcome == DB_FINISH_REQUEUED)
        cJSON_AddBoolToObject(o, "requeued", 1);
    return http_json(r, MHD_HTTP_OK, o);
}
