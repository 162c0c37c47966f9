/*
 * judge.h - judges one submission: directives, compile, reference and
 * submission boxes, tests, timed benchmark shapes, verdict, result JSON.
 *
 * Called by `kjudge-runner eval` (runner/main.c) and by the serve loop
 * (runner/serve.c) for each claimed job. The result object is the one
 * described in docs/protocol.md. Progress is reported through a callback.
 */
#ifndef KJ_JUDGE_H
#define KJ_JUDGE_H

#include <limits.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <cjson/cJSON.h>
#include "kj_err.h"
#include "protocol.h"
#include "secret.h"
#include "spec.h"

/* Called for each step (KJ_EV_COMPILING ... KJ_EV_VERDICT); data is the
 * event's JSON object, borrowed for the duration of the call. */
typedef void (*judge_progress_fn)(void *ctx, enum kj_event event, const cJSON *data);

/* A gap of a timed job (protocol v2): between two of its rounds, after the
 * submission box of the round before has been killed and reaped and before
 * the next one starts. Nothing of the job runs on the GPU then (its
 * reference box waits, idle, in its own context), so the callee may judge
 * a short test-mode job there, in boxes of its own that are gone again
 * before it returns (docs/timing.md 4.1). Every child the callee forks
 * must wipe outer first: the job's secrets (judge_job.secrets) and its
 * submission's source and compiled code, which the runner's memory holds
 * until the job ends. The callee returns when its GPU work and teardown
 * are over; the time it took is not counted against the job's limit. */
typedef void (*judge_gap_fn)(void *ctx, const struct secret_list *outer);

/* The timing protocol of the benchmark shapes (docs/timing.md). A zeroed
 * job gets v2. */
enum judge_protocol {
    JUDGE_PROTOCOL_V2 = 0, /* rounds over the shapes, buffer sets, batch verification, the
                            * interleaved empty-kernel correction: the ranked protocol */
    JUDGE_PROTOCOL_V1 = 1  /* one shape after the other, one buffer set, every call verified
                            * at once, raw medians: kept for comparison */
};

/* A runner's pinned Python environment (kjudge-runner --python): what a
 * Python run box loads (pybox.h), found once by asking that interpreter
 * (pyenv_find in pyenv.c). */
struct pyenv {
    char exe[PATH_MAX];           /* the interpreter asked */
    char lib[PATH_MAX];           /* its libpython, which the box loads */
    char home[PATH_MAX];          /* sys.base_prefix: the standard library's home */
    char site[PATH_MAX];          /* the environment's site-packages ("" = the home's own) */
    char versions[256];           /* "python 3.12.3, torch 2.11.0+cu130, triton 3.6.0, ..." */
};

