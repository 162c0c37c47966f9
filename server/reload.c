/*
 * reload.c - compare the served leaderboards with the ones loaded again
 * from disk, field by field.
 *
 * api_admin.c calls reload_compare() during POST /api/v1/admin/reload and
 * turns the entries into its answer (or its 409). Pure functions over two
 * loaded specs; tested in tests/unit/test_reload.c.
 */
#include "reload.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Differences found so far, written as "a; b; c" into a bounded buffer. */
struct notes {
    char *buf;
    size_t sz;
    int count;
};

static void note(struct notes *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct notes *w, const char *fmt, ...)
{
    size_t used = strlen(w->buf);
    va_list ap;
    if (w->count++ > 0 && used + 2 < w->sz) {
        memcpy(w->buf + used, "; ", 3);
        used += 2;
    }
    if (used + 1 >= w->sz)
        return;
    va_start(ap, fmt);
    vsnprintf(w->buf + used, w->sz - used, fmt, ap);
    va_end(ap);
}

/* "T,H,GS" of s's variables. */
static void var_list(const struct spec *s, char *buf, size_t sz)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < s->nvars && used + 1 < sz; i++)
        used += (size_t)snprintf(buf + used, sz - used, "%s%s", i ? "," : "", s->vars[i]);
}

/* Differences of a buffer that change what is judged, other than tolerances. */
static int buffer_differs(const struct spec_buffer *a, const struct spec_buffer *b)
{
    if (strcmp(a->name, b->name) != 0 || a->dtype != b->dtype || a->role != b->role ||
        a->ndim != b->ndim || a->dist != b->dist || a->p0 != b->p0 || a->p1 != b->p1)
        return 1;
    for (int d = 0; d < a->ndim; d++)
        if (strcmp(a->shape[d], b->shape[d]) != 0)
            return 1;
    return 0;
}

static void cmp_buffers(const struct spec *o, const struct spec *n, struct notes *w)
{
    if (o->nbuffers != n->nbuffers) {
        note(w, "buffers changed (%d -> %d)", o->nbuffers, n->nbuffers);
        return;
    }
    for (int i = 0; i < o->nbuffers; i++) {
        const struct spec_buffer *a = &o->buffers[i], *b = &n->buffers[i];
        if (buffer_differs(a, b))
            note(w, "buffer %s changed (shape, type, role or input distribution)", a->name);
        else if (a->atol != b->atol || a->rtol != b->rtol)
            note(w, "tolerance of %s changed (atol %g -> %g, rtol %g -> %g)", a->name, a->atol,
                 b->atol, a->rtol, b->rtol);
    }
}

/* First difference between two case lists ("test", "benchmark"). */
static void cmp_cases(const char *what, const struct spec *o, const struct spec_case *a, int na,
                      const struct spec_case *b, int nb, struct notes *w)
{
    if (na != nb) {
        note(w, "%ss changed (%d -> %d cases)", what, na, nb);
        return;
    }
    for (int i = 0; i < na; i++) {
        for (int v = 0; v < o->nvars; v++)
            if (a[i].val[v] != b[i].val[v]) {
                note(w, "%s %d changed (%s %lld -> %lld)", what, i, o->vars[v],
                     (long long)a[i].val[v], (long long)b[i].val[v]);
                return;
            }
        if (a[i].seed != b[i].seed) {
            note(w, "%s %d changed (seed)", what, i);
            return;
        }
    }
}

/* Changes that make earlier results mean something else. */
static void cmp_judged(const struct spec *o, const struct spec *n, struct notes *w)
{
    int vars_same = o->nvars == n->nvars;
    for (int i = 0; vars_same && i < o->nvars; i++)
        vars_same = strcmp(o->vars[i], n->vars[i]) == 0;
    if (!vars_same) {
        char a[256], b[256];
        var_list(o, a, sizeof a);
        var_list(n, b, sizeof b);
        note(w, "shape variables changed (%s -> %s)", a, b);
    }
    cmp_buffers(o, n, w);
    if (vars_same) {
        cmp_cases("test", o, o->tests, o->ntests, n->tests, n->ntests, w);
        cmp_cases("benchmark", o, o->benchmarks, o->nbenchmarks, n->benchmarks, n->nbenchmarks, w);
    }
    int cons_same = o->nconstraints == n->nconstraints;
    for (int i = 0; cons_same && i < o->nconstraints; i++)
        cons_same = strcmp(o->constraints[i], n->constraints[i]) == 0;
    if (!cons_same)
        note(w, "constraints changed");
    if (strcmp(o->ranking, n->ranking) != 0)
        note(w, "ranking changed (%s -> %s)", o->ranking, n->ranking);
}

