/*
 * serve_gap.c - test-mode jobs judged in the gaps of a timed job (see
 * serve_int.h; the gap itself is judge.h's judge_gap_fn).
 *
 * A benchmark or leaderboard job takes seconds and is never shared or
 * interrupted while it samples, so a test-mode job that arrives just after
 * one has started used to wait for all of it. Protocol v2 already stops
 * between its rounds: each group of rounds runs in a fresh submission box,
 * so between two of them nothing of the timed job runs on the GPU. In such
 * a gap the judge calls serve_gap_fill, which:
 *
 *   1. takes a test-mode job the compile-ahead process (ahead.h) holds
 *      compiled, if there is one (its first heartbeat says gpu_start);
 *      else claims one job at once (no long poll) with {"modes":
 *      ["test"], "skip": [...]} (docs/protocol.md): a test-mode job the
 *      queue rule picks among those of this GPU type; never one given
 *      back from an earlier gap of the same timed job;
 *   2. judges it as any test job, in boxes of its own, whose children wipe
 *      the timed job's secrets, source and code as well as the runner's
 *      (judge.h's judge_gap_fn), with judge_job.give_up_s: a job with no
 *      verdict within cfg->gap_s (a slow compile, a slow kernel) is given
 *      up: its boxes and compiles killed and the job given back to the
 *      server (POST .../release: queued again at once, no attempt charged),
 *      to be judged later as usual and not claimed again in this timed job;
 *   3. posts its events and result, then tears its boxes down before it
 *      returns, so the next round never shares the GPU with them; after a
 *      time_limit or runtime_error the GPU's health is checked first, as
 *      after any job's.
 *
 * So a timed job lasts at most its own time plus, per gap, one gap job's
 * give-up time and teardown; docs/timing.md 4.1 measures what gap jobs do
 * to its score. At most one gap job per gap (the judge's gaps are
 * TPLAN_PROCESSES - 1 per job), none when the runner is stopping or its
 * GPU failed a health check. A server whose claim does not know the
 * filter could hand out a timed job: it is given back at once and this
 * runner claims nothing in gaps again until it restarts.
 *
 * The same lane code judges the side lane's jobs (serve_side.c): test-mode
 * jobs claimed by a thread of their own while an untimed job (test,
 * sanitize) holds the GPU, each beside it in boxes and CUDA contexts of
 * its own, given up after cfg->gap_s as a gap job is; and the turns a
 * profile job gives between its shapes (share.h's SHARE_TURNS) are gaps.
 *
 * Threads: a gap's job runs on the main thread inside the timed job's
 * judge, with the main thread's HTTP client; the side lane's on the side
 * thread with its own client and its own compiled board files; the
 * watcher's stop (serve_gap_release, serve_lane_release) reads a lane's
 * job id under serve.mu. A lane's fields other than id and attempt are
 * its own thread's.
 */
#include "serve_int.h"
#include "sub_lang.h"
#include "curlc.h"
#include "deliver.h"
#include "judge.h"
#include "mono.h"
#include "result.h"
#include "spec.h"

#include <stdio.h>
#include <string.h>

/* A lane job's events: under its own id and attempt, with its lane's client. */
static void serve_gap_progress(void *ctx, enum kj_event event, const cJSON *data)
{
    struct serve_gap *g = ctx;
    serve_post_event(g->sv, g->h, g->id, g->attempt, event, data);
}

void serve_gap_begin(struct serve *sv, long outer_id)
{
    int off = sv->gap.off;
    memset(&sv->gap, 0, sizeof sv->gap);
    sv->gap.off = off;
    sv->gap.outer_id = outer_id;
    sv->gap.sv = sv;
    sv->gap.h = sv->http;
    /* A third of the lease at most: the watcher beats for the timed job only. */
    sv->gap.give_up_s = sv->cfg->gap_s < sv->beat_s ? sv->cfg->gap_s : sv->beat_s;
}

void serve_gap_end(struct serve *sv)
{
    if (sv->gap.jobs > 0)
        kj_log(KJ_LOG_INFO, "serve", "job=%ld: %d test job(s) judged in its gaps, %.2f s, %d "
               "given back", sv->gap.outer_id, sv->gap.jobs, sv->gap.spent_s, sv->gap.nskip);
}

