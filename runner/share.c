/*
 * share.c - the runner's sharing policy read and named (see share.h).
 */
#include "share.h"

#include <stdio.h>
#include <string.h>

void share_default(struct share_policy *p)
{
    p->how[KJ_MODE_TEST] = SHARE_ALONE; /* short, bounded by the board's test limit */
    p->how[KJ_MODE_SANITIZE] = SHARE_SIDE;
    p->how[KJ_MODE_PROFILE] = SHARE_TURNS; /* counters and replays: not measured to share */
    p->how[KJ_MODE_BENCHMARK] = SHARE_TURNS;
    p->how[KJ_MODE_LEADERBOARD] = SHARE_TURNS;
}

const char *share_how_name(enum share_how h)
{
    return h == SHARE_SIDE ? "side" : h == SHARE_TURNS ? "turns" : "alone";
}

int share_parse(const char *s, struct share_policy *p, char *err, size_t errsz)
{
    struct share_policy out = *p;
    char buf[256], *save = NULL;
    if (s == NULL || strlen(s) >= sizeof buf || s[0] == '\0') {
        snprintf(err, errsz, "--share wants MODE=HOW[,MODE=HOW...] (HOW: side, turns, alone)");
        return -1;
    }
    snprintf(buf, sizeof buf, "%s", s);
    for (char *item = strtok_r(buf, ",", &save); item != NULL; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        enum kj_mode m;
        enum share_how h;
        if (eq == NULL) {
            snprintf(err, errsz, "--share: '%.60s' is not MODE=HOW", item);
            return -1;
        }
        *eq = '\0';
        if (kj_mode_parse(item, &m) != 0) {
            snprintf(err, errsz, "--share: '%.60s' is not a mode (test, benchmark, leaderboard, "
                     "profile, sanitize)", item);
            return -1;
        }
        if (strcmp(eq + 1, "side") == 0)
            h = SHARE_SIDE;
        else if (strcmp(eq + 1, "turns") == 0)
            h = SHARE_TURNS;
        else if (strcmp(eq + 1, "alone") == 0)
            h = SHARE_ALONE;
        else {
            snprintf(err, errsz, "--share: '%.60s' is not side, turns or alone", eq + 1);
            return -1;
        }
        if (kj_mode_timed(m) && h == SHARE_SIDE) {
            snprintf(err, errsz, "--share: %s is ranked timing and never shares the GPU (turns "
                     "or alone)", item);
            return -1;
        }
        out.how[m] = h;
    }
    *p = out;
    return 0;
}
