/*
 * spec.c - load and validate leaderboards/<name>/leaderboard.json into a struct spec.
 *
 * Called by kjudge-server at start (spec_load_all) and by the runner for the
 * board a job names (spec_load). Every problem is reported as
 * "<file>: <field>: <what is wrong>" so a board author can fix it without
 * reading this code; shape, constraint and size expressions are checked and
 * evaluated with expr.h. The format is documented in leaderboards/README.md.
 *
 * This file reads the file and drives the load (spec_int.h): the top-level
 * fields are checked in spec_fields.c, buffers and cases in
 * spec_buffers.c; questions about a loaded spec are in spec_query.c.
 */
#include "spec_int.h"
#include "kj_file.h"
#include "kj_utf8.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ------------------------------------------------------------------ */
/* Loading                                                             */
/* ------------------------------------------------------------------ */

static int ld_all(struct ld *c, const cJSON *root, const char *dir)
{
    static const char *const keys[] = {
        "name", "title", "description", "deadline", "gpus", "vars", "constraints", "buffers",
        "tests", "benchmarks", "bytes", "flops", "ranking", "time_limits_s", "public_reference",
        "resolution_pct", "gpu_time_resolution_pct", "python", "score", NULL
    };
    struct spec *s = c->s;
    int rc;
    if (!cJSON_IsObject(root))
        return LD_FAIL(c, "(top level)", "must be a JSON object");
    if ((rc = ld_keys(c, root, "(top level)", keys)) != 0 || (rc = ld_header(c, root, dir)) != 0 ||
        (rc = ld_gpus(c, root)) != 0 || (rc = ld_resolution(c, root)) != 0 ||
        (rc = ld_vars(c, root)) != 0 ||
        (rc = ld_constraints(c, root)) != 0 || (rc = ld_buffers(c, root)) != 0 ||
        (rc = ld_python(c, root)) != 0 ||
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

/* Line of the first byte of text that is not valid UTF-8 (kj_utf8: RFC 3629),
 * 0 if none. cJSON copies string bytes as they are, and the server serves
 * the titles and names of a board as JSON text. */
static int utf8_bad_line(const char *text)
{
    size_t bad = 0;
    int line = 1;
    if (kj_utf8_valid(text, strlen(text), &bad))
        return 0;
    for (size_t i = 0; i < bad; i++)
        line += text[i] == '\n';
    return line;
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
    if ((rc = kj_read_file(path, SPEC_MAX_FILE, &text, NULL, err)) == 0)
        rc = spec_parse(text, dir, out, err);
    free(text);
    return rc;
}

void spec_free(struct spec *s)
{
    free(s);
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

const struct spec *spec_find_reload(const char *root, struct spec ***specs, int *n,
                                    const char *name)
{
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < *n; i++)
            if (strcmp((*specs)[i]->name, name) == 0)
                return (*specs)[i];
        struct spec **fresh;
        int nfresh;
        struct kj_err err;
        if (pass == 1 || spec_load_all(root, &fresh, &nfresh, &err) != KJ_OK)
            break;
        spec_free_all(*specs, *n);
        *specs = fresh;
        *n = nfresh;
    }
    return NULL;
}
