/*
 * wait.h - parked ?wait=1 requests and the thread that wakes them.
 *
 * api_submissions.c parks a GET /submissions/{id}?wait=1 whose job is not
 * done: wait_add(), MHD_suspend_connection(), wait_parked(). api_runner.c
 * calls wait_notify() after a result is committed. A runner's long-poll
 * claim (POST /runner/claim?wait=S) parks the same way for a GPU type
 * (wait_add_claim); a submission or a job queued again wakes the claims
 * of its GPU type (wait_notify_gpu); claims hold slots of their own pool
 * (wait_hold_claim), apart from users' waits and streams. The notifier thread
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
#define WAIT_PROBE_MS 500   /* how often parked sockets are checked for a gone client */

struct MHD_Connection;
struct wait_list;

/* The pools of slots: users' ?wait=1 requests and event streams, runners'
 * long-poll claims. */
enum { WAIT_POOL_USERS = 0, WAIT_POOL_CLAIMS = 1, WAIT_POOLS = 2 };

/* The size of each pool, and its cap per holder (a user; a runner token). */
struct wait_limits {
    int total, per_user;             /* users' waits and streams */
    int claims, claims_per_runner;   /* runners' parked claims */
};

/* One slot of a ?wait=1, an event stream or a parked claim; embedded in
 * the request or stream, zeroed with it. Fields are guarded by the list's
 * mutex. */
struct wait_hold {
    int64_t user_id;             /* whose slot */
    int pool;                    /* WAIT_POOL_*, set when held */
    int held;                    /* 1 between wait_hold and wait_unhold */
    int user_full;               /* set by a refused wait_hold: the per-user cap, not the total */
};

/* Embedded in a request; owned by it. Fields are guarded by the list's mutex. */
struct wait_entry {
    struct wait_entry *prev, *next;
    struct MHD_Connection *conn; /* borrowed from MHD */
    int64_t submission_id;       /* 0 for a claim */
    char gpu[64];                /* a claim's GPU type; "" for a submission's waiter */
    int64_t user_id;             /* the slot's user (wait_kick_user) */
    int64_t deadline_ms;         /* CLOCK_MONOTONIC */
    int linked;                  /* in the list */
    int parked;                  /* suspended; the notifier may resume it */
    int ready;                   /* the submission changed, or the entry was kicked */
    int timed_out;               /* resumed because the deadline passed */
    int gone;                    /* resumed because the client closed its socket */
    int kicked;                  /* resumed by wait_kick_user: check the token again */
};

/* 1 when the client of connection c has closed its side (or reset it). */
int wait_conn_gone(struct MHD_Connection *c);

/* CLOCK_MONOTONIC in ms: the clock of every deadline_ms here and in sse.c. */
int64_t wait_now_ms(void);

/* Start the notifier thread; lim's fields (each >= 1) bound the slots.
 * *out is owned by the caller: wait_free(). */
int wait_start(struct wait_list **out, const struct wait_limits *lim, struct kj_err *err);
/* Stop the thread and free (after the daemon is stopped). NULL is fine. */
void wait_free(struct wait_list *w);

/* Take a users' slot for user_id into h (not held). KJ_ELIMIT when every
 * slot is taken, or (h->user_full = 1) when the user holds per_user and is
 * not exempt (admins). */
int wait_hold(struct wait_list *w, struct wait_hold *h, int64_t user_id, int exempt,
              struct kj_err *err);
/* Take a claims' slot for runner token runner_id into h (not held), as
 * wait_hold: KJ_ELIMIT when every claim slot is taken, or (h->user_full =
 * 1) when the token holds claims_per_runner. */
int wait_hold_claim(struct wait_list *w, struct wait_hold *h, int64_t runner_id,
                    struct kj_err *err);
/* Give h's slot back if held; a zeroed h is fine. */
void wait_unhold(struct wait_list *w, struct wait_hold *h);
/* Slots held now in pool (WAIT_POOL_*): all, and user_id's (for tests and logs). */
void wait_counts(struct wait_list *w, int pool, int64_t user_id, int *total, int *user);

/* Link e for submission id with a timeout, on h's slot (held).
 * KJ_ECONFLICT while the server stops (answer at once instead). */
int wait_add(struct wait_list *w, struct wait_entry *e, const struct wait_hold *h,
             struct MHD_Connection *conn, int64_t submission_id, int timeout_s,
             struct kj_err *err);
/* Link e as a runner's claim for a job of GPU type gpu, as wait_add, until
 * deadline_ms (wait_now_ms's clock): a claim parked again after a wake it
 * could not use keeps the deadline of its first park. */
int wait_add_claim(struct wait_list *w, struct wait_entry *e, const struct wait_hold *h,
                   struct MHD_Connection *conn, const char *gpu, int64_t deadline_ms,
                   struct kj_err *err);
/* Mark e parked, after MHD_suspend_connection() returned. */
void wait_parked(struct wait_list *w, struct wait_entry *e);
/* Unlink e if linked (request answered or finished). */
void wait_remove(struct wait_list *w, struct wait_entry *e);
/* Wake every entry waiting for submission id. */
void wait_notify(struct wait_list *w, int64_t submission_id);
/* Wake every claim waiting for a job of GPU type gpu (NULL: every claim),
 * after a job of that type was queued (or queued again). */
void wait_notify_gpu(struct wait_list *w, const char *gpu);
/* Wake every entry of user_id with kicked set, so that it checks its token
 * again at once (a ban, a revocation, a rotation). Streams not parked now
 * check it before they send anything more (sse.c). */
void wait_kick_user(struct wait_list *w, int64_t user_id);
/* Refuse new waiters, resume all parked ones and wait (at most timeout_ms)
 * until every entry is unlinked. */
void wait_release_all(struct wait_list *w, int timeout_ms);

#endif
