/*
 * rank.c - rank numbers for GET .../rankings.
 *
 * Pure functions over the scores (and times of submission) of rows that
 * db_rank_rows() already ordered; called by boards.c and tested in
 * tests/unit/test_rank.c.
 */
#include "rank.h"

void rank_assign(const double *scores, int n, int *ranks)
{
    for (int i = 0; i < n; i++)
        ranks[i] = (i > 0 && scores[i] == scores[i - 1]) ? ranks[i - 1] : i + 1;
}

/* 1 when row a was submitted after row b. */
static int rank_later(const int64_t *times, const int64_t *ids, int a, int b)
{
    return times[a] > times[b] || (times[a] == times[b] && ids[a] > ids[b]);
}

void rank_ties(const double *scores, const int64_t *times, const int64_t *ids, int n,
               double res_pct, int *order, int *ranks, int *tied)
{
    for (int start = 0, end; start < n; start = end) {
        double lead = scores[start];
        for (end = start + 1; end < n; end++) {
            double s = scores[end];
            if (!(s == lead || (res_pct > 0 && (s - lead) < res_pct / 100.0 * lead)))
                break;
        }
        /* The group is rows start..end-1: by time, stably (insertion sort). */
        for (int k = start; k < end; k++) {
            int row = k, at = k;
            while (at > start && rank_later(times, ids, order[at - 1], row)) {
                order[at] = order[at - 1];
                at--;
            }
            order[at] = row;
        }
        for (int k = start; k < end; k++) {
            ranks[k] = start + 1;
            tied[k] = end - start > 1;
        }
    }
}