struct judge_job {
    const struct spec *spec;      /* borrowed */
    const char *source;           /* borrowed, source_len bytes */
    size_t source_len;
    enum kj_mode mode;
    int lang;                     /* enum sub_lang: SUB_LANG_PYTHON is custom_kernel in a
                                   * Python run box (pybox.h); CUDA otherwise */
    const struct pyenv *pyenv;    /* borrowed; the runner's, NULL = it has none (a Python job
                                   * is then the judge's error) */
    uint64_t secret_seed;         /* leaderboard mode only */
    int gpu;                      /* device ordinal */
    const char *arch;             /* the GPU's "sm_XY" when known (serve probes it once), so
                                   * compiling starts while the boxes create their contexts;
                                   * NULL = wait for the boxes to say it. Borrowed. */
    enum judge_protocol protocol;
    double warmup_s;              /* v1: per benchmark shape; v2: the job's one warm-up over
                                   * all shapes; 0 = default 0.2 s */
    double time_limit_s;          /* wall limit of the whole job; 0 = the leaderboard's */
    long samples;                 /* > 0: exactly this many timed calls per shape (profiling, benches) */
    int processes;                /* v2: submission boxes the rounds are spread over, 1 to
                                   * TPLAN_ROUNDS; 0 = TPLAN_PROCESSES (bench/bench_score_stability
                                   * compares others) */
    double gpu_min_total_s;       /* > 0: a job planned for GPU time plans this much sample
                                   * time per shape instead of TPLAN_GPU_MIN_TOTAL_S (eval
                                   * --gpu-plan-ms: bench_timing_fidelity weighs it against
                                   * the CV); runners leave it 0 */
    int compile_unboxed;          /* eval --compile-unboxed only: NVRTC in this process, no
                                   * compile box (a profiler that follows forks, such as ncu,
                                   * breaks inside it); never for others' code */
    enum kj_sanitizer sanitizer;  /* sanitize mode: the tool (memcheck when zeroed) */
    int profile_shape;            /* profile mode: 1 + the benchmark shape to profile; 0 = all */
    const char *dump_dir;         /* non-NULL: run every shape once untimed and write it there (dump.h) */
    FILE *trace;                  /* non-NULL (eval --trace): every v2 sample is written there as
                                   * a CSV line (docs/timing.md 7.2); borrowed, the caller
                                   * closes it and checks the close */
    judge_progress_fn progress;   /* may be NULL */
    void *progress_ctx;
    const struct secret_list *secrets; /* what every child of the job wipes right after fork
                                        * (the token, secret_seed): borrowed; NULL = nothing */
    struct judge_leftover **leftover; /* NULL: judge_run tears the boxes down before it
                                       * returns; else it kills them and sets *leftover to what
                                       * is still to be done (or NULL when nothing is), which
                                       * the caller finishes: judge_leftover_finish() */
    judge_gap_fn gap;             /* v2 timed jobs: called in each gap between two rounds
                                   * (profile jobs: between two profiled shapes)
                                   * (judge_gap_fn); NULL = no gaps. Then source must be
                                   * writable memory (a child wipes its copy) */
    void *gap_ctx;
    double give_up_s;             /* > 0: a job whose verdict is not known this many seconds
                                   * after it started is given up (a job judged in a gap):
                                   * judge_run returns KJ_ETIMEOUT, no result, and the
                                   * caller gives the job back. 0 = never */
    struct compile_result *compiled; /* NULL: the judge compiles the submission. Else it
                                  * was compiled before the job's turn (the compile-ahead
                                  * process, runner/ahead.h) with judge_ahead_dirs()'s
                                  * directives for arch, and its "compiling" and
                                  * "compiled" events were posted then: the judge uses it
                                  * (compiling only the board's files) and posts neither.
                                  * judge_run takes what it holds: it is freed and zeroed
                                  * when judge_run returns, used or not. */
    struct judge_boards *boards;  /* NULL: the board's reference.cu and generate.cu are
                                   * compiled with the job. Else compiled ones are taken
                                   * from there, and what this job compiles is kept there
                                   * (judge_boards_new): borrowed, one thread at a time */
    struct judge_prestart *prestart; /* NULL: the boxes start with the job. Else a pair
                                      * started for this job's board before the job
                                      * (judge_prestart_start), which judge_run takes over
                                      * whatever happens: it judges in them, or (a board
                                      * file changed since, a tool or dump job) tears them
                                      * down and starts its own. Owned by judge_run. */
};

struct judge_result;
struct compile_result;
struct directives;
struct box_device;

/* What a judged job leaves behind when the caller asks for it
 * (judge_job.leftover): its boxes, already killed (SIGKILL) and their
 * pipes closed, still to be reaped, which waits until the driver has
 * destroyed each box's CUDA context (a few hundred ms), and their cgroups
 * removed. The caller posts the result first and finishes this after.
 * Whoever holds the pointer owns it; judge_leftover_finish() tears down
 * what is left and frees it. The fake GPU of the API tests
 * (tests/api/fakegpu.c) makes its own with its own finish. */
struct judge_leftover {
    void (*finish)(struct judge_leftover *self); /* tears down, then frees self */
};

/* Tear down what left holds and free it (blocks until done); NULL does
 * nothing. Any thread may call it, once. */
void judge_leftover_finish(struct judge_leftover *left);

/* A job's two boxes started before the job (runner/judge_box.c): forked,
 * sandboxed and creating their CUDA contexts while no job is known, so
 * that the next job of the board finds its contexts made (about 0.4 s on
 * an H200) and only compiles, loads and runs. They are still a fresh pair
 * of processes for one job, never used before and never reused: the
 * job's plan and the submission's directives reach them at LOAD
 * (box.h). They hold no secret of any job: forked before the job was
 * claimed, they wipe what wipe lists (the runner's token) first.
 * spec is the board they were started for: a job of another board, or in
 * profile or sanitize mode, cannot use them. Whoever holds the pointer
 * owns it: judge_run (given in judge_job.prestart) or the caller, who
 * gives up an unused pair with drop(), which kills its boxes at once,
 * frees it and returns their teardown (judge_leftover_finish). The fake
 * GPU of the API tests makes its own (tests/api/fakegpu.c). */
struct judge_prestart {
    const struct spec *spec;
    int python;                   /* 1: a Python run box (the next job is a Python file) */
    int helion;                   /* a Python run box that imported Helion at its start */
    int held;                     /* a Python pair started beside a timed job: its run box
                                   * has its imports and waits before CUDA, and there is
                                   * no reference box yet (judge_prestart_release) */
    struct judge_leftover *(*drop)(struct judge_prestart *self);
};

/* The result regions a waiting pair may hold, both together: their pages
 * stay pinned while the runner is idle. $KJUDGE_PRESTART_MAX_MB overrides
 * it (0: no pair is ever started before its job). */
