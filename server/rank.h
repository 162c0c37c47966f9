/*
 * rank.h - turning ranking rows into ranks.
 *
 * boards.c reads the best row per user from db_rank_rows() (already
 * ordered by score, then time, with each row's per-shape medians as
 * numbers) and calls rank_assign to number them.
 */
#ifndef KJ_RANK_H
#define KJ_RANK_H

/* scores[0..n) ascending; ranks[i] = 1 + number of scores strictly better,
 * so equal scores share a rank ("1, 2, 2, 4"). */
void rank_assign(const double *scores, int n, int *ranks);

#endif
