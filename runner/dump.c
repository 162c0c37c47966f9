/*
 * dump.c - writes the raw inputs and outputs of every shape and their
 * manifest (format in dump.h) for `kjudge-runner eval --dump DIR`.
 */
#include "dump.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdio.h"

/* Write n bytes to path (created 0644, truncated). */
static int dump_write(const char *path, const void *p, size_t n, struct kj_err *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return KJ_FAIL(err, KJ_EIO, "cannot create %s: %s", path, strerror(errno));
    int rc = fdio_write_full(fd, p, n);
    if (close(fd) != 0)
        rc = -1;
    if (rc != 0)
        return KJ_FAIL(err, KJ_EIO, "cannot write %s: %s", path, strerror(errno));
    return KJ_OK;
}

/* A dump may only replace a dump: an empty folder, or one whose entries are
 * manifest.json and test<N>/benchmark<N> folders. */
static int dump_dir_ok(const char *dir, struct kj_err *err)
{
    DIR *dh = opendir(dir);
    struct dirent *e;
    int rc = KJ_OK;
    if (dh == NULL)
        return KJ_FAIL(err, KJ_EIO, "cannot open %s: %s", dir, strerror(errno));
    while (rc == KJ_OK && (e = readdir(dh)) != NULL) {
        const char *n = e->d_name;
        if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0 || strcmp(n, "manifest.json") == 0 ||
            strcmp(n, "manifest.json.tmp") == 0 ||
            strncmp(n, "test", 4) == 0 || strncmp(n, "benchmark", 9) == 0)
            continue;
        rc = KJ_FAIL(err, KJ_EINVAL, "%s holds '%s', which is not part of a dump; use an "
                     "empty or new folder", dir, n);
    }
    closedir(dh);
    return rc;
}

int dump_open(struct dump *d, const char *dir, const struct spec *s, struct kj_err *err)
{
    memset(d, 0, sizeof *d);
    if (strlen(dir) == 0 || strlen(dir) >= sizeof d->dir - 64)
        return KJ_FAIL(err, KJ_EINVAL, "--dump: folder name empty or too long");
    snprintf(d->dir, sizeof d->dir, "%s", dir);
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return KJ_FAIL(err, KJ_EIO, "cannot create %s: %s", dir, strerror(errno));
    int rc = dump_dir_ok(dir, err);
    if (rc != KJ_OK)
        return rc;
    d->manifest = cJSON_CreateObject();
    cJSON_AddStringToObject(d->manifest, "leaderboard", s->name);
    cJSON_AddStringToObject(d->manifest, "mode", "dump");
    d->cases = cJSON_AddArrayToObject(d->manifest, "cases");
    return KJ_OK;
}

int dump_case(struct dump *d, const struct spec *s, const struct case_plan *cp, uint64_t seed,
              const unsigned char *in_region, const unsigned char *out_region,
              const char *status, struct kj_err *err)
{
    const char *kind = cp->bench ? "benchmark" : "test";
    char sub[1100], path[1400], seedtxt[32];
    int idx = cp->index, rc;

    snprintf(sub, sizeof sub, "%s/%s%d", d->dir, kind, idx);
    if (mkdir(sub, 0755) != 0 && errno != EEXIST)
        return KJ_FAIL(err, KJ_EIO, "cannot create %s: %s", sub, strerror(errno));
    cJSON *e = cJSON_CreateObject();
    cJSON_AddItemToArray(d->cases, e);
    cJSON_AddStringToObject(e, "kind", kind);
    cJSON_AddNumberToObject(e, "index", idx);
    cJSON *vars = cJSON_AddObjectToObject(e, "vars");
    for (int v = 0; v < s->nvars; v++)
        cJSON_AddNumberToObject(vars, s->vars[v], (double)cp->val[v]);
    snprintf(seedtxt, sizeof seedtxt, "%llu", (unsigned long long)seed);
    cJSON_AddStringToObject(e, "seed", seedtxt);
    cJSON_AddStringToObject(e, "status", status);
    cJSON *bufs = cJSON_AddArrayToObject(e, "buffers");
    for (int b = 0; b < s->nbuffers; b++) {
        const struct spec_buffer *sb = &s->buffers[b];
        int out = sb->role == SPEC_OUTPUT;
        snprintf(path, sizeof path, "%s/%s.bin", sub, sb->name);
        rc = dump_write(path, (out ? out_region : in_region) + cp->off[b], cp->size[b], err);
        if (rc != KJ_OK)
            return rc;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(bufs, o);
        cJSON_AddStringToObject(o, "name", sb->name);
        cJSON_AddStringToObject(o, "dtype", spec_dtype_name(sb->dtype));
        cJSON *shape = cJSON_AddArrayToObject(o, "shape");
        for (int k = 0; k < cp->ndim[b]; k++)
            cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)cp->dims[b][k]));
        cJSON_AddStringToObject(o, "role", out ? "output" : "input");
        snprintf(path, sizeof path, "%s%d/%s.bin", kind, idx, sb->name);
        cJSON_AddStringToObject(o, "file", path);
        if (out) {
            cJSON_AddNumberToObject(o, "atol", cp->atol[b]);
            cJSON_AddNumberToObject(o, "rtol", cp->rtol[b]);
        }
    }
    return KJ_OK;
}

int dump_close(struct dump *d, struct kj_err *err)
{
    char path[1100], tmp[1100];
    char *text = cJSON_Print(d->manifest);
    int rc;
    if (text == NULL) {
        dump_abort(d);
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory");
    }
    snprintf(path, sizeof path, "%s/manifest.json", d->dir);
    snprintf(tmp, sizeof tmp, "%s/manifest.json.tmp", d->dir);
    rc = dump_write(tmp, text, strlen(text), err);
    free(text);
    if (rc == KJ_OK && rename(tmp, path) != 0)
        rc = KJ_FAIL(err, KJ_EIO, "cannot rename %s: %s", tmp, strerror(errno));
    dump_abort(d);
    return rc;
}

void dump_abort(struct dump *d)
{
    cJSON_Delete(d->manifest);
    d->manifest = NULL;
    d->cases = NULL;
}
