/*
 * server.h - the one struct that holds kjudge-server's process state.
 *
 * main.c fills it from the command line and starts the pieces in order
 * (database, leaderboards, admin token, waiters, lease sweeper, HTTP); every handler gets
 * it through its request (struct http_req.srv). Nothing else is global.
 * Limits on untrusted input live here as named constants.
 */
#ifndef KJ_SERVER_H
#define KJ_SERVER_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include "config.h"
#include "kj_err.h"
#include "spec.h"

#define KJ_MAX_SOURCE_BYTES (1024 * 1024)          /* a submitted file */
#define KJ_MAX_MULTIPART_BYTES (KJ_MAX_SOURCE_BYTES + 64 * 1024) /* whole POST /submissions body */
#define KJ_MAX_DRAIN_BYTES (16 * 1024 * 1024)      /* an oversized body is read and dropped up to this, then the connection is cut */
#define KJ_MAX_CLAIM_BYTES (4 * 1024)              /* POST /runner/claim body */
#define KJ_MAX_EVENT_BYTES (256 * 1024)            /* POST /runner/jobs/{id}/events body */
#define KJ_MAX_RESULT_BYTES (4 * 1024 * 1024)      /* POST /runner/jobs/{id}/result body */
#define KJ_MAX_HEARTBEAT_BYTES 1024                /* POST /runner/jobs/{id}/heartbeat body */
#define KJ_LEASE_DEFAULT_S 120                     /* serve --lease-seconds */
#define KJ_LEASE_MAX_S 86400
#define KJ_SSE_DEFAULT_S 600                       /* an event stream ends after this */
#define KJ_SSE_PING_S 15                           /* a comment line this often keeps proxies open */
#define KJ_MAX_WAITERS 512                         /* connections parked in ?wait=1 at once */
#define KJ_WAIT_DEFAULT_S 300
#define KJ_WAIT_MAX_S 600
#define KJ_LIST_DEFAULT 50                         /* GET /submissions page size */
#define KJ_LIST_MAX 500
#define KJ_MAX_ADMIN_BYTES (4 * 1024)              /* bodies of the user, invite, ban, disqualify routes */
#define KJ_RATE_WINDOW_S 60                        /* rate limits count submissions in this window */
#define KJ_RATE_DEFAULT_TEST 30                    /* per user per minute; 0 = no limit */
#define KJ_RATE_DEFAULT_BENCHMARK 10
#define KJ_RATE_DEFAULT_LEADERBOARD 5
#define KJ_INVITE_DEFAULT_DAYS 7
#define KJ_INVITE_MAX_DAYS 365
#define KJ_NAME_MAX 32                             /* user names: [a-z0-9_.-]{1,32} */
#define KJ_HTTP_CONN_LIMIT 1024
#define KJ_HTTP_CONN_TIMEOUT_S 60
#define KJ_HTTP_THREADS 2

struct db;
struct wait_list;
struct lease_sweeper;
struct MHD_Daemon;

/* One leaderboard as served: its spec and the prebuilt public JSON. */
struct srv_board {
    const struct spec *spec; /* borrowed from server.specs, lives as long as the server */
    char *detail;            /* owned: GET /leaderboards/{name} body */
    size_t detail_len;
    char etag[24];           /* quoted prefix of the body's SHA-256 */
};

struct server {
    /* command line */
    int port;
    char bind[64];
    char db_path[PATH_MAX];
    char boards_dir[PATH_MAX];
    char web_dir[PATH_MAX];
    char config_path[PATH_MAX];
    char openapi_path[PATH_MAX];
    int lease_s;             /* job lease length, seconds */
    int rate_limits[CONFIG_NMODES]; /* submissions per user per minute by mode, 0 = none */

    struct spec **specs;     /* owned (spec_free_all), sorted by name */
    int nspecs;
    struct srv_board *boards;/* owned, nspecs entries, same order as specs */
    char *boards_list;       /* owned: GET /leaderboards body */
    size_t boards_list_len;
    char boards_list_etag[24];
    char *openapi;           /* owned: GET /api/v1/openapi.json body */
    size_t openapi_len;
    char openapi_etag[24];
    char web_real[PATH_MAX]; /* realpath of web_dir, "" when it does not exist */

    struct db *db;           /* owned */
    struct wait_list *wait;  /* owned */
    struct lease_sweeper *lease; /* owned */
    struct MHD_Daemon *daemon; /* owned */
};

/* 1 when name is a valid user name: [a-z0-9_.-]{1,KJ_NAME_MAX}. */
int srv_valid_name(const char *name);

/* The board named name, or NULL. */
const struct srv_board *srv_board(const struct server *srv, const char *name);

/* Unix seconds as "2026-11-30T12:00:00Z" into buf (>= 21 bytes). */
void srv_iso_time(int64_t t, char *buf, size_t bufsz);

/* A quoted ETag ("\"" + 16 hex digits of SHA-256 + "\"") for body. */
int srv_etag(const char *body, size_t len, char *out, size_t outsz, struct kj_err *err);

/* Free what srv owns besides db, wait and daemon: specs, boards, the
 * prebuilt bodies. Safe on a partly built server. */
void srv_free_boards(struct server *srv);

#endif
