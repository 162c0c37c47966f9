/*
 * serve.c - the supervisor loop of a GPU host (see serve.h).
 *
 * At start it probes the host (sandbox) and its GPU and reports the outcome
 * once (POST /api/v1/runner/hello: ready, or refused with the reason, so
 * the server's log and metrics show a runner that cannot work). Then:
 * claim (POST /api/v1/runner/claim) -> judge in fresh boxes, each step
 * posted to /runner/jobs/{id}/events -> POST /runner/jobs/{id}/result, retried
 * until the server takes it. Every job request names the claim's ?attempt.
 * The judge's own failures, and a result the server refuses (422: it does
 * not fit the job or the board), are posted as internal_error so the user
 * is never charged for them. A claim refused with 401 or 403 (a token not
 * bound to this GPU type) stops the runner with the server's message, and
 * so does a server whose certificate cannot be verified at start.
 *
 * The result goes out before the job's boxes are torn down: the judge
 * kills them and hands over their reaping (judge.h's judge_leftover),
 * which a thread of its own does (teardown.h) while this loop already
 * claims the next job and starts judging it. Only the GPU health check
 * after a time_limit or runtime_error comes before the post, since it can
 * change the verdict; it waits for every teardown first. Why the overlap
 * is safe: the boxes are dead (SIGKILL, pipes closed) before the result is
 * posted, so nothing of the old job runs or answers; what is left is the
 * kernel and driver freeing their memory and CUDA contexts, and reaping
 * names each pid (no other waitpid of this process takes -1). A test-mode
 * job's verdict does not depend on timing, so its boxes may start while
 * the old contexts go; a benchmark, leaderboard, profile or sanitize job
 * waits for the teardown before it is judged, so ranked timing and the
 * tools never share the GPU with it.
 *
 * Sharing (share.h, cfg->share): beside a job whose mode may share
 * (sanitize by default) a side lane judges test-mode jobs at the same
 * time (serve_side.c), started before the job is judged and stopped (its
 * last job finished) once the job's result is posted, before the next
 * claim; a job whose mode gives turns (timed modes between rounds, profile
 * between shapes) has serve_gap.c's gaps instead. At most one teardown runs; a second
 * waits for it. A stop waits for it too before the process ends (when the
 * watcher gives a job back, at most SERVE_TEARDOWN_WAIT_S), so no box and
 * no cgroup of a judged job is left behind. The thread forks nothing and
 * takes only the locks the watcher thread also takes (the log's).
 *
 * The next job's boxes are started before it is claimed (judge.h's
 * judge_prestart): after a job's result is posted, and at the start of a
 * test-mode job, the loop starts a pair for the same board, so a job of
 * that board finds its CUDA contexts made (they take about 0.4 s on an
 * H200, most of a test-mode verdict) and only compiles, loads and runs.
 * A timed job never has another pair started beside it: a pair is started
 * during a test-mode job only, or between jobs, and a timed job that finds
 * one uses it or has it torn down (with the teardown it waits for) before
 * it is judged. A job of another board, or under a tool, gives the pair
 * up to the teardown thread. At most one pair waits; it holds no secret of
 * any job (forked before the job was claimed). A stop tears it down with
 * the rest.
 *
 * Compile-ahead (ahead.h, --ahead, default 2): a process forked at start
 * (serve_start.c) claims the next jobs and compiles them while this loop
 * judges; the loop then asks it for its next job instead of claiming, and
 * judges it with its cubin (judge_job.compiled). A submission that does
 * not compile never comes here: the process posts its result. Such a job
 * was held since its claim, so the watcher's first heartbeat says
 * {"gpu_start": true} at once and its result is posted only after that.
 * A stop ends the process, which gives its jobs back (ahead_end); if it
 * dies, the loop claims for itself again.
 *
 * Claims are long polls (SERVE_CLAIM_PATH, POST /runner/claim?wait=20): the
 * server answers the moment a job of this GPU type is queued, or 204 when
 * the wait ends, and the runner asks again at once; a stop drops the
 * claim in flight within about a second (curlc's abort flag) once it has
 * waited CLAIM_STOP_ANSWER_MS for an answer, never one being answered: a
 * job that arrives after the stop goes straight back (serve_claim), so a
 * claimed job is always judged or given back.
 *
 * The result and profile mode's artifact are posted by deliver.c, which
 * every JSON request of this file goes through (deliver_post).
 *
 * Requests go through common/curlc.h (libcurl: http and https, the
 * certificate verified against the system's CAs plus --ca-file, proxies
 * from http_proxy/https_proxy/no_proxy). Three clients: the main thread's
 * (hello, events, result), its claim client (dropped on a stop) and the
 * watcher's. While a job is judged
 * the watcher thread sends heartbeats, and once a stop is asked it gives
 * the job grace_s to end; after that (or at a second signal) it waits for
 * any event post in flight, gives the job back (POST .../release, which
 * the server requeues at once without charging an attempt) and ends the
 * process, boxes included, with status 0.
 *
 * Secrets (secret.h): the token (and each client's copy of its
 * Authorization header) and, during a leaderboard job, the seed are listed
 * for every forked child to wipe; the claim's body and seed string are
 * wiped once read (curlc wipes the bodies it frees).
 */
