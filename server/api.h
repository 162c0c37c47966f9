/*
 * api.h - the request handlers the route table in http_route.c points at.
 *
 * One file per resource: api_submissions.c (users submit and read
 * submissions), api_sublist.c (listing with filters, withdrawal),
 * api_access.c and api_json.c (who sees a submission, and as what JSON:
 * shared by the submission handlers and sse.c),
 * api_files.c (a board's public files), api_history.c (a board's best
 * scores over time), api_stats.c (the admin's user list
 * and statistics), api_detail.c (a submission's index entry: kernels,
 * launches, rank, diff), api_admin.c (reload, publishing sources), api_users.c (accounts, tokens, invites, bans),
 * api_leaderboards.c (boards and rankings), api_runner.c (GPU hosts claim
 * jobs and post results), api_gpus.c (GPU types, their
 * runners and queues), api_hello.c (runners' start-up reports),
 * api_metrics.c (Prometheus metrics), api_meta.c (health, OpenAPI, whoami),
 * api_popcorn.c (the routes popcorn-cli calls), sse.c (the
 * event stream of a submission) and web.c (static files). Each handler answers with one http_*
 * call from http.h, or parks the request (wait.h).
 */
#ifndef KJ_API_H
#define KJ_API_H

#include "boards.h"
#include "http.h"

/* api_submissions.c */
enum MHD_Result api_sub_create(struct http_req *r);
/* The collected multipart fields of r into *f (0), or the 400/413 answered
 * into *res (1). f->file is borrowed from r->upload. */
int api_sub_upload(struct http_req *r, struct upload_fields *f, enum MHD_Result *res);
/* Every check of POST /submissions on f (language, fields, directives,
 * board, GPU, mode, deadline, tool options, rate limit) and the durable
 * insert: 0 with the queued row in *out (no blobs) and the notes for the
 * user in note (notesz bytes; "" when none: a Python file's ignored
 * lines, its GPU name's mapping), or 1 with the 4xx/5xx answered into
 * *res. Fields f lacks may come from the file's "//!kjudge" lines (a
 * Python file's "#!POPCORN" and "#!kjudge" lines). */
int api_sub_submit(struct http_req *r, struct upload_fields *f, struct db_sub *out, char *note,
                   size_t notesz, enum MHD_Result *res);
enum MHD_Result api_sub_get(struct http_req *r);
enum MHD_Result api_sub_events(struct http_req *r);
/* POST /submissions/{id}/disqualify (admin) */
enum MHD_Result api_sub_disqualify(struct http_req *r);

/* api_access.c: who sees a submission, who may wait for one */
/* What a caller may see of a submission (docs/protocol.md, "Who sees a
 * submission"), from least to most. */
enum api_view {
    API_VIEW_NONE = 0,   /* nothing: answered exactly as an id that does not exist */
    API_VIEW_RANKED,     /* a ranked submission: the fields the rankings show */
    API_VIEW_PUBLISHED,  /* its board's sources are published, the caller is signed in
                            (not a runner): also file name, hash, source, reduced result */
    API_VIEW_OWNER       /* its owner or an admin: everything but secrets */
};
/* Read submission id (without blobs) into *s and decide what r's caller
 * may see. KJ_ENOTFOUND when there is no such id; a hidden one gives 0
 * and API_VIEW_NONE after the same queries. The caller clears *s. */
int api_sub_view(struct http_req *r, int64_t id, struct db_sub *s, enum api_view *view,
                 struct kj_err *err);
/* The 404 of a submission that does not exist or that the caller may not see. */
enum MHD_Result api_sub_not_found(struct http_req *r);
/* The answer for a why of auth_recheck: 403 banned or 401 invalid_token. */
enum MHD_Result api_token_gone(struct http_req *r, const char *why);
/* Take a wait slot (wait.h) for r's caller into h; answers 429 with
 * Retry-After (the caller's cap) or 503 (every slot taken) and returns 1
 * when refused. */
int api_wait_hold(struct http_req *r, struct wait_hold *h, enum MHD_Result *res);

/* api_json.c: a submission as JSON */
/* t as an ISO UTC string (null for 0); score_ns or null; and the public
 * summary (id, user, leaderboard, gpu, mode, status, verdict, score_ns,
 * created_at, disqualified, withdrawn). */
void api_add_time(cJSON *o, const char *key, int64_t t);
void api_add_score(cJSON *o, const struct db_sub *s);
void api_sub_summary(cJSON *o, const struct db_sub *s);
/* A submission as JSON (a new object) for view (not API_VIEW_NONE): the
 * owner's has the source, the full result and the reasons; a published one
 * the file name, hash, source and a reduced result; a ranked one the
 * rankings' fields. with_result: add the result as the view allows. */
cJSON *api_sub_json(const struct db_sub *s, enum api_view view, int with_result);
/* A new object with the listed keys (NULL-terminated) of src that it has. */
cJSON *api_pick(const cJSON *src, const char *const *keys);
/* Remove every "secret_seed" key of j, at any depth. */
void api_strip_secrets(cJSON *j);

/* api_sublist.c: GET /submissions (filters, cursor), POST /submissions/{id}/withdraw */
enum MHD_Result api_sub_list(struct http_req *r);
enum MHD_Result api_sub_withdraw(struct http_req *r);

