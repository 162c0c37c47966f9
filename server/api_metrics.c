/*
 * api_metrics.c - GET /metrics: the server's state in Prometheus text
 * format (version 0.0.4).
 *
 * Only for an admin token, or for a client address in the config's
 * metrics_allow (the address a trusted proxy forwarded, netacl.h). The
 * answer holds the request and job counters (metrics.c), then what is read
 * now: submissions by leaderboard, GPU type, mode and verdict, queue
 * depth, running jobs and the oldest queued job's age per GPU type (the
 * GPU types of the loaded leaderboards), each runner seen with its state
 * and last contact (as GET /api/v1/gpus shows them), and what each runner
 * reported at start (hello.h). Family names and labels are listed in
 * docs/protocol.md.
 */
#include "api.h"
#include "kj_buf.h"
#include "hello.h"
#include "metrics.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Is r allowed to read the metrics? Answers 401/403 and returns 0 when not. */
static int metrics_allowed(struct http_req *r, enum MHD_Result *res)
{
    if (r->authed && strcmp(r->user.role, "admin") == 0)
        return 1;
    if (netacl_match_text(&r->srv->metrics_allow, r->client))
        return 1;
    if (r->authed)
        *res = http_error(r, MHD_HTTP_FORBIDDEN, "forbidden", "only an admin may read /metrics");
    else
        *res = http_error(r, MHD_HTTP_UNAUTHORIZED, "missing_token",
                          "/metrics needs an admin token, or a client address listed in "
                          "metrics_allow in the config file");
    return 0;
}

static void render_counts(struct http_req *r, struct kj_buf *t, struct kj_err *err,
                          int *rc)
{
    struct db_count *rows = NULL;
    int n = 0;
    if ((*rc = db_metrics_counts(r->srv->db, &rows, &n, err)) != 0)
        return;
    metrics_printf(t, "# HELP kjudge_submissions Submissions stored, by leaderboard, GPU type, "
                   "mode and verdict (verdict=\"none\" while queued or running).\n"
                   "# TYPE kjudge_submissions gauge\n");
    for (int i = 0; i < n; i++) {
        metrics_printf(t, "kjudge_submissions{leaderboard=\"");
        metrics_label(t, rows[i].leaderboard, sizeof rows[i].leaderboard);
        metrics_printf(t, "\",gpu=\"");
        metrics_label(t, rows[i].gpu, sizeof rows[i].gpu);
        metrics_printf(t, "\",mode=\"%s\",verdict=\"%s\"} %lld\n", kj_mode_name(rows[i].mode),
                       rows[i].has_verdict ? kj_verdict_name(rows[i].verdict) : "none",
                       (long long)rows[i].n);
    }
    free(rows);
}

/* Is gpu named by a board before board upto, or earlier in board upto? */
static int gpu_listed(const struct board_set *bs, int upto, int gi, const char *gpu)
{
    for (int b = 0; b <= upto; b++) {
        int n = b < upto ? bs->specs[b]->ngpus : gi;
        for (int g = 0; g < n; g++)
            if (strcmp(bs->specs[b]->gpus[g], gpu) == 0)
                return 1;
    }
    return 0;
}

/* What one GPU type shows: its queue and the runners seen for it. */
struct gpu_view {
    const char *gpu;               /* borrowed from the request's boards */
    int64_t queued, running, oldest;
    struct db_runner *runners;     /* owned (free) */
    int nrunners;
};

/* Every GPU type of the loaded boards, once each, read from the database
 * into a new array *out of *n (caller frees it and each runners). */
static int read_gpus(struct http_req *r, struct gpu_view **out, int *n, struct kj_err *err)
{
    const struct board_set *bs = r->boards;
    struct gpu_view *v = NULL;
    int count = 0, cap = 0, rc = 0;
    for (int b = 0; rc == 0 && b < bs->nspecs; b++)
        for (int g = 0; rc == 0 && g < bs->specs[b]->ngpus; g++) {
            const char *gpu = bs->specs[b]->gpus[g];
            if (gpu_listed(bs, b, g, gpu))
                continue;
            if (count == cap) {
                int ncap = cap ? cap * 2 : 8;
                struct gpu_view *grown = realloc(v, sizeof *v * (size_t)ncap);
                if (grown == NULL) {
                    rc = KJ_FAIL(err, KJ_ENOMEM, "out of memory reading GPU types");
                    break;
                }
                v = grown;
                cap = ncap;
            }
            struct gpu_view *x = &v[count++];
            memset(x, 0, sizeof *x);
            x->gpu = gpu;
            if ((rc = db_gpu_runners(r->srv->db, gpu, &x->runners, &x->nrunners, &x->queued,
                                     &x->running, err)) == 0)
                rc = db_metrics_oldest(r->srv->db, gpu, &x->oldest, err);
        }
    *out = v;
    *n = count;
    return rc;
}

