/*
 * queue.c - which queued job a runner gets next: fair share by recent GPU
 * time, with a bound on how long one class of job can wait for the other.
 *
 * The rule (QUEUE_FAIR, the default; kjudge-server serve --queue-rule):
 *
 *   1. Class bound. Jobs are test-mode (QUEUE_TEST) or timed (benchmark and
 *      leaderboard: QUEUE_RANKED). After QUEUE_CLASS_BOUND picks of one
 *      class in a row while the other class has queued jobs, the next pick
 *      is of the other class.
 *   2. Fair share. Among the users with a queued job (of an allowed
 *      class), the one with the least recent GPU time goes first: each
 *      finished job charges its user its run time (claim to result),
 *      decayed with a half-life of QUEUE_HALF_LIFE_MS, and each job the
 *      user has running now counts as well (its time so far, at least the
 *      estimate of its class), so two GPUs do not both go to the same user
 *      before the first job is charged.
 *   3. That user's oldest job (of an allowed class) is picked. Equal usage
 *      goes to the user whose job is oldest, so with no history the rule is
 *      first-in, first-out.
 *
 * Why this rule. DOMjudge judges submissions in arrival order but lowers
 * the judging priority of a team's submission while the team already has
 * work queued, so one team cannot hold the judges; Slurm's fair-share factor ranks
 * accounts by their usage decayed with a half-life (PriorityDecayHalfLife)
 * against their share. Here every user has an equal share, so the factor
 * reduces to "least decayed usage first". Usage, not the count of queued
 * jobs, is the measure because a template bomb that holds the runner for
 * its whole compile limit costs sixty test jobs: counting jobs would let
 * it through as often as a one-second kernel. The half-life of ten minutes
 * forgets a flood within the half hour that matters before a deadline yet
 * remembers it across a few minutes of bursts. The class bound is what
 * keeps ranked jobs (minutes of timed sampling each) from waiting behind a
 * test flood spread over many users, and a flood of ranked jobs from
 * keeping every test verdict back: each class waiting gets at least one
 * pick in QUEUE_CLASS_BOUND + 1. Within a user, oldest first keeps the
 * order a participant expects of their own work.
 *
 * Queue positions. The position of a job is 1 + the number of jobs the
 * rule would pick before it if nothing new arrived: queue_position()
 * replays the rule on a copy of the usage, charging each simulated pick
 * the measured average run time of its class (queue_state.est_ms). It
 * assumes the running jobs end in that order; a job's position can still
 * grow when a user with less usage submits, which is the rule working.
 *
 * One tool job per user. A profile or sanitize job holds a GPU for up to
 * its tool's limit (minutes), so a user with one running has their other
 * tool jobs held (queue_job.held): never picked until it ends, whichever
 * the rule, so two users' tool floods take at most two GPUs and the rest
 * keep turning over (QUEUE_FAIR_PREV, "fair-prev", is the fair rule
 * without it, for comparison: db_queue.c holds nothing under it). Tool
 * jobs are of the ranked class for the class
 * bound, and their run time is charged to their user's usage like any
 * job's (db_queue.c).
 *
 * QUEUE_FIFO (oldest job first, no class bound) stays for comparison
 * (bench/bench_queue.py measures both).
 */
#include "queue.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NONE ((size_t)-1)

int queue_rule_parse(const char *s, enum queue_rule *out)
{
    if (s != NULL && strcmp(s, "fair") == 0)
        *out = QUEUE_FAIR;
    else if (s != NULL && strcmp(s, "fifo") == 0)
        *out = QUEUE_FIFO;
    else if (s != NULL && strcmp(s, "fair-prev") == 0)
        *out = QUEUE_FAIR_PREV;
    else
        return -1;
    return 0;
}

const char *queue_rule_name(enum queue_rule r)
{
    return r == QUEUE_FIFO ? "fifo" : r == QUEUE_FAIR_PREV ? "fair-prev" : "fair";
}

double queue_decay(double usage_ms, int64_t elapsed_ms)
{
    if (elapsed_ms <= 0)
        return usage_ms;
    return usage_ms * exp2(-(double)elapsed_ms / QUEUE_HALF_LIFE_MS);
}

