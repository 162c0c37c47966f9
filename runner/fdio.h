/*
 * fdio.h - whole-buffer reads and writes on pipes, retrying short transfers
 * and EINTR, and waiting for a pipe under a deadline. Used by the run box and the compile box to move their
 * fixed-size messages, logs and cubins between processes.
 */
#ifndef KJ_FDIO_H
#define KJ_FDIO_H

#include <stddef.h>

/* 0 when all n bytes went out / came in; -1 on error or end of file. */
int fdio_write_full(int fd, const void *p, size_t n);
/* The same on a socket, with MSG_NOSIGNAL: a peer that is gone is -1, not
 * a SIGPIPE (compile-ahead's socket, ahead.h). */
int fdio_send_full(int fd, const void *p, size_t n);
int fdio_read_full(int fd, void *p, size_t n);

/* Wait until fd can be read (data or end of file) or deadline (mono.h
 * seconds) passes: 1 readable, 0 the deadline passed, -1 poll failed.
 * Interrupted waits go on with the time that is left. */
int fdio_wait(int fd, double deadline);

#endif
