/*
 * test_rbox.c - the run box's sandbox (runner/rbox.c) without a GPU.
 *
 * A child builds the box exactly as a run box does (rbox_prepare, then
 * rbox_lock where CUDA would have been set up) and tries what a hostile
 * kernel's host code would: reach a loopback listener of the host, open
 * host files, list processes, write anywhere, exec, fork, trace or signal
 * its parent, keep inherited fds or environment. Each attempt's outcome
 * comes back over the box's reply pipe. A second child skips the seccomp
 * filter to show the namespaces and the empty root hold on their own.
 * Prints "test_rbox: N passed, N failed, N skipped".
 */
#define KT_MAIN
#include "kt.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rbox.h"
#include "sandbox.h"

enum {
    T_TCP_SOCKET, T_TCP_CONNECT, T_UNIX_SOCKET, T_PASSWD, T_PROC, T_WRITE_ROOT, T_WRITE_TMP,
    T_EXEC, T_FORK, T_THREAD, T_PTRACE, T_KILL_PARENT, T_UID, T_FDS, T_STDOUT_NULL,
    T_HOSTNAME, T_ENV, T_UNSHARE, T_COUNT
};
static const char *const t_names[T_COUNT] = {
    "a TCP socket is refused", "the host's loopback listener is unreachable",
    "an AF_UNIX socket is allowed (cuInit needs one)", "/etc/passwd cannot be opened",
    "/proc lists no processes", "/ is not writable", "/tmp is not writable",
    "exec fails", "fork fails", "a thread can start", "ptrace of the parent fails",
    "only itself can be signalled (not the parent, not its group)", "the uid is 65534", "only fds 0-5 are open",
    "stdout is /dev/null", "the hostname is the box's", "the environment was rebuilt",
    "new namespaces are refused",
};

static int listen_port;

static void *thread_fn(void *arg) { return arg; }

/* Runs in the box; result[i] = 1 when attempt i was contained. */
static void probe(unsigned char *result)
{
    struct sockaddr_in a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    result[T_TCP_SOCKET] = fd < 0;
    if (fd >= 0) {
        memset(&a, 0, sizeof a);
        a.sin_family = AF_INET;
        a.sin_port = htons((uint16_t)listen_port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        result[T_TCP_CONNECT] = connect(fd, (struct sockaddr *)&a, sizeof a) != 0;
        close(fd);
    } else {
        result[T_TCP_CONNECT] = 1;
    }
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    result[T_UNIX_SOCKET] = fd >= 0;
    if (fd >= 0)
        close(fd);
    result[T_PASSWD] = open("/etc/passwd", O_RDONLY) < 0;
    DIR *d = opendir("/proc");
    int procs = 0;
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL)
        procs += e->d_name[0] >= '1' && e->d_name[0] <= '9';
    if (d != NULL)
        closedir(d);
    result[T_PROC] = procs == 0;
    result[T_WRITE_ROOT] = open("/owned", O_WRONLY | O_CREAT, 0644) < 0;
    result[T_WRITE_TMP] = open("/tmp/owned", O_WRONLY | O_CREAT, 0644) < 0;
    char *argv[] = {"/bin/true", NULL};
    execv("/bin/true", argv);
    result[T_EXEC] = 1; /* still here */
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    result[T_FORK] = pid < 0;
    if (pid > 0)
        waitpid(pid, NULL, 0);
    pthread_t t;
    result[T_THREAD] = pthread_create(&t, NULL, thread_fn, NULL) == 0 && pthread_join(t, NULL) == 0;
    result[T_PTRACE] = ptrace(PTRACE_ATTACH, getppid(), NULL, NULL) != 0;
    result[T_KILL_PARENT] = kill(getppid(), 0) != 0 && kill(getppid(), SIGCONT) != 0 &&
                            kill(0, SIGCONT) != 0 && kill(getpid(), 0) == 0;
    result[T_UID] = getuid() == SANDBOX_UID && geteuid() == SANDBOX_UID;
    int extra = 0;
    for (int f = RBOX_FD_INFO + 1; f < 256; f++)
        extra += fcntl(f, F_GETFD) >= 0;
    result[T_FDS] = extra == 0 && fcntl(RBOX_FD_IN, F_GETFD) >= 0;
    struct stat st, nst;
    result[T_STDOUT_NULL] = fstat(1, &st) == 0 && S_ISCHR(st.st_mode) && stat("/dev/null", &nst) != 0;
    char host[64] = "";
    gethostname(host, sizeof host);
    result[T_HOSTNAME] = strcmp(host, "kjbox") == 0;
    result[T_ENV] = getenv("KJ_TEST_SECRET") == NULL && getenv("PATH") != NULL &&
                    strcmp(getenv("CUDA_CACHE_DISABLE"), "1") == 0;
    result[T_UNSHARE] = unshare(CLONE_NEWNET) != 0;
}

