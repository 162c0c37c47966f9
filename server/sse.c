/*
 * sse.c - GET /api/v1/submissions/{id}/events as Server-Sent Events.
 *
 * api_submissions.c checks the submission and the caller, then calls
 * sse_start(), which takes one of the caller's wait slots (wait.h) for the
 * stream's life. The stream replays the submission's events from the
 * database (a "queued" event with the queue position, id 0, then every
 * stored event by its seq), then follows live ones, and ends after the
 * verdict (the stored "verdict" event, or one made from the row when the
 * runner sent none), the timeout, or the server stopping (a "stopping"
 * event, sent when wait.h refuses to park it). Frames: "id: N\nevent: NAME\ndata: JSON\n\n".
 *
 * Memory stays bounded whatever a job holds: events are read from a cursor
 * (the last id sent) in batches of at most SSE_BATCH_EVENTS events and
 * SSE_BATCH_BYTES bytes, the next batch only once MHD has taken the last,
 * and a drained buffer is given back.
 *
 * No MHD worker thread ever blocks: the content reader callback reads what
 * is new and, when nothing is, parks the connection in wait.h (suspend);
 * api_runner.c and lease.c call wait_notify() after every change, which
 * resumes it, and MHD calls the reader again. A comment line goes out every
 * KJ_SSE_PING_S so proxies and dead clients are noticed; the notifier also
 * resumes a parked stream whose client closed its socket, and the stream
 * then ends. Before each batch the token that opened the stream is checked
 * again: a ban, a revocation or a rotation (wait_kick_user resumes a
 * parked stream at once) ends it with an "error" event naming the reason.
 */
#include "api.h"
#include "auth.h"
#include "kj_buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SSE_BATCH_EVENTS 64          /* events read from the database at once */
#define SSE_BATCH_BYTES (64 * 1024)  /*   and their data bytes (past the first event) */

/* What sse_next() left for the reader. */
enum sse_step { SSE_DATA, SSE_PARKED, SSE_END, SSE_GONE, SSE_ERROR };

/* One open stream; the MHD response owns it (sse_free). */
struct sse_stream {
    struct server *srv;          /* borrowed for the server's life */
    struct MHD_Connection *conn; /* borrowed from MHD for the response's life */
    int64_t id;                  /* the submission */
    int64_t last_id;             /* id of the last event put in buf; -1 = none */
    int64_t deadline_ms;         /* CLOCK_MONOTONIC: end of the stream */
    int64_t ping_ms;             /* CLOCK_MONOTONIC: next keep-alive comment */
    struct kj_buf out;           /* owned: the frames; out.p[off..out.len) not yet handed to MHD */
    size_t off;
    int finished;                /* buf holds the last bytes; end after them */
    struct db_user user;         /* who opened it; its token is checked again */
    struct wait_hold hold;       /* the stream's slot, for its whole life */
    struct wait_entry wait;      /* linkage in srv->wait while parked */
};

/* 0, or KJ_ENOMEM once an append to st->out has failed (kj_buf's failure is
 * sticky, so one check after a run of appends covers them all). */
static int sse_out_status(struct sse_stream *st, struct kj_err *err)
{
    if (kj_buf_status(&st->out) != 0)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory for an event stream");
    return 0;
}

/* Append one event; takes ownership of data (NULL is sent as null). */
static int sse_frame(struct sse_stream *st, int64_t id, enum kj_event event, cJSON *data,
                     struct kj_err *err)
{
    char *text = data != NULL ? cJSON_PrintUnformatted(data) : NULL;
    int rc;
    cJSON_Delete(data);
    if (data != NULL && text == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory serializing an event");
    kj_buf_printf(&st->out, "id: %lld\nevent: %s\ndata: %s\n\n", (long long)id,
                  kj_event_name(event), text != NULL ? text : "null");
    cJSON_free(text);
    rc = sse_out_status(st, err);
    if (rc == 0)
        st->last_id = id;
    return rc;
}

/* The queued event made at replay time: the position now, or null once
 * claimed, and a "note" when no runner serves the job's GPU type (api_gpu_note). */
static int sse_queued(struct sse_stream *st, const struct db_sub *s, struct kj_err *err)
{
    int64_t pos = 0;
    char note[API_NOTE_BYTES] = "";
    int rc = db_job_position(st->srv->db, st->id, &pos, err);
    if (rc == 0 && pos > 0)
        rc = api_gpu_note(st->srv, s->gpu, note, sizeof note, err);
    if (rc != 0)
        return rc;
    cJSON *d = cJSON_CreateObject();
    if (pos > 0)
        cJSON_AddNumberToObject(d, "position", (double)pos);
    else
        cJSON_AddNullToObject(d, "position");
    cJSON_AddStringToObject(d, "status", db_status_name(s->status));
    cJSON_AddStringToObject(d, "gpu", s->gpu);
    if (note[0] != '\0') /* no runner takes this GPU type's jobs: say so at once */
        cJSON_AddStringToObject(d, "note", note);
    return sse_frame(st, 0, KJ_EV_QUEUED, d, err);
}

/* The verdict event made from a done row whose runner posted none. */
static int sse_verdict(struct sse_stream *st, const struct db_sub *s, int64_t id,
                       struct kj_err *err)
{
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "verdict", kj_verdict_name(s->verdict));
    if (s->has_score)
        cJSON_AddNumberToObject(d, "score_ns", s->score_ns);
    else
        cJSON_AddNullToObject(d, "score_ns");
    return sse_frame(st, id, KJ_EV_VERDICT, d, err);
}

