/*
 * result_check.c - check a runner's result against its job and board (see
 * result_check.h) and rebuild it from the keys the protocol knows.
 *
 * Three passes: scan the raw text (size, depth, value count, NUL bytes and
 * \u0000 escapes, which cJSON would silently cut strings at); parse it and
 * copy it through the schema tables below (type, range, length and UTF-8 of
 * every known key; unknown keys are dropped; a known key twice is refused);
 * then check the copy against the job (mode, board, shapes, statistics,
 * medians that are measurements (result_floor.c), timing protocol v2's
 * corrected medians, score, GPU). The first two passes walk the JSON without the job
 * (result_walk.c); this file holds the format and the rules. api_runner.c
 * stores the copy, never the text it was sent.
 */
#include "result_int.h"
#include "gputype.h"

#include <cjson/cJSON.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* The result format (docs/protocol.md), as schema tables              */
/* ------------------------------------------------------------------ */

#define BIG 1e18            /* counts and sizes that only need to be finite and sane */
#define NS RCHECK_MIN_NS, RCHECK_MAX_NS
#define TEXT 0, RCHECK_MAX_TEXT
#define NAME 0, 256

static const struct rc_field f_dim = {NULL, RK_INT, 0, 0, 4294967295.0, NULL};

static const struct rc_field f_kernel_keys[] = {
    {"name", RK_STR, 0, NAME, NULL}, {"lowered", RK_STR, 0, 0, 1024, NULL},
    {"registers", RK_NUM, RF_NULL, 0, BIG, NULL}, {"smem_static", RK_NUM, RF_NULL, 0, BIG, NULL},
    {"stack_frame", RK_NUM, RF_NULL, 0, BIG, NULL}, {"spill_stores", RK_NUM, RF_NULL, 0, BIG, NULL},
    {"spill_loads", RK_NUM, RF_NULL, 0, BIG, NULL}, {"barriers", RK_NUM, RF_NULL, 0, BIG, NULL},
    {"max_threads_per_block", RK_NUM, RF_NULL, 0, BIG, NULL},
    {"tensor_cores", RK_STR, RF_NULL, 0, 32, NULL}, {"tma", RK_BOOL, 0, 0, 0, NULL},
    {"bulk_copy", RK_BOOL, 0, 0, 0, NULL}, {"cp_async", RK_BOOL, 0, 0, 0, NULL},
    {"classes_from", RK_STR, 0, 0, 16, NULL},
    {"sass_instructions", RK_NUM, RF_NULL, 0, BIG, NULL}, {NULL, 0, 0, 0, 0, NULL}};
static const struct rc_field f_kernel = {NULL, RK_OBJ, 0, 0, 0, f_kernel_keys};

static const struct rc_field f_compile_keys[] = {
    {"ok", RK_BOOL, 0, 0, 0, NULL}, {"arch", RK_STR, 0, 0, 32, NULL},
    {"log", RK_STR, RF_TEXT, 0, RCHECK_MAX_LOG, NULL}, {"seconds", RK_NUM, RF_NULL, 0, 1e7, NULL},
    {"kernels", RK_ARR, 0, 0, 64, &f_kernel}, {NULL, 0, 0, 0, 0, NULL}};

static const struct rc_field f_first_keys[] = {
    {"index", RK_ARR, 0, 0, SPEC_MAX_DIMS, &f_dim},
    {"expected", RK_NUM, RF_NANSTR, -DBL_MAX, DBL_MAX, NULL},
    {"got", RK_NUM, RF_NANSTR, -DBL_MAX, DBL_MAX, NULL}, {NULL, 0, 0, 0, 0, NULL}};
static const struct rc_field f_first = {NULL, RK_OBJ, 0, 0, 0, f_first_keys};

static const struct rc_field f_mismatch_keys[] = {
    {"buffer", RK_STR, 0, 0, SPEC_MAX_NAME, NULL}, {"count", RK_NUM, 0, 0, BIG, NULL},
    {"total", RK_NUM, 0, 0, BIG, NULL},
    {"max_abs_err", RK_NUM, RF_NANSTR, -DBL_MAX, DBL_MAX, NULL},
    {"max_rel_err", RK_NUM, RF_NANSTR, -DBL_MAX, DBL_MAX, NULL},
    {"first", RK_ARR, 0, 0, 64, &f_first}, {NULL, 0, 0, 0, 0, NULL}};

static const struct rc_field f_test_keys[] = {
    {"index", RK_INT, 0, 0, SPEC_MAX_CASES - 1, NULL}, {"shape", RK_SHAPE, 0, 0, 0, NULL},
    {"seed", RK_NUM, 0, 0, 18446744073709551616.0, NULL}, {"status", RK_STR, 0, 0, 16, NULL},
    {"message", RK_STR, RF_TEXT, TEXT, NULL}, {"mismatch", RK_OBJ, 0, 0, 0, f_mismatch_keys},
    {NULL, 0, 0, 0, 0, NULL}};
static const struct rc_field f_test = {NULL, RK_OBJ, 0, 0, 0, f_test_keys};

static const struct rc_field f_launch_keys[] = {
    {"kernel", RK_STR, 0, NAME, NULL}, {"grid", RK_ARR, 0, 3, 3, &f_dim},
    {"block", RK_ARR, 0, 3, 3, &f_dim}, {"smem", RK_NUM, RF_NULL, 0, BIG, NULL},
    {NULL, 0, 0, 0, 0, NULL}};
static const struct rc_field f_launch = {NULL, RK_OBJ, 0, 0, 0, f_launch_keys};

