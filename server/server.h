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
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include "config.h"
#include "kj_err.h"
#include "netacl.h"
#include "queue.h"
#include "spec.h"
#include "tls.h"

#define KJ_MAX_SOURCE_BYTES (1024 * 1024)          /* a submitted file */
#define KJ_MAX_MULTIPART_BYTES (KJ_MAX_SOURCE_BYTES + 64 * 1024) /* whole POST /submissions body */
#define KJ_MAX_DRAIN_BYTES (16 * 1024 * 1024)      /* an oversized body is read and dropped up to this past its route's limit, then the connection is cut */
#define KJ_MAX_CLAIM_BYTES (4 * 1024)              /* POST /runner/claim body */
#define KJ_MAX_EVENT_BYTES (256 * 1024)            /* POST /runner/jobs/{id}/events body */
#define KJ_MAX_RESULT_BYTES (4 * 1024 * 1024)      /* POST /runner/jobs/{id}/result body */
#define KJ_MAX_HEARTBEAT_BYTES 1024                /* POST /runner/jobs/{id}/heartbeat body */
#define KJ_LEASE_DEFAULT_S 120                     /* serve --lease-seconds */
#define KJ_LEASE_MAX_S 86400
#define KJ_SSE_DEFAULT_S 600                       /* an event stream ends after this */
#define KJ_SSE_PING_S 15                           /* a comment line this often keeps proxies open */
#define KJ_MAX_WAITERS 512                         /* ?wait=1 requests and event streams at once (serve --max-waiters) */
#define KJ_MAX_WAITERS_PER_USER 8                  /*   of them per user, admins exempt (serve --max-waiters-per-user) */
#define KJ_WAITERS_RETRY_S 5                       /*   Retry-After of the 429 past the per-user cap */
#define KJ_MAX_CLAIM_WAITERS 256                   /* runners' parked claims at once, apart from the waiters (serve --max-claim-waiters) */
#define KJ_MAX_CLAIMS_PER_RUNNER 16                /*   of them per runner token (serve --max-claims-per-runner) */
#define KJ_RUNNER_NAMES 8                          /* runner names a token may report besides its own (serve --runner-names) */
#define KJ_RUNNER_NAMES_MAX 1024                   /*   the most --runner-names takes */
#define KJ_WAIT_DEFAULT_S 300
#define KJ_WAIT_MAX_S 600
#define KJ_CLAIM_WAIT_MAX_S 30  /* POST /runner/claim?wait=S waits at most this long */
#define KJ_LIST_DEFAULT 50                         /* GET /submissions page size */
#define KJ_LIST_MAX 500
#define KJ_MAX_ADMIN_BYTES (4 * 1024)              /* bodies of the user, invite, ban, disqualify routes */
#define KJ_RATE_WINDOW_S 60                        /* rate limits count submissions in this window */
#define KJ_RATE_DEFAULT_TEST 30                    /* per user per minute; 0 = no limit */
#define KJ_RATE_DEFAULT_BENCHMARK 10
#define KJ_RATE_DEFAULT_LEADERBOARD 5
#define KJ_RATE_DEFAULT_PROFILE 2                  /* Nsight Compute holds a GPU for long */
#define KJ_RATE_DEFAULT_SANITIZE 2
#define KJ_INVITE_DEFAULT_DAYS 7
#define KJ_INVITE_MAX_DAYS 365
#define KJ_NAME_MAX 32                             /* user names: [a-z0-9][a-z0-9_.-]{0,31} */
#define KJ_STORAGE_RETRY_S 30                      /* Retry-After of a 503 when the disk is full */
#define KJ_HTTP_CONN_LIMIT 4096                     /* connections at once (fewer when RLIMIT_NOFILE is lower); main.c usage says 4096 */
#define KJ_HTTP_CONN_TIMEOUT_S 60                  /* MHD's idle timeout */
#define KJ_HTTP_PER_IP_DEFAULT 256                 /* serve --max-conns-per-ip; 0 = no limit */
#define KJ_HTTP_HEADER_TIMEOUT_S 20                /* serve --header-timeout: a request's head must arrive within this */
#define KJ_HTTP_CONN_MEMORY (128 * 1024)           /* MHD's memory per connection: heads up to about this reach http_daemon.c */
#define KJ_HTTP_MAX_HEAD_BYTES (16 * 1024)         /* request line and headers; more is 431 */
#define KJ_HTTP_MAX_URI_BYTES 4096                 /* the request target with its query; more is 414 */
#define KJ_HTTP_THREADS 8                          /* MHD worker threads; several let submissions share a group commit (db_sub.c) */
#define KJ_MAX_RELOAD_BYTES 1024                   /* POST /admin/reload body */
#define KJ_MAX_HELLO_BYTES (4 * 1024)              /* POST /runner/hello body */
#define KJ_DIFF_MAX_LINES 20000                    /* submission detail: diffs of longer files are not shown */
#define KJ_DIFF_MAX_EDITS 1000                     /*   nor diffs changing more lines than this */
#define KJ_DIFF_MAX_BYTES (512 * 1024)             /*   nor diffs longer than this */
#define KJ_DRAIN_S 10                              /* on SIGTERM, requests in flight get this long to finish */