/* api_files.c: GET /leaderboards/{name}/files/{file} */
enum MHD_Result api_board_file(struct http_req *r);

/* api_history.c: GET /leaderboards/{name}/history (records and the top users' progress) */
enum MHD_Result api_board_history(struct http_req *r);
/* api_history.c: GET /submissions/{id}/history (its results before a rejudge; owner, admin) */
enum MHD_Result api_sub_history(struct http_req *r);

/* api_stats.c (admin): GET /users, GET /stats */
enum MHD_Result api_user_list(struct http_req *r);
enum MHD_Result api_stats(struct http_req *r);

/* api_detail.c: GET /submissions/{id}/detail */
enum MHD_Result api_sub_detail(struct http_req *r);

/* api_admin.c */
enum MHD_Result api_admin_reload(struct http_req *r);
enum MHD_Result api_board_publish(struct http_req *r);
/* POST /leaderboards/{name}/rejudge {"gpu"?, "since"?} (202), POST
 * .../rejudge/cancel {"gpu"?}, GET .../rejudge (docs/rejudge.md) */
enum MHD_Result api_board_rejudge(struct http_req *r);
enum MHD_Result api_board_rejudge_cancel(struct http_req *r);
enum MHD_Result api_board_rejudge_status(struct http_req *r);

/* api_leaderboards.c */
enum MHD_Result api_boards_list(struct http_req *r);
enum MHD_Result api_board_get(struct http_req *r);
enum MHD_Result api_board_rankings(struct http_req *r);

/* api_runner.c */
enum MHD_Result api_runner_claim(struct http_req *r);
/* 403 too_many_runner_names unless the caller's runner token may report
 * the runner name name (claims, hellos): its own account name, or one of
 * at most serve --runner-names others, adopted as first reported
 * (db_runner_adopt). Returns 1 when it answered into *res. */
int api_runner_name_allowed(struct http_req *r, const char *name, enum MHD_Result *res);
enum MHD_Result api_runner_event(struct http_req *r);
enum MHD_Result api_runner_heartbeat(struct http_req *r);
enum MHD_Result api_runner_result(struct http_req *r);

/* api_artifacts.c: a job's files (profile mode's report): the runner's
 * upload and their download */
enum MHD_Result api_runner_artifact(struct http_req *r);
enum MHD_Result api_sub_artifact(struct http_req *r);
enum MHD_Result api_runner_release(struct http_req *r);

/* api_users.c */
enum MHD_Result api_user_create(struct http_req *r);
enum MHD_Result api_user_revoke(struct http_req *r);
enum MHD_Result api_user_ban(struct http_req *r);
enum MHD_Result api_user_unban(struct http_req *r);
enum MHD_Result api_invite_create(struct http_req *r);
enum MHD_Result api_register(struct http_req *r);
enum MHD_Result api_me_token(struct http_req *r);

/* api_gpus.c */
enum MHD_Result api_gpus(struct http_req *r);
/* A runner's state at now: "active" (holds a job), "idle" (asked for work
 * within lease_s seconds) or "silent". Shared with api_metrics.c. */
const char *api_runner_state(const struct db_runner *rr, int64_t now, int lease_s);
/* For a queued job of gpu: when no runner serves that type (none holds a
 * job, none asked for its jobs within 5 minutes or the lease length if
 * longer), a sentence saying so into out (a ?wait=1 answer's and the
 * stream's "note"); else "". */
#define API_NOTE_BYTES 256
int api_gpu_note(struct server *srv, const char *gpu, char *out, size_t outsz,
                 struct kj_err *err);

/* api_hello.c: POST /runner/hello, a runner's report at start (hello.h) */
enum MHD_Result api_runner_hello(struct http_req *r);

/* api_metrics.c: GET /metrics (admins, or addresses in metrics_allow) */
enum MHD_Result api_metrics(struct http_req *r);

/* sse.c */
/* Answer r with the event stream of submission id (already checked to
 * exist and be visible to the caller), replaying events after last_id
 * (-1: from the start, the queued event included), live until the verdict,
 * timeout_s seconds, or the caller's token stops being valid. The stream
 * holds one of the caller's wait slots (429 or 503 when none is free). */
enum MHD_Result sse_start(struct http_req *r, int64_t id, int64_t last_id, int timeout_s);

/* api_meta.c */
/* At start: read srv->openapi_path into srv->openapi (it must parse as JSON). */
int api_openapi_load(struct server *srv, struct kj_err *err);
enum MHD_Result api_healthz(struct http_req *r);
enum MHD_Result api_openapi(struct http_req *r);
enum MHD_Result api_me(struct http_req *r);

/* api_popcorn.c: popcorn-cli's routes under /popcorn/ (docs/popcorn.md) */
enum MHD_Result api_pc_leaderboards(struct http_req *r);
enum MHD_Result api_pc_gpus(struct http_req *r);
enum MHD_Result api_pc_submit(struct http_req *r);
enum MHD_Result api_pc_sub_list(struct http_req *r);
enum MHD_Result api_pc_sub_get(struct http_req *r);
enum MHD_Result api_pc_auth_init(struct http_req *r);
enum MHD_Result api_pc_profile(struct http_req *r);

/* web.c */
enum MHD_Result web_index(struct http_req *r);
enum MHD_Result web_static(struct http_req *r);

#endif
