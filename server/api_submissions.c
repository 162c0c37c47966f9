/*
 * api_submissions.c - POST /api/v1/submissions, GET /submissions/{id}
 * (?wait=1) and GET /submissions/{id}/events (GET /submissions, its
 * filters and cursor, and the owner's withdrawal are in api_sublist.c).
 *
 * A user's upload (collected by upload.c) is checked here - its language
 * (sub_lang.h: CUDA C++, or Python in KernelBot's form), board, GPU, mode
 * (each from its field, or else from its "//!kjudge" line; a Python file's
 * from its "#!POPCORN"/"#!kjudge" lines, pydirective.h), size, encoding,
 * directives against the board's variables - and
 * committed as a queued row (db_sub_insert_limited, which enforces the
 * caller's per-mode rate limit) before the 202 goes out; the
 * runner picks it up through api_runner.c. The checks and the insert
 * (api_sub_upload, api_sub_submit) also serve api_popcorn.c's route. Who sees what is decided in one
 * place, api_sub_view() (api_access.c), and the bodies are built by
 * api_json.c. ?wait=1 takes one of the caller's wait
 * slots and parks the connection in wait.h until the result arrives;
 * /events with ?stream=1 (or Accept: text/event-stream) hands over to sse.c.
 */
#include "api.h"
#include "auth.h"
#include "directive.h"
#include "pydirective.h"
#include "sub_lang.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------------ */
/* POST /submissions                                                   */
/* ------------------------------------------------------------------ */

/* 422 for a directive problem; the message always starts with its line. */
static enum MHD_Result directive_error(struct http_req *r, const struct kj_err *err)
{
    if (err->line > 0 && strncmp(err->msg, "line ", 5) != 0)
        return http_error(r, MHD_HTTP_UNPROCESSABLE_CONTENT, "bad_directive", "line %d: %s",
                          err->line, err->msg);
    return http_error(r, MHD_HTTP_UNPROCESSABLE_CONTENT, "bad_directive", "%s", err->msg);
}

/* Check the directives against the board; answers and returns 1 on a problem. */
static int check_directives(struct http_req *r, const struct upload_fields *f,
                            const struct directives *d, const struct board *b,
                            enum MHD_Result *res)
{
    const char *names[SPEC_MAX_VARS];
    struct expr_vars vars;
    struct kj_err err;
    spec_expr_vars(b->spec, names, NULL, &vars);
    if (d->leaderboard[0] != '\0' && strcmp(d->leaderboard, f->leaderboard) != 0) {
        *res = http_error(r, MHD_HTTP_UNPROCESSABLE_CONTENT, "leaderboard_mismatch",
                          "line %d: the file names leaderboard '%s' but the request says '%s'",
                          d->leaderboard_line, d->leaderboard, f->leaderboard);
        return 1;
    }
    if (d->gpu[0] != '\0' && strcmp(d->gpu, f->gpu) != 0) {
        *res = http_error(r, MHD_HTTP_UNPROCESSABLE_CONTENT, "gpu_mismatch",
                          "line %d: the file names gpu '%s' but the request says '%s'",
                          d->gpu_line, d->gpu, f->gpu);
        return 1;
    }
    if (d->mode[0] != '\0' && strcmp(d->mode, f->mode) != 0) {
        *res = http_error(r, MHD_HTTP_UNPROCESSABLE_CONTENT, "mode_mismatch",
                          "line %d: the file names mode '%s' but the request says '%s'",
                          d->mode_line, d->mode, f->mode);
        return 1;
    }
    kj_err_clear(&err);
    if (dir_check_names(d, &vars, &err) != 0) {
        *res = directive_error(r, &err);
        return 1;
    }
    return 0;
}

/* Field checks that need no parsing of the source; *mode gets the mode
 * field's (test when absent). Answers and returns 1 on a problem. */
