/*
 * rank.c - rank numbers for GET .../rankings.
 *
 * A pure function over the scores of rows that db_rank_rows() already
 * ordered; called by boards.c and tested in tests/unit/test_rank.c.
 */
#include "rank.h"

void rank_assign(const double *scores, int n, int *ranks)
{
    for (int i = 0; i < n; i++)
        ranks[i] = (i > 0 && scores[i] == scores[i - 1]) ? ranks[i - 1] : i + 1;
}