static const struct rc_field f_graph_keys[] = {
    {"ns", RK_NUM, RF_NULL, 0, RCHECK_MAX_NS, NULL}, {"launches", RK_NUM, RF_NULL, 0, BIG, NULL},
    {"ratio_to_median", RK_NUM, RF_NULL, 0, BIG, NULL}, {"disagrees", RK_BOOL, 0, 0, 0, NULL},
    {"message", RK_STR, RF_TEXT, TEXT, NULL}, {NULL, 0, 0, 0, 0, NULL}};

static const struct rc_field f_bench_keys[] = {
    {"index", RK_INT, 0, 0, SPEC_MAX_CASES - 1, NULL}, {"shape", RK_SHAPE, 0, 0, 0, NULL},
    {"status", RK_STR, 0, 0, 16, NULL}, {"message", RK_STR, RF_TEXT, TEXT, NULL},
    {"failed_call", RK_INT, 0, 0, BIG, NULL}, {"mismatch", RK_OBJ, 0, 0, 0, f_mismatch_keys},
    {"median_ns", RK_NUM, 0, NS, NULL}, {"mean_ns", RK_NUM, 0, NS, NULL},
    {"stdev_ns", RK_NUM, 0, 0, RCHECK_MAX_NS, NULL}, {"min_ns", RK_NUM, 0, NS, NULL},
    {"max_ns", RK_NUM, 0, NS, NULL}, {"q1_ns", RK_NUM, 0, NS, NULL},
    {"q3_ns", RK_NUM, 0, NS, NULL}, {"ci_lo_ns", RK_NUM, 0, NS, NULL},
    {"ci_hi_ns", RK_NUM, 0, NS, NULL}, {"n", RK_INT, 0, 1, 1e12, NULL},
    {"stop_reason", RK_STR, 0, 0, 32, NULL},
    {"floor_ns", RK_NUM, RF_NULL, 0, RCHECK_MAX_NS, NULL},
    {"below_floor", RK_BOOL, 0, 0, 0, NULL}, {"launches", RK_ARR, 0, 0, 64, &f_launch},
    {"wall_s", RK_NUM, RF_NULL, 0, 1e7, NULL},
    {"wall_ms_per_call", RK_NUM, RF_NULL, 0, 1e10, NULL},
    {"verified_on_gpu", RK_BOOL, 0, 0, 0, NULL},
    {"adjusted_median_ns", RK_NUM, RF_NULL, -RCHECK_MAX_NS, RCHECK_MAX_NS, NULL},
    {"corrected_median_ns", RK_NUM, 0, NS, NULL}, {"sets", RK_INT, 0, 1, 64, NULL},
    {"gpu_median_ns", RK_NUM, 0, NS, NULL}, {"gpu_mean_ns", RK_NUM, 0, NS, NULL},
    {"gpu_stdev_ns", RK_NUM, 0, 0, RCHECK_MAX_NS, NULL}, {"gpu_min_ns", RK_NUM, 0, NS, NULL},
    {"gpu_q1_ns", RK_NUM, 0, NS, NULL}, {"gpu_q3_ns", RK_NUM, 0, NS, NULL},
    {"gpu_n", RK_INT, 0, 1, 1e12, NULL},
    {"visits", RK_INT, 0, 0, 1e6, NULL},
    {"graph", RK_OBJ, 0, 0, 0, f_graph_keys}, {NULL, 0, 0, 0, 0, NULL}};
static const struct rc_field f_bench = {NULL, RK_OBJ, 0, 0, 0, f_bench_keys};

static const struct rc_field f_timing_keys[] = {
    {"protocol", RK_STR, 0, 0, 8, NULL}, {"rounds", RK_INT, 0, 0, 1e6, NULL},
    {"processes", RK_INT, 0, 0, 64, NULL},
    {"lanes", RK_INT, 0, 0, 1024, NULL}, {"empty_every", RK_INT, 0, 0, 1e6, NULL},
    {"empty_kernel_samples", RK_INT, 0, 0, 1e12, NULL},
    {"empty_kernel_run_ns", RK_NUM, RF_NULL, 0, RCHECK_MAX_NS, NULL},
    {"empty_kernel_gpu_ns", RK_NUM, RF_NULL, 0, RCHECK_MAX_NS, NULL},
    {"empty_kernel_gpu_source", RK_STR, RF_TEXT, TEXT, NULL},
    {"corrected", RK_BOOL, 0, 0, 0, NULL},
    {"offset_ns", RK_NUM, RF_NULL, -RCHECK_MAX_NS, RCHECK_MAX_NS, NULL},
    {"raw_score_ns", RK_NUM, RF_NULL, NS, NULL}, {"wall_s", RK_NUM, 0, 0, 1e7, NULL},
    {"version", RK_INT, 0, 1, KJ_TIMING_VERSION_MAX, NULL},
    {"gpu_time", RK_BOOL, 0, 0, 0, NULL}, {"gpu_time_note", RK_STR, RF_TEXT, TEXT, NULL},
    {"gpu_score_ns", RK_NUM, RF_NULL, NS, NULL}, {"ranked", RK_STR, 0, 0, 16, NULL},
    {NULL, 0, 0, 0, 0, NULL}};

static const struct rc_field f_nvml_keys[] = {
    {"sm_clock_mhz", RK_NUM, RF_NULL, 0, 1e6, NULL},
    {"mem_clock_mhz", RK_NUM, RF_NULL, 0, 1e6, NULL},
    {"temperature_c", RK_NUM, RF_NULL, -300, 1e4, NULL}, {"power_w", RK_NUM, RF_NULL, 0, 1e7, NULL},
    {"clock_event_reasons", RK_NUM, RF_NULL, 0, 18446744073709551616.0, NULL},
    {NULL, 0, 0, 0, 0, NULL}};