static int check_fields(struct http_req *r, struct upload_fields *f, enum kj_mode *mode,
                        enum MHD_Result *res)
{
    struct kj_err err;
    int rc;
    if (!f->has_file) {
        *res = http_error(r, MHD_HTTP_BAD_REQUEST, "missing_file",
                          "the 'file' field is missing (curl -F file=@kernel.cu)");
        return 1;
    }
    kj_err_clear(&err);
    if ((rc = upload_check_source(f->file, f->file_len, KJ_MAX_SOURCE_BYTES, &err)) != 0) {
        if (rc == KJ_ELIMIT)
            *res = http_error(r, MHD_HTTP_CONTENT_TOO_LARGE, "too_large", "%s", err.msg);
        else
            *res = http_error(r, MHD_HTTP_BAD_REQUEST, f->file_len == 0 ? "empty_file"
                              : "invalid_source", "%s", err.msg);
        return 1;
    }
    if (!f->has_mode)
        snprintf(f->mode, sizeof f->mode, "%s", kj_mode_name(KJ_MODE_TEST));
    if (kj_mode_parse(f->mode, mode) != 0) {
        char safe[72];
        kj_printable(safe, sizeof safe, f->mode, 64);
        *res = http_error(r, MHD_HTTP_BAD_REQUEST, "bad_mode",
                          "mode '%s' is not one of test, benchmark, leaderboard, profile, "
                          "sanitize", safe);
        return 1;
    }
    return 0;
}

/* Board and GPU checks after the directives named the board (if the request did not). */
static const struct board *check_board(struct http_req *r, const struct upload_fields *f,
                                           enum kj_mode mode, enum MHD_Result *res)
{
    const struct board *b = boards_find(r->boards, f->leaderboard);
    char safe[72];
    int ok = 0;
    if (b == NULL) {
        kj_printable(safe, sizeof safe, f->leaderboard, 64);
        *res = http_error(r, MHD_HTTP_UNPROCESSABLE_CONTENT, "unknown_leaderboard",
                          "no leaderboard named '%s' (GET /api/v1/leaderboards lists them)", safe);
        return NULL;
    }
    if (!f->has_gpu || f->gpu[0] == '\0') {
        *res = http_error(r, MHD_HTTP_BAD_REQUEST, "missing_gpu",
                          "the 'gpu' field is missing (one of this leaderboard's gpus: -F gpu=NAME "
                          "or a line \"//!kjudge gpu NAME\" in the file)");
        return NULL;
    }
    for (int i = 0; i < b->spec->ngpus; i++)
        ok |= strcmp(b->spec->gpus[i], f->gpu) == 0;
    if (!ok) {
        kj_printable(safe, sizeof safe, f->gpu, 64);
        *res = http_error(r, MHD_HTTP_UNPROCESSABLE_CONTENT, "unknown_gpu",
                          "leaderboard %s does not run on '%s'", b->spec->name, safe);
        return NULL;
    }
    if (mode == KJ_MODE_LEADERBOARD && b->spec->deadline_unix != 0 &&
        (int64_t)time(NULL) > b->spec->deadline_unix) {
        *res = http_error(r, MHD_HTTP_CONFLICT, "deadline_passed",
                          "leaderboard %s closed at %s; test and benchmark modes still work",
                          b->spec->name, b->spec->deadline);
        return NULL;
    }
    return b;
}

/* The caller's limit for mode, submissions per minute; 0 (none) for admins. */
static int rate_limit(const struct http_req *r, enum kj_mode mode)
{
    if (strcmp(r->user.role, "admin") == 0)
        return 0;
    return r->srv->rate_limits[mode];
}

/* The 202 answer for stored submission s, with a "note" when note is not
 * "" (a Python file's GPU name mapped to its type, keys ignored). */
static enum MHD_Result accepted(struct http_req *r, const struct db_sub *s, const char *note)
{
    cJSON *o = cJSON_CreateObject(), *urls;
    char url[96];
    cJSON_AddNumberToObject(o, "id", (double)s->id);
    cJSON_AddStringToObject(o, "status", db_status_name(DB_QUEUED));
    cJSON_AddStringToObject(o, "leaderboard", s->leaderboard);
    cJSON_AddStringToObject(o, "gpu", s->gpu);
    cJSON_AddStringToObject(o, "mode", kj_mode_name(s->mode));
    cJSON_AddStringToObject(o, "lang", sub_lang_name(s->lang));
    if (note[0] != '\0')
        cJSON_AddStringToObject(o, "note", note);
    urls = cJSON_AddObjectToObject(o, "urls");
    snprintf(url, sizeof url, "/api/v1/submissions/%lld", (long long)s->id);
    cJSON_AddStringToObject(urls, "self", url);
    snprintf(url, sizeof url, "/api/v1/submissions/%lld?wait=1", (long long)s->id);
    cJSON_AddStringToObject(urls, "wait", url);
    return http_json(r, MHD_HTTP_ACCEPTED, o);
}

