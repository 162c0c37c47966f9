/*
 * judge_box.c - the judge's two boxes (judge_int.h): their configuration,
 * their start, the wait for their contexts, the module load, protocol v2's
 * fresh submission box between rounds (and the gap between them, where
 * the caller may judge a short job: judge.h's judge_gap_fn), and the kill.
 * judge.c starts and loads them once per job; judge_time.c restarts the
 * submission's.
 *
 * A pair may also be started before its job (judge.h's judge_prestart):
 * the serve loop starts one for the board of the job it is judging, so
 * that the next job of that board finds its CUDA contexts made. Such
 * boxes are configured as the job's boxes would be, except for what only
 * the job knows: the plan (its launch dimensions come from the
 * submission's directives) and the submission's directives, which
 * judge_load sends with the module (box.h's LOAD). The regions are sized
 * by the board alone (plan.c's layout depends on the buffers, not the
 * directives); judge_adopt checks that the job's plan fits them. A
 * Python pair's run box is started as a Python job's is (judge_tool.c),
 * with its region behind a memfd and no source: its interpreter has
 * imported the libraries when the job comes, and LOAD brings the file.
 */
#include "judge_int.h"
#include "expr.h"
#include "kj_file.h"
#include "mono.h"
#include "sub_lang.h"
#include "tool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define JUDGE_START_MS 120000   /* a box must have its context within this */

/* What every box of a pair is given, the job's or one started before it
 * (plan and dirs stay NULL): the reference's box (ref) maps ref_region
 * and gives up run_region, the submission's the other way round. */
static void judge_pair_cfg(struct box_cfg *c, int ref, const struct spec *spec,
                           const struct directives *gendirs, const struct secret_list *wipe,
                           int gpu, unsigned char *run_region, unsigned char *ref_region,
                           size_t region_size)
{
    memset(c, 0, sizeof *c);
    c->spec = spec;
    c->wipe = wipe;
    c->gpu = gpu;
    c->region_size = c->unmap_size = region_size;
    c->gendirs = gendirs;
    c->role_reference = ref;
    c->region = ref ? ref_region : run_region;
    c->unmap = ref ? run_region : ref_region;
}

/* The configuration of the job's reference box (ref) or submission box. */
static void judge_box_cfg(const struct judge *j, int ref, struct box_cfg *c)
{
    judge_pair_cfg(c, ref, j->spec, j->gensrc != NULL ? &j->gendirs : NULL, j->job->secrets,
                   j->job->gpu, j->run_region, j->ref_region, j->region_size);
    c->plan = j->plan;
    c->dirs = ref ? &j->refdirs : &j->dirs;
}

int judge_board_dirs(const struct spec *s, struct directives *refdirs, char **refsrc,
                     size_t *reflen, struct directives *gendirs, char **gensrc, size_t *genlen,
                     struct kj_err *err)
{
    const char *names[SPEC_MAX_VARS];
    char path[SPEC_MAX_PATH + 32];
    struct expr_vars vars;
    struct kj_err gerr;
    *refsrc = *gensrc = NULL;
    spec_expr_vars(s, names, NULL, &vars);
    snprintf(path, sizeof path, "%s/reference.cu", s->dir);
    int rc = kj_read_file(path, COMPILE_MAX_SOURCE, refsrc, reflen, err);
    if (rc == KJ_OK && (dir_parse(*refsrc, *reflen, refdirs, err) != KJ_OK ||
                        dir_check_names(refdirs, &vars, err) != KJ_OK))
        rc = KJ_EINTERNAL;
    if (rc != KJ_OK || !s->has_generate)
        return rc;
    snprintf(path, sizeof path, "%s/generate.cu", s->dir);
    kj_err_clear(&gerr);
    rc = kj_read_file(path, COMPILE_MAX_SOURCE, gensrc, genlen, err);
    if (rc == KJ_OK && (dir_parse(*gensrc, *genlen, gendirs, &gerr) != KJ_OK ||
                        dir_check_names(gendirs, &vars, &gerr) != KJ_OK))
        rc = KJ_FAIL(err, KJ_EINTERNAL, "generate.cu of %s: %s", s->name, gerr.msg);
    if (rc == KJ_OK && gendirs->workspace[0] != '\0')
        rc = KJ_FAIL(err, KJ_EINTERNAL, "generate.cu of %s: a workspace line is not "
                     "supported there", s->name);
    return rc;
}

void judge_leftover_finish(struct judge_leftover *left)
{
    if (left != NULL)
        left->finish(left);
}

