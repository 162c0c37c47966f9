/*
 * api_admin.c - the admin's competition controls: POST /api/v1/admin/reload
 * (load leaderboards/ again) and POST /api/v1/leaderboards/{name}/publish
 * (open a closed board's sources to every signed-in user).
 *
 * Reload loads a complete new set (boards_load) while the old one keeps
 * serving, compares them (reload.c), refuses with 409 to remove a board
 * that has submissions or to change its shapes or tolerances unless the
 * body says {"force": true}, and only then swaps the sets (server.h says
 * why requests in flight are safe). A set that does not load changes
 * nothing. Publishing is stored by db_board.c; who then sees a source is
 * decided by api_sub_view() in api_access.c.
 */
#include "api.h"
#include "reload.h"

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