/* The options of profile and sanitize modes: "tool" only in sanitize mode
 * (a compute-sanitizer tool), "shape" only in profile mode (a benchmark
 * shape's index on board b). Fills s; returns 1 when it answered. */
static int check_tool_fields(struct http_req *r, const struct upload_fields *f, enum kj_mode mode,
                             const struct board *b, struct db_sub *s, enum MHD_Result *res)
{
    char safe[72];
    if (f->has_tool) {
        enum kj_sanitizer t;
        kj_printable(safe, sizeof safe, f->tool, 64);
        if (mode != KJ_MODE_SANITIZE) {
            *res = http_error(r, MHD_HTTP_BAD_REQUEST, "bad_tool",
                              "the 'tool' field belongs to mode=sanitize");
            return 1;
        }
        if (kj_sanitizer_parse(f->tool, &t) != 0) {
            *res = http_error(r, MHD_HTTP_BAD_REQUEST, "bad_tool", "tool '%s' is not one of "
                              "memcheck, racecheck, initcheck, synccheck", safe);
            return 1;
        }
        snprintf(s->sanitizer, sizeof s->sanitizer, "%s", kj_sanitizer_name(t));
    }
    if (f->has_shape) {
        char *end = NULL;
        long v = strtol(f->shape, &end, 10);
        kj_printable(safe, sizeof safe, f->shape, 64);
        if (mode != KJ_MODE_PROFILE) {
            *res = http_error(r, MHD_HTTP_BAD_REQUEST, "bad_shape",
                              "the 'shape' field belongs to mode=profile");
            return 1;
        }
        if (f->shape[0] == '\0' || *end != '\0' || v < 0 || v >= b->spec->nbenchmarks) {
            *res = http_error(r, MHD_HTTP_UNPROCESSABLE_CONTENT, "bad_shape",
                              "shape '%s' is not a benchmark shape's index of %s (0 to %d)", safe,
                              b->spec->name, b->spec->nbenchmarks - 1);
            return 1;
        }
        s->profile_shape = 1 + (int)v;
    }
    return 0;
}

/* Store the checked submission (language lang) into *out (0), or answer
 * into *res and return 1: 429 over the caller's rate limit. */
static int store(struct http_req *r, const struct upload_fields *f, enum kj_mode mode,
                 const struct board *b, int lang, struct db_sub *out, enum MHD_Result *res)
{
    struct db_sub s;
    struct kj_err err;
    int limit, rc;
    memset(&s, 0, sizeof s);
    if (check_tool_fields(r, f, mode, b, &s, res))
        return 1;
    kj_err_clear(&err);
    s.user_id = r->user.id;
    snprintf(s.user, sizeof s.user, "%s", r->user.name);
    snprintf(s.leaderboard, sizeof s.leaderboard, "%.63s", f->leaderboard);
    snprintf(s.gpu, sizeof s.gpu, "%.63s", f->gpu);
    s.mode = mode;
    s.lang = lang;
    snprintf(s.file_name, sizeof s.file_name, "%s", f->file_name);
    s.source = (char *)f->file; /* borrowed for the insert; not freed through s */
    s.source_len = f->file_len;
    limit = rate_limit(r, mode);
    if ((rc = auth_sha256_hex(f->file, f->file_len, s.source_sha256, &err)) == 0)
        rc = db_sub_insert_limited(r->srv->db, &s, limit, KJ_RATE_WINDOW_S, &r->retry_after, &err);
    s.source = NULL;
    if (rc == KJ_ELIMIT) {
        kj_log(KJ_LOG_INFO, "submit", "rate limited user=%s mode=%s", s.user, kj_mode_name(mode));
        *res = http_error(r, MHD_HTTP_TOO_MANY_REQUESTS, "rate_limited",
                          "rate_limit_%s: at most %d %s submissions per minute; retry in %d s",
                          kj_mode_name(mode), limit, kj_mode_name(mode), r->retry_after);
        return 1;
    }
    if (rc != 0) {
        *res = http_internal(r, &err);
        return 1;
    }
    kj_log(KJ_LOG_INFO, "submit", "queued id=%lld user=%s leaderboard=%s gpu=%s mode=%s lang=%s "
           "bytes=%zu", (long long)s.id, s.user, s.leaderboard, s.gpu, kj_mode_name(mode),
           sub_lang_name(lang), f->file_len);
    wait_notify_gpu(r->srv->wait, s.gpu); /* a runner's parked claim takes it now */
    *out = s;
    return 0;
}

