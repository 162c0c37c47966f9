/*
 * stats.h - pure statistics over timing samples (nanoseconds as double).
 *
 * The timing loop (runner/judge_time.c) feeds every accepted sample of a
 * shape to stats_stopper_check() to decide when to stop, then
 * stats_summarize() turns the samples into the numbers stored per shape
 * (median = the score); the score of a submission is stats_geomean() of the
 * per-shape medians, and stats_below_floor() is the physical-floor
 * plausibility check. Protocol v2 (docs/timing.md) also sizes each shape
 * with stats_planned_samples(), estimates the job's empty-kernel time with
 * stats_trimmed_mean() and corrects the medians for the job's launch-path
 * offset with stats_correct_offset(). No I/O here.
 */
#ifndef KJ_STATS_H
#define KJ_STATS_H

#include <stddef.h>

/* Summary of n samples. ci_lo/ci_hi bound the median with ~95% confidence
 * (order statistics, normal approximation to the binomial). */
struct stats_summary {
    double median, mean, stdev, min, max, q1, q3, ci_lo, ci_hi;
    long n;
};

/* Summarize samples[0..n) into *out. samples is not modified (a private
 * copy is sorted). Quartiles interpolate linearly between order statistics
 * (Hyndman & Fan type 7); stdev is the sample stdev (divides by n-1).
 * Degenerate cases:
 *   n == 0               -> every field NaN, n = 0, returns KJ_EINVAL;
 *   a NaN or infinity    -> every field NaN, n set, returns KJ_EINVAL;
 *   n == 1               -> every statistic equals the sample, stdev 0,
 *                           ci = [x, x].
 * Returns 0, KJ_EINVAL as above (or for NULL pointers), KJ_ENOMEM. */
int stats_summarize(const double *samples, size_t n, struct stats_summary *out);

/* exp(mean(log x)). NaN if n == 0 or any x is <= 0 or not finite. */
double stats_geomean(const double *x, size_t n);

/* The stopping rule of TIMING.md item 8. */
struct stats_rule {
    long min_samples;   /* never stop by CI/noise below this many samples */
    double min_total_s; /* ... nor below this much accumulated sample time */
    double rel_ci;      /* stop when CI half-width / median <= this */
    long max_samples;   /* hard cap on samples */
    double max_wall_s;  /* hard cap on wall time of the measurement */
    double abs_ci;      /* ... or when the CI half-width <= this, in the samples'
                         * unit (0: no such test): half a timer tick, the
                         * finest difference quantized samples can show */
};
#define STATS_RULE_DEFAULT {100, 0.020, 0.0025, 10000, 3.0, 0.0}

enum stats_stop {
    STATS_CONTINUE = 0,
    STATS_STOP_CI,          /* "ci_converged" */
    STATS_STOP_NOISE,       /* "noise_stable" */
    STATS_STOP_MAX_SAMPLES, /* "max_samples" */
    STATS_STOP_MAX_TIME     /* "max_time" */
};

/* Static name stored as the result's "stop_reason"; "unknown" if out of range. */
const char *stats_stop_name(enum stats_stop s);

/* State of one shape's stopping decision. Plain data, no heap pointers;
 * initialize with stats_stopper_init() for every shape.
 * noise[0..nnoise) holds the latest relative-stdev estimates, oldest
 * first; nnoise saturates at 64, after which each new estimate pushes the
 * oldest out. last_checked_n is the n of the last evaluation that did O(n)
 * work (0 before the first). */
struct stats_stopper {
    struct stats_rule rule;
    double noise[64];
    int nnoise;
    long last_checked_n;
};

/* Start a stopper with *rule (copied; NULL means STATS_RULE_DEFAULT). */
void stats_stopper_init(struct stats_stopper *st, const struct stats_rule *rule);

/* Decide after a sample whether to stop. samples[0..n) are all accepted
 * samples so far (ns), total_s their sum in seconds, wall_s the wall time
 * of the measurement so far. Rules, in order:
 *   n >= max_samples -> STATS_STOP_MAX_SAMPLES;
 *   wall_s >= max_wall_s -> STATS_STOP_MAX_TIME;
 *   n < min_samples or total_s < min_total_s -> STATS_CONTINUE;
 *   CI half-width / median <= rel_ci, or abs_ci > 0 and CI half-width
 *     <= abs_ci -> STATS_STOP_CI;
 *   64 noise estimates exist and their relative stdev < 5% -> STATS_STOP_NOISE;
 *   otherwise STATS_CONTINUE.
 * Cheap to call after every sample: O(n) work (a selection for the CI, a
 * pass for the noise estimate) happens only when n - last_checked_n >= 16
 * (a "regular" evaluation, which also sets last_checked_n = n), plus the CI
 * alone on each call from the first n that meets both minimums up to the
 * next regular evaluation (at most 15 calls), so a noiseless sequence stops
 * at exactly min_samples. From n = 64 on, each regular evaluation pushes
 * the current relative stdev of all samples into the noise ring, even while
 * below the minimums. If the minimums are first met by total_s after a
 * regular evaluation past min_samples, the CI may be evaluated up to 15
 * samples late.
 * Samples containing NaN or infinity never stop by CI or noise (the caps
 * still apply); neither does an allocation failure. */
enum stats_stop stats_stopper_check(struct stats_stopper *st, const double *samples,
                                    size_t n, double total_s, double wall_s);

/* The mean of x[0..n) after dropping floor(trim * n) of the smallest and as
 * many of the largest values (0 <= trim < 0.5; trim 0.1 is the "10 %
 * trimmed mean" of docs/timing.md). NaN if n == 0, x is NULL, trim is out
 * of range, a value is not finite, or out of memory. */
double stats_trimmed_mean(const double *x, size_t n, double trim);

/* Timed samples planned for a shape whose warm-up median is warm_median_ns:
 * enough for rule->min_total_s of sample time, at least rule->min_samples
 * and at most rule->max_samples (min_samples when the median is not a
 * positive finite number). */
long stats_planned_samples(double warm_median_ns, const struct stats_rule *rule);

/* The largest launch-path offset corrected, relative to the GPU's constant:
 * beyond it the job's empty-kernel estimate is not believed. */
#define STATS_MAX_OFFSET_FRAC 0.25

/* Protocol v2's correction (docs/timing.md): the job's launch-path offset is
 * offset = weight x (e_run_ns - e_gpu_ns) (the share weight of the job's
 * empty-kernel estimate less the GPU model's constant), and corrected[i] =
 * medians[i] - offset for i < n. Returns 1 when applied, with *offset_ns
 * set. Returns 0 and copies the medians unchanged (*offset_ns = 0) when
 * e_gpu_ns is not positive (no constant for this GPU), e_run_ns is not
 * finite and positive, |e_run_ns - e_gpu_ns| > STATS_MAX_OFFSET_FRAC *
 * e_gpu_ns, or a corrected median would fall below half its raw value.
 * medians and corrected may be the same array. */
int stats_correct_offset(const double *medians, size_t n, double e_run_ns, double e_gpu_ns,
                         double weight, double *corrected, double *offset_ns);

/* 1 if floor_ns > 0 and median_ns is below it (physically impossible: flag
 * for review), else 0. A NaN median with a positive floor is flagged too. */
int stats_below_floor(double median_ns, double floor_ns);

#endif
