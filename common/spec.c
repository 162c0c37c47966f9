/*
 * spec.c - load and validate leaderboards/<name>/leaderboard.json into a struct spec.
 *
 * Called by kjudge-server at start (spec_load_all) and by the runner for the
 * board a job names (spec_load). Every problem is reported as
 * "<file>: <field>: <what is wrong>" so a board author can fix it without
 * reading this code; shape, constraint and size expressions are checked and
 * evaluated with expr.h. The format is documented in leaderboards/README.md.
 */
#include "spec.h"
#include "expr.h"
#include "fexpr.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define SPEC_MAX_FILE (1024 * 1024) /* leaderboard.json larger than this is refused */
#define SPEC_MAX_CONSTRAINTS 8
#define SPEC_MAX_SECONDS 86400.0    /* upper bound on any time limit */
#define SPEC_MAX_SAFE_INT 9007199254740992.0 /* 2^53: JSON numbers above lose precision */

/* Loading context: where errors go and what they name. */
struct ld {
    const char *path;     /* borrowed: ".../leaderboard.json", prefix of every message */
    struct spec *s;       /* borrowed: the spec being filled */
    struct kj_err *err;   /* borrowed: caller's error */
};

static const char *const dtype_names[] = {
    "float32", "float16", "bfloat16", "float64", "int8", "uint8", "int32", "uint32", "int64"
};
static const size_t dtype_sizes[] = {4, 2, 2, 8, 1, 1, 4, 4, 8};

/* ------------------------------------------------------------------ */
/* Error and small helpers                                             */
/* ------------------------------------------------------------------ */

static int ld_failf(struct ld *c, int src_line, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define LD_FAIL(c, field, ...) ld_failf((c), __LINE__, (field), __VA_ARGS__)

static int ld_failf(struct ld *c, int src_line, const char *field, const char *fmt, ...)
{
    char what[KJ_ERR_MSG];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return kj_errf(c->err, KJ_EINVAL, __FILE__, src_line, "%s: %s: %s", c->path, field, what);
}

/* 1 if d is a whole number with |d| <= 2^53 (exactly representable); no libm needed. */
static int is_whole(double d)
{
    if (!(d >= -SPEC_MAX_SAFE_INT && d <= SPEC_MAX_SAFE_INT))
        return 0;
    return d == (double)(int64_t)d;
}

static int is_ident(const char *v)
{
    if (v[0] == '\0' || !(isalpha((unsigned char)v[0]) || v[0] == '_'))
        return 0;
    for (const char *p = v; *p; p++)
        if (!(isalnum((unsigned char)*p) || *p == '_'))
            return 0;
    return 1;
}

static int is_board_name(const char *v)
{
    if (v[0] == '\0')
        return 0;
    for (const char *p = v; *p; p++)
        if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '_'))
            return 0;
    return 1;
}

static int is_gpu_name(const char *v)
{
    if (v[0] == '\0')
        return 0;
    for (const char *p = v; *p; p++)
        if (!(isalnum((unsigned char)*p) || *p == '_' || *p == '-'))
            return 0;
    return 1;
}

/* Reject keys of obj that are not in allowed (NULL-terminated) and duplicate keys. */
static int ld_keys(struct ld *c, const cJSON *obj, const char *where, const char *const *allowed)
{
    for (const cJSON *it = obj->child; it != NULL; it = it->next) {
        int known = 0;
        for (int i = 0; allowed[i] != NULL; i++)
            if (strcmp(it->string, allowed[i]) == 0)
                known = 1;
        if (!known)
            return LD_FAIL(c, where, "unknown key '%.64s'", it->string);
        for (const cJSON *o = obj->child; o != it; o = o->next)
            if (strcmp(o->string, it->string) == 0)
                return LD_FAIL(c, where, "key '%.64s' appears twice", it->string);
    }
    return 0;
}

