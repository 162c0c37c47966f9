/*
 * http_route.c - the route table: which handler answers which method and
 * path, who may call it and how large its body may be.
 *
 * http_daemon.c finds each request's route here (http_route_find, which
 * also captures the {id}/{name} segments); the serve set-up names the
 * routes for the metrics' labels (http_route_names). A handler is one
 * function of api_*.c, web.c or sse.c's caller, declared in api.h.
 */
#include "http_route.h"
#include "api.h"

#include <stdio.h>
#include <string.h>

/* The routes. A path that matches no pattern is 404; one that matches with
 * another method is 405. HEAD is answered by the GET route. */
static const struct http_route routes[] = {
    {"GET", "/", web_index, HTTP_AUTH_NONE, HTTP_BODY_NONE, 0},
    {"GET", "/static/*", web_static, HTTP_AUTH_NONE, HTTP_BODY_NONE, 0},
    {"GET", "/healthz", api_healthz, HTTP_AUTH_NONE, HTTP_BODY_NONE, 0},
    {"GET", "/metrics", api_metrics, HTTP_AUTH_OPTIONAL, HTTP_BODY_NONE, 0},
    {"GET", "/api/v1/openapi.json", api_openapi, HTTP_AUTH_NONE, HTTP_BODY_NONE, 0},
    {"GET", "/api/v1/me", api_me, HTTP_AUTH_ANY, HTTP_BODY_NONE, 0},
    {"POST", "/api/v1/submissions", api_sub_create, HTTP_AUTH_USER, HTTP_BODY_MULTIPART,
     KJ_MAX_MULTIPART_BYTES},
    {"GET", "/api/v1/submissions", api_sub_list, HTTP_AUTH_USER, HTTP_BODY_NONE, 0},
    {"GET", "/api/v1/submissions/{id}", api_sub_get, HTTP_AUTH_OPTIONAL, HTTP_BODY_NONE, 0},
    {"GET", "/api/v1/submissions/{id}/events", api_sub_events, HTTP_AUTH_ANY, HTTP_BODY_NONE, 0},
    {"GET", "/api/v1/submissions/{id}/artifacts/{name}", api_sub_artifact, HTTP_AUTH_OPTIONAL,
     HTTP_BODY_NONE, 0},
    {"GET", "/api/v1/submissions/{id}/detail", api_sub_detail, HTTP_AUTH_OPTIONAL, HTTP_BODY_NONE,
     0},
    {"GET", "/api/v1/submissions/{id}/history", api_sub_history, HTTP_AUTH_ANY, HTTP_BODY_NONE,
     0},
    {"GET", "/api/v1/leaderboards", api_boards_list, HTTP_AUTH_NONE, HTTP_BODY_NONE, 0},
    {"GET", "/api/v1/leaderboards/{name}", api_board_get, HTTP_AUTH_NONE, HTTP_BODY_NONE, 0},
    {"GET", "/api/v1/leaderboards/{name}/rankings", api_board_rankings, HTTP_AUTH_NONE,
     HTTP_BODY_NONE, 0},
    {"GET", "/api/v1/leaderboards/{name}/history", api_board_history, HTTP_AUTH_NONE,
     HTTP_BODY_NONE, 0},
    {"POST", "/api/v1/leaderboards/{name}/publish", api_board_publish, HTTP_AUTH_ADMIN,
     HTTP_BODY_JSON, KJ_MAX_ADMIN_BYTES},
    {"POST", "/api/v1/admin/reload", api_admin_reload, HTTP_AUTH_ADMIN, HTTP_BODY_JSON,
     KJ_MAX_RELOAD_BYTES},
    {"POST", "/api/v1/leaderboards/{name}/rejudge", api_board_rejudge, HTTP_AUTH_ADMIN,
     HTTP_BODY_JSON, KJ_MAX_ADMIN_BYTES},
    {"GET", "/api/v1/leaderboards/{name}/rejudge", api_board_rejudge_status, HTTP_AUTH_ADMIN,
     HTTP_BODY_NONE, 0},
    {"POST", "/api/v1/leaderboards/{name}/rejudge/cancel", api_board_rejudge_cancel,
     HTTP_AUTH_ADMIN, HTTP_BODY_JSON, KJ_MAX_ADMIN_BYTES},
    {"POST", "/api/v1/runner/hello", api_runner_hello, HTTP_AUTH_RUNNER, HTTP_BODY_JSON,
     KJ_MAX_HELLO_BYTES},
    {"POST", "/api/v1/runner/claim", api_runner_claim, HTTP_AUTH_RUNNER, HTTP_BODY_JSON,
     KJ_MAX_CLAIM_BYTES},
    {"POST", "/api/v1/runner/jobs/{id}/events", api_runner_event, HTTP_AUTH_RUNNER,
     HTTP_BODY_JSON, KJ_MAX_EVENT_BYTES},
    {"POST", "/api/v1/runner/jobs/{id}/heartbeat", api_runner_heartbeat, HTTP_AUTH_RUNNER,
     HTTP_BODY_JSON, KJ_MAX_HEARTBEAT_BYTES},
    {"POST", "/api/v1/runner/jobs/{id}/result", api_runner_result, HTTP_AUTH_RUNNER,
     HTTP_BODY_JSON, KJ_MAX_RESULT_BYTES},
    {"POST", "/api/v1/runner/jobs/{id}/artifacts/{name}", api_runner_artifact, HTTP_AUTH_RUNNER,
     HTTP_BODY_OCTETS, DB_MAX_ARTIFACT_BYTES},
    {"POST", "/api/v1/runner/jobs/{id}/release", api_runner_release, HTTP_AUTH_RUNNER,
     HTTP_BODY_JSON, KJ_MAX_HEARTBEAT_BYTES},
    {"GET", "/api/v1/gpus", api_gpus, HTTP_AUTH_NONE, HTTP_BODY_NONE, 0},
    {"POST", "/api/v1/me/token", api_me_token, HTTP_AUTH_ANY, HTTP_BODY_JSON, KJ_MAX_ADMIN_BYTES},
    {"POST", "/api/v1/users", api_user_create, HTTP_AUTH_ADMIN, HTTP_BODY_JSON, KJ_MAX_ADMIN_BYTES},
    {"DELETE", "/api/v1/users/{name}/tokens", api_user_revoke, HTTP_AUTH_ADMIN, HTTP_BODY_NONE, 0},
    {"POST", "/api/v1/users/{name}/ban", api_user_ban, HTTP_AUTH_ADMIN, HTTP_BODY_JSON,
     KJ_MAX_ADMIN_BYTES},
    {"POST", "/api/v1/users/{name}/unban", api_user_unban, HTTP_AUTH_ADMIN, HTTP_BODY_JSON,
     KJ_MAX_ADMIN_BYTES},
    {"POST", "/api/v1/invites", api_invite_create, HTTP_AUTH_ADMIN, HTTP_BODY_JSON,
     KJ_MAX_ADMIN_BYTES},
    {"POST", "/api/v1/register", api_register, HTTP_AUTH_NONE, HTTP_BODY_JSON, KJ_MAX_ADMIN_BYTES},
    {"POST", "/api/v1/submissions/{id}/disqualify", api_sub_disqualify, HTTP_AUTH_ADMIN,
     HTTP_BODY_JSON, KJ_MAX_ADMIN_BYTES},
    {"POST", "/api/v1/submissions/{id}/withdraw", api_sub_withdraw, HTTP_AUTH_USER,
     HTTP_BODY_JSON, KJ_MAX_ADMIN_BYTES},
    {"GET", "/api/v1/leaderboards/{name}/files/{file}", api_board_file, HTTP_AUTH_OPTIONAL,
     HTTP_BODY_NONE, 0},
    {"GET", "/api/v1/users", api_user_list, HTTP_AUTH_ADMIN, HTTP_BODY_NONE, 0},
    {"GET", "/api/v1/stats", api_stats, HTTP_AUTH_ADMIN, HTTP_BODY_NONE, 0},
    /* popcorn-cli (api_popcorn.c); the cli id is a user token */
    {"GET", "/popcorn/leaderboards", api_pc_leaderboards, HTTP_AUTH_NONE, HTTP_BODY_NONE, 0},
    {"GET", "/popcorn/gpus/{leaderboard}", api_pc_gpus, HTTP_AUTH_NONE, HTTP_BODY_NONE, 0},
    {"POST", "/popcorn/submission/{leaderboard}/{gpu}/{mode}", api_pc_submit, HTTP_AUTH_CLI_ID,
     HTTP_BODY_MULTIPART, KJ_MAX_MULTIPART_BYTES},
    {"GET", "/popcorn/user/submissions", api_pc_sub_list, HTTP_AUTH_CLI_ID, HTTP_BODY_NONE, 0},
    {"GET", "/popcorn/user/submissions/{id}", api_pc_sub_get, HTTP_AUTH_CLI_ID, HTTP_BODY_NONE, 0},
    {"GET", "/popcorn/auth/init", api_pc_auth_init, HTTP_AUTH_NONE, HTTP_BODY_NONE, 0},
    {"POST", "/popcorn/{leaderboard}/{gpu}/profile", api_pc_profile, HTTP_AUTH_CLI_ID,
     HTTP_BODY_MULTIPART, KJ_MAX_MULTIPART_BYTES},
    {NULL, NULL, NULL, HTTP_AUTH_NONE, HTTP_BODY_NONE, 0},
};

