/*
 * serve.c - the supervisor loop of a GPU host (see serve.h).
 *
 * At start it probes the host (sandbox) and its GPU and reports the outcome
 * once (POST /api/v1/runner/hello: ready, or refused with the reason, so
 * the server's log and metrics show a runner that cannot work). Then:
 * claim (POST /api/v1/runner/claim) -> judge_run() in fresh boxes, each step
 * posted to /runner/jobs/{id}/events -> POST /runner/jobs/{id}/result, retried
 * until the server takes it. Every job request names the claim's ?attempt.
 * The judge's own failures, and a result the server refuses (422: it does
 * not fit the job or the board), are posted as internal_error so the user
 * is never charged for them. A claim refused with 401 or 403 (a token not
 * bound to this GPU type) stops the runner with the server's message.
 */
#include "serve.h"
#include "box.h"
#include "gputype.h"
#include "httpc.h"
#include "judge.h"
#include "kj_ticker.h"
#include "protocol.h"
#include "rbox.h"
#include "result.h"
#include "sandbox.h"
#include "secret.h"
#include "spec.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SERVE_TIMEOUT_MS 30000
#define SERVE_IDLE_S 1
#define SERVE_MAX_BACKOFF_S 30
#define SERVE_HEARTBEAT_S 20 /* well inside the server's lease (120 s by default) */

struct serve {
    const struct serve_cfg *cfg;
    struct spec **specs;       /* owned, nspecs entries */
    int nspecs;
    struct box_device dev;
    char gpu_type[64];
    long job_id;               /* job being judged, for progress posts */
    long attempt;              /* the claim's attempt, sent back as ?attempt= */
    int unhealthy;             /* 1: the GPU failed its health check; stop taking work */
    int refused;               /* 1: the server refused this token's claims (401/403); stop */
    char why[256];             /* what the health check said */
    struct secret_list secrets; /* what every child wipes (secret.h): the token; a job adds
                                 * its secret seed to a copy */
};

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}

/* POST a JSON body; returns the HTTP status or <0. Caller frees *resp. */
static int serve_post(struct serve *sv, const char *path, const cJSON *body,
                      struct httpc_response *resp, struct kj_err *err)
{
    char *text = cJSON_PrintUnformatted(body);
    if (text == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory");
    int rc = httpc_request(sv->cfg->server, "POST", path, sv->cfg->token, "application/json",
                          text, strlen(text), SERVE_TIMEOUT_MS, resp, err);
    free(text);
    return rc == KJ_OK ? resp->status : rc;
}

static void serve_progress(void *ctx, enum kj_event event, const cJSON *data)
{
    struct serve *sv = ctx;
    struct httpc_response r;
    struct kj_err err;
    char path[128];
    cJSON *body = cJSON_CreateObject();
    cJSON_AddStringToObject(body, "event", kj_event_name(event));
    cJSON_AddItemToObject(body, "data", cJSON_Duplicate(data, 1));
    snprintf(path, sizeof path, "/api/v1/runner/jobs/%ld/events?attempt=%ld", sv->job_id,
             sv->attempt);
    memset(&r, 0, sizeof r);
    int st = serve_post(sv, path, body, &r, &err);
    if (st < 0 || st >= 300)
        kj_log(KJ_LOG_WARN, "serve", "progress not recorded job=%ld event=%s status=%d",
               sv->job_id, kj_event_name(event), st);
    httpc_response_free(&r);
    cJSON_Delete(body);
}

static const struct spec *serve_spec(struct serve *sv, const char *name)
{
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < sv->nspecs; i++)
            if (strcmp(sv->specs[i]->name, name) == 0)
                return sv->specs[i];
        /* Not known: the server may have a newer folder; reload once. */
        struct spec **specs;
        int n;
        struct kj_err err;
        if (pass == 1 || spec_load_all(sv->cfg->leaderboards, &specs, &n, &err) != KJ_OK)
            break;
        spec_free_all(sv->specs, sv->nspecs);
        sv->specs = specs;
        sv->nspecs = n;
    }
    return NULL;
}