/* Changes that leave earlier results valid. */
static void cmp_other(const struct spec *o, const struct spec *n, struct notes *w)
{
    int gpus_same = o->ngpus == n->ngpus;
    for (int i = 0; gpus_same && i < o->ngpus; i++)
        gpus_same = strcmp(o->gpus[i], n->gpus[i]) == 0;
    if (strcmp(o->title, n->title) != 0)
        note(w, "title");
    if (strcmp(o->deadline, n->deadline) != 0)
        note(w, "deadline (%s -> %s)", o->deadline[0] ? o->deadline : "none",
             n->deadline[0] ? n->deadline : "none");
    if (!gpus_same)
        note(w, "gpus");
    if (o->limit_test_s != n->limit_test_s || o->limit_benchmark_s != n->limit_benchmark_s ||
        o->limit_leaderboard_s != n->limit_leaderboard_s || o->limit_tools_s != n->limit_tools_s)
        note(w, "time limits");
    if (strcmp(o->description_file, n->description_file) != 0 || strcmp(o->dir, n->dir) != 0)
        note(w, "description file");
    if (strcmp(o->bytes_expr, n->bytes_expr) != 0 || strcmp(o->flops_expr, n->flops_expr) != 0)
        note(w, "bytes or flops");
    if (o->has_generate != n->has_generate)
        note(w, "generate.cu");
    if (o->public_reference != n->public_reference)
        note(w, "public_reference");
    if (memcmp(&o->python, &n->python, sizeof o->python) != 0) /* ints only: no padding */
        note(w, "python interface");
}

enum reload_kind reload_spec(const struct spec *old, const struct spec *new, char *what,
                             size_t whatsz)
{
    struct notes w = {what, whatsz, 0};
    what[0] = '\0';
    cmp_judged(old, new, &w);
    if (w.count > 0)
        return RELOAD_CHANGED;
    cmp_other(old, new, &w);
    return w.count > 0 ? RELOAD_EDITED : RELOAD_SAME;
}

static const struct spec *find(struct spec *const *set, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(set[i]->name, name) == 0)
            return set[i];
    return NULL;
}

int reload_compare(struct spec *const *old, int nold, struct spec *const *new, int nnew,
                   struct reload_entry **out, int *n, struct kj_err *err)
{
    struct reload_entry *e = calloc((size_t)nold + (size_t)nnew + 1, sizeof *e);
    int k = 0;
    *out = NULL;
    *n = 0;
    if (e == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory comparing leaderboards");
    for (int i = 0; i < nold; i++) {
        const struct spec *now = find(new, nnew, old[i]->name);
        snprintf(e[k].name, sizeof e[k].name, "%s", old[i]->name);
        e[k].kind = now == NULL ? RELOAD_REMOVED
                                : reload_spec(old[i], now, e[k].what, sizeof e[k].what);
        k++;
    }
    for (int i = 0; i < nnew; i++) {
        if (find(old, nold, new[i]->name) != NULL)
            continue;
        snprintf(e[k].name, sizeof e[k].name, "%s", new[i]->name);
        e[k++].kind = RELOAD_ADDED;
    }
    *out = e;
    *n = k;
    return 0;
}

const char *reload_kind_name(enum reload_kind k)
{
    static const char *const names[] = {"unchanged", "edited", "changed", "added", "removed"};
    return k >= RELOAD_SAME && k <= RELOAD_REMOVED ? names[k] : "?";
}