void serve_lane_release(struct serve *sv, struct serve_gap *g)
{
    pthread_mutex_lock(&sv->mu);
    long id = g->id, attempt = g->attempt;
    pthread_mutex_unlock(&sv->mu);
    if (id != 0)
        serve_give_back(sv->watch_http, id, attempt, 0, "the runner stops");
}

void serve_gap_release(struct serve *sv)
{
    serve_lane_release(sv, &sv->gap);
}

/* Where a lane's job is judged, for the log: "in a gap" or "beside". */
static const char *lane_where(const struct serve_gap *g)
{
    return g->side ? "beside" : "in a gap of";
}

/* Claim a test-mode job for lane g: 1 with *reply holding it, 0 when
 * none is queued (or the claim failed: logged, the outer job goes on). */
static int serve_gap_claim(struct serve *sv, struct serve_gap *g, cJSON **reply)
{
    struct curlc_resp r;
    struct kj_err err;
    cJSON *body = cJSON_CreateObject(), *modes, *skip;
    *reply = NULL;
    cJSON_AddStringToObject(body, "runner", sv->cfg->name);
    cJSON_AddStringToObject(body, "gpu", sv->gpu_type);
    cJSON_AddStringToObject(body, "arch", sv->dev.arch);
    modes = cJSON_AddArrayToObject(body, "modes");
    cJSON_AddItemToArray(modes, cJSON_CreateString(kj_mode_name(KJ_MODE_TEST)));
    skip = cJSON_AddArrayToObject(body, "skip");
    for (int i = 0; i < g->nskip; i++)
        cJSON_AddItemToArray(skip, cJSON_CreateNumber((double)g->skip[i]));
    kj_err_clear(&err);
    int st = deliver_post(g->h, "/api/v1/runner/claim", body, &r, &err);
    cJSON_Delete(body);
    if (st == 200 && r.body != NULL) {
        *reply = cJSON_Parse(r.body);
        explicit_bzero(r.body, r.len);
    }
    if (st != 200 && st != 204)
        kj_log(KJ_LOG_WARN, "serve", "no job claimed %s job=%ld: status %d%s%s",
               lane_where(g), g->outer_id, st, st < 0 ? ": " : "", st < 0 ? err.msg : "");
    curlc_resp_free(&r);
    return *reply != NULL;
}

/* After a gap job's fault (time_limit, runtime_error) the GPU may be
 * wedged, as after any job's (serve.c's serve_check_gpu): a known-answer
 * kernel in a fresh box, which wipes outer too, decides before the timed
 * job's next round. A GPU that fails it marks the runner unhealthy: the
 * timed job's result comes out as the judge finds it, and the runner then
 * stops taking work. The gap job's own verdict stands (posted already). */
static void serve_gap_health(struct serve *sv, struct serve_gap *g, const struct secret_list *outer)
{
    struct kj_err err;
    const char *what = g->side ? "side" : "gap";
    kj_err_clear(&err);
    if (sv->ops->health(sv->cfg->gpu, outer, &err) == KJ_OK) {
        kj_log(KJ_LOG_INFO, "serve", "GPU health check passed after %s job=%ld", what, g->id);
        return;
    }
    pthread_mutex_lock(&sv->mu); /* the side lane's thread sets it too */
    sv->unhealthy = 1;
    snprintf(sv->why, sizeof sv->why, "%s", err.msg);
    pthread_mutex_unlock(&sv->mu);
    kj_log(KJ_LOG_ERROR, "serve", "GPU %d failed its health check after %s job=%ld: %s; this "
           "runner stops taking work", sv->cfg->gpu, what, g->id, err.msg);
}

/* Judge gap job (the claim's object) in this gap, its children wiping
 * outer; its result posted, or the job given back. compiled: its
 * submission compiled ahead (taken), NULL when the judge compiles it. */
