/*
 * sanitize.c - compute-sanitizer's log into findings (see sanitize.h).
 */
#include "sanitize.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SAN_PREFIX "========="

struct san_finding {
    char kind[160];
    char kernel[160];
    char file[160];
    int line;
    int thread[3], block[3], has_thread, has_block;
    char address[40];
    long size;
    char file2[160];            /* racecheck: the other access of the pair */
    int line2;
    long hazards;
    int test;                   /* the test whose call it came from, -1: not known */
    char text[400];
};

/* The line's text after the prefix, and its indent (spaces after it). */
static const char *san_body(const char *line, size_t n, size_t *len, int *indent)
{
    size_t p = sizeof SAN_PREFIX - 1;
    if (n < p || memcmp(line, SAN_PREFIX, p) != 0)
        return NULL;
    int sp = 0;
    while (p < n && line[p] == ' ') {
        p++;
        sp++;
    }
    *indent = sp;
    *len = n - p;
    return line + p;
}

static void san_copy(char *dst, size_t dstsz, const char *s, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k + 1 < dstsz; i++)
        dst[k++] = isprint((unsigned char)s[i]) ? s[i] : '?';
    dst[k] = '\0';
}

/* "at KERNEL+0x.. in FILE:LINE" (also "at KERNEL in FILE:LINE", or
 * "access at KERNEL+0x.. in FILE:LINE") anywhere in s. */
static void san_location(struct san_finding *f, const char *s)
{
    const char *at = strstr(s, " at ");
    if (at == NULL && strncmp(s, "at ", 3) == 0)
        at = s - 1;
    if (at == NULL)
        return;
    at += 4;
    size_t k = strcspn(at, "+ ");
    if (f->kernel[0] == '\0')
        san_copy(f->kernel, sizeof f->kernel, at, k);
    const char *in = strstr(at, " in ");
    if (in == NULL)
        return;
    in += 4;
    const char *colon = NULL;
    for (const char *p = in; *p && *p != ' ' && *p != '\n'; p++)
        if (*p == ':')
            colon = p;
    if (colon != NULL && isdigit((unsigned char)colon[1]) && f->file[0] == '\0') {
        const char *base = in;
        for (const char *p = in; p < colon; p++)
            if (*p == '/')
                base = p + 1;
        san_copy(f->file, sizeof f->file, base, (size_t)(colon - base));
        f->line = atoi(colon + 1);
    }
}

static void san_detail(struct san_finding *f, const char *s)
{
    int a, b, c, x, y, z;
    if (strncmp(s, "and ", 4) == 0 && strstr(s, " access at ") != NULL) {
        /* racecheck: "and Read access at K+0x.. in F:L [N hazards]" */
        struct san_finding o;
        memset(&o, 0, sizeof o);
        san_location(&o, s);
        snprintf(f->file2, sizeof f->file2, "%s", o.file);
        f->line2 = o.line;
        const char *h = strchr(s, '[');
        if (h != NULL)
            f->hazards = atol(h + 1);
        size_t n = strlen(f->kind), k = (size_t)(strstr(s, " at ") - s);
        if (n + 1 + k < sizeof f->kind)
            snprintf(f->kind + n, sizeof f->kind - n, " %.*s", (int)k, s);
        return;
    }
    const char *t = strstr(s, "thread (");
    if (t != NULL && sscanf(t, "thread (%d,%d,%d) in block (%d,%d,%d)", &a, &b, &c, &x, &y, &z) == 6) {
        f->thread[0] = a; f->thread[1] = b; f->thread[2] = c; f->has_thread = 1;
        f->block[0] = x; f->block[1] = y; f->block[2] = z; f->has_block = 1;
    }
    /* "Address 0x.. is out of bounds" (older tools), "Access to 0x.. is out of bounds" */
    const char *ad = strstr(s, "Address 0x"), *ac = strstr(s, "Access to 0x");
    const char *hex = ad != NULL ? ad + 8 : ac != NULL ? ac + 10 : NULL;
    if (hex != NULL && f->address[0] == '\0')
        san_copy(f->address, sizeof f->address, hex, strspn(hex + 2, "0123456789abcdefABCDEF") + 2);
    san_location(f, s);
}

/* The kind of a finding's first line: without " of size N bytes" (kept as
 * size) and anything after " at " (a location). */