#include "serve_int.h"
#include "curlc.h"
#include "deliver.h"
#include "judge.h"
#include "mono.h"
#include "protocol.h"
#include "result.h"
#include "secret.h"
#include "spec.h"
#include "sub_lang.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* How a job of mode m shares the GPU (share.h): the runner's policy. */
static enum share_how serve_how(const struct serve *sv, enum kj_mode m)
{
    struct share_policy def;
    if (sv->cfg->share != NULL)
        return sv->cfg->share->how[m];
    share_default(&def);
    return def.how[m];
}

static void serve_progress(void *ctx, enum kj_event event, const cJSON *data)
{
    struct serve *sv = ctx;
    serve_post_event(sv, sv->http, sv->job_id, sv->attempt, event, data);
}

/* ahead_end's callback: a job the compile-ahead process had handed over
 * when the runner stopped, not judged, goes back (on the watcher's
 * client: the watcher is not running, or is the caller). */
static void serve_ahead_give_back(void *ctx, long id, long attempt)
{
    struct serve *sv = ctx;
    serve_give_back(sv->watch_http, id, attempt, 0, "the runner stops");
}

/* The watcher gives the job back (POST .../release), then ends the
 * process: the boxes of the job still being judged die with it
 * (PR_SET_PDEATHSIG). Called with sv->mu held. */
static void serve_release(struct serve *sv)
{
    sv->releasing = 1;
    while (sv->posting > 0) /* the event posts in flight end first */
        pthread_cond_wait(&sv->cv, &sv->mu);
    pthread_mutex_unlock(&sv->mu);
    serve_gap_release(sv); /* a job judged in a gap of this one first */
    serve_lane_release(sv, &sv->side); /* and one beside it */
    serve_give_back(sv->watch_http, sv->job_id, sv->attempt, 0, "the runner stops");
    pthread_mutex_lock(&sv->mu);
    while (sv->side_in_ahead) /* the side lane's question to the process ends first */
        pthread_cond_wait(&sv->cv, &sv->mu);
    pthread_mutex_unlock(&sv->mu);
    ahead_end(sv->ahead, serve_ahead_give_back, sv); /* the jobs claimed ahead go back too */
    sv->ahead = NULL;
    /* The main thread is in the judge and leaves sv->pre alone until the
     * watcher has ended, so this thread may take it. */
    if (sv->pre != NULL) {
        judge_leftover_finish(sv->pre->drop(sv->pre));
        sv->pre = NULL;
    }
    if (!teardown_wait_for(&sv->td, SERVE_TEARDOWN_WAIT_S)) /* the job before's boxes */
        kj_log(KJ_LOG_WARN, "serve", "stopped: the boxes of job=%ld were not reaped within "
               "%d s", sv->td.job_id, SERVE_TEARDOWN_WAIT_S);
    _exit(0);
}

/* The first heartbeat of a job held before its turn (compile-ahead):
 * {"gpu_start": true}, so that its user's fair share is charged from now,
 * not from the claim. Sent by the watcher as the judge starts; the result
 * is posted only after it (serve_judge waits for sv->gpu_start to drop),
 * so the server never sees the result first. */
