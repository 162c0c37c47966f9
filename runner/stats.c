/*
 * stats.c - summaries, geometric mean and the stopping rule over timing samples.
 *
 * Pure functions (see stats.h): the timing loop calls stats_stopper_check()
 * after each sample and stats_summarize() once per shape; the judge calls
 * stats_geomean() for the score and stats_below_floor() for the plausibility
 * flag, and in protocol v2 stats_planned_samples(), stats_trimmed_mean()
 * and stats_correct_offset(). Nothing here does I/O or keeps state outside
 * the caller's structs.
 */
#include "stats.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kj_err.h"

#define STATS_Z95 1.96           /* two-sided 95% normal quantile */
#define STATS_CHECK_EVERY 16     /* samples between O(n) evaluations */
#define STATS_NOISE_FROM 64      /* first n that yields a noise estimate */
#define STATS_NOISE_RING 64      /* estimates compared for stability */
#define STATS_NOISE_STABLE 0.05  /* relative stdev of the estimates */

/* ---- order statistics ------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* 0-based ranks of the ~95% confidence interval of the median among n
 * sorted samples: 1-based j = floor(n/2 - z*sqrt(n)/2) and
 * k = ceil(1 + n/2 + z*sqrt(n)/2), rounded outward and clamped to [1, n]. */
static void ci_ranks(size_t n, size_t *lo, size_t *hi)
{
    double half = STATS_Z95 * sqrt((double)n) / 2.0;
    double j = floor((double)n / 2.0 - half);
    double k = ceil(1.0 + (double)n / 2.0 + half);

    if (j < 1.0)
        j = 1.0;
    if (k > (double)n)
        k = (double)n;
    *lo = (size_t)j - 1;
    *hi = (size_t)k - 1;
}

/* Type 7 quantile p of sorted[0..n), n >= 1. */
static double quantile_sorted(const double *sorted, size_t n, double p)
{
    double h = (double)(n - 1) * p;
    size_t i = (size_t)floor(h);
    double frac = h - (double)i;

    if (i + 1 >= n)
        return sorted[n - 1];
    return sorted[i] + frac * (sorted[i + 1] - sorted[i]);
}

static double median3(double a, double b, double c)
{
    if (a > b) { double t = a; a = b; b = t; }
    if (b > c) b = c;
    return a > b ? a : b;
}

/* Move the values of a[lo..hi) that are below pivot (or, with or_equal,
 * not above it) to the front; returns where the rest begins. Branch-free
 * inner loop: timing samples are noisy, so comparisons do not predict. */
static size_t partition_below(double *a, size_t lo, size_t hi, double pivot, int or_equal)
{
    size_t j = lo;

    for (size_t i = lo; i < hi; i++) {
        double v = a[i];
        size_t below = or_equal ? (v <= pivot) : (v < pivot);
        a[i] = a[j];
        a[j] = v;
        j += below;
    }
    return j;
}

/* Rearrange a[lo..hi) so that a[k] holds the value it would have if the
 * range were sorted, smaller-or-equal values before it and larger-or-equal
 * after. The pivot is a median of three values of the range, so at least
 * one value equals it and every round shrinks the range; after too many
 * rounds the rest is sorted, which bounds the worst case. Values must be
 * finite. */
static void select_kth(double *a, size_t lo, size_t hi, size_t k)
{
    int rounds = 0;

    while (hi - lo > 1) {
        if (++rounds > 64) {
            qsort(a + lo, hi - lo, sizeof *a, cmp_double);
            return;
        }
        double pivot = median3(a[lo], a[lo + (hi - lo) / 2], a[hi - 1]);
        size_t lt = partition_below(a, lo, hi, pivot, 0);
        if (k < lt) {
            hi = lt;
        } else if (lt > lo) {
            lo = lt;
        } else { /* pivot is the minimum: split off the values equal to it */
            size_t le = partition_below(a, lo, hi, pivot, 1);
            if (k < le)
                return;
            lo = le;
        }
    }
}

/* ---- summaries ---------------------------------------------------------- */

static void summary_nan(struct stats_summary *out, long n)
{
    out->median = out->mean = out->stdev = out->min = out->max = NAN;
    out->q1 = out->q3 = out->ci_lo = out->ci_hi = NAN;
    out->n = n;
}

