/*
 * queue.h - the rule that picks the next queued job for a GPU type, and
 * the order (queue positions) that rule implies.
 *
 * Pure computation on arrays the caller fills: db_queue.c loads the queued
 * jobs, each user's decayed GPU time and the class streak from the
 * database, calls queue_pick() inside the claim's transaction and
 * queue_position() for GET /submissions/{id} and the event stream. No
 * SQLite, no locks, no clock here, so the unit tests drive the rule
 * directly (tests/unit/test_queue.c). The rule itself is defended at the
 * top of queue.c.
 */
#ifndef KJ_QUEUE_H
#define KJ_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "kj_err.h"

#define QUEUE_HALF_LIFE_MS (10 * 60 * 1000) /* decayed usage halves in 10 minutes */
#define QUEUE_CLASS_BOUND 3        /* picks of one class in a row while the other waits */
#define QUEUE_EST_TEST_MS 1000.0   /* a test job's run time before any was measured */
#define QUEUE_EST_RANKED_MS 10000.0/* a benchmark or leaderboard job's, likewise */

enum queue_rule {
    QUEUE_FAIR = 0, /* least recent GPU time first, class bound (default) */
    QUEUE_FIFO,     /* oldest job first: for comparison */
    QUEUE_FAIR_PREV /* fair, but no tool job held (any number per user at a time): the
                     * rule before one tool job per user, for comparison (bench_queue.py) */
};

/* Test-mode jobs are one class, benchmark and leaderboard jobs (timed) the other. */
enum queue_class { QUEUE_TEST = 0, QUEUE_RANKED = 1, QUEUE_NCLASS = 2 };

/* One queued job. jobs[] arrays are in id order (oldest first). */
struct queue_job {
    int64_t id;
    int user;                /* index into the usage array */
    enum queue_class cls;
    int tool;                /* 1: a profile or sanitize job (class QUEUE_RANKED) */
    int held;                /* 1: a tool job whose user has a tool job running: not picked
                              * now (one tool job per user at a time) */
};

/* What the rule remembers between picks for one GPU type. */
struct queue_state {
    enum queue_class last;   /* class of the last pick */
    int streak;              /* picks of that class in a row (0: none yet) */
    double est_ms[QUEUE_NCLASS]; /* expected run time of a job of each class (> 0) */
};

/* "fair" / "fifo" / "fair-prev" -> rule: 0, or -1 when s names none. */
int queue_rule_parse(const char *s, enum queue_rule *out);
const char *queue_rule_name(enum queue_rule r);

/* usage_ms decayed over elapsed_ms by the half-life (elapsed < 0 counts as 0). */
double queue_decay(double usage_ms, int64_t elapsed_ms);

/* A fresh state: no streak, the default estimates. */
void queue_state_init(struct queue_state *st);
/* Note that a job of class c was picked. */
void queue_state_picked(struct queue_state *st, enum queue_class c);
/* Fold a finished job's run time into the estimate of its class. */
void queue_state_measured(struct queue_state *st, enum queue_class c, double run_ms);

/* The index in jobs[0..n) that rule picks next, or -1 when n is 0 or
 * every job is held (queue_job.held).
 * usage[u] is user u's decayed GPU time (ms) with its running jobs
 * counted; nusers bounds every jobs[i].user. */
int queue_pick(enum queue_rule rule, const struct queue_job *jobs, size_t n,
               const double *usage, int nusers, const struct queue_state *st);

/* The 1-based position of jobs[target]: 1 + the number of jobs the rule
 * would pick before it if nothing new arrived and each pick charged its
 * user the estimate of its class. Held jobs come once nothing else is
 * left (their users' running tool jobs are assumed to end by then).
 * *pos = 0 when target is out of range.
 * KJ_ENOMEM when the work arrays cannot be had. */
int queue_position(enum queue_rule rule, const struct queue_job *jobs, size_t n,
                   const double *usage, int nusers, const struct queue_state *st,
                   size_t target, int64_t *pos, struct kj_err *err);

#endif
