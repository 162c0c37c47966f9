/*
 * fdio.h - whole-buffer reads and writes on pipes, retrying short transfers
 * and EINTR, and waiting for a pipe under a deadline. Used by the run box and the compile box to move their
 * fixed-size messages, logs and cubins between processes; and a program's
 * output read whole under a deadline (ncu --import, the Python
 * environment's answers).
 */
#ifndef KJ_FDIO_H
#define KJ_FDIO_H

#include <stddef.h>
#include "kj_err.h"

/* 0 when all n bytes went out / came in; -1 on error or end of file. */
int fdio_write_full(int fd, const void *p, size_t n);
/* The same on a socket, with MSG_NOSIGNAL: a peer that is gone is -1, not
 * a SIGPIPE (compile-ahead's socket, ahead.h). */
int fdio_send_full(int fd, const void *p, size_t n);
/* fdio_write_full on a pipe whose reader may be gone (a box that died):
 * -1 then, and no SIGPIPE (blocked in this thread for the write, a pending
 * one taken before it is unblocked). */
int fdio_write_quiet(int fd, const void *p, size_t n);
int fdio_read_full(int fd, void *p, size_t n);

/* Wait until fd can be read (data or end of file) or deadline (mono.h
 * seconds) passes: 1 readable, 0 the deadline passed, -1 poll failed.
 * Interrupted waits go on with the time that is left. */
int fdio_wait(int fd, double deadline);

/* Run argv[0] (a path) with argv, stdin and stderr on /dev/null, and read
 * what it prints on stdout until it closes it or deadline passes. KJ_OK
 * with *out (malloc'd, NUL-terminated, the caller frees it), *len and the
 * exit status in *status (waitpid's); KJ_ETIMEOUT when the deadline passed
 * first, KJ_ELIMIT past max bytes, KJ_EIO/KJ_ENOMEM otherwise: then *out is
 * NULL, and the program was killed. The child dies with the caller. */
int fdio_capture(char *const argv[], double deadline, size_t max, char **out, size_t *len,
                 int *status, struct kj_err *err);

#endif
