/*
 * test_rank.c - unit tests for server/rank.c.
 *
 * Shared ranks for equal scores ("1, 2, 2, 4"), the empty case and a
 * single row. The per-shape medians are stored numbers (db_rank.c), which
 * test_db.c checks.
 */
#define KT_MAIN
#include "kt.h"

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

int main(void)
{
    test_assign();
    return kt_done("test_rank");
}
