/*
 * judge_tool.c - the steps of profile and sanitize modes inside judge_run
 * (judge_int.h): the submission box under the mode's tool (tool.h), the
 * profiled calls, and the tool's output read into the result (profile.h,
 * sanitize.h). The reference box is never under a tool.
 */
#include "judge_int.h"
#include "fdio.h"
#include "kj_file.h"
#include "mono.h"
#include "profile.h"
#include "sanitize.h"
#include "tool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define JUDGE_TOOL_LAUNCHES 64       /* ncu --launch-count: at most this many launches */
#define JUDGE_TOOL_IMPORT_S 120      /* ncu --import of the report */
#define JUDGE_TOOL_LOG_MAX (8u << 20)

int judge_memfd_region(size_t size, int *fd, unsigned char **map, struct kj_err *err)
{
    *fd = memfd_create("region", MFD_CLOEXEC);
    if (*fd < 0 || ftruncate(*fd, (off_t)size) != 0)
        return KJ_FAIL(err, KJ_ENOMEM, "cannot make the region: %s", strerror(errno));
    *map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
    if (*map == MAP_FAILED)
        return KJ_FAIL(err, KJ_ENOMEM, "cannot map %zu bytes for results", size);
    return KJ_OK;
}

int judge_tool_region(struct judge *j, struct kj_err *err)
{
    return judge_memfd_region(j->region_size, &j->run_region_fd, &j->run_region, err);
}

int judge_names_helion(const char *src, size_t len)
{
    return src != NULL && memmem(src, len, "helion", 6) != NULL;
}

void judge_python_tool(struct tool_cfg *t, const struct pyenv *py)
{
    t->kind = TOOL_PYTHON;
    t->python_lib = py->lib;
    t->python_home = py->home;
    t->python_site = py->site[0] ? py->site : NULL;
}

int judge_tool_start_into(struct judge *j, const struct box_cfg *c, struct box_proc *out,
                          struct kj_err *err)
{
    struct tool_cfg t;
    memset(&t, 0, sizeof t);
    t.hold = c->hold;
    /* Helion's import is seconds: only where the source names it */
    t.no_helion = j->python && !judge_names_helion(j->job->source, j->job->source_len);
    if (j->python) { /* a Python box: no tool, no output folder */
        judge_python_tool(&t, j->job->pyenv);
    } else {
        int rc = tool_outdir(j->tool_dir, sizeof j->tool_dir, err);
        if (rc != KJ_OK)
            return rc;
        t.kind = j->job->mode == KJ_MODE_PROFILE ? TOOL_NCU : TOOL_SANITIZER;
    }
    t.sanitizer = j->job->sanitizer;
    t.outdir = j->tool_dir; /* "" for a Python box, whose launcher logs nowhere */
    t.spec_dir = j->spec->dir;
    t.source = j->job->source;
    t.source_len = j->job->source_len;
    t.region_fd = j->run_region_fd;
    t.region_size = j->region_size;
    t.gpu = c->gpu;
    t.launch_count = JUDGE_TOOL_LAUNCHES;
    t.wipe = c->wipe;
    return tool_start(&t, out, err);
}

int judge_tool_start(struct judge *j, const struct box_cfg *c, struct kj_err *err)
{
    return judge_tool_start_into(j, c, &j->run, err);
}

int judge_tool_shapes(struct judge *j, struct kj_err *err)
{
    const struct spec *s = j->spec;
    int only = j->job->profile_shape - 1;
    if (only >= s->nbenchmarks)
        only = -1;
    int done = 0;
    j->profile_marks = 1;
    for (int i = 0; i < s->nbenchmarks; i++) {
        if (only >= 0 && i != only)
            continue;
        /* A turn for a test-mode job between two shapes (share.h's
         * SHARE_TURNS): the tool is idle then, waiting for the next call. */
        if (done++ > 0 && j->job->gap != NULL)
            judge_gap(j);
        const struct case_plan *cp = plan_case(j->plan, 1, i);
        struct result_shape *e = judge_entry(j, 1, i);
        e->has_seed = 1;
        e->seed = cp->seed;
        enum judge_step r = judge_one_call(j, 1, i, cp->seed, BOX_OP_CASE, 1, &e->check, NULL,
                                           err);
        judge_shape_event(j, KJ_EV_BENCHMARK, e);
        if (r == STEP_ERROR) {
            j->profile_marks = 0;
            return KJ_EINTERNAL;
        }
        if (r == STEP_VERDICT) {
            judge_case_verdict(j, 1, i, -1, e);
            break;
        }
    }
    j->profile_marks = 0;
    return KJ_OK;
}