/* Copy the string member key of obj into dst (size dstsz). required: absent is an error. */
static int ld_str(struct ld *c, const cJSON *obj, const char *key, const char *field,
                  int required, char *dst, size_t dstsz)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    dst[0] = '\0';
    if (v == NULL) {
        if (required)
            return LD_FAIL(c, field, "missing (a string is required)");
        return 0;
    }
    if (!cJSON_IsString(v))
        return LD_FAIL(c, field, "must be a string");
    if (strlen(v->valuestring) >= dstsz)
        return LD_FAIL(c, field, "too long (at most %zu characters)", dstsz - 1);
    if (v->valuestring[0] == '\0')
        return LD_FAIL(c, field, "must not be empty");
    memcpy(dst, v->valuestring, strlen(v->valuestring) + 1);
    return 0;
}

/* A finite number member; required or *out unchanged when absent. */
static int ld_num(struct ld *c, const cJSON *obj, const char *key, const char *field,
                  int required, double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (v == NULL)
        return required ? LD_FAIL(c, field, "missing (a number is required)") : 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return LD_FAIL(c, field, "must be a number");
    *out = v->valuedouble;
    return 0;
}

void spec_expr_vars(const struct spec *s, const char **names, const int64_t *values,
                           struct expr_vars *out)
{
    for (int i = 0; i < s->nvars; i++)
        names[i] = s->vars[i];
    out->n = s->nvars;
    out->names = names;
    out->values = values;
}

/* Check an expression's syntax and names; a failure names field. */
static int ld_expr(struct ld *c, const char *field, const char *text)
{
    const char *names[SPEC_MAX_VARS];
    struct expr_vars vars;
    struct kj_err e;
    kj_err_clear(&e);
    spec_expr_vars(c->s, names, NULL, &vars);
    if (expr_check(text, &vars, &e) != 0)
        return LD_FAIL(c, field, "%s", e.msg);
    return 0;
}

/* Copy an expression member (string, or an integer written as a number). */
static int ld_expr_item(struct ld *c, const cJSON *v, const char *field, char *dst)
{
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (!is_whole(d))
            return LD_FAIL(c, field, "must be an integer or an expression string");
        snprintf(dst, SPEC_MAX_EXPR, "%lld", (long long)d);
    } else if (cJSON_IsString(v)) {
        if (v->valuestring[0] == '\0')
            return LD_FAIL(c, field, "empty expression");
        if (strlen(v->valuestring) >= SPEC_MAX_EXPR)
            return LD_FAIL(c, field, "expression longer than %d characters", SPEC_MAX_EXPR - 1);
        memcpy(dst, v->valuestring, strlen(v->valuestring) + 1);
    } else {
        return LD_FAIL(c, field, "must be an expression string");
    }
    return ld_expr(c, field, dst);
}

/* ------------------------------------------------------------------ */
/* Top-level fields                                                    */
/* ------------------------------------------------------------------ */

