/*
 * http.c - what a handler answers with: the response calls (JSON bodies,
 * shared and static bodies with ETags, errors, our own faults), the
 * request's query and path parameters, and its JSON body as one object.
 *
 * Every handler (api_*.c, web.c, sse.c) answers through exactly one of
 * these; http_daemon.c, which runs the requests, answers its own refusals
 * through http_error too. Error bodies are {"error": {"code", "message"}};
 * a 401 says how to authenticate, a 405 what is allowed, a 429 or 503 when
 * to come back (Retry-After). Every answer over HTTPS carries
 * Strict-Transport-Security (tls.h).
 */
#include "http.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Responses                                                           */
/* ------------------------------------------------------------------ */

enum MHD_Result http_queue(struct http_req *r, unsigned status, struct MHD_Response *resp)
{
    enum MHD_Result ok;
    if (KJ_NEVER(r->phase == HTTP_PHASE_ANSWERED)) { /* a second answer: keep the first */
        if (resp != NULL)
            MHD_destroy_response(resp);
        return MHD_NO;
    }
    if (resp == NULL) {
        kj_log(KJ_LOG_ERROR, "http", "cannot create a response path=%s", r->path);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    if (MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_GNUTLS_SESSION) != NULL) /* HTTPS */
        MHD_add_response_header(resp, MHD_HTTP_HEADER_STRICT_TRANSPORT_SECURITY, TLS_HSTS);
    if (atomic_load(&r->srv->draining))
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    guard_busy(r->srv->guard, r->gc);
    ok = MHD_queue_response(r->conn, status, resp);
    MHD_destroy_response(resp);
    r->status = status;
    r->phase = HTTP_PHASE_ANSWERED;
    return ok;
}

enum MHD_Result http_static_json(struct http_req *r, unsigned status, const char *body,
                                 size_t len, const char *etag)
{
    const char *inm = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "If-None-Match");
    struct MHD_Response *resp;
    if (etag != NULL && inm != NULL && strcmp(inm, etag) == 0) {
        resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
        if (resp != NULL)
            MHD_add_response_header(resp, "ETag", etag);
        return http_queue(r, MHD_HTTP_NOT_MODIFIED, resp);
    }
    resp = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_PERSISTENT);
    if (resp != NULL) {
        MHD_add_response_header(resp, "Content-Type", "application/json");
        MHD_add_response_header(resp, "Cache-Control", "no-cache");
        if (etag != NULL)
            MHD_add_response_header(resp, "ETag", etag);
    }
    return http_queue(r, status, resp);
}

enum MHD_Result http_shared_json(struct http_req *r, unsigned status, const char *body,
                                 size_t len, const char *etag, void (*free_cb)(void *),
                                 void *cls)
{
    const char *inm = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "If-None-Match");
    struct MHD_Response *resp;
    if (etag != NULL && inm != NULL && strcmp(inm, etag) == 0) {
        free_cb(cls);
        return http_static_json(r, status, NULL, 0, etag);
    }
    resp = MHD_create_response_from_buffer_with_free_callback_cls(len, (void *)body, free_cb, cls);
    if (resp == NULL) {
        free_cb(cls);
        return http_queue(r, status, NULL);
    }
    MHD_add_response_header(resp, "Content-Type", "application/json");
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    if (etag != NULL)
        MHD_add_response_header(resp, "ETag", etag);
    return http_queue(r, status, resp);
}

enum MHD_Result http_json(struct http_req *r, unsigned status, cJSON *json)
{
    char *text = json != NULL ? cJSON_PrintUnformatted(json) : NULL;
    struct MHD_Response *resp;
    cJSON_Delete(json);
    if (text == NULL) {
        static const char oom[] =
            "{\"error\":{\"code\":\"internal_error\",\"message\":\"out of memory\"}}";
        kj_log(KJ_LOG_ERROR, "http", "cannot serialize a response path=%s", r->path);
        status = MHD_HTTP_INTERNAL_SERVER_ERROR;
        resp = MHD_create_response_from_buffer(sizeof oom - 1, (void *)oom, MHD_RESPMEM_PERSISTENT);
    } else {
        resp = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
        if (resp == NULL)
            free(text);
    }
    if (resp != NULL) {
        MHD_add_response_header(resp, "Content-Type", "application/json");
        MHD_add_response_header(resp, "Cache-Control", "no-store");
    }
    return http_queue(r, status, resp);
}

