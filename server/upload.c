/*
 * upload.c - collect the fields of a multipart/form-data submission with
 * MHD's post processor, and check a submitted source (size, NUL, UTF-8).
 *
 * Fed by http_daemon.c chunk by chunk; read by api_submissions.c through
 * upload_finish(). Only the first problem is kept: the body is still read
 * to its end so that the client gets a proper 4xx answer.
 */
#include "upload.h"
#include "kj_utf8.h"
#include "server.h"

#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UPLOAD_PP_BUFFER 8192

struct upload {
    struct MHD_PostProcessor *pp; /* owned */
    size_t max_file;
    struct upload_fields f;
    char *file;                   /* owned, max_file + 1 bytes once the file part starts */
    int problem;                  /* 0, KJ_EINVAL or KJ_ELIMIT */
    char why[160];                /* first problem, for the client */
};

static void set_problem(struct upload *u, int code, const char *fmt, const char *arg)
{
    if (u->problem != 0)
        return;
    u->problem = code;
    snprintf(u->why, sizeof u->why, fmt, arg);
}

/* The base name of in, made safe, into out; "submission.cu" when nothing
 * is left. Returns 1 when out is the upload's own name, 0 for the default. */
static int sanitize_name(const char *in, char *out, size_t outsz)
{
    const char *base = in;
    size_t n = 0;
    for (const char *p = in; *p; p++)
        if (*p == '/' || *p == '\\')
            base = p + 1;
    for (const char *p = base; *p && n + 1 < outsz; p++) {
        unsigned char c = (unsigned char)*p;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '.' || c == '_' || c == '-';
        out[n++] = ok ? (char)c : '_';
    }
    out[n] = '\0';
    if (n == 0 || strcmp(out, ".") == 0 || strcmp(out, "..") == 0) {
        snprintf(out, outsz, "submission.cu");
        return 0;
    }
    return 1;
}

/* Append a chunk of a short text field. A NUL byte would cut the value
 * where C strings end ("fp8_quant\0evil" read as "fp8_quant"): refused. */
static void text_chunk(struct upload *u, const char *key, int *has, char *dst,
                       const char *data, uint64_t off, size_t size)
{
    if (off == 0 && *has) {
        set_problem(u, KJ_EINVAL, "field '%s' is sent twice", key);
        return;
    }
    *has = 1;
    if (off + size > UPLOAD_MAX_FIELD) {
        set_problem(u, KJ_EINVAL, "field '%s' is too long", key);
        return;
    }
    if (size > 0 && memchr(data, '\0', size) != NULL) {
        set_problem(u, KJ_EINVAL, "field '%s' contains a NUL byte", key);
        return;
    }
    memcpy(dst + off, data, size);
    dst[off + size] = '\0';
}

static void file_chunk(struct upload *u, const char *filename, const char *data, uint64_t off,
                       size_t size)
{
    if (off == 0 && u->f.has_file) {
        set_problem(u, KJ_EINVAL, "field '%s' is sent twice", "file");
        return;
    }
    if (off == 0) {
        u->f.has_file = 1;
        u->f.has_file_name = sanitize_name(filename != NULL ? filename : "", u->f.file_name,
                                           sizeof u->f.file_name);
    }
    if (u->file == NULL && (u->file = malloc(u->max_file + 1)) == NULL) {
        set_problem(u, KJ_ENOMEM, "%s", "out of memory");
        return;
    }
    if (off + size > u->max_file) {
        char lim[32];
        snprintf(lim, sizeof lim, "%zu", u->max_file);
        set_problem(u, KJ_ELIMIT, "the file is larger than the limit of %s bytes", lim);
        return;
    }
    memcpy(u->file + off, data, size);
    if (off + size > u->f.file_len)
        u->f.file_len = off + size;
}

/* MHD's post processor calls this for every chunk of every part. Any of
 * key (a part without Content-Disposition or without name=), filename
 * (not a file part), content_type and transfer_encoding may be NULL;
 * data is never NULL for a multipart body, but size may be 0. */