/* "YYYY-MM-DDTHH:MM:SSZ" -> unix seconds; rejects impossible dates. */
static int parse_deadline(const char *v, int64_t *out)
{
    static const char pat[] = "dddd-dd-ddTdd:dd:ddZ";
    struct tm tm, back;
    if (strlen(v) != sizeof pat - 1)
        return -1;
    for (size_t i = 0; i < sizeof pat - 1; i++) {
        if (pat[i] == 'd' ? !isdigit((unsigned char)v[i]) : v[i] != pat[i])
            return -1;
    }
    memset(&tm, 0, sizeof tm);
    if (sscanf(v, "%4d-%2d-%2dT%2d:%2d:%2dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
               &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 6)
        return -1;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    back = tm;
    time_t t = timegm(&tm);
    if (t == (time_t)-1 || tm.tm_year != back.tm_year || tm.tm_mon != back.tm_mon ||
        tm.tm_mday != back.tm_mday || tm.tm_hour != back.tm_hour || tm.tm_min != back.tm_min ||
        tm.tm_sec != back.tm_sec)
        return -1;
    *out = (int64_t)t;
    return 0;
}

static int ld_header(struct ld *c, const cJSON *root, const char *dir)
{
    struct spec *s = c->s;
    char fpath[SPEC_MAX_PATH + SPEC_MAX_NAME + 2];
    struct stat st;
    const char *base = strrchr(dir, '/');
    int rc;

    base = base != NULL && base[1] != '\0' ? base + 1 : dir;
    if ((rc = ld_str(c, root, "name", "name", 1, s->name, sizeof s->name)) != 0)
        return rc;
    if (!is_board_name(s->name))
        return LD_FAIL(c, "name", "'%s' must match [a-z0-9_]+", s->name);
    if (strcmp(s->name, base) != 0)
        return LD_FAIL(c, "name", "'%s' must equal the folder name '%.64s'", s->name, base);
    if ((rc = ld_str(c, root, "title", "title", 1, s->title, sizeof s->title)) != 0)
        return rc;
    rc = ld_str(c, root, "description", "description", 1, s->description_file,
                sizeof s->description_file);
    if (rc != 0)
        return rc;
    if (strchr(s->description_file, '/') != NULL || s->description_file[0] == '.')
        return LD_FAIL(c, "description", "'%s' must be a file name in the leaderboard folder",
                       s->description_file);
    snprintf(fpath, sizeof fpath, "%s/%s", dir, s->description_file);
    if (stat(fpath, &st) != 0 || !S_ISREG(st.st_mode))
        return LD_FAIL(c, "description", "file '%s' does not exist in %.200s",
                       s->description_file, dir);
    if ((rc = ld_str(c, root, "deadline", "deadline", 0, s->deadline, sizeof s->deadline)) != 0)
        return rc;
    if (s->deadline[0] != '\0' && parse_deadline(s->deadline, &s->deadline_unix) != 0)
        return LD_FAIL(c, "deadline", "'%s' is not a UTC time like 2027-03-15T00:00:00Z",
                       s->deadline);
    if ((rc = ld_str(c, root, "ranking", "ranking", 1, s->ranking, sizeof s->ranking)) != 0)
        return rc;
    if (strcmp(s->ranking, "geomean") != 0)
        return LD_FAIL(c, "ranking", "'%s' is not supported (only \"geomean\")", s->ranking);
    return 0;
}

static int ld_gpus(struct ld *c, const cJSON *root)
{
    struct spec *s = c->s;
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "gpus");
    char field[32];
    if (arr == NULL)
        return LD_FAIL(c, "gpus", "missing (a list of GPU types such as [\"H200\"])");
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) < 1)
        return LD_FAIL(c, "gpus", "must be a non-empty list of GPU type names");
    if (cJSON_GetArraySize(arr) > SPEC_MAX_GPUS)
        return LD_FAIL(c, "gpus", "more than %d GPU types", SPEC_MAX_GPUS);
    for (const cJSON *it = arr->child; it != NULL; it = it->next) {
        snprintf(field, sizeof field, "gpus[%d]", s->ngpus);
        if (!cJSON_IsString(it) || !is_gpu_name(it->valuestring) ||
            strlen(it->valuestring) >= SPEC_MAX_NAME)
            return LD_FAIL(c, field, "must be a GPU type name like \"H200\" ([A-Za-z0-9_-]+)");
        for (int j = 0; j < s->ngpus; j++)
            if (strcmp(s->gpus[j], it->valuestring) == 0)
                return LD_FAIL(c, field, "'%s' is listed twice", it->valuestring);
        memcpy(s->gpus[s->ngpus], it->valuestring, strlen(it->valuestring) + 1);
        s->ngpus++;
    }
    return 0;
}

/* "resolution_pct": {"H200": 0.5, ...}: for some of the board's GPU types,
 * how large a score difference is significant there (docs/timing.md). */