struct board_set;
struct db;
struct guard;
struct wait_list;
struct lease_sweeper;
struct MHD_Daemon;
struct metrics;
struct hello_list;

struct server {
    /* command line */
    int port;
    char bind[64];
    char db_path[PATH_MAX];
    char boards_dir[PATH_MAX];
    char web_dir[PATH_MAX];
    char vendor_dir[PATH_MAX]; /* --vendor: JavaScript libraries (web.c); "" = none */
    char config_path[PATH_MAX];
    char openapi_path[PATH_MAX];
    int lease_s;             /* job lease length, seconds */
    enum queue_rule queue_rule; /* --queue-rule: how claims pick (queue.h) */
    int max_conns_per_ip;    /* connections from one address at once, 0 = no limit */
    int header_timeout_s;    /* a request's head must arrive within this, 0 = no deadline */
    int rate_limits[KJ_MODE_COUNT]; /* submissions per user per minute by mode, 0 = none */
    int max_waiters;         /* slots for ?wait=1 and event streams (wait.h) */
    int max_waiters_user;    /*   per user */
    int max_claims;          /* slots for runners' parked claims (wait.h) */
    int max_claims_runner;   /*   per runner token */
    int runner_names;        /* runner names a token may adopt besides its own (db_runner_adopt) */
    char tls_cert[PATH_MAX]; /* --tls-cert or tls_cert; "" = plain HTTP */
    char tls_key[PATH_MAX];  /* --tls-key or tls_key */
    struct netacl trusted_proxies; /* config trusted_proxies: peers whose X-Forwarded-For counts */
    struct netacl metrics_allow;   /* config metrics_allow: may read /metrics without a token */

    pthread_mutex_t boards_mu; /* guards the pointer boards (not what it points to) */
    struct board_set *boards;  /* one reference owned; replaced by boards_swap (boards.h) */
    pthread_mutex_t reload_mu; /* one reload at a time */
    atomic_uint_fast64_t rank_gen; /* bumped after every change that can move a ranking */
    char *openapi;           /* owned: GET /api/v1/openapi.json body */
    size_t openapi_len;
    char openapi_etag[24];
    char web_real[PATH_MAX]; /* realpath of web_dir, "" when it does not exist */

    struct db *db;           /* owned */
    struct wait_list *wait;  /* owned */
    struct lease_sweeper *lease; /* owned */
    struct MHD_Daemon *daemon; /* owned */
    struct guard *guard;     /* owned: deadlines of slow connections (guard.h) */
    unsigned conn_limit;     /* connections at once, KJ_HTTP_CONN_LIMIT or less (main.c) */
    struct tls_pem tls;      /* owned: the PEM text served while the daemon runs (tls_free) */
    struct metrics *metrics; /* owned */
    struct hello_list *hellos; /* owned: runners' start-up reports */
    int db_lock_fd;          /* the serve lock of db_path (db_lock), -1 when not held */
    atomic_int inflight;     /* requests between their first callback and their completion */
    atomic_int draining;     /* 1 once the server stops: answers close their connection */
};

/* 1 when name is a valid new user name: [a-z0-9][a-z0-9_.-]{0,KJ_NAME_MAX-1}.
 * Rows made before the first character was restricted keep their names. */
int srv_valid_name(const char *name);

/* Rankings may have moved (a verdict, a disqualification): cached bodies
 * read before now are stale. */
void srv_rank_invalidate(struct server *srv);

/* Unix seconds as "2026-11-30T12:00:00Z" into buf (>= 21 bytes). */
void srv_iso_time(int64_t t, char *buf, size_t bufsz);

/* A quoted ETag ("\"" + 16 hex digits of SHA-256 + "\"") for body. */
int srv_etag(const char *body, size_t len, char *out, size_t outsz, struct kj_err *err);

#endif
