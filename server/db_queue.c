/*
 * db_queue.c - the database side of the queue rule (queue.c): which queued
 * job a claim takes, queue positions, and the GPU time each finished job
 * charges its user (tables queue_usage and queue_state, schema version 9).
 *
 * db_job.c calls these inside its transactions (db->mu held): the claim
 * asks db_queue_pick_locked for the job to take (among those the claim's
 * filter allows: its snapshot holds only those jobs, but the usage of
 * every user with a job queued, as the unfiltered snapshot of positions
 * does), finish charges the run time with db_queue_charge_locked, and the
 * position of a queued job (the "queued" events, sse.c's replay) comes
 * from db_queue_position_locked.
 *
 * Why a table and not a sum over finished jobs: the decayed usage is one
 * row per user and GPU type, updated in O(1) when a job finishes
 * (usage = usage * 2^(-elapsed / half-life) + run time), so a claim reads
 * one row per user with queued work however long the contest has run;
 * summing finished jobs would read every job of the last hour or more on
 * each claim, and submissions.started_at is in whole seconds, too coarse
 * for half-second jobs. The claim's millisecond is kept in
 * submissions.claimed_ms for the charge, moved to the millisecond the job's
 * GPU work starts when the runner says so (a heartbeat's gpu_start,
 * db_job_heartbeat): a job held while it is compiled ahead is not charged
 * the wait, here or as a running job in the snapshot. queue_state keeps the class
 * streak and the measured run time of each class per GPU type, so a
 * restart does not reset the class bound.
 *
 * Rejudge jobs (db_rejudge.h: submissions with a rejudge_id, the
 * operator's) are a low tier: the rule picks among them only when no
 * other job of the GPU type that the claim allows is queued, and a queued
 * rejudge job's position counts every other queued job before it.
 *
 * One tool job per user: a queued profile or sanitize job whose user has
 * one running (on any GPU type) is held (queue.c), so no claim takes it
 * until that one ends; its result (or lease expiry, or give-back) wakes
 * the parked claims as any finished job does. A tool job's run time is
 * charged like any job's but not folded into the ranked class's estimate:
 * a sanitize run of minutes says nothing about how long a leaderboard job
 * takes.
 *
 * Positions over lanes: test-mode jobs are also taken by the lanes a
 * runner opens while another job holds its GPU (gaps of timed jobs, turns
 * of profile jobs, the side lane beside test and sanitize jobs:
 * runner/share.h). While a job of the GPU type runs, a queued test job's
 * position is the smaller of its place under the whole rule and its place
 * among the test-mode jobs alone (the order a lane's {"modes": ["test"]}
 * claims take them in).
 */
#include "db_int.h"
#include "queue.h"

#include <stdlib.h>
#include <string.h>

#define SNAP_MAX_BUSY 4096 /* users with a tool job running that a snapshot holds back */

/* The queue of one GPU type as the rule sees it. */
struct snap {
    struct queue_job *jobs;  /* owned: queued jobs, oldest first */
    int n, cap;
    int64_t *uids;           /* owned: user ids, indexed as queue_job.user */
    double *usage;           /* owned: per user, decayed usage plus running jobs */
    int nusers, idcap, ucap;
    int others;              /* queued jobs the filter allows that are of the other tier */
    int64_t *busy;           /* owned: users with a tool job running (any GPU type) */
    int nbusy, bcap;
    struct queue_state st;
};

static void snap_free(struct snap *s)
{
    free(s->jobs);
    free(s->uids);
    free(s->usage);
    free(s->busy);
    memset(s, 0, sizeof *s);
}

static enum queue_class class_of(enum kj_mode m)
{
    return m == KJ_MODE_TEST ? QUEUE_TEST : QUEUE_RANKED;
}

static int is_tool(enum kj_mode m)
{
    return m == KJ_MODE_PROFILE || m == KJ_MODE_SANITIZE;
}

/* Inside a transaction: the users with a profile or sanitize job running. */
static int busy_load(struct db *db, struct snap *s, struct kj_err *err)
{
    sqlite3_stmt *q = NULL;
    int rc = db_prep(db, err, &q, "SELECT DISTINCT user_id FROM submissions WHERE status = "
                     "'running' AND mode IN ('profile', 'sanitize')", "");
    while (rc == 0 && (rc = db_step(db, err, q)) == 1) {
        rc = 0;
        if (s->nbusy >= SNAP_MAX_BUSY)
            continue;
        if ((rc = db_grow((void **)&s->busy, &s->bcap, s->nbusy, sizeof *s->busy,
                          "users running tools", err)) != 0)
            break;
        s->busy[s->nbusy++] = sqlite3_column_int64(q, 0);
    }
    sqlite3_finalize(q);
    return rc;
}