/* The "message" of a JSON error answer into out (printable, "" when none). */
static void serve_error_msg(const struct httpc_response *r, char *out, size_t outsz)
{
    cJSON *j = r->body != NULL ? cJSON_Parse(r->body) : NULL;
    const cJSON *m = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "error"), "message");
    out[0] = '\0';
    if (cJSON_IsString(m))
        kj_printable(out, outsz, m->valuestring, outsz - 1);
    cJSON_Delete(j);
}

/* Post the result until the server answers 2xx (or says the job is not
 * ours). A result it refuses (422) becomes an internal_error naming why,
 * posted in its place once: the job is tried again, the user not charged. */
static void serve_post_result(struct serve *sv, long id, const struct judge_result *result)
{
    char path[128], why[300];
    double backoff = 1;
    cJSON *body = result_json(result), *replaced = NULL;
    snprintf(path, sizeof path, "/api/v1/runner/jobs/%ld/result?attempt=%ld", id, sv->attempt);
    for (int attempt = 0; attempt < 20; attempt++) {
        struct httpc_response r;
        struct kj_err err;
        memset(&r, 0, sizeof r);
        int st = serve_post(sv, path, replaced != NULL ? replaced : body, &r, &err);
        if (st == 422)
            serve_error_msg(&r, why, sizeof why);
        httpc_response_free(&r);
        if ((st >= 200 && st < 300) || st == 409 || st == 404 || (st == 422 && replaced != NULL)) {
            if (st >= 300)
                kj_log(KJ_LOG_WARN, "serve", "result refused job=%ld status=%d", id, st);
            break;
        }
        if (st == 422) {
            char msg[400];
            kj_log(KJ_LOG_ERROR, "serve", "the server refused the result of job=%ld: %s; "
                   "posting internal_error instead", id, why);
            snprintf(msg, sizeof msg, "runner %s: the server refused its result (%s)",
                     sv->cfg->name, why);
            struct judge_result *ir = result_internal(msg);
            replaced = ir != NULL ? result_json(ir) : NULL;
            result_free(ir);
            continue;
        }
        kj_log(KJ_LOG_WARN, "serve", "result not delivered job=%ld status=%d: %s", id, st,
               st < 0 ? err.msg : "");
        sleep_s(backoff);
        backoff = backoff * 2 > SERVE_MAX_BACKOFF_S ? SERVE_MAX_BACKOFF_S : backoff * 2;
    }
    cJSON_Delete(replaced);
    cJSON_Delete(body);
}

/* Keeps the job's lease alive while it is judged: the ticker serve_job()
 * starts calls it every SERVE_HEARTBEAT_S. */
static void serve_heartbeat(void *arg)
{
    struct serve *sv = arg;
    struct httpc_response r;
    struct kj_err err;
    char path[128];
    snprintf(path, sizeof path, "/api/v1/runner/jobs/%ld/heartbeat?attempt=%ld", sv->job_id,
             sv->attempt);
    memset(&r, 0, sizeof r);
    if (httpc_request(sv->cfg->server, "POST", path, sv->cfg->token, "application/json", "{}",
                      2, SERVE_TIMEOUT_MS, &r, &err) != KJ_OK || r.status >= 300)
        kj_log(KJ_LOG_WARN, "serve", "heartbeat not taken job=%ld status=%d", sv->job_id,
               r.status);
    httpc_response_free(&r);
}

/* After a time_limit or runtime_error the GPU may be wedged: a known-answer
 * kernel in a fresh box decides. When it fails, the verdict cannot be
 * trusted either: the job goes back to the queue as an internal error (a
 * retry elsewhere) and this runner stops. */
