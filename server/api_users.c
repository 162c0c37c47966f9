/*
 * api_users.c - accounts: POST /users (admin creates a user), POST
 * /invites (admin makes an invite code), POST /register (a newcomer trades
 * an invite for an account), POST /me/token (rotate one's own token),
 * DELETE /users/{name}/tokens (revoke), POST /users/{name}/ban and /unban.
 *
 * Called through http_route.c's route table; stores through db_user.c. A new
 * token or invite code appears once, in the answer that created it; only
 * its SHA-256 is stored and nothing here logs it. The row "admin" holds
 * the configured admin token: its token and ban are managed by the config.
 * A ban, a revocation or a rotation wakes the user's parked ?wait=1
 * requests and event streams (wait_kick_user), which check the token again
 * and end at once.
 */
#include "api.h"
#include "auth.h"

#include <stdio.h>
#include <string.h>

/* The string value of key, or NULL when absent or not a string. Borrowed from o. */
static const char *str_field(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* 400 bad_name unless name is a valid new user name. Returns 1 when it answered. */
static int check_name(struct http_req *r, const char *name, enum MHD_Result *res)
{
    if (name != NULL && srv_valid_name(name))
        return 0;
    *res = http_error(r, MHD_HTTP_BAD_REQUEST, "bad_name",
                      "name must be 1 to %d characters of a-z, 0-9, '_', '.', '-', starting "
                      "with a letter or digit", KJ_NAME_MAX);
    return 1;
}

/* A new token into token and its hash into hash. */
static int new_token(char *token, char *hash, struct kj_err *err)
{
    int rc = auth_new_token(token, err);
    if (rc == 0)
        rc = auth_sha256_hex(token, strlen(token), hash, err);
    return rc;
}

/* {"name", "role", "token"}: the answer that shows a token, once. */
static enum MHD_Result token_answer(struct http_req *r, unsigned status, const char *name,
                                    const char *role, char *token)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", name);
    cJSON_AddStringToObject(o, "role", role);
    cJSON_AddStringToObject(o, "token", token);
    memset(token, 0, AUTH_TOKEN_HEX);
    return http_json(r, status, o);
}

enum MHD_Result api_user_create(struct http_req *r)
{
    char token[AUTH_TOKEN_HEX], hash[DB_HASH_HEX];
    enum MHD_Result res;
    struct kj_err err;
    cJSON *body = http_body_object(r, &res);
    const char *name, *role;
    int rc;
    if (body == NULL)
        return res;
    name = str_field(body, "name");
    role = cJSON_GetObjectItemCaseSensitive(body, "role") != NULL ? str_field(body, "role") : "user";
    if (check_name(r, name, &res))
        goto out;
    if (role == NULL || (strcmp(role, "user") != 0 && strcmp(role, "admin") != 0)) {
        res = http_error(r, MHD_HTTP_BAD_REQUEST, "bad_role", "role must be \"user\" or \"admin\"");
        goto out;
    }
    kj_err_clear(&err);
    if ((rc = new_token(token, hash, &err)) == 0)
        rc = db_user_add(r->srv->db, name, role, hash, NULL, &err);
    if (rc == KJ_ECONFLICT)
        res = http_error(r, MHD_HTTP_CONFLICT, "name_taken", "the name '%s' is taken", name);
    else if (rc != 0)
        res = http_internal(r, &err);
    else {
        kj_log(KJ_LOG_INFO, "users", "created name=%s role=%s by=%s", name, role, r->user.name);
        res = token_answer(r, MHD_HTTP_CREATED, name, role, token);
    }
out:
    cJSON_Delete(body);
    return res;
}

enum MHD_Result api_invite_create(struct http_req *r)
{
    char code[AUTH_TOKEN_HEX], hash[DB_HASH_HEX], when[32];
    enum MHD_Result res;
    struct kj_err err;
    cJSON *body = http_body_object(r, &res), *o, *days;
    double d = KJ_INVITE_DEFAULT_DAYS;
    if (body == NULL)
        return res;
    if ((days = cJSON_GetObjectItemCaseSensitive(body, "days")) != NULL) {
        d = cJSON_IsNumber(days) ? days->valuedouble : -1;
        if (d < 1 || d > KJ_INVITE_MAX_DAYS || d != (double)(int)d) {
            cJSON_Delete(body);
            return http_error(r, MHD_HTTP_BAD_REQUEST, "bad_days",
                              "days must be a whole number from 1 to %d", KJ_INVITE_MAX_DAYS);
        }
    }
    cJSON_Delete(body);
    int64_t expires = db_now_ms() / 1000 + (int64_t)d * 86400;
    kj_err_clear(&err);
    if (new_token(code, hash, &err) != 0 || db_invite_add(r->srv->db, hash, expires, &err) != 0)
        return http_internal(r, &err);
    kj_log(KJ_LOG_INFO, "users", "invite created days=%d by=%s", (int)d, r->user.name);
    srv_iso_time(expires, when, sizeof when);
    o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "code", code);
    cJSON_AddStringToObject(o, "expires_at", when);
    memset(code, 0, sizeof code);
    return http_json(r, MHD_HTTP_CREATED, o);
}

