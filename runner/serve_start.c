/*
 * serve_start.c - the supervisor's start (serve_int.h): its HTTP clients,
 * the probe of the host and its GPU, the start-up report to the server
 * (POST /api/v1/runner/hello: ready, or refused with the reason), and the
 * compile-ahead process forked once the runner is ready (ahead.h). The
 * loop itself is serve.c's.
 */
#include "serve_int.h"
#include "claim.h"
#include "curlc.h"
#include "deliver.h"
#include "gputype.h"
#include "judge.h"
#include "rbox.h"
#include "sandbox.h"
#include "secret.h"
#include "spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Report to the server that this runner is ready (reason NULL) or refuses
 * to work, and why. A server that cannot be reached is logged and the
 * runner goes on (it retries its claims); one whose certificate fails or
 * that gives no HTTP answer (an https:// server reached with http://) is a
 * setting to fix: KJ_EIO with err saying so. */
static int serve_hello(struct serve *sv, const char *reason, struct kj_err *err)
{
    struct curlc_resp r;
    struct kj_err herr;
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
    kj_err_clear(&herr);
    int st = deliver_post(sv->http, "/api/v1/runner/hello", body, &r, &herr);
    enum curlc_fail fail = r.fail;
    cJSON_Delete(body);
    curlc_resp_free(&r);
    if (st >= 200 && st < 300)
        kj_log(KJ_LOG_INFO, "serve", "reported to %s: %s name=%s", sv->cfg->server,
               reason == NULL ? "ready" : "refused", sv->cfg->name);
    else if (st < 0 && (fail == CURLC_FAIL_TLS || fail == CURLC_FAIL_IO)) {
        *err = herr; /* "POST URL: what failed (what to check)" */
        return KJ_EIO;
    }
    else if (st < 0)
        kj_log(KJ_LOG_WARN, "serve", "cannot report to %s: %s", sv->cfg->server, herr.msg);
    else
        kj_log(KJ_LOG_WARN, "serve", "the server %s refused the start-up report: HTTP %d",
               sv->cfg->server, st);
    return 0;
}

/* The GPU host's probe: the sandbox first (refusing to judge on a host
 * that cannot build the boxes, saying what it lacks), then the device. */
static int serve_gpu_probe(int gpu, const struct secret_list *wipe, struct box_device *dev,
                           struct kj_err *err)
{
    struct sandbox_probe sp;
    char missing[512], why[KJ_ERR_MSG];
    int rc;
    sandbox_probe(&sp);
    if (rbox_missing(&sp, missing, sizeof missing) > 0)
        return KJ_FAIL(err, KJ_EINVAL, "this host cannot sandbox submissions (missing: %.300s); "
                       "the runner does not judge without it", missing);
    kj_log(KJ_LOG_INFO, "serve", "host: namespaces, seccomp and no_new_privs available; "
           "cgroup v2 memory+pids %s; Landlock ABI %d", sp.cgroup2 ? "yes" : "no", sp.landlock_abi);
    if ((rc = box_probe(gpu, wipe, dev, err)) != KJ_OK) {
        snprintf(why, sizeof why, "%s", err->msg);
        return KJ_FAIL(err, rc, "no usable GPU %d: %.200s", gpu, why);
    }
    return KJ_OK;
}

const struct serve_ops serve_gpu_ops = {serve_gpu_probe, judge_run, box_health,
                                               judge_prestart_start, judge_prestart_release};

/* The four HTTP clients of cfg's server (a malformed URL or token fails here). */
int serve_open(struct serve *sv, struct kj_err *err)
{
    struct curlc_opts o;
    int rc;
    memset(&o, 0, sizeof o);
    o.base_url = sv->cfg->server;
    o.bearer = sv->cfg->token;
    o.ca_file = sv->cfg->ca_file;
    o.connect_timeout_ms = SERVE_CONNECT_MS;
    o.timeout_ms = SERVE_TIMEOUT_MS;
    o.user_agent = "kjudge-runner";
    if ((rc = curlc_new(&o, &sv->http, err)) != KJ_OK ||
        (rc = curlc_new(&o, &sv->watch_http, err)) != KJ_OK ||
        (rc = curlc_new(&o, &sv->side_http, err)) != KJ_OK)
        return KJ_FAIL(err, rc, "--server %.200s: %.300s", sv->cfg->server, err->msg);
    o.abort_flag = sv->cfg->stop;
    o.abort_after_ms = CLAIM_STOP_ANSWER_MS;
    if ((rc = curlc_new(&o, &sv->claim_http, err)) != KJ_OK)
        return KJ_FAIL(err, rc, "--server %.200s: %.300s", sv->cfg->server, err->msg);
    /* The token is read-only to this process; a child writes to its own copy. */
    secret_add(&sv->secrets, (void *)sv->cfg->token, strlen(sv->cfg->token));
    struct curlc *clients[4] = {sv->http, sv->watch_http, sv->claim_http, sv->side_http};
    for (int i = 0; i < 4; i++) {
        size_t len = 0;
        char *auth = curlc_auth(clients[i], &len);
        secret_add(&sv->secrets, auth, len);
    }
    return KJ_OK;
}

/* Say once, at start, when boards rank GPU time (their "score", GPU time
 * when they name none, or $KJUDGE_SCORE) and this runner's boxes cannot
 * record it: those boards' jobs are then ranked on events, which their
 * rankings keep apart from GPU-time results (docs/timing.md 8). */
static void serve_gpu_time_warn(const struct serve *sv)
{
    const char *first = NULL, *env = getenv("KJUDGE_SCORE");
    int n = 0;
    if (sv->dev.gpu_time)
        return;
    for (int i = 0; i < sv->nspecs; i++)
        if (judge_score_gpu(sv->specs[i], env) && n++ == 0)
            first = sv->specs[i]->name;
    if (n > 0)
        kj_log(KJ_LOG_WARN, "serve", "no GPU time on this runner (%s): %d board(s) that rank GPU "
               "time (%s%s) will be ranked on events here, apart from GPU-time results; give "
               "the runner CUPTI (KJUDGE_CUPTI_LIB, docs/timing.md 8)", sv->dev.gpu_time_note, n,
               first, n > 1 ? ", ..." : "");
}

/* Probe the host and GPU and say so to the server: 0 when ready. */
int serve_ready(struct serve *sv, struct kj_err *err)
{
    const struct serve_cfg *cfg = sv->cfg;
    int rc = sv->ops->probe(cfg->gpu, &sv->secrets, &sv->dev, err);
    if (rc == KJ_OK)
        rc = spec_load_all(cfg->leaderboards, &sv->specs, &sv->nspecs, err);
    if (rc == KJ_OK) {
        /* "NVIDIA H200" -> "H200": the server takes results only from a
         * device of the job's type, by the same rule (common/gputype.h). */
        gputype_of_device(sv->dev.name, sv->gpu_type, sizeof sv->gpu_type);
        if (cfg->gpu_type != NULL && strcmp(cfg->gpu_type, sv->gpu_type) != 0)
            rc = KJ_FAIL(err, KJ_EINVAL, "--gpu-type %.63s does not match GPU %d (\"%s\", type "
                         "%s); the server refuses results from a device of another type",
                         cfg->gpu_type, cfg->gpu, sv->dev.name,
                         sv->gpu_type[0] ? sv->gpu_type : "none");
        else if (!gputype_valid(sv->gpu_type))
            rc = KJ_FAIL(err, KJ_EINVAL, "GPU %d (\"%s\") has no GPU type name", cfg->gpu,
                         sv->dev.name);
    }
    if (rc != KJ_OK) {
        struct kj_err herr;
        serve_hello(sv, err->msg, &herr);
        return rc;
    }
    kj_log(KJ_LOG_INFO, "serve", "runner ready name=%s gpu=%d of %d device=\"%s\" type=%s "
           "arch=%s l2=%lld sandbox=%s gpu_time=%s server=%s", cfg->name, cfg->gpu,
           sv->dev.gpu_count, sv->dev.name, sv->gpu_type, sv->dev.arch, sv->dev.l2_bytes,
           sv->dev.sandbox[0] ? sv->dev.sandbox : "none", sv->dev.gpu_time ? "yes" : "no",
           cfg->server);
    serve_gpu_time_warn(sv);
    return serve_hello(sv, NULL, err);
}

/* Fork the compile-ahead process (ahead.h) when asked; without it this
 * loop claims its jobs itself, as it does with --once. */
void serve_ahead_start(struct serve *sv)
{
    struct kj_err err;
    const struct serve_cfg *cfg = sv->cfg;
    if (cfg->ahead <= 0 || cfg->once)
        return;
    struct ahead_cfg ac = {cfg->server, cfg->token, cfg->ca_file, cfg->name, sv->gpu_type,
                           &sv->dev, cfg->leaderboards, cfg->ahead, 20, &sv->secrets, cfg->stop};
    kj_err_clear(&err);
    if (ahead_start(&ac, &sv->ahead, &err) != KJ_OK)
        kj_log(KJ_LOG_WARN, "serve", "no compile-ahead (%s): jobs are claimed one at a time",
               err.msg);
}
