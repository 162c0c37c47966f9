/*
 * tool.c - start Nsight Compute or compute-sanitizer as the launcher of a
 * run box (see tool.h for the design); wait for it to finish its output.
 */
#include "tool.h"
#include "mono.h"
#include "rbox.h"
#include "sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef KJ_CUDA_HOME
#define KJ_CUDA_HOME "/usr/local/cuda"
#endif

#define TOOL_TMP_SIZE "size=512m,mode=1777"
#define TOOL_SHM_SIZE "size=256m,mode=1777"

static int tool_try(char *buf, size_t bufsz, const char *dir, const char *name)
{
    snprintf(buf, bufsz, "%s/%s", dir, name);
    return access(buf, X_OK) == 0;
}

int tool_find(enum tool_kind kind, char *buf, size_t bufsz, struct kj_err *err)
{
    const char *name = kind == TOOL_NCU ? "ncu" : "compute-sanitizer";
    const char *env = getenv(kind == TOOL_NCU ? "KJUDGE_NCU" : "KJUDGE_COMPUTE_SANITIZER");
    const char *home = getenv("CUDA_HOME");
    char dir[PATH_MAX];
    if (env != NULL && env[0] != '\0') {
        snprintf(buf, bufsz, "%s", env);
        if (access(buf, X_OK) == 0)
            return KJ_OK;
        return KJ_FAIL(err, KJ_ENOTFOUND, "%s (from the environment) is not executable", env);
    }
    if (home != NULL && home[0] != '\0') {
        snprintf(dir, sizeof dir, "%s/bin", home);
        if (tool_try(buf, bufsz, dir, name))
            return KJ_OK;
    }
    if (tool_try(buf, bufsz, KJ_CUDA_HOME "/bin", name))
        return KJ_OK;
    const char *path = getenv("PATH");
    while (path != NULL && *path != '\0') {
        size_t n = strcspn(path, ":");
        if (n > 0 && n < sizeof dir) {
            memcpy(dir, path, n);
            dir[n] = '\0';
            if (dir[0] == '/' && tool_try(buf, bufsz, dir, name))
                return KJ_OK;
        }
        path += n + (path[n] == ':');
    }
    return KJ_FAIL(err, KJ_ENOTFOUND, "%s not found (set CUDA_HOME or %s)", name,
                   kind == TOOL_NCU ? "KJUDGE_NCU" : "KJUDGE_COMPUTE_SANITIZER");
}

int tool_outdir(char *buf, size_t bufsz, struct kj_err *err)
{
    const char *base = getenv("KJUDGE_TOOL_DIR");
    if (base == NULL || base[0] == '\0')
        base = "/var/tmp";
    if (strncmp(base, "/tmp", 4) == 0 && (base[4] == '/' || base[4] == '\0'))
        return KJ_FAIL(err, KJ_EINVAL, "KJUDGE_TOOL_DIR must not be under /tmp");
    snprintf(buf, bufsz, "%s/kjudge-tool-XXXXXX", base);
    if (mkdtemp(buf) == NULL)
        return KJ_FAIL(err, KJ_EIO, "cannot make a folder under %s: %s", base, strerror(errno));
    return KJ_OK;
}

