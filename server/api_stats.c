/*
 * api_stats.c - the admin's overview: GET /api/v1/users (every account with
 * its submission counts) and GET /api/v1/stats (submissions per board,
 * mode and outcome; the queue of each GPU type with its oldest job's age;
 * the runners and when each was last seen).
 *
 * Both routes are admin-only (http_route.c). The numbers come from db_list.c,
 * read in one transaction each; nothing here writes. Runner states follow
 * GET /api/v1/gpus: "active" while holding a job, "idle" when seen within
 * the lease length, "silent" otherwise. No token or hash is ever shown.
 */
#include "api.h"
#include "db_list.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------------ */
/* GET /users                                                          */
/* ------------------------------------------------------------------ */

static cJSON *user_json(const struct db_user_row *u)
{
    cJSON *o = cJSON_CreateObject(), *subs;
    cJSON_AddStringToObject(o, "name", u->name);
    cJSON_AddStringToObject(o, "role", u->role);
    cJSON_AddBoolToObject(o, "banned", u->banned);
    api_add_time(o, "created_at", u->created_at);
    subs = cJSON_AddObjectToObject(o, "submissions");
    cJSON_AddNumberToObject(subs, "total", (double)u->submissions);
    cJSON_AddNumberToObject(subs, "accepted", (double)u->accepted);
    cJSON_AddNumberToObject(subs, "pending", (double)u->pending);
    api_add_time(o, "last_submission_at", u->last_submission_at);
    return o;
}

enum MHD_Result api_user_list(struct http_req *r)
{
    struct db_user_row *rows = NULL;
    struct kj_err err;
    int n = 0;
    kj_err_clear(&err);
    if (db_user_list(r->srv->db, &rows, &n, &err) != 0)
        return http_internal(r, &err);
    cJSON *root = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(root, "users");
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, user_json(&rows[i]));
    free(rows);
    return http_json(r, MHD_HTTP_OK, root);
}

/* ------------------------------------------------------------------ */
/* GET /stats                                                          */
/* ------------------------------------------------------------------ */

/* The child object key of o, created when missing. */
static cJSON *child(cJSON *o, const char *key)
{
    cJSON *c = cJSON_GetObjectItemCaseSensitive(o, key);
    return c != NULL ? c : cJSON_AddObjectToObject(o, key);
}

/* {"total", "disqualified", "withdrawn", "by_leaderboard": {board: {mode: {outcome: n}}}} */
static cJSON *subs_json(const struct db_stats *s)
{
    cJSON *o = cJSON_CreateObject(), *by;
    cJSON_AddNumberToObject(o, "total", (double)s->total);
    cJSON_AddNumberToObject(o, "disqualified", (double)s->disqualified);
    cJSON_AddNumberToObject(o, "withdrawn", (double)s->withdrawn);
    by = cJSON_AddObjectToObject(o, "by_leaderboard");
    for (int i = 0; i < s->ngroups; i++) {
        const struct db_stat_group *g = &s->groups[i];
        cJSON_AddNumberToObject(child(child(by, g->leaderboard), kj_mode_name(g->mode)), g->outcome,
                                (double)g->count);
    }
    return o;
}

/* The queue row of gpu, or NULL when it has no queued or running job. */
static const struct db_stat_queue *queue_of(const struct db_stats *s, const char *gpu)
{
    for (int i = 0; i < s->nqueues; i++)
        if (strcmp(s->queues[i].gpu, gpu) == 0)
            return &s->queues[i];
    return NULL;
}

static cJSON *queue_json(const char *gpu, const struct db_stat_queue *q, int64_t now)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "gpu", gpu);
    cJSON_AddNumberToObject(o, "queued", q != NULL ? (double)q->queued : 0);
    cJSON_AddNumberToObject(o, "running", q != NULL ? (double)q->running : 0);
    if (q != NULL && q->oldest_queued_at != 0)
        cJSON_AddNumberToObject(o, "oldest_queued_age_s",
                                (double)(now > q->oldest_queued_at ? now - q->oldest_queued_at : 0));
    else
        cJSON_AddNullToObject(o, "oldest_queued_age_s");
    return o;
}

/* One entry per GPU type: those the loaded boards name, in their order,
 * then any other type with jobs (a board removed by a reload). */
static cJSON *queues_json(const struct board_set *bs, const struct db_stats *s, int64_t now)
{
    cJSON *arr = cJSON_CreateArray();
    for (int b = 0; b < bs->nspecs; b++) {
        for (int g = 0; g < bs->specs[b]->ngpus; g++) {
            const char *gpu = bs->specs[b]->gpus[g];
            int seen = 0;
            const cJSON *it;
            cJSON_ArrayForEach(it, arr)
                seen |= strcmp(cJSON_GetObjectItemCaseSensitive(it, "gpu")->valuestring, gpu) == 0;
            if (!seen)
                cJSON_AddItemToArray(arr, queue_json(gpu, queue_of(s, gpu), now));
        }
    }
    for (int i = 0; i < s->nqueues; i++) {
        int seen = 0;
        const cJSON *it;
        cJSON_ArrayForEach(it, arr)
            seen |= strcmp(cJSON_GetObjectItemCaseSensitive(it, "gpu")->valuestring,
                           s->queues[i].gpu) == 0;
        if (!seen)
            cJSON_AddItemToArray(arr, queue_json(s->queues[i].gpu, &s->queues[i], now));
    }
    return arr;
}

static cJSON *runners_json(const struct db_stats *s, int64_t now, int lease_s)
{
    cJSON *arr = cJSON_CreateArray();
    for (int i = 0; i < s->nrunners; i++) {
        const struct db_stat_runner *rr = &s->runners[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", rr->name);
        cJSON_AddStringToObject(o, "gpu", rr->gpu);
        api_add_time(o, "last_seen", rr->last_seen);
        cJSON_AddNumberToObject(o, "last_seen_age_s",
                                (double)(now > rr->last_seen ? now - rr->last_seen : 0));
        cJSON_AddStringToObject(o, "state", rr->busy ? "active"
                                : now - rr->last_seen <= lease_s ? "idle" : "silent");
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

enum MHD_Result api_stats(struct http_req *r)
{
    struct db_stats s;
    struct kj_err err;
    int64_t now = (int64_t)time(NULL);
    cJSON *root;
    kj_err_clear(&err);
    if (db_stats(r->srv->db, &s, &err) != 0)
        return http_internal(r, &err);
    root = cJSON_CreateObject();
    api_add_time(root, "at", now);
    cJSON_AddNumberToObject(root, "users", (double)s.users);
    cJSON_AddItemToObject(root, "submissions", subs_json(&s));
    cJSON_AddItemToObject(root, "queues", queues_json(r->boards, &s, now));
    cJSON_AddItemToObject(root, "runners", runners_json(&s, now, r->srv->lease_s));
    db_stats_free(&s);
    return http_json(r, MHD_HTTP_OK, root);
}