int api_sub_upload(struct http_req *r, struct upload_fields *f, enum MHD_Result *res)
{
    struct kj_err err;
    int rc;
    kj_err_clear(&err);
    if ((rc = upload_finish(r->upload, f, &err)) == 0)
        return 0;
    if (rc == KJ_ELIMIT)
        *res = http_error(r, MHD_HTTP_CONTENT_TOO_LARGE, "too_large", "%s", err.msg);
    else if (rc == KJ_ENOMEM)
        *res = http_internal(r, &err);
    else
        *res = http_error(r, MHD_HTTP_BAD_REQUEST, "bad_request", "%s", err.msg);
    return 1;
}

/* A Python file's board and GPU type: the request's fields win; a line
 * of the file that names another one is a 400 naming both. Fills f's
 * leaderboard and gpu from the lines where the request has none. Answers
 * and returns 1 on a problem. */
static int python_names(struct http_req *r, struct upload_fields *f, const struct pydir *d,
                        enum MHD_Result *res)
{
    char safe[72];
    if (f->has_leaderboard && f->leaderboard[0] != '\0') {
        if (d->leaderboard[0] != '\0' && strcmp(d->leaderboard, f->leaderboard) != 0) {
            kj_printable(safe, sizeof safe, f->leaderboard, 64);
            *res = http_error(r, MHD_HTTP_BAD_REQUEST, "leaderboard_mismatch",
                              "line %d: the file names leaderboard '%s' but the request says "
                              "'%s'", d->leaderboard_line, d->leaderboard, safe);
            return 1;
        }
    } else if (d->leaderboard[0] != '\0') {
        snprintf(f->leaderboard, sizeof f->leaderboard, "%s", d->leaderboard);
    } else {
        *res = http_error(r, MHD_HTTP_BAD_REQUEST, "missing_leaderboard",
                          "name the leaderboard: -F leaderboard=NAME or a line "
                          "\"#!POPCORN leaderboard NAME\" in the file");
        return 1;
    }
    if (f->has_gpu && f->gpu[0] != '\0') {
        if (d->gpu[0] != '\0' && strcmp(d->gpu, f->gpu) != 0 &&
            strcmp(d->gpu_written, f->gpu) != 0) {
            kj_printable(safe, sizeof safe, f->gpu, 64);
            *res = http_error(r, MHD_HTTP_BAD_REQUEST, "gpu_mismatch",
                              "line %d: the file names gpu '%s' but the request says '%s'",
                              d->gpu_line, d->gpu_written, safe);
            return 1;
        }
    } else if (d->gpu[0] != '\0') {
        snprintf(f->gpu, sizeof f->gpu, "%s", d->gpu);
        f->has_gpu = 1;
    } else {
        *res = http_error(r, MHD_HTTP_BAD_REQUEST, "missing_gpu",
                          "the 'gpu' field is missing (one of this leaderboard's gpus: -F gpu=NAME "
                          "or a line \"#!POPCORN gpu NAME\" in the file)");
        return 1;
    }
    return 0;
}

/* The checks and the insert of a Python file (KernelBot's form): its lines
 * read (pydirective.h), a custom_kernel required, the board must take
 * Python (a "python" block in its leaderboard.json); then stored like
 * CUDA. The lines' notes (ignored keys, the GPU mapping) into note. */
static int submit_python(struct http_req *r, struct upload_fields *f, enum kj_mode mode,
                         struct db_sub *out, char *note, size_t notesz, enum MHD_Result *res)
{
    struct pydir d;
    struct kj_err err;
    const struct board *b;
    int rc;
    kj_err_clear(&err);
    if ((rc = pydir_parse(f->file, f->file_len, &d, &err)) == KJ_ENOTFOUND) {
        *res = http_error(r, MHD_HTTP_BAD_REQUEST, "no_custom_kernel", "%s", err.msg);
        return 1;
    }
    if (rc != 0) {
        *res = directive_error(r, &err);
        return 1;
    }
    if (python_names(r, f, &d, res))
        return 1;
    if (!f->has_file_name)
        snprintf(f->file_name, sizeof f->file_name, "submission.py");
    if ((b = check_board(r, f, mode, res)) == NULL)
        return 1;
    if (!b->spec->python.present) {
        *res = http_error(r, MHD_HTTP_BAD_REQUEST, "unsupported_language",
                          "leaderboard %s takes CUDA C++ only, not Python (the boards that take "
                          "Python show a \"python\" interface in GET /api/v1/leaderboards/NAME)",
                          b->spec->name);
        return 1;
    }
    snprintf(note, notesz, "%s", d.notes);
    return store(r, f, mode, b, SUB_LANG_PYTHON, out, res);
}