static const struct rc_field f_system_keys[] = {
    {"gpu", RK_STR, 0, NAME, NULL}, {"arch", RK_STR, 0, 0, 32, NULL},
    {"pci", RK_STR, 0, 0, 64, NULL}, {"sm_count", RK_NUM, RF_NULL, 0, 1e6, NULL},
    {"cuda_driver_api", RK_STR, 0, 0, 32, NULL}, {"cuda", RK_STR, 0, 0, 32, NULL},
    {"nvrtc", RK_STR, 0, 0, 32, NULL}, {"driver", RK_STR, 0, 0, 64, NULL},
    {"sandbox", RK_STR, 0, NAME, NULL}, {"verify", RK_STR, 0, 0, 16, NULL},
    {"python", RK_STR, 0, 0, 300, NULL},
    {"sm_clock_max_mhz", RK_NUM, RF_NULL, 0, 1e6, NULL},
    {"mem_clock_max_mhz", RK_NUM, RF_NULL, 0, 1e6, NULL},
    {"l2_bytes", RK_NUM, RF_NULL, 0, BIG, NULL}, {"l2_flush_bytes", RK_NUM, RF_NULL, 0, BIG, NULL},
    {"peak_bandwidth_gbs", RK_NUM, RF_NULL, 0, 1e9, NULL},
    {"measured_copy_bandwidth_gbs", RK_NUM, RF_NULL, 0, 1e9, NULL},
    {"sm_clock_mhz_before", RK_NUM, RF_NULL, 0, 1e6, NULL},
    {"sm_clock_mhz_after", RK_NUM, RF_NULL, 0, 1e6, NULL},
    {"nvml_before", RK_OBJ, 0, 0, 0, f_nvml_keys}, {"nvml_after", RK_OBJ, 0, 0, 0, f_nvml_keys},
    {NULL, 0, 0, 0, 0, NULL}};

static const struct rc_field f_steps_keys[] = {
    {"boxes", RK_NUM, 0, 0, 1e7, NULL}, {"compile", RK_NUM, 0, 0, 1e7, NULL},
    {"load", RK_NUM, 0, 0, 1e7, NULL}, {"tests", RK_NUM, 0, 0, 1e7, NULL},
    {"benchmarks", RK_NUM, 0, 0, 1e7, NULL}, {"restarts", RK_NUM, 0, 0, 1e7, NULL},
    {"nrestarts", RK_INT, 0, 0, 1e6, NULL}, {"tools", RK_NUM, 0, 0, 1e7, NULL},
    {"gaps", RK_NUM, 0, 0, 1e7, NULL}, {"total", RK_NUM, 0, 0, 1e7, NULL},
    {NULL, 0, 0, 0, 0, NULL}};

static const struct rc_field f_top_keys[] = {
    {"verdict", RK_STR, 0, 0, 24, NULL}, {"message", RK_STR, RF_TEXT, TEXT, NULL},
    {"mode", RK_STR, 0, 0, 16, NULL}, {"leaderboard", RK_STR, 0, 0, SPEC_MAX_NAME, NULL},
    {"compile", RK_OBJ, 0, 0, 0, f_compile_keys},
    {"tests", RK_ARR, 0, 0, SPEC_MAX_CASES, &f_test},
    {"benchmarks", RK_ARR, 0, 0, SPEC_MAX_CASES, &f_bench},
    {"score_ns", RK_NUM, RF_NULL, NS, NULL},
    {"baseline_empty_kernel_ns", RK_NUM, RF_NULL, 0, RCHECK_MAX_NS, NULL},
    {"baseline_event_pair_ns", RK_NUM, RF_NULL, 0, RCHECK_MAX_NS, NULL},
    {"timing", RK_OBJ, 0, 0, 0, f_timing_keys},
    {"system", RK_OBJ, 0, 0, 0, f_system_keys},
    {"steps_s", RK_OBJ, 0, 0, 0, f_steps_keys},
    {"profile", RK_OBJ, 0, 0, 0, rc_profile_keys}, {"sanitize", RK_OBJ, 0, 0, 0, rc_sanitize_keys},
    {NULL, 0, 0, 0, 0, NULL}};
static const struct rc_field f_top = {NULL, RK_OBJ, 0, 0, 0, f_top_keys};

static const char *const statuses[] = {"pass", "fail", "error", NULL};
static const char *const stops[] = {"ci_converged", "noise_stable", "max_samples", "max_time",
                                    "unknown", NULL};