/* Build a box with skip in a child and collect its results. */
static int run_box(unsigned skip, unsigned char *result, unsigned *applied, char *msg, size_t msgsz)
{
    int p[3][2];
    for (int i = 0; i < 3; i++)
        if (pipe(p[i]) != 0)
            return -1;
    pid_t pid = fork();
    if (pid == 0) {
        struct rbox rb;
        struct kj_err err;
        unsigned char out[T_COUNT + 1 + 300];
        int fds[3] = {p[0][0], p[1][1], p[2][1]};
        memset(&rb, 0, sizeof rb);
        memset(out, 0, sizeof out);
        rb.skip = skip;
        kj_err_clear(&err);
        if (rbox_prepare(&rb, fds, &err) != KJ_OK || rbox_lock(&rb, &err) != KJ_OK) {
            memcpy(out + T_COUNT + 1, err.msg, sizeof err.msg);
            out[T_COUNT] = 0xff;
        } else {
            probe(out);
            out[T_COUNT] = (unsigned char)rb.applied;
        }
        /* After a failure the pipe may not have moved yet. */
        ssize_t w = write(out[T_COUNT] == 0xff ? p[1][1] : RBOX_FD_OUT, out, sizeof out);
        if (w < 0)
            w = write(RBOX_FD_OUT, out, sizeof out);
        _exit(w == (ssize_t)sizeof out ? 0 : 1);
    }
    for (int i = 0; i < 3; i++) {
        close(i == 0 ? p[i][0] : p[i][1]);
    }
    unsigned char in[T_COUNT + 1 + 300];
    ssize_t n = read(p[1][0], in, sizeof in);
    int status = 0;
    waitpid(pid, &status, 0);
    close(p[0][1]);
    close(p[1][0]);
    close(p[2][0]);
    if (n != (ssize_t)sizeof in)
        return -1;
    if (in[T_COUNT] == 0xff) {
        snprintf(msg, msgsz, "%s", (char *)in + T_COUNT + 1);
        return -1;
    }
    memcpy(result, in, T_COUNT);
    *applied = in[T_COUNT];
    return 0;
}

