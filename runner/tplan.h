/*
 * tplan.h - the plan of timing protocol v2 (docs/timing.md): how many
 * buffer sets a shape gets, how its samples split into visits (one per
 * round over the shapes) and batches (one per context switch to the
 * reference box), which stream lane a batch runs on, and the empty-kernel
 * constant of each GPU model that the launch-path correction centres on.
 *
 * Pure functions and constants: judge_time.c drives the rounds with them,
 * tests/unit/test_tplan.c checks them without a GPU.
 *
 * One job under v2:
 *   warm-up  one pass over the shapes in the job's order, TPLAN_WARM_S in
 *            all (at least 10 samples each), rotating over the sets; its
 *            median sizes each shape (stats_planned_samples)
 *   rounds   TPLAN_ROUNDS rounds, each in its own submission box; in each,
 *            every shape in the job's order gets one visit of
 *            tplan_visit_samples() timed samples (fewer when the shape's
 *            wall cap would end it before its last round: tplan_fit_visit), in
 *            batches of at most `sets` samples (sample i of a batch on set
 *            i, one untimed lead-in first); after each batch the reference
 *            box checks every set of it. After the planned rounds, a shape
 *            whose stopping rule (stats.h) still says continue gets more
 *            visits, until the rule or its caps end it.
 *   empties  one empty-kernel sample after every TPLAN_EMPTY_EVERY-th timed
 *            sample, on the same lane, with the same protocol
 */
#ifndef KJ_TPLAN_H
#define KJ_TPLAN_H

#include <stdint.h>

#define TPLAN_ROUNDS 8            /* planned rounds over the shapes */
#define TPLAN_PROCESSES 8         /* a fresh submission box for each planned round (docs/timing.md) */
#define TPLAN_PY_PROCESSES 2      /* a Python box: its start (PyTorch's import, Triton's
                                   * first compiles) costs seconds, not milliseconds */
#define TPLAN_GPU_PROCESSES 2     /* a job ranked on GPU time: the kernels' own timestamps
                                   * carry no launch-path offset to average over processes
                                   * (docs/timing.md 8; GPU-time CV under 0.07 % with two
                                   * on the H200) */
#define TPLAN_MAX_WALL_S 2.2      /* per shape: v1's 3 s less what the fresh boxes cost */
#define TPLAN_GPU_MIN_TOTAL_S 0.0025 /* a job ranked on GPU time: sample time a shape is
                                      * planned for (the rule's 20 ms made 3000 samples of
                                      * fp8_quant's 6.7 us shape, 2 s of wall time). On the
                                      * H200, fp8_quant fast over 5 runs each: 5 ms, run
                                      * 5.26 s, CV 0.058 %; 2.5 ms, 4.35 s, 0.093 %; 1.25 ms,
                                      * 4.14 s, 0.121 % (docs/timing.md 8) */
#define TPLAN_GPU_TICK_NS 32.0    /* a job ranked on GPU time: the GPU timer's step. Every
                                   * CUPTI span on the H200 is a multiple of 32 ns, so a shape
                                   * whose median falls between two steps never got a CI
                                   * narrower than 16 ns; under 6.4 us that is above the
                                   * rule's 0.25 % and the shape ran to its wall cap (fp8_quant
                                   * fast.cu: 4-6 s of a 5 s goal). The rule also stops at
                                   * half a step (stats_rule.abs_ci). */
#define TPLAN_WALL_SHARE 0.9      /* the planned rounds of a shape end within this share of
                                   * TPLAN_MAX_WALL_S (tplan_fit_visit) */
#define TPLAN_CORRECT_WEIGHT 0.25 /* the share of the job's empty-kernel deviation subtracted */
#define TPLAN_EMPTY_EVERY 8       /* timed samples per interleaved empty-kernel sample */
#define TPLAN_WARM_S 0.2          /* the job's one warm-up, all shapes together */
#define TPLAN_SET_BYTES (4ull << 30) /* all buffer sets of one case together, at most */
#define TPLAN_EMPTY_TRIM 0.1      /* the job's empty-kernel estimate: 10 % trimmed mean */

/* Buffer sets for a case of case_bytes (all its buffers) on a device with
 * total_mem bytes: as many as fit in min(TPLAN_SET_BYTES, total_mem / 8),
 * at least 1 and at most max_sets. */
int tplan_sets(uint64_t case_bytes, long long total_mem, int max_sets);

/* Timed samples per visit: planned spread over rounds, rounded up. */
long tplan_visit_samples(long planned, int rounds);

/* Timed samples per visit for the `left` planned visits still to come of a
 * shape that took wall_s (wall time) over its n timed samples so far:
 * per_visit, or fewer so that those visits end within TPLAN_WALL_SHARE x
 * max_wall_s at the same wall time per sample. At least 1. Every planned
 * round, and so every process, then gets its share of the shape instead of
 * the wall cap ending it during the last ones. */
long tplan_fit_visit(long per_visit, int left, long n, double wall_s, double max_wall_s);

/* Samples the next batch of a visit takes: at most `sets`, at most what is
 * left of the visit (per_visit - done_in_visit) and of the shape's cap
 * (max_samples - done); 0 when the visit is over. */
int tplan_next_batch(int sets, long per_visit, long done_in_visit, long done, long max_samples);

/* The stream lane of a shape's batch number `batch` among `lanes`. */
int tplan_lane(long batch, int lanes);

/* The submission boxes a v2 job's rounds are spread over: asked when it is
 * 1 to TPLAN_ROUNDS (eval --processes), else TPLAN_PY_PROCESSES for a
 * Python file, TPLAN_GPU_PROCESSES for a job ranked on GPU time
 * (rank_gpu: the job ranks GPU time and its boxes record it), else
 * TPLAN_PROCESSES. */
int tplan_processes(int asked, int python, int rank_gpu);

/* The empty-kernel constant E_gpu of the GPU model the driver names
 * device_name ("NVIDIA H200"), in ns: the mean of the per-job empty-kernel
 * estimate over fresh processes, measured with protocol v2 (docs/timing.md,
 * "The constant"). 0 when the model is not in the table; *where (may be
 * NULL) gets a static note saying where the figure comes from, "" then. */
double tplan_gpu_empty_ns(const char *device_name, const char **where);

#endif