static int one_of(const char *v, const char *const *set)
{
    for (int i = 0; set[i] != NULL; i++)
        if (strcmp(v, set[i]) == 0)
            return 1;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Pass 3: against the job and the board                               */
/* ------------------------------------------------------------------ */

/* Borrowed string value of o's key, or NULL. */
static const char *str_of(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Is the shape object (already typed by pass 2) exactly case k's variables? */
static int rc_shape_is(struct rc *c, const struct spec *s, const cJSON *shape,
                       const struct spec_case *k, const char *what, int i)
{
    size_t saved = rc_push(c, "shape", 0);
    if (shape == NULL)
        return rc_fail(c, "missing");
    if (cJSON_GetArraySize(shape) != s->nvars)
        return rc_fail(c, "%d variables, the board has %d", cJSON_GetArraySize(shape), s->nvars);
    for (int v = 0; v < s->nvars; v++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(shape, s->vars[v]);
        if (x == NULL)
            return rc_fail(c, "%s is missing", s->vars[v]);
        if (x->valuedouble != (double)k->val[v])
            return rc_fail(c, "%s=%.0f, but %s shape %d of the board has %s=%lld",
                           s->vars[v], x->valuedouble, what, i, s->vars[v], (long long)k->val[v]);
    }
    rc_pop(c, saved);
    return KJ_OK;
}

/* Index, shape, seed and status of a tests or benchmarks entry that must
 * be the board's shape i; why: what puts it there, for the refusal. */
static int rc_entry_of(struct rc *c, const struct spec *s, const cJSON *e, int i, int bench,
                       const char *why)
{
    const struct spec_case *k = bench ? &s->benchmarks[i] : &s->tests[i];
    const cJSON *idx = cJSON_GetObjectItemCaseSensitive(e, "index");
    const cJSON *seed = cJSON_GetObjectItemCaseSensitive(e, "seed");
    const char *status = str_of(e, "status");
    size_t saved = c->plen;
    int rc;
    if (idx == NULL || idx->valuedouble != (double)i)
        return rc_fail_at(c, "index", "must be %d (%s)", i, why);
    if ((rc = rc_shape_is(c, s, cJSON_GetObjectItemCaseSensitive(e, "shape"), k,
                          bench ? "benchmark" : "test", i)) != KJ_OK)
        return rc;
    if (seed != NULL && seed->valuedouble != (double)k->seed)
        return rc_fail_at(c, "seed", "not the board's seed of this shape");
    if (status != NULL && !one_of(status, statuses))
        return rc_fail_at(c, "status", "'%.16s' is not pass, fail or error", status);
    rc_pop(c, saved);
    return KJ_OK;
}

/* Entry i of a tests or benchmarks list: the board's shape i. */
static int rc_entry(struct rc *c, const struct spec *s, const cJSON *e, int i, int bench)
{
    return rc_entry_of(c, s, e, i, bench, "entries are in the board's order");
}

static int rc_tests(struct rc *c, const struct spec *s, const cJSON *tests, int accepted)
{
    int n = cJSON_GetArraySize(tests), i = 0, rc = KJ_OK;
    if (n > s->ntests)
        return rc_fail(c, "%d entries, the board has %d test shapes", n, s->ntests);
    if (accepted && n != s->ntests)
        return rc_fail(c, "%d entries; an accepted result has all %d test shapes", n,
                       s->ntests);
    for (const cJSON *e = tests != NULL ? tests->child : NULL; e != NULL && rc == KJ_OK;
         e = e->next, i++) {
        size_t saved = rc_push(c, NULL, i);
        const char *status = str_of(e, "status");
        rc = rc_entry(c, s, e, i, 0);
        if (rc == KJ_OK && accepted && (status == NULL || strcmp(status, "pass") != 0))
            rc = rc_fail_at(c, "status", "an accepted result passed every test");
        if (rc == KJ_OK)
            rc_pop(c, saved);
    }
    return rc;
}

/* The value of key in e, or NAN when absent (pass 2 made every present one finite). */
static double num_of(const cJSON *e, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(e, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* a <= b, allowing for the rounding of the runner's arithmetic. */
static int le(double a, double b)
{
    return a <= b + 1e-9 * fabs(b);
}

/* The statistics of a timed shape: present and in a possible order. */
static int rc_stats(struct rc *c, const cJSON *e)
{
    static const char *const need[] = {"median_ns", "mean_ns", "min_ns", "max_ns", "n", NULL};
    static const char *const lo_side[] = {"q1_ns", "ci_lo_ns", NULL};
    static const char *const hi_side[] = {"q3_ns", "ci_hi_ns", NULL};
    double med = num_of(e, "median_ns"), mn = num_of(e, "min_ns"), mx = num_of(e, "max_ns");
    double mean = num_of(e, "mean_ns"), sd = num_of(e, "stdev_ns");
    const char *stop = str_of(e, "stop_reason");
    for (int i = 0; need[i] != NULL; i++)
        if (cJSON_GetObjectItemCaseSensitive(e, need[i]) == NULL)
            return rc_fail(c, "%s: missing; a timed shape has it", need[i]);
    if (!le(mn, med) || !le(med, mx))
        return rc_fail(c, "median_ns %.17g is not between min_ns %.17g and max_ns %.17g", med,
                       mn, mx);
    if (!le(mn, mean) || !le(mean, mx))
        return rc_fail(c, "mean_ns %.17g is not between min_ns and max_ns", mean);
    for (int i = 0; lo_side[i] != NULL; i++) {
        double v = num_of(e, lo_side[i]);
        if (!isnan(v) && (!le(mn, v) || !le(v, med)))
            return rc_fail(c, "%s %.17g is not between min_ns and median_ns", lo_side[i], v);
    }
    for (int i = 0; hi_side[i] != NULL; i++) {
        double v = num_of(e, hi_side[i]);
        if (!isnan(v) && (!le(med, v) || !le(v, mx)))
            return rc_fail(c, "%s %.17g is not between median_ns and max_ns", hi_side[i], v);
    }
    if (!isnan(sd) && !le(sd, mx - mn))
        return rc_fail(c, "stdev_ns %.17g is larger than max_ns - min_ns", sd);
    if (stop != NULL && !one_of(stop, stops))
        return rc_fail(c, "stop_reason: '%.32s' is not a reason the runner gives", stop);
    return KJ_OK;
}

/* The one benchmark shape a profile job is for, or -1 for every shape (as
 * the runner reads the job: a shape the board no longer has means all). */
static int rc_profile_only(const struct spec *s, const struct rcheck_job *job)
{
    return job->profile_shape > 0 && job->profile_shape <= s->nbenchmarks
           ? job->profile_shape - 1 : -1;
}

/* Profile mode's benchmark list: the profiled shapes, checked once each,
 * untimed; only the shape the request named when it named one (every
 * shape in the board's order otherwise), all of them in an accepted
 * result. */
static int rc_profiled(struct rc *c, const struct spec *s, const struct rcheck_job *job,
                       const cJSON *benches, int accepted)
{
    int only = rc_profile_only(s, job), want = only >= 0 ? 1 : s->nbenchmarks;
    int n = cJSON_GetArraySize(benches), i = 0, rc = KJ_OK;
    char why[64];
    if (only >= 0)
        snprintf(why, sizeof why, "the job profiles benchmark shape %d only", only);
    if (only >= 0 && (n > 1 || (accepted && n != 1)))
        return rc_fail(c, "%d entries; %s", n, why);
    if (n > want)
        return rc_fail(c, "%d entries, the board has %d benchmark shapes", n, want);
    if (accepted && n != want)
        return rc_fail(c, "%d entries; an accepted profile result has all %d benchmark shapes",
                       n, want);
    for (const cJSON *e = benches != NULL ? benches->child : NULL; e != NULL && rc == KJ_OK;
         e = e->next, i++) {
        size_t saved = rc_push(c, NULL, i);
        if (e->child == NULL && !accepted) { /* a shape the runner never reached */
            rc_pop(c, saved);
            continue;
        }
        rc = only >= 0 ? rc_entry_of(c, s, e, only, 1, why) : rc_entry(c, s, e, i, 1);
        if (rc == KJ_OK)
            rc_pop(c, saved);
    }
    return rc;
}

/* profile.shapes of a profile job: each names a shape the job profiled
 * (the one the request named, if any) and, when it has a label, that
 * shape's ("T=4096 H=7168 GS=128"). */
static int rc_profile_shapes(struct rc *c, const struct spec *s, const struct rcheck_job *job,
                             const cJSON *res)
{
    const cJSON *prof = cJSON_GetObjectItemCaseSensitive(res, "profile");
    const cJSON *shapes = cJSON_GetObjectItemCaseSensitive(prof, "shapes"), *e;
    int only = rc_profile_only(s, job), i = 0;
    char label[256];
    cJSON_ArrayForEach(e, shapes) {
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(e, "benchmark");
        const char *lab = str_of(e, "shape");
        size_t saved = rc_push(c, "profile", 0);
        rc_push(c, "shapes", 0);
        rc_push(c, NULL, i++);
        if (b == NULL)
            return rc_fail_at(c, "benchmark", "missing");
        if (only >= 0 && b->valuedouble != (double)only)
            return rc_fail_at(c, "benchmark", "%.0f is not the job's shape: it profiles "
                              "benchmark shape %d only", b->valuedouble, only);
        if (b->valuedouble >= (double)s->nbenchmarks)
            return rc_fail_at(c, "benchmark", "%.0f: the board has %d benchmark shapes",
                              b->valuedouble, s->nbenchmarks);
        spec_case_label(s, &s->benchmarks[(int)b->valuedouble], label, sizeof label);
        if (lab != NULL && strcmp(lab, label) != 0)
            return rc_fail_at(c, "shape", "not benchmark shape %.0f's, %s", b->valuedouble,
                              label);
        rc_pop(c, saved);
    }
    return KJ_OK;
}

/* The benchmark list; for an accepted timed result, *medians gets the
 * board's count of medians in the board's order, *corrected the corrected
 * ones (NaN where a shape has none). */
static int rc_benchmarks(struct rc *c, const struct spec *s, const struct rcheck_job *job,
                         const struct rc_limits *lim, const cJSON *benches, int accepted,
                         double *medians, double *corrected)
{
    int n = cJSON_GetArraySize(benches), i = 0, rc = KJ_OK;
    if (job->mode == KJ_MODE_TEST || job->mode == KJ_MODE_SANITIZE) {
        if (n != 0)
            return rc_fail(c, "%d entries; a %s-mode result runs no benchmark shape", n,
                           kj_mode_name(job->mode));
        return KJ_OK;
    }
    if (job->mode == KJ_MODE_PROFILE)
        return rc_profiled(c, s, job, benches, accepted);
    if (n != 0 && n != s->nbenchmarks)
        return rc_fail(c, "%d entries, the board has %d benchmark shapes", n, s->nbenchmarks);
    if (accepted && n == 0)
        return rc_fail(c, "missing; an accepted %s result has all %d benchmark shapes",
                       kj_mode_name(job->mode),
                       s->nbenchmarks);
    for (const cJSON *e = benches != NULL ? benches->child : NULL; e != NULL && rc == KJ_OK;
         e = e->next, i++) {
        size_t saved = rc_push(c, NULL, i);
        const char *status = str_of(e, "status");
        if (e->child == NULL && !accepted) { /* a shape the runner never reached */
            rc_pop(c, saved);
            continue;
        }
        rc = rc_entry(c, s, e, i, 1);
        if (rc == KJ_OK && accepted && (status == NULL || strcmp(status, "pass") != 0))
            rc = rc_fail_at(c, "status", "an accepted result passed every benchmark shape");
        if (rc == KJ_OK && status != NULL && strcmp(status, "pass") == 0)
            rc = rc_stats(c, e);
        if (rc == KJ_OK && status != NULL && strcmp(status, "pass") == 0)
            rc = rc_plausible(c, s, lim, e, i);
        if (rc == KJ_OK) {
            medians[i] = num_of(e, "median_ns");
            corrected[i] = num_of(e, "corrected_median_ns");
            rc_pop(c, saved);
        }
    }
    return rc;
}

/* exp(mean(log x)), kept inside [min x, max x] where rounding would leave it. */
static double rc_geomean(const double *x, int n)
{
    double sum = 0, lo = x[0], hi = x[0], g;
    for (int i = 0; i < n; i++) {
        sum += log(x[i]);
        lo = x[i] < lo ? x[i] : lo;
        hi = x[i] > hi ? x[i] : hi;
    }
    g = exp(sum / n);
    return g < lo ? lo : g > hi ? hi : g;
}

/* "timing" (docs/timing.md) against the medians of an accepted timed
 * result: under protocol v2 with the correction applied, every shape has
 * its corrected median, equal to its median less timing.offset_ns, and the
 * offset is within RCHECK_MAX_OFFSET_FRAC of the GPU's constant; without
 * it, no shape has one. *ranked: which medians the score is made of. */
/* timing.ranked (docs/timing.md "GPU time"): "events" (or absent) ranks
 * the (corrected) event medians; "gpu_time" the benchmarks' gpu_median_ns,
 * which then must all be there, with timing.gpu_time true and
 * gpu_score_ns their geometric mean. gpu: scratch for those medians. */
static int rc_gpu_ranked(struct rc *c, const struct rcheck_job *job, const cJSON *res,
                         const cJSON *t, double *gpu, const double **ranked)
{
    const char *rk = str_of(t, "ranked");
    const cJSON *benches = cJSON_GetObjectItemCaseSensitive(res, "benchmarks");
    int n = job->spec->nbenchmarks, i = 0;
    double gs = num_of(t, "gpu_score_ns");
    size_t saved = rc_push(c, "timing", 0);
    if (rk == NULL || strcmp(rk, "events") == 0) {
        rc_pop(c, saved);
        return KJ_OK;
    }
    if (strcmp(rk, "gpu_time") != 0)
        return rc_fail_at(c, "ranked", "'%.16s' is not events or gpu_time", rk);
    if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "gpu_time")))
        return rc_fail_at(c, "ranked", "gpu_time ranks, but timing.gpu_time is not true");
    rc_pop(c, saved);
    for (const cJSON *e = benches != NULL ? benches->child : NULL; e != NULL && i < n;
         e = e->next, i++) {
        size_t at = rc_push(c, "benchmarks", 0);
        rc_push(c, NULL, i);
        gpu[i] = num_of(e, "gpu_median_ns");
        if (isnan(gpu[i]) || gpu[i] <= 0)
            return rc_fail_at(c, "gpu_median_ns", "missing; timing.ranked is gpu_time");
        rc_pop(c, at);
    }
    saved = rc_push(c, "timing", 0);
    if (i != n)
        return rc_fail_at(c, "ranked", "gpu_time ranks, but not every benchmark has one");
    if (isnan(gs) || fabs(gs - rc_geomean(gpu, n)) > RCHECK_SCORE_REL * gs)
        return rc_fail_at(c, "gpu_score_ns", "not the geometric mean of the gpu_median_ns");
    rc_pop(c, saved);
    *ranked = gpu;
    return KJ_OK;
}

static int rc_timing(struct rc *c, const struct rcheck_job *job, const cJSON *res, int timed,
                     const double *medians, const double *corrected, double *gpu_med,
                     const double **ranked)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(res, "timing");
    const char *proto = str_of(t, "protocol");
    int n = job->spec != NULL ? job->spec->nbenchmarks : 0, on;
    double off = num_of(t, "offset_ns"), gpu = num_of(t, "empty_kernel_gpu_ns");
    double raw = num_of(t, "raw_score_ns");
    size_t saved = rc_push(c, "timing", 0);
    *ranked = medians;
    if (proto != NULL && strcmp(proto, "v1") != 0 && strcmp(proto, "v2") != 0)
        return rc_fail_at(c, "protocol", "'%.8s' is not v1 or v2", proto);
    on = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "corrected"));
    if (!timed) {
        rc_pop(c, saved);
        return KJ_OK;
    }
    if (!isnan(raw) && fabs(raw - rc_geomean(medians, n)) > RCHECK_SCORE_REL * raw)
        return rc_fail_at(c, "raw_score_ns", "%.17g is not the geometric mean of the medians",
                          raw);
    if (on && (proto == NULL || strcmp(proto, "v2") != 0))
        return rc_fail_at(c, "corrected", "only protocol v2 corrects its medians");
    if (on && (isnan(gpu) || gpu <= 0))
        return rc_fail_at(c, "empty_kernel_gpu_ns", "a corrected result names the GPU's constant");
    if (on && (isnan(off) || fabs(off) > RCHECK_MAX_OFFSET_FRAC * gpu))
        return rc_fail_at(c, "offset_ns", "%.17g is not within %g of empty_kernel_gpu_ns %.17g",
                          off, RCHECK_MAX_OFFSET_FRAC, gpu);
    rc_pop(c, saved);
    for (int i = 0; i < n; i++) {
        size_t at = rc_push(c, "benchmarks", 0);
        rc_push(c, NULL, i);
        if (!on && !isnan(corrected[i]))
            return rc_fail_at(c, "corrected_median_ns", "present, but timing.corrected is not true");
        if (on && isnan(corrected[i]))
            return rc_fail_at(c, "corrected_median_ns", "missing; timing.corrected is true");
        if (on && fabs(corrected[i] - (medians[i] - off)) > RCHECK_SCORE_REL * medians[i])
            return rc_fail_at(c, "corrected_median_ns", "%.17g is not median_ns less "
                              "timing.offset_ns (%.17g)", corrected[i], medians[i] - off);
        rc_pop(c, at);
    }
    if (on)
        *ranked = corrected;
    return rc_gpu_ranked(c, job, res, t, gpu_med, ranked);
}

