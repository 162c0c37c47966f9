/*
 * spec_query.c - questions about a loaded spec: dtype sizes and names, a
 * variable's index, a buffer's dimensions and element count for a case, a
 * case's label, the tolerances of a buffer for a case.
 *
 * Used by the runner's plan and judge and by the server's public board
 * bodies; the spec is read-only here.
 */
#include "spec_int.h"
#include "expr.h"
#include "fexpr.h"

#include <stdio.h>
#include <string.h>

const char *const spec_dtype_names[SPEC_NDTYPES] = {
    "float32", "float16", "bfloat16", "float64", "int8", "uint8", "int32", "uint32", "int64"
};
const size_t spec_dtype_sizes[SPEC_NDTYPES] = {4, 2, 2, 8, 1, 1, 4, 4, 8};

void spec_expr_vars(const struct spec *s, const char **names, const int64_t *values,
                           struct expr_vars *out)
{
    for (int i = 0; i < s->nvars; i++)
        names[i] = s->vars[i];
    out->n = s->nvars;
    out->names = names;
    out->values = values;
}

/* ------------------------------------------------------------------ */
/* Queries                                                             */
/* ------------------------------------------------------------------ */

size_t spec_dtype_size(enum spec_dtype t)
{
    KJ_ASSERT((unsigned)t < SPEC_NDTYPES);
    return spec_dtype_sizes[t];
}

const char *spec_dtype_name(enum spec_dtype t)
{
    KJ_ASSERT((unsigned)t < SPEC_NDTYPES);
    return spec_dtype_names[t];
}

int spec_dtype_is_int(enum spec_dtype t)
{
    return t >= SPEC_I8;
}

int spec_var_index(const struct spec *s, const char *name)
{
    for (int i = 0; i < s->nvars; i++)
        if (strcmp(s->vars[i], name) == 0)
            return i;
    return -1;
}

int spec_buffer_dims(const struct spec *s, int b, const struct spec_case *c,
                     int64_t *dims, int *ndim, struct kj_err *err)
{
    const char *names[SPEC_MAX_VARS];
    struct expr_vars vars;
    const struct spec_buffer *buf;
    struct kj_err e;

    KJ_ASSERT(b >= 0 && b < s->nbuffers);
    buf = &s->buffers[b];
    spec_expr_vars(s, names, c->val, &vars);
    for (int d = 0; d < buf->ndim; d++) {
        kj_err_clear(&e);
        if (expr_eval(buf->shape[d], &vars, &dims[d], &e) != 0)
            return KJ_FAIL(err, KJ_EINVAL, "buffer %s shape[%d]: %s", buf->name, d, e.msg);
        if (dims[d] <= 0)
            return KJ_FAIL(err, KJ_EINVAL, "buffer %s shape[%d] '%s' = %lld, must be positive",
                           buf->name, d, buf->shape[d], (long long)dims[d]);
    }
    *ndim = buf->ndim;
    return 0;
}

int spec_buffer_elems(const struct spec *s, int b, const struct spec_case *c,
                      int64_t *out, struct kj_err *err)
{
    int64_t dims[SPEC_MAX_DIMS], n = 1;
    int ndim, rc;
    if ((rc = spec_buffer_dims(s, b, c, dims, &ndim, err)) != 0)
        return rc;
    for (int d = 0; d < ndim; d++)
        if (__builtin_mul_overflow(n, dims[d], &n))
            return KJ_FAIL(err, KJ_EINVAL, "buffer %s: element count overflows", s->buffers[b].name);
    if (__builtin_mul_overflow(n, (int64_t)spec_dtype_size(s->buffers[b].dtype), &(int64_t){0}))
        return KJ_FAIL(err, KJ_EINVAL, "buffer %s: byte size overflows", s->buffers[b].name);
    *out = n;
    return 0;
}

void spec_case_label(const struct spec *s, const struct spec_case *c, char *buf, size_t bufsz)
{
    size_t used = 0;
    if (bufsz == 0)
        return;
    buf[0] = '\0';
    for (int i = 0; i < s->nvars && used < bufsz; i++) {
        int n = snprintf(buf + used, bufsz - used, "%s%s=%lld", i ? " " : "", s->vars[i],
                         (long long)c->val[i]);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

int spec_tolerance(const struct spec *s, int b, const struct spec_case *c,
                   double *atol, double *rtol, struct kj_err *err)
{
    const struct spec_buffer *sb = &s->buffers[b];
    const char *names[SPEC_MAX_VARS];
    const char *ex[2] = {sb->atol_expr, sb->rtol_expr}, *key[2] = {"atol", "rtol"};
    double *out[2] = {atol, rtol};
    struct expr_vars vars;

    *atol = sb->atol;
    *rtol = sb->rtol;
    spec_expr_vars(s, names, c->val, &vars);
    for (int i = 0; i < 2; i++) {
        if (ex[i][0] == '\0')
            continue;
        struct kj_err e;
        kj_err_clear(&e);
        if (fexpr_eval(ex[i], &vars, out[i], &e) != 0)
            return KJ_FAIL(err, e.code, "buffer %s %s: %s", sb->name, key[i], e.msg);
        if (!(*out[i] >= 0.0))
            return KJ_FAIL(err, KJ_EINVAL, "buffer %s %s '%s' = %g, must be >= 0", sb->name,
                           key[i], ex[i], *out[i]);
    }
    return 0;
}
