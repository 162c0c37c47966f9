/*
 * share.h - the runner's sharing policy: which jobs may judge beside a job
 * of each mode on the same GPU. Read by `kjudge-runner serve --share`
 * (main.c), applied by the supervisor (serve.c: the side lane of
 * serve_side.c, the turns of serve_gap.c). Below both; knows only the modes.
 *
 * What each mode allows while it holds the GPU (docs/operator-tools.md):
 *
 *   SHARE_SIDE   other untimed work runs at the same time, in boxes and
 *                CUDA contexts of its own: a side lane claims test-mode jobs
 *                one at a time and judges them beside it (serve_side.c).
 *   SHARE_TURNS  nothing runs at the same time; between its rounds (timed
 *                modes) or its shapes (profile) a test-mode job gets a turn
 *                (serve_gap.c).
 *   SHARE_ALONE  nothing else while it runs.
 *
 * Ranked timing (benchmark, leaderboard) is never SHARE_SIDE: it may only
 * give turns, and share_parse refuses anything else for it.
 */
#ifndef KJ_SHARE_H
#define KJ_SHARE_H

#include "protocol.h"

enum share_how {
    SHARE_ALONE = 0,
    SHARE_TURNS,
    SHARE_SIDE,
};

struct share_policy {
    enum share_how how[KJ_MODE_COUNT];
};

/* The default: sanitize shares (SHARE_SIDE); a test job runs alone (it is
 * short, bounded by the board's test limit, and its boxes already overlap
 * the last job's teardown and the next one's start: serve.c), test=side
 * lets test jobs run beside it too; profile gives turns between its shapes
 * until it is measured to share safely; benchmark and leaderboard give
 * turns between their rounds. */
void share_default(struct share_policy *p);

/* Read "MODE=HOW[,MODE=HOW...]" (HOW: side, turns, alone) over the
 * default into *p. -1 with a message in err (nothing changed) when a
 * mode or HOW is unknown, or a ranked mode would share. */
int share_parse(const char *s, struct share_policy *p, char *err, size_t errsz);

/* "side", "turns" or "alone". */
const char *share_how_name(enum share_how h);

#endif
