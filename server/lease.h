/*
 * lease.h - the sweeper thread that takes jobs back from silent runners.
 *
 * main.c starts it after the database and the wait list and stops it
 * before them. Every LEASE_TICK_MS it calls db_job_sweep(): a running
 * job whose lease passed goes back to the queue (or, on its last attempt,
 * ends as internal_error); each one is logged and its waiters and event
 * streams are woken (wait_notify). The lease rules are in db.h.
 */
#ifndef KJ_LEASE_H
#define KJ_LEASE_H

#include "kj_err.h"

#define LEASE_TICK_MS 250

struct db;
struct wait_list;
struct lease_sweeper;

/* Start the thread. db and wait are borrowed and must outlive it.
 * *out is owned by the caller: lease_free(). */
int lease_start(struct db *db, struct wait_list *wait, struct lease_sweeper **out,
                struct kj_err *err);
/* Stop the thread and free. NULL is fine. */
void lease_free(struct lease_sweeper *s);

#endif
