/*
 * guard.h - deadlines for slow clients: every open connection, what it is
 * waiting for, and a thread that cuts the ones that take too long.
 *
 * http_daemon.c registers each connection (MHD's connection notifications) and
 * tells the guard where its request stands; the guard's thread closes
 * (shutdown) a connection that has not sent a complete request head
 * within the header timeout, or whose body arrives slower than
 * GUARD_BODY_MIN_BPS after that grace. Parked ?wait=1 requests, event
 * streams and answers being sent are never cut here (they are "busy").
 * The per-address connection limit is MHD's (MHD_OPTION_PER_IP_CONNECTION_LIMIT).
 * The guard also limits how fast MHD's own messages reach the log.
 *
 * Connection states, each change under the guard's mutex:
 *
 *   guard_opened --> HEAD --guard_head_done--> BODY --guard_busy--> BUSY
 *                     ^                          |                   |
 *                     |                          +---guard_busy------+
 *                     +--------------- guard_request_done -----------+
 *
 *   HEAD: waiting for a request line and headers (a new connection, or a
 *         kept-alive one between requests); deadline since + header timeout.
 *   BODY: the head arrived, a body is being read; deadline since + header
 *         timeout + bytes read / GUARD_BODY_MIN_BPS.
 *   BUSY: the request is complete (handler, park, stream, answer): no deadline.
 *   CUT:  shut down by the guard; MHD closes it (guard_closed frees it).
 */
#ifndef KJ_GUARD_H
#define KJ_GUARD_H

#include <stddef.h>
#include <stdint.h>
#include "kj_err.h"

#define GUARD_TICK_MS 250         /* how often the thread looks at the deadlines */
#define GUARD_BODY_MIN_BPS 1024   /* a body must arrive at least this fast after the grace */
#define GUARD_LOG_PER_S 20        /* MHD's own log messages per second, the rest dropped */

struct guard;
struct guard_conn;

/* Start the guard (its thread only when header_timeout_s > 0; 0 = no
 * deadlines). The caller frees it with guard_free() after the daemon stopped. */
int guard_start(struct guard **out, int header_timeout_s, struct kj_err *err);
/* Stop the thread and free every entry. NULL is fine. */
void guard_free(struct guard *g);

/* Connection fd (MHD's socket; -1 if unknown: never cut) was accepted: a
 * new entry in state HEAD, stored in *socket_context (MHD's per-connection
 * pointer) and owned by the guard until guard_closed(). Nothing is stored
 * when memory runs out. */
void guard_opened(struct guard *g, int fd, void **socket_context);
/* The connection is about to be closed by MHD: forget and free its entry. */
void guard_closed(struct guard *g, void **socket_context);

/* Where the request of connection c stands (c from *socket_context; a NULL
 * g or c is ignored, as in every function here but guard_counts). has_body: the head announced a body (Content-Length > 0 or
 * Transfer-Encoding). */
void guard_head_done(struct guard *g, struct guard_conn *c, int has_body);
void guard_body(struct guard *g, struct guard_conn *c, size_t n);
void guard_busy(struct guard *g, struct guard_conn *c);
void guard_request_done(struct guard *g, struct guard_conn *c);

/* May one more of MHD's log messages be written now? At most
 * GUARD_LOG_PER_S a second (a connection flood makes MHD log each refused
 * connection); *dropped gets the number dropped since the last one let
 * through. */
int guard_log_ok(struct guard *g, uint64_t *dropped);

/* Connections the guard has cut so far: slow heads, slow bodies, and
 * answered connections left idle past the deadline (keep-alives; no warning). */
void guard_counts(struct guard *g, uint64_t *heads, uint64_t *bodies, uint64_t *idle);

#endif
