/*
 * test_cbox_sandbox.c - the compile box's sandbox (runner/cbox.c, runner/
 * sandbox.c): small probes run inside the same box as a compile and check
 * each defense (no network, read-only file system, uid, capabilities,
 * no_new_privs, fds, environment, limits, private /tmp, PID namespace, the
 * seccomp allow-list); hostile sources end as compile errors with nothing
 * leaked. A protection the host lacks is a SKIP with the reason.
 */
#define KT_MAIN
#include "kt.h"
#include "cbox.h"
#include "sandbox.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* ---- probes: each returns 0 when the defense holds, else a code ---- */

static int p_socket(void *arg)
{
    (void)arg;
    return socket(AF_INET, SOCK_STREAM, 0) < 0 && errno == EPERM ? 0 : 1;
}

static int p_connect(void *arg)
{
    struct sockaddr_in a;
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0)
        return 2; /* this probe runs without the filter: socket() must work */
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)*(int *)arg);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return connect(s, (struct sockaddr *)&a, sizeof a) != 0 ? 0 : 1;
}

static int p_files(void *arg)
{
    const char *home = arg;
    char path[4200];
    int bad = 0;
    if (open("/kj_marker", O_CREAT | O_WRONLY, 0644) >= 0)
        bad |= 1;
    snprintf(path, sizeof path, "%s/include/kj_marker", home);
    if (open(path, O_CREAT | O_WRONLY, 0644) >= 0)
        bad |= 2;
    snprintf(path, sizeof path, "%s/include/cuda_fp16.h", home);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        bad |= 4; /* the toolkit must stay readable */
    else
        close(fd);
    if (open("/etc/passwd", O_RDONLY) >= 0 || open("/work", O_RDONLY) >= 0)
        bad |= 8;
    if (open("/proc/1/root/etc/passwd", O_RDONLY) >= 0)
        bad |= 16;
    return bad;
}

static int p_execve(void *arg)
{
    char *const argv[] = {"true", NULL}, *const envp[] = {NULL};
    (void)arg;
    execve("/bin/true", argv, envp);
    return 0; /* it returned: it failed */
}

static int p_uid(void *arg)
{
    (void)arg;
    return getuid() == SANDBOX_UID && geteuid() == SANDBOX_UID && getgid() == SANDBOX_UID ? 0 : 1;
}

/* NoNewPrivs 1, and no capability in any set. */
static int p_status(void *arg)
{
    char buf[4096];
    int fd = open("/proc/self/status", O_RDONLY), bad = 0;
    (void)arg;
    if (fd < 0)
        return 64;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 65;
    buf[n] = '\0';
    bad |= strstr(buf, "NoNewPrivs:\t1\n") ? 0 : 1;
    bad |= strstr(buf, "CapEff:\t0000000000000000\n") ? 0 : 2;
    bad |= strstr(buf, "CapPrm:\t0000000000000000\n") ? 0 : 4;
    bad |= strstr(buf, "CapBnd:\t0000000000000000\n") ? 0 : 8;
    bad |= strstr(buf, "Seccomp:\t2\n") ? 0 : 16;
    return bad;
}

/* Exactly 0-3 open. */
static int p_fds(void *arg)
{
    (void)arg;
    for (int fd = 0; fd < 1024; fd++)
        if ((fcntl(fd, F_GETFD) >= 0) != (fd <= SANDBOX_FD))
            return 100 + fd;
    return 0;
}

/* The environment is exactly the rebuilt one (arg: the expected entries). */
static int p_env(void *arg)
{
    const char *const *want = arg;
    size_t n = 0, w = 0;
    for (; environ[n]; n++) {
        size_t i = 0;
        while (want[i] && strcmp(want[i], environ[n]) != 0)
            i++;
        if (want[i] == NULL)
            return 100 + (int)n;
    }
    while (want[w])
        w++;
    return n == w ? 0 : 1;
}

static int p_limits(void *arg)
{
    struct rlimit r;
    int bad = 0;
    (void)arg;
    bad |= getrlimit(RLIMIT_CORE, &r) == 0 && r.rlim_max == 0 ? 0 : 1;
    bad |= getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_max <= 64 ? 0 : 2;
    bad |= getrlimit(RLIMIT_FSIZE, &r) == 0 && r.rlim_max != RLIM_INFINITY ? 0 : 4;
    bad |= getrlimit(RLIMIT_NPROC, &r) == 0 && r.rlim_max != RLIM_INFINITY ? 0 : 8;
    bad |= getrlimit(RLIMIT_CPU, &r) == 0 && r.rlim_max == CBOX_CPU_S ? 0 : 16;
    return bad;
}