enum MHD_Result api_register(struct http_req *r)
{
    char token[AUTH_TOKEN_HEX], hash[DB_HASH_HEX], code_hash[DB_HASH_HEX];
    enum MHD_Result res;
    struct kj_err err;
    cJSON *body = http_body_object(r, &res);
    const char *name, *invite;
    int rc;
    if (body == NULL)
        return res;
    name = str_field(body, "name");
    invite = str_field(body, "invite");
    if (check_name(r, name, &res))
        goto out;
    if (invite == NULL || invite[0] == '\0' || strlen(invite) > AUTH_MAX_TOKEN) {
        res = http_error(r, MHD_HTTP_FORBIDDEN, "bad_invite", "an invite code is required");
        goto out;
    }
    kj_err_clear(&err);
    if ((rc = auth_sha256_hex(invite, strlen(invite), code_hash, &err)) == 0 &&
        (rc = new_token(token, hash, &err)) == 0)
        rc = db_register(r->srv->db, name, code_hash, hash, db_now_ms() / 1000, NULL, &err);
    if (rc == KJ_ENOTFOUND)
        res = http_error(r, MHD_HTTP_FORBIDDEN, "bad_invite",
                         "the invite code is unknown, already used or expired");
    else if (rc == KJ_ECONFLICT)
        res = http_error(r, MHD_HTTP_CONFLICT, "name_taken", "the name '%s' is taken", name);
    else if (rc != 0)
        res = http_internal(r, &err);
    else {
        kj_log(KJ_LOG_INFO, "users", "registered name=%s", name);
        res = token_answer(r, MHD_HTTP_CREATED, name, "user", token);
    }
out:
    cJSON_Delete(body);
    return res;
}

/* The configured admin's row: its token comes from the config file. */
static int is_config_admin(const char *name)
{
    return strcmp(name, "admin") == 0;
}

enum MHD_Result api_me_token(struct http_req *r)
{
    char token[AUTH_TOKEN_HEX], hash[DB_HASH_HEX];
    struct kj_err err;
    if (is_config_admin(r->user.name))
        return http_error(r, MHD_HTTP_FORBIDDEN, "config_admin",
                          "the admin token is set in the server's config file or environment");
    kj_err_clear(&err);
    if (new_token(token, hash, &err) != 0 ||
        db_user_set_token(r->srv->db, r->user.id, hash, &err) != 0)
        return http_internal(r, &err);
    kj_log(KJ_LOG_INFO, "users", "token rotated name=%s", r->user.name);
    wait_kick_user(r->srv->wait, r->user.id);
    return token_answer(r, MHD_HTTP_OK, r->user.name, r->user.role, token);
}

/* The user {name} of the path lost its token or was banned: end its
 * waits and streams now (they check the token again). */
static void kick(struct http_req *r)
{
    struct db_user u;
    struct kj_err err;
    kj_err_clear(&err);
    if (db_user_by_name(r->srv->db, r->params[0], &u, &err) == 0)
        wait_kick_user(r->srv->wait, u.id);
    else /* they still end at their next check (event, keep-alive or timeout) */
        kj_log(KJ_LOG_WARN, "users", "cannot wake the waits of name=%s: %s", r->params[0], err.msg);
}

/* 404 unknown_user or 403 config_admin for the {name} of the path; 1 when it answered. */
static int check_target(struct http_req *r, int rc, const struct kj_err *err, enum MHD_Result *res)
{
    char safe[72];
    kj_printable(safe, sizeof safe, r->params[0], 64);
    if (rc == 0 && is_config_admin(r->params[0]))
        rc = KJ_EINVAL;
    if (rc == 0)
        return 0;
    if (rc == KJ_EINVAL)
        *res = http_error(r, MHD_HTTP_FORBIDDEN, "config_admin",
                          "the admin account is managed by the server's config file");
    else if (rc == KJ_ENOTFOUND)
        *res = http_error(r, MHD_HTTP_NOT_FOUND, "unknown_user", "no user '%s'", safe);
    else
        *res = http_internal(r, err);
    return 1;
}

enum MHD_Result api_user_revoke(struct http_req *r)
{
    enum MHD_Result res;
    struct kj_err err;
    cJSON *o;
    kj_err_clear(&err);
    if (check_target(r, 0, &err, &res) ||
        check_target(r, db_user_revoke(r->srv->db, r->params[0], &err), &err, &res))
        return res;
    kj_log(KJ_LOG_INFO, "users", "tokens revoked name=%s by=%s", r->params[0], r->user.name);
    kick(r);
    o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", r->params[0]);
    cJSON_AddBoolToObject(o, "revoked", 1);
    return http_json(r, MHD_HTTP_OK, o);
}

static enum MHD_Result set_ban(struct http_req *r, int banned)
{
    enum MHD_Result res;
    struct kj_err err;
    cJSON *o;
    kj_err_clear(&err);
    if (check_target(r, 0, &err, &res) ||
        check_target(r, db_user_set_banned(r->srv->db, r->params[0], banned, &err), &err, &res))
        return res;
    kj_log(KJ_LOG_INFO, "users", "%s name=%s by=%s", banned ? "banned" : "unbanned",
           r->params[0], r->user.name);
    if (banned)
        kick(r);
    o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", r->params[0]);
    cJSON_AddBoolToObject(o, "banned", banned);
    return http_json(r, MHD_HTTP_OK, o);
}

enum MHD_Result api_user_ban(struct http_req *r)
{
    return set_ban(r, 1);
}

enum MHD_Result api_user_unban(struct http_req *r)
{
    return set_ban(r, 0);
}