static struct judge_result *serve_check_gpu(struct serve *sv, struct judge_result *result)
{
    struct kj_err err;
    char msg[400];
    if (!result->has_verdict ||
        (result->verdict != KJ_V_TIME_LIMIT && result->verdict != KJ_V_RUNTIME_ERROR))
        return result;
    kj_err_clear(&err);
    if (box_health(sv->cfg->gpu, &sv->secrets, &err) == KJ_OK) {
        kj_log(KJ_LOG_INFO, "serve", "GPU health check passed after job=%ld (%s)", sv->job_id,
               kj_verdict_name(result->verdict));
        return result;
    }
    sv->unhealthy = 1;
    snprintf(sv->why, sizeof sv->why, "%s", err.msg);
    kj_log(KJ_LOG_ERROR, "serve", "GPU %d failed its health check after job=%ld: %s; this "
           "runner stops taking work", sv->cfg->gpu, sv->job_id, err.msg);
    snprintf(msg, sizeof msg, "runner %s: its GPU failed a health check after this job (%s); "
             "the job is judged again on another runner", sv->cfg->name, err.msg);
    result_free(result);
    return result_internal(msg);
}

/* Judge one claimed job object and post its result. The job's secret seed
 * string is wiped once read. */
static void serve_job(struct serve *sv, cJSON *job)
{
    const cJSON *id = cJSON_GetObjectItem(job, "id"), *lb = cJSON_GetObjectItem(job, "leaderboard"),
                *mode = cJSON_GetObjectItem(job, "mode"), *src = cJSON_GetObjectItem(job, "source"),
                *secret = cJSON_GetObjectItem(job, "secret_seed");
    struct judge_result *result = NULL;
    struct kj_err err;
    if (!cJSON_IsNumber(id) || !cJSON_IsString(lb) || !cJSON_IsString(mode) || !cJSON_IsString(src)) {
        kj_log(KJ_LOG_ERROR, "serve", "malformed job from the server");
        return;
    }
    sv->job_id = (long)id->valuedouble;
    const cJSON *att = cJSON_GetObjectItem(job, "attempt");
    sv->attempt = cJSON_IsNumber(att) ? (long)att->valuedouble : 1;
    const struct spec *spec = serve_spec(sv, lb->valuestring);
    enum kj_mode m;
    int mode_ok = kj_mode_parse(mode->valuestring, &m) == 0;
    kj_log(KJ_LOG_INFO, "serve", "judging job=%ld leaderboard=%s mode=%s", sv->job_id,
           lb->valuestring, mode->valuestring);
    if (spec == NULL || !mode_ok) {
        result = result_internal(spec == NULL ? "this runner does not have that leaderboard"
                                              : "unknown mode");
    } else {
        struct judge_job jj;
        memset(&jj, 0, sizeof jj);
        jj.spec = spec;
        jj.source = src->valuestring;
        jj.source_len = strlen(src->valuestring);
        jj.mode = m;
        jj.secret_seed = cJSON_IsString(secret) ? strtoull(secret->valuestring, NULL, 10) : 0;
        if (cJSON_IsString(secret))
            explicit_bzero(secret->valuestring, strlen(secret->valuestring));
        struct secret_list wipe = sv->secrets;
        secret_add(&wipe, &jj.secret_seed, sizeof jj.secret_seed);
        jj.secrets = &wipe;
        jj.gpu = sv->cfg->gpu;
        jj.arch = sv->dev.arch;
        jj.progress = serve_progress;
        jj.progress_ctx = sv;
        struct kj_ticker *beat = NULL;
        kj_err_clear(&err);
        if (kj_ticker_start(SERVE_HEARTBEAT_S * 1000, serve_heartbeat, sv, "heartbeat", &beat,
                            &err) != KJ_OK)
            kj_log(KJ_LOG_WARN, "serve", "no heartbeats for job=%ld: %s", sv->job_id, err.msg);
        kj_err_clear(&err);
        if (judge_run(&jj, &result, &err) != KJ_OK) {
            kj_log(KJ_LOG_ERROR, "serve", "judge failed job=%ld: %s", sv->job_id, err.msg);
            result = result_internal(err.msg);
        }
        kj_ticker_stop(beat);
        if (result != NULL)
            result = serve_check_gpu(sv, result);
    }
    if (result == NULL) { /* out of memory: the lease runs out and the job is tried again */
        kj_log(KJ_LOG_ERROR, "serve", "no memory for the result of job=%ld", sv->job_id);
        return;
    }
    kj_log(KJ_LOG_INFO, "serve", "judged job=%ld verdict=%s", sv->job_id,
           result->has_verdict ? kj_verdict_name(result->verdict) : "?");
    serve_post_result(sv, sv->job_id, result);
    result_free(result);
}

