/*
 * metrics.h - counters for GET /metrics (Prometheus text format 0.0.4).
 *
 * http.c counts every finished request (metrics_request: route, status,
 * latency) from its completion callback; api_runner.c reports every
 * finished job (metrics_job). Request counters are relaxed atomics in
 * fixed arrays (one slot per route of http.c's table), so counting takes
 * no lock; job histograms, updated once per verdict, sit behind a mutex.
 * api_metrics.c renders them with what it reads from the database, the
 * runner reports (hello.h) and the queue, into a struct metrics_text.
 */
#ifndef KJ_METRICS_H
#define KJ_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include "kj_err.h"
#include "protocol.h"

#define METRICS_MAX_ROUTES 64     /* entries of http.c's route table */
#define METRICS_STATUS_SLOTS 16   /* distinct statuses counted per route; more go to code="other" */
#define METRICS_MAX_JOB_SERIES 64 /* (GPU type, mode) pairs with a job histogram */

struct metrics;

/* A growing text buffer; oom is set (and text kept as it was) when an append fails. */
struct metrics_text {
    char *p;      /* owned; NUL-terminated */
    size_t len, cap;
    int oom;
};

/* New counters, all zero (*out; caller frees with metrics_free()). */
int metrics_new(struct metrics **out, struct kj_err *err);
void metrics_free(struct metrics *m);

/* One request answered: route is its index in the route table (-1 when it
 * matched none), status the HTTP status sent (0 when none was). */
void metrics_request(struct metrics *m, int route, unsigned status, double seconds);
/* One job done after seconds on a runner (claim to verdict). */
void metrics_job(struct metrics *m, const char *gpu, enum kj_mode mode, double seconds);

/* Append printf-style text to t. */
void metrics_printf(struct metrics_text *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Append v as a label value: '\\', '"' and newlines escaped, at most max bytes. */
void metrics_label(struct metrics_text *t, const char *v, size_t max);
/* Append the request and job families; methods[i] and patterns[i] name
 * route i of the n routes. */
void metrics_render(struct metrics *m, struct metrics_text *t, const char *const *methods,
                    const char *const *patterns, int n);

#endif
