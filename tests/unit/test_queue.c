/*
 * test_queue.c - unit tests for the pick rule of server/queue.c.
 *
 * Fair share (least decayed usage first, oldest job of that user, ties to
 * the oldest job), the class bound both ways (a test flood cannot starve a
 * ranked job, nor a ranked flood a test job), FIFO, the decay's
 * half-life, the state's streak and estimates, queue positions that
 * agree with the picks replayed one by one, and held tool jobs (one per
 * user at a time) never picked and counted last.
 */
#define KT_MAIN
#include "kt.h"

#include <math.h>
#include <string.h>

#include "queue.h"

static struct queue_job J(int64_t id, int user, enum queue_class c)
{
    struct queue_job j = {id, user, c, 0, 0};
    return j;
}

static void test_parse_decay(void)
{
    enum queue_rule r = QUEUE_FIFO;
    KT_CHECK(queue_rule_parse("fair", &r) == 0 && r == QUEUE_FAIR, "fair parses");
    KT_CHECK(queue_rule_parse("fifo", &r) == 0 && r == QUEUE_FIFO, "fifo parses");
    KT_CHECK(queue_rule_parse("FAIR", &r) == -1 && queue_rule_parse("", &r) == -1 &&
             queue_rule_parse(NULL, &r) == -1 && r == QUEUE_FIFO, "others refused, unchanged");
    KT_CHECK(strcmp(queue_rule_name(QUEUE_FAIR), "fair") == 0 &&
             strcmp(queue_rule_name(QUEUE_FIFO), "fifo") == 0, "names");
    KT_CHECK(fabs(queue_decay(1000, QUEUE_HALF_LIFE_MS) - 500) < 1e-6, "one half-life halves");
    KT_CHECK(fabs(queue_decay(1000, 3 * QUEUE_HALF_LIFE_MS) - 125) < 1e-6, "three: an eighth");
    KT_CHECK(queue_decay(1000, 0) == 1000 && queue_decay(1000, -5) == 1000, "no time, no decay");
}

static void test_state(void)
{
    struct queue_state st;
    queue_state_init(&st);
    KT_CHECK(st.streak == 0 && st.est_ms[QUEUE_TEST] == QUEUE_EST_TEST_MS &&
             st.est_ms[QUEUE_RANKED] == QUEUE_EST_RANKED_MS, "fresh state");
    queue_state_picked(&st, QUEUE_RANKED);
    queue_state_picked(&st, QUEUE_RANKED);
    KT_CHECK(st.last == QUEUE_RANKED && st.streak == 2, "streak of two ranked");
    queue_state_picked(&st, QUEUE_TEST);
    KT_CHECK(st.last == QUEUE_TEST && st.streak == 1, "another class restarts it");
    queue_state_measured(&st, QUEUE_TEST, 500);
    KT_CHECK(fabs(st.est_ms[QUEUE_TEST] - 900) < 1e-9, "estimate moves a fifth of the way: %g",
             st.est_ms[QUEUE_TEST]);
    queue_state_measured(&st, QUEUE_TEST, -20);
    KT_CHECK(st.est_ms[QUEUE_TEST] > 0, "a negative run time counts as 1 ms");
}

static void test_fair_pick(void)
{
    struct queue_state st;
    struct queue_job q[6] = {J(10, 0, QUEUE_TEST), J(11, 0, QUEUE_TEST), J(12, 0, QUEUE_TEST),
                             J(13, 1, QUEUE_TEST), J(14, 2, QUEUE_TEST), J(15, 1, QUEUE_TEST)};
    double use[3] = {50000, 2000, 2000};
    queue_state_init(&st);
    KT_CHECK(queue_pick(QUEUE_FAIR, q, 0, use, 3, &st) == -1, "empty queue: none");
    KT_CHECK(queue_pick(QUEUE_FIFO, q, 6, use, 3, &st) == 0, "fifo: the oldest");
    KT_CHECK(queue_pick(QUEUE_FAIR, q, 6, use, 3, &st) == 3,
             "fair: users 1 and 2 tie; user 1's job 13 is older than user 2's 14");
    use[2] = 1999;
    KT_CHECK(queue_pick(QUEUE_FAIR, q, 6, use, 3, &st) == 4, "fair: user 2 has least usage");
    double none[3] = {0, 0, 0};
    KT_CHECK(queue_pick(QUEUE_FAIR, q, 6, none, 3, &st) == 0, "no history: first-in, first-out");
}