#define JUDGE_PRESTART_MAX_BYTES (2ull << 30)

/* judge_prestart_start's flags. */
#define JUDGE_PRE_HELION 1u /* the Python run box imports Helion */
#define JUDGE_PRE_HELD 2u   /* a Python pair started beside a timed job (judge_prestart.held) */

/* Start the pair for board spec on device gpu; the children wipe wipe
 * first (borrowed: it must outlive the pair). py NULL: a CUDA run box;
 * else a Python run box of environment py (borrowed), whose interpreter
 * imports PyTorch and Triton, and Helion with JUDGE_PRE_HELION in flags,
 * while it waits: the most of a Python job's start (Helion's import alone
 * is 12 s on the H200, so a pair imports it only when the job before named
 * it: a participant's next file is mostly like the last). JUDGE_PRE_HELD
 * (a Python pair only): the run box stops before CUDA and no reference box
 * starts, so that the pair can start while a timed job runs; the pair fits
 * no job until judge_prestart_release. KJ_OK with *out set, else *out NULL
 * and err says why: KJ_ELIMIT when the board's two regions exceed the limit
 * above (nothing started: its jobs start their own boxes). */
int judge_prestart_start(const struct spec *spec, int gpu, const struct secret_list *wipe,
                         const struct pyenv *py, unsigned flags, struct judge_prestart **out,
                         struct kj_err *err);

/* A held pair (judge_prestart.held) made whole once the timed job beside
 * it has ended: its run box starts CUDA, its reference box starts. KJ_OK
 * (held cleared; a pair not held: nothing to do), else err says why and
 * the caller drops the pair. */
int judge_prestart_release(struct judge_prestart *p, struct kj_err *err);

/* 1 when a pair started for board spec can judge a job of spec in mode
 * (test, benchmark or leaderboard: the tools start their own box) whose
 * file is in language lang (sub_lang.h): a Python pair for a Python file
 * (one that imported Helion when the file names it: helion 1, see
 * judge_names_helion), a CUDA pair for the others; never a held pair. */
int judge_prestart_fits(const struct judge_prestart *p, const struct spec *spec,
                        enum kj_mode mode, int lang, int helion);

/* 1 when the jobs of board spec rank their GPU-time medians (CUPTI), 0
 * when their event medians: env, the runner's $KJUDGE_SCORE, decides for
 * every board when it is "gpu_time" or "events", else the board's "score"
 * does ("gpu_time" when it names none: spec.h; docs/timing.md 8). */
int judge_score_gpu(const struct spec *spec, const char *env);

/* 1 when a Python file's source names Helion (its box must import it at
 * the start, before the sandbox's lock), else 0. */
int judge_names_helion(const char *src, size_t len);

/* Judge the job. On success (return 0) *result is a new result (result.h)
 * the caller frees with result_free(); it has a verdict, any but
 * internal_error. A return < 0 is the judge's own fault (err says what;
 * *result is NULL): the caller reports internal_error and may retry; the
 * submission is not charged; KJ_ETIMEOUT is a job given up at
 * job->give_up_s, not judged. Either way, with job->leftover set, the
 * boxes' teardown is handed over in *job->leftover (see there). */
int judge_run(const struct judge_job *job, struct judge_result **result, struct kj_err *err);

/* The board's compiled files, kept across the jobs of one runner
 * (judge_boards.c): judge_job.boards. The caller owns it; free it with
 * judge_boards_free (NULL does nothing). NULL from new: out of memory. */
struct judge_boards;
struct judge_boards *judge_boards_new(void);
void judge_boards_free(struct judge_boards *b);

/* Compile-ahead (runner/ahead.h): whether a job of board spec in mode may
 * have its submission compiled before its turn, and with which
 * directives. 1 with *d set when the mode is test, benchmark or
 * leaderboard and the source's directives are ones the judge accepts for
 * the board (the judge parses them again, alike); 0 otherwise: the judge
 * sees the job as it is (a "rejected" verdict needs no compile, and a
 * tool's compile adds line information). */
int judge_ahead_dirs(const struct spec *spec, enum kj_mode mode, const char *source,
                     size_t len, struct directives *d);

/* The result of a job whose submission failed to compile before its turn
 * (job->compiled, ok 0, taken as by judge_run): the "compiled" and
 * "verdict" events through job->progress and a compile_error result, its
 * system block from dev (the runner's probe), as judge_run gives it; no
 * box is started. KJ_OK with *result the caller's (result_free), else
 * KJ_ENOMEM. */
int judge_compile_failed(const struct judge_job *job, const struct box_device *dev,
                         struct judge_result **result, struct kj_err *err);

#endif
