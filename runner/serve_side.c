/*
 * serve_side.c - the side lane (see serve_int.h): test-mode jobs judged
 * beside an untimed job that holds the GPU, so that a sanitize job that
 * runs until its tool's limit (or a slow test job) does not hold every
 * other participant's test verdict back.
 *
 * When serve.c starts judging a job whose mode the sharing policy marks
 * SHARE_SIDE (share.h; sanitize by default, test with --share test=side),
 * it starts one thread
 * that, until the job's result is posted:
 *
 *   1. claims a test-mode job at once (no long poll) with {"modes":
 *      ["test"], "skip": [...]}, as a gap does: the queue rule picks it,
 *      so fair share and the class bound hold for it like for any claim;
 *   2. judges it in boxes and CUDA contexts of its own, given up and given
 *      back (no attempt charged) when it has no verdict within
 *      cfg->gap_s (at most the main job's heartbeat period: a side job
 *      sends none), and posts its events and result with its own HTTP
 *      client (serve_gap.c's lane code; a fault is followed by the GPU
 *      health check, as in a gap);
 *   3. when no job was queued, waits SERVE_SIDE_POLL_S and asks again.
 *
 * Why only test-mode jobs beside: they are short (a gap's give-up time at
 * most here), so the lane turns over every few seconds; two tool jobs side
 * by side would hold two slots for minutes and share nothing more. Each
 * job's device memory is its own box's (the harness allocates only what
 * the board's plan needs, the device heap has the box's limit), so one job
 * cannot take the other's. The main job's own time limit keeps running
 * while the side lane works; the side lane's jobs charge their users'
 * fair share as any job does (claim to result).
 *
 * serve_side_stop, after the main job's result is posted, asks the thread
 * to end and joins it: at most one side job's give-up time and teardown
 * later, the GPU is free for the next job (which may be timed: ranked
 * timing never shares). A stop ends the lane too (the watcher gives its
 * job back: serve.c's serve_release).
 */
#include "serve_int.h"
#include "curlc.h"
#include "judge.h"
#include "mono.h"

#include <errno.h>
#include <string.h>
#include <time.h>

static void *serve_side_main(void *arg)
{
    struct serve *sv = arg;
    pthread_mutex_lock(&sv->mu);
    while (!sv->side_stop) {
        pthread_mutex_unlock(&sv->mu);
        int took = serve_lane_take(sv, &sv->side, &sv->side_wipe);
        pthread_mutex_lock(&sv->mu);
        if (took || sv->side_stop)
            continue;
        if (sv->side.off || *sv->cfg->stop || sv->unhealthy)
            break;
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += (long)(SERVE_SIDE_POLL_S * 1e9);
        until.tv_sec += until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        while (!sv->side_stop &&
               pthread_cond_timedwait(&sv->side_cv, &sv->mu, &until) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&sv->mu);
    return NULL;
}

void serve_side_start(struct serve *sv, long outer_id, enum kj_mode m, char *src)
{
    const struct share_policy *p = sv->cfg->share;
    struct share_policy def;
    if (p == NULL) {
        share_default(&def);
        p = &def;
    }
    if (sv->side_on || p->how[m] != SHARE_SIDE || sv->cfg->gap_s <= 0 || sv->cfg->once ||
        sv->side_http == NULL || *sv->cfg->stop || sv->unhealthy)
        return;
    int off = sv->side.off;
    memset(&sv->side, 0, sizeof sv->side);
    sv->side.off = off;
    if (off)
        return;
    sv->side.sv = sv;
    sv->side.h = sv->side_http;
    sv->side.side = 1;
    sv->side.outer_id = outer_id;
    /* No heartbeats for a side job: a third of the lease at most, as a gap's. */
    sv->side.give_up_s = sv->cfg->gap_s < sv->beat_s ? sv->cfg->gap_s : sv->beat_s;
    sv->side_wipe = sv->secrets;
    secret_add(&sv->side_wipe, src, strlen(src));
    if (sv->side_boards == NULL && (sv->side_boards = judge_boards_new()) == NULL)
        kj_log(KJ_LOG_WARN, "serve", "no memory to keep the side lane's compiled board files");
    pthread_mutex_lock(&sv->mu);
    sv->side_stop = 0;
    pthread_mutex_unlock(&sv->mu);
    if (pthread_create(&sv->side_thread, NULL, serve_side_main, sv) != 0) {
        kj_log(KJ_LOG_WARN, "serve", "no side lane beside job=%ld: cannot start its thread",
               outer_id);
        return;
    }
    sv->side_on = 1;
}

void serve_side_stop(struct serve *sv)
{
    if (!sv->side_on)
        return;
    pthread_mutex_lock(&sv->mu);
    sv->side_stop = 1;
    pthread_cond_broadcast(&sv->side_cv);
    pthread_mutex_unlock(&sv->mu);
    pthread_join(sv->side_thread, NULL);
    sv->side_on = 0;
    if (sv->side.jobs > 0)
        kj_log(KJ_LOG_INFO, "serve", "job=%ld: %d test job(s) judged beside it, %.2f s, %d "
               "given back", sv->side.outer_id, sv->side.jobs, sv->side.spent_s, sv->side.nskip);
}