/* Replay picks one by one (applying the same charge the position replay
 * uses) and check each job's position agrees with its turn. */
static void check_positions(enum queue_rule rule, const struct queue_job *q, size_t n,
                            const double *use0, int nusers, const char *what)
{
    struct queue_job left[16];
    double use[8];
    size_t idx[16], m = n;
    int64_t want[16];
    struct queue_state st;
    struct kj_err err;
    queue_state_init(&st);
    memcpy(use, use0, sizeof use[0] * (size_t)nusers);
    for (size_t i = 0; i < n; i++) {
        left[i] = q[i];
        idx[i] = i;
    }
    for (int64_t turn = 1; m > 0; turn++) {
        int p = queue_pick(rule, left, m, use, nusers, &st);
        want[idx[p]] = turn;
        use[left[p].user] += st.est_ms[left[p].cls];
        queue_state_picked(&st, left[p].cls);
        memmove(&left[p], &left[p + 1], (m - (size_t)p - 1) * sizeof left[0]);
        memmove(&idx[p], &idx[p + 1], (m - (size_t)p - 1) * sizeof idx[0]);
        m--;
    }
    queue_state_init(&st);
    int ok = 1;
    for (size_t i = 0; i < n; i++) {
        int64_t pos = -1;
        ok &= queue_position(rule, q, n, use0, nusers, &st, i, &pos, &err) == 0 && pos == want[i];
        if (pos != want[i])
            fprintf(stderr, "%s: job %lld position %lld, picked at turn %lld\n", what, (long long)q[i].id,
                    (long long)pos, (long long)want[i]);
    }
    KT_CHECK(ok, "%s: positions match the replayed picks", what);
    int64_t pos = 7;
    KT_CHECK(queue_position(rule, q, n, use0, nusers, &st, n, &pos, &err) == 0 && pos == 0,
             "%s: out of range is position 0", what);
}

static void test_class_bound(void)
{
    struct queue_state st;
    /* User 0 floods test jobs with the least usage; user 1 waits with a ranked job. */
    struct queue_job q[8] = {J(1, 0, QUEUE_TEST), J(2, 0, QUEUE_TEST), J(3, 0, QUEUE_TEST),
                             J(4, 1, QUEUE_RANKED), J(5, 0, QUEUE_TEST), J(6, 0, QUEUE_TEST),
                             J(7, 0, QUEUE_TEST), J(8, 0, QUEUE_TEST)};
    double use[2] = {0, 1e9};
    queue_state_init(&st);
    KT_CHECK(queue_pick(QUEUE_FAIR, q, 8, use, 2, &st) == 0, "the least used user first");
    for (int i = 0; i < QUEUE_CLASS_BOUND; i++)
        queue_state_picked(&st, QUEUE_TEST);
    KT_CHECK(queue_pick(QUEUE_FAIR, q, 8, use, 2, &st) == 3,
             "after %d test picks the waiting ranked job goes, whatever its user's usage",
             QUEUE_CLASS_BOUND);
    KT_CHECK(queue_pick(QUEUE_FIFO, q, 8, use, 2, &st) == 0, "fifo has no class bound");
    /* The reverse: a ranked flood, one test job of a heavy user. */
    struct queue_job r[5] = {J(1, 0, QUEUE_RANKED), J(2, 0, QUEUE_RANKED), J(3, 0, QUEUE_RANKED),
                             J(4, 0, QUEUE_RANKED), J(5, 1, QUEUE_TEST)};
    queue_state_init(&st);
    for (int i = 0; i < QUEUE_CLASS_BOUND; i++)
        queue_state_picked(&st, QUEUE_RANKED);
    KT_CHECK(queue_pick(QUEUE_FAIR, r, 5, use, 2, &st) == 4, "a ranked flood lets a test job by");
    /* No job of the other class waiting: the streak does not matter. */
    KT_CHECK(queue_pick(QUEUE_FAIR, r, 4, use, 2, &st) == 0, "nothing else waits: same class");
    check_positions(QUEUE_FAIR, q, 8, use, 2, "test flood");
    check_positions(QUEUE_FAIR, r, 5, use, 2, "ranked flood");
    int64_t pos = 0;
    struct kj_err err;
    queue_state_init(&st);
    KT_CHECK(queue_position(QUEUE_FAIR, q, 8, use, 2, &st, 3, &pos, &err) == 0 &&
             pos == QUEUE_CLASS_BOUND + 1, "the ranked job's position is %d: %lld",
             QUEUE_CLASS_BOUND + 1, (long long)pos);
}

