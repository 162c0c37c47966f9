/*
 * judge_check.c - one call of a case in the two boxes, and its check (see
 * judge_int.h): requests under the job's deadline, replies and dead boxes
 * mapped onto verdicts (the submission's box) or the judge's own errors
 * (the reference box), the comparison of the outputs on the GPU (in the
 * reference box, over CUDA IPC) or on the host, and the verdicts and shape
 * events reported as the judge goes.
 * The judge never trusts the submission box: it compares in this process.
 */
#include "judge_int.h"
#include "compare.h"
#include "kjhash.h"
#include "mono.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define JUDGE_CALL_MS 60000     /* one call may take at most this (or what is left) */

void judge_event(struct judge *j, enum kj_event event, const cJSON *data)
{
    if (j->job->progress != NULL)
        j->job->progress(j->job->progress_ctx, event, data);
}

void judge_verdict(struct judge *j, enum kj_verdict verdict, const char *fmt, ...)
{
    char msg[RESULT_MAX_MESSAGE];
    va_list ap;
    if (j->res->has_verdict)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    result_set_verdict(j->res, verdict, msg);
    if (j->job->mode != KJ_MODE_SANITIZE) /* there judge_tool_finish reports it */
        judge_verdict_event(j);
}

void judge_verdict_event(struct judge *j)
{
    cJSON *ev = result_verdict_json(j->res);
    judge_event(j, KJ_EV_VERDICT, ev);
    cJSON_Delete(ev);
}

int judge_has_verdict(const struct judge *j)
{
    return j->res->has_verdict;
}

/* Report a shape entry as event ev. */
void judge_shape_event(struct judge *j, enum kj_event ev, const struct result_shape *e)
{
    cJSON *o = result_shape_json(j->res, e);
    judge_event(j, ev, o);
    cJSON_Delete(o);
}

void judge_case_verdict(struct judge *j, int bench, int idx, long call,
                        const struct result_shape *e)
{
    const struct spec *s = j->spec;
    char shape[256], which[48] = "";
    spec_case_label(s, bench ? &s->benchmarks[idx] : &s->tests[idx], shape, sizeof shape);
    if (call >= 0)
        snprintf(which, sizeof which, ", timed call %ld", call);
    judge_verdict(j, KJ_V_WRONG_ANSWER, "%s %d (%s)%s: %s", bench ? "benchmark" : "test", idx,
                  shape, which, e->check.status == RESULT_FAIL || e->check.status == RESULT_ERROR ?
                  e->check.message : "wrong output");
}

/* A new entry for case idx of the board's tests (bench 0) or benchmarks. */
struct result_shape *judge_entry(struct judge *j, int bench, int idx)
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
    if (j->tool) /* under a tool a call is slow; the job's limit bounds it */
        return (int)left;
    return left < JUDGE_CALL_MS ? (int)left : JUDGE_CALL_MS;
}

