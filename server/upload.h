/*
 * upload.h - the multipart/form-data body of POST /api/v1/submissions.
 *
 * http_daemon.c creates an upload on the first callback of a multipart route
 * (upload_new wraps MHD's post processor) and feeds it every chunk;
 * api_submissions.c reads the collected fields and checks the file with
 * upload_check_source(). Fields: leaderboard, gpu, mode (short text) and
 * file (the source, at most KJ_MAX_SOURCE_BYTES). Anything else (a part
 * without a name, an unknown field, a field sent twice, a NUL byte in a
 * text field, a value over its limit, a malformed body) is remembered as
 * the first problem and answered with 400/413 once the body is complete.
 */
#ifndef KJ_UPLOAD_H
#define KJ_UPLOAD_H

#include <stddef.h>
#include "kj_err.h"

#define UPLOAD_MAX_FIELD 64     /* leaderboard, gpu, mode values */
#define UPLOAD_MAX_FILE_NAME 128

struct MHD_Connection;
struct upload;

/* The fields as received; every string is NUL-terminated. */
struct upload_fields {
    int has_leaderboard, has_gpu, has_mode, has_file, has_tool, has_shape;
    char leaderboard[UPLOAD_MAX_FIELD + 1];
    char gpu[UPLOAD_MAX_FIELD + 1];
    char mode[UPLOAD_MAX_FIELD + 1];
    char tool[UPLOAD_MAX_FIELD + 1];      /* sanitize mode: memcheck, racecheck, ... */
    char shape[UPLOAD_MAX_FIELD + 1];     /* profile mode: a benchmark shape's index */
    char file_name[UPLOAD_MAX_FILE_NAME]; /* sanitized base name, "submission.cu" if none */
    int has_file_name;                    /* 1: the upload named its file (not the default) */
    const char *file;                     /* borrowed from the upload until upload_free */
    size_t file_len;
};

/* Create the post processor for conn. KJ_EINVAL when the request is not a
 * multipart/form-data body MHD can parse. Caller frees with upload_free(). */
int upload_new(struct MHD_Connection *conn, size_t max_file, struct upload **out,
               struct kj_err *err);
void upload_free(struct upload *u);
/* Feed one chunk of the body. Returns 0; parse problems are kept for upload_finish. */
int upload_feed(struct upload *u, const char *data, size_t len);
/* After the last chunk: 0 and *f filled, or the first problem: KJ_ELIMIT
 * (file too large: 413) or KJ_EINVAL (400) with err naming the field.
 * A leading UTF-8 byte-order mark is dropped from the file (f->file and
 * f->file_len start after it). */
int upload_finish(struct upload *u, struct upload_fields *f, struct kj_err *err);

/* Check a submitted source: non-empty, at most max bytes, no NUL byte,
 * valid UTF-8 (no overlong forms, surrogates or code points over
 * U+10FFFF). Errors are KJ_EINVAL (KJ_ELIMIT for size) and set err->line
 * to the 1-based line of the first bad byte. */
int upload_check_source(const char *src, size_t len, size_t max, struct kj_err *err);

#endif
