/*
 * fakegpu.c - a GPU stand-in for the API tests: the serve_ops that
 * build/kjudge-runner-fakegpu (runner/main.c built with KJ_RUNNER_FAKE_GPU)
 * judges with, so that the real runner process (its command line, signal
 * handling, HTTP client and supervisor loop) can be driven on a host
 * without a GPU: tests/api/test_runner_net.py and test_stop.py.
 *
 * The probe reports one device named $KJUDGE_FAKE_GPU_NAME (default
 * "NVIDIA H200", so type H200, arch sm_90a) and no sandbox. The judge posts
 * a "compiling" event, waits the seconds a "fakegpu:seconds=N" line of the
 * source names (default $KJUDGE_FAKE_JUDGE_S, else 0.5) and answers
 * compile_error with a log saying nothing was compiled: a verdict the
 * server accepts for any board and mode.
 *
 * Its "boxes" (judge.h's judge_leftover): while a job is judged, a file
 * box-XXXXXX stands for its boxes in $KJUDGE_FAKE_BOX_DIR (when set); the
 * teardown takes $KJUDGE_FAKE_TEARDOWN_S seconds (default 0, the time a
 * real run box's CUDA context takes to go) and then removes the file. So
 * a test sees when the teardown is over, and whether a stopped runner left
 * a box behind. Boxes started before their job (judge.h's judge_prestart)
 * are a file pre-XXXXXX, renamed box-XXXXXX when a job takes them; the
 * verdict's message then ends with "in boxes started before the job".
 *
 * A job whose submission was compiled ahead (judge_job.compiled, the
 * compile-ahead process of runner/ahead.h with real NVRTC) is answered
 * "fakegpu: judged a submission compiled ahead (N bytes of cubin)"; a
 * source with a "fakegpu:verdict=runtime_error" line gets runtime_error
 * instead; $KJUDGE_FAKE_HEALTH=fail makes the GPU health check fail.
 *
 * A source with a "fakegpu:verdict=accepted" line is accepted: every test
 * shape passes and, in a timed mode, every benchmark shape is "timed" at
 * the median its "fakegpu:median_ns=N" line names (default 100000) times
 * $KJUDGE_FAKE_TIME_SCALE (default 1), under timing protocol v2 of version
 * $KJUDGE_FAKE_TIMING_VERSION (default protocol.h's KJ_TIMING_VERSION): a
 * runner whose timing changed, for tests/api/test_rejudge.py. A line
 * "fakegpu:verdict_vN=runtime_error" gives runtime_error instead under
 * timing version N.
 *
 * A timed job with gaps (judge.h's judge_gap_fn) sleeps in eight rounds
 * and calls the gap between two; a job given judge_job.give_up_s shorter
 * than its seconds sleeps that long and is given up (KJ_ETIMEOUT), as
 * judge_run would.
 */
#include "box.h"
#include "compile.h"
#include "judge.h"
#include "protocol.h"
#include "result.h"
#include "serve.h"
#include "spec.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int fakegpu_probe(int gpu, const struct secret_list *wipe, struct box_device *dev,
                         struct kj_err *err)
{
    const char *name = getenv("KJUDGE_FAKE_GPU_NAME");
    (void)wipe;
    (void)err;
    memset(dev, 0, sizeof *dev);
    snprintf(dev->name, sizeof dev->name, "%s", name != NULL ? name : "NVIDIA H200");
    snprintf(dev->arch, sizeof dev->arch, "sm_90a");
    snprintf(dev->pci, sizeof dev->pci, "fake:%d", gpu);
    dev->gpu_count = 1;
    return KJ_OK;
}

/* Seconds the job takes: the source's "fakegpu:seconds=N", else the environment's. */
static double fakegpu_seconds(const struct judge_job *job)
{
    const char *m = strstr(job->source, "fakegpu:seconds="), *env = getenv("KJUDGE_FAKE_JUDGE_S");
    if (m != NULL)
        return atof(m + 16);
    return env != NULL ? atof(env) : 0.5;
}