/* A request for case (bench, idx) with every other field zero. */
struct box_req judge_req(int op, int bench, int idx)
{
    struct box_req req;
    memset(&req, 0, sizeof req);
    req.op = op;
    req.bench = bench;
    req.case_index = idx;
    return req;
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
enum judge_step judge_call(struct judge *j, int is_ref, const struct box_req *req,
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
    v.gen = (uint64_t)j->run_epoch << 40 | run->gen;
    memcpy(v.ipc, run->ipc[0], sizeof v.ipc);
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
enum judge_step judge_one_call(struct judge *j, int bench, int idx, uint64_t seed, int op,
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
    req.profile = j->profile_marks;
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


/* The detailed check of set k of a protocol-v2 batch on the host: the
 * reference box computes the call again from seed and copies it out, the
 * submission box copies its set k. */
static enum judge_step judge_host_check_set(struct judge *j, int idx, int k, uint64_t seed,
                                            int check_inputs, struct result_check *chk,
                                            struct kj_err *err)
{
    struct box_req req = judge_req(BOX_OP_CASE, 1, idx);
    struct box_rep rep;
    req.seed = seed;
    req.poison_seed = j->poison++;
    req.copy_inputs = check_inputs;
    if (judge_call(j, 1, &req, NULL, &rep, "reference", err) != STEP_PASS)
        return judge_has_verdict(j) ? STEP_VERDICT : STEP_ERROR;
    req = judge_req(BOX_OP_COPY, 1, idx);
    req.set = k;
    req.copy_inputs = check_inputs;
    if (judge_call(j, 0, &req, NULL, &rep, "copy", err) != STEP_PASS)
        return judge_has_verdict(j) ? STEP_VERDICT : STEP_ERROR;
    return judge_compare(j, plan_case(j->plan, 1, idx), check_inputs, chk, err);
}

/* The fingerprint (common/kjhash.h) of the outputs the submission box
 * copied to its region for case cp. */
static uint64_t judge_region_fp(const struct judge *j, const struct case_plan *cp, uint64_t salt)
{
    uint64_t h = 0;
    for (int i = 0; i < j->spec->nbuffers; i++)
        if (j->spec->buffers[i].role == SPEC_OUTPUT)
            h += kjhash_host(j->run_region + cp->off[i], cp->size[i], salt + (uint64_t)i);
    return h;
}

/* A call whose outputs were not what it left when it ended. */
static enum judge_step judge_changed(struct result_check *chk)
{
    memset(chk, 0, sizeof *chk);
    chk->status = RESULT_FAIL;
    snprintf(chk->message, sizeof chk->message, "its outputs changed after the call had ended, "
             "before they were checked (a later call wrote them): every call must write its "
             "own outputs");
    return STEP_VERDICT;
}

/* Every set of a protocol-v2 batch (docs/timing.md) verified: in one
 * VERIFY_SETS request to the reference box when the GPU path works (a set
 * it finds different is looked at again on the host, for the report), else
 * each set on the host; and each set's outputs must still have the
 * fingerprint the submission box took right after its call. */
enum judge_step judge_verify_batch(struct judge *j, int idx, const struct box_rep *run, int n,
                                   const uint64_t *seed, const uint64_t *poison, uint32_t inputs,
                                   uint64_t salt, int *failed, struct result_check *chk,
                                   struct kj_err *err)
{
    static struct box_vsets v; /* 6 KiB of handles: off the stack (the judge is one thread) */
    struct box_req req = judge_req(BOX_OP_VERIFY_SETS, 1, idx);
    struct box_rep rep;
    int gpu = 0;
    if (j->gpu_verify && !run->has_ipc) {
        kj_log(KJ_LOG_WARN, "judge", "no CUDA IPC on this host: verifying on the host");
        j->gpu_verify = 0;
    }
    memset(&rep, 0, sizeof rep);
    if (j->gpu_verify) {
        memset(&v, 0, sizeof v);
        v.gen = (uint64_t)j->run_epoch << 40 | run->gen;
        v.n = n;
        v.inputs = inputs;
        v.salt = salt;
        memcpy(v.seed, seed, (size_t)n * sizeof *seed);
        memcpy(v.poison, poison, (size_t)n * sizeof *poison);
        memcpy(v.ipc, run->ipc, sizeof v.ipc);
        req.payload = sizeof v;
        if (box_call(&j->ref, &req, &v, &rep, judge_call_ms(j), err) != KJ_OK)
            return STEP_ERROR;
        if (rep.status == BOX_OK && rep.count == n) {
            gpu = 1;
        } else {
            kj_log(KJ_LOG_WARN, "judge", "verifying on the GPU failed, using the host: %s",
                   rep.msg);
            j->gpu_verify = 0;
        }
    }
    for (int k = 0; k < n; k++) {
        int in = (int)(inputs >> k & 1u);
        *failed = k;
        if (gpu && rep.set_bad[k] == 0) {
            if (rep.fp[k] != run->fp[k])
                return judge_changed(chk);
            continue;
        }
        memset(chk, 0, sizeof *chk);
        enum judge_step r = judge_host_check_set(j, idx, k, seed[k], in, chk, err);
        if (r != STEP_PASS)
            return r;
        if (judge_region_fp(j, plan_case(j->plan, 1, idx), salt) != run->fp[k])
            return judge_changed(chk);
    }
    *failed = -1;
    chk->status = RESULT_PASS;
    return STEP_PASS;
}
