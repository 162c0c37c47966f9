/*
 * spec_buffers.c - leaderboard.json's buffers, tests and benchmarks.
 *
 * Called by spec.c's load after the variables are known: each buffer's
 * dtype, shape expressions, initialisation and tolerances; each test and
 * benchmark case's variable values and seed, checked against the
 * constraints and the size limits.
 */
#include "spec_int.h"
#include "expr.h"
#include "fexpr.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Buffers                                                             */
/* ------------------------------------------------------------------ */

static int ld_dtype(struct ld *c, const cJSON *obj, const char *where, enum spec_dtype *out)
{
    char name[16], field[48];
    int rc;
    snprintf(field, sizeof field, "%s.dtype", where);
    if ((rc = ld_str(c, obj, "dtype", field, 1, name, sizeof name)) != 0)
        return rc;
    for (int i = 0; i < SPEC_NDTYPES; i++) {
        if (strcmp(name, spec_dtype_names[i]) == 0) {
            *out = (enum spec_dtype)i;
            return 0;
        }
    }
    return LD_FAIL(c, field, "unknown dtype '%s' (float32 float16 bfloat16 float64 int8 "
                   "uint8 int32 uint32 int64)", name);
}

static int ld_shape(struct ld *c, const cJSON *obj, const char *where, struct spec_buffer *b)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(obj, "shape");
    char field[64];
    int rc;
    snprintf(field, sizeof field, "%s.shape", where);
    if (arr == NULL)
        return LD_FAIL(c, field, "missing (a list of expressions, [] for a scalar)");
    if (!cJSON_IsArray(arr))
        return LD_FAIL(c, field, "must be a list of expressions");
    if (cJSON_GetArraySize(arr) > SPEC_MAX_DIMS)
        return LD_FAIL(c, field, "more than %d dimensions", SPEC_MAX_DIMS);
    for (const cJSON *it = arr->child; it != NULL; it = it->next) {
        snprintf(field, sizeof field, "%s.shape[%d]", where, b->ndim);
        if ((rc = ld_expr_item(c, it, field, b->shape[b->ndim])) != 0)
            return rc;
        b->ndim++;
    }
    return 0;
}

/* Parse "init" of an input buffer. */
static int ld_init(struct ld *c, const cJSON *obj, const char *where, struct spec_buffer *b)
{
    static const char *const keys[] = {"dist", "mean", "std", "lo", "hi", NULL};
    const cJSON *init = cJSON_GetObjectItemCaseSensitive(obj, "init");
    char field[64], fa[72], fb[72], dist[16];
    int rc, isint = spec_dtype_is_int(b->dtype);

    snprintf(field, sizeof field, "%s.init", where);
    if (init == NULL)
        return LD_FAIL(c, field, "missing (inputs need {\"dist\": ...})");
    if (!cJSON_IsObject(init))
        return LD_FAIL(c, field, "must be an object");
    if ((rc = ld_keys(c, init, field, keys)) != 0)
        return rc;
    snprintf(fa, sizeof fa, "%s.dist", field);
    if ((rc = ld_str(c, init, "dist", fa, 1, dist, sizeof dist)) != 0)
        return rc;
    const char *ka = NULL, *kb = NULL;
    if (strcmp(dist, "normal") == 0) {
        b->dist = SPEC_DIST_NORMAL, ka = "mean", kb = "std";
    } else if (strcmp(dist, "uniform") == 0) {
        b->dist = SPEC_DIST_UNIFORM, ka = "lo", kb = "hi";
    } else if (strcmp(dist, "int") == 0) {
        b->dist = SPEC_DIST_INT, ka = "lo", kb = "hi";
    } else if (strcmp(dist, "generated") == 0) {
        b->dist = SPEC_DIST_GENERATED;
    } else {
        return LD_FAIL(c, fa, "unknown distribution '%s' (normal, uniform, int, generated)", dist);
    }
    for (int i = 1; keys[i] != NULL; i++)
        if (cJSON_GetObjectItemCaseSensitive(init, keys[i]) != NULL &&
            (ka == NULL || (strcmp(keys[i], ka) != 0 && strcmp(keys[i], kb) != 0)))
            return LD_FAIL(c, field, "'%s' does not apply to dist '%s'", keys[i], dist);
    if (b->dist == SPEC_DIST_GENERATED)
        return c->s->has_generate ? 0
               : LD_FAIL(c, fa, "'generated' needs a generate.cu in the leaderboard folder");
    if (isint != (b->dist == SPEC_DIST_INT))
        return LD_FAIL(c, fa, "dist '%s' does not fit dtype %s", dist, spec_dtype_name(b->dtype));
    snprintf(fa, sizeof fa, "%s.%s", field, ka);
    snprintf(fb, sizeof fb, "%s.%s", field, kb);
    if ((rc = ld_num(c, init, ka, fa, 1, &b->p0)) != 0 || (rc = ld_num(c, init, kb, fb, 1, &b->p1)) != 0)
        return rc;
    if (b->dist == SPEC_DIST_NORMAL && b->p1 < 0)
        return LD_FAIL(c, fb, "must be >= 0");
    if (b->dist == SPEC_DIST_UNIFORM && !(b->p0 < b->p1))
        return LD_FAIL(c, fb, "must be greater than lo");
    if (b->dist == SPEC_DIST_INT && (!ld_is_whole(b->p0) || !ld_is_whole(b->p1) || b->p0 > b->p1))
        return LD_FAIL(c, fb, "lo and hi must be integers with lo <= hi");
    return 0;
}