/* Put the next batch of events after st->last_id in buf; set finished
 * once the job is done and its verdict is in buf. The row is read before
 * the events: a done job gets no more events, so "done" and no batch left
 * means the list is complete. */
static int sse_fill(struct sse_stream *st, struct kj_err *err)
{
    struct db_sub s;
    struct db_event *ev = NULL;
    enum kj_event last = KJ_EV_QUEUED;
    int64_t last_seq = 0;
    int n = 0, more = 0, rc;
    if ((rc = db_sub_get(st->srv->db, st->id, 0, &s, err)) != 0)
        return rc;
    if (st->last_id < 0 && (rc = sse_queued(st, &s, err)) != 0)
        return rc;
    if ((rc = db_events_after(st->srv->db, st->id, st->last_id > 0 ? st->last_id : 0,
                              SSE_BATCH_EVENTS, SSE_BATCH_BYTES, &ev, &n, &more, err)) != 0)
        return rc;
    for (int i = 0; i < n && rc == 0; i++) {
        cJSON *d = ev[i].data != NULL ? cJSON_Parse(ev[i].data) : NULL;
        api_strip_secrets(d);
        rc = sse_frame(st, ev[i].seq, ev[i].event, d, err);
    }
    db_events_free(ev, n);
    if (rc == 0 && !more && s.status == DB_DONE) {
        rc = db_event_last(st->srv->db, st->id, &last_seq, &last, err);
        if (rc == 0 && (last_seq == 0 || last != KJ_EV_VERDICT) && st->last_id <= last_seq)
            rc = sse_verdict(st, &s, last_seq + 1, err);
        st->finished = rc == 0;
    }
    return rc;
}

/* Check the opener's token again; when it was revoked, replaced or banned,
 * put the error event in buf and finish. */
static int sse_recheck(struct sse_stream *st, struct kj_err *err)
{
    const char *why = NULL;
    int rc = auth_recheck(st->srv->db, &st->user, &why, err);
    if (rc != 0 || why == NULL)
        return rc;
    kj_log(KJ_LOG_INFO, "sse", "ended id=%lld user=%s reason=%s", (long long)st->id,
           st->user.name, why);
    st->finished = 1;
    kj_buf_printf(&st->out, "event: error\ndata: {\"code\":\"%s\",\"message\":\"%s\"}\n\n", why,
                  strcmp(why, "banned") == 0 ? "this account was banned"
                                             : "the token was revoked or replaced");
    return sse_out_status(st, err);
}

/* Nothing new: park the connection until a change, the next ping or the deadline. */
static enum sse_step sse_park(struct sse_stream *st, int64_t now, struct kj_err *err)
{
    int64_t until = st->ping_ms < st->deadline_ms ? st->ping_ms : st->deadline_ms;
    int secs = (int)((until - now + 999) / 1000), rc;
    rc = wait_add(st->srv->wait, &st->wait, &st->hold, st->conn, st->id, secs > 0 ? secs : 1,
                  err);
    if (rc == KJ_ECONFLICT) { /* the server is stopping: say so, then end */
        st->finished = 1;
        kj_buf_puts(&st->out, "event: stopping\ndata: {\"reconnect\":true,\"message\":"
                    "\"the server is stopping; reconnect with Last-Event-ID\"}\n\n");
        return sse_out_status(st, err) == 0 ? SSE_DATA : SSE_ERROR;
    }
    if (rc != 0)
        return SSE_ERROR;
    /* Linked first, then re-read: a change committed in between is not
     * missed, nor a ban or revocation (its wait_kick_user came too early). */
    if ((rc = sse_recheck(st, err)) != 0 || st->finished || (rc = sse_fill(st, err)) != 0 ||
        st->out.len > 0 || st->finished) {
        wait_remove(st->srv->wait, &st->wait);
        return rc != 0 ? SSE_ERROR : st->out.len > 0 ? SSE_DATA : SSE_END;
    }
    MHD_suspend_connection(st->conn);
    wait_parked(st->srv->wait, &st->wait);
    return SSE_PARKED;
}

