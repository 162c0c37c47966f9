/*
 * serve_int.h - what the files of the supervisor share (serve.h is its
 * public side): the state of one runner's loop. Files:
 *
 *   serve_start.c the HTTP clients, the host's probe, the start-up report,
 *                the compile-ahead process
 *   serve_base.c a job's events posted, its gpu_start, a give-back, its board
 *   serve.c      the loop: start-up report, claims, one job judged beside
 *                the watcher thread (heartbeats, a stop's grace), its
 *                result posted, its boxes torn down beside the next claim
 *   serve_gap.c  the test-mode jobs judged in the gaps of a timed job
 *                (judge.h's judge_gap_fn) or beside an untimed one: their
 *                claim, events, result or give-back (one lane's)
 *   serve_side.c the side lane: a thread that judges test-mode jobs beside
 *                a job the sharing policy lets share the GPU (share.h)
 *
 * Only those files include it.
 */
#ifndef KJ_SERVE_INT_H
#define KJ_SERVE_INT_H

#include <pthread.h>
#include <stdint.h>
#include <cjson/cJSON.h>
#include "ahead.h"
#include "box.h"
#include "claim.h"
#include "judge.h"
#include "protocol.h"
#include "secret.h"
#include "serve.h"
#include "share.h"
#include "teardown.h"

#define SERVE_TIMEOUT_MS 30000L  /* one request, connect included */
/* A claim's long poll: 20 s, well under SERVE_TIMEOUT_MS. */
#define SERVE_CLAIM_PATH "/api/v1/runner/claim?wait=20"
#define SERVE_CONNECT_MS 10000L
#define SERVE_IDLE_S 1
#define SERVE_MAX_BACKOFF_S 30
#define SERVE_WATCH_TICK_S 0.2 /* how often the watcher looks at the stop flag */
#define SERVE_TEARDOWN_WAIT_S 10 /* a release's wait for the last job's teardown */

/* KJ_CLAIM_MAX_SKIP (protocol.h): jobs given back from the gaps of one timed job */

#define SERVE_SIDE_POLL_S 0.25 /* the side lane's wait after a claim that found nothing */

struct serve;

/* A lane of test-mode jobs judged while another job holds the GPU
 * (serve_gap.c): the gaps of a timed job (or the turns between a profile
 * job's shapes), judged by the main thread inside that job's judge, or the
 * side lane beside an untimed job, judged by the side thread
 * (serve_side.c). id and attempt are read by the watcher's release too, so
 * they change under serve.mu. */
struct serve_gap {
    struct serve *sv;          /* the runner's loop (the lane's progress callback's) */
    struct curlc *h;           /* borrowed: the lane's HTTP client */
    int side;                  /* 1: the side lane (beside, not in a gap) */
    double give_up_s;          /* a job with no verdict within this is given back */
    long outer_id;             /* the job whose gaps (or side) these are */
    int jobs;                  /* gap jobs judged (or given back) in it */
    double spent_s;            /* the gaps' wall time in it */
    int64_t skip[KJ_CLAIM_MAX_SKIP]; /* given back in its gaps: not claimed again in it */
    int nskip;
    int off;                   /* 1: the server does not filter claims; no more gap jobs */
    long id, attempt;          /* the gap job being judged, 0 when none (serve.mu) */
};

struct serve {
    const struct serve_cfg *cfg;
    const struct serve_ops *ops; /* borrowed: cfg->ops, or the GPU's */
    struct curlc *http;        /* owned: the main thread's client */
    struct curlc *watch_http;  /* owned: the watcher thread's client */
    struct curlc *claim_http;  /* owned: the main thread's claims (aborted on a stop) */
    struct spec **specs;       /* owned, nspecs entries */
    int nspecs;
    struct box_device dev;
    char gpu_type[64];
    long job_id;               /* job being judged, for progress posts */
    long attempt;              /* the claim's attempt, sent back as ?attempt= */
    double beat_s;             /* heartbeat period of the job being judged */
    pthread_mutex_t mu;        /* guards beat_stop, posting, releasing and the condition */
    pthread_cond_t cv;         /* on CLOCK_MONOTONIC */
    int beat_stop;             /* 1: the job was judged; the watcher ends */
    int posting;               /* > 0: that many event posts (main thread, side lane) in flight */
    int releasing;             /* 1: the watcher gives the job back; post nothing more about it */
    int unhealthy;             /* 1: the GPU failed its health check; stop taking work */
    int refused;               /* 1: the server refused this token's claims (401/403); stop */
    struct teardown td;        /* the last job's boxes, torn down beside the next job */
    struct judge_prestart *pre; /* owned: the boxes started for the next job of pre->spec,
                                 * NULL = none */
    char why[256];             /* what the health check said */
    struct secret_list secrets; /* what every child wipes (secret.h): the token and the
                                 * clients' copies; a job adds its secret seed to a copy */
    struct serve_gap gap;       /* the gap jobs of the timed job being judged */
    struct serve_gap side;      /* the side lane's jobs beside the job being judged */
    struct curlc *side_http;    /* owned: the side lane's client */
    struct judge_boards *side_boards; /* owned: the side lane's compiled board files (a
                                 * judge_boards is one thread's at a time), NULL = none */
    pthread_t side_thread;
    int side_on;                /* 1: side_thread runs (main thread only) */
    int side_stop;              /* 1: the side lane ends after its job (serve.mu) */
    int side_in_ahead;          /* 1: the side lane asks the compile-ahead process (serve.mu) */
    pthread_cond_t side_cv;     /* the side lane's wait (serve.mu, CLOCK_MONOTONIC) */
    struct secret_list side_wipe; /* what the side lane's children wipe: the runner's and
                                 * the main job's source */
    struct judge_boards *boards; /* owned: the boards' compiled files (judge.h), NULL = none */
    struct ahead *ahead;        /* owned: the compile-ahead process (ahead.h), NULL = none:
                                 * this loop claims its jobs itself */
    int gpu_start;              /* 1: the job was held before its turn (compile-ahead): the
                                 * watcher's first heartbeat, at once, says so */
};