static void serve_gap_judge(struct serve *sv, struct serve_gap *g, const cJSON *job,
                            struct compile_result *compiled, const struct secret_list *outer)
{
    const char *lb, *mode, *src;
    long id, attempt;
    enum kj_mode m;
    struct judge_result *result = NULL;
    struct judge_leftover *left = NULL;
    struct kj_err err;
    if (!claim_fields(job, &id, &attempt, &lb, &mode, &src)) {
        kj_log(KJ_LOG_ERROR, "serve", "malformed gap job from the server");
        return;
    }
    if (kj_mode_parse(mode, &m) != 0 || m != KJ_MODE_TEST) {
        /* An older server ignored the filter: this job needs the GPU to itself. */
        g->off = 1;
        kj_log(KJ_LOG_WARN, "serve", "the server handed out a %s job %s job=%ld: it ignores "
               "the claim's modes; no more such jobs on this runner", mode, lane_where(g),
               g->outer_id);
        serve_give_back(g->h, id, attempt, 0, "not a test-mode job");
        return;
    }
    if (claim_lang(job) == SUB_LANG_PYTHON) {
        /* A Python box takes seconds to start (PyTorch's import): more than
         * a gap gives. Back to the queue, not offered again in this job. */
        if (g->nskip < KJ_CLAIM_MAX_SKIP)
            g->skip[g->nskip++] = id;
        serve_give_back(g->h, id, attempt, 0, "a Python job is not judged in a gap");
        return;
    }
    /* The boards as loaded: a reload would free the spec the outer job's
     * judge is using. A board not loaded yet goes back to the queue, for
     * the main loop (which reloads) to find later. */
    const struct spec *spec = serve_spec_loaded(sv, lb);
    if (spec == NULL) {
        if (g->nskip < KJ_CLAIM_MAX_SKIP)
            g->skip[g->nskip++] = id;
        serve_give_back(g->h, id, attempt, 0, "a board this runner has not loaded yet");
        return;
    }
    pthread_mutex_lock(&sv->mu);
    g->id = id;
    g->attempt = attempt;
    pthread_mutex_unlock(&sv->mu);
    kj_log(KJ_LOG_INFO, "serve", "judging job=%ld leaderboard=%s mode=test %s job=%ld",
           id, lb, lane_where(g), g->outer_id);
    if (spec == NULL) {
        result = result_internal("this runner does not have that leaderboard");
    } else {
        struct judge_job jj;
        /* a Python job was given back above */
        serve_judge_job(sv, &jj, spec, src, SUB_LANG_CUDA, KJ_MODE_TEST, compiled,
                        serve_gap_progress, &left);
        jj.progress_ctx = g;
        if (g->side) /* one thread at a time: the side lane has its own */
            jj.boards = sv->side_boards;
        jj.secrets = outer; /* the runner's, the outer job's seed, source and code */
        jj.give_up_s = g->give_up_s;
        kj_err_clear(&err);
        int rc = sv->ops->judge(&jj, &result, &err);
        if (rc == KJ_ETIMEOUT) {
            if (g->nskip < KJ_CLAIM_MAX_SKIP)
                g->skip[g->nskip++] = id;
            judge_leftover_finish(left);
            left = NULL;
            serve_give_back(g->h, id, attempt, 1, g->side ? "no verdict within the side lane's time"
                                                          : "no verdict within the gap's time");
        } else if (rc != KJ_OK) {
            kj_log(KJ_LOG_ERROR, "serve", "judge failed job=%ld: %s", id, err.msg);
            result = result_internal(err.msg);
        }
    }
    int faulted = 0;
    if (result != NULL) {
        struct deliver_to to = {g->h, id, attempt, sv->cfg->name, sv->cfg->stop};
        kj_log(KJ_LOG_INFO, "serve", "judged job=%ld verdict=%s %s", id,
               result->has_verdict ? kj_verdict_name(result->verdict) : "?",
               g->side ? "beside another" : "in a gap");
        faulted = result->has_verdict && (result->verdict == KJ_V_TIME_LIMIT ||
                                          result->verdict == KJ_V_RUNTIME_ERROR);
        deliver_result(&to, result);
        result_free(result);
    }
    judge_leftover_finish(left); /* before the next round: the GPU to the timed job */
    if (faulted)
        serve_gap_health(sv, g, outer);
    pthread_mutex_lock(&sv->mu);
    g->id = g->attempt = 0;
    pthread_mutex_unlock(&sv->mu);
}

/* Judge the job of a claim's reply in lane g; its source wiped after. */
static void serve_gap_job(struct serve *sv, struct serve_gap *g, const cJSON *reply,
                          struct compile_result *compiled, const struct secret_list *outer)
{
    const cJSON *job = cJSON_GetObjectItem(reply, "job");
    if (cJSON_IsObject(job)) {
        serve_gap_judge(sv, g, job, compiled, outer);
        g->jobs++;
    }
    const cJSON *src = cJSON_GetObjectItem(job, "source");
    if (cJSON_IsString(src)) /* no later child finds it in freed memory */
        explicit_bzero(src->valuestring, strlen(src->valuestring));
}

