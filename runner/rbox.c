/*
 * rbox.c - the run box's sandbox (see rbox.h for the two phases).
 *
 * Decisions:
 * - No PID namespace: CUDA IPC between the reference box and the
 *   submission box needs each to see the other's pid, and a PID namespace
 *   needs a fresh /proc that the driver would then read. Other processes
 *   stay invisible anyway: there is no /proc after lock, and a different uid
 *   cannot signal or trace them (ptrace is also filtered).
 * - The seccomp filter refuses a list of calls (default allow) rather than
 *   allowing a list: the CUDA driver's needs change with driver versions and
 *   a call it needs but we did not foresee must not turn into a wrong
 *   verdict. What is refused is what an escape or an attack on the judge
 *   would need.
 * - umask 022 first, in the box: the mount points and folders it makes
 *   (rbox_tool.c's binds among them) get the modes asked for, never 0700
 *   from a runner started under umask 077 (then out of reach of
 *   SANDBOX_UID).
 * - Every step fails closed: a box that cannot be built is the judge's
 *   error, the job goes back to the queue, nothing runs unprotected.
 */
#include "rbox.h"
#include "sandbox.h"

#include <errno.h>
#include <time.h>
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define RBOX_STAGE "/tmp"          /* the new root is mounted here, in the box's mount ns */
#define RBOX_NOFILE 1024           /* the driver keeps a few dozen device files open */
#define RBOX_FSIZE (1u << 20)      /* the box writes no files */
#define RBOX_PY_FSIZE (256u << 20) /* a Python box: its private /tmp (the launcher's tmpfs) */
#define RBOX_PY_DATA (16ull << 30) /* a Python box: its private writable memory (RLIMIT_DATA),
                                   * the host's guard where no cgroup limits it */
#define RBOX_NPROC 4096            /* threads of the uid SANDBOX_UID */
#define RBOX_CG_ROOT "/sys/fs/cgroup"
#define RBOX_CG_DIR RBOX_CG_ROOT "/kjudge"
#define RBOX_CG_PIDS "512"
#define RBOX_CG_MEM "17179869184"  /* 16 GiB of host memory per box */

static const char *const rbox_names[] = {"ns", "fs", "creds", "seccomp", "cgroup", "env"};

int rbox_parse_skip(const char *v, unsigned *out, struct kj_err *err)
{
    char word[32];
    *out = 0;
    while (v != NULL && *v != '\0') {
        size_t n = strcspn(v, ",");
        int found = 0;
        if (n > 0 && n < sizeof word) {
            memcpy(word, v, n);
            word[n] = '\0';
            for (size_t i = 0; i < sizeof rbox_names / sizeof rbox_names[0]; i++)
                if (strcmp(word, rbox_names[i]) == 0) {
                    *out |= 1u << i;
                    found = 1;
                }
        }
        if (!found && n > 0) {
            char known[64];
            rbox_describe((1u << (sizeof rbox_names / sizeof rbox_names[0])) - 1, known,
                          sizeof known);
            return KJ_FAIL(err, KJ_EINVAL, "KJUDGE_RBOX_SKIP: unknown protection '%.*s' "
                           "(known: %s)", (int)(n < 32 ? n : 32), v, known);
        }
        v += n + (v[n] == ',');
    }
    return KJ_OK;
}

void rbox_describe(unsigned mask, char *buf, size_t bufsz)
{
    size_t p = 0;
    if (bufsz == 0)
        return;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof rbox_names / sizeof rbox_names[0] && p < bufsz; i++)
        if (mask & (1u << i))
            p += (size_t)snprintf(buf + p, bufsz - p, "%s%s", p ? "," : "", rbox_names[i]);
}

/* ------------------------------------------------------------- prepare */

/* The box's pipes to 3, 4, 5 (through fds above them, so that no dup2
 * overwrites a pipe not yet moved), 0 and 1 on /dev/null, the rest closed. */