static int is_busy(const struct snap *s, int64_t uid)
{
    for (int i = 0; i < s->nbusy; i++)
        if (s->busy[i] == uid)
            return 1;
    return 0;
}

/* The index of user uid in s, or -1. */
static int user_find(const struct snap *s, int64_t uid)
{
    for (int u = 0; u < s->nusers; u++)
        if (s->uids[u] == uid)
            return u;
    return -1;
}

/* The index of user uid in s, added with no usage when new. */
static int user_index(struct snap *s, int64_t uid, int *out, struct kj_err *err)
{
    int u = user_find(s, uid), rc;
    if (u >= 0) {
        *out = u;
        return 0;
    }
    if ((rc = db_grow((void **)&s->uids, &s->idcap, s->nusers, sizeof *s->uids, "queue users",
                      err)) != 0 ||
        (rc = db_grow((void **)&s->usage, &s->ucap, s->nusers, sizeof *s->usage, "queue users",
                      err)) != 0)
        return rc;
    s->uids[s->nusers] = uid;
    s->usage[s->nusers] = 0;
    *out = s->nusers++;
    return 0;
}

/* Inside a transaction: gpu's streak and estimates (defaults when none). */
static int state_load(struct db *db, const char *gpu, struct queue_state *st, struct kj_err *err)
{
    sqlite3_stmt *q = NULL;
    int rc = db_prep(db, err, &q, "SELECT last_class, streak, est_test_ms, est_ranked_ms FROM "
                     "queue_state WHERE gpu = ?", "t", gpu);
    queue_state_init(st);
    if (rc == 0 && (rc = db_step(db, err, q)) == 1) {
        st->last = sqlite3_column_int(q, 0) == QUEUE_RANKED ? QUEUE_RANKED : QUEUE_TEST;
        st->streak = sqlite3_column_int(q, 1);
        if (sqlite3_column_double(q, 2) > 0)
            st->est_ms[QUEUE_TEST] = sqlite3_column_double(q, 2);
        if (sqlite3_column_double(q, 3) > 0)
            st->est_ms[QUEUE_RANKED] = sqlite3_column_double(q, 3);
        rc = 0;
    }
    sqlite3_finalize(q);
    return rc;
}

static int state_store(struct db *db, const char *gpu, const struct queue_state *st,
                       struct kj_err *err)
{
    sqlite3_stmt *q = NULL;
    int rc = db_prep(db, err, &q, "INSERT OR REPLACE INTO queue_state (gpu, last_class, streak, "
                     "est_test_ms, est_ranked_ms) VALUES (?, ?, ?, ?, ?)", "tiidd", gpu,
                     (int64_t)st->last, (int64_t)st->streak, st->est_ms[QUEUE_TEST],
                     st->est_ms[QUEUE_RANKED]);
    if (rc == 0)
        rc = db_step(db, err, q);
    sqlite3_finalize(q);
    return rc;
}

/* Inside a transaction: the queued jobs of gpu that filter allows (NULL:
 * all), the decayed usage at now_ms and the time of the running jobs of
 * every user with a job of gpu queued (allowed or not: a filter changes
 * which jobs the rule may pick, never what it knows of the users), and
 * the rule's state. low: the rejudge jobs only, else the others only
 * (s->others counts the allowed jobs of the tier left out). */
