/*
 * wait.h - parked ?wait=1 requests and the thread that wakes them.
 *
 * api_submissions.c parks a GET /submissions/{id}?wait=1 whose job is not
 * done: wait_add(), MHD_suspend_connection(), wait_parked(). api_runner.c
 * calls wait_notify() after a result is committed. The notifier thread
 * resumes a parked connection when its submission is done, its timeout
 * passes or the server stops (checking every WAIT_TICK_MS); MHD then calls
 * the handler again, which answers with the submission as it is. No MHD
 * worker thread ever blocks here.
 *
 * Entry states: unlinked -> linked (wait_add) -> parked (wait_parked) ->
 * unlinked (the notifier, just before MHD_resume_connection; or
 * wait_remove). Only parked entries are resumed, so a connection is never
 * resumed before it is suspended.
 */
#ifndef KJ_WAIT_H
#define KJ_WAIT_H

#include <stdint.h>
#include "kj_err.h"

#define WAIT_TICK_MS 100

struct MHD_Connection;
struct wait_list;

/* Embedded in a request; owned by it. Fields are guarded by the list's mutex. */
struct wait_entry {
    struct wait_entry *prev, *next;
    struct MHD_Connection *conn; /* borrowed from MHD */
    int64_t submission_id;
    int64_t deadline_ms;         /* CLOCK_MONOTONIC */
    int linked;                  /* in the list */
    int parked;                  /* suspended; the notifier may resume it */
    int ready;                   /* the submission is done */
    int timed_out;               /* resumed because the deadline passed */
};

/* CLOCK_MONOTONIC in ms: the clock of every deadline_ms here and in sse.c. */
int64_t wait_now_ms(void);

/* Start the notifier thread. *out is owned by the caller: wait_free(). */
int wait_start(struct wait_list **out, struct kj_err *err);
/* Stop the thread and free (after the daemon is stopped). NULL is fine. */
void wait_free(struct wait_list *w);

/* Link e for submission id with a timeout. KJ_ELIMIT when KJ_MAX_WAITERS are
 * parked; KJ_ECONFLICT while the server stops (answer at once instead). */
int wait_add(struct wait_list *w, struct wait_entry *e, struct MHD_Connection *conn,
             int64_t submission_id, int timeout_s, struct kj_err *err);
/* Mark e parked, after MHD_suspend_connection() returned. */
void wait_parked(struct wait_list *w, struct wait_entry *e);
/* Unlink e if linked (request answered or finished). */
void wait_remove(struct wait_list *w, struct wait_entry *e);
/* Wake every entry waiting for submission id. */
void wait_notify(struct wait_list *w, int64_t submission_id);
/* Refuse new waiters, resume all parked ones and wait (at most timeout_ms)
 * until every entry is unlinked. */
void wait_release_all(struct wait_list *w, int timeout_ms);

#endif
