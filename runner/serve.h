/*
 * serve.h - the runner's supervisor loop: pull jobs from a kjudge-server over
 * HTTP with a runner token, judge each in fresh boxes, post progress and the
 * result (docs/protocol.md). Started by `kjudge-runner serve`.
 */
#ifndef KJ_SERVE_H
#define KJ_SERVE_H

#include <signal.h>
#include "kj_err.h"

struct serve_cfg {
    const char *server;        /* "http://127.0.0.1:8080" */
    const char *token;         /* runner token, borrowed, never logged */
    int gpu;                   /* device ordinal */
    const char *name;          /* runner name shown by the server */
    const char *gpu_type;      /* "H200"; NULL = derived from the device name */
    const char *leaderboards;  /* folder of leaderboard specs */
    int once;                  /* stop after one job (tests) */
    volatile sig_atomic_t *stop; /* set by a signal handler to stop after the current job */
};

/* Run until *cfg->stop is set (or one job with once). Returns 0 on a clean
 * stop, <0 when the runner cannot work at all (no GPU, bad specs). */
int serve_loop(const struct serve_cfg *cfg, struct kj_err *err);

#endif