/* buf is empty: refill it, end, or park. */
static enum sse_step sse_next(struct sse_stream *st, struct kj_err *err)
{
    int64_t now;
    st->off = 0;
    kj_buf_free(&st->out);
    if (st->wait.gone)
        return SSE_GONE;
    if (st->finished)
        return SSE_END;
    if (sse_recheck(st, err) != 0)
        return SSE_ERROR;
    if (st->finished)
        return SSE_DATA;
    if (sse_fill(st, err) != 0)
        return SSE_ERROR;
    if (st->out.len > 0)
        return SSE_DATA;
    if (st->finished)
        return SSE_END;
    now = wait_now_ms();
    if (now >= st->deadline_ms) {
        st->finished = 1;
        kj_buf_puts(&st->out, "event: timeout\ndata: {\"reconnect\":true}\n\n");
        return sse_out_status(st, err) == 0 ? SSE_DATA : SSE_ERROR;
    }
    if (now >= st->ping_ms) {
        st->ping_ms = now + (int64_t)KJ_SSE_PING_S * 1000;
        kj_buf_puts(&st->out, ": keep-alive\n\n");
        return sse_out_status(st, err) == 0 ? SSE_DATA : SSE_ERROR;
    }
    return sse_park(st, now, err);
}

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct sse_stream *st = cls;
    struct kj_err err;
    size_t n;
    (void)pos;
    if (st->off == st->out.len) {
        kj_err_clear(&err);
        switch (sse_next(st, &err)) {
        case SSE_DATA:
            break;
        case SSE_PARKED:
            return 0; /* suspended: MHD calls again after the resume */
        case SSE_END:
            return MHD_CONTENT_READER_END_OF_STREAM;
        case SSE_GONE:
            return MHD_CONTENT_READER_END_WITH_ERROR; /* the client closed its socket */
        case SSE_ERROR:
            kj_log(KJ_LOG_ERROR, "sse", "stream of submission %lld failed: %s",
                   (long long)st->id, err.msg);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
    }
    n = st->out.len - st->off < max ? st->out.len - st->off : max;
    memcpy(buf, st->out.p + st->off, n);
    st->off += n;
    return (ssize_t)n;
}

static void sse_free(void *cls)
{
    struct sse_stream *st = cls;
    if (st == NULL)
        return;
    wait_remove(st->srv->wait, &st->wait);
    wait_unhold(st->srv->wait, &st->hold);
    kj_buf_free(&st->out);
    free(st);
}

enum MHD_Result sse_start(struct http_req *r, int64_t id, int64_t last_id, int timeout_s)
{
    struct sse_stream *st = calloc(1, sizeof *st);
    struct MHD_Response *resp;
    enum MHD_Result res;
    struct kj_err err;
    int64_t now = wait_now_ms();
    kj_err_clear(&err);
    if (st == NULL) {
        KJ_FAIL(&err, KJ_ENOMEM, "out of memory opening an event stream");
        return http_internal(r, &err);
    }
    if (api_wait_hold(r, &st->hold, &res)) {
        free(st);
        return res;
    }
    kj_buf_init(&st->out, 0);
    st->srv = r->srv;
    st->conn = r->conn;
    st->user = r->user;
    st->id = id;
    st->last_id = last_id;
    st->deadline_ms = now + (int64_t)timeout_s * 1000;
    st->ping_ms = now + (int64_t)KJ_SSE_PING_S * 1000;
    kj_buf_printf(&st->out, ": events of submission %lld\nretry: 3000\n\n", (long long)id);
    if (sse_out_status(st, &err) != 0) {
        sse_free(st);
        return http_internal(r, &err);
    }
    resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, sse_read, st, sse_free);
    if (resp == NULL) {
        sse_free(st);
        return http_queue(r, MHD_HTTP_OK, NULL);
    }
    MHD_add_response_header(resp, "Content-Type", "text/event-stream");
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    MHD_add_response_header(resp, "X-Accel-Buffering", "no");
    return http_queue(r, MHD_HTTP_OK, resp);
}