int api_sub_submit(struct http_req *r, struct upload_fields *f, struct db_sub *out, char *note,
                   size_t notesz, enum MHD_Result *res)
{
    struct directives *d = NULL;
    const struct board *b;
    struct kj_err err;
    enum kj_mode mode = KJ_MODE_TEST;
    int answered = 1;

    kj_err_clear(&err);
    if (notesz > 0)
        note[0] = '\0';
    if (check_fields(r, f, &mode, res))
        return 1;
    int lang = sub_lang_detect(f->has_file_name ? f->file_name : NULL, f->file, f->file_len);
    if (lang == SUB_LANG_PYTHON)
        return submit_python(r, f, mode, out, note, notesz, res);
    /* The runner compiles PTX by its content (sub_lang_is_ptx), so a file
     * named .ptx must be one. */
    if (lang == SUB_LANG_PTX && !sub_lang_is_ptx(f->file, f->file_len))
        return (*res = http_error(r, MHD_HTTP_BAD_REQUEST, "bad_ptx",
                                  "a .ptx file starts (after comments) with its .version "
                                  "line")), 1;
    if ((d = calloc(1, sizeof *d)) == NULL) {
        KJ_FAIL(&err, KJ_ENOMEM, "out of memory parsing directives");
        *res = http_internal(r, &err);
        return 1;
    }
    if (dir_parse(f->file, f->file_len, d, &err) != 0) {
        *res = directive_error(r, &err);
        goto out;
    }
    if (!f->has_leaderboard || f->leaderboard[0] == '\0') {
        if (d->leaderboard[0] == '\0') {
            *res = http_error(r, MHD_HTTP_BAD_REQUEST, "missing_leaderboard",
                              "name the leaderboard: -F leaderboard=NAME or a line "
                              "\"//!kjudge leaderboard NAME\" in the file");
            goto out;
        }
        snprintf(f->leaderboard, sizeof f->leaderboard, "%s", d->leaderboard);
    }
    /* GPU type and mode from "//!kjudge gpu" / "mode" lines when the request
     * has no such field; a field that disagrees with its line is a 422 below. */
    if ((!f->has_gpu || f->gpu[0] == '\0') && d->gpu[0] != '\0') {
        snprintf(f->gpu, sizeof f->gpu, "%s", d->gpu);
        f->has_gpu = 1;
    }
    if (!f->has_mode && d->mode[0] != '\0') {
        snprintf(f->mode, sizeof f->mode, "%s", d->mode);
        if (KJ_NEVER(kj_mode_parse(f->mode, &mode) != 0)) { /* dir_parse checked it */
            KJ_FAIL(&err, KJ_EINTERNAL, "a directive's mode is not a mode");
            *res = http_internal(r, &err);
            goto out;
        }
    }
    if ((b = check_board(r, f, mode, res)) == NULL || check_directives(r, f, d, b, res))
        goto out;
    answered = store(r, f, mode, b, lang, out, res);
out:
    free(d);
    return answered;
}

enum MHD_Result api_sub_create(struct http_req *r)
{
    struct upload_fields f;
    struct db_sub s;
    enum MHD_Result res;
    char note[PYDIR_NOTES_BYTES];
    if (api_sub_upload(r, &f, &res) || api_sub_submit(r, &f, &s, note, sizeof note, &res))
        return res;
    return accepted(r, &s, note);
}

/* ------------------------------------------------------------------ */
/* GET /submissions/{id}, /submissions/{id}/events                     */
/* ------------------------------------------------------------------ */

/* Parse a non-negative integer query argument (dflt when absent); -1 when
 * malformed, empty included. */
static long query_uint(struct http_req *r, const char *key, long dflt)
{
    const char *v = http_query(r, key);
    char *end;
    long x;
    if (v == NULL)
        return dflt;
    if (v[0] < '0' || v[0] > '9' || strlen(v) > 9)
        return -1;
    x = strtol(v, &end, 10);
    return *end == '\0' ? x : -1;
}

