/*
 * test_stats.c - unit tests for runner/stats.c.
 *
 * Synthetic sample sets with known summaries (constant, ramp, textbook
 * quartiles, heavy tails), geometric means, degenerate inputs, every stop
 * reason of the stopping rule and the physical-floor check. Needs no GPU.
 */
#define KT_MAIN
#include "kt.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kj_err.h"
#include "stats.h"

static int near(double a, double b, double tol)
{
    return fabs(a - b) <= tol * (fabs(b) > 1.0 ? fabs(b) : 1.0);
}

/* Deterministic uniform [0, 1) generator so the tests never flake. */
static double lcg_next(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*s >> 11) / 9007199254740992.0;
}

static void test_constant(void)
{
    double x[10];
    struct stats_summary s;
    for (int i = 0; i < 10; i++)
        x[i] = 5.0;
    KT_CHECK(stats_summarize(x, 10, &s) == 0, "constant");
    KT_CHECK(s.median == 5.0 && s.mean == 5.0 && s.min == 5.0 && s.max == 5.0, "center");
    KT_CHECK(s.q1 == 5.0 && s.q3 == 5.0, "quartiles");
    KT_CHECK(s.stdev == 0.0, "stdev %g", s.stdev);
    KT_CHECK(s.ci_lo == 5.0 && s.ci_hi == 5.0, "ci");
    KT_CHECK(s.n == 10, "n");
}

static void test_ramp(void)
{
    double x[100];
    struct stats_summary s;
    /* Reversed, to check sorting and that the input stays as it was. */
    for (int i = 0; i < 100; i++)
        x[i] = 100.0 - i;
    KT_CHECK(stats_summarize(x, 100, &s) == 0, "ramp");
    KT_CHECK(x[0] == 100.0 && x[99] == 1.0, "input untouched");
    KT_CHECK(s.median == 50.5 && s.mean == 50.5, "median %g mean %g", s.median, s.mean);
    KT_CHECK(near(s.stdev, sqrt(100.0 * 101.0 / 12.0), 1e-12), "stdev %g", s.stdev);
    KT_CHECK(s.q1 == 25.75 && s.q3 == 75.25, "q1 %g q3 %g", s.q1, s.q3);
    KT_CHECK(s.min == 1.0 && s.max == 100.0, "min/max");
    /* n=100: ranks floor(50 - 9.8) = 40 and ceil(51 + 9.8) = 61. */
    KT_CHECK(s.ci_lo == 40.0 && s.ci_hi == 61.0, "ci [%g, %g]", s.ci_lo, s.ci_hi);
}

static void test_known_quartiles(void)
{
    double a[] = {40, 7, 39, 15, 41, 36};
    double b[] = {3, 1, 5, 2, 4};
    struct stats_summary s;
    KT_CHECK(stats_summarize(a, 6, &s) == 0, "six");
    KT_CHECK(near(s.q1, 20.25, 1e-12) && near(s.q3, 39.75, 1e-12), "q1 %g q3 %g", s.q1, s.q3);
    KT_CHECK(s.median == 37.5, "median %g", s.median);
    KT_CHECK(s.ci_lo == 7.0 && s.ci_hi == 41.0, "small-n ci clamps [%g, %g]", s.ci_lo, s.ci_hi);
    KT_CHECK(stats_summarize(b, 5, &s) == 0, "five");
    KT_CHECK(s.q1 == 2.0 && s.median == 3.0 && s.q3 == 4.0, "1..5");
    KT_CHECK(near(s.stdev, sqrt(2.5), 1e-12), "stdev %g", s.stdev);
}

static void test_heavy_tail(void)
{
    enum { N = 1000 };
    double *x = malloc(N * sizeof *x);
    struct stats_summary s;
    uint64_t seed = 7;
    for (int i = 0; i < N; i++)
        x[i] = 1000.0 + lcg_next(&seed);
    for (int i = 0; i < N; i += 100)
        x[i] = 1e9; /* 1% interference outliers */
    KT_CHECK(stats_summarize(x, N, &s) == 0, "heavy");
    KT_CHECK(s.median > 1000.0 && s.median < 1001.0, "median resists %g", s.median);
    KT_CHECK(s.q3 < 1001.0 && s.ci_hi < 1001.0, "q3 %g ci_hi %g", s.q3, s.ci_hi);
    KT_CHECK(s.mean > 1e7, "mean pulled %g", s.mean);
    KT_CHECK(s.max == 1e9 && s.min >= 1000.0, "extremes");
    KT_CHECK(s.ci_lo <= s.median && s.median <= s.ci_hi, "ci brackets median");
    free(x);
}

