/*
 * api_sublist.c - GET /api/v1/submissions (the caller's submissions, with
 * filters and a cursor) and POST /api/v1/submissions/{id}/withdraw.
 *
 * The list reads db_sub_find() newest first, one row more than the page so
 * it knows whether a next page exists; the cursor is opaque to clients
 * ("v1." and the last id shown), so a page stays the same while new
 * submissions arrive. Admins may name another user (?user=NAME, or * for
 * everyone). Withdrawal lets the owner take an accepted leaderboard-mode
 * submission out of the rankings before the board's deadline: the row stays
 * (marked withdrawn, for the record) and the rankings cache is dropped.
 */
#include "api.h"
#include "db_list.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CURSOR_PREFIX "v1."
#define LIST_URL_MAX 512

/* ------------------------------------------------------------------ */
/* Query arguments                                                     */
/* ------------------------------------------------------------------ */

/* 1 when v is 1..DB_MAX_NAME-1 bytes, each in chars. */
static int is_word(const char *v, const char *chars)
{
    size_t n = strlen(v);
    return n > 0 && n < DB_MAX_NAME && strspn(v, chars) == n;
}

/* One name filter argument: NULL when absent; *bad set when not a word of
 * chars, an empty value included (as for every other argument). */
static const char *filter_arg(struct http_req *r, const char *key, const char *chars, int *bad)
{
    const char *v = http_query(r, key);
    if (v == NULL)
        return NULL;
    if (!is_word(v, chars))
        *bad = 1;
    return v;
}

/* The page size: default KJ_LIST_DEFAULT (no limit argument), at most
 * KJ_LIST_MAX; 0 when malformed, an empty value included. */
static int list_limit(struct http_req *r)
{
    const char *v = http_query(r, "limit");
    char *end;
    long x;
    if (v == NULL)
        return KJ_LIST_DEFAULT;
    if (v[0] < '0' || v[0] > '9' || strlen(v) > 9)
        return 0;
    x = strtol(v, &end, 10);
    if (*end != '\0' || x < 1)
        return 0;
    return x > KJ_LIST_MAX ? KJ_LIST_MAX : (int)x;
}

/* The id a cursor stands for; 0 when absent, -1 when malformed. */
static int64_t list_cursor(struct http_req *r)
{
    const char *v = http_query(r, "cursor");
    size_t plen = strlen(CURSOR_PREFIX);
    int64_t id = 0;
    if (v == NULL || v[0] == '\0')
        return 0;
    if (strncmp(v, CURSOR_PREFIX, plen) != 0 || v[plen] == '\0' || v[plen] == '0' ||
        strlen(v + plen) > 15 || strspn(v + plen, "0123456789") != strlen(v + plen))
        return -1;
    for (const char *p = v + plen; *p; p++)
        id = id * 10 + (*p - '0');
    return id;
}

/* The user whose submissions are listed into f->user_id (0 = everyone).
 * Answers and returns 1 on a refusal. */
static int list_user(struct http_req *r, struct db_sub_filter *f, enum MHD_Result *res)
{
    const char *u = http_query(r, "user");
    int admin = strcmp(r->user.role, "admin") == 0;
    struct db_user other;
    struct kj_err err;
    int rc;
    f->user_id = r->user.id;
    if (u == NULL || u[0] == '\0' || strcmp(u, r->user.name) == 0)
        return 0;
    if (!admin) {
        *res = http_error(r, MHD_HTTP_FORBIDDEN, "forbidden",
                          "only an admin may list another user's submissions");
        return 1;
    }
    if (strcmp(u, "*") == 0) {
        f->user_id = 0;
        return 0;
    }
    if (!srv_valid_name(u)) {
        *res = http_error(r, MHD_HTTP_BAD_REQUEST, "bad_filter",
                          "user must be a user name or * (every user)");
        return 1;
    }
    kj_err_clear(&err);
    if ((rc = db_user_by_name(r->srv->db, u, &other, &err)) == KJ_ENOTFOUND) {
        *res = http_error(r, MHD_HTTP_NOT_FOUND, "unknown_user", "no user named '%s'", u);
        return 1;
    }
    if (rc != 0) {
        *res = http_internal(r, &err);
        return 1;
    }
    f->user_id = other.id;
    return 0;
}

