/*
 * api_json.c - a submission as JSON: the public summary, the whole
 * submission as a view allows (api_access.c decides the view), and the
 * stored result reduced to what that view may see.
 *
 * The submission handlers (api_submissions.c, api_sublist.c, api_detail.c)
 * and the event stream (sse.c) build their bodies from these; the secret
 * seed never leaves through them (api_strip_secrets).
 */
#include "api.h"
#include "sub_lang.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void api_add_time(cJSON *o, const char *key, int64_t t)
{
    char buf[32];
    if (t == 0) {
        cJSON_AddNullToObject(o, key);
        return;
    }
    srv_iso_time(t, buf, sizeof buf);
    cJSON_AddStringToObject(o, key, buf);
}

void api_strip_secrets(cJSON *j)
{
    cJSON *c;
    if (cJSON_IsObject(j))
        cJSON_DeleteItemFromObjectCaseSensitive(j, "secret_seed");
    cJSON_ArrayForEach(c, j)
        api_strip_secrets(c);
}

cJSON *api_pick(const cJSON *src, const char *const *keys)
{
    cJSON *o = cJSON_CreateObject();
    for (int i = 0; o != NULL && keys[i] != NULL; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(src, keys[i]);
        if (v != NULL)
            cJSON_AddItemToObject(o, keys[i], cJSON_Duplicate(v, 1));
    }
    return o;
}

static cJSON *pick_each(const cJSON *arr, const char *const *keys)
{
    cJSON *out = cJSON_CreateArray();
    const cJSON *it;
    cJSON_ArrayForEach(it, arr)
        cJSON_AddItemToArray(out, api_pick(it, keys));
    return out;
}

/* The stored result as view may see it. Owner: everything but secrets;
 * published: verdict, score, test outcomes and benchmark timings; ranked:
 * what the rankings show (verdict, score, per-shape medians). */
static cJSON *result_view(const struct db_sub *s, enum api_view view)
{
    static const char *const top[] = {"verdict", "mode", "leaderboard", "score_ns", "system", NULL};
    static const char *const rtop[] = {"verdict", "mode", "leaderboard", "score_ns", NULL};
    static const char *const tkeys[] = {"index", "shape", "status", NULL};
    static const char *const bkeys[] = {"index", "shape", "status", "median_ns",
                                        "corrected_median_ns", "mean_ns", "stdev_ns", "min_ns",
                                        "max_ns", "q1_ns", "q3_ns", "n", "stop_reason",
                                        "floor_ns", NULL};
    static const char *const rkeys[] = {"index", "shape", "median_ns", "corrected_median_ns",
                                        NULL};
    cJSON *res = s->result != NULL ? cJSON_Parse(s->result) : NULL, *out, *b;
    if (res == NULL)
        return cJSON_CreateNull();
    api_strip_secrets(res);
    /* Leaderboard-mode benchmark seeds derive from the secret: never shown. */
    if (s->mode == KJ_MODE_LEADERBOARD)
        cJSON_ArrayForEach(b, cJSON_GetObjectItemCaseSensitive(res, "benchmarks"))
            cJSON_DeleteItemFromObjectCaseSensitive(b, "seed");
    if (view == API_VIEW_OWNER)
        return res;
    out = api_pick(res, view == API_VIEW_RANKED ? rtop : top);
    if (view != API_VIEW_RANKED)
        cJSON_AddItemToObject(out, "tests",
                              pick_each(cJSON_GetObjectItemCaseSensitive(res, "tests"), tkeys));
    cJSON_AddItemToObject(out, "benchmarks",
                          pick_each(cJSON_GetObjectItemCaseSensitive(res, "benchmarks"),
                                    view == API_VIEW_RANKED ? rkeys : bkeys));
    cJSON_Delete(res);
    return out;
}

void api_add_score(cJSON *o, const struct db_sub *s)
{
    if (s->has_score)
        cJSON_AddNumberToObject(o, "score_ns", s->score_ns);
    else
        cJSON_AddNullToObject(o, "score_ns");
}

void api_sub_summary(cJSON *o, const struct db_sub *s)
{
    cJSON_AddNumberToObject(o, "id", (double)s->id);
    cJSON_AddStringToObject(o, "user", s->user);
    cJSON_AddStringToObject(o, "leaderboard", s->leaderboard);
    cJSON_AddStringToObject(o, "gpu", s->gpu);
    cJSON_AddStringToObject(o, "mode", kj_mode_name(s->mode));
    cJSON_AddStringToObject(o, "lang", sub_lang_name(s->lang));
    cJSON_AddStringToObject(o, "status", db_status_name(s->status));
    if (s->has_verdict)
        cJSON_AddStringToObject(o, "verdict", kj_verdict_name(s->verdict));
    else
        cJSON_AddNullToObject(o, "verdict");
    api_add_score(o, s);
    api_add_time(o, "created_at", s->created_at);
    cJSON_AddBoolToObject(o, "disqualified", s->disqualified);
    cJSON_AddBoolToObject(o, "withdrawn", s->withdrawn_at != 0);
    api_add_time(o, "withdrawn_at", s->withdrawn_at);
}

cJSON *api_sub_json(const struct db_sub *s, enum api_view view, int with_result)
{
    cJSON *o = cJSON_CreateObject(), *urls;
    int full = view == API_VIEW_OWNER;
    char url[96];
    if (KJ_NEVER(view == API_VIEW_NONE)) { /* the caller answers 500 for NULL */
        cJSON_Delete(o);
        return NULL;
    }
    api_sub_summary(o, s);
    api_add_time(o, "started_at", s->started_at);
    api_add_time(o, "finished_at", s->finished_at);
    if (view != API_VIEW_RANKED)
        cJSON_AddNumberToObject(o, "attempts", s->attempts);
    if (full && s->disqualified)
        cJSON_AddStringToObject(o, "disqualified_reason", s->dq_reason);
    if (full && s->reason[0] != '\0')
        cJSON_AddStringToObject(o, "reason", s->reason);
    if (view != API_VIEW_RANKED) {
        cJSON_AddStringToObject(o, "file_name", s->file_name);
        cJSON_AddStringToObject(o, "source_sha256", s->source_sha256);
        if (s->source != NULL)
            cJSON_AddStringToObject(o, "source", s->source);
    }
    if (with_result)
        cJSON_AddItemToObject(o, "result", result_view(s, view));
    urls = cJSON_AddObjectToObject(o, "urls");
    snprintf(url, sizeof url, "/api/v1/submissions/%lld", (long long)s->id);
    cJSON_AddStringToObject(urls, "self", url);
    snprintf(url, sizeof url, "/api/v1/submissions/%lld?wait=1", (long long)s->id);
    cJSON_AddStringToObject(urls, "wait", url);
    snprintf(url, sizeof url, "/api/v1/submissions/%lld/events?stream=1", (long long)s->id);
    cJSON_AddStringToObject(urls, "events", url);
    return o;
}
