/*
 * service.h - bring up and tear down what `kjudge-server serve` runs.
 *
 * main.c (the serve command) and the in-process server of
 * tests/fuzz/fuzz_upload.c call these in order: service_init, set the
 * struct's paths and limits, service_open, whatever needs the open
 * database (main.c: the admin token, the configuration file), then
 * service_listen; service_stop at the end, also after a failed start.
 */
#ifndef KJ_SERVICE_H
#define KJ_SERVICE_H

#include "kj_err.h"

struct server;

/* A zeroed srv's locks and "not held" values; paths and limits are the
 * caller's to set. */
void service_init(struct server *srv);

/* What serve keeps open, in order: the metrics (named after the routes),
 * the runners' reports, the database under its serve lock (every running
 * job gets a fresh lease of srv->lease_s), the leaderboards under
 * srv->boards_dir with their secret seeds. */
int service_open(struct server *srv, struct kj_err *err);

/* The threads and the daemon, in order: the wait notifier, the lease
 * sweeper, the connection guard, the HTTP daemon on srv->bind:srv->port. */
int service_listen(struct server *srv, struct kj_err *err);

/* Stop and free everything above (and the TLS text and OpenAPI body srv
 * owns) in reverse order; safe on a server that started partly or not at all. */
void service_stop(struct server *srv);

#endif
