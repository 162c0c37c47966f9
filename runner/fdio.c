/*
 * fdio.c - see fdio.h: loops over write(2)/read(2) until the whole buffer
 * has moved, so callers never handle partial transfers.
 */
#include "fdio.h"
#include "mono.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
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
