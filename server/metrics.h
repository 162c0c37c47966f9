/*
 * metrics.h - counters for GET /metrics (Prometheus text format 0.0.4).
 *
 * http_daemon.c counts every finished request (metrics_request: route, status,
 * latency) from its completion callback; api_runner.c reports every
 * finished job (metrics_job). Request counters are relaxed atomics in
 * fixed arrays (one slot per route of http_route.c's table), so counting takes
 * no lock; job histograms, updated once per verdict, sit behind a mutex.
 * api_metrics.c renders them with what it reads from the database, the
 * runner reports (hello.h) and the queue, into a kj_buf.
 */
#ifndef KJ_METRICS_H
#define KJ_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include "kj_err.h"
#include "protocol.h"

#define METRICS_MAX_ROUTES 64     /* entries of http_route.c's route table */
#define METRICS_STATUS_SLOTS 16   /* distinct statuses counted per route; more go to code="other" */
#define METRICS_MAX_JOB_SERIES 64 /* (GPU type, mode) pairs with a job histogram */

struct kj_buf;
struct metrics;

/* New counters, all zero (*out; caller frees with metrics_free()), for the
 * nroutes (<= METRICS_MAX_ROUTES) routes named methods[i] and patterns[i]
 * (static strings, as http_route_names gives them; the arrays are copied). */
int metrics_new(const char *const *methods, const char *const *patterns, int nroutes,
                struct metrics **out, struct kj_err *err);
void metrics_free(struct metrics *m);

/* One request answered: route is its index in the route table (-1 when it
 * matched none), status the HTTP status sent (0 when none was). */
void metrics_request(struct metrics *m, int route, unsigned status, double seconds);
/* One job done after seconds on a runner (claim to verdict). */
void metrics_job(struct metrics *m, const char *gpu, enum kj_mode mode, double seconds);

/* Append printf-style text to t (a kj_buf: a failed append is sticky,
 * checked once with kj_buf_status). */
void metrics_printf(struct kj_buf *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append v as a label value: '\\', '"' and newlines escaped, at most max bytes. */
void metrics_label(struct kj_buf *t, const char *v, size_t max);
/* Append the request and job families. */
void metrics_render(struct metrics *m, struct kj_buf *t);

#endif