/* Mean and sample stdev of x[0..n), n >= 1; two passes for accuracy. */
static void mean_stdev(const double *x, size_t n, double *mean, double *stdev)
{
    double sum = 0.0, ss = 0.0;

    for (size_t i = 0; i < n; i++)
        sum += x[i];
    *mean = sum / (double)n;
    if (n < 2) {
        *stdev = 0.0;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        double d = x[i] - *mean;
        ss += d * d;
    }
    *stdev = sqrt(ss / (double)(n - 1));
}

static int all_finite(const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return 0;
    return 1;
}

int stats_summarize(const double *samples, size_t n, struct stats_summary *out)
{
    double *sorted;
    size_t lo, hi;

    if (out == NULL)
        return KJ_EINVAL;
    summary_nan(out, (long)n);
    if (n == 0 || samples == NULL || n > SIZE_MAX / sizeof *sorted || !all_finite(samples, n))
        return KJ_EINVAL;
    sorted = malloc(n * sizeof *sorted);
    if (sorted == NULL)
        return KJ_ENOMEM;
    memcpy(sorted, samples, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_double);

    mean_stdev(sorted, n, &out->mean, &out->stdev);
    out->min = sorted[0];
    out->max = sorted[n - 1];
    out->median = quantile_sorted(sorted, n, 0.5);
    out->q1 = quantile_sorted(sorted, n, 0.25);
    out->q3 = quantile_sorted(sorted, n, 0.75);
    ci_ranks(n, &lo, &hi);
    out->ci_lo = sorted[lo];
    out->ci_hi = sorted[hi];
    free(sorted);
    return 0;
}

double stats_geomean(const double *x, size_t n)
{
    double sum = 0.0;

    if (n == 0 || x == NULL)
        return NAN;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(x[i]) || x[i] <= 0.0)
            return NAN;
        sum += log(x[i]);
    }
    return exp(sum / (double)n);
}

double stats_trimmed_mean(const double *x, size_t n, double trim)
{
    double *sorted, sum = 0.0;
    size_t cut;

    if (x == NULL || n == 0 || !(trim >= 0.0 && trim < 0.5) || n > SIZE_MAX / sizeof *sorted ||
        !all_finite(x, n))
        return NAN;
    if ((sorted = malloc(n * sizeof *sorted)) == NULL)
        return NAN;
    memcpy(sorted, x, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_double);
    cut = (size_t)floor(trim * (double)n);
    for (size_t i = cut; i < n - cut; i++)
        sum += sorted[i];
    free(sorted);
    return sum / (double)(n - 2 * cut);
}

long stats_planned_samples(double warm_median_ns, const struct stats_rule *rule)
{
    double want;

    if (!(warm_median_ns > 0.0) || !isfinite(warm_median_ns))
        return rule->min_samples;
    want = ceil(rule->min_total_s * 1e9 / warm_median_ns);
    if (want < (double)rule->min_samples)
        return rule->min_samples;
    if (want > (double)rule->max_samples)
        return rule->max_samples;
    return (long)want;
}

int stats_correct_offset(const double *medians, size_t n, double e_run_ns, double e_gpu_ns,
                         double weight, double *corrected, double *offset_ns)
{
    double dev = e_run_ns - e_gpu_ns, off = weight * dev;
    int ok = e_gpu_ns > 0.0 && isfinite(e_gpu_ns) && e_run_ns > 0.0 && isfinite(e_run_ns) &&
             fabs(dev) <= STATS_MAX_OFFSET_FRAC * e_gpu_ns;

    for (size_t i = 0; ok && i < n; i++)
        ok = isfinite(medians[i]) && medians[i] - off >= 0.5 * medians[i];
    *offset_ns = ok ? off : 0.0;
    for (size_t i = 0; i < n; i++)
        corrected[i] = ok ? medians[i] - off : medians[i];
    return ok;
}

int stats_below_floor(double median_ns, double floor_ns)
{
    if (!(floor_ns > 0.0))
        return 0;
    return !(median_ns >= floor_ns);
}

/* ---- stopping rule ------------------------------------------------------ */

const char *stats_stop_name(enum stats_stop s)
{
    switch (s) {
    case STATS_CONTINUE: return "continue";
    case STATS_STOP_CI: return "ci_converged";
    case STATS_STOP_NOISE: return "noise_stable";
    case STATS_STOP_MAX_SAMPLES: return "max_samples";
    case STATS_STOP_MAX_TIME: return "max_time";
    }
    return "unknown";
}

void stats_stopper_init(struct stats_stopper *st, const struct stats_rule *rule)
{
    static const struct stats_rule def = STATS_RULE_DEFAULT;

    memset(st, 0, sizeof *st);
    st->rule = rule != NULL ? *rule : def;
}

