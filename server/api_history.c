/*
 * api_history.c - GET /api/v1/leaderboards/{name}/history?gpu=G[&top=N]:
 * how the ranking of a board on one GPU type got where it is, for the
 * chart of the best score over time on the board's web page; and GET
 * /api/v1/submissions/{id}/history: the results a submission had before
 * a rejudge replaced them (docs/rejudge.md), for its owner and admins.
 *
 * Public, like the rankings: it shows only ranked submissions and the
 * fields the rankings show (user, score, id, time). From the rows of
 * db_history_rows() (every submission that beat its user's own best,
 * oldest first) it builds "records", the submissions that beat the
 * board's best so far (the leader's line), and "users", the progress of
 * the N users with the best scores now (default 10, at most 50). Read from
 * the database on each request and sent with an ETag.
 */
#include "api.h"
#include "db_history.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HISTORY_TOP_DEFAULT 10
#define HISTORY_TOP_MAX 50

/* One user's improvements: order[first .. first + count - 1]. */
struct user_run {
    int first, count;
    double best_ns;       /* the last (lowest) score */
    int64_t best_at;
    int64_t best_id;
};

/* Rows by user, then by position: the rows are in time order, so a
 * user's improvements stay in time order. */
static int by_user_then_time(const void *a, const void *b)
{
    const struct db_history_row *x = *(const struct db_history_row *const *)a;
    const struct db_history_row *y = *(const struct db_history_row *const *)b;
    int c = strcmp(x->user, y->user);
    return c != 0 ? c : (x > y) - (x < y);
}

static int by_best(const void *a, const void *b)
{
    const struct user_run *x = a, *y = b;
    if (x->best_ns != y->best_ns)
        return x->best_ns < y->best_ns ? -1 : 1;
    if (x->best_at != y->best_at)
        return x->best_at < y->best_at ? -1 : 1;
    return (x->best_id > y->best_id) - (x->best_id < y->best_id);
}

static cJSON *point_json(const struct db_history_row *row, int with_user)
{
    cJSON *o = cJSON_CreateObject();
    char when[32];
    srv_iso_time(row->created_at, when, sizeof when);
    cJSON_AddNumberToObject(o, "submission_id", (double)row->submission_id);
    if (with_user)
        cJSON_AddStringToObject(o, "user", row->user);
    cJSON_AddNumberToObject(o, "score_ns", row->score_ns);
    cJSON_AddStringToObject(o, "submitted_at", when);
    return o;
}

/* The "users" array: the top users' improvements. NULL when out of memory. */
static cJSON *users_json(const struct db_history_row *rows, int n, int top)
{
    const struct db_history_row **order = malloc(((size_t)n + 1) * sizeof *order);
    int nruns = 0;
    struct user_run *runs = malloc(((size_t)n + 1) * sizeof *runs);
    cJSON *arr = NULL;

    if (order == NULL || runs == NULL)
        goto out;
    for (int i = 0; i < n; i++)
        order[i] = &rows[i];
    qsort(order, (size_t)n, sizeof *order, by_user_then_time);
    for (int i = 0; i < n; i++) {
        const struct db_history_row *row = order[i];
        if (nruns == 0 || strcmp(order[runs[nruns - 1].first]->user, row->user) != 0)
            runs[nruns++] = (struct user_run){.first = i};
        struct user_run *u = &runs[nruns - 1];
        u->count++;
        u->best_ns = row->score_ns;
        u->best_at = row->created_at;
        u->best_id = row->submission_id;
    }
    qsort(runs, (size_t)nruns, sizeof *runs, by_best);
    if ((arr = cJSON_CreateArray()) == NULL)
        goto out;
    for (int k = 0; k < nruns && k < top; k++) {
        cJSON *o = cJSON_CreateObject(), *pts;
        cJSON_AddStringToObject(o, "user", order[runs[k].first]->user);
        cJSON_AddNumberToObject(o, "best_ns", runs[k].best_ns);
        pts = cJSON_AddArrayToObject(o, "points");
        for (int j = 0; j < runs[k].count; j++)
            cJSON_AddItemToArray(pts, point_json(order[runs[k].first + j], 0));
        cJSON_AddItemToArray(arr, o);
    }
out:
    free(order);
    free(runs);
    return arr;
}

/* ?top=N: 1..HISTORY_TOP_MAX, default HISTORY_TOP_DEFAULT; -1 when malformed. */
static int parse_top(const char *s)
{
    int v = 0;
    if (s == NULL)
        return HISTORY_TOP_DEFAULT;
    if (s[0] == '\0' || strlen(s) > 3)
        return -1;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        v = v * 10 + (*p - '0');
    }
    return v >= 1 && v <= HISTORY_TOP_MAX ? v : -1;
}

