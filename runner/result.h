/*
 * result.h - the judge's result as plain data, and its one serializer.
 *
 * The judge (judge.c) measures and fills a struct judge_result; nothing
 * else writes it. result_json() is the only place the runner builds the
 * result object of docs/protocol.md ("The result object"); the progress
 * events (compiling, compiled, test, benchmark, verdict) are built here
 * too, from the same structs. serve.c posts the JSON and decides the GPU
 * health check from r->verdict; report.c prints the table of
 * `kjudge-runner eval` from the struct. Numbers are what was measured:
 * times in nanoseconds as double, counts as integers, a shape that was not
 * timed says so by its flags, never by a zero.
 */
#ifndef KJ_RESULT_H
#define KJ_RESULT_H

#include <stdint.h>
#include <cjson/cJSON.h>
#include "compare.h"
#include "compile.h"
#include "directive.h"
#include "gpumon.h"
#include "protocol.h"
#include "spec.h"
#include "stats.h"

#define RESULT_MAX_MESSAGE 2048 /* the verdict's message */
#define RESULT_MAX_TEXT 1024    /* a shape's message, a graph's message */

/* A checked call's "status": absent (the call never got that far), or
 * "pass", "fail" (wrong output), "error" (the kernel did not finish). */
enum result_status { RESULT_NONE = 0, RESULT_PASS, RESULT_FAIL, RESULT_ERROR };

/* What the check of one call found. */
struct result_check {
    enum result_status status;
    char message[RESULT_MAX_TEXT];  /* written with status fail and error only */
    int has_mismatch;               /* 1: mismatch and mismatch_buffer hold the failing output */
    char mismatch_buffer[SPEC_MAX_NAME];
    struct compare_report mismatch;
};

/* One launch line as evaluated for a shape ("launches"). */
struct result_launch {
    char kernel[DIR_MAX_KERNEL];
    struct dir_dims dims;           /* grid, block and smem are written */
};

/* The timed part of a benchmark shape (written when timed = 1). */
struct shape_timing {
    struct stats_summary st;        /* median ... ci_hi in ns, n samples */
    enum stats_stop stop;           /* why sampling ended ("stop_reason") */
    double floor_ns;                /* physical floor, 0 = unknown */
    double wall_s, wall_ms_per_call;
    int verified_on_gpu;
    int sets, visits;               /* protocol v2: buffer sets and visits (0: v1, not written) */
};

/* The CUDA-graph cross-check of a short shape ("graph"). */
enum result_graph_state { RESULT_GRAPH_NONE = 0, RESULT_GRAPH_REFUSED, RESULT_GRAPH_MEASURED };
struct result_graph {
    enum result_graph_state state;  /* NONE: no "graph" key; REFUSED: "ns" null */
    double ns, ratio_to_median;
    long launches;
    int disagrees;
    char message[RESULT_MAX_TEXT];
};

/* One entry of "tests" or "benchmarks". A benchmark entry the judge never
 * reached is written as {} (reached = 0). */
struct result_shape {
    int reached;
    int index;                      /* the case's index in the board's list */
    int64_t val[SPEC_MAX_VARS];     /* the case's variables, in the board's order ("shape") */
    int has_seed;                   /* test entries of a judged run carry their seed */
    uint64_t seed;
    int has_launches;               /* benchmark entries of a timed run carry their launches */
    int nlaunch;
    struct result_launch launch[DIR_MAX_LAUNCHES];
    struct result_check check;
    long failed_call;               /* the timed call that failed, -1 = none */
    int timed;                      /* 1: t holds the shape's statistics */
    struct shape_timing t;
    int has_corrected;              /* 1: corrected_median_ns (the ranked median) is written */
    double corrected_median_ns;     /* protocol v2: median less the job's launch-path offset */
    int has_gpu;                    /* 1: gpu_* (the calls' GPU time, gtrace.h) are written */
    struct stats_summary gpu;       /* their summary, ns */
    int has_adjusted;               /* 1: adjusted_median_ns is written */
    double adjusted_median_ns;      /* median less the empty event pair's overhead */
    struct result_graph graph;
};

/* The host and device ("system"). */
struct result_system {
    char gpu[128], arch[16], pci[32];
    int sm_count;
    char cuda_driver_api[32];       /* "13.0" */
    char nvrtc[32];
    char sandbox[64];               /* protections of the run boxes */
    char python[256];               /* a Python entry's environment: "python 3.12.3, torch
                                     * 2.11.0+cu130, triton 3.6.0, helion 1.0.0"; "" else */
    double sm_clock_max_mhz, mem_clock_max_mhz, l2_bytes, l2_flush_bytes, peak_bandwidth_gbs;
    int has_copy_bw;
    double measured_copy_bandwidth_gbs;
    int has_clock_before, has_clock_after;
    double sm_clock_mhz_before, sm_clock_mhz_after;
    char driver[32];                /* NVML's driver version, "" = not read */
    int has_nvml_before, has_nvml_after;
    struct gpumon nvml_before, nvml_after;
    int has_verify;
    int verify_gpu;                 /* "verify": 1 "gpu", 0 "host" */
};

