/*
 * serve_base.c - what the supervisor's files (serve_int.h) share about the
 * jobs they judge: a claimed job's fields, its progress events posted to
 * the server, and the board it names. serve.c judges the claimed job with
 * them, serve_gap.c the test-mode jobs in the gaps of a timed one and, on
 * the side lane's thread (serve_side.c), beside an untimed one.
 */
#include "serve_int.h"
#include "curlc.h"
#include "deliver.h"
#include "judge.h"
#include "spec.h"

#include <stdio.h>
#include <string.h>

void serve_post_event(struct serve *sv, struct curlc *h, long id, long attempt,
                      enum kj_event event, const cJSON *data)
{
    struct curlc_resp r;
    struct kj_err err;
    char path[128];
    /* Nothing more about a job the watcher is giving back: the next claim
     * of it may be another runner's, with the same attempt number. */
    pthread_mutex_lock(&sv->mu);
    if (sv->releasing) {
        pthread_mutex_unlock(&sv->mu);
        return;
    }
    sv->posting++;
    pthread_mutex_unlock(&sv->mu);
    cJSON *body = cJSON_CreateObject();
    cJSON_AddStringToObject(body, "event", kj_event_name(event));
    cJSON_AddItemToObject(body, "data", cJSON_Duplicate(data, 1));
    snprintf(path, sizeof path, "/api/v1/runner/jobs/%ld/events?attempt=%ld", id, attempt);
    kj_err_clear(&err);
    int st = deliver_post(h, path, body, &r, &err);
    if (st < 0 || st >= 300)
        kj_log(KJ_LOG_WARN, "serve", "progress not recorded job=%ld event=%s status=%d%s%s",
               id, kj_event_name(event), st, st < 0 ? ": " : "", st < 0 ? err.msg : "");
    curlc_resp_free(&r);
    cJSON_Delete(body);
    pthread_mutex_lock(&sv->mu);
    sv->posting--;
    pthread_cond_broadcast(&sv->cv);
    pthread_mutex_unlock(&sv->mu);
}

const struct spec *serve_spec(struct serve *sv, const char *name)
{
    return spec_find_reload(sv->cfg->leaderboards, &sv->specs, &sv->nspecs, name);
}

const struct spec *serve_spec_loaded(const struct serve *sv, const char *name)
{
    for (int i = 0; i < sv->nspecs; i++)
        if (strcmp(sv->specs[i]->name, name) == 0)
            return sv->specs[i];
    return NULL;
}

void serve_post_gpu_start(struct curlc *h, long id, long attempt)
{
    char path[128];
    struct curlc_resp r;
    struct kj_err err;
    cJSON *body = cJSON_CreateObject();
    cJSON_AddBoolToObject(body, "gpu_start", 1);
    snprintf(path, sizeof path, "/api/v1/runner/jobs/%ld/heartbeat?attempt=%ld", id, attempt);
    kj_err_clear(&err);
    int st = deliver_post(h, path, body, &r, &err);
    if (st < 0 || st >= 300)
        kj_log(KJ_LOG_WARN, "serve", "gpu_start not taken job=%ld status=%d%s%s; its fair "
               "share counts from its claim", id, st, st < 0 ? ": " : "", st < 0 ? err.msg : "");
    cJSON_Delete(body);
    curlc_resp_free(&r);
}

void serve_give_back(struct curlc *h, long id, long attempt, int gap, const char *why)
{
    char path[128];
    struct curlc_resp r;
    struct kj_err err;
    cJSON *body = cJSON_CreateObject();
    cJSON_AddStringToObject(body, "why", gap ? "gap" : "stopping");
    snprintf(path, sizeof path, "/api/v1/runner/jobs/%ld/release?attempt=%ld", id, attempt);
    kj_err_clear(&err);
    int st = deliver_post(h, path, body, &r, &err);
    cJSON_Delete(body);
    curlc_resp_free(&r);
    if (st >= 200 && st < 300)
        kj_log(KJ_LOG_INFO, "serve", "gave job=%ld back (%s); it is queued again", id, why);
    else
        kj_log(KJ_LOG_WARN, "serve", "job=%ld not given back (%s; status %d%s%s); it is queued "
               "again when its lease runs out", id, why, st, st < 0 ? ": " : "",
               st < 0 ? err.msg : "");
}

void serve_judge_job(struct serve *sv, struct judge_job *jj, const struct spec *spec,
                     const char *src, int lang, enum kj_mode mode,
                     struct compile_result *compiled, judge_progress_fn progress,
                     struct judge_leftover **left)
{
    memset(jj, 0, sizeof *jj);
    jj->spec = spec;
    jj->source = src; /* writable: a gap's children wipe their copy (judge_gap_fn) */
    jj->source_len = strlen(src);
    jj->mode = mode;
    jj->lang = lang;
    jj->gpu = sv->cfg->gpu;
    jj->arch = sv->dev.arch;
    jj->boards = sv->boards;
    jj->compiled = compiled; /* taken by the judge */
    jj->progress = progress;
    jj->progress_ctx = sv;
    jj->leftover = left;
    jj->pyenv = sv->cfg->pyenv;
}