void tool_outdir_remove(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[PATH_MAX + 300];
    while (d != NULL && (e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    if (d != NULL)
        closedir(d);
    rmdir(dir);
}

/* ------------------------------------------------------------ the child */

static void tool_die(const char *what) __attribute__((noreturn));

static void tool_die(const char *what)
{
    dprintf(2, "kjudge-runner tool launcher: %s: %s\n", what, strerror(errno));
    _exit(127);
}

/* The loopback interface up, so that the tool and its injected code can
 * talk over it inside the new network namespace. */
static void tool_loopback(void)
{
    struct ifreq ifr;
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        tool_die("socket");
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
    if (ioctl(s, SIOCGIFFLAGS, &ifr) != 0)
        tool_die("SIOCGIFFLAGS lo");
    ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
    if (ioctl(s, SIOCSIFFLAGS, &ifr) != 0)
        tool_die("SIOCSIFFLAGS lo");
    close(s);
}

/* A rebuilt environment: what CUDA and the tool need, nothing of the
 * runner's (its token never reaches the tool or the box). */
static void tool_env(const struct tool_cfg *c)
{
    static const char *const keep[] = {"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER",
                                       "LD_LIBRARY_PATH", "KJUDGE_TOOL_BINDS",
                                       /* a Python box's GPU time (gtrace.h) */
                                       "KJUDGE_CUPTI_LIB", "KJUDGE_GPU_TIME"};
    char *val[sizeof keep / sizeof keep[0]];
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) {
        const char *v = getenv(keep[i]);
        val[i] = v ? strdup(v) : NULL;
    }
    if (clearenv() != 0)
        tool_die("clearenv");
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++)
        if (val[i] != NULL)
            setenv(keep[i], val[i], 1);
    setenv("PATH", "/usr/bin:/bin", 1);
    setenv("HOME", "/tmp", 1);
    setenv("TMPDIR", "/tmp", 1);
    setenv("CUDA_MODULE_LOADING", "EAGER", 1);
    setenv("CUDA_CACHE_DISABLE", "1", 1);
    if (c->kind == TOOL_PYTHON) { /* timed like any box: the blocking kernel stays */
        if (c->python_home != NULL)
            setenv("PYTHONHOME", c->python_home, 1);
        setenv("PYTHONNOUSERSITE", "1", 1);
        setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
        return;
    }
    setenv("KJUDGE_NO_BLOCKER", "1", 1);
    if (c->kind == TOOL_SANITIZER) /* memcheck reports at the faulting launch */
        setenv("CUDA_LAUNCH_BLOCKING", "1", 1);
}

/* fds[] to 3..3+n-1 without close-on-exec (through numbers above them),
 * the rest closed; stdin on /dev/null, stdout and stderr to log. */
static void tool_fds(const int *fds, int n, int log)
{
    int tmp[8], null = open("/dev/null", O_RDWR);
    for (int i = 0; i < n; i++)
        if ((tmp[i] = fcntl(fds[i], F_DUPFD, 64)) < 0)
            tool_die("dup");
    if (null < 0 || dup2(null, 0) < 0 || (log >= 0 && (dup2(log, 1) < 0 || dup2(log, 2) < 0)))
        tool_die("dup2");
    for (int i = 0; i < n; i++)
        if (dup2(tmp[i], 3 + i) < 0)
            tool_die("dup2");
    if (syscall(SYS_close_range, 3 + n, ~0u, 0) != 0)
        tool_die("close_range");
}

#define TOOL_ARGS 48

