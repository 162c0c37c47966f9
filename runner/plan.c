/*
 * plan.c - resolve every case of a job once (see plan.h): the only place in
 * the runner that evaluates a board's shape, tolerance and floor
 * expressions for a case and a source's launch and workspace lines.
 */
#include "plan.h"
#include "expr.h"

#include <stdlib.h>
#include <string.h>

/* Byte offset, size, elements and dimensions of every buffer of case c
 * (PLAN_ALIGN-aligned, in spec order), and the total. */
static int plan_layout(const struct spec *s, const struct spec_case *c, struct case_plan *cp,
                       struct kj_err *err)
{
    size_t pos = 0;
    for (int i = 0; i < s->nbuffers; i++) {
        int64_t n;
        int rc = spec_buffer_elems(s, i, c, &n, err);
        if (rc != KJ_OK)
            return rc;
        size_t bytes = (size_t)n * spec_dtype_size(s->buffers[i].dtype);
        if (n <= 0 || bytes / spec_dtype_size(s->buffers[i].dtype) != (size_t)n)
            return KJ_FAIL(err, KJ_EINVAL, "buffer %s: bad size", s->buffers[i].name);
        if ((rc = spec_buffer_dims(s, i, c, cp->dims[i], &cp->ndim[i], err)) != KJ_OK)
            return rc;
        cp->off[i] = pos;
        cp->size[i] = bytes;
        cp->nelem[i] = n;
        pos += (bytes + PLAN_ALIGN - 1) / PLAN_ALIGN * PLAN_ALIGN;
    }
    cp->total = pos;
    return KJ_OK;
}

/* The launch lines of d, in order, then its workspace. The first that does
 * not evaluate is recorded in set->bad and set->err; the lines after it are
 * still evaluated for the report (judge.c lists those that do). */
static void plan_launches(const struct directives *d, const struct expr_vars *vars,
                          int with_workspace, struct plan_launches *set)
{
    set->nlaunch = d->nlaunch;
    set->bad = -1;
    kj_err_clear(&set->err);
    for (int l = 0; l < d->nlaunch; l++) {
        struct kj_err e;
        kj_err_clear(&e);
        set->ok[l] = dir_eval_launch(&d->launch[l], vars, &set->dims[l], &e) == KJ_OK;
        if (!set->ok[l] && set->bad < 0) {
            set->bad = l;
            set->err = e;
        }
    }
    if (set->bad < 0 && with_workspace &&
        dir_eval_workspace(d, vars, &set->ws_bytes, &set->err) != KJ_OK)
        set->bad = d->nlaunch;
}

/* Bytes the case must move at the least: the board's "bytes" expression,
 * or every buffer once. */
static void plan_floor(const struct spec *s, const struct expr_vars *vars, struct case_plan *cp)
{
    if (s->bytes_expr[0] != '\0') {
        int64_t v;
        cp->has_floor = expr_eval(s->bytes_expr, vars, &v, NULL) == KJ_OK;
        cp->floor_bytes = cp->has_floor ? (double)v : 0;
        return;
    }
    cp->has_floor = 1;
    cp->floor_bytes = 0;
    for (int i = 0; i < s->nbuffers; i++)
        cp->floor_bytes += (double)cp->nelem[i] * (double)spec_dtype_size(s->buffers[i].dtype);
}

static int plan_one(const struct spec *s, const struct directives *const *sets, int bench,
                    int idx, struct case_plan *cp, struct kj_err *err)
{
    const struct spec_case *c = bench ? &s->benchmarks[idx] : &s->tests[idx];
    const char *names[SPEC_MAX_VARS];
    struct expr_vars vars;
    int rc;
    cp->bench = bench;
    cp->index = idx;
    cp->seed = c->seed;
    memcpy(cp->val, c->val, sizeof cp->val);
    cp->bad_var = -1;
    for (int v = 0; v < s->nvars; v++) {
        if ((c->val[v] < INT32_MIN || c->val[v] > INT32_MAX) && cp->bad_var < 0)
            cp->bad_var = v;
        cp->ivals[v] = (int32_t)c->val[v];
    }
    if ((rc = plan_layout(s, c, cp, err)) != KJ_OK)
        return rc;
    for (int b = 0; b < s->nbuffers; b++)
        if (s->buffers[b].role == SPEC_OUTPUT &&
            (rc = spec_tolerance(s, b, c, &cp->atol[b], &cp->rtol[b], err)) != KJ_OK)
            return rc;
    spec_expr_vars(s, names, c->val, &vars);
    for (int k = 0; k < PLAN_NSETS; k++)
        if (sets[k] != NULL)
            plan_launches(sets[k], &vars, k != PLAN_GEN, &cp->set[k]);
    plan_floor(s, &vars, cp);
    return KJ_OK;
}

int plan_build(const struct spec *s, const struct directives *sub, const struct directives *ref,
               const struct directives *gen, struct plan **out, struct kj_err *err)
{
    const struct directives *sets[PLAN_NSETS] = {sub, ref, gen};
    struct plan *p = calloc(1, sizeof *p);
    int rc = KJ_OK;
    *out = NULL;
    if (p == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory for the plan");
    p->ntests = s->ntests;
    p->nbenchmarks = s->nbenchmarks;
    for (int k = 0; k < s->ntests + s->nbenchmarks && rc == KJ_OK; k++) {
        int bench = k >= s->ntests, idx = bench ? k - s->ntests : k;
        struct case_plan *cp = bench ? &p->benches[idx] : &p->tests[idx];
        rc = plan_one(s, sets, bench, idx, cp, err);
        if (rc == KJ_OK && cp->total > p->max_total)
            p->max_total = cp->total;
    }
    if (rc != KJ_OK) {
        free(p);
        return rc;
    }
    *out = p;
    return KJ_OK;
}

void plan_free(struct plan *p)
{
    free(p);
}

const struct case_plan *plan_case(const struct plan *p, int bench, int idx)
{
    if (p == NULL)
        return NULL;
    if (bench)
        return idx >= 0 && idx < p->nbenchmarks ? &p->benches[idx] : NULL;
    return idx >= 0 && idx < p->ntests ? &p->tests[idx] : NULL;
}
