/*
 * judge_time.c - the benchmark shapes of a job (see judge_int.h): the
 * empty-kernel baseline and the copy bandwidth, the SM clock and NVML
 * before and after, then every shape timed under one of two protocols
 * (docs/timing.md), every timed call with its own seed and verified; the
 * physical floor, the graph cross-check of short shapes, and the score
 * (geometric mean of the ranked medians). Measurements go into the
 * result's plain structs (result.h).
 *
 *   v1  one shape after the other (in a random order in leaderboard mode):
 *       a warm-up, then samples on one buffer set until the stopping rule
 *       (stats.c) is met, each call verified before the next; the raw
 *       medians are ranked.
 *   v2  the ranked protocol (tplan.h has the plan): one warm-up, then
 *       rounds over the shapes; each visit times batches over several
 *       buffer sets and stream lanes with empty-kernel samples between
 *       them, and the reference box checks each batch's calls at once;
 *       the ranked medians are corrected for the job's launch-path offset
 *       (stats_correct_offset), the raw ones stay in the result.
 *
 * GPU time (v2 only; docs/timing.md "GPU time"): every timed call's span of
 * kernels, copies and sets from CUPTI's records (gtrace.h) comes back beside
 * its event time; each shape gets its GPU-time summary when every call of
 * the job has one. The GPU-time medians rank instead of the (corrected)
 * event medians unless the board says "score": "events" or the runner
 * $KJUDGE_SCORE=events (judge_score_gpu); events rank too whenever the job
 * has no complete GPU time.
 */
#include "judge_int.h"
#include "gpumon.h"
#include "gputime.h"
#include "mono.h"
#include "philox.h"
#include "stats.h"
#include "tplan.h"

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

/* The job's stopping rule: TIMING.md item 8, or exactly job->samples calls
 * whatever the noise. v2 raises its minimum to each shape's planned count. */
static struct stats_rule judge_rule(const struct judge *j)
{
    struct stats_rule rule = STATS_RULE_DEFAULT;
    if (j->job->samples > 0) {
        rule.min_samples = rule.max_samples = j->job->samples;
        rule.min_total_s = 0;
        rule.max_wall_s = 1e9;
        rule.rel_ci = 0;
    }
    return rule;
}

/* Sample shape b until the stopping rule says so. Every timed call has its
 * own seed and is verified before the next one starts. */
static enum judge_step judge_sample_shape(struct judge *j, int b, struct result_shape *e,
                                          struct kj_err *err)
{
    struct stats_rule rule = judge_rule(j);
    struct stats_stopper st;
    enum stats_stop stop = STATS_CONTINUE;
    double t0 = mono_now(), total = 0;
    size_t n = 0;
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
    if (median >= JUDGE_GRAPH_BELOW_NS || j->job->samples > 0 || j->python)
        return 0; /* a Python call cannot be captured in a graph */
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

/* A failed timed call of shape b: the wrong_answer verdict that names it. */
static void judge_timed_verdict(struct judge *j, int b, const struct result_shape *e)
{
    judge_case_verdict(j, 1, b, e->failed_call >= 0 ? e->failed_call : 0, e);
}

/* Protocol v1: each shape warmed up, sampled and cross-checked in turn. */
static int judge_shapes_v1(struct judge *j, const int *order, double *medians,
                           struct kj_err *err)
{
    const struct spec *s = j->spec;
    for (int i = 0; i < s->nbenchmarks; i++) {
        int b = order[i];
        struct result_shape *e = &j->res->benches[b];
        e->reached = 1;
        enum judge_step r = judge_warmup(j, b, err);
        if (r == STEP_PASS)
            r = judge_sample_shape(j, b, e, err);
        judge_shape_event(j, KJ_EV_BENCHMARK, e);
        if (r == STEP_ERROR)
            return judge_has_verdict(j) ? KJ_OK : KJ_EINTERNAL;
        if (r == STEP_VERDICT) {
            judge_timed_verdict(j, b, e);
            return KJ_OK;
        }
        medians[b] = e->t.st.median;
        if (judge_graph_check(j, b, medians[b], e, err) < 0)
            return judge_has_verdict(j) ? KJ_OK : KJ_EINTERNAL;
    }
    return KJ_OK;
}

/* ------------------------------------------------------------ protocol v2 */

/* One shape under protocol v2. */
struct v2_shape {
    int b;
    struct result_shape *e;
    int sets_asked, sets;       /* sets requested (tplan_sets) and those the box holds */
    long planned, per_visit, batches;
    int visits;
    double *x;                  /* owned: the timed samples, in order */
    size_t n, cap;
    double *g;                  /* owned: their GPU times, while the job has them all */
    size_t ng, gcap;
    double total_s, wall_s;     /* sample time and wall time so far */
    struct stats_stopper st;
    enum stats_stop stop;
};

/* Append v to *a (n values, capacity *cap). */
static int judge_push(double **a, size_t *n, size_t *cap, double v, struct kj_err *err)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 1024;
        double *p = realloc(*a, c * sizeof *p);
        if (p == NULL)
            return KJ_FAIL(err, KJ_ENOMEM, "out of memory");
        *a = p;
        *cap = c;
    }
    (*a)[(*n)++] = v;
    return KJ_OK;
}