static void tool_argv(const struct tool_cfg *c, const char *tool, const char *self,
                      char *bufs[8], const char **argv)
{
    int n = 0;
    if (c->kind != TOOL_PYTHON)
        argv[n++] = tool;
    if (c->kind == TOOL_NCU) {
        static const char *const sections[] = {
            "SpeedOfLight", "SpeedOfLight_RooflineChart", "MemoryWorkloadAnalysis",
            "ComputeWorkloadAnalysis", "Occupancy", "LaunchStats", "WarpStateStats"};
        argv[n++] = "--profile-from-start";
        argv[n++] = "off";
        argv[n++] = "--clock-control"; /* never change the GPU's clocks */
        argv[n++] = "none";
        for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++) {
            argv[n++] = "--section";
            argv[n++] = sections[i];
        }
        argv[n++] = "--import-source";
        argv[n++] = "yes";
        argv[n++] = "--launch-count";
        argv[n++] = bufs[0];
        argv[n++] = "-f";
        argv[n++] = "-o";
        argv[n++] = bufs[1];
    } else if (c->kind == TOOL_SANITIZER) {
        argv[n++] = "--tool";
        argv[n++] = kj_sanitizer_name(c->sanitizer);
        if (c->sanitizer == KJ_SAN_MEMCHECK) {
            argv[n++] = "--padding"; /* a read just past a buffer is out of bounds */
            argv[n++] = "32";
            argv[n++] = "--leak-check";
            argv[n++] = "no";
        }
        /* At a precise device error (memcheck's invalid access) end only
         * the kernel, not the context: destroying the context hangs until
         * the limit once the box runs under its own uid (seen on the H200,
         * 2025.3.1), while root in the box would end it. The finding is
         * reported either way; judge_tool.c words the verdict. */
        argv[n++] = "--destroy-on-device-error";
        argv[n++] = "kernel";
        argv[n++] = "--report-api-errors";
        argv[n++] = "no";
        argv[n++] = "--show-backtrace";
        argv[n++] = "no";
        argv[n++] = "--print-limit";
        argv[n++] = "1000";
        argv[n++] = "--log-file";
        argv[n++] = bufs[1];
    }
    argv[n++] = self;
    argv[n++] = "box-exec";
    argv[n++] = "--spec";
    argv[n++] = c->spec_dir;
    argv[n++] = "--gpu";
    argv[n++] = bufs[2];
    argv[n++] = "--region-size";
    argv[n++] = bufs[3];
    argv[n++] = "--skip";
    argv[n++] = bufs[4];
    if (c->kind == TOOL_PYTHON) {
        argv[n++] = "--python";
        argv[n++] = c->python_lib;
        if (c->python_site != NULL) {
            argv[n++] = "--python-site";
            argv[n++] = c->python_site;
        }
        if (c->no_helion) {
            argv[n++] = "--python-helion";
            argv[n++] = "0";
        }
        if (c->hold)
            argv[n++] = "--hold"; /* last: box-exec reads it without a value */
    }
    argv[n] = NULL;
}

static void tool_child(const struct tool_cfg *c, const char *tool, const char *self,
                       const int fds[5], unsigned skip) __attribute__((noreturn));

static void tool_child(const struct tool_cfg *c, const char *tool, const char *self,
                       const int fds[5], unsigned skip)
{
    char lc[16], out[PATH_MAX], gpu[16], rs[32], sk[16], log[PATH_MAX], cg[128];
    char *bufs[8] = {lc, out, gpu, rs, sk};
    const char *argv[TOOL_ARGS];
    struct kj_err err;
    secret_wipe(c->wipe); /* first: the tool never holds the runner's secrets */
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    umask(022); /* the tool's scratch files in its /tmp are read by the box (SANDBOX_UID) */
    snprintf(log, sizeof log, "%s/tool.log", c->outdir);
    int logfd = c->kind == TOOL_PYTHON ? open("/dev/null", O_WRONLY | O_CLOEXEC) :
                open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    kj_err_clear(&err);
    if (sandbox_unshare(CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNS, &err) != KJ_OK) {
        dprintf(logfd >= 0 ? logfd : 2, "%s\n", err.msg);
        _exit(127);
    }
    tool_loopback();
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount("kjtool", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, TOOL_TMP_SIZE) != 0 ||
        (access("/dev/shm", F_OK) == 0 &&
         mount("kjshm", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, TOOL_SHM_SIZE) != 0))
        tool_die("private /tmp");
    rbox_cgroup_self(cg, sizeof cg); /* the tool and the box: removed by rbox_cleanup(pid) */
    tool_env(c);
    snprintf(lc, sizeof lc, "%d", c->launch_count > 0 ? c->launch_count : 64);
    snprintf(out, sizeof out, "%s/%s", c->outdir,
             c->kind == TOOL_NCU ? "profile" : "sanitize.log");
    snprintf(gpu, sizeof gpu, "%d", c->gpu);
    snprintf(rs, sizeof rs, "%zu", c->region_size);
    snprintf(sk, sizeof sk, "%u", skip);
    tool_argv(c, tool, self, bufs, argv);
    tool_fds(fds, 5, logfd);
    execv(tool, (char *const *)argv);
    tool_die("exec");
    _exit(127);
}

/* ------------------------------------------------------------ the judge */