static void test_degenerate(void)
{
    struct stats_summary s;
    double one = 42.0;
    double bad[] = {1.0, NAN, 3.0};
    double inf[] = {1.0, INFINITY};

    KT_CHECK(stats_summarize(&one, 0, &s) == KJ_EINVAL, "n=0");
    KT_CHECK(isnan(s.median) && isnan(s.mean) && isnan(s.ci_lo) && s.n == 0, "n=0 NaN");
    KT_CHECK(stats_summarize(NULL, 0, &s) == KJ_EINVAL, "NULL n=0");
    KT_CHECK(stats_summarize(&one, 1, &s) == 0, "n=1");
    KT_CHECK(s.median == 42 && s.mean == 42 && s.min == 42 && s.max == 42 &&
             s.q1 == 42 && s.q3 == 42 && s.stdev == 0 && s.ci_lo == 42 &&
             s.ci_hi == 42 && s.n == 1, "n=1 all equal");
    KT_CHECK(stats_summarize(bad, 3, &s) == KJ_EINVAL, "NaN");
    KT_CHECK(isnan(s.median) && s.n == 3, "NaN summary");
    KT_CHECK(stats_summarize(inf, 2, &s) == KJ_EINVAL, "inf");
    KT_CHECK(stats_summarize(&one, 1, NULL) == KJ_EINVAL, "NULL out");
}

static void test_geomean(void)
{
    double a[] = {1, 10, 100};
    double b[] = {2, 8};
    double c[] = {4210.5};
    double z[] = {1, 0};
    double neg[] = {1, -2};
    double nonf[] = {1, INFINITY};
    double nan_in[] = {NAN, 1};
    KT_CHECK(near(stats_geomean(a, 3), 10.0, 1e-12), "1,10,100");
    KT_CHECK(near(stats_geomean(b, 2), 4.0, 1e-12), "2,8");
    KT_CHECK(near(stats_geomean(c, 1), 4210.5, 1e-12), "single");
    KT_CHECK(isnan(stats_geomean(a, 0)), "n=0");
    KT_CHECK(isnan(stats_geomean(z, 2)), "zero");
    KT_CHECK(isnan(stats_geomean(neg, 2)), "negative");
    KT_CHECK(isnan(stats_geomean(nonf, 2)), "inf");
    KT_CHECK(isnan(stats_geomean(nan_in, 2)), "nan");
}

/* Feed samples one at a time, as the timing loop does; returns the first
 * non-CONTINUE decision and its n in *at (or CONTINUE with *at = n). */
static enum stats_stop feed(struct stats_stopper *st, const double *x, size_t n,
                            double wall_per_sample, size_t *at)
{
    double total = 0.0;
    for (size_t i = 1; i <= n; i++) {
        total += x[i - 1] * 1e-9;
        enum stats_stop r = stats_stopper_check(st, x, i, total, wall_per_sample * (double)i);
        if (r != STATS_CONTINUE) {
            *at = i;
            return r;
        }
    }
    *at = n;
    return STATS_CONTINUE;
}

static void test_stop_ci(void)
{
    enum { N = 500 };
    double x[N];
    struct stats_stopper st;
    size_t at;
    for (int i = 0; i < N; i++)
        x[i] = 1e6; /* 1 ms each: min_total_s is met long before 100 */
    stats_stopper_init(&st, NULL);
    KT_CHECK(feed(&st, x, N, 1e-3, &at) == STATS_STOP_CI, "noiseless stops by CI");
    KT_CHECK(at == 100, "at exactly min_samples, got %zu", at);

    /* Same samples, but 1 ns each: 20 ms of kernel time is never reached. */
    for (int i = 0; i < N; i++)
        x[i] = 1.0;
    stats_stopper_init(&st, NULL);
    KT_CHECK(feed(&st, x, N, 1e-6, &at) == STATS_CONTINUE, "below min_total_s continues");

    /* min_total_s binding after min_samples: stops within 16 samples of it. */
    struct stats_rule r = STATS_RULE_DEFAULT;
    for (int i = 0; i < N; i++)
        x[i] = 1e5; /* 0.1 ms: 20 ms after 200 samples */
    stats_stopper_init(&st, &r);
    KT_CHECK(feed(&st, x, N, 1e-4, &at) == STATS_STOP_CI && at >= 200 && at < 216,
             "time minimum binds, stopped at %zu", at);
}

