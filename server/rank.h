/*
 * rank.h - turning ranking rows into ranks.
 *
 * boards.c reads the best row per user from db_rank_rows() (already
 * ordered by score, then time, with each row's per-shape medians as
 * numbers) and calls rank_ties to number them, with ties within the
 * board's resolution on that GPU type.
 */
#ifndef KJ_RANK_H
#define KJ_RANK_H

#include <stdint.h>

/* scores[0..n) ascending; ranks[i] = 1 + number of scores strictly better,
 * so equal scores share a rank ("1, 2, 2, 4"). */
void rank_assign(const double *scores, int n, int *ranks);

/* Ranks with the board's resolution on this GPU (docs/timing.md). rows
 * 0..n-1 come ordered by score (ascending), then time of submission;
 * scores[i], times[i] and ids[i] (its submission id) are row i's. Rows
 * form tie groups in that order: a row whose score is less than res_pct
 * percent above the best score of the current group (or equal to it)
 * joins that group, any other starts a new one; res_pct <= 0 ties equal
 * scores only. Every row of a group gets the group's rank, 1 + the number
 * of rows in better groups ("1, 2, 2, 4"), and inside a group rows are
 * listed by time of submission (earliest first; equal times by id, then in
 * their given order). Out: order[k] is the row shown k-th, ranks[k] its
 * rank, tied[k] 1 when its group has another row. */
void rank_ties(const double *scores, const int64_t *times, const int64_t *ids, int n,
               double res_pct, int *order, int *ranks, int *tied);

#endif