/* A note in the tool's object: why there is less than expected. */
static void judge_tool_note(struct judge *j, const char *fmt, const char *arg)
{
    char msg[512];
    if (j->res->tool == NULL)
        j->res->tool = cJSON_CreateObject();
    if (j->res->tool == NULL)
        return;
    snprintf(msg, sizeof msg, fmt, arg);
    cJSON_DeleteItemFromObject(j->res->tool, "note");
    cJSON_AddStringToObject(j->res->tool, "note", msg);
}

/* The last line of the tool's log (why it failed), printable. */
static void judge_tool_log_tail(const char *dir, char *out, size_t outsz)
{
    char path[4200], *text = NULL;
    size_t n = 0;
    struct kj_err e;
    out[0] = '\0';
    snprintf(path, sizeof path, "%s/tool.log", dir);
    if (kj_read_file(path, JUDGE_TOOL_LOG_MAX, &text, &n, &e) != KJ_OK)
        return;
    while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r'))
        n--;
    size_t start = n;
    while (start > 0 && text[start - 1] != '\n')
        start--;
    kj_printable(out, outsz, text + start, n - start);
    free(text);
}

static void judge_tool_profile(struct judge *j)
{
    char rep[3800], tool[4096], tail[300];
    struct kj_err e;
    char *csv = NULL;
    size_t n = 0;
    kj_err_clear(&e);
    snprintf(rep, sizeof rep, "%.3700s/profile.ncu-rep", j->tool_dir);
    if (access(rep, R_OK) != 0) {
        judge_tool_log_tail(j->tool_dir, tail, sizeof tail);
        judge_tool_note(j, "Nsight Compute wrote no report: %s", tail[0] ? tail : "(no log)");
        return;
    }
    snprintf(j->res->artifact, sizeof j->res->artifact, "%s", rep);
    if (tool_find(TOOL_NCU, tool, sizeof tool, &e) != KJ_OK ||
        profile_import(tool, rep, mono_now() + JUDGE_TOOL_IMPORT_S, &csv, &n, &e) != KJ_OK) {
        judge_tool_note(j, "the report could not be read: %s", e.msg);
        return;
    }
    struct profile_ctx pc;
    memset(&pc, 0, sizeof pc);
    pc.nlaunch = j->dirs.nlaunch;
    pc.peak_gbs = j->res->has_system ? j->res->sys.peak_bandwidth_gbs : 0;
    pc.only = j->job->profile_shape - 1;
    pc.spec = j->spec;
    cJSON *o = profile_summary(csv, n, &pc, &e);
    free(csv);
    if (o == NULL) {
        judge_tool_note(j, "the report could not be read: %s", e.msg);
        return;
    }
    cJSON_Delete(j->res->tool);
    j->res->tool = o;
}

static void judge_tool_sanitize(struct judge *j)
{
    char path[4200], tail[300];
    char *text = NULL;
    size_t n = 0;
    struct kj_err e;
    kj_err_clear(&e);
    snprintf(path, sizeof path, "%s/sanitize.log", j->tool_dir);
    if (kj_read_file(path, JUDGE_TOOL_LOG_MAX, &text, &n, &e) != KJ_OK) {
        judge_tool_log_tail(j->tool_dir, tail, sizeof tail);
        judge_tool_note(j, "compute-sanitizer wrote no log: %s", tail[0] ? tail : "(no log)");
        return;
    }
    const char *names[DIR_MAX_LAUNCHES];
    for (int l = 0; l < j->dirs.nlaunch; l++)
        names[l] = j->dirs.launch[l].kernel;
    struct sanitize_marks marks = {j->san_end, j->san_marks};
    cJSON *o = sanitize_report(text, n, kj_sanitizer_name(j->job->sanitizer), names,
                               j->dirs.nlaunch, SANITIZE_MAX_FINDINGS, &marks);
    free(text);
    if (o == NULL) {
        judge_tool_note(j, "%s", "out of memory reading the log");
        return;
    }
    cJSON_Delete(j->res->tool);
    j->res->tool = o;
}

/* Sanitize mode's verdict, reported only now: a wrong answer left by a
 * kernel that memcheck stopped at an invalid access is that access's
 * runtime error (the outputs compared are what the stopped kernel left). */
