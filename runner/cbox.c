/*
 * cbox.c - the compile box (see cbox.h). The child compiles and writes a
 * fixed header, the log and the cubin to a pipe; the parent reads them under
 * a deadline, bounds every length it is told, and kills the child when the
 * deadline passes. A child killed by a limit is reported as a compile error.
 */
#include "cbox.h"
#include "fdio.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CBOX_MAX_CUBIN (256u << 20)

struct cbox_head {
    int rc;                   /* compile_source's return */
    char errmsg[KJ_ERR_MSG];  /* its error when rc < 0 */
    struct compile_result r;  /* pointers are meaningless here */
    uint32_t log_len;
    uint32_t cubin_len;
};

static void cbox_child(int fd, const char *src, size_t len, const struct directives *d,
                       const char *arch)
{
    struct cbox_head h;
    struct kj_err err;
    struct rlimit cpu = {CBOX_CPU_S, CBOX_CPU_S}, mem = {CBOX_MEM_BYTES, CBOX_MEM_BYTES},
                  core = {0, 0};
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    setrlimit(RLIMIT_CPU, &cpu);
#ifndef __SANITIZE_ADDRESS__ /* ASan's shadow memory alone is larger than any sane limit */
    setrlimit(RLIMIT_AS, &mem);
#else
    (void)mem;
#endif
    setrlimit(RLIMIT_CORE, &core);
    setenv("CUDA_CACHE_DISABLE", "1", 1); /* always a fresh ptxas report */
    memset(&h, 0, sizeof h);
    kj_err_clear(&err);
    h.rc = compile_source(src, len, d, arch, &h.r, &err);
    snprintf(h.errmsg, sizeof h.errmsg, "%s", err.msg);
    h.log_len = h.r.log ? (uint32_t)strlen(h.r.log) : 0;
    h.cubin_len = h.r.ok ? (uint32_t)h.r.cubin_size : 0;
    if (fdio_write_full(fd, &h, sizeof h) != 0 ||
        (h.log_len && fdio_write_full(fd, h.r.log, h.log_len) != 0) ||
        (h.cubin_len && fdio_write_full(fd, h.r.cubin, h.cubin_len) != 0))
        _exit(3);
    _exit(0);
}

/* Read exactly n bytes before the deadline (CLOCK_MONOTONIC seconds). */
static int cbox_read(int fd, void *p, size_t n, double deadline)
{
    char *c = p;
    while (n > 0) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        double left = deadline - ((double)ts.tv_sec + ts.tv_nsec * 1e-9);
        struct pollfd pf = {fd, POLLIN, 0};
        if (left <= 0)
            return KJ_ETIMEOUT;
        int r = poll(&pf, 1, (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0)
            return KJ_ETIMEOUT;
        ssize_t got = read(fd, c, n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return KJ_EIO;
        c += got;
        n -= (size_t)got;
    }
    return KJ_OK;
}

/* The child died or ran out of time: a compile error with the reason. */
static int cbox_limit(struct compile_result *out, const char *arch, const char *why)
{
    memset(out, 0, sizeof *out);
    snprintf(out->arch, sizeof out->arch, "%s", arch);
    out->log = strdup(why);
    return out->log ? KJ_OK : KJ_ENOMEM;
}

static int cbox_collect(int fd, pid_t pid, const char *arch, struct compile_result *out,
                        struct kj_err *err)
{
    struct cbox_head h;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double deadline = (double)ts.tv_sec + ts.tv_nsec * 1e-9 + CBOX_WALL_S;
    int rc = cbox_read(fd, &h, sizeof h, deadline), status = 0;
    if (rc == KJ_OK && (h.log_len > COMPILE_MAX_LOG + 256 || h.cubin_len > CBOX_MAX_CUBIN))
        rc = KJ_EIO;
    memset(out, 0, sizeof *out);
    if (rc == KJ_OK) {
        *out = h.r;
        out->log = calloc(1, (size_t)h.log_len + 1);
        out->cubin = h.cubin_len ? malloc(h.cubin_len) : NULL;
        out->cubin_size = h.cubin_len;
        if (out->log == NULL || (h.cubin_len && out->cubin == NULL))
            rc = KJ_ENOMEM;
        if (rc == KJ_OK && h.log_len)
            rc = cbox_read(fd, out->log, h.log_len, deadline);
        if (rc == KJ_OK && h.cubin_len)
            rc = cbox_read(fd, out->cubin, h.cubin_len, deadline);
    }
    kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (rc == KJ_OK && h.rc != KJ_OK)
        return KJ_FAIL(err, h.rc, "%s", h.errmsg);
    if (rc == KJ_OK)
        return KJ_OK;
    compile_result_free(out);
    if (rc == KJ_ENOMEM)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory reading the compile result");
    if (rc == KJ_ETIMEOUT)
        return cbox_limit(out, arch, "compilation stopped: it took longer than 60 s");
    if (WIFSIGNALED(status) && (WTERMSIG(status) == SIGXCPU || WTERMSIG(status) == SIGKILL))
        return cbox_limit(out, arch, "compilation stopped: it used more than 60 s of CPU");
    return cbox_limit(out, arch, "compilation stopped: the compiler ran out of memory or "
                                 "crashed (a template or unrolling bomb?)");
}

int cbox_start(const char *src, size_t len, const struct directives *d, const char *arch,
               struct cbox_proc *p, struct kj_err *err)
{
    int fds[2];
    p->pid = p->fd = -1;
    if (pipe2(fds, O_CLOEXEC) != 0)
        return KJ_FAIL(err, KJ_EIO, "cannot start the compile box: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return KJ_FAIL(err, KJ_EIO, "cannot start the compile box: %s", strerror(errno));
    }
    if (pid == 0) {
        close(fds[0]);
        cbox_child(fds[1], src, len, d, arch);
    }
    close(fds[1]);
    p->pid = pid;
    p->fd = fds[0];
    return KJ_OK;
}

int cbox_finish(struct cbox_proc *p, const char *arch, struct compile_result *out,
                struct kj_err *err)
{
    int rc = cbox_collect(p->fd, p->pid, arch, out, err);
    close(p->fd);
    p->pid = p->fd = -1;
    return rc;
}

int cbox_compile(const char *src, size_t len, const struct directives *d,
                 const char *arch, struct compile_result *out, struct kj_err *err)
{
    struct cbox_proc p;
    int rc = cbox_start(src, len, d, arch, &p, err);
    return rc != KJ_OK ? rc : cbox_finish(&p, arch, out, err);
}
