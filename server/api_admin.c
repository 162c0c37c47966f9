/*
 * api_admin.c - the admin's competition controls: POST /api/v1/admin/reload
 * (load leaderboards/ again), POST /api/v1/leaderboards/{name}/publish
 * (open a closed board's sources to every signed-in user), and a board's
 * rejudge: POST /api/v1/leaderboards/{name}/rejudge (start),
 * .../rejudge/cancel, GET .../rejudge (status; docs/rejudge.md).
 *
 * Reload loads a complete new set (boards_load) while the old one keeps
 * serving, compares them (reload.c), refuses with 409 to remove a board
 * that has submissions or to change its shapes or tolerances unless the
 * body says {"force": true}, and only then swaps the sets (server.h says
 * why requests in flight are safe). A set that does not load changes
 * nothing. Publishing is stored by db_board.c; who then sees a source is
 * decided by api_sub_view() in api_access.c. A rejudge is stored and
 * ended by db_rejudge.c; its jobs wake the runners' parked claims.
 */
#include "api.h"
#include "db_rejudge.h"
#include "reload.h"
#include "wait.h"


#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RELOAD_MSG 2048

/* ------------------------------------------------------------------ */
/* POST /admin/reload                                                  */
/* ------------------------------------------------------------------ */

/* {"force": bool} or {}; anything else is 400. Returns 1 when it answered. */
static int reload_body(struct http_req *r, int *force, enum MHD_Result *res)
{
    cJSON *body = http_body_object(r, res), *it;
    *force = 0;
    if (body == NULL)
        return 1;
    cJSON_ArrayForEach(it, body) {
        if (strcmp(it->string, "force") != 0 || !cJSON_IsBool(it)) {
            cJSON_Delete(body);
            *res = http_error(r, MHD_HTTP_BAD_REQUEST, "bad_request",
                              "the body may only hold \"force\": true or false");
            return 1;
        }
        *force = cJSON_IsTrue(it);
    }
    cJSON_Delete(body);
    return 0;
}

/* Find the entries that need force: changed or removed boards that have
 * submissions. Writes them into msg; *conflicts counts them. */
static int reload_conflicts(struct server *srv, const struct reload_entry *e, int n,
                            char *msg, size_t msgsz, int *conflicts, struct kj_err *err)
{
    size_t used = 0;
    *conflicts = 0;
    msg[0] = '\0';
    for (int i = 0; i < n; i++) {
        int has = 0, rc;
        if (e[i].kind != RELOAD_CHANGED && e[i].kind != RELOAD_REMOVED)
            continue;
        if ((rc = db_board_has_subs(srv->db, e[i].name, &has, err)) != 0)
            return rc;
        if (!has)
            continue;
        (*conflicts)++;
        if (used + 1 < msgsz)
            used += (size_t)snprintf(msg + used, msgsz - used, "%sleaderboard %s has submissions and %s",
                                     used ? "; " : "", e[i].name,
                                     e[i].kind == RELOAD_REMOVED ? "is no longer on disk" : e[i].what);
    }
    return 0;
}

static cJSON *reload_answer(const struct board_set *next, const struct reload_entry *e, int n,
                            int force)
{
    cJSON *o = cJSON_CreateObject(), *names = cJSON_AddArrayToObject(o, "leaderboards");
    static const char *const keys[] = {"unchanged", "edited", "changed", "added", "removed"};
    cJSON *by[5];
    for (int i = 0; i < next->nspecs; i++)
        cJSON_AddItemToArray(names, cJSON_CreateString(next->specs[i]->name));
    for (int k = 0; k < 5; k++)
        by[k] = cJSON_AddArrayToObject(o, keys[k]);
    for (int i = 0; i < n; i++) {
        if (e[i].kind == RELOAD_CHANGED || e[i].kind == RELOAD_EDITED) {
            cJSON *x = cJSON_CreateObject();
            cJSON_AddStringToObject(x, "name", e[i].name);
            cJSON_AddStringToObject(x, "what", e[i].what);
            cJSON_AddItemToArray(by[e[i].kind], x);
        } else {
            cJSON_AddItemToArray(by[e[i].kind], cJSON_CreateString(e[i].name));
        }
    }
    cJSON_AddBoolToObject(o, "forced", force);
    return o;
}

