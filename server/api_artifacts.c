/*
 * api_artifacts.c - the files a job leaves besides its result (profile
 * mode's Nsight Compute report, docs/profile.md):
 *   POST /api/v1/runner/jobs/{id}/artifacts/{name}?attempt=N  the runner
 *        holding the job uploads one (application/octet-stream) before its
 *        result;
 *   GET  /api/v1/submissions/{id}/artifacts/{name}  its download, for those
 *        who may read the submission's source (the owner, admins, and
 *        signed-in users once the board's sources are published); anyone
 *        else gets the 404 of a submission that does not exist.
 * Stored by db_artifact.c; the names are a fixed list.
 */
#include "api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The artifacts a job may have, and the mode that makes each. */
static const struct { const char *name; enum kj_mode mode; } artifact_names[] = {
    {"profile.ncu-rep", KJ_MODE_PROFILE},
};

static int artifact_known(const char *name, enum kj_mode mode)
{
    for (size_t i = 0; i < sizeof artifact_names / sizeof artifact_names[0]; i++)
        if (strcmp(name, artifact_names[i].name) == 0 && artifact_names[i].mode == mode)
            return 1;
    return 0;
}

enum MHD_Result api_runner_artifact(struct http_req *r)
{
    struct db_job_ref ref;
    struct db_sub s;
    struct kj_err err;
    const char *a = http_query(r, "attempt");
    char safe[48];
    kj_err_clear(&err);
    ref.id = http_param_id(r, 0);
    ref.runner_id = r->user.id;
    ref.attempt = a != NULL && a[0] >= '1' && a[0] <= '0' + DB_MAX_ATTEMPTS && a[1] == '\0' ?
                  a[0] - '0' : 0;
    kj_printable(safe, sizeof safe, r->params[1], 40);
    if (ref.id == 0)
        return http_error(r, MHD_HTTP_NOT_FOUND, "not_found", "no job '%.32s'", r->params[0]);
    if (ref.attempt == 0)
        return http_error(r, MHD_HTTP_BAD_REQUEST, "bad_attempt",
                          "send ?attempt=N, the job's attempt number from the claim");
    /* Held by the caller under a live lease (else 409 not_held), as for events. */
    int rc = db_job_heartbeat(r->srv->db, &ref, 0, &err);
    if (rc == 0)
        rc = db_sub_get(r->srv->db, ref.id, 0, &s, &err);
    if (rc == KJ_ENOTFOUND)
        return http_error(r, MHD_HTTP_NOT_FOUND, "not_found", "no job %s", r->params[0]);
    if (rc == KJ_ECONFLICT)
        return http_error(r, MHD_HTTP_CONFLICT, "not_held", "%s", err.msg);
    if (rc != 0)
        return http_internal(r, &err);
    if (!artifact_known(r->params[1], s.mode))
        return http_error(r, MHD_HTTP_NOT_FOUND, "unknown_artifact",
                          "a %s job has no artifact '%s'", kj_mode_name(s.mode), safe);
    if (r->body.len == 0)
        return http_error(r, MHD_HTTP_BAD_REQUEST, "empty_artifact", "the body is empty");
    rc = db_artifact_put(r->srv->db, ref.id, r->params[1], r->body.p, r->body.len, &err);
    if (rc == KJ_ELIMIT)
        return http_error(r, MHD_HTTP_CONTENT_TOO_LARGE, "too_large", "%s", err.msg);
    if (rc != 0)
        return http_internal(r, &err);
    kj_log(KJ_LOG_INFO, "queue", "artifact id=%lld name=%s bytes=%zu", (long long)ref.id,
           r->params[1], r->body.len);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "ok", 1);
    cJSON_AddNumberToObject(o, "bytes", (double)r->body.len);
    return http_json(r, MHD_HTTP_OK, o);
}

enum MHD_Result api_sub_artifact(struct http_req *r)
{
    struct db_sub s;
    struct kj_err err;
    enum api_view view;
    char *data = NULL, disp[200];
    size_t len = 0;
    int64_t id = http_param_id(r, 0);
    kj_err_clear(&err);
    int rc = id > 0 ? api_sub_view(r, id, &s, &view, &err) : KJ_ENOTFOUND;
    if (rc == KJ_ENOTFOUND || (rc == 0 && view != API_VIEW_OWNER && view != API_VIEW_PUBLISHED))
        return api_sub_not_found(r);
    if (rc != 0)
        return http_internal(r, &err);
    if (!artifact_known(r->params[1], s.mode) ||
        (rc = db_artifact_get(r->srv->db, id, r->params[1], &data, &len, &err)) == KJ_ENOTFOUND) {
        char safe[48];
        kj_printable(safe, sizeof safe, r->params[1], 40);
        return http_error(r, MHD_HTTP_NOT_FOUND, "no_artifact", "submission %lld has no "
                          "artifact '%s'", (long long)id, safe);
    }
    if (rc != 0)
        return http_internal(r, &err);
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
    if (resp == NULL) {
        free(data);
        KJ_FAIL(&err, KJ_ENOMEM, "no memory for a response of %zu bytes", len);
        return http_internal(r, &err);
    }
    snprintf(disp, sizeof disp, "attachment; filename=\"submission-%lld-%s\"", (long long)id,
             r->params[1]);
    MHD_add_response_header(resp, "Content-Type", "application/octet-stream");
    MHD_add_response_header(resp, "Content-Disposition", disp);
    MHD_add_response_header(resp, "Cache-Control", "private, no-store");
    return http_queue(r, MHD_HTTP_OK, resp);
}
