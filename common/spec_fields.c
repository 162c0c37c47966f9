/*
 * spec_fields.c - leaderboard.json's top-level fields, and the field readers
 * every part of the loader uses.
 *
 * Called by spec.c's load (ld_all) in the order the fields depend on each
 * other: header (name, title, description, deadline), GPU types and their
 * resolution, variables, constraints, sizes (bytes, flops) and time
 * limits. Each reader checks one value and fails with its field's name.
 */
#include "spec_int.h"
#include "expr.h"
#include "fexpr.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* ------------------------------------------------------------------ */
/* Error and small helpers                                             */
/* ------------------------------------------------------------------ */

int ld_failf(struct ld *c, int src_line, const char *field, const char *fmt, ...)
{
    char what[KJ_ERR_MSG];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return kj_errf(c->err, KJ_EINVAL, __FILE__, src_line, "%s: %s: %s", c->path, field, what);
}

/* 1 if d is a whole number with |d| <= 2^53 (exactly representable); no libm needed. */
int ld_is_whole(double d)
{
    if (!(d >= -SPEC_MAX_SAFE_INT && d <= SPEC_MAX_SAFE_INT))
        return 0;
    return d == (double)(int64_t)d;
}

int ld_is_ident(const char *v)
{
    if (v[0] == '\0' || !(isalpha((unsigned char)v[0]) || v[0] == '_'))
        return 0;
    for (const char *p = v; *p; p++)
        if (!(isalnum((unsigned char)*p) || *p == '_'))
            return 0;
    return 1;
}

int ld_is_board_name(const char *v)
{
    if (v[0] == '\0')
        return 0;
    for (const char *p = v; *p; p++)
        if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '_'))
            return 0;
    return 1;
}

int ld_is_gpu_name(const char *v)
{
    if (v[0] == '\0')
        return 0;
    for (const char *p = v; *p; p++)
        if (!(isalnum((unsigned char)*p) || *p == '_' || *p == '-'))
            return 0;
    return 1;
}