static int ld_resolution(struct ld *c, const cJSON *root)
{
    struct spec *s = c->s;
    const cJSON *obj = cJSON_GetObjectItemCaseSensitive(root, "resolution_pct");
    char field[32 + SPEC_MAX_NAME];
    if (obj == NULL)
        return 0;
    if (!cJSON_IsObject(obj))
        return LD_FAIL(c, "resolution_pct", "must be an object of GPU type: percent, like "
                       "{\"H200\": 0.5}");
    for (const cJSON *it = obj->child; it != NULL; it = it->next) {
        int g = -1;
        for (int j = 0; j < s->ngpus; j++)
            if (strcmp(s->gpus[j], it->string) == 0)
                g = j;
        snprintf(field, sizeof field, "resolution_pct.%.63s", it->string);
        if (g < 0)
            return LD_FAIL(c, field, "'%.63s' is not one of the board's gpus", it->string);
        if (s->resolution_pct[g] > 0)
            return LD_FAIL(c, field, "appears twice");
        if (!cJSON_IsNumber(it) || !(it->valuedouble > 0) || it->valuedouble > 100)
            return LD_FAIL(c, field, "must be a percentage above 0 and at most 100");
        s->resolution_pct[g] = it->valuedouble;
    }
    return 0;
}

static int ld_vars(struct ld *c, const cJSON *root)
{
    static const char *const reserved[] = {"seed", "min", "max", "ceil_div", NULL};
    struct spec *s = c->s;
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "vars");
    char field[32];
    if (arr == NULL)
        return LD_FAIL(c, "vars", "missing (a list of shape variable names)");
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) < 1)
        return LD_FAIL(c, "vars", "must be a non-empty list of identifiers");
    if (cJSON_GetArraySize(arr) > SPEC_MAX_VARS)
        return LD_FAIL(c, "vars", "more than %d variables", SPEC_MAX_VARS);
    for (const cJSON *it = arr->child; it != NULL; it = it->next) {
        snprintf(field, sizeof field, "vars[%d]", s->nvars);
        if (!cJSON_IsString(it) || !is_ident(it->valuestring) ||
            strlen(it->valuestring) >= SPEC_MAX_NAME)
            return LD_FAIL(c, field, "must be an identifier ([A-Za-z_][A-Za-z0-9_]*)");
        for (int j = 0; reserved[j] != NULL; j++)
            if (strcmp(reserved[j], it->valuestring) == 0)
                return LD_FAIL(c, field, "'%s' is a reserved name", it->valuestring);
        for (int j = 0; j < s->nvars; j++)
            if (strcmp(s->vars[j], it->valuestring) == 0)
                return LD_FAIL(c, field, "'%s' is listed twice", it->valuestring);
        memcpy(s->vars[s->nvars], it->valuestring, strlen(it->valuestring) + 1);
        s->nvars++;
    }
    return 0;
}

static int ld_constraints(struct ld *c, const cJSON *root)
{
    struct spec *s = c->s;
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "constraints");
    char field[40];
    int rc;
    if (arr == NULL)
        return 0;
    if (!cJSON_IsArray(arr))
        return LD_FAIL(c, "constraints", "must be a list of expressions");
    if (cJSON_GetArraySize(arr) > SPEC_MAX_CONSTRAINTS)
        return LD_FAIL(c, "constraints", "more than %d constraints", SPEC_MAX_CONSTRAINTS);
    for (const cJSON *it = arr->child; it != NULL; it = it->next) {
        snprintf(field, sizeof field, "constraints[%d]", s->nconstraints);
        if (!cJSON_IsString(it))
            return LD_FAIL(c, field, "must be an expression string");
        if ((rc = ld_expr_item(c, it, field, s->constraints[s->nconstraints])) != 0)
            return rc;
        s->nconstraints++;
    }
    return 0;
}

