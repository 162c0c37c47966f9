/*
 * metrics.c - request and job counters, and their Prometheus text (see metrics.h).
 *
 * http_daemon.c calls metrics_request() once per request from its completion
 * callback, on any MHD thread: it finds the route's status slot (claimed
 * with a compare-and-swap the first time a status is seen) and bumps
 * relaxed atomics, so threads never wait on each other. api_runner.c calls
 * metrics_job() once per verdict (a mutex: rare). api_metrics.c calls
 * metrics_render() for each scrape; a scrape may see a request counted in
 * one family and not yet in another, which Prometheus tolerates.
 */
#include "metrics.h"
#include "kj_buf.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Request latency buckets, seconds (upper bounds; +Inf is implied). Long
 * polls and event streams land in the top ones. */
static const double req_le[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                1, 2.5, 5, 10, 30, 60, 300, 600};
#define REQ_NB ((int)(sizeof req_le / sizeof req_le[0]))

/* Job duration buckets, seconds (whole seconds: the database's clock). */
static const double job_le[] = {1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600};
#define JOB_NB ((int)(sizeof job_le / sizeof job_le[0]))

struct route_stats {
    atomic_uint status[METRICS_STATUS_SLOTS];          /* 0 = slot free */
    atomic_uint_fast64_t by_status[METRICS_STATUS_SLOTS];
    atomic_uint_fast64_t other;                        /* statuses beyond the slots */
    atomic_uint_fast64_t bucket[REQ_NB + 1];           /* not cumulative; last = above all */
    atomic_uint_fast64_t sum_us;
    atomic_uint_fast64_t n;
};

struct job_series {
    char gpu[64];
    enum kj_mode mode;
    uint64_t bucket[JOB_NB + 1];
    double sum;
    uint64_t n;
};

struct metrics {
    struct route_stats routes[METRICS_MAX_ROUTES + 1]; /* last: requests that matched no route */
    const char *methods[METRICS_MAX_ROUTES];           /* borrowed static strings: */
    const char *patterns[METRICS_MAX_ROUTES];          /*   the routes' names */
    int nroutes;
    pthread_mutex_t job_mu;                            /* guards jobs and njobs */
    struct job_series jobs[METRICS_MAX_JOB_SERIES];
    int njobs;
};

