/*
 * judge_int.h - what the files of the judge share (judge.h is its public
 * side): the state of one judged job and the functions each file offers
 * the others. Files, from the bottom up:
 *
 *   judge_check.c  one call in both boxes and its check: requests, replies
 *                  mapped onto verdicts, the comparison on the GPU or the
 *                  host, verdicts and progress events
 *   judge_time.c   the benchmark shapes: warm-up, sampling until the
 *                  stopping rule, the floor, the clock, the graph check,
 *                  the score
 *   judge_box.c    the two boxes: configuration, start (or a pair started
 *                  before the job: judge.h's judge_prestart), contexts,
 *                  module load, the restart between rounds, the kill
 *   judge_boards.c the board's compiled files kept across jobs
 *   judge.c        the steps of a job: directives, plan, boxes, compile,
 *                  load, tests (or the dump), benchmarks, the result
 *
 * Only the judge files include it.
 */
#ifndef KJ_JUDGE_INT_H
#define KJ_JUDGE_INT_H

#include <stddef.h>
#include <stdint.h>
#include "box.h"
#include "compile.h"
#include "directive.h"
#include "judge.h"
#include "plan.h"
#include "result.h"
#include "sass.h"

/* What a step of the judge that talks to a box came to. */
enum judge_step {
    STEP_ERROR = -1,  /* the judge's own fault: err says what; the job fails */
    STEP_VERDICT = 0, /* the submission failed: a verdict was recorded, or the entry says fail */
    STEP_PASS = 1     /* the call succeeded (the output matched) */
};

struct judge {
    const struct judge_job *job;
    const struct spec *spec;
    struct directives dirs, refdirs, gendirs;
    char *refsrc;               /* owned: reference.cu */
    size_t reflen;
    char *gensrc;               /* owned: generate.cu, NULL when the board has none */
    size_t genlen;
    struct plan *plan;          /* owned: every case resolved, before any box starts */
    unsigned char *run_region, *ref_region; /* owned mappings of region_size */
    size_t region_size;
    struct box_proc run, ref;
    struct box_proc next;       /* a Python job: its next submission box, started held
                                 * (box_cfg.hold) while this one is timed; pid -1: none */
    struct judge_prestart *pre; /* owned: job->prestart until judge_regions takes or drops it */
    int adopted;                /* 1: both boxes were started before the job (judge_prestart) */
    int run_bare, ref_bare;     /* 1: the box was started before the job without a plan and
                                 * gets the plan and its directives with LOAD (a Python box
                                 * makes its own plan at its start: never bare) */
    struct box_device dev;
    struct compile_result sub, refc, genc;
    struct sass_proc sass;      /* nvdisasm on the submission, pid -1 when not running */
    struct judge_result *res;   /* owned until returned */
    double deadline;            /* CLOCK_MONOTONIC seconds */
    uint32_t run_epoch;         /* submission boxes started before the current one: the
                                 * high bits of the buffer generation the reference box
                                 * maps, which each new box counts again from 1 */
    uint64_t poison;
    int gpu_verify;             /* 1: verify in the reference box through CUDA IPC */
    double copy_gbs;            /* measured device-to-device bandwidth, 0 = not measured */
    double event_ns;            /* median of an empty event pair (BASELINE) */
    double *samples;            /* owned scratch for one shape */
    size_t cap;
    double *empties;            /* owned: protocol v2's interleaved empty-kernel samples */
    size_t nempty, empty_cap;
    double empty_ns;            /* median of the empty kernel's event time (BASELINE) */
    int plan_gpu;               /* 1: the job ranks GPU time and its boxes record it, so
                                 * v2 plans for it (judge_shapes_v2: tplan_processes,
                                 * TPLAN_GPU_MIN_TOTAL_S) and its shapes' stopping rules
                                 * follow their GPU-time samples (judge_v2_batch) */
    int gpu_time;               /* 1 while every timed call so far has its GPU time
                                 * (gtrace.h); gpu_note says why not otherwise */
    int gpu_refused;            /* 1: a call's records failed gputime.h's checks */
    int gpu_unblocked;          /* 1: a batch ran unblocked (box_rep.gpu_unblocked) */
    char gpu_note[256];
    int tool;                   /* profile or sanitize mode: the submission box runs under a tool */
    int python;                 /* a Python submission: its box is a Python box (pybox.h),
                                 * started like a tool's (TOOL_PYTHON) */
    int run_region_fd;          /* tool mode: the memfd behind run_region, -1 otherwise */
    int profile_marks;          /* CASE calls of the submission box carry box_req.profile */
    char tool_dir[4096];        /* tool mode: the tool's output folder ("" = none yet) */
    size_t san_end[SPEC_MAX_CASES]; /* sanitize mode: the log's size after each test's call */
    int san_marks;              /* how many of san_end are set (sanitize.h's marks) */
};