/* judge_leftover of the GPU: the two boxes to reap. */
struct judge_boxes_left {
    struct judge_leftover base; /* first: finish gets &base */
    struct box_proc run, ref;
};

static void judge_boxes_finish(struct judge_leftover *left)
{
    struct judge_boxes_left *b = (struct judge_boxes_left *)left;
    box_reap(&b->run);
    box_reap(&b->ref);
    free(b);
}

struct judge_leftover *judge_boxes_kill(struct box_proc *run, struct box_proc *ref)
{
    struct judge_boxes_left *b = NULL;
    box_signal(run);
    box_signal(ref);
    if ((run->pid > 0 || ref->pid > 0) && (b = malloc(sizeof *b)) != NULL) {
        b->base.finish = judge_boxes_finish;
        b->run = *run;
        b->ref = *ref;
        run->pid = ref->pid = -1;
        return &b->base;
    }
    box_reap(run); /* nothing left, or no memory for it: now */
    box_reap(ref);
    return NULL;
}

int judge_regions_dontfork(unsigned char *run, unsigned char *ref, size_t size,
                           struct kj_err *err)
{
    if (madvise(run, size, MADV_DONTFORK) != 0 || madvise(ref, size, MADV_DONTFORK) != 0)
        return KJ_FAIL(err, KJ_EINTERNAL, "madvise(MADV_DONTFORK): %s", strerror(errno));
    return KJ_OK;
}

/* ------------------------------------------------------------ prestart */

/* A pair started before its job (judge.h). */
struct judge_pre {
    struct judge_prestart base;       /* first: drop gets &base */
    struct directives gendirs;        /* what the boxes were given at fork */
    int has_gen;
    size_t region_size;
    unsigned char *run_region, *ref_region; /* owned mappings of region_size, or NULL */
    int run_region_fd;                /* a Python pair: the memfd behind run_region; else -1 */
    struct box_proc run, ref;
    const struct secret_list *wipe;   /* borrowed: the reference box of a held pair gets it */
    int gpu;
};

static void judge_pre_unmap(struct judge_pre *p)
{
    if (p->run_region != NULL && p->run_region != MAP_FAILED)
        munmap(p->run_region, p->region_size);
    if (p->ref_region != NULL && p->ref_region != MAP_FAILED)
        munmap(p->ref_region, p->region_size);
    if (p->run_region_fd >= 0)
        close(p->run_region_fd);
}

static struct judge_leftover *judge_pre_drop(struct judge_prestart *self)
{
    struct judge_pre *p = (struct judge_pre *)self;
    struct judge_leftover *left = judge_boxes_kill(&p->run, &p->ref);
    judge_pre_unmap(p);
    free(p);
    return left;
}

int judge_prestart_fits(const struct judge_prestart *p, const struct spec *spec,
                        enum kj_mode mode, int lang, int helion)
{
    return p != NULL && !p->held && p->spec == spec && p->python == (lang == SUB_LANG_PYTHON) &&
           (!p->python || !helion || p->helion) &&
           (mode == KJ_MODE_TEST || mode == KJ_MODE_BENCHMARK || mode == KJ_MODE_LEADERBOARD);
}

/* A Python pair's run box (judge_tool_start's, before its job): its
 * region a memfd, a placeholder for the source it is not given. */
static int judge_pre_python(struct judge_pre *p, const struct pyenv *py, const struct spec *spec,
                            const struct secret_list *wipe, int gpu, struct kj_err *err)
{
    static const char none[] = "# a Python box started before its job: LOAD brings the file\n";
    struct tool_cfg t;
    int rc = judge_memfd_region(p->region_size, &p->run_region_fd, &p->run_region, err);
    if (rc != KJ_OK)
        return rc;
    memset(&t, 0, sizeof t);
    judge_python_tool(&t, py);
    t.no_helion = !p->base.helion;
    t.hold = p->base.held; /* imports now, CUDA at judge_prestart_release */
    t.outdir = "";
    t.spec_dir = spec->dir;
    t.source = none;
    t.source_len = sizeof none - 1;
    t.region_fd = p->run_region_fd;
    t.region_size = p->region_size;
    t.gpu = gpu;
    t.wipe = wipe;
    return tool_start(&t, &p->run, err);
}