/* With reload_mu held: compare next with the live set and swap them, or answer why not.
 * Takes over the caller's reference to next. */
static enum MHD_Result reload_apply(struct http_req *r, struct board_set *next, int force)
{
    struct server *srv = r->srv;
    struct board_set *cur = boards_acquire(srv);
    struct reload_entry *e = NULL;
    struct kj_err err;
    char *msg = malloc(RELOAD_MSG);
    int n = 0, conflicts = 0, rc;
    enum MHD_Result res;

    kj_err_clear(&err);
    if (msg == NULL)
        rc = KJ_FAIL(&err, KJ_ENOMEM, "out of memory comparing leaderboards");
    else if ((rc = reload_compare(cur->specs, cur->nspecs, next->specs, next->nspecs, &e, &n,
                                  &err)) == 0)
        rc = reload_conflicts(srv, e, n, msg, RELOAD_MSG, &conflicts, &err);
    /* New boards get their secret seed before anyone can submit to them. */
    if (rc == 0 && (conflicts == 0 || force))
        rc = boards_ensure_secrets(srv->db, next, &err);
    if (rc != 0) {
        res = http_internal(r, &err);
    } else if (conflicts > 0 && !force) {
        res = http_error(r, MHD_HTTP_CONFLICT, "reload_conflict",
                         "%s; nothing was reloaded (send {\"force\": true} to reload anyway)", msg);
    } else {
        kj_log(KJ_LOG_INFO, "admin", "reloaded leaderboards count=%d forced=%d by=%s",
               next->nspecs, conflicts > 0, r->user.name);
        res = http_json(r, MHD_HTTP_OK, reload_answer(next, e, n, force));
        boards_swap(srv, next);
        next = NULL;
        srv_rank_invalidate(srv);
    }
    boards_release(next);
    boards_release(cur);
    free(e);
    free(msg);
    return res;
}

enum MHD_Result api_admin_reload(struct http_req *r)
{
    struct board_set *next = NULL;
    struct kj_err err;
    enum MHD_Result res;
    int force = 0, rc;
    if (reload_body(r, &force, &res))
        return res;
    kj_err_clear(&err);
    pthread_mutex_lock(&r->srv->reload_mu);
    rc = boards_load(r->srv->boards_dir, &next, &err);
    if (rc == KJ_ENOMEM)
        res = http_internal(r, &err);
    else if (rc != 0)
        res = http_error(r, MHD_HTTP_UNPROCESSABLE_CONTENT, "bad_leaderboard",
                         "%s; nothing was reloaded", err.msg);
    else
        res = reload_apply(r, next, force);
    pthread_mutex_unlock(&r->srv->reload_mu);
    return res;
}

/* ------------------------------------------------------------------ */
/* POST /leaderboards/{name}/publish                                   */
/* ------------------------------------------------------------------ */

enum MHD_Result api_board_publish(struct http_req *r)
{
    const struct board *b = boards_find(r->boards, r->params[0]);
    enum MHD_Result res;
    struct kj_err err;
    int64_t at = 0;
    int already = 0;
    char when[32];
    cJSON *body, *o;

