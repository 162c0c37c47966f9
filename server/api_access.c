/*
 * api_access.c - who may see a submission, and who may keep waiting for
 * one: the view of a caller (docs/protocol.md, "Who sees a submission"),
 * the 404 of a hidden one, and the wait slots of ?wait=1 and event streams.
 *
 * api_sub_view() decides in one place: the owner and admins see everything
 * but the secret seed; others a ranked submission's ranking fields, and
 * every submission of a board whose sources the admin published (signed
 * in); anything else is the same 404 as an id that does not exist.
 * api_submissions.c, api_detail.c and sse.c call these.
 */
#include "api.h"

#include <string.h>

static int owner_view(const struct http_req *r, const struct db_sub *s)
{
    return r->authed && (r->user.id == s->user_id || strcmp(r->user.role, "admin") == 0);
}

/* Would s be in its board's rankings (its user's best or not)? The same
 * conditions as db_rank_rows, but for the ranking's timing (a result at
 * another one is still a ranked submission's, shown as such). */
static int sub_ranked(const struct db_sub *s)
{
    return s->mode == KJ_MODE_LEADERBOARD && s->status == DB_DONE && s->has_verdict &&
           s->verdict == KJ_V_ACCEPTED && s->has_score && s->score_ns > 0 &&
           !s->disqualified && s->withdrawn_at == 0 && s->rejudge_of == 0;
}

int api_sub_view(struct http_req *r, int64_t id, struct db_sub *s, enum api_view *view,
                 struct kj_err *err)
{
    int64_t at = 0;
    int rc = db_sub_get(r->srv->db, id, 0, s, err), prc;
    int signed_in = r->authed && strcmp(r->user.role, "runner") != 0;
    *view = API_VIEW_NONE;
    if (rc != 0 && rc != KJ_ENOTFOUND)
        return rc;
    if (rc == 0 && owner_view(r, s)) {
        *view = API_VIEW_OWNER;
        return 0;
    }
    /* The same query for an id that does not exist: no timing difference. */
    if ((prc = db_published(r->srv->db, rc == 0 ? s->leaderboard : "", &at, err)) != 0)
        return prc;
    if (rc != 0)
        return rc;
    if (signed_in && at != 0)
        *view = API_VIEW_PUBLISHED;
    else if (sub_ranked(s))
        *view = API_VIEW_RANKED;
    return 0;
}

enum MHD_Result api_sub_not_found(struct http_req *r)
{
    char safe[40];
    kj_printable(safe, sizeof safe, r->params[0], 32);
    return http_error(r, MHD_HTTP_NOT_FOUND, "not_found", "no submission '%s'", safe);
}

/* Take a wait slot for r's caller into r->hold (a stream's into h).
 * Answers 429 (the caller's cap) or 503 (every slot taken) and returns 1
 * when refused. */
int api_wait_hold(struct http_req *r, struct wait_hold *h, enum MHD_Result *res)
{
    struct kj_err err;
    kj_err_clear(&err);
    if (wait_hold(r->srv->wait, h, r->user.id, strcmp(r->user.role, "admin") == 0, &err) == 0)
        return 0;
    if (h->user_full) {
        r->retry_after = KJ_WAITERS_RETRY_S;
        *res = http_error(r, MHD_HTTP_TOO_MANY_REQUESTS, "too_many_waits",
                          "%s; close one, or poll instead (retry in %d s)", err.msg,
                          KJ_WAITERS_RETRY_S);
    } else {
        *res = http_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, "too_many_waiters", "%s; poll instead",
                          err.msg);
    }
    return 1;
}

/* The answer to a ?wait=1 or stream whose token recheck failed (why from auth_recheck). */
enum MHD_Result api_token_gone(struct http_req *r, const char *why)
{
    if (strcmp(why, "banned") == 0)
        return http_error(r, MHD_HTTP_FORBIDDEN, "banned", "this account is banned");
    return http_error(r, MHD_HTTP_UNAUTHORIZED, "invalid_token",
                      "the token was revoked or replaced while the request waited");
}