/* Answer with the submission as it is now, as the caller may see it, with
 * a "note" when note is not NULL. */
static enum MHD_Result answer_sub(struct http_req *r, int64_t id, const char *note)
{
    struct db_sub s;
    enum api_view view;
    struct kj_err err;
    int rc;
    kj_err_clear(&err);
    rc = api_sub_view(r, id, &s, &view, &err);
    db_sub_clear(&s);
    if (rc == KJ_ENOTFOUND || (rc == 0 && view == API_VIEW_NONE))
        return api_sub_not_found(r);
    if (rc != 0 || (rc = db_sub_get(r->srv->db, id, 1, &s, &err)) != 0) {
        db_sub_clear(&s);
        return rc == KJ_ENOTFOUND ? api_sub_not_found(r) : http_internal(r, &err);
    }
    cJSON *o = api_sub_json(&s, view, 1);
    /* Queued: its place under the queue rule (only its owner and admins see
     * a queued submission). */
    int64_t pos = 0;
    if (o != NULL && s.status == DB_QUEUED) {
        if ((rc = db_job_position(r->srv->db, id, &pos, &err)) != 0) {
            cJSON_Delete(o);
            db_sub_clear(&s);
            return http_internal(r, &err);
        }
        if (pos > 0)
            cJSON_AddNumberToObject(o, "queue_position", (double)pos);
    }
    if (r->phase == HTTP_PHASE_WAITING)
        cJSON_AddBoolToObject(o, "wait_timed_out", r->wait.timed_out);
    if (note != NULL)
        cJSON_AddStringToObject(o, "note", note);
    db_sub_clear(&s);
    return http_json(r, MHD_HTTP_OK, o);
}

/* ?wait=1 on a job not done, on the slot r->hold: park the connection (wait.h). */
static enum MHD_Result park(struct http_req *r, int64_t id, long timeout)
{
    struct db_sub s;
    struct kj_err err;
    const char *why = NULL;
    int rc;
    kj_err_clear(&err);
    if (KJ_NEVER(!r->hold.held))
        return answer_sub(r, id, NULL); /* no slot to park on: answer at once */
    rc = wait_add(r->srv->wait, &r->wait, &r->hold, r->conn, id, (int)timeout, &err);
    if (rc != 0)
        return answer_sub(r, id, NULL); /* stopping: answer at once */
    /* Linked first, then re-read: a result committed in between is not
     * missed, nor a ban or revocation (its wait_kick_user came too early). */
    if ((rc = auth_recheck(r->srv->db, &r->user, &why, &err)) != 0 || why != NULL) {
        wait_remove(r->srv->wait, &r->wait);
        return rc != 0 ? http_internal(r, &err) : api_token_gone(r, why);
    }
    if ((rc = db_sub_get(r->srv->db, id, 0, &s, &err)) != 0 || s.status == DB_DONE) {
        wait_remove(r->srv->wait, &r->wait);
        return rc != 0 && rc != KJ_ENOTFOUND ? http_internal(r, &err) : answer_sub(r, id, NULL);
    }
    MHD_suspend_connection(r->conn);
    r->phase = HTTP_PHASE_WAITING;
    wait_parked(r->srv->wait, &r->wait);
    return MHD_YES;
}

/* A parked ?wait=1 was resumed. Progress events wake it as well as the
 * verdict: answer when the job is done or the time is up, otherwise park
 * again for what is left of the original timeout. A client that has gone
 * is dropped; a token revoked, replaced or banned meanwhile ends it. */
static enum MHD_Result rewait(struct http_req *r, int64_t id)
{
    struct db_sub s;
    struct kj_err err;
    const char *why = NULL;
    if (r->wait.gone)
        return MHD_NO; /* nobody to answer: MHD closes the connection */
    kj_err_clear(&err);
    if (auth_recheck(r->srv->db, &r->user, &why, &err) != 0)
        return http_internal(r, &err);
    if (why != NULL) {
        kj_log(KJ_LOG_INFO, "wait", "ended id=%lld user=%s reason=%s", (long long)id,
               r->user.name, why);
        return api_token_gone(r, why);
    }
    if (r->wait.timed_out || db_sub_get(r->srv->db, id, 0, &s, &err) != 0)
        return answer_sub(r, id, NULL);
    int done = s.status == DB_DONE;
    db_sub_clear(&s);
    int64_t left_ms = r->wait.deadline_ms - wait_now_ms();
    if (done || left_ms <= 0)
        return answer_sub(r, id, NULL);
    return park(r, id, (long)((left_ms + 999) / 1000));
}