void queue_state_init(struct queue_state *st)
{
    memset(st, 0, sizeof *st);
    st->last = QUEUE_TEST;
    st->streak = 0;
    st->est_ms[QUEUE_TEST] = QUEUE_EST_TEST_MS;
    st->est_ms[QUEUE_RANKED] = QUEUE_EST_RANKED_MS;
}

void queue_state_picked(struct queue_state *st, enum queue_class c)
{
    if (st->streak > 0 && st->last == c) {
        if (st->streak < 1000000) /* only compared with the bound */
            st->streak++;
    } else {
        st->last = c;
        st->streak = 1;
    }
}

void queue_state_measured(struct queue_state *st, enum queue_class c, double run_ms)
{
    if (run_ms < 1) /* a clock step or a result in the claim's millisecond */
        run_ms = 1;
    /* An exponential average over about the last five jobs of the class. */
    st->est_ms[c] = st->est_ms[c] * 0.8 + run_ms * 0.2;
}

/* ------------------------------------------------------------------ */
/* The replay                                                          */
/* ------------------------------------------------------------------ */

/* A user's jobs are in three lists: test, timed and tool (the last two of
 * class QUEUE_RANKED), so that a user's held tool jobs (queue_job.held)
 * never hide their timed ones. */
#define NLISTS 3

static int list_of(const struct queue_job *j)
{
    return j->cls == QUEUE_TEST ? 0 : j->tool ? 2 : 1;
}

/* The queue as the rule walks it: per user and list, the jobs not yet
 * picked, oldest first (head, and next[] through the jobs). */
struct sim {
    const struct queue_job *jobs;
    size_t n;
    int nusers;
    size_t *next;            /* owned: next job of the same user and class */
    size_t *head;            /* owned: nusers * QUEUE_NCLASS first jobs */
    double *use;             /* owned: the usage, charged as picks are replayed */
    size_t fifo;             /* the oldest job not picked (FIFO) */
    unsigned char *taken;    /* owned: jobs picked */
    size_t waiting[QUEUE_NCLASS]; /* jobs not picked and pickable, per class */
    size_t held;             /* held jobs not picked */
    int release;             /* 1: held jobs may be picked (nothing else is left) */
    struct queue_state st;
};

static void sim_free(struct sim *s)
{
    free(s->next);
    free(s->head);
    free(s->use);
    free(s->taken);
}

static int sim_init(struct sim *s, const struct queue_job *jobs, size_t n, const double *usage,
                    int nusers, const struct queue_state *st, struct kj_err *err)
{
    size_t nh = (size_t)(nusers > 0 ? nusers : 1) * NLISTS, *tail;
    memset(s, 0, sizeof *s);
    s->jobs = jobs;
    s->n = n;
    s->nusers = nusers;
    s->st = *st;
    s->next = malloc((n > 0 ? n : 1) * sizeof *s->next);
    s->head = malloc(nh * sizeof *s->head);
    s->use = calloc((size_t)(nusers > 0 ? nusers : 1), sizeof *s->use);
    s->taken = calloc(n > 0 ? n : 1, 1);
    tail = malloc(nh * sizeof *tail);
    if (s->next == NULL || s->head == NULL || s->use == NULL || s->taken == NULL || tail == NULL) {
        free(tail);
        sim_free(s);
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory ordering %zu queued jobs", n);
    }
    for (size_t k = 0; k < nh; k++)
        s->head[k] = tail[k] = NONE;
    for (int u = 0; u < nusers; u++)
        s->use[u] = usage[u];
    for (size_t i = 0; i < n; i++) {
        size_t k = (size_t)jobs[i].user * NLISTS + (size_t)list_of(&jobs[i]);
        KJ_ASSERT(jobs[i].user >= 0 && jobs[i].user < nusers && jobs[i].cls < QUEUE_NCLASS);
        s->next[i] = NONE;
        if (tail[k] == NONE)
            s->head[k] = i;
        else
            s->next[tail[k]] = i;
        tail[k] = i;
        if (jobs[i].held)
            s->held++;
        else
            s->waiting[jobs[i].cls]++;
    }
    free(tail);
    return 0;
}

