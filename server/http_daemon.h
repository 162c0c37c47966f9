/*
 * http_daemon.h - the libmicrohttpd daemon that runs every request
 * (http_daemon.c): started and stopped by the serve set-up.
 */
#ifndef KJ_HTTP_DAEMON_H
#define KJ_HTTP_DAEMON_H

#include "kj_err.h"

struct server;

/* Start the daemon on srv->bind:srv->port (HTTPS when srv->tls holds a
 * certificate), with srv's limits. */
int http_start(struct server *srv, struct kj_err *err);
/* Stop accepting, release parked waiters, stop the daemon. */
void http_stop(struct server *srv);

#endif