static void test_stop_noise(void)
{
    enum { N = 10000 };
    double *x = malloc(N * sizeof *x);
    struct stats_stopper st;
    uint64_t seed = 12345;
    size_t at;
    for (int i = 0; i < N; i++)
        x[i] = 1e6 * (1.0 + lcg_next(&seed)); /* uniform 1..2 ms */
    stats_stopper_init(&st, NULL);
    KT_CHECK(stats_stopper_check(&st, x, 100, 0.15, 0.2) == STATS_CONTINUE,
             "noisy at min_samples continues");
    stats_stopper_init(&st, NULL);
    enum stats_stop r = feed(&st, x, N, 1e-4, &at);
    KT_CHECK(r == STATS_STOP_NOISE, "noisy stops by noise, got %s at %zu",
             stats_stop_name(r), at);
    KT_CHECK(at >= 64 + 63 * 16 && at < N, "noise needs 64 estimates, at %zu", at);
    KT_CHECK(st.nnoise == 64, "ring full %d", st.nnoise);

    /* Cheap enough to call after every sample up to the cap, with the
     * CI never converging (rel_ci < 0) so every evaluation does the work. */
    struct stats_rule never = {100, 0.020, -1.0, N, 1e9, 0.0};
    double total = 0.0;
    int early = 0;
    clock_t t0 = clock();
    stats_stopper_init(&st, &never);
    for (size_t i = 1; i <= N; i++) {
        total += x[i - 1] * 1e-9;
        r = stats_stopper_check(&st, x, i, total, 0.0);
        early += i < N && r != STATS_CONTINUE && r != STATS_STOP_NOISE;
    }
    double cpu = (double)(clock() - t0) / CLOCKS_PER_SEC;
    KT_CHECK(r == STATS_STOP_MAX_SAMPLES && early == 0, "cap at N, %s", stats_stop_name(r));
    KT_CHECK(cpu < 2.0, "10000 checks took %.3f s", cpu);
    printf("stopper: %d checks in %.1f ms CPU\n", N, cpu * 1e3);
    free(x);
}

/* Samples on a timer's 32 ns ticks with the median between two of them
 * (a 4.27 us kernel, half its samples at 4256 ns, half at 4288): the CI
 * never narrows below 16 ns, 0.37 % of the median, above rel_ci; with
 * abs_ci at half a tick it stops at min_samples. */
static void test_stop_ticks(void)
{
    enum { N = 1000 };
    double x[N];
    struct stats_stopper st;
    struct stats_rule r = {100, 0.0, 0.0025, N, 1e9, 0.0};
    size_t at;
    for (int i = 0; i < N; i++)
        x[i] = i % 2 ? 4256.0 : 4288.0;
    stats_stopper_init(&st, &r);
    enum stats_stop got = feed(&st, x, N, 1e-5, &at);
    KT_CHECK(got == STATS_STOP_MAX_SAMPLES && at == N, "without abs_ci: %s at %zu", stats_stop_name(got), at);
    r.abs_ci = 16.0;
    stats_stopper_init(&st, &r);
    got = feed(&st, x, N, 1e-5, &at);
    KT_CHECK(got == STATS_STOP_CI && at == 100, "abs_ci half a tick: %s at %zu", stats_stop_name(got), at);
    r.abs_ci = 15.0;
    stats_stopper_init(&st, &r);
    got = feed(&st, x, N, 1e-5, &at);
    KT_CHECK(got == STATS_STOP_MAX_SAMPLES, "abs_ci under the half-width: %s at %zu", stats_stop_name(got), at);
    /* A wide spread is not cut short by abs_ci: 1..2 ms uniform. */
    uint64_t seed = 7;
    for (int i = 0; i < N; i++)
        x[i] = 1e6 * (1.0 + lcg_next(&seed));
    r.abs_ci = 16.0;
    stats_stopper_init(&st, &r);
    got = feed(&st, x, 200, 1e-5, &at);
    KT_CHECK(got == STATS_CONTINUE, "wide spread, abs_ci 16 ns: %s at %zu", stats_stop_name(got), at);
}