static void san_kind(struct san_finding *f, const char *s, size_t n)
{
    char tmp[400];
    san_copy(tmp, sizeof tmp, s, n);
    snprintf(f->text, sizeof f->text, "%s", tmp);
    if (strncmp(tmp, "Error: ", 7) == 0)
        memmove(tmp, tmp + 7, strlen(tmp + 7) + 1);
    if (strncmp(tmp, "Race reported between ", 22) == 0) /* "Race between A and B" */
        memmove(tmp + 5, tmp + 14, strlen(tmp + 14) + 1);
    char *sz = strstr(tmp, " of size ");
    if (sz != NULL) {
        f->size = atol(sz + 9);
        *sz = '\0';
    }
    char *at = strstr(tmp, " at ");
    if (at != NULL) {
        san_location(f, at);
        *at = '\0';
    }
    /* racecheck: "Race reported between Write access" -> "Race (Write/Read)" later */
    snprintf(f->kind, sizeof f->kind, "%.159s", tmp);
}

static int san_header(const char *s, size_t n)
{
    static const char *const skip[] = {"ERROR SUMMARY", "COMPUTE-SANITIZER", "RACECHECK SUMMARY",
                                       "LEAK SUMMARY", "Program hit", "Target application",
                                       "Saved host backtrace", "Host Frame", "Device Frame"};
    if (n == 0)
        return 0;
    for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++)
        if (n >= strlen(skip[i]) && memcmp(s, skip[i], strlen(skip[i])) == 0)
            return 0;
    return 1;
}

/* Whether finding f is in the submission's code: in its source file (the
 * name compile.c gives NVRTC; a device function of it is named by its own
 * name, not its kernel's), or in one of its kernels (base names compared,
 * a template-id matching its base). The judge's own
 * kernels come from other files or carry no line information. */
static int san_is_sub(const struct san_finding *f, const char *const *kernels, int n)
{
    const char *kernel = f->kernel;
    if (strcmp(f->file, "submission.cu") == 0)
        return 1;
    for (int i = 0; i < n; i++) {
        size_t k = strcspn(kernels[i], "<");
        if (strncmp(kernel, kernels[i], k) == 0 &&
            (kernel[k] == '\0' || kernel[k] == '<' || kernel[k] == '('))
            return 1;
    }
    return 0;
}

static cJSON *san_finding_json(const struct san_finding *f)
{
    cJSON *o = cJSON_CreateObject();
    if (o == NULL)
        return NULL;
    cJSON_AddStringToObject(o, "kernel", f->kernel);
    if (f->file[0]) {
        cJSON_AddStringToObject(o, "file", f->file);
        cJSON_AddNumberToObject(o, "line", f->line);
    }
    if (f->has_thread)
        cJSON_AddItemToObject(o, "thread", cJSON_CreateIntArray(f->thread, 3));
    if (f->has_block)
        cJSON_AddItemToObject(o, "block", cJSON_CreateIntArray(f->block, 3));
    if (f->address[0])
        cJSON_AddStringToObject(o, "address", f->address);
    if (f->size > 0)
        cJSON_AddNumberToObject(o, "size", (double)f->size);
    if (f->line2 > 0) {
        cJSON_AddStringToObject(o, "file2", f->file2);
        cJSON_AddNumberToObject(o, "line2", f->line2);
    }
    if (f->hazards > 0)
        cJSON_AddNumberToObject(o, "hazards", (double)f->hazards);
    if (f->test >= 0)
        cJSON_AddNumberToObject(o, "test", f->test);
    cJSON_AddStringToObject(o, "text", f->text);
    return o;
}

/* Add f to its group (by kind) in groups. */
static void san_add(cJSON *groups, const struct san_finding *f, int list)
{
    cJSON *g = NULL, *it;
    cJSON_ArrayForEach(it, groups) {
        cJSON *k = cJSON_GetObjectItem(it, "kind");
        if (cJSON_IsString(k) && strcmp(k->valuestring, f->kind) == 0) {
            g = it;
            break;
        }
    }
    if (g == NULL) {
        g = cJSON_CreateObject();
        if (g == NULL)
            return;
        cJSON_AddStringToObject(g, "kind", f->kind);
        cJSON_AddNumberToObject(g, "count", 0);
        cJSON_AddItemToObject(g, "findings", cJSON_CreateArray());
        cJSON_AddItemToArray(groups, g);
    }
    cJSON *c = cJSON_GetObjectItem(g, "count");
    cJSON_SetNumberValue(c, c->valuedouble + 1);
    if (list)
        cJSON_AddItemToArray(cJSON_GetObjectItem(g, "findings"), san_finding_json(f));
}