static int rbox_fds(const int fds[3], int tool, struct kj_err *err)
{
    int tmp[3], null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null < 0)
        return KJ_FAIL(err, KJ_EINTERNAL, "sandbox: /dev/null: %s", strerror(errno));
    for (int i = 0; i < 3; i++)
        if ((tmp[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 64)) < 0)
            return KJ_FAIL(err, KJ_EINTERNAL, "sandbox: dup: %s", strerror(errno));
    /* Under a tool stderr is the tool's log, which the judge reads: the box
     * gets /dev/null there too. */
    if (dup2(null, 0) < 0 || dup2(null, 1) < 0 || (tool && dup2(null, 2) < 0) || dup3(tmp[0], RBOX_FD_IN, O_CLOEXEC) < 0 ||
        dup3(tmp[1], RBOX_FD_OUT, O_CLOEXEC) < 0 || dup3(tmp[2], RBOX_FD_INFO, O_CLOEXEC) < 0)
        return KJ_FAIL(err, KJ_EINTERNAL, "sandbox: dup2: %s", strerror(errno));
    /* Under a tool the descriptors above are the tool's own channel to its
     * launcher (the runner closed everything else before the exec). */
    if (!tool && syscall(SYS_close_range, RBOX_FD_INFO + 1, ~0u, 0) != 0)
        return KJ_FAIL(err, KJ_EINTERNAL, "sandbox: close_range: %s", strerror(errno));
    return KJ_OK;
}

/* A fresh environment: what CUDA and the box read, nothing else. */
static int rbox_env(struct kj_err *err)
{
    static const char *const keep[] = {"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER",
                                       "LD_LIBRARY_PATH", "KJUDGE_NO_BLOCKER",
                                       /* GPU time (gtrace.h): where CUPTI is, or off */
                                       "KJUDGE_CUPTI_LIB", "KJUDGE_GPU_TIME"};
    char *val[sizeof keep / sizeof keep[0]];
    int rc = KJ_OK;
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) {
        const char *v = getenv(keep[i]);
        val[i] = v ? strdup(v) : NULL;
    }
    if (clearenv() != 0)
        rc = KJ_FAIL(err, KJ_EINTERNAL, "sandbox: clearenv failed");
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) {
        if (rc == KJ_OK && val[i] != NULL && setenv(keep[i], val[i], 1) != 0)
            rc = KJ_FAIL(err, KJ_EINTERNAL, "sandbox: setenv: %s", strerror(errno));
        free(val[i]);
    }
    if (rc == KJ_OK && (setenv("PATH", "/usr/bin:/bin", 1) != 0 || setenv("HOME", "/", 1) != 0 ||
                        setenv("CUDA_MODULE_LOADING", "EAGER", 1) != 0 ||
                        setenv("CUDA_CACHE_DISABLE", "1", 1) != 0))
        rc = KJ_FAIL(err, KJ_EINTERNAL, "sandbox: setenv: %s", strerror(errno));
    return rc;
}

/* 1 when this process is in a box cgroup of ours (RBOX_CG_DIR), whose
 * memory.max limits it. */
static int rbox_in_cgroup(void)
{
    char buf[512];
    FILE *f = fopen("/proc/self/cgroup", "r");
    int in = 0;
    while (f != NULL && fgets(buf, sizeof buf, f) != NULL)
        in |= strstr(buf, "/kjudge/box-") != NULL;
    if (f != NULL)
        fclose(f);
    return in;
}

/* Limits that do not disturb CUDA (no RLIMIT_AS: the driver reserves
 * address space far beyond physical memory). */