static void test_stop_caps(void)
{
    double x[200];
    struct stats_stopper st;
    struct stats_rule r = {100, 0.020, 0.0025, 50, 3.0, 0.0};
    size_t at;
    uint64_t seed = 1;
    for (int i = 0; i < 200; i++)
        x[i] = 1e6 * (1.0 + lcg_next(&seed));
    stats_stopper_init(&st, &r);
    KT_CHECK(feed(&st, x, 200, 1e-3, &at) == STATS_STOP_MAX_SAMPLES && at == 50,
             "max_samples at %zu", at);
    stats_stopper_init(&st, NULL);
    KT_CHECK(stats_stopper_check(&st, x, 10, 0.01, 3.0) == STATS_STOP_MAX_TIME, "max_time");
    KT_CHECK(stats_stopper_check(&st, x, 10, 0.01, 2.9) == STATS_CONTINUE, "before max_time");
    stats_stopper_init(&st, NULL);
    KT_CHECK(stats_stopper_check(&st, x, 10000, 0.01, 5.0) == STATS_STOP_MAX_SAMPLES,
             "samples cap checked before time cap");

    /* A NaN sample never converges, but the caps still end it. */
    double y[300];
    for (int i = 0; i < 300; i++)
        y[i] = 1e6;
    y[3] = NAN;
    stats_stopper_init(&st, &r);
    st.rule.max_samples = 300;
    KT_CHECK(feed(&st, y, 300, 1e-3, &at) == STATS_STOP_MAX_SAMPLES && at == 300,
             "NaN sample: only caps, at %zu", at);
}

/* The stopper finds the CI by selection, stats_summarize() by sorting:
 * they must agree on every data set, duplicates and odd/even n included. */
static void test_selection_matches_sort(void)
{
    enum { MAXN = 3000 };
    double *x = malloc(MAXN * sizeof *x);
    uint64_t seed = 2024;
    int agree = 0, trials = 0;
    for (size_t n = 100; n <= MAXN; n = n * 3 / 2 + 1) {
        for (int kind = 0; kind < 4; kind++) {
            for (size_t i = 0; i < n; i++) {
                double u = lcg_next(&seed);
                x[i] = kind == 0 ? 1e3 + u * 50.0            /* uniform */
                     : kind == 1 ? (double)(1000 + (int)(u * 5)) /* heavy duplicates */
                     : kind == 2 ? 1e3 + (double)i           /* sorted */
                     : 1e3 + (double)(n - i) + (u < 0.05 ? 1e6 : 0.0); /* reversed, outliers */
            }
            struct stats_summary s;
            stats_summarize(x, n, &s);
            double rel = (s.ci_hi - s.ci_lo) / 2.0 / s.median;
            struct stats_rule at = {(long)n, 0.0, rel * (1 + 1e-9), 1000000, 1e9, 0.0};
            struct stats_rule below = {(long)n, 0.0, rel * (1 - 1e-6), 1000000, 1e9, 0.0};
            struct stats_stopper st;
            stats_stopper_init(&st, &at);
            int ok = stats_stopper_check(&st, x, n, 1.0, 0.0) == STATS_STOP_CI;
            stats_stopper_init(&st, &below);
            ok &= rel == 0.0 || stats_stopper_check(&st, x, n, 1.0, 0.0) == STATS_CONTINUE;
            agree += ok;
            trials++;
        }
    }
    KT_CHECK(agree == trials, "selection agrees with sort in %d of %d", agree, trials);
    free(x);
}