/* score_ns: the server's own for an accepted timed result (a runner's that
 * disagrees is refused), null otherwise; written back into res. ranked: the
 * medians it is the geometric mean of (corrected ones under protocol v2). */
static int rc_score(struct rc *c, const struct rcheck_job *job, cJSON *res, int timed,
                    const double *ranked)
{
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(res, "score_ns");
    struct rcheck_out *o = c->out;
    size_t saved = rc_push(c, "score_ns", 0);
    cJSON *v;
    if (timed) {
        o->score_ns = rc_geomean(ranked, job->spec->nbenchmarks);
        o->has_score = 1;
        if (!cJSON_IsNumber(sc))
            return rc_fail(c, "missing; an accepted %s result has a score",
                           kj_mode_name(job->mode));
        if (fabs(sc->valuedouble - o->score_ns) > RCHECK_SCORE_REL * o->score_ns)
            return rc_fail(c, "%.17g is not the geometric mean of the ranked medians (%.17g)",
                           sc->valuedouble, o->score_ns);
    } else if (cJSON_IsNumber(sc) && !kj_mode_timed(job->mode) && o->verdict == KJ_V_ACCEPTED) {
        return rc_fail(c, "a %s-mode result has no score", kj_mode_name(job->mode));
    }
    rc_pop(c, saved);
    v = o->has_score ? cJSON_CreateNumber(o->score_ns) : cJSON_CreateNull();
    if (v == NULL)
        return KJ_ENOMEM;
    if (sc != NULL)
        cJSON_DeleteItemFromObjectCaseSensitive(res, "score_ns");
    if (!cJSON_AddItemToObject(res, "score_ns", v)) {
        cJSON_Delete(v);
        return KJ_ENOMEM;
    }
    return KJ_OK;
}