int tool_start(const struct tool_cfg *c, struct box_proc *out, struct kj_err *err)
{
    int req[2] = {-1, -1}, rep[2] = {-1, -1}, info[2] = {-1, -1}, src = -1;
    char tool[PATH_MAX], self[PATH_MAX];
    unsigned skip = 0;
    memset(out, 0, sizeof *out);
    out->pid = -1;
    out->fd_req = out->fd_rep = out->fd_info = -1;
    int rc = c->kind == TOOL_PYTHON ? KJ_OK : tool_find(c->kind, tool, sizeof tool, err);
    if (rc == KJ_OK)
        rc = rbox_parse_skip(getenv("KJUDGE_RBOX_SKIP"), &skip, err);
    if (rc != KJ_OK)
        return rc;
    if (realpath("/proc/self/exe", self) == NULL)
        return KJ_FAIL(err, KJ_EIO, "cannot find this program: %s", strerror(errno));
    char spec[PATH_MAX];
    if (realpath(c->spec_dir, spec) == NULL)
        return KJ_FAIL(err, KJ_EIO, "%s: %s", c->spec_dir, strerror(errno));
    /* The launcher replaces /tmp with its own tmpfs before the exec. */
    if (strncmp(self, "/tmp/", 5) == 0 || strncmp(spec, "/tmp/", 5) == 0)
        return KJ_FAIL(err, KJ_EINVAL, "neither the runner nor the leaderboards may live under "
                       "/tmp for %s", c->kind == TOOL_NCU ? "profile mode" :
                       c->kind == TOOL_SANITIZER ? "sanitize mode" : "Python submissions");
    if (c->kind == TOOL_PYTHON)
        snprintf(tool, sizeof tool, "%s", self);
    if ((src = memfd_create("source", MFD_CLOEXEC)) < 0 ||
        write(src, c->source, c->source_len) != (ssize_t)c->source_len ||
        pipe2(req, O_CLOEXEC) != 0 || pipe2(rep, O_CLOEXEC) != 0 || pipe2(info, O_CLOEXEC) != 0)
        goto fail;
    pid_t pid = fork();
    if (pid < 0)
        goto fail;
    if (pid == 0) {
        int fds[5] = {req[0], rep[1], info[1], src, c->region_fd};
        struct tool_cfg cc = *c;
        cc.spec_dir = spec;
        tool_child(&cc, tool, self, fds, skip);
    }
    setpgid(pid, pid); /* also in the child: whichever runs first */
    close(req[0]);
    close(rep[1]);
    close(info[1]);
    close(src);
    out->pid = pid;
    out->pgid = pid;
    out->fd_req = req[1];
    out->fd_rep = rep[0];
    out->fd_info = info[0];
    return KJ_OK;
fail:;
    int e = errno;
    for (int i = 0; i < 2; i++) {
        if (req[i] >= 0) close(req[i]);
        if (rep[i] >= 0) close(rep[i]);
        if (info[i] >= 0) close(info[i]);
    }
    if (src >= 0)
        close(src);
    return KJ_FAIL(err, KJ_EIO, "cannot start the tool: %s", strerror(e));
}

int tool_wait(struct box_proc *p, double deadline, struct kj_err *err)
{
    int status;
    while (p->pid > 0) {
        pid_t r = waitpid(p->pid, &status, WNOHANG);
        if (r == p->pid) {
            kill(-p->pgid, SIGKILL); /* anything of the box the tool left behind */
            rbox_cleanup(p->pid);
            p->pid = -1;
            p->pgid = 0;
            if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
                return KJ_FAIL(err, KJ_EINTERNAL, "the tool could not be started (see its log)");
            return KJ_OK;
        }
        if (r < 0 && errno != EINTR)
            return KJ_FAIL(err, KJ_EIO, "waitpid: %s", strerror(errno));
        if (mono_now() > deadline) {
            box_kill(p);
            return KJ_FAIL(err, KJ_ETIMEOUT, "the tool did not finish in time");
        }
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return KJ_OK;
}