int metrics_new(const char *const *methods, const char *const *patterns, int nroutes,
                struct metrics **out, struct kj_err *err)
{
    struct metrics *m = calloc(1, sizeof *m);
    *out = NULL;
    if (KJ_NEVER(nroutes < 0 || nroutes > METRICS_MAX_ROUTES)) /* count the first ones */
        nroutes = nroutes < 0 ? 0 : METRICS_MAX_ROUTES;
    if (m == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory for the metrics");
    for (int i = 0; i < nroutes; i++) {
        m->methods[i] = methods[i];
        m->patterns[i] = patterns[i];
    }
    m->nroutes = nroutes;
    pthread_mutex_init(&m->job_mu, NULL);
    *out = m;
    return 0;
}

void metrics_free(struct metrics *m)
{
    if (m == NULL)
        return;
    pthread_mutex_destroy(&m->job_mu);
    free(m);
}

/* The bucket of v among n upper bounds le (n = above them all). */
static int bucket_of(const double *le, int n, double v)
{
    int i = 0;
    while (i < n && v > le[i])
        i++;
    return i;
}

void metrics_request(struct metrics *m, int route, unsigned status, double seconds)
{
    struct route_stats *s;
    int slot;
    if (m == NULL)
        return;
    if (route < 0 || route >= METRICS_MAX_ROUTES)
        route = METRICS_MAX_ROUTES;
    if (seconds < 0)
        seconds = 0;
    s = &m->routes[route];
    for (slot = 0; slot < METRICS_STATUS_SLOTS; slot++) {
        unsigned cur = atomic_load_explicit(&s->status[slot], memory_order_acquire), free_ = 0;
        if (cur == status + 1)
            break;
        if (cur == 0 && atomic_compare_exchange_strong(&s->status[slot], &free_, status + 1))
            break;
        if (atomic_load_explicit(&s->status[slot], memory_order_acquire) == status + 1)
            break; /* another thread claimed it for the same status */
    }
    if (slot < METRICS_STATUS_SLOTS)
        atomic_fetch_add_explicit(&s->by_status[slot], 1, memory_order_relaxed);
    else
        atomic_fetch_add_explicit(&s->other, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->bucket[bucket_of(req_le, REQ_NB, seconds)], 1,
                              memory_order_relaxed);
    atomic_fetch_add_explicit(&s->sum_us, (uint_fast64_t)(seconds * 1e6), memory_order_relaxed);
    atomic_fetch_add_explicit(&s->n, 1, memory_order_relaxed);
}

void metrics_job(struct metrics *m, const char *gpu, enum kj_mode mode, double seconds)
{
    struct job_series *j = NULL;
    if (m == NULL)
        return;
    pthread_mutex_lock(&m->job_mu);
    for (int i = 0; i < m->njobs && j == NULL; i++)
        if (strcmp(m->jobs[i].gpu, gpu) == 0 && m->jobs[i].mode == mode)
            j = &m->jobs[i];
    if (j == NULL && m->njobs < METRICS_MAX_JOB_SERIES) {
        j = &m->jobs[m->njobs++];
        snprintf(j->gpu, sizeof j->gpu, "%s", gpu);
        j->mode = mode;
    }
    if (j != NULL) {
        j->bucket[bucket_of(job_le, JOB_NB, seconds)]++;
        j->sum += seconds;
        j->n++;
    }
    pthread_mutex_unlock(&m->job_mu);
}

/* ------------------------------------------------------------------ */
/* Text                                                                */
/* ------------------------------------------------------------------ */

void metrics_printf(struct kj_buf *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    kj_buf_vprintf(t, fmt, ap);
    va_end(ap);
}

void metrics_label(struct kj_buf *t, const char *v, size_t max)
{
    for (size_t i = 0; v[i] != '\0' && i < max; i++) {
        char c = v[i];
        if (c == '\\' || c == '"')
            kj_buf_putn(t, "\\", 1);
        if (c == '\n')
            kj_buf_putn(t, "\\n", 2);
        else
            kj_buf_putn(t, &c, 1);
    }
}

/* A bucket bound as Prometheus writes it ("0.005", "1", "+Inf"). */
static void bound_text(double le, char *out, size_t outsz)
{
    snprintf(out, outsz, "%g", le);
}

static void render_requests(struct metrics *m, struct kj_buf *t, const char *const *methods,
                            const char *const *patterns, int n)
{
    metrics_printf(t, "# HELP kjudge_http_requests_total HTTP requests answered, by route "
                   "pattern and status code.\n# TYPE kjudge_http_requests_total counter\n");
    for (int r = 0; r <= n; r++) {
        struct route_stats *s = &m->routes[r == n ? METRICS_MAX_ROUTES : r];
        const char *meth = r == n ? "" : methods[r], *pat = r == n ? "unmatched" : patterns[r];
        for (int k = 0; k <= METRICS_STATUS_SLOTS; k++) {
            unsigned st = k < METRICS_STATUS_SLOTS ? atomic_load(&s->status[k]) : 0;
            uint64_t c = k < METRICS_STATUS_SLOTS ? atomic_load(&s->by_status[k])
                                                  : atomic_load(&s->other);
            if (c == 0)
                continue;
            metrics_printf(t, "kjudge_http_requests_total{method=\"%s\",route=\"", meth);
            metrics_label(t, pat, 256);
            if (k < METRICS_STATUS_SLOTS)
                metrics_printf(t, "\",code=\"%u\"} %llu\n", st - 1, (unsigned long long)c);
            else
                metrics_printf(t, "\",code=\"other\"} %llu\n", (unsigned long long)c);
        }
    }
    metrics_printf(t, "# HELP kjudge_http_request_duration_seconds Time from a request's first "
                   "byte to its completion (long polls and streams included), by route.\n"
                   "# TYPE kjudge_http_request_duration_seconds histogram\n");
    for (int r = 0; r <= n; r++) {
        struct route_stats *s = &m->routes[r == n ? METRICS_MAX_ROUTES : r];
        const char *meth = r == n ? "" : methods[r], *pat = r == n ? "unmatched" : patterns[r];
        uint64_t total = atomic_load(&s->n), cum = 0;
        char le[32];
        if (total == 0)
            continue;
        for (int b = 0; b <= REQ_NB; b++) {
            cum += atomic_load(&s->bucket[b]);
            if (b < REQ_NB)
                bound_text(req_le[b], le, sizeof le);
            else
                snprintf(le, sizeof le, "+Inf");
            metrics_printf(t, "kjudge_http_request_duration_seconds_bucket{method=\"%s\",route=\"",
                           meth);
            metrics_label(t, pat, 256);
            metrics_printf(t, "\",le=\"%s\"} %llu\n", le, (unsigned long long)cum);
        }
        metrics_printf(t, "kjudge_http_request_duration_seconds_sum{method=\"%s\",route=\"", meth);
        metrics_label(t, pat, 256);
        metrics_printf(t, "\"} %.6f\n", (double)atomic_load(&s->sum_us) / 1e6);
        metrics_printf(t, "kjudge_http_request_duration_seconds_count{method=\"%s\",route=\"",
                       meth);
        metrics_label(t, pat, 256);
        metrics_printf(t, "\"} %llu\n", (unsigned long long)cum);
    }
}

static void render_jobs(struct metrics *m, struct kj_buf *t)
{
    metrics_printf(t, "# HELP kjudge_job_duration_seconds Time from a job's claim by a runner to "
                   "its verdict (whole seconds), by GPU type and mode, since the server "
                   "started.\n# TYPE kjudge_job_duration_seconds histogram\n");
    pthread_mutex_lock(&m->job_mu);
    for (int i = 0; i < m->njobs; i++) {
        struct job_series *j = &m->jobs[i];
        uint64_t cum = 0;
        char le[32];
        for (int b = 0; b <= JOB_NB; b++) {
            cum += j->bucket[b];
            if (b < JOB_NB)
                bound_text(job_le[b], le, sizeof le);
            else
                snprintf(le, sizeof le, "+Inf");
            metrics_printf(t, "kjudge_job_duration_seconds_bucket{gpu=\"");
            metrics_label(t, j->gpu, sizeof j->gpu);
            metrics_printf(t, "\",mode=\"%s\",le=\"%s\"} %llu\n", kj_mode_name(j->mode), le,
                           (unsigned long long)cum);
        }
        metrics_printf(t, "kjudge_job_duration_seconds_sum{gpu=\"");
        metrics_label(t, j->gpu, sizeof j->gpu);
        metrics_printf(t, "\",mode=\"%s\"} %.0f\n", kj_mode_name(j->mode), j->sum);
        metrics_printf(t, "kjudge_job_duration_seconds_count{gpu=\"");
        metrics_label(t, j->gpu, sizeof j->gpu);
        metrics_printf(t, "\",mode=\"%s\"} %llu\n", kj_mode_name(j->mode),
                       (unsigned long long)j->n);
    }
    pthread_mutex_unlock(&m->job_mu);
}

void metrics_render(struct metrics *m, struct kj_buf *t)
{
    render_requests(m, t, m->methods, m->patterns, m->nroutes);
    render_jobs(m, t);
}