/* A BATCH reply the judge can use: counts in range, times finite. The box
 * runs the submission's code, so nothing in its reply is taken on trust. */
static int judge_batch_sane(const struct box_rep *rep, int asked)
{
    if (rep->nbatch < 1 || rep->nbatch > asked || rep->nsets < 1 || rep->nsets > BOX_MAX_SETS ||
        rep->nbatch > rep->nsets || rep->nempty < 0 || rep->nempty > rep->nbatch)
        return 0;
    for (int i = 0; i < rep->nbatch; i++)
        if (!isfinite(rep->batch_ns[i]) || rep->batch_ns[i] < 0)
            return 0;
    for (int i = 0; i < rep->nempty; i++)
        if (!isfinite(rep->empty_ns[i]) || rep->empty_ns[i] < 0)
            return 0;
    return 1;
}

/* eval --trace: one CSV line per sample of a verified batch (docs/timing.md
 * 7.2). Timed sample i ran on set i; the empty-kernel samples have no set. */
static void judge_v2_trace(const struct judge *j, const struct v2_shape *sh, int lane,
                           const struct box_rep *rep)
{
    FILE *f = j->job->trace;
    if (f == NULL)
        return;
    for (int i = 0; i < rep->nbatch; i++)
        fprintf(f, "%d,%u,%d,%ld,%d,%d,%d,timed,%.1f\n", sh->b, j->run_epoch, sh->visits,
                sh->batches, i, i, lane, rep->batch_ns[i]);
    for (int i = 0; i < rep->nempty; i++)
        fprintf(f, "%d,%u,%d,%ld,%d,-1,%d,empty,%.1f\n", sh->b, j->run_epoch, sh->visits,
                sh->batches, i, lane, rep->empty_ns[i]);
}

/* The job has no complete GPU time from here on: why (the first reason
 * stays); refused: a call's records failed the checks (gputime.h). */
static void judge_gpu_lost(struct judge *j, int refused, const char *why)
{
    if (!j->gpu_time)
        return;
    j->gpu_time = 0;
    j->gpu_refused = refused;
    snprintf(j->gpu_note, sizeof j->gpu_note, "%s", why);
}

/* How much longer a call's events may be than its GPU time: the
 * launch path, which the empty kernel's event time bounds (it is launch
 * path and a kernel of ~1 us), twice over, at least 4 us. */
static double judge_gpu_gap(const struct judge *j)
{
    double g = 2.0 * j->empty_ns;
    return g > 4000.0 ? g : 4000.0;
}

/* The GPU times of a verified batch into shape sh, or the job's GPU time
 * ends: a value the box cannot have measured (not finite, negative, longer
 * than the call's events) is refused like records that fail the checks. */