/* Mode, board and GPU of the result against the job's. */
static int rc_job(struct rc *c, const struct rcheck_job *job, const cJSON *res, int internal)
{
    const char *mode = str_of(res, "mode"), *board = str_of(res, "leaderboard");
    const cJSON *sys = cJSON_GetObjectItemCaseSensitive(res, "system");
    const char *dev = str_of(sys, "gpu");
    size_t saved;
    if (job->spec == NULL && !internal)
        return rc_fail(c, "the job's leaderboard is no longer loaded on the server; only an "
                       "internal_error result can be stored");
    saved = rc_push(c, "mode", 0);
    if (mode == NULL && !internal)
        return rc_fail(c, "missing (the job's mode is %s)", kj_mode_name(job->mode));
    if (mode != NULL && strcmp(mode, kj_mode_name(job->mode)) != 0)
        return rc_fail(c, "'%.16s' is not the job's mode (%s)", mode, kj_mode_name(job->mode));
    rc_pop(c, saved);
    saved = rc_push(c, "leaderboard", 0);
    if (board == NULL && !internal)
        return rc_fail(c, "missing (the job's is %s)", job->spec->name);
    if (board != NULL && (job->spec == NULL || strcmp(board, job->spec->name) != 0))
        return rc_fail(c, "'%.64s' is not the job's leaderboard", board);
    rc_pop(c, saved);
    saved = rc_push(c, "system", 0);
    rc_push(c, "gpu", 0);
    if (dev == NULL && c->out->verdict == KJ_V_ACCEPTED)
        return rc_fail(c, "missing; an accepted result names the GPU it ran on");
    if (dev != NULL && !gputype_matches(job->gpu, dev)) {
        char safe[80];
        kj_printable(safe, sizeof safe, dev, 64);
        return rc_fail(c, "'%s' is not of the job's GPU type, %s", safe, job->gpu);
    }
    rc_pop(c, saved);
    return KJ_OK;
}