int main(int argc, char **argv)
{
    kt_init(argc, argv);
    struct sandbox_probe sp;
    unsigned char r[T_COUNT];
    unsigned applied = 0, skip = 0;
    char msg[300] = "", desc[64];
    struct kj_err err;

    setenv("KJ_TEST_SECRET", "hunter2", 1);
    sandbox_probe(&sp);
    if (!(sp.mountns && sp.netns && sp.ipcns && sp.utsns && (sp.root || sp.userns) && sp.seccomp)) {
        KT_SKIP("this host cannot create the run box's namespaces or filter; the box fails closed here");
        return kt_done("test_rbox");
    }
    /* A listener of the host on loopback. */
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    socklen_t alen = sizeof a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) != 0 || listen(ls, 4) != 0 ||
        getsockname(ls, (struct sockaddr *)&a, &alen) != 0) {
        KT_CHECK(0, "cannot listen on loopback");
        return kt_done("test_rbox");
    }
    listen_port = ntohs(a.sin_port);

    KT_CHECK(run_box(0, r, &applied, msg, sizeof msg) == 0, "the box builds: %s", msg);
    rbox_describe(applied, desc, sizeof desc);
    printf("run box applied: %s\n", desc);
    KT_CHECK((applied & (RBOX_NS | RBOX_FS | RBOX_CREDS | RBOX_SECCOMP | RBOX_ENV)) ==
             (RBOX_NS | RBOX_FS | RBOX_CREDS | RBOX_SECCOMP | RBOX_ENV), "every protection applied: %s", desc);
    for (int i = 0; i < T_COUNT; i++)
        KT_CHECK(r[i] == 1, "%s", t_names[i]);

    /* Without the filter: the namespaces and the empty root still hold. */
    KT_CHECK(run_box(RBOX_SECCOMP, r, &applied, msg, sizeof msg) == 0, "box without filter: %s", msg);
    KT_CHECK(!(applied & RBOX_SECCOMP), "the filter was skipped");
    KT_CHECK(r[T_TCP_SOCKET] == 0, "without the filter a TCP socket can be made");
    KT_CHECK(r[T_TCP_CONNECT] == 1, "but the host's listener is still unreachable (network namespace)");
    KT_CHECK(r[T_PASSWD] == 1 && r[T_PROC] == 1 && r[T_WRITE_ROOT] == 1,
             "and the host's files and processes are still invisible (empty root)");
    KT_CHECK(r[T_EXEC] == 1, "and nothing can be executed (empty root)");

    /* "env" (for a profiler) keeps the environment and only that. */
    KT_CHECK(run_box(RBOX_ENV, r, &applied, msg, sizeof msg) == 0, "box keeping the environment: %s", msg);
    KT_CHECK(!(applied & RBOX_ENV) && (applied & RBOX_SECCOMP), "only the environment step was skipped");
    KT_CHECK(r[T_ENV] == 0, "the runner's environment reached the box");
    KT_CHECK(r[T_PASSWD] == 1 && r[T_TCP_CONNECT] == 1, "and the other protections still hold");

    /* What a host lacks is named; a cgroup is never required. */
    struct sandbox_probe all, some;
    char miss[512];
    memset(&all, 0, sizeof all);
    all.root = all.mountns = all.netns = all.ipcns = all.utsns = all.pidns = 1;
    all.no_new_privs = all.seccomp = 1;
    KT_CHECK(rbox_missing(&all, miss, sizeof miss) == 0 && miss[0] == '\0', "root host with all: %s", miss);
    some = all;
    some.root = 0;
    some.userns = 0;
    some.seccomp = 0;
    some.pidns = 0;
    KT_CHECK(rbox_missing(&some, miss, sizeof miss) == 3 && strstr(miss, "user namespace") &&
             strstr(miss, "seccomp") && strstr(miss, "PID namespace"), "missing three: %s", miss);
    some = all;
    some.root = 0;
    some.userns = 1;
    KT_CHECK(rbox_missing(&some, miss, 8) == 0, "a non-root host with user namespaces needs nothing more");
    some.netns = 0;
    KT_CHECK(rbox_missing(&some, miss, 8) == 1 && strlen(miss) < 8, "a short buffer is cut, not overrun");
    KT_CHECK(rbox_missing(&sp, miss, sizeof miss) == 0, "this host has what the boxes need: %s", miss);

    /* The skip list is parsed strictly. */
    kj_err_clear(&err);
    KT_CHECK(rbox_parse_skip("seccomp,fs", &skip, &err) == KJ_OK && skip == (RBOX_SECCOMP | RBOX_FS),
             "skip list parses");
    KT_CHECK(rbox_parse_skip("env,cgroup", &skip, &err) == KJ_OK && skip == (RBOX_ENV | RBOX_CGROUP),
             "env and cgroup parse");
    KT_CHECK(rbox_parse_skip("seccomp,nope", &skip, &err) == KJ_EINVAL && strstr(err.msg, "nope"),
             "unknown word refused: %s", err.msg);
    KT_CHECK(rbox_parse_skip(NULL, &skip, &err) == KJ_OK && skip == 0, "NULL skips nothing");
    close(ls);
    return kt_done("test_rbox");
}
