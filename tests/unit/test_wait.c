/*
 * test_wait.c - unit tests for the wait slots of server/wait.c.
 *
 * wait_hold / wait_unhold without connections: the per-user cap (and the
 * flag that tells it from the total), admins bound by the total only,
 * slots given back and taken again, unholding twice or a zeroed hold, and
 * many users at once (the per-user table fills and empties).
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
    KT_CHECK(wait_start(&w, 5, 2, &err) == 0 && w != NULL, "start: %s", err.msg);
    if (w == NULL)
        return;
    KT_CHECK(wait_hold(w, &h[0], 7, 0, &err) == 0 && wait_hold(w, &h[1], 7, 0, &err) == 0,
             "user 7 holds two slots");
    KT_CHECK(wait_hold(w, &extra, 7, 0, &err) == KJ_ELIMIT && extra.user_full && !extra.held,
             "a third is refused as the user's cap");
    wait_counts(w, 7, &total, &user);
    KT_CHECK(total == 2 && user == 2, "counts %d %d", total, user);
    KT_CHECK(wait_hold(w, &h[2], 1, 1, &err) == 0 && wait_hold(w, &h[3], 1, 1, &err) == 0 &&
             wait_hold(w, &h[4], 1, 1, &err) == 0, "an exempt user (admin) passes the per-user cap");
    KT_CHECK(wait_hold(w, &extra, 9, 0, &err) == KJ_ELIMIT && !extra.user_full,
             "five in all: the next is refused as the total");
    wait_unhold(w, &h[0]);
    wait_unhold(w, &h[0]);
    wait_unhold(w, &zero);
    wait_counts(w, 7, &total, &user);
    KT_CHECK(total == 4 && user == 1 && !h[0].held, "a slot given back once (twice is harmless)");
    KT_CHECK(wait_hold(w, &extra, 9, 0, &err) == 0, "and taken by another user");
    for (int i = 1; i < 5; i++)
        wait_unhold(w, &h[i]);
    wait_unhold(w, &extra);
    wait_counts(w, 9, &total, &user);
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
    KT_CHECK(wait_start(&w, 64, 1, &err) == 0, "start");
    if (w == NULL)
        return;
    for (int i = 0; i < 64; i++)
        ok &= wait_hold(w, &h[i], 100 + i, 0, &err) == 0;
    KT_CHECK(ok, "64 users, one slot each");
    for (int i = 0; i < 64; i += 2)
        wait_unhold(w, &h[i]);
    wait_counts(w, 101, &total, &user);
    KT_CHECK(total == 32 && user == 1, "half given back: %d", total);
    for (int i = 0; i < 64; i += 2)
        ok &= wait_hold(w, &h[i], 100 + i, 0, &err) == 0;
    KT_CHECK(ok, "and taken again");
    for (int i = 0; i < 64; i++)
        wait_unhold(w, &h[i]);
    wait_counts(w, 101, &total, &user);
    KT_CHECK(total == 0 && user == 0, "all given back");
    wait_free(w);
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    KT_RUN(test_caps());
    KT_RUN(test_many_users());
    return kt_done("test_wait");
}
