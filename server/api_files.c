/*
 * api_files.c - GET /api/v1/leaderboards/{name}/files/{file}: a board's
 * public files, for `kjudge template` and anyone starting on a problem.
 *
 * template.cu and description.md are public, and template.py (the Python
 * starter) on a board that takes Python (a "python" block). reference.cu is shown to
 * anyone when the board's leaderboard.json says "public_reference": true,
 * to every signed-in user (not a runner) once the admin published the
 * board's sources (api_admin.c, after the deadline), and to admins always;
 * otherwise 403. Files are read from the board's folder when asked for
 * (at most KJ_MAX_SOURCE_BYTES) and sent with their Content-Type, a
 * Content-Disposition naming the file, and an ETag.
 */
#include "api.h"
#include "kj_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The files a board serves. */
enum board_file { FILE_TEMPLATE, FILE_DESCRIPTION, FILE_REFERENCE, FILE_TEMPLATE_PY,
                  FILE_TEMPLATE_PTX, FILE_NONE };

static const char *const file_names[] = {"template.cu", "description.md", "reference.cu",
                                         "template.py", "template.ptx"};

static enum board_file file_kind(const char *name)
{
    if (strcmp(name, "template.cu") == 0)
        return FILE_TEMPLATE;
    if (strcmp(name, "description.md") == 0)
        return FILE_DESCRIPTION;
    if (strcmp(name, "reference.cu") == 0)
        return FILE_REFERENCE;
    if (strcmp(name, "template.py") == 0)
        return FILE_TEMPLATE_PY;
    if (strcmp(name, "template.ptx") == 0) /* optional: a PTX starter (docs/languages-cuda.md) */
        return FILE_TEMPLATE_PTX;
    return FILE_NONE;
}

/* May r's caller read b's reference? Returns 1 when it answered (refused or failed). */
static int reference_refused(struct http_req *r, const struct board *b, enum MHD_Result *res)
{
    struct kj_err err;
    int64_t at = 0;
    if (b->spec->public_reference || (r->authed && strcmp(r->user.role, "admin") == 0))
        return 0;
    kj_err_clear(&err);
    if (db_published(r->srv->db, b->spec->name, &at, &err) != 0) {
        *res = http_internal(r, &err);
        return 1;
    }
    if (at != 0 && r->authed && strcmp(r->user.role, "runner") != 0)
        return 0;
    if (at != 0)
        *res = http_error(r, MHD_HTTP_UNAUTHORIZED, "missing_token",
                          "the reference of %s is shown to signed-in users: send "
                          "\"Authorization: Bearer TOKEN\"", b->spec->name);
    else
        *res = http_error(r, MHD_HTTP_FORBIDDEN, "not_published",
                          "the reference of %s is not public; it is shown once the admin "
                          "publishes the board's sources after its deadline", b->spec->name);
    return 1;
}

/* Answer with the bytes of body (ownership passes here). */
static enum MHD_Result send_file(struct http_req *r, enum board_file kind, char *body, size_t len)
{
    const char *inm = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "If-None-Match");
    const char *type = kind == FILE_DESCRIPTION ? "text/markdown; charset=utf-8"
                                                : "text/plain; charset=utf-8";
    struct MHD_Response *resp;
    struct kj_err err;
    char etag[24], disp[96];
    kj_err_clear(&err);
    if (srv_etag(body, len, etag, sizeof etag, &err) != 0) {
        free(body);
        return http_internal(r, &err);
    }
    if (inm != NULL && strcmp(inm, etag) == 0) {
        free(body);
        resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
        if (resp != NULL)
            MHD_add_response_header(resp, "ETag", etag);
        return http_queue(r, MHD_HTTP_NOT_MODIFIED, resp);
    }
    if ((resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE)) == NULL) {
        free(body);
        return http_queue(r, MHD_HTTP_OK, NULL);
    }
    snprintf(disp, sizeof disp, "attachment; filename=\"%s\"", file_names[kind]);
    MHD_add_response_header(resp, "Content-Type", type);
    MHD_add_response_header(resp, "Content-Disposition", disp);
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    MHD_add_response_header(resp, "ETag", etag);
    return http_queue(r, MHD_HTTP_OK, resp);
}

enum MHD_Result api_board_file(struct http_req *r)
{
    const struct board *b = boards_find(r->boards, r->params[0]);
    enum board_file kind = file_kind(r->params[1]);
    char path[SPEC_MAX_PATH + SPEC_MAX_NAME + 2], *body = NULL;
    enum MHD_Result res;
    struct kj_err err;
    size_t len = 0;
    int rc;

    if (b == NULL)
        return http_error(r, MHD_HTTP_NOT_FOUND, "unknown_leaderboard",
                          "no leaderboard named '%.64s'", r->params[0]);
    if (kind == FILE_NONE)
        return http_error(r, MHD_HTTP_NOT_FOUND, "unknown_file",
                          "a leaderboard's files are template.cu, template.py, template.ptx, "
                          "description.md and reference.cu");
    if (kind == FILE_REFERENCE && reference_refused(r, b, &res))
        return res;
    if (kind == FILE_TEMPLATE_PY && !b->spec->python.present)
        return http_error(r, MHD_HTTP_NOT_FOUND, "no_file", "leaderboard %s has no template.py: "
                          "it takes CUDA C++ only", b->spec->name);
    snprintf(path, sizeof path, "%s/%s", b->spec->dir,
             kind == FILE_DESCRIPTION ? b->spec->description_file : file_names[kind]);
    kj_err_clear(&err);
    /* Missing is 404; present but unreadable is our fault (500). */
    if ((rc = kj_read_file(path, KJ_MAX_SOURCE_BYTES, &body, &len, &err)) == KJ_ENOTFOUND &&
        access(path, F_OK) != 0)
        return http_error(r, MHD_HTTP_NOT_FOUND, "no_file", "leaderboard %s has no %s",
                          b->spec->name, file_names[kind]);
    if (rc != 0)
        return http_internal(r, &err);
    return send_file(r, kind, body, len);
}