/* Match path against pattern, capturing {..} segments into r->params. */
static int route_match(const char *pattern, const char *path, struct http_req *r)
{
    const char *p = pattern, *u = path;
    r->nparams = 0;
    for (;;) {
        if (*p == '*')
            return 1;
        if (*p == '{') {
            size_t n = strcspn(u, "/");
            p = strchr(p, '}') + 1;
            if (n == 0 || n >= HTTP_MAX_PARAM || r->nparams >= HTTP_MAX_PARAMS)
                return 0;
            memcpy(r->params[r->nparams], u, n);
            r->params[r->nparams++][n] = '\0';
            u += n;
            continue;
        }
        if (*p == '\0' || *u == '\0')
            return *p == *u;
        if (*p++ != *u++)
            return 0;
    }
}

unsigned http_route_find(struct http_req *r, char *allow, size_t allowsz)
{
    const char *m = strcmp(r->method, "HEAD") == 0 ? "GET" : r->method;
    int path_known = 0;
    allow[0] = '\0';
    for (const struct http_route *rt = routes; rt->method != NULL; rt++) {
        if (!route_match(rt->pattern, r->path, r))
            continue;
        if (strcmp(rt->method, m) == 0) {
            r->route = rt;
            return 0;
        }
        path_known = 1;
        size_t used = strlen(allow);
        snprintf(allow + used, allowsz - used, "%s%s%s", used ? ", " : "", rt->method,
                 strcmp(rt->method, "GET") == 0 ? ", HEAD" : "");
    }
    r->nparams = 0;
    return path_known ? MHD_HTTP_METHOD_NOT_ALLOWED : MHD_HTTP_NOT_FOUND;
}

int http_route_index(const struct http_route *rt)
{
    return rt != NULL ? (int)(rt - routes) : -1;
}

int http_route_names(const char **methods, const char **patterns, int max)
{
    int n = 0;
    for (const struct http_route *rt = routes; rt->method != NULL && n < max; rt++, n++) {
        methods[n] = rt->method;
        patterns[n] = rt->pattern;
    }
    return n;
}