/* judge_boards.c (judge.h's judge_boards; b may be NULL): copy the compiled
 * reference.cu and generate.cu of j's board, as j read them, into
 * j->refc and j->genc: 1, or 0 when none is kept (nothing set). Keep
 * j's (both compiled) for the next job. */
int judge_boards_get(struct judge_boards *b, struct judge *j);
void judge_boards_put(struct judge_boards *b, const struct judge *j);

/* judge_tool.c: profile and sanitize modes (tool.h) */
/* A region of size bytes as a memfd (which a tool's or Python box maps):
 * *fd and *map set (the caller closes and unmaps them, also on failure). */
int judge_memfd_region(size_t size, int *fd, unsigned char **map, struct kj_err *err);
/* The job's run region so (judge_memfd_region). */
int judge_tool_region(struct judge *j, struct kj_err *err);
struct tool_cfg;
/* The launcher's kind and interpreter for a Python box of environment py. */
void judge_python_tool(struct tool_cfg *t, const struct pyenv *py);
/* Start the submission box under the mode's tool; c is box_start's config. */
int judge_tool_start(struct judge *j, const struct box_cfg *c, struct kj_err *err);
int judge_tool_start_into(struct judge *j, const struct box_cfg *c, struct box_proc *out,
                          struct kj_err *err);

/* A Python job's next submission box, started now and held until
 * judge_restart_run needs it (box_cfg.hold): its imports overlap the
 * current box's rounds. Not an error when it cannot start: the restart
 * then starts one as before. */
void judge_start_next(struct judge *j);

/* A timed Python job whose rounds take more than one box: its second box
 * starts with the job (judge_start_next), so that its imports (20 s on the
 * H200 with Helion's) overlap the first box's start, tests and rounds. */
void judge_ahead_start(struct judge *j);
/* Profile mode, after the tests: one checked call of each benchmark shape
 * (or the one the job names) between the profiler's marks. */
int judge_tool_shapes(struct judge *j, struct kj_err *err);
/* Stop the box, wait for the tool's output, read it into j->res->tool.
 * Any verdict so far stands; a tool that produced nothing is noted. */
void judge_tool_finish(struct judge *j);
/* Sanitize mode with racecheck, initcheck or synccheck: the tests run once
 * without the tool first. After a kernel faults (an illegal address, a
 * trap) those tools never hand the error back to the box, which then hangs
 * until the tool's wall limit; memcheck stops the kernel itself
 * (--destroy-on-device-error kernel) and needs no pass before. Returns 1
 * with *result set (owned by the caller) when the pass found a runtime
 * error, which is then the job's verdict, its events replayed to the
 * job's progress; 0 when the tool must run (nothing posted); < 0 on the
 * judge's error (err set). */
int judge_tool_prepass(const struct judge_job *job, struct judge_result **result,
                       struct kj_err *err);

/* judge_check.c */
/* Report event (data borrowed for the call) to the job's progress callback. */
void judge_event(struct judge *j, enum kj_event event, const cJSON *data);
/* Set the verdict and its one-line message, and report it (the first
 * verdict wins; later ones are dropped). */
void judge_verdict(struct judge *j, enum kj_verdict verdict, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The verdict event of the result's verdict (judge_verdict sends it, except
 * in sanitize mode, where judge_tool_finish does once the findings are read). */
void judge_verdict_event(struct judge *j);

/* judge_box.c: start both boxes (the submission's under its tool in
 * profile and sanitize modes); wait for both contexts (j->dev from the
 * submission's box); load the reference's (is_ref) or the submission's
 * module, a failed load of the submission's being a verdict. */
int judge_start_boxes(struct judge *j, struct kj_err *err);
int judge_box_info(struct judge *j, struct kj_err *err);
int judge_load(struct judge *j, int is_ref, struct kj_err *err);