static void serve_gpu_start(struct serve *sv)
{
    serve_post_gpu_start(sv->watch_http, sv->job_id, sv->attempt);
    pthread_mutex_lock(&sv->mu);
    sv->gpu_start = 0;
    pthread_cond_broadcast(&sv->cv);
    pthread_mutex_unlock(&sv->mu);
}

/* Runs beside the judge of one job until serve_job() sets beat_stop: a
 * heartbeat every beat_s keeps the lease; after a stop is asked, the job
 * has grace_s to end (a second signal: none) before serve_release(). */
static void *serve_watch(void *arg)
{
    struct serve *sv = arg;
    char path[128];
    double next_beat = mono_now() + sv->beat_s, deadline = -1;
    snprintf(path, sizeof path, "/api/v1/runner/jobs/%ld/heartbeat?attempt=%ld", sv->job_id,
             sv->attempt);
    if (sv->gpu_start) /* held before its turn: the server charges from now */
        serve_gpu_start(sv);
    pthread_mutex_lock(&sv->mu);
    while (!sv->beat_stop) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += (long)(SERVE_WATCH_TICK_S * 1e9);
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&sv->cv, &sv->mu, &until);
        if (sv->beat_stop)
            break;
        double now = mono_now();
        int stop = *sv->cfg->stop;
        if (stop && deadline < 0) {
            deadline = now + sv->cfg->grace_s;
            kj_log(KJ_LOG_INFO, "serve", "stopping: job=%ld has %.0f s to finish, else it is "
                   "given back", sv->job_id, sv->cfg->grace_s);
        }
        if (stop && (stop > 1 || now >= deadline))
            serve_release(sv); /* does not return */
        if (now < next_beat)
            continue;
        next_beat = now + sv->beat_s;
        pthread_mutex_unlock(&sv->mu);
        struct curlc_resp r;
        struct kj_err err;
        cJSON *empty = cJSON_CreateObject();
        kj_err_clear(&err);
        int st = deliver_post(sv->watch_http, path, empty, &r, &err);
        if (st < 0 || st >= 300)
            kj_log(KJ_LOG_WARN, "serve", "heartbeat not taken job=%ld status=%d%s%s", sv->job_id,
                   st, st < 0 ? ": " : "", st < 0 ? err.msg : "");
        cJSON_Delete(empty);
        curlc_resp_free(&r);
        pthread_mutex_lock(&sv->mu);
    }
    pthread_mutex_unlock(&sv->mu);
    return NULL;
}

/* After a time_limit or runtime_error the GPU may be wedged: a known-answer
 * kernel in a fresh box decides, once the job's own boxes are gone (*left
 * is torn down first). When it fails, the verdict cannot be trusted
 * either: the job goes back to the queue as an internal error (a retry
 * elsewhere) and this runner stops. So does a job during whose gaps the
 * GPU failed the check (serve_gap.c). */