static int snap_load(struct db *db, const char *gpu, const struct db_claim_filter *filter,
                     int low, int64_t now_ms, struct snap *s, struct kj_err *err)
{
    sqlite3_stmt *q = NULL;
    enum kj_mode mode;
    int rc, u;
    memset(s, 0, sizeof *s);
    if ((rc = state_load(db, gpu, &s->st, err)) != 0 || (rc = busy_load(db, s, err)) != 0)
        return rc;
    rc = db_prep(db, err, &q, "SELECT id, user_id, mode, rejudge_id IS NOT NULL FROM submissions "
                 "WHERE status = 'queued' AND gpu = ? ORDER BY id", "t", gpu);
    while (rc == 0 && (rc = db_step(db, err, q)) == 1) {
        if ((rc = db_col_mode(err, q, 2, &mode)) != 0 ||
            (rc = user_index(s, sqlite3_column_int64(q, 1), &u, err)) != 0)
            break;
        rc = 0;
        if (!db_claim_filter_allows(filter, sqlite3_column_int64(q, 0), mode))
            continue;
        if ((sqlite3_column_int(q, 3) != 0) != (low != 0)) { /* the other tier */
            s->others++;
            continue;
        }
        if ((rc = db_grow((void **)&s->jobs, &s->cap, s->n, sizeof *s->jobs, "queued jobs",
                          err)) != 0)
            break;
        s->jobs[s->n].id = sqlite3_column_int64(q, 0);
        s->jobs[s->n].user = u;
        s->jobs[s->n].cls = class_of(mode);
        s->jobs[s->n].tool = is_tool(mode);
        s->jobs[s->n].held = is_tool(mode) && db->queue_rule != QUEUE_FAIR_PREV &&
                             is_busy(s, sqlite3_column_int64(q, 1));
        s->n++;
        rc = 0;
    }
    sqlite3_finalize(q);
    q = NULL;
    if (rc != 0 || s->n == 0)
        return rc;
    rc = db_prep(db, err, &q, "SELECT user_id, usage_ms, at_ms FROM queue_usage WHERE gpu = ?",
                 "t", gpu);
    while (rc == 0 && (rc = db_step(db, err, q)) == 1) {
        rc = 0;
        if ((u = user_find(s, sqlite3_column_int64(q, 0))) >= 0)
            s->usage[u] += queue_decay(sqlite3_column_double(q, 1),
                                       now_ms - sqlite3_column_int64(q, 2));
    }
    sqlite3_finalize(q);
    q = NULL;
    if (rc != 0)
        return rc;
    /* Running jobs count as their time so far, at least their class's estimate. */
    rc = db_prep(db, err, &q, "SELECT user_id, mode, claimed_ms FROM submissions WHERE "
                 "status = 'running' AND gpu = ?", "t", gpu);
    while (rc == 0 && (rc = db_step(db, err, q)) == 1) {
        if ((rc = db_col_mode(err, q, 1, &mode)) != 0)
            break;
        if ((u = user_find(s, sqlite3_column_int64(q, 0))) >= 0) {
            double ran = sqlite3_column_type(q, 2) == SQLITE_NULL
                             ? 0 : (double)(now_ms - sqlite3_column_int64(q, 2));
            double est = s->st.est_ms[class_of(mode)];
            s->usage[u] += ran > est ? ran : est;
        }
        rc = 0;
    }
    sqlite3_finalize(q);
    return rc;
}

int db_claim_filter_allows(const struct db_claim_filter *filter, int64_t id, enum kj_mode m)
{
    if (filter == NULL)
        return 1;
    if (filter->modes != 0 && ((unsigned)m >= KJ_MODE_COUNT || !(filter->modes & (1u << m))))
        return 0;
    for (int i = 0; i < filter->nskip; i++)
        if (filter->skip[i] == id)
            return 0;
    return 1;
}

void db_queue_set_rule(struct db *db, enum queue_rule rule)
{
    pthread_mutex_lock(&db->mu);
    db->queue_rule = rule;
    pthread_mutex_unlock(&db->mu);
}

int db_queue_pick_locked(struct db *db, const char *gpu, const struct db_claim_filter *filter,
                         int64_t now_ms, int64_t *id, struct kj_err *err)
{
    struct snap s;
    int rc = snap_load(db, gpu, filter, 0, now_ms, &s, err), p;
    *id = 0;
    if (rc == 0 && s.n == 0) { /* no participant's job: the rejudge jobs' turn */
        snap_free(&s);
        rc = snap_load(db, gpu, filter, 1, now_ms, &s, err);
    }
    if (rc == 0 && s.n > 0) {
        p = queue_pick(db->queue_rule, s.jobs, (size_t)s.n, s.usage, s.nusers, &s.st);
        if (p >= 0 && KJ_ALWAYS(p < s.n)) { /* -1: every queued job is held */
            *id = s.jobs[p].id;
            queue_state_picked(&s.st, s.jobs[p].cls);
            rc = state_store(db, gpu, &s.st, err);
        }
    }
    snap_free(&s);
    return rc;
}

/* The position of test-mode job id (in all, the whole snapshot of gpu)
 * among the test-mode jobs alone, when a job of gpu runs (so a lane may
 * take it: see the top); 0 otherwise. */