/* JUDGE_PRESTART_MAX_BYTES, or $KJUDGE_PRESTART_MAX_MB when it is a number. */
static unsigned long long judge_prestart_limit(void)
{
    const char *env = getenv("KJUDGE_PRESTART_MAX_MB");
    char *end = NULL;
    if (env == NULL || env[0] == '\0')
        return JUDGE_PRESTART_MAX_BYTES;
    unsigned long long mb = strtoull(env, &end, 10);
    return *end == '\0' && mb < (1ull << 40) ? mb << 20 : JUDGE_PRESTART_MAX_BYTES;
}

int judge_prestart_start(const struct spec *spec, int gpu, const struct secret_list *wipe,
                         const struct pyenv *py, unsigned flags, struct judge_prestart **out,
                         struct kj_err *err)
{
    struct judge_pre *p = calloc(1, sizeof *p);
    struct directives refdirs;
    struct plan *plan = NULL;
    char *refsrc = NULL, *gensrc = NULL;
    size_t reflen = 0, genlen = 0;
    struct box_cfg c;
    *out = NULL;
    if (p == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory");
    if ((flags & JUDGE_PRE_HELD) && py == NULL) {
        free(p);
        return KJ_FAIL(err, KJ_EINVAL, "only a Python pair starts held");
    }
    p->base.spec = spec;
    p->base.python = py != NULL;
    p->base.helion = py != NULL && (flags & JUDGE_PRE_HELION);
    p->base.held = (flags & JUDGE_PRE_HELD) != 0;
    p->wipe = wipe;
    p->gpu = gpu;
    p->base.drop = judge_pre_drop;
    p->run_region_fd = -1;
    p->run.pid = p->ref.pid = -1;
    p->run.fd_req = p->run.fd_rep = p->run.fd_info = -1;
    p->ref.fd_req = p->ref.fd_rep = p->ref.fd_info = -1;
    int rc = judge_board_dirs(spec, &refdirs, &refsrc, &reflen, &p->gendirs, &gensrc, &genlen, err);
    p->has_gen = gensrc != NULL;
    free(refsrc);
    free(gensrc);
    if (rc == KJ_OK)
        rc = plan_build(spec, NULL, &refdirs, p->has_gen ? &p->gendirs : NULL, &plan, err);
    if (rc == KJ_OK) {
        p->region_size = plan->max_total;
        plan_free(plan);
        if (2ull * p->region_size > judge_prestart_limit()) {
            rc = KJ_FAIL(err, KJ_ELIMIT, "%s: two regions of %.0f MB would stay pinned while "
                         "idle, more than %llu MB (KJUDGE_PRESTART_MAX_MB)", spec->name,
                         p->region_size / 1e6, judge_prestart_limit() >> 20);
            free(p);
            return rc;
        }
        if (py == NULL)
            p->run_region = mmap(NULL, p->region_size, PROT_READ | PROT_WRITE,
                                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        p->ref_region = mmap(NULL, p->region_size, PROT_READ | PROT_WRITE,
                             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (p->run_region == MAP_FAILED || p->ref_region == MAP_FAILED)
            rc = KJ_FAIL(err, KJ_ENOMEM, "cannot map %zu bytes for results", p->region_size);
    }
    /* The Python box first: its import takes longest (the reference's
     * context is made meanwhile). */
    if (rc == KJ_OK && py != NULL)
        rc = judge_pre_python(p, py, spec, wipe, gpu, err);
    for (int ref = 1; rc == KJ_OK && ref >= 0; ref--) {
        if (!ref && py != NULL)
            break;
        if (ref && p->base.held) /* no context beside the timed job: at the release */
            continue;
        judge_pair_cfg(&c, ref, spec, p->has_gen ? &p->gendirs : NULL, wipe, gpu,
                       p->run_region, p->ref_region, p->region_size);
        rc = box_start(&c, ref ? &p->ref : &p->run, err);
    }
    if (rc == KJ_OK)
        rc = judge_regions_dontfork(p->run_region, p->ref_region, p->region_size, err);
    if (rc != KJ_OK) {
        judge_leftover_finish(judge_pre_drop(&p->base));
        return rc;
    }
    *out = &p->base;
    return KJ_OK;
}

int judge_prestart_release(struct judge_prestart *self, struct kj_err *err)
{
    struct judge_pre *p = (struct judge_pre *)self;
    struct box_req go = judge_req(BOX_OP_START, 0, 0);
    struct box_cfg c;
    if (!self->held)
        return KJ_OK;
    int rc = box_send(&p->run, &go, NULL, err);
    /* The reference's region goes to its fork only, as judge_restart_run does
     * for a new submission box. */
    if (rc == KJ_OK && madvise(p->ref_region, p->region_size, MADV_DOFORK) != 0)
        rc = KJ_FAIL(err, KJ_EINTERNAL, "madvise(MADV_DOFORK): %s", strerror(errno));
    if (rc == KJ_OK) {
        judge_pair_cfg(&c, 1, self->spec, p->has_gen ? &p->gendirs : NULL, p->wipe, p->gpu,
                       p->run_region, p->ref_region, p->region_size);
        rc = box_start(&c, &p->ref, err);
        if (madvise(p->ref_region, p->region_size, MADV_DONTFORK) != 0 && rc == KJ_OK)
            rc = KJ_FAIL(err, KJ_EINTERNAL, "madvise(MADV_DONTFORK): %s", strerror(errno));
    }
    if (rc == KJ_OK)
        self->held = 0;
    return rc;
}

int judge_adopt(struct judge *j, struct judge_prestart *pre)
{
    struct judge_pre *p = (struct judge_pre *)pre;
    int same_gen = p->has_gen == (j->gensrc != NULL) &&
                   (!p->has_gen || memcmp(&p->gendirs, &j->gendirs, sizeof p->gendirs) == 0);
    if (!judge_prestart_fits(pre, j->spec, j->job->mode, j->job->lang,
                             judge_names_helion(j->job->source, j->job->source_len)) ||
        j->job->dump_dir != NULL || !same_gen || j->plan->max_total > p->region_size) {
        judge_leftover_finish(judge_pre_drop(pre));
        return 0;
    }
    j->region_size = p->region_size;
    j->run_region = p->run_region;
    j->ref_region = p->ref_region;
    j->run_region_fd = p->run_region_fd; /* a Python pair's, else -1 */
    j->run = p->run;
    j->ref = p->ref;
    j->adopted = 1;
    j->ref_bare = 1;
    j->run_bare = !p->base.python; /* box-exec built a Python box's plan from the board */
    free(p);
    return 1;
}

/* ------------------------------------------------------------ the job's */

int judge_start_boxes(struct judge *j, struct kj_err *err)
{
    struct box_cfg c;
    judge_box_cfg(j, 1, &c);
    int rc = box_start(&c, &j->ref, err);
    if (rc != KJ_OK)
        return rc;
    judge_box_cfg(j, 0, &c);
    return j->tool || j->python ? judge_tool_start(j, &c, err) : box_start(&c, &j->run, err);
}

/* Wait for both boxes to have their contexts; j->dev from the submission's
 * box. A GPU other than the one the job was compiled for (job->arch) is the
 * judge's error. */
int judge_box_info(struct judge *j, struct kj_err *err)
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

/* The function name of every launch line of d in the compile result cr. */
static void judge_lowered(const struct directives *d, const struct compile_result *cr,
                          char (*lowered)[256])
{
    for (int l = 0; l < d->nlaunch; l++)
        for (int k = 0; k < cr->nkernels; k++)
            if (strcmp(cr->kernels[k].name, d->launch[l].kernel) == 0)
                snprintf(lowered[l], 256, "%s", cr->kernels[k].lowered);
}

int judge_load(struct judge *j, int is_ref, struct kj_err *err)
{
    const struct compile_result *cr = is_ref ? &j->refc : &j->sub;
    const struct directives *d = is_ref ? &j->refdirs : &j->dirs;
    struct box_load ld;
    struct box_req req = judge_req(BOX_OP_LOAD, 0, 0);
    struct box_rep rep;
    int bare = is_ref ? j->ref_bare : j->run_bare;
    memset(&ld, 0, sizeof ld);
    if (bare) {
        ld.plan_size = (uint32_t)sizeof *j->plan;
        ld.dirs_size = (uint32_t)sizeof *d;
    }
    ld.cubin_size = (uint32_t)cr->cubin_size;
    ld.nlaunch = d->nlaunch;
    judge_lowered(d, cr, ld.lowered);
    if (j->gensrc != NULL) {
        ld.gen_size = (uint32_t)j->genc.cubin_size;
        ld.gen_nlaunch = j->gendirs.nlaunch;
        judge_lowered(&j->gendirs, &j->genc, ld.gen_lowered);
    }
    size_t job = (size_t)ld.plan_size + ld.dirs_size;
    size_t n = sizeof ld + job + cr->cubin_size + ld.gen_size;
    unsigned char *payload = malloc(n);
    if (payload == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory");
    memcpy(payload, &ld, sizeof ld);
    if (bare) {
        memcpy(payload + sizeof ld, j->plan, ld.plan_size);
        memcpy(payload + sizeof ld + ld.plan_size, d, ld.dirs_size);
    }
    memcpy(payload + sizeof ld + job, cr->cubin, cr->cubin_size);
    if (ld.gen_size > 0)
        memcpy(payload + sizeof ld + job + cr->cubin_size, j->genc.cubin, ld.gen_size);
    req.payload = (uint32_t)n;
    enum judge_step r = judge_call(j, is_ref, &req, payload, &rep, "loading the module", err);
    free(payload);
    return r == STEP_ERROR ? KJ_EINTERNAL : KJ_OK;
}

/* A gap between two rounds (judge.h's judge_gap_fn), or between two
 * profiled shapes (judge_tool.c): the callee's children wipe the job's
 * secrets and its submission's source and code; the time the gap took
 * moves the job's deadline. */
void judge_gap(struct judge *j)
{
    const struct judge_job *job = j->job;
    struct secret_list outer;
    memset(&outer, 0, sizeof outer);
    if (job->secrets != NULL)
        outer = *job->secrets;
    secret_add(&outer, (void *)job->source, job->source_len);
    secret_add(&outer, j->sub.cubin, j->sub.cubin_size);
    if (j->sub.log != NULL)
        secret_add(&outer, j->sub.log, strlen(j->sub.log));
    double t0 = mono_now();
    job->gap(job->gap_ctx, &outer);
    double took = mono_now() - t0;
    j->deadline += took;
    j->res->steps.gaps += took;
}

void judge_start_next(struct judge *j)
{
    struct box_cfg c;
    struct kj_err err;
    kj_err_clear(&err);
    const char *env = getenv("KJUDGE_PY_AHEAD");
    if (!j->python || j->next.pid > 0 || (env != NULL && strcmp(env, "0") == 0))
        return;
    judge_box_cfg(j, 0, &c);
    c.hold = 1;
    if (judge_tool_start_into(j, &c, &j->next, &err) != KJ_OK) /* next.pid stays -1 */
        kj_log(KJ_LOG_WARN, "judge", "the next Python box could not start ahead: %s", err.msg);
}

int judge_restart_run(struct judge *j, struct kj_err *err)
{
    struct box_cfg c;
    struct box_device dev;
    box_kill(&j->run);
    if (j->job->gap != NULL && !j->tool)
        judge_gap(j); /* another job's time, not this one's restart */
    double t0 = mono_now();
    j->run_bare = 0; /* the new box has the plan from its fork */
    j->run_epoch++;
    judge_box_cfg(j, 0, &c);
    /* The regions are kept out of forks once the first boxes have them
     * (judge_steps); the new box needs its own, or it could neither pin it
     * nor copy a set into it for the report (nor at all under
     * KJUDGE_HOST_VERIFY). The reference's stays out. */
    if (madvise(j->run_region, j->region_size, MADV_DOFORK) != 0)
        return KJ_FAIL(err, KJ_EINTERNAL, "madvise(MADV_DOFORK): %s", strerror(errno));
    int rc = KJ_EIO;
    if (j->python && j->next.pid > 0) { /* started ahead, its imports done: CUDA now */
        struct box_req go = judge_req(BOX_OP_START, 0, 0);
        struct kj_err gerr;
        j->run = j->next;
        j->next.pid = -1;
        j->next.pgid = 0;
        j->next.fd_req = j->next.fd_rep = j->next.fd_info = -1;
        if ((rc = box_send(&j->run, &go, NULL, &gerr)) != KJ_OK) {
            kj_log(KJ_LOG_WARN, "judge", "the Python box started ahead is gone (%s): a new one",
                   gerr.msg);
            box_kill(&j->run);
        }
    }
    if (rc != KJ_OK)
        rc = j->python ? judge_tool_start(j, &c, err) : box_start(&c, &j->run, err);
    if (madvise(j->run_region, j->region_size, MADV_DONTFORK) != 0 && rc == KJ_OK)
        rc = KJ_FAIL(err, KJ_EINTERNAL, "madvise(MADV_DONTFORK): %s", strerror(errno));
    if (rc == KJ_OK)
        rc = box_read_info(&j->run, &dev, JUDGE_START_MS, err);
    if (rc == KJ_OK && strcmp(dev.pci, j->dev.pci) != 0)
        rc = KJ_FAIL(err, KJ_EINTERNAL, "the new box found GPU %s, not %s", dev.pci, j->dev.pci);
    if (rc == KJ_OK)
        rc = judge_load(j, 0, err);
    j->res->steps.restarts += mono_now() - t0;
    j->res->steps.nrestarts++;
    return rc;
}
