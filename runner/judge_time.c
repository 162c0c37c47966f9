/*
 * judge_time.c - the benchmark shapes of a job (see judge_int.h): the
 * empty-kernel baseline and the copy bandwidth, the SM clock and NVML
 * before and after, then every shape (in a random order in leaderboard
 * mode) warmed up and sampled until the stopping rule (stats.c) is met,
 * every timed call with its own seed and verified; the physical floor, the
 * graph cross-check of short shapes, and the score (geometric mean of the
 * medians). Measurements go into the result's plain structs (result.h).
 */
#include "judge_int.h"
#include "gpumon.h"
#include "mono.h"
#include "philox.h"
#include "stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JUDGE_INPUT_CHECK_EVERY 8
#define JUDGE_SEED_STRIDE 13    /* timed call k of a shape uses seed + 13 k */
#define JUDGE_GRAPH_BELOW_NS 20000.0 /* cross-check shapes shorter than this (TIMING.md 7) */
#define JUDGE_GRAPH_FLAG 0.05         /* flag a disagreement above 5 % */

/* The seed of timed call k of benchmark b: public in benchmark mode, mixed
 * with the leaderboard's secret in leaderboard mode. */
static uint64_t judge_bench_seed(const struct judge *j, int b, long k)
{
    uint64_t s = j->spec->benchmarks[b].seed + (uint64_t)JUDGE_SEED_STRIDE * (uint64_t)k;
    return j->job->mode == KJ_MODE_LEADERBOARD ? philox_mix_seed(s, j->job->secret_seed) : s;
}

/* Minimum time for shape b: bytes that must move over the measured copy
 * bandwidth (or, unmeasured, bus width x 2 x memory clock). 0 when unknown. */
static double judge_floor_ns(const struct judge *j, int b)
{
    const struct case_plan *cp = plan_case(j->plan, 1, b);
    /* The larger of the measured copy bandwidth and the memory's own peak
     * (clock x bus width): a good kernel beats cuMemcpy's device-to-device
     * copy (on the H200, 4.1-4.2 TB/s measured against a 4.9 TB/s peak), so
     * the copy alone would flag honest kernels as impossible. */
    double peak = 2.0 * (double)j->dev.mem_clock_khz * 1e3 * (double)j->dev.mem_bus_bits / 8.0;
    double bw = j->copy_gbs * 1e9 > peak ? j->copy_gbs * 1e9 : peak;
    if (bw <= 0 || !cp->has_floor)
        return 0;
    return cp->floor_bytes / bw * 1e9;
}

/* Record why sampling of a shape ended early: a failed call (r says how). */
static void judge_shape_failed(struct result_shape *e, const struct result_check *call,
                               enum judge_step r, long n)
{
    e->check.status = r == STEP_VERDICT ? RESULT_FAIL : RESULT_ERROR;
    snprintf(e->check.message, sizeof e->check.message, "%s",
             call->status == RESULT_FAIL || call->status == RESULT_ERROR ? call->message : "");
    e->failed_call = n;
    e->check.has_mismatch = call->has_mismatch;
    e->check.mismatch = call->mismatch;
    memcpy(e->check.mismatch_buffer, call->mismatch_buffer, sizeof e->check.mismatch_buffer);
}

static int judge_keep_sample(struct judge *j, size_t n, double ns, struct kj_err *err)
{
    if (n == j->cap) {
        size_t cap = j->cap ? j->cap * 2 : 1024;
        double *p = realloc(j->samples, cap * sizeof *p);
        if (p == NULL)
            return KJ_FAIL(err, KJ_ENOMEM, "out of memory");
        j->samples = p;
        j->cap = cap;
    }
    j->samples[n] = ns;
    return KJ_OK;
}

/* Sample shape b until the stopping rule says so. Every timed call has its
 * own seed and is verified before the next one starts. */