enum MHD_Result api_sub_get(struct http_req *r)
{
    int64_t id = http_param_id(r, 0);
    const char *w = http_query(r, "wait");
    long timeout = query_uint(r, "timeout", KJ_WAIT_DEFAULT_S);
    enum MHD_Result res;
    enum api_view view;
    struct db_sub s;
    struct kj_err err;
    char gpu[DB_MAX_NAME], note[API_NOTE_BYTES];
    int rc, done, queued;

    if (id == 0)
        return api_sub_not_found(r);
    if (r->phase == HTTP_PHASE_WAITING)
        return rewait(r, id);
    /* A malformed argument is refused even where it would not be used. */
    if (timeout < 0)
        return http_error(r, MHD_HTTP_BAD_REQUEST, "bad_timeout",
                          "timeout must be whole seconds (at most %d)", KJ_WAIT_MAX_S);
    if (w == NULL || strcmp(w, "0") == 0 || strcmp(w, "false") == 0)
        return answer_sub(r, id, NULL);
    if (strcmp(w, "1") != 0 && strcmp(w, "true") != 0)
        return http_error(r, MHD_HTTP_BAD_REQUEST, "bad_wait", "wait must be 1 or 0");
    if (timeout > KJ_WAIT_MAX_S)
        timeout = KJ_WAIT_MAX_S;
    kj_err_clear(&err);
    rc = api_sub_view(r, id, &s, &view, &err);
    done = rc == 0 && s.status == DB_DONE;
    queued = rc == 0 && s.status == DB_QUEUED;
    snprintf(gpu, sizeof gpu, "%s", rc == 0 ? s.gpu : "");
    db_sub_clear(&s);
    if (rc == KJ_ENOTFOUND || (rc == 0 && view == API_VIEW_NONE))
        return api_sub_not_found(r);
    if (rc != 0)
        return http_internal(r, &err);
    /* Anonymous callers see only finished (ranked) submissions: never parked. */
    if (done || timeout == 0 || !r->authed)
        return answer_sub(r, id, NULL);
    /* Queued for a GPU type that no runner serves: say so now, not after the wait. */
    if (queued && api_gpu_note(r->srv, gpu, note, sizeof note, &err) != 0)
        return http_internal(r, &err);
    if (queued && note[0] != '\0')
        return answer_sub(r, id, note);
    if (api_wait_hold(r, &r->hold, &res))
        return res;
    return park(r, id, timeout);
}

/* Does r ask for an event stream (?stream=1 or Accept: text/event-stream)?
 * 1 yes, 0 no, -1 a malformed stream argument. */
static int wants_stream(struct http_req *r)
{
    const char *q = http_query(r, "stream");
    const char *acc = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Accept");
    if (q != NULL && q[0] != '\0') {
        if (strcmp(q, "1") == 0 || strcmp(q, "true") == 0)
            return 1;
        if (strcmp(q, "0") == 0 || strcmp(q, "false") == 0)
            return 0;
        return -1;
    }
    return acc != NULL && strstr(acc, "text/event-stream") != NULL;
}

/* Check the stream arguments (Last-Event-ID, timeout) into *last and
 * *timeout; answers 400 and returns 1 when one is malformed. */
static int stream_args(struct http_req *r, long *last, long *timeout, enum MHD_Result *res)
{
    const char *h = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Last-Event-ID");
    char *end;
    *timeout = query_uint(r, "timeout", KJ_SSE_DEFAULT_S);
    *last = -1;
    if (h != NULL) { /* present but empty is malformed too */
        *last = h[0] >= '0' && h[0] <= '9' && strlen(h) <= 9 ? strtol(h, &end, 10) : -1;
        if (*last < 0 || *end != '\0') {
            *res = http_error(r, MHD_HTTP_BAD_REQUEST, "bad_last_event_id",
                              "Last-Event-ID must be the id of an event this stream sent");
            return 1;
        }
    }
    if (*timeout < 1) {
        *res = http_error(r, MHD_HTTP_BAD_REQUEST, "bad_timeout",
                          "timeout must be whole seconds, 1 to %d", KJ_WAIT_MAX_S);
        return 1;
    }
    if (*timeout > KJ_WAIT_MAX_S)
        *timeout = KJ_WAIT_MAX_S;
    return 0;
}