static void judge_tool_sanitize_verdict(struct judge *j)
{
    char what[400], msg[RESULT_MAX_MESSAGE];
    if (j->res->has_verdict && j->res->verdict == KJ_V_WRONG_ANSWER &&
        sanitize_stopped(j->res->tool, what, sizeof what)) {
        snprintf(msg, sizeof msg, "memcheck stopped the kernel at an invalid access: %s; so %.1500s",
                 what, j->res->message);
        j->res->has_verdict = 0;
        result_set_verdict(j->res, KJ_V_RUNTIME_ERROR, msg);
    }
    if (j->res->has_verdict)
        judge_verdict_event(j);
}

void judge_tool_finish(struct judge *j)
{
    struct kj_err e;
    kj_err_clear(&e);
    if (j->tool_dir[0] == '\0') {
        if (j->job->mode == KJ_MODE_SANITIZE)
            judge_tool_sanitize_verdict(j);
        return;
    }
    if (j->run.pid > 0) {
        struct box_req q;
        memset(&q, 0, sizeof q);
        q.op = BOX_OP_QUIT;
        (void)!fdio_write_quiet(j->run.fd_req, &q, sizeof q);
        double left = j->deadline - mono_now();
        if (tool_wait(&j->run, mono_now() + (left > 10 ? left : 10), &e) != KJ_OK)
            judge_tool_note(j, "%s", e.msg);
    }
    if (j->job->mode == KJ_MODE_PROFILE) {
        judge_tool_profile(j);
    } else {
        judge_tool_sanitize(j);
        judge_tool_sanitize_verdict(j);
    }
}

/* The prepass's progress, held back: replayed only when its verdict is the
 * job's (judge_tool_prepass). */
struct judge_held {
    enum kj_event ev[64];
    cJSON *data[64];
    int n;
};

static void judge_hold(void *ctx, enum kj_event event, const cJSON *data)
{
    struct judge_held *h = ctx;
    if (h->n < (int)(sizeof h->ev / sizeof h->ev[0]) &&
        (h->data[h->n] = cJSON_Duplicate(data, 1)) != NULL)
        h->ev[h->n++] = event;
}

int judge_tool_prepass(const struct judge_job *job, struct judge_result **result,
                       struct kj_err *err)
{
    struct judge_held held;
    struct judge_job pj = *job;
    struct judge_result *r = NULL;
    int found = 0;
    *result = NULL;
    if (job->mode != KJ_MODE_SANITIZE || job->sanitizer == KJ_SAN_MEMCHECK)
        return 0;
    memset(&held, 0, sizeof held);
    pj.mode = KJ_MODE_TEST;
    pj.progress = judge_hold;
    pj.progress_ctx = &held;
    pj.leftover = NULL;   /* torn down before the tool's boxes start */
    pj.prestart = NULL;   /* kept for the tool's run, which drops it */
    pj.gap = NULL;
    pj.compiled = NULL;   /* the tool's run compiles with line information */
    int rc = judge_run(&pj, &r, err);
    if (rc != KJ_OK)
        return rc < 0 ? rc : KJ_EINTERNAL;
    if (r->has_verdict && r->verdict == KJ_V_RUNTIME_ERROR) {
        char msg[RESULT_MAX_MESSAGE];
        snprintf(msg, sizeof msg, "%.1700s (found by the tests run without %s first: after a "
                 "fault it would hang until its time limit)", r->message,
                 kj_sanitizer_name(job->sanitizer));
        snprintf(r->message, sizeof r->message, "%s", msg);
        r->mode = KJ_MODE_SANITIZE;
        if ((r->tool = cJSON_CreateObject()) != NULL &&
            cJSON_AddStringToObject(r->tool, "tool", kj_sanitizer_name(job->sanitizer)) != NULL)
            cJSON_AddStringToObject(r->tool, "note", "not run: the kernel faults without the "
                                    "tool; memcheck names the access");
        for (int i = 0; i < held.n; i++) {
            cJSON *d = held.data[i];
            if (held.ev[i] == KJ_EV_VERDICT) {
                cJSON_Delete(d);
                d = held.data[i] = result_verdict_json(r);
            }
            if (d != NULL && job->progress != NULL)
                job->progress(job->progress_ctx, held.ev[i], d);
        }
        *result = r;
        found = 1;
    } else {
        result_free(r);
    }
    for (int i = 0; i < held.n; i++)
        cJSON_Delete(held.data[i]);
    return found;
}