static void test_names_and_floor(void)
{
    KT_CHECK(strcmp(stats_stop_name(STATS_CONTINUE), "continue") == 0, "continue");
    KT_CHECK(strcmp(stats_stop_name(STATS_STOP_CI), "ci_converged") == 0, "ci");
    KT_CHECK(strcmp(stats_stop_name(STATS_STOP_NOISE), "noise_stable") == 0, "noise");
    KT_CHECK(strcmp(stats_stop_name(STATS_STOP_MAX_SAMPLES), "max_samples") == 0, "max_samples");
    KT_CHECK(strcmp(stats_stop_name(STATS_STOP_MAX_TIME), "max_time") == 0, "max_time");
    KT_CHECK(strcmp(stats_stop_name((enum stats_stop)42), "unknown") == 0, "unknown");

    KT_CHECK(stats_below_floor(1000.0, 1958.5) == 1, "below floor");
    KT_CHECK(stats_below_floor(4210.5, 1958.5) == 0, "above floor");
    KT_CHECK(stats_below_floor(1958.5, 1958.5) == 0, "at floor");
    KT_CHECK(stats_below_floor(1.0, 0.0) == 0, "no floor");
    KT_CHECK(stats_below_floor(NAN, 100.0) == 1, "NaN median flagged");

    double zero[] = {0.0, 0.0, 0.0, 0.0, 0.0};
    struct stats_summary s;
    KT_CHECK(stats_summarize(zero, 5, &s) == 0, "0 ns samples summarize");
    KT_CHECK(stats_below_floor(s.median, 1958.5) == 1, "synthetic 0 ns flagged");
}

/* The trimmed mean drops floor(trim * n) values at each end of the sorted order. */
static void test_trimmed_mean(void)
{
    double x[10] = {9, 1, 8, 2, 7, 3, 6, 4, 5, 1000}; /* one far outlier */
    double y[] = {4, 1, 3};
    KT_CHECK(stats_trimmed_mean(x, 10, 0.0) == 104.5, "trim 0 is the mean: %g",
             stats_trimmed_mean(x, 10, 0.0));
    /* n = 10, trim 0.1: drop 1 and 1000, mean of 2..9. */
    KT_CHECK(stats_trimmed_mean(x, 10, 0.1) == 5.5, "10 %%: %g", stats_trimmed_mean(x, 10, 0.1));
    /* trim 0.25: floor(2.5) = 2 each side: mean of 3..8. */
    KT_CHECK(stats_trimmed_mean(x, 10, 0.25) == 5.5, "25 %%");
    KT_CHECK(x[9] == 1000 && x[0] == 9, "input untouched");
    /* n = 3, trim 0.1: floor(0.3) = 0, nothing dropped. */
    KT_CHECK(near(stats_trimmed_mean(y, 3, 0.1), 8.0 / 3.0, 1e-15), "small n keeps all");
    KT_CHECK(stats_trimmed_mean(y, 3, 0.49) == 3.0, "nearly half: floor(1.47) = 1 each side");
    KT_CHECK(isnan(stats_trimmed_mean(y, 0, 0.1)) && isnan(stats_trimmed_mean(NULL, 3, 0.1)),
             "no values");
    KT_CHECK(isnan(stats_trimmed_mean(y, 3, 0.5)) && isnan(stats_trimmed_mean(y, 3, -0.1)) &&
             isnan(stats_trimmed_mean(y, 3, NAN)), "trim out of range");
    y[1] = INFINITY;
    KT_CHECK(isnan(stats_trimmed_mean(y, 3, 0.1)), "a non-finite value");
    /* A mixture of modes 160 ns apart, as the empty kernel's samples are:
     * the trimmed mean moves with the modes' weights, the median jumps. */
    double e[100];
    for (int i = 0; i < 100; i++)
        e[i] = i < 45 ? 2848.0 : i < 95 ? 3008.0 : 9000.0;
    KT_CHECK(near(stats_trimmed_mean(e, 100, 0.1), (35 * 2848.0 + 45 * 3008.0) / 80.0, 1e-12),
             "modes: %g", stats_trimmed_mean(e, 100, 0.1));
}

static void test_planned_samples(void)
{
    struct stats_rule r = STATS_RULE_DEFAULT; /* 100 samples, 20 ms, at most 10000 */
    KT_CHECK(stats_planned_samples(7000.0, &r) == 2858, "7 us: 20 ms / 7 us rounded up: %ld",
             stats_planned_samples(7000.0, &r));
    KT_CHECK(stats_planned_samples(60000.0, &r) == 334, "60 us: %ld",
             stats_planned_samples(60000.0, &r));
    KT_CHECK(stats_planned_samples(200000.0, &r) == 100, "long shapes get the minimum");
    KT_CHECK(stats_planned_samples(1000.0, &r) == 10000, "short shapes stop at the cap");
    KT_CHECK(stats_planned_samples(0.0, &r) == 100 && stats_planned_samples(NAN, &r) == 100 &&
             stats_planned_samples(-5.0, &r) == 100 && stats_planned_samples(INFINITY, &r) == 100,
             "no usable warm-up median: the minimum");
    r.min_samples = r.max_samples = 37;
    r.min_total_s = 0;
    KT_CHECK(stats_planned_samples(7000.0, &r) == 37, "a fixed count");
}