static void test_flood_positions(void)
{
    /* Heavy user 0 queued ten jobs first; light user 1 then one; user 2 a ranked one. */
    struct queue_job q[12];
    double use[3] = {30000, 0, 0};
    struct queue_state st;
    struct kj_err err;
    int64_t pos = 0;
    for (int i = 0; i < 10; i++)
        q[i] = J(i + 1, 0, QUEUE_TEST);
    q[10] = J(11, 1, QUEUE_TEST);
    q[11] = J(12, 2, QUEUE_RANKED);
    queue_state_init(&st);
    KT_CHECK(queue_position(QUEUE_FAIR, q, 12, use, 3, &st, 10, &pos, &err) == 0 && pos == 1,
             "the light user's job is next under fair: %lld", (long long)pos);
    KT_CHECK(queue_position(QUEUE_FIFO, q, 12, use, 3, &st, 10, &pos, &err) == 0 && pos == 11,
             "and eleventh under fifo: %lld", (long long)pos);
    KT_CHECK(queue_position(QUEUE_FAIR, q, 12, use, 3, &st, 11, &pos, &err) == 0 && pos == 2,
             "the ranked job of a user with no usage goes second: %lld", (long long)pos);
    check_positions(QUEUE_FAIR, q, 12, use, 3, "heavy and light");
    check_positions(QUEUE_FIFO, q, 12, use, 3, "fifo");
}

/* A tool job of a user whose tool job runs is held: not picked by either
 * rule, and its user's timed jobs are not hidden behind it. */
static void test_held(void)
{
    struct queue_state st;
    struct kj_err err;
    struct queue_job q[4] = {J(1, 0, QUEUE_RANKED), J(2, 0, QUEUE_RANKED), J(3, 1, QUEUE_TEST),
                             J(4, 0, QUEUE_TEST)};
    double use[2] = {0, 5000};
    int64_t pos = 0;
    q[0].tool = q[0].held = 1;
    q[1].tool = 0; /* user 0's leaderboard job, behind the held tool job */
    queue_state_init(&st);
    KT_CHECK(queue_pick(QUEUE_FAIR, q, 4, use, 2, &st) == 1,
             "fair: the held tool job is skipped for the same user's next job");
    KT_CHECK(queue_pick(QUEUE_FIFO, q, 4, use, 2, &st) == 1, "fifo: the oldest job not held");
    KT_CHECK(queue_position(QUEUE_FAIR, q, 4, use, 2, &st, 0, &pos, &err) == 0 && pos == 4,
             "a held job's position comes after every job not held (%lld)", (long long)pos);
    KT_CHECK(queue_position(QUEUE_FIFO, q, 4, use, 2, &st, 0, &pos, &err) == 0 && pos == 4,
             "fifo too (%lld)", (long long)pos);
    struct queue_job only[1] = {J(9, 0, QUEUE_RANKED)};
    only[0].tool = only[0].held = 1;
    KT_CHECK(queue_pick(QUEUE_FAIR, only, 1, use, 2, &st) == -1 &&
             queue_pick(QUEUE_FIFO, only, 1, use, 2, &st) == -1, "only held jobs: none is picked");
    KT_CHECK(queue_position(QUEUE_FAIR, only, 1, use, 2, &st, 0, &pos, &err) == 0 && pos == 1,
             "and the held job's position is 1");
}

int main(void)
{
    test_parse_decay();
    test_state();
    test_fair_pick();
    test_class_bound();
    test_flood_positions();
    test_held();
    return kt_done("test_queue");
}