int sanitize_stopped(const cJSON *report, char *out, size_t outsz)
{
    const cJSON *tool = cJSON_GetObjectItem(report, "tool");
    const cJSON *errors = cJSON_GetObjectItem(report, "errors");
    const cJSON *group = cJSON_GetArrayItem(cJSON_GetObjectItem(report, "groups"), 0);
    const cJSON *f = cJSON_GetArrayItem(cJSON_GetObjectItem(group, "findings"), 0);
    if (!cJSON_IsString(tool) || strcmp(tool->valuestring, "memcheck") != 0 ||
        !cJSON_IsNumber(errors) || errors->valuedouble < 1 || f == NULL)
        return 0;
    const cJSON *text = cJSON_GetObjectItem(f, "text"), *kernel = cJSON_GetObjectItem(f, "kernel");
    const cJSON *file = cJSON_GetObjectItem(f, "file"), *line = cJSON_GetObjectItem(f, "line");
    const cJSON *th = cJSON_GetObjectItem(f, "thread"), *bl = cJSON_GetObjectItem(f, "block");
    int n = snprintf(out, outsz, "%s in %s", cJSON_IsString(text) ? text->valuestring : "an invalid access",
                     cJSON_IsString(kernel) ? kernel->valuestring : "the kernel");
    if (n >= 0 && (size_t)n < outsz && cJSON_IsString(file) && cJSON_IsNumber(line))
        n += snprintf(out + n, outsz - (size_t)n, " at %s:%d", file->valuestring, line->valueint);
    if (n >= 0 && (size_t)n < outsz && cJSON_GetArraySize(th) == 3 && cJSON_GetArraySize(bl) == 3)
        snprintf(out + n, outsz - (size_t)n, " (thread (%d,%d,%d), block (%d,%d,%d))",
                 cJSON_GetArrayItem(th, 0)->valueint, cJSON_GetArrayItem(th, 1)->valueint,
                 cJSON_GetArrayItem(th, 2)->valueint, cJSON_GetArrayItem(bl, 0)->valueint,
                 cJSON_GetArrayItem(bl, 1)->valueint, cJSON_GetArrayItem(bl, 2)->valueint);
    return 1;
}

/* The test whose call wrote the log at offset at (sanitize_marks), or -1. */
static int san_test(const struct sanitize_marks *m, size_t at)
{
    for (int i = 0; m != NULL && i < m->n; i++)
        if (at < m->end[i])
            return i;
    return -1;
}

cJSON *sanitize_report(const char *log, size_t len, const char *tool, const char *const *kernels,
                       int nkernels, int max, const struct sanitize_marks *marks)
{
    cJSON *o = cJSON_CreateObject(), *groups = cJSON_CreateArray();
    if (o == NULL || groups == NULL) {
        cJSON_Delete(o);
        cJSON_Delete(groups);
        return NULL;
    }
    struct san_finding f;
    int open = 0, errors = 0, shown = 0, judge = 0, summary = -1;
    size_t at = 0;
    memset(&f, 0, sizeof f);
    while (at <= len) {
        size_t e = at;
        while (e < len && log[e] != '\n')
            e++;
        size_t n, blen;
        int indent;
        const char *body = san_body(log + at, e - at, &blen, &indent);
        if (body != NULL && indent <= 1 && blen > 0) {
            if (open) {
                int sub = san_is_sub(&f, kernels, nkernels);
                if (sub) {
                    errors++;
                    san_add(groups, &f, shown < max);
                    shown += shown < max;
                } else {
                    judge++;
                }
                open = 0;
            }
            if (blen > 14 && memcmp(body, "ERROR SUMMARY:", 14) == 0)
                summary = atoi(body + 14);
            if (san_header(body, blen)) {
                memset(&f, 0, sizeof f);
                f.test = san_test(marks, at);
                san_kind(&f, body, blen);
                open = 1;
            }
        } else if (body != NULL && open) {
            char tmp[400];
            n = blen < sizeof tmp - 1 ? blen : sizeof tmp - 1;
            memcpy(tmp, body, n);
            tmp[n] = '\0';
            san_detail(&f, tmp);
        }
        at = e + 1;
    }
    if (open) {
        if (san_is_sub(&f, kernels, nkernels)) {
            errors++;
            san_add(groups, &f, shown < max);
            shown += shown < max;
        } else {
            judge++;
        }
    }
    cJSON_AddStringToObject(o, "tool", tool);
    cJSON_AddBoolToObject(o, "clean", errors == 0);
    cJSON_AddNumberToObject(o, "errors", errors);
    cJSON_AddNumberToObject(o, "shown", shown);
    cJSON_AddNumberToObject(o, "more", errors - shown);
    if (summary >= 0)
        cJSON_AddNumberToObject(o, "tool_error_summary", summary);
    cJSON_AddNumberToObject(o, "judge_findings", judge);
    cJSON_AddItemToObject(o, "groups", groups);
    return o;
}