/* Report to the server that this runner is ready (reason NULL) or refuses
 * to work, and why. Best effort: a server that cannot be reached is logged. */
static void serve_hello(struct serve *sv, const char *reason)
{
    struct httpc_response r;
    struct kj_err err;
    cJSON *body = cJSON_CreateObject();
    char why[512];
    cJSON_AddStringToObject(body, "runner", sv->cfg->name);
    cJSON_AddStringToObject(body, "state", reason == NULL ? "ready" : "refused");
    if (reason == NULL) {
        cJSON_AddStringToObject(body, "gpu", sv->gpu_type);
        cJSON_AddStringToObject(body, "arch", sv->dev.arch);
    } else {
        snprintf(why, sizeof why, "%s", reason);
        cJSON_AddStringToObject(body, "reason", why);
        if (sv->cfg->gpu_type != NULL)
            cJSON_AddStringToObject(body, "gpu", sv->cfg->gpu_type);
    }
    memset(&r, 0, sizeof r);
    kj_err_clear(&err);
    int st = serve_post(sv, "/api/v1/runner/hello", body, &r, &err);
    cJSON_Delete(body);
    httpc_response_free(&r);
    if (st >= 200 && st < 300)
        kj_log(KJ_LOG_INFO, "serve", "reported to %s: %s name=%s", sv->cfg->server,
               reason == NULL ? "ready" : "refused", sv->cfg->name);
    else if (st < 0)
        kj_log(KJ_LOG_WARN, "serve", "cannot report to %s: %s", sv->cfg->server, err.msg);
    else
        kj_log(KJ_LOG_WARN, "serve", "the server %s refused the start-up report: HTTP %d",
               sv->cfg->server, st);
}

/* One claim. Returns 1 if a job was judged, 0 if none was queued, <0 on error. */
static int serve_claim(struct serve *sv, struct kj_err *err)
{
    struct httpc_response r;
    cJSON *body = cJSON_CreateObject(), *reply = NULL;
    cJSON_AddStringToObject(body, "runner", sv->cfg->name);
    cJSON_AddStringToObject(body, "gpu", sv->gpu_type);
    cJSON_AddStringToObject(body, "arch", sv->dev.arch);
    memset(&r, 0, sizeof r);
    int st = serve_post(sv, "/api/v1/runner/claim", body, &r, err), rc = 0;
    cJSON_Delete(body);
    if (st == 200 && r.body != NULL) {
        reply = cJSON_Parse(r.body);
        explicit_bzero(r.body, r.body_len); /* the job's seed: only the parsed copy stays */
    }
    if (st == 200 && reply != NULL && cJSON_IsObject(cJSON_GetObjectItem(reply, "job"))) {
        serve_job(sv, cJSON_GetObjectItem(reply, "job"));
        rc = 1;
    } else if (st == 401 || st == 403) {
        char why[300];
        serve_error_msg(&r, why, sizeof why);
        rc = KJ_FAIL(err, KJ_EINVAL, "the server refused this runner's claim for %s (HTTP %d): %s",
                     sv->gpu_type, st, why);
        sv->refused = 1;
    } else if (st != 204) {
        rc = st < 0 ? st : KJ_FAIL(err, KJ_EIO, "claim answered HTTP %d", st);
    }
    cJSON_Delete(reply);
    httpc_response_free(&r);
    return rc;
}