enum MHD_Result api_board_history(struct http_req *r)
{
    struct board *b = boards_find(r->boards, r->params[0]);
    const char *gpu = http_query(r, "gpu");
    int top = parse_top(http_query(r, "top")), n = 0;
    struct db_history_row *rows = NULL;
    cJSON *root, *records, *users;
    double best = 0;
    char etag[40], *text;
    struct kj_err err;

    if (b == NULL)
        return http_error(r, MHD_HTTP_NOT_FOUND, "unknown_leaderboard",
                          "no leaderboard named '%.64s'", r->params[0]);
    if (gpu == NULL || gpu[0] == '\0')
        return http_error(r, MHD_HTTP_BAD_REQUEST, "missing_gpu",
                          "add ?gpu=NAME (one of this leaderboard's gpus)");
    if (boards_gpu(b, gpu) < 0) {
        char safe[72];
        kj_printable(safe, sizeof safe, gpu, 64);
        return http_error(r, MHD_HTTP_BAD_REQUEST, "unknown_gpu",
                          "leaderboard %s does not run on '%s'", b->spec->name, safe);
    }
    if (top < 0)
        return http_error(r, MHD_HTTP_BAD_REQUEST, "bad_top",
                          "top must be a whole number from 1 to %d", HISTORY_TOP_MAX);
    kj_err_clear(&err);
    if (db_history_rows(r->srv->db, b->spec->name, gpu, &rows, &n, &err) != 0)
        return http_internal(r, &err);
    root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "leaderboard", b->spec->name);
    cJSON_AddStringToObject(root, "gpu", gpu);
    records = cJSON_AddArrayToObject(root, "records");
    for (int i = 0; i < n; i++) {
        if (i > 0 && rows[i].score_ns >= best)
            continue;
        best = rows[i].score_ns;
        cJSON_AddItemToArray(records, point_json(&rows[i], 1));
    }
    if ((users = users_json(rows, n, top)) != NULL)
        cJSON_AddItemToObject(root, "users", users);
    free(rows);
    text = users != NULL ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (text == NULL) {
        KJ_FAIL(&err, KJ_ENOMEM, "out of memory building the history of %s", b->spec->name);
        return http_internal(r, &err);
    }
    if (srv_etag(text, strlen(text), etag, sizeof etag, &err) != 0) {
        free(text);
        return http_internal(r, &err);
    }
    return http_shared_json(r, MHD_HTTP_OK, text, strlen(text), etag, free, text);
}

/* ------------------------------------------------------------------ */
/* GET /submissions/{id}/history                                       */
/* ------------------------------------------------------------------ */

static cJSON *old_json(const struct db_result_old *h)
{
    cJSON *o = cJSON_CreateObject(), *t, *res;
    cJSON_AddNumberToObject(o, "seq", h->seq);
    cJSON_AddStringToObject(o, "verdict", kj_verdict_name(h->verdict));
    if (h->has_score)
        cJSON_AddNumberToObject(o, "score_ns", h->score_ns);
    else
        cJSON_AddNullToObject(o, "score_ns");
    if (h->timing_protocol[0] != '\0') {
        t = cJSON_AddObjectToObject(o, "timing");
        cJSON_AddStringToObject(t, "protocol", h->timing_protocol);
        cJSON_AddNumberToObject(t, "version", h->timing_version);
    } else {
        cJSON_AddNullToObject(o, "timing");
    }
    api_add_time(o, "finished_at", h->finished_at);
    api_add_time(o, "replaced_at", h->replaced_at);
    cJSON_AddNumberToObject(o, "rejudge", (double)h->rejudge_id);
    res = h->result != NULL ? cJSON_Parse(h->result) : NULL;
    if (res != NULL)
        api_strip_secrets(res);
    cJSON_AddItemToObject(o, "result", res != NULL ? res : cJSON_CreateNull());
    return o;
}

enum MHD_Result api_sub_history(struct http_req *r)
{
    int64_t id = http_param_id(r, 0);
    struct db_result_old *rows = NULL;
    enum api_view view;
    struct db_sub s;
    struct kj_err err;
    cJSON *o, *arr;
    int n = 0, rc;
    if (id == 0)
        return api_sub_not_found(r);
    kj_err_clear(&err);
    rc = api_sub_view(r, id, &s, &view, &err);
    db_sub_clear(&s);
    /* Earlier results carry everything a result does: its owner's and the admins' only. */
    if (rc == KJ_ENOTFOUND || (rc == 0 && view != API_VIEW_OWNER))
        return api_sub_not_found(r);
    if (rc == 0)
        rc = db_sub_history(r->srv->db, id, &rows, &n, &err);
    if (rc != 0)
        return http_internal(r, &err);
    o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "id", (double)id);
    arr = cJSON_AddArrayToObject(o, "history");
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, old_json(&rows[i]));
    db_result_old_free(rows, n);
    return http_json(r, MHD_HTTP_OK, o);
}