/* ------------------------------------------------------------------ */
/* GET /submissions                                                    */
/* ------------------------------------------------------------------ */

/* The URL of the page after last_id with the same arguments into buf. */
static void next_url(struct http_req *r, const struct db_sub_filter *f, int limit,
                     int64_t last_id, char *buf, size_t bufsz)
{
    const char *user = http_query(r, "user");
    const char *keys[] = {"leaderboard", "gpu", "mode", "verdict", "user"};
    const char *vals[] = {f->leaderboard, f->gpu, f->has_mode ? kj_mode_name(f->mode) : NULL,
                          f->has_verdict ? kj_verdict_name(f->verdict) : NULL,
                          user != NULL && user[0] != '\0' ? user : NULL};
    size_t used = (size_t)snprintf(buf, bufsz, "/api/v1/submissions?limit=%d", limit);
    /* Every value was checked to be a plain word (or "*"): nothing to escape. */
    for (int i = 0; i < 5 && used < bufsz; i++)
        if (vals[i] != NULL)
            used += (size_t)snprintf(buf + used, bufsz - used, "&%s=%s", keys[i], vals[i]);
    if (used < bufsz)
        snprintf(buf + used, bufsz - used, "&cursor=%s%lld", CURSOR_PREFIX, (long long)last_id);
}

static enum MHD_Result list_answer(struct http_req *r, const struct db_sub_filter *f, int limit,
                                   struct db_sub *rows, int n)
{
    cJSON *root = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(root, "submissions");
    int more = n > limit;
    char cursor[40], url[LIST_URL_MAX];
    for (int i = 0; i < n && i < limit; i++)
        cJSON_AddItemToArray(arr, api_sub_json(&rows[i], API_VIEW_OWNER, 0));
    if (more) {
        snprintf(cursor, sizeof cursor, "%s%lld", CURSOR_PREFIX, (long long)rows[limit - 1].id);
        next_url(r, f, limit, rows[limit - 1].id, url, sizeof url);
        cJSON_AddStringToObject(root, "next_cursor", cursor);
        cJSON_AddStringToObject(root, "next", url);
    } else {
        cJSON_AddNullToObject(root, "next_cursor");
        cJSON_AddNullToObject(root, "next");
    }
    return http_json(r, MHD_HTTP_OK, root);
}

enum MHD_Result api_sub_list(struct http_req *r)
{
    struct db_sub_filter f;
    struct db_sub *rows = NULL;
    struct kj_err err;
    enum MHD_Result res;
    const char *mode = http_query(r, "mode"), *verdict = http_query(r, "verdict");
    int limit = list_limit(r), bad = 0, n = 0;
    memset(&f, 0, sizeof f);
    if (limit == 0)
        return http_error(r, MHD_HTTP_BAD_REQUEST, "bad_limit",
                          "limit must be a positive integer (at most %d are returned)", KJ_LIST_MAX);
    if ((f.before_id = list_cursor(r)) < 0)
        return http_error(r, MHD_HTTP_BAD_REQUEST, "bad_cursor",
                          "cursor must be a value this endpoint returned as next_cursor");
    f.leaderboard = filter_arg(r, "leaderboard", "abcdefghijklmnopqrstuvwxyz0123456789_", &bad);
    f.gpu = filter_arg(r, "gpu", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-",
                       &bad);
    if (bad)
        return http_error(r, MHD_HTTP_BAD_REQUEST, "bad_filter",
                          "leaderboard and gpu must be names (a-z, 0-9, _; gpu also A-Z and -)");
    /* Absent: any; empty: malformed. */
    f.has_mode = mode != NULL;
    if (f.has_mode && kj_mode_parse(mode, &f.mode) != 0)
        return http_error(r, MHD_HTTP_BAD_REQUEST, "bad_filter",
                          "mode must be test, benchmark or leaderboard");
    f.has_verdict = verdict != NULL;
    if (f.has_verdict && kj_verdict_parse(verdict, &f.verdict) != 0)
        return http_error(r, MHD_HTTP_BAD_REQUEST, "bad_filter",
                          "verdict must be one of accepted, compile_error, rejected, "
                          "wrong_answer, runtime_error, time_limit, internal_error");
    if (list_user(r, &f, &res))
        return res;
    kj_err_clear(&err);
    if (db_sub_find(r->srv->db, &f, limit + 1, &rows, &n, &err) != 0)
        return http_internal(r, &err);
    res = list_answer(r, &f, limit, rows, n);
    db_sub_list_free(rows, n);
    return res;
}