static int rbox_limits(int python, struct kj_err *err)
{
    /* A Python box writes Triton's cache and compiled launchers to its /tmp */
    rlim_t fs = python ? RBOX_PY_FSIZE : RBOX_FSIZE;
    struct rlimit core = {0, 0}, nofile = {RBOX_NOFILE, RBOX_NOFILE}, fsize = {fs, fs};
    if (setrlimit(RLIMIT_CORE, &core) != 0 || setrlimit(RLIMIT_NOFILE, &nofile) != 0 ||
        setrlimit(RLIMIT_FSIZE, &fsize) != 0)
        return KJ_FAIL(err, KJ_EINTERNAL, "sandbox: setrlimit: %s", strerror(errno));
    /* Where no cgroup limits the box's memory (the launcher's, tool.c):
     * the submission's own allocations (malloc, anonymous private maps)
     * count; the driver's reservations (PROT_NONE) and device mappings
     * (shared) do not. */
    struct rlimit data = {RBOX_PY_DATA, RBOX_PY_DATA};
    if (python && !rbox_in_cgroup() && setrlimit(RLIMIT_DATA, &data) != 0)
        return KJ_FAIL(err, KJ_EINTERNAL, "sandbox: setrlimit(RLIMIT_DATA): %s", strerror(errno));
    return KJ_OK;
}

static int rbox_unshare(struct kj_err *err)
{
    int rc = sandbox_unshare(CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWNS, err);
    if (rc != KJ_OK)
        return rc;
    if (sethostname("kjbox", 5) != 0)
        return KJ_FAIL(err, KJ_EINTERNAL, "sandbox: sethostname: %s", strerror(errno));
    return KJ_OK;
}

/* A cgroup of its own with memory and pid limits, when root on a host whose
 * cgroup v2 root delegates those controllers; 0 when it is not possible
 * (not an error: the probe reports it). */
int rbox_cgroup_self(char *dir, size_t dirsz)
{
    char path[192], pid[32];
    if (geteuid() != 0 || access(RBOX_CG_ROOT "/cgroup.controllers", F_OK) != 0)
        return 0;
    if (mkdir(RBOX_CG_DIR, 0755) != 0 && errno != EEXIST)
        return 0;
    sandbox_write_file(RBOX_CG_DIR "/cgroup.subtree_control", "+memory +pids");
    snprintf(dir, dirsz, RBOX_CG_DIR "/box-%d", (int)getpid());
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        goto fail;
    snprintf(path, sizeof path, "%s/pids.max", dir);
    if (sandbox_write_file(path, RBOX_CG_PIDS) != 0)
        goto fail;
    snprintf(path, sizeof path, "%s/memory.max", dir);
    if (sandbox_write_file(path, RBOX_CG_MEM) != 0)
        goto fail;
    snprintf(path, sizeof path, "%s/cgroup.procs", dir);
    snprintf(pid, sizeof pid, "%d", (int)getpid());
    if (sandbox_write_file(path, pid) != 0)
        goto fail;
    return 1;
fail:
    rmdir(dir);
    dir[0] = '\0';
    return 0;
}

static int rbox_cgroup(struct rbox *r)
{
    return rbox_cgroup_self(r->cgroup, sizeof r->cgroup);
}

int rbox_prepare(struct rbox *r, const int fds[3], struct kj_err *err)
{
    int rc;
    r->applied = 0;
    r->cgroup[0] = '\0';
    umask(022); /* see the top comment */
    if ((rc = rbox_fds(fds, r->tool, err)) != KJ_OK || (rc = rbox_limits(r->python, err)) != KJ_OK)
        return rc;
    if (r->tool) { /* tool.c made the rest; the box needs its own mount ns for its root */
        if (!(r->skip & RBOX_NS)) {
            if ((rc = sandbox_unshare(CLONE_NEWNS, err)) != KJ_OK)
                return rc;
            r->applied |= RBOX_NS;
        }
        return KJ_OK;
    }
    if (!(r->skip & RBOX_ENV)) {
        if ((rc = rbox_env(err)) != KJ_OK)
            return rc;
        r->applied |= RBOX_ENV;
    }
    if (!(r->skip & RBOX_CGROUP) && rbox_cgroup(r))
        r->applied |= RBOX_CGROUP;
    if (!(r->skip & RBOX_NS)) {
        if ((rc = rbox_unshare(err)) != KJ_OK)
            return rc;
        r->applied |= RBOX_NS;
    }
    return KJ_OK;
}