static struct judge_result *serve_check_gpu(struct serve *sv, struct judge_result *result,
                                            struct judge_leftover **left)
{
    struct kj_err err;
    char msg[400];
    if (sv->unhealthy) { /* failed after a job judged in this one's gaps */
        snprintf(msg, sizeof msg, "runner %s: its GPU failed a health check during this job "
                 "(%s); the job is judged again on another runner", sv->cfg->name, sv->why);
        result_free(result);
        return result_internal(msg);
    }
    if (!result->has_verdict ||
        (result->verdict != KJ_V_TIME_LIMIT && result->verdict != KJ_V_RUNTIME_ERROR))
        return result;
    teardown_start(&sv->td, sv->job_id, *left); /* after the one before */
    *left = NULL;
    teardown_wait(&sv->td);
    kj_err_clear(&err);
    if (sv->ops->health(sv->cfg->gpu, &sv->secrets, &err) == KJ_OK) {
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

/* Judge jj beside the watcher thread (heartbeats, the stop's grace). The
 * boxes' teardown is left in *jj->leftover for after the result is posted. */
static struct judge_result *serve_judge(struct serve *sv, const struct judge_job *jj)
{
    struct judge_result *result = NULL;
    struct kj_err err;
    pthread_t watch;
    sv->beat_stop = 0;
    int watching = pthread_create(&watch, NULL, serve_watch, sv) == 0;
    if (!watching)
        kj_log(KJ_LOG_WARN, "serve", "no heartbeats for job=%ld", sv->job_id);
    kj_err_clear(&err);
    if (sv->ops->judge(jj, &result, &err) != KJ_OK) {
        kj_log(KJ_LOG_ERROR, "serve", "judge failed job=%ld: %s", sv->job_id, err.msg);
        result = result_internal(err.msg);
    }
    pthread_mutex_lock(&sv->mu);
    while (watching && sv->gpu_start) /* its first heartbeat goes before the result */
        pthread_cond_wait(&sv->cv, &sv->mu);
    sv->gpu_start = 0;
    sv->beat_stop = 1;
    pthread_cond_signal(&sv->cv);
    pthread_mutex_unlock(&sv->mu);
    if (watching)
        pthread_join(watch, NULL);
    return result != NULL ? serve_check_gpu(sv, result, jj->leftover) : NULL;
}

/* Where job sv->job_id's result goes (deliver.h). */
static struct deliver_to serve_to(const struct serve *sv)
{
    struct deliver_to to = {sv->http, sv->job_id, sv->attempt, sv->cfg->name, sv->cfg->stop};
    return to;
}

/* Give the waiting pair of boxes (if any) to the teardown thread. */
static void serve_drop_pre(struct serve *sv)
{
    if (sv->pre == NULL)
        return;
    teardown_start(&sv->td, sv->job_id, sv->pre->drop(sv->pre));
    sv->pre = NULL;
}

/* Whether a pair may start now: none waits already, the runner can start
 * one, is not stopping, judges more than one job and its GPU is healthy. */
static int serve_may_prestart(const struct serve *sv)
{
    return sv->pre == NULL && sv->ops->prestart != NULL && !sv->cfg->once && !*sv->cfg->stop &&
           !sv->unhealthy;
}

/* Start the boxes of the next job of board spec, unless a pair waits
 * already, the runner is stopping or judges one job only: a Python pair
 * when the job before was a Python file (python) and this runner has a
 * Python environment and py_prestart, importing Helion when that file
 * named it (helion), else a CUDA pair. A participant's next file is
 * mostly like the last. A failure is logged: the next job starts its own. */
static void serve_prestart(struct serve *sv, const struct spec *spec, int python, int helion)
{
    struct kj_err err;
    kj_err_clear(&err);
    if (sv->pre != NULL && sv->pre->held) { /* started beside the job that just ended */
        if (sv->ops->release(sv->pre, &err) == KJ_OK)
            return;
        kj_log(KJ_LOG_WARN, "serve", "the Python pair started beside job=%ld: %s; the next "
               "job's boxes start now", sv->job_id, err.msg);
        serve_drop_pre(sv);
        kj_err_clear(&err);
    }
    if (spec == NULL || !serve_may_prestart(sv))
        return;
    const struct pyenv *py = python && sv->cfg->py_prestart ? sv->cfg->pyenv : NULL;
    int rc = sv->ops->prestart(spec, sv->cfg->gpu, &sv->secrets, py,
                               py != NULL && helion ? JUDGE_PRE_HELION : 0, &sv->pre, &err);
    if (rc != KJ_OK && rc != KJ_ELIMIT) /* over the limit: by design, not worth a warning */
        kj_log(KJ_LOG_WARN, "serve", "the next job's boxes start with it: %s", err.msg);
}

/* Beside a timed Python job of board spec: the next job's Python pair,
 * held before CUDA (JUDGE_PRE_HELD), so that its imports (PyTorch, and
 * Helion when helion: 18 s on the H200) overlap this job instead of
 * following it; serve_prestart makes it whole when the job ends. Only
 * with py_early, as serve_prestart's other conditions. */
static void serve_prestart_held(struct serve *sv, const struct spec *spec, int helion)
{
    struct kj_err err;
    if (!sv->cfg->py_early || !sv->cfg->py_prestart || sv->cfg->pyenv == NULL ||
        sv->ops->release == NULL || !serve_may_prestart(sv))
        return;
    kj_err_clear(&err);
    int rc = sv->ops->prestart(spec, sv->cfg->gpu, &sv->secrets, sv->cfg->pyenv,
                               JUDGE_PRE_HELD | (helion ? JUDGE_PRE_HELION : 0), &sv->pre, &err);
    if (rc != KJ_OK && rc != KJ_ELIMIT)
        kj_log(KJ_LOG_WARN, "serve", "the next job's Python boxes start after this one: %s",
               err.msg);
}

/* Judge one claimed job object and post its result; only then are its
 * boxes torn down (the user's verdict waits for none of it). The job's
 * secret seed string is wiped once read. */
static void serve_job(struct serve *sv, cJSON *job, struct compile_result *compiled)
{
    const cJSON *secret = cJSON_GetObjectItem(job, "secret_seed");
    const char *lb, *mode, *src;
    struct judge_result *result = NULL;
    struct judge_leftover *left = NULL; /* owned: the boxes still to reap */
    if (!claim_fields(job, &sv->job_id, &sv->attempt, &lb, &mode, &src)) {
        kj_log(KJ_LOG_ERROR, "serve", "malformed job from the server");
        return;
    }
    const struct spec *spec = serve_spec(sv, lb);
    enum kj_mode m;
    int mode_ok = kj_mode_parse(mode, &m) == 0;
    struct judge_prestart *pre = NULL; /* the waiting pair, when it fits this job */
    int lang = claim_lang(job);
    int helion = lang == SUB_LANG_PYTHON && judge_names_helion(src, strlen(src));
    if (spec != NULL && mode_ok && judge_prestart_fits(sv->pre, spec, m, lang, helion)) {
        pre = sv->pre;
        sv->pre = NULL;
    }
    serve_drop_pre(sv); /* another board's, or a tool's job */
    if (!mode_ok || m != KJ_MODE_TEST) /* timed or under a tool: the GPU to itself */
        teardown_wait(&sv->td);
    kj_log(KJ_LOG_INFO, "serve", "judging job=%ld leaderboard=%s mode=%s", sv->job_id, lb, mode);
    if (spec == NULL || !mode_ok) {
        result = result_internal(spec == NULL ? "this runner does not have that leaderboard"
                                              : "unknown mode");
    } else {
        if (m == KJ_MODE_TEST) /* untimed: the next pair may start beside it */
            serve_prestart(sv, spec, lang == SUB_LANG_PYTHON, helion);
        else if (lang == SUB_LANG_PYTHON && (m == KJ_MODE_BENCHMARK || m == KJ_MODE_LEADERBOARD))
            serve_prestart_held(sv, spec, helion); /* its imports, no CUDA, beside the timing */
        struct judge_job jj;
        serve_judge_job(sv, &jj, spec, src, lang, m, compiled, serve_progress, &left);
        const cJSON *tool = cJSON_GetObjectItem(job, "tool"), *shape = cJSON_GetObjectItem(job, "shape");
        if (cJSON_IsString(tool) && kj_sanitizer_parse(tool->valuestring, &jj.sanitizer) != 0)
            jj.sanitizer = KJ_SAN_MEMCHECK;
        if (cJSON_IsNumber(shape) && shape->valuedouble >= 0 &&
            shape->valuedouble < spec->nbenchmarks)
            jj.profile_shape = 1 + (int)shape->valuedouble;
        jj.secret_seed = cJSON_IsString(secret) ? strtoull(secret->valuestring, NULL, 10) : 0;
        if (cJSON_IsString(secret))
            explicit_bzero(secret->valuestring, strlen(secret->valuestring));
        struct secret_list wipe = sv->secrets;
        secret_add(&wipe, &jj.secret_seed, sizeof jj.secret_seed);
        jj.secrets = &wipe;
        jj.prestart = pre; /* the judge's now */
        pre = NULL;
        if (serve_how(sv, m) == SHARE_TURNS && sv->cfg->gap_s > 0 && !sv->cfg->once) {
            jj.gap = serve_gap_fill; /* test-mode jobs between its rounds (or shapes) */
            jj.gap_ctx = sv;
        }
        sv->beat_s = claim_beat_s(job);
        serve_gap_begin(sv, sv->job_id);
        serve_side_start(sv, sv->job_id, m, (char *)src); /* test-mode jobs beside it */
        result = serve_judge(sv, &jj);
        serve_gap_end(sv);
        explicit_bzero(&jj.secret_seed, sizeof jj.secret_seed);
    }
    explicit_bzero((char *)src, strlen(src)); /* no later child finds it in freed memory */
    if (compiled != NULL) /* not judged: no leaderboard or mode for it */
        compile_result_free(compiled);
    if (pre != NULL) /* not judged: no leaderboard or mode for it */
        teardown_start(&sv->td, sv->job_id, pre->drop(pre));
    if (result == NULL) { /* out of memory: the lease runs out and the job is tried again */
        kj_log(KJ_LOG_ERROR, "serve", "no memory for the result of job=%ld", sv->job_id);
        serve_side_stop(sv);
        teardown_start(&sv->td, sv->job_id, left);
        return;
    }
    kj_log(KJ_LOG_INFO, "serve", "judged job=%ld verdict=%s", sv->job_id,
           result->has_verdict ? kj_verdict_name(result->verdict) : "?");
    struct deliver_to to = serve_to(sv);
    if (result->artifact[0] != '\0')
        deliver_artifact(&to, result->artifact);
    deliver_result(&to, result);
    result_free(result);
    serve_side_stop(sv); /* the GPU free of side jobs before the next job */
    teardown_start(&sv->td, sv->job_id, left); /* beside the next claim and job */
    serve_prestart(sv, spec, lang == SUB_LANG_PYTHON, helion); /* beside that teardown */
}

/* One claim. Returns 1 if a job was judged, 0 if none was queued, <0 on error. */
static int serve_claim(struct serve *sv, struct kj_err *err)
{
    struct curlc_resp r;
    cJSON *body = cJSON_CreateObject(), *reply = NULL;
    cJSON_AddStringToObject(body, "runner", sv->cfg->name);
    cJSON_AddStringToObject(body, "gpu", sv->gpu_type);
    cJSON_AddStringToObject(body, "arch", sv->dev.arch);
    int st = deliver_post(sv->claim_http, SERVE_CLAIM_PATH, body, &r, err), rc = 0;
    cJSON_Delete(body);
    if (st == 200 && r.body != NULL) {
        reply = cJSON_Parse(r.body);
        explicit_bzero(r.body, r.len); /* the job's seed: only the parsed copy stays */
    }
    long id, attempt;
    const char *lb, *mode, *src;
    cJSON *job = st == 200 ? cJSON_GetObjectItem(reply, "job") : NULL;
    if (cJSON_IsObject(job) && *sv->cfg->stop && claim_fields(job, &id, &attempt, &lb, &mode, &src)) {
        /* answered as the stop came (claim.h, CLAIM_STOP_ANSWER_MS): back to the server */
        const cJSON *seed = cJSON_GetObjectItem(job, "secret_seed");
        explicit_bzero((char *)src, strlen(src)); /* freed below: wiped first, as serve_job does */
        if (cJSON_IsString(seed))
            explicit_bzero(seed->valuestring, strlen(seed->valuestring));
        serve_give_back(sv->watch_http, id, attempt, 0, "the runner stops");
    } else if (cJSON_IsObject(job)) {
        sv->gpu_start = 0;
        serve_job(sv, job, NULL);
        rc = 1;
    } else if (st == 401 || st == 403) {
        char why[300];
        deliver_error_msg(&r, why, sizeof why);
        rc = KJ_FAIL(err, KJ_EINVAL, "the server refused this runner's claim for %s (HTTP %d): %s",
                     sv->gpu_type, st, why);
        sv->refused = 1;
    } else if (st != 204) {
        rc = st < 0 ? st : KJ_FAIL(err, KJ_EIO, "claim answered HTTP %d", st);
    }
    cJSON_Delete(reply);
    curlc_resp_free(&r);
    return rc;
}

/* The next job from the compile-ahead process: as serve_claim. When the
 * process has ended, this loop claims for itself from then on. */
static int serve_next_ahead(struct serve *sv, struct kj_err *err)
{
    cJSON *reply = NULL;
    struct compile_result c;
    int has = 0, rc = ahead_next(sv->ahead, sv->cfg->stop, &reply, &c, &has, err);
    if (rc < 0) {
        kj_log(KJ_LOG_WARN, "serve", "%s; this runner claims its jobs itself from now on",
               err->msg);
        ahead_end(sv->ahead, serve_ahead_give_back, sv);
        sv->ahead = NULL;
        return 0;
    }
    if (rc == 0)
        return 0;
    if (*sv->cfg->stop) { /* handed over as the stop came: back to the server */
        ahead_return(reply, has ? &c : NULL, serve_ahead_give_back, sv);
        return 0;
    }
    sv->gpu_start = 1; /* held since its claim */
    serve_job(sv, cJSON_GetObjectItem(reply, "job"), has ? &c : NULL);
    cJSON_Delete(reply);
    return 1;
}

int serve_loop(const struct serve_cfg *cfg, struct kj_err *err)
{
    struct serve sv;
    pthread_condattr_t ca;
    double backoff = SERVE_IDLE_S;
    int rc;
    memset(&sv, 0, sizeof sv);
    sv.cfg = cfg;
    sv.ops = cfg->ops != NULL ? cfg->ops : &serve_gpu_ops;
    pthread_mutex_init(&sv.mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&sv.cv, &ca);
    pthread_cond_init(&sv.side_cv, &ca);
    pthread_condattr_destroy(&ca);
    if (teardown_init(&sv.td) != KJ_OK) {
        rc = KJ_FAIL(err, KJ_EINTERNAL, "cannot set up the teardown's lock");
        goto early;
    }
    if ((rc = serve_open(&sv, err)) != KJ_OK || (rc = serve_ready(&sv, err)) != KJ_OK)
        goto out;
    if ((sv.boards = judge_boards_new()) == NULL)
        kj_log(KJ_LOG_WARN, "serve", "no memory to keep the boards' compiled files");
    serve_ahead_start(&sv);
    while (!*cfg->stop && !sv.unhealthy) {
        struct kj_err cerr;
        double t0 = mono_now();
        int r = sv.ahead != NULL ? serve_next_ahead(&sv, &cerr) : serve_claim(&sv, &cerr);
        if (r == 1 && cfg->once)
            break;
        if (r < 0 && *cfg->stop) /* the claim was dropped for the stop */
            break;
        if (sv.refused) {
            rc = KJ_FAIL(err, KJ_EINVAL, "%s", cerr.msg);
            goto out;
        }
        if (r < 0) {
            kj_log(KJ_LOG_WARN, "serve", "claim failed, retrying in %.0f s: %s", backoff, cerr.msg);
            mono_sleep(backoff, cfg->stop);
            backoff = backoff * 2 > SERVE_MAX_BACKOFF_S ? SERVE_MAX_BACKOFF_S : backoff * 2;
        } else {
            backoff = SERVE_IDLE_S;
            /* An empty answer that came at once (every waiting slot of the
             * server taken, or a server without long polls): ask again soon. */
            if (r == 0 && mono_now() - t0 < 0.5)
                mono_sleep(0.1, cfg->stop);
        }
    }
    if (sv.unhealthy)
        rc = KJ_FAIL(err, KJ_ECUDA, "GPU %d is unhealthy: %s", cfg->gpu, sv.why);
    else if (*cfg->stop)
        kj_log(KJ_LOG_INFO, "serve", "stopped name=%s", cfg->name);
out:
    ahead_end(sv.ahead, serve_ahead_give_back, &sv);
    serve_drop_pre(&sv);
    teardown_destroy(&sv.td); /* no box is left behind */
early:
    judge_boards_free(sv.boards);
    spec_free_all(sv.specs, sv.nspecs);
    curlc_free(sv.http);
    curlc_free(sv.watch_http);
    curlc_free(sv.claim_http);
    curlc_free(sv.side_http);
    judge_boards_free(sv.side_boards);
    pthread_cond_destroy(&sv.cv);
    pthread_cond_destroy(&sv.side_cv);
    pthread_mutex_destroy(&sv.mu);
    return rc;
}
