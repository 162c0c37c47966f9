/*
 * db_event.c - a job's progress events: append (counted against the job's
 * cap, DB_MAX_JOB_EVENTS and DB_MAX_JOB_EVENT_BYTES), list, read after a
 * cursor, and the last one.
 *
 * db_job.c appends the runner's events and its own ("queued" on a retry,
 * "verdict" when it gives up) inside its transactions; api_submissions.c
 * lists them; sse.c reads them in batches after the last one it sent.
 */
#include "db_int.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Bytes an event counts against its job's cap: its name and its data. */
static int64_t event_bytes(enum kj_event event, const char *data)
{
    return (int64_t)strlen(kj_event_name(event)) + (data != NULL ? (int64_t)strlen(data) : 0);
}

int db_event_insert_locked(struct db *db, int64_t id, enum kj_event event, const char *data,
                           struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc = db_prep(db, err, &st, "INSERT INTO events(submission_id, seq, event, data, at) VALUES "
                     "(?, (SELECT coalesce(max(seq), 0) + 1 FROM events WHERE submission_id = ?), "
                     "?, ?, ?)", "iitti", id, id, kj_event_name(event), data, db_now());
    if (rc == 0)
        rc = db_step(db, err, st);
    sqlite3_finalize(st);
    if (rc != 0)
        return rc;
    rc = db_prep(db, err, &st, "UPDATE submissions SET event_count = event_count + 1, "
                 "event_bytes = event_bytes + ? WHERE id = ?", "ii", event_bytes(event, data), id);
    if (rc == 0)
        rc = db_step(db, err, st);
    sqlite3_finalize(st);
    return rc;
}

int db_event_room_locked(struct db *db, int64_t id, enum kj_event event,
                                const char *data, struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int64_t count = 0, bytes = 0, add = event_bytes(event, data);
    int rc = db_prep(db, err, &st, "SELECT event_count, event_bytes FROM submissions WHERE id = ?",
                     "i", id);
    if (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        count = sqlite3_column_int64(st, 0);
        bytes = sqlite3_column_int64(st, 1);
        rc = 0;
    }
    sqlite3_finalize(st);
    if (rc != 0)
        return rc;
    if (count >= DB_MAX_JOB_EVENTS || bytes + add > DB_MAX_JOB_EVENT_BYTES)
        return KJ_FAIL(err, KJ_ELIMIT, "job %lld holds %lld events of %lld bytes; at most %d "
                       "events and %d bytes are stored per job", (long long)id, (long long)count,
                       (long long)bytes, DB_MAX_JOB_EVENTS, DB_MAX_JOB_EVENT_BYTES);
    return 0;
}

int db_events_after(struct db *db, int64_t id, int64_t after_seq, int max_events,
                    size_t max_bytes, struct db_event **out, int *n, int *more,
                    struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    struct db_event *ev = NULL;
    size_t bytes = 0;
    int count = 0, cap = 0, rc;
    *out = NULL;
    *n = 0;
    *more = 0;
    if (KJ_NEVER(max_events <= 0))
        return KJ_FAIL(err, KJ_EINTERNAL, "a batch of %d events", max_events);
    pthread_mutex_lock(&db->mu);
    rc = db_prep(db, err, &st, "SELECT seq, event, data, at FROM events WHERE submission_id = ? "
                 "AND seq > ? ORDER BY seq LIMIT ?", "iii", id, after_seq, (int64_t)max_events + 1);
    while (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        size_t len = (size_t)sqlite3_column_bytes(st, 2);
        if (count == max_events || (count > 0 && bytes + len > max_bytes)) {
            *more = 1;
            rc = 0;
            break;
        }
        if ((rc = db_grow((void **)&ev, &cap, count, sizeof *ev, "events", err)) != 0)
            break;
        struct db_event *e = &ev[count++];
        e->seq = sqlite3_column_int64(st, 0);
        e->at = sqlite3_column_int64(st, 3);
        e->data = NULL;
        if ((rc = db_col_event(err, st, 1, &e->event)) != 0)
            break;
        bytes += len;
        rc = db_col_dup(db, err, st, 2, &e->data, NULL);
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&db->mu);
    if (rc < 0) {
        db_events_free(ev, count);
        return rc;
    }
    *out = ev;
    *n = count;
    return 0;
}

int db_events_list(struct db *db, int64_t id, struct db_event **out, int *n, struct kj_err *err)
{
    int more = 0;
    return db_events_after(db, id, 0, INT_MAX - 1, SIZE_MAX, out, n, &more, err);
}

int db_event_last(struct db *db, int64_t id, int64_t *seq, enum kj_event *event,
                  struct kj_err *err)
{
    sqlite3_stmt *st = NULL;
    int rc;
    *seq = 0;
    pthread_mutex_lock(&db->mu);
    rc = db_prep(db, err, &st, "SELECT seq, event FROM events WHERE submission_id = ? "
                 "ORDER BY seq DESC LIMIT 1", "i", id);
    if (rc == 0 && (rc = db_step(db, err, st)) == 1) {
        *seq = sqlite3_column_int64(st, 0);
        rc = db_col_event(err, st, 1, event);
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

void db_events_free(struct db_event *ev, int n)
{
    if (ev == NULL)
        return;
    for (int i = 0; i < n; i++)
        free(ev[i].data);
    free(ev);
}
