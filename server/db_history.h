/*
 * db_history.h - how a board's ranking got where it is: every ranked
 * submission that beat its user's own best so far, in the order they
 * were submitted; and a submission's own history: the results it had
 * before a rejudge replaced them (db_rejudge.h, table result_history).
 *
 * api_history.c reads these rows for GET /leaderboards/{name}/history and
 * derives the board's record line and the top users' progress from them.
 * Like db.h: the function takes the connection's mutex, copies what it
 * reads into caller-owned memory and returns 0 or a negative KJ_E* with
 * err filled.
 */
#ifndef KJ_DB_HISTORY_H
#define KJ_DB_HISTORY_H

#include <stdint.h>
#include "db.h"

/* One submission that improved its user's best score on a board and GPU type. */
struct db_history_row {
    int64_t submission_id;
    char user[DB_MAX_NAME];
    double score_ns;
    int64_t created_at;   /* unix seconds */
};

/* The ranked submissions (as the rankings count them: leaderboard mode,
 * accepted, a positive score, neither disqualified nor withdrawn) of board
 * on gpu whose score is below every earlier ranked one of the same user
 * (the user's first one included), oldest first (created_at, then id).
 * *out is a new array of *n rows (caller frees with free()). */
int db_history_rows(struct db *db, const char *board, const char *gpu,
                    struct db_history_row **out, int *n, struct kj_err *err);

/* One earlier result of a submission, replaced by a rejudge's. */
struct db_result_old {
    int seq;                       /* 1 = its first result */
    enum kj_verdict verdict;
    int has_score;
    double score_ns;
    char timing_protocol[16];      /* "" when the result had no score */
    int timing_version;
    int64_t finished_at;           /* when it was judged (unix seconds) */
    int64_t replaced_at;           /* when the rejudge replaced it */
    int64_t rejudge_id;
    char *result;                  /* owned: the result's JSON text (NULL: none);
                                      db_result_old_free */
};

/* Submission id's earlier results, oldest first. *out is a new array of
 * *n rows (caller frees with db_result_old_free). */
int db_sub_history(struct db *db, int64_t id, struct db_result_old **out, int *n,
                   struct kj_err *err);
void db_result_old_free(struct db_result_old *rows, int n);

#endif