void serve_gap_fill(void *ctx, const struct secret_list *outer)
{
    struct serve *sv = ctx;
    struct serve_gap *g = &sv->gap;
    cJSON *reply = NULL;
    if (g->off || *sv->cfg->stop || sv->unhealthy) /* serve_job sets no gap when gap_s is 0 */
        return;
    double t0 = mono_now();
    struct compile_result c;
    struct kj_err err;
    int has = 0, ahead = 0;
    memset(&c, 0, sizeof c);
    kj_err_clear(&err);
    /* A test job compiled ahead first: it was claimed before any the
     * server still queues, and needs no compile now. */
    if (sv->ahead != NULL) {
        int rc = ahead_gap(sv->ahead, g->skip, g->nskip, &reply, &c, &has, &err);
        ahead = rc == 1;
        if (rc < 0)
            kj_log(KJ_LOG_WARN, "serve", "gap of job=%ld: %s", g->outer_id, err.msg);
    }
    if (ahead || serve_gap_claim(sv, g, &reply)) {
        cJSON *job = cJSON_GetObjectItem(reply, "job");
        const cJSON *id = cJSON_GetObjectItem(job, "id"), *at = cJSON_GetObjectItem(job, "attempt");
        if (ahead && cJSON_IsNumber(id)) /* held since its claim: charged from now */
            serve_post_gpu_start(sv->http, (long)id->valuedouble,
                                 cJSON_IsNumber(at) ? (long)at->valuedouble : 1);
        serve_gap_job(sv, g, reply, has ? &c : NULL, outer);
    }
    compile_result_free(&c); /* taken by the judge, or never filled */
    cJSON_Delete(reply);
    g->spent_s += mono_now() - t0;
}

/* The side lane's turn at the compile-ahead process (ahead_gap): a test
 * job it holds compiled, taken first (it was claimed before any the server
 * still queues). The main thread is inside the outer job's judge and asks
 * the process nothing meanwhile; the watcher's stop waits for side_in_ahead
 * to clear before it ends the process (serve.c's serve_release). 1 with
 * *reply and *c filled (*has: a cubin), else 0. */
static int serve_side_ahead(struct serve *sv, struct serve_gap *g, cJSON **reply,
                            struct compile_result *c, int *has)
{
    struct kj_err err;
    int rc = 0;
    pthread_mutex_lock(&sv->mu);
    int may = sv->ahead != NULL && !sv->releasing;
    sv->side_in_ahead = may;
    pthread_mutex_unlock(&sv->mu);
    if (may) {
        kj_err_clear(&err);
        rc = ahead_gap(sv->ahead, g->skip, g->nskip, reply, c, has, &err);
        if (rc < 0)
            kj_log(KJ_LOG_WARN, "serve", "side lane of job=%ld: %s", g->outer_id, err.msg);
        pthread_mutex_lock(&sv->mu);
        sv->side_in_ahead = 0;
        pthread_cond_broadcast(&sv->cv);
        pthread_mutex_unlock(&sv->mu);
    }
    return rc == 1;
}

int serve_lane_take(struct serve *sv, struct serve_gap *g, const struct secret_list *outer)
{
    cJSON *reply = NULL;
    struct compile_result c;
    int has = 0, ahead = 0;
    if (g->off || *sv->cfg->stop || sv->unhealthy)
        return 0;
    memset(&c, 0, sizeof c);
    if (g->side)
        ahead = serve_side_ahead(sv, g, &reply, &c, &has);
    if (!ahead && !serve_gap_claim(sv, g, &reply))
        return 0;
    double t0 = mono_now();
    if (ahead) { /* held since its claim: charged from now */
        const cJSON *job = cJSON_GetObjectItem(reply, "job");
        const cJSON *id = cJSON_GetObjectItem(job, "id"), *at = cJSON_GetObjectItem(job, "attempt");
        if (cJSON_IsNumber(id))
            serve_post_gpu_start(g->h, (long)id->valuedouble,
                                 cJSON_IsNumber(at) ? (long)at->valuedouble : 1);
    }
    serve_gap_job(sv, g, reply, has ? &c : NULL, outer);
    compile_result_free(&c); /* taken by the judge, or never filled */
    cJSON_Delete(reply);
    g->spent_s += mono_now() - t0;
    return 1;
}