/* The runner families: one block per family, as the format requires. */
static void render_runners(struct kj_buf *t, const struct gpu_view *v, int n, int64_t now,
                           int lease_s)
{
    static const char *const states[] = {"active", "idle", "silent"};
    metrics_printf(t, "# HELP kjudge_runner_state Each runner that asked for work: active (holds "
                   "a job), idle (asked within the lease length) or silent.\n"
                   "# TYPE kjudge_runner_state gauge\n");
    for (int i = 0; i < n; i++)
        for (int k = 0; k < v[i].nrunners; k++) {
            const char *state = api_runner_state(&v[i].runners[k], now, lease_s);
            for (int s = 0; s < 3; s++) {
                metrics_printf(t, "kjudge_runner_state{runner=\"");
                metrics_label(t, v[i].runners[k].name, sizeof v[i].runners[k].name);
                metrics_printf(t, "\",gpu=\"");
                metrics_label(t, v[i].gpu, DB_MAX_NAME);
                metrics_printf(t, "\",state=\"%s\"} %d\n", states[s], strcmp(state, states[s]) == 0);
            }
        }
    metrics_printf(t, "# HELP kjudge_runner_last_seen_seconds When the runner last asked for work "
                   "(unix time).\n# TYPE kjudge_runner_last_seen_seconds gauge\n");
    for (int i = 0; i < n; i++)
        for (int k = 0; k < v[i].nrunners; k++) {
            metrics_printf(t, "kjudge_runner_last_seen_seconds{runner=\"");
            metrics_label(t, v[i].runners[k].name, sizeof v[i].runners[k].name);
            metrics_printf(t, "\",gpu=\"");
            metrics_label(t, v[i].gpu, DB_MAX_NAME);
            metrics_printf(t, "\"} %lld\n", (long long)v[i].runners[k].last_seen);
        }
}

/* One gauge family with one sample per GPU type; which picks the value. */
static void render_gpu_family(struct kj_buf *t, const char *name, const char *help,
                              const struct gpu_view *v, int n, int which, int64_t now)
{
    metrics_printf(t, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
    for (int i = 0; i < n; i++) {
        int64_t x = which == 0 ? v[i].queued : which == 1 ? v[i].running
                    : v[i].oldest > 0 && now > v[i].oldest ? now - v[i].oldest : 0;
        metrics_printf(t, "%s{gpu=\"", name);
        metrics_label(t, v[i].gpu, DB_MAX_NAME);
        metrics_printf(t, "\"} %lld\n", (long long)x);
    }
}

static void render_queues(struct http_req *r, struct kj_buf *t, struct kj_err *err,
                          int *rc)
{
    struct gpu_view *v = NULL;
    int n = 0;
    int64_t now = (int64_t)time(NULL);
    if ((*rc = read_gpus(r, &v, &n, err)) == 0) {
        render_gpu_family(t, "kjudge_queue_depth", "Queued jobs per GPU type.", v, n, 0, now);
        render_gpu_family(t, "kjudge_jobs_running", "Jobs held by a runner, per GPU type.", v, n,
                          1, now);
        render_gpu_family(t, "kjudge_queue_oldest_age_seconds", "Age of the oldest queued job "
                          "per GPU type (0 when none is queued).", v, n, 2, now);
        render_runners(t, v, n, now, r->srv->lease_s);
    }
    for (int i = 0; i < n; i++)
        free(v[i].runners);
    free(v);
}

static void render_hellos(struct http_req *r, struct kj_buf *t, struct kj_err *err,
                          int *rc)
{
    struct hello_entry *e = NULL;
    int n = 0;
    if ((*rc = hello_list_all(r->srv->hellos, &e, &n, err)) != 0)
        return;
    metrics_printf(t, "# HELP kjudge_runner_hello What each runner reported when it last "
                   "started: ready, or refused with its reason.\n"
                   "# TYPE kjudge_runner_hello gauge\n");
    for (int i = 0; i < n; i++) {
        metrics_printf(t, "kjudge_runner_hello{runner=\"");
        metrics_label(t, e[i].runner, sizeof e[i].runner);
        metrics_printf(t, "\",state=\"%s\",gpu=\"", hello_state_name(e[i].state));
        metrics_label(t, e[i].gpu, sizeof e[i].gpu);
        metrics_printf(t, "\",reason=\"");
        metrics_label(t, e[i].reason, 200);
        metrics_printf(t, "\"} 1\n");
    }
    metrics_printf(t, "# HELP kjudge_runner_hello_time_seconds When each runner last reported "
                   "at start (unix time).\n# TYPE kjudge_runner_hello_time_seconds gauge\n");
    for (int i = 0; i < n; i++) {
        metrics_printf(t, "kjudge_runner_hello_time_seconds{runner=\"");
        metrics_label(t, e[i].runner, sizeof e[i].runner);
        metrics_printf(t, "\"} %lld\n", (long long)e[i].at);
    }
    free(e);
}

enum MHD_Result api_metrics(struct http_req *r)
{
    struct kj_buf t;
    struct MHD_Response *resp;
    enum MHD_Result res;
    struct kj_err err;
    size_t len = 0;
    char *text = NULL;
    int rc = 0;

    if (!metrics_allowed(r, &res))
        return res;
    kj_err_clear(&err);
    kj_buf_init(&t, 0);
    metrics_render(r->srv->metrics, &t);
    render_counts(r, &t, &err, &rc);
    if (rc == 0)
        render_queues(r, &t, &err, &rc);
    if (rc == 0)
        render_hellos(r, &t, &err, &rc);
    metrics_printf(&t, "# HELP kjudge_leaderboards Leaderboards loaded.\n"
                   "# TYPE kjudge_leaderboards gauge\nkjudge_leaderboards %d\n",
                   r->boards->nspecs);
    if (rc == 0 && (kj_buf_status(&t) != 0 || (text = kj_buf_take(&t, &len)) == NULL))
        rc = KJ_FAIL(&err, KJ_ENOMEM, "out of memory rendering the metrics");
    kj_buf_free(&t);
    if (rc != 0)
        return http_internal(r, &err);
    resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (resp == NULL) {
        free(text);
        return http_queue(r, MHD_HTTP_OK, NULL);
    }
    MHD_add_response_header(resp, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    return http_queue(r, MHD_HTTP_OK, resp);
}