static int p_mark(void *arg)
{
    int fd = open("/tmp/kj_marker", O_CREAT | O_WRONLY, 0644);
    (void)arg;
    return fd >= 0 && write(fd, "x", 1) == 1 && close(fd) == 0 ? 0 : 1;
}

static int p_nomark(void *arg)
{
    (void)arg;
    return access("/tmp/kj_marker", F_OK) != 0 ? 0 : 1;
}

static int p_ns(void *arg)
{
    struct utsname u;
    (void)arg;
    if (getpid() != 2)
        return 1; /* PID 1 is the namespace's init, the worker is 2 */
    if (access("/proc/3", F_OK) == 0 || access("/proc/1", F_OK) != 0)
        return 2;
    return uname(&u) == 0 && strcmp(u.nodename, "kjbox") == 0 ? 0 : 3;
}

/* ASan's allocator and UBSan work under the filter. */
static int p_heap(void *arg)
{
    (void)arg;
    char *p = malloc(1 << 20);
    if (p == NULL)
        return 1;
    memset(p, 7, 1 << 20);
    int ok = p[12345] == 7;
    free(p);
    char *q = calloc(1000, 1000);
    ok = ok && q && q[999] == 0;
    free(q);
    return ok ? 0 : 2;
}

/* One denied syscall, by number, with harmless arguments. */
static int p_sys(void *arg)
{
    long nr = *(long *)arg;
    return (int)syscall(nr, 0, 0, 0, 0, 0, 0);
}

/* ---- the tests ---- */

static int box(int (*fn)(void *), void *arg, unsigned flags, struct kj_err *err)
{
    int result = -1000;
    kj_err_clear(err);
    int rc = cbox_run_in_box(fn, arg, flags, NULL, &result, err);
    return rc == KJ_OK ? result : -2000 + rc;
}

static void test_network(void)
{
    struct sockaddr_in a;
    socklen_t alen = sizeof a;
    struct kj_err err;
    int ls = socket(AF_INET, SOCK_STREAM, 0), port = 0;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (ls >= 0 && bind(ls, (struct sockaddr *)&a, sizeof a) == 0 && listen(ls, 4) == 0 &&
        getsockname(ls, (struct sockaddr *)&a, &alen) == 0)
        port = ntohs(a.sin_port);
    KT_CHECK(port > 0, "a loopback listener for the test: %s", strerror(errno));
    KT_CHECK(box(p_socket, NULL, 0, &err) == 0, "socket() is refused (EPERM): %s", err.msg);
    KT_CHECK(box(p_connect, &port, CBOX_NO_FILTER, &err) == 0,
             "without the filter, connect to the host's 127.0.0.1:%d fails (empty net ns): %s",
             port, err.msg);
    if (ls >= 0)
        close(ls);
}

static void test_identity(void)
{
    struct kj_err err;
    int r;
    if (geteuid() == 0)
        KT_CHECK((r = box(p_uid, NULL, 0, &err)) == 0, "uid is %d, not 0: %d %s", SANDBOX_UID,
                 r, err.msg);
    else
        KT_CHECK((r = box(p_uid, NULL, 0, &err)) == 0, "uid is %d in the user ns: %d %s",
                 SANDBOX_UID, r, err.msg);
    KT_CHECK((r = box(p_status, NULL, 0, &err)) == 0,
             "NoNewPrivs 1, no capabilities, seccomp on (bits %d) %s", r, err.msg);
    KT_CHECK((r = box(p_fds, NULL, 0, &err)) == 0, "only fds 0-3 open (%d) %s", r, err.msg);
    KT_CHECK((r = box(p_limits, NULL, 0, &err)) == 0, "rlimits set (bits %d) %s", r, err.msg);
    KT_CHECK((r = box(p_ns, NULL, 0, &err)) == 0, "own PID and UTS namespaces (%d) %s", r,
             err.msg);
    KT_CHECK((r = box(p_heap, NULL, 0, &err)) == 0, "the heap (ASan's in this build) works "
             "under the filter (%d) %s", r, err.msg);
}