static enum MHD_Result error_response(struct http_req *r, unsigned status, const char *code,
                                      const char *msg)
{
    cJSON *root = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(root, "error");
    struct MHD_Response *resp = NULL;
    char *text;
    if (e != NULL) {
        cJSON_AddStringToObject(e, "code", code);
        cJSON_AddStringToObject(e, "message", msg);
    }
    if (strncmp(r->path, HTTP_POPCORN_PREFIX, strlen(HTTP_POPCORN_PREFIX)) == 0)
        cJSON_AddStringToObject(root, "detail", msg);
    text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (text == NULL)
        return http_json(r, status, NULL); /* answers the out-of-memory error */
    if ((resp = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE)) == NULL) {
        free(text);
        return http_queue(r, status, NULL);
    }
    MHD_add_response_header(resp, "Content-Type", "application/json");
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    if (r->close_conn)
        MHD_add_response_header(resp, "Connection", "close");
    if (status == MHD_HTTP_UNAUTHORIZED)
        MHD_add_response_header(resp, "WWW-Authenticate", "Bearer");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED && r->allow[0] != '\0')
        MHD_add_response_header(resp, "Allow", r->allow);
    if ((status == MHD_HTTP_TOO_MANY_REQUESTS || status == MHD_HTTP_SERVICE_UNAVAILABLE) &&
        r->retry_after > 0) {
        char secs[16];
        snprintf(secs, sizeof secs, "%d", r->retry_after);
        MHD_add_response_header(resp, "Retry-After", secs);
    }
    return http_queue(r, status, resp);
}

enum MHD_Result http_error(struct http_req *r, unsigned status, const char *code,
                           const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return error_response(r, status, code, msg);
}

enum MHD_Result http_internal(struct http_req *r, const struct kj_err *err)
{
    if (err->code == KJ_ESTORAGE) {
        const char *why = db_storage_reason(r->srv->db);
        kj_log(KJ_LOG_ERROR, "http", "storage error: %s at=%s:%d path=%s", err->msg,
               err->file != NULL ? err->file : "?", err->src_line, r->path);
        r->retry_after = KJ_STORAGE_RETRY_S;
        return http_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, "storage_unavailable",
                          "the server cannot write to its database: %s; try again later", why);
    }
    kj_log(KJ_LOG_ERROR, "http", "internal error: %s code=%s at=%s:%d path=%s", err->msg,
           kj_code_name(err->code), err->file != NULL ? err->file : "?", err->src_line, r->path);
    return error_response(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal_error",
                          "internal error; the server log has the details");
}

enum MHD_Result http_no_content(struct http_req *r)
{
    return http_queue(r, MHD_HTTP_NO_CONTENT,
                      MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT));
}

/* ------------------------------------------------------------------ */
/* The request                                                         */
/* ------------------------------------------------------------------ */

const char *http_query(struct http_req *r, const char *key)
{
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}

int64_t http_param_id(const struct http_req *r, int i)
{
    const char *p = r->params[i];
    int64_t v = 0;
    if (i >= r->nparams || p[0] == '\0' || p[0] == '0' || strlen(p) > 15)
        return 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9')
            return 0;
        v = v * 10 + (*p - '0');
    }
    return v;
}

/* 1 when the JSON text t holds a \u0000 escape. t has parsed, so every
 * backslash in it stands inside a string (or key) and starts an escape. */
static int has_nul_escape(const char *t)
{
    for (; *t != '\0'; t++) {
        if (*t != '\\')
            continue;
        if (strncmp(t + 1, "u0000", 5) == 0)
            return 1;
        if (t[1] != '\0')
            t++; /* skip the escaped character: an escaped backslash starts nothing */
    }
    return 0;
}

/* Strict: one JSON object and nothing after it but white space, no NUL
 * byte and no \u0000 escape (C strings would end there: "a\u0000b" would
 * be read as "a"). */
cJSON *http_body_object(struct http_req *r, enum MHD_Result *res)
{
    cJSON *j;
    if (r->body.p == NULL || r->body.len == 0)
        return cJSON_CreateObject();
    if (strlen(r->body.p) != r->body.len) {
        *res = http_error(r, MHD_HTTP_BAD_REQUEST, "bad_json", "the body contains a NUL byte");
        return NULL;
    }
    if ((j = cJSON_ParseWithOpts(r->body.p, NULL, 1)) == NULL || !cJSON_IsObject(j)) {
        cJSON_Delete(j);
        *res = http_error(r, MHD_HTTP_BAD_REQUEST, "bad_json",
                          "the body must be one JSON object (and nothing after it)");
        return NULL;
    }
    if (has_nul_escape(r->body.p)) {
        cJSON_Delete(j);
        *res = http_error(r, MHD_HTTP_BAD_REQUEST, "bad_json",
                          "the body contains \\u0000 (a NUL character) in a string");
        return NULL;
    }
    return j;
}