    if (b == NULL)
        return http_error(r, MHD_HTTP_NOT_FOUND, "unknown_leaderboard",
                          "no leaderboard named '%.64s'", r->params[0]);
    if ((body = http_body_object(r, &res)) == NULL)
        return res;
    if (cJSON_GetArraySize(body) != 0) {
        cJSON_Delete(body);
        return http_error(r, MHD_HTTP_BAD_REQUEST, "bad_request", "the body must be empty or {}");
    }
    cJSON_Delete(body);
    if (b->spec->deadline_unix == 0)
        return http_error(r, MHD_HTTP_CONFLICT, "no_deadline",
                          "leaderboard %s has no deadline; sources are published only after one",
                          b->spec->name);
    if ((int64_t)time(NULL) <= b->spec->deadline_unix)
        return http_error(r, MHD_HTTP_CONFLICT, "deadline_not_passed",
                          "leaderboard %s closes at %s; its sources can be published after that",
                          b->spec->name, b->spec->deadline);
    kj_err_clear(&err);
    if (db_publish(r->srv->db, b->spec->name, r->user.id, &at, &already, &err) != 0)
        return http_internal(r, &err);
    srv_rank_invalidate(r->srv); /* the rankings body says whether sources are published */
    if (!already)
        kj_log(KJ_LOG_INFO, "admin", "published sources board=%s by=%s", b->spec->name,
               r->user.name);
    srv_iso_time(at, when, sizeof when);
    o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "leaderboard", b->spec->name);
    cJSON_AddBoolToObject(o, "sources_published", 1);
    cJSON_AddStringToObject(o, "published_at", when);
    cJSON_AddBoolToObject(o, "already", already);
    return http_json(r, MHD_HTTP_OK, o);
}

/* ------------------------------------------------------------------ */
/* Rejudge: POST/GET /leaderboards/{name}/rejudge, POST .../cancel      */
/* ------------------------------------------------------------------ */

/* "YYYY-MM-DD" (midnight UTC) or "YYYY-MM-DDTHH:MM:SSZ" -> unix seconds;
 * -1 for anything else, an impossible date included. */
static int64_t since_parse(const char *v)
{
    char full[32];
    int64_t t;
    if (strlen(v) == 10) { /* a date alone: its midnight */
        snprintf(full, sizeof full, "%sT00:00:00Z", v);
        v = full;
    }
    if (spec_parse_utc(v, &t) != 0 || t < 0)
        return -1;
    return t;
}

static void add_timing(cJSON *o, const char *key, const struct db_timing *t)
{
    cJSON *x;
    if (t->protocol[0] == '\0') {
        cJSON_AddNullToObject(o, key);
        return;
    }
    x = cJSON_AddObjectToObject(o, key);
    cJSON_AddStringToObject(x, "protocol", t->protocol);
    cJSON_AddNumberToObject(x, "version", t->version);
}

/* One rejudge as JSON; with its jobs when jobs != NULL. */
static cJSON *rejudge_json(const struct db_rejudge *rj, const struct db_rejudge_job *jobs, int n)
{
    cJSON *o = cJSON_CreateObject(), *c, *arr;
    cJSON_AddNumberToObject(o, "id", (double)rj->id);
    cJSON_AddStringToObject(o, "leaderboard", rj->leaderboard);
    cJSON_AddStringToObject(o, "gpu", rj->gpu);
    cJSON_AddStringToObject(o, "state", db_rejudge_state_name(rj->state));
    api_add_time(o, "since", rj->since);
    cJSON_AddStringToObject(o, "by", rj->by);
    api_add_time(o, "created_at", rj->created_at);
    api_add_time(o, "ended_at", rj->ended_at);
    if (rj->reason[0] != '\0')
        cJSON_AddStringToObject(o, "reason", rj->reason);
    else
        cJSON_AddNullToObject(o, "reason");
    add_timing(o, "from_timing", &rj->from);
    add_timing(o, "to_timing", &rj->to);
    c = cJSON_AddObjectToObject(o, "jobs");
    cJSON_AddNumberToObject(c, "total", (double)rj->jobs);
    cJSON_AddNumberToObject(c, "queued", (double)rj->queued);
    cJSON_AddNumberToObject(c, "running", (double)rj->running);
    cJSON_AddNumberToObject(c, "done", (double)rj->done);
    cJSON_AddNumberToObject(c, "accepted", (double)rj->accepted);
    cJSON_AddNumberToObject(c, "not_accepted", (double)rj->failed);
    if (jobs == NULL)
        return o;
    arr = cJSON_AddArrayToObject(o, "entries");
    for (int i = 0; i < n; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "submission", (double)jobs[i].submission_id);
        cJSON_AddNumberToObject(e, "job", (double)jobs[i].job_id);
        cJSON_AddStringToObject(e, "user", jobs[i].user);
        cJSON_AddStringToObject(e, "status", db_status_name(jobs[i].status));
        if (jobs[i].has_verdict)
            cJSON_AddStringToObject(e, "verdict", kj_verdict_name(jobs[i].verdict));
        else
            cJSON_AddNullToObject(e, "verdict");
        if (jobs[i].has_score)
            cJSON_AddNumberToObject(e, "score_ns", jobs[i].score_ns);
        else
            cJSON_AddNullToObject(e, "score_ns");
        add_timing(e, "timing", &jobs[i].timing);
        cJSON_AddItemToArray(arr, e);
    }
    return o;
}

