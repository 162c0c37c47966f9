/*
 * test_metrics.c - unit tests for server/metrics.c and server/hello.c.
 *
 * Counting from several threads at once loses nothing (the atomics and the
 * compare-and-swap that claims a status slot); statuses beyond the slots
 * are counted as code="other"; latencies land in the right cumulative
 * buckets, with +Inf equal to _count; label values are escaped; job
 * histograms per GPU type and mode; the runner report list replaces a
 * runner's previous report and, when full, the oldest one.
 */
#define KT_MAIN
#include "kt.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "hello.h"
#include "kj_buf.h"
#include "metrics.h"

#define THREADS 8
#define PER_THREAD 20000

static const char *const methods[] = {"GET", "POST"};
static const char *const patterns[] = {"/healthz", "/api/v1/submissions"};

static void *hammer(void *arg)
{
    struct metrics *m = arg;
    for (int i = 0; i < PER_THREAD; i++)
        metrics_request(m, i % 2, i % 3 == 0 ? 404 : 200, 0.003);
    return NULL;
}

/* The value of the sample line that starts with prefix (exactly), or -1. */
static double sample(const char *text, const char *prefix)
{
    const char *p = text;
    size_t n = strlen(prefix);
    while ((p = strstr(p, prefix)) != NULL) {
        if ((p == text || p[-1] == '\n') && p[n] == ' ')
            return atof(p + n + 1);
        p += n;
    }
    return -1;
}

static void test_concurrent(void)
{
    struct metrics *m = NULL;
    struct kj_buf t;
    kj_buf_init(&t, 0);
    struct kj_err err;
    pthread_t th[THREADS];
    KT_CHECK(metrics_new(methods, patterns, 2, &m, &err) == 0, "metrics_new");
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, hammer, m);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    metrics_render(m, &t);
    KT_CHECK(t.p != NULL && kj_buf_status(&t) == 0, "rendered");
    /* i in [0, PER_THREAD): route 0 gets even i, 404 when i % 3 == 0. */
    long even = PER_THREAD / 2, even404 = 0;
    for (int i = 0; i < PER_THREAD; i += 2)
        even404 += i % 3 == 0;
    double got200 = sample(t.p, "kjudge_http_requests_total{method=\"GET\",route=\"/healthz\",code=\"200\"}");
    double got404 = sample(t.p, "kjudge_http_requests_total{method=\"GET\",route=\"/healthz\",code=\"404\"}");
    KT_CHECK(got200 == (double)(THREADS * (even - even404)), "200s: %g", got200);
    KT_CHECK(got404 == (double)(THREADS * even404), "404s: %g", got404);
    double inf = sample(t.p, "kjudge_http_request_duration_seconds_bucket{method=\"GET\",route=\"/healthz\",le=\"+Inf\"}");
    double le2 = sample(t.p, "kjudge_http_request_duration_seconds_bucket{method=\"GET\",route=\"/healthz\",le=\"0.0025\"}");
    double le5 = sample(t.p, "kjudge_http_request_duration_seconds_bucket{method=\"GET\",route=\"/healthz\",le=\"0.005\"}");
    double cnt = sample(t.p, "kjudge_http_request_duration_seconds_count{method=\"GET\",route=\"/healthz\"}");
    KT_CHECK(inf == (double)(THREADS * even) && cnt == inf, "+Inf %g = count %g", inf, cnt);
    KT_CHECK(le2 == 0 && le5 == inf, "3 ms falls in le=0.005, not le=0.0025: %g %g", le2, le5);
    kj_buf_free(&t);
    metrics_free(m);
}