static enum judge_step judge_sample_shape(struct judge *j, int b, struct result_shape *e,
                                          struct kj_err *err)
{
    struct stats_rule rule = STATS_RULE_DEFAULT;
    struct stats_stopper st;
    enum stats_stop stop = STATS_CONTINUE;
    double t0 = mono_now(), total = 0;
    size_t n = 0;
    if (j->job->samples > 0) { /* a fixed count: exactly that many, whatever the noise */
        rule.min_samples = rule.max_samples = j->job->samples;
        rule.min_total_s = 0;
        rule.max_wall_s = 1e9;
        rule.rel_ci = 0;
    }
    stats_stopper_init(&st, &rule);
    while (stop == STATS_CONTINUE) {
        struct result_check call;
        double ns = 0;
        int check = (n % JUDGE_INPUT_CHECK_EVERY) == 0;
        memset(&call, 0, sizeof call);
        enum judge_step r = judge_one_call(j, 1, b, judge_bench_seed(j, b, (long)n), BOX_OP_SAMPLE,
                                           check, &call, &ns, err);
        if (r == STEP_PASS && judge_keep_sample(j, n, ns, err) != KJ_OK)
            r = STEP_ERROR;
        if (r != STEP_PASS) {
            judge_shape_failed(e, &call, r, (long)n);
            return r;
        }
        n++;
        total += ns * 1e-9;
        stop = stats_stopper_check(&st, j->samples, n, total, mono_now() - t0);
    }
    struct shape_timing *t = &e->t;
    if (stats_summarize(j->samples, n, &t->st) != KJ_OK) {
        KJ_FAIL(err, KJ_EINTERNAL, "no samples for benchmark %d", b);
        return STEP_ERROR;
    }
    e->check.status = RESULT_PASS;
    e->timed = 1;
    t->stop = stop;
    t->floor_ns = judge_floor_ns(j, b);
    t->wall_s = mono_now() - t0;
    t->wall_ms_per_call = 1e3 * (mono_now() - t0) / (double)n;
    t->verified_on_gpu = j->gpu_verify;
    return STEP_PASS;
}

/* The launch configuration of every launch line for case cp that
 * evaluates, for the report. */
static void judge_launches(const struct judge *j, const struct case_plan *cp,
                           struct result_shape *e)
{
    const struct plan_launches *set = &cp->set[PLAN_SUB];
    e->has_launches = 1;
    for (int l = 0; l < j->dirs.nlaunch; l++) {
        struct result_launch *rl = &e->launch[e->nlaunch];
        if (!set->ok[l])
            continue;
        rl->dims = set->dims[l];
        snprintf(rl->kernel, sizeof rl->kernel, "%s", j->dirs.launch[l].kernel);
        e->nlaunch++;
    }
}

static enum judge_step judge_warmup(struct judge *j, int b, struct kj_err *err)
{
    struct box_req req = judge_req(BOX_OP_WARMUP, 1, b);
    struct box_rep rep;
    req.seed = judge_bench_seed(j, b, 1000000);
    req.poison_seed = j->poison++;
    req.seconds = j->job->warmup_s > 0 ? j->job->warmup_s : 0.2;
    return judge_call(j, 0, &req, NULL, &rep, "warm-up", err);
}

/* The SM clock now (MHz), before (after = 0) or after the benchmark shapes,
 * and NVML's reading, into the result's system. */
static void judge_clock(struct judge *j, int after, struct kj_err *err)
{
    struct result_system *y = &j->res->sys;
    struct box_req req = judge_req(BOX_OP_CLOCK, 0, 0);
    struct box_rep rep;
    if (judge_call(j, 0, &req, NULL, &rep, "clock probe", err) != STEP_PASS)
        return;
    *(after ? &y->has_clock_after : &y->has_clock_before) = 1;
    *(after ? &y->sm_clock_mhz_after : &y->sm_clock_mhz_before) = rep.ns;
    gpumon_read_isolated(j->dev.pci, &rep.mon, 10000, j->job->secrets);
    if (!rep.mon.ok)
        return;
    if (y->driver[0] == '\0')
        snprintf(y->driver, sizeof y->driver, "%s", rep.mon.driver);
    *(after ? &y->has_nvml_after : &y->has_nvml_before) = 1;
    *(after ? &y->nvml_after : &y->nvml_before) = rep.mon;
}

/* Secondary figures for a timed shape, never ranked: the median less the
 * empty event pair's overhead, and for short shapes a CUDA-graph
 * measurement (many launches, rotating buffers) with a flag when it
 * disagrees with the median by more than 5 %. 0 = done, <0 = a verdict or
 * an error. */