/* 1 when job i may be picked now. */
static int sim_pickable(const struct sim *s, size_t i)
{
    return !s->taken[i] && (!s->jobs[i].held || s->release);
}

/* The job the rule picks next from what is left, or NONE. */
static size_t sim_choose(const struct sim *s, enum queue_rule rule)
{
    size_t best = NONE;
    int allowed[QUEUE_NCLASS] = {1, 1};
    if (rule == QUEUE_FIFO) {
        size_t i = s->fifo;
        while (i < s->n && !sim_pickable(s, i))
            i++;
        return i < s->n ? i : NONE;
    }
    /* Rule 1: the class bound. */
    enum queue_class other = s->st.last == QUEUE_TEST ? QUEUE_RANKED : QUEUE_TEST;
    if (s->st.streak >= QUEUE_CLASS_BOUND && s->waiting[other] > 0)
        allowed[s->st.last] = 0;
    /* Rules 2 and 3: the least used user's oldest allowed job. */
    for (int u = 0; u < s->nusers; u++) {
        size_t cand = NONE;
        for (int l = 0; l < NLISTS; l++) {
            size_t h = s->head[(size_t)u * NLISTS + (size_t)l];
            if (h != NONE && allowed[s->jobs[h].cls] && sim_pickable(s, h) &&
                (cand == NONE || h < cand))
                cand = h;
        }
        if (cand == NONE)
            continue;
        if (best == NONE || s->use[u] < s->use[s->jobs[best].user] ||
            (s->use[u] == s->use[s->jobs[best].user] && cand < best))
            best = cand;
    }
    return best;
}

/* Replay the pick of job i: unlink it, charge its user, move the state. */
static void sim_take(struct sim *s, size_t i)
{
    const struct queue_job *j = &s->jobs[i];
    size_t k = (size_t)j->user * NLISTS + (size_t)list_of(j);
    KJ_ASSERT(!s->taken[i] && s->head[k] == i); /* a user's jobs of a list go oldest first */
    s->head[k] = s->next[i];
    s->taken[i] = 1;
    if (j->held && !s->release)
        s->held--;
    else
        s->waiting[j->cls]--;
    s->use[j->user] += s->st.est_ms[j->cls];
    queue_state_picked(&s->st, j->cls);
    if (i == s->fifo)
        s->fifo++;
}

/* ------------------------------------------------------------------ */
/* API                                                                 */
/* ------------------------------------------------------------------ */

int queue_pick(enum queue_rule rule, const struct queue_job *jobs, size_t n,
               const double *usage, int nusers, const struct queue_state *st)
{
    struct sim s;
    struct kj_err err;
    size_t i;
    if (n == 0)
        return -1;
    /* Out of memory: the oldest job not held, which is never wrong, only less fair. */
    if (sim_init(&s, jobs, n, usage, nusers, st, &err) != 0) {
        for (i = 0; i < n; i++)
            if (!jobs[i].held)
                return (int)i;
        return -1;
    }
    i = sim_choose(&s, rule);
    sim_free(&s);
    return i != NONE ? (int)i : -1;
}

int queue_position(enum queue_rule rule, const struct queue_job *jobs, size_t n,
                   const double *usage, int nusers, const struct queue_state *st,
                   size_t target, int64_t *pos, struct kj_err *err)
{
    struct sim s;
    int rc;
    *pos = 0;
    if (target >= n)
        return 0;
    if ((rc = sim_init(&s, jobs, n, usage, nusers, st, err)) != 0)
        return rc;
    for (int64_t k = 1; k <= (int64_t)n; k++) {
        size_t i = sim_choose(&s, rule);
        if (i == NONE && s.held > 0 && !s.release) { /* only held jobs are left */
            s.release = 1;
            for (size_t h = 0; h < n; h++)
                if (!s.taken[h] && jobs[h].held)
                    s.waiting[jobs[h].cls]++;
            s.held = 0; /* counted as waiting from now */
            i = sim_choose(&s, rule);
        }
        if (KJ_NEVER(i == NONE))
            break;
        if (i == target) {
            *pos = k;
            break;
        }
        sim_take(&s, i);
    }
    sim_free(&s);
    return 0;
}