static int judge_gpu_batch(struct judge *j, struct v2_shape *sh, const struct box_rep *rep,
                           struct kj_err *err)
{
    j->gpu_unblocked |= rep->gpu_unblocked;
    for (int i = 0; i < rep->nbatch && j->gpu_time; i++) {
        double g = rep->batch_gpu_ns[i], ev = rep->batch_ns[i];
        char why[200];
        if (g < 0 && isfinite(g) && rep->gpu_check == GPUTIME_OK) {
            /* a box that does not record (a new box of the job without CUPTI) */
            snprintf(why, sizeof why, "benchmark %d: the box recorded no GPU time", sh->b);
            judge_gpu_lost(j, 0, why);
        } else if (g < 0 && isfinite(g)) {
            /* records missing or refused: what hidden kernels would look like */
            snprintf(why, sizeof why, "benchmark %d: %s: %.150s", sh->b,
                     gputime_check_name((enum gputime_check)rep->gpu_check),
                     rep->gpu_why[0] ? rep->gpu_why : "no GPU time");
            judge_gpu_lost(j, 1, why);
        } else if (!isfinite(g) || g > ev + GPUTIME_SLACK_NS + GPUTIME_SLACK_REL * ev) {
            snprintf(why, sizeof why, "benchmark %d: the box reported a GPU time of %g ns for "
                     "a call of %g ns", sh->b, g, ev);
            judge_gpu_lost(j, 1, why);
        } else if (judge_push(&sh->g, &sh->ng, &sh->gcap, g, err) != KJ_OK) {
            return KJ_ENOMEM;
        }
    }
    return KJ_OK;
}

/* One batch of at most n timed calls of shape sh, then their verification.
 * The samples join the shape's, the empty-kernel samples the job's. */
static enum judge_step judge_v2_batch(struct judge *j, struct v2_shape *sh, int n,
                                      struct kj_err *err)
{
    struct box_req req = judge_req(BOX_OP_BATCH, 1, sh->b);
    struct box_batch a;
    struct box_rep rep;
    struct result_check chk;
    uint32_t inputs = 0;
    int failed = 0;
    double t0 = mono_now();
    memset(&a, 0, sizeof a);
    memset(&chk, 0, sizeof chk);
    a.n = n;
    a.lane = tplan_lane(sh->batches, BOX_LANES);
    a.lead_in = 1;
    a.empty_every = TPLAN_EMPTY_EVERY;
    a.lead_seed = judge_bench_seed(j, sh->b, 2000000 + sh->batches);
    a.salt = philox_mix_seed(j->poison++, 0x6b6a6670ull); /* the batch's fingerprint salt */
    a.gpu_gap_ns = 0; /* the box reports every span; judge_v2_gpu bounds their median gap */
    for (int i = 0; i < n; i++) {
        a.seed[i] = judge_bench_seed(j, sh->b, (long)sh->n + i);
        a.poison[i] = j->poison++;
        if ((sh->n + (size_t)i) % JUDGE_INPUT_CHECK_EVERY == 0)
            inputs |= 1u << i;
    }
    req.nsets = sh->sets_asked;
    req.payload = sizeof a;
    enum judge_step r = judge_call(j, 0, &req, &a, &rep, "benchmark", err);
    if (r != STEP_PASS) {
        chk.status = RESULT_ERROR;
        snprintf(chk.message, sizeof chk.message, "%s",
                 rep.msg[0] ? rep.msg : "the kernel did not finish");
        failed = rep.nbatch >= 0 && rep.nbatch < n ? rep.nbatch : 0;
        judge_shape_failed(sh->e, &chk, r, (long)sh->n + failed);
        return r;
    }
    if (!judge_batch_sane(&rep, n)) {
        KJ_FAIL(err, KJ_EINTERNAL, "benchmark %d: the box's batch reply is inconsistent", sh->b);
        return STEP_ERROR;
    }
    r = judge_verify_batch(j, sh->b, &rep, rep.nbatch, a.seed, a.poison, inputs, a.salt, &failed,
                           &chk, err);
    if (r != STEP_PASS) {
        judge_shape_failed(sh->e, &chk, r, (long)sh->n + failed);
        return r;
    }
    sh->sets = rep.nsets;
    if (judge_gpu_batch(j, sh, &rep, err) != KJ_OK)
        return STEP_ERROR;
    judge_v2_trace(j, sh, a.lane, &rep);
    sh->batches++;
    sh->wall_s += mono_now() - t0;
    for (int i = 0; i < rep.nempty; i++)
        if (judge_push(&j->empties, &j->nempty, &j->empty_cap, rep.empty_ns[i], err) != KJ_OK)
            return STEP_ERROR;
    for (int i = 0; i < rep.nbatch; i++) {
        if (judge_push(&sh->x, &sh->n, &sh->cap, rep.batch_ns[i], err) != KJ_OK)
            return STEP_ERROR;
        sh->total_s += rep.batch_ns[i] * 1e-9;
        if (sh->stop != STATS_CONTINUE)
            continue;
        /* A job ranked on GPU time stops on what ranks: the GPU-time samples
         * (judge_gpu_batch appended the batch's already), while it has them all. */
        const double *ranked = j->plan_gpu && j->gpu_time && sh->ng >= sh->n ? sh->g : sh->x;
        if (ranked == sh->x)
            sh->st.rule.abs_ci = 0; /* the half-tick test is the GPU timer's (TPLAN_GPU_TICK_NS) */
        sh->stop = stats_stopper_check(&sh->st, ranked, sh->n, sh->total_s, sh->wall_s);
    }
    return STEP_PASS;
}

