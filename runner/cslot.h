/*
 * cslot.h - compile slots shared by every runner process of a host, so
 * that their compile boxes (cbox.h) never outnumber what the host's cores
 * and memory allow.
 *
 * The judge (judge.c) takes slots before it starts the compile boxes of a
 * job (the submission's, the reference's, generate.cu's) and gives them
 * back once they are collected. A slot is an exclusive flock(2) on one of
 * N files in a folder every runner of the host uses; the kernel drops the
 * lock when the holder closes it or dies, so a killed runner never leaves
 * a slot taken. N is cslot_count(): the CPUs compile boxes may use
 * (cpus.h: the runner's, less those kept for the run boxes), at most its
 * memory over a compile box's address-space limit (CBOX_MEM_BYTES), at
 * least 1; KJUDGE_COMPILE_SLOTS sets it (every runner of a host the same).
 *
 * No deadlock between runners: cslot_take waits only while it holds
 * nothing, for the first slot; it then takes what else is free at once, up
 * to what it wants, and never waits while holding. A job given fewer slots
 * than compiles runs them in turns (the submission's first).
 */
#ifndef KJ_CSLOT_H
#define KJ_CSLOT_H

#include "kj_err.h"

#define CSLOT_MAX 256          /* slots a host may have */
#define CSLOT_WANT_MAX 4       /* slots one taker may hold */

/* Slots held: fd[0..n) are open, locked slot files. Owned by the taker
 * until cslot_give(). */
struct cslot {
    int fd[CSLOT_WANT_MAX];
    int n;
    double waited_s;           /* how long cslot_take waited for the first */
};

/* The host's slot count: $KJUDGE_COMPILE_SLOTS (1-CSLOT_MAX) when set and
 * valid, else min(online CPUs, MemTotal / CBOX_MEM_BYTES), at least 1. */
int cslot_count(void);

/* The slots' folder: $KJUDGE_COMPILE_SLOT_DIR, else /run/kjudge/compile-slots
 * for root, else /tmp/kjudge-compile-slots-UID. Made (0700) if missing. */
int cslot_dir(char *buf, size_t size, struct kj_err *err);

/* Take at least one and at most want (1..CSLOT_WANT_MAX) slots of the
 * count slots in dir (NULL: cslot_dir()): wait, polling every 2 ms, until
 * one is free or deadline (CLOCK_MONOTONIC seconds) passes, then take
 * whatever else is free without waiting. KJ_OK with s->n >= 1;
 * KJ_ETIMEOUT (nothing held), KJ_EIO when the folder or a file cannot be
 * opened, KJ_EINVAL for a bad want or count. */
int cslot_take(struct cslot *s, const char *dir, int count, int want, double deadline,
               struct kj_err *err);

/* Give back every slot s holds (safe to call twice, and on a zeroed s with n 0). */
void cslot_give(struct cslot *s);

#endif