static int lane_position_locked(struct db *db, const char *gpu, const struct snap *all,
                                int64_t id, int64_t *pos, struct kj_err *err)
{
    sqlite3_stmt *q = NULL;
    struct queue_job *tests;
    int n = 0, target = -1, rc, running = 0;
    *pos = 0;
    for (int i = 0; i < all->n; i++)
        if (all->jobs[i].id == id && all->jobs[i].cls != QUEUE_TEST)
            return 0;
    rc = db_prep(db, err, &q, "SELECT 1 FROM submissions WHERE status = 'running' AND gpu = ? "
                 "LIMIT 1", "t", gpu);
    if (rc == 0 && (rc = db_step(db, err, q)) == 1) {
        running = 1;
        rc = 0;
    }
    sqlite3_finalize(q);
    if (rc != 0 || !running)
        return rc;
    if ((tests = malloc((size_t)(all->n > 0 ? all->n : 1) * sizeof *tests)) == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory ordering %d queued jobs", all->n);
    for (int i = 0; i < all->n; i++)
        if (all->jobs[i].cls == QUEUE_TEST) {
            if (all->jobs[i].id == id)
                target = n;
            tests[n++] = all->jobs[i];
        }
    if (target >= 0)
        rc = queue_position(db->queue_rule, tests, (size_t)n, all->usage, all->nusers, &all->st,
                            (size_t)target, pos, err);
    free(tests);
    return rc;
}

int db_queue_position_locked(struct db *db, int64_t id, int64_t *pos, struct kj_err *err)
{
    sqlite3_stmt *q = NULL;
    char gpu[DB_MAX_NAME] = "";
    struct snap s;
    int low = 0;
    int rc = db_prep(db, err, &q, "SELECT gpu, rejudge_id IS NOT NULL FROM submissions WHERE "
                     "id = ? AND status = 'queued'", "i", id);
    *pos = 0;
    if (rc == 0 && (rc = db_step(db, err, q)) == 1) {
        db_col_text(q, 0, gpu, sizeof gpu);
        low = sqlite3_column_int(q, 1) != 0;
        rc = 0;
    }
    sqlite3_finalize(q);
    if (rc != 0 || gpu[0] == '\0')
        return rc;
    if ((rc = snap_load(db, gpu, NULL, low, db_now_ms(), &s, err)) == 0) { /* no filter */
        for (int i = 0; i < s.n; i++)
            if (s.jobs[i].id == id)
                rc = queue_position(db->queue_rule, s.jobs, (size_t)s.n, s.usage, s.nusers,
                                    &s.st, (size_t)i, pos, err);
        if (rc == 0 && low && *pos > 0) /* after every participant's job */
            *pos += s.others;
    }
    int64_t lane = 0;
    if (rc == 0 && *pos > 1 && (rc = lane_position_locked(db, gpu, &s, id, &lane, err)) == 0 &&
        lane > 0 && lane < *pos)
        *pos = lane;
    snap_free(&s);
    return rc;
}

int db_queue_charge_locked(struct db *db, int64_t id, int measured, struct kj_err *err)
{
    sqlite3_stmt *q = NULL;
    char gpu[DB_MAX_NAME] = "";
    int64_t uid = 0, claimed = -1, now_ms = db_now_ms();
    double usage = 0;
    enum kj_mode mode = KJ_MODE_TEST;
    struct queue_state st;
    int rc = db_prep(db, err, &q, "SELECT user_id, gpu, mode, claimed_ms FROM submissions "
                     "WHERE id = ?", "i", id);
    if (rc == 0 && (rc = db_step(db, err, q)) == 1) {
        uid = sqlite3_column_int64(q, 0);
        db_col_text(q, 1, gpu, sizeof gpu);
        if (sqlite3_column_type(q, 3) != SQLITE_NULL)
            claimed = sqlite3_column_int64(q, 3);
        rc = db_col_mode(err, q, 2, &mode);
    }
    sqlite3_finalize(q);
    q = NULL;
    if (rc != 0 || claimed < 0) /* claimed before version 9: nothing to charge */
        return rc;
    double run_ms = (double)(now_ms - claimed);
    if (run_ms < 0)
        run_ms = 0;
    rc = db_prep(db, err, &q, "SELECT usage_ms, at_ms FROM queue_usage WHERE gpu = ? AND "
                 "user_id = ?", "ti", gpu, uid);
    if (rc == 0 && (rc = db_step(db, err, q)) == 1) {
        usage = queue_decay(sqlite3_column_double(q, 0), now_ms - sqlite3_column_int64(q, 1));
        rc = 0;
    }
    sqlite3_finalize(q);
    q = NULL;
    if (rc == 0)
        rc = db_prep(db, err, &q, "INSERT OR REPLACE INTO queue_usage (gpu, user_id, usage_ms, "
                     "at_ms) VALUES (?, ?, ?, ?)", "tidi", gpu, uid, usage + run_ms, now_ms);
    if (rc == 0)
        rc = db_step(db, err, q);
    sqlite3_finalize(q);
    /* A tool's run is charged, not folded into the ranked class's estimate. */
    if (rc == 0 && measured && !is_tool(mode) && (rc = state_load(db, gpu, &st, err)) == 0) {
        queue_state_measured(&st, class_of(mode), run_ms);
        rc = state_store(db, gpu, &st, err);
    }
    return rc;
}