static int judge_graph_check(struct judge *j, int b, double median, struct result_shape *e,
                             struct kj_err *err)
{
    struct result_graph *g = &e->graph;
    if (j->event_ns > 0) {
        e->has_adjusted = 1;
        e->adjusted_median_ns = median - j->event_ns;
    }
    if (median >= JUDGE_GRAPH_BELOW_NS || j->job->samples > 0)
        return 0;
    struct box_req req = judge_req(BOX_OP_GRAPH, 1, b);
    struct box_rep rep;
    req.seed = judge_bench_seed(j, b, 1000003);
    req.poison_seed = j->poison++;
    req.seconds = median * 1e-9;
    enum judge_step r = judge_call(j, 0, &req, NULL, &rep, "graph cross-check", err);
    if (r != STEP_PASS)
        return r == STEP_ERROR ? -1 : (judge_has_verdict(j) ? -1 : 0);
    snprintf(g->message, sizeof g->message, "%s", rep.msg);
    if (rep.count <= 0) {
        g->state = RESULT_GRAPH_REFUSED;
        return 0;
    }
    g->state = RESULT_GRAPH_MEASURED;
    g->ns = rep.ns;
    g->launches = rep.count;
    g->ratio_to_median = rep.ns / median;
    g->disagrees = fabs(g->ratio_to_median - 1.0) > JUDGE_GRAPH_FLAG;
    return 0;
}

int judge_benchmarks(struct judge *j, struct kj_err *err)
{
    const struct spec *s = j->spec;
    struct judge_result *res = j->res;
    int order[SPEC_MAX_CASES];
    double medians[SPEC_MAX_CASES];
    struct box_req req = judge_req(BOX_OP_BASELINE, 0, 0);
    struct box_rep rep;
    if (judge_call(j, 0, &req, NULL, &rep, "baseline", err) != STEP_PASS)
        return judge_has_verdict(j) ? KJ_OK : KJ_EINTERNAL;
    res->has_baseline = 1;
    res->baseline_empty_kernel_ns = rep.ns;
    res->baseline_event_pair_ns = rep.event_ns;
    j->event_ns = rep.event_ns;
    j->copy_gbs = rep.copy_gbs;
    if (rep.copy_gbs > 0) {
        res->sys.has_copy_bw = 1;
        res->sys.measured_copy_bandwidth_gbs = rep.copy_gbs;
    }
    judge_clock(j, 0, err);
    if (judge_has_verdict(j))
        return KJ_OK;
    for (int i = 0; i < s->nbenchmarks; i++)
        order[i] = i;
    /* Leaderboard runs visit the shapes in a random order. */
    for (int i = s->nbenchmarks - 1; j->job->mode == KJ_MODE_LEADERBOARD && i > 0; i--) {
        int k = (int)(j->poison++ % (uint64_t)(i + 1)), t = order[i];
        order[i] = order[k];
        order[k] = t;
    }
    /* Every shape has its entry, {} until it is reached. */
    memset(res->benches, 0, sizeof res->benches[0] * (size_t)s->nbenchmarks);
    res->nbenches = s->nbenchmarks;
    for (int i = 0; i < s->nbenchmarks; i++) {
        int b = order[i];
        struct result_shape *e = &res->benches[b];
        e->reached = 1;
        e->index = b;
        e->failed_call = -1;
        memcpy(e->val, s->benchmarks[b].val, sizeof e->val);
        judge_launches(j, plan_case(j->plan, 1, b), e);
        enum judge_step r = judge_warmup(j, b, err);
        if (r == STEP_PASS)
            r = judge_sample_shape(j, b, e, err);
        judge_shape_event(j, KJ_EV_BENCHMARK, e);
        if (r == STEP_ERROR)
            return judge_has_verdict(j) ? KJ_OK : KJ_EINTERNAL;
        if (r == STEP_VERDICT) {
            char shape[256];
            spec_case_label(s, &s->benchmarks[b], shape, sizeof shape);
            judge_verdict(j, KJ_V_WRONG_ANSWER, "benchmark %d (%s), timed call %d: %s", b, shape,
                          e->failed_call >= 0 ? (int)e->failed_call : 0,
                          e->check.status == RESULT_FAIL || e->check.status == RESULT_ERROR ?
                          e->check.message : "wrong output");
            return KJ_OK;
        }
        medians[b] = e->t.st.median;
        if (judge_graph_check(j, b, medians[b], e, err) < 0)
            return judge_has_verdict(j) ? KJ_OK : KJ_EINTERNAL;
    }
    judge_clock(j, 1, err);
    res->has_score = 1;
    res->score_ns = stats_geomean(medians, (size_t)s->nbenchmarks);
    return KJ_OK;
}