/* A tolerance: a number, or a string holding a real expression over the
 * vars (checked here for syntax and names, per case in ld_case_check). */
static int ld_tol(struct ld *c, const cJSON *obj, const char *key, const char *field,
                  int required, double *num, char *expr)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    const char *names[SPEC_MAX_VARS];
    struct expr_vars vars;
    struct kj_err e;
    double x;

    if (!cJSON_IsString(v))
        return ld_num(c, obj, key, field, required, num);
    if (strlen(v->valuestring) >= SPEC_MAX_EXPR)
        return LD_FAIL(c, field, "expression longer than %d characters", SPEC_MAX_EXPR - 1);
    kj_err_clear(&e);
    spec_expr_vars(c->s, names, NULL, &vars);
    if (fexpr_eval(v->valuestring, &vars, &x, &e) != 0)
        return LD_FAIL(c, field, "%s", e.msg);
    snprintf(expr, SPEC_MAX_EXPR, "%s", v->valuestring);
    *num = 0.0;
    return 0;
}

static int ld_tolerance(struct ld *c, const cJSON *obj, const char *where, struct spec_buffer *b)
{
    char fa[64], fr[64];
    int rc, isint = spec_dtype_is_int(b->dtype);
    snprintf(fa, sizeof fa, "%s.atol", where);
    snprintf(fr, sizeof fr, "%s.rtol", where);
    if (cJSON_GetObjectItemCaseSensitive(obj, "init") != NULL)
        return LD_FAIL(c, where, "an output has no init");
    if ((rc = ld_tol(c, obj, "atol", fa, !isint, &b->atol, b->atol_expr)) != 0 ||
        (rc = ld_tol(c, obj, "rtol", fr, !isint, &b->rtol, b->rtol_expr)) != 0)
        return rc;
    if (b->atol < 0)
        return LD_FAIL(c, fa, "must be >= 0");
    if (b->rtol < 0)
        return LD_FAIL(c, fr, "must be >= 0");
    return 0;
}