static void test_env(void)
{
    const char *want[8] = {"CUDA_CACHE_DISABLE=1", "HOME=/tmp", "PATH=/usr/bin:/bin",
                           "TMPDIR=/tmp", NULL, NULL};
    char cuda[4200];
    struct kj_err err;
    const char *home = getenv("CUDA_HOME");
    int r;
    if (home && home[0] == '/') {
        snprintf(cuda, sizeof cuda, "CUDA_HOME=%s", home);
        want[4] = cuda;
    }
    setenv("KJ_SECRET_TOKEN", "do-not-leak", 1);
    KT_CHECK((r = box(p_env, want, 0, &err)) == 0, "the environment is exactly the rebuilt one "
             "(%d) %s", r, err.msg);
    unsetenv("KJ_SECRET_TOKEN");
}

static void test_files(void)
{
    const char *home = getenv("CUDA_HOME");
    struct kj_err err;
    int r;
    if (home == NULL || home[0] != '/')
        home = "/usr/local/cuda";
    KT_CHECK((r = box(p_files, (void *)home, 0, &err)) == 0,
             "read-only root and toolkit, no host files (bits %d) %s", r, err.msg);
    KT_CHECK((r = box(p_mark, NULL, 0, &err)) == 0, "/tmp is writable (%d) %s", r, err.msg);
    KT_CHECK((r = box(p_nomark, NULL, 0, &err)) == 0, "a marker from the last box is gone (%d) %s",
             r, err.msg);
    KT_CHECK(access("/tmp/kj_marker", F_OK) != 0, "and never reached the host's /tmp");
}

static void test_denied(void)
{
    static const struct { long nr; const char *name; } deny[] = {
        {SYS_execve, "execve"}, {SYS_execveat, "execveat"}, {SYS_fork, "fork"},
        {SYS_vfork, "vfork"}, {SYS_clone, "clone"}, {SYS_clone3, "clone3"},
        {SYS_ptrace, "ptrace"}, {SYS_process_vm_readv, "process_vm_readv"},
        {SYS_process_vm_writev, "process_vm_writev"}, {SYS_bpf, "bpf"},
        {SYS_perf_event_open, "perf_event_open"}, {SYS_userfaultfd, "userfaultfd"},
        {SYS_mount, "mount"}, {SYS_umount2, "umount2"}, {SYS_pivot_root, "pivot_root"},
        {SYS_unshare, "unshare"}, {SYS_setns, "setns"}, {SYS_keyctl, "keyctl"},
        {SYS_add_key, "add_key"}, {SYS_request_key, "request_key"},
        {SYS_io_uring_setup, "io_uring_setup"}, {SYS_io_uring_enter, "io_uring_enter"},
        {SYS_kexec_load, "kexec_load"}, {SYS_init_module, "init_module"},
        {SYS_finit_module, "finit_module"}, {SYS_reboot, "reboot"}, {SYS_connect, "connect"},
        {SYS_bind, "bind"}, {SYS_kill, "kill"}, {SYS_ioctl, "ioctl"},
    };
    struct kj_err err;
    for (size_t i = 0; i < sizeof deny / sizeof deny[0]; i++) {
        long nr = deny[i].nr;
        int r = box(p_sys, &nr, 0, &err);
        KT_CHECK(r == -2000 + KJ_EINTERNAL && strstr(err.msg, deny[i].name) &&
                 strstr(err.msg, "seccomp"), "%s is stopped by the filter, named: %d %s",
                 deny[i].name, r, err.msg);
    }
    KT_CHECK(box(p_execve, NULL, 0, &err) == -2000 + KJ_EINTERNAL && strstr(err.msg, "execve"),
             "execve(\"/bin/true\") stops the box: %s", err.msg);
    KT_CHECK(box(p_execve, NULL, CBOX_NO_FILTER, &err) == 0,
             "without the filter execve still fails (no /bin in the box): %s", err.msg);
}

