/*
 * fdio.h - whole-buffer reads and writes on pipes, retrying short transfers
 * and EINTR. Used by the run box and the compile box to move their
 * fixed-size messages, logs and cubins between processes.
 */
#ifndef KJ_FDIO_H
#define KJ_FDIO_H

#include <stddef.h>

/* 0 when all n bytes went out / came in; -1 on error or end of file. */
int fdio_write_full(int fd, const void *p, size_t n);
int fdio_read_full(int fd, void *p, size_t n);

#endif