static void fakegpu_sleep(double s)
{
    for (double left = s; left > 0; left -= 0.05) {
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* The fake's judge_leftover: the file that stands for a job's boxes. */
struct fakegpu_left {
    struct judge_leftover base; /* first */
    char path[PATH_MAX];        /* "" when $KJUDGE_FAKE_BOX_DIR is not set */
};

static void fakegpu_teardown(struct judge_leftover *left)
{
    struct fakegpu_left *f = (struct fakegpu_left *)left;
    const char *env = getenv("KJUDGE_FAKE_TEARDOWN_S");
    fakegpu_sleep(env != NULL ? atof(env) : 0);
    if (f->path[0] != '\0')
        unlink(f->path);
    free(f);
}

/* "Start the boxes": the file of $KJUDGE_FAKE_BOX_DIR, named prefix-XXXXXX.
 * NULL: no memory. */
static struct fakegpu_left *fakegpu_boxes(const char *prefix)
{
    struct fakegpu_left *f = calloc(1, sizeof *f);
    const char *dir = getenv("KJUDGE_FAKE_BOX_DIR");
    if (f == NULL)
        return NULL;
    f->base.finish = fakegpu_teardown;
    if (dir != NULL) {
        snprintf(f->path, sizeof f->path, "%s/%s-XXXXXX", dir, prefix);
        int fd = mkstemp(f->path);
        if (fd >= 0)
            close(fd);
        else
            f->path[0] = '\0';
    }
    return f;
}

/* The fake's judge_prestart: the boxes' file, named pre-XXXXXX. */
struct fakegpu_pre {
    struct judge_prestart base; /* first */
    struct fakegpu_left *boxes; /* owned */
};

static struct judge_leftover *fakegpu_pre_drop(struct judge_prestart *self)
{
    struct fakegpu_pre *p = (struct fakegpu_pre *)self;
    struct judge_leftover *left = p->boxes != NULL ? &p->boxes->base : NULL;
    free(p);
    return left;
}

/* The pair's file: pre-, pypre- or hlpre- (Helion), pyheld- or hlheld- while held. */
static int fakegpu_prestart(const struct spec *spec, int gpu, const struct secret_list *wipe,
                            const struct pyenv *py, unsigned flags, struct judge_prestart **out,
                            struct kj_err *err)
{
    int helion = py != NULL && (flags & JUDGE_PRE_HELION), held = (flags & JUDGE_PRE_HELD) != 0;
    const char *name = py == NULL ? "pre" : held ? (helion ? "hlheld" : "pyheld") : helion ? "hlpre" : "pypre";
    (void)gpu;
    (void)wipe;
    *out = NULL;
    if (held && py == NULL)
        return KJ_FAIL(err, KJ_EINVAL, "only a Python pair starts held");
    struct fakegpu_pre *p = calloc(1, sizeof *p);
    if (p == NULL || (p->boxes = fakegpu_boxes(name)) == NULL) {
        free(p);
        return KJ_FAIL(err, KJ_ENOMEM, "fakegpu: out of memory");
    }
    p->base.spec = spec;
    p->base.python = py != NULL;
    p->base.helion = helion;
    p->base.held = held;
    p->base.drop = fakegpu_pre_drop;
    *out = &p->base;
    return KJ_OK;
}

/* Rename the file of f (prefix-XXXXXX) to to-XXXXXX. */
static void fakegpu_rename(struct fakegpu_left *f, const char *to)
{
    char *slash = strrchr(f->path, '/');
    if (f->path[0] != '\0' && slash != NULL) {
        char renamed[PATH_MAX];
        const char *tail = strchr(slash, '-'); /* pre-XXXXXX, pypre-XXXXXX, ... */
        snprintf(renamed, sizeof renamed, "%.*s/%s-%s", (int)(slash - f->path), f->path, to,
                 tail != NULL ? tail + 1 : slash + 1);
        if (rename(f->path, renamed) == 0)
            snprintf(f->path, sizeof f->path, "%s", renamed);
    }
}

/* A held pair made whole: pyheld- becomes pypre-, hlheld- hlpre-;
 * $KJUDGE_FAKE_RELEASE=fail: the held box is gone. */
static int fakegpu_release(struct judge_prestart *self, struct kj_err *err)
{
    struct fakegpu_pre *p = (struct fakegpu_pre *)self;
    const char *env = getenv("KJUDGE_FAKE_RELEASE");
    if (!self->held)
        return KJ_OK;
    if (env != NULL && strcmp(env, "fail") == 0)
        return KJ_FAIL(err, KJ_EIO, "fakegpu: the held box is gone");
    fakegpu_rename(p->boxes, self->helion ? "hlpre" : "pypre");
    self->held = 0;
    return KJ_OK;
}

/* The boxes a job judges in: the pair started before it (its file renamed
 * box-XXXXXX), or new ones. Sets *pre to whether they were started before. */
static struct fakegpu_left *fakegpu_job_boxes(const struct judge_job *job, int *pre)
{
    struct judge_prestart *p = job->prestart;
    *pre = 0;
    if (p == NULL)
        return fakegpu_boxes("box");
    if (!judge_prestart_fits(p, job->spec, job->mode, job->lang,
                             judge_names_helion(job->source, job->source_len))) { /* as judge_run: torn down */
        judge_leftover_finish(p->drop(p));
        return fakegpu_boxes("box");
    }
    struct fakegpu_left *f = ((struct fakegpu_pre *)p)->boxes;
    fakegpu_rename(f, "box");
    free(p);
    *pre = 1;
    return f;
}

/* The timing version this fake runner reports. */
static int fakegpu_timing_version(void)
{
    const char *env = getenv("KJUDGE_FAKE_TIMING_VERSION");
    return env != NULL && atoi(env) > 0 ? atoi(env) : KJ_TIMING_VERSION;
}

/* r accepted as a judge would write it for job's board: every test shape
 * passed, every benchmark shape (timed modes) at the source's median. */
static void fakegpu_accept(const struct judge_job *job, struct judge_result *r)
{
    const struct spec *s = job->spec;
    const char *m = strstr(job->source, "fakegpu:median_ns=");
    const char *env = getenv("KJUDGE_FAKE_TIME_SCALE");
    double med = (m != NULL ? atof(m + 18) : 100000.0) * (env != NULL ? atof(env) : 1.0), sum = 0;
    r->compile.ok = 1;
    r->has_system = 1;
    snprintf(r->sys.gpu, sizeof r->sys.gpu, "%s", getenv("KJUDGE_FAKE_GPU_NAME") != NULL
             ? getenv("KJUDGE_FAKE_GPU_NAME") : "NVIDIA H200");
    snprintf(r->sys.arch, sizeof r->sys.arch, "sm_90a");
    r->ntests = s->ntests;
    for (int i = 0; i < s->ntests; i++) {
        struct result_shape *e = &r->tests[i];
        e->reached = 1;
        e->index = i;
        memcpy(e->val, s->tests[i].val, sizeof e->val);
        e->has_seed = 1;
        e->seed = s->tests[i].seed;
        e->check.status = RESULT_PASS;
        e->failed_call = -1;
    }
    if (kj_mode_timed(job->mode)) {
        r->nbenches = s->nbenchmarks;
        for (int i = 0; i < s->nbenchmarks; i++) {
            struct result_shape *e = &r->benches[i];
            e->reached = 1;
            e->index = i;
            memcpy(e->val, s->benchmarks[i].val, sizeof e->val);
            e->check.status = RESULT_PASS;
            e->failed_call = -1;
            e->timed = 1;
            e->t.st = (struct stats_summary){med, med, 0, med, med, med, med, med, med, 100};
            e->t.stop = STATS_STOP_CI;
            e->t.verified_on_gpu = 1;
            sum += log(med);
        }
        r->timing.protocol = 2;
        r->timing.version = fakegpu_timing_version();
        r->has_score = 1;
        r->score_ns = exp(sum / s->nbenchmarks) < med ? med : exp(sum / s->nbenchmarks);
    }
    result_set_verdict(r, KJ_V_ACCEPTED, "fakegpu: accepted, as asked");
}

/* The verdict a "fakegpu:verdict_vN=runtime_error" line asks for under
 * this runner's timing version: 1 when it asks for runtime_error. */
static int fakegpu_fails_now(const struct judge_job *job)
{
    char want[64];
    snprintf(want, sizeof want, "fakegpu:verdict_v%d=runtime_error", fakegpu_timing_version());
    return strstr(job->source, want) != NULL;
}

static int fakegpu_judge(const struct judge_job *job, struct judge_result **out,
                         struct kj_err *err)
{
    double s = fakegpu_seconds(job);
    cJSON *empty = cJSON_CreateObject();
    struct judge_result *r = result_new(job->spec, job->mode);
    int pre;
    struct fakegpu_left *boxes = fakegpu_job_boxes(job, &pre);
    if (job->progress != NULL && job->compiled == NULL) /* else posted when it was compiled */
        job->progress(job->progress_ctx, KJ_EV_COMPILING, empty);
    cJSON_Delete(empty);
    if (job->give_up_s > 0 && s > job->give_up_s) { /* as judge_run: given up, no result */
        fakegpu_sleep(job->give_up_s);
        judge_leftover_finish(boxes != NULL ? &boxes->base : NULL);
        result_free(r);
        return KJ_FAIL(err, KJ_ETIMEOUT, "no verdict within %.1f s: given up", job->give_up_s);
    }
    if (job->gap != NULL) { /* a timed job: eight rounds, a gap between two */
        for (int round = 0; round < 8; round++) {
            if (round > 0)
                job->gap(job->gap_ctx, job->secrets);
            fakegpu_sleep(s / 8);
        }
    } else {
        fakegpu_sleep(s);
    }
    if (job->leftover != NULL) /* the caller tears the boxes down (judge.h) */
        *job->leftover = boxes != NULL ? &boxes->base : NULL;
    else
        judge_leftover_finish(boxes != NULL ? &boxes->base : NULL);
    if (r == NULL || (r->compile.log = strdup("fakegpu: nothing was compiled")) == NULL) {
        result_free(r);
        return KJ_FAIL(err, KJ_ENOMEM, "fakegpu: out of memory");
    }
    r->has_compile = 1;
    snprintf(r->compile.arch, sizeof r->compile.arch, "sm_90a");
    if (job->compiled != NULL && job->compiled->ok) { /* taken, as judge_run takes it */
        char msg[128];
        snprintf(msg, sizeof msg, "fakegpu: judged a submission compiled ahead (%zu bytes of "
                 "cubin)", job->compiled->cubin_size);
        compile_result_free(job->compiled);
        result_set_verdict(r, KJ_V_COMPILE_ERROR, msg);
    } else if (strstr(job->source, "fakegpu:verdict=runtime_error") != NULL ||
               fakegpu_fails_now(job))
        result_set_verdict(r, KJ_V_RUNTIME_ERROR, "fakegpu: an illegal address, as asked");
    else if (strstr(job->source, "fakegpu:verdict=accepted") != NULL && job->spec != NULL)
        fakegpu_accept(job, r);
    else
        result_set_verdict(r, KJ_V_COMPILE_ERROR, pre ? "fakegpu: nothing was compiled in boxes "
                                                        "started before the job"
                                                      : "fakegpu: nothing was compiled");
    if (job->compiled != NULL) /* judge_run takes it whatever happens */
        compile_result_free(job->compiled);
    *out = r;
    return KJ_OK;
}

static int fakegpu_health(int gpu, const struct secret_list *wipe, struct kj_err *err)
{
    (void)gpu;
    (void)wipe;
    if (getenv("KJUDGE_FAKE_HEALTH") != NULL && strcmp(getenv("KJUDGE_FAKE_HEALTH"), "fail") == 0)
        return KJ_FAIL(err, KJ_ECUDA, "fakegpu: the known-answer kernel gave another answer");
    return KJ_OK;
}

const struct serve_ops fakegpu_ops = {fakegpu_probe, fakegpu_judge, fakegpu_health,
                                      fakegpu_prestart, fakegpu_release};
