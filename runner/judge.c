/*
 * judge.c - one submission from source to verdict (see judge.h).
 *
 * Flow: parse directives -> start the reference box and the submission box
 * (their CUDA contexts come up while NVRTC compiles) -> load both cubins ->
 * every test shape once: the reference box and the submission box compute
 * from the same seed, the judge compares the outputs and checks the inputs
 * were left alone -> in benchmark and leaderboard modes, every benchmark
 * shape is warmed up and then sampled until the stopping rule (stats.c) is
 * met; every timed call has its own seed and its output is verified the same
 * way -> score = geometric mean of the per-shape medians.
 * The judge never trusts the submission box: it compares in this process.
 */
#include "judge.h"
#include "box.h"
#include "compare.h"
#include "cbox.h"
#include "compile.h"
#include "directive.h"
#include "dump.h"
#include "expr.h"
#include "kj_file.h"
#include "mono.h"
#include "philox.h"
#include "plan.h"
#include "result.h"
#include "sass.h"
#include "stats.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define JUDGE_START_MS 120000   /* a box must have its context within this */
#define JUDGE_CALL_MS 60000     /* one call may take at most this (or what is left) */
#define JUDGE_INPUT_CHECK_EVERY 8
#define JUDGE_SEED_STRIDE 13    /* timed call k of a shape uses seed + 13 k */

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
    struct box_device dev;
    struct compile_result sub, refc, genc;
    struct sass_proc sass;      /* nvdisasm on the submission, pid -1 when not running */
    struct judge_result *res;   /* owned until returned */
    double deadline;            /* CLOCK_MONOTONIC seconds */
    uint64_t poison;
    int gpu_verify;             /* 1: verify in the reference box through CUDA IPC */
    double copy_gbs;            /* measured device-to-device bandwidth, 0 = not measured */
    double event_ns;            /* median of an empty event pair (BASELINE) */
    double *samples;            /* owned scratch for one shape */
    size_t cap;
};

static void judge_event(struct judge *j, enum kj_event event, const cJSON *data)
{
    if (j->job->progress != NULL)
        j->job->progress(j->job->progress_ctx, event, data);
}

