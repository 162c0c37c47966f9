/*
 * box_exec.c - `kjudge-runner box-exec`: a run box started by a tool
 * (tool.h), not forked by the judge. It rebuilds what box_start() would
 * have handed to box_main() - the leaderboard (--spec), the submission's
 * directives (the source on fd 6), the reference's and generate.cu's, the
 * plan of every case, the result region (fd 7, --region-size bytes) - and
 * runs box_main() in tool mode on fds 3, 4, 5. The plan is the judge's:
 * the same files through the same plan_build().
 * Not for people: the judge starts it; it refuses to run without its fds.
 */
#include "box.h"
#include "box_exec.h"
#include "compile.h"
#include "expr.h"
#include "kj_file.h"
#include "plan.h"
#include "rbox.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define BOX_EXEC_SOURCE_FD 6
#define BOX_EXEC_REGION_FD 7

static char *bx_read_fd(int fd, size_t *len)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size <= 0 || st.st_size > COMPILE_MAX_SOURCE)
        return NULL;
    char *buf = malloc((size_t)st.st_size + 1);
    if (buf == NULL || pread(fd, buf, (size_t)st.st_size, 0) != st.st_size) {
        free(buf);
        return NULL;
    }
    buf[st.st_size] = '\0';
    *len = (size_t)st.st_size;
    return buf;
}

static int bx_dirs(const struct spec *s, const char *name, struct directives *d,
                   struct kj_err *err)
{
    char path[SPEC_MAX_PATH + 32];
    char *src = NULL;
    size_t n = 0;
    const char *names[SPEC_MAX_VARS];
    struct expr_vars vars;
    spec_expr_vars(s, names, NULL, &vars);
    snprintf(path, sizeof path, "%s/%s", s->dir, name);
    int rc = kj_read_file(path, COMPILE_MAX_SOURCE, &src, &n, err);
    if (rc == KJ_OK && (dir_parse(src, n, d, err) != KJ_OK || dir_check_names(d, &vars, err) != KJ_OK))
        rc = KJ_EINTERNAL;
    free(src);
    return rc;
}

int box_exec_main(int argc, char **argv)
{
    const char *spec_dir = NULL;
    int gpu = -1;
    unsigned long long region_size = 0;
    unsigned skip = 0;
    const char *python = NULL, *python_site = NULL;
    int hold = 0, helion = 1;
    struct kj_err err;
    kj_err_clear(&err);
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], "--hold") == 0) { /* the last argument: no value */
            hold = 1;
            argc = i;
        }
    for (int i = 2; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--spec") == 0) spec_dir = argv[i + 1];
        else if (strcmp(argv[i], "--gpu") == 0) gpu = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--region-size") == 0) region_size = strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--skip") == 0) skip = (unsigned)strtoul(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--python") == 0) python = argv[i + 1];
        else if (strcmp(argv[i], "--python-site") == 0) python_site = argv[i + 1];
        else if (strcmp(argv[i], "--python-helion") == 0) helion = atoi(argv[i + 1]) != 0;
    }
    if (spec_dir == NULL || gpu < 0 || region_size == 0 || fcntl(RBOX_FD_INFO, F_GETFD) < 0 ||
        fcntl(BOX_EXEC_REGION_FD, F_GETFD) < 0) {
        fprintf(stderr, "kjudge-runner box-exec: started by the judge under a tool only\n");
        return 2;
    }
    static struct directives sub, ref, gen;
    struct spec *s = NULL;
    struct plan *plan = NULL;
    size_t srclen = 0;
    char *src = bx_read_fd(BOX_EXEC_SOURCE_FD, &srclen);
    int rc = src == NULL ? KJ_FAIL(&err, KJ_EIO, "box-exec: cannot read the source") : KJ_OK;
    if (rc == KJ_OK)
        rc = spec_load(spec_dir, &s, &err);
    /* A Python box has no launch lines: its directives stay empty. */
    if (rc == KJ_OK && python == NULL && dir_parse(src, srclen, &sub, &err) != KJ_OK)
        rc = KJ_EINVAL;
    if (rc == KJ_OK)
        rc = bx_dirs(s, "reference.cu", &ref, &err);
    if (rc == KJ_OK && s->has_generate)
        rc = bx_dirs(s, "generate.cu", &gen, &err);
    if (rc == KJ_OK)
        rc = plan_build(s, &sub, &ref, s->has_generate ? &gen : NULL, &plan, &err);
    void *region = MAP_FAILED;
    if (rc == KJ_OK) {
        region = mmap(NULL, region_size, PROT_READ | PROT_WRITE, MAP_SHARED, BOX_EXEC_REGION_FD, 0);
        if (region == MAP_FAILED)
            rc = KJ_FAIL(&err, KJ_ENOMEM, "box-exec: cannot map the region: %s", strerror(errno));
    }
    close(BOX_EXEC_SOURCE_FD);
    close(BOX_EXEC_REGION_FD);
    free(src);
    if (rc != KJ_OK) {
        struct box_device dev;
        memset(&dev, 0, sizeof dev);
        snprintf(dev.error, sizeof dev.error, "%s", err.msg);
        (void)!write(RBOX_FD_INFO, &dev, sizeof dev);
        return 3;
    }
    struct box_cfg c;
    memset(&c, 0, sizeof c);
    c.spec = s;
    c.plan = plan;
    c.dirs = &sub;
    c.gendirs = s->has_generate ? &gen : NULL;
    c.gpu = gpu;
    c.fd_in = RBOX_FD_IN;
    c.fd_out = RBOX_FD_OUT;
    c.fd_info = RBOX_FD_INFO;
    c.region = region;
    c.region_size = region_size;
    c.rbox_skip = skip;
    c.tool = 1;
    c.python_lib = python;
    c.python_site = python_site;
    c.hold = hold && python != NULL;
    c.python_helion = helion;
    box_main(&c);
}
