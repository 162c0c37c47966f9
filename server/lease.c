/*
 * lease.c - the lease sweeper (see lease.h): a kj_ticker whose tick is one
 * sweep. A failed sweep is logged and tried again at the next tick; it
 * never stops the server.
 */
#include "lease.h"
#include "db.h"
#include "kj_ticker.h"
#include "wait.h"

#include <stdlib.h>

struct lease_sweeper {
    struct kj_ticker *ticker; /* owned */
    struct db *db;            /* borrowed */
    struct wait_list *wait;   /* borrowed */
};

/* One sweep: requeue or fail the expired jobs, log them, wake their waiters. */
static void sweep_once(void *arg)
{
    struct lease_sweeper *s = arg;
    struct db_expired *ex = NULL;
    struct kj_err err;
    int n = 0;
    kj_err_clear(&err);
    if (db_job_sweep(s->db, db_now_ms(), &ex, &n, &err) != 0) {
        kj_log(KJ_LOG_ERROR, "lease", "sweep failed: %s", err.msg);
        return;
    }
    for (int i = 0; i < n; i++) {
        if (ex[i].failed)
            kj_log(KJ_LOG_WARN, "lease", "expired id=%lld runner=%s attempts=%d: failed as "
                   "internal_error", (long long)ex[i].id, ex[i].runner_name, ex[i].attempts);
        else {
            kj_log(KJ_LOG_WARN, "lease", "expired id=%lld runner=%s attempts=%d: queued again",
                   (long long)ex[i].id, ex[i].runner_name, ex[i].attempts);
            wait_notify_gpu(s->wait, NULL); /* a parked claim may take it */
        }
        wait_notify(s->wait, ex[i].id);
    }
    free(ex);
}

int lease_start(struct db *db, struct wait_list *wait, struct lease_sweeper **out,
                struct kj_err *err)
{
    struct lease_sweeper *s = calloc(1, sizeof *s);
    int rc;
    *out = NULL;
    if (s == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory starting the lease sweeper");
    s->db = db;
    s->wait = wait;
    if ((rc = kj_ticker_start(LEASE_TICK_MS, sweep_once, s, "lease sweeper", &s->ticker,
                              err)) != 0) {
        free(s);
        return rc;
    }
    *out = s;
    return 0;
}

void lease_free(struct lease_sweeper *s)
{
    if (s == NULL)
        return;
    kj_ticker_stop(s->ticker);
    free(s);
}
