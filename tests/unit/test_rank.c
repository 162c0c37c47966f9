/*
 * test_rank.c - unit tests for server/rank.c.
 *
 * Shared ranks for equal scores ("1, 2, 2, 4"), the empty case and a
 * single row; tie groups within a resolution, led by their best score and
 * listed by time of submission. The per-shape medians are stored numbers
 * (db_rank.c), which test_db.c checks.
 */
#define KT_MAIN
#include "kt.h"

#include <stdint.h>

#include "rank.h"

static void test_assign(void)
{
    double s[] = {1.0, 2.0, 2.0, 3.0, 3.0, 3.0, 7.5};
    int r[7], want[] = {1, 2, 2, 4, 4, 4, 7};
    rank_assign(s, 7, r);
    for (int i = 0; i < 7; i++)
        KT_CHECK(r[i] == want[i], "rank[%d] = %d, want %d", i, r[i], want[i]);
    r[0] = -1;
    rank_assign(s, 0, r);
    KT_CHECK(r[0] == -1, "empty input writes nothing");
    double one = 5.0;
    rank_assign(&one, 1, r);
    KT_CHECK(r[0] == 1, "single row");
}

/* Ties within the resolution, the group led by its best score, listed by time. */
static void test_ties(void)
{
    /* Scores in rank order (then time): 100, 100.3, 100.6, 101, 101, 103, 200. */
    double s[] = {100.0, 100.3, 100.6, 101.0, 101.0, 103.0, 200.0};
    int64_t t[] = {50, 10, 40, 30, 20, 5, 1}, id7[] = {1, 2, 3, 4, 5, 6, 7};
    int order[7], ranks[7], tied[7];
    /* 0.5 %: {100, 100.3} (100.6 is 0.6 % above 100), {100.6, 101, 101} (101 is
     * 0.398 % above 100.6), {103}, {200}. */
    rank_ties(s, t, id7, 7, 0.5, order, ranks, tied);
    int want_order[] = {1, 0, 4, 3, 2, 5, 6}, want_rank[] = {1, 1, 3, 3, 3, 6, 7};
    int want_tied[] = {1, 1, 1, 1, 1, 0, 0};
    for (int k = 0; k < 7; k++)
        KT_CHECK(order[k] == want_order[k] && ranks[k] == want_rank[k] &&
                 tied[k] == want_tied[k], "0.5 %%: row %d: order %d rank %d tied %d", k,
                 order[k], ranks[k], tied[k]);
    /* Not measured: only equal scores tie, in time order. */
    rank_ties(s, t, id7, 7, 0, order, ranks, tied);
    int o0[] = {0, 1, 2, 4, 3, 5, 6}, r0[] = {1, 2, 3, 4, 4, 6, 7}, t0[] = {0, 0, 0, 1, 1, 0, 0};
    for (int k = 0; k < 7; k++)
        KT_CHECK(order[k] == o0[k] && ranks[k] == r0[k] && tied[k] == t0[k],
                 "no resolution: row %d: order %d rank %d tied %d", k, order[k], ranks[k],
                 tied[k]);
    /* "Closer than": exactly the resolution apart is not a tie. */
    double e[] = {100.0, 100.5};
    int64_t te[] = {2, 1};
    rank_ties(e, te, te, 2, 0.5, order, ranks, tied);
    KT_CHECK(order[0] == 0 && ranks[1] == 2 && !tied[0] && !tied[1], "0.5 %% apart: no tie");
    /* Equal times (one-second clock): by submission id, then as given; one row; none. */
    double f[] = {10.0, 10.01, 10.02};
    int64_t tf[] = {7, 7, 7}, idf[] = {9, 4, 9};
    rank_ties(f, tf, idf, 3, 1.0, order, ranks, tied);
    KT_CHECK(order[0] == 1 && order[1] == 0 && order[2] == 2 && ranks[2] == 1 && tied[2],
             "equal times: by id, stable: %d %d %d", order[0], order[1], order[2]);
    rank_ties(f, tf, idf, 1, 1.0, order, ranks, tied);
    KT_CHECK(order[0] == 0 && ranks[0] == 1 && !tied[0], "single row");
    rank_ties(f, tf, idf, 0, 1.0, order, ranks, tied);
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    KT_RUN(test_assign());
    KT_RUN(test_ties());
    return kt_done("test_rank");
}
