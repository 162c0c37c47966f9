/*
 * result_walk.c - the walk over a runner's result that needs no job: the
 * path and refusals of a check, pass 1 (the raw text) and pass 2 (a copy
 * through the schema tables of result_check.c).
 *
 * result_check.c runs the passes and then checks the copy against the job
 * and its board (pass 3). Pass 1 catches what cJSON would hide (a NUL
 * cuts a string) or choke on (nesting, value count); pass 2 keeps only the
 * keys the protocol knows, each of its type, range and length, names in
 * valid UTF-8 and free text repaired to it.
 */
#include "result_int.h"
#include "kj_utf8.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VAR_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_"

/* ------------------------------------------------------------------ */
/* One check in progress                                               */
/* ------------------------------------------------------------------ */

/* Refuse the result: "PATH: message" (or "message" at the top), with the
 * code that PATH implies. Returns KJ_EINVAL. */
static int rc_vfail(struct rc *c, const char *fmt, va_list ap)
{
    char msg[KJ_ERR_MSG];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (strncmp(c->path, "verdict", 7) == 0 && (c->path[7] == '\0' || c->path[7] == '.'))
        c->out->code = "bad_verdict";
    else if (strncmp(c->path, "score_ns", 8) == 0)
        c->out->code = "bad_score";
    else
        c->out->code = "bad_result";
    if (c->plen > 0)
        return KJ_FAIL(c->err, KJ_EINVAL, "%s: %s", c->path, msg);
    return KJ_FAIL(c->err, KJ_EINVAL, "%s", msg);
}

int rc_fail(struct rc *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = rc_vfail(c, fmt, ap);
    va_end(ap);
    return rc;
}

/* rc_fail at key below the current path. */
int rc_fail_at(struct rc *c, const char *key, const char *fmt, ...)
{
    va_list ap;
    rc_push(c, key, 0);
    va_start(ap, fmt);
    int rc = rc_vfail(c, fmt, ap);
    va_end(ap);
    return rc;
}

/* Descend into key (or [index] when key is NULL); returns the length to restore. */
size_t rc_push(struct rc *c, const char *key, int index)
{
    size_t saved = c->plen, room = sizeof c->path - c->plen;
    int n;
    if (key != NULL)
        n = snprintf(c->path + c->plen, room, "%s%.40s", c->plen > 0 ? "." : "", key);
    else
        n = snprintf(c->path + c->plen, room, "[%d]", index);
    c->plen = n < 0 || (size_t)n >= room ? sizeof c->path - 1 : c->plen + (size_t)n;
    return saved;
}

void rc_pop(struct rc *c, size_t saved)
{
    c->plen = saved;
    c->path[saved] = '\0';
}

/* Note an unknown key (at c->path + key) that is left out. */
void rc_dropped(struct rc *c, const char *key)
{
    struct rcheck_out *o = c->out;
    char safe[48];
    int n;
    o->ndropped++;
    if (c->dlen + 1 >= sizeof o->dropped)
        return;
    kj_printable(safe, sizeof safe, key, 40);
    n = snprintf(o->dropped + c->dlen, sizeof o->dropped - c->dlen, "%s%s%s%s",
                 c->dlen > 0 ? "," : "", c->path, c->plen > 0 ? "." : "", safe);
    c->dlen = n < 0 || (size_t)n >= sizeof o->dropped - c->dlen ? sizeof o->dropped - 1
                                                                : c->dlen + (size_t)n;
}

/* ------------------------------------------------------------------ */
/* Pass 1: the raw text                                                */
/* ------------------------------------------------------------------ */

/* Size, nesting and value count of text, and no NUL: neither a raw byte nor
 * a \u0000 escape (cJSON would end the string there and store the rest of
 * nothing). Strings are skipped with their escapes; the rest is left to the
 * parser. */
int rc_scan(struct rc *c, const char *text, size_t len)
{
    size_t nodes = 1;
    int depth = 0, in_str = 0;
    for (size_t i = 0; i < len; i++) {
        char ch = text[i];
        if (ch == '\0')
            return rc_fail(c, "the result holds a NUL byte (offset %zu)", i);
        if (in_str) {
            if (ch == '"') {
                in_str = 0;
            } else if (ch == '\\' && i + 1 < len) {
                if (text[i + 1] == 'u' && len - i >= 6 && memcmp(text + i + 2, "0000", 4) == 0)
                    return rc_fail(c, "the result holds \\u0000, a NUL character (offset %zu)",
                                   i);
                i++;
            }
            continue;
        }
        if (ch == '"') {
            in_str = 1;
        } else if (ch == '{' || ch == '[') {
            if (++depth > RCHECK_MAX_DEPTH)
                return rc_fail(c, "the result is nested deeper than %d levels (offset %zu)",
                               RCHECK_MAX_DEPTH, i);
            nodes++;
        } else if (ch == '}' || ch == ']') {
            depth--;
        } else if (ch == ',' && ++nodes > RCHECK_MAX_NODES) {
            return rc_fail(c, "the result has more than %d values", RCHECK_MAX_NODES);
        }
    }
    return KJ_OK;
}