/* ---- hostile sources through the real compile box ---- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void compile_ce(const char *what, const char *src, const char *leak, double max_s)
{
    struct directives d;
    struct compile_result r;
    struct kj_err err;
    memset(&r, 0, sizeof r);
    KT_CHECK(dir_parse(src, strlen(src), &d, &err) == KJ_OK, "%s: directives: %s", what, err.msg);
    double t0 = now();
    int rc = cbox_compile(src, strlen(src), &d, "sm_90a", &r, &err);
    double dt = now() - t0;
    KT_CHECK(rc == KJ_OK && !r.ok && r.log, "%s: a compile error, not a judge error: %d %s", what,
             rc, rc ? err.msg : "");
    KT_CHECK(r.log == NULL || leak == NULL || strstr(r.log, leak) == NULL,
             "%s: nothing of the file in the log: %s", what, r.log);
    KT_CHECK(dt < max_s, "%s: ended in %.1f s", what, dt);
    compile_result_free(&r);
}

#define KLINE "//!kjudge launch k grid=(1) block=(32)\n"
#define KBODY "extern \"C\" __global__ void k(int* x) { x[threadIdx.x] = 1; }\n"

/* Exponential template instantiation: stopped by the CPU limit (or the wall
 * deadline); started first and collected last, so it overlaps the rest. */
static const char *bomb =
    KLINE "template <int N, typename T> struct E {\n"
    "  static constexpr long v = E<N - 1, T*>::v + E<N - 1, const T>::v; };\n"
    "template <typename T> struct E<0, T> { static constexpr long v = sizeof(T); };\n"
    "extern \"C\" __global__ void k(long* x) { x[threadIdx.x] = E<40, int>::v; }\n";

static void test_sources(void)
{
    compile_ce("#include \"/etc/passwd\"", KLINE "#include \"/etc/passwd\"\n" KBODY, "root:", 10);
    compile_ce("#include \"/proc/self/environ\"", KLINE "#include \"/proc/self/environ\"\n" KBODY,
               "PATH=", 10);
    compile_ce("#include </etc/shadow>", KLINE "#include </etc/shadow>\n" KBODY, "root:", 10);
    compile_ce("template recursion",
               KLINE "template <int N> struct R { static const int v = R<N + 1>::v + 1; };\n"
               "extern \"C\" __global__ void k(int* x) { x[threadIdx.x] = R<0>::v; }\n", NULL, 20);
}

static void print_probe(const struct sandbox_probe *p)
{
    fprintf(stderr, "probe: root=%d userns=%d mountns=%d netns=%d pidns=%d ipcns=%d utsns=%d "
            "no_new_privs=%d seccomp=%d landlock_abi=%d\n", p->root, p->userns, p->mountns,
            p->netns, p->pidns, p->ipcns, p->utsns, p->no_new_privs, p->seccomp, p->landlock_abi);
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    struct sandbox_probe p;
    struct directives bd;
    struct compile_result br;
    struct cbox_proc bp;
    struct kj_err err;
    sandbox_probe(&p);
    print_probe(&p);
    KT_CHECK(p.no_new_privs && p.seccomp, "no_new_privs and seccomp are on every supported host");
    if (!(p.mountns && p.netns && p.pidns && p.ipcns && p.utsns && (p.root || p.userns))) {
        KT_SKIP("this host cannot create the box's namespaces (see the probe line); "
                "the compile box fails closed here");
        return kt_done("test_cbox_sandbox");
    }
    memset(&br, 0, sizeof br);
    double t0 = now();
    int started = dir_parse(bomb, strlen(bomb), &bd, &err) == KJ_OK &&
                  cbox_start(bomb, strlen(bomb), &bd, "sm_90a", NULL, &bp, &err) == KJ_OK;
    KT_CHECK(started, "the bomb's box started: %s", err.msg);

    KT_RUN(test_network());
    KT_RUN(test_identity());
    KT_RUN(test_env());
    KT_RUN(test_files());
    KT_RUN(test_denied());
    KT_RUN(test_sources());

    if (started) {
        /* The other checks ran meanwhile; the box's wall limit counts from
         * its start, so it ends by then (or at once if that has passed). */
        double t1 = now() - t0;
        int rc = cbox_finish(&bp, "sm_90a", &br, &err);
        double dt = now() - t0, bound = (t1 > CBOX_WALL_S ? t1 : CBOX_WALL_S) + 15;
        KT_CHECK(rc == KJ_OK && !br.ok && br.log && strstr(br.log, "compilation stopped"),
                 "the template bomb is a compile error at a limit: %d %s", rc,
                 br.log ? br.log : err.msg);
        KT_CHECK(dt < bound, "it ended within the limits (%.1f s after its start, bound %.1f s)",
                 dt, bound);
        compile_result_free(&br);
    }
    return kt_done("test_cbox_sandbox");
}