static int ld_buffer(struct ld *c, const cJSON *obj, int i)
{
    static const char *const keys[] = {"name", "dtype", "shape", "role", "init", "atol", "rtol", NULL};
    struct spec *s = c->s;
    struct spec_buffer *b = &s->buffers[i];
    char where[32], field[48], role[16];
    int rc;

    snprintf(where, sizeof where, "buffers[%d]", i);
    if (!cJSON_IsObject(obj))
        return LD_FAIL(c, where, "must be an object");
    if ((rc = ld_keys(c, obj, where, keys)) != 0)
        return rc;
    snprintf(field, sizeof field, "%s.name", where);
    if ((rc = ld_str(c, obj, "name", field, 1, b->name, sizeof b->name)) != 0)
        return rc;
    if (!ld_is_ident(b->name))
        return LD_FAIL(c, field, "'%s' must be an identifier", b->name);
    if (spec_var_index(s, b->name) >= 0)
        return LD_FAIL(c, field, "'%s' is also a variable name", b->name);
    for (int j = 0; j < i; j++)
        if (strcmp(s->buffers[j].name, b->name) == 0)
            return LD_FAIL(c, field, "'%s' is used by buffers[%d] too", b->name, j);
    if ((rc = ld_dtype(c, obj, where, &b->dtype)) != 0 || (rc = ld_shape(c, obj, where, b)) != 0)
        return rc;
    snprintf(field, sizeof field, "%s.role", where);
    if ((rc = ld_str(c, obj, "role", field, 1, role, sizeof role)) != 0)
        return rc;
    if (strcmp(role, "input") == 0) {
        b->role = SPEC_INPUT;
        if (cJSON_GetObjectItemCaseSensitive(obj, "atol") != NULL ||
            cJSON_GetObjectItemCaseSensitive(obj, "rtol") != NULL)
            return LD_FAIL(c, where, "atol/rtol apply to outputs only");
        return ld_init(c, obj, where, b);
    }
    if (strcmp(role, "output") == 0) {
        b->role = SPEC_OUTPUT;
        b->dist = SPEC_DIST_NONE;
        return ld_tolerance(c, obj, where, b);
    }
    return LD_FAIL(c, field, "'%s' must be \"input\" or \"output\"", role);
}

int ld_buffers(struct ld *c, const cJSON *root)
{
    struct spec *s = c->s;
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "buffers");
    int rc, noutputs = 0;
    if (arr == NULL)
        return LD_FAIL(c, "buffers", "missing (the kernel's buffer arguments, in order)");
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) < 1)
        return LD_FAIL(c, "buffers", "must be a non-empty list");
    if (cJSON_GetArraySize(arr) > SPEC_MAX_BUFFERS)
        return LD_FAIL(c, "buffers", "more than %d buffers", SPEC_MAX_BUFFERS);
    for (const cJSON *it = arr->child; it != NULL; it = it->next) {
        if ((rc = ld_buffer(c, it, s->nbuffers)) != 0)
            return rc;
        noutputs += s->buffers[s->nbuffers].role == SPEC_OUTPUT;
        s->nbuffers++;
    }
    if (noutputs == 0)
        return LD_FAIL(c, "buffers", "no buffer has role \"output\"; nothing could be checked");
    return 0;
}

/* ------------------------------------------------------------------ */
/* Tests and benchmarks                                                */
/* ------------------------------------------------------------------ */

/* seed: an integer in 0..2^53 or a decimal string for the full uint64 range. */
static int ld_seed(struct ld *c, const cJSON *v, const char *field, uint64_t *out)
{
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (!ld_is_whole(d) || d < 0)
            return LD_FAIL(c, field, "must be an integer in 0..2^53 (or a decimal string)");
        *out = (uint64_t)d;
        return 0;
    }
    if (cJSON_IsString(v)) {
        const char *p = v->valuestring;
        char *end;
        size_t n = strlen(p);
        if (n == 0 || n > 20 || strspn(p, "0123456789") != n)
            return LD_FAIL(c, field, "'%.32s' is not a decimal uint64", p);
        errno = 0;
        unsigned long long x = strtoull(p, &end, 10);
        if (errno != 0 || *end != '\0')
            return LD_FAIL(c, field, "'%.32s' is out of the uint64 range", p);
        *out = (uint64_t)x;
        return 0;
    }
    return LD_FAIL(c, field, "must be an unsigned integer");
}