static enum MHD_Result on_field(void *cls, enum MHD_ValueKind kind, const char *key,
                                const char *filename, const char *content_type,
                                const char *transfer_encoding, const char *data, uint64_t off,
                                size_t size)
{
    struct upload *u = cls;
    (void)kind, (void)content_type, (void)transfer_encoding;
    if (u->problem != 0)
        return MHD_YES;
    if (key == NULL)
        set_problem(u, KJ_EINVAL, "%s", "a part has no name (each part needs "
                    "\"Content-Disposition: form-data; name=...\")");
    else if (data == NULL && size > 0)
        set_problem(u, KJ_EINVAL, "%s", "the multipart body is malformed");
    else if (strcmp(key, "file") == 0)
        file_chunk(u, filename, data, off, size);
    else if (strcmp(key, "leaderboard") == 0)
        text_chunk(u, "leaderboard", &u->f.has_leaderboard, u->f.leaderboard, data, off, size);
    else if (strcmp(key, "gpu") == 0)
        text_chunk(u, "gpu", &u->f.has_gpu, u->f.gpu, data, off, size);
    else if (strcmp(key, "mode") == 0)
        text_chunk(u, "mode", &u->f.has_mode, u->f.mode, data, off, size);
    else if (strcmp(key, "tool") == 0)
        text_chunk(u, "tool", &u->f.has_tool, u->f.tool, data, off, size);
    else if (strcmp(key, "shape") == 0)
        text_chunk(u, "shape", &u->f.has_shape, u->f.shape, data, off, size);
    else {
        char safe[40];
        kj_printable(safe, sizeof safe, key, 32);
        set_problem(u, KJ_EINVAL, "unknown field '%s' (expected leaderboard, gpu, mode, tool, shape, file)", safe);
    }
    return MHD_YES;
}

int upload_new(struct MHD_Connection *conn, size_t max_file, struct upload **out,
               struct kj_err *err)
{
    struct upload *u = calloc(1, sizeof *u);
    *out = NULL;
    if (u == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory for an upload");
    u->max_file = max_file;
    u->pp = MHD_create_post_processor(conn, UPLOAD_PP_BUFFER, on_field, u);
    if (u->pp == NULL) {
        free(u);
        return KJ_FAIL(err, KJ_EINVAL, "the body must be multipart/form-data with a boundary");
    }
    *out = u;
    return 0;
}

void upload_free(struct upload *u)
{
    if (u == NULL)
        return;
    if (u->pp != NULL)
        MHD_destroy_post_processor(u->pp);
    free(u->file);
    free(u);
}

int upload_feed(struct upload *u, const char *data, size_t len)
{
    if (u->problem == 0 && MHD_post_process(u->pp, data, len) != MHD_YES)
        set_problem(u, KJ_EINVAL, "%s", "the multipart body is malformed");
    return 0;
}

int upload_finish(struct upload *u, struct upload_fields *f, struct kj_err *err)
{
    if (u->pp != NULL && MHD_destroy_post_processor(u->pp) != MHD_YES)
        set_problem(u, KJ_EINVAL, "%s", "the multipart body is malformed or truncated");
    u->pp = NULL;
    if (u->problem != 0)
        return KJ_FAIL(err, u->problem, "%s", u->why);
    *f = u->f;
    f->file = u->file;
    if (f->has_file && f->file_name[0] == '\0')
        snprintf(f->file_name, sizeof f->file_name, "submission.cu");
    /* A leading UTF-8 byte-order mark (editors on Windows add one) means
     * nothing to a C++ compiler and breaks the first line: dropped. */
    if (f->file != NULL && f->file_len >= 3 && memcmp(f->file, "\xef\xbb\xbf", 3) == 0) {
        f->file += 3;
        f->file_len -= 3;
    }
    return 0;
}

int upload_check_source(const char *src, size_t len, size_t max, struct kj_err *err)
{
    size_t bad = 0;
    int line = 1, rc;
    if (len == 0)
        return KJ_FAIL(err, KJ_EINVAL, "the file is empty");
    if (len > max)
        return KJ_FAIL(err, KJ_ELIMIT, "the file is %zu bytes, larger than the limit of %zu", len, max);
    if (kj_utf8_valid(src, len, &bad))
        return 0;
    for (size_t i = 0; i < bad; i++)
        line += src[i] == '\n';
    if (src[bad] == '\0')
        rc = KJ_FAIL(err, KJ_EINVAL, "line %d: the file contains a NUL byte (offset %zu)", line, bad);
    else
        rc = KJ_FAIL(err, KJ_EINVAL, "line %d: the file is not valid UTF-8 (offset %zu)", line, bad);
    if (err != NULL)
        err->line = line;
    return rc;
}
