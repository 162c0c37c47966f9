/*
 * serve.h - the runner's supervisor loop: pull jobs from a kjudge-server over
 * HTTP or HTTPS (common/curlc.h, libcurl) with a runner token, judge each in
 * fresh boxes, post progress and the result (docs/protocol.md). Started by
 * `kjudge-runner serve`.
 */
#ifndef KJ_SERVE_H
#define KJ_SERVE_H

#include <signal.h>
#include "judge.h"
#include "kj_err.h"
#include "share.h"

#define SERVE_GRACE_DEFAULT_S 20.0 /* serve --grace: a stopping runner's time to finish its job */
#define SERVE_GAP_DEFAULT_S 2.0    /* serve --gap-seconds: a gap job's time to its verdict */

struct box_device;
struct judge_job;
struct judge_prestart;
struct judge_result;
struct secret_list;
struct spec;

/* How this runner checks its host and judges. NULL in serve_cfg: on the
 * GPU (sandbox_probe + box_probe, judge_run, box_health); the API tests
 * give a fake (tests/api/fakegpu.c) to drive the loop without a GPU. The
 * children they fork wipe wipe's ranges first (secret.h). */
struct serve_ops {
    /* Check the host and GPU gpu and fill *dev; an error says why this host cannot judge. */
    int (*probe)(int gpu, const struct secret_list *wipe, struct box_device *dev,
                 struct kj_err *err);
    /* judge_run() (judge.h): *result is the caller's (result_free). */
    int (*judge)(const struct judge_job *job, struct judge_result **result, struct kj_err *err);
    /* box_health() (box.h): 0 when the GPU still computes a known answer. */
    int (*health)(int gpu, const struct secret_list *wipe, struct kj_err *err);
    /* judge_prestart_start() (judge.h): the boxes of the next job of board spec;
     * py non-NULL: a Python run box of that environment; flags JUDGE_PRE_*. */
    int (*prestart)(const struct spec *spec, int gpu, const struct secret_list *wipe,
                    const struct pyenv *py, unsigned flags, struct judge_prestart **out,
                    struct kj_err *err);
    /* judge_prestart_release() (judge.h): a held pair made whole. */
    int (*release)(struct judge_prestart *pre, struct kj_err *err);
};

struct serve_cfg {
    const char *server;        /* "http://127.0.0.1:8080" or "https://kjudge.example.org" */
    const char *token;         /* runner token, borrowed, never logged */
    const char *ca_file;       /* extra trusted CA certificates (PEM) for https, or NULL */
    int gpu;                   /* device ordinal */
    const char *name;          /* runner name shown by the server */
    const char *gpu_type;      /* "H200"; NULL = derived from the device name */
    const char *leaderboards;  /* folder of leaderboard specs */
    int once;                  /* stop after one job (tests) */
    double grace_s;            /* after a stop: finish the job within this, else give it back */
    volatile sig_atomic_t *stop; /* set by a signal handler: 1 = stop (finish within grace_s),
                                    2 or more = give the job back at once */
    double gap_s;              /* > 0: between the rounds of a timed job, judge one test-mode
                                * job per gap, given up (and given back) when it has no
                                * verdict within this; 0 = no gap jobs (serve_gap.c) */
    const struct pyenv *pyenv; /* Python submissions' environment (judge.h); NULL = none */
    int py_early;              /* 1: a timed Python job starts the next job's Python pair
                                * held beside it (JUDGE_PRE_HELD; KJUDGE_PY_PRESTART_EARLY=1),
                                * made whole when it ends; needs py_prestart */
    int py_prestart;           /* 1: after a Python job, the next pair is a Python one
                                * ($KJUDGE_PY_PRESTART=0 turns it off) */
    int ahead;                 /* > 0: claim and compile up to this many jobs while the GPU
                                * judges (ahead.h); 0 = claim one job at a time */
    const struct serve_ops *ops; /* NULL: the GPU */
    const struct share_policy *share; /* serve --share: which jobs judge beside or between a
                                * job of each mode (share.h); NULL = share_default's */
};

/* Run until *cfg->stop is set (or one job with once). Returns 0 on a clean
 * stop, <0 when the runner cannot work at all (no GPU, bad specs, a server
 * URL or certificate it cannot use). A job still being judged grace_s
 * after the stop is given back to the server (POST
 * /runner/jobs/{id}/release) and the process ends at once with status 0
 * (_exit: the boxes die with it). */
int serve_loop(const struct serve_cfg *cfg, struct kj_err *err);

#endif