/* One visit of shape sh: per_visit timed calls in batches over its sets,
 * fewer when its stopping rule ends it. */
static enum judge_step judge_v2_visit(struct judge *j, struct v2_shape *sh, long max_samples,
                                      struct kj_err *err)
{
    long done = 0;
    int k;
    while (sh->stop == STATS_CONTINUE &&
           (k = tplan_next_batch(sh->sets, sh->per_visit, done, (long)sh->n, max_samples)) > 0) {
        size_t before = sh->n;
        enum judge_step r = judge_v2_batch(j, sh, k, err);
        if (r != STEP_PASS)
            return r;
        done += (long)(sh->n - before);
    }
    if (done == 0 && sh->stop == STATS_CONTINUE)
        sh->stop = STATS_STOP_MAX_SAMPLES; /* no room left: never loop on a shape */
    sh->visits++;
    return STEP_PASS;
}

/* The job's one warm-up, shape by shape over its sets: each shape's median
 * sizes its plan. */
static enum judge_step judge_v2_warmup(struct judge *j, struct v2_shape *sh, double seconds,
                                       const struct stats_rule *rule, struct kj_err *err)
{
    struct box_req req = judge_req(BOX_OP_WARMUP, 1, sh->b);
    struct box_rep rep;
    req.seed = judge_bench_seed(j, sh->b, 1000000);
    req.poison_seed = j->poison++;
    req.seconds = seconds;
    req.nsets = sh->sets_asked;
    enum judge_step r = judge_call(j, 0, &req, NULL, &rep, "warm-up", err);
    if (r != STEP_PASS)
        return r;
    sh->sets = rep.nsets >= 1 && rep.nsets <= sh->sets_asked ? rep.nsets : 1;
    sh->planned = stats_planned_samples(rep.ns, rule);
    sh->per_visit = tplan_visit_samples(sh->planned, TPLAN_ROUNDS);
    return STEP_PASS;
}

/* E_gpu of this device: $KJUDGE_EMPTY_KERNEL_NS when set (a GPU model not
 * in the table, calibrated by bench/bench_score_stability.py), else the table's. */
static double judge_gpu_empty_ns(const struct judge *j, char *src, size_t srcsz)
{
    const char *env = getenv("KJUDGE_EMPTY_KERNEL_NS"), *where = "";
    if (env != NULL && env[0] != '\0') {
        char *end;
        double v = strtod(env, &end);
        if (*end == '\0' && isfinite(v) && v > 0) {
            snprintf(src, srcsz, "KJUDGE_EMPTY_KERNEL_NS on this runner");
            return v;
        }
        kj_log(KJ_LOG_WARN, "judge", "KJUDGE_EMPTY_KERNEL_NS='%.32s' is not a positive number; "
               "ignored", env);
    }
    double v = tplan_gpu_empty_ns(j->dev.name, &where);
    snprintf(src, srcsz, "%s", v > 0 ? where : "no constant for this GPU");
    return v;
}