/* ---------------------------------------------------------------- lock */

/* An empty read-only tmpfs as /, the old root detached. */
static int rbox_fs(struct kj_err *err)
{
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount("kjrun", RBOX_STAGE, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "size=64k,mode=0755") != 0 ||
        mkdir(RBOX_STAGE "/.old", 0700) != 0)
        return KJ_FAIL(err, KJ_EINTERNAL, "sandbox: root tmpfs: %s", strerror(errno));
    if (chdir(RBOX_STAGE) != 0 || syscall(SYS_pivot_root, ".", ".old") != 0 || chdir("/") != 0 ||
        umount2("/.old", MNT_DETACH) != 0 || rmdir("/.old") != 0)
        return KJ_FAIL(err, KJ_EINTERNAL, "sandbox: pivot_root: %s", strerror(errno));
    if (mount(NULL, "/", NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV |
              MS_NOEXEC, NULL) != 0)
        return KJ_FAIL(err, KJ_EINTERNAL, "sandbox: read-only root: %s", strerror(errno));
    return KJ_OK;
}

static int rbox_creds(struct kj_err *err)
{
    struct rlimit nproc = {RBOX_NPROC, RBOX_NPROC};
    int rc = sandbox_drop_creds(geteuid() == 0, err);
    if (rc != KJ_OK)
        return rc;
    if (setrlimit(RLIMIT_NPROC, &nproc) != 0)
        return KJ_FAIL(err, KJ_EINTERNAL, "sandbox: setrlimit: %s", strerror(errno));
    return KJ_OK;
}

/* Refused with EPERM: see the top of rbox.h for why each is here. */
static const char *const rbox_denied[] = {
    "execve", "execveat", "ptrace", "process_vm_readv", "process_vm_writev",
    "kcmp", "pidfd_open", "pidfd_getfd", "pidfd_send_signal",
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "move_mount",
    "open_tree", "fsopen", "fsmount", "fsconfig", "fspick", "mount_setattr",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
    "bpf", "perf_event_open", "add_key", "request_key", "keyctl", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "personality",
    "fork", "vfork", "socketpair", "reboot", "swapon", "swapoff", "acct", "quotactl",
    "syslog", "settimeofday", "clock_settime", "adjtimex", "clock_adjtime",
    "sethostname", "setdomainname", "iopl", "ioperm", "lookup_dcookie",
    "name_to_handle_at", "open_by_handle_at", "setuid", "setgid", "setreuid",
    "setregid", "setresuid", "setresgid", "setgroups", "capset",
};

/* What a Python box may do besides (rbox.h): start processes of its own
 * (Triton runs ptxas and the C compiler at a kernel's first call). They
 * inherit the filter, the uid, the namespaces and the cgroup's limits. */
static const char *const rbox_python_allowed[] = {"execve", "execveat", "fork", "vfork"};