static int ld_sizes(struct ld *c, const cJSON *root)
{
    struct spec *s = c->s;
    const cJSON *v;
    int rc;
    if ((v = cJSON_GetObjectItemCaseSensitive(root, "bytes")) != NULL &&
        (rc = ld_expr_item(c, v, "bytes", s->bytes_expr)) != 0)
        return rc;
    if ((v = cJSON_GetObjectItemCaseSensitive(root, "flops")) != NULL &&
        (rc = ld_expr_item(c, v, "flops", s->flops_expr)) != 0)
        return rc;
    return 0;
}

static int ld_limits(struct ld *c, const cJSON *root)
{
    static const char *const keys[] = {"test", "benchmark", "leaderboard", NULL};
    struct spec *s = c->s;
    const cJSON *obj = cJSON_GetObjectItemCaseSensitive(root, "time_limits_s");
    double *dst[] = {&s->limit_test_s, &s->limit_benchmark_s, &s->limit_leaderboard_s};
    char field[48];
    int rc;
    if (obj == NULL)
        return LD_FAIL(c, "time_limits_s", "missing ({\"test\": S, \"benchmark\": S, \"leaderboard\": S})");
    if (!cJSON_IsObject(obj))
        return LD_FAIL(c, "time_limits_s", "must be an object");
    if ((rc = ld_keys(c, obj, "time_limits_s", keys)) != 0)
        return rc;
    for (int i = 0; keys[i] != NULL; i++) {
        snprintf(field, sizeof field, "time_limits_s.%s", keys[i]);
        if ((rc = ld_num(c, obj, keys[i], field, 1, dst[i])) != 0)
            return rc;
        if (*dst[i] <= 0 || *dst[i] > SPEC_MAX_SECONDS)
            return LD_FAIL(c, field, "must be positive seconds (at most %.0f)", SPEC_MAX_SECONDS);
    }
    return 0;
}

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
    for (int i = 0; i < (int)(sizeof dtype_names / sizeof dtype_names[0]); i++) {
        if (strcmp(name, dtype_names[i]) == 0) {
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
    if (b->dist == SPEC_DIST_INT && (!is_whole(b->p0) || !is_whole(b->p1) || b->p0 > b->p1))
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
    if (!is_ident(b->name))
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

static int ld_buffers(struct ld *c, const cJSON *root)
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
        if (!is_whole(d) || d < 0)
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
        if (!cJSON_IsNumber(v) || !is_whole(v->valuedouble) ||
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

static int ld_cases(struct ld *c, const cJSON *root, const char *key, struct spec_case *cases, int *n)
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

/* ------------------------------------------------------------------ */
/* Loading                                                             */
/* ------------------------------------------------------------------ */

/* Read path into a new NUL-terminated buffer (caller frees). */
static int read_text(const char *path, char **out, struct kj_err *err)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long len;
    int rc = 0;
    *out = NULL;
    if (f == NULL)
        return KJ_FAIL(err, KJ_ENOTFOUND, "%s: cannot open: %s", path, strerror(errno));
    if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        rc = KJ_FAIL(err, KJ_EIO, "%s: cannot read: %s", path, strerror(errno));
        goto out;
    }
    if (len > SPEC_MAX_FILE) {
        rc = KJ_FAIL(err, KJ_ELIMIT, "%s: larger than %d bytes", path, SPEC_MAX_FILE);
        goto out;
    }
    if ((buf = malloc((size_t)len + 1)) == NULL) {
        rc = KJ_FAIL(err, KJ_ENOMEM, "%s: out of memory", path);
        goto out;
    }
    if (fread(buf, 1, (size_t)len, f) != (size_t)len) {
        rc = KJ_FAIL(err, KJ_EIO, "%s: short read", path);
        goto out;
    }
    buf[len] = '\0';
    *out = buf;
    buf = NULL;
out:
    free(buf);
    fclose(f);
    return rc;
}

static int ld_all(struct ld *c, const cJSON *root, const char *dir)
{
    static const char *const keys[] = {
        "name", "title", "description", "deadline", "gpus", "vars", "constraints", "buffers",
        "tests", "benchmarks", "bytes", "flops", "ranking", "time_limits_s", "public_reference",
        "resolution_pct", NULL
    };
    struct spec *s = c->s;
    int rc;
    if (!cJSON_IsObject(root))
        return LD_FAIL(c, "(top level)", "must be a JSON object");
    if ((rc = ld_keys(c, root, "(top level)", keys)) != 0 || (rc = ld_header(c, root, dir)) != 0 ||
        (rc = ld_gpus(c, root)) != 0 || (rc = ld_resolution(c, root)) != 0 ||
        (rc = ld_vars(c, root)) != 0 ||
        (rc = ld_constraints(c, root)) != 0 || (rc = ld_buffers(c, root)) != 0 ||
        (rc = ld_sizes(c, root)) != 0 || (rc = ld_limits(c, root)) != 0)
        return rc;
    const cJSON *pub = cJSON_GetObjectItemCaseSensitive(root, "public_reference");
    if (pub != NULL && !cJSON_IsBool(pub))
        return LD_FAIL(c, "public_reference", "must be true or false");
    s->public_reference = cJSON_IsTrue(pub);
    if ((rc = ld_cases(c, root, "tests", s->tests, &s->ntests)) != 0)
        return rc;
    return ld_cases(c, root, "benchmarks", s->benchmarks, &s->nbenchmarks);
}

/* Line of the first byte of text that is not valid UTF-8 (RFC 3629: no
 * overlong forms, surrogates or code points above U+10FFFF), 0 if none.
 * cJSON copies string bytes as they are, and the server serves the titles
 * and names of a board as JSON text. */
static int utf8_bad_line(const char *text)
{
    const unsigned char *p = (const unsigned char *)text;
    int line = 1;
    while (*p) {
        unsigned c = *p, n, lo = 0x80, hi = 0xBF;
        if (c < 0x80) {
            line += c == '\n';
            p++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF)
            n = 1;
        else if (c >= 0xE0 && c <= 0xEF)
            n = 2;
        else if (c >= 0xF0 && c <= 0xF4)
            n = 3;
        else
            return line;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
        else if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
        if (p[1] < lo || p[1] > hi)
            return line;
        for (unsigned i = 2; i <= n; i++)
            if (p[i] < 0x80 || p[i] > 0xBF)
                return line;
        p += n + 1;
    }
    return 0;
}

int spec_parse(const char *text, const char *dir, struct spec **out, struct kj_err *err)
{
    char path[SPEC_MAX_PATH + 32], gen[SPEC_MAX_PATH + 32];
    cJSON *root = NULL;
    struct spec *s = NULL;
    struct stat st;
    int rc;

    *out = NULL;
    if (strlen(dir) >= SPEC_MAX_PATH)
        return KJ_FAIL(err, KJ_EINVAL, "%.64s...: path too long", dir);
    snprintf(path, sizeof path, "%s/leaderboard.json", dir);
    if ((rc = utf8_bad_line(text)) != 0) {
        rc = KJ_FAIL(err, KJ_EINVAL, "%s: line %d: not valid UTF-8", path, rc);
        goto out;
    }
    if ((root = cJSON_Parse(text)) == NULL) {
        const char *at = cJSON_GetErrorPtr();
        int line = 1;
        for (const char *p = text; at != NULL && p < at && *p; p++)
            line += *p == '\n';
        rc = KJ_FAIL(err, KJ_EINVAL, "%s: line %d: not valid JSON", path, line);
        goto out;
    }
    if ((s = calloc(1, sizeof *s)) == NULL) {
        rc = KJ_FAIL(err, KJ_ENOMEM, "%s: out of memory", path);
        goto out;
    }
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    snprintf(gen, sizeof gen, "%s/generate.cu", dir);
    s->has_generate = stat(gen, &st) == 0 && S_ISREG(st.st_mode);
    struct ld c = {path, s, err};
    if ((rc = ld_all(&c, root, dir)) != 0)
        goto out;
    *out = s;
    s = NULL;
out:
    spec_free(s);
    cJSON_Delete(root);
    return rc;
}

int spec_load(const char *dir, struct spec **out, struct kj_err *err)
{
    char path[SPEC_MAX_PATH + 32];
    char *text = NULL;
    int rc;

    *out = NULL;
    if (strlen(dir) >= SPEC_MAX_PATH)
        return KJ_FAIL(err, KJ_EINVAL, "%.64s...: path too long", dir);
    snprintf(path, sizeof path, "%s/leaderboard.json", dir);
    if ((rc = read_text(path, &text, err)) == 0)
        rc = spec_parse(text, dir, out, err);
    free(text);
    return rc;
}

void spec_free(struct spec *s)
{
    free(s);
}

/* ------------------------------------------------------------------ */
/* Queries                                                             */
/* ------------------------------------------------------------------ */

size_t spec_dtype_size(enum spec_dtype t)
{
    KJ_ASSERT((unsigned)t < sizeof dtype_sizes / sizeof dtype_sizes[0]);
    return dtype_sizes[t];
}

const char *spec_dtype_name(enum spec_dtype t)
{
    KJ_ASSERT((unsigned)t < sizeof dtype_names / sizeof dtype_names[0]);
    return dtype_names[t];
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

/* ------------------------------------------------------------------ */
/* All leaderboards under a root                                       */
/* ------------------------------------------------------------------ */

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names of root's subfolders that hold a leaderboard.json; caller frees each and the array. */
static int list_boards(const char *root, char ***names, int *n, struct kj_err *err)
{
    DIR *d = opendir(root);
    struct dirent *de;
    char path[SPEC_MAX_PATH + 300];
    struct stat st;
    int cap = 0, rc = 0;

    *names = NULL;
    *n = 0;
    if (d == NULL)
        return KJ_FAIL(err, KJ_ENOTFOUND, "%s: cannot open leaderboards folder: %s", root,
                       strerror(errno));
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s/leaderboard.json", root, de->d_name);
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 8;
            char **grown = realloc(*names, (size_t)cap * sizeof *grown);
            if (grown == NULL) {
                rc = KJ_FAIL(err, KJ_ENOMEM, "out of memory listing %s", root);
                break;
            }
            *names = grown;
        }
        if (((*names)[*n] = strdup(de->d_name)) == NULL) {
            rc = KJ_FAIL(err, KJ_ENOMEM, "out of memory listing %s", root);
            break;
        }
        (*n)++;
    }
    closedir(d);
    if (*n > 1)
        qsort(*names, (size_t)*n, sizeof **names, cmp_names);
    return rc;
}

int spec_load_all(const char *root, struct spec ***out, int *n, struct kj_err *err)
{
    char **names = NULL;
    struct spec **specs = NULL;
    char dir[SPEC_MAX_PATH + 300];
    int count = 0, loaded = 0, rc;

    *out = NULL;
    *n = 0;
    if ((rc = list_boards(root, &names, &count, err)) != 0)
        goto out;
    if (count > 0 && (specs = calloc((size_t)count, sizeof *specs)) == NULL) {
        rc = KJ_FAIL(err, KJ_ENOMEM, "out of memory loading %s", root);
        goto out;
    }
    for (loaded = 0; loaded < count; loaded++) {
        snprintf(dir, sizeof dir, "%s/%s", root, names[loaded]);
        if ((rc = spec_load(dir, &specs[loaded], err)) != 0)
            goto out;
    }
    *out = specs;
    *n = count;
    specs = NULL;
out:
    spec_free_all(specs, loaded);
    for (int i = 0; i < count; i++)
        free(names[i]);
    free(names);
    return rc;
}

void spec_free_all(struct spec **specs, int n)
{
    if (specs == NULL)
        return;
    for (int i = 0; i < n; i++)
        spec_free(specs[i]);
    free(specs);
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
