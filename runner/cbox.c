/*
 * cbox.c - the compile box (see cbox.h). The child enters the sandbox
 * (sandbox.c: namespaces, a read-only root holding only the toolkit and
 * CUTLASS's headers, uid
 * 65534, limits, a seccomp allow-list), compiles and writes a fixed header,
 * the log and the cubin to a pipe; the parent reads them under a deadline,
 * bounds every length it is told, and kills the child when the deadline
 * passes. A child killed by a limit is reported as a compile error; a box
 * that could not be built, or a call the filter stopped, is the judge's error.
 */
#include "cbox.h"
#include "cpus.h"
#include "fdio.h"
#include "mono.h"
#include "sandbox.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <nvrtc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef KJ_CUDA_HOME
#define KJ_CUDA_HOME "/usr/local/cuda" /* as in compile.c; CUDA_HOME in the environment wins */
#endif

#define CBOX_MAX_CUBIN (256u << 20)
#define CBOX_CUTLASS_AT "/opt/kjudge/cutlass/include" /* CUTLASS's headers in the compile box */

struct cbox_head {
    int rc;                   /* compile_source's (or the probe's) return */
    int sys_nr;               /* syscall the filter stopped; -1 if none */
    char errmsg[KJ_ERR_MSG];  /* its error when rc < 0 */
    struct compile_result r;  /* pointers are meaningless here */
    uint32_t log_len;
    uint32_t cubin_len;
};

/* A call outside the allow-list: say which, on the pipe, and stop. Only
 * async-signal-safe calls (the header is a local; write and _exit are allowed). */
static void cbox_sigsys(int sig, siginfo_t *si, void *uc)
{
    struct cbox_head h;
    (void)sig;
    (void)uc;
    memset(&h, 0, sizeof h);
    h.rc = KJ_EINTERNAL;
    h.sys_nr = si->si_syscall;
    ssize_t n = write(SANDBOX_FD, &h, sizeof h);
    _exit(n == (ssize_t)sizeof h ? 4 : 5);
}

/* Load NVRTC's lazily opened builtins library while the host's library
 * paths are still visible; NVRTC's own dlopen later finds it loaded. */
static void cbox_preload(void)
{
    int major = 0, minor = 0;
    char name[64];
    if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS)
        return;
    snprintf(name, sizeof name, "libnvrtc-builtins.so.%d.%d", major, minor);
    (void)dlopen(name, RTLD_NOW | RTLD_GLOBAL); /* kept for the life of the box */
}

/* Enter the box (see sandbox.h); only the worker returns. 0, or <0 with
 * the error already sent to the parent. */
static int cbox_enter(int fd, unsigned flags, struct cbox_head *h)
{
    static const char *const env_fixed[] = {"CUDA_CACHE_DISABLE=1", "HOME=/tmp",
                                            "PATH=/usr/bin:/bin", "TMPDIR=/tmp"};
    const char *env[7];
    char cuda_env[4200], cutlass_env[4200];
    const char *cutlass = getenv(COMPILE_CUTLASS_ENV);
    const char *home = getenv("CUDA_HOME");
    struct sandbox_conf c;
    struct kj_err err;
    struct sigaction sa;
    size_t ne = 0;

    memset(&c, 0, sizeof c);
    memset(&sa, 0, sizeof sa);
    kj_err_clear(&err);
    for (; ne < sizeof env_fixed / sizeof env_fixed[0]; ne++)
        env[ne] = env_fixed[ne];
    if (home && home[0] == '/' && strlen(home) < 4096) {
        snprintf(cuda_env, sizeof cuda_env, "CUDA_HOME=%s", home); /* compile.c reads it */
        env[ne++] = cuda_env;
    } else {
        home = KJ_CUDA_HOME;
    }
    c.ro[c.nro++] = home;
    /* CUTLASS's headers, read-only beside the toolkit (compile.h); a bad
     * path is compile.c's to report. */
    if (cutlass && cutlass[0] == '/' && strlen(cutlass) < 4096 && access(cutlass, R_OK) == 0) {
        /* At a fixed place in the box, wherever the host keeps them (a
         * checkout under /tmp too: the box's /tmp is its own). */
        snprintf(cutlass_env, sizeof cutlass_env, "%s=%s", COMPILE_CUTLASS_ENV, CBOX_CUTLASS_AT);
        env[ne++] = cutlass_env;
        c.ro_at[c.nro] = CBOX_CUTLASS_AT;
        c.ro[c.nro++] = cutlass;
    }
    env[ne] = NULL;
    c.env = env;
    c.cpu_s = CBOX_CPU_S;
#ifndef __SANITIZE_ADDRESS__ /* ASan's shadow memory alone is larger than any sane limit */
    c.as = CBOX_MEM_BYTES;
#endif
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    cbox_preload();
    h->rc = sandbox_enter(fd, &c, &err);
    sa.sa_sigaction = cbox_sigsys;
    sa.sa_flags = SA_SIGINFO;
    if (h->rc == KJ_OK && sigaction(SIGSYS, &sa, NULL) != 0)
        h->rc = KJ_FAIL(&err, KJ_EINTERNAL, "compile box: sigaction: %s", strerror(errno));
    if (h->rc == KJ_OK && !(flags & CBOX_NO_FILTER))
        h->rc = sandbox_filter(&err);
    if (h->rc == KJ_OK)
        return KJ_OK;
    snprintf(h->errmsg, sizeof h->errmsg, "%s", err.msg);
    _exit(fdio_write_full(SANDBOX_FD, h, sizeof *h) != 0 ? 3 : 0);
}