/* Check one evaluated case: constraints hold, every buffer has a positive size, sizes evaluate. */
static int ld_case_check(struct ld *c, const struct spec_case *k, const char *where)
{
    const struct spec *s = c->s;
    const char *names[SPEC_MAX_VARS];
    struct expr_vars vars;
    struct kj_err e;
    char label[256];
    int64_t v;

    spec_expr_vars(s, names, k->val, &vars);
    spec_case_label(s, k, label, sizeof label);
    for (int i = 0; i < s->nconstraints; i++) {
        kj_err_clear(&e);
        if (expr_eval(s->constraints[i], &vars, &v, &e) != 0)
            return LD_FAIL(c, where, "constraint '%s': %s", s->constraints[i], e.msg);
        if (v == 0)
            return LD_FAIL(c, where, "%s violates constraint '%s'", label, s->constraints[i]);
    }
    for (int b = 0; b < s->nbuffers; b++) {
        kj_err_clear(&e);
        if (spec_buffer_elems(s, b, k, &v, &e) != 0)
            return LD_FAIL(c, where, "%s: %s", label, e.msg);
    }
    for (int b = 0; b < s->nbuffers; b++) {
        double at, rt;
        kj_err_clear(&e);
        if (s->buffers[b].role == SPEC_OUTPUT && spec_tolerance(s, b, k, &at, &rt, &e) != 0)
            return LD_FAIL(c, where, "%s: %s", label, e.msg);
    }
    const char *sz[2] = {s->bytes_expr, s->flops_expr};
    for (int i = 0; i < 2; i++) {
        kj_err_clear(&e);
        if (sz[i][0] != '\0' && (expr_eval(sz[i], &vars, &v, &e) != 0 || v < 0))
            return LD_FAIL(c, where, "%s: %s '%s' %s", label, i ? "flops" : "bytes", sz[i],
                           e.msg[0] ? e.msg : "is negative");
    }
    return 0;
}

static int ld_case(struct ld *c, const cJSON *obj, const char *where, struct spec_case *k)
{
    const struct spec *s = c->s;
    char field[SPEC_MAX_NAME + 32];
    int rc;
    if (!cJSON_IsObject(obj))
        return LD_FAIL(c, where, "must be an object with one integer per variable and a seed");
    for (const cJSON *it = obj->child; it != NULL; it = it->next) {
        if (strcmp(it->string, "seed") != 0 && spec_var_index(s, it->string) < 0)
            return LD_FAIL(c, where, "unknown key '%.64s' (not a variable)", it->string);
        for (const cJSON *o = obj->child; o != it; o = o->next)
            if (strcmp(o->string, it->string) == 0)
                return LD_FAIL(c, where, "key '%.64s' appears twice", it->string);
    }
    for (int i = 0; i < s->nvars; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, s->vars[i]);
        snprintf(field, sizeof field, "%s.%s", where, s->vars[i]);
        if (v == NULL)
            return LD_FAIL(c, field, "missing");
        if (!cJSON_IsNumber(v) || !ld_is_whole(v->valuedouble) ||
            v->valuedouble < -2147483648.0 || v->valuedouble > 2147483647.0)
            return LD_FAIL(c, field, "must be an integer that fits in an int");
        k->val[i] = (int64_t)v->valuedouble;
    }
    const cJSON *seed = cJSON_GetObjectItemCaseSensitive(obj, "seed");
    snprintf(field, sizeof field, "%s.seed", where);
    if (seed == NULL)
        return LD_FAIL(c, field, "missing");
    if ((rc = ld_seed(c, seed, field, &k->seed)) != 0)
        return rc;
    return ld_case_check(c, k, where);
}

int ld_cases(struct ld *c, const cJSON *root, const char *key, struct spec_case *cases, int *n)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, key);
    char where[48];
    int rc;
    if (arr == NULL)
        return LD_FAIL(c, key, "missing (a list of {var: value, ..., \"seed\": N})");
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) < 1)
        return LD_FAIL(c, key, "must be a non-empty list of cases");
    if (cJSON_GetArraySize(arr) > SPEC_MAX_CASES)
        return LD_FAIL(c, key, "more than %d cases", SPEC_MAX_CASES);
    for (const cJSON *it = arr->child; it != NULL; it = it->next) {
        snprintf(where, sizeof where, "%s[%d]", key, *n);
        if ((rc = ld_case(c, it, where, &cases[*n])) != 0)
            return rc;
        (*n)++;
    }
    return 0;
}