int judge_score_gpu(const struct spec *spec, const char *env)
{
    if (env != NULL && strcmp(env, "gpu_time") == 0)
        return 1;
    if (env != NULL && strcmp(env, "events") == 0)
        return 0;
    return spec->score_gpu_time;
}

/* Whether this job ranks GPU time: judge_score_gpu with $KJUDGE_SCORE. */
static int judge_rank_gpu(const struct judge *j)
{
    return judge_score_gpu(j->spec, getenv("KJUDGE_SCORE"));
}

/* The GPU-time summaries of every shape and their score, when every timed
 * call of the job has its GPU time; with $KJUDGE_SCORE=gpu_time, gmed[]
 * gets the GPU-time medians and they rank. A job whose records were
 * refused (gputime.h) cannot be ranked on GPU time: an error then, not a
 * quiet fall-back to events. */
static int judge_v2_gpu(struct judge *j, struct v2_shape *shapes, double *gmed,
                        struct kj_err *err)
{
    const struct spec *s = j->spec;
    struct result_timing *tm = &j->res->timing;
    double g[SPEC_MAX_CASES];
    for (int b = 0; b < s->nbenchmarks && j->gpu_time; b++) {
        double gap;
        char why[200];
        if (shapes[b].ng != shapes[b].n) {
            judge_gpu_lost(j, 0, "a shape's calls lack their GPU time");
        } else if (!j->gpu_unblocked &&
                   !gputime_gaps_ok(shapes[b].x, shapes[b].g, shapes[b].n, judge_gpu_gap(j), &gap)) {
            snprintf(why, sizeof why, "benchmark %d: shorter: the calls' events exceed their "
                     "GPU time by %.0f ns (median), more than the launch path's %.0f ns: "
                     "work outside the call's kernels, copies and sets?", b, gap, judge_gpu_gap(j));
            judge_gpu_lost(j, 1, why);
        }
    }
    tm->gpu_time = j->gpu_time;
    snprintf(tm->gpu_time_note, sizeof tm->gpu_time_note, "%s", j->gpu_note);
    if (!j->gpu_time) {
        if (judge_rank_gpu(j) && j->gpu_refused)
            return KJ_FAIL(err, KJ_EINTERNAL, "this runner ranks GPU time, and a call's kernel "
                           "records were refused: %s", j->gpu_note);
        return KJ_OK;
    }
    for (int b = 0; b < s->nbenchmarks; b++) {
        struct result_shape *e = shapes[b].e;
        if (stats_summarize(shapes[b].g, shapes[b].ng, &e->gpu) != KJ_OK)
            return KJ_FAIL(err, KJ_EINTERNAL, "benchmark %d: no GPU-time summary", b);
        e->has_gpu = 1;
        g[b] = e->gpu.median;
    }
    tm->gpu_score_ns = stats_geomean(g, (size_t)s->nbenchmarks);
    tm->has_gpu_score = isfinite(tm->gpu_score_ns) && tm->gpu_score_ns > 0;
    if (judge_rank_gpu(j) && tm->has_gpu_score) {
        tm->ranked_gpu = 1;
        memcpy(gmed, g, sizeof g[0] * (size_t)s->nbenchmarks);
    }
    return KJ_OK;
}

/* The end of v2: statistics per shape, the correction, the events, the
 * graph cross-check; medians[] gets the ranked (corrected) medians. */