/* Set the verdict and its one-line message (first verdict wins). */
static void judge_verdict(struct judge *j, enum kj_verdict verdict, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void judge_verdict(struct judge *j, enum kj_verdict verdict, const char *fmt, ...)
{
    char msg[RESULT_MAX_MESSAGE];
    va_list ap;
    if (j->res->has_verdict)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    result_set_verdict(j->res, verdict, msg);
    cJSON *ev = result_verdict_json(j->res);
    judge_event(j, KJ_EV_VERDICT, ev);
    cJSON_Delete(ev);
}

static int judge_has_verdict(const struct judge *j)
{
    return j->res->has_verdict;
}

/* Report a shape entry as event ev. */
static void judge_shape_event(struct judge *j, enum kj_event ev, const struct result_shape *e)
{
    cJSON *o = result_shape_json(j->res, e);
    judge_event(j, ev, o);
    cJSON_Delete(o);
}

/* A new entry for case idx of the board's tests (bench 0) or benchmarks. */
static struct result_shape *judge_entry(struct judge *j, int bench, int idx)
{
    struct judge_result *r = j->res;
    struct result_shape *e = bench ? &r->benches[r->nbenches++] : &r->tests[r->ntests++];
    const struct spec_case *c = bench ? &j->spec->benchmarks[idx] : &j->spec->tests[idx];
    memset(e, 0, sizeof *e);
    e->reached = 1;
    e->index = idx;
    e->failed_call = -1;
    memcpy(e->val, c->val, sizeof e->val);
    return e;
}

/* Milliseconds a call may take: the per-call cap or what is left of the job. */
static int judge_call_ms(const struct judge *j)
{
    double left = (j->deadline - mono_now()) * 1000.0;
    if (left < 1)
        left = 1;
    return left < JUDGE_CALL_MS ? (int)left : JUDGE_CALL_MS;
}

/* A request for case (bench, idx) with every other field zero. */
static struct box_req judge_req(int op, int bench, int idx)
{
    struct box_req req;
    memset(&req, 0, sizeof req);
    req.op = op;
    req.bench = bench;
    req.case_index = idx;
    return req;
}

/* Every case resolved (plan.h), and one shared mapping per box big enough
 * for the inputs and outputs of any case. */
static int judge_regions(struct judge *j, struct kj_err *err)
{
    int rc = plan_build(j->spec, &j->dirs, &j->refdirs, j->gensrc != NULL ? &j->gendirs : NULL,
                        &j->plan, err);
    if (rc != KJ_OK)
        return rc;
    size_t max = j->plan->max_total;
    j->region_size = max;
    j->run_region = mmap(NULL, max, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    j->ref_region = mmap(NULL, max, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (j->run_region == MAP_FAILED || j->ref_region == MAP_FAILED)
        return KJ_FAIL(err, KJ_ENOMEM, "cannot map %zu bytes for results", max);
    return KJ_OK;
}

static int judge_start_boxes(struct judge *j, struct kj_err *err)
{
    struct box_cfg c;
    memset(&c, 0, sizeof c);
    c.spec = j->spec;
    c.plan = j->plan;
    c.gpu = j->job->gpu;
    c.region_size = j->region_size;
    c.dirs = &j->refdirs;
    c.gendirs = j->gensrc != NULL ? &j->gendirs : NULL;
    c.role_reference = 1;
    c.region = j->ref_region;
    c.unmap = j->run_region;
    c.unmap_size = j->region_size;
    int rc = box_start(&c, &j->ref, err);
    if (rc != KJ_OK)
        return rc;
    c.dirs = &j->dirs;
    c.role_reference = 0;
    c.region = j->run_region;
    c.unmap = j->ref_region;
    return box_start(&c, &j->run, err);
}

/* Wait for both boxes to have their contexts; j->dev from the submission's
 * box. A GPU other than the one the job was compiled for (job->arch) is the
 * judge's error. */
static int judge_box_info(struct judge *j, struct kj_err *err)
{
    struct box_device refdev;
    int rc = box_read_info(&j->run, &j->dev, JUDGE_START_MS, err);
    if (rc == KJ_OK)
        rc = box_read_info(&j->ref, &refdev, JUDGE_START_MS, err);
    if (rc == KJ_OK && j->job->arch != NULL && strcmp(j->dev.arch, j->job->arch) != 0)
        rc = KJ_FAIL(err, KJ_EINTERNAL, "GPU %d is %s, but the job was compiled for %s",
                     j->job->gpu, j->dev.arch, j->job->arch);
    return rc;
}

/* Compile the submission, the reference and the board's generate.cu for the
 * box's architecture, in compile boxes running at once. */
static int judge_compile(struct judge *j, struct kj_err *err)
{
    struct cbox_proc sp, rp, gp;
    struct kj_err rerr, gerr;
    int grc = KJ_OK;
    cJSON *ev = result_compiling_json(j->dev.arch);
    judge_event(j, KJ_EV_COMPILING, ev);
    cJSON_Delete(ev);
    int rc, rrc;
    kj_err_clear(&gerr);
    kj_err_clear(&rerr);
    if (j->job->compile_unboxed) { /* eval --compile-unboxed: local files, under a profiler */
        rc = compile_source(j->job->source, j->job->source_len, &j->dirs, j->dev.arch, &j->sub, err);
        rrc = compile_source(j->refsrc, j->reflen, &j->refdirs, j->dev.arch, &j->refc, &rerr);
        if (j->gensrc != NULL)
            grc = compile_source(j->gensrc, j->genlen, &j->gendirs, j->dev.arch, &j->genc, &gerr);
    } else {
        if ((rc = cbox_start(j->refsrc, j->reflen, &j->refdirs, j->dev.arch, &rp, err)) != KJ_OK)
            return rc;
        if (j->gensrc != NULL)
            grc = cbox_start(j->gensrc, j->genlen, &j->gendirs, j->dev.arch, &gp, &gerr);
        rc = cbox_start(j->job->source, j->job->source_len, &j->dirs, j->dev.arch, &sp, err);
        if (rc == KJ_OK)
            rc = cbox_finish(&sp, j->dev.arch, &j->sub, err);
        rrc = cbox_finish(&rp, j->dev.arch, &j->refc, &rerr);
        if (j->gensrc != NULL && grc == KJ_OK)
            grc = cbox_finish(&gp, j->dev.arch, &j->genc, &gerr);
    }
    if (rc != KJ_OK)
        return rc;
    /* Instruction classes from the machine code, while the job goes on
     * (judge_sass collects them); in test mode the PTX's stay, because
     * nvdisasm takes about a second and test mode is for fast answers. */
    struct kj_err serr;
    kj_err_clear(&serr);
    if (j->sub.ok && j->job->mode != KJ_MODE_TEST &&
        sass_start(&j->sub, &j->sass, &serr) != KJ_OK && serr.code != KJ_ENOTFOUND)
        kj_log(KJ_LOG_WARN, "judge", "instruction classes from the PTX only: %s", serr.msg);
    cJSON *cj = result_compile_json(&j->sub);
    judge_event(j, KJ_EV_COMPILED, cj);
    cJSON_Delete(cj);
    j->res->has_compile = 1; /* the report is j->sub's, taken at the end (judge_run) */
    if (!j->sub.ok) {
        char first[512];
        size_t n = strcspn(j->sub.log, "\n");
        kj_printable(first, sizeof first, j->sub.log, n);
        judge_verdict(j, KJ_V_COMPILE_ERROR, "%s", first[0] ? first : "compilation failed");
        return KJ_OK;
    }
    if (rrc != KJ_OK)
        return KJ_FAIL(err, rrc, "%s", rerr.msg);
    if (!j->refc.ok)
        return KJ_FAIL(err, KJ_EINTERNAL, "the reference of %s does not compile: %.200s",
                       j->spec->name, j->refc.log);
    if (grc != KJ_OK)
        return KJ_FAIL(err, grc, "%s", gerr.msg);
    if (j->gensrc != NULL && !j->genc.ok)
        return KJ_FAIL(err, KJ_EINTERNAL, "generate.cu of %s does not compile: %.200s",
                       j->spec->name, j->genc.log);
    return KJ_OK;
}

/* The function name of every launch line of d in the compile result cr. */
static void judge_lowered(const struct directives *d, const struct compile_result *cr,
                          char (*lowered)[256])
{
    for (int l = 0; l < d->nlaunch; l++)
        for (int k = 0; k < cr->nkernels; k++)
            if (strcmp(cr->kernels[k].name, d->launch[l].kernel) == 0)
                snprintf(lowered[l], 256, "%s", cr->kernels[k].lowered);
}

/* Map a box's failure onto a verdict (submission) or an error (judge). */
static int judge_box_failed(struct judge *j, int is_ref, const struct box_rep *rep,
                            const char *where, struct kj_err *err)
{
    if (is_ref || rep->status == BOX_INTERNAL || rep->status == BOX_OK)
        return KJ_FAIL(err, KJ_EINTERNAL, "%s box, %s: %s", is_ref ? "reference" : "submission",
                       where, rep->msg);
    if (rep->status == BOX_REJECTED)
        judge_verdict(j, KJ_V_REJECTED, "%s", rep->msg);
    else if (rep->status == BOX_TIMEOUT)
        judge_verdict(j, KJ_V_TIME_LIMIT, "%s: %s", where, rep->msg);
    else
        judge_verdict(j, KJ_V_RUNTIME_ERROR, "%s: %s", where, rep->msg);
    return KJ_OK;
}

/* One request to a box. A call that got no answer: the submission's box ran
 * out of time (verdict), or died; anything wrong with the reference box is
 * ours. */
static enum judge_step judge_call(struct judge *j, int is_ref, const struct box_req *req,
                                  const void *payload, struct box_rep *rep, const char *where,
                                  struct kj_err *err)
{
    struct box_proc *p = is_ref ? &j->ref : &j->run;
    memset(rep, 0, sizeof *rep);
    int rc = box_call(p, req, payload, rep, judge_call_ms(j), err);
    if (rc == KJ_OK && rep->status == BOX_OK)
        return STEP_PASS;
    if (rc == KJ_OK)
        return judge_box_failed(j, is_ref, rep, where, err) == KJ_OK ? STEP_VERDICT : STEP_ERROR;
    if (is_ref)
        return STEP_ERROR;
    box_kill(p);
    if (rc == KJ_ETIMEOUT)
        judge_verdict(j, KJ_V_TIME_LIMIT, "%s: %s", where, err->msg);
    else
        judge_verdict(j, KJ_V_RUNTIME_ERROR, "%s: the process running the kernel died", where);
    kj_err_clear(err);
    return STEP_VERDICT;
}

static int judge_load(struct judge *j, int is_ref, struct kj_err *err)
{
    const struct compile_result *cr = is_ref ? &j->refc : &j->sub;
    const struct directives *d = is_ref ? &j->refdirs : &j->dirs;
    struct box_load ld;
    struct box_req req = judge_req(BOX_OP_LOAD, 0, 0);
    struct box_rep rep;
    memset(&ld, 0, sizeof ld);
    ld.cubin_size = (uint32_t)cr->cubin_size;
    ld.nlaunch = d->nlaunch;
    judge_lowered(d, cr, ld.lowered);
    if (j->gensrc != NULL) {
        ld.gen_size = (uint32_t)j->genc.cubin_size;
        ld.gen_nlaunch = j->gendirs.nlaunch;
        judge_lowered(&j->gendirs, &j->genc, ld.gen_lowered);
    }
    size_t n = sizeof ld + cr->cubin_size + ld.gen_size;
    unsigned char *payload = malloc(n);
    if (payload == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory");
    memcpy(payload, &ld, sizeof ld);
    memcpy(payload + sizeof ld, cr->cubin, cr->cubin_size);
    if (ld.gen_size > 0)
        memcpy(payload + sizeof ld + cr->cubin_size, j->genc.cubin, ld.gen_size);
    req.payload = (uint32_t)n;
    enum judge_step r = judge_call(j, is_ref, &req, payload, &rep, "loading the module", err);
    free(payload);
    return r == STEP_ERROR ? KJ_EINTERNAL : KJ_OK;
}

/* Compare what the two boxes left in their regions for one call of case
 * cp. Fills chk with the status and, on a mismatch, the mismatch. */
static enum judge_step judge_compare(struct judge *j, const struct case_plan *cp,
                                     int check_inputs, struct result_check *chk,
                                     struct kj_err *err)
{
    const struct spec *s = j->spec;
    const unsigned char *ref = j->ref_region;
    const size_t *off = cp->off, *size = cp->size;
    for (int b = 0; b < s->nbuffers; b++) {
        const struct spec_buffer *sb = &s->buffers[b];
        size_t es = spec_dtype_size(sb->dtype);
        if (sb->role == SPEC_INPUT) {
            int64_t at = 0;
            if (!check_inputs ||
                compare_exact(ref + off[b], j->run_region + off[b], size[b], es, &at) == 0)
                continue;
            chk->status = RESULT_FAIL;
            snprintf(chk->message, sizeof chk->message, "input '%s' was modified by the "
                     "submission (first changed element at flat index %lld); inputs are "
                     "read-only", sb->name, (long long)at);
            return STEP_VERDICT;
        }
        struct compare_report rep;
        if (compare_buffers(sb->dtype, ref + off[b], j->run_region + off[b],
                            (int64_t)(size[b] / es), cp->dims[b], cp->ndim[b], cp->atol[b],
                            cp->rtol[b], &rep) != 0) {
            KJ_FAIL(err, KJ_EINTERNAL, "comparison of %s failed", sb->name);
            return STEP_ERROR;
        }
        if (rep.count == 0)
            continue;
        chk->status = RESULT_FAIL;
        compare_report_text(&rep, sb->name, chk->message, sizeof chk->message);
        chk->has_mismatch = 1;
        chk->mismatch = rep;
        snprintf(chk->mismatch_buffer, sizeof chk->mismatch_buffer, "%s", sb->name);
        return STEP_VERDICT;
    }
    chk->status = RESULT_PASS;
    return STEP_PASS;
}

/* The detailed comparison on the host: both boxes copy their buffers out. */
static enum judge_step judge_host_check(struct judge *j, int bench, int idx, int check_inputs,
                                        struct result_check *chk, struct kj_err *err)
{
    struct box_req req = judge_req(BOX_OP_COPY, bench, idx);
    struct box_rep rep;
    req.copy_inputs = check_inputs;
    if (judge_call(j, 1, &req, NULL, &rep, "reference copy", err) != STEP_PASS ||
        judge_call(j, 0, &req, NULL, &rep, "copy", err) != STEP_PASS)
        return judge_has_verdict(j) ? STEP_VERDICT : STEP_ERROR;
    return judge_compare(j, plan_case(j->plan, bench, idx), check_inputs, chk, err);
}

/* Verify on the GPU, in the reference box, through the submission box's
 * buffers mapped there: 1 = equal, 0 = the host must look (a difference, or
 * no GPU path), -1 = error. */
static int judge_gpu_check(struct judge *j, int bench, int idx, int check_inputs,
                           const struct box_rep *run, struct kj_err *err)
{
    struct box_verify v;
    struct box_req req = judge_req(BOX_OP_VERIFY, bench, idx);
    struct box_rep rep;
    if (!run->has_ipc) {
        kj_log(KJ_LOG_WARN, "judge", "no CUDA IPC on this host: verifying on the host");
        j->gpu_verify = 0;
        return 0;
    }
    memset(&v, 0, sizeof v);
    v.gen = run->gen;
    memcpy(v.ipc, run->ipc, sizeof v.ipc);
    req.copy_inputs = check_inputs;
    req.payload = sizeof v;
    int rc = box_call(&j->ref, &req, &v, &rep, judge_call_ms(j), err);
    if (rc != KJ_OK)
        return -1;
    if (rep.status != BOX_OK) {
        kj_log(KJ_LOG_WARN, "judge", "verifying on the GPU failed, using the host: %s", rep.msg);
        j->gpu_verify = 0;
        return 0;
    }
    return rep.count == 0;
}

/* Run case (bench, idx) once in both boxes with seed and verify the
 * submission's call into chk. STEP_VERDICT: a verdict, or chk says fail. */
static enum judge_step judge_one_call(struct judge *j, int bench, int idx, uint64_t seed, int op,
                                      int check_inputs, struct result_check *chk, double *ns,
                                      struct kj_err *err)
{
    struct box_req req = judge_req(BOX_OP_CASE, bench, idx);
    struct box_rep rep;
    req.seed = seed;
    req.no_copy = 1;
    req.poison_seed = j->poison++;
    enum judge_step r = judge_call(j, 1, &req, NULL, &rep, "reference", err);
    if (r != STEP_PASS)
        return r;
    req.op = op;
    req.poison_seed = j->poison++;
    r = judge_call(j, 0, &req, NULL, &rep, bench ? "benchmark" : "test", err);
    if (r != STEP_PASS) {
        chk->status = RESULT_ERROR;
        snprintf(chk->message, sizeof chk->message, "%s",
                 rep.msg[0] ? rep.msg : "the kernel did not finish");
        return r;
    }
    if (ns != NULL)
        *ns = rep.ns;
    if (j->gpu_verify) {
        int g = judge_gpu_check(j, bench, idx, check_inputs, &rep, err);
        if (g < 0)
            return STEP_ERROR;
        if (g == 1) {
            chk->status = RESULT_PASS;
            return STEP_PASS;
        }
    }
    return judge_host_check(j, bench, idx, check_inputs, chk, err);
}

static int judge_tests(struct judge *j, struct kj_err *err)
{
    const struct spec *s = j->spec;
    for (int i = 0; i < s->ntests; i++) {
        struct result_shape *e = judge_entry(j, 0, i);
        e->has_seed = 1;
        e->seed = s->tests[i].seed;
        enum judge_step r = judge_one_call(j, 0, i, s->tests[i].seed, BOX_OP_CASE, 1, &e->check,
                                           NULL, err);
        judge_shape_event(j, KJ_EV_TEST, e);
        if (r == STEP_ERROR)
            return KJ_EINTERNAL;
        if (r == STEP_VERDICT) {
            char shape[256];
            spec_case_label(s, &s->tests[i], shape, sizeof shape);
            judge_verdict(j, KJ_V_WRONG_ANSWER, "test %d (%s): %s", i, shape,
                          e->check.status == RESULT_FAIL || e->check.status == RESULT_ERROR ?
                          e->check.message : "wrong output");
            return KJ_OK;
        }
    }
    return KJ_OK;
}

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
    if (after) {
        y->has_clock_after = 1;
        y->sm_clock_mhz_after = rep.ns;
    } else {
        y->has_clock_before = 1;
        y->sm_clock_mhz_before = rep.ns;
    }
    gpumon_read_isolated(j->dev.pci, &rep.mon, 10000);
    if (!rep.mon.ok)
        return;
    if (y->driver[0] == '\0')
        snprintf(y->driver, sizeof y->driver, "%s", rep.mon.driver);
    if (after) {
        y->has_nvml_after = 1;
        y->nvml_after = rep.mon;
    } else {
        y->has_nvml_before = 1;
        y->nvml_before = rep.mon;
    }
}

#define JUDGE_GRAPH_BELOW_NS 20000.0 /* cross-check shapes shorter than this (TIMING.md 7) */
#define JUDGE_GRAPH_FLAG 0.05         /* flag a disagreement above 5 % */

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

static int judge_benchmarks(struct judge *j, struct kj_err *err)
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

static void judge_system(struct judge *j)
{
    const struct box_device *d = &j->dev;
    struct result_system *y = &j->res->sys;
    j->res->has_system = 1;
    snprintf(y->gpu, sizeof y->gpu, "%s", d->name);
    snprintf(y->arch, sizeof y->arch, "%s", d->arch);
    snprintf(y->pci, sizeof y->pci, "%s", d->pci);
    y->sm_count = d->sm_count;
    snprintf(y->cuda_driver_api, sizeof y->cuda_driver_api, "%d.%d", d->driver_version / 1000,
             d->driver_version % 1000 / 10);
    compile_nvrtc_version(y->nvrtc, sizeof y->nvrtc);
    snprintf(y->sandbox, sizeof y->sandbox, "%s", d->sandbox);
    y->sm_clock_max_mhz = d->clock_khz / 1000.0;
    y->mem_clock_max_mhz = d->mem_clock_khz / 1000.0;
    y->l2_bytes = (double)d->l2_bytes;
    y->l2_flush_bytes = (double)d->l2_bytes * 2;
    y->peak_bandwidth_gbs = 2.0 * d->mem_clock_khz * 1e3 * d->mem_bus_bits / 8.0 / 1e9;
}

/* Collect nvdisasm's classes (if it was started) into the submission's
 * compile report. */
static void judge_sass(struct judge *j)
{
    struct kj_err err;
    if (j->sass.pid <= 0)
        return;
    kj_err_clear(&err);
    if (sass_finish(&j->sass, &j->sub, &err) != KJ_OK)
        kj_log(KJ_LOG_WARN, "judge", "instruction classes from the PTX only: %s", err.msg);
}

static void judge_cleanup(struct judge *j)
{
    box_kill(&j->run);
    box_kill(&j->ref);
    if (j->run_region != NULL && j->run_region != MAP_FAILED)
        munmap(j->run_region, j->region_size);
    if (j->ref_region != NULL && j->ref_region != MAP_FAILED)
        munmap(j->ref_region, j->region_size);
    compile_result_free(&j->sub);
    compile_result_free(&j->refc);
    compile_result_free(&j->genc);
    free(j->refsrc);
    free(j->gensrc);
    free(j->samples);
    plan_free(j->plan);
}

/* Directives of the submission and the reference; a bad submission line is
 * a "rejected" verdict, a bad reference an error of ours. */
static int judge_directives(struct judge *j, struct kj_err *err)
{
    const struct spec *s = j->spec;
    const char *names[SPEC_MAX_VARS];
    char path[SPEC_MAX_PATH + 32];
    struct kj_err uerr;
    struct expr_vars vars;
    spec_expr_vars(s, names, NULL, &vars);
    snprintf(path, sizeof path, "%s/reference.cu", s->dir);
    int rc = kj_read_file(path, COMPILE_MAX_SOURCE, &j->refsrc, &j->reflen, err);
    if (rc == KJ_OK && (dir_parse(j->refsrc, j->reflen, &j->refdirs, err) != KJ_OK ||
                        dir_check_names(&j->refdirs, &vars, err) != KJ_OK))
        rc = KJ_EINTERNAL;
    if (rc != KJ_OK)
        return rc;
    if (s->has_generate) {
        snprintf(path, sizeof path, "%s/generate.cu", s->dir);
        struct kj_err gerr;
        kj_err_clear(&gerr);
        rc = kj_read_file(path, COMPILE_MAX_SOURCE, &j->gensrc, &j->genlen, err);
        if (rc == KJ_OK && (dir_parse(j->gensrc, j->genlen, &j->gendirs, &gerr) != KJ_OK ||
                            dir_check_names(&j->gendirs, &vars, &gerr) != KJ_OK))
            rc = KJ_FAIL(err, KJ_EINTERNAL, "generate.cu of %s: %s", s->name, gerr.msg);
        if (rc == KJ_OK && j->gendirs.workspace[0] != '\0')
            rc = KJ_FAIL(err, KJ_EINTERNAL, "generate.cu of %s: a workspace line is not "
                         "supported there", s->name);
        if (rc != KJ_OK)
            return rc;
    }
    kj_err_clear(&uerr);
    if (dir_parse(j->job->source, j->job->source_len, &j->dirs, &uerr) != KJ_OK ||
        dir_check_names(&j->dirs, &vars, &uerr) != KJ_OK)
        judge_verdict(j, KJ_V_REJECTED, "%s", uerr.msg);
    else if (j->dirs.leaderboard[0] != '\0' && strcmp(j->dirs.leaderboard, s->name) != 0)
        judge_verdict(j, KJ_V_REJECTED, "line %d: the source names leaderboard '%s' but is "
                      "judged on '%s'", j->dirs.leaderboard_line, j->dirs.leaderboard, s->name);
    return KJ_OK;
}

/* --dump: every test and then every benchmark shape once, untimed, with its
 * public seed; both boxes copy their buffers out and dump.c writes the
 * reference box's inputs and the submission box's outputs. */
static int judge_dump(struct judge *j, struct kj_err *err)
{
    const struct spec *s = j->spec;
    struct dump d;
    int failed = 0, rc = dump_open(&d, j->job->dump_dir, s, err);
    if (rc != KJ_OK)
        return rc;
    j->gpu_verify = 0; /* the host check copies both boxes' buffers, which the dump needs */
    for (int k = 0; k < s->ntests + s->nbenchmarks && rc == KJ_OK; k++) {
        int bench = k >= s->ntests, idx = bench ? k - s->ntests : k;
        const struct case_plan *cp = plan_case(j->plan, bench, idx);
        struct result_shape *e = judge_entry(j, bench, idx);
        enum judge_step r = judge_one_call(j, bench, idx, cp->seed, BOX_OP_CASE, 1, &e->check,
                                           NULL, err);
        judge_shape_event(j, bench ? KJ_EV_BENCHMARK : KJ_EV_TEST, e);
        if (r == STEP_ERROR || judge_has_verdict(j)) {
            rc = r == STEP_ERROR ? KJ_EINTERNAL : KJ_OK;
            break;
        }
        failed += r == STEP_VERDICT;
        rc = dump_case(&d, s, cp, cp->seed, j->ref_region, j->run_region,
                       r == STEP_PASS ? "pass" : "fail", err);
    }
    if (rc != KJ_OK || judge_has_verdict(j)) {
        dump_abort(&d);
        return rc;
    }
    if ((rc = dump_close(&d, err)) != KJ_OK)
        return rc;
    if (failed > 0)
        judge_verdict(j, KJ_V_WRONG_ANSWER, "%d of %d shapes differ from the reference (dumped "
                      "anyway)", failed, s->ntests + s->nbenchmarks);
    else
        judge_verdict(j, KJ_V_ACCEPTED, "%d shapes dumped to %s", s->ntests + s->nbenchmarks,
                      j->job->dump_dir);
    return KJ_OK;
}

static int judge_steps(struct judge *j, struct kj_err *err)
{
    int rc = judge_directives(j, err);
    if (rc != KJ_OK || judge_has_verdict(j))
        return rc;
    if ((rc = judge_regions(j, err)) != KJ_OK || (rc = judge_start_boxes(j, err)) != KJ_OK)
        return rc;
    /* The boxes have their regions; the compile boxes forked next must not:
     * for big shapes the two regions alone exceed a compile box's RLIMIT_AS. */
    if (madvise(j->run_region, j->region_size, MADV_DONTFORK) != 0 ||
        madvise(j->ref_region, j->region_size, MADV_DONTFORK) != 0)
        return KJ_FAIL(err, KJ_EINTERNAL, "madvise(MADV_DONTFORK): %s", strerror(errno));
    /* With the architecture known, NVRTC runs while the boxes start CUDA
     * (each takes a few hundred ms); otherwise the boxes say it first. */
    int early = j->job->arch != NULL;
    if (early) {
        snprintf(j->dev.arch, sizeof j->dev.arch, "%s", j->job->arch);
        rc = judge_compile(j, err);
    }
    if (rc != KJ_OK || (rc = judge_box_info(j, err)) != KJ_OK)
        return rc;
    judge_system(j);
    if ((!early && (rc = judge_compile(j, err)) != KJ_OK) || judge_has_verdict(j))
        return rc;
    if ((rc = judge_load(j, 1, err)) != KJ_OK || (rc = judge_load(j, 0, err)) != KJ_OK ||
        judge_has_verdict(j))
        return rc;
    if (j->job->dump_dir != NULL)
        return judge_dump(j, err);
    if ((rc = judge_tests(j, err)) != KJ_OK || judge_has_verdict(j))
        return rc;
    if (j->job->mode != KJ_MODE_TEST && (rc = judge_benchmarks(j, err)) != KJ_OK)
        return rc;
    if (!judge_has_verdict(j))
        judge_verdict(j, KJ_V_ACCEPTED, "%d tests passed%s", j->spec->ntests,
                      j->job->mode == KJ_MODE_TEST ? "" : "; benchmark shapes timed");
    return KJ_OK;
}

int judge_run(const struct judge_job *job, struct judge_result **result, struct kj_err *err)
{
    struct judge j;
    memset(&j, 0, sizeof j);
    *result = NULL;
    j.run.pid = j.ref.pid = -1;
    j.sass.pid = j.sass.fd = -1;
    j.run.fd_req = j.run.fd_rep = j.run.fd_info = -1;
    j.ref.fd_req = j.ref.fd_rep = j.ref.fd_info = -1;
    j.job = job;
    j.spec = job->spec;
    j.gpu_verify = getenv("KJUDGE_HOST_VERIFY") == NULL;
    double limit = job->mode == KJ_MODE_TEST ? job->spec->limit_test_s :
                   job->mode == KJ_MODE_BENCHMARK ? job->spec->limit_benchmark_s :
                   job->spec->limit_leaderboard_s;
    if (job->time_limit_s > 0)
        limit = job->time_limit_s;
    j.deadline = mono_now() + (limit > 0 ? limit : 180);
    if (getrandom(&j.poison, sizeof j.poison, 0) != sizeof j.poison)
        j.poison = (uint64_t)time(NULL) ^ (uint64_t)getpid() << 32;
    if ((j.res = result_new(j.spec, job->mode)) == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory for the result");
    int rc = judge_steps(&j, err);
    judge_sass(&j);
    if (j.res->has_system) {
        j.res->sys.has_verify = 1;
        j.res->sys.verify_gpu = j.gpu_verify;
    }
    if (j.res->has_compile) { /* the submission's report, with nvdisasm's classes */
        j.res->compile = j.sub;
        free(j.res->compile.cubin);
        j.res->compile.cubin = NULL;
        j.res->compile.cubin_size = 0;
        memset(&j.sub, 0, sizeof j.sub);
    }
    judge_cleanup(&j);
    if (rc != KJ_OK) {
        result_free(j.res);
        return rc < 0 ? rc : KJ_EINTERNAL;
    }
    *result = j.res;
    return KJ_OK;
}
