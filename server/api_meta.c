/*
 * api_meta.c - GET /healthz, GET /api/v1/openapi.json and GET /api/v1/me.
 *
 * The OpenAPI document (server/openapi.json, hand-written) is read and
 * checked once at start by api_openapi_load() and served from memory.
 * /healthz answers 200 when the database answers and can be written, 503
 * otherwise: "storage" says why writes fail (a full disk, or a failed
 * write that a probe write still repeats; see db_storage_check).
 */
#include "api.h"
#include "kj_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OPENAPI_MAX_BYTES (512 * 1024)

int api_openapi_load(struct server *srv, struct kj_err *err)
{
    struct kj_err ferr;
    char *buf = NULL;
    size_t n = 0;
    cJSON *j = NULL;
    int rc = kj_read_file(srv->openapi_path, OPENAPI_MAX_BYTES, &buf, &n, &ferr);
    if (rc == KJ_ENOTFOUND)
        return KJ_FAIL(err, KJ_ENOTFOUND, "%s: cannot open the OpenAPI document", srv->openapi_path);
    if (rc == KJ_ENOMEM)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory reading %s", srv->openapi_path);
    if (rc != 0 || (j = cJSON_Parse(buf)) == NULL) {
        free(buf);
        return KJ_FAIL(err, KJ_EINVAL, "%s: not a JSON document of at most %d bytes",
                       srv->openapi_path, OPENAPI_MAX_BYTES);
    }
    cJSON_Delete(j);
    srv->openapi = buf;
    srv->openapi_len = n;
    return srv_etag(buf, n, srv->openapi_etag, sizeof srv->openapi_etag, err);
}

enum MHD_Result api_openapi(struct http_req *r)
{
    return http_static_json(r, MHD_HTTP_OK, r->srv->openapi, r->srv->openapi_len,
                            r->srv->openapi_etag);
}

enum MHD_Result api_healthz(struct http_req *r)
{
    struct kj_err err;
    int64_t queued = 0, running = 0;
    char why[160];
    cJSON *o = cJSON_CreateObject();
    kj_err_clear(&err);
    if (db_ping(r->srv->db, &err) != 0 || db_sub_count(r->srv->db, DB_QUEUED, &queued, &err) != 0 ||
        db_sub_count(r->srv->db, DB_RUNNING, &running, &err) != 0) {
        kj_log(KJ_LOG_ERROR, "health", "database check failed: %s", err.msg);
        cJSON_AddStringToObject(o, "status", "unhealthy");
        cJSON_AddStringToObject(o, "database", "error");
        return http_json(r, MHD_HTTP_SERVICE_UNAVAILABLE, o);
    }
    if (db_storage_check(r->srv->db, why, sizeof why, &err) != 0) {
        kj_log(KJ_LOG_WARN, "health", "storage check failed: %s", err.msg);
        cJSON_AddStringToObject(o, "status", "unhealthy");
        cJSON_AddStringToObject(o, "database", "ok");
        cJSON_AddStringToObject(o, "storage", why);
        return http_json(r, MHD_HTTP_SERVICE_UNAVAILABLE, o);
    }
    cJSON_AddStringToObject(o, "status", "ok");
    cJSON_AddStringToObject(o, "database", "ok");
    cJSON_AddStringToObject(o, "storage", "ok");
    cJSON_AddNumberToObject(o, "leaderboards", r->boards->nspecs);
    cJSON_AddNumberToObject(o, "queued", (double)queued);
    cJSON_AddNumberToObject(o, "running", (double)running);
    return http_json(r, MHD_HTTP_OK, o);
}

enum MHD_Result api_me(struct http_req *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "id", (double)r->user.id);
    cJSON_AddStringToObject(o, "name", r->user.name);
    cJSON_AddStringToObject(o, "role", r->user.role);
    return http_json(r, MHD_HTTP_OK, o);
}