/* Everything pass 3 checks, on the copy res. */
static int rc_semantics(struct rc *c, const struct rcheck_job *job, cJSON *res)
{
    const char *verdict = str_of(res, "verdict");
    const cJSON *compile = cJSON_GetObjectItemCaseSensitive(res, "compile");
    double medians[SPEC_MAX_CASES], corrected[SPEC_MAX_CASES], gpu[SPEC_MAX_CASES];
    const double *ranked = medians;
    struct rc_limits lim;
    size_t saved = rc_push(c, "verdict", 0);
    int accepted, internal, timed, rc;
    if (kj_verdict_parse(verdict, &c->out->verdict) != 0)
        return rc_fail(c, "must be one of accepted, compile_error, rejected, wrong_answer, "
                       "runtime_error, time_limit, internal_error");
    rc_pop(c, saved);
    accepted = c->out->verdict == KJ_V_ACCEPTED;
    internal = c->out->verdict == KJ_V_INTERNAL;
    timed = accepted && kj_mode_timed(job->mode);
    if ((rc = rc_job(c, job, res, internal)) != KJ_OK)
        return rc;
    if (accepted && !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(compile, "ok")))
        return rc_fail_at(c, "compile.ok", "an accepted result compiled");
    if (job->spec != NULL) {
        saved = rc_push(c, "tests", 0);
        if ((rc = rc_tests(c, job->spec, cJSON_GetObjectItemCaseSensitive(res, "tests"),
                           accepted)) != KJ_OK)
            return rc;
        rc_pop(c, saved);
        saved = rc_push(c, "benchmarks", 0);
        rc_limits_of(job, res, &lim);
        if ((rc = rc_benchmarks(c, job->spec, job, &lim, cJSON_GetObjectItemCaseSensitive(res,
                                "benchmarks"), accepted, medians, corrected)) != KJ_OK)
            return rc;
        rc_pop(c, saved);
        if ((rc = rc_timing(c, job, res, timed, medians, corrected, gpu, &ranked)) != KJ_OK)
            return rc;
        if (job->mode == KJ_MODE_PROFILE && (rc = rc_profile_shapes(c, job->spec, job, res)) != KJ_OK)
            return rc;
    }
    return rc_score(c, job, res, timed, ranked);
}