/* ------------------------------------------------------------------ */
/* POST /submissions/{id}/withdraw                                     */
/* ------------------------------------------------------------------ */

/* Why s cannot be withdrawn (answered, returns 1), or 0 when it can. */
static int withdraw_refused(struct http_req *r, const struct db_sub *s, enum MHD_Result *res)
{
    const struct board *b = boards_find(r->boards, s->leaderboard);
    long long id = (long long)s->id;
    if (s->user_id != r->user.id) {
        *res = http_error(r, MHD_HTTP_FORBIDDEN, "forbidden",
                          "only the owner of submission %lld can withdraw it (an admin "
                          "disqualifies instead)", id);
        return 1;
    }
    if (s->withdrawn_at != 0)
        return 0; /* idempotent: answered as "already" */
    if (s->status != DB_DONE) {
        *res = http_error(r, MHD_HTTP_CONFLICT, "not_finished",
                          "submission %lld is still %s; it can be withdrawn once it has a verdict",
                          id, db_status_name(s->status));
        return 1;
    }
    if (s->mode != KJ_MODE_LEADERBOARD || s->verdict != KJ_V_ACCEPTED) {
        *res = http_error(r, MHD_HTTP_CONFLICT, "not_ranked",
                          "submission %lld (%s mode, %s) is not ranked: only accepted "
                          "leaderboard-mode submissions are, so there is nothing to withdraw",
                          id, kj_mode_name(s->mode), kj_verdict_name(s->verdict));
        return 1;
    }
    if (b != NULL && b->spec->deadline_unix != 0 && (int64_t)time(NULL) > b->spec->deadline_unix) {
        *res = http_error(r, MHD_HTTP_CONFLICT, "deadline_passed",
                          "leaderboard %s closed at %s; its rankings are final", b->spec->name,
                          b->spec->deadline);
        return 1;
    }
    return 0;
}

enum MHD_Result api_sub_withdraw(struct http_req *r)
{
    int64_t id = http_param_id(r, 0), at = 0;
    enum MHD_Result res;
    struct db_sub s;
    struct kj_err err;
    char when[32];
    int already = 0, rc;
    cJSON *body, *o;

    if (id == 0)
        return http_error(r, MHD_HTTP_NOT_FOUND, "not_found", "no submission '%.32s'", r->params[0]);
    if ((body = http_body_object(r, &res)) == NULL)
        return res;
    rc = cJSON_GetArraySize(body);
    cJSON_Delete(body);
    if (rc != 0)
        return http_error(r, MHD_HTTP_BAD_REQUEST, "bad_request", "the body must be empty or {}");
    kj_err_clear(&err);
    if ((rc = db_sub_get(r->srv->db, id, 0, &s, &err)) == KJ_ENOTFOUND)
        return http_error(r, MHD_HTTP_NOT_FOUND, "not_found", "no submission %lld", (long long)id);
    if (rc != 0)
        return http_internal(r, &err);
    if (withdraw_refused(r, &s, &res))
        return res;
    if ((rc = db_sub_withdraw(r->srv->db, id, (int64_t)time(NULL), &at, &already, &err)) != 0)
        return http_internal(r, &err);
    if (!already) {
        srv_rank_invalidate(r->srv);
        kj_log(KJ_LOG_INFO, "submit", "withdrawn id=%lld by=%s", (long long)id, r->user.name);
    }
    srv_iso_time(at, when, sizeof when);
    o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "id", (double)id);
    cJSON_AddBoolToObject(o, "withdrawn", 1);
    cJSON_AddStringToObject(o, "withdrawn_at", when);
    cJSON_AddBoolToObject(o, "already", already);
    return http_json(r, MHD_HTTP_OK, o);
}