static int judge_v2_finish(struct judge *j, struct v2_shape *shapes, const int *order,
                           double *medians, struct kj_err *err)
{
    const struct spec *s = j->spec;
    struct result_timing *tm = &j->res->timing;
    double raw[SPEC_MAX_CASES], gmed[SPEC_MAX_CASES];
    for (int b = 0; b < s->nbenchmarks; b++) {
        struct v2_shape *sh = &shapes[b];
        struct shape_timing *t = &sh->e->t;
        if (stats_summarize(sh->x, sh->n, &t->st) != KJ_OK)
            return KJ_FAIL(err, KJ_EINTERNAL, "no samples for benchmark %d", b);
        sh->e->check.status = RESULT_PASS;
        sh->e->timed = 1;
        t->stop = sh->stop == STATS_CONTINUE ? STATS_STOP_MAX_SAMPLES : sh->stop;
        t->floor_ns = judge_floor_ns(j, b);
        t->wall_s = sh->wall_s;
        t->wall_ms_per_call = 1e3 * sh->wall_s / (double)sh->n;
        t->verified_on_gpu = j->gpu_verify;
        t->sets = sh->sets;
        t->visits = sh->visits;
        raw[b] = t->st.median;
    }
    if (judge_v2_gpu(j, shapes, gmed, err) != KJ_OK)
        return err->code != KJ_OK ? err->code : KJ_EINTERNAL;
    tm->empty_samples = (long)j->nempty;
    tm->empty_run_ns = stats_trimmed_mean(j->empties, j->nempty, TPLAN_EMPTY_TRIM);
    tm->has_empty_run = isfinite(tm->empty_run_ns);
    tm->empty_gpu_ns = judge_gpu_empty_ns(j, tm->empty_gpu_source, sizeof tm->empty_gpu_source);
    /* Half the job's deviation (TPLAN_CORRECT_WEIGHT, docs/timing.md 4.10):
     * over four processes the kernels follow the empties only in part. */
    tm->corrected = stats_correct_offset(raw, (size_t)s->nbenchmarks, tm->empty_run_ns,
                                         tm->empty_gpu_ns, TPLAN_CORRECT_WEIGHT, medians,
                                         &tm->offset_ns);
    if (!tm->corrected && tm->empty_gpu_ns > 0)
        snprintf(tm->empty_gpu_source + strlen(tm->empty_gpu_source),
                 sizeof tm->empty_gpu_source - strlen(tm->empty_gpu_source),
                 "; this job's estimate is out of range");
    for (int i = 0; i < s->nbenchmarks; i++) {
        int b = order[i];
        struct result_shape *e = shapes[b].e;
        e->has_corrected = tm->corrected;
        e->corrected_median_ns = medians[b];
        if (judge_graph_check(j, b, raw[b], e, err) < 0)
            return judge_has_verdict(j) ? KJ_OK : KJ_EINTERNAL;
        judge_shape_event(j, KJ_EV_BENCHMARK, e);
    }
    if (tm->ranked_gpu)
        memcpy(medians, gmed, sizeof gmed[0] * (size_t)s->nbenchmarks);
    return KJ_OK;
}

/* Before planned round `round`: a shape that would reach its wall cap
 * before its last planned visit takes fewer samples per visit
 * (tplan_fit_visit), and its stopping rule asks for no more than the rounds
 * will give, so every process gets its share of it. */
static void judge_v2_fit(struct v2_shape *shapes, int n, int round, double max_wall_s)
{
    int left = TPLAN_ROUNDS - round;
    for (int b = 0; b < n && round > 0 && left > 0; b++) {
        struct v2_shape *sh = &shapes[b];
        if (sh->stop != STATS_CONTINUE)
            continue;
        long fit = tplan_fit_visit(sh->per_visit, left, (long)sh->n, sh->wall_s, max_wall_s);
        if (fit >= sh->per_visit)
            continue;
        sh->per_visit = fit;
        sh->st.rule.min_samples = (long)sh->n + fit * left;
        sh->st.rule.min_total_s = 0;
    }
}

/* The submission boxes of a v2 job (tplan_processes; plan_gpu is set by
 * judge_shapes_v2, still 0 when judge_ahead_start asks for a Python job,
 * whose boxes do not depend on it). */
static int judge_v2_processes(const struct judge *j)
{
    return tplan_processes(j->job->processes, j->python, j->plan_gpu);
}