/* ------------------------------------------------------------------ */
/* API                                                                 */
/* ------------------------------------------------------------------ */

/* The timed shapes of the checked copy res into out->medians: every
 * benchmark entry with a shape and a median (pass 2 typed both). The
 * ranked median is the entry's corrected one when timing.corrected is
 * true (pass 3 checked both for an accepted timed result), else its
 * median; its gpu_median_ns when timing.ranked is "gpu_time" (pass 3
 * checked every one); the median as timed is kept beside it. */
static int rc_medians(const cJSON *res, struct rcheck_out *out)
{
    const cJSON *benches = cJSON_GetObjectItemCaseSensitive(res, "benchmarks"), *e;
    const cJSON *timing = cJSON_GetObjectItemCaseSensitive(res, "timing");
    int on = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(timing, "corrected"));
    const char *rk = str_of(timing, "ranked");
    int by_gpu = rk != NULL && strcmp(rk, "gpu_time") == 0;
    int n = cJSON_GetArraySize(benches), i = 0;
    if (n == 0)
        return KJ_OK;
    if ((out->medians = calloc((size_t)n, sizeof *out->medians)) == NULL)
        return KJ_ENOMEM;
    cJSON_ArrayForEach(e, benches) {
        const cJSON *shape = cJSON_GetObjectItemCaseSensitive(e, "shape");
        const cJSON *med = cJSON_GetObjectItemCaseSensitive(e, "median_ns");
        const cJSON *cor = cJSON_GetObjectItemCaseSensitive(e, "corrected_median_ns");
        struct rcheck_median *m = &out->medians[out->nmedians];
        if (cJSON_IsObject(shape) && cJSON_IsNumber(med)) {
            m->idx = i;
            m->corrected = on && cJSON_IsNumber(cor);
            m->raw_median_ns = med->valuedouble;
            m->median_ns = m->corrected ? cor->valuedouble : med->valuedouble;
            if (by_gpu && cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(e, "gpu_median_ns")))
                m->median_ns = cJSON_GetObjectItemCaseSensitive(e, "gpu_median_ns")->valuedouble;
            if ((m->shape = cJSON_PrintUnformatted(shape)) == NULL)
                return KJ_ENOMEM;
            out->nmedians++;
        }
        i++;
    }
    return KJ_OK;
}

/* Free what out owns. */
static void out_free(struct rcheck_out *out)
{
    cJSON_free(out->json);
    for (int i = 0; out->medians != NULL && i < out->nmedians; i++)
        cJSON_free(out->medians[i].shape);
    free(out->medians);
}

int rcheck_result(const struct rcheck_job *job, const char *text, size_t len,
                  struct rcheck_out *out, struct kj_err *err)
{
    struct rc c;
    const char *end = NULL;
    cJSON *in = NULL, *res = NULL;
    int rc;
    if (KJ_NEVER(job == NULL || job->gpu == NULL || out == NULL))
        return KJ_FAIL(err, KJ_EINTERNAL, "a result checked without its job");
    memset(out, 0, sizeof *out);
    memset(&c, 0, sizeof c);
    c.err = err;
    c.out = out;
    if (len == 0 || text == NULL) {
        rc = rc_fail(&c, "the result is empty; it is one JSON object");
        goto out;
    }
    if ((rc = rc_scan(&c, text, len)) != KJ_OK)
        goto out;
    in = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (in == NULL) {
        rc = rc_fail(&c, "the result is not valid JSON (offset %zu)",
                     end != NULL && end >= text ? (size_t)(end - text) : (size_t)0);
        goto out;
    }
    if (!cJSON_IsObject(in)) {
        rc = rc_fail(&c, "the result is not a JSON object");
        goto out;
    }
    for (size_t i = (size_t)(end - text); i < len; i++)
        if (strchr(" \t\r\n", text[i]) == NULL) {
            rc = rc_fail(&c, "text after the JSON object (offset %zu)", i);
            goto out;
        }
    if ((rc = rc_value(&c, &f_top, in, &res)) != KJ_OK ||
        (rc = rc_semantics(&c, job, res)) != KJ_OK || (rc = rc_medians(res, out)) != KJ_OK)
        goto out;
    if ((out->json = cJSON_PrintUnformatted(res)) == NULL) {
        rc = KJ_ENOMEM;
        goto out;
    }
    out->json_len = strlen(out->json);
out:
    if (rc == KJ_ENOMEM)
        KJ_FAIL(err, KJ_ENOMEM, "out of memory checking a result");
    cJSON_Delete(in);
    cJSON_Delete(res);
    if (rc != KJ_OK) {
        const char *code = out->code;
        out_free(out);
        memset(out, 0, sizeof *out);
        out->code = rc == KJ_EINVAL ? code : NULL;
    }
    return rc;
}

void rcheck_out_clear(struct rcheck_out *out)
{
    if (out == NULL)
        return;
    out_free(out);
    memset(out, 0, sizeof *out);
}