/* ------------------------------------------------------------------ */
/* Pass 2: copy through the schema                                     */
/* ------------------------------------------------------------------ */

static const char *kind_name(enum rc_kind k)
{
    switch (k) {
    case RK_STR: return "a string";
    case RK_NUM: return "a number";
    case RK_INT: return "a whole number";
    case RK_BOOL: return "true or false";
    case RK_OBJ: return "an object";
    case RK_ARR: return "a list";
    case RK_SHAPE: return "an object of shape variables";
    }
    return "?";
}

/* s[0..n) with every byte that does not start a valid UTF-8 sequence
 * replaced by U+FFFD, cut at a character boundary so that it stays within
 * max bytes (a U+FFFD is 3 bytes for 1, so the repaired text can grow past
 * the limit the original met, and the stored text must pass the same check
 * again); a new string (caller frees) or NULL. */
static char *utf8_repair(const char *s, size_t n, size_t max)
{
    const unsigned char *u = (const unsigned char *)s;
    char *out = malloc(3 * n + 1), *o = out;
    if (out == NULL)
        return NULL;
    for (size_t i = 0; i < n;) {
        size_t l = kj_utf8_decode(u + i, n - i, NULL);
        const char *from = l == 0 ? "\xEF\xBF\xBD" : s + i;
        size_t len = l == 0 ? 3 : l;
        if ((size_t)(o - out) + len > max)
            break;
        memcpy(o, from, len);
        o += len;
        i += l == 0 ? 1 : l;
    }
    *o = '\0';
    return out;
}

static int rc_string(struct rc *c, const struct rc_field *f, const cJSON *in, cJSON **out)
{
    size_t n = strlen(in->valuestring), bad = 0;
    int valid;
    if ((double)n > f->hi)
        return rc_fail(c, "%zu bytes, more than %.0f", n, f->hi);
    /* cJSON's strings end at their first NUL, so kj_utf8_valid sees none. */
    if (!(valid = kj_utf8_valid(in->valuestring, n, &bad)) && !(f->flags & RF_TEXT))
        return rc_fail(c, "not valid UTF-8 (byte %zu of the string)", bad);
    if (!valid) {
        char *fixed = utf8_repair(in->valuestring, n, (size_t)f->hi);
        *out = fixed != NULL ? cJSON_CreateString(fixed) : NULL;
        free(fixed);
    } else {
        *out = cJSON_CreateString(in->valuestring);
    }
    return *out != NULL ? KJ_OK : KJ_ENOMEM;
}

static int rc_number(struct rc *c, const struct rc_field *f, const cJSON *in, cJSON **out)
{
    double v = in->valuedouble;
    if ((f->flags & RF_NANSTR) && cJSON_IsString(in)) {
        if (strcmp(in->valuestring, "nan") != 0 && strcmp(in->valuestring, "inf") != 0 &&
            strcmp(in->valuestring, "-inf") != 0)
            return rc_fail(c, "must be a number, \"nan\", \"inf\" or \"-inf\"");
        *out = cJSON_CreateString(in->valuestring);
        return *out != NULL ? KJ_OK : KJ_ENOMEM;
    }
    if (!cJSON_IsNumber(in))
        return rc_fail(c, "must be %s", kind_name(f->kind));
    if (!isfinite(v))
        return rc_fail(c, "must be a finite number");
    if (f->kind == RK_INT && v != floor(v))
        return rc_fail(c, "%.17g is not a whole number", v);
    if (v < f->lo || v > f->hi)
        return rc_fail(c, "%.17g is outside %.17g..%.17g", v, f->lo, f->hi);
    *out = cJSON_CreateNumber(v);
    return *out != NULL ? KJ_OK : KJ_ENOMEM;
}