static void test_slots_and_labels(void)
{
    struct metrics *m = NULL;
    struct kj_buf t;
    kj_buf_init(&t, 0);
    struct kj_err err;
    KT_CHECK(metrics_new(methods, patterns, 2, &m, &err) == 0, "metrics_new");
    for (unsigned s = 0; s < METRICS_STATUS_SLOTS + 3; s++)
        metrics_request(m, 1, 400 + s, 0.1);
    metrics_request(m, -1, 404, 0.1);
    metrics_request(m, 99, 404, 0.1);
    metrics_job(m, "H200", KJ_MODE_TEST, 3);
    metrics_job(m, "H200", KJ_MODE_TEST, 700);
    metrics_job(m, "B\"2\\00", KJ_MODE_LEADERBOARD, 1);
    metrics_render(m, &t);
    KT_CHECK(sample(t.p, "kjudge_http_requests_total{method=\"POST\",route=\"/api/v1/submissions\",code=\"other\"}") == 3,
             "statuses past the slots count as other");
    KT_CHECK(sample(t.p, "kjudge_http_requests_total{method=\"\",route=\"unmatched\",code=\"404\"}") == 2,
             "no route and an out-of-range route count as unmatched");
    KT_CHECK(sample(t.p, "kjudge_job_duration_seconds_bucket{gpu=\"H200\",mode=\"test\",le=\"5\"}") == 1 &&
             sample(t.p, "kjudge_job_duration_seconds_bucket{gpu=\"H200\",mode=\"test\",le=\"600\"}") == 1 &&
             sample(t.p, "kjudge_job_duration_seconds_bucket{gpu=\"H200\",mode=\"test\",le=\"1200\"}") == 2 &&
             sample(t.p, "kjudge_job_duration_seconds_sum{gpu=\"H200\",mode=\"test\"}") == 703,
             "job buckets are cumulative and the sum is kept");
    KT_CHECK(strstr(t.p, "gpu=\"B\\\"2\\\\00\",mode=\"leaderboard\"") != NULL, "label values are escaped");
    struct kj_buf l;
    kj_buf_init(&l, 0);
    metrics_label(&l, "a\nb\"c\\d", 100);
    KT_CHECK(l.p != NULL && strcmp(l.p, "a\\nb\\\"c\\\\d") == 0, "metrics_label: %s", l.p ? l.p : "");
    kj_buf_free(&l);
    kj_buf_free(&t);
    metrics_free(m);
    metrics_free(NULL);
}

static void test_hello(void)
{
    struct hello_list *h = NULL;
    struct hello_entry e, *all = NULL;
    struct kj_err err;
    int n = 0;
    KT_CHECK(hello_new(&h, &err) == 0, "hello_new");
    for (int i = 0; i < HELLO_MAX; i++) {
        memset(&e, 0, sizeof e);
        snprintf(e.runner, sizeof e.runner, "r%04d", i);
        e.at = 1000 + i;
        e.state = HELLO_READY;
        hello_put(h, &e);
    }
    memset(&e, 0, sizeof e);
    snprintf(e.runner, sizeof e.runner, "r0005");
    e.state = HELLO_REFUSED;
    snprintf(e.reason, sizeof e.reason, "no usable GPU");
    e.at = 5000;
    hello_put(h, &e); /* replaces its own entry */
    snprintf(e.runner, sizeof e.runner, "zz-new");
    e.at = 5001;
    hello_put(h, &e); /* full: replaces the oldest, r0000 */
    KT_CHECK(hello_list_all(h, &all, &n, &err) == 0 && n == HELLO_MAX, "still %d entries: %d", HELLO_MAX, n);
    int has0 = 0, has_new = 0, refused5 = 0;
    for (int i = 0; i < n; i++) {
        has0 |= strcmp(all[i].runner, "r0000") == 0;
        has_new |= strcmp(all[i].runner, "zz-new") == 0;
        refused5 |= strcmp(all[i].runner, "r0005") == 0 && all[i].state == HELLO_REFUSED;
    }
    KT_CHECK(!has0 && has_new && refused5, "oldest replaced, own entry updated (%d %d %d)", has0, has_new, refused5);
    KT_CHECK(n > 1 && strcmp(all[0].runner, all[1].runner) < 0, "sorted by name");
    KT_CHECK(strcmp(hello_state_name(HELLO_REFUSED), "refused") == 0, "state names");
    free(all);
    hello_free(h);
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    KT_RUN(test_concurrent());
    KT_RUN(test_slots_and_labels());
    KT_RUN(test_hello());
    return kt_done("test_metrics");
}