enum MHD_Result api_sub_events(struct http_req *r)
{
    int64_t id = http_param_id(r, 0);
    struct db_sub s;
    struct db_event *ev = NULL;
    enum api_view view;
    struct kj_err err;
    enum MHD_Result res;
    long last, timeout;
    int n = 0, rc, stream = wants_stream(r);
    if (stream < 0)
        return http_error(r, MHD_HTTP_BAD_REQUEST, "bad_stream", "stream must be 1 or 0");
    /* Checked even without a stream: a malformed argument is never ignored. */
    if (stream_args(r, &last, &timeout, &res))
        return res;
    kj_err_clear(&err);
    if (id == 0)
        return api_sub_not_found(r);
    /* Events are the owner's (and admins'); to anyone else the submission
     * does not exist. */
    rc = api_sub_view(r, id, &s, &view, &err);
    if (rc == KJ_ENOTFOUND || (rc == 0 && view != API_VIEW_OWNER)) {
        db_sub_clear(&s);
        return api_sub_not_found(r);
    }
    if (rc != 0)
        return http_internal(r, &err);
    if (stream)
        return sse_start(r, id, last, (int)timeout);
    if (db_events_list(r->srv->db, id, &ev, &n, &err) != 0)
        return http_internal(r, &err);
    cJSON *root = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(root, "events");
    cJSON_AddNumberToObject(root, "submission_id", (double)id);
    cJSON_AddStringToObject(root, "status", db_status_name(s.status));
    for (int i = 0; i < n; i++) {
        cJSON *e = cJSON_CreateObject(), *data = ev[i].data ? cJSON_Parse(ev[i].data) : NULL;
        cJSON_AddNumberToObject(e, "seq", (double)ev[i].seq);
        cJSON_AddStringToObject(e, "event", kj_event_name(ev[i].event));
        if (data != NULL)
            api_strip_secrets(data);
        cJSON_AddItemToObject(e, "data", data != NULL ? data : cJSON_CreateNull());
        api_add_time(e, "at", ev[i].at);
        cJSON_AddItemToArray(arr, e);
    }
    db_events_free(ev, n);
    return http_json(r, MHD_HTTP_OK, root);
}

/* ------------------------------------------------------------------ */
/* POST /submissions/{id}/disqualify                                   */
/* ------------------------------------------------------------------ */

enum MHD_Result api_sub_disqualify(struct http_req *r)
{
    int64_t id = http_param_id(r, 0);
    enum MHD_Result res;
    struct kj_err err;
    cJSON *body, *o;
    const cJSON *v;
    char reason[DB_MAX_REASON];
    int rc;
    if (id == 0)
        return http_error(r, MHD_HTTP_NOT_FOUND, "not_found", "no submission '%.32s'", r->params[0]);
    if ((body = http_body_object(r, &res)) == NULL)
        return res;
    v = cJSON_GetObjectItemCaseSensitive(body, "reason");
    if (!cJSON_IsString(v) || v->valuestring[0] == '\0' ||
        strlen(v->valuestring) >= sizeof reason) {
        cJSON_Delete(body);
        return http_error(r, MHD_HTTP_BAD_REQUEST, "bad_reason",
                          "reason must be a string of 1 to %d bytes", DB_MAX_REASON - 1);
    }
    kj_printable(reason, sizeof reason, v->valuestring, sizeof reason - 1);
    cJSON_Delete(body);
    kj_err_clear(&err);
    if ((rc = db_sub_disqualify(r->srv->db, id, reason, &err)) == KJ_ENOTFOUND)
        return http_error(r, MHD_HTTP_NOT_FOUND, "not_found", "no submission %lld", (long long)id);
    if (rc != 0)
        return http_internal(r, &err);
    srv_rank_invalidate(r->srv);
    kj_log(KJ_LOG_INFO, "submit", "disqualified id=%lld by=%s", (long long)id, r->user.name);
    o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "id", (double)id);
    cJSON_AddBoolToObject(o, "disqualified", 1);
    cJSON_AddStringToObject(o, "disqualified_reason", reason);
    return http_json(r, MHD_HTTP_OK, o);
}
