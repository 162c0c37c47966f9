/*
 * kj_file.h - read a whole file into memory, with a size cap.
 *
 * Every place that loads a file (leaderboard.json, descriptions, the
 * OpenAPI document, a local submission, test fixtures) goes through
 * kj_read_file so that the cap, the messages and the ownership are the
 * same everywhere.
 */
#ifndef KJ_FILE_H
#define KJ_FILE_H

#include <stddef.h>

struct kj_err;

/* Read the regular file at path into a new NUL-terminated buffer.
 * *out: caller frees it; *len (may be NULL) gets the byte count (the NUL not
 * counted; the file may hold NUL bytes of its own). Returns 0, or
 * KJ_ENOTFOUND (cannot open), KJ_EINVAL (not a regular file), KJ_ELIMIT
 * (more than max bytes), KJ_EIO, KJ_ENOMEM; the message names the path.
 * On failure *out is NULL. */
int kj_read_file(const char *path, size_t max, char **out, size_t *len, struct kj_err *err);

#endif
