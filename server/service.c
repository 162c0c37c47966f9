/*
 * service.c - the serve set-up (see service.h): the order in which the
 * server's pieces start and stop.
 *
 * Storage first (the serve lock, then the database, then the leases it
 * holds), then what reads it (the leaderboards and their secret seeds);
 * the threads that act on it (the wait notifier, the lease sweeper, the
 * connection guard) before the daemon that feeds them requests. Stopping
 * runs backwards: the daemon first, so no request sees a freed piece.
 */
#include "service.h"
#include "boards.h"
#include "db.h"
#include "guard.h"
#include "hello.h"
#include "http_daemon.h"
#include "http_route.h"
#include "lease.h"
#include "metrics.h"
#include "server.h"
#include "wait.h"

#include <stdlib.h>

void service_init(struct server *srv)
{
    pthread_mutex_init(&srv->boards_mu, NULL);
    pthread_mutex_init(&srv->reload_mu, NULL);
    atomic_init(&srv->rank_gen, 1);
    srv->db_lock_fd = -1;
}

/* The metrics, whose request counters are named after the routes. */
static int open_metrics(struct server *srv, struct kj_err *err)
{
    const char *methods[METRICS_MAX_ROUTES], *patterns[METRICS_MAX_ROUTES];
    int n = http_route_names(methods, patterns, METRICS_MAX_ROUTES);
    return metrics_new(methods, patterns, n, &srv->metrics, err);
}

int service_open(struct server *srv, struct kj_err *err)
{
    int64_t renewed = 0;
    int rc;
    if ((rc = open_metrics(srv, err)) != 0 || (rc = hello_new(&srv->hellos, err)) != 0 ||
        (rc = db_lock(srv->db_path, &srv->db_lock_fd, err)) != 0 ||
        (rc = db_open(srv->db_path, &srv->db, err)) != 0)
        return rc;
    db_job_set_lease(srv->db, (int64_t)srv->lease_s * 1000);
    db_queue_set_rule(srv->db, srv->queue_rule);
    if ((rc = db_job_grace(srv->db, &renewed, err)) != 0 ||
        (rc = boards_load(srv->boards_dir, &srv->boards, err)) != 0 ||
        (rc = boards_ensure_secrets(srv->db, srv->boards, err)) != 0)
        return rc;
    if (renewed > 0)
        kj_log(KJ_LOG_INFO, "lease", "renewed the lease of %lld running jobs for %d s",
               (long long)renewed, srv->lease_s);
    return 0;
}

int service_listen(struct server *srv, struct kj_err *err)
{
    int rc;
    const struct wait_limits lim = {srv->max_waiters, srv->max_waiters_user, srv->max_claims,
                                    srv->max_claims_runner};
    if ((rc = wait_start(&srv->wait, &lim, err)) != 0 ||
        (rc = lease_start(srv->db, srv->wait, &srv->lease, err)) != 0 ||
        (rc = guard_start(&srv->guard, srv->header_timeout_s, err)) != 0 ||
        (rc = http_start(srv, err)) != 0)
        return rc;
    return 0;
}

void service_stop(struct server *srv)
{
    http_stop(srv);
    guard_free(srv->guard);
    srv->guard = NULL;
    lease_free(srv->lease);
    srv->lease = NULL;
    wait_free(srv->wait);
    srv->wait = NULL;
    boards_swap(srv, NULL);
    free(srv->openapi);
    srv->openapi = NULL;
    db_close(srv->db);
    srv->db = NULL;
    db_unlock(srv->db_lock_fd);
    srv->db_lock_fd = -1;
    tls_free(&srv->tls);
    metrics_free(srv->metrics);
    srv->metrics = NULL;
    hello_free(srv->hellos);
    srv->hellos = NULL;
}