/* CI half-width of the median of x[0..n) (finite, n >= 1), found by
 * selection on a private copy, with the median in *med. Returns NaN if the
 * copy cannot be made. */
static double ci_halfwidth(const double *x, size_t n, double *med)
{
    double *a = malloc(n * sizeof *a);
    size_t lo, hi, mhi = n / 2, mlo = (n - 1) / 2;
    double width;

    *med = NAN;
    if (a == NULL)
        return NAN;
    memcpy(a, x, n * sizeof *a);
    ci_ranks(n, &lo, &hi);
    select_kth(a, 0, n, mhi);
    if (mlo < mhi) { /* the largest value below rank mhi */
        size_t at = 0;
        for (size_t i = 1; i < mhi; i++)
            at = a[i] > a[at] ? i : at;
        double t = a[at];
        a[at] = a[mlo];
        a[mlo] = t;
    }
    if (lo < mlo)
        select_kth(a, 0, mlo, lo);
    if (hi > mhi)
        select_kth(a, mhi + 1, n, hi);
    *med = (a[mlo] + a[mhi]) / 2.0;
    width = (a[hi] - a[lo]) / 2.0;
    free(a);
    return width;
}

/* 1 if the CI of the median meets rule r: relative half-width <= rel_ci
 * (+inf for a zero median with a nonzero interval), or abs_ci > 0 and the
 * half-width <= abs_ci. Samples quantized by a timer (the H200's GPU timer
 * steps 32 ns) can put the median between two ticks, where no number of
 * samples narrows the interval below half a tick; on a 4 us kernel that is
 * 0.4 %, above rel_ci. */
static int ci_converged(const double *x, size_t n, const struct stats_rule *r)
{
    double med, width = ci_halfwidth(x, n, &med);
    double rel;

    if (isnan(width))
        return 0;
    rel = width == 0.0 ? 0.0 : med != 0.0 ? width / fabs(med) : INFINITY;
    return rel <= r->rel_ci || (r->abs_ci > 0 && width <= r->abs_ci);
}

/* 1 if the ring is full and its estimates vary by less than 5% relative. */
static int noise_stable(const struct stats_stopper *st)
{
    double mean, sd;

    if (st->nnoise < STATS_NOISE_RING)
        return 0;
    mean_stdev(st->noise, STATS_NOISE_RING, &mean, &sd);
    if (mean == 0.0)
        return sd == 0.0;
    return sd / fabs(mean) < STATS_NOISE_STABLE;
}

/* Append an estimate; once the ring is full the oldest one drops out. */
static void noise_push(struct stats_stopper *st, double rel_stdev)
{
    if (st->nnoise < STATS_NOISE_RING) {
        st->noise[st->nnoise++] = rel_stdev;
        return;
    }
    memmove(st->noise, st->noise + 1, (STATS_NOISE_RING - 1) * sizeof st->noise[0]);
    st->noise[STATS_NOISE_RING - 1] = rel_stdev;
}

enum stats_stop stats_stopper_check(struct stats_stopper *st, const double *samples,
                                    size_t n, double total_s, double wall_s)
{
    const struct stats_rule *r = &st->rule;
    int mins_met, regular, finite;

    if ((long)n >= r->max_samples)
        return STATS_STOP_MAX_SAMPLES;
    if (wall_s >= r->max_wall_s)
        return STATS_STOP_MAX_TIME;
    if (samples == NULL || n == 0)
        return STATS_CONTINUE;
    mins_met = (long)n >= r->min_samples && total_s >= r->min_total_s;
    /* Regular evaluations every 16 samples keep the noise estimates evenly
     * spaced; between the first n that meets the minimums and the next
     * regular one, the CI alone is evaluated on every call. */
    regular = (long)n - st->last_checked_n >= STATS_CHECK_EVERY;
    if (!regular && !(mins_met && st->last_checked_n < r->min_samples))
        return STATS_CONTINUE;

    finite = all_finite(samples, n);
    if (regular) {
        if (finite && (long)n >= STATS_NOISE_FROM) {
            double mean, sd;
            mean_stdev(samples, n, &mean, &sd);
            noise_push(st, mean != 0.0 ? sd / fabs(mean) : 0.0);
        }
        st->last_checked_n = (long)n;
    }
    if (!mins_met || !finite)
        return STATS_CONTINUE;
    if (ci_converged(samples, n, r))
        return STATS_STOP_CI;
    if (noise_stable(st))
        return STATS_STOP_NOISE;
    return STATS_CONTINUE;
}