/* A shape: {VAR: whole number}; which variables is checked against the board later. */
static int rc_shape(struct rc *c, const cJSON *in, cJSON **out)
{
    int n = 0;
    if ((*out = cJSON_CreateObject()) == NULL)
        return KJ_ENOMEM;
    for (const cJSON *it = in->child; it != NULL; it = it->next) {
        size_t kl = strlen(it->string);
        if (++n > SPEC_MAX_VARS)
            return rc_fail(c, "more than %d variables", SPEC_MAX_VARS);
        if (kl == 0 || kl >= SPEC_MAX_NAME || strspn(it->string, VAR_CHARS) != kl)
            return rc_fail(c, "a key is not a variable name");
        if (cJSON_GetObjectItemCaseSensitive(*out, it->string) != NULL)
            return rc_fail(c, "variable %s appears twice", it->string);
        if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble) ||
            it->valuedouble != floor(it->valuedouble) || fabs(it->valuedouble) > 9007199254740992.0)
            return rc_fail(c, "%s must be a whole number", it->string);
        if (cJSON_AddNumberToObject(*out, it->string, it->valuedouble) == NULL)
            return KJ_ENOMEM;
    }
    return KJ_OK;
}

static int rc_object(struct rc *c, const struct rc_field *keys, const cJSON *in, cJSON **out)
{
    uint64_t seen = 0;
    if ((*out = cJSON_CreateObject()) == NULL)
        return KJ_ENOMEM;
    for (const cJSON *it = in->child; it != NULL; it = it->next) {
        int k = 0, rc;
        while (keys[k].key != NULL && strcmp(keys[k].key, it->string) != 0)
            k++;
        if (keys[k].key == NULL) {
            rc_dropped(c, it->string);
            continue;
        }
        if (KJ_NEVER(k >= 64)) /* seen is a 64-bit set */
            return KJ_FAIL(c->err, KJ_EINTERNAL, "a schema table has more than 64 keys");
        size_t saved = rc_push(c, keys[k].key, 0);
        cJSON *v = NULL;
        if (seen & (uint64_t)1 << k)
            return rc_fail(c, "the key appears twice");
        seen |= (uint64_t)1 << k;
        if ((rc = rc_value(c, &keys[k], it, &v)) != KJ_OK) {
            cJSON_Delete(v);
            return rc;
        }
        rc_pop(c, saved);
        if (!cJSON_AddItemToObject(*out, keys[k].key, v)) {
            cJSON_Delete(v);
            return KJ_ENOMEM;
        }
    }
    return KJ_OK;
}

static int rc_array(struct rc *c, const struct rc_field *f, const cJSON *in, cJSON **out)
{
    int n = cJSON_GetArraySize(in), i = 0;
    if (n < f->lo || n > f->hi)
        return f->lo == f->hi ? rc_fail(c, "must have %.0f items, not %d", f->lo, n)
                              : rc_fail(c, "%d items, more than %.0f", n, f->hi);
    if ((*out = cJSON_CreateArray()) == NULL)
        return KJ_ENOMEM;
    for (const cJSON *it = in->child; it != NULL; it = it->next, i++) {
        size_t saved = rc_push(c, NULL, i);
        cJSON *v = NULL;
        int rc = rc_value(c, f->sub, it, &v);
        if (rc != KJ_OK) {
            cJSON_Delete(v);
            return rc;
        }
        rc_pop(c, saved);
        if (!cJSON_AddItemToArray(*out, v)) {
            cJSON_Delete(v);
            return KJ_ENOMEM;
        }
    }
    return KJ_OK;
}

/* Copy in as field f describes it into *out (which the caller deletes, also on failure). */
int rc_value(struct rc *c, const struct rc_field *f, const cJSON *in, cJSON **out)
{
    *out = NULL;
    if (cJSON_IsNull(in)) {
        if (!(f->flags & RF_NULL))
            return rc_fail(c, "must be %s, not null", kind_name(f->kind));
        *out = cJSON_CreateNull();
        return *out != NULL ? KJ_OK : KJ_ENOMEM;
    }
    switch (f->kind) {
    case RK_STR:
        return cJSON_IsString(in) ? rc_string(c, f, in, out) : rc_fail(c, "must be a string");
    case RK_NUM:
    case RK_INT:
        return rc_number(c, f, in, out);
    case RK_BOOL:
        if (!cJSON_IsBool(in))
            return rc_fail(c, "must be true or false");
        *out = cJSON_CreateBool(cJSON_IsTrue(in));
        return *out != NULL ? KJ_OK : KJ_ENOMEM;
    case RK_OBJ:
        return cJSON_IsObject(in) ? rc_object(c, f->sub, in, out) : rc_fail(c, "must be an object");
    case RK_ARR:
        return cJSON_IsArray(in) ? rc_array(c, f, in, out) : rc_fail(c, "must be a list");
    case RK_SHAPE:
        return cJSON_IsObject(in) ? rc_shape(c, in, out) : rc_fail(c, "must be an object");
    }
    return rc_fail(c, "unknown field kind");
}