/* median - (E_run - E_gpu), or nothing when it cannot be trusted. */
static void test_correct_offset(void)
{
    double med[3] = {7000.0, 8500.0, 60000.0}, out[3], off = -1;
    KT_CHECK(stats_correct_offset(med, 3, 2980.0, 2900.0, 1.0, out, &off) == 1 && off == 80.0 &&
             out[0] == 6920.0 && out[1] == 8420.0 && out[2] == 59920.0,
             "a slow process is corrected down: off %g", off);
    KT_CHECK(stats_correct_offset(med, 3, 2850.0, 2900.0, 1.0, out, &off) == 1 && off == -50.0 &&
             out[0] == 7050.0, "a fast one up");
    KT_CHECK(med[0] == 7000.0, "medians untouched");
    /* Two runs of one kernel whose medians carry their process's offset
     * agree after the correction. */
    double a[2] = {6900.0 + 100.0, 8400.0 + 100.0}, b[2] = {6900.0 - 60.0, 8400.0 - 60.0};
    double ca[2], cb[2];
    stats_correct_offset(a, 2, 2897.0 + 100.0, 2897.0, 1.0, ca, &off);
    stats_correct_offset(b, 2, 2897.0 - 60.0, 2897.0, 1.0, cb, &off);
    KT_CHECK(ca[0] == cb[0] && ca[1] == cb[1] && ca[0] == 6900.0, "runs agree: %g %g", ca[0],
             cb[0]);
    /* Not applied: the medians come back as they are, offset 0. */
    KT_CHECK(stats_correct_offset(med, 3, 2980.0, 0.0, 1.0, out, &off) == 0 && off == 0.0 &&
             out[0] == 7000.0 && out[2] == 60000.0, "no constant for the GPU");
    KT_CHECK(stats_correct_offset(med, 3, NAN, 2900.0, 1.0, out, &off) == 0 && out[1] == 8500.0,
             "no estimate (no empty samples)");
    KT_CHECK(stats_correct_offset(med, 3, 2900.0 * 1.26, 2900.0, 1.0, out, &off) == 0,
             "an offset beyond 25 %% of the constant");
    KT_CHECK(stats_correct_offset(med, 3, 2900.0 * 1.24, 2900.0, 1.0, out, &off) == 1,
             "one within it");
    /* A weight subtracts that share of the deviation; the range is the
     * deviation's, whatever the weight. */
    KT_CHECK(stats_correct_offset(med, 3, 2980.0, 2900.0, 0.5, out, &off) == 1 && off == 40.0 &&
             out[0] == 6960.0, "half the deviation: off %g", off);
    KT_CHECK(stats_correct_offset(med, 3, 2900.0 * 1.26, 2900.0, 0.5, out, &off) == 0,
             "a deviation beyond 25 %% of the constant, even at weight 0.5");
    double tiny[2] = {1000.0, 8000.0};
    KT_CHECK(stats_correct_offset(tiny, 2, 3500.0, 2900.0, 1.0, out, &off) == 0 && out[0] == 1000.0,
             "a median that would lose half its value");
    /* In place. */
    double in[2] = {7000.0, 9000.0};
    KT_CHECK(stats_correct_offset(in, 2, 2910.0, 2900.0, 1.0, in, &off) == 1 && in[0] == 6990.0 &&
             in[1] == 8990.0, "in place");
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    KT_RUN(test_constant());
    KT_RUN(test_ramp());
    KT_RUN(test_known_quartiles());
    KT_RUN(test_heavy_tail());
    KT_RUN(test_degenerate());
    KT_RUN(test_geomean());
    KT_RUN(test_stop_ci());
    KT_RUN(test_stop_noise());
    KT_RUN(test_stop_ticks());
    KT_RUN(test_stop_caps());
    KT_RUN(test_selection_matches_sort());
    KT_RUN(test_names_and_floor());
    KT_RUN(test_trimmed_mean());
    KT_RUN(test_planned_samples());
    KT_RUN(test_correct_offset());
    return kt_done("test_stats");
}