/* How the benchmark shapes were timed ("timing"; docs/timing.md). */
struct result_timing {
    int protocol;                   /* 1 or 2; 0 = no "timing" key (nothing was timed) */
    int version;                    /* the timing's version (protocol.h); 0 = KJ_TIMING_VERSION */
    int rounds, lanes, empty_every; /* v2's plan */
    int processes;                  /* v2: submission boxes the rounds ran in */
    long empty_samples;             /* v2: interleaved empty-kernel samples */
    int has_empty_run;
    double empty_run_ns;            /* v2: E_run, their 10 % trimmed mean */
    double empty_gpu_ns;            /* v2: E_gpu, the GPU model's constant; 0 = none known */
    char empty_gpu_source[160];     /* where E_gpu comes from */
    int corrected;                  /* 1: the medians were corrected by offset_ns */
    double offset_ns;               /* E_run - E_gpu */
    int has_raw_score;
    double raw_score_ns;            /* geometric mean of the raw medians */
    int gpu_time;                   /* 1: every timed call has its GPU time ("gpu_time") */
    char gpu_time_note[256];        /* CUPTI's version, or why there is no GPU time */
    int has_gpu_score;
    double gpu_score_ns;            /* geometric mean of the GPU-time medians */
    int ranked_gpu;                 /* 1: score_ns ranks the GPU-time medians ("ranked") */
    double wall_s;                  /* the benchmark shapes, baseline to score */
};

/* Where a job's wall time went ("steps_s", docs/protocol.md): seconds in
 * each step of judge_run, in the order they run. A Python box's start is
 * its interpreter's imports; restarts are the fresh submission boxes of the
 * timed rounds (inside benchmarks). */
struct result_steps {
    int has;                        /* 0: no "steps_s" key (a bare result) */
    double boxes;                   /* the boxes' start to both contexts ready (after compile) */
    double compile;                 /* the submission's and the board's compiles */
    double load;                    /* the modules loaded (a Python submission imported) */
    double tests;                   /* the test shapes */
    double benchmarks;              /* the timed shapes, restarts included */
    double restarts;                /* fresh submission boxes between rounds */
    int nrestarts;
    double tools;                   /* profile mode's shapes */
    double gaps;                    /* other jobs judged in this one's gaps (in benchmarks
                                     * or tools; serve mode) */
    double total;                   /* judge_run, start to result */
};

struct judge_result {
    int has_verdict;                /* 0 while the judge runs and has none yet */
    enum kj_verdict verdict;
    char message[RESULT_MAX_MESSAGE];
    int has_job;                    /* 1: leaderboard, mode, tests and benchmarks are written
                                     * (every result of judge_run; not a bare internal_error) */
    char leaderboard[SPEC_MAX_NAME];
    enum kj_mode mode;
    int nvars;                      /* the board's variables, names of every "shape" */
    char vars[SPEC_MAX_VARS][SPEC_MAX_NAME];
    int ntests, nbenches;
    struct result_shape tests[SPEC_MAX_CASES];
    struct result_shape benches[SPEC_MAX_CASES];
    int has_compile;                /* 1: compile holds the submission's report */
    struct compile_result compile;  /* owned log; cubin always NULL */
    int has_system;
    struct result_system sys;
    int has_baseline;
    double baseline_empty_kernel_ns, baseline_event_pair_ns;
    struct result_timing timing;
    struct result_steps steps;
    int has_score;                  /* 0: "score_ns" is null */
    double score_ns;
    cJSON *tool;                    /* owned, NULL when none: profile mode's "profile" or
                                     * sanitize mode's "sanitize" object (docs/profile.md) */
    char artifact[4096];            /* profile mode: the .ncu-rep file the supervisor uploads
                                     * and then removes with its folder; "" = none */
};

/* A new, empty result for board s (NULL: none, a bare result) in mode m.
 * Caller frees with result_free(); NULL when out of memory. */
struct judge_result *result_new(const struct spec *s, enum kj_mode m);

/* A bare internal_error result with msg, as the supervisor posts when the
 * judge failed: {"verdict", "message", "score_ns": null}. Caller frees
 * with result_free(); NULL when out of memory. */
struct judge_result *result_internal(const char *msg);

/* Free r and what it owns; accepts NULL. */
void result_free(struct judge_result *r);

/* Set the verdict and its message unless r has one already (the first
 * verdict wins); returns 1 when set. */
int result_set_verdict(struct judge_result *r, enum kj_verdict v, const char *msg);

/* Serializers. Each returns a new object the caller frees with
 * cJSON_Delete, or NULL when out of memory. */
cJSON *result_json(const struct judge_result *r);                 /* the whole result */
cJSON *result_compile_json(const struct compile_result *c);       /* "compile", and `compile` */
cJSON *result_shape_json(const struct judge_result *r, const struct result_shape *e); /* events "test", "benchmark" */
cJSON *result_verdict_json(const struct judge_result *r);         /* event "verdict" */
cJSON *result_compiling_json(const char *arch);                   /* event "compiling" */

#endif