/* Whether planned round r (from 0) starts in a fresh box: the rounds are
 * split evenly over the job's processes. */
static int judge_v2_new_box(int round, int processes)
{
    return round > 0 && round < TPLAN_ROUNDS &&
           round * processes / TPLAN_ROUNDS != (round - 1) * processes / TPLAN_ROUNDS;
}

/* Whether a round after `round` starts in a fresh box. */
static int judge_v2_more_boxes(int round, int processes)
{
    for (int r = round + 1; r < TPLAN_ROUNDS; r++)
        if (judge_v2_new_box(r, processes))
            return 1;
    return 0;
}

void judge_ahead_start(struct judge *j)
{
    if (j->python && kj_mode_timed(j->job->mode) && j->job->protocol != JUDGE_PROTOCOL_V1 &&
        judge_v2_more_boxes(-1, judge_v2_processes(j)))
        judge_start_next(j);
}

/* Protocol v2: the warm-up, the rounds (each group of them in its own
 * submission box), then judge_v2_finish. */
static int judge_shapes_v2(struct judge *j, const int *order, double *medians,
                           struct kj_err *err)
{
    const struct spec *s = j->spec;
    struct stats_rule rule = judge_rule(j);
    j->plan_gpu = judge_rank_gpu(j) && j->gpu_time;
    int processes = judge_v2_processes(j);
    if (j->job->samples <= 0)
        rule.max_wall_s = TPLAN_MAX_WALL_S;
    if (j->job->samples <= 0 && j->plan_gpu) {
        rule.min_total_s = j->job->gpu_min_total_s > 0 ? j->job->gpu_min_total_s
                                                       : TPLAN_GPU_MIN_TOTAL_S;
        rule.abs_ci = TPLAN_GPU_TICK_NS / 2.0;
    }
    j->res->timing.processes = processes;
    if (j->job->trace != NULL)
        fprintf(j->job->trace, "shape,process,visit,batch,slot,set,lane,kind,ns\n");
    struct v2_shape *shapes = calloc((size_t)s->nbenchmarks, sizeof *shapes);
    double warm = j->job->warmup_s > 0 ? j->job->warmup_s : TPLAN_WARM_S;
    enum judge_step r = STEP_PASS;
    int rc = KJ_OK, failed = -1;
    if (shapes == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory");
    /* Every shape knows its entry before any box call: a failure in the
     * warm-up of the first shape visited still walks all of them below. */
    for (int b = 0; b < s->nbenchmarks; b++) {
        shapes[b].b = b;
        shapes[b].e = &j->res->benches[b];
    }
    for (int i = 0; i < s->nbenchmarks && r == STEP_PASS; i++) {
        int b = order[i];
        struct v2_shape *sh = &shapes[b];
        sh->e->reached = 1;
        const struct case_plan *cp = plan_case(j->plan, 1, b);
        sh->sets_asked = tplan_sets(cp->total + cp->set[PLAN_SUB].ws_bytes, j->dev.total_mem,
                                    BOX_MAX_SETS);
        r = judge_v2_warmup(j, sh, warm / s->nbenchmarks, &rule, err);
        if (r == STEP_PASS) {
            struct stats_rule own = rule;
            own.min_samples = sh->planned;
            stats_stopper_init(&sh->st, &own);
        } else {
            failed = b;
        }
    }
    /* The planned rounds, then more visits for shapes whose rule goes on. */
    for (int round = 0, more = 1; r == STEP_PASS && more; round++) {
        more = 0;
        judge_v2_fit(shapes, s->nbenchmarks, round, rule.max_wall_s);
        if (judge_v2_new_box(round, processes)) {
            if (judge_restart_run(j, err) != KJ_OK)
                r = STEP_ERROR;
            else if (judge_has_verdict(j))
                r = STEP_VERDICT;
            if (r != STEP_PASS)
                break;
            /* the box after this one (the first came with the job:
             * judge_ahead_start), its imports overlapping these rounds */
            if (j->python && judge_v2_more_boxes(round, processes))
                judge_start_next(j);
        }
        for (int i = 0; i < s->nbenchmarks && r == STEP_PASS; i++) {
            struct v2_shape *sh = &shapes[order[i]];
            if (sh->stop != STATS_CONTINUE)
                continue;
            r = judge_v2_visit(j, sh, rule.max_samples, err);
            if (r != STEP_PASS)
                failed = sh->b;
            more = 1;
        }
    }
    if (r == STEP_PASS) {
        rc = judge_v2_finish(j, shapes, order, medians, err);
    } else if (r == STEP_ERROR) {
        rc = judge_has_verdict(j) ? KJ_OK : KJ_EINTERNAL;
    } else if (failed >= 0) {
        /* The failed shape says why; the others were not finished: {} as
         * shapes never reached. */
        for (int b = 0; b < s->nbenchmarks; b++)
            if (b != failed)
                shapes[b].e->reached = 0;
        judge_shape_event(j, KJ_EV_BENCHMARK, shapes[failed].e);
        if (!judge_has_verdict(j))
            judge_timed_verdict(j, failed, shapes[failed].e);
    }
    for (int b = 0; b < s->nbenchmarks; b++) {
        free(shapes[b].x);
        free(shapes[b].g);
    }
    free(shapes);
    return rc;
}

int judge_benchmarks(struct judge *j, struct kj_err *err)
{
    const struct spec *s = j->spec;
    struct judge_result *res = j->res;
    int order[SPEC_MAX_CASES];
    double medians[SPEC_MAX_CASES], t0 = mono_now();
    struct box_req req = judge_req(BOX_OP_BASELINE, 0, 0);
    struct box_rep rep;
    int rc;
    if (judge_call(j, 0, &req, NULL, &rep, "baseline", err) != STEP_PASS)
        return judge_has_verdict(j) ? KJ_OK : KJ_EINTERNAL;
    res->has_baseline = 1;
    res->baseline_empty_kernel_ns = rep.ns;
    res->baseline_event_pair_ns = rep.event_ns;
    j->event_ns = rep.event_ns;
    j->empty_ns = rep.ns;
    j->copy_gbs = rep.copy_gbs;
    j->gpu_time = j->dev.gpu_time && j->job->protocol != JUDGE_PROTOCOL_V1;
    j->gpu_refused = 0;
    j->gpu_unblocked = 0;
    snprintf(j->gpu_note, sizeof j->gpu_note, "%s", j->job->protocol == JUDGE_PROTOCOL_V1
             ? "protocol v1 times with events only" : j->dev.gpu_time_note);
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
    for (int b = 0; b < s->nbenchmarks; b++) {
        struct result_shape *e = &res->benches[b];
        e->index = b;
        e->failed_call = -1;
        memcpy(e->val, s->benchmarks[b].val, sizeof e->val);
        judge_launches(j, plan_case(j->plan, 1, b), e);
    }
    memset(&res->timing, 0, sizeof res->timing);
    if (j->job->protocol == JUDGE_PROTOCOL_V1) {
        res->timing.protocol = 1;
        rc = judge_shapes_v1(j, order, medians, err);
    } else {
        res->timing.protocol = 2;
        res->timing.rounds = TPLAN_ROUNDS;
        res->timing.lanes = BOX_LANES;
        res->timing.empty_every = TPLAN_EMPTY_EVERY;
        rc = judge_shapes_v2(j, order, medians, err);
    }
    res->timing.wall_s = mono_now() - t0;
    if (rc != KJ_OK || judge_has_verdict(j))
        return rc;
    judge_clock(j, 1, err);
    double raw[SPEC_MAX_CASES];
    for (int b = 0; b < s->nbenchmarks; b++)
        raw[b] = res->benches[b].t.st.median;
    res->timing.has_raw_score = 1;
    res->timing.raw_score_ns = stats_geomean(raw, (size_t)s->nbenchmarks);
    res->has_score = 1;
    res->score_ns = stats_geomean(medians, (size_t)s->nbenchmarks);
    return KJ_OK;
}