int serve_loop(const struct serve_cfg *cfg, struct kj_err *err)
{
    struct serve sv;
    double backoff = SERVE_IDLE_S;
    memset(&sv, 0, sizeof sv);
    sv.cfg = cfg;
    /* The token is read-only to this process; a child writes to its own copy. */
    secret_add(&sv.secrets, (void *)cfg->token, strlen(cfg->token));
    /* Refuse to judge on a host that cannot build the boxes, saying what it lacks. */
    struct sandbox_probe sp;
    char missing[512];
    sandbox_probe(&sp);
    if (rbox_missing(&sp, missing, sizeof missing) > 0) {
        KJ_FAIL(err, KJ_EINVAL, "this host cannot sandbox submissions (missing: %.300s); "
                "the runner does not judge without it", missing);
        serve_hello(&sv, err->msg);
        return err->code;
    }
    kj_log(KJ_LOG_INFO, "serve", "host: namespaces, seccomp and no_new_privs available; "
           "cgroup v2 memory+pids %s; Landlock ABI %d", sp.cgroup2 ? "yes" : "no", sp.landlock_abi);
    int rc = spec_load_all(cfg->leaderboards, &sv.specs, &sv.nspecs, err);
    if (rc == KJ_OK && (rc = box_probe(cfg->gpu, &sv.secrets, &sv.dev, err)) != KJ_OK) {
        char why[KJ_ERR_MSG];
        snprintf(why, sizeof why, "%s", err->msg);
        rc = KJ_FAIL(err, rc, "no usable GPU %d: %.200s", cfg->gpu, why);
    }
    if (rc != KJ_OK) {
        serve_hello(&sv, err->msg);
        goto out;
    }
    /* "NVIDIA H200" -> "H200": the server takes results only from a device
     * of the job's type, by the same rule (common/gputype.h). */
    gputype_of_device(sv.dev.name, sv.gpu_type, sizeof sv.gpu_type);
    if (cfg->gpu_type != NULL && strcmp(cfg->gpu_type, sv.gpu_type) != 0) {
        rc = KJ_FAIL(err, KJ_EINVAL, "--gpu-type %.63s does not match GPU %d (\"%s\", type %s); "
                     "the server refuses results from a device of another type", cfg->gpu_type,
                     cfg->gpu, sv.dev.name, sv.gpu_type[0] ? sv.gpu_type : "none");
        serve_hello(&sv, err->msg);
        goto out;
    }
    if (!gputype_valid(sv.gpu_type)) {
        rc = KJ_FAIL(err, KJ_EINVAL, "GPU %d (\"%s\") has no GPU type name", cfg->gpu,
                     sv.dev.name);
        serve_hello(&sv, err->msg);
        goto out;
    }
    kj_log(KJ_LOG_INFO, "serve", "runner ready name=%s gpu=%d of %d device=\"%s\" type=%s "
           "arch=%s l2=%lld sandbox=%s", cfg->name, cfg->gpu, sv.dev.gpu_count, sv.dev.name,
           sv.gpu_type, sv.dev.arch, sv.dev.l2_bytes, sv.dev.sandbox[0] ? sv.dev.sandbox : "none");
    serve_hello(&sv, NULL);
    while (!*cfg->stop && !sv.unhealthy) {
        struct kj_err cerr;
        int r = serve_claim(&sv, &cerr);
        if (r == 1 && cfg->once)
            break;
        if (sv.refused) {
            rc = KJ_FAIL(err, KJ_EINVAL, "%s", cerr.msg);
            goto out;
        }
        if (r < 0) {
            kj_log(KJ_LOG_WARN, "serve", "claim failed, retrying in %.0f s: %s", backoff, cerr.msg);
            sleep_s(backoff);
            backoff = backoff * 2 > SERVE_MAX_BACKOFF_S ? SERVE_MAX_BACKOFF_S : backoff * 2;
        } else {
            backoff = SERVE_IDLE_S;
            if (r == 0)
                sleep_s(0.1);
        }
    }
    if (sv.unhealthy)
        rc = KJ_FAIL(err, KJ_ECUDA, "GPU %d is unhealthy: %s", cfg->gpu, sv.why);
out:
    spec_free_all(sv.specs, sv.nspecs);
    return rc;
}
