/*
 * rank.h - turning ranking rows into ranks and per-shape times.
 *
 * api_leaderboards.c reads the best row per user from db_rank_rows()
 * (already ordered by score, then time) and calls these pure functions to
 * number them and to pull the per-shape medians out of each stored result.
 */
#ifndef KJ_RANK_H
#define KJ_RANK_H

#include <cjson/cJSON.h>

/* scores[0..n) ascending; ranks[i] = 1 + number of scores strictly better,
 * so equal scores share a rank ("1, 2, 2, 4"). */
void rank_assign(const double *scores, int n, int *ranks);

/* [{"shape": {...}, "median_ns": x}, ...] from a stored result's
 * "benchmarks" array (result_json may be NULL or malformed: empty array).
 * Returns a new array the caller owns (cJSON_Delete), NULL only on OOM. */
cJSON *rank_shapes(const char *result_json);

#endif