/* {"rejudges": [...]} of rows[0..n); with_jobs: each with its entries. */
static enum MHD_Result rejudges_answer(struct http_req *r, unsigned status,
                                       const struct db_rejudge *rows, int n, cJSON *o,
                                       int with_jobs)
{
    cJSON *arr = cJSON_AddArrayToObject(o, "rejudges");
    struct kj_err err;
    kj_err_clear(&err);
    for (int i = 0; i < n; i++) {
        struct db_rejudge_job *jobs = NULL;
        int nj = 0;
        if (with_jobs && db_rejudge_jobs(r->srv->db, rows[i].id, &jobs, &nj, &err) != 0) {
            cJSON_Delete(o);
            return http_internal(r, &err);
        }
        cJSON_AddItemToArray(arr, rejudge_json(&rows[i], with_jobs ? jobs : NULL, nj));
        free(jobs);
    }
    return http_json(r, status, o);
}

/* The body's "gpu" (NULL: absent) and "since" (0: absent) checked against
 * board b; answers 400 and returns 1 when they are not right. */
static int rejudge_body(struct http_req *r, const struct board *b, int with_since,
                        char *gpu, size_t gpusz, int64_t *since, enum MHD_Result *res)
{
    cJSON *body = http_body_object(r, res), *it;
    char safe[72];
    gpu[0] = '\0';
    *since = 0;
    if (body == NULL)
        return 1;
    cJSON_ArrayForEach(it, body) {
        int is_gpu = strcmp(it->string, "gpu") == 0;
        if ((!is_gpu && !(with_since && strcmp(it->string, "since") == 0)) ||
            !cJSON_IsString(it)) {
            *res = http_error(r, MHD_HTTP_BAD_REQUEST, "bad_request", "the body may only hold "
                              "\"gpu\"%s, as strings", with_since ? " and \"since\"" : "");
            break;
        }
        kj_printable(safe, sizeof safe, it->valuestring, 64);
        if (is_gpu && boards_gpu(b, it->valuestring) < 0) {
            *res = http_error(r, MHD_HTTP_BAD_REQUEST, "unknown_gpu",
                              "leaderboard %s does not run on '%s'", b->spec->name, safe);
            break;
        }
        if (is_gpu)
            snprintf(gpu, gpusz, "%s", it->valuestring);
        else if ((*since = since_parse(it->valuestring)) < 0 || *since > (int64_t)time(NULL)) {
            *res = http_error(r, MHD_HTTP_BAD_REQUEST, "bad_since", "since '%s' is not a past "
                              "date (YYYY-MM-DD) or time (YYYY-MM-DDTHH:MM:SSZ) in UTC", safe);
            break;
        }
    }
    int bad = it != NULL;
    cJSON_Delete(body);
    return bad;
}

static enum MHD_Result unknown_board(struct http_req *r)
{
    return http_error(r, MHD_HTTP_NOT_FOUND, "unknown_leaderboard",
                      "no leaderboard named '%.64s'", r->params[0]);
}

