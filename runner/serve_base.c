/*
 * serve_base.c - what the supervisor's files (serve_int.h) share about the
 * jobs they judge: a claimed job's fields, its progress events posted to
 * the server, and the board it names. serve.c judges the claimed job with
 * them, serve_gap.c the test-mode jobs in the gaps of a timed one.
 */
#include "serve_int.h"
#include "curlc.h"
#include "deliver.h"
#include "spec.h"

#include <stdio.h>
#include <string.h>

int serve_job_fields(const cJSON *job, long *id, long *attempt, const char **lb,
                     const char **mode, const char **src)
{
    const cJSON *i = cJSON_GetObjectItem(job, "id"), *l = cJSON_GetObjectItem(job, "leaderboard"),
                *m = cJSON_GetObjectItem(job, "mode"), *s = cJSON_GetObjectItem(job, "source"),
                *a = cJSON_GetObjectItem(job, "attempt");
    if (!cJSON_IsNumber(i) || !cJSON_IsString(l) || !cJSON_IsString(m) || !cJSON_IsString(s))
        return 0;
    *id = (long)i->valuedouble;
    *attempt = cJSON_IsNumber(a) ? (long)a->valuedouble : 1;
    *lb = l->valuestring;
    *mode = m->valuestring;
    *src = s->valuestring;
    return 1;
}

void serve_post_event(struct serve *sv, long id, long attempt, enum kj_event event,
                      const cJSON *data)
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
    sv->posting = 1;
    pthread_mutex_unlock(&sv->mu);
    cJSON *body = cJSON_CreateObject();
    cJSON_AddStringToObject(body, "event", kj_event_name(event));
    cJSON_AddItemToObject(body, "data", cJSON_Duplicate(data, 1));
    snprintf(path, sizeof path, "/api/v1/runner/jobs/%ld/events?attempt=%ld", id, attempt);
    kj_err_clear(&err);
    int st = deliver_post(sv->http, path, body, &r, &err);
    if (st < 0 || st >= 300)
        kj_log(KJ_LOG_WARN, "serve", "progress not recorded job=%ld event=%s status=%d%s%s",
               id, kj_event_name(event), st, st < 0 ? ": " : "", st < 0 ? err.msg : "");
    curlc_resp_free(&r);
    cJSON_Delete(body);
    pthread_mutex_lock(&sv->mu);
    sv->posting = 0;
    pthread_cond_broadcast(&sv->cv);
    pthread_mutex_unlock(&sv->mu);
}

const struct spec *serve_spec(struct serve *sv, const char *name)
{
    return spec_find_reload(sv->cfg->leaderboards, &sv->specs, &sv->nspecs, name);
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
