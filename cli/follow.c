/*
 * follow.c - follow one submission's judging until it is done: its event
 * stream (GET /submissions/{id}/events?stream=1) fed to prog.c, resumed
 * from the last event id when the stream ends or the connection drops,
 * then the final GET /submissions/{id}.
 *
 * Used by `kjudge submit` (cmd_submit.c) and `kjudge events` (cmd_subs.c);
 * it calls neither. The caller owns *final on success (curlc_resp_free).
 */
#include "kjc.h"
#include "prog.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FOLLOW_MAX_QUICK 20 /* streams in a row that end early without news */
#define FOLLOW_MAX_NET 4    /* connection failures in a row */

struct follow_ctx {
    struct prog *p;      /* borrowed, may be NULL */
    char last_id[32];    /* the last event id seen, "" = none */
    int news;            /* events seen in this stream */
    int timeout, busy;   /* the stream ended with a timeout / error frame */
};

static int on_event(void *ctx, const char *id, const char *event, const char *data)
{
    struct follow_ctx *fc = ctx;
    if (id[0] != '\0' && strlen(id) < sizeof fc->last_id)
        snprintf(fc->last_id, sizeof fc->last_id, "%s", id);
    if (strcmp(event, "timeout") == 0) {
        fc->timeout = 1;
        return 0;
    }
    if (strcmp(event, "error") == 0) {
        fc->busy = 1;
        return 0;
    }
    fc->news++;
    if (fc->p != NULL) {
        cJSON *d = cJSON_Parse(data);
        prog_event(fc->p, event, d);
        cJSON_Delete(d);
    }
    return 0;
}

/* After a stream ended: GET the submission; *done when it has its verdict. */
static int check_done(struct kjc *k, const char *id, struct curlc_resp *final, int *done)
{
    char path[96], status[16];
    cJSON *j;
    snprintf(path, sizeof path, "/api/v1/submissions/%s", id);
    if (kjc_get(k, path, final) != KJC_OK)
        return KJC_ERROR;
    if ((j = kjc_json(k, final)) == NULL) {
        curlc_resp_free(final);
        return KJC_ERROR;
    }
    *done = strcmp(kjc_str(j, "status", status, sizeof status), "done") == 0;
    cJSON_Delete(j);
    if (!*done)
        curlc_resp_free(final);
    return KJC_OK;
}

int cmd_follow(struct kjc *k, const char *id, struct prog *p, struct curlc_resp *final)
{
    struct follow_ctx fc;
    char path[96];
    int quick = 0, net = 0, done = 0;
    memset(&fc, 0, sizeof fc);
    fc.p = p;
    snprintf(path, sizeof path, "/api/v1/submissions/%s/events?stream=1", id);
    for (;;) {
        struct curlc_resp r;
        struct kj_err err;
        kj_err_clear(&err);
        fc.news = fc.timeout = fc.busy = 0;
        int rc = curlc_sse(k->http, path, fc.last_id[0] ? fc.last_id : NULL, KJC_STREAM_IDLE_MS,
                           on_event, &fc, &r, &err);
        if (rc != 0 && ++net < FOLLOW_MAX_NET) {
            sleep((unsigned)net);
            continue;
        }
        if (rc != 0 || r.status != 200) {
            if (p != NULL)
                prog_done(p);
            kjc_report(k, rc, &err, &r);
            curlc_resp_free(&r);
            if (rc != 0)
                kjc_fail(k, "lost the event stream; the submission goes on: kjudge show %s", id);
            return KJC_ERROR;
        }
        curlc_resp_free(&r);
        net = 0;
        if (check_done(k, id, final, &done) != KJC_OK)
            return KJC_ERROR;
        if (done)
            return KJC_OK;
        quick = fc.news > 0 || fc.timeout ? 0 : quick + 1;
        if (quick > FOLLOW_MAX_QUICK)
            return kjc_fail(k, "the event stream keeps ending without news; see kjudge show %s",
                            id);
        if (quick > 0 || fc.busy)
            sleep(1);
    }
}