static int rbox_filter(int python, struct kj_err *err)
{
    scmp_filter_ctx f = seccomp_init(SCMP_ACT_ALLOW);
    int rc = f ? 0 : -ENOMEM;
    for (size_t i = 0; rc == 0 && i < sizeof rbox_denied / sizeof rbox_denied[0]; i++) {
        int allowed = 0;
        for (size_t k = 0; python && k < sizeof rbox_python_allowed / sizeof rbox_python_allowed[0]; k++)
            allowed |= strcmp(rbox_denied[i], rbox_python_allowed[k]) == 0;
        if (allowed)
            continue;
        int nr = seccomp_syscall_resolve_name(rbox_denied[i]);
        if (nr != __NR_SCMP_ERROR)
            rc = seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), nr, 0);
    }
    /* Sockets: AF_UNIX only (the driver talks to its daemons over one). */
    if (rc == 0)
        rc = seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 1,
                              SCMP_A0(SCMP_CMP_NE, AF_UNIX));
    /* New threads only: clone without CLONE_THREAD is a fork. clone3 takes
     * its flags in memory the filter cannot read, so it answers ENOSYS and
     * the C library falls back to clone. */
    if (rc == 0 && !python)
        rc = seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                              SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
    if (rc == 0)
        rc = seccomp_rule_add(f, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
    /* Signals to itself only: without a PID namespace and (when the runner
     * is not root) under the runner's own uid, the box could otherwise
     * signal the runner, directly or through its process group (kill(0)). */
    scmp_datum_t self = (scmp_datum_t)getpid();
    const int to_self[] = {SCMP_SYS(kill), SCMP_SYS(tgkill), SCMP_SYS(rt_sigqueueinfo),
                           SCMP_SYS(rt_tgsigqueueinfo)};
    for (size_t i = 0; rc == 0 && i < sizeof to_self / sizeof to_self[0]; i++)
        rc = seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), to_self[i], 1, SCMP_A0(SCMP_CMP_NE, self));
    if (rc == 0)
        rc = seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(tkill), 0);
    return sandbox_load_filter(f, rc, err);
}

int rbox_lock(struct rbox *r, struct kj_err *err)
{
    int rc;
    if (!(r->skip & RBOX_FS) && (r->applied & RBOX_NS)) {
        if ((rc = r->tool ? rbox_tool_fs(r->pci, r, err) : rbox_fs(err)) != KJ_OK)
            return rc;
        r->applied |= RBOX_FS;
    }
    if (!(r->skip & RBOX_CREDS)) {
        if ((rc = rbox_creds(err)) != KJ_OK)
            return rc;
        r->applied |= RBOX_CREDS;
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return KJ_FAIL(err, KJ_EINTERNAL, "sandbox: no_new_privs: %s", strerror(errno));
    if (!(r->skip & RBOX_SECCOMP)) {
        if ((rc = rbox_filter(r->python, err)) != KJ_OK)
            return rc;
        r->applied |= RBOX_SECCOMP;
    }
    return KJ_OK;
}

void rbox_cleanup(int pid)
{
    char path[192];
    snprintf(path, sizeof path, RBOX_CG_DIR "/box-%d", pid);
    if (rmdir(path) == 0 || errno != EBUSY)
        return; /* removed, or the box made none */
    /* Processes the box forked live on in its cgroup (a child that left the
     * box's process group with setsid): end every one of them. */
    snprintf(path, sizeof path, RBOX_CG_DIR "/box-%d/cgroup.kill", pid);
    sandbox_write_file(path, "1");
    snprintf(path, sizeof path, RBOX_CG_DIR "/box-%d", pid);
    for (int i = 0; i < 100 && rmdir(path) != 0 && errno == EBUSY; i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

int rbox_missing(const struct sandbox_probe *p, char *buf, size_t bufsz)
{
    struct { int ok; const char *name; } need[] = {
        {p->root || p->userns, "user namespace (needed when not root)"},
        {p->mountns, "mount namespace"}, {p->netns, "network namespace"},
        {p->ipcns, "IPC namespace"}, {p->utsns, "UTS namespace"},
        {p->pidns, "PID namespace (compile box)"},
        {p->no_new_privs, "no_new_privs"}, {p->seccomp, "seccomp"},
    };
    size_t at = 0;
    int n = 0;
    if (bufsz > 0)
        buf[0] = '\0';
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++) {
        if (need[i].ok)
            continue;
        n++;
        if (at < bufsz)
            at += (size_t)snprintf(buf + at, bufsz - at, "%s%s", at ? ", " : "", need[i].name);
    }
    return n;
}
