/*
 * fdio.c - see fdio.h: loops over write(2)/read(2) until the whole buffer
 * has moved, so callers never handle partial transfers.
 */
#include "fdio.h"
#include "mono.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* write(2), or send(2) with MSG_NOSIGNAL on a socket, until all is out. */
static int fdio_out(int fd, const void *p, size_t n, int sock)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = sock ? send(fd, c, n, MSG_NOSIGNAL) : write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

int fdio_write_full(int fd, const void *p, size_t n)
{
    return fdio_out(fd, p, n, 0);
}

int fdio_write_quiet(int fd, const void *p, size_t n)
{
    sigset_t pipe_only, old;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    if (pthread_sigmask(SIG_BLOCK, &pipe_only, &old) != 0)
        return -1;
    int rc = fdio_out(fd, p, n, 0);
    if (rc != 0 && errno == EPIPE) {
        struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe_only, NULL, &zero) < 0 && errno == EINTR)
            ;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

int fdio_send_full(int fd, const void *p, size_t n)
{
    return fdio_out(fd, p, n, 1);
}

int fdio_read_full(int fd, void *p, size_t n)
{
    char *c = p;
    while (n > 0) {
        ssize_t r = read(fd, c, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        c += r;
        n -= (size_t)r;
    }
    return 0;
}

int fdio_wait(int fd, double deadline)
{
    struct pollfd pf = {fd, POLLIN, 0};
    for (;;) {
        double left = deadline - mono_now();
        if (left <= 0)
            return 0;
        int r = poll(&pf, 1, (int)(left * 1000) + 1);
        if (r > 0)
            return 1;
        if (r < 0 && errno != EINTR)
            return -1;
    }
}

int fdio_capture(char *const argv[], double deadline, size_t max, char **out, size_t *len,
                 int *status, struct kj_err *err)
{
    int fds[2];
    *out = NULL;
    *len = 0;
    *status = 0;
    if (pipe2(fds, O_CLOEXEC) != 0)
        return KJ_FAIL(err, KJ_EIO, "pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return KJ_FAIL(err, KJ_EIO, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (null < 0 || dup2(null, 0) < 0 || dup2(fds[1], 1) < 0 || dup2(null, 2) < 0)
            _exit(127);
        execv(argv[0], argv);
        _exit(127);
    }
    close(fds[1]);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    int rc = buf ? KJ_OK : KJ_FAIL(err, KJ_ENOMEM, "out of memory");
    while (rc == KJ_OK) {
        if (fdio_wait(fds[0], deadline) == 0) {
            rc = KJ_FAIL(err, KJ_ETIMEOUT, "%s took too long", argv[0]);
            break;
        }
        if (n + 4096 + 1 > cap) {
            char *nb = cap * 2 > max ? NULL : realloc(buf, cap * 2);
            if (nb == NULL) {
                rc = KJ_FAIL(err, KJ_ELIMIT, "%s printed more than %zu bytes", argv[0], max);
                break;
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t r = read(fds[0], buf + n, cap - n - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fds[0]);
    kill(pid, SIGKILL);
    while (waitpid(pid, status, 0) < 0 && errno == EINTR)
        ;
    if (rc != KJ_OK) {
        free(buf);
        return rc;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return KJ_OK;
}