/* Reject keys of obj that are not in allowed (NULL-terminated) and duplicate keys. */
int ld_keys(struct ld *c, const cJSON *obj, const char *where, const char *const *allowed)
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
int ld_str(struct ld *c, const cJSON *obj, const char *key, const char *field,
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
int ld_num(struct ld *c, const cJSON *obj, const char *key, const char *field,
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


/* Check an expression's syntax and names; a failure names field. */
int ld_expr(struct ld *c, const char *field, const char *text)
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
int ld_expr_item(struct ld *c, const cJSON *v, const char *field, char *dst)
{
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (!ld_is_whole(d))
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

int spec_parse_utc(const char *v, int64_t *out)
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

int ld_header(struct ld *c, const cJSON *root, const char *dir)
{
    struct spec *s = c->s;
    char fpath[SPEC_MAX_PATH + SPEC_MAX_NAME + 2];
    struct stat st;
    const char *base = strrchr(dir, '/');
    int rc;

    base = base != NULL && base[1] != '\0' ? base + 1 : dir;
    if ((rc = ld_str(c, root, "name", "name", 1, s->name, sizeof s->name)) != 0)
        return rc;
    if (!ld_is_board_name(s->name))
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
    if (s->deadline[0] != '\0' && spec_parse_utc(s->deadline, &s->deadline_unix) != 0)
        return LD_FAIL(c, "deadline", "'%s' is not a UTC time like 2027-03-15T00:00:00Z",
                       s->deadline);
    if ((rc = ld_str(c, root, "ranking", "ranking", 1, s->ranking, sizeof s->ranking)) != 0)
        return rc;
    if (strcmp(s->ranking, "geomean") != 0)
        return LD_FAIL(c, "ranking", "'%s' is not supported (only \"geomean\")", s->ranking);
    char score[16];
    if ((rc = ld_str(c, root, "score", "score", 0, score, sizeof score)) != 0)
        return rc;
    if (score[0] != '\0' && strcmp(score, "events") != 0 && strcmp(score, "gpu_time") != 0)
        return LD_FAIL(c, "score", "'%s' is not a measure (\"events\" or \"gpu_time\")", score);
    s->score_gpu_time = strcmp(score, "events") != 0; /* absent: GPU time (docs/timing.md 8) */
    return 0;
}

int ld_gpus(struct ld *c, const cJSON *root)
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
        if (!cJSON_IsString(it) || !ld_is_gpu_name(it->valuestring) ||
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

/* One resolution object, key ("resolution_pct" or "gpu_time_resolution_pct"):
 * {"H200": 0.5, ...} for some of the board's GPU types into pct[]. */
static int ld_resolution_obj(struct ld *c, const cJSON *root, const char *key, double *pct)
{
    struct spec *s = c->s;
    const cJSON *obj = cJSON_GetObjectItemCaseSensitive(root, key);
    char field[48 + SPEC_MAX_NAME];
    if (obj == NULL)
        return 0;
    if (!cJSON_IsObject(obj))
        return LD_FAIL(c, key, "must be an object of GPU type: percent, like {\"H200\": 0.5}");
    for (const cJSON *it = obj->child; it != NULL; it = it->next) {
        int g = -1;
        for (int j = 0; j < s->ngpus; j++)
            if (strcmp(s->gpus[j], it->string) == 0)
                g = j;
        snprintf(field, sizeof field, "%s.%.63s", key, it->string);
        if (g < 0)
            return LD_FAIL(c, field, "'%.63s' is not one of the board's gpus", it->string);
        if (pct[g] > 0)
            return LD_FAIL(c, field, "appears twice");
        if (!cJSON_IsNumber(it) || !(it->valuedouble > 0) || it->valuedouble > 100)
            return LD_FAIL(c, field, "must be a percentage above 0 and at most 100");
        pct[g] = it->valuedouble;
    }
    return 0;
}

/* "resolution_pct" and "gpu_time_resolution_pct": for some of the board's
 * GPU types, how large a difference of event scores and of GPU-time scores
 * is significant there (docs/timing.md, "The resolution"). */
int ld_resolution(struct ld *c, const cJSON *root)
{
    int rc = ld_resolution_obj(c, root, "resolution_pct", c->s->resolution_pct);
    return rc != 0 ? rc : ld_resolution_obj(c, root, "gpu_time_resolution_pct",
                                            c->s->gpu_resolution_pct);
}

int ld_vars(struct ld *c, const cJSON *root)
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
        if (!cJSON_IsString(it) || !ld_is_ident(it->valuestring) ||
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

int ld_constraints(struct ld *c, const cJSON *root)
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

int ld_sizes(struct ld *c, const cJSON *root)
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

int ld_limits(struct ld *c, const cJSON *root)
{
    static const char *const keys[] = {"test", "benchmark", "leaderboard", NULL};
    static const char *const allowed[] = {"test", "benchmark", "leaderboard", "tools", NULL};
    struct spec *s = c->s;
    const cJSON *obj = cJSON_GetObjectItemCaseSensitive(root, "time_limits_s");
    double *dst[] = {&s->limit_test_s, &s->limit_benchmark_s, &s->limit_leaderboard_s};
    char field[48];
    int rc;
    if (obj == NULL)
        return LD_FAIL(c, "time_limits_s", "missing ({\"test\": S, \"benchmark\": S, \"leaderboard\": S})");
    if (!cJSON_IsObject(obj))
        return LD_FAIL(c, "time_limits_s", "must be an object");
    if ((rc = ld_keys(c, obj, "time_limits_s", allowed)) != 0)
        return rc;
    for (int i = 0; keys[i] != NULL; i++) {
        snprintf(field, sizeof field, "time_limits_s.%s", keys[i]);
        if ((rc = ld_num(c, obj, keys[i], field, 1, dst[i])) != 0)
            return rc;
        if (*dst[i] <= 0 || *dst[i] > SPEC_MAX_SECONDS)
            return LD_FAIL(c, field, "must be positive seconds (at most %.0f)", SPEC_MAX_SECONDS);
    }
    /* Optional: profile and sanitize jobs' limit on this board (0 = the runner's). */
    s->limit_tools_s = 0;
    if ((rc = ld_num(c, obj, "tools", "time_limits_s.tools", 0, &s->limit_tools_s)) != 0)
        return rc;
    if (cJSON_GetObjectItemCaseSensitive(obj, "tools") != NULL &&
        (s->limit_tools_s <= 0 || s->limit_tools_s > SPEC_MAX_TOOL_S))
        return LD_FAIL(c, "time_limits_s.tools", "must be positive seconds (at most %.0f)",
                       SPEC_MAX_TOOL_S);
    return 0;
}