/* Judge in the pair job->prestart (judge_box.c), which j takes over: its
 * regions and boxes become j's (run_bare, ref_bare set), when the job's
 * plan fits its regions and generate.cu's directives are the ones its
 * boxes were given. Returns 1 when taken; 0 when the pair was torn down
 * instead (the caller starts its own boxes); either way the pair is
 * consumed. Called with j->plan built and no region mapped yet. */
int judge_adopt(struct judge *j, struct judge_prestart *pre);

/* Board spec's reference.cu (*refsrc, owned, *reflen bytes) and its
 * directives, and generate.cu's when the board has one (*gensrc NULL
 * otherwise); checked against the board's variables. A bad file is the
 * board's error (KJ_EINTERNAL, err names it). */
int judge_board_dirs(const struct spec *s, struct directives *refdirs, char **refsrc,
                     size_t *reflen, struct directives *gendirs, char **gensrc, size_t *genlen,
                     struct kj_err *err);

/* Keep the two result regions (size bytes each) out of every process
 * forked from now on, once the boxes that map them have started: the
 * compile boxes forked later must not inherit them (for big shapes the two
 * alone exceed a compile box's RLIMIT_AS). judge_box.c. */
int judge_regions_dontfork(unsigned char *run, unsigned char *ref, size_t size,
                           struct kj_err *err);

/* Kill both boxes at once (box_signal) and return their reaping, still to
 * be done (judge_leftover_finish), or NULL when neither runs; run and ref
 * are emptied. Out of memory for it: they are reaped here, NULL. */
struct judge_leftover *judge_boxes_kill(struct box_proc *run, struct box_proc *ref);

/* judge_box.c: one gap (judge.h's judge_gap_fn) of job->gap, between two
 * rounds or two profiled shapes; its time moves j->deadline. */
void judge_gap(struct judge *j);
/* Protocol v2: replace the submission's box by a fresh process (the old
 * one killed and reaped, the new one started alike, its context awaited
 * and the module loaded again), so that the rounds of one job average over
 * several processes' launch paths (docs/timing.md). A failure to load the
 * module again is a verdict, as the first load's. judge_box.c. */
int judge_restart_run(struct judge *j, struct kj_err *err);
int judge_has_verdict(const struct judge *j);
/* Report a shape entry as event ev. */
void judge_shape_event(struct judge *j, enum kj_event ev, const struct result_shape *e);
/* The wrong_answer verdict for entry e of case idx of the tests (bench 0)
 * or benchmarks: "test 2 (T=16 ...): <its message>", with ", timed call N"
 * after the shape when call >= 0 (a failed timed call of a benchmark). */
void judge_case_verdict(struct judge *j, int bench, int idx, long call,
                        const struct result_shape *e);
/* Append a fresh entry for case idx of the tests (bench 0) or benchmarks. */
struct result_shape *judge_entry(struct judge *j, int bench, int idx);
/* A request for case (bench, idx) with every other field zero. */
struct box_req judge_req(int op, int bench, int idx);
/* One request to the reference box (is_ref) or the submission box. */
enum judge_step judge_call(struct judge *j, int is_ref, const struct box_req *req,
                           const void *payload, struct box_rep *rep, const char *where,
                           struct kj_err *err);
/* Case (bench, idx) once in both boxes with seed, the submission's call
 * verified into chk; *ns (may be NULL) gets a SAMPLE's time. */
enum judge_step judge_one_call(struct judge *j, int bench, int idx, uint64_t seed, int op,
                               int check_inputs, struct result_check *chk, double *ns,
                               struct kj_err *err);

/* Verify the n calls of a protocol-v2 batch whose reply is run: call k ran
 * on set k with inputs from seed[k] (poison[k] its outputs' poison; bit k
 * of inputs: also check its inputs) and left outputs of fingerprint
 * run->fp[k] under salt. STEP_VERDICT with *failed = k and chk filled when
 * call k is wrong or its outputs changed after it. */
enum judge_step judge_verify_batch(struct judge *j, int idx, const struct box_rep *run, int n,
                                   const uint64_t *seed, const uint64_t *poison, uint32_t inputs,
                                   uint64_t salt, int *failed, struct result_check *chk,
                                   struct kj_err *err);

/* judge_time.c */
/* Baseline, clock, every benchmark shape timed and verified, the score.
 * KJ_OK also when a verdict ended it; <0 the judge's own fault. */
int judge_benchmarks(struct judge *j, struct kj_err *err);

#endif
