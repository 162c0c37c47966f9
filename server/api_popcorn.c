/*
 * api_popcorn.c - the routes popcorn-cli calls, under /popcorn/ (a user
 * sets POPCORN_API_URL=http://HOST:PORT/popcorn; docs/popcorn.md).
 *
 * The same data as the /api/v1 routes, in the shapes that client parses:
 * GET leaderboards and gpus/{leaderboard} (public); POST
 * submission/{leaderboard}/{gpu}/{mode} with one multipart "file" part,
 * stored through api_submissions.c's own checks and insert
 * (api_sub_upload, api_sub_submit) and answered {"details": {"id"}}; GET
 * user/submissions (?leaderboard, ?limit) and user/submissions/{id}, which
 * the client polls until "done". The caller is the owner of the kjudge
 * user token sent as X-Popcorn-Cli-Id (http_daemon.c checks it like a
 * bearer token, HTTP_AUTH_CLI_ID). What kjudge does not do answers 404
 * not_served with a sentence: auth/init (sign-in through Discord or GitHub) and the
 * streamed profile route. Error bodies carry "detail" beside "error"
 * (http.c), which the client prints.
 *
 * Names: the client lower-cases the leaderboard, so boards are found
 * without regard to case; a GPU named with a provider suffix ("B200_Nebius",
 * "H100_Modal") is the board's GPU type before the "_" when the full name
 * is not one of the board's. Modes are kjudge's (test, benchmark,
 * leaderboard, profile, sanitize). A finished job is "done" with one run
 * (runner: the GPU type; score: the kjudge score in seconds; passed:
 * accepted); a verdict other than accepted is job status "failed"
 * ("timed_out" for time_limit) with the verdict and its message as the
 * error the client prints.
 */
#include "api.h"
#include "db_list.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PC_ERROR_BYTES 2048   /* the job error: verdict, message, start of a compile log */

/* ------------------------------------------------------------------ */
/* Names                                                               */
/* ------------------------------------------------------------------ */

/* The board named name, with or without regard to case; NULL when none. */
static const struct board *pc_board(struct http_req *r, const char *name)
{
    const struct board *b = boards_find(r->boards, name);
    for (int i = 0; b == NULL && i < r->boards->nspecs; i++)
        if (strcasecmp(r->boards->specs[i]->name, name) == 0)
            b = &r->boards->boards[i];
    return b;
}

/* The GPU type of board b that gpu names: itself, its case-insensitive
 * match, or the part before a provider suffix ("H100_Modal"). NULL when
 * none (the submission checks then answer unknown_gpu). */
static const char *pc_gpu(const struct board *b, const char *gpu)
{
    size_t stem = strcspn(gpu, "_");
    for (int i = 0; i < b->spec->ngpus; i++)
        if (strcmp(b->spec->gpus[i], gpu) == 0)
            return b->spec->gpus[i];
    for (int i = 0; i < b->spec->ngpus; i++)
        if (strcasecmp(b->spec->gpus[i], gpu) == 0)
            return b->spec->gpus[i];
    for (int i = 0; gpu[stem] == '_' && i < b->spec->ngpus; i++)
        if (strlen(b->spec->gpus[i]) == stem && strncasecmp(b->spec->gpus[i], gpu, stem) == 0)
            return b->spec->gpus[i];
    return NULL;
}

/* ------------------------------------------------------------------ */
/* Submissions as the client reads them                                */
/* ------------------------------------------------------------------ */

/* "runner_queue" of a queued submission: its place in its GPU type's queue
 * as "queued_jobs" (1 = next); null once a runner holds it. */
static int pc_add_queue(struct http_req *r, cJSON *o, const struct db_sub *s, struct kj_err *err)
{
    int64_t pos = 0;
    cJSON *q;
    int rc;
    if (s->status == DB_QUEUED && (rc = db_job_position(r->srv->db, s->id, &pos, err)) != 0)
        return rc;
    if (pos <= 0) {
        cJSON_AddNullToObject(o, "runner_queue");
        return 0;
    }
    q = cJSON_AddObjectToObject(o, "runner_queue");
    cJSON_AddStringToObject(q, "runner", "kjudge");
    cJSON_AddStringToObject(q, "gpu", s->gpu);
    cJSON_AddNumberToObject(q, "queued_jobs", (double)pos);
    return 0;
}