/* serve_start.c: the three HTTP clients of the server (a malformed URL or
 * token fails here), their secrets listed in sv->secrets. */
int serve_open(struct serve *sv, struct kj_err *err);
/* serve_start.c: probe the host and GPU, load the boards, and say so to
 * the server: 0 when ready. */
int serve_ready(struct serve *sv, struct kj_err *err);
/* serve_start.c: fork the compile-ahead process when cfg->ahead asks for
 * it (sv->ahead; a failure is logged and jobs are claimed one at a time). */
void serve_ahead_start(struct serve *sv);
/* serve_start.c: the ops of the GPU (sandbox and box probe, judge_run,
 * box_health, judge_prestart_start). */
extern const struct serve_ops serve_gpu_ops;

/* serve_base.c: post event with data about job id (?attempt) with client
 * h (the main thread's or the side lane's), unless the watcher is giving
 * the jobs back. */
void serve_post_event(struct serve *sv, struct curlc *h, long id, long attempt,
                      enum kj_event event, const cJSON *data);
/* serve_base.c: the heartbeat {"gpu_start": true} of job id (?attempt),
 * with client h: a job held before its turn (compile-ahead) is charged to
 * its user's fair share from now (docs/protocol.md). A failure is logged. */
void serve_post_gpu_start(struct curlc *h, long id, long attempt);
/* serve_base.c: what every job this runner judges has in *jj: board,
 * source (writable), its language (the claim's "lang", claim.h), mode,
 * device, the runner's Python environment, the boards' compiled files, compiled
 * (its submission compiled ahead, taken by the judge; NULL = none), the
 * progress callback (ctx sv) and where its boxes' teardown goes; every
 * other field zero, for the caller to set (secrets, give-up, gaps). */
void serve_judge_job(struct serve *sv, struct judge_job *jj, const struct spec *spec,
                     const char *src, int lang, enum kj_mode mode,
                     struct compile_result *compiled, judge_progress_fn progress,
                     struct judge_leftover **left);
/* serve_base.c: give job id back (POST .../release?attempt) with client h:
 * queued again at once, no attempt charged. gap: it had no verdict within
 * a gap of a timed job ({"why": "gap"}, which its "queued" event says);
 * else the runner stops ({"why": "stopping"}). why goes to the log. */
void serve_give_back(struct curlc *h, long id, long attempt, int gap, const char *why);
/* serve_base.c: the board named name (the folder is read again once when it
 * is not known); NULL when this runner does not have it. */
const struct spec *serve_spec(struct serve *sv, const char *name);
/* serve_base.c: the board named name among those loaded, never reading the
 * folder again (a reload frees the specs a running judge holds): for the
 * gaps and the side lane. NULL when not loaded. */
const struct spec *serve_spec_loaded(const struct serve *sv, const char *name);
/* serve_gap.c: judge_gap_fn for a timed job's judge (ctx: the serve). */
void serve_gap_fill(void *ctx, const struct secret_list *outer);
/* serve_gap.c: before a timed job is judged: no gap job yet. */
void serve_gap_begin(struct serve *sv, long outer_id);
/* serve_gap.c: after it: what its gaps did, to the log. */
void serve_gap_end(struct serve *sv);
/* serve_gap.c, the watcher's stop (sv->releasing set, sv->mu not held):
 * give the gap job being judged, if any, back to the server. */
void serve_gap_release(struct serve *sv);
/* serve_gap.c: take one test-mode job for lane g (the side lane: one the
 * compile-ahead process holds compiled first; else claimed, skipping g's
 * given-back ones) and judge it, its children wiping outer: 1 when a job
 * was taken, 0 when none was queued. */
int serve_lane_take(struct serve *sv, struct serve_gap *g, const struct secret_list *outer);
/* serve_gap.c: give lane g's job being judged, if any, back (a stop). */
void serve_lane_release(struct serve *sv, struct serve_gap *g);

/* serve_side.c: before job outer_id of mode m (source src) is judged:
 * start the side lane when the policy lets m share (share.h) and the
 * runner judges more than one job. A failure to start is logged. */
void serve_side_start(struct serve *sv, long outer_id, enum kj_mode m, char *src);
/* serve_side.c: after that job's result is posted: the side lane ends its
 * job (at most its give-up time) and stops, so that the next job may have
 * the GPU to itself. No-op when none runs. */
void serve_side_stop(struct serve *sv);

#endif
