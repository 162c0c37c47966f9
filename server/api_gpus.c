/*
 * api_gpus.c - GET /api/v1/gpus: each GPU type some leaderboard runs on,
 * with its queue depth and the runners that asked it for work.
 *
 * Public. The GPU types come from the loaded leaderboards (the request's board set), in
 * the order the boards name them; runners and counts from db_gpu_runners().
 * A runner is "active" while it holds a running job, "idle" when it polled
 * within the lease length, "silent" otherwise. api_gpu_note() says when no
 * runner serves a GPU type (none busy, none asked for work within
 * GPU_UNSERVED_S or the lease length if longer), for the ?wait=1 answers
 * and event streams of its queued jobs (api_submissions.c, sse.c) and for
 * this list's "note" per GPU type (the web's rankings page); a runner that
 * said hello ready for the type within that window counts as serving it.
 */
#include "api.h"
#include "hello.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A runner asks for work every 0.1 to 30 s between jobs and sends a
 * heartbeat at least every 20 s during one: one not heard from in this
 * long (or the lease length, if longer) is gone. */
#define GPU_UNSERVED_S 300

/* Is gpu named by a board before board index upto (or earlier in the same board)? */
static int gpu_seen(const struct board_set *bs, int upto, int gi, const char *gpu)
{
    for (int b = 0; b <= upto; b++) {
        int n = b < upto ? bs->specs[b]->ngpus : gi;
        for (int g = 0; g < n; g++)
            if (strcmp(bs->specs[b]->gpus[g], gpu) == 0)
                return 1;
    }
    return 0;
}

const char *api_runner_state(const struct db_runner *rr, int64_t now, int lease_s)
{
    if (rr->busy)
        return "active";
    return now - rr->last_seen <= lease_s ? "idle" : "silent";
}

/* 1 when a runner reported ready for gpu (POST /runner/hello) at or after
 * since: it is starting and asks for work next, though it has not yet; 0
 * when none did; a KJ_E* code (< 0) when the reports cannot be read. */
static int hello_ready(struct server *srv, const char *gpu, int64_t since, struct kj_err *err)
{
    struct hello_entry *e = NULL;
    int n = 0, found = 0, rc;
    if ((rc = hello_list_all(srv->hellos, &e, &n, err)) != 0)
        return rc;
    for (int i = 0; i < n && !found; i++)
        found = e[i].state == HELLO_READY && e[i].at >= since && strcmp(e[i].gpu, gpu) == 0;
    free(e);
    return found;
}

int api_gpu_note(struct server *srv, const char *gpu, char *out, size_t outsz,
                 struct kj_err *err)
{
    struct db_runner *rows = NULL;
    int64_t queued = 0, running = 0, now = (int64_t)time(NULL), last = 0;
    int window = srv->lease_s > GPU_UNSERVED_S ? srv->lease_s : GPU_UNSERVED_S;
    char when[32];
    int n = 0, rc;
    out[0] = '\0';
    if ((rc = db_gpu_runners(srv->db, gpu, &rows, &n, &queued, &running, err)) != 0)
        return rc;
    for (int i = 0; i < n; i++)
        if (rows[i].busy || rows[i].last_seen > last)
            last = rows[i].busy ? now : rows[i].last_seen;
    free(rows);
    if (n > 0 && now - last <= window)
        return 0; /* someone takes these jobs */
    if ((rc = hello_ready(srv, gpu, now - window, err)) != 0)
        return rc > 0 ? 0 : rc; /* one said it is ready for gpu: it asks for work next */
    /* GPU type names are [A-Za-z0-9_.-] (gputype.h): safe in the text. */
    if (n == 0) {
        snprintf(out, outsz, "no runner has asked for %s jobs yet: the job waits in the queue "
                 "until one does (GET /api/v1/gpus lists the runners)", gpu);
    } else {
        srv_iso_time(last, when, sizeof when);
        snprintf(out, outsz, "no runner has asked for %s jobs since %s (%d minutes or more): "
                 "the job waits in the queue until one does (GET /api/v1/gpus lists the "
                 "runners)", gpu, when, window / 60);
    }
    return 0;
}

/* One GPU type as JSON; NULL with err filled on a database error. */
static cJSON *gpu_json(struct http_req *r, const char *gpu, int64_t now, struct kj_err *err)
{
    struct db_runner *rows = NULL;
    int64_t queued = 0, running = 0;
    char when[32], note[API_NOTE_BYTES];
    int n = 0;
    if (db_gpu_runners(r->srv->db, gpu, &rows, &n, &queued, &running, err) != 0)
        return NULL;
    cJSON *o = cJSON_CreateObject(), *arr;
    cJSON_AddStringToObject(o, "gpu", gpu);
    cJSON_AddNumberToObject(o, "queued", (double)queued);
    cJSON_AddNumberToObject(o, "running", (double)running);
    /* What a queued job's stream says when no runner serves gpu (api_gpu_note): the
     * rankings page of that GPU type says it too. */
    if (api_gpu_note(r->srv, gpu, note, sizeof note, err) != 0) {
        free(rows);
        cJSON_Delete(o);
        return NULL;
    }
    if (note[0] != '\0')
        cJSON_AddStringToObject(o, "note", note);
    arr = cJSON_AddArrayToObject(o, "runners");
    for (int i = 0; i < n; i++) {
        cJSON *x = cJSON_CreateObject();
        srv_iso_time(rows[i].last_seen, when, sizeof when);
        cJSON_AddStringToObject(x, "name", rows[i].name);
        cJSON_AddStringToObject(x, "last_seen", when);
        cJSON_AddStringToObject(x, "state", api_runner_state(&rows[i], now, r->srv->lease_s));
        cJSON_AddItemToArray(arr, x);
    }
    free(rows);
    return o;
}

enum MHD_Result api_gpus(struct http_req *r)
{
    const struct board_set *bs = r->boards;
    struct kj_err err;
    int64_t now = (int64_t)time(NULL);
    cJSON *root = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(root, "gpus");
    kj_err_clear(&err);
    for (int b = 0; b < bs->nspecs; b++) {
        for (int g = 0; g < bs->specs[b]->ngpus; g++) {
            const char *gpu = bs->specs[b]->gpus[g];
            if (gpu_seen(bs, b, g, gpu))
                continue;
            cJSON *o = gpu_json(r, gpu, now, &err);
            if (o == NULL) {
                cJSON_Delete(root);
                return http_internal(r, &err);
            }
            cJSON_AddItemToArray(arr, o);
        }
    }
    return http_json(r, MHD_HTTP_OK, root);
}