static void cbox_child(int fd, const char *src, size_t len, const struct directives *d,
                       const char *arch)
{
    struct cbox_head h;
    struct kj_err err;
    memset(&h, 0, sizeof h);
    h.sys_nr = -1;
    cbox_enter(fd, 0, &h);
    kj_err_clear(&err);
    h.rc = compile_source(src, len, d, arch, &h.r, &err);
    snprintf(h.errmsg, sizeof h.errmsg, "%s", err.msg);
    h.log_len = h.r.log ? (uint32_t)strlen(h.r.log) : 0;
    h.cubin_len = h.r.ok ? (uint32_t)h.r.cubin_size : 0;
    if (fdio_write_full(SANDBOX_FD, &h, sizeof h) != 0 ||
        (h.log_len && fdio_write_full(SANDBOX_FD, h.r.log, h.log_len) != 0) ||
        (h.cubin_len && fdio_write_full(SANDBOX_FD, h.r.cubin, h.cubin_len) != 0))
        _exit(3);
    _exit(0);
}

/* Read exactly n bytes before the deadline (CLOCK_MONOTONIC seconds). */
static int cbox_read(int fd, void *p, size_t n, double deadline)
{
    char *c = p;
    while (n > 0) {
        int r = fdio_wait(fd, deadline);
        if (r <= 0)
            return r == 0 ? KJ_ETIMEOUT : KJ_EIO;
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

/* Reap the box. A box that answered or closed its pipe is on its way out:
 * give it until the deadline (and a 2 s grace for its exit) to end by
 * itself, so that its status says why it died. A box that ran out of time
 * (kill_now) is killed at once. */
static void cbox_reap(pid_t pid, int kill_now, double deadline, int *status)
{
    struct timespec nap = {0, 5 * 1000 * 1000};
    while (!kill_now) {
        pid_t got = waitpid(pid, status, WNOHANG);
        if (got == pid || (got < 0 && errno != EINTR))
            return;
        if (mono_now() > deadline + 2.0)
            break;
        nanosleep(&nap, NULL);
    }
    kill(pid, SIGKILL);
    while (waitpid(pid, status, 0) < 0 && errno == EINTR)
        ;
}

/* Read the header and, for a compile (out != NULL), the log and cubin. */
static int cbox_read_all(int fd, struct cbox_head *h, struct compile_result *out,
                         double deadline)
{
    int rc = cbox_read(fd, h, sizeof *h, deadline);
    if (rc == KJ_OK && (h->log_len > COMPILE_MAX_LOG + 256 || h->cubin_len > CBOX_MAX_CUBIN ||
                        (out == NULL && (h->log_len || h->cubin_len))))
        rc = KJ_EIO;
    if (rc != KJ_OK || out == NULL)
        return rc;
    *out = h->r;
    out->log = calloc(1, (size_t)h->log_len + 1);
    out->cubin = h->cubin_len ? malloc(h->cubin_len) : NULL;
    out->cubin_size = h->cubin_len;
    if (out->log == NULL || (h->cubin_len && out->cubin == NULL))
        rc = KJ_ENOMEM;
    if (rc == KJ_OK && h->log_len)
        rc = cbox_read(fd, out->log, h->log_len, deadline);
    if (rc == KJ_OK && h->cubin_len)
        rc = cbox_read(fd, out->cubin, h->cubin_len, deadline);
    return rc;
}

/* The judge's error for a call the filter stopped. */
static int cbox_denied(int nr, struct kj_err *err)
{
    char name[64];
    sandbox_syscall_name(nr, name, sizeof name);
    return KJ_FAIL(err, KJ_EINTERNAL, "compile box: the seccomp filter stopped syscall %d (%s)",
                   nr, name);
}


/* Read the box's answer and reap it; the wall deadline counts from the
 * box's start, so a box collected late (after another compile) gets no
 * extra time. */
static int cbox_collect(int fd, pid_t pid, double deadline, const char *arch,
                        struct compile_result *out, int *result, struct kj_err *err)
{
    struct cbox_head h;
    int status = 0, rc;
    memset(&h, 0, sizeof h);
    if (out)
        memset(out, 0, sizeof *out);
    rc = cbox_read_all(fd, &h, out, deadline);
    cbox_reap(pid, rc != KJ_OK && rc != KJ_EIO, deadline, &status);
    if (rc == KJ_OK && h.sys_nr >= 0) {
        if (out)
            compile_result_free(out);
        return cbox_denied(h.sys_nr, err);
    }
    if (rc == KJ_OK && h.rc < 0 && (out || h.errmsg[0]))
        return KJ_FAIL(err, h.rc, "%s", h.errmsg); /* a compile, or a box not built */
    if (rc == KJ_OK) {
        if (result)
            *result = h.rc;
        return KJ_OK;
    }
    if (out)
        compile_result_free(out);
    int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    if (rc == KJ_ENOMEM)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory reading the compile result");
    if (sig == SIGSYS)
        return KJ_FAIL(err, KJ_EINTERNAL, "compile box: killed by its seccomp filter");
    if (out == NULL)
        return KJ_FAIL(err, rc == KJ_ETIMEOUT ? KJ_ETIMEOUT : KJ_EINTERNAL,
                       "box ended without a result (status %#x)", (unsigned)status);
    if (rc == KJ_ETIMEOUT)
        return cbox_limit(out, arch, "compilation stopped: it took longer than 60 s");
    if (sig == SIGXCPU || sig == SIGKILL)
        return cbox_limit(out, arch, "compilation stopped: it used more than 60 s of CPU");
    char why[160];
    if (sig)
        snprintf(why, sizeof why, "compilation stopped: the compiler ran out of memory or crashed "
                 "(signal %d; a template or unrolling bomb?)", sig);
    else
        snprintf(why, sizeof why, "compilation stopped: the compiler ran out of memory or crashed "
                 "(exit status %d; a template or unrolling bomb?)",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return cbox_limit(out, arch, why);
}

static int cbox_fork(struct cbox_proc *p, pid_t *pid, int *wfd, const struct secret_list *wipe,
                     struct kj_err *err)
{
    int fds[2];
    cpu_set_t cpus; /* found before the fork: the child only applies it */
    int pin = cpus_compile_set(&cpus) > 0;
    p->pid = p->fd = -1;
    if (pipe2(fds, O_CLOEXEC) != 0)
        return KJ_FAIL(err, KJ_EIO, "cannot start the compile box: %s", strerror(errno));
    *pid = fork();
    if (*pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return KJ_FAIL(err, KJ_EIO, "cannot start the compile box: %s", strerror(errno));
    }
    if (*pid == 0) {
        secret_wipe(wipe); /* first: nothing of the runner's secrets reaches the compiler */
        if (pin) /* off the CPUs kept for the run boxes (cpus.h); best effort */
            (void)sched_setaffinity(0, sizeof cpus, &cpus);
        close(fds[0]);
        *wfd = fds[1];
        return KJ_OK;
    }
    close(fds[1]);
    p->pid = *pid;
    p->fd = fds[0];
    p->deadline = mono_now() + CBOX_WALL_S;
    return KJ_OK;
}

int cbox_start(const char *src, size_t len, const struct directives *d, const char *arch,
               const struct secret_list *wipe, struct cbox_proc *p, struct kj_err *err)
{
    pid_t pid;
    int wfd = -1, rc = cbox_fork(p, &pid, &wfd, wipe, err);
    if (rc == KJ_OK && pid == 0)
        cbox_child(wfd, src, len, d, arch);
    return rc;
}

int cbox_finish(struct cbox_proc *p, const char *arch, struct compile_result *out,
                struct kj_err *err)
{
    int rc = cbox_collect(p->fd, p->pid, p->deadline, arch, out, NULL, err);
    close(p->fd);
    p->pid = p->fd = -1;
    return rc;
}

int cbox_compile(const char *src, size_t len, const struct directives *d,
                 const char *arch, struct compile_result *out, struct kj_err *err)
{
    struct cbox_proc p;
    int rc = cbox_start(src, len, d, arch, NULL, &p, err);
    return rc != KJ_OK ? rc : cbox_finish(&p, arch, out, err);
}

int cbox_run_in_box(int (*fn)(void *), void *arg, unsigned flags,
                    const struct secret_list *wipe, int *result, struct kj_err *err)
{
    struct cbox_proc p;
    pid_t pid;
    int wfd = -1, rc = cbox_fork(&p, &pid, &wfd, wipe, err);
    if (rc != KJ_OK)
        return rc;
    if (pid == 0) {
        struct cbox_head h;
        memset(&h, 0, sizeof h);
        h.sys_nr = -1;
        cbox_enter(wfd, flags, &h);
        h.rc = fn(arg);
        _exit(fdio_write_full(SANDBOX_FD, &h, sizeof h) != 0 ? 3 : 0);
    }
    rc = cbox_collect(p.fd, p.pid, p.deadline, "", NULL, result, err);
    close(p.fd);
    return rc;
}
