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
 * way -> score = geometric mean of the per-shape medians -> the boxes are
 * killed; reaping them (the driver destroys their CUDA contexts then) is
 * left to the caller when it asks (judge.h's judge_leftover), so that
 * serve posts the result first.
 * The judge never trusts the submission box: it compares in this process.
 *
 * This file runs the steps; the boxes' start, module load and restart are
 * judge_box.c's, one checked call is judge_check.c's, the benchmark shapes
 * are judge_time.c's (judge_int.h).
 */
#include "judge_int.h"
#include "sub_lang.h"
#include "cbox.h"
#include "cslot.h"
#include "dump.h"
#include "expr.h"
#include "kj_file.h"
#include "mono.h"
#include "tool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Profile and sanitize modes' default wall limit for the whole job, when
 * neither $KJUDGE_TOOL_LIMIT_S nor the board (time_limits_s.tools) sets
 * one: twice the slowest run of bench/bench_tool_limit.py over the boards'
 * examples on the H200 (conv2d's template under profile, 67.6 s; table in
 * docs/operator-tools.md). Boards whose runs are much shorter set their own. */
#define JUDGE_TOOL_LIMIT_S 140

/* Every case resolved (plan.h), and one shared mapping per box big enough
 * for the inputs and outputs of any case. */
static int judge_regions(struct judge *j, struct kj_err *err)
{
    int rc = plan_build(j->spec, &j->dirs, &j->refdirs, j->gensrc != NULL ? &j->gendirs : NULL,
                        &j->plan, err);
    if (rc != KJ_OK)
        return rc;
    struct judge_prestart *pre = j->pre;
    j->pre = NULL;
    if (pre != NULL && judge_adopt(j, pre)) /* else dropped: another kind, board or size */
        return KJ_OK; /* its regions and boxes, started for this board and language */
    size_t max = j->plan->max_total;
    j->region_size = max;
    if ((j->tool || j->python) && (rc = judge_tool_region(j, err)) != KJ_OK)
        return rc;
    if (!j->tool && !j->python)
        j->run_region = mmap(NULL, max, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    j->ref_region = mmap(NULL, max, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (j->run_region == MAP_FAILED || j->ref_region == MAP_FAILED)
        return KJ_FAIL(err, KJ_ENOMEM, "cannot map %zu bytes for results", max);
    return KJ_OK;
}

/* One compile of a job: its source and directives, where its result and
 * error go, and its compile box while it runs. */
struct judge_cjob {
    const char *src;
    size_t len;
    const struct directives *d;
    struct compile_result *out;
    struct kj_err *err;
    int rc, started;
    struct cbox_proc p;
};

/* Run the n compiles of c in compile boxes, at most k at once, in turns
 * from c[0]: once the submission's (c[0] when it is there) has failed to
 * compile, the turns after are not run (their results stay empty; its
 * verdict needs none). */
static void judge_compile_turns(struct judge *j, int k, struct judge_cjob *c, int n)
{
    for (int i = 0; i < n; i += k) {
        int end = i + k < n ? i + k : n;
        if (i > 0 && c[0].out == &j->sub && c[0].rc == KJ_OK && !c[0].out->ok)
            break;
        for (int m = i; m < end; m++) {
            c[m].rc = cbox_start(c[m].src, c[m].len, c[m].d, j->dev.arch, j->job->secrets, &c[m].p,
                                 c[m].err);
            c[m].started = c[m].rc == KJ_OK;
            if (j->job->give_up_s > 0 && c[m].p.deadline > j->deadline)
                c[m].p.deadline = j->deadline; /* a job given up ends its compiles too */
        }
        for (int m = i; m < end; m++)
            if (c[m].started)
                c[m].rc = cbox_finish(&c[m].p, j->dev.arch, c[m].out, c[m].err);
    }
}

/* The "compiled" event: the submission's compile report. */
static void judge_compiled_event(struct judge *j)
{
    cJSON *cj = result_compile_json(&j->sub);
    judge_event(j, KJ_EV_COMPILED, cj);
    cJSON_Delete(cj);
}

/* The compile_error verdict of j->sub, with the log's first line. */
static void judge_compile_verdict(struct judge *j)
{
    char first[512];
    size_t n = strcspn(j->sub.log != NULL ? j->sub.log : "", "\n");
    kj_printable(first, sizeof first, j->sub.log != NULL ? j->sub.log : "", n);
    judge_verdict(j, KJ_V_COMPILE_ERROR, "%s", first[0] ? first : "compilation failed");
}

/* Compile the submission, the reference and the board's generate.cu for the
 * box's architecture, in compile boxes running at once as far as this
 * host's compile slots allow (cslot.h). A submission compiled before its
 * turn (judge_job.compiled) for this architecture is used as it is. */
static int judge_compile(struct judge *j, struct kj_err *err)
{
    struct kj_err rerr, gerr;
    int grc = KJ_OK;
    struct compile_result *ahead = j->job->compiled;
    int pre = ahead != NULL && strcmp(ahead->arch, j->dev.arch) == 0;
    if (j->python && !pre) { /* nothing to compile: the run box imports the source */
        memset(&j->sub, 0, sizeof j->sub);
        snprintf(j->sub.arch, sizeof j->sub.arch, "%s", j->dev.arch);
        j->sub.log = strdup("Python: imported in the run box (PYBOX)");
        j->sub.cubin = malloc(j->job->source_len + 1);
        if (j->sub.log == NULL || j->sub.cubin == NULL)
            return KJ_FAIL(err, KJ_ENOMEM, "out of memory for the source");
        memcpy(j->sub.cubin, j->job->source, j->job->source_len);
        j->sub.cubin_size = j->job->source_len;
        j->sub.ok = 1;
        cJSON *ev = result_compiling_json(j->dev.arch);
        judge_event(j, KJ_EV_COMPILING, ev);
        cJSON_Delete(ev);
        judge_compiled_event(j);
    }
    if (pre) { /* compiled before its turn, its events posted then (judge.h) */
        j->sub = *ahead;
        memset(ahead, 0, sizeof *ahead);
    } else if (!j->python) {
        cJSON *ev = result_compiling_json(j->dev.arch);
        judge_event(j, KJ_EV_COMPILING, ev);
        cJSON_Delete(ev);
    }
    int rc = KJ_OK, rrc = KJ_OK;
    kj_err_clear(&gerr);
    kj_err_clear(&rerr);
    if (j->job->compile_unboxed) { /* eval --compile-unboxed: local files, under a profiler */
        if (!j->python)
            rc = compile_source(j->job->source, j->job->source_len, &j->dirs, j->dev.arch, &j->sub, err);
        rrc = compile_source(j->refsrc, j->reflen, &j->refdirs, j->dev.arch, &j->refc, &rerr);
        if (j->gensrc != NULL)
            grc = compile_source(j->gensrc, j->genlen, &j->gendirs, j->dev.arch, &j->genc, &gerr);
    } else {
        /* The submission first (unless compiled already), then the board's
         * files (unless a job before compiled them: judge_boards). */
        struct judge_cjob c[3];
        int n = 0, kept = judge_boards_get(j->job->boards, j);
        if (!pre && !j->python)
            c[n++] = (struct judge_cjob){j->job->source, j->job->source_len, &j->dirs, &j->sub,
                                         err, KJ_OK, 0, {-1, -1, 0}};
        if (!kept)
            c[n++] = (struct judge_cjob){j->refsrc, j->reflen, &j->refdirs, &j->refc, &rerr,
                                         KJ_OK, 0, {-1, -1, 0}};
        if (!kept && j->gensrc != NULL)
            c[n++] = (struct judge_cjob){j->gensrc, j->genlen, &j->gendirs, &j->genc, &gerr,
                                         KJ_OK, 0, {-1, -1, 0}};
        struct cslot slots;
        if (n > 0 && (rc = cslot_take(&slots, NULL, cslot_count(), n, j->deadline, err)) != KJ_OK)
            return rc;
        if (n > 0 && slots.waited_s >= 1)
            kj_log(KJ_LOG_INFO, "judge", "waited %.1f s for a compile slot (this host's are "
                   "all in use)", slots.waited_s);
        if (n > 0) {
            judge_compile_turns(j, slots.n, c, n);
            cslot_give(&slots);
        }
        for (int i = 0; i < n; i++) {
            if (c[i].out == &j->sub)
                rc = c[i].rc;
            else if (c[i].out == &j->refc)
                rrc = c[i].rc;
            else
                grc = c[i].rc;
        }
        if (!kept && rrc == KJ_OK && grc == KJ_OK)
            judge_boards_put(j->job->boards, j);
    }
    if (rc != KJ_OK)
        return rc;
    /* Instruction classes from the machine code, while the job goes on
     * (judge_sass collects them); in test mode the PTX's stay, because
     * nvdisasm takes about a second and test mode is for fast answers. */
    struct kj_err serr;
    kj_err_clear(&serr);
    if (j->sub.ok && kj_mode_timed(j->job->mode) && !j->python &&
        sass_start(&j->sub, &j->sass, &serr) != KJ_OK && serr.code != KJ_ENOTFOUND)
        kj_log(KJ_LOG_WARN, "judge", "instruction classes from the PTX only: %s", serr.msg);
    if (!pre && !j->python)
        judge_compiled_event(j);
    j->res->has_compile = 1; /* the report is j->sub's, taken at the end (judge_run) */
    if (!j->sub.ok) {
        judge_compile_verdict(j);
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

/* Sanitize mode: where compute-sanitizer's log stands once test i's call
 * has returned, so that its findings name their test (sanitize.h). */
static void judge_sanitize_mark(struct judge *j, int i)
{
    char path[4200];
    struct stat st;
    if (j->job->mode != KJ_MODE_SANITIZE || j->tool_dir[0] == '\0' || i != j->san_marks)
        return;
    snprintf(path, sizeof path, "%s/sanitize.log", j->tool_dir);
    j->san_end[i] = stat(path, &st) == 0 ? (size_t)st.st_size : 0;
    j->san_marks++;
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
        judge_sanitize_mark(j, i);
        judge_shape_event(j, KJ_EV_TEST, e);
        if (r == STEP_ERROR)
            return KJ_EINTERNAL;
        if (r == STEP_VERDICT) {
            judge_case_verdict(j, 0, i, -1, e);
            return KJ_OK;
        }
    }
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
    if (j->python && j->job->pyenv != NULL)
        snprintf(y->python, sizeof y->python, "%s", j->job->pyenv->versions);
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

/* Kill both boxes at once; reap them here, or hand them to the caller in
 * *job->leftover when it asked (judge.h). */
static void judge_boxes_stop(struct judge *j)
{
    struct judge_leftover *left = judge_boxes_kill(&j->run, &j->ref);
    if (j->job->leftover != NULL)
        *j->job->leftover = left;
    else
        judge_leftover_finish(left); /* not asked: now */
}

static void judge_cleanup(struct judge *j)
{
    box_kill(&j->next); /* held, never needed (the job ended first) */
    judge_boxes_stop(j);
    if (j->run_region != NULL && j->run_region != MAP_FAILED)
        munmap(j->run_region, j->region_size);
    if (j->run_region_fd >= 0)
        close(j->run_region_fd);
    if (j->tool_dir[0] != '\0' && getenv("KJUDGE_TOOL_KEEP") != NULL)
        kj_log(KJ_LOG_INFO, "judge", "the tool's output stays in %s", j->tool_dir);
    else if (j->tool_dir[0] != '\0' && (j->res == NULL || j->res->artifact[0] == '\0'))
        tool_outdir_remove(j->tool_dir); /* a report stays for the supervisor to upload */
    if (j->ref_region != NULL && j->ref_region != MAP_FAILED)
        munmap(j->ref_region, j->region_size);
    compile_result_free(&j->sub);
    compile_result_free(&j->refc);
    compile_result_free(&j->genc);
    free(j->refsrc);
    free(j->gensrc);
    free(j->samples);
    free(j->empties);
    plan_free(j->plan);
}

/* Profile and sanitize modes' wall limit on board sp: $KJUDGE_TOOL_LIMIT_S
 * (seconds) when the runner's operator sets it, for every board (a slow or
 * a test host, the tool flood of bench/bench_queue.py), else the board's
 * time_limits_s.tools, else JUDGE_TOOL_LIMIT_S. */
static double judge_tool_limit(const struct spec *sp)
{
    const char *v = getenv("KJUDGE_TOOL_LIMIT_S");
    double s = v != NULL ? atof(v) : 0;
    if (s > 0 && s <= SPEC_MAX_TOOL_S)
        return s;
    return sp->limit_tools_s > 0 ? sp->limit_tools_s : JUDGE_TOOL_LIMIT_S;
}

/* Profile and sanitize modes compile with line information, so that the
 * tools can name source lines. */
static void judge_lineinfo(struct directives *d)
{
    for (int i = 0; i < d->nnvrtc; i++)
        if (strcmp(d->nvrtc[i], "-lineinfo") == 0)
            return;
    if (d->nnvrtc < DIR_MAX_NVRTC) {
        snprintf(d->nvrtc[d->nnvrtc], DIR_MAX_OPT, "-lineinfo");
        d->nvrtc_line[d->nnvrtc++] = 0;
    }
}

/* The submission's directives (*d) as the judge takes them for board s:
 * lines it can parse, names the board knows, and no other board named.
 * KJ_OK, or KJ_EINVAL with err saying which line and why (the job's
 * "rejected" verdict). */
static int judge_source_dirs(const struct spec *s, const char *src, size_t len,
                             struct directives *d, struct kj_err *err)
{
    const char *names[SPEC_MAX_VARS];
    struct expr_vars vars;
    spec_expr_vars(s, names, NULL, &vars);
    if (dir_parse(src, len, d, err) != KJ_OK || dir_check_names(d, &vars, err) != KJ_OK)
        return KJ_EINVAL;
    if (d->leaderboard[0] != '\0' && strcmp(d->leaderboard, s->name) != 0)
        return KJ_FAIL(err, KJ_EINVAL, "line %d: the source names leaderboard '%s' but is "
                       "judged on '%s'", d->leaderboard_line, d->leaderboard, s->name);
    return KJ_OK;
}

/* Directives of the submission and the reference; a bad submission line is
 * a "rejected" verdict, a bad reference an error of ours. */
static int judge_directives(struct judge *j, struct kj_err *err)
{
    struct kj_err uerr;
    int rc = judge_board_dirs(j->spec, &j->refdirs, &j->refsrc, &j->reflen, &j->gendirs,
                              &j->gensrc, &j->genlen, err);
    if (rc != KJ_OK)
        return rc;
    kj_err_clear(&uerr);
    if (j->python) { /* no launch lines: custom_kernel over the board's Python interface */
        memset(&j->dirs, 0, sizeof j->dirs);
        if (!j->spec->python.present)
            judge_verdict(j, KJ_V_REJECTED, "leaderboard %s takes no Python submissions (its "
                          "leaderboard.json has no \"python\" block)", j->spec->name);
        else if (j->tool)
            judge_verdict(j, KJ_V_REJECTED, "profile and sanitize modes take CUDA and PTX files; "
                          "a Python file runs in test, benchmark and leaderboard modes");
        else if (j->job->pyenv == NULL)
            return KJ_FAIL(err, KJ_EINTERNAL, "this runner has no Python environment "
                           "(kjudge-runner --python, or KJUDGE_PYTHON)");
        return KJ_OK;
    }
    if (judge_source_dirs(j->spec, j->job->source, j->job->source_len, &j->dirs, &uerr) != KJ_OK)
        judge_verdict(j, KJ_V_REJECTED, "%s", uerr.msg);
    else if (j->tool)
        judge_lineinfo(&j->dirs);
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
    struct result_steps *st = &j->res->steps;
    int rc = judge_directives(j, err);
    if (rc != KJ_OK || judge_has_verdict(j))
        return rc;
    if ((rc = judge_regions(j, err)) != KJ_OK)
        return rc;
    double t = mono_now(), t1;
    if (!j->adopted && (rc = judge_start_boxes(j, err)) != KJ_OK)
        return rc;
    judge_ahead_start(j);
    /* The boxes have their regions; the compile boxes forked next must not. */
    if ((rc = judge_regions_dontfork(j->run_region, j->ref_region, j->region_size, err)) != KJ_OK)
        return rc;
    /* With the architecture known, NVRTC runs while the boxes start CUDA
     * (each takes a few hundred ms); otherwise the boxes say it first. */
    int early = j->job->arch != NULL;
    st->boxes = mono_now() - t;
    if (early) {
        snprintf(j->dev.arch, sizeof j->dev.arch, "%s", j->job->arch);
        t1 = mono_now();
        rc = judge_compile(j, err);
        st->compile = mono_now() - t1;
    }
    t1 = mono_now();
    if (rc != KJ_OK || (rc = judge_box_info(j, err)) != KJ_OK)
        return rc;
    st->boxes += mono_now() - t1;
    judge_system(j);
    t1 = mono_now();
    if ((!early && (rc = judge_compile(j, err)) != KJ_OK) || judge_has_verdict(j))
        return rc;
    st->compile += mono_now() - t1;
    t1 = mono_now();
    if ((rc = judge_load(j, 1, err)) != KJ_OK || (rc = judge_load(j, 0, err)) != KJ_OK ||
        judge_has_verdict(j))
        return rc;
    st->load = mono_now() - t1;
    if (j->job->dump_dir != NULL)
        return judge_dump(j, err);
    t1 = mono_now();
    if ((rc = judge_tests(j, err)) != KJ_OK || judge_has_verdict(j))
        return rc;
    st->tests = mono_now() - t1;
    t1 = mono_now();
    if (kj_mode_timed(j->job->mode) && (rc = judge_benchmarks(j, err)) != KJ_OK)
        return rc;
    st->benchmarks = mono_now() - t1;
    t1 = mono_now();
    if (j->job->mode == KJ_MODE_PROFILE && (rc = judge_tool_shapes(j, err)) != KJ_OK)
        return rc;
    st->tools = mono_now() - t1;
    if (!judge_has_verdict(j))
        judge_verdict(j, KJ_V_ACCEPTED, "%d tests passed%s", j->spec->ntests,
                      kj_mode_timed(j->job->mode) ? "; benchmark shapes timed" :
                      j->job->mode == KJ_MODE_PROFILE ? "; benchmark shapes profiled" :
                      j->job->mode == KJ_MODE_SANITIZE ? " under compute-sanitizer" : "");
    return KJ_OK;
}

/* Whether a job with judge_job.give_up_s ran into it: its deadline
 * passed, and what it came to (no verdict, a judge error, a time limit, a
 * compile cut short) may be the cut's doing, not the submission's. */
static int judge_given_up(const struct judge *j, int rc, double t0)
{
    const struct judge_job *job = j->job;
    if (job->give_up_s <= 0 || mono_now() < t0 + job->give_up_s)
        return 0;
    if (rc != KJ_OK || !j->res->has_verdict)
        return 1;
    return j->res->verdict == KJ_V_TIME_LIMIT || j->res->verdict == KJ_V_COMPILE_ERROR;
}

/* The result's last fields: the verification path beside the system
 * block, and the submission's compile report (with nvdisasm's classes),
 * its cubin dropped. */
static void judge_result_finish(struct judge *j)
{
    if (j->res->has_system) {
        j->res->sys.has_verify = 1;
        j->res->sys.verify_gpu = j->gpu_verify;
    }
    if (j->res->has_compile) {
        j->res->compile = j->sub;
        free(j->res->compile.cubin);
        j->res->compile.cubin = NULL;
        j->res->compile.cubin_size = 0;
        memset(&j->sub, 0, sizeof j->sub);
    }
}

int judge_ahead_dirs(const struct spec *spec, enum kj_mode mode, const char *source,
                     size_t len, struct directives *d)
{
    struct kj_err err;
    kj_err_clear(&err);
    return (mode == KJ_MODE_TEST || kj_mode_timed(mode)) &&
           judge_source_dirs(spec, source, len, d, &err) == KJ_OK;
}

int judge_compile_failed(const struct judge_job *job, const struct box_device *dev,
                         struct judge_result **result, struct kj_err *err)
{
    struct judge j;
    memset(&j, 0, sizeof j);
    *result = NULL;
    j.job = job;
    j.spec = job->spec;
    j.dev = *dev;
    j.gpu_verify = getenv("KJUDGE_HOST_VERIFY") == NULL;
    j.sub = *job->compiled;
    memset(job->compiled, 0, sizeof *job->compiled);
    if ((j.res = result_new(j.spec, job->mode)) == NULL) {
        compile_result_free(&j.sub);
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory for the result");
    }
    judge_compiled_event(&j);
    j.res->has_compile = 1;
    judge_compile_verdict(&j);
    judge_system(&j);
    judge_result_finish(&j);
    *result = j.res;
    return KJ_OK;
}

int judge_run(const struct judge_job *job, struct judge_result **result, struct kj_err *err)
{
    struct judge j;
    memset(&j, 0, sizeof j);
    *result = NULL;
    if (job->leftover != NULL)
        *job->leftover = NULL;
    int pre = judge_tool_prepass(job, result, err);
    if (pre != 0) {
        /* judge_run's promises about what it takes (judge.h) hold here too */
        if (job->prestart != NULL)
            judge_leftover_finish(job->prestart->drop(job->prestart));
        if (job->compiled != NULL)
            compile_result_free(job->compiled);
        return pre > 0 ? KJ_OK : pre;
    }
    j.run.pid = j.ref.pid = j.next.pid = -1;
    j.next.fd_req = j.next.fd_rep = j.next.fd_info = -1;
    j.sass.pid = j.sass.fd = -1;
    j.run.fd_req = j.run.fd_rep = j.run.fd_info = -1;
    j.ref.fd_req = j.ref.fd_rep = j.ref.fd_info = -1;
    j.job = job;
    j.spec = job->spec;
    j.pre = job->prestart; /* ours now (judge.h): used or torn down */
    j.gpu_verify = getenv("KJUDGE_HOST_VERIFY") == NULL;
    j.run_region_fd = -1;
    j.tool = job->mode == KJ_MODE_PROFILE || job->mode == KJ_MODE_SANITIZE;
    j.python = job->lang == SUB_LANG_PYTHON;
    double limit = job->mode == KJ_MODE_TEST ? job->spec->limit_test_s :
                   job->mode == KJ_MODE_BENCHMARK ? job->spec->limit_benchmark_s :
                   job->mode == KJ_MODE_LEADERBOARD ? job->spec->limit_leaderboard_s :
                   judge_tool_limit(job->spec);
    if (job->time_limit_s > 0)
        limit = job->time_limit_s;
    double t0 = mono_now();
    j.deadline = t0 + (limit > 0 ? limit : 180);
    if (job->give_up_s > 0 && t0 + job->give_up_s < j.deadline)
        j.deadline = t0 + job->give_up_s;
    if (getrandom(&j.poison, sizeof j.poison, 0) != sizeof j.poison)
        j.poison = (uint64_t)time(NULL) ^ (uint64_t)getpid() << 32;
    if ((j.res = result_new(j.spec, job->mode)) == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory for the result");
    int rc = judge_steps(&j, err);
    j.res->steps.has = 1;
    j.res->steps.total = mono_now() - t0;
    if (judge_given_up(&j, rc, t0))
        rc = KJ_FAIL(err, KJ_ETIMEOUT, "no verdict within %.1f s: given up", job->give_up_s);
    if (j.tool)
        judge_tool_finish(&j);
    judge_sass(&j);
    judge_result_finish(&j);
    if (j.pre != NULL) /* judge_steps ended before the regions */
        judge_leftover_finish(j.pre->drop(j.pre));
    if (job->compiled != NULL) /* not used: taken all the same (judge.h) */
        compile_result_free(job->compiled);
    judge_cleanup(&j);
    if (rc != KJ_OK) {
        result_free(j.res);
        return rc < 0 ? rc : KJ_EINTERNAL;
    }
    *result = j.res;
    return KJ_OK;
}
