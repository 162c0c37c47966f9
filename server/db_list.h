/*
 * db_list.h - reads for listings and the admin's overview, and the owner's
 * withdrawal of a submission.
 *
 * api_sublist.c pages through submissions with filters (db_sub_find) and
 * withdraws one (db_sub_withdraw); api_stats.c lists the users with their
 * submission counts (db_user_list) and counts submissions, queues and
 * runners (db_stats). Like db.h: every function takes the connection's
 * mutex, copies what it reads into caller-owned memory and returns 0 or a
 * negative KJ_E* with err filled.
 */
#ifndef KJ_DB_LIST_H
#define KJ_DB_LIST_H

#include <stdint.h>
#include "db.h"

/* Which submissions db_sub_find returns. Strings are borrowed for the call;
 * "" (or NULL) means any. */
struct db_sub_filter {
    int64_t user_id;         /* 0 = every user */
    const char *leaderboard;
    const char *gpu;
    int has_mode;            /* 0 = any mode */
    enum kj_mode mode;
    int has_verdict;         /* 0 = any verdict */
    enum kj_verdict verdict;
    int64_t before_id;       /* only ids below this; 0 = from the newest */
};

/* At most limit submissions matching f, newest (highest id) first, without
 * blobs. Paging by id keeps pages stable while rows are inserted: the next
 * page is before_id = the last row's id. *out is a new array of *n rows;
 * free with db_sub_list_free(). */
int db_sub_find(struct db *db, const struct db_sub_filter *f, int limit, struct db_sub **out,
                int *n, struct kj_err *err);

/* Mark submission id withdrawn at now (unix seconds) unless it already is.
 * *at gets the time it was withdrawn, *already 1 when that was before this
 * call. The caller has checked who may withdraw it and that it is done
 * (db.h: only a done row may be withdrawn). KJ_ENOTFOUND when no such row. */
int db_sub_withdraw(struct db *db, int64_t id, int64_t now, int64_t *at, int *already,
                    struct kj_err *err);

/* One account with counts of its submissions (GET /api/v1/users). */
struct db_user_row {
    char name[DB_MAX_NAME];
    char role[16];
    int banned;
    int64_t created_at;         /* unix seconds */
    int64_t submissions;        /* all of them */
    int64_t accepted;           /* verdict accepted */
    int64_t pending;            /* queued or running */
    int64_t last_submission_at; /* unix seconds, 0 = none */
};

/* Every user, by name. *out is a new array of *n rows (caller frees with free()). */
int db_user_list(struct db *db, struct db_user_row **out, int *n, struct kj_err *err);

/* Submissions of one (board, mode, outcome); outcome is the verdict once
 * done, else the status ("queued", "running"). */
struct db_stat_group {
    char leaderboard[DB_MAX_NAME];
    enum kj_mode mode;
    char outcome[24];
    int64_t count;
};

/* The queue of one GPU type. */
struct db_stat_queue {
    char gpu[DB_MAX_NAME];
    int64_t queued, running;
    int64_t oldest_queued_at;   /* created_at of the oldest queued job, 0 = none queued */
};

/* A runner as last seen, for one GPU type. */
struct db_stat_runner {
    char name[DB_MAX_NAME];
    char gpu[DB_MAX_NAME];
    int64_t last_seen;          /* unix seconds */
    int busy;                   /* holds a running job */
};

/* Everything GET /api/v1/stats shows. Arrays owned; free with db_stats_free(). */
struct db_stats {
    int64_t total, disqualified, withdrawn, users;
    struct db_stat_group *groups;   /* ordered by board, mode, outcome */
    int ngroups;
    struct db_stat_queue *queues;   /* GPU types with a queued or running job, by name */
    int nqueues;
    struct db_stat_runner *runners; /* by GPU type, then name */
    int nrunners;
};

/* Fill *out (zeroed first) in one read transaction. */
int db_stats(struct db *db, struct db_stats *out, struct kj_err *err);
/* Free the arrays of s and zero it; NULL is ignored. */
void db_stats_free(struct db_stats *s);

#endif
