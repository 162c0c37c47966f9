/*
 * test_wait.c - unit tests for the wait slots of server/wait.c.
 *
 * wait_hold / wait_unhold without connections: the per-user cap (and the
 * flag that tells it from the total), admins bound by the total only,
 * slots given back and taken again, unholding twice or a zeroed hold, and
 * many users at once (the per-user table fills and empties); runners'
 * claims in a pool of their own, with a cap per runner token that holds
 * for everyone, and neither pool taking the other's slots.
 */
#define KT_MAIN
#include "kt.h"

#include <string.h>

#include "wait.h"

static void test_caps(void)
{
    struct wait_list *w = NULL;
    struct wait_hold h[8], extra, zero;
    struct kj_err err;
    int total = -1, user = -1;
    memset(h, 0, sizeof h);
    memset(&extra, 0, sizeof extra);
    memset(&zero, 0, sizeof zero);
    const struct wait_limits lim = {5, 2, 3, 2};
    KT_CHECK(wait_start(&w, &lim, &err) == 0 && w != NULL, "start: %s", err.msg);
    if (w == NULL)
        return;
    KT_CHECK(wait_hold(w, &h[0], 7, 0, &err) == 0 && wait_hold(w, &h[1], 7, 0, &err) == 0,
             "user 7 holds two slots");
    KT_CHECK(wait_hold(w, &extra, 7, 0, &err) == KJ_ELIMIT && extra.user_full && !extra.held,
             "a third is refused as the user's cap");
    wait_counts(w, WAIT_POOL_USERS, 7, &total, &user);
    KT_CHECK(total == 2 && user == 2, "counts %d %d", total, user);
    KT_CHECK(wait_hold(w, &h[2], 1, 1, &err) == 0 && wait_hold(w, &h[3], 1, 1, &err) == 0 &&
             wait_hold(w, &h[4], 1, 1, &err) == 0, "an exempt user (admin) passes the per-user cap");
    KT_CHECK(wait_hold(w, &extra, 9, 0, &err) == KJ_ELIMIT && !extra.user_full,
             "five in all: the next is refused as the total");
    wait_unhold(w, &h[0]);
    wait_unhold(w, &h[0]);
    wait_unhold(w, &zero);
    wait_counts(w, WAIT_POOL_USERS, 7, &total, &user);
    KT_CHECK(total == 4 && user == 1 && !h[0].held, "a slot given back once (twice is harmless)");
    KT_CHECK(wait_hold(w, &extra, 9, 0, &err) == 0, "and taken by another user");
    for (int i = 1; i < 5; i++)
        wait_unhold(w, &h[i]);
    wait_unhold(w, &extra);
    wait_counts(w, WAIT_POOL_USERS, 9, &total, &user);
    KT_CHECK(total == 0 && user == 0, "all given back");
    wait_kick_user(w, 7); /* no entries: nothing to wake */
    wait_free(w);
}

static void test_many_users(void)
{
    struct wait_list *w = NULL;
    struct wait_hold h[64];
    struct kj_err err;
    int ok = 1, total = 0, user = 0;
    memset(h, 0, sizeof h);
    const struct wait_limits lim = {64, 1, 1, 1};
    KT_CHECK(wait_start(&w, &lim, &err) == 0, "start");
    if (w == NULL)
        return;
    for (int i = 0; i < 64; i++)
        ok &= wait_hold(w, &h[i], 100 + i, 0, &err) == 0;
    KT_CHECK(ok, "64 users, one slot each");
    for (int i = 0; i < 64; i += 2)
        wait_unhold(w, &h[i]);
    wait_counts(w, WAIT_POOL_USERS, 101, &total, &user);
    KT_CHECK(total == 32 && user == 1, "half given back: %d", total);
    for (int i = 0; i < 64; i += 2)
        ok &= wait_hold(w, &h[i], 100 + i, 0, &err) == 0;
    KT_CHECK(ok, "and taken again");
    for (int i = 0; i < 64; i++)
        wait_unhold(w, &h[i]);
    wait_counts(w, WAIT_POOL_USERS, 101, &total, &user);
    KT_CHECK(total == 0 && user == 0, "all given back");
    wait_free(w);
}

/* Claims: their own pool (3 slots, 2 per runner token), apart from users'. */
static void test_claims(void)
{
    struct wait_list *w = NULL;
    struct wait_hold c[4], u[2], extra;
    struct kj_err err;
    int total = -1, user = -1;
    const struct wait_limits lim = {2, 2, 3, 2};
    memset(c, 0, sizeof c);
    memset(u, 0, sizeof u);
    memset(&extra, 0, sizeof extra);
    KT_CHECK(wait_start(&w, &lim, &err) == 0 && w != NULL, "start: %s", err.msg);
    if (w == NULL)
        return;
    KT_CHECK(wait_hold_claim(w, &c[0], 5, &err) == 0 && wait_hold_claim(w, &c[1], 5, &err) == 0,
             "runner 5 parks two claims");
    KT_CHECK(wait_hold_claim(w, &extra, 5, &err) == KJ_ELIMIT && extra.user_full && !extra.held &&
             strstr(err.msg, "per runner token") != NULL, "a third is refused as its cap: %s",
             err.msg);
    KT_CHECK(wait_hold_claim(w, &c[2], 6, &err) == 0, "runner 6 parks one");
    KT_CHECK(wait_hold_claim(w, &c[3], 7, &err) == KJ_ELIMIT && !c[3].user_full &&
             strstr(err.msg, "claim slots") != NULL, "the claims' total is full: %s", err.msg);
    KT_CHECK(wait_hold(w, &u[0], 8, 0, &err) == 0 && wait_hold(w, &u[1], 8, 0, &err) == 0,
             "users' slots are all still free");
    wait_counts(w, WAIT_POOL_CLAIMS, 5, &total, &user);
    KT_CHECK(total == 3 && user == 2, "claims %d %d", total, user);
    wait_counts(w, WAIT_POOL_USERS, 8, &total, &user);
    KT_CHECK(total == 2 && user == 2, "users %d %d", total, user);
    wait_unhold(w, &c[0]);
    KT_CHECK(wait_hold_claim(w, &c[3], 7, &err) == 0, "a claim slot given back is taken again");
    for (int i = 1; i < 4; i++)
        wait_unhold(w, &c[i]);
    wait_unhold(w, &u[0]);
    wait_unhold(w, &u[1]);
    wait_counts(w, WAIT_POOL_CLAIMS, 7, &total, &user);
    KT_CHECK(total == 0 && user == 0, "all given back");
    wait_free(w);
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    KT_RUN(test_caps());
    KT_RUN(test_many_users());
    KT_RUN(test_claims());
    return kt_done("test_wait");
}
