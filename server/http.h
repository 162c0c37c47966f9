/*
 * http.h - a request's state and the calls a handler answers with.
 *
 * http_daemon.c owns the MHD daemon: it creates one struct http_req per
 * request on the first callback, routes it (http_route.c), authenticates
 * it, collects its body (capped per route), calls the route's handler once
 * the body is complete, and frees the request in the completion callback,
 * where it also logs one line per request. Handlers (api_*.c, web.c)
 * answer with exactly one http_* response call (http.c), or park the
 * connection with wait.h.
 */
#ifndef KJ_HTTP_H
#define KJ_HTTP_H

#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include "db.h"
#include "kj_buf.h"
#include "guard.h"
#include "server.h"
#include "upload.h"
#include "wait.h"

#define HTTP_MAX_PATH 512
#define HTTP_MAX_PARAM 128
#define HTTP_MAX_QUERY_ARGS 16 /* more query arguments than this are refused (400) */

/* Who may call a route. */
enum http_auth {
    HTTP_AUTH_NONE = 0,  /* public; a token, if sent, is only checked for a ban */
    HTTP_AUTH_OPTIONAL,  /* public, but a valid token is looked up (owner views) */
    HTTP_AUTH_USER,      /* role user or admin */
    HTTP_AUTH_RUNNER,    /* role runner */
    HTTP_AUTH_ANY,       /* any valid token */
    HTTP_AUTH_ADMIN,     /* role admin */
    HTTP_AUTH_CLI_ID     /* role user or admin, the token sent as "X-Popcorn-Cli-Id: TOKEN"
                            instead of Authorization (api_popcorn.c's routes) */
};

/* The prefix of the routes that answer popcorn-cli (api_popcorn.c): their
 * error bodies also carry the message as "detail", which that client prints. */
#define HTTP_POPCORN_PREFIX "/popcorn/"

/* What the route's body is. */
enum http_body { HTTP_BODY_NONE = 0, HTTP_BODY_JSON, HTTP_BODY_MULTIPART,
                 HTTP_BODY_OCTETS /* application/octet-stream, kept whole in r->body */ };

struct http_req;
typedef enum MHD_Result (*http_handler)(struct http_req *r);

struct http_route {
    const char *method;       /* "GET", "POST" or "DELETE" (HEAD is served by GET routes) */
    const char *pattern;      /* "/api/v1/submissions/{id}"; a trailing "*" matches any rest */
    http_handler handler;
    enum http_auth auth;
    enum http_body body;
    size_t max_body;          /* bytes; 0 for HTTP_BODY_NONE */
};

enum http_phase {
    HTTP_PHASE_NEW = 0,       /* created (URI log callback); first callback not finished */
    HTTP_PHASE_RECEIVING,     /* waiting for the rest of the request (body, if any) */
    HTTP_PHASE_WAITING,       /* parked by wait.h; the handler runs again when resumed */
    HTTP_PHASE_ANSWERED       /* a response is queued */
};

struct http_req {
    struct server *srv;              /* borrowed for the request's life */
    struct board_set *boards;       /* one reference, taken at the first callback and
                                        dropped in the completion callback (server.h) */
    struct MHD_Connection *conn;     /* borrowed from MHD */
    struct guard_conn *gc;           /* borrowed: the connection's guard entry (may be NULL) */
    const struct http_route *route;  /* static table entry */
    enum http_phase phase;
    int started;                     /* the first callback ran (req_begin); counted in srv->inflight */
    int path_too_long;               /* the decoded path has HTTP_MAX_PATH bytes or more */
    uintptr_t raw_uri;               /* address of the raw URI in MHD's buffer (only compared) */
    size_t raw_uri_len;              /* its length up to the first NUL */
    int uri_pct00;                   /* the raw URI holds "%00" */
    int close_conn;                  /* the answer closes the connection (bad framing) */
    char method[8];
    char path[HTTP_MAX_PATH];        /* printable copy of the URL path (no query) */
    int nparams;
#define HTTP_MAX_PARAMS 3
    char params[HTTP_MAX_PARAMS][HTTP_MAX_PARAM]; /* the {id}/{name} segments, in order */
    char allow[64];                  /* methods of the path, for a 405's Allow header */
    struct timespec start;           /* CLOCK_MONOTONIC at the first callback */
    char client[NETACL_ADDR_MAX];    /* the client's address: the peer's, or the one a
                                        trusted proxy forwarded (netacl_client) */
    int forwarded;                   /* 1 when client came from X-Forwarded-For */
    unsigned status;                 /* status queued, 0 = none (for the log line) */

    int authed;                      /* 1 when user holds a valid token's owner */
    struct db_user user;

    struct kj_buf body;              /* owned; JSON routes: the raw body (body.p, body.len),
                                        NUL-terminated, "" when none was sent */
    size_t received;                 /* body bytes seen, kept or not */
    int too_large;                   /* body passed route->max_body: answer 413 */
    unsigned deferred_status;        /* an error chosen before the body arrived, sent once */
    char deferred_code[40];          /*   the body is drained (see req_reject in http_daemon.c) */
    char deferred_msg[256];
    int retry_after;                 /* > 0: a 429 or 503 answer carries "Retry-After: N" */
    struct upload *upload;           /* owned (upload_free); multipart routes */

    struct wait_entry wait;          /* linkage in srv->wait while parked */
    struct wait_hold hold;           /* the ?wait=1's slot, from its first park to the end */
    int wait_count;                  /* times the handler ran after a resume */
};

/* Responses. Each queues exactly one response and returns MHD's result. */
/* body is borrowed and must outlive the response (persistent buffers only). */
enum MHD_Result http_static_json(struct http_req *r, unsigned status, const char *body,
                                 size_t len, const char *etag);
/* body is shared: free_cb(cls) is called once MHD no longer needs it
 * (at once for a 304 or on failure). An If-None-Match equal to etag gets 304. */
enum MHD_Result http_shared_json(struct http_req *r, unsigned status, const char *body,
                                 size_t len, const char *etag, void (*free_cb)(void *),
                                 void *cls);
/* Takes ownership of json (deleted here). */
enum MHD_Result http_json(struct http_req *r, unsigned status, cJSON *json);
/* {"error": {"code": code, "message": ...}} */
enum MHD_Result http_error(struct http_req *r, unsigned status, const char *code,
                           const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* 500 for our own fault: logs err in full, tells the client only a reference.
 * KJ_ESTORAGE (disk full or failing) is 503 storage_unavailable with
 * Retry-After instead: the same request may work later. */
enum MHD_Result http_internal(struct http_req *r, const struct kj_err *err);
/* 204 No Content. */
enum MHD_Result http_no_content(struct http_req *r);
/* Queue a response object created by the caller (ownership passes here). */
enum MHD_Result http_queue(struct http_req *r, unsigned status, struct MHD_Response *resp);

/* A query argument, or NULL. */
const char *http_query(struct http_req *r, const char *key);
/* Parse path parameter i as a positive id; 0 when it is not one. */
int64_t http_param_id(const struct http_req *r, int i);
/* Parse r->body as a JSON object ("" counts as {}); answers 400 and returns
 * NULL otherwise: not one object, text after it, a NUL byte or a \u0000
 * escape. The caller deletes the object (cJSON_Delete). */
cJSON *http_body_object(struct http_req *r, enum MHD_Result *res);

#endif