/* The job's status word as the client knows them. */
static const char *pc_job_status(const struct db_sub *s)
{
    if (s->status == DB_QUEUED)
        return "pending";
    if (s->status == DB_RUNNING || !s->has_verdict)
        return "running";
    if (s->verdict == KJ_V_ACCEPTED)
        return "succeeded";
    return s->verdict == KJ_V_TIME_LIMIT ? "timed_out" : "failed";
}

/* The error of a finished job that was not accepted, into out: the verdict,
 * the result's message (or the judge's reason) and a compile log's start. */
static void pc_job_error(const struct db_sub *s, char *out, size_t outsz)
{
    cJSON *res = s->result != NULL ? cJSON_Parse(s->result) : NULL;
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(res, "message");
    const cJSON *log = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(res, "compile"), "log");
    const char *m = cJSON_IsString(msg) ? msg->valuestring : s->reason;
    int n = snprintf(out, outsz, "%s%s%s", kj_verdict_name(s->verdict), m[0] ? ": " : "", m);
    if (s->verdict == KJ_V_COMPILE_ERROR && cJSON_IsString(log) && log->valuestring[0] != '\0' &&
        strcmp(log->valuestring, m) != 0 && n > 0 && (size_t)n < outsz)
        snprintf(out + n, outsz - (size_t)n, "\n%s", log->valuestring);
    cJSON_Delete(res);
}

/* The run of a finished submission (list: gpu_type and score only). */
static void pc_add_run(cJSON *runs, const struct db_sub *s, int full)
{
    cJSON *run;
    if (s->status != DB_DONE || !s->has_verdict)
        return;
    run = cJSON_CreateObject();
    cJSON_AddStringToObject(run, full ? "runner" : "gpu_type", s->gpu);
    if (s->has_score)
        cJSON_AddNumberToObject(run, "score", s->score_ns / 1e9);
    else
        cJSON_AddNullToObject(run, "score");
    if (full) {
        cJSON_AddStringToObject(run, "mode", kj_mode_name(s->mode));
        cJSON_AddBoolToObject(run, "secret", 0);
        cJSON_AddBoolToObject(run, "passed", s->verdict == KJ_V_ACCEPTED);
        cJSON_AddStringToObject(run, "verdict", kj_verdict_name(s->verdict));
        api_add_time(run, "start_time", s->started_at);
        api_add_time(run, "end_time", s->finished_at);
    }
    cJSON_AddItemToArray(runs, run);
}

/* The fields both the list and one submission have. */
static void pc_sub_common(cJSON *o, const struct db_sub *s, int full)
{
    cJSON_AddNumberToObject(o, "id", (double)s->id);
    cJSON_AddStringToObject(o, "leaderboard_name", s->leaderboard);
    cJSON_AddStringToObject(o, "file_name", s->file_name);
    api_add_time(o, "submission_time", s->created_at);
    cJSON_AddBoolToObject(o, "done", s->status == DB_DONE);
    cJSON_AddStringToObject(o, "gpu", s->gpu);
    cJSON_AddStringToObject(o, "mode", kj_mode_name(s->mode));
    pc_add_run(cJSON_AddArrayToObject(o, "runs"), s, full);
}

/* ------------------------------------------------------------------ */
/* Handlers                                                            */
/* ------------------------------------------------------------------ */

enum MHD_Result api_pc_leaderboards(struct http_req *r)
{
    cJSON *arr = cJSON_CreateArray();
    char url[160];
    for (int i = 0; i < r->boards->nspecs; i++) {
        const struct spec *s = r->boards->specs[i];
        cJSON *o = cJSON_CreateObject(), *task, *gpus = cJSON_AddArrayToObject(o, "gpu_types");
        cJSON_AddNumberToObject(o, "id", i + 1);
        cJSON_AddStringToObject(o, "name", s->name);
        cJSON_AddStringToObject(o, "description", s->title);
        if (s->deadline[0] != '\0')
            cJSON_AddStringToObject(o, "deadline", s->deadline);
        else
            cJSON_AddNullToObject(o, "deadline");
        for (int g = 0; g < s->ngpus; g++)
            cJSON_AddItemToArray(gpus, cJSON_CreateString(s->gpus[g]));
        task = cJSON_AddObjectToObject(o, "task");
        snprintf(url, sizeof url, "/api/v1/leaderboards/%s", s->name);
        cJSON_AddStringToObject(task, "url", url);
        cJSON_AddItemToArray(arr, o);
    }
    return http_json(r, MHD_HTTP_OK, arr);
}

