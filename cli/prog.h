/*
 * prog.h - live progress of one submission, from its event stream.
 *
 * cmd_submit.c (and `kjudge events`) feed every event of
 * GET /submissions/{id}/events to prog_event(). On a terminal there is one
 * status line, rewritten in place ("queued, position 3", "compiling",
 * "tests 3/5", "tests 5/5, shapes 2/3"), with a permanent line above it
 * for each timed shape (its median) and each failed test; elsewhere (a
 * pipe, a file) each event is one plain line. Event names and their data
 * are those of docs/protocol.md; unknown events are shown by name.
 */
#ifndef KJ_PROG_H
#define KJ_PROG_H

#include <cjson/cJSON.h>
#include <stdio.h>

struct prog {
    FILE *out;          /* borrowed */
    int tty;            /* 1: status line mode */
    int width;          /* terminal columns (status lines are cut to fit) */
    int ntests, nbench; /* totals from the leaderboard; 0 = unknown */
    int tests, benches; /* events seen */
    int failed;         /* failed tests and shapes seen */
    int shown;          /* a status line is on the screen */
    char head[128];     /* "#17 fp8_quant H200 leaderboard" */
    char status[256];   /* the status line's text after the head */
};

/* Start: out, terminal mode and width (0: 80), a head for status lines,
 * and the leaderboard's test and benchmark counts (0 when unknown). */
void prog_init(struct prog *p, FILE *out, int tty, int width, const char *head, int ntests,
               int nbench);
/* Show one event; data may be NULL. */
void prog_event(struct prog *p, const char *event, const cJSON *data);
/* Remove the status line (terminal mode) so what follows starts clean. */
void prog_done(struct prog *p);

#endif