enum MHD_Result api_board_rejudge(struct http_req *r)
{
    const struct board *b = boards_find(r->boards, r->params[0]);
    const char *gpus[DB_REJUDGE_MAX_GPUS];
    struct db_rejudge *rows = NULL;
    char gpu[DB_MAX_NAME];
    int64_t since = 0;
    int n = 0, ngpus = 0, rc;
    struct kj_err err;
    enum MHD_Result res;
    if (b == NULL)
        return unknown_board(r);
    if (rejudge_body(r, b, 1, gpu, sizeof gpu, &since, &res))
        return res;
    for (int g = 0; g < b->spec->ngpus && ngpus < DB_REJUDGE_MAX_GPUS; g++)
        if (gpu[0] == '\0' || strcmp(gpu, b->spec->gpus[g]) == 0)
            gpus[ngpus++] = b->spec->gpus[g];
    kj_err_clear(&err);
    rc = db_rejudge_start(r->srv->db, b->spec->name, gpus, ngpus, since, r->user.id, &rows, &n,
                          &err);
    if (rc == KJ_ECONFLICT)
        return http_error(r, MHD_HTTP_CONFLICT, "rejudge_running", "%s", err.msg);
    if (rc == KJ_ENOTFOUND)
        return http_error(r, MHD_HTTP_CONFLICT, "nothing_to_rejudge", "%s", err.msg);
    if (rc != 0)
        return http_internal(r, &err);
    for (int i = 0; i < n; i++)
        kj_log(KJ_LOG_INFO, "rejudge", "started id=%lld board=%s gpu=%s jobs=%lld by=%s",
               (long long)rows[i].id, rows[i].leaderboard, rows[i].gpu,
               (long long)rows[i].jobs, r->user.name);
    wait_notify_gpu(r->srv->wait, NULL); /* a parked claim may take one when idle */
    res = rejudges_answer(r, MHD_HTTP_ACCEPTED, rows, n, cJSON_CreateObject(), 0);
    free(rows);
    return res;
}

enum MHD_Result api_board_rejudge_cancel(struct http_req *r)
{
    const struct board *b = boards_find(r->boards, r->params[0]);
    struct db_rejudge *rows = NULL;
    char gpu[DB_MAX_NAME];
    int64_t since;
    int n = 0, rc;
    struct kj_err err;
    enum MHD_Result res;
    if (b == NULL)
        return unknown_board(r);
    if (rejudge_body(r, b, 0, gpu, sizeof gpu, &since, &res))
        return res;
    kj_err_clear(&err);
    rc = db_rejudge_cancel(r->srv->db, b->spec->name, gpu[0] != '\0' ? gpu : NULL, &rows, &n,
                           &err);
    if (rc == KJ_ENOTFOUND)
        return http_error(r, MHD_HTTP_CONFLICT, "no_rejudge_running", "%s", err.msg);
    if (rc != 0)
        return http_internal(r, &err);
    res = rejudges_answer(r, MHD_HTTP_OK, rows, n, cJSON_CreateObject(), 0);
    free(rows);
    return res;
}

enum MHD_Result api_board_rejudge_status(struct http_req *r)
{
    const struct board *b = boards_find(r->boards, r->params[0]);
    struct db_rejudge *rows = NULL;
    struct db_timing t;
    struct kj_err err;
    cJSON *o, *rk;
    int n = 0;
    enum MHD_Result res;
    if (b == NULL)
        return unknown_board(r);
    kj_err_clear(&err);
    o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "leaderboard", b->spec->name);
    rk = cJSON_AddArrayToObject(o, "rankings");
    for (int g = 0; g < b->spec->ngpus; g++) {
        cJSON *x = cJSON_CreateObject();
        if (db_rank_timing(r->srv->db, b->spec->name, b->spec->gpus[g], &t, &err) != 0) {
            cJSON_Delete(x);
            cJSON_Delete(o);
            return http_internal(r, &err);
        }
        cJSON_AddStringToObject(x, "gpu", b->spec->gpus[g]);
        add_timing(x, "timing", &t);
        cJSON_AddItemToArray(rk, x);
    }
    if (db_rejudge_list(r->srv->db, b->spec->name, &rows, &n, &err) != 0) {
        cJSON_Delete(o);
        return http_internal(r, &err);
    }
    res = rejudges_answer(r, MHD_HTTP_OK, rows, n, o, 1);
    free(rows);
    return res;
}