enum MHD_Result api_pc_gpus(struct http_req *r)
{
    const struct board *b = pc_board(r, r->params[0]);
    cJSON *arr;
    char safe[72];
    if (b == NULL) {
        kj_printable(safe, sizeof safe, r->params[0], 64);
        return http_error(r, MHD_HTTP_NOT_FOUND, "unknown_leaderboard",
                          "no leaderboard named '%s' (GET leaderboards lists them)", safe);
    }
    arr = cJSON_CreateArray();
    for (int g = 0; g < b->spec->ngpus; g++)
        cJSON_AddItemToArray(arr, cJSON_CreateString(b->spec->gpus[g]));
    return http_json(r, MHD_HTTP_OK, arr);
}

enum MHD_Result api_pc_submit(struct http_req *r)
{
    const char *lb = r->params[0], *name = r->params[1], *mode = r->params[2];
    struct upload_fields f;
    const struct board *b;
    const char *gpu;
    struct db_sub s;
    struct kj_err err;
    enum MHD_Result res;
    cJSON *o, *d;
    if (strlen(lb) > UPLOAD_MAX_FIELD || strlen(name) > UPLOAD_MAX_FIELD ||
        strlen(mode) > UPLOAD_MAX_FIELD)
        return http_error(r, MHD_HTTP_BAD_REQUEST, "bad_request", "a leaderboard, GPU or mode "
                          "name is longer than %d bytes", UPLOAD_MAX_FIELD);
    if (api_sub_upload(r, &f, &res))
        return res;
    if (f.has_leaderboard || f.has_gpu || f.has_mode)
        return http_error(r, MHD_HTTP_BAD_REQUEST, "bad_request", "the URL names the "
                          "leaderboard, GPU and mode; send only the 'file' field");
    /* The board's and GPU type's own spelling when they are known; the name
     * as sent otherwise, for the submission checks' 422. */
    b = pc_board(r, lb);
    gpu = b != NULL ? pc_gpu(b, name) : NULL;
    snprintf(f.leaderboard, sizeof f.leaderboard, "%.*s", UPLOAD_MAX_FIELD,
             b != NULL ? b->spec->name : lb);
    snprintf(f.gpu, sizeof f.gpu, "%.*s", UPLOAD_MAX_FIELD, gpu != NULL ? gpu : name);
    snprintf(f.mode, sizeof f.mode, "%.*s", UPLOAD_MAX_FIELD, mode);
    f.has_leaderboard = f.has_gpu = f.has_mode = 1;
    char note[512];
    if (api_sub_submit(r, &f, &s, note, sizeof note, &res))
        return res;
    o = cJSON_CreateObject();
    d = cJSON_AddObjectToObject(o, "details");
    cJSON_AddNumberToObject(d, "id", (double)s.id);
    cJSON_AddStringToObject(d, "leaderboard", s.leaderboard);
    cJSON_AddStringToObject(d, "gpu_type", s.gpu);
    cJSON_AddStringToObject(d, "mode", kj_mode_name(s.mode));
    cJSON_AddStringToObject(d, "file_name", s.file_name);
    cJSON_AddStringToObject(d, "status", db_status_name(s.status));
    kj_err_clear(&err);
    if (pc_add_queue(r, o, &s, &err) != 0) {
        cJSON_Delete(o);
        return http_internal(r, &err);
    }
    return http_json(r, MHD_HTTP_ACCEPTED, o);
}

