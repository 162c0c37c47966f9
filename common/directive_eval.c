/*
 * directive_eval.c - the "//!kjudge" expressions checked and evaluated.
 *
 * The server (on upload) and the runner (once per job) call
 * dir_check_names() against the spec's
 * variables, then dir_eval_launch() and dir_eval_workspace() for every
 * shape (runner/plan.c); values outside their range fail with the line.
 */
#include "directive_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ---- names and evaluation ---- */

/* "T, H, GS" into buf, or "none". */
static void known_list(const struct expr_vars *vars, char *buf, size_t sz)
{
    size_t used = 0, n;
    int i;

    buf[0] = '\0';
    for (i = 0; vars != NULL && vars->names != NULL && i < vars->n; i++) {
        n = strlen(vars->names[i]);
        if (used + n + 3 > sz)
            break;
        if (used > 0) {
            memcpy(buf + used, ", ", 2);
            used += 2;
        }
        memcpy(buf + used, vars->names[i], n + 1);
        used += n;
    }
    if (used == 0)
        snprintf(buf, sz, "none");
}

static void label_of(char *buf, size_t sz, const char *key, int comp)
{
    if (comp < 0)
        snprintf(buf, sz, "%s", key);
    else
        snprintf(buf, sz, "%s.%c", key, "xyz"[comp]);
}

static int check_one(int line, const char *key, int comp, const char *text,
                     const struct expr_vars *vars, struct kj_err *err)
{
    char name[EXPR_MAX_LEN], known[128], label[24];
    struct kj_err e;

    kj_err_clear(&e);
    if (expr_check_unknown(text, vars, name, sizeof name, &e) == 0)
        return 0;
    label_of(label, sizeof label, key, comp);
    if (name[0] != '\0') {
        known_list(vars, known, sizeof known);
        return DFAIL(err, line, "unknown variable '%s' in %s (known: %s)",
                     dir_show(name, strlen(name)).s, label, known);
    }
    return DFAIL(err, line, "%s: %s", label, e.msg);
}

int dir_check_names(const struct directives *d, const struct expr_vars *vars,
                    struct kj_err *err)
{
    const struct dir_launch *l;
    int i, c, rc = 0;

    for (i = 0; i < d->nlaunch && rc == 0; i++) {
        l = &d->launch[i];
        for (c = 0; c < l->ngrid && rc == 0; c++)
            rc = check_one(l->line, "grid", c, l->grid[c], vars, err);
        for (c = 0; c < l->nblock && rc == 0; c++)
            rc = check_one(l->line, "block", c, l->block[c], vars, err);
        for (c = 0; c < l->ncluster && rc == 0; c++)
            rc = check_one(l->line, "cluster", c, l->cluster[c], vars, err);
        if (rc == 0 && l->smem[0] != '\0')
            rc = check_one(l->line, "smem", -1, l->smem, vars, err);
    }
    if (rc == 0 && d->workspace[0] != '\0')
        rc = check_one(d->workspace_line, "workspace", -1, d->workspace, vars, err);
    return rc;
}

/* Evaluate text and check lo <= value <= hi. */
static int eval_range(int line, const char *key, int comp, const char *text,
                      const struct expr_vars *vars, int64_t lo, int64_t hi, int64_t *v,
                      struct kj_err *err)
{
    char label[24];
    struct kj_err e;
    int rc;

    kj_err_clear(&e);
    label_of(label, sizeof label, key, comp);
    if ((rc = expr_eval(text, vars, v, &e)) != 0) {
        if (rc != KJ_EINVAL)
            return KJ_FAIL(err, rc, "line %d: %s: %s", line, label, e.msg);
        return DFAIL(err, line, "%s: %s", label, e.msg);
    }
    if (*v < lo)
        return DFAIL(err, line, "%s = %" PRId64 ", must be >= %" PRId64, label, *v, lo);
    if (*v > hi)
        return DFAIL(err, line, "%s = %" PRId64 " is too large (max %" PRId64 ")", label, *v,
                     hi);
    return 0;
}

/* Evaluate n components of a list into dims (missing ones stay 1). */
static int eval_list(int line, const char *key, int n, const char comps[3][EXPR_MAX_LEN],
                     const struct expr_vars *vars, uint32_t dims[3], struct kj_err *err)
{
    int64_t v;
    int c, rc;

    for (c = 0; c < 3; c++)
        dims[c] = 1;
    for (c = 0; c < n && c < 3; c++) {
        if ((rc = eval_range(line, key, c, comps[c], vars, 1, INT32_MAX, &v, err)) != 0)
            return rc;
        dims[c] = (uint32_t)v;
    }
    return 0;
}

int dir_eval_launch(const struct dir_launch *l, const struct expr_vars *vars,
                    struct dir_dims *out, struct kj_err *err)
{
    int64_t v = 0;
    int rc;

    memset(out, 0, sizeof *out);
    if (l->ngrid < 1 || l->ngrid > 3 || l->nblock < 1 || l->nblock > 3 ||
        l->ncluster < 0 || l->ncluster > 3)
        return KJ_FAIL(err, KJ_EINTERNAL, "line %d: launch was not filled by dir_parse",
                       l->line);
    if ((rc = eval_list(l->line, "grid", l->ngrid, l->grid, vars, out->grid, err)) != 0 ||
        (rc = eval_list(l->line, "block", l->nblock, l->block, vars, out->block, err)) != 0 ||
        (rc = eval_list(l->line, "cluster", l->ncluster, l->cluster, vars, out->cluster,
                        err)) != 0)
        return rc;
    out->has_cluster = l->ncluster > 0;
    if (l->smem[0] != '\0' &&
        (rc = eval_range(l->line, "smem", -1, l->smem, vars, 0, UINT32_MAX, &v, err)) != 0)
        return rc;
    out->smem = (uint32_t)v;
    return 0;
}

int dir_eval_workspace(const struct directives *d, const struct expr_vars *vars,
                       uint64_t *out, struct kj_err *err)
{
    int64_t v;
    int rc;

    *out = 0;
    if (d->workspace[0] == '\0')
        return 0;
    rc = eval_range(d->workspace_line, "workspace", -1, d->workspace, vars, 0,
                    DIR_MAX_WORKSPACE, &v, err);
    if (rc == 0)
        *out = (uint64_t)v;
    return rc;
}