enum MHD_Result api_pc_sub_get(struct http_req *r)
{
    int64_t id = http_param_id(r, 0);
    const struct board *b;
    enum api_view view = API_VIEW_NONE;
    struct db_sub s;
    struct kj_err err;
    char why[PC_ERROR_BYTES];
    cJSON *o, *job;
    int rc;
    kj_err_clear(&err);
    memset(&s, 0, sizeof s);
    rc = id == 0 ? KJ_ENOTFOUND : api_sub_view(r, id, &s, &view, &err);
    db_sub_clear(&s);
    if (rc == 0 && view == API_VIEW_OWNER)
        rc = db_sub_get(r->srv->db, id, 1, &s, &err);
    if (rc == KJ_ENOTFOUND || (rc == 0 && view != API_VIEW_OWNER)) {
        db_sub_clear(&s);
        return http_error(r, MHD_HTTP_NOT_FOUND, "not_found", "no submission '%.32s' of yours",
                          r->params[0]);
    }
    if (rc != 0) {
        db_sub_clear(&s);
        return http_internal(r, &err);
    }
    o = cJSON_CreateObject();
    pc_sub_common(o, &s, 1);
    b = boards_find(r->boards, s.leaderboard);
    cJSON_AddNumberToObject(o, "leaderboard_id", b != NULL ? (double)(b - r->boards->boards + 1) : 0);
    cJSON_AddStringToObject(o, "user_id", s.user);
    cJSON_AddStringToObject(o, "code", s.source != NULL ? s.source : "");
    job = cJSON_AddObjectToObject(o, "job");
    cJSON_AddStringToObject(job, "status", pc_job_status(&s));
    if (s.status == DB_DONE && s.has_verdict && s.verdict != KJ_V_ACCEPTED) {
        pc_job_error(&s, why, sizeof why);
        cJSON_AddStringToObject(job, "error", why);
    } else {
        cJSON_AddNullToObject(job, "error");
    }
    rc = pc_add_queue(r, o, &s, &err);
    db_sub_clear(&s);
    if (rc != 0) {
        cJSON_Delete(o);
        return http_internal(r, &err);
    }
    return http_json(r, MHD_HTTP_OK, o);
}

enum MHD_Result api_pc_sub_list(struct http_req *r)
{
    const char *lb = http_query(r, "leaderboard"), *lim = http_query(r, "limit");
    struct db_sub_filter flt;
    struct db_sub *rows = NULL;
    const struct board *b = NULL;
    struct kj_err err;
    char *end = NULL, safe[72];
    long limit = KJ_LIST_DEFAULT;
    int n = 0;
    cJSON *arr;
    if (lim != NULL && ((limit = strtol(lim, &end, 10)) < 1 || limit > KJ_LIST_MAX ||
                        lim[0] < '0' || lim[0] > '9' || *end != '\0'))
        return http_error(r, MHD_HTTP_BAD_REQUEST, "bad_limit", "limit must be 1 to %d",
                          KJ_LIST_MAX);
    if (lb != NULL && (b = pc_board(r, lb)) == NULL) {
        kj_printable(safe, sizeof safe, lb, 64);
        return http_error(r, MHD_HTTP_NOT_FOUND, "unknown_leaderboard",
                          "no leaderboard named '%s' (GET leaderboards lists them)", safe);
    }
    memset(&flt, 0, sizeof flt);
    flt.user_id = r->user.id;
    flt.leaderboard = b != NULL ? b->spec->name : NULL;
    kj_err_clear(&err);
    if (db_sub_find(r->srv->db, &flt, (int)limit, &rows, &n, &err) != 0)
        return http_internal(r, &err);
    arr = cJSON_CreateArray();
    for (int i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject();
        pc_sub_common(o, &rows[i], 0);
        cJSON_AddItemToArray(arr, o);
    }
    db_sub_list_free(rows, n);
    return http_json(r, MHD_HTTP_OK, arr);
}

enum MHD_Result api_pc_auth_init(struct http_req *r)
{
    return http_error(r, MHD_HTTP_NOT_FOUND, "not_served",
                      "this server does not sign in through Discord or GitHub: ask its "
                      "organizers for a token and write \"cli_id: TOKEN\" into ~/.popcorn.yaml");
}

enum MHD_Result api_pc_profile(struct http_req *r)
{
    return http_error(r, MHD_HTTP_NOT_FOUND, "not_served",
                      "profile mode is not served to popcorn-cli; use kjudge submit FILE "
                      "--mode profile (docs/profile.md)");
}
